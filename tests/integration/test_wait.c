/*
 * Behaviour 3: waiting. A waiter is woken by the release (within a second),
 * not by the holder's 20 s lease running out; local waiters each get the
 * lock once, in order of arrival; and only one of them talks to Redis.
 */
#include "it_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HOLD_LEASE_MS 20000
#define WOKEN_WITHIN_MS 1000

static void test_wake_on_release_thread(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    rl_lock *l = it_lock(c, "wake");
    char key[32];
    size_t kl = it_key(key, sizeof key, "rl:", "wake", 4, NULL);
    it_acq w;
    int64_t released_us;

    IT_RC(rl_lock_try_acquire(l, 0, HOLD_LEASE_MS), RL_OK);

    memset(&w, 0, sizeof w);
    w.lock = l;
    w.wait_ms = 15000;
    w.lease_ms = RL_LEASE_WATCHDOG;
    it_acq_start(&w);
    /* The waiter has been inside its wait for a while (the lock is held, so
     * it cannot have returned). */
    IT_WAIT(atomic_load(&w.state) == 1 && rt_now_us() - w.t_call_us >= 300000, 10000);
    IT_EQ(atomic_load(&w.state), 1);
    /* Without a wake-up it would sleep for the rest of this PTTL. */
    IT_RANGE(rt_redis_pttl(e->rc, key, kl), 15000, HOLD_LEASE_MS);

    released_us = rt_now_us();
    IT_RC(rl_lock_release(l), RL_OK);
    IT_WAIT(atomic_load(&w.state) >= 2, 10000);
    IT_RC(w.rc, RL_OK);
    if (w.t_return_us - released_us > WOKEN_WITHIN_MS * 1000)
        fail_msg("waiter got the lock %lld ms after the release (limit %d ms)",
                 (long long)((w.t_return_us - released_us) / 1000), WOKEN_WITHIN_MS);
    assert_int_equal(it_acq_join(&w, 10000), 0);
    IT_EQ(w.count_after, 1);
    IT_RC(w.release_rc, RL_OK);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);

    rl_lock_free(l);
    rl_client_free(c);
}

/* Another process ("--child wait URL", fd 3 to the parent): wait for the
 * lock, then write int rc and int64_t t_return_us to fd 3. */
static int child_wait(const char *url)
{
    const int out_fd = 3;
    rl_options o;
    rl_client *c = NULL;
    rl_lock *l = NULL;
    int rc;
    int64_t t;
    char msg[sizeof(int) + sizeof(int64_t)];

    rl_options_init(&o, RL_OPTIONS_VERSION);
    o.url = url;
    if (rl_client_new(&c, &o) != RL_OK)
        return 10;
    if (rl_lock_new(&l, c, "xwake") != RL_OK)
        return 11;
    rc = rl_lock_try_acquire(l, 15000, RL_LEASE_WATCHDOG);
    t = rt_now_us();
    memcpy(msg, &rc, sizeof rc);
    memcpy(msg + sizeof rc, &t, sizeof t);
    if (rt_write_all(out_fd, msg, sizeof msg) != 0)
        return 12;
    if (rc == RL_OK && rl_lock_release(l) != RL_OK)
        return 13;
    rl_lock_free(l);
    rl_client_free(c);
    return 0;
}

static void test_wake_on_release_process(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    rl_lock *l = it_lock(c, "xwake");
    char key[32], ch[48];
    size_t kl = it_key(key, sizeof key, "rl:", "xwake", 5, NULL);
    size_t chl = it_key(ch, sizeof ch, "rl:", "xwake", 5, ":release");
    int fds[2];
    char *argv[] = { "it_wait", "--child", "wait", e->redis->url, NULL };
    char msg[sizeof(int) + sizeof(int64_t)];
    int rc, code;
    int64_t got_us, released_us;
    pid_t pid;

    IT_RC(rl_lock_try_acquire(l, 0, HOLD_LEASE_MS), RL_OK);
    assert_int_equal(rt_pipe(fds), 0);
    pid = rt_spawn_self(argv, &fds[1], 1, 60);
    assert_true(pid > 0);
    rt_close(&fds[1]);

    /* The child is waiting once it listens for the release notice. */
    IT_WAIT(rt_redis_numsub(e->rc, ch, chl) >= 1, 10000);
    IT_RANGE(rt_redis_pttl(e->rc, key, kl), 15000, HOLD_LEASE_MS);

    released_us = rt_now_us();
    IT_RC(rl_lock_release(l), RL_OK);
    if (rt_read_full(fds[0], msg, sizeof msg, 10000) != 0)
        fail_msg("no answer from the waiting child");
    memcpy(&rc, msg, sizeof rc);
    memcpy(&got_us, msg + sizeof rc, sizeof got_us);
    IT_RC(rc, RL_OK);
    if (got_us - released_us > WOKEN_WITHIN_MS * 1000)
        fail_msg("child got the lock %lld ms after the release (limit %d ms)",
                 (long long)((got_us - released_us) / 1000), WOKEN_WITHIN_MS);
    code = rt_child_wait(pid, 10000);
    IT_EQ(code, 0);
    rt_close(&fds[0]);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);

    rl_lock_free(l);
    rl_client_free(c);
}

#define NWAIT 6

/* Threads that got the lock and were not yet told to let go. */
static int count_holding(it_acq *w, int n, int *holder)
{
    int i, holding = 0;
    for (i = 0; i < n; i++) {
        if (atomic_load(&w[i].state) >= 2 && !atomic_load(&w[i].go)) {
            holding++;
            *holder = i;
        }
    }
    return holding;
}

/* All threads are inside their acquire call. */
static int all_waiting(it_acq *w, int n)
{
    int i;
    for (i = 0; i < n; i++) {
        if (atomic_load(&w[i].state) != 1)
            return 0;
    }
    return 1;
}

/* Release the waiters one at a time, checking that exactly one holds at any
 * moment. Returns the order (indexes) in which they got the lock. */
static void drain_waiters(it_env *e, it_acq *w, int n, const char *name, int *order)
{
    char key[64];
    size_t kl = it_key(key, sizeof key, "rl:", name, strlen(name), NULL);
    int k, i;

    for (k = 0; k < n; k++) {
        int holder = -1, holding = 0;
        it_hash h;

        /* Someone new gets it: state 2 and not yet let go. */
        if (!RT_WAIT_UNTIL((holding = count_holding(w, n, &holder)) > 0, 15000))
            fail_msg("after %d of %d waiters, nobody got the lock", k, n);
        if (holding != 1)
            fail_msg("%d waiters hold the lock at once", holding);
        IT_RC(w[holder].rc, RL_OK);
        IT_EQ(w[holder].count_after, 1);
        assert_int_equal(it_hgetall(e->rc, key, kl, &h), 0);
        IT_EQ(h.fields, 1);
        assert_string_equal(h.value, "1");
        order[k] = holder;
        it_acq_let_go(&w[holder]);
    }
    for (i = 0; i < n; i++) {
        if (it_acq_join(&w[i], 15000) != 0)
            fail_msg("waiter %d did not finish", i);
        IT_RC(w[i].release_rc, RL_OK);
    }
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);
}

static void test_local_waiters_each_once(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    rl_lock *l = it_lock(c, "herd");
    rl_lock *l2 = it_lock(c, "herd"); /* half the threads use another handle */
    it_acq w[NWAIT];
    int order[NWAIT], seen[NWAIT] = { 0 };
    int i;

    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    memset(w, 0, sizeof w);
    for (i = 0; i < NWAIT; i++) {
        w[i].lock = i % 2 ? l2 : l;
        w[i].wait_ms = 30000;
        w[i].lease_ms = RL_LEASE_WATCHDOG;
        w[i].hold = 1;
        it_acq_start(&w[i]);
    }
    IT_WAIT(all_waiting(w, NWAIT), 10000);
    IT_RC(rl_lock_release(l), RL_OK);
    drain_waiters(e, w, NWAIT, "herd", order);
    for (i = 0; i < NWAIT; i++)
        seen[order[i]]++;
    for (i = 0; i < NWAIT; i++)
        IT_EQ(seen[i], 1);

    rl_lock_free(l2);
    rl_lock_free(l);
    rl_client_free(c);
}

static void test_local_waiters_fifo(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    rl_lock *l = it_lock(c, "fifo");
    it_acq w[NWAIT];
    int order[NWAIT];
    int i;

    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    memset(w, 0, sizeof w);
    for (i = 0; i < NWAIT; i++) {
        w[i].lock = l;
        w[i].wait_ms = 30000;
        w[i].lease_ms = RL_LEASE_WATCHDOG;
        w[i].hold = 1;
        it_acq_start(&w[i]);
        /* Arrival order: each is well inside its wait before the next. */
        IT_WAIT(atomic_load(&w[i].state) == 1 && rt_now_us() - w[i].t_call_us >= 250000,
                10000);
    }
    IT_RC(rl_lock_release(l), RL_OK);
    drain_waiters(e, w, NWAIT, "fifo", order);
    for (i = 0; i < NWAIT; i++) {
        if (order[i] != i)
            fail_msg("waiter %d (in arrival order) got the lock in position %d", order[i], i);
    }

    rl_lock_free(l);
    rl_client_free(c);
}

/* Another process ("--child hold URL"): take the lock, say 'A' on fd 3,
 * release it when 'R' arrives on fd 4. */
static int child_hold(const char *url)
{
    const int to_parent = 3, from_parent = 4;
    rl_options o;
    rl_client *c = NULL;
    rl_lock *l = NULL;
    char b;

    rl_options_init(&o, RL_OPTIONS_VERSION);
    o.url = url;
    if (rl_client_new(&c, &o) != RL_OK)
        return 10;
    if (rl_lock_new(&l, c, "sflight") != RL_OK)
        return 11;
    if (rl_lock_try_acquire(l, 0, HOLD_LEASE_MS) != RL_OK)
        return 12;
    b = 'A';
    if (rt_write_all(to_parent, &b, 1) != 0)
        return 13;
    if (rt_read_full(from_parent, &b, 1, 30000) != 0 || b != 'R')
        return 14;
    if (rl_lock_release(l) != RL_OK)
        return 15;
    rl_lock_free(l);
    rl_client_free(c);
    return 0;
}

static long long script_calls(redisContext *rc)
{
    long long a = rt_redis_cmdstat_calls(rc, "evalsha");
    long long b = rt_redis_cmdstat_calls(rc, "eval");
    if (a < 0 || b < 0)
        fail_msg("INFO commandstats failed");
    return a + b;
}

#define NFLIGHT 8
#define SF_HEAD_CALLS 5

static void test_single_flight(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    rl_lock *l = it_lock(c, "sflight");
    char *argv[] = { "it_wait", "--child", "hold", e->redis->url, NULL };
    int up[2], down[2], keep[2];
    it_acq w[NFLIGHT];
    long long before, during, after;
    int64_t held_since;
    pid_t pid;
    char b;
    int i;

    assert_int_equal(rt_pipe(up), 0);
    assert_int_equal(rt_pipe(down), 0);
    keep[0] = up[1];
    keep[1] = down[0];
    pid = rt_spawn_self(argv, keep, 2, 60);
    assert_true(pid > 0);
    rt_close(&up[1]);
    rt_close(&down[0]);
    if (rt_read_full(up[0], &b, 1, 10000) != 0 || b != 'A')
        fail_msg("the holding child did not take the lock");

    before = script_calls(e->rc);
    memset(w, 0, sizeof w);
    for (i = 0; i < NFLIGHT; i++) {
        w[i].lock = l;
        w[i].wait_ms = 30000;
        w[i].lease_ms = RL_LEASE_WATCHDOG;
        it_acq_start(&w[i]);
    }
    IT_WAIT(all_waiting(w, NFLIGHT), 10000);
    /* The other process keeps the lock for about a second while the eight
     * wait: this is the scenario's duration, not a synchronisation. */
    held_since = rt_now_ms();
    RT_WAIT_UNTIL(rt_now_ms() - held_since >= 1000, 2000);
    for (i = 0; i < NFLIGHT; i++)
        IT_EQ(atomic_load(&w[i].state), 1);
    during = script_calls(e->rc) - before;

    b = 'R';
    assert_int_equal(rt_write_all(down[1], &b, 1), 0);
    for (i = 0; i < NFLIGHT; i++) {
        if (it_acq_join(&w[i], 20000) != 0)
            fail_msg("waiter %d did not finish", i);
        IT_RC(w[i].rc, RL_OK);
        IT_RC(w[i].release_rc, RL_OK);
    }
    IT_EQ(rt_child_wait(pid, 10000), 0);
    after = script_calls(e->rc);
    print_message("single flight: %lld script calls while held, %lld in all, %d waiters\n",
                  during, after - before, NFLIGHT);

    /* While the lock is held elsewhere, only the head of the local queue
     * asks Redis (a try, and one more after subscribing); eight waiters
     * each asking would cost at least eight, polling far more. */
    if (during > SF_HEAD_CALLS)
        fail_msg("%lld script calls while %d local waiters waited (limit %d): not single-flight",
                 during, NFLIGHT, SF_HEAD_CALLS);
    /* In all: each waiter acquires and releases once, the child releases
     * once, plus the head's calls. */
    if (after - before > 2 * NFLIGHT + 1 + SF_HEAD_CALLS)
        fail_msg("%lld script calls for %d local waiters (limit %d)", after - before, NFLIGHT,
                 2 * NFLIGHT + 1 + SF_HEAD_CALLS);

    rt_close(&up[0]);
    rt_close(&down[1]);
    rl_lock_free(l);
    rl_client_free(c);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_wake_on_release_thread, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_wake_on_release_process, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_local_waiters_each_once, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_local_waiters_fifo, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_single_flight, it_setup, it_teardown),
    };

    if (argc == 4 && strcmp(argv[1], "--child") == 0 && strcmp(argv[2], "wait") == 0)
        return child_wait(argv[3]);
    if (argc == 4 && strcmp(argv[1], "--child") == 0 && strcmp(argv[2], "hold") == 0)
        return child_hold(argv[3]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
