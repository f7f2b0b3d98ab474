/*
 * Regression tests for three findings of the review of Cluster mode
 * (commit b85ccc7), each on a real 3-master cluster:
 *
 *   - a sharded subscription answered CLUSTERDOWN (or TRYAGAIN) stayed
 *     "sent" for ever: it was never made again, and its waiter slept until
 *     the holder's PTTL however early the holder released;
 *   - the shutdown pipelined its release scripts without loading them: a
 *     master that answered NOSCRIPT kept the locks for their leases;
 *   - any refused SSUBSCRIBE, not only NOPERM, switched the client's
 *     release notices off, so waiters in other processes slept until the
 *     PTTL of every lock it released.
 *
 * Three masters on loopback (it_pcluster, it_cluster.h): S (node 0, the
 * seed every client is given), P and Q. P is reached only through the
 * fault proxy: it announces the proxy's port, so a client learns that
 * address from CLUSTER SLOTS, and the proxy can answer a subscription with
 * an error of the test's choosing. Key state is read on each master at its
 * real port; the slot table is the fixture's, by node id.
 *
 * One cluster and one proxy serve the group; each test uses names of its
 * own. After every test the cluster is put back as it was (a slot taken off
 * Q, the shard pub/sub setting) and the proxy is reset.
 */
#include "it_cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CR_HOLD_MS 12000       /* fixed lease of the holders a waiter must not wait out */
#define CR_WAKE_MS 3000        /* a waiter woken later than this waited for the PTTL */
#define CR_POLL_WAKE_MS 1000   /* a polling or notified waiter is woken within this */

/* A slot of Q the running test took off Q, for restore() to give back;
 * -1: none. Here rather than in the test, which a failure leaves early. */
static int cut_slot = -1;

/* ---- the cluster -------------------------------------------------------- */

/* A command on node i that must answer +OK. 0 or -1 (said on stderr). */
static int node_ok(it_pcluster *e, int i, const char *fmt, ...)
{
    redisReply *r;
    va_list ap;
    int ok;

    va_start(ap, fmt);
    r = redisvCommand(e->rc[i], fmt, ap);
    va_end(ap);
    ok = r != NULL && r->type == REDIS_REPLY_STATUS;
    if (!ok)
        fprintf(stderr, "test_cluster_review: \"%s\" on node %d: %s\n", fmt, i,
                r != NULL && r->type == REDIS_REPLY_ERROR ? r->str : "no status reply");
    freeReplyObject(r);
    return ok ? 0 : -1;
}

/* 1 when node i says cluster_state:ok, 0 when it says otherwise, -1 on error. */
static int cluster_state_ok(it_pcluster *e, int i)
{
    redisReply *r = redisCommand(e->rc[i], "CLUSTER INFO");
    int ok = -1;

    if (r != NULL && r->type == REDIS_REPLY_STRING)
        ok = strstr(r->str, "cluster_state:ok") != NULL;
    freeReplyObject(r);
    return ok;
}

/* Before and after every test: the proxy forwards everything. After one,
 * also: a slot the test took off Q is Q's again, Q's state is ok, and
 * shard pub/sub is allowed on a cluster that is down (the default). */
static int restore(void **state)
{
    it_pcluster *e = *state;
    int i, rc = 0;

    if (it_pcluster_reset_proxy(e) != 0)
        rc = -1;
    if (cut_slot >= 0) {
        if (node_ok(e, e->q, "CLUSTER ADDSLOTS %d", cut_slot) != 0)
            rc = -1;
        cut_slot = -1;
    }
    for (i = 0; i < e->cl->n; i++)
        if (node_ok(e, i, "CONFIG SET cluster-allow-pubsubshard-when-down yes") != 0)
            rc = -1;
    if (!RT_WAIT_UNTIL(cluster_state_ok(e, e->q) == 1, 10000)) {
        fprintf(stderr, "test_cluster_review: node %d is not back to cluster_state:ok\n", e->q);
        rc = -1;
    }
    return rc;
}

/* ---- names, keys, clients, counters ------------------------------------ */

/* A name "<stem>-<i>" whose lock lives on node m: the name, its key, the
 * key's slot, and its release channel (the key and ":release"). */
typedef struct cr_name {
    char name[64];
    char key[128];
    size_t kl;
    int slot;
    char chan[160];
    size_t cl;
} cr_name;

static void name_on(it_pcluster *e, int m, const char *stem, cr_name *n)
{
    int i;

    for (i = 0; i < 5000; i++) {
        snprintf(n->name, sizeof n->name, "%s-%d", stem, i);
        n->kl = it_key(n->key, sizeof n->key, "rl:", n->name, strlen(n->name), NULL);
        n->slot = rt_cluster_keyslot(e->cl, n->key, n->kl);
        if (n->slot < 0)
            fail_msg("CLUSTER KEYSLOT failed");
        if (e->owner[n->slot] != m)
            continue;
        n->cl = it_key(n->chan, sizeof n->chan, "rl:", n->name, strlen(n->name), ":release");
        return;
    }
    fail_msg("no name \"%s-<i>\" found on node %d", stem, m);
}

static long long shardnumsub_on(it_pcluster *e, int m, const cr_name *n)
{
    return rt_redis_shardnumsub(e->rc[m], n->chan, n->cl);
}

/* Calls of a command that node m refused before running it (a redirect,
 * CLUSTERDOWN), from INFO commandstats' rejected_calls. -1 on error. */
static long long rejected_on(it_pcluster *e, int m, const char *command)
{
    redisReply *r = redisCommand(e->rc[m], "INFO commandstats");
    char head[64];
    const char *line, *field, *eol;
    long long n = -1;

    if (r == NULL || r->type != REDIS_REPLY_STRING) {
        freeReplyObject(r);
        return -1;
    }
    snprintf(head, sizeof head, "\ncmdstat_%s:", command);
    line = strstr(r->str, head);
    if (line == NULL) {
        n = 0;
    } else {
        eol = strchr(line + 1, '\n');
        field = strstr(line, "rejected_calls=");
        if (field != NULL && (eol == NULL || field < eol))
            n = strtoll(field + strlen("rejected_calls="), NULL, 10);
    }
    freeReplyObject(r);
    return n;
}

static long long pttl_on(it_pcluster *e, int m, const cr_name *n)
{
    return rt_redis_pttl(e->rc[m], n->key, n->kl);
}

/* What the library logged at RL_LOG_ERROR, kept for the assertions. */
typedef struct cr_log {
    pthread_mutex_t mu;
    int errors;
    char first[256];
} cr_log;

static void log_cb(int level, const char *message, void *payload)
{
    cr_log *g = payload;

    if (level != RL_LOG_ERROR)
        return;
    pthread_mutex_lock(&g->mu);
    if (g->errors++ == 0)
        snprintf(g->first, sizeof g->first, "%s", message);
    pthread_mutex_unlock(&g->mu);
}

static int log_errors(cr_log *g)
{
    int n;

    pthread_mutex_lock(&g->mu);
    n = g->errors;
    pthread_mutex_unlock(&g->mu);
    return n;
}

static rl_client *cr_client(const char *url, cr_log *g)
{
    rl_options o;

    it_options(&o, url, 0, 0);
    if (g != NULL) {
        o.log = log_cb;
        o.payload = g;
    }
    return it_client_opts(&o);
}

/* ---- 1. shutdown on masters that lost the scripts ----------------------- */

/* Review finding: the shutdown pipelined its release scripts (EVALSHA)
 * without loading them, and did not read the replies one by one: a master
 * that had lost the scripts (SCRIPT FLUSH, a restart) answered NOSCRIPT to
 * each, and its locks stayed taken for their whole lease. The client's home
 * is node 0; the holds are on P and Q, whose scripts are flushed. */
static void shutdown_after_script_flush(it_pcluster *e, int use_free)
{
    rl_client *c = cr_client(e->cl->url, NULL);
    int node[3] = { e->p, e->q, e->seed }, i;
    cr_name n[3];
    rl_lock *l[3];
    long long left[3];
    int64_t t0;

    for (i = 0; i < 3; i++) {
        name_on(e, node[i], use_free ? "nosf" : "noss", &n[i]);
        l[i] = it_lock(c, n[i].name);
        IT_RC(rl_lock_try_acquire(l[i], 0, 20000), RL_OK);
        IT_RANGE(pttl_on(e, node[i], &n[i]), 15000, 20000);
    }
    /* P and Q forget every script; the seed keeps them. */
    for (i = 0; i < 2; i++)
        IT_EQ(node_ok(e, node[i], "SCRIPT FLUSH"), 0);

    t0 = rt_now_ms();
    if (use_free)
        rl_client_free(c);
    else
        IT_RC(rl_client_shutdown(c), RL_OK);
    print_message("%s took %lld ms\n", use_free ? "rl_client_free" : "rl_client_shutdown",
                  (long long)(rt_now_ms() - t0));

    for (i = 0; i < 3; i++)
        left[i] = rt_redis_exists(e->rc[node[i]], n[i].key, n[i].kl) != 0
                      ? pttl_on(e, node[i], &n[i]) : -2;
    if (!use_free)
        rl_client_free(c);
    for (i = 0; i < 3; i++)
        rl_lock_free(l[i]);
    for (i = 0; i < 3; i++)
        if (left[i] != -2)
            print_message("%s left %s on node %d (%s), with %lld ms of lease left\n",
                          use_free ? "rl_client_free" : "rl_client_shutdown", n[i].key,
                          node[i], i < 2 ? "scripts flushed" : "scripts kept", left[i]);
    for (i = 0; i < 3; i++)
        if (left[i] != -2)
            fail_msg("locks left after %s (listed above)",
                     use_free ? "rl_client_free" : "rl_client_shutdown");
}

static void test_free_releases_on_a_master_without_scripts(void **state)
{
    shutdown_after_script_flush(*state, 1);
}

static void test_shutdown_releases_on_a_master_without_scripts(void **state)
{
    shutdown_after_script_flush(*state, 0);
}

/* ---- 2. an SSUBSCRIBE refused for another reason than NOPERM ------------ */

/* Another process ("--child wait <url> <name>", fd 3 to the parent): wait
 * for the name, then write int rc and int64_t t_return_us to fd 3, and
 * release it. */
static int child_wait(const char *url, const char *name)
{
    const int out_fd = 3;
    char msg[sizeof(int) + sizeof(int64_t)];
    rl_client *c = NULL;
    rl_lock *l = NULL;
    rl_options o;
    int64_t t;
    int rc;

    rl_options_init(&o, RL_OPTIONS_VERSION);
    o.url = url;
    if (rl_client_new(&c, &o) != RL_OK)
        return 10;
    if (rl_lock_new(&l, c, name) != RL_OK)
        return 11;
    rc = rl_lock_try_acquire(l, 30000, RL_LEASE_WATCHDOG);
    t = rt_now_us();
    memcpy(msg, &rc, sizeof rc);
    memcpy(msg + sizeof rc, &t, sizeof t);
    if (rt_write_all(out_fd, msg, sizeof msg) != 0)
        return 12;
    if (rc == RL_OK && rl_lock_release(l) != RL_OK)
        return 13;
    rl_lock_free(l);
    rl_client_free(c);
    return 0;
}

/* Review finding: any refused subscription set the client's no_notices,
 * which Redis refusing for want of channel rights (NOPERM) calls for; but
 * then that client's releases stopped publishing, and every waiter in
 * another process slept until the PTTL of what it released. Now only
 * NOPERM does that; another refusal (a server without SSUBSCRIBE, say)
 * only makes this client's own waiters poll.
 *
 * The proxy answers client X's SSUBSCRIBE on P with "-ERR unknown
 * command". Then: X's waiter still gets its name (it polls), and another
 * process waiting on a name X holds is woken by X's release at once. */
static void test_non_noperm_refusal_keeps_our_notices(void **state)
{
    static const char refusal[] =
        "-ERR unknown command 'SSUBSCRIBE', with args beginning with: \r\n";
    it_pcluster *e = *state;
    cr_log g;
    rl_client *x, *h;
    rl_lock *xl, *hl;
    cr_name mine, theirs;      /* held by X, awaited by the child; held by H, awaited by X */
    char *argv[6];
    char msg[sizeof(int) + sizeof(int64_t)];
    int fds[2], rc, code;
    long mangled = rt_proxy_mangled(e->proxy);
    long long pttl;
    int64_t released_us, got_us;
    pid_t pid;
    it_acq w;

    memset(&g, 0, sizeof g);
    pthread_mutex_init(&g.mu, NULL);
    x = cr_client(e->cl->url, &g);
    h = cr_client(e->cl->url, NULL);
    name_on(e, e->p, "refx", &mine);
    name_on(e, e->p, "refh", &theirs);
    xl = it_lock(x, mine.name);
    hl = it_lock(h, theirs.name);
    IT_RC(rl_lock_try_acquire(xl, 0, CR_HOLD_MS), RL_OK);
    IT_RC(rl_lock_try_acquire(hl, 0, CR_HOLD_MS), RL_OK);

    /* The other process waits on X's name, subscribed as usual on P. */
    argv[0] = "it_cluster_review";
    argv[1] = "--child";
    argv[2] = "wait";
    argv[3] = e->cl->url;
    argv[4] = mine.name;
    argv[5] = NULL;
    assert_int_equal(rt_pipe(fds), 0);
    pid = rt_spawn_self(argv, &fds[1], 1, 60);
    assert_true(pid > 0);
    rt_close(&fds[1]);
    IT_WAIT(shardnumsub_on(e, e->p, &mine) == 1, 10000);

    /* X waits on H's name; its SSUBSCRIBE is refused. */
    rt_proxy_mangle_next_reply_matching(e->proxy, "ssubscribe", refusal, sizeof refusal - 1);
    memset(&w, 0, sizeof w);
    w.lock = it_lock(x, theirs.name);
    w.wait_ms = 30000;
    w.lease_ms = 5000;
    it_acq_start(&w);
    IT_WAIT(rt_proxy_mangled(e->proxy) == mangled + 1, 10000);
    IT_WAIT(log_errors(&g) >= 1, 5000);
    print_message("X logged: %s\n", g.first);
    if (strstr(g.first, "refused") == NULL)
        fail_msg("X's error log does not say the subscription was refused: %s", g.first);
    IT_EQ(atomic_load(&w.state), 1);
    /* Redis did make the subscription the proxy answered for: end it by
     * killing every subscriber connection of P. X wants none any more; the
     * child subscribes again. */
    {
        redisReply *r = redisCommand(e->rc[e->p], "CLIENT KILL TYPE pubsub");
        assert_non_null(r);
        IT_EQ(r->type, REDIS_REPLY_INTEGER);
        freeReplyObject(r);
    }
    IT_WAIT(shardnumsub_on(e, e->p, &theirs) == 0 && shardnumsub_on(e, e->p, &mine) == 1,
            10000);

    /* X's waiter, without notices, asks again until H's name is free. */
    released_us = rt_now_us();
    IT_RC(rl_lock_release(hl), RL_OK);
    IT_EQ(it_acq_join(&w, 10000), 0);
    IT_RC(w.rc, RL_OK);
    IT_RC(w.release_rc, RL_OK);
    print_message("X's waiter (polling) got the name %lld ms after its release\n",
                  (long long)((w.t_return_us - released_us) / 1000));
    IT_RANGE((w.t_return_us - released_us) / 1000, 0, CR_POLL_WAKE_MS);

    /* X's release still publishes: the other process wakes at once. */
    pttl = pttl_on(e, e->p, &mine);
    IT_RANGE(pttl, 2 * CR_WAKE_MS, CR_HOLD_MS);
    released_us = rt_now_us();
    IT_RC(rl_lock_release(xl), RL_OK);
    rc = rt_read_full(fds[0], msg, sizeof msg, CR_HOLD_MS + 5000);
    code = rt_child_wait(pid, 10000);
    rt_close(&fds[0]);
    if (rc != 0)
        fail_msg("no answer from the waiting child (exit code %d)", code);
    memcpy(&rc, msg, sizeof rc);
    memcpy(&got_us, msg + sizeof rc, sizeof got_us);
    IT_RC(rc, RL_OK);
    IT_EQ(code, 0);
    print_message("the other process got the name %lld ms after X's release (PTTL then "
                  "%lld ms)\n", (long long)((got_us - released_us) / 1000), pttl);
    if (got_us - released_us > (int64_t)CR_POLL_WAKE_MS * 1000)
        fail_msg("the other process got the name %lld ms after X's release, limit %d ms: "
                 "X's release did not publish", (long long)((got_us - released_us) / 1000),
                 CR_POLL_WAKE_MS);
    IT_EQ(rt_redis_exists(e->rc[e->p], mine.key, mine.kl), 0);
    IT_EQ(rt_redis_exists(e->rc[e->p], theirs.key, theirs.kl), 0);

    rl_lock_free(w.lock);
    rl_lock_free(xl);
    rl_lock_free(hl);
    rl_client_free(x);
    rl_client_free(h);
    pthread_mutex_destroy(&g.mu);
}

/* ---- 3. a subscription answered CLUSTERDOWN ------------------------------ */

/* Review finding: an SSUBSCRIBE answered CLUSTERDOWN (or TRYAGAIN) left
 * its entry "sent" for good: it was never sent again, and the waiter slept
 * until the holder's PTTL. Now the link is made again after a back-off of
 * at most a second, and the subscription with it.
 *
 * Q refuses shard pub/sub while it is down (cluster-allow-pubsubshard-
 * when-down no) and is put down by itself: CLUSTER DELSLOTS of a slot of
 * Q that is not the name's. The waiter's subscriber link is killed, so its
 * new SSUBSCRIBE is answered CLUSTERDOWN; then the slot goes back, and
 * once the waiter has found the name still held, the holder releases. */
static void test_clusterdown_subscription_is_made_again(void **state)
{
    it_pcluster *e = *state;
    rl_client *holder, *waiter;
    rl_lock *hl;
    cr_name n;
    long long refused, scripts, pttl, woke_ms, killed;
    int cut = -1, s, i;
    int64_t t0, released_us;
    redisReply *r;
    it_acq w;

    name_on(e, e->q, "cdown", &n);
    for (s = 0; s < RT_CLUSTER_SLOTS && cut < 0; s++)
        if (e->owner[s] == e->q && s != n.slot)
            cut = s;
    assert_true(cut >= 0);
    for (i = 0; i < e->cl->n; i++)
        IT_EQ(node_ok(e, i, "CONFIG SET cluster-allow-pubsubshard-when-down no"), 0);

    holder = cr_client(e->cl->url, NULL);
    waiter = cr_client(e->cl->url, NULL);
    hl = it_lock(holder, n.name);
    IT_RC(rl_lock_try_acquire(hl, 0, CR_HOLD_MS), RL_OK);
    memset(&w, 0, sizeof w);
    w.lock = it_lock(waiter, n.name);
    w.wait_ms = 30000;
    w.lease_ms = 5000;
    it_acq_start(&w);
    IT_WAIT(shardnumsub_on(e, e->q, &n) == 1, 10000);

    /* Q down in its own eyes; its subscribers must subscribe again. */
    t0 = rt_now_ms();
    refused = rejected_on(e, e->q, "ssubscribe");
    assert_true(refused >= 0);
    IT_EQ(node_ok(e, e->q, "CLUSTER DELSLOTS %d", cut), 0);
    cut_slot = cut;
    IT_WAIT(cluster_state_ok(e, e->q) == 0, 5000);
    r = redisCommand(e->rc[e->q], "CLIENT KILL TYPE pubsub");
    assert_non_null(r);
    IT_EQ(r->type, REDIS_REPLY_INTEGER);
    killed = r->integer;
    freeReplyObject(r);
    IT_EQ(killed, 1);
    IT_WAIT(rejected_on(e, e->q, "ssubscribe") > refused, 5000);
    print_message("SSUBSCRIBE answered CLUSTERDOWN %lld ms after DELSLOTS\n",
                  (long long)(rt_now_ms() - t0));

    /* Q is whole again. The holder releases once the waiter has asked Q
     * again and found the name held: a script that ran (while Q was down,
     * each was refused before it ran, and is not counted). */
    scripts = it_pcluster_calls(e, e->q, "evalsha");
    IT_EQ(node_ok(e, e->q, "CLUSTER ADDSLOTS %d", cut), 0);
    cut_slot = -1;
    IT_WAIT(cluster_state_ok(e, e->q) == 1, 5000);
    IT_WAIT(it_pcluster_calls(e, e->q, "evalsha") > scripts, 5000);
    IT_EQ(atomic_load(&w.state), 1);
    pttl = pttl_on(e, e->q, &n);
    IT_RANGE(pttl, 2 * CR_WAKE_MS, CR_HOLD_MS);

    released_us = rt_now_us();
    IT_RC(rl_lock_release(hl), RL_OK);
    IT_EQ(it_acq_join(&w, CR_HOLD_MS + 5000), 0);
    IT_RC(w.rc, RL_OK);
    IT_RC(w.release_rc, RL_OK);
    woke_ms = (w.t_return_us - released_us) / 1000;
    print_message("waiter got the name %lld ms after the release (PTTL then %lld ms)\n",
                  woke_ms, pttl);
    if (woke_ms > CR_WAKE_MS)
        fail_msg("the waiter got the name %lld ms after the release, limit %d ms: it slept "
                 "until the holder's PTTL (%lld ms)", woke_ms, CR_WAKE_MS, pttl);
    IT_EQ(rt_redis_exists(e->rc[e->q], n.key, n.kl), 0);

    rl_lock_free(w.lock);
    rl_lock_free(hl);
    rl_client_free(waiter);
    rl_client_free(holder);
}

int main(int argc, char **argv)
{
#define CR_TEST(f) cmocka_unit_test_setup_teardown(f, restore, restore)
    const struct CMUnitTest tests[] = {
        CR_TEST(test_free_releases_on_a_master_without_scripts),
        CR_TEST(test_shutdown_releases_on_a_master_without_scripts),
        CR_TEST(test_non_noperm_refusal_keeps_our_notices),
        CR_TEST(test_clusterdown_subscription_is_made_again),
    };
#undef CR_TEST

    if (argc == 5 && strcmp(argv[1], "--child") == 0 && strcmp(argv[2], "wait") == 0)
        return child_wait(argv[3], argv[4]);
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, it_pcluster_setup, it_pcluster_teardown);
}
