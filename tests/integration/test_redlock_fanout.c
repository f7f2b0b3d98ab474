/*
 * Redlock, where a late reply must not count for now, nor one stopped node
 * for the others (issue 21, items 2 and 5): a renewal reply read after a
 * change of the hold was learned on that node neither confirms nor takes
 * away anything there; a stopped node costs one node timeout, not the
 * other nodes' replies, in a release, a one-shot acquisition (also in a
 * fork child), a query and the client's creation.
 *
 * Five servers are started once for the group (a test that uses three
 * names the first three); every test leaves them running, answering and
 * empty. Proxies stand for the network between the client under test and
 * a node: a client-side partition, or a reply held on its way for as long
 * as the test needs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "it_common.h"
#include "proxy.h"

#define NODES 5

/* fork() tests cannot run under ThreadSanitizer (see test_fork.c). */
#if defined(__SANITIZE_THREAD__)
#define RF_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RF_UNDER_TSAN 1
#endif
#endif

static rt_redis *node[NODES];
static redisContext *ctl[NODES];

static int group_setup(void **state)
{
    (void)state;
    return rt_redis_open_all("it_redlock_fanout", NODES, node, ctl);
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

static char key_buf[256];

static const char *key_of(const char *name)
{
    it_key(key_buf, sizeof key_buf, "rl:", name, strlen(name), "");
    return key_buf;
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

/* "redlock://..." for the first n nodes, node i reached through p[i]
 * where given. */
static void url_of(char *url, size_t cap, int n, rt_proxy *const *p)
{
    size_t at = (size_t)snprintf(url, cap, "redlock://");
    int i;

    for (i = 0; i < n; i++)
        at += (size_t)snprintf(url + at, cap - at, "%s127.0.0.1:%d", i ? "," : "",
                               p && p[i] ? rt_proxy_port(p[i]) : node[i]->port);
}

/* A client on the first three nodes, node i reached through p[i] where given. */
static rl_client *client_via(rt_proxy *const *p, long lease_ms, long command_ms)
{
    char url[256];
    rl_options o;

    url_of(url, sizeof url, 3, p);
    it_options(&o, url, lease_ms, command_ms);
    return it_client_opts(&o);
}

/* A client on the first three nodes whose watchdog renews every 200 ms. */
static rl_client *client_quick_rounds(long lease_ms, long command_ms)
{
    char url[256];
    rl_options o;

    url_of(url, sizeof url, 3, NULL);
    it_options(&o, url, lease_ms, command_ms);
    o.renew_interval_ms = 200;
    return it_client_opts(&o);
}

static int exists_on(int i, const char *name)
{
    const char *k = key_of(name);

    return rt_redis_exists(ctl[i], k, strlen(k));
}

/* Another owner's field on node i: the spread cannot place our hold
 * there (renew.lua places only where the key does not exist), and a
 * renewal of ours finds our field gone there. */
static void block_spread(int i, const char *name)
{
    const char *k = key_of(name);
    redisReply *r = redisCommand(ctl[i], "HSET %b rf-other:1 %s", k, strlen(k), "1 0");

    assert_non_null(r);
    freeReplyObject(r);
    assert_non_null(r = redisCommand(ctl[i], "PEXPIRE %b 60000", k, strlen(k)));
    freeReplyObject(r);
}

static void unblock_spread(int i, const char *name)
{
    const char *k = key_of(name);

    assert_true(rt_redis_del(ctl[i], k, strlen(k)) >= 0);
}

/*
 * Item 2. Counts 1, 2, 2 (node 0 missed the first acquisition); the client
 * is cut off from node 1 long enough for its lease there to be half gone,
 * and a renewal's reply from node 0 is held on its way. The non-last
 * release deletes our field on node 0 (count 1 there) and is confirmed by
 * nodes 0 and 2; then the held reply comes, saying node 0 renewed the
 * field that the release has just deleted, and node 0 is cut off too.
 * Only node 2 still has the hold: the flag must rise by the time node 1's
 * lease runs out, when another client can take nodes 0 and 1.
 */
static void test_stale_renewal_reply_confirms_nothing(void **state)
{
    const char *name = "rf-stale";
    const long lease = 3000;
    rt_proxy *p[NODES] = { NULL, NULL, NULL };
    rl_client *c, *other;
    rl_lock *l, *lo;
    int64_t held_at, got_at, flag_at;
    int interrupted;

    (void)state;
    assert_non_null(p[0] = rt_proxy_start(node[0]->port));
    assert_non_null(p[1] = rt_proxy_start(node[1]->port));
    assert_int_equal(rt_proxy_refuse(p[0], 1), 0);
    c = client_via(p, lease, 2000);
    other = client_via(NULL, 30000, 0);
    l = it_lock(c, name);
    lo = it_lock(other, name);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(count_on(0, name), 0);
    /* Node 0 gets our field from the reentry, not from the spread (which
     * would place it at count 1, and the reentry take it to 2): another
     * owner's field there until a renewal's reply from node 0 is held
     * (no round reaches node 0 before it is read), then the reentry. */
    block_spread(0, name);
    assert_int_equal(rt_proxy_refuse(p[0], 0), 0);
    rt_proxy_hold_next_reply_matching(p[0], "EVALSHA");
    IT_WAIT(rt_proxy_held(p[0]) > 0, 2 * lease);
    unblock_spread(0, name);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    assert_int_equal(rt_proxy_unhold(p[0]), 0);
    IT_EQ(count_on(0, name), 1);
    IT_EQ(count_on(1, name), 2);
    IT_EQ(count_on(2, name), 2);

    /* Cut off from node 1; nodes 0 and 2 keep the hold meanwhile. */
    assert_int_equal(rt_proxy_refuse(p[1], 1), 0);
    assert_true(rt_proxy_cut_all(p[1]) >= 0);
    IT_WAIT(pttl_on(1, name) < lease / 2, 2 * lease);
    assert_int_equal(rl_lock_interrupted(l), 0);
    /* The next renewal sent to node 0 (the only EVALSHA while this thread
     * is idle): its reply is held. */
    rt_proxy_hold_next_reply_matching(p[0], "EVALSHA");
    IT_WAIT(rt_proxy_held(p[0]) > 0, 2 * lease);
    held_at = rt_now_ms();
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(count_on(0, name), 0);
    IT_EQ(rl_lock_hold_count(l), 1);
    assert_int_equal(rt_proxy_unhold(p[0]), 0);
    /* Let go well within the watchdog's wait for it (the command timeout,
     * 2 s): the reply is read, not given up on. */
    IT_RANGE(rt_now_ms() - held_at, 0, 1000);
    assert_int_equal(rt_proxy_stall(p[0], 1), 0);

    /* Nodes 0 and 1 come free for the other client when node 1's lease
     * runs out; by then the holder's flag must be up. */
    IT_WAIT(rl_lock_try_acquire(lo, 0, 10000) == RL_OK, 3 * lease);
    got_at = rt_now_ms();
    interrupted = rl_lock_interrupted(l);
    if (!interrupted) {
        RT_WAIT_UNTIL(rl_lock_interrupted(l) == 1, 2 * lease);
        flag_at = rt_now_ms();
        print_message("the other client held the name %lld ms while the holder's flag "
                      "was down (count %d)\n", (long long)(flag_at - got_at),
                      rl_lock_hold_count(l));
    }
    assert_int_equal(rt_proxy_stall(p[0], 0), 0);
    assert_int_equal(rt_proxy_refuse(p[1], 0), 0);
    IT_RC(rl_lock_release(lo), RL_OK);
    rl_lock_release(l);         /* lost: whatever it says */
    rl_lock_free(l);
    rl_lock_free(lo);
    rl_client_free(c);
    rl_client_free(other);
    rt_proxy_stop(p[0]);
    rt_proxy_stop(p[1]);
    assert_int_equal(interrupted, 1);
}

/*
 * Item 2, the other way round: a renewal that found our field gone on node
 * 0 (it missed the first acquisition), its reply held on its way while a
 * reentry creates the field there. Read after the reentry, it must not
 * take node 0's confirmation away: cut off from nodes 1 (long enough for
 * its lease there to run out) and 0, the hold is still vouched for by
 * nodes 0 and 2 (confirmed by the reentry) and must not be flagged when
 * node 1's lease runs out.
 */
static void test_stale_gone_reply_takes_nothing_away(void **state)
{
    const char *name = "rf-stale-gone";
    const long lease = 3000;
    rt_proxy *p[NODES] = { NULL, NULL, NULL };
    rl_client *c;
    rl_lock *l;
    int64_t held_at;
    int interrupted;

    (void)state;
    assert_non_null(p[0] = rt_proxy_start(node[0]->port));
    assert_non_null(p[1] = rt_proxy_start(node[1]->port));
    assert_int_equal(rt_proxy_refuse(p[0], 1), 0);
    c = client_via(p, lease, 2000);
    l = it_lock(c, name);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(count_on(0, name), 0);
    /* Another owner's field on node 0: the spread cannot place ours. */
    block_spread(0, name);
    assert_int_equal(rt_proxy_refuse(p[0], 0), 0);
    assert_int_equal(rt_proxy_refuse(p[1], 1), 0);
    assert_true(rt_proxy_cut_all(p[1]) >= 0);
    /* Node 1's lease there at most 2 s from running out; the next renewal
     * to node 0 (the only EVALSHA while this thread is idle) finds our
     * field gone, and its reply is held; then the other owner goes and
     * the reentry makes our field there. */
    IT_WAIT(pttl_on(1, name) < 2000, 2 * lease);
    rt_proxy_hold_next_reply_matching(p[0], "EVALSHA");
    IT_WAIT(rt_proxy_held(p[0]) > 0, 2 * lease);
    held_at = rt_now_ms();
    unblock_spread(0, name);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(count_on(0, name), 1);
    assert_int_equal(rt_proxy_unhold(p[0]), 0);
    assert_int_equal(rt_proxy_stall(p[0], 1), 0);
    IT_RANGE(rt_now_ms() - held_at, 0, 500);
    /* Node 1's lease runs out; nodes 0 and 2 still vouch (the reentry). */
    IT_WAIT(pttl_on(1, name) == -2, 2 * lease);
    interrupted = rl_lock_interrupted(l);
    assert_int_equal(rt_proxy_stall(p[0], 0), 0);
    assert_int_equal(rt_proxy_refuse(p[1], 0), 0);
    rl_lock_release(l);         /* whatever they say: only the keys matter now */
    rl_lock_release(l);
    rl_lock_free(l);
    rl_client_free(c);
    rt_proxy_stop(p[0]);
    rt_proxy_stop(p[1]);
    assert_int_equal(interrupted, 0);
}

/*
 * Item 5. The application's pool has no idle connection to any node (the
 * watchdog took them for its rounds) and node 1 is stopped: a release
 * applied on nodes 0 and 2 is done (not RL_ELOST, no flag), within one
 * node timeout (1 s here), not after node 1's handshake has eaten it and
 * node 0's reply was left unread.
 */
static void test_stopped_master_release_is_done(void **state)
{
    const char *name = "rf-release";
    rl_client *c = client_quick_rounds(30000, 1000);
    rl_lock *l = it_lock(c, name);
    int64_t t0, took;
    int rc;

    (void)state;
    IT_RC(rl_lock_acquire(l), RL_OK);
    IT_WAIT(it_stats(c).renewal_rounds >= 1, 5000);
    assert_int_equal(rt_redis_pause(node[1]), 0);
    t0 = rt_now_ms();
    rc = rl_lock_release(l);
    took = rt_now_ms() - t0;
    print_message("release with node 1 stopped: %d (%s) in %lld ms\n", rc, rl_strerror(rc),
                  (long long)took);
    assert_int_equal(rt_redis_resume(node[1]), 0);
    IT_RC(rc, RL_OK);
    assert_int_equal(rl_interrupted(), 0);
    IT_RANGE(took, 0, 999);
    IT_EQ(exists_on(0, name), 0);
    IT_EQ(exists_on(2, name), 0);
    /* Node 1's field is a leftover, dropped once the node answers again. */
    IT_WAIT(exists_on(1, name) == 0, 10000);
    rl_lock_free(l);
    rl_client_free(c);
}

/* Item 5, the same for a one-shot acquisition of a free name. */
static void test_stopped_master_one_shot_acquire(void **state)
{
    rl_client *c = client_quick_rounds(30000, 1000);
    rl_lock *keep = it_lock(c, "rf-keep"), *l = it_lock(c, "rf-free");
    int64_t t0, took;
    int rc;

    (void)state;
    IT_RC(rl_lock_acquire(keep), RL_OK);
    IT_WAIT(it_stats(c).renewal_rounds >= 1, 5000);
    assert_int_equal(rt_redis_pause(node[1]), 0);
    t0 = rt_now_ms();
    rc = rl_lock_try_acquire(l, 0, 10000);
    took = rt_now_ms() - t0;
    print_message("one-shot acquire with node 1 stopped: %d (%s) in %lld ms\n", rc,
                  rl_strerror(rc), (long long)took);
    if (rc == RL_OK)
        IT_RC(rl_lock_release(l), RL_OK);
    assert_int_equal(rt_redis_resume(node[1]), 0);
    IT_RC(rc, RL_OK);
    IT_RANGE(took, 0, 999);
    IT_RC(rl_lock_release(keep), RL_OK);
    assert_int_equal(rl_interrupted(), 0);
    IT_WAIT(exists_on(1, "rf-keep") == 0 && exists_on(1, "rf-free") == 0, 10000);
    rl_lock_free(keep);
    rl_lock_free(l);
    rl_client_free(c);
}

/* In a fork child every connection is reset: each node needs a new one. */
static int child_takes_and_gives_back(void *arg)
{
    rl_lock *l = arg;
    int64_t t0 = rt_now_ms();

    if (rl_lock_try_acquire(l, 0, 10000) != RL_OK)
        return 1;
    if (rt_now_ms() - t0 > 999)
        return 2;
    t0 = rt_now_ms();
    if (rl_lock_release(l) != RL_OK)
        return 3;
    if (rt_now_ms() - t0 > 999)
        return 4;
    return rl_interrupted() ? 5 : 0;
}

/* Item 5 in a fork child, node 1 stopped: its acquisition and release
 * each within one node timeout (1 s here). */
static void test_stopped_master_in_fork_child(void **state)
{
    const char *name = "rf-fork";
    rl_client *c = client_quick_rounds(30000, 1000);
    rl_lock *l = it_lock(c, name);
    pid_t pid;
    int code;

    (void)state;
#ifdef RF_UNDER_TSAN
    print_message("fork() tests are not supported by ThreadSanitizer: skipped\n");
    rl_lock_free(l);
    rl_client_free(c);
    skip();
#endif
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    assert_int_equal(rt_redis_pause(node[1]), 0);
    pid = rt_child_start(child_takes_and_gives_back, l, 30);
    code = pid < 0 ? -2 : rt_child_wait(pid, 20000);
    assert_int_equal(rt_redis_resume(node[1]), 0);
    IT_EQ(code, 0);
    IT_EQ(exists_on(0, name), 0);
    IT_EQ(exists_on(2, name), 0);
    IT_WAIT(exists_on(1, name) == 0, 10000);
    rl_lock_free(l);
    rl_client_free(c);
}

/* Client creation connects to every node: two stopped of five cost one
 * handshake timeout (1 s here), not two. */
static void test_creation_with_two_stopped(void **state)
{
    char url[256];
    rl_options o;
    rl_client *c = NULL;
    int64_t t0, took;
    int rc;

    (void)state;
    url_of(url, sizeof url, 5, NULL);
    it_options(&o, url, 30000, 1000);
    o.connect_timeout_ms = 1000;
    assert_int_equal(rt_redis_pause(node[3]), 0);
    assert_int_equal(rt_redis_pause(node[4]), 0);
    t0 = rt_now_ms();
    rc = rl_client_new(&c, &o);
    took = rt_now_ms() - t0;
    print_message("client made with 2 of 5 stopped: %d (%s) in %lld ms\n", rc, rl_strerror(rc),
                  (long long)took);
    rl_client_free(c);
    assert_int_equal(rt_redis_resume(node[3]), 0);
    assert_int_equal(rt_redis_resume(node[4]), 0);
    IT_RC(rc, RL_OK);
    IT_RANGE(took, 0, 1500);
}

/* A query (EXISTS, PTTL on every node) with two of five nodes stopped
 * asks them all at once: one command timeout (1 s here), not two. */
static void test_query_with_two_stopped(void **state)
{
    const char *name = "rf-query";
    char url[256];
    rl_options o;
    rl_client *c;
    rl_lock *l;
    long ttl = -100;
    int64_t t0, took_locked, took_ttl;
    int locked, ttl_rc;

    (void)state;
    url_of(url, sizeof url, 5, NULL);
    it_options(&o, url, 30000, 1000);
    o.connect_timeout_ms = 1000;
    c = it_client_opts(&o);
    l = it_lock(c, name);
    IT_RC(rl_lock_try_acquire(l, 0, 30000), RL_OK);
    assert_int_equal(rt_redis_pause(node[3]), 0);
    assert_int_equal(rt_redis_pause(node[4]), 0);
    t0 = rt_now_ms();
    locked = rl_lock_is_locked(l);
    took_locked = rt_now_ms() - t0;
    t0 = rt_now_ms();
    ttl_rc = rl_lock_ttl(&ttl, l);
    took_ttl = rt_now_ms() - t0;
    print_message("with 2 of 5 stopped: is_locked %d in %lld ms, ttl %d (%ld) in %lld ms\n",
                  locked, (long long)took_locked, ttl_rc, ttl, (long long)took_ttl);
    assert_int_equal(rt_redis_resume(node[3]), 0);
    assert_int_equal(rt_redis_resume(node[4]), 0);
    IT_EQ(locked, 1);
    IT_RC(ttl_rc, RL_OK);
    IT_RANGE(ttl, 1, 30000);
    IT_RANGE(took_locked, 0, 1500);
    IT_RANGE(took_ttl, 0, 1500);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_WAIT(exists_on(3, name) == 0 && exists_on(4, name) == 0, 10000);
    rl_lock_free(l);
    rl_client_free(c);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_stale_renewal_reply_confirms_nothing, each_setup),
        cmocka_unit_test_setup(test_stale_gone_reply_takes_nothing_away, each_setup),
        cmocka_unit_test_setup(test_stopped_master_release_is_done, each_setup),
        cmocka_unit_test_setup(test_stopped_master_one_shot_acquire, each_setup),
        cmocka_unit_test_setup(test_stopped_master_in_fork_child, each_setup),
        cmocka_unit_test_setup(test_creation_with_two_stopped, each_setup),
        cmocka_unit_test_setup(test_query_with_two_stopped, each_setup),
    };

    if (argc == 2)
        cmocka_set_test_filter(argv[1]); /* tests by name: scripts/rates.sh */
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
