/*
 * router.c: which server arbitrates a name (single, Cluster, Redlock,
 * Sentinel), redirects and the slot map.
 */
#ifndef RL_ROUTER_H
#define RL_ROUTER_H

#include "common.h"
#include "server.h"
#include "topology.h"

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

#endif
