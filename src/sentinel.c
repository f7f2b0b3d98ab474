/*
 * Sentinel mode: the primary is the one the sentinels name.
 *
 * At creation the sentinels of the URL are asked in turn (SENTINEL
 * get-master-addr-by-name) and the primary they name is connected to and
 * asked its ROLE. From then on the client works as with a single server,
 * whose address is asked for again when it may have changed: a connect
 * refused or a connection lost (the server layer raises c->map_suspect),
 * a write refused as READONLY (a demoted primary), a +switch-master
 * message (the subscriber listens to one sentinel), and at least every
 * RL__SENTINEL_MAX_AGE_MS. Holds taken on the old primary are then
 * renewed on the new one: kept where the failover carried our field over,
 * flagged where it did not, and in between, while no primary answers,
 * flagged at their confirmed expiry like in any outage.
 *
 * Sentinels are asked without credentials: those of the URL are the
 * primary's.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "nopipe.h"
#include "rlock_int.h"

#define RL__SENTINEL_MAX_AGE_MS 30000

static struct timeval tv_of(long ms)
{
    struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

    return tv;
}

redisContext *rl__sentinel_connect(rl_client *c, int i)
{
    const rl__endpoint *ep = &c->url.seeds[i];
    redisContext *ctx = redisConnectWithTimeout(ep->host, ep->port, tv_of(c->connect_ms));

    if (!ctx)
        return NULL;
    if (ctx->err || redisSetTimeout(ctx, tv_of(c->command_ms)) != REDIS_OK) {
        rl__err(RL_ECONN, "sentinel %s:%d: %s", ep->host, ep->port,
                ctx->errstr[0] ? ctx->errstr : "cannot connect");
        redisFree(ctx);
        return NULL;
    }
    (void)fcntl(ctx->fd, F_SETFD, FD_CLOEXEC);   /* see rl__conn_open_within */
    return ctx;
}

/* The config epoch in a SENTINEL MASTER reply; -1 when there is none. */
static long long config_epoch(const redisReply *r)
{
    size_t k;

    if (!r || r->type != REDIS_REPLY_ARRAY)
        return -1;
    for (k = 0; k + 1 < r->elements; k += 2) {
        const redisReply *f = r->element[k], *v = r->element[k + 1];
        if (f->type == REDIS_REPLY_STRING && v->type == REDIS_REPLY_STRING &&
            strcmp(f->str, "config-epoch") == 0)
            return atoll(v->str);
    }
    return -1;
}

/*
 * What one sentinel says of the master: its address and the config epoch
 * that goes with it. RL_OK, or a status (RL_EINVAL: it knows no such
 * master). The address is get-master-addr-by-name's: during a failover the
 * leader names the promoted replica there once it has the new epoch, while
 * SENTINEL MASTER still shows the old address with that new epoch. The two
 * are pipelined, so they are answered back to back.
 */
static int ask_one(rl_client *c, int i, char *host, size_t cap, int *port, long long *epoch)
{
    const char *argv[3] = { "SENTINEL", "get-master-addr-by-name", c->url.service };
    size_t lens[3] = { 8, 23, strlen(c->url.service) };
    const rl__endpoint *ep = &c->url.seeds[i];
    redisContext *ctx = rl__sentinel_connect(c, i);
    redisReply *addr = NULL, *master = NULL;
    int rc;

    if (!ctx)
        return RL_ECONN;
    *port = 0;
    *epoch = -1;
    redisAppendCommandArgv(ctx, 3, argv, lens);
    argv[1] = "MASTER";
    lens[1] = 6;
    redisAppendCommandArgv(ctx, 3, argv, lens);
    if (rl__redis_get_reply(ctx, (void **)&addr) != REDIS_OK ||
        rl__redis_get_reply(ctx, (void **)&master) != REDIS_OK) {
        rc = rl__err(RL_ECONN, "sentinel %s:%d: %s", ep->host, ep->port, ctx->errstr);
    } else if (addr->type == REDIS_REPLY_NIL) {
        rc = rl__err(RL_EINVAL, "sentinel %s:%d knows no master named '%s'", ep->host, ep->port,
                     c->url.service);
    } else if (addr->type == REDIS_REPLY_ERROR) {
        rc = rl__err(RL_EREDIS, "sentinel %s:%d: %.200s", ep->host, ep->port, addr->str);
    } else if (addr->type == REDIS_REPLY_ARRAY && addr->elements == 2 &&
               addr->element[0]->type == REDIS_REPLY_STRING &&
               addr->element[1]->type == REDIS_REPLY_STRING && addr->element[0]->len < cap &&
               atoi(addr->element[1]->str) > 0 && atoi(addr->element[1]->str) <= 65535) {
        memcpy(host, addr->element[0]->str, addr->element[0]->len + 1);
        *port = atoi(addr->element[1]->str);
        *epoch = config_epoch(master);
        rc = RL_OK;
    } else {
        rc = rl__err(RL_EPROTO, "sentinel %s:%d: an address not understood", ep->host, ep->port);
    }
    if (addr)
        freeReplyObject(addr);
    if (master)
        freeReplyObject(master);
    redisFree(ctx);
    return rc;
}

/* Ask the sentinels where the primary is, starting with the one that
 * answered last, until a majority of them answered: the answer of the
 * latest configuration (config epoch) wins, so one sentinel that has not
 * yet heard of a failover cannot send us back to the old primary. RL_OK
 * with host (cap bytes) and *port set. */
static int ask(rl_client *c, char *host, size_t cap, int *port)
{
    char h[RL__HOST_MAX];
    long long epoch, best = -2;
    int k, n = c->url.nseeds, p, answered = 0, rc = RL_ECONN, first = -1;

    for (k = 0; k < n && answered < n / 2 + 1; k++) {
        int i = (c->sentinel_last + k) % n, st = ask_one(c, i, h, sizeof h, &p, &epoch);
        if (st != RL_OK) {
            if (rc != RL_OK)
                rc = st;
            continue;
        }
        answered++;
        if (epoch > best && strlen(h) < cap) {
            best = epoch;
            memcpy(host, h, strlen(h) + 1);
            *port = p;
            rc = RL_OK;
            if (first < 0)
                first = i;
        }
    }
    if (first >= 0)
        c->sentinel_last = first;
    if (rc == RL_OK && answered < n / 2 + 1)
        return rl__err(RL_ECONN, "only %d of %d sentinels answered; %d are needed", answered, n,
                       n / 2 + 1);
    return rc;
}

/* Whether conn's server says it is a primary: 1, 0, or 1 when it will
 * not say (an ACL user without ROLE: the writes will tell). */
static int is_primary(rl__conn *conn)
{
    const char *argv[1] = { "ROLE" };
    size_t lens[1] = { 4 };
    redisReply *r = NULL;
    int yes = 1;

    if (rl__conn_call(conn, &r, 1, argv, lens) != RL_OK)
        return 0;
    if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
        r->element[0]->type == REDIS_REPLY_STRING)
        yes = strcmp(r->element[0]->str, "master") == 0;
    freeReplyObject(r);
    return yes;
}

int rl__sentinel_init(rl_client *c)
{
    char host[RL__HOST_MAX];
    rl__server *s;
    rl__conn *conn;
    int port, rc;

    c->mode = RL__MODE_SENTINEL;
    if ((rc = ask(c, host, sizeof host, &port)) != RL_OK)
        return rc == RL_ECONN ? rl__err(RL_ECONN, "no sentinel answered: %s", rl_last_error())
                              : rc;
    pthread_mutex_lock(&c->mu);
    s = rl__server_get(c, host, port);
    pthread_mutex_unlock(&c->mu);
    if (!s)
        return rl__err(RL_ENOMEM, "out of memory");
    if ((rc = rl__conn_open(c, s, &conn)) != RL_OK)
        return rc;
    if (!is_primary(conn)) {
        rl__conn_close(c, conn);
        return rl__err(RL_ECONN, "the sentinels name %s as the primary of '%s', but it is "
                       "not one (a failover under way?)", s->name, c->url.service);
    }
    conn->fresh = 0;        /* the sentinels named it just now */
    rc = rl__conn_load_scripts(c, conn);
    rl__pool_adopt(c, conn);
    if (rc != RL_OK)
        return rc;
    c->home = s;
    c->map_refresh_at = rl__now_ms() + RL__SENTINEL_MAX_AGE_MS;
    rl__log(c, RL_LOG_INFO, "rlock: primary of '%s' is %s (from the sentinels)",
            c->url.service, s->name);
    return RL_OK;
}

int rl__sentinel_refresh(rl_client *c)
{
    char host[RL__HOST_MAX];
    rl__server *s = NULL, *old;
    int port, rc;

    rc = ask(c, host, sizeof host, &port);
    pthread_mutex_lock(&c->mu);
    if (rc == RL_OK && !(s = rl__server_get(c, host, port)))
        rc = rl__err(RL_ENOMEM, "too many Redis servers (%d at most)", RL__SERVERS_MAX);
    old = c->home;
    if (s)
        c->home = s;
    pthread_mutex_unlock(&c->mu);
    if (s && s != old)
        rl__log(c, RL_LOG_WARN, "rlock: the primary of '%s' is now %s (was %s)",
                c->url.service, s->name, old->name);
    return rc;
}

int rl__sentinel_switch_parse(const char *msg, size_t len, const char *service)
{
    size_t n = strlen(service);

    /* "<name> <old-ip> <old-port> <new-ip> <new-port>" */
    return len > n && memcmp(msg, service, n) == 0 && msg[n] == ' ';
}
