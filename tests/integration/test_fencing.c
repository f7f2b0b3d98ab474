/*
 * Fencing tokens (rl_lock_token, rl_options.fencing) and lock-delay
 * (rl_options.lock_delay_ms) on a real redis-server: tokens rise strictly
 * across reentry, release, expiry, other threads, client restarts and a
 * lost reply; a hold lost rather than released keeps its name blocked for
 * the delay, a clean release does not; the modes and options that do not
 * offer them say so and change nothing. The same on a Redis Cluster is in
 * test_cluster.c.
 */
#include "it_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy.h"

static rl_client *fenced_client(it_env *e, const char *url, long lease_ms, long delay_ms)
{
    char buf[64];
    rl_options o;

    if (!url) {
        snprintf(buf, sizeof buf, "redis://127.0.0.1:%d", e->redis->port);
        url = buf;
    }
    it_options(&o, url, lease_ms, 1000);
    o.connect_timeout_ms = 1000;
    o.fencing = 1;
    o.lock_delay_ms = delay_ms;
    return it_client_opts(&o);
}

/* The calling thread's token (fails the test when there is none). */
static unsigned long long token_of(rl_lock *l)
{
    unsigned long long t = 0;

    IT_RC(rl_lock_token(&t, l), RL_OK);
    return t;
}

/* The token stored in the hold's value in Redis ("<count> <since> <token>"). */
static unsigned long long token_in_redis(it_env *e, const char *name)
{
    char key[128];
    size_t kl = it_key(key, sizeof key, "rl:", name, strlen(name), NULL);
    it_hash h;
    const char *sp;

    if (it_hgetall(e->rc, key, kl, &h) != 0 || h.fields != 1)
        fail_msg("%s: no single hold in Redis", name);
    sp = strrchr(h.raw, ' ');
    if (!sp || sp == strchr(h.raw, ' '))
        fail_msg("%s: value \"%s\" carries no token", name, h.raw);
    return strtoull(sp + 1, NULL, 10);
}

static rl_lock *on_thread_lock;
static unsigned long long on_thread_token;
static int take_and_read_token(void *arg)
{
    int rc = rl_lock_try_acquire(on_thread_lock, 2000, RL_LEASE_WATCHDOG);

    (void)arg;
    if (rc != RL_OK)
        return rc;
    rc = rl_lock_token(&on_thread_token, on_thread_lock);
    if (rl_lock_release(on_thread_lock) != RL_OK && rc == RL_OK)
        rc = RL_EPROTO;
    return rc;
}

/* Bad input and the statuses of rl_lock_token. */
static void test_token_statuses(void **state)
{
    it_env *e = *state;
    rl_client *plain = it_client(e, 0), *fenced = fenced_client(e, NULL, 0, 0);
    rl_lock *lp = it_lock(plain, "ft-st"), *lf = it_lock(fenced, "ft-st2");
    unsigned long long t = 77;

    IT_RC(rl_lock_token(NULL, lf), RL_EINVAL);
    IT_RC(rl_lock_token(&t, NULL), RL_EINVAL);
    IT_RC(rl_lock_token(&t, lf), RL_ENOTOWNER);
    IT_RC(rl_lock_try_acquire(lp, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_token(&t, lp), RL_ENOTSUP);
    IT_EQ(t, 77);                               /* untouched on error */
    IT_RC(rl_lock_release(lp), RL_OK);
    /* A client without fencing writes no counter. */
    IT_EQ(rt_redis_exists(e->rc, "rl:{ft-st}:fence", 16), 0);
    rl_lock_free(lp);
    rl_lock_free(lf);
    rl_client_free(plain);
    rl_client_free(fenced);
}

/* Strictly rising across release, another thread, expiry and a client
 * restart; a reentry and a partial release keep the token. */
static void test_tokens_rise(void **state)
{
    it_env *e = *state;
    rl_client *c = fenced_client(e, NULL, 0, 0);
    rl_lock *l = it_lock(c, "ft-rise");
    unsigned long long t1, t2, t3, t4, t5;
    long long counter;

    IT_RC(rl_lock_acquire(l), RL_OK);
    t1 = token_of(l);
    IT_EQ(t1, token_in_redis(e, "ft-rise"));
    IT_RC(rl_lock_acquire(l), RL_OK);           /* reentry */
    IT_EQ(token_of(l), t1);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(token_of(l), t1);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_RC(rl_lock_token(&t2, l), RL_ENOTOWNER);

    IT_RC(rl_lock_acquire(l), RL_OK);
    t2 = token_of(l);
    IT_RC(rl_lock_release(l), RL_OK);
    if (t2 <= t1)
        fail_msg("token %llu after %llu", t2, t1);

    on_thread_lock = l;
    IT_RC(it_on_thread(take_and_read_token, NULL, 5000), RL_OK);
    t3 = on_thread_token;
    if (t3 <= t2)
        fail_msg("another thread's token %llu after %llu", t3, t2);

    /* A fixed lease that runs out in Redis: the next hold still rises. */
    IT_RC(rl_lock_try_acquire(l, 0, 30), RL_OK);
    IT_WAIT(rt_redis_exists(e->rc, "rl:{ft-rise}", 12) == 0, 2000);
    IT_RC(it_on_thread(take_and_read_token, NULL, 5000), RL_OK);
    t4 = on_thread_token;
    if (t4 <= t3)
        fail_msg("token %llu after an expiry, after %llu", t4, t3);
    IT_RC(rl_lock_release(l), RL_ELOST);        /* its fixed lease ran out */

    /* A new client (a restart) continues the count. */
    rl_lock_free(l);
    rl_client_free(c);
    c = fenced_client(e, NULL, 0, 0);
    l = it_lock(c, "ft-rise");
    IT_RC(rl_lock_acquire(l), RL_OK);
    t5 = token_of(l);
    if (t5 <= t4)
        fail_msg("token %llu after a restart, after %llu", t5, t4);
    IT_RC(rl_lock_release(l), RL_OK);
    /* The counter outlives every hold: no expiry. */
    IT_EQ(rt_redis_pttl(e->rc, "rl:{ft-rise}:fence", 18), -1);
    {
        redisReply *r = redisCommand(e->rc, "GET rl:{ft-rise}:fence");
        assert_true(r && r->type == REDIS_REPLY_STRING);
        counter = strtoll(r->str, NULL, 10);
        freeReplyObject(r);
    }
    IT_EQ(counter, (long long)t5);
    rl_lock_free(l);
    rl_client_free(c);
}

/* An acquisition whose reply is lost is read back with its token. */
static void test_token_after_lost_reply(void **state)
{
    it_env *e = *state;
    rt_proxy *p = rt_proxy_start(e->redis->port);
    rl_client *c;
    rl_lock *l;
    unsigned long long before, after;
    int rc;

    assert_non_null(p);
    c = fenced_client(e, rt_proxy_url(p), 0, 0);
    l = it_lock(c, "ft-lost");
    IT_RC(rl_lock_acquire(l), RL_OK);
    before = token_of(l);
    IT_RC(rl_lock_release(l), RL_OK);
    rt_proxy_drop_next_reply_matching(p, "EVAL");
    rc = rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG);
    IT_EQ(rt_proxy_dropped(p), 1);
    IT_RC(rc, RL_OK);                           /* read back: applied */
    after = token_of(l);
    if (after <= before)
        fail_msg("token %llu read back after %llu", after, before);
    IT_EQ(after, token_in_redis(e, "ft-lost"));
    /* Read back, not sent again: one token taken, not two. */
    IT_EQ(after, before + 1);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);
    rt_proxy_stop(p);
}

/* Redlock offers neither; an older options layout has neither; a client
 * with either offers only plain locks. */
static void test_refused_where_not_offered(void **state)
{
    it_env *e = *state;
    rl_client *c = NULL;
    rl_options o;
    rl_lock *l;
    char url[64];

    rl_options_init(&o, RL_OPTIONS_VERSION);
    o.url = "redlock://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3";
    o.fencing = 1;
    IT_RC(rl_client_new(&c, &o), RL_ENOTSUP);
    assert_null(c);
    o.fencing = 0;
    o.lock_delay_ms = 100;
    IT_RC(rl_client_new(&c, &o), RL_ENOTSUP);
    assert_null(c);
    o.lock_delay_ms = -1;
    o.url = NULL;
    IT_RC(rl_client_new(&c, &o), RL_EINVAL);
    assert_null(c);

    /* Fencing and lock-delay are the plain lock's: other kinds are refused. */
    {
        rl_client *f = fenced_client(e, NULL, 0, 0), *d;
        rl_lock *k = NULL;
        IT_RC(rl_lock_new_kind(&k, f, "ft-kind", 7, RL_KIND_FAIR), RL_ENOTSUP);
        assert_null(k);
        IT_RC(rl_lock_new_kind(&k, f, "ft-kind", 7, RL_KIND_PLAIN), RL_OK);
        rl_lock_free(k);
        rl_client_free(f);
        rl_options_init(&o, RL_OPTIONS_VERSION);
        snprintf(url, sizeof url, "redis://127.0.0.1:%d", e->redis->port);
        o.url = url;
        o.lock_delay_ms = 100;
        IT_RC(rl_client_new(&d, &o), RL_OK);
        k = NULL;
        IT_RC(rl_lock_new_kind(&k, d, "ft-kind", 7, RL_KIND_FAIR), RL_ENOTSUP);
        rl_client_free(d);
    }

    /* Layout 3 ends before the new fields: whatever follows is not read. */
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", e->redis->port);
    memset(&o, 0x5a, sizeof o);
    IT_RC(rl_options_init(&o, 3), RL_OK);
    o.url = url;
    IT_RC(rl_client_new(&c, &o), RL_OK);
    l = it_lock(c, "ft-v3");
    IT_RC(rl_lock_acquire(l), RL_OK);
    IT_RC(rl_lock_token(&(unsigned long long){ 0 }, l), RL_ENOTSUP);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, "rl:{ft-v3}:fence", 16), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

/* ---- lock-delay ----------------------------------------------------------- */

static int64_t now_ms(void)
{
    return rt_now_us() / 1000;
}

/* A fixed lease runs out (lost): a waiter of another client gets the name
 * only the delay after it; a clean release lets it in at once. */
static void test_delay_after_a_lost_hold(void **state)
{
    it_env *e = *state;
    rl_client *a = fenced_client(e, NULL, 0, 1500), *b = it_client(e, 0);
    rl_lock *la = it_lock(a, "dl-lost"), *lb = it_lock(b, "dl-lost");
    int64_t t0, got;

    t0 = now_ms();
    IT_RC(rl_lock_try_acquire(la, 0, 200), RL_OK);
    /* Redis keeps the lease plus the delay; the holder's flag rises at the lease. */
    IT_RANGE(rt_redis_pttl(e->rc, "rl:{dl-lost}", 12), 1500, 1700);
    IT_WAIT(rl_lock_interrupted(la) == 1, 2000);
    IT_RC(rl_lock_try_acquire(lb, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(rl_lock_try_acquire(lb, 5000, RL_LEASE_WATCHDOG), RL_OK);
    got = now_ms();
    print_message("lease 200 ms, delay 1500 ms: the next holder in after %lld ms\n",
                  (long long)(got - t0));
    /* Not before the lease plus the delay (less the clock's grain). */
    IT_RANGE(got - t0, 1690, 4000);
    IT_RC(rl_lock_release(lb), RL_OK);
    IT_RC(rl_lock_release(la), RL_ELOST);

    /* A clean release: no delay at all. */
    IT_RC(rl_lock_try_acquire(la, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RANGE(rt_redis_pttl(e->rc, "rl:{dl-lost}", 12), 30000, 31500);
    IT_RC(rl_lock_release(la), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, "rl:{dl-lost}", 12), 0);
    IT_RC(rl_lock_try_acquire(lb, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(lb), RL_OK);
    rl_lock_free(la);
    rl_lock_free(lb);
    rl_client_free(a);
    rl_client_free(b);
}

/* The watchdog keeps lease + delay in Redis; a force-release leaves the
 * name blocked for what was left of it (the holder learns it at its next
 * renewal), a shutdown's drop for the delay from then. */
static void test_delay_renewed_and_started(void **state)
{
    it_env *e = *state;
    rl_client *a = fenced_client(e, NULL, 600, 2000), *b = it_client(e, 0);
    rl_lock *la = it_lock(a, "dl-wd"), *lb = it_lock(b, "dl-wd");
    int64_t t0;

    IT_RC(rl_lock_acquire(la), RL_OK);
    t0 = now_ms();
    /* Several renewals later the hold is alive, and Redis keeps lease + delay. */
    IT_WAIT(now_ms() - t0 > 1500, 3000);
    IT_EQ(rl_lock_interrupted(la), 0);
    IT_RANGE(rt_redis_pttl(e->rc, "rl:{dl-wd}", 10), 2000, 2600);

    /* Force-released by another client: blocked for the lease left and the
     * delay (never shortened). */
    IT_RC(rl_lock_force_release(lb), RL_OK);
    IT_RANGE(rt_redis_pttl(e->rc, "rl:{dl-wd}", 10), 1000, 2600);
    IT_RC(rl_lock_try_acquire(lb, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_WAIT(rl_lock_interrupted(la) == 1, 3000);
    IT_RC(rl_lock_release(la), RL_ELOST);
    IT_RC(rl_lock_try_acquire(lb, 4000, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(lb), RL_OK);

    /* Still held at shutdown: lost, so the delay runs from the shutdown. */
    IT_RC(rl_lock_acquire(la), RL_OK);
    IT_RC(rl_client_shutdown(a), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, "rl:{dl-wd}", 10), 1);
    IT_RANGE(rt_redis_pttl(e->rc, "rl:{dl-wd}", 10), 1000, 2000);
    IT_RC(rl_lock_try_acquire(lb, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(rl_lock_try_acquire(lb, 4000, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(lb), RL_OK);
    rl_lock_free(la);
    rl_lock_free(lb);
    rl_client_free(a);
    rl_client_free(b);
}

/* Review finding: a shutdown of a holder with a delay leaves a tombstone;
 * a waiter of another client that slept on the holder's lease (lease +
 * delay) must be woken and sleep only for the delay (it overslept by the
 * whole lease: the tombstone sent no notice). (A force-release keeps the
 * lease left: test_delay_force_release_outlasts_the_flag.) */
static void test_delay_wakes_waiters(void **state)
{
    it_env *e = *state;
    rl_client *a = fenced_client(e, NULL, 10000, 300), *b = it_client(e, 0);
    rl_lock *la = it_lock(a, "dl-wake"), *lb = it_lock(b, "dl-wake");
    it_acq w;
    int64_t t0;

    IT_RC(rl_lock_acquire(la), RL_OK);
    it_acq_begin(&w, lb, 20000, 0);
    /* The waiter sleeps on the lease it saw: it listens for the notice. */
    IT_WAIT(rt_redis_numsub(e->rc, "rl:{dl-wake}:release", 20) >= 1, 5000);
    t0 = now_ms();
    IT_RC(rl_client_shutdown(a), RL_OK);
    /* In after the delay (300 ms), not after the lease (10 s). */
    IT_EQ(it_acq_join(&w, 5000), 0);
    IT_RC(w.rc, RL_OK);
    print_message("shutdown: the waiter in %lld ms later (delay 300, lease 10000)\n",
                  (long long)(now_ms() - t0));
    IT_RC(w.release_rc, RL_OK);
    rl_lock_free(la);
    rl_lock_free(lb);
    rl_client_free(a);
    rl_client_free(b);
}

/* Issue 21 item 6: Redis keeps a hold of a delay client for the lease plus
 * the delay, which must fit in RL_TIME_MAX_MS (it was cut there: a long
 * lease lost its delay, and Redis took the lease for over while the
 * holder's flag was down). Every place a lease is given refuses a sum past
 * it with RL_EINVAL and writes nothing. */
static void test_delay_lease_past_the_cap_refused(void **state)
{
    it_env *e = *state;
    rl_client *c = NULL, *d;
    rl_lock *l, *k = NULL;
    rl_options o;
    char url[64];
    int kinds[3] = { RL_KIND_FAIR, RL_KIND_READ, RL_KIND_WRITE }, i;

    snprintf(url, sizeof url, "redis://127.0.0.1:%d", e->redis->port);
    /* The client's lease (the default's 30000 too) plus its delay. */
    it_options(&o, url, 0, 1000);
    o.lock_delay_ms = RL_TIME_MAX_MS - 29999;
    IT_RC(rl_client_new(&c, &o), RL_EINVAL);
    assert_null(c);
    o.lock_delay_ms = RL_TIME_MAX_MS - 30000;
    IT_RC(rl_client_new(&c, &o), RL_OK);
    rl_client_free(c);
    c = NULL;
    it_options(&o, url, RL_TIME_MAX_MS - 1000, 1000);
    o.lock_delay_ms = 1001;
    IT_RC(rl_client_new(&c, &o), RL_EINVAL);
    assert_null(c);
    o.lock_delay_ms = RL_TIME_MAX_MS;
    o.url = "redlock://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3";
    assert_int_not_equal(rl_client_new(&c, &o), RL_OK);
    assert_null(c);

    /* A call's own lease plus the client's delay: refused, nothing written,
     * the hold count untouched on reentry; at the cap it is taken. */
    d = fenced_client(e, NULL, 0, 1000);
    l = it_lock(d, "dl-cap");
    IT_RC(rl_lock_try_acquire(l, 0, RL_TIME_MAX_MS), RL_EINVAL);
    IT_RC(rl_lock_try_acquire(l, 1000, RL_TIME_MAX_MS - 999), RL_EINVAL);
    IT_EQ(rt_redis_exists(e->rc, "rl:{dl-cap}", 11), 0);
    IT_EQ(rt_redis_exists(e->rc, "rl:{dl-cap}:fence", 17), 0);
    IT_EQ(rl_lock_hold_count(l), 0);
    IT_RC(rl_lock_try_acquire(l, 0, RL_TIME_MAX_MS - 1000), RL_OK);
    IT_RANGE(rt_redis_pttl(e->rc, "rl:{dl-cap}", 11), RL_TIME_MAX_MS - 1000,
             RL_TIME_MAX_MS);
    IT_RC(rl_lock_try_acquire(l, 0, RL_TIME_MAX_MS), RL_EINVAL);
    IT_EQ(rl_lock_hold_count(l), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, "rl:{dl-cap}", 11), 0);
    /* Read-write and fair handles take no lease of a delay client at all. */
    for (i = 0; i < 3; i++) {
        IT_RC(rl_lock_new_kind(&k, d, "dl-cap-k", 8, kinds[i]), RL_ENOTSUP);
        assert_null(k);
    }
    rl_lock_free(l);
    rl_client_free(d);

    /* Without a delay the whole range stays a lease. */
    d = it_client(e, 0);
    l = it_lock(d, "dl-cap");
    IT_RC(rl_lock_try_acquire(l, 0, RL_TIME_MAX_MS), RL_OK);
    IT_RANGE(rt_redis_pttl(e->rc, "rl:{dl-cap}", 11), RL_TIME_MAX_MS - 1000,
             RL_TIME_MAX_MS);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(d);
}

/* When the holder's flag rose (on_lost): ms, 0 before. */
static void note_flag(const char *name, size_t len, void *payload)
{
    int64_t zero = 0;

    (void)name;
    (void)len;
    atomic_compare_exchange_strong((_Atomic int64_t *)payload, &zero, now_ms());
}

/* The client's renewal rounds so far. */
static unsigned long long renewal_rounds(rl_client *c)
{
    return it_stats(c).renewal_rounds;
}

/* The forcer of test_delay_force_release_outlasts_the_flag: a handle of
 * the given kind in a client without a delay. */
static int force_with(it_env *e, int kind, const char *name)
{
    rl_client *f = it_client(e, 0);
    rl_lock *l = NULL;
    int rc;

    IT_RC(rl_lock_new_kind(&l, f, name, strlen(name), kind), RL_OK);
    rc = rl_lock_force_release(l);
    rl_lock_free(l);
    rl_client_free(f);
    return rc;
}

/*
 * Issue 21 item 7: a holder force-released by another client learns it at
 * its next renewal (up to the renew interval plus the command timeout
 * later), or at its lease's end for a fixed lease; the next holder must
 * not get in before that, and not before the delay after it. The holder
 * here: delay 1500, lease 6000 renewed every 3000 (round 0: forced by a
 * plain handle, 1: by a fair one, just after a renewal), or a fixed lease
 * of 3000 (round 2: forced by a plain handle, 3: by a write handle). A
 * waiter of a third client waits for the name.
 */
static void test_delay_force_release_outlasts_the_flag(void **state)
{
    it_env *e = *state;
    _Atomic int64_t flag_at;
    int round;

    for (round = 0; round < 4; round++) {
        static const int forcer[4] = { RL_KIND_PLAIN, RL_KIND_FAIR, RL_KIND_PLAIN,
                                       RL_KIND_WRITE };
        static const char *const what[4] = { "plain forcer", "fair forcer",
                                             "fixed lease 3000", "fixed lease, write forcer" };
        char url[64];
        rl_options o;
        rl_client *a, *b;
        rl_lock *la, *lb;
        unsigned long long rounds;
        int64_t t_force, t_in;
        it_acq w;

        snprintf(url, sizeof url, "redis://127.0.0.1:%d", e->redis->port);
        it_options(&o, url, 6000, 1000);
        o.renew_interval_ms = 3000;
        o.lock_delay_ms = 1500;
        o.on_lost = note_flag;
        o.payload = &flag_at;
        atomic_store(&flag_at, 0);
        a = it_client_opts(&o);
        b = it_client(e, 0);
        la = it_lock(a, "dl-force");
        lb = it_lock(b, "dl-force");
        if (round < 2) {
            IT_RC(rl_lock_acquire(la), RL_OK);
            /* Just after a renewal: the next one is an interval away. */
            rounds = renewal_rounds(a);
            IT_WAIT(renewal_rounds(a) > rounds, 5000);
        } else {
            IT_RC(rl_lock_try_acquire(la, 0, 3000), RL_OK);
        }
        it_acq_begin(&w, lb, 30000, 0);
        IT_WAIT(rt_redis_numsub(e->rc, "rl:{dl-force}:release", 21) >= 1, 5000);
        t_force = now_ms();
        IT_RC(force_with(e, forcer[round], "dl-force"), RL_OK);
        IT_EQ(it_acq_join(&w, 20000), 0);
        IT_RC(w.rc, RL_OK);
        t_in = w.t_return_us / 1000;
        IT_WAIT(atomic_load(&flag_at) != 0, 10000);
        print_message("round %d (%s): the holder's flag %lld ms after the force-release, the "
                      "waiter in %lld ms after it: %lld ms after the flag (delay 1500)\n",
                      round, what[round],
                      (long long)(atomic_load(&flag_at) - t_force),
                      (long long)(t_in - t_force), (long long)(t_in - atomic_load(&flag_at)));
        /* Not in before the holder's flag rose, nor within the delay after. */
        if (t_in < atomic_load(&flag_at) + 1500)
            fail_msg("round %d: the waiter got in %lld ms after the holder's flag rose "
                     "(delay 1500)", round, (long long)(t_in - atomic_load(&flag_at)));
        IT_RC(rl_lock_release(la), RL_ELOST);
        rl_lock_free(la);
        rl_lock_free(lb);
        rl_client_free(a);
        rl_client_free(b);
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_token_statuses, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_tokens_rise, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_token_after_lost_reply, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_refused_where_not_offered, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_delay_after_a_lost_hold, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_delay_renewed_and_started, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_delay_wakes_waiters, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_delay_lease_past_the_cap_refused, it_setup,
                                        it_teardown),
        cmocka_unit_test_setup_teardown(test_delay_force_release_outlasts_the_flag, it_setup,
                                        it_teardown),
    };

    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
