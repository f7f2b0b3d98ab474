/*
 * Behaviour 7: a fork() child is a new owner. Using the client and lock
 * handles it inherited, it holds nothing, is refused the parent's lock,
 * cannot release it, and can use other locks; the parent's hold survives
 * the child, also when the parent had a thread waiting at fork time.
 */
#include "it_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * ThreadSanitizer cannot follow a child of a multi-threaded process that
 * starts threads of its own ("dup thread with used id"), which is exactly
 * what these tests do. Under TSan they are skipped; ASan/UBSan/valgrind
 * builds run them.
 */
#if defined(__SANITIZE_THREAD__)
#define IT_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define IT_UNDER_TSAN 1
#endif
#endif

static void skip_under_tsan(void)
{
#ifdef IT_UNDER_TSAN
    print_message("fork() tests are not supported by ThreadSanitizer: skipped\n");
    skip();
#endif
}

struct child_ctx {
    rt_redis *redis;
    rl_client *c;    /* inherited */
    rl_lock *held;   /* inherited handle on the lock the parent holds */
    const char *parent_field;
    const char *other_name;
    int result_fd; /* the child writes its result code here */
};

/* Result codes name the failed check. */
static int child_checks(struct child_ctx *x)
{
    rl_lock *other = NULL;
    redisContext *rc;
    char key[64];
    size_t kl = it_key(key, sizeof key, "rl:", x->other_name, strlen(x->other_name), NULL);
    it_hash h;
    int code = 0;

    if (rl_lock_hold_count(x->held) != 0)
        return 20;
    if (rl_interrupted() != 0)
        return 21;
    if (rl_lock_interrupted(x->held) != 0)
        return 22;
    if (rl_lock_try_acquire(x->held, 0, RL_LEASE_WATCHDOG) != RL_EBUSY)
        return 23;
    if (rl_lock_release(x->held) != RL_ENOTOWNER)
        return 24;
    if (rl_lock_try_acquire(x->held, 200, RL_LEASE_WATCHDOG) != RL_ETIMEDOUT)
        return 25;
    if (rl_lock_new(&other, x->c, x->other_name) != RL_OK)
        return 26;
    if (rl_lock_try_acquire(other, 0, RL_LEASE_WATCHDOG) != RL_OK)
        return 27;
    if (rl_lock_hold_count(other) != 1)
        return 28;
    rc = rt_redis_connect(x->redis);
    if (rc == NULL)
        return 29;
    if (it_hgetall(rc, key, kl, &h) != 0 || h.fields != 1 || strcmp(h.value, "1") != 0)
        code = 30;
    /* a new process identity: not the parent's uuid */
    else if (!it_owner_field_ok(h.field, h.field_len) ||
             memcmp(h.field, x->parent_field, 36) == 0)
        code = 31;
    else if (rl_lock_release(other) != RL_OK)
        code = 32;
    else if (rt_redis_exists(rc, key, kl) != 0)
        code = 33;
    redisFree(rc);
    rl_lock_free(other);
    /* Freeing the inherited client must not touch the parent's locks. */
    rl_client_free(x->c);
    return code;
}

/*
 * The child reports through a pipe rather than its exit status: under
 * valgrind a forked child's exit status also carries leak findings about
 * memory that belonged to the parent's other threads (a waiting thread's
 * stack, say), which do not exist in the child.
 */
static int child_main(void *arg)
{
    struct child_ctx *x = arg;
    unsigned char code = (unsigned char)child_checks(x);
    rt_write_all(x->result_fd, &code, 1);
    return code;
}

/* Run the child and return its result code (-1: no result). */
static int run_child(struct child_ctx *x)
{
    int fds[2];
    unsigned char code;
    pid_t pid;
    int got, st;

    if (rt_pipe(fds) != 0)
        return -1;
    x->result_fd = fds[1];
    pid = rt_child_start(child_main, x, 60);
    rt_close(&fds[1]);
    if (pid < 0) {
        rt_close(&fds[0]);
        return -1;
    }
    got = rt_read_full(fds[0], &code, 1, 30000);
    rt_close(&fds[0]);
    st = rt_child_wait(pid, 30000);
    if (got != 0) {
        fprintf(stderr, "fork child gave no result (exit status %d)\n", st);
        return -1;
    }
    if (st < 0 || st >= 128) {
        fprintf(stderr, "fork child ended badly (status %d)\n", st);
        return -1;
    }
    return code;
}

static const char *const child_codes =
    "20 hold_count, 21 rl_interrupted, 22 rl_lock_interrupted, 23 try not EBUSY, "
    "24 release not ENOTOWNER, 25 wait not ETIMEDOUT, 26 lock_new, 27 acquire other, "
    "28 other hold_count, 29 connect, 30 other hash, 31 owner uuid, 32 release other, "
    "33 other key left";

static void test_fork_child_is_new_owner(void **state)
{
    it_env *e = *state;
    rl_client *c;
    rl_lock *l;
    char key[32], field[128];
    size_t kl = it_key(key, sizeof key, "rl:", "forked", 6, NULL);
    struct child_ctx x;
    it_hash h;
    int64_t t0;
    int code;

    skip_under_tsan();
    c = it_client(e, 600);
    l = it_lock(c, "forked");
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    assert_int_equal(it_hgetall(e->rc, key, kl, &h), 0);
    snprintf(field, sizeof field, "%s", h.field);

    x.redis = e->redis;
    x.c = c;
    x.held = l;
    x.parent_field = field;
    x.other_name = "child-only";
    code = run_child(&x);
    if (code != 0)
        fail_msg("child failed with code %d (%s)", code, child_codes);

    /* The parent's hold is intact, and stays kept by its watchdog. */
    IT_EQ(rl_lock_hold_count(l), 2);
    assert_int_equal(it_hgetall(e->rc, key, kl, &h), 0);
    IT_EQ(h.fields, 1);
    assert_string_equal(h.field, field);
    assert_string_equal(h.value, "2");
    t0 = rt_now_ms();
    while (rt_now_ms() - t0 < 1500) {
        IT_EQ(rl_lock_interrupted(l), 0);
        IT_RANGE(rt_redis_pttl(e->rc, key, kl), 1, 600);
        rt_sleep_ms(50);
    }
    IT_RC(rl_lock_release(l), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);

    rl_lock_free(l);
    rl_client_free(c);
}

static void test_fork_while_a_thread_waits(void **state)
{
    it_env *e = *state;
    rl_client *c;
    rl_lock *l;
    char key[32], field[128];
    size_t kl = it_key(key, sizeof key, "rl:", "busyfork", 8, NULL);
    struct child_ctx x;
    it_hash h;
    it_acq w;
    int code;
    int64_t released_us;

    skip_under_tsan();
    c = it_client(e, 600);
    l = it_lock(c, "busyfork");
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    assert_int_equal(it_hgetall(e->rc, key, kl, &h), 0);
    snprintf(field, sizeof field, "%s", h.field);

    memset(&w, 0, sizeof w);
    w.lock = l;
    w.wait_ms = 30000;
    w.lease_ms = RL_LEASE_WATCHDOG;
    it_acq_start(&w);
    IT_WAIT(atomic_load(&w.state) == 1 && rt_now_us() - w.t_call_us >= 300000, 10000);

    x.redis = e->redis;
    x.c = c;
    x.held = l;
    x.parent_field = field;
    x.other_name = "child-only-2";
    code = run_child(&x);
    if (code != 0)
        fail_msg("child failed with code %d (%s)", code, child_codes);

    /* Parent: still the holder, the waiter still waits. */
    IT_EQ(atomic_load(&w.state), 1);
    IT_EQ(rl_lock_hold_count(l), 1);
    IT_EQ(rl_lock_interrupted(l), 0);
    assert_int_equal(it_hgetall(e->rc, key, kl, &h), 0);
    IT_EQ(h.fields, 1);
    assert_string_equal(h.field, field);

    released_us = rt_now_us();
    IT_RC(rl_lock_release(l), RL_OK);
    if (it_acq_join(&w, 10000) != 0)
        fail_msg("the parent's waiter did not get the lock after the release");
    IT_RC(w.rc, RL_OK);
    IT_RC(w.release_rc, RL_OK);
    IT_RANGE((w.t_return_us - released_us) / 1000, 0, 1000);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);

    rl_lock_free(l);
    rl_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fork_child_is_new_owner, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_fork_while_a_thread_waits, it_setup, it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
