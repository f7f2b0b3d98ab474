/*
 * Who an owner is, for operators: the owner record and the connection name.
 *
 * A lock's field names its owner by UUID only (`<uuid>:<tid>`), which maps
 * to no host or process. Each client therefore keeps a small hash
 * `<prefix>owner:{<uuid>}` — host, pid, name, started, version; never a
 * credential — with an expiry, and names every connection it opens
 * "rlock:<name>:<host>:<pid>:<uuid8>" (CLIENT LIST). The record is written
 * at creation and by a fork child when it rebuilds, refreshed by the
 * watchdog while the client holds locks, and deleted by a shutdown (a
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

#include "rlock_int.h"

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

int rl__owner_append_setname(const rl_client *c, redisContext *ctx)
{
    const char *argv[3] = { "CLIENT", "SETNAME", c->conn_name };
    size_t lens[3] = { 6, 7, strlen(c->conn_name) };

    return redisAppendCommandArgv(ctx, 3, argv, lens) == REDIS_OK;
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
        if (redisGetReply(conn->ctx, (void **)&r) != REDIS_OK)
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

void rl__owner_erase(rl_client *c)
{
    rl__server *to[RL__NODES_MAX];
    const char *argv[2] = { "DEL", c->owner_key };
    size_t lens[2] = { 3, c->owner_key_len };
    redisReply *r = NULL;
    rl__conn *conn;
    int i, n;

    pthread_mutex_lock(&c->mu);
    n = targets(c, to);
    pthread_mutex_unlock(&c->mu);
    for (i = 0; i < n; i++) {
        if (rl__pool_get_quick(c, to[i], &conn) != RL_OK)
            continue;
        if (rl__conn_call(conn, &r, 2, argv, lens) == RL_OK)
            freeReplyObject(r);
        rl__pool_put(c, conn);
    }
}

void rl__owner_refresh(rl_client *c)
{
    rl__server *to[RL__NODES_MAX];
    rl__conn *conn, *dead[RL__NODES_MAX];
    int i, n, ndead = 0, pooled;

    n = targets(c, to);
    c->owner_due = rl__now_ms() + rl__owner_ttl_ms(c) / 3;
    for (i = 0; i < n; i++) {
        /* The watchdog's own connection when it has one there (only this
         * thread uses it), else an idle one of the pool: never a connect,
         * never a wait for an application thread's connection. */
        conn = to[i]->wd_conn;
        pooled = !conn;
        pthread_mutex_unlock(&c->mu);
        if (pooled)
            conn = rl__pool_get_idle(c, to[i]);
        if (conn && read_record(c, conn, append_record(c, conn)) == RL_ECONN && !pooled)
            rl__conn_abandon(conn, "owner record: connection lost");
        if (conn && pooled)
            rl__pool_put(c, conn);     /* a broken one is closed */
        pthread_mutex_lock(&c->mu);
        if (!conn) {
            /* Nothing idle there now: try again at the next tick. */
            c->owner_due = rl__now_ms() + c->renew_ms;
        } else if (!pooled && rl__conn_broken(conn) && to[i]->wd_conn == conn) {
            to[i]->wd_conn = NULL;     /* the next round opens another */
            dead[ndead++] = conn;
        }
    }
    pthread_mutex_unlock(&c->mu);
    for (i = 0; i < ndead; i++)
        rl__conn_close(c, dead[i]);
    pthread_mutex_lock(&c->mu);
}
