/*
 * Behaviours 6 and 8, and outages: a reply lost after Redis applied the
 * script never makes Redis count differ from the local hold count; a Redis
 * restart flags the holder and a waiter reconnects and gets the lock;
 * one-shot tries fail with RL_ECONN while Redis is down, waits ride it out.
 */
#include "it_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy.h"

/* The count Redis holds for the (single) owner of the lock; 0 when absent. */
static long redis_count(it_env *e, it_proxied *p)
{
    it_hash h;
    if (it_hgetall(e->rc, p->key, p->kl, &h) != 0)
        fail_msg("HGETALL failed");
    if (h.fields == 0)
        return 0;
    if (h.fields != 1)
        fail_msg("%zu owners in one lock", h.fields);
    return strtol(h.value, NULL, 10);
}

/* Redis and the local hold count agree. */
#define ASSERT_CONSISTENT(e, p)                                                    \
    do {                                                                           \
        long it__r = redis_count((e), (p));                                        \
        int it__h = rl_lock_hold_count((p)->l);                                    \
        if (it__r != it__h)                                                        \
            fail_msg("Redis count %ld but local hold count %d", it__r, it__h);     \
    } while (0)

/* Check the outcome of an operation whose reply was dropped: RL_OK with the
 * expected hold count, or a clear error; either way Redis agrees with the
 * local hold count (never a doubled count). */
static void check_after_drop(it_env *e, it_proxied *p, int rc, int want_if_ok)
{
    IT_EQ(rt_proxy_dropped(p->proxy), 1);
    print_message("after the lost reply: %s, hold count %d\n", rl_strerror(rc),
                  rl_lock_hold_count(p->l));
    if (rc != RL_OK && rc != RL_ECONN && rc != RL_EPROTO)
        fail_msg("after a lost reply: %d (%s): %s", rc, rl_strerror(rc), rl_last_error());
    if (rc == RL_OK)
        IT_EQ(rl_lock_hold_count(p->l), want_if_ok);
    ASSERT_CONSISTENT(e, p);
}

/* Release every local hold and check the lock comes free (a doubled count
 * would leave it held). */
static void release_all(it_env *e, it_proxied *p)
{
    while (rl_lock_hold_count(p->l) > 0)
        IT_RC(rl_lock_release(p->l), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, p->key, p->kl), 0);
}

static void test_lost_reply_first_acquire(void **state)
{
    it_env *e = *state;
    it_proxied p;
    int rc;

    it_proxied_open(&p, e, "lost1", 0, 1000);
    rt_proxy_drop_next_reply_matching(p.proxy, "EVAL");
    rc = rl_lock_try_acquire(p.l, 0, RL_LEASE_WATCHDOG);
    check_after_drop(e, &p, rc, 1);
    release_all(e, &p);
    it_proxied_close(&p);
}

static void test_lost_reply_reentrant_acquire(void **state)
{
    it_env *e = *state;
    it_proxied p;
    int rc;

    it_proxied_open(&p, e, "lost2", 0, 1000);
    IT_RC(rl_lock_try_acquire(p.l, 0, RL_LEASE_WATCHDOG), RL_OK);
    ASSERT_CONSISTENT(e, &p);
    rt_proxy_drop_next_reply_matching(p.proxy, "EVAL");
    rc = rl_lock_try_acquire(p.l, 0, RL_LEASE_WATCHDOG);
    check_after_drop(e, &p, rc, 2);
    /* And once more without faults. */
    IT_RC(rl_lock_try_acquire(p.l, 0, RL_LEASE_WATCHDOG), RL_OK);
    ASSERT_CONSISTENT(e, &p);
    release_all(e, &p);
    it_proxied_close(&p);
}

static void test_lost_reply_release(void **state)
{
    it_env *e = *state;
    it_proxied p;
    int rc;

    it_proxied_open(&p, e, "lost3", 0, 1000);
    IT_RC(rl_lock_try_acquire(p.l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(p.l, 0, RL_LEASE_WATCHDOG), RL_OK);

    /* 2 -> 1 */
    rt_proxy_drop_next_reply_matching(p.proxy, "EVAL");
    rc = rl_lock_release(p.l);
    check_after_drop(e, &p, rc, 1);
    IT_EQ(rt_redis_exists(e->rc, p.key, p.kl), 1);
    release_all(e, &p);
    it_proxied_close(&p);
}

static void test_lost_reply_last_release(void **state)
{
    it_env *e = *state;
    it_proxied p;
    int rc;

    it_proxied_open(&p, e, "lost4", 0, 1000);
    IT_RC(rl_lock_try_acquire(p.l, 0, RL_LEASE_WATCHDOG), RL_OK);

    /* 1 -> 0: the key is gone; the hold must be gone locally too. */
    rt_proxy_drop_next_reply_matching(p.proxy, "EVAL");
    rc = rl_lock_release(p.l);
    check_after_drop(e, &p, rc, 0);
    /* Still usable. */
    IT_RC(rl_lock_try_acquire(p.l, 0, RL_LEASE_WATCHDOG), RL_OK);
    ASSERT_CONSISTENT(e, &p);
    release_all(e, &p);
    it_proxied_close(&p);
}

/* Sample the PTTL; 1 when it rose since the last sample (a renewal). */
static int pttl_went_up(redisContext *rc, const char *key, size_t kl, long long *last)
{
    long long p = rt_redis_pttl(rc, key, kl);
    int up = p > *last;
    *last = p;
    return up;
}

/* Redis down: a one-shot try says RL_ECONN; after a restart it works. */
static void test_econn_when_down(void **state)
{
    it_env *e = *state;
    rl_options o;
    rl_client *c;
    rl_lock *l;
    int rc = RL_ECONN;
    int64_t deadline;

    it_options(&o, e->redis->url, 0, 500);
    o.connect_timeout_ms = 500;
    c = it_client_opts(&o);
    l = it_lock(c, "down");
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);

    redisFree(e->rc);
    e->rc = NULL;
    assert_int_equal(rt_redis_kill(e->redis), 0);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_ECONN);
    IT_EQ(rl_lock_hold_count(l), 0);
    IT_RC(rl_lock_try_acquire(l, 0, 5000), RL_ECONN);
    IT_EQ(rl_lock_hold_count(l), 0);

    assert_int_equal(rt_redis_restart(e->redis), 0);
    e->rc = rt_redis_connect(e->redis);
    assert_non_null(e->rc);
    /* The client reconnects by itself (allow it a few attempts). */
    deadline = rt_now_ms() + 5000;
    while (rt_now_ms() < deadline) {
        rc = rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG);
        if (rc != RL_ECONN)
            break;
        rt_sleep_ms(50);
    }
    IT_RC(rc, RL_OK);
    IT_EQ(rl_lock_hold_count(l), 1);
    IT_RC(rl_lock_release(l), RL_OK);

    rl_lock_free(l);
    rl_client_free(c);
}

/* A wait started while Redis is down rides out the outage. */
static void test_wait_rides_out_outage(void **state)
{
    it_env *e = *state;
    rl_options o;
    rl_client *c;
    rl_lock *l;
    it_acq w;

    it_options(&o, e->redis->url, 0, 300);
    o.connect_timeout_ms = 300;
    c = it_client_opts(&o);
    l = it_lock(c, "outage");

    redisFree(e->rc);
    e->rc = NULL;
    assert_int_equal(rt_redis_kill(e->redis), 0);
    memset(&w, 0, sizeof w);
    w.lock = l;
    w.wait_ms = 15000;
    w.lease_ms = RL_LEASE_WATCHDOG;
    w.hold = 1;
    it_acq_start(&w);
    IT_WAIT(atomic_load(&w.state) == 1 && rt_now_us() - w.t_call_us >= 700000, 10000);
    IT_EQ(atomic_load(&w.state), 1); /* still waiting, not failed */

    assert_int_equal(rt_redis_restart(e->redis), 0);
    e->rc = rt_redis_connect(e->redis);
    assert_non_null(e->rc);
    IT_WAIT(atomic_load(&w.state) >= 2, 15000);
    IT_RC(w.rc, RL_OK);
    it_acq_let_go(&w);
    assert_int_equal(it_acq_join(&w, 10000), 0);
    IT_RC(w.release_rc, RL_OK);

    rl_lock_free(l);
    rl_client_free(c);
}

/* Behaviour 8: restart with state loss while one holds and another waits. */
static void test_restart_flags_holder_and_waiter_gets_lock(void **state)
{
    it_env *e = *state;
    rl_options o;
    rl_client *hc, *wc;
    rl_lock *hl, *wl, *other;
    char key[32], holder_field[128];
    size_t kl = it_key(key, sizeof key, "rl:", "restart", 7, NULL);
    it_hash h;
    it_acq w;

    it_options(&o, e->redis->url, 900, 300);
    o.connect_timeout_ms = 300;
    hc = it_client_opts(&o);
    it_options(&o, e->redis->url, 0, 300);
    o.connect_timeout_ms = 300;
    wc = it_client_opts(&o);
    hl = it_lock(hc, "restart");
    wl = it_lock(wc, "restart");
    other = it_lock(wc, "after-restart");

    IT_RC(rl_lock_try_acquire(hl, 0, RL_LEASE_WATCHDOG), RL_OK);
    assert_int_equal(it_hgetall(e->rc, key, kl, &h), 0);
    snprintf(holder_field, sizeof holder_field, "%s", h.field);

    memset(&w, 0, sizeof w);
    w.lock = wl;
    w.wait_ms = RL_WAIT_FOREVER;
    w.lease_ms = RL_LEASE_WATCHDOG;
    w.hold = 1;
    it_acq_start(&w);
    IT_WAIT(atomic_load(&w.state) == 1 && rt_now_us() - w.t_call_us >= 300000, 10000);
    IT_EQ(atomic_load(&w.state), 1);

    redisFree(e->rc);
    e->rc = NULL;
    assert_int_equal(rt_redis_restart(e->redis), 0);
    e->rc = rt_redis_connect(e->redis);
    assert_non_null(e->rc);

    IT_WAIT(rl_lock_interrupted(hl) == 1, 5000);
    IT_EQ(rl_interrupted(), 1);
    if (!RT_WAIT_UNTIL(atomic_load(&w.state) >= 2, 10000)) {
        /* A waiter that never comes back cannot be joined; leave it. */
        pthread_detach(w.thread);
        fail_msg("the waiter did not get the lock within 10 s of the restart");
    }
    IT_RC(w.rc, RL_OK);
    assert_int_equal(it_hgetall(e->rc, key, kl, &h), 0);
    IT_EQ(h.fields, 1);
    assert_string_not_equal(h.field, holder_field);

    /* The old holder learns of the loss and leaves the new owner alone. */
    IT_RC(rl_lock_release(hl), RL_ELOST);
    IT_EQ(rl_lock_hold_count(hl), 0);
    assert_int_equal(it_hgetall(e->rc, key, kl, &h), 0);
    IT_EQ(h.fields, 1);
    assert_string_not_equal(h.field, holder_field);
    assert_string_equal(h.value, "1");

    it_acq_let_go(&w);
    assert_int_equal(it_acq_join(&w, 10000), 0);
    IT_RC(w.release_rc, RL_OK);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);

    /* New acquisitions work on both clients. */
    IT_RC(rl_lock_try_acquire(other, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(other), RL_OK);
    IT_RC(rl_lock_try_acquire(hl, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rl_lock_interrupted(hl), 0);
    IT_RC(rl_lock_release(hl), RL_OK);

    rl_lock_free(other);
    rl_lock_free(wl);
    rl_lock_free(hl);
    rl_client_free(wc);
    rl_client_free(hc);
}

/* A frozen network (connections open, nothing moves) is Redis out of
 * reach: the flag rises by the lease end, and the client recovers. */
static void test_stalled_network_flags_by_lease_end(void **state)
{
    it_env *e = *state;
    it_proxied p;
    rl_options o;
    int64_t stalled_at, flagged_at = -1;

    p.proxy = rt_proxy_start(e->redis->port);
    assert_non_null(p.proxy);
    it_options(&o, rt_proxy_url(p.proxy), 900, 200);
    o.connect_timeout_ms = 200;
    p.c = it_client_opts(&o);
    p.l = it_lock(p.c, "stalled");
    p.kl = it_key(p.key, sizeof p.key, "rl:", "stalled", 7, NULL);

    IT_RC(rl_lock_try_acquire(p.l, 0, RL_LEASE_WATCHDOG), RL_OK);
    stalled_at = rt_now_ms();
    assert_int_equal(rt_proxy_stall(p.proxy, 1), 0);
    while (rt_now_ms() - stalled_at < 900 + 2000) {
        if (rl_interrupted() == 1) {
            flagged_at = rt_now_ms();
            break;
        }
        rt_sleep_ms(1);
    }
    if (flagged_at < 0)
        fail_msg("rl_interrupted() still 0 %d ms into a network stall", 900 + 2000);
    if (flagged_at - stalled_at > 900 + 100)
        fail_msg("flag rose %lld ms into the stall: later than the 900 ms lease",
                 (long long)(flagged_at - stalled_at));
    assert_int_equal(rt_proxy_stall(p.proxy, 0), 0);
    IT_RC(rl_lock_release(p.l), RL_ELOST);
    IT_EQ(rl_lock_hold_count(p.l), 0);

    /* Whatever the stalled connections do now, the client works again. */
    rt_proxy_cut_all(p.proxy);
    IT_RC(rl_lock_try_acquire(p.l, 5000, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rl_interrupted(), 0);
    ASSERT_CONSISTENT(e, &p);
    release_all(e, &p);
    it_proxied_close(&p);
}

/* Connections cut under a held lock: the watchdog reconnects in time and
 * the hold never counts as lost. */
static void test_cut_connections_keep_hold(void **state)
{
    it_env *e = *state;
    it_proxied p;
    rl_options o;
    long long last;
    int round;

    p.proxy = rt_proxy_start(e->redis->port);
    assert_non_null(p.proxy);
    it_options(&o, rt_proxy_url(p.proxy), 1500, 300);
    o.connect_timeout_ms = 300;
    p.c = it_client_opts(&o);
    p.l = it_lock(p.c, "cut");
    p.kl = it_key(p.key, sizeof p.key, "rl:", "cut", 3, NULL);

    IT_RC(rl_lock_try_acquire(p.l, 0, RL_LEASE_WATCHDOG), RL_OK);
    for (round = 0; round < 3; round++) {
        long accepted = rt_proxy_accepted(p.proxy);
        IT_RANGE(rt_proxy_cut_all(p.proxy), 1, 100);
        /* the watchdog reconnects (a new connection through the proxy) and
         * renews: PTTL goes up again */
        IT_WAIT(rt_proxy_accepted(p.proxy) > accepted, 3000);
        last = rt_redis_pttl(e->rc, p.key, p.kl);
        IT_WAIT(pttl_went_up(e->rc, p.key, p.kl, &last), 3000);
        IT_EQ(rl_interrupted(), 0);
    }
    IT_EQ(rl_lock_interrupted(p.l), 0);
    ASSERT_CONSISTENT(e, &p);
    IT_RC(rl_lock_release(p.l), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, p.key, p.kl), 0);
    it_proxied_close(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lost_reply_first_acquire, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_lost_reply_reentrant_acquire, it_setup,
                                        it_teardown),
        cmocka_unit_test_setup_teardown(test_lost_reply_release, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_lost_reply_last_release, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_econn_when_down, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_wait_rides_out_outage, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_restart_flags_holder_and_waiter_gets_lock,
                                        it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_stalled_network_flags_by_lease_end, it_setup,
                                        it_teardown),
        cmocka_unit_test_setup_teardown(test_cut_connections_keep_hold, it_setup, it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
