/*
 * Who an owner is, for operators: the owner record and the connection name.
 *
 * A lock's field names its owner by UUID only (`<uuid>:<tid>`), which maps
 * to no host or process. Each client therefore keeps a small hash
 * `<prefix>owner:{<uuid>}` — host, pid, name, started, version; never a
 * credential — with an expiry, and names every connection it opens
 * "rlock:<name>:<host>:<pid>:<uuid8>" (CLIENT LIST). The record is written
 * at creation and by a fork child when it rebuilds, refreshed by the
 * watchdog while the client holds locks (between renewal rounds, on its
 * own connections where it has them, waiting at most RL__OWNER_REFRESH_MS
 * for the replies, so that a stopped server never delays a renewal), and deleted by a shutdown (a
 * process that dies leaves it to expire); an application thread's acquire
 * and release never wait for it. A record that is missing (expired, not
 * allowed by an ACL) only costs the operator a name: nothing decides on it.
 *
 * Lock keys are `<prefix>{<name>}`; the record's `{` comes after "owner:",
 * so a scan for `<prefix>{*` never meets it.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "conn.h"
#include "error.h"
#include "nopipe.h"
#include "owner.h"
#include "router.h"
#include "server.h"
#include "slot.h"
#include "util.h"

/* Copy s into out (cap bytes, NUL included), each byte outside
 * [A-Za-z0-9._-] replaced by '_'; at most max bytes of s. */
static void sanitize(char *out, size_t cap, const char *s, size_t max)
{
    size_t i;

    for (i = 0; s[i] && i < max && i + 1 < cap; i++)
        out[i] = strchr(RL__NAME_CHARS, s[i]) ? s[i] : '_';
    out[i] = '\0';
}

void rl__owner_identity(rl_client *c)
{
    char host[RL__CONN_HOST_MAX + 1];

    if (!c->host[0]) {
        if (gethostname(c->host, sizeof c->host) != 0)
            snprintf(c->host, sizeof c->host, "unknown");
        c->host[sizeof c->host - 1] = '\0';
    }
    c->pid = getpid();
    c->started_ms = rl__wall_ms();
    sanitize(host, sizeof host, c->host, RL__CONN_HOST_MAX);
    snprintf(c->conn_name, sizeof c->conn_name, "rlock:%s:%s:%ld:%.8s",
             c->name ? c->name : "-", host, (long)c->pid, c->uuid);
    c->owner_key_len = (size_t)snprintf(c->owner_key, sizeof c->owner_key, "%sowner:{%s}",
                                        c->prefix, c->uuid);
    c->owner_due = 0;
}

long rl__owner_ttl_ms(const rl_client *c)
{
    /* Three leases (at least a second): refreshed every third of it while
     * the client holds locks, so at most one extra call per renewal. */
    long long ttl = (long long)c->lease_ms * 3;

    if (ttl < RL__OWNER_TTL_MIN_MS)
        ttl = RL__OWNER_TTL_MIN_MS;
    return ttl > RL_TIME_MAX_MS ? RL_TIME_MAX_MS : (long)ttl;
}

/* Queue HSET and PEXPIRE of the record on conn; returns 2. */
static int append_record(rl_client *c, rl__conn *conn)
{
    char pid[24], started[24], ttl[24];
    const char *argv[12] = { "HSET", c->owner_key, "host", c->host, "pid", pid,
                             "name", c->name ? c->name : "", "started", started,
                             "version", RL_VERSION_STRING };
    size_t lens[12];
    const char *pargv[3] = { "PEXPIRE", c->owner_key, ttl };
    size_t plens[3] = { 7, c->owner_key_len, 0 };
    int i;

    rl__fmt_ll(pid, (long long)c->pid);
    rl__fmt_ll(started, c->started_ms);
    plens[2] = rl__fmt_ll(ttl, rl__owner_ttl_ms(c));
    for (i = 0; i < 12; i++)
        lens[i] = strlen(argv[i]);
    lens[1] = c->owner_key_len;
    redisAppendCommandArgv(conn->ctx, 12, argv, lens);
    redisAppendCommandArgv(conn->ctx, 3, pargv, plens);
    return 2;
}

/* Read the n replies append_record queued: RL_OK, or why not (logged). */
static int read_record(rl_client *c, rl__conn *conn, int n)
{
    redisReply *r = NULL;
    int i, rc = RL_OK;

    for (i = 0; i < n; i++) {
        if (rl__redis_get_reply(conn->ctx, (void **)&r) != REDIS_OK)
            return RL_ECONN;
        if (r->type == REDIS_REPLY_ERROR && rc == RL_OK) {
            rc = RL_EREDIS;
            rl__log(c, RL_LOG_INFO, "rlock: owner record %s not written on %s: %.200s",
                    c->owner_key, conn->server->name, r->str);
        }
        freeReplyObject(r);
    }
    return rc;
}

int rl__owner_append(rl_client *c, rl__conn *conn)
{
    return append_record(c, conn);
}

int rl__owner_read(rl_client *c, rl__conn *conn, int n)
{
    return read_record(c, conn, n);
}

/* The servers that keep the record: the one of its slot, or every Redlock
 * master. Mutex held. */
static int targets(rl_client *c, rl__server **out)
{
    int i;

    if (c->mode == RL__MODE_REDLOCK) {
        for (i = 0; i < c->nnodes; i++)
            out[i] = c->servers[i];
        return c->nnodes;
    }
    out[0] = rl__route_server(c, rl__slot(c->owner_key, c->owner_key_len));
    return out[0] ? 1 : 0;
}

void rl__owner_write(rl_client *c)
{
    rl__server *to[RL__NODES_MAX];
    rl__conn *conn;
    int i, n;

    pthread_mutex_lock(&c->mu);
    n = targets(c, to);
    /* Due again in a third of its life, whatever happens below: a record
     * refused or unreachable now is not worth a retry storm. */
    c->owner_due = rl__now_ms() + rl__owner_ttl_ms(c) / 3;
    pthread_mutex_unlock(&c->mu);
    for (i = 0; i < n; i++) {
        /* A server found down lately is not waited for. */
        if (rl__pool_get_quick(c, to[i], &conn) != RL_OK)
            continue;
        read_record(c, conn, append_record(c, conn));
        rl__pool_put(c, conn);
    }
}

/* Write what was queued on each of conn[0..n) (NULL: none) before any
 * reply is read, so that the servers answer at the same time. */
static void flush_all(rl__conn **conn, int n)
{
    int i, done;

    for (i = 0; i < n; i++) {
        if (!conn[i])
            continue;
        done = 0;
        while (!done && rl__redis_buffer_write(conn[i]->ctx, &done) == REDIS_OK)
            ;
    }
}

/* DEL the record on each of conn[0..n) (NULL: none) at once; ok[i] says
 * whether server i answered. */
static void delete_on(rl_client *c, rl__conn **conn, int n, int *ok)
{
    const char *argv[2] = { "DEL", c->owner_key };
    size_t lens[2] = { 3, c->owner_key_len };
    redisReply *r = NULL;
    int i;

    for (i = 0; i < n; i++)
        if (conn[i])
            redisAppendCommandArgv(conn[i]->ctx, 2, argv, lens);
    flush_all(conn, n);
    for (i = 0; i < n; i++) {
        ok[i] = 0;
        if (conn[i] && rl__redis_get_reply(conn[i]->ctx, (void **)&r) == REDIS_OK) {
            ok[i] = 1;
            freeReplyObject(r);
        }
    }
}

/* Pooled connections first. One that had died meanwhile (a server
 * restarted, CLIENT KILL) is replaced by a new one, made to every such
 * server at once within the client's timeouts: a graceful exit should
 * leave no record behind for an operator to wonder about. */
void rl__owner_erase(rl_client *c)
{
    rl__server *to[RL__NODES_MAX], *again[RL__NODES_MAX];
    rl__conn *conn[RL__NODES_MAX];
    char why[RL__NODES_MAX][RL__WHY_LEN];
    int i, n, m = 0, ok[RL__NODES_MAX], rc[RL__NODES_MAX];

    pthread_mutex_lock(&c->mu);
    n = targets(c, to);
    pthread_mutex_unlock(&c->mu);
    for (i = 0; i < n; i++)
        if (rl__pool_get_quick(c, to[i], &conn[i]) != RL_OK)
            conn[i] = NULL;
    delete_on(c, conn, n, ok);
    for (i = 0; i < n; i++) {
        if (!conn[i])
            continue;
        if (!ok[i])
            again[m++] = to[i];
        rl__pool_put(c, conn[i]);
    }
    if (m == 0)
        return;
    rl__conn_open_all(c, again, m, conn, rc, why);
    delete_on(c, conn, m, ok);
    for (i = 0; i < m; i++)
        if (conn[i])
            rl__conn_close(c, conn[i]);
}

void rl__owner_refresh(rl_client *c)
{
    rl__server *to[RL__NODES_MAX];
    rl__conn *conn[RL__NODES_MAX], *dead[RL__NODES_MAX];
    long wait_ms = c->renew_ms / 4 < RL__OWNER_REFRESH_MS ? c->renew_ms / 4
                                                          : RL__OWNER_REFRESH_MS;
    int64_t deadline, now = rl__now_ms();
    int i, n, ndead = 0, sent[RL__NODES_MAX], own[RL__NODES_MAX], missed = 0;

    if (wait_ms < 1)
        wait_ms = 1;
    n = targets(c, to);
    c->owner_due = now + rl__owner_ttl_ms(c) / 3;
    /* The watchdog's own connection where it has one (only this thread
     * uses it, so no application thread is kept waiting); else one of the
     * pool, idle or made within the same short time, never waited for. A
     * server found down lately is left alone. */
    for (i = 0; i < n; i++) {
        conn[i] = to[i]->wd_conn;
        own[i] = conn[i] != NULL;
        if (atomic_load(&to[i]->down_until) > now)
            conn[i] = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    for (i = 0; i < n; i++) {
        if (!conn[i] && (atomic_load(&to[i]->down_until) > now ||
                         rl__pool_get_nowait(c, to[i], wait_ms, &conn[i]) != RL_OK)) {
            conn[i] = NULL;
            own[i] = 0;
            missed = 1;
            continue;
        }
        sent[i] = append_record(c, conn[i]);
    }
    flush_all(conn, n);
    /* A stopped server must not hold up the renewals: its replies are
     * awaited a short while only, then its connection is given up. */
    deadline = rl__now_ms() + wait_ms;
    for (i = 0; i < n; i++) {
        long saved, left;
        if (!conn[i])
            continue;
        saved = conn[i]->timeout_ms;
        left = (long)(deadline - rl__now_ms());
        rl__conn_set_timeout(conn[i], left > 0 ? left : 1);
        if (read_record(c, conn[i], sent[i]) == RL_ECONN)
            missed = 1;
        else
            rl__conn_set_timeout(conn[i], saved);
        if (!own[i])
            rl__pool_put(c, conn[i]);        /* a broken one is closed */
        else if (rl__conn_broken(conn[i]))
            dead[ndead++] = conn[i];
    }
    pthread_mutex_lock(&c->mu);
    for (i = 0; i < n; i++)
        if (own[i] && conn[i] && rl__conn_broken(conn[i]) && to[i]->wd_conn == conn[i])
            to[i]->wd_conn = NULL;            /* the next round opens another */
    if (missed)
        c->owner_due = rl__now_ms() + c->renew_ms;   /* again at the next tick */
    pthread_mutex_unlock(&c->mu);
    for (i = 0; i < ndead; i++)
        rl__conn_close(c, dead[i]);
    pthread_mutex_lock(&c->mu);
}
