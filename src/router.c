/*
 * The router: which server arbitrates a name.
 *
 * Single mode: the one server of the URL. Cluster mode (the server said so
 * when the client was made): the master that owns the name's slot, from a
 * slot map the cluster gives (CLUSTER SLOTS). The map is asked for again
 * when a server cannot be reached, at least every RL__MAP_MAX_AGE_MS, and
 * after a MOVED (which also corrects its one slot at once). ASK sends the
 * next try to the named node after ASKING. TRYAGAIN and CLUSTERDOWN are
 * sent again after a short pause, until the route's deadline; so are
 * redirects past RL__REDIRECTS_MAX (nodes that send a command round in a
 * circle disagree on who owns the slot: a failover or a migration half
 * seen). Every one of those replies comes before a command runs, so
 * sending it again is safe.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "conn.h"
#include "error.h"
#include "outcome.h"
#include "reply.h"
#include "router.h"
#include "sentinel.h"
#include "server.h"
#include "slot.h"
#include "topology.h"
#include "util.h"

#define RL__MAP_MAX_AGE_MS 30000
#define RL__REDIRECTS_MAX 8
#define RL__BUSY_FIRST_MS 10      /* TRYAGAIN / CLUSTERDOWN: pause, doubling */
#define RL__BUSY_MAX_MS 200

int rl__router_mixed_ok(const rl_client *c)
{
    return c->mode != RL__MODE_CLUSTER;   /* Redlock's nodes are single servers */
}

const char *rl__notice_arg(rl_client *c)
{
    if (atomic_load(&c->no_notices))
        return "0";
    return c->mode == RL__MODE_CLUSTER ? "s" : "1";
}

rl__server *rl__route_server(rl_client *c, uint16_t slot)
{
    uint16_t i;

    if (c->mode == RL__MODE_SINGLE || c->mode == RL__MODE_SENTINEL)
        return c->home;
    if (c->mode == RL__MODE_REDLOCK) {
        /* Every node arbitrates; one is asked for notices and queries:
         * the slot spreads names over the nodes, and one found down
         * lately passes its turn to the next. */
        int64_t now = rl__now_ms();
        int k;
        for (k = 0; k < c->nnodes; k++) {
            rl__server *s = c->servers[(slot + k) % c->nnodes];
            if (atomic_load(&s->down_until) <= now)
                return s;
        }
        return c->servers[slot % c->nnodes];
    }
    i = c->slot_map[slot];
    /* A slot nobody serves (yet): any node redirects us. */
    return i == RL__NO_SERVER ? c->home : c->servers[i];
}

void rl__route_init(rl__route *rt, rl_client *c, uint16_t slot)
{
    memset(rt, 0, sizeof *rt);
    rt->slot = slot;
    rt->deadline = rl__now_ms() + c->command_ms;
}

static void pause_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) != 0)
        ;
}

/*
 * Sentinel mode: after a connection was lost (or refused), the primary we
 * know may be stale: the old one may be back, empty, while the sentinels
 * name another. Wait for the subscriber's next answer (at most within_ms:
 * the command timeout, or the keeper's bound) before routing. Mutex NOT
 * held.
 */
static int fresh_primary(rl_client *c, long within_ms)
{
    int64_t until;

    if (!atomic_load(&c->map_suspect))
        return RL_OK;
    pthread_mutex_lock(&c->mu);
    until = rl__now_ms() + within_ms;
    while (atomic_load(&c->map_suspect) && !atomic_load(&c->closing)) {
        rl__sub_poke(c);
        if (rl__now_ms() >= until) {
            pthread_mutex_unlock(&c->mu);
            return rl__err(RL_ECONN, "a connection was lost, and the sentinels did not say "
                           "where the primary is now within %ld ms", within_ms);
        }
        rl__cond_wait_until(&c->map_cond, &c->mu, until);
    }
    pthread_mutex_unlock(&c->mu);
    return atomic_load(&c->closing) ? rl__err(RL_ECANCELED, "the client is shutting down")
                                    : RL_OK;
}

int rl__router_check_fresh(rl_client *c, rl__conn *conn, long within_ms)
{
    rl__server *s = conn->server;
    int64_t until = rl__now_ms() + within_ms;
    unsigned losses = atomic_load(&s->losses);
    uint64_t want;
    int ok;

    pthread_mutex_lock(&c->mu);
    /* Never lost since the sentinels last vouched for it: the same server
     * process (a pool that grows asks nobody). */
    if (losses == s->vouched && c->home == s) {
        pthread_mutex_unlock(&c->mu);
        conn->fresh = 0;
        return RL_OK;
    }
    /* An ask that begins from now on, after the connect: one under way,
     * or one answered while the server was down, may predate a failover. */
    want = c->asks_begun + 1;
    rl__map_suspect(c);
    rl__sub_poke(c);
    while (c->asks_done < want && !atomic_load(&c->closing) && rl__now_ms() < until)
        rl__cond_wait_until(&c->map_cond, &c->mu, until);
    ok = c->asks_done >= want && c->home == s;
    if (ok)
        s->vouched = losses;
    pthread_mutex_unlock(&c->mu);
    if (ok) {
        conn->fresh = 0;
        return RL_OK;
    }
    return rl__err(RL_ECONN, "%s is not the primary the sentinels name now (or they did not "
                   "say within %ld ms)", s->name, within_ms);
}

int rl__route_get(rl_client *c, rl__route *rt, rl__conn **out)
{
    rl__server *s;
    redisReply *r = NULL;
    int rc;

    if (c->mode == RL__MODE_SENTINEL &&
        (rc = fresh_primary(c, rt->within_ms > 0 ? rt->within_ms : c->command_ms)) != RL_OK)
        return rc;
    if (rt->pin) {
        s = rt->pin;
    } else if (c->mode == RL__MODE_SINGLE && !rt->ask) {
        s = c->home;            /* the hot path: no lookup */
    } else {
        rl__router_refresh_within(c, 0, rt->within_ms);
        pthread_mutex_lock(&c->mu);
        s = rt->ask ? rt->ask : rl__route_server(c, rt->slot);
        pthread_mutex_unlock(&c->mu);
    }
    rt->last = s;
    /* Pinned (a Redlock node): one found down lately is not waited for. */
    rc = rt->within_ms > 0 ? rl__pool_get_nowait(c, s, rt->within_ms, out)
         : rt->pin ? rl__pool_get_quick(c, s, out) : rl__pool_get(c, s, out);
    if (rc != RL_OK)
        return rc;
    if (c->mode == RL__MODE_SENTINEL && (*out)->fresh &&
        (rc = rl__router_check_fresh(c, *out, rt->within_ms > 0 ? rt->within_ms
                                                                : c->command_ms)) != RL_OK) {
        rl__pool_put(c, *out);      /* still fresh: checked again at its next use */
        *out = NULL;
        return rc;
    }
    if (!rt->ask)
        return RL_OK;
    /* The slot is being imported there: this one command may run. */
    rt->ask = NULL;
    {
        const char *argv[1] = { "ASKING" };
        size_t lens[1] = { 6 };
        rc = rl__conn_call(*out, &r, 1, argv, lens);
    }
    if (rc == RL_OK && r->type == REDIS_REPLY_ERROR)
        rc = rl__reply_error_status(r);
    freeReplyObject(r);
    if (rc != RL_OK) {
        rl__pool_put(c, *out);
        *out = NULL;
    }
    return rc;
}

/* Store the master of [first, last] in the map being built. */
struct map_build {
    rl_client *c;
    uint16_t *map;
    const rl__server *from;     /* the node asked, for ranges with no host */
    int full;                   /* no room for another server */
};

static int put_range(void *arg, int first, int last, const char *host, int port)
{
    struct map_build *b = arg;
    rl__server *s;
    int i;

    pthread_mutex_lock(&b->c->mu);
    s = rl__server_get(b->c, host[0] ? host : b->from->host, port);
    pthread_mutex_unlock(&b->c->mu);
    if (!s) {
        b->full = 1;
        return 1;
    }
    for (i = first; i <= last; i++)
        b->map[i] = (uint16_t)s->index;
    return 0;
}

/* CLUSTER SLOTS on conn into a new map. RL_OK with *map set (caller frees);
 * RL__RETRY when the server is not in cluster mode. */
static int ask_map(rl_client *c, rl__conn *conn, uint16_t **map)
{
    const char *argv[2] = { "CLUSTER", "SLOTS" };
    size_t lens[2] = { 7, 5 };
    struct map_build b;
    redisReply *r = NULL;
    int rc, n, i;

    *map = NULL;
    if ((rc = rl__conn_call(conn, &r, 2, argv, lens)) != RL_OK)
        return rc;
    if (r->type == REDIS_REPLY_ERROR) {
        rc = strstr(r->str, "cluster support disabled") ? RL__RETRY : rl__reply_error_status(r);
        freeReplyObject(r);
        return rc;
    }
    b.c = c;
    b.from = conn->server;
    b.full = 0;
    b.map = malloc(sizeof *b.map * RL__SLOTS);
    if (!b.map) {
        freeReplyObject(r);
        return rl__err(RL_ENOMEM, "out of memory");
    }
    for (i = 0; i < RL__SLOTS; i++)
        b.map[i] = RL__NO_SERVER;
    n = rl__slots_parse(r, put_range, &b);
    freeReplyObject(r);
    if (b.full || n <= 0) {
        free(b.map);
        return b.full ? rl__err(RL_ENOMEM, "too many Redis servers (%d at most)",
                                RL__SERVERS_MAX)
               : n < 0 ? rl__err(RL_EPROTO, "CLUSTER SLOTS: reply not understood")
                       : rl__err(RL_ECONN, "CLUSTER SLOTS: the cluster serves no slot yet");
    }
    *map = b.map;
    return RL_OK;
}

/* What INFO says of cluster mode: 1 on, 0 off, -1 cannot tell. */
static int cluster_enabled(rl__conn *conn)
{
    const char *argv[2] = { "INFO", "cluster" };
    size_t lens[2] = { 4, 7 };
    redisReply *r = NULL;
    int on = -1;

    if (rl__conn_call(conn, &r, 2, argv, lens) != RL_OK)
        return -1;
    if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
        on = strstr(r->str, "cluster_enabled:1") ? 1 : strstr(r->str, "cluster_enabled:0") ? 0 : -1;
    freeReplyObject(r);
    return on;
}

int rl__router_init(rl_client *c, rl__conn *conn)
{
    uint16_t *map;
    int rc = ask_map(c, conn, &map);

    if (rc == RL__RETRY) {
        c->mode = RL__MODE_SINGLE;
        return RL_OK;
    }
    if (rc == RL_EREDIS || rc == RL_EAUTH) {
        /* Not allowed to ask (an ACL user without +cluster|slots), or an
         * older server. On a Cluster, single mode would mix slots in one
         * renewal and lose every watchdog hold: refuse, and say why. */
        char why[256];
        snprintf(why, sizeof why, "%s", rl_last_error());
        if (cluster_enabled(conn) == 1)
            return rl__err(RL_EREDIS, "%s is a Redis Cluster node, but CLUSTER SLOTS was "
                           "refused (%s): grant this user +cluster|slots", conn->server->name,
                           why);
        rl__log(c, RL_LOG_WARN, "rlock: cannot ask for the cluster's slots (%s): "
                "treating %s as a single server", why, conn->server->name);
        c->mode = RL__MODE_SINGLE;
        return RL_OK;
    }
    if (rc != RL_OK)
        return rc;
    c->mode = RL__MODE_CLUSTER;
    c->slot_map = map;
    c->map_refresh_at = rl__now_ms() + RL__MAP_MAX_AGE_MS;
    rl__log(c, RL_LOG_INFO, "rlock: Redis Cluster with %d node(s) known", c->nservers);
    return RL_OK;
}

void rl__router_after_fork(rl_client *c)
{
    /* A refresh the parent's thread had under way is not ours to wait for. */
    c->map_refreshing = 0;
    c->map_refresh_at = 0;
}

int rl__router_map_due(rl_client *c)
{
    return (c->mode == RL__MODE_CLUSTER || c->mode == RL__MODE_SENTINEL) &&
           (c->map_refresh_at <= rl__now_ms() || atomic_load(&c->map_suspect));
}

/* Ask one server for the map, within_ms for a new connection and for the
 * answer (<= 0: the client's timeouts, waiting for a pooled connection
 * when the pool is full); RL_OK when the client's map was replaced. */
static int refresh_from(rl_client *c, rl__server *s, long within_ms)
{
    rl__conn *conn;
    uint16_t *map, *old;
    long saved;
    int rc;

    rc = within_ms > 0 ? rl__pool_get_nowait(c, s, within_ms, &conn) : rl__pool_get(c, s, &conn);
    if (rc != RL_OK)
        return rc;
    saved = conn->timeout_ms;
    if (within_ms > 0)
        rl__conn_set_timeout(conn, within_ms);
    rc = ask_map(c, conn, &map);
    if (within_ms > 0 && !rl__conn_broken(conn))
        rl__conn_set_timeout(conn, saved);
    rl__pool_put(c, conn);
    if (rc != RL_OK)
        return rc == RL__RETRY ? rl__err(RL_EREDIS, "%s is not in cluster mode", s->name) : rc;
    pthread_mutex_lock(&c->mu);
    old = c->slot_map;
    c->slot_map = map;
    pthread_mutex_unlock(&c->mu);
    free(old);
    return RL_OK;
}

void rl__router_refresh(rl_client *c, int force)
{
    rl__router_refresh_within(c, force, 0);
}

void rl__router_refresh_within(rl_client *c, int force, long within_ms)
{
    rl__server *order[RL__SERVERS_MAX];
    int n = 0, i, rc = RL_ECONN;
    int64_t now = rl__now_ms();

    if (c->mode != RL__MODE_CLUSTER && c->mode != RL__MODE_SENTINEL)
        return;
    pthread_mutex_lock(&c->mu);
    if (c->map_refreshing || (!force && !rl__router_map_due(c))) {
        pthread_mutex_unlock(&c->mu);
        return;
    }
    if (c->mode == RL__MODE_SENTINEL && !force) {
        /* Asked by the subscriber thread, which hears the sentinels: a
         * sentinel that does not answer must not hold up a call or a
         * renewal. Until the answer comes, the primary we know is used. */
        rl__sub_poke(c);
        pthread_mutex_unlock(&c->mu);
        return;
    }
    c->map_refreshing = 1;
    if (c->mode == RL__MODE_SENTINEL) {
        /* The "map" is the primary's address, which the sentinels know. */
        uint64_t begun = ++c->asks_begun;
        int seen = atomic_load(&c->map_suspect);
        pthread_mutex_unlock(&c->mu);
        rc = rl__sentinel_refresh(c);
        pthread_mutex_lock(&c->mu);
        c->map_refreshing = 0;
        if (rc == RL_OK)
            c->asks_done = begun;   /* a failed ask vouches for nothing */
        /* Lowered only when not raised again meanwhile: a loss (or a caller
         * that wants an answer asked after its connect) while this ask was
         * under way wants another ask, which this one's answer, asked
         * before, cannot stand for. */
        atomic_compare_exchange_strong(&c->map_suspect, &seen, 0);
        c->map_refresh_at = rl__now_ms() + (rc == RL_OK ? RL__MAP_MAX_AGE_MS : 100);
        pthread_cond_broadcast(&c->map_cond);
        pthread_mutex_unlock(&c->mu);
        if (rc != RL_OK)
            rl__log(c, RL_LOG_WARN, "rlock: cannot ask the sentinels for the primary: %s",
                    rl_last_error());
        return;
    }
    /* Servers that were reachable lately first; one that just refused a
     * connection last (each try may cost the connect timeout). */
    for (i = 0; i < c->nservers; i++)
        if (atomic_load(&c->servers[i]->down_until) <= now)
            order[n++] = c->servers[i];
    for (i = 0; i < c->nservers; i++)
        if (atomic_load(&c->servers[i]->down_until) > now)
            order[n++] = c->servers[i];
    pthread_mutex_unlock(&c->mu);

    for (i = 0; i < n && rc != RL_OK; i++)
        rc = refresh_from(c, order[i], within_ms);

    pthread_mutex_lock(&c->mu);
    c->map_refreshing = 0;
    /* Lowered after the asking, not before: the failures of this refresh's
     * own connects raise it, and must not make every call ask again. */
    atomic_store(&c->map_suspect, 0);
    /* Failed: try again soon, not on every call. */
    c->map_refresh_at = rl__now_ms() + (rc == RL_OK ? RL__MAP_MAX_AGE_MS : 100);
    pthread_mutex_unlock(&c->mu);
    if (rc != RL_OK)
        rl__log(c, RL_LOG_WARN, "rlock: cannot refresh the cluster's slot map: %s",
                rl_last_error());
}

rl__server *rl__router_redirect(rl_client *c, const rl__redirect *red, const rl__server *from)
{
    rl__server *s = rl__server_get(c, red->host[0] ? red->host : from ? from->host : NULL,
                                   red->port);

    if (s && red->kind == RL__REDIR_MOVED && c->mode == RL__MODE_CLUSTER) {
        c->slot_map[red->slot] = (uint16_t)s->index;
        c->map_refresh_at = 0;      /* more slots moved, most likely */
    }
    return s;
}

/* The servers are in motion: pause (doubling), have the map asked for
 * again, and RL__RETRY; RL_ECONN (nothing ran) once the pause would pass
 * rt's deadline, RL_ECANCELED (nothing ran) once the client is shutting
 * down. A route with within_ms (the keeper's, which serves every
 * server) does not wait for one slot to settle: RL_EREDIS, and it tries
 * again on a later round. */
static int settle(rl_client *c, rl__route *rt, const char *msg, size_t len)
{
    rt->backoff = rl__backoff_ms(rt->backoff, RL__BUSY_FIRST_MS, RL__BUSY_MAX_MS);
    if (rt->within_ms > 0) {
        /* Not RL_ECONN: the keeper goes on to other servers' leftovers. */
        rl__map_suspect(c);
        return rl__err(RL_EREDIS, "the cluster is in motion (tried again later): %.*s",
                       (int)(len > 200 ? 200 : len), msg);
    }
    if (rl__now_ms() + rt->backoff > rt->deadline)
        return rl__err(RL_ECONN, "the cluster did not settle in time: %.*s",
                       (int)(len > 200 ? 200 : len), msg);
    /* A shutdown waits for calls in flight: it ends this wait at the next
     * pause (at most RL__BUSY_MAX_MS), not at the call's deadline. Nothing
     * ran, as for RL_ECONN. */
    if (!atomic_load(&c->closing))
        pause_ms(rt->backoff);
    if (atomic_load(&c->closing))
        return rl__err(RL_ECANCELED, "the client is shutting down");
    rl__map_suspect(c);
    return RL__RETRY;
}

int rl__route_error(rl_client *c, rl__route *rt, const char *msg, size_t len)
{
    rl__redirect red;
    rl__server *s;
    int rc, kind = rl__redirect_parse(msg, len, &red);

    if (kind < 0)
        return rl__err(RL_EPROTO, "a redirect not understood: %.*s", (int)(len > 200 ? 200 : len),
                       msg);
    if (kind == 1) {
        if (++rt->redirects > RL__REDIRECTS_MAX && (rc = settle(c, rt, msg, len)) != RL__RETRY)
            return rc;
        pthread_mutex_lock(&c->mu);
        s = rl__router_redirect(c, &red, rt->last);
        pthread_mutex_unlock(&c->mu);
        if (!s)
            return rl__err(RL_ENOMEM, "too many Redis servers (%d at most)", RL__SERVERS_MAX);
        if (red.kind == RL__REDIR_ASK || c->mode != RL__MODE_CLUSTER)
            rt->ask = s;     /* single mode has no map: go there for this command */
        return RL__RETRY;
    }
    if (c->mode == RL__MODE_SENTINEL && len >= 8 && memmem(msg, len, "READONLY", 8)) {
        /* Written to a replica: the primary moved (a failover, or this
         * one was demoted). Nothing ran; ask the sentinels again. */
        rl__map_suspect(c);
    }
    if (rl__cluster_retryable(msg, len) ||
        (c->mode == RL__MODE_SENTINEL && len >= 8 && memmem(msg, len, "READONLY", 8)))
        return settle(c, rt, msg, len);
    return RL_OK;
}
