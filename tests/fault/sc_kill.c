/*
 * Scenario 2, holder killed: while other processes keep working on the same
 * name, a victim process takes the lock (watchdog lease in even rounds, a
 * fixed lease in odd ones), starts its section, and is SIGKILLed there.
 *
 * Measured per round, from the kill:
 *   unusable_ms  until another process's section commits on that name
 *   lag_ms       the same, less the PTTL the lock had at the kill: how late
 *                the waiters noticed that it had expired
 * Proves: a dead holder blocks the name for at most its lease (plus a small
 * margin), waiters wake on the holder's PTTL rather than sleeping a whole
 * lease, and the survivors' sections stay exclusive.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "fault.h"
#include "referee.h"
#include "scenarios.h"

#define KILL_LEASE 1000
#define KILL_MARGIN 500

static long long counter(redisContext *ref, const char *name)
{
    redisReply *r = redisCommand(ref, "GET rf:{%s}:ctr", name);
    long long v = -1;

    if (r && r->type == REDIS_REPLY_STRING)
        v = strtoll(r->str, NULL, 10);
    else if (r && r->type == REDIS_REPLY_NIL)
        v = 0;
    if (r)
        freeReplyObject(r);
    return v;
}

int role_victim(void)
{
    rl_client *c = fx_worker_client();
    redisContext *ref = fx_connect((int)fx_argl("ref_port", 0), 5000);
    const char *name = fx_arg("name", "k");
    char msg[64];
    rl_lock *lock;
    int rc;

    if (!ref)
        return 91;
    rl_lock_new(&lock, c, name);
    rc = rl_lock_try_acquire(lock, 30000, fx_argl("hold_lease", -1));
    if (rc != RL_OK) {
        fx_note("victim: acquire: %s (%s)", rl_strerror(rc), rl_last_error());
        fx_event_push(ref, fx_arg("q", "victim"), "failed");
        return 1;
    }
    /* The section begins: read the counter, announce, and never get further. */
    fx_event_push(ref, fx_arg("q", "victim"), "insection %lld", counter(ref, name));
    fx_event_wait(ref, "never", msg, sizeof msg, 120000);
    return 3;
}

int sc_kill_holder(void)
{
    const char *name = "k";
    int procs = 3, rounds = (int)fx_scale(3, 20), r, i, bad, pass, ok_rounds = 0;
    unsigned seed = (unsigned)rt_now_us();
    long long max_unusable = 0, max_lag = 0, min_unusable = -1;
    pid_t pids[8];
    fx_env env;
    fx_reports rep;
    rf_result res;

    if (fx_env_start(&env, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_redis");
    for (i = 0; i < procs; i++)
        pids[i] = fx_spawnf("loop", 300,
                            "lock_port=%d ref_port=%d threads=2 names=%s ms=600000 stop=1 "
                            "lease=%d fixed=%d fixed_pct=30 nest=1 pair=0 wait=20000 "
                            "sec_min=1 sec_max=2 think_us=3000 tag=others",
                            env.lock->port, env.ref->port, name, KILL_LEASE, KILL_LEASE);

    for (r = 0; r < rounds; r++) {
        char q[32], msg[128];
        long lease = r % 2 == 0 ? -1 : KILL_LEASE;
        long long v, pttl, unusable, lag;
        int64_t t_kill, t_next;
        pid_t victim;

        snprintf(q, sizeof q, "victim%d", r);
        victim = fx_spawnf("victim", 120, "lock_port=%d ref_port=%d name=%s lease=%d "
                           "hold_lease=%ld q=%s", env.lock->port, env.ref->port, name,
                           KILL_LEASE, lease, q);
        if (fx_event_wait(env.rc, q, msg, sizeof msg, 30000) != 0 ||
            sscanf(msg, "insection %lld", &v) != 1) {
            fx_note("round %d: the victim never entered its section", r);
            kill(victim, SIGKILL);
            rt_child_wait(victim, 5000);
            continue;
        }
        /* Die somewhere in the renewal cycle, not always just after taking it. */
        rt_sleep_ms((long)(rand_r(&seed) % (KILL_LEASE / 2)));
        kill(victim, SIGKILL);
        t_kill = rt_now_ms();
        pttl = rt_redis_pttl(env.lc, "rl:{k}", 6);
        rt_child_wait(victim, 5000);
        if (!RT_WAIT_UNTIL(counter(env.rc, name) > v, KILL_LEASE + 10000)) {
            fx_note("round %d: nobody took the lock within %d ms of the kill", r,
                    KILL_LEASE + 10000);
            continue;
        }
        t_next = rt_now_ms();
        unusable = t_next - t_kill;
        lag = unusable - (pttl > 0 ? pttl : 0);
        fx_note("round %d (%s lease): pttl at kill %lld ms, unusable %lld ms, lag %lld ms", r,
                lease < 0 ? "watchdog" : "fixed", pttl, unusable, lag);
        if (unusable > max_unusable)
            max_unusable = unusable;
        if (min_unusable < 0 || unusable < min_unusable)
            min_unusable = unusable;
        if (lag > max_lag)
            max_lag = lag;
        ok_rounds++;
    }

    fx_cmd(env.rc, "SET rf:stop 1");
    bad = fx_wait_all(pids, procs, 60000);
    if (rf_judge(env.rc, name, &res) != 0 || fx_reports_load(env.rc, &rep) != 0)
        return fx_verdict(fx_scenario, 0, "error=referee_unreadable");
    pass = bad == 0 && ok_rounds == rounds && res.violations == 0 &&
           max_unusable <= KILL_LEASE + KILL_MARGIN && rep.n == procs &&
           fx_reports_sum(&rep, "fails") == 0 && fx_reports_sum(&rep, "sections") == res.sections;
    i = fx_verdict(fx_scenario, pass,
                   "kills=%d/%d sections=%lld violations=%lld flags=%lld lease_ms=%d "
                   "min_unusable_ms=%lld max_unusable_ms=%lld max_wake_lag_ms=%lld "
                   "limit_ms=%d fails=%lld timeouts=%lld workers_failed=%d",
                   ok_rounds, rounds, res.sections, res.violations,
                   fx_reports_sum(&rep, "flags"), KILL_LEASE, min_unusable, max_unusable,
                   max_lag, KILL_LEASE + KILL_MARGIN, fx_reports_sum(&rep, "fails"),
                   fx_reports_sum(&rep, "timeouts"), bad);
    fx_reports_free(&rep);
    fx_env_stop(&env);
    return i;
}
