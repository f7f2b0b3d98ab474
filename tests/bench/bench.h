/*
 * bench.h: what rlbench's workload files share with its runner (runner.c).
 *
 * rlbench is one program in several files: runner.c holds main, the option
 * parsing, the allocation counting, the statistics, the key=value and CSV
 * output, the Redis, Redis Cluster and Redlock helpers; each wl_*.c file
 * holds one workload (its single-server, cluster and Redlock runs together)
 * and exports only its bn_run_* functions. Everything shared across files
 * is named bn_*; everything else is static to its file.
 */
#ifndef RLBENCH_BENCH_H
#define RLBENCH_BENCH_H

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

#include "rlock.h"

/* ---- allocation counting (runner.c) ------------------------------------ */

/* 1 when runner.c defines malloc and its relatives to count allocations;
 * 0 under a sanitizer, whose runtime defines them (see CMakeLists.txt). */
#ifndef RLBENCH_NO_ALLOC_HOOK
#define BN_ALLOC_HOOK 1
#else
#define BN_ALLOC_HOOK 0
#endif

#define BN_TRACE_MAX 256

/* This thread's allocations and frees; with bn_tl_trace set, the call site
 * of each allocation goes to bn_tl_sites. volatile: GCC knows malloc as a
 * builtin and would assume that calls into other libraries leave these
 * untouched. */
extern _Thread_local volatile unsigned long bn_tl_allocs, bn_tl_frees;
extern _Thread_local int bn_tl_trace;
extern _Thread_local void *bn_tl_sites[BN_TRACE_MAX];
extern _Thread_local int bn_tl_nsites;
extern atomic_ulong bn_allocs;          /* every thread's */

/* ---- small utilities --------------------------------------------------- */

extern int bn_errors;                   /* rlock or Redis calls that failed */

void bn_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void bn_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void *bn_xmalloc(size_t n);
int bn_read_file(const char *path, char *buf, size_t cap);

/* Inline: the workloads' timed sections call these. */
static inline int64_t bn_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void bn_sleep_us(long us)
{
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
        ;
}

/* ---- samples ----------------------------------------------------------- */

typedef struct bn_samples {
    double *v;
    size_t n, cap;
} bn_samples;

void bn_s_push(bn_samples *s, double x);
void bn_s_append(bn_samples *s, const double *v, size_t n);
double bn_s_pct(bn_samples *s, double p);  /* nearest rank; sorts in place */
double bn_s_max(const bn_samples *s);
double bn_s_mean(const bn_samples *s);
void bn_s_free(bn_samples *s);

/* ---- output: one key=value line per workload, plus a CSV row ---------- */

#define BN_REC_MAX 64

typedef struct bn_rec {
    char key[BN_REC_MAX][40];
    char val[BN_REC_MAX][200];
    int n;
} bn_rec;

void bn_rec_add(bn_rec *r, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A field compared with a reference run: key = prefix + ref (its mode). */
void bn_rec_add_ref(bn_rec *r, const char *prefix, const char *ref, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void bn_rec_emit(const bn_rec *r);
/* Flush stdout, stderr and the CSV (before a fork). */
void bn_flush_output(void);

/* Targets: each check adds a condition; the record gets target= and met=. */
typedef struct bn_targets {
    char text[200];
    char missed[200];
    int any, fail;
} bn_targets;

void bn_tgt_check(bn_targets *t, const char *cond, int ok);
void bn_tgt_emit(bn_rec *r, const bn_targets *t);

/* ---- Redis helpers (hiredis: baseline, counter, statistics) ----------- */

extern char bn_run[32];                 /* unique per run: keeps names apart */

/* A connection to --url's server, and a command that must succeed. */
redisContext *bn_rconnect(void);
redisReply *bn_rcmd(redisContext *c, const char *fmt, ...);

/* INFO commandstats, parsed. */
#define BN_CS_MAX 400
typedef struct bn_cstats {
    char name[BN_CS_MAX][64];
    long long calls[BN_CS_MAX], usec[BN_CS_MAX];
    int n;
} bn_cstats;

/* What a workload's commands were, from two INFO commandstats. */
typedef struct bn_cmdacct {
    long long all;          /* every command counted, less the bench's INFO */
    long long rl_top;       /* rlock's top-level commands */
    long long evalsha;
    long long evalsha_usec;
    long long subs;         /* subscribe + unsubscribe */
    long long ping;
    long long bench_own;    /* the workload's GET/SET, INCRBY/DECRBY */
    long long in_script;    /* all - rl_top - bench_own */
} bn_cmdacct;

void bn_cstats_get(redisContext *c, bn_cstats *out);
/* Calls of a command (sum over its subcommands "name|sub"). */
long long bn_cs_calls(const bn_cstats *s, const char *name, long long *usec);
void bn_cs_account(const bn_cstats *a, const bn_cstats *b, bn_cmdacct *o);
/* The *_per_<per> fields of a record: commands per operation. */
void bn_add_cmd_fields(bn_rec *r, const bn_cmdacct *ca, double ops, const char *per);

/* ---- targets: the single server of --url, the Cluster of --cluster-url,
 *      the Redlock masters of --redlock-url ---------------------------- */

#define BN_NODES_MAX 16
#define BN_SLOTS 16384

typedef struct bn_target {
    const char *mode;               /* "single", "cluster" or "redlock" */
    char url[600];                  /* what rlock is given */
    int n;                          /* masters; 1 for the single server */
    char host[BN_NODES_MAX][256];
    int port[BN_NODES_MAX];
    unsigned char owner[BN_SLOTS];  /* cluster: slot -> index of its master */
} bn_target;

extern bn_target bn_single, bn_cluster, bn_redlock;

/* A Redlock of the first n masters of bn_redlock (n odd, 3..bn_redlock.n). */
void bn_tg_redlock_first(bn_target *out, int n);

void bn_tg_connect_all(const bn_target *tg, redisContext **cs);
void bn_tg_free_all(const bn_target *tg, redisContext **cs);
/* INFO commandstats of every master into one[0..n), and their sum. */
void bn_tg_stats(const bn_target *tg, redisContext **cs, bn_cstats *one, bn_cstats *sum);

/* ---- rlock helpers ----------------------------------------------------- */

/* Trusted by the clients of rediss:// URLs when set (wl_tls.c sets it). */
extern char bn_tls_ca[320];

rl_client *bn_make_client_at(const char *url, long lease_ms, int pool);
rl_client *bn_make_client(long lease_ms, int pool);     /* at --url */
rl_lock *bn_make_lock(rl_client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A failed call: counted, first few reported. */
void bn_fail(const char *what, int rc);

/* ---- the references: PING round trip, redis-benchmark's rates --------- */

/* Measured by bn_run_baseline (wl_baseline.c), which runs first. */
extern double bn_ping_p50, bn_ping_p99;                 /* µs */
/* redis-benchmark's EVALSHA rate with `clients` clients (--rb), or 0. */
double bn_rb_rate(int clients);

/* ---- the workloads, one file each -------------------------------------- */

typedef struct bn_contend_out {
    const char *mode;       /* the target's: ratios to it are named for it */
    double acq_s;
    double rl_cmds_per_acq;
    double wait_max_us;
} bn_contend_out;

/* What the single-server watchdog run measured, for the cluster's ratios
 * (or the plain port's, for TLS's). */
typedef struct bn_wdres {
    const char *mode;       /* the target's: ratios to it are named for it */
    int got;                /* ticks seen */
    double wall_max, wall_mean, cpu;
} bn_wdres;

/* wl_watchdog.c, for the workloads that watch the watchdog thread: take a
 * client's first lock and find its watchdog thread (and its keeper); then
 * its bursts of CPU use, one per renewal round (see wl_watchdog.c). */
int bn_wd_first_acquire(rl_lock *first, pid_t *wd, pid_t *keeper);
int bn_watch_bursts(int fd, int want, long quiet_ms, long limit_ms, double *walls, double *cpus);

void bn_run_baseline(int n);
void bn_run_solo(int n);
void bn_run_solo_features(int n);
bn_contend_out bn_run_contend(int procs, int w, long dur_ms, const bn_contend_out *at4);
bn_contend_out bn_run_contend_on(const bn_target *tg, int procs, int w, int names, long dur_ms,
                                 const bn_contend_out *single);
/* contend_fair: the plain lock, then the fair one, P processes x W threads. */
void bn_run_contend_fair(int procs, int w, long dur_ms);
double bn_run_spread(const bn_target *tg, int nthreads, long dur_ms, double single);
bn_wdres bn_run_watchdog(const bn_target *tg, int k, int nthreads, const bn_wdres *single);
void bn_run_reentry(int cycles);
void bn_run_alloc(int n);
void bn_run_solo_redlock(int n, const int *nodes, int nnodes);
/* rw_read_heavy (wl_rw.c): the read-write lock against the plain one. */
void bn_run_rw(int nthreads, long dur_ms);
/* rw_readers_beside (wl_rw.c): a reader's and a writer's cost beside 0,
 * 100 and 1000 readers. */
void bn_run_rw_beside(void);
/* solo_sem, set4 (wl_sem.c): a semaphore's pair and a set of 4 names
 * against the plain lock's; contend_sem (wl_contend.c): P processes x W
 * threads on a semaphore of `permits` against a plain lock. */
void bn_run_solo_sem(int n);
void bn_run_set4(int n);
void bn_run_contend_sem(int procs, int w, unsigned permits, long dur_ms);

/* solo_tls, contend_tls, watchdog_tls, storm_tls (wl_tls.c): each on the
 * plain port and the TLS port of one redis-server the workload starts
 * (0: that part is skipped). */
typedef struct bn_tls_spec {
    int on;                     /* 0: --tls 0, none of them */
    int solo_n;                 /* pairs of each */
    int contend[16][2], ncontend;   /* P:W shapes, one name */
    long contend_ms;
    int watchdog;               /* 1: watchdog_tls */
    int wd_k;                   /* holds of watchdog_tls and storm_tls */
    long storm_ms, kill_ms;     /* storm length; one CLIENT KILL every kill_ms */
} bn_tls_spec;

void bn_run_tls(const bn_tls_spec *sp);

#endif
