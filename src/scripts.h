/*
 * scripts.c: the Lua scripts (src/lua/), by number, and their texts.
 */
#ifndef RL_SCRIPTS_H
#define RL_SCRIPTS_H

#include "common.h"

enum { RL__S_ACQUIRE, RL__S_RELEASE, RL__S_RENEW, RL__S_FORCE,
       RL__S_FAIR_ACQUIRE, RL__S_FAIR_RELEASE, RL__S_FAIR_LEAVE,
       RL__S_RW_ACQUIRE, RL__S_RW_RELEASE, RL__S_RW_RENEW,
       RL__S_SEM_ACQUIRE, RL__S_SEM_RELEASE, RL__S_SEM_RENEW, RL__S_SET_ACQUIRE, RL__S_COUNT };
extern const char *const rl__script_src[RL__S_COUNT];

#endif
