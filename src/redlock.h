/*
 * redlock.c: a lock granted by a majority of independent masters.
 */
#ifndef RL_REDLOCK_H
#define RL_REDLOCK_H

#include "common.h"
#include "holds.h"
#include "outcome.h"
#include "reply.h"
#include "thread.h"

/* Connect to the masters of a redlock:// URL (a majority must answer), at
 * creation. Mutex NOT held. */
int rl__redlock_init(rl_client *c);
/* Take a new hold h (not in the table yet) on a majority: RL_OK with
 * res DONE, or BUSY with res->value the wait the holders' leases ask for
 * and *split set when the vote was split (wait a random while, not for a
 * notice). What it got of a failed try is undone. Mutex NOT held. */
int rl__redlock_acquire(rl__op *o, rl__hold *h, int64_t *sent_ms, rl__result *res,
                        int *split);
/* Reentry and release of a hold the calling thread has (count > 0); the
 * hold's count and flags are updated. Mutex NOT held. */
int rl__redlock_reenter(rl__op *o, rl__hold *h);
int rl__redlock_release(rl__op *o, rl__thread *t, rl__hold *h);
int rl__redlock_force(rl_client *c, rl__entry *e);
/* EXISTS or PTTL on every node, judged by the majority. */
int rl__redlock_query(rl_client *c, rl__entry *e, const char *cmd, long long *out);
/* A renewal of h sent to node i at sent_ms found our field there (found),
 * or gone; a change of h learned there since makes it say nothing. Returns
 * 1 when a majority still vouches for h. Mutex held. */
int rl__redlock_node_renewed(rl_client *c, rl__hold *h, int i, int64_t sent_ms, int found);
/* Redlock's spread (the watchdog's): whether to place h on node i where
 * the name is free, in this round's renewal there (1) or renew only (0).
 * Only while a majority vouches for h and node i does not, so a round
 * places on a minority at most. Mutex held. */
int rl__redlock_spread_wanted(const rl__hold *h, int i, int64_t now);
/* The placement on node i is about to be written on a connection fenced
 * by f: the count to place (the highest we have on any node, at least
 * 1), recorded for the last release to fence; 0: h is being released or
 * is lost, send a renewal only. Mutex held. */
int rl__redlock_spread_sent(const rl_client *c, rl__hold *h, int i, const rl__fence *f);
/* The reply to a placement at `count` sent to node i at sent_ms was read:
 * flag '2' placed, '1' or '0' not. A placement counts from the next round
 * on, as a renewal of a field found there; its count becomes ours there
 * (rl__hold's owner takes it at its next change) unless a change of h was
 * learned there since it was sent. Mutex held. */
void rl__redlock_spread_read(rl__hold *h, int i, char flag, int count, int64_t sent_ms);
/* A CLIENT KILL of the connection f (node i) was answered: the placements
 * it carried whose replies were lost either ran before it or never run;
 * their holds may be placed there again. Mutex held. */
void rl__redlock_spread_fenced(rl_client *c, int i, const rl__fence *f);
/* The nodes (bit i: node i) where a leftover of (e, tid) waits to be
 * dropped: a hold of that thread leaves them alone meanwhile. Mutex held. */
unsigned rl__redlock_leftover_nodes(rl_client *c, const rl__entry *e, uint64_t tid);

#endif
