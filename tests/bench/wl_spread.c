/*
 * spread and spread_cluster: T threads, each on a name of its own.
 *
 * Throughput without contention: acquire/release pairs per second against
 * the ceiling redis-benchmark's EVALSHA rate sets (half of it: two calls a
 * pair), pair latency against a PING, and commands per pair. On the cluster
 * the names are spread evenly over the masters and the rate is compared
 * with the single server's, measured just before with as many threads.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* The master of rlock's key for `name` (default prefix "rl:"). */
static int cluster_master_of(const bn_target *tg, redisContext *c, const char *name)
{
    redisReply *r = bn_rcmd(c, "CLUSTER KEYSLOT rl:{%s}", name);
    int slot = (int)r->integer;

    freeReplyObject(r);
    return tg->owner[slot & (BN_SLOTS - 1)];
}

typedef struct sworker {
    pthread_t th;
    rl_lock *lock;
    const int64_t *deadline;
    pthread_barrier_t *go;
    bn_samples lat;
    long pairs;
} sworker;

static void *spread_thread(void *arg)
{
    sworker *w = arg;
    int st;

    pthread_barrier_wait(w->go);
    while (bn_now_ns() < *w->deadline) {
        int64_t t0 = bn_now_ns();
        if ((st = rl_lock_acquire(w->lock)) != RL_OK) {
            bn_fail("spread acquire", st);
            break;
        }
        if ((st = rl_lock_release(w->lock)) != RL_OK)
            bn_fail("spread release", st);
        w->pairs++;
        bn_s_push(&w->lat, (double)(bn_now_ns() - t0) / 1000.0);
    }
    return NULL;
}

/*
 * One spread run on tg. On the cluster, thread i's name lives on master
 * i % masters (names are drawn until one does): the names spread over the
 * masters as evenly as T allows, and `single` is the single server's rate
 * with as many threads, measured just before. Returns pairs/s.
 */
double bn_run_spread(const bn_target *tg, int nthreads, long dur_ms, double single)
{
    int cluster = tg == &bn_cluster;
    rl_client *c = bn_make_client_at(tg->url, 0, 0);
    redisContext *cs[BN_NODES_MAX];
    sworker *w = calloc((size_t)nthreads, sizeof *w);
    bn_cstats *na = bn_xmalloc(sizeof *na * (size_t)tg->n), *nb = bn_xmalloc(sizeof *nb * (size_t)tg->n);
    bn_cstats *a = bn_xmalloc(sizeof *a), *b = bn_xmalloc(sizeof *b);
    bn_samples lat = { 0 }, ping = { 0 };
    pthread_barrier_t go;
    int64_t deadline = 0, start, end;
    long pairs = 0;
    double ping50;
    bn_cmdacct ca;
    bn_targets t = { .any = 0 };
    bn_rec r = { .n = 0 };
    double secs, rate, ceiling;
    int names[BN_NODES_MAX] = { 0 }, i, k, st;
    char name[200], by_master[200] = "", evalsha_by[200] = "";

    if (!w)
        bn_die("out of memory");
    bn_tg_connect_all(tg, cs);
    pthread_barrier_init(&go, NULL, (unsigned)nthreads + 1);
    for (i = 0; i < nthreads; i++) {
        snprintf(name, sizeof name, "spread:%s:%s:%d:%d", bn_run, tg->mode, nthreads, i);
        for (k = 0; cluster && cluster_master_of(tg, cs[0], name) != i % tg->n; k++)
            snprintf(name, sizeof name, "spread:%s:%s:%d:%d.%d", bn_run, tg->mode, nthreads, i, k);
        names[i % tg->n]++;
        w[i].lock = bn_make_lock(c, "%s", name);
        w[i].deadline = &deadline;
        w[i].go = &go;
        /* Warm up: open the pool connections before measuring. */
        if ((st = rl_lock_acquire(w[i].lock)) != RL_OK || (st = rl_lock_release(w[i].lock)) != RL_OK)
            bn_fail("spread warm-up", st);
        if (pthread_create(&w[i].th, NULL, spread_thread, &w[i]) != 0)
            bn_die("pthread_create");
    }
    /* PING round trip just before, for the ratio (the first master's). */
    for (i = 0; i < 1000; i++) {
        int64_t t0 = bn_now_ns();
        freeReplyObject(bn_rcmd(cs[0], "PING"));
        bn_s_push(&ping, (double)(bn_now_ns() - t0) / 1000.0);
    }
    ping50 = bn_s_pct(&ping, 50);
    bn_tg_stats(tg, cs, na, a);
    start = bn_now_ns();
    deadline = start + (int64_t)dur_ms * 1000000;
    pthread_barrier_wait(&go);
    for (i = 0; i < nthreads; i++) {
        pthread_join(w[i].th, NULL);
        pairs += w[i].pairs;
        bn_s_append(&lat, w[i].lat.v, w[i].lat.n);
        bn_s_free(&w[i].lat);
        rl_lock_free(w[i].lock);
    }
    end = bn_now_ns();
    bn_tg_stats(tg, cs, nb, b);
    bn_cs_account(a, b, &ca);
    secs = (double)(end - start) / 1e9;
    rate = pairs / secs;
    ceiling = bn_rb_rate(nthreads) / 2;
    for (i = 0; i < tg->n; i++) {
        size_t l = strlen(by_master), le = strlen(evalsha_by);
        snprintf(by_master + l, sizeof by_master - l, "%s%d", i ? "/" : "", names[i]);
        snprintf(evalsha_by + le, sizeof evalsha_by - le, "%s%.2f", i ? "/" : "",
                 (double)(bn_cs_calls(&nb[i], "evalsha", NULL) - bn_cs_calls(&na[i], "evalsha", NULL)) /
                     (pairs ? (double)pairs : 1));
    }

    bn_rec_add(&r, "workload", "%s", cluster ? "spread_cluster" : "spread");
    bn_rec_add(&r, "mode", "%s", tg->mode);
    bn_rec_add(&r, "procs", "1");
    bn_rec_add(&r, "threads", "%d", nthreads);
    if (cluster) {
        bn_rec_add(&r, "masters", "%d", tg->n);
        bn_rec_add(&r, "names_by_master", "%s", by_master);
    }
    bn_rec_add(&r, "n", "%ld", pairs);
    bn_rec_add(&r, "seconds", "%.2f", secs);
    bn_rec_add(&r, "pairs_s", "%.0f", rate);
    if (cluster) {
        bn_rec_add(&r, "pairs_s_single", "%.0f", single);
        bn_rec_add(&r, "pairs_s_ratio_single", "%.3f", single > 0 ? rate / single : 0);
    }
    bn_rec_add(&r, "ceiling_pairs_s", "%.0f", ceiling);
    bn_rec_add(&r, "pairs_s_ratio_ceiling", "%.3f", ceiling > 0 ? rate / ceiling : 0);
    bn_rec_add(&r, "p50_us", "%.1f", bn_s_pct(&lat, 50));
    bn_rec_add(&r, "p99_us", "%.1f", bn_s_pct(&lat, 99));
    bn_rec_add(&r, "max_us", "%.1f", bn_s_max(&lat));
    bn_rec_add(&r, "ping_p50_us", "%.1f", ping50);
    bn_rec_add(&r, "p50_ratio_ping", "%.2f", bn_s_pct(&lat, 50) / ping50);
    bn_add_cmd_fields(&r, &ca, (double)pairs, "pair");
    if (cluster)
        bn_rec_add(&r, "evalsha_per_pair_by_master", "%s", evalsha_by);
    if (!cluster && nthreads == 8) {
        if (ceiling > 0)
            bn_tgt_check(&t, "pairs_s>=0.6*rb_evalsha_c8/2", rate >= 0.6 * ceiling);
        else
            bn_tgt_check(&t, "pairs_s>=0.6*rb_evalsha_c8/2(no_baseline)", 0);
    }
    bn_tgt_emit(&r, &t);
    bn_rec_emit(&r);

    bn_s_free(&lat);
    bn_s_free(&ping);
    free(w);
    free(na);
    free(nb);
    free(a);
    free(b);
    bn_tg_free_all(tg, cs);
    rl_client_free(c);
    return rate;
}
