/*
 * semaphore.c: the semaphore's scripts and its local rules; its layout in
 * Redis.
 */
#ifndef RL_SEMAPHORE_H
#define RL_SEMAPHORE_H

#include "common.h"

/* The semaphore's script for a change (acquire, release, renew). */
int rl__sem_script(int script);
/* The status of a semaphore's acquisition: the script's refusal of
 * another permit count than the live holds' becomes RL_EINVAL, its words
 * kept (they name both counts); any other status passes through. */
int rl__sem_status(int rc);

#endif
