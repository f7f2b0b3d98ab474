/*
 * Scenario 4, Redis paused: two processes of two threads share two names,
 * one thread of each process per name; whoever holds a name keeps it and
 * runs sections back to back until its flag rises, the other one waits in
 * Redis. The lock server is then frozen for its lease
 * plus a second: SIGSTOP of redis-server in even rounds, CLIENT PAUSE ALL
 * in odd ones. The referee's server goes on answering, so holders would
 * happily keep writing if nothing stopped them.
 *
 * The server cannot expire a key later than (moment of the freeze + lease):
 * every renewal it applied, it applied before the freeze. So each hold that
 * began before the freeze must have its flag up at any check made at or
 * after that moment. Each holder logs, when it sees its flag, the start of
 * its last section that still found the flag down (t_ok); the scenario
 * requires t_ok < freeze + lease for every such hold, and that both holders
 * of the round were flagged. After the server is back the waiters take the
 * names and the referee must find no overlap.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "referee.h"
#include "scenarios.h"

#define PAUSE_LEASE 1500

/* Sum of the two names' counters on the referee, or -1. */
static long long progress(redisContext *ref)
{
    long long a = rf_count(ref, "p0"), b = rf_count(ref, "p1");
    return a < 0 || b < 0 ? -1 : a + b;
}

int fx_flaglog_judge(redisContext *ref, long from, int64_t t_fault, long lease,
                     int *in_time, int *late, long long *max_flag_ms, long long *max_ok_ms)
{
    redisReply *r = redisCommand(ref, "LRANGE rf:flaglog %ld -1", from);
    size_t i;

    *in_time = *late = 0;
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        if (r)
            freeReplyObject(r);
        return -1;
    }
    for (i = 0; i < r->elements; i++) {
        long long t_acq, t_ok, t_flag;
        int wd;
        if (sscanf(r->element[i]->str, "t_acq=%lld,t_ok=%lld,t_flag=%lld,wd=%d", &t_acq, &t_ok,
                   &t_flag, &wd) != 4)
            continue;
        if (t_acq >= t_fault || t_flag < t_fault)
            continue;           /* not a hold that spanned the fault */
        if (t_flag - t_fault > *max_flag_ms)
            *max_flag_ms = t_flag - t_fault;
        if (t_ok - t_fault > *max_ok_ms)
            *max_ok_ms = t_ok - t_fault;
        if (t_ok >= t_fault + lease) {
            (*late)++;
            fx_note("a hold (%s lease) still wrote %lld ms after the fault, lease %ld ms: %s",
                    wd ? "watchdog" : "fixed", t_ok - t_fault, lease, r->element[i]->str);
        } else {
            (*in_time)++;
        }
    }
    freeReplyObject(r);
    return 0;
}

long fx_flaglog_len(redisContext *ref)
{
    return (long)fx_cmd(ref, "LLEN rf:flaglog");
}

/* Both names held (the lock keys exist) and sections moving. */
int fx_both_held(fx_env *env, long timeout_ms)
{
    long long p0;

    if (!RT_WAIT_UNTIL(rt_redis_exists(env->lc, "rl:{p0}", 7) == 1 &&
                       rt_redis_exists(env->lc, "rl:{p1}", 7) == 1, timeout_ms)) {
        fx_note("lock keys: p0 %d, p1 %d", rt_redis_exists(env->lc, "rl:{p0}", 7),
                rt_redis_exists(env->lc, "rl:{p1}", 7));
        return 0;
    }
    p0 = progress(env->rc);
    if (RT_WAIT_UNTIL(progress(env->rc) >= p0 + 10, timeout_ms))
        return 1;
    fx_note("no progress: sections %lld then %lld", p0, progress(env->rc));
    return 0;
}

pid_t *fx_spawn_holders(fx_env *env, long lease, int *n)
{
    static pid_t pids[2];
    int i;

    for (i = 0; i < 2; i++)
        pids[i] = fx_spawnf("loop", 300,
                            "lock_port=%d ref_port=%d threads=2 names=p0,p1 ms=600000 stop=1 "
                            "lease=%ld fixed=%ld fixed_pct=50 nest=0 pair=0 pin=1 wait=30000 "
                            "hold_ms=100000000 work_us=2000 flaglog=1 cmd_to=500 conn_to=500 "
                            "tag=holders",
                            env->lock->port, env->ref->port, lease,
                            lease);
    *n = 2;
    /* Faults begin once every worker has its client. */
    fx_wait_ready(env->rc, 2, 30000);
    return pids;
}

int sc_redis_pause(void)
{
    int rounds = (int)fx_scale(2, 10), r, ok_rounds = 0, pass, n, bad, i;
    long long max_flag = 0, max_ok = 0, max_recovery = 0;
    pid_t *pids;
    fx_env env;
    fx_reports rep;
    rf_result res;
    redisContext *pc;

    if (fx_env_start(&env, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_redis");
    pids = fx_spawn_holders(&env, PAUSE_LEASE, &n);
    for (i = 0; i < n; i++)
        if (pids[i] <= 0)
            return fx_verdict(fx_scenario, 0, "error=spawn");
    pc = fx_connect(env.lock->port, 5000);

    for (r = 0; r < rounds; r++) {
        int sigstop = r % 2 == 0, in_time = 0, late = 0;
        long from;
        long long before, recovery;
        int64_t t_pause, t_resume;

        if (!fx_both_held(&env, 15000)) {
            fx_note("round %d: the names were not both held and busy", r);
            continue;
        }
        from = fx_flaglog_len(env.rc);
        if (sigstop)
            rt_redis_pause(env.lock);
        else
            fx_cmd(pc, "CLIENT PAUSE %d ALL", PAUSE_LEASE + 1000);
        /* The freeze's moment, read once it holds: a renewal applied while
         * the freeze was being asked for (a slow CLIENT PAUSE, the driver
         * descheduled) confirms past a moment read before it, and a hold
         * rightly writing up to its confirmed expiry was judged late. */
        t_pause = rt_now_ms();
        /* The fault itself: frozen for the lease plus a second. */
        rt_sleep_ms(PAUSE_LEASE + 1000);
        if (sigstop)
            rt_redis_resume(env.lock);
        t_resume = rt_now_ms();
        /* Both holders of the round see their flag, during the freeze. */
        RT_WAIT_UNTIL(fx_flaglog_len(env.rc) >= from + 2, 5000);
        before = progress(env.rc);
        if (!RT_WAIT_UNTIL(progress(env.rc) > before, PAUSE_LEASE + 10000)) {
            fx_note("round %d: no section after the server came back", r);
            continue;
        }
        recovery = rt_now_ms() - t_resume;
        if (recovery > max_recovery)
            max_recovery = recovery;
        fx_flaglog_judge(env.rc, from, t_pause, PAUSE_LEASE, &in_time, &late, &max_flag, &max_ok);
        fx_note("round %d (%s): holds flagged in time %d, late %d; sections again %lld ms "
                "after the resume", r, sigstop ? "SIGSTOP" : "CLIENT PAUSE", in_time, late,
                recovery);
        if (in_time >= 2 && late == 0)
            ok_rounds++;
    }

    pass = fx_finish(&env, pids, n, "p0,p1", &res, &rep, &bad);
    if (pass < 0)
        return fx_verdict(fx_scenario, 0, "error=referee_unreadable");
    pass = pass && ok_rounds == rounds;
    i = fx_verdict(fx_scenario, pass,
                   "rounds=%d/%d sections=%lld violations=%lld flags=%lld lease_ms=%d "
                   "pause_ms=%d max_flag_seen_ms=%lld max_last_write_ms=%lld "
                   "max_recovery_ms=%lld econn=%lld timeouts=%lld fails=%lld workers_failed=%d",
                   ok_rounds, rounds, res.sections, res.violations,
                   fx_reports_sum(&rep, "flags"), PAUSE_LEASE, PAUSE_LEASE + 1000, max_flag,
                   max_ok, max_recovery, fx_reports_sum(&rep, "econn"),
                   fx_reports_sum(&rep, "timeouts"), fx_reports_sum(&rep, "fails"), bad);
    fx_reports_free(&rep);
    redisFree(pc);
    fx_env_stop(&env);
    return i;
}
