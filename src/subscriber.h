/*
 * subscriber.c: the thread that listens for release notices (and, in
 * Sentinel mode, for failovers).
 */
#ifndef RL_SUBSCRIBER_H
#define RL_SUBSCRIBER_H

#include "common.h"

int rl__sub_ensure(rl_client *c);            /* mutex held */
void rl__sub_stop(rl_client *c);             /* mutex NOT held */
void rl__sub_after_fork(rl_client *c);       /* fork child: the thread is gone */

#endif
