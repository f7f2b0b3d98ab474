/*
 * watchdog and watchdog_cluster: the cost of one renewal tick.
 *
 * One process holds K locks with 3 s leases. The watchdog thread's CPU
 * clock, sampled every millisecond, shows its ticks: wall and CPU time per
 * tick, EVALSHA calls, round trips (write syscalls) and server time per
 * tick; then every lock must still be held, and once all are released the
 * watchdog must use no CPU. On the cluster: one round trip per master per
 * tick, and the tick's times as ratios to the single server's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "bench.h"

/* Task ids of this process. */
static int list_tasks(pid_t *out, int max)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *de;
    int n = 0;

    if (!d)
        return 0;
    while ((de = readdir(d)) != NULL && n < max)
        if (de->d_name[0] != '.')
            out[n++] = (pid_t)atoi(de->d_name);
    closedir(d);
    return n;
}

typedef struct tstat {
    unsigned long long cpu_ns;     /* schedstat: time on CPU */
    unsigned long long ticks;      /* stat: utime + stime, clock ticks */
    unsigned long long vcs;        /* voluntary context switches */
    unsigned long long syscr, syscw;
} tstat;

static unsigned long long task_cpu_ns(int fd)
{
    char buf[128];
    ssize_t k = pread(fd, buf, sizeof buf - 1, 0);

    if (k <= 0)
        return 0;
    buf[k] = '\0';
    return strtoull(buf, NULL, 10);
}

static void task_stat(pid_t tid, tstat *o)
{
    char path[64], buf[2048], *p;
    int i;

    memset(o, 0, sizeof *o);
    snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", (int)tid);
    if (bn_read_file(path, buf, sizeof buf) == 0)
        o->cpu_ns = strtoull(buf, NULL, 10);
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    if (bn_read_file(path, buf, sizeof buf) == 0 && (p = strrchr(buf, ')')) != NULL) {
        /* After the comm: state is field 3; utime 14, stime 15. */
        unsigned long long ut = 0, stt = 0;
        char *save = NULL, *tok = strtok_r(p + 1, " ", &save);
        for (i = 3; tok && i <= 15; i++, tok = strtok_r(NULL, " ", &save)) {
            if (i == 14)
                ut = strtoull(tok, NULL, 10);
            if (i == 15)
                stt = strtoull(tok, NULL, 10);
        }
        o->ticks = ut + stt;
    }
    snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)tid);
    if (bn_read_file(path, buf, sizeof buf) == 0 && (p = strstr(buf, "\nvoluntary_ctxt_switches:")))
        o->vcs = strtoull(p + 25, NULL, 10);
    snprintf(path, sizeof path, "/proc/self/task/%d/io", (int)tid);
    if (bn_read_file(path, buf, sizeof buf) == 0) {
        if ((p = strstr(buf, "syscr:")))
            o->syscr = strtoull(p + 6, NULL, 10);
        if ((p = strstr(buf, "syscw:")))
            o->syscw = strtoull(p + 6, NULL, 10);
    }
}

typedef struct wdworker {
    pthread_t th;
    rl_lock **locks;
    int n;
    pthread_barrier_t *held, *release;
    int errors;
} wdworker;

static void *wd_thread(void *arg)
{
    wdworker *w = arg;
    int i, st;

    for (i = 0; i < w->n; i++)
        if ((st = rl_lock_acquire(w->locks[i])) != RL_OK) {
            bn_fail("watchdog acquire", st);
            w->errors++;
        }
    pthread_barrier_wait(w->held);
    pthread_barrier_wait(w->release);
    for (i = 0; i < w->n; i++)
        if (rl_lock_hold_count(w->locks[i]) > 0 && (st = rl_lock_release(w->locks[i])) != RL_OK) {
            bn_fail("watchdog release", st);
            w->errors++;
        }
    return NULL;
}

/*
 * Take `first`, the client's first lock: the keeper thread starts, then the
 * watchdog thread (watchdog.c). Both are new tasks of this process; the
 * watchdog is the later one (task ids grow). Returns the watchdog's
 * schedstat, open; its id in *wd, the keeper's (or 0) in *keeper.
 */
int bn_wd_first_acquire(rl_lock *first, pid_t *wd, pid_t *keeper)
{
    pid_t before[256], after[256], fresh[4];
    int nbefore, nafter, nfresh = 0, i, j, st, fd;
    char path[64];

    nbefore = list_tasks(before, 256);
    if ((st = rl_lock_acquire(first)) != RL_OK)
        bn_die("watchdog: first acquire: %s", rl_strerror(st));
    nafter = list_tasks(after, 256);
    for (i = 0; i < nafter && nfresh < 4; i++) {
        int seen = 0;
        for (j = 0; j < nbefore; j++)
            if (after[i] == before[j])
                seen = 1;
        if (!seen)
            fresh[nfresh++] = after[i];
    }
    if (nfresh < 1)
        bn_die("watchdog: cannot find the watchdog thread");
    *wd = fresh[0];
    for (i = 1; i < nfresh; i++)
        *wd = fresh[i] > *wd ? fresh[i] : *wd;
    if (keeper)
        for (*keeper = 0, i = 0; i < nfresh; i++)
            *keeper = fresh[i] != *wd && fresh[i] > *keeper ? fresh[i] : *keeper;
    snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", (int)*wd);
    if ((fd = open(path, O_RDONLY)) < 0)
        bn_die("watchdog: open %s: %s", path, strerror(errno));
    return fd;
}

/*
 * Watch the watchdog thread's CPU clock every millisecond. A tick is a burst
 * of CPU use; it ends after `quiet_ms` without any. Returns when `want`
 * bursts have ended or `limit_ms` passed; fills walls (ms) and cpus (ms).
 */
int bn_watch_bursts(int fd, int want, long quiet_ms, long limit_ms, double *walls, double *cpus)
{
    int64_t t_end = bn_now_ns() + limit_ms * 1000000, prev_t = bn_now_ns(), burst_start = 0, last_change = 0;
    unsigned long long cpu = task_cpu_ns(fd), cpu_start = 0;
    int in = 0, got = 0;

    while (got < want && bn_now_ns() < t_end) {
        unsigned long long c2;
        int64_t t;
        bn_sleep_us(1000);
        t = bn_now_ns();
        c2 = task_cpu_ns(fd);
        if (c2 != cpu) {
            if (!in) {
                in = 1;
                burst_start = prev_t;     /* it began after the previous sample */
                cpu_start = cpu;
            }
            last_change = t;
            cpu = c2;
        } else if (in && t - last_change > quiet_ms * 1000000) {
            walls[got] = (double)(last_change - burst_start) / 1e6;
            cpus[got] = (double)(cpu - cpu_start) / 1e6;
            got++;
            in = 0;
        }
        prev_t = t;
    }
    return got;
}

/*
 * Round trips per tick: the watchdog writes each master's renewal calls in
 * one write (a blocking socket takes the whole pipelined batch), then reads
 * that master's replies: one round trip per write. Its writes in the
 * window, less the slot-map refreshes (CLUSTER SLOTS, every 30 s) that may
 * fall in it, per tick.
 */
bn_wdres bn_run_watchdog(const bn_target *tg, int k, int nthreads, const bn_wdres *single)
{
    enum { TICKS = 3 };
    int cluster = tg == &bn_cluster;
    rl_client *c = bn_make_client_at(tg->url, 3000, 0);
    redisContext *cs[BN_NODES_MAX];
    rl_lock **locks = bn_xmalloc(sizeof *locks * (size_t)k);
    wdworker *w = calloc((size_t)nthreads, sizeof *w);
    bn_cstats *a = bn_xmalloc(sizeof *a), *b = bn_xmalloc(sizeof *b);
    bn_cstats *na = bn_xmalloc(sizeof *na * (size_t)tg->n), *nb = bn_xmalloc(sizeof *nb * (size_t)tg->n);
    pid_t wd_tid = 0;
    int i, j, st, per, got, fd, errors = 0, answered = 0, masters_renewed = 0, syscalls_seen;
    pthread_barrier_t held, release;
    double walls[TICKS + 1], cpus[TICKS + 1], wall_max = 0, wall_sum = 0, cpu_sum = 0, idle_dummy[1];
    double round_trips = 0, server_ms_max = 0;
    int64_t t0, t_acq, t_rel;
    tstat s0, s1, i0, i1;
    bn_cmdacct ca;
    long long min_pttl = -3, evalsha_usec0, evalsha_usec1, ev0, ev1, refreshes;
    bn_targets t = { .any = 0 };
    bn_rec r = { .n = 0 };
    bn_wdres out = { NULL, 0, 0, 0, 0 };
    char by_master[200] = "";

    if (!w)
        bn_die("out of memory");
    bn_tg_connect_all(tg, cs);
    for (i = 0; i < k; i++)
        locks[i] = bn_make_lock(c, "wd:%s:%s:%d", bn_run, tg->mode, i);

    fd = bn_wd_first_acquire(locks[0], &wd_tid, NULL);

    /* Take the other K-1 locks with a few threads, and keep them. */
    pthread_barrier_init(&held, NULL, (unsigned)nthreads + 1);
    pthread_barrier_init(&release, NULL, (unsigned)nthreads + 1);
    per = (k - 1 + nthreads - 1) / nthreads;
    t0 = bn_now_ns();
    for (i = 0; i < nthreads; i++) {
        int first = 1 + i * per;
        w[i].locks = locks + first;
        w[i].n = first >= k ? 0 : (first + per > k ? k - first : per);
        w[i].held = &held;
        w[i].release = &release;
        if (pthread_create(&w[i].th, NULL, wd_thread, &w[i]) != 0)
            bn_die("pthread_create");
    }
    pthread_barrier_wait(&held);
    t_acq = bn_now_ns() - t0;

    /* Wait for a quiet moment, then observe TICKS complete renewal ticks. */
    bn_watch_bursts(fd, 1, 150, 1500, walls, cpus);
    task_stat(wd_tid, &s0);
    bn_tg_stats(tg, cs, na, a);
    got = bn_watch_bursts(fd, TICKS, 150, 1000L * (TICKS + 3), walls, cpus);
    bn_tg_stats(tg, cs, nb, b);
    task_stat(wd_tid, &s1);
    bn_cs_account(a, b, &ca);
    ev0 = bn_cs_calls(a, "evalsha", &evalsha_usec0);
    ev1 = bn_cs_calls(b, "evalsha", &evalsha_usec1);
    refreshes = bn_cs_calls(b, "cluster", NULL) - bn_cs_calls(a, "cluster", NULL);
    for (i = 0; i < got; i++) {
        wall_sum += walls[i];
        cpu_sum += cpus[i];
        if (walls[i] > wall_max)
            wall_max = walls[i];
    }
    if (got)
        round_trips = (double)((long long)(s1.syscw - s0.syscw) - refreshes) / got;
    /* TLS sends and receives with send(2) and recv(2), which the task's
     * syscw and syscr do not count: no round trips to tell then. */
    syscalls_seen = s1.syscw != s0.syscw || ev1 == ev0;
    /* Per master: its renewal calls per tick, and its server time (the
     * masters run their share at the same time: the largest one counts). */
    for (i = 0; i < tg->n; i++) {
        long long u0, u1, calls = bn_cs_calls(&nb[i], "evalsha", &u1) - bn_cs_calls(&na[i], "evalsha", &u0);
        size_t l = strlen(by_master);
        snprintf(by_master + l, sizeof by_master - l, "%s%.1f", i ? "/" : "",
                 got ? (double)calls / got : 0);
        masters_renewed += calls > 0;
        if (got && (double)(u1 - u0) / 1e3 / got > server_ms_max)
            server_ms_max = (double)(u1 - u0) / 1e3 / got;
    }

    /* Every lock must still be held: the leases (3 s) were renewed. Each
     * master answers for its own keys (the others say MOVED). */
    for (j = 0; j < tg->n; j++) {
        for (i = 0; i < k; i++)
            redisAppendCommand(cs[j], "PTTL rl:{wd:%s:%s:%d}", bn_run, tg->mode, i);
        for (i = 0; i < k; i++) {
            redisReply *rep;
            if (redisGetReply(cs[j], (void **)&rep) != REDIS_OK)
                bn_die("PTTL: %s", cs[j]->errstr);
            if (rep->type == REDIS_REPLY_INTEGER) {
                answered++;
                if (min_pttl == -3 || rep->integer < min_pttl)
                    min_pttl = rep->integer;
            }
            freeReplyObject(rep);
        }
    }
    if (answered != k)
        min_pttl = -3;

    /* Release everything; then the watchdog must sleep without using CPU. */
    t0 = bn_now_ns();
    pthread_barrier_wait(&release);
    for (i = 0; i < nthreads; i++) {
        pthread_join(w[i].th, NULL);
        errors += w[i].errors;
    }
    if ((st = rl_lock_release(locks[0])) != RL_OK)
        bn_fail("watchdog release", st);
    t_rel = bn_now_ns() - t0;
    bn_watch_bursts(fd, 1, 300, 1500, idle_dummy, idle_dummy);
    task_stat(wd_tid, &i0);
    bn_sleep_us(3000000);
    task_stat(wd_tid, &i1);
    close(fd);

    if (tg == &bn_single)
        bn_rec_add(&r, "workload", "watchdog");
    else
        bn_rec_add(&r, "workload", "watchdog_%s", tg->mode);
    bn_rec_add(&r, "mode", "%s", tg->mode);
    bn_rec_add(&r, "procs", "1");
    bn_rec_add(&r, "threads", "%d", nthreads + 1);
    bn_rec_add(&r, "masters", "%d", tg->n);
    bn_rec_add(&r, "n", "%d", k);
    bn_rec_add(&r, "lease_ms", "3000");
    bn_rec_add(&r, "acquire_all_ms", "%.0f", (double)t_acq / 1e6);
    bn_rec_add(&r, "acquire_per_lock_us", "%.1f", (double)t_acq / 1e3 / (k - 1));
    bn_rec_add(&r, "release_all_ms", "%.0f", (double)t_rel / 1e6);
    bn_rec_add(&r, "ticks_seen", "%d", got);
    bn_rec_add(&r, "tick_wall_ms_mean", "%.1f", got ? wall_sum / got : 0);
    bn_rec_add(&r, "tick_wall_ms_max", "%.1f", wall_max);
    bn_rec_add(&r, "tick_wall_ratio_ping", "%.0f", got ? wall_max * 1000 / bn_ping_p50 : 0);
    if (single) {
        bn_rec_add_ref(&r, "tick_wall_ms_max_", single->mode, "%.1f", single->wall_max);
        bn_rec_add_ref(&r, "tick_wall_max_ratio_", single->mode, "%.2f",
                       single->wall_max > 0 ? wall_max / single->wall_max : 0);
        bn_rec_add_ref(&r, "tick_wall_ms_mean_", single->mode, "%.1f", single->wall_mean);
        bn_rec_add_ref(&r, "tick_wall_mean_ratio_", single->mode, "%.2f",
                       got && single->wall_mean > 0 ? wall_sum / got / single->wall_mean : 0);
    }
    bn_rec_add(&r, "tick_cpu_ms", "%.1f", got ? cpu_sum / got : 0);
    if (single) {
        bn_rec_add_ref(&r, "tick_cpu_ms_", single->mode, "%.1f", single->cpu);
        bn_rec_add_ref(&r, "tick_cpu_ratio_", single->mode, "%.2f",
                       got && single->cpu > 0 ? cpu_sum / got / single->cpu : 0);
    }
    if (syscalls_seen)
        bn_rec_add(&r, "tick_round_trips", "%.1f", round_trips);
    else
        bn_rec_add(&r, "tick_round_trips", "-");
    bn_rec_add(&r, "masters_renewed", "%d", masters_renewed);
    bn_rec_add(&r, "tick_evalsha", "%.1f", got ? (double)(ev1 - ev0) / got : 0);
    if (cluster)
        bn_rec_add(&r, "tick_evalsha_by_master", "%s", by_master);
    bn_rec_add(&r, "tick_rl_cmds", "%.1f", got ? (double)ca.rl_top / got : 0);
    bn_rec_add(&r, "tick_server_ms", "%.1f", got ? (double)(evalsha_usec1 - evalsha_usec0) / 1e3 / got : 0);
    if (cluster)
        bn_rec_add(&r, "tick_server_ms_max_master", "%.1f", server_ms_max);
    bn_rec_add(&r, "slot_map_refreshes", "%lld", refreshes);
    if (syscalls_seen) {
        bn_rec_add(&r, "tick_write_syscalls", "%.1f", got ? (double)(s1.syscw - s0.syscw) / got : 0);
        bn_rec_add(&r, "tick_read_syscalls", "%.1f", got ? (double)(s1.syscr - s0.syscr) / got : 0);
    }
    bn_rec_add(&r, "tick_blocking_waits", "%.1f", got ? (double)(s1.vcs - s0.vcs) / got : 0);
    bn_rec_add(&r, "min_pttl_ms", "%lld", min_pttl);
    bn_rec_add(&r, "idle_cpu_ticks", "%llu", i1.ticks - i0.ticks);
    bn_rec_add(&r, "idle_cpu_ns", "%llu", i1.cpu_ns - i0.cpu_ns);
    bn_rec_add(&r, "idle_wakeups", "%llu", i1.vcs - i0.vcs);
    bn_rec_add(&r, "errors", "%d", errors);
    bn_tgt_check(&t, "ticks_seen>=1", got >= 1);
    if (!cluster) {
        bn_tgt_check(&t, "tick_wall_ms<=100", got >= 1 && wall_max <= 100);
        bn_tgt_check(&t, "tick_evalsha<=10", got >= 1 && (double)(ev1 - ev0) / got <= 10);
    } else {
        char cond[64];
        snprintf(cond, sizeof cond, "tick_round_trips=masters(%d)", tg->n);
        bn_tgt_check(&t, cond, got >= 1 && masters_renewed == tg->n && round_trips == tg->n);
        snprintf(cond, sizeof cond, "tick_wall_ms_max<=single(%.1f)x1.0",
                 single ? single->wall_max : 0);
        bn_tgt_check(&t, cond, got >= 1 && single && single->got && wall_max <= single->wall_max);
    }
    bn_tgt_check(&t, "all_held(min_pttl>0)", min_pttl > 0);
    bn_tgt_check(&t, "idle_cpu_ticks=0", i1.ticks == i0.ticks);
    bn_tgt_emit(&r, &t);
    bn_rec_emit(&r);

    out.mode = tg->mode;
    out.got = got;
    out.wall_max = wall_max;
    out.wall_mean = got ? wall_sum / got : 0;
    out.cpu = got ? cpu_sum / got : 0;
    for (i = 0; i < k; i++)
        rl_lock_free(locks[i]);
    free(locks);
    free(w);
    free(a);
    free(b);
    free(na);
    free(nb);
    bn_tg_free_all(tg, cs);
    rl_client_free(c);
    return out;
}
