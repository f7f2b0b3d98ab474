/*
 * Review of the TLS transport (cd1d42c: src/tls.c and its callers), each
 * test a defect found or a property checked, against real TLS
 * redis-servers (and a TLS redis-sentinel) with certificates made by the
 * openssl command (tests/common/rt_tls.h): sentinels asked without
 * blocking; idle connections reused, or replaced once the server closed
 * them; fork children's plain connections on descriptors their parent's
 * TLS connections had; stopped servers; the status and words of refused
 * or missing client certificates in every mode, and of failures with
 * verification off; the thread's OpenSSL error queue; many threads.
 * Without redis-server, redis-sentinel or openssl every test FAILS.
 */
#include "it_common.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/err.h>

#include "rt_tls.h"

static rt_tls *certs;

/* A redis-server with TLS on a port of its own beside the plain one. */
typedef struct tls_server {
    rt_redis *redis;
    int tls_port;
    char url[128];          /* rediss://127.0.0.1:<tls_port> */
    char plain_url[128];    /* redis://127.0.0.1:<port> */
} tls_server;

static int group_setup(void **state)
{
    (void)state;
    return (certs = rt_tls_make()) ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    rt_tls_free(certs);
    return 0;
}

/* more: NULL, or more server arguments; auth_clients: client certificates
 * required. */
static void server_start_ex(tls_server *s, int auth_clients, const char *more)
{
    char args[2048];
    size_t n;

    s->tls_port = rt_free_port();
    if (s->tls_port < 0)
        fail_msg("no free port");
    rt_tls_server_args(certs, s->tls_port, NULL, NULL, auth_clients, args, sizeof args);
    n = strlen(args);
    snprintf(args + n, sizeof args - n, " %s", more ? more : "");
    if (!(s->redis = rt_redis_start(args)))
        fail_msg("cannot start a TLS redis-server");
    snprintf(s->url, sizeof s->url, "rediss://127.0.0.1:%d", s->tls_port);
    snprintf(s->plain_url, sizeof s->plain_url, "redis://127.0.0.1:%d", s->redis->port);
}

static void server_start(tls_server *s)
{
    server_start_ex(s, 0, NULL);
}

/* Options for url with the test CA trusted. */
static void tls_options(rl_options *o, const char *url, long lease_ms, long command_ms)
{
    it_options(o, url, lease_ms, command_ms);
    o->tls_ca_file = certs->ca;
}

static rl_client *tls_client(const tls_server *s, long lease_ms)
{
    rl_options o;

    tls_options(&o, s->url, lease_ms, 0);
    return it_client_opts(&o);
}

/* ---- a sentinel over TLS ------------------------------------------------ */

typedef struct tls_sentinel {
    pid_t pid;
    int port, tls_port;
    char dir[256], url[256];
} tls_sentinel;

/* A redis-sentinel with TLS on a port of its own, monitoring s's TLS port
 * over TLS as "m"; waits until it names the primary. */
static void sentinel_start_ex(tls_sentinel *t, const tls_server *s, int auth_clients)
{
    char conf[320], out[320], *bin = rt_find_binary("RL_REDIS_SENTINEL", "redis-sentinel");
    redisContext *rc = NULL;
    FILE *f;
    int ok;

    if (!bin)
        fail_msg("no redis-sentinel");
    snprintf(t->dir, sizeof t->dir, "%s/rltlsrev.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR")
                                                                          : "/tmp");
    if (!mkdtemp(t->dir))
        fail_msg("mkdtemp: %s", strerror(errno));
    t->port = rt_free_port();
    t->tls_port = rt_free_port();
    snprintf(conf, sizeof conf, "%s/sentinel.conf", t->dir);
    snprintf(out, sizeof out, "%s/out.log", t->dir);
    if (!(f = fopen(conf, "w")))
        fail_msg("%s: %s", conf, strerror(errno));
    fprintf(f, "port %d\ntls-port %d\ntls-cert-file %s\ntls-key-file %s\n"
               "tls-ca-cert-file %s\ntls-auth-clients %s\ntls-replication yes\n"
               "dir %s\nsentinel resolve-hostnames no\n"
               "sentinel monitor m 127.0.0.1 %d 1\n",
            t->port, t->tls_port, certs->server_crt, certs->server_key, certs->ca,
            auth_clients ? "yes" : "no", t->dir,
            s->tls_port);
    fclose(f);
    {
        char *argv[] = { bin, conf, "--sentinel", NULL };
        t->pid = rt_spawn_logged(bin, argv, out);
    }
    free(bin);
    if (t->pid < 0)
        fail_msg("cannot start redis-sentinel");
    ok = RT_WAIT_UNTIL(({
        redisReply *r;
        int named = 0;
        if (!rc || rc->err) {
            if (rc)
                redisFree(rc);
            rc = redisConnect("127.0.0.1", t->port);
        }
        r = rc && !rc->err ? redisCommand(rc, "SENTINEL get-master-addr-by-name m") : NULL;
        named = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
                atoi(r->element[1]->str) == s->tls_port;
        if (r)
            freeReplyObject(r);
        named;
    }), 10000);
    if (rc)
        redisFree(rc);
    if (!ok)
        fail_msg("the sentinel did not come up (log in %s)", t->dir);
    snprintf(t->url, sizeof t->url, "sentinels://127.0.0.1:%d/m", t->tls_port);
}

static void sentinel_start(tls_sentinel *t, const tls_server *s)
{
    sentinel_start_ex(t, s, 0);
}

static void sentinel_stop(tls_sentinel *t)
{
    char cmd[300];

    if (t->pid > 0) {
        kill(t->pid, SIGKILL);
        waitpid(t->pid, NULL, 0);
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", t->dir);
}

/*
 * sentinels://: the sentinels are asked without blocking (sentinel.c ask),
 * the replies read once poll() says so. Over TLS rl__redis_get_reply() on
 * such a non-blocking context read as if blocking: the socket said EAGAIN
 * at once and the sentinel was dropped as failed, so no sentinels:// client
 * could be made.
 */
static void sentinel_asked_over_tls(void **state)
{
    tls_server s;
    tls_sentinel t;
    rl_client *c;
    rl_lock *l;
    rl_options o;
    int i;

    (void)state;
    server_start(&s);
    sentinel_start(&t, &s);
    tls_options(&o, t.url, 0, 0);
    for (i = 0; i < 5; i++) {   /* the reply sometimes came in time: ask again */
        c = it_client_opts(&o);
        l = it_lock(c, "sentinel-tls");
        IT_RC(rl_lock_acquire(l), RL_OK);
        IT_RC(rl_lock_release(l), RL_OK);
        rl_lock_free(l);
        rl_client_free(c);
    }
    sentinel_stop(&t);
    rt_redis_stop(s.redis);
}

/* ---- idle pooled connections ------------------------------------------- */

/*
 * An idle pooled TLS connection is checked before use (closed_before_use:
 * rl__io_readable_now). TLS 1.3 session tickets come after the handshake;
 * they must not make the connection look closed, or every call would pay
 * for a new connection and TLS handshake.
 */
static void idle_link_reused(void **state)
{
    tls_server s;
    rl_client *c;
    rl_lock *l;
    rl_stats before, after;
    int i;

    (void)state;
    server_start(&s);
    c = tls_client(&s, 0);
    l = it_lock(c, "idle");
    IT_RC(rl_lock_acquire(l), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    before = it_stats(c);
    for (i = 0; i < 100; i++) {
        IT_RC(rl_lock_acquire(l), RL_OK);
        IT_RC(rl_lock_release(l), RL_OK);
    }
    after = it_stats(c);
    IT_EQ(after.connects - before.connects, 0);
    IT_EQ(after.disconnects - before.disconnects, 0);
    rl_lock_free(l);
    rl_client_free(c);
    rt_redis_stop(s.redis);
}

/*
 * The server closes idle TLS connections (CLIENT KILL, as a restart or an
 * idle timeout would): the next call finds its connection closed before
 * use, over TLS too, and goes on a new one without an error.
 */
static void closed_idle_link_replaced(void **state)
{
    tls_server s;
    rl_client *c;
    rl_lock *l;
    redisContext *rc;
    redisReply *r;
    int i;

    (void)state;
    server_start(&s);
    c = tls_client(&s, 0);
    l = it_lock(c, "killed");
    if (!(rc = rt_redis_connect(s.redis)))
        fail_msg("cannot connect to the plain port");
    for (i = 0; i < 5; i++) {
        IT_RC(rl_lock_acquire(l), RL_OK);
        IT_RC(rl_lock_release(l), RL_OK);
        r = redisCommand(rc, "CLIENT KILL TYPE normal SKIPME yes");
        if (!r || r->type != REDIS_REPLY_INTEGER || r->integer < 1)
            fail_msg("CLIENT KILL did not kill");
        freeReplyObject(r);
    }
    IT_RC(rl_lock_acquire(l), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    redisFree(rc);
    rl_lock_free(l);
    rl_client_free(c);
    rt_redis_stop(s.redis);
}

/* ---- fork children ------------------------------------------------------ */

#define NPLAIN 4

typedef struct fork_arg {
    const tls_server *s;
    rl_client *tls;
} fork_arg;

/* The child: its first call on the TLS client drops the parent's
 * connections (the watchdog's socket is only closed: a parent thread may
 * be using it); then plain clients, whose sockets get the descriptors just
 * closed, must work. Exit codes: 0, or which step failed. */
static int fork_child(void *arg)
{
    const fork_arg *a = arg;
    rl_client *p[NPLAIN] = { NULL };
    rl_options o;
    rl_lock *l = NULL;
    int i, rc;

    if (rl_lock_new(&l, a->tls, "held") != RL_OK)
        return 10;
    rc = rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG);   /* the parent holds it */
    rl_lock_free(l);
    if (rc != RL_EBUSY && rc != RL_ETIMEDOUT) {
        fprintf(stderr, "child: TLS try_acquire = %d: %s\n", rc, rl_last_error());
        return 11;
    }
    /* Kept open together, so that they take every descriptor free. */
    for (i = 0; i < NPLAIN; i++) {
        it_options(&o, a->s->plain_url, 0, 0);
        if ((rc = rl_client_new(&p[i], &o)) != RL_OK) {
            fprintf(stderr, "child: plain client %d: %d: %s\n", i, rc, rl_last_error());
            return 20;
        }
    }
    for (i = 0; i < NPLAIN && rc == RL_OK; i++) {
        if ((rc = rl_lock_new(&l, p[i], "plain")) == RL_OK) {
            if ((rc = rl_lock_acquire(l)) == RL_OK)
                rc = rl_lock_release(l);
            rl_lock_free(l);
        }
        if (rc != RL_OK)
            fprintf(stderr, "child: plain client %d: %d: %s\n", i, rc, rl_last_error());
    }
    for (i = 0; i < NPLAIN; i++)
        rl_client_free(p[i]);
    if (rc != RL_OK)
        return 21;
    return 0;
}

/*
 * A fork child closes the sockets of connections that the parent's
 * threads may be using (the watchdog's, the subscriber's, borrowed ones)
 * without freeing them. Their TLS links stayed in the child's copy of the
 * descriptor table, so a plain connection of the child that got such a
 * descriptor again was read and written through the parent's TLS stream.
 */
/* Waits on "busy" (held by another client): the client's subscriber has a
 * connection of its own meanwhile. */
static void *busy_waiter(void *arg)
{
    int rc = rl_lock_try_acquire(arg, 15000, RL_LEASE_WATCHDOG);

    return (void *)(intptr_t)(rc == RL_OK ? rl_lock_release(arg) : rc);
}

static int sockets_open(void)
{
    char path[64], link[64];
    int fd, n = 0;

    for (fd = 3; fd < 64; fd++) {
        ssize_t k;
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        k = readlink(path, link, sizeof link - 1);
        n += k > 0 && strncmp(link, "socket:", 7) == 0;
    }
    return n;
}

static void fork_child_plain_on_reused_fd(void **state)
{
    tls_server s;
    rl_client *c, *other;
    rl_lock *l, *busy, *wait;
    fork_arg a;
    pthread_t t;
    void *trc;
    pid_t pid;
    int before;

    (void)state;
    server_start(&s);
    c = tls_client(&s, 600);        /* renewed every 200 ms */
    l = it_lock(c, "held");
    IT_RC(rl_lock_acquire(l), RL_OK);
    IT_WAIT(it_stats(c).renewal_rounds >= 1, 3000);     /* the watchdog's connection is up */
    other = tls_client(&s, 0);
    busy = it_lock(other, "busy");
    IT_RC(rl_lock_acquire(busy), RL_OK);
    before = sockets_open();
    wait = it_lock(c, "busy");
    if (pthread_create(&t, NULL, busy_waiter, wait) != 0)
        fail_msg("pthread_create");
    IT_WAIT(sockets_open() >= before + 2, 3000);        /* its try, and the subscriber's */
    a.s = &s;
    a.tls = c;
    pid = rt_child_start(fork_child, &a, 20);
    if (pid < 0)
        fail_msg("fork failed");
    IT_EQ(rt_child_wait(pid, 20000), 0);
    IT_RC(rl_lock_release(busy), RL_OK);
    pthread_join(t, &trc);
    IT_RC((int)(intptr_t)trc, RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(wait);
    rl_lock_free(busy);
    rl_lock_free(l);
    rl_client_free(other);
    rl_client_free(c);
    rt_redis_stop(s.redis);
}

/* ---- a stalled server --------------------------------------------------- */

/*
 * A TLS server stopped (SIGSTOP) still accepts connections (the kernel
 * does), but answers no handshake: a new client, and a call that needs a
 * new connection, cost at most the timeouts, and say RL_ECONN.
 */
static void stalled_handshake_bounded(void **state)
{
    tls_server s;
    rl_client *c = NULL;
    rl_options o;
    rl_lock *l;
    int64_t t0;
    int rc;

    (void)state;
    server_start(&s);
    IT_EQ(rt_redis_pause(s.redis), 0);
    tls_options(&o, s.url, 0, 300);
    o.connect_timeout_ms = 300;
    t0 = rt_now_ms();
    rc = rl_client_new(&c, &o);
    IT_RANGE(rt_now_ms() - t0, 250, 1500);
    if (rc == RL_OK) {      /* made without connecting: the first call connects */
        l = it_lock(c, "stalled");
        t0 = rt_now_ms();
        IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_ECONN);
        IT_RANGE(rt_now_ms() - t0, 250, 1500);
        rl_lock_free(l);
        rl_client_free(c);
    } else {
        IT_RC(rc, RL_ECONN);
    }
    if (!strstr(rl_last_error(), "TLS") || !strstr(rl_last_error(), "plain port"))
        fail_msg("rl_last_error() does not say TLS, or a plain port: %s", rl_last_error());
    IT_EQ(rt_redis_resume(s.redis), 0);
    rt_redis_stop(s.redis);
}

/*
 * Redlock over TLS: a master stopped before the client knew it costs the
 * fan-out one node timeout (lease / 10) for its TLS handshake, made
 * without blocking beside the others' replies, and no more.
 */
static void redlock_stalled_node_bounded(void **state)
{
    tls_server s[3];
    char url[256];
    rl_client *c;
    rl_options o;
    rl_lock *l;
    int64_t t0, took;
    int i;

    (void)state;
    for (i = 0; i < 3; i++)
        server_start(&s[i]);
    snprintf(url, sizeof url, "redlocks://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
             s[0].tls_port, s[1].tls_port, s[2].tls_port);
    IT_EQ(rt_redis_pause(s[2].redis), 0);
    tls_options(&o, url, 2000, 1000);
    o.connect_timeout_ms = 1000;
    c = it_client_opts(&o);
    l = it_lock(c, "redlock-stalled");
    for (i = 0; i < 5; i++) {
        t0 = rt_now_ms();
        IT_RC(rl_lock_try_acquire(l, 0, 2000), RL_OK);
        took = rt_now_ms() - t0;
        IT_RANGE(took, 0, 600);
        IT_RC(rl_lock_release(l), RL_OK);
    }
    rl_lock_free(l);
    rl_client_free(c);
    IT_EQ(rt_redis_resume(s[2].redis), 0);
    for (i = 0; i < 3; i++)
        rt_redis_stop(s[i].redis);
}

/* ---- what a failure says ------------------------------------------------ */

/*
 * rediss:// to a plain Redis port: Redis never answers a ClientHello (it
 * waits for a line's end that strchr() does not find past the hello's NUL
 * bytes), so this is told from a stopped server only by the words: the
 * timeout, RL_ECONN, and a hint that the port may be a plain one.
 */
static void tls_to_plain_port_hinted(void **state)
{
    tls_server s;
    char url[128];
    rl_client *c = NULL;
    rl_options o;
    int64_t t0;

    (void)state;
    server_start(&s);
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", s.redis->port);
    tls_options(&o, url, 0, 300);
    t0 = rt_now_ms();
    IT_RC(rl_client_new(&c, &o), RL_ECONN);
    IT_RANGE(rt_now_ms() - t0, 250, 1500);
    if (!strstr(rl_last_error(), "plain port: then redis://"))
        fail_msg("rl_last_error(): %s", rl_last_error());
    rt_redis_stop(s.redis);
}

/*
 * With tls_insecure_skip_verify the server's certificate is not checked,
 * though OpenSSL still records why it would not pass (here: a CA not
 * trusted). A handshake that then failed for another reason was blamed on
 * the certificate: a TLS 1.2 server that wants a client certificate was
 * said to have "a certificate signed by an unknown CA".
 */
static void insecure_failure_not_blamed_on_certificate(void **state)
{
    tls_server s;
    rl_client *c = NULL;
    rl_options o;
    int rc;

    (void)state;
    server_start_ex(&s, 1, "--tls-protocols TLSv1.2");
    it_options(&o, s.url, 0, 0);
    o.tls_insecure_skip_verify = 1;
    rc = rl_client_new(&c, &o);
    IT_RC(rc, RL_ETLS);
    if (!strstr(rl_last_error(), "client certificate"))
        fail_msg("rl_last_error(): %s", rl_last_error());
    rt_redis_stop(s.redis);
}

/* Ten new clients, rediss:// and redlocks:// in turn, to servers that want
 * a client certificate, with this one (crt, key; NULL: none): each
 * RL_ETLS, its words naming the client certificate. */
static void cert_refused_every_mode(const char *crt, const char *key)
{
    tls_server s[3];
    char url[256];
    rl_client *c = NULL;
    rl_options o;
    int i, k;

    for (i = 0; i < 3; i++)
        server_start_ex(&s[i], 1, NULL);
    snprintf(url, sizeof url, "redlocks://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
             s[0].tls_port, s[1].tls_port, s[2].tls_port);
    for (k = 0; k < 10; k++) {
        tls_options(&o, k % 2 ? url : s[0].url, 0, 0);
        o.tls_cert_file = crt;
        o.tls_key_file = key;
        IT_RC(rl_client_new(&c, &o), RL_ETLS);
        if (!strstr(rl_last_error(), "client certificate"))
            fail_msg("%s: rl_last_error(): %s", o.url, rl_last_error());
    }
    for (i = 0; i < 3; i++)
        rt_redis_stop(s[i].redis);
}

/*
 * TLS 1.3: a server that wants a client certificate says so after the
 * client's side of the handshake is done, in an alert read with the first
 * reply; the Redis handshake written meanwhile may meet a closed
 * connection. Every mode still says RL_ETLS and why.
 */
static void client_certificate_wanted_every_mode(void **state)
{
    (void)state;
    cert_refused_every_mode(NULL, NULL);
}

/* The same with sentinels that want a client certificate: the sentinels
 * are asked without blocking, and say so in their own way. */
static void client_certificate_wanted_by_sentinel(void **state)
{
    tls_server s;
    tls_sentinel t;
    rl_client *c = NULL;
    rl_options o;
    int k;

    (void)state;
    server_start(&s);
    sentinel_start_ex(&t, &s, 1);
    tls_options(&o, t.url, 0, 0);
    for (k = 0; k < 5; k++) {
        IT_RC(rl_client_new(&c, &o), RL_ETLS);
        if (!strstr(rl_last_error(), "client certificate"))
            fail_msg("rl_last_error(): %s", rl_last_error());
    }
    o.tls_cert_file = certs->client_crt;
    o.tls_key_file = certs->client_key;
    c = it_client_opts(&o);
    rl_client_free(c);
    sentinel_stop(&t);
    rt_redis_stop(s.redis);
}

/*
 * An application that uses OpenSSL itself finds its thread's error queue
 * as it left it: empty after rlock's calls, failed or not.
 */
static void error_queue_left_clean(void **state)
{
    tls_server s, rogue;
    rl_client *c = NULL;
    rl_options o;
    rl_lock *l;
    char args[2048];

    (void)state;
    server_start(&s);
    rogue.tls_port = rt_free_port();
    rt_tls_server_args(certs, rogue.tls_port, certs->rogue_crt, certs->rogue_key, 0, args,
                       sizeof args);
    if (!(rogue.redis = rt_redis_start(args)))
        fail_msg("cannot start a TLS redis-server");
    snprintf(rogue.url, sizeof rogue.url, "rediss://127.0.0.1:%d", rogue.tls_port);
    ERR_clear_error();
    tls_options(&o, rogue.url, 0, 0);
    IT_RC(rl_client_new(&c, &o), RL_ETLS);
    IT_EQ(ERR_peek_error(), 0);
    tls_options(&o, s.url, 0, 0);
    o.tls_ca_file = "/nonexistent/ca.pem";
    IT_RC(rl_client_new(&c, &o), RL_EINVAL);
    IT_EQ(ERR_peek_error(), 0);
    c = tls_client(&s, 0);
    IT_EQ(ERR_peek_error(), 0);
    l = it_lock(c, "queue");
    IT_RC(rl_lock_acquire(l), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(ERR_peek_error(), 0);
    rl_lock_free(l);
    rl_client_free(c);
    IT_EQ(ERR_peek_error(), 0);
    rt_redis_stop(rogue.redis);
    rt_redis_stop(s.redis);
}

/*
 * A client certificate the server does not trust (self-signed): refused
 * after the client's side of the TLS 1.3 handshake, the alert maybe lost
 * to the reset; every mode says RL_ETLS and that the certificate was
 * refused.
 */
static void client_certificate_refused_every_mode(void **state)
{
    (void)state;
    cert_refused_every_mode(certs->rogue_crt, certs->rogue_key);
}

/* ---- many threads ------------------------------------------------------- */

#define NTHREADS 6
#define ROUNDS 60

typedef struct worker {
    rl_client *c;
    int id, failed;
} worker;

/* Take and give back a lock of its own and a shared one, the watchdog
 * renewing meanwhile. */
static void *work(void *arg)
{
    worker *w = arg;
    char name[32];
    rl_lock *own = NULL, *shared = NULL;
    int i, rc;

    snprintf(name, sizeof name, "own-%d", w->id);
    if (rl_lock_new(&own, w->c, name) != RL_OK || rl_lock_new(&shared, w->c, "shared") != RL_OK) {
        w->failed = -1;
        return NULL;
    }
    for (i = 0; i < ROUNDS && !w->failed; i++) {
        if ((rc = rl_lock_acquire(own)) != RL_OK)
            w->failed = rc;
        else if ((rc = rl_lock_try_acquire(shared, 2000, RL_LEASE_WATCHDOG)) == RL_OK)
            w->failed = rl_lock_release(shared);
        else
            w->failed = rc;
        if (!w->failed && (rc = rl_lock_release(own)) != RL_OK)
            w->failed = rc;
    }
    if (w->failed)
        fprintf(stderr, "worker %d: %d: %s\n", w->id, w->failed, rl_last_error());
    rl_lock_free(own);
    rl_lock_free(shared);
    return NULL;
}

/* Threads of one client over rediss:// and over redlocks://: every call
 * succeeds, each TLS connection used by one thread at a time. */
static void threads_share_tls_clients(void **state)
{
    tls_server s[3];
    char url[256];
    rl_client *c[2];
    pthread_t t[2 * NTHREADS];
    worker w[2 * NTHREADS];
    rl_options o;
    int i;

    (void)state;
    for (i = 0; i < 3; i++)
        server_start(&s[i]);
    snprintf(url, sizeof url, "redlocks://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
             s[0].tls_port, s[1].tls_port, s[2].tls_port);
    c[0] = tls_client(&s[0], 900);
    tls_options(&o, url, 900, 0);
    c[1] = it_client_opts(&o);
    for (i = 0; i < 2 * NTHREADS; i++) {
        w[i].c = c[i / NTHREADS];
        w[i].id = i;
        w[i].failed = 0;
        if (pthread_create(&t[i], NULL, work, &w[i]) != 0)
            fail_msg("pthread_create");
    }
    for (i = 0; i < 2 * NTHREADS; i++)
        pthread_join(t[i], NULL);
    for (i = 0; i < 2 * NTHREADS; i++)
        IT_EQ(w[i].failed, 0);
    rl_client_free(c[0]);
    rl_client_free(c[1]);
    for (i = 0; i < 3; i++)
        rt_redis_stop(s[i].redis);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sentinel_asked_over_tls),
        cmocka_unit_test(idle_link_reused),
        cmocka_unit_test(closed_idle_link_replaced),
        cmocka_unit_test(fork_child_plain_on_reused_fd),
        cmocka_unit_test(stalled_handshake_bounded),
        cmocka_unit_test(redlock_stalled_node_bounded),
        cmocka_unit_test(tls_to_plain_port_hinted),
        cmocka_unit_test(insecure_failure_not_blamed_on_certificate),
        cmocka_unit_test(client_certificate_wanted_every_mode),
        cmocka_unit_test(client_certificate_wanted_by_sentinel),
        cmocka_unit_test(client_certificate_refused_every_mode),
        cmocka_unit_test(error_queue_left_clean),
        cmocka_unit_test(threads_share_tls_clients),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
