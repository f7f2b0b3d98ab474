/*
 * Scenarios 23-25, Sentinel under a failover. The locks live on a Sentinel
 * deployment of real processes (tests/common/rt_sentinel.h): a primary, two
 * replicas and three sentinels; workers get its sentinel:// URL and find
 * the primary through the sentinels. The referee stays one plain server
 * that is never faulted.
 *
 * sentinel_failover: every worker's client has wait_replicas=1 (an
 * acquisition is reported only once a replica has it). `loop` workers run
 * the contended workload on three names (watchdog lease 2000 ms, reentry,
 * two names at once, waits of 10 s that ride out the outage); three
 * `sn_hold` workers (below) each keep a name of their own and write referee
 * sections on it back to back, two with a watchdog lease of 8000 ms
 * ("keepers") and one of 1000 ms ("short"), each with a waiter of another
 * process queued behind it. The primary is SIGKILLed and the sentinels
 * promote a replica. Once work has resumed and every sentinel names the new
 * primary, the killed node is restarted on its port, empty: it answers as a
 * primary until the sentinels turn it into a replica of the new one.
 * Proves: work resumes on the new primary (a count of acquisitions that
 * returned after the failover is required within a deadline, and the new
 * primary serves EVALSHA calls); the short hold is flagged (its lease is
 * shorter than any failover) and its waiter takes the name on the new
 * primary; the keepers are kept: not flagged until their lease has run out
 * since the kill (so their renewals on the new primary were confirmed) and
 * released with RL_OK, since a replica had their acquisition and Sentinel
 * promotes the replica with the most of the primary's writes; their
 * waiters are woken by the release notice on the new primary within
 * SN_WAKE_MS; no client sends a lock call to the restarted node while it
 * is an empty primary; it rejoins as a replica; the referee finds no
 * overlap across the failover; no call fails other than with RL_ECONN or
 * RL_EREPLICA (and an `sn_hold` tries those again within its wait). One
 * round; three in the long form (more loop processes), each killing
 * whichever node is primary then.
 *
 * sentinel_failover_noack: the same without wait_replicas. Redis
 * replicates asynchronously, so a change the primary made just before it
 * died may be missing on the promoted replica: a hold can be lost, and a
 * second owner can get its name while the first writes on until its next
 * renewal. None of that is judged; the verdict line says what was seen
 * (seen=nothing_lost|holds_lost|overlap; violations, holds spanning the
 * failover kept, flagged or lost, keepers kept, flags, lost, RL_EPROTO). It
 * still fails when work does not resume after the failover, a waiter is
 * not served, a worker hangs or fails, or a client uses the restarted
 * empty primary.
 *
 * Figures: failover_ms (kill to a quorum of sentinels naming a new primary
 * that says it is one), first_acq_ms (kill to the first acquisition that
 * returned after it), resume_ms (failover to the required count, target),
 * acq_per_s_after (the rate of acquisitions in the SN_COUNT_MS after the
 * failover, or as much of it as the round lasted; the lowest round's),
 * spanned (holds acquired before the kill and released after it: loop
 * holds, keepers, short) split into kept (no flag, released RL_OK),
 * flagged (flag seen while writing) and span_lost (the release said
 * RL_ELOST, e.g. one in flight at the kill whose outcome nobody could
 * read), the workers' statuses (econn, ereplica, eproto, timeouts, lost),
 * wake_ms, handover_ms (a holder's last write to its waiter's grant),
 * agree_ms (kill to every sentinel naming the new primary, the failover
 * over), rejoin_ms (restart to a settled deployment), stale_calls and
 * stale_keys (EVALSHA calls served and keys held by the restarted node
 * while it said master).
 *
 * sentinel_restart_early: sentinel_failover with the old primary restarted
 * as soon as a quorum names the new one (and before the acquisitions are
 * counted), while some sentinels and clients may still name the old
 * address. Judged as sentinel_failover. It found a bug: the library took
 * the primary's address from the first sentinel that answered (which could
 * still be one that had not switched, or the leader, whose SENTINEL MASTER
 * shows the new epoch with the old address), and used a new connection
 * without asking again, so clients connected to the empty node that now
 * answered on the old port and used it until a +switch-master message
 * reached them (about a second here): with wait_replicas its grants were
 * undone (it has no replica) but renewals sent there found their fields
 * gone and flagged the keepers (about 20 stale calls a run, FAIL); without,
 * two owners held a name at once (733 to 10613 overlaps a run). The library
 * now asks the sentinels until a majority answered and takes the address of
 * the highest config epoch, and checks every new connection made after a
 * loss against an answer asked for after it was made.
 *
 * Limits. Timings rest on the fixture's down-after of 2000 ms: a failover
 * of about 3.3 s (a split election would add 6 s: the keepers are then only
 * reported, keep_required), every sentinel agreeing about 2 s later, a
 * restarted node demoted about 10 s after its restart (at once when it
 * comes back as a replica of the primary).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "referee.h"
#include "scenarios.h"

#define SN_MASTER "fxsn"
#define SN_LOOP_LEASE 2000
#define SN_KEEP_LEASE 8000       /* above any failover that does not need a second election */
#define SN_SHORT_LEASE 1000      /* below any failover: 2 s to subjective down alone */
#define SN_KEEPERS 2
#define SN_HOLDERS (SN_KEEPERS + 1)   /* the keepers, then the short one */
#define SN_FAILOVER_MS 30000     /* a split election is retried after 6 s */
#define SN_COUNT_MS 10000        /* acquisitions counted after the failover, within */
#define SN_WAKE_MS 1500          /* a waiter behind a released keeper takes the name */
#define SN_REJOIN_MS 45000       /* the restarted node becomes a replica (8 s and more) */
#define SN_INFLIGHT_MS 20        /* a reply the dead primary sent is read by then */
#define SN_STALE_POLL_MS 5

/* The `loop` workload (the scenario adds url, lease, wait_replicas). */
#define SN_LOOP_ARGS \
    "threads=3 nest=1 pair=1 wait=10000 sec_min=1 sec_max=3 work_us=500 think_us=1000 " \
    "acqlog=2 holdlog=1 flaglog=1 cmd_to=500 conn_to=500 ms=1200000 stop=1"

/* ---- sn_hold ---------------------------------------------------------------- */

/*
 * sn_hold: url, ref_port, name, q, wait (ms), lease and the client's other
 * options, work_us [200], tag. Announces "waiting" on rf:ev:<q>.out, takes
 * the name with a watchdog lease (waiting up to `wait`; RL_EREPLICA and
 * RL_ECONN are tried again within it), announces "held
 * <t>" (or "failed <status>"), then runs referee sections on it back to
 * back until "release" comes on rf:ev:<q>.in; once its flag is up it writes
 * no more and announces "flagged <t>". Releases (retrying RL_ECONN for 30 s)
 * and announces "released <status> <t> <start of its last write>"; ends
 * with one report line.
 */
int role_sn_hold(void)
{
    rl_client *c = fx_worker_client();
    redisContext *ref = fx_connect((int)fx_argl("ref_port", 0), 5000);
    const char *name = fx_arg("name", "h"), *q = fx_arg("q", "snh");
    long work_us = fx_argl("work_us", 200);
    char qin[48], qout[48], msg[64], owner[32];
    int64_t t_acq = 0, t_flag = 0, t_ok = 0, deadline;
    long long sections = 0, fails = 0, econn = 0, ereplica = 0;
    int rc, acqrc, relrc = RL_EINVAL, flagged = 0;
    rl_lock *lock;

    if (!ref)
        return 91;
    snprintf(qin, sizeof qin, "%s.in", q);
    snprintf(qout, sizeof qout, "%s.out", q);
    snprintf(owner, sizeof owner, "%d.0", (int)getpid());
    if (rl_lock_new(&lock, c, name) != RL_OK)
        return 92;
    fx_event_push(ref, qout, "waiting");
    /* An acquisition undone for want of a replica's acknowledgement, or
     * made while no primary answered, is tried again within the wait. */
    deadline = rt_now_ms() + fx_argl("wait", 10000);
    for (;;) {
        long left = (long)(deadline - rt_now_ms());
        acqrc = rl_lock_try_acquire(lock, left > 0 ? left : 0, RL_LEASE_WATCHDOG);
        if ((acqrc != RL_EREPLICA && acqrc != RL_ECONN) || rt_now_ms() >= deadline)
            break;
        if (acqrc == RL_EREPLICA)
            ereplica++;
        else
            econn++;
        rt_sleep_ms(20);   /* back-off step of a retry loop, not synchronisation */
    }
    t_acq = rt_now_ms();
    if (acqrc != RL_OK) {
        fx_note("sn_hold %s: acquire: %s (%s)", name, rl_strerror(acqrc), rl_last_error());
        fx_event_push(ref, qout, "failed %d", acqrc);
        fails++;
    } else {
        fx_event_push(ref, qout, "held %lld", (long long)t_acq);
        for (;;) {
            int64_t t_sec = rt_now_ms();
            if (fx_event_poll(ref, qin, msg, sizeof msg) == 0)
                break;
            if (flagged) {
                if (fx_event_wait(ref, qin, msg, sizeof msg, 120000) != 0)
                    fails++;
                break;
            }
            rc = rf_section(ref, name, owner, work_us);
            if (rc == RF_WROTE) {
                sections++;
                t_ok = t_sec;
            } else if (rc == RF_FLAGGED) {
                flagged = 1;
                t_flag = rt_now_ms();
                fx_event_push(ref, qout, "flagged %lld", (long long)t_flag);
            } else {
                fails++;
                break;
            }
        }
        deadline = rt_now_ms() + 30000;
        while ((relrc = rl_lock_release(lock)) == RL_ECONN && rt_now_ms() < deadline) {
            econn++;
            rt_sleep_ms(20);   /* back-off step of a retry loop, not synchronisation */
        }
        if (relrc != RL_OK)
            fx_note("sn_hold %s: release: %s (%s)", name, rl_strerror(relrc), rl_last_error());
        fx_event_push(ref, qout, "released %d %lld %lld", relrc, (long long)rt_now_ms(),
                      (long long)t_ok);
    }
    rl_lock_free(lock);
    rl_client_free(c);
    fx_report(ref, "pid=%d tag=%s name=%s acqrc=%d t_acq=%lld flagged=%d t_flag=%lld "
              "t_ok=%lld relrc=%d flags=%d lost=%d sections=%lld econn=%lld ereplica=%lld "
              "fails=%lld timeouts=0",
              (int)getpid(), fx_arg("tag", "sn_hold"), name, acqrc,
              (long long)t_acq, flagged, (long long)t_flag, (long long)t_ok, relrc, flagged,
              relrc == RL_ELOST || relrc == RL_ENOTOWNER, sections, econn, ereplica, fails);
    redisFree(ref);
    return fails ? 1 : 0;
}

/* ---- the driver's view of an sn_hold worker --------------------------------- */

typedef struct sn_proc {
    pid_t pid;
    char name[24], q[24];
    int waiting, held, flagged, released, failed, relrc, acqrc;
    int64_t t_held, t_flag, t_rel, t_ok;
} sn_proc;

/* One event of p (waiting up to timeout_ms; 0: only what is there). 0, or -1. */
static int sp_read(fx_env *env, sn_proc *p, long timeout_ms)
{
    char qout[48], msg[128];
    long long a, b;
    int rc, got;

    snprintf(qout, sizeof qout, "%s.out", p->q);
    got = timeout_ms > 0 ? fx_event_wait(env->rc, qout, msg, sizeof msg, timeout_ms)
                         : fx_event_poll(env->rc, qout, msg, sizeof msg);
    if (got != 0)
        return -1;
    if (strcmp(msg, "waiting") == 0) {
        p->waiting = 1;
    } else if (sscanf(msg, "held %lld", &a) == 1) {
        p->held = 1;
        p->t_held = a;
    } else if (sscanf(msg, "flagged %lld", &a) == 1) {
        p->flagged = 1;
        p->t_flag = a;
    } else if (sscanf(msg, "released %d %lld %lld", &rc, &a, &b) == 3) {
        p->released = 1;
        p->relrc = rc;
        p->t_rel = a;
        p->t_ok = b;
    } else if (sscanf(msg, "failed %d", &rc) == 1) {
        p->failed = 1;
        p->acqrc = rc;
    } else {
        fx_note("%s: an event not understood: \"%s\"", p->q, msg);
    }
    return 0;
}

/* Read p's events until *what is set (or p failed, or the deadline). *what. */
static int sp_until(fx_env *env, sn_proc *p, const int *what, long timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;

    while (!*what && !p->failed) {
        long left = (long)(deadline - rt_now_ms());
        if (left <= 0 || sp_read(env, p, left) != 0)
            break;
    }
    return *what;
}

/* Everything p has said so far, without waiting. */
static void sp_drain(fx_env *env, sn_proc *p)
{
    while (sp_read(env, p, 0) == 0) {
    }
}

static pid_t sp_spawn(fx_env *env, sn_proc *p, const char *name, const char *q, long lease,
                      long wait, int replicas, const char *tag)
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->q, sizeof p->q, "%s", q);
    p->pid = fx_spawnf("sn_hold", 300, "url=%s ref_port=%d name=%s q=%s lease=%ld wait=%ld "
                       "wait_replicas=%d cmd_to=500 conn_to=500 log=%ld tag=%s", env->url,
                       env->ref->port, name, q, lease, wait, replicas,
                       fx_env_long("RL_SENTINEL_LOG", 1), tag);
    return p->pid;
}

static void sp_order(fx_env *env, const sn_proc *p, const char *what)
{
    char qin[48];

    snprintf(qin, sizeof qin, "%s.in", p->q);
    fx_event_push(env->rc, qin, "%s", what);
}

/* ---- the restarted node, watched while it is an empty primary ---------------- */

/*
 * From a thread of its own, every SN_STALE_POLL_MS, asks the restarted node
 * its ROLE, and while it says master, its keys and EVALSHA calls: a lock
 * call a client sent to it then went to an empty primary that the
 * sentinels no longer name.
 */
typedef struct sn_stale {
    const rt_redis *node;
    atomic_int stop;
    long long calls, keys;   /* most seen while it said master */
    int64_t t_first, t_last; /* when its EVALSHA calls were first and last seen growing */
    int64_t t_replica;       /* first seen as a replica (0: not yet) */
    pthread_t th;
} sn_stale;

static int node_role_master(redisContext *c)
{
    redisReply *r = redisCommand(c, "ROLE");
    int m = -1;

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
        r->element[0]->type == REDIS_REPLY_STRING)
        m = strcmp(r->element[0]->str, "master") == 0;
    if (r)
        freeReplyObject(r);
    return m;
}

static void *stale_main(void *arg)
{
    sn_stale *w = arg;
    redisContext *c = NULL;

    while (!atomic_load(&w->stop)) {
        int m;
        if (!c && !(c = rt_redis_connect(w->node)))
            break;
        m = node_role_master(c);
        if (m == 1) {
            long long calls = rt_redis_cmdstat_calls(c, "evalsha");
            long long keys = fx_cmd(c, "DBSIZE");
            if (calls > w->calls) {
                w->calls = calls;
                w->t_last = rt_now_ms();
                if (!w->t_first)
                    w->t_first = w->t_last;
            }
            if (keys > w->keys)
                w->keys = keys;
        } else if (m == 0 && !w->t_replica) {
            w->t_replica = rt_now_ms();
        } else if (m < 0) {
            redisFree(c);
            c = NULL;
        }
        rt_sleep_ms(SN_STALE_POLL_MS);   /* the sampling period */
    }
    if (c)
        redisFree(c);
    return NULL;
}

static int stale_start(sn_stale *w, const rt_redis *node)
{
    memset(w, 0, sizeof *w);
    w->node = node;
    atomic_init(&w->stop, 0);
    return pthread_create(&w->th, NULL, stale_main, w) == 0 ? 0 : -1;
}

static void stale_end(sn_stale *w)
{
    atomic_store(&w->stop, 1);
    pthread_join(w->th, NULL);
}

/* ---- acquisitions and holds, from the workers' logs --------------------------- */

/* rf:acqlog entries "<began>,<returned>" from index `from` on: how many
 * returned in [lo, hi), and the first return after `after` (0: none). */
static int acq_scan(redisContext *ref, long from, int64_t lo, int64_t hi, int64_t after,
                    long long *n, int64_t *first)
{
    fx_reports log;
    int i;

    *n = 0;
    *first = 0;
    if (fx_list_load(ref, "rf:acqlog", &log) != 0)
        return -1;
    for (i = (int)from; i < log.n; i++) {
        long long t0, t1;
        if (sscanf(log.lines[i], "%lld,%lld", &t0, &t1) != 2)
            continue;
        *n += t1 >= lo && t1 < hi;
        if (t1 > after && (*first == 0 || t1 < *first))
            *first = t1;
    }
    fx_reports_free(&log);
    return 0;
}

/* Acquisitions that returned since t (rf:acqlog from index `from`). */
static long long acq_since(redisContext *ref, long from, int64_t t)
{
    long long n;
    int64_t first;

    return acq_scan(ref, from, t, INT64_MAX, t, &n, &first) == 0 ? n : -1;
}

typedef struct sn_span {
    long long spanned, kept, flagged, lost, other;
} sn_span;

/* One hold that spanned the kill, by what its holder saw. */
static void span_add(sn_span *s, int flag, int rc)
{
    s->spanned++;
    if (flag)
        s->flagged++;          /* the flag rose while it wrote */
    else if (rc == RL_OK)
        s->kept++;
    else if (rc == RL_ELOST || rc == RL_ENOTOWNER)
        s->lost++;             /* its release said so (or could not tell) */
    else
        s->other++;
}

/* The loop holds of rf:holdlog acquired before t_kill and released after
 * it (see workers.c), added to s. A release in flight at the kill counts:
 * its outcome was decided by the failover. */
static int span_loops(redisContext *ref, int64_t t_kill, sn_span *s)
{
    fx_reports log;
    int i;

    if (fx_list_load(ref, "rf:holdlog", &log) != 0)
        return -1;
    for (i = 0; i < log.n; i++) {
        long long t_acq, t_rel;
        int flag, rc;
        if (sscanf(log.lines[i], "%lld,%lld,%d,%d", &t_acq, &t_rel, &flag, &rc) != 4 ||
            t_acq >= t_kill || t_rel <= t_kill)
            continue;
        span_add(s, flag, rc);
    }
    fx_reports_free(&log);
    return 0;
}

/* EVALSHA calls node i has served, on a connection of its own; -1. */
static long long node_calls(fx_env *env, int i)
{
    redisContext *c = rt_sentinel_connect_node(env->sn, i);
    long long n = c ? rt_redis_cmdstat_calls(c, "evalsha") : -1;

    if (c)
        redisFree(c);
    return n;
}

/* ---- one failover ----------------------------------------------------------- */

typedef struct sn_cfg {
    int replicas;       /* wait_replicas of every client */
    int procs;          /* loop workers */
    long long target;   /* acquisitions required in SN_COUNT_MS after the failover */
    int early;          /* restart the old primary once a quorum names the new one */
} sn_cfg;

typedef struct sn_figs {
    int rounds_ok, workers_bad, keep_required;
    long long failover_ms, first_acq_ms, min_rate_after, new_calls, wake_ms, rejoin_ms;
    long long stale_calls, stale_keys, stale_ms, handover_ms, resume_ms, agree_ms;
    long long keepers, keepers_kept, keepers_flagged, shorts, shorts_flagged;
    long long waiters_served, early_grants, holder_fails;
    sn_span span;
} sn_figs;

static void note_max(long long *max, long long v)
{
    if (v > *max)
        *max = v;
}

/* The keepers' hold, after the kill: the key on the new primary renewed
 * since (its PTTL is longer than any the old primary gave). */
static int renewed_since(fx_env *env, int node, const char *name, int64_t t_kill)
{
    redisContext *c = rt_sentinel_connect_node(env->sn, node);
    char key[64];
    long long pttl;

    if (!c)
        return 0;
    fx_lock_key(key, sizeof key, name);
    pttl = rt_redis_pttl(c, key, strlen(key));
    redisFree(c);
    return pttl > SN_KEEP_LEASE - (rt_now_ms() - t_kill) + 100;
}

/* Restart node i (empty, on its port) and watch it. 0, or -1 after saying why. */
static int sn_restart(fx_env *env, int i, sn_stale *st)
{
    if (rt_sentinel_restart_node(env->sn, i, 0) != 0) {
        fx_note("node %d could not be restarted", i);
        return -1;
    }
    if (stale_start(st, env->sn->node[i]) != 0) {
        fx_note("cannot start a thread");
        return -1;
    }
    return 0;
}

/*
 * One round: holders and waiters, the primary killed and restarted, the
 * failover awaited and judged. 1 when the round passed (as far as it can
 * judge without the referee), 0 when not.
 */
static int sn_round(fx_env *env, const sn_cfg *cfg, int r, sn_figs *f)
{
    sn_proc hp[SN_HOLDERS], wp[SN_HOLDERS];
    char name[24], q[24];
    long long calls0, n_after;
    int64_t t_kill, t_fo, t_restart = 0, first, keep_until;
    int i, old, now, ok = 1, restarted = 0, wait_ok = 0;
    int early = cfg->early, must_keep = 0;
    long acq_from;
    sn_stale st;

    memset(hp, 0, sizeof hp);
    memset(wp, 0, sizeof wp);
    for (i = 0; i < SN_HOLDERS; i++) {
        int keeper = i < SN_KEEPERS;
        snprintf(name, sizeof name, "%s%d%c", keeper ? "keep" : "short", r, 'a' + i);
        snprintf(q, sizeof q, "h%d.%d", r, i);
        if (sp_spawn(env, &hp[i], name, q, keeper ? SN_KEEP_LEASE : SN_SHORT_LEASE, 10000,
                     cfg->replicas, keeper ? "keeper" : "short") <= 0 ||
            !sp_until(env, &hp[i], &hp[i].held, 15000)) {
            fx_note("round %d: the holder of %s did not take it", r, name);
            ok = 0;
        }
        snprintf(q, sizeof q, "w%d.%d", r, i);
        if (sp_spawn(env, &wp[i], name, q, SN_LOOP_LEASE, 60000, cfg->replicas, "waiter") <= 0 ||
            !sp_until(env, &wp[i], &wp[i].waiting, 15000)) {
            fx_note("round %d: the waiter of %s did not start", r, name);
            ok = 0;
        }
    }
    if (!ok)
        goto out;

    acq_from = (long)fx_cmd(env->rc, "LLEN rf:acqlog");
    t_kill = rt_now_ms();
    old = rt_sentinel_kill_primary(env->sn);
    if (old < 0) {
        fx_note("round %d: no primary to kill", r);
        ok = 0;
        goto out;
    }
    now = rt_sentinel_wait_failover(env->sn, old, SN_FAILOVER_MS);
    t_fo = rt_now_ms();
    if (now < 0) {
        fx_note("round %d: no failover within %d ms of killing node %d", r, SN_FAILOVER_MS,
                old);
        ok = 0;
        goto out;
    }
    calls0 = node_calls(env, now);
    note_max(&f->failover_ms, t_fo - t_kill);
    /* The keepers must be kept (with wait_replicas) when the failover took
     * less than their lease less a renewal interval and a second of slack;
     * after a split election they are only reported. */
    must_keep = cfg->replicas && t_fo - t_kill + 1000 < SN_KEEP_LEASE - SN_KEEP_LEASE / 3;
    f->keep_required += must_keep;
    fx_note("round %d: node %d killed, node %d primary after %lld ms", r, old, now,
            (long long)(t_fo - t_kill));

    /* The old primary back on its port, empty (a primary until the
     * sentinels see it), once every sentinel names the new one and work
     * has resumed: then no client can be told the old address any more.
     * (Early: as soon as a quorum names the new one, see Limits.) */
    if (early) {
        t_restart = rt_now_ms();
        if (sn_restart(env, old, &st) != 0) {
            ok = 0;
            goto out;
        }
        restarted = 1;
    }
    /* Work resumes on the new primary: the count, within a deadline. */
    if (RT_WAIT_UNTIL(acq_since(env->rc, acq_from, t_fo) >= cfg->target, SN_COUNT_MS)) {
        note_max(&f->resume_ms, rt_now_ms() - t_fo);
    } else {
        fx_note("round %d: %lld acquisitions within %d ms of the failover, %lld wanted", r,
                acq_since(env->rc, acq_from, t_fo), SN_COUNT_MS, cfg->target);
        ok = 0;
    }
    if (!early) {
        if (rt_sentinel_wait_ok(env->sn, SN_FAILOVER_MS) != 0) {
            fx_note("round %d: the sentinels do not all name node %d", r, now);
            ok = 0;
        }
        note_max(&f->agree_ms, rt_now_ms() - t_kill);
        t_restart = rt_now_ms();
        if (sn_restart(env, old, &st) != 0) {
            ok = 0;
            goto out;
        }
        restarted = 1;
    }
    if (acq_scan(env->rc, acq_from, t_fo, t_fo, t_kill + SN_INFLIGHT_MS, &n_after, &first) != 0 ||
        !first)
        ok = 0;
    else
        note_max(&f->first_acq_ms, first - t_kill);

    /* The short hold: flagged, and its name taken again on the new primary. */
    f->shorts++;
    if (sp_until(env, &hp[SN_KEEPERS], &hp[SN_KEEPERS].flagged, 5000))
        f->shorts_flagged++;
    else if (cfg->replicas) {
        fx_note("round %d: the short hold on %s (lease %d ms) was not flagged", r,
                hp[SN_KEEPERS].name, SN_SHORT_LEASE);
        ok = 0;
    }
    if (!sp_until(env, &wp[SN_KEEPERS], &wp[SN_KEEPERS].held, 15000)) {
        fx_note("round %d: the waiter of %s did not get it", r, wp[SN_KEEPERS].name);
        ok = 0;
    }

    /* The keepers: no flag until their lease has run out since the kill
     * (their renewals on the new primary were confirmed), then released. */
    keep_until = t_kill + SN_KEEP_LEASE + 200;
    for (i = 0; i < SN_KEEPERS; i++) {
        long left = (long)(keep_until - rt_now_ms());
        if (left > 0)
            sp_until(env, &hp[i], &hp[i].flagged, left);
        if (!hp[i].flagged && !renewed_since(env, now, hp[i].name, t_kill))
            fx_note("round %d: %s is not flagged, yet not renewed on node %d", r, hp[i].name,
                    now);
    }
    for (i = 0; i < SN_KEEPERS; i++) {
        sp_drain(env, &wp[i]);
        if (wp[i].held && !hp[i].flagged) {
            fx_note("round %d: the waiter got %s while its keeper held it unflagged", r,
                    wp[i].name);
            f->early_grants++;
        }
        sp_order(env, &hp[i], "release");
    }
    for (i = 0; i < SN_KEEPERS; i++) {
        f->keepers++;
        if (!sp_until(env, &hp[i], &hp[i].released, 40000)) {
            fx_note("round %d: the keeper of %s did not release", r, hp[i].name);
            ok = 0;
            continue;
        }
        if (hp[i].flagged || hp[i].relrc != RL_OK) {
            f->keepers_flagged++;
            if (must_keep)
                ok = 0;
            fx_note("round %d: keeper of %s: flagged %lld ms after the kill, release %s", r,
                    hp[i].name, hp[i].flagged ? (long long)(hp[i].t_flag - t_kill) : -1LL,
                    rl_strerror(hp[i].relrc));
        } else {
            f->keepers_kept++;
        }
        if (!sp_until(env, &wp[i], &wp[i].held, 15000)) {
            fx_note("round %d: the waiter of %s did not get it after its release", r,
                    wp[i].name);
            ok = 0;
        } else if (!hp[i].flagged) {
            long long wake = wp[i].t_held - hp[i].t_rel;
            note_max(&f->wake_ms, wake > 0 ? wake : 0);
            if (wake > SN_WAKE_MS) {
                fx_note("round %d: the waiter of %s took it %lld ms after the release", r,
                        wp[i].name, wake);
                ok = 0;
            }
        }
    }
    sp_order(env, &hp[SN_KEEPERS], "release");
    for (i = 0; i < SN_HOLDERS; i++) {
        sp_order(env, &wp[i], "release");
        if (!sp_until(env, &hp[i], &hp[i].released, 40000) ||
            !sp_until(env, &wp[i], &wp[i].released, 40000)) {
            fx_note("round %d: a worker on %s did not release", r, hp[i].name);
            ok = 0;
        }
        if (wp[i].held && hp[i].t_ok) {
            /* From the holder's last write to the waiter's grant. */
            long long gap = wp[i].t_held - hp[i].t_ok;
            if (f->handover_ms < 0 || gap < f->handover_ms)
                f->handover_ms = gap;
        }
        f->waiters_served += wp[i].held;
    }
    {
        long long c1 = node_calls(env, now);
        if (c1 >= 0 && calls0 >= 0)
            f->new_calls += c1 - calls0;
        if (c1 <= calls0) {
            fx_note("round %d: node %d served no EVALSHA call after the failover", r, now);
            ok = 0;
        }
    }

    /* The restarted node rejoins as a replica. */
    wait_ok = rt_sentinel_wait_ok(env->sn, SN_REJOIN_MS - (long)(rt_now_ms() - t_restart)) == 0;
    note_max(&f->rejoin_ms, rt_now_ms() - t_restart);
    if (!wait_ok) {
        fx_note("round %d: node %d did not rejoin", r, old);
        ok = 0;
    }
    if (span_loops(env->rc, t_kill, &f->span) != 0)
        ok = 0;
    for (i = 0; i < SN_HOLDERS; i++)
        span_add(&f->span, hp[i].flagged, hp[i].relrc);
    /* The rate of acquisitions after the failover, over the SN_COUNT_MS
     * after it or as much of them as the round lasted. */
    {
        int64_t end = rt_now_ms() < t_fo + SN_COUNT_MS ? rt_now_ms() : t_fo + SN_COUNT_MS;
        long long rate;
        if (acq_scan(env->rc, acq_from, t_fo, end, t_kill + SN_INFLIGHT_MS, &n_after, &first) != 0)
            ok = 0;
        rate = end > t_fo ? n_after * 1000 / (end - t_fo) : 0;
        if (f->min_rate_after < 0 || rate < f->min_rate_after)
            f->min_rate_after = rate;
    }

out:
    if (restarted) {
        stale_end(&st);
        note_max(&f->stale_calls, st.calls);
        note_max(&f->stale_keys, st.keys);
        if (st.calls > 0)
            note_max(&f->stale_ms, st.t_last - st.t_first);
        if (st.calls > 0 || st.keys > 0)
            fx_note("round %d: the restarted node, an empty primary, served %lld EVALSHA "
                    "calls (from %lld to %lld ms after its restart) and held %lld keys", r,
                    st.calls, (long long)(st.t_first - t_restart),
                    (long long)(st.t_last - t_restart), st.keys);
    }
    for (i = 0; i < SN_HOLDERS; i++) {
        sn_proc *p[2] = { &hp[i], &wp[i] };
        for (int k = 0; k < 2; k++) {
            if (p[k]->pid <= 0)
                continue;
            if (!p[k]->released)
                sp_order(env, p[k], "release");
            if (rt_child_wait(p[k]->pid, 45000) != 0) {
                fx_note("round %d: sn_hold worker %d (%s) ended badly", r, (int)p[k]->pid,
                        p[k]->q);
                f->workers_bad++;
                ok = 0;
            }
        }
    }
    return ok;
}

/* ---- the three scenarios ------------------------------------------------------ */

static int sn_run(int replicas, int early)
{
    int rounds = (int)fx_scale(1, 3), procs = (int)fx_scale(3, 5), threads = 3, r, i, bad;
    const char *loop_names = "sn0,sn1,sn2";
    char names[1024];
    long long refsec, repsec, fails, eproto;
    sn_cfg cfg = { replicas, procs, fx_scale(100, 300), early };
    sn_figs f;
    pid_t pids[8];
    fx_env env;
    fx_reports rep;
    rf_result res;
    int pass, judged;
    const char *seen;

    memset(&f, 0, sizeof f);
    f.min_rate_after = -1;
    f.handover_ms = -1;
    if (fx_env_start_sentinel(&env, 2, 3, SN_MASTER, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_sentinel");
    for (i = 0; i < procs; i++) {
        pids[i] = fx_spawnf("loop", 600, "url=%s ref_port=%d names=%s lease=%d "
                            "wait_replicas=%d eproto_ok=%d log=%ld %s tag=loop", env.url,
                            env.ref->port, loop_names, SN_LOOP_LEASE, replicas, !replicas,
                            fx_env_long("RL_SENTINEL_LOG", 1), SN_LOOP_ARGS);
    }
    if (fx_wait_ready(env.rc, procs, 30000) != 0 ||
        !RT_WAIT_UNTIL(fx_cmd(env.rc, "LLEN rf:acqlog") >= 50, 15000)) {
        fx_note("the loop workers did not get to work");
        fx_cmd(env.rc, "SET rf:stop 1");
        fx_wait_all(pids, procs, 60000);
        fx_env_stop(&env);
        return fx_verdict(fx_scenario, 0, "error=workers_not_busy");
    }

    snprintf(names, sizeof names, "%s", loop_names);
    for (r = 0; r < rounds; r++) {
        f.rounds_ok += sn_round(&env, &cfg, r, &f);
        for (i = 0; i < SN_HOLDERS; i++) {
            size_t len = strlen(names);
            snprintf(names + len, sizeof names - len, ",%s%d%c",
                     i < SN_KEEPERS ? "keep" : "short", r, 'a' + i);
        }
    }

    fx_cmd(env.rc, "SET rf:stop 1");
    bad = fx_wait_all(pids, procs, 60000) + f.workers_bad;
    judged = rf_judge(env.rc, names, &res) == 0 && fx_reports_load(env.rc, &rep) == 0;
    if (!judged) {
        fx_env_stop(&env);
        return fx_verdict(fx_scenario, 0, "error=referee_unreadable");
    }
    refsec = res.sections;
    repsec = fx_reports_sum(&rep, "sections");
    fails = fx_reports_sum(&rep, "fails");
    eproto = fx_reports_sum(&rep, "eproto");
    /* What every scenario requires: the failovers happened and work
     * resumed, every worker ended well, reported, and wrote what it counted. */
    pass = f.rounds_ok == rounds && bad == 0 && rep.n == procs + 2 * SN_HOLDERS * rounds &&
           repsec == refsec && fails == 0 && fx_reports_sum(&rep, "timeouts") == 0 &&
           f.waiters_served == SN_HOLDERS * rounds;
    if (replicas)
        /* With wait_replicas: no overlap, nothing lost, no empty primary used. */
        pass = pass && res.violations == 0 && eproto == 0 && f.early_grants == 0 &&
               f.stale_calls == 0 && f.stale_keys == 0;
    else
        pass = pass && f.stale_calls == 0 && f.stale_keys == 0;
    if (rep.n != procs + 2 * SN_HOLDERS * rounds || repsec != refsec)
        fx_note("%d reports of %d workers; they counted %lld sections, the referee has %lld",
                rep.n, procs + 2 * SN_HOLDERS * rounds, repsec, refsec);
    if (res.violations > 0 || f.early_grants > 0)
        seen = "overlap";
    else if (f.keepers_flagged > 0 || eproto > 0 || f.span.other > 0)
        seen = "holds_lost";
    else
        seen = "nothing_lost";
    i = fx_verdict(fx_scenario, pass,
                   "seen=%s rounds=%d/%d wait_replicas=%d procs=%d threads=%d sections=%lld "
                   "violations=%lld early_grants=%lld failover_ms=%lld first_acq_ms=%lld "
                   "resume_ms=%lld target=%lld acq_per_s_after=%lld new_primary_calls=%lld "
                   "spanned=%lld kept=%lld flagged=%lld span_lost=%lld span_other=%lld "
                   "keepers_kept=%lld/%lld keep_required=%d shorts_flagged=%lld/%lld "
                   "waiters=%lld wake_ms=%lld handover_ms=%lld flags=%lld lost=%lld econn=%lld "
                   "ereplica=%lld eproto=%lld "
                   "timeouts=%lld fails=%lld acquires=%lld max_call_ms=%lld agree_ms=%lld "
                   "rejoin_ms=%lld early_restart=%ld stale_calls=%lld stale_keys=%lld "
                   "stale_ms=%lld workers_failed=%d",
                   seen, f.rounds_ok, rounds, replicas, procs, threads, res.sections,
                   res.violations, f.early_grants, f.failover_ms, f.first_acq_ms, f.resume_ms,
                   cfg.target, f.min_rate_after, f.new_calls, f.span.spanned, f.span.kept,
                   f.span.flagged, f.span.lost, f.span.other, f.keepers_kept, f.keepers,
                   f.keep_required, f.shorts_flagged, f.shorts, f.waiters_served, f.wake_ms,
                   f.handover_ms,
                   fx_reports_sum(&rep, "flags"), fx_reports_sum(&rep, "lost"),
                   fx_reports_sum(&rep, "econn"), fx_reports_sum(&rep, "ereplica"), eproto,
                   fx_reports_sum(&rep, "timeouts"), fails, fx_reports_sum(&rep, "acquires"),
                   fx_reports_max(&rep, "maxcall_ms"), f.agree_ms, f.rejoin_ms,
                   (long)early, f.stale_calls, f.stale_keys,
                   f.stale_ms, bad);
    fx_reports_free(&rep);
    fx_env_stop(&env);
    return i;
}

int sc_sentinel_failover(void)
{
    return sn_run(1, 0);
}

int sc_sentinel_failover_noack(void)
{
    return sn_run(0, 0);
}

int sc_sentinel_restart_early(void)
{
    return sn_run(1, 1);
}
