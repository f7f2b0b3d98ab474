/*
 * Internal declarations shared between rlock's source files. Nothing here is
 * exported: every symbol is hidden and uses the rl__ prefix.
 */
#ifndef RLOCK_INT_H
#define RLOCK_INT_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "rlock.h"

#define RL__UUID_LEN   36
#define RL__OWNER_MAX  (RL__UUID_LEN + 1 + 20 + 2 + 1)   /* ":r": a reader (rwlock.c) */
#define RL__RENEW_BATCH 1000   /* (key, owner) pairs per renewal script call */
#define RL__POLL_MIN_MS 10     /* no release notices: a waiter asks again after this, */
#define RL__POLL_MAX_MS 250    /* ...doubling up to this */

#if defined(__GNUC__)
#  define RL__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#  define RL__PRINTF(f, a)
#endif

/*
 * Test hooks. Only the test build of the library (rlock_hooked, compiled
 * with RL_TEST_HOOKS) calls them: they let a test stop a thread at a named
 * point to open a race window on purpose. Points: "force.before_send",
 * "watchdog.before_renew", "watchdog.renew_failed". The shipped library
 * compiles them away.
 */
#ifdef RL_TEST_HOOKS
extern void (*rl__test_hook)(const char *point);
#  define RL__HOOK(point) do { if (rl__test_hook) rl__test_hook(point); } while (0)
#else
#  define RL__HOOK(point) ((void)0)
#endif

/* ---- util.c ---------------------------------------------------------- */

int64_t rl__now_ms(void);                       /* CLOCK_MONOTONIC, ms */
int64_t rl__wall_ms(void);                      /* CLOCK_REALTIME, ms since the epoch */
int rl__cond_init(pthread_cond_t *cond);        /* a condvar on CLOCK_MONOTONIC */
/* Wait on cond until signalled or the monotonic deadline (ms; < 0: forever). */
int rl__cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mu, int64_t deadline_ms);
uint64_t rl__hash(const void *data, size_t len);
char *rl__strdup(const char *s);
size_t rl__fmt_ll(char *buf, long long v);     /* decimal, NUL-terminated; returns length */
void *rl__memdup(const void *p, size_t len);
/* The next delay of a back-off: first, then doubling up to max (prev 0: first). */
long rl__backoff_ms(long prev, long first, long max);
#define RL__RETRY_FIRST_MS 50  /* Redis unreachable: retry after 50 ms, */
#define RL__RETRY_MAX_MS 1000  /* ...doubling up to 1 s */

/* ---- error.c --------------------------------------------------------- */

/* Record the detail of a failure for rl_last_error() and return status. */
int rl__err(int status, const char *fmt, ...) RL__PRINTF(2, 3);
void rl__err_clear(void);
void rl__log(rl_client *c, int level, const char *fmt, ...) RL__PRINTF(3, 4);

/* ---- url.c (pure) ---------------------------------------------------- */

#define RL__SEEDS_MAX 16

/* One TCP endpoint: a host (brackets stripped) and a port. */
typedef struct rl__endpoint {
    char *host;
    int port;
} rl__endpoint;

/*
 * redis://[[user]:pass@]host[:port][,host[:port]...][/db]: several seed
 * nodes of one deployment (a Cluster's nodes), tried in order. host and port
 * are the first seed's (host aliases seeds[0].host).
 */
typedef struct rl__url {
    int is_unix;
    char *host;     /* TCP host, brackets stripped */
    int port;
    int nseeds;     /* TCP: host:port pairs given, 1..RL__SEEDS_MAX; unix: 0 */
    int redlock;    /* redlock://: the seeds are independent masters (Redlock) */
    int sentinel;   /* sentinel://: the seeds are sentinels, asked for `service` */
    char *service;  /* sentinel://: the name the sentinels know the primary by */
    rl__endpoint seeds[RL__SEEDS_MAX];
    char *path;     /* unix socket path */
    char *user;     /* NULL: none */
    char *pass;     /* NULL: none */
    int db;
} rl__url;

int rl__url_parse(rl__url *out, const char *url);
void rl__url_clear(rl__url *url);
/* The URL as it may be shown (a message, a log line), into buf: a URL that
 * parses keeps its scheme and what follows its last '@' (hosts, path,
 * database), its credentials shown as "***"; one that does not parse shows
 * "***" after its scheme when that is one rlock knows, else alone. No byte
 * of any userinfo, whatever the URL's shape, reaches buf. Leaves
 * rl_last_error() as it was. Returns buf. */
const char *rl__url_redact(const char *url, char *buf, size_t cap);

/* ---- resp.c (pure): the hot path's own RESP2 encoding and reading ----- */

#define RL__FORCE_TIDS 6        /* thread ids a force-release reply lists */
#define RL__RESP_MAX_INTS (2 + RL__FORCE_TIDS)
#define RL__STR_(x) #x
#define RL__STR(x) RL__STR_(x)
enum { RL__RESP_INT = 1, RL__RESP_ARRAY, RL__RESP_ERROR, RL__RESP_STATUS };

typedef struct rl__resp {
    int type;
    int nints;                          /* INT: 1; ARRAY: its length */
    long long ints[RL__RESP_MAX_INTS];
    const char *str;                    /* ERROR/STATUS text, not terminated */
    size_t str_len;
} rl__resp;

/* Encode a command; returns its length, or a bound on it when > cap. */
size_t rl__resp_encode(char *buf, size_t cap, int argc, const char **argv, const size_t *lens);
/* 1: a whole reply (*used bytes); 0: need more bytes; -1: not a reply rlock reads. */
int rl__resp_read(const char *buf, size_t len, rl__resp *out, size_t *used);

/* ---- reply.c (pure) -------------------------------------------------- */

/* What a script said, decoded from its reply. */
typedef struct rl__result {
    int code;           /* see RL__R_* */
    long long value;    /* count, or PTTL when busy */
    unsigned long long token; /* done: the hold's fencing token (0: none) */
} rl__result;

#define RL__R_DONE      1   /* applied; value = new count */
#define RL__R_BUSY      0   /* held by another; value = PTTL */
#define RL__R_NOTOWNER (-1) /* our field is absent */
#define RL__R_MISMATCH (-2) /* our field holds another count; value = it */

int rl__reply_result(const redisReply *reply, rl__result *out);
int rl__reply_count(const redisReply *reply, long long *out); /* HGET: nil → 0 */
/* HGET of a hold's value: its count (nil → 0) and fencing token (0: none). */
int rl__reply_hold(const redisReply *reply, long long *count, unsigned long long *token);
int rl__reply_flags(const redisReply *reply, size_t n, const char **out);
int rl__reply_error_status(const redisReply *reply);
int rl__error_status(const char *msg, size_t len);
int rl__resp_result(const rl__resp *resp, rl__result *out);
typedef struct rl__fence rl__fence;
int rl__parse_client_info(const char *s, size_t len, rl__fence *out);

/* ---- slot.c (pure): Redis Cluster key slots ---------------------------- */

#define RL__SLOTS 16384
uint16_t rl__crc16(const void *data, size_t len);      /* CRC16/XMODEM */
uint16_t rl__slot(const void *key, size_t len);        /* honours {hash tags} */

/* ---- topology.c (pure): what a Redis Cluster says of its slots -------- */

#define RL__HOST_MAX 256    /* host names and addresses, NUL included */

enum { RL__REDIR_NONE, RL__REDIR_MOVED, RL__REDIR_ASK };

/* "MOVED <slot> <host>:<port>" or "ASK <slot> <host>:<port>". */
typedef struct rl__redirect {
    int kind;                   /* RL__REDIR_* */
    uint16_t slot;
    char host[RL__HOST_MAX];    /* "" when the reply names no host (":port"):
                                 * the node that answered */
    int port;
} rl__redirect;

/* An error reply's text (msg[0..len), not necessarily terminated): 1 and
 * *out set when it is a well-formed MOVED or ASK; 0 when it is another
 * error; -1 when it starts with MOVED or ASK but cannot be parsed. */
int rl__redirect_parse(const char *msg, size_t len, rl__redirect *out);

/* Errors of a Cluster in motion, after which the command certainly did
 * not run and may be sent again: TRYAGAIN, CLUSTERDOWN. 1 or 0. */
int rl__cluster_retryable(const char *msg, size_t len);

/* For each slot range of a CLUSTER SLOTS reply, fn(arg, first, last, host,
 * port) with its master; host is "" when the reply gives none (or "?"):
 * the node that answered. fn returns 0 to go on. Returns the number of
 * ranges, -1 when the reply is malformed (fn may have been called for the
 * ranges before), or what fn returned when not 0. */
int rl__slots_parse(const redisReply *r,
                    int (*fn)(void *arg, int first, int last, const char *host, int port),
                    void *arg);

/* ---- scripts.c ------------------------------------------------------- */

enum { RL__S_ACQUIRE, RL__S_RELEASE, RL__S_RENEW, RL__S_FORCE,
       RL__S_FAIR_ACQUIRE, RL__S_FAIR_RELEASE, RL__S_FAIR_LEAVE,
       RL__S_RW_ACQUIRE, RL__S_RW_RELEASE, RL__S_RW_RENEW, RL__S_COUNT };
extern const char *const rl__script_src[RL__S_COUNT];

/* ---- rwlock.c: the read-write lock's local rules ----------------------- */

/* The side of a lock a hold is on: a plain (or fair) lock's, or one of a
 * read-write lock's two. */
enum { RL__SIDE_PLAIN, RL__SIDE_READ, RL__SIDE_WRITE };
#define RL__RW_INTENT_MS 3000   /* a waiting writer's intent lives this long */
/* The layout of a read-write lock's hash in Redis (its fields, listed in
 * src/rwlock.c). 1 is the first release's and the baseline: the scripts
 * carry no code for the layouts before it (never released), and refuse,
 * with an error reply and nothing written, a hash with a '~' field they do
 * not know or a live write hold without its mark "~w". A change of the
 * fields or of their values raises it, and says there how the scripts meet
 * a hash of the layout before (a rolling upgrade runs both). */
#define RL__RW_LAYOUT 1
/* Fields one step of the read-write scripts' sweep of dead holds reads
 * (HSCAN's COUNT; scripts.c). */
#define RL__RW_SWEEP_STEP 20

struct rl__entry;
/* The script to run for a change of e: the read-write one when e is of
 * that family, else `script`. */
int rl__rw_script(const struct rl__entry *e, int script);
int rl__rw_side(int kind);                  /* RL_KIND_* -> RL__SIDE_* */
/* The hash field of a hold on `side`, from the thread's owner string:
 * "<owner>:r" for a reader. out has RL__OWNER_MAX bytes. */
size_t rl__rw_field(char *out, const char *owner, size_t owner_len, int side);
/* Whether other threads of this process keep a new hold on `side` out of
 * e: a writer keeps out everyone, a reader only writers. Mutex held. */
int rl__rw_local_busy(const struct rl__entry *e, int side);

/* ---- thread.c -------------------------------------------------------- */

typedef struct rl__hold rl__hold;

typedef struct rl__thread {
    uint64_t id;            /* per-process counter, 0 until first use */
    rl__hold *holds;        /* this thread's holds, through any client */
    int orphan_lost;        /* a hold of a freed client was let go: report it */
    /* The owner field for the last client used, formatted once. */
    const rl_client *owner_of;
    size_t owner_len;
    char owner[RL__OWNER_MAX];
} rl__thread;

rl__thread *rl__thread_self(void);
const char *rl__thread_owner(rl__thread *t, const rl_client *c, size_t *len);
rl__hold *rl__thread_find(rl__thread *t, const rl_client *c, const void *entry);
/* The same, for a hold on one side of the lock (RL__SIDE_*). */
rl__hold *rl__thread_find_side(rl__thread *t, const rl_client *c, const void *entry, int side);
/* Whether t still links a hold of (c, entry) that a shut-down client let go. */
int rl__thread_has_orphan(const rl__thread *t, const rl_client *c, const void *entry);
void rl__thread_link(rl__thread *t, rl__hold *h);
void rl__thread_unlink(rl__thread *t, rl__hold *h);
void rl__thread_forget_all(void);      /* fork child: the thread holds nothing */

/* ---- conn.c ---------------------------------------------------------- */

/*
 * Enough to name one connection to the server, so that it can be killed
 * (CLIENT KILL ID .. ADDR ..) before a lost reply is resolved: a killed
 * client's unread commands are never run. The address guards against ids
 * reused by a restarted server.
 */
struct rl__fence {
    long long id;           /* CLIENT ID; < 0: unknown */
    char addr[64];          /* our ip:port as the server sees it; "" for unix sockets */
    struct rl__server *server;  /* the server the id belongs to */
};

typedef struct rl__server rl__server;

typedef struct rl__conn {
    redisContext *ctx;
    rl__server *server;     /* the endpoint it is connected to */
    rl__fence fence;
    long timeout_ms;        /* the reply timeout set on ctx */
    char errbuf[192];       /* rl__conn_error()'s words */
    char *wbuf;             /* hot path: encoded command */
    size_t wcap;
    char rbuf[1024];        /* hot path: one reply */
    int fresh;              /* Sentinel mode: not yet checked against the sentinels */
    size_t rhave;           /* fan-out: bytes of rbuf read so far */
    int rskip;              /* fan-out: replies to pass over before the script's */
    struct rl__conn *next;  /* idle list */
    struct rl__conn *all_next, *all_prev; /* every connection of the client */
} rl__conn;

/* Connect to server s: authenticate, select, learn the fence id. */
int rl__conn_open(rl_client *c, rl__server *s, rl__conn **out);
/* The same, the connect and the handshake each within within_ms (<= 0:
 * the client's timeouts); the connection's reply timeout is the client's. */
int rl__conn_open_within(rl_client *c, rl__server *s, long within_ms, rl__conn **out);
/*
 * A connection opened without blocking, so that several are made at once
 * (Redlock): start it (RL_OK, or a status: it failed at once), then poll
 * the descriptor and events rl__opening_poll gives until its deadline (the
 * connect's, then the handshake's, each within within_ms as above), and
 * step it with the revents: 1 not yet; RL_OK and *out, the connection;
 * or a status. Past the deadline, rl__opening_expire() says why. After any
 * status, and after cancel, the opening is freed. TCP only. A server that
 * refuses or is silent is marked down, as by rl__conn_open_within.
 */
struct pollfd;
typedef struct rl__opening rl__opening;
int rl__opening_start(rl_client *c, rl__server *s, long within_ms, rl__opening **out);
int64_t rl__opening_poll(const rl__opening *o, struct pollfd *pfd);
int rl__opening_step(rl_client *c, rl__opening *o, short revents, rl__conn **out);
int rl__opening_expire(rl_client *c, rl__opening *o);
void rl__opening_cancel(rl__opening *o);
#define RL__WHY_LEN 192
/* Open one connection to each of s[0..n) (n <= RL__NODES_MAX) at once,
 * within the client's timeouts: out[i], or NULL with rc[i] and why[i]. */
void rl__conn_open_all(rl_client *c, rl__server *const *s, int n, rl__conn **out, int *rc,
                       char (*why)[RL__WHY_LEN]);
void rl__conn_close(rl_client *c, rl__conn *conn);
int rl__conn_broken(const rl__conn *conn);
void rl__conn_set_timeout(rl__conn *conn, long ms);   /* for each reply from now on */

/* The last failure on conn, in words a user can act on ("no reply within
 * 2000 ms" rather than EAGAIN's). Valid until the next call on conn. */
const char *rl__conn_error(rl__conn *conn);
/* Internal status of the hot path: the connection was found closed before
 * the command was written, so it certainly did not run. Never returned by
 * the public API. */
#define RL__UNSENT (-101)

/* Queue CLIENT KILL ID .. ADDR .. for a fenced-off connection (id <= 0:
 * nothing). Returns the number of commands queued (0 or 1). */
int rl__conn_append_kill(rl__conn *conn, const rl__fence *dead);
/* One command. RL_ECONN: the connection broke (outcome unknown, conn is dead). */
int rl__conn_call(rl__conn *conn, redisReply **out, int argc,
                  const char **argv, const size_t *lens);
/* The hot path: EVALSHA of a script whose reply is read in place into out
 * (valid until the next call on conn). NOSCRIPT is handled. */
int rl__conn_script_fast(rl_client *c, rl__conn *conn, int script, rl__resp *out,
                         int nkeys, int nargs, const char **args, const size_t *lens);
int rl__conn_load_scripts(rl_client *c, rl__conn *conn);
/* The two halves of rl__conn_script_fast, for a call sent to several
 * servers at once (Redlock): write it (after CLIENT KILL of `kill`, when
 * its id is > 0), then read its reply as it comes, without blocking.
 * send: RL_OK, RL__UNSENT (found closed: nothing ran), or a status (the
 * connection is broken). recv: 1 and *out (valid until the next call on
 * conn) when the script's reply is in; 0 when more must come; or a status
 * (broken). A NOSCRIPT reply is returned as it is. */
int rl__conn_script_send(rl_client *c, rl__conn *conn, const rl__fence *kill, int script,
                         int nkeys, int nargs, const char **args, const size_t *lens);
int rl__conn_script_recv(rl__conn *conn, rl__resp *out);
/* The same send for a plain command whose reply is one rl__resp reads (an
 * integer: EXISTS, PTTL); read it with rl__conn_script_recv. */
int rl__conn_command_send(rl__conn *conn, int argc, const char **argv, const size_t *lens);
/* WAIT until n replicas have what conn wrote, at most timeout_ms: RL_OK,
 * RL_EREPLICA (fewer did), or a failure status. */
int rl__conn_wait_replicas(rl__conn *conn, int n, long timeout_ms);
/* Mark conn broken: a reply it owes will never be read. */
void rl__conn_abandon(rl__conn *conn, const char *why);

/* ---- server.c: one Redis endpoint and its pool ------------------------- */

/*
 * Everything rlock keeps for one Redis endpoint: its address, its pool of
 * connections, the watchdog's connection to it. A client has one server in
 * single mode and one per node it has heard of in Cluster mode; servers
 * live as long as the client (their number is bounded), so a pointer to
 * one stays valid.
 */
#define RL__SERVERS_MAX 64

struct rl__server {
    int index;                  /* in c->servers */
    char *host;                 /* NULL: the URL's unix socket */
    int port;
    char name[RL__HOST_MAX + 8];    /* "host:port", for messages */
    /* pool, under the client mutex */
    rl__conn *idle;
    rl__conn *all;              /* every connection of the pool */
    int conns;
    /* the watchdog's: used by its thread, cleared and freed under the mutex */
    rl__conn *wd_conn;
    int kp_open;                /* the watchdog wants a connection: the keeper opens one */
    atomic_llong down_until;    /* a connect failed: asked last until then */
    /* Connections to it lost or refused; Sentinel: the count the sentinels
     * last vouched for (under the mutex). A connection opened while they
     * differ may be to an old primary restarted empty: it is checked. */
    atomic_uint losses;
    unsigned vouched;
};

/* The server for host:port (NULL host: the unix socket), made when new.
 * NULL when RL__SERVERS_MAX are known already or memory ran out. Mutex held. */
rl__server *rl__server_get(rl_client *c, const char *host, int port);
void rl__servers_free(rl_client *c);             /* teardown */
/* Put a connection opened with rl__conn_open into its server's pool. */
void rl__pool_adopt(rl_client *c, rl__conn *conn);
int rl__pool_get(rl_client *c, rl__server *s, rl__conn **out);
void rl__pool_put(rl_client *c, rl__conn *conn);   /* broken ones are closed */
rl__conn *rl__pool_take_idle(rl_client *c);        /* every server's; mutex held; caller closes */
/* One idle connection of s, no longer the pool's (NULL: none, or only
 * ones still to be checked against the sentinels): the
 * watchdog's, without a connect and handshake. Mutex NOT held. */
rl__conn *rl__pool_detach_idle(rl_client *c, rl__server *s);
/* A connection to s for a call that must not wait for a connect to a
 * server lately found down: an idle one, else a new one unless s is down
 * (RL_ECONN at once). Mutex NOT held. */
int rl__pool_get_quick(rl_client *c, rl__server *s, rl__conn **out);
/* The same, a new connection made within within_ms (<= 0: the client's
 * timeouts). */
int rl__pool_get_within(rl_client *c, rl__server *s, long within_ms, rl__conn **out);
/* An idle connection of s, else a new one opened within within_ms when the
 * pool has room and s was not found down lately; else RL_EBUSY at once:
 * never a wait for another thread's connection. Mutex NOT held. */
int rl__pool_get_nowait(rl_client *c, rl__server *s, long within_ms, rl__conn **out);
/* An idle connection of s, still the pool's (give it back with
 * rl__pool_put); NULL: none. Mutex NOT held. */
rl__conn *rl__pool_get_idle(rl_client *c, rl__server *s);
/* A connection the caller opens itself (rl__opening_start), counted in the
 * pool from now: RL_OK; RL_EBUSY at the pool's limit (no wait); RL_ECONN
 * when s was found down a moment ago. Once it is open (conn, tracked from
 * now, to be given back with rl__pool_put) or not (NULL: uncounted), say
 * so with rl__pool_reserved. */
int rl__pool_reserve(rl_client *c, rl__server *s);
void rl__pool_reserved(rl_client *c, rl__server *s, rl__conn *conn);
void rl__pool_after_fork(rl_client *c);            /* fork child: drop the parent's */

/* ---- router.c: which server arbitrates a name -------------------------- */

enum { RL__MODE_SINGLE, RL__MODE_CLUSTER, RL__MODE_REDLOCK, RL__MODE_SENTINEL };
#define RL__NO_SERVER 0xFFFF

/* One routed command: the slot it is for, and what redirects said so far. */
typedef struct rl__route {
    uint16_t slot;
    rl__server *ask;            /* ASK: the next try goes there, after ASKING */
    rl__server *last;           /* the server of the last connection handed out */
    rl__server *pin;            /* go there, whatever the slot (Redlock: one node) */
    int redirects;
    int64_t deadline;           /* TRYAGAIN / CLUSTERDOWN retried until then */
    long backoff;
    /* > 0: a new connection (and the slot map's refresh) within that long,
     * none waited for at the pool's limit or to a server found down lately
     * (the keeper's drops); 0: the client's timeouts */
    long within_ms;
} rl__route;

/* Learn the mode (and, in Cluster mode, the slot map) on the client's first
 * connection, to server s. Mutex NOT held. */
int rl__router_init(rl_client *c, rl__conn *conn);
void rl__route_init(rl__route *rt, rl_client *c, uint16_t slot);
/* The server that owns the slot now (single mode: the one). Mutex held. */
rl__server *rl__route_server(rl_client *c, uint16_t slot);
/* A connection to the server rt should go to now (ASKING already sent
 * when a redirect said ASK). Mutex NOT held. */
int rl__route_get(rl_client *c, rl__route *rt, rl__conn **out);
/* An error reply came back for rt. RL__RETRY: it was a redirect (followed)
 * or a Cluster in motion (waited a little, within rt's deadline): the
 * command did not run; send it again through rl__route_get. RL_OK: another
 * error, the caller's to handle. Else a failure status. Mutex NOT held. */
int rl__route_error(rl_client *c, rl__route *rt, const char *msg, size_t len);
/* Whether the slot map should be asked for again now: it is old, or
 * c->map_suspect was raised. Mutex held. */
int rl__router_map_due(rl_client *c);
void rl__router_after_fork(rl_client *c);           /* fork child */
/* What a MOVED or ASK said, told by a connection to `from`: the server it
 * names (NULL: too many servers); a MOVED also corrects the slot's map
 * entry and asks for a refresh. Mutex held. */
rl__server *rl__router_redirect(rl_client *c, const rl__redirect *red, const rl__server *from);
/* Ask the cluster for its slot map again, if it is due. Mutex NOT held. */
void rl__router_refresh(rl_client *c, int force);
/* The same, each server asked within within_ms (connect, handshake and
 * answer; > 0), one without an idle connection and at the pool's limit or
 * found down lately skipped: for the keeper, whose other work (the
 * watchdog's connections) must not wait a node's full timeouts. */
void rl__router_refresh_within(rl_client *c, int force, long within_ms);
/* The release notice the scripts send: "1" PUBLISH, "s" SPUBLISH (Cluster),
 * "0" none (the user may not publish). */
const char *rl__notice_arg(rl_client *c);
/* Sentinel mode: whether conn, just opened, is to the primary the
 * sentinels name when asked after it was opened (an old primary restarted
 * empty claims to be one; a connection that never broke is to the same
 * server process, and needs no check): RL_OK, or RL_ECONN (conn is the
 * caller's).
 * Waits for the subscriber's ask at most within_ms. Mutex NOT held. */
int rl__router_check_fresh(rl_client *c, rl__conn *conn, long within_ms);
/* Whether a script may mix keys of several slots (single mode only). */
int rl__router_mixed_ok(const rl_client *c);

/* ---- holds.c: name entries, holds, local waiter queues ---------------- */

typedef struct rl__waiter {
    struct rl__waiter *next;
    pthread_cond_t cond;
    int kicked;
    uint64_t serial;                /* per entry, from 1 (rl__queue_push) */
    const char *owner;              /* fair lock: the waiting thread's owner field, */
    size_t owner_len;               /* ...when it may be queued in Redis (else NULL) */
} rl__waiter;

enum { RL__SUB_NONE, RL__SUB_SENT, RL__SUB_ON, RL__SUB_OFF_SENT };

typedef struct rl__entry {
    struct rl__entry *next;         /* hash chain */
    uint64_t hash;
    char *name;
    size_t name_len;
    char *key;                      /* <prefix>{<tag>}; tag: the name, escaped (holds.c) */
    size_t key_len;
    char *channel;                  /* <prefix>{<tag>}:release */
    size_t channel_len;
    char *fence_key;                /* <prefix>{<tag>}:fence: tokens handed out */
    size_t fence_key_len;
    uint16_t slot;                  /* Cluster slot of key and channel alike */
    int handles, holds, waiters;    /* what keeps the entry alive */
    rl__waiter *q_head, *q_tail;    /* local FIFO of waiting threads */
    int local_live;                 /* holds of this process not lost */
    int sub_want, sub_state;        /* subscriber's view of the release channel */
    int sub_link;                   /* server index it is subscribed on (sub_state) */
    int64_t linger_until;           /* no waiters left: unsubscribe after this */
    int leftovers;                  /* rl__leftover records naming this entry */
    int renewing;                   /* holds of it in the renewal round in flight */
    uint64_t forced;                /* force-releases of it done by this client */
    int family;                     /* RL__FAM_*: set by the first handle */
    /* RL__FAM_FAIR (fair.c): the queue's keys, and this process's own
     * release channel (NULL for the other families). */
    char *queue_key, *places_key, *wake_channel;
    size_t queue_len, places_len, wake_len;
    uint64_t q_serial;              /* waiters pushed so far */
    uint64_t notices;               /* release notices heard (subscriber) */
    /* A release of this process queued the local waiter `hint_serial` in
     * Redis; notices was hint_notices before that release was sent. */
    uint64_t hint_serial, hint_notices;
    int local_reads;                /* of local_live, the read holds (RL__SIDE_READ) */
} rl__entry;

/* The family a name is open as, in one client: kinds of one family share
 * an entry (RL_KIND_READ and RL_KIND_WRITE: RL__FAM_RW). */
enum { RL__FAM_PLAIN, RL__FAM_FAIR, RL__FAM_RW };

/* What one Redlock node holds of a hold. */
#define RL__NODES_MAX 9
typedef struct rl__node_hold {
    int count;              /* owner thread only: our count there; 0 none; -1 unknown */
    int64_t expiry;         /* under mutex: confirmed expiry there (local clock, less
                             * drift); 0: not confirmed */
    rl__fence doubt;        /* owner thread only: a change there whose outcome is
                             * unknown: fence it before the next (id < 0: none) */
    int64_t learned;        /* under mutex: when a change there was last learned
                             * (local clock); a renewal sent before confirms nothing */
} rl__node_hold;

struct rl__hold {
    rl__hold *t_next, *t_prev;      /* owner thread's list; owner thread only */
    rl__hold *c_next, *c_prev;      /* client's list; under client mutex */
    rl_client *client;
    rl__entry *entry;
    uint64_t tid;
    uint64_t serial;
    size_t owner_len;
    char owner[RL__OWNER_MAX];      /* <uuid>:<tid>, the hash field */
    int count;                      /* owner thread only */
    unsigned long long token;       /* owner thread only: fencing token (0: none) */
    long lease_ms;
    int watchdog;                   /* renewed by the watchdog */
    atomic_int lost;
    atomic_llong expiry_ms;         /* last confirmed expiry, local clock, less drift */
    int releasing;                  /* under mutex: final release in flight */
    int refs;                       /* under mutex */
    int reported;                   /* under mutex: on_lost called */
    const char *lost_why;           /* under mutex: why it was flagged (static) */
    int in_table;                   /* under mutex */
    /* An operation whose outcome is unknown, to resolve before the next. */
    long drift_ms;                  /* margin taken off each confirmed expiry */
    rl__fence doubt;                /* a change whose outcome is unknown (id < 0: none) */
    atomic_int orphan;              /* RL__HOLD_*: who frees it */
    int side;                       /* RL__SIDE_*: which side of the lock it holds */
    /* Redlock: each node's part, nodes[i] for c->servers[i] (c->nnodes of
     * them; none in the other modes). */
    rl__node_hold nodes[];
};

enum {
    RL__HOLD_LIVE,          /* the client's and its thread's */
    RL__HOLD_ORPHAN,        /* the client let it go: its thread frees it */
    RL__HOLD_OWNER_GONE     /* its thread ended: the client frees it at shutdown */
};

/*
 * Our field may remain in Redis after an operation whose outcome could not
 * be read back (Redis unreachable). Until it is fenced and dropped (by the
 * watchdog, or by the same thread before it acquires the name again), the
 * lock may stay taken for up to one lease.
 */
typedef struct rl__leftover {
    struct rl__leftover *next;
    rl__entry *entry;
    uint64_t tid;
    size_t owner_len;
    char owner[RL__OWNER_MAX];
    rl__fence fence;
    rl__server *server;             /* Redlock: the node it is on; NULL: the name's server */
    int claimed;                    /* being dropped right now */
} rl__leftover;

rl__entry *rl__entry_get(rl_client *c, const void *name, size_t len); /* mutex held */
void rl__entry_maybe_free(rl_client *c, rl__entry *e);               /* mutex held */
rl__entry *rl__entry_by_channel(rl_client *c, const char *ch, size_t len);
void rl__entry_free_all(rl_client *c);
void rl__holds_after_fork(rl_client *c);     /* fork child: the parent's holds and waiters go */

void rl__queue_push(rl__entry *e, rl__waiter *w);
void rl__queue_remove(rl_client *c, rl__entry *e, rl__waiter *w);
void rl__queue_kick_head(rl__entry *e);
void rl__queue_wake_everyone(rl_client *c);               /* mutex held */

rl__hold *rl__hold_new(rl_client *c, rl__entry *e, uint64_t tid, long lease_ms, int watchdog);
void rl__hold_insert(rl_client *c, rl__hold *h);                     /* mutex held */
void rl__hold_remove(rl_client *c, rl__hold *h);                     /* mutex held */
void rl__hold_unref(rl_client *c, rl__hold *h);                      /* mutex held */
void rl__hold_discard(rl_client *c, rl__hold *h);   /* never inserted, or done; mutex held */
void rl__hold_free_spares(rl_client *c);
int rl__hold_is_lost(const rl__hold *h, int64_t now);
void rl__hold_confirm(rl__hold *h, int64_t sent_ms);   /* owner thread or watchdog */
/* A renewal sent at sent_ms succeeded: confirm it, unless the confirmed
 * expiry has already passed (the hold is then lost for good, whatever a
 * late reply says). 1 when the hold stands confirmed. */
int rl__hold_renewed(rl__hold *h, int64_t sent_ms);
/* cause: RL__LOST_*, counted the first time. */
int rl__hold_mark_lost(rl_client *c, rl__hold *h, int cause, const char *why); /* mutex held */
void rl__hold_orphan(rl_client *c, rl__hold *h);                     /* mutex held */
void rl__hold_report(rl_client *c, rl__hold *h);   /* on_lost, once; mutex held, dropped */
long rl__drift_ms(long lease_ms);
/* The lease Redis is asked to keep for a hold of lease_ms: the lease plus
 * the client's lock-delay (scripts.c); the callers' checks keep it at most
 * RL_TIME_MAX_MS. */
long rl__redis_lease(const rl_client *c, long lease_ms);

/* ---- outcome.c: changes sent, lost replies resolved, leftovers -------- */

#define RL__RETRY (-100)   /* internal: the change was not applied; send it again */

/* Who changes which lock: the calling thread's owner field on an entry. */
typedef struct rl__op {
    rl_client *c;
    rl__entry *e;
    const char *owner;
    size_t owner_len;
    int side;                       /* RL__SIDE_* */
    long intent_ms;                 /* a writer that will wait: its intent (rwlock.c) */
    char field[RL__OWNER_MAX];      /* a reader's field, when owner points here */
    /* The caller's deadline (-1: none): a Cluster in motion (TRYAGAIN,
     * CLUSTERDOWN) is waited out until then, at most the command timeout. */
    int64_t deadline;
    long place_ms;          /* fair lock: the place a busy acquire queues (0: none) */
    const char *next;       /* fair lock: the waiter a last release queues (NULL: none) */
    size_t next_len;
} rl__op;

void rl__op_init(rl__op *o, rl_client *c, rl__entry *e, rl__thread *t);
/* What the count read back after a lost reply says of a change (acquire or
 * release script) made by a hold of `held`: RL__RETRY (not applied), or
 * RL_OK with *res DONE (applied), NOTOWNER (our field is gone) or MISMATCH.
 * Pure. */
int rl__outcome(int script, long long held, long long count, rl__result *res);
/* Run the acquire or release script, resolving a lost or unreadable reply
 * by reading the count back (*read_back set). RL_ECONN with
 * unresolved->id >= 0: the outcome stays unknown; fence that connection
 * before anything else. */
int rl__change(rl__op *o, int script, long long held, long lease_ms, int64_t *sent_ms,
               rl__result *res, rl__fence *unresolved, int *read_back);
/* Send one script call (args: the nkeys keys, then the ARGV) to the name's
 * server, following redirects. *conn is left set when the command was sent
 * (its reply, in *resp, is the caller's to judge; give conn back); NULL
 * when nothing ran. */
int rl__op_send(rl__op *o, int script, int nkeys, int nargs, const char **args,
                const size_t *lens, rl__conn **conn, int64_t *sent_ms, rl__resp *resp);
/* Before the thread takes the entry again: drop what its unresolved changes
 * may have left. Mutex held; dropped while I/O runs. */
int rl__leftovers_settle(rl_client *c, rl__entry *e, uint64_t tid, int64_t deadline);
rl__leftover *rl__leftover_find(rl_client *c, const rl__entry *e, uint64_t tid); /* mutex held */
/* Claim lo, drop it (mutex dropped meanwhile), and settle the record: it is
 * freed on success (do not use lo after), kept for a retry otherwise. */
int rl__leftover_try(rl_client *c, rl__leftover *lo);                 /* mutex held */
void rl__leftovers_free(rl_client *c);       /* fork child, teardown: forget them */

void rl__leftover_add(rl_client *c, rl__entry *e, uint64_t tid, const char *owner,
                      size_t owner_len, const rl__fence *fence);    /* mutex held */
/* The same, for one Redlock node. */
void rl__leftover_add_on(rl_client *c, rl__entry *e, uint64_t tid, const char *owner,
                         size_t owner_len, const rl__fence *fence, rl__server *node);
/* The release script's arguments (the key, then ARGV) for owner's hold of
 * e counted `held` ("0": the whole field), with the lease Redis is to keep
 * ("0": leave it; else rl__redis_lease()). Returns their number, 6; one
 * is a key. args and lens need room for 10: rl__fair_args() adds four. */
int rl__release_args(rl_client *c, const rl__entry *e, const char *owner, size_t owner_len,
                     const char *held, size_t held_len, const char *lease, size_t lease_len,
                     const char **args, size_t *lens);
/* Queue the release script in its "drop our field" form (whatever its
 * count, with a notice) on conn: the leftovers' drop and the shutdown's. */
void rl__append_drop(rl__conn *conn, rl_client *c, const rl__entry *e, const char *owner,
                     size_t owner_len);
/* Fence and drop; when the drop itself was sent but its reply lost, *late
 * names the connection that carried it (late->id < 0: nothing sent).
 * within_ms > 0: a new connection and each reply within that long (the
 * keeper: a stopped node must not hold up its other work); 0: the
 * client's timeouts. Mutex NOT held. */
int rl__leftover_drop(rl_client *c, const rl__leftover *lo, long within_ms, rl__fence *late);
void rl__leftover_done(rl_client *c, rl__leftover *lo, int rc, const rl__fence *late); /* mutex held */

/* ---- fair.c: the fair lock's queue ------------------------------------ */

#define RL__FAIR_PLACE_MS 2000  /* a waiter's place runs out unless renewed within this */
#define RL__FAIR_RENEW_MS 500   /* ...and a waiter renews it (asks again) this often */

/* Make the queue's keys and channel of a name opened as fair (idempotent):
 * 0, or -1 out of memory. Mutex held. */
int rl__fair_entry_init(rl__entry *e);
void rl__fair_entry_free(rl__entry *e);
/* The channel this process subscribes to for e's notices: a fair name's
 * channel of this process's own, the release channel otherwise. Mutex held. */
const char *rl__entry_sub_channel(const rl_client *c, rl__entry *e, size_t *len);
/* Turn the arguments of an acquire or release script call (args[0] the
 * key, then *nargs - 1 ARGV; room for four more) into the fair script's
 * when e is fair and the change is one the fair scripts make: the queue's
 * keys inserted; place_ms appended to a new acquisition, or `next` (when
 * not NULL) and its place to a release (formatted in placebuf, 24 bytes);
 * *script changed to match. Returns the number of keys: 3, or the caller's
 * nkeys when nothing changed. */
int rl__fair_args(const rl__entry *e, int nkeys, int *script, long long held, long place_ms,
                  const char *next, size_t next_len, char *placebuf, const char **args,
                  size_t *lens, int *nargs);

/* ---- stats.c: the counters of rl_client_stats() ------------------------ */

/* Why a hold was flagged (rl__hold_mark_lost). RL__LOST_EXPIRED is
 * counted as unconfirmed (watchdog lease) or lease ended (fixed lease). */
enum {
    RL__LOST_UNCONFIRMED, RL__LOST_LEASE_ENDED, RL__LOST_GONE, RL__LOST_FORCED,
    RL__LOST_UNRESOLVED, RL__LOST_SHUTDOWN, RL__LOST_OTHER, RL__LOST_CAUSES
};
#define RL__LOST_EXPIRED RL__LOST_UNCONFIRMED

/*
 * Relaxed atomics only: a counter is bumped where the event already
 * happens, by whichever thread sees it, with no lock taken for it. The
 * gauges are written under the client mutex (where the table they mirror
 * changes) and read without it.
 */
typedef struct rl__stats {
    atomic_ullong acquisitions, reentries, releases, busy, timeouts, cancellations;
    atomic_ullong waits, wait_ms_sum, wait_buckets[RL_STATS_WAIT_BUCKETS];
    atomic_ullong renewal_rounds, renewal_failures;
    atomic_ullong lost[RL__LOST_CAUSES];
    atomic_ullong connects, disconnects, replies_resolved, replies_unresolved;
    atomic_ullong holds, waiters;
} rl__stats;

#define RL__STAT_ADD(c, field, n) \
    atomic_fetch_add_explicit(&(c)->stats.field, (n), memory_order_relaxed)
#define RL__STAT_INC(c, field) RL__STAT_ADD(c, field, 1)
#define RL__STAT_DEC(c, field) \
    atomic_fetch_sub_explicit(&(c)->stats.field, 1, memory_order_relaxed)

/* A wait of ms that ended in an acquisition. */
void rl__stats_wait(rl__stats *st, int64_t ms);
/* Every counter back to zero: a new client, a fork child. */
static inline void rl__stats_reset(rl__stats *st)
{
    atomic_ullong *p = (atomic_ullong *)st;
    size_t i;

    /* Every member is an atomic_ullong (or an array of them). */
    for (i = 0; i < sizeof *st / sizeof *p; i++)
        atomic_store_explicit(&p[i], 0, memory_order_relaxed);
}

/* ---- client.c -------------------------------------------------------- */

struct rl_client {
    atomic_int refs;                /* 1 for the user, 1 per rl_lock */
    atomic_int closed;
    atomic_int forked;              /* set in a fork child: rebuild before use */
    rl_client *reg_next;            /* process registry, for pthread_atfork */

    rl__url url;
    char *prefix;
    size_t prefix_len;
    long lease_ms, renew_ms;
    long connect_ms, command_ms;
    int pool_size;
    int wait_replicas;              /* WAIT for this many replicas (0: off) */
    long wait_replicas_ms;
    int fencing;                    /* rl_options.fencing: tokens handed out */
    long delay_ms;                  /* rl_options.lock_delay_ms (0: off) */
    void (*on_lost)(const char *name, size_t len, void *payload);
    void (*log)(int level, const char *message, void *payload);
    void *payload;

    char uuid[RL__UUID_LEN + 1];
    /* Who we are, for operators (owner.c); set with the uuid, read-only
     * until a fork child makes a new identity. */
    char *name;                     /* rl_options.client_name; NULL: none */
    char host[RL__HOST_MAX];
    pid_t pid;
    int64_t started_ms;             /* CLOCK_REALTIME */
    char conn_name[192];            /* CLIENT SETNAME of every connection */
    char owner_key[320];            /* <prefix>owner:{<uuid>} */
    size_t owner_key_len;
    atomic_int warned_fence;        /* logged once: CLIENT KILL refused */
    atomic_int no_notices;          /* the user may not PUBLISH/SUBSCRIBE release channels */
    atomic_int no_subscribe;        /* Redis refused a subscription otherwise: waiters poll */
    /* Raised by whoever sees a server fail (a refused connect, a broken
     * connection, a lost subscriber link, CLUSTERDOWN): the slot map may be
     * out of date. The router refreshes it at the next routed call, or
     * the keeper when a watchdog round finds it due, and lowers the flag.
     * A flag, not a call, so that the server layer needs nothing from the
     * router above it. A count of the
     * times it was raised (rl__map_suspect()): a Sentinel ask lowers it
     * only when nobody raised it again while it asked (rl__router_refresh). */
    atomic_int map_suspect;
    atomic_int closing;             /* shutdown begun: calls fail, waits are cancelled */
    atomic_int calls;               /* API calls in flight */
    char sha[RL__S_COUNT][41];      /* filled once at creation, then read-only */
    rl__stats stats;                /* rl_client_stats(): atomics, no lock */

    pthread_mutex_t mu;             /* guards everything below */

    /* servers and routing */
    rl__server *servers[RL__SERVERS_MAX];
    int nservers;
    rl__server *home;               /* the first that answered: single mode's server */
    int mode;                       /* RL__MODE_*: learned at creation */
    int nnodes, quorum;             /* Redlock: servers[0..nnodes) are the masters */
    int sentinel_last;              /* Sentinel: the seed that answered last */
    uint16_t *slot_map;             /* Cluster: server index per slot, RL__NO_SERVER unknown */
    int64_t map_refresh_at;         /* refresh the slot map then (0: now) */
    int map_refreshing;             /* a thread is asking the cluster */
    pthread_cond_t map_cond;        /* Sentinel: an ask of the sentinels ended */
    uint64_t asks_begun, asks_done; /* Sentinel: asks begun; the last that answered */
    int pool_waiters;
    pthread_cond_t pool_cond;

    /* entries and holds */
    rl__entry **buckets;
    size_t nbuckets, nentries;
    rl__hold *holds;
    size_t nholds;
    rl__hold *spare_holds;          /* freed holds kept for reuse */
    int nspare;
    rl__leftover *leftovers;
    pthread_cond_t leftover_cond;   /* a claimed leftover was processed */
    int64_t leftover_retry_at;
    uint64_t next_serial;

    /* watchdog */
    int wd_started;
    int64_t wd_wake_at;             /* when the watchdog will wake; -1: never; 0: awake */
    pthread_t wd_thread;
    pthread_cond_t wd_cond;
    int64_t wd_next_renew;
    pthread_cond_t round_cond;      /* a renewal round ended */
    int wd_failed;                  /* renewal rounds failed in a row */
    int64_t owner_due;              /* the owner record is to be written again then */
    int64_t wd_failed_since;

    /* keeper (keeper.c): the watchdog's upkeep that may wait on one node */
    int kp_started;
    pthread_t kp_thread;
    pthread_cond_t kp_cond;
    int kp_map;                     /* the watchdog found the slot map due */

    /* subscriber */
    redisContext *sub_ctx[RL__SERVERS_MAX]; /* per server; owned by the subscriber thread */
    redisContext *sub_switch;       /* Sentinel: its link to a sentinel (same owner) */
    int sub_started;
    pthread_t sub_thread;
    int sub_efd;                    /* eventfd: wake the subscriber */

    int stopping;                   /* the watchdog, keeper and subscriber must end */
    pthread_cond_t calls_cond;      /* the last call in flight left; a shutdown ended */
    int shut;                       /* shutdown finished */
};

int rl__client_enter(rl_client *c);       /* closed? forked? then rebuild */
int rl__call_begin(rl_client *c);         /* enter, and count the call in flight */
void rl__call_end(rl_client *c);
void rl__client_unref(rl_client *c);

/* Ring the watchdog's bell: there is work it should look at now (a hold
 * flagged and to be reported, a release that ended).
 * The bell belongs to the client, so the modules the watchdog builds on
 * (holds, outcome) ring it without calling up into watchdog.c. Mutex held. */
/* A connection to s was lost or refused: the map (Cluster) or the
 * primary's address (Sentinel) may be out of date. */
static inline void rl__map_suspect(rl_client *c)
{
    atomic_fetch_add(&c->map_suspect, 1);
}

static inline void rl__map_lost(rl_client *c, rl__server *s)
{
    atomic_fetch_add(&s->losses, 1);
    rl__map_suspect(c);
}

static inline void rl__watchdog_poke(rl_client *c)
{
    if (c->wd_started)
        pthread_cond_signal(&c->wd_cond);
}

/* The keeper's bell (keeper.c): a leftover to drop, a connection or the
 * slot map the watchdog wants. Mutex held. */
static inline void rl__keeper_poke(rl_client *c)
{
    if (c->kp_started)
        pthread_cond_signal(&c->kp_cond);
}

/* ---- redlock.c: a lock granted by a majority of independent masters ---- */

/* Connect to the masters of a redlock:// URL (a majority must answer), at
 * creation. Mutex NOT held. */
int rl__redlock_init(rl_client *c);
/* Take a new hold h (not in the table yet) on a majority: RL_OK with
 * res DONE, or BUSY with res->value the wait the holders' leases ask for
 * and *split set when the vote was split (wait a random while, not for a
 * notice). What it got of a failed try is undone. Mutex NOT held. */
int rl__redlock_acquire(rl__op *o, rl__hold *h, int64_t *sent_ms, rl__result *res,
                        int *split);
/* Reentry and release of a hold the calling thread has (count > 0); the
 * hold's count and flags are updated. Mutex NOT held. */
int rl__redlock_reenter(rl__op *o, rl__hold *h);
int rl__redlock_release(rl__op *o, rl__thread *t, rl__hold *h);
int rl__redlock_force(rl_client *c, rl__entry *e);
/* EXISTS or PTTL on every node, judged by the majority. */
int rl__redlock_query(rl_client *c, rl__entry *e, const char *cmd, long long *out);
/* A renewal of h sent to node i at sent_ms found our field there (found),
 * or gone; a change of h learned there since makes it say nothing. Returns
 * 1 when a majority still vouches for h. Mutex held. */
int rl__redlock_node_renewed(rl_client *c, rl__hold *h, int i, int64_t sent_ms, int found);
/* The nodes (bit i: node i) where a leftover of (e, tid) waits to be
 * dropped: a hold of that thread leaves them alone meanwhile. Mutex held. */
unsigned rl__redlock_leftover_nodes(rl_client *c, const rl__entry *e, uint64_t tid);

/* ---- sentinel.c: the primary that the sentinels name ------------------- */

/* Ask the sentinels for the primary and connect to it, at creation. */
int rl__sentinel_init(rl_client *c);
/* Ask again; a new address becomes c->home. Mutex NOT held. */
int rl__sentinel_refresh(rl_client *c);
/* A connection to sentinel i of the URL (no credentials); NULL on failure. */
redisContext *rl__sentinel_connect(rl_client *c, int i);
/* Whether a +switch-master message's text is about the client's master. */
int rl__sentinel_switch_parse(const char *msg, size_t len, const char *service);

/* Wake the subscriber thread: a subscription to make or drop, or (Sentinel
 * mode) the sentinels to ask. Inline for the same reason as the watchdog's
 * bell: the router rings it. Mutex held. */
static inline void rl__sub_poke(rl_client *c)
{
    uint64_t one = 1;

    if (c->sub_efd >= 0 && write(c->sub_efd, &one, sizeof one) < 0) {
        /* EAGAIN: the counter is already non-zero, the thread will wake. */
    }
}

/* ---- owner.c: the owner record and the connection name --------------- */

#define RL__NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"
#define RL__CONN_HOST_MAX 64        /* host name bytes in a connection name */
#define RL__OWNER_TTL_MIN_MS 1000   /* the record lives 3 leases, at least this */
#define RL__OWNER_REFRESH_MS 100    /* the watchdog awaits a refresh at most this
                                     * (and a quarter of the renewal interval) */

/* Names for the identity just made (rl__identity_new): pid, started, the
 * connection name, the record's key; the record is due now. */
void rl__owner_identity(rl_client *c);
long rl__owner_ttl_ms(const rl_client *c);
/* Queue the record's HSET and PEXPIRE on conn (returns how many: 2), and
 * read those replies (RL_OK, RL_EREDIS refused (logged), RL_ECONN). */
int rl__owner_append(rl_client *c, rl__conn *conn);
int rl__owner_read(rl_client *c, rl__conn *conn, int n);
/* Write the record where it lives (Redlock: on every master), on pool
 * connections: at creation and after fork. Mutex NOT held. */
void rl__owner_write(rl_client *c);
/* Delete it: a shutdown, after its holds were released. Mutex NOT held. */
void rl__owner_erase(rl_client *c);
/* The watchdog's refresh: on its own connections, else the pool's without
 * waiting; replies awaited briefly. Mutex held; dropped during I/O. */
void rl__owner_refresh(rl_client *c);

/* ---- fork.c ---------------------------------------------------------- */

/* A new identity for the client (a random UUID): at creation, and in a
 * fork child, which must not pass for its parent. */
void rl__identity_new(rl_client *c);
int rl__registry_add(rl_client *c);
void rl__registry_remove(rl_client *c);
int rl__registry_has(const rl_client *c);
int rl__registry_ref(rl_client *c);
void rl__rebuild_after_fork(rl_client *c);   /* mutex held */

/* ---- watchdog.c ------------------------------------------------------ */

int rl__watchdog_ensure(rl_client *c);       /* mutex held */
void rl__watchdog_schedule(rl_client *c, const rl__hold *h);  /* new hold; mutex held */
void rl__watchdog_stop(rl_client *c);        /* mutex NOT held */
void rl__watchdog_after_fork(rl_client *c);  /* fork child: the thread is gone */

/* ---- keeper.c: the watchdog's upkeep, on a thread of its own ------------ */

int rl__keeper_ensure(rl_client *c);         /* mutex held */
void rl__keeper_join(rl_client *c);          /* c->stopping set; mutex NOT held */
void rl__keeper_after_fork(rl_client *c);    /* fork child: the thread is gone */
/* The watchdog wants a connection to s (it goes to s's pool), or the
 * slot map refreshed. Mutex held. */
void rl__keeper_want_conn(rl_client *c, rl__server *s);
void rl__keeper_want_map(rl_client *c);

/* ---- subscriber.c ---------------------------------------------------- */

int rl__sub_ensure(rl_client *c);            /* mutex held */
void rl__sub_stop(rl_client *c);             /* mutex NOT held */
void rl__sub_after_fork(rl_client *c);       /* fork child: the thread is gone */

#endif
