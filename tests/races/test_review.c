/*
 * Regression tests for the findings of the adversarial review of the race
 * fixes. Each one fails on the library before the review's fixes (the
 * sanitizer named in its comment, where one is needed) and passes after.
 *
 * Like test_races.c these run against rlock_hooked, and follow the same
 * rules: nothing sleeps to synchronise (every wait is a condition with a
 * deadline, or a point in time that the scenario itself calls for); threads
 * other than the main one record what they saw and the main thread
 * asserts; child processes report through their exit code.
 *
 * Not covered: Review 6 (force-release read its reply, which lies in the
 * connection's buffer, after giving the connection back to the pool). The
 * window is a few instructions wide and has no hook point; only a stress
 * loop could hit it, never deterministically.
 *
 * Run one test alone with a cmocka filter as the first argument, e.g.
 * `it_review 'test_fork*'`.
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "proxy.h"
#include "races_common.h"
#include "rt_tls.h"
#include "rt_util.h"

/* LeakSanitizer (part of AddressSanitizer) can be asked for a leak check
 * in the middle of the program. */
#if defined(__SANITIZE_ADDRESS__)
#define REVIEW_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REVIEW_UNDER_ASAN 1
#endif
#endif
#ifndef REVIEW_UNDER_ASAN
#define REVIEW_UNDER_ASAN 0
#endif
#if REVIEW_UNDER_ASAN
#include <sanitizer/lsan_interface.h>
#endif

/* ---- helpers ----------------------------------------------------------- */

/* A numeric field ("name:value") of an INFO section; -1 when absent. */
static long long info_field(redisContext *rc, const char *section, const char *name)
{
    redisReply *r = redisCommand(rc, "INFO %s", section);
    long long v = -1;
    size_t nl = strlen(name);
    const char *p;

    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        for (p = r->str; p != NULL && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
            if (strncmp(p, name, nl) == 0 && p[nl] == ':') {
                /* "name:N", or "name:count=N" (errorstats) */
                p += nl + 1;
                if (strncmp(p, "count=", 6) == 0)
                    p += 6;
                v = strtoll(p, NULL, 10);
                break;
            }
        }
    }
    if (r != NULL)
        freeReplyObject(r);
    return v;
}

/* Every key of rlock's default prefix, as "key (PTTL n)" into buf; returns
 * how many there are (-1 on error). */
static int rl_keys(redisContext *rc, char *buf, size_t cap)
{
    /* Lock keys only: a live client's owner record (rl:owner:{..}) is not
     * an acquisition. */
    redisReply *r = redisCommand(rc, "KEYS rl:{*");
    size_t i, used = 0;
    int n = -1;

    buf[0] = '\0';
    if (r != NULL && r->type == REDIS_REPLY_ARRAY) {
        n = (int)r->elements;
        for (i = 0; i < r->elements; i++) {
            const redisReply *k = r->element[i];
            long long pttl = rt_redis_pttl(rc, k->str, k->len);
            int w = snprintf(buf + used, cap - used, "%s%.*s (PTTL %lld)", i ? ", " : "",
                             (int)k->len, k->str, pttl);
            if (w < 0 || (size_t)w >= cap - used)
                break;
            used += (size_t)w;
        }
    }
    if (r != NULL)
        freeReplyObject(r);
    return n;
}

/* ======================================================================== */

/* Review 1: rl_client_shutdown(c) on one thread overlapping
 * rl_client_free(c) on another. Whichever of the two does the shutdown, the
 * other waits for it; the free then drops the last reference. The shutdown
 * must not touch the client once the free may have freed it (before, ASan:
 * heap-use-after-free in rl__log from rl_client_shutdown, which set `shut`
 * and then still closed the idle connections and logged). The pool is filled first
 * so that the shutdown has idle connections to close, and each client
 * holds one lock so that the shutdown has holds to release. */

#define OV_ROUNDS 50
#define OV_POOL 16
#define OV_FILLERS 16

struct ov {
    rl_client *c;
    pthread_barrier_t start;
    atomic_int s_state, f_state;   /* 1 started; 2 returned */
    int s_rc;
};

static void *ov_shutdown_main(void *arg)
{
    struct ov *x = arg;

    pthread_barrier_wait(&x->start);
    atomic_store(&x->s_state, 1);
    x->s_rc = rl_client_shutdown(x->c);
    atomic_store(&x->s_state, 2);
    return NULL;
}

static void *ov_free_main(void *arg)
{
    struct ov *x = arg;

    pthread_barrier_wait(&x->start);
    atomic_store(&x->f_state, 1);
    rl_client_free(x->c);
    atomic_store(&x->f_state, 2);
    return NULL;
}

struct ov_filler {
    rl_lock *l;
    pthread_barrier_t *start;
    atomic_int done;
    int bad_rc;
};

/* Many calls at once: each one in flight takes its own pooled connection. */
static void *ov_filler_main(void *arg)
{
    struct ov_filler *f = arg;
    int i, rc;

    pthread_barrier_wait(f->start);
    for (i = 0; i < 4; i++) {
        rc = rl_lock_is_locked(f->l);
        if (rc != 1 && f->bad_rc == 0)
            f->bad_rc = rc == 0 ? 100 : rc;
    }
    atomic_store(&f->done, 1);
    return NULL;
}

static void test_shutdown_overlapping_free(void **state)
{
    it_env *e = *state;
    struct ov *x = xcalloc(sizeof *x);
    struct ov_filler *fill = xcalloc(OV_FILLERS * sizeof *fill);
    pthread_barrier_t fill_start;
    pthread_t tf[OV_FILLERS], ts, tfree;
    rl_options o;
    rl_lock *lh, *lk;
    char key[64];
    size_t kl = it_key(key, sizeof key, "rl:", "ov", 2, NULL);
    long long conns, min_conns = -1, base_conns = info_field(e->rc, "clients",
                                                               "connected_clients");
    int round, i, shut_ok = 0, js, jf;

    it_options(&o, e->redis->url, 0, 0);
    o.pool_size = OV_POOL;
    for (round = 0; round < OV_ROUNDS; round++) {
        x->c = it_client_opts(&o);
        lh = it_lock(x->c, "ov");
        lk = it_lock(x->c, "ov");
        IT_RC(rl_lock_try_acquire(lh, 0, RL_LEASE_WATCHDOG), RL_OK);

        assert_int_equal(pthread_barrier_init(&fill_start, NULL, OV_FILLERS), 0);
        for (i = 0; i < OV_FILLERS; i++) {
            memset(&fill[i], 0, sizeof fill[i]);
            fill[i].l = lk;
            fill[i].start = &fill_start;
            tf[i] = spawn(ov_filler_main, &fill[i]);
        }
        for (i = 0; i < OV_FILLERS; i++)
            assert_int_equal(join_at(tf[i], &fill[i].done, 1, 10000), 0);
        pthread_barrier_destroy(&fill_start);
        for (i = 0; i < OV_FILLERS; i++)
            if (fill[i].bad_rc != 0)
                fail_msg("round %d: is_locked of a held lock gave %d (%s)", round,
                         fill[i].bad_rc, rl_strerror(fill[i].bad_rc));
        conns = info_field(e->rc, "clients", "connected_clients") - base_conns;
        if (min_conns < 0 || conns < min_conns)
            min_conns = conns;
        /* Only the application's reference is left: the free drops the last. */
        rl_lock_free(lk);
        rl_lock_free(lh);

        atomic_store(&x->s_state, 0);
        atomic_store(&x->f_state, 0);
        x->s_rc = -999;
        assert_int_equal(pthread_barrier_init(&x->start, NULL, 2), 0);
        ts = spawn(ov_shutdown_main, x);
        tfree = spawn(ov_free_main, x);
        js = join_at(ts, &x->s_state, 2, 10000);
        jf = join_at(tfree, &x->f_state, 2, 10000);
        if (js != 0 || jf != 0)
            fail_msg("round %d: shutdown (%d) or free (%d) still running after 10 s", round,
                     js, jf);
        pthread_barrier_destroy(&x->start);
        /* Started after the free was over: a client freed already. */
        if (x->s_rc != RL_OK && x->s_rc != RL_EINVAL)
            fail_msg("round %d: rl_client_shutdown = %d (%s)", round, x->s_rc,
                     rl_strerror(x->s_rc));
        shut_ok += x->s_rc == RL_OK;
        /* The hold was released in Redis, and its loss is told once. */
        IT_EQ(rt_redis_exists(e->rc, key, kl), 0);
        IT_EQ(rl_interrupted(), 1);
        IT_EQ(rl_interrupted(), 0);
    }
    print_message("%d rounds; the shutdown returned RL_OK in %d; at least %lld pooled "
                  "connections per client\n", OV_ROUNDS, shut_ok, min_conns);
    free(fill);
    free(x);
}

/* ======================================================================== */

/* Review 2: the count of calls in flight in a fork child. The child's
 * rebuild (done inside its first call) reset the count to 0 while that
 * call was counted, so the call left it at -1; a later shutdown in the
 * child then saw "no call in flight" while one was, and returned at once.
 * That acquisition completed afterwards and its field stayed in Redis for
 * the whole (10 min) lease. Redis is paused (SIGSTOP) from the child to
 * keep the acquisition in flight. */

struct fc {
    rl_lock *l;
    pid_t redis_pid;
    atomic_int x_state;   /* 1 calling; 2 returned */
    int x_rc;
    int64_t x_call_ms;
    races_call shut;      /* the shutdown of shut.c, the client */
};

/* Exit code bits of the child. */
#define FC_SETUP 0x01      /* the first call or a thread could not start */
#define FC_EARLY 0x02      /* the shutdown returned while the acquisition was in flight */
#define FC_STUCK 0x04      /* threads did not finish once Redis answered again */
#define FC_GRANTED 0x08    /* the acquisition completing during the shutdown got RL_OK */

static void *fc_acquire_main(void *arg)
{
    struct fc *x = arg;

    x->x_call_ms = rt_now_ms();
    atomic_store(&x->x_state, 1);
    x->x_rc = rl_lock_try_acquire(x->l, 0, 600000);
    atomic_store(&x->x_state, 2);
    return NULL;
}

static int fc_child(void *arg)
{
    struct fc *x = arg;
    pthread_t tx, ts;
    int code = 0, early;

    /* The first call in the child: the client is rebuilt inside it. */
    if (rl_lock_is_locked(x->l) != 0)
        return FC_SETUP;
    if (kill(x->redis_pid, SIGSTOP) != 0)
        return FC_SETUP;
    if (pthread_create(&tx, NULL, fc_acquire_main, x) != 0) {
        kill(x->redis_pid, SIGCONT);
        return FC_SETUP;
    }
    RT_WAIT_UNTIL(atomic_load(&x->x_state) >= 1, 5000);
    /* Give it time to be inside the call, blocked on the paused Redis. */
    wait_until_ms(x->x_call_ms + 100);
    if (pthread_create(&ts, NULL, races_shutdown_main, &x->shut) != 0) {
        kill(x->redis_pid, SIGCONT);
        return FC_SETUP;
    }
    /* The shutdown must wait for the acquisition, which cannot finish. */
    early = RT_WAIT_UNTIL(atomic_load(&x->shut.state) == 2, 300);
    if (early)
        code |= FC_EARLY;
    kill(x->redis_pid, SIGCONT);
    if (!RT_WAIT_UNTIL(atomic_load(&x->x_state) == 2 && atomic_load(&x->shut.state) == 2,
                       10000))
        return code | FC_STUCK;
    pthread_join(tx, NULL);
    pthread_join(ts, NULL);
    if (x->x_rc == RL_OK)
        code |= FC_GRANTED;
    rl_lock_free(x->l);
    rl_client_free(x->shut.c);
    return code;
}

static void test_fork_child_shutdown_waits_for_call(void **state)
{
    it_env *e = *state;
    struct fc *x;
    rl_options o;
    rl_client *c;
    char keys[512];
    pid_t pid;
    int code, n;

    RACES_SKIP_FORK_UNDER_TSAN();
    x = xcalloc(sizeof *x);
    /* Long command timeout: the acquisition stays in flight while Redis
     * is paused. */
    it_options(&o, e->redis->url, 0, 5000);
    c = x->shut.c = it_client_opts(&o);
    x->l = it_lock(c, "fc");
    x->redis_pid = e->redis->pid;
    pid = rt_child_start(fc_child, x, 20);
    assert_true(pid > 0);
    code = rt_child_wait(pid, 25000);
    kill(e->redis->pid, SIGCONT);   /* whatever the child did */
    n = rl_keys(e->rc, keys, sizeof keys);
    print_message("child exit code %d; rlock keys left: %d %s\n", code, n, keys);
    if (code < 0 || code >= 128 || (code & (FC_SETUP | FC_STUCK)))
        fail_msg("the child failed: exit code %d (128+n: killed by signal n; 1: setup; "
                 "4: threads stuck)", code);
    if (n != 0)
        fail_msg("after the child's shutdown its acquisition is still in Redis: %s "
                 "(child exit code %d)", keys, code);
    if (code & FC_EARLY)
        fail_msg("the child's rl_client_shutdown returned while an acquisition was in "
                 "flight");
    if (code & FC_GRANTED)
        fail_msg("the acquisition that completed during the child's shutdown returned "
                 "RL_OK (expected RL_ECANCELED)");
    IT_EQ(code, 0);
    rl_lock_free(x->l);
    rl_client_free(c);
    free(x);
}

/* ======================================================================== */

/* Review 3: fork() while another thread of the parent is inside
 * rl_client_shutdown (here: waiting for a call in flight on a paused
 * Redis). No thread of the child is shutting the client down; its
 * rl_client_free must not wait for that shutdown forever. */

struct fs_waiter {
    rl_lock *l;
    atomic_int state;   /* 1 calling; 2 returned */
    int rc;
};

static void *fs_waiter_main(void *arg)
{
    struct fs_waiter *w = arg;

    atomic_store(&w->state, 1);
    w->rc = rl_lock_try_acquire(w->l, RL_WAIT_FOREVER, RL_LEASE_WATCHDOG);
    atomic_store(&w->state, 2);
    return NULL;
}

struct fs {
    rl_lock *lx;
    struct fs_waiter w;
    races_call call;   /* is_locked of a lock of shut.c, in flight */
    races_call shut;   /* the shutdown of shut.c, the client */
};

/* In the child: the client is being shut down by a thread that does not
 * exist here. Any status will do; returning will. */
static int fs_child(void *arg)
{
    struct fs *x = arg;
    int rc = rl_lock_try_acquire(x->lx, 0, RL_LEASE_WATCHDOG);

    if (rc == RL_OK)
        rl_lock_release(x->lx);
    rl_client_free(x->shut.c);
    return 0;
}

static void test_fork_during_shutdown(void **state)
{
    it_env *e = *state;
    struct fs *x;
    rl_options o;
    rl_client *c;
    rl_lock *lh;
    pthread_t tw, ti, ts;
    pid_t pid;
    int code, s_at_fork, i_at_fork, jw, ji, js;
    verdict v = { "" };

    RACES_SKIP_FORK_UNDER_TSAN();
    x = xcalloc(sizeof *x);
    it_options(&o, e->redis->url, 0, 5000);
    c = x->shut.c = it_client_opts(&o);
    lh = it_lock(c, "fs");
    x->w.l = it_lock(c, "fs");
    x->call.l = it_lock(c, "fs-other");
    x->lx = it_lock(c, "fs-child");
    /* A waiter queued behind this thread's hold: it returns as soon as the
     * shutdown has begun, which tells the test so. */
    IT_RC(rl_lock_try_acquire(lh, 0, RL_LEASE_WATCHDOG), RL_OK);
    tw = spawn(fs_waiter_main, &x->w);
    IT_WAIT(atomic_load(&x->w.state) >= 1, 5000);
    /* A thread of this process holds the name, so the waiter queues
     * locally (nothing to see in Redis): give it a moment to get there. */
    wait_until_ms(rt_now_ms() + 200);
    V_CHECK(&v, atomic_load(&x->w.state) == 1, "the waiter returned early: %d (%s)",
            x->w.rc, rl_strerror(x->w.rc));

    /* A call in flight that cannot finish: the shutdown waits for it. */
    assert_int_equal(rt_redis_pause(e->redis), 0);
    ti = spawn(races_is_locked_main, &x->call);
    IT_WAIT(atomic_load(&x->call.state) >= 1, 5000);
    wait_until_ms(x->call.call_ms + 100);
    ts = spawn(races_shutdown_main, &x->shut);
    V_CHECK(&v, RT_WAIT_UNTIL(atomic_load(&x->w.state) == 2, 5000),
            "the waiter was not cancelled within 5 s of rl_client_shutdown");
    s_at_fork = atomic_load(&x->shut.state);
    i_at_fork = atomic_load(&x->call.state);

    pid = rt_child_start(fs_child, x, 5);
    code = pid > 0 ? rt_child_wait(pid, 8000) : -2;

    assert_int_equal(rt_redis_resume(e->redis), 0);
    ji = join_at(ti, &x->call.state, 2, 10000);
    js = join_at(ts, &x->shut.state, 2, 10000);
    jw = join_at(tw, &x->w.state, 2, 10000);
    if (ji != 0 || js != 0 || jw != 0)
        fail_msg("threads left blocked (call %d, shutdown %d, waiter %d); first failure: %s",
                 ji, js, jw, v.msg[0] ? v.msg : "(none)");
    /* The fork did happen while the shutdown was under way. */
    V_CHECK(&v, s_at_fork == 1 && i_at_fork == 1,
            "at the fork the shutdown (state %d) or the call in flight (state %d) was "
            "already over: the scenario did not happen", s_at_fork, i_at_fork);
    V_CHECK(&v, code == 0,
            "the child forked during a shutdown exited with %d (-1: still running after "
            "8 s; 142: SIGALRM after 5 s, i.e. rl_client_free hung)", code);
    V_CHECK(&v, x->w.rc == RL_ECANCELED, "the waiter returned %d (%s), expected RL_ECANCELED",
            x->w.rc, rl_strerror(x->w.rc));
    V_CHECK(&v, x->shut.rc == RL_OK, "rl_client_shutdown = %d (%s)", x->shut.rc,
            rl_strerror(x->shut.rc));
    /* This thread's hold was let go by the shutdown: told once. */
    V_CHECK(&v, rl_interrupted() == 1, "the holder was not told of the shutdown");
    rl_lock_free(lh);
    rl_lock_free(x->w.l);
    rl_lock_free(x->call.l);
    rl_lock_free(x->lx);
    rl_client_free(c);
    free(x);
    V_DONE(&v);
}

/* ======================================================================== */

/* Review 4: a force-release whose reply is lost. The delete may have run
 * (here it did: the proxy forwards the command and drops the reply), so
 * every hold of the name in this process must be flagged at once, not at
 * its next renewal (never, for a fixed lease). */

struct fl_holder {
    rl_lock *l;
    atomic_int stage;     /* 1: holds; 2: may look; 3: done */
    int rc, lock_int, any_int, release_rc;
};

static void *fl_holder_main(void *arg)
{
    struct fl_holder *h = arg;

    h->rc = rl_lock_try_acquire(h->l, 0, 60000);
    atomic_store(&h->stage, 1);
    RT_WAIT_UNTIL(atomic_load(&h->stage) == 2, 20000);
    h->lock_int = rl_lock_interrupted(h->l);
    h->any_int = rl_interrupted();
    h->release_rc = h->rc == RL_OK ? rl_lock_release(h->l) : RL_OK;
    atomic_store(&h->stage, 3);
    return NULL;
}

static void test_force_release_lost_reply_flags_holders(void **state)
{
    it_env *e = *state;
    struct fl_holder *h = xcalloc(sizeof *h);
    it_proxied p;
    pthread_t th;
    int rc;

    /* A 30 s watchdog lease, 500 ms per reply; the holder takes a fixed
     * 60 s lease, which no renewal ever checks. */
    it_proxied_open(&p, e, "fl", 30000, 500);
    h->l = it_lock(p.c, "fl");
    th = spawn(fl_holder_main, h);
    IT_WAIT(atomic_load(&h->stage) == 1, 10000);
    IT_RC(h->rc, RL_OK);
    IT_EQ(rt_redis_exists(e->rc, p.key, p.kl), 1);

    rt_proxy_drop_next_reply_matching(p.proxy, "EVAL");
    rc = rl_lock_force_release(p.l);
    /* The delete reached Redis; its reply did not come back (the proxy
     * counts the drop just after it cut the connection). */
    IT_WAIT(rt_proxy_dropped(p.proxy) == 1, 2000);
    IT_EQ(rt_redis_exists(e->rc, p.key, p.kl), 0);
    atomic_store(&h->stage, 2);
    assert_int_equal(join_at(th, &h->stage, 3, 10000), 0);
    if (rc == RL_OK)
        fail_msg("rl_lock_force_release returned RL_OK although its reply was lost");
    print_message("force-release with a lost reply: %d (%s): %s\n", rc, rl_strerror(rc),
                  rl_last_error());
    IT_EQ(h->lock_int, 1);
    IT_EQ(h->any_int, 1);
    IT_RC(h->release_rc, RL_ELOST);
    rl_lock_free(h->l);
    it_proxied_close(&p);
    free(h);
}

/* ======================================================================== */

/* Review 5: renew_interval_ms has the same bound as every other time.
 * LONG_MAX - 1000 overflowed the "renewal fits in the lease" check (which
 * then passed) and the watchdog's arithmetic (it busy-looped). */
static void test_renew_interval_bounded(void **state)
{
    it_env *e = *state;
    const long bad[] = { LONG_MAX, LONG_MAX - 1000, RL_TIME_MAX_MS + 1L };
    const long lease[] = { 0, RL_TIME_MAX_MS };
    rl_options o;
    rl_client *c;
    size_t i, j;
    int rc;

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        for (j = 0; j < sizeof lease / sizeof lease[0]; j++) {
            it_options(&o, e->redis->url, lease[j], 0);
            o.renew_interval_ms = bad[i];
            c = NULL;
            rc = rl_client_new(&c, &o);
            if (rc == RL_OK)
                rl_client_free(c);
            if (rc != RL_EINVAL)
                fail_msg("rl_client_new(renew_interval_ms %ld, lease_ms %ld) = %d (%s), "
                         "expected RL_EINVAL", bad[i], lease[j], rc, rl_strerror(rc));
            /* The message names the field. */
            if (strstr(rl_last_error(), "renew_interval_ms") == NULL)
                fail_msg("renew_interval_ms %ld refused with \"%s\"", bad[i],
                         rl_last_error());
        }
    }
    /* The largest allowed value is accepted with a lease that fits it. */
    it_options(&o, e->redis->url, RL_TIME_MAX_MS, 0);
    o.renew_interval_ms = RL_TIME_MAX_MS / 2;
    c = it_client_opts(&o);
    rl_client_free(c);
}

/* ======================================================================== */

/* Review 7: a renewal round that gets NOSCRIPT on its second pass too (the
 * scripts were flushed again between the watchdog's reload and its retry)
 * renewed nothing: it is a failed round, retried soon, not a round whose
 * (never written) results confirm or drop holds. There is no hook between
 * the reload and the retry, so the test floods Redis with SCRIPT FLUSH from
 * another connection while one round runs, and tries again until a round
 * got NOSCRIPT twice (INFO errorstats). */

struct ns {
    hook_arm arm;
    int port;
    atomic_int go, flooding, stop, done, fired;
    long flushes;
};

static void *ns_flood_main(void *arg)
{
    struct ns *x = arg;
    redisContext *rc = redisConnect("127.0.0.1", x->port);
    redisReply *r;
    int64_t end;

    RT_WAIT_UNTIL(atomic_load(&x->go) != 0 || atomic_load(&x->stop) != 0, 20000);
    /* Long enough to cover one round, short of its retry (renew / 4). */
    end = rt_now_ms() + 25;
    while (rc != NULL && !rc->err && !atomic_load(&x->stop) && rt_now_ms() < end) {
        r = redisCommand(rc, "SCRIPT FLUSH");
        if (r != NULL)
            freeReplyObject(r);
        x->flushes++;
        atomic_store(&x->flooding, 1);
    }
    if (rc != NULL)
        redisFree(rc);
    atomic_store(&x->flooding, 1);
    atomic_store(&x->done, 1);
    return NULL;
}

/* On the watchdog thread, before the round sends anything. */
static void ns_hook(void *arg)
{
    struct ns *x = arg;

    atomic_store(&x->fired, 1);
    atomic_store(&x->go, 1);
    RT_WAIT_UNTIL(atomic_load(&x->flooding) != 0, 2000);
}

struct nslog {
    atomic_int noscript_twice;
};

static void ns_log(int level, const char *message, void *payload)
{
    struct nslog *cap = payload;

    if (level <= RL_LOG_WARN && strstr(message, "NOSCRIPT twice") != NULL)
        atomic_fetch_add(&cap->noscript_twice, 1);
}

static void test_renewal_noscript_twice_is_a_failure(void **state)
{
    it_env *e = *state;
    struct nslog *cap = xcalloc(sizeof *cap);
    struct ns *x = NULL;
    rl_options o;
    rl_client *c;
    rl_lock *l;
    pthread_t th;
    char key[64];
    size_t kl = it_key(key, sizeof key, "rl:", "ns", 2, NULL);
    long long before, got = 0;
    int attempt, hit = -1, renewed, lock_int, any_int;

    /* Lease 900: renewed every 300 ms, a failed round retried after 75. */
    it_options(&o, e->redis->url, 900, 0);
    o.log = ns_log;
    o.payload = cap;
    c = it_client_opts(&o);
    l = it_lock(c, "ns");
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    for (attempt = 0; attempt < 20 && hit < 0; attempt++) {
        x = xcalloc(sizeof *x);
        x->port = e->redis->port;
        th = spawn(ns_flood_main, x);
        before = info_field(e->rc, "errorstats", "errorstat_NOSCRIPT");
        before = before < 0 ? 0 : before;
        arm(&x->arm, "watchdog.before_renew", ns_hook, x);
        if (!RT_WAIT_UNTIL(atomic_load(&x->fired) != 0, 3000)) {
            disarm();
            atomic_store(&x->stop, 1);
            join_at(th, &x->done, 1, 5000);
            fail_msg("no renewal round within 3 s");
        }
        assert_int_equal(join_at(th, &x->done, 1, 5000), 0);
        got = info_field(e->rc, "errorstats", "errorstat_NOSCRIPT") - before;
        free(x);
        if (got >= 2) {
            hit = attempt;
            break;
        }
        /* A clean round before the next attempt. */
        if (!wait_renewed(e->rc, key, kl, 3000))
            fail_msg("attempt %d (%lld NOSCRIPT): no renewal within 3 s after it", attempt,
                     got);
    }
    print_message("NOSCRIPT twice in one round at attempt %d (%lld NOSCRIPT errors)\n",
                  hit, got);
    if (hit < 0)
        fail_msg("could not make one renewal round get NOSCRIPT twice in 20 attempts");
    /* The failed round is retried (renew / 4 later) and renews the lease. */
    renewed = wait_renewed(e->rc, key, kl, 3000);
    lock_int = rl_lock_interrupted(l);
    any_int = rl_interrupted();
    if (lock_int != 0 || any_int != 0 || !renewed)
        fail_msg("after a round with NOSCRIPT twice: rl_lock_interrupted %d, rl_interrupted "
                 "%d, renewed again: %s (the round's unwritten results were used)",
                 lock_int, any_int, renewed ? "yes" : "no");
    /* The watchdog said the round failed. */
    if (atomic_load(&cap->noscript_twice) < 1)
        fail_msg("no log of a renewal failed with NOSCRIPT twice");
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);
    free(cap);
}

/* ======================================================================== */

/* Review 9: the hold of a thread that ended. Whichever comes last, the end
 * of the thread or the shutdown of the client, frees the hold's record:
 * (a) the thread ends while holding, then the client is freed; (b) the
 * client is freed while the thread holds, then the thread ends without
 * another rlock call. Before, both leaked the record (LeakSanitizer). */

struct te {
    rl_lock *l;
    atomic_int stage;   /* 1: holds; 2: may end; 3: ending */
    int rc;
};

static void *te_main(void *arg)
{
    struct te *t = arg;

    t->rc = rl_lock_try_acquire(t->l, 0, RL_LEASE_WATCHDOG);
    atomic_store(&t->stage, 1);
    RT_WAIT_UNTIL(atomic_load(&t->stage) == 2, 20000);
    atomic_store(&t->stage, 3);
    return NULL;
}

static void test_thread_exit_hold_freed(void **state)
{
    it_env *e = *state;
    struct te *t = xcalloc(sizeof *t);
    rl_options o;
    rl_client *c;
    pthread_t th;
    char key[64];
    size_t kl = it_key(key, sizeof key, "rl:", "te", 2, NULL);
    int order;

    it_options(&o, e->redis->url, 0, 0);
    for (order = 0; order < 2; order++) {
        c = it_client_opts(&o);
        t->l = it_lock(c, "te");
        atomic_store(&t->stage, 0);
        th = spawn(te_main, t);
        IT_WAIT(atomic_load(&t->stage) == 1, 10000);
        IT_RC(t->rc, RL_OK);
        IT_EQ(rt_redis_exists(e->rc, key, kl), 1);
        if (order == 0) {
            /* (a) The thread ends first, still holding. */
            atomic_store(&t->stage, 2);
            assert_int_equal(join_at(th, &t->stage, 3, 10000), 0);
            rl_lock_free(t->l);
            rl_client_free(c);
        } else {
            /* (b) The client goes first; the thread then just ends. */
            rl_lock_free(t->l);
            rl_client_free(c);
            atomic_store(&t->stage, 2);
            assert_int_equal(join_at(th, &t->stage, 3, 10000), 0);
        }
        /* Released in Redis by the shutdown either way. */
        IT_EQ(rt_redis_exists(e->rc, key, kl), 0);
    }
#if REVIEW_UNDER_ASAN
    /* Nonzero when something allocated is no longer referenced: the two
     * holds' records, before. */
    if (__lsan_do_recoverable_leak_check() != 0)
        fail_msg("LeakSanitizer found leaks (report above): the hold of a thread that "
                 "ended was not freed");
#else
    print_message("not built with AddressSanitizer: the leak itself is not checked\n");
#endif
    free(t);
}

/* ======================================================================== */

/* Review 10: the subscriber out of subscribed mode. When the last lingering
 * subscription ends after a second of quiet, UNSUBSCRIBE and the
 * keep-alive PING leave together; Redis answers the PING, with no channel
 * left, as +PONG (not a ["pong", ""] array). That answer must count: the
 * subscriber must not call the connection lost one command timeout later. */

struct logcap {
    atomic_int lost;
    char first[256];
    atomic_int have_first;
};

static void capture_log(int level, const char *message, void *payload)
{
    struct logcap *cap = payload;
    int no = 0;

    if (level <= RL_LOG_WARN && strstr(message, "connection lost") != NULL) {
        atomic_fetch_add(&cap->lost, 1);
        if (atomic_compare_exchange_strong(&cap->have_first, &no, 1))
            snprintf(cap->first, sizeof cap->first, "%s", message);
    }
}

/* Whether a connection's last command was a PING that Redis ran out of
 * subscribed mode (no channel left): 1, 0, or -1 on error. */
static int pinged_unsubscribed(redisContext *rc)
{
    redisReply *r = redisCommand(rc, "CLIENT LIST");
    const char *line, *end;
    int found = -1;

    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        found = 0;
        for (line = r->str; *line && !found; line = *end ? end + 1 : end) {
            char buf[1024];
            end = strchr(line, '\n');
            if (end == NULL)
                end = line + strlen(line);
            snprintf(buf, sizeof buf, " %.*s ", (int)(end - line), line);
            found = strstr(buf, " cmd=ping ") != NULL && strstr(buf, " sub=0 ") != NULL &&
                    strstr(buf, " psub=0 ") != NULL;
        }
    }
    if (r != NULL)
        freeReplyObject(r);
    return found;
}

static void test_subscriber_accepts_plain_pong(void **state)
{
    it_env *e = *state;
    struct logcap *cap = xcalloc(sizeof *cap);
    rl_client *c2 = it_client(e, 0), *c;
    rl_lock *l2 = it_lock(c2, "pong"), *l;
    rl_options o;
    char chan[64];
    size_t cl = it_key(chan, sizeof chan, "rl:", "pong", 4, ":release");
    long long pings0, pings1;
    int64_t t_call, t_unsub;
    int rc, warned, plain;

    /* Lease 900: renewed, and a subscription kept, 300 ms; replies given
     * 300 ms (so a PING unanswered for 300 ms means the connection is lost). */
    it_options(&o, e->redis->url, 900, 300);
    o.log = capture_log;
    o.payload = cap;
    c = it_client_opts(&o);
    l = it_lock(c, "pong");
    IT_RC(rl_lock_try_acquire(l2, 0, RL_LEASE_WATCHDOG), RL_OK);
    pings0 = rt_redis_cmdstat_calls(e->rc, "ping");

    /* Subscribe, wait 500 ms (no notice comes), give up. The linger ends
     * ~800 ms after the subscription; the subscriber's next wake-up, one
     * second after its last read, sends UNSUBSCRIBE and PING together. */
    t_call = rt_now_ms();
    rc = rl_lock_try_acquire(l, 500, RL_LEASE_WATCHDOG);
    IT_RC(rc, RL_ETIMEDOUT);
    IT_WAIT(rt_redis_numsub(e->rc, chan, cl) == 0, 3000);
    t_unsub = rt_now_ms();
    /* Wait for the PING's answer to be read, plus two command timeouts. */
    IT_WAIT(rt_redis_cmdstat_calls(e->rc, "ping") > pings0, 3000);
    pings1 = rt_redis_cmdstat_calls(e->rc, "ping");
    plain = pinged_unsubscribed(e->rc);
    warned = RT_WAIT_UNTIL(atomic_load(&cap->lost) != 0, 1000);
    print_message("unsubscribed %lld ms after the wait began; %lld PING(s)\n",
                  (long long)(t_unsub - t_call), pings1 - pings0);
    /* The PING went after the UNSUBSCRIBE, so it was answered +PONG. */
    if (plain != 1)
        fail_msg("the scenario did not happen: no connection's last command was a PING run "
                 "with no channel subscribed (%d)", plain);
    if (warned)
        fail_msg("the subscriber called its connection lost after a +PONG: \"%s\"",
                 cap->first);
    IT_RC(rl_lock_release(l2), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);
    rl_lock_free(l2);
    rl_client_free(c2);
    free(cap);
}

/* ======================================================================== */

/* CI finding: the last release of a lost hold leaves its field to be
 * dropped; when the watchdog claimed that drop first, the thread's next
 * try-lock (wait 0) failed with RL_ECONN "an earlier change of this thread
 * is being cleaned up" instead of waiting out one round trip. The hooks
 * make the watchdog win that race and hold it inside the drop. */
struct drop_race {
    atomic_int claimed;     /* 1: the watchdog holds the claimed drop */
    atomic_int go;          /* 1: the release has returned */
};

static void drop_hold_watchdog(void *arg)
{
    struct drop_race *d = arg;

    atomic_store(&d->claimed, 1);
    /* The drop stays in flight until the release has returned. */
    RT_WAIT_UNTIL(atomic_load(&d->go) == 1, 3000);
}

static void drop_let_watchdog_claim(void *arg)
{
    struct drop_race *d = arg;

    RT_WAIT_UNTIL(atomic_load(&d->claimed) == 1, 5000);
}

static void test_try_after_lost_release_waits_for_drop(void **state)
{
    it_env *e = *state;
    struct drop_race *d = xcalloc(sizeof *d);
    hook_arm rel, wd;
    rl_client *c = it_client(e, 600), *op_c = it_client(e, 0);
    rl_lock *l = it_lock(c, "dr"), *op = it_lock(op_c, "dr");
    char key[32];
    size_t kl = it_key(key, sizeof key, "rl:", "dr", 2, NULL);

    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_force_release(op), RL_OK);
    IT_WAIT(rl_lock_interrupted(l) == 1, 5000);

    arm(&rel, "release.before_drop", drop_let_watchdog_claim, d);
    arm_second(&wd, "keeper.before_drop", drop_hold_watchdog, d);
    IT_RC(rl_lock_release(l), RL_ELOST);
    atomic_store(&d->go, 1);
    if (atomic_load(&d->claimed) != 1)
        fail_msg("the scenario did not happen: the keeper never claimed the drop");
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);
    rl_lock_free(op);
    rl_lock_free(l);
    rl_client_free(op_c);
    rl_client_free(c);
    free(d);
}

/* A leftover's drop that waits on its node (one that stopped; here the
 * drop is held in the hook for two leases) must not hold up the renewal
 * of the thread's other hold: the drop ran on the watchdog's thread, now
 * on the keeper's (issue 21, item 4). */
static void test_stuck_drop_holds_up_no_renewal(void **state)
{
    it_env *e = *state;
    struct drop_race *d = xcalloc(sizeof *d);
    hook_arm rel, kp;
    rl_client *c = it_client(e, 600), *op_c = it_client(e, 0);
    rl_lock *l = it_lock(c, "sd"), *keep = it_lock(c, "sk"), *op = it_lock(op_c, "sd");
    int flagged;

    IT_RC(rl_lock_try_acquire(keep, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_force_release(op), RL_OK);
    IT_WAIT(rl_lock_interrupted(l) == 1, 5000);

    arm(&rel, "release.before_drop", drop_let_watchdog_claim, d);
    arm_second(&kp, "keeper.before_drop", drop_hold_watchdog, d);
    IT_RC(rl_lock_release(l), RL_ELOST);
    if (atomic_load(&d->claimed) != 1)
        fail_msg("the scenario did not happen: the keeper never claimed the drop");
    /* Two leases with the drop stuck. */
    flagged = RT_WAIT_UNTIL(rl_lock_interrupted(keep) == 1, 1200);
    atomic_store(&d->go, 1);
    IT_EQ(flagged, 0);
    IT_RC(rl_lock_release(keep), RL_OK);
    rl_lock_free(op);
    rl_lock_free(keep);
    rl_lock_free(l);
    rl_client_free(op_c);
    rl_client_free(c);
    free(d);
}

/* ======================================================================== */

/* fork() while a thread of the library is inside OpenSSL: the child would
 * hang for ever on any OpenSSL lock that thread held (openssl#19066; a
 * fork child of test_tls_review hung so in CI). fork() must wait until
 * the thread is out of OpenSSL. The hook holds a thread inside (after an
 * SSL_read or SSL_write) for TG_HOLD_MS while the test forks. */

#define TG_HOLD_MS 400

struct tg {
    atomic_int inside;      /* 1 in the hook; 2 left it */
    int64_t left_ms;
};

static void tg_hold(void *arg)
{
    struct tg *x = arg;

    atomic_store(&x->inside, 1);
    wait_until_ms(rt_now_ms() + TG_HOLD_MS);
    x->left_ms = rt_now_ms();
    atomic_store(&x->inside, 2);
}

static int tg_child(void *arg)
{
    (void)arg;
    return 0;
}

static void test_fork_waits_for_openssl_calls(void **state)
{
    rt_tls *certs = rt_tls_make();
    struct tg x;
    char args[2048], url[128];
    rt_redis *r = NULL;
    rl_options o;
    rl_client *c;
    races_call call;
    hook_arm a;
    pthread_t th;
    int port, seen;
    pid_t pid;

    (void)state;
    RACES_SKIP_FORK_UNDER_TSAN();
    assert_non_null(certs);
    port = rt_free_port();
    assert_true(port > 0);
    rt_tls_server_args(certs, port, NULL, NULL, 0, args, sizeof args);
    if (!(r = rt_redis_start(args)))
        fail_msg("cannot start a TLS redis-server");
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", port);
    it_options(&o, url, 0, 0);
    o.tls_ca_file = certs->ca;
    c = it_client_opts(&o);
    memset(&call, 0, sizeof call);
    call.l = it_lock(c, "tg");
    IT_RC(rl_lock_is_locked(call.l), 0);       /* connected: TLS up */
    memset(&x, 0, sizeof x);
    arm(&a, "tls.inside", tg_hold, &x);
    th = spawn(races_is_locked_main, &call);
    IT_WAIT(atomic_load(&x.inside) >= 1, 5000);
    pid = rt_child_start(tg_child, NULL, 10);
    seen = atomic_load(&x.inside);              /* fork() has returned */
    assert_true(pid > 0);
    IT_EQ(rt_child_wait(pid, 10000), 0);
    IT_EQ(join_at(th, &call.state, 2, 5000), 0);
    print_message("fork() returned %s the thread left OpenSSL\n",
                  seen == 2 ? "after" : "BEFORE");
    IT_EQ(seen, 2);
    IT_EQ(call.rc, 0);
    rl_lock_free(call.l);
    rl_client_free(c);
    rt_redis_stop(r);
    rt_tls_free(certs);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_shutdown_overlapping_free, races_setup,
                                        races_teardown),
        cmocka_unit_test_setup_teardown(test_fork_child_shutdown_waits_for_call,
                                        races_setup, races_teardown),
        cmocka_unit_test_setup_teardown(test_fork_during_shutdown, races_setup,
                                        races_teardown),
        cmocka_unit_test_setup_teardown(test_force_release_lost_reply_flags_holders,
                                        races_setup, races_teardown),
        cmocka_unit_test_setup_teardown(test_renew_interval_bounded, races_setup,
                                        races_teardown),
        cmocka_unit_test_setup_teardown(test_renewal_noscript_twice_is_a_failure,
                                        races_setup, races_teardown),
        cmocka_unit_test_setup_teardown(test_thread_exit_hold_freed, races_setup,
                                        races_teardown),
        cmocka_unit_test_setup_teardown(test_subscriber_accepts_plain_pong, races_setup,
                                        races_teardown),
        cmocka_unit_test_setup_teardown(test_try_after_lost_release_waits_for_drop,
                                        races_setup, races_teardown),
        cmocka_unit_test_setup_teardown(test_fork_waits_for_openssl_calls, races_setup,
                                        races_teardown),
        cmocka_unit_test_setup_teardown(test_stuck_drop_holds_up_no_renewal, races_setup,
                                        races_teardown),
    };

    races_hooks_install();
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
