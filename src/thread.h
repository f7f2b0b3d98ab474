/*
 * thread.c: the calling thread's own state (its id, its holds through
 * any client, its owner field).
 */
#ifndef RL_THREAD_H
#define RL_THREAD_H

#include "common.h"

typedef struct rl__hold rl__hold;

typedef struct rl__thread {
    uint64_t id;            /* per-process counter, 0 until first use */
    rl__hold *holds;        /* this thread's holds, through any client */
    int orphan_lost;        /* a hold of a freed client was let go: report it */
    /* A set's one script already made the change rl__change() is about to
     * send (outcome.h): its outcome, used once instead. NULL: none. */
    struct rl__preset *preset;
    /* The owner field for the last client used, formatted once. */
    const rl_client *owner_of;
    size_t owner_len;
    char owner[RL__OWNER_MAX];
} rl__thread;

rl__thread *rl__thread_self(void);
const char *rl__thread_owner(rl__thread *t, const rl_client *c, size_t *len);
rl__hold *rl__thread_find(rl__thread *t, const rl_client *c, const void *entry);
/* The same, for a hold on one side of the lock (RL__SIDE_*). */
rl__hold *rl__thread_find_side(rl__thread *t, const rl_client *c, const void *entry, int side);
/* Whether t still links a hold of (c, entry) that a shut-down client let go. */
int rl__thread_has_orphan(const rl__thread *t, const rl_client *c, const void *entry);
void rl__thread_link(rl__thread *t, rl__hold *h);
void rl__thread_unlink(rl__thread *t, rl__hold *h);
void rl__thread_forget_all(void);      /* fork child: the thread holds nothing */

#endif
