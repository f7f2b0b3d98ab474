/*
 * Scenario force_race: force-release racing with acquisitions.
 *
 * Process F runs three threads that take one name over and over (wait,
 * hold about a millisecond, release) and a fourth thread that calls
 * rl_lock_force_release() on that name every 15 ms. Process P runs two
 * more threads on the same name, so that another process always wants the
 * name when a force-release frees it.
 *
 * rl_lock_force_release() promises that every hold of F (its own client)
 * whose field the delete removed is flagged by the time it returns,
 * including a hold whose acquisition raced with the delete: its script ran
 * just before the delete, but its reply came back after the force-release
 * looked at F's holds. Holds of P are only flagged at their watchdog's next
 * renewal, which the API allows.
 *
 * Each holder checks rl_interrupted() again and again while it holds and
 * records [a, b]: a just after its first check that found the flag down,
 * b just before its last one (so the flag was down over all of [a, b]),
 * and what its release returned. Each force-release records [s, e], its
 * call and return. The driver finds every pair of holds whose spans
 * intersect: two holders that both had their flag down at one moment.
 * Redis never has two owners' fields at once, so one of the two holds had
 * lost its field to a force-release's delete: one whose release did not
 * return RL_OK. Such a stale hold is allowed
 *   - when it is P's (P learns at its next renewal), or
 *   - when it is F's and a force-release that began before the other hold
 *     took the lock returned only after the stale hold's last check (the
 *     flag rises when the force-release returns, not before);
 * otherwise the pair is a violation: a hold of F whose field was deleted
 * went on unflagged after the force-release returned.
 * Pass: no violation.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault.h"
#include "scenarios.h"

#define FR_FORCE_MS 15

/* A hold: t0 its acquire call, [t1, t2] its flag-down span, status its
 * release. A force-release: [t0, t1] the call, status its return. */
typedef struct fr_span {
    int pid;
    long long t0, t1, t2;
    int status;
} fr_span;

typedef struct fr_list {
    fr_span *v;
    size_t n, cap;
} fr_list;

static void fr_add(fr_list *l, long long t0, long long t1, long long t2, int status)
{
    if (l->n == l->cap) {
        fr_span *nv = realloc(l->v, sizeof *nv * (l->cap = l->cap ? l->cap * 2 : 256));
        if (!nv)
            abort();
        l->v = nv;
    }
    l->v[l->n++] = (fr_span){ (int)getpid(), t0, t1, t2, status };
}

typedef struct fr_thread {
    pthread_t th;
    rl_lock *lock;
    long ms, hold_us, wait, force_ms;
    fr_list spans;
    long long acquires, flagged, lost, timeouts, fails, forces, force_errors;
} fr_thread;

/* A holder: acquire, check the flag over ~hold_us, release. */
static void *fr_holder(void *arg)
{
    fr_thread *t = arg;
    int64_t end = rt_now_ms() + t->ms;

    while (rt_now_ms() < end) {
        int64_t call = rt_now_us(), a = 0, b = 0, until;
        int rc = rl_lock_try_acquire(t->lock, t->wait, RL_LEASE_WATCHDOG), checks = 0;

        if (rc == RL_ETIMEDOUT) {
            t->timeouts++;
            continue;
        }
        if (rc != RL_OK) {
            t->fails++;
            fx_note("acquire: %s (%s)", rl_strerror(rc), rl_last_error());
            rt_sleep_ms(10);   /* back-off step after a failure, not synchronisation */
            continue;
        }
        t->acquires++;
        until = rt_now_us() + t->hold_us;
        for (;;) {
            int64_t before = rt_now_us();
            if (rl_interrupted()) {
                t->flagged++;
                break;
            }
            if (checks++ == 0)
                a = rt_now_us();
            b = before;
            if (checks > 1 && before >= until)
                break;
            usleep(150);
        }
        rc = rl_lock_release(t->lock);
        if (checks > 1)           /* two checks found it down: a span */
            fr_add(&t->spans, call, a, b, rc);
        if (rc == RL_ELOST || rc == RL_ENOTOWNER) {
            t->lost++;
        } else if (rc != RL_OK) {
            t->fails++;
            fx_note("release: %s (%s)", rl_strerror(rc), rl_last_error());
        }
    }
    return NULL;
}

/* The operator: a force-release every force_ms. */
static void *fr_forcer(void *arg)
{
    fr_thread *t = arg;
    int64_t end = rt_now_ms() + t->ms;

    while (rt_now_ms() < end) {
        int64_t s, e;
        int rc;

        rt_sleep_ms(t->force_ms);    /* the operator's pace */
        s = rt_now_us();
        rc = rl_lock_force_release(t->lock);
        e = rt_now_us();
        t->forces++;
        if (rc != RL_OK) {
            t->force_errors++;
            fx_note("force-release: %s (%s)", rl_strerror(rc), rl_last_error());
        }
        fr_add(&t->spans, s, e, 0, rc);
    }
    return NULL;
}

/* Append spans to a referee list, pipelined. */
static int fr_push(redisContext *ref, const char *list, const fr_list *l)
{
    size_t i;
    int ok = 1;

    for (i = 0; i < l->n; i++)
        redisAppendCommand(ref, "RPUSH %s %d:%lld:%lld:%lld:%d", list, l->v[i].pid, l->v[i].t0,
                           l->v[i].t1, l->v[i].t2, l->v[i].status);
    for (i = 0; i < l->n; i++) {
        redisReply *r = NULL;
        if (redisGetReply(ref, (void **)&r) != REDIS_OK)
            return -1;
        ok = ok && r->type == REDIS_REPLY_INTEGER;
        freeReplyObject(r);
    }
    return ok ? 0 : -1;
}

/* force_loop: lock_port, ref_port, name, threads, ms, hold_us, wait,
 * force_ms (0: no force-release thread), lease. Spans go to rf:holds and
 * rf:forces. */
int role_force_loop(void)
{
    rl_client *c = fx_worker_client();
    int n = (int)fx_argl("threads", 2), forcer = fx_argl("force_ms", 0) > 0, i;
    int total = n + forcer;
    fr_thread *th = calloc((size_t)total, sizeof *th), sum;
    redisContext *ref;

    if (!th)
        return 92;
    memset(&sum, 0, sizeof sum);
    for (i = 0; i < total; i++) {
        th[i].ms = fx_argl("ms", 4000);
        th[i].hold_us = fx_argl("hold_us", 1000);
        th[i].wait = fx_argl("wait", 10000);
        th[i].force_ms = fx_argl("force_ms", 0);
        if (rl_lock_new(&th[i].lock, c, fx_arg("name", "fr")) != RL_OK)
            return 92;
    }
    for (i = 0; i < total; i++)
        pthread_create(&th[i].th, NULL, i < n ? fr_holder : fr_forcer, &th[i]);
    for (i = 0; i < total; i++)
        pthread_join(th[i].th, NULL);
    ref = fx_connect((int)fx_argl("ref_port", 0), 10000);
    if (!ref)
        return 93;
    for (i = 0; i < total; i++) {
        if (fr_push(ref, i < n ? "rf:holds" : "rf:forces", &th[i].spans) != 0)
            return 94;
        sum.acquires += th[i].acquires;
        sum.flagged += th[i].flagged;
        sum.lost += th[i].lost;
        sum.timeouts += th[i].timeouts;
        sum.fails += th[i].fails;
        sum.forces += th[i].forces;
        sum.force_errors += th[i].force_errors;
        rl_lock_free(th[i].lock);
        free(th[i].spans.v);
    }
    rl_client_free(c);
    fx_report(ref, "pid=%d forcer=%d acquires=%lld flagged=%lld lost=%lld timeouts=%lld "
                   "fails=%lld forces=%lld force_errors=%lld",
              (int)getpid(), forcer, sum.acquires, sum.flagged, sum.lost, sum.timeouts,
              sum.fails, sum.forces, sum.force_errors);
    redisFree(ref);
    free(th);
    return 0;
}

/* ---- the judge ------------------------------------------------------------ */

static int fr_load(redisContext *ref, const char *list, fr_list *out)
{
    fx_reports lines;
    int i;

    memset(out, 0, sizeof *out);
    if (fx_list_load(ref, list, &lines) != 0)
        return -1;
    out->v = calloc((size_t)lines.n + 1, sizeof *out->v);
    for (i = 0; out->v && i < lines.n; i++) {
        fr_span *v = &out->v[out->n];
        if (sscanf(lines.lines[i], "%d:%lld:%lld:%lld:%d", &v->pid, &v->t0, &v->t1, &v->t2,
                   &v->status) == 5)
            out->n++;
    }
    fx_reports_free(&lines);
    return out->v ? 0 : -1;
}

static int by_start(const void *p, const void *q)
{
    const fr_span *x = p, *y = q;
    return x->t1 < y->t1 ? -1 : x->t1 > y->t1;
}

/* Whether `stale` may have had its field deleted while `other` held, and
 * still be within the rules. */
static int fr_allowed(const fr_list *forces, int forcer, const fr_span *stale,
                      const fr_span *other)
{
    size_t i;

    if (stale->status == RL_OK)
        return 0;               /* its field was there at its release: not the stale one */
    if (stale->pid != forcer)
        return 1;               /* another process's hold: flagged at its next renewal */
    for (i = 0; i < forces->n; i++)
        if (forces->v[i].t0 < other->t1 && forces->v[i].t1 >= stale->t2)
            return 1;           /* its last check came before that force-release returned */
    return 0;
}

/* Say what the two holds and the last force-release before did. */
static void fr_explain(const fr_list *forces, const fr_span *e, const fr_span *l, long long ov)
{
    const fr_span *near = NULL;
    size_t i;

    for (i = 0; i < forces->n; i++)
        if (forces->v[i].t0 <= l->t1 && (!near || forces->v[i].t0 > near->t0))
            near = &forces->v[i];
    fx_note("overlap of %lld us: hold of %d called at %lld, flag down over [%lld, %lld], "
            "release %s; hold of %d called at %lld, flag down over [%lld, %lld], release %s; "
            "last force-release before: [%lld, %lld] (us)", ov, e->pid, e->t0, e->t1, e->t2,
            rl_strerror(e->status), l->pid, l->t0, l->t1, l->t2, rl_strerror(l->status),
            near ? near->t0 : -1, near ? near->t1 : -1);
}

int sc_force_race(void)
{
    const char *name = "fr";
    long ms = fx_scale(4000, 60000), force_ms = FR_FORCE_MS;
    long long acquires, forces, min_forces = ms / force_ms / 3, min_acquires = ms / 10;
    long long violations = 0, excused = 0, max_overlap_us = 0;
    int forcer, bad, pass, rc;
    fr_list holds, forces_v;
    size_t i, j;
    pid_t pids[2];
    fx_env env;
    fx_reports rep;

    if (fx_env_start(&env, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_redis");
    pids[0] = fx_spawnf("force_loop", (unsigned)(ms / 1000 + 60),
                        "lock_port=%d ref_port=%d name=%s threads=3 ms=%ld hold_us=1000 "
                        "force_ms=%ld lease=2000", env.lock->port, env.ref->port, name, ms,
                        force_ms);
    pids[1] = fx_spawnf("force_loop", (unsigned)(ms / 1000 + 60),
                        "lock_port=%d ref_port=%d name=%s threads=2 ms=%ld hold_us=1000 "
                        "force_ms=0 lease=2000", env.lock->port, env.ref->port, name, ms);
    forcer = (int)pids[0];
    bad = fx_wait_all(pids, 2, ms + 60000);

    if (fx_reports_load(env.rc, &rep) != 0 || fr_load(env.rc, "rf:holds", &holds) != 0 ||
        fr_load(env.rc, "rf:forces", &forces_v) != 0)
        return fx_verdict(fx_scenario, 0, "error=referee_unreadable");
    qsort(holds.v, holds.n, sizeof *holds.v, by_start);
    for (i = 0; i < holds.n; i++) {
        const fr_span *e = &holds.v[i];
        for (j = i + 1; j < holds.n && holds.v[j].t1 < e->t2; j++) {
            const fr_span *l = &holds.v[j];
            long long ov = (e->t2 < l->t2 ? e->t2 : l->t2) - l->t1;
            if (ov <= 0)
                continue;
            if (fr_allowed(&forces_v, forcer, e, l) || fr_allowed(&forces_v, forcer, l, e)) {
                excused++;
                continue;
            }
            violations++;
            if (ov > max_overlap_us)
                max_overlap_us = ov;
            if (violations <= 5)
                fr_explain(&forces_v, e, l, ov);
        }
    }
    acquires = fx_reports_sum(&rep, "acquires");
    forces = fx_reports_sum(&rep, "forces");
    pass = bad == 0 && rep.n == 2 && violations == 0 && fx_reports_sum(&rep, "fails") == 0 &&
           fx_reports_sum(&rep, "force_errors") == 0 && forces >= min_forces &&
           acquires >= min_acquires;
    rc = fx_verdict(fx_scenario, pass,
                    "forces=%lld force_every_ms=%ld acquires=%lld holds_judged=%zu "
                    "flagged=%lld lost=%lld overlaps_both_flags_down=%lld max_overlap_us=%lld "
                    "overlaps_allowed=%lld timeouts=%lld fails=%lld force_errors=%lld "
                    "workers_failed=%d",
                    forces, force_ms, acquires, holds.n, fx_reports_sum(&rep, "flagged"),
                    fx_reports_sum(&rep, "lost"), violations, max_overlap_us, excused,
                    fx_reports_sum(&rep, "timeouts"), fx_reports_sum(&rep, "fails"),
                    fx_reports_sum(&rep, "force_errors"), bad);
    free(holds.v);
    free(forces_v.v);
    fx_reports_free(&rep);
    fx_env_stop(&env);
    return rc;
}
