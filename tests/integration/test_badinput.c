/*
 * Behaviour 9: bad input gets RL_EINVAL (or the stated status) and changes
 * nothing, in memory or in Redis; wrong key types, credentials and status
 * strings.
 */
#include "it_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A pointer value that must come back untouched. */
#define UNTOUCHED ((void *)(uintptr_t)0x5a5a5a50)

/* Keys in Redis, less the owner records of live clients (rl:owner:{..},
 * written by every client at creation): what bad input must not add to. */
static long long dbsize(it_env *e)
{
    redisReply *rep = redisCommand(e->rc, "EVAL %s 0",
                                   "local n = 0 for _, k in ipairs(redis.call('keys', '*')) do "
                                   "if not string.find(k, 'owner:{', 1, true) then n = n + 1 "
                                   "end end return n");
    long long n;
    if (rep == NULL || rep->type != REDIS_REPLY_INTEGER)
        fail_msg("counting keys failed");
    n = rep->integer;
    freeReplyObject(rep);
    return n;
}

static void test_null_arguments(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    rl_lock *l = it_lock(c, "nulls");
    rl_lock *out = UNTOUCHED;
    rl_options o;
    long ttl = 777;

    IT_RC(rl_options_init(NULL, RL_OPTIONS_VERSION), RL_EINVAL);
    it_options(&o, e->redis->url, 0, 0);
    IT_RC(rl_client_new(NULL, &o), RL_EINVAL);

    IT_RC(rl_lock_new(NULL, c, "x"), RL_EINVAL);
    IT_RC(rl_lock_new(&out, NULL, "x"), RL_EINVAL);
    assert_ptr_equal(out, UNTOUCHED);
    IT_RC(rl_lock_new(&out, c, NULL), RL_EINVAL);
    assert_ptr_equal(out, UNTOUCHED);
    IT_RC(rl_lock_new_bin(NULL, c, "x", 1), RL_EINVAL);
    IT_RC(rl_lock_new_bin(&out, NULL, "x", 1), RL_EINVAL);
    IT_RC(rl_lock_new_bin(&out, c, NULL, 1), RL_EINVAL);
    assert_ptr_equal(out, UNTOUCHED);

    IT_RC(rl_lock_acquire(NULL), RL_EINVAL);
    IT_RC(rl_lock_try_acquire(NULL, 0, RL_LEASE_WATCHDOG), RL_EINVAL);
    IT_RC(rl_lock_release(NULL), RL_EINVAL);
    IT_RC(rl_lock_force_release(NULL), RL_EINVAL);
    IT_RC(rl_lock_hold_count(NULL), RL_EINVAL);
    IT_RC(rl_lock_is_locked(NULL), RL_EINVAL);
    IT_RC(rl_lock_ttl(&ttl, NULL), RL_EINVAL);
    IT_EQ(ttl, 777);
    IT_RC(rl_lock_ttl(NULL, l), RL_EINVAL);
    IT_RC(rl_lock_interrupted(NULL), RL_EINVAL);
    rl_lock_free(NULL);
    rl_client_free(NULL);

    IT_EQ(dbsize(e), 0);
    IT_EQ(rl_lock_hold_count(l), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

static void test_name_length(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    rl_lock *out = UNTOUCHED, *l = NULL;
    char name[RL_NAME_MAX + 2];
    char key[RL_NAME_MAX + 16];
    size_t kl;

    IT_RC(rl_lock_new(&out, c, ""), RL_EINVAL);
    assert_ptr_equal(out, UNTOUCHED);
    IT_RC(rl_lock_new_bin(&out, c, "x", 0), RL_EINVAL);
    assert_ptr_equal(out, UNTOUCHED);

    memset(name, 'n', RL_NAME_MAX + 1);
    name[RL_NAME_MAX + 1] = '\0';
    IT_RC(rl_lock_new(&out, c, name), RL_EINVAL); /* 1025 bytes */
    assert_ptr_equal(out, UNTOUCHED);
    IT_RC(rl_lock_new_bin(&out, c, name, RL_NAME_MAX + 1), RL_EINVAL);
    assert_ptr_equal(out, UNTOUCHED);

    name[RL_NAME_MAX] = '\0'; /* 1024 bytes: allowed */
    IT_RC(rl_lock_new(&l, c, name), RL_OK);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    kl = it_key(key, sizeof key, "rl:", name, RL_NAME_MAX, NULL);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);
    rl_lock_free(l);

    /* a one-byte name is fine */
    IT_RC(rl_lock_new_bin(&l, c, "\0", 1), RL_OK);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);

    IT_EQ(dbsize(e), 0);
    rl_client_free(c);
}

static void test_bad_wait_and_lease(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    rl_lock *l = it_lock(c, "args");
    static const long bad_waits[] = { -2, -1000, -1000000 };
    static const long bad_leases[] = { 0, -2, -1000 };
    char key[32];
    size_t kl = it_key(key, sizeof key, "rl:", "args", 4, NULL);
    it_hash h;
    size_t i;

    for (i = 0; i < sizeof bad_waits / sizeof bad_waits[0]; i++)
        IT_RC(rl_lock_try_acquire(l, bad_waits[i], RL_LEASE_WATCHDOG), RL_EINVAL);
    for (i = 0; i < sizeof bad_leases / sizeof bad_leases[0]; i++)
        IT_RC(rl_lock_try_acquire(l, 0, bad_leases[i]), RL_EINVAL);
    IT_RC(rl_lock_try_acquire(l, -5, 0), RL_EINVAL);
    IT_EQ(rl_lock_hold_count(l), 0);
    IT_EQ(dbsize(e), 0);

    /* Same while held: the hold is not changed. */
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    for (i = 0; i < sizeof bad_waits / sizeof bad_waits[0]; i++)
        IT_RC(rl_lock_try_acquire(l, bad_waits[i], RL_LEASE_WATCHDOG), RL_EINVAL);
    for (i = 0; i < sizeof bad_leases / sizeof bad_leases[0]; i++)
        IT_RC(rl_lock_try_acquire(l, 0, bad_leases[i]), RL_EINVAL);
    IT_EQ(rl_lock_hold_count(l), 1);
    assert_int_equal(it_hgetall(e->rc, key, kl, &h), 0);
    IT_EQ(h.fields, 1);
    assert_string_equal(h.value, "1");

    /* RL_WAIT_FOREVER is not a bad wait: reentry returns at once. */
    IT_RC(rl_lock_try_acquire(l, RL_WAIT_FOREVER, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rl_lock_hold_count(l), 2);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(dbsize(e), 0);

    rl_lock_free(l);
    rl_client_free(c);
}

static void test_bad_urls(void **state)
{
    it_env *e = *state;
    char urls[10][128];
    rl_options o;
    size_t i, n = 0;

    snprintf(urls[n++], sizeof urls[0], "%s", "");
    snprintf(urls[n++], sizeof urls[0], "%s", "garbage");
    snprintf(urls[n++], sizeof urls[0], "http://127.0.0.1:%d", e->redis->port);
    snprintf(urls[n++], sizeof urls[0], "redis//127.0.0.1:%d", e->redis->port);
    snprintf(urls[n++], sizeof urls[0], "redis://127.0.0.1:%dx", e->redis->port);
    snprintf(urls[n++], sizeof urls[0], "redis://127.0.0.1:abc");
    snprintf(urls[n++], sizeof urls[0], "redis://127.0.0.1:99999");
    snprintf(urls[n++], sizeof urls[0], "redis://127.0.0.1:%d/notadb", e->redis->port);
    snprintf(urls[n++], sizeof urls[0], "redis://[::1:%d", e->redis->port);
    snprintf(urls[n++], sizeof urls[0], "redis://127.0.0.1:-5");

    for (i = 0; i < n; i++) {
        rl_client *c = UNTOUCHED;
        int rc;
        it_options(&o, urls[i], 0, 0);
        rc = rl_client_new(&c, &o);
        if (rc != RL_EINVAL)
            fail_msg("rl_client_new(\"%s\") = %d (%s), expected RL_EINVAL", urls[i], rc,
                     rl_strerror(rc));
        assert_ptr_equal(c, UNTOUCHED);
    }
}

static void test_bad_options(void **state)
{
    it_env *e = *state;
    rl_options o;
    rl_client *c = UNTOUCHED;

    it_options(&o, e->redis->url, 0, 0);
    o.version = 0;
    IT_RC(rl_client_new(&c, &o), RL_EINVAL);
    o.version = RL_OPTIONS_VERSION + 1;
    IT_RC(rl_client_new(&c, &o), RL_EINVAL);
    o.version = 9999;
    IT_RC(rl_client_new(&c, &o), RL_EINVAL);

    it_options(&o, e->redis->url, 600, 0);
    o.renew_interval_ms = 600; /* == lease */
    IT_RC(rl_client_new(&c, &o), RL_EINVAL);
    o.renew_interval_ms = 601;
    IT_RC(rl_client_new(&c, &o), RL_EINVAL);

    it_options(&o, e->redis->url, 0, 0);
    o.renew_interval_ms = 30000; /* == the default lease */
    IT_RC(rl_client_new(&c, &o), RL_EINVAL);

    it_options(&o, e->redis->url, -5, 0);
    IT_RC(rl_client_new(&c, &o), RL_EINVAL);
    it_options(&o, e->redis->url, 0, 0);
    o.pool_size = -1;
    IT_RC(rl_client_new(&c, &o), RL_EINVAL);
    assert_ptr_equal(c, UNTOUCHED);

    /* the same options, corrected, work */
    it_options(&o, e->redis->url, 600, 0);
    o.renew_interval_ms = 296; /* the longest that fits: (600 - 8) / 2 */
    c = NULL;
    IT_RC(rl_client_new(&c, &o), RL_OK);
    rl_client_free(c);
}

static void test_use_after_client_free(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    rl_lock *l = it_lock(c, "orphan");
    rl_lock *out = UNTOUCHED;
    char key[32];
    size_t kl = it_key(key, sizeof key, "rl:", "orphan", 6, NULL);
    long ttl = 777;
    int rc;

    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 1);
    rl_client_free(c);
    /* freeing the client released what the process held through it */
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);

    IT_RC(rl_lock_acquire(l), RL_ECANCELED);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_ECANCELED);
    IT_RC(rl_lock_release(l), RL_ECANCELED);
    if (!strstr(rl_last_error(), "the client was shut down") ||
        !strstr(rl_strerror(RL_ECANCELED), "shut down"))
        fail_msg("after the client's free: \"%s\" (%s)", rl_last_error(),
                 rl_strerror(RL_ECANCELED));
    IT_RC(rl_lock_force_release(l), RL_ECANCELED);
    IT_RC(rl_lock_is_locked(l), RL_ECANCELED);
    IT_RC(rl_lock_ttl(&ttl, l), RL_ECANCELED);
    IT_EQ(ttl, 777);
    rc = rl_lock_hold_count(l);
    if (rc >= 0)
        fail_msg("rl_lock_hold_count after client free = %d, expected a negative status", rc);
    /* The thread held it when the client went: that is a loss, told once. */
    IT_EQ(rl_lock_interrupted(l), 1);
    IT_EQ(rl_interrupted(), 1);
    IT_EQ(rl_interrupted(), 0);
    IT_EQ(rl_lock_interrupted(l), 0);

    /* The handle of a freed client is refused, not used. */
    IT_RC(rl_lock_new(&out, c, "late"), RL_EINVAL);
    assert_ptr_equal(out, UNTOUCHED);
    IT_EQ(dbsize(e), 0);

    rl_lock_free(l);
}

static void test_wrong_type_key(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    rl_lock *l = it_lock(c, "str");
    char key[32], type[32];
    size_t kl = it_key(key, sizeof key, "rl:", "str", 3, NULL);
    redisReply *rep;

    rep = redisCommand(e->rc, "SET %b hello", key, kl);
    assert_non_null(rep);
    freeReplyObject(rep);

    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_EREDIS);
    /* It names the key and the lock (Redis's WRONGTYPE names neither). */
    if (!strstr(rl_last_error(), "WRONGTYPE") || !strstr(rl_last_error(), "key rl:{str} ") ||
        !strstr(rl_last_error(), "lock 'str'"))
        fail_msg("rl_last_error() = \"%s\", expected WRONGTYPE, the key and the lock",
                 rl_last_error());
    IT_RC(rl_lock_force_release(l), RL_EREDIS);
    if (!strstr(rl_last_error(), "key rl:{str} "))
        fail_msg("force-release: rl_last_error() = \"%s\"", rl_last_error());
    /* a wait does not spin or time out on it: the same error at once */
    IT_RC(rl_lock_try_acquire(l, 3000, RL_LEASE_WATCHDOG), RL_EREDIS);
    IT_RC(rl_lock_try_acquire(l, 0, 5000), RL_EREDIS);
    IT_EQ(rl_lock_hold_count(l), 0);
    IT_RC(rl_lock_release(l), RL_ENOTOWNER);

    it_type(e->rc, key, kl, type, sizeof type);
    assert_string_equal(type, "string");
    rep = redisCommand(e->rc, "GET %b", key, kl);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    assert_string_equal(rep->str, "hello");
    freeReplyObject(rep);
    IT_EQ(rt_redis_pttl(e->rc, key, kl), -1);
    IT_EQ(dbsize(e), 1);

    rl_lock_free(l);
    rl_client_free(c);
}

/* Every message of the log callback, checked for a password (issue 21
 * item 11: the userinfo never reaches the log). */
static int log_leaks;

static void log_no_password(int level, const char *message, void *payload)
{
    (void)level;
    (void)payload;
    if (strstr(message, "hunter") || strstr(message, "p@ss") || strstr(message, "p%40ss") ||
        strstr(message, "wrong"))
        log_leaks++;
}

static void test_auth(void **state)
{
    it_env *e = *state;
    char url[256];
    rl_options o;
    rl_client *c = UNTOUCHED;
    rl_lock *l;
    int rc;

    /* no password */
    it_options(&o, e->redis->url, 0, 0);
    rc = rl_client_new(&c, &o);
    IT_RC(rc, RL_EAUTH);
    assert_ptr_equal(c, UNTOUCHED);
    /* a wrong one */
    log_leaks = 0;
    snprintf(url, sizeof url, "redis://:wrong@127.0.0.1:%d", e->redis->port);
    it_options(&o, url, 0, 0);
    o.log = log_no_password;
    IT_RC(rl_client_new(&c, &o), RL_EAUTH);
    assert_ptr_equal(c, UNTOUCHED);
    /* a wrong one with the ACL user; the detail never shows the password */
    snprintf(url, sizeof url, "redis://default:hunter%%32zz@127.0.0.1:%d", e->redis->port);
    it_options(&o, url, 0, 0);
    o.log = log_no_password;
    IT_RC(rl_client_new(&c, &o), RL_EAUTH);
    assert_ptr_equal(c, UNTOUCHED);
    if (strstr(rl_last_error(), "hunter") != NULL)
        fail_msg("rl_last_error() leaks the password: \"%s\"", rl_last_error());

    /* the right password, percent-encoded, with and without a user */
    snprintf(url, sizeof url, "redis://:%s@127.0.0.1:%d", IT_PASSWORD_ENC, e->redis->port);
    it_options(&o, url, 0, 0);
    o.log = log_no_password;
    c = it_client_opts(&o);
    l = it_lock(c, "authed");
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rl_lock_is_locked(l), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);

    snprintf(url, sizeof url, "redis://default:%s@127.0.0.1:%d/0", IT_PASSWORD_ENC,
             e->redis->port);
    it_options(&o, url, 0, 0);
    o.log = log_no_password;
    c = it_client_opts(&o);
    rl_client_free(c);
    IT_EQ(log_leaks, 0);
}

static void test_unreachable(void **state)
{
    it_env *e = *state;
    rl_options o;
    rl_client *c = UNTOUCHED;
    char url[64];
    int port = e->redis->port;

    /* Nothing listens there once the server is gone. */
    redisFree(e->rc);
    e->rc = NULL;
    assert_int_equal(rt_redis_kill(e->redis), 0);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    it_options(&o, url, 0, 500);
    o.connect_timeout_ms = 500;
    IT_RC(rl_client_new(&c, &o), RL_ECONN);
    assert_ptr_equal(c, UNTOUCHED);
    assert_true(rl_last_error()[0] != '\0');
}

static int last_error_of_fresh_thread(void *arg)
{
    (void)arg;
    return rl_last_error() != NULL && rl_last_error()[0] == '\0';
}

static void test_status_strings(void **state)
{
    static const int codes[] = { RL_OK,     RL_EBUSY,  RL_ETIMEDOUT, RL_ENOTOWNER,
                                 RL_ELOST,  RL_EINVAL, RL_ENOMEM,    RL_ECONN,
                                 RL_EREDIS, RL_EPROTO, RL_EAUTH };
    size_t i, j;
    (void)state;

    for (i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        const char *s = rl_strerror(codes[i]);
        assert_non_null(s);
        if (s[0] == '\0')
            fail_msg("rl_strerror(%d) is empty", codes[i]);
        for (j = 0; j < i; j++) {
            if (strcmp(s, rl_strerror(codes[j])) == 0)
                fail_msg("rl_strerror(%d) == rl_strerror(%d) == \"%s\"", codes[i], codes[j],
                         s);
        }
    }
    assert_non_null(rl_strerror(-999));
    assert_non_null(rl_strerror(42));
    assert_non_null(rl_last_error());
    IT_EQ(it_on_thread(last_error_of_fresh_thread, NULL, 10000), 1);
    /* after a failure there is a detail, and never NULL */
    IT_RC(rl_lock_new(NULL, NULL, NULL), RL_EINVAL);
    assert_non_null(rl_last_error());
    assert_non_null(rl_version());
    assert_string_equal(rl_version(), RL_VERSION_STRING);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_null_arguments, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_name_length, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_bad_wait_and_lease, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_bad_urls, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_bad_options, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_use_after_client_free, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_wrong_type_key, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_auth, it_setup_auth, it_teardown),
        cmocka_unit_test_setup_teardown(test_unreachable, it_setup, it_teardown),
        cmocka_unit_test(test_status_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
