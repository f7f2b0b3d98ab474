/*
 * The fair lock (RL_KIND_FAIR, src/fair.c) against real redis-server
 * processes: order of arrival across processes, a waiter SIGKILLed or
 * SIGSTOPped in the queue, a waiter that gives up, the notice that wakes
 * only the first waiter's process, reentry and the watchdog, force-release;
 * on one server, on a 3-master Cluster and through Sentinel.
 *
 * The waiting processes are this program started again (rt_spawn_self):
 *   it_fair --child wait <url> <name> <tag> <port> <exit check 0|1>
 * takes the fair lock <name>, RPUSHes <tag> onto "order{<name>}" on the
 * server at 127.0.0.1:<port> while it holds it, and releases it.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "it_cluster.h"
#include "proxy.h"
#include "rt_sentinel.h"

#define PLACE_MS 2000           /* RL__FAIR_PLACE_MS */
#define CHILD_MS 20000

/* Where a test runs: the URL to give clients, and a context on the
 * server that holds the name's keys. */
typedef struct where {
    const char *url;
    redisContext *rc;
    int port;
    rt_cluster *cl;             /* NULL: one server */
} where;

static void where_single(where *w, it_env *e)
{
    w->url = e->redis->url;
    w->rc = e->rc;
    w->port = e->redis->port;
    w->cl = NULL;
}

static void where_cluster(where *w, it_cluster *ic, const char *name)
{
    char key[128];
    size_t kl = it_key(key, sizeof key, "rl:", name, strlen(name), "");
    int m = rt_cluster_master_of(ic->cl, rt_cluster_keyslot(ic->cl, key, kl));

    assert_true(m >= 0);
    w->url = ic->cl->url;
    w->rc = rt_cluster_connect(ic->cl, m);
    assert_non_null(w->rc);
    w->port = ic->cl->node[m]->port;
    w->cl = ic->cl;
}

static void where_done(where *w)
{
    if (w->cl)
        redisFree(w->rc);
}

/* An integer command on the name's keys: fmt has the name as its only
 * argument, once or twice. */
static long long cmd_int(where *w, const char *fmt, const char *name)
{
    redisReply *r = redisCommand(w->rc, fmt, name, name);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

    if (!r || r->type != REDIS_REPLY_INTEGER)
        fail_msg("%s (%s): %s", fmt, name, r && r->type == REDIS_REPLY_ERROR ? r->str : "no int");
    freeReplyObject(r);
    return v;
}

static long long queued(where *w, const char *name)
{
    return cmd_int(w, "ZCARD rl:{%s}:queue", name);
}

static long long queue_keys(where *w, const char *name)
{
    return cmd_int(w, "EXISTS rl:{%s}:queue rl:{%s}:queue:t", name);
}

static long long order_len(where *w, const char *name)
{
    return cmd_int(w, "LLEN order{%s}", name);
}

/* The tags in the order the children took the lock, as "0,1,2". */
static void order_of(where *w, const char *name, char *buf, size_t cap)
{
    char key[128];
    redisReply *r;
    size_t i, at = 0;

    snprintf(key, sizeof key, "order{%s}", name);
    r = redisCommand(w->rc, "LRANGE %s 0 -1", key);
    buf[0] = '\0';
    for (i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%s", i ? "," : "", r->element[i]->str);
    freeReplyObject(r);
}

static rl_client *client_at(const char *url, long lease_ms)
{
    rl_options o;

    it_options(&o, url, lease_ms, 0);
    return it_client_opts(&o);
}

static rl_lock *fair(rl_client *c, const char *name)
{
    rl_lock *l = NULL;

    IT_RC(rl_lock_new_kind(&l, c, name, strlen(name), RL_KIND_FAIR), RL_OK);
    return l;
}

static int child_wait(const char *url, const char *name, const char *tag, int port,
                      int exit_check)
{
    rl_options o;
    rl_client *c = NULL;
    rl_lock *l = NULL;
    redisContext *rc;
    redisReply *r;
    char key[128];
    int code = 0;

    if (rl_options_init(&o, RL_OPTIONS_VERSION) != RL_OK)
        return 10;
    o.url = url;
    if (rl_client_new(&c, &o) != RL_OK ||
        rl_lock_new_kind(&l, c, name, strlen(name), RL_KIND_FAIR) != RL_OK)
        return 11;
    rc = redisConnect("127.0.0.1", port);
    if (!rc || rc->err)
        return 12;
    if (rl_lock_try_acquire(l, CHILD_MS, RL_LEASE_WATCHDOG) != RL_OK) {
        fprintf(stderr, "it_fair child %s: %s\n", tag, rl_last_error());
        code = 13;
    } else {
        snprintf(key, sizeof key, "order{%s}", name);
        r = redisCommand(rc, "RPUSH %s %s", key, tag);
        if (!r || r->type != REDIS_REPLY_INTEGER)
            code = 14;
        freeReplyObject(r);
        if (rl_lock_release(l) != RL_OK)
            code = 15;
    }
    redisFree(rc);
    rl_lock_free(l);
    rl_client_free(c);
    /* A process that was SIGSTOPped and let go on leaves without ASan's
     * leak check: LeakSanitizer stops every thread with ptrace at exit, and
     * in such a process it was seen to wait for ever (tests/fault/sc_fair.c). */
    if (!exit_check)
        _exit(code);
    return code;
}

static pid_t spawn_waiter(where *w, const char *name, int tag, int exit_check)
{
    char tagbuf[16], portbuf[16];
    char *argv[] = { "it_fair", "--child", "wait", (char *)w->url, (char *)name, tagbuf,
                     portbuf, exit_check ? "1" : "0", NULL };
    pid_t pid;

    snprintf(tagbuf, sizeof tagbuf, "%d", tag);
    snprintf(portbuf, sizeof portbuf, "%d", w->port);
    pid = rt_spawn_self(argv, NULL, 0, 60);
    assert_true(pid > 0);
    return pid;
}

static void wait_child_ok(pid_t pid, const char *what)
{
    int code = rt_child_wait(pid, CHILD_MS + 10000);

    if (code != 0)
        fail_msg("%s: child exited with %d (13: no lock within %d ms)", what, code, CHILD_MS);
}

/* N processes queue one after another behind a holder: they take the
 * lock in that order. (A plain lock gives them a race on each release.) */
static void fifo_across_processes(where *w, const char *name)
{
    enum { N = 4 };
    rl_client *c = client_at(w->url, 0);
    rl_lock *l = fair(c, name);
    pid_t pid[N];
    char got[64];
    int i;

    IT_RC(rl_lock_acquire(l), RL_OK);
    for (i = 0; i < N; i++) {
        pid[i] = spawn_waiter(w, name, i, 1);
        IT_WAIT(queued(w, name) == i + 1, 10000);
    }
    IT_RC(rl_lock_release(l), RL_OK);
    for (i = 0; i < N; i++)
        wait_child_ok(pid[i], "fifo");
    order_of(w, name, got, sizeof got);
    assert_string_equal(got, "0,1,2,3");
    IT_EQ(queued(w, name), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

/* The first waiter is SIGKILLed (or SIGSTOPped) in the queue: the next one
 * gets the lock within the place's bound after the release, and the queue
 * keys go with the last waiter. */
static void dead_head_skipped(where *w, const char *name, int sig)
{
    rl_client *c = client_at(w->url, 0);
    rl_lock *l = fair(c, name);
    pid_t a, b;
    int64_t t0, waited;
    char got[64];

    IT_RC(rl_lock_acquire(l), RL_OK);
    a = spawn_waiter(w, name, 0, sig != SIGSTOP);
    IT_WAIT(queued(w, name) == 1, 10000);
    b = spawn_waiter(w, name, 1, 1);
    IT_WAIT(queued(w, name) == 2, 10000);
    assert_int_equal(kill(a, sig), 0);
    t0 = rt_now_ms();
    IT_RC(rl_lock_release(l), RL_OK);
    IT_WAIT(order_len(w, name) == 1, PLACE_MS + 5000);
    waited = rt_now_ms() - t0;
    order_of(w, name, got, sizeof got);
    assert_string_equal(got, "1");
    /* The place's bound, the waiter's renewal interval and a margin. */
    IT_RANGE(waited, 0, PLACE_MS + 1500);
    wait_child_ok(b, "second waiter");
    if (sig == SIGKILL) {
        IT_EQ(rt_child_wait(a, 5000), 128 + SIGKILL);
        /* Nothing of the dead waiter stays behind. */
        IT_WAIT(queue_keys(w, name) == 0, PLACE_MS + 2000);
    } else {
        /* Woken again, it queues anew and gets the lock. */
        assert_int_equal(kill(a, SIGCONT), 0);
        wait_child_ok(a, "stopped waiter");
        order_of(w, name, got, sizeof got);
        assert_string_equal(got, "1,0");
    }
    IT_EQ(queued(w, name), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

static void test_fifo(void **state)
{
    where w;

    where_single(&w, *state);
    fifo_across_processes(&w, "fifo");
}

static void test_killed_waiter(void **state)
{
    where w;

    where_single(&w, *state);
    dead_head_skipped(&w, "killed", SIGKILL);
}

static void test_stopped_waiter(void **state)
{
    where w;

    where_single(&w, *state);
    dead_head_skipped(&w, "stopped", SIGSTOP);
}

/* A waiter that gives up leaves the queue at once: the next one is not
 * held back for the rest of its place's life. */
typedef struct try_arg {
    rl_lock *l;
    long wait_ms;
    int rc;
} try_arg;

static int try_on_thread(void *arg)
{
    try_arg *t = arg;

    t->rc = rl_lock_try_acquire(t->l, t->wait_ms, RL_LEASE_WATCHDOG);
    if (t->rc == RL_OK)
        rl_lock_release(t->l);
    return 0;
}

static void test_timeout_leaves_queue(void **state)
{
    where w;
    rl_client *c1, *c2;
    rl_lock *l1, *l2;
    try_arg t;
    int64_t t0;

    where_single(&w, *state);
    c1 = client_at(w.url, 0);
    c2 = client_at(w.url, 0);
    l1 = fair(c1, "giveup");
    l2 = fair(c2, "giveup");
    IT_RC(rl_lock_acquire(l1), RL_OK);
    /* wait 0: not queued at all. */
    t.l = l2;
    t.wait_ms = 0;
    it_on_thread(try_on_thread, &t, 5000);
    IT_RC(t.rc, RL_EBUSY);
    IT_EQ(queued(&w, "giveup"), 0);
    /* A wait that runs out: queued, then gone as the call returns. */
    t.wait_ms = 300;
    it_on_thread(try_on_thread, &t, 5000);
    IT_RC(t.rc, RL_ETIMEDOUT);
    IT_EQ(queued(&w, "giveup"), 0);
    /* The free name goes to the next comer at once. */
    IT_RC(rl_lock_release(l1), RL_OK);
    t0 = rt_now_ms();
    t.wait_ms = 5000;
    it_on_thread(try_on_thread, &t, 8000);
    IT_RC(t.rc, RL_OK);
    IT_RANGE(rt_now_ms() - t0, 0, 1000);
    rl_lock_free(l1);
    rl_lock_free(l2);
    rl_client_free(c1);
    rl_client_free(c2);
}

/* One message per release, on the first waiter's own channel; none on
 * the plain release channel. */
static int read_message(redisContext *sub, char *chan, size_t cap, long timeout_ms)
{
    struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
    redisReply *r = NULL;

    redisSetTimeout(sub, tv);
    if (redisGetReply(sub, (void **)&r) != REDIS_OK || !r)
        return -1;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 4)
        snprintf(chan, cap, "%s", r->element[2]->str);
    else
        chan[0] = '\0';
    freeReplyObject(r);
    return 0;
}

static void test_wakes_only_head(void **state)
{
    it_env *e = *state;
    where w;
    rl_client *c[3];
    rl_lock *l[3];
    it_acq a[2];
    redisContext *sub = redisConnect("127.0.0.1", e->redis->port);
    redisReply *r;
    char want[2][160], got[160];
    int i;

    where_single(&w, e);
    assert_true(sub && !sub->err);
    r = redisCommand(sub, "PSUBSCRIBE rl:{head}:release*");
    assert_non_null(r);
    freeReplyObject(r);
    for (i = 0; i < 3; i++) {
        c[i] = client_at(w.url, 0);
        l[i] = fair(c[i], "head");
    }
    IT_RC(rl_lock_acquire(l[0]), RL_OK);
    for (i = 0; i < 2; i++) {
        it_acq_begin(&a[i], l[i + 1], 10000, 0);
        IT_WAIT(queued(&w, "head") == i + 1, 10000);
        /* Its process's channel: the release channel and its uuid. */
        r = redisCommand(w.rc, "ZRANGE rl:{head}:queue %d %d", i, i);
        assert_true(r && r->type == REDIS_REPLY_ARRAY && r->elements == 1);
        snprintf(want[i], sizeof want[i], "rl:{head}:release:%.36s", r->element[0]->str);
        freeReplyObject(r);
    }
    IT_RC(rl_lock_release(l[0]), RL_OK);
    for (i = 0; i < 2; i++) {
        assert_int_equal(read_message(sub, got, sizeof got, 5000), 0);
        assert_string_equal(got, want[i]);
    }
    for (i = 0; i < 2; i++) {
        assert_int_equal(it_acq_join(&a[i], 10000), 0);
        IT_RC(a[i].rc, RL_OK);
    }
    /* The last release found nobody queued: one message, on the plain
     * channel, for a plain handle's waiter of another process (review: it
     * slept for the whole lease). */
    assert_int_equal(read_message(sub, got, sizeof got, 5000), 0);
    assert_string_equal(got, "rl:{head}:release");
    assert_int_equal(read_message(sub, got, sizeof got, 300), -1);
    redisFree(sub);
    for (i = 0; i < 3; i++) {
        rl_lock_free(l[i]);
        rl_client_free(c[i]);
    }
}

/* Review finding: a fair holder's release woke no plain waiter of another
 * client on the same name (it published on queued fair waiters' channels
 * only), so the plain waiter slept for the holder's whole lease (28 s of
 * 30). Nobody is queued here: the plain channel gets the notice. */
static void test_fair_release_wakes_plain_waiter(void **state)
{
    it_env *e = *state;
    rl_client *cf = client_at(e->redis->url, 30000), *cp = client_at(e->redis->url, 30000);
    rl_lock *lf = fair(cf, "mixed"), *lp = it_lock(cp, "mixed");
    int64_t t0;
    it_acq a;

    IT_RC(rl_lock_acquire(lf), RL_OK);
    it_acq_begin(&a, lp, 20000, 0);
    IT_WAIT(rt_redis_numsub(e->rc, "rl:{mixed}:release", 18) >= 1, 5000);
    t0 = rt_now_ms();
    IT_RC(rl_lock_release(lf), RL_OK);
    /* Woken by the notice, not by the lease (30 s). */
    IT_EQ(it_acq_join(&a, 5000), 0);
    IT_RC(a.rc, RL_OK);
    print_message("plain waiter in %lld ms after the fair release\n",
                  (long long)(rt_now_ms() - t0));
    IT_RC(a.release_rc, RL_OK);
    rl_lock_free(lf);
    rl_lock_free(lp);
    rl_client_free(cf);
    rl_client_free(cp);
}

/* Take lock on a thread, hold it until let go, and note its rank. */
static void begin_ranked(it_acq *a, rl_lock *lock, atomic_int *order)
{
    memset(a, 0, sizeof *a);
    a->lock = lock;
    a->wait_ms = 20000;
    a->lease_ms = RL_LEASE_WATCHDOG;
    a->hold = 1;
    a->order = order;
    it_acq_start(a);
}

/* Nemesis seed 0x6107: CLIENT KILL cut the first waiter's connections just
 * as the name came free. Its grant ran in Redis, the reply was lost, and the
 * count could not be read back: the outcome unknown, the thread's leftover
 * field was dropped (outcome.c) and the name went to a waiter that had
 * queued behind it meanwhile; the first waiter, which had the grant taken
 * from it only because of a reconnect, queued again at the tail. Here the
 * proxy holds the grant's reply, refuses the read-back and then lets the
 * client reconnect: the first waiter must be served first. */
static unsigned long long unresolved(rl_client *c)
{
    return it_stats(c).replies_unresolved;
}

static void test_lost_grant_keeps_head(void **state)
{
    it_env *e = *state;
    where w;
    rt_proxy *p = rt_proxy_start(e->redis->port);
    rl_client *c[3];
    rl_lock *l[3];
    atomic_int order = 0;
    it_acq head, late;
    int i;

    assert_non_null(p);
    where_single(&w, e);
    c[0] = client_at(w.url, 30000);
    c[1] = client_at(rt_proxy_url(p), 30000);
    c[2] = client_at(w.url, 30000);
    for (i = 0; i < 3; i++)
        l[i] = fair(c[i], "lostgrant");
    IT_RC(rl_lock_acquire(l[0]), RL_OK);
    begin_ranked(&head, l[1], &order);
    IT_WAIT(queued(&w, "lostgrant") == 1, 5000);
    /* The release wakes the head; its grant runs, its reply is held. */
    rt_proxy_hold_next_reply_matching(p, "EVAL");
    IT_RC(rl_lock_release(l[0]), RL_OK);
    IT_WAIT(rt_proxy_held(p) > 0 && queued(&w, "lostgrant") == 0, 5000);
    /* A newcomer queues behind the (unknown) holder. */
    begin_ranked(&late, l[2], &order);
    IT_WAIT(queued(&w, "lostgrant") == 1, 5000);
    /* The head's connections cut, the read-back refused: unresolved. */
    IT_EQ(rt_proxy_refuse(p, 1), 0);
    assert_true(rt_proxy_cut_all(p) > 0);
    IT_WAIT(unresolved(c[1]) >= 1, 5000);
    IT_EQ(rt_proxy_refuse(p, 0), 0);
    IT_WAIT(atomic_load(&order) >= 1, 10000);
    IT_EQ(head.rank, 1);
    it_acq_let_go(&head);
    IT_EQ(it_acq_join(&head, 5000), 0);
    IT_RC(head.rc, RL_OK);
    IT_WAIT(atomic_load(&order) >= 2, 5000);
    it_acq_let_go(&late);
    IT_EQ(it_acq_join(&late, 5000), 0);
    IT_RC(late.rc, RL_OK);
    IT_EQ(late.rank, 2);
    for (i = 0; i < 3; i++) {
        rl_lock_free(l[i]);
        rl_client_free(c[i]);
    }
    rt_proxy_stop(p);
}

/* The same lost grant, but the waiter gives up (its wait runs out while
 * the proxy refuses): the leftover's later drop frees the name without
 * queueing the waiter again (a stale place would hold the queue back). */
static void test_lost_grant_given_up(void **state)
{
    it_env *e = *state;
    where w;
    rt_proxy *p = rt_proxy_start(e->redis->port);
    rl_client *c0, *c1;
    rl_lock *l0, *l1;
    it_acq head;

    assert_non_null(p);
    where_single(&w, e);
    c0 = client_at(w.url, 30000);
    c1 = client_at(rt_proxy_url(p), 30000);
    l0 = fair(c0, "gaveup");
    l1 = fair(c1, "gaveup");
    IT_RC(rl_lock_acquire(l0), RL_OK);
    it_acq_begin(&head, l1, 1500, 0);
    IT_WAIT(queued(&w, "gaveup") == 1, 5000);
    rt_proxy_hold_next_reply_matching(p, "EVAL");
    IT_RC(rl_lock_release(l0), RL_OK);
    IT_WAIT(rt_proxy_held(p) > 0 && queued(&w, "gaveup") == 0, 5000);
    IT_EQ(rt_proxy_refuse(p, 1), 0);
    assert_true(rt_proxy_cut_all(p) > 0);
    IT_EQ(it_acq_join(&head, 5000), 0);
    assert_int_not_equal(head.rc, RL_OK);
    IT_EQ(rt_proxy_refuse(p, 0), 0);
    IT_WAIT(cmd_int(&w, "EXISTS rl:{%s}", "gaveup") == 0, 5000);
    IT_EQ(queue_keys(&w, "gaveup"), 0);
    rl_lock_free(l0);
    rl_lock_free(l1);
    rl_client_free(c0);
    rl_client_free(c1);
    rt_proxy_stop(p);
}

/* Reentry, the watchdog, the value format; a force-release leaves the
 * queue working. */
static void test_reentry_watchdog_force(void **state)
{
    it_env *e = *state;
    where w;
    rl_client *c = client_at(e->redis->url, 300), *c2 = client_at(e->redis->url, 0);
    rl_lock *l = fair(c, "reent"), *l2 = fair(c2, "reent"), *plain = NULL;
    rl_stats st;
    it_hash hh;
    it_acq a;
    redisContext *sub;
    redisReply *r;

    where_single(&w, e);
    IT_RC(rl_lock_new(&plain, c, "reent"), RL_EINVAL);   /* open as fair in this client */
    IT_RC(rl_lock_acquire(l), RL_OK);
    IT_RC(rl_lock_acquire(l), RL_OK);
    IT_EQ(rl_lock_hold_count(l), 2);
    /* Renewed every 100 ms: six rounds outlive two leases. */
    IT_WAIT((st.version = RL_STATS_VERSION, rl_client_stats(&st, c)) == RL_OK &&
            st.renewal_rounds >= 6, 5000);
    IT_EQ(rl_lock_interrupted(l), 0);
    assert_int_equal(it_hgetall(w.rc, "rl:{reent}", 10, &hh), 0);
    assert_string_equal(hh.value, "2");
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(rl_lock_is_locked(l), 1);
    /* A waiter of another client; then the name is forced free. */
    it_acq_begin(&a, l2, 10000, 1);
    IT_WAIT(queued(&w, "reent") == 1, 10000);
    /* The force wakes the first waiter's process on its own channel (its
     * 500 ms re-ask would hide a missing wake from the waiter's timing):
     * exactly one message there before ours. */
    sub = rt_redis_connect(e->redis);
    assert_non_null(sub);
    r = redisCommand(sub, "PSUBSCRIBE rl:{reent}:release:*");
    assert_true(r && r->type == REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    IT_RC(rl_lock_force_release(l2), RL_OK);
    r = redisCommand(w.rc, "PUBLISH rl:{reent}:release:it-sentinel end");
    freeReplyObject(r);
    IT_EQ(rt_redis_pmessages_before(sub, "end"), 1);
    redisFree(sub);
    IT_WAIT(atomic_load(&a.state) >= 2, 5000);
    IT_RC(a.rc, RL_OK);
    IT_WAIT(rl_lock_interrupted(l) == 1, 5000);
    IT_RC(rl_lock_release(l), RL_ELOST);
    it_acq_let_go(&a);
    assert_int_equal(it_acq_join(&a, 5000), 0);
    IT_RC(a.release_rc, RL_OK);
    IT_EQ(queued(&w, "reent"), 0);
    rl_lock_free(l);
    rl_lock_free(l2);
    rl_client_free(c);
    rl_client_free(c2);
}

static long long evalsha_calls(redisContext *rc)
{
    redisReply *r = redisCommand(rc, "INFO commandstats");
    const char *at = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "cmdstat_evalsha:calls=")
                                                        : NULL;
    long long n = at ? atoll(at + strlen("cmdstat_evalsha:calls=")) : -1;

    freeReplyObject(r);
    return n;
}

/* A thread waits locally behind another of its process (B behind A),
 * while a third process's thread (C) is queued: A's release queues B in
 * Redis itself, behind C, so B spends no try of its own (2 EVALSHA from
 * A's release to C's acquisition, not 3); the order is A, C, B. */
static void test_release_queues_next(void **state)
{
    it_env *e = *state;
    where w;
    rl_client *c1 = client_at(e->redis->url, 0), *c2 = client_at(e->redis->url, 0);
    rl_client *c3 = client_at(e->redis->url, 0);
    rl_lock *l1 = fair(c1, "next"), *l2 = fair(c2, "next"), *l3 = fair(c3, "next");
    it_acq a[3];
    redisReply *r;
    long long before;
    int i;

    where_single(&w, e);
    IT_RC(rl_lock_acquire(l2), RL_OK);
    memset(a, 0, sizeof a);
    for (i = 0; i < 3; i++) {
        a[i].lock = i < 2 ? l1 : l3;
        a[i].wait_ms = 20000;
        a[i].lease_ms = RL_LEASE_WATCHDOG;
        a[i].hold = 1;
    }
    it_acq_start(&a[0]);                            /* A: queued in Redis */
    IT_WAIT(queued(&w, "next") == 1, 10000);
    it_acq_start(&a[1]);                            /* B: behind A, locally */
    it_acq_start(&a[2]);                            /* C: queued behind A */
    IT_WAIT(queued(&w, "next") == 2, 10000);
    IT_RC(rl_lock_release(l2), RL_OK);
    IT_WAIT(atomic_load(&a[0].state) >= 2, 10000);
    IT_RC(a[0].rc, RL_OK);
    IT_EQ(queued(&w, "next"), 1);                   /* C */
    before = evalsha_calls(w.rc);
    it_acq_let_go(&a[0]);
    IT_WAIT(atomic_load(&a[2].state) >= 2, 10000);
    IT_RC(a[2].rc, RL_OK);
    IT_EQ(evalsha_calls(w.rc) - before, 2);         /* A's release, C's acquisition */
    r = redisCommand(w.rc, "ZRANGE rl:{next}:queue 0 -1");
    assert_true(r && r->type == REDIS_REPLY_ARRAY && r->elements == 1);
    IT_EQ(atomic_load(&a[1].state), 1);             /* B: still waiting, queued */
    freeReplyObject(r);
    it_acq_let_go(&a[2]);
    IT_WAIT(atomic_load(&a[1].state) >= 2, 10000);
    IT_RC(a[1].rc, RL_OK);
    it_acq_let_go(&a[1]);
    for (i = 0; i < 3; i++) {
        assert_int_equal(it_acq_join(&a[i], 10000), 0);
        IT_RC(a[i].release_rc, RL_OK);
    }
    IT_EQ(queued(&w, "next"), 0);
    rl_lock_free(l1);
    rl_lock_free(l2);
    rl_lock_free(l3);
    rl_client_free(c1);
    rl_client_free(c2);
    rl_client_free(c3);
}

static void test_redlock_refused(void **state)
{
    it_env *e = *state;
    char url[96];
    rl_options o;
    rl_client *c;
    rl_lock *l = NULL;

    /* Three masters by name, one server in fact: enough to be refused. */
    snprintf(url, sizeof url, "redlock://127.0.0.1:%d,localhost:%d,[::1]:%d", e->redis->port,
             e->redis->port, e->redis->port);
    it_options(&o, url, 0, 0);
    c = it_client_opts(&o);
    IT_RC(rl_lock_new_kind(&l, c, "r", 1, RL_KIND_FAIR), RL_ENOTSUP);
    IT_RC(rl_lock_new_kind(&l, c, "r", 1, RL_KIND_PLAIN), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);
}

/* ---- Cluster: the same, on a 3-master cluster (sharded notices) -------- */

static void test_cluster_fifo(void **state)
{
    where w;

    where_cluster(&w, *state, "cfifo");
    fifo_across_processes(&w, "cfifo");
    where_done(&w);
}

static void test_cluster_killed_waiter(void **state)
{
    where w;

    where_cluster(&w, *state, "ckilled");
    dead_head_skipped(&w, "ckilled", SIGKILL);
    where_done(&w);
}

/* ---- Sentinel: the primary the sentinels name -------------------------- */

static rt_sentinel *dep;

static int sentinel_setup(void **state)
{
    (void)state;
    dep = rt_sentinel_start(0, 1, "fairm", NULL);
    if (!dep)
        fprintf(stderr, "it_fair: cannot start a Sentinel deployment: this group FAILS\n");
    return dep ? 0 : -1;
}

static int sentinel_teardown(void **state)
{
    (void)state;
    rt_sentinel_stop(dep);
    return 0;
}

static void test_sentinel_fifo(void **state)
{
    int p = rt_sentinel_primary(dep);
    where w;

    (void)state;
    assert_true(p >= 0);
    w.url = dep->url;
    w.port = dep->node[p]->port;
    w.rc = redisConnect("127.0.0.1", w.port);
    assert_true(w.rc && !w.rc->err);
    w.cl = NULL;
    fifo_across_processes(&w, "sfifo");
    redisFree(w.rc);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest single[] = {
        cmocka_unit_test_setup_teardown(test_fifo, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_killed_waiter, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_stopped_waiter, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_timeout_leaves_queue, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_wakes_only_head, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_fair_release_wakes_plain_waiter, it_setup,
                                        it_teardown),
        cmocka_unit_test_setup_teardown(test_reentry_watchdog_force, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_release_queues_next, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_lost_grant_keeps_head, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_lost_grant_given_up, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_redlock_refused, it_setup, it_teardown),
    };
    const struct CMUnitTest cluster[] = {
        cmocka_unit_test(test_cluster_fifo),
        cmocka_unit_test(test_cluster_killed_waiter),
    };
    const struct CMUnitTest sentinel[] = {
        cmocka_unit_test(test_sentinel_fifo),
    };
    int failed;

    if (argc == 8 && strcmp(argv[1], "--child") == 0 && strcmp(argv[2], "wait") == 0)
        return child_wait(argv[3], argv[4], argv[5], atoi(argv[6]), atoi(argv[7]));
    failed = cmocka_run_group_tests_name("fair", single, NULL, NULL);
    failed += cmocka_run_group_tests_name("fair_cluster", cluster, it_cluster_setup,
                                          it_cluster_teardown);
    failed += cmocka_run_group_tests_name("fair_sentinel", sentinel, sentinel_setup,
                                          sentinel_teardown);
    return failed;
}
