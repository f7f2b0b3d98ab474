/*
 * Scenario 3, holder stalled: a victim process holds the lock and is frozen
 * (SIGSTOP) for its lease plus 500 ms; another process (the taker) takes the
 * lock meanwhile. Then the victim is thawed (SIGCONT) and, unaware, tries to
 * go on working.
 *
 * Proves: the thawed holder sees its flag before it writes anything (the
 * referee refuses every section it tries), its release reports the loss
 * (RL_ELOST or RL_ENOTOWNER) instead of succeeding, and the taker's hold is
 * untouched: its owner field and count in Redis are the same before and
 * after the victim's attempts, and its own release succeeds. Runs with a
 * watchdog lease (the watchdog thread is frozen too) and a fixed lease.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "fault.h"
#include "referee.h"
#include "scenarios.h"

#define STALL_LEASE 1000

int role_stall_victim(void)
{
    rl_client *c = fx_worker_client();
    redisContext *ref = fx_connect((int)fx_argl("ref_port", 0), 5000);
    const char *q = fx_arg("q", "sv");
    int64_t prev, now, deadline, gap = 0;
    int rc, i, wrote = 0, refused = 0, flag_before = 0, flag_after;
    char owner[32];
    rl_lock *lock;

    if (!ref)
        return 91;
    snprintf(owner, sizeof owner, "victim.%d", (int)getpid());
    rl_lock_new(&lock, c, fx_arg("name", "s"));
    rc = rl_lock_try_acquire(lock, 30000, fx_argl("hold_lease", -1));
    if (rc != RL_OK) {
        fx_event_push(ref, q, "failed %d", rc);
        return 1;
    }
    fx_event_push(ref, q, "ready");
    /* Inside the hold, idle, watching the clock: a jump means we were frozen. */
    prev = rt_now_ms();
    deadline = prev + 30000;
    for (;;) {
        rt_sleep_ms(1);
        now = rt_now_ms();
        if (now - prev > 300) {
            gap = now - prev;
            break;
        }
        if (rl_interrupted())
            flag_before = 1;
        if (now > deadline)
            break;
        prev = now;
    }
    flag_after = rl_interrupted();
    /* Carry on as an application would: every section must be refused. */
    for (i = 0; i < 20; i++) {
        rc = rf_section(ref, fx_arg("name", "s"), owner, 200);
        if (rc == RF_WROTE)
            wrote++;
        else if (rc == RF_FLAGGED)
            refused++;
    }
    rc = rl_lock_release(lock);
    fx_event_push(ref, q, "done gap=%lld flag_before=%d flag=%d wrote=%d refused=%d release=%d",
                  (long long)gap, flag_before, flag_after, wrote, refused, rc);
    rl_lock_free(lock);
    rl_client_free(c);
    redisFree(ref);
    return 0;
}

int role_stall_taker(void)
{
    rl_client *c = fx_worker_client();
    redisContext *ref = fx_connect((int)fx_argl("ref_port", 0), 5000);
    redisContext *chk = fx_connect((int)fx_argl("lock_port", 0), 5000);
    const char *name = fx_arg("name", "s");
    char qin[64], qout[64], f1[128] = "", f2[128] = "", msg[64], owner[32];
    long long v1 = -1, v2 = -1;
    int rc, n1, n2, sections = 0, got = 0;
    int64_t deadline;
    rl_lock *lock;

    if (!ref || !chk)
        return 91;
    snprintf(qin, sizeof qin, "%s.in", fx_arg("q", "tk"));
    snprintf(qout, sizeof qout, "%s.out", fx_arg("q", "tk"));
    snprintf(owner, sizeof owner, "taker.%d", (int)getpid());
    rl_lock_new(&lock, c, name);
    rc = rl_lock_try_acquire(lock, 20000, RL_LEASE_WATCHDOG);
    if (rc != RL_OK) {
        fx_event_push(ref, qout, "failed %d", rc);
        return 1;
    }
    n1 = fx_lock_fields(chk, name, f1, sizeof f1, &v1);
    fx_event_push(ref, qout, "held");
    deadline = rt_now_ms() + 30000;
    while (rt_now_ms() < deadline && !(got = fx_event_poll(ref, qin, msg, sizeof msg) == 0))
        if (rf_section(ref, name, owner, 500) == RF_WROTE)
            sections++;
    n2 = fx_lock_fields(chk, name, f2, sizeof f2, &v2);
    rc = rl_lock_release(lock);
    fx_event_push(ref, qout, "checked same=%d release=%d sections=%d fields=%d,%d count=%lld,%lld",
                  got && n1 == 1 && n2 == 1 && strcmp(f1, f2) == 0 && v1 == v2, rc, sections,
                  n1, n2, v1, v2);
    rl_lock_free(lock);
    rl_client_free(c);
    redisFree(ref);
    redisFree(chk);
    return 0;
}

int sc_stall_holder(void)
{
    int rounds = (int)fx_scale(2, 12), r, ok_rounds = 0, pass, flags = 0;
    long long max_takeover = 0;
    fx_env env;
    rf_result res;

    if (fx_env_start(&env, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_redis");
    for (r = 0; r < rounds; r++) {
        char vq[32], tq[32], tqo[40], tqi[40], msg[256];
        long hold_lease = r % 2 == 0 ? -1 : STALL_LEASE;
        long long gap = 0, takeover;
        int fb = 0, flag = 0, wrote = -1, refused = 0, rel = 0, same = 0, trel = -99, ts = 0;
        int64_t t_stop;
        pid_t victim, taker;

        snprintf(vq, sizeof vq, "sv%d", r);
        snprintf(tq, sizeof tq, "tk%d", r);
        snprintf(tqo, sizeof tqo, "%s.out", tq);
        snprintf(tqi, sizeof tqi, "%s.in", tq);
        victim = fx_spawnf("stall_victim", 60, "lock_port=%d ref_port=%d name=s lease=%d "
                           "hold_lease=%ld q=%s", env.lock->port, env.ref->port, STALL_LEASE,
                           hold_lease, vq);
        if (fx_event_wait(env.rc, vq, msg, sizeof msg, 20000) != 0 || strcmp(msg, "ready") != 0) {
            fx_note("round %d: victim not ready (%s)", r, msg);
            rt_child_wait(victim, 1);
            continue;
        }
        taker = fx_spawnf("stall_taker", 60, "lock_port=%d ref_port=%d name=s lease=%d q=%s",
                          env.lock->port, env.ref->port, STALL_LEASE, tq);
        /* The taker is waiting once it has subscribed to the release channel. */
        if (!RT_WAIT_UNTIL(rt_redis_numsub(env.lc, "rl:{s}:release", 14) >= 1, 10000))
            fx_note("round %d: the taker never subscribed", r);

        kill(victim, SIGSTOP);
        t_stop = rt_now_ms();
        if (fx_event_wait(env.rc, tqo, msg, sizeof msg, STALL_LEASE + 5000) != 0 ||
            strcmp(msg, "held") != 0) {
            fx_note("round %d: the taker did not get the lock (%s)", r, msg);
            kill(victim, SIGCONT);
            rt_child_wait(victim, 10000);
            rt_child_wait(taker, 1);
            continue;
        }
        takeover = rt_now_ms() - t_stop;
        if (takeover > max_takeover)
            max_takeover = takeover;
        /* The fault itself: the stall lasts lease + 500 ms. */
        if (rt_now_ms() < t_stop + STALL_LEASE + 500)
            rt_sleep_ms((long)(t_stop + STALL_LEASE + 500 - rt_now_ms()));
        kill(victim, SIGCONT);

        if (fx_event_wait(env.rc, vq, msg, sizeof msg, 15000) != 0 ||
            sscanf(msg, "done gap=%lld flag_before=%d flag=%d wrote=%d refused=%d release=%d",
                   &gap, &fb, &flag, &wrote, &refused, &rel) != 6)
            fx_note("round %d: no report from the victim (%s)", r, msg);
        fx_event_push(env.rc, tqi, "check");
        if (fx_event_wait(env.rc, tqo, msg, sizeof msg, 15000) != 0 ||
            sscanf(msg, "checked same=%d release=%d sections=%d", &same, &trel, &ts) != 3)
            fx_note("round %d: no report from the taker (%s)", r, msg);
        rt_child_wait(victim, 10000);
        rt_child_wait(taker, 10000);
        fx_note("round %d (%s lease): stalled %lld ms, takeover after %lld ms; victim: flag=%d "
                "wrote=%d refused=%d release=%s; taker: untouched=%d release=%s sections=%d",
                r, hold_lease < 0 ? "watchdog" : "fixed", gap, takeover, flag, wrote, refused,
                rl_strerror(rel), same, rl_strerror(trel), ts);
        flags += flag;
        if (flag == 1 && fb == 0 && wrote == 0 && (rel == RL_ELOST || rel == RL_ENOTOWNER) &&
            same == 1 && trel == RL_OK && takeover <= STALL_LEASE + 500)
            ok_rounds++;
    }
    if (rf_judge(env.rc, "s", &res) != 0)
        return fx_verdict(fx_scenario, 0, "error=referee_unreadable");
    pass = ok_rounds == rounds && res.violations == 0;
    r = fx_verdict(fx_scenario, pass,
                   "rounds=%d/%d sections=%lld violations=%lld flags=%d lease_ms=%d "
                   "stall_ms=%d max_takeover_ms=%lld",
                   ok_rounds, rounds, res.sections, res.violations, flags, STALL_LEASE,
                   STALL_LEASE + 500, max_takeover);
    fx_env_stop(&env);
    return r;
}
