/*
 * The read-write lock (RL_KIND_READ / RL_KIND_WRITE): its scripts, and
 * the rules the client keeps for it locally.
 *
 * In Redis, for name N and prefix P, one key, the hash P{N}, as for a
 * plain lock, so that a Cluster slot migration moves the lock whole and no
 * script touches a key it has not declared. Its layout, RL__RW_LAYOUT
 * (rwlock.h), the first release's:
 *
 *   "<uuid>:<tid>"        a write hold, as a plain owner's field; value
 *                         "<count> <since>"
 *   "<uuid>:<tid>:r"      a read hold; same value
 *   "~d:<hold's field>"   that hold's deadline (Redis TIME, ms). Every
 *                         hold has its own lease, since readers share the
 *                         key: a hold past its deadline is gone for every
 *                         script (as an expired key is), so a dead reader
 *                         keeps a writer out for its lease at most, and
 *                         it is dropped by the next script that reads the
 *                         hash whole, or by the sweep ("~s"). The key's
 *                         PEXPIRE is kept at least as long as the latest
 *                         deadline, never shortened.
 *   "~n"                  how many holds the hash has (each with its
 *                         deadline), dead ones included until dropped
 *   "~s"                  the sweep of dead holds, "<cursor> <t>": once
 *                         the earliest deadline t has passed, every
 *                         reader's new hold, release and renewal reads
 *                         the next RL__RW_SWEEP_STEP fields (HSCAN from
 *                         the cursor) and drops the holds past their
 *                         deadline among them, until the cursor comes
 *                         back to 0 and t is the earliest live deadline
 *                         again (lua/lib/rw_sweep.lua). A dead hold goes
 *                         within two sweeps of the hash after its
 *                         deadline, whoever calls, though no writer ever
 *                         comes.
 *   "~w"                  the write hold's field, while there is one
 *   "~wi"                 the waiting writers' intents: "<field>
 *                         <deadline>" pairs joined by spaces. A writer
 *                         that finds the lock read-write held and means to
 *                         wait registers one (never in a plain holder's
 *                         hash), and it stops new readers (a reader's
 *                         reentry, and a writer taking the read side,
 *                         still pass). The waiting writer keeps it alive by
 *                         asking again every RL__RW_INTENT_MS / 3 and takes
 *                         it back when it gives up (the release script,
 *                         which tells the readers); one that died leaves it
 *                         to run out within RL__RW_INTENT_MS.
 *
 * Fields beginning with '~' are not owners: the tools skip them, and to a
 * plain script the hash is simply held (a plain lock's "~delay",
 * lua/lib/delay.lua, keeps read-write acquirers out as it keeps plain
 * ones). A plain owner's field, in the hash of a plain lock on the same
 * name, reads as an undated writer's: it keeps out readers and writers
 * alike, and a plain acquire finds the hash held.
 *
 * Cost: a reader's new hold reads "~n", "~w", "~wi", "~s" and its own
 * fields, and checks HLEN against them; a release, a reentry and a renewal
 * touch their own fields, the count and "~s"; while a sweep is due, each
 * of them (but a reentry) reads RL__RW_SWEEP_STEP fields more. Only a
 * writer that finds other holds, and a script that finds the hash not as
 * "~n" says (a hold past its deadline, a plain owner, a lock-delay), read
 * it whole (HGETALL, O(fields)) and put it right. So readers cost the same
 * however many read beside them, and a waiting writer pays for their
 * number once per ask. A hash with a '~' field the scripts do not know,
 * or a live write hold without "~w", is not of this layout: a new hold is
 * refused (an error reply, RL_EREDIS), nothing repaired.
 *
 * A thread holding write may take read (two holds, two fields); releasing
 * the write side then leaves it a reader (downgrade). A reader asking for
 * write is refused at once with RL_EBUSY, whatever its wait: it would wait
 * for itself.
 *
 * The replies, the count read back after a lost reply, the leftovers and
 * the watchdog's batched renewal work as for a plain lock (outcome.c,
 * renew.c): the scripts take the same arguments as the plain ones, and
 * the RW ones are chosen by the name's family (rl__rw_script).
 */
#include <string.h>

#include "holds.h"
#include "rwlock.h"
#include "scripts.h"
#include "semaphore.h"

int rl__rw_script(const rl__entry *e, int script)
{
    if (e->family == RL__FAM_SEM)
        return rl__sem_script(script);
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
     * reader keeps out writers only; a semaphore's holders nobody (Redis
     * counts the permits). */
    if (e->family == RL__FAM_SEM)
        return 0;
    if (side == RL__SIDE_READ)
        return e->local_live - e->local_reads > 0;
    return e->local_live > 0;
}
