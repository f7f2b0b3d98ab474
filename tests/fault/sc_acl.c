/*
 * Scenario acl_nochannel: the lock server's ACL user may touch rlock's keys
 * but no pub/sub channel at all:
 *
 *     ACL SETUSER app on >apppw ~rl:* resetchannels +@all
 *
 * so every PUBLISH of a release script and every SUBSCRIBE of a waiter is
 * refused with NOPERM. Three processes of two threads, connected as that
 * user, contend on two names with watchdog leases (30 s) and run referee
 * sections while holding.
 *
 * Proves: releases still succeed (Redis applied the delete before it
 * refused the notice: a release reported failed would leave a holder that
 * believes it holds a lock somebody else takes next), the referee sees no
 * overlap, and waiters do not sleep out the holder's 30 s lease for want of
 * the notice: each acquisition comes soon after the release before it.
 *
 * The wait of an acquisition is measured from the later of its call and
 * the previous holder's release: that holder writes the moment it calls
 * release (rf:{name}:rel, under the lock) and the next holder reads it.
 * Redis's ACL LOG must show refused channel accesses, or the scenario did
 * not test what it claims.
 *
 * Waits that run out (5 s, well under the lease) are allowed only as rare
 * exceptions, at most 1% of the acquisitions: without notices a waiter of
 * another process asks Redis every 250 ms at most, and can now and then
 * miss every moment the lock is free while two threads of one process hand
 * it to each other; waiters that sleep out the holder's lease would make
 * them the rule.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault.h"
#include "referee.h"
#include "scenarios.h"

#define ACL_LEASE 30000
#define ACL_WAIT 5000        /* each acquisition's wait_ms: well under the lease */
#define ACL_GAP_LIMIT_MS 2000

typedef struct acl_thread {
    pthread_t th;
    rl_client *client;
    redisContext *ref;
    rl_lock *locks[2];
    const char *names[2];
    char owner[32];
    unsigned seed;
    long ms, wait, hold_ms;
    /* results */
    long long acquires, sections, flags, timeouts, acq_fails, rel_fails, ref_fails;
    long long gaps, gap_sum_us, gap_max_us;
} acl_thread;

/* The release stamp the previous holder of name left, in us (0: none). */
static long long last_release(redisContext *ref, const char *name)
{
    redisReply *r = redisCommand(ref, "GET rf:{%s}:rel", name);
    long long v = 0;

    if (r && r->type == REDIS_REPLY_STRING)
        v = strtoll(r->str, NULL, 10);
    if (r)
        freeReplyObject(r);
    return v;
}

static void *acl_main(void *arg)
{
    acl_thread *t = arg;
    int64_t end = rt_now_ms() + t->ms;

    while (rt_now_ms() < end) {
        int i = (int)(rand_r(&t->seed) % 2), rc;
        int64_t t_call = rt_now_us(), t_acq, from;
        long long prev;

        rc = rl_lock_try_acquire(t->locks[i], t->wait, RL_LEASE_WATCHDOG);
        t_acq = rt_now_us();
        if (rc == RL_ETIMEDOUT) {
            t->timeouts++;
            fx_note("thread %s: waited %ld ms for %s in vain", t->owner, t->wait, t->names[i]);
            continue;
        }
        if (rc != RL_OK) {
            if (++t->acq_fails <= 3)
                fx_note("thread %s: acquire %s: %s (%s)", t->owner, t->names[i],
                        rl_strerror(rc), rl_last_error());
            rt_sleep_ms(10);   /* back-off step after a failure, not synchronisation */
            continue;
        }
        t->acquires++;
        prev = last_release(t->ref, t->names[i]);
        /* Its wait: from the later of its call and the last release. */
        from = prev > t_call ? prev : t_call;
        if (t_acq - from > t->gap_max_us)
            t->gap_max_us = t_acq - from;
        if (prev > t_call) {           /* it had to wait for that release */
            t->gaps++;
            t->gap_sum_us += t_acq - prev;
        }
        rc = rf_section(t->ref, t->names[i], t->owner, 300);
        if (rc == RF_WROTE)
            t->sections++;
        else if (rc == RF_FLAGGED)
            t->flags++;
        else
            t->ref_fails++;
        rt_sleep_ms(t->hold_ms);       /* hold it for a moment */
        fx_cmd(t->ref, "SET rf:{%s}:rel %lld", t->names[i], (long long)rt_now_us());
        rc = rl_lock_release(t->locks[i]);
        if (rc != RL_OK && ++t->rel_fails <= 3)
            fx_note("thread %s: release %s: %s (%s)", t->owner, t->names[i], rl_strerror(rc),
                    rl_last_error());
    }
    return NULL;
}

/* acl_loop: url, ref_port, threads [2], names (two, comma-separated), ms,
 * wait, hold_ms, lease. */
int role_acl_loop(void)
{
    char names[128], *comma;
    int n = (int)fx_argl("threads", 2), i, k;
    acl_thread *th = calloc((size_t)n, sizeof *th);
    rl_client *c = fx_worker_client();
    acl_thread sum;
    redisContext *ref;

    snprintf(names, sizeof names, "%s", fx_arg("names", "n0,n1"));
    if (!th || !(comma = strchr(names, ',')))
        return 92;
    *comma = '\0';
    for (i = 0; i < n; i++) {
        th[i].client = c;
        th[i].names[0] = names;
        th[i].names[1] = comma + 1;
        th[i].ms = fx_argl("ms", 4000);
        th[i].wait = fx_argl("wait", ACL_WAIT);
        th[i].hold_ms = fx_argl("hold_ms", 2);
        th[i].seed = (unsigned)(getpid() * 7919 + i * 104729 + rt_now_us());
        snprintf(th[i].owner, sizeof th[i].owner, "%d.%d", (int)getpid(), i);
        th[i].ref = fx_connect((int)fx_argl("ref_port", 0), 5000);
        if (!th[i].ref)
            return 91;
        for (k = 0; k < 2; k++)
            if (rl_lock_new(&th[i].locks[k], c, th[i].names[k]) != RL_OK)
                return 92;
    }
    fx_event_push(th[0].ref, "ready", "%d", (int)getpid());
    for (i = 0; i < n; i++)
        pthread_create(&th[i].th, NULL, acl_main, &th[i]);
    memset(&sum, 0, sizeof sum);
    for (i = 0; i < n; i++) {
        pthread_join(th[i].th, NULL);
        sum.acquires += th[i].acquires;
        sum.sections += th[i].sections;
        sum.flags += th[i].flags;
        sum.timeouts += th[i].timeouts;
        sum.acq_fails += th[i].acq_fails;
        sum.rel_fails += th[i].rel_fails;
        sum.ref_fails += th[i].ref_fails;
        sum.gaps += th[i].gaps;
        sum.gap_sum_us += th[i].gap_sum_us;
        if (th[i].gap_max_us > sum.gap_max_us)
            sum.gap_max_us = th[i].gap_max_us;
        for (k = 0; k < 2; k++)
            rl_lock_free(th[i].locks[k]);
        redisFree(th[i].ref);
    }
    rl_client_free(c);
    ref = fx_connect((int)fx_argl("ref_port", 0), 5000);
    if (!ref)
        return 93;
    fx_report(ref, "pid=%d acquires=%lld sections=%lld flags=%lld timeouts=%lld acq_fails=%lld "
                   "rel_fails=%lld ref_fails=%lld gaps=%lld gap_sum_us=%lld gap_max_us=%lld",
              (int)getpid(), sum.acquires, sum.sections, sum.flags, sum.timeouts, sum.acq_fails,
              sum.rel_fails, sum.ref_fails, sum.gaps, sum.gap_sum_us, sum.gap_max_us);
    redisFree(ref);
    free(th);
    return 0;
}

/* How many channel accesses of user app Redis refused (ACL LOG), or -1. */
static long long channel_refusals(redisContext *lc)
{
    redisReply *r = redisCommand(lc, "ACL LOG");
    long long n = -1;
    size_t i, k;

    if (r && r->type == REDIS_REPLY_ARRAY) {
        n = 0;
        for (i = 0; i < r->elements; i++) {
            const redisReply *e = r->element[i];
            long long count = 0;
            int channel = 0, app = 0;
            for (k = 0; e->type == REDIS_REPLY_ARRAY && k + 1 < e->elements; k += 2) {
                const redisReply *key = e->element[k], *v = e->element[k + 1];
                if (key->type != REDIS_REPLY_STRING)
                    continue;
                if (strcmp(key->str, "count") == 0 && v->type == REDIS_REPLY_INTEGER)
                    count = v->integer;
                else if (strcmp(key->str, "reason") == 0 && v->type == REDIS_REPLY_STRING)
                    channel = strcmp(v->str, "channel") == 0;
                else if (strcmp(key->str, "username") == 0 && v->type == REDIS_REPLY_STRING)
                    app = strcmp(v->str, "app") == 0;
            }
            if (channel && app)
                n += count;
        }
    }
    if (r)
        freeReplyObject(r);
    return n;
}

int sc_acl_nochannel(void)
{
    const char *names = "acl0,acl1";
    int procs = 3, threads = 2, i, bad, pass;
    long ms = fx_scale(4000, 60000);
    long long min_acquires = ms / 20, acquires, gaps, leftover;
    long long max_gap_ms, avg_gap_us, refusals;
    pid_t pids[8];
    fx_env env;
    fx_reports rep;
    rf_result res;

    if (fx_env_start(&env, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_redis");
    if (fx_cmd(env.lc, "ACL SETUSER app on >apppw ~rl:* resetchannels +@all") != 0)
        return fx_verdict(fx_scenario, 0, "error=acl_setuser");
    for (i = 0; i < procs; i++)
        pids[i] = fx_spawnf("acl_loop", (unsigned)(ms / 1000 + 60),
                            "url=redis://app:apppw@127.0.0.1:%d ref_port=%d threads=%d names=%s "
                            "ms=%ld wait=%d hold_ms=2 lease=%d",
                            env.lock->port, env.ref->port, threads, names, ms, ACL_WAIT,
                            ACL_LEASE);
    bad = fx_wait_all(pids, procs, ms + ACL_WAIT + 30000);

    if (rf_judge(env.rc, names, &res) != 0 || fx_reports_load(env.rc, &rep) != 0)
        return fx_verdict(fx_scenario, 0, "error=referee_unreadable");
    leftover = fx_cmd(env.lc, "DBSIZE");
    refusals = channel_refusals(env.lc);
    acquires = fx_reports_sum(&rep, "acquires");
    gaps = fx_reports_sum(&rep, "gaps");
    max_gap_ms = fx_reports_max(&rep, "gap_max_us") / 1000;
    avg_gap_us = gaps ? fx_reports_sum(&rep, "gap_sum_us") / gaps : 0;
    pass = bad == 0 && rep.n == procs && res.violations == 0 &&
           fx_reports_sum(&rep, "sections") == res.sections &&
           fx_reports_sum(&rep, "rel_fails") == 0 && fx_reports_sum(&rep, "acq_fails") == 0 &&
           fx_reports_sum(&rep, "ref_fails") == 0 &&
           fx_reports_sum(&rep, "timeouts") * 100 <= acquires &&
           fx_reports_sum(&rep, "flags") == 0 &&
           acquires >= min_acquires && max_gap_ms < ACL_GAP_LIMIT_MS && leftover == 0 &&
           refusals > 0;
    i = fx_verdict(fx_scenario, pass,
                   "procs=%d threads=%d lease_ms=%d acquires=%lld min_acquires=%lld "
                   "sections=%lld violations=%lld waited_for_release=%lld max_wait_ms=%lld "
                   "avg_wait_after_release_us=%lld "
                   "wait_limit_ms=%d release_errors=%lld acquire_errors=%lld timeouts=%lld "
                   "timeouts_allowed=%lld flags=%lld channel_refusals=%lld leftover_keys=%lld reports=%d "
                   "workers_failed=%d",
                   procs, threads, ACL_LEASE, acquires, min_acquires, res.sections,
                   res.violations, gaps, max_gap_ms, avg_gap_us, ACL_GAP_LIMIT_MS,
                   fx_reports_sum(&rep, "rel_fails"), fx_reports_sum(&rep, "acq_fails"),
                   fx_reports_sum(&rep, "timeouts"), acquires / 100, fx_reports_sum(&rep, "flags"),
                   refusals, leftover, rep.n, bad);
    fx_reports_free(&rep);
    fx_env_stop(&env);
    return i;
}
