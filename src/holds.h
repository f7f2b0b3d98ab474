/*
 * holds.c: name entries, holds and their leftovers' bookkeeping, local
 * waiter queues.
 */
#ifndef RL_HOLDS_H
#define RL_HOLDS_H

#include "common.h"
#include "rwlock.h"
#include "server.h"
#include "thread.h"

typedef struct rl__waiter {
    struct rl__waiter *next;
    pthread_cond_t cond;
    int kicked;
    uint64_t serial;                /* per entry, from 1 (rl__queue_push) */
    const char *owner;              /* fair lock: the waiting thread's owner field, */
    size_t owner_len;               /* ...when it may be queued in Redis (else NULL) */
    /* A semaphore's head: the permits its last try lacked, less those the
     * release notices heard since gave back (0: any notice wakes it). */
    long long short_of;
} rl__waiter;

enum { RL__SUB_NONE, RL__SUB_SENT, RL__SUB_ON, RL__SUB_OFF_SENT };

typedef struct rl__entry {
    struct rl__entry *next;         /* hash chain */
    uint64_t hash;
    char *name;
    size_t name_len;
    char *key;                      /* <prefix>{<tag>}; tag: the name, escaped (holds.c) */
    size_t key_len;
    char *channel;                  /* <prefix>{<tag>}:release */
    size_t channel_len;
    char *fence_key;                /* <prefix>{<tag>}:fence: tokens handed out */
    size_t fence_key_len;
    uint16_t slot;                  /* Cluster slot of key and channel alike */
    int handles, holds, waiters;    /* what keeps the entry alive */
    rl__waiter *q_head, *q_tail;    /* local FIFO of waiting threads */
    int local_live;                 /* holds of this process not lost */
    int sub_want, sub_state;        /* subscriber's view of the release channel */
    int sub_link;                   /* server index it is subscribed on (sub_state) */
    int64_t linger_until;           /* no waiters left: unsubscribe after this */
    int leftovers;                  /* rl__leftover records naming this entry */
    int renewing;                   /* holds of it in the renewal round in flight */
    uint64_t forced;                /* force-releases of it done by this client */
    int family;                     /* RL__FAM_*: set by the first handle */
    /* RL__FAM_FAIR (fair.c): the queue's keys, and this process's own
     * release channel (NULL for the other families). */
    char *queue_key, *places_key, *wake_channel;
    size_t queue_len, places_len, wake_len;
    uint64_t q_serial;              /* waiters pushed so far */
    uint64_t notices;               /* release notices heard (subscriber) */
    /* A release of this process queued the local waiter `hint_serial` in
     * Redis; notices was hint_notices before that release was sent. */
    uint64_t hint_serial, hint_notices;
    int local_reads;                /* of local_live, the read holds (RL__SIDE_READ) */
    unsigned permits;               /* RL__FAM_SEM: the permit count N (semaphore.c) */
} rl__entry;

/* The family a name is open as, in one client: kinds of one family share
 * an entry (RL_KIND_READ and RL_KIND_WRITE: RL__FAM_RW). */
enum { RL__FAM_PLAIN, RL__FAM_FAIR, RL__FAM_RW, RL__FAM_SEM };

/* What one Redlock node holds of a hold. */
#define RL__NODES_MAX 9
typedef struct rl__node_hold {
    int count;              /* written by the owner thread only, under mutex once
                             * the hold is in the table (so the watchdog may read
                             * it under mutex): our count there; 0 none; -1 unknown */
    int64_t expiry;         /* under mutex: confirmed expiry there (local clock, less
                             * drift); 0: not confirmed */
    rl__fence doubt;        /* owner thread only: a change there whose outcome is
                             * unknown: fence it before the next (id < 0: none) */
    int64_t learned;        /* under mutex: when a change there was last learned
                             * (local clock); a renewal sent before confirms nothing */
    int spreading;          /* under mutex: a placement (the watchdog's spread)
                             * was sent there and its reply not read yet... */
    rl__fence spread;       /* ...on this connection: fenced if the hold ends first */
    int placed;             /* under mutex: the count a placement put there, with
                             * nothing learned there since it was sent (0: none);
                             * the owner thread takes it as count (redlock.c) */
} rl__node_hold;

struct rl__hold {
    rl__hold *t_next, *t_prev;      /* owner thread's list; owner thread only */
    rl__hold *c_next, *c_prev;      /* client's list; under client mutex */
    rl_client *client;
    rl__entry *entry;
    uint64_t tid;
    uint64_t serial;
    size_t owner_len;
    char owner[RL__OWNER_MAX];      /* <uuid>:<tid>, the hash field */
    int count;                      /* owner thread only */
    unsigned long long token;       /* owner thread only: fencing token (0: none) */
    long lease_ms;
    int watchdog;                   /* renewed by the watchdog */
    atomic_int lost;
    atomic_llong expiry_ms;         /* last confirmed expiry, local clock, less drift */
    int releasing;                  /* under mutex: final release in flight */
    int refs;                       /* under mutex */
    int reported;                   /* under mutex: on_lost called */
    const char *lost_why;           /* under mutex: why it was flagged (static) */
    int in_table;                   /* under mutex */
    /* An operation whose outcome is unknown, to resolve before the next. */
    long drift_ms;                  /* margin taken off each confirmed expiry */
    rl__fence doubt;                /* a change whose outcome is unknown (id < 0: none) */
    atomic_int orphan;              /* RL__HOLD_*: who frees it */
    int side;                       /* RL__SIDE_*: which side of the lock it holds */
    unsigned permits;               /* a semaphore's: the permits it holds (k) */
    unsigned nslots;                /* owner thread only: a fenced semaphore hold's */
    unsigned slots[RL__SEM_SLOTS_MAX];  /* permit slots (0: none, unfenced) */
    /* Redlock: each node's part, nodes[i] for c->servers[i] (c->nnodes of
     * them; none in the other modes). */
    rl__node_hold nodes[];
};

enum {
    RL__HOLD_LIVE,          /* the client's and its thread's */
    RL__HOLD_ORPHAN,        /* the client let it go: its thread frees it */
    RL__HOLD_OWNER_GONE     /* its thread ended: the client frees it at shutdown */
};

/*
 * Our field may remain in Redis after an operation whose outcome could not
 * be read back (Redis unreachable). Until it is fenced and dropped (by the
 * watchdog, or by the same thread before it acquires the name again), the
 * lock may stay taken for up to one lease.
 */
typedef struct rl__leftover {
    struct rl__leftover *next;
    rl__entry *entry;
    uint64_t tid;
    size_t owner_len;
    char owner[RL__OWNER_MAX];
    rl__fence fence;
    rl__server *server;             /* Redlock: the node it is on; NULL: the name's server */
    int claimed;                    /* being dropped right now */
    int64_t retry_at;               /* the keeper's drop failed: not tried before */
    atomic_int requeue;             /* a fair waiter's grant: the drop puts it back at the
                                     * head of the queue (fair_release.lua); read unlocked */
} rl__leftover;

rl__entry *rl__entry_get(rl_client *c, const void *name, size_t len); /* mutex held */
void rl__entry_maybe_free(rl_client *c, rl__entry *e);               /* mutex held */
rl__entry *rl__entry_by_channel(rl_client *c, const char *ch, size_t len);
void rl__entry_free_all(rl_client *c);
void rl__holds_after_fork(rl_client *c);     /* fork child: the parent's holds and waiters go */

void rl__queue_push(rl__entry *e, rl__waiter *w);
void rl__queue_remove(rl_client *c, rl__entry *e, rl__waiter *w);
void rl__queue_kick_head(rl__entry *e);
void rl__queue_notice(rl__entry *e, long long freed);     /* mutex held */
void rl__queue_wake_everyone(rl_client *c);               /* mutex held */

rl__hold *rl__hold_new(rl_client *c, rl__entry *e, uint64_t tid, long lease_ms, int watchdog);
void rl__hold_insert(rl_client *c, rl__hold *h);                     /* mutex held */
void rl__hold_remove(rl_client *c, rl__hold *h);                     /* mutex held */
void rl__hold_unref(rl_client *c, rl__hold *h);                      /* mutex held */
void rl__hold_discard(rl_client *c, rl__hold *h);   /* never inserted, or done; mutex held */
void rl__hold_free_spares(rl_client *c);
int rl__hold_is_lost(const rl__hold *h, int64_t now);
void rl__hold_confirm(rl__hold *h, int64_t sent_ms);   /* owner thread or watchdog */
/* A renewal sent at sent_ms succeeded: confirm it, unless the confirmed
 * expiry has already passed (the hold is then lost for good, whatever a
 * late reply says). 1 when the hold stands confirmed. */
int rl__hold_renewed(rl__hold *h, int64_t sent_ms);
/* cause: RL__LOST_*, counted the first time. */
int rl__hold_mark_lost(rl_client *c, rl__hold *h, int cause, const char *why); /* mutex held */
void rl__hold_orphan(rl_client *c, rl__hold *h);                     /* mutex held */
void rl__hold_report(rl_client *c, rl__hold *h);   /* on_lost, once; mutex held, dropped */
long rl__drift_ms(long lease_ms);
/* The lease Redis is asked to keep for a hold of lease_ms: the lease plus
 * the client's lock-delay (scripts.c); the callers' checks keep it at most
 * RL_TIME_MAX_MS. */
long rl__redis_lease(const rl_client *c, long lease_ms);

#endif
