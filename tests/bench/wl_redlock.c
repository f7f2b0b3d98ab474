/*
 * solo_redlock: the latency of an uncontended lock on Redlock, against the
 * single server in the same run.
 *
 * One thread, one name per target: the single server of --url, and a
 * Redlock of the first N masters of --redlock-url for each N asked (3 and 5
 * by default). The targets take turns in blocks of BLOCK pairs, so that the
 * machine's drift from one second to the next weighs on each alike, and the
 * masters' INFO commandstats are read around each block (the Redlocks share
 * their first masters). Before each pair, a PING goes to every master of the
 * target at once, written to all before any reply is read, the replies read
 * as they come: the floor of one parallel round on this machine, what a
 * Redlock round costs at the very least (on the single server, a PING),
 * both until the last reply and until a majority's.
 *
 * Per target: pair, acquire and release percentiles; the pair's p50 and p99
 * as ratios to the single server's (target: N=5's p50 at most 1.5 times);
 * the pair in parallel PING rounds; the calling thread's CPU time per pair
 * (rlock's Redlock rounds run in the caller: encoding, writes, poll, reads;
 * the rest of the pair is waiting for the masters); and what the masters
 * counted per pair, in all and on each master.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define BLOCK 250

typedef struct starget {
    bn_target tg;
    rl_client *c;
    rl_lock *l;
    redisContext *cs[BN_NODES_MAX];
    bn_cstats *one;                 /* per master, around a block */
    bn_samples pair, acq, rel;      /* µs */
    bn_samples fan, fan_maj;        /* parallel PING: all, majority; µs */
    double cpu_ns;                  /* the calling thread's, in the pairs */
    double wall_ns;
    bn_cmdacct ca;                  /* summed over masters and blocks */
    long long evalsha_node[BN_NODES_MAX];
    long pairs;
} starget;

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One PING to each of n masters at once, replies read as they come: µs
 * until the last reply; *majority: until the (n/2+1)-th. */
static double fanout_ping(redisContext **cs, int n, double *majority)
{
    struct pollfd pfd[BN_NODES_MAX];
    int at[BN_NODES_MAX], got[BN_NODES_MAX] = { 0 }, left = n, i, j, np, done;
    int64_t t0 = bn_now_ns();

    for (i = 0; i < n; i++) {
        if (redisAppendCommand(cs[i], "PING") != REDIS_OK)
            bn_die("PING: %s", cs[i]->errstr);
        do {
            if (redisBufferWrite(cs[i], &done) != REDIS_OK)
                bn_die("PING: %s", cs[i]->errstr);
        } while (!done);
    }
    while (left) {
        for (i = 0, np = 0; i < n; i++) {
            if (got[i])
                continue;
            pfd[np].fd = cs[i]->fd;
            pfd[np].events = POLLIN;
            pfd[np].revents = 0;
            at[np++] = i;
        }
        j = poll(pfd, (nfds_t)np, 5000);
        if (j < 0 && errno == EINTR)
            continue;
        if (j <= 0)
            bn_die("PING: no reply within 5 s");
        for (j = 0; j < np; j++) {
            void *r = NULL;
            if (!pfd[j].revents)
                continue;
            i = at[j];
            if (redisBufferRead(cs[i]) != REDIS_OK || redisGetReplyFromReader(cs[i], &r) != REDIS_OK)
                bn_die("PING: %s", cs[i]->errstr);
            if (r) {
                freeReplyObject(r);
                got[i] = 1;
                if (--left == n - (n / 2 + 1))
                    *majority = (double)(bn_now_ns() - t0) / 1000.0;
            }
        }
    }
    return (double)(bn_now_ns() - t0) / 1000.0;
}

static void acct_add(bn_cmdacct *sum, const bn_cmdacct *d)
{
    sum->all += d->all;
    sum->rl_top += d->rl_top;
    sum->evalsha += d->evalsha;
    sum->evalsha_usec += d->evalsha_usec;
    sum->subs += d->subs;
    sum->ping += d->ping;
    sum->bench_own += d->bench_own;
    sum->in_script += d->in_script;
}

/* k pairs on s, each after a parallel PING; the masters' counts around. */
static void run_block(starget *s, int k)
{
    bn_cstats *a = bn_xmalloc(sizeof *a), *b = bn_xmalloc(sizeof *b);
    bn_cstats *before = bn_xmalloc(sizeof *before * (size_t)s->tg.n);
    bn_cmdacct d;
    int i, st;

    bn_tg_stats(&s->tg, s->cs, before, a);
    for (i = 0; i < k; i++) {
        int64_t c0, c1, t0, t1, t2;
        double maj = 0;
        bn_s_push(&s->fan, fanout_ping(s->cs, s->tg.n, &maj));
        bn_s_push(&s->fan_maj, maj);
        c0 = thread_cpu_ns();
        t0 = bn_now_ns();
        if ((st = rl_lock_acquire(s->l)) != RL_OK)
            bn_fail("solo_redlock acquire", st);
        t1 = bn_now_ns();
        if ((st = rl_lock_release(s->l)) != RL_OK)
            bn_fail("solo_redlock release", st);
        t2 = bn_now_ns();
        c1 = thread_cpu_ns();
        bn_s_push(&s->pair, (double)(t2 - t0) / 1000.0);
        bn_s_push(&s->acq, (double)(t1 - t0) / 1000.0);
        bn_s_push(&s->rel, (double)(t2 - t1) / 1000.0);
        s->cpu_ns += (double)(c1 - c0);
        s->wall_ns += (double)(t2 - t0);
    }
    bn_tg_stats(&s->tg, s->cs, s->one, b);
    bn_cs_account(a, b, &d);
    /* Our own PINGs, one per master per pair, are not rlock's. */
    d.all -= (long long)k * s->tg.n;
    d.rl_top -= (long long)k * s->tg.n;
    d.ping -= (long long)k * s->tg.n;
    acct_add(&s->ca, &d);
    for (i = 0; i < s->tg.n; i++)
        s->evalsha_node[i] += bn_cs_calls(&s->one[i], "evalsha", NULL) -
                              bn_cs_calls(&before[i], "evalsha", NULL);
    s->pairs += k;
    free(before);
    free(a);
    free(b);
}

/* s's record; `single` the single server's (sorted by its own emit). */
static void emit(starget *s, starget *single)
{
    bn_targets t = { .any = 0 };
    bn_rec r = { .n = 0 };
    char by[200] = "";
    double p50 = bn_s_pct(&s->pair, 50), p99 = bn_s_pct(&s->pair, 99);
    double fan50 = bn_s_pct(&s->fan, 50), cpu = s->cpu_ns / (double)s->pairs / 1000.0;
    double mean = s->wall_ns / (double)s->pairs / 1000.0;
    int i;

    for (i = 0; i < s->tg.n; i++) {
        size_t l = strlen(by);
        snprintf(by + l, sizeof by - l, "%s%.2f", i ? "/" : "",
                 (double)s->evalsha_node[i] / (double)s->pairs);
    }
    bn_rec_add(&r, "workload", "solo_redlock");
    bn_rec_add(&r, "mode", "%s", s->tg.mode);
    bn_rec_add(&r, "nodes", "%d", s->tg.n);
    bn_rec_add(&r, "procs", "1");
    bn_rec_add(&r, "threads", "1");
    bn_rec_add(&r, "n", "%ld", s->pairs);
    bn_rec_add(&r, "seconds", "%.2f", s->wall_ns / 1e9);
    bn_rec_add(&r, "pairs_s", "%.0f", (double)s->pairs / (s->wall_ns / 1e9));
    bn_rec_add(&r, "p50_us", "%.1f", p50);
    bn_rec_add(&r, "p99_us", "%.1f", p99);
    bn_rec_add(&r, "max_us", "%.1f", bn_s_max(&s->pair));
    bn_rec_add(&r, "acq_p50_us", "%.1f", bn_s_pct(&s->acq, 50));
    bn_rec_add(&r, "rel_p50_us", "%.1f", bn_s_pct(&s->rel, 50));
    /* This target's parallel PING: one round on all its masters. */
    bn_rec_add(&r, "ping_p50_us", "%.1f", fan50);
    bn_rec_add(&r, "ping_p99_us", "%.1f", bn_s_pct(&s->fan, 99));
    bn_rec_add(&r, "ping_majority_p50_us", "%.1f", bn_s_pct(&s->fan_maj, 50));
    bn_rec_add(&r, "p50_ratio_ping", "%.2f", fan50 > 0 ? p50 / fan50 : 0);
    if (single) {
        double s50 = bn_s_pct(&single->pair, 50);
        double s99 = bn_s_pct(&single->pair, 99);
        double sfan = bn_s_pct(&single->fan, 50);
        double scpu = single->cpu_ns / (double)single->pairs / 1000.0;
        bn_rec_add(&r, "p50_us_single", "%.1f", s50);
        bn_rec_add(&r, "p99_us_single", "%.1f", s99);
        bn_rec_add(&r, "p50_ratio_single", "%.2f", s50 > 0 ? p50 / s50 : 0);
        bn_rec_add(&r, "p99_ratio_single", "%.2f", s99 > 0 ? p99 / s99 : 0);
        /* The floor: what N masters cost this machine for a bare PING. */
        bn_rec_add(&r, "ping_p50_ratio_single", "%.2f", sfan > 0 ? fan50 / sfan : 0);
        bn_rec_add(&r, "cpu_ratio_single", "%.2f", scpu > 0 ? cpu / scpu : 0);
    }
    bn_rec_add(&r, "cpu_us_per_pair", "%.1f", cpu);
    bn_rec_add(&r, "offcpu_us_per_pair", "%.1f", mean - cpu);
    bn_add_cmd_fields(&r, &s->ca, (double)s->pairs, "pair");
    bn_rec_add(&r, "evalsha_per_pair_by_node", "%s", by);
    if (single && s->tg.n == 5)
        bn_tgt_check(&t, "p50_ratio_single<=1.5", p50 <= 1.5 * bn_s_pct(&single->pair, 50));
    bn_tgt_emit(&r, &t);
    bn_rec_emit(&r);
}

void bn_run_solo_redlock(int n, const int *nodes, int nnodes)
{
    starget *s = calloc((size_t)nnodes + 1, sizeof *s);
    int ns = nnodes + 1, i, k, done, st;

    if (!s)
        bn_die("out of memory");
    s[0].tg = bn_single;
    for (k = 1; k < ns; k++)
        bn_tg_redlock_first(&s[k].tg, nodes[k - 1]);
    for (k = 0; k < ns; k++) {
        s[k].c = bn_make_client_at(s[k].tg.url, 0, 0);
        s[k].l = bn_make_lock(s[k].c, "solo_redlock:%s:%s%d", bn_run, s[k].tg.mode, s[k].tg.n);
        s[k].one = bn_xmalloc(sizeof *s[k].one * (size_t)s[k].tg.n);
        bn_tg_connect_all(&s[k].tg, s[k].cs);
        for (i = 0; i < 200; i++) {
            double maj;
            fanout_ping(s[k].cs, s[k].tg.n, &maj);
            if ((st = rl_lock_acquire(s[k].l)) != RL_OK || (st = rl_lock_release(s[k].l)) != RL_OK)
                bn_fail("solo_redlock warm-up", st);
        }
    }
    /* Block b starts with target b % ns: no target always follows another. */
    for (done = 0, i = 0; done < n; done += BLOCK, i++) {
        int len = n - done < BLOCK ? n - done : BLOCK;
        for (k = 0; k < ns; k++)
            run_block(&s[(i + k) % ns], len);
    }
    for (k = 0; k < ns; k++)
        emit(&s[k], k ? &s[0] : NULL);

    for (k = 0; k < ns; k++) {
        bn_s_free(&s[k].pair);
        bn_s_free(&s[k].acq);
        bn_s_free(&s[k].rel);
        bn_s_free(&s[k].fan);
        bn_s_free(&s[k].fan_maj);
        free(s[k].one);
        bn_tg_free_all(&s[k].tg, s[k].cs);
        rl_lock_free(s[k].l);
        rl_client_free(s[k].c);
    }
    free(s);
}
