/*
 * The keeper: the upkeep that may have to wait on one node, for the
 * watchdog, which only asks for it and goes on with its round (DESIGN.md,
 * "Isolation"): opening the connections the watchdog lacks (connect,
 * handshake and, in Sentinel mode, the sentinels' word on the primary),
 * refreshing the Cluster's slot map, dropping leftover fields.
 *
 * No task waits behind another node's. Each server has a worker thread of
 * its own, started the first time there is work for it and kept until the
 * shutdown (or gone in a fork child, and started again there when needed):
 * it opens that server's connection for the watchdog and drops the
 * leftovers that server arbitrates now, each within min(interval, command
 * timeout). The slot map's refresh, which asks the nodes one after another,
 * has a thread of its own too. A thread that starts them never waits on a
 * node: it only looks at what is wanted and starts the missing workers. So
 * a stopped, slow or unreachable node delays its own connection and drops,
 * and the map's refresh, never another server's connection or drops.
 *
 * A connection the watchdog asked for becomes the watchdog's connection to
 * that server (s->wd_conn), which its next round, run at once, takes;
 * only when the watchdog found one meanwhile does it go to the pool.
 *
 * Every thread waits on c->kp_cond, rung with a broadcast; all are joined
 * at the shutdown (rl__keeper_join), the watchdog's first.
 */
#include <stdlib.h>

#include "client.h"
#include "conn.h"
#include "error.h"
#include "holds.h"
#include "keeper.h"
#include "outcome.h"
#include "router.h"
#include "server.h"
#include "util.h"

/* One server's worker. */
struct rl__keeper_worker {
    rl_client *c;
    rl__server *s;
    pthread_t thread;
    int64_t pause_until;    /* its server looked unreachable: no drop before */
};

static void *keeper_main(void *arg);
static void *map_main(void *arg);
static void *worker_main(void *arg);

int rl__keeper_ensure(rl_client *c)
{
    if (c->kp_started)
        return RL_OK;
    if (pthread_create(&c->kp_thread, NULL, keeper_main, c) != 0)
        return rl__err(RL_ENOMEM, "cannot start the keeper thread");
    c->kp_started = 1;
    return RL_OK;
}

void rl__keeper_join(rl_client *c)
{
    int i, started, map_started;

    pthread_mutex_lock(&c->mu);
    started = c->kp_started;
    pthread_cond_broadcast(&c->kp_cond);
    pthread_mutex_unlock(&c->mu);
    /* The starter first: no worker is started after it ended. */
    if (started)
        pthread_join(c->kp_thread, NULL);
    pthread_mutex_lock(&c->mu);
    c->kp_started = 0;
    map_started = c->kp_map_started;
    pthread_mutex_unlock(&c->mu);
    if (map_started)
        pthread_join(c->kp_map_thread, NULL);
    for (i = 0; i < RL__SERVERS_MAX; i++) {
        struct rl__keeper_worker *w = c->kp_workers[i];
        if (!w)
            continue;
        pthread_join(w->thread, NULL);
        c->kp_workers[i] = NULL;
        free(w);
    }
    pthread_mutex_lock(&c->mu);
    c->kp_map_started = 0;
    pthread_mutex_unlock(&c->mu);
}

void rl__keeper_after_fork(rl_client *c)
{
    int i;

    /* No thread of the parent's exists here. */
    c->kp_started = 0;
    c->kp_map_started = 0;
    c->kp_map = 0;
    for (i = 0; i < RL__SERVERS_MAX; i++) {
        free(c->kp_workers[i]);
        c->kp_workers[i] = NULL;
    }
    for (i = 0; i < c->nservers; i++)
        c->servers[i]->kp_open = 0;
}

void rl__keeper_want_conn(rl_client *c, rl__server *s)
{
    s->kp_open = 1;
    rl__keeper_poke(c);
}

void rl__keeper_want_map(rl_client *c)
{
    c->kp_map = 1;
    rl__keeper_poke(c);
}

/* How long a new connection may take: connect and handshake. */
static long open_within(const rl_client *c)
{
    return c->renew_ms < c->command_ms ? c->renew_ms : c->command_ms;
}

/* How long after a failed drop its server is tried again. */
static long retry_ms(const rl_client *c)
{
    return c->renew_ms < 500 ? c->renew_ms : 500;
}

/* The server that arbitrates lo's field now: Redlock, its node; else where
 * the name goes (the map may move it to another worker). Mutex held. */
static rl__server *leftover_server(rl_client *c, const rl__leftover *lo)
{
    return lo->server ? lo->server : rl__route_server(c, lo->entry->slot);
}

/* Open a connection to s for the watchdog, within one interval (a server
 * that accepts but does not answer costs that long): the watchdog's own
 * (s->wd_conn) when it has none, else into s's pool; then have the
 * watchdog's round run again at once. Mutex held; dropped while
 * connecting. */
static void open_for_watchdog(rl_client *c, rl__server *s)
{
    rl__conn *conn = NULL;
    int rc;

    /* Tried even when s was found down a moment ago: this thread waits on
     * s alone, and a handshake cut once (a server dropping its clients)
     * must not leave the watchdog without a connection for 2 s. */
    s->kp_open = 0;
    pthread_mutex_unlock(&c->mu);
    rc = rl__conn_open_within(c, s, open_within(c), &conn);
    /* Sentinel: checked against the sentinels like any new connection. */
    if (rc == RL_OK && c->mode == RL__MODE_SENTINEL &&
        (rc = rl__router_check_fresh(c, conn, open_within(c))) != RL_OK)
        rl__conn_close(c, conn);
    pthread_mutex_lock(&c->mu);
    if (rc != RL_OK) {
        rl__log(c, RL_LOG_DEBUG, "rlock keeper: no connection to %s for the watchdog: %s",
                s->name, rl_last_error());
        return;
    }
    /* Only the watchdog's thread uses s->wd_conn, and only one it found
     * set under the mutex: one set while it is NULL is safe to hand over. */
    if (!s->wd_conn && !c->stopping) {
        s->wd_conn = conn;
        conn = NULL;
    }
    if (conn) {
        pthread_mutex_unlock(&c->mu);
        rl__pool_adopt(c, conn);
        pthread_mutex_lock(&c->mu);
    }
    if (c->wd_next_renew)
        c->wd_next_renew = rl__now_ms();
    rl__watchdog_poke(c);
}

/* The oldest of s's leftovers to drop now (NULL: none); *next lowered to
 * when to look again for the others. Mutex held. */
static rl__leftover *pick_leftover(rl_client *c, struct rl__keeper_worker *w, int64_t *next)
{
    rl__leftover *lo, *pick = NULL;
    int64_t now = rl__now_ms(), at;

    for (lo = c->leftovers; lo; lo = lo->next) {
        if (leftover_server(c, lo) != w->s)
            continue;
        /* Claimed: an application thread drops it itself; looked at again
         * soon, in case that fails. */
        at = lo->claimed ? now + 50 : lo->retry_at > w->pause_until ? lo->retry_at
                                                                    : w->pause_until;
        if (at <= now) {
            pick = lo;      /* new ones are pushed in front: the last is the oldest */
        } else if (*next < 0 || at < *next) {
            *next = at;
        }
    }
    /* Redlock: a node found down lately is not asked until it is up. */
    if (pick && atomic_load(&w->s->down_until) > now) {
        w->pause_until = now + retry_ms(c);
        if (*next < 0 || w->pause_until < *next)
            *next = w->pause_until;
        return NULL;
    }
    return pick;
}

/* Drop one of s's leftovers, within one interval. Mutex held; dropped
 * while it runs. */
static void drop_leftover(rl_client *c, struct rl__keeper_worker *w, rl__leftover *lo)
{
    rl__fence late;
    int rc;

    lo->claimed = 1;
    pthread_mutex_unlock(&c->mu);
    RL__HOOK("keeper.before_drop");
    rc = rl__leftover_drop(c, lo, open_within(c), &late);
    pthread_mutex_lock(&c->mu);
    if (rc != RL_OK) {
        lo->retry_at = rl__now_ms() + retry_ms(c);
        /* Unreachable: its other leftovers wait as long. */
        if (rc == RL_ECONN)
            w->pause_until = lo->retry_at;
    }
    rl__leftover_done(c, lo, rc, &late);
}

/* One server's worker: its connection for the watchdog first, then its
 * leftovers, oldest first. */
static void *worker_main(void *arg)
{
    struct rl__keeper_worker *w = arg;
    rl_client *c = w->c;
    rl__leftover *lo;

    pthread_mutex_lock(&c->mu);
    while (!c->stopping) {
        int64_t next = -1;

        if (w->s->kp_open) {
            open_for_watchdog(c, w->s);
            continue;
        }
        if ((lo = pick_leftover(c, w, &next))) {
            drop_leftover(c, w, lo);
            continue;
        }
        rl__cond_wait_until(&c->kp_cond, &c->mu, next);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* The slot map's refresh (Cluster: asks the nodes one after another, those
 * found down last, each within one interval; Sentinel: rings the
 * subscriber), on its own thread: the node it asks first may be the one
 * that stopped. */
static void *map_main(void *arg)
{
    rl_client *c = arg;

    pthread_mutex_lock(&c->mu);
    while (!c->stopping) {
        if (c->kp_map) {
            c->kp_map = 0;
            pthread_mutex_unlock(&c->mu);
            rl__router_refresh_within(c, 0, open_within(c));
            pthread_mutex_lock(&c->mu);
            continue;
        }
        rl__cond_wait_until(&c->kp_cond, &c->mu, -1);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* s's worker, started if it is not yet. Mutex held. */
static void start_worker(rl_client *c, rl__server *s)
{
    struct rl__keeper_worker *w;

    if (c->kp_workers[s->index])
        return;
    if (!(w = calloc(1, sizeof *w)))
        return;     /* tried again at the next look */
    w->c = c;
    w->s = s;
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
        free(w);
        rl__log(c, RL_LOG_WARN, "rlock keeper: cannot start a worker for %s", s->name);
        return;
    }
    c->kp_workers[s->index] = w;
}

/* Start the threads that have work and are not running yet; never waits on
 * a node. While leftovers are listed, looks again now and then: the map may
 * move one to a server without a worker. */
static void *keeper_main(void *arg)
{
    rl_client *c = arg;
    rl__leftover *lo;
    int i;

    pthread_mutex_lock(&c->mu);
    while (!c->stopping) {
        if (c->kp_map && !c->kp_map_started) {
            if (pthread_create(&c->kp_map_thread, NULL, map_main, c) == 0)
                c->kp_map_started = 1;
            else
                rl__log(c, RL_LOG_WARN, "rlock keeper: cannot start the slot map's thread");
        }
        for (i = 0; i < c->nservers; i++)
            if (c->servers[i]->kp_open)
                start_worker(c, c->servers[i]);
        for (lo = c->leftovers; lo; lo = lo->next) {
            rl__server *s = leftover_server(c, lo);
            if (s)
                start_worker(c, s);
        }
        /* A map that changed since moves a leftover to another worker,
         * which may be asleep with nothing of its own: wake them all. */
        if (c->leftovers)
            pthread_cond_broadcast(&c->kp_cond);
        rl__cond_wait_until(&c->kp_cond, &c->mu, c->leftovers ? rl__now_ms() + 500 : -1);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}
