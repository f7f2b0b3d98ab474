/*
 * The rl_lock API: acquire (with the local queue and the wait on release
 * notices), reentry, release and force-release. Sending a change and
 * resolving a lost reply is outcome.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlock_int.h"

struct rl_lock {
    rl_client *client;
    rl__entry *entry;
    int kind;                       /* RL_KIND_* */
};

/* Every call on a handle that reaches the client's state: counted in
 * flight, so that a shutdown can wait for it to leave. */
static int begin(const rl_lock *lock)
{
    rl__err_clear();
    if (!lock)
        return rl__err(RL_EINVAL, "lock is NULL");
    return rl__call_begin(lock->client);
}

static int kind_family(int kind)
{
    switch (kind) {
    case RL_KIND_PLAIN: return RL__FAM_PLAIN;
    case RL_KIND_FAIR:  return RL__FAM_FAIR;
    case RL_KIND_READ:
    case RL_KIND_WRITE: return RL__FAM_RW;
    default:            return -1;
    }
}

/* Whether the client's mode offers the kind. The fair lock's queue and
 * the read-write lock's deadlines live on the one server that arbitrates
 * the name: not in Redlock mode. */
static int kind_offered(const rl_client *c, int kind)
{
    /* Fencing tokens and lock-delay are the plain lock's so far: a client
     * with either offers no other kind (scripts.c). */
    if (kind != RL_KIND_PLAIN && (c->fencing || c->delay_ms))
        return 0;
    if (kind == RL_KIND_FAIR || kind == RL_KIND_READ || kind == RL_KIND_WRITE)
        return c->mode != RL__MODE_REDLOCK;
    return kind == RL_KIND_PLAIN;
}

/* A change by the calling thread through this handle: on its side of the
 * lock, as its field (a reader's is its own, rwlock.c). */
static void op_init(rl__op *o, const rl_lock *lock, rl__thread *t)
{
    rl__op_init(o, lock->client, lock->entry, t);
    o->side = rl__rw_side(lock->kind);
    if (o->side == RL__SIDE_READ) {
        o->owner_len = rl__rw_field(o->field, o->owner, o->owner_len, o->side);
        o->owner = o->field;
    }
}

/* The calling thread's hold through this handle's side of the lock. */
static rl__hold *find(const rl_lock *lock, rl__thread *t)
{
    return rl__thread_find_side(t, lock->client, lock->entry, rl__rw_side(lock->kind));
}

/* One command on a key of e's slot (not Redlock), following redirects;
 * its integer reply in *out. */
static int key_command(rl_client *c, const rl__entry *e, int argc, const char **argv,
                       const size_t *lens, long long *out)
{
    rl__conn *conn;
    rl__route rt;
    redisReply *r = NULL;
    int rc;

    rl__route_init(&rt, c, e->slot);
    while ((rc = rl__route_get(c, &rt, &conn)) == RL_OK) {
        rc = rl__conn_call(conn, &r, argc, argv, lens);
        if (rc == RL_OK && r->type == REDIS_REPLY_ERROR &&
            (rc = rl__route_error(c, &rt, r->str, r->len)) != RL_OK) {
            freeReplyObject(r);
            r = NULL;
        }
        rl__pool_put(c, conn);
        if (rc != RL__RETRY)
            break;
    }
    if (rc == RL_OK) {
        if (r->type == REDIS_REPLY_INTEGER)
            *out = r->integer;
        else if (r->type == REDIS_REPLY_ERROR)
            rc = rl__reply_error_status(r);
        else
            rc = rl__err(RL_EPROTO, "%s did not return an integer", argv[0]);
        freeReplyObject(r);
    }
    return rc;
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

int rl_lock_new_kind(rl_lock **out, rl_client *client, const void *name, size_t len, int kind)
{
    rl_lock *lock;
    rl__entry *e;
    int rc, family = kind_family(kind);

    rl__err_clear();
    if (!out || !client || !name)
        return rl__err(RL_EINVAL, "out, client and name must not be NULL");
    if (len == 0 || len > RL_NAME_MAX)
        return rl__err(RL_EINVAL, "lock name must be 1..%d bytes, not %zu", RL_NAME_MAX, len);
    if (family < 0)
        return rl__err(RL_EINVAL, "unknown kind of lock %d", kind);
    if (!rl__registry_has(client))
        return rl__err(RL_EINVAL, "not a live client (freed already?)");
    if ((rc = rl__call_begin(client)) != RL_OK)
        return rc;
    if (!kind_offered(client, kind)) {
        rl__call_end(client);
        return rl__err(RL_ENOTSUP, "this kind of lock is not available in this client's mode");
    }
    lock = malloc(sizeof *lock);
    if (!lock) {
        rl__call_end(client);
        return rl__err(RL_ENOMEM, "out of memory");
    }
    pthread_mutex_lock(&client->mu);
    e = rl__entry_get(client, name, len);
    if (e && e->family != family && (e->handles > 0 || e->holds > 0 || e->leftovers > 0)) {
        pthread_mutex_unlock(&client->mu);
        free(lock);
        rl__call_end(client);
        return rl__err(RL_EINVAL, "this client has the name open as another kind of lock");
    }
    if (e && family == RL__FAM_FAIR && rl__fair_entry_init(e) != 0) {
        rl__entry_maybe_free(client, e);
        e = NULL;
    }
    if (e) {
        /* Written only when it changes, which is only while nothing uses
         * the entry (no handle, hold or leftover): the change paths and the
         * watchdog read it without the mutex. */
        if (e->family != family)
            e->family = family;
        e->handles++;
    }
    pthread_mutex_unlock(&client->mu);
    if (!e) {
        free(lock);
        rl__call_end(client);
        return rl__err(RL_ENOMEM, "out of memory");
    }
    atomic_fetch_add(&client->refs, 1);
    lock->client = client;
    lock->entry = e;
    lock->kind = kind;
    *out = lock;
    rl__call_end(client);
    return RL_OK;
}

int rl_lock_new_bin(rl_lock **out, rl_client *client, const void *name, size_t len)
{
    return rl_lock_new_kind(out, client, name, len, RL_KIND_PLAIN);
}

int rl_lock_new(rl_lock **out, rl_client *client, const char *name)
{
    if (!name) {
        rl__err_clear();
        return rl__err(RL_EINVAL, "name is NULL");
    }
    return rl_lock_new_bin(out, client, name, strnlen(name, RL_NAME_MAX + 1));
}

void rl_lock_free(rl_lock *lock)
{
    rl_client *c;

    if (!lock)
        return;
    c = lock->client;
    if (!atomic_load(&c->closed))
        rl__client_enter(c);
    pthread_mutex_lock(&c->mu);
    lock->entry->handles--;
    rl__entry_maybe_free(c, lock->entry);
    pthread_mutex_unlock(&c->mu);
    free(lock);
    rl__client_unref(c);
}

/* ---- holds of the calling thread --------------------------------------- */

static void flag_lost(rl_client *c, rl__hold *h, int cause, const char *why)
{
    pthread_mutex_lock(&c->mu);
    rl__hold_mark_lost(c, h, cause, why);
    pthread_mutex_unlock(&c->mu);
}

/* The thread no longer holds h: take it out of every list. When our field
 * may still be in Redis, leave it to be dropped. */
static void hold_done(rl_client *c, rl__thread *t, rl__hold *h, int leave_field)
{
    int i;

    rl__thread_unlink(t, h);
    pthread_mutex_lock(&c->mu);
    if (leave_field && c->mode == RL__MODE_REDLOCK) {
        /* On every node, fenced where a change there was left unknown. */
        for (i = 0; i < c->nnodes; i++)
            rl__leftover_add_on(c, h->entry, h->tid, h->owner, h->owner_len,
                                h->nodes[i].doubt.id >= 0 ? &h->nodes[i].doubt : &h->doubt,
                                c->servers[i]);
    } else if (leave_field) {
        rl__leftover_add(c, h->entry, h->tid, h->owner, h->owner_len, &h->doubt);
    }
    rl__hold_remove(c, h);
    pthread_mutex_unlock(&c->mu);
}

static void set_releasing(rl_client *c, rl__hold *h, int on)
{
    pthread_mutex_lock(&c->mu);
    h->releasing = on;
    if (!on)
        rl__watchdog_poke(c);   /* it may have gone idle meanwhile */
    pthread_mutex_unlock(&c->mu);
}

/*
 * A change of h whose outcome cannot be read back: Redis may hold one more
 * or one less than the thread believes. The hold cannot be vouched for any
 * more: flag it, and let the last release drop our field whatever its count.
 */
static int doubt(rl_client *c, rl__hold *h, const rl__fence *fence)
{
    h->doubt = *fence;
    flag_lost(c, h, RL__LOST_UNRESOLVED, "the outcome of a change could not be read back");
    return rl__err(RL_ECONN, "outcome unknown, Redis unreachable: the hold is flagged as lost");
}

static int cancelled(void)
{
    return rl__err(RL_ECANCELED, "the client is shutting down");
}

static int reenter(rl__op *o, rl__hold *h)
{
    rl__result res;
    rl__fence unresolved;
    int64_t sent;
    int rc, read_back;

    if (rl__hold_is_lost(h, rl__now_ms())) {
        flag_lost(o->c, h, RL__LOST_EXPIRED, "its lease ran out before it was renewed");
        return rl__err(RL_ELOST, "the lease of this hold was lost; release it");
    }
    if (o->c->mode == RL__MODE_REDLOCK)
        return rl__redlock_reenter(o, h);
    rc = rl__change(o, RL__S_ACQUIRE, h->count, h->lease_ms, &sent, &res, &unresolved,
                             &read_back);
    if (rc == RL_ECONN && unresolved.id >= 0)
        return doubt(o->c, h, &unresolved);
    if (rc != RL_OK)
        return rc;
    if (res.code == RL__R_DONE && res.value == h->count + 1) {
        if (atomic_load(&o->c->closing)) {
            /* Applied, but the shutdown drops our field whatever its count. */
            flag_lost(o->c, h, RL__LOST_SHUTDOWN, "the client was shut down");
            return cancelled();
        }
        h->count++;
        if (res.token)
            h->token = res.token;
        rl__hold_confirm(h, sent);
        return RL_OK;
    }
    if (res.code == RL__R_NOTOWNER) {
        flag_lost(o->c, h, RL__LOST_GONE, "Redis no longer has its field");
        return rl__err(RL_ELOST, "the lock is no longer held by this thread in Redis");
    }
    flag_lost(o->c, h, RL__LOST_OTHER, "Redis holds another count than expected");
    return rl__err(RL_EPROTO, "hold count in Redis is %lld, expected %d", res.value, h->count);
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
static void fair_leave(rl__op *o, const char *owner, size_t owner_len)
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
        /* It may have been applied: drop it before anything else. */
        rl__leftover_add(c, e, a->t->id, o->owner, o->owner_len, &unresolved);
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

    if (e->hint_serial && e->hint_serial == a->w.serial) {
        e->hint_serial = 0;
        a->queued = 1;
    }
    if (a->queued && a->h) {
        /* Gave up waiting: leave the queue at once rather than block it
         * until the place runs out. */
        pthread_mutex_unlock(&c->mu);
        fair_leave(o, o->owner, o->owner_len);
        pthread_mutex_lock(&c->mu);
    }
    rl__queue_remove(c, e, &a->w);
}

/* direct: the thread holds the write side and takes the read side: no
 * queue, no local wait (it would wait for itself). */
static int acquire_new(rl__op *o, rl__thread *t, long wait_ms, long lease_ms, int direct)
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
    a.direct = direct;
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

int rl_lock_acquire(rl_lock *lock)
{
    return rl_lock_try_acquire(lock, RL_WAIT_FOREVER, RL_LEASE_WATCHDOG);
}

/* rl_client_stats(): how an acquisition call ended. */
static void count_acquire(rl_client *c, int rc, int reentry)
{
    switch (rc) {
    case RL_OK:
        if (reentry)
            RL__STAT_INC(c, reentries);
        else
            RL__STAT_INC(c, acquisitions);
        break;
    case RL_EBUSY:
        RL__STAT_INC(c, busy);
        break;
    case RL_ETIMEDOUT:
        RL__STAT_INC(c, timeouts);
        break;
    case RL_ECANCELED:
        RL__STAT_INC(c, cancellations);
        break;
    default:
        break;
    }
}

int rl_lock_try_acquire(rl_lock *lock, long wait_ms, long lease_ms)
{
    rl__thread *t;
    rl__hold *h;
    rl__op o;
    int rc;

    if ((rc = begin(lock)) != RL_OK)
        return rc;
    if ((wait_ms < 0 && wait_ms != RL_WAIT_FOREVER) || wait_ms > RL_TIME_MAX_MS) {
        rc = rl__err(RL_EINVAL, "wait_ms must be 0..%ld or RL_WAIT_FOREVER", RL_TIME_MAX_MS);
    } else if ((lease_ms < RL_LEASE_MIN_MS && lease_ms != RL_LEASE_WATCHDOG) ||
               lease_ms > RL_TIME_MAX_MS) {
        rc = rl__err(RL_EINVAL, "lease_ms must be %d..%ld or RL_LEASE_WATCHDOG",
                     RL_LEASE_MIN_MS, RL_TIME_MAX_MS);
    } else if (lease_ms > RL_TIME_MAX_MS - lock->client->delay_ms) {
        /* Redis keeps the hold for the lease plus the delay (rl__redis_lease). */
        rc = rl__err(RL_EINVAL, "lease_ms %ld plus the client's lock_delay_ms %ld is past "
                     "%ld ms", lease_ms, lock->client->delay_ms, RL_TIME_MAX_MS);
    } else {
        t = rl__thread_self();
        op_init(&o, lock, t);
        h = find(lock, t);
        if (h)
            rc = reenter(&o, h);
        else if (o.side == RL__SIDE_WRITE &&
                 rl__thread_find_side(t, lock->client, lock->entry, RL__SIDE_READ))
            rc = rl__err(RL_EBUSY, "the thread holds the read side: it cannot take the write "
                                   "side (an upgrade would wait for itself); release it first");
        else
            rc = acquire_new(&o, t, wait_ms, lease_ms, o.side == RL__SIDE_READ &&
                             rl__thread_find_side(t, lock->client, lock->entry,
                                                  RL__SIDE_WRITE) != NULL);
        count_acquire(lock->client, rc, h != NULL);
    }
    rl__call_end(lock->client);
    return rc;
}

/*
 * A fair name's last release: the local waiter next in line, if it may
 * wait in Redis and our notices reach it, is queued by the release script
 * itself (o->next), saving it a round trip. Mutex NOT held.
 */
static void fair_pick_next(rl_client *c, rl__op *o, char *buf, uint64_t *serial,
                           uint64_t *notices)
{
    rl__waiter *w;

    pthread_mutex_lock(&c->mu);
    w = o->e->q_head;
    if (w && w->owner && o->e->sub_state == RL__SUB_ON && !atomic_load(&c->no_notices) &&
        !atomic_load(&c->no_subscribe)) {
        memcpy(buf, w->owner, w->owner_len + 1);
        o->next = buf;
        o->next_len = w->owner_len;
        *serial = w->serial;
        *notices = o->e->notices;
    }
    pthread_mutex_unlock(&c->mu);
}

/* The release that queued o->next was applied: tell that waiter, or, when
 * it has left meanwhile, take its place out again (else it would hold the
 * queue back until it ran out). Mutex NOT held. */
static void fair_placed_next(rl_client *c, rl__op *o, uint64_t serial, uint64_t notices)
{
    rl__waiter *w;

    pthread_mutex_lock(&c->mu);
    for (w = o->e->q_head; w && w->serial != serial; w = w->next)
        ;
    if (w) {
        o->e->hint_serial = serial;
        o->e->hint_notices = notices;
    }
    pthread_mutex_unlock(&c->mu);
    if (!w)
        fair_leave(o, o->next, o->next_len);
}

/* One hold of a lost lease is given back: locally only, until the last. */
static int release_lost(rl__op *o, rl__thread *t, rl__hold *h, int cause, const char *why)
{
    rl_client *c = o->c;
    rl__leftover *lo;

    flag_lost(c, h, cause, why);
    if (--h->count > 0)
        return rl__err(RL_ELOST, "the lease of this hold was lost");
    /* Last hold: remove our field if it is still there (it may be, when the
     * loss was only presumed or an outcome stayed unknown), never anyone
     * else's. Whatever cannot be dropped now, the keeper drops later. */
    hold_done(c, t, h, 1);
    RL__HOOK("release.before_drop");
    pthread_mutex_lock(&c->mu);
    if ((lo = rl__leftover_find(c, o->e, t->id)) && !lo->claimed)
        rl__leftover_try(c, lo);
    pthread_mutex_unlock(&c->mu);
    return rl__err(RL_ELOST, "the lease of this hold was lost");
}

static int release(rl_lock *lock)
{
    rl_client *c = lock->client;
    rl__thread *t = rl__thread_self();
    rl__hold *h = find(lock, t);
    rl__result res;
    rl__fence unresolved;
    int64_t sent;
    rl__op o;
    int rc, read_back;
    char next[RL__OWNER_MAX];
    uint64_t next_serial = 0, notices = 0;

    if (!h)
        return rl__err(RL_ENOTOWNER, "the calling thread does not hold this lock");
    op_init(&o, lock, t);
    if (rl__hold_is_lost(h, rl__now_ms()))
        return release_lost(&o, t, h, RL__LOST_EXPIRED, "its lease ran out before it was renewed");
    if (c->mode == RL__MODE_REDLOCK)
        return rl__redlock_release(&o, t, h);

    if (h->count == 1)
        set_releasing(c, h, 1);
    if (h->count == 1 && o.e->family == RL__FAM_FAIR)
        fair_pick_next(c, &o, next, &next_serial, &notices);
    rc = rl__change(&o, RL__S_RELEASE, h->count, h->watchdog ? h->lease_ms : 0,
                             &sent, &res, &unresolved, &read_back);
    if (o.next && rc == RL_OK && res.code == RL__R_DONE && res.value == 0)
        fair_placed_next(c, &o, next_serial, notices);
    if (rc == RL_OK && res.code == RL__R_DONE && res.value == 0 && read_back &&
        rl__hold_is_lost(h, rl__now_ms())) {
        /* Our field is gone, but the lease may have run out before the
         * release ran: absent proves nothing then. Counted as lost. */
        release_lost(&o, t, h, RL__LOST_EXPIRED, "its lease may have run out before the release");
        return rl__err(RL_ELOST, "the reply was lost and the lease may have run out before "
                                 "the release reached Redis");
    }
    if (rc == RL_OK && res.code == RL__R_DONE && res.value == h->count - 1) {
        if (--h->count == 0) {
            hold_done(c, t, h, 0);
        } else if (h->watchdog) {
            rl__hold_confirm(h, sent);
        }
        return RL_OK;
    }
    if (h->count == 1)
        set_releasing(c, h, 0);
    if (rc == RL_ECONN && unresolved.id >= 0) {
        /* Applied or not, the count drops: the caller gave this hold back. */
        doubt(c, h, &unresolved);
        release_lost(&o, t, h, RL__LOST_UNRESOLVED,
                     "the outcome of its release could not be read back");
        return rl__err(RL_ELOST, "outcome unknown, Redis unreachable: the hold is given up "
                                 "and flagged as lost");
    }
    if (rc != RL_OK)
        return rc;
    if (res.code == RL__R_NOTOWNER) {
        flag_lost(c, h, RL__LOST_GONE, "Redis no longer has its field");
        if (--h->count == 0)
            hold_done(c, t, h, 0);
        return rl__err(RL_ELOST, "the lock was no longer held by this thread in Redis");
    }
    flag_lost(c, h, RL__LOST_OTHER, "Redis holds another count than expected");
    return rl__err(RL_EPROTO, "hold count in Redis is %lld, expected %d", res.value, h->count);
}

int rl_lock_release(rl_lock *lock)
{
    int rc = begin(lock);

    if (rc != RL_OK)
        return rc;
    rc = release(lock);
    if (rc == RL_OK)
        RL__STAT_INC(lock->client, releases);
    rl__call_end(lock->client);
    return rc;
}

/* Flag the local holds whose fields the delete removed: the thread ids
 * the script listed (n < 0: every hold of the name). Mutex held. */
static void flag_forced(rl_client *c, rl__entry *e, const long long *tids, long long n)
{
    rl__hold *h;
    long long i;

    for (h = c->holds; h; h = h->c_next) {
        if (h->entry != e)
            continue;
        for (i = 0; i < n && (uint64_t)tids[i] != h->tid; i++)
            ;
        if (n < 0 || i < n)
            rl__hold_mark_lost(c, h, RL__LOST_FORCED, "force-released");
    }
}

static int force_release(rl_lock *lock)
{
    rl_client *c = lock->client;
    char prefix[RL__UUID_LEN + 2];
    const char *args[4];
    size_t lens[4];
    rl__conn *conn;
    rl__resp resp;
    rl__route rt;
    int rc, redirected, flag = 0;   /* flag 1: the tids listed; -1: every hold of the name */

    if (c->mode == RL__MODE_REDLOCK)
        return rl__redlock_force(c, lock->entry);
    /* Our fields are "<uuid>:<tid>": the script lists the tids it deleted. */
    memcpy(prefix, c->uuid, RL__UUID_LEN);
    prefix[RL__UUID_LEN] = ':';
    prefix[RL__UUID_LEN + 1] = '\0';
    args[0] = lock->entry->key;
    lens[0] = lock->entry->key_len;
    args[1] = prefix;
    lens[1] = RL__UUID_LEN + 1;
    args[2] = rl__notice_arg(c);
    lens[2] = 1;
    args[3] = lock->entry->channel;
    lens[3] = lock->entry->channel_len;
    rl__route_init(&rt, c, lock->entry->slot);
    for (;;) {
        if ((rc = rl__route_get(c, &rt, &conn)) != RL_OK)
            return rc;
        RL__HOOK("force.before_send");
        rc = rl__conn_script_fast(c, conn, RL__S_FORCE, &resp, 1, 4, args, lens);
        /* A redirect comes before the script runs: nothing was deleted. */
        if (rc != RL_OK || resp.type != RL__RESP_ERROR ||
            (redirected = rl__route_error(c, &rt, resp.str, resp.str_len)) == RL_OK)
            break;
        rl__pool_put(c, conn);
        if (redirected != RL__RETRY)
            return redirected;
    }
    /* The reply lives in the connection's buffer: read it before giving
     * the connection back. */
    if (rc == RL__UNSENT || rc == RL_ENOMEM) {
        if (rc == RL__UNSENT)
            rc = rl__err(RL_ECONN, "Redis closed the connection before the command was "
                                   "sent (nothing was sent)");
    } else if (rc != RL_OK) {
        flag = -1;    /* sent, reply lost: the delete may have run, or may still run */
    } else if (resp.type == RL__RESP_ERROR) {
        rc = rl__error_status(resp.str, resp.str_len);   /* nothing deleted */
    } else if (resp.type != RL__RESP_ARRAY || resp.nints < 2 || resp.ints[0] != 1 ||
               resp.ints[1] > resp.nints - 2) {
        rc = rl__err(RL_EPROTO, "unexpected reply shape from the force-release script");
        flag = -1;
    } else {
        flag = resp.ints[1] < 0 ? -1 : 1;
        /* A reader's field ("<uuid>:<tid>:r") is not listed: flag them all. */
        if (lock->entry->family == RL__FAM_RW)
            flag = -1;
    }
    if (flag) {
        pthread_mutex_lock(&c->mu);
        flag_forced(c, lock->entry, resp.ints + 2, flag < 0 ? -1 : resp.ints[1]);
        lock->entry->forced++;
        pthread_mutex_unlock(&c->mu);
    }
    rl__pool_put(c, conn);
    /* A fair name: the queue stays as it is; its first waiter is told. */
    if (rc == RL_OK && lock->entry->family == RL__FAM_FAIR) {
        rl__op o;
        rl__op_init(&o, c, lock->entry, rl__thread_self());
        fair_leave(&o, "", 0);
    }
    return rc;
}

int rl_lock_force_release(rl_lock *lock)
{
    int rc = begin(lock);

    if (rc != RL_OK)
        return rc;
    rc = force_release(lock);
    rl__call_end(lock->client);
    return rc;
}

int rl_lock_hold_count(const rl_lock *lock)
{
    const rl__hold *h;

    rl__err_clear();
    if (!lock)
        return rl__err(RL_EINVAL, "lock is NULL");
    if (atomic_load(&lock->client->closed))
        return rl__err(RL_EINVAL, "the client was shut down");
    h = find(lock, rl__thread_self());
    return h ? h->count : 0;
}

int rl_lock_token(unsigned long long *out, const rl_lock *lock)
{
    const rl__hold *h;

    rl__err_clear();
    if (!out || !lock)
        return rl__err(RL_EINVAL, "out and lock must not be NULL");
    if (atomic_load(&lock->client->closed))
        return rl__err(RL_EINVAL, "the client was shut down");
    if (!lock->client->fencing)
        return rl__err(RL_ENOTSUP, "the client was made without rl_options.fencing");
    h = rl__thread_find(rl__thread_self(), lock->client, lock->entry);
    if (!h)
        return rl__err(RL_ENOTOWNER, "the calling thread does not hold this lock");
    if (!h->token)
        return rl__err(RL_EPROTO, "the hold has no fencing token in Redis");
    *out = h->token;
    return RL_OK;
}

int rl_lock_interrupted(const rl_lock *lock)
{
    const rl__hold *h;

    rl__err_clear();
    if (!lock)
        return rl__err(RL_EINVAL, "lock is NULL");
    /* After a shutdown: a hold the client let go of still counts as lost
     * until rl_interrupted() has reported it. */
    if (atomic_load(&lock->client->closed))
        return rl__thread_has_orphan(rl__thread_self(), lock->client, lock->entry);
    h = find(lock, rl__thread_self());
    return h ? rl__hold_is_lost(h, rl__now_ms()) : 0;
}

/* One plain command on the lock's key, returning an integer. */
static int key_query(rl_lock *lock, const char *cmd, long long *out)
{
    const char *argv[2];
    size_t lens[2];
    int rc;

    if ((rc = begin(lock)) != RL_OK)
        return rc;
    if (lock->client->mode == RL__MODE_REDLOCK) {
        rc = rl__redlock_query(lock->client, lock->entry, cmd, out);
        rl__call_end(lock->client);
        return rc;
    }
    argv[0] = cmd;
    lens[0] = strlen(cmd);
    argv[1] = lock->entry->key;
    lens[1] = lock->entry->key_len;
    rc = key_command(lock->client, lock->entry, 2, argv, lens, out);
    rl__call_end(lock->client);
    return rc;
}

int rl_lock_is_locked(rl_lock *lock)
{
    long long n = 0;
    int rc = key_query(lock, "EXISTS", &n);

    return rc == RL_OK ? n > 0 : rc;
}

int rl_lock_ttl(long *out, rl_lock *lock)
{
    long long n = 0;
    int rc;

    if (!out) {
        rl__err_clear();
        return rl__err(RL_EINVAL, "out is NULL");
    }
    if ((rc = key_query(lock, "PTTL", &n)) == RL_OK)
        *out = (long)n;
    return rc;
}
