/*
 * fencing -- a holder that stalls past its lease, and the resource that
 * refuses its late write.
 *
 * What it shows
 *   rl_interrupted() tells a holder that its lease is gone, but only when it
 *   asks: a holder that checked, then stalled (a long GC-like pause, swap,
 *   SIGSTOP) before it wrote, writes late all the same. A fencing token
 *   closes that window on the resource's side. Every new acquisition of a
 *   name gets a larger token (rl_options.fencing, rl_lock_token()); the
 *   writer sends its token with each write, and the resource keeps the
 *   largest token it accepted and refuses anything lower.
 *
 *   Here the resource is a Redis hash guarded by a small Lua script. Two
 *   threads, each with its own client (as two processes would be):
 *     old  takes the lock with a short fixed lease, checks rl_interrupted(),
 *          then stalls until the new holder has written;
 *     new  waits for the lock, gets it when the old lease runs out, writes;
 *     old  wakes and writes with its old token: refused.
 *
 * How to run
 *   redis-server --port 6400 --save '' --daemonize yes
 *   ./fencing --url redis://127.0.0.1:6400 [--lease-ms 300]
 *
 *   --url URL       redis://[[user]:pass@]host[:port][/db], a cluster's seeds
 *                   redis://host:port,host:port,..., or unix:///path[?db=N]
 *                   (default: $RLOCK_URL; one of them is required)
 *   --lease-ms L    the old holder's fixed lease (300; 50..10000)
 *
 * Ends with "OK" (exit 0) or "FAIL: ..." (exit 1); exit 2 on bad arguments.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <rlock.h>

#include "ex_redis.h"

#define LOCK_NAME "fencing-demo"
/* The resource shares the lock's {tag}: on a cluster both live on one node. */
#define RESOURCE "resource:{" LOCK_NAME "}"

/* The resource's guard: accept a write only with a token at least as large
 * as the largest accepted so far. Returns 1 (written) or 0 (refused). */
static const char guard[] =
    "local last = tonumber(redis.call('hget', KEYS[1], 'token') or '0')\n"
    "if tonumber(ARGV[1]) < last then return 0 end\n"
    "redis.call('hset', KEYS[1], 'token', ARGV[1], 'value', ARGV[2])\n"
    "return 1\n";

static const char *url;
static long lease_ms = 300;

/* The old holder tells main when it holds (or gave up); the new holder
 * tells the stalled old one when it has written. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int old_ready, new_wrote;

static void signal_flag(int *flag)
{
    pthread_mutex_lock(&mu);
    *flag = 1;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&mu);
}

static void wait_flag(const int *flag)
{
    pthread_mutex_lock(&mu);
    while (!*flag)
        pthread_cond_wait(&cond, &mu);
    pthread_mutex_unlock(&mu);
}

struct outcome {
    unsigned long long token;
    int written;        /* 1 written, 0 refused, -1 error */
};

static rl_client *client_new(void)
{
    rl_options opts;
    rl_client *c = NULL;
    int rc;

    rl_options_init(&opts, RL_OPTIONS_VERSION);
    opts.url = url;
    opts.fencing = 1;
    if ((rc = rl_client_new(&c, &opts)) != RL_OK) {
        fprintf(stderr, "%s: rl_client_new: %s (%s)\n", ex_prog, rl_strerror(rc),
                rl_last_error());
        return NULL;
    }
    return c;
}

/* One write to the resource with a token: 1 written, 0 refused, -1 error. */
static int write_resource(unsigned long long token, const char *value)
{
    ex_conn *conn = ex_connect_url(url);
    redisReply *r;
    char tok[24];
    int out = -1;

    if (!conn)
        return -1;
    snprintf(tok, sizeof tok, "%llu", token);
    r = ex_command(conn, "EVAL %s 1 %s %s %s", guard, RESOURCE, tok, value);
    if (r && r->type == REDIS_REPLY_INTEGER)
        out = (int)r->integer;
    if (r)
        freeReplyObject(r);
    ex_close(conn);
    return out;
}

/* Take the lock with a fixed lease, check, stall, write late. */
static void *old_holder(void *arg)
{
    struct outcome *out = arg;
    rl_client *c = client_new();
    rl_lock *lock = NULL;

    out->written = -1;
    if (!c || rl_lock_new(&lock, c, LOCK_NAME) != RL_OK)
        goto done;
    if (rl_lock_try_acquire(lock, 5000, lease_ms) != RL_OK ||
        rl_lock_token(&out->token, lock) != RL_OK)
        goto done;
    printf("old holder: token %llu, lease %ld ms\n", out->token, lease_ms);
    if (rl_interrupted()) {             /* the check: all is well, now */
        fprintf(stderr, "%s: lost before it began\n", ex_prog);
        goto done;
    }
    signal_flag(&old_ready);
    /* The stall: between the check and the write, the lease runs out and
     * someone else takes the lock and writes. */
    wait_flag(&new_wrote);
    out->written = write_resource(out->token, "late write of the old holder");
    printf("old holder: woke up, wrote with token %llu: %s\n", out->token,
           out->written == 1 ? "ACCEPTED" : out->written == 0 ? "refused" : "error");
    rl_lock_release(lock);              /* RL_ELOST: its lease had run out */
done:
    signal_flag(&old_ready);            /* also when it failed: main goes on */
    rl_lock_free(lock);
    rl_client_free(c);
    return NULL;
}

/* Wait for the lock, write, tell the old holder. */
static void *new_holder(void *arg)
{
    struct outcome *out = arg;
    rl_client *c = client_new();
    rl_lock *lock = NULL;
    out->written = -1;
    if (c && rl_lock_new(&lock, c, LOCK_NAME) == RL_OK &&
        rl_lock_try_acquire(lock, 10 * lease_ms + 5000, RL_LEASE_WATCHDOG) == RL_OK &&
        rl_lock_token(&out->token, lock) == RL_OK) {
        out->written = write_resource(out->token, "write of the new holder");
        printf("new holder: token %llu, wrote: %s\n", out->token,
               out->written == 1 ? "accepted" : out->written == 0 ? "REFUSED" : "error");
        rl_lock_release(lock);
    }
    signal_flag(&new_wrote);
    rl_lock_free(lock);
    rl_client_free(c);
    return NULL;
}

int main(int argc, char **argv)
{
    struct outcome o = { 0, -1 }, n = { 0, -1 };
    pthread_t to, tn;
    ex_conn *conn;
    int i;

    ex_prog = "fencing";
    url = getenv("RLOCK_URL");
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--url") == 0 && i + 1 < argc) {
            url = argv[++i];
        } else if (strcmp(argv[i], "--lease-ms") == 0 && i + 1 < argc) {
            if (ex_parse_long(argv[++i], 50, 10000, &lease_ms) != 0) {
                fprintf(stderr, "%s: --lease-ms must be 50..10000\n", ex_prog);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: %s --url URL [--lease-ms L]\n", ex_prog);
            return 2;
        }
    }
    if (!url) {
        fprintf(stderr, "%s: --url or $RLOCK_URL is required\n", ex_prog);
        return 2;
    }
    /* A fresh resource for the demo. */
    if (!(conn = ex_connect_url(url)) || ex_ok(ex_command(conn, "DEL %s", RESOURCE)) != 0) {
        ex_close(conn);
        return 1;
    }
    ex_close(conn);

    if (pthread_create(&to, NULL, old_holder, &o) != 0)
        return 1;
    wait_flag(&old_ready);              /* the new holder comes second */
    if (pthread_create(&tn, NULL, new_holder, &n) != 0)
        return 1;
    pthread_join(tn, NULL);
    pthread_join(to, NULL);

    if (n.written != 1 || o.written != 0 || n.token <= o.token) {
        printf("FAIL: new token %llu (%d), old token %llu (%d)\n", n.token, n.written, o.token,
               o.written);
        return 1;
    }
    printf("OK: the resource kept the new holder's write; the stalled old holder's late "
           "write (token %llu < %llu) was refused\n", o.token, n.token);
    return 0;
}
