/*
 * The subscriber: one thread per client, with one connection in subscribed
 * mode per server that has waiters (single mode: the one server; Cluster:
 * each master, with sharded SSUBSCRIBE on the master that owns the
 * channel's slot). It keeps one subscription per lock name that has local
 * waiters, and turns release notices into a wake-up of the head of that
 * name's local queue. Other threads ask for (un)subscriptions by setting an
 * entry's sub_want and poking an eventfd; the thread reconciles.
 *
 * When a connection breaks, or a slot moves away from its master (which
 * then unsubscribes us), the waiters concerned are woken (they ask Redis
 * again and wait again, bounded by the holder's lease) and the
 * subscriptions are made anew where the slot now lives.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "client.h"
#include "conn.h"
#include "error.h"
#include "fair.h"
#include "holds.h"
#include "nopipe.h"
#include "router.h"
#include "rwlock.h"
#include "sentinel.h"
#include "server.h"
#include "stats.h"
#include "subscriber.h"
#include "tls.h"
#include "topology.h"
#include "util.h"

#define RL__PING_MS 1000

static void *sub_main(void *arg);

int rl__sub_ensure(rl_client *c)
{
    if (c->sub_started)
        return RL_OK;
    if (c->sub_efd < 0) {
        c->sub_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (c->sub_efd < 0)
            return rl__err(RL_ENOMEM, "eventfd: %s", strerror(errno));
    }
    if (pthread_create(&c->sub_thread, NULL, sub_main, c) != 0)
        return rl__err(RL_ENOMEM, "cannot start the subscriber thread");
    c->sub_started = 1;
    return RL_OK;
}

void rl__sub_stop(rl_client *c)
{
    int started;

    pthread_mutex_lock(&c->mu);
    c->stopping = 1;
    started = c->sub_started;
    rl__sub_poke(c);
    pthread_mutex_unlock(&c->mu);
    if (started)
        pthread_join(c->sub_thread, NULL);
    pthread_mutex_lock(&c->mu);
    c->sub_started = 0;
    if (c->sub_efd >= 0)
        close(c->sub_efd);
    c->sub_efd = -1;
    pthread_mutex_unlock(&c->mu);
}

/* The subscriber's connection to one server. */
typedef struct sub_state {
    rl_client *c;
    rl__server *srv;
    redisContext *ctx;
    int64_t retry_at;
    long backoff;
    int64_t last_io;
    int64_t ping_sent;          /* 0: no PING outstanding */
    int lost;                   /* the connection was lost: log when it is back */
} sub_state;

/* Apply fn to every entry (mutex held). */
#define FOR_EACH_ENTRY(c, e) \
    for (size_t i_ = 0; i_ < (c)->nbuckets; i_++) \
        for (rl__entry *e = (c)->buckets[i_], *n_ = e ? e->next : NULL; e; \
             e = n_, n_ = e ? e->next : NULL)

void rl__sub_after_fork(rl_client *c)
{
    int i;

    /* The thread does not exist here; its connections may be mid-use. */
    c->sub_started = 0;
    if (c->sub_efd >= 0)
        close(c->sub_efd);
    c->sub_efd = -1;
    for (i = 0; i < RL__SERVERS_MAX; i++) {
        if (c->sub_ctx[i] && c->sub_ctx[i]->fd >= 0)
            rl__tls_close(c->sub_ctx[i]->fd);
        c->sub_ctx[i] = NULL;
    }
    if (c->sub_switch && c->sub_switch->fd >= 0)
        rl__tls_close(c->sub_switch->fd);
    c->sub_switch = NULL;
    FOR_EACH_ENTRY(c, e) {
        e->sub_want = 0;
        e->linger_until = 0;
        e->sub_state = RL__SUB_NONE;
    }
}

/* The server a wanted entry's notices come from now. Mutex held. */
static int link_of(rl_client *c, const rl__entry *e)
{
    return rl__route_server(c, e->slot)->index;
}

static void drop_connection(sub_state *st)
{
    rl_client *c = st->c;

    FOR_EACH_ENTRY(c, e) {
        if (e->sub_state == RL__SUB_NONE || e->sub_link != st->srv->index)
            continue;
        e->sub_state = RL__SUB_NONE;
        rl__queue_kick_head(e);
        rl__entry_maybe_free(c, e);
    }
    c->sub_ctx[st->srv->index] = NULL;
    RL__STAT_INC(c, disconnects);
    pthread_mutex_unlock(&c->mu);
    rl__redis_free(st->ctx);
    pthread_mutex_lock(&c->mu);
    st->ctx = NULL;
    st->ping_sent = 0;
    st->backoff = rl__backoff_ms(st->backoff, RL__RETRY_FIRST_MS, RL__RETRY_MAX_MS);
    st->retry_at = rl__now_ms() + st->backoff;
    /* Said once per outage; the retries are silent. */
    if (!st->lost)
        rl__log(c, RL_LOG_WARN, "rlock subscriber: connection to %s lost (%s); waiters fall "
                "back to the holders' leases until it is back", st->srv->name, rl_last_error());
    st->lost = 1;
    rl__map_lost(c, st->srv);
}

/* Queue the (un)subscriptions that differ from what is wanted. Mutex held.
 * Returns when the next lingering subscription ends (-1: none). */
static int64_t reconcile(sub_state *st, int64_t now)
{
    rl_client *c = st->c;
    int64_t next = -1, sharded = c->mode == RL__MODE_CLUSTER;
    int me = st->srv->index;

    FOR_EACH_ENTRY(c, e) {
        const char *argv[2];
        size_t lens[2];
        if (e->sub_want && !e->q_head && e->linger_until) {
            if (now >= e->linger_until) {
                e->sub_want = 0;
                e->linger_until = 0;
            } else if (next < 0 || e->linger_until < next) {
                next = e->linger_until;
            }
        }
        if (e->sub_want && e->sub_state == RL__SUB_NONE && link_of(c, e) == me) {
            argv[0] = sharded ? "SSUBSCRIBE" : "SUBSCRIBE";
            e->sub_state = RL__SUB_SENT;
            e->sub_link = me;
        } else if (!e->sub_want && e->sub_state == RL__SUB_ON && e->sub_link == me) {
            argv[0] = sharded ? "SUNSUBSCRIBE" : "UNSUBSCRIBE";
            e->sub_state = RL__SUB_OFF_SENT;
        } else {
            continue;
        }
        lens[0] = strlen(argv[0]);
        argv[1] = rl__entry_sub_channel(c, e, &lens[1]);
        redisAppendCommandArgv(st->ctx, 2, argv, lens);
    }
    return next;
}

/* Whether an entry wants notices from server `me`. Mutex held. */
static int any_wanted(rl_client *c, int me)
{
    FOR_EACH_ENTRY(c, e)
        if (e->sub_want && e->sub_state == RL__SUB_NONE ? link_of(c, e) == me
            : e->sub_want && e->sub_link == me)
            return 1;
    return 0;
}

static int any_active(rl_client *c, int me)
{
    FOR_EACH_ENTRY(c, e)
        if ((e->sub_want && link_of(c, e) == me) ||
            (e->sub_state != RL__SUB_NONE && e->sub_link == me))
            return 1;
    return 0;
}

/* Redis refused a (un)subscription: notices cannot reach us, so every
 * waiter of this process polls from now on. For want of channel rights
 * (NOPERM) our releases stop publishing too, since Redis would refuse
 * that as well; for any other reason (a server without SSUBSCRIBE, say)
 * they go on publishing, for the other processes' waiters. */
static void refused(sub_state *st, const redisReply *r)
{
    rl_client *c = st->c;
    const char *msg = r->str ? r->str : "";

    if (strncmp(msg, "NOPERM", 6) == 0) {
        if (!atomic_exchange(&c->no_notices, 1))
            rl__log(c, RL_LOG_ERROR, "rlock: Redis refused to SUBSCRIBE to a release channel "
                    "(%.200s): grant this user the channels '%s*' (ACL &%s*); until then "
                    "waiters ask Redis again every %d..%d ms", msg, c->prefix, c->prefix,
                    RL__POLL_MIN_MS, RL__POLL_MAX_MS);
    } else if (!atomic_exchange(&c->no_subscribe, 1)) {
        rl__log(c, RL_LOG_ERROR, "rlock: Redis refused to subscribe to a release channel "
                "(%.200s); waiters of this process ask Redis again every %d..%d ms", msg,
                RL__POLL_MIN_MS, RL__POLL_MAX_MS);
    }
    FOR_EACH_ENTRY(c, e) {
        e->sub_want = 0;
        e->linger_until = 0;
        if (e->sub_state == RL__SUB_SENT)
            e->sub_state = RL__SUB_NONE;
        rl__queue_kick_head(e);
        rl__entry_maybe_free(c, e);
    }
}

/* A (un)subscription was answered MOVED: the slot lives elsewhere now.
 * Its entries are subscribed again there. Mutex held. */
static void moved(sub_state *st, const rl__redirect *red)
{
    rl_client *c = st->c;

    rl__router_redirect(c, red, st->srv);
    FOR_EACH_ENTRY(c, e) {
        if (e->slot != red->slot || e->sub_link != st->srv->index)
            continue;
        if (e->sub_state == RL__SUB_SENT || e->sub_state == RL__SUB_OFF_SENT)
            e->sub_state = RL__SUB_NONE;
        rl__queue_kick_head(e);
        rl__entry_maybe_free(c, e);
    }
}

/* The permits a release notice's message says came back (a semaphore's
 * last release: "<k>"); 0 when it says none in particular. */
static long long notice_permits(const redisReply *m)
{
    long long n = 0;
    size_t i;

    if (m->type != REDIS_REPLY_STRING || m->len == 0 || m->len > 18)
        return 0;
    for (i = 0; i < m->len; i++) {
        if (m->str[i] < '0' || m->str[i] > '9')
            return 0;
        n = n * 10 + (m->str[i] - '0');
    }
    return n;
}

/* One reply or message on st's connection. Returns -1 when the link must
 * be dropped and made again. Mutex held. */
static int handle(sub_state *st, redisReply *r)
{
    rl_client *c = st->c;
    const redisReply *kind, *ch;
    rl__redirect red;
    rl__entry *e;

    if (r->type == REDIS_REPLY_ERROR) {
        if (rl__redirect_parse(r->str, r->len, &red) == 1)
            moved(st, &red);
        else if (rl__cluster_retryable(r->str, r->len)) {
            /* CLUSTERDOWN, TRYAGAIN: the subscription was not made, and the
             * reply does not say which. Make the link again after a pause:
             * every entry on it subscribes anew (and its waiter asks Redis
             * again meanwhile), rather than waiting forever for an answer. */
            rl__err(RL_ECONN, "the cluster answered %.200s", r->str);
            return -1;
        } else {
            refused(st, r);
        }
        return 0;
    }
    /* Out of subscribed mode (no channel left), PING answers +PONG. */
    if (r->type == REDIS_REPLY_STATUS && r->len == 4 && strncasecmp(r->str, "pong", 4) == 0) {
        st->ping_sent = 0;
        return 0;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
        r->element[0]->type != REDIS_REPLY_STRING)
        return 0;
    kind = r->element[0];
    if (kind->len == 4 && strncasecmp(kind->str, "pong", 4) == 0) {
        st->ping_sent = 0;
        return 0;
    }
    ch = r->element[1];
    if (ch->type != REDIS_REPLY_STRING)
        return 0;
    e = rl__entry_by_channel(c, ch->str, ch->len);
    if (!e)
        return 0;
    if (e->sub_link != st->srv->index)
        return 0;   /* a late word from where it was subscribed before */
    if (strcmp(kind->str, "message") == 0 || strcmp(kind->str, "smessage") == 0) {
        e->notices++;
        rl__queue_notice(e, r->elements > 2 ? notice_permits(r->element[2]) : 0);
    } else if (strcmp(kind->str, "subscribe") == 0 || strcmp(kind->str, "ssubscribe") == 0) {
        if (e->sub_state == RL__SUB_SENT)
            e->sub_state = RL__SUB_ON;
        st->backoff = 0;
        if (st->lost)
            rl__log(c, RL_LOG_INFO, "rlock subscriber: subscribed again on %s", st->srv->name);
        st->lost = 0;
        rl__queue_kick_head(e);
    } else if (strcmp(kind->str, "unsubscribe") == 0 ||
               strcmp(kind->str, "sunsubscribe") == 0) {
        /* Asked for, or (sharded) the slot moved away: then the waiter
         * asks Redis again, and we subscribe where the slot lives now. */
        if (e->sub_state == RL__SUB_ON) {
            rl__map_suspect(c);
            rl__queue_kick_head(e);
        }
        e->sub_state = RL__SUB_NONE;
        rl__entry_maybe_free(c, e);
    }
    return 0;
}

/*
 * Sentinel: a link made after a loss may be to an old primary restarted
 * empty at its address, where no release notice would ever come; the
 * sentinels, asked after the connect, must name it. This thread is the one
 * that asks them, so it asks here itself. Mutex NOT held. 1 when vouched.
 */
static int link_vouched(rl_client *c, rl__server *s)
{
    unsigned losses = atomic_load(&s->losses);
    uint64_t begun;
    int ok;

    pthread_mutex_lock(&c->mu);
    ok = losses == s->vouched && c->home == s;
    begun = c->asks_begun;
    pthread_mutex_unlock(&c->mu);
    if (ok)
        return 1;
    rl__router_refresh(c, 1);
    pthread_mutex_lock(&c->mu);
    ok = c->asks_done > begun && c->home == s;
    if (ok)
        s->vouched = losses;
    pthread_mutex_unlock(&c->mu);
    return ok;
}

/* Connect to st's server when it is wanted and due. Mutex held, dropped
 * while connecting. 1 when something changed. */
static int maybe_connect(sub_state *st, int64_t now)
{
    rl_client *c = st->c;
    rl__conn *conn;
    int rc;

    if (st->ctx || now < st->retry_at || !any_wanted(c, st->srv->index))
        return 0;
    pthread_mutex_unlock(&c->mu);
    rc = rl__conn_open(c, st->srv, &conn);
    if (rc == RL_OK && c->mode == RL__MODE_SENTINEL && conn->fresh &&
        !link_vouched(c, st->srv)) {
        rl__conn_close(c, conn);
        rc = RL_ECONN;
    }
    pthread_mutex_lock(&c->mu);
    if (rc != RL_OK) {
        st->backoff = rl__backoff_ms(st->backoff, RL__RETRY_FIRST_MS, RL__RETRY_MAX_MS);
        st->retry_at = rl__now_ms() + st->backoff;
        if (!st->lost)
            rl__map_lost(c, st->srv);
        return 1;
    }
    st->ctx = conn->ctx;
    free(conn);
    c->sub_ctx[st->srv->index] = st->ctx;
    /* The back-off and the outage end with the first subscription
     * confirmed, not here: a cluster that is down accepts connections but
     * refuses subscriptions, and must be asked neither every 50 ms nor
     * with a log line each time. */
    st->last_io = rl__now_ms();
    FOR_EACH_ENTRY(c, e) {
        if (e->sub_link == st->srv->index)
            e->sub_state = RL__SUB_NONE;
    }
    return 1;
}

/* Queue what st's connection must send now, and write it. Mutex held,
 * dropped while writing. Returns the poll timeout st asks for (-1: none),
 * or -2 when the connection was dropped. */
static int64_t prepare_link(sub_state *st, int64_t now)
{
    rl_client *c = st->c;
    int64_t linger_end = reconcile(st, now), timeout;
    int active = any_active(c, st->srv->index), done = 0;

    if (active && !st->ping_sent && now - st->last_io >= RL__PING_MS) {
        redisAppendCommand(st->ctx, "PING");
        st->ping_sent = now;
    }
    /* A stalled socket must not hold up the application threads.
     * (With nothing queued, redisBufferWrite says done at once.) */
    pthread_mutex_unlock(&c->mu);
    while (!done) {
        if (rl__redis_buffer_write(st->ctx, &done) != REDIS_OK)
            break;
    }
    pthread_mutex_lock(&c->mu);
    if (st->ctx->err) {
        drop_connection(st);
        return -2;
    }
    timeout = active ? RL__PING_MS : -1;
    if (linger_end >= 0 && (timeout < 0 || linger_end - now < timeout))
        timeout = linger_end - now;
    if (st->ping_sent) {
        timeout = st->ping_sent + c->command_ms - now;
        if (timeout <= 0) {
            rl__err(RL_ECONN, "no answer to PING");
            drop_connection(st);
            return -2;
        }
    }
    return timeout;
}

/* Read what arrived on st's connection. Mutex held. */
static void read_link(sub_state *st)
{
    redisReply *r = NULL;

    if (rl__redis_buffer_read(st->ctx) != REDIS_OK) {
        drop_connection(st);
        return;
    }
    st->last_io = rl__now_ms();
    for (;;) {
        r = NULL;
        if (redisGetReplyFromReader(st->ctx, (void **)&r) != REDIS_OK) {
            drop_connection(st);
            return;
        }
        if (!r)
            return;
        if (handle(st, r) < 0) {
            freeReplyObject(r);
            drop_connection(st);
            return;
        }
        freeReplyObject(r);
    }
}

/* Sentinel mode: a connection to one sentinel, subscribed to
 * +switch-master, so that a failover is heard of at once. */
typedef struct switch_link {
    redisContext *ctx;
    int next;                   /* the sentinel to try next */
    int64_t retry_at;
    long backoff;
    int64_t last_io, ping_sent;  /* keep-alive: 0 no PING outstanding */
} switch_link;

static void switch_failed(rl_client *c, switch_link *sl)
{
    c->sub_switch = NULL;
    sl->ping_sent = 0;
    if (sl->ctx) {
        pthread_mutex_unlock(&c->mu);
        rl__redis_free(sl->ctx);
        pthread_mutex_lock(&c->mu);
    }
    sl->ctx = NULL;
    sl->next = (sl->next + 1) % c->url.nseeds;
    sl->backoff = rl__backoff_ms(sl->backoff, RL__RETRY_FIRST_MS, RL__RETRY_MAX_MS);
    sl->retry_at = rl__now_ms() + sl->backoff;
}

/* Connect and subscribe when due. Mutex held, dropped while connecting. */
static void switch_connect(rl_client *c, switch_link *sl, int64_t now)
{
    redisContext *ctx;
    int done = 0;

    if (c->mode != RL__MODE_SENTINEL || sl->ctx || now < sl->retry_at)
        return;
    pthread_mutex_unlock(&c->mu);
    ctx = rl__sentinel_connect(c, sl->next);
    if (ctx) {
        redisAppendCommand(ctx, "SUBSCRIBE +switch-master");
        while (!done && rl__redis_buffer_write(ctx, &done) == REDIS_OK)
            ;
    }
    pthread_mutex_lock(&c->mu);
    sl->ctx = ctx;
    sl->last_io = rl__now_ms();
    c->sub_switch = ctx;
    if (!ctx || !done)
        switch_failed(c, sl);
}

/* A sentinel that accepts but does not answer (stopped) must not keep
 * the link forever: PING it when idle; no answer within the command
 * timeout, the next sentinel is asked. Returns the poll timeout wanted. */
static int64_t switch_keepalive(rl_client *c, switch_link *sl)
{
    int64_t now = rl__now_ms();
    int done = 0;

    if (sl->ping_sent) {
        if (now - sl->ping_sent < c->command_ms)
            return sl->ping_sent + c->command_ms - now;
        rl__log(c, RL_LOG_WARN, "rlock: a sentinel stopped answering; asking the next");
        switch_failed(c, sl);
        return 0;
    }
    if (now - sl->last_io < RL__PING_MS)
        return sl->last_io + RL__PING_MS - now;
    redisAppendCommand(sl->ctx, "PING");
    while (!done && rl__redis_buffer_write(sl->ctx, &done) == REDIS_OK)
        ;
    sl->ping_sent = now;
    return c->command_ms;
}

/* What the sentinel said. Mutex held. */
static void switch_read(rl_client *c, switch_link *sl)
{
    redisReply *r = NULL;

    if (rl__redis_buffer_read(sl->ctx) != REDIS_OK) {
        switch_failed(c, sl);
        return;
    }
    sl->last_io = rl__now_ms();
    sl->ping_sent = 0;      /* an answer of any kind: it is alive */
    while (redisGetReplyFromReader(sl->ctx, (void **)&r) == REDIS_OK && r) {
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
            r->element[0]->type == REDIS_REPLY_STRING &&
            strcmp(r->element[0]->str, "message") == 0 &&
            r->element[2]->type == REDIS_REPLY_STRING &&
            rl__sentinel_switch_parse(r->element[2]->str, r->element[2]->len,
                                      c->url.service)) {
            /* The next call or renewal asks the sentinels; the waiters ask
             * the new primary now rather than at their holders' leases. */
            rl__log(c, RL_LOG_INFO, "rlock: the sentinels say: +switch-master %.200s",
                    r->element[2]->str);
            rl__map_suspect(c);
            c->map_refresh_at = 0;
            FOR_EACH_ENTRY(c, e)
                rl__queue_kick_head(e);
            rl__watchdog_poke(c);
        } else if (r->type == REDIS_REPLY_ERROR) {
            rl__log(c, RL_LOG_WARN, "rlock: a sentinel refused SUBSCRIBE +switch-master "
                    "(%.200s); failovers are noticed by lost connections only", r->str);
        } else {
            sl->backoff = 0;
        }
        freeReplyObject(r);
        r = NULL;
    }
    if (sl->ctx->err)
        switch_failed(c, sl);
}

/* What one turn of the subscriber polls: the bell (pfd[0]) and the links
 * (link[k]: the server of pfd[k], -1 for the sentinels' link, at sfd), and
 * how long until something else is due (-1: nothing). */
typedef struct {
    struct pollfd pfd[2 + RL__SERVERS_MAX];
    int link[2 + RL__SERVERS_MAX];
    int nfds, sfd;
    int64_t timeout;
} poll_set;

/* Add the open links of the first n servers to ps, and bring its timeout
 * down to the soonest ping or reconnection due. 1 when a link changed
 * meanwhile (look again). Mutex held. */
static int poll_links(rl_client *c, sub_state *st, int n, poll_set *ps, int64_t now)
{
    int64_t t;
    int i;

    for (i = 0; i < n; i++) {
        if (st[i].ctx) {
            if ((t = prepare_link(&st[i], now)) == -2)
                return 1;
            ps->pfd[ps->nfds].fd = st[i].ctx->fd;
            ps->pfd[ps->nfds].events = POLLIN;
            ps->link[ps->nfds++] = i;
        } else if (any_wanted(c, i)) {
            t = st[i].retry_at - now;
            if (t < 0)
                t = 0;
        } else {
            continue;
        }
        if (t >= 0 && (ps->timeout < 0 || t < ps->timeout))
            ps->timeout = t;
    }
    return 0;
}

/* Sentinel mode: the sentinels' link in ps, and its retry, its keep-alive
 * and the periodic ask for the primary in its timeout. Mutex held. */
static void poll_switch(rl_client *c, switch_link *sl, poll_set *ps)
{
    int64_t t;

    if (sl->ctx) {
        ps->sfd = ps->nfds;
        ps->pfd[ps->nfds].fd = sl->ctx->fd;
        ps->pfd[ps->nfds].events = POLLIN;
        ps->link[ps->nfds++] = -1;
    } else if (c->mode == RL__MODE_SENTINEL) {
        t = sl->retry_at - rl__now_ms();
        t = t < 0 ? 0 : t;
        if (ps->timeout < 0 || t < ps->timeout)
            ps->timeout = t;
    }
    if (c->mode == RL__MODE_SENTINEL) {
        /* The periodic ask, and the link's keep-alive. */
        t = c->map_refresh_at - rl__now_ms();
        t = t < 0 ? 0 : t;
        if (ps->timeout < 0 || t < ps->timeout)
            ps->timeout = t;
        if (sl->ctx) {
            t = switch_keepalive(c, sl);
            if (t >= 0 && (ps->timeout < 0 || t < ps->timeout))
                ps->timeout = t;
        }
    }
}

/* Wait for the bell, a message or the timeout, and read what came. Mutex
 * held; dropped while waiting. */
static void poll_and_read(rl_client *c, sub_state *st, switch_link *sl, poll_set *ps)
{
    uint64_t junk;
    int i, rc;

    ps->pfd[0].fd = c->sub_efd;
    ps->pfd[0].events = POLLIN;
    pthread_mutex_unlock(&c->mu);
    rc = poll(ps->pfd, (nfds_t)ps->nfds, (int)ps->timeout);
    if (rc > 0 && (ps->pfd[0].revents & POLLIN)) {
        if (read(c->sub_efd, &junk, sizeof junk) < 0) {
            /* EAGAIN: raced with another reader of the counter; harmless. */
        }
    }
    pthread_mutex_lock(&c->mu);
    for (i = 1; rc > 0 && i < ps->nfds; i++) {
        if (i == ps->sfd) {
            if (sl->ctx && (ps->pfd[i].revents & (POLLIN | POLLERR | POLLHUP)))
                switch_read(c, sl);
        } else if (st[ps->link[i]].ctx &&
                   (ps->pfd[i].revents & (POLLIN | POLLERR | POLLHUP))) {
            read_link(&st[ps->link[i]]);
        }
    }
}

static void *sub_main(void *arg)
{
    sub_state st[RL__SERVERS_MAX];
    switch_link sl;
    poll_set ps;
    rl_client *c = arg;
    int i;

    memset(st, 0, sizeof st);
    memset(&sl, 0, sizeof sl);
    pthread_mutex_lock(&c->mu);
    while (!c->stopping) {
        int64_t now = rl__now_ms();
        int n = c->nservers, changed = 0;

        /* Sentinel mode: ask the sentinels for the primary when that is
         * due (this thread does it for every other), before any link is
         * made again: after a lost connection the address may be stale. */
        if (c->mode == RL__MODE_SENTINEL && rl__router_map_due(c) && !c->map_refreshing) {
            pthread_mutex_unlock(&c->mu);
            rl__router_refresh(c, 1);
            pthread_mutex_lock(&c->mu);
            continue;
        }
        for (i = 0; i < n; i++) {
            st[i].c = c;
            st[i].srv = c->servers[i];
            changed |= maybe_connect(&st[i], now);
        }
        if (changed)
            continue;
        ps.nfds = 1;
        ps.sfd = -1;
        ps.timeout = -1;
        if (poll_links(c, st, n, &ps, now))
            continue;
        switch_connect(c, &sl, now);
        if (c->stopping)
            break;
        poll_switch(c, &sl, &ps);
        poll_and_read(c, st, &sl, &ps);
    }
    c->sub_switch = NULL;
    if (sl.ctx) {
        pthread_mutex_unlock(&c->mu);
        rl__redis_free(sl.ctx);
        pthread_mutex_lock(&c->mu);
    }
    for (i = 0; i < RL__SERVERS_MAX; i++)
        c->sub_ctx[i] = NULL;
    pthread_mutex_unlock(&c->mu);
    for (i = 0; i < RL__SERVERS_MAX; i++)
        if (st[i].ctx)
            rl__redis_free(st[i].ctx);
    return NULL;
}
