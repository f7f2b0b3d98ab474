/*
 * What every internal header and source file of rlock shares: the system
 * and hiredis headers, the public API, the sizes of owner strings, the
 * printf attribute and the test hooks. Nothing here is exported: every
 * symbol is hidden and uses the rl__ prefix.
 */
#ifndef RL_COMMON_H
#define RL_COMMON_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "rlock.h"

#define RL__UUID_LEN   36
#define RL__OWNER_MAX  (RL__UUID_LEN + 1 + 20 + 2 + 1)   /* ":r": a reader (rwlock.c) */
/* The permits a semaphore hold of a client with fencing takes at most: one
 * numbered slot each, kept in the hold (lua/lib/sem_slots.lua). */
#define RL__SEM_SLOTS_MAX 16
#define RL__RENEW_BATCH 1000   /* (key, owner) pairs per renewal script call */
#define RL__POLL_MIN_MS 10     /* no release notices: a waiter asks again after this, */
#define RL__POLL_MAX_MS 250    /* ...doubling up to this */

#define RL__STR_(x) #x     /* a macro's value as a string literal */
#define RL__STR(x) RL__STR_(x)

#if defined(__GNUC__)
#  define RL__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#  define RL__PRINTF(f, a)
#endif

/*
 * Test hooks. Only the test build of the library (rlock_hooked, compiled
 * with RL_TEST_HOOKS) calls them: they let a test stop a thread at a named
 * point to open a race window on purpose. Points: "force.before_send",
 * "watchdog.before_renew", "watchdog.renew_failed". The shipped library
 * compiles them away.
 */
#ifdef RL_TEST_HOOKS
extern void (*rl__test_hook)(const char *point);
#  define RL__HOOK(point) do { if (rl__test_hook) rl__test_hook(point); } while (0)
#else
#  define RL__HOOK(point) ((void)0)
#endif

#endif
