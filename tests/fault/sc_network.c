/*
 * Scenario 6, network faults: every worker reaches Redis through a TCP proxy
 * (tests/common/proxy.h) that, at random moments, swallows the reply to a
 * script call (the change was applied, the reply lost), to a read-back
 * (HGET), or to anything; stalls all traffic past the command timeout; cuts
 * every connection; or refuses new ones for a while.
 *
 * Proves:
 *   - no hang: no rlock call lasts longer than its wait plus a bound made of
 *     the configured timeouts (max_call_ms is printed against it);
 *   - no double-counted reentry: after every change that returned RL_OK the
 *     count in Redis (read directly, not through the proxy) equals the
 *     thread's local hold count, unless the hold is flagged;
 *   - mutual exclusion (referee), and nothing left held at the end.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fault.h"
#include "proxy.h"
#include "referee.h"
#include "scenarios.h"

#define NET_CMD_TO 300
#define NET_CONN_TO 300
#define NET_WAIT 3000
/* The longest a call may take: its wait plus three attempts of (connect +
 * script + reconnect + read-back) plus the settling of an earlier change. */
#define NET_BOUND (NET_WAIT + 4 * 3 * (NET_CMD_TO + NET_CONN_TO))

int sc_network(void)
{
    const char *names = "n0,n1,n2";
    int procs = 3, i, bad, pass;
    long ms = fx_scale(8000, 150000);
    long drops = 0, stalls = 0, cuts = 0, refusals = 0;
    long long leftover, maxcall;
    unsigned seed = (unsigned)rt_now_us();
    pid_t pids[8];
    int64_t end;
    rt_proxy *px;
    fx_env env;
    fx_reports rep;
    rf_result res;

    if (fx_env_start(&env, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_redis");
    px = rt_proxy_start(env.lock->port);
    if (!px)
        return fx_verdict(fx_scenario, 0, "error=no_proxy");
    for (i = 0; i < procs; i++)
        pids[i] = fx_spawnf("loop", (unsigned)(ms / 1000 + 120),
                            "url=%s ref_port=%d check_port=%d threads=3 names=%s ms=%ld "
                            "lease=2000 fixed=2000 fixed_pct=30 nest=3 pair=1 wait=%d "
                            "sec_min=1 sec_max=2 cmd_to=%d conn_to=%d tag=net",
                            rt_proxy_url(px), env.ref->port, env.lock->port, names, ms,
                            NET_WAIT, NET_CMD_TO, NET_CONN_TO);

    /* Faults begin once every worker has its client. */
    fx_wait_ready(env.rc, procs, 30000);
    end = rt_now_ms() + ms - 500;
    while (rt_now_ms() < end) {
        int what = (int)(rand_r(&seed) % 8);
        switch (what) {
        case 0:
        case 1:
        case 2:
            rt_proxy_drop_next_reply_matching(px, "EVALSHA");
            break;
        case 3:
            rt_proxy_drop_next_reply_matching(px, "HGET");
            break;
        case 4:
            rt_proxy_drop_next_reply(px);
            break;
        case 5:
            /* The fault: a frozen network, longer than the command timeout. */
            rt_proxy_stall(px, 1);
            rt_sleep_ms(3 * NET_CMD_TO + 100);
            rt_proxy_stall(px, 0);
            stalls++;
            break;
        case 6:
            rt_proxy_cut_all(px);
            cuts++;
            break;
        default:
            rt_proxy_refuse(px, 1);
            rt_sleep_ms(200);
            rt_proxy_refuse(px, 0);
            refusals++;
            break;
        }
        /* Pace of the faults, not a synchronisation. */
        rt_sleep_ms(150 + (long)(rand_r(&seed) % 200));
    }
    rt_proxy_drop_cancel(px);
    drops = rt_proxy_dropped(px);
    bad = fx_wait_all(pids, procs, 120000);
    /* Holds given up as lost may leave a field behind until its lease ends. */
    RT_WAIT_UNTIL(fx_cmd(env.lc, "DBSIZE") == 0, 3000);
    leftover = fx_cmd(env.lc, "DBSIZE");
    rt_proxy_stop(px);

    if (rf_judge(env.rc, names, &res) != 0 || fx_reports_load(env.rc, &rep) != 0)
        return fx_verdict(fx_scenario, 0, "error=referee_unreadable");
    maxcall = fx_reports_max(&rep, "maxcall_ms");
    pass = bad == 0 && rep.n == procs && res.violations == 0 && res.sections > 0 &&
           fx_reports_sum(&rep, "sections") == res.sections &&
           fx_reports_sum(&rep, "fails") == 0 && fx_reports_sum(&rep, "mismatch") == 0 &&
           maxcall <= NET_BOUND && leftover == 0 && drops > 0;
    i = fx_verdict(fx_scenario, pass,
                   "sections=%lld violations=%lld flags=%lld count_mismatch=%lld "
                   "replies_dropped=%ld stalls=%ld cuts=%ld refusals=%ld acquires=%lld "
                   "reentries=%lld econn=%lld timeouts=%lld lost=%lld fails=%lld "
                   "max_call_ms=%lld bound_ms=%d leftover_keys=%lld workers_failed=%d",
                   res.sections, res.violations, fx_reports_sum(&rep, "flags"),
                   fx_reports_sum(&rep, "mismatch"), drops, stalls, cuts, refusals,
                   fx_reports_sum(&rep, "acquires"), fx_reports_sum(&rep, "reentries"),
                   fx_reports_sum(&rep, "econn"), fx_reports_sum(&rep, "timeouts"),
                   fx_reports_sum(&rep, "lost"), fx_reports_sum(&rep, "fails"), maxcall,
                   NET_BOUND, leftover, bad);
    fx_reports_free(&rep);
    fx_env_stop(&env);
    return i;
}
