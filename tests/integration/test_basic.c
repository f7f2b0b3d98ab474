/*
 * Behaviour 1: a lock is the Redis hash <prefix>{<name>} with one field
 * "<uuid>:<thread id>" whose value is the reentry count; the last release
 * deletes it and publishes on <prefix>{<name>}:release.
 */
#include "it_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_hash_layout(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    rl_lock *l = it_lock(c, "layout");
    char key[64];
    size_t kl = it_key(key, sizeof key, "rl:", "layout", 6, NULL);
    it_hash h;

    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rl_lock_hold_count(l), 1);

    assert_int_equal(it_hgetall(e->rc, key, kl, &h), 0);
    IT_EQ(h.fields, 1);
    if (!it_owner_field_ok(h.field, h.field_len))
        fail_msg("owner field \"%s\" is not <36-char uuid>:<decimal>", h.field);
    assert_string_equal(h.value, "1");
    /* A watchdog lease: default 30 s, set on the key. */
    IT_RANGE(rt_redis_pttl(e->rc, key, kl), 1, 30000);

    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(rl_lock_hold_count(l), 0);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

static void test_reentry_1000(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    rl_lock *l = it_lock(c, "deep");
    char key[64];
    size_t kl = it_key(key, sizeof key, "rl:", "deep", 4, NULL);
    char field[128];
    it_hash h;
    int i;

    for (i = 1; i <= 1000; i++) {
        int rc = rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG);
        if (rc != RL_OK)
            fail_msg("acquire #%d = %d (%s): %s", i, rc, rl_strerror(rc), rl_last_error());
    }
    IT_EQ(rl_lock_hold_count(l), 1000);
    assert_int_equal(it_hgetall(e->rc, key, kl, &h), 0);
    IT_EQ(h.fields, 1);
    assert_string_equal(h.value, "1000");
    snprintf(field, sizeof field, "%s", h.field);

    for (i = 1000; i > 1; i--) {
        int rc = rl_lock_release(l);
        if (rc != RL_OK)
            fail_msg("release at depth %d = %d (%s)", i, rc, rl_strerror(rc));
    }
    IT_EQ(rl_lock_hold_count(l), 1);
    assert_int_equal(it_hgetall(e->rc, key, kl, &h), 0);
    IT_EQ(h.fields, 1);
    assert_string_equal(h.field, field); /* same owner all along */
    assert_string_equal(h.value, "1");
    IT_RANGE(rt_redis_pttl(e->rc, key, kl), 1, 30000);

    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(rl_lock_hold_count(l), 0);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);
    /* One more release is not ours any more and changes nothing. */
    IT_RC(rl_lock_release(l), RL_ENOTOWNER);
    IT_EQ(rl_lock_hold_count(l), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

/* Read push messages from a subscribed context until `sentinel` arrives on
 * `channel`; count the other messages on it. -1 on error. */
static int count_until_sentinel(redisContext *sub, const char *channel, size_t chlen,
                                const char *sentinel)
{
    int count = 0;
    for (;;) {
        redisReply *rep = NULL;
        int is_sentinel;
        if (redisGetReply(sub, (void **)&rep) != REDIS_OK || rep == NULL)
            return -1;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 3 ||
            strcmp(rep->element[0]->str, "message") != 0) {
            freeReplyObject(rep);
            continue;
        }
        if (rep->element[1]->len != chlen || memcmp(rep->element[1]->str, channel, chlen) != 0) {
            freeReplyObject(rep);
            continue;
        }
        is_sentinel = strcmp(rep->element[2]->str, sentinel) == 0;
        freeReplyObject(rep);
        if (is_sentinel)
            return count;
        count++;
    }
}

static void check_release_publishes(it_env *e, const char *prefix, const char *name)
{
    rl_options o;
    rl_client *c;
    rl_lock *l;
    redisContext *sub = rt_redis_connect(e->redis);
    char ch[128], key[128];
    size_t chl = it_key(ch, sizeof ch, prefix, name, strlen(name), ":release");
    size_t kl = it_key(key, sizeof key, prefix, name, strlen(name), NULL);
    redisReply *rep;

    assert_non_null(sub);
    it_options(&o, e->redis->url, 0, 0);
    if (strcmp(prefix, "rl:") != 0)
        o.key_prefix = prefix;
    c = it_client_opts(&o);
    l = it_lock(c, name);

    rep = redisCommand(sub, "SUBSCRIBE %b", ch, chl);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    freeReplyObject(rep);

    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 1);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK); /* 2 -> 1: still held, no notice */
    IT_EQ(rt_redis_exists(e->rc, key, kl), 1);
    IT_RC(rl_lock_release(l), RL_OK); /* 1 -> 0: deleted and published */
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);

    /* Messages on one channel arrive in order: everything the library
     * published comes before our sentinel. Exactly one release notice. */
    rep = redisCommand(e->rc, "PUBLISH %b %s", ch, chl, "it-sentinel");
    assert_non_null(rep);
    freeReplyObject(rep);
    IT_EQ(count_until_sentinel(sub, ch, chl, "it-sentinel"), 1);

    redisFree(sub);
    rl_lock_free(l);
    rl_client_free(c);
}

static void test_release_publishes(void **state)
{
    check_release_publishes(*state, "rl:", "pub");
}

static void test_custom_key_prefix(void **state)
{
    it_env *e = *state;
    rl_options o;
    rl_client *c;
    rl_lock *l;
    char key[64], dflt[64];
    size_t kl = it_key(key, sizeof key, "myapp:locks:", "pfx", 3, NULL);
    size_t dl = it_key(dflt, sizeof dflt, "rl:", "pfx", 3, NULL);
    it_hash h;

    it_options(&o, e->redis->url, 0, 0);
    o.key_prefix = "myapp:locks:";
    c = it_client_opts(&o);
    l = it_lock(c, "pfx");
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 1);
    IT_EQ(rt_redis_exists(e->rc, dflt, dl), 0);
    assert_int_equal(it_hgetall(e->rc, key, kl, &h), 0);
    IT_EQ(h.fields, 1);
    assert_string_equal(h.value, "1");
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);
    rl_lock_free(l);
    rl_client_free(c);

    /* The release notice uses the custom prefix too. */
    check_release_publishes(e, "myapp:locks:", "pfx2");
}

static void test_binary_name(void **state)
{
    it_env *e = *state;
    static const char n1[] = { 'a', '\0', 'b' };
    static const char n2[] = { 'a', '\0', 'c' };
    rl_client *c = it_client(e, 0);
    rl_lock *l1 = NULL, *l2 = NULL, *la = it_lock(c, "a");
    char k1[32], k2[32], ka[32];
    size_t k1l = it_key(k1, sizeof k1, "rl:", n1, 3, NULL);
    size_t k2l = it_key(k2, sizeof k2, "rl:", n2, 3, NULL);
    size_t kal = it_key(ka, sizeof ka, "rl:", "a", 1, NULL);
    it_acq other;

    IT_RC(rl_lock_new_bin(&l1, c, n1, sizeof n1), RL_OK);
    IT_RC(rl_lock_new_bin(&l2, c, n2, sizeof n2), RL_OK);

    /* Three different locks: "a\0b", "a\0c" and "a" are not truncated to "a". */
    IT_RC(rl_lock_try_acquire(l1, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rl_lock_hold_count(l2), 0);
    IT_EQ(rl_lock_hold_count(la), 0);
    IT_RC(rl_lock_try_acquire(l2, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, k1, k1l), 1);
    IT_EQ(rt_redis_exists(e->rc, k2, k2l), 1);
    IT_EQ(rt_redis_exists(e->rc, ka, kal), 0);
    IT_EQ(rl_lock_is_locked(la), 0);
    IT_EQ(rl_lock_is_locked(l1), 1);

    /* Another thread: "a\0b" is busy, "a" is free. */
    memset(&other, 0, sizeof other);
    other.lock = l1;
    other.wait_ms = 0;
    other.lease_ms = RL_LEASE_WATCHDOG;
    it_acq_start(&other);
    assert_int_equal(it_acq_join(&other, 10000), 0);
    IT_RC(other.rc, RL_EBUSY);

    memset(&other, 0, sizeof other);
    other.lock = la;
    other.wait_ms = 0;
    other.lease_ms = RL_LEASE_WATCHDOG;
    it_acq_start(&other);
    assert_int_equal(it_acq_join(&other, 10000), 0);
    IT_RC(other.rc, RL_OK);
    IT_RC(other.release_rc, RL_OK);

    IT_RC(rl_lock_release(l1), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, k1, k1l), 0);
    IT_EQ(rt_redis_exists(e->rc, k2, k2l), 1);
    IT_RC(rl_lock_release(l2), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, k2, k2l), 0);

    rl_lock_free(l1);
    rl_lock_free(l2);
    rl_lock_free(la);
    rl_client_free(c);
}

/* Threads get different owner fields; one process shares one uuid. */
static void test_owner_per_thread(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    rl_lock *l = it_lock(c, "owner");
    char key[64], mine[128];
    size_t kl = it_key(key, sizeof key, "rl:", "owner", 5, NULL);
    it_hash h;
    it_acq other;

    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    assert_int_equal(it_hgetall(e->rc, key, kl, &h), 0);
    snprintf(mine, sizeof mine, "%s", h.field);
    IT_RC(rl_lock_release(l), RL_OK);

    memset(&other, 0, sizeof other);
    other.lock = l;
    other.wait_ms = 0;
    other.lease_ms = RL_LEASE_WATCHDOG;
    other.hold = 1;
    it_acq_start(&other);
    IT_WAIT(atomic_load(&other.state) >= 2, 10000);
    IT_RC(other.rc, RL_OK);
    assert_int_equal(it_hgetall(e->rc, key, kl, &h), 0);
    IT_EQ(h.fields, 1);
    if (!it_owner_field_ok(h.field, h.field_len))
        fail_msg("owner field \"%s\" is malformed", h.field);
    /* same process uuid, different thread id */
    assert_memory_equal(h.field, mine, 37);
    assert_string_not_equal(h.field, mine);
    it_acq_let_go(&other);
    assert_int_equal(it_acq_join(&other, 10000), 0);
    IT_RC(other.release_rc, RL_OK);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);

    rl_lock_free(l);
    rl_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hash_layout, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_reentry_1000, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_release_publishes, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_custom_key_prefix, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_binary_name, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_owner_per_thread, it_setup, it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
