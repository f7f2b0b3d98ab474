/*
 * stats.c: the counters of rl_client_stats().
 */
#ifndef RL_STATS_H
#define RL_STATS_H

#include "common.h"

/* Why a hold was flagged (rl__hold_mark_lost). RL__LOST_EXPIRED is
 * counted as unconfirmed (watchdog lease) or lease ended (fixed lease). */
enum {
    RL__LOST_UNCONFIRMED, RL__LOST_LEASE_ENDED, RL__LOST_GONE, RL__LOST_FORCED,
    RL__LOST_UNRESOLVED, RL__LOST_SHUTDOWN, RL__LOST_OTHER, RL__LOST_CAUSES
};
#define RL__LOST_EXPIRED RL__LOST_UNCONFIRMED

/*
 * Relaxed atomics only: a counter is bumped where the event already
 * happens, by whichever thread sees it, with no lock taken for it. The
 * gauges are written under the client mutex (where the table they mirror
 * changes) and read without it.
 */
typedef struct rl__stats {
    atomic_ullong acquisitions, reentries, releases, busy, timeouts, cancellations;
    atomic_ullong waits, wait_ms_sum, wait_buckets[RL_STATS_WAIT_BUCKETS];
    atomic_ullong renewal_rounds, renewal_failures;
    atomic_ullong lost[RL__LOST_CAUSES];
    atomic_ullong connects, disconnects, replies_resolved, replies_unresolved;
    atomic_ullong holds, waiters;
} rl__stats;

#define RL__STAT_ADD(c, field, n) \
    atomic_fetch_add_explicit(&(c)->stats.field, (n), memory_order_relaxed)
#define RL__STAT_INC(c, field) RL__STAT_ADD(c, field, 1)
#define RL__STAT_DEC(c, field) \
    atomic_fetch_sub_explicit(&(c)->stats.field, 1, memory_order_relaxed)

/* A wait of ms that ended in an acquisition. */
void rl__stats_wait(rl__stats *st, int64_t ms);
/* Every counter back to zero: a new client, a fork child. */
static inline void rl__stats_reset(rl__stats *st)
{
    atomic_ullong *p = (atomic_ullong *)st;
    size_t i;

    /* Every member is an atomic_ullong (or an array of them). */
    for (i = 0; i < sizeof *st / sizeof *p; i++)
        atomic_store_explicit(&p[i], 0, memory_order_relaxed);
}

#endif
