/*
 * watchdog.c: the thread that keeps watchdog leases alive.
 */
#ifndef RL_WATCHDOG_H
#define RL_WATCHDOG_H

#include "common.h"
#include "holds.h"

int rl__watchdog_ensure(rl_client *c);       /* mutex held */
void rl__watchdog_schedule(rl_client *c, const rl__hold *h);  /* new hold; mutex held */
void rl__watchdog_stop(rl_client *c);        /* mutex NOT held */
void rl__watchdog_after_fork(rl_client *c);  /* fork child: the thread is gone */

#endif
