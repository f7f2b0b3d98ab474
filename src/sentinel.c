/*
 * Sentinel mode: the primary is the one the sentinels name.
 *
 * At creation the sentinels of the URL are asked, all at once (SENTINEL
 * get-master-addr-by-name; one stopped sentinel must not cost the others'
 * answers) and the primary they name is connected to and
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
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "command.h"
#include "conn.h"
#include "error.h"
#include "nopipe.h"
#include "router.h"
#include "sentinel.h"
#include "server.h"
#include "tls.h"
#include "topology.h"
#include "url.h"
#include "util.h"

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
        rl__redis_free(ctx);
        return NULL;
    }
    (void)fcntl(ctx->fd, F_SETFD, FD_CLOEXEC);   /* see rl__conn_open_within */
    if (rl__tls_on(c)) {
        char who[RL__HOST_MAX + 32];
        snprintf(who, sizeof who, "sentinel %s:%d", ep->host, ep->port);
        if (rl__tls_connect(c, ep->host, ctx->fd, who) != RL_OK) {
            rl__redis_free(ctx);
            return NULL;
        }
    }
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

/* One sentinel being asked (ask()): its connection, its replies. */
typedef struct sn_ask {
    redisContext *ctx;          /* NULL: done with it */
    rl__tls_link *tls;          /* TLS handshake under way (connected once POLLOUT) */
    short tls_events;           /* ...waiting for these */
    int written;                /* both commands are out */
    redisReply *addr, *master;
    int rc;                     /* RL_OK once it answered well */
    char host[RL__HOST_MAX];
    int port;
    long long epoch;
} sn_ask;

/*
 * What one sentinel says of the master: its address and the config epoch
 * that goes with it, into a->host, ->port and ->epoch. RL_OK, or a status
 * (RL_EINVAL: it knows no such master). The address is
 * get-master-addr-by-name's: during a failover the leader names the
 * promoted replica there once it has the new epoch, while SENTINEL MASTER
 * still shows the old address with that new epoch. The two are
 * pipelined, so they are answered back to back.
 */
static int judge_one(rl_client *c, int i, sn_ask *a)
{
    const rl__endpoint *ep = &c->url.seeds[i];
    const redisReply *addr = a->addr;

    if (addr->type == REDIS_REPLY_NIL)
        return rl__err(RL_EINVAL, "sentinel %s:%d knows no master named '%s'", ep->host,
                       ep->port, c->url.service);
    if (addr->type == REDIS_REPLY_ERROR)
        return rl__err(RL_EREDIS, "sentinel %s:%d: %.200s", ep->host, ep->port, addr->str);
    if (addr->type == REDIS_REPLY_ARRAY && addr->elements == 2 &&
        addr->element[0]->type == REDIS_REPLY_STRING &&
        addr->element[1]->type == REDIS_REPLY_STRING &&
        addr->element[0]->len < sizeof a->host && atoi(addr->element[1]->str) > 0 &&
        atoi(addr->element[1]->str) <= 65535) {
        memcpy(a->host, addr->element[0]->str, addr->element[0]->len + 1);
        a->port = atoi(addr->element[1]->str);
        a->epoch = config_epoch(a->master);
        return RL_OK;
    }
    return rl__err(RL_EPROTO, "sentinel %s:%d: an address not understood", ep->host, ep->port);
}

/* Open a connection to sentinel i without waiting for it, the two
 * questions queued. */
static void ask_begin(rl_client *c, int i, sn_ask *a)
{
    const char *argv[3] = { "SENTINEL", "get-master-addr-by-name", c->url.service };
    size_t lens[3] = { 8, 23, strlen(c->url.service) };
    const rl__endpoint *ep = &c->url.seeds[i];

    memset(a, 0, sizeof *a);
    a->rc = RL_ECONN;
    a->epoch = -1;
    a->ctx = redisConnectNonBlock(ep->host, ep->port);
    if (!a->ctx || a->ctx->err) {
        a->rc = rl__err(RL_ECONN, "sentinel %s:%d: %s", ep->host, ep->port,
                        a->ctx ? a->ctx->errstr : "out of memory");
        rl__redis_free(a->ctx);
        a->ctx = NULL;
        return;
    }
    (void)fcntl(a->ctx->fd, F_SETFD, FD_CLOEXEC);   /* see rl__conn_open_within */
    if (rl__tls_on(c)) {
        if ((a->rc = rl__tls_start(c, ep->host, a->ctx->fd, &a->tls)) != RL_OK) {
            rl__redis_free(a->ctx);
            a->ctx = NULL;
            return;
        }
        a->rc = RL_ECONN;
        a->tls_events = POLLOUT;    /* the connect first */
    }
    redisAppendCommandArgv(a->ctx, 3, argv, lens);
    argv[1] = "MASTER";
    lens[1] = 6;
    redisAppendCommandArgv(a->ctx, 3, argv, lens);
}

/* Sentinel i's socket is ready (revents): write what is queued, read what
 * came; once both replies are in, judge them and let the connection go. */
static void ask_step(rl_client *c, int i, sn_ask *a, short revents)
{
    const rl__endpoint *ep = &c->url.seeds[i];
    int ok = 1;

    if (a->tls) {
        char who[RL__HOST_MAX + 32];
        int st;
        snprintf(who, sizeof who, "sentinel %s:%d", ep->host, ep->port);
        if ((st = rl__tls_step(a->tls, who, &a->tls_events)) == 1)
            return;
        if (st != 0) {
            a->rc = st;
            rl__tls_abort(a->tls);
            a->tls = NULL;
            rl__redis_free(a->ctx);
            a->ctx = NULL;
            return;
        }
        a->tls = NULL;  /* in place: the descriptor's now */
        revents = POLLOUT;
    }
    if (!a->written && (revents & (POLLOUT | POLLERR | POLLHUP)))
        ok = rl__redis_buffer_write(a->ctx, &a->written) == REDIS_OK;
    if (ok && (revents & (POLLIN | POLLERR | POLLHUP)))
        ok = rl__redis_buffer_read(a->ctx) == REDIS_OK;
    if (ok && !a->addr)
        ok = rl__redis_get_reply(a->ctx, (void **)&a->addr) == REDIS_OK;
    if (ok && a->addr && !a->master)
        ok = rl__redis_get_reply(a->ctx, (void **)&a->master) == REDIS_OK;
    if (!ok && rl__redis_tls_error(a->ctx))
        a->rc = rl__err(RL_ETLS, "%s", rl__redis_tls_error(a->ctx));
    else if (!ok)
        a->rc = rl__err(RL_ECONN, "sentinel %s:%d: %s", ep->host, ep->port, a->ctx->errstr);
    else if (a->master)
        a->rc = judge_one(c, i, a);
    if (!ok || a->master) {
        rl__redis_free(a->ctx);
        a->ctx = NULL;
    }
}

static void ask_end(sn_ask *a)
{
    rl__tls_abort(a->tls);
    rl__redis_free(a->ctx);
    if (a->addr)
        freeReplyObject(a->addr);
    if (a->master)
        freeReplyObject(a->master);
}

/* Wait for the sentinels' answers until `need` answered well, none is
 * left to wait for, or the deadline; the number that answered well. */
static int ask_wait(rl_client *c, sn_ask *a, int n, int need, int64_t deadline)
{
    for (;;) {
        struct pollfd pfd[RL__SEEDS_MAX];
        int at[RL__SEEDS_MAX], np = 0, ok = 0, i, j;
        int64_t now = rl__now_ms();

        for (i = 0; i < n; i++) {
            ok += a[i].rc == RL_OK && !a[i].ctx;
            if (!a[i].ctx)
                continue;
            pfd[np].fd = a[i].ctx->fd;
            pfd[np].events = a[i].tls ? a[i].tls_events
                                      : (short)(POLLIN | (a[i].written ? 0 : POLLOUT));
            pfd[np].revents = 0;
            at[np++] = i;
        }
        if (ok >= need || np == 0 || now >= deadline)
            return ok;
        if (poll(pfd, (nfds_t)np, (int)(deadline - now)) < 0 && errno != EINTR)
            return ok;
        for (j = 0; j < np; j++)
            if (pfd[j].revents)
                ask_step(c, at[j], &a[at[j]], pfd[j].revents);
    }
}

/* Ask every sentinel at once where the primary is, until a majority of
 * them answered (one that does not answer costs no more than the others'
 * answers take): the answer of the latest configuration (config epoch)
 * wins, so one sentinel that has not yet heard of a failover cannot send
 * us back to the old primary; among equals, the first from the one that
 * answered last. RL_OK with host (cap bytes) and *port set. */
static int ask(rl_client *c, char *host, size_t cap, int *port)
{
    sn_ask a[RL__SEEDS_MAX];
    long long best = -2;
    int k, n = c->url.nseeds, need = n / 2 + 1, answered, rc = RL_ECONN, first = -1;

    for (k = 0; k < n; k++)
        ask_begin(c, k, &a[k]);
    answered = ask_wait(c, a, n, need, rl__now_ms() + c->connect_ms + c->command_ms);
    for (k = 0; k < n; k++) {
        int i = (c->sentinel_last + k) % n;
        if (a[i].rc != RL_OK || a[i].ctx) {
            if (rc != RL_OK)
                rc = a[i].ctx ? rl__err(RL_ECONN, "sentinel %s:%d did not answer in time",
                                        c->url.seeds[i].host, c->url.seeds[i].port)
                              : a[i].rc;
            continue;
        }
        if (a[i].epoch > best && strlen(a[i].host) < cap) {
            best = a[i].epoch;
            memcpy(host, a[i].host, strlen(a[i].host) + 1);
            *port = a[i].port;
            rc = RL_OK;
            if (first < 0)
                first = i;
        }
    }
    for (k = 0; k < n; k++)
        ask_end(&a[k]);
    if (first >= 0)
        c->sentinel_last = first;
    if (rc == RL_OK && answered < need)
        return rl__err(RL_ECONN, "only %d of %d sentinels answered; %d are needed", answered, n,
                       need);
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
