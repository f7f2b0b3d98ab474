/*
 * rlbench: rlock's benchmark program (run through scripts/bench.sh).
 *
 * Every figure is printed as one line of key=value pairs per workload and
 * also as a CSV row. Latencies are compared with the round trip of a plain
 * PING measured by this program at start, and throughputs with the EVALSHA
 * rate that redis-benchmark reached in the same run (passed in by
 * bench.sh with --rb CLIENTS:RATE,...).
 *
 * Workloads: baseline, solo, contend (W threads in one process),
 * contend_mp (the same W threads spread over up to 4 processes), spread,
 * watchdog, reentry, alloc. See usage(). Given --cluster-url, spread and
 * watchdog run on that Redis Cluster too, right after their single-server
 * run, and print the cluster's figures as ratios to the single server's.
 *
 * The program defines malloc and its relatives itself, forwarding to
 * glibc's, so that it can count every allocation made in the process,
 * including those inside librlock and hiredis.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "rlock.h"

/* ======================================================================
 * Allocation counting
 * ====================================================================== */

#define TRACE_MAX 256

/* volatile: GCC knows malloc as a builtin and would assume that calls into
 * other libraries leave these untouched. */
static _Thread_local volatile unsigned long tl_allocs, tl_frees;
static _Thread_local int tl_trace;                  /* record call sites */
static _Thread_local void *tl_sites[TRACE_MAX];
static _Thread_local int tl_nsites;

static atomic_ulong g_allocs;

#ifndef RLBENCH_NO_ALLOC_HOOK
#define ALLOC_HOOK 1

static atomic_ulong g_frees;

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void __libc_free(void *p);

/* The project builds with -fvisibility=hidden: these must be exported for
 * the shared libraries' calls to reach them. */
#define HOOK __attribute__((visibility("default")))

static inline void note_alloc(void *site)
{
    tl_allocs++;
    atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
    if (tl_trace && tl_nsites < TRACE_MAX)
        tl_sites[tl_nsites++] = site;
}

HOOK void *malloc(size_t n)
{
    note_alloc(__builtin_return_address(0));
    return __libc_malloc(n);
}

HOOK void *calloc(size_t n, size_t size)
{
    note_alloc(__builtin_return_address(0));
    return __libc_calloc(n, size);
}

HOOK void *realloc(void *p, size_t n)
{
    note_alloc(__builtin_return_address(0));
    return __libc_realloc(p, n);
}

HOOK int posix_memalign(void **out, size_t align, size_t n)
{
    void *p;

    note_alloc(__builtin_return_address(0));
    p = __libc_memalign(align, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

HOOK void *aligned_alloc(size_t align, size_t n)
{
    note_alloc(__builtin_return_address(0));
    return __libc_memalign(align, n);
}

HOOK void free(void *p)
{
    if (p) {
        tl_frees++;
        atomic_fetch_add_explicit(&g_frees, 1, memory_order_relaxed);
    }
    __libc_free(p);
}
#else
#define ALLOC_HOOK 0
#endif

/* ======================================================================
 * Small utilities
 * ====================================================================== */

static int g_errors;          /* rlock or Redis calls that failed */

static int read_file(const char *path, char *buf, size_t cap);

static void die(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "rlbench: error: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

static void warnx(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "rlbench: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_us(long us)
{
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
        ;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (!p)
        die("out of memory");
    return p;
}

/* ---- samples --------------------------------------------------------- */

typedef struct samples {
    double *v;
    size_t n, cap;
} samples;

static void s_push(samples *s, double x)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
        if (!s->v)
            die("out of memory");
    }
    s->v[s->n++] = x;
}

static void s_append(samples *s, const double *v, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        s_push(s, v[i]);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile; sorts in place. */
static double s_pct(samples *s, double p)
{
    size_t k;

    if (!s->n)
        return 0;
    qsort(s->v, s->n, sizeof *s->v, cmp_double);
    k = (size_t)((p / 100.0) * (double)s->n + 0.999999);
    if (k < 1)
        k = 1;
    if (k > s->n)
        k = s->n;
    return s->v[k - 1];
}

static double s_max(const samples *s)
{
    double m = 0;
    size_t i;

    for (i = 0; i < s->n; i++)
        if (s->v[i] > m)
            m = s->v[i];
    return m;
}

static double s_mean(const samples *s)
{
    double t = 0;
    size_t i;

    for (i = 0; i < s->n; i++)
        t += s->v[i];
    return s->n ? t / (double)s->n : 0;
}

static void s_free(samples *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* ======================================================================
 * Output: one key=value line per workload, plus a CSV row
 * ====================================================================== */

#define REC_MAX 64

typedef struct rec {
    char key[REC_MAX][40];
    char val[REC_MAX][200];
    int n;
} rec;

static FILE *g_csv;

/* CSV columns; each names the record keys it may come from. */
static const char *const csv_cols[][4] = {
    { "workload", "workload", NULL, NULL },
    { "procs", "procs", NULL, NULL },
    { "threads", "threads", NULL, NULL },
    { "n", "n", "acq", NULL },
    { "seconds", "seconds", NULL, NULL },
    { "rate_s", "pairs_s", "acq_s", NULL },
    { "rate_ratio", "pairs_s_ratio_ceiling", "acq_s_ratio_ceiling", NULL },
    { "p50_us", "p50_us", "wait_p50_us", NULL },
    { "p99_us", "p99_us", "wait_p99_us", NULL },
    { "max_us", "max_us", "wait_max_us", NULL },
    { "ping_p50_us", "ping_p50_us", NULL, NULL },
    { "p50_ratio_ping", "p50_ratio_ping", "wait_p50_ratio_ping", NULL },
    { "lost", "lost", NULL, NULL },
    { "cmds_all_per_op", "cmds_all_per_pair", "cmds_all_per_acq", NULL },
    { "rl_cmds_per_op", "rl_cmds_per_pair", "rl_cmds_per_acq", NULL },
    { "evalsha_per_op", "evalsha_per_pair", "evalsha_per_acq", NULL },
    { "target", "target", NULL, NULL },
    { "met", "met", NULL, NULL },
};
#define NCOLS (sizeof csv_cols / sizeof csv_cols[0])

static void rec_add(rec *r, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void rec_add(rec *r, const char *key, const char *fmt, ...)
{
    va_list ap;

    if (r->n >= REC_MAX)
        die("too many fields in one record");
    snprintf(r->key[r->n], sizeof r->key[0], "%s", key);
    va_start(ap, fmt);
    vsnprintf(r->val[r->n], sizeof r->val[0], fmt, ap);
    va_end(ap);
    r->n++;
}

static const char *rec_get(const rec *r, const char *key)
{
    int i;

    for (i = 0; i < r->n; i++)
        if (strcmp(r->key[i], key) == 0)
            return r->val[i];
    return NULL;
}

static void csv_header(void)
{
    size_t i;

    if (!g_csv)
        return;
    for (i = 0; i < NCOLS; i++)
        fprintf(g_csv, "%s,", csv_cols[i][0]);
    fprintf(g_csv, "notes\n");
}

static void rec_emit(const rec *r)
{
    int i, first = 1;
    size_t c, k;

    for (i = 0; i < r->n; i++)
        printf("%s%s=%s", i ? " " : "", r->key[i], r->val[i]);
    printf("\n");
    fflush(stdout);
    if (!g_csv)
        return;
    for (c = 0; c < NCOLS; c++) {
        const char *v = NULL;
        for (k = 1; k < 4 && csv_cols[c][k] && !v; k++)
            v = rec_get(r, csv_cols[c][k]);
        fprintf(g_csv, "%s,", v ? v : "");
    }
    /* Every other field goes to the notes column, as k=v;k=v. */
    fputc('"', g_csv);
    for (i = 0; i < r->n; i++) {
        int used = 0;
        for (c = 0; c < NCOLS && !used; c++)
            for (k = 1; k < 4 && csv_cols[c][k]; k++)
                if (strcmp(csv_cols[c][k], r->key[i]) == 0)
                    used = 1;
        if (!used) {
            fprintf(g_csv, "%s%s=%s", first ? "" : ";", r->key[i], r->val[i]);
            first = 0;
        }
    }
    fprintf(g_csv, "\"\n");
    fflush(g_csv);
}

/* Targets: each check adds a condition; the record gets target= and met=. */
typedef struct targets {
    char text[200];
    char missed[200];
    int any, fail;
} targets;

static void tgt_check(targets *t, const char *cond, int ok)
{
    size_t l = strlen(t->text);

    snprintf(t->text + l, sizeof t->text - l, "%s%s", t->any ? "&" : "", cond);
    t->any = 1;
    if (!ok) {
        l = strlen(t->missed);
        snprintf(t->missed + l, sizeof t->missed - l, "%s%s", t->fail ? "&" : "", cond);
        t->fail = 1;
    }
}

static void tgt_emit(rec *r, const targets *t)
{
    if (!t->any) {
        rec_add(r, "target", "-");
        rec_add(r, "met", "-");
        return;
    }
    rec_add(r, "target", "%s", t->text);
    rec_add(r, "met", "%s", t->fail ? "no" : "yes");
    if (t->fail)
        rec_add(r, "missed", "%s", t->missed);
}

/* ======================================================================
 * Redis helpers (hiredis, for the baseline, the counter and statistics)
 * ====================================================================== */

static char g_url[300];
static char g_host[256] = "127.0.0.1";
static int g_port = 6379;
static char g_run[32];        /* unique per run: keeps names apart */

static redisContext *rconnect(void)
{
    redisContext *c = redisConnect(g_host, g_port);

    if (!c || c->err)
        die("connect to %s:%d: %s", g_host, g_port, c ? c->errstr : "out of memory");
    return c;
}

static redisReply *rcmd(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    redisReply *r;

    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (!r)
        die("redis command failed: %s", c->errstr);
    if (r->type == REDIS_REPLY_ERROR)
        die("redis: %s", r->str);
    return r;
}

/* INFO commandstats, parsed. */
#define CS_MAX 400
typedef struct cstats {
    char name[CS_MAX][64];
    long long calls[CS_MAX], usec[CS_MAX];
    int n;
} cstats;

static void cstats_get(redisContext *c, cstats *out)
{
    redisReply *r = rcmd(c, "INFO commandstats");
    const char *p = r->str;

    out->n = 0;
    while ((p = strstr(p, "cmdstat_")) != NULL && out->n < CS_MAX) {
        const char *colon, *q;
        size_t len;
        p += 8;
        colon = strchr(p, ':');
        if (!colon)
            break;
        len = (size_t)(colon - p);
        if (len >= sizeof out->name[0])
            len = sizeof out->name[0] - 1;
        memcpy(out->name[out->n], p, len);
        out->name[out->n][len] = '\0';
        out->calls[out->n] = (q = strstr(colon, "calls=")) ? atoll(q + 6) : 0;
        out->usec[out->n] = (q = strstr(colon, "usec=")) ? atoll(q + 5) : 0;
        out->n++;
        p = colon;
    }
    freeReplyObject(r);
}

/* Calls of a command (sum over its subcommands "name|sub"). */
static long long cs_calls(const cstats *s, const char *name, long long *usec)
{
    long long t = 0, u = 0;
    size_t l = strlen(name);
    int i;

    for (i = 0; i < s->n; i++)
        if (strncmp(s->name[i], name, l) == 0 && (s->name[i][l] == '\0' || s->name[i][l] == '|')) {
            t += s->calls[i];
            u += s->usec[i];
        }
    if (usec)
        *usec = u;
    return t;
}

static long long cs_total(const cstats *s)
{
    long long t = 0;
    int i;

    for (i = 0; i < s->n; i++)
        t += s->calls[i];
    return t;
}

/* Add one node's statistics to a sum over nodes (sum->n = 0 to start). */
static void cs_merge(cstats *sum, const cstats *one)
{
    int i, j;

    for (i = 0; i < one->n; i++) {
        for (j = 0; j < sum->n && strcmp(sum->name[j], one->name[i]) != 0; j++)
            ;
        if (j == sum->n) {
            if (sum->n == CS_MAX)
                continue;
            memcpy(sum->name[j], one->name[i], sizeof sum->name[j]);
            sum->calls[j] = sum->usec[j] = 0;
            sum->n++;
        }
        sum->calls[j] += one->calls[i];
        sum->usec[j] += one->usec[i];
    }
}

/*
 * Commands rlock sends at top level. Redis 7 also counts the commands a
 * script runs (hget, hset, pexpire, ... inside EVALSHA) in commandstats, so
 * the sum over all commands mixes both. rlock's own top-level commands are
 * these; its other top-level commands (HGET, EXISTS, PTTL, CLIENT KILL) are
 * only sent when resolving a lost reply or by rl_lock_is_locked/ttl, which
 * no workload here calls.
 */
static const char *const rl_top_cmds[] = {
    "evalsha", "eval", "evalsha_ro", "eval_ro", "script", "subscribe", "unsubscribe",
    "ssubscribe", "sunsubscribe", "ping", "client", "auth", "select", "hello", NULL,
};

typedef struct cmdacct {
    long long all;          /* every command counted, less the bench's INFO */
    long long rl_top;       /* rlock's top-level commands */
    long long evalsha;
    long long evalsha_usec;
    long long subs;         /* subscribe + unsubscribe */
    long long ping;
    long long bench_own;    /* the workload's GET/SET */
    long long in_script;    /* all - rl_top - bench_own */
} cmdacct;

static void cs_account(const cstats *a, const cstats *b, cmdacct *o)
{
    long long u0, u1;
    int i;

    memset(o, 0, sizeof *o);
    o->all = cs_total(b) - cs_total(a) - (cs_calls(b, "info", NULL) - cs_calls(a, "info", NULL));
    for (i = 0; rl_top_cmds[i]; i++)
        o->rl_top += cs_calls(b, rl_top_cmds[i], NULL) - cs_calls(a, rl_top_cmds[i], NULL);
    o->evalsha = cs_calls(b, "evalsha", &u1) - cs_calls(a, "evalsha", &u0);
    o->evalsha_usec = u1 - u0;
    o->subs = cs_calls(b, "subscribe", NULL) - cs_calls(a, "subscribe", NULL) +
              cs_calls(b, "unsubscribe", NULL) - cs_calls(a, "unsubscribe", NULL);
    o->ping = cs_calls(b, "ping", NULL) - cs_calls(a, "ping", NULL);
    o->bench_own = cs_calls(b, "get", NULL) - cs_calls(a, "get", NULL) +
                   cs_calls(b, "set", NULL) - cs_calls(a, "set", NULL);
    o->in_script = o->all - o->rl_top - o->bench_own;
}

static void add_cmd_fields(rec *r, const cmdacct *ca, double ops, const char *per)
{
    char k[40];

    if (ops <= 0)
        ops = 1;
    snprintf(k, sizeof k, "cmds_all_per_%s", per);
    rec_add(r, k, "%.2f", (double)ca->all / ops);
    snprintf(k, sizeof k, "rl_cmds_per_%s", per);
    rec_add(r, k, "%.2f", (double)ca->rl_top / ops);
    snprintf(k, sizeof k, "evalsha_per_%s", per);
    rec_add(r, k, "%.2f", (double)ca->evalsha / ops);
    snprintf(k, sizeof k, "subunsub_per_%s", per);
    rec_add(r, k, "%.3f", (double)ca->subs / ops);
    snprintf(k, sizeof k, "in_script_per_%s", per);
    rec_add(r, k, "%.2f", (double)ca->in_script / ops);
    snprintf(k, sizeof k, "bench_getset_per_%s", per);
    rec_add(r, k, "%.2f", (double)ca->bench_own / ops);
    snprintf(k, sizeof k, "evalsha_server_us_per_%s", per);
    rec_add(r, k, "%.2f", (double)ca->evalsha_usec / ops);
}

/* ======================================================================
 * Targets: the single server of --url, the Redis Cluster of --cluster-url
 * ====================================================================== */

#define NODES_MAX 16
#define SLOTS 16384

typedef struct target {
    const char *mode;               /* "single" or "cluster" */
    char url[600];                  /* what rlock is given */
    int n;                          /* masters; 1 for the single server */
    char host[NODES_MAX][256];
    int port[NODES_MAX];
    unsigned char owner[SLOTS];     /* cluster: slot -> index of its master */
} target;

static target g_single = { .mode = "single", .n = 1 };
static target g_cluster = { .mode = "cluster" };

static redisContext *tg_connect(const target *tg, int i)
{
    redisContext *c = redisConnect(tg->host[i], tg->port[i]);

    if (!c || c->err)
        die("connect to %s:%d: %s", tg->host[i], tg->port[i], c ? c->errstr : "out of memory");
    return c;
}

static void tg_connect_all(const target *tg, redisContext **cs)
{
    int i;

    for (i = 0; i < tg->n; i++)
        cs[i] = tg_connect(tg, i);
}

static void tg_free_all(const target *tg, redisContext **cs)
{
    int i;

    for (i = 0; i < tg->n; i++)
        redisFree(cs[i]);
}

/* INFO commandstats of every master into one[0..n), and their sum. */
static void tg_stats(const target *tg, redisContext **cs, cstats *one, cstats *sum)
{
    int i;

    sum->n = 0;
    for (i = 0; i < tg->n; i++) {
        cstats_get(cs[i], &one[i]);
        cs_merge(sum, &one[i]);
    }
}

/* The masters of the cluster that the first seed of tg->url belongs to, and
 * which of them owns each slot, from its CLUSTER SLOTS. */
static void cluster_discover(target *tg)
{
    redisContext *c;
    redisReply *r;
    size_t i;
    int j, slot, covered = 0;

    if (sscanf(tg->url, "redis://%255[^:/,]:%d", tg->host[0], &tg->port[0]) != 2)
        die("--cluster-url must look like redis://HOST:PORT[,HOST:PORT...]");
    c = tg_connect(tg, 0);
    r = rcmd(c, "CLUSTER SLOTS");
    tg->n = 0;
    for (i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        redisReply *e = r->element[i], *m;
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 || (m = e->element[2])->elements < 2)
            die("CLUSTER SLOTS: unexpected reply");
        for (j = 0; j < tg->n; j++)
            if (strcmp(tg->host[j], m->element[0]->str) == 0 && tg->port[j] == m->element[1]->integer)
                break;
        if (j == tg->n) {
            if (tg->n == NODES_MAX)
                die("more than %d masters", NODES_MAX);
            snprintf(tg->host[j], sizeof tg->host[j], "%s", m->element[0]->str);
            tg->port[j] = (int)m->element[1]->integer;
            tg->n++;
        }
        for (slot = (int)e->element[0]->integer; slot <= e->element[1]->integer; slot++, covered++)
            tg->owner[slot] = (unsigned char)j;
    }
    freeReplyObject(r);
    redisFree(c);
    if (covered != SLOTS)
        die("the cluster at %s covers %d slots of %d", tg->url, covered, SLOTS);
}

/* The master of rlock's key for `name` (default prefix "rl:"). */
static int cluster_master_of(const target *tg, redisContext *c, const char *name)
{
    redisReply *r = rcmd(c, "CLUSTER KEYSLOT rl:{%s}", name);
    int slot = (int)r->integer;

    freeReplyObject(r);
    return tg->owner[slot & (SLOTS - 1)];
}

/* ======================================================================
 * rlock helpers
 * ====================================================================== */

static rl_client *make_client_at(const char *url, long lease_ms, int pool)
{
    rl_options o;
    rl_client *c;
    int rc;

    rl_options_init(&o, RL_OPTIONS_VERSION);
    o.url = url;
    o.lease_ms = lease_ms;
    o.pool_size = pool;
    if ((rc = rl_client_new(&c, &o)) != RL_OK)
        die("rl_client_new(%s): %s: %s", url, rl_strerror(rc), rl_last_error());
    return c;
}

static rl_client *make_client(long lease_ms, int pool)
{
    return make_client_at(g_url, lease_ms, pool);
}

static rl_lock *make_lock(rl_client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static rl_lock *make_lock(rl_client *c, const char *fmt, ...)
{
    char name[200];
    va_list ap;
    rl_lock *l;
    int rc, n;

    va_start(ap, fmt);
    n = vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    (void)n;
    if ((rc = rl_lock_new(&l, c, name)) != RL_OK)
        die("rl_lock_new(%s): %s: %s", name, rl_strerror(rc), rl_last_error());
    return l;
}

/* A failed call: counted, first few reported. */
static atomic_int g_fail_reports;
static void rl_fail(const char *what, int rc)
{
    __atomic_add_fetch(&g_errors, 1, __ATOMIC_RELAXED);
    if (atomic_fetch_add(&g_fail_reports, 1) < 10)
        warnx("%s failed: %s: %s", what, rl_strerror(rc), rl_last_error());
}

/* ======================================================================
 * Baseline
 * ====================================================================== */

static double g_ping_p50, g_ping_p99;        /* µs */
static double g_rb[65];                      /* redis-benchmark EVALSHA rate by clients */

static double rb_rate(int clients)
{
    return clients >= 0 && clients < 65 ? g_rb[clients] : 0;
}

static void run_baseline(int n)
{
    redisContext *c = rconnect();
    samples s = { 0 };
    rec r = { .n = 0 };
    int i;
    char k[32];

    for (i = 0; i < 200; i++)
        freeReplyObject(rcmd(c, "PING"));
    for (i = 0; i < n; i++) {
        int64_t t0 = now_ns();
        freeReplyObject(rcmd(c, "PING"));
        s_push(&s, (double)(now_ns() - t0) / 1000.0);
    }
    g_ping_p50 = s_pct(&s, 50);
    g_ping_p99 = s_pct(&s, 99);
    rec_add(&r, "workload", "baseline");
    rec_add(&r, "n", "%d", n);
    rec_add(&r, "ping_p50_us", "%.1f", g_ping_p50);
    rec_add(&r, "ping_p99_us", "%.1f", g_ping_p99);
    rec_add(&r, "ping_max_us", "%.1f", s_max(&s));
    for (i = 1; i < 65; i++) {
        if (g_rb[i] > 0) {
            snprintf(k, sizeof k, "rb_evalsha_c%d", i);
            rec_add(&r, k, "%.0f", g_rb[i]);
        }
    }
    rec_add(&r, "alloc_hook", "%s", ALLOC_HOOK ? "on" : "off");
    {
        char la[128] = "";
        if (read_file("/proc/loadavg", la, sizeof la) == 0) {
            la[strcspn(la, " ")] = '\0';
            rec_add(&r, "loadavg1", "%s", la);
        }
        rec_add(&r, "cpus", "%ld", sysconf(_SC_NPROCESSORS_ONLN));
    }
    {
        targets t = { .any = 0 };
        tgt_emit(&r, &t);
    }
    rec_emit(&r);
    s_free(&s);
    redisFree(c);
}

/* ======================================================================
 * solo: one thread, acquire/release pairs on one name
 * ====================================================================== */

static void run_solo(int n)
{
    rl_client *c = make_client(0, 0);
    rl_lock *l = make_lock(c, "solo:%s", g_run);
    redisContext *rc = rconnect();
    samples pair = { 0 }, acq = { 0 }, rel = { 0 }, ping = { 0 };
    double ping50;
    cstats *a = xmalloc(sizeof *a), *b = xmalloc(sizeof *b);
    cmdacct ca;
    targets t = { .any = 0 };
    rec r = { .n = 0 };
    int64_t start, end;
    double ratio;
    int i, st;

    for (i = 0; i < 200; i++) {
        if ((st = rl_lock_acquire(l)) != RL_OK || (st = rl_lock_release(l)) != RL_OK)
            rl_fail("solo warm-up", st);
    }
    cstats_get(rc, a);
    start = now_ns();
    for (i = 0; i < n; i++) {
        int64_t t0, t1, t2;
        /* A PING before each pair: the baseline under the same conditions. */
        t0 = now_ns();
        freeReplyObject(rcmd(rc, "PING"));
        s_push(&ping, (double)(now_ns() - t0) / 1000.0);
        t0 = now_ns();
        if ((st = rl_lock_acquire(l)) != RL_OK)
            rl_fail("solo acquire", st);
        t1 = now_ns();
        if ((st = rl_lock_release(l)) != RL_OK)
            rl_fail("solo release", st);
        t2 = now_ns();
        s_push(&pair, (double)(t2 - t0) / 1000.0);
        s_push(&acq, (double)(t1 - t0) / 1000.0);
        s_push(&rel, (double)(t2 - t1) / 1000.0);
    }
    end = now_ns();
    cstats_get(rc, b);
    cs_account(a, b, &ca);
    /* Our own PINGs are not rlock's. */
    ca.all -= n;
    ca.rl_top -= n;
    ca.ping -= n;
    ping50 = s_pct(&ping, 50);
    /* The interleaved PINGs are not part of the pairs' time. */
    end -= (int64_t)(s_mean(&ping) * 1000.0 * (double)n);

    rec_add(&r, "workload", "solo");
    rec_add(&r, "procs", "1");
    rec_add(&r, "threads", "1");
    rec_add(&r, "n", "%d", n);
    rec_add(&r, "seconds", "%.2f", (double)(end - start) / 1e9);
    rec_add(&r, "pairs_s", "%.0f", n / ((double)(end - start) / 1e9));
    rec_add(&r, "pairs_s_ratio_ceiling", "%.3f",
            rb_rate(1) > 0 ? n / ((double)(end - start) / 1e9) / (rb_rate(1) / 2) : 0);
    rec_add(&r, "p50_us", "%.1f", s_pct(&pair, 50));
    rec_add(&r, "p99_us", "%.1f", s_pct(&pair, 99));
    rec_add(&r, "max_us", "%.1f", s_max(&pair));
    rec_add(&r, "acq_p50_us", "%.1f", s_pct(&acq, 50));
    rec_add(&r, "rel_p50_us", "%.1f", s_pct(&rel, 50));
    rec_add(&r, "ping_p50_us", "%.1f", ping50);
    rec_add(&r, "ping_p50_start_us", "%.1f", g_ping_p50);
    ratio = s_pct(&pair, 50) / ping50;
    rec_add(&r, "p50_ratio_ping", "%.2f", ratio);
    rec_add(&r, "p99_ratio_ping", "%.2f", s_pct(&pair, 99) / s_pct(&ping, 99));
    add_cmd_fields(&r, &ca, n, "pair");
    tgt_check(&t, "p50_ratio_ping<=2.3", ratio <= 2.3);
    tgt_emit(&r, &t);
    rec_emit(&r);

    s_free(&pair);
    s_free(&acq);
    s_free(&rel);
    s_free(&ping);
    free(a);
    free(b);
    redisFree(rc);
    rl_lock_free(l);
    rl_client_free(c);
}

/* ======================================================================
 * contend: W threads over P processes on one name, 1 ms hold, 1 ms think
 * ====================================================================== */

typedef struct cworker {
    pthread_t th;
    rl_lock *lock;
    redisContext *rc;
    const char *counter;
    const int64_t *deadline;
    pthread_barrier_t *go;
    samples waits;          /* µs */
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
    while (now_ns() < *w->deadline) {
        int64_t t0 = now_ns(), t1, t2;
        redisReply *r;
        long long v = 0;

        if ((st = rl_lock_acquire(w->lock)) != RL_OK) {
            rl_fail("contend acquire", st);
            w->errors++;
            break;
        }
        t1 = now_ns();
        r = redisCommand(w->rc, "GET %s", w->counter);
        if (r && r->type == REDIS_REPLY_STRING)
            v = atoll(r->str);
        if (!r)
            w->errors++;
        freeReplyObject(r);
        sleep_us(1000);
        r = redisCommand(w->rc, "SET %s %lld", w->counter, v + 1);
        if (!r)
            w->errors++;
        freeReplyObject(r);
        t2 = now_ns();
        if ((st = rl_lock_release(w->lock)) != RL_OK) {
            rl_fail("contend release", st);
            w->errors++;
        }
        w->acq++;
        w->hold_ns += t2 - t1;
        s_push(&w->waits, (double)(t1 - t0) / 1000.0);
        sleep_us(1000);
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
    rl_client *c = make_client(0, 0);
    rl_lock *l;
    cworker *w = calloc((size_t)nthreads, sizeof *w);
    pthread_barrier_t go;
    int64_t deadline = 0;
    cres res;
    char b = 0;
    int i, st;

    if (!w)
        die("out of memory");
    if ((st = rl_lock_new(&l, c, name)) != RL_OK)
        die("rl_lock_new: %s", rl_strerror(st));
    pthread_barrier_init(&go, NULL, (unsigned)nthreads + 1);
    for (i = 0; i < nthreads; i++) {
        w[i].lock = l;
        w[i].rc = rconnect();
        w[i].counter = counter;
        w[i].deadline = &deadline;
        w[i].go = &go;
        if (pthread_create(&w[i].th, NULL, contend_thread, &w[i]) != 0)
            die("pthread_create");
    }
    if (write_all(ready_fd, &b, 1) != 0 || read_all(go_fd, &b, 1) != 0)
        _exit(3);
    memset(&res, 0, sizeof res);
    res.start_ns = now_ns();
    deadline = res.start_ns + (int64_t)dur_ms * 1000000;
    pthread_barrier_wait(&go);
    for (i = 0; i < nthreads; i++) {
        pthread_join(w[i].th, NULL);
        res.acq += w[i].acq;
        res.hold_ns += w[i].hold_ns;
        res.errors += w[i].errors;
        res.nwaits += w[i].waits.n;
    }
    res.end_ns = now_ns();
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

typedef struct contend_out {
    double acq_s;
    double rl_cmds_per_acq;
} contend_out;

static contend_out run_contend(int procs, int w, long dur_ms, const contend_out *at4)
{
    char name[100], counter[100];
    redisContext *rc = rconnect();
    cstats *a = xmalloc(sizeof *a), *b = xmalloc(sizeof *b);
    samples waits = { 0 };
    pid_t pids[64];
    int ready[64][2], go[64][2], res[64][2];
    long acq = 0;
    int64_t hold_ns = 0, start = INT64_MAX, end = 0;
    int errors = 0, i, per = w / procs;
    long long counter_v = 0, lost;
    contend_out out;
    targets t = { .any = 0 };
    cmdacct ca;
    redisReply *r;
    rec rr = { .n = 0 };
    double secs, acq_s, wp50, hold_mean, handoff;

    if (procs > 64 || per * procs != w)
        die("contend: W=%d does not split over %d processes", w, procs);
    snprintf(name, sizeof name, "contend:%s:%dx%d", g_run, procs, per);
    snprintf(counter, sizeof counter, "rlbench:counter:%s:%dx%d", g_run, procs, per);
    freeReplyObject(rcmd(rc, "DEL %s", counter));
    fflush(stdout);
    fflush(stderr);
    if (g_csv)
        fflush(g_csv);
    for (i = 0; i < procs; i++) {
        if (pipe(ready[i]) || pipe(go[i]) || pipe(res[i]))
            die("pipe: %s", strerror(errno));
        pids[i] = fork();
        if (pids[i] < 0)
            die("fork: %s", strerror(errno));
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
            die("contend: a child process died before starting");
    }
    cstats_get(rc, a);
    for (i = 0; i < procs; i++) {
        char c = 'g';
        if (write_all(go[i][1], &c, 1) != 0)
            die("contend: cannot start a child");
    }
    for (i = 0; i < procs; i++) {
        cres cr;
        double *v;
        int status;
        if (read_all(res[i][0], &cr, sizeof cr) != 0)
            die("contend: a child process died");
        v = xmalloc(cr.nwaits * sizeof *v);
        if (read_all(res[i][0], v, cr.nwaits * sizeof *v) != 0)
            die("contend: a child process died");
        s_append(&waits, v, cr.nwaits);
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
            warnx("contend: child %d exited abnormally (status %d)", (int)pids[i], status);
            errors++;
        }
        close(ready[i][0]);
        close(go[i][1]);
        close(res[i][0]);
    }
    cstats_get(rc, b);
    cs_account(a, b, &ca);
    r = rcmd(rc, "GET %s", counter);
    if (r->type == REDIS_REPLY_STRING)
        counter_v = atoll(r->str);
    freeReplyObject(r);
    freeReplyObject(rcmd(rc, "DEL %s", counter));
    g_errors += errors;

    secs = (double)(end - start) / 1e9;
    acq_s = acq / secs;
    lost = acq - counter_v;
    wp50 = s_pct(&waits, 50);
    hold_mean = acq ? (double)hold_ns / (double)acq / 1000.0 : 0;
    /* Time the lock spends between holders, when it is never idle. */
    handoff = acq ? secs * 1e6 / (double)acq - hold_mean : 0;

    rec_add(&rr, "workload", "%s", procs == 1 ? "contend" : "contend_mp");
    rec_add(&rr, "procs", "%d", procs);
    rec_add(&rr, "threads", "%d", w);
    rec_add(&rr, "acq", "%ld", acq);
    rec_add(&rr, "seconds", "%.2f", secs);
    rec_add(&rr, "acq_s", "%.0f", acq_s);
    rec_add(&rr, "acq_s_ratio_ceiling", "%.4f", rb_rate(w) > 0 ? acq_s / (rb_rate(w) / 2) : 0);
    rec_add(&rr, "wait_p50_us", "%.0f", wp50);
    rec_add(&rr, "wait_p99_us", "%.0f", s_pct(&waits, 99));
    rec_add(&rr, "wait_max_us", "%.0f", s_max(&waits));
    rec_add(&rr, "wait_mean_us", "%.0f", s_mean(&waits));
    rec_add(&rr, "ping_p50_us", "%.1f", g_ping_p50);
    rec_add(&rr, "wait_p50_ratio_ping", "%.1f", wp50 / g_ping_p50);
    rec_add(&rr, "hold_mean_us", "%.0f", hold_mean);
    rec_add(&rr, "handoff_us", "%.0f", handoff);
    rec_add(&rr, "handoff_ratio_ping", "%.2f", handoff / g_ping_p50);
    rec_add(&rr, "counter", "%lld", counter_v);
    rec_add(&rr, "lost", "%lld", lost);
    rec_add(&rr, "errors", "%d", errors);
    add_cmd_fields(&rr, &ca, (double)acq, "acq");
    tgt_check(&t, "lost=0", lost == 0);
    if (procs == 1 && w == 4) {
        tgt_check(&t, "acq_s>=600", acq_s >= 600);
        tgt_check(&t, "wait_max_ms<=50", s_max(&waits) <= 50000);
    }
    if (w == 32) {
        double rl_per = acq ? (double)ca.rl_top / (double)acq : 1e9;
        tgt_check(&t, "rl_cmds_per_acq<=5", rl_per <= 5);
        if (at4 && at4->acq_s > 0) {
            char cond[64];
            snprintf(cond, sizeof cond, "acq_s>=W4(%.0f)", at4->acq_s);
            tgt_check(&t, cond, acq_s >= at4->acq_s);
        }
    }
    tgt_emit(&rr, &t);
    rec_emit(&rr);

    out.acq_s = acq_s;
    out.rl_cmds_per_acq = acq ? (double)ca.rl_top / (double)acq : 0;
    s_free(&waits);
    free(a);
    free(b);
    redisFree(rc);
    return out;
}

/* ======================================================================
 * spread: T threads, each on its own name
 * ====================================================================== */

typedef struct sworker {
    pthread_t th;
    rl_lock *lock;
    const int64_t *deadline;
    pthread_barrier_t *go;
    samples lat;
    long pairs;
} sworker;

static void *spread_thread(void *arg)
{
    sworker *w = arg;
    int st;

    pthread_barrier_wait(w->go);
    while (now_ns() < *w->deadline) {
        int64_t t0 = now_ns();
        if ((st = rl_lock_acquire(w->lock)) != RL_OK) {
            rl_fail("spread acquire", st);
            break;
        }
        if ((st = rl_lock_release(w->lock)) != RL_OK)
            rl_fail("spread release", st);
        w->pairs++;
        s_push(&w->lat, (double)(now_ns() - t0) / 1000.0);
    }
    return NULL;
}

/*
 * One spread run on tg. On the cluster, thread i's name lives on master
 * i % masters (names are drawn until one does): the names spread over the
 * masters as evenly as T allows, and `single` is the single server's rate
 * with as many threads, measured just before. Returns pairs/s.
 */
static double run_spread(const target *tg, int nthreads, long dur_ms, double single)
{
    int cluster = tg == &g_cluster;
    rl_client *c = make_client_at(tg->url, 0, 0);
    redisContext *cs[NODES_MAX];
    sworker *w = calloc((size_t)nthreads, sizeof *w);
    cstats *na = xmalloc(sizeof *na * (size_t)tg->n), *nb = xmalloc(sizeof *nb * (size_t)tg->n);
    cstats *a = xmalloc(sizeof *a), *b = xmalloc(sizeof *b);
    samples lat = { 0 }, ping = { 0 };
    pthread_barrier_t go;
    int64_t deadline = 0, start, end;
    long pairs = 0;
    double ping50;
    cmdacct ca;
    targets t = { .any = 0 };
    rec r = { .n = 0 };
    double secs, rate, ceiling;
    int names[NODES_MAX] = { 0 }, i, k, st;
    char name[200], by_master[200] = "", evalsha_by[200] = "";

    if (!w)
        die("out of memory");
    tg_connect_all(tg, cs);
    pthread_barrier_init(&go, NULL, (unsigned)nthreads + 1);
    for (i = 0; i < nthreads; i++) {
        snprintf(name, sizeof name, "spread:%s:%s:%d:%d", g_run, tg->mode, nthreads, i);
        for (k = 0; cluster && cluster_master_of(tg, cs[0], name) != i % tg->n; k++)
            snprintf(name, sizeof name, "spread:%s:%s:%d:%d.%d", g_run, tg->mode, nthreads, i, k);
        names[i % tg->n]++;
        w[i].lock = make_lock(c, "%s", name);
        w[i].deadline = &deadline;
        w[i].go = &go;
        /* Warm up: open the pool connections before measuring. */
        if ((st = rl_lock_acquire(w[i].lock)) != RL_OK || (st = rl_lock_release(w[i].lock)) != RL_OK)
            rl_fail("spread warm-up", st);
        if (pthread_create(&w[i].th, NULL, spread_thread, &w[i]) != 0)
            die("pthread_create");
    }
    /* PING round trip just before, for the ratio (the first master's). */
    for (i = 0; i < 1000; i++) {
        int64_t t0 = now_ns();
        freeReplyObject(rcmd(cs[0], "PING"));
        s_push(&ping, (double)(now_ns() - t0) / 1000.0);
    }
    ping50 = s_pct(&ping, 50);
    tg_stats(tg, cs, na, a);
    start = now_ns();
    deadline = start + (int64_t)dur_ms * 1000000;
    pthread_barrier_wait(&go);
    for (i = 0; i < nthreads; i++) {
        pthread_join(w[i].th, NULL);
        pairs += w[i].pairs;
        s_append(&lat, w[i].lat.v, w[i].lat.n);
        s_free(&w[i].lat);
        rl_lock_free(w[i].lock);
    }
    end = now_ns();
    tg_stats(tg, cs, nb, b);
    cs_account(a, b, &ca);
    secs = (double)(end - start) / 1e9;
    rate = pairs / secs;
    ceiling = rb_rate(nthreads) / 2;
    for (i = 0; i < tg->n; i++) {
        size_t l = strlen(by_master), le = strlen(evalsha_by);
        snprintf(by_master + l, sizeof by_master - l, "%s%d", i ? "/" : "", names[i]);
        snprintf(evalsha_by + le, sizeof evalsha_by - le, "%s%.2f", i ? "/" : "",
                 (double)(cs_calls(&nb[i], "evalsha", NULL) - cs_calls(&na[i], "evalsha", NULL)) /
                     (pairs ? (double)pairs : 1));
    }

    rec_add(&r, "workload", "%s", cluster ? "spread_cluster" : "spread");
    rec_add(&r, "mode", "%s", tg->mode);
    rec_add(&r, "procs", "1");
    rec_add(&r, "threads", "%d", nthreads);
    if (cluster) {
        rec_add(&r, "masters", "%d", tg->n);
        rec_add(&r, "names_by_master", "%s", by_master);
    }
    rec_add(&r, "n", "%ld", pairs);
    rec_add(&r, "seconds", "%.2f", secs);
    rec_add(&r, "pairs_s", "%.0f", rate);
    if (cluster) {
        rec_add(&r, "pairs_s_single", "%.0f", single);
        rec_add(&r, "pairs_s_ratio_single", "%.3f", single > 0 ? rate / single : 0);
    }
    rec_add(&r, "ceiling_pairs_s", "%.0f", ceiling);
    rec_add(&r, "pairs_s_ratio_ceiling", "%.3f", ceiling > 0 ? rate / ceiling : 0);
    rec_add(&r, "p50_us", "%.1f", s_pct(&lat, 50));
    rec_add(&r, "p99_us", "%.1f", s_pct(&lat, 99));
    rec_add(&r, "max_us", "%.1f", s_max(&lat));
    rec_add(&r, "ping_p50_us", "%.1f", ping50);
    rec_add(&r, "p50_ratio_ping", "%.2f", s_pct(&lat, 50) / ping50);
    add_cmd_fields(&r, &ca, (double)pairs, "pair");
    if (cluster)
        rec_add(&r, "evalsha_per_pair_by_master", "%s", evalsha_by);
    if (!cluster && nthreads == 8) {
        if (ceiling > 0)
            tgt_check(&t, "pairs_s>=0.6*rb_evalsha_c8/2", rate >= 0.6 * ceiling);
        else
            tgt_check(&t, "pairs_s>=0.6*rb_evalsha_c8/2(no_baseline)", 0);
    }
    tgt_emit(&r, &t);
    rec_emit(&r);

    s_free(&lat);
    s_free(&ping);
    free(w);
    free(na);
    free(nb);
    free(a);
    free(b);
    tg_free_all(tg, cs);
    rl_client_free(c);
    return rate;
}

/* ======================================================================
 * watchdog: K locks held by one process; cost of one renewal tick
 * ====================================================================== */

static pid_t gettid_(void)
{
    return (pid_t)syscall(SYS_gettid);
}

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

static int read_file(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY);
    ssize_t k;

    if (fd < 0)
        return -1;
    k = read(fd, buf, cap - 1);
    close(fd);
    if (k < 0)
        return -1;
    buf[k] = '\0';
    return 0;
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
    if (read_file(path, buf, sizeof buf) == 0)
        o->cpu_ns = strtoull(buf, NULL, 10);
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    if (read_file(path, buf, sizeof buf) == 0 && (p = strrchr(buf, ')')) != NULL) {
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
    if (read_file(path, buf, sizeof buf) == 0 && (p = strstr(buf, "\nvoluntary_ctxt_switches:")))
        o->vcs = strtoull(p + 25, NULL, 10);
    snprintf(path, sizeof path, "/proc/self/task/%d/io", (int)tid);
    if (read_file(path, buf, sizeof buf) == 0) {
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
            rl_fail("watchdog acquire", st);
            w->errors++;
        }
    pthread_barrier_wait(w->held);
    pthread_barrier_wait(w->release);
    for (i = 0; i < w->n; i++)
        if (rl_lock_hold_count(w->locks[i]) > 0 && (st = rl_lock_release(w->locks[i])) != RL_OK) {
            rl_fail("watchdog release", st);
            w->errors++;
        }
    return NULL;
}

/*
 * Watch the watchdog thread's CPU clock every millisecond. A tick is a burst
 * of CPU use; it ends after `quiet_ms` without any. Returns when `want`
 * bursts have ended or `limit_ms` passed; fills walls (ms) and cpus (ms).
 */
static int watch_bursts(int fd, int want, long quiet_ms, long limit_ms, double *walls, double *cpus)
{
    int64_t t_end = now_ns() + limit_ms * 1000000, prev_t = now_ns(), burst_start = 0, last_change = 0;
    unsigned long long cpu = task_cpu_ns(fd), cpu_start = 0;
    int in = 0, got = 0;

    while (got < want && now_ns() < t_end) {
        unsigned long long c2;
        int64_t t;
        sleep_us(1000);
        t = now_ns();
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

/* What the single-server watchdog run measured, for the cluster's ratios. */
typedef struct wdres {
    int got;                /* ticks seen */
    double wall_max, wall_mean, cpu;
} wdres;

/*
 * Round trips per tick: the watchdog writes each master's renewal calls in
 * one write (a blocking socket takes the whole pipelined batch), then reads
 * that master's replies: one round trip per write. Its writes in the
 * window, less the slot-map refreshes (CLUSTER SLOTS, every 30 s) that may
 * fall in it, per tick.
 */
static wdres run_watchdog(const target *tg, int k, int nthreads, const wdres *single)
{
    enum { TICKS = 3 };
    int cluster = tg == &g_cluster;
    rl_client *c = make_client_at(tg->url, 3000, 0);
    redisContext *cs[NODES_MAX];
    rl_lock **locks = xmalloc(sizeof *locks * (size_t)k);
    wdworker *w = calloc((size_t)nthreads, sizeof *w);
    cstats *a = xmalloc(sizeof *a), *b = xmalloc(sizeof *b);
    cstats *na = xmalloc(sizeof *na * (size_t)tg->n), *nb = xmalloc(sizeof *nb * (size_t)tg->n);
    pid_t before[256], after[256], wd_tid = 0;
    int nbefore, nafter, i, j, st, per, got, fd, errors = 0, answered = 0, masters_renewed = 0;
    pthread_barrier_t held, release;
    double walls[TICKS + 1], cpus[TICKS + 1], wall_max = 0, wall_sum = 0, cpu_sum = 0, idle_dummy[1];
    double round_trips = 0, server_ms_max = 0;
    int64_t t0, t_acq, t_rel;
    tstat s0, s1, i0, i1;
    cmdacct ca;
    long long min_pttl = -3, evalsha_usec0, evalsha_usec1, ev0, ev1, refreshes;
    targets t = { .any = 0 };
    rec r = { .n = 0 };
    wdres out = { 0, 0, 0, 0 };
    char path[64], by_master[200] = "";

    if (!w)
        die("out of memory");
    (void)gettid_;
    tg_connect_all(tg, cs);
    for (i = 0; i < k; i++)
        locks[i] = make_lock(c, "wd:%s:%s:%d", g_run, tg->mode, i);

    /* The watchdog thread starts on the first acquisition: find its id. */
    nbefore = list_tasks(before, 256);
    if ((st = rl_lock_acquire(locks[0])) != RL_OK)
        die("watchdog: first acquire: %s", rl_strerror(st));
    nafter = list_tasks(after, 256);
    for (i = 0; i < nafter && !wd_tid; i++) {
        int seen = 0;
        for (j = 0; j < nbefore; j++)
            if (after[i] == before[j])
                seen = 1;
        if (!seen)
            wd_tid = after[i];
    }
    if (!wd_tid)
        die("watchdog: cannot find the watchdog thread");
    snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", (int)wd_tid);
    if ((fd = open(path, O_RDONLY)) < 0)
        die("watchdog: open %s: %s", path, strerror(errno));

    /* Take the other K-1 locks with a few threads, and keep them. */
    pthread_barrier_init(&held, NULL, (unsigned)nthreads + 1);
    pthread_barrier_init(&release, NULL, (unsigned)nthreads + 1);
    per = (k - 1 + nthreads - 1) / nthreads;
    t0 = now_ns();
    for (i = 0; i < nthreads; i++) {
        int first = 1 + i * per;
        w[i].locks = locks + first;
        w[i].n = first >= k ? 0 : (first + per > k ? k - first : per);
        w[i].held = &held;
        w[i].release = &release;
        if (pthread_create(&w[i].th, NULL, wd_thread, &w[i]) != 0)
            die("pthread_create");
    }
    pthread_barrier_wait(&held);
    t_acq = now_ns() - t0;

    /* Wait for a quiet moment, then observe TICKS complete renewal ticks. */
    watch_bursts(fd, 1, 150, 1500, walls, cpus);
    task_stat(wd_tid, &s0);
    tg_stats(tg, cs, na, a);
    got = watch_bursts(fd, TICKS, 150, 1000L * (TICKS + 3), walls, cpus);
    tg_stats(tg, cs, nb, b);
    task_stat(wd_tid, &s1);
    cs_account(a, b, &ca);
    ev0 = cs_calls(a, "evalsha", &evalsha_usec0);
    ev1 = cs_calls(b, "evalsha", &evalsha_usec1);
    refreshes = cs_calls(b, "cluster", NULL) - cs_calls(a, "cluster", NULL);
    for (i = 0; i < got; i++) {
        wall_sum += walls[i];
        cpu_sum += cpus[i];
        if (walls[i] > wall_max)
            wall_max = walls[i];
    }
    if (got)
        round_trips = (double)((long long)(s1.syscw - s0.syscw) - refreshes) / got;
    /* Per master: its renewal calls per tick, and its server time (the
     * masters run their share at the same time: the largest one counts). */
    for (i = 0; i < tg->n; i++) {
        long long u0, u1, calls = cs_calls(&nb[i], "evalsha", &u1) - cs_calls(&na[i], "evalsha", &u0);
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
            redisAppendCommand(cs[j], "PTTL rl:{wd:%s:%s:%d}", g_run, tg->mode, i);
        for (i = 0; i < k; i++) {
            redisReply *rep;
            if (redisGetReply(cs[j], (void **)&rep) != REDIS_OK)
                die("PTTL: %s", cs[j]->errstr);
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
    t0 = now_ns();
    pthread_barrier_wait(&release);
    for (i = 0; i < nthreads; i++) {
        pthread_join(w[i].th, NULL);
        errors += w[i].errors;
    }
    if ((st = rl_lock_release(locks[0])) != RL_OK)
        rl_fail("watchdog release", st);
    t_rel = now_ns() - t0;
    watch_bursts(fd, 1, 300, 1500, idle_dummy, idle_dummy);
    task_stat(wd_tid, &i0);
    sleep_us(3000000);
    task_stat(wd_tid, &i1);
    close(fd);

    rec_add(&r, "workload", "%s", cluster ? "watchdog_cluster" : "watchdog");
    rec_add(&r, "mode", "%s", tg->mode);
    rec_add(&r, "procs", "1");
    rec_add(&r, "threads", "%d", nthreads + 1);
    rec_add(&r, "masters", "%d", tg->n);
    rec_add(&r, "n", "%d", k);
    rec_add(&r, "lease_ms", "3000");
    rec_add(&r, "acquire_all_ms", "%.0f", (double)t_acq / 1e6);
    rec_add(&r, "acquire_per_lock_us", "%.1f", (double)t_acq / 1e3 / (k - 1));
    rec_add(&r, "release_all_ms", "%.0f", (double)t_rel / 1e6);
    rec_add(&r, "ticks_seen", "%d", got);
    rec_add(&r, "tick_wall_ms_mean", "%.1f", got ? wall_sum / got : 0);
    rec_add(&r, "tick_wall_ms_max", "%.1f", wall_max);
    rec_add(&r, "tick_wall_ratio_ping", "%.0f", got ? wall_max * 1000 / g_ping_p50 : 0);
    if (cluster && single) {
        rec_add(&r, "tick_wall_ms_max_single", "%.1f", single->wall_max);
        rec_add(&r, "tick_wall_max_ratio_single", "%.2f",
                single->wall_max > 0 ? wall_max / single->wall_max : 0);
        rec_add(&r, "tick_wall_ms_mean_single", "%.1f", single->wall_mean);
        rec_add(&r, "tick_wall_mean_ratio_single", "%.2f",
                got && single->wall_mean > 0 ? wall_sum / got / single->wall_mean : 0);
    }
    rec_add(&r, "tick_cpu_ms", "%.1f", got ? cpu_sum / got : 0);
    if (cluster && single)
        rec_add(&r, "tick_cpu_ms_single", "%.1f", single->cpu);
    rec_add(&r, "tick_round_trips", "%.1f", round_trips);
    rec_add(&r, "masters_renewed", "%d", masters_renewed);
    rec_add(&r, "tick_evalsha", "%.1f", got ? (double)(ev1 - ev0) / got : 0);
    if (cluster)
        rec_add(&r, "tick_evalsha_by_master", "%s", by_master);
    rec_add(&r, "tick_rl_cmds", "%.1f", got ? (double)ca.rl_top / got : 0);
    rec_add(&r, "tick_server_ms", "%.1f", got ? (double)(evalsha_usec1 - evalsha_usec0) / 1e3 / got : 0);
    if (cluster)
        rec_add(&r, "tick_server_ms_max_master", "%.1f", server_ms_max);
    rec_add(&r, "slot_map_refreshes", "%lld", refreshes);
    rec_add(&r, "tick_write_syscalls", "%.1f", got ? (double)(s1.syscw - s0.syscw) / got : 0);
    rec_add(&r, "tick_read_syscalls", "%.1f", got ? (double)(s1.syscr - s0.syscr) / got : 0);
    rec_add(&r, "tick_blocking_waits", "%.1f", got ? (double)(s1.vcs - s0.vcs) / got : 0);
    rec_add(&r, "min_pttl_ms", "%lld", min_pttl);
    rec_add(&r, "idle_cpu_ticks", "%llu", i1.ticks - i0.ticks);
    rec_add(&r, "idle_cpu_ns", "%llu", i1.cpu_ns - i0.cpu_ns);
    rec_add(&r, "idle_wakeups", "%llu", i1.vcs - i0.vcs);
    rec_add(&r, "errors", "%d", errors);
    tgt_check(&t, "ticks_seen>=1", got >= 1);
    if (!cluster) {
        tgt_check(&t, "tick_wall_ms<=100", got >= 1 && wall_max <= 100);
        tgt_check(&t, "tick_evalsha<=10", got >= 1 && (double)(ev1 - ev0) / got <= 10);
    } else {
        char cond[64];
        snprintf(cond, sizeof cond, "tick_round_trips=masters(%d)", tg->n);
        tgt_check(&t, cond, got >= 1 && masters_renewed == tg->n && round_trips == tg->n);
        snprintf(cond, sizeof cond, "tick_wall_ms_max<=single(%.1f)x1.0",
                 single ? single->wall_max : 0);
        tgt_check(&t, cond, got >= 1 && single && single->got && wall_max <= single->wall_max);
    }
    tgt_check(&t, "all_held(min_pttl>0)", min_pttl > 0);
    tgt_check(&t, "idle_cpu_ticks=0", i1.ticks == i0.ticks);
    tgt_emit(&r, &t);
    rec_emit(&r);

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
    tg_free_all(tg, cs);
    rl_client_free(c);
    return out;
}

/* ======================================================================
 * reentry: depth-10 nested acquire/release
 * ====================================================================== */

static void run_reentry(int cycles)
{
    enum { DEPTH = 10 };
    rl_client *c = make_client(0, 0);
    rl_lock *l = make_lock(c, "reentry:%s", g_run);
    samples first = { 0 }, racq = { 0 }, rrel = { 0 }, last = { 0 }, cycle = { 0 }, ping = { 0 };
    redisContext *pc = rconnect();
    double ping50;
    rec r = { .n = 0 };
    targets t = { .any = 0 };
    double per_level;
    int i, d, st;

    for (i = 0; i < cycles + 20; i++) {
        int64_t c0 = now_ns();
        freeReplyObject(rcmd(pc, "PING"));
        if (i >= 20)
            s_push(&ping, (double)(now_ns() - c0) / 1000.0);
        c0 = now_ns();
        for (d = 0; d < DEPTH; d++) {
            int64_t t0 = now_ns();
            if ((st = rl_lock_acquire(l)) != RL_OK)
                rl_fail("reentry acquire", st);
            if (i >= 20)
                s_push(d ? &racq : &first, (double)(now_ns() - t0) / 1000.0);
        }
        if (rl_lock_hold_count(l) != DEPTH)
            rl_fail("reentry hold count", RL_EPROTO);
        for (d = DEPTH - 1; d >= 0; d--) {
            int64_t t0 = now_ns();
            if ((st = rl_lock_release(l)) != RL_OK)
                rl_fail("reentry release", st);
            if (i >= 20)
                s_push(d ? &rrel : &last, (double)(now_ns() - t0) / 1000.0);
        }
        if (i >= 20)
            s_push(&cycle, (double)(now_ns() - c0) / 1000.0);
    }
    per_level = s_pct(&racq, 50) + s_pct(&rrel, 50);
    ping50 = s_pct(&ping, 50);
    rec_add(&r, "workload", "reentry");
    rec_add(&r, "procs", "1");
    rec_add(&r, "threads", "1");
    rec_add(&r, "n", "%d", cycles);
    rec_add(&r, "depth", "%d", DEPTH);
    rec_add(&r, "first_acq_p50_us", "%.1f", s_pct(&first, 50));
    rec_add(&r, "reenter_p50_us", "%.1f", s_pct(&racq, 50));
    rec_add(&r, "reenter_p99_us", "%.1f", s_pct(&racq, 99));
    rec_add(&r, "inner_release_p50_us", "%.1f", s_pct(&rrel, 50));
    rec_add(&r, "last_release_p50_us", "%.1f", s_pct(&last, 50));
    rec_add(&r, "p50_us", "%.1f", per_level);
    rec_add(&r, "level_us", "%.1f", per_level);
    rec_add(&r, "cycle_p50_us", "%.1f", s_pct(&cycle, 50));
    rec_add(&r, "ping_p50_us", "%.1f", ping50);
    rec_add(&r, "p50_ratio_ping", "%.2f", per_level / ping50);
    rec_add(&r, "reenter_ratio_ping", "%.2f", s_pct(&racq, 50) / ping50);
    tgt_emit(&r, &t);
    rec_emit(&r);
    s_free(&first);
    s_free(&racq);
    s_free(&rrel);
    s_free(&last);
    s_free(&cycle);
    s_free(&ping);
    redisFree(pc);
    rl_lock_free(l);
    rl_client_free(c);
}

/* ======================================================================
 * alloc: allocations per uncontended acquire/release pair after warm-up
 * ====================================================================== */

/* "object:symbol" of a call site, for the allocation site list. */
static void site_name(void *site, char *buf, size_t cap)
{
    Dl_info di;
    const char *obj, *slash;

    if (dladdr(site, &di) && di.dli_fname) {
        obj = di.dli_fname;
        slash = strrchr(obj, '/');
        if (slash)
            obj = slash + 1;
        snprintf(buf, cap, "%.*s:%s", (int)strcspn(obj, "."), obj,
                 di.dli_sname ? di.dli_sname : "?");
    } else {
        snprintf(buf, cap, "%p", site);
    }
}

static void run_alloc(int n)
{
    rl_client *c = make_client(0, 0);
    rl_lock *l = make_lock(c, "alloc:%s", g_run);
    unsigned long a_acq = 0, a_rel = 0, f_pair = 0, ga0, ga1, control = 0;
    rec r = { .n = 0 };
    targets t = { .any = 0 };
    char sites[190] = "", names[TRACE_MAX][96];
    int counts[TRACE_MAX], nn = 0, i, j, st, nsites;
    double per_pair;

    for (i = 0; i < 200; i++)
        if ((st = rl_lock_acquire(l)) != RL_OK || (st = rl_lock_release(l)) != RL_OK)
            rl_fail("alloc warm-up", st);
    ga0 = atomic_load(&g_allocs);
    for (i = 0; i < n; i++) {
        unsigned long x0 = tl_allocs, f0 = tl_frees, x1;
        if ((st = rl_lock_acquire(l)) != RL_OK)
            rl_fail("alloc acquire", st);
        x1 = tl_allocs;
        if ((st = rl_lock_release(l)) != RL_OK)
            rl_fail("alloc release", st);
        a_acq += x1 - x0;
        a_rel += tl_allocs - x1;
        f_pair += tl_frees - f0;
    }
    ga1 = atomic_load(&g_allocs);

    /* One more pair with call sites recorded. */
    tl_nsites = 0;
    tl_trace = 1;
    if ((st = rl_lock_acquire(l)) != RL_OK || (st = rl_lock_release(l)) != RL_OK)
        rl_fail("alloc traced pair", st);
    tl_trace = 0;
    nsites = tl_nsites;
    for (i = 0; i < nsites; i++) {
        char nm[96];
        site_name(tl_sites[i], nm, sizeof nm);
        for (j = 0; j < nn && strcmp(names[j], nm) != 0; j++)
            ;
        if (j == nn) {
            snprintf(names[nn], sizeof names[0], "%s", nm);
            counts[nn++] = 0;
        }
        counts[j]++;
    }
    for (j = 0; j < nn; j++) {
        size_t len = strlen(sites);
        snprintf(sites + len, sizeof sites - len, "%s%s*%d", j ? "," : "", names[j], counts[j]);
    }

    /* Control: a plain hiredis PING allocates; shows the counting is live. */
    {
        redisContext *rc = rconnect();
        unsigned long x0;
        freeReplyObject(rcmd(rc, "PING"));
        x0 = tl_allocs;
        freeReplyObject(rcmd(rc, "PING"));
        control = tl_allocs - x0;
        redisFree(rc);
    }

    per_pair = (double)(a_acq + a_rel) / n;
    rec_add(&r, "workload", "alloc");
    rec_add(&r, "procs", "1");
    rec_add(&r, "threads", "1");
    rec_add(&r, "n", "%d", n);
    if (ALLOC_HOOK) {
        rec_add(&r, "allocs_per_pair", "%.2f", per_pair);
        rec_add(&r, "allocs_per_acquire", "%.2f", (double)a_acq / n);
        rec_add(&r, "allocs_per_release", "%.2f", (double)a_rel / n);
        rec_add(&r, "frees_per_pair", "%.2f", (double)f_pair / n);
        rec_add(&r, "process_allocs_per_pair", "%.2f", (double)(ga1 - ga0) / n);
        rec_add(&r, "sites", "%s", nsites ? sites : "-");
        rec_add(&r, "control_hiredis_ping_allocs", "%lu", control);
        tgt_check(&t, "allocs_per_pair=0", per_pair == 0);
    } else {
        rec_add(&r, "allocs_per_pair", "na");
        rec_add(&r, "note", "built_without_the_allocation_hook(sanitizer)");
    }
    tgt_emit(&r, &t);
    rec_emit(&r);
    rl_lock_free(l);
    rl_client_free(c);
}

/* ======================================================================
 * main
 * ====================================================================== */

static void usage(void)
{
    fprintf(stderr,
            "usage: rlbench --url redis://HOST:PORT [options]\n"
            "  --cluster-url URL   redis://HOST:PORT[,HOST:PORT...] of a Redis Cluster:\n"
            "                      spread and watchdog run there too (spread_cluster,\n"
            "                      watchdog_cluster), with ratios to the single server\n"
            "  --csv FILE          also write the figures as CSV\n"
            "  --rb C:RATE,...     redis-benchmark EVALSHA rates by client count (baseline)\n"
            "  --only LIST         workloads, comma-separated (default: all):\n"
            "                      solo,contend,contend_mp,spread,watchdog,reentry,alloc\n"
            "  --seconds S         duration of each contend/spread step (default 3)\n"
            "  --solo-n N          acquire/release pairs of solo (default 5000)\n"
            "  --watchdog-k K      locks held by the watchdog workload (default 10000)\n"
            "  --contend-w LIST    W values of contend (default 1,2,4,8,16,32)\n"
            "  --spread-t LIST     T values of spread (default 1,2,4,8)\n");
    exit(2);
}

static int wanted(const char *only, const char *name)
{
    const char *p = only;
    size_t l = strlen(name);

    if (!only)
        return 1;
    while ((p = strstr(p, name)) != NULL) {
        if ((p == only || p[-1] == ',') && (p[l] == ',' || p[l] == '\0'))
            return 1;
        p += l;
    }
    return 0;
}

static int parse_list(const char *s, int *out, int max)
{
    int n = 0;

    while (s && *s && n < max) {
        out[n++] = atoi(s);
        s = strchr(s, ',');
        if (s)
            s++;
    }
    return n;
}

int main(int argc, char **argv)
{
    const char *csv = NULL, *only = NULL;
    double seconds = 3;
    int solo_n = 5000, wd_k = 10000, i;
    int ws[16] = { 1, 2, 4, 8, 16, 32 }, nw = 6, ts[16] = { 1, 2, 4, 8 }, nt = 4;
    contend_out c4 = { 0, 0 }, c4mp = { 0, 0 };

    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            usage();
        i++;
        if (strcmp(a, "--url") == 0) {
            snprintf(g_url, sizeof g_url, "%s", v);
        } else if (strcmp(a, "--cluster-url") == 0) {
            snprintf(g_cluster.url, sizeof g_cluster.url, "%s", v);
        } else if (strcmp(a, "--csv") == 0) {
            csv = v;
        } else if (strcmp(a, "--rb") == 0) {
            const char *p = v;
            while (p && *p) {
                int cl = atoi(p);
                const char *colon = strchr(p, ':');
                if (!colon || cl <= 0 || cl >= 65)
                    die("bad --rb %s", v);
                g_rb[cl] = atof(colon + 1);
                p = strchr(colon, ',');
                if (p)
                    p++;
            }
        } else if (strcmp(a, "--only") == 0) {
            only = v;
        } else if (strcmp(a, "--seconds") == 0) {
            seconds = atof(v);
        } else if (strcmp(a, "--solo-n") == 0) {
            solo_n = atoi(v);
        } else if (strcmp(a, "--watchdog-k") == 0) {
            wd_k = atoi(v);
        } else if (strcmp(a, "--contend-w") == 0) {
            nw = parse_list(v, ws, 16);
        } else if (strcmp(a, "--spread-t") == 0) {
            nt = parse_list(v, ts, 16);
        } else {
            usage();
        }
    }
    if (!g_url[0])
        usage();
    if (sscanf(g_url, "redis://%255[^:/]:%d", g_host, &g_port) < 1)
        die("--url must look like redis://HOST:PORT");
    snprintf(g_single.url, sizeof g_single.url, "%s", g_url);
    snprintf(g_single.host[0], sizeof g_single.host[0], "%s", g_host);
    g_single.port[0] = g_port;
    if (g_cluster.url[0])
        cluster_discover(&g_cluster);
    if (seconds <= 0 || solo_n <= 0 || wd_k < 2)
        die("bad option value");
    snprintf(g_run, sizeof g_run, "%d.%lld", (int)getpid(), (long long)(now_ns() / 1000000 % 100000000));
    if (csv) {
        g_csv = fopen(csv, "w");
        if (!g_csv)
            die("cannot write %s: %s", csv, strerror(errno));
        csv_header();
    }

    run_baseline(5000);
    if (wanted(only, "solo"))
        run_solo(solo_n);
    if (wanted(only, "reentry"))
        run_reentry(300);
    if (wanted(only, "alloc"))
        run_alloc(2000);
    if (wanted(only, "contend"))
        for (i = 0; i < nw; i++) {
            contend_out o = run_contend(1, ws[i], (long)(seconds * 1000), &c4);
            if (ws[i] == 4)
                c4 = o;
        }
    if (wanted(only, "contend_mp"))
        for (i = 0; i < nw; i++) {
            int p = ws[i] < 4 ? ws[i] : 4;
            contend_out o;
            if (ws[i] < 2 || ws[i] % p)
                continue;
            o = run_contend(p, ws[i], (long)(seconds * 1000), &c4mp);
            if (ws[i] == 4)
                c4mp = o;
        }
    /* Each cluster run right after its single-server twin: this machine's
     * speed drifts from one minute to the next. */
    if (wanted(only, "spread"))
        for (i = 0; i < nt; i++) {
            double single = run_spread(&g_single, ts[i], (long)(seconds * 1000 * 2 / 3), 0);
            if (g_cluster.url[0])
                run_spread(&g_cluster, ts[i], (long)(seconds * 1000 * 2 / 3), single);
        }
    if (wanted(only, "watchdog")) {
        wdres single = run_watchdog(&g_single, wd_k, 4, NULL);
        if (g_cluster.url[0])
            run_watchdog(&g_cluster, wd_k, 4, &single);
    }

    if (g_csv)
        fclose(g_csv);
    if (g_errors) {
        warnx("%d rlock or Redis calls failed", g_errors);
        return 1;
    }
    return 0;
}
