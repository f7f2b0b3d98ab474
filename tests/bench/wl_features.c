/*
 * solo_features: what fencing tokens and lock-delay cost an uncontended
 * lock. Three clients in one run: plain, with fencing (one INCR more in the
 * acquire script, a second key), with a lock-delay (one more field in the
 * hash); their acquire/release pairs interleaved one by one, so that the
 * machine's drift hits all three alike. Prints each variant's p50 and p99
 * pair, and the ratios to the plain client's.
 */
#include <stdint.h>
#include <stdlib.h>

#include "bench.h"

enum { V_PLAIN, V_FENCED, V_DELAYED, V_COUNT };

static rl_client *variant_client(int v)
{
    rl_options o;
    rl_client *c;
    int rc;

    rl_options_init(&o, RL_OPTIONS_VERSION);
    o.url = bn_single.url;
    o.fencing = v == V_FENCED;
    o.lock_delay_ms = v == V_DELAYED ? 1000 : 0;
    if ((rc = rl_client_new(&c, &o)) != RL_OK)
        bn_die("rl_client_new(%s): %s: %s", o.url, rl_strerror(rc), rl_last_error());
    return c;
}

static double one_pair(rl_lock *l, const char *what)
{
    int64_t t0 = bn_now_ns();
    int st;

    if ((st = rl_lock_acquire(l)) != RL_OK || (st = rl_lock_release(l)) != RL_OK)
        bn_fail(what, st);
    return (double)(bn_now_ns() - t0) / 1000.0;
}

void bn_run_solo_features(int n)
{
    static const char *const names[V_COUNT] = { "plain", "fencing", "delay" };
    rl_client *c[V_COUNT];
    rl_lock *l[V_COUNT];
    bn_samples s[V_COUNT] = { { 0 } };
    bn_rec r = { .n = 0 };
    double p50[V_COUNT], p99[V_COUNT];
    int i, v;

    for (v = 0; v < V_COUNT; v++) {
        c[v] = variant_client(v);
        l[v] = bn_make_lock(c[v], "features:%s:%s", names[v], bn_run);
        for (i = 0; i < 200; i++)
            one_pair(l[v], "solo_features warm-up");
    }
    for (i = 0; i < n; i++)
        for (v = 0; v < V_COUNT; v++)
            bn_s_push(&s[v], one_pair(l[v], "solo_features pair"));
    for (v = 0; v < V_COUNT; v++) {
        p50[v] = bn_s_pct(&s[v], 50);
        p99[v] = bn_s_pct(&s[v], 99);
    }
    bn_rec_add(&r, "workload", "solo_features");
    bn_rec_add(&r, "n", "%d", n);
    for (v = 0; v < V_COUNT; v++) {
        bn_rec_add(&r, v == V_PLAIN ? "plain_p50_us" : v == V_FENCED ? "fencing_p50_us"
                                                                     : "delay_p50_us",
                   "%.1f", p50[v]);
        bn_rec_add(&r, v == V_PLAIN ? "plain_p99_us" : v == V_FENCED ? "fencing_p99_us"
                                                                     : "delay_p99_us",
                   "%.1f", p99[v]);
    }
    bn_rec_add(&r, "fencing_p50_ratio", "%.3f", p50[V_FENCED] / p50[V_PLAIN]);
    bn_rec_add(&r, "delay_p50_ratio", "%.3f", p50[V_DELAYED] / p50[V_PLAIN]);
    bn_rec_emit(&r);
    for (v = 0; v < V_COUNT; v++) {
        bn_s_free(&s[v]);
        rl_lock_free(l[v]);
        rl_client_free(c[v]);
    }
}
