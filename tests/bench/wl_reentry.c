/*
 * reentry: the cost of reentrant acquisitions.
 *
 * One thread takes the same lock 10 deep, then releases it level by level,
 * cycles times, with a PING before each cycle: p50 of the first acquisition,
 * of the re-entries, of the inner releases and of the last release, and one
 * level (a re-entry plus an inner release) against the PING.
 */
#include <stdint.h>

#include "bench.h"

void bn_run_reentry(int cycles)
{
    enum { DEPTH = 10 };
    rl_client *c = bn_make_client(0, 0);
    rl_lock *l = bn_make_lock(c, "reentry:%s", bn_run);
    bn_samples first = { 0 }, racq = { 0 }, rrel = { 0 }, last = { 0 }, cycle = { 0 }, ping = { 0 };
    redisContext *pc = bn_rconnect();
    double ping50;
    bn_rec r = { .n = 0 };
    bn_targets t = { .any = 0 };
    double per_level;
    int i, d, st;

    for (i = 0; i < cycles + 20; i++) {
        int64_t c0 = bn_now_ns();
        freeReplyObject(bn_rcmd(pc, "PING"));
        if (i >= 20)
            bn_s_push(&ping, (double)(bn_now_ns() - c0) / 1000.0);
        c0 = bn_now_ns();
        for (d = 0; d < DEPTH; d++) {
            int64_t t0 = bn_now_ns();
            if ((st = rl_lock_acquire(l)) != RL_OK)
                bn_fail("reentry acquire", st);
            if (i >= 20)
                bn_s_push(d ? &racq : &first, (double)(bn_now_ns() - t0) / 1000.0);
        }
        if (rl_lock_hold_count(l) != DEPTH)
            bn_fail("reentry hold count", RL_EPROTO);
        for (d = DEPTH - 1; d >= 0; d--) {
            int64_t t0 = bn_now_ns();
            if ((st = rl_lock_release(l)) != RL_OK)
                bn_fail("reentry release", st);
            if (i >= 20)
                bn_s_push(d ? &rrel : &last, (double)(bn_now_ns() - t0) / 1000.0);
        }
        if (i >= 20)
            bn_s_push(&cycle, (double)(bn_now_ns() - c0) / 1000.0);
    }
    per_level = bn_s_pct(&racq, 50) + bn_s_pct(&rrel, 50);
    ping50 = bn_s_pct(&ping, 50);
    bn_rec_add(&r, "workload", "reentry");
    bn_rec_add(&r, "procs", "1");
    bn_rec_add(&r, "threads", "1");
    bn_rec_add(&r, "n", "%d", cycles);
    bn_rec_add(&r, "depth", "%d", DEPTH);
    bn_rec_add(&r, "first_acq_p50_us", "%.1f", bn_s_pct(&first, 50));
    bn_rec_add(&r, "reenter_p50_us", "%.1f", bn_s_pct(&racq, 50));
    bn_rec_add(&r, "reenter_p99_us", "%.1f", bn_s_pct(&racq, 99));
    bn_rec_add(&r, "inner_release_p50_us", "%.1f", bn_s_pct(&rrel, 50));
    bn_rec_add(&r, "last_release_p50_us", "%.1f", bn_s_pct(&last, 50));
    bn_rec_add(&r, "p50_us", "%.1f", per_level);
    bn_rec_add(&r, "level_us", "%.1f", per_level);
    bn_rec_add(&r, "cycle_p50_us", "%.1f", bn_s_pct(&cycle, 50));
    bn_rec_add(&r, "ping_p50_us", "%.1f", ping50);
    bn_rec_add(&r, "p50_ratio_ping", "%.2f", per_level / ping50);
    bn_rec_add(&r, "reenter_ratio_ping", "%.2f", bn_s_pct(&racq, 50) / ping50);
    bn_tgt_emit(&r, &t);
    bn_rec_emit(&r);
    bn_s_free(&first);
    bn_s_free(&racq);
    bn_s_free(&rrel);
    bn_s_free(&last);
    bn_s_free(&cycle);
    bn_s_free(&ping);
    redisFree(pc);
    rl_lock_free(l);
    rl_client_free(c);
}
