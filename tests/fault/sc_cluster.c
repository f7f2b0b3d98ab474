/*
 * Scenarios 15-17, a Redis Cluster under faults. The locks live on a
 * cluster of real redis-servers started on loopback (tests/common/
 * rt_cluster.h); the referee stays one plain server that is never faulted.
 * Workers are the `loop` and `hold` roles, given the cluster's seed list as
 * url=.
 *
 * cluster_failover: 3 masters with a replica each. Per round, one master
 * is chosen to fail; two names live on it ("dead" names: holders keep them
 * and write back to back, waiters of another process wait; lease 1000 ms,
 * shorter than any failover with a 1000 ms node timeout) and four on the
 * other two masters ("live" names: short holds, lease 3000 ms, longer than
 * the spell in which the whole cluster answers CLUSTERDOWN); a "mixed"
 * client (lease 3000 ms) also holds one name on each master. The master is
 * SIGKILLed (even rounds) or SIGSTOPped (odd rounds: connections to it
 * hang instead of failing; it stays stopped for a live lease at least,
 * then is killed), and the cluster fails over to its replica. Proves:
 * every hold on the failed master stops writing, flag up, before its
 * confirmed expiry (fault + lease) and so before the promoted replica can
 * give the name to anyone (the mixed client's hold there may also live on,
 * when its renewal reaches the promoted replica in time); no hold on a live
 * master is flagged or lost, in the mixed client either (one failed master
 * does not hold up the renewals on the others); the failed master's names
 * are taken again on the promoted one (their keys are there) within a
 * deadline; the referee finds no overlap. Between rounds the dead node is
 * restarted (it rejoins as a replica of its successor) and the next round
 * fails another shard's master: 2 rounds, 6 in the long form.
 *
 * cluster_migrate: 3 masters. Two names move with their slots, round after
 * round, to another master and back (SETSLOT IMPORTING/MIGRATING, a lease
 * in that state, MIGRATE of the keys, a lease answering ASK, SETSLOT NODE);
 * two names stay. One process holds each name for longer than the lease
 * (1500 ms, renewed every 500 ms, so renewals meet MIGRATING, ASK and
 * MOVED), two more take each name for a few short sections, so releases
 * and acquisitions run in every phase of a move. In each moving slot a
 * `hold` worker also keeps a name of its own ("<mover>}hw": the hash tag
 * ends at the '}') from before the move begins until after it ends, with a
 * second one parked behind it. Proves: a migration is not a fault of the
 * holder: no hold is flagged or lost, no call fails or gives up (RL_ECONN
 * included), no name goes two leases without a section, and every name is
 * worked on again within a deadline after each move; the hold kept across
 * the move is released with RL_OK; the parked waiter's subscription follows
 * the slot to its new master and the release notice wakes it there at
 * once; no overlap. The servers' counts of ASKING calls and MOVED errors
 * show that the redirections were met. (It found releases refused with
 * TRYAGAIN for the whole move while the release channel was a second key
 * of the script, and what followed: holds running out while their release
 * was retried, the watchdog stuck dropping their fields.) 4 moves (there
 * and back twice), 24 in the long form.
 *
 * cluster_restart: 3 masters, no replicas. Holders and waiters on two
 * names per master; every node is SIGKILLed (locks and scripts lost),
 * stays down for the lease plus 300 ms, and is restarted on its port with
 * its nodes.conf (same ids, same slots, no data). Proves, as
 * redis_restart does for one server: every hold that spanned the crash
 * stopped writing before its lease ran out; waiters ride out the outage
 * and the cluster's CLUSTERDOWN spell after the restart, reconnect, load
 * the scripts again and take every name; no overlap. 2 rounds, 6 in the
 * long form.
 *
 * Found by cluster_failover, and fixed: a master that hung (accepted,
 * never answered) held up the renewals of the mixed client's holds on
 * every other master, which were flagged at their expiry: the watchdog's
 * round opened the connections it lacked one after another, handshake
 * included, and read the masters' replies in a fixed order, applying the
 * confirmations only when the round was over.
 *
 * Limits. A failover loses what the replica had not received, and a hold
 * on the dead master that the replica still has would survive the
 * failover unflagged; cluster_failover keeps its dead-master lease below
 * the shortest failover, so that every such hold has expired when the
 * replica takes over and its flag is required. With the default
 * cluster-require-full-coverage, every master answers CLUSTERDOWN from the
 * moment the dead one is marked failed until its replica is promoted: a
 * lease shorter than that spell plus a renewal interval would be (rightly)
 * flagged on the live masters too, hence their longer lease. Migration
 * here moves slots between masters that stay up: a migration interrupted
 * by a crash is not covered.
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

#define CL_NAMES_MAX 12
#define CL_NAME_LEN 24
#define CL_WATCH_MS 5          /* sampling period of the stall watcher */
#define CL_NODE_TIMEOUT 1000   /* --cluster-node-timeout: failovers in about 2 s */

/* redis-cli gives three masters these slot ranges; a range keeps its shard
 * across failovers, so its first slot names the shard. */
static const int shard_slot[3] = { 0, 5461, 10923 };

/* ---- names and where they live ------------------------------------------- */

typedef struct cl_names {
    int n;
    char name[CL_NAMES_MAX][CL_NAME_LEN];
    int slot[CL_NAMES_MAX];
} cl_names;

/*
 * Append `want` names "<prefix><k>" whose slot's master is node `master`
 * and whose slot no name of `out` has; *k counts the candidates tried,
 * across calls, so that no name is handed out twice. 0 or -1.
 */
static int pick_names(rt_cluster *cl, cl_names *out, const char *prefix, int *k, int master,
                      int want)
{
    while (want > 0 && out->n < CL_NAMES_MAX && *k < 4000) {
        char name[CL_NAME_LEN], key[64];
        int slot, m, j, dup = 0;

        snprintf(name, sizeof name, "%s%d", prefix, (*k)++);
        fx_lock_key(key, sizeof key, name);
        slot = rt_cluster_keyslot(cl, key, strlen(key));
        if (slot < 0)
            return -1;
        for (j = 0; j < out->n; j++)
            dup |= out->slot[j] == slot;
        if (dup)
            continue;
        if ((m = rt_cluster_master_of(cl, slot)) < 0)
            return -1;
        if (m != master)
            continue;
        snprintf(out->name[out->n], CL_NAME_LEN, "%s", name);
        out->slot[out->n++] = slot;
        want--;
    }
    return want == 0 ? 0 : -1;
}

/* The names as a comma-separated list, appended to buf. */
static void names_join(const cl_names *s, char *buf, size_t cap)
{
    size_t len = strlen(buf);
    int i;

    for (i = 0; i < s->n && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", len > 0 ? "," : "", s->name[i]);
}

/* Referee log length of every name into out; 0, or -1 when unreadable. */
static int counts(redisContext *ref, const cl_names *s, long long *out)
{
    int i;

    for (i = 0; i < s->n; i++)
        if ((out[i] = rf_count(ref, s->name[i])) < 0)
            return -1;
    return 0;
}

/* 1 when every name has at least `by` more sections than in `before`. */
static int all_advanced(redisContext *ref, const cl_names *s, const long long *before,
                        long long by)
{
    int i;

    for (i = 0; i < s->n; i++)
        if (rf_count(ref, s->name[i]) < before[i] + by)
            return 0;
    return 1;
}

/* Wait until every name is worked on: min_sections new sections on each. */
static int names_busy(redisContext *ref, const cl_names *s, long long min_sections,
                      long timeout_ms)
{
    long long before[CL_NAMES_MAX];
    int i;

    if (counts(ref, s, before) != 0)
        return 0;
    if (RT_WAIT_UNTIL(all_advanced(ref, s, before, min_sections), timeout_ms))
        return 1;
    for (i = 0; i < s->n; i++)
        fx_note("name %s: %lld sections, %lld before the wait", s->name[i],
                rf_count(ref, s->name[i]), before[i]);
    return 0;
}

/* A key of a name on node i: 1 there, 0 not, -1 unreadable. */
static int key_on(rt_cluster *cl, int i, const char *name)
{
    redisContext *c = rt_cluster_connect(cl, i);
    char key[64];
    int yes;

    if (!c)
        return -1;
    fx_lock_key(key, sizeof key, name);
    yes = rt_redis_exists(c, key, strlen(key));
    redisFree(c);
    return yes;
}

/* A worker report key summed over the reports of one tag. */
static long long tag_sum(const fx_reports *rep, const char *tag, const char *key)
{
    char want[48];
    fx_reports one;
    long long sum = 0;
    int i;

    snprintf(want, sizeof want, " tag=%s ", tag);
    for (i = 0; i < rep->n; i++) {
        if (!strstr(rep->lines[i], want))
            continue;
        one.n = 1;
        one.lines = &rep->lines[i];
        sum += fx_reports_sum(&one, key);
    }
    return sum;
}

/* ---- the stall watcher ---------------------------------------------------- */

/*
 * From a thread of its own, on its own referee connection, samples the log
 * length of every name every CL_WATCH_MS: the longest spell in which some
 * name got no new section, and which name.
 */
typedef struct cl_watch {
    cl_names names;
    int port;
    atomic_int stop;
    long long max_stall_ms;        /* -1: the watcher could not connect */
    char worst[CL_NAME_LEN];
    pthread_t th;
} cl_watch;

static void *watch_main(void *arg)
{
    cl_watch *w = arg;
    redisContext *ref = fx_connect(w->port, 5000);
    long long last[CL_NAMES_MAX];
    int64_t since[CL_NAMES_MAX], now = rt_now_ms();
    int i;

    if (!ref) {
        w->max_stall_ms = -1;
        return NULL;
    }
    for (i = 0; i < w->names.n; i++) {
        last[i] = rf_count(ref, w->names.name[i]);
        since[i] = now;
    }
    while (!atomic_load(&w->stop)) {
        rt_sleep_ms(CL_WATCH_MS);       /* the sampling period */
        now = rt_now_ms();
        for (i = 0; i < w->names.n; i++) {
            long long c = rf_count(ref, w->names.name[i]);
            if (c != last[i]) {
                last[i] = c;
                since[i] = now;
            } else if (now - since[i] > w->max_stall_ms) {
                w->max_stall_ms = now - since[i];
                snprintf(w->worst, sizeof w->worst, "%s", w->names.name[i]);
            }
        }
    }
    redisFree(ref);
    return NULL;
}

static int watch_start(cl_watch *w, const cl_names *names, int port)
{
    memset(w, 0, sizeof *w);
    w->names = *names;
    w->port = port;
    atomic_init(&w->stop, 0);
    return pthread_create(&w->th, NULL, watch_main, w) == 0 ? 0 : -1;
}

/* Stop the watcher; its longest stall in ms (-1 when it could not watch). */
static long long watch_end(cl_watch *w)
{
    atomic_store(&w->stop, 1);
    pthread_join(w->th, NULL);
    return w->max_stall_ms;
}

/* ---- cluster_failover ---------------------------------------------------------- */

#define FO_LEASE_DEAD 1000   /* below the shortest failover: node timeout + election delay */
#define FO_LEASE_LIVE 3000   /* above the CLUSTERDOWN spell plus a renewal interval */
#define FO_FAILOVER_MS 20000
#define FO_RECOVER_MS 15000
#define FO_SETTLE_MS 30000
#define FO_WORKERS 5

typedef struct fo_figures {
    int in_time, late, live_flagged, mixed_flagged, mixed_rounds, workers, workers_failed;
    long long failover_ms, recovery_ms, flag_ms, last_write_ms, live_stall_ms;
} fo_figures;

static void note_max(long long *max, long long v)
{
    if (v > *max)
        *max = v;
}

static int has_name(const cl_names *s, const char *name)
{
    int i;

    for (i = 0; i < s->n; i++)
        if (strcmp(s->name[i], name) == 0)
            return 1;
    return 0;
}

/*
 * The flags logged since entry `from` of rf:flaglog (see workers.c), each
 * judged by its name against the fault at t_fault: a hold on a name of
 * `dead` (lease FO_LEASE_DEAD) or of `mixed` (FO_LEASE_LIVE) must have made
 * its last write before t_fault + its lease; a flag on any other name is
 * one on a live master, which nothing threatened. 0, or -1 when unreadable.
 */
static int judge_flags(redisContext *ref, long from, int64_t t_fault, const cl_names *dead,
                       const cl_names *mixed, fo_figures *f, int *dead_in_time,
                       int *mixed_flagged)
{
    fx_reports log;
    int i;

    *dead_in_time = *mixed_flagged = 0;
    if (fx_list_load(ref, "rf:flaglog", &log) != 0)
        return -1;
    for (i = (int)from; i < log.n; i++) {
        long long t_acq, t_ok, t_flag, lease;
        char name[CL_NAME_LEN];
        int wd;

        if (sscanf(log.lines[i], "t_acq=%lld,t_ok=%lld,t_flag=%lld,wd=%d,name=%23s", &t_acq,
                   &t_ok, &t_flag, &wd, name) != 5)
            continue;
        if (!has_name(dead, name) && !has_name(mixed, name)) {
            f->live_flagged++;
            fx_note("a hold on a live master was flagged: %s", log.lines[i]);
            continue;
        }
        if (t_acq >= t_fault || t_flag < t_fault)
            continue;           /* not a hold that spanned the fault */
        lease = has_name(dead, name) ? FO_LEASE_DEAD : FO_LEASE_LIVE;
        if (t_ok >= t_fault + lease) {
            f->late++;
            fx_note("a hold still wrote %lld ms after the fault, lease %lld ms: %s",
                    t_ok - t_fault, lease, log.lines[i]);
        } else if (lease == FO_LEASE_DEAD) {
            (*dead_in_time)++;
            note_max(&f->flag_ms, t_flag - t_fault);
            note_max(&f->last_write_ms, t_ok - t_fault);
        } else {
            (*mixed_flagged)++;
        }
    }
    fx_reports_free(&log);
    return 0;
}

/*
 * One round: workers on names of the shard `r` points at and of the
 * others, its master SIGKILLed (even rounds) or SIGSTOPped (odd rounds:
 * its connections hang rather than fail; killed after a live lease), the
 * failover awaited and judged, the workers stopped. 1 when the round
 * passed, 0 when not. `all` collects the names.
 */
static int failover_round(fx_env *env, int r, int *k, char *all, size_t cap, fo_figures *f)
{
    rt_cluster *cl = env->cl;
    cl_names dead = { 0 }, live = { 0 }, mixed = { 0 }, mixed_live = { 0 };
    char dlist[256] = "", llist[256] = "", mlist[256] = "";
    long long live_before[CL_NAMES_MAX], dead_at[CL_NAMES_MAX], mixed_at[CL_NAMES_MAX];
    long long stall;
    int victim, newm = -1, ok = 0, i, in_time = 0, mixed_flagged = 0, stop = r % 2;
    int64_t t_fault, t_fo;
    pid_t pids[FO_WORKERS];
    cl_watch w;
    long from;

    victim = rt_cluster_master_of(cl, shard_slot[r % 3]);
    if (victim < 0 || rt_cluster_replica_of(cl, victim) < 0) {
        fx_note("round %d: shard of slot %d has no master with a live replica", r,
                shard_slot[r % 3]);
        return 0;
    }
    if (pick_names(cl, &dead, "fo", k, victim, 2) != 0 ||
        pick_names(cl, &mixed, "fo", k, victim, 1) != 0)
        return 0;
    for (i = 1; i < 3; i++) {
        int m = rt_cluster_master_of(cl, shard_slot[(r + i) % 3]);
        if (pick_names(cl, &live, "fo", k, m, 2) != 0 ||
            pick_names(cl, &mixed_live, "fo", k, m, 1) != 0)
            return 0;
    }
    names_join(&dead, dlist, sizeof dlist);
    names_join(&live, llist, sizeof llist);
    names_join(&mixed, mlist, sizeof mlist);
    names_join(&mixed_live, mlist, sizeof mlist);
    names_join(&dead, all, cap);
    names_join(&live, all, cap);
    names_join(&mixed, all, cap);
    names_join(&mixed_live, all, cap);

    /* "dead": the victim's names, short lease, held until flagged, waited for;
     * "live": the other masters' names, short holds; "mixed": one client
     * holding a name on the victim and one on each other master. */
    for (i = 0; i < 2; i++) {
        pids[i] = fx_spawnf("loop", 300,
                            "url=%s ref_port=%d threads=%d names=%s ms=600000 stop=1 lease=%d "
                            "nest=0 pair=0 pin=1 wait=30000 hold_ms=100000000 work_us=2000 "
                            "flaglog=1 cmd_to=500 conn_to=500 tag=dead",
                            cl->seeds, env->ref->port, dead.n, dlist, FO_LEASE_DEAD);
        pids[2 + i] = fx_spawnf("loop", 300,
                                "url=%s ref_port=%d threads=%d names=%s ms=600000 stop=1 "
                                "lease=%d nest=1 pair=0 pin=1 wait=30000 sec_min=1 sec_max=3 "
                                "work_us=500 think_us=2000 cmd_to=500 conn_to=500 tag=live",
                                cl->seeds, env->ref->port, live.n, llist, FO_LEASE_LIVE);
    }
    pids[4] = 0;
    f->workers += FO_WORKERS - 1;
    if (fx_wait_ready(env->rc, FO_WORKERS - 1, 30000) != 0 ||
        !names_busy(env->rc, &dead, 10, 15000) || !names_busy(env->rc, &live, 10, 15000)) {
        fx_note("round %d: the names were not all held and busy", r);
        goto out;
    }
    /* The mixed client last, so that its holds are young at the fault. */
    pids[4] = fx_spawnf("loop", 300,
                        "url=%s ref_port=%d threads=%d names=%s ms=600000 stop=1 lease=%d "
                        "nest=0 pair=0 pin=1 wait=30000 hold_ms=100000000 work_us=2000 "
                        "flaglog=1 log=1 tag=mixed",
                        cl->seeds, env->ref->port, mixed.n + mixed_live.n, mlist,
                        FO_LEASE_LIVE);
    f->workers++;
    f->mixed_rounds++;
    if (fx_wait_ready(env->rc, 1, 30000) != 0 || !names_busy(env->rc, &mixed, 10, 15000) ||
        !names_busy(env->rc, &mixed_live, 10, 15000)) {
        fx_note("round %d: the mixed client's names were not held and busy", r);
        goto out;
    }
    from = fx_flaglog_len(env->rc);
    counts(env->rc, &live, live_before);
    if (watch_start(&w, &live, env->ref->port) != 0)
        goto out;
    if (stop)
        rt_redis_pause(cl->node[victim]);
    else
        rt_cluster_kill(cl, victim);
    /* The fault's moment, read once it holds: a renewal applied while the
     * driver was descheduled before the signal confirms past a moment read
     * before it, and a correct hold was judged late. */
    t_fault = rt_now_ms();
    newm = rt_cluster_wait_failover(cl, dead.slot[0], victim, FO_FAILOVER_MS);
    t_fo = rt_now_ms();
    stall = watch_end(&w);
    if (stop) {
        /* The fault itself: stopped for a live lease at least, so that
         * anything hanging on it outlasts every lease of the round. */
        int64_t left = t_fault + FO_LEASE_LIVE - rt_now_ms();
        if (left > 0)
            rt_sleep_ms((long)left);
        rt_cluster_kill(cl, victim);
    }
    if (newm < 0) {
        fx_note("round %d: no failover of node %d within %d ms", r, victim, FO_FAILOVER_MS);
        goto out;
    }
    note_max(&f->failover_ms, t_fo - t_fault);
    note_max(&f->live_stall_ms, stall);

    /* The victim's names are taken again, on the promoted master. */
    ok = 1;
    counts(env->rc, &dead, dead_at);
    counts(env->rc, &mixed, mixed_at);
    if (RT_WAIT_UNTIL(all_advanced(env->rc, &dead, dead_at, 1) &&
                      all_advanced(env->rc, &mixed, mixed_at, 1), FO_RECOVER_MS)) {
        note_max(&f->recovery_ms, rt_now_ms() - t_fo);
    } else {
        fx_note("round %d: no section on every name of node %d within %d ms of its failover "
                "to node %d", r, victim, FO_RECOVER_MS, newm);
        ok = 0;
    }
    for (i = 0; i < dead.n + mixed.n; i++) {
        const char *name = i < dead.n ? dead.name[i] : mixed.name[i - dead.n];
        int slot = i < dead.n ? dead.slot[i] : mixed.slot[i - dead.n];
        if (rt_cluster_master_of(cl, slot) != newm || key_on(cl, newm, name) != 1) {
            fx_note("round %d: %s (slot %d) is not held on the promoted node %d", r, name,
                    slot, newm);
            ok = 0;
        }
    }
    /* The live masters went on: every live name has sections from the outage. */
    for (i = 0; i < live.n; i++) {
        if (rf_count(env->rc, live.name[i]) <= live_before[i]) {
            fx_note("round %d: no section on %s (a live master) during the failover", r,
                    live.name[i]);
            ok = 0;
        }
    }
    /* Each dead name's holder logged its flag; when, is the judgement. */
    RT_WAIT_UNTIL(fx_flaglog_len(env->rc) >= from + dead.n, 5000);
    if (judge_flags(env->rc, from, t_fault, &dead, &mixed, f, &in_time, &mixed_flagged) != 0)
        ok = 0;
    f->in_time += in_time;
    f->mixed_flagged += mixed_flagged;
    fx_note("round %d: node %d %s, node %d master after %lld ms; dead holds flagged in time %d "
            "of %d, mixed client's hold there %s; live names' longest stall %lld ms", r, victim,
            stop ? "stopped" : "killed", newm, (long long)(t_fo - t_fault), in_time, dead.n,
            mixed_flagged ? "flagged in time" : "kept", stall);
    ok = ok && in_time >= dead.n;

out:
    fx_cmd(env->rc, "SET rf:stop 1");
    f->workers_failed += fx_wait_all(pids, FO_WORKERS, 60000);
    fx_cmd(env->rc, "DEL rf:stop");
    return ok;
}

int sc_cluster_failover(void)
{
    int rounds = (int)fx_scale(2, 6), r, ok_rounds = 0, pass, i, k = 0;
    char all[1024] = "";
    fo_figures f;
    fx_env env;
    fx_reports rep;
    rf_result res;

    memset(&f, 0, sizeof f);
    if (fx_env_start_cluster(&env, 3, 1, CL_NODE_TIMEOUT, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_cluster");
    for (r = 0; r < rounds; r++) {
        int victim = rt_cluster_master_of(env.cl, shard_slot[r % 3]);
        ok_rounds += failover_round(&env, r, &k, all, sizeof all, &f);
        if (r + 1 == rounds)
            break;
        /* The dead node comes back, as a replica of the one that replaced it. */
        if (victim >= 0 && env.cl->node[victim]->pid <= 0 &&
            (rt_redis_restart(env.cl->node[victim]) != 0 ||
             rt_cluster_wait_ok(env.cl, FO_SETTLE_MS) != 0)) {
            fx_note("round %d: node %d did not rejoin the cluster", r, victim);
            break;
        }
    }

    if (rf_judge(env.rc, all, &res) != 0 || fx_reports_load(env.rc, &rep) != 0) {
        fx_env_stop(&env);
        return fx_verdict(fx_scenario, 0, "error=referee_unreadable");
    }
    pass = ok_rounds == rounds && f.late == 0 && f.live_flagged == 0 && res.violations == 0 &&
           f.workers_failed == 0 && rep.n == f.workers && fx_reports_sum(&rep, "fails") == 0 &&
           fx_reports_sum(&rep, "timeouts") == 0 &&
           fx_reports_sum(&rep, "sections") == res.sections &&
           tag_sum(&rep, "live", "flags") == 0 && tag_sum(&rep, "live", "lost") == 0;
    i = fx_verdict(fx_scenario, pass,
                   "rounds=%d/%d sections=%lld violations=%lld max_failover_ms=%lld "
                   "lease_dead_ms=%d flagged_in_time=%d flagged_late=%d max_flag_seen_ms=%lld "
                   "max_last_write_ms=%lld max_recovery_ms=%lld live_lease_ms=%d "
                   "live_flags=%lld live_lost=%lld mixed_live_flags=%d mixed_dead_flagged=%d/%d "
                   "live_max_stall_ms=%lld econn=%lld timeouts=%lld fails=%lld "
                   "workers_failed=%d",
                   ok_rounds, rounds, res.sections, res.violations, f.failover_ms,
                   FO_LEASE_DEAD, f.in_time, f.late, f.flag_ms, f.last_write_ms, f.recovery_ms,
                   FO_LEASE_LIVE, tag_sum(&rep, "live", "flags"), tag_sum(&rep, "live", "lost"),
                   f.live_flagged, f.mixed_flagged, f.mixed_rounds, f.live_stall_ms,
                   fx_reports_sum(&rep, "econn"), fx_reports_sum(&rep, "timeouts"),
                   fx_reports_sum(&rep, "fails"), f.workers_failed);
    fx_reports_free(&rep);
    fx_env_stop(&env);
    return i;
}

/* ---- cluster_migrate --------------------------------------------------------------- */

#define MG_LEASE 1500
#define MG_PHASE_MS MG_LEASE        /* each step of a move lasts a lease: renewals meet it */
#define MG_HOLD_MS (MG_LEASE + 400) /* long holds need renewals to last */
#define MG_STALL_LIMIT_MS (2 * MG_LEASE)
#define MG_RESUME_MS 5000
#define MG_RESUB_MS 2000            /* a parked waiter's subscription follows its slot */
#define MG_HANDOFF_MS (MG_LEASE / 3) /* woken by the release notice, not by the lease */

/* Sum over the live nodes of the first number after `field` in INFO <section>. */
static long long info_sum(rt_cluster *cl, const char *section, const char *field)
{
    long long sum = 0;
    int i;

    for (i = 0; i < cl->n; i++) {
        redisContext *c = cl->node[i]->pid > 0 ? rt_cluster_connect(cl, i) : NULL;
        redisReply *r = c ? redisCommand(c, "INFO %s", section) : NULL;
        const char *p;
        if (r && r->type == REDIS_REPLY_STRING && (p = strstr(r->str, field)) != NULL) {
            p += strlen(field);
            while (*p && (*p < '0' || *p > '9'))
                p++;
            sum += strtoll(p, NULL, 10);
        }
        if (r)
            freeReplyObject(r);
        if (c)
            redisFree(c);
    }
    return sum;
}

/* Sharded subscribers of a name's release channel on node i, or -1. */
static long long subscribers_on(rt_cluster *cl, int i, const char *name)
{
    redisContext *c = rt_cluster_connect(cl, i);
    char key[64], ch[80];
    long long n;

    if (!c)
        return -1;
    fx_lock_key(key, sizeof key, name);
    snprintf(ch, sizeof ch, "%s:release", key);
    n = rt_redis_shardnumsub(c, ch, strlen(ch));
    redisFree(c);
    return n;
}

/*
 * A `hold` worker that keeps a name of a moving slot from before the move
 * begins until after it is finished, and a second one parked behind it in
 * Redis all that time.
 */
typedef struct mg_pair {
    char name[CL_NAME_LEN + 4];
    char qh[32], qw[32];
    pid_t h, w;
} mg_pair;

typedef struct mg_figures {
    int pairs_ok, pairs;
    long long resub_ms, handoff_ms;
} mg_figures;

static void pair_kill(mg_pair *p)
{
    pid_t pids[2] = { p->h, p->w };
    int i;

    for (i = 0; i < 2; i++)
        if (pids[i] > 0)
            kill(pids[i], SIGKILL);
    fx_wait_all(pids, 2, 5000);
    p->h = p->w = 0;
}

/* Holder in, waiter parked (subscribed on the slot's master). 0 or -1. */
static int pair_start(fx_env *env, mg_pair *p, int slot, int r, int i)
{
    char msg[64], qout[40];
    int m = rt_cluster_master_of(env->cl, slot);

    snprintf(p->qh, sizeof p->qh, "mgh%d.%d", r, i);
    snprintf(p->qw, sizeof p->qw, "mgw%d.%d", r, i);
    p->h = fx_spawnf("hold", 120, "url=%s ref_port=%d name=%s lease=%d hold_lease=-1 "
                     "wait=10000 wait_cmd=60000 log=1 q=%s", env->cl->seeds, env->ref->port,
                     p->name, MG_LEASE, p->qh);
    snprintf(qout, sizeof qout, "%s.out", p->qh);
    if (fx_event_wait(env->rc, qout, msg, sizeof msg, 15000) != 0 || strcmp(msg, "held") != 0) {
        fx_note("round %d: the holder of %s did not take it", r, p->name);
        return -1;
    }
    p->w = fx_spawnf("hold", 120, "url=%s ref_port=%d name=%s lease=%d hold_lease=-1 "
                     "wait=30000 wait_cmd=60000 log=1 q=%s", env->cl->seeds, env->ref->port,
                     p->name, MG_LEASE, p->qw);
    if (!RT_WAIT_UNTIL(subscribers_on(env->cl, m, p->name) == 1, 10000)) {
        fx_note("round %d: the waiter of %s is not subscribed on node %d", r, p->name, m);
        return -1;
    }
    return 0;
}

/*
 * After the move to node `to`: the waiter's subscription is on `to`; the
 * holder's release is RL_OK (its hold outlived the move: renewals followed
 * MIGRATING, ASK and MOVED); the waiter then takes the name at once (the
 * notice reached it) and gives it back. 1 when all of that held.
 */
static int pair_finish(fx_env *env, mg_pair *p, int to, int r, mg_figures *f)
{
    char msg[64], q[40];
    int64_t t0 = rt_now_ms();
    int rc = 1, ok = 1;     /* 1: no status read */
    pid_t pids[2];

    if (!RT_WAIT_UNTIL(subscribers_on(env->cl, to, p->name) == 1, MG_RESUB_MS)) {
        fx_note("round %d: the waiter of %s is not subscribed on node %d %d ms after the move",
                r, p->name, to, MG_RESUB_MS);
        ok = 0;
    }
    note_max(&f->resub_ms, rt_now_ms() - t0);
    snprintf(q, sizeof q, "%s.in", p->qh);
    fx_event_push(env->rc, q, "release");
    t0 = rt_now_ms();
    snprintf(q, sizeof q, "%s.out", p->qh);
    msg[0] = '\0';
    if (fx_event_wait(env->rc, q, msg, sizeof msg, 10000) != 0 ||
        sscanf(msg, "released %d", &rc) != 1 || rc != RL_OK) {
        fx_note("round %d: the hold on %s that spanned the move: \"%s\" (%s)", r, p->name,
                msg, rl_strerror(rc));
        ok = 0;
    }
    snprintf(q, sizeof q, "%s.out", p->qw);
    msg[0] = '\0';
    if (fx_event_wait(env->rc, q, msg, sizeof msg, 10000) != 0 || strcmp(msg, "held") != 0) {
        fx_note("round %d: the waiter of %s did not take it: \"%s\"", r, p->name, msg);
        pair_kill(p);
        return 0;
    }
    note_max(&f->handoff_ms, rt_now_ms() - t0);
    if (rt_now_ms() - t0 > MG_HANDOFF_MS) {
        fx_note("round %d: the waiter of %s took it %lld ms after the release (limit %d)", r,
                p->name, (long long)(rt_now_ms() - t0), MG_HANDOFF_MS);
        ok = 0;
    }
    snprintf(q, sizeof q, "%s.in", p->qw);
    fx_event_push(env->rc, q, "release");
    pids[0] = p->h;
    pids[1] = p->w;
    p->h = p->w = 0;
    if (fx_wait_all(pids, 2, 10000) != 0)
        ok = 0;
    return ok;
}

/* Move the two slots to their destinations in steps, each held for a
 * phase. 0, or the step that failed. */
static int move_slots(rt_cluster *cl, const int *slot, const int *to)
{
    int i;

    for (i = 0; i < 2; i++)
        if (rt_cluster_slot_begin(cl, slot[i], to[i]) != 0)
            return 1;
    /* The fault itself: MIGRATING / IMPORTING with the keys still at home... */
    rt_sleep_ms(MG_PHASE_MS);
    for (i = 0; i < 2; i++)
        if (rt_cluster_slot_move_keys(cl, slot[i]) != 0)
            return 2;
    /* ... then the keys on the destination, the slot not handed over: ASK. */
    rt_sleep_ms(MG_PHASE_MS);
    for (i = 0; i < 2; i++)
        if (rt_cluster_slot_finish(cl, slot[i], to[i]) != 0)
            return 3;
    return 0;
}

int sc_cluster_migrate(void)
{
    int rounds = (int)fx_scale(4, 24), r, ok_rounds = 0, pass, bad, i, k = 0, n = 0;
    int home[2], away[2];
    char list[256] = "";
    long long max_resume = 0, stall, asking, moved, tryagain;
    cl_names names = { 0 };
    mg_pair pair[2];
    mg_figures f;
    pid_t pids[3];
    cl_watch w;
    fx_env env;
    fx_reports rep;
    rf_result res;

    memset(&f, 0, sizeof f);
    memset(pair, 0, sizeof pair);
    if (fx_env_start_cluster(&env, 3, 0, CL_NODE_TIMEOUT, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_cluster");
    /* Names 0 and 1 move (shard i's master and the next one's), 2 and 3 stay;
     * "<mover>}hw" shares its mover's slot (the hash tag ends at the '}'). */
    for (i = 0; i < 3; i++) {
        int m = rt_cluster_master_of(env.cl, shard_slot[i]);
        if (i < 2) {
            home[i] = m;
            away[i] = rt_cluster_master_of(env.cl, shard_slot[(i + 1) % 3]);
        }
        if (m < 0 || pick_names(env.cl, &names, "mg", &k, m, i == 2 ? 2 : 1) != 0) {
            fx_env_stop(&env);
            return fx_verdict(fx_scenario, 0, "error=no_names");
        }
    }
    for (i = 0; i < 2; i++) {
        char key[64];
        snprintf(pair[i].name, sizeof pair[i].name, "%s}hw", names.name[i]);
        fx_lock_key(key, sizeof key, pair[i].name);
        if (rt_cluster_keyslot(env.cl, key, strlen(key)) != names.slot[i]) {
            fx_note("%s is not in the slot of %s", pair[i].name, names.name[i]);
            fx_env_stop(&env);
            return fx_verdict(fx_scenario, 0, "error=no_names");
        }
    }
    names_join(&names, list, sizeof list);
    pids[n++] = fx_spawnf("loop", 600,
                          "url=%s ref_port=%d threads=%d names=%s ms=1200000 stop=1 lease=%d "
                          "nest=1 pair=0 pin=1 wait=20000 hold_ms=%d work_us=2000 "
                          "think_us=150000 flaglog=1 log=1 tag=long",
                          env.cl->seeds, env.ref->port, names.n, list, MG_LEASE, MG_HOLD_MS);
    for (i = 0; i < 2; i++)
        pids[n++] = fx_spawnf("loop", 600,
                              "url=%s ref_port=%d threads=%d names=%s ms=1200000 stop=1 "
                              "lease=%d nest=1 pair=0 pin=1 wait=20000 sec_min=1 sec_max=3 "
                              "work_us=500 think_us=2000 flaglog=1 log=1 tag=short",
                              env.cl->seeds, env.ref->port, names.n, list, MG_LEASE);
    if (fx_wait_ready(env.rc, n, 30000) != 0 || !names_busy(env.rc, &names, 10, 15000) ||
        watch_start(&w, &names, env.ref->port) != 0) {
        fx_cmd(env.rc, "SET rf:stop 1");
        fx_wait_all(pids, n, 60000);
        fx_env_stop(&env);
        return fx_verdict(fx_scenario, 0, "error=workers_not_busy");
    }

    for (r = 0; r < rounds; r++) {
        long long before[CL_NAMES_MAX];
        int to[2], step, ok = 1;
        int64_t t_done;

        for (i = 0; i < 2; i++) {
            to[i] = r % 2 ? home[i] : away[i];
            f.pairs++;
            if (pair_start(&env, &pair[i], names.slot[i], r, i) != 0) {
                pair_kill(&pair[i]);
                ok = 0;
            }
        }
        if ((step = move_slots(env.cl, names.slot, to)) != 0) {
            fx_note("round %d: moving the slots failed at step %d", r, step);
            for (i = 0; i < 2; i++)
                pair_kill(&pair[i]);
            break;
        }
        t_done = rt_now_ms();
        for (i = 0; i < 2; i++) {
            if (pair[i].h <= 0)
                continue;
            if (pair_finish(&env, &pair[i], to[i], r, &f))
                f.pairs_ok++;
            else
                ok = 0;
        }
        counts(env.rc, &names, before);
        if (!RT_WAIT_UNTIL(all_advanced(env.rc, &names, before, 1), MG_RESUME_MS)) {
            for (i = 0; i < names.n; i++)
                fx_note("round %d: %s has %lld sections, %lld after the move", r,
                        names.name[i], rf_count(env.rc, names.name[i]), before[i]);
            continue;
        }
        note_max(&max_resume, rt_now_ms() - t_done);
        fx_note("round %d: slots %d and %d now on nodes %d and %d; every name worked on "
                "%lld ms after the move", r, names.slot[0], names.slot[1], to[0], to[1],
                (long long)(rt_now_ms() - t_done));
        ok_rounds += ok;
    }
    stall = watch_end(&w);
    asking = info_sum(env.cl, "commandstats", "cmdstat_asking:");
    moved = info_sum(env.cl, "errorstats", "errorstat_MOVED:");
    tryagain = info_sum(env.cl, "errorstats", "errorstat_TRYAGAIN:");

    fx_cmd(env.rc, "SET rf:stop 1");
    bad = fx_wait_all(pids, n, 60000);
    if (rf_judge(env.rc, list, &res) != 0 || fx_reports_load(env.rc, &rep) != 0) {
        fx_env_stop(&env);
        return fx_verdict(fx_scenario, 0, "error=referee_unreadable");
    }
    if (stall > MG_STALL_LIMIT_MS)
        fx_note("%s went %lld ms without a section (limit %d)", w.worst, stall,
                MG_STALL_LIMIT_MS);
    if (fx_reports_sum(&rep, "flags") > 0) {
        fx_reports flaglog;
        if (fx_list_load(env.rc, "rf:flaglog", &flaglog) == 0) {
            for (i = 0; i < flaglog.n; i++)
                fx_note("a section found its flag up: %s", flaglog.lines[i]);
            fx_reports_free(&flaglog);
        }
    }
    pass = ok_rounds == rounds && f.pairs_ok == f.pairs && res.violations == 0 && bad == 0 &&
           rep.n == n && fx_reports_sum(&rep, "sections") == res.sections &&
           fx_reports_sum(&rep, "flags") == 0 && fx_reports_sum(&rep, "lost") == 0 &&
           fx_reports_sum(&rep, "econn") == 0 && fx_reports_sum(&rep, "timeouts") == 0 &&
           fx_reports_sum(&rep, "fails") == 0 && stall >= 0 && stall <= MG_STALL_LIMIT_MS &&
           asking > 0 && moved > 0;
    i = fx_verdict(fx_scenario, pass,
                   "moves=%d/%d held_across=%d/%d sections=%lld violations=%lld "
                   "acquires=%lld lease_ms=%d phase_ms=%d flags=%lld max_resub_ms=%lld "
                   "max_handoff_ms=%lld max_resume_ms=%lld asking=%lld moved=%lld "
                   "tryagain=%lld max_stall_ms=%lld limit_ms=%d lost=%lld econn=%lld "
                   "timeouts=%lld fails=%lld workers_failed=%d",
                   ok_rounds, rounds, f.pairs_ok, f.pairs, res.sections, res.violations,
                   fx_reports_sum(&rep, "acquires"), MG_LEASE, MG_PHASE_MS,
                   fx_reports_sum(&rep, "flags"), f.resub_ms, f.handoff_ms, max_resume,
                   asking, moved, tryagain, stall, MG_STALL_LIMIT_MS,
                   fx_reports_sum(&rep, "lost"), fx_reports_sum(&rep, "econn"),
                   fx_reports_sum(&rep, "timeouts"), fx_reports_sum(&rep, "fails"), bad);
    fx_reports_free(&rep);
    fx_env_stop(&env);
    return i;
}

/* ---- cluster_restart --------------------------------------------------------------- */

#define RS_LEASE 1500
#define RS_DOWN_MS (RS_LEASE + 300)
#define RS_RESTART_MS 30000

int sc_cluster_restart(void)
{
    int rounds = (int)fx_scale(2, 6), r, ok_rounds = 0, pass, bad, i, k = 0, n = 0;
    long long max_flag = 0, max_ok = 0, max_recovery = 0, max_restart = 0;
    char list[256] = "";
    cl_names names = { 0 };
    pid_t pids[2];
    fx_env env;
    fx_reports rep;
    rf_result res;

    if (fx_env_start_cluster(&env, 3, 0, CL_NODE_TIMEOUT, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_cluster");
    for (i = 0; i < 3; i++) {
        int m = rt_cluster_master_of(env.cl, shard_slot[i]);
        if (m < 0 || pick_names(env.cl, &names, "rs", &k, m, 2) != 0) {
            fx_env_stop(&env);
            return fx_verdict(fx_scenario, 0, "error=no_names");
        }
    }
    names_join(&names, list, sizeof list);
    for (i = 0; i < 2; i++)
        pids[n++] = fx_spawnf("loop", 600,
                              "url=%s ref_port=%d threads=%d names=%s ms=1200000 stop=1 "
                              "lease=%d nest=0 pair=0 pin=1 wait=30000 hold_ms=100000000 "
                              "work_us=2000 flaglog=1 cmd_to=500 conn_to=500 tag=holders",
                              env.cl->seeds, env.ref->port, names.n, list, RS_LEASE);
    fx_wait_ready(env.rc, n, 30000);

    for (r = 0; r < rounds; r++) {
        long long before[CL_NAMES_MAX], flag_ms = 0, ok_ms = 0;
        int in_time = 0, late = 0;
        int64_t t_kill, t_restart, t_up;
        long from;

        if (!names_busy(env.rc, &names, 10, 15000)) {
            fx_note("round %d: the names were not all held and busy", r);
            continue;
        }
        from = fx_flaglog_len(env.rc);
        for (i = 0; i < env.cl->n; i++)
            rt_cluster_kill(env.cl, i);
        /* No node left: no lease can have been renewed after this moment. */
        t_kill = rt_now_ms();
        /* The fault itself: the whole cluster down for the lease plus 300 ms. */
        rt_sleep_ms(RS_DOWN_MS);
        t_restart = rt_now_ms();
        if (rt_cluster_restart_all(env.cl, RS_RESTART_MS) != 0) {
            fx_note("round %d: the cluster did not come back", r);
            break;
        }
        t_up = rt_now_ms();
        note_max(&max_restart, t_up - t_restart);
        counts(env.rc, &names, before);
        if (!RT_WAIT_UNTIL(all_advanced(env.rc, &names, before, 1), RS_LEASE + 15000)) {
            for (i = 0; i < names.n; i++)
                fx_note("round %d: %s has %lld sections, %lld when the cluster was back", r,
                        names.name[i], rf_count(env.rc, names.name[i]), before[i]);
            continue;
        }
        note_max(&max_recovery, rt_now_ms() - t_up);
        RT_WAIT_UNTIL(fx_flaglog_len(env.rc) >= from + names.n, 5000);
        fx_flaglog_judge(env.rc, from, t_kill, RS_LEASE, &in_time, &late, &flag_ms, &ok_ms);
        note_max(&max_flag, flag_ms);
        note_max(&max_ok, ok_ms);
        fx_note("round %d: holds flagged in time %d, late %d (last write %lld ms after the "
                "crash); cluster ok %lld ms after the restart began, every name worked on "
                "%lld ms later", r, in_time, late, ok_ms, (long long)(t_up - t_restart),
                (long long)(rt_now_ms() - t_up));
        if (in_time >= names.n && late == 0)
            ok_rounds++;
    }

    pass = fx_finish(&env, pids, n, list, &res, &rep, &bad);
    if (pass < 0) {
        fx_env_stop(&env);
        return fx_verdict(fx_scenario, 0, "error=referee_unreadable");
    }
    pass = pass && ok_rounds == rounds;
    i = fx_verdict(fx_scenario, pass,
                   "restarts=%d/%d sections=%lld violations=%lld flags=%lld lease_ms=%d "
                   "down_ms=%d max_flag_seen_ms=%lld max_last_write_ms=%lld "
                   "max_restart_ms=%lld max_recovery_ms=%lld econn=%lld timeouts=%lld "
                   "fails=%lld workers_failed=%d",
                   ok_rounds, rounds, res.sections, res.violations,
                   fx_reports_sum(&rep, "flags"), RS_LEASE, RS_DOWN_MS, max_flag, max_ok,
                   max_restart, max_recovery, fx_reports_sum(&rep, "econn"),
                   fx_reports_sum(&rep, "timeouts"), fx_reports_sum(&rep, "fails"), bad);
    fx_reports_free(&rep);
    fx_env_stop(&env);
    return i;
}
