/*
 * renew.c: one renewal round of the watchdog.
 */
#ifndef RL_RENEW_H
#define RL_RENEW_H

#include "common.h"

/* Renew every watchdog-kept hold, flag those found gone and set when the
 * next round is due. Mutex held on entry and exit; dropped while Redis is
 * asked. */
void rl__renew_round(rl_client *c);

#endif
