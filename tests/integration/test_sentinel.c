/*
 * Sentinel mode against a real deployment (tests/common/rt_sentinel.h): a
 * primary, two replicas and three sentinels from Debian's redis-sentinel.
 * The client finds the primary through the sentinels, and follows a
 * failover by itself: with wait_replicas, a hold taken before the primary
 * is SIGKILLed is kept on the promoted replica, and a waiter gets the name
 * on the new primary when it is released.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "it_common.h"
#include "rt_sentinel.h"

static rt_sentinel *dep;

static int group_setup(void **state)
{
    (void)state;
    dep = rt_sentinel_start(2, 3, "mym", NULL);
    if (!dep)
        fprintf(stderr, "it_sentinel: cannot start the Sentinel deployment: this test FAILS\n");
    return dep ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    rt_sentinel_stop(dep);
    return 0;
}

/* What the library logged, for the checks below. */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char log_text[16384];

static void keep_log(int level, const char *msg, void *payload)
{
    size_t at;

    (void)level;
    (void)payload;
    pthread_mutex_lock(&log_mu);
    at = strlen(log_text);
    if (at + strlen(msg) + 2 < sizeof log_text)
        snprintf(log_text + at, sizeof log_text - at, "%s\n", msg);
    pthread_mutex_unlock(&log_mu);
}

static int logged(const char *what)
{
    int yes;

    pthread_mutex_lock(&log_mu);
    yes = strstr(log_text, what) != NULL;
    pthread_mutex_unlock(&log_mu);
    return yes;
}

static rl_client *client_s(const char *url, long lease_ms, int replicas, int fencing)
{
    rl_options o;

    it_options(&o, url, lease_ms, 1000);
    o.wait_replicas = replicas;
    o.fencing = fencing;
    o.log = keep_log;
    return it_client_opts(&o);
}

static int exists_on_node(int i, const char *name)
{
    char key[128];
    redisContext *ctx = rt_sentinel_connect_node(dep, i);
    int yes;
    size_t len = it_key(key, sizeof key, "rl:", name, strlen(name), "");

    if (!ctx)
        return -1;
    yes = rt_redis_exists(ctx, key, len);
    redisFree(ctx);
    return yes;
}

static void test_finds_the_primary(void **state)
{
    char url[600];
    rl_options o;
    rl_client *c = client_s(rt_sentinel_url(dep), 30000, 0, 0), *bad = NULL;
    rl_lock *l = it_lock(c, "s-find");
    int p = rt_sentinel_primary(dep);

    (void)state;
    assert_true(p >= 0);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(exists_on_node(p, "s-find"), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(exists_on_node(p, "s-find"), 0);
    assert_true(logged("primary of 'mym' is"));
    rl_lock_free(l);
    rl_client_free(c);

    /* A dead sentinel first: the next one answers. */
    snprintf(url, sizeof url, "sentinel://127.0.0.1:1,%s", rt_sentinel_url(dep) + 11);
    c = client_s(url, 30000, 0, 0);
    rl_client_free(c);

    /* A name the sentinels do not know; no sentinel at all. */
    it_options(&o, NULL, 0, 0);
    snprintf(url, sizeof url, "sentinel://127.0.0.1:%d/nosuch", dep->sentinel[0].port);
    o.url = url;
    IT_RC(rl_client_new(&bad, &o), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "knows no master named 'nosuch'"));
    o.url = "sentinel://127.0.0.1:1,127.0.0.1:2/mym";
    IT_RC(rl_client_new(&bad, &o), RL_ECONN);
    assert_null(bad);
}

/* With wait_replicas 1 the hold is on a replica before RL_OK, and Sentinel
 * promotes the replica that has the most of the primary's writes, so the
 * new primary has it: the hold is kept across the failover (no flag,
 * release RL_OK), and a waiter that waited through it takes the name on
 * the new primary. (With 2, the new primary, left with one replica, could
 * never acknowledge a renewal: the hold would be flagged, as it must.)
 * Another client, with no hold, finds the new primary for a new name.
 * Fencing tokens go on rising across the failover: the counter was on the
 * replica before the acquisition returned. */
static void test_follows_a_failover(void **state)
{
    /* a fenced (the tokens' guarantee needs the replicas' WAIT), b not. */
    rl_client *a = client_s(rt_sentinel_url(dep), 10000, 1, 1);
    rl_client *b = client_s(rt_sentinel_url(dep), 10000, 1, 0);
    rl_lock *la = it_lock(a, "s-fail"), *lb = it_lock(b, "s-fail"), *ln = it_lock(b, "s-new");
    int old = rt_sentinel_primary(dep), now;
    unsigned long long t1 = 0, t2 = 0;
    int64_t killed, until;
    it_acq w;

    (void)state;
    assert_true(old >= 0);
    IT_RC(rl_lock_acquire(la), RL_OK);
    IT_RC(rl_lock_token(&t1, la), RL_OK);
    memset(&w, 0, sizeof w);
    w.lock = lb;
    w.wait_ms = 30000;
    w.lease_ms = RL_LEASE_WATCHDOG;
    it_acq_start(&w);
    IT_WAIT(atomic_load(&w.state) >= 1, 5000);

    killed = rt_now_ms();
    assert_int_equal(rt_sentinel_kill_primary(dep), 0);
    now = rt_sentinel_wait_failover(dep, old, 30000);
    assert_true(now >= 0 && now != old);
    fprintf(stderr, "it_sentinel: failover took %lld ms\n", (long long)(rt_now_ms() - killed));
    /* The client hears of it and renews on the new primary: two rounds
     * there (renewal every 3.3 s) without a flag. */
    IT_WAIT(logged("+switch-master mym"), 10000);
    IT_WAIT(logged("is now 127.0.0.1:"), 10000);
    until = rt_now_ms() + 7000;
    while (rt_now_ms() < until) {
        if (rl_lock_interrupted(la))
            fail_msg("the hold was flagged %lld ms after the kill; the log:\n%s",
                     (long long)(rt_now_ms() - killed), log_text);
        rt_sleep_ms(20);
    }
    IT_EQ(exists_on_node(now, "s-fail"), 1);
    IT_RC(rl_lock_try_acquire(ln, 5000, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(exists_on_node(now, "s-new"), 1);
    IT_RC(rl_lock_release(ln), RL_OK);

    IT_RC(rl_lock_release(la), RL_OK);
    assert_int_equal(it_acq_join(&w, 10000), 0);
    IT_RC(w.rc, RL_OK);
    IT_RC(w.release_rc, RL_OK);
    IT_EQ(exists_on_node(now, "s-fail"), 0);
    IT_RC(rl_lock_acquire(la), RL_OK);
    IT_RC(rl_lock_token(&t2, la), RL_OK);
    if (t2 <= t1)
        fail_msg("token %llu after the failover, %llu before", t2, t1);
    IT_RC(rl_lock_release(la), RL_OK);
    assert_int_equal(rl_interrupted(), 0);
    rl_lock_free(la);
    rl_lock_free(lb);
    rl_lock_free(ln);
    rl_client_free(a);
    rl_client_free(b);
    /* Leave the deployment whole for whatever runs next. */
    assert_int_equal(rt_sentinel_restart_node(dep, old, 30000), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_finds_the_primary),
        cmocka_unit_test(test_follows_a_failover),
    };

    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
