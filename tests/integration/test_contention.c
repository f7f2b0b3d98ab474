/*
 * Behaviour 2: exclusion between threads and processes, ownership checks on
 * release, is_locked / ttl, and force_release flagging the holder.
 */
#include "it_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static it_hash snapshot(it_env *e, const char *name)
{
    char key[128];
    size_t kl = it_key(key, sizeof key, "rl:", name, strlen(name), NULL);
    it_hash h;
    if (it_hgetall(e->rc, key, kl, &h) != 0)
        fail_msg("HGETALL %s failed", key);
    return h;
}

static void assert_same_hash(const it_hash *a, const it_hash *b)
{
    IT_EQ(a->fields, b->fields);
    assert_string_equal(a->field, b->field);
    assert_string_equal(a->value, b->value);
}

static void test_other_thread_busy_and_timeout(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    rl_lock *l = it_lock(c, "busy");
    it_hash before, after;
    it_acq t;

    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    before = snapshot(e, "busy");
    IT_EQ(before.fields, 1);

    memset(&t, 0, sizeof t);
    t.lock = l;
    t.wait_ms = 0;
    t.lease_ms = RL_LEASE_WATCHDOG;
    it_acq_start(&t);
    assert_int_equal(it_acq_join(&t, 10000), 0);
    IT_RC(t.rc, RL_EBUSY);

    memset(&t, 0, sizeof t);
    t.lock = l;
    t.wait_ms = 200;
    t.lease_ms = RL_LEASE_WATCHDOG;
    it_acq_start(&t);
    assert_int_equal(it_acq_join(&t, 10000), 0);
    IT_RC(t.rc, RL_ETIMEDOUT);
    /* It did wait (give or take clock granularity), and not forever. */
    IT_RANGE((t.t_return_us - t.t_call_us) / 1000, 190, 5000);

    /* A fixed-lease attempt is refused the same way. */
    memset(&t, 0, sizeof t);
    t.lock = l;
    t.wait_ms = 0;
    t.lease_ms = 5000;
    it_acq_start(&t);
    assert_int_equal(it_acq_join(&t, 10000), 0);
    IT_RC(t.rc, RL_EBUSY);

    after = snapshot(e, "busy");
    assert_same_hash(&before, &after);
    IT_EQ(rl_lock_hold_count(l), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);
}

/* In another process (this program started with "--child try URL NAME"):
 * a client of its own must be refused the lock. */
static int child_try(const char *url, const char *name)
{
    rl_options o;
    rl_client *c = NULL;
    rl_lock *l = NULL;
    int64_t t0, ms;
    int code = 0;

    rl_options_init(&o, RL_OPTIONS_VERSION);
    o.url = url;
    if (rl_client_new(&c, &o) != RL_OK)
        return 10;
    if (rl_lock_new(&l, c, name) != RL_OK)
        code = 11;
    else if (rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG) != RL_EBUSY)
        code = 12;
    else {
        t0 = rt_now_ms();
        if (rl_lock_try_acquire(l, 200, RL_LEASE_WATCHDOG) != RL_ETIMEDOUT)
            code = 13;
        ms = rt_now_ms() - t0;
        if (code == 0 && (ms < 190 || ms > 5000))
            code = 14;
        if (code == 0 && rl_lock_hold_count(l) != 0)
            code = 15;
        if (code == 0 && rl_lock_is_locked(l) != 1)
            code = 16;
    }
    rl_lock_free(l);
    rl_client_free(c);
    return code;
}

static void test_other_process_busy_and_timeout(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    rl_lock *l = it_lock(c, "xproc");
    char *argv[] = { "it_contention", "--child", "try", e->redis->url, "xproc", NULL };
    it_hash before, after;
    pid_t pid;
    int code;

    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    before = snapshot(e, "xproc");

    pid = rt_spawn_self(argv, NULL, 0, 60);
    assert_true(pid > 0);
    code = rt_child_wait(pid, 30000);
    if (code != 0)
        fail_msg("child failed with code %d (10 client, 12 not EBUSY, 13 not ETIMEDOUT, "
                 "14 wait time, 15 hold_count, 16 is_locked)", code);

    after = snapshot(e, "xproc");
    assert_same_hash(&before, &after);
    IT_EQ(rl_lock_hold_count(l), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);
}

static int release_it(void *l)
{
    return rl_lock_release(l);
}

static int hold_count_of(void *l)
{
    return rl_lock_hold_count(l);
}

static void test_release_not_owner(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    rl_client *c2 = it_client(e, 0);
    rl_lock *l = it_lock(c, "mine");
    rl_lock *l2 = it_lock(c2, "mine");
    rl_lock *free_lock = it_lock(c, "never-taken");
    char fk[64];
    size_t fkl = it_key(fk, sizeof fk, "rl:", "never-taken", 11, NULL);
    it_hash before, after;
    it_acq t;

    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    before = snapshot(e, "mine");
    assert_string_equal(before.value, "2");

    /* Another thread of this process can neither take nor release it. */
    memset(&t, 0, sizeof t);
    t.lock = l;
    t.wait_ms = 0;
    t.lease_ms = RL_LEASE_WATCHDOG;
    it_acq_start(&t);
    assert_int_equal(it_acq_join(&t, 10000), 0);
    IT_RC(t.rc, RL_EBUSY);
    IT_RC(it_on_thread(release_it, l, 10000), RL_ENOTOWNER);
    IT_RC(it_on_thread(hold_count_of, l, 10000), 0);
    after = snapshot(e, "mine");
    assert_same_hash(&before, &after);

    /* Another owner (another client = another process identity) on the
     * same thread. */
    IT_RC(rl_lock_release(l2), RL_ENOTOWNER);
    after = snapshot(e, "mine");
    assert_same_hash(&before, &after);
    IT_EQ(rl_lock_hold_count(l), 2);

    /* A lock nobody holds: not created by a release. */
    IT_RC(rl_lock_release(free_lock), RL_ENOTOWNER);
    IT_EQ(rt_redis_exists(e->rc, fk, fkl), 0);

    IT_RC(rl_lock_release(l), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(rl_lock_is_locked(l), 0);
    rl_lock_free(l);
    rl_lock_free(l2);
    rl_lock_free(free_lock);
    rl_client_free(c2);
    rl_client_free(c);
}

static int is_locked_of(void *l)
{
    return rl_lock_is_locked(l);
}

static void test_is_locked_and_ttl(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    rl_lock *l = it_lock(c, "ttl");
    rl_lock *other = it_lock(c, "ttl");
    rl_lock *raw = it_lock(c, "raw");
    char rk[32];
    size_t rkl = it_key(rk, sizeof rk, "rl:", "raw", 3, NULL);
    long ttl = 12345;
    redisReply *rep;

    IT_EQ(rl_lock_is_locked(l), 0);
    IT_RC(rl_lock_ttl(&ttl, l), RL_OK);
    IT_EQ(ttl, -2);

    /* watchdog lease: default 30 s */
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rl_lock_is_locked(l), 1);
    IT_EQ(rl_lock_is_locked(other), 1); /* any handle, same name */
    IT_EQ(it_on_thread(is_locked_of, other, 10000), 1);
    ttl = 0;
    IT_RC(rl_lock_ttl(&ttl, other), RL_OK);
    IT_RANGE(ttl, 20000, 30000);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(rl_lock_is_locked(l), 0);
    IT_RC(rl_lock_ttl(&ttl, l), RL_OK);
    IT_EQ(ttl, -2);

    /* fixed lease */
    IT_RC(rl_lock_try_acquire(l, 0, 7000), RL_OK);
    IT_RC(rl_lock_ttl(&ttl, l), RL_OK);
    IT_RANGE(ttl, 1, 7000);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_RC(rl_lock_ttl(&ttl, l), RL_OK);
    IT_EQ(ttl, -2);

    /* a key without expiry, written by someone else */
    rep = redisCommand(e->rc, "HSET %b someone 1", rk, rkl);
    assert_non_null(rep);
    freeReplyObject(rep);
    IT_EQ(rl_lock_is_locked(raw), 1);
    IT_RC(rl_lock_ttl(&ttl, raw), RL_OK);
    IT_EQ(ttl, -1);

    rl_lock_free(raw);
    rl_lock_free(other);
    rl_lock_free(l);
    rl_client_free(c);
}

struct lost_log {
    atomic_int calls;
    pthread_mutex_t mu;
    char name[64];
    size_t name_len;
};

static void on_lost(const char *name, size_t len, void *payload)
{
    struct lost_log *log = payload;
    pthread_mutex_lock(&log->mu);
    log->name_len = len;
    memcpy(log->name, name, len < sizeof log->name ? len : sizeof log->name);
    pthread_mutex_unlock(&log->mu);
    atomic_fetch_add(&log->calls, 1);
}

static void test_force_release(void **state)
{
    it_env *e = *state;
    struct lost_log log;
    rl_options o;
    rl_client *holder_c, *op_c;
    rl_lock *l, *op;
    char key[32];
    size_t kl = it_key(key, sizeof key, "rl:", "forced", 6, NULL);

    memset(&log, 0, sizeof log);
    atomic_init(&log.calls, 0);
    pthread_mutex_init(&log.mu, NULL);
    it_options(&o, e->redis->url, 600, 0);
    o.on_lost = on_lost;
    o.payload = &log;
    holder_c = it_client_opts(&o);
    op_c = it_client(e, 0);
    l = it_lock(holder_c, "forced");
    op = it_lock(op_c, "forced");

    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rl_lock_interrupted(l), 0);
    IT_EQ(rl_interrupted(), 0);

    IT_RC(rl_lock_force_release(op), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);
    /* renew interval 200 ms: flagged within a few of them */
    IT_WAIT(rl_lock_interrupted(l) == 1, 2000);
    IT_EQ(rl_interrupted(), 1);
    IT_WAIT(atomic_load(&log.calls) >= 1, 2000);
    pthread_mutex_lock(&log.mu);
    IT_EQ(log.name_len, 6);
    assert_memory_equal(log.name, "forced", 6);
    pthread_mutex_unlock(&log.mu);

    /* Someone else takes it meanwhile; the old holder's release reports the
     * loss and must not touch the new owner's lock. */
    IT_RC(rl_lock_try_acquire(op, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(l), RL_ELOST);
    IT_EQ(rl_lock_hold_count(l), 0);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 1);
    IT_EQ(rl_lock_hold_count(op), 1);
    IT_RC(rl_lock_release(op), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);

    /* The lost hold is gone: a fresh hold starts uninterrupted. */
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rl_lock_interrupted(l), 0);
    IT_EQ(rl_interrupted(), 0);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(atomic_load(&log.calls), 1);

    rl_lock_free(op);
    rl_lock_free(l);
    rl_client_free(op_c);
    rl_client_free(holder_c);
    pthread_mutex_destroy(&log.mu);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_other_thread_busy_and_timeout, it_setup,
                                        it_teardown),
        cmocka_unit_test_setup_teardown(test_other_process_busy_and_timeout, it_setup,
                                        it_teardown),
        cmocka_unit_test_setup_teardown(test_release_not_owner, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_is_locked_and_ttl, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_force_release, it_setup, it_teardown),
    };

    if (argc == 5 && strcmp(argv[1], "--child") == 0 && strcmp(argv[2], "try") == 0)
        return child_try(argv[3], argv[4]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
