/*
 * The keeper: one thread per client, started and stopped with the
 * watchdog, for the upkeep that may have to wait on one node: refreshing
 * the Cluster's slot map, dropping leftover fields, opening the
 * connections the watchdog lacks (connect, handshake and, in Sentinel
 * mode, the sentinels' word on the primary). The watchdog only asks for
 * them and goes on with its round, so a stopped, slow or unreachable node
 * never holds up the renewals on the others (DESIGN.md, "Isolation").
 *
 * The keeper's own tasks run one after another: a stopped node can delay
 * a leftover's drop or another server's new connection (by at most
 * min(interval, command timeout) for each connection, slot-map question
 * or drop it asks of that node), never a renewal sent on a connection
 * that works. A connection the watchdog asked for goes to the server's
 * pool, where the watchdog's next round finds it (an application thread
 * may take it first: the watchdog then asks again).
 */
#include "client.h"
#include "conn.h"
#include "error.h"
#include "holds.h"
#include "keeper.h"
#include "outcome.h"
#include "router.h"
#include "server.h"
#include "util.h"

static void *keeper_main(void *arg);

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
    int started;

    pthread_mutex_lock(&c->mu);
    started = c->kp_started;
    pthread_cond_signal(&c->kp_cond);
    pthread_mutex_unlock(&c->mu);
    if (started)
        pthread_join(c->kp_thread, NULL);
    pthread_mutex_lock(&c->mu);
    c->kp_started = 0;
    pthread_mutex_unlock(&c->mu);
}

void rl__keeper_after_fork(rl_client *c)
{
    int i;

    c->kp_started = 0;
    c->kp_map = 0;
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

/* The first server the watchdog wants a connection to, or NULL. */
static rl__server *wanted_server(rl_client *c)
{
    int i;

    for (i = 0; i < c->nservers; i++)
        if (c->servers[i]->kp_open)
            return c->servers[i];
    return NULL;
}

/* Work that comes before the leftovers: the watchdog waits for it. */
static int urgent(rl_client *c)
{
    return c->kp_map || wanted_server(c) != NULL;
}

/* Open a connection to s for the watchdog, within one interval (a server
 * that accepts but does not answer costs that long), into s's pool; then
 * have the watchdog's round run again at once. Mutex held; dropped while
 * connecting. */
static void open_for_watchdog(rl_client *c, rl__server *s)
{
    rl__conn *conn;
    int rc;

    s->kp_open = 0;
    if (atomic_load(&s->down_until) > rl__now_ms())
        return;     /* the watchdog asks again at its next round */
    pthread_mutex_unlock(&c->mu);
    rc = rl__conn_open_within(c, s, open_within(c), &conn);
    /* Sentinel: checked against the sentinels like any new connection. */
    if (rc == RL_OK && c->mode == RL__MODE_SENTINEL &&
        (rc = rl__router_check_fresh(c, conn, open_within(c))) != RL_OK)
        rl__conn_close(c, conn);
    if (rc == RL_OK)
        rl__pool_adopt(c, conn);
    pthread_mutex_lock(&c->mu);
    if (rc != RL_OK) {
        rl__log(c, RL_LOG_DEBUG, "rlock keeper: no connection to %s for the watchdog: %s",
                s->name, rl_last_error());
        return;
    }
    if (c->wd_next_renew)
        c->wd_next_renew = rl__now_ms();
    rl__watchdog_poke(c);
}

/* Drop the fields that unresolved changes may have left. Mutex held. */
static void drop_leftovers(rl_client *c)
{
    rl__leftover *lo, *tried = NULL;
    rl__fence late;
    int failed = 0, rc;

    /* Oldest first (new ones are pushed in front); stop at an unreachable
     * Redis, but let no single refusal starve the others. */
    for (;;) {
        rl__leftover *pick = NULL;
        for (lo = c->leftovers; lo && lo != tried; lo = lo->next)
            if (!lo->claimed)
                pick = lo;
        if (!pick || c->stopping)
            break;
        if (urgent(c)) {
            c->leftover_retry_at = 0;   /* back here right after */
            return;
        }
        if (pick->server && atomic_load(&pick->server->down_until) > rl__now_ms()) {
            /* Redlock: a node found down lately; the others go on. */
            failed = 1;
            tried = pick;
            continue;
        }
        pick->claimed = 1;
        pthread_mutex_unlock(&c->mu);
        RL__HOOK("keeper.before_drop");
        /* Within one interval, as a new connection: the watchdog may be
         * waiting for one to another server meanwhile. */
        rc = rl__leftover_drop(c, pick, open_within(c), &late);
        pthread_mutex_lock(&c->mu);
        rl__leftover_done(c, pick, rc, &late);
        if (rc != RL_OK) {
            failed = 1;
            if (rc == RL_ECONN && !pick->server)
                break;
            tried = pick;     /* still listed: only look at newer ones now */
        }
    }
    /* Retry after a failure; look again soon at what an application thread
     * is dropping itself right now. */
    c->leftover_retry_at = rl__now_ms() + (failed ? (c->renew_ms < 500 ? c->renew_ms : 500) : 50);
}

static void *keeper_main(void *arg)
{
    rl_client *c = arg;
    rl__server *s;

    pthread_mutex_lock(&c->mu);
    while (!c->stopping) {
        int64_t next = -1;

        if ((s = wanted_server(c))) {
            open_for_watchdog(c, s);
            continue;
        }
        if (c->kp_map) {
            /* Cluster: asks the nodes, one after another, those found
             * down last, each within one interval (a stopped seed must
             * not hold up the connection another server's renewals
             * wait for); Sentinel: rings the subscriber. */
            c->kp_map = 0;
            pthread_mutex_unlock(&c->mu);
            rl__router_refresh_within(c, 0, open_within(c));
            pthread_mutex_lock(&c->mu);
            continue;
        }
        if (c->leftovers) {
            if (rl__now_ms() >= c->leftover_retry_at) {
                drop_leftovers(c);
                continue;
            }
            next = c->leftover_retry_at;
        }
        rl__cond_wait_until(&c->kp_cond, &c->mu, next);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}
