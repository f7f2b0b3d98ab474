/*
 * Several names at once, all or nothing (rl_lockset_*). The members are
 * taken one by one, in one order that every process shares (the name's
 * bytes, then the write side before the read side), so that two sets
 * sharing names never wait on each other in a circle; when one fails, the
 * ones this call took are given back in reverse order. Each member's
 * acquisition is the lock's own (lock.c): reentry, waiting on notices,
 * lost replies and Redlock come with it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "error.h"
#include "lock.h"
#include "lockset.h"
#include "rwlock.h"
#include "stats.h"
#include "thread.h"
#include "util.h"

struct rl_lockset {
    size_t n;
    rl_lock *members[];     /* the set's own handles, in its order (order()) */
};

/* Of one name, the write side comes first: a thread holding it may then
 * take the read side too, never the other way round. */
static int side_rank(int side)
{
    return side == RL__SIDE_READ;
}

/* The set's order: the name's bytes (unsigned), a prefix first, then the
 * side. The same in every process, whatever the handles' addresses. */
static int order(const void *a, const void *b)
{
    const rl_lock *x = *(rl_lock *const *)a, *y = *(rl_lock *const *)b;
    size_t xl = x->entry->name_len, yl = y->entry->name_len;
    int d = memcmp(x->entry->name, y->entry->name, xl < yl ? xl : yl);

    if (d != 0)
        return d;
    if (xl != yl)
        return xl < yl ? -1 : 1;
    return side_rank(rl__rw_side(x->kind)) - side_rank(rl__rw_side(y->kind));
}

/* Members of one client, none NULL. */
static int check_members(rl_lock *const *locks, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (!locks[i])
            return rl__err(RL_EINVAL, "locks[%zu] is NULL", i);
    for (i = 1; i < n; i++)
        if (locks[i]->client != locks[0]->client)
            return rl__err(RL_EINVAL, "locks[0] and locks[%zu] belong to two clients", i);
    return RL_OK;
}

/* The members in the set's order, one name and side once. */
static int sort_members(rl_lockset *set)
{
    const rl__entry *e;
    size_t i;

    qsort(set->members, set->n, sizeof set->members[0], order);
    for (i = 1; i < set->n; i++) {
        if (order(&set->members[i - 1], &set->members[i]) == 0) {
            e = set->members[i]->entry;
            return rl__err(RL_EINVAL, "lock '%.*s' is in the set twice (one name and side)",
                           (int)e->name_len, e->name);
        }
    }
    return RL_OK;
}

/* Each of the caller's handles, sorted, replaced by one of the set's own
 * (lock.c's rl__lock_dup): the caller may free theirs while the set
 * lives. On failure, the set owns none. */
static int own_members(rl_lockset *set)
{
    size_t i, n = set->n;
    int rc;

    for (i = 0; i < n; i++) {
        if ((rc = rl__lock_dup(&set->members[i], set->members[i])) != RL_OK) {
            set->n = i;
            rl_lockset_free(set);
            return rc;
        }
    }
    return RL_OK;
}

int rl_lockset_new(rl_lockset **out, rl_lock *const *locks, size_t n)
{
    rl_lockset *set;
    rl_client *c;
    int rc;

    rl__err_clear();
    if (!out || !locks)
        return rl__err(RL_EINVAL, "out and locks must not be NULL");
    if (n == 0 || n > RL_LOCKSET_MAX)
        return rl__err(RL_EINVAL, "a set has 1..%d members, not %zu", RL_LOCKSET_MAX, n);
    if ((rc = check_members(locks, n)) != RL_OK)
        return rc;
    c = locks[0]->client;
    if ((rc = rl__call_begin(c)) != RL_OK)
        return rc;
    set = malloc(sizeof *set + n * sizeof set->members[0]);
    if (!set) {
        rl__call_end(c);
        return rl__err(RL_ENOMEM, "out of memory");
    }
    set->n = n;
    memcpy(set->members, locks, n * sizeof locks[0]);
    if ((rc = sort_members(set)) != RL_OK)
        free(set);
    else if ((rc = own_members(set)) == RL_OK)
        *out = set;
    rl__call_end(c);
    return rc;
}

void rl_lockset_free(rl_lockset *set)
{
    size_t i;

    if (!set)
        return;
    for (i = 0; i < set->n; i++)
        rl_lock_free(set->members[i]);
    free(set);
}

/* Say which member failed, before the failure's own words. */
static int member_failed(const rl_lockset *set, size_t i, int rc)
{
    const rl__entry *e = set->members[i]->entry;

    return rl__err(rc, "lock '%.*s' (member %zu of %zu in the set's order): %s",
                   (int)e->name_len, e->name, i + 1, set->n, rl_last_error());
}

/* The first `taken` members, in reverse order: each hold count back where
 * it was before the call, whatever the releases say. */
static void give_back(rl_lockset *set, size_t taken)
{
    while (taken-- > 0)
        rl__lock_give_back(set->members[taken]);
}

/* What a member may wait: what is left of the set's deadline (0 once it
 * has passed); a wait_ms of 0 or RL_WAIT_FOREVER as it is. */
static long wait_left(long wait_ms, int64_t deadline)
{
    int64_t left;

    if (wait_ms <= 0)
        return wait_ms;
    left = deadline - rl__now_ms();
    return left > 0 ? (long)left : 0;
}

/* Member i failed with rc: give back the first `taken`, and say which. */
static int fail(rl_lockset *set, size_t i, size_t taken, int rc)
{
    char why[600];

    member_failed(set, i, rc);
    snprintf(why, sizeof why, "%s", rl_last_error());
    give_back(set, taken);
    return rl__err(rc, "%s", why);
}

/* A member lost while the others were taken: the set is not held whole. */
static int lost_member(rl_lockset *set)
{
    size_t i;

    for (i = 0; i < set->n; i++)
        if (rl_lock_interrupted(set->members[i]) == 1)
            return fail(set, i, set->n, rl__err(RL_ELOST, "its lease was lost while the set's "
                                                "other members were taken"));
    return RL_OK;
}

/*
 * The one script took every member (lockset_one.c): each member's own
 * acquisition now finds its outcome ready and makes the hold. Every
 * member's is used, even after one fails (a lost hold found on reentry, a
 * shutdown), so that none is left written and unknown; then the members
 * taken are given back, in reverse order.
 */
static int take_tried(rl_lockset *set, rl__set_try *try, long wait_ms, long lease_ms,
                      int64_t deadline)
{
    rl__thread *t = rl__thread_self();
    unsigned char taken[RL_LOCKSET_MAX];
    char why[600];
    size_t i;
    int rc, first = RL_OK;

    for (i = 0; i < set->n; i++) {
        t->preset = &try->p[i];
        rc = rl_lock_try_acquire(set->members[i], first == RL_OK ? wait_left(wait_ms, deadline) : 0,
                                 lease_ms);
        t->preset = NULL;
        rl__lockset_settle(set->members[i], t, try, i, rc);
        taken[i] = rc == RL_OK;
        if (rc != RL_OK && first == RL_OK) {
            first = member_failed(set, i, rc);
            snprintf(why, sizeof why, "%s", rl_last_error());
        }
    }
    if (first == RL_OK)
        return lost_member(set);
    for (i = set->n; i-- > 0;)
        if (taken[i])
            rl__lock_give_back(set->members[i]);
    return rl__err(first, "%s", why);
}

/* The one script's try, when the set may have one: RL_OK or the set's
 * failure when it decided; 1 when the ordered path is to take the set. */
static int try_one(rl_lockset *set, long wait_ms, long lease_ms, int64_t deadline)
{
    rl_client *c = set->members[0]->client;
    rl__set_try *try;
    int rc = 1;

    if (set->n < 2 || rl__call_begin(c) != RL_OK)
        return 1;
    if (!(try = malloc(sizeof *try))) {
        rl__call_end(c);
        return 1;
    }
    switch (rl__lockset_one(set->members, set->n, rl__thread_self(), lease_ms,
                            wait_ms == RL_WAIT_FOREVER ? -1 : deadline, try)) {
    case RL__ONE_TAKEN:
        rc = take_tried(set, try, wait_ms, lease_ms, deadline);
        break;
    case RL__ONE_BUSY:
        /* Nothing written. With time left, the ordered path waits member by
         * member, holding what it took (no starving behind single names). */
        if (wait_ms == 0) {
            RL__STAT_INC(c, busy);
            rc = member_failed(set, try->busy, rl__err(RL_EBUSY, "held by another owner"));
        }
        break;
    default:
        break;
    }
    free(try);
    rl__call_end(c);
    return rc;
}

int rl_lockset_try_acquire(rl_lockset *set, long wait_ms, long lease_ms)
{
    int64_t deadline;
    size_t i;
    long wait;
    int rc;

    rl__err_clear();
    if (!set)
        return rl__err(RL_EINVAL, "set is NULL");
    if ((wait_ms < 0 && wait_ms != RL_WAIT_FOREVER) || wait_ms > RL_TIME_MAX_MS)
        return rl__err(RL_EINVAL, "wait_ms must be 0..%ld or RL_WAIT_FOREVER", RL_TIME_MAX_MS);
    deadline = rl__now_ms() + (wait_ms > 0 ? wait_ms : 0);
    if ((rc = try_one(set, wait_ms, lease_ms, deadline)) != 1)
        return rc;
    for (i = 0; i < set->n; i++) {
        wait = wait_left(wait_ms, deadline);
        rc = rl_lock_try_acquire(set->members[i], wait, lease_ms);
        if (rc == RL_OK)
            continue;
        /* The set's wait ran out before this member's turn: a timeout. */
        if (rc == RL_EBUSY && wait_ms > 0 && wait == 0)
            rc = rl__err(RL_ETIMEDOUT, "the set's wait ran out: %s", rl_last_error());
        return fail(set, i, i, rc);
    }
    /* A member taken early may have lost its lease while later ones were
     * waited for (a fixed lease shorter than the wait, an outage): the set
     * is not held whole, and another owner may hold that member now. */
    return lost_member(set);
}

int rl_lockset_acquire(rl_lockset *set)
{
    return rl_lockset_try_acquire(set, RL_WAIT_FOREVER, RL_LEASE_WATCHDOG);
}

int rl_lockset_release(rl_lockset *set)
{
    char why[600];
    size_t i;
    int rc, first = RL_OK;

    rl__err_clear();
    if (!set)
        return rl__err(RL_EINVAL, "set is NULL");
    for (i = 0; i < set->n; i++) {
        if ((rc = rl_lock_hold_count(set->members[i])) < 0)
            return member_failed(set, i, rc);
        if (rc == 0)
            return member_failed(set, i, rl__err(RL_ENOTOWNER, "the calling thread does not "
                                                 "hold it: nothing of the set was released"));
    }
    for (i = set->n; i-- > 0;) {
        rc = rl__lock_give_back(set->members[i]);
        if (rc != RL_OK && first == RL_OK) {
            first = member_failed(set, i, rc);
            snprintf(why, sizeof why, "%s", rl_last_error());
        }
    }
    return first == RL_OK ? RL_OK : rl__err(first, "%s", why);
}

int rl_lockset_interrupted(const rl_lockset *set)
{
    size_t i;
    int rc;

    rl__err_clear();
    if (!set)
        return rl__err(RL_EINVAL, "set is NULL");
    for (i = 0; i < set->n; i++)
        if ((rc = rl_lock_interrupted(set->members[i])) != 0)
            return rc;
    return 0;
}
