/*
 * rl_client: options, creation, the owner identity, and shutdown.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "client.h"
#include "command.h"
#include "conn.h"
#include "error.h"
#include "fork.h"
#include "holds.h"
#include "nopipe.h"
#include "outcome.h"
#include "owner.h"
#include "redlock.h"
#include "router.h"
#include "rwlock.h"
#include "sentinel.h"
#include "server.h"
#include "slot.h"
#include "stats.h"
#include "subscriber.h"
#include "thread.h"
#include "tls.h"
#include "url.h"
#include "util.h"
#include "watchdog.h"

#define RL__PREFIX_MAX 256

#define RL__DEFAULT_LEASE_MS   30000
#define RL__DEFAULT_TIMEOUT_MS 2000
#define RL__DEFAULT_POOL       8
#define RL__DEFAULT_REPLICAS_MS 1000
#define RL__REPLICAS_MAX 1000

/* Bytes of rl_options that each layout version has: fields are only ever
 * appended, so a version's layout is a prefix of the next one's. */
static size_t options_size(unsigned int version)
{
    switch (version) {
    case 1:
        return offsetof(rl_options, payload) + sizeof(void *);
    case 2:
        return offsetof(rl_options, wait_replicas_ms) + sizeof(long);
    case 3:
        return offsetof(rl_options, client_name) + sizeof(const char *);
    case 4:
        return offsetof(rl_options, lock_delay_ms) + sizeof(long);
    case 5:
        return offsetof(rl_options, tls_insecure_skip_verify) + sizeof(int);
    default:
        return 0;
    }
}

int rl_options_init(rl_options *opts, unsigned int version)
{
    rl_options full;
    size_t size = options_size(version);

    rl__err_clear();
    if (!opts)
        return rl__err(RL_EINVAL, "opts is NULL");
    if (!size)
        return rl__err(RL_EINVAL, "rl_options version %u is not one this library knows "
                       "(1..%d): pass RL_OPTIONS_VERSION", version, RL_OPTIONS_VERSION);
    memset(&full, 0, sizeof full);
    full.version = version;
    full.lease_ms = RL__DEFAULT_LEASE_MS;
    full.renew_interval_ms = 0;     /* lease_ms / 3 */
    full.connect_timeout_ms = RL__DEFAULT_TIMEOUT_MS;
    full.command_timeout_ms = RL__DEFAULT_TIMEOUT_MS;
    full.pool_size = RL__DEFAULT_POOL;
    full.wait_replicas = 0;
    full.wait_replicas_ms = RL__DEFAULT_REPLICAS_MS;
    /* Only the caller's layout: its struct may be shorter than ours. */
    memcpy(opts, &full, size);
    return RL_OK;
}

/* The caller's options in this library's layout: the fields its version
 * has, and the defaults for those it does not. */
static int read_options(rl_options *out, const rl_options *in)
{
    size_t size;

    rl_options_init(out, RL_OPTIONS_VERSION);
    if (!in)
        return RL_OK;
    if (in->version == 0)
        return rl__err(RL_EINVAL, "rl_options.version is 0: fill the struct with "
                       "rl_options_init(&opts, RL_OPTIONS_VERSION) first");
    if (!(size = options_size(in->version)))
        return rl__err(RL_EINVAL, "rl_options version %u is newer than this library "
                       "(it knows 1..%d)", in->version, RL_OPTIONS_VERSION);
    memcpy(out, in, size);
    return RL_OK;
}

static int check_options(const rl_options *o)
{
    long lease = o->lease_ms ? o->lease_ms : RL__DEFAULT_LEASE_MS;
    long renew, command, margin;

    if (o->lease_ms < 0 || (o->lease_ms && o->lease_ms < RL_LEASE_MIN_MS) ||
        o->lease_ms > RL_TIME_MAX_MS)
        return rl__err(RL_EINVAL, "lease_ms must be %d..%ld (or 0 for the default)",
                       RL_LEASE_MIN_MS, RL_TIME_MAX_MS);
    if (o->connect_timeout_ms < 0 || o->command_timeout_ms < 0 ||
        o->connect_timeout_ms > RL_TIME_MAX_MS || o->command_timeout_ms > RL_TIME_MAX_MS)
        return rl__err(RL_EINVAL, "timeouts must be 1..%ld ms (or 0 for the default)",
                       RL_TIME_MAX_MS);
    if (o->renew_interval_ms < 0 || o->renew_interval_ms > RL_TIME_MAX_MS)
        return rl__err(RL_EINVAL, "renew_interval_ms must be 1..%ld (or 0 for lease_ms / 3)",
                       RL_TIME_MAX_MS);
    /* A hold taken just after a renewal round is renewed one interval later;
     * that renewal, reply included, must be done before the hold's lease
     * less the drift margin runs out. The renewal waits for its reply at
     * most the command timeout, and at most one interval. */
    renew = o->renew_interval_ms ? o->renew_interval_ms : lease / 3;
    command = o->command_timeout_ms ? o->command_timeout_ms : RL__DEFAULT_TIMEOUT_MS;
    margin = rl__drift_ms(lease);
    if (renew + (command < renew ? command : renew) > lease - margin)
        return rl__err(RL_EINVAL, "renew_interval_ms %ld is too long for lease_ms %ld: "
                       "the interval plus min(command_timeout_ms, interval) must fit in "
                       "the lease less its margin (%ld ms), so at most %ld here",
                       renew, lease, margin,
                       command < (lease - margin) / 2 ? lease - margin - command
                                                      : (lease - margin) / 2);
    if (o->pool_size < 0 || o->pool_size > 1024)
        return rl__err(RL_EINVAL, "pool_size must be 1..1024 (or 0 for the default)");
    if (o->wait_replicas < 0 || o->wait_replicas > RL__REPLICAS_MAX)
        return rl__err(RL_EINVAL, "wait_replicas must be 0..%d", RL__REPLICAS_MAX);
    if (o->wait_replicas_ms < 0 || o->wait_replicas_ms > RL_TIME_MAX_MS)
        return rl__err(RL_EINVAL, "wait_replicas_ms must be 1..%ld (or 0 for the default)",
                       RL_TIME_MAX_MS);
    if (o->client_name) {
        size_t n = strnlen(o->client_name, RL_CLIENT_NAME_MAX + 1);
        if (n == 0 || n > RL_CLIENT_NAME_MAX ||
            strspn(o->client_name, RL__NAME_CHARS) != n)
            return rl__err(RL_EINVAL, "client_name must be 1..%d bytes of [A-Za-z0-9._-]",
                           RL_CLIENT_NAME_MAX);
    }
    if (o->lock_delay_ms < 0 || o->lock_delay_ms > RL_TIME_MAX_MS)
        return rl__err(RL_EINVAL, "lock_delay_ms must be 0..%ld", RL_TIME_MAX_MS);
    /* Redis keeps a hold for its lease plus the delay: cut short, the
     * delay would be lost, or the lease end before the holder's flag. */
    if (lease > RL_TIME_MAX_MS - o->lock_delay_ms)
        return rl__err(RL_EINVAL, "lease_ms %ld plus lock_delay_ms %ld is past %ld ms (Redis "
                       "keeps a hold for both)", lease, o->lock_delay_ms, RL_TIME_MAX_MS);
    if (o->key_prefix && (strlen(o->key_prefix) > RL__PREFIX_MAX ||
                          strpbrk(o->key_prefix, "{}")))
        return rl__err(RL_EINVAL, "key_prefix must be at most %d bytes without '{' or '}'",
                       RL__PREFIX_MAX);
    return RL_OK;
}

/*
 * Whether this user may send release notices: PUBLISH on a channel of the
 * prefix that no lock uses (names are never empty). An ACL user without
 * channel rights gets NOPERM; the client then works without notices.
 */
static int probe_notices(rl_client *c, rl__conn *conn, int record)
{
    char ch[RL__PREFIX_MAX + sizeof "{}:release"];
    const char *argv[3] = { "PUBLISH", ch, "" };
    size_t lens[3] = { 7, 0, 0 };
    redisReply *r = NULL;
    int rc;

    if (c->mode == RL__MODE_CLUSTER) {
        argv[0] = "SPUBLISH";      /* sharded: on the channel's master */
        lens[0] = 8;
    }
    lens[1] = (size_t)snprintf(ch, sizeof ch, "%s{}:release", c->prefix);
    /* The owner record rides along when it lives on this server. */
    if (record) {
        rc = rl__owner_read(c, conn, rl__owner_append(c, conn));
        if (rc == RL_ECONN)
            return rl__err(rc, "writing the owner record: %s", rl__conn_error(conn));
        pthread_mutex_lock(&c->mu);
        c->owner_due = rl__now_ms() + rl__owner_ttl_ms(c) / 3;
        pthread_mutex_unlock(&c->mu);
    }
    if ((rc = rl__conn_call(conn, &r, 3, argv, lens)) != RL_OK)
        return rc;
    /* Only a refusal counts: on a Cluster, a MOVED says nothing of rights. */
    if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOPERM", 6) == 0) {
        atomic_store(&c->no_notices, 1);
        rl__log(c, RL_LOG_ERROR, "rlock: this Redis user may not %s on rlock's release "
                "channels (%.200s): grant it the channels '%s*' (ACL &%s*). Until then "
                "locks work without release notices: waiters ask Redis again every %d..%d ms",
                argv[0], r->str, c->prefix, c->prefix, RL__POLL_MIN_MS, RL__POLL_MAX_MS);
    }
    freeReplyObject(r);
    return RL_OK;
}

/* The first connection: to the first seed that answers. Its server is the
 * client's home: the single server, or where a Cluster is first asked. */
static int connect_first(rl_client *c, rl__conn **out)
{
    rl__server *s;
    int i, n = c->url.is_unix ? 1 : c->url.nseeds, rc = RL_ECONN;

    for (i = 0; i < n; i++) {
        pthread_mutex_lock(&c->mu);
        s = c->url.is_unix ? rl__server_get(c, NULL, 0)
                           : rl__server_get(c, c->url.seeds[i].host, c->url.seeds[i].port);
        pthread_mutex_unlock(&c->mu);
        if (!s)
            return rl__err(RL_ENOMEM, "out of memory");
        /* A refusal (password, ACL) is the same on every seed: say it. */
        if ((rc = rl__conn_open(c, s, out)) != RL_ECONN) {
            if (rc == RL_OK)
                c->home = s;
            return rc;
        }
    }
    return rc;
}

static void client_destroy(rl_client *c)
{
    rl__hold *h, *next;

    for (h = c->holds; h; h = next) {
        next = h->c_next;
        free(h);
    }
    rl__servers_free(c);
    free(c->slot_map);
    rl__leftovers_free(c);
    rl__hold_free_spares(c);
    rl__entry_free_all(c);
    rl__tls_client_free(c);
    rl__url_clear(&c->url);
    free(c->prefix);
    free(c->name);
    pthread_cond_destroy(&c->pool_cond);
    pthread_cond_destroy(&c->wd_cond);
    pthread_cond_destroy(&c->kp_cond);
    pthread_cond_destroy(&c->leftover_cond);
    pthread_cond_destroy(&c->round_cond);
    pthread_cond_destroy(&c->calls_cond);
    pthread_cond_destroy(&c->map_cond);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void rl__client_unref(rl_client *c)
{
    if (atomic_fetch_sub(&c->refs, 1) == 1)
        client_destroy(c);
}

/* The client's settings, from options already checked. On failure nothing
 * is left allocated but c itself. */
static int configure(rl_client *c, const rl_options *opts)
{
    int rc;

    if ((rc = rl__url_parse(&c->url, opts->url)) != RL_OK)
        return rc;
    c->prefix = rl__strdup(opts->key_prefix ? opts->key_prefix : "rl:");
    if (!c->prefix) {
        rl__url_clear(&c->url);
        return rl__err(RL_ENOMEM, "out of memory");
    }
    c->prefix_len = strlen(c->prefix);
    if (opts->client_name && !(c->name = rl__strdup(opts->client_name))) {
        rl__url_clear(&c->url);
        free(c->prefix);
        return rl__err(RL_ENOMEM, "out of memory");
    }
    c->lease_ms = opts->lease_ms ? opts->lease_ms : RL__DEFAULT_LEASE_MS;
    c->renew_ms = opts->renew_interval_ms ? opts->renew_interval_ms : c->lease_ms / 3;
    if (c->renew_ms < 1)
        c->renew_ms = 1;
    c->connect_ms = opts->connect_timeout_ms ? opts->connect_timeout_ms : RL__DEFAULT_TIMEOUT_MS;
    c->command_ms = opts->command_timeout_ms ? opts->command_timeout_ms : RL__DEFAULT_TIMEOUT_MS;
    c->pool_size = opts->pool_size ? opts->pool_size : RL__DEFAULT_POOL;
    c->wait_replicas = opts->wait_replicas;
    c->wait_replicas_ms = opts->wait_replicas_ms ? opts->wait_replicas_ms
                                                 : RL__DEFAULT_REPLICAS_MS;
    if (c->wait_replicas && c->url.redlock) {
        rl__url_clear(&c->url);
        free(c->prefix);
        free(c->name);
        return rl__err(RL_EINVAL, "wait_replicas does not apply to redlock:// (the masters "
                       "are independent; the majority is the safeguard)");
    }
    if ((opts->fencing || opts->lock_delay_ms) && c->url.redlock) {
        rl__url_clear(&c->url);
        free(c->prefix);
        free(c->name);
        return rl__err(RL_ENOTSUP, "%s is not offered with redlock:// (independent masters "
                       "keep no one counter or delay)",
                       opts->fencing ? "fencing" : "lock_delay_ms");
    }
    c->fencing = opts->fencing != 0;
    c->delay_ms = opts->lock_delay_ms;
    c->on_lost = opts->on_lost;
    c->log = opts->log;
    c->payload = opts->payload;
    if ((rc = rl__tls_client_init(c, opts)) != RL_OK) {
        rl__url_clear(&c->url);
        free(c->prefix);
        free(c->name);
        return rc;
    }
    if (c->tls_insecure)
        rl__log(c, RL_LOG_WARN, "rlock: tls_insecure_skip_verify is set: the servers' "
                "certificates are not verified, and anyone on the path can pose as them");
    return RL_OK;
}

/* The counters, flags, identity, mutex and condition variables of a new
 * client. */
static void init_state(rl_client *c)
{
    c->sub_efd = -1;
    atomic_init(&c->refs, 1);
    atomic_init(&c->closed, 0);
    atomic_init(&c->forked, 0);
    atomic_init(&c->no_notices, 0);
    atomic_init(&c->no_subscribe, 0);
    atomic_init(&c->closing, 0);
    atomic_init(&c->calls, 0);
    rl__stats_reset(&c->stats);
    rl__identity_new(c);

    pthread_mutex_init(&c->mu, NULL);
    rl__cond_init(&c->pool_cond);
    rl__cond_init(&c->wd_cond);
    rl__cond_init(&c->kp_cond);
    rl__cond_init(&c->leftover_cond);
    rl__cond_init(&c->round_cond);
    rl__cond_init(&c->calls_cond);
    rl__cond_init(&c->map_cond);
}

/* Connect now, so a bad address or password is reported at creation. */
static int connect_now(rl_client *c)
{
    rl__conn *conn;
    int rc;

    if (c->url.redlock || c->url.sentinel) {
        rc = c->url.redlock ? rl__redlock_init(c) : rl__sentinel_init(c);
        if (rc == RL_OK && (rc = rl__pool_get(c, c->home, &conn)) == RL_OK) {
            /* Sentinel: the record lives on the primary; Redlock: on
             * every master, written below. */
            rc = probe_notices(c, conn, !c->url.redlock);
            rl__pool_put(c, conn);
        }
        if (rc == RL_OK && c->url.redlock)
            rl__owner_write(c);
        if (rc == RL_OK && c->url.sentinel) {
            /* The subscriber hears of failovers (+switch-master). */
            pthread_mutex_lock(&c->mu);
            rc = rl__sub_ensure(c);
            pthread_mutex_unlock(&c->mu);
        }
    } else if ((rc = connect_first(c, &conn)) == RL_OK) {
        rc = rl__conn_load_scripts(c, conn);
        if (rc == RL_OK)
            rc = rl__router_init(c, conn);
        if (rc == RL_OK) {
            /* Cluster: the record's slot may be another master's. */
            int here;
            pthread_mutex_lock(&c->mu);
            here = rl__route_server(c, rl__slot(c->owner_key, c->owner_key_len)) ==
                   conn->server;
            pthread_mutex_unlock(&c->mu);
            rc = probe_notices(c, conn, here);
            rl__pool_adopt(c, conn);
            if (rc == RL_OK && !here)
                rl__owner_write(c);
        } else {
            rl__pool_adopt(c, conn);
        }
    }
    return rc;
}

int rl_client_new(rl_client **out, const rl_options *user_opts)
{
    rl_options full, *opts = &full;
    rl_client *c;
    int rc;

    rl__err_clear();
    if (!out)
        return rl__err(RL_EINVAL, "out is NULL");
    if ((rc = read_options(&full, user_opts)) != RL_OK || (rc = check_options(opts)) != RL_OK)
        return rc;

    c = calloc(1, sizeof *c);
    if (!c)
        return rl__err(RL_ENOMEM, "out of memory");
    if ((rc = configure(c, opts)) != RL_OK) {
        free(c);
        return rc;
    }
    init_state(c);
    rc = connect_now(c);
    if (rc == RL_OK)
        rc = rl__registry_add(c);
    if (rc != RL_OK) {
        rl__sub_stop(c);
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
        return rl__shut_down();
    if (atomic_load_explicit(&c->forked, memory_order_acquire)) {
        pthread_mutex_lock(&c->mu);
        /* The child is a new owner. Its record is written by its watchdog
         * once it holds something (owner_due is 0), not here: this thread
         * must not wait for every master on its first call. */
        if (atomic_load(&c->forked))
            rl__rebuild_after_fork(c);
        pthread_mutex_unlock(&c->mu);
    }
    return RL_OK;
}

/* A connection to server s, from conn[] (one per server, borrowed on
 * first use, scripts loaded); NULL when it cannot be had. */
static rl__conn *conn_on(rl_client *c, rl__conn **conn, rl__server *s)
{
    int rc;

    if (conn[s->index])
        return conn[s->index];
    /* Redlock: a node found down is not waited for; the others are. */
    rc = c->mode == RL__MODE_REDLOCK ? rl__pool_get_quick(c, s, &conn[s->index])
                                     : rl__pool_get(c, s, &conn[s->index]);
    if (rc != RL_OK)
        return conn[s->index] = NULL;
    /* Sentinel: a new connection may be to an old primary restarted empty;
     * it is not checked here. A drop removes only our own fields, so on
     * such a node it does nothing, and a check would wait for the
     * sentinels, who no longer answer once a shutdown has stopped the
     * subscriber: the drop would be skipped and the name kept a lease. The
     * connection stays `fresh`, checked before any other use. */
    /* The drops are pipelined and their replies not read one by one: a
     * master that never ran our scripts (a Cluster node this client only
     * met through MOVED, a restarted one) would answer NOSCRIPT to each and
     * leave the locks for their leases. Load them first. */
    if (rl__conn_load_scripts(c, conn[s->index]) != RL_OK) {
        rl__pool_put(c, conn[s->index]);
        conn[s->index] = NULL;
    }
    return conn[s->index];
}

/* The same, to the server that arbitrates e now. */
static rl__conn *conn_for(rl_client *c, rl__conn **conn, const rl__entry *e)
{
    rl__server *s;

    pthread_mutex_lock(&c->mu);
    s = rl__route_server(c, e->slot);
    pthread_mutex_unlock(&c->mu);
    return conn_on(c, conn, s);
}

/* Release, in one pipelined round per server, every hold and leftover
 * still known. Best effort: what fails here runs out with its lease. */
static void release_all(rl_client *c)
{
    rl__conn *conn[RL__SERVERS_MAX], *to;
    int sent[RL__SERVERS_MAX];
    rl__hold *h;
    rl__leftover *lo;
    redisReply *r = NULL;
    int i, k;

    if (!c->holds && !c->leftovers)
        return;
    memset(conn, 0, sizeof conn);
    memset(sent, 0, sizeof sent);
    for (h = c->holds; h; h = h->c_next) {
        /* Redlock: from every node; else from the name's server. */
        for (i = 0; i < (c->nnodes ? c->nnodes : 1); i++) {
            to = c->nnodes ? conn_on(c, conn, c->servers[i]) : conn_for(c, conn, h->entry);
            if (!to)
                continue;
            rl__append_drop(to, c, h->entry, h->owner, h->owner_len, 0);
            sent[to->server->index]++;
        }
    }
    for (lo = c->leftovers; lo; lo = lo->next) {
        if (!(to = lo->server ? conn_on(c, conn, lo->server) : conn_for(c, conn, lo->entry)))
            continue;
        /* The change that left it may still be on its way: fence it first. */
        sent[to->server->index] += rl__conn_append_kill(to, &lo->fence);
        rl__append_drop(to, c, lo->entry, lo->owner, lo->owner_len, 0);
        sent[to->server->index]++;
    }
    for (i = 0; i < RL__SERVERS_MAX; i++) {
        if (!conn[i])
            continue;
        for (k = 0; k < sent[i]; k++) {
            if (rl__redis_get_reply(conn[i]->ctx, (void **)&r) != REDIS_OK)
                break;
            freeReplyObject(r);
        }
        rl__pool_put(c, conn[i]);
    }
}

/* Wake every thread that waits inside a call on c. Mutex held. */
static void wake_all(rl_client *c)
{
    rl__queue_wake_everyone(c);
    pthread_cond_broadcast(&c->pool_cond);
    pthread_cond_broadcast(&c->map_cond);
    pthread_cond_broadcast(&c->leftover_cond);
    pthread_cond_broadcast(&c->round_cond);
}

/* Call on_lost, from this thread, for every hold not reported yet. The
 * watchdog is stopped and no call is in flight: nothing else reports. */
static void report_dropped(rl_client *c)
{
    rl__hold *h;

    pthread_mutex_lock(&c->mu);
    for (;;) {
        for (h = c->holds; h && h->reported; h = h->c_next)
            ;
        if (!h)
            break;
        rl__hold_report(c, h);
    }
    pthread_mutex_unlock(&c->mu);
}

int rl_client_shutdown(rl_client *c)
{
    rl__hold *h, *next;
    rl__conn *idle, *next_idle;
    rl__leftover *lo;

    rl__err_clear();
    /* Our own reference: a concurrent rl_client_free must not free c
     * under us. */
    if (!c || !rl__registry_ref(c))
        return rl__err(RL_EINVAL, "not a live client (freed already?)");
    rl__client_enter(c);

    pthread_mutex_lock(&c->mu);
    if (atomic_exchange(&c->closing, 1)) {
        /* Another thread is shutting it down: wait until it is done. */
        while (!c->shut)
            pthread_cond_wait(&c->calls_cond, &c->mu);
        pthread_mutex_unlock(&c->mu);
        rl__client_unref(c);
        return RL_OK;
    }
    /* Waiters return RL_ECANCELED; calls in flight finish their round trip
     * (bounded by the command timeout) and leave. */
    wake_all(c);
    while (atomic_load(&c->calls) > 0)
        pthread_cond_wait(&c->calls_cond, &c->mu);
    pthread_mutex_unlock(&c->mu);

    rl__watchdog_stop(c);
    rl__sub_stop(c);

    /* Flag every hold first: no holder may go on believing it holds a lock
     * that the release below lets another process take. */
    pthread_mutex_lock(&c->mu);
    for (h = c->holds; h; h = h->c_next)
        rl__hold_mark_lost(c, h, RL__LOST_SHUTDOWN, "the client was shut down");
    pthread_mutex_unlock(&c->mu);
    report_dropped(c);
    release_all(c);
    rl__owner_erase(c);     /* a graceful exit leaves nothing behind */

    pthread_mutex_lock(&c->mu);
    atomic_store(&c->closed, 1);
    /* Every holder, the calling thread included, learns it once through
     * rl_interrupted(), and frees its record itself. */
    for (h = c->holds; h; h = next) {
        next = h->c_next;
        rl__hold_orphan(c, h);
    }
    for (lo = c->leftovers; lo; lo = lo->next)
        lo->entry->leftovers--;
    idle = rl__pool_take_idle(c);
    pthread_mutex_unlock(&c->mu);
    for (; idle; idle = next_idle) {
        next_idle = idle->next;
        rl__conn_close(c, idle);
    }
    rl__log(c, RL_LOG_INFO, "rlock client %s shut down", c->uuid);
    pthread_mutex_lock(&c->mu);
    c->shut = 1;
    pthread_cond_broadcast(&c->calls_cond);
    pthread_mutex_unlock(&c->mu);
    rl__client_unref(c);
    return RL_OK;
}

void rl_client_free(rl_client *c)
{
    if (!c || rl_client_shutdown(c) != RL_OK)
        return;
    rl__registry_remove(c);
    rl__client_unref(c);
}

int rl__call_begin(rl_client *c)
{
    int rc;

    atomic_fetch_add(&c->calls, 1);
    if (atomic_load(&c->closing)) {
        rl__call_end(c);
        return rl__shut_down();
    }
    if ((rc = rl__client_enter(c)) != RL_OK)
        rl__call_end(c);
    return rc;
}

void rl__call_end(rl_client *c)
{
    /* The last call out wakes a shutdown that waits for it. */
    if (atomic_fetch_sub(&c->calls, 1) == 1 && atomic_load(&c->closing)) {
        pthread_mutex_lock(&c->mu);
        pthread_cond_broadcast(&c->calls_cond);
        pthread_mutex_unlock(&c->mu);
    }
}
