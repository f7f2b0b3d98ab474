/*
 * Scenario 5, Redis restarted with its state lost: the same holders and
 * waiters as the pause scenario; the lock server is SIGKILLed (every lock
 * and every loaded script is gone), stays down for the lease plus 300 ms,
 * and a new, empty server comes up on the same port.
 *
 * Proves: every hold that spanned the crash is flagged, and stops writing,
 * before the lease runs out (so before anyone can take the name on the new
 * server); waiters ride out the outage, reconnect (pool, watchdog and
 * subscriber), load the scripts again (NOSCRIPT) and finish their work; the
 * referee finds no overlap.
 *
 * Limit (written in GUARANTEES.md): a restart that loses the state and
 * comes back *sooner* than the lease lets a waiter take a name while its
 * old holder has not yet heard that its lock is gone. That is the same
 * window as a failover with asynchronous replication; operators restart a
 * non-persistent Redis after the longest lease, as this scenario does.
 */
#include <stdio.h>

#include "fault.h"
#include "referee.h"
#include "scenarios.h"

#define RESTART_LEASE 1500

int sc_redis_restart(void)
{
    int rounds = (int)fx_scale(1, 8), r, ok_rounds = 0, pass, n, bad, i;
    long long max_flag = 0, max_ok = 0, max_recovery = 0;
    pid_t *pids;
    fx_env env;
    fx_reports rep;
    rf_result res;

    if (fx_env_start(&env, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_redis");
    pids = fx_spawn_holders(&env, RESTART_LEASE, &n);

    for (r = 0; r < rounds; r++) {
        int in_time = 0, late = 0;
        long from;
        long long before0, before1, recovery;
        int64_t t_kill, t_up;

        if (!fx_both_held(&env, 15000)) {
            fx_note("round %d: the names were not both held and busy", r);
            continue;
        }
        from = fx_flaglog_len(env.rc);
        rt_redis_kill(env.lock);
        /* Gone (reaped): no renewal can have been applied after this moment.
         * (Read before the kill, a renewal applied while the driver was
         * descheduled confirmed past it: correct holds judged late.) */
        t_kill = rt_now_ms();
        /* The fault itself: down for the lease plus 300 ms. */
        rt_sleep_ms(RESTART_LEASE + 300);
        if (rt_redis_restart(env.lock) != 0) {
            fx_note("round %d: the server did not come back", r);
            break;
        }
        t_up = rt_now_ms();
        before0 = rf_count(env.rc, "p0");
        before1 = rf_count(env.rc, "p1");
        redisFree(env.lc);
        env.lc = fx_connect(env.lock->port, 5000);
        /* Both names are taken again and worked on. */
        if (!RT_WAIT_UNTIL(rf_count(env.rc, "p0") > before0 && rf_count(env.rc, "p1") > before1,
                           RESTART_LEASE + 10000)) {
            fx_note("round %d: no section on %s after the restart", r,
                    rf_count(env.rc, "p0") > before0 ? "p1" : "p0");
            continue;
        }
        recovery = rt_now_ms() - t_up;
        if (recovery > max_recovery)
            max_recovery = recovery;
        fx_flaglog_judge(env.rc, from, t_kill, RESTART_LEASE, &in_time, &late, &max_flag,
                         &max_ok);
        fx_note("round %d: holds flagged in time %d, late %d; sections again %lld ms after "
                "the restart", r, in_time, late, recovery);
        if (in_time >= 2 && late == 0)
            ok_rounds++;
    }

    /* Waiters ride the outage out: none gives up (their wait is 30 s). */
    pass = fx_finish(&env, pids, n, "p0,p1", &res, &rep, &bad);
    if (pass < 0)
        return fx_verdict(fx_scenario, 0, "error=referee_unreadable");
    pass = pass && ok_rounds == rounds;
    i = fx_verdict(fx_scenario, pass,
                   "restarts=%d/%d sections=%lld violations=%lld flags=%lld lease_ms=%d "
                   "down_ms=%d max_flag_seen_ms=%lld max_last_write_ms=%lld "
                   "max_recovery_ms=%lld econn=%lld timeouts=%lld fails=%lld workers_failed=%d",
                   ok_rounds, rounds, res.sections, res.violations,
                   fx_reports_sum(&rep, "flags"), RESTART_LEASE, RESTART_LEASE + 300, max_flag,
                   max_ok, max_recovery, fx_reports_sum(&rep, "econn"),
                   fx_reports_sum(&rep, "timeouts"), fx_reports_sum(&rep, "fails"), bad);
    fx_reports_free(&rep);
    fx_env_stop(&env);
    return i;
}
