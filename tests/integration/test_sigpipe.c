/*
 * No write of the library raises SIGPIPE (issue 21 item 12). This program
 * leaves SIGPIPE at its default disposition, which ends the process, as an
 * application that never heard of it would. The server closes every
 * connection of a client while that client writes: its watchdog renews, a
 * waiter's subscriber pings, its threads take and give back locks. Each
 * workload runs in a forked child, so that a death by SIGPIPE is reported
 * as one instead of ending the test run. Without redis-server every test
 * FAILS.
 */
#include "it_common.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LEASE_MS 600     /* the watchdog renews every 200 ms */
#define ROUNDS 3         /* server-side closes per workload */

/* What a child reports through its exit status. */
enum { CH_OK = 0, CH_CLIENT = 10, CH_LOCK, CH_NOTREADY, CH_NOROUNDS, CH_RELEASE, CH_WAITER };

typedef struct workload {
    const char *url;
    int ready;           /* child -> parent: held, ready for a close */
    int go;              /* parent -> child: closed, carry on */
} workload;

static long long rounds_of(rl_client *c)
{
    rl_stats st;

    memset(&st, 0, sizeof st);
    st.version = RL_STATS_VERSION;
    return rl_client_stats(&st, c) == RL_OK ? (long long)st.renewal_rounds : -1;
}

/* A waiter on "held-elsewhere" (the parent keeps that key): its subscriber
 * keeps a connection of its own, pinged and resubscribed after a close. */
static void *waiter(void *arg)
{
    rl_lock *l = arg;
    int rc = rl_lock_try_acquire(l, 1500 * ROUNDS, RL_LEASE_WATCHDOG);

    return (void *)(intptr_t)(rc == RL_ETIMEDOUT ? CH_OK : CH_WAITER);
}

/* The child: hold a watchdog-kept lock, wait in a thread, and take and give
 * back another lock after each of the parent's closes. Its exit status. */
static int child_body(const workload *w)
{
    rl_client *c = NULL;
    rl_lock *held = NULL, *other = NULL, *busy = NULL;
    rl_options o;
    pthread_t t;
    void *wrc;
    char b = 1;
    int i, rc = CH_OK;

    it_options(&o, w->url, LEASE_MS, 1000);
    if (rl_client_new(&c, &o) != RL_OK || rl_lock_new(&held, c, "held") != RL_OK ||
        rl_lock_new(&other, c, "other") != RL_OK ||
        rl_lock_new(&busy, c, "held-elsewhere") != RL_OK)
        return CH_CLIENT;
    if (rl_lock_try_acquire(held, 0, RL_LEASE_WATCHDOG) != RL_OK)
        return CH_LOCK;
    if (pthread_create(&t, NULL, waiter, busy) != 0)
        return CH_CLIENT;
    for (i = 0; i < ROUNDS && rc == CH_OK; i++) {
        long long r0 = rounds_of(c);
        if (write(w->ready, &b, 1) != 1 || read(w->go, &b, 1) != 1)
            rc = CH_NOTREADY;
        /* The watchdog writes on its closed connection, then reconnects. */
        else if (!RT_WAIT_UNTIL(rounds_of(c) >= r0 + 3, 5000))
            rc = CH_NOROUNDS;
        else if (rl_lock_try_acquire(other, 1000, RL_LEASE_WATCHDOG) != RL_OK || rl_lock_release(other) != RL_OK)
            rc = CH_LOCK;
    }
    pthread_join(t, &wrc);
    if (rc == CH_OK)
        rc = (int)(intptr_t)wrc;
    if (rc == CH_OK && rl_lock_release(held) != RL_OK)
        rc = CH_RELEASE;
    rl_lock_free(busy);
    rl_lock_free(other);
    rl_lock_free(held);
    rl_client_free(c);
    return rc;
}

/* Close every connection but the test's own, Redis-side. */
static void close_clients(redisContext *rc)
{
    redisReply *r = redisCommand(rc, "CLIENT KILL TYPE normal");
    freeReplyObject(r);
    r = redisCommand(rc, "CLIENT KILL TYPE pubsub");
    freeReplyObject(r);
}

static void run_workload(redisContext *rc, const char *url)
{
    int ready[2], go[2], st, i;
    workload w = { url, 0, 0 };
    redisReply *r;
    pid_t pid;
    char b;

    assert_int_equal(signal(SIGPIPE, SIG_DFL) == SIG_ERR, 0);
    r = redisCommand(rc, "HSET rl:{held-elsewhere} someone:1 1");
    freeReplyObject(r);
    r = redisCommand(rc, "PEXPIRE rl:{held-elsewhere} 60000");
    freeReplyObject(r);
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(go), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        w.ready = ready[1];
        w.go = go[0];
        _exit(child_body(&w));
    }
    close(ready[1]);
    close(go[0]);
    for (i = 0; i < ROUNDS; i++) {
        if (read(ready[0], &b, 1) != 1)
            break;
        close_clients(rc);
        if (write(go[1], &b, 1) != 1)
            break;
    }
    close(ready[0]);
    close(go[1]);
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (WIFSIGNALED(st))
        fail_msg("%s: the client was killed by signal %d (%s) after %d close(s)", url,
                 WTERMSIG(st), strsignal(WTERMSIG(st)), i);
    IT_EQ(WEXITSTATUS(st), CH_OK);
}

/* A redis-server listening on a Unix socket too, in a directory of its own. */
typedef struct unix_env {
    char dir[32];
    char url[80];
    rt_redis *redis;
    redisContext *rc;
} unix_env;

static int unix_teardown(void **state)
{
    unix_env *u = *state;
    char path[64];

    if (!u)
        return 0;
    if (u->rc)
        redisFree(u->rc);
    rt_redis_stop(u->redis);
    snprintf(path, sizeof path, "%s/r.sock", u->dir);
    unlink(path);
    rmdir(u->dir);
    free(u);
    return 0;
}

static int unix_setup(void **state)
{
    unix_env *u = calloc(1, sizeof *u);
    char args[128];

    *state = u;
    if (!u)
        return -1;
    snprintf(u->dir, sizeof u->dir, "/tmp/rlpipe.XXXXXX");
    if (!mkdtemp(u->dir)) {
        free(u);
        *state = NULL;
        return -1;
    }
    snprintf(args, sizeof args, "--unixsocket %s/r.sock --unixsocketperm 700", u->dir);
    snprintf(u->url, sizeof u->url, "unix://%s/r.sock", u->dir);
    u->redis = rt_redis_start(args);
    u->rc = u->redis ? rt_redis_connect(u->redis) : NULL;
    if (!u->rc) {
        fprintf(stderr, "cannot start redis-server on a Unix socket\n");
        unix_teardown(state);
        *state = NULL;
        return -1;
    }
    return 0;
}

/* A Unix socket: a write to a closed peer raises SIGPIPE at once. The
 * library of before (write(), hiredis unguarded) died of it 5 runs of 5,
 * after the second of the three closes. */
static void test_unix_socket_closed(void **state)
{
    unix_env *u = *state;

    run_workload(u->rc, u->url);
}

/* TCP: the first write after the peer's FIN goes out, the read after it
 * sees the end; a second write before that read (a pipelined round) would
 * raise SIGPIPE. The library of before survived this one 5 runs of 5: kept
 * as the TCP side of the same promise. */
static void test_tcp_closed(void **state)
{
    it_env *e = *state;

    run_workload(e->rc, e->redis->url);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unix_socket_closed, unix_setup, unix_teardown),
        cmocka_unit_test_setup_teardown(test_tcp_closed, it_setup, it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
