/*
 * A worker process: one client per name (each name has its own options),
 * `nthreads` threads taking, writing under and releasing the names until the
 * run's end, every call recorded in the process's history file.
 *
 * Events (after "<ns> <thread>"):
 *   P start <pid> <gen> / P end            the process began / ended cleanly
 *   A <name> <side> <wait_ms> <lease_ms>   acquire invoked
 *   a <name> <side> <status> <count> <token>  ...returned (token -1: none)
 *   W <name> <side> <before> <t2_ns> <after>  a write: rl_interrupted() read at
 *                                          the line's time (before it) and just
 *                                          after t2_ns (after it)
 *   L <name> <side>                        release invoked
 *   l <name> <side> <status> <count>       ...returned
 *   S <name> <acq> <reent> <rel> <lost>    rl_client_stats at the end
 * Each line is one write() on an O_APPEND descriptor, so lines of threads
 * never mix and a SIGKILL leaves at most the last line cut short.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "nemesis.h"
#include "rlock.h"
#include "rt_util.h"

typedef struct nm_wk {
    nm_plan plan;
    int index, gen, fd;
    int64_t end_ns;
    rl_client *client[NM_NAMES_MAX];
    rl_lock *handle[NM_NAMES_MAX][3];   /* by side */
} nm_wk;

typedef struct nm_th {
    nm_wk *wk;
    int tid;
    nm_rng rng;
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

static void write_once(nm_th *th, int name, int side)
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
    rl_lock *h = th->wk->handle[name][side];
    long lease = n->fixed ? n->lease_ms : RL_LEASE_WATCHDOG;
    unsigned long long tok = 0;
    int st, count;
    long long token = -1;

    hist(th->wk, th->tid, "A %d %d %ld %ld", name, side, wait, lease);
    st = rl_lock_try_acquire(h, wait, lease);
    count = rl_lock_hold_count(h);
    if (st == RL_OK && n->fencing && rl_lock_token(&tok, h) == RL_OK)
        token = (long long)tok;
    hist(th->wk, th->tid, "a %d %d %d %d %lld", name, side, st, count, token);
    return st;
}

/* Release once; a release that sent nothing (RL_ECONN) is called again
 * until it is settled or the deadline passes. Returns the count left. */
static int release(nm_th *th, int name, int side)
{
    rl_lock *h = th->wk->handle[name][side];
    int64_t deadline = rt_now_ms() + 10000;
    int st, count;

    for (;;) {
        hist(th->wk, th->tid, "L %d %d", name, side);
        st = rl_lock_release(h);
        count = rl_lock_hold_count(h);
        hist(th->wk, th->tid, "l %d %d %d %d", name, side, st, count);
        if (st != RL_ECONN || count <= 0 || rt_now_ms() >= deadline)
            return count;
        rt_sleep_ms(50);
    }
}

static void section(nm_th *th)
{
    const nm_plan *p = &th->wk->plan;
    int name = (int)nm_rng_range(&th->rng, 0, p->nnames - 1);
    int side = NM_SIDE_EXCL, depth, level, k, writes;
    long wait = nm_rng_pct(&th->rng, 20) ? 0 : nm_rng_range(&th->rng, 100, 3000);

    if (p->names[name].family == NM_RW)
        side = nm_rng_pct(&th->rng, 60) ? NM_SIDE_READ : NM_SIDE_WRITE;
    depth = (int)nm_rng_range(&th->rng, 1, p->depth_max);
    writes = (int)nm_rng_range(&th->rng, 2, 4);
    for (level = 0; level < depth; level++) {
        if (acquire(th, name, side, wait) != RL_OK)
            break;
        write_once(th, name, side);
    }
    if (level == 0)
        return;
    for (k = 0; k < writes; k++) {
        nap(th, p->hold_ms_max);
        write_once(th, name, side);
    }
    /* One release per level; a release that leaves the count as it was
     * (RL_EPROTO, RL_EREDIS: flagged, unchanged) is not repeated forever. */
    for (k = 0; k <= depth + 1; k++) {
        if (release(th, name, side) <= 0)
            break;
        write_once(th, name, side);
    }
}

static void *thread_main(void *arg)
{
    nm_th *th = arg;

    while (nm_now_ns() < th->wk->end_ns) {
        section(th);
        nap(th, th->wk->plan.think_ms_max);
    }
    return NULL;
}

static int open_client(nm_wk *wk, int i, const char *url)
{
    const nm_name *n = &wk->plan.names[i];
    static const int kinds[3][3] = {
        { RL_KIND_PLAIN, -1, -1 }, { RL_KIND_FAIR, -1, -1 }, { -1, RL_KIND_READ, RL_KIND_WRITE }
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
        st = rl_lock_new_kind(&wk->handle[i][side], wk->client[i], name, strlen(name), kind);
        if (st != RL_OK) {
            fprintf(stderr, "rlnemesis worker: rl_lock_new_kind: %s\n", rl_strerror(st));
            return -1;
        }
    }
    return 0;
}

static void finish(nm_wk *wk)
{
    int i, side;

    for (i = 0; i < wk->plan.nnames; i++) {
        rl_stats s;
        memset(&s, 0, sizeof s);
        s.version = RL_STATS_VERSION;
        if (wk->client[i] != NULL && rl_client_stats(&s, wk->client[i]) == RL_OK)
            hist(wk, 0, "S %d %llu %llu %llu %llu", i, s.acquisitions, s.reentries,
                 s.releases,
                 s.lost_unconfirmed + s.lost_lease_ended + s.lost_gone + s.lost_forced +
                     s.lost_unresolved + s.lost_shutdown + s.lost_other);
        for (side = 0; side < 3; side++)
            rl_lock_free(wk->handle[i][side]);
        rl_client_free(wk->client[i]);
    }
}

int nm_worker_main(int argc, char **argv)
{
    static nm_wk wk;
    nm_th th[8];
    pthread_t tids[8];
    char path[512];
    int i;

    if (argc < 8)
        return 2;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != (pid_t)atol(argv[7]))
        return 2;
    nm_plan_draw(&wk.plan, strtoull(argv[1], NULL, 0));
    wk.index = atoi(argv[2]);
    wk.gen = atoi(argv[3]);
    wk.end_ns = strtoll(argv[6], NULL, 10);
    snprintf(path, sizeof path, "%s/w%d.%d.hist", argv[4], wk.index, wk.gen);
    wk.fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (wk.fd < 0)
        return 2;
    hist(&wk, 0, "P start %d %d", (int)getpid(), wk.gen);
    for (i = 0; i < wk.plan.nnames; i++)
        if (open_client(&wk, i, argv[5]) != 0)
            return 4;
    for (i = 0; i < wk.plan.nthreads; i++) {
        th[i].wk = &wk;
        th[i].tid = i + 1;
        nm_rng_seed(&th[i].rng, wk.plan.seed ^ ((uint64_t)(wk.index * 64 + wk.gen * 8 + i + 1)
                                                << 40));
        if (pthread_create(&tids[i], NULL, thread_main, &th[i]) != 0)
            return 5;
    }
    for (i = 0; i < wk.plan.nthreads; i++)
        pthread_join(tids[i], NULL);
    finish(&wk);
    hist(&wk, 0, "P end");
    close(wk.fd);
    return 0;
}
