/*
 * The keeper (src/keeper.c): no upkeep task waits behind another node's
 * (issue 32, item 1).
 *
 * A Cluster of 3 masters (node timeout 30 s: longer than the stop, so the
 * others keep serving). The seed, the first node of the URL, is
 * SIGSTOPped: it accepts connections and never answers, and the watchdog
 * wants a connection to it, the slot map asks it first, and a thread of
 * the client leaves two leftovers there (it gives back its two names on
 * the seed once flagged). Meanwhile master 1 drops every client
 * connection (CLIENT KILL TYPE normal) every quarter lease: each time the
 * watchdog needs a new connection there, and its holds on master 1 stay
 * confirmed only if that connection comes within the lease's slack.
 *
 * Proves: over KP_WATCH_MS (ten leases) no hold on master 1 (or master 2)
 * is flagged, and the watchdog's connection reaches the watchdog. The
 * seed's holds are flagged (the stop took effect); the cuts dropped
 * connections (they happened).
 *
 * On the keeper of one thread whose tasks ran one after another (3f8bda3),
 * master 1's new connection waited behind the seed's connect, map question
 * and drops (each up to one interval): both holds on master 1 flagged
 * 1.3 s into the stop, 8 runs of 8.
 */
#include "it_cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KP_LEASE 1000           /* renewed every 333 ms; each keeper task <= 333 ms */
#define KP_CUT_EVERY (KP_LEASE / 4)
#define KP_WATCH_MS (10 * KP_LEASE)
#define KP_NODE_TIMEOUT 30000
#define KP_STEP_MS 5

/* A name whose lock key lives on master m (its own stem), or fail. */
static void name_on(rt_cluster *cl, int m, const char *stem, char *name, size_t cap)
{
    char key[96];
    size_t kl;
    int i, slot;

    for (i = 0; i < 5000; i++) {
        snprintf(name, cap, "%s-%d", stem, i);
        kl = it_key(key, sizeof key, "rl:", name, strlen(name), NULL);
        if ((slot = rt_cluster_keyslot(cl, key, kl)) < 0)
            fail_msg("CLUSTER KEYSLOT failed");
        if (rt_cluster_master_of(cl, slot) == m)
            return;
    }
    fail_msg("no name \"%s-<i>\" found on master %d", stem, m);
}

/* A thread that holds two names on the seed and gives them back once their
 * flags are up: fields that may remain there, leftovers for the keeper. */
typedef struct kp_leaver {
    rl_client *c;
    char name[2][32];
    atomic_int taken;           /* 1 held, -1 could not */
    atomic_int stop;            /* the main thread is done */
    atomic_int released;        /* both given back */
    int rc[2];
} kp_leaver;

static void *leaver_main(void *arg)
{
    kp_leaver *v = arg;
    rl_lock *l[2] = { NULL, NULL };
    int i, left = 2;

    for (i = 0; i < 2; i++) {
        if (rl_lock_new(&l[i], v->c, v->name[i]) != RL_OK ||
            rl_lock_try_acquire(l[i], 5000, RL_LEASE_WATCHDOG) != RL_OK) {
            atomic_store(&v->taken, -1);
            goto out;
        }
    }
    atomic_store(&v->taken, 1);
    while (left > 0 && !atomic_load(&v->stop)) {
        for (i = 0; i < 2; i++) {
            if (l[i] && rl_lock_interrupted(l[i])) {
                v->rc[i] = rl_lock_release(l[i]);
                rl_lock_free(l[i]);
                l[i] = NULL;
                left--;
            }
        }
        rt_sleep_ms(KP_STEP_MS);
    }
    atomic_store(&v->released, left == 0);
out:
    for (i = 0; i < 2; i++) {
        if (l[i]) {
            rl_lock_release(l[i]);
            rl_lock_free(l[i]);
        }
    }
    return NULL;
}

/* The library's messages up to RL_KEEPER_LOG's level (RL_LOG_*), with the
 * time, when it is set: to see why a hold was flagged. */
static void kp_log(int level, const char *message, void *payload)
{
    (void)payload;
    if (level <= atoi(getenv("RL_KEEPER_LOG")))
        fprintf(stderr, "(%lld) rlock: %s\n", (long long)rt_now_ms() % 100000, message);
}

/* Drop master 1's client connections; how many it dropped (-1: failed). */
static long long cut(rt_cluster *cl)
{
    redisContext *pc = rt_cluster_connect(cl, 1);
    redisReply *r;
    long long n = -1;

    if (!pc)
        return -1;
    r = redisCommand(pc, "CLIENT KILL TYPE normal");
    if (r && r->type == REDIS_REPLY_INTEGER)
        n = r->integer;
    freeReplyObject(r);
    redisFree(pc);
    return n;
}

static void test_stopped_seed_delays_no_other_node(void **state)
{
    it_cluster *e = *state;
    rt_cluster *cl = e->cl;
    rl_options o;
    rl_client *c;
    rl_lock *l[4];
    char name[4][32];
    int node[4] = { 1, 1, 2, 2 };
    kp_leaver v;
    pthread_t th;
    int64_t t_stop, flagged_at[4], next_cut;
    int i, cuts = 0, dropped = 0;

    /* The seed must be node 0, master 0; masters 1 and 2 the others. */
    for (i = 0; i < 3; i++)
        IT_EQ(rt_cluster_is_master(cl, i), 1);
    it_options(&o, cl->seeds, KP_LEASE, 0);
    if (getenv("RL_KEEPER_LOG"))
        o.log = kp_log;
    c = it_client_opts(&o);
    for (i = 0; i < 4; i++) {
        char stem[16];
        snprintf(stem, sizeof stem, "kp%d", i);
        name_on(cl, node[i], stem, name[i], sizeof name[i]);
        l[i] = it_lock(c, name[i]);
        IT_RC(rl_lock_try_acquire(l[i], 5000, RL_LEASE_WATCHDOG), RL_OK);
        flagged_at[i] = -1;
    }
    memset(&v, 0, sizeof v);
    v.c = c;
    name_on(cl, 0, "kps0", v.name[0], sizeof v.name[0]);
    name_on(cl, 0, "kps1", v.name[1], sizeof v.name[1]);
    assert_int_equal(pthread_create(&th, NULL, leaver_main, &v), 0);
    IT_WAIT(atomic_load(&v.taken) != 0, 10000);
    if (atomic_load(&v.taken) != 1) {
        atomic_store(&v.stop, 1);
        pthread_join(th, NULL);
        fail_msg("the leaver could not take its names on the seed");
    }

    /* A lease with every node up (the rounds are steady), then the stop
     * and, from a lease into it, the cuts. The flags are read throughout. */
    t_stop = rt_now_ms() + KP_LEASE;
    next_cut = t_stop + KP_LEASE;
    while (rt_now_ms() - t_stop < KP_WATCH_MS) {
        if (!cl->node[0]->paused && rt_now_ms() >= t_stop) {
            t_stop = rt_now_ms();
            assert_int_equal(rt_redis_pause(cl->node[0]), 0);
            next_cut = t_stop + KP_LEASE;
        }
        if (cl->node[0]->paused && rt_now_ms() >= next_cut) {
            long long n = cut(cl);
            if (getenv("RL_KEEPER_LOG"))
                fprintf(stderr, "(%lld) cut: %lld\n", (long long)rt_now_ms() % 100000, n);
            cuts++;
            dropped += n > 0;
            next_cut += KP_CUT_EVERY;
        }
        for (i = 0; i < 4; i++)
            if (flagged_at[i] < 0 && rl_lock_interrupted(l[i]))
                flagged_at[i] = rt_now_ms();
        rt_sleep_ms(KP_STEP_MS);
    }
    assert_int_equal(rt_redis_resume(cl->node[0]), 0);

    atomic_store(&v.stop, 1);
    pthread_join(th, NULL);
    for (i = 0; i < 4; i++) {
        int rc = rl_lock_release(l[i]);
        if (flagged_at[i] >= 0)
            fprintf(stderr, "test_keeper: %s (master %d) flagged %lld ms into the stop "
                    "(released: %s)\n", name[i], node[i], (long long)(flagged_at[i] - t_stop),
                    rl_strerror(rc));
        rl_lock_free(l[i]);
    }
    rl_client_free(c);
    for (i = 0; i < 4; i++)
        IT_EQ(flagged_at[i], -1);
    /* The stop and the cuts happened: the seed's holds were flagged and
     * given back, and most cuts found the client's connections there. */
    IT_EQ(atomic_load(&v.released), 1);
    IT_RANGE(cuts, KP_WATCH_MS / KP_CUT_EVERY - 8, KP_WATCH_MS / KP_CUT_EVERY);
    IT_RANGE(dropped, cuts / 2, cuts);
}

/* A cluster of its own: a node timeout longer than the stop. */
static int setup(void **state)
{
    it_cluster *e = calloc(1, sizeof *e);

    if (!e || !(e->cl = rt_cluster_start(3, 0, KP_NODE_TIMEOUT, NULL))) {
        fprintf(stderr, "test_keeper: cannot start a Redis Cluster: this test FAILS\n");
        free(e);
        return -1;
    }
    *state = e;
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stopped_seed_delays_no_other_node),
    };
    return cmocka_run_group_tests(tests, setup, it_cluster_teardown);
}
