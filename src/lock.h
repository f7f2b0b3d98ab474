/*
 * lock.c: the rl_lock API. A handle, as a set of locks (lockset.c) and the
 * queries (query.c) read it, and the give-back that leaves no hold behind.
 */
#ifndef RL_LOCK_H
#define RL_LOCK_H

#include "common.h"
#include "holds.h"

struct rl_lock {
    rl_client *client;
    rl__entry *entry;
    int kind;                       /* RL_KIND_* */
};

/* A call on the handle begins (counted in flight; RL_OK, or why not). */
int rl__lock_begin(const rl_lock *lock);
/* The calling thread t's hold of the handle's name and side, or NULL. */
rl__hold *rl__lock_find(const rl_lock *lock, rl__thread *t);

/* Release one hold of the calling thread; the count drops whatever the
 * status (RL_ECANCELED aside: the shutdown takes the hold), a hold whose
 * release failed being flagged as lost and its field left to the keeper.
 * Returns the release's status. */
int rl__lock_give_back(rl_lock *lock);

/* A second handle on lock's name and kind, freed by rl_lock_free(): a set
 * keeps its own, so that the caller may free theirs first. Inside a call
 * on the client (rl__call_begin). RL_OK or RL_ENOMEM. */
int rl__lock_dup(rl_lock **out, const rl_lock *lock);

#endif
