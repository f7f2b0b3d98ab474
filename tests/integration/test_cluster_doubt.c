/*
 * The single-mode guarantees on a real Redis Cluster: lost replies
 * (test_faults, test_hardening), outcomes that cannot be read back and
 * their leftovers (test_doubt), fork() (test_fork), shutdown and bad input
 * (test_badinput), held by a client that routes each name to the master
 * owning its slot.
 *
 * Three masters on loopback (it_pcluster, it_cluster.h). One of them, P (not
 * node 0, the seed every client is given), is reached only through the fault
 * proxy: P announces the proxy's port, so a client seeded with node 0 learns
 * that address by itself. Faults on P's names then hit the connections
 * between the client and P only, and the read-back has to find P again.
 *
 * Key state is read directly on the owning master, at its real port, never
 * through the library; the slot table is the fixture's, by node id.
 *
 * One cluster and one proxy serve the whole group; every test uses names of
 * its own and leaves no key behind, and the proxy is reset around each test.
 */
#include "it_cluster.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* fork() tests cannot run under ThreadSanitizer (see test_fork.c). */
#if defined(__SANITIZE_THREAD__)
#define CD_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CD_UNDER_TSAN 1
#endif
#endif

/* Around every test: the proxy forwards everything, drops nothing. */
static int proxy_reset(void **state)
{
    return it_pcluster_reset_proxy(*state);
}

/* ---- names, keys, clients ----------------------------------------------- */

/* A name "<stem>-<i>" whose lock key lives on node m, and that key. */
static void name_on(it_pcluster *e, int m, const char *stem, char *name, size_t cap, char *key,
                    size_t keycap, size_t *kl)
{
    int i, slot;

    for (i = 0; i < 5000; i++) {
        snprintf(name, cap, "%s-%d", stem, i);
        *kl = it_key(key, keycap, "rl:", name, strlen(name), NULL);
        slot = rt_cluster_keyslot(e->cl, key, *kl);
        if (slot < 0)
            fail_msg("CLUSTER KEYSLOT failed");
        if (e->owner[slot] == m)
            return;
    }
    fail_msg("no name \"%s-<i>\" found on node %d", stem, m);
}

/* The count of the one owner of the hash at key on node m; 0: no key. */
static long count_on(it_pcluster *e, int m, const char *key, size_t kl)
{
    it_hash h;

    if (it_hgetall(e->rc[m], key, kl, &h) != 0)
        fail_msg("HGETALL %s on node %d failed (reply type %d)", key, m, h.type);
    if (h.fields == 0)
        return 0;
    if (h.fields != 1)
        fail_msg("%zu owners in the lock %s on node %d", h.fields, key, m);
    return strtol(h.value, NULL, 10);
}

static int exists_on(it_pcluster *e, int m, const char *key, size_t kl)
{
    return rt_redis_exists(e->rc[m], key, kl);
}

/* Nothing of any test is left on any node. */
static void assert_no_keys(it_pcluster *e)
{
    int i;

    for (i = 0; i < e->cl->n; i++) {
        redisReply *r = redisCommand(e->rc[i], "DBSIZE");
        long long n = r != NULL && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
        freeReplyObject(r);
        if (n != 0)
            fail_msg("node %d holds %lld key(s) after the test", i, n);
    }
}

static rl_client *cd_client(it_pcluster *e, long lease_ms, long timeout_ms,
                            void (*on_lost)(const char *, size_t, void *), void *payload)
{
    rl_options o;

    it_options(&o, e->cl->url, lease_ms, timeout_ms);
    o.connect_timeout_ms = timeout_ms;
    o.on_lost = on_lost;
    o.payload = payload;
    return it_client_opts(&o);
}

/* Take and give back a name of P through c: P then has rlock's scripts (a
 * NOSCRIPT would be the reply a drop swallows otherwise) and c knows P. */
static void warm_up(it_pcluster *e, rl_client *c)
{
    char name[64], key[128];
    size_t kl;
    rl_lock *l;

    name_on(e, e->p, "warm", name, sizeof name, key, sizeof key, &kl);
    l = it_lock(c, name);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(count_on(e, e->p, key, kl), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(exists_on(e, e->p, key, kl), 0);
    rl_lock_free(l);
}

/* ---- 1. a lost reply on acquire is read back on the owning master ------- */

static void test_lost_reply_first_acquire_is_read_back(void **state)
{
    it_pcluster *e = *state;
    long accepted = rt_proxy_accepted(e->proxy), dropped;
    rl_client *c = cd_client(e, 0, 1000, NULL, NULL);
    char name[64], key[128];
    size_t kl;
    rl_lock *l;
    long long ev, hg;

    name_on(e, e->p, "lost-acq", name, sizeof name, key, sizeof key, &kl);
    l = it_lock(c, name);
    /* Warm up: P's names go through the proxy (the client learnt its
     * address from CLUSTER SLOTS), and P has the scripts. */
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(count_on(e, e->p, key, kl), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_RANGE(rt_proxy_accepted(e->proxy) - accepted, 1, 100);

    dropped = rt_proxy_dropped(e->proxy);
    ev = it_pcluster_calls(e, e->p, "evalsha");
    hg = it_pcluster_calls(e, e->p, "hget");
    rt_proxy_drop_next_reply_matching(e->proxy, "EVAL");
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rt_proxy_dropped(e->proxy) - dropped, 1);
    /* Applied once and never sent again; the count was read on P. */
    IT_EQ(it_pcluster_calls(e, e->p, "evalsha") - ev, 1);
    IT_RANGE(it_pcluster_calls(e, e->p, "hget") - hg, 1, 3);
    IT_EQ(rl_lock_hold_count(l), 1);
    IT_EQ(count_on(e, e->p, key, kl), 1);
    IT_EQ(rl_lock_interrupted(l), 0);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(exists_on(e, e->p, key, kl), 0);
    rl_lock_free(l);
    rl_client_free(c);
    assert_no_keys(e);
}

static void test_lost_reply_reentrant_acquire_is_read_back(void **state)
{
    it_pcluster *e = *state;
    rl_client *c = cd_client(e, 0, 1000, NULL, NULL);
    char name[64], key[128];
    size_t kl;
    rl_lock *l;
    long dropped;
    long long ev;

    warm_up(e, c);
    name_on(e, e->p, "lost-reent", name, sizeof name, key, sizeof key, &kl);
    l = it_lock(c, name);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(count_on(e, e->p, key, kl), 1);

    dropped = rt_proxy_dropped(e->proxy);
    ev = it_pcluster_calls(e, e->p, "evalsha");
    rt_proxy_drop_next_reply_matching(e->proxy, "EVAL");
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rt_proxy_dropped(e->proxy) - dropped, 1);
    IT_EQ(it_pcluster_calls(e, e->p, "evalsha") - ev, 1);
    IT_EQ(rl_lock_hold_count(l), 2);
    IT_EQ(count_on(e, e->p, key, kl), 2);
    /* Once more without a fault: no drift either way. */
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rl_lock_hold_count(l), 3);
    IT_EQ(count_on(e, e->p, key, kl), 3);
    IT_EQ(rl_lock_interrupted(l), 0);
    while (rl_lock_hold_count(l) > 0) {
        IT_RC(rl_lock_release(l), RL_OK);
        IT_EQ(count_on(e, e->p, key, kl), rl_lock_hold_count(l));
    }
    IT_EQ(exists_on(e, e->p, key, kl), 0);
    rl_lock_free(l);
    rl_client_free(c);
    assert_no_keys(e);
}

/* ---- 2. lost replies on release ------------------------------------------ */

static void test_lost_reply_inner_and_final_release(void **state)
{
    it_pcluster *e = *state;
    rl_client *c = cd_client(e, 0, 1000, NULL, NULL);
    char name[64], key[128];
    size_t kl;
    rl_lock *l;
    long dropped;
    long long ev;

    warm_up(e, c);
    name_on(e, e->p, "lost-rel", name, sizeof name, key, sizeof key, &kl);
    l = it_lock(c, name);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(count_on(e, e->p, key, kl), 2);

    /* 2 -> 1 */
    dropped = rt_proxy_dropped(e->proxy);
    ev = it_pcluster_calls(e, e->p, "evalsha");
    rt_proxy_drop_next_reply_matching(e->proxy, "EVAL");
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(rt_proxy_dropped(e->proxy) - dropped, 1);
    IT_EQ(it_pcluster_calls(e, e->p, "evalsha") - ev, 1);
    IT_EQ(rl_lock_hold_count(l), 1);
    IT_EQ(count_on(e, e->p, key, kl), 1);

    /* 1 -> 0, well within the lease: released, and said so. */
    ev = it_pcluster_calls(e, e->p, "evalsha");
    rt_proxy_drop_next_reply_matching(e->proxy, "EVAL");
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(rt_proxy_dropped(e->proxy) - dropped, 2);
    IT_EQ(it_pcluster_calls(e, e->p, "evalsha") - ev, 1);
    IT_EQ(rl_lock_hold_count(l), 0);
    IT_EQ(exists_on(e, e->p, key, kl), 0);
    IT_EQ(rl_interrupted(), 0);
    /* The name works again. */
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(count_on(e, e->p, key, kl), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(exists_on(e, e->p, key, kl), 0);
    rl_lock_free(l);
    rl_client_free(c);
    assert_no_keys(e);
}

struct late_release {
    rl_lock *lock;
    atomic_int stage;     /* 1: acquired; 2: go; 3: released */
    int acq_rc, rel_rc, count_after;
    int64_t t_acq_ms, t_send_ms;
    char rel_msg[256];
};

static void *late_release_main(void *arg)
{
    struct late_release *h = arg;

    h->acq_rc = rl_lock_try_acquire(h->lock, 0, 1000);
    h->t_acq_ms = rt_now_ms();
    atomic_store(&h->stage, 1);
    if (h->acq_rc == RL_OK) {
        RT_WAIT_UNTIL(atomic_load(&h->stage) == 2, 10000);
        h->t_send_ms = rt_now_ms();
        h->rel_rc = rl_lock_release(h->lock);
        snprintf(h->rel_msg, sizeof h->rel_msg, "%s", rl_last_error());
        h->count_after = rl_lock_hold_count(h->lock);
    }
    atomic_store(&h->stage, 3);
    return NULL;
}

/* Wait for the clock itself: Redis must see the release only after the
 * lease ran out there. */
static void until_clock(int64_t t_ms)
{
    while (rt_now_ms() < t_ms)
        rt_sleep_ms(1);
}

/* test_hardening's finding 4 on the cluster: the final release is sent
 * before the fixed lease runs out, held up in the network (the proxy
 * stalls) until after it, and its reply is lost. The read-back on P finds
 * no field: that is a loss, not a release. */
static void test_lost_final_release_after_the_lease_is_lost(void **state)
{
    it_pcluster *e = *state;
    rl_client *c = cd_client(e, 0, 3000, NULL, NULL);
    char name[64], key[128];
    size_t kl;
    struct late_release h;
    pthread_t th;
    long dropped = rt_proxy_dropped(e->proxy);
    long long ev;

    warm_up(e, c);
    name_on(e, e->p, "late", name, sizeof name, key, sizeof key, &kl);
    memset(&h, 0, sizeof h);
    h.lock = it_lock(c, name);
    atomic_init(&h.stage, 0);
    assert_int_equal(pthread_create(&th, NULL, late_release_main, &h), 0);
    IT_WAIT(atomic_load(&h.stage) == 1, 5000);
    IT_RC(h.acq_rc, RL_OK);
    IT_EQ(count_on(e, e->p, key, kl), 1);
    ev = it_pcluster_calls(e, e->p, "evalsha");

    assert_int_equal(rt_proxy_stall(e->proxy, 1), 0);
    rt_proxy_drop_next_reply_matching(e->proxy, "EVAL");
    atomic_store(&h.stage, 2);
    until_clock(h.t_acq_ms + 1300);
    IT_EQ(atomic_load(&h.stage), 2);          /* the release is still on its way */
    IT_EQ(exists_on(e, e->p, key, kl), 0);    /* and the lease ran out on P */
    assert_int_equal(rt_proxy_stall(e->proxy, 0), 0);

    if (!RT_WAIT_UNTIL(atomic_load(&h.stage) == 3, 8000)) {
        pthread_detach(th);
        fail_msg("the release did not return within 8 s of the network's resumption");
    }
    pthread_join(th, NULL);
    print_message("release sent %lld ms after the acquisition: %s (\"%s\")\n",
                  (long long)(h.t_send_ms - h.t_acq_ms), rl_strerror(h.rel_rc), h.rel_msg);
    IT_RANGE(h.t_send_ms - h.t_acq_ms, 0, 900);   /* sent well before the local expiry */
    IT_EQ(rt_proxy_dropped(e->proxy) - dropped, 1);
    /* It did reach P, once; the second call, if any, is the drop of a field
     * of ours that might remain (held "0": it can only remove our field). */
    IT_RANGE(it_pcluster_calls(e, e->p, "evalsha") - ev, 1, 2);
    IT_RC(h.rel_rc, RL_ELOST);
    IT_EQ(h.count_after, 0);
    IT_EQ(exists_on(e, e->p, key, kl), 0);
    rl_lock_free(h.lock);
    rl_client_free(c);
    assert_no_keys(e);
}

/* ---- 3. outcomes that cannot be read back -------------------------------- */

/* Lose the reply of the next script call and refuse new connections to P,
 * so that the outcome cannot be read back there. */
static void lose_and_isolate(it_pcluster *e)
{
    rt_proxy_drop_next_reply_matching(e->proxy, "EVAL");
    assert_int_equal(rt_proxy_refuse(e->proxy, 1), 0);
}

static void test_unresolved_reentry_flags_and_drops(void **state)
{
    it_pcluster *e = *state;
    rl_client *c = cd_client(e, 30000, 500, NULL, NULL);
    char name[64], key[128];
    size_t kl;
    rl_lock *l;
    long dropped = rt_proxy_dropped(e->proxy);

    warm_up(e, c);
    name_on(e, e->p, "doubt-reent", name, sizeof name, key, sizeof key, &kl);
    l = it_lock(c, name);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    lose_and_isolate(e);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_ECONN);
    IT_EQ(rt_proxy_dropped(e->proxy) - dropped, 1);
    /* Applied on P (2 there), unknown here: the count stays, the hold is flagged. */
    IT_EQ(count_on(e, e->p, key, kl), 2);
    IT_EQ(rl_lock_hold_count(l), 1);
    IT_EQ(rl_lock_interrupted(l), 1);
    IT_EQ(rl_interrupted(), 1);
    assert_int_equal(rt_proxy_refuse(e->proxy, 0), 0);
    /* Unwinding reports the loss and removes our field whatever its count. */
    IT_RC(rl_lock_release(l), RL_ELOST);
    IT_EQ(rl_lock_hold_count(l), 0);
    IT_WAIT(exists_on(e, e->p, key, kl) == 0, 5000);
    IT_EQ(rl_interrupted(), 0);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(count_on(e, e->p, key, kl), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(exists_on(e, e->p, key, kl), 0);
    rl_lock_free(l);
    rl_client_free(c);
    assert_no_keys(e);
}

static void test_unresolved_inner_release_gives_up_the_hold(void **state)
{
    it_pcluster *e = *state;
    rl_client *c = cd_client(e, 30000, 500, NULL, NULL);
    char name[64], key[128];
    size_t kl;
    rl_lock *l;

    warm_up(e, c);
    name_on(e, e->p, "doubt-rel", name, sizeof name, key, sizeof key, &kl);
    l = it_lock(c, name);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    lose_and_isolate(e);
    /* 2 -> 1 applied on P, unknown here: the count drops, the hold is flagged. */
    IT_RC(rl_lock_release(l), RL_ELOST);
    IT_EQ(count_on(e, e->p, key, kl), 1);
    IT_EQ(rl_lock_hold_count(l), 1);
    IT_EQ(rl_lock_interrupted(l), 1);
    assert_int_equal(rt_proxy_refuse(e->proxy, 0), 0);
    IT_RC(rl_lock_release(l), RL_ELOST);
    IT_EQ(rl_lock_hold_count(l), 0);
    IT_WAIT(exists_on(e, e->p, key, kl) == 0, 5000);
    IT_EQ(rl_interrupted(), 0);
    rl_lock_free(l);
    rl_client_free(c);
    assert_no_keys(e);
}

static void test_unresolved_first_acquire_leaves_no_ghost(void **state)
{
    it_pcluster *e = *state;
    rl_client *c = cd_client(e, 30000, 500, NULL, NULL);
    char name[64], key[128];
    size_t kl;
    rl_lock *l;
    it_hash h;
    int64_t t0;

    warm_up(e, c);
    name_on(e, e->p, "doubt-first", name, sizeof name, key, sizeof key, &kl);
    l = it_lock(c, name);
    lose_and_isolate(e);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_ECONN);
    IT_EQ(rl_lock_hold_count(l), 0);
    IT_EQ(rl_interrupted(), 0);
    /* Applied on P: our field sits there with a 30 s lease... */
    assert_int_equal(it_hgetall(e->rc[e->p], key, kl, &h), 0);
    IT_EQ(h.fields, 1);
    assert_true(it_owner_field_ok(h.field, h.field_len));
    IT_RANGE(rt_redis_pttl(e->rc[e->p], key, kl), 20000, 30000);
    t0 = rt_now_ms();
    assert_int_equal(rt_proxy_refuse(e->proxy, 0), 0);
    /* ...until the watchdog reaches P again and drops it, unasked. */
    IT_WAIT(exists_on(e, e->p, key, kl) == 0, 5000);
    print_message("leftover field dropped on node %d %lld ms after it was reachable again\n",
                  e->p, (long long)(rt_now_ms() - t0));
    IT_EQ(rl_lock_hold_count(l), 0);
    rl_lock_free(l);
    rl_client_free(c);
    assert_no_keys(e);
}

/* The field an unresolved acquisition may have left runs out; another
 * owner takes the name (over a connection the refusal does not touch);
 * then P answers again and the leftover is dropped: the other owner's
 * field, count and lease stay as they were. */
static void test_leftover_drop_never_touches_another_owner(void **state)
{
    it_pcluster *e = *state;
    rl_client *a = cd_client(e, 30000, 500, NULL, NULL);
    rl_client *b = cd_client(e, 30000, 2000, NULL, NULL);
    char name[64], key[128], b_field[128];
    size_t kl;
    rl_lock *la, *lb;
    it_hash h;
    long long ev;

    warm_up(e, a);
    name_on(e, e->p, "doubt-other", name, sizeof name, key, sizeof key, &kl);
    la = it_lock(a, name);
    lb = it_lock(b, name);
    /* b gets a connection to P into its pool now, before the refusal. */
    IT_EQ(rl_lock_is_locked(lb), 0);

    lose_and_isolate(e);
    IT_RC(rl_lock_try_acquire(la, 0, 300), RL_ECONN);
    IT_EQ(rl_lock_hold_count(la), 0);
    /* a's field (the script ran; its reply was lost) runs out with its lease. */
    IT_WAIT(exists_on(e, e->p, key, kl) == 0, 5000);
    IT_RC(rl_lock_try_acquire(lb, 0, 20000), RL_OK);
    assert_int_equal(it_hgetall(e->rc[e->p], key, kl, &h), 0);
    IT_EQ(h.fields, 1);
    assert_string_equal(h.value, "1");
    snprintf(b_field, sizeof b_field, "%s", h.field);

    ev = it_pcluster_calls(e, e->p, "evalsha");
    assert_int_equal(rt_proxy_refuse(e->proxy, 0), 0);
    /* a settles its leftover before it may try the name again: the drop
     * runs (by the watchdog or by this call), then b is found holding it. */
    IT_RC(rl_lock_try_acquire(la, 0, 300), RL_EBUSY);
    IT_RANGE(it_pcluster_calls(e, e->p, "evalsha") - ev, 2, 10);
    assert_int_equal(it_hgetall(e->rc[e->p], key, kl, &h), 0);
    IT_EQ(h.fields, 1);
    assert_string_equal(h.field, b_field);
    assert_string_equal(h.value, "1");
    IT_RANGE(rt_redis_pttl(e->rc[e->p], key, kl), 10000, 20000);
    IT_EQ(rl_lock_hold_count(lb), 1);
    IT_EQ(rl_lock_interrupted(lb), 0);
    IT_RC(rl_lock_release(lb), RL_OK);
    IT_EQ(exists_on(e, e->p, key, kl), 0);
    /* And a can have it now. */
    IT_RC(rl_lock_try_acquire(la, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(count_on(e, e->p, key, kl), 1);
    IT_RC(rl_lock_release(la), RL_OK);
    IT_EQ(exists_on(e, e->p, key, kl), 0);
    rl_lock_free(la);
    rl_lock_free(lb);
    rl_client_free(b);
    rl_client_free(a);
    assert_no_keys(e);
}

/* A leftover pending when P answers again and the client is freed at once:
 * dropped by the watchdog or, at the latest, by the shutdown (fenced
 * first); nothing is left to wait out its 30 s lease. */
static void test_shutdown_drops_a_pending_leftover(void **state)
{
    it_pcluster *e = *state;
    rl_client *c = cd_client(e, 30000, 500, NULL, NULL);
    char name[64], key[128];
    size_t kl;
    rl_lock *l;

    warm_up(e, c);
    name_on(e, e->p, "doubt-shut", name, sizeof name, key, sizeof key, &kl);
    l = it_lock(c, name);
    lose_and_isolate(e);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_ECONN);
    IT_EQ(count_on(e, e->p, key, kl), 1);
    IT_RANGE(rt_redis_pttl(e->rc[e->p], key, kl), 20000, 30000);
    assert_int_equal(rt_proxy_refuse(e->proxy, 0), 0);
    rl_client_free(c);
    IT_EQ(exists_on(e, e->p, key, kl), 0);
    IT_EQ(rl_interrupted(), 0);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_ECANCELED);
    rl_lock_free(l);
    assert_no_keys(e);
}

/* ---- 4. fork() ------------------------------------------------------------ */

static void skip_under_tsan(void)
{
#ifdef CD_UNDER_TSAN
    print_message("fork() tests are not supported by ThreadSanitizer: skipped\n");
    skip();
#endif
}

struct fork_ctx {
    rt_cluster *cl;
    rl_client *c, *c2;           /* inherited; c2 may be NULL */
    rl_lock *held[3];            /* inherited handles on names the parent holds */
    int nheld;
    rl_lock *waited;             /* a name a parent thread waits for, or NULL */
    char mine[3][64];            /* names of the child, one per master */
    char key[3][128];
    size_t kl[3];
    int node[3];
    char parent_uuid[40];
    int result_fd;
};

/* Result codes: 10 * check + index (the held handle or the master). */
static const char *const fork_codes =
    "1x hold_count of a parent's hold, 2x rl_lock_interrupted, 3x try not EBUSY, "
    "4x release not ENOTOWNER, 50 rl_interrupted, 51 waited name: try not EBUSY, "
    "52 waited name: wait not ETIMEDOUT, 53 waited name: hold_count, "
    "6x lock_new, 7x acquire on master x, 8x hold_count, 9x connect to master x, "
    "10x field on master x, 11x parent's uuid, 12x release, 13x key left on master x";

static int child_checks(struct fork_ctx *x)
{
    int i;

    for (i = 0; i < x->nheld; i++) {
        if (rl_lock_hold_count(x->held[i]) != 0)
            return 10 + i;
        if (rl_lock_interrupted(x->held[i]) != 0)
            return 20 + i;
        if (rl_lock_try_acquire(x->held[i], 0, RL_LEASE_WATCHDOG) != RL_EBUSY)
            return 30 + i;
        if (rl_lock_release(x->held[i]) != RL_ENOTOWNER)
            return 40 + i;
    }
    if (rl_interrupted() != 0)
        return 50;
    if (x->waited != NULL) {
        int64_t t0;
        if (rl_lock_try_acquire(x->waited, 0, RL_LEASE_WATCHDOG) != RL_EBUSY)
            return 51;
        t0 = rt_now_ms();
        if (rl_lock_try_acquire(x->waited, 300, RL_LEASE_WATCHDOG) != RL_ETIMEDOUT ||
            rt_now_ms() - t0 < 250)
            return 52;
        if (rl_lock_hold_count(x->waited) != 0)
            return 53;
    }
    for (i = 0; i < 3; i++) {
        rl_lock *l = NULL;
        redisContext *rc;
        it_hash h;
        int code = 0;
        if (rl_lock_new(&l, x->c, x->mine[i]) != RL_OK)
            return 60 + i;
        if (rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG) != RL_OK)
            return 70 + i;
        if (rl_lock_hold_count(l) != 1)
            return 80 + i;
        if ((rc = rt_cluster_connect(x->cl, x->node[i])) == NULL)
            return 90 + i;
        if (it_hgetall(rc, x->key[i], x->kl[i], &h) != 0 || h.fields != 1 ||
            strcmp(h.value, "1") != 0 || !it_owner_field_ok(h.field, h.field_len))
            code = 100 + i;
        else if (memcmp(h.field, x->parent_uuid, 36) == 0)
            code = 110 + i;      /* a new process is a new owner */
        else if (rl_lock_release(l) != RL_OK)
            code = 120 + i;
        else if (rt_redis_exists(rc, x->key[i], x->kl[i]) != 0)
            code = 130 + i;
        redisFree(rc);
        rl_lock_free(l);
        if (code != 0)
            return code;
    }
    /* Freeing the inherited clients must leave the parent's locks alone. */
    rl_client_free(x->c);
    rl_client_free(x->c2);
    return 0;
}

/* The child answers through a pipe (see test_fork.c: not its exit status). */
static int child_main(void *arg)
{
    struct fork_ctx *x = arg;
    unsigned char code = (unsigned char)child_checks(x);

    rt_write_all(x->result_fd, &code, 1);
    return code;
}

static int run_child(struct fork_ctx *x)
{
    int fds[2], got, st;
    unsigned char code;
    pid_t pid;

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
    if (got != 0 || st < 0 || st >= 128) {
        fprintf(stderr, "fork child gave no result (exit status %d)\n", st);
        return -1;
    }
    return code;
}

/* The child's own names, one per master. */
static void child_names(it_pcluster *e, struct fork_ctx *x, const char *stem)
{
    int masters[3] = { e->seed, e->p, e->q }, i;
    char s[32];

    for (i = 0; i < 3; i++) {
        snprintf(s, sizeof s, "%s%d", stem, i);
        x->node[i] = masters[i];
        name_on(e, masters[i], s, x->mine[i], sizeof x->mine[i], x->key[i], sizeof x->key[i],
                &x->kl[i]);
    }
}

static void test_fork_child_is_a_new_owner_on_every_master(void **state)
{
    it_pcluster *e = *state;
    int masters[3] = { e->seed, e->p, e->q }, i, code;
    char name[3][64], key[3][128], field[3][128];
    size_t kl[3];
    struct fork_ctx x;
    rl_client *c;
    it_hash h;
    int64_t t0;

    skip_under_tsan();
    memset(&x, 0, sizeof x);
    c = cd_client(e, 600, 1000, NULL, NULL);
    for (i = 0; i < 3; i++) {
        name_on(e, masters[i], "forked", name[i], sizeof name[i], key[i], sizeof key[i], &kl[i]);
        x.held[i] = it_lock(c, name[i]);
        IT_RC(rl_lock_try_acquire(x.held[i], 0, RL_LEASE_WATCHDOG), RL_OK);
        if (masters[i] == e->p)
            IT_RC(rl_lock_try_acquire(x.held[i], 0, RL_LEASE_WATCHDOG), RL_OK);
        assert_int_equal(it_hgetall(e->rc[masters[i]], key[i], kl[i], &h), 0);
        IT_EQ(h.fields, 1);
        snprintf(field[i], sizeof field[i], "%s", h.field);
    }
    x.cl = e->cl;
    x.c = c;
    x.nheld = 3;
    memcpy(x.parent_uuid, field[0], 36);
    child_names(e, &x, "child");
    code = run_child(&x);
    if (code != 0)
        fail_msg("child failed with code %d (%s)", code, fork_codes);

    /* The parent's holds are intact on every master and kept alive. */
    for (i = 0; i < 3; i++) {
        int want = masters[i] == e->p ? 2 : 1;
        IT_EQ(rl_lock_hold_count(x.held[i]), want);
        assert_int_equal(it_hgetall(e->rc[masters[i]], key[i], kl[i], &h), 0);
        IT_EQ(h.fields, 1);
        assert_string_equal(h.field, field[i]);
        IT_EQ(strtol(h.value, NULL, 10), want);
    }
    t0 = rt_now_ms();
    while (rt_now_ms() - t0 < 1500) {       /* two and a half leases */
        for (i = 0; i < 3; i++) {
            IT_EQ(rl_lock_interrupted(x.held[i]), 0);
            IT_RANGE(rt_redis_pttl(e->rc[masters[i]], key[i], kl[i]), 1, 600);
        }
        rt_sleep_ms(50);
    }
    for (i = 0; i < 3; i++) {
        while (rl_lock_hold_count(x.held[i]) > 0)
            IT_RC(rl_lock_release(x.held[i]), RL_OK);
        IT_EQ(exists_on(e, masters[i], key[i], kl[i]), 0);
        rl_lock_free(x.held[i]);
    }
    rl_client_free(c);
    assert_no_keys(e);
}

/* A parent thread waits, subscribed on the third master, for a name another
 * client of the parent holds; the child uses both clients and frees them:
 * the parent's subscription, hold and waiter are untouched. */
static void test_fork_while_a_thread_waits_on_another_master(void **state)
{
    it_pcluster *e = *state;
    char name[64], key[128], chan[160], field[128];
    size_t kl;
    struct fork_ctx x;
    rl_client *c, *holder;
    rl_lock *hl;
    it_acq w;
    it_hash h;
    int code;
    int64_t released_us;

    skip_under_tsan();
    memset(&x, 0, sizeof x);
    c = cd_client(e, 600, 1000, NULL, NULL);
    holder = cd_client(e, 3000, 1000, NULL, NULL);   /* its PTTL alone would wake late */
    name_on(e, e->q, "busyfork", name, sizeof name, key, sizeof key, &kl);
    memcpy(chan, key, kl);
    memcpy(chan + kl, ":release", 9);
    hl = it_lock(holder, name);
    IT_RC(rl_lock_try_acquire(hl, 0, RL_LEASE_WATCHDOG), RL_OK);
    assert_int_equal(it_hgetall(e->rc[e->q], key, kl, &h), 0);
    snprintf(field, sizeof field, "%s", h.field);

    memset(&w, 0, sizeof w);
    w.lock = it_lock(c, name);
    w.wait_ms = 30000;
    w.lease_ms = RL_LEASE_WATCHDOG;
    it_acq_start(&w);
    IT_WAIT(rt_redis_shardnumsub(e->rc[e->q], chan, kl + 8) == 1, 10000);
    IT_EQ(atomic_load(&w.state), 1);

    x.cl = e->cl;
    x.c = c;
    x.c2 = holder;
    x.waited = w.lock;
    memcpy(x.parent_uuid, field, 36);
    child_names(e, &x, "child-w");
    code = run_child(&x);
    if (code != 0)
        fail_msg("child failed with code %d (%s)", code, fork_codes);

    /* Parent: still subscribed, still the holder, the waiter still waits. */
    IT_EQ(rt_redis_shardnumsub(e->rc[e->q], chan, kl + 8), 1);
    IT_EQ(atomic_load(&w.state), 1);
    IT_EQ(rl_lock_hold_count(hl), 1);
    assert_int_equal(it_hgetall(e->rc[e->q], key, kl, &h), 0);
    IT_EQ(h.fields, 1);
    assert_string_equal(h.field, field);

    released_us = rt_now_us();
    IT_RC(rl_lock_release(hl), RL_OK);
    if (it_acq_join(&w, 10000) != 0)
        fail_msg("the parent's waiter did not get the lock after the release");
    IT_RC(w.rc, RL_OK);
    IT_RC(w.release_rc, RL_OK);
    print_message("waiter woken %lld us after the release\n",
                  (long long)(w.t_return_us - released_us));
    IT_RANGE((w.t_return_us - released_us) / 1000, 0, 1000);
    IT_EQ(exists_on(e, e->q, key, kl), 0);
    rl_lock_free(w.lock);
    rl_lock_free(hl);
    rl_client_free(holder);
    rl_client_free(c);
    assert_no_keys(e);
}

/* ---- 5. shutdown ----------------------------------------------------------- */

struct lost_log {
    pthread_mutex_t mu;
    int n;
    char names[8][64];
};

static void on_lost_cb(const char *name, size_t len, void *payload)
{
    struct lost_log *g = payload;

    pthread_mutex_lock(&g->mu);
    if (g->n < 8) {
        size_t k = len < sizeof g->names[0] - 1 ? len : sizeof g->names[0] - 1;
        memcpy(g->names[g->n], name, k);
        g->names[g->n][k] = '\0';
    }
    g->n++;
    pthread_mutex_unlock(&g->mu);
}

static int lost_count(struct lost_log *g)
{
    int n;

    pthread_mutex_lock(&g->mu);
    n = g->n;
    pthread_mutex_unlock(&g->mu);
    return n;
}

static int lost_logged(struct lost_log *g, const char *name)
{
    int i, found = 0;

    pthread_mutex_lock(&g->mu);
    for (i = 0; i < g->n && i < 8; i++)
        found |= strcmp(g->names[i], name) == 0;
    pthread_mutex_unlock(&g->mu);
    return found;
}

/* A thread holding a name on P twice and one on the seed master. */
struct sd_holder {
    rl_lock *l[2];
    atomic_int stage;     /* 1: holds; 2: the client is shut down; 3: done */
    int acq[3];
    int first, second, rel[2], acq_after, count_after, locked_after;
};

static void *sd_holder_main(void *arg)
{
    struct sd_holder *h = arg;

    h->acq[0] = rl_lock_try_acquire(h->l[0], 0, RL_LEASE_WATCHDOG);
    h->acq[1] = rl_lock_try_acquire(h->l[0], 0, RL_LEASE_WATCHDOG);
    h->acq[2] = rl_lock_try_acquire(h->l[1], 0, RL_LEASE_WATCHDOG);
    atomic_store(&h->stage, 1);
    RT_WAIT_UNTIL(atomic_load(&h->stage) == 2, 20000);
    h->first = rl_interrupted();
    h->second = rl_interrupted();
    h->rel[0] = rl_lock_release(h->l[0]);
    h->rel[1] = rl_lock_release(h->l[1]);
    h->acq_after = rl_lock_try_acquire(h->l[0], 0, RL_LEASE_WATCHDOG);
    h->count_after = rl_lock_hold_count(h->l[1]);
    h->locked_after = rl_lock_is_locked(h->l[1]);
    atomic_store(&h->stage, 3);
    return NULL;
}

static void shutdown_with_waiter_and_holds(it_pcluster *e, int use_free)
{
    struct lost_log lost;
    struct sd_holder h;
    rl_client *c, *other;
    rl_lock *ol;
    char held[2][64], hkey[2][128], wname[64], wkey[128], chan[160], ofield[128];
    size_t hkl[2], wkl;
    int hnode[2] = { e->p, e->seed }, i;
    pthread_t th;
    it_acq w;
    it_hash hh;
    int64_t t0, t1;
    long ttl = 777;

    memset(&lost, 0, sizeof lost);
    pthread_mutex_init(&lost.mu, NULL);
    c = cd_client(e, 0, 1000, on_lost_cb, &lost);
    other = cd_client(e, 0, 1000, NULL, NULL);
    for (i = 0; i < 2; i++)
        name_on(e, hnode[i], use_free ? "sdf-held" : "sd-held", held[i], sizeof held[i],
                hkey[i], sizeof hkey[i], &hkl[i]);
    name_on(e, e->q, use_free ? "sdf-wait" : "sd-wait", wname, sizeof wname, wkey,
            sizeof wkey, &wkl);
    memcpy(chan, wkey, wkl);
    memcpy(chan + wkl, ":release", 9);

    /* Another client holds the awaited name, on a master that is not the seed. */
    ol = it_lock(other, wname);
    IT_RC(rl_lock_try_acquire(ol, 0, RL_LEASE_WATCHDOG), RL_OK);
    assert_int_equal(it_hgetall(e->rc[e->q], wkey, wkl, &hh), 0);
    snprintf(ofield, sizeof ofield, "%s", hh.field);

    memset(&h, 0, sizeof h);
    atomic_init(&h.stage, 0);
    for (i = 0; i < 2; i++)
        h.l[i] = it_lock(c, held[i]);
    assert_int_equal(pthread_create(&th, NULL, sd_holder_main, &h), 0);
    IT_WAIT(atomic_load(&h.stage) == 1, 10000);
    for (i = 0; i < 3; i++)
        IT_RC(h.acq[i], RL_OK);
    IT_EQ(count_on(e, e->p, hkey[0], hkl[0]), 2);
    IT_EQ(count_on(e, e->seed, hkey[1], hkl[1]), 1);

    memset(&w, 0, sizeof w);
    w.lock = it_lock(c, wname);
    w.wait_ms = 20000;
    w.lease_ms = RL_LEASE_WATCHDOG;
    it_acq_start(&w);
    IT_WAIT(rt_redis_shardnumsub(e->rc[e->q], chan, wkl + 8) == 1, 10000);
    IT_EQ(atomic_load(&w.state), 1);

    t0 = rt_now_ms();
    if (use_free)
        rl_client_free(c);
    else
        IT_RC(rl_client_shutdown(c), RL_OK);
    t1 = rt_now_ms();
    print_message("%s took %lld ms\n", use_free ? "rl_client_free" : "rl_client_shutdown",
                  (long long)(t1 - t0));

    /* The waiter is cancelled. */
    IT_EQ(it_acq_join(&w, 5000), 0);
    IT_RC(w.rc, RL_ECANCELED);
    IT_RANGE(w.t_return_us / 1000 - t0, 0, 3000);
    /* The holds are released on both masters; the other owner is untouched. */
    IT_EQ(exists_on(e, e->p, hkey[0], hkl[0]), 0);
    IT_EQ(exists_on(e, e->seed, hkey[1], hkl[1]), 0);
    assert_int_equal(it_hgetall(e->rc[e->q], wkey, wkl, &hh), 0);
    IT_EQ(hh.fields, 1);
    assert_string_equal(hh.field, ofield);
    assert_string_equal(hh.value, "1");
    /* Each hold told once; the subscription on the third master is gone. */
    IT_EQ(lost_count(&lost), 2);
    assert_true(lost_logged(&lost, held[0]));
    assert_true(lost_logged(&lost, held[1]));
    IT_WAIT(rt_redis_shardnumsub(e->rc[e->q], chan, wkl + 8) == 0, 5000);

    /* The holder learns it once; no call returns RL_OK any more. */
    atomic_store(&h.stage, 2);
    IT_WAIT(atomic_load(&h.stage) == 3, 10000);
    pthread_join(th, NULL);
    IT_EQ(h.first, 1);
    IT_EQ(h.second, 0);
    IT_RC(h.rel[0], RL_ECANCELED);
    IT_RC(h.rel[1], RL_ECANCELED);
    IT_RC(h.acq_after, RL_ECANCELED);
    IT_RC(h.count_after, RL_ECANCELED);
    IT_RC(h.locked_after, RL_ECANCELED);
    IT_RC(rl_lock_try_acquire(w.lock, 0, RL_LEASE_WATCHDOG), RL_ECANCELED);
    IT_RC(rl_lock_try_acquire(h.l[1], 0, RL_LEASE_WATCHDOG), RL_ECANCELED);
    IT_RC(rl_lock_release(w.lock), RL_ECANCELED);
    IT_RC(rl_lock_force_release(w.lock), RL_ECANCELED);
    IT_RC(rl_lock_ttl(&ttl, w.lock), RL_ECANCELED);
    IT_EQ(ttl, 777);
    IT_EQ(lost_count(&lost), 2);
    if (!use_free) {
        IT_RC(rl_client_shutdown(c), RL_OK);      /* again: harmless */
        IT_RC(rl_lock_is_locked(w.lock), RL_ECANCELED);
        rl_client_free(c);
    }
    rl_lock_free(w.lock);
    for (i = 0; i < 2; i++)
        rl_lock_free(h.l[i]);

    /* The other owner's hold was never disturbed. */
    IT_EQ(rl_lock_interrupted(ol), 0);
    IT_RC(rl_lock_release(ol), RL_OK);
    IT_EQ(exists_on(e, e->q, wkey, wkl), 0);
    rl_lock_free(ol);
    rl_client_free(other);
    pthread_mutex_destroy(&lost.mu);
    assert_no_keys(e);
}

static void test_shutdown_cancels_waiter_and_releases_on_every_master(void **state)
{
    shutdown_with_waiter_and_holds(*state, 0);
}

static void test_free_cancels_waiter_and_releases_on_every_master(void **state)
{
    shutdown_with_waiter_and_holds(*state, 1);
}

/* ---- 6. bad input ------------------------------------------------------- */

/* A key of rlock's layout that holds a string, on the proxied master and on
 * the third: every call says WRONGTYPE at once and leaves it as it was. */
static void test_wrong_type_key_on_two_masters(void **state)
{
    it_pcluster *e = *state;
    rl_client *c = cd_client(e, 0, 1000, NULL, NULL);
    int nodes[2] = { e->p, e->q }, i;

    for (i = 0; i < 2; i++) {
        int m = nodes[i];
        char name[64], key[128], type[32];
        size_t kl;
        rl_lock *l;
        redisReply *r;
        int64_t t0;

        name_on(e, m, "wrongtype", name, sizeof name, key, sizeof key, &kl);
        r = redisCommand(e->rc[m], "SET %b hello", key, kl);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_STATUS);
        freeReplyObject(r);

        l = it_lock(c, name);
        IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_EREDIS);
        if (strstr(rl_last_error(), "WRONGTYPE") == NULL)
            fail_msg("rl_last_error() = \"%s\", expected WRONGTYPE", rl_last_error());
        t0 = rt_now_ms();
        IT_RC(rl_lock_try_acquire(l, 3000, RL_LEASE_WATCHDOG), RL_EREDIS);
        IT_RANGE(rt_now_ms() - t0, 0, 1500);     /* at once, not waited out */
        IT_RC(rl_lock_try_acquire(l, 0, 5000), RL_EREDIS);
        IT_EQ(rl_lock_hold_count(l), 0);
        IT_RC(rl_lock_release(l), RL_ENOTOWNER);
        IT_RC(rl_lock_force_release(l), RL_EREDIS);

        it_type(e->rc[m], key, kl, type, sizeof type);
        assert_string_equal(type, "string");
        r = redisCommand(e->rc[m], "GET %b", key, kl);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        assert_string_equal(r->str, "hello");
        freeReplyObject(r);
        IT_EQ(rt_redis_pttl(e->rc[m], key, kl), -1);

        r = redisCommand(e->rc[m], "DEL %b", key, kl);
        freeReplyObject(r);
        rl_lock_free(l);
    }
    rl_client_free(c);
    assert_no_keys(e);
}

/* Bad waits and leases on a name of each master, held or not; bad names;
 * bad seed lists: RL_EINVAL, and nothing changes anywhere. */
static void test_bad_arguments_change_nothing_on_any_master(void **state)
{
    it_pcluster *e = *state;
#if LONG_MAX > RL_TIME_MAX_MS
    static const long bad_waits[] = { -2, -1000, RL_TIME_MAX_MS + 1L };
    static const long bad_leases[] = { 0, -2, RL_LEASE_MIN_MS - 1, RL_TIME_MAX_MS + 1L };
#else
    static const long bad_waits[] = { -2, -1000 };
    static const long bad_leases[] = { 0, -2, RL_LEASE_MIN_MS - 1 };
#endif
    int masters[3] = { e->seed, e->p, e->q }, i, m;
    rl_client *c = cd_client(e, 0, 1000, NULL, NULL), *cout;
    rl_lock *out = (rl_lock *)(uintptr_t)0x5a5a5a50, *l;
    char longname[RL_NAME_MAX + 2], longkey[RL_NAME_MAX + 16], url[600];
    size_t k, kl;
    rl_options o;
    int slot;

    for (i = 0; i < 3; i++) {
        char name[64], key[128];
        m = masters[i];
        name_on(e, m, "badargs", name, sizeof name, key, sizeof key, &kl);
        l = it_lock(c, name);
        for (k = 0; k < sizeof bad_waits / sizeof bad_waits[0]; k++)
            IT_RC(rl_lock_try_acquire(l, bad_waits[k], RL_LEASE_WATCHDOG), RL_EINVAL);
        for (k = 0; k < sizeof bad_leases / sizeof bad_leases[0]; k++)
            IT_RC(rl_lock_try_acquire(l, 0, bad_leases[k]), RL_EINVAL);
        IT_EQ(rl_lock_hold_count(l), 0);
        IT_EQ(exists_on(e, m, key, kl), 0);

        IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
        for (k = 0; k < sizeof bad_waits / sizeof bad_waits[0]; k++)
            IT_RC(rl_lock_try_acquire(l, bad_waits[k], RL_LEASE_WATCHDOG), RL_EINVAL);
        for (k = 0; k < sizeof bad_leases / sizeof bad_leases[0]; k++)
            IT_RC(rl_lock_try_acquire(l, 0, bad_leases[k]), RL_EINVAL);
        IT_EQ(rl_lock_hold_count(l), 1);
        IT_EQ(count_on(e, m, key, kl), 1);
        IT_EQ(rl_lock_interrupted(l), 0);
        /* RL_WAIT_FOREVER is not a bad wait: reentry returns at once. */
        IT_RC(rl_lock_try_acquire(l, RL_WAIT_FOREVER, RL_LEASE_WATCHDOG), RL_OK);
        IT_EQ(count_on(e, m, key, kl), 2);
        IT_RC(rl_lock_release(l), RL_OK);
        IT_RC(rl_lock_release(l), RL_OK);
        IT_RC(rl_lock_release(l), RL_ENOTOWNER);
        IT_EQ(exists_on(e, m, key, kl), 0);
        rl_lock_free(l);
    }

    /* Names: empty and one byte too long are refused; the longest works on
     * whichever master owns its slot. */
    IT_RC(rl_lock_new(&out, c, ""), RL_EINVAL);
    IT_RC(rl_lock_new_bin(&out, c, "x", 0), RL_EINVAL);
    memset(longname, 'n', RL_NAME_MAX + 1);
    longname[RL_NAME_MAX + 1] = '\0';
    IT_RC(rl_lock_new(&out, c, longname), RL_EINVAL);
    IT_RC(rl_lock_new_bin(&out, c, longname, RL_NAME_MAX + 1), RL_EINVAL);
    assert_ptr_equal(out, (rl_lock *)(uintptr_t)0x5a5a5a50);
    longname[RL_NAME_MAX] = '\0';
    kl = it_key(longkey, sizeof longkey, "rl:", longname, RL_NAME_MAX, NULL);
    slot = rt_cluster_keyslot(e->cl, longkey, kl);
    assert_true(slot >= 0);
    m = e->owner[slot];
    l = it_lock(c, longname);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(count_on(e, m, longkey, kl), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(exists_on(e, m, longkey, kl), 0);
    rl_lock_free(l);

    /* Seed lists with a bad member are refused as a whole. */
    cout = (rl_client *)(uintptr_t)0x5a5a5a50;
    snprintf(url, sizeof url, "%s,127.0.0.1:abc", e->cl->url);
    it_options(&o, url, 0, 0);
    IT_RC(rl_client_new(&cout, &o), RL_EINVAL);
    snprintf(url, sizeof url, "%s,,127.0.0.1:%d", e->cl->url, e->cl->node[e->q]->port);
    it_options(&o, url, 0, 0);
    IT_RC(rl_client_new(&cout, &o), RL_EINVAL);
    snprintf(url, sizeof url, "%s,127.0.0.1:70000", e->cl->url);
    it_options(&o, url, 0, 0);
    IT_RC(rl_client_new(&cout, &o), RL_EINVAL);
    assert_ptr_equal(cout, (rl_client *)(uintptr_t)0x5a5a5a50);

    rl_client_free(c);
    assert_no_keys(e);
}

int main(int argc, char **argv)
{
#define CD_TEST(f) cmocka_unit_test_setup_teardown(f, proxy_reset, proxy_reset)
    const struct CMUnitTest tests[] = {
        CD_TEST(test_lost_reply_first_acquire_is_read_back),
        CD_TEST(test_lost_reply_reentrant_acquire_is_read_back),
        CD_TEST(test_lost_reply_inner_and_final_release),
        CD_TEST(test_lost_final_release_after_the_lease_is_lost),
        CD_TEST(test_unresolved_reentry_flags_and_drops),
        CD_TEST(test_unresolved_inner_release_gives_up_the_hold),
        CD_TEST(test_unresolved_first_acquire_leaves_no_ghost),
        CD_TEST(test_leftover_drop_never_touches_another_owner),
        CD_TEST(test_shutdown_drops_a_pending_leftover),
        CD_TEST(test_fork_child_is_a_new_owner_on_every_master),
        CD_TEST(test_fork_while_a_thread_waits_on_another_master),
        CD_TEST(test_shutdown_cancels_waiter_and_releases_on_every_master),
        CD_TEST(test_free_cancels_waiter_and_releases_on_every_master),
        CD_TEST(test_wrong_type_key_on_two_masters),
        CD_TEST(test_bad_arguments_change_nothing_on_any_master),
    };
#undef CD_TEST

    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, it_pcluster_setup, it_pcluster_teardown);
}
