/*
 * long_job -- a job that runs far longer than its lease, and what its holder
 * learns when Redis stops answering.
 *
 * What it shows
 *   1. The watchdog. The lock is taken with the watchdog lease (opts.lease_ms,
 *      short here so the demo is quick). The job runs for several leases and
 *      prints, about once a lease, the TTL Redis has on the lock: it keeps
 *      coming back up because the client's watchdog thread renews it.
 *   2. Loss signalling. A second connection freezes Redis with CLIENT PAUSE.
 *      Renewals can no longer be confirmed, and rl_interrupted() -- polled
 *      between the job's steps, with no I/O -- turns true before the lease can
 *      have run out in Redis: the job stops before anyone else can get the
 *      lock. The on_lost callback tells the same from the watchdog thread.
 *   3. Honest release. Releasing the lost lock reports RL_ELOST (or
 *      RL_ENOTOWNER), never RL_OK.
 *
 * How to run
 *   redis-server --port 6400 --save '' --daemonize yes
 *   ./long_job --url redis://127.0.0.1:6400 [--lease-ms 1500] [--duration-ms 6000]
 *
 *   --url URL          redis://[[user]:pass@]host[:port][/db], a cluster's seeds
 *                      redis://host:port,host:port,..., or unix:///path[?db=N]
 *                      (default: $RLOCK_URL; one of them is required)
 *   --lease-ms L       watchdog lease (1500; 300..60000)
 *   --duration-ms D    length of the healthy part of the job (4 x lease)
 *
 * CLIENT PAUSE stalls every client of that Redis (on a cluster: of the master
 * that holds the lock) for 2 x lease + 0.5 s: use a throwaway server. Ends
 * with "OK" (exit 0) or "FAIL: ..." (exit 1); exit 2 on bad arguments.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep: POSIX, not C11 */

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>
#include <rlock.h>

#include "ex_redis.h"

#define LOCK_NAME "long_job"
#define LOCK_KEY  "rl:{" LOCK_NAME "}"  /* rlock's key for it (default prefix) */

/* What the on_lost callback saw; written by the watchdog thread. */
struct lost_signal {
    atomic_int ran;
    atomic_llong at_ms;
};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A stand-in for one step of real work. */
static void work_for(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* Called once per lost hold, from the watchdog thread: just record it. */
static void on_lost(const char *name, size_t name_len, void *payload)
{
    struct lost_signal *lost = payload;

    (void)name;
    (void)name_len;
    atomic_store(&lost->at_ms, now_ms());
    atomic_store(&lost->ran, 1);
}

/* Show the library's warnings, so the outage is visible as it happens. */
static void on_log(int level, const char *message, void *payload)
{
    (void)payload;
    if (level <= RL_LOG_WARN)
        fprintf(stderr, "  [rlock %s] %s\n",
                level == RL_LOG_ERROR ? "error" : "warn", message);
}


/*
 * Block until a CLIENT PAUSE ends: Redis holds a paused client's PING until
 * then. The deadline is the connection's reply timeout.
 */
static int wait_for_unpause(ex_conn *admin, long pause_ms)
{
    struct timeval tv = { (pause_ms + 2000) / 1000, 0 };

    redisSetTimeout(admin->ctx, tv);
    return ex_ok(ex_command(admin, "PING"));
}

int main(int argc, char **argv)
{
    const char *url = NULL;
    long lease_ms = 1500, duration_ms = -1, pause_ms, ttl_ms;
    long long start, next_report, paused_at = 0, deadline;
    struct lost_signal lost;
    rl_options opts;
    rl_client *client = NULL;
    rl_lock *lock = NULL;
    ex_conn *admin = NULL;
    int status, held = 0, failed = 1;

    ex_prog = "long_job";
    for (int i = 1; i < argc; i += 2) {     /* --option value */
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = val == NULL;

        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: long_job [--url URL] [--lease-ms L] [--duration-ms D]\n"
                   "  --url URL        redis://[[user]:pass@]host[:port][/db], a cluster's\n"
                   "                   seeds redis://host:port,host:port,..., or\n"
                   "                   unix:///path[?db=N]; default: the RLOCK_URL variable\n"
                   "  --lease-ms L     watchdog lease (1500; 300..60000)\n"
                   "  --duration-ms D  length of the healthy part of the job (4 x lease)\n");
            return 0;
        }
        if (!bad && strcmp(argv[i], "--url") == 0)
            url = val;
        else if (!bad && strcmp(argv[i], "--lease-ms") == 0)
            bad = ex_parse_long(val, 300, 60000, &lease_ms);
        else if (!bad && strcmp(argv[i], "--duration-ms") == 0)
            bad = ex_parse_long(val, 0, 3600000, &duration_ms);
        else
            bad = 1;
        if (bad) {
            fprintf(stderr, "long_job: bad option \"%s\"\n", argv[i]);
            return 2;
        }
    }
    if (url == NULL && (url = getenv("RLOCK_URL")) != NULL && *url == '\0')
        url = NULL;
    if (url == NULL) {
        fprintf(stderr, "long_job: --url or RLOCK_URL is required (see --help)\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);   /* keep order with the log on stderr */
    if (duration_ms < 0)
        duration_ms = 4 * lease_ms;
    pause_ms = 2 * lease_ms + 500;

    atomic_init(&lost.ran, 0);
    atomic_init(&lost.at_ms, 0);
    rl_options_init(&opts, RL_OPTIONS_VERSION);
    opts.url = url;
    opts.lease_ms = lease_ms;       /* renewed every lease / 3 */
    opts.on_lost = on_lost;
    opts.log = on_log;
    opts.payload = &lost;
    if ((status = rl_client_new(&client, &opts)) != RL_OK ||
        (status = rl_lock_new(&lock, client, LOCK_NAME)) != RL_OK) {
        fprintf(stderr, "long_job: setup: %s (%s)\n",
                rl_strerror(status), rl_last_error());
        goto out;
    }
    /* Connect the pausing connection now: once Redis is paused, it is too
     * late. On a cluster, asking about the lock's key moves it (MOVED) to
     * the master that holds the lock: that is the one to pause. */
    if ((admin = ex_connect_url(url)) == NULL ||
        ex_ok(ex_command(admin, "EXISTS %s", LOCK_KEY)) != 0)
        goto out;

    /* ---- 1. a job several leases long, kept alive by the watchdog ---- */
    if ((status = rl_lock_acquire(lock)) != RL_OK) {
        fprintf(stderr, "long_job: acquire: %s (%s)\n",
                rl_strerror(status), rl_last_error());
        goto out;
    }
    held = 1;
    printf("acquired \"%s\" with a watchdog lease of %ld ms; working for %ld ms\n",
           LOCK_NAME, lease_ms, duration_ms);
    start = now_ms();
    next_report = start + lease_ms;
    while (now_ms() - start < duration_ms) {
        if (rl_interrupted()) {
            printf("FAIL: lease lost while Redis was answering\n");
            goto out;
        }
        work_for(50);
        if (now_ms() >= next_report) {
            if ((status = rl_lock_ttl(&ttl_ms, lock)) != RL_OK || ttl_ms <= 0) {
                printf("FAIL: lock TTL %ld (%s: %s)\n", ttl_ms,
                       rl_strerror(status), rl_last_error());
                goto out;
            }
            printf("  %4.1f leases into the job: TTL %ld ms of %ld\n",
                   (double)(now_ms() - start) / (double)lease_ms, ttl_ms, lease_ms);
            next_report += lease_ms;
        }
    }
    printf("the job outlived its lease %.1f times over; the watchdog kept the lock\n",
           (double)duration_ms / (double)lease_ms);

    /* ---- 2. Redis stops answering: the flag must rise ---- */
    if ((status = rl_lock_ttl(&ttl_ms, lock)) != RL_OK) {
        printf("FAIL: rl_lock_ttl: %s (%s)\n", rl_strerror(status), rl_last_error());
        goto out;
    }
    if (ex_ok(ex_command(admin, "CLIENT PAUSE %ld ALL", pause_ms)) != 0)
        goto out;
    paused_at = now_ms();
    printf("Redis paused for %ld ms (CLIENT PAUSE ... ALL), lock TTL %ld ms;"
           " the job keeps polling\n", pause_ms, ttl_ms);
    deadline = paused_at + 3 * lease_ms;
    while (!rl_interrupted()) {
        if (now_ms() >= deadline) {
            printf("FAIL: rl_interrupted() still 0 after %ld ms (3 leases)\n",
                   3 * lease_ms);
            goto out;
        }
        work_for(10);
    }
    printf("rl_interrupted() rose %lld ms into the pause (the lease had %ld ms left):"
           " job stopped, nothing more written\n", now_ms() - paused_at, ttl_ms);

    /* Let the pause run out, then give the watchdog one lease to report. */
    if (wait_for_unpause(admin, pause_ms) != 0)
        goto out;
    printf("Redis answers again, %lld ms after the pause began\n", now_ms() - paused_at);
    deadline = now_ms() + lease_ms;
    while (!atomic_load(&lost.ran) && now_ms() < deadline)
        work_for(10);
    if (atomic_load(&lost.ran))
        printf("on_lost callback ran, %lld ms after the pause began\n",
               atomic_load(&lost.at_ms) - paused_at);
    else
        printf("on_lost callback did not run\n");

    /* ---- 3. releasing a lost lock says so ---- */
    status = rl_lock_release(lock);
    held = 0;
    printf("release: %s (%s%s%s)\n",
           status == RL_ELOST ? "RL_ELOST" : status == RL_ENOTOWNER ? "RL_ENOTOWNER"
           : status == RL_OK ? "RL_OK" : "unexpected status", rl_strerror(status),
           *rl_last_error() ? ": " : "", rl_last_error());
    if (status == RL_OK)
        printf("FAIL: release of a lost lock reported success\n");
    else if (status != RL_ELOST && status != RL_ENOTOWNER)
        printf("FAIL: expected RL_ELOST or RL_ENOTOWNER\n");
    else if (rl_lock_hold_count(lock) != 0)
        printf("FAIL: hold count %d after release\n", rl_lock_hold_count(lock));
    else {
        printf("OK\n");
        failed = 0;
    }

out:
    /* On a failure midway, outlast the pause so the release gets an answer. */
    if (held && paused_at != 0 && admin != NULL)
        wait_for_unpause(admin, pause_ms);
    if (held)
        rl_lock_release(lock);
    rl_lock_free(lock);
    rl_client_free(client);
    ex_close(admin);
    return failed;
}
