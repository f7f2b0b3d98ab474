/*
 * solo: the latency of an uncontended lock.
 *
 * One thread, one name, n acquire/release pairs, each after a PING on a
 * connection of its own (the baseline under the same conditions): pair,
 * acquire and release percentiles, the pair's p50 against the PING's
 * (target: at most 2.3 round trips), and the commands Redis counted per pair.
 */
#include <stdint.h>
#include <stdlib.h>

#include "bench.h"

void bn_run_solo(int n)
{
    rl_client *c = bn_make_client(0, 0);
    rl_lock *l = bn_make_lock(c, "solo:%s", bn_run);
    redisContext *rc = bn_rconnect();
    bn_samples pair = { 0 }, acq = { 0 }, rel = { 0 }, ping = { 0 };
    double ping50;
    bn_cstats *a = bn_xmalloc(sizeof *a), *b = bn_xmalloc(sizeof *b);
    bn_cmdacct ca;
    bn_targets t = { .any = 0 };
    bn_rec r = { .n = 0 };
    int64_t start, end;
    double ratio;
    int i, st;

    for (i = 0; i < 200; i++) {
        if ((st = rl_lock_acquire(l)) != RL_OK || (st = rl_lock_release(l)) != RL_OK)
            bn_fail("solo warm-up", st);
    }
    bn_cstats_get(rc, a);
    start = bn_now_ns();
    for (i = 0; i < n; i++) {
        int64_t t0, t1, t2;
        /* A PING before each pair: the baseline under the same conditions. */
        t0 = bn_now_ns();
        freeReplyObject(bn_rcmd(rc, "PING"));
        bn_s_push(&ping, (double)(bn_now_ns() - t0) / 1000.0);
        t0 = bn_now_ns();
        if ((st = rl_lock_acquire(l)) != RL_OK)
            bn_fail("solo acquire", st);
        t1 = bn_now_ns();
        if ((st = rl_lock_release(l)) != RL_OK)
            bn_fail("solo release", st);
        t2 = bn_now_ns();
        bn_s_push(&pair, (double)(t2 - t0) / 1000.0);
        bn_s_push(&acq, (double)(t1 - t0) / 1000.0);
        bn_s_push(&rel, (double)(t2 - t1) / 1000.0);
    }
    end = bn_now_ns();
    bn_cstats_get(rc, b);
    bn_cs_account(a, b, &ca);
    /* Our own PINGs are not rlock's. */
    ca.all -= n;
    ca.rl_top -= n;
    ca.ping -= n;
    ping50 = bn_s_pct(&ping, 50);
    /* The interleaved PINGs are not part of the pairs' time. */
    end -= (int64_t)(bn_s_mean(&ping) * 1000.0 * (double)n);

    bn_rec_add(&r, "workload", "solo");
    bn_rec_add(&r, "procs", "1");
    bn_rec_add(&r, "threads", "1");
    bn_rec_add(&r, "n", "%d", n);
    bn_rec_add(&r, "seconds", "%.2f", (double)(end - start) / 1e9);
    bn_rec_add(&r, "pairs_s", "%.0f", n / ((double)(end - start) / 1e9));
    bn_rec_add(&r, "pairs_s_ratio_ceiling", "%.3f",
            bn_rb_rate(1) > 0 ? n / ((double)(end - start) / 1e9) / (bn_rb_rate(1) / 2) : 0);
    bn_rec_add(&r, "p50_us", "%.1f", bn_s_pct(&pair, 50));
    bn_rec_add(&r, "p99_us", "%.1f", bn_s_pct(&pair, 99));
    bn_rec_add(&r, "max_us", "%.1f", bn_s_max(&pair));
    bn_rec_add(&r, "acq_p50_us", "%.1f", bn_s_pct(&acq, 50));
    bn_rec_add(&r, "rel_p50_us", "%.1f", bn_s_pct(&rel, 50));
    bn_rec_add(&r, "ping_p50_us", "%.1f", ping50);
    bn_rec_add(&r, "ping_p50_start_us", "%.1f", bn_ping_p50);
    ratio = bn_s_pct(&pair, 50) / ping50;
    bn_rec_add(&r, "p50_ratio_ping", "%.2f", ratio);
    bn_rec_add(&r, "p99_ratio_ping", "%.2f", bn_s_pct(&pair, 99) / bn_s_pct(&ping, 99));
    bn_add_cmd_fields(&r, &ca, n, "pair");
    bn_tgt_check(&t, "p50_ratio_ping<=2.3", ratio <= 2.3);
    bn_tgt_emit(&r, &t);
    bn_rec_emit(&r);

    bn_s_free(&pair);
    bn_s_free(&acq);
    bn_s_free(&rel);
    bn_s_free(&ping);
    free(a);
    free(b);
    redisFree(rc);
    rl_lock_free(l);
    rl_client_free(c);
}
