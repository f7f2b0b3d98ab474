/*
 * Self-test of tests/common/rt_cluster: a real Redis Cluster on loopback
 * forms with every slot served, fails over to a replica when a master is
 * killed, moves a slot with its keys step by step, and keeps its identity
 * across a restart of every node. Without redis-server or redis-cli the
 * setups fail, and so does this test.
 */
#include "it_common.h"
#include "rt_cluster.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NODE_TIMEOUT_MS 1000
#define FAILOVER_WITHIN_MS 15000
#define SETTLE_WITHIN_MS 10000
#define RESTART_WITHIN_MS 20000

/* A key of slot 0 (found offline with CRC16; checked below). */
#define KEY_SLOT0 "la2"
#define FOO_SLOT 12182

static rt_cluster *fixture;

static int setup_cluster(void **state, int nmasters, int replicas)
{
    int64_t t0 = rt_now_ms();

    fixture = rt_cluster_start(nmasters, replicas, NODE_TIMEOUT_MS, NULL);
    if (fixture == NULL) {
        fprintf(stderr, "cluster_infra: cannot start a Redis Cluster: this test FAILS without "
                "redis-server and redis-cli\n");
        return -1;
    }
    printf("# cluster of %d masters x %d replicas ok after %lld ms\n", nmasters, replicas,
           (long long)(rt_now_ms() - t0));
    *state = fixture;
    return 0;
}

static int setup_3x0(void **state)
{
    return setup_cluster(state, 3, 0);
}

static int setup_3x1(void **state)
{
    return setup_cluster(state, 3, 1);
}

static int teardown_cluster(void **state)
{
    (void)state;
    rt_cluster_stop(fixture);
    fixture = NULL;
    return 0;
}

/* One command on node i, on a connection of its own; the caller frees the reply. */
static redisReply *on_node(rt_cluster *cl, int i, const char *fmt, ...)
{
    redisContext *c = rt_cluster_connect(cl, i);
    redisReply *r;
    va_list ap;

    if (c == NULL)
        fail_msg("cannot connect to node %d", i);
    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    if (r == NULL)
        fail_msg("node %d: no reply to \"%s\"", i, fmt);
    return r;
}

/* Assert a reply's type and text (a string, a status or an error). */
static void expect_reply(redisReply *r, int type, const char *want, const char *what)
{
    if (r == NULL)
        fail_msg("%s: no reply", what);
    if (r->type != type || r->str == NULL || strcmp(r->str, want) != 0)
        fail_msg("%s: reply of type %d \"%s\", expected type %d \"%s\"", what, r->type,
                 r->str != NULL ? r->str : "", type, want);
    freeReplyObject(r);
}

/* (1) Three masters: every slot served by one of them, the same map on
 * every node; KEYSLOT asked of the cluster; stop leaves nothing behind. */
static void test_start_three_masters(void **state)
{
    rt_cluster *cl = *state;
    pid_t pid[RT_CLUSTER_MAX_NODES];
    char dir[RT_CLUSTER_MAX_NODES][256], cdir[256], want[64];
    int i, s, first[RT_CLUSTER_SLOTS];
    size_t k;

    IT_EQ(cl->n, 3);
    IT_EQ(cl->nmasters, 3);
    IT_EQ(cl->replicas, 0);
    snprintf(want, sizeof want, "redis://127.0.0.1:%d", cl->node[0]->port);
    assert_string_equal(cl->url, want);
    snprintf(want, sizeof want, "redis://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
             cl->node[0]->port, cl->node[1]->port, cl->node[2]->port);
    assert_string_equal(cl->seeds, want);

    /* Read the map ourselves, from every node: complete, the masters are
     * our three nodes, every node says the same. */
    for (i = 0; i < cl->n; i++) {
        redisReply *r = on_node(cl, i, "CLUSTER SLOTS");
        int covered = 0, masters = 0, seen[RT_CLUSTER_MAX_NODES] = { 0 };
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        for (k = 0; k < r->elements; k++) {
            redisReply *e = r->element[k];
            int m = -1, j;
            assert_true(e->elements >= 3);
            for (j = 0; j < cl->n; j++)
                if (cl->node[j]->port == e->element[2]->element[1]->integer)
                    m = j;
            if (m < 0)
                fail_msg("node %d: slots %lld-%lld on port %lld, not a node of ours", i,
                         e->element[0]->integer, e->element[1]->integer,
                         e->element[2]->element[1]->integer);
            if (k == 0 && i == 0)
                printf("# CLUSTER SLOTS gives masters as host \"%s\"\n",
                       e->element[2]->element[0]->str);
            masters += !seen[m];
            seen[m] = 1;
            for (s = (int)e->element[0]->integer; s <= e->element[1]->integer; s++) {
                if (i == 0)
                    first[s] = m;
                else if (first[s] != m)
                    fail_msg("slot %d: node 0 says node %d, node %d says node %d", s,
                             first[s], i, m);
                covered++;
            }
        }
        freeReplyObject(r);
        IT_EQ(covered, RT_CLUSTER_SLOTS);
        IT_EQ(masters, 3);
        r = on_node(cl, i, "CLUSTER INFO");
        assert_non_null(strstr(r->str, "cluster_state:ok\r\n"));
        assert_non_null(strstr(r->str, "cluster_known_nodes:3\r\n"));
        freeReplyObject(r);
    }
    IT_EQ(rt_cluster_master_of(cl, 0), first[0]);
    IT_EQ(rt_cluster_master_of(cl, RT_CLUSTER_SLOTS - 1), first[RT_CLUSTER_SLOTS - 1]);
    for (i = 0; i < cl->n; i++) {
        IT_EQ(rt_cluster_master_seen_by(cl, FOO_SLOT, i), first[FOO_SLOT]);
        IT_EQ(rt_cluster_replica_of(cl, i), -1);
    }
    /* Nothing fails over in a healthy cluster: the wait gives up (and says
     * what the nodes said, on stderr). */
    IT_EQ(rt_cluster_wait_failover(cl, 0, first[0], 100), -1);
    IT_EQ(rt_cluster_keyslot(cl, "foo", 3), FOO_SLOT);
    IT_EQ(rt_cluster_keyslot(cl, KEY_SLOT0, strlen(KEY_SLOT0)), 0);
    IT_EQ(rt_cluster_keyslot(cl, "{foo}\0bin", 9), FOO_SLOT);

    /* A key is served by its master and refused elsewhere. */
    {
        int m = first[FOO_SLOT], other = (m + 1) % cl->n;
        expect_reply(on_node(cl, m, "SET foo bar"), REDIS_REPLY_STATUS, "OK", "SET on master");
        snprintf(want, sizeof want, "MOVED %d 127.0.0.1:%d", FOO_SLOT, cl->node[m]->port);
        expect_reply(on_node(cl, other, "GET foo"), REDIS_REPLY_ERROR, want, "GET elsewhere");
    }

    /* Stop: every server gone, every directory removed. */
    for (i = 0; i < cl->n; i++) {
        pid[i] = cl->node[i]->pid;
        snprintf(dir[i], sizeof dir[i], "%s", cl->node[i]->dir);
    }
    snprintf(cdir, sizeof cdir, "%s", cl->dir);
    rt_cluster_stop(cl);
    fixture = NULL;
    for (i = 0; i < 3; i++) {
        struct stat st;
        IT_EQ(kill(pid[i], 0) == -1 && errno == ESRCH, 1);
        IT_EQ(stat(dir[i], &st), -1);
    }
    {
        struct stat st;
        IT_EQ(stat(cdir, &st), -1);
    }
}

/* (2) Three masters with a replica each: the master of slot 0 is killed;
 * its replica takes over, with the data it had replicated. */
static void test_failover(void **state)
{
    rt_cluster *cl = *state;
    int m, r, nm, i;
    int64_t t0, took;
    redisContext *c;
    redisReply *rep;

    IT_EQ(cl->n, 6);
    m = rt_cluster_master_of(cl, 0);
    assert_true(m >= 0);
    r = rt_cluster_replica_of(cl, m);
    assert_true(r >= 0 && r != m);
    rep = on_node(cl, r, "ROLE");
    assert_string_equal(rep->element[0]->str, "slave");
    IT_EQ(rep->element[2]->integer, cl->node[m]->port);
    freeReplyObject(rep);

    /* WAIT on the connection that wrote: the replica has the key. */
    c = rt_cluster_connect(cl, m);
    assert_non_null(c);
    expect_reply(redisCommand(c, "SET %s v0", KEY_SLOT0), REDIS_REPLY_STATUS, "OK", "SET");
    rep = redisCommand(c, "WAIT 1 5000");
    assert_non_null(rep);
    IT_EQ(rep->integer, 1);
    freeReplyObject(rep);
    redisFree(c);

    t0 = rt_now_ms();
    IT_EQ(rt_cluster_kill(cl, m), 0);
    nm = rt_cluster_wait_failover(cl, 0, m, FAILOVER_WITHIN_MS);
    took = rt_now_ms() - t0;
    printf("# failover of slot 0 from node %d to node %d took %lld ms\n", m, nm,
           (long long)took);
    IT_EQ(nm, r);
    for (i = 0; i < cl->n; i++)
        if (i != m)
            IT_EQ(rt_cluster_master_seen_by(cl, 0, i), r);
    IT_EQ(rt_cluster_wait_ok(cl, SETTLE_WITHIN_MS), 0);
    rep = on_node(cl, r, "ROLE");
    assert_string_equal(rep->element[0]->str, "master");
    freeReplyObject(rep);
    expect_reply(on_node(cl, r, "GET %s", KEY_SLOT0), REDIS_REPLY_STRING, "v0",
                 "GET on the new master");
}

/* (3) A slot with keys moves from its master to another, step by step;
 * then back in one call. */
static void test_migrate_slot(void **state)
{
    rt_cluster *cl = *state;
    char moved[64], ask[64];
    int src, to, i;
    int64_t t0;
    redisContext *c;
    redisReply *rep;

    IT_EQ(rt_cluster_keyslot(cl, "foo", 3), FOO_SLOT);
    src = rt_cluster_master_of(cl, FOO_SLOT);
    assert_true(src >= 0);
    to = (src + 1) % cl->n;
    expect_reply(on_node(cl, src, "SET foo bar"), REDIS_REPLY_STATUS, "OK", "SET foo");
    expect_reply(on_node(cl, src, "SET {foo}2 x"), REDIS_REPLY_STATUS, "OK", "SET {foo}2");

    t0 = rt_now_ms();
    IT_EQ(rt_cluster_slot_begin(cl, FOO_SLOT, to), 0);
    /* Keys still on the source are served there; a missing one is asked of
     * the destination. */
    snprintf(ask, sizeof ask, "ASK %d 127.0.0.1:%d", FOO_SLOT, cl->node[to]->port);
    expect_reply(on_node(cl, src, "GET foo"), REDIS_REPLY_STRING, "bar", "GET while migrating");
    expect_reply(on_node(cl, src, "GET {foo}absent"), REDIS_REPLY_ERROR, ask,
                 "GET of a missing key while migrating");

    IT_EQ(rt_cluster_slot_move_keys(cl, FOO_SLOT), 0);
    rep = on_node(cl, src, "CLUSTER COUNTKEYSINSLOT %d", FOO_SLOT);
    IT_EQ(rep->integer, 0);
    freeReplyObject(rep);
    expect_reply(on_node(cl, src, "GET foo"), REDIS_REPLY_ERROR, ask, "GET after the move");
    /* The destination serves it only after ASKING, until the finish. */
    snprintf(moved, sizeof moved, "MOVED %d 127.0.0.1:%d", FOO_SLOT, cl->node[src]->port);
    expect_reply(on_node(cl, to, "GET foo"), REDIS_REPLY_ERROR, moved, "GET without ASKING");
    c = rt_cluster_connect(cl, to);
    assert_non_null(c);
    freeReplyObject(redisCommand(c, "ASKING"));
    rep = redisCommand(c, "GET foo");
    assert_non_null(rep);
    expect_reply(rep, REDIS_REPLY_STRING, "bar", "GET after ASKING");
    redisFree(c);

    IT_EQ(rt_cluster_slot_finish(cl, FOO_SLOT, to), 0);
    printf("# slot %d moved from node %d to node %d in %lld ms\n", FOO_SLOT, src, to,
           (long long)(rt_now_ms() - t0));
    for (i = 0; i < cl->n; i++)
        IT_EQ(rt_cluster_master_seen_by(cl, FOO_SLOT, i), to);
    expect_reply(on_node(cl, to, "GET foo"), REDIS_REPLY_STRING, "bar", "GET on the new master");
    expect_reply(on_node(cl, to, "GET {foo}2"), REDIS_REPLY_STRING, "x", "GET {foo}2");
    snprintf(moved, sizeof moved, "MOVED %d 127.0.0.1:%d", FOO_SLOT, cl->node[to]->port);
    expect_reply(on_node(cl, src, "GET foo"), REDIS_REPLY_ERROR, moved, "GET on the old master");

    /* And back in one call. */
    IT_EQ(rt_cluster_migrate_slot(cl, FOO_SLOT, src), 0);
    IT_EQ(rt_cluster_master_of(cl, FOO_SLOT), src);
    expect_reply(on_node(cl, src, "GET foo"), REDIS_REPLY_STRING, "bar", "GET after moving back");
    /* A slot cannot move to its own master, nor keys of a slot not migrating. */
    IT_EQ(rt_cluster_slot_begin(cl, FOO_SLOT, src), -1);
    IT_EQ(rt_cluster_slot_move_keys(cl, FOO_SLOT), -1);
}

/* (4) Every node restarted: same node ids and slot map (nodes.conf kept),
 * data gone (nothing is saved). */
static void test_restart_all(void **state)
{
    rt_cluster *cl = *state;
    char id[RT_CLUSTER_MAX_NODES][48];
    int i, m = rt_cluster_master_of(cl, FOO_SLOT);
    int64_t t0;
    redisReply *rep;

    assert_true(m >= 0);
    expect_reply(on_node(cl, m, "SET foo bar"), REDIS_REPLY_STATUS, "OK", "SET foo");
    memcpy(id, cl->id, sizeof id);
    t0 = rt_now_ms();
    IT_EQ(rt_cluster_restart_all(cl, RESTART_WITHIN_MS), 0);
    printf("# restart of %d nodes ok after %lld ms\n", cl->n, (long long)(rt_now_ms() - t0));
    for (i = 0; i < cl->n; i++) {
        rep = on_node(cl, i, "CLUSTER MYID");
        assert_string_equal(rep->str, id[i]);
        freeReplyObject(rep);
    }
    IT_EQ(rt_cluster_master_of(cl, FOO_SLOT), m);
    rep = on_node(cl, m, "EXISTS foo");
    IT_EQ(rep->integer, 0);
    freeReplyObject(rep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_start_three_masters, setup_3x0, teardown_cluster),
        cmocka_unit_test_setup_teardown(test_failover, setup_3x1, teardown_cluster),
        cmocka_unit_test_setup_teardown(test_migrate_slot, setup_3x0, teardown_cluster),
        cmocka_unit_test_setup_teardown(test_restart_all, setup_3x0, teardown_cluster),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
