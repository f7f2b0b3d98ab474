/*
 * contend and contend_mp: one name fought over by W threads.
 *
 * Each holder reads a shared counter, sleeps 1 ms, writes it back plus one
 * and releases; then it thinks 1 ms. contend keeps the W threads in one
 * process, contend_mp spreads them over up to 4 forked processes (results
 * come back through pipes). Measures acquisitions/s, the wait percentiles,
 * the handoff time between holders, the counter updates lost (mutual
 * exclusion: must be 0) and rlock's commands per acquisition.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

typedef struct cworker {
    pthread_t th;
    rl_lock *lock;
    redisContext *rc;
    const char *counter;
    const int64_t *deadline;
    pthread_barrier_t *go;
    bn_samples waits;          /* µs */
    long acq;
    int64_t hold_ns;
    int errors;
} cworker;

typedef struct cres {
    long acq;
    int errors;
    int64_t hold_ns, start_ns, end_ns;
    uint64_t nwaits;
} cres;

static void *contend_thread(void *arg)
{
    cworker *w = arg;
    int st;

    pthread_barrier_wait(w->go);
    while (bn_now_ns() < *w->deadline) {
        int64_t t0 = bn_now_ns(), t1, t2;
        redisReply *r;
        long long v = 0;

        if ((st = rl_lock_acquire(w->lock)) != RL_OK) {
            bn_fail("contend acquire", st);
            w->errors++;
            break;
        }
        t1 = bn_now_ns();
        r = redisCommand(w->rc, "GET %s", w->counter);
        if (r && r->type == REDIS_REPLY_STRING)
            v = atoll(r->str);
        if (!r)
            w->errors++;
        freeReplyObject(r);
        bn_sleep_us(1000);
        r = redisCommand(w->rc, "SET %s %lld", w->counter, v + 1);
        if (!r)
            w->errors++;
        freeReplyObject(r);
        t2 = bn_now_ns();
        if ((st = rl_lock_release(w->lock)) != RL_OK) {
            bn_fail("contend release", st);
            w->errors++;
        }
        w->acq++;
        w->hold_ns += t2 - t1;
        bn_s_push(&w->waits, (double)(t1 - t0) / 1000.0);
        bn_sleep_us(1000);
    }
    return NULL;
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;

    while (n) {
        ssize_t k = write(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

static int read_all(int fd, void *p, size_t n)
{
    char *c = p;

    while (n) {
        ssize_t k = read(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

/* One process of a contend run. Never returns. */
static void contend_child(const char *name, const char *counter, int nthreads, long dur_ms,
                          int ready_fd, int go_fd, int res_fd)
{
    rl_client *c = bn_make_client(0, 0);
    rl_lock *l;
    cworker *w = calloc((size_t)nthreads, sizeof *w);
    pthread_barrier_t go;
    int64_t deadline = 0;
    cres res;
    char b = 0;
    int i, st;

    if (!w)
        bn_die("out of memory");
    if ((st = rl_lock_new(&l, c, name)) != RL_OK)
        bn_die("rl_lock_new: %s", rl_strerror(st));
    pthread_barrier_init(&go, NULL, (unsigned)nthreads + 1);
    for (i = 0; i < nthreads; i++) {
        w[i].lock = l;
        w[i].rc = bn_rconnect();
        w[i].counter = counter;
        w[i].deadline = &deadline;
        w[i].go = &go;
        if (pthread_create(&w[i].th, NULL, contend_thread, &w[i]) != 0)
            bn_die("pthread_create");
    }
    if (write_all(ready_fd, &b, 1) != 0 || read_all(go_fd, &b, 1) != 0)
        _exit(3);
    memset(&res, 0, sizeof res);
    res.start_ns = bn_now_ns();
    deadline = res.start_ns + (int64_t)dur_ms * 1000000;
    pthread_barrier_wait(&go);
    for (i = 0; i < nthreads; i++) {
        pthread_join(w[i].th, NULL);
        res.acq += w[i].acq;
        res.hold_ns += w[i].hold_ns;
        res.errors += w[i].errors;
        res.nwaits += w[i].waits.n;
    }
    res.end_ns = bn_now_ns();
    if (write_all(res_fd, &res, sizeof res) != 0)
        _exit(3);
    for (i = 0; i < nthreads; i++) {
        if (write_all(res_fd, w[i].waits.v, w[i].waits.n * sizeof(double)) != 0)
            _exit(3);
        redisFree(w[i].rc);
    }
    rl_lock_free(l);
    rl_client_free(c);
    _exit(0);
}

bn_contend_out bn_run_contend(int procs, int w, long dur_ms, const bn_contend_out *at4)
{
    char name[100], counter[100];
    redisContext *rc = bn_rconnect();
    bn_cstats *a = bn_xmalloc(sizeof *a), *b = bn_xmalloc(sizeof *b);
    bn_samples waits = { 0 };
    pid_t pids[64];
    int ready[64][2], go[64][2], res[64][2];
    long acq = 0;
    int64_t hold_ns = 0, start = INT64_MAX, end = 0;
    int errors = 0, i, per = w / procs;
    long long counter_v = 0, lost;
    bn_contend_out out;
    bn_targets t = { .any = 0 };
    bn_cmdacct ca;
    redisReply *r;
    bn_rec rr = { .n = 0 };
    double secs, acq_s, wp50, hold_mean, handoff;

    if (procs > 64 || per * procs != w)
        bn_die("contend: W=%d does not split over %d processes", w, procs);
    snprintf(name, sizeof name, "contend:%s:%dx%d", bn_run, procs, per);
    snprintf(counter, sizeof counter, "rlbench:counter:%s:%dx%d", bn_run, procs, per);
    freeReplyObject(bn_rcmd(rc, "DEL %s", counter));
    bn_flush_output();
    for (i = 0; i < procs; i++) {
        if (pipe(ready[i]) || pipe(go[i]) || pipe(res[i]))
            bn_die("pipe: %s", strerror(errno));
        pids[i] = fork();
        if (pids[i] < 0)
            bn_die("fork: %s", strerror(errno));
        if (pids[i] == 0) {
            close(ready[i][0]);
            close(go[i][1]);
            close(res[i][0]);
            contend_child(name, counter, per, dur_ms, ready[i][1], go[i][0], res[i][1]);
        }
        close(ready[i][1]);
        close(go[i][0]);
        close(res[i][1]);
    }
    for (i = 0; i < procs; i++) {
        char c;
        if (read_all(ready[i][0], &c, 1) != 0)
            bn_die("contend: a child process died before starting");
    }
    bn_cstats_get(rc, a);
    for (i = 0; i < procs; i++) {
        char c = 'g';
        if (write_all(go[i][1], &c, 1) != 0)
            bn_die("contend: cannot start a child");
    }
    for (i = 0; i < procs; i++) {
        cres cr;
        double *v;
        int status;
        if (read_all(res[i][0], &cr, sizeof cr) != 0)
            bn_die("contend: a child process died");
        v = bn_xmalloc(cr.nwaits * sizeof *v);
        if (read_all(res[i][0], v, cr.nwaits * sizeof *v) != 0)
            bn_die("contend: a child process died");
        bn_s_append(&waits, v, cr.nwaits);
        free(v);
        acq += cr.acq;
        hold_ns += cr.hold_ns;
        errors += cr.errors;
        if (cr.start_ns < start)
            start = cr.start_ns;
        if (cr.end_ns > end)
            end = cr.end_ns;
        waitpid(pids[i], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            bn_warn("contend: child %d exited abnormally (status %d)", (int)pids[i], status);
            errors++;
        }
        close(ready[i][0]);
        close(go[i][1]);
        close(res[i][0]);
    }
    bn_cstats_get(rc, b);
    bn_cs_account(a, b, &ca);
    r = bn_rcmd(rc, "GET %s", counter);
    if (r->type == REDIS_REPLY_STRING)
        counter_v = atoll(r->str);
    freeReplyObject(r);
    freeReplyObject(bn_rcmd(rc, "DEL %s", counter));
    bn_errors += errors;

    secs = (double)(end - start) / 1e9;
    acq_s = acq / secs;
    lost = acq - counter_v;
    wp50 = bn_s_pct(&waits, 50);
    hold_mean = acq ? (double)hold_ns / (double)acq / 1000.0 : 0;
    /* Time the lock spends between holders, when it is never idle. */
    handoff = acq ? secs * 1e6 / (double)acq - hold_mean : 0;

    bn_rec_add(&rr, "workload", "%s", procs == 1 ? "contend" : "contend_mp");
    bn_rec_add(&rr, "procs", "%d", procs);
    bn_rec_add(&rr, "threads", "%d", w);
    bn_rec_add(&rr, "acq", "%ld", acq);
    bn_rec_add(&rr, "seconds", "%.2f", secs);
    bn_rec_add(&rr, "acq_s", "%.0f", acq_s);
    bn_rec_add(&rr, "acq_s_ratio_ceiling", "%.4f", bn_rb_rate(w) > 0 ? acq_s / (bn_rb_rate(w) / 2) : 0);
    bn_rec_add(&rr, "wait_p50_us", "%.0f", wp50);
    bn_rec_add(&rr, "wait_p99_us", "%.0f", bn_s_pct(&waits, 99));
    bn_rec_add(&rr, "wait_max_us", "%.0f", bn_s_max(&waits));
    bn_rec_add(&rr, "wait_mean_us", "%.0f", bn_s_mean(&waits));
    bn_rec_add(&rr, "ping_p50_us", "%.1f", bn_ping_p50);
    bn_rec_add(&rr, "wait_p50_ratio_ping", "%.1f", wp50 / bn_ping_p50);
    bn_rec_add(&rr, "hold_mean_us", "%.0f", hold_mean);
    bn_rec_add(&rr, "handoff_us", "%.0f", handoff);
    bn_rec_add(&rr, "handoff_ratio_ping", "%.2f", handoff / bn_ping_p50);
    bn_rec_add(&rr, "counter", "%lld", counter_v);
    bn_rec_add(&rr, "lost", "%lld", lost);
    bn_rec_add(&rr, "errors", "%d", errors);
    bn_add_cmd_fields(&rr, &ca, (double)acq, "acq");
    bn_tgt_check(&t, "lost=0", lost == 0);
    if (procs == 1 && w == 4) {
        bn_tgt_check(&t, "acq_s>=600", acq_s >= 600);
        bn_tgt_check(&t, "wait_max_ms<=50", bn_s_max(&waits) <= 50000);
    }
    if (w == 32) {
        double rl_per = acq ? (double)ca.rl_top / (double)acq : 1e9;
        bn_tgt_check(&t, "rl_cmds_per_acq<=5", rl_per <= 5);
        if (at4 && at4->acq_s > 0) {
            char cond[64];
            snprintf(cond, sizeof cond, "acq_s>=W4(%.0f)", at4->acq_s);
            bn_tgt_check(&t, cond, acq_s >= at4->acq_s);
        }
    }
    bn_tgt_emit(&rr, &t);
    bn_rec_emit(&rr);

    out.acq_s = acq_s;
    out.rl_cmds_per_acq = acq ? (double)ca.rl_top / (double)acq : 0;
    bn_s_free(&waits);
    free(a);
    free(b);
    redisFree(rc);
    return out;
}
