/*
 * rl_client_stats(): the client's counters, copied out. The counters are
 * bumped where their events happen (lock.c, acquire.c, holds.c, outcome.c,
 * conn.c, server.c, renew.c, subscriber.c), with relaxed atomics and no lock:
 * a scrape never slows the lock paths down, and needs nothing from them.
 */
#include <stddef.h>
#include <string.h>

#include "client.h"
#include "error.h"
#include "fork.h"
#include "stats.h"

/* Upper bounds of the wait buckets, in ms; the last bucket has none. */
static const int64_t wait_bounds[RL_STATS_WAIT_BUCKETS - 1] = { 1, 10, 100, 1000, 10000 };

void rl__stats_wait(rl__stats *st, int64_t ms)
{
    int i = 0;

    if (ms < 0)
        ms = 0;
    while (i < RL_STATS_WAIT_BUCKETS - 1 && ms > wait_bounds[i])
        i++;
    atomic_fetch_add_explicit(&st->waits, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&st->wait_ms_sum, (unsigned long long)ms, memory_order_relaxed);
    atomic_fetch_add_explicit(&st->wait_buckets[i], 1, memory_order_relaxed);
}

/* Bytes of rl_stats that each layout version has (fields only appended). */
static size_t stats_size(unsigned int version)
{
    switch (version) {
    case 1:
        return offsetof(rl_stats, waiters) + sizeof(unsigned long long);
    default:
        return 0;
    }
}

static unsigned long long load(atomic_ullong *v)
{
    return atomic_load_explicit(v, memory_order_relaxed);
}

int rl_client_stats(rl_stats *out, rl_client *c)
{
    rl__stats *st;
    rl_stats s;
    size_t size;
    int i;

    rl__err_clear();
    if (!out || !c)
        return rl__err(RL_EINVAL, "out and client must not be NULL");
    if (!(size = stats_size(out->version)))
        return rl__err(RL_EINVAL, "rl_stats version %u is not one this library knows "
                       "(1..%d): set out->version = RL_STATS_VERSION", out->version,
                       RL_STATS_VERSION);
    /* A shut-down client still answers (its memory lives until freed);
     * a freed one is no longer in the registry. The reference keeps a
     * concurrent rl_client_free() from freeing it under us. */
    if (!rl__registry_ref(c))
        return rl__err(RL_EINVAL, "not a live client (freed already?)");
    st = &c->stats;
    memset(&s, 0, sizeof s);
    s.version = out->version;
    s.acquisitions = load(&st->acquisitions);
    s.reentries = load(&st->reentries);
    s.releases = load(&st->releases);
    s.busy = load(&st->busy);
    s.timeouts = load(&st->timeouts);
    s.cancellations = load(&st->cancellations);
    s.waits = load(&st->waits);
    s.wait_ms_sum = load(&st->wait_ms_sum);
    for (i = 0; i < RL_STATS_WAIT_BUCKETS; i++)
        s.wait_buckets[i] = load(&st->wait_buckets[i]);
    s.renewal_rounds = load(&st->renewal_rounds);
    s.renewal_failures = load(&st->renewal_failures);
    s.lost_unconfirmed = load(&st->lost[RL__LOST_UNCONFIRMED]);
    s.lost_lease_ended = load(&st->lost[RL__LOST_LEASE_ENDED]);
    s.lost_gone = load(&st->lost[RL__LOST_GONE]);
    s.lost_forced = load(&st->lost[RL__LOST_FORCED]);
    s.lost_unresolved = load(&st->lost[RL__LOST_UNRESOLVED]);
    s.lost_shutdown = load(&st->lost[RL__LOST_SHUTDOWN]);
    s.lost_other = load(&st->lost[RL__LOST_OTHER]);
    s.connects = load(&st->connects);
    s.disconnects = load(&st->disconnects);
    s.replies_resolved = load(&st->replies_resolved);
    s.replies_unresolved = load(&st->replies_unresolved);
    s.holds = load(&st->holds);
    s.waiters = load(&st->waiters);
    rl__client_unref(c);
    /* Only the caller's layout: its struct may be shorter than ours. */
    memcpy(out, &s, size);
    return RL_OK;
}
