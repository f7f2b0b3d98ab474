/*
 * stats_prometheus -- a client's counters (rl_client_stats) in the
 * Prometheus text exposition format, after some lock work to count.
 *
 * What it shows
 *   1. rl_client_stats(): set `version`, call, read. No I/O and no lock of
 *      the client taken, so a metrics endpoint may call it on every scrape.
 *   2. The mapping to Prometheus: counters as *_total, the holds lost by
 *      cause and the lost replies by outcome as labels, the wait-time
 *      buckets as a cumulative histogram in seconds, holds and waiters now
 *      as gauges.
 *
 * How to run
 *   redis-server --port 6400 --save '' --daemonize yes
 *   ./stats_prometheus --url redis://127.0.0.1:6400 [--threads 4] [--rounds 50]
 *
 *   --url URL      redis://[[user]:pass@]host[:port][/db], a cluster's seeds,
 *                  redlock://h1:p1,h2:p2,h3:p3, sentinel://s1,s2/name or
 *                  unix:///path[?db=N] (default: $RLOCK_URL; one is required)
 *   --threads N    threads taking the same lock (4; 1..64)
 *   --rounds R     acquisitions per thread (50; 1..100000)
 *
 * Each thread takes the lock "stats_prometheus" R times (waiting for the
 * others), re-enters it once, releases both holds, and tries once without
 * waiting (busy or not). The metrics go to stdout; a serving program would
 * write the same text in answer to GET /metrics. Exit 0, or 1 on failure,
 * 2 on bad arguments.
 */
#define _POSIX_C_SOURCE 200809L /* pthreads: POSIX, not C11 */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rlock.h>

#include "ex_redis.h"

#define LOCK_NAME "stats_prometheus"

struct worker {
    rl_lock *lock;
    long rounds;
    int failed;         /* a status other than those expected */
    pthread_t thread;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    long i;
    int rc;

    for (i = 0; i < w->rounds && !w->failed; i++) {
        if ((rc = rl_lock_acquire(w->lock)) != RL_OK ||
            (rc = rl_lock_try_acquire(w->lock, 0, RL_LEASE_WATCHDOG)) != RL_OK ||
            (rc = rl_lock_release(w->lock)) != RL_OK ||
            (rc = rl_lock_release(w->lock)) != RL_OK) {
            fprintf(stderr, "%s: %s: %s\n", ex_prog, rl_strerror(rc), rl_last_error());
            w->failed = 1;
            break;
        }
        /* One try that does not wait: taken by another thread, or not. */
        rc = rl_lock_try_acquire(w->lock, 0, RL_LEASE_WATCHDOG);
        if (rc == RL_OK)
            rc = rl_lock_release(w->lock);
        if (rc != RL_OK && rc != RL_EBUSY) {
            fprintf(stderr, "%s: %s: %s\n", ex_prog, rl_strerror(rc), rl_last_error());
            w->failed = 1;
        }
    }
    return NULL;
}

/* One metric of one sample: # HELP, # TYPE, the value. */
static void metric(const char *name, const char *type, const char *help,
                   unsigned long long value)
{
    printf("# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name, value);
}

static void print_metrics(const rl_stats *s)
{
    /* RL_STATS_WAIT_BUCKETS bounds, in seconds (rlock.h); the last is +Inf. */
    static const char *const le[RL_STATS_WAIT_BUCKETS] = {
        "0.001", "0.01", "0.1", "1", "10", "+Inf"
    };
    const struct { const char *cause; unsigned long long n; } lost[] = {
        { "unconfirmed", s->lost_unconfirmed }, { "lease_ended", s->lost_lease_ended },
        { "gone", s->lost_gone }, { "forced", s->lost_forced },
        { "unresolved", s->lost_unresolved }, { "shutdown", s->lost_shutdown },
        { "other", s->lost_other },
    };
    unsigned long long cumulative = 0;
    size_t i;

    metric("rlock_acquisitions_total", "counter",
           "Locks taken anew by a thread (hold count 0 to 1).", s->acquisitions);
    metric("rlock_reentries_total", "counter",
           "Locks taken again by the thread that held them.", s->reentries);
    metric("rlock_releases_total", "counter",
           "Holds given back (rl_lock_release returned RL_OK).", s->releases);
    metric("rlock_acquire_busy_total", "counter",
           "Tries without waiting that found the lock taken.", s->busy);
    metric("rlock_acquire_timeouts_total", "counter",
           "Waits that ran out before the lock came free.", s->timeouts);
    metric("rlock_acquire_cancellations_total", "counter",
           "Waits cancelled by a shutdown of the client.", s->cancellations);

    printf("# HELP rlock_acquire_wait_seconds Time acquisitions that had to wait "
           "waited, from the call to the lock.\n"
           "# TYPE rlock_acquire_wait_seconds histogram\n");
    for (i = 0; i < RL_STATS_WAIT_BUCKETS; i++) {
        cumulative += s->wait_buckets[i];
        printf("rlock_acquire_wait_seconds_bucket{le=\"%s\"} %llu\n", le[i], cumulative);
    }
    printf("rlock_acquire_wait_seconds_sum %llu.%03llu\n", s->wait_ms_sum / 1000,
           s->wait_ms_sum % 1000);
    printf("rlock_acquire_wait_seconds_count %llu\n", s->waits);

    metric("rlock_renewal_rounds_total", "counter",
           "Watchdog rounds renewing every watchdog-kept hold.", s->renewal_rounds);
    metric("rlock_renewal_failures_total", "counter",
           "Watchdog rounds that could not confirm every hold.", s->renewal_failures);

    printf("# HELP rlock_holds_lost_total Holds flagged as lost, by cause.\n"
           "# TYPE rlock_holds_lost_total counter\n");
    for (i = 0; i < sizeof lost / sizeof lost[0]; i++)
        printf("rlock_holds_lost_total{cause=\"%s\"} %llu\n", lost[i].cause, lost[i].n);

    metric("rlock_connections_opened_total", "counter",
           "Connections opened to Redis, the first included.", s->connects);
    metric("rlock_connections_lost_total", "counter",
           "Connections found broken and closed.", s->disconnects);

    printf("# HELP rlock_lost_replies_total Changes whose reply was lost, by whether "
           "reading the count back settled the outcome.\n"
           "# TYPE rlock_lost_replies_total counter\n"
           "rlock_lost_replies_total{outcome=\"resolved\"} %llu\n"
           "rlock_lost_replies_total{outcome=\"unresolved\"} %llu\n",
           s->replies_resolved, s->replies_unresolved);

    metric("rlock_holds", "gauge",
           "Holds in the client's table now (one per thread and lock).", s->holds);
    metric("rlock_waiters", "gauge", "Threads waiting for a lock now.", s->waiters);
}

int main(int argc, char **argv)
{
    const char *url = NULL;
    long threads = 4, rounds = 50;
    struct worker w[64];
    rl_options opts;
    rl_client *client = NULL;
    rl_stats stats;
    int i, rc, failed = 0, started = 0;

    ex_prog = "stats_prometheus";
    for (i = 1; i < argc; i += 2) {
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = val == NULL;

        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: stats_prometheus [--url URL] [--threads N] [--rounds R]\n");
            return 0;
        }
        if (!bad && strcmp(argv[i], "--url") == 0)
            url = val;
        else if (!bad && strcmp(argv[i], "--threads") == 0)
            bad = ex_parse_long(val, 1, 64, &threads) != 0;
        else if (!bad && strcmp(argv[i], "--rounds") == 0)
            bad = ex_parse_long(val, 1, 100000, &rounds) != 0;
        else
            bad = 1;
        if (bad) {
            fprintf(stderr, "stats_prometheus: bad option \"%s\" (see --help)\n", argv[i]);
            return 2;
        }
    }
    if (url == NULL && (url = getenv("RLOCK_URL")) != NULL && *url == '\0')
        url = NULL;
    if (url == NULL) {
        fprintf(stderr, "stats_prometheus: give --url (or set RLOCK_URL)\n");
        return 2;
    }

    rl_options_init(&opts, RL_OPTIONS_VERSION);
    opts.url = url;
    if ((rc = rl_client_new(&client, &opts)) != RL_OK) {
        fprintf(stderr, "stats_prometheus: %s: %s\n", rl_strerror(rc), rl_last_error());
        return 1;
    }
    for (i = 0; i < threads; i++) {
        w[i].rounds = rounds;
        w[i].failed = 0;
        if ((rc = rl_lock_new(&w[i].lock, client, LOCK_NAME)) != RL_OK) {
            fprintf(stderr, "stats_prometheus: %s\n", rl_strerror(rc));
            failed = 1;
            break;
        }
        if (pthread_create(&w[i].thread, NULL, work, &w[i]) != 0) {
            fprintf(stderr, "stats_prometheus: cannot start a thread\n");
            rl_lock_free(w[i].lock);
            failed = 1;
            break;
        }
        started++;
    }
    for (i = 0; i < started; i++) {
        pthread_join(w[i].thread, NULL);
        failed |= w[i].failed;
        rl_lock_free(w[i].lock);
    }

    /* The caller says which layout it has; the library fills that much. */
    memset(&stats, 0, sizeof stats);
    stats.version = RL_STATS_VERSION;
    if ((rc = rl_client_stats(&stats, client)) != RL_OK) {
        fprintf(stderr, "stats_prometheus: %s: %s\n", rl_strerror(rc), rl_last_error());
        failed = 1;
    } else {
        print_metrics(&stats);
    }
    rl_client_free(client);
    return failed ? 1 : 0;
}
