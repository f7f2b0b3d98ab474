/*
 * One change on the Redlock nodes at once (rl__fanout_run): it goes to the
 * nodes together and their replies are read as they come, each within a
 * per-node timeout; a node without an idle connection gets a new one
 * meanwhile, connected and handshaken without blocking, and is sent to
 * once it is made. Once the majority has decided, the stragglers get a
 * short grace and no more, so a node that is down or stopped delays
 * nobody. What the votes mean for a hold is redlock.c's.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "command.h"
#include "conn.h"
#include "error.h"
#include "fanout.h"
#include "reply.h"
#include "resp.h"
#include "server.h"
#include "util.h"

#define RL__GRACE_MIN_MS 10     /* stragglers after the majority decided: at least */

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

void rl__fanout_run(rl_client *c, int script, long lease_ms, vote *v,
                    rl__fence *const *kill, int (*ok)(const vote *), int64_t *sent_ms)
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
