/*
 * Scenario 7, the server forgets: in the middle of a contended run, over and
 * over, SCRIPT FLUSH (every EVALSHA answers NOSCRIPT until reloaded), CLIENT
 * KILL TYPE normal (every pool connection and the watchdog's die, often with
 * a command in flight), CLIENT KILL TYPE pubsub (the subscriber dies).
 *
 * Proves: recovery is transparent. No call fails with anything but a
 * connection error (RL_ECONN) or a flagged hold; no unexpected status at all
 * (fails=0), Redis counts match local ones after every change, the referee
 * finds no overlap, and nothing is left held.
 */
#include <stdio.h>

#include "fault.h"
#include "referee.h"
#include "scenarios.h"

int sc_script_flush(void)
{
    const char *names = "f0,f1,f2";
    int procs = 3, i, bad, pass, step = 0;
    long ms = fx_scale(6000, 120000);
    long flushes = 0, kills = 0, pubsub_kills = 0;
    long long killed = 0, leftover;
    pid_t pids[8];
    int64_t end;
    fx_env env;
    fx_reports rep;
    rf_result res;

    if (fx_env_start(&env, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_redis");
    for (i = 0; i < procs; i++)
        pids[i] = fx_spawnf("loop", (unsigned)(ms / 1000 + 90),
                            "lock_port=%d ref_port=%d check_port=%d threads=3 names=%s ms=%ld "
                            "lease=2000 fixed=2000 fixed_pct=30 nest=2 pair=1 wait=10000 "
                            "sec_min=1 sec_max=2 tag=flush",
                            env.lock->port, env.ref->port, env.lock->port, names, ms);
    /* Faults begin once every worker has its client. */
    fx_wait_ready(env.rc, procs, 30000);
    end = rt_now_ms() + ms - 300;
    while (rt_now_ms() < end) {
        long long n;
        switch (step++ % 4) {
        case 0:
            fx_cmd(env.lc, "SCRIPT FLUSH");
            flushes++;
            break;
        case 1:
            n = fx_cmd(env.lc, "CLIENT KILL TYPE normal");
            killed += n > 0 ? n : 0;
            kills++;
            break;
        case 2:
            fx_cmd(env.lc, "CLIENT KILL TYPE pubsub");
            pubsub_kills++;
            break;
        default:
            fx_cmd(env.lc, "SCRIPT FLUSH");
            n = fx_cmd(env.lc, "CLIENT KILL TYPE normal");
            killed += n > 0 ? n : 0;
            flushes++;
            kills++;
            break;
        }
        /* Pace of the faults, not a synchronisation. */
        rt_sleep_ms(200);
    }
    bad = fx_wait_all(pids, procs, 90000);
    RT_WAIT_UNTIL(fx_cmd(env.lc, "DBSIZE") == 0, 3000);
    leftover = fx_cmd(env.lc, "DBSIZE");
    if (rf_judge(env.rc, names, &res) != 0 || fx_reports_load(env.rc, &rep) != 0)
        return fx_verdict(fx_scenario, 0, "error=referee_unreadable");
    pass = bad == 0 && rep.n == procs && res.violations == 0 && res.sections > 0 &&
           fx_reports_sum(&rep, "sections") == res.sections &&
           fx_reports_sum(&rep, "fails") == 0 && fx_reports_sum(&rep, "mismatch") == 0 &&
           leftover == 0;
    i = fx_verdict(fx_scenario, pass,
                   "sections=%lld violations=%lld flags=%lld failed_sections=%lld "
                   "script_flushes=%ld client_kills=%ld connections_killed=%lld "
                   "pubsub_kills=%ld acquires=%lld econn=%lld timeouts=%lld lost=%lld "
                   "count_mismatch=%lld leftover_keys=%lld workers_failed=%d",
                   res.sections, res.violations, fx_reports_sum(&rep, "flags"),
                   fx_reports_sum(&rep, "fails"), flushes, kills, killed, pubsub_kills,
                   fx_reports_sum(&rep, "acquires"), fx_reports_sum(&rep, "econn"),
                   fx_reports_sum(&rep, "timeouts"), fx_reports_sum(&rep, "lost"),
                   fx_reports_sum(&rep, "mismatch"), leftover, bad);
    fx_reports_free(&rep);
    fx_env_stop(&env);
    return i;
}
