/*
 * Redlock: a lock granted by a majority of N independent masters (N odd,
 * 3..9), with what single mode has: reentry, the watchdog, flags, notices,
 * lost replies.
 *
 * A change (acquire, release) goes to the nodes at once (fanout.c). Each
 * hold keeps, per node, the count it has there and the expiry that node
 * confirmed; the hold's confirmed expiry is the one a majority confirmed
 * (the quorum-th latest), so its flag rises before a majority could have
 * let the lease run out. A renewal's reply counts only if no change of
 * the hold was learned on that node after the renewal was sent (its
 * answer is older than what we know).
 *
 * A node whose reply is lost counts as not granting. The connection that
 * carried the change is killed (CLIENT KILL, sent ahead of the next change
 * there), and our field there, if the change was applied after all, is
 * dropped by the last release, or as a leftover when even that fails.
 * Reentry sends each node the count it has there, so the nodes' counts may
 * differ (one that missed the first acquisition starts at 1 on a later
 * one); the last release drops the field whatever its count.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "command.h"
#include "conn.h"
#include "error.h"
#include "fanout.h"
#include "holds.h"
#include "outcome.h"
#include "redlock.h"
#include "reply.h"
#include "resp.h"
#include "router.h"
#include "rwlock.h"
#include "scripts.h"
#include "server.h"
#include "stats.h"
#include "thread.h"
#include "util.h"

#define RL__SPLIT_MIN_MS 2      /* a split vote: wait a random while, from */
#define RL__SPLIT_SPAN_MS 20    /* ...up to this much longer */

int rl__redlock_init(rl_client *c)
{
    rl__conn *conn[RL__NODES_MAX];
    int rc[RL__NODES_MAX];
    char why[RL__NODES_MAX][RL__WHY_LEN];
    int i, ok = 0, refused = RL_OK;

    c->mode = RL__MODE_REDLOCK;
    c->nnodes = c->url.nseeds;
    c->quorum = c->nnodes / 2 + 1;
    for (i = 0; i < c->nnodes; i++) {
        rl__server *s;
        pthread_mutex_lock(&c->mu);
        s = rl__server_get(c, c->url.seeds[i].host, c->url.seeds[i].port);
        pthread_mutex_unlock(&c->mu);
        if (!s)
            return rl__err(RL_ENOMEM, "out of memory");
    }
    /* The URL names each master once (url.c): servers[i] is seed i. All
     * are connected to at once: a stopped one costs its own timeout, once. */
    rl__conn_open_all(c, c->servers, c->nnodes, conn, rc, why);
    for (i = 0; i < c->nnodes; i++) {
        if (rc[i] == RL_OK) {
            if ((rc[i] = rl__conn_load_scripts(c, conn[i])) != RL_OK)
                snprintf(why[i], sizeof why[i], "%s", rl_last_error());
            rl__pool_adopt(c, conn[i]);
        }
        if (rc[i] == RL_OK) {
            if (!ok++)
                c->home = c->servers[i];
            continue;
        }
        /* A refusal (password, ACL, not Redis) is the user's to fix now. */
        if (rc[i] != RL_ECONN && refused == RL_OK)
            refused = rl__err(rc[i], "%s", why[i]);
        if (rc[i] == RL_ECONN)
            rl__log(c, RL_LOG_WARN, "rlock: Redlock master %s cannot be reached: %s",
                    c->servers[i]->name, why[i]);
    }
    if (refused != RL_OK)
        return refused;
    if (ok < c->quorum)
        return rl__err(RL_ECONN, "only %d of %d Redlock masters answered; %d are needed",
                       ok, c->nnodes, c->quorum);
    rl__log(c, RL_LOG_INFO, "rlock: Redlock over %d masters (%d answered), majority %d",
            c->nnodes, ok, c->quorum);
    return RL_OK;
}

/* ---- the scripts' arguments, node by node ------------------------------ */

static int granted(const vote *v)
{
    return v->resp.ints[0] == RL__R_DONE;
}

/* Fill v[i]'s args for the acquire script with count held. */
static void acquire_args(vote *v, const rl__op *o, long long held, long lease_ms)
{
    v->args[0] = o->e->key;
    v->lens[0] = o->e->key_len;
    v->lens[1] = rl__fmt_ll(v->lease, lease_ms);
    v->args[1] = v->lease;
    v->args[2] = o->owner;
    v->lens[2] = o->owner_len;
    v->lens[3] = rl__fmt_ll(v->held, held);
    v->args[3] = v->held;
    v->nargs = 4;
    if (held == 0) {
        /* A new hold here: "held since", for operators
         * (lua/lib/hold_value.lua). */
        v->lens[4] = rl__fmt_ll(v->since, rl__wall_ms());
        v->args[4] = v->since;
        v->nargs = 5;
    }
}

/* ... and for the release script (held 0: drop the field; lease 0: leave
 * the expiry alone; notice "0": none). */
static void release_args(vote *v, const rl__op *o, long long held, long lease_ms,
                         const char *notice)
{
    v->args[0] = o->e->key;
    v->lens[0] = o->e->key_len;
    v->args[1] = o->owner;
    v->lens[1] = o->owner_len;
    v->lens[2] = rl__fmt_ll(v->held, held);
    v->args[2] = v->held;
    v->lens[3] = rl__fmt_ll(v->lease, lease_ms);
    v->args[3] = v->lease;
    v->args[4] = notice;
    v->lens[4] = 1;
    v->args[5] = o->e->channel;
    v->lens[5] = o->e->channel_len;
    v->nargs = 6;
}

static int released(const vote *v)
{
    return v->resp.ints[0] == RL__R_DONE;
}

/* ---- a hold's expiry, as the majority confirmed it ---------------------- */

/* The quorum-th latest of the nodes' confirmed expiries. Mutex held. */
static int64_t majority_expiry(const rl_client *c, const rl__hold *h)
{
    int64_t e[RL__NODES_MAX], t;
    int i, j;

    for (i = 0; i < c->nnodes; i++) {
        e[i] = h->nodes[i].expiry;
        for (j = i; j > 0 && e[j - 1] < e[j]; j--) {
            t = e[j - 1];
            e[j - 1] = e[j];
            e[j] = t;
        }
    }
    return e[c->quorum - 1];
}

/* Set h's confirmed expiry to the majority's: it may move back (a node
 * found our field gone), but never back to life once it has passed, as
 * rl_interrupted() may have said so. 1 when it stands. Mutex held. */
static int settle(rl_client *c, rl__hold *h)
{
    int64_t now = rl__now_ms(), m = majority_expiry(c, h);
    int64_t cur = atomic_load(&h->expiry_ms);

    if (cur <= now)
        return 0;
    atomic_store(&h->expiry_ms, m);
    return m > now;
}

/* A renewal sent before a change of h was learned on node i says what the
 * node had before that change: it neither confirms our field there (a
 * non-last release may have deleted it since, counts differing by node)
 * nor takes it away (a reentry may have made it anew). */
int rl__redlock_node_renewed(rl_client *c, rl__hold *h, int i, int64_t sent_ms, int found)
{
    int64_t exp = sent_ms + h->lease_ms - h->drift_ms;

    if (sent_ms > h->nodes[i].learned) {
        if (!found)
            h->nodes[i].expiry = 0;
        else if (exp > h->nodes[i].expiry)
            h->nodes[i].expiry = exp;
    }
    return settle(c, h);
}

/* ---- the spread: a hold placed where a renewal finds the name free ------ */

/* Only while h stands on a majority, and only on a node that does not
 * vouch for it (a majority does, so a minority at most), where no earlier
 * placement is unanswered (one whose reply was lost is answered for once
 * its connection is fenced: rl__redlock_spread_fenced). */
int rl__redlock_spread_wanted(const rl__hold *h, int i, int64_t now)
{
    const rl__node_hold *nh = &h->nodes[i];

    if (h->releasing || atomic_load(&h->lost) || atomic_load(&h->expiry_ms) <= now)
        return 0;
    return nh->expiry <= now && !nh->spreading;
}

/* The count to place: the hold's, as far as the watchdog can know it (the
 * owner's h->count is its own): the highest count on any node, so that
 * each non-last release takes one off the placed field as off the others
 * and the last one finds it there still. Read when the placement is
 * written: a change of h learned before that is in it; one learned after
 * it was sent makes its count not ours (rl__redlock_spread_read). */
int rl__redlock_spread_sent(const rl_client *c, rl__hold *h, int i, const rl__fence *f)
{
    int j, count = 1;

    if (h->releasing || atomic_load(&h->lost))
        return 0;
    for (j = 0; j < c->nnodes; j++)
        if (h->nodes[j].count > count)
            count = h->nodes[j].count;
    h->nodes[i].spreading = 1;
    h->nodes[i].spread = *f;
    return count;
}

/* A field placed on node i, with no change of h learned there since the
 * placement was sent, is ours at the count placed: every change of h
 * there that ran after the placement was learned after it was sent. */
void rl__redlock_spread_read(rl__hold *h, int i, char flag, int count, int64_t sent_ms)
{
    h->nodes[i].spreading = 0;
    if (flag == '2' && h->nodes[i].learned < sent_ms)
        h->nodes[i].placed = count;
}

void rl__redlock_spread_fenced(rl_client *c, int i, const rl__fence *f)
{
    rl__hold *h;

    /* Whether it landed is unknown: nothing is taken as placed, and a
     * field it made is renewed as any field of ours (and dropped by the
     * last release whatever its count). */
    for (h = c->holds; h; h = h->c_next)
        if (h->nodes[i].spreading && h->nodes[i].spread.id == f->id &&
            h->nodes[i].spread.server == f->server)
            h->nodes[i].spreading = 0;
}

/* The owner thread, before a change of h: placed fields become counts of
 * its own, sent to their nodes as any other (a non-last release keeps
 * them, a reentry adds one). Not where the count is in doubt: a change
 * lost in flight may land on the placed field. */
static void take_placed(rl_client *c, rl__hold *h)
{
    int i;

    pthread_mutex_lock(&c->mu);
    for (i = 0; i < c->nnodes; i++) {
        rl__node_hold *nh = &h->nodes[i];
        if (nh->placed > 0 && nh->count >= 0 && nh->doubt.id < 0)
            nh->count = nh->placed;
        nh->placed = 0;
    }
    pthread_mutex_unlock(&c->mu);
}

/* ---- acquire ----------------------------------------------------------- */

/* A random pause for a split vote, so that contenders do not meet again. */
static long split_pause(uint64_t tid)
{
    static _Thread_local uint64_t x;

    if (!x)
        x = rl__hash(&tid, sizeof tid) ^ (uint64_t)rl__now_ms() ^ 0x9e3779b97f4a7c15ULL;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return RL__SPLIT_MIN_MS + (long)(x % RL__SPLIT_SPAN_MS);
}

/* Take back, on the nodes in `which`, what a failed acquisition may have
 * got: our whole field, with a notice where the name comes free. A node
 * where even that cannot be done keeps a leftover, dropped later. */
static void undo(rl__op *o, const rl__hold *h, unsigned which, const vote *got)
{
    rl_client *c = o->c;
    rl__fence *kill[RL__NODES_MAX] = { NULL };
    vote v[RL__NODES_MAX];
    int64_t sent;
    int i;

    memset(v, 0, sizeof v);
    for (i = 0; i < c->nnodes; i++) {
        kill[i] = got[i].state == V_LOST ? (rl__fence *)&got[i].lost : NULL;
        v[i].state = which & (1u << i) ? V_WAIT : V_SKIP;
        release_args(&v[i], o, 0, 0, rl__notice_arg(c));
    }
    rl__fanout_run(c, RL__S_RELEASE, h->lease_ms, v, kill, released, &sent);
    pthread_mutex_lock(&c->mu);
    for (i = 0; i < c->nnodes; i++) {
        if (v[i].state == V_FAIL || v[i].state == V_LOST)
            rl__leftover_add_on(c, o->e, h->tid, o->owner, o->owner_len,
                                v[i].state == V_LOST ? &v[i].lost : &got[i].lost,
                                c->servers[i]);
    }
    pthread_mutex_unlock(&c->mu);
}

unsigned rl__redlock_leftover_nodes(rl_client *c, const rl__entry *e, uint64_t tid)
{
    rl__leftover *lo;
    unsigned mask = 0;

    for (lo = c->leftovers; lo; lo = lo->next)
        if (lo->entry == e && lo->tid == tid && lo->server)
            mask |= 1u << lo->server->index;
    return mask;
}

/* A node that may still carry a field of an earlier change of this
 * thread's is left out until that is dropped: a late command there could
 * act on the hold, and the drop would take away its field there. */
static void skip_leftover_nodes(rl_client *c, const rl__entry *e, uint64_t tid, vote *v)
{
    unsigned mask;
    int i;

    pthread_mutex_lock(&c->mu);
    mask = rl__redlock_leftover_nodes(c, e, tid);
    pthread_mutex_unlock(&c->mu);
    for (i = 0; i < c->nnodes; i++)
        if (mask & (1u << i))
            v[i].state = V_SKIP;
}

/* Too few masters answered an acquisition: RL_ECONN (waited out), unless
 * so many refused it (an error reply: a key of the name that is not
 * rlock's, an ACL) that no majority can grant it even once every master
 * is back: that refusal, at once. */
static int not_answered(rl_client *c, const vote *v, int answered)
{
    int i, refused = 0, why = RL_ECONN;

    for (i = 0; i < c->nnodes; i++) {
        if (v[i].state == V_FAIL && v[i].rc != RL_ECONN) {
            refused++;
            why = v[i].rc;
        }
    }
    if (refused > c->nnodes - c->quorum)
        return rl__err(why, "%d of %d Redlock masters refused the lock (%d needed): %s",
                       refused, c->nnodes, c->quorum, rl_last_error());
    return rl__err(RL_ECONN, "only %d of %d Redlock masters answered (%d needed): %s",
                   answered, c->nnodes, c->quorum, rl_last_error());
}

int rl__redlock_acquire(rl__op *o, rl__hold *h, int64_t *sent_ms, rl__result *res, int *split)
{
    rl_client *c = o->c;
    vote v[RL__NODES_MAX];
    long long pttl[RL__NODES_MAX], t;
    unsigned back = 0;
    int i, j, yes = 0, busy = 0, answered = 0, need;
    int64_t now, expiry;

    *split = 0;
    memset(v, 0, sizeof v);
    for (i = 0; i < c->nnodes; i++) {
        v[i].state = V_WAIT;
        v[i].lost.id = -1;
        acquire_args(&v[i], o, 0, h->lease_ms);
    }
    skip_leftover_nodes(c, o->e, h->tid, v);

    rl__fanout_run(c, RL__S_ACQUIRE, h->lease_ms, v, NULL, granted, sent_ms);
    now = rl__now_ms();
    expiry = *sent_ms + h->lease_ms - h->drift_ms;
    for (i = 0; i < c->nnodes; i++) {
        if (v[i].state == V_DONE) {
            answered++;
            if (v[i].resp.ints[0] == RL__R_DONE)
                yes++;
            else if (v[i].resp.ints[0] == RL__R_BUSY) {
                /* PTTL: -2 gone already, -1 no expiry (not rlock's) */
                t = v[i].resp.ints[1];
                pttl[busy++] = t >= 0 ? t + 1 : t == -2 ? 0 : h->lease_ms;
            }
        }
    }
    if (yes >= c->quorum && now < expiry) {
        for (i = 0; i < c->nnodes; i++) {
            h->nodes[i].count = 0;
            h->nodes[i].expiry = 0;
            h->nodes[i].doubt.id = -1;
            h->nodes[i].placed = 0;
            if (v[i].state == V_DONE && v[i].resp.ints[0] == RL__R_DONE) {
                h->nodes[i].count = (int)v[i].resp.ints[1];
                h->nodes[i].expiry = expiry;
            } else if (v[i].state == V_LOST) {
                h->nodes[i].count = -1;
                h->nodes[i].doubt = v[i].lost;
            }
        }
        res->code = RL__R_DONE;
        res->value = 1;
        return RL_OK;
    }
    /* Not ours: give back whatever we got, or may have got. */
    for (i = 0; i < c->nnodes; i++)
        if ((v[i].state == V_DONE && v[i].resp.ints[0] != RL__R_BUSY) || v[i].state == V_LOST)
            back |= 1u << i;
    if (back)
        undo(o, h, back, v);
    if (yes >= c->quorum)
        return rl__err(RL_ECONN, "a majority granted the lock, but too late: %lld ms of "
                       "the %ld ms lease were gone", (long long)(now - *sent_ms), h->lease_ms);
    if (answered < c->quorum)
        return not_answered(c, v, answered);
    /* Held elsewhere: wait until enough of the holders' leases have run out
     * for a majority to be free (a notice comes sooner, as a rule). */
    for (i = 1; i < busy; i++)
        for (j = i; j > 0 && pttl[j - 1] > pttl[j]; j--) {
            t = pttl[j - 1];
            pttl[j - 1] = pttl[j];
            pttl[j] = t;
        }
    need = c->quorum - (c->nnodes - busy);
    res->code = RL__R_BUSY;
    if (need <= 0) {
        /* No one holds a majority: a split vote. */
        *split = 1;
        res->value = split_pause(h->tid);
    } else {
        res->value = pttl[need - 1];
    }
    return RL_OK;
}

/* ---- reentry and release ----------------------------------------------- */

static void flag(rl_client *c, rl__hold *h, int cause, const char *why)
{
    pthread_mutex_lock(&c->mu);
    rl__hold_mark_lost(c, h, cause, why);
    pthread_mutex_unlock(&c->mu);
}

/* Learn what each node said of a change of h sent at `sent`; `lease` > 0:
 * the nodes that applied it have confirmed that lease. Mutex NOT held. */
static void learn(rl_client *c, rl__hold *h, const vote *v, int64_t sent, long lease)
{
    int i;

    pthread_mutex_lock(&c->mu);
    for (i = 0; i < c->nnodes; i++) {
        rl__node_hold *nh = &h->nodes[i];
        if (v[i].state == V_SKIP || v[i].state == V_FAIL)
            continue;           /* nothing ran there */
        /* Within the same ms as a renewal's sending counts as after it. */
        nh->learned = rl__now_ms();
        nh->placed = 0;         /* what it says now is newer */
        if (v[i].state == V_LOST) {
            nh->count = -1;
            nh->doubt = v[i].lost;
            nh->expiry = 0;
            continue;
        }
        nh->doubt.id = -1;      /* it answered: the kill sent ahead ran */
        switch (v[i].resp.ints[0]) {
        case RL__R_DONE:
            nh->count = (int)v[i].resp.ints[1];
            if (lease > 0 && sent + lease - h->drift_ms > nh->expiry)
                nh->expiry = sent + lease - h->drift_ms;
            if (nh->count == 0)
                nh->expiry = 0;
            break;
        case RL__R_MISMATCH:
            nh->count = -1;     /* ours, at a count we do not know */
            nh->expiry = 0;
            break;
        default:                /* not ours there (gone, or another's) */
            nh->count = 0;
            nh->expiry = 0;
        }
    }
    settle(c, h);
    pthread_mutex_unlock(&c->mu);
}

static void kill_list(rl_client *c, rl__hold *h, rl__fence **kill)
{
    int i;

    for (i = 0; i < c->nnodes; i++)
        kill[i] = h->nodes[i].doubt.id >= 0 ? &h->nodes[i].doubt : NULL;
}

static int count_yes(const rl_client *c, const vote *v, int (*ok)(const vote *))
{
    int i, yes = 0;

    for (i = 0; i < c->nnodes; i++)
        yes += v[i].state == V_DONE && ok(&v[i]);
    return yes;
}

int rl__redlock_reenter(rl__op *o, rl__hold *h)
{
    rl_client *c = o->c;
    rl__fence *kill[RL__NODES_MAX] = { NULL };
    vote v[RL__NODES_MAX];
    int64_t sent;
    int i, yes;

    memset(v, 0, sizeof v);
    take_placed(c, h);
    kill_list(c, h, kill);
    for (i = 0; i < c->nnodes; i++) {
        /* A node that never granted it, or whose count is unknown, starts
         * afresh at 1 (the script restarts a field of ours at held 0). */
        v[i].state = V_WAIT;
        acquire_args(&v[i], o, h->nodes[i].count > 0 ? h->nodes[i].count : 0, h->lease_ms);
    }
    skip_leftover_nodes(c, o->e, h->tid, v);
    rl__fanout_run(c, RL__S_ACQUIRE, h->lease_ms, v, kill, granted, &sent);
    learn(c, h, v, sent, h->lease_ms);
    yes = count_yes(c, v, granted);
    if (rl__hold_is_lost(h, rl__now_ms())) {
        flag(c, h, RL__LOST_EXPIRED, "no majority of the masters vouches for it any more");
        return rl__err(RL_ELOST, "the lease of this hold was lost on a majority of the masters");
    }
    if (yes < c->quorum)
        return rl__err(RL_ECONN, "reentry confirmed by %d of %d Redlock masters (%d needed); "
                       "the hold stands as it was", yes, c->nnodes, c->quorum);
    if (atomic_load(&c->closing)) {
        flag(c, h, RL__LOST_SHUTDOWN, "the client was shut down");
        return rl__err(RL_ECANCELED, "the client is shutting down");
    }
    h->count++;
    return RL_OK;
}

/* The thread has given h back for good: out of every list; our field is
 * left to be dropped on the nodes in `unsure`, and on those in `spread`
 * after the watchdog's connection there (spread[i]) is fenced: a
 * placement it carried may land after the release. */
static void done_with(rl_client *c, rl__thread *t, rl__hold *h, const rl__op *o,
                      unsigned unsure, const vote *v, unsigned spread, const rl__fence *sf)
{
    int i;

    rl__thread_unlink(t, h);
    pthread_mutex_lock(&c->mu);
    for (i = 0; i < c->nnodes; i++) {
        const rl__fence *f = v && v[i].state == V_LOST ? &v[i].lost : &h->nodes[i].doubt;
        if (unsure & (1u << i))
            rl__leftover_add_on(c, o->e, h->tid, o->owner, o->owner_len, f, c->servers[i]);
        if (spread & (1u << i))
            rl__leftover_add_on(c, o->e, h->tid, o->owner, o->owner_len, &sf[i],
                                c->servers[i]);
    }
    h->releasing = 0;
    rl__hold_remove(c, h);
    pthread_mutex_unlock(&c->mu);
}

int rl__redlock_release(rl__op *o, rl__thread *t, rl__hold *h)
{
    rl_client *c = o->c;
    rl__fence *kill[RL__NODES_MAX] = { NULL };
    rl__fence sf[RL__NODES_MAX];
    vote v[RL__NODES_MAX];
    int64_t sent;
    int i, yes, last = h->count == 1, asked = 0;
    unsigned unsure = 0, spread = 0, spread_killed = 0;

    memset(v, 0, sizeof v);
    take_placed(c, h);
    kill_list(c, h, kill);
    if (last) {
        pthread_mutex_lock(&c->mu);
        h->releasing = 1;       /* the watchdog leaves it alone now */
        /* Placements sent before this may land after the release (another
         * connection): fence theirs ahead of it, or drop after. */
        for (i = 0; i < c->nnodes; i++) {
            if (!h->nodes[i].spreading)
                continue;
            spread |= 1u << i;
            sf[i] = h->nodes[i].spread;
            if (!kill[i]) {
                kill[i] = &sf[i];
                spread_killed |= 1u << i;
            }
        }
        pthread_mutex_unlock(&c->mu);
    }
    for (i = 0; i < c->nnodes; i++) {
        int n = h->nodes[i].count;
        if (last) {
            /* Every node, those that never granted it included: a count
             * of 1 is checked, any other is dropped whatever it is. */
            v[i].state = V_WAIT;
            release_args(&v[i], o, n == 1 ? 1 : 0, 0, rl__notice_arg(c));
        } else if (n > 0) {
            v[i].state = V_WAIT;
            release_args(&v[i], o, n, h->watchdog ? h->lease_ms : 0, rl__notice_arg(c));
        } else {
            v[i].state = V_SKIP;
        }
    }
    /* Each node gets the command timeout: no validity hangs on how fast
     * a release is, and a node merely slow must not make it look lost. */
    rl__fanout_run(c, RL__S_RELEASE, c->command_ms * 10L, v, kill, released, &sent);
    learn(c, h, v, sent, !last && h->watchdog ? h->lease_ms : 0);
    yes = count_yes(c, v, released);
    for (i = 0; i < c->nnodes; i++) {
        asked += v[i].state != V_SKIP && v[i].state != V_FAIL;
        if (v[i].state == V_FAIL || v[i].state == V_LOST ||
            (v[i].state == V_DONE && v[i].resp.ints[0] == RL__R_MISMATCH))
            unsure |= 1u << i;
        /* Answered: the fence sent ahead of the release ran before it. */
        if (v[i].state == V_DONE && (spread_killed & (1u << i)))
            spread &= ~(1u << i);
    }
    if (!asked) {
        /* Nothing was sent: the hold stands, and may be released again. */
        if (last) {
            pthread_mutex_lock(&c->mu);
            h->releasing = 0;
            rl__watchdog_poke(c);
            pthread_mutex_unlock(&c->mu);
        }
        return rl__err(RL_ECONN, "no Redlock master could be reached (nothing was sent): %s",
                       rl_last_error());
    }
    /* A majority had our field when the release reached it: the hold was
     * ours to the end (had its lease run out there, the field would be
     * gone, or another's). */
    if (yes >= c->quorum) {
        if (--h->count == 0)
            done_with(c, t, h, o, unsure, v, spread, sf);
        return RL_OK;
    }
    flag(c, h, RL__LOST_OTHER, "no majority of the masters confirmed its release");
    if (--h->count == 0)
        done_with(c, t, h, o, unsure, v, spread, sf);
    return rl__err(RL_ELOST, "the release was confirmed by %d of %d Redlock masters (%d "
                   "needed): the hold was lost", yes, c->nnodes, c->quorum);
}

/* ---- force-release and queries ----------------------------------------- */

static int force_ok(const vote *v)
{
    return v->resp.ints[0] == 1;
}

int rl__redlock_force(rl_client *c, rl__entry *e)
{
    char prefix[RL__UUID_LEN + 2];
    vote v[RL__NODES_MAX];
    int64_t sent;
    int i, yes, all = 0;
    rl__hold *h;

    memcpy(prefix, c->uuid, RL__UUID_LEN);
    prefix[RL__UUID_LEN] = ':';
    prefix[RL__UUID_LEN + 1] = '\0';
    memset(v, 0, sizeof v);
    for (i = 0; i < c->nnodes; i++) {
        v[i].state = V_WAIT;
        v[i].args[0] = e->key;
        v[i].lens[0] = e->key_len;
        v[i].args[1] = prefix;
        v[i].lens[1] = RL__UUID_LEN + 1;
        v[i].args[2] = rl__notice_arg(c);
        v[i].lens[2] = 1;
        v[i].args[3] = e->channel;
        v[i].lens[3] = e->channel_len;
        v[i].nargs = 4;
    }
    rl__fanout_run(c, RL__S_FORCE, c->command_ms * 10L, v, NULL, force_ok, &sent);
    yes = count_yes(c, v, force_ok);
    /* Our own holds of the name: those the nodes named, or all of them
     * when a node could not list them or its reply was lost. */
    for (i = 0; i < c->nnodes; i++)
        if (v[i].state == V_LOST || (v[i].state == V_DONE && v[i].resp.ints[1] < 0))
            all = 1;
    pthread_mutex_lock(&c->mu);
    for (h = c->holds; h; h = h->c_next) {
        int hit = all;
        if (h->entry != e)
            continue;
        for (i = 0; i < c->nnodes && !hit; i++) {
            long long k;
            if (v[i].state != V_DONE)
                continue;
            for (k = 0; k < v[i].resp.ints[1] && k < RL__FORCE_TIDS; k++)
                if ((uint64_t)v[i].resp.ints[2 + k] == h->tid)
                    hit = 1;
        }
        if (hit)
            rl__hold_mark_lost(c, h, RL__LOST_FORCED, "force-released");
    }
    e->forced++;
    pthread_mutex_unlock(&c->mu);
    if (yes >= c->quorum)
        return RL_OK;
    for (i = 0; i < c->nnodes; i++)
        if (v[i].state == V_FAIL && v[i].rc != RL_ECONN)
            return rl__err(v[i].rc, "force-release refused by %s", c->servers[i]->name);
    return rl__err(RL_ECONN, "force-release done on %d of %d Redlock masters (%d needed)", yes,
                   c->nnodes, c->quorum);
}

int rl__redlock_query(rl_client *c, rl__entry *e, const char *cmd, long long *out)
{
    vote v[RL__NODES_MAX];
    long long got[RL__NODES_MAX] = { 0 }, t;
    int64_t sent;
    int i, j, n = 0, rc = RL_ECONN;

    memset(v, 0, sizeof v);
    for (i = 0; i < c->nnodes; i++) {
        v[i].state = V_WAIT;
        v[i].args[0] = cmd;
        v[i].lens[0] = strlen(cmd);
        v[i].args[1] = e->key;
        v[i].lens[1] = e->key_len;
        v[i].nargs = 2;
    }
    /* Every node at once, and every one heard (no early decision): what a
     * majority says is read from all the answers, as before. */
    rl__fanout_run(c, RL__PLAIN, c->command_ms * 10L, v, NULL, NULL, &sent);
    for (i = 0; i < c->nnodes; i++) {
        if (v[i].state == V_DONE)
            got[n++] = v[i].resp.ints[0];
        else if (v[i].state == V_FAIL && v[i].rc != RL_ECONN && rc == RL_ECONN)
            rc = v[i].rc;
    }
    if (n < c->quorum)
        return rc == RL_ECONN ? rl__err(RL_ECONN, "only %d of %d Redlock masters answered",
                                        n, c->nnodes)
                              : rc;
    /* The quorum-th largest: EXISTS 1 when a majority has the name; PTTL
     * how long a majority still has it (-2: no majority has it). */
    for (i = 1; i < n; i++)
        for (j = i; j > 0 && got[j - 1] < got[j]; j--) {
            t = got[j - 1];
            got[j - 1] = got[j];
            got[j] = t;
        }
    *out = got[c->quorum - 1];
    if (strcmp(cmd, "PTTL") == 0 && *out == -1) {
        /* -1 (no expiry) sorts below the leases: take the majority of keys
         * that exist instead, counting no-expiry as the longest. */
        for (i = 0, j = 0; i < n; i++)
            j += got[i] != -2;
        *out = j >= c->quorum ? -1 : -2;
    }
    return RL_OK;
}
