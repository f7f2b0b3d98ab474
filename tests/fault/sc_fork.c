/*
 * Scenario 9, fork(): a process whose main thread holds lock fa, whose
 * second thread is waiting in Redis for lock fb (held by another process),
 * and whose third thread keeps taking lock fd, forks again and again.
 *
 * Each child must be a new owner that holds nothing and works:
 *   - fa: hold count 0, rl_interrupted() 0, release is RL_ENOTOWNER, a try is
 *     RL_EBUSY (it must not re-enter its parent's hold);
 *   - fb: a try is RL_EBUSY at once (no inherited place in a local queue);
 *   - fd: taken and released several times against the parent's thread, with
 *     referee sections (exclusion between parent and children);
 *   - a name of its own: taken under a new owner identity (its owner field
 *     in Redis has another UUID than the parent's);
 *   - its rl_client_free() leaves the parent's lock alone.
 * The parent meanwhile keeps fa across two leases (its watchdog goes on),
 * never flagged, its owner field and count unchanged; its waiting thread
 * gets fb once the other process lets go.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault.h"
#include "referee.h"
#include "scenarios.h"

#define FORK_LEASE 1000

static rl_lock *fa, *fb, *fd;
static char fa_field[128];
static int ref_port, lock_port;
static atomic_int t3_stop, t3_pause, t3_parked;
static atomic_llong sections;
static atomic_int t2_rc = 99, t3_fails;

static int fail(const char *what, int rc)
{
    fx_note("%s (status %s, detail \"%s\")", what, rl_strerror(rc), rl_last_error());
    return 1;
}

static int uuid_of(const char *field, char *out, size_t cap)
{
    const char *colon = strrchr(field, ':');
    if (!colon)
        return -1;
    snprintf(out, cap, "%.*s", (int)(colon - field), field);
    return 0;
}

/* Inside a child: everything it must find, and do. */
static int child_checks(rl_client *c, int k)
{
    redisContext *ref = fx_connect(ref_port, 5000), *chk = fx_connect(lock_port, 5000);
    char name[32], owner[32], field[128], mine[64], theirs[64];
    long long v = -1, wrote = 0;
    rl_lock *own;
    int fails = 0, rc, i;

    if (!ref || !chk)
        return 1;
    snprintf(owner, sizeof owner, "child.%d", (int)getpid());
    if ((rc = rl_lock_hold_count(fa)) != 0)
        fails += fail("child: inherited a hold count on fa", rc);
    if ((rc = rl_interrupted()) != 0)
        fails += fail("child: rl_interrupted() is not 0", rc);
    if ((rc = rl_lock_release(fa)) != RL_ENOTOWNER)
        fails += fail("child: release of its parent's fa is not RL_ENOTOWNER", rc);
    if ((rc = rl_lock_try_acquire(fa, 0, RL_LEASE_WATCHDOG)) != RL_EBUSY) {
        fails += fail("child: a try on its parent's fa is not RL_EBUSY", rc);
        if (rc == RL_OK)
            rl_lock_release(fa);
    }
    if ((rc = rl_lock_try_acquire(fb, 0, RL_LEASE_WATCHDOG)) != RL_EBUSY)
        fails += fail("child: a try on fb (its parent's thread waits there) is not RL_EBUSY", rc);
    for (i = 0; i < 3; i++) {
        rc = rl_lock_try_acquire(fd, 10000, i % 2 ? 2000 : RL_LEASE_WATCHDOG);
        if (rc != RL_OK) {
            fails += fail("child: cannot take fd", rc);
            continue;
        }
        if (rl_lock_hold_count(fd) != 1)
            fails += fail("child: hold count on fd is not 1", rl_lock_hold_count(fd));
        if (rf_section(ref, "fd", owner, 200) == RF_WROTE)
            wrote++;
        else
            fails += fail("child: section on fd not written", 0);
        if ((rc = rl_lock_release(fd)) != RL_OK)
            fails += fail("child: release of fd", rc);
    }
    snprintf(name, sizeof name, "fc%d", k);
    rl_lock_new(&own, c, name);
    rc = rl_lock_try_acquire(own, 0, RL_LEASE_WATCHDOG);
    if (rc != RL_OK) {
        fails += fail("child: cannot take a name of its own", rc);
    } else {
        if (fx_lock_fields(chk, name, field, sizeof field, &v) != 1 || v != 1 ||
            uuid_of(field, mine, sizeof mine) != 0 || uuid_of(fa_field, theirs, sizeof theirs) != 0 ||
            strcmp(mine, theirs) == 0)
            fails += fail("child: its owner field is not a new owner's", 0);
        if ((rc = rl_lock_release(own)) != RL_OK)
            fails += fail("child: release of its own name", rc);
    }
    rl_lock_free(own);
    rl_lock_free(fa);
    rl_lock_free(fb);
    rl_lock_free(fd);
    rl_client_free(c);
    if (fx_lock_fields(chk, "fa", field, sizeof field, &v) != 1 || strcmp(field, fa_field) != 0 ||
        v != 1)
        fails += fail("child: after its rl_client_free, its parent's fa changed", 0);
    fx_cmd(ref, "INCRBY rf:child_sections %lld", wrote);
    redisFree(ref);
    redisFree(chk);
    return fails ? 1 : 0;
}

static void *t2_main(void *arg)
{
    redisContext *ref = fx_connect(ref_port, 5000);
    int rc = rl_lock_try_acquire(fb, 30000, RL_LEASE_WATCHDOG);

    (void)arg;
    if (rc == RL_OK) {
        if (ref && rf_section(ref, "fb", "forker.t2", 0) == RF_WROTE)
            atomic_fetch_add(&sections, 1);
        rc = rl_lock_release(fb);
    }
    atomic_store(&t2_rc, rc);
    if (ref)
        redisFree(ref);
    return NULL;
}

static void *t3_main(void *arg)
{
    redisContext *ref = fx_connect(ref_port, 5000);
    unsigned n = 0;

    (void)arg;
    while (ref && !atomic_load(&t3_stop)) {
        int rc;
        if (atomic_load(&t3_pause)) {
            atomic_store(&t3_parked, 1);
            while (atomic_load(&t3_pause))
                usleep(1000);
            atomic_store(&t3_parked, 0);
        }
        rc = rl_lock_try_acquire(fd, 10000, n % 2 ? 2000 : RL_LEASE_WATCHDOG);
        if (rc != RL_OK) {
            atomic_fetch_add(&t3_fails, 1);
            fail("parent t3: acquire fd", rc);
            continue;
        }
        if (n % 3 == 0 && rl_lock_try_acquire(fd, 0, RL_LEASE_WATCHDOG) != RL_OK)
            atomic_fetch_add(&t3_fails, 1);
        if (rf_section(ref, "fd", "forker.t3", 300) == RF_WROTE)
            atomic_fetch_add(&sections, 1);
        while (rl_lock_hold_count(fd) > 0)
            if (rl_lock_release(fd) != RL_OK) {
                atomic_fetch_add(&t3_fails, 1);
                break;
            }
        n++;
        /* Locks are not fair across processes: a thread that takes the
         * name again at once can starve the children. Leave them a gap. */
        usleep(2000);
    }
    if (ref)
        redisFree(ref);
    return NULL;
}

int role_forker(void)
{
    rl_client *c = fx_worker_client();
    redisContext *ref, *chk;
    int forks = (int)fx_argl("forks", 5), k, rc, child_fail = 0, parent_fail = 0;
    char field[128], qin[64];
    long long v = -1;
    pthread_t t2, t3;
    int64_t t_held;

    ref_port = (int)fx_argl("ref_port", 0);
    lock_port = (int)fx_argl("lock_port", 0);
    ref = fx_connect(ref_port, 5000);
    chk = fx_connect(lock_port, 5000);
    if (!ref || !chk)
        return 91;
    rl_lock_new(&fa, c, "fa");
    rl_lock_new(&fb, c, "fb");
    rl_lock_new(&fd, c, "fd");
    if ((rc = rl_lock_try_acquire(fa, 0, RL_LEASE_WATCHDOG)) != RL_OK)
        return fail("parent: cannot take fa", rc) + 1;
    t_held = rt_now_ms();
    if (fx_lock_fields(chk, "fa", fa_field, sizeof fa_field, &v) != 1 || v != 1)
        return fail("parent: fa is not in Redis as expected", 0) + 1;

    pthread_create(&t2, NULL, t2_main, NULL);
    if (!RT_WAIT_UNTIL(rt_redis_numsub(chk, "rl:{fb}:release", 15) >= 1, 10000))
        parent_fail += fail("parent: thread 2 never waited on fb", 0);
    pthread_create(&t3, NULL, t3_main, NULL);

    for (k = 0; k < forks; k++) {
        pid_t pid;
        /* Under ASan/TSan (clang 14) a child may deadlock in the sanitizer's
         * allocator if another thread was inside it at the fork: there, the
         * busy thread is parked around fork(). glibc's malloc is fork-safe,
         * so plain builds fork while it runs. */
        if (fx_sanitized()) {
            atomic_store(&t3_pause, 1);
            RT_WAIT_UNTIL(atomic_load(&t3_parked) == 1, 10000);
        }
        fflush(stdout);
        fflush(stderr);
        pid = fork();
        if (pid == 0)
            _exit(child_checks(c, k));
        atomic_store(&t3_pause, 0);
        if (pid < 0 || rt_child_wait(pid, 30000) != 0)
            child_fail++;
        if (rl_lock_interrupted(fa) != 0 || rl_lock_hold_count(fa) != 1 ||
            fx_lock_fields(chk, "fa", field, sizeof field, &v) != 1 ||
            strcmp(field, fa_field) != 0 || v != 1)
            parent_fail += fail("parent: fa changed after a child", 0);
    }
    /* Keep fa across two leases: the parent's watchdog must have carried on. */
    while (rt_now_ms() < t_held + 2 * FORK_LEASE)
        rt_sleep_ms(10);
    if (rl_lock_interrupted(fa) != 0 || fx_lock_fields(chk, "fa", field, sizeof field, &v) != 1 ||
        strcmp(field, fa_field) != 0 || v != 1)
        parent_fail += fail("parent: fa was not kept across two leases", 0);

    snprintf(qin, sizeof qin, "%s.in", fx_arg("hq", "fh"));
    fx_event_push(ref, qin, "release");
    pthread_join(t2, NULL);
    if (atomic_load(&t2_rc) != RL_OK)
        parent_fail += fail("parent: thread 2 did not get fb once free", atomic_load(&t2_rc));
    atomic_store(&t3_stop, 1);
    pthread_join(t3, NULL);
    parent_fail += atomic_load(&t3_fails);
    if ((rc = rl_lock_release(fa)) != RL_OK)
        parent_fail += fail("parent: release of fa", rc);
    fx_report(ref, "pid=%d forks=%d child_fail=%d parent_fail=%d sections=%lld",
           (int)getpid(), forks, child_fail, parent_fail, (long long)atomic_load(&sections));
    rl_lock_free(fa);
    rl_lock_free(fb);
    rl_lock_free(fd);
    rl_client_free(c);
    redisFree(ref);
    redisFree(chk);
    return child_fail || parent_fail ? 1 : 0;
}

int sc_fork(void)
{
    int forks = (int)fx_scale(6, 60), pass, bad;
    long long child_sections;
    char msg[64];
    pid_t pids[2];
    fx_env env;
    fx_reports rep;
    rf_result res;

    if (fx_env_start(&env, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_redis");
    pids[0] = fx_spawnf("hold", 120, "lock_port=%d ref_port=%d name=fb lease=%d q=fh "
                        "wait_cmd=60000", env.lock->port, env.ref->port, FORK_LEASE);
    if (fx_event_wait(env.rc, "fh.out", msg, sizeof msg, 10000) != 0 || strcmp(msg, "held") != 0)
        return fx_verdict(fx_scenario, 0, "error=holder_not_ready");
    pids[1] = fx_spawnf("forker", 120, "lock_port=%d ref_port=%d lease=%d forks=%d hq=fh",
                        env.lock->port, env.ref->port, FORK_LEASE, forks);
    bad = fx_wait_all(pids + 1, 1, 100000);
    bad += fx_wait_all(pids, 1, 10000);
    if (rf_judge(env.rc, "fd,fb", &res) != 0 || fx_reports_load(env.rc, &rep) != 0)
        return fx_verdict(fx_scenario, 0, "error=referee_unreadable");
    {
        redisReply *r = redisCommand(env.rc, "GET rf:child_sections");
        child_sections = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
        if (r)
            freeReplyObject(r);
    }
    pass = bad == 0 && rep.n == 1 && fx_reports_sum(&rep, "child_fail") == 0 &&
           fx_reports_sum(&rep, "parent_fail") == 0 && res.violations == 0 &&
           res.sections == fx_reports_sum(&rep, "sections") + child_sections &&
           child_sections == 3LL * forks;
    bad = fx_verdict(fx_scenario, pass,
                     "forks=%d sections=%lld child_sections=%lld violations=%lld flags=0 "
                     "child_failures=%lld parent_failures=%lld workers_failed=%d",
                     forks, res.sections, child_sections, res.violations,
                     fx_reports_sum(&rep, "child_fail"), fx_reports_sum(&rep, "parent_fail"),
                     bad);
    fx_reports_free(&rep);
    fx_env_stop(&env);
    return bad;
}
