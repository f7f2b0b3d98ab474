/*
 * Review of the Redlock, Sentinel and wait_replicas modes (2fdeadd..bffec41):
 * each test guards one finding and fails on the code it was written against.
 *
 *   1. Redlock: a stopped master with no idle pooled connection is connected
 *      to (handshake bounded only by the command timeout) inside the
 *      fan-out's send loop, before the other masters are even written to:
 *      the call waits the command timeout, the healthy masters written after
 *      it are given no time at all (their deadline was counted from before
 *      the connect), abandoned and marked down: the lock is refused.
 *   2. wait_replicas: an acquisition whose reply was lost and that the
 *      read-back finds applied is reported held without any WAIT.
 *   3. wait_replicas: a WAIT that Redis refuses (ACL without +wait) is taken
 *      for an unknown outcome: RL_ECONN after the whole wait instead of
 *      RL_EREDIS at once.
 *   4. Sentinel: the watchdog asks the sentinels itself, blocking for the
 *      command timeout per silent sentinel before renewing: a hold on a
 *      perfectly healthy primary is flagged when one sentinel is stopped.
 *   5. Sentinel: the primary is the one the first sentinel to answer names,
 *      even when that sentinel has not seen a failover the others agreed on
 *      (a higher config epoch): locks go to the old primary.
 *   6. Sentinel: after the primary's connections are lost, a new connection
 *      to the same address is used without asking the sentinels: when the
 *      old primary was restarted there, empty, while the sentinels moved on
 *      (and their +switch-master did not reach the client), locks go to it.
 *      (Found by the fault scenario sentinel_restart_early.)
 *
 * Real redis-servers (tests/common); the "sentinels" of tests 4-6 are a
 * small fake in this file that answers SENTINEL get-master-addr-by-name,
 * MASTER and SUBSCRIBE +switch-master, and can be told to stop answering
 * (like a SIGSTOPped sentinel: connections are accepted, nothing is
 * answered) or to name another primary.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "it_common.h"
#include "proxy.h"
#include "rt_util.h"

static char kb[256];

static const char *key_of(const char *name)
{
    it_key(kb, sizeof kb, "rl:", name, strlen(name), "");
    return kb;
}

static long long count_in(redisContext *ctx, const char *name)
{
    const char *k = key_of(name);
    it_hash h;

    if (it_hgetall(ctx, k, strlen(k), &h) != 0)
        return -100;
    return h.fields == 0 ? 0 : atoll(h.value);
}

static void cmd_ok(redisContext *ctx, const char *what)
{
    redisReply *r = redisCommand(ctx, what);

    if (!r || r->type == REDIS_REPLY_ERROR)
        fail_msg("%s: %s", what, r ? r->str : ctx->errstr);
    freeReplyObject(r);
}

/* ---- 1. Redlock: a stopped master without an idle connection ---------- */

static void test_redlock_stopped_node_without_idle_conn_delays_fanout(void **state)
{
    rt_redis *n[3] = { NULL, NULL, NULL };
    redisContext *ctl[3] = { NULL, NULL, NULL };
    rt_proxy *p;
    rl_options o;
    rl_client *c;
    rl_lock *l;
    char url[256];
    int64_t t0, took;
    int i, rc;

    (void)state;
    for (i = 0; i < 3; i++)
        assert_int_equal(rt_redis_open("it_modes_review", NULL, &n[i], &ctl[i]), 0);
    /* Master 0, the first the fan-out writes to, behind a proxy that
     * accepts connections but forwards nothing: a stopped node. */
    assert_non_null(p = rt_proxy_start(n[0]->port));
    assert_int_equal(rt_proxy_stall(p, 1), 0);
    snprintf(url, sizeof url, "redlock://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
             rt_proxy_port(p), n[1]->port, n[2]->port);
    it_options(&o, url, 0, 2000);
    /* Created with a majority; master 0's handshake timed out, so the
     * pool has no connection to it and it is "down" for 2 s. */
    c = it_client_opts(&o);
    l = it_lock(c, "rv-stopped");
    /* Let the 2 s "down" mark pass (a library constant, not a sync). */
    rt_sleep_ms(2300);

    t0 = rt_now_ms();
    rc = rl_lock_try_acquire(l, 0, 1500);
    took = rt_now_ms() - t0;
    if (rc != RL_OK || took > 500)
        fail_msg("with one of three masters stopped, try_acquire(lease 1500) = %d (%s) "
                 "after %lld ms (want RL_OK well under the command timeout): %s",
                 rc, rl_strerror(rc), (long long)took, rl_last_error());
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);
    rt_proxy_stop(p);
    for (i = 0; i < 3; i++) {
        redisFree(ctl[i]);
        rt_redis_stop(n[i]);
    }
}

/* ---- 2, 3. wait_replicas -------------------------------------------- */

static int replica_up(redisContext *rc)
{
    redisReply *r = redisCommand(rc, "INFO replication");
    int up = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "master_link_status:up");

    if (r)
        freeReplyObject(r);
    return up;
}

/* An acquisition whose reply is lost and which the read-back finds applied
 * must still be acknowledged by the replicas before it is reported held. */
static void test_replicas_lost_reply_read_back_skips_wait(void **state)
{
    rt_redis *primary = NULL, *replica = NULL;
    redisContext *pc = NULL, *rc_ = NULL;
    char args[128];
    rt_proxy *p;
    rl_options o;
    rl_client *c;
    rl_lock *l;
    int rc;

    (void)state;
    assert_int_equal(rt_redis_open("it_modes_review", NULL, &primary, &pc), 0);
    snprintf(args, sizeof args, "--replicaof 127.0.0.1 %d --repl-diskless-sync-delay 0",
             primary->port);
    assert_int_equal(rt_redis_open("it_modes_review", args, &replica, &rc_), 0);
    IT_WAIT(replica_up(rc_), 10000);
    assert_non_null(p = rt_proxy_start(primary->port));
    it_options(&o, rt_proxy_url(p), 30000, 500);
    o.wait_replicas = 1;
    /* Long enough for a loaded machine's replica to answer the sanity
     * acquisition below; the stopped replica's case then takes this long. */
    o.wait_replicas_ms = 2000;
    c = it_client_opts(&o);
    l = it_lock(c, "rv-ack");

    /* Sanity: with the replica answering, acquisitions are acknowledged. */
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);

    /* The replica stopped: no acquisition can be acknowledged now. */
    assert_int_equal(rt_redis_pause(replica), 0);
    rt_proxy_drop_next_reply_matching(p, "EVALSHA");
    rc = rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG);
    IT_EQ(rt_proxy_dropped(p), 1);
    if (rc == RL_OK)
        fail_msg("acquired (RL_OK) with wait_replicas=1 while the only replica was "
                 "stopped: the lost reply was read back as applied and no WAIT was "
                 "done (count on the primary %lld)", count_in(pc, "rv-ack"));
    IT_RC(rc, RL_EREPLICA);
    assert_int_equal(rt_redis_resume(replica), 0);
    rl_lock_free(l);
    rl_client_free(c);
    rt_proxy_stop(p);
    redisFree(rc_);
    redisFree(pc);
    rt_redis_stop(replica);
    rt_redis_stop(primary);
}

/* WAIT refused by Redis (an ACL user without +wait): a refusal, said at
 * once, not an outage ridden out until the deadline. */
static void test_replicas_wait_refused_is_not_an_outage(void **state)
{
    rt_redis *r = NULL;
    redisContext *ctx = NULL;
    char url[128];
    rl_options o;
    rl_client *c;
    rl_lock *l;
    int64_t t0, took;
    int rc;

    (void)state;
    assert_int_equal(rt_redis_open("it_modes_review", NULL, &r, &ctx), 0);
    cmd_ok(ctx, "ACL SETUSER nowait on >pw ~* &* +@all -wait");
    snprintf(url, sizeof url, "redis://nowait:pw@127.0.0.1:%d", r->port);
    it_options(&o, url, 30000, 500);
    o.wait_replicas = 1;
    o.wait_replicas_ms = 200;
    c = it_client_opts(&o);
    l = it_lock(c, "rv-nowait");

    t0 = rt_now_ms();
    rc = rl_lock_try_acquire(l, 2000, RL_LEASE_WATCHDOG);
    took = rt_now_ms() - t0;
    if (rc != RL_EREDIS || took > 1000)
        fail_msg("WAIT refused (NOPERM): try_acquire = %d (%s) after %lld ms, want "
                 "RL_EREDIS at once: %s", rc, rl_strerror(rc), (long long)took,
                 rl_last_error());
    IT_WAIT(count_in(ctx, "rv-nowait") == 0, 3000);
    rl_lock_free(l);
    rl_client_free(c);
    redisFree(ctx);
    rt_redis_stop(r);
}

/* ---- 4. Sentinel ---------------------------------------------------- */

/* A fake sentinel: names `master_port` as the primary of any name (with
 * `epoch` for its config epoch), takes SUBSCRIBE, publishes +switch-master on request, and answers nothing
 * (but keeps accepting and reading) once `silent` is set. */
#define FS_MAX 32
typedef struct fake_sentinel {
    int lfd, port;
    atomic_int master_port;     /* the primary it names */
    atomic_int epoch;           /* the config epoch it gives with it */
    int wake[2];
    int fd[FS_MAX];
    int sub[FS_MAX];
    atomic_int silent;
    atomic_int delay_ms;        /* answers to questions go out this late */
    char pend[FS_MAX][512];     /* per connection: answers held back (delay_ms) */
    size_t pend_len[FS_MAX];
    int64_t pend_due[FS_MAX];
    atomic_int publish;         /* requests not served yet */
    atomic_int subscribers;
    atomic_int queries;         /* questions for the primary seen */
    atomic_int stop;
    pthread_t th;
} fake_sentinel;

static int contains(const char *buf, size_t len, const char *needle)
{
    size_t n = strlen(needle), i;

    for (i = 0; i + n <= len; i++)
        if (strncasecmp(buf + i, needle, n) == 0)
            return 1;
    return 0;
}

static void fs_send(int fd, const char *s, size_t len)
{
    while (len > 0) {
        ssize_t w = send(fd, s, len, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        s += w;
        len -= (size_t)w;
    }
}

/* An answer to connection k: now, or held back delay_ms (computed now:
 * what the sentinel knew when asked). */
static void fs_answer(fake_sentinel *f, int k, const char *s, size_t len)
{
    int delay = atomic_load(&f->delay_ms);

    if (delay <= 0 && f->pend_len[k] == 0) {
        fs_send(f->fd[k], s, len);
        return;
    }
    if (f->pend_len[k] == 0)
        f->pend_due[k] = rt_now_ms() + delay;
    if (f->pend_len[k] + len <= sizeof f->pend[k]) {
        memcpy(f->pend[k] + f->pend_len[k], s, len);
        f->pend_len[k] += len;
    }
}

static void fs_serve(fake_sentinel *f, int k)
{
    char buf[4096], out[256];
    ssize_t n = recv(f->fd[k], buf, sizeof buf, 0);

    if (n <= 0) {
        close(f->fd[k]);
        f->fd[k] = -1;
        f->sub[k] = 0;
        f->pend_len[k] = 0;
        return;
    }
    if (contains(buf, (size_t)n, "get-master-addr-by-name")) {
        atomic_fetch_add(&f->queries, 1);
        if (!atomic_load(&f->silent)) {
            char port[16];
            int pl = snprintf(port, sizeof port, "%d", atomic_load(&f->master_port));
            int ol = snprintf(out, sizeof out, "*2\r\n$9\r\n127.0.0.1\r\n$%d\r\n%s\r\n", pl,
                              port);
            fs_answer(f, k, out, (size_t)ol);
        }
    }
    if (contains(buf, (size_t)n, "$6\r\nmaster\r\n")) {
        /* SENTINEL MASTER <name>: the fields the client reads. */
        atomic_fetch_add(&f->queries, 1);
        if (!atomic_load(&f->silent)) {
            char port[16], epoch[16];
            int pl = snprintf(port, sizeof port, "%d", atomic_load(&f->master_port));
            int el = snprintf(epoch, sizeof epoch, "%d", atomic_load(&f->epoch));
            int ol = snprintf(out, sizeof out,
                              "*6\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$4\r\nport\r\n$%d\r\n%s\r\n"
                              "$12\r\nconfig-epoch\r\n$%d\r\n%s\r\n",
                              pl, port, el, epoch);
            fs_answer(f, k, out, (size_t)ol);
        }
    } else if (contains(buf, (size_t)n, "subscribe")) {
        static const char ack[] = "*3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:1\r\n";
        f->sub[k] = 1;
        fs_send(f->fd[k], ack, sizeof ack - 1);
        atomic_fetch_add(&f->subscribers, 1);
    } else if (contains(buf, (size_t)n, "ping") && !atomic_load(&f->silent)) {
        fs_send(f->fd[k], "+PONG\r\n", 7);
    }
}

static void fs_publish(fake_sentinel *f)
{
    char msg[128], out[256];
    int ml = snprintf(msg, sizeof msg, "mymaster 127.0.0.1 %d 127.0.0.1 %d",
                      atomic_load(&f->master_port), atomic_load(&f->master_port));
    int ol = snprintf(out, sizeof out,
                      "*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n$%d\r\n%s\r\n", ml, msg);
    int k;

    for (k = 0; k < FS_MAX; k++)
        if (f->fd[k] >= 0 && f->sub[k])
            fs_send(f->fd[k], out, (size_t)ol);
}

static void *fs_main(void *arg)
{
    fake_sentinel *f = arg;

    while (!atomic_load(&f->stop)) {
        struct pollfd pfd[2 + FS_MAX];
        int at[2 + FS_MAX], np = 2, k, j;

        pfd[0].fd = f->wake[0];
        pfd[0].events = POLLIN;
        pfd[1].fd = f->lfd;
        pfd[1].events = POLLIN;
        for (k = 0; k < FS_MAX; k++) {
            if (f->fd[k] < 0)
                continue;
            pfd[np].fd = f->fd[k];
            pfd[np].events = POLLIN;
            at[np++] = k;
        }
        if (poll(pfd, (nfds_t)np, 5) < 0 && errno != EINTR)
            break;
        for (k = 0; k < FS_MAX; k++) {
            if (f->fd[k] >= 0 && f->pend_len[k] && rt_now_ms() >= f->pend_due[k]) {
                fs_send(f->fd[k], f->pend[k], f->pend_len[k]);
                f->pend_len[k] = 0;
            }
        }
        if (pfd[0].revents & POLLIN) {
            char junk[16];
            while (read(f->wake[0], junk, sizeof junk) > 0)
                ;
        }
        while (atomic_load(&f->publish) > 0) {
            atomic_fetch_sub(&f->publish, 1);
            fs_publish(f);
        }
        if (pfd[1].revents & POLLIN) {
            int fd = accept(f->lfd, NULL, NULL);
            for (k = 0; fd >= 0 && k < FS_MAX && f->fd[k] >= 0; k++)
                ;
            if (fd >= 0 && k < FS_MAX)
                f->fd[k] = fd;
            else if (fd >= 0)
                close(fd);
        }
        for (j = 2; j < np; j++)
            if (pfd[j].revents && f->fd[at[j]] >= 0)
                fs_serve(f, at[j]);
    }
    return NULL;
}

static fake_sentinel *fs_start(int master_port)
{
    fake_sentinel *f = calloc(1, sizeof *f);
    int k;

    assert_non_null(f);
    for (k = 0; k < FS_MAX; k++)
        f->fd[k] = -1;
    atomic_store(&f->master_port, master_port);
    f->lfd = rt_listen_port(&f->port);
    assert_true(f->lfd >= 0);
    assert_int_equal(pipe2(f->wake, O_CLOEXEC | O_NONBLOCK), 0);
    assert_int_equal(pthread_create(&f->th, NULL, fs_main, f), 0);
    return f;
}

static void fs_poke(fake_sentinel *f)
{
    char b = 1;
    ssize_t ignored = write(f->wake[1], &b, 1);

    (void)ignored;
}

static void fs_stop(fake_sentinel *f)
{
    int k;

    atomic_store(&f->stop, 1);
    fs_poke(f);
    pthread_join(f->th, NULL);
    for (k = 0; k < FS_MAX; k++)
        if (f->fd[k] >= 0)
            close(f->fd[k]);
    close(f->lfd);
    close(f->wake[0]);
    close(f->wake[1]);
    free(f);
}

/* The primary is healthy all along; only the (one) sentinel stops
 * answering, and says +switch-master once before it does (any refresh
 * trigger would do: a lost connection, or the 30 s age). The watchdog
 * must keep renewing on the primary it has: a sentinel that does not
 * answer must not cost a healthy hold its lease. */
static void test_sentinel_silent_sentinel_flags_healthy_hold(void **state)
{
    rt_redis *primary = NULL;
    redisContext *pc = NULL;
    fake_sentinel *fs;
    char url[128];
    rl_options o;
    rl_client *c;
    rl_lock *l;
    int64_t t0, flagged_at = -1;
    int queries;

    (void)state;
    assert_int_equal(rt_redis_open("it_modes_review", NULL, &primary, &pc), 0);
    fs = fs_start(primary->port);
    snprintf(url, sizeof url, "sentinel://127.0.0.1:%d/mymaster", fs->port);
    /* lease 1500, renewed every 500 ms, 1200 ms per reply: valid options. */
    it_options(&o, url, 1500, 1200);
    c = it_client_opts(&o);
    l = it_lock(c, "rv-sentinel");
    IT_WAIT(atomic_load(&fs->subscribers) >= 1, 5000);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);

    queries = atomic_load(&fs->queries);
    atomic_store(&fs->silent, 1);
    atomic_fetch_add(&fs->publish, 1);
    fs_poke(fs);
    /* The client asks the sentinel again (it heard +switch-master). */
    IT_WAIT(atomic_load(&fs->queries) > queries, 5000);
    /* Four leases with the primary answering every renewal. */
    t0 = rt_now_ms();
    while (rt_now_ms() - t0 < 6000) {
        if (rl_lock_interrupted(l)) {
            flagged_at = rt_now_ms() - t0;
            break;
        }
        rt_sleep_ms(5);
    }
    IT_EQ(count_in(pc, "rv-sentinel"), 1);   /* the primary still has it */
    if (flagged_at >= 0)
        fail_msg("a hold on a healthy primary was flagged %lld ms after the sentinel "
                 "went silent (the watchdog waits for the sentinels before renewing)",
                 (long long)flagged_at);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);
    fs_stop(fs);
    redisFree(pc);
    rt_redis_stop(primary);
}

/* Two primaries (the old and the current one) and three fake sentinels,
 * all naming the old one with config epoch 1 until a test says otherwise. */
typedef struct sn_trio {
    rt_redis *old, *cur;
    redisContext *oc, *cc;
    fake_sentinel *fs[3];
    char url[256];
} sn_trio;

static void trio_start(sn_trio *t)
{
    int k;

    memset(t, 0, sizeof *t);
    assert_int_equal(rt_redis_open("it_modes_review", NULL, &t->old, &t->oc), 0);
    assert_int_equal(rt_redis_open("it_modes_review", NULL, &t->cur, &t->cc), 0);
    for (k = 0; k < 3; k++) {
        t->fs[k] = fs_start(t->old->port);
        atomic_store(&t->fs[k]->epoch, 1);
    }
    snprintf(t->url, sizeof t->url,
             "sentinel://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d/mymaster", t->fs[0]->port,
             t->fs[1]->port, t->fs[2]->port);
}

/* Sentinel k names the current primary, with epoch 2. */
static void trio_switch(sn_trio *t, int k)
{
    atomic_store(&t->fs[k]->master_port, t->cur->port);
    atomic_store(&t->fs[k]->epoch, 2);
}

/* A failover every sentinel names (epoch 2), and the old primary back,
 * empty, at its address (a crashed node brought back). */
static void trio_fail_over(sn_trio *t)
{
    int k;

    for (k = 0; k < 3; k++)
        trio_switch(t, k);
    redisFree(t->oc);
    assert_int_equal(rt_redis_restart(t->old), 0);
    t->oc = rt_redis_connect(t->old);
    assert_non_null(t->oc);
}

static void trio_stop(sn_trio *t)
{
    int k;

    for (k = 0; k < 3; k++)
        fs_stop(t->fs[k]);
    redisFree(t->oc);
    redisFree(t->cc);
    rt_redis_stop(t->old);
    rt_redis_stop(t->cur);
}

/* Three sentinels; the first in the URL still names the old primary (epoch
 * 1), the other two the new one (epoch 2) after a failover they agreed on.
 * The client must take the new one: a majority names it, with the higher
 * epoch. */
static void test_sentinel_first_answer_names_old_primary(void **state)
{
    sn_trio t;
    rl_options o;
    rl_client *c;
    rl_lock *l;

    (void)state;
    trio_start(&t);
    trio_switch(&t, 1);
    trio_switch(&t, 2);
    it_options(&o, t.url, 5000, 1000);
    c = it_client_opts(&o);
    l = it_lock(c, "rv-epoch");
    IT_RC(rl_lock_try_acquire(l, 0, 5000), RL_OK);
    if (count_in(t.oc, "rv-epoch") != 0)
        fail_msg("the lock was taken on the old primary named by one sentinel of three "
                 "(epoch 1), not on the one two sentinels name (epoch 2)");
    IT_EQ(count_in(t.cc, "rv-epoch"), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);
    trio_stop(&t);
}

/* The client works on the primary; the sentinels then name another one
 * (epoch 2) without a +switch-master reaching the client, and the old
 * primary is restarted on its port, empty (a crashed node brought back).
 * The client's next lock must go to the primary the sentinels name, not to
 * the empty node it finds at the address it had. */
static void test_sentinel_new_conn_after_loss_not_checked(void **state)
{
    sn_trio t;
    rl_options o;
    rl_client *c;
    rl_lock *l0, *l1;
    int rc;

    (void)state;
    trio_start(&t);
    it_options(&o, t.url, 5000, 1000);
    c = it_client_opts(&o);
    l0 = it_lock(c, "rv-before");
    l1 = it_lock(c, "rv-after");
    IT_RC(rl_lock_try_acquire(l0, 0, 5000), RL_OK);
    IT_EQ(count_in(t.oc, "rv-before"), 1);
    IT_RC(rl_lock_release(l0), RL_OK);

    trio_fail_over(&t);

    rc = rl_lock_try_acquire(l1, 0, 5000);
    if (count_in(t.oc, "rv-after") != 0)
        fail_msg("after its connections were lost the client took a lock on the empty "
                 "node restarted at the old primary's address (try_acquire %s), not on "
                 "the primary the sentinels name", rl_strerror(rc));
    IT_RC(rc, RL_OK);
    IT_EQ(count_in(t.cc, "rv-after"), 1);
    IT_RC(rl_lock_release(l1), RL_OK);
    rl_lock_free(l0);
    rl_lock_free(l1);
    rl_client_free(c);
    trio_stop(&t);
}

/* Review finding (stop 17): an ask of the sentinels that began before a
 * loss lowered the "ask again" flag when it ended, though its answer was
 * older than the loss. Here the sentinels answer 1.5 s late; an ask is
 * under way (answers: the old primary) when the sentinels switch to the new
 * one and the old primary comes back empty at its address. The next call
 * must wait for an ask made after the loss and go to the new primary; it
 * took the stale answer, connected to the empty node, and failed RL_ECONN. */
static void test_sentinel_stale_ask_does_not_clear_a_newer_loss(void **state)
{
    sn_trio t;
    rl_options o;
    rl_client *c;
    rl_lock *l0, *l1;
    int k, q0 = 0, rc;

    (void)state;
    trio_start(&t);
    it_options(&o, t.url, 10000, 4000);
    c = it_client_opts(&o);
    l0 = it_lock(c, "rv-gen0");
    l1 = it_lock(c, "rv-gen1");
    IT_RC(rl_lock_try_acquire(l0, 0, 5000), RL_OK);
    IT_EQ(count_in(t.oc, "rv-gen0"), 1);
    IT_RC(rl_lock_release(l0), RL_OK);
    /* Let every sentinel link settle: the +switch-master below must reach it. */
    IT_WAIT(atomic_load(&t.fs[0]->subscribers) >= 1, 5000);

    for (k = 0; k < 3; k++) {
        atomic_store(&t.fs[k]->delay_ms, 1500);
        q0 += atomic_load(&t.fs[k]->queries);
    }
    /* An ask begins (a +switch-master that still names the old primary). */
    atomic_fetch_add(&t.fs[0]->publish, 1);
    fs_poke(t.fs[0]);
    IT_WAIT(atomic_load(&t.fs[0]->queries) + atomic_load(&t.fs[1]->queries) +
                    atomic_load(&t.fs[2]->queries) > q0, 3000);
    /* Meanwhile: a failover, and the old primary back empty. */
    trio_fail_over(&t);

    rc = rl_lock_try_acquire(l1, 0, 5000);
    if (count_in(t.oc, "rv-gen1") != 0)
        fail_msg("the lock went to the empty old primary");
    if (rc != RL_OK)
        fail_msg("one try after the loss: %s (%s); an ask begun before the loss must not "
                 "stand for one after it", rl_strerror(rc), rl_last_error());
    IT_EQ(count_in(t.cc, "rv-gen1"), 1);
    IT_RC(rl_lock_release(l1), RL_OK);
    for (k = 0; k < 3; k++)
        atomic_store(&t.fs[k]->delay_ms, 0);
    rl_lock_free(l0);
    rl_lock_free(l1);
    rl_client_free(c);
    trio_stop(&t);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_redlock_stopped_node_without_idle_conn_delays_fanout),
        cmocka_unit_test(test_replicas_lost_reply_read_back_skips_wait),
        cmocka_unit_test(test_replicas_wait_refused_is_not_an_outage),
        cmocka_unit_test(test_sentinel_silent_sentinel_flags_healthy_hold),
        cmocka_unit_test(test_sentinel_first_answer_names_old_primary),
        cmocka_unit_test(test_sentinel_new_conn_after_loss_not_checked),
        cmocka_unit_test(test_sentinel_stale_ask_does_not_clear_a_newer_loss),
    };

    signal(SIGPIPE, SIG_IGN);
    if (argc == 2)
        cmocka_set_test_filter(argv[1]); /* tests by name: scripts/rates.sh */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
