/*
 * The PRNG and the plan: everything a run does is drawn here from its seed,
 * in one fixed order, so that a seed replays the same test.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "nemesis.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void nm_rng_seed(nm_rng *r, uint64_t seed)
{
    int i;

    for (i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t nm_rng_next(nm_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;

    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

long nm_rng_range(nm_rng *r, long lo, long hi)
{
    uint64_t span = (uint64_t)(hi - lo) + 1;

    return lo + (long)(nm_rng_next(r) % span);
}

int nm_rng_pct(nm_rng *r, int pct)
{
    return nm_rng_range(r, 0, 99) < pct;
}

int64_t nm_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void draw_name(nm_rng *r, nm_name *n)
{
    memset(n, 0, sizeof *n);
    n->family = (int)nm_rng_range(r, 0, 2);
    /* Fencing and lock-delay are the plain lock's: the library refuses
     * them on a client that opens a fair or read-write name. */
    if (n->family == NM_PLAIN) {
        n->fencing = nm_rng_pct(r, 50);
        n->delay_ms = nm_rng_pct(r, 50) ? nm_rng_range(r, 300, 1500) : 0;
    }
    n->lease_ms = nm_rng_range(r, 600, 2000);
    n->fixed = nm_rng_pct(r, 30);
}

long nm_plan_lease_delay_max(const nm_plan *p)
{
    long m = 0;
    int i;

    for (i = 0; i < p->nnames; i++)
        if (p->names[i].lease_ms + p->names[i].delay_ms > m)
            m = p->names[i].lease_ms + p->names[i].delay_ms;
    return m;
}

static long lease_max(const nm_plan *p)
{
    long m = 0;
    int i;

    for (i = 0; i < p->nnames; i++)
        if (p->names[i].lease_ms > m)
            m = p->names[i].lease_ms;
    return m;
}

/* One fault's kind, target and length; -1 when the kind cannot be drawn. */
static int draw_fault(nm_rng *r, const nm_plan *p, nm_fault *f)
{
    f->kind = (int)nm_rng_range(r, 0, NM_F_COUNT - 1);
    f->dur_ms = 0;
    f->arg = 0;
    switch (f->kind) {
    case NM_F_SRV_STOP:
        f->dur_ms = nm_rng_range(r, 200, lease_max(p) * 3 / 2);
        break;
    case NM_F_SRV_KILL_KEEP:
        f->dur_ms = nm_rng_range(r, 100, 1500);
        break;
    case NM_F_SRV_KILL_EMPTY:
        /* Restarting empty sooner than the leases (and delays) run out is
         * outside rlock's guarantees: never drawn. */
        f->dur_ms = nm_plan_lease_delay_max(p) + nm_rng_range(r, 600, 1200);
        break;
    case NM_F_WRK_STOP:
        f->arg = (int)nm_rng_range(r, 0, p->nprocs - 1);
        f->dur_ms = lease_max(p) + nm_rng_range(r, 200, 1000);
        break;
    case NM_F_WRK_KILL:
        f->arg = (int)nm_rng_range(r, 0, p->nprocs - 1);
        break;
    case NM_F_FORCE:
        f->arg = (int)nm_rng_range(r, 0, p->nnames - 1);
        break;
    case NM_F_PX_STALL:
        f->dur_ms = nm_rng_range(r, 100, 2500);
        /* fall through */
    case NM_F_PX_DROP:
    case NM_F_PX_CUT:
        if (p->proxied < 0)
            return -1;
        break;
    default:
        break;
    }
    return 0;
}

static void draw_faults(nm_rng *r, nm_plan *p)
{
    int want = (int)nm_rng_range(r, 1, 4), tries = 0;
    long at = nm_rng_range(r, 800, 2500);

    p->nfaults = 0;
    while (p->nfaults < want && tries++ < 32) {
        nm_fault f;

        if (draw_fault(r, p, &f) != 0)
            continue;
        if (at + f.dur_ms > p->run_ms + 3000)
            break;
        f.at_ms = at;
        p->faults[p->nfaults++] = f;
        at += f.dur_ms + nm_rng_range(r, 300, 2500);
        if (at > p->run_ms - 1000)
            break;
    }
}

/* Cluster and Sentinel clients follow the slot map or the sentinels to the
 * nodes' own ports, so no proxy stands in one client's path: its faults
 * become a CLIENT KILL. A node's data cannot be kept across its restart
 * (rt_cluster and rt_sentinel empty it): a restart with data becomes a slot
 * migration of a name (Cluster) or a SENTINEL FAILOVER (Sentinel). Server
 * faults of a Sentinel deployment hit whichever node is the primary then. */
static void cluster_faults(nm_plan *p, nm_rng *r)
{
    int i;

    p->proxied = -1;
    for (i = 0; i < p->nfaults; i++) {
        nm_fault *f = &p->faults[i];
        if (f->kind >= NM_F_PX_STALL && f->kind <= NM_F_PX_CUT) {
            f->kind = NM_F_CKILL;
            f->dur_ms = 0;
        } else if (f->kind == NM_F_SRV_KILL_KEEP && p->deploy == NM_SENTINEL) {
            f->kind = NM_F_FAILOVER;
            f->dur_ms = 0;
        } else if (f->kind == NM_F_SRV_KILL_KEEP) {
            f->kind = NM_F_MIGRATE;
            f->arg = (int)nm_rng_range(r, 0, p->nnames - 1);
            f->dur_ms = 0;
            /* With replicas, half of them a coordinated failover instead. */
            if (p->deploy == NM_CLUSTER_R && nm_rng_pct(r, 50))
                f->kind = NM_F_CFAILOVER;
        }
    }
}

/* The deployments with replicas come from a third stream: 24 % of seeds
 * become one of them, every other seed keeps the deployment (and the whole
 * plan) it had before they were added. Its constant is the first after
 * "replicas" that leaves the short form's seeds (CMakeLists.txt) as they
 * were. */
static int draw_replicated(uint64_t seed, int deploy)
{
    nm_rng r;
    long j;

    nm_rng_seed(&r, seed ^ 0x7265706c6963617fULL);
    j = nm_rng_range(&r, 0, 99);
    return j < 12 ? NM_SINGLE_R : j < 24 ? NM_CLUSTER_R : deploy;
}

static int nodes_of(int deploy)
{
    static const int n[] = { 1, 5, 3, 3, 2, 6 };

    return n[deploy];
}

/* A single server with its replica: the proxy stands in front of the
 * primary; SCRIPT FLUSH and CLIENT KILL hit the primary (on the replica
 * they would do nothing); the other server faults hit the node drawn. */
static void single_r_faults(nm_plan *p)
{
    int i;

    p->px_node = 0;
    for (i = 0; i < p->nfaults; i++)
        if (p->faults[i].kind == NM_F_FLUSH || p->faults[i].kind == NM_F_CKILL)
            p->faults[i].node = 0;
}

/* The deployment comes from a stream of its own, after the rest: the plans
 * of single-server seeds stayed what they were before Redlock was added. */
static void draw_deployment(nm_plan *p, uint64_t seed)
{
    nm_rng r;
    int i;

    nm_rng_seed(&r, seed ^ 0x6e656d6573697321ULL);
    i = (int)nm_rng_range(&r, 0, 99);
    p->deploy = i < 25 ? NM_REDLOCK : i < 50 ? NM_CLUSTER : i < 70 ? NM_SENTINEL : NM_SINGLE;
    p->deploy = draw_replicated(seed, p->deploy);
    p->nnodes = nodes_of(p->deploy);
    p->px_node = (int)nm_rng_range(&r, 0, p->nnodes - 1);
    for (i = 0; i < p->nfaults; i++)
        p->faults[i].node = (int)nm_rng_range(&r, 0, p->nnodes - 1);
    if (nm_is_cluster(p->deploy) || p->deploy == NM_SENTINEL)
        cluster_faults(p, &r);
    if (p->deploy == NM_SINGLE_R)
        single_r_faults(p);
    if (p->deploy != NM_REDLOCK)
        return;
    /* Redlock offers plain locks only, without fencing or lock-delay
     * (RL_ENOTSUP): every name becomes a plain one. */
    for (i = 0; i < p->nnames; i++) {
        p->names[i].family = NM_PLAIN;
        p->names[i].fencing = 0;
        p->names[i].delay_ms = 0;
    }
}

/* Worker-side faults come from a stream of their own: a drawn fault is
 * replaced, in its slot of the schedule, by a fork in a worker or a
 * shutdown of one name's client in a worker (the other draws of a seed stay
 * what they were). A fork's child lives until the next fault at most. */
static void draw_worker_faults(nm_plan *p, uint64_t seed)
{
    nm_rng r;
    int i;

    nm_rng_seed(&r, seed ^ 0x7766617531746b21ULL);
    for (i = 0; i < p->nfaults; i++) {
        nm_fault *f = &p->faults[i];
        long room = i + 1 < p->nfaults ? p->faults[i + 1].at_ms - f->at_ms - 200 : 2000;
        if (!nm_rng_pct(&r, 25))
            continue;
        f->kind = nm_rng_pct(&r, 50) ? NM_F_FORK : NM_F_SHUTDOWN;
        f->arg = (int)nm_rng_range(&r, 0, p->nprocs - 1);
        f->name = (int)nm_rng_range(&r, 0, p->nnames - 1);
        f->dur_ms = 0;
        if (f->kind == NM_F_FORK)
            f->dur_ms = nm_rng_range(&r, 300, room > 300 ? (room < 2000 ? room : 2000) : 300);
    }
}

/* Redlock and Cluster: in about a third of the seeds, sections long enough
 * to outlive their lease (a pause between writes up to a lease), so that
 * renewals during a node's fault decide whether a hold stays valid: what
 * the isolation check needs. In Redlock, one thread a process and think
 * times of several sections, so that many holds are won alone (on all 5
 * masters: only those are checked there). From a stream of its own: the
 * other draws stay what they were. */
static void draw_long_holds(nm_plan *p, uint64_t seed)
{
    nm_rng r;
    int i;

    nm_rng_seed(&r, seed ^ 0x69736f6c61746521ULL);
    if ((p->deploy != NM_REDLOCK && !nm_is_cluster(p->deploy)) || !nm_rng_pct(&r, 35))
        return;
    p->hold_ms_max = nm_rng_range(&r, lease_max(p) / 2, lease_max(p));
    if (p->deploy != NM_REDLOCK)
        return;
    p->nthreads = 1;
    p->think_ms_max = p->hold_ms_max * 3 * p->nprocs / p->nnames;
    /* A master stopped past every lease: a hold alive at the stop outlives
     * its confirmed expiry only through the other masters' renewals. */
    for (i = 0; i < p->nfaults; i++)
        if (p->faults[i].kind == NM_F_SRV_STOP && p->faults[i].dur_ms < lease_max(p) + 200)
            p->faults[i].dur_ms = lease_max(p) + nm_rng_range(&r, 200, 600);
}

/* The queue profile, from a stream of its own (the other draws stay what
 * they were), in a share of the plans that offer fair and read-write
 * names: one such name, every process a single thread that asks again at
 * once, short holds. A fair queue skipped, or a reader that passes a
 * waiting writer, then shows as a waiter served after a later one. */
static void draw_queue_profile(nm_plan *p, uint64_t seed)
{
    nm_rng r;
    int i;

    nm_rng_seed(&r, seed ^ 0x7175657565732122ULL);
    if (p->deploy == NM_REDLOCK || !nm_rng_pct(&r, 20))
        return;
    p->queue = 1;
    p->nnames = 1;
    p->names[0].family = nm_rng_pct(&r, 50) ? NM_FAIR : NM_RW;
    p->names[0].fencing = 0;
    p->names[0].delay_ms = 0;
    p->nprocs = NM_PROCS_MAX;
    p->nthreads = 1;
    p->think_ms_max = 0;
    /* Read holds long enough to overlap, one reader entering as another
     * leaves, while a writer waits. */
    p->hold_ms_max = p->names[0].family == NM_FAIR ? nm_rng_range(&r, 5, 30)
                                                   : nm_rng_range(&r, 20, 60);
    for (i = 0; i < p->nfaults; i++)
        if (p->faults[i].kind == NM_F_FORCE || p->faults[i].kind == NM_F_MIGRATE ||
            p->faults[i].kind == NM_F_CFAILOVER)
            p->faults[i].arg = 0;   /* a name's index: the one name left */
        else if (p->faults[i].kind == NM_F_SHUTDOWN)
            p->faults[i].name = 0;
}

/* TLS, from a stream of its own (the other draws stay what they were): 40 %
 * of the single, single-with-replica and Redlock plans run over TLS, half
 * of those with client certificates required (mutual TLS). Its constant is
 * the first after "tls" that leaves the short form's seeds
 * (CMakeLists.txt) plain, as they were. */
static void draw_tls(nm_plan *p, uint64_t seed)
{
    nm_rng r;

    nm_rng_seed(&r, seed ^ 0x746c73000000004fULL);
    if (p->deploy != NM_SINGLE && p->deploy != NM_SINGLE_R && p->deploy != NM_REDLOCK)
        return;
    if (nm_rng_pct(&r, 40))
        p->tls = nm_rng_pct(&r, 50) ? NM_TLS_MUTUAL : NM_TLS_ON;
}

/* TLS for Cluster and Sentinel, from a stream of their own (the plans of
 * single, single+r and Redlock seeds stay what they were): 40 % of their
 * plans, one-way TLS only (rt_cluster_start_tls and rt_sentinel_start_tls
 * ask no client certificates). Its constant is the first after "tlscs"
 * that leaves the short form's earlier seeds as they were. */
static void draw_tls_cs(nm_plan *p, uint64_t seed)
{
    nm_rng r;

    nm_rng_seed(&r, seed ^ 0x746c736373000021ULL);
    if (!nm_is_cluster(p->deploy) && p->deploy != NM_SENTINEL)
        return;
    if (nm_rng_pct(&r, 40))
        p->tls = NM_TLS_ON;
}

int nm_set_member(const nm_plan *p, int i)
{
    const nm_name *n = &p->names[i];

    return n->family != NM_SEM && !n->fencing && n->delay_ms == 0;
}

/* Semaphores and sets, from a stream of their own (the other draws stay
 * what they were): outside Redlock (no semaphore there: RL_ENOTSUP) and
 * the queue profile, each name becomes a semaphore of 1..4 permits with
 * 30 %; in any deployment, 40 % of the plans with two names or more a set
 * can take have 20-40 % of their sections take a set. Its constant is the
 * first after "semsets" that leaves the short form's seeds as they were. */
static void draw_sem_sets(nm_plan *p, uint64_t seed)
{
    nm_rng r;
    int i, members = 0;

    nm_rng_seed(&r, seed ^ 0x73656d7371fa5a53ULL);
    for (i = 0; i < p->nnames; i++) {
        nm_name *n = &p->names[i];
        if (!nm_rng_pct(&r, 30) || p->deploy == NM_REDLOCK || p->queue)
            continue;
        n->family = NM_SEM;
        n->permits = (int)nm_rng_range(&r, 1, 4);
        n->fencing = 0;
        n->delay_ms = 0;
    }
    for (i = 0; i < p->nnames; i++)
        members += nm_set_member(p, i);
    if (members >= 2 && !p->queue && nm_rng_pct(&r, 40))
        p->sets = (int)nm_rng_range(&r, 20, 40);
    /* Fencing per permit on half the semaphores, from a stream of its own
     * (the draws above stay what they were). */
    nm_rng_seed(&r, seed ^ 0x73656d66656e6365ULL);
    for (i = 0; i < p->nnames; i++)
        if (p->names[i].family == NM_SEM)
            p->names[i].fencing = nm_rng_pct(&r, 50);
}

/* Sets that the one script takes (src/lockset_one.c: plain members with
 * neither fencing nor a lock-delay, one server, no wait_replicas), from a
 * stream of their own: half of the single-server plans with sets have
 * their fair and read-write names plain instead. Its constant, "plainset",
 * leaves the short form's seeds as they were. */
static void draw_plain_sets(nm_plan *p, uint64_t seed)
{
    nm_rng r;
    int i;

    nm_rng_seed(&r, seed ^ 0x706c61696e736574ULL);
    if (!p->sets || p->deploy != NM_SINGLE || !nm_rng_pct(&r, 50))
        return;
    for (i = 0; i < p->nnames; i++)
        if (p->names[i].family == NM_FAIR || p->names[i].family == NM_RW)
            p->names[i].family = NM_PLAIN;
}

/* Redlock's spread (issue 32), from a stream of its own (the other draws
 * stay what they were): in 30 % of the Redlock plans the schedule becomes
 * one fault, at the first fault's time, that makes holds depend on the
 * spread. Two masters are SIGKILLed together: the holds alive lose two of
 * their five fields, and those taken meanwhile land on the three left, a
 * bare majority. Both are restarted empty past every lease (the operators'
 * rule); settle_ms later (a renewal interval after the clients can have
 * reconnected, NM_SPREAD_SETTLE_MS and a lease, and a margin) a third
 * master is SIGKILLed (restarted empty past every lease) or SIGSTOPped as
 * long. A hold alive from before the restart through the third's fault
 * then stays on a majority only if a renewal round placed it on the two
 * restarted masters. Never more than two masters out at once. Sections
 * long enough to span that (one thread a process, pauses between writes of
 * up to 3/4 of a settle to a whole one, thinking a quarter as long), half the fixed
 * leases made the watchdog's (only those are renewed, and spread), and the
 * run long enough to end after it. Its constant is the first after "spread" that leaves
 * the short form's seeds as they were. */
static void draw_spread(nm_plan *p, uint64_t seed)
{
    nm_fault *f = &p->faults[0];
    nm_rng r;
    long at = p->nfaults > 0 ? f->at_ms : 1500, end;
    int i, k;

    nm_rng_seed(&r, seed ^ 0x7370726561640001ULL);
    if (p->deploy != NM_REDLOCK || !nm_rng_pct(&r, 30))
        return;
    memset(f, 0, sizeof *f);
    f->kind = NM_F_SPREAD;
    f->at_ms = at;
    /* Three distinct masters: the two killed together, then the third. */
    for (i = 0; i < 3; i++) {
        do
            f->spread[i] = (int)nm_rng_range(&r, 0, p->nnodes - 1);
        while ((i > 0 && f->spread[i] == f->spread[0]) || (i > 1 && f->spread[i] == f->spread[1]));
    }
    f->node = f->spread[0];
    f->arg = f->spread[1];
    f->dur_ms = nm_plan_lease_delay_max(p) + nm_rng_range(&r, 600, 1200);
    f->settle_ms = NM_SPREAD_SETTLE_MS + lease_max(p) + nm_rng_range(&r, 500, 1000);
    f->stop_third = nm_rng_pct(&r, 50);
    p->nfaults = 1;
    p->nthreads = 1;
    p->hold_ms_max = nm_rng_range(&r, f->settle_ms * 3 / 4, f->settle_ms);
    p->think_ms_max = p->hold_ms_max / 4;
    end = at + 2 * f->dur_ms + f->settle_ms + 1000;
    if (p->run_ms < end)
        p->run_ms = end;
    for (k = 0; k < p->nnames; k++)
        p->names[k].fixed = p->names[k].fixed && nm_rng_pct(&r, 50);
}

int nm_is_cluster(int deploy)
{
    return deploy == NM_CLUSTER || deploy == NM_CLUSTER_R;
}

int nm_wait_replicas(int deploy)
{
    /* Sentinel: a failover keeps what both replicas acknowledged; with one
     * replica, what it acknowledged. */
    return deploy == NM_SENTINEL ? 2 : deploy == NM_SINGLE_R || deploy == NM_CLUSTER_R;
}

void nm_plan_draw(nm_plan *p, uint64_t seed)
{
    nm_rng r;
    int i;

    memset(p, 0, sizeof *p);
    nm_rng_seed(&r, seed);
    p->seed = seed;
    p->nnames = (int)nm_rng_range(&r, 1, NM_NAMES_MAX);
    for (i = 0; i < p->nnames; i++)
        draw_name(&r, &p->names[i]);
    p->nprocs = (int)nm_rng_range(&r, 2, NM_PROCS_MAX);
    p->nthreads = (int)nm_rng_range(&r, 1, 4);
    p->depth_max = (int)nm_rng_range(&r, 1, 3);
    p->hold_ms_max = nm_rng_range(&r, 5, 150);
    p->think_ms_max = nm_rng_range(&r, 0, 100);
    p->run_ms = nm_rng_range(&r, 8000, 12000);
    p->proxied = nm_rng_pct(&r, 50) ? (int)nm_rng_range(&r, 0, p->nprocs - 1) : -1;
    draw_faults(&r, p);
    draw_worker_faults(p, seed);
    draw_deployment(p, seed);
    draw_long_holds(p, seed);
    draw_queue_profile(p, seed);
    draw_tls(p, seed);
    draw_tls_cs(p, seed);
    draw_sem_sets(p, seed);
    draw_plain_sets(p, seed);
    draw_spread(p, seed);
}

const char *nm_fault_name(int kind)
{
    static const char *const names[NM_F_KINDS] = {
        "srv_stop", "srv_kill_keep", "srv_kill_empty", "wrk_stop", "wrk_kill",
        "script_flush", "client_kill", "force_release", "px_stall", "px_drop", "px_cut",
        "migrate", "failover", "cluster_failover", "wrk_fork", "wrk_shutdown",
        "redlock_spread",
    };

    return kind >= 0 && kind < NM_F_KINDS ? names[kind] : "?";
}

void nm_name_of(char *buf, size_t cap, int i)
{
    snprintf(buf, cap, "n%d", i);
}

void nm_prefix_of(char *buf, size_t cap, uint64_t seed)
{
    snprintf(buf, cap, "nm:%llx:", (unsigned long long)seed);
}

void nm_plan_describe(const nm_plan *p, char *buf, size_t cap)
{
    static const char *const fam[] = { "plain", "fair", "rw", "sem" };
    size_t n;
    int i;

    static const char *const deploy[] = { "single", "redlock5", "cluster3", "sentinel3",
                                          "single+r", "cluster3x1" };

    n = (size_t)snprintf(buf, cap, "%s%s names=", deploy[p->deploy], p->tls ? "+tls" : "");
    for (i = 0; i < p->nnames && n < cap; i++) {
        const nm_name *m = &p->names[i];
        n += (size_t)snprintf(buf + n, cap - n, "%s%s(%s%s%ld", i ? "," : "",
                              fam[m->family], m->fencing ? "f," : "",
                              m->fixed ? "x" : "w", m->lease_ms);
        if (n < cap && m->delay_ms > 0)
            n += (size_t)snprintf(buf + n, cap - n, ",d%ld", m->delay_ms);
        if (n < cap && m->family == NM_SEM)
            n += (size_t)snprintf(buf + n, cap - n, ",N%d", m->permits);
        if (n < cap)
            n += (size_t)snprintf(buf + n, cap - n, ")");
    }
    if (n < cap)
        n += (size_t)snprintf(buf + n, cap - n, " procs=%dx%d depth=%d proxied=%d run=%ld",
                              p->nprocs, p->nthreads, p->depth_max, p->proxied, p->run_ms);
    if (n < cap && p->queue)
        n += (size_t)snprintf(buf + n, cap - n, " queue");
    if (n < cap && p->sets)
        n += (size_t)snprintf(buf + n, cap - n, " sets=%d%%", p->sets);
    if (n < cap && p->tls == NM_TLS_MUTUAL)
        snprintf(buf + n, cap - n, " mtls");
}
