/*
 * lockset_one.c: a set of plain locks on one server and slot, taken by
 * one script (the set's fast path; lockset.c takes the others, and this
 * one when the script finds a member busy).
 */
#ifndef RL_LOCKSET_H
#define RL_LOCKSET_H

#include "common.h"
#include "conn.h"
#include "lock.h"
#include "outcome.h"

enum { RL__ONE_NO, RL__ONE_TAKEN, RL__ONE_BUSY };

/* One try by one script: what each member's acquisition will find done
 * (its preset), and what it needs after. */
typedef struct rl__set_try {
    rl__preset p[RL_LOCKSET_MAX];
    rl__fence unresolved[RL_LOCKSET_MAX];
    uint64_t forced[RL_LOCKSET_MAX];    /* each entry's force-releases before the try */
    size_t busy;                        /* RL__ONE_BUSY: the member found held */
} rl__set_try;

/*
 * Take the n members (in the set's order, of one client) for the calling
 * thread t by one script, when they may be (plain locks, no Redlock, no
 * fencing, no wait_replicas, one slot; each either new to the thread and
 * nobody's in this process, or held by it and not lost). RL__ONE_TAKEN:
 * every member's outcome is in try->p, to be used by its own acquisition
 * (rl__lockset_take); RL__ONE_BUSY: nothing written, member try->busy held
 * by another; RL__ONE_NO: not tried, or nothing done (take them in order).
 * Mutex NOT held.
 */
int rl__lockset_one(rl_lock *const *m, size_t n, rl__thread *t, long lease_ms,
                    int64_t deadline, rl__set_try *try);
/* After member i's acquisition with try->p[i] as its preset (rc its
 * status): a preset left unused that wrote a new hold leaves our field to
 * the keeper; a taken member force-released since the try is flagged.
 * Mutex NOT held. */
void rl__lockset_settle(rl_lock *m, rl__thread *t, rl__set_try *try, size_t i, int rc);

#endif
