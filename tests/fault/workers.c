/*
 * Worker roles shared by several scenarios:
 *
 *   loop   threads that take locks on a few names over and over (nested
 *          reentry, two names at once, watchdog and fixed leases), run
 *          referee sections while holding, and count every outcome
 *   hold   take one lock, announce it, keep it until told, release it
 *
 * Arguments of `loop` (key=value; defaults in brackets):
 *   lock_port | url   the lock server (or a proxy in front of it)
 *   ref_port          the referee server
 *   check_port        if set: after each change, compare the lock's count in
 *                     Redis (read directly on this port) with the local one
 *   threads [4]  names [a,b,c]  ms [3000] (run time)  stop [0] (1: also end
 *                     when the referee key rf:stop exists)
 *   lease [2000] renew [0] cmd_to [0] conn_to [0]  (client options)
 *   wait_replicas [0] wait_replicas_ms [0]  (client options: replica
 *                     acknowledgement; RL_EREPLICA is then counted, not failed)
 *   fixed [0]         a fixed lease in ms used by fixed_pct% of acquisitions
 *   fixed_pct [50]    share of fixed leases when fixed > 0
 *   nest [2]          up to this many reentries per hold
 *   pair [1]          sometimes hold two names at once (in name order)
 *   pin [0]           1: thread i only ever takes name i % (number of names)
 *   wait [10000]      wait_ms of each acquisition (-1: forever)
 *   secs [1..3]       referee sections per hold: sec_min, sec_max
 *   hold_ms [0]       instead: hold for this long, sections back to back
 *   work_us [0]       work inside a section (see rf_section)
 *   think_us [0]      pause between holds
 *   flaglog [0]       push the timing of each flag seen to rf:flaglog
 *   acqlog [0]        push, for each acquisition (not reentry) that succeeded,
 *                     the moment its call began to rf:acqlog (rt_now_ms());
 *                     2: "<began>,<returned>", both moments
 *   holdlog [0]       push, for each hold (first acquisition to last release),
 *                     "<acquired>,<released>,<flag seen>,<release status>,<name>"
 *                     to rf:holdlog: when the acquisition returned, when the
 *                     last release returned, 1 if the holder saw its flag, and
 *                     the first status other than RL_OK of its releases
 *   eproto_ok [0]     1: RL_EPROTO (a count in Redis this thread did not expect,
 *                     e.g. a change lost by asynchronous replication) is
 *                     counted as eproto, not as a failure
 *   log [-1]          the library's diagnostics up to this RL_LOG_* level on
 *                     stderr (1: errors and warnings)
 *   tag [loop]        name in the report
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault.h"
#include "referee.h"
#include "scenarios.h"

/* log=<level>: the library's diagnostics up to that RL_LOG_* level on
 * stderr (1: errors and warnings), next to the worker's own notes. */
static void worker_log(int level, const char *message, void *payload)
{
    if (level <= (int)(intptr_t)payload)
        fx_note("rlock: %s", message);
}

rl_client *fx_worker_client(void)
{
    rl_options o;
    rl_client *c;
    char url[256];   /* a redlock:// URL of 9 masters fits */
    int rc;

    rl_options_init(&o, RL_OPTIONS_VERSION);
    if (fx_arg("url", NULL))
        snprintf(url, sizeof url, "%s", fx_arg("url", NULL));
    else
        snprintf(url, sizeof url, "redis://127.0.0.1:%ld", fx_argl("lock_port", 0));
    o.url = url;
    o.lease_ms = fx_argl("lease", 2000);
    o.renew_interval_ms = fx_argl("renew", 0);
    o.command_timeout_ms = fx_argl("cmd_to", 0);
    o.connect_timeout_ms = fx_argl("conn_to", 0);
    o.pool_size = (int)fx_argl("pool", 0);
    o.wait_replicas = (int)fx_argl("wait_replicas", 0);
    o.wait_replicas_ms = fx_argl("wait_replicas_ms", 0);
    o.fencing = (int)fx_argl("fencing", 0);
    o.lock_delay_ms = fx_argl("delay", 0);
    if (fx_argl("log", -1) >= 0) {
        o.log = worker_log;
        o.payload = (void *)(intptr_t)fx_argl("log", -1);
    }
    rc = rl_client_new(&c, &o);
    if (rc != RL_OK) {
        fx_note("rl_client_new(%s): %s (%s)", url, rl_strerror(rc), rl_last_error());
        exit(90);
    }
    return c;
}

typedef struct loop_stats {
    long long acquires, reentries, sections, flags, econn, timeouts, busy, lost, fails;
    long long mismatch, maxcall_ms, releases, ereplica, eproto;
} loop_stats;

typedef struct loop_cfg {
    rl_client *client;
    char names[16][64];
    int nnames;
    long ms, lease, fixed, fixed_pct, nest, pair, wait, sec_min, sec_max, hold_ms;
    long work_us, think_us;
    int stop, flaglog, acqlog, holdlog, pin, eproto_ok, replicas;
    int ref_port, check_port;
    pthread_mutex_t mu;
    loop_stats total;
    atomic_int stopped;
} loop_cfg;

typedef struct loop_thread {
    loop_cfg *cfg;
    int index;
    pthread_t th;
    redisContext *ref, *chk;
    rl_lock *locks[16];
    char owner[48];
    unsigned seed;
    loop_stats s;
} loop_thread;

static void note_call(loop_stats *s, int64_t t0)
{
    int64_t d = rt_now_ms() - t0;
    if (d > s->maxcall_ms)
        s->maxcall_ms = d;
}

/* Compare the hold count in Redis with the local one; a mismatch while the
 * hold is not flagged is a double count (or a lost change). */
static void check_count(loop_thread *t, int i)
{
    long long v = -1;
    int n, local;

    if (!t->chk)
        return;
    local = rl_lock_hold_count(t->locks[i]);
    n = fx_lock_fields(t->chk, t->cfg->names[i], NULL, 0, &v);
    if (n < 0 && t->chk->err) {
        /* Killed by a fault of the scenario: reconnect for the next check. */
        redisFree(t->chk);
        t->chk = fx_connect(t->cfg->check_port, 5000);
        if (!t->chk)
            t->chk = fx_connect(t->cfg->check_port, 5000);
        if (!t->chk) {
            t->s.fails++;
            return;
        }
    }
    if (n < 0 || rl_lock_interrupted(t->locks[i]))
        return;
    if (n != 1 || v != local) {
        t->s.mismatch++;
        fx_note("thread %s: %s holds %d locally, Redis has %d field(s), count %lld",
                t->owner, t->cfg->names[i], local, n, v);
    }
}

/*
 * A hold's flag was seen. t_ok: the start of the last section that found
 * the flag down (so the flag was still down at some moment >= t_ok).
 */
static void flag_seen(loop_thread *t, int i, int64_t t_acq, int64_t t_ok, int watchdog)
{
    t->s.flags++;
    if (t->cfg->flaglog)
        fx_cmd(t->ref, "RPUSH rf:flaglog t_acq=%lld,t_ok=%lld,t_flag=%lld,wd=%d,name=%s",
               (long long)t_acq, (long long)t_ok, (long long)rt_now_ms(), watchdog,
               t->cfg->names[i]);
}

/* Give back every hold of lock i; retries through connection errors.
 * Returns RL_OK, or the first other status that ended a release. */
static int release_all(loop_thread *t, int i)
{
    int64_t deadline = rt_now_ms() + 60000;
    int first = RL_OK;

    while (rl_lock_hold_count(t->locks[i]) > 0) {
        int64_t t0 = rt_now_ms();
        int rc = rl_lock_release(t->locks[i]);
        note_call(&t->s, t0);
        if (rc == RL_OK) {
            t->s.releases++;
            if (rl_lock_hold_count(t->locks[i]) > 0)
                check_count(t, i);
        } else if (rc == RL_ELOST || rc == RL_ENOTOWNER) {
            t->s.lost++;
            if (first == RL_OK)
                first = rc;
        } else if (rc == RL_ECONN) {
            t->s.econn++;
            if (rt_now_ms() > deadline) {
                t->s.fails++;
                fx_note("thread %s: release of %s keeps failing: %s", t->owner,
                        t->cfg->names[i], rl_last_error());
                return rc;
            }
            rt_sleep_ms(20);   /* back-off step of a retry loop, not synchronisation */
        } else {
            if (rc == RL_EPROTO && t->cfg->eproto_ok)
                t->s.eproto++;
            else
                t->s.fails++;
            fx_note("thread %s: release of %s: %s (%s)", t->owner, t->cfg->names[i],
                    rl_strerror(rc), rl_last_error());
            if (first == RL_OK)
                first = rc;
            if (rc != RL_EPROTO || rt_now_ms() > deadline)
                return first;
        }
    }
    return first;
}

/* Take lock i (and reenter up to nest times). 1: held, 0: not. */
static int take(loop_thread *t, int i, long lease, int64_t *t_acq)
{
    loop_cfg *cfg = t->cfg;
    int64_t t0 = rt_now_ms();
    int rc = rl_lock_try_acquire(t->locks[i], cfg->wait, lease);
    long extra, k;

    note_call(&t->s, t0);
    *t_acq = rt_now_ms();
    switch (rc) {
    case RL_OK:
        t->s.acquires++;
        if (cfg->acqlog == 2)
            fx_cmd(t->ref, "RPUSH rf:acqlog %lld,%lld", (long long)t0, (long long)*t_acq);
        else if (cfg->acqlog)
            fx_cmd(t->ref, "RPUSH rf:acqlog %lld", (long long)t0);
        break;
    case RL_ETIMEDOUT:
        t->s.timeouts++;
        return 0;
    case RL_ECONN:
        t->s.econn++;
        return 0;
    case RL_EREPLICA:
        if (!cfg->replicas)
            goto unexpected;
        t->s.ereplica++;
        return 0;
    case RL_EPROTO:
        if (!cfg->eproto_ok)
            goto unexpected;
        t->s.eproto++;
        fx_note("thread %s: acquire %s: %s (%s)", t->owner, cfg->names[i], rl_strerror(rc),
                rl_last_error());
        return 0;
    case RL_EBUSY:
        if (cfg->wait == 0) {
            t->s.busy++;
            return 0;
        }
        /* fall through */
    default:
    unexpected:
        t->s.fails++;
        fx_note("thread %s: acquire %s: %s (%s)", t->owner, cfg->names[i], rl_strerror(rc),
                rl_last_error());
        return 0;
    }
    check_count(t, i);
    extra = cfg->nest > 0 ? (long)(rand_r(&t->seed) % (unsigned)(cfg->nest + 1)) : 0;
    for (k = 0; k < extra; k++) {
        t0 = rt_now_ms();
        rc = rl_lock_try_acquire(t->locks[i], 0, lease);
        note_call(&t->s, t0);
        if (rc == RL_OK) {
            t->s.reentries++;
            check_count(t, i);
        } else if (rc == RL_ELOST) {
            break;          /* seen at the next section */
        } else if (rc == RL_ECONN) {
            t->s.econn++;
        } else if (rc == RL_EREPLICA && cfg->replicas) {
            t->s.ereplica++;    /* the hold stands as it was */
        } else if (rc == RL_EPROTO && cfg->eproto_ok) {
            t->s.eproto++;
            fx_note("thread %s: reentry %s: %s (%s)", t->owner, cfg->names[i], rl_strerror(rc),
                    rl_last_error());
        } else {
            t->s.fails++;
            fx_note("thread %s: reentry %s: %s (%s)", t->owner, cfg->names[i], rl_strerror(rc),
                    rl_last_error());
        }
    }
    return 1;
}

static void *loop_main(void *arg)
{
    loop_thread *t = arg;
    loop_cfg *cfg = t->cfg;
    int64_t end = rt_now_ms() + cfg->ms;
    long iter = 0;

    while (rt_now_ms() < end && !atomic_load(&cfg->stopped)) {
        int a = cfg->pin ? t->index % cfg->nnames : (int)(rand_r(&t->seed) % (unsigned)cfg->nnames);
        int b = -1, held[2], nheld = 0, j;
        int watchdog = !(cfg->fixed > 0 && (long)(rand_r(&t->seed) % 100) < cfg->fixed_pct);
        long lease = watchdog ? RL_LEASE_WATCHDOG : cfg->fixed;
        long secs = cfg->sec_min + (cfg->sec_max > cfg->sec_min
                                        ? (long)(rand_r(&t->seed) %
                                                 (unsigned)(cfg->sec_max - cfg->sec_min + 1))
                                        : 0);
        int64_t t_acq[2] = { 0, 0 }, hold_end, t_ok = 0;
        int flagged = 0, seen[2] = { 0, 0 };

        if (cfg->stop && (++iter % 4) == 0 && fx_cmd(t->ref, "EXISTS rf:stop") == 1)
            break;
        if (cfg->pair && cfg->nnames > 1 && rand_r(&t->seed) % 4 == 0) {
            b = (int)(rand_r(&t->seed) % (unsigned)cfg->nnames);
            if (b == a)
                b = -1;
            else if (b < a) {
                int x = a;
                a = b;
                b = x;
            }
        }
        if (take(t, a, lease, &t_acq[0]))
            held[nheld++] = a;
        if (nheld == 1 && b >= 0 && take(t, b, lease, &t_acq[1]))
            held[nheld++] = b;

        hold_end = rt_now_ms() + cfg->hold_ms;
        for (long s = 0; nheld > 0 && (cfg->hold_ms > 0 ? rt_now_ms() < hold_end : s < secs);
             s++) {
            if (cfg->hold_ms > 0 && cfg->stop && s % 50 == 49 &&
                fx_cmd(t->ref, "EXISTS rf:stop") == 1)
                break;
            for (j = 0; j < nheld && !flagged; j++) {
                int64_t t_sec = rt_now_ms();
                int rc = rf_section(t->ref, cfg->names[held[j]], t->owner, cfg->work_us);
                if (rc == RF_WROTE) {
                    t->s.sections++;
                    t_ok = t_sec;
                } else if (rc == RF_FLAGGED) {
                    flagged = 1;
                    for (int q = 0; q < nheld; q++)
                        if (rl_lock_interrupted(t->locks[held[q]]) == 1) {
                            seen[q] = 1;
                            flag_seen(t, held[q], t_acq[q], t_ok, watchdog);
                        }
                } else {
                    t->s.fails++;
                }
            }
            if (flagged)
                break;
        }
        for (j = nheld - 1; j >= 0; j--) {
            int rc = release_all(t, held[j]);
            if (cfg->holdlog)
                fx_cmd(t->ref, "RPUSH rf:holdlog %lld,%lld,%d,%d,%s", (long long)t_acq[j],
                       (long long)rt_now_ms(), seen[j], rc, cfg->names[held[j]]);
        }
        if (cfg->think_us > 0)
            usleep((useconds_t)cfg->think_us);
    }
    return NULL;
}

int role_loop(void)
{
    loop_cfg cfg;
    loop_thread *th;
    redisContext *ref;
    char names[1024], *save = NULL, *tok;
    int nthreads, i;

    memset(&cfg, 0, sizeof cfg);
    snprintf(names, sizeof names, "%s", fx_arg("names", "a,b,c"));
    for (tok = strtok_r(names, ",", &save); tok && cfg.nnames < 16; tok = strtok_r(NULL, ",", &save))
        snprintf(cfg.names[cfg.nnames++], sizeof cfg.names[0], "%s", tok);
    nthreads = (int)fx_argl("threads", 4);
    cfg.ms = fx_argl("ms", 3000);
    cfg.lease = fx_argl("lease", 2000);
    cfg.fixed = fx_argl("fixed", 0);
    cfg.fixed_pct = fx_argl("fixed_pct", 50);
    cfg.nest = fx_argl("nest", 2);
    cfg.pair = (int)fx_argl("pair", 1);
    cfg.wait = fx_argl("wait", 10000);
    cfg.sec_min = fx_argl("sec_min", 1);
    cfg.sec_max = fx_argl("sec_max", 3);
    cfg.hold_ms = fx_argl("hold_ms", 0);
    cfg.work_us = fx_argl("work_us", 0);
    cfg.think_us = fx_argl("think_us", 0);
    cfg.stop = (int)fx_argl("stop", 0);
    cfg.flaglog = (int)fx_argl("flaglog", 0);
    cfg.acqlog = (int)fx_argl("acqlog", 0);
    cfg.holdlog = (int)fx_argl("holdlog", 0);
    cfg.eproto_ok = (int)fx_argl("eproto_ok", 0);
    cfg.replicas = fx_argl("wait_replicas", 0) > 0;
    cfg.pin = (int)fx_argl("pin", 0);
    cfg.ref_port = (int)fx_argl("ref_port", 0);
    cfg.check_port = (int)fx_argl("check_port", 0);
    pthread_mutex_init(&cfg.mu, NULL);
    cfg.client = fx_worker_client();

    th = calloc((size_t)nthreads, sizeof *th);
    for (i = 0; i < nthreads; i++) {
        th[i].cfg = &cfg;
        th[i].index = i;
        th[i].seed = (unsigned)(getpid() * 7919 + i * 104729 + rt_now_us());
        snprintf(th[i].owner, sizeof th[i].owner, "%d.%d", (int)getpid(), i);
        th[i].ref = fx_connect(cfg.ref_port, 5000);
        if (cfg.check_port)
            th[i].chk = fx_connect(cfg.check_port, 5000);
        if (!th[i].ref || (cfg.check_port && !th[i].chk))
            return 91;
        for (int n = 0; n < cfg.nnames; n++) {
            int rc = rl_lock_new(&th[i].locks[n], cfg.client, cfg.names[n]);
            if (rc != RL_OK) {
                fx_note("rl_lock_new: %s", rl_strerror(rc));
                return 92;
            }
        }
    }
    /* Tell the driver this worker is connected (it may wait before faults). */
    fx_event_push(th[0].ref, "ready", "%d", (int)getpid());
    for (i = 0; i < nthreads; i++)
        pthread_create(&th[i].th, NULL, loop_main, &th[i]);
    for (i = 0; i < nthreads; i++) {
        loop_stats *s = &th[i].s;
        pthread_join(th[i].th, NULL);
        cfg.total.acquires += s->acquires;
        cfg.total.reentries += s->reentries;
        cfg.total.releases += s->releases;
        cfg.total.sections += s->sections;
        cfg.total.flags += s->flags;
        cfg.total.econn += s->econn;
        cfg.total.timeouts += s->timeouts;
        cfg.total.busy += s->busy;
        cfg.total.lost += s->lost;
        cfg.total.fails += s->fails;
        cfg.total.mismatch += s->mismatch;
        cfg.total.ereplica += s->ereplica;
        cfg.total.eproto += s->eproto;
        if (s->maxcall_ms > cfg.total.maxcall_ms)
            cfg.total.maxcall_ms = s->maxcall_ms;
    }
    for (i = 0; i < nthreads; i++) {
        for (int n = 0; n < cfg.nnames; n++)
            rl_lock_free(th[i].locks[n]);
        redisFree(th[i].ref);
        if (th[i].chk)
            redisFree(th[i].chk);
    }
    rl_client_free(cfg.client);
    ref = fx_connect(cfg.ref_port, 5000);
    if (!ref)
        return 93;
    fx_report(ref,
           "pid=%d tag=%s acquires=%lld reentries=%lld releases=%lld "
           "sections=%lld flags=%lld econn=%lld timeouts=%lld busy=%lld lost=%lld fails=%lld "
           "mismatch=%lld maxcall_ms=%lld ereplica=%lld eproto=%lld",
           (int)getpid(), fx_arg("tag", "loop"), cfg.total.acquires, cfg.total.reentries,
           cfg.total.releases, cfg.total.sections, cfg.total.flags, cfg.total.econn,
           cfg.total.timeouts, cfg.total.busy, cfg.total.lost, cfg.total.fails,
           cfg.total.mismatch, cfg.total.maxcall_ms, cfg.total.ereplica, cfg.total.eproto);
    redisFree(ref);
    free(th);
    return 0;
}

/*
 * hold: lock_port/url, ref_port, name, lease (fixed lease in ms, or -1:
 * watchdog), q (event queue name). Announces "held" on rf:ev:<q>.out, waits
 * up to wait_cmd ms for any message on rf:ev:<q>.in, releases, announces
 * "released <status>".
 */
int role_hold(void)
{
    rl_client *c = fx_worker_client();
    redisContext *ref = fx_connect((int)fx_argl("ref_port", 0), 5000);
    const char *q = fx_arg("q", "hold");
    char qin[80], qout[80], msg[128];
    rl_lock *lock;
    int rc;

    if (!ref)
        return 91;
    snprintf(qin, sizeof qin, "%s.in", q);
    snprintf(qout, sizeof qout, "%s.out", q);
    rl_lock_new(&lock, c, fx_arg("name", "h"));
    rc = rl_lock_try_acquire(lock, fx_argl("wait", 10000), fx_argl("hold_lease", -1));
    if (rc != RL_OK) {
        fx_event_push(ref, qout, "failed %d", rc);
        return 1;
    }
    fx_event_push(ref, qout, "held");
    fx_event_wait(ref, qin, msg, sizeof msg, fx_argl("wait_cmd", 30000));
    rc = rl_lock_release(lock);
    fx_event_push(ref, qout, "released %d", rc);
    rl_lock_free(lock);
    rl_client_free(c);
    redisFree(ref);
    return rc == RL_OK ? 0 : 2;
}
