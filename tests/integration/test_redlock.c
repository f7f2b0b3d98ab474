/*
 * Redlock mode against real, independent redis-servers: a lock granted by
 * a majority, reentry with per-node counts, release on every node, the
 * watchdog's majority, a node down, stopped or restarted empty, a majority
 * lost, notices, force-release, queries, the URL's rules.
 *
 * Five servers are started once for the group; a test that uses three
 * names them in its URL. Every test leaves every server running and empty.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "it_common.h"
#include "proxy.h"

#define NODES 5

static rt_redis *node[NODES];
static redisContext *ctl[NODES];

static int group_setup(void **state)
{
    (void)state;
    return rt_redis_open_all("it_redlock", NODES, node, ctl);
}

static int group_teardown(void **state)
{
    (void)state;
    rt_redis_close_all(NODES, node, ctl);
    return 0;
}

/* Every node up, answering and empty: each test starts so. */
static int each_setup(void **state)
{
    (void)state;
    return rt_redis_reset_all(NODES, node, ctl);
}

/* "redlock://127.0.0.1:p0,...": the first n nodes. */
static void url_of(char *buf, size_t cap, int n)
{
    size_t at = (size_t)snprintf(buf, cap, "redlock://");
    int i;

    for (i = 0; i < n; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s127.0.0.1:%d", i ? "," : "",
                               node[i]->port);
}

static rl_client *client_n(int n, long lease_ms, long command_ms)
{
    char url[256];
    rl_options o;

    url_of(url, sizeof url, n);
    it_options(&o, url, lease_ms, command_ms);
    return it_client_opts(&o);
}

static char key_buf[256];

static const char *key_of(const char *name)
{
    it_key(key_buf, sizeof key_buf, "rl:", name, strlen(name), "");
    return key_buf;
}

static int exists_on(int i, const char *name)
{
    const char *k = key_of(name);

    return rt_redis_exists(ctl[i], k, strlen(k));
}

static long long pttl_on(int i, const char *name)
{
    const char *k = key_of(name);

    return rt_redis_pttl(ctl[i], k, strlen(k));
}

/* Our count on node i (0: none), as the node has it. */
static long long count_on(int i, const char *name)
{
    it_hash h;
    const char *k = key_of(name);

    if (it_hgetall(ctl[i], k, strlen(k), &h) != 0)
        return -100;
    return h.fields == 0 ? 0 : atoll(h.value);
}

/* A field seen in Redis: the round that placed it has read its reply once
 * the round in flight now has ended. */
static void round_ended(rl_client *c)
{
    unsigned long long r = it_stats(c).renewal_rounds;

    IT_WAIT(it_stats(c).renewal_rounds > r, 5000);
}

static void test_url_rules(void **state)
{
    char url[256];
    rl_options o;
    rl_client *c = NULL;

    (void)state;
    it_options(&o, NULL, 0, 0);
    o.url = url;
    snprintf(url, sizeof url, "redlock://127.0.0.1:%d,127.0.0.1:%d", node[0]->port,
             node[1]->port);
    IT_RC(rl_client_new(&c, &o), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "odd number"));
    snprintf(url, sizeof url, "redlock://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
             node[0]->port, node[1]->port, node[2]->port, node[3]->port);
    IT_RC(rl_client_new(&c, &o), RL_EINVAL);
    snprintf(url, sizeof url, "redlock://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
             node[0]->port, node[1]->port, node[0]->port);
    IT_RC(rl_client_new(&c, &o), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "twice"));
    /* Two of three unreachable: no majority, said at once. */
    snprintf(url, sizeof url, "redlock://127.0.0.1:%d,127.0.0.1:1,127.0.0.1:2",
             node[0]->port);
    IT_RC(rl_client_new(&c, &o), RL_ECONN);
    assert_non_null(strstr(rl_last_error(), "1 of 3"));
    /* One of three unreachable: a majority is enough. */
    snprintf(url, sizeof url, "redlock://127.0.0.1:%d,127.0.0.1:1,127.0.0.1:%d",
             node[0]->port, node[1]->port);
    IT_RC(rl_client_new(&c, &o), RL_OK);
    rl_client_free(c);
}

static void test_held_on_every_node_reentered_and_released(void **state)
{
    rl_client *c = client_n(3, 5000, 0);
    rl_lock *l = it_lock(c, "rl-every");
    long ttl = 0;
    int i;

    (void)state;
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    for (i = 0; i < 3; i++) {
        IT_EQ(count_on(i, "rl-every"), 1);
        IT_RANGE(pttl_on(i, "rl-every"), 4000, 5000);
    }
    IT_EQ(count_on(3, "rl-every"), 0);     /* not one of this client's nodes */
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rl_lock_hold_count(l), 2);
    for (i = 0; i < 3; i++)
        IT_EQ(count_on(i, "rl-every"), 2);
    IT_EQ(rl_lock_is_locked(l), 1);
    IT_RC(rl_lock_ttl(&ttl, l), RL_OK);
    IT_RANGE(ttl, 4000, 5000);
    IT_RC(rl_lock_release(l), RL_OK);
    for (i = 0; i < 3; i++)
        IT_EQ(count_on(i, "rl-every"), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    for (i = 0; i < 3; i++)
        IT_EQ(exists_on(i, "rl-every"), 0);
    IT_EQ(rl_lock_is_locked(l), 0);
    IT_RC(rl_lock_ttl(&ttl, l), RL_OK);
    IT_EQ(ttl, -2);
    IT_RC(rl_lock_release(l), RL_ENOTOWNER);
    assert_int_equal(rl_interrupted(), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

/* Another owner: busy at once, and a waiter woken by the release notice
 * long before the 30 s lease. */
static void test_busy_and_woken_by_notice(void **state)
{
    rl_client *a = client_n(5, 30000, 0), *b = client_n(5, 30000, 0);
    rl_lock *la = it_lock(a, "rl-wake"), *lb = it_lock(b, "rl-wake");
    it_acq w;
    int64_t released;

    (void)state;
    IT_RC(rl_lock_acquire(la), RL_OK);
    IT_RC(rl_lock_try_acquire(lb, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    memset(&w, 0, sizeof w);
    w.lock = lb;
    w.wait_ms = 20000;
    w.lease_ms = RL_LEASE_WATCHDOG;
    it_acq_start(&w);
    /* The waiter is subscribed on one of the nodes before the release. */
    IT_WAIT(rt_redis_numsub(ctl[0], "rl:{rl-wake}:release", 20) +
            rt_redis_numsub(ctl[1], "rl:{rl-wake}:release", 20) +
            rt_redis_numsub(ctl[2], "rl:{rl-wake}:release", 20) +
            rt_redis_numsub(ctl[3], "rl:{rl-wake}:release", 20) +
            rt_redis_numsub(ctl[4], "rl:{rl-wake}:release", 20) == 1, 5000);
    released = rt_now_us();
    IT_RC(rl_lock_release(la), RL_OK);
    assert_int_equal(it_acq_join(&w, 10000), 0);
    IT_RC(w.rc, RL_OK);
    IT_RANGE(w.t_return_us - released, 0, 2000000);
    IT_RC(w.release_rc, RL_OK);
    rl_lock_free(la);
    rl_lock_free(lb);
    rl_client_free(a);
    rl_client_free(b);
}

/* One node never granted the first hold (it was down). Back (empty), it
 * gets the hold from the watchdog's next round (the spread) at the hold's
 * count, which is ours there from then on: the reentry counts on from it
 * there as on the others, and the releases count it down there too. */
static void test_node_back_midway_gets_its_own_count(void **state)
{
    rl_client *c = client_n(3, 5000, 0);
    rl_lock *l = it_lock(c, "rl-midway");

    (void)state;
    assert_int_equal(rt_redis_kill(node[2]), 0);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(count_on(0, "rl-midway"), 1);
    IT_EQ(count_on(1, "rl-midway"), 1);
    assert_int_equal(rt_redis_restart(node[2]), 0);
    redisFree(ctl[2]);
    assert_non_null(ctl[2] = rt_redis_connect(node[2]));
    /* The spread: a renewal interval (lease / 3) after the node is back. */
    IT_WAIT(count_on(2, "rl-midway") == 1, 5000);
    round_ended(c);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rl_lock_hold_count(l), 2);
    IT_EQ(count_on(0, "rl-midway"), 2);
    IT_EQ(count_on(1, "rl-midway"), 2);
    IT_EQ(count_on(2, "rl-midway"), 2);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(count_on(0, "rl-midway"), 1);
    IT_EQ(count_on(1, "rl-midway"), 1);
    IT_EQ(count_on(2, "rl-midway"), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(exists_on(0, "rl-midway"), 0);
    IT_EQ(exists_on(1, "rl-midway"), 0);
    IT_EQ(exists_on(2, "rl-midway"), 0);
    assert_int_equal(rl_interrupted(), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

/* A minority of 5 down (killed, then stopped): holds are kept over several
 * leases without a flag, and new names are still taken. */
static void test_minority_down_or_stopped(void **state)
{
    rl_client *c = client_n(5, 900, 300);
    rl_lock *l = it_lock(c, "rl-minority"), *m;
    char name[32];
    int i, k;

    (void)state;
    IT_RC(rl_lock_acquire(l), RL_OK);
    assert_int_equal(rt_redis_kill(node[0]), 0);
    assert_int_equal(rt_redis_pause(node[1]), 0);
    for (k = 0; k < 4; k++) {
        int64_t until = rt_now_ms() + 900;
        /* New names all along: each is taken on the three live nodes. */
        while (rt_now_ms() < until) {
            snprintf(name, sizeof name, "rl-minority-%d", k);
            m = it_lock(c, name);
            IT_RC(rl_lock_try_acquire(m, 0, RL_LEASE_WATCHDOG), RL_OK);
            IT_RC(rl_lock_release(m), RL_OK);
            rl_lock_free(m);
            rt_sleep_ms(50);
        }
        assert_int_equal(rl_lock_interrupted(l), 0);
    }
    for (i = 2; i < 5; i++)
        IT_EQ(count_on(i, "rl-minority"), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    rt_redis_resume(node[1]);
    rl_lock_free(l);
    rl_client_free(c);
}

/* A majority stopped: the flag rises before the lease could have run out
 * on the stopped nodes (each renewal that could have been confirmed went
 * out before the stop), and new acquisitions fail with RL_ECONN. */
static void test_majority_stopped_flags_in_time(void **state)
{
    rl_client *c = client_n(3, 1000, 300);
    rl_lock *l = it_lock(c, "rl-majority"), *m = it_lock(c, "rl-majority-2");
    int64_t stopped, flagged;

    (void)state;
    IT_RC(rl_lock_acquire(l), RL_OK);
    rt_sleep_ms(500);   /* let a renewal or two happen first */
    assert_int_equal(rl_lock_interrupted(l), 0);
    stopped = rt_now_ms();
    assert_int_equal(rt_redis_pause(node[0]), 0);
    assert_int_equal(rt_redis_pause(node[1]), 0);
    IT_WAIT(rl_lock_interrupted(l) == 1, 3000);
    flagged = rt_now_ms();
    /* No renewal sent after the stop can have been confirmed by them. */
    IT_RANGE(flagged - stopped, 0, 1000);
    IT_RC(rl_lock_try_acquire(m, 0, RL_LEASE_WATCHDOG), RL_ECONN);
    assert_non_null(strstr(rl_last_error(), "of 3 Redlock masters"));
    IT_RC(rl_lock_release(l), RL_ELOST);
    rt_redis_resume(node[0]);
    rt_redis_resume(node[1]);
    rl_lock_free(l);
    rl_lock_free(m);
    rl_client_free(c);
}

/* A node restarted empty while a hold lives: the other two keep the
 * majority, and the watchdog's renewal places the hold there again (the
 * spread: a majority vouches for it and the name is free there). */
static void test_node_restarted_empty(void **state)
{
    rl_client *c = client_n(3, 900, 300);
    rl_lock *l = it_lock(c, "rl-empty");
    int64_t until;

    (void)state;
    IT_RC(rl_lock_acquire(l), RL_OK);
    assert_int_equal(rt_redis_restart(node[0]), 0);
    redisFree(ctl[0]);
    assert_non_null(ctl[0] = rt_redis_connect(node[0]));
    until = rt_now_ms() + 2000;
    while (rt_now_ms() < until) {
        assert_int_equal(rl_lock_interrupted(l), 0);
        rt_sleep_ms(20);
    }
    IT_EQ(count_on(0, "rl-empty"), 1);
    IT_EQ(count_on(1, "rl-empty"), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(exists_on(0, "rl-empty"), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

static int on_every_node(const char *name)
{
    int i;

    for (i = 0; i < NODES; i++)
        if (count_on(i, name) < 1)
            return 0;
    return 1;
}

/*
 * A hold granted by exactly a majority (two of five masters down during
 * the acquisition, back empty after it) is placed on them by its renewal
 * (the spread), so that afterwards any minority may fail: two of the three
 * that granted it are killed, the hold is never flagged, and its release
 * is confirmed by the other three. The old renewal renewed only where the
 * field was: the hold stayed on the bare majority and the second kill took
 * it below quorum (flagged, release RL_ELOST).
 */
static void test_bare_majority_spreads(void **state)
{
    rl_client *c = client_n(5, 1200, 300);
    rl_lock *l = it_lock(c, "rl-spread");
    int64_t until;
    int i;

    (void)state;
    assert_int_equal(rt_redis_kill(node[3]), 0);
    assert_int_equal(rt_redis_kill(node[4]), 0);
    IT_RC(rl_lock_acquire(l), RL_OK);
    for (i = 0; i < 3; i++)
        IT_EQ(count_on(i, "rl-spread"), 1);
    for (i = 3; i < 5; i++) {
        assert_int_equal(rt_redis_restart(node[i]), 0);
        redisFree(ctl[i]);
        assert_non_null(ctl[i] = rt_redis_connect(node[i]));
    }
    /* A renewal has run on the masters back (their down mark lasts 2 s at
     * most; the renewal interval is lease/3): not asserted here, so that
     * the old code fails on what a user sees, below. */
    RT_WAIT_UNTIL(on_every_node("rl-spread"), 6000);
    assert_int_equal(rl_lock_interrupted(l), 0);
    assert_int_equal(rt_redis_kill(node[0]), 0);
    assert_int_equal(rt_redis_kill(node[1]), 0);
    /* Three leases with two of the five masters gone. */
    until = rt_now_ms() + 3 * 1200;
    while (rt_now_ms() < until) {
        assert_int_equal(rl_lock_interrupted(l), 0);
        rt_sleep_ms(20);
    }
    IT_RC(rl_lock_release(l), RL_OK);
    for (i = 2; i < 5; i++)
        IT_EQ(exists_on(i, "rl-spread"), 0);
    assert_int_equal(rl_interrupted(), 0);
    rl_lock_free(l);
    rl_client_free(c);
    for (i = 0; i < 2; i++) {
        assert_int_equal(rt_redis_restart(node[i]), 0);
        redisFree(ctl[i]);
        assert_non_null(ctl[i] = rt_redis_connect(node[i]));
    }
}

/*
 * A reentered hold spread to the masters that missed it keeps its place
 * there across a non-last release: granted by 3 of 5 (two down), entered
 * twice, the two back empty get it from the spread at the hold's count
 * (2), and once one of the three that granted it is stopped, the non-last
 * release still reaches a majority (two granted, two placed) and the last
 * one too. Placed fields left out of the non-last release (or placed at
 * count 1, so that release deletes them) leave it on two: RL_ELOST.
 */
static void test_spread_survives_nonlast_release(void **state)
{
    rl_client *c = client_n(5, 1200, 300);
    rl_lock *l = it_lock(c, "rl-spread2");
    int i;

    (void)state;
    assert_int_equal(rt_redis_kill(node[3]), 0);
    assert_int_equal(rt_redis_kill(node[4]), 0);
    IT_RC(rl_lock_acquire(l), RL_OK);
    IT_RC(rl_lock_acquire(l), RL_OK);
    for (i = 0; i < 3; i++)
        IT_EQ(count_on(i, "rl-spread2"), 2);
    for (i = 3; i < 5; i++) {
        assert_int_equal(rt_redis_restart(node[i]), 0);
        redisFree(ctl[i]);
        assert_non_null(ctl[i] = rt_redis_connect(node[i]));
    }
    /* The spread: a renewal interval after the masters are back. */
    IT_WAIT(on_every_node("rl-spread2"), 6000);
    round_ended(c);
    for (i = 3; i < 5; i++)
        IT_EQ(count_on(i, "rl-spread2"), 2);
    assert_int_equal(rt_redis_pause(node[0]), 0);
    IT_RC(rl_lock_release(l), RL_OK);
    for (i = 1; i < 5; i++)
        IT_EQ(count_on(i, "rl-spread2"), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    for (i = 1; i < 5; i++)
        IT_EQ(exists_on(i, "rl-spread2"), 0);
    assert_int_equal(rl_lock_interrupted(l), 0);
    assert_int_equal(rt_redis_resume(node[0]), 0);
    /* Node 0 missed the last release: a leftover's drop takes it there. */
    IT_WAIT(exists_on(0, "rl-spread2") == 0, 5000);
    assert_int_equal(rl_interrupted(), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

/* A fixed lease is never renewed; its flag rises at its end. */
static void test_fixed_lease(void **state)
{
    rl_client *c = client_n(3, 30000, 0);
    rl_lock *l = it_lock(c, "rl-fixed");

    (void)state;
    IT_RC(rl_lock_try_acquire(l, 0, 300), RL_OK);
    IT_RANGE(pttl_on(1, "rl-fixed"), 1, 300);
    IT_WAIT(rl_lock_interrupted(l) == 1, 2000);
    IT_RC(rl_lock_release(l), RL_ELOST);
    rl_lock_free(l);
    rl_client_free(c);
}

/* Scripts flushed on every node behind a connected client's back (no
 * connection lost, so no reload at connect): NOSCRIPT is answered by
 * loading them again on each node, and every node takes part. */
static void test_scripts_flushed_everywhere(void **state)
{
    rl_client *c = client_n(5, 30000, 0);
    rl_lock *l = it_lock(c, "rl-flushed");
    int i;

    (void)state;
    IT_RC(rl_lock_try_acquire(l, 0, 5000), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    for (i = 0; i < NODES; i++) {
        redisReply *r = redisCommand(ctl[i], "SCRIPT FLUSH");
        assert_non_null(r);
        freeReplyObject(r);
    }
    IT_RC(rl_lock_try_acquire(l, 0, 5000), RL_OK);
    for (i = 0; i < NODES; i++)
        IT_EQ(count_on(i, "rl-flushed"), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);
}

/* Force-release: the name goes from every node, the holder is flagged. */
static void test_force_release(void **state)
{
    rl_client *a = client_n(3, 30000, 0), *b = client_n(3, 30000, 0);
    rl_lock *la = it_lock(a, "rl-force"), *lb = it_lock(b, "rl-force");
    int i;

    (void)state;
    IT_RC(rl_lock_acquire(la), RL_OK);
    IT_RC(rl_lock_force_release(lb), RL_OK);
    for (i = 0; i < 3; i++)
        IT_EQ(exists_on(i, "rl-force"), 0);
    IT_WAIT(rl_lock_interrupted(la) == 1, 35000);
    IT_RC(rl_lock_try_acquire(lb, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(la), RL_ELOST);
    IT_RC(rl_lock_release(lb), RL_OK);
    rl_lock_free(la);
    rl_lock_free(lb);
    rl_client_free(a);
    rl_client_free(b);
}

/* Another owner holds the name on two of five nodes only (a stale field,
 * say): still three are free, so it is taken; held on three, it is not. */
static void test_majority_decides(void **state)
{
    rl_client *c = client_n(5, 30000, 0);
    rl_lock *l = it_lock(c, "rl-decide");
    redisReply *r;
    int i;

    (void)state;
    for (i = 0; i < 2; i++) {
        r = redisCommand(ctl[i], "HSET %s other:1 1", key_of("rl-decide"));
        freeReplyObject(r);
        r = redisCommand(ctl[i], "PEXPIRE %s 60000", key_of("rl-decide"));
        freeReplyObject(r);
    }
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    for (i = 2; i < 5; i++)
        IT_EQ(count_on(i, "rl-decide"), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    /* The other owner's fields are untouched by our release. */
    for (i = 0; i < 2; i++)
        IT_EQ(count_on(i, "rl-decide"), 1);
    r = redisCommand(ctl[2], "HSET %s other:1 1", key_of("rl-decide"));
    freeReplyObject(r);
    r = redisCommand(ctl[2], "PEXPIRE %s 250", key_of("rl-decide"));
    freeReplyObject(r);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    /* Nothing of ours was left behind by the failed try. */
    for (i = 3; i < 5; i++)
        IT_EQ(exists_on(i, "rl-decide"), 0);
    /* Busy until the shortest lease that frees a majority: 250 ms. */
    IT_RC(rl_lock_try_acquire(l, 3000, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);
}

/* Contention: four clients (owners), two threads each, one name; never two
 * holders at once, and everyone gets through. */
typedef struct worker {
    rl_lock *lock;
    atomic_int *inside, *overlap, *total;
    int rounds, failed;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    int i;

    for (i = 0; i < w->rounds; i++) {
        if (rl_lock_try_acquire(w->lock, 20000, RL_LEASE_WATCHDOG) != RL_OK) {
            w->failed++;
            continue;
        }
        if (atomic_fetch_add(w->inside, 1) != 0)
            atomic_store(w->overlap, 1);
        atomic_fetch_add(w->total, 1);
        atomic_fetch_sub(w->inside, 1);
        if (rl_lock_release(w->lock) != RL_OK)
            w->failed++;
    }
    return NULL;
}

static void test_contention_no_overlap(void **state)
{
    rl_client *c[4];
    rl_lock *l[4];
    worker w[8];
    pthread_t th[8];
    atomic_int inside = 0, overlap = 0, total = 0;
    int i;

    (void)state;
    for (i = 0; i < 4; i++) {
        c[i] = client_n(5, 30000, 0);
        l[i] = it_lock(c[i], "rl-contend");
    }
    for (i = 0; i < 8; i++) {
        w[i].lock = l[i / 2];
        w[i].inside = &inside;
        w[i].overlap = &overlap;
        w[i].total = &total;
        w[i].rounds = 25;
        w[i].failed = 0;
        assert_int_equal(pthread_create(&th[i], NULL, work, &w[i]), 0);
    }
    for (i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        IT_EQ(w[i].failed, 0);
    }
    IT_EQ(atomic_load(&overlap), 0);
    IT_EQ(atomic_load(&total), 200);
    for (i = 0; i < 4; i++) {
        rl_lock_free(l[i]);
        rl_client_free(c[i]);
    }
}

/* Three nodes, the third behind a proxy that loses replies or stalls. */
static rl_client *client_proxied(rt_proxy **p, long lease_ms)
{
    char url[256];
    rl_options o;

    assert_non_null(*p = rt_proxy_start(node[2]->port));
    snprintf(url, sizeof url, "redlock://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
             node[0]->port, node[1]->port, rt_proxy_port(*p));
    it_options(&o, url, lease_ms, 0);
    return it_client_opts(&o);
}

/* A node's reply to the acquisition is lost after it applied it: the lock
 * is held on the majority that answered, reentry starts that node afresh,
 * and the last release drops our field there too. */
static void test_lost_acquire_reply_on_one_node(void **state)
{
    rt_proxy *p;
    rl_client *c = client_proxied(&p, 30000);
    rl_lock *l = it_lock(c, "rl-lost-acq");

    (void)state;
    rt_proxy_drop_next_reply_matching(p, "EVALSHA");
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    /* Held once a majority granted it: the proxied node's reply may come
     * (and be dropped) after that, on a loaded machine, or after the
     * stragglers' grace (2 x the decision, 10 ms at least), when the
     * client has cut that connection already (seen once under TSan with
     * the machine loaded): either way the reply is lost and the change
     * applied there. */
    IT_WAIT(count_on(2, "rl-lost-acq") == 1, 5000);     /* applied there all the same */
    if (rt_proxy_dropped(p) != 1)
        print_message("the proxied node answered after the grace: its connection was cut "
                      "instead of its reply dropped\n");
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(count_on(0, "rl-lost-acq"), 2);
    IT_EQ(count_on(2, "rl-lost-acq"), 1);       /* afresh, not counted twice */
    IT_RC(rl_lock_release(l), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(exists_on(0, "rl-lost-acq"), 0);
    IT_EQ(exists_on(1, "rl-lost-acq"), 0);
    IT_EQ(exists_on(2, "rl-lost-acq"), 0);
    assert_int_equal(rl_interrupted(), 0);
    rl_lock_free(l);
    rl_client_free(c);
    rt_proxy_stop(p);
}

/* A node's reply to the last release is lost: the majority confirmed it,
 * so it is RL_OK, and the name is free everywhere. */
static void test_lost_release_reply_on_one_node(void **state)
{
    rt_proxy *p;
    rl_client *c = client_proxied(&p, 30000), *other = client_n(3, 30000, 0);
    rl_lock *l = it_lock(c, "rl-lost-rel"), *lo = it_lock(other, "rl-lost-rel");

    (void)state;
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    /* A query asks every node on a pooled connection, made if need be: the
     * release then finds one to the proxied node (an acquisition whose
     * reply came after the grace, on a loaded machine, leaves none). */
    IT_EQ(rl_lock_is_locked(l), 1);
    rt_proxy_drop_next_reply_matching(p, "EVALSHA");
    IT_RC(rl_lock_release(l), RL_OK);
    /* The release returns once a majority answered: the proxied node's
     * reply may come (and be dropped) after that, on a loaded machine. */
    IT_WAIT(rt_proxy_dropped(p) == 1, 5000);
    IT_EQ(exists_on(2, "rl-lost-rel"), 0);
    IT_RC(rl_lock_try_acquire(lo, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(lo), RL_OK);
    rl_lock_free(l);
    rl_lock_free(lo);
    rl_client_free(c);
    rl_client_free(other);
    rt_proxy_stop(p);
}

/* A stalled node delays nobody: once the majority has answered, the
 * straggler gets a short grace, not the node timeout (2 s here). Its
 * connection is fenced before the next change there. */
static void test_stalled_node_delays_nobody(void **state)
{
    rt_proxy *p;
    rl_client *c = client_proxied(&p, 30000);
    rl_lock *l = it_lock(c, "rl-stall");
    int64_t t0, took, deadline;
    int back;

    (void)state;
    assert_int_equal(rt_proxy_stall(p, 1), 0);
    t0 = rt_now_us();
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    took = rt_now_us() - t0;
    IT_RANGE(took, 0, 500000);
    IT_RC(rl_lock_release(l), RL_OK);
    assert_int_equal(rt_proxy_stall(p, 0), 0);
    /* Whatever the stalled node applied late is dropped (fenced first). */
    IT_WAIT(exists_on(2, "rl-stall") == 0, 10000);
    /* The node takes part again once its 2 s "down" mark has passed. */
    deadline = rt_now_ms() + 5000;
    for (;;) {
        IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
        back = count_on(2, "rl-stall") == 1;
        IT_RC(rl_lock_release(l), RL_OK);
        if (back || rt_now_ms() > deadline)
            break;
        rt_sleep_ms(50);
    }
    assert_true(back);
    /* Released on a majority at once; on the third as soon as it answers
     * (a reply later than the grace leaves the drop to the watchdog). */
    IT_WAIT(exists_on(2, "rl-stall") == 0, 5000);
    rl_lock_free(l);
    rl_client_free(c);
    rt_proxy_stop(p);
}

/* A shutdown drops our fields from every node. */
static void test_shutdown_releases_everywhere(void **state)
{
    rl_client *c = client_n(3, 30000, 0);
    rl_lock *l = it_lock(c, "rl-shut");
    int i;

    (void)state;
    IT_RC(rl_lock_acquire(l), RL_OK);
    IT_RC(rl_client_shutdown(c), RL_OK);
    for (i = 0; i < 3; i++)
        IT_EQ(exists_on(i, "rl-shut"), 0);
    assert_int_equal(rl_interrupted(), 1);
    rl_lock_free(l);
    rl_client_free(c);
}

/* ---- the spread: a placement whose reply was lost ---------------------- */

/* Three nodes, the second and third behind proxies (p[0] for node 1,
 * p[1] for node 2). */
static rl_client *client_two_proxied(rt_proxy **p, long lease_ms, long command_ms)
{
    char url[256];
    rl_options o;

    assert_non_null(p[0] = rt_proxy_start(node[1]->port));
    assert_non_null(p[1] = rt_proxy_start(node[2]->port));
    snprintf(url, sizeof url, "redlock://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
             node[0]->port, rt_proxy_port(p[0]), rt_proxy_port(p[1]));
    it_options(&o, url, lease_ms, command_ms);
    return it_client_opts(&o);
}

static void del_on(int i, const char *name)
{
    const char *k = key_of(name);

    assert_true(rt_redis_del(ctl[i], k, strlen(k)) >= 0);
}

/*
 * A placement whose reply is lost is sent again, once its connection is
 * fenced: the placement on node 2 lands but its reply is lost (the proxy
 * drops it, the round gives that connection up); the next round there
 * kills it ahead of its calls (CLIENT KILL), and then node 2 may be placed
 * again. Later node 2 loses the field again (an operator's DEL there, or
 * the master restarted empty): the next rounds place it there anew, so
 * the hold survives the loss of node 0 (src/README.md: "a master
 * restarted empty gets the holds back at the next round"). On the old
 * code (nh->spreading cleared only by a reply read) four renewals reach
 * node 2 after the DEL and none places the field: exists_on(2) is 0.
 */
static void test_lost_placement_reply_placed_again(void **state)
{
    rt_proxy *p[2];
    rl_client *c = client_two_proxied(p, 1200, 300);
    rl_lock *l = it_lock(c, "rl-rv-once");
    long long calls;

    (void)state;
    IT_RC(rl_lock_acquire(l), RL_OK);
    IT_EQ(count_on(2, "rl-rv-once"), 1);
    /* The placement's value is "<count> <since>": the one chunk with a
     * space in an argument. */
    rt_proxy_drop_next_reply_matching(p[1], "\r\n1 ");
    del_on(2, "rl-rv-once");
    IT_WAIT(rt_proxy_dropped(p[1]) == 1, 5000);
    IT_WAIT(exists_on(2, "rl-rv-once") == 1, 5000);        /* applied */
    round_ended(c);
    round_ended(c);
    assert_int_equal(rl_lock_interrupted(l), 0);
    /* Node 2 loses it again (a minority): the next rounds place it (they
     * reach node 2: its renewals are counted there). */
    calls = rt_redis_cmdstat_calls(ctl[2], "evalsha");
    del_on(2, "rl-rv-once");
    IT_WAIT(rt_redis_cmdstat_calls(ctl[2], "evalsha") >= calls + 4, 6 * 1200);
    IT_EQ(exists_on(2, "rl-rv-once"), 1);
    assert_int_equal(rt_redis_kill(node[0]), 0);
    {
        int64_t until = rt_now_ms() + 3 * 1200;
        while (rt_now_ms() < until) {
            assert_int_equal(rl_lock_interrupted(l), 0);
            rt_sleep_ms(20);
        }
    }
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);
    rt_proxy_stop(p[0]);
    rt_proxy_stop(p[1]);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_url_rules, each_setup),
        cmocka_unit_test_setup(test_held_on_every_node_reentered_and_released, each_setup),
        cmocka_unit_test_setup(test_busy_and_woken_by_notice, each_setup),
        cmocka_unit_test_setup(test_node_back_midway_gets_its_own_count, each_setup),
        cmocka_unit_test_setup(test_minority_down_or_stopped, each_setup),
        cmocka_unit_test_setup(test_majority_stopped_flags_in_time, each_setup),
        cmocka_unit_test_setup(test_node_restarted_empty, each_setup),
        cmocka_unit_test_setup(test_bare_majority_spreads, each_setup),
        cmocka_unit_test_setup(test_spread_survives_nonlast_release, each_setup),
        cmocka_unit_test_setup(test_fixed_lease, each_setup),
        cmocka_unit_test_setup(test_scripts_flushed_everywhere, each_setup),
        cmocka_unit_test_setup(test_force_release, each_setup),
        cmocka_unit_test_setup(test_majority_decides, each_setup),
        cmocka_unit_test_setup(test_contention_no_overlap, each_setup),
        cmocka_unit_test_setup(test_shutdown_releases_everywhere, each_setup),
        cmocka_unit_test_setup(test_lost_acquire_reply_on_one_node, each_setup),
        cmocka_unit_test_setup(test_lost_release_reply_on_one_node, each_setup),
        cmocka_unit_test_setup(test_stalled_node_delays_nobody, each_setup),
        cmocka_unit_test_setup(test_lost_placement_reply_placed_again, each_setup),
    };

    signal(SIGPIPE, SIG_IGN);
    if (argc == 2)
        cmocka_set_test_filter(argv[1]); /* tests by name: scripts/rates.sh */
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
