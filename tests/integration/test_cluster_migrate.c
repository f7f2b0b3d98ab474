/*
 * Watchdog renewals in the middle of a slot migration on a real 3-master
 * cluster (tests/common/rt_cluster.h): the slot is IMPORTING on one master,
 * MIGRATING on another, and some or all of its keys have moved. No hold may
 * be flagged while its key is alive:
 *
 *  - a hold whose key moved to an importing node that has never run the
 *    renew script (SCRIPT FLUSH stands in for a new or restarted node): the
 *    renewal that follows ASK meets NOSCRIPT there;
 *  - two holds of one slot (one renewal call) whose keys straddle the
 *    migration: the source answers the call TRYAGAIN, and the calls of one
 *    key that replace it meet NOSCRIPT on a source that lost its scripts.
 *
 * One cluster serves both tests; each uses names of its own and finishes
 * its migration before it ends.
 */
#include "it_cluster.h"

#include <stdio.h>
#include <string.h>

#define LEASE_MS 1500
#define WATCH_MS (3 * LEASE_MS)     /* three leases, nine renewal ticks */

/* The first warning the library logged, for failure messages: the
 * watchdog's reason is the evidence of what went wrong. */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char first_warning[512];

static void on_log(int level, const char *message, void *payload)
{
    (void)payload;
    if (level > RL_LOG_WARN)
        return;
    pthread_mutex_lock(&log_mu);
    if (!first_warning[0])
        snprintf(first_warning, sizeof first_warning, "%s", message);
    pthread_mutex_unlock(&log_mu);
}

static const char *warning(void)
{
    static char copy[sizeof first_warning];

    pthread_mutex_lock(&log_mu);
    memcpy(copy, first_warning, sizeof copy);
    first_warning[0] = '\0';
    pthread_mutex_unlock(&log_mu);
    return copy[0] ? copy : "(none)";
}

static rl_client *cl_client(const char *url)
{
    rl_options o;

    it_options(&o, url, LEASE_MS, 0);
    o.log = on_log;
    return it_client_opts(&o);
}

/* A name's lock key and its slot. */
static int key_of(rt_cluster *cl, const char *name, char *key, size_t *kl)
{
    *kl = it_key(key, 2200, "rl:", name, strlen(name), NULL);
    return rt_cluster_keyslot(cl, key, *kl);
}

/* PTTL of a key on node i, after ASKING (the node may be importing its
 * slot); -2: absent (or ASK from a migrating source), -3: error. */
static long long pttl_on(rt_cluster *cl, int i, const char *key, size_t kl)
{
    redisContext *rc = rt_cluster_connect(cl, i);
    const char *argv[2] = { "PTTL", key };
    size_t lens[2] = { 4, kl };
    redisReply *r;
    long long ms = -3;

    if (!rc)
        return -3;
    r = redisCommand(rc, "ASKING");
    freeReplyObject(r);
    r = redisCommandArgv(rc, 2, argv, lens);
    if (r && r->type == REDIS_REPLY_INTEGER)
        ms = r->integer;
    else if (r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "ASK ", 4) == 0)
        ms = -2;        /* the migrating source sends us on: not here */
    freeReplyObject(r);
    redisFree(rc);
    return ms;
}

/* A plain command on node i; 0 when it answered OK (or NOKEY: nothing to
 * move), -1 otherwise, printing the reply. */
static int node_cmd(rt_cluster *cl, int i, int argc, const char **argv, const size_t *lens)
{
    redisContext *rc = rt_cluster_connect(cl, i);
    redisReply *r;
    int ok;

    if (!rc)
        return -1;
    r = redisCommandArgv(rc, argc, argv, lens);
    ok = r && r->type == REDIS_REPLY_STATUS;
    if (!ok)
        print_message("node %d: %s: %s\n", i, argv[0],
                      r && r->type == REDIS_REPLY_ERROR ? r->str : "no reply");
    freeReplyObject(r);
    redisFree(rc);
    return ok ? 0 : -1;
}

/* Watch the holds for `ms` (the time the scenario calls for, a few
 * renewal ticks): none may be flagged while their keys are alive. */
static void watch_holds(rl_lock **l, int n, long ms, const char *what)
{
    int64_t t0 = rt_now_ms(), until = t0 + ms;
    int i;

    while (rt_now_ms() < until) {
        for (i = 0; i < n; i++)
            if (rl_lock_interrupted(l[i]))
                fail_msg("%s: hold %d flagged after %lld ms; watchdog said: %s", what, i,
                         (long long)(rt_now_ms() - t0), warning());
        rt_sleep_ms(10);
    }
}

/* Finding A. The key of a lone hold moves to a master that has never run
 * the renew script: the renewal answered ASK is sent there as ASKING +
 * EVALSHA, meets NOSCRIPT, must load the scripts and ask again. */
static void test_ask_to_a_node_without_scripts(void **state)
{
    it_cluster *e = *state;
    rl_client *c = cl_client(e->cl->url);
    rl_lock *l = it_lock(c, "unscripted");
    const char *flush[2] = { "SCRIPT", "FLUSH" };
    size_t flush_lens[2] = { 6, 5 };
    char key[2200];
    size_t kl;
    int slot, from, to;

    slot = key_of(e->cl, "unscripted", key, &kl);
    assert_true(slot >= 0);
    from = rt_cluster_master_of(e->cl, slot);
    assert_true(from >= 0);
    to = (from + 1) % 3;
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(node_cmd(e->cl, to, 2, flush, flush_lens), 0);

    /* Importing/migrating with the key moved, no SETSLOT NODE yet: every
     * renewal is answered ASK by the source. */
    IT_EQ(rt_cluster_slot_begin(e->cl, slot, to), 0);
    IT_EQ(rt_cluster_slot_move_keys(e->cl, slot), 0);
    IT_EQ(pttl_on(e->cl, from, key, kl), -2);
    watch_holds(&l, 1, WATCH_MS, "key moved to a node without scripts");
    /* Renewed there: more left than one lease less the time since. */
    IT_RANGE(pttl_on(e->cl, to, key, kl), LEASE_MS / 3, LEASE_MS);

    IT_EQ(rt_cluster_slot_finish(e->cl, slot, to), 0);
    IT_EQ(rl_lock_interrupted(l), 0);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(pttl_on(e->cl, to, key, kl), -2);
    rl_lock_free(l);
    rl_client_free(c);
}

/* Finding B. Two holds of one slot, renewed by one call; only one key has
 * moved, so the source answers that call TRYAGAIN (it has some keys, not
 * all): the holds must be renewed one key per call, the moved one on the
 * importing node after ASK. */
static void test_chunk_straddling_a_migration(void **state)
{
    it_cluster *e = *state;
    rl_client *c = cl_client(e->cl->url);
    static const char *const names[2] = { "yb}1", "yb}2" };
    const char *flush[2] = { "SCRIPT", "FLUSH" };
    size_t flush_lens[2] = { 6, 5 };
    rl_lock *l[2];
    char key[2][2200], port[16], warm[32];
    size_t kl[2];
    int slot, from, to, i;

    for (i = 0; i < 2; i++) {
        slot = key_of(e->cl, names[i], key[i], &kl[i]);
        assert_true(slot >= 0);
        l[i] = it_lock(c, names[i]);
    }
    IT_EQ(rt_cluster_keyslot(e->cl, key[0], kl[0]), slot);     /* one tag, one slot */
    from = rt_cluster_master_of(e->cl, slot);
    assert_true(from >= 0);
    to = (from + 1) % 3;

    /* The importing node runs the scripts already (an acquire there loads
     * them), so that only the split is tested here, not NOSCRIPT. */
    for (i = 0; i < 1000; i++) {
        char wk[2200];
        size_t wl;
        int ws;
        snprintf(warm, sizeof warm, "warm-%d", i);
        ws = key_of(e->cl, warm, wk, &wl);
        if (ws >= 0 && ws != slot && rt_cluster_master_of(e->cl, ws) == to)
            break;
    }
    assert_true(i < 1000);
    {
        rl_lock *w = it_lock(c, warm);
        IT_RC(rl_lock_try_acquire(w, 0, 5000), RL_OK);
        IT_RC(rl_lock_release(w), RL_OK);
        rl_lock_free(w);
    }

    for (i = 0; i < 2; i++)
        IT_RC(rl_lock_try_acquire(l[i], 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rt_cluster_slot_begin(e->cl, slot, to), 0);
    /* MIGRATE the first key only: the slot now straddles the two nodes. */
    snprintf(port, sizeof port, "%d", e->cl->node[to]->port);
    {
        const char *argv[6] = { "MIGRATE", "127.0.0.1", port, key[0], "0", "5000" };
        size_t lens[6] = { 7, 9, strlen(port), kl[0], 1, 4 };
        IT_EQ(node_cmd(e->cl, from, 6, argv, lens), 0);
    }
    IT_EQ(pttl_on(e->cl, from, key[0], kl[0]), -2);
    IT_RANGE(pttl_on(e->cl, from, key[1], kl[1]), 1, LEASE_MS);
    /* And the source has lost its scripts (restarted, flushed): the one-key
     * calls meet NOSCRIPT there, which the whole call never shows (TRYAGAIN
     * is answered before a script is looked up). */
    IT_EQ(node_cmd(e->cl, from, 2, flush, flush_lens), 0);

    watch_holds(l, 2, WATCH_MS, "a slot's keys on two nodes");
    IT_RANGE(pttl_on(e->cl, to, key[0], kl[0]), LEASE_MS / 3, LEASE_MS);
    IT_RANGE(pttl_on(e->cl, from, key[1], kl[1]), LEASE_MS / 3, LEASE_MS);

    /* The rest follows; the whole call is then answered ASK. */
    IT_EQ(rt_cluster_slot_move_keys(e->cl, slot), 0);
    watch_holds(l, 2, LEASE_MS, "a slot's keys all moved");
    IT_EQ(rt_cluster_slot_finish(e->cl, slot, to), 0);
    for (i = 0; i < 2; i++) {
        IT_EQ(rl_lock_interrupted(l[i]), 0);
        IT_RC(rl_lock_release(l[i]), RL_OK);
        IT_EQ(pttl_on(e->cl, to, key[i], kl[i]), -2);
        rl_lock_free(l[i]);
    }
    rl_client_free(c);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ask_to_a_node_without_scripts),
        cmocka_unit_test(test_chunk_straddling_a_migration),
    };

    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, it_cluster_setup, it_cluster_teardown);
}
