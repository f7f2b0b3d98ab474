/*
 * workers -- many processes, many threads, one rlock per bank account.
 *
 * What it shows
 *   - Exclusion across processes and threads: P processes x T threads credit
 *     A accounts with a deliberately non-atomic read-modify-write (HMGET,
 *     some "work", HSET). Without a lock, concurrent credits overwrite each
 *     other; under rlock no update is lost, and the program checks that.
 *   - Reentrancy: credit() takes the lock its caller already holds, as a
 *     library function that cannot know its caller's locks would. The hold
 *     count goes to 2 and back, with no deadlock.
 *   - Shared handles: all threads of a process use one rl_lock per account.
 *   - fork() safety: the parent creates the rl_client and the lock handles
 *     once, before forking; each child simply keeps using them. A child is a
 *     new lock owner and reconnects by itself on first use.
 *   - Loss signalling: the work loop polls rl_interrupted() and gives up the
 *     job, writing nothing, if the lease can no longer be proven to hold.
 *
 * How to run
 *   redis-server --port 6400 --save '' --daemonize yes
 *   ./workers --url redis://127.0.0.1:6400
 * or on a Redis Cluster, naming some of its nodes (or RLOCK_URL=... ./workers):
 *   ./workers --url redis://127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002
 *
 * Options
 *   --url URL        Redis, as rlock takes it: redis://[[user]:pass@]host[:port][/db],
 *                    redis://host:port,host:port,... (cluster seeds) or
 *                    unix:///path[?db=N] (default: $RLOCK_URL; one of them is required)
 *   --procs P        processes (4)         --threads T   threads per process (4)
 *   --jobs J         jobs per thread (200) --accounts A  accounts (8)
 *   --prefix K       prefix of every key written, lock keys included (ex:)
 *
 * Data: hash <prefix>{bank}acct:<i> {balance, credits}, counter
 * <prefix>{bank}jobs, locks named account:<i>. The hash tag {bank} puts all
 * the data in one slot of a cluster, where one connection per thread reaches
 * it (ex_command() follows MOVED there); the locks spread over the masters.
 * Prints a summary and ends with "OK: no update lost" (exit 0) or
 * "FAIL: ..." (exit 1); exit 2 on bad arguments.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep, fork: POSIX, not C11 */

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <rlock.h>

#include "ex_redis.h"

#define KEY_MAX      256    /* room for a key: prefix (<= 200 bytes) + suffix */
#define DATA_TAG     "{bank}" /* one hash slot for all the data (Redis Cluster) */
#define WORK_STEPS   4      /* steps of "work" inside each critical section */
#define WORK_STEP_NS 100000 /* 0.1 ms each: wide enough for races to show */

struct config {
    const char *url;
    const char *prefix;
    int procs, threads, jobs, accounts;
};

/* What a thread, then a whole process, did. Children send it over a pipe. */
struct tally {
    long done;          /* credits written */
    long aborted;       /* jobs given up because rl_interrupted() rose */
    long failures;      /* unexpected statuses, Redis errors */
    long long credited; /* sum of the amounts written */
};

struct worker {
    const struct config *cfg;
    rl_lock **locks;    /* one handle per account, shared by all threads */
    int proc, thread;
    pthread_t tid;
    struct tally tally;
};

enum outcome { CREDIT_DONE, CREDIT_ABORTED, CREDIT_FAILED };

/* ---- small helpers --------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A well-spread, never-zero xorshift seed for each (process, thread). */
static uint64_t seed_for(int proc, int thread)
{
    uint64_t z = ((uint64_t)proc << 32 | (uint64_t)thread) + 0x9E3779B97F4A7C15ull;

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return z != 0 ? z : 1;
}

/* xorshift64: a fixed, per-thread sequence of accounts and amounts. */
static uint64_t next_random(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* A stand-in for real work done while holding the lock. */
static void work_a_little(void)
{
    struct timespec ts = { 0, WORK_STEP_NS };
    nanosleep(&ts, NULL);
}

/* An integer held in a string reply; a missing value (nil) counts as 0. */
static long long reply_number(const redisReply *r)
{
    if (r->type == REDIS_REPLY_STRING)
        return strtoll(r->str, NULL, 10);
    if (r->type == REDIS_REPLY_INTEGER)
        return r->integer;
    return 0;
}

static void report(struct worker *w, const char *what, int status)
{
    fprintf(stderr, "workers: process %d thread %d: %s: %s (%s)\n",
            w->proc, w->thread, what, rl_strerror(status), rl_last_error());
    w->tally.failures++;
}

/*
 * Credit `amount` to `account`. The caller already holds the account's lock;
 * this takes it again, as any self-contained function would. rlock is
 * reentrant: the second acquire returns at once and the hold count is 2.
 */
static enum outcome credit(struct worker *w, ex_conn *rc, rl_lock *lock,
                           int account, long amount)
{
    enum outcome outcome = CREDIT_FAILED;
    char key[KEY_MAX];
    long long balance, credits;
    redisReply *r;
    int status, held;

    status = rl_lock_acquire(lock);
    if (status == RL_ELOST) {           /* lost between the two acquires */
        outcome = CREDIT_ABORTED;
        if (rl_lock_hold_count(lock) == 2)
            goto release;
        return outcome;
    }
    if (status != RL_OK) {
        report(w, "nested acquire", status);
        return CREDIT_FAILED;
    }
    if ((held = rl_lock_hold_count(lock)) != 2) {
        fprintf(stderr, "workers: hold count %d in credit(), expected 2\n", held);
        w->tally.failures++;
        goto release;
    }

    /* Read... */
    snprintf(key, sizeof key, "%s" DATA_TAG "acct:%d", w->cfg->prefix, account);
    r = ex_command(rc, "HMGET %s balance credits", key);
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
        ex_ok(r);
        w->tally.failures++;
        goto release;
    }
    balance = reply_number(r->element[0]);
    credits = reply_number(r->element[1]);
    freeReplyObject(r);

    /* ...work, checking between steps that the lease still holds... */
    for (int step = 0; step < WORK_STEPS; step++) {
        if (rl_interrupted()) {
            outcome = CREDIT_ABORTED;
            goto release;
        }
        work_a_little();
    }
    /* Last check right before writing: once the lease is lost, another
     * owner may be writing this account, and our write would clobber it. */
    if (rl_interrupted()) {
        outcome = CREDIT_ABORTED;
        goto release;
    }

    /* ...write. */
    if (ex_ok(ex_command(rc, "HSET %s balance %lld credits %lld",
                   key, balance + amount, credits + 1)) != 0 ||
        ex_ok(ex_command(rc, "INCR %s" DATA_TAG "jobs", w->cfg->prefix)) != 0) {
        w->tally.failures++;
        goto release;
    }
    outcome = CREDIT_DONE;

release:
    status = rl_lock_release(lock);
    /* After a lost lease, release says so (RL_ELOST): expected when we
     * aborted because of it, a failure otherwise. */
    if (status != RL_OK && !(outcome == CREDIT_ABORTED && status == RL_ELOST)) {
        report(w, "nested release", status);
        outcome = CREDIT_FAILED;
    }
    return outcome;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    const struct config *cfg = w->cfg;
    /* Seeded by process and thread: every run does the same jobs. */
    uint64_t rng = seed_for(w->proc, w->thread);
    /* A hiredis context is not thread-safe: one connection per thread. */
    ex_conn *rc = ex_connect_url(cfg->url);

    if (rc == NULL) {
        w->tally.failures++;
        return NULL;
    }
    /* Stop at the first failure rather than print the same error J times. */
    for (int j = 0; j < cfg->jobs && w->tally.failures == 0; j++) {
        int account = (int)(next_random(&rng) % (uint64_t)cfg->accounts);
        long amount = 1 + (long)(next_random(&rng) % 9);
        rl_lock *lock = w->locks[account];
        enum outcome outcome;
        int status;

        status = rl_lock_acquire(lock);  /* waits; watchdog-kept lease */
        if (status != RL_OK) {
            report(w, "acquire", status);
            continue;
        }
        outcome = credit(w, rc, lock, account, amount);
        status = rl_lock_release(lock);
        if (status != RL_OK && !(outcome == CREDIT_ABORTED && status == RL_ELOST))
            report(w, "release", status);
        else if (outcome == CREDIT_DONE) {
            w->tally.done++;
            w->tally.credited += amount;
        } else if (outcome == CREDIT_ABORTED) {
            w->tally.aborted++;
        }
    }
    ex_close(rc);
    return NULL;
}

/* One child process: T threads sharing the inherited client and handles. */
static int run_process(const struct config *cfg, rl_lock **locks, int proc, int out_fd)
{
    struct worker *w = calloc((size_t)cfg->threads, sizeof *w);
    struct tally sum = { 0 };
    int started = 0;

    if (w == NULL) {
        sum.failures++;
    } else {
        for (; started < cfg->threads; started++) {
            w[started] = (struct worker){ .cfg = cfg, .locks = locks,
                                          .proc = proc, .thread = started };
            if (pthread_create(&w[started].tid, NULL, worker_main, &w[started]) != 0) {
                fprintf(stderr, "workers: pthread_create failed\n");
                sum.failures++;
                break;
            }
        }
        for (int t = 0; t < started; t++) {
            pthread_join(w[t].tid, NULL);
            sum.done += w[t].tally.done;
            sum.aborted += w[t].tally.aborted;
            sum.failures += w[t].tally.failures;
            sum.credited += w[t].tally.credited;
        }
        free(w);
    }
    /* A pipe write of this size is atomic; the parent reads it whole. */
    if (write(out_fd, &sum, sizeof sum) != (ssize_t)sizeof sum)
        return 1;
    return sum.failures == 0 ? 0 : 1;
}

/* ---- the parent ------------------------------------------------------ */

static int parse_int(const char *s, int min, int max, int *out)
{
    long v;

    if (ex_parse_long(s, min, max, &v) != 0)
        return -1;
    *out = (int)v;
    return 0;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: workers [--url URL] [--procs P] [--threads T] [--jobs J]\n"
            "               [--accounts A] [--prefix K]\n"
            "  --url URL      redis://[[user]:pass@]host[:port][/db], a cluster's seeds\n"
            "                 redis://host:port,host:port,..., or unix:///path[?db=N];\n"
            "                 default: the RLOCK_URL environment variable\n"
            "  --procs P      processes (4)           --threads T   threads per process (4)\n"
            "  --jobs J       jobs per thread (200)   --accounts A  accounts (8)\n"
            "  --prefix K     prefix of every key written, lock keys included (ex:)\n");
}

/* 0: run; 1: --help was asked and printed; -1: bad arguments. */
static int parse_args(int argc, char **argv, struct config *cfg)
{
    *cfg = (struct config){ .prefix = "ex:", .procs = 4, .threads = 4,
                            .jobs = 200, .accounts = 8 };
    for (int i = 1; i < argc; i += 2) {     /* --option value */
        const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = val == NULL;

        if (strcmp(opt, "--help") == 0 || strcmp(opt, "-h") == 0) {
            usage(stdout);
            return 1;
        }
        if (!bad && strcmp(opt, "--url") == 0)
            cfg->url = val;
        else if (!bad && strcmp(opt, "--prefix") == 0) {
            cfg->prefix = val;
            bad = strlen(val) > 200;
        }
        else if (!bad && strcmp(opt, "--procs") == 0)
            bad = parse_int(val, 1, 64, &cfg->procs);
        else if (!bad && strcmp(opt, "--threads") == 0)
            bad = parse_int(val, 1, 64, &cfg->threads);
        else if (!bad && strcmp(opt, "--jobs") == 0)
            bad = parse_int(val, 1, 10000000, &cfg->jobs);
        else if (!bad && strcmp(opt, "--accounts") == 0)
            bad = parse_int(val, 1, 100000, &cfg->accounts);
        else
            bad = 1;
        if (bad) {
            fprintf(stderr, "workers: bad option \"%s\"\n", opt);
            usage(stderr);
            return -1;
        }
    }
    if (cfg->url == NULL && (cfg->url = getenv("RLOCK_URL")) != NULL && *cfg->url == '\0')
        cfg->url = NULL;
    if (cfg->url == NULL) {
        fprintf(stderr, "workers: --url or RLOCK_URL is required\n");
        usage(stderr);
        return -1;
    }
    return 0;
}

/* Every account to zero, the job counter to zero. */
static int reset_data(ex_conn *rc, const struct config *cfg)
{
    char key[KEY_MAX];

    for (int i = 0; i < cfg->accounts; i++) {
        snprintf(key, sizeof key, "%s" DATA_TAG "acct:%d", cfg->prefix, i);
        if (ex_ok(ex_command(rc, "DEL %s", key)) != 0 ||
            ex_ok(ex_command(rc, "HSET %s balance 0 credits 0", key)) != 0)
            return -1;
    }
    return ex_ok(ex_command(rc, "SET %s" DATA_TAG "jobs 0", cfg->prefix));
}

/* Sum of balances and of credit counts, and the job counter, from Redis. */
static int read_totals(ex_conn *rc, const struct config *cfg,
                       long long *balance, long long *credits, long long *jobs)
{
    char key[KEY_MAX];
    redisReply *r;

    *balance = *credits = 0;
    for (int i = 0; i < cfg->accounts; i++) {
        snprintf(key, sizeof key, "%s" DATA_TAG "acct:%d", cfg->prefix, i);
        r = ex_command(rc, "HMGET %s balance credits", key);
        if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
            ex_ok(r);
            return -1;
        }
        *balance += reply_number(r->element[0]);
        *credits += reply_number(r->element[1]);
        freeReplyObject(r);
    }
    if ((r = ex_command(rc, "GET %s" DATA_TAG "jobs", cfg->prefix)) == NULL)
        return -1;
    *jobs = reply_number(r);
    freeReplyObject(r);
    return 0;
}

static void free_locks(rl_lock **locks, int n)
{
    for (int i = 0; locks != NULL && i < n; i++)
        rl_lock_free(locks[i]);
    free(locks);
}

int main(int argc, char **argv)
{
    struct config cfg;
    struct tally total = { 0 };
    rl_options opts;
    rl_client *client = NULL;
    rl_lock **locks = NULL;
    ex_conn *rc = NULL;
    pid_t *pids = NULL;
    int *fds = NULL;
    int status, started = 0, failed = 0, exit_code = 1;
    long long balance, credits, jobs;
    double t0, elapsed;

    ex_prog = "workers";
    if ((status = parse_args(argc, argv, &cfg)) != 0)
        return status > 0 ? 0 : 2;
    if ((rc = ex_connect_url(cfg.url)) == NULL || reset_data(rc, &cfg) != 0)
        goto out;

    /*
     * One client and one handle per account, made once, here, before fork().
     * The children inherit and keep using them: rlock notices the fork, gives
     * each child its own owner identity and connections on first use.
     */
    rl_options_init(&opts, RL_OPTIONS_VERSION);
    opts.url = cfg.url;
    opts.key_prefix = cfg.prefix;   /* lock keys: <prefix>{account:<i>} */
    if ((status = rl_client_new(&client, &opts)) != RL_OK) {
        fprintf(stderr, "workers: rl_client_new: %s (%s)\n",
                rl_strerror(status), rl_last_error());
        goto out;
    }
    locks = calloc((size_t)cfg.accounts, sizeof *locks);
    pids = calloc((size_t)cfg.procs, sizeof *pids);
    fds = calloc((size_t)cfg.procs, sizeof *fds);
    if (locks == NULL || pids == NULL || fds == NULL) {
        fprintf(stderr, "workers: out of memory\n");
        goto out;
    }
    for (int i = 0; i < cfg.accounts; i++) {
        char name[32];

        snprintf(name, sizeof name, "account:%d", i);
        if ((status = rl_lock_new(&locks[i], client, name)) != RL_OK) {
            fprintf(stderr, "workers: rl_lock_new: %s (%s)\n",
                    rl_strerror(status), rl_last_error());
            goto out;
        }
    }

    printf("workers: %d processes x %d threads x %d jobs on %d accounts\n",
           cfg.procs, cfg.threads, cfg.jobs, cfg.accounts);
    fflush(stdout);     /* or each child would print it again */
    fflush(stderr);
    t0 = now_s();
    for (; started < cfg.procs; started++) {
        int pipefd[2];
        pid_t pid;

        if (pipe(pipefd) != 0) {
            perror("workers: pipe");
            break;
        }
        if ((pid = fork()) < 0) {
            perror("workers: fork");
            close(pipefd[0]);
            close(pipefd[1]);
            break;
        }
        if (pid == 0) {
            /* Child: keep only our pipe's write end and rlock's objects. */
            int code;

            close(pipefd[0]);
            for (int p = 0; p < started; p++)
                close(fds[p]);
            ex_close(rc);           /* the parent's connection, not ours */
            code = run_process(&cfg, locks, started, pipefd[1]);
            close(pipefd[1]);
            free_locks(locks, cfg.accounts);
            rl_client_free(client);
            free(pids);
            free(fds);
            exit(code);
        }
        close(pipefd[1]);
        pids[started] = pid;
        fds[started] = pipefd[0];
    }
    if (started < cfg.procs)
        failed = 1;

    /* Collect every child's tally, then its exit status. */
    for (int p = 0; p < started; p++) {
        struct tally t;
        ssize_t n;
        int wstatus;

        do
            n = read(fds[p], &t, sizeof t);
        while (n < 0 && errno == EINTR);
        close(fds[p]);
        while (waitpid(pids[p], &wstatus, 0) < 0 && errno == EINTR)
            ;
        if (n != (ssize_t)sizeof t) {
            fprintf(stderr, "workers: process %d sent no report\n", p);
            failed = 1;
            continue;
        }
        printf("  process %d: %ld jobs done, %ld aborted, %lld credited%s\n",
               p, t.done, t.aborted, t.credited,
               t.failures ? ", FAILED" : "");
        if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0 || t.failures != 0)
            failed = 1;
        total.done += t.done;
        total.aborted += t.aborted;
        total.credited += t.credited;
    }
    elapsed = now_s() - t0;

    if (read_totals(rc, &cfg, &balance, &credits, &jobs) != 0)
        goto out;
    printf("  jobs done        %ld (Redis counter: %lld)\n", total.done, jobs);
    printf("  jobs aborted     %ld (lease lost: nothing written)\n", total.aborted);
    printf("  total credited   expected %lld, in Redis %lld\n", total.credited, balance);
    printf("  credits applied  expected %ld, in Redis %lld\n", total.done, credits);
    printf("  elapsed          %.2f s, %.0f jobs/s\n", elapsed,
           elapsed > 0 ? (double)total.done / elapsed : 0.0);

    if (credits < total.done)
        printf("FAIL: lost %lld updates\n", total.done - credits);
    else if (credits != total.done || balance != total.credited || jobs != total.done)
        printf("FAIL: Redis disagrees with what the workers report\n");
    else if (failed)
        printf("FAIL: a worker process failed\n");
    else {
        printf("OK: no update lost\n");
        exit_code = 0;
    }

out:
    free_locks(locks, cfg.accounts);
    rl_client_free(client);
    ex_close(rc);
    free(pids);
    free(fds);
    return exit_code;
}
