/*
 * A worker process: one client per name (each name has its own options),
 * `nthreads` threads taking, writing under and releasing the names until the
 * run's end, every call recorded in the process's history file.
 *
 * Events (after "<ns> <thread>"):
 *   P start <pid> <gen> / P end            the process began / ended cleanly
 *   A <name> <side> <wait_ms> <lease_ms> <k>  acquire invoked (k: a semaphore's
 *                                          permits, 1 for the others)
 *   a <name> <side> <status> <count> <token> <slots>  ...returned (token -1:
 *                                none; slots: a fenced semaphore hold's, a mask)
 *   W <name> <side> <before> <t2_ns> <after>  a write: rl_interrupted() read at
 *                                          the line's time (before it) and just
 *                                          after t2_ns (after it)
 *   L <name> <side>                        release invoked
 *   l <name> <side> <status> <count>       ...returned
 *   B <n> <wait_ms> <lease_ms> {<name> <side> <count>}  a set of n members taken
 *                                          (rl_lockset_try_acquire), each with the
 *                                          hold count its thread had before
 *   b <status>                             ...returned, then one line a member:
 *   m <name> <side> <status> <count> -1    the set's status, the member's count after
 *   R <n>                                  the set released (rl_lockset_release)
 *   r <name> <side> <status> <count>       ...returned: the set's status, each
 *                                          member's count after
 *   S <name> <acq> <reent> <rel> <lost> <canceled> <lost_shutdown> <holds> <waiters>
 *                                          rl_client_stats at the end, or of a
 *                                          client shut down, before it is freed
 *                                          (the sets' client's: name NM_NAMES_MAX)
 *   I <name> <side> <v1> <v2> <v3>         rl_interrupted() read three times after
 *                                          a section whose client was shut down
 *   F fork <k> | F reap <k> <pid> <status> fork child k begun / reaped
 *   D <name> start | shut <rc> | free | new <rc>  a shutdown of the name's
 *                                          client: begun, returned, the old one
 *                                          freed (every call before this line
 *                                          went to it), a new one opened
 * A fork child writes w<index>.<gen>.c<k>.hist: "P child <parent pid>", then
 * "H <name> <side> <count>", the hold count of every inherited handle, then
 * sections and stats like any process. The worker's signal thread (sigwait,
 * SIGUSR1: fork, SIGUSR2: shut down a name's client) makes both.
 * Each line is one write() on an O_APPEND descriptor, so lines of threads
 * never mix and a SIGKILL leaves at most the last line cut short.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nemesis.h"
#include "rlock.h"
#include "rt_util.h"

/* One name's client as a shutdown swaps it: sections take its handles in
 * slot_enter() and leave in slot_leave(); the swap waits until none is in. */
typedef struct nm_slot {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int busy;          /* threads in a section on the current client */
    int swapping;      /* the client is being replaced: sections wait */
} nm_slot;

typedef struct nm_wk {
    nm_plan plan;
    int index, gen, fd;
    int64_t end_ns;
    const char *dir, *url;
    const char *tls_ca, *tls_crt, *tls_key;  /* TLS runs: the CA; a client's (mutual) */
    rl_client *client[NM_NAMES_MAX];
    rl_lock *handle[NM_NAMES_MAX][3];   /* by side (a semaphore's: side 0) */
    rl_client *set_client;              /* the sets' members' (plan.sets) */
    rl_lock *set_handle[NM_NAMES_MAX][3];
    nm_slot slot[NM_NAMES_MAX];
    int nforks, failed;
    atomic_int stop;                    /* the signal thread ends */
} nm_wk;

typedef struct nm_th {
    nm_wk *wk;
    int tid;
    nm_rng rng;
    rl_lock *h;                         /* the section's handle */
    int64_t wait_end;                   /* a fork child: no wait past it (0: none) */
    int last_st;                        /* the status of its last release */
    int k;                              /* a semaphore section's permits */
} nm_th;

static void hist(nm_wk *wk, int tid, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void hist(nm_wk *wk, int tid, const char *fmt, ...)
{
    char line[256];
    int n = snprintf(line, sizeof line, "%lld %d ", (long long)nm_now_ns(), tid);
    va_list ap;

    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    line[n++] = '\n';
    if (write(wk->fd, line, (size_t)n) != n)
        _exit(3);
}

/* Returns whether either check saw the flag. */
static int write_once(nm_th *th, int name, int side)
{
    int64_t t1 = nm_now_ns(), t2;
    int before = rl_interrupted(), after;

    /* The write itself is this record: the resource is the history. The
     * time t2 is read before the after-check, so that a pause between them
     * can only shorten the interval the checker credits. */
    t2 = nm_now_ns();
    after = rl_interrupted();
    {
        char line[160];
        int n = snprintf(line, sizeof line, "%lld %d W %d %d %d %lld %d\n", (long long)t1,
                         th->tid, name, side, before, (long long)t2, after);
        if (write(th->wk->fd, line, (size_t)n) != n)
            _exit(3);
    }
    return before || after;
}

static void nap(nm_th *th, long max_ms)
{
    long ms = max_ms > 0 ? nm_rng_range(&th->rng, 0, max_ms) : 0;

    if (ms > 0)
        rt_sleep_ms(ms);
}

static int acquire(nm_th *th, int name, int side, long wait)
{
    const nm_name *n = &th->wk->plan.names[name];
    rl_lock *h = th->h;
    long lease = n->fixed ? n->lease_ms : RL_LEASE_WATCHDOG;
    unsigned long long tok = 0;
    unsigned slots[16], ns = 0, i, mask = 0;
    int st, count;
    long long token = -1;

    hist(th->wk, th->tid, "A %d %d %ld %ld %d", name, side, wait, lease, th->k);
    if (n->family == NM_SEM)
        st = rl_semaphore_acquire(h, (unsigned)th->k, wait, lease);
    else
        st = rl_lock_try_acquire(h, wait, lease);
    count = rl_lock_hold_count(h);
    if (st == RL_OK && n->fencing && rl_lock_token(&tok, h) == RL_OK)
        token = (long long)tok;
    /* A fenced semaphore hold's permit slots (0..N-1, N <= 4), as a mask. */
    if (st == RL_OK && n->fencing && n->family == NM_SEM &&
        rl_semaphore_slots(h, slots, 16, &ns) == RL_OK)
        for (i = 0; i < ns; i++)
            mask |= 1u << (slots[i] & 31);
    hist(th->wk, th->tid, "a %d %d %d %d %lld %u", name, side, st, count, token, mask);
    return st;
}

/* Release once; a release that sent nothing (RL_ECONN) is called again
 * until it is settled or the deadline passes. Returns the count left. */
static int release(nm_th *th, int name, int side)
{
    rl_lock *h = th->h;
    int64_t deadline = rt_now_ms() + 10000;
    int st, count;

    for (;;) {
        hist(th->wk, th->tid, "L %d %d", name, side);
        st = rl_lock_release(h);
        count = rl_lock_hold_count(h);
        hist(th->wk, th->tid, "l %d %d %d %d", name, side, st, count);
        th->last_st = st;
        if (st != RL_ECONN || count <= 0 || rt_now_ms() >= deadline)
            return count;
        rt_sleep_ms(50);
    }
}

static rl_lock *slot_enter(nm_wk *wk, int name, int side)
{
    nm_slot *s = &wk->slot[name];
    rl_lock *h;

    pthread_mutex_lock(&s->mu);
    while (s->swapping)
        pthread_cond_wait(&s->cond, &s->mu);
    s->busy++;
    h = wk->handle[name][side];
    pthread_mutex_unlock(&s->mu);
    return h;
}

static void slot_leave(nm_wk *wk, int name)
{
    nm_slot *s = &wk->slot[name];

    pthread_mutex_lock(&s->mu);
    if (--s->busy == 0)
        pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mu);
}

/* A hold's client was shut down: the flag must be seen once, then the
 * stale hold forgotten. */
static void read_flags(nm_th *th, int name, int side)
{
    int v1 = rl_interrupted(), v2 = rl_interrupted(), v3 = rl_interrupted();

    hist(th->wk, th->tid, "I %d %d %d %d %d", name, side, v1, v2, v3);
}

/* The writes of a held section, then one release per level. No write
 * follows one that saw the flag (after a shutdown the flag is seen once,
 * and later writes would look clean). */
static void hold_and_release(nm_th *th, int name, int side, int depth, int writes, int flagged)
{
    const nm_plan *p = &th->wk->plan;
    int k, count = 0;

    for (k = 0; k < writes && !flagged; k++) {
        nap(th, p->hold_ms_max);
        flagged = write_once(th, name, side);
    }
    /* One release per level; a release that leaves the count as it was
     * (RL_EPROTO, RL_EREDIS: flagged, unchanged) is not repeated forever. */
    for (k = 0; k <= depth + 1; k++) {
        if ((count = release(th, name, side)) <= 0)
            break;
        if (!flagged)
            flagged = write_once(th, name, side);
    }
    if (th->last_st == RL_EINVAL || th->last_st == RL_ECANCELED)   /* shut down */
        read_flags(th, name, side);
}

static void section(nm_th *th)
{
    const nm_plan *p = &th->wk->plan;
    int name = (int)nm_rng_range(&th->rng, 0, p->nnames - 1);
    int side = NM_SIDE_EXCL, depth, level, writes, flagged = 0;
    long wait = nm_rng_pct(&th->rng, 20) ? 0 : nm_rng_range(&th->rng, 100, 3000);

    if (p->names[name].family == NM_RW)
        side = nm_rng_pct(&th->rng, 60) ? NM_SIDE_READ : NM_SIDE_WRITE;
    th->k = p->names[name].family == NM_SEM ? (int)nm_rng_range(&th->rng, 1, p->names[name].permits)
                                            : 1;
    depth = (int)nm_rng_range(&th->rng, 1, p->depth_max);
    writes = (int)nm_rng_range(&th->rng, 2, 4);
    if (th->wait_end > 0) {         /* a fork child: its own handles, a deadline */
        int64_t left = (th->wait_end - nm_now_ns()) / 1000000;
        wait = wait < left ? wait : left > 0 ? (long)left : 0;
        th->h = th->wk->handle[name][side];
    } else {
        th->h = slot_enter(th->wk, name, side);
    }
    for (level = 0; level < depth; level++) {
        if (acquire(th, name, side, wait) != RL_OK)
            break;
        if (!flagged)
            flagged = write_once(th, name, side);
    }
    if (level > 0)
        hold_and_release(th, name, side, depth, writes, flagged);
    if (th->wait_end == 0)
        slot_leave(th->wk, name);
}

/* The members of a set: 2..3 distinct names a set can take, each with a
 * side (a read-write name's drawn); their count. */
static int draw_members(nm_th *th, int *names, int *sides)
{
    const nm_plan *p = &th->wk->plan;
    int pool[NM_NAMES_MAX], npool = 0, n, i, want;

    for (i = 0; i < p->nnames; i++)
        if (nm_set_member(p, i))
            pool[npool++] = i;
    want = (int)nm_rng_range(&th->rng, 2, npool);
    for (n = 0; n < want; n++) {
        int j = (int)nm_rng_range(&th->rng, n, npool - 1), t = pool[n];
        pool[n] = pool[j];
        pool[j] = t;
        names[n] = pool[n];
        sides[n] = p->names[pool[n]].family != NM_RW ? NM_SIDE_EXCL
                   : nm_rng_pct(&th->rng, 60) ? NM_SIDE_READ : NM_SIDE_WRITE;
    }
    return want;
}

/* The call's status and every member's hold count after it. */
static void members_line(nm_th *th, char ev, int st, rl_lock **hs, const int *names,
                         const int *sides, int n)
{
    int i;

    for (i = 0; i < n; i++)
        hist(th->wk, th->tid, ev == 'm' ? "m %d %d %d %d -1" : "r %d %d %d %d", names[i],
             sides[i], st, rl_lock_hold_count(hs[i]));
}

/* Writes under every member of a set taken; stops after a flagged one. */
static void set_writes(nm_th *th, const int *names, const int *sides, int n)
{
    int k, i, writes = (int)nm_rng_range(&th->rng, 2, 4), flagged = 0;

    for (k = 0; k < writes && !flagged; k++) {
        nap(th, th->wk->plan.hold_ms_max);
        for (i = 0; i < n && !flagged; i++)
            flagged = write_once(th, names[i], sides[i]);
    }
}

/* A section on a set: take it (a watchdog lease of the sets' client, no
 * longer than any member's own), write under every member, release it. */
static void set_section(nm_th *th)
{
    nm_wk *wk = th->wk;
    int names[NM_NAMES_MAX], sides[NM_NAMES_MAX], n = draw_members(th, names, sides), i, st;
    long wait = nm_rng_pct(&th->rng, 20) ? 0 : nm_rng_range(&th->rng, 100, 3000);
    rl_lock *hs[NM_NAMES_MAX];
    rl_lockset *set;
    char line[160];
    int len;

    len = snprintf(line, sizeof line, "B %d %ld %ld", n, wait, (long)RL_LEASE_WATCHDOG);
    for (i = 0; i < n; i++) {
        hs[i] = wk->set_handle[names[i]][sides[i]];
        len += snprintf(line + len, sizeof line - (size_t)len, " %d %d %d", names[i], sides[i],
                        rl_lock_hold_count(hs[i]));
    }
    if (rl_lockset_new(&set, hs, (size_t)n) != RL_OK) {
        wk->failed = 1;
        return;
    }
    hist(wk, th->tid, "%s", line);
    st = rl_lockset_try_acquire(set, wait, RL_LEASE_WATCHDOG);
    hist(wk, th->tid, "b %d", st);
    members_line(th, 'm', st, hs, names, sides, n);
    if (st == RL_OK) {
        set_writes(th, names, sides, n);
        hist(wk, th->tid, "R %d", n);
        st = rl_lockset_release(set);
        members_line(th, 'r', st, hs, names, sides, n);
    }
    rl_lockset_free(set);
}

static void *thread_main(void *arg)
{
    nm_th *th = arg;

    while (nm_now_ns() < th->wk->end_ns) {
        if (th->wk->plan.sets > 0 && nm_rng_pct(&th->rng, th->wk->plan.sets))
            set_section(th);
        else
            section(th);
        nap(th, th->wk->plan.think_ms_max);
    }
    return NULL;
}

static int open_client(nm_wk *wk, int i, const char *url)
{
    const nm_name *n = &wk->plan.names[i];
    static const int kinds[4][3] = {
        { RL_KIND_PLAIN, -1, -1 }, { RL_KIND_FAIR, -1, -1 }, { -1, RL_KIND_READ, RL_KIND_WRITE },
        { RL_KIND_SEMAPHORE, -1, -1 }
    };
    char prefix[64], name[16];
    rl_options o;
    int64_t deadline = rt_now_ms() + 15000;
    int st, side;

    nm_prefix_of(prefix, sizeof prefix, wk->plan.seed);
    nm_name_of(name, sizeof name, i);
    rl_options_init(&o, RL_OPTIONS_VERSION);
    o.url = url;
    o.key_prefix = prefix;
    o.lease_ms = n->lease_ms;
    o.fencing = n->fencing;
    o.lock_delay_ms = n->delay_ms;
    o.wait_replicas = nm_wait_replicas(wk->plan.deploy);
    o.tls_ca_file = wk->tls_ca;
    o.tls_cert_file = wk->tls_crt;
    o.tls_key_file = wk->tls_key;
    /* A worker that replaces a killed one may start during a fault. */
    while ((st = rl_client_new(&wk->client[i], &o)) == RL_ECONN && rt_now_ms() < deadline)
        rt_sleep_ms(100);
    if (st != RL_OK) {
        fprintf(stderr, "rlnemesis worker %d: rl_client_new: %s\n", wk->index, rl_strerror(st));
        return -1;
    }
    for (side = 0; side < 3; side++) {
        int kind = kinds[n->family][side];
        if (kind < 0)
            continue;
        if (kind == RL_KIND_SEMAPHORE)
            st = rl_semaphore_new(&wk->handle[i][side], wk->client[i], name, strlen(name),
                                  (unsigned)n->permits);
        else
            st = rl_lock_new_kind(&wk->handle[i][side], wk->client[i], name, strlen(name),
                                  kind);
        if (st != RL_OK) {
            fprintf(stderr, "rlnemesis worker: rl_lock_new_kind: %s\n", rl_strerror(st));
            return -1;
        }
    }
    return 0;
}

/* The sets' client: no fencing or lock-delay (its members have none), a
 * watchdog lease no longer than any member's own (the checker reckons
 * with each name's lease), a handle for every side of every member name. */
static int open_set_client(nm_wk *wk)
{
    static const int kinds[3][3] = {
        { RL_KIND_PLAIN, -1, -1 }, { RL_KIND_FAIR, -1, -1 }, { -1, RL_KIND_READ, RL_KIND_WRITE }
    };
    const nm_plan *p = &wk->plan;
    char prefix[64], name[16];
    rl_options o;
    int64_t deadline = rt_now_ms() + 15000;
    int st, i, side;

    nm_prefix_of(prefix, sizeof prefix, p->seed);
    rl_options_init(&o, RL_OPTIONS_VERSION);
    o.url = wk->url;
    o.key_prefix = prefix;
    o.lease_ms = 0;
    for (i = 0; i < p->nnames; i++)
        if (nm_set_member(p, i) && (o.lease_ms == 0 || p->names[i].lease_ms < o.lease_ms))
            o.lease_ms = p->names[i].lease_ms;
    o.wait_replicas = nm_wait_replicas(p->deploy);
    o.tls_ca_file = wk->tls_ca;
    o.tls_cert_file = wk->tls_crt;
    o.tls_key_file = wk->tls_key;
    while ((st = rl_client_new(&wk->set_client, &o)) == RL_ECONN && rt_now_ms() < deadline)
        rt_sleep_ms(100);
    if (st != RL_OK)
        return -1;
    for (i = 0; i < p->nnames; i++)
        for (side = 0; side < 3 && nm_set_member(p, i); side++) {
            int kind = kinds[p->names[i].family][side];
            nm_name_of(name, sizeof name, i);
            if (kind >= 0 && rl_lock_new_kind(&wk->set_handle[i][side], wk->set_client, name,
                                              strlen(name), kind) != RL_OK)
                return -1;
        }
    return 0;
}

static void stats_line(nm_wk *wk, int tid, int i)
{
    rl_client *c = i < NM_NAMES_MAX ? wk->client[i] : wk->set_client;
    rl_stats s;

    memset(&s, 0, sizeof s);
    s.version = RL_STATS_VERSION;
    if (c != NULL && rl_client_stats(&s, c) == RL_OK)
        hist(wk, tid, "S %d %llu %llu %llu %llu %llu %llu %llu %llu", i, s.acquisitions,
             s.reentries, s.releases,
             s.lost_unconfirmed + s.lost_lease_ended + s.lost_gone + s.lost_forced +
                 s.lost_unresolved + s.lost_shutdown + s.lost_other,
             s.cancellations, s.lost_shutdown, s.holds, s.waiters);
}

static void close_client(nm_wk *wk, int i)
{
    int side;

    for (side = 0; side < 3; side++) {
        rl_lock_free(wk->handle[i][side]);
        wk->handle[i][side] = NULL;
    }
    rl_client_free(wk->client[i]);
    wk->client[i] = NULL;
}

static void finish(nm_wk *wk)
{
    int i;

    for (i = 0; i < wk->plan.nnames; i++) {
        stats_line(wk, 0, i);
        close_client(wk, i);
    }
    if (wk->set_client == NULL)
        return;
    stats_line(wk, 0, NM_NAMES_MAX);
    for (i = 0; i < NM_NAMES_MAX * 3; i++) {
        rl_lock_free(wk->set_handle[i / 3][i % 3]);
        wk->set_handle[i / 3][i % 3] = NULL;
    }
    rl_client_free(wk->set_client);
    wk->set_client = NULL;
}

/* SIGUSR2: shut name i's client down while its threads wait, hold and
 * release through it; once none is in a section on it, record its stats,
 * free it and open a new one, so that the run goes on. */
static void shutdown_name(nm_wk *wk, int tid, int i)
{
    nm_slot *s = &wk->slot[i];
    int rc;

    if (i < 0 || i >= wk->plan.nnames)
        return;
    hist(wk, tid, "D %d start", i);
    rc = rl_client_shutdown(wk->client[i]);
    hist(wk, tid, "D %d shut %d", i, rc);
    pthread_mutex_lock(&s->mu);
    s->swapping = 1;
    while (s->busy > 0)
        pthread_cond_wait(&s->cond, &s->mu);
    pthread_mutex_unlock(&s->mu);
    stats_line(wk, tid, i);
    close_client(wk, i);
    hist(wk, tid, "D %d free", i);
    rc = open_client(wk, i, wk->url);
    hist(wk, tid, "D %d new %d", i, rc);
    if (rc != 0)
        wk->failed = 1;
    pthread_mutex_lock(&s->mu);
    s->swapping = 0;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mu);
}

/* The fork child k: a new owner. It must see hold count 0 on every
 * inherited handle, then takes names through the inherited clients (the
 * library rebuilds them), records all of it in its own history and ends. */
static void child_main(nm_wk *wk, int tid, int k, long budget_ms)
{
    char path[600];
    nm_th th;
    int i, side, n;

    snprintf(path, sizeof path, "%s/w%d.%d.c%d.hist", wk->dir, wk->index, wk->gen, k);
    close(wk->fd);
    if ((wk->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) < 0)
        _exit(2);
    hist(wk, 0, "P start %d %d", (int)getpid(), wk->gen);
    hist(wk, 0, "P child %d", (int)getppid());
    for (i = 0; i < wk->plan.nnames; i++)
        for (side = 0; side < 3; side++) {
            if (wk->handle[i][side] != NULL)
                hist(wk, tid, "H %d %d %d", i, side, rl_lock_hold_count(wk->handle[i][side]));
            if (wk->set_handle[i][side] != NULL)
                hist(wk, tid, "H %d %d %d", i, side,
                     rl_lock_hold_count(wk->set_handle[i][side]));
        }
    memset(&th, 0, sizeof th);
    th.wk = wk;
    th.tid = tid;
    th.wait_end = nm_now_ns() + (int64_t)budget_ms * 1000000;
    nm_rng_seed(&th.rng, wk->plan.seed ^ ((uint64_t)(wk->index * 64 + wk->gen * 8 + k + 1) << 48));
    for (n = 0; n < 2 && nm_now_ns() < th.wait_end; n++)
        section(&th);
    finish(wk);
    hist(wk, 0, "P end");
    _exit(0);
}

/* SIGUSR1: fork while the other threads hold and wait, and while the
 * forking thread itself holds a name if it can take one within 1 s (the
 * child's copy of this thread must hold nothing); reap the child, then
 * write and release as any holder. */
static void fork_child(nm_wk *wk, int tid, long budget_ms)
{
    const nm_plan *p = &wk->plan;
    int k = wk->nforks++, st = 0, name = (wk->index + k) % p->nnames, held, flagged = 0;
    int side = p->names[name].family == NM_RW ? NM_SIDE_WRITE : NM_SIDE_EXCL;
    nm_th th;
    pid_t pid;

    memset(&th, 0, sizeof th);
    th.wk = wk;
    th.tid = tid;
    th.k = 1;
    th.h = slot_enter(wk, name, side);
    if ((held = acquire(&th, name, side, 1000) == RL_OK))
        flagged = write_once(&th, name, side);
    hist(wk, tid, "F fork %d", k);
    pid = fork();
    if (pid == 0)
        child_main(wk, tid, k, budget_ms);
    while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    hist(wk, tid, "F reap %d %d %d", k, (int)pid, pid > 0 ? st : errno);
    if (held)
        hold_and_release(&th, name, side, 1, 1, flagged);
    slot_leave(wk, name);
}

/* The signal thread: SIGUSR1 and SIGUSR2 are blocked in every thread (the
 * controller spawns workers with them blocked), taken here by sigwait. */
static void *signal_main(void *arg)
{
    nm_wk *wk = arg;
    int tid = wk->plan.nthreads + 1;
    siginfo_t si;
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    for (;;) {
        if (sigwaitinfo(&set, &si) < 0)
            continue;
        if (atomic_load(&wk->stop))
            return NULL;
        if (si.si_code != SI_QUEUE)
            continue;
        if (si.si_signo == SIGUSR1)
            fork_child(wk, tid, si.si_value.sival_int);
        else
            shutdown_name(wk, tid, si.si_value.sival_int);
    }
}

static void stop_signal_thread(nm_wk *wk, pthread_t t)
{
    atomic_store(&wk->stop, 1);
    pthread_kill(t, SIGUSR1);
    pthread_join(t, NULL);
}

int nm_worker_main(int argc, char **argv)
{
    static nm_wk wk;
    nm_th th[8];
    pthread_t tids[8], sigtid;
    char path[512];
    sigset_t set;
    int i;

    if (argc < 8)
        return 2;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != (pid_t)atol(argv[7]))
        return 2;
    nm_plan_draw(&wk.plan, strtoull(argv[1], NULL, 0));
    wk.index = atoi(argv[2]);
    wk.gen = atoi(argv[3]);
    wk.end_ns = strtoll(argv[6], NULL, 10);
    wk.dir = argv[4];
    wk.url = argv[5];
    if (argc >= 11) {          /* TLS: the CA, a client certificate and key or "-" */
        wk.tls_ca = argv[8];
        wk.tls_crt = strcmp(argv[9], "-") != 0 ? argv[9] : NULL;
        wk.tls_key = strcmp(argv[10], "-") != 0 ? argv[10] : NULL;
    }
    snprintf(path, sizeof path, "%s/w%d.%d.hist", argv[4], wk.index, wk.gen);
    wk.fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (wk.fd < 0)
        return 2;
    hist(&wk, 0, "P start %d %d", (int)getpid(), wk.gen);
    for (i = 0; i < wk.plan.nnames; i++) {
        pthread_mutex_init(&wk.slot[i].mu, NULL);
        pthread_cond_init(&wk.slot[i].cond, NULL);
        if (open_client(&wk, i, argv[5]) != 0)
            return 4;
    }
    if (wk.plan.sets > 0 && open_set_client(&wk) != 0) {
        fprintf(stderr, "rlnemesis worker %d: the sets' client\n", wk.index);
        return 4;
    }
    if (pthread_create(&sigtid, NULL, signal_main, &wk) != 0)
        return 5;
    for (i = 0; i < wk.plan.nthreads; i++) {
        memset(&th[i], 0, sizeof th[i]);
        th[i].wk = &wk;
        th[i].tid = i + 1;
        nm_rng_seed(&th[i].rng, wk.plan.seed ^ ((uint64_t)(wk.index * 64 + wk.gen * 8 + i + 1)
                                                << 40));
        if (pthread_create(&tids[i], NULL, thread_main, &th[i]) != 0)
            return 5;
    }
    for (i = 0; i < wk.plan.nthreads; i++)
        pthread_join(tids[i], NULL);
    stop_signal_thread(&wk, sigtid);
    finish(&wk);
    hist(&wk, 0, "P end");
    close(wk.fd);
    return wk.failed ? 4 : 0;
}
