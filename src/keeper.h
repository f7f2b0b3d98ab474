/*
 * keeper.c: the watchdog's upkeep, on a thread of its own.
 */
#ifndef RL_KEEPER_H
#define RL_KEEPER_H

#include "common.h"
#include "server.h"

int rl__keeper_ensure(rl_client *c);         /* mutex held */
void rl__keeper_join(rl_client *c);          /* c->stopping set; mutex NOT held */
void rl__keeper_after_fork(rl_client *c);    /* fork child: the thread is gone */
/* The watchdog wants a connection to s (it goes to s's pool), or the
 * slot map refreshed. Mutex held. */
void rl__keeper_want_conn(rl_client *c, rl__server *s);
void rl__keeper_want_map(rl_client *c);

#endif
