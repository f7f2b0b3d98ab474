/*
 * The fair lock (RL_KIND_FAIR): exclusive like a plain lock, granted in
 * order of arrival across processes.
 *
 * Keys, all under the name's hash tag (one Cluster slot):
 *   P{N}          the lock hash, exactly as for a plain lock ("<count>
 *                 <since>" per owner): renewal, reentry, force-release and
 *                 `rlock list` work on it unchanged;
 *   P{N}:queue    sorted set: the waiting owners, scored by arrival;
 *   P{N}:queue:t  sorted set: the same owners, scored by the Redis time
 *                 (ms) at which each one's place runs out.
 *
 * A waiter that finds the name taken, or free but promised to an earlier
 * waiter, is queued by the same script that said no (one round trip), and
 * renews its place every RL__FAIR_RENEW_MS while it waits. A place that is
 * not renewed within RL__FAIR_PLACE_MS (its process died or is stopped)
 * is dropped by the next script that looks at the queue, and the sets
 * expire as a whole with their last live place: the queue can neither
 * stick on a dead waiter for longer than that nor grow from dead ones.
 *
 * The name is never written over to the head: the last release deletes
 * the lock hash as usual and publishes on the head's own channel, the
 * release channel with ":<uuid>" of the head's process appended, to which
 * only that process subscribes. While the head's place lives, the free
 * name can be taken by the head only, so it comes back for it without a
 * race. A last release also queues the thread of its own process that
 * waits next (at the tail, behind the other processes' waiters) and tells
 * it so (lock.c: fair_pick_next; acquire.c: placed_by_release), which
 * saves that thread its queueing try: under contention, one acquisition
 * and one release per hold, however many processes wait. A waiter that gives up
 * (timeout, cancel) leaves the queue and passes the notice on. Anything that deletes the lock hash otherwise (a leftover
 * drop, a shutdown, a force-release) goes through the same release or
 * leave script, so the head is woken in every case; a missed notice costs
 * at most RL__FAIR_RENEW_MS, the interval at which a waiter asks anyway.
 *
 * Locally, the process's own threads still queue in front (single
 * flight): only the local head holds a place in Redis, so the processes
 * take turns and each one's threads take turns within it.
 *
 * A lost reply is resolved as for a plain lock (outcome.c: the count read
 * back); queueing is idempotent, so a retry only renews the place. A
 * grant that cannot be read back either (the waiter's connections all
 * cut: CLIENT KILL) is dropped as a leftover, and that drop puts the
 * waiter, which was first when granted, back at the head of the queue
 * (fair_release.lua), not behind those who queued meanwhile; when the
 * waiter has given up by then it is not queued again (a drop already on
 * its way may still queue it: its place then runs out).
 * Redlock mode does not offer the kind: a queue of places on several
 * independent masters would need its own majority protocol.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "fair.h"
#include "holds.h"
#include "rwlock.h"
#include "scripts.h"
#include "util.h"

#define QUEUE_SUFFIX ":queue"
#define PLACES_SUFFIX ":queue:t"

int rl__fair_entry_init(rl__entry *e)
{
    size_t ql = e->key_len + sizeof QUEUE_SUFFIX - 1, pl = e->key_len + sizeof PLACES_SUFFIX - 1;
    size_t wl = e->channel_len + 1 + RL__UUID_LEN;

    if (e->queue_key)
        return 0;
    e->queue_key = malloc(ql + 1);
    e->places_key = malloc(pl + 1);
    e->wake_channel = malloc(wl + 1);
    if (!e->queue_key || !e->places_key || !e->wake_channel) {
        rl__fair_entry_free(e);
        return -1;
    }
    memcpy(e->queue_key, e->key, e->key_len);
    memcpy(e->queue_key + e->key_len, QUEUE_SUFFIX, sizeof QUEUE_SUFFIX);
    e->queue_len = ql;
    memcpy(e->places_key, e->key, e->key_len);
    memcpy(e->places_key + e->key_len, PLACES_SUFFIX, sizeof PLACES_SUFFIX);
    e->places_len = pl;
    memcpy(e->wake_channel, e->channel, e->channel_len);
    e->wake_channel[e->channel_len] = ':';
    memset(e->wake_channel + e->channel_len + 1, '0', RL__UUID_LEN);
    e->wake_channel[wl] = '\0';
    e->wake_len = wl;
    return 0;
}

void rl__fair_entry_free(rl__entry *e)
{
    free(e->queue_key);
    free(e->places_key);
    free(e->wake_channel);
    e->queue_key = e->places_key = e->wake_channel = NULL;
}

const char *rl__entry_sub_channel(const rl_client *c, rl__entry *e, size_t *len)
{
    if (e->family != RL__FAM_FAIR || !e->wake_channel) {
        *len = e->channel_len;
        return e->channel;
    }
    /* The uuid is the process's of now: a fork child has its own. */
    memcpy(e->wake_channel + e->channel_len + 1, c->uuid, RL__UUID_LEN);
    *len = e->wake_len;
    return e->wake_channel;
}

int rl__fair_args(const rl__entry *e, int nkeys, int *script, long long held, long place_ms,
                  const char *next, size_t next_len, char *placebuf, const char **args,
                  size_t *lens, int *nargs)
{
    int i;

    /* A plain script (one key) for a reentry and for a release that leaves
     * a count: they count as for a plain lock, and are not refused
     * (TRYAGAIN) while the name's Cluster slot migrates. */
    if (e->family != RL__FAM_FAIR || !e->queue_key ||
        (*script != RL__S_ACQUIRE && *script != RL__S_RELEASE) || held > 1 ||
        (*script == RL__S_ACQUIRE && held > 0))
        return nkeys;
    for (i = *nargs - 1; i >= 1; i--) {
        args[i + 2] = args[i];
        lens[i + 2] = lens[i];
    }
    args[1] = e->queue_key;  lens[1] = e->queue_len;
    args[2] = e->places_key; lens[2] = e->places_len;
    *nargs += 2;
    if (*script == RL__S_ACQUIRE) {
        args[*nargs] = placebuf;
        lens[*nargs] = rl__fmt_ll(placebuf, place_ms);
        (*nargs)++;
        *script = RL__S_FAIR_ACQUIRE;
    } else {
        *script = RL__S_FAIR_RELEASE;
        if (next) {
            args[*nargs] = next;
            lens[*nargs] = next_len;
            args[*nargs + 1] = placebuf;
            lens[*nargs + 1] = rl__fmt_ll(placebuf, RL__FAIR_PLACE_MS);
            *nargs += 2;
        }
    }
    return 3;
}
