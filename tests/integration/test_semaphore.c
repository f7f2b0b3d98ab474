/*
 * The semaphore (RL_KIND_SEMAPHORE, src/semaphore.c): never more than N
 * permits held across threads and clients, k permits a hold, reentry,
 * another N and k > N refused, waiting woken by a release and bounded by
 * its deadline, a SIGKILLed and a SIGSTOPped holder's permits back within
 * their lease, lost replies, fork, Redlock refused, Sentinel and Cluster;
 * fencing tokens per permit (slots never shared by live holds, each
 * slot's token rising, a stopped holder's late write refused, lost
 * replies read back). Each single-server test starts its own redis-server.
 */
#include "it_cluster.h"
#include "it_common.h"
#include "proxy.h"
#include "rt_sentinel.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#define LEASE_MS 1000           /* the clients' watchdog lease in most tests */

static rl_lock *sem(rl_client *c, const char *name, unsigned permits)
{
    rl_lock *l = NULL;

    IT_RC(rl_semaphore_new(&l, c, name, strlen(name), permits), RL_OK);
    return l;
}

/* Free the handles, then the clients (a NULL ends each list). */
#define FREE_ALL(...) free_all((void *[]){ __VA_ARGS__, NULL })
static void free_all(void *const *p)
{
    size_t i = 0;

    for (; p[i]; i++)
        rl_lock_free(p[i]);
    for (i++; p[i]; i++)
        rl_client_free(p[i]);
}

/* What rl:{name} holds: the permits of its holds whose deadline is still
 * to come (Redis's clock; none: the key's expiry), each 1 unless its "~k:"
 * says more, or -1 on error; *holds their number. */
static long long permits_held(redisContext *rc, const char *name, long long *holds)
{
    redisReply *t = redisCommand(rc, "TIME");
    redisReply *r = redisCommand(rc, "HGETALL rl:{%s}", name);
    long long now, sum = 0, n = 0, k;
    size_t i, j;

    if (!t || t->type != REDIS_REPLY_ARRAY || !r || r->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(t);
        freeReplyObject(r);
        return -1;
    }
    now = atoll(t->element[0]->str) * 1000 + atoll(t->element[1]->str) / 1000;
    for (i = 0; i + 1 < r->elements; i += 2) {
        const char *f = r->element[i]->str;
        if (f[0] == '~')
            continue;
        for (j = 0; j + 1 < r->elements; j += 2) {
            const char *g = r->element[j]->str;
            if (strncmp(g, "~d:", 3) == 0 && strcmp(g + 3, f) == 0 &&
                atoll(r->element[j + 1]->str) <= now)
                break;
        }
        if (j + 1 < r->elements)
            continue;   /* past its deadline: gone */
        for (j = 0, k = 1; j + 1 < r->elements; j += 2) {
            const char *g = r->element[j]->str;
            if (strncmp(g, "~k:", 3) == 0 && strcmp(g + 3, f) == 0)
                k = atoll(r->element[j + 1]->str);
        }
        sum += k;
        n++;
    }
    if (holds)
        *holds = n;
    freeReplyObject(t);
    freeReplyObject(r);
    return sum;
}

static long long key_exists(redisContext *rc, const char *name)
{
    redisReply *r = redisCommand(rc, "EXISTS rl:{%s}", name);
    long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

    freeReplyObject(r);
    return n;
}

/* ---- never more than N --------------------------------------------------- */

#define HAMMER_THREADS 4        /* per client */
#define HAMMER_ROUNDS 40

typedef struct hammer {
    rl_lock *l;
    atomic_int *inside, *most, *done;
    int failures;
} hammer;

static void *hammer_run(void *arg)
{
    hammer *h = arg;
    struct timespec hold = { 0, 2 * 1000 * 1000 };  /* the work done holding */
    int i, now, most, rc;

    for (i = 0; i < HAMMER_ROUNDS; i++) {
        if ((rc = rl_lock_try_acquire(h->l, 10000, RL_LEASE_WATCHDOG)) != RL_OK) {
            h->failures++;
            continue;
        }
        now = atomic_fetch_add(h->inside, 1) + 1;
        most = atomic_load(h->most);
        while (now > most && !atomic_compare_exchange_weak(h->most, &most, now))
            ;
        nanosleep(&hold, NULL);
        atomic_fetch_sub(h->inside, 1);
        if (rl_lock_release(h->l) != RL_OK)
            h->failures++;
    }
    atomic_fetch_add(h->done, 1);
    return NULL;
}

/* Threads of two clients hammer a 3-permit name: never more than 3 inside
 * (an atomic count of holders, and the live permits in Redis sampled
 * meanwhile), and more than one at a time (it is not a lock). */
static void test_never_more_than_n(void **state)
{
    it_env *e = *state;
    rl_client *c[2] = { it_client(e, LEASE_MS), it_client(e, LEASE_MS) };
    rl_lock *l[2] = { sem(c[0], "ham", 3), sem(c[1], "ham", 3) };
    atomic_int inside = 0, most = 0, done = 0;
    hammer h[2 * HAMMER_THREADS];
    pthread_t th[2 * HAMMER_THREADS];
    long long p, redis_most = 0;
    int i, failures = 0;

    for (i = 0; i < 2 * HAMMER_THREADS; i++) {
        h[i] = (hammer){ l[i % 2], &inside, &most, &done, 0 };
        assert_int_equal(pthread_create(&th[i], NULL, hammer_run, &h[i]), 0);
    }
    /* Sample Redis while they run, until every thread is done. */
    while (atomic_load(&done) < 2 * HAMMER_THREADS) {
        p = permits_held(e->rc, "ham", NULL);
        if (p > redis_most)
            redis_most = p;
    }
    for (i = 0; i < 2 * HAMMER_THREADS; i++) {
        pthread_join(th[i], NULL);
        failures += h[i].failures;
    }
    IT_EQ(failures, 0);
    IT_RANGE(atomic_load(&most), 2, 3);
    IT_RANGE(redis_most, 1, 3);
    IT_EQ(key_exists(e->rc, "ham"), 0);
    {
        rl_stats st = it_stats(c[0]);
        IT_EQ(st.acquisitions, HAMMER_THREADS * HAMMER_ROUNDS);
        IT_EQ(st.releases, HAMMER_THREADS * HAMMER_ROUNDS);
        IT_EQ(st.holds, 0);
    }
    FREE_ALL(l[0], l[1], NULL, c[0], c[1]);
}

/* ---- k permits, reentry, bad input ------------------------------------- */

/* On a thread of its own: take one permit through the handle and give it
 * back; the try's status, or 100 + the release's. */
static int one_permit_beside(void *arg)
{
    int rc = rl_lock_try_acquire(arg, 0, RL_LEASE_WATCHDOG);

    if (rc != RL_OK)
        return rc;
    rc = rl_lock_release(arg);
    return rc == RL_OK ? RL_OK : 100 + rc;
}

static void test_k_permits_and_reentry(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, LEASE_MS), *b = it_client(e, LEASE_MS);
    rl_client *d = it_client(e, LEASE_MS);
    rl_lock *la = sem(a, "k", 3), *lb = sem(b, "k", 3), *ld = sem(d, "k", 3), *x = NULL;
    rl_stats st;

    IT_RC(rl_semaphore_acquire(la, 2, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(permits_held(e->rc, "k", NULL), 2);
    /* Another thread of the same client is not kept out by this one. */
    IT_RC(it_on_thread(one_permit_beside, la, 5000), RL_OK);
    IT_RC(rl_semaphore_acquire(lb, 2, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(rl_lock_try_acquire(lb, 0, RL_LEASE_WATCHDOG), RL_OK);          /* 1 permit */
    IT_RC(rl_semaphore_acquire(ld, 1, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    /* k > N, k 0, a lock's handle: refused at once, nothing asked. */
    IT_RC(rl_semaphore_acquire(ld, 4, RL_WAIT_FOREVER, RL_LEASE_WATCHDOG), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "1..3"));
    IT_RC(rl_semaphore_acquire(ld, 0, 0, RL_LEASE_WATCHDOG), RL_EINVAL);
    IT_RC(rl_semaphore_acquire(NULL, 1, 0, RL_LEASE_WATCHDOG), RL_EINVAL);
    x = it_lock(d, "plain");
    IT_RC(rl_semaphore_acquire(x, 1, 0, RL_LEASE_WATCHDOG), RL_EINVAL);
    rl_lock_free(x);
    x = NULL;
    /* Reentry: one more level, no more permits; another k refused. */
    IT_RC(rl_semaphore_acquire(la, 2, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rl_lock_hold_count(la), 2);
    IT_EQ(permits_held(e->rc, "k", NULL), 3);
    IT_RC(rl_semaphore_acquire(la, 1, 0, RL_LEASE_WATCHDOG), RL_EINVAL);
    IT_RC(rl_lock_try_acquire(la, 0, RL_LEASE_WATCHDOG), RL_EINVAL);
    IT_EQ(rl_lock_hold_count(la), 2);
    IT_RC(rl_lock_release(la), RL_OK);
    IT_RC(rl_semaphore_acquire(ld, 1, 0, RL_LEASE_WATCHDOG), RL_EBUSY);   /* still 2 */
    IT_RC(rl_lock_release(la), RL_OK);                                    /* gives 2 */
    IT_EQ(permits_held(e->rc, "k", NULL), 1);
    IT_RC(rl_semaphore_acquire(ld, 2, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(la), RL_ENOTOWNER);
    IT_RC(rl_lock_release(ld), RL_OK);
    IT_RC(rl_lock_release(lb), RL_OK);
    IT_EQ(key_exists(e->rc, "k"), 0);
    st = it_stats(a);
    IT_EQ(st.acquisitions, 2);
    IT_EQ(st.reentries, 1);
    IT_EQ(st.releases, 3);
    st = it_stats(d);
    IT_EQ(st.busy, 2);
    /* Kinds and counts that a semaphore's handle refuses. */
    IT_RC(rl_semaphore_new(&x, a, "k", 1, 0), RL_EINVAL);
    IT_RC(rl_lock_new_kind(&x, a, "k", 1, RL_KIND_SEMAPHORE), RL_EINVAL);
    IT_RC(rl_lock_new_kind(&x, a, "k", 1, RL_KIND_PLAIN), RL_EINVAL);     /* open as a semaphore */
    assert_null(x);
    FREE_ALL(la, lb, ld, NULL, a, b, d);
}

/* Another N: refused with both counts named, nothing changed; in one
 * client at once, in another at acquisition; a free name takes the new one. */
static void test_permit_count_mismatch(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, LEASE_MS), *b = it_client(e, LEASE_MS);
    rl_lock *l3 = sem(a, "n", 3), *l4 = sem(b, "n", 4), *x = NULL;

    IT_RC(rl_semaphore_new(&x, a, "n", 1, 4), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "3 permits, not 4"));
    assert_null(x);
    IT_RC(rl_lock_try_acquire(l3, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(l4, RL_WAIT_FOREVER, RL_LEASE_WATCHDOG), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "has 3 permits in Redis, not 4"));
    IT_EQ(permits_held(e->rc, "n", NULL), 1);
    IT_EQ(rl_lock_hold_count(l4), 0);
    IT_RC(rl_lock_release(l3), RL_OK);
    IT_RC(rl_semaphore_acquire(l4, 4, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(l3, 0, RL_LEASE_WATCHDOG), RL_EINVAL);
    IT_RC(rl_lock_release(l4), RL_OK);
    FREE_ALL(l3, l4, NULL, a, b);
}

/* A force-release frees every permit; the holder of another client is
 * flagged by its next renewal, and its release says RL_ELOST. */
static void test_force_release(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, 300), *d = it_client(e, 300);
    rl_lock *la = sem(a, "f", 3), *ld = sem(d, "f", 3);

    IT_RC(rl_semaphore_acquire(la, 2, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rl_lock_is_locked(ld), 1);
    IT_RC(rl_lock_force_release(ld), RL_OK);
    IT_EQ(key_exists(e->rc, "f"), 0);
    IT_RC(rl_semaphore_acquire(ld, 3, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_WAIT(rl_lock_interrupted(la) == 1, 2000);
    IT_RC(rl_lock_release(la), RL_ELOST);
    IT_EQ(permits_held(e->rc, "f", NULL), 3);
    IT_RC(rl_lock_release(ld), RL_OK);
    IT_EQ(rl_lock_is_locked(ld), 0);
    FREE_ALL(la, ld, NULL, a, d);
}

/* ---- waiting ------------------------------------------------------------- */

/* A waiter is woken by the release, long before the holder's lease; a
 * wait's deadline holds; wait_ms 0 is RL_EBUSY. */
static void test_wake_and_deadline(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, LEASE_MS), *b = it_client(e, LEASE_MS);
    rl_lock *la = sem(a, "w", 2), *lb = sem(b, "w", 2);
    int64_t t0;
    it_acq w;

    IT_RC(rl_semaphore_acquire(la, 2, 0, 5000), RL_OK);                   /* a fixed 5 s */
    t0 = rt_now_ms();
    IT_RC(rl_lock_try_acquire(lb, 300, RL_LEASE_WATCHDOG), RL_ETIMEDOUT);
    IT_RANGE(rt_now_ms() - t0, 300, 600);
    IT_RC(rl_lock_try_acquire(lb, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    it_acq_begin(&w, lb, 10000, 1);
    IT_WAIT(it_stats(b).waiters == 1 && rt_redis_numsub(e->rc, "rl:{w}:release", 14) >= 1,
            5000);
    t0 = rt_now_ms();
    IT_RC(rl_lock_release(la), RL_OK);
    IT_WAIT(atomic_load(&w.state) >= 2, 5000);
    IT_RC(w.rc, RL_OK);
    IT_RANGE(w.t_return_us / 1000 - t0, -5, 500);
    it_acq_let_go(&w);
    assert_int_equal(it_acq_join(&w, 5000), 0);
    IT_RC(w.release_rc, RL_OK);
    IT_EQ(it_stats(b).waits, 1);
    FREE_ALL(la, lb, NULL, a, b);
}

/* Start a thread that takes one permit with a fixed lease (no renewals:
 * the script calls are counted) and holds it until let go. */
static void fixed_holder(it_acq *a, rl_lock *l, long wait_ms)
{
    memset(a, 0, sizeof *a);
    a->lock = l;
    a->wait_ms = wait_ms;
    a->lease_ms = 10000;
    a->hold = 1;
    it_acq_start(a);
}

#define EVALSHA_SINCE(e, base) (rt_redis_cmdstat_calls((e)->rc, "evalsha") - (base))

/* No herd in a process: three threads of one client wait for a name whose
 * 3 permits three threads of another hold. Each release of one permit
 * costs three script calls (the release, the waiter it lets in, the next
 * waiter's try, which finds none left and sleeps), whatever the number
 * waiting: only the head of the local queue asks Redis. */
static void test_no_herd(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, LEASE_MS), *w = it_client(e, LEASE_MS);
    rl_lock *la = sem(a, "herd", 3), *lw = sem(w, "herd", 3);
    it_acq held[3], waiting[3];
    long long base = rt_redis_cmdstat_calls(e->rc, "evalsha");
    int i, in;

    assert_true(base >= 0);
    for (i = 0; i < 3; i++) {
        fixed_holder(&held[i], la, 0);
        IT_WAIT(atomic_load(&held[i].state) >= 2, 5000);
        IT_RC(held[i].rc, RL_OK);
    }
    for (i = 0; i < 3; i++)
        fixed_holder(&waiting[i], lw, 10000);
    /* The head tried, subscribed and tried again; the others wait behind. */
    IT_WAIT(it_stats(w).waiters == 3 && EVALSHA_SINCE(e, base) == 3 + 2, 5000);
    for (i = 0; i < 3; i++) {
        base = rt_redis_cmdstat_calls(e->rc, "evalsha");
        it_acq_let_go(&held[i]);
        assert_int_equal(it_acq_join(&held[i], 5000), 0);
        IT_RC(held[i].release_rc, RL_OK);
        IT_WAIT(it_stats(w).waiters == (unsigned long long)(2 - i), 5000);
        /* The last one in leaves nobody behind to ask. */
        IT_WAIT(EVALSHA_SINCE(e, base) >= (i < 2 ? 3 : 2), 5000);
        IT_EQ(EVALSHA_SINCE(e, base), i < 2 ? 3 : 2);
    }
    for (i = 0, in = 0; i < 3; i++)
        in += atomic_load(&waiting[i].state) >= 2 && waiting[i].rc == RL_OK;
    IT_EQ(in, 3);
    base = rt_redis_cmdstat_calls(e->rc, "evalsha");
    for (i = 0; i < 3; i++) {
        it_acq_let_go(&waiting[i]);
        assert_int_equal(it_acq_join(&waiting[i], 5000), 0);
        IT_RC(waiting[i].release_rc, RL_OK);
    }
    IT_EQ(EVALSHA_SINCE(e, base), 3);
    IT_EQ(key_exists(e->rc, "herd"), 0);
    FREE_ALL(la, lw, NULL, a, w);
}

/* ---- holders that die or stop -------------------------------------------- */

/* "--child hold URL NAME": take 2 of the 3 permits of NAME (lease LEASE_MS,
 * renewed), then wait to be flagged (stopped and let go on) and release:
 * 0 when the hold was flagged and its release said RL_ELOST. Killed, it
 * never returns. */
static int child_hold(const char *url, const char *name)
{
    struct timespec step = { 0, 10 * 1000 * 1000 };
    rl_options o;
    rl_client *c = NULL;
    rl_lock *l = NULL;
    int i;

    it_options(&o, url, LEASE_MS, 0);
    if (rl_client_new(&c, &o) != RL_OK || rl_semaphore_new(&l, c, name, strlen(name), 3) ||
        rl_semaphore_acquire(l, 2, 5000, RL_LEASE_WATCHDOG) != RL_OK)
        return 10;
    for (i = 0; i < 3000 && !rl_lock_interrupted(l); i++)
        nanosleep(&step, NULL);
    if (!rl_interrupted())
        return 11;
    if (rl_lock_release(l) != RL_ELOST)
        return 12;
    rl_lock_free(l);
    rl_client_free(c);
    return 0;
}

/* A holder process of 2 of 3 permits is SIGKILLed while a live holder
 * of the third keeps the key alive (renewed): the 2 come back by their own
 * deadline, within the dead holder's lease (not before two thirds of it:
 * renewed every third), with no one else acting but the waiter. */
static void test_killed_holder(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, LEASE_MS), *d = it_client(e, LEASE_MS);
    rl_lock *l = sem(c, "dead", 3), *live = sem(d, "dead", 3);
    char *argv[] = { "it_semaphore", "--child", "hold", e->redis->url, "dead", NULL };
    long long holds = 0;
    int64_t killed;
    pid_t pid;

    pid = rt_spawn_self(argv, NULL, 0, 60);
    assert_true(pid > 0);
    IT_WAIT(permits_held(e->rc, "dead", &holds) == 2, 10000);
    IT_RC(rl_lock_try_acquire(live, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    assert_int_equal(kill(pid, SIGKILL), 0);
    IT_EQ(rt_child_wait(pid, 5000), 128 + SIGKILL);
    killed = rt_now_ms();
    IT_RC(rl_semaphore_acquire(l, 2, 5000, RL_LEASE_WATCHDOG), RL_OK);
    IT_RANGE(rt_now_ms() - killed, LEASE_MS / 2, LEASE_MS + 500);
    IT_EQ(permits_held(e->rc, "dead", &holds), 3);
    IT_EQ(holds, 2);                  /* the dead hold was dropped */
    IT_EQ(rl_lock_interrupted(live), 0);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_RC(rl_lock_release(live), RL_OK);
    IT_EQ(key_exists(e->rc, "dead"), 0);
    FREE_ALL(l, live, NULL, c, d);
}

/* A holder process of 2 of 3 permits SIGSTOPped, a live holder of the
 * third beside it: the 2 come back within its lease; let go on, it finds
 * its hold flagged and its release says RL_ELOST (and leaves the new
 * holder's permits alone). */
static void test_stopped_holder(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, LEASE_MS), *d = it_client(e, LEASE_MS);
    rl_lock *l = sem(c, "stop", 3), *live = sem(d, "stop", 3);
    char *argv[] = { "it_semaphore", "--child", "hold", e->redis->url, "stop", NULL };
    int64_t stopped;
    pid_t pid;

    pid = rt_spawn_self(argv, NULL, 0, 60);
    assert_true(pid > 0);
    IT_WAIT(permits_held(e->rc, "stop", NULL) == 2, 10000);
    IT_RC(rl_lock_try_acquire(live, 0, RL_LEASE_WATCHDOG), RL_OK);
    assert_int_equal(kill(pid, SIGSTOP), 0);
    stopped = rt_now_ms();
    IT_RC(rl_semaphore_acquire(l, 2, 5000, RL_LEASE_WATCHDOG), RL_OK);
    IT_RANGE(rt_now_ms() - stopped, LEASE_MS / 2, LEASE_MS + 500);
    assert_int_equal(kill(pid, SIGCONT), 0);
    IT_EQ(rt_child_wait(pid, 10000), 0);
    IT_EQ(permits_held(e->rc, "stop", NULL), 3);
    IT_EQ(rl_lock_interrupted(l), 0);
    IT_EQ(rl_lock_interrupted(live), 0);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_RC(rl_lock_release(live), RL_OK);
    IT_EQ(key_exists(e->rc, "stop"), 0);
    FREE_ALL(l, live, NULL, c, d);
}

/* ---- lost replies, fork --------------------------------------------------- */

/* Every change's reply lost: resolved by reading the hold's field back,
 * never counted twice, the permits as they should be. */
static void test_lost_replies(void **state)
{
    it_env *e = *state;
    it_proxied p;
    rl_lock *l;
    long long holds = 0;

    it_proxied_open(&p, e, "unused", 0, 500);
    l = sem(p.c, "lost", 3);
    rt_proxy_drop_next_reply_matching(p.proxy, "EVALSHA");
    IT_RC(rl_semaphore_acquire(l, 2, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rt_proxy_dropped(p.proxy), 1);
    IT_EQ(permits_held(e->rc, "lost", &holds), 2);
    IT_EQ(holds, 1);
    rt_proxy_drop_next_reply_matching(p.proxy, "EVALSHA");
    IT_RC(rl_semaphore_acquire(l, 2, 0, RL_LEASE_WATCHDOG), RL_OK);       /* reentry */
    IT_EQ(rl_lock_hold_count(l), 2);
    rt_proxy_drop_next_reply_matching(p.proxy, "EVALSHA");
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(rl_lock_hold_count(l), 1);
    IT_EQ(permits_held(e->rc, "lost", NULL), 2);
    IT_EQ(rl_lock_interrupted(l), 0);
    rt_proxy_drop_next_reply_matching(p.proxy, "EVALSHA");
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(rt_proxy_dropped(p.proxy), 4);
    IT_EQ(key_exists(e->rc, "lost"), 0);
    rl_lock_free(l);
    it_proxied_close(&p);
}

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

/* In the fork child of a process holding 2 of 3 permits: a new owner that
 * holds none, takes the one left and not two. Codes name the check. */
static int forked_child(rl_lock *l, rl_client *c)
{
    if (rl_lock_hold_count(l) != 0)
        return 40;
    if (rl_lock_release(l) != RL_ENOTOWNER)
        return 41;
    if (rl_semaphore_acquire(l, 2, 0, RL_LEASE_WATCHDOG) != RL_EBUSY)
        return 42;
    if (rl_semaphore_acquire(l, 1, 0, RL_LEASE_WATCHDOG) != RL_OK)
        return 43;
    if (rl_lock_release(l) != RL_OK)
        return 44;
    rl_lock_free(l);
    rl_client_free(c);
    return 0;
}

static void test_fork(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, LEASE_MS);
    rl_lock *l = sem(c, "fk", 3);
    pid_t pid;

#ifdef UNDER_TSAN
    print_message("fork() tests are not supported by ThreadSanitizer: skipped\n");
    skip();
#endif
    IT_RC(rl_semaphore_acquire(l, 2, 0, RL_LEASE_WATCHDOG), RL_OK);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(forked_child(l, c));
    IT_EQ(rt_child_wait(pid, 20000), 0);
    IT_EQ(permits_held(e->rc, "fk", NULL), 2);
    IT_EQ(rl_lock_hold_count(l), 1);
    IT_EQ(rl_lock_interrupted(l), 0);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(key_exists(e->rc, "fk"), 0);
    FREE_ALL(l, NULL, c);
}

/* ---- fencing tokens per permit ------------------------------------------- */

/* A client with fencing on `url` (lease as given). */
static rl_client *fenced_client(const char *url, long lease_ms)
{
    rl_options o;

    it_options(&o, url, lease_ms, 0);
    o.fencing = 1;
    return it_client_opts(&o);
}

/* The calling thread's token and slots of l: 0 on success. */
static int hold_fence(rl_lock *l, unsigned long long *tok, unsigned *slots, unsigned *n)
{
    if (rl_lock_token(tok, l) != RL_OK || rl_semaphore_slots(l, slots, 16, n) != RL_OK)
        return -1;
    return 0;
}

/* The value of rl:{name}'s field of the hold whose token is tok, as
 * "<token> <slots>" (the value's last two words) into out; 0 when found. */
static int redis_fence(redisContext *rc, const char *name, unsigned long long tok, char *out,
                       size_t cap)
{
    redisReply *r = redisCommand(rc, "HGETALL rl:{%s}", name);
    unsigned long long t;
    int found = -1;
    size_t i;

    for (i = 0; r && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
        char slots[40];
        if (r->element[i]->str[0] == '~' ||
            sscanf(r->element[i + 1]->str, "%*d %*d %llu %39s", &t, slots) != 2 || t != tok)
            continue;
        snprintf(out, cap, "%llu %s", t, slots);
        found = 0;
    }
    freeReplyObject(r);
    return found;
}

/* Shared by the threads of test_fenced_slots: who occupies each of the 3
 * slots now (0: nobody), and the last token each slot was taken with. */
typedef struct {
    pthread_mutex_t mu;
    rl_lock *l[2];
    int occupied[3];
    unsigned long long last[3];
    atomic_int failed;          /* the first broken check: a code */
    atomic_int rounds;
} fslots;

static void fslots_fail(fslots *s, int code)
{
    int none = 0;

    atomic_compare_exchange_strong(&s->failed, &none, code);
}

/* One round: take k permits, check and occupy their slots, give them back. */
static void fslots_round(fslots *s, rl_lock *l, unsigned k, int me)
{
    unsigned long long tok;
    unsigned slots[16], n = 0, i;

    if (rl_semaphore_acquire(l, k, 10000, RL_LEASE_WATCHDOG) != RL_OK) {
        fslots_fail(s, 1);
        return;
    }
    if (hold_fence(l, &tok, slots, &n) != 0 || n != k)
        fslots_fail(s, 2);
    pthread_mutex_lock(&s->mu);
    for (i = 0; i < n; i++) {
        if (slots[i] >= 3 || s->occupied[slots[i]])
            fslots_fail(s, 3);          /* a slot of a live hold given twice */
        else if (tok <= s->last[slots[i]])
            fslots_fail(s, 4);          /* a slot's token did not rise */
        else {
            s->occupied[slots[i]] = me;
            s->last[slots[i]] = tok;
        }
    }
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_lock(&s->mu);
    for (i = 0; i < n; i++)
        if (slots[i] < 3 && s->occupied[slots[i]] == me)
            s->occupied[slots[i]] = 0;
    pthread_mutex_unlock(&s->mu);
    if (rl_lock_release(l) != RL_OK)
        fslots_fail(s, 5);
    atomic_fetch_add(&s->rounds, 1);
}

typedef struct {
    fslots *s;
    int me;
} fslots_arg;

static void *fslots_run(void *arg)
{
    fslots_arg *a = arg;
    int i;

    for (i = 0; i < 40 && !atomic_load(&a->s->failed); i++)
        fslots_round(a->s, a->s->l[a->me % 2], 1 + (unsigned)((i + a->me) % 2), a->me);
    return NULL;
}

/*
 * Threads of two fenced clients on a 3-permit name, each taking 1 or 2
 * permits by turns: the slots of live holds never overlap (counted
 * locally, a slot cleared before its hold is released), and each slot's
 * token rises from holder to holder. Then one thread's tokens rise across
 * a release and an expiry, and Redis's value of the hold says its token
 * and slots.
 */
static void test_fenced_slots(void **state)
{
    it_env *e = *state;
    rl_client *c = fenced_client(e->redis->url, LEASE_MS);
    rl_client *d = fenced_client(e->redis->url, LEASE_MS);
    fslots s;
    fslots_arg a[4];
    pthread_t th[4];
    unsigned long long t1, t2, t3;
    unsigned slots[16], n;
    char want[80], got[80];
    int i;

    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    s.l[0] = sem(c, "fs", 3);
    s.l[1] = sem(d, "fs", 3);
    for (i = 0; i < 4; i++) {
        a[i].s = &s;
        a[i].me = i + 1;
        assert_int_equal(pthread_create(&th[i], NULL, fslots_run, &a[i]), 0);
    }
    for (i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    IT_EQ(atomic_load(&s.failed), 0);
    IT_EQ(atomic_load(&s.rounds), 160);
    /* Across a release, an expiry (a fixed lease run out), a reentry. */
    IT_RC(rl_semaphore_acquire(s.l[0], 2, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(hold_fence(s.l[0], &t1, slots, &n), 0);
    IT_EQ(n, 2);
    snprintf(want, sizeof want, "%llu %u,%u", t1, slots[0], slots[1]);
    IT_EQ(redis_fence(e->rc, "fs", t1, got, sizeof got), 0);
    assert_string_equal(got, want);
    IT_RC(rl_semaphore_acquire(s.l[0], 2, 0, RL_LEASE_WATCHDOG), RL_OK);   /* reentry */
    IT_EQ(hold_fence(s.l[0], &t2, slots, &n), 0);
    IT_EQ(t2, t1);
    IT_RC(rl_lock_release(s.l[0]), RL_OK);
    IT_RC(rl_lock_release(s.l[0]), RL_OK);
    IT_RC(rl_semaphore_acquire(s.l[1], 3, 0, 200), RL_OK);
    IT_EQ(hold_fence(s.l[1], &t2, slots, &n), 0);
    IT_EQ(t2 > t1, 1);
    IT_EQ(n, 3);
    IT_RC(rl_semaphore_acquire(s.l[0], 1, 2000, RL_LEASE_WATCHDOG), RL_OK); /* after expiry */
    IT_EQ(hold_fence(s.l[0], &t3, slots, &n), 0);
    IT_EQ(t3 > t2, 1);
    IT_EQ(slots[0], 0);
    IT_RC(rl_lock_release(s.l[0]), RL_OK);
    IT_RC(rl_lock_release(s.l[1]), RL_ELOST);
    pthread_mutex_destroy(&s.mu);
    FREE_ALL(s.l[0], s.l[1], NULL, c, d);
}

/* The resource of test_fenced_stopped_holder: a hash keeping, per slot,
 * the largest token it accepted (examples/fencing.c, a slot each). */
static const char *const slot_resource =
    "local last = tonumber(redis.call('hget', KEYS[1], 't' .. ARGV[1]) or '0')\n"
    "if tonumber(ARGV[2]) < last then return 0 end\n"
    "redis.call('hset', KEYS[1], 't' .. ARGV[1], ARGV[2], 'v' .. ARGV[1], ARGV[3])\n"
    "return 1\n";

static long long resource_write(redisContext *rc, unsigned slot, unsigned long long tok,
                                const char *value)
{
    redisReply *r = redisCommand(rc, "EVAL %s 1 fres %u %llu %s", slot_resource, slot, tok,
                                 value);
    long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

    freeReplyObject(r);
    return n;
}

/*
 * A child process with fencing takes 1 permit of 2 and says its token and
 * slot ("fc:ready"); stopped, then let go once "fc:go" is set, it writes
 * to the resource with them, late: exit 0 when the resource refused it.
 * Codes name the check.
 */
static int child_fenced(const char *url, int port)
{
    struct timespec step = { 0, 5 * 1000 * 1000 };
    rl_client *c = NULL;
    rl_lock *l = NULL;
    rl_options o;
    redisContext *rc = NULL;
    redisReply *r;
    unsigned long long tok;
    unsigned slot, n;
    int i, go = 0;

    it_options(&o, url, LEASE_MS, 0);
    o.fencing = 1;
    if (rl_client_new(&c, &o) != RL_OK || rl_semaphore_new(&l, c, "fstop", 5, 2) != RL_OK ||
        rl_semaphore_acquire(l, 1, 5000, RL_LEASE_WATCHDOG) != RL_OK ||
        rl_lock_token(&tok, l) != RL_OK || rl_semaphore_slots(l, &slot, 1, &n) != RL_OK)
        return 10;
    if (!(rc = redisConnect("127.0.0.1", port)) || rc->err)
        return 11;
    freeReplyObject(redisCommand(rc, "SET fc:ready %llu:%u", tok, slot));
    for (i = 0; i < 6000 && !go; i++) {
        r = redisCommand(rc, "EXISTS fc:go");
        go = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
        freeReplyObject(r);
        if (!go)
            nanosleep(&step, NULL);
    }
    if (!go)
        return 12;
    if (resource_write(rc, slot, tok, "stale") != 0)
        return 13;                      /* the late write was let in */
    if (rl_lock_release(l) != RL_ELOST)
        return 14;
    redisFree(rc);
    rl_lock_free(l);
    rl_client_free(c);
    return 0;
}

/* The child of test_fenced_stopped_holder while it runs: a failed check
 * leaves it stopped, and the teardown kills it. */
static pid_t fstop_child = -1;

static int fstop_teardown(void **state)
{
    if (fstop_child > 0) {
        kill(fstop_child, SIGKILL);
        rt_child_wait(fstop_child, 5000);
        fstop_child = -1;
    }
    return it_teardown(state);
}

/*
 * A fenced holder of 1 permit of 2 SIGSTOPped past its lease beside a live
 * holder of the other: a new holder gets its slot with a larger token and
 * writes; the stopped one, let go on, writes with its old token and the
 * resource refuses it.
 */
static void test_fenced_stopped_holder(void **state)
{
    it_env *e = *state;
    rl_client *c = fenced_client(e->redis->url, LEASE_MS);
    rl_lock *live = sem(c, "fstop", 2), *next = NULL;
    char port[16];
    char *argv[] = { "it_semaphore", "--child", "fenced", e->redis->url, port, NULL };
    unsigned long long tok, old = 0;
    unsigned slot, oslot = 9, n;
    rl_client *d;
    redisReply *r;
    pid_t pid;

    snprintf(port, sizeof port, "%d", e->redis->port);
    IT_RC(rl_semaphore_acquire(live, 1, 0, RL_LEASE_WATCHDOG), RL_OK);
    pid = fstop_child = rt_spawn_self(argv, NULL, 0, 60);
    assert_true(pid > 0);
    IT_WAIT((r = redisCommand(e->rc, "GET fc:ready")) &&
                (r->type != REDIS_REPLY_STRING ? (freeReplyObject(r), 0)
                 : (sscanf(r->str, "%llu:%u", &old, &oslot), freeReplyObject(r), 1)),
            10000);
    assert_int_equal(kill(pid, SIGSTOP), 0);
    d = fenced_client(e->redis->url, LEASE_MS);
    next = sem(d, "fstop", 2);
    IT_RC(rl_semaphore_acquire(next, 1, 5000, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(hold_fence(next, &tok, &slot, &n), 0);
    IT_EQ(slot, oslot);
    IT_EQ(tok > old, 1);
    IT_EQ(resource_write(e->rc, slot, tok, "fresh"), 1);
    freeReplyObject(redisCommand(e->rc, "SET fc:go 1"));
    assert_int_equal(kill(pid, SIGCONT), 0);
    fstop_child = -1;
    IT_EQ(rt_child_wait(pid, 10000), 0);
    r = redisCommand(e->rc, "HGET fres v%u", slot);
    assert_true(r && r->type == REDIS_REPLY_STRING);
    assert_string_equal(r->str, "fresh");
    freeReplyObject(r);
    IT_RC(rl_lock_release(next), RL_OK);
    IT_RC(rl_lock_release(live), RL_OK);
    FREE_ALL(live, next, NULL, c, d);
}

/* A fenced new hold's reply lost, then a reentry's: the read-back gives the
 * token and the slots Redis holds. */
static void test_fenced_lost_reply(void **state)
{
    it_env *e = *state;
    rl_client *c = fenced_client(e->redis->url, 0), *d;
    rl_lock *first = sem(c, "flost", 3), *l;
    struct rt_proxy *proxy = rt_proxy_start(e->redis->port);
    unsigned long long tok, t2;
    unsigned slots[16], n;
    char want[80], got[80];

    assert_non_null(proxy);
    IT_RC(rl_lock_try_acquire(first, 0, RL_LEASE_WATCHDOG), RL_OK);    /* slot 0 */
    d = fenced_client(rt_proxy_url(proxy), 0);
    l = sem(d, "flost", 3);
    rt_proxy_drop_next_reply_matching(proxy, "EVALSHA");
    IT_RC(rl_semaphore_acquire(l, 2, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rt_proxy_dropped(proxy), 1);
    IT_EQ(hold_fence(l, &tok, slots, &n), 0);
    IT_EQ(n, 2);
    IT_EQ(slots[0], 1);
    IT_EQ(slots[1], 2);
    snprintf(want, sizeof want, "%llu 1,2", tok);
    IT_EQ(redis_fence(e->rc, "flost", tok, got, sizeof got), 0);
    assert_string_equal(got, want);
    rt_proxy_drop_next_reply_matching(proxy, "EVALSHA");
    IT_RC(rl_semaphore_acquire(l, 2, 0, RL_LEASE_WATCHDOG), RL_OK);     /* reentry */
    IT_EQ(rt_proxy_dropped(proxy), 2);
    IT_EQ(hold_fence(l, &t2, slots, &n), 0);
    IT_EQ(t2, tok);
    IT_EQ(n, 2);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_RC(rl_lock_release(first), RL_OK);
    FREE_ALL(first, l, NULL, c, d);
    rt_proxy_stop(proxy);
}

/* rl_semaphore_slots: bad input, not held, no fencing; k past 16. */
static void test_fenced_statuses(void **state)
{
    it_env *e = *state;
    rl_client *c = fenced_client(e->redis->url, 0), *plain = it_client(e, 0);
    rl_lock *l = sem(c, "fbad", 20), *u = sem(plain, "fbad2", 2), *lk = it_lock(c, "fplain");
    unsigned long long tok;
    unsigned slots[2], n = 77;

    IT_RC(rl_semaphore_slots(l, slots, 2, &n), RL_ENOTOWNER);
    IT_RC(rl_semaphore_slots(NULL, slots, 2, &n), RL_EINVAL);
    IT_RC(rl_semaphore_slots(l, slots, 2, NULL), RL_EINVAL);
    IT_RC(rl_semaphore_slots(l, NULL, 2, &n), RL_EINVAL);
    IT_RC(rl_semaphore_slots(lk, slots, 2, &n), RL_EINVAL);
    IT_RC(rl_semaphore_acquire(l, 17, 0, RL_LEASE_WATCHDOG), RL_EINVAL);
    IT_RC(rl_semaphore_acquire(l, 2, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_semaphore_slots(l, slots, 1, &n), RL_EINVAL);
    IT_EQ(n, 2);
    IT_RC(rl_semaphore_slots(l, slots, 2, &n), RL_OK);
    IT_EQ(slots[0] == 0 && slots[1] == 1, 1);
    IT_RC(rl_lock_token(&tok, l), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_RC(rl_semaphore_acquire(u, 1, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_semaphore_slots(u, slots, 2, &n), RL_ENOTSUP);
    IT_RC(rl_lock_release(u), RL_OK);
    rl_lock_free(lk);
    FREE_ALL(l, u, NULL, c, plain);
}

/* ---- modes ---------------------------------------------------------------- */

/* Redlock and lock-delay clients: RL_ENOTSUP (fencing is offered). */
static void test_refused(void **state)
{
    it_env *e = *state;
    rt_redis *more[2] = { rt_redis_start(NULL), rt_redis_start(NULL) };
    rl_options o;
    rl_client *c;
    rl_lock *l = NULL;
    char url[128];

    assert_true(more[0] && more[1]);
    snprintf(url, sizeof url, "redlock://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
             e->redis->port, more[0]->port, more[1]->port);
    it_options(&o, url, 0, 0);
    c = it_client_opts(&o);
    IT_RC(rl_semaphore_new(&l, c, "x", 1, 3), RL_ENOTSUP);
    assert_null(l);
    rl_client_free(c);
    it_options(&o, e->redis->url, 0, 0);
    o.fencing = 1;
    c = it_client_opts(&o);
    IT_RC(rl_semaphore_new(&l, c, "x", 1, 3), RL_OK);
    rl_lock_free(l);
    l = NULL;
    rl_client_free(c);
    it_options(&o, e->redis->url, 0, 0);
    o.lock_delay_ms = 100;
    c = it_client_opts(&o);
    IT_RC(rl_semaphore_new(&l, c, "x", 1, 3), RL_ENOTSUP);
    assert_null(l);
    rl_client_free(c);
    rt_redis_stop(more[0]);
    rt_redis_stop(more[1]);
}

/* Two clients (lease 300 ms) on a 2-permit name: both hold, renewed over
 * four leases; a third try waits for a release, and gets in at once. */
static void share_and_wait(rl_client *c, rl_client *d, const char *name)
{
    rl_lock *a = sem(c, name, 2), *b = sem(d, name, 2), *b2 = NULL;
    int64_t t0;
    it_acq w;

    IT_RC(rl_lock_try_acquire(a, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(b, 0, RL_LEASE_WATCHDOG), RL_OK);
    b2 = sem(d, name, 2);
    it_acq_begin(&w, b2, 10000, 1);     /* another thread: waits */
    t0 = rt_now_ms();
    IT_WAIT(rt_now_ms() - t0 > 1200, 3000);     /* four leases */
    IT_EQ(atomic_load(&w.state), 1);
    IT_EQ(rl_lock_interrupted(a), 0);
    IT_EQ(rl_lock_interrupted(b), 0);
    t0 = rt_now_ms();
    IT_RC(rl_lock_release(a), RL_OK);
    IT_WAIT(atomic_load(&w.state) >= 2, 5000);
    IT_RC(w.rc, RL_OK);
    IT_RANGE(w.t_return_us / 1000 - t0, -5, 500);
    it_acq_let_go(&w);
    assert_int_equal(it_acq_join(&w, 5000), 0);
    IT_RC(w.release_rc, RL_OK);
    IT_RC(rl_lock_release(b), RL_OK);
    rl_lock_free(a);
    rl_lock_free(b);
    rl_lock_free(b2);
    rl_client_free(d);
}

static void test_sentinel(void **state)
{
    rt_sentinel *dep = rt_sentinel_start(0, 1, "semm", NULL);
    rl_options o;
    rl_client *c;

    (void)state;
    assert_non_null(dep);
    it_options(&o, rt_sentinel_url(dep), 300, 0);
    c = it_client_opts(&o);
    share_and_wait(c, it_client_opts(&o), "sn");
    rl_client_free(c);
    rt_sentinel_stop(dep);
}

/* Cluster: the name's one key on the master of its slot (with fencing,
 * its fence key beside it). */
static void test_cluster(void **state)
{
    it_cluster *ic = *state;
    char key[64];
    size_t kl = it_key(key, sizeof key, "rl:", "cs", 2, "");
    int m = rt_cluster_master_of(ic->cl, rt_cluster_keyslot(ic->cl, key, kl));
    redisContext *rc;
    rl_options o;
    rl_client *c, *d, *f;
    rl_lock *l;
    redisReply *r;
    unsigned long long tok;
    unsigned slots[2], n;

    assert_true(m >= 0);
    rc = rt_cluster_connect(ic->cl, m);
    assert_non_null(rc);
    it_options(&o, ic->cl->url, 300, 0);
    c = it_client_opts(&o);
    d = it_client_opts(&o);
    l = sem(c, "cs", 2);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(permits_held(rc, "cs", NULL), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(key_exists(rc, "cs"), 0);
    rl_lock_free(l);
    /* With fencing: the fence key on the same master as the hash. */
    o.fencing = 1;
    f = it_client_opts(&o);
    l = sem(f, "cs", 2);
    IT_RC(rl_semaphore_acquire(l, 2, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_semaphore_slots(l, slots, 2, &n), RL_OK);
    IT_EQ(slots[0] == 0 && slots[1] == 1, 1);
    IT_RC(rl_lock_token(&tok, l), RL_OK);
    r = redisCommand(rc, "GET rl:{cs}:fence");
    assert_true(r && r->type == REDIS_REPLY_STRING);
    IT_EQ(strtoull(r->str, NULL, 10), tok);
    freeReplyObject(r);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(f);
    share_and_wait(c, d, "cs");
    rl_client_free(c);
    redisFree(rc);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest single[] = {
        cmocka_unit_test_setup_teardown(test_never_more_than_n, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_k_permits_and_reentry, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_permit_count_mismatch, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_force_release, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_wake_and_deadline, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_no_herd, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_killed_holder, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_stopped_holder, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_lost_replies, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_fork, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_refused, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_fenced_slots, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_fenced_stopped_holder, it_setup, fstop_teardown),
        cmocka_unit_test_setup_teardown(test_fenced_lost_reply, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_fenced_statuses, it_setup, it_teardown),
        cmocka_unit_test(test_sentinel),
    };
    const struct CMUnitTest cluster[] = {
        cmocka_unit_test(test_cluster),
    };
    int failed;

    if (argc == 5 && strcmp(argv[1], "--child") == 0 && strcmp(argv[2], "hold") == 0)
        return child_hold(argv[3], argv[4]);
    if (argc == 5 && strcmp(argv[1], "--child") == 0 && strcmp(argv[2], "fenced") == 0)
        return child_fenced(argv[3], atoi(argv[4]));
    failed = cmocka_run_group_tests_name("semaphore", single, NULL, NULL);
    failed += cmocka_run_group_tests_name("semaphore_cluster", cluster, it_cluster_setup,
                                          it_cluster_teardown);
    return failed;
}
