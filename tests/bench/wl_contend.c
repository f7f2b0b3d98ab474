/*
 * contend, contend_mp and contend_redlock: names fought over by W threads.
 *
 * Each holder reads its name's counter, sleeps 1 ms, writes it back plus
 * one and releases; then it thinks 1 ms. contend keeps the W threads in one
 * process on one name, contend_mp spreads them over up to 4 forked
 * processes (results come back through pipes). contend_redlock runs W
 * threads in P processes on a few names (thread i on name i % names, so
 * each name is fought over from every process) on the single server, then
 * the same on a Redlock right after, with the Redlock's figures as ratios
 * to the single server's. Measures acquisitions/s, the wait percentiles,
 * the handoff time between holders, the counter updates lost (mutual
 * exclusion: must be 0) and rlock's commands per acquisition (summed over
 * the Redlock's masters). The counters live on the single server always.
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
    char counter[128];
    char inside[128];          /* contend_sem: holders inside, INCRBY/DECRBY */
    const int64_t *deadline;
    pthread_barrier_t *go;
    bn_samples waits;          /* µs */
    long acq;
    int64_t hold_ns;
    long long max_inside;      /* contend_sem: most holders seen inside */
    int errors;
} cworker;

typedef struct cres {
    long acq;
    int errors;
    int64_t hold_ns, start_ns, end_ns;
    uint64_t nwaits;
    long long max_inside;
} cres;

/* The hold of contend_sem (either kind): count the holders inside with
 * INCRBY and DECRBY around the 1 ms, as many commands as the counter's GET
 * and SET (not INCR: a script's, which commandstats would mix with these).
 * The most seen inside must not pass the permit count. */
static void hold_inside(cworker *w)
{
    redisReply *r = redisCommand(w->rc, "INCRBY %s 1", w->inside);

    if (r && r->type == REDIS_REPLY_INTEGER && r->integer > w->max_inside)
        w->max_inside = r->integer;
    if (!r)
        w->errors++;
    freeReplyObject(r);
    bn_sleep_us(1000);
    r = redisCommand(w->rc, "DECRBY %s 1", w->inside);
    if (!r)
        w->errors++;
    freeReplyObject(r);
}

/* The hold of contend and the others: read the counter, 1 ms, write it
 * back plus one (a lost update shows a broken exclusion). */
static void hold_counter(cworker *w)
{
    redisReply *r = redisCommand(w->rc, "GET %s", w->counter);
    long long v = 0;

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
}

static void *contend_thread(void *arg)
{
    cworker *w = arg;
    int st;

    pthread_barrier_wait(w->go);
    while (bn_now_ns() < *w->deadline) {
        int64_t t0 = bn_now_ns(), t1, t2;

        if ((st = rl_lock_acquire(w->lock)) != RL_OK) {
            bn_fail("contend acquire", st);
            w->errors++;
            break;
        }
        t1 = bn_now_ns();
        if (w->inside[0])
            hold_inside(w);
        else
            hold_counter(w);
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

/* What one run is: where, on which names, by how many. */
typedef struct cspec {
    const bn_target *tg;
    int procs, per;             /* processes, threads in each */
    int names;
    long dur_ms;
    char name[100];             /* lock k is "<name>.k" ... */
    char counter[100];          /* ... its counter "<counter>.k" */
    int kind;                   /* RL_KIND_* of the locks (0: plain) */
    unsigned permits;           /* > 0: semaphores of that many permits */
    int inside;                 /* 1: holds count holders (hold_inside) */
} cspec;

/* What one run measured. */
typedef struct cmeas {
    long acq;
    int errors;
    int64_t hold_ns;
    double secs;
    bn_samples waits;           /* µs */
    long long counted;          /* the counters' sum */
    long long max_inside;       /* sp->inside: most holders seen at once */
    bn_cmdacct ca;              /* summed over the target's masters */
} cmeas;

/* Process p of a contend run. Never returns. */
static void contend_child(const cspec *sp, int p, int ready_fd, int go_fd, int res_fd)
{
    rl_client *c = bn_make_client_at(sp->tg->url, 0, 0);
    rl_lock **locks = calloc((size_t)sp->names, sizeof *locks);
    cworker *w = calloc((size_t)sp->per, sizeof *w);
    pthread_barrier_t go;
    int64_t deadline = 0;
    long dur_ms = sp->dur_ms;
    int nthreads = sp->per;
    cres res;
    char b = 0;
    int i, k;

    if (!w || !locks)
        bn_die("out of memory");
    /* One handle per name, shared by the threads of this process on it. */
    for (k = 0; k < sp->names; k++) {
        char name[128];
        int st;
        if (sp->kind == RL_KIND_PLAIN && !sp->permits) {
            locks[k] = bn_make_lock(c, "%s.%d", sp->name, k);
            continue;
        }
        snprintf(name, sizeof name, "%s.%d", sp->name, k);
        st = sp->permits ? rl_semaphore_new(&locks[k], c, name, strlen(name), sp->permits)
                         : rl_lock_new_kind(&locks[k], c, name, strlen(name), sp->kind);
        if (st != RL_OK)
            bn_die("rl_lock_new_kind(%s): %s: %s", name, rl_strerror(st), rl_last_error());
    }
    pthread_barrier_init(&go, NULL, (unsigned)nthreads + 1);
    for (i = 0; i < nthreads; i++) {
        k = (p * sp->per + i) % sp->names;
        w[i].lock = locks[k];
        w[i].rc = bn_rconnect();
        snprintf(w[i].counter, sizeof w[i].counter, "%s.%d", sp->counter, k);
        if (sp->inside)
            snprintf(w[i].inside, sizeof w[i].inside, "%s.%d.in", sp->counter, k);
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
        if (w[i].max_inside > res.max_inside)
            res.max_inside = w[i].max_inside;
    }
    res.end_ns = bn_now_ns();
    if (write_all(res_fd, &res, sizeof res) != 0)
        _exit(3);
    for (i = 0; i < nthreads; i++) {
        if (write_all(res_fd, w[i].waits.v, w[i].waits.n * sizeof(double)) != 0)
            _exit(3);
        redisFree(w[i].rc);
    }
    for (k = 0; k < sp->names; k++)
        rl_lock_free(locks[k]);
    rl_client_free(c);
    _exit(0);
}

/* Run sp: fork its processes, start them together, collect what they
 * measured and what the target's masters counted. */
static void contend_measure(const cspec *sp, cmeas *m)
{
    const bn_target *tg = sp->tg;
    redisContext *rc = bn_rconnect(), *cs[BN_NODES_MAX];
    bn_cstats *na = bn_xmalloc(sizeof *na * (size_t)tg->n);
    bn_cstats *a = bn_xmalloc(sizeof *a), *b = bn_xmalloc(sizeof *b);
    pid_t pids[64];
    int ready[64][2], go[64][2], res[64][2];
    int64_t start = INT64_MAX, end = 0;
    redisReply *r;
    int i, k;

    memset(m, 0, sizeof *m);
    if (sp->procs > 64 || sp->procs < 1 || sp->per < 1 || sp->names < 1)
        bn_die("contend: bad shape %d processes x %d threads on %d names", sp->procs, sp->per,
               sp->names);
    bn_tg_connect_all(tg, cs);
    for (k = 0; k < sp->names; k++)
        freeReplyObject(bn_rcmd(rc, "DEL %s.%d %s.%d.in", sp->counter, k, sp->counter, k));
    bn_flush_output();
    for (i = 0; i < sp->procs; i++) {
        if (pipe(ready[i]) || pipe(go[i]) || pipe(res[i]))
            bn_die("pipe: %s", strerror(errno));
        pids[i] = fork();
        if (pids[i] < 0)
            bn_die("fork: %s", strerror(errno));
        if (pids[i] == 0) {
            close(ready[i][0]);
            close(go[i][1]);
            close(res[i][0]);
            contend_child(sp, i, ready[i][1], go[i][0], res[i][1]);
        }
        close(ready[i][1]);
        close(go[i][0]);
        close(res[i][1]);
    }
    for (i = 0; i < sp->procs; i++) {
        char c;
        if (read_all(ready[i][0], &c, 1) != 0)
            bn_die("contend: a child process died before starting");
    }
    bn_tg_stats(tg, cs, na, a);
    for (i = 0; i < sp->procs; i++) {
        char c = 'g';
        if (write_all(go[i][1], &c, 1) != 0)
            bn_die("contend: cannot start a child");
    }
    for (i = 0; i < sp->procs; i++) {
        cres cr;
        double *v;
        int status;
        if (read_all(res[i][0], &cr, sizeof cr) != 0)
            bn_die("contend: a child process died");
        v = bn_xmalloc(cr.nwaits * sizeof *v);
        if (read_all(res[i][0], v, cr.nwaits * sizeof *v) != 0)
            bn_die("contend: a child process died");
        bn_s_append(&m->waits, v, cr.nwaits);
        free(v);
        m->acq += cr.acq;
        m->hold_ns += cr.hold_ns;
        m->errors += cr.errors;
        if (cr.max_inside > m->max_inside)
            m->max_inside = cr.max_inside;
        if (cr.start_ns < start)
            start = cr.start_ns;
        if (cr.end_ns > end)
            end = cr.end_ns;
        waitpid(pids[i], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            bn_warn("contend: child %d exited abnormally (status %d)", (int)pids[i], status);
            m->errors++;
        }
        close(ready[i][0]);
        close(go[i][1]);
        close(res[i][0]);
    }
    bn_tg_stats(tg, cs, na, b);
    bn_cs_account(a, b, &m->ca);
    for (k = 0; k < sp->names; k++) {
        r = bn_rcmd(rc, "GET %s.%d", sp->counter, k);
        if (r->type == REDIS_REPLY_STRING)
            m->counted += atoll(r->str);
        freeReplyObject(r);
        freeReplyObject(bn_rcmd(rc, "DEL %s.%d %s.%d.in", sp->counter, k, sp->counter, k));
    }
    bn_errors += m->errors;
    m->secs = (double)(end - start) / 1e9;
    free(na);
    free(a);
    free(b);
    bn_tg_free_all(tg, cs);
    redisFree(rc);
}

/* The fields every contend record has, after workload/mode/procs/threads. */
static void contend_fields(bn_rec *rr, cmeas *m, int names, double acq_s, double ceiling)
{
    double wp50 = bn_s_pct(&m->waits, 50);
    double hold_mean = m->acq ? (double)m->hold_ns / (double)m->acq / 1000.0 : 0;
    /* Time a lock spends between holders, when it is never idle. */
    double handoff = m->acq ? m->secs * 1e6 * names / (double)m->acq - hold_mean : 0;

    bn_rec_add(rr, "acq", "%ld", m->acq);
    bn_rec_add(rr, "seconds", "%.2f", m->secs);
    bn_rec_add(rr, "acq_s", "%.0f", acq_s);
    bn_rec_add(rr, "acq_s_ratio_ceiling", "%.4f", ceiling > 0 ? acq_s / ceiling : 0);
    bn_rec_add(rr, "wait_p50_us", "%.0f", wp50);
    bn_rec_add(rr, "wait_p99_us", "%.0f", bn_s_pct(&m->waits, 99));
    bn_rec_add(rr, "wait_max_us", "%.0f", bn_s_max(&m->waits));
    bn_rec_add(rr, "wait_mean_us", "%.0f", bn_s_mean(&m->waits));
    bn_rec_add(rr, "ping_p50_us", "%.1f", bn_ping_p50);
    bn_rec_add(rr, "wait_p50_ratio_ping", "%.1f", wp50 / bn_ping_p50);
    bn_rec_add(rr, "hold_mean_us", "%.0f", hold_mean);
    bn_rec_add(rr, "handoff_us", "%.0f", handoff);
    bn_rec_add(rr, "handoff_ratio_ping", "%.2f", handoff / bn_ping_p50);
    if (m->max_inside) {
        bn_rec_add(rr, "max_inside", "%lld", m->max_inside);
    } else {
        bn_rec_add(rr, "counter", "%lld", m->counted);
        bn_rec_add(rr, "lost", "%lld", m->acq - m->counted);
    }
    bn_rec_add(rr, "errors", "%d", m->errors);
    bn_add_cmd_fields(rr, &m->ca, (double)m->acq, "acq");
}

bn_contend_out bn_run_contend(int procs, int w, long dur_ms, const bn_contend_out *at4)
{
    cspec sp = { .tg = &bn_single, .procs = procs, .per = procs ? w / procs : 0, .names = 1,
                 .dur_ms = dur_ms };
    cmeas m;
    bn_contend_out out;
    bn_targets t = { .any = 0 };
    bn_rec rr = { .n = 0 };
    double acq_s;

    if (procs < 1 || sp.per * procs != w)
        bn_die("contend: W=%d does not split over %d processes", w, procs);
    snprintf(sp.name, sizeof sp.name, "contend:%s:%dx%d", bn_run, procs, sp.per);
    snprintf(sp.counter, sizeof sp.counter, "rlbench:counter:%s:%dx%d", bn_run, procs, sp.per);
    contend_measure(&sp, &m);
    acq_s = m.acq / m.secs;

    bn_rec_add(&rr, "workload", "%s", procs == 1 ? "contend" : "contend_mp");
    bn_rec_add(&rr, "procs", "%d", procs);
    bn_rec_add(&rr, "threads", "%d", w);
    contend_fields(&rr, &m, 1, acq_s, bn_rb_rate(w) / 2);
    bn_tgt_check(&t, "lost=0", m.acq == m.counted);
    if (procs == 1 && w == 4) {
        bn_tgt_check(&t, "acq_s>=600", acq_s >= 600);
        bn_tgt_check(&t, "wait_max_ms<=50", bn_s_max(&m.waits) <= 50000);
    }
    if (w == 32) {
        double rl_per = m.acq ? (double)m.ca.rl_top / (double)m.acq : 1e9;
        bn_tgt_check(&t, "rl_cmds_per_acq<=5", rl_per <= 5);
        if (at4 && at4->acq_s > 0) {
            char cond[64];
            snprintf(cond, sizeof cond, "acq_s>=W4(%.0f)", at4->acq_s);
            bn_tgt_check(&t, cond, acq_s >= at4->acq_s);
        }
    }
    bn_tgt_emit(&rr, &t);
    bn_rec_emit(&rr);

    out.mode = bn_single.mode;
    out.acq_s = acq_s;
    out.rl_cmds_per_acq = m.acq ? (double)m.ca.rl_top / (double)m.acq : 0;
    out.wait_max_us = bn_s_max(&m.waits);
    bn_s_free(&m.waits);
    return out;
}

/*
 * One contend_redlock run on tg: W threads in `procs` processes on `names`
 * names. `single` is the single server's run of the same shape, measured
 * just before (NULL when this is that run): the Redlock's acquisitions/s
 * and waits are given as ratios to it.
 */
bn_contend_out bn_run_contend_on(const bn_target *tg, int procs, int w, int names, long dur_ms,
                                 const bn_contend_out *single)
{
    cspec sp = { .tg = tg, .procs = procs, .per = procs ? w / procs : 0, .names = names,
                 .dur_ms = dur_ms };
    cmeas m;
    bn_contend_out out;
    bn_targets t = { .any = 0 };
    bn_rec rr = { .n = 0 };
    double acq_s, wmax;

    if (procs < 1 || sp.per * procs != w)
        bn_die("contend_redlock: W=%d does not split over %d processes", w, procs);
    if (names < 1 || names > w)
        bn_die("contend_redlock: %d names for %d threads", names, w);
    snprintf(sp.name, sizeof sp.name, "contend_rl:%s:%s%d:%dx%d", bn_run, tg->mode, tg->n, procs,
             sp.per);
    snprintf(sp.counter, sizeof sp.counter, "rlbench:counter:%s:%s%d:%dx%d", bn_run, tg->mode,
             tg->n, procs, sp.per);
    contend_measure(&sp, &m);
    acq_s = m.acq / m.secs;
    wmax = bn_s_max(&m.waits);

    if (tg == &bn_single || strcmp(tg->mode, "redlock") == 0)
        bn_rec_add(&rr, "workload", "contend_redlock");
    else
        bn_rec_add(&rr, "workload", "contend_%s", tg->mode);
    bn_rec_add(&rr, "mode", "%s", tg->mode);
    bn_rec_add(&rr, "nodes", "%d", tg->n);
    bn_rec_add(&rr, "procs", "%d", procs);
    bn_rec_add(&rr, "threads", "%d", w);
    bn_rec_add(&rr, "names", "%d", names);
    contend_fields(&rr, &m, names, acq_s, bn_rb_rate(w) / 2);
    if (tg->n > 1)
        bn_rec_add(&rr, "evalsha_per_acq_per_node", "%.2f",
                   m.acq ? (double)m.ca.evalsha / (double)m.acq / tg->n : 0);
    if (single) {
        bn_rec_add_ref(&rr, "acq_s_", single->mode, "%.0f", single->acq_s);
        bn_rec_add_ref(&rr, "acq_s_ratio_", single->mode, "%.3f",
                       single->acq_s > 0 ? acq_s / single->acq_s : 0);
        bn_rec_add_ref(&rr, "wait_max_us_", single->mode, "%.0f", single->wait_max_us);
        bn_rec_add_ref(&rr, "wait_max_ratio_", single->mode, "%.2f",
                       single->wait_max_us > 0 ? wmax / single->wait_max_us : 0);
        bn_rec_add_ref(&rr, "rl_cmds_per_acq_", single->mode, "%.2f", single->rl_cmds_per_acq);
    }
    bn_tgt_check(&t, "lost=0", m.acq == m.counted);
    bn_tgt_emit(&rr, &t);
    bn_rec_emit(&rr);

    out.mode = tg->mode;
    out.acq_s = acq_s;
    out.rl_cmds_per_acq = m.acq ? (double)m.ca.rl_top / (double)m.acq : 0;
    out.wait_max_us = wmax;
    bn_s_free(&m.waits);
    return out;
}

/*
 * contend_fair: W threads in P processes on one name, hold 1 ms, think
 * 1 ms, as contend_mp: first with a plain lock, then at once with a fair
 * one (RL_KIND_FAIR), the fair figures as ratios to the plain ones. The
 * FIFO ideal of the longest wait: with every thread served once per turn
 * of the queue, a thread waits for the W - 1 others, each holding for the
 * measured hold time plus one round trip to hand over, less its own think
 * time: W * (hold + ping) - hold - 1 ms.
 */
void bn_run_contend_fair(int procs, int w, long dur_ms)
{
    cspec sp = { .tg = &bn_single, .procs = procs, .per = procs ? w / procs : 0, .names = 1,
                 .dur_ms = dur_ms };
    cmeas m[2];
    double acq_s[2], wmax[2], per[2], ideal_us, hold;
    bn_targets t = { .any = 0 };
    bn_rec rr = { .n = 0 };
    int i;

    if (procs < 1 || sp.per * procs != w)
        bn_die("contend_fair: W=%d does not split over %d processes", w, procs);
    for (i = 0; i < 2; i++) {
        sp.kind = i ? RL_KIND_FAIR : RL_KIND_PLAIN;
        snprintf(sp.name, sizeof sp.name, "contend_%s:%s:%dx%d", i ? "fair" : "plain", bn_run,
                 procs, sp.per);
        snprintf(sp.counter, sizeof sp.counter, "rlbench:counter:%s:%d:%dx%d", bn_run, i, procs,
                 sp.per);
        contend_measure(&sp, &m[i]);
        acq_s[i] = m[i].acq / m[i].secs;
        wmax[i] = bn_s_max(&m[i].waits);
        per[i] = m[i].acq ? (double)m[i].ca.rl_top / (double)m[i].acq : 0;
    }
    hold = m[1].acq ? (double)m[1].hold_ns / (double)m[1].acq / 1000.0 : 0;
    ideal_us = w * (hold + bn_ping_p50) - hold - 1000;

    bn_rec_add(&rr, "workload", "contend_fair");
    bn_rec_add(&rr, "procs", "%d", procs);
    bn_rec_add(&rr, "threads", "%d", w);
    contend_fields(&rr, &m[1], 1, acq_s[1], bn_rb_rate(w) / 2);
    bn_rec_add(&rr, "wait_max_us_fifo_ideal", "%.0f", ideal_us);
    bn_rec_add(&rr, "wait_max_ratio_ideal", "%.2f", ideal_us > 0 ? wmax[1] / ideal_us : 0);
    bn_rec_add(&rr, "acq_s_plain", "%.0f", acq_s[0]);
    bn_rec_add(&rr, "acq_s_ratio_plain", "%.3f", acq_s[0] > 0 ? acq_s[1] / acq_s[0] : 0);
    bn_rec_add(&rr, "wait_max_us_plain", "%.0f", wmax[0]);
    bn_rec_add(&rr, "wait_p99_us_plain", "%.0f", bn_s_pct(&m[0].waits, 99));
    bn_rec_add(&rr, "wait_max_ratio_plain", "%.2f", wmax[0] > 0 ? wmax[1] / wmax[0] : 0);
    bn_rec_add(&rr, "wait_max_ratio_ideal_plain", "%.2f", ideal_us > 0 ? wmax[0] / ideal_us : 0);
    bn_rec_add(&rr, "rl_cmds_per_acq_plain", "%.2f", per[0]);
    bn_tgt_check(&t, "lost=0", m[0].acq == m[0].counted && m[1].acq == m[1].counted);
    bn_tgt_check(&t, "wait_max<=2*ideal", wmax[1] <= 2 * ideal_us);
    bn_tgt_check(&t, "rl_cmds_per_acq<=3", per[1] <= 3);
    bn_tgt_check(&t, "acq_s>=0.9*plain", acq_s[1] >= 0.9 * acq_s[0]);
    bn_tgt_emit(&rr, &t);
    bn_rec_emit(&rr);
    bn_s_free(&m[0].waits);
    bn_s_free(&m[1].waits);
}

/*
 * contend_sem: W threads in P processes on one name, hold 1 ms, think
 * 1 ms: first a plain lock, then at once a semaphore of `permits` permits
 * (each hold takes 1), the semaphore's figures as ratios to the lock's.
 * Both holds count the holders inside (INCRBY, 1 ms, DECRBY): the most seen at
 * once must be 1 for the lock and at most `permits` for the semaphore.
 * With the permits always in use, the semaphore should pass `permits`
 * times the lock's acquisitions/s (target: at least 0.9 of that).
 */
void bn_run_contend_sem(int procs, int w, unsigned permits, long dur_ms)
{
    cspec sp = { .tg = &bn_single, .procs = procs, .per = procs ? w / procs : 0, .names = 1,
                 .dur_ms = dur_ms, .inside = 1 };
    cmeas m[2];
    double acq_s[2], wmax[2], per[2], hold[2];
    bn_targets t = { .any = 0 };
    bn_rec rr = { .n = 0 };
    char cond[64];
    int i;

    if (procs < 1 || sp.per * procs != w || permits < 1)
        bn_die("contend_sem: W=%d over %d processes, %u permits", w, procs, permits);
    for (i = 0; i < 2; i++) {
        sp.permits = i ? permits : 0;
        snprintf(sp.name, sizeof sp.name, "contend_%s:%s:%dx%d", i ? "sem" : "plain", bn_run,
                 procs, sp.per);
        snprintf(sp.counter, sizeof sp.counter, "rlbench:sem:%s:%d:%dx%d", bn_run, i, procs,
                 sp.per);
        contend_measure(&sp, &m[i]);
        acq_s[i] = m[i].acq / m[i].secs;
        wmax[i] = bn_s_max(&m[i].waits);
        per[i] = m[i].acq ? (double)m[i].ca.rl_top / (double)m[i].acq : 0;
        hold[i] = m[i].acq ? (double)m[i].hold_ns / (double)m[i].acq / 1000.0 : 0;
    }

    bn_rec_add(&rr, "workload", "contend_sem");
    bn_rec_add(&rr, "procs", "%d", procs);
    bn_rec_add(&rr, "threads", "%d", w);
    bn_rec_add(&rr, "permits", "%u", permits);
    contend_fields(&rr, &m[1], (int)permits, acq_s[1], bn_rb_rate(w) / 2);
    bn_rec_add(&rr, "acq_s_plain", "%.0f", acq_s[0]);
    bn_rec_add(&rr, "acq_s_ratio_plain", "%.3f", acq_s[0] > 0 ? acq_s[1] / acq_s[0] : 0);
    bn_rec_add(&rr, "hold_mean_us_plain", "%.0f", hold[0]);
    bn_rec_add(&rr, "wait_max_us_plain", "%.0f", wmax[0]);
    bn_rec_add(&rr, "wait_p99_us_plain", "%.0f", bn_s_pct(&m[0].waits, 99));
    bn_rec_add(&rr, "wait_p50_us_plain", "%.0f", bn_s_pct(&m[0].waits, 50));
    bn_rec_add(&rr, "max_inside_plain", "%lld", m[0].max_inside);
    /* Holders inside on average (rate x hold): the lock's is at most 1, a
     * semaphore always full has `permits`; their ratio is the throughput's
     * at equal hold times. */
    bn_rec_add(&rr, "inside_mean", "%.2f", acq_s[1] * hold[1] / 1e6);
    bn_rec_add(&rr, "inside_mean_plain", "%.2f", acq_s[0] * hold[0] / 1e6);
    bn_rec_add(&rr, "inside_ratio_plain", "%.3f",
               acq_s[0] * hold[0] > 0 ? acq_s[1] * hold[1] / (acq_s[0] * hold[0]) : 0);
    bn_rec_add(&rr, "rl_cmds_per_acq_plain", "%.2f", per[0]);
    bn_tgt_check(&t, "max_inside<=permits", m[1].max_inside <= (long long)permits &&
                                                m[0].max_inside <= 1);
    snprintf(cond, sizeof cond, "acq_s>=%.1f*plain", 0.9 * permits);
    bn_tgt_check(&t, cond, acq_s[1] >= 0.9 * permits * acq_s[0]);
    bn_tgt_emit(&rr, &t);
    bn_rec_emit(&rr);
    bn_s_free(&m[0].waits);
    bn_s_free(&m[1].waits);
}
