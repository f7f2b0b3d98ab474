/*
 * Behaviours 4 and 5: the watchdog keeps watchdog leases alive, notices a
 * lost lock (deleted key, expired fixed lease) and raises the interrupt
 * flag, and with Redis frozen the flag rises no later than the lease end.
 */
#include "it_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void log_init(struct lost_log *log)
{
    memset(log, 0, sizeof *log);
    atomic_init(&log->calls, 0);
    pthread_mutex_init(&log->mu, NULL);
}

static void assert_lost_name(struct lost_log *log, const char *name)
{
    size_t n = strlen(name);
    pthread_mutex_lock(&log->mu);
    if (log->name_len != n || memcmp(log->name, name, n) != 0)
        fail_msg("on_lost got name of %zu bytes, expected \"%s\"", log->name_len, name);
    pthread_mutex_unlock(&log->mu);
}

static rl_client *client_with_log(it_env *e, long lease_ms, long cmd_timeout_ms,
                                  struct lost_log *log)
{
    rl_options o;
    it_options(&o, e->redis->url, lease_ms, cmd_timeout_ms);
    if (cmd_timeout_ms > 0)
        o.connect_timeout_ms = cmd_timeout_ms;
    o.on_lost = on_lost;
    o.payload = log;
    return it_client_opts(&o);
}

static void test_watchdog_keeps_lease(void **state)
{
    it_env *e = *state;
    struct lost_log log;
    rl_client *c;
    rl_lock *l;
    char key[32];
    size_t kl = it_key(key, sizeof key, "rl:", "kept", 4, NULL);
    int64_t start;
    long long pttl;
    int samples = 0;
    it_hash h;

    log_init(&log);
    c = client_with_log(e, 600, 0, &log);
    l = it_lock(c, "kept");
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    start = rt_now_ms();
    /* Five leases and more: still held, never flagged. */
    while (rt_now_ms() - start < 3000) {
        pttl = rt_redis_pttl(e->rc, key, kl);
        if (pttl <= 0)
            fail_msg("PTTL %lld after %lld ms: the lease was not renewed", pttl,
                     (long long)(rt_now_ms() - start));
        if (pttl > 600)
            fail_msg("PTTL %lld exceeds the 600 ms lease", pttl);
        IT_EQ(rl_interrupted(), 0);
        IT_EQ(rl_lock_interrupted(l), 0);
        samples++;
        rt_sleep_ms(20);
    }
    assert_true(samples > 20);
    IT_EQ(atomic_load(&log.calls), 0);
    assert_int_equal(it_hgetall(e->rc, key, kl, &h), 0);
    IT_EQ(h.fields, 1);
    assert_string_equal(h.value, "1");
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);
    IT_EQ(atomic_load(&log.calls), 0);

    rl_lock_free(l);
    rl_client_free(c);
    pthread_mutex_destroy(&log.mu);
}

static void test_watchdog_flags_deleted_key(void **state)
{
    it_env *e = *state;
    struct lost_log log;
    rl_client *c;
    rl_lock *l;
    char key[32];
    size_t kl = it_key(key, sizeof key, "rl:", "wd-del", 6, NULL);
    redisReply *rep;

    log_init(&log);
    c = client_with_log(e, 600, 0, &log);
    l = it_lock(c, "wd-del");
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rl_interrupted(), 0);

    rep = redisCommand(e->rc, "DEL %b", key, kl);
    assert_non_null(rep);
    IT_EQ(rep->integer, 1);
    freeReplyObject(rep);

    IT_WAIT(rl_interrupted() == 1, 2000);
    IT_EQ(rl_lock_interrupted(l), 1);
    IT_WAIT(atomic_load(&log.calls) >= 1, 2000);
    assert_lost_name(&log, "wd-del");
    /* The watchdog stopped renewing it: the key is not brought back. */
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);

    IT_RC(rl_lock_release(l), RL_ELOST);
    IT_EQ(rl_lock_hold_count(l), 0);
    IT_EQ(rl_interrupted(), 0);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);
    IT_EQ(atomic_load(&log.calls), 1);

    rl_lock_free(l);
    rl_client_free(c);
    pthread_mutex_destroy(&log.mu);
}

static void test_fixed_lease_expires(void **state)
{
    it_env *e = *state;
    struct lost_log log;
    rl_client *c;
    rl_lock *l;
    char key[32];
    size_t kl = it_key(key, sizeof key, "rl:", "fixed", 5, NULL);
    int64_t t0;
    int rc;

    log_init(&log);
    c = client_with_log(e, 600, 0, &log); /* watchdog active, but not for this hold */
    l = it_lock(c, "fixed");
    t0 = rt_now_ms();
    IT_RC(rl_lock_try_acquire(l, 0, 500), RL_OK);
    IT_RANGE(rt_redis_pttl(e->rc, key, kl), 1, 500);
    IT_EQ(rl_lock_interrupted(l), 0);

    /* Nobody touches it: it runs out by itself (no renewal), */
    IT_WAIT(rt_redis_exists(e->rc, key, kl) == 0, 3000);
    IT_RANGE(rt_now_ms() - t0, 400, 3000);
    /* and by then its holder already knows (no I/O needed for that). */
    IT_EQ(rl_lock_interrupted(l), 1);
    IT_EQ(rl_interrupted(), 1);
    IT_WAIT(atomic_load(&log.calls) == 1, 2000);
    assert_lost_name(&log, "fixed");

    rc = rl_lock_release(l);
    if (rc != RL_ELOST && rc != RL_ENOTOWNER)
        fail_msg("release of an expired fixed lease = %d (%s)", rc, rl_strerror(rc));
    IT_EQ(rl_lock_hold_count(l), 0);
    IT_EQ(rl_interrupted(), 0);
    IT_EQ(atomic_load(&log.calls), 1);

    rl_lock_free(l);
    rl_client_free(c);
    pthread_mutex_destroy(&log.mu);
}

/* Sample the PTTL; 1 when it rose since the last sample (a renewal). */
static int pttl_went_up(redisContext *rc, const char *key, size_t kl, long long *last)
{
    long long p = rt_redis_pttl(rc, key, kl);
    int up = p > *last;
    *last = p;
    return up;
}

#define PAUSE_LEASE_MS 900
#define POLL_SLACK_MS 100

static void test_paused_redis_flags_by_lease_end(void **state)
{
    it_env *e = *state;
    struct lost_log log;
    rl_client *c;
    rl_lock *l;
    char key[32];
    size_t kl = it_key(key, sizeof key, "rl:", "frozen", 6, NULL);
    long long last;
    int64_t paused_at, flagged_at = -1;
    int rc;

    log_init(&log);
    c = client_with_log(e, PAUSE_LEASE_MS, 200, &log);
    l = it_lock(c, "frozen");
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);

    /* Steady state: see one renewal happen (PTTL goes up again). */
    last = rt_redis_pttl(e->rc, key, kl);
    IT_RANGE(last, 1, PAUSE_LEASE_MS);
    IT_WAIT(pttl_went_up(e->rc, key, kl, &last), 2000);
    IT_EQ(rl_interrupted(), 0);

    /* Freeze Redis. Every renewal the client could have had confirmed was
     * confirmed before this instant, so the key lives at most until
     * paused_at + lease: the flag must be up by then. */
    paused_at = rt_now_ms();
    assert_int_equal(rt_redis_pause(e->redis), 0);
    while (rt_now_ms() - paused_at < PAUSE_LEASE_MS + 2000) {
        if (rl_interrupted() == 1) {
            flagged_at = rt_now_ms();
            break;
        }
        rt_sleep_ms(1);
    }
    if (flagged_at < 0) {
        rt_redis_resume(e->redis);
        fail_msg("rl_interrupted() still 0 %d ms after Redis froze (lease %d ms)",
                 PAUSE_LEASE_MS + 2000, PAUSE_LEASE_MS);
    }
    if (flagged_at - paused_at > PAUSE_LEASE_MS + POLL_SLACK_MS) {
        rt_redis_resume(e->redis);
        fail_msg("flag rose %lld ms after Redis froze: later than the lease (%d ms)",
                 (long long)(flagged_at - paused_at), PAUSE_LEASE_MS);
    }
    IT_EQ(rl_lock_interrupted(l), 1);
    IT_WAIT(atomic_load(&log.calls) == 1, 3000);
    assert_lost_name(&log, "frozen");

    assert_int_equal(rt_redis_resume(e->redis), 0);
    rc = rl_lock_release(l);
    IT_RC(rc, RL_ELOST);
    IT_EQ(rl_lock_hold_count(l), 0);

    /* Redis is back: the client works again. */
    IT_RC(rl_lock_try_acquire(l, 5000, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rl_interrupted(), 0);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);

    rl_lock_free(l);
    rl_client_free(c);
    pthread_mutex_destroy(&log.mu);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_watchdog_keeps_lease, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_watchdog_flags_deleted_key, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_fixed_lease_expires, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_paused_redis_flags_by_lease_end, it_setup,
                                        it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
