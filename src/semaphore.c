/*
 * The semaphore (RL_KIND_SEMAPHORE): N permits per name, a thread's hold
 * takes k of them (1..N) and is reentrant like a lock's.
 *
 * In Redis, for name N and prefix P, one key, the hash P{N}, as for the
 * other kinds (a Cluster slot migration moves it whole, and no script
 * touches a key it has not declared):
 *
 *   "<uuid>:<tid>"      a hold, as a plain owner's field: "<count> <since>";
 *                       with fencing "<count> <since> <token> <slots>", its
 *                       token and permit slots (lua/lib/sem_slots.lua)
 *   "~d:<hold's field>" its deadline (Redis TIME, ms): each hold has its
 *                       own lease, since holders share the key, and a hold
 *                       past its deadline is gone for every script, its
 *                       permits free again, whoever calls. None: the key's
 *                       expiry is the deadline (below)
 *   "~k:<hold's field>" the permits it holds (none: 1)
 *   "~N"                the permit count the holds were taken with
 *
 * The key's PEXPIRE is kept at least as long as the latest deadline and
 * never shortened; the last hold's release deletes the key when no other
 * (a dead one not yet dropped) is left. The count N is the name's while it
 * has live holds: an acquisition that says another is refused (an error
 * reply, nothing written; RL_EINVAL here), one on a free name sets it.
 *
 * The same machinery as the read-write lock's (rwlock.c), lighter: a new
 * hold reads the hash whole (HGETALL) to count the live holds' permits and
 * drops the dead ones it finds; live holds are N at most, so that read is
 * bounded by the name's permit count (plus the dead holds dropped), and no
 * sweep is needed. Reentry, release and renewal touch their own fields.
 * The uncontended case costs what a plain lock's does: a new hold on a
 * free name (no key) writes the hold and "~N" ("~k:" for more than one
 * permit) and the key's PEXPIRE, with no read and no clock, and its
 * deadline is the key's expiry while it is alone; every script that moves
 * the expiry writes it a "~d:" first (another's new hold: the key's PTTL),
 * and the release of such a hold asks no clock either and DELs the key.
 * The watchdog renews a hold's deadline in the same batched per-node round
 * as the other kinds' (sem_renew.lua, chosen by the name's family);
 * replies, the count read back after a lost reply (HGET of the field, whose
 * value is "<count> <since>" as a plain lock's), leftovers, fork and
 * shutdown work as for a plain lock.
 *
 * Waiting: a busy try answers the first live deadline (when permits may
 * free up by themselves) and how many permits it lacked; a last release
 * publishes the permits it gave back on the name's release channel.
 * Within a process, threads waiting for one name queue in FIFO order and
 * only the head asks Redis: a notice, or a local release (counted as its
 * notice; the notice heard back counts again, which can only wake the head
 * early), wakes the head once those since its try gave back as many
 * permits as it lacked (rl__queue_notice; a notice that says no number, a
 * force-release's, wakes it at once). The head, once it has its permits,
 * leaves the queue and so wakes the next. No herd: one waiter per process
 * asks at a time, and only when its permits may be there.
 */
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "scripts.h"
#include "semaphore.h"

int rl__sem_script(int script)
{
    switch (script) {
    case RL__S_ACQUIRE: return RL__S_SEM_ACQUIRE;
    case RL__S_RELEASE: return RL__S_SEM_RELEASE;
    case RL__S_RENEW:   return RL__S_SEM_RENEW;
    default:            return script;
    }
}

int rl__sem_status(int rc)
{
    char why[256];
    const char *s;

    if (rc != RL_EREDIS || !(s = strstr(rl_last_error(), "the semaphore has ")))
        return rc;
    snprintf(why, sizeof why, "%s", s);
    return rl__err(RL_EINVAL, "%s: the name's live holds were taken with that count and this "
                   "handle says another; nothing changed", why);
}
