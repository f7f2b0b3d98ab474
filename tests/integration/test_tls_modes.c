/*
 * TLS in every multi-node mode, against real TLS servers whose certificates
 * the test makes (tests/common/rt_tls.h): a Redis Cluster with its bus over
 * TLS (rediss://), a Sentinel deployment whose sentinels and replication
 * speak TLS (sentinels://), and Redlock masters (redlocks://).
 *
 * Each group mirrors what the plain-mode tests of the same mode assert
 * (test_cluster*.c, test_sentinel.c, test_redlock.c): locks of every kind
 * on every master, a slot migrated and a master failed over under a
 * renewed hold, a Sentinel failover followed, a stopped Redlock master that
 * delays nobody, a restarted one reached again over TLS, and a master that
 * does not speak TLS named for what it is.
 *
 * The servers keep their plain ports for the test's own hiredis 0.14
 * connections (which have no TLS); rlock's clients use the TLS ports only.
 */
#include "it_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_cluster.h"
#include "rt_sentinel.h"
#include "rt_tls.h"

static rt_tls *tls;

/* What the clients logged (every client here logs), for the checks and for
 * the messages of failures. */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char log_text[16384];

static void keep_log(int level, const char *msg, void *payload)
{
    size_t at;

    (void)level;
    (void)payload;
    pthread_mutex_lock(&log_mu);
    at = strlen(log_text);
    if (at + strlen(msg) + 16 < sizeof log_text)
        snprintf(log_text + at, sizeof log_text - at, "%lld %s\n",
                 (long long)(rt_now_ms() % 100000), msg);
    pthread_mutex_unlock(&log_mu);
}

static int logged(const char *what)
{
    int yes;

    pthread_mutex_lock(&log_mu);
    yes = strstr(log_text, what) != NULL;
    pthread_mutex_unlock(&log_mu);
    return yes;
}

/* The log so far, copied (the clients may still write it). */
static const char *log_now(void)
{
    static char copy[sizeof log_text];

    pthread_mutex_lock(&log_mu);
    memcpy(copy, log_text, sizeof copy);
    pthread_mutex_unlock(&log_mu);
    return copy;
}

static rl_client *tls_client(const char *url, long lease_ms, long command_ms)
{
    rl_options o;

    it_options(&o, url, lease_ms, command_ms);
    o.tls_ca_file = tls->ca;
    o.log = keep_log;
    return it_client_opts(&o);
}

static char key_buf[256];

static const char *key_of(const char *name)
{
    it_key(key_buf, sizeof key_buf, "rl:", name, strlen(name), "");
    return key_buf;
}

/* A lock handle of the given kind, failing the test when it cannot be made. */
static rl_lock *kind_lock(rl_client *c, const char *name, int kind)
{
    rl_lock *l = NULL;

    IT_RC(rl_lock_new_kind(&l, c, name, strlen(name), kind), RL_OK);
    return l;
}

/* Watch holds for ms: fail when one not in `spare` (a mask, bit i for
 * l[i]) is flagged. */
static void none_flagged_for(rl_lock **l, int n, unsigned spare, long ms)
{
    int64_t until = rt_now_ms() + ms;
    int i;

    while (rt_now_ms() < until) {
        for (i = 0; i < n; i++)
            if (!(spare >> i & 1u) && rl_lock_interrupted(l[i]))
                fail_msg("hold %d was flagged; the log:\n%s", i, log_now());
        rt_sleep_ms(20);
    }
}

/*
 * Redis Cluster over TLS: 3 masters with a replica each, tls-cluster yes.
 */

#define CL_LEASE_MS 1500

static int cluster_setup(void **state)
{
    rt_cluster *cl = rt_cluster_start_tls(3, 1, 1000, NULL, tls);

    if (!cl) {
        fprintf(stderr, "cannot start a Redis Cluster over TLS: this test FAILS\n");
        return -1;
    }
    *state = cl;
    return 0;
}

static int cluster_teardown(void **state)
{
    rt_cluster_stop(*state);
    return 0;
}

/* The master of the slot of a name's key (prefix "rl:"), -1 on error. */
static int master_of_name(rt_cluster *cl, const char *name, int *slot)
{
    const char *k = key_of(name);

    *slot = rt_cluster_keyslot(cl, k, strlen(k));
    return *slot < 0 ? -1 : rt_cluster_master_of(cl, *slot);
}

/* A name "<prefix>-<n>" whose slot is on master m, into buf. */
static void name_on(rt_cluster *cl, int m, const char *prefix, char *buf, size_t cap)
{
    int n, slot;

    for (n = 0; n < 1000; n++) {
        snprintf(buf, cap, "%s-%d", prefix, n);
        if (master_of_name(cl, buf, &slot) == m)
            return;
    }
    fail_msg("no name of prefix %s on master %d", prefix, m);
}

/* Whether the key of `name` exists on node i (its plain port). */
static int exists_on_node(rt_cluster *cl, int i, const char *name)
{
    redisContext *c = rt_cluster_connect(cl, i);
    const char *k = key_of(name);
    int e;

    assert_non_null(c);
    e = rt_redis_exists(c, k, strlen(k));
    redisFree(c);
    return e;
}

/* Plain, fair and read-write locks on a name of each master: taken over
 * TLS, seen on that master, renewed past their lease, released. */
static void test_cluster_kinds_on_every_master(void **state)
{
    rt_cluster *cl = *state;
    rl_client *c = tls_client(cl->url, CL_LEASE_MS, 500);
    rl_lock *l[3][3];
    char name[3][3][32];
    static const int kinds[3] = { RL_KIND_PLAIN, RL_KIND_FAIR, RL_KIND_WRITE };
    static const char *prefix[3] = { "tp", "tf", "tw" };
    int m[3], i, k, nm = 0;

    for (i = 0; i < cl->n && nm < 3; i++)
        if (rt_cluster_is_master(cl, i) && rt_cluster_first_slot_of(cl, i) >= 0)
            m[nm++] = i;
    IT_EQ(nm, 3);
    for (i = 0; i < 3; i++)
        for (k = 0; k < 3; k++) {
            name_on(cl, m[i], prefix[k], name[i][k], sizeof name[i][k]);
            l[i][k] = kind_lock(c, name[i][k], kinds[k]);
            IT_RC(rl_lock_try_acquire(l[i][k], 0, RL_LEASE_WATCHDOG), RL_OK);
            IT_EQ(exists_on_node(cl, m[i], name[i][k]), 1);
        }
    /* Two leases: only renewals keep them. */
    none_flagged_for(&l[0][0], 9, 0, 2 * CL_LEASE_MS);
    for (i = 0; i < 3; i++)
        for (k = 0; k < 3; k++) {
            assert_int_equal(rl_lock_interrupted(l[i][k]), 0);
            IT_EQ(exists_on_node(cl, m[i], name[i][k]), 1);
            IT_RC(rl_lock_release(l[i][k]), RL_OK);
            IT_EQ(exists_on_node(cl, m[i], name[i][k]), 0);
            rl_lock_free(l[i][k]);
        }
    rl_client_free(c);
}

/* A hold renewed while its slot moves to another master (ASK while its key
 * moves, MOVED after): never flagged, on the new master at the end, and
 * released there; a new acquisition follows the slot too. */
static void test_cluster_slot_migrated_under_hold(void **state)
{
    rt_cluster *cl = *state;
    rl_client *c = tls_client(cl->url, CL_LEASE_MS, 500);
    rl_lock *l, *other;
    char name[32];
    int slot, from, to, i;

    snprintf(name, sizeof name, "tm-0");
    from = master_of_name(cl, name, &slot);
    assert_true(from >= 0);
    for (to = -1, i = 0; i < cl->n && to < 0; i++)
        if (i != from && rt_cluster_is_master(cl, i) && rt_cluster_first_slot_of(cl, i) >= 0)
            to = i;
    assert_true(to >= 0);
    l = it_lock(c, name);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    none_flagged_for(&l, 1, 0, CL_LEASE_MS);
    IT_EQ(rt_cluster_slot_begin(cl, slot, to), 0);
    none_flagged_for(&l, 1, 0, CL_LEASE_MS / 2);
    IT_EQ(rt_cluster_slot_move_keys(cl, slot), 0);
    /* The key is on the destination; the source answers ASK for it. */
    none_flagged_for(&l, 1, 0, CL_LEASE_MS);
    IT_EQ(rt_cluster_slot_finish(cl, slot, to), 0);
    none_flagged_for(&l, 1, 0, 2 * CL_LEASE_MS);
    IT_EQ(exists_on_node(cl, to, name), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(exists_on_node(cl, to, name), 0);
    other = it_lock(c, name);
    IT_RC(rl_lock_try_acquire(other, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(exists_on_node(cl, to, name), 1);
    IT_RC(rl_lock_release(other), RL_OK);
    rl_lock_free(other);
    rl_lock_free(l);
    rl_client_free(c);
}

#define FO_NAMES 9
#define FO_LEASE_MS 3000 /* longer than the failover: a hold may live through it */

/* As test_cluster_failover.c: a master SIGKILLed and failed over to its
 * replica under holds on every master. Holds on the other masters are never
 * flagged; those on the dead one are still held on the promoted replica or
 * flagged (then RL_ELOST), never claimed held when they are not; a new
 * acquisition reaches the promoted replica's TLS port. */
static void test_cluster_master_killed_and_failed_over(void **state)
{
    rt_cluster *cl = *state;
    rl_client *c = tls_client(cl->url, FO_LEASE_MS, 500);
    rl_lock *l[FO_NAMES], *fresh;
    int master[FO_NAMES], victim, vslot = -1, newm, i, slot, flagged = 0;
    unsigned spare = 0;
    char name[32];
    int64_t killed_ms;

    log_text[0] = '\0';
    for (i = 0; i < FO_NAMES; i++) {
        snprintf(name, sizeof name, "tfo-%d", i);
        master[i] = master_of_name(cl, name, &slot);
        assert_true(master[i] >= 0);
        if (i == 0)
            vslot = slot;
        l[i] = it_lock(c, name);
        IT_RC(rl_lock_try_acquire(l[i], 0, RL_LEASE_WATCHDOG), RL_OK);
    }
    victim = master[0];
    for (i = 0; i < FO_NAMES; i++)
        if (master[i] == victim)
            spare |= 1u << i;
    assert_true(spare != (1u << FO_NAMES) - 1); /* some names elsewhere */
    assert_true(rt_cluster_replica_of(cl, victim) >= 0);
    killed_ms = rt_now_ms();
    IT_EQ(rt_cluster_kill(cl, victim), 0);
    newm = rt_cluster_wait_failover(cl, vslot, victim, 20000);
    if (newm < 0)
        fail_msg("the cluster did not fail over within 20 s");
    print_message("failover to node %d after %lld ms\n", newm,
                  (long long)(rt_now_ms() - killed_ms));
    none_flagged_for(l, FO_NAMES, spare, 2 * FO_LEASE_MS);
    for (i = 0; i < FO_NAMES; i++) {
        snprintf(name, sizeof name, "tfo-%d", i);
        if (!(spare >> i & 1u)) {
            IT_RC(rl_lock_release(l[i]), RL_OK);
        } else if (rl_lock_interrupted(l[i])) {
            flagged++;
            IT_RC(rl_lock_release(l[i]), RL_ELOST);
        } else {
            /* Claimed held: then the promoted replica has it. */
            IT_EQ(exists_on_node(cl, newm, name), 1);
            IT_RC(rl_lock_release(l[i]), RL_OK);
        }
        rl_lock_free(l[i]);
    }
    print_message("holds on the killed master: %d flagged\n", flagged);
    if (flagged)
        print_message("the log:\n%s", log_now());
    fresh = it_lock(c, "tfo-0");
    IT_RC(rl_lock_try_acquire(fresh, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(exists_on_node(cl, newm, "tfo-0"), 1);
    IT_RC(rl_lock_release(fresh), RL_OK);
    rl_lock_free(fresh);
    rl_client_free(c);
}

/*
 * Sentinel over TLS: a primary, two replicas and three sentinels, every one
 * of them on a TLS port, replication and the sentinels' links over TLS.
 */

static rt_sentinel *dep;

static int sentinel_setup(void **state)
{
    (void)state;
    dep = rt_sentinel_start_tls(2, 3, "tlsm", NULL, RT_SENTINEL_DOWN_AFTER_MS, tls);
    if (!dep)
        fprintf(stderr, "cannot start a Sentinel deployment over TLS: this test FAILS\n");
    return dep ? 0 : -1;
}

static int sentinel_teardown(void **state)
{
    (void)state;
    rt_sentinel_stop(dep);
    return 0;
}

/* A client of the deployment over TLS, with wait_replicas 1 (as
 * test_sentinel.c: the hold is on a replica before RL_OK) and the log. */
static rl_client *sentinel_client(long lease_ms)
{
    rl_options o;

    it_options(&o, rt_sentinel_url(dep), lease_ms, 1000);
    o.tls_ca_file = tls->ca;
    o.wait_replicas = 1;
    o.log = keep_log;
    return it_client_opts(&o);
}

static int exists_on_dep_node(int i, const char *name)
{
    redisContext *c = rt_sentinel_connect_node(dep, i);
    const char *k = key_of(name);
    int e;

    if (!c)
        return -1;
    e = rt_redis_exists(c, k, strlen(k));
    redisFree(c);
    return e;
}

#define SN_LEASE_MS 3000
/* The client hears +switch-master about 2 s after a SENTINEL FAILOVER,
 * when the sentinels have moved the replicas; until then it renews on the
 * old primary, still a writable master: the promoted replica's copy must
 * outlive that (test_sentinel.c's lease: 10 s). Renewed every 3 s. */
#define SN_FO_LEASE_MS 9000

/* The primary found through the sentinels over TLS, and named by its TLS
 * port; a hold taken, renewed past its lease, released. */
static void test_sentinel_finds_the_primary(void **state)
{
    rl_client *c;
    rl_lock *l;
    int p = rt_sentinel_primary(dep);
    char said[64];

    (void)state;
    assert_true(p >= 0);
    log_text[0] = '\0';
    c = sentinel_client(SN_LEASE_MS);
    l = it_lock(c, "ts-find");
    snprintf(said, sizeof said, "127.0.0.1:%d", dep->tls_port[p]);
    if (!logged("primary of 'tlsm' is") || !logged(said))
        fail_msg("the client did not name the primary's TLS port %s; the log:\n%s", said,
                 log_now());
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(exists_on_dep_node(p, "ts-find"), 1);
    none_flagged_for(&l, 1, 0, 2 * SN_LEASE_MS / 3 + SN_LEASE_MS);
    IT_EQ(exists_on_dep_node(p, "ts-find"), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(exists_on_dep_node(p, "ts-find"), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

/* SENTINEL FAILOVER under a hold: the client hears +switch-master on its
 * subscription (over TLS), names the new primary's TLS port, renews there
 * without a flag (the promoted replica had the hold: wait_replicas 1), and
 * takes a new name there. */
static void test_sentinel_failover_followed(void **state)
{
    rl_client *c;
    rl_lock *l, *n;
    int old = rt_sentinel_primary(dep), now;
    char said[64];
    redisContext *sc;
    redisReply *r;
    int64_t asked;

    (void)state;
    assert_true(old >= 0);
    log_text[0] = '\0';
    c = sentinel_client(SN_FO_LEASE_MS);
    l = it_lock(c, "ts-fail");
    n = it_lock(c, "ts-new");
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    assert_non_null(sc = rt_sentinel_connect_sentinel(dep, 0));
    asked = rt_now_ms();
    r = redisCommand(sc, "SENTINEL FAILOVER tlsm");
    if (r == NULL || r->type != REDIS_REPLY_STATUS)
        fail_msg("SENTINEL FAILOVER: %s", r && r->type == REDIS_REPLY_ERROR ? r->str : "?");
    freeReplyObject(r);
    redisFree(sc);
    now = rt_sentinel_wait_failover(dep, old, 30000);
    assert_true(now >= 0 && now != old);
    print_message("failover took %lld ms\n", (long long)(rt_now_ms() - asked));
    snprintf(said, sizeof said, "is now 127.0.0.1:%d", dep->tls_port[now]);
    IT_WAIT(logged("+switch-master tlsm"), 10000);
    IT_WAIT(logged(said), 10000);
    /* Two renewals on the new primary (as test_sentinel.c: 7 s). */
    none_flagged_for(&l, 1, 0, 7000);
    IT_EQ(exists_on_dep_node(now, "ts-fail"), 1);
    IT_RC(rl_lock_try_acquire(n, 5000, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(exists_on_dep_node(now, "ts-new"), 1);
    IT_RC(rl_lock_release(n), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(exists_on_dep_node(now, "ts-fail"), 0);
    rl_lock_free(l);
    rl_lock_free(n);
    rl_client_free(c);
}

/*
 * Redlock over TLS: five masters, each with a TLS port beside its plain one.
 */

#define RL_NODES 5

static rt_redis *node[RL_NODES];
static redisContext *ctl[RL_NODES];
static int tls_port[RL_NODES];

static int redlock_setup(void **state)
{
    char args[1536];
    int i;

    (void)state;
    for (i = 0; i < RL_NODES; i++) {
        tls_port[i] = rt_free_port();
        rt_tls_server_args(tls, tls_port[i], NULL, NULL, 0, args, sizeof args);
        if (!(node[i] = rt_redis_start(args)) || !(ctl[i] = rt_redis_connect(node[i]))) {
            fprintf(stderr, "cannot start TLS redis-servers: this test FAILS\n");
            return -1;
        }
    }
    return 0;
}

static int redlock_teardown(void **state)
{
    (void)state;
    rt_redis_close_all(RL_NODES, node, ctl);
    return 0;
}

/* Every node up, answering and empty: each Redlock test starts so. */
static int redlock_each(void **state)
{
    (void)state;
    log_text[0] = '\0';
    return rt_redis_reset_all(RL_NODES, node, ctl);
}

/* "redlocks://127.0.0.1:<TLS port>,...": the first n nodes; node `plain`
 * (-1: none) by its plain port. */
static void url_of(char *buf, size_t cap, int n, int plain)
{
    size_t at = (size_t)snprintf(buf, cap, "redlocks://");
    int i;

    for (i = 0; i < n; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s127.0.0.1:%d", i ? "," : "",
                               i == plain ? node[i]->port : tls_port[i]);
}

static rl_client *redlock_client(int n, long lease_ms, long command_ms)
{
    char url[256];

    url_of(url, sizeof url, n, -1);
    return tls_client(url, lease_ms, command_ms);
}

/* Our count on node i (0: none), as the node has it. */
static long long count_on(int i, const char *name)
{
    it_hash h;
    const char *k = key_of(name);

    if (it_hgetall(ctl[i], k, strlen(k), &h) != 0)
        return -100;
    return h.fields == 0 ? 0 : atoll(h.value);
}

/* Held on every master over TLS, renewed past its lease, reentered,
 * released everywhere. */
static void test_redlock_held_everywhere(void **state)
{
    rl_client *c = redlock_client(RL_NODES, 900, 300);
    rl_lock *l = it_lock(c, "tr-all");
    int i;

    (void)state;
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    for (i = 0; i < RL_NODES; i++)
        IT_EQ(count_on(i, "tr-all"), 2);
    none_flagged_for(&l, 1, 0, 2 * 900);
    for (i = 0; i < RL_NODES; i++)
        IT_EQ(count_on(i, "tr-all"), 2);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    for (i = 0; i < RL_NODES; i++)
        IT_EQ(count_on(i, "tr-all"), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

/* As test_redlock.c's test_minority_down_or_stopped: one master killed,
 * one stopped (SIGSTOP: its TCP connects still succeed, its TLS handshakes
 * never end); for four leases the hold is never flagged and new names are
 * taken on the three others, each acquisition and release within one
 * command timeout or so (test_redlock_fanout.c's bound: under 1 s). */
static void test_redlock_minority_down_or_stopped(void **state)
{
    rl_client *c = redlock_client(RL_NODES, 900, 300);
    rl_lock *l = it_lock(c, "tr-minority"), *m;
    char name[32];
    int i, k;

    (void)state;
    IT_RC(rl_lock_acquire(l), RL_OK);
    assert_int_equal(rt_redis_kill(node[0]), 0);
    assert_int_equal(rt_redis_pause(node[1]), 0);
    for (k = 0; k < 4; k++) {
        int64_t until = rt_now_ms() + 900;
        while (rt_now_ms() < until) {
            int64_t t0 = rt_now_ms();
            snprintf(name, sizeof name, "tr-minority-%d", k);
            m = it_lock(c, name);
            IT_RC(rl_lock_try_acquire(m, 0, RL_LEASE_WATCHDOG), RL_OK);
            IT_RC(rl_lock_release(m), RL_OK);
            IT_RANGE(rt_now_ms() - t0, 0, 999);
            rl_lock_free(m);
            rt_sleep_ms(50);
        }
        if (rl_lock_interrupted(l))
            fail_msg("the hold was flagged; the log:\n%s", log_now());
    }
    for (i = 2; i < RL_NODES; i++)
        IT_EQ(count_on(i, "tr-minority"), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    assert_int_equal(rt_redis_resume(node[1]), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

/* As test_redlock_fanout.c: a client made while two of five masters are
 * stopped costs one connect timeout, not one per stopped master (their
 * TLS handshakes run side by side, off the others' way). */
static void test_redlock_client_made_with_two_stopped(void **state)
{
    char url[256];
    rl_options o;
    rl_client *c = NULL;
    int64_t t0, took;
    int rc;

    (void)state;
    url_of(url, sizeof url, RL_NODES, -1);
    it_options(&o, url, 30000, 1000);
    o.connect_timeout_ms = 1000;
    o.tls_ca_file = tls->ca;
    assert_int_equal(rt_redis_pause(node[3]), 0);
    assert_int_equal(rt_redis_pause(node[4]), 0);
    t0 = rt_now_ms();
    rc = rl_client_new(&c, &o);
    took = rt_now_ms() - t0;
    print_message("client made with 2 of 5 stopped: %d (%s) in %lld ms\n", rc, rl_strerror(rc),
                  (long long)took);
    rl_client_free(c);
    assert_int_equal(rt_redis_resume(node[3]), 0);
    assert_int_equal(rt_redis_resume(node[4]), 0);
    IT_RC(rc, RL_OK);
    IT_RANGE(took, 0, 1500);
}

/* A master SIGKILLed and restarted (same ports, empty) under a hold: the
 * hold stays (a majority), and the client reaches the restarted master
 * over TLS again: a new name is taken there too. */
static void test_redlock_master_restarted(void **state)
{
    rl_client *c = redlock_client(3, 900, 300);
    rl_lock *l = it_lock(c, "tr-restart"), *m = it_lock(c, "tr-restart-new");
    int64_t deadline;
    int back = 0;

    (void)state;
    IT_RC(rl_lock_acquire(l), RL_OK);
    assert_int_equal(rt_redis_kill(node[0]), 0);
    none_flagged_for(&l, 1, 0, 900);
    assert_int_equal(rt_redis_restart(node[0]), 0);
    redisFree(ctl[0]);
    assert_non_null(ctl[0] = rt_redis_connect(node[0]));
    /* The node takes part again once its "down" mark has passed. */
    deadline = rt_now_ms() + 5000;
    while (!back && rt_now_ms() < deadline) {
        IT_RC(rl_lock_try_acquire(m, 0, RL_LEASE_WATCHDOG), RL_OK);
        back = count_on(0, "tr-restart-new") == 1;
        IT_RC(rl_lock_release(m), RL_OK);
        rt_sleep_ms(50);
    }
    if (!back)
        fail_msg("the restarted master was not reached again over TLS; the log:\n%s",
                 log_now());
    assert_int_equal(rl_lock_interrupted(l), 0);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_lock_free(m);
    rl_client_free(c);
}

/* True when the log names `addr` with a reason that fits a plain port: the
 * server said something that is not TLS ("does not speak TLS"), or kept
 * silent as a plain Redis does when the ClientHello holds no newline ("a
 * port without TLS"). */
static int said_plain(const char *text, const char *addr)
{
    const char *at = strstr(text, addr);

    return at && (strstr(at, "does not speak TLS") || strstr(at, "a port without TLS"));
}

static int logged_plain(const char *addr)
{
    int yes;

    pthread_mutex_lock(&log_mu);
    yes = said_plain(log_text, addr);
    pthread_mutex_unlock(&log_mu);
    return yes;
}

/* redlocks:// naming a master by its plain port: that master is named, and
 * why (a port without TLS); with the two others the majority holds,
 * without them no client is made, and the error says why. */
static void test_redlock_plain_master_named(void **state)
{
    char url[256], port[32];
    rl_options o;
    rl_client *c = NULL;
    rl_lock *l;

    (void)state;
    snprintf(port, sizeof port, "127.0.0.1:%d", node[1]->port);
    url_of(url, sizeof url, 3, 1);
    c = tls_client(url, 900, 300);
    l = it_lock(c, "tr-plain");
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(count_on(0, "tr-plain"), 1);
    IT_EQ(count_on(1, "tr-plain"), 0);
    IT_EQ(count_on(2, "tr-plain"), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);
    /* The client is gone: nobody writes the log now. */
    if (!logged_plain(port))
        fail_msg("the plain master %s was not named with the reason; the log:\n%s", port,
                 log_now());
    /* Two of three plain: no majority, said as the plain tests have it for
     * masters down ("1 of 3"), each plain one named in the log with why. */
    log_text[0] = '\0';
    it_options(&o, NULL, 900, 300);
    o.tls_ca_file = tls->ca;
    o.log = keep_log;
    o.url = url;
    snprintf(url, sizeof url, "redlocks://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
             tls_port[0], node[1]->port, node[2]->port);
    c = NULL;
    IT_RC(rl_client_new(&c, &o), RL_ECONN);
    assert_null(c);
    assert_non_null(strstr(rl_last_error(), "1 of 3"));
    snprintf(port, sizeof port, "127.0.0.1:%d", node[1]->port);
    if (logged_plain(port))
        snprintf(port, sizeof port, "127.0.0.1:%d", node[2]->port);
    if (!logged_plain(port))
        fail_msg("no reason given for %s; the log:\n%s", port, log_now());
}

int main(void)
{
    const struct CMUnitTest cluster_tests[] = {
        cmocka_unit_test(test_cluster_kinds_on_every_master),
        cmocka_unit_test(test_cluster_slot_migrated_under_hold),
        cmocka_unit_test(test_cluster_master_killed_and_failed_over),
    };
    const struct CMUnitTest sentinel_tests[] = {
        cmocka_unit_test(test_sentinel_finds_the_primary),
        cmocka_unit_test(test_sentinel_failover_followed),
    };
    const struct CMUnitTest redlock_tests[] = {
        cmocka_unit_test_setup(test_redlock_held_everywhere, redlock_each),
        cmocka_unit_test_setup(test_redlock_minority_down_or_stopped, redlock_each),
        cmocka_unit_test_setup(test_redlock_client_made_with_two_stopped, redlock_each),
        cmocka_unit_test_setup(test_redlock_master_restarted, redlock_each),
        cmocka_unit_test_setup(test_redlock_plain_master_named, redlock_each),
    };
    int failed = 0;

    tls = rt_tls_make();
    if (tls == NULL) {
        fprintf(stderr, "cannot make TLS certificates: this test FAILS\n");
        return 1;
    }
    failed = cmocka_run_group_tests_name("cluster over TLS", cluster_tests, cluster_setup,
                                         cluster_teardown);
    failed += cmocka_run_group_tests_name("sentinel over TLS", sentinel_tests, sentinel_setup,
                                          sentinel_teardown);
    failed += cmocka_run_group_tests_name("redlock over TLS", redlock_tests, redlock_setup,
                                          redlock_teardown);
    rt_tls_free(tls);
    return failed;
}
