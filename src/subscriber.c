/*
 * The subscriber: one thread and one connection per client, in SUBSCRIBE
 * mode. It keeps one subscription per lock name that has local waiters, and
 * turns release notices into a wake-up of the head of that name's local
 * queue. Other threads ask for (un)subscriptions by setting an entry's
 * sub_want and poking an eventfd; the thread reconciles.
 *
 * When the connection breaks, every waiter is woken (it retries and waits
 * again, bounded by the holder's lease) and the subscriptions are made
 * anew once Redis answers.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rlock_int.h"

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

void rl__sub_poke(rl_client *c)
{
    uint64_t one = 1;

    if (c->sub_efd >= 0 && write(c->sub_efd, &one, sizeof one) < 0) {
        /* EAGAIN: the counter is already non-zero, the thread will wake. */
    }
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


typedef struct sub_state {
    rl_client *c;
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
    /* The thread does not exist here; its connection may be mid-use. */
    c->sub_started = 0;
    if (c->sub_efd >= 0)
        close(c->sub_efd);
    c->sub_efd = -1;
    if (c->sub_ctx && c->sub_ctx->fd >= 0)
        close(c->sub_ctx->fd);
    c->sub_ctx = NULL;
    FOR_EACH_ENTRY(c, e) {
        e->sub_want = 0;
        e->linger_until = 0;
        e->sub_state = RL__SUB_NONE;
    }
}

static void drop_connection(sub_state *st)
{
    rl_client *c = st->c;

    FOR_EACH_ENTRY(c, e) {
        e->sub_state = RL__SUB_NONE;
        rl__queue_kick_head(e);
        rl__entry_maybe_free(c, e);
    }
    c->sub_ctx = NULL;
    pthread_mutex_unlock(&c->mu);
    redisFree(st->ctx);
    pthread_mutex_lock(&c->mu);
    st->ctx = NULL;
    st->ping_sent = 0;
    st->backoff = rl__backoff_ms(st->backoff, RL__RETRY_FIRST_MS, RL__RETRY_MAX_MS);
    st->retry_at = rl__now_ms() + st->backoff;
    /* Said once per outage; the retries are silent. */
    if (!st->lost)
        rl__log(c, RL_LOG_WARN, "rlock subscriber: connection lost (%s); waiters fall back "
                "to the holders' leases until it is back", rl_last_error());
    st->lost = 1;
}

/* Queue the (un)subscriptions that differ from what is wanted. Mutex held.
 * Returns when the next lingering subscription ends (-1: none). */
static int64_t reconcile(sub_state *st, int64_t now)
{
    rl_client *c = st->c;
    int64_t next = -1;

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
        if (e->sub_want && e->sub_state == RL__SUB_NONE) {
            argv[0] = "SUBSCRIBE";
            lens[0] = 9;
            e->sub_state = RL__SUB_SENT;
        } else if (!e->sub_want && e->sub_state == RL__SUB_ON) {
            argv[0] = "UNSUBSCRIBE";
            lens[0] = 11;
            e->sub_state = RL__SUB_OFF_SENT;
        } else {
            continue;
        }
        argv[1] = e->channel;
        lens[1] = e->channel_len;
        redisAppendCommandArgv(st->ctx, 2, argv, lens);
    }
    return next;
}

static int any_wanted(rl_client *c)
{
    FOR_EACH_ENTRY(c, e)
        if (e->sub_want)
            return 1;
    return 0;
}

static int any_active(rl_client *c)
{
    FOR_EACH_ENTRY(c, e)
        if (e->sub_want || e->sub_state != RL__SUB_NONE)
            return 1;
    return 0;
}

/* Redis refused a (un)subscription, most likely for want of channel
 * rights: notices cannot reach us, so every waiter polls from now on. */
static void refused(sub_state *st, const redisReply *r)
{
    rl_client *c = st->c;

    if (!atomic_exchange(&c->no_notices, 1))
        rl__log(c, RL_LOG_ERROR, "rlock: Redis refused to SUBSCRIBE to a release channel "
                "(%.200s): grant this user the channels '%s*' (ACL &%s*); until then "
                "waiters ask Redis again every %d..%d ms", r->str ? r->str : "",
                c->prefix, c->prefix, RL__POLL_MIN_MS, RL__POLL_MAX_MS);
    FOR_EACH_ENTRY(c, e) {
        e->sub_want = 0;
        e->linger_until = 0;
        if (e->sub_state == RL__SUB_SENT)
            e->sub_state = RL__SUB_NONE;
        rl__queue_kick_head(e);
        rl__entry_maybe_free(c, e);
    }
}

static void handle(sub_state *st, redisReply *r)
{
    rl_client *c = st->c;
    const redisReply *kind, *ch;
    rl__entry *e;

    if (r->type == REDIS_REPLY_ERROR) {
        refused(st, r);
        return;
    }
    /* Out of subscribed mode (no channel left), PING answers +PONG. */
    if (r->type == REDIS_REPLY_STATUS && r->len == 4 && strncasecmp(r->str, "pong", 4) == 0) {
        st->ping_sent = 0;
        return;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
        r->element[0]->type != REDIS_REPLY_STRING)
        return;
    kind = r->element[0];
    if (kind->len == 4 && strncasecmp(kind->str, "pong", 4) == 0) {
        st->ping_sent = 0;
        return;
    }
    ch = r->element[1];
    if (ch->type != REDIS_REPLY_STRING)
        return;
    e = rl__entry_by_channel(c, ch->str, ch->len);
    if (!e)
        return;
    if (strcmp(kind->str, "message") == 0) {
        rl__queue_kick_head(e);
    } else if (strcmp(kind->str, "subscribe") == 0) {
        if (e->sub_state == RL__SUB_SENT)
            e->sub_state = RL__SUB_ON;
        rl__queue_kick_head(e);
    } else if (strcmp(kind->str, "unsubscribe") == 0) {
        e->sub_state = RL__SUB_NONE;
        rl__entry_maybe_free(c, e);
    }
}

static void *sub_main(void *arg)
{
    sub_state st;
    rl_client *c = arg;

    memset(&st, 0, sizeof st);
    st.c = c;
    pthread_mutex_lock(&c->mu);
    while (!c->stopping) {
        struct pollfd pfd[2];
        int64_t now = rl__now_ms(), timeout = -1;
        int nfds = 1, done = 0, rc;
        uint64_t junk;

        if (!st.ctx && any_wanted(c) && now >= st.retry_at) {
            rl__conn *conn;
            pthread_mutex_unlock(&c->mu);
            rc = rl__conn_open(c, &conn);
            pthread_mutex_lock(&c->mu);
            if (rc != RL_OK) {
                st.backoff = rl__backoff_ms(st.backoff, RL__RETRY_FIRST_MS, RL__RETRY_MAX_MS);
                st.retry_at = rl__now_ms() + st.backoff;
            } else {
                if (st.lost)
                    rl__log(c, RL_LOG_INFO, "rlock subscriber: reconnected");
                st.lost = 0;
                st.ctx = conn->ctx;
                free(conn);
                c->sub_ctx = st.ctx;
                st.backoff = 0;
                st.last_io = rl__now_ms();
                FOR_EACH_ENTRY(c, e) {
                    e->sub_state = RL__SUB_NONE;
                }
            }
            continue;
        }
        if (st.ctx) {
            int active;
            int64_t linger_end = reconcile(&st, now);
            active = any_active(c);
            if (active && !st.ping_sent && now - st.last_io >= RL__PING_MS) {
                redisAppendCommand(st.ctx, "PING");
                st.ping_sent = now;
            }
            /* A stalled socket must not hold up the application threads.
             * (With nothing queued, redisBufferWrite says done at once.) */
            pthread_mutex_unlock(&c->mu);
            while (!done) {
                if (redisBufferWrite(st.ctx, &done) != REDIS_OK)
                    break;
            }
            pthread_mutex_lock(&c->mu);
            if (st.ctx->err) {
                drop_connection(&st);
                continue;
            }
            timeout = active ? RL__PING_MS : -1;
            if (linger_end >= 0 && (timeout < 0 || linger_end - now < timeout))
                timeout = linger_end - now;
            if (st.ping_sent) {
                timeout = st.ping_sent + c->command_ms - now;
                if (timeout <= 0) {
                    rl__err(RL_ECONN, "no answer to PING");
                    drop_connection(&st);
                    continue;
                }
            }
            pfd[1].fd = st.ctx->fd;
            pfd[1].events = POLLIN;
            nfds = 2;
        } else if (any_wanted(c)) {
            timeout = st.retry_at - now;
            if (timeout < 0)
                timeout = 0;
        }
        pfd[0].fd = c->sub_efd;
        pfd[0].events = POLLIN;
        pthread_mutex_unlock(&c->mu);
        rc = poll(pfd, (nfds_t)nfds, (int)timeout);
        if (rc > 0 && (pfd[0].revents & POLLIN)) {
            if (read(c->sub_efd, &junk, sizeof junk) < 0) {
                /* EAGAIN: raced with another reader of the counter; harmless. */
            }
        }
        pthread_mutex_lock(&c->mu);
        if (rc > 0 && nfds == 2 && st.ctx && (pfd[1].revents & (POLLIN | POLLERR | POLLHUP))) {
            redisReply *r = NULL;
            if (redisBufferRead(st.ctx) != REDIS_OK) {
                drop_connection(&st);
                continue;
            }
            st.last_io = rl__now_ms();
            for (;;) {
                r = NULL;
                if (redisGetReplyFromReader(st.ctx, (void **)&r) != REDIS_OK) {
                    drop_connection(&st);
                    break;
                }
                if (!r)
                    break;
                handle(&st, r);
                freeReplyObject(r);
            }
        }
    }
    if (st.ctx) {
        c->sub_ctx = NULL;
        pthread_mutex_unlock(&c->mu);
        redisFree(st.ctx);
    } else {
        pthread_mutex_unlock(&c->mu);
    }
    return NULL;
}
