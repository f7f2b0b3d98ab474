/*
 * baseline: what Redis itself costs, for the other workloads' ratios.
 *
 * The round trip of a plain PING (n of them on one connection, after a
 * warm-up), kept in bn_ping_p50 and bn_ping_p99. The record also repeats
 * redis-benchmark's EVALSHA rates (--rb) and says whether allocations are
 * counted, the load average and the number of CPUs. Always runs, first.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

double bn_ping_p50, bn_ping_p99;        /* µs */

void bn_run_baseline(int n)
{
    redisContext *c = bn_rconnect();
    bn_samples s = { 0 };
    bn_rec r = { .n = 0 };
    int i;
    char k[32];

    for (i = 0; i < 200; i++)
        freeReplyObject(bn_rcmd(c, "PING"));
    for (i = 0; i < n; i++) {
        int64_t t0 = bn_now_ns();
        freeReplyObject(bn_rcmd(c, "PING"));
        bn_s_push(&s, (double)(bn_now_ns() - t0) / 1000.0);
    }
    bn_ping_p50 = bn_s_pct(&s, 50);
    bn_ping_p99 = bn_s_pct(&s, 99);
    bn_rec_add(&r, "workload", "baseline");
    bn_rec_add(&r, "n", "%d", n);
    bn_rec_add(&r, "ping_p50_us", "%.1f", bn_ping_p50);
    bn_rec_add(&r, "ping_p99_us", "%.1f", bn_ping_p99);
    bn_rec_add(&r, "ping_max_us", "%.1f", bn_s_max(&s));
    for (i = 1; i < 65; i++) {
        if (bn_rb_rate(i) > 0) {
            snprintf(k, sizeof k, "rb_evalsha_c%d", i);
            bn_rec_add(&r, k, "%.0f", bn_rb_rate(i));
        }
    }
    bn_rec_add(&r, "alloc_hook", "%s", BN_ALLOC_HOOK ? "on" : "off");
    {
        char la[128] = "";
        if (bn_read_file("/proc/loadavg", la, sizeof la) == 0) {
            la[strcspn(la, " ")] = '\0';
            bn_rec_add(&r, "loadavg1", "%s", la);
        }
        bn_rec_add(&r, "cpus", "%ld", sysconf(_SC_NPROCESSORS_ONLN));
    }
    {
        bn_targets t = { .any = 0 };
        bn_tgt_emit(&r, &t);
    }
    bn_rec_emit(&r);
    bn_s_free(&s);
    redisFree(c);
}
