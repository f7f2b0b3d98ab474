/*
 * sentinel.c: the primary that the sentinels name (and rl__sub_poke, the
 * subscriber's bell, which reads the client).
 */
#ifndef RL_SENTINEL_H
#define RL_SENTINEL_H

#include "client.h"

/* Ask the sentinels for the primary and connect to it, at creation. */
int rl__sentinel_init(rl_client *c);
/* Ask again; a new address becomes c->home. Mutex NOT held. */
int rl__sentinel_refresh(rl_client *c);
/* A connection to sentinel i of the URL (no credentials); NULL on failure. */
redisContext *rl__sentinel_connect(rl_client *c, int i);
/* Whether a +switch-master message's text is about the client's master. */
int rl__sentinel_switch_parse(const char *msg, size_t len, const char *service);

/* Wake the subscriber thread: a subscription to make or drop, or (Sentinel
 * mode) the sentinels to ask. Inline for the same reason as the watchdog's
 * bell: the router rings it. Mutex held. */
static inline void rl__sub_poke(rl_client *c)
{
    uint64_t one = 1;

    if (c->sub_efd >= 0 && write(c->sub_efd, &one, sizeof one) < 0) {
        /* EAGAIN: the counter is already non-zero, the thread will wake. */
    }
}

#endif
