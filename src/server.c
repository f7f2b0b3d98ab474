/*
 * Servers: one per Redis endpoint the client talks to, each with its own
 * pool of connections that application threads borrow (rl__pool_get) and
 * give back (rl__pool_put). Which server a name goes to is the router's
 * business (router.c); a connection's own I/O is conn.c's and command.c's.
 *
 * A hiredis context is not thread-safe: a connection is used by one thread
 * at a time, between rl__pool_get() and rl__pool_put().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "conn.h"
#include "error.h"
#include "server.h"
#include "tls.h"
#include "util.h"

rl__server *rl__server_get(rl_client *c, const char *host, int port)
{
    rl__server *s;
    int i;

    for (i = 0; i < c->nservers; i++) {
        s = c->servers[i];
        if (!host ? !s->host : s->host && s->port == port && strcmp(s->host, host) == 0)
            return s;
    }
    if (c->nservers == RL__SERVERS_MAX || !(s = calloc(1, sizeof *s)))
        return NULL;
    if (host && !(s->host = rl__strdup(host))) {
        free(s);
        return NULL;
    }
    s->port = port;
    if (!host)
        snprintf(s->name, sizeof s->name, "unix:%s", c->url.path);
    else if (strchr(host, ':'))
        snprintf(s->name, sizeof s->name, "[%s]:%d", host, port);
    else
        snprintf(s->name, sizeof s->name, "%s:%d", host, port);
    s->index = c->nservers;
    c->servers[c->nservers++] = s;
    return s;
}

/* Track conn in its server's list of every connection (mutex held). */
static void track(rl__server *s, rl__conn *conn)
{
    conn->all_prev = NULL;
    conn->all_next = s->all;
    if (s->all)
        s->all->all_prev = conn;
    s->all = conn;
}

static void untrack(rl__server *s, rl__conn *conn)
{
    if (conn->all_prev)
        conn->all_prev->all_next = conn->all_next;
    else if (s->all == conn)
        s->all = conn->all_next;
    if (conn->all_next)
        conn->all_next->all_prev = conn->all_prev;
    conn->all_next = conn->all_prev = NULL;
}

/* A new connection to s within within_ms, counted in s->conns while it is
 * made (so the pool's limit holds). Called with the mutex held; returns with
 * it released. */
static int open_counted(rl_client *c, rl__server *s, long within_ms, rl__conn **out)
{
    rl__conn *conn;
    int rc;

    s->conns++;
    pthread_mutex_unlock(&c->mu);
    rc = rl__conn_open_within(c, s, within_ms, &conn);
    pthread_mutex_lock(&c->mu);
    if (rc != RL_OK) {
        s->conns--;
        if (c->pool_waiters)
            pthread_cond_broadcast(&c->pool_cond);
    } else {
        track(s, conn);
    }
    pthread_mutex_unlock(&c->mu);
    if (rc == RL_OK)
        *out = conn;
    return rc;
}

int rl__pool_get(rl_client *c, rl__server *s, rl__conn **out)
{
    rl__conn *conn;

    pthread_mutex_lock(&c->mu);
    for (;;) {
        if (s->idle) {
            conn = s->idle;
            s->idle = conn->next;
            pthread_mutex_unlock(&c->mu);
            *out = conn;
            return RL_OK;
        }
        if (s->conns < c->pool_size)
            break;
        if (atomic_load(&c->closing)) {
            pthread_mutex_unlock(&c->mu);
            return rl__err(RL_ECANCELED, "the client is shutting down");
        }
        c->pool_waiters++;
        pthread_cond_wait(&c->pool_cond, &c->mu);
        c->pool_waiters--;
    }
    return open_counted(c, s, 0, out);
}

int rl__pool_get_quick(rl_client *c, rl__server *s, rl__conn **out)
{
    return rl__pool_get_within(c, s, 0, out);
}

rl__conn *rl__pool_get_idle(rl_client *c, rl__server *s)
{
    rl__conn *conn;

    pthread_mutex_lock(&c->mu);
    if ((conn = s->idle))
        s->idle = conn->next;
    pthread_mutex_unlock(&c->mu);
    return conn;
}

int rl__pool_get_nowait(rl_client *c, rl__server *s, long within_ms, rl__conn **out)
{
    rl__conn *conn;

    pthread_mutex_lock(&c->mu);
    if ((conn = s->idle)) {
        s->idle = conn->next;
        pthread_mutex_unlock(&c->mu);
        *out = conn;
        return RL_OK;
    }
    if (s->conns >= c->pool_size || atomic_load(&s->down_until) > rl__now_ms()) {
        pthread_mutex_unlock(&c->mu);
        return rl__err(RL_EBUSY, "no connection to %s to spare now", s->name);
    }
    return open_counted(c, s, within_ms, out);
}

int rl__pool_get_within(rl_client *c, rl__server *s, long within_ms, rl__conn **out)
{
    int idle;

    pthread_mutex_lock(&c->mu);
    idle = s->idle != NULL;
    pthread_mutex_unlock(&c->mu);
    /* Checked without the mutex held through the connect: at worst a
     * connection opened a moment after the server came back, or not. */
    if (!idle && atomic_load(&s->down_until) > rl__now_ms())
        return rl__err(RL_ECONN, "%s was found down a moment ago", s->name);
    if (idle || within_ms <= 0)
        return rl__pool_get(c, s, out);
    /* A new connection within a short time: past the pool's limit, the
     * caller must not wait for another thread's connection either. */
    pthread_mutex_lock(&c->mu);
    if (s->conns >= c->pool_size) {
        pthread_mutex_unlock(&c->mu);
        return rl__pool_get(c, s, out);
    }
    return open_counted(c, s, within_ms, out);
}

int rl__pool_reserve(rl_client *c, rl__server *s)
{
    int rc = RL_OK;

    if (atomic_load(&s->down_until) > rl__now_ms())
        return rl__err(RL_ECONN, "%s was found down a moment ago", s->name);
    pthread_mutex_lock(&c->mu);
    if (s->conns >= c->pool_size)
        rc = RL_EBUSY;
    else
        s->conns++;
    pthread_mutex_unlock(&c->mu);
    return rc;
}

void rl__pool_reserved(rl_client *c, rl__server *s, rl__conn *conn)
{
    pthread_mutex_lock(&c->mu);
    if (conn) {
        track(s, conn);
    } else {
        s->conns--;
        if (c->pool_waiters)
            pthread_cond_broadcast(&c->pool_cond);
    }
    pthread_mutex_unlock(&c->mu);
}

void rl__pool_adopt(rl_client *c, rl__conn *conn)
{
    pthread_mutex_lock(&c->mu);
    track(conn->server, conn);
    conn->server->conns++;
    conn->next = conn->server->idle;
    conn->server->idle = conn;
    pthread_mutex_unlock(&c->mu);
}

rl__conn *rl__pool_detach_idle(rl_client *c, rl__server *s)
{
    rl__conn *conn, **at;

    pthread_mutex_lock(&c->mu);
    /* Not one still to be checked against the sentinels (conn->fresh):
     * the watchdog checks only the connections it opens. */
    for (at = &s->idle; *at && (*at)->fresh; at = &(*at)->next)
        ;
    conn = *at;
    if (conn) {
        *at = conn->next;
        untrack(s, conn);
        s->conns--;
        conn->next = NULL;
        if (c->pool_waiters)
            pthread_cond_broadcast(&c->pool_cond);
    }
    pthread_mutex_unlock(&c->mu);
    return conn;
}

/* Take every idle connection of s off its pool (mutex held): returned as
 * a list through ->next, for the caller to close without the mutex. */
static rl__conn *take_idle(rl__server *s, rl__conn *list)
{
    rl__conn *conn = s->idle, *next;

    for (; conn; conn = next) {
        next = conn->next;
        untrack(s, conn);
        s->conns--;
        conn->next = list;
        list = conn;
    }
    s->idle = NULL;
    return list;
}

rl__conn *rl__pool_take_idle(rl_client *c)
{
    rl__conn *list = NULL;
    int i;

    for (i = 0; i < c->nservers; i++)
        list = take_idle(c->servers[i], list);
    return list;
}

void rl__pool_put(rl_client *c, rl__conn *conn)
{
    rl__server *s = conn->server;
    int broken = rl__conn_broken(conn);
    rl__conn *stale = NULL, *next;

    pthread_mutex_lock(&c->mu);
    if (broken) {
        untrack(s, conn);
        s->conns--;
        /* The idle ones were opened before this one broke: most likely the
         * server went away, so they are dead too. Reconnect lazily. */
        stale = take_idle(s, NULL);
    } else {
        conn->next = s->idle;
        s->idle = conn;
    }
    if (c->pool_waiters)
        pthread_cond_broadcast(&c->pool_cond);
    pthread_mutex_unlock(&c->mu);
    if (broken) {
        rl__conn_close(c, conn);
        rl__map_lost(c, s);
    }
    for (; stale; stale = next) {
        next = stale->next;
        rl__conn_close(c, stale);
    }
}

void rl__pool_after_fork(rl_client *c)
{
    rl__conn *conn, *next;
    int i;

    /* The idle ones are whole and are closed; the ones that threads of the
     * parent had borrowed may be mid-use, so only their sockets are closed. */
    for (i = 0; i < c->nservers; i++) {
        rl__server *s = c->servers[i];
        for (conn = s->idle; conn; conn = conn->next)
            conn->fence.id = -2;    /* mark: idle, safe to free */
        for (conn = s->all; conn; conn = next) {
            next = conn->all_next;
            if (conn->fence.id == -2)
                rl__conn_close(c, conn);
            else if (conn->ctx && conn->ctx->fd >= 0)
                rl__tls_close(conn->ctx->fd);
        }
        s->all = NULL;
        s->idle = NULL;
        s->conns = 0;
    }
    c->pool_waiters = 0;
}

void rl__servers_free(rl_client *c)
{
    rl__conn *conn, *next;
    int i;

    for (i = 0; i < c->nservers; i++) {
        rl__server *s = c->servers[i];
        for (conn = s->all; conn; conn = next) {
            next = conn->all_next;
            rl__conn_close(c, conn);
        }
        rl__conn_close(c, s->wd_conn);
        free(s->host);
        free(s);
        c->servers[i] = NULL;
    }
    c->nservers = 0;
}
