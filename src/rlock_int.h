/*
 * Internal declarations shared between rlock's source files. Nothing here is
 * exported: every symbol is hidden and uses the rl__ prefix. Being split
 * into one header per module (util.h, url.h, ...), each declaring what
 * other modules may use; meanwhile this one includes them all.
 */
#ifndef RLOCK_INT_H
#define RLOCK_INT_H

#include "common.h"

#include "util.h"

#include "error.h"

#include "url.h"

#include "resp.h"

#include "reply.h"

#include "slot.h"

#include "topology.h"

/* ---- scripts.c ------------------------------------------------------- */

enum { RL__S_ACQUIRE, RL__S_RELEASE, RL__S_RENEW, RL__S_FORCE,
       RL__S_FAIR_ACQUIRE, RL__S_FAIR_RELEASE, RL__S_FAIR_LEAVE,
       RL__S_RW_ACQUIRE, RL__S_RW_RELEASE, RL__S_RW_RENEW, RL__S_COUNT };
extern const char *const rl__script_src[RL__S_COUNT];

#include "rwlock.h"

#include "thread.h"

#include "conn.h"

#include "command.h"

#include "server.h"

#include "router.h"

#include "holds.h"

#include "outcome.h"

#include "fair.h"

#include "stats.h"

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

/* ---- acquire.c: a thread's first acquisition of a name ----------------- */

/* Take the name for the calling thread t, which holds none of it on o's
 * side: wait up to wait_ms (RL_WAIT_FOREVER) in the local queue and for
 * release notices; lease_ms or RL_LEASE_WATCHDOG. direct: the thread holds
 * the write side and takes the read side: no queue, no local wait (it
 * would wait for itself). Mutex NOT held. */
int rl__acquire_new(rl__op *o, rl__thread *t, long wait_ms, long lease_ms, int direct);
/* A fair name: take owner's place out of its queue ("": none), and wake
 * the first waiter's process when the name is free. Best effort. Mutex NOT
 * held. */
void rl__fair_leave(rl__op *o, const char *owner, size_t owner_len);

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

/* ---- renew.c: one renewal round of the watchdog ------------------------ */

/* Renew every watchdog-kept hold, flag those found gone and set when the
 * next round is due. Mutex held on entry and exit; dropped while Redis is
 * asked. */
void rl__renew_round(rl_client *c);

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
