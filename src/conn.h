/*
 * conn.c: one connection to a Redis server (the fence that names it, its
 * buffers), opened blocking or not, and one plain command on it.
 */
#ifndef RL_CONN_H
#define RL_CONN_H

#include "common.h"
#include "reply.h"

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

#endif
