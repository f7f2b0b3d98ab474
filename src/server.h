/*
 * server.c: one Redis endpoint and its pool of connections.
 */
#ifndef RL_SERVER_H
#define RL_SERVER_H

#include "common.h"
#include "conn.h"
#include "topology.h"

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
    /* under the mutex: a watchdog connection given up on while placements
     * it carried (Redlock's spread) were unanswered: killed ahead of the
     * next round's calls there, which place nothing (id <= 0: none) */
    rl__fence wd_unfenced;
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

#endif
