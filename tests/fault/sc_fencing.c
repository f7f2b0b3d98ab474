/*
 * Scenarios 26 and 27: a holder that stalls between its check and its write.
 *
 * The late writer takes the lock (watchdog lease), reads its fencing token,
 * checks rl_interrupted() (all is well), announces itself and stops itself
 * (SIGSTOP): the stall a GC pause, swap or a debugger would cause, exactly
 * in the window that no flag can close. Its watchdog stops with it, its
 * lease runs out, and the next writer (another process) takes the lock and
 * writes. Then the driver thaws the late writer, which writes at once.
 *
 * Writes go to a resource on the referee server: a guard script that logs
 * every write, in the order the referee ran them, as
 * "<who>:<token>:<accepted>", and (fencing) refuses a token lower than the
 * highest it accepted.
 *
 *   fencing_stall  the late write comes after the next writer's: the guard
 *                  must refuse every late write, and tokens must rise
 *                  strictly over all acquisitions of the name.
 *   lock_delay     the late writer's client has a lock-delay D (RL_DELAY_MS,
 *                  default 2000); it is thawed D/2 after its lease ran out
 *                  (stop + lease), and writes without a guard. The next writer must
 *                  not get the lock before the delay is over, so the late
 *                  write lands before the next writer's first write, every
 *                  round. (RL_DELAY_MS=0 shows the failure it prevents: the
 *                  late write then lands inside the next holder's section.)
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "fault.h"
#include "scenarios.h"

#define FS_LEASE 1000

/* KEYS resource hash, its log; ARGV token, who, guard ('1': refuse a lower
 * token). Returns 1 accepted, 0 refused. */
static const char guard_src[] =
    "local ok = 1\n"
    "if ARGV[3] == '1' then\n"
    "  local last = tonumber(redis.call('hget', KEYS[1], 'token') or '0')\n"
    "  if tonumber(ARGV[1]) < last then ok = 0 end\n"
    "end\n"
    "if ok == 1 then redis.call('hset', KEYS[1], 'token', ARGV[1]) end\n"
    "redis.call('rpush', KEYS[2], ARGV[2] .. ':' .. ARGV[1] .. ':' .. ok)\n"
    "return ok\n";

/* One write to the resource `name`: 1 accepted, 0 refused, -1 error. */
static int res_write(redisContext *ref, const char *name, const char *who,
                     unsigned long long token, int guard)
{
    char hkey[64], lkey[64], tok[24];
    redisReply *r;
    int out = -1;

    snprintf(hkey, sizeof hkey, "res:{%s}", name);
    snprintf(lkey, sizeof lkey, "res:{%s}:log", name);
    snprintf(tok, sizeof tok, "%llu", token);
    r = redisCommand(ref, "EVAL %s 2 %s %s %s %s %s", guard_src, hkey, lkey, tok, who,
                     guard ? "1" : "0");
    if (r && r->type == REDIS_REPLY_INTEGER)
        out = (int)r->integer;
    if (r)
        freeReplyObject(r);
    return out;
}

/* The lock on `name` (watchdog lease, waiting up to 20 s) and, with
 * fencing=1, its token; NULL after telling the driver on queue q. */
static rl_lock *take(rl_client *c, redisContext *ref, const char *name, const char *q,
                     unsigned long long *token)
{
    rl_lock *lock;
    int rc;

    rl_lock_new(&lock, c, name);
    rc = rl_lock_try_acquire(lock, 20000, RL_LEASE_WATCHDOG);
    if (rc != RL_OK || (fx_argl("fencing", 0) && rl_lock_token(token, lock) != RL_OK)) {
        fx_event_push(ref, q, "failed %d", rc);
        rl_lock_free(lock);
        return NULL;
    }
    return lock;
}

int role_late_writer(void)
{
    rl_client *c = fx_worker_client();
    redisContext *ref = fx_connect((int)fx_argl("ref_port", 0), 5000);
    const char *name = fx_arg("name", "fs"), *q = fx_arg("q", "lw");
    unsigned long long token = 0;
    int rc, ok;
    rl_lock *lock;

    if (!ref)
        return 91;
    if (!(lock = take(c, ref, name, q, &token)))
        return 1;
    if (rl_interrupted()) {             /* the check: it must pass here */
        fx_event_push(ref, q, "failed flagged");
        return 1;
    }
    fx_event_push(ref, q, "ready token=%llu", token);
    raise(SIGSTOP);                     /* the stall, between check and write */
    ok = res_write(ref, name, "late", token, (int)fx_argl("guard", 0));
    fx_event_push(ref, q, "done accepted=%d flag=%d", ok, rl_interrupted());
    rc = rl_lock_release(lock);
    rl_lock_free(lock);
    rl_client_free(c);
    redisFree(ref);
    return rc == RL_ELOST || rc == RL_ENOTOWNER ? 0 : 1;
}

int role_next_writer(void)
{
    rl_client *c = fx_worker_client();
    redisContext *ref = fx_connect((int)fx_argl("ref_port", 0), 5000);
    const char *name = fx_arg("name", "fs"), *q = fx_arg("q", "nw");
    unsigned long long token = 0;
    int64_t t0 = rt_now_ms();
    int rc, ok;
    rl_lock *lock;

    if (!ref)
        return 91;
    if (!(lock = take(c, ref, name, q, &token)))
        return 1;
    ok = res_write(ref, name, "new", token, (int)fx_argl("guard", 0));
    fx_event_push(ref, q, "wrote token=%llu accepted=%d waited=%lld", token, ok,
                  (long long)(rt_now_ms() - t0));
    rc = rl_lock_release(lock);
    rl_lock_free(lock);
    rl_client_free(c);
    redisFree(ref);
    return rc == RL_OK ? 0 : 1;
}

/* Wait until the child has stopped itself; 0, or -1 (it exited, or not in time). */
static int wait_stopped(pid_t pid, long timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;
    int st;

    while (rt_now_ms() < deadline) {
        pid_t w = waitpid(pid, &st, WUNTRACED | WNOHANG);
        if (w == pid)
            return WIFSTOPPED(st) ? 0 : -1;
        if (w < 0 && errno != EINTR)
            return -1;
        rt_sleep_ms(2);
    }
    return -1;
}

/* A late writer started, checked and stopped: its pid and token, or -1. */
static pid_t start_late(fx_env *env, const char *name, int r, long delay, int guard,
                        unsigned long long *token)
{
    char q[32], msg[128];
    pid_t pid;

    snprintf(q, sizeof q, "lw%d", r);
    pid = fx_spawnf("late_writer", 60, "lock_port=%d ref_port=%d name=%s lease=%d q=%s "
                    "fencing=%d delay=%ld guard=%d", env->lock->port, env->ref->port, name,
                    FS_LEASE, q, guard, delay, guard);
    if (pid < 0)
        return -1;
    if (fx_event_wait(env->rc, q, msg, sizeof msg, 20000) != 0 ||
        sscanf(msg, "ready token=%llu", token) != 1 || wait_stopped(pid, 5000) != 0) {
        fx_note("round %d: the late writer did not get ready (%s)", r, msg);
        kill(pid, SIGKILL);
        rt_child_wait(pid, 5000);
        return -1;
    }
    return pid;
}

/* Thaw the late writer and read its report: 1 accepted, 0 refused, -1 none. */
static int thaw_late(fx_env *env, pid_t pid, int r)
{
    char q[32], msg[128];
    int accepted = -1, flag = -1;

    snprintf(q, sizeof q, "lw%d", r);
    kill(pid, SIGCONT);
    if (fx_event_wait(env->rc, q, msg, sizeof msg, 15000) != 0 ||
        sscanf(msg, "done accepted=%d flag=%d", &accepted, &flag) != 2)
        fx_note("round %d: no report from the late writer (%s)", r, msg);
    if (rt_child_wait(pid, 10000) != 0)
        fx_note("round %d: the late writer did not exit well", r);
    return accepted;
}

int sc_fencing_stall(void)
{
    int rounds = (int)fx_scale(3, 20), r, ok_rounds = 0, refused = 0, accepted = 0;
    int rising = 1;
    unsigned long long last = 0;
    fx_env env;

    if (fx_env_start(&env, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_redis");
    for (r = 0; r < rounds; r++) {
        unsigned long long t1 = 0, t2 = 0;
        char nq[32], msg[128];
        int a2 = -1, late;
        long long waited = -1;
        pid_t lp, np;

        if ((lp = start_late(&env, "fs", r, 0, 1, &t1)) < 0)
            continue;
        snprintf(nq, sizeof nq, "nw%d", r);
        np = fx_spawnf("next_writer", 60, "lock_port=%d ref_port=%d name=fs lease=%d q=%s "
                       "fencing=1 guard=1", env.lock->port, env.ref->port, FS_LEASE, nq);
        if (fx_event_wait(env.rc, nq, msg, sizeof msg, FS_LEASE + 15000) != 0 ||
            sscanf(msg, "wrote token=%llu accepted=%d waited=%lld", &t2, &a2, &waited) != 3)
            fx_note("round %d: no write from the next writer (%s)", r, msg);
        late = thaw_late(&env, lp, r);
        if (rt_child_wait(np, 10000) != 0)
            fx_note("round %d: the next writer did not exit well", r);
        fx_note("round %d: late token %llu %s, next token %llu %s after %lld ms", r, t1,
                late == 0 ? "refused" : late == 1 ? "ACCEPTED" : "?", t2,
                a2 == 1 ? "accepted" : "NOT accepted", waited);
        if (!(t1 > last && t2 > t1))
            rising = 0;
        last = t2;
        refused += late == 0;
        accepted += late == 1;
        if (late == 0 && a2 == 1 && t2 > t1)
            ok_rounds++;
    }
    fx_env_stop(&env);
    return fx_verdict(fx_scenario, ok_rounds == rounds && rising && accepted == 0,
                      "rounds=%d/%d late_refused=%d late_accepted=%d tokens_rising=%d "
                      "lease_ms=%d", ok_rounds, rounds, refused, accepted, rising, FS_LEASE);
}

/* The log position of the first entry of `who` ("late" or "new"), or -1. */
static long log_index(redisContext *ref, const char *name, const char *who)
{
    redisReply *r = redisCommand(ref, "LRANGE res:{%s}:log 0 -1", name);
    size_t i, n = strlen(who);
    long at = -1;

    if (!r)
        return -1;
    for (i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements && at < 0; i++)
        if (strncmp(r->element[i]->str, who, n) == 0 && r->element[i]->str[n] == ':')
            at = (long)i;
    freeReplyObject(r);
    return at;
}

int sc_lock_delay(void)
{
    int rounds = (int)fx_scale(3, 20), r, ok_rounds = 0, late_first = 0;
    long delay = fx_env_long("RL_DELAY_MS", 2000);
    long thaw_after = delay / 2 > 300 ? delay / 2 : 300;
    long long min_gap = -1;
    fx_env env;

    if (fx_env_start(&env, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_redis");
    for (r = 0; r < rounds; r++) {
        char name[16], nq[32], msg[128] = "";
        unsigned long long t1 = 0, t2 = 0;
        long long waited = -1, gap;
        int64_t t_stop, t_gone, t_new = -1;
        long li, ni;
        int a2 = -1, late;
        pid_t lp, np;

        /* A name per round: each round's log stands alone. */
        snprintf(name, sizeof name, "ld%d", r);
        if ((lp = start_late(&env, name, r, delay, 0, &t1)) < 0)
            continue;
        t_stop = rt_now_ms();
        snprintf(nq, sizeof nq, "nw%d", r);
        np = fx_spawnf("next_writer", 60, "lock_port=%d ref_port=%d name=%s lease=%d q=%s",
                       env.lock->port, env.ref->port, name, FS_LEASE, nq);
        /* Its watchdog stopped with it: its lease runs out by stop + lease
         * at the latest (a lease/3 earlier at the soonest). In Redis the
         * key stays for the delay beyond (src/lua/lib/delay.lua). */
        t_gone = t_stop + FS_LEASE;
        while (rt_now_ms() < t_gone && t_new < 0) {
            if (fx_event_poll(env.rc, nq, msg, sizeof msg) == 0)
                t_new = rt_now_ms();
            rt_sleep_ms(2);
        }
        /* The fault: the stall lasts until half the delay has gone by. */
        while (t_new < 0 && rt_now_ms() < t_gone + thaw_after) {
            if (fx_event_poll(env.rc, nq, msg, sizeof msg) == 0) {
                t_new = rt_now_ms();
                break;          /* the next writer is in already: thaw now */
            }
            rt_sleep_ms(2);
        }
        late = thaw_late(&env, lp, r);
        if (t_new < 0) {
            if (fx_event_wait(env.rc, nq, msg, sizeof msg, delay + 15000) == 0)
                t_new = rt_now_ms();
        }
        if (sscanf(msg, "wrote token=%llu accepted=%d waited=%lld", &t2, &a2, &waited) != 3)
            fx_note("round %d: no write from the next writer (%s)", r, msg);
        if (rt_child_wait(np, 10000) != 0)
            fx_note("round %d: the next writer did not exit well", r);
        li = log_index(env.rc, name, "late");
        ni = log_index(env.rc, name, "new");
        gap = t_new >= 0 ? t_new - t_gone : -1;
        if (min_gap < 0 || (gap >= 0 && gap < min_gap))
            min_gap = gap;
        fx_note("round %d: lock gone, late write at +%ld ms (%s), next writer in at about "
                "+%lld ms; log order: late #%ld, new #%ld", r, thaw_after,
                late == 1 ? "landed" : "?", gap, li, ni);
        /* The next writer not in before the delay (counted from the lease's
         * end at the soonest: stop + 2/3 lease, the last renewal's round). */
        if (li >= 0 && ni >= 0 && li < ni) {
            late_first++;
            if (late == 1 && a2 == 1 && gap >= delay - FS_LEASE / 3)
                ok_rounds++;
        }
    }
    fx_env_stop(&env);
    return fx_verdict(fx_scenario, ok_rounds == rounds,
                      "rounds=%d/%d late_before_new=%d delay_ms=%ld lease_ms=%d thaw_ms=%ld "
                      "min_next_after_ms=%lld", ok_rounds, rounds, late_first, delay, FS_LEASE,
                      thaw_after, min_gap);
}
