/*
 * rlock on a Redis Cluster node: one redis-server started with
 * --cluster-enabled yes that owns all 16384 slots, reached by a plain
 * redis:// client. Such a node refuses a command or script whose keys lie
 * in different slots (CROSSSLOT), so these tests prove that every key and
 * channel of a name share one slot, whatever its bytes, and that the
 * watchdog renews holds of different slots without mixing them in a call.
 * The last test checks that a server NOT in cluster mode still gets
 * cross-slot renewal batches (a few calls for thousands of holds).
 */
#include "it_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOLD_LEASE_MS 20000
#define WOKEN_WITHIN_MS 1000

static long long keyslot(redisContext *rc, const void *key, size_t len)
{
    redisReply *r = redisCommand(rc, "CLUSTER KEYSLOT %b", key, len);
    long long slot = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

    if (slot < 0)
        fail_msg("CLUSTER KEYSLOT: %s", r && r->type == REDIS_REPLY_ERROR ? r->str : "no reply");
    freeReplyObject(r);
    return slot;
}

/* The only lock key under rl: (the test holds one lock at a time; the
 * client's owner record rl:owner:{..} is not one), into buf. */
static size_t the_lock_key(redisContext *rc, char *buf, size_t cap)
{
    redisReply *r = redisCommand(rc, "KEYS rl:{*");
    size_t n;

    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 1)
        fail_msg("KEYS rl:{* found %zu keys, expected the lock's one",
                 r && r->type == REDIS_REPLY_ARRAY ? r->elements : 0);
    n = r->element[0]->len;
    if (n > cap)
        fail_msg("lock key of %zu bytes", n);
    memcpy(buf, r->element[0]->str, n);
    freeReplyObject(r);
    return n;
}

/* (a) Names whose tag 0.1 cut short or left empty: a full cycle each. */
static void test_brace_names_one_slot(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    static char big[RL_NAME_MAX];
    struct { const char *name; size_t len; } names[] = {
        { "}x", 2 }, { "}}", 2 }, { "a}b", 3 }, { "{x}", 3 }, { "x{", 2 },
        { "\0a", 2 }, { "\\}x", 3 }, { big, sizeof big },
    };
    static char key[RL_NAME_MAX + 64], want[RL_NAME_MAX + 64], chan[RL_NAME_MAX + 64];
    size_t i;

    memset(big, '}', sizeof big);
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        rl_lock *l = NULL;
        size_t kl, wl;
        it_hash h;

        IT_RC(rl_lock_new_bin(&l, c, names[i].name, names[i].len), RL_OK);
        IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
        IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
        IT_EQ(rl_lock_hold_count(l), 2);
        kl = the_lock_key(e->rc, key, sizeof key);
        assert_int_equal(it_hgetall(e->rc, key, kl, &h), 0);
        assert_string_equal(h.value, "2");
        /* The release script names the lock and its channel: one slot, or
         * the node refuses it (CROSSSLOT) and the lock stays taken. */
        IT_RC(rl_lock_release(l), RL_OK);
        IT_RC(rl_lock_release(l), RL_OK);
        IT_EQ(rl_lock_hold_count(l), 0);
        IT_EQ(rt_redis_exists(e->rc, key, kl), 0);
        memcpy(chan, key, kl);
        memcpy(chan + kl, ":release", 8);
        IT_EQ(keyslot(e->rc, chan, kl + 8), keyslot(e->rc, key, kl));
        /* The documented layout, escape included (it_key knows it). */
        wl = it_key(want, sizeof want, "rl:", names[i].name, names[i].len, NULL);
        if (kl != wl || memcmp(key, want, kl) != 0)
            fail_msg("name #%zu: key of %zu bytes, not the documented one (%zu bytes)", i,
                     kl, wl);
        /* Force-release (lock and channel in one script) works too; the
         * holder is flagged and its release says so. */
        IT_RC(rl_lock_try_acquire(l, 0, 5000), RL_OK);
        IT_RC(rl_lock_force_release(l), RL_OK);
        IT_EQ(rt_redis_exists(e->rc, key, kl), 0);
        IT_EQ(rl_lock_interrupted(l), 1);
        IT_RC(rl_lock_release(l), RL_ELOST);
        IT_EQ(rl_interrupted(), 0);
        rl_lock_free(l);
    }
    rl_client_free(c);
}

/* (b) The watchdog renews holds of many slots, and several holds of one
 * slot, on a node that refuses cross-slot scripts. */
#define NHELD 12
static void test_watchdog_many_slots(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 600);
    static const char *const names[NHELD] = {
        "a}1", "a}2", "alpha", "beta", "gamma", "{t}1", "{t}2", "{t}3", "x}y", "z{", "q{", "w",
    };
    rl_lock *l[NHELD];
    char key[NHELD][64];
    size_t kl[NHELD];
    long long slot[NHELD];
    int i, distinct = 0, samples = 0;
    int64_t start;

    for (i = 0; i < NHELD; i++) {
        l[i] = it_lock(c, names[i]);
        kl[i] = it_key(key[i], sizeof key[i], "rl:", names[i], strlen(names[i]), NULL);
        IT_RC(rl_lock_try_acquire(l[i], 0, RL_LEASE_WATCHDOG), RL_OK);
    }
    /* The set spans several slots, and some share one: "{t}1".."{t}3", and
     * "a}1" and "a}2" (their tag is "a"). */
    for (i = 0; i < NHELD; i++) {
        int j;
        slot[i] = keyslot(e->rc, key[i], kl[i]);
        for (j = 0; j < i && slot[j] != slot[i]; j++)
            ;
        distinct += j == i;
    }
    IT_RANGE(distinct, 5, NHELD - 3);
    IT_EQ(slot[5], slot[7]);
    IT_EQ(slot[0], slot[1]);

    /* Over three leases: every PTTL stays up, no flag rises. */
    start = rt_now_ms();
    while (rt_now_ms() - start < 2000) {
        for (i = 0; i < NHELD; i++) {
            long long pttl = rt_redis_pttl(e->rc, key[i], kl[i]);
            if (pttl <= 0 || pttl > 600)
                fail_msg("'%s': PTTL %lld after %lld ms (lease 600 ms)", names[i], pttl,
                         (long long)(rt_now_ms() - start));
            IT_EQ(rl_lock_interrupted(l[i]), 0);
        }
        IT_EQ(rl_interrupted(), 0);
        samples++;
        rt_sleep_ms(20);
    }
    assert_true(samples > 20);
    for (i = 0; i < NHELD; i++) {
        IT_RC(rl_lock_release(l[i]), RL_OK);
        IT_EQ(rt_redis_exists(e->rc, key[i], kl[i]), 0);
        rl_lock_free(l[i]);
    }
    rl_client_free(c);
}

/* (c) A waiter on a brace name in another client is woken by the release
 * notice, long before the holder's lease would have run out. */
static void test_wake_brace_name(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, 0), *b = it_client(e, 0);
    rl_lock *la = it_lock(a, "}wake{"), *lb = it_lock(b, "}wake{");
    char key[32];
    size_t kl;
    it_acq w;
    int64_t released_us;

    IT_RC(rl_lock_try_acquire(la, 0, HOLD_LEASE_MS), RL_OK);
    kl = the_lock_key(e->rc, key, sizeof key);
    memset(&w, 0, sizeof w);
    w.lock = lb;
    w.wait_ms = 15000;
    w.lease_ms = RL_LEASE_WATCHDOG;
    it_acq_start(&w);
    /* The waiter is subscribed to the channel and inside its wait. */
    IT_WAIT(atomic_load(&w.state) == 1 && rt_now_us() - w.t_call_us >= 300000, 10000);
    {
        char chan[40];
        memcpy(chan, key, kl);
        memcpy(chan + kl, ":release", 8);
        /* Cluster mode: sharded pub/sub on the channel's master. */
        IT_WAIT(rt_redis_shardnumsub(e->rc, chan, kl + 8) == 1, 10000);
    }
    IT_EQ(atomic_load(&w.state), 1);
    IT_RANGE(rt_redis_pttl(e->rc, key, kl), 15000, HOLD_LEASE_MS);

    released_us = rt_now_us();
    IT_RC(rl_lock_release(la), RL_OK);
    IT_WAIT(atomic_load(&w.state) >= 2, 10000);
    IT_RC(w.rc, RL_OK);
    if (w.t_return_us - released_us > WOKEN_WITHIN_MS * 1000)
        fail_msg("waiter got the lock %lld ms after the release (limit %d ms)",
                 (long long)((w.t_return_us - released_us) / 1000), WOKEN_WITHIN_MS);
    assert_int_equal(it_acq_join(&w, 10000), 0);
    IT_RC(w.release_rc, RL_OK);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);

    rl_lock_free(la);
    rl_lock_free(lb);
    rl_client_free(a);
    rl_client_free(b);
}

/* Not a cluster node: thousands of holds of as many slots are still
 * renewed RL__RENEW_BATCH (1000) to a call, not one call per slot. */
#define NMANY 2500
static void test_single_server_batches(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 600);
    static rl_lock *l[NMANY];
    char name[16];
    long long calls;
    int64_t start, took;
    int i;

    for (i = 0; i < NMANY; i++) {
        snprintf(name, sizeof name, "m%d", i);
        l[i] = it_lock(c, name);
        IT_RC(rl_lock_try_acquire(l[i], 0, RL_LEASE_WATCHDOG), RL_OK);
    }
    freeReplyObject(redisCommand(e->rc, "CONFIG RESETSTAT"));
    start = rt_now_ms();
    /* Wait for at least three rounds (every 200 ms). */
    IT_WAIT(rt_redis_cmdstat_calls(e->rc, "evalsha") >= 9, 5000);
    IT_WAIT(rt_now_ms() - start >= 1000, 2000);
    calls = rt_redis_cmdstat_calls(e->rc, "evalsha");
    took = rt_now_ms() - start;
    /* 3 calls a round, one round per 200 ms; one call per slot would be
     * thousands a round. */
    if (calls > 3 * (took / 200 + 2))
        fail_msg("%lld renewal calls in %lld ms for %d holds", calls, (long long)took, NMANY);
    for (i = 0; i < NMANY; i++) {
        IT_EQ(rl_lock_interrupted(l[i]), 0);
        IT_RC(rl_lock_release(l[i]), RL_OK);
        rl_lock_free(l[i]);
    }
    rl_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_brace_names_one_slot, it_setup_cluster_node, it_teardown),
        cmocka_unit_test_setup_teardown(test_watchdog_many_slots, it_setup_cluster_node, it_teardown),
        cmocka_unit_test_setup_teardown(test_wake_brace_name, it_setup_cluster_node, it_teardown),
        cmocka_unit_test_setup_teardown(test_single_server_batches, it_setup, it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
