/*
 * Outcomes that cannot be read back, and what is left when a client goes
 * away: a reply is lost AND Redis cannot be reached to read the count back.
 * rlock must then flag the hold (it can no longer vouch for it), never let
 * the Redis count drift from what the caller was told, and drop whatever
 * field of ours may remain as soon as Redis answers again.
 */
#include <stdlib.h>
#include <string.h>

#include "it_common.h"
#include "proxy.h"
#include "rt_util.h"

/* Clients here have a 30 s lease: nothing in these tests can be cleaned up
 * by a lease running out. */

/* Lose the reply of the next script call and refuse reconnection, so the
 * outcome cannot be read back. */
static void lose_and_isolate(it_proxied *p)
{
    rt_proxy_drop_next_reply_matching(p->proxy, "EVAL");
    assert_int_equal(rt_proxy_refuse(p->proxy, 1), 0);
}

static void test_unresolved_reentry_flags_and_drops(void **state)
{
    it_env *e = *state;
    it_proxied p;

    it_proxied_open(&p, e, "doubt1", 30000, 500);
    IT_RC(rl_lock_try_acquire(p.l, 0, RL_LEASE_WATCHDOG), RL_OK);
    lose_and_isolate(&p);
    IT_RC(rl_lock_try_acquire(p.l, 0, RL_LEASE_WATCHDOG), RL_ECONN);
    /* The caller was told it failed: the count is unchanged, the hold flagged. */
    IT_EQ(rl_lock_hold_count(p.l), 1);
    IT_EQ(rl_lock_interrupted(p.l), 1);
    IT_EQ(rl_interrupted(), 1);
    assert_int_equal(rt_proxy_refuse(p.proxy, 0), 0);
    /* Unwinding reports the loss and removes our field whatever its count
     * (it was applied in Redis: 2 there, 1 here). */
    IT_RC(rl_lock_release(p.l), RL_ELOST);
    IT_EQ(rl_lock_hold_count(p.l), 0);
    IT_WAIT(rt_redis_exists(e->rc, p.key, p.kl) == 0, 5000);
    IT_EQ(rl_interrupted(), 0);
    /* And the name works again. */
    IT_RC(rl_lock_try_acquire(p.l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(p.l), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, p.key, p.kl), 0);
    it_proxied_close(&p);
}

static void test_unresolved_inner_release_gives_up_the_hold(void **state)
{
    it_env *e = *state;
    it_proxied p;

    it_proxied_open(&p, e, "doubt2", 30000, 500);
    IT_RC(rl_lock_try_acquire(p.l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(p.l, 0, RL_LEASE_WATCHDOG), RL_OK);
    lose_and_isolate(&p);
    /* 2 -> 1 applied in Redis, unknown here: the count still drops, and
     * nobody may believe in the hold any more. */
    IT_RC(rl_lock_release(p.l), RL_ELOST);
    IT_EQ(rl_lock_hold_count(p.l), 1);
    IT_EQ(rl_lock_interrupted(p.l), 1);
    assert_int_equal(rt_proxy_refuse(p.proxy, 0), 0);
    IT_RC(rl_lock_release(p.l), RL_ELOST);
    IT_EQ(rl_lock_hold_count(p.l), 0);
    IT_WAIT(rt_redis_exists(e->rc, p.key, p.kl) == 0, 5000);
    it_proxied_close(&p);
}

static void test_unresolved_first_acquire_leaves_no_ghost(void **state)
{
    it_env *e = *state;
    it_proxied p;
    long long t0;

    it_proxied_open(&p, e, "doubt3", 30000, 500);
    lose_and_isolate(&p);
    IT_RC(rl_lock_try_acquire(p.l, 0, RL_LEASE_WATCHDOG), RL_ECONN);
    IT_EQ(rl_lock_hold_count(p.l), 0);
    IT_EQ(rl_interrupted(), 0);
    /* Applied in Redis: our field sits there with a 30 s lease... */
    IT_EQ(rt_redis_exists(e->rc, p.key, p.kl), 1);
    t0 = rt_now_ms();
    assert_int_equal(rt_proxy_refuse(p.proxy, 0), 0);
    /* ...until the watchdog can reach Redis and drop it, long before. */
    IT_WAIT(rt_redis_exists(e->rc, p.key, p.kl) == 0, 5000);
    print_message("leftover field dropped %lld ms after Redis was reachable again\n",
                  rt_now_ms() - t0);
    it_proxied_close(&p);
}

/* A thread still linked to holds of a client that another thread frees. */
struct holder {
    rl_lock *lock;
    rl_lock *other;       /* a lock of another client, used before looking */
    atomic_int stage;     /* 1: holds; 2: may look; 3: done */
    int rc, first, second;
};

static void *holder_main(void *arg)
{
    struct holder *h = arg;

    h->rc = rl_lock_try_acquire(h->lock, 0, RL_LEASE_WATCHDOG);
    atomic_store(&h->stage, 1);
    RT_WAIT_UNTIL(atomic_load(&h->stage) == 2, 20000);
    /* A call through another client walks the same list of holds... */
    if (h->other)
        rl_lock_hold_count(h->other);
    h->first = rl_interrupted();     /* ...and still the loss is told, once */
    h->second = rl_interrupted();    /* and the stale hold has been let go */
    atomic_store(&h->stage, 3);
    return NULL;
}

static void test_client_free_orphans_other_threads_holds(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0), *c2 = it_client(e, 0);
    struct holder h;
    pthread_t th;
    char key[64];
    size_t kl = it_key(key, sizeof key, "rl:", "orphan", 6, NULL);

    memset(&h, 0, sizeof h);
    h.lock = it_lock(c, "orphan");
    h.other = it_lock(c2, "elsewhere");
    atomic_init(&h.stage, 0);
    assert_int_equal(pthread_create(&th, NULL, holder_main, &h), 0);
    IT_WAIT(atomic_load(&h.stage) == 1, 10000);
    IT_RC(h.rc, RL_OK);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 1);
    /* Everything is freed while the other thread still holds. */
    rl_lock_free(h.lock);
    rl_client_free(c);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);
    atomic_store(&h.stage, 2);
    IT_WAIT(atomic_load(&h.stage) == 3, 10000);
    pthread_join(th, NULL);
    IT_EQ(h.first, 1);
    IT_EQ(h.second, 0);
    rl_lock_free(h.other);
    rl_client_free(c2);
}

static void test_short_fixed_lease_is_not_lost_at_once(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);    /* default 30 s watchdog lease */
    rl_lock *l = it_lock(c, "short");

    IT_RC(rl_lock_try_acquire(l, 0, 250), RL_OK);
    /* The margin comes from this hold's lease, not the client's 30 s. */
    IT_EQ(rl_lock_interrupted(l), 0);
    IT_RC(rl_lock_try_acquire(l, 0, 250), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_MIN_MS - 1), RL_EINVAL);
    rl_lock_free(l);
    rl_client_free(c);
}

static void *hold_until_flagged(void *arg)
{
    struct holder *h = arg;

    h->rc = rl_lock_try_acquire(h->lock, 0, 60000);
    atomic_store(&h->stage, 1);
    RT_WAIT_UNTIL(atomic_load(&h->stage) == 2, 20000);
    h->first = rl_lock_interrupted(h->lock);
    h->second = rl_lock_release(h->lock);
    atomic_store(&h->stage, 3);
    return NULL;
}

static void test_force_release_flags_local_holders_at_once(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    struct holder h;
    pthread_t th;
    rl_lock *mine = it_lock(c, "forced");

    memset(&h, 0, sizeof h);
    h.lock = it_lock(c, "forced");
    atomic_init(&h.stage, 0);
    assert_int_equal(pthread_create(&th, NULL, hold_until_flagged, &h), 0);
    IT_WAIT(atomic_load(&h.stage) == 1, 10000);
    IT_RC(h.rc, RL_OK);
    /* A fixed 60 s lease: no renewal would ever notice. */
    IT_RC(rl_lock_force_release(mine), RL_OK);
    atomic_store(&h.stage, 2);
    IT_WAIT(atomic_load(&h.stage) == 3, 10000);
    pthread_join(th, NULL);
    IT_EQ(h.first, 1);
    IT_RC(h.second, RL_ELOST);
    rl_lock_free(h.lock);
    rl_lock_free(mine);
    rl_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unresolved_reentry_flags_and_drops, it_setup,
                                        it_teardown),
        cmocka_unit_test_setup_teardown(test_unresolved_inner_release_gives_up_the_hold,
                                        it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_unresolved_first_acquire_leaves_no_ghost,
                                        it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_client_free_orphans_other_threads_holds,
                                        it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_short_fixed_lease_is_not_lost_at_once, it_setup,
                                        it_teardown),
        cmocka_unit_test_setup_teardown(test_force_release_flags_local_holders_at_once,
                                        it_setup, it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
