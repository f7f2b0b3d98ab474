/*
 * Review of the TLS transport (cd1d42c: src/tls.c and its callers), each
 * test a defect found or a property checked, against real TLS
 * redis-servers (and a TLS redis-sentinel) with certificates made by the
 * openssl command (tests/common/rt_tls.h). Without redis-server, the
 * sentinel or openssl every test FAILS.
 */
#include "it_common.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

static void server_start(tls_server *s)
{
    char args[2048];

    s->tls_port = rt_free_port();
    if (s->tls_port < 0)
        fail_msg("no free port");
    rt_tls_server_args(certs, s->tls_port, NULL, NULL, 0, args, sizeof args);
    if (!(s->redis = rt_redis_start(args)))
        fail_msg("cannot start a TLS redis-server");
    snprintf(s->url, sizeof s->url, "rediss://127.0.0.1:%d", s->tls_port);
    snprintf(s->plain_url, sizeof s->plain_url, "redis://127.0.0.1:%d", s->redis->port);
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
static void sentinel_start(tls_sentinel *t, const tls_server *s)
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
               "tls-ca-cert-file %s\ntls-auth-clients no\ntls-replication yes\n"
               "dir %s\nsentinel resolve-hostnames no\n"
               "sentinel monitor m 127.0.0.1 %d 1\n",
            t->port, t->tls_port, certs->server_crt, certs->server_key, certs->ca, t->dir,
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sentinel_asked_over_tls),
        cmocka_unit_test(idle_link_reused),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
