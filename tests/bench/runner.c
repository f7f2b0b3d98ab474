/*
 * rlbench: rlock's benchmark program (run through scripts/bench.sh).
 * This is its runner: main and the options, and what the workloads share.
 *
 * Every figure is printed as one line of key=value pairs per workload and
 * also as a CSV row. Latencies are compared with the round trip of a plain
 * PING measured by this program at start, and throughputs with the EVALSHA
 * rate that redis-benchmark reached in the same run (passed in by
 * bench.sh with --rb CLIENTS:RATE,...).
 *
 * Workloads, one file each: baseline (wl_baseline.c), solo (wl_solo.c),
 * contend and contend_mp (wl_contend.c), spread (wl_spread.c), watchdog
 * (wl_watchdog.c), reentry (wl_reentry.c), alloc (wl_alloc.c), solo_redlock
 * (wl_redlock.c), solo_features (wl_features.c: fencing and lock-delay), contend_fair
 * (wl_contend.c), rw (wl_rw.c). See usage(). Given --cluster-url, spread and watchdog run
 * on that Redis Cluster too, right after their single-server run, and print
 * the cluster's figures as ratios to the single server's. Given
 * --redlock-url, solo_redlock and contend_redlock (wl_contend.c) compare
 * Redlocks of its first masters with the single server in the same way.
 * Last, solo_tls, contend_tls, watchdog_tls and storm_tls (wl_tls.c) start
 * a redis-server of their own with a TLS port beside its plain one, and
 * compare TLS with plain TCP in the same run.
 *
 * The program defines malloc and its relatives itself, forwarding to
 * glibc's, so that it can count every allocation made in the process,
 * including those inside librlock and hiredis.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "rlock.h"

#include "bench.h"

/* ======================================================================
 * Allocation counting
 * ====================================================================== */

_Thread_local volatile unsigned long bn_tl_allocs, bn_tl_frees;
_Thread_local int bn_tl_trace;
_Thread_local void *bn_tl_sites[BN_TRACE_MAX];
_Thread_local int bn_tl_nsites;

atomic_ulong bn_allocs;

#ifndef RLBENCH_NO_ALLOC_HOOK
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
    bn_tl_allocs++;
    atomic_fetch_add_explicit(&bn_allocs, 1, memory_order_relaxed);
    if (bn_tl_trace && bn_tl_nsites < BN_TRACE_MAX)
        bn_tl_sites[bn_tl_nsites++] = site;
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
        bn_tl_frees++;
        atomic_fetch_add_explicit(&g_frees, 1, memory_order_relaxed);
    }
    __libc_free(p);
}
#endif

/* ======================================================================
 * Small utilities
 * ====================================================================== */

int bn_errors;          /* rlock or Redis calls that failed */

void bn_die(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "rlbench: error: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

void bn_warn(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "rlbench: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void *bn_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (!p)
        bn_die("out of memory");
    return p;
}

int bn_read_file(const char *path, char *buf, size_t cap)
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

/* ---- samples --------------------------------------------------------- */

void bn_s_push(bn_samples *s, double x)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
        if (!s->v)
            bn_die("out of memory");
    }
    s->v[s->n++] = x;
}

void bn_s_append(bn_samples *s, const double *v, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        bn_s_push(s, v[i]);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile; sorts in place. */
double bn_s_pct(bn_samples *s, double p)
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

double bn_s_max(const bn_samples *s)
{
    double m = 0;
    size_t i;

    for (i = 0; i < s->n; i++)
        if (s->v[i] > m)
            m = s->v[i];
    return m;
}

double bn_s_mean(const bn_samples *s)
{
    double t = 0;
    size_t i;

    for (i = 0; i < s->n; i++)
        t += s->v[i];
    return s->n ? t / (double)s->n : 0;
}

void bn_s_free(bn_samples *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* ======================================================================
 * Output: one key=value line per workload, plus a CSV row
 * ====================================================================== */

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
    /* Added after the first columns: scripts read those by position. */
    { "nodes", "nodes", "masters", NULL },
    { "ratio_single", "p50_ratio_single", "acq_s_ratio_single", "pairs_s_ratio_single" },
};
#define NCOLS (sizeof csv_cols / sizeof csv_cols[0])

void bn_rec_add(bn_rec *r, const char *key, const char *fmt, ...)
{
    va_list ap;

    if (r->n >= BN_REC_MAX)
        bn_die("too many fields in one record");
    snprintf(r->key[r->n], sizeof r->key[0], "%s", key);
    va_start(ap, fmt);
    vsnprintf(r->val[r->n], sizeof r->val[0], fmt, ap);
    va_end(ap);
    r->n++;
}

void bn_rec_add_ref(bn_rec *r, const char *prefix, const char *ref, const char *fmt, ...)
{
    va_list ap;

    if (r->n >= BN_REC_MAX)
        bn_die("too many fields in one record");
    snprintf(r->key[r->n], sizeof r->key[0], "%s%s", prefix, ref);
    va_start(ap, fmt);
    vsnprintf(r->val[r->n], sizeof r->val[0], fmt, ap);
    va_end(ap);
    r->n++;
}

static const char *rec_get(const bn_rec *r, const char *key)
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

void bn_rec_emit(const bn_rec *r)
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

void bn_flush_output(void)
{
    fflush(stdout);
    fflush(stderr);
    if (g_csv)
        fflush(g_csv);
}

/* Targets: each check adds a condition; the record gets target= and met=. */

void bn_tgt_check(bn_targets *t, const char *cond, int ok)
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

void bn_tgt_emit(bn_rec *r, const bn_targets *t)
{
    if (!t->any) {
        bn_rec_add(r, "target", "-");
        bn_rec_add(r, "met", "-");
        return;
    }
    bn_rec_add(r, "target", "%s", t->text);
    bn_rec_add(r, "met", "%s", t->fail ? "no" : "yes");
    if (t->fail)
        bn_rec_add(r, "missed", "%s", t->missed);
}

/* ======================================================================
 * Redis helpers (hiredis, for the baseline, the counter and statistics)
 * ====================================================================== */

static char g_url[300];
static char g_host[256] = "127.0.0.1";
static int g_port = 6379;
char bn_run[32];        /* unique per run: keeps names apart */

redisContext *bn_rconnect(void)
{
    redisContext *c = redisConnect(g_host, g_port);

    if (!c || c->err)
        bn_die("connect to %s:%d: %s", g_host, g_port, c ? c->errstr : "out of memory");
    return c;
}

redisReply *bn_rcmd(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    redisReply *r;

    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (!r)
        bn_die("redis command failed: %s", c->errstr);
    if (r->type == REDIS_REPLY_ERROR)
        bn_die("redis: %s", r->str);
    return r;
}

void bn_cstats_get(redisContext *c, bn_cstats *out)
{
    redisReply *r = bn_rcmd(c, "INFO commandstats");
    const char *p = r->str;

    out->n = 0;
    while ((p = strstr(p, "cmdstat_")) != NULL && out->n < BN_CS_MAX) {
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
long long bn_cs_calls(const bn_cstats *s, const char *name, long long *usec)
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

static long long cs_total(const bn_cstats *s)
{
    long long t = 0;
    int i;

    for (i = 0; i < s->n; i++)
        t += s->calls[i];
    return t;
}

/* Add one node's statistics to a sum over nodes (sum->n = 0 to start). */
static void cs_merge(bn_cstats *sum, const bn_cstats *one)
{
    int i, j;

    for (i = 0; i < one->n; i++) {
        for (j = 0; j < sum->n && strcmp(sum->name[j], one->name[i]) != 0; j++)
            ;
        if (j == sum->n) {
            if (sum->n == BN_CS_MAX)
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

void bn_cs_account(const bn_cstats *a, const bn_cstats *b, bn_cmdacct *o)
{
    long long u0, u1;
    int i;

    memset(o, 0, sizeof *o);
    o->all = cs_total(b) - cs_total(a) - (bn_cs_calls(b, "info", NULL) - bn_cs_calls(a, "info", NULL));
    for (i = 0; rl_top_cmds[i]; i++)
        o->rl_top += bn_cs_calls(b, rl_top_cmds[i], NULL) - bn_cs_calls(a, rl_top_cmds[i], NULL);
    o->evalsha = bn_cs_calls(b, "evalsha", &u1) - bn_cs_calls(a, "evalsha", &u0);
    o->evalsha_usec = u1 - u0;
    o->subs = bn_cs_calls(b, "subscribe", NULL) - bn_cs_calls(a, "subscribe", NULL) +
              bn_cs_calls(b, "unsubscribe", NULL) - bn_cs_calls(a, "unsubscribe", NULL);
    o->ping = bn_cs_calls(b, "ping", NULL) - bn_cs_calls(a, "ping", NULL);
    o->bench_own = bn_cs_calls(b, "get", NULL) - bn_cs_calls(a, "get", NULL) +
                   bn_cs_calls(b, "set", NULL) - bn_cs_calls(a, "set", NULL) +
                   bn_cs_calls(b, "incrby", NULL) - bn_cs_calls(a, "incrby", NULL) +
                   bn_cs_calls(b, "decrby", NULL) - bn_cs_calls(a, "decrby", NULL);
    o->in_script = o->all - o->rl_top - o->bench_own;
}

void bn_add_cmd_fields(bn_rec *r, const bn_cmdacct *ca, double ops, const char *per)
{
    char k[40];

    if (ops <= 0)
        ops = 1;
    snprintf(k, sizeof k, "cmds_all_per_%s", per);
    bn_rec_add(r, k, "%.2f", (double)ca->all / ops);
    snprintf(k, sizeof k, "rl_cmds_per_%s", per);
    bn_rec_add(r, k, "%.2f", (double)ca->rl_top / ops);
    snprintf(k, sizeof k, "evalsha_per_%s", per);
    bn_rec_add(r, k, "%.2f", (double)ca->evalsha / ops);
    snprintf(k, sizeof k, "subunsub_per_%s", per);
    bn_rec_add(r, k, "%.3f", (double)ca->subs / ops);
    snprintf(k, sizeof k, "in_script_per_%s", per);
    bn_rec_add(r, k, "%.2f", (double)ca->in_script / ops);
    snprintf(k, sizeof k, "bench_getset_per_%s", per);
    bn_rec_add(r, k, "%.2f", (double)ca->bench_own / ops);
    snprintf(k, sizeof k, "evalsha_server_us_per_%s", per);
    bn_rec_add(r, k, "%.2f", (double)ca->evalsha_usec / ops);
}

/* ======================================================================
 * Targets: the single server of --url, the Redis Cluster of --cluster-url
 * ====================================================================== */

bn_target bn_single = { .mode = "single", .n = 1 };
bn_target bn_cluster = { .mode = "cluster" };
bn_target bn_redlock = { .mode = "redlock" };

static redisContext *tg_connect(const bn_target *tg, int i)
{
    redisContext *c = redisConnect(tg->host[i], tg->port[i]);

    if (!c || c->err)
        bn_die("connect to %s:%d: %s", tg->host[i], tg->port[i], c ? c->errstr : "out of memory");
    return c;
}

void bn_tg_connect_all(const bn_target *tg, redisContext **cs)
{
    int i;

    for (i = 0; i < tg->n; i++)
        cs[i] = tg_connect(tg, i);
}

void bn_tg_free_all(const bn_target *tg, redisContext **cs)
{
    int i;

    for (i = 0; i < tg->n; i++)
        redisFree(cs[i]);
}

/* INFO commandstats of every master into one[0..n), and their sum. */
void bn_tg_stats(const bn_target *tg, redisContext **cs, bn_cstats *one, bn_cstats *sum)
{
    int i;

    sum->n = 0;
    for (i = 0; i < tg->n; i++) {
        bn_cstats_get(cs[i], &one[i]);
        cs_merge(sum, &one[i]);
    }
}

/* The masters of the cluster that the first seed of tg->url belongs to, and
 * which of them owns each slot, from its CLUSTER SLOTS. */
static void cluster_discover(bn_target *tg)
{
    redisContext *c;
    redisReply *r;
    size_t i;
    int j, slot, covered = 0;

    if (sscanf(tg->url, "redis://%255[^:/,]:%d", tg->host[0], &tg->port[0]) != 2)
        bn_die("--cluster-url must look like redis://HOST:PORT[,HOST:PORT...]");
    c = tg_connect(tg, 0);
    r = bn_rcmd(c, "CLUSTER SLOTS");
    tg->n = 0;
    for (i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        redisReply *e = r->element[i], *m;
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 || (m = e->element[2])->elements < 2)
            bn_die("CLUSTER SLOTS: unexpected reply");
        for (j = 0; j < tg->n; j++)
            if (strcmp(tg->host[j], m->element[0]->str) == 0 && tg->port[j] == m->element[1]->integer)
                break;
        if (j == tg->n) {
            if (tg->n == BN_NODES_MAX)
                bn_die("more than %d masters", BN_NODES_MAX);
            snprintf(tg->host[j], sizeof tg->host[j], "%s", m->element[0]->str);
            tg->port[j] = (int)m->element[1]->integer;
            tg->n++;
        }
        for (slot = (int)e->element[0]->integer; slot <= e->element[1]->integer; slot++, covered++)
            tg->owner[slot] = (unsigned char)j;
    }
    freeReplyObject(r);
    redisFree(c);
    if (covered != BN_SLOTS)
        bn_die("the cluster at %s covers %d slots of %d", tg->url, covered, BN_SLOTS);
}

/* The masters of tg->url, redlock://HOST:PORT,HOST:PORT,... */
static void redlock_parse(bn_target *tg)
{
    const char *p = tg->url;

    if (strncmp(p, "redlock://", 10) != 0)
        bn_die("--redlock-url must look like redlock://HOST:PORT,HOST:PORT,...");
    for (p += 10, tg->n = 0; *p; tg->n++) {
        if (tg->n == BN_NODES_MAX)
            bn_die("more than %d Redlock masters", BN_NODES_MAX);
        if (sscanf(p, "%255[^:,]:%d", tg->host[tg->n], &tg->port[tg->n]) != 2)
            bn_die("--redlock-url: cannot read a HOST:PORT at '%s'", p);
        p += strcspn(p, ",");
        p += *p == ',';
    }
    if (tg->n < 3)
        bn_die("--redlock-url names %d masters; Redlock needs 3 or more", tg->n);
}

void bn_tg_redlock_first(bn_target *out, int n)
{
    size_t at;
    int i;

    if (n < 3 || n % 2 == 0 || n > bn_redlock.n)
        bn_die("a Redlock of %d masters out of the %d given", n, bn_redlock.n);
    memset(out, 0, sizeof *out);
    out->mode = bn_redlock.mode;
    out->n = n;
    at = (size_t)snprintf(out->url, sizeof out->url, "redlock://");
    for (i = 0; i < n; i++) {
        snprintf(out->host[i], sizeof out->host[i], "%s", bn_redlock.host[i]);
        out->port[i] = bn_redlock.port[i];
        at += (size_t)snprintf(out->url + at, sizeof out->url - at, "%s%s:%d", i ? "," : "",
                               out->host[i], out->port[i]);
    }
    if (at >= sizeof out->url)
        bn_die("Redlock URL too long");
}

/* ======================================================================
 * rlock helpers
 * ====================================================================== */

char bn_tls_ca[320];     /* the CA that rediss:// clients trust (wl_tls.c) */

rl_client *bn_make_client_at(const char *url, long lease_ms, int pool)
{
    rl_options o;
    rl_client *c;
    int rc;

    rl_options_init(&o, RL_OPTIONS_VERSION);
    o.url = url;
    if (bn_tls_ca[0] && strncmp(url, "rediss://", 9) == 0)
        o.tls_ca_file = bn_tls_ca;
    o.lease_ms = lease_ms;
    o.pool_size = pool;
    if ((rc = rl_client_new(&c, &o)) != RL_OK)
        bn_die("rl_client_new(%s): %s: %s", url, rl_strerror(rc), rl_last_error());
    return c;
}

rl_client *bn_make_client(long lease_ms, int pool)
{
    return bn_make_client_at(g_url, lease_ms, pool);
}

rl_lock *bn_make_lock(rl_client *c, const char *fmt, ...)
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
        bn_die("rl_lock_new(%s): %s: %s", name, rl_strerror(rc), rl_last_error());
    return l;
}

/* A failed call: counted, first few reported. */
static atomic_int g_fail_reports;
void bn_fail(const char *what, int rc)
{
    __atomic_add_fetch(&bn_errors, 1, __ATOMIC_RELAXED);
    if (atomic_fetch_add(&g_fail_reports, 1) < 10)
        bn_warn("%s failed: %s: %s", what, rl_strerror(rc), rl_last_error());
}

/* ======================================================================
 * main
 * ====================================================================== */

static double g_rb[65];                      /* redis-benchmark EVALSHA rate by clients */

double bn_rb_rate(int clients)
{
    return clients >= 0 && clients < 65 ? g_rb[clients] : 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: rlbench --url redis://HOST:PORT [options]\n"
            "  --cluster-url URL   redis://HOST:PORT[,HOST:PORT...] of a Redis Cluster:\n"
            "                      spread and watchdog run there too (spread_cluster,\n"
            "                      watchdog_cluster), with ratios to the single server\n"
            "  --redlock-url URL   redlock://HOST:PORT,... of independent masters (as\n"
            "                      many as the largest --redlock-n): solo_redlock and\n"
            "                      contend_redlock compare Redlocks of its first\n"
            "                      masters with the single server\n"
            "  --redlock-n LIST    Redlock sizes of solo_redlock (default 3,5); the\n"
            "                      largest is contend_redlock's\n"
            "  --redlock-contend LIST  P:W:NAMES shapes of contend_redlock (default\n"
            "                      1:4:1,4:8:2: W threads in P processes on NAMES names)\n"
            "  --csv FILE          also write the figures as CSV\n"
            "  --rb C:RATE,...     redis-benchmark EVALSHA rates by client count (baseline)\n"
            "  --only LIST         workloads, comma-separated (default: all):\n"
            "                      solo,solo_features,contend,contend_mp,contend_fair,\n"
            "                      spread,watchdog,reentry,alloc,solo_redlock,\n"
            "                      contend_redlock (redlock: both),rw,solo_sem,\n"
            "                      contend_sem,set4 (sem: these three)\n"
            "  --seconds S         duration of each contend/spread step (default 3)\n"
            "  --solo-n N          acquire/release pairs of solo (default 5000)\n"
            "  --watchdog-k K      locks held by the watchdog workload (default 10000)\n"
            "  --contend-w LIST    W values of contend (default 1,2,4,8,16,32)\n"
            "  --spread-t LIST     T values of spread (default 1,2,4,8)\n"
            "  --sem 0             skip solo_sem, contend_sem and set4\n"
            "  --tls 0             skip the TLS workloads (solo_tls, contend_tls,\n"
            "                      watchdog_tls, storm_tls; --only tls: all four). They\n"
            "                      start their own redis-server with a TLS port beside\n"
            "                      the plain one, and compare the two in the same run\n"
            "  --tls-contend LIST  P:W shapes of contend_tls, one name (default 1:4,4:8)\n"
            "  --tls-storm-ms MS   length of storm_tls on each port (default 8000)\n"
            "  --tls-kill-ms MS    storm_tls: CLIENT KILL TYPE normal every MS (default 500)\n");
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

/* The --tls* options: 1 when a is one of them. */
static int tls_option(bn_tls_spec *t, const char *a, const char *v)
{
    const char *p = v;

    if (strcmp(a, "--tls") == 0) {
        t->on = atoi(v);
    } else if (strcmp(a, "--tls-contend") == 0) {
        for (t->ncontend = 0; p && *p && t->ncontend < 16; t->ncontend++) {
            if (sscanf(p, "%d:%d", &t->contend[t->ncontend][0], &t->contend[t->ncontend][1]) != 2)
                bn_die("bad --tls-contend %s (P:W,...)", v);
            p = strchr(p, ',');
            if (p)
                p++;
        }
    } else if (strcmp(a, "--tls-storm-ms") == 0) {
        t->storm_ms = atol(v);
    } else if (strcmp(a, "--tls-kill-ms") == 0) {
        t->kill_ms = atol(v);
    } else {
        return 0;
    }
    return 1;
}

/* The TLS workloads --only asks for ("tls": all four), unless --tls 0. */
static void run_tls(bn_tls_spec *t, const char *only, int solo_n, long contend_ms, int wd_k)
{
    int all = wanted(only, "tls");

    if (!t->on)
        return;
    t->solo_n = all || wanted(only, "solo_tls") ? solo_n : 0;
    t->ncontend = all || wanted(only, "contend_tls") ? t->ncontend : 0;
    t->contend_ms = contend_ms;
    t->wd_k = wd_k;
    t->watchdog = all || wanted(only, "watchdog_tls");
    t->storm_ms = all || wanted(only, "storm_tls") ? t->storm_ms : 0;
    if (t->kill_ms < 1)
        bn_die("--tls-kill-ms must be positive");
    if (t->solo_n || t->ncontend || t->watchdog || t->storm_ms)
        bn_run_tls(t);
}

int main(int argc, char **argv)
{
    const char *csv = NULL, *only = NULL;
    double seconds = 3;
    int solo_n = 5000, wd_k = 10000, sem_on = 1, i;
    int ws[16] = { 1, 2, 4, 8, 16, 32 }, nw = 6, ts[16] = { 1, 2, 4, 8 }, nt = 4;
    int rn[16] = { 3, 5 }, nrn = 2, rc_shape[16][3] = { { 1, 4, 1 }, { 4, 8, 2 } }, nrc = 2;
    bn_contend_out c4 = { 0 }, c4mp = { 0 };
    bn_tls_spec tls = { .on = 1, .contend = { { 1, 4 }, { 4, 8 } }, .ncontend = 2,
                        .storm_ms = 8000, .kill_ms = 500 };

    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            usage();
        i++;
        if (strcmp(a, "--url") == 0) {
            snprintf(g_url, sizeof g_url, "%s", v);
        } else if (strcmp(a, "--cluster-url") == 0) {
            snprintf(bn_cluster.url, sizeof bn_cluster.url, "%s", v);
        } else if (strcmp(a, "--redlock-url") == 0) {
            snprintf(bn_redlock.url, sizeof bn_redlock.url, "%s", v);
        } else if (strcmp(a, "--redlock-n") == 0) {
            nrn = parse_list(v, rn, 16);
        } else if (strcmp(a, "--redlock-contend") == 0) {
            const char *p = v;
            for (nrc = 0; p && *p && nrc < 16; nrc++) {
                if (sscanf(p, "%d:%d:%d", &rc_shape[nrc][0], &rc_shape[nrc][1],
                           &rc_shape[nrc][2]) != 3)
                    bn_die("bad --redlock-contend %s (P:W:NAMES,...)", v);
                p = strchr(p, ',');
                if (p)
                    p++;
            }
        } else if (strcmp(a, "--csv") == 0) {
            csv = v;
        } else if (strcmp(a, "--rb") == 0) {
            const char *p = v;
            while (p && *p) {
                int cl = atoi(p);
                const char *colon = strchr(p, ':');
                if (!colon || cl <= 0 || cl >= 65)
                    bn_die("bad --rb %s", v);
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
        } else if (strcmp(a, "--sem") == 0) {
            sem_on = atoi(v) != 0;
        } else if (!tls_option(&tls, a, v)) {
            usage();
        }
    }
    if (!g_url[0])
        usage();
    if (sscanf(g_url, "redis://%255[^:/]:%d", g_host, &g_port) < 1)
        bn_die("--url must look like redis://HOST:PORT");
    snprintf(bn_single.url, sizeof bn_single.url, "%s", g_url);
    snprintf(bn_single.host[0], sizeof bn_single.host[0], "%s", g_host);
    bn_single.port[0] = g_port;
    if (bn_cluster.url[0])
        cluster_discover(&bn_cluster);
    if (bn_redlock.url[0])
        redlock_parse(&bn_redlock);
    for (i = 0; i < nrn; i++)
        if (rn[i] < 3 || rn[i] % 2 == 0 || (bn_redlock.url[0] && rn[i] > bn_redlock.n))
            bn_die("--redlock-n: %d is not an odd size from 3 to the %d masters given", rn[i],
                   bn_redlock.n);
    if (seconds <= 0 || solo_n <= 0 || wd_k < 2)
        bn_die("bad option value");
    snprintf(bn_run, sizeof bn_run, "%d.%lld", (int)getpid(), (long long)(bn_now_ns() / 1000000 % 100000000));
    if (csv) {
        g_csv = fopen(csv, "w");
        if (!g_csv)
            bn_die("cannot write %s: %s", csv, strerror(errno));
        csv_header();
    }

    bn_run_baseline(5000);
    if (wanted(only, "solo"))
        bn_run_solo(solo_n);
    if (wanted(only, "solo_features"))
        bn_run_solo_features(solo_n);
    if (wanted(only, "reentry"))
        bn_run_reentry(300);
    if (wanted(only, "alloc"))
        bn_run_alloc(2000);
    if (wanted(only, "contend"))
        for (i = 0; i < nw; i++) {
            bn_contend_out o = bn_run_contend(1, ws[i], (long)(seconds * 1000), &c4);
            if (ws[i] == 4)
                c4 = o;
        }
    if (wanted(only, "contend_mp"))
        for (i = 0; i < nw; i++) {
            int p = ws[i] < 4 ? ws[i] : 4;
            bn_contend_out o;
            if (ws[i] < 2 || ws[i] % p)
                continue;
            o = bn_run_contend(p, ws[i], (long)(seconds * 1000), &c4mp);
            if (ws[i] == 4)
                c4mp = o;
        }
    if (wanted(only, "contend_fair"))
        bn_run_contend_fair(4, 32, (long)(seconds * 1000));
    if (wanted(only, "rw")) {
        bn_run_rw(8, (long)(seconds * 1000));
        bn_run_rw_beside();
    }
    if (sem_on && (wanted(only, "solo_sem") || wanted(only, "sem")))
        bn_run_solo_sem(solo_n);
    if (sem_on && (wanted(only, "contend_sem") || wanted(only, "sem")))
        bn_run_contend_sem(4, 32, 4, (long)(seconds * 1000));
    if (sem_on && (wanted(only, "set4") || wanted(only, "sem")))
        bn_run_set4(solo_n / 5);
    /* Each cluster run right after its single-server twin: this machine's
     * speed drifts from one minute to the next. */
    if (wanted(only, "spread"))
        for (i = 0; i < nt; i++) {
            double single = bn_run_spread(&bn_single, ts[i], (long)(seconds * 1000 * 2 / 3), 0);
            if (bn_cluster.url[0])
                bn_run_spread(&bn_cluster, ts[i], (long)(seconds * 1000 * 2 / 3), single);
        }
    if (wanted(only, "watchdog")) {
        bn_wdres single = bn_run_watchdog(&bn_single, wd_k, 4, NULL);
        if (bn_cluster.url[0])
            bn_run_watchdog(&bn_cluster, wd_k, 4, &single);
    }
    /* Redlock: the single server's twin in the same run (solo_redlock
     * interleaves them; contend_redlock runs the Redlock right after). */
    if (bn_redlock.url[0] && nrn > 0 && (wanted(only, "solo_redlock") || wanted(only, "redlock")))
        bn_run_solo_redlock(solo_n, rn, nrn);
    if (bn_redlock.url[0] && nrn > 0 &&
        (wanted(only, "contend_redlock") || wanted(only, "redlock"))) {
        bn_target big;
        int most = rn[0];
        for (i = 1; i < nrn; i++)
            most = rn[i] > most ? rn[i] : most;
        bn_tg_redlock_first(&big, most);
        for (i = 0; i < nrc; i++) {
            int p = rc_shape[i][0], w = rc_shape[i][1], k = rc_shape[i][2];
            long ms = (long)(seconds * 1000);
            bn_contend_out single = bn_run_contend_on(&bn_single, p, w, k, ms, NULL);
            bn_run_contend_on(&big, p, w, k, ms, &single);
        }
    }

    /* TLS last: its own server, started and stopped there. */
    run_tls(&tls, only, solo_n, (long)(seconds * 1000), wd_k);

    if (g_csv)
        fclose(g_csv);
    if (bn_errors) {
        bn_warn("%d rlock or Redis calls failed", bn_errors);
        return 1;
    }
    return 0;
}
