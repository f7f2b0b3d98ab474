/*
 * outcome.c: changes sent, lost replies resolved, leftovers dropped.
 */
#ifndef RL_OUTCOME_H
#define RL_OUTCOME_H

#include "common.h"
#include "holds.h"
#include "reply.h"

#define RL__RETRY (-100)   /* internal: the change was not applied; send it again */

/* Who changes which lock: the calling thread's owner field on an entry. */
typedef struct rl__op {
    rl_client *c;
    rl__entry *e;
    const char *owner;
    size_t owner_len;
    int side;                       /* RL__SIDE_* */
    long intent_ms;                 /* a writer that will wait: its intent (rwlock.c) */
    unsigned permits;               /* a semaphore's new hold: the permits it takes */
    char field[RL__OWNER_MAX];      /* a reader's field, when owner points here */
    /* The caller's deadline (-1: none): a Cluster in motion (TRYAGAIN,
     * CLUSTERDOWN) is waited out until then, at most the command timeout. */
    int64_t deadline;
    long place_ms;          /* fair lock: the place a busy acquire queues (0: none) */
    const char *next;       /* fair lock: the waiter a last release queues (NULL: none) */
    size_t next_len;
} rl__op;

void rl__op_init(rl__op *o, rl_client *c, rl__entry *e, rl__thread *t);

/* The outcome of an acquire already made for the calling thread by a set's
 * one script (lockset_one.c), which its rl__change() of (entry, held)
 * returns instead of sending one; then `entry` is set to NULL (used). */
typedef struct rl__preset {
    const rl__entry *entry;
    long long held;
    int rc;                         /* what rl__change() returns */
    rl__result res;
    const rl__fence *unresolved;    /* rc RL_ECONN: the outcome unknown (NULL: none) */
    int64_t sent;
} rl__preset;

/* What the count read back after a lost reply says of a change (acquire or
 * release script) made by a hold of `held`: RL__RETRY (not applied), or
 * RL_OK with *res DONE (applied), NOTOWNER (our field is gone) or MISMATCH.
 * Pure. */
int rl__outcome(int script, long long held, long long count, rl__result *res);
/* Run the acquire or release script, resolving a lost or unreadable reply
 * by reading the count back (*read_back set). RL_ECONN with
 * unresolved->id >= 0: the outcome stays unknown; fence that connection
 * before anything else. */
int rl__change(rl__op *o, int script, long long held, long lease_ms, int64_t *sent_ms,
               rl__result *res, rl__fence *unresolved, int *read_back);
/* After the lost reply of a set's script sent on `dead` (fenced off
 * first when dead->id > 0): what the acquire of o's hold counted `held`
 * came to, as rl__change() says it (RL__RETRY: not applied). */
int rl__read_back(rl__op *o, long long held, long lease_ms, rl__fence *dead, rl__result *res,
                  rl__fence *unresolved);
/* Send one script call (args: the nkeys keys, then the ARGV) to the name's
 * server, following redirects. *conn is left set when the command was sent
 * (its reply, in *resp, is the caller's to judge; give conn back); NULL
 * when nothing ran. */
int rl__op_send(rl__op *o, int script, int nkeys, int nargs, const char **args,
                const size_t *lens, rl__conn **conn, int64_t *sent_ms, rl__resp *resp);
/* Before the thread takes the entry again: drop what its unresolved changes
 * may have left. Mutex held; dropped while I/O runs. */
int rl__leftovers_settle(rl_client *c, rl__entry *e, uint64_t tid, int64_t deadline);
rl__leftover *rl__leftover_find(rl_client *c, const rl__entry *e, uint64_t tid); /* mutex held */
/* Claim lo, drop it (mutex dropped meanwhile), and settle the record: it is
 * freed on success (do not use lo after), kept for a retry otherwise. */
int rl__leftover_try(rl_client *c, rl__leftover *lo);                 /* mutex held */
void rl__leftovers_free(rl_client *c);       /* fork child, teardown: forget them */

/* Returns the leftover added (NULL: none, out of memory, or several:
 * Redlock). Mutex held. */
rl__leftover *rl__leftover_add(rl_client *c, rl__entry *e, uint64_t tid, const char *owner,
                               size_t owner_len, const rl__fence *fence);
/* The same, for one Redlock node. */
rl__leftover *rl__leftover_add_on(rl_client *c, rl__entry *e, uint64_t tid, const char *owner,
                                  size_t owner_len, const rl__fence *fence, rl__server *node);
/* The release script's arguments (the key, then ARGV) for owner's hold of
 * e counted `held` ("0": the whole field), with the lease Redis is to keep
 * ("0": leave it; else rl__redis_lease()). Returns their number, 6; one
 * is a key. args and lens need room for 10: rl__fair_args() adds four. */
int rl__release_args(rl_client *c, const rl__entry *e, const char *owner, size_t owner_len,
                     const char *held, size_t held_len, const char *lease, size_t lease_len,
                     const char **args, size_t *lens);
/* Queue the release script in its "drop our field" form (whatever its
 * count, with a notice) on conn: the leftovers' drop and the shutdown's.
 * requeue: a fair waiter's lost grant, the owner goes back to the head of
 * the queue. */
void rl__append_drop(rl__conn *conn, rl_client *c, const rl__entry *e, const char *owner,
                     size_t owner_len, int requeue);
/* Fence and drop; when the drop itself was sent but its reply lost, *late
 * names the connection that carried it (late->id < 0: nothing sent).
 * within_ms > 0: a new connection and each reply within that long (the
 * keeper: a stopped node must not hold up its other work); 0: the
 * client's timeouts. Mutex NOT held. */
int rl__leftover_drop(rl_client *c, const rl__leftover *lo, long within_ms, rl__fence *late);
void rl__leftover_done(rl_client *c, rl__leftover *lo, int rc, const rl__fence *late); /* mutex held */

#endif
