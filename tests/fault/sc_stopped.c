/*
 * One stopped node costs only its own holds (issue 21, items 3 and 4).
 *
 * The driver itself is the client here (one rl_client, the library's
 * default timeouts: 2000 ms to connect and per reply, a 1000 ms watchdog
 * lease, renewed every 333 ms), and its main thread holds names on every
 * node. One node is SIGSTOPped for ST_STOP_MS (10 s): it accepts
 * connections (the kernel's backlog) and never answers, the worst kind of
 * failure for a thread that waits on it. Meanwhile the main thread reads
 * each hold's flag (rl_lock_interrupted) every few milliseconds; after the
 * resume, for two more leases.
 *
 * cluster_node_stopped: 3 masters, no replicas, two names on each; the
 * seed (the first node of the URL, the one a slot-map refresh asks first)
 * is stopped. Its renewals time out, which makes the slot map due during
 * the stop. The cluster's node timeout (30 s) is longer than the stop:
 * the other masters keep serving (no CLUSTERDOWN). Proves: no hold on the
 * other two masters is flagged; each hold on the stopped one is flagged
 * before its lease could have run out on the node (the stop + the lease).
 *
 * redlock_node_stopped: 3 independent masters, four names held on all;
 * the first node is stopped, and right after, a second thread releases
 * four other names it held: their fields stay on the stopped node, as
 * leftovers to drop there. Proves: no hold is flagged (two of three
 * masters vouch for every one of them), whatever the leftovers' drops and
 * the reconnects to the stopped node cost. A second round does the same
 * with the settings of the issue's report (lease 2500 ms, timeouts
 * 5000 ms).
 *
 * sentinel_node_stopped: a primary, a replica and 3 sentinels; the first
 * sentinel of the URL is stopped, and two leases into the stop the
 * primary drops every client connection (CLIENT KILL TYPE normal): each
 * new connection is checked against the sentinels before it renews
 * anything. Proves: no hold on the primary is flagged.
 *
 * cluster_node_stopped_cut: cluster_node_stopped, and from two leases
 * into the stop master 1 drops every client connection each half lease
 * (CLIENT KILL TYPE normal, 14 times): each cut makes the slot map due
 * and the watchdog want a new connection there, both the keeper's work.
 * Proves: no hold on master 1 or 2 is flagged. On the merged keeper
 * (issue 21), its map refresh asked the stopped seed with the full
 * timeouts (2 s) and master 1's new connection waited behind it: both
 * holds of master 1 flagged 4.0, 5.7 and 6.4 s into the stop, 3 runs of
 * 3; each node asked within one interval, 0 in 3 runs.
 *
 * cluster_node_stopped_left: the same, and a thread of the client gives
 * back a name on the seed once its flag is up in the stop (RL_ELOST): our
 * field may still be there, a leftover that the keeper tries to drop on
 * the stopped seed. Proves the same. With the map asked within one
 * interval but the drops with the full timeouts (2 s each, tried again
 * every 333 ms), both holds of master 1 flagged 2.7-3.7 s into the stop,
 * 3 runs of 3; with the keeper's drops within one interval, 0 in 3.
 *
 * Each ends by releasing everything: the healthy holds with RL_OK.
 *
 * Found on the code before these scenarios: Cluster, the watchdog's round
 * refreshed the due slot map itself, asking the stopped seed first with
 * the 2 s command timeout, and renewed nothing meanwhile (4 healthy holds
 * flagged in 6 runs of 8); Sentinel, the sentinels were asked one after
 * another, the stopped one for its whole command timeout, and the
 * watchdog's new connection could not be vouched for in time (4 healthy
 * holds flagged, 4 runs of 4). Redlock: the watchdog dropped leftovers
 * itself, and a drop that found the stopped node not yet marked down
 * opened a connection with the full timeouts on the watchdog's thread;
 * here the watchdog's own reconnects kept the node marked down whenever a
 * drop came round, so the scenario did not fail on that code (0 of 10
 * runs): it guards the structure (drops on the keeper's thread) rather
 * than reproducing that race.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "fault.h"
#include "scenarios.h"

#define ST_LEASE 1000           /* watchdog lease: renewed every 333 ms */
#define ST_STOP_MS 10000        /* the stop */
#define ST_NODE_TIMEOUT 30000   /* Cluster: longer than the stop (no CLUSTERDOWN) */
#define ST_STEP_MS 5            /* how often the flags are read */
#define ST_HOLDS_MAX 8

typedef struct st_hold {
    char name[32];
    rl_lock *lock;
    int node;                   /* the node that arbitrates it; -1: every node */
    int64_t flag_at;            /* when its flag was first seen up; -1: never */
    int rc;                     /* its release */
} st_hold;

typedef struct st_run {
    rl_client *c;
    long lease;                 /* the client's watchdog lease */
    st_hold h[ST_HOLDS_MAX];
    int n;
    int stopped;                /* the node stopped */
    int64_t t_stop, t_resume;
} st_run;

static void st_log(int level, const char *message, void *payload)
{
    (void)payload;
    if (level <= fx_env_long("RL_STOPPED_LOG", RL_LOG_WARN))
        fx_note("rlock (%lld): %s", (long long)rt_now_ms() % 100000, message);
}

/* A client with the default timeouts, or both set to timeout_ms. */
static rl_client *st_client(const char *url, long lease, long timeout_ms)
{
    rl_options o;
    rl_client *c;
    int rc;

    rl_options_init(&o, RL_OPTIONS_VERSION);
    o.url = url;
    o.lease_ms = lease;
    o.connect_timeout_ms = timeout_ms;
    o.command_timeout_ms = timeout_ms;
    o.log = st_log;
    if ((rc = rl_client_new(&c, &o)) != RL_OK) {
        fx_note("rl_client_new(%s): %s (%s)", url, rl_strerror(rc), rl_last_error());
        return NULL;
    }
    return c;
}

/* Take every hold of the run (watchdog lease) on the calling thread. */
static int take_all(st_run *r)
{
    int i, rc;

    for (i = 0; i < r->n; i++) {
        r->h[i].flag_at = -1;
        if (rl_lock_new(&r->h[i].lock, r->c, r->h[i].name) != RL_OK)
            return -1;
        if ((rc = rl_lock_try_acquire(r->h[i].lock, 5000, RL_LEASE_WATCHDOG)) != RL_OK) {
            fx_note("cannot take %s: %s (%s)", r->h[i].name, rl_strerror(rc), rl_last_error());
            return -1;
        }
    }
    return 0;
}

/* Read the flags until `until`, noting when each was first seen up. */
static void watch(st_run *r, int64_t until)
{
    int i;

    while (rt_now_ms() < until) {
        for (i = 0; i < r->n; i++)
            if (r->h[i].flag_at < 0 && rl_lock_interrupted(r->h[i].lock))
                r->h[i].flag_at = rt_now_ms();
        rt_sleep_ms(ST_STEP_MS);
    }
}

/* Release everything (the calling thread's holds), free the handles. */
static void release_all(st_run *r)
{
    int i;

    for (i = 0; i < r->n; i++) {
        if (!r->h[i].lock)
            continue;
        r->h[i].rc = rl_lock_release(r->h[i].lock);
        rl_lock_free(r->h[i].lock);
        r->h[i].lock = NULL;
    }
}

/* The judgement: *healthy_flags holds not on the stopped node flagged,
 * *late holds on it flagged after the stop + the lease (or never), and
 * the latest such flag after the stop. 1 when both counts are 0 and every
 * healthy hold was released with RL_OK. */
static int judge(const st_run *r, int *healthy_flags, int *late, long long *max_flag_ms)
{
    int i, ok = 1;

    *healthy_flags = *late = 0;
    *max_flag_ms = -1;
    for (i = 0; i < r->n; i++) {
        const st_hold *h = &r->h[i];
        if (h->node == r->stopped) {
            if (h->flag_at < 0 || h->flag_at > r->t_stop + r->lease)
                (*late)++;
            if (h->flag_at >= 0 && h->flag_at - r->t_stop > *max_flag_ms)
                *max_flag_ms = h->flag_at - r->t_stop;
            continue;
        }
        if (h->flag_at >= 0) {
            (*healthy_flags)++;
            fx_note("%s (node %d) flagged %lld ms after the stop", h->name, h->node,
                    (long long)(h->flag_at - r->t_stop));
        }
        if (h->rc != RL_OK) {
            fx_note("%s (node %d) released with %s", h->name, h->node, rl_strerror(h->rc));
            ok = 0;
        }
    }
    return ok && *healthy_flags == 0 && *late == 0;
}

/* The fault: stop (on = 1) or resume (on = 0) what `arg` names. */
typedef void (*st_fault)(void *arg, int on);

static void node_fault(void *arg, int on)
{
    if (on)
        rt_redis_pause(arg);
    else
        rt_redis_resume(arg);
}

/* Stop what `fault` names, read the flags through the stop and two
 * leases after the resume. `during` runs right after the stop (may be
 * NULL). */
static void stop_and_watch(st_run *r, st_fault fault, void *arg, void (*during)(st_run *))
{
    /* A lease with every node up first: the rounds are steady. */
    watch(r, rt_now_ms() + r->lease);
    r->t_stop = rt_now_ms();
    fault(arg, 1);
    fx_note("(%lld) stopped", (long long)r->t_stop % 100000);
    if (during)
        during(r);
    watch(r, r->t_stop + ST_STOP_MS);
    fault(arg, 0);
    r->t_resume = rt_now_ms();
    fx_note("(%lld) resumed", (long long)r->t_resume % 100000);
    watch(r, r->t_resume + 2 * r->lease);
}

/* ---- cluster_node_stopped ------------------------------------------------- */

/* Two names on each master i (hold i's node says which). */
static int cluster_names(rt_cluster *cl, st_run *r)
{
    int k = 0, m;

    for (m = 0; m < 3; m++) {
        int want = 2;
        while (want > 0 && k < 4000) {
            char name[32], key[64];
            int slot;
            snprintf(name, sizeof name, "st%d", k++);
            fx_lock_key(key, sizeof key, name);
            if ((slot = rt_cluster_keyslot(cl, key, strlen(key))) < 0)
                return -1;
            if (rt_cluster_master_of(cl, slot) != m)
                continue;
            snprintf(r->h[r->n].name, sizeof r->h[r->n].name, "%s", name);
            r->h[r->n++].node = m;
            want--;
        }
        if (want)
            return -1;
    }
    return 0;
}

int sc_cluster_node_stopped(void)
{
    st_run r;
    fx_env env;
    int healthy, late, pass, i;
    long long max_flag;

    memset(&r, 0, sizeof r);
    if (fx_env_start_cluster(&env, 3, 0, ST_NODE_TIMEOUT, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_cluster");
    r.stopped = 0;     /* the seed: first in cl->seeds */
    r.lease = ST_LEASE;
    if (cluster_names(env.cl, &r) != 0 || !(r.c = st_client(env.cl->seeds, ST_LEASE, 0)) ||
        take_all(&r) != 0) {
        release_all(&r);
        rl_client_free(r.c);
        fx_env_stop(&env);
        return fx_verdict(fx_scenario, 0, "error=setup");
    }
    stop_and_watch(&r, node_fault, env.cl->node[r.stopped], NULL);
    release_all(&r);
    rl_client_free(r.c);
    pass = judge(&r, &healthy, &late, &max_flag);
    i = fx_verdict(fx_scenario, pass,
                   "stopped=seed stop_ms=%lld lease_ms=%d holds=%d healthy_flagged=%d "
                   "stopped_node_flagged_late=%d max_flag_after_stop_ms=%lld",
                   (long long)(r.t_resume - r.t_stop), ST_LEASE, r.n, healthy, late, max_flag);
    fx_env_stop(&env);
    return i;
}

/* ---- cluster_node_stopped_cut --------------------------------------------- */

#define SC_CUTS 14              /* master 1 drops its clients this often in the stop */

static rt_cluster *sc_cl;

/* Two leases into the stop, and every half lease after, master 1 drops
 * every client connection: the watchdog needs a new one there each time,
 * while the seed is still stopped. */
static void cut_master1(st_run *r)
{
    redisContext *pc;
    int k;

    for (k = 0; k < SC_CUTS && 2 * r->lease + k * r->lease / 2 < ST_STOP_MS; k++) {
        watch(r, r->t_stop + 2 * r->lease + k * r->lease / 2);
        if ((pc = rt_cluster_connect(sc_cl, 1))) {
            long long n = fx_cmd(pc, "CLIENT KILL TYPE normal");
            fx_note("(%lld) master 1 dropped %lld connections",
                    (long long)rt_now_ms() % 100000, n);
            redisFree(pc);
        }
    }
}

/* cluster_node_stopped_left: a thread of its own holds a name on the
 * seed and gives it back once its flag is up in the stop (a leftover for
 * the keeper to drop there); then the cuts on master 1. */
typedef struct sl_leaver {
    rl_client *c;
    char name[32];
    int taken;                  /* 1 held, -1 could not */
    atomic_int go;
    int rc;                     /* the release */
    long long release_ms;
    pthread_mutex_t mu;
    pthread_cond_t cond;
} sl_leaver;

static sl_leaver sl;

/* Holds the name (watchdog lease) until told, then waits for its flag (the
 * seed stopped: the lease is not confirmed) and gives it back: RL_ELOST,
 * and our field, which may still be there, is a leftover to drop. */
static void *sl_main(void *arg)
{
    sl_leaver *lv = arg;
    rl_lock *lock = NULL;
    int64_t t0;
    int ok;

    ok = rl_lock_new(&lock, lv->c, lv->name) == RL_OK &&
         rl_lock_try_acquire(lock, 5000, RL_LEASE_WATCHDOG) == RL_OK;
    pthread_mutex_lock(&lv->mu);
    lv->taken = ok ? 1 : -1;
    pthread_cond_broadcast(&lv->cond);
    while (ok && !atomic_load(&lv->go))
        pthread_cond_wait(&lv->cond, &lv->mu);
    pthread_mutex_unlock(&lv->mu);
    t0 = rt_now_ms();
    while (ok && !rl_lock_interrupted(lock) && rt_now_ms() - t0 < ST_STOP_MS)
        rt_sleep_ms(ST_STEP_MS);
    t0 = rt_now_ms();
    lv->rc = ok ? rl_lock_release(lock) : RL_OK;
    lv->release_ms = rt_now_ms() - t0;
    rl_lock_free(lock);
    return NULL;
}

static void release_on_seed_and_cut(st_run *r)
{
    pthread_mutex_lock(&sl.mu);
    atomic_store(&sl.go, 1);
    pthread_cond_broadcast(&sl.cond);
    pthread_mutex_unlock(&sl.mu);
    cut_master1(r);
}

/* A name on master 0 other than the run's. */
static int seed_name(rt_cluster *cl, char *out, size_t cap)
{
    int k;

    for (k = 0; k < 4000; k++) {
        char key[64];
        int slot;
        snprintf(out, cap, "sl%d", k);
        fx_lock_key(key, sizeof key, out);
        if ((slot = rt_cluster_keyslot(cl, key, strlen(key))) < 0)
            return -1;
        if (rt_cluster_master_of(cl, slot) == 0)
            return 0;
    }
    return -1;
}

/* The seed stopped, master 1's clients cut; with `left`, a leftover on
 * the seed too. */
static int cut_run(int left)
{
    st_run r;
    fx_env env;
    pthread_t th;
    int healthy, late, pass, i, started = 0;
    long long max_flag;

    memset(&r, 0, sizeof r);
    memset(&sl, 0, sizeof sl);
    pthread_mutex_init(&sl.mu, NULL);
    pthread_cond_init(&sl.cond, NULL);
    if (fx_env_start_cluster(&env, 3, 0, ST_NODE_TIMEOUT, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_cluster");
    sc_cl = env.cl;
    r.stopped = 0;
    r.lease = ST_LEASE;
    if (cluster_names(env.cl, &r) == 0 && (r.c = st_client(env.cl->seeds, ST_LEASE, 0)) &&
        take_all(&r) == 0) {
        sl.c = r.c;
        if (!left)
            started = 1;
        else if (seed_name(env.cl, sl.name, sizeof sl.name) == 0 &&
                 pthread_create(&th, NULL, sl_main, &sl) == 0) {
            pthread_mutex_lock(&sl.mu);
            while (!sl.taken)
                pthread_cond_wait(&sl.cond, &sl.mu);
            pthread_mutex_unlock(&sl.mu);
            started = sl.taken > 0 ? 1 : -1;
        }
    }
    if (started <= 0) {
        if (started < 0)
            pthread_join(th, NULL);
        release_all(&r);
        rl_client_free(r.c);
        fx_env_stop(&env);
        return fx_verdict(fx_scenario, 0, "error=setup");
    }
    stop_and_watch(&r, node_fault, env.cl->node[r.stopped],
                   left ? release_on_seed_and_cut : cut_master1);
    if (left) {
        pthread_join(th, NULL);
        fx_note("the release on the seed: %s after %lld ms", rl_strerror(sl.rc), sl.release_ms);
    }
    release_all(&r);
    rl_client_free(r.c);
    pass = judge(&r, &healthy, &late, &max_flag);
    i = fx_verdict(fx_scenario, pass,
                   "stopped=seed leftover_on_seed=%d cuts_on_master1=%d stop_ms=%lld "
                   "lease_ms=%d holds=%d healthy_flagged=%d stopped_node_flagged_late=%d",
                   left, SC_CUTS, (long long)(r.t_resume - r.t_stop), ST_LEASE, r.n, healthy,
                   late);
    fx_env_stop(&env);
    pthread_mutex_destroy(&sl.mu);
    pthread_cond_destroy(&sl.cond);
    return i;
}

int sc_cluster_node_stopped_cut(void)
{
    return cut_run(0);
}

int sc_cluster_node_stopped_left(void)
{
    return cut_run(1);
}

/* ---- redlock_node_stopped ------------------------------------------------- */

#define RS_NODES 3
#define RS_LEFT 4               /* names released during the stop: leftovers */
/* The second round's settings, those of the issue's report: the 2000 ms
 * default timeouts re-mark the stopped node down (the watchdog's own
 * connect to it fails first) before the drop of a leftover there comes
 * round; with 5000 ms the drop finds it not yet marked. */
#define RS_ISSUE_LEASE 2500
#define RS_ISSUE_TIMEOUT 5000

typedef struct rs_leaver {
    rl_client *c;
    rl_lock *lock[RS_LEFT];
    int taken;                  /* 1: holds taken; -1: failed */
    atomic_int go;              /* release now */
    int released_ok;
    long long release_ms;
    pthread_mutex_t mu;
    pthread_cond_t cond;
} rs_leaver;

static rs_leaver leaver;

/* Holds RS_LEFT names of its own until told, then releases them (the
 * stopped node cannot take part: the release leaves their fields there). */
static void *leaver_main(void *arg)
{
    rs_leaver *lv = arg;
    char name[32];
    int i, ok = 1;
    int64_t t0;

    for (i = 0; i < RS_LEFT && ok; i++) {
        snprintf(name, sizeof name, "left%d", i);
        ok = rl_lock_new(&lv->lock[i], lv->c, name) == RL_OK &&
             rl_lock_try_acquire(lv->lock[i], 5000, RL_LEASE_WATCHDOG) == RL_OK;
    }
    pthread_mutex_lock(&lv->mu);
    lv->taken = ok ? 1 : -1;
    pthread_cond_broadcast(&lv->cond);
    while (!atomic_load(&lv->go))
        pthread_cond_wait(&lv->cond, &lv->mu);
    pthread_mutex_unlock(&lv->mu);
    t0 = rt_now_ms();
    for (i = 0; i < RS_LEFT; i++) {
        if (!lv->lock[i])
            continue;
        int64_t t1 = rt_now_ms();
        int rc = rl_lock_release(lv->lock[i]);
        if (rc != RL_OK)
            fx_note("left%d: release %s after %lld ms (%s)", i, rl_strerror(rc),
                    (long long)(rt_now_ms() - t1), rl_last_error());
        lv->released_ok += rc == RL_OK;
        rl_lock_free(lv->lock[i]);
    }
    lv->release_ms = rt_now_ms() - t0;
    return NULL;
}

static void leaver_go(st_run *r)
{
    (void)r;
    pthread_mutex_lock(&leaver.mu);
    atomic_store(&leaver.go, 1);
    pthread_cond_broadcast(&leaver.cond);
    pthread_mutex_unlock(&leaver.mu);
}

/* One round: four names held, four released by the leaver during the
 * stop of node 0. The figures into *healthy (holds flagged) and *ok
 * (releases RL_OK); 1 when the round passed, -1 when it could not run. */
static int rs_round(fx_env *env, long lease, long timeout_ms, int *healthy, int *ok)
{
    st_run r;
    pthread_t th;
    int late, pass, i, started = 0;
    long long max_flag;

    memset(&r, 0, sizeof r);
    memset(&leaver, 0, sizeof leaver);
    pthread_mutex_init(&leaver.mu, NULL);
    pthread_cond_init(&leaver.cond, NULL);
    r.stopped = 0;
    r.lease = lease;
    for (i = 0; i < 4; i++) {
        snprintf(r.h[i].name, sizeof r.h[i].name, "held%d", i);
        r.h[i].node = -1;
    }
    r.n = 4;
    if ((r.c = st_client(env->url, lease, timeout_ms)) && take_all(&r) == 0) {
        leaver.c = r.c;
        started = pthread_create(&th, NULL, leaver_main, &leaver) == 0;
    }
    if (started) {
        pthread_mutex_lock(&leaver.mu);
        while (!leaver.taken)
            pthread_cond_wait(&leaver.cond, &leaver.mu);
        pthread_mutex_unlock(&leaver.mu);
    }
    pass = -1;
    if (started && leaver.taken > 0) {
        stop_and_watch(&r, node_fault, env->node[r.stopped], leaver_go);
        pass = 0;
    } else if (started) {
        leaver_go(&r);
    }
    if (started)
        pthread_join(th, NULL);
    release_all(&r);
    rl_client_free(r.c);
    if (pass == 0)
        pass = judge(&r, healthy, &late, &max_flag);
    *ok = leaver.released_ok;
    fx_note("round: lease %ld ms, timeouts %s: %d healthy holds flagged, %d/%d releases "
            "RL_OK in %lld ms", lease, timeout_ms ? "5000 ms" : "default", *healthy, *ok,
            RS_LEFT, leaver.release_ms);
    pthread_mutex_destroy(&leaver.mu);
    pthread_cond_destroy(&leaver.cond);
    return pass;
}

int sc_redlock_node_stopped(void)
{
    fx_env env;
    int healthy[2] = { -1, -1 }, ok[2] = { 0, 0 }, pass[2] = { -1, -1 }, i;

    if (fx_env_start_redlock(&env, RS_NODES, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_redis");
    pass[0] = rs_round(&env, ST_LEASE, 0, &healthy[0], &ok[0]);
    if (pass[0] >= 0)
        pass[1] = rs_round(&env, RS_ISSUE_LEASE, RS_ISSUE_TIMEOUT, &healthy[1], &ok[1]);
    if (pass[0] < 0 || pass[1] < 0) {
        fx_env_stop(&env);
        return fx_verdict(fx_scenario, 0, "error=setup");
    }
    i = fx_verdict(fx_scenario, pass[0] && pass[1],
                   "nodes=%d stopped=node0 stop_ms=%d holds=4 lease_ms=%d "
                   "healthy_flagged=%d leftover_releases_ok=%d/%d issue_lease_ms=%d "
                   "issue_timeouts_ms=%d issue_healthy_flagged=%d issue_releases_ok=%d/%d",
                   RS_NODES, ST_STOP_MS, ST_LEASE, healthy[0], ok[0], RS_LEFT, RS_ISSUE_LEASE,
                   RS_ISSUE_TIMEOUT, healthy[1], ok[1], RS_LEFT);
    fx_env_stop(&env);
    return i;
}

/* ---- sentinel_node_stopped ------------------------------------------------ */

#define SS_MASTER "stmaster"

typedef struct ss_fault {
    rt_sentinel *sn;
    int sentinel;               /* the one stopped */
    int primary;
} ss_fault;

static void sentinel_fault(void *arg, int on)
{
    ss_fault *f = arg;

    if (on)
        rt_sentinel_pause_sentinel(f->sn, f->sentinel);
    else
        rt_sentinel_resume_sentinel(f->sn, f->sentinel);
}

static ss_fault ss_f;

/* A while into the stop, the primary drops every client connection (as
 * a restart of a proxy would): each new one is checked against the
 * sentinels, the stopped one among them. */
static void cut_connections(st_run *r)
{
    redisContext *pc;

    watch(r, rt_now_ms() + 2 * r->lease);
    if ((pc = rt_sentinel_connect_node(ss_f.sn, ss_f.primary))) {
        long long n = fx_cmd(pc, "CLIENT KILL TYPE normal");
        fx_note("(%lld) the primary dropped %lld connections", (long long)rt_now_ms() % 100000,
                n);
        redisFree(pc);
    }
}

int sc_sentinel_node_stopped(void)
{
    st_run r;
    fx_env env;
    int healthy, late, pass, i;
    long long max_flag;

    memset(&r, 0, sizeof r);
    if (fx_env_start_sentinel(&env, 1, 3, SS_MASTER, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_sentinel");
    ss_f.sn = env.sn;
    ss_f.sentinel = 0;          /* the first of the URL: asked first */
    ss_f.primary = rt_sentinel_primary(env.sn);
    r.stopped = -2;             /* no hold lives on a sentinel */
    r.lease = ST_LEASE;
    for (i = 0; i < 4; i++) {
        snprintf(r.h[i].name, sizeof r.h[i].name, "sh%d", i);
        r.h[i].node = ss_f.primary;
    }
    r.n = 4;
    if (ss_f.primary < 0 || !(r.c = st_client(env.url, ST_LEASE, 0)) || take_all(&r) != 0) {
        release_all(&r);
        rl_client_free(r.c);
        fx_env_stop(&env);
        return fx_verdict(fx_scenario, 0, "error=setup");
    }
    stop_and_watch(&r, sentinel_fault, &ss_f, cut_connections);
    release_all(&r);
    rl_client_free(r.c);
    pass = judge(&r, &healthy, &late, &max_flag);
    i = fx_verdict(fx_scenario, pass,
                   "stopped=sentinel0 stop_ms=%lld lease_ms=%d holds=%d healthy_flagged=%d",
                   (long long)(r.t_resume - r.t_stop), ST_LEASE, r.n, healthy);
    fx_env_stop(&env);
    return i;
}
