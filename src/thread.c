/*
 * Thread identity and the calling thread's own holds.
 *
 * A thread's id comes from a per-process counter on its first use of the
 * library, never from pthread_self(): those values are reused after a
 * thread exits, and a new thread must not inherit a dead thread's lock.
 * The list of a thread's holds is touched only by that thread, which is
 * what lets rl_interrupted() run without taking any lock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "holds.h"
#include "thread.h"
#include "util.h"

static atomic_uint_fast64_t rl__thread_counter;
static _Thread_local rl__thread rl__self;
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
static int exit_key_ok;

/*
 * A thread ends: of its holds, those a shut-down client let go (orphans)
 * are its to free; the others the client frees when it shuts down. The
 * orphan field settles who, whichever of the two comes first.
 */
static void thread_exit(void *arg)
{
    rl__thread *t = arg;
    rl__hold *h, *next;

    for (h = t->holds; h; h = next) {
        int live = RL__HOLD_LIVE;
        next = h->t_next;
        if (!atomic_compare_exchange_strong(&h->orphan, &live, RL__HOLD_OWNER_GONE))
            free(h);
    }
    t->holds = NULL;
}

static void make_exit_key(void)
{
    exit_key_ok = pthread_key_create(&exit_key, thread_exit) == 0;
}

rl__thread *rl__thread_self(void)
{
    if (rl__self.id == 0) {
        rl__self.id = atomic_fetch_add(&rl__thread_counter, 1) + 1;
        pthread_once(&exit_once, make_exit_key);
        if (exit_key_ok)
            pthread_setspecific(exit_key, &rl__self);
    }
    return &rl__self;
}

const char *rl__thread_owner(rl__thread *t, const rl_client *c, size_t *len)
{
    /* The pointer alone is not enough: a freed client's address may be
     * reused by a new one, and a fork child gets a new uuid. */
    if (t->owner_of != c || memcmp(t->owner, c->uuid, RL__UUID_LEN) != 0) {
        /* "<client uuid>:<thread id>": the field of the lock hash. */
        t->owner_len = (size_t)snprintf(t->owner, RL__OWNER_MAX, "%s:%llu", c->uuid,
                                        (unsigned long long)t->id);
        t->owner_of = c;
    }
    *len = t->owner_len;
    return t->owner;
}

/* A hold whose client was freed: ours to unlink and free. */
static int orphan(rl__thread *t, rl__hold *h)
{
    if (!atomic_load_explicit(&h->orphan, memory_order_acquire))
        return 0;
    rl__thread_unlink(t, h);
    free(h);
    t->orphan_lost = 1;
    return 1;
}

/* side < 0: a hold on any side. */
static rl__hold *find(rl__thread *t, const rl_client *c, const void *entry, int side)
{
    rl__hold *h, *next;

    for (h = t->holds; h; h = next) {
        next = h->t_next;
        if (orphan(t, h))
            continue;
        if (h->client == c && (const void *)h->entry == entry && (side < 0 || h->side == side))
            return h;
    }
    return NULL;
}

rl__hold *rl__thread_find(rl__thread *t, const rl_client *c, const void *entry)
{
    return find(t, c, entry, -1);
}

rl__hold *rl__thread_find_side(rl__thread *t, const rl_client *c, const void *entry, int side)
{
    return find(t, c, entry, side);
}

int rl__thread_has_orphan(const rl__thread *t, const rl_client *c, const void *entry)
{
    const rl__hold *h;

    for (h = t->holds; h; h = h->t_next)
        if (h->client == c && (const void *)h->entry == entry &&
            atomic_load_explicit(&h->orphan, memory_order_acquire))
            return 1;
    return 0;
}

void rl__thread_link(rl__thread *t, rl__hold *h)
{
    h->t_prev = NULL;
    h->t_next = t->holds;
    if (t->holds)
        t->holds->t_prev = h;
    t->holds = h;
}

void rl__thread_unlink(rl__thread *t, rl__hold *h)
{
    if (h->t_prev)
        h->t_prev->t_next = h->t_next;
    else if (t->holds == h)
        t->holds = h->t_next;
    if (h->t_next)
        h->t_next->t_prev = h->t_prev;
    h->t_next = h->t_prev = NULL;
}

void rl__thread_forget_all(void)
{
    rl__hold *h = rl__self.holds, *next;

    for (; h; h = next) {
        next = h->t_next;
        h->t_next = h->t_prev = NULL;
    }
    rl__self.holds = NULL;
}

int rl_interrupted(void)
{
    rl__hold *h, *next;
    int64_t now;
    int lost = 0;

    if (rl__self.holds) {
        now = rl__now_ms();
        for (h = rl__self.holds; h; h = next) {
            next = h->t_next;
            if (!orphan(&rl__self, h) && rl__hold_is_lost(h, now))
                lost = 1;
        }
    }
    /* A hold of a freed client counts as lost, once, and is gone. */
    if (rl__self.orphan_lost) {
        rl__self.orphan_lost = 0;
        lost = 1;
    }
    return lost;
}
