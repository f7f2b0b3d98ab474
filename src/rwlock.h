/*
 * rwlock.c: the read-write lock's local rules (sides, fields, who keeps
 * whom out) and the constants of its layout in Redis.
 */
#ifndef RL_RWLOCK_H
#define RL_RWLOCK_H

#include "common.h"

/* The side of a lock a hold is on: a plain (or fair) lock's, or one of a
 * read-write lock's two. */
enum { RL__SIDE_PLAIN, RL__SIDE_READ, RL__SIDE_WRITE };
#define RL__RW_INTENT_MS 3000   /* a waiting writer's intent lives this long */
/* The layout of a read-write lock's hash in Redis (its fields, listed in
 * src/rwlock.c). 1 is the first release's and the baseline: the scripts
 * carry no code for the layouts before it (never released), and refuse,
 * with an error reply and nothing written, a hash with a '~' field they do
 * not know or a live write hold without its mark "~w". A change of the
 * fields or of their values raises it, and says there how the scripts meet
 * a hash of the layout before (a rolling upgrade runs both). */
#define RL__RW_LAYOUT 1
/* Fields one step of the read-write scripts' sweep of dead holds reads
 * (HSCAN's COUNT; scripts.c). */
#define RL__RW_SWEEP_STEP 20

struct rl__entry;
/* The script to run for a change of e: the read-write (or semaphore) one
 * when e is of that family, else `script`. */
int rl__rw_script(const struct rl__entry *e, int script);
int rl__rw_side(int kind);                  /* RL_KIND_* -> RL__SIDE_* */
/* The hash field of a hold on `side`, from the thread's owner string:
 * "<owner>:r" for a reader. out has RL__OWNER_MAX bytes. */
size_t rl__rw_field(char *out, const char *owner, size_t owner_len, int side);
/* Whether other threads of this process keep a new hold on `side` out of
 * e: a writer keeps out everyone, a reader only writers (a semaphore's
 * holders: nobody). Mutex held. */
int rl__rw_local_busy(const struct rl__entry *e, int side);

#endif
