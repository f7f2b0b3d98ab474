/*
 * Changes whose reply may be lost: sending the acquire or release script,
 * resolving a lost or unreadable reply by fencing the connection that
 * carried it and reading the count back, and the fields ("leftovers") that
 * an outcome nobody could read back may have left in Redis, dropped as soon
 * as Redis answers again. The decision itself (rl__outcome) is pure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "command.h"
#include "conn.h"
#include "error.h"
#include "fair.h"
#include "holds.h"
#include "nopipe.h"
#include "outcome.h"
#include "reply.h"
#include "resp.h"
#include "router.h"
#include "rwlock.h"
#include "scripts.h"
#include "server.h"
#include "stats.h"
#include "thread.h"
#include "util.h"

/* ---- a change, sent and resolved -------------------------------------- */

void rl__op_init(rl__op *o, rl_client *c, rl__entry *e, rl__thread *t)
{
    o->c = c;
    o->e = e;
    o->owner = rl__thread_owner(t, c, &o->owner_len);
    o->deadline = -1;
    o->place_ms = 0;
    o->next = NULL;
    o->next_len = 0;
    o->side = RL__SIDE_PLAIN;
    o->intent_ms = 0;
    o->permits = 1;
}

/* Kill a connection of another server than the one we now talk to (the
 * slot moved since): best effort, that server may be gone for good. */
static void fence_elsewhere(rl_client *c, const rl__fence *dead)
{
    rl__conn *conn;
    redisReply *r = NULL;

    if (rl__pool_get(c, dead->server, &conn) != RL_OK)
        return;
    if (rl__conn_append_kill(conn, dead) && rl__redis_get_reply(conn->ctx, (void **)&r) == REDIS_OK)
        freeReplyObject(r);
    rl__pool_put(c, conn);
}

/* Fence off `dead` before the next command on conn: queued on conn when
 * both are of one server (returns 1), else done on its own server first. */
static int fence(rl_client *c, rl__conn *conn, const rl__fence *dead)
{
    if (dead->id <= 0 || !dead->server)
        return 0;
    if (dead->server == conn->server)
        return rl__conn_append_kill(conn, dead);
    fence_elsewhere(c, dead);
    return 0;
}

/* After a lost reply: fence off the connection that carried the change,
 * then read our count back from the name's server. */
static int read_count(rl__op *o, const rl__fence *dead, long long *count,
                      unsigned long long *token, rl__result *slots)
{
    const char *argv[3] = { "HGET", o->e->key, o->owner };
    size_t lens[3] = { 4, o->e->key_len, o->owner_len };
    rl__route rt;
    rl__conn *conn;
    redisReply *r = NULL;
    int rc, n, i, fenced = 0;

    rl__route_init(&rt, o->c, o->e->slot);
    for (;;) {
        if ((rc = rl__route_get(o->c, &rt, &conn)) != RL_OK)
            return rc;
        n = fenced ? 0 : fence(o->c, conn, dead);
        fenced = 1;
        redisAppendCommandArgv(conn->ctx, 3, argv, lens);
        n++;
        rc = RL_OK;
        for (i = 0; i < n; i++) {
            if (rl__redis_get_reply(conn->ctx, (void **)&r) != REDIS_OK) {
                rc = rl__err(RL_ECONN, "reading back a hold count: %s", rl__conn_error(conn));
                break;
            }
            if (i < n - 1) {
                if (r->type == REDIS_REPLY_ERROR)
                    rl__log(o->c, RL_LOG_WARN, "rlock: cannot fence a lost connection: %.200s",
                            r->str);
            } else if (r->type != REDIS_REPLY_ERROR ||
                       (rc = rl__route_error(o->c, &rt, r->str, r->len)) == RL_OK) {
                /* else redirected (RL__RETRY) or failed */
                rc = rl__reply_hold(r, count, token, slots);
            }
            freeReplyObject(r);
        }
        rl__pool_put(o->c, conn);
        if (rc != RL__RETRY)
            return rc;
    }
}

/* Send one script call to the name's server, following redirects, and on
 * a fresh connection when the pooled one turns out to have been closed by
 * the server before use (nothing was sent). *conn is left set when the
 * command was sent and its reply (in *resp, read in place) is the caller's
 * to judge; NULL when nothing ran. */
int rl__op_send(rl__op *o, int script, int nkeys, int nargs, const char **args,
                const size_t *lens, rl__conn **conn, int64_t *sent_ms, rl__resp *resp)
{
    int rc, unsent = 0;
    rl__route rt;

    rl__route_init(&rt, o->c, o->e->slot);
    if (o->deadline >= 0 && o->deadline < rt.deadline)
        rt.deadline = o->deadline;
    for (;;) {
        *conn = NULL;
        if ((rc = rl__route_get(o->c, &rt, conn)) != RL_OK) {
            *conn = NULL;
            return rc;               /* nothing was sent */
        }
        *sent_ms = rl__now_ms();
        rc = rl__conn_script_fast(o->c, *conn, script, resp, nkeys, nargs, args, lens);
        if (rc == RL_OK && resp->type == RL__RESP_ERROR) {
            /* A redirect comes before the script runs: nothing was applied. */
            rc = rl__route_error(o->c, &rt, resp->str, resp->str_len);
            if (rc == RL_OK)
                return RL_OK;        /* the script's own error, the caller's */
            rl__pool_put(o->c, *conn);
            *conn = NULL;
            if (rc != RL__RETRY)
                return rc;
            continue;
        }
        if (rc != RL__UNSENT)
            return rc;
        rl__pool_put(o->c, *conn);   /* broken: closed, and the idle ones with it */
        *conn = NULL;
        if (++unsent == 2)
            return rl__err(RL_ECONN, "Redis closed the connection before the command was "
                                     "sent (nothing was sent)");
    }
}

int rl__release_args(rl_client *c, const rl__entry *e, const char *owner, size_t owner_len,
                     const char *held, size_t held_len, const char *lease, size_t lease_len,
                     const char **args, size_t *lens)
{
    int n = 0;

    args[n] = e->key;           lens[n++] = e->key_len;
    args[n] = owner;            lens[n++] = owner_len;
    args[n] = held;             lens[n++] = held_len;
    args[n] = lease;            lens[n++] = lease_len;
    /* Without channel rights, spare Redis a PUBLISH it would refuse. */
    args[n] = rl__notice_arg(c);
    lens[n++] = 1;
    args[n] = e->channel;       lens[n++] = e->channel_len;
    return n;
}

/* Take back an acquisition that made our count `count`, on conn (the
 * release script, checked: count - 1 left). 1 when done. */
static int undo_on(rl__op *o, rl__conn *conn, long long count, long lease_ms)
{
    char heldbuf[24], leasebuf[24], placebuf[24];
    const char *args[10];
    size_t lens[10];
    rl__resp resp;
    rl__result res;
    int script = RL__S_RELEASE, nkeys, nargs;

    nargs = rl__release_args(o->c, o->e, o->owner, o->owner_len, heldbuf,
                             rl__fmt_ll(heldbuf, count), leasebuf,
                             rl__fmt_ll(leasebuf, count > 1 ? rl__redis_lease(o->c, lease_ms) : 0),
                             args, lens);
    nkeys = rl__fair_args(o->e, 1, &script, count, 0, NULL, 0, placebuf, args, lens, &nargs);
    script = rl__rw_script(o->e, script);
    return rl__conn_script_fast(o->c, conn, script, &resp, nkeys, nargs, args, lens) == RL_OK &&
           rl__resp_result(&resp, &res) == RL_OK && res.code == RL__R_DONE &&
           res.value == count - 1;
}

/*
 * An acquisition applied (our count is now `count`): wait until the
 * replicas have it. When too few do in time, or Redis refuses the WAIT,
 * take it back on the same connection and say so (RL_EREPLICA, or the
 * refusal's status); when that cannot be read back either, RL_ECONN with
 * *unresolved set (the outcome is then unknown). Gives conn back.
 */
static int replicas_or_undo(rl__op *o, rl__conn *conn, long long count, long lease_ms,
                            rl__fence *unresolved)
{
    rl_client *c = o->c;
    char why[256];
    int rc = rl__conn_wait_replicas(conn, c->wait_replicas, c->wait_replicas_ms);

    if (rc == RL_OK) {
        rl__pool_put(c, conn);
        return RL_OK;
    }
    snprintf(why, sizeof why, "%s", rl_last_error());
    /* Answered, and not enough (or refused): the connection is in step. */
    if (!rl__conn_broken(conn) && undo_on(o, conn, count, lease_ms)) {
        rl__pool_put(c, conn);
        return rl__err(rc == RL_ECONN || rc == RL_EPROTO ? RL_EREPLICA : rc,
                       "taken, then given back: %s", why);
    }
    /* The WAIT or the undo broke off: whether our count is `count` or one
     * less, nobody can say. */
    *unresolved = conn->fence;
    if (unresolved->id < 0)
        unresolved->id = 0;
    rl__pool_put(c, conn);
    return rl__err(RL_ECONN, "outcome unknown: the replicas did not acknowledge (%s) and it "
                   "could not be taken back", why);
}

/* A lost reply read back as applied, with wait_replicas on: WAIT proves
 * nothing on the connection that read it back (it wrote nothing), so
 * nobody can tell whether the replicas have it. Take it back and say so. */
static int undo_unacknowledged(rl__op *o, long long count, long lease_ms,
                               rl__fence *unresolved)
{
    rl__route rt;
    rl__conn *conn;
    int rc;

    rl__route_init(&rt, o->c, o->e->slot);
    if ((rc = rl__route_get(o->c, &rt, &conn)) == RL_OK) {
        if (undo_on(o, conn, count, lease_ms)) {
            rl__pool_put(o->c, conn);
            return rl__err(RL_EREPLICA, "taken (a lost reply, read back), then given back: "
                           "the replicas' acknowledgement cannot be known");
        }
        *unresolved = conn->fence;
        rl__pool_put(o->c, conn);
    } else {
        unresolved->id = -1;
    }
    if (unresolved->id < 0)
        unresolved->id = 0;
    return rl__err(RL_ECONN, "outcome unknown: a lost reply was read back as applied, and it "
                   "could not be taken back for want of the replicas' acknowledgement");
}

int rl__outcome(int script, long long held, long long count, rl__result *res)
{
    /* The count the change produces when it was applied. */
    long long done = script == RL__S_ACQUIRE ? held + 1 : held > 0 ? held - 1 : 0;

    if (count == done) {
        res->code = RL__R_DONE;
        res->value = count;
        return RL_OK;
    }
    if (count == held)
        return RL__RETRY;
    res->code = count == 0 ? RL__R_NOTOWNER : RL__R_MISMATCH;
    res->value = count;
    return RL_OK;
}

/* A change's keys and arguments, and the numbers they point to. */
typedef struct {
    char held[24], lease[24], since[24], delay[24], place[24], intent[24], size[24], k[24];
    const char *args[10];
    size_t lens[10];
    int nkeys, nargs;
    int script;                 /* the script sent (the fair one for a fair name) */
} change_args;

/* The keys and arguments of the acquire or release script for a hold of
 * `held`. */
static void build_args(const rl__op *o, int script, long long held, long lease_ms,
                       change_args *a)
{
    const char **args = a->args;
    size_t *lens = a->lens;
    int nargs, nkeys = 1;
    size_t heldlen = rl__fmt_ll(a->held, held);
    /* Redis keeps a lease plus the lock-delay (scripts.c); 0 stays 0. */
    size_t leaselen = rl__fmt_ll(a->lease, lease_ms > 0 ? rl__redis_lease(o->c, lease_ms) : 0);

    a->script = script;
    if (script != RL__S_ACQUIRE) {
        nargs = rl__release_args(o->c, o->e, o->owner, o->owner_len, a->held, heldlen,
                                 a->lease, leaselen, args, lens);
    } else {
        args[0] = o->e->key;
        lens[0] = o->e->key_len;
        if (o->c->fencing && held == 0) {
            /* Only a new hold takes a token: a reentry declares one key, and
             * is not refused (TRYAGAIN) while its Cluster slot migrates. */
            args[nkeys] = o->e->fence_key;
            lens[nkeys++] = o->e->fence_key_len;
        }
        nargs = nkeys;
        args[nargs] = a->lease;     lens[nargs++] = leaselen;
        args[nargs] = o->owner;     lens[nargs++] = o->owner_len;
        args[nargs] = a->held;      lens[nargs++] = heldlen;
        /* A new hold: "held since", for operators (scripts.c). */
        if (held == 0 || o->c->fencing || o->c->delay_ms || o->e->family == RL__FAM_RW ||
            o->e->family == RL__FAM_SEM) {
            args[nargs] = a->since;
            lens[nargs++] = rl__fmt_ll(a->since, held == 0 ? rl__wall_ms() : 0);
        }
        /* The rest only when used: each argument costs Redis a little. A
         * read-write name's client has neither fencing nor a delay. */
        if (o->e->family == RL__FAM_RW) {
            /* The read-write acquire: since always, the side, the intent. */
            args[nargs] = o->side == RL__SIDE_READ ? "r" : "w";
            lens[nargs++] = 1;
            args[nargs] = a->intent;
            lens[nargs++] = rl__fmt_ll(a->intent, o->intent_ms);
        } else if (o->e->family == RL__FAM_SEM) {
            /* The semaphore's: since always, N, the permits a new hold takes. */
            args[nargs] = a->size;
            lens[nargs++] = rl__fmt_ll(a->size, o->e->permits);
            args[nargs] = a->k;
            lens[nargs++] = rl__fmt_ll(a->k, o->permits);
        } else if (o->c->fencing || o->c->delay_ms) {
            args[nargs] = o->c->fencing ? "1" : "0";
            lens[nargs++] = 1;
            args[nargs] = a->delay;
            lens[nargs++] = rl__fmt_ll(a->delay, o->c->delay_ms);
        }
    }

    /* A fair name: the same change, by the fair script (fair.c). (A fair
     * lock's client has neither fencing nor a lock-delay: plain layout.) */
    a->nkeys = rl__fair_args(o->e, nkeys, &a->script, held, o->place_ms, o->next, o->next_len,
                             a->place, args, lens, &nargs);
    a->nargs = nargs;
}

/* The reply to a change was lost or not understood: read the count back
 * and judge the outcome by it; when even that fails, RL_ECONN with
 * *unresolved set from dead, the connection to fence off. */
static int read_back_outcome(rl__op *o, int script, long long held, long lease_ms,
                             rl__fence *dead, rl__result *res, rl__fence *unresolved)
{
    long long count;
    unsigned long long token;
    int rc;

    if ((rc = read_count(o, dead, &count, &token, res)) != RL_OK) {
        RL__STAT_INC(o->c, replies_unresolved);
        *unresolved = *dead;
        if (unresolved->id < 0)
            unresolved->id = 0;   /* unknown id: nothing to kill, still unresolved */
        return rl__err(RL_ECONN, "outcome unknown: the reply was lost and the count could "
                                 "not be read back (%s)", rl_last_error());
    }
    RL__STAT_INC(o->c, replies_resolved);
    rc = rl__outcome(script, held, count, res);
    res->token = token;
    if (rc == RL_OK && script == RL__S_ACQUIRE && res->code == RL__R_DONE &&
        o->c->wait_replicas)
        return undo_unacknowledged(o, res->value, lease_ms, unresolved);
    return rc;
}

/*
 * Run the acquire or release script for a hold of `held`. A lost or
 * unreadable reply is resolved by reading the count back (*read_back is
 * then set): the count success would produce means applied, the count we
 * started from means not applied (RL__RETRY). When even that fails,
 * RL_ECONN with *unresolved set to the connection to fence off before
 * trying again (unresolved->id is -1 otherwise).
 */
static int run_change(rl__op *o, int script, long long held, long lease_ms, int64_t *sent_ms,
                      rl__result *res, rl__fence *unresolved, int *read_back)
{
    change_args a;
    rl__conn *conn;
    rl__resp resp;
    rl__fence dead;
    int rc;

    build_args(o, script, held, lease_ms, &a);
    unresolved->id = -1;
    unresolved->addr[0] = '\0';
    *read_back = 0;
    rc = rl__op_send(o, rl__rw_script(o->e, a.script), a.nkeys, a.nargs, a.args, a.lens, &conn,
                     sent_ms, &resp);
    if (!conn)
        return rc;               /* nothing was sent */
    dead.id = -1;
    dead.addr[0] = '\0';
    if (rc == RL_OK) {
        rc = rl__resp_result(&resp, res);
        if (rc == RL_OK && script == RL__S_ACQUIRE && res->code == RL__R_DONE &&
            o->c->wait_replicas)
            return replicas_or_undo(o, conn, res->value, lease_ms, unresolved);
        rl__pool_put(o->c, conn);
        /* A reply of a shape no script of ours gives: it may have run. The
         * connection is still in step, nothing to fence. */
        if (rc != RL_EPROTO)
            return rc;
    } else {
        if (rc == RL_ECONN || rc == RL_EPROTO)
            dead = conn->fence;
        rl__pool_put(o->c, conn);
        if (rc != RL_ECONN && rc != RL_EPROTO)
            return rc;
    }

    rl__log(o->c, RL_LOG_WARN, "rlock: reply to a change of %.*s lost or not understood (%s); "
            "reading the hold count back",
            (int)(o->e->key_len > 200 ? 200 : o->e->key_len), o->e->key, rl_last_error());
    *read_back = 1;
    return read_back_outcome(o, script, held, lease_ms, &dead, res, unresolved);
}

int rl__read_back(rl__op *o, long long held, long lease_ms, rl__fence *dead, rl__result *res,
                  rl__fence *unresolved)
{
    unresolved->id = -1;
    unresolved->addr[0] = '\0';
    return read_back_outcome(o, RL__S_ACQUIRE, held, lease_ms, dead, res, unresolved);
}

/* The thread's preset for this change, used (NULL: none, send it). */
static rl__preset *preset_for(const rl__op *o, int script, long long held)
{
    rl__thread *t = rl__thread_self();
    rl__preset *p = t->preset;

    if (!p || script != RL__S_ACQUIRE || p->entry != o->e || p->held != held)
        return NULL;
    p->entry = NULL;
    t->preset = NULL;
    return p;
}

int rl__change(rl__op *o, int script, long long held, long lease_ms, int64_t *sent_ms,
               rl__result *res, rl__fence *unresolved, int *read_back)
{
    rl__preset *p = preset_for(o, script, held);
    int rc, attempt;

    if (p) {
        *sent_ms = p->sent;
        *res = p->res;
        unresolved->id = -1;
        unresolved->addr[0] = '\0';
        if (p->unresolved)
            *unresolved = *p->unresolved;
        *read_back = p->unresolved != NULL;
        return p->rc;
    }

    for (attempt = 0; attempt < 3; attempt++) {
        rc = run_change(o, script, held, lease_ms, sent_ms, res, unresolved, read_back);
        if (rc != RL__RETRY)
            return rc;
    }
    return rl__err(RL_ECONN, "the change was lost three times in a row");
}

/* ---- leftovers: our field may still be in Redis ------------------------- */

rl__leftover *rl__leftover_add(rl_client *c, rl__entry *e, uint64_t tid, const char *owner,
                               size_t owner_len, const rl__fence *fence)
{
    int i;

    if (c->mode != RL__MODE_REDLOCK)
        return rl__leftover_add_on(c, e, tid, owner, owner_len, fence, NULL);
    /* Redlock: the field may be on any node. */
    for (i = 0; i < c->nnodes; i++)
        rl__leftover_add_on(c, e, tid, owner, owner_len, fence, c->servers[i]);
    return NULL;
}

rl__leftover *rl__leftover_add_on(rl_client *c, rl__entry *e, uint64_t tid, const char *owner,
                                  size_t owner_len, const rl__fence *fence, rl__server *node)
{
    rl__leftover *lo = calloc(1, sizeof *lo);

    if (!lo)
        return NULL;    /* the field then simply runs out with its lease */
    lo->server = node;
    lo->entry = e;
    lo->tid = tid;
    memcpy(lo->owner, owner, owner_len + 1);
    lo->owner_len = owner_len;
    lo->fence = *fence;
    lo->next = c->leftovers;
    c->leftovers = lo;
    e->leftovers++;
    rl__keeper_poke(c);
    return lo;
}

void rl__append_drop(rl__conn *conn, rl_client *c, const rl__entry *e, const char *owner,
                     size_t owner_len, int requeue)
{
    /* held 0 (the whole field), lease untouched; a notice where the name
     * comes free, for the waiters of other processes (Redlock: also where
     * it is free already, for those that listen to this node). A hold with
     * a lock-delay leaves its tombstone instead (scripts.c). */
    const char *argv[13] = { "EVALSHA", NULL, NULL };
    size_t lens[13] = { 7, 40, 1 };
    char placebuf[24];
    int script = rl__rw_script(e, RL__S_RELEASE), nkeys;
    int nargs = rl__release_args(c, e, owner, owner_len, "0", 1, "0", 1, argv + 3, lens + 3);

    nkeys = rl__fair_args(e, 1, &script, 0, 0, requeue ? owner : NULL, owner_len, placebuf,
                          argv + 3, lens + 3, &nargs);
    argv[1] = c->sha[script];
    argv[2] = nkeys == 3 ? "3" : "1";
    redisAppendCommandArgv(conn->ctx, 3 + nargs, argv, lens);
}

/* Fence off the connection that carried the unknown change, then remove
 * our field whatever its count. Never touches another owner's field. */
int rl__leftover_drop(rl_client *c, const rl__leftover *lo, long within_ms, rl__fence *late)
{
    rl__route rt;
    rl__conn *conn;
    redisReply *r = NULL;
    rl__result res;
    int rc, n, i, fenced = 0;

    late->id = -1;
    late->addr[0] = '\0';
    late->server = NULL;
    rl__route_init(&rt, c, lo->entry->slot);
    rt.pin = lo->server;
    rt.within_ms = within_ms;
    for (;;) {
        long saved;
        if ((rc = rl__route_get(c, &rt, &conn)) != RL_OK)
            return rc;
        saved = conn->timeout_ms;
        if (within_ms > 0)
            rl__conn_set_timeout(conn, within_ms);
        n = fenced ? 0 : fence(c, conn, &lo->fence);
        fenced = 1;
        rl__append_drop(conn, c, lo->entry, lo->owner, lo->owner_len,
                        atomic_load(&lo->requeue));
        n++;
        for (i = 0; i < n; i++) {
            if (rl__redis_get_reply(conn->ctx, (void **)&r) != REDIS_OK) {
                rc = rl__err(RL_ECONN, "dropping a leftover field: %s", rl__conn_error(conn));
                /* The drop may still run late: that connection must be fenced too. */
                *late = conn->fence;
                if (late->id < 0)
                    late->id = 0;
                break;
            }
            if (i < n - 1 && r->type == REDIS_REPLY_ERROR) {
                rl__log(c, RL_LOG_WARN, "rlock: cannot fence a lost connection: %.200s", r->str);
            } else if (i == n - 1 && r->type == REDIS_REPLY_ERROR &&
                       (rc = rl__route_error(c, &rt, r->str, r->len)) != RL_OK) {
                /* redirected (RL__RETRY), or failed */
            } else if (i == n - 1) {
                rc = rl__reply_result(r, &res);
                if (rc == RL_EREDIS && strstr(rl_last_error(), "NOSCRIPT"))
                    rc = rl__conn_load_scripts(c, conn) == RL_OK ? RL_ECONN : rc;  /* retried later */
            }
            freeReplyObject(r);
        }
        if (within_ms > 0 && !rl__conn_broken(conn))
            rl__conn_set_timeout(conn, saved);
        rl__pool_put(c, conn);
        if (rc != RL__RETRY)
            return rc;
    }
}

void rl__leftover_done(rl_client *c, rl__leftover *lo, int rc, const rl__fence *late)
{
    rl__leftover **pp;

    lo->claimed = 0;
    pthread_cond_broadcast(&c->leftover_cond);
    if (rc != RL_OK) {
        /* Keep it; and a drop lost on the way is one more to fence. */
        rl__leftover *more = late->id < 0 ? NULL :
            rl__leftover_add_on(c, lo->entry, lo->tid, lo->owner, lo->owner_len, late,
                                lo->server);
        if (more)
            atomic_store(&more->requeue, atomic_load(&lo->requeue));
        return;
    }
    for (pp = &c->leftovers; *pp; pp = &(*pp)->next) {
        if (*pp == lo) {
            *pp = lo->next;
            break;
        }
    }
    lo->entry->leftovers--;
    rl__entry_maybe_free(c, lo->entry);
    free(lo);
}

/*
 * Before the thread takes the name again: drop what an earlier, unresolved
 * change of this thread may have left, so that a late command on the old
 * connection cannot act on the new hold. Mutex held; dropped while I/O runs.
 */
int rl__leftovers_settle(rl_client *c, rl__entry *e, uint64_t tid, int64_t deadline)
{
    rl__leftover *lo;
    int64_t until = -1;
    int rc;

    if (c->mode == RL__MODE_REDLOCK) {
        /* One try each: a node that keeps a leftover is left out of the
         * next acquisition (rl__redlock_acquire), so one node down does
         * not stop the name from being taken on the others. */
        int tries;
        for (tries = 0; tries < c->nnodes; tries++) {
            rl__leftover *pick = NULL;
            for (lo = c->leftovers; lo; lo = lo->next)
                if (lo->entry == e && lo->tid == tid && !lo->claimed &&
                    atomic_load(&lo->server->down_until) <= rl__now_ms())
                    pick = lo;      /* the oldest */
            if (!pick)
                break;
            if (rl__leftover_try(c, pick) != RL_OK)
                break;
        }
        return atomic_load(&c->closing) ? rl__err(RL_ECANCELED, "the client is shutting down")
                                        : RL_OK;
    }
    while ((lo = rl__leftover_find(c, e, tid))) {
        if (lo->claimed) {
            /* The keeper is dropping it right now: one round trip, which
             * even a call that must not wait (deadline now) waits out, as
             * it would its own drop. */
            if (atomic_load(&c->closing))
                return rl__err(RL_ECANCELED, "the client is shutting down");
            if (deadline >= 0 && until < 0) {
                until = rl__now_ms() + c->connect_ms + 2 * c->command_ms;
                if (deadline > until)
                    until = deadline;
            }
            if (until >= 0 && rl__now_ms() >= until)
                return rl__err(RL_ECONN, "an earlier change of this thread is being cleaned up");
            rl__cond_wait_until(&c->leftover_cond, &c->mu, until);
            continue;
        }
        if ((rc = rl__leftover_try(c, lo)) != RL_OK)
            return rc;
    }
    return RL_OK;
}

rl__leftover *rl__leftover_find(rl_client *c, const rl__entry *e, uint64_t tid)
{
    rl__leftover *lo;

    for (lo = c->leftovers; lo; lo = lo->next)
        if (lo->entry == e && lo->tid == tid)
            return lo;
    return NULL;
}

int rl__leftover_try(rl_client *c, rl__leftover *lo)
{
    rl__fence late;
    int rc;

    lo->claimed = 1;
    pthread_mutex_unlock(&c->mu);
    rc = rl__leftover_drop(c, lo, 0, &late);
    pthread_mutex_lock(&c->mu);
    rl__leftover_done(c, lo, rc, &late);
    return rc;
}

void rl__leftovers_free(rl_client *c)
{
    while (c->leftovers) {
        rl__leftover *lo = c->leftovers;
        c->leftovers = lo->next;
        free(lo);
    }
}
