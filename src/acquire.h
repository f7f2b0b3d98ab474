/*
 * acquire.c: a thread's first acquisition of a name.
 */
#ifndef RL_ACQUIRE_H
#define RL_ACQUIRE_H

#include "common.h"
#include "outcome.h"
#include "thread.h"

/* Take the name for the calling thread t, which holds none of it on o's
 * side: wait up to wait_ms (RL_WAIT_FOREVER) in the local queue and for
 * release notices; lease_ms or RL_LEASE_WATCHDOG. direct: the thread holds
 * the write side and takes the read side: no queue, no local wait (it
 * would wait for itself). Mutex NOT held. */
int rl__acquire_new(rl__op *o, rl__thread *t, long wait_ms, long lease_ms, int direct);
/* A fair name: take owner's place out of its queue ("": none), and wake
 * the first waiter's process when the name is free. Best effort. Mutex NOT
 * held. */
void rl__fair_leave(rl__op *o, const char *owner, size_t owner_len);

#endif
