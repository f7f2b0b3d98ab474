/*
 * The read-write lock (RL_KIND_READ / RL_KIND_WRITE): its scripts, and
 * the rules the client keeps for it locally.
 *
 * In Redis, for name N and prefix P (every key shares the tag {N}):
 *
 *   P{N}      hash, as for a plain lock: one field per hold, value
 *             "<count> <since>". A writer's field is "<uuid>:<tid>", as a
 *             plain owner's; a reader's is "<uuid>:<tid>:r". No other
 *             field: the tools, the plain scripts and the force-release
 *             see owners only. A plain owner's field, in the hash of a
 *             plain lock on the same name, reads as a writer's: it keeps
 *             out readers and writers alike, and a plain acquire finds
 *             the hash held (it exists without its field).
 *   P{N}:rd   sorted set, field -> deadline (Redis TIME in ms): every
 *             read-write hold has its own lease, since readers share one
 *             key. The scripts drop every field whose deadline has passed
 *             before they decide, so a dead reader keeps a writer out for
 *             its lease at most. The hash's PEXPIRE is kept at least as
 *             long as the latest deadline (never shortened); when the
 *             hash is gone, the set is stale and is deleted.
 *   P{N}:wi   sorted set, waiting writer's field -> deadline: a writer
 *             that finds the lock busy and means to wait registers an
 *             intent, which stops new readers (a reader's reentry, and a
 *             writer taking the read side, still pass). The waiting writer
 *             keeps it alive by asking again every RL__RW_INTENT_MS / 3;
 *             a writer that died or gave up leaves it to run out within
 *             RL__RW_INTENT_MS.
 *
 * Write-held test without a scan: a writer shares the hash with at most
 * its own read hold, so a hash of more than two fields is held by readers;
 * one of at most two is write-held when a field lacks the ":r" suffix.
 *
 * A thread holding write may take read (two holds, two fields); releasing
 * the write side then leaves it a reader (downgrade). A reader asking for
 * write is refused at once with RL_EBUSY, whatever its wait: it would wait
 * for itself.
 *
 * The replies, the count read back after a lost reply, the leftovers and
 * the watchdog's batched renewal work as for a plain lock (outcome.c,
 * watchdog.c): the scripts take the same arguments as the plain ones, and
 * the RW ones are chosen by the name's family (rl__rw_script).
 */
#include <string.h>

#include "rlock_int.h"

int rl__rw_script(const rl__entry *e, int script)
{
    if (e->family != RL__FAM_RW)
        return script;
    switch (script) {
    case RL__S_ACQUIRE: return RL__S_RW_ACQUIRE;
    case RL__S_RELEASE: return RL__S_RW_RELEASE;
    case RL__S_RENEW:   return RL__S_RW_RENEW;
    default:            return script;
    }
}

int rl__rw_side(int kind)
{
    return kind == RL_KIND_READ ? RL__SIDE_READ : kind == RL_KIND_WRITE ? RL__SIDE_WRITE
                                                                        : RL__SIDE_PLAIN;
}

size_t rl__rw_field(char *out, const char *owner, size_t owner_len, int side)
{
    memcpy(out, owner, owner_len);
    if (side == RL__SIDE_READ) {
        memcpy(out + owner_len, ":r", 2);
        owner_len += 2;
    }
    out[owner_len] = '\0';
    return owner_len;
}

int rl__rw_local_busy(const rl__entry *e, int side)
{
    /* Other threads of this process: a writer keeps everyone out, a
     * reader keeps out writers only. */
    if (side == RL__SIDE_READ)
        return e->local_live - e->local_reads > 0;
    return e->local_live > 0;
}
