/*
 * solo_tls, contend_tls, watchdog_tls, storm_tls: what TLS costs beside
 * plain TCP, measured in the same run against one redis-server that serves
 * a plain port and a TLS port (certificates made by the openssl command,
 * tests/common/rt_tls.h). Each workload runs on the plain port first (its
 * *_plain record), then on the TLS port, whose record carries the ratios
 * to the plain one. The bench's own hiredis connections (counters, stats,
 * PTTL, CLIENT KILL) use the plain port of that server.
 *
 * solo_tls: the acquire + release pair, plain and TLS in alternating turns
 * of 250 pairs, so that drift hits both alike (issue 24's target: TLS p50
 * at most 1.3 x plain), each turn followed by as many PINGs on each port
 * (hiredis on the plain one, OpenSSL's own SSL_read/SSL_write on the TLS
 * one): the floor of each transport, measured alongside. contend_tls and watchdog_tls are contend_redlock's
 * and watchdog's runs (wl_contend.c, wl_watchdog.c) on those two ports.
 *
 * storm_tls: K holds kept by the watchdog (3 s lease, a round every 1 s)
 * while another thread kills every client connection of the server
 * (CLIENT KILL TYPE normal) every few hundred ms. New connections, and
 * their TLS handshakes, are the keeper's (keeper.c): the renewal rounds
 * must go on (no hold lost; the longest a sampled key went unrenewed,
 * the watchdog's bursts of work), with the keeper's CPU showing where the
 * handshakes went.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "redis_server.h"
#include "rt_tls.h"

#include "bench.h"

static rt_tls *g_certs;
static rt_redis *g_srv;

/* Start the server (plain port and TLS port) and fill its two targets. */
static void tls_setup(bn_target *plain, bn_target *tls)
{
    char args[2048];
    int port;

    if (!(g_certs = rt_tls_make()))
        bn_die("tls: cannot make certificates (openssl)");
    if ((port = rt_free_port()) < 0)
        bn_die("tls: no free port");
    rt_tls_server_args(g_certs, port, NULL, NULL, 0, args, sizeof args);
    if (!(g_srv = rt_redis_start(args)))
        bn_die("tls: cannot start redis-server with a TLS port");
    snprintf(bn_tls_ca, sizeof bn_tls_ca, "%s", g_certs->ca);
    memset(plain, 0, sizeof *plain);
    plain->mode = "plain";
    plain->n = 1;
    snprintf(plain->url, sizeof plain->url, "redis://127.0.0.1:%d", g_srv->port);
    snprintf(plain->host[0], sizeof plain->host[0], "127.0.0.1");
    plain->port[0] = g_srv->port;
    *tls = *plain;
    tls->mode = "tls";
    snprintf(tls->url, sizeof tls->url, "rediss://127.0.0.1:%d", port);
}

static void tls_teardown(void)
{
    rt_redis_stop(g_srv);
    rt_tls_free(g_certs);
    bn_tls_ca[0] = '\0';
}

/* ---- solo_tls ---------------------------------------------------------- */

/* A bare TLS connection to the TLS port, for the PING floor. */
typedef struct tls_ping {
    SSL_CTX *ctx;
    SSL *ssl;
    int fd;
} tls_ping;

static void tping_open(tls_ping *t, int port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    int one = 1;

    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (!(t->ctx = SSL_CTX_new(TLS_client_method())) ||
        SSL_CTX_load_verify_locations(t->ctx, g_certs->ca, NULL) != 1)
        bn_die("tls ping: cannot set up OpenSSL");
    SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
    if ((t->fd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
        connect(t->fd, (struct sockaddr *)&a, sizeof a) != 0)
        bn_die("tls ping: connect to %d failed", port);
    setsockopt(t->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (!(t->ssl = SSL_new(t->ctx)) || SSL_set_fd(t->ssl, t->fd) != 1 || SSL_connect(t->ssl) != 1)
        bn_die("tls ping: handshake with %d failed", port);
}

static void tping_close(tls_ping *t)
{
    SSL_free(t->ssl);
    SSL_CTX_free(t->ctx);
    close(t->fd);
}

/* n PINGs on each transport: round trips in µs. */
static void ping_turn(redisContext *rc, tls_ping *t, int n, bn_samples ping[2])
{
    char buf[64];
    int i, got;

    for (i = 0; i < n; i++) {
        int64_t t0 = bn_now_ns();
        freeReplyObject(bn_rcmd(rc, "PING"));
        bn_s_push(&ping[0], (double)(bn_now_ns() - t0) / 1000.0);
        t0 = bn_now_ns();
        if (SSL_write(t->ssl, "PING\r\n", 6) != 6)
            bn_die("tls ping: write failed");
        for (got = 0; got < 7;) {           /* "+PONG\r\n" */
            int k = SSL_read(t->ssl, buf + got, (int)sizeof buf - got);
            if (k <= 0)
                bn_die("tls ping: read failed");
            got += k;
        }
        bn_s_push(&ping[1], (double)(bn_now_ns() - t0) / 1000.0);
    }
}

static void solo_turn(rl_lock *l, int n, bn_samples *pair)
{
    int i, st;

    for (i = 0; i < n; i++) {
        int64_t t0 = bn_now_ns();
        if ((st = rl_lock_acquire(l)) != RL_OK)
            bn_fail("solo_tls acquire", st);
        if ((st = rl_lock_release(l)) != RL_OK)
            bn_fail("solo_tls release", st);
        bn_s_push(pair, (double)(bn_now_ns() - t0) / 1000.0);
    }
}

static void solo_tls(const bn_target *tg[2], int n)
{
    enum { TURN = 250 };
    rl_client *c[2];
    rl_lock *l[2];
    bn_samples pair[2] = { { 0 } }, ping[2] = { { 0 } };
    double p50[2], p99[2], ping50[2];
    redisContext *rc = rt_redis_connect(g_srv);
    tls_ping tp;
    int i, m;

    if (!rc)
        bn_die("solo_tls: cannot connect to the plain port");
    tping_open(&tp, atoi(strrchr(tg[1]->url, ':') + 1));

    for (m = 0; m < 2; m++) {
        c[m] = bn_make_client_at(tg[m]->url, 0, 0);
        l[m] = bn_make_lock(c[m], "solo_tls:%s:%s", bn_run, tg[m]->mode);
        solo_turn(l[m], 200, &pair[m]);         /* warm-up: connections, scripts */
        pair[m].n = 0;
    }
    for (i = 0; i < n; i += TURN) {
        for (m = 0; m < 2; m++)
            solo_turn(l[m], n - i < TURN ? n - i : TURN, &pair[m]);
        ping_turn(rc, &tp, n - i < TURN ? n - i : TURN, ping);
    }
    for (m = 0; m < 2; m++) {
        bn_targets t = { .any = 0 };
        bn_rec r = { .n = 0 };
        p50[m] = bn_s_pct(&pair[m], 50);
        p99[m] = bn_s_pct(&pair[m], 99);
        ping50[m] = bn_s_pct(&ping[m], 50);
        bn_rec_add(&r, "workload", "solo_%s", tg[m]->mode);
        bn_rec_add(&r, "mode", "%s", tg[m]->mode);
        bn_rec_add(&r, "procs", "1");
        bn_rec_add(&r, "threads", "1");
        bn_rec_add(&r, "n", "%d", n);
        bn_rec_add(&r, "p50_us", "%.1f", p50[m]);
        bn_rec_add(&r, "p99_us", "%.1f", p99[m]);
        bn_rec_add(&r, "max_us", "%.1f", bn_s_max(&pair[m]));
        bn_rec_add(&r, "mean_us", "%.1f", bn_s_mean(&pair[m]));
        bn_rec_add(&r, "ping_p50_us", "%.1f", ping50[m]);
        bn_rec_add(&r, "ping_p99_us", "%.1f", bn_s_pct(&ping[m], 99));
        bn_rec_add(&r, "p50_ratio_ping", "%.2f", p50[m] / ping50[m]);
        if (m == 1) {
            bn_rec_add(&r, "ping_p50_ratio_plain", "%.2f", ping50[1] / ping50[0]);
            bn_rec_add(&r, "p50_ratio_plain", "%.2f", p50[1] / p50[0]);
            bn_rec_add(&r, "p99_ratio_plain", "%.2f", p99[1] / p99[0]);
            bn_tgt_check(&t, "p50_ratio_plain<=1.3", p50[1] <= 1.3 * p50[0]);
        }
        bn_tgt_emit(&r, &t);
        bn_rec_emit(&r);
    }
    tping_close(&tp);
    redisFree(rc);
    for (m = 0; m < 2; m++) {
        bn_s_free(&ping[m]);
        bn_s_free(&pair[m]);
        rl_lock_free(l[m]);
        rl_client_free(c[m]);
    }
}

/* ---- storm_tls --------------------------------------------------------- */

/* What the killing thread does and finds, and what the run measured. */
typedef struct storm {
    redisContext *rc;            /* the plain port: CLIENT KILL skips it */
    const char *mode;
    int k;
    long kill_ms;
    atomic_int stop;
    long kills, killed;
    long long min_pttl;          /* of the sampled keys, during the storm */
    pthread_t th;
} storm;

typedef struct storm_out {
    double wall_max, unconfirmed_max, wd_cpu, kp_cpu;
} storm_out;

/* min(*min, PTTL) over every `step`-th of the k keys (-2: one was gone). */
static void sample_pttl(redisContext *rc, const char *mode, int k, int step, long long *min)
{
    int i;

    for (i = 0; i < k; i += step)
        redisAppendCommand(rc, "PTTL rl:{storm:%s:%s:%d}", bn_run, mode, i);
    for (i = 0; i < k; i += step) {
        redisReply *r;
        if (redisGetReply(rc, (void **)&r) != REDIS_OK)
            bn_die("storm: PTTL: %s", rc->errstr);
        if (r->type == REDIS_REPLY_INTEGER && (*min < -2 || r->integer < *min))
            *min = r->integer;
        freeReplyObject(r);
    }
}

static void *storm_killer(void *arg)
{
    storm *s = arg;

    while (!atomic_load(&s->stop)) {
        redisReply *r = bn_rcmd(s->rc, "CLIENT KILL TYPE normal");
        s->killed += r->type == REDIS_REPLY_INTEGER ? (long)r->integer : 0;
        s->kills++;
        freeReplyObject(r);
        sample_pttl(s->rc, s->mode, s->k, s->k / 100 ? s->k / 100 : 1, &s->min_pttl);
        bn_sleep_us(s->kill_ms * 1000);
    }
    return NULL;
}

static unsigned long long task_cpu(pid_t tid)
{
    char path[64], buf[128];

    snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", (int)tid);
    return tid && bn_read_file(path, buf, sizeof buf) == 0 ? strtoull(buf, NULL, 10) : 0;
}

static unsigned long long lost_of(const rl_stats *s)
{
    return s->lost_unconfirmed + s->lost_lease_ended + s->lost_gone + s->lost_forced +
           s->lost_unresolved + s->lost_other;
}

/* Take the k locks of mode's storm (the first one starts the watchdog). */
static rl_lock **storm_take(rl_client *c, const char *mode, int k, int *wd_fd, pid_t *wd,
                            pid_t *kp)
{
    rl_lock **locks = bn_xmalloc(sizeof *locks * (size_t)k);
    int i, st;

    for (i = 0; i < k; i++)
        locks[i] = bn_make_lock(c, "storm:%s:%s:%d", bn_run, mode, i);
    *wd_fd = bn_wd_first_acquire(locks[0], wd, kp);
    for (i = 1; i < k; i++)
        if ((st = rl_lock_acquire(locks[i])) != RL_OK)
            bn_fail("storm acquire", st);
    return locks;
}

static void storm_emit(const storm *s, const rl_stats *a, const rl_stats *b, long storm_ms,
                       int got, const double *walls, long long min_after, storm_out *o,
                       const storm_out *plain)
{
    bn_targets t = { .any = 0 };
    bn_rec r = { .n = 0 };
    double wall_sum = 0;
    int i;

    for (i = 0; i < got; i++) {
        wall_sum += walls[i];
        o->wall_max = walls[i] > o->wall_max ? walls[i] : o->wall_max;
    }
    o->unconfirmed_max = s->min_pttl >= 0 ? 3000.0 - (double)s->min_pttl : 3000;
    bn_rec_add(&r, "workload", "storm_%s", s->mode);
    bn_rec_add(&r, "mode", "%s", s->mode);
    bn_rec_add(&r, "n", "%d", s->k);
    bn_rec_add(&r, "lease_ms", "3000");
    bn_rec_add(&r, "seconds", "%.1f", (double)storm_ms / 1000);
    bn_rec_add(&r, "kill_every_ms", "%ld", s->kill_ms);
    bn_rec_add(&r, "kills", "%ld", s->kills);
    bn_rec_add(&r, "conns_killed", "%ld", s->killed);
    bn_rec_add(&r, "connects", "%llu", b->connects - a->connects);
    bn_rec_add(&r, "disconnects", "%llu", b->disconnects - a->disconnects);
    bn_rec_add(&r, "rounds", "%llu", b->renewal_rounds - a->renewal_rounds);
    bn_rec_add(&r, "rounds_failed", "%llu", b->renewal_failures - a->renewal_failures);
    bn_rec_add(&r, "lost", "%llu", lost_of(b) - lost_of(a));
    bn_rec_add(&r, "wd_bursts", "%d", got);
    bn_rec_add(&r, "wd_burst_ms_max", "%.1f", o->wall_max);
    bn_rec_add(&r, "wd_burst_ms_mean", "%.1f", got ? wall_sum / got : 0);
    bn_rec_add(&r, "wd_cpu_ms", "%.1f", o->wd_cpu);
    bn_rec_add(&r, "keeper_cpu_ms", "%.1f", o->kp_cpu);
    bn_rec_add(&r, "keeper_cpu_ms_per_connect", "%.2f",
               b->connects > a->connects ? o->kp_cpu / (double)(b->connects - a->connects) : 0);
    bn_rec_add(&r, "min_pttl_ms", "%lld", s->min_pttl);
    bn_rec_add(&r, "unconfirmed_ms_max", "%.0f", o->unconfirmed_max);
    bn_rec_add(&r, "min_pttl_after_ms", "%lld", min_after);
    if (plain) {
        bn_rec_add(&r, "wd_burst_max_ratio_plain", "%.2f",
                   plain->wall_max > 0 ? o->wall_max / plain->wall_max : 0);
        bn_rec_add(&r, "unconfirmed_max_ratio_plain", "%.2f",
                   plain->unconfirmed_max > 0 ? o->unconfirmed_max / plain->unconfirmed_max : 0);
        bn_rec_add(&r, "wd_cpu_ratio_plain", "%.2f", plain->wd_cpu > 0 ? o->wd_cpu / plain->wd_cpu : 0);
        bn_rec_add(&r, "keeper_cpu_ratio_plain", "%.2f",
                   plain->kp_cpu > 0 ? o->kp_cpu / plain->kp_cpu : 0);
    }
    bn_tgt_check(&t, "lost=0", lost_of(b) == lost_of(a));
    bn_tgt_check(&t, "all_held(min_pttl>0)", s->min_pttl > 0 && min_after > 0);
    bn_tgt_emit(&r, &t);
    bn_rec_emit(&r);
}

/* K holds kept while every connection is killed every kill_ms, storm_ms
 * long; the watchdog's bursts of CPU use are watched meanwhile. */
static storm_out storm_run(const bn_target *tg, int k, long storm_ms, long kill_ms,
                           const storm_out *plain)
{
    enum { BURSTS = 256 };
    rl_client *c = bn_make_client_at(tg->url, 3000, 0);
    storm s = { .mode = tg->mode, .k = k, .kill_ms = kill_ms, .min_pttl = -3 };
    storm_out o = { 0, 0, 0, 0 };
    double walls[BURSTS], cpus[BURSTS];
    unsigned long long wd0, kp0;
    long long min_after = -3;
    rl_stats a = { .version = RL_STATS_VERSION }, b = { .version = RL_STATS_VERSION };
    rl_lock **locks;
    pid_t wd, kp;
    int fd, got, i, st;

    locks = storm_take(c, tg->mode, k, &fd, &wd, &kp);
    if (!(s.rc = rt_redis_connect(g_srv)))
        bn_die("storm: cannot connect to the plain port");
    bn_watch_bursts(fd, 1, 150, 1500, walls, cpus);    /* a quiet moment */
    rl_client_stats(&a, c);
    wd0 = task_cpu(wd);
    kp0 = task_cpu(kp);
    if (pthread_create(&s.th, NULL, storm_killer, &s) != 0)
        bn_die("pthread_create");
    got = bn_watch_bursts(fd, BURSTS, 150, storm_ms, walls, cpus);
    atomic_store(&s.stop, 1);
    pthread_join(s.th, NULL);
    rl_client_stats(&b, c);
    o.wd_cpu = (double)(task_cpu(wd) - wd0) / 1e6;
    o.kp_cpu = (double)(task_cpu(kp) - kp0) / 1e6;
    sample_pttl(s.rc, tg->mode, k, 1, &min_after);
    storm_emit(&s, &a, &b, storm_ms, got, walls, min_after, &o, plain);

    for (i = 0; i < k; i++) {
        if (rl_lock_hold_count(locks[i]) > 0 && (st = rl_lock_release(locks[i])) != RL_OK)
            bn_fail("storm release", st);
        rl_lock_free(locks[i]);
    }
    free(locks);
    close(fd);
    redisFree(s.rc);
    rl_client_free(c);
    return o;
}

/* ---- the whole TLS comparison ------------------------------------------ */

void bn_run_tls(const bn_tls_spec *sp)
{
    bn_target plain, tls;
    const bn_target *both[2] = { &plain, &tls };
    int i;

    tls_setup(&plain, &tls);
    if (sp->solo_n > 0)
        solo_tls(both, sp->solo_n);
    for (i = 0; i < sp->ncontend; i++) {
        int p = sp->contend[i][0], w = sp->contend[i][1];
        bn_contend_out ref = bn_run_contend_on(&plain, p, w, 1, sp->contend_ms, NULL);
        bn_run_contend_on(&tls, p, w, 1, sp->contend_ms, &ref);
    }
    if (sp->watchdog) {
        bn_wdres ref = bn_run_watchdog(&plain, sp->wd_k, 4, NULL);
        bn_run_watchdog(&tls, sp->wd_k, 4, &ref);
    }
    if (sp->storm_ms > 0) {
        storm_out ref = storm_run(&plain, sp->wd_k, sp->storm_ms, sp->kill_ms, NULL);
        storm_run(&tls, sp->wd_k, sp->storm_ms, sp->kill_ms, &ref);
    }
    tls_teardown();
}
