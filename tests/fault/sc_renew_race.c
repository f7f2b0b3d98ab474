/*
 * Scenario renew_race: a renewal in flight must not stretch a fixed lease.
 *
 * One process, a client with a short watchdog lease (300 ms, renewed every
 * 50 ms) and six threads, each on a name of its own, cycling:
 *
 *     take it with RL_LEASE_WATCHDOG, hold ~0.2 ms, release;
 *     take it again with a fixed lease of 150 ms;
 *     read the key's PTTL on a plain connection, at once and again after
 *     holding ~0.2 ms; release.
 *
 * The owner field is the same both times (same thread). A renewal of the
 * watchdog hold that the watchdog had already sent (or was about to send)
 * when the thread released can reach Redis after the retake; if it renews
 * whatever it finds under that owner, the fixed 150 ms lease becomes the
 * 300 ms watchdog lease: the lock then outlives the lease its holder was
 * promised, and everybody else waits for it that much longer.
 *
 * Pass: no PTTL read after a fixed retake is above the fixed lease.
 *
 * The race needs the watchdog to be delayed between taking its snapshot of
 * the holds and its renewal reaching Redis by about two round trips (the
 * release and the retake): short holds, frequent renewals and six busy
 * threads on two cores make that happen a few times in four seconds.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault.h"
#include "scenarios.h"

#define RR_LEASE 300
#define RR_RENEW 50
#define RR_FIXED 150
#define RR_HOLD_US 200

typedef struct rr_thread {
    pthread_t th;
    rl_client *client;
    rl_lock *lock;
    redisContext *chk;
    char name[32];
    long ms, fixed, hold_us;
    long long cycles, stretched, expired, max_pttl, fails;
} rr_thread;

static long long rr_pttl(rr_thread *t)
{
    char key[64];

    fx_lock_key(key, sizeof key, t->name);
    return rt_redis_pttl(t->chk, key, strlen(key));
}

/* 1: the lease was stretched; -1: already gone (a slow thread); 0: fine. */
static int rr_check(rr_thread *t, const char *when)
{
    long long pttl = rr_pttl(t);

    if (pttl > t->max_pttl)
        t->max_pttl = pttl;
    if (pttl > t->fixed) {
        fx_note("%s: PTTL %lld ms %s a retake with a fixed lease of %ld ms", t->name, pttl,
                when, t->fixed);
        return 1;
    }
    return pttl < 0 ? -1 : 0;
}

static void *rr_main(void *arg)
{
    rr_thread *t = arg;
    int64_t end = rt_now_ms() + t->ms;

    while (rt_now_ms() < end) {
        int rc, st1, st2, slow;
        int64_t t_fixed;

        if ((rc = rl_lock_try_acquire(t->lock, 5000, RL_LEASE_WATCHDOG)) != RL_OK) {
            t->fails++;
            fx_note("%s: watchdog acquire: %s (%s)", t->name, rl_strerror(rc), rl_last_error());
            return NULL;
        }
        usleep((useconds_t)t->hold_us);
        if ((rc = rl_lock_release(t->lock)) != RL_OK) {
            t->fails++;
            fx_note("%s: watchdog release: %s (%s)", t->name, rl_strerror(rc), rl_last_error());
            return NULL;
        }
        t_fixed = rt_now_ms();
        if ((rc = rl_lock_try_acquire(t->lock, 5000, t->fixed)) != RL_OK) {
            t->fails++;
            fx_note("%s: fixed acquire: %s (%s)", t->name, rl_strerror(rc), rl_last_error());
            return NULL;
        }
        st1 = rr_check(t, "just after");
        usleep((useconds_t)t->hold_us);
        st2 = rr_check(t, "a moment after");
        t->stretched += st1 == 1 || st2 == 1;
        t->expired += st1 < 0 || st2 < 0;
        t->cycles++;
        /* A thread slowed down past its lease (less the margin) may see it lost. */
        slow = rt_now_ms() - t_fixed >= t->fixed - (t->fixed / 100 + 2);
        rc = rl_lock_release(t->lock);
        if (rc != RL_OK && !(rc == RL_ELOST && slow)) {
            t->fails++;
            fx_note("%s: fixed release: %s (%s)", t->name, rl_strerror(rc), rl_last_error());
        }
    }
    return NULL;
}

/* renew_race: lock_port, ref_port, threads, ms, fixed, hold_us, lease, renew. */
int role_renew_race(void)
{
    rl_client *c = fx_worker_client();
    int n = (int)fx_argl("threads", 4), i;
    rr_thread *th = calloc((size_t)n, sizeof *th);
    long long cycles = 0, stretched = 0, expired = 0, max_pttl = 0, fails = 0;
    redisContext *ref;

    if (!th)
        return 92;
    for (i = 0; i < n; i++) {
        th[i].client = c;
        th[i].ms = fx_argl("ms", 4000);
        th[i].fixed = fx_argl("fixed", RR_FIXED);
        th[i].hold_us = fx_argl("hold_us", RR_HOLD_US);
        snprintf(th[i].name, sizeof th[i].name, "rr%d", i);
        th[i].chk = fx_connect((int)fx_argl("lock_port", 0), 5000);
        if (!th[i].chk || rl_lock_new(&th[i].lock, c, th[i].name) != RL_OK)
            return 91;
    }
    for (i = 0; i < n; i++)
        pthread_create(&th[i].th, NULL, rr_main, &th[i]);
    for (i = 0; i < n; i++) {
        pthread_join(th[i].th, NULL);
        cycles += th[i].cycles;
        stretched += th[i].stretched;
        expired += th[i].expired;
        fails += th[i].fails;
        if (th[i].max_pttl > max_pttl)
            max_pttl = th[i].max_pttl;
        rl_lock_free(th[i].lock);
        redisFree(th[i].chk);
    }
    rl_client_free(c);
    ref = fx_connect((int)fx_argl("ref_port", 0), 5000);
    if (!ref)
        return 93;
    fx_report(ref, "pid=%d cycles=%lld stretched=%lld expired=%lld max_pttl=%lld fails=%lld",
              (int)getpid(), cycles, stretched, expired, max_pttl, fails);
    redisFree(ref);
    free(th);
    return 0;
}

int sc_renew_race(void)
{
    long ms = fx_scale(4000, 60000);
    long long cycles, min_cycles = ms / 20;
    int threads = 6, bad, pass, rc;
    pid_t pid;
    fx_env env;
    fx_reports rep;

    if (fx_env_start(&env, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_redis");
    pid = fx_spawnf("renew_race", (unsigned)(ms / 1000 + 60),
                    "lock_port=%d ref_port=%d threads=%d ms=%ld fixed=%d hold_us=%d "
                    "lease=%d renew=%d", env.lock->port, env.ref->port, threads, ms, RR_FIXED,
                    RR_HOLD_US, RR_LEASE, RR_RENEW);
    bad = fx_wait_all(&pid, 1, ms + 60000);
    if (fx_reports_load(env.rc, &rep) != 0)
        return fx_verdict(fx_scenario, 0, "error=referee_unreadable");
    cycles = fx_reports_sum(&rep, "cycles");
    pass = bad == 0 && rep.n == 1 && fx_reports_sum(&rep, "stretched") == 0 &&
           fx_reports_sum(&rep, "fails") == 0 && cycles >= min_cycles;
    rc = fx_verdict(fx_scenario, pass,
                    "threads=%d watchdog_lease_ms=%d renew_ms=%d fixed_lease_ms=%d cycles=%lld "
                    "min_cycles=%lld stretched=%lld max_pttl_ms=%lld expired_early=%lld fails=%lld "
                    "workers_failed=%d",
                    threads, RR_LEASE, RR_RENEW, RR_FIXED, cycles, min_cycles,
                    fx_reports_sum(&rep, "stretched"), fx_reports_max(&rep, "max_pttl"),
                    fx_reports_sum(&rep, "expired"),
                    fx_reports_sum(&rep, "fails"), bad);
    fx_reports_free(&rep);
    fx_env_stop(&env);
    return rc;
}
