/*
 * A thread's first acquisition of a name (rl__acquire_new): its place in
 * the local queue (single flight: only the head talks to Redis), the tries,
 * the wait between them on release notices, the lease or a back-off, and
 * leaving the queues when it gives up. Reentry, release and force-release
 * are lock.c's.
 */
#include <stdio.h>
#include <string.h>

#include "acquire.h"
#include "error.h"
#include "fair.h"
#include "holds.h"
#include "outcome.h"
#include "redlock.h"
#include "reply.h"
#include "router.h"
#include "rwlock.h"
#include "scripts.h"
#include "sentinel.h"
#include "server.h"
#include "stats.h"
#include "subscriber.h"
#include "thread.h"
#include "util.h"
#include "watchdog.h"

static int cancelled(void)
{
    return rl__err(RL_ECANCELED, "the client is shutting down");
}

/*
 * A writer that registered an intent gives up (timed out, cancelled, an
 * error): take the intent back, so that readers need not wait for it to
 * run out, and tell them. Best effort (it runs out within
 * RL__RW_INTENT_MS anyway); the caller's status and its detail are kept.
 */
static void withdraw_intent(rl__op *o, int rc)
{
    rl__entry *e = o->e;
    char field[4 + RL__OWNER_MAX], why[256];
    const char *args[10];
    size_t lens[10];
    rl__conn *conn;
    rl__resp resp;
    int64_t sent;
    int nargs;

    if (atomic_load(&o->c->closing))
        return;
    snprintf(why, sizeof why, "%s", rl_last_error());
    memcpy(field, "~wi:", 4);
    memcpy(field + 4, o->owner, o->owner_len);
    nargs = rl__release_args(o->c, e, field, 4 + o->owner_len, "0", 1, "0", 1, args, lens);
    rl__op_send(o, RL__S_RW_RELEASE, 1, nargs, args, lens, &conn, &sent, &resp);
    if (conn)
        rl__pool_put(o->c, conn);
    rl__err(rc, "%s", why);
}

/*
 * A renewal sent for an earlier hold of this name may still be on its way.
 * Landing after a new acquisition by the same thread (same owner field), it
 * would stretch the new hold's lease to the watchdog's: wait for the round.
 * Mutex held.
 */
static int wait_renewal(rl_client *c, rl__entry *e)
{
    while (e->renewing > 0) {
        if (atomic_load(&c->closing))
            return cancelled();
        pthread_cond_wait(&c->round_cond, &c->mu);
    }
    return RL_OK;
}

/* The calling thread is about to wait for the first time in this call:
 * it counts among the client's waiters until the call returns. */
static void begin_wait(rl_client *c, int *waited)
{
    if (!*waited) {
        *waited = 1;
        RL__STAT_INC(c, waiters);
    }
}

/* A fair name: take owner's place out of its queue ("": none), and wake
 * the first waiter's process when the name is free. Best effort: a place
 * left behind runs out by itself (fair.c). Mutex NOT held. */
void rl__fair_leave(rl__op *o, const char *owner, size_t owner_len)
{
    rl__entry *e = o->e;
    const char *args[6] = { e->key, e->queue_key, e->places_key, owner,
                            rl__notice_arg(o->c), e->channel };
    size_t lens[6] = { e->key_len, e->queue_len, e->places_len, owner_len, 1, e->channel_len };
    rl__conn *conn;
    rl__resp resp;
    int64_t sent;

    rl__op_send(o, RL__S_FAIR_LEAVE, 3, 6, args, lens, &conn, &sent, &resp);
    if (conn)
        rl__pool_put(o->c, conn);
}

/* Whether a release of this process queued w in Redis (its own queueing
 * try is then saved). *queued is set when it did; 1 when w may wait for
 * the notice at once: none came since that release was sent (a later one
 * kicks w, under the mutex that is held from here to the wait). */
static int placed_by_release(rl_client *c, rl__entry *e, rl__waiter *w, int *queued)
{
    if (!e->hint_serial || e->hint_serial != w->serial)
        return 0;
    e->hint_serial = 0;
    *queued = 1;
    if (e->notices != e->hint_notices || e->sub_state != RL__SUB_ON ||
        atomic_load(&c->no_notices) || atomic_load(&c->no_subscribe))
        return 0;
    w->kicked = 0;
    return 1;
}

/* One first acquisition by a thread (acquire_new), and what its steps
 * share. */
typedef struct {
    rl__op *o;
    rl__thread *t;
    long wait_ms;
    long lease;                 /* asked of Redis */
    int watchdog;               /* the watchdog renews the lease */
    int direct;
    int64_t start;
    int64_t deadline;           /* -1: none */
    int64_t sent;
    long backoff, poll;         /* the growing intervals of retries and of polls */
    rl__result res;
    rl__waiter w;
    rl__hold *h;                /* the hold being made; NULL once it is taken */
    int split, waited, queued, intent;
} acquisition;

/* A step's "sleep until *wake_at, then try again" (statuses are <= 0). */
#define ACQ_WAIT 1

/* The hold to make, and the thread's place at the end of the local queue.
 * Mutex held. */
static int acq_prepare(acquisition *a)
{
    rl__op *o = a->o;
    rl_client *c = o->c;
    rl__entry *e = o->e;
    int rc;

    a->h = rl__hold_new(c, e, a->t->id, a->lease, a->watchdog);
    if (!a->h)
        return rl__err(RL_ENOMEM, "out of memory");
    memcpy(a->h->owner, o->owner, o->owner_len + 1);
    a->h->owner_len = o->owner_len;
    a->h->side = o->side;
    a->h->permits = o->permits;
    /* A writer that will wait stops new readers meanwhile (rwlock.c). */
    o->intent_ms = o->side == RL__SIDE_WRITE && a->wait_ms != 0 ? RL__RW_INTENT_MS : 0;
    if ((rc = rl__watchdog_ensure(c)) != RL_OK)
        return rc;
    /* A fair name: a busy try queues the thread in Redis, unless it
     * must not wait. */
    if (e->family == RL__FAM_FAIR && a->wait_ms != 0)
        o->place_ms = RL__FAIR_PLACE_MS;
    a->w.owner = o->place_ms ? o->owner : NULL;
    a->w.owner_len = o->owner_len;
    a->w.next = NULL;
    a->w.kicked = 0;
    a->w.serial = 0;            /* a direct read (rwlock.c) is not queued */
    if (!a->direct)
        rl__queue_push(e, &a->w);
    return RL_OK;
}

/* Single flight: only the head of the local queue talks to Redis; wait
 * to be it. Mutex held. */
static int wait_first_in_line(acquisition *a)
{
    rl_client *c = a->o->c;

    while (!a->direct && a->o->e->q_head != &a->w) {
        if (atomic_load(&c->closing))
            return cancelled();
        if (a->wait_ms == 0)
            return rl__err(RL_EBUSY, "other threads of this process are waiting for it");
        if (a->deadline >= 0 && rl__now_ms() >= a->deadline)
            return rl__err(RL_ETIMEDOUT, "timed out behind other threads of this process");
        begin_wait(c, &a->waited);
        rl__cond_wait_until(&a->w.cond, &c->mu, a->deadline);
        a->w.kicked = 0;
    }
    return RL_OK;
}

/* The try applied: the hold is the thread's (forced: the entry's count of
 * force-releases when it was sent; unresolved: the try's fence). Mutex
 * held. */
static int acq_taken(acquisition *a, uint64_t forced, rl__fence *unresolved)
{
    rl__op *o = a->o;
    rl_client *c = o->c;
    rl__entry *e = o->e;
    rl__hold *h = a->h;

    if (atomic_load(&c->closing)) {
        /* Taken while the client shuts down: never reported as held.
         * The shutdown drops the field (it waits for this call). */
        unresolved->id = -1;
        unresolved->addr[0] = '\0';
        rl__leftover_add(c, e, a->t->id, o->owner, o->owner_len, unresolved);
        return cancelled();
    }
    rl__hold_insert(c, h);
    h->count = 1;
    h->token = a->res.token;
    /* A fenced semaphore hold's permit slots (none for other kinds). */
    h->nslots = e->family == RL__FAM_SEM ? a->res.nslots : 0;
    memcpy(h->slots, a->res.slots, h->nslots * sizeof h->slots[0]);
    rl__hold_confirm(h, a->sent);
    /* A force-release of the name ended while this acquisition
     * was on its way: its delete may have come after our script,
     * and then its list of deleted holds could not name this
     * one. Flag it: a needless flag is safe, a missed one not. */
    if (e->forced != forced)
        rl__hold_mark_lost(c, h, RL__LOST_FORCED,
                           "force-released while it was being taken");
    rl__watchdog_schedule(c, h);
    rl__thread_link(a->t, h);
    a->h = NULL;
    return RL_OK;
}

/* The name is busy: ACQ_WAIT and when to ask again in *wake_at, listening
 * for release notices meanwhile; or why not to wait. Mutex held. */
static int acq_busy(acquisition *a, int64_t now, int64_t *wake_at)
{
    rl__op *o = a->o;
    rl_client *c = o->c;
    rl__entry *e = o->e;
    int rc;

    a->intent |= o->intent_ms > 0;
    if (a->wait_ms == 0)
        return rl__err(RL_EBUSY, "held by another owner");
    /* A semaphore's try says how many permits it lacked: notices that give
     * back fewer need not wake us (rl__queue_notice). Set after the reply,
     * so a notice heard during the round trip woke us anyway. */
    if (e->family == RL__FAM_SEM)
        a->w.short_of = (long long)a->res.token;
    /* Sleep until a release notice, the holder's lease, or our deadline. */
    /* PTTL 0: the lease runs out this very millisecond; -2: already
     * gone; -1: no expiry at all (not set by rlock). */
    if (c->mode == RL__MODE_REDLOCK)
        *wake_at = now + a->res.value;      /* worked out from every node */
    else
        *wake_at = now + (a->res.value >= 0 ? a->res.value + 1 :
                          a->res.value == -2 ? 0 : a->lease);
    if (atomic_load(&c->no_notices) || atomic_load(&c->no_subscribe)) {
        /* No release notices can reach us: ask again, at a
         * growing interval, never later than the holder's lease. */
        a->poll = rl__backoff_ms(a->poll, RL__POLL_MIN_MS, RL__POLL_MAX_MS);
        if (now + a->poll < *wake_at)
            *wake_at = now + a->poll;
    } else {
        e->linger_until = 0;
        if (!e->sub_want) {
            e->sub_want = 1;
            if ((rc = rl__sub_ensure(c)) != RL_OK)
                return rc;
            rl__sub_poke(c);
        }
    }
    if (o->place_ms) {
        /* Queued: ask again in time to keep the place. */
        a->queued = 1;
        if (*wake_at > now + RL__FAIR_RENEW_MS)
            *wake_at = now + RL__FAIR_RENEW_MS;
    }
    /* Keep the intent alive: ask again well before it ends. */
    if (o->intent_ms && *wake_at > now + o->intent_ms / 3)
        *wake_at = now + o->intent_ms / 3;
    a->backoff = 0;
    return ACQ_WAIT;
}

/* One try in Redis: RL_OK when taken, ACQ_WAIT with *wake_at to wait and
 * try again, else the status to return. Mutex held (released around the
 * round trip). */
static int acq_try(acquisition *a, int64_t now, int64_t *wake_at)
{
    rl__op *o = a->o;
    rl_client *c = o->c;
    rl__entry *e = o->e;
    rl__fence unresolved;
    uint64_t forced;
    int rc, read_back;

    a->w.kicked = 0;
    a->w.short_of = 0;
    rc = e->leftovers ? rl__leftovers_settle(c, e, a->t->id, a->deadline) : RL_OK;
    if (rc == RL_OK)
        rc = wait_renewal(c, e);
    if (rc == RL_ECANCELED)
        return rc;
    unresolved.id = -1;
    forced = e->forced;
    if (rc == RL_OK) {
        pthread_mutex_unlock(&c->mu);
        o->deadline = a->deadline;
        if (c->mode == RL__MODE_REDLOCK)
            rc = rl__redlock_acquire(o, a->h, &a->sent, &a->res, &a->split);
        else
            rc = rl__change(o, RL__S_ACQUIRE, 0, a->lease, &a->sent, &a->res, &unresolved,
                            &read_back);
        pthread_mutex_lock(&c->mu);
    }
    if (rc == RL_ECONN && unresolved.id >= 0) {
        /* It may have been applied: drop it before anything else. A fair
         * waiter was granted as the first one: the drop puts it back
         * there, not at the tail (a reconnect must not cost its place). */
        rl__leftover *lo = rl__leftover_add(c, e, a->t->id, o->owner, o->owner_len,
                                            &unresolved);
        if (lo && o->place_ms)
            atomic_store(&lo->requeue, 1);
    }
    if (rc == RL_OK && a->res.code == RL__R_DONE)
        return acq_taken(a, forced, &unresolved);
    if (rc == RL_OK && a->res.code == RL__R_BUSY)
        return acq_busy(a, now, wake_at);
    if (rc == RL_ECONN && a->wait_ms != 0) {
        /* Ride out the outage until the deadline; reconnects are retried. */
        a->backoff = rl__backoff_ms(a->backoff, RL__RETRY_FIRST_MS, RL__RETRY_MAX_MS);
        *wake_at = now + a->backoff;
        return ACQ_WAIT;
    }
    if (rc == RL_OK)
        rc = rl__err(RL_EPROTO, "unexpected acquire result %d", a->res.code);
    return rc;
}

/* Try, and wait between tries, until taken, refused or out of time.
 * Mutex held. */
static int acq_loop(acquisition *a)
{
    rl_client *c = a->o->c;
    rl__entry *e = a->o->e;
    int64_t wake_at = 0, now;
    int rc, first;

    for (first = 1;; first = 0) {
        now = rl__now_ms();
        if (atomic_load(&c->closing))
            return cancelled();
        if (!first && a->deadline >= 0 && now >= a->deadline) {
            /* Say which: a busy lock, or a Redis we could not reach. */
            return a->backoff ? rl__err(RL_ECONN, "the wait ran out while Redis was "
                                                  "unreachable: %s", rl_last_error())
                              : rl__err(RL_ETIMEDOUT, "timed out waiting for the lock");
        }
        if (!a->direct && rl__rw_local_busy(e, a->o->side)) {
            /* A thread of this process holds it: its release wakes us. */
            if (a->wait_ms == 0)
                return rl__err(RL_EBUSY, "held by another thread of this process");
            wake_at = now + a->lease;
        } else if (placed_by_release(c, e, &a->w, &a->queued)) {
            /* Queued by the release: wait for the notice, and ask in time
             * to keep the place. */
            wake_at = now + RL__FAIR_RENEW_MS;
        } else if ((rc = acq_try(a, now, &wake_at)) != ACQ_WAIT) {
            return rc;
        }
        if (a->deadline >= 0 && wake_at > a->deadline)
            wake_at = a->deadline;
        begin_wait(c, &a->waited);
        /* A split vote (Redlock): the other contenders' give-backs send
         * notices; woken by them, all would meet again. Wait it out. */
        while ((a->split || !a->w.kicked) && rl__now_ms() < wake_at &&
               !atomic_load(&c->closing))
            rl__cond_wait_until(&a->w.cond, &c->mu, wake_at);
        a->w.kicked = 0;
        a->split = 0;
    }
}

/* Out of the local queue, and out of the fair queue in Redis when the
 * thread gave up waiting there. Mutex held (released around the leave). */
static void acq_dequeue(acquisition *a)
{
    rl__op *o = a->o;
    rl_client *c = o->c;
    rl__entry *e = o->e;
    rl__leftover *lo;

    if (e->hint_serial && e->hint_serial == a->w.serial) {
        e->hint_serial = 0;
        a->queued = 1;
    }
    /* No longer waiting: a lost grant's drop must not queue us again. */
    for (lo = c->leftovers; lo; lo = lo->next)
        if (lo->entry == e && lo->tid == a->t->id)
            atomic_store(&lo->requeue, 0);
    if (a->queued && a->h) {
        /* Gave up waiting: leave the queue at once rather than block it
         * until the place runs out. */
        pthread_mutex_unlock(&c->mu);
        rl__fair_leave(o, o->owner, o->owner_len);
        pthread_mutex_lock(&c->mu);
    }
    rl__queue_remove(c, e, &a->w);
}

int rl__acquire_new(rl__op *o, rl__thread *t, long wait_ms, long lease_ms, int direct)
{
    rl_client *c = o->c;
    acquisition a;
    int rc;

    memset(&a, 0, sizeof a);
    a.o = o;
    a.t = t;
    a.wait_ms = wait_ms;
    a.watchdog = lease_ms == RL_LEASE_WATCHDOG;
    a.lease = a.watchdog ? c->lease_ms : lease_ms;
    /* A set's one script took it already (lockset_one.c): no local queue. */
    a.direct = direct || (t->preset && t->preset->entry == o->e);
    a.start = rl__now_ms();
    a.deadline = wait_ms == RL_WAIT_FOREVER ? -1 : a.start + wait_ms;
    if (rl__cond_init(&a.w.cond) != 0)
        return rl__err(RL_ENOMEM, "out of memory");
    pthread_mutex_lock(&c->mu);
    if ((rc = acq_prepare(&a)) == RL_OK) {
        rc = wait_first_in_line(&a);
        if (rc == RL_OK)
            rc = acq_loop(&a);
        acq_dequeue(&a);
    }
    if (a.h)
        rl__hold_discard(c, a.h);
    pthread_mutex_unlock(&c->mu);
    if (a.intent && rc != RL_OK)
        withdraw_intent(o, rc);
    if (a.waited) {
        RL__STAT_DEC(c, waiters);
        if (rc == RL_OK)
            rl__stats_wait(&c->stats, rl__now_ms() - a.start);
    }
    pthread_cond_destroy(&a.w.cond);
    return rc;
}
