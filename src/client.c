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
    if (o->lease_ms < 0)
        return rl__err(RL_EINVAL, "lease_ms must be > 0 (or 0 for the default)");
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
    rl__hold_free_spares(c);
    rl__entry_free_all(c);
    rl__url_clear(&c->url);
    free(c->prefix);
    pthread_cond_destroy(&c->pool_cond);
    pthread_cond_destroy(&c->wd_cond);
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
    c->drift_ms = c->lease_ms / 100 + 2;
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

/* Release, in one pipelined round, every hold still in the table. */
static void release_all(rl_client *c)
{
    rl__conn *conn;
    rl__hold *h;
    redisReply *r = NULL;
    int n = 0, i;

    if (!c->holds || rl__pool_get(c, &conn) != RL_OK)
        return;
    for (h = c->holds; h; h = h->c_next) {
        const char *argv[8];
        size_t lens[8];
        argv[0] = "EVALSHA";          lens[0] = 7;
        argv[1] = c->sha[RL__S_RELEASE]; lens[1] = 40;
        argv[2] = "2";                lens[2] = 1;
        argv[3] = h->entry->key;      lens[3] = h->entry->key_len;
        argv[4] = h->entry->channel;  lens[4] = h->entry->channel_len;
        argv[5] = h->owner;           lens[5] = h->owner_len;
        argv[6] = "0";                lens[6] = 1;
        argv[7] = "0";                lens[7] = 1;
        redisAppendCommandArgv(conn->ctx, 8, argv, lens);
        n++;
    }
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

    if (!c || !rl__registry_has(c))
        return;
    rl__client_enter(c);
    rl__registry_remove(c);

    rl__watchdog_stop(c);
    rl__sub_stop(c);
    release_all(c);

    pthread_mutex_lock(&c->mu);
    atomic_store(&c->closed, 1);
    self = rl__thread_self();
    for (h = c->holds; h; h = next) {
        next = h->c_next;
        rl__hold_mark_lost(c, h);
        /* The calling thread's holds go now; other threads' holds stay,
         * flagged, until the last handle is freed. */
        if (h->tid == self->id) {
            rl__thread_unlink(self, h);
            rl__hold_remove(c, h);
        }
    }
    idle = rl__pool_take_idle(c);
    pthread_mutex_unlock(&c->mu);
    for (; idle; idle = next_idle) {
        next_idle = idle->next;
        rl__conn_close(c, idle);
    }
    rl__client_unref(c);
}
