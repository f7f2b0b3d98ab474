/*
 * rl_client: options, creation, the owner identity, and shutdown.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uuid/uuid.h>

#include "rlock_int.h"

#define RL__PREFIX_MAX 256

int rl_options_init(rl_options *opts)
{
    if (!opts)
        return rl__err(RL_EINVAL, "opts is NULL");
    memset(opts, 0, sizeof *opts);
    opts->version = RL_OPTIONS_VERSION;
    opts->lease_ms = 30000;
    opts->renew_interval_ms = 0;     /* lease_ms / 3 */
    opts->connect_timeout_ms = 2000;
    opts->command_timeout_ms = 2000;
    opts->pool_size = 8;
    return RL_OK;
}

static int check_options(const rl_options *o)
{
    long lease = o->lease_ms ? o->lease_ms : 30000;

    if (o->version != RL_OPTIONS_VERSION)
        return rl__err(RL_EINVAL, "unknown rl_options version %u (this library knows %d)",
                       o->version, RL_OPTIONS_VERSION);
    if (o->lease_ms < 0 || (o->lease_ms && o->lease_ms < RL_LEASE_MIN_MS))
        return rl__err(RL_EINVAL, "lease_ms must be >= %d (or 0 for the default)",
                       RL_LEASE_MIN_MS);
    if (o->renew_interval_ms < 0 || (o->renew_interval_ms && o->renew_interval_ms >= lease))
        return rl__err(RL_EINVAL, "renew_interval_ms must be > 0 and < lease_ms (or 0)");
    if (o->connect_timeout_ms < 0 || o->command_timeout_ms < 0)
        return rl__err(RL_EINVAL, "timeouts must be > 0 (or 0 for the default)");
    if (o->pool_size < 0 || o->pool_size > 1024)
        return rl__err(RL_EINVAL, "pool_size must be 1..1024 (or 0 for the default)");
    if (o->key_prefix && (strlen(o->key_prefix) > RL__PREFIX_MAX ||
                          strpbrk(o->key_prefix, "{}")))
        return rl__err(RL_EINVAL, "key_prefix must be at most %d bytes without '{' or '}'",
                       RL__PREFIX_MAX);
    return RL_OK;
}

static void client_destroy(rl_client *c)
{
    rl__hold *h, *next;
    rl__conn *conn, *cnext;

    for (h = c->holds; h; h = next) {
        next = h->c_next;
        free(h);
    }
    for (conn = c->all; conn; conn = cnext) {
        cnext = conn->all_next;
        rl__conn_close(c, conn);
    }
    while (c->leftovers) {
        rl__leftover *lo = c->leftovers;
        c->leftovers = lo->next;
        free(lo);
    }
    rl__hold_free_spares(c);
    rl__entry_free_all(c);
    rl__url_clear(&c->url);
    free(c->prefix);
    pthread_cond_destroy(&c->pool_cond);
    pthread_cond_destroy(&c->wd_cond);
    pthread_cond_destroy(&c->leftover_cond);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void rl__client_unref(rl_client *c)
{
    if (atomic_fetch_sub(&c->refs, 1) == 1)
        client_destroy(c);
}

void rl__client_new_identity(rl_client *c)
{
    uuid_t id;

    uuid_generate_random(id);
    uuid_unparse_lower(id, c->uuid);
}

int rl_client_new(rl_client **out, const rl_options *opts)
{
    rl_options defaults;
    rl_client *c;
    rl__conn *conn;
    int rc;

    rl__err_clear();
    if (!out)
        return rl__err(RL_EINVAL, "out is NULL");
    if (!opts) {
        rl_options_init(&defaults);
        opts = &defaults;
    }
    if ((rc = check_options(opts)) != RL_OK)
        return rc;

    c = calloc(1, sizeof *c);
    if (!c)
        return rl__err(RL_ENOMEM, "out of memory");
    if ((rc = rl__url_parse(&c->url, opts->url)) != RL_OK) {
        free(c);
        return rc;
    }
    c->prefix = rl__strdup(opts->key_prefix ? opts->key_prefix : "rl:");
    if (!c->prefix) {
        rl__url_clear(&c->url);
        free(c);
        return rl__err(RL_ENOMEM, "out of memory");
    }
    c->prefix_len = strlen(c->prefix);
    c->lease_ms = opts->lease_ms ? opts->lease_ms : 30000;
    c->renew_ms = opts->renew_interval_ms ? opts->renew_interval_ms : c->lease_ms / 3;
    if (c->renew_ms < 1)
        c->renew_ms = 1;
    c->connect_ms = opts->connect_timeout_ms ? opts->connect_timeout_ms : 2000;
    c->command_ms = opts->command_timeout_ms ? opts->command_timeout_ms : 2000;
    c->pool_size = opts->pool_size ? opts->pool_size : 8;
    c->on_lost = opts->on_lost;
    c->log = opts->log;
    c->payload = opts->payload;
    c->sub_efd = -1;
    atomic_init(&c->refs, 1);
    atomic_init(&c->closed, 0);
    atomic_init(&c->forked, 0);
    rl__client_new_identity(c);

    pthread_mutex_init(&c->mu, NULL);
    rl__cond_init(&c->pool_cond);
    rl__cond_init(&c->wd_cond);
    rl__cond_init(&c->leftover_cond);

    /* Connect now, so a bad address or password is reported here. */
    rc = rl__conn_open(c, &conn);
    if (rc == RL_OK) {
        rc = rl__conn_load_scripts(c, conn);
        pthread_mutex_lock(&c->mu);
        conn->all_next = NULL;
        c->all = conn;
        c->conns = 1;
        c->idle = conn;
        pthread_mutex_unlock(&c->mu);
    }
    if (rc == RL_OK)
        rc = rl__registry_add(c);
    if (rc != RL_OK) {
        client_destroy(c);
        return rc;
    }
    rl__log(c, RL_LOG_INFO, "rlock %s client %s connected", RL_VERSION_STRING, c->uuid);
    *out = c;
    return RL_OK;
}

int rl__client_enter(rl_client *c)
{
    if (atomic_load_explicit(&c->closed, memory_order_acquire))
        return rl__err(RL_EINVAL, "the client was freed");
    if (atomic_load_explicit(&c->forked, memory_order_relaxed)) {
        pthread_mutex_lock(&c->mu);
        if (atomic_load(&c->forked))
            rl__rebuild_after_fork(c);
        pthread_mutex_unlock(&c->mu);
    }
    return RL_OK;
}

int rl__client_owner(const rl_client *c, uint64_t tid, char *buf)
{
    return snprintf(buf, RL__OWNER_MAX, "%s:%llu", c->uuid, (unsigned long long)tid);
}

/* Queue the release script in its "drop our field" form. */
static void append_drop(rl__conn *conn, rl_client *c, const rl__entry *e,
                        const char *owner, size_t owner_len)
{
    const char *argv[8] = { "EVALSHA", c->sha[RL__S_RELEASE], "2", e->key, e->channel,
                            owner, "0", "0" };
    size_t lens[8] = { 7, 40, 1, e->key_len, e->channel_len, owner_len, 1, 1 };

    redisAppendCommandArgv(conn->ctx, 8, argv, lens);
}

/* Release, in one pipelined round, every hold and leftover still known. */
static void release_all(rl_client *c)
{
    rl__conn *conn;
    rl__hold *h;
    rl__leftover *lo;
    redisReply *r = NULL;
    int n = 0, i;

    if ((!c->holds && !c->leftovers) || rl__pool_get(c, &conn) != RL_OK)
        return;
    for (h = c->holds; h; h = h->c_next, n++)
        append_drop(conn, c, h->entry, h->owner, h->owner_len);
    for (lo = c->leftovers; lo; lo = lo->next, n++)
        append_drop(conn, c, lo->entry, lo->owner, lo->owner_len);
    for (i = 0; i < n; i++) {
        if (redisGetReply(conn->ctx, (void **)&r) != REDIS_OK)
            break;
        freeReplyObject(r);
    }
    rl__pool_put(c, conn);
}

void rl_client_free(rl_client *c)
{
    rl__thread *self;
    rl__hold *h, *next;
    rl__conn *idle, *next_idle;
    rl__leftover *lo;

    if (!c || !rl__registry_has(c))
        return;
    rl__client_enter(c);
    rl__registry_remove(c);

    rl__watchdog_stop(c);
    rl__sub_stop(c);

    /* Flag every hold first: no holder may go on believing it holds a lock
     * that the release below lets another process take. */
    pthread_mutex_lock(&c->mu);
    for (h = c->holds; h; h = h->c_next)
        rl__hold_mark_lost(c, h);
    pthread_mutex_unlock(&c->mu);
    release_all(c);

    pthread_mutex_lock(&c->mu);
    atomic_store(&c->closed, 1);
    self = rl__thread_self();
    for (h = c->holds; h; h = next) {
        next = h->c_next;
        if (h->tid == self->id) {
            rl__thread_unlink(self, h);
            rl__hold_remove(c, h);
        } else {
            /* Still linked in its own thread's list: that thread frees it. */
            rl__hold_orphan(c, h);
        }
    }
    for (lo = c->leftovers; lo; lo = lo->next)
        lo->entry->leftovers--;
    idle = rl__pool_take_idle(c);
    pthread_mutex_unlock(&c->mu);
    for (; idle; idle = next_idle) {
        next_idle = idle->next;
        rl__conn_close(c, idle);
    }
    rl__client_unref(c);
}
