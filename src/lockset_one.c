/*
 * A set of plain locks on one server and slot, taken by one script
 * (set_acquire.lua): every member or none, in one round trip. The script
 * only makes the changes; each member's own acquisition (lock.c,
 * acquire.c) then finds its outcome ready (rl__preset, used by
 * rl__change() instead of a round trip) and does the rest as for a name
 * taken alone: the hold, the watchdog, counts, stats, a lost reply's
 * leftovers. A busy member leaves the set to lockset.c's ordered path.
 */
#include <string.h>

#include "client.h"
#include "error.h"
#include "holds.h"
#include "lockset.h"
#include "outcome.h"
#include "resp.h"
#include "router.h"
#include "scripts.h"
#include "server.h"
#include "util.h"

/* The set's keys and arguments, and the numbers they point to. */
typedef struct {
    char lease[24], since[24], delay[24], held[RL_LOCKSET_MAX][24];
    const char *args[2 * RL_LOCKSET_MAX + 4];
    size_t lens[2 * RL_LOCKSET_MAX + 4];
    int nargs;
} set_args;

/* Whether a lease may go to the script as it is (lock.c's own checks
 * refuse the others, member by member). */
static int lease_fits(const rl_client *c, long lease_ms)
{
    return lease_ms == RL_LEASE_WATCHDOG ||
           (lease_ms >= RL_LEASE_MIN_MS && lease_ms <= RL_TIME_MAX_MS - c->delay_ms);
}

/* Whether member m may be in the script, and the count the thread holds
 * of it (0: new). A held member must have the set's lease: the script
 * gives every key one expiry, and a shorter one would cut a hold that
 * believes itself valid. A new member must be free of this process's own
 * business: no local queue, no renewal in flight, no leftover of the
 * thread's (their settling would drop the field the script writes). Mutex
 * held. */
static int member_fits(rl_client *c, rl_lock *m, rl__thread *t, int64_t now, long lease_ms,
                       long long *held)
{
    rl__entry *e = m->entry;
    rl__hold *h;

    if (m->kind != RL_KIND_PLAIN || e->family != RL__FAM_PLAIN)
        return 0;
    if ((h = rl__lock_find(m, t)) != NULL) {
        *held = h->count;
        return h->lease_ms == lease_ms && !rl__hold_is_lost(h, now);
    }
    *held = 0;
    return !e->q_head && !e->renewing && !rl__leftover_find(c, e, t->id) &&
           !rl__thread_has_orphan(t, c, e);
}

/* Whether the set may be taken by one script: each member's held count
 * and force-release count in try. Mutex held. */
static int fits(rl_client *c, rl_lock *const *m, size_t n, rl__thread *t, long lease_ms,
                rl__set_try *try)
{
    int64_t now = rl__now_ms();
    size_t i;

    if (n < 2 || c->mode == RL__MODE_REDLOCK || c->fencing || c->wait_replicas ||
        !lease_fits(c, lease_ms))
        return 0;
    for (i = 0; i < n; i++) {
        if (c->mode == RL__MODE_CLUSTER && m[i]->entry->slot != m[0]->entry->slot)
            return 0;
        if (!member_fits(c, m[i], t, now,
                         lease_ms == RL_LEASE_WATCHDOG ? c->lease_ms : lease_ms,
                         &try->p[i].held))
            return 0;
        try->forced[i] = m[i]->entry->forced;
    }
    return 1;
}

static void build(rl_client *c, rl_lock *const *m, size_t n, const char *owner,
                  size_t owner_len, long lease_ms, const rl__set_try *try, set_args *a)
{
    size_t i;
    int k = 0;

    for (i = 0; i < n; i++) {
        a->args[k] = m[i]->entry->key;
        a->lens[k++] = m[i]->entry->key_len;
    }
    a->args[k] = a->lease;
    a->lens[k++] = rl__fmt_ll(a->lease, rl__redis_lease(c, lease_ms));
    a->args[k] = owner;
    a->lens[k++] = owner_len;
    a->args[k] = a->since;
    a->lens[k++] = rl__fmt_ll(a->since, rl__wall_ms());
    a->args[k] = a->delay;
    a->lens[k++] = rl__fmt_ll(a->delay, c->delay_ms);
    for (i = 0; i < n; i++) {
        a->args[k] = a->held[i];
        a->lens[k++] = rl__fmt_ll(a->held[i], try->p[i].held);
    }
    a->nargs = k;
}

/* Every member taken: each one's acquire done, as the script reported. */
static void all_done(rl_lock *const *m, size_t n, int64_t sent, rl__set_try *try)
{
    size_t i;

    for (i = 0; i < n; i++) {
        try->p[i].entry = m[i]->entry;
        try->p[i].rc = RL_OK;
        try->p[i].res.code = RL__R_DONE;
        try->p[i].res.value = try->p[i].held + 1;
        try->p[i].res.token = 0;
        try->p[i].unresolved = NULL;
        try->p[i].sent = sent;
    }
}

/*
 * The script's reply was lost: read every member's count back (the
 * connection that carried it fenced off first). One script applies all or
 * none: none read back as applied is nothing done (RL__ONE_NO); otherwise
 * each member's acquisition gets what its read-back says, and one read
 * back as not applied while others were is RL_EPROTO.
 */
static int read_back(rl_client *c, rl_lock *const *m, size_t n, rl__thread *t, long lease_ms,
                     rl__fence *dead, int64_t sent, rl__set_try *try)
{
    int rc[RL_LOCKSET_MAX], applied = 0;
    rl__op o;
    size_t i;

    for (i = 0; i < n; i++) {
        rl__op_init(&o, c, m[i]->entry, t);
        rc[i] = rl__read_back(&o, try->p[i].held, lease_ms, dead, &try->p[i].res,
                              &try->unresolved[i]);
        dead->id = -1;              /* fenced once */
        applied |= rc[i] != RL__RETRY;
    }
    if (!applied)
        return RL__ONE_NO;
    for (i = 0; i < n; i++) {
        try->p[i].entry = m[i]->entry;
        try->p[i].sent = sent;
        try->p[i].rc = rc[i] == RL__RETRY ? rl__err(RL_EPROTO, "the set's one script was "
                                                    "read back as applied to some members only")
                                          : rc[i];
        try->p[i].unresolved = rc[i] == RL_ECONN ? &try->unresolved[i] : NULL;
    }
    return RL__ONE_TAKEN;
}

/* What the script's reply says (conn given back). */
static int judge(rl_client *c, rl_lock *const *m, size_t n, rl__thread *t, long lease_ms,
                 int rc, rl__conn *conn, const rl__resp *resp, int64_t sent, rl__set_try *try)
{
    rl__fence dead;

    dead = conn->fence;
    rl__pool_put(c, conn);
    if (rc == RL_ECONN || rc == RL_EPROTO)
        return read_back(c, m, n, t, lease_ms, &dead, sent, try);
    if (rc != RL_OK || resp->type != RL__RESP_ARRAY || resp->nints < 1)
        return RL__ONE_NO;          /* an error reply: nothing written */
    if (resp->ints[0] == 1) {
        all_done(m, n, sent, try);
        return RL__ONE_TAKEN;
    }
    if (resp->ints[0] == 0 && resp->nints == 3 && resp->ints[1] >= 1 &&
        (size_t)resp->ints[1] <= n) {
        try->busy = (size_t)resp->ints[1] - 1;
        return RL__ONE_BUSY;
    }
    return RL__ONE_NO;              /* not ours, another count: the ordered path says */
}

int rl__lockset_one(rl_lock *const *m, size_t n, rl__thread *t, long lease_ms,
                    int64_t deadline, rl__set_try *try)
{
    rl_client *c = m[0]->client;
    set_args a;
    rl__conn *conn;
    rl__resp resp;
    int64_t sent;
    rl__op o;
    int rc, ok;

    pthread_mutex_lock(&c->mu);
    ok = fits(c, m, n, t, lease_ms, try);
    pthread_mutex_unlock(&c->mu);
    if (!ok)
        return RL__ONE_NO;
    if (lease_ms == RL_LEASE_WATCHDOG)
        lease_ms = c->lease_ms;
    rl__op_init(&o, c, m[0]->entry, t);
    o.deadline = deadline;
    build(c, m, n, o.owner, o.owner_len, lease_ms, try, &a);
    rc = rl__op_send(&o, RL__S_SET_ACQUIRE, (int)n, a.nargs, a.args, a.lens, &conn, &sent,
                     &resp);
    if (!conn)
        return RL__ONE_NO;          /* nothing was sent */
    return judge(c, m, n, t, lease_ms, rc, conn, &resp, sent, try);
}

void rl__lockset_settle(rl_lock *m, rl__thread *t, rl__set_try *try, size_t i, int rc)
{
    rl_client *c = m->client;
    rl__preset *p = &try->p[i];
    rl__fence none;
    rl__hold *h;
    size_t len;
    const char *owner;

    pthread_mutex_lock(&c->mu);
    if (p->entry && p->held == 0 && p->rc == RL_OK && p->res.code == RL__R_DONE) {
        /* Written, and no hold made of it: our field is a leftover. */
        none.id = -1;
        none.addr[0] = '\0';
        none.server = NULL;
        owner = rl__thread_owner(t, c, &len);
        rl__leftover_add(c, m->entry, t->id, owner, len, &none);
    } else if (p->entry && p->rc == RL_ECONN && p->held == 0 && p->unresolved) {
        owner = rl__thread_owner(t, c, &len);
        rl__leftover_add(c, m->entry, t->id, owner, len, p->unresolved);
    }
    /* A force-release that ended after the script was sent may have
     * deleted before it ran, and named no hold of ours: flag it. */
    if (rc == RL_OK && m->entry->forced != try->forced[i] && (h = rl__lock_find(m, t)))
        rl__hold_mark_lost(c, h, RL__LOST_FORCED, "force-released while the set was taken");
    pthread_mutex_unlock(&c->mu);
    p->entry = NULL;
}
