/*
 * The rl_lock API: acquire, reentry, release and force-release. A thread's
 * first acquisition of a name (the local queue and the wait on release
 * notices) is acquire.c's; sending a change and resolving a lost reply is
 * outcome.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acquire.h"
#include "client.h"
#include "command.h"
#include "conn.h"
#include "error.h"
#include "fair.h"
#include "fork.h"
#include "holds.h"
#include "lock.h"
#include "outcome.h"
#include "redlock.h"
#include "reply.h"
#include "resp.h"
#include "router.h"
#include "rwlock.h"
#include "scripts.h"
#include "semaphore.h"
#include "server.h"
#include "stats.h"
#include "thread.h"
#include "util.h"

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
    case RL_KIND_SEMAPHORE: return RL__FAM_SEM;
    default:            return -1;
    }
}

/* Whether the client's mode offers the kind. The fair lock's queue and
 * the read-write lock's and the semaphore's deadlines live on the one
 * server that arbitrates the name: not in Redlock mode. */
static int kind_offered(const rl_client *c, int kind)
{
    /* Fencing tokens are the plain lock's and the semaphore's, lock-delay
     * the plain lock's: a client with either offers no other kind. */
    if (kind != RL_KIND_PLAIN && (c->delay_ms || (c->fencing && kind != RL_KIND_SEMAPHORE)))
        return 0;
    if (kind == RL_KIND_FAIR || kind == RL_KIND_READ || kind == RL_KIND_WRITE ||
        kind == RL_KIND_SEMAPHORE)
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

int rl__lock_begin(const rl_lock *lock)
{
    return begin(lock);
}

rl__hold *rl__lock_find(const rl_lock *lock, rl__thread *t)
{
    return find(lock, t);
}

/* A key of the lock holds another type than rlock's (a string SET by hand,
 * say): Redis's WRONGTYPE names neither the key nor the lock, so say both.
 * Any other status passes through. */
static int named(const rl_lock *lock, int rc)
{
    const rl__entry *e = lock->entry;
    char keys[400];
    int n;

    if (rc != RL_EREDIS || !strstr(rl_last_error(), "WRONGTYPE"))
        return rc;
    n = snprintf(keys, sizeof keys, "%.*s", (int)e->key_len, e->key);
    if (lock->client->fencing && e->fence_key && n > 0 && (size_t)n < sizeof keys)
        n += snprintf(keys + n, sizeof keys - (size_t)n, " or %.*s", (int)e->fence_key_len,
                      e->fence_key);
    if (e->queue_key && n > 0 && (size_t)n < sizeof keys)
        snprintf(keys + n, sizeof keys - (size_t)n, " or %.*s or %.*s", (int)e->queue_len,
                 e->queue_key, (int)e->places_len, e->places_key);
    return rl__err(rc, "key %s of lock '%.*s' holds another type of value, not rlock's "
                   "(WRONGTYPE): delete or rename it to free the name", keys,
                   (int)e->name_len, e->name);
}

/* The entry e (mutex held) as a handle of `family` (with `permits`, a
 * semaphore) would open it: RL_OK, or why not (nothing changed). */
static int entry_fits(const rl__entry *e, int family, unsigned permits)
{
    int used = e->handles > 0 || e->holds > 0 || e->leftovers > 0;

    if (used && e->family != family)
        return rl__err(RL_EINVAL, "this client has the name open as another kind of lock");
    if (used && family == RL__FAM_SEM && e->permits != permits)
        return rl__err(RL_EINVAL, "this client has the semaphore open with %u permits, not %u",
                       e->permits, permits);
    return RL_OK;
}

/* A handle of `kind` (a semaphore's with `permits`), its arguments
 * checked. */
static int handle_new(rl_lock **out, rl_client *client, const void *name, size_t len,
                      int kind, unsigned permits)
{
    rl_lock *lock;
    rl__entry *e;
    int rc, family = kind_family(kind);

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
    if (e && (rc = entry_fits(e, family, permits)) != RL_OK) {
        pthread_mutex_unlock(&client->mu);
        free(lock);
        rl__call_end(client);
        return rc;
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
        if (family == RL__FAM_SEM && e->permits != permits)
            e->permits = permits;
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

/* The checks every handle's arguments pass. */
static int check_new(rl_lock **out, rl_client *client, const void *name, size_t len)
{
    rl__err_clear();
    if (!out || !client || !name)
        return rl__err(RL_EINVAL, "out, client and name must not be NULL");
    if (len == 0 || len > RL_NAME_MAX)
        return rl__err(RL_EINVAL, "lock name must be 1..%d bytes, not %zu", RL_NAME_MAX, len);
    return RL_OK;
}

int rl_lock_new_kind(rl_lock **out, rl_client *client, const void *name, size_t len, int kind)
{
    int rc = check_new(out, client, name, len);

    if (rc != RL_OK)
        return rc;
    if (kind == RL_KIND_SEMAPHORE)
        return rl__err(RL_EINVAL, "a semaphore is opened by rl_semaphore_new(), with its "
                                  "permit count");
    if (kind_family(kind) < 0)
        return rl__err(RL_EINVAL, "unknown kind of lock %d", kind);
    return handle_new(out, client, name, len, kind, 0);
}

int rl_semaphore_new(rl_lock **out, rl_client *client, const void *name, size_t len,
                     unsigned permits)
{
    int rc = check_new(out, client, name, len);

    if (rc != RL_OK)
        return rc;
    if (permits == 0 || permits > RL_SEMAPHORE_MAX)
        return rl__err(RL_EINVAL, "permits must be 1..%d, not %u", RL_SEMAPHORE_MAX, permits);
    return handle_new(out, client, name, len, RL_KIND_SEMAPHORE, permits);
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

int rl__lock_dup(rl_lock **out, const rl_lock *lock)
{
    rl_client *c = lock->client;
    rl_lock *dup = malloc(sizeof *dup);

    if (!dup)
        return rl__err(RL_ENOMEM, "out of memory");
    *dup = *lock;
    pthread_mutex_lock(&c->mu);
    lock->entry->handles++;
    pthread_mutex_unlock(&c->mu);
    atomic_fetch_add(&c->refs, 1);
    *out = dup;
    return RL_OK;
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
    if (res.code == RL__R_DONE)
        return rl__err(RL_EPROTO, "hold count in Redis became %lld, expected %d", res.value,
                       h->count + 1);
    return rl__err(RL_EPROTO, "hold count in Redis is %lld, expected %d", res.value, h->count);
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

/* An acquisition of k permits (1 for a lock) by the calling thread. */
static int try_acquire(rl_lock *lock, unsigned k, long wait_ms, long lease_ms)
{
    rl__thread *t;
    rl__hold *h;
    rl__op o;
    int rc;

    if ((rc = begin(lock)) != RL_OK) {
        /* A client shut down (not freed): counted as every RL_ECANCELED. */
        if (rc == RL_ECANCELED)
            count_acquire(lock->client, rc, 0);
        return rc;
    }
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
    } else if (lock->kind == RL_KIND_SEMAPHORE && (k == 0 || k > lock->entry->permits)) {
        /* Only a semaphore's k may be other than 1; its entry's count
         * changes only while nothing uses the entry. */
        rc = rl__err(RL_EINVAL, "k must be 1..%u (the semaphore's permits), not %u",
                     lock->entry->permits, k);
    } else if (lock->kind == RL_KIND_SEMAPHORE && lock->client->fencing &&
               k > RL__SEM_SLOTS_MAX) {
        rc = rl__err(RL_EINVAL, "with fencing a hold takes at most %d permits (one numbered "
                     "slot each), not %u", RL__SEM_SLOTS_MAX, k);
    } else {
        t = rl__thread_self();
        op_init(&o, lock, t);
        o.permits = k;
        h = find(lock, t);
        if (h && h->permits != k && lock->kind == RL_KIND_SEMAPHORE)
            rc = rl__err(RL_EINVAL, "the thread holds %u permits of this semaphore: entering "
                         "it again takes the same number, not %u", h->permits, k);
        else if (h)
            rc = reenter(&o, h);
        else if (o.side == RL__SIDE_WRITE &&
                 rl__thread_find_side(t, lock->client, lock->entry, RL__SIDE_READ))
            rc = rl__err(RL_EBUSY, "the thread holds the read side: it cannot take the write "
                                   "side (an upgrade would wait for itself); release it first");
        else
            rc = rl__acquire_new(&o, t, wait_ms, lease_ms, o.side == RL__SIDE_READ &&
                             rl__thread_find_side(t, lock->client, lock->entry,
                                                  RL__SIDE_WRITE) != NULL);
        if (lock->kind == RL_KIND_SEMAPHORE)
            rc = rl__sem_status(rc);
        count_acquire(lock->client, rc, h != NULL);
    }
    rl__call_end(lock->client);
    return named(lock, rc);
}

int rl_lock_try_acquire(rl_lock *lock, long wait_ms, long lease_ms)
{
    return try_acquire(lock, 1, wait_ms, lease_ms);
}

int rl_semaphore_acquire(rl_lock *sem, unsigned k, long wait_ms, long lease_ms)
{
    rl__err_clear();
    if (!sem)
        return rl__err(RL_EINVAL, "sem is NULL");
    if (sem->kind != RL_KIND_SEMAPHORE)
        return rl__err(RL_EINVAL, "not a semaphore's handle (rl_semaphore_new())");
    return try_acquire(sem, k, wait_ms, lease_ms);
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
        rl__fair_leave(o, o->next, o->next_len);
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
    if (res.code == RL__R_DONE)
        return rl__err(RL_EPROTO, "hold count in Redis became %lld, expected %d", res.value,
                       h->count - 1);
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
    return named(lock, rc);
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
        rl__fair_leave(&o, "", 0);
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
    return named(lock, rc);
}

/* ---- the give-back of a set of locks (lockset.c) ---------------------- */

/*
 * Release one hold of the calling thread, and when that release leaves the
 * hold as it was (nothing sent, Redis refused the script, a count that
 * disagrees), give the hold up anyway: flagged as lost, its count one
 * lower, and at the last one our field left to the keeper (a leftover).
 * The status is the release's. A client being shut down keeps the hold:
 * the shutdown releases it.
 */
int rl__lock_give_back(rl_lock *lock)
{
    char why[512];
    rl__thread *t;
    rl__hold *h;
    rl__op o;
    int rc, before;

    if ((rc = begin(lock)) != RL_OK)
        return rc;
    t = rl__thread_self();
    h = find(lock, t);
    before = h ? h->count : 0;
    rc = named(lock, release(lock));
    if (rc == RL_OK) {
        RL__STAT_INC(lock->client, releases);
    } else if (rc != RL_ECANCELED && before > 0 && (h = find(lock, t)) && h->count == before) {
        snprintf(why, sizeof why, "%s", rl_last_error());
        op_init(&o, lock, t);
        release_lost(&o, t, h, RL__LOST_OTHER, "its release failed and it was given up");
        rl__err(rc, "%s (the hold is given up and flagged as lost)", why);
    }
    rl__call_end(lock->client);
    return rc;
}
