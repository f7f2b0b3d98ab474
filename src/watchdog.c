/*
 * The watchdog: one thread per client that keeps watchdog leases alive and
 * raises the flag of every hold it can no longer vouch for.
 *
 * Each tick renews every watchdog-kept hold of the process in one pipelined
 * round (renew.c). A round that fails is retried soon; meanwhile each
 * hold's last confirmed expiry (local monotonic clock, less a drift
 * margin) decides when its flag rises. Fixed leases are never renewed:
 * their flag rises when the lease runs out. With nothing held the thread
 * sleeps without a timeout.
 *
 * What may wait on one node (a slot-map refresh, a leftover's drop, a new
 * connection and its handshake) is the keeper's (keeper.c). The owner
 * record's refresh stays here, bounded by a quarter interval (owner.c).
 */
#include <unistd.h>

#include "client.h"
#include "conn.h"
#include "error.h"
#include "holds.h"
#include "keeper.h"
#include "owner.h"
#include "renew.h"
#include "server.h"
#include "stats.h"
#include "thread.h"
#include "tls.h"
#include "util.h"
#include "watchdog.h"

static void *watchdog_main(void *arg);

int rl__watchdog_ensure(rl_client *c)
{
    int rc;

    if (c->wd_started)
        return RL_OK;
    if ((rc = rl__keeper_ensure(c)) != RL_OK)
        return rc;
    c->wd_next_renew = 0;
    rc = pthread_create(&c->wd_thread, NULL, watchdog_main, c);
    if (rc != 0)
        return rl__err(RL_ENOMEM, "cannot start the watchdog thread");
    c->wd_started = 1;
    return RL_OK;
}

void rl__watchdog_schedule(rl_client *c, const rl__hold *h)
{
    int64_t due = atomic_load(&h->expiry_ms);

    if (h->watchdog && rl__now_ms() + c->renew_ms < due)
        due = rl__now_ms() + c->renew_ms;
    /* The owner record ran out while nothing was held: write it again. */
    if (c->owner_due < due)
        due = c->owner_due;
    /* Wake the thread only when it would otherwise sleep past what this
     * hold needs: a loop of acquire/release then costs no context switch. */
    if (c->wd_started && (c->wd_wake_at < 0 || due < c->wd_wake_at))
        pthread_cond_signal(&c->wd_cond);
}

void rl__watchdog_after_fork(rl_client *c)
{
    int i;

    /* The thread does not exist here; its connections may be mid-use. */
    c->wd_started = 0;
    c->wd_wake_at = 0;
    for (i = 0; i < c->nservers; i++) {
        rl__conn *conn = c->servers[i]->wd_conn;
        if (conn && conn->ctx && conn->ctx->fd >= 0)
            rl__tls_close(conn->ctx->fd);
        c->servers[i]->wd_conn = NULL;
    }
    c->wd_failed = 0;
    rl__keeper_after_fork(c);
}

void rl__watchdog_stop(rl_client *c)
{
    int started;

    pthread_mutex_lock(&c->mu);
    c->stopping = 1;
    started = c->wd_started;
    pthread_cond_signal(&c->wd_cond);
    pthread_mutex_unlock(&c->mu);
    if (started)
        pthread_join(c->wd_thread, NULL);
    pthread_mutex_lock(&c->mu);
    c->wd_started = 0;
    pthread_mutex_unlock(&c->mu);
    rl__keeper_join(c);
}

/* Call on_lost for every newly lost hold, one at a time without the mutex
 * held, and log why. Nothing to allocate, so nothing that can fail. */
static void report(rl_client *c, int64_t now)
{
    rl__hold *h;

    for (;;) {
        for (h = c->holds; h; h = h->c_next) {
            if (!atomic_load(&h->lost) && !h->releasing && now >= atomic_load(&h->expiry_ms))
                rl__hold_mark_lost(c, h, RL__LOST_EXPIRED,
                                   "its lease was not confirmed before it ran out");
            if (atomic_load(&h->lost) && !h->reported && !h->releasing)
                break;
        }
        if (!h)
            return;
        rl__log(c, RL_LOG_WARN, "rlock: lock '%.*s' lost: %s",
                (int)(h->entry->name_len > 200 ? 200 : h->entry->name_len), h->entry->name,
                h->lost_why ? h->lost_why : "flagged");
        rl__hold_report(c, h);
    }
}

static void *watchdog_main(void *arg)
{
    rl_client *c = arg;

    pthread_mutex_lock(&c->mu);
    while (!c->stopping) {
        int64_t now = rl__now_ms(), next = -1;
        int renewable = 0;
        rl__hold *h;

        report(c, now);
        for (h = c->holds; h; h = h->c_next) {
            int64_t exp;
            if (atomic_load(&h->lost) || h->releasing)
                continue;
            if (h->watchdog)
                renewable = 1;
            exp = atomic_load(&h->expiry_ms);
            if (next < 0 || exp < next)
                next = exp;
        }
        if (renewable) {
            if (c->wd_next_renew == 0)
                c->wd_next_renew = now + c->renew_ms;
            if (now >= c->wd_next_renew) {
                rl__renew_round(c);
                /* While it holds locks, the client's owner record stays
                 * (owner.c): refreshed right after a round, a whole
                 * interval before the next. */
                if (rl__now_ms() >= c->owner_due)
                    rl__owner_refresh(c);
                continue;
            }
            if (next < 0 || c->wd_next_renew < next)
                next = c->wd_next_renew;
        } else if (c->wd_next_renew && now >= c->wd_next_renew) {
            /* Nothing to renew for a whole period: go idle. Until then the
             * tick keeps running, so short holds do not wake the thread. */
            c->wd_next_renew = 0;
        } else if (c->wd_next_renew && (next < 0 || c->wd_next_renew < next)) {
            next = c->wd_next_renew;
        }
        /* While it holds locks, the owner record stays; the refresh (at
         * most a quarter interval) never runs into a round's time. */
        if (next >= 0 && (!renewable || c->wd_next_renew - now > c->renew_ms / 4 + 1)) {
            if (now >= c->owner_due) {
                rl__owner_refresh(c);
                continue;
            }
            if (c->owner_due < next)
                next = c->owner_due;
        }
        c->wd_wake_at = next;
        rl__cond_wait_until(&c->wd_cond, &c->mu, next);
        c->wd_wake_at = 0;
    }
    {
        rl__conn *conns[RL__SERVERS_MAX];
        int i, n = c->nservers;
        for (i = 0; i < n; i++) {
            conns[i] = c->servers[i]->wd_conn;
            c->servers[i]->wd_conn = NULL;
        }
        pthread_mutex_unlock(&c->mu);
        for (i = 0; i < n; i++)
            rl__conn_close(c, conns[i]);
    }
    return NULL;
}
