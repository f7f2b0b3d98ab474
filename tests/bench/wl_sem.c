/*
 * solo_sem and set4: what a semaphore's permit and a set of names cost an
 * uncontended caller, against the plain lock in the same run.
 *
 * solo_sem: one thread, a plain lock and a semaphore of 4 permits (each
 * pair takes 1), their acquire/release pairs interleaved one by one so that
 * the machine's drift hits both alike; then 1,000 pairs of each alone for
 * what Redis counted (commands and its time running the scripts). Target:
 * the semaphore's pair p50 at most 1.2 x the lock's.
 *
 * set4: a set of 4 plain names (rl_lockset_acquire + release) against the
 * same 4 names taken one by one and released in reverse order, and one
 * name's pair, interleaved likewise.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define SEM_PERMITS 4
#define SET_N 4

static double lock_pair(rl_lock *l, const char *what)
{
    int64_t t0 = bn_now_ns();
    int st;

    if ((st = rl_lock_acquire(l)) != RL_OK || (st = rl_lock_release(l)) != RL_OK)
        bn_fail(what, st);
    return (double)(bn_now_ns() - t0) / 1000.0;
}

/* n pairs on l alone, and what Redis counted for them, per pair. */
static void count_pairs(rl_lock *l, redisContext *rc, int n, bn_cmdacct *ca)
{
    bn_cstats *a = bn_xmalloc(sizeof *a), *b = bn_xmalloc(sizeof *b);
    int i;

    bn_cstats_get(rc, a);
    for (i = 0; i < n; i++)
        lock_pair(l, "solo_sem counted pair");
    bn_cstats_get(rc, b);
    bn_cs_account(a, b, ca);
    free(a);
    free(b);
}

void bn_run_solo_sem(int n)
{
    rl_client *c = bn_make_client(0, 0);
    rl_lock *l[2];
    redisContext *rc = bn_rconnect();
    bn_samples s[2] = { { 0 } };
    bn_cmdacct ca[2];
    bn_targets t = { .any = 0 };
    bn_rec r = { .n = 0 };
    char name[128];
    double p50[2], p99[2];
    int i, v, st;

    l[0] = bn_make_lock(c, "solo_sem:plain:%s", bn_run);
    snprintf(name, sizeof name, "solo_sem:sem:%s", bn_run);
    if ((st = rl_semaphore_new(&l[1], c, name, strlen(name), SEM_PERMITS)) != RL_OK)
        bn_die("rl_semaphore_new(%s): %s: %s", name, rl_strerror(st), rl_last_error());
    for (i = 0; i < 200; i++)
        for (v = 0; v < 2; v++)
            lock_pair(l[v], "solo_sem warm-up");
    for (i = 0; i < n; i++)
        for (v = 0; v < 2; v++)
            bn_s_push(&s[v], lock_pair(l[v], "solo_sem pair"));
    for (v = 0; v < 2; v++) {
        p50[v] = bn_s_pct(&s[v], 50);
        p99[v] = bn_s_pct(&s[v], 99);
        count_pairs(l[v], rc, 1000, &ca[v]);
    }

    bn_rec_add(&r, "workload", "solo_sem");
    bn_rec_add(&r, "n", "%d", n);
    bn_rec_add(&r, "permits", "%d", SEM_PERMITS);
    bn_rec_add(&r, "plain_p50_us", "%.1f", p50[0]);
    bn_rec_add(&r, "plain_p99_us", "%.1f", p99[0]);
    bn_rec_add(&r, "sem_p50_us", "%.1f", p50[1]);
    bn_rec_add(&r, "sem_p99_us", "%.1f", p99[1]);
    bn_rec_add(&r, "p50_ratio_plain", "%.3f", p50[1] / p50[0]);
    bn_rec_add(&r, "p99_ratio_plain", "%.3f", p99[1] / p99[0]);
    bn_rec_add(&r, "ping_p50_us", "%.1f", bn_ping_p50);
    bn_rec_add(&r, "plain_all_per_pair", "%.2f", ca[0].all / 1000.0);
    bn_rec_add(&r, "sem_all_per_pair", "%.2f", ca[1].all / 1000.0);
    bn_rec_add(&r, "plain_evalsha_usec_per_pair", "%.1f", ca[0].evalsha_usec / 1000.0);
    bn_rec_add(&r, "sem_evalsha_usec_per_pair", "%.1f", ca[1].evalsha_usec / 1000.0);
    bn_add_cmd_fields(&r, &ca[1], 1000, "pair");
    bn_tgt_check(&t, "p50_ratio_plain<=1.2", p50[1] <= 1.2 * p50[0]);
    bn_tgt_emit(&r, &t);
    bn_rec_emit(&r);
    for (v = 0; v < 2; v++) {
        bn_s_free(&s[v]);
        rl_lock_free(l[v]);
    }
    redisFree(rc);
    rl_client_free(c);
}

static double set_pair(rl_lockset *set)
{
    int64_t t0 = bn_now_ns();
    int st;

    if ((st = rl_lockset_acquire(set)) != RL_OK || (st = rl_lockset_release(set)) != RL_OK)
        bn_fail("set4 set pair", st);
    return (double)(bn_now_ns() - t0) / 1000.0;
}

/* The same names one by one, released in reverse order. */
static double separate_pairs(rl_lock *const *l)
{
    int64_t t0 = bn_now_ns();
    int i, st;

    for (i = 0; i < SET_N; i++)
        if ((st = rl_lock_acquire(l[i])) != RL_OK)
            bn_fail("set4 separate acquire", st);
    for (i = SET_N - 1; i >= 0; i--)
        if ((st = rl_lock_release(l[i])) != RL_OK)
            bn_fail("set4 separate release", st);
    return (double)(bn_now_ns() - t0) / 1000.0;
}

enum { S_SET, S_SEPARATE, S_ONE, S_COUNT };

void bn_run_set4(int n)
{
    static const char *const key[S_COUNT] = { "set", "separate", "one" };
    rl_client *c = bn_make_client(0, 0);
    rl_lock *l[SET_N + 1];
    rl_lockset *set;
    bn_samples s[S_COUNT] = { { 0 } };
    bn_rec r = { .n = 0 };
    char k[40];
    double p50[S_COUNT];
    int i, v, st;

    for (i = 0; i <= SET_N; i++)
        l[i] = bn_make_lock(c, "set4:%s.%d", bn_run, i);
    if ((st = rl_lockset_new(&set, l, SET_N)) != RL_OK)
        bn_die("rl_lockset_new: %s: %s", rl_strerror(st), rl_last_error());
    for (i = 0; i < n + 100; i++) {
        double d[S_COUNT] = { set_pair(set), separate_pairs(l), lock_pair(l[SET_N], "set4 one") };
        for (v = 0; i >= 100 && v < S_COUNT; v++)
            bn_s_push(&s[v], d[v]);
    }
    bn_rec_add(&r, "workload", "set4");
    bn_rec_add(&r, "n", "%d", n);
    bn_rec_add(&r, "names", "%d", SET_N);
    for (v = 0; v < S_COUNT; v++) {
        p50[v] = bn_s_pct(&s[v], 50);
        snprintf(k, sizeof k, "%s_p50_us", key[v]);
        bn_rec_add(&r, k, "%.1f", p50[v]);
        snprintf(k, sizeof k, "%s_p99_us", key[v]);
        bn_rec_add(&r, k, "%.1f", bn_s_pct(&s[v], 99));
    }
    bn_rec_add(&r, "set_p50_ratio_separate", "%.3f", p50[S_SET] / p50[S_SEPARATE]);
    bn_rec_add(&r, "set_p50_ratio_one", "%.2f", p50[S_SET] / p50[S_ONE]);
    bn_rec_add(&r, "ping_p50_us", "%.1f", bn_ping_p50);
    bn_rec_emit(&r);
    for (v = 0; v < S_COUNT; v++)
        bn_s_free(&s[v]);
    rl_lockset_free(set);
    for (i = 0; i <= SET_N; i++)
        rl_lock_free(l[i]);
    rl_client_free(c);
}
