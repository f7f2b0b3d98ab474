/*
 * Review of the semaphore (src/semaphore.c): waiters for k permits that
 * sleep through release notices giving back fewer than they lack (the
 * notice says how many), and yet are let in at once when enough came back,
 * and by a force-release; a name held as a plain lock and as a semaphore by
 * turns (neither lets the other in, nor deletes its holds; the read-write
 * lock refuses the hash); another N once every hold ran out; a shutdown
 * while holding wakes another client's waiter at once; a leftover
 * dropped whole by the keeper; a cut-off holder past its deadline, whose
 * fields another's hold drops and whose renewal brings nothing back. Each
 * test starts its own redis-server.
 */
#include "it_cluster.h"
#include "it_common.h"
#include "proxy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static rl_lock *sem(rl_client *c, const char *name, unsigned permits)
{
    rl_lock *l = NULL;

    IT_RC(rl_semaphore_new(&l, c, name, strlen(name), permits), RL_OK);
    return l;
}

/* The field `field` of rl:{name} as a number; -1 when absent. */
static long long field_of(redisContext *rc, const char *name, const char *field)
{
    redisReply *r = redisCommand(rc, "HGET rl:{%s} %s", name, field);
    long long n = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;

    freeReplyObject(r);
    return n;
}

static long long key_exists(redisContext *rc, const char *name)
{
    redisReply *r = redisCommand(rc, "EXISTS rl:{%s}", name);
    long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

    freeReplyObject(r);
    return n;
}

static long long hlen(redisContext *rc, const char *name)
{
    redisReply *r = redisCommand(rc, "HLEN rl:{%s}", name);
    long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

    freeReplyObject(r);
    return n;
}

/* Free two handles, then their clients. */
#define FREE_PAIR(l1, l2, c1, c2) \
    do {                          \
        rl_lock_free(l1);         \
        rl_lock_free(l2);         \
        rl_client_free(c1);       \
        rl_client_free(c2);       \
    } while (0)

/* ---- a thread that takes k permits ----------------------------------- */

/* rl_semaphore_acquire(l, k, wait_ms, a fixed 10 s lease: no renewals, so
 * that the script calls can be counted) on a thread of its own; held until
 * let go, then released once. */
typedef struct kthread {
    rl_lock *l;
    unsigned k;
    long wait_ms;
    atomic_int state;           /* 1 calling, 2 returned, 3 finished */
    atomic_int go;
    int rc, release_rc;
    int64_t returned_ms;
    pthread_t th;
} kthread;

static void *kthread_run(void *arg)
{
    kthread *t = arg;
    struct timespec step = { 0, 1000 * 1000 };

    atomic_store(&t->state, 1);
    t->rc = rl_semaphore_acquire(t->l, t->k, t->wait_ms, 10000);
    t->returned_ms = rt_now_ms();
    atomic_store(&t->state, 2);
    if (t->rc == RL_OK) {
        while (!atomic_load(&t->go))
            nanosleep(&step, NULL);     /* holding, until told */
        t->release_rc = rl_lock_release(t->l);
    }
    atomic_store(&t->state, 3);
    return NULL;
}

static void kthread_start(kthread *t, rl_lock *l, unsigned k, long wait_ms)
{
    memset(t, 0, sizeof *t);
    t->l = l;
    t->k = k;
    t->wait_ms = wait_ms;
    assert_int_equal(pthread_create(&t->th, NULL, kthread_run, t), 0);
}

/* Let a holder go (or a waiter finish) and join it: its release's status
 * (RL_OK for one that never held). */
static int kthread_end(kthread *t)
{
    atomic_store(&t->go, 1);
    IT_WAIT(atomic_load(&t->state) == 3, 15000);
    pthread_join(t->th, NULL);
    return t->rc == RL_OK ? t->release_rc : RL_OK;
}

/* The first of n threads that returned from its call and is not yet let
 * go, but `skip`; -1: none. */
static int first_returned(kthread *t, int n, int skip)
{
    int i;

    for (i = 0; i < n; i++)
        if (i != skip && atomic_load(&t[i].state) == 2 && !atomic_load(&t[i].go))
            return i;
    return -1;
}

#define EVALSHA_SINCE(e, base) (rt_redis_cmdstat_calls((e)->rc, "evalsha") - (base))

/* ---- waiters for k permits --------------------------------------------- */

/*
 * Three clients (three processes, as Redis sees them) each wait for all 4
 * permits of a name that four threads of a fourth client hold one each.
 * The holders give theirs back one by one: each of the first three
 * releases says "1" and leaves every waiter 1 or more short, so it costs
 * the release alone; the fourth lets one waiter in, and costs the release
 * and each waiter's try: 4 + 3 calls in all. (Woken by any release, each
 * waiter asked again after every one: 4 + 4 * 3.)
 */
static void test_k_waiters_sleep_through_small_releases(void **state)
{
    it_env *e = *state;
    rl_client *h = it_client(e, 1000), *w[3];
    rl_lock *lh = sem(h, "kw", 4), *lw[3];
    kthread held[4], waiting[3];
    long long base = rt_redis_cmdstat_calls(e->rc, "evalsha");
    int i, in = -1;

    assert_true(base >= 0);
    for (i = 0; i < 4; i++) {
        kthread_start(&held[i], lh, 1, 0);
        IT_WAIT(atomic_load(&held[i].state) >= 2, 5000);
        IT_RC(held[i].rc, RL_OK);
    }
    for (i = 0; i < 3; i++) {
        w[i] = it_client(e, 1000);
        lw[i] = sem(w[i], "kw", 4);
        kthread_start(&waiting[i], lw[i], 4, 10000);
        /* Its try, its subscription, its try again. */
        IT_WAIT(it_stats(w[i]).waiters == 1 && EVALSHA_SINCE(e, base) == 4 + 2 * (i + 1), 5000);
    }
    IT_WAIT(rt_redis_numsub(e->rc, "rl:{kw}:release", 15) == 3, 5000);
    base = rt_redis_cmdstat_calls(e->rc, "evalsha");
    for (i = 0; i < 4; i++) {
        IT_RC(kthread_end(&held[i]), RL_OK);
        IT_WAIT(EVALSHA_SINCE(e, base) >= i + 1, 5000);
    }
    IT_WAIT((in = first_returned(waiting, 3, -1)) >= 0, 5000);
    IT_RC(waiting[in].rc, RL_OK);
    IT_WAIT(EVALSHA_SINCE(e, base) >= 4 + 3, 5000);
    /* The notices of the first three releases woke nobody. */
    IT_EQ(EVALSHA_SINCE(e, base), 4 + 3);
    /* Each gets all 4 when the one before gives them back. */
    for (i = 0; i < 2; i++) {
        int was = in;
        IT_RC(kthread_end(&waiting[was]), RL_OK);
        IT_WAIT((in = first_returned(waiting, 3, was)) >= 0, 5000);
        IT_RC(waiting[in].rc, RL_OK);
    }
    IT_RC(kthread_end(&waiting[in]), RL_OK);
    IT_EQ(key_exists(e->rc, "kw"), 0);
    for (i = 0; i < 3; i++) {
        rl_lock_free(lw[i]);
        rl_client_free(w[i]);
    }
    rl_lock_free(lh);
    rl_client_free(h);
}

/* Holders and a waiter for all 8 permits in one client: a local release
 * of one permit wakes the waiter no more than a notice would (the release
 * and its notice each count the permit, so three releases leave it 2
 * short): the first three cost their own script calls alone. (Woken by
 * every local release, the waiter asked again after each: 3 + 3.) */
static void test_local_releases_wake_k_waiter_when_enough(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 1000);
    rl_lock *l = sem(c, "kl", 8);
    kthread held[8], waiting;
    long long base;
    int i;

    for (i = 0; i < 8; i++) {
        kthread_start(&held[i], l, 1, 0);
        IT_WAIT(atomic_load(&held[i].state) >= 2, 5000);
        IT_RC(held[i].rc, RL_OK);
    }
    kthread_start(&waiting, l, 8, 10000);
    IT_WAIT(it_stats(c).waiters == 1 && rt_redis_numsub(e->rc, "rl:{kl}:release", 15) == 1,
            5000);
    base = rt_redis_cmdstat_calls(e->rc, "evalsha");
    for (i = 0; i < 3; i++)
        IT_RC(kthread_end(&held[i]), RL_OK);
    IT_WAIT(EVALSHA_SINCE(e, base) >= 3, 5000);
    IT_EQ(EVALSHA_SINCE(e, base), 3);
    IT_EQ(atomic_load(&waiting.state), 1);
    for (; i < 8; i++)
        IT_RC(kthread_end(&held[i]), RL_OK);
    IT_WAIT(atomic_load(&waiting.state) >= 2, 5000);
    IT_RC(waiting.rc, RL_OK);
    IT_RC(kthread_end(&waiting), RL_OK);
    IT_EQ(key_exists(e->rc, "kl"), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

/* A waiter for 2 of 3 permits, one free: the release of one more lets it
 * in at once (1 short, 1 back), not at the holders' 10 s lease. */
static void test_k_waiter_woken_when_enough(void **state)
{
    it_env *e = *state;
    rl_client *h = it_client(e, 1000), *w = it_client(e, 1000);
    rl_lock *lh = sem(h, "ke", 3), *lw = sem(w, "ke", 3);
    kthread held[2], waiting;
    int64_t t0;
    int i;

    for (i = 0; i < 2; i++) {
        kthread_start(&held[i], lh, 1, 0);
        IT_WAIT(atomic_load(&held[i].state) >= 2, 5000);
        IT_RC(held[i].rc, RL_OK);
    }
    kthread_start(&waiting, lw, 2, 10000);
    IT_WAIT(it_stats(w).waiters == 1 && rt_redis_numsub(e->rc, "rl:{ke}:release", 15) == 1,
            5000);
    t0 = rt_now_ms();
    IT_RC(kthread_end(&held[0]), RL_OK);
    IT_WAIT(atomic_load(&waiting.state) >= 2, 5000);
    IT_RC(waiting.rc, RL_OK);
    IT_RANGE(waiting.returned_ms - t0, 0, 500);
    IT_RC(kthread_end(&waiting), RL_OK);
    IT_RC(kthread_end(&held[1]), RL_OK);
    IT_EQ(key_exists(e->rc, "ke"), 0);
    FREE_PAIR(lh, lw, h, w);
}

/* A force-release frees every permit, and its notice says none in
 * particular ("0"): a waiter for all of them is let in at once. */
static void test_force_release_wakes_k_waiter(void **state)
{
    it_env *e = *state;
    rl_client *h = it_client(e, 1000), *w = it_client(e, 1000);
    rl_lock *lh = sem(h, "kf", 3), *lw = sem(w, "kf", 3);
    kthread held, waiting;
    int64_t t0;

    kthread_start(&held, lh, 2, 0);
    IT_WAIT(atomic_load(&held.state) >= 2, 5000);
    IT_RC(held.rc, RL_OK);
    kthread_start(&waiting, lw, 3, 10000);
    IT_WAIT(it_stats(w).waiters == 1 && rt_redis_numsub(e->rc, "rl:{kf}:release", 15) == 1,
            5000);
    t0 = rt_now_ms();
    IT_RC(rl_lock_force_release(lh), RL_OK);
    IT_WAIT(atomic_load(&waiting.state) >= 2, 5000);
    IT_RC(waiting.rc, RL_OK);
    IT_RANGE(waiting.returned_ms - t0, 0, 500);
    IT_EQ(field_of(e->rc, "kf", "~N"), 3);
    IT_RC(kthread_end(&held), RL_ELOST);
    IT_RC(kthread_end(&waiting), RL_OK);
    IT_EQ(key_exists(e->rc, "kf"), 0);
    FREE_PAIR(lh, lw, h, w);
}

/* ---- one name, two kinds ------------------------------------------------- */

/*
 * A name held as a plain lock in one client is busy to a semaphore of
 * another (a wait runs out), and the other way round; the read-write lock
 * refuses the semaphore's hash; nobody's call deletes the other's hold.
 */
static void test_lock_and_semaphore_on_one_name(void **state)
{
    it_env *e = *state;
    rl_client *p = it_client(e, 1000), *s = it_client(e, 1000), *r = it_client(e, 1000);
    rl_lock *lp = it_lock(p, "mix"), *ls = sem(s, "mix", 3), *lr = NULL;

    IT_RC(rl_lock_new_kind(&lr, r, "mix", 3, RL_KIND_READ), RL_OK);
    IT_RC(rl_lock_try_acquire(lp, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(ls, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(rl_semaphore_acquire(ls, 3, 200, RL_LEASE_WATCHDOG), RL_ETIMEDOUT);
    IT_RC(rl_lock_release(ls), RL_ENOTOWNER);
    IT_EQ(hlen(e->rc, "mix"), 1);
    IT_RC(rl_lock_release(lp), RL_OK);
    IT_EQ(key_exists(e->rc, "mix"), 0);
    IT_RC(rl_semaphore_acquire(ls, 2, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(hlen(e->rc, "mix"), 3);       /* the hold, "~k:", "~N": the key's expiry its deadline */
    IT_RC(rl_lock_try_acquire(lp, 200, RL_LEASE_WATCHDOG), RL_ETIMEDOUT);
    IT_RC(rl_lock_release(lp), RL_ENOTOWNER);
    IT_RC(rl_lock_try_acquire(lr, 0, RL_LEASE_WATCHDOG), RL_EREDIS);
    IT_EQ(hlen(e->rc, "mix"), 3);
    IT_EQ(field_of(e->rc, "mix", "~N"), 3);
    IT_EQ(rl_lock_interrupted(ls), 0);
    IT_RC(rl_lock_release(ls), RL_OK);
    IT_EQ(key_exists(e->rc, "mix"), 0);
    rl_lock_free(lr);
    rl_client_free(r);
    FREE_PAIR(lp, ls, p, s);
}

/* How many of rl:{name}'s hold deadlines ("~d:" fields) have passed by
 * Redis's clock, and (in *live, when not NULL) how many have not. */
static int passed_deadlines(redisContext *rc, const char *name, int *live)
{
    redisReply *t = redisCommand(rc, "TIME");
    redisReply *r = redisCommand(rc, "HGETALL rl:{%s}", name);
    long long now;
    size_t i;
    int dead = 0, alive = 0;

    if (t && t->type == REDIS_REPLY_ARRAY && r && r->type == REDIS_REPLY_ARRAY) {
        now = atoll(t->element[0]->str) * 1000 + atoll(t->element[1]->str) / 1000;
        for (i = 0; i + 1 < r->elements; i += 2) {
            if (strncmp(r->element[i]->str, "~d:", 3) != 0)
                continue;
            if (atoll(r->element[i + 1]->str) > now)
                alive++;
            else
                dead++;
        }
    }
    freeReplyObject(t);
    freeReplyObject(r);
    if (live)
        *live = alive;
    return dead;
}

/* 1 when rl:{name} has hold deadlines and every one has passed by Redis's
 * clock; 0 otherwise. */
static int all_deadlines_passed(redisContext *rc, const char *name)
{
    int live, dead = passed_deadlines(rc, name, &live);

    return dead > 0 && live == 0;
}

/* Every hold of a 3-permit name ran out (fixed leases), the key kept
 * alive by an earlier hold's longer expiry, dead holds left in it: a
 * client that opens it with 5 takes all 5 and drops them; the old holder's
 * release is RL_ELOST and leaves the new hold alone. While a hold was
 * live, the other count was refused at once, whatever the wait. */
static void test_other_count_after_holds_ran_out(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, 1000), *b = it_client(e, 1000), *c = it_client(e, 1000);
    rl_lock *l3 = sem(a, "nx", 3), *l5 = sem(b, "nx", 5), *lc = sem(c, "nx", 3);

    IT_RC(rl_semaphore_acquire(lc, 1, 0, 3000), RL_OK);
    IT_RC(rl_semaphore_acquire(l3, 2, 0, 200), RL_OK);
    IT_RC(rl_lock_release(lc), RL_OK);                  /* the key's expiry stays */
    IT_RC(rl_semaphore_acquire(l5, 1, 2000, RL_LEASE_WATCHDOG), RL_EINVAL);
    IT_WAIT(rl_lock_interrupted(l3) == 1, 2000);
    IT_WAIT(all_deadlines_passed(e->rc, "nx"), 2000);
    IT_EQ(hlen(e->rc, "nx"), 4);                        /* a dead hold and "~N" */
    IT_RC(rl_semaphore_acquire(l5, 5, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(field_of(e->rc, "nx", "~N"), 5);
    IT_EQ(hlen(e->rc, "nx"), 4);                        /* the new hold and "~N" */
    IT_RC(rl_lock_release(l3), RL_ELOST);
    IT_EQ(hlen(e->rc, "nx"), 4);
    IT_RC(rl_lock_release(l5), RL_OK);
    IT_EQ(key_exists(e->rc, "nx"), 0);
    rl_lock_free(lc);
    rl_client_free(c);
    FREE_PAIR(l3, l5, a, b);
}

/* ---- limits, scripts flushed, shutdown ------------------------------------ */

/* RL_SEMAPHORE_MAX permits: one hold takes them all, another finds none
 * (a busy try 1 short); k past N is refused, nothing asked. */
static void test_max_permits(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, 1000), *b = it_client(e, 1000);
    rl_lock *la = sem(a, "max", RL_SEMAPHORE_MAX), *lb = sem(b, "max", RL_SEMAPHORE_MAX);

    IT_RC(rl_semaphore_acquire(la, RL_SEMAPHORE_MAX, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(field_of(e->rc, "max", "~N"), RL_SEMAPHORE_MAX);
    IT_RC(rl_semaphore_acquire(lb, 1, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(rl_semaphore_acquire(lb, (unsigned)RL_SEMAPHORE_MAX + 1, 0, RL_LEASE_WATCHDOG),
          RL_EINVAL);
    IT_RC(rl_lock_release(la), RL_OK);
    IT_RC(rl_semaphore_acquire(lb, RL_SEMAPHORE_MAX - 1, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_semaphore_acquire(la, 2, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(rl_semaphore_acquire(la, 1, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(la), RL_OK);
    IT_RC(rl_lock_release(lb), RL_OK);
    IT_EQ(key_exists(e->rc, "max"), 0);
    FREE_PAIR(la, lb, a, b);
}

/* SCRIPT FLUSH under a renewed hold and a waiter: the renewal, the
 * waiter's next try and the release load the scripts again; nothing is
 * flagged, and the waiter gets in when the holder releases. */
static void test_script_flush(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, 300), *b = it_client(e, 300);
    rl_lock *la = sem(a, "fl", 2), *lb = sem(b, "fl", 2);
    unsigned long long rounds;
    kthread waiting;

    IT_RC(rl_semaphore_acquire(la, 2, 0, RL_LEASE_WATCHDOG), RL_OK);
    kthread_start(&waiting, lb, 1, 10000);
    IT_WAIT(it_stats(b).waiters == 1 && rt_redis_numsub(e->rc, "rl:{fl}:release", 15) == 1,
            5000);
    freeReplyObject(redisCommand(e->rc, "SCRIPT FLUSH"));
    rounds = it_stats(a).renewal_rounds;
    IT_WAIT(it_stats(a).renewal_rounds >= rounds + 3, 5000);
    IT_EQ(rl_lock_interrupted(la), 0);
    freeReplyObject(redisCommand(e->rc, "SCRIPT FLUSH"));
    IT_RC(rl_lock_release(la), RL_OK);
    IT_WAIT(atomic_load(&waiting.state) >= 2, 5000);
    IT_RC(waiting.rc, RL_OK);
    IT_RC(kthread_end(&waiting), RL_OK);
    IT_EQ(key_exists(e->rc, "fl"), 0);
    FREE_PAIR(la, lb, a, b);
}

/* A client shut down while a thread waits for k permits through it: the
 * wait ends at once with RL_ECANCELED, and the holder of another client
 * keeps its permits. */
static void test_shutdown_mid_wait(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, 1000), *b = it_client(e, 1000);
    rl_lock *la = sem(a, "sd", 3), *lb = sem(b, "sd", 3);
    kthread waiting;
    int64_t t0;

    IT_RC(rl_semaphore_acquire(la, 2, 0, RL_LEASE_WATCHDOG), RL_OK);
    kthread_start(&waiting, lb, 2, 10000);
    IT_WAIT(it_stats(b).waiters == 1, 5000);
    t0 = rt_now_ms();
    IT_RC(rl_client_shutdown(b), RL_OK);
    IT_WAIT(atomic_load(&waiting.state) >= 2, 5000);
    IT_RC(waiting.rc, RL_ECANCELED);
    IT_RANGE(waiting.returned_ms - t0, 0, 1000);
    IT_RC(kthread_end(&waiting), RL_OK);
    IT_EQ(field_of(e->rc, "sd", "~N"), 3);
    IT_EQ(rl_lock_interrupted(la), 0);
    IT_RC(rl_lock_release(la), RL_OK);
    IT_EQ(key_exists(e->rc, "sd"), 0);
    FREE_PAIR(la, lb, a, b);
}

/* A client shut down while one of its threads holds all 3 permits and
 * another client's thread waits for 2: the shutdown gives them back with
 * a notice that says 3, so the waiter is let in at once, not at the
 * holder's deadline; the holder's flag is up until reported. */
static void test_shutdown_while_holding(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, 10000), *b = it_client(e, 1000);
    rl_lock *la = sem(a, "sh", 3), *lb = sem(b, "sh", 3);
    kthread waiting;
    int64_t t0;

    IT_RC(rl_semaphore_acquire(la, 3, 0, RL_LEASE_WATCHDOG), RL_OK);
    kthread_start(&waiting, lb, 2, 8000);
    IT_WAIT(it_stats(b).waiters == 1 && rt_redis_numsub(e->rc, "rl:{sh}:release", 15) == 1,
            5000);
    t0 = rt_now_ms();
    IT_RC(rl_client_shutdown(a), RL_OK);
    IT_WAIT(atomic_load(&waiting.state) >= 2, 5000);
    IT_RC(waiting.rc, RL_OK);
    IT_RANGE(waiting.returned_ms - t0, 0, 3000);       /* not the 10 s lease */
    IT_EQ(rl_lock_interrupted(la), 1);
    IT_EQ(rl_interrupted(), 1);
    IT_EQ(rl_lock_interrupted(la), 0);
    IT_RC(rl_lock_release(la), RL_ECANCELED);
    IT_EQ(hlen(e->rc, "sh"), 3);   /* the waiter's hold on a free name: its field, ~k, ~N */
    IT_RC(kthread_end(&waiting), RL_OK);
    IT_EQ(key_exists(e->rc, "sh"), 0);
    FREE_PAIR(la, lb, a, b);
}

/* The server restarted empty under a holder of both permits and a waiter
 * for both: the waiter gets in without waiting out its deadline, the
 * holder is flagged, and its release (RL_ELOST) leaves the waiter's
 * permits alone. */
static void test_restart_keys_lost(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, 300), *b = it_client(e, 300);
    rl_lock *la = sem(a, "rs", 2), *lb = sem(b, "rs", 2);
    kthread waiting;
    redisContext *rc;

    IT_RC(rl_semaphore_acquire(la, 2, 0, RL_LEASE_WATCHDOG), RL_OK);
    kthread_start(&waiting, lb, 2, 8000);
    IT_WAIT(it_stats(b).waiters == 1 && rt_redis_numsub(e->rc, "rl:{rs}:release", 15) == 1,
            5000);
    assert_int_equal(rt_redis_restart(e->redis), 0);
    rc = rt_redis_connect(e->redis);
    assert_non_null(rc);
    IT_WAIT(atomic_load(&waiting.state) >= 2, 5000);
    IT_RC(waiting.rc, RL_OK);
    IT_WAIT(rl_lock_interrupted(la) == 1, 5000);
    IT_RC(rl_lock_release(la), RL_ELOST);
    IT_EQ(field_of(rc, "rs", "~N"), 2);
    IT_EQ(hlen(rc, "rs"), 3);          /* the first hold on a free name: no "~d:" */
    IT_RC(kthread_end(&waiting), RL_OK);
    IT_EQ(key_exists(rc, "rs"), 0);
    redisFree(rc);
    FREE_PAIR(la, lb, a, b);
}

/* ---- Cluster: the slot migrates under a holder and a waiter -------------- */

/* Renewal rounds of client c: wait for n more, none flagged. */
static void rounds_pass(rl_client *c, rl_lock *l, unsigned long long n)
{
    unsigned long long r = it_stats(c).renewal_rounds;

    IT_WAIT(it_stats(c).renewal_rounds >= r + n, 5000);
    IT_EQ(rl_lock_interrupted(l), 0);
}

/* A 3-permit name whose slot migrates to another master (begun, keys
 * moved, finished) while a holder of 2 is renewed and a waiter for 2
 * waits: never flagged, and the release on the new master lets the waiter
 * in at once (its sharded subscription followed the slot). */
static void test_cluster_slot_migrates(void **state)
{
    it_cluster *ic = *state;
    char key[64];
    size_t kl = it_key(key, sizeof key, "rl:", "cm", 2, "");
    int slot = rt_cluster_keyslot(ic->cl, key, kl), from = rt_cluster_master_of(ic->cl, slot);
    int to = -1, i;
    rl_options o;
    rl_client *a, *b;
    rl_lock *la, *lb;
    redisContext *rc;
    kthread waiting;
    int64_t t0;

    for (i = 0; i < 3 && to < 0; i++)
        if (i != from && rt_cluster_is_master(ic->cl, i))
            to = i;
    assert_true(from >= 0 && to >= 0);
    it_options(&o, ic->cl->url, 300, 0);
    a = it_client_opts(&o);
    b = it_client_opts(&o);
    la = sem(a, "cm", 3);
    lb = sem(b, "cm", 3);
    IT_RC(rl_semaphore_acquire(la, 2, 0, RL_LEASE_WATCHDOG), RL_OK);
    kthread_start(&waiting, lb, 2, 10000);
    IT_WAIT(it_stats(b).waiters == 1, 5000);
    rounds_pass(a, la, 2);
    assert_int_equal(rt_cluster_slot_begin(ic->cl, slot, to), 0);
    rounds_pass(a, la, 2);
    assert_int_equal(rt_cluster_slot_move_keys(ic->cl, slot), 0);
    rounds_pass(a, la, 2);
    assert_int_equal(rt_cluster_slot_finish(ic->cl, slot, to), 0);
    rounds_pass(a, la, 3);
    IT_EQ(atomic_load(&waiting.state), 1);
    rc = rt_cluster_connect(ic->cl, to);
    assert_non_null(rc);
    IT_EQ(field_of(rc, "cm", "~N"), 3);
    /* The waiter's next try reached the new master (its subscription too). */
    IT_WAIT(rt_redis_shardnumsub(rc, "rl:{cm}:release", 15) == 1, 5000);
    t0 = rt_now_ms();
    IT_RC(rl_lock_release(la), RL_OK);
    IT_WAIT(atomic_load(&waiting.state) >= 2, 5000);
    IT_RC(waiting.rc, RL_OK);
    IT_RANGE(waiting.returned_ms - t0, 0, 500);
    IT_EQ(hlen(rc, "cm"), 3);          /* the first hold on a free name: no "~d:" */
    IT_RC(kthread_end(&waiting), RL_OK);
    IT_EQ(key_exists(rc, "cm"), 0);
    redisFree(rc);
    FREE_PAIR(la, lb, a, b);
}

/* ---- a lost reply, a killed subscription --------------------------------- */

/* A waiter for 2 permits whose busy try's reply is lost (read back: not
 * applied, asked again) and whose subscription is then killed (CLIENT
 * KILL TYPE pubsub): it subscribes again and is let in at once by the
 * holder's release, with one wait counted and nothing else. */
static void test_lost_busy_reply_and_killed_subscription(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, 1000);
    rl_lock *la = sem(a, "lk", 3), *lp;
    it_proxied p;
    kthread waiting;
    rl_stats st;
    int64_t t0;

    it_proxied_open(&p, e, "unused", 0, 500);
    lp = sem(p.c, "lk", 3);
    IT_RC(rl_semaphore_acquire(la, 2, 0, RL_LEASE_WATCHDOG), RL_OK);
    rt_proxy_drop_next_reply_matching(p.proxy, "EVALSHA");
    kthread_start(&waiting, lp, 2, 10000);
    IT_WAIT(rt_proxy_dropped(p.proxy) == 1, 5000);
    IT_WAIT(it_stats(p.c).waiters == 1 &&
            rt_redis_numsub(e->rc, "rl:{lk}:release", 15) == 1, 5000);
    freeReplyObject(redisCommand(e->rc, "CLIENT KILL TYPE pubsub"));
    IT_WAIT(rt_redis_numsub(e->rc, "rl:{lk}:release", 15) == 1, 5000);
    IT_EQ(atomic_load(&waiting.state), 1);
    t0 = rt_now_ms();
    IT_RC(rl_lock_release(la), RL_OK);
    IT_WAIT(atomic_load(&waiting.state) >= 2, 5000);
    IT_RC(waiting.rc, RL_OK);
    IT_RANGE(waiting.returned_ms - t0, 0, 500);
    IT_EQ(field_of(e->rc, "lk", "~N"), 3);
    IT_EQ(hlen(e->rc, "lk"), 3);       /* the first hold on a free name: no "~d:" */
    IT_RC(kthread_end(&waiting), RL_OK);
    IT_EQ(key_exists(e->rc, "lk"), 0);
    st = it_stats(p.c);
    IT_EQ(st.acquisitions, 1);
    IT_EQ(st.waits, 1);
    IT_EQ(st.timeouts, 0);
    IT_EQ(st.releases, 1);
    rl_lock_free(lp);
    it_proxied_close(&p);
    rl_lock_free(la);
    rl_client_free(a);
}

/* wait_replicas 1 on a server without replicas: an acquisition of 2
 * permits is taken, then given back (RL_EREPLICA) by the semaphore's own
 * release script: nothing is left, all 3 permits are free for another. */
static void test_wait_replicas_undone(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, 1000), *r;
    rl_lock *la = sem(a, "wr", 3), *lr;
    rl_options o;

    it_options(&o, e->redis->url, 1000, 0);
    o.wait_replicas = 1;
    o.wait_replicas_ms = 50;
    r = it_client_opts(&o);
    lr = sem(r, "wr", 3);
    IT_RC(rl_semaphore_acquire(lr, 2, 0, RL_LEASE_WATCHDOG), RL_EREPLICA);
    IT_EQ(key_exists(e->rc, "wr"), 0);
    IT_EQ(rl_lock_hold_count(lr), 0);
    IT_RC(rl_semaphore_acquire(la, 3, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(la), RL_OK);
    IT_EQ(key_exists(e->rc, "wr"), 0);
    FREE_PAIR(la, lr, a, r);
}

/* ---- a leftover, a stopped holder ---------------------------------------- */

/* An acquisition of 2 permits whose reply is lost and whose count cannot
 * be read back (the proxy refuses new connections): RL_ECONN, and a
 * leftover. Once Redis answers again the keeper drops every field of it
 * (the hold, its deadline, its permits, and "~N" with them): the key goes,
 * and all 3 permits are another's. */
static void test_leftover_dropped_whole(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, 1000);
    rl_lock *la = sem(a, "lo", 3), *lp;
    it_proxied p;

    /* A lease that outlasts the test: the key goes only by the drop. */
    it_proxied_open(&p, e, "unused", 20000, 300);
    lp = sem(p.c, "lo", 3);
    assert_int_equal(rt_proxy_refuse(p.proxy, 1), 0);
    rt_proxy_drop_next_reply_matching(p.proxy, "EVALSHA");
    IT_RC(rl_semaphore_acquire(lp, 2, 0, RL_LEASE_WATCHDOG), RL_ECONN);
    IT_EQ(rt_proxy_dropped(p.proxy), 1);
    IT_EQ(rl_lock_hold_count(lp), 0);
    IT_EQ(hlen(e->rc, "lo"), 3);    /* applied: the first hold on a free name, "~k:" and "~N" */
    assert_int_equal(rt_proxy_refuse(p.proxy, 0), 0);
    IT_WAIT(key_exists(e->rc, "lo") == 0, 3000);
    IT_RC(rl_semaphore_acquire(la, 3, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(la), RL_OK);
    IT_EQ(key_exists(e->rc, "lo"), 0);
    rl_lock_free(lp);
    it_proxied_close(&p);
    rl_lock_free(la);
    rl_client_free(a);
}

/* A holder cut off (its proxy stalled: no renewal reaches Redis) past its
 * deadline, the key kept alive by another holder's renewals: its flag
 * rises; a third client's new hold drops its fields and takes its permit;
 * once let through, the cut-off client's renewals bring nothing back; its
 * release says RL_ELOST and leaves the others' holds alone. */
static void test_stopped_holder_not_resurrected(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, 1000), *b = it_client(e, 1000);
    rl_lock *la = sem(a, "st", 2), *lb = sem(b, "st", 2), *lp;
    it_proxied p;

    it_proxied_open(&p, e, "unused", 600, 300);
    lp = sem(p.c, "st", 2);
    IT_RC(rl_semaphore_acquire(la, 1, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_semaphore_acquire(lp, 1, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_semaphore_acquire(lb, 1, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    assert_int_equal(rt_proxy_stall(p.proxy, 1), 0);
    IT_WAIT(rl_lock_interrupted(lp) == 1, 3000);
    /* Its deadline passes in Redis: b's try drops its fields. */
    IT_WAIT(passed_deadlines(e->rc, "st", NULL) == 1, 3000);
    IT_RC(rl_semaphore_acquire(lb, 1, 0, RL_LEASE_WATCHDOG), RL_OK);
    /* a's field and "~d:" (dated when p joined), b's three, "~N" */
    IT_EQ(hlen(e->rc, "st"), 6);
    /* Let through, a renewal sent before the flag rose finds nothing. */
    assert_int_equal(rt_proxy_stall(p.proxy, 0), 0);
    IT_RC(rl_lock_release(lp), RL_ELOST);
    IT_EQ(rl_lock_hold_count(lp), 0);
    IT_EQ(hlen(e->rc, "st"), 6);
    IT_EQ(rl_lock_interrupted(la) + rl_lock_interrupted(lb), 0);
    IT_RC(rl_lock_release(la), RL_OK);
    IT_RC(rl_lock_release(lb), RL_OK);
    IT_EQ(key_exists(e->rc, "st"), 0);
    rl_lock_free(lp);
    it_proxied_close(&p);
    FREE_PAIR(la, lb, a, b);
}

/* The same with the cut-off holder the first on a free name (its hold
 * undated, the key's expiry its deadline): the second holder's join gives
 * it that deadline, so that the other's renewals, which keep the key
 * alive, keep nothing of it: its permit is free at its own lease's end. */
static void test_stopped_first_holder_not_kept_alive(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, 1000), *b = it_client(e, 1000);
    rl_lock *la = sem(a, "sf", 2), *lb = sem(b, "sf", 2), *lp;
    it_proxied p;

    it_proxied_open(&p, e, "unused", 600, 300);
    lp = sem(p.c, "sf", 2);
    IT_RC(rl_semaphore_acquire(lp, 1, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(hlen(e->rc, "sf"), 2);            /* undated: its field and "~N" */
    IT_RC(rl_semaphore_acquire(la, 1, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_semaphore_acquire(lb, 1, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    assert_int_equal(rt_proxy_stall(p.proxy, 1), 0);
    IT_WAIT(rl_lock_interrupted(lp) == 1, 3000);
    IT_WAIT(passed_deadlines(e->rc, "sf", NULL) == 1, 3000);
    IT_RC(rl_semaphore_acquire(lb, 1, 0, RL_LEASE_WATCHDOG), RL_OK);
    assert_int_equal(rt_proxy_stall(p.proxy, 0), 0);
    IT_RC(rl_lock_release(lp), RL_ELOST);
    IT_EQ(rl_lock_interrupted(la) + rl_lock_interrupted(lb), 0);
    IT_RC(rl_lock_release(la), RL_OK);
    IT_RC(rl_lock_release(lb), RL_OK);
    IT_EQ(key_exists(e->rc, "sf"), 0);
    rl_lock_free(lp);
    it_proxied_close(&p);
    FREE_PAIR(la, lb, a, b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_k_waiters_sleep_through_small_releases, it_setup,
                                        it_teardown),
        cmocka_unit_test_setup_teardown(test_local_releases_wake_k_waiter_when_enough, it_setup,
                                        it_teardown),
        cmocka_unit_test_setup_teardown(test_k_waiter_woken_when_enough, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_force_release_wakes_k_waiter, it_setup,
                                        it_teardown),
        cmocka_unit_test_setup_teardown(test_lock_and_semaphore_on_one_name, it_setup,
                                        it_teardown),
        cmocka_unit_test_setup_teardown(test_other_count_after_holds_ran_out, it_setup,
                                        it_teardown),
        cmocka_unit_test_setup_teardown(test_max_permits, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_script_flush, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_mid_wait, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_while_holding, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_lost_busy_reply_and_killed_subscription, it_setup,
                                        it_teardown),
        cmocka_unit_test_setup_teardown(test_wait_replicas_undone, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_restart_keys_lost, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_leftover_dropped_whole, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_stopped_first_holder_not_kept_alive, it_setup,
                                        it_teardown),
        cmocka_unit_test_setup_teardown(test_stopped_holder_not_resurrected, it_setup,
                                        it_teardown),
    };

    const struct CMUnitTest cluster[] = {
        cmocka_unit_test(test_cluster_slot_migrates),
    };
    int failed = cmocka_run_group_tests_name("semaphore_review", tests, NULL, NULL);

    failed += cmocka_run_group_tests_name("semaphore_review_cluster", cluster, it_cluster_setup,
                                          it_cluster_teardown);
    return failed;
}
