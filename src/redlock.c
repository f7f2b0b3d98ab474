/*
 * Redlock: a lock granted by a majority of N independent masters (N odd,
 * 3..9), with what single mode has: reentry, the watchdog, flags, notices,
 * lost replies.
 *
 * A change (acquire, release) goes to the nodes at once and their replies
 * are read as they come, each within a per-node timeout; a node without an
 * idle connection gets a new one meanwhile, connected and handshaken
 * without blocking, and is sent to once it is made. Once the majority has
 * decided, the stragglers get a short grace and no more, so a node that is
 * down or stopped delays nobody. Each hold keeps, per node, the count it
 * has there and the expiry that node confirmed; the hold's confirmed expiry
 * is the one a majority confirmed (the quorum-th latest), so its flag rises
 * before a majority could have let the lease run out. A renewal's reply
 * counts only if no change of the hold was learned on that node after the
 * renewal was sent (its answer is older than what we know).
 *
 * A node whose reply is lost counts as not granting. The connection that
 * carried the change is killed (CLIENT KILL, sent ahead of the next change
 * there), and our field there, if the change was applied after all, is
 * dropped by the last release, or as a leftover when even that fails.
 * Reentry sends each node the count it has there, so the nodes' counts may
 * differ (one that missed the first acquisition starts at 1 on a later
 * one); the last release drops the field whatever its count.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "rlock_int.h"

#define RL__GRACE_MIN_MS 10     /* stragglers after the majority decided: at least */
#define RL__SPLIT_MIN_MS 2      /* a split vote: wait a random while, from */
#define RL__SPLIT_SPAN_MS 20    /* ...up to this much longer */
#define RL__PLAIN (-1)          /* run()'s script for a plain command (a query) */

/* How one node took part in a change. */
enum { V_SKIP, V_WAIT, V_OPEN, V_SENT, V_DONE, V_FAIL, V_LOST };

typedef struct vote {
    int state;              /* V_*: WAIT to be sent, OPEN its connection being
                             * made, SENT awaited, DONE: resp holds its answer */
    int64_t deadline;       /* V_SENT: read by then */
    int rc;                 /* V_FAIL: why */
    rl__opening *opening;   /* V_OPEN */
    rl__conn *conn;
    rl__resp resp;          /* V_DONE: the script's reply (ints only) */
    rl__fence lost;         /* V_LOST: the connection that carried it */
    int reloaded;           /* NOSCRIPT met and the scripts loaded again */
    int nargs;
    const char *args[6];
    size_t lens[6];
    char held[24], lease[24], since[24];
} vote;

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

/* ---- one change on many nodes at once ---------------------------------- */

/* How long a node may take to answer a change for a lease: short against
 * the lease (its time is taken off the lock's validity), at most the
 * command timeout. */
static long node_timeout(const rl_client *c, long lease_ms)
{
    long t = lease_ms / 10;

    if (t < RL__GRACE_MIN_MS)
        t = RL__GRACE_MIN_MS;
    return t < c->command_ms ? t : c->command_ms;
}

/* Write v's call on its connection, after CLIENT KILL of kill where
 * given; RL__PLAIN: v's args are a plain command, with nothing to kill. */
static int write_call(rl_client *c, vote *v, int script, const rl__fence *kill)
{
    if (script == RL__PLAIN)
        return rl__conn_command_send(v->conn, v->nargs, v->args, v->lens);
    return rl__conn_script_send(c, v->conn, kill, script, 1, v->nargs, v->args, v->lens);
}

/* Write v's call on its connection, or on a second one when the first
 * was found closed (nothing ran). */
static int vote_send(rl_client *c, vote *v, rl__server *s, int script, const rl__fence *kill,
                     long within_ms)
{
    int rc, tries;

    for (tries = 0; tries < 2; tries++) {
        if (!v->conn && (rc = rl__pool_get_within(c, s, within_ms, &v->conn)) != RL_OK) {
            v->conn = NULL;
            return rc;
        }
        rc = write_call(c, v, script, kill);
        if (rc != RL__UNSENT)
            return rc;
        /* Closed by the server before use (a restart): nothing ran. */
        rl__pool_put(c, v->conn);
        v->conn = NULL;
    }
    return rl__err(RL_ECONN, "%s closed the connection before the command was sent", s->name);
}

/* The node's reply is in v->resp: judge it. */
static void vote_answered(rl_client *c, vote *v, int script)
{
    rl__resp *r = &v->resp;

    if (script == RL__PLAIN) {
        /* A query changes nothing: an answer other than a number is a
         * refusal. */
        v->state = V_DONE;
        if (r->type != RL__RESP_INT) {
            v->state = V_FAIL;
            v->rc = r->type == RL__RESP_ERROR
                        ? rl__error_status(r->str, r->str_len)
                        : rl__err(RL_EPROTO, "%s answered a query with no number",
                                  v->conn->server->name);
        }
        r->str = NULL;
        return;
    }

    if (r->type == RL__RESP_ERROR && r->str_len >= 8 && memcmp(r->str, "NOSCRIPT", 8) == 0 &&
        !v->reloaded) {
        /* Restarted or flushed: the script did not run. Load, send again. */
        v->reloaded = 1;
        if (rl__conn_load_scripts(c, v->conn) == RL_OK &&
            rl__conn_script_send(c, v->conn, NULL, script, 1, v->nargs, v->args,
                                 v->lens) == RL_OK)
            return;     /* still waiting */
        v->state = V_LOST;
        v->lost = v->conn->fence;
        return;
    }
    if (r->type == RL__RESP_ERROR) {
        /* Our scripts check before they write: an error changed nothing. */
        v->state = V_FAIL;
        v->rc = rl__error_status(r->str, r->str_len);
        return;
    }
    if (r->type != RL__RESP_ARRAY || r->nints < 2) {
        v->state = V_LOST;      /* a shape no script of ours gives: it may have run */
        v->lost.id = 0;
        return;
    }
    r->str = NULL;
    v->state = V_DONE;
}

/* Whether the votes in so far decide the change: `done` of them said yes
 * by `ok` (a majority, or a majority can no longer say yes). */
static int decided(const rl_client *c, const vote *v, int (*ok)(const vote *))
{
    int i, yes = 0, no = 0;

    for (i = 0; i < c->nnodes; i++) {
        if (v[i].state == V_WAIT || v[i].state == V_OPEN || v[i].state == V_SENT)
            continue;
        if (v[i].state == V_DONE && ok(&v[i]))
            yes++;
        else
            no++;
    }
    return yes >= c->quorum || no > c->nnodes - c->quorum;
}

static int granted(const vote *v)
{
    return v->resp.ints[0] == RL__R_DONE;
}

/* Write v's call on its connection: V_SENT, to be read by now + timeout;
 * V_LOST when it broke part-way through the write; V_FAIL when nothing
 * was written. RL__UNSENT: found closed by the server (a restart), the
 * connection is still v's. */
static int send_on(rl_client *c, int i, vote *v, int script, rl__fence *const *kill,
                   long timeout)
{
    int rc = write_call(c, v, script, kill ? kill[i] : NULL);

    if (rc == RL_OK) {
        v->state = V_SENT;
        v->deadline = rl__now_ms() + timeout;
    } else if (rc == RL__UNSENT) {
        v->state = V_FAIL;
        v->rc = rl__err(RL_ECONN, "%s closed the connection before the command was sent",
                        c->servers[i]->name);
        return RL__UNSENT;
    } else if (rc != RL_ENOMEM && rc != RL_EINVAL) {
        v->state = V_LOST;
        v->lost = v->conn->fence;
    } else {
        v->state = V_FAIL;
        v->rc = rc;
    }
    return rc;
}

/* Begin v's part (state V_WAIT): sent at once on an idle connection (one
 * found closed is given back), else a new connection is begun without
 * waiting (V_OPEN, or V_FAIL). At the pool's limit it stays V_WAIT, for
 * send_one once the others are read. */
static void begin(rl_client *c, int i, vote *v, int script, rl__fence *const *kill,
                  long timeout)
{
    rl__server *s = c->servers[i];
    int rc;

    if ((v->conn = rl__pool_get_idle(c, s))) {
        if (send_on(c, i, v, script, kill, timeout) != RL__UNSENT)
            return;
        rl__pool_put(c, v->conn);
        v->conn = NULL;
        v->state = V_WAIT;
    }
    if ((rc = rl__pool_reserve(c, s)) == RL_EBUSY)
        return;
    if (rc == RL_OK && (rc = rl__opening_start(c, s, timeout, &v->opening)) != RL_OK)
        rl__pool_reserved(c, s, NULL);
    if (rc != RL_OK) {
        v->state = V_FAIL;
        v->rc = rc;
        return;
    }
    v->state = V_OPEN;
}

/* v's connection (V_OPEN) was made or not (status st): send on it. */
static void opened(rl_client *c, int i, vote *v, int script, rl__fence *const *kill,
                   long timeout, int st, rl__conn *conn)
{
    v->opening = NULL;
    rl__pool_reserved(c, c->servers[i], st == RL_OK ? conn : NULL);
    if (st != RL_OK) {
        v->state = V_FAIL;
        v->rc = st;
        return;
    }
    v->conn = conn;
    send_on(c, i, v, script, kill, timeout);
}

/* Send v's call (state V_WAIT: now V_SENT, or V_FAIL / V_LOST) on conn or
 * a connection made within within_ms. */
static void send_one(rl_client *c, int i, vote *v, int script, rl__fence *const *kill,
                     long within_ms, long timeout)
{
    int rc = vote_send(c, v, c->servers[i], script, kill ? kill[i] : NULL, within_ms);

    if (rc == RL_OK) {
        v->state = V_SENT;
        v->deadline = rl__now_ms() + timeout;
    } else if (v->conn && rc != RL_ENOMEM && rc != RL_EINVAL) {
        v->state = V_LOST;      /* broken part-way through the write */
        v->lost = v->conn->fence;
    } else {
        v->state = V_FAIL;
        v->rc = rc;
    }
}

/* After run: v's connection back to the pool; unanswered is lost. */
static void finish(rl_client *c, int i, vote *v)
{
    if (v->state == V_OPEN) {
        /* The vote was decided and the grace is over: nothing was sent. */
        rl__opening_cancel(v->opening);
        rl__pool_reserved(c, c->servers[i], NULL);
        v->opening = NULL;
        v->state = V_FAIL;
        v->rc = rl__err(RL_ECONN, "%s: not connected before the others decided",
                        c->servers[i]->name);
    }
    if (v->state == V_SENT) {
        /* No answer in time: its reply must never be read as another's.
         * Not marked down for that: a node only slow (a loaded machine)
         * would then be left out of every call for a while, and with a
         * bare majority up, every call would fail. A stopped one is
         * marked down by the handshake of the next connection to it. */
        rl__conn_abandon(v->conn, "no reply in time from a Redlock master");
        v->state = V_LOST;
        v->lost = v->conn->fence;
    }
    if (v->state == V_LOST && v->lost.id < 0)
        v->lost.id = 0;        /* unknown id: nothing to kill, still unknown */
    if (v->conn)
        rl__pool_put(c, v->conn);
    v->conn = NULL;
}

/* Read the replies of the sent votes as they come, each by its deadline,
 * and make the connections being opened (V_OPEN), each sent on as soon as
 * it is made (by now + timeout); once `ok` votes decide, the others until
 * *settle_by only (set then: a grace of twice the time the decision took,
 * at least RL__GRACE_MIN_MS). */
static void collect(rl_client *c, int script, vote *v, int (*ok)(const vote *),
                    rl__fence *const *kill, long timeout, int64_t sent_ms, int64_t *settle_by)
{
    int i, n = c->nnodes;

    for (;;) {
        struct pollfd pfd[RL__NODES_MAX];
        int at[RL__NODES_MAX], np = 0, j;
        int64_t now = rl__now_ms(), until = -1;

        if (ok && *settle_by < 0 && decided(c, v, ok)) {
            long grace = 2 * (long)(now - sent_ms);
            *settle_by = now + (grace < RL__GRACE_MIN_MS ? RL__GRACE_MIN_MS : grace);
        }
        for (i = 0; i < n; i++) {
            int64_t d = v[i].deadline;
            if ((v[i].state != V_SENT && v[i].state != V_OPEN) ||
                (*settle_by >= 0 && *settle_by <= now))
                continue;
            if (v[i].state == V_OPEN) {
                if ((d = rl__opening_poll(v[i].opening, &pfd[np])) <= now) {
                    opened(c, i, &v[i], script, kill, timeout,
                           rl__opening_expire(c, v[i].opening), NULL);
                    continue;
                }
            } else if (d <= now) {
                continue;
            } else {
                pfd[np].fd = v[i].conn->ctx->fd;
                pfd[np].events = POLLIN;
                pfd[np].revents = 0;
            }
            at[np++] = i;
            if (until < 0 || d < until)
                until = d;
        }
        if (np == 0)
            return;
        if (*settle_by >= 0 && *settle_by < until)
            until = *settle_by;
        if (poll(pfd, (nfds_t)np, (int)(until - now)) < 0 && errno != EINTR)
            return;
        for (j = 0; j < np; j++) {
            vote *w = &v[at[j]];
            rl__conn *conn = NULL;
            int st;
            if (!pfd[j].revents)
                continue;
            if (w->state == V_OPEN) {
                st = rl__opening_step(c, w->opening, pfd[j].revents, &conn);
                if (st != 1)
                    opened(c, at[j], w, script, kill, timeout, st, conn);
                continue;
            }
            st = rl__conn_script_recv(w->conn, &w->resp);
            if (st == 1) {
                vote_answered(c, w, script);
            } else if (st < 0) {
                w->state = V_LOST;
                w->lost = w->conn->fence;
            }
        }
    }
}

/*
 * Send `script` with each node's args (v[i].args, state V_WAIT; V_SKIP
 * nodes are left out) to every node at once, after CLIENT KILL of kill[i]
 * where given, and read the replies as they come, each node by the
 * per-node timeout, and once `ok` votes decide, the rest for a short grace
 * only (ok NULL: every node is heard). A node without an idle connection gets a new one, made while the
 * others are sent to and read (a stopped node's handshake delays nobody),
 * and sent to as soon as it is made; one past the pool's limit is sent to
 * after the others' replies are read, on another thread's connection.
 * *sent_ms: when the first went out. Nodes not answered end V_LOST (sent)
 * or V_FAIL (not).
 */
static void run(rl_client *c, int script, long lease_ms, vote *v, rl__fence *const *kill,
                int (*ok)(const vote *), int64_t *sent_ms)
{
    long timeout = node_timeout(c, lease_ms);
    int64_t settle_by = -1;
    int i, n = c->nnodes, waiting = 0;

    *sent_ms = rl__now_ms();
    for (i = 0; i < n; i++)
        if (v[i].state == V_WAIT)
            begin(c, i, &v[i], script, kill, timeout);
    collect(c, script, v, ok, kill, timeout, *sent_ms, &settle_by);
    for (i = 0; i < n; i++) {
        int64_t now = rl__now_ms();
        long within = timeout;
        if (v[i].state != V_WAIT)
            continue;
        if (settle_by >= 0)
            within = settle_by > now ? (long)(settle_by - now) : 1;
        send_one(c, i, &v[i], script, kill, within, timeout);
        waiting = 1;
    }
    if (waiting)
        collect(c, script, v, ok, kill, timeout, *sent_ms, &settle_by);
    for (i = 0; i < n; i++)
        finish(c, i, &v[i]);
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
    run(c, RL__S_RELEASE, h->lease_ms, v, kill, released, &sent);
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

    run(c, RL__S_ACQUIRE, h->lease_ms, v, NULL, granted, sent_ms);
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
        return rl__err(RL_ECONN, "only %d of %d Redlock masters answered (%d needed): %s",
                       answered, c->nnodes, c->quorum, rl_last_error());
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
    kill_list(c, h, kill);
    for (i = 0; i < c->nnodes; i++) {
        /* A node that never granted it, or whose count is unknown, starts
         * afresh at 1 (the script restarts a field of ours at held 0). */
        v[i].state = V_WAIT;
        acquire_args(&v[i], o, h->nodes[i].count > 0 ? h->nodes[i].count : 0, h->lease_ms);
    }
    skip_leftover_nodes(c, o->e, h->tid, v);
    run(c, RL__S_ACQUIRE, h->lease_ms, v, kill, granted, &sent);
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
 * left to be dropped on the nodes in `unsure`. */
static void done_with(rl_client *c, rl__thread *t, rl__hold *h, const rl__op *o,
                      unsigned unsure, const vote *v)
{
    int i;

    rl__thread_unlink(t, h);
    pthread_mutex_lock(&c->mu);
    for (i = 0; i < c->nnodes; i++) {
        const rl__fence *f = v && v[i].state == V_LOST ? &v[i].lost : &h->nodes[i].doubt;
        if (unsure & (1u << i))
            rl__leftover_add_on(c, o->e, h->tid, o->owner, o->owner_len, f, c->servers[i]);
    }
    h->releasing = 0;
    rl__hold_remove(c, h);
    pthread_mutex_unlock(&c->mu);
}

int rl__redlock_release(rl__op *o, rl__thread *t, rl__hold *h)
{
    rl_client *c = o->c;
    rl__fence *kill[RL__NODES_MAX] = { NULL };
    vote v[RL__NODES_MAX];
    int64_t sent;
    int i, yes, last = h->count == 1, asked = 0;
    unsigned unsure = 0;

    memset(v, 0, sizeof v);
    kill_list(c, h, kill);
    if (last) {
        pthread_mutex_lock(&c->mu);
        h->releasing = 1;       /* the watchdog leaves it alone now */
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
    run(c, RL__S_RELEASE, c->command_ms * 10L, v, kill, released, &sent);
    learn(c, h, v, sent, !last && h->watchdog ? h->lease_ms : 0);
    yes = count_yes(c, v, released);
    for (i = 0; i < c->nnodes; i++) {
        asked += v[i].state != V_SKIP && v[i].state != V_FAIL;
        if (v[i].state == V_FAIL || v[i].state == V_LOST ||
            (v[i].state == V_DONE && v[i].resp.ints[0] == RL__R_MISMATCH))
            unsure |= 1u << i;
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
            done_with(c, t, h, o, unsure, v);
        return RL_OK;
    }
    flag(c, h, RL__LOST_OTHER, "no majority of the masters confirmed its release");
    if (--h->count == 0)
        done_with(c, t, h, o, unsure, v);
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
    run(c, RL__S_FORCE, c->command_ms * 10L, v, NULL, force_ok, &sent);
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
    run(c, RL__PLAIN, c->command_ms * 10L, v, NULL, NULL, &sent);
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
