/*
 * Scenario shutdown: SIGTERM a process that holds locks and waits for
 * others, and watch it leave cleanly.
 *
 * The worker is the README's SIGTERM recipe: SIGTERM is blocked in every
 * thread, one thread waits for it with sigwait() and calls
 * rl_client_shutdown(); every other thread then comes back on its own:
 *   A  holds s1 (watchdog lease) and works until rl_interrupted();
 *   B, C  wait forever for s1: their rl_lock_acquire() returns RL_ECANCELED;
 *   D  holds s2 and works until rl_interrupted().
 * main() joins them, reports, frees everything and returns 0.
 *
 * The driver waits until A and D hold and B and C are asleep in their
 * wait, sends SIGTERM and checks: the worker exits with status 0 within
 * 5 s; B and C got RL_ECANCELED (never RL_OK); A and D saw
 * rl_interrupted() == 1 and their later release did not return RL_OK;
 * on_lost was called once per hold (2); no rl:* key is left in Redis.
 * Three rounds (twenty under RL_TORTURE=1), a new worker each.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fault.h"
#include "scenarios.h"

#define SD_EXIT_LIMIT_MS 5000

/* ---- the worker: the SIGTERM recipe ------------------------------------- */

typedef struct job {
    pthread_t th;
    rl_lock *lock;
    int status;          /* of rl_lock_acquire() */
    int interrupted;     /* a holder saw rl_interrupted() == 1 */
    int released;        /* a holder's rl_lock_release() afterwards */
    pid_t tid;
} job;

static rl_client *client;
static atomic_int lost_calls, in_place;

static void on_lost(const char *name, size_t name_len, void *payload)
{
    (void)name;
    (void)name_len;
    (void)payload;
    atomic_fetch_add(&lost_calls, 1);
}

/* Hold the lock and work, in small steps, until told to stop. */
static void *holder(void *arg)
{
    job *j = arg;

    j->status = rl_lock_acquire(j->lock);
    atomic_fetch_add(&in_place, 1);
    if (j->status != RL_OK)
        return NULL;
    while (!rl_interrupted())
        rt_sleep_ms(5);                    /* one step of the work */
    j->interrupted = 1;
    j->released = rl_lock_release(j->lock);   /* the client is shut down: not RL_OK */
    return NULL;
}

/* Wait for a lock held by another thread. */
static void *waiter(void *arg)
{
    job *j = arg;

    j->tid = (pid_t)syscall(SYS_gettid);
    atomic_fetch_add(&in_place, 1);
    j->status = rl_lock_acquire(j->lock);     /* RL_ECANCELED on shutdown */
    if (j->status == RL_OK)
        rl_lock_release(j->lock);
    return NULL;
}

/* The only thread that receives SIGTERM. */
static void *on_sigterm(void *arg)
{
    sigset_t set;
    int sig;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigwait(&set, &sig);
    rl_client_shutdown(arg);   /* waiters get RL_ECANCELED, holders see rl_interrupted() */
    return NULL;
}

static int start(job *j, const char *name, void *(*fn)(void *))
{
    return rl_lock_new(&j->lock, client, name) == RL_OK &&
           pthread_create(&j->th, NULL, fn, j) == 0 ? 0 : -1;
}

/* shutdown: lock_port, ref_port, q. */
int role_shutdown(void)
{
    redisContext *ref = fx_connect((int)fx_argl("ref_port", 0), 5000);
    job a = { 0 }, b = { 0 }, c = { 0 }, d = { 0 };
    pthread_t sig_thread;
    sigset_t set;
    rl_options o;
    char url[64];
    int rc;

    if (!ref)
        return 91;
    /* Block SIGTERM before any thread exists: all of them inherit the mask,
     * so only sigwait() ever sees the signal. */
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    rl_options_init(&o, RL_OPTIONS_VERSION);
    snprintf(url, sizeof url, "redis://127.0.0.1:%ld", fx_argl("lock_port", 0));
    o.url = url;
    o.on_lost = on_lost;
    if ((rc = rl_client_new(&client, &o)) != RL_OK) {
        fx_note("rl_client_new: %s (%s)", rl_strerror(rc), rl_last_error());
        return 90;
    }
    pthread_create(&sig_thread, NULL, on_sigterm, client);

    /* The application: two holders, then two waiters behind the first. */
    if (start(&a, "s1", holder) || start(&d, "s2", holder) ||
        !RT_WAIT_UNTIL(atomic_load(&in_place) == 2, 10000) ||
        start(&b, "s1", waiter) || start(&c, "s1", waiter) ||
        !RT_WAIT_UNTIL(atomic_load(&in_place) == 4, 10000)) {
        fx_note("the threads did not get in place");
        return 92;
    }
    fx_event_push(ref, fx_arg("q", "sd"), "inplace %d %d %d %d", a.status, d.status,
                  (int)b.tid, (int)c.tid);

    pthread_join(a.th, NULL);
    pthread_join(b.th, NULL);
    pthread_join(c.th, NULL);
    pthread_join(d.th, NULL);
    pthread_join(sig_thread, NULL);
    fx_report(ref, "pid=%d wait_b=%d wait_c=%d held_a=%d held_d=%d interrupted_a=%d "
                   "interrupted_d=%d release_a=%d release_d=%d lost_calls=%d",
              (int)getpid(), b.status, c.status, a.status, d.status, a.interrupted,
              d.interrupted, a.released, d.released, atomic_load(&lost_calls));
    rl_lock_free(a.lock);
    rl_lock_free(b.lock);
    rl_lock_free(c.lock);
    rl_lock_free(d.lock);
    rl_client_free(client);
    redisFree(ref);
    return 0;
}

/* ---- the driver ----------------------------------------------------------- */

/* Whether thread tid of pid is blocked in a futex wait (a condition
 * variable), from /proc/<pid>/task/<tid>/syscall; where that file cannot be
 * read, whether it is asleep at all. */
static int parked(pid_t pid, int tid)
{
    char path[96], buf[256], *p;
    long nr;
    FILE *f;

    snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", (int)pid, tid);
    if ((f = fopen(path, "r")) != NULL) {
        int ok = fgets(buf, sizeof buf, f) != NULL;
        fclose(f);
        if (ok && sscanf(buf, "%ld", &nr) == 1)
            return nr == SYS_futex;
    }
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, tid);
    if (!(f = fopen(path, "r")))
        return 0;
    p = fgets(buf, sizeof buf, f) ? strrchr(buf, ')') : NULL;
    fclose(f);
    return p && p[1] == ' ' && p[2] == 'S';
}

/* The waiters are asleep in their wait (A holds s1 in the same process, so
 * they wait for its local release, not for a notice): both threads are
 * seen parked on 5 polls in a row. */
static int waiters_parked(pid_t pid, int tb, int tc, long timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;
    int streak = 0;

    while (rt_now_ms() < deadline) {
        streak = parked(pid, tb) && parked(pid, tc) ? streak + 1 : 0;
        if (streak >= 5)
            return 1;
        rt_sleep_ms(RT_POLL_MS);
    }
    return 0;
}

static const char *status_name(long long st)
{
    return st == 99 ? "(no report)" : rl_strerror((int)st);
}

static long long report_field(const fx_reports *rep, const char *key, long long missing)
{
    return rep->n == 1 ? fx_reports_sum(rep, key) : missing;
}

int sc_shutdown(void)
{
    int rounds = (int)fx_scale(3, 20), r, ok_rounds = 0, rc;
    long long max_exit_ms = 0, total_lost = 0, total_leftover = 0, canceled = 0, waits_ok = 0;
    long long interrupted = 0, bad_exits = 0, bad_releases = 0, reports = 0;
    fx_env env;

    if (fx_env_start(&env, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_redis");
    for (r = 0; r < rounds; r++) {
        char q[32], msg[128];
        int sa = -99, sd = -99, tb = 0, tc = 0, status;
        long long wb, wc, ia, id, ra, rd, lost, leftover, exit_ms;
        int64_t t_term;
        fx_reports rep;
        redisReply *keys;
        pid_t pid;

        snprintf(q, sizeof q, "sd%d", r);
        fx_cmd(env.rc, "DEL rf:reports");
        pid = fx_spawnf("shutdown", 60, "lock_port=%d ref_port=%d q=%s", env.lock->port,
                        env.ref->port, q);
        if (fx_event_wait(env.rc, q, msg, sizeof msg, 15000) != 0 ||
            sscanf(msg, "inplace %d %d %d %d", &sa, &sd, &tb, &tc) != 4 || sa != RL_OK ||
            sd != RL_OK) {
            fx_note("round %d: the worker's threads did not get in place (%s)", r, msg);
            rt_child_wait(pid, 1);
            bad_exits++;
            continue;
        }
        if (!waiters_parked(pid, tb, tc, 10000))
            fx_note("round %d: the waiters were not seen asleep in their wait", r);

        kill(pid, SIGTERM);
        t_term = rt_now_ms();
        status = rt_child_wait(pid, SD_EXIT_LIMIT_MS);
        exit_ms = rt_now_ms() - t_term;
        if (status < 0)
            fx_note("round %d: still running %d ms after SIGTERM: killed; no more rounds", r,
                    SD_EXIT_LIMIT_MS);
        keys = redisCommand(env.lc, "KEYS rl:*");
        leftover = keys && keys->type == REDIS_REPLY_ARRAY ? (long long)keys->elements : -1;
        if (keys)
            freeReplyObject(keys);
        if (fx_reports_load(env.rc, &rep) != 0)
            return fx_verdict(fx_scenario, 0, "error=referee_unreadable");
        wb = report_field(&rep, "wait_b", 99);
        wc = report_field(&rep, "wait_c", 99);
        ia = report_field(&rep, "interrupted_a", 0);
        id = report_field(&rep, "interrupted_d", 0);
        ra = report_field(&rep, "release_a", 99);
        rd = report_field(&rep, "release_d", 99);
        reports += rep.n == 1;
        lost = report_field(&rep, "lost_calls", -1);
        fx_reports_free(&rep);
        fx_note("round %d: exit status %d after %lld ms; waiters: %s, %s; holders interrupted "
                "%lld, %lld, their release: %s, %s; on_lost calls %lld; rl:* keys left %lld",
                r, status, exit_ms, status_name(wb), status_name(wc), ia, id, status_name(ra),
                status_name(rd), lost, leftover);

        if (exit_ms > max_exit_ms)
            max_exit_ms = exit_ms;
        bad_exits += status != 0;
        canceled += (wb == RL_ECANCELED) + (wc == RL_ECANCELED);
        waits_ok += (wb == RL_OK) + (wc == RL_OK);
        interrupted += ia + id;
        bad_releases += (ra == RL_OK) + (rd == RL_OK);
        total_lost += lost > 0 ? lost : 0;
        total_leftover += leftover != 0;
        if (status == 0 && exit_ms <= SD_EXIT_LIMIT_MS && wb == RL_ECANCELED &&
            wc == RL_ECANCELED && ia == 1 && id == 1 && ra != RL_OK && rd != RL_OK &&
            lost == 2 && leftover == 0)
            ok_rounds++;
        else if (leftover != 0)
            fx_cmd(env.lc, "FLUSHALL");    /* the next round starts clean */
        if (status < 0) {
            r++;
            break;                         /* the verdict is in: do not wait 5 s again */
        }
    }
    rc = fx_verdict(fx_scenario, ok_rounds == rounds,
                    "rounds=%d/%d rounds_run=%d reports=%lld max_exit_ms=%lld exit_limit_ms=%d "
                    "bad_exits=%lld waiters_canceled=%lld/%d waiters_ok=%lld "
                    "holders_interrupted=%lld/%d releases_ok_after_shutdown=%lld "
                    "on_lost_calls=%lld/%d rounds_with_keys_left=%lld",
                    ok_rounds, rounds, r, reports, max_exit_ms, SD_EXIT_LIMIT_MS, bad_exits,
                    canceled, 2 * r, waits_ok, interrupted, 2 * r, bad_releases, total_lost, 2 * r,
                    total_leftover);
    fx_env_stop(&env);
    return rc;
}
