/*
 * rlock on a Redis Cluster whose master is SIGKILLed and failed over to
 * its replica: three masters with one replica each, started on loopback by
 * the test (tests/common/rt_cluster.h).
 *
 * A holder keeps names on every master; a waiter of another client waits
 * on a name of the master that dies. After the failover:
 *   - holds on the other masters were never flagged (their renewals went
 *     on while one master was dead);
 *   - the holds on the dead master are either still held on the promoted
 *     replica (it had them: asynchronous replication usually wins on
 *     loopback) or flagged, never later than their confirmed expiry;
 *   - the waiter takes the name on the promoted master once it is free.
 */
#include "it_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_cluster.h"

#define LEASE_MS 3000
#define NAMES 12

static rl_client *cl_client(const char *url, long lease_ms)
{
    rl_options o;

    it_options(&o, url, lease_ms, 500);
    return it_client_opts(&o);
}

static int setup(void **state)
{
    rt_cluster *cl = rt_cluster_start(3, 1, 1000, NULL);

    if (!cl) {
        fprintf(stderr, "cannot start a Redis Cluster with replicas: this test FAILS\n");
        return -1;
    }
    *state = cl;
    return 0;
}

static int teardown(void **state)
{
    rt_cluster_stop(*state);
    return 0;
}

static void test_master_killed_and_failed_over(void **state)
{
    rt_cluster *cl = *state;
    rl_client *holder, *waiter;
    rl_lock *l[NAMES], *lw;
    int master[NAMES], victim = -1, vslot = -1, wname = -1, newm, i, flagged = 0;
    char name[32], key[64];
    size_t kl;
    int64_t killed_ms, done_ms;
    it_acq w;

    holder = cl_client(cl->url, LEASE_MS);
    waiter = cl_client(cl->seeds, LEASE_MS);
    for (i = 0; i < NAMES; i++) {
        int slot;
        snprintf(name, sizeof name, "fo-%d", i);
        kl = it_key(key, sizeof key, "rl:", name, strlen(name), NULL);
        slot = rt_cluster_keyslot(cl, key, kl);
        master[i] = slot < 0 ? -1 : rt_cluster_master_of(cl, slot);
        assert_true(master[i] >= 0);
        l[i] = it_lock(holder, name);
        IT_RC(rl_lock_try_acquire(l[i], 0, RL_LEASE_WATCHDOG), RL_OK);
        if (victim < 0) {
            victim = master[i];
            vslot = slot;
            wname = i;
        }
    }
    snprintf(name, sizeof name, "fo-%d", wname);
    lw = it_lock(waiter, name);
    memset(&w, 0, sizeof w);
    w.lock = lw;
    w.wait_ms = 30000;
    w.lease_ms = RL_LEASE_WATCHDOG;
    it_acq_start(&w);
    IT_WAIT(atomic_load(&w.state) == 1, 5000);

    killed_ms = rt_now_ms();
    IT_EQ(rt_cluster_kill(cl, victim), 0);
    newm = rt_cluster_wait_failover(cl, vslot, victim, 20000);
    if (newm < 0)
        fail_msg("the cluster did not fail over within 20 s");
    print_message("failover to node %d after %lld ms\n", newm,
                  (long long)(rt_now_ms() - killed_ms));

    /* Two leases on the promoted master. */
    done_ms = rt_now_ms() + 2 * LEASE_MS;
    while (rt_now_ms() < done_ms) {
        for (i = 0; i < NAMES; i++)
            if (master[i] != victim && rl_lock_interrupted(l[i]))
                fail_msg("hold %d on a live master was flagged during the failover", i);
        rt_sleep_ms(20);
    }
    for (i = 0; i < NAMES; i++) {
        if (master[i] != victim) {
            IT_RC(rl_lock_release(l[i]), RL_OK);
            continue;
        }
        /* Held on the promoted replica, or flagged: then RL_ELOST. */
        if (rl_lock_interrupted(l[i])) {
            flagged++;
            IT_RC(rl_lock_release(l[i]), RL_ELOST);
        } else {
            IT_RC(rl_lock_release(l[i]), RL_OK);
        }
    }
    print_message("holds on the killed master: %d flagged\n", flagged);
    /* The waiter gets the name on the promoted master. */
    IT_EQ(it_acq_join(&w, 20000), 0);
    IT_RC(w.rc, RL_OK);
    IT_RC(w.release_rc, RL_OK);
    print_message("waiter took the name %lld ms after the kill\n",
                  (long long)(w.t_return_us / 1000 - killed_ms));

    for (i = 0; i < NAMES; i++)
        rl_lock_free(l[i]);
    rl_lock_free(lw);
    rl_client_free(waiter);
    rl_client_free(holder);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_master_killed_and_failed_over, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
