/*
 * util.c: clocks, condition variables on the monotonic clock, hashing,
 * small string helpers and the back-off.
 */
#ifndef RL_UTIL_H
#define RL_UTIL_H

#include "common.h"

int64_t rl__now_ms(void);                       /* CLOCK_MONOTONIC, ms */
int64_t rl__wall_ms(void);                      /* CLOCK_REALTIME, ms since the epoch */
int rl__cond_init(pthread_cond_t *cond);        /* a condvar on CLOCK_MONOTONIC */
/* Wait on cond until signalled or the monotonic deadline (ms; < 0: forever). */
int rl__cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mu, int64_t deadline_ms);
uint64_t rl__hash(const void *data, size_t len);
char *rl__strdup(const char *s);
size_t rl__fmt_ll(char *buf, long long v);     /* decimal, NUL-terminated; returns length */
void *rl__memdup(const void *p, size_t len);
/* The next delay of a back-off: first, then doubling up to max (prev 0: first). */
long rl__backoff_ms(long prev, long first, long max);
#define RL__RETRY_FIRST_MS 50  /* Redis unreachable: retry after 50 ms, */
#define RL__RETRY_MAX_MS 1000  /* ...doubling up to 1 s */

#endif
