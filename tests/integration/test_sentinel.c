/*
 * Sentinel mode against a real deployment (tests/common/rt_sentinel.h): a
 * primary, two replicas and three sentinels from Debian's redis-sentinel.
 * The client finds the primary through the sentinels, and follows a
 * failover by itself: with wait_replicas, a hold taken before the primary
 * is SIGKILLed is kept on the promoted replica, and a waiter gets the name
 * on the new primary when it is released; a semaphore's permits held
 * through the failover likewise, never more than its count.
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

/* Holds of rl:{name} on node i whose deadline ("~d:", a semaphore's) is
 * more than ms ahead of that node's clock; -1 on error. */
static int holds_ahead(int i, const char *name, long long ms)
{
    redisContext *ctx = rt_sentinel_connect_node(dep, i);
    redisReply *t = ctx ? redisCommand(ctx, "TIME") : NULL;
    redisReply *r = ctx ? redisCommand(ctx, "HGETALL rl:{%s}", name) : NULL;
    long long now;
    size_t k;
    int n = -1;

    if (t && t->type == REDIS_REPLY_ARRAY && r && r->type == REDIS_REPLY_ARRAY) {
        now = atoll(t->element[0]->str) * 1000 + atoll(t->element[1]->str) / 1000;
        for (k = 0, n = 0; k + 1 < r->elements; k += 2)
            n += strncmp(r->element[k]->str, "~d:", 3) == 0 &&
                 atoll(r->element[k + 1]->str) - now > ms;
    }
    freeReplyObject(t);
    freeReplyObject(r);
    if (ctx)
        redisFree(ctx);
    return n;
}

/* A semaphore of 2 permits across the failover of test_follows_a_failover
 * (issue 26): two threads of one client hold both, a thread of another
 * client waits for one, all with wait_replicas 1. */
typedef struct sem_side {
    rl_client *c, *d;
    rl_lock *l, *ld;
    it_acq held[2], waiter;
} sem_side;

static void sem_side_begin(sem_side *s)
{
    int i;

    s->c = client_s(rt_sentinel_url(dep), 10000, 1, 0);
    s->d = client_s(rt_sentinel_url(dep), 10000, 1, 0);
    IT_RC(rl_semaphore_new(&s->l, s->c, "s-sem", 5, 2), RL_OK);
    IT_RC(rl_semaphore_new(&s->ld, s->d, "s-sem", 5, 2), RL_OK);
    for (i = 0; i < 2; i++) {
        it_acq_begin(&s->held[i], s->l, 5000, 1);
        IT_WAIT(atomic_load(&s->held[i].state) >= 2, 5000);
        IT_RC(s->held[i].rc, RL_OK);
    }
    it_acq_begin(&s->waiter, s->ld, 30000, 0);
    IT_WAIT(atomic_load(&s->waiter.state) == 1 && it_stats(s->d).waiters == 1, 5000);
}

/* After the failover to node `now`: both holds are there, their deadlines
 * renewed on it (without renewal there they would be at most 1 s ahead:
 * the lease is 10 s, the failover and the window 9 s or more); the waiter
 * is still out (never more than 2); a release lets it in; every release is
 * RL_OK (a flagged hold's would be RL_ELOST) and the last takes the key. */
static void sem_side_end(sem_side *s, int now)
{
    int i;

    IT_EQ(holds_ahead(now, "s-sem", 2500), 2);
    IT_EQ(atomic_load(&s->waiter.state), 1);
    it_acq_let_go(&s->held[0]);
    assert_int_equal(it_acq_join(&s->waiter, 10000), 0);
    IT_RC(s->waiter.rc, RL_OK);
    IT_RC(s->waiter.release_rc, RL_OK);
    it_acq_let_go(&s->held[1]);
    for (i = 0; i < 2; i++) {
        assert_int_equal(it_acq_join(&s->held[i], 10000), 0);
        IT_RC(s->held[i].release_rc, RL_OK);
    }
    IT_EQ(exists_on_node(now, "s-sem"), 0);
    rl_lock_free(s->l);
    rl_lock_free(s->ld);
    rl_client_free(s->c);
    rl_client_free(s->d);
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
 * replica before the acquisition returned. A semaphore's permits held
 * through it are kept likewise (sem_side_end). */
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
    sem_side sem;

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
    sem_side_begin(&sem);

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
    sem_side_end(&sem, now);
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
