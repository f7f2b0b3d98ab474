/*
 * Scenario 1, contention: several processes of several threads fight over a
 * few names with nested reentry, two names at once, watchdog and fixed
 * leases. No fault is injected: this is the baseline every other scenario
 * departs from. Proves mutual exclusion (referee), exact counting (every
 * section a worker counted is in the log, and no more), Redis's count equal
 * to the local one after every change, and nothing left in Redis at the end.
 */
#include <stdio.h>

#include "fault.h"
#include "referee.h"
#include "scenarios.h"

int sc_contention(void)
{
    const char *names = "c0,c1,c2";
    int procs = (int)fx_scale(4, 6), threads = 4, i, bad, pass;
    long ms = fx_scale(4000, 90000);
    pid_t pids[16];
    fx_env env;
    fx_reports rep;
    rf_result res;
    long long leftover, worker_sections;
    int64_t t0;

    if (fx_env_start(&env, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_redis");
    t0 = rt_now_ms();
    for (i = 0; i < procs; i++)
        pids[i] = fx_spawnf("loop", (unsigned)(ms / 1000 + 90),
                            "lock_port=%d ref_port=%d check_port=%d threads=%d names=%s ms=%ld "
                            "lease=3000 fixed=3000 fixed_pct=50 nest=2 pair=1 wait=30000 "
                            "sec_min=1 sec_max=3 tag=contention",
                            env.lock->port, env.ref->port, env.lock->port, threads, names, ms);
    bad = fx_wait_all(pids, procs, ms + 60000);
    t0 = rt_now_ms() - t0;

    if (rf_judge(env.rc, names, &res) != 0 || fx_reports_load(env.rc, &rep) != 0)
        return fx_verdict(fx_scenario, 0, "error=referee_unreadable");
    leftover = fx_cmd(env.lc, "DBSIZE");
    worker_sections = fx_reports_sum(&rep, "sections");
    pass = bad == 0 && rep.n == procs && res.violations == 0 &&
           worker_sections == res.sections && res.sections > 0 &&
           fx_reports_sum(&rep, "fails") == 0 && fx_reports_sum(&rep, "mismatch") == 0 &&
           fx_reports_sum(&rep, "econn") == 0 && fx_reports_sum(&rep, "timeouts") == 0 &&
           leftover == 0;
    i = fx_verdict(fx_scenario, pass,
                   "procs=%d threads=%d sections=%lld worker_sections=%lld violations=%lld "
                   "dups=%lld disorder=%lld acquires=%lld reentries=%lld flags=%lld fails=%lld "
                   "count_mismatch=%lld timeouts=%lld econn=%lld reports=%d leftover_keys=%lld workers_failed=%d "
                   "max_call_ms=%lld rate=%lld/s",
                   procs, threads, res.sections, worker_sections, res.violations,
                   res.duplicates, res.disorder, fx_reports_sum(&rep, "acquires"),
                   fx_reports_sum(&rep, "reentries"), fx_reports_sum(&rep, "flags"),
                   fx_reports_sum(&rep, "fails"), fx_reports_sum(&rep, "mismatch"),
                   fx_reports_sum(&rep, "timeouts"), fx_reports_sum(&rep, "econn"), rep.n, leftover, bad,
                   fx_reports_max(&rep, "maxcall_ms"),
                   t0 > 0 ? fx_reports_sum(&rep, "acquires") * 1000 / t0 : 0);
    fx_reports_free(&rep);
    fx_env_stop(&env);
    return i;
}
