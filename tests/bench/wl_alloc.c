/*
 * alloc: heap allocations per uncontended acquire/release pair.
 *
 * After a warm-up, runner.c's malloc hooks count this thread's allocations
 * (and the whole process') over n pairs; one more pair is traced to name
 * the call sites. Target: no allocation at all. A plain hiredis PING is
 * counted as a control, to show the counting is live. Built without the
 * hooks (under a sanitizer), it reports allocs_per_pair=na.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

/* "object:symbol" of a call site, for the allocation site list. */
static void site_name(void *site, char *buf, size_t cap)
{
    Dl_info di;
    const char *obj, *slash;

    if (dladdr(site, &di) && di.dli_fname) {
        obj = di.dli_fname;
        slash = strrchr(obj, '/');
        if (slash)
            obj = slash + 1;
        snprintf(buf, cap, "%.*s:%s", (int)strcspn(obj, "."), obj,
                 di.dli_sname ? di.dli_sname : "?");
    } else {
        snprintf(buf, cap, "%p", site);
    }
}

void bn_run_alloc(int n)
{
    rl_client *c = bn_make_client(0, 0);
    rl_lock *l = bn_make_lock(c, "alloc:%s", bn_run);
    unsigned long a_acq = 0, a_rel = 0, f_pair = 0, ga0, ga1, control = 0;
    bn_rec r = { .n = 0 };
    bn_targets t = { .any = 0 };
    char sites[190] = "", names[BN_TRACE_MAX][96];
    int counts[BN_TRACE_MAX], nn = 0, i, j, st, nsites;
    double per_pair;

    for (i = 0; i < 200; i++)
        if ((st = rl_lock_acquire(l)) != RL_OK || (st = rl_lock_release(l)) != RL_OK)
            bn_fail("alloc warm-up", st);
    ga0 = atomic_load(&bn_allocs);
    for (i = 0; i < n; i++) {
        unsigned long x0 = bn_tl_allocs, f0 = bn_tl_frees, x1;
        if ((st = rl_lock_acquire(l)) != RL_OK)
            bn_fail("alloc acquire", st);
        x1 = bn_tl_allocs;
        if ((st = rl_lock_release(l)) != RL_OK)
            bn_fail("alloc release", st);
        a_acq += x1 - x0;
        a_rel += bn_tl_allocs - x1;
        f_pair += bn_tl_frees - f0;
    }
    ga1 = atomic_load(&bn_allocs);

    /* One more pair with call sites recorded. */
    bn_tl_nsites = 0;
    bn_tl_trace = 1;
    if ((st = rl_lock_acquire(l)) != RL_OK || (st = rl_lock_release(l)) != RL_OK)
        bn_fail("alloc traced pair", st);
    bn_tl_trace = 0;
    nsites = bn_tl_nsites;
    for (i = 0; i < nsites; i++) {
        char nm[96];
        site_name(bn_tl_sites[i], nm, sizeof nm);
        for (j = 0; j < nn && strcmp(names[j], nm) != 0; j++)
            ;
        if (j == nn) {
            snprintf(names[nn], sizeof names[0], "%s", nm);
            counts[nn++] = 0;
        }
        counts[j]++;
    }
    for (j = 0; j < nn; j++) {
        size_t len = strlen(sites);
        snprintf(sites + len, sizeof sites - len, "%s%s*%d", j ? "," : "", names[j], counts[j]);
    }

    /* Control: a plain hiredis PING allocates; shows the counting is live. */
    {
        redisContext *rc = bn_rconnect();
        unsigned long x0;
        freeReplyObject(bn_rcmd(rc, "PING"));
        x0 = bn_tl_allocs;
        freeReplyObject(bn_rcmd(rc, "PING"));
        control = bn_tl_allocs - x0;
        redisFree(rc);
    }

    per_pair = (double)(a_acq + a_rel) / n;
    bn_rec_add(&r, "workload", "alloc");
    bn_rec_add(&r, "procs", "1");
    bn_rec_add(&r, "threads", "1");
    bn_rec_add(&r, "n", "%d", n);
    if (BN_ALLOC_HOOK) {
        bn_rec_add(&r, "allocs_per_pair", "%.2f", per_pair);
        bn_rec_add(&r, "allocs_per_acquire", "%.2f", (double)a_acq / n);
        bn_rec_add(&r, "allocs_per_release", "%.2f", (double)a_rel / n);
        bn_rec_add(&r, "frees_per_pair", "%.2f", (double)f_pair / n);
        bn_rec_add(&r, "process_allocs_per_pair", "%.2f", (double)(ga1 - ga0) / n);
        bn_rec_add(&r, "sites", "%s", nsites ? sites : "-");
        bn_rec_add(&r, "control_hiredis_ping_allocs", "%lu", control);
        bn_tgt_check(&t, "allocs_per_pair=0", per_pair == 0);
    } else {
        bn_rec_add(&r, "allocs_per_pair", "na");
        bn_rec_add(&r, "note", "built_without_the_allocation_hook(sanitizer)");
    }
    bn_tgt_emit(&r, &t);
    bn_rec_emit(&r);
    rl_lock_free(l);
    rl_client_free(c);
}
