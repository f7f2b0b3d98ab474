/*
 * Scenario 10, soak: one process of four threads takes and gives back locks
 * as fast as it can for RL_SOAK_SECONDS (default 20 s; 180 s under
 * RL_TORTURE=1): mostly a name of its own (watchdog or fixed lease, some
 * reentries, some busy tries), every fourth time a shared name with a
 * referee section, now and then a new lock handle made and freed; one
 * watchdog hold is kept from start to end (renewed under load). A second
 * process contends for the shared names, so that waiting in Redis (the
 * subscriber) is part of the steady state, not something first started
 * after the warm-up.
 *
 * Proves that nothing accumulates: the open descriptors (/proc/self/fd) are
 * the same at the end as after the warm-up, the heap in use (allocator
 * statistics) and VmRSS (/proc/self/status) stay flat, at thousands of
 * acquisitions a second. Under ASan/TSan VmRSS grows with the sanitizer's
 * own bookkeeping, so there only the heap in use and the descriptors are
 * judged (LeakSanitizer covers leaks at exit).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fault.h"
#include "referee.h"
#include "scenarios.h"

#define SOAK_THREADS 4
#define SOAK_HEAP_SLACK (256 * 1024)
#define SOAK_RSS_SLACK_KB 2048

static rl_client *soak_client;
static atomic_int soak_stop;
static atomic_llong soak_acq, soak_fails, soak_sections, soak_flags, soak_busy_timedout;
static int soak_ref_port;

/* Count an unexpected status; say what it was, the first few times. */
static void soak_fail(const char *what, int rc)
{
    if (atomic_fetch_add(&soak_fails, 1) < 5)
        fx_note("%s: %s (%s)", what, rl_strerror(rc), rl_last_error());
}

static void *soak_main(void *arg)
{
    int idx = (int)(long)arg;
    redisContext *ref = fx_connect(soak_ref_port, 5000);
    char own_name[16], owner[32];
    rl_lock *own, *shared[2];
    unsigned long n = 0;

    snprintf(own_name, sizeof own_name, "own%d", idx);
    snprintf(owner, sizeof owner, "%d.%d", (int)getpid(), idx);
    rl_lock_new(&own, soak_client, own_name);
    rl_lock_new(&shared[0], soak_client, "sh0");
    rl_lock_new(&shared[1], soak_client, "sh1");
    while (ref && !atomic_load(&soak_stop)) {
        long lease = n % 2 ? 5000 : RL_LEASE_WATCHDOG;
        int rc;
        n++;
        if (n % 4 == 0) {
            rl_lock *s = shared[n / 4 % 2];
            rc = rl_lock_try_acquire(s, 10000, lease);
            if (rc != RL_OK) {
                soak_fail("acquire shared", rc);
                continue;
            }
            atomic_fetch_add(&soak_acq, 1);
            rc = rf_section(ref, n / 4 % 2 ? "sh1" : "sh0", owner, 0);
            if (rc == RF_WROTE)
                atomic_fetch_add(&soak_sections, 1);
            else
                atomic_fetch_add(rc == RF_FLAGGED ? &soak_flags : &soak_fails, 1);
            if ((rc = rl_lock_release(s)) != RL_OK)
                soak_fail("release shared", rc);
        } else if (n % 16 == 1) {
            /* A busy try against another thread's name, and handle churn. */
            rl_lock *tmp;
            char other[16];
            snprintf(other, sizeof other, "own%d", (idx + 1) % SOAK_THREADS);
            if ((rc = rl_lock_new(&tmp, soak_client, other)) != RL_OK) {
                soak_fail("lock handle", rc);
                continue;
            }
            rc = rl_lock_try_acquire(tmp, 0, lease);
            if (rc == RL_OK) {
                atomic_fetch_add(&soak_acq, 1);
                rc = rl_lock_release(tmp);
            } else if (rc == RL_EBUSY) {
                rc = RL_OK;
            } else if (rc == RL_ETIMEDOUT) {
                /* wait 0 behind a queued thread of this process: see GUARANTEES.md */
                atomic_fetch_add(&soak_busy_timedout, 1);
                rc = RL_OK;
            }
            if (rc != RL_OK)
                soak_fail("busy try", rc);
            rl_lock_free(tmp);
        } else {
            rc = rl_lock_try_acquire(own, 5000, lease);
            if (rc != RL_OK) {
                soak_fail("acquire own", rc);
                continue;
            }
            atomic_fetch_add(&soak_acq, 1);
            if (n % 3 == 0 && (rc = rl_lock_try_acquire(own, 0, lease)) != RL_OK)
                soak_fail("reentry own", rc);
            while (rl_lock_hold_count(own) > 0)
                if ((rc = rl_lock_release(own)) != RL_OK) {
                    soak_fail("release own", rc);
                    break;
                }
        }
    }
    rl_lock_free(own);
    rl_lock_free(shared[0]);
    rl_lock_free(shared[1]);
    if (ref)
        redisFree(ref);
    return NULL;
}

int role_soak(void)
{
    long secs = fx_argl("secs", 20), warm_ms;
    long rss0, rss1, rss_max = 0;
    long long heap0, heap1, acq0, acq1;
    int fd0, fd1, i, last_fds, rc;
    rl_lock *keep;
    pthread_t th[SOAK_THREADS];
    redisContext *ref;
    int64_t t0, t1, end, t_begin, stable_since;
    static char fds_start[4096];

    soak_ref_port = (int)fx_argl("ref_port", 0);
    soak_client = fx_worker_client();
    /* One long watchdog hold for the whole run: renewals (and the
     * watchdog's connection) are part of the steady state, and the hold
     * must come through the load unflagged. */
    rl_lock_new(&keep, soak_client, "keep");
    if ((rc = rl_lock_try_acquire(keep, 0, RL_LEASE_WATCHDOG)) != RL_OK) {
        fx_note("cannot take the long hold: %s", rl_strerror(rc));
        return 94;
    }
    for (i = 0; i < SOAK_THREADS; i++)
        pthread_create(&th[i], NULL, soak_main, (void *)(long)i);
    /* Warm-up: pools filled, the subscriber and watchdog connected, malloc
     * arenas grown. Then wait (bounded) until the descriptors have been
     * steady for two seconds: connections are made on demand, up to the
     * pool size, and the first busy wait starts the subscriber. */
    t_begin = rt_now_ms();
    warm_ms = secs * 1000 / 5 < 3000 ? 3000 : secs * 1000 / 5;
    rt_sleep_ms(warm_ms);
    stable_since = rt_now_ms();
    last_fds = fx_fd_count();
    while (rt_now_ms() - stable_since < 2000 && rt_now_ms() < t_begin + warm_ms + 10000) {
        int now_fds;
        rt_sleep_ms(100);       /* sampling period */
        now_fds = fx_fd_count();
        if (now_fds != last_fds) {
            last_fds = now_fds;
            stable_since = rt_now_ms();
        }
    }
    rss0 = fx_rss_kb();
    fd0 = fx_fd_count();
    fx_fd_list(fds_start, sizeof fds_start);
    heap0 = fx_heap_bytes();
    acq0 = atomic_load(&soak_acq);
    t0 = rt_now_ms();
    end = t_begin + secs * 1000;
    if (end < t0 + 5000)
        end = t0 + 5000;
    while (rt_now_ms() < end) {
        long r;
        rt_sleep_ms(500);       /* sampling period */
        r = fx_rss_kb();
        if (r > rss_max)
            rss_max = r;
    }
    rss1 = fx_rss_kb();
    fd1 = fx_fd_count();
    if (fd1 != fd0) {
        char fds_end[4096];
        fx_fd_list(fds_end, sizeof fds_end);
        fx_note("descriptors after the warm-up: %s", fds_start);
        fx_note("descriptors at the end:        %s", fds_end);
    }
    heap1 = fx_heap_bytes();
    acq1 = atomic_load(&soak_acq);
    t1 = rt_now_ms();
    atomic_store(&soak_stop, 1);
    for (i = 0; i < SOAK_THREADS; i++)
        pthread_join(th[i], NULL);
    if (rl_lock_interrupted(keep) != 0 || (rc = rl_lock_release(keep)) != RL_OK) {
        fx_note("the long hold did not come through: %s", rl_last_error());
        atomic_fetch_add(&soak_fails, 1);
    }
    rl_lock_free(keep);
    rl_client_free(soak_client);
    ref = fx_connect(soak_ref_port, 5000);
    if (!ref)
        return 93;
    fx_report(ref, "pid=%d acquires=%lld rate=%lld fails=%lld sections=%lld "
           "flags=%lld rss0=%ld rss1=%ld rssmax=%ld fd0=%d fd1=%d heap0=%lld heap1=%lld "
              "busy_timedout=%lld",
           (int)getpid(), (long long)atomic_load(&soak_acq),
           t1 > t0 ? (acq1 - acq0) * 1000 / (t1 - t0) : 0, (long long)atomic_load(&soak_fails),
           (long long)atomic_load(&soak_sections), (long long)atomic_load(&soak_flags), rss0,
           rss1, rss_max, fd0, fd1, heap0, heap1, (long long)atomic_load(&soak_busy_timedout));
    redisFree(ref);
    return 0;
}

int sc_soak(void)
{
    long secs = fx_env_long("RL_SOAK_SECONDS", fx_scale(20, 180));
    long long rss0, rss1, fd0, fd1, heap0, heap1, rate, min_rate;
    int bad, pass, sanitized;
    pid_t pid[2];
    fx_env env;
    fx_reports rep;
    rf_result res;

    if (fx_env_start(&env, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_redis");
    pid[0] = fx_spawnf("soak", (unsigned)(secs + 90), "lock_port=%d ref_port=%d secs=%ld lease=3000 pool=4",
                       env.lock->port, env.ref->port, secs);
    pid[1] = fx_spawnf("loop", (unsigned)(secs + 90),
                       "lock_port=%d ref_port=%d threads=2 names=sh0,sh1 ms=%ld lease=3000 "
                       "nest=1 pair=0 wait=10000 sec_min=1 sec_max=1 think_us=2000 tag=contender",
                       env.lock->port, env.ref->port, secs * 1000);
    bad = fx_wait_all(pid, 2, secs * 1000 + 60000);
    if (rf_judge(env.rc, "sh0,sh1", &res) != 0 || fx_reports_load(env.rc, &rep) != 0)
        return fx_verdict(fx_scenario, 0, "error=referee_unreadable");
    rss0 = fx_reports_sum(&rep, "rss0");
    rss1 = fx_reports_sum(&rep, "rss1");
    fd0 = fx_reports_sum(&rep, "fd0");
    fd1 = fx_reports_sum(&rep, "fd1");
    heap0 = fx_reports_sum(&rep, "heap0");
    heap1 = fx_reports_sum(&rep, "heap1");
    rate = fx_reports_sum(&rep, "rate");
    /* The process reports whether it is sanitized the same way we are. */
    sanitized = fx_sanitized();
    min_rate = sanitized ? 200 : 1000;
    pass = bad == 0 && rep.n == 2 && fx_reports_sum(&rep, "fails") == 0 && res.violations == 0 &&
           res.sections == fx_reports_sum(&rep, "sections") && fd1 == fd0 &&
           heap1 - heap0 <= SOAK_HEAP_SLACK && (sanitized || rss1 - rss0 <= SOAK_RSS_SLACK_KB) &&
           rate >= min_rate;
    bad = fx_verdict(fx_scenario, pass,
                     "seconds=%ld acquisitions=%lld rate=%lld/s sections=%lld violations=%lld "
                     "flags=%lld fails=%lld rss_kb=%lld->%lld (max %lld%s) fds=%lld->%lld "
                     "heap_bytes=%lld->%lld min_rate=%lld busy_try_timedout=%lld",
                     secs, fx_reports_sum(&rep, "acquires"), rate, res.sections, res.violations,
                     fx_reports_sum(&rep, "flags"), fx_reports_sum(&rep, "fails"), rss0, rss1,
                     fx_reports_sum(&rep, "rssmax"), sanitized ? ", not judged: sanitizer" : "",
                     fd0, fd1, heap0, heap1, min_rate, fx_reports_sum(&rep, "busy_timedout"));
    fx_reports_free(&rep);
    fx_env_stop(&env);
    return bad;
}
