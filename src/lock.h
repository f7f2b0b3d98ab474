/*
 * lock.c: the rl_lock API; what a set of locks (lockset.c) reads of its
 * member handles, and the give-back that leaves no hold behind.
 */
#ifndef RL_LOCK_H
#define RL_LOCK_H

#include "common.h"

rl_client *rl__lock_client(const rl_lock *lock);
/* The handle's name (its bytes, not NUL-terminated in general). */
const char *rl__lock_name(const rl_lock *lock, size_t *len);
int rl__lock_side(const rl_lock *lock);     /* RL__SIDE_* */
/* Release one hold of the calling thread; the count drops whatever the
 * status (RL_ECANCELED aside: the shutdown takes the hold), a hold whose
 * release failed being flagged as lost and its field left to the keeper.
 * Returns the release's status. */
int rl__lock_give_back(rl_lock *lock);

#endif
