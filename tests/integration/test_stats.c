/*
 * rl_client_stats(): each counter moves when its event happens, on a real
 * redis-server, and only then. Waits, timeouts, cancellations, losses by
 * cause, connections killed and lost replies are provoked one at a time,
 * and the counters that must not move are checked too. Bad input changes
 * nothing.
 */
#include "it_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proxy.h"

/* The client's counters now (fails the test when they cannot be read). */
static rl_stats stats_of(rl_client *c)
{
    rl_stats s;

    memset(&s, 0, sizeof s);
    s.version = RL_STATS_VERSION;
    IT_RC(rl_client_stats(&s, c), RL_OK);
    return s;
}

/* The bucket a wait of ms falls in (RL_STATS_WAIT_BUCKETS, rlock.h). */
static int bucket_of(unsigned long long ms)
{
    static const unsigned long long bounds[] = { 1, 10, 100, 1000, 10000 };
    int i = 0;

    while (i < RL_STATS_WAIT_BUCKETS - 1 && ms > bounds[i])
        i++;
    return i;
}

static unsigned long long buckets_sum(const rl_stats *s)
{
    unsigned long long n = 0;
    int i;

    for (i = 0; i < RL_STATS_WAIT_BUCKETS; i++)
        n += s->wait_buckets[i];
    return n;
}

static unsigned long long lost_sum(const rl_stats *s)
{
    return s->lost_unconfirmed + s->lost_lease_ended + s->lost_gone + s->lost_forced +
           s->lost_unresolved + s->lost_shutdown + s->lost_other;
}

/* A try by a thread other than the caller (a new thread identity). */
static rl_lock *try_lock_of;
static int try_on_thread(void *arg)
{
    (void)arg;
    return rl_lock_try_acquire(try_lock_of, 0, RL_LEASE_WATCHDOG);
}

/* Acquire, reenter, busy from another thread, release: each counted once,
 * the gauge follows the table. */
static void test_uncontended(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    rl_lock *l = it_lock(c, "st-plain"), *m = it_lock(c, "st-other");
    rl_stats s = stats_of(c);

    IT_EQ(s.version, RL_STATS_VERSION);
    IT_EQ(s.acquisitions, 0);
    IT_EQ(s.releases, 0);
    IT_EQ(s.holds, 0);
    IT_EQ(s.waiters, 0);
    IT_EQ(s.connects, 1);           /* the client's first connection */
    IT_EQ(s.disconnects, 0);

    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    s = stats_of(c);
    IT_EQ(s.acquisitions, 1);
    IT_EQ(s.reentries, 0);
    IT_EQ(s.holds, 1);

    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    s = stats_of(c);
    IT_EQ(s.acquisitions, 1);
    IT_EQ(s.reentries, 1);
    IT_EQ(s.holds, 1);              /* one hold, however often re-entered */

    IT_RC(rl_lock_acquire(m), RL_OK);
    IT_EQ(stats_of(c).holds, 2);

    try_lock_of = l;
    IT_RC(it_on_thread(try_on_thread, NULL, 5000), RL_EBUSY);
    s = stats_of(c);
    IT_EQ(s.busy, 1);
    IT_EQ(s.acquisitions, 2);
    IT_EQ(s.waits, 0);
    IT_EQ(s.timeouts, 0);

    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(stats_of(c).holds, 2);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_RC(rl_lock_release(m), RL_OK);
    IT_RC(rl_lock_release(m), RL_ENOTOWNER);   /* not counted */
    s = stats_of(c);
    IT_EQ(s.releases, 3);
    IT_EQ(s.holds, 0);
    IT_EQ(lost_sum(&s), 0);
    IT_EQ(s.waits, 0);
    IT_EQ(buckets_sum(&s), 0);

    rl_lock_free(l);
    rl_lock_free(m);
    rl_client_free(c);
}

/* A wait that succeeds: waits, the histogram and the waiters gauge; then a
 * wait that times out: timeouts only. The holder is another client, so
 * every count of c is the waiters'. */
static void test_wait_and_timeout(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0), *other = it_client(e, 0);
    rl_lock *l = it_lock(c, "st-wait"), *ol = it_lock(other, "st-wait");
    it_acq a;
    rl_stats s;
    unsigned long long took_ms;

    IT_RC(rl_lock_try_acquire(ol, 0, RL_LEASE_WATCHDOG), RL_OK);
    memset(&a, 0, sizeof a);
    a.lock = l;
    a.wait_ms = 10000;
    a.lease_ms = RL_LEASE_WATCHDOG;
    it_acq_start(&a);
    IT_WAIT(stats_of(c).waiters == 1, 5000);
    s = stats_of(c);
    IT_EQ(s.waits, 0);              /* counted once it has the lock */
    IT_EQ(s.acquisitions, 0);
    IT_RC(rl_lock_release(ol), RL_OK);
    IT_EQ(it_acq_join(&a, 5000), 0);
    IT_RC(a.rc, RL_OK);
    IT_RC(a.release_rc, RL_OK);

    s = stats_of(c);
    IT_EQ(s.waits, 1);
    IT_EQ(s.waiters, 0);
    IT_EQ(s.acquisitions, 1);
    IT_EQ(s.releases, 1);
    IT_EQ(buckets_sum(&s), 1);
    /* The one wait sits in the bucket of its length, which is no longer
     * than the call the thread timed. */
    IT_EQ(s.wait_buckets[bucket_of(s.wait_ms_sum)], 1);
    took_ms = (unsigned long long)((a.t_return_us - a.t_call_us) / 1000);
    IT_RANGE(s.wait_ms_sum, 0, took_ms + 1);
    print_message("waited %llu ms (call: %llu ms)\n", s.wait_ms_sum, took_ms);

    /* A wait that runs out. */
    IT_RC(rl_lock_try_acquire(ol, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(l, 30, RL_LEASE_WATCHDOG), RL_ETIMEDOUT);
    s = stats_of(c);
    IT_EQ(s.timeouts, 1);
    IT_EQ(s.waits, 1);              /* only acquisitions count as waits */
    IT_EQ(buckets_sum(&s), 1);
    IT_EQ(s.waiters, 0);
    IT_EQ(s.acquisitions, 1);
    IT_EQ(s.cancellations, 0);
    IT_RC(rl_lock_release(ol), RL_OK);

    rl_lock_free(l);
    rl_lock_free(ol);
    rl_client_free(c);
    rl_client_free(other);
}

/* A shutdown cancels a waiter and drops a hold: both counted, and still
 * readable after the shutdown; not after the free. */
static void test_shutdown_cancels(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0), *other = it_client(e, 0);
    rl_lock *l = it_lock(c, "st-cancel"), *ol = it_lock(other, "st-cancel");
    rl_lock *mine = it_lock(c, "st-mine");
    it_acq a;
    rl_stats s, copy;

    IT_RC(rl_lock_try_acquire(ol, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(mine, 0, RL_LEASE_WATCHDOG), RL_OK);
    memset(&a, 0, sizeof a);
    a.lock = l;
    a.wait_ms = RL_WAIT_FOREVER;
    a.lease_ms = RL_LEASE_WATCHDOG;
    it_acq_start(&a);
    IT_WAIT(stats_of(c).waiters == 1, 5000);
    IT_EQ(stats_of(c).holds, 1);

    IT_RC(rl_client_shutdown(c), RL_OK);
    IT_EQ(it_acq_join(&a, 5000), 0);
    IT_RC(a.rc, RL_ECANCELED);
    s = stats_of(c);                /* after the shutdown: still answers */
    IT_EQ(s.cancellations, 1);
    IT_EQ(s.waiters, 0);
    IT_EQ(s.waits, 0);
    IT_EQ(s.timeouts, 0);
    IT_EQ(s.lost_shutdown, 1);
    IT_EQ(lost_sum(&s), 1);
    IT_EQ(s.holds, 0);
    IT_EQ(s.acquisitions, 1);
    IT_EQ(rl_interrupted(), 1);     /* the dropped hold, reported once */
    /* An acquisition begun after the shutdown returns RL_ECANCELED too, and
     * counts as every other: cancellations are the calls that returned it. */
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_ECANCELED);
    IT_RC(rl_lock_acquire(l), RL_ECANCELED);
    IT_EQ(stats_of(c).cancellations, 3);

    rl_client_free(c);
    /* Freed (its handles keep the memory): refused, nothing written. */
    memset(&s, 0x5a, sizeof s);
    s.version = RL_STATS_VERSION;
    copy = s;
    IT_RC(rl_client_stats(&s, c), RL_EINVAL);
    if (memcmp(&s, &copy, sizeof s) != 0)
        fail_msg("rl_client_stats on a freed client wrote to its output");
    rl_lock_free(l);
    rl_lock_free(mine);
    IT_RC(rl_lock_release(ol), RL_OK);
    rl_lock_free(ol);
    rl_client_free(other);
}

/* Losses by cause: the field deleted behind the holder (found gone by a
 * renewal), a fixed lease that ends, a force-release. */
static void test_lost_by_cause(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 300);    /* renewed every 100 ms */
    rl_lock *l = it_lock(c, "st-gone"), *f = it_lock(c, "st-fixed"), *k = it_lock(c, "st-kill");
    char key[64];
    size_t kl = it_key(key, sizeof key, "rl:", "st-gone", 7, NULL);
    rl_stats s;
    redisReply *r;

    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_WAIT(stats_of(c).renewal_rounds >= 1, 3000);
    r = redisCommand(e->rc, "DEL %b", key, kl);
    assert_non_null(r);
    IT_EQ(r->integer, 1);
    freeReplyObject(r);
    IT_WAIT(stats_of(c).lost_gone == 1, 3000);
    IT_EQ(rl_lock_interrupted(l), 1);
    s = stats_of(c);
    IT_EQ(lost_sum(&s), 1);
    IT_EQ(s.renewal_failures, 0);   /* the round worked; it found the field gone */
    IT_RC(rl_lock_release(l), RL_ELOST);
    s = stats_of(c);
    IT_EQ(s.releases, 0);
    IT_EQ(s.holds, 0);

    /* A fixed lease of 50 ms, still held when it ends. */
    IT_RC(rl_lock_try_acquire(f, 0, 50), RL_OK);
    IT_WAIT(stats_of(c).lost_lease_ended == 1, 3000);
    IT_EQ(stats_of(c).lost_unconfirmed, 0);
    IT_RC(rl_lock_release(f), RL_ELOST);

    /* Force-released through this client. */
    IT_RC(rl_lock_try_acquire(k, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_force_release(k), RL_OK);
    s = stats_of(c);
    IT_EQ(s.lost_forced, 1);
    IT_EQ(s.lost_gone, 1);
    IT_EQ(lost_sum(&s), 3);
    IT_RC(rl_lock_release(k), RL_ELOST);

    rl_lock_free(l);
    rl_lock_free(f);
    rl_lock_free(k);
    rl_client_free(c);
}

/* A network that stops forwarding: renewal rounds fail, and the watchdog
 * hold is lost as not confirmed in time. */
static void test_renewal_failures(void **state)
{
    it_env *e = *state;
    it_proxied p;
    rl_stats s;

    it_proxied_open(&p, e, "st-stall", 300, 100);
    IT_RC(rl_lock_try_acquire(p.l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_WAIT(stats_of(p.c).renewal_rounds >= 1, 3000);
    IT_EQ(stats_of(p.c).renewal_failures, 0);
    IT_EQ(rt_proxy_stall(p.proxy, 1), 0);
    IT_WAIT(stats_of(p.c).lost_unconfirmed == 1, 3000);
    IT_WAIT(stats_of(p.c).renewal_failures >= 1, 3000);
    s = stats_of(p.c);
    IT_RANGE(s.renewal_failures, 1, s.renewal_rounds);
    IT_EQ(s.lost_gone, 0);
    IT_EQ(lost_sum(&s), 1);
    IT_EQ(rl_lock_interrupted(p.l), 1);
    IT_EQ(rt_proxy_stall(p.proxy, 0), 0);
    IT_RC(rl_lock_release(p.l), RL_ELOST);
    it_proxied_close(&p);
}

/* CLIENT KILL of rlock's connections: counted as lost, and the next call
 * opens a new one. */
static void test_reconnect(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    rl_lock *l = it_lock(c, "st-kill");
    rl_stats before, s;
    redisReply *r;

    IT_RC(rl_lock_try_acquire(l, 0, 10000), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    before = stats_of(c);
    IT_EQ(before.disconnects, 0);
    /* Every normal client but this one (SKIPME): rlock's pool. */
    r = redisCommand(e->rc, "CLIENT KILL TYPE normal");
    assert_non_null(r);
    IT_RANGE(r->integer, 1, 100);
    freeReplyObject(r);
    /* The first call may find its connection dead after sending
     * (RL_ECONN); the next one reconnects. */
    IT_WAIT(rl_lock_try_acquire(l, 0, 10000) == RL_OK, 5000);
    s = stats_of(c);
    IT_RANGE(s.disconnects, 1, 100);
    IT_RANGE(s.connects, before.connects + 1, before.connects + 100);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);
}

/* The number of subscribers of a channel (PUBSUB NUMSUB). */
static long long numsub(redisContext *rc, const char *ch)
{
    redisReply *r = redisCommand(rc, "PUBSUB NUMSUB %s", ch);
    long long n = -1;

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_INTEGER)
        n = r->element[1]->integer;
    freeReplyObject(r);
    return n;
}

/* The subscriber's connection killed under a waiter: counted as lost; the
 * waiter still gets the lock when it comes free. */
static void test_subscriber_killed(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0), *other = it_client(e, 0);
    rl_lock *l = it_lock(c, "st-sub"), *ol = it_lock(other, "st-sub");
    unsigned long long before;
    redisReply *r;
    it_acq a;

    IT_RC(rl_lock_try_acquire(ol, 0, RL_LEASE_WATCHDOG), RL_OK);
    memset(&a, 0, sizeof a);
    a.lock = l;
    a.wait_ms = 20000;
    a.lease_ms = RL_LEASE_WATCHDOG;
    it_acq_start(&a);
    IT_WAIT(numsub(e->rc, "rl:{st-sub}:release") == 1, 5000);
    before = stats_of(c).disconnects;
    r = redisCommand(e->rc, "CLIENT KILL TYPE pubsub");
    assert_non_null(r);
    IT_EQ(r->integer, 1);
    freeReplyObject(r);
    IT_WAIT(stats_of(c).disconnects == before + 1, 5000);
    IT_WAIT(numsub(e->rc, "rl:{st-sub}:release") == 1, 5000);   /* back */
    IT_EQ(stats_of(c).waiters, 1);
    IT_RC(rl_lock_release(ol), RL_OK);
    IT_EQ(it_acq_join(&a, 10000), 0);
    IT_RC(a.rc, RL_OK);
    IT_EQ(stats_of(c).waits, 1);
    rl_lock_free(l);
    rl_lock_free(ol);
    rl_client_free(c);
    rl_client_free(other);
}

/* A lost reply whose outcome a read-back settled; then one that could not
 * be read back (new connections refused): the hold is lost, unresolved. */
static void test_lost_replies(void **state)
{
    it_env *e = *state;
    it_proxied p;
    rl_stats s;
    int rc;

    it_proxied_open(&p, e, "st-lost", 0, 1000);
    rt_proxy_drop_next_reply_matching(p.proxy, "EVAL");
    rc = rl_lock_try_acquire(p.l, 0, RL_LEASE_WATCHDOG);
    IT_RC(rc, RL_OK);
    IT_EQ(rt_proxy_dropped(p.proxy), 1);
    s = stats_of(p.c);
    IT_EQ(s.replies_resolved, 1);
    IT_EQ(s.replies_unresolved, 0);
    IT_EQ(s.acquisitions, 1);
    IT_RANGE(s.disconnects, 1, 10);
    IT_EQ(lost_sum(&s), 0);

    /* Reentry: its reply lost, and no new connection to read back on. */
    IT_EQ(rt_proxy_refuse(p.proxy, 1), 0);
    rt_proxy_drop_next_reply_matching(p.proxy, "EVAL");
    IT_RC(rl_lock_try_acquire(p.l, 0, RL_LEASE_WATCHDOG), RL_ECONN);
    IT_EQ(rt_proxy_dropped(p.proxy), 2);
    s = stats_of(p.c);
    IT_EQ(s.replies_resolved, 1);
    IT_EQ(s.replies_unresolved, 1);
    IT_EQ(s.lost_unresolved, 1);
    IT_EQ(lost_sum(&s), 1);
    IT_EQ(s.reentries, 0);
    IT_EQ(rt_proxy_refuse(p.proxy, 0), 0);
    IT_RC(rl_lock_release(p.l), RL_ELOST);
    it_proxied_close(&p);
}

/* A fork child is a new owner: its counters start from zero (the
 * parent's hold is not its), and the parent's stay as they were. */
static void test_fork_child_starts_at_zero(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    rl_lock *l = it_lock(c, "st-fork");
    rl_stats s;
    pid_t pid;
    int status = 0;

    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        rl_stats cs;
        memset(&cs, 0xff, sizeof cs);
        cs.version = RL_STATS_VERSION;
        if (rl_client_stats(&cs, c) != RL_OK)
            _exit(10);
        if (cs.acquisitions != 0 || cs.holds != 0 || cs.connects != 0)
            _exit(11);
        /* Its own work counts: the parent holds the lock. */
        if (rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG) != RL_EBUSY)
            _exit(12);
        if (rl_client_stats(&cs, c) != RL_OK || cs.busy != 1 || cs.acquisitions != 0)
            _exit(13);
        _exit(0);
    }
    assert_true(waitpid(pid, &status, 0) == pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("fork child: status %d (exit %d)", status, WEXITSTATUS(status));
    s = stats_of(c);
    IT_EQ(s.acquisitions, 1);
    IT_EQ(s.holds, 1);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);
}

/* Bad input: RL_EINVAL, and not one byte written. */
static void test_bad_input(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    struct {
        rl_stats s;
        unsigned char tail[64];
    } buf, copy;
    const unsigned bad[] = { 0, RL_STATS_VERSION + 1, 0xffffffffu };
    size_t i;

    IT_RC(rl_client_stats(NULL, c), RL_EINVAL);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&buf, 0xa5, sizeof buf);
        buf.s.version = bad[i];
        copy = buf;
        IT_RC(rl_client_stats(&buf.s, c), RL_EINVAL);
        if (memcmp(&buf, &copy, sizeof buf) != 0)
            fail_msg("rl_client_stats(version %u) wrote to its output", bad[i]);
    }
    memset(&buf, 0xa5, sizeof buf);
    buf.s.version = RL_STATS_VERSION;
    copy = buf;
    IT_RC(rl_client_stats(&buf.s, NULL), RL_EINVAL);
    if (memcmp(&buf, &copy, sizeof buf) != 0)
        fail_msg("rl_client_stats(NULL client) wrote to its output");
    /* A good call writes the struct and not a byte past it. */
    IT_RC(rl_client_stats(&buf.s, c), RL_OK);
    IT_EQ(buf.s.version, RL_STATS_VERSION);
    IT_EQ(buf.s.acquisitions, 0);
    for (i = 0; i < sizeof buf.tail; i++)
        IT_EQ(buf.tail[i], 0xa5);
    rl_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_uncontended, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_wait_and_timeout, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_cancels, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_lost_by_cause, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_renewal_failures, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_reconnect, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_subscriber_killed, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_lost_replies, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_fork_child_starts_at_zero, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_bad_input, it_setup, it_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
