/*
 * Sets of locks (rl_lockset_*, src/lockset.c): all or nothing when a member
 * is held by another client, threads taking overlapping sets given in
 * opposite orders, one deadline for the whole set, a member lost while the
 * next is waited for, a shutdown during the wait, reentry and release, the
 * flag of a force-released member, a member of each kind, a give-back that
 * fails, bad input; the review's intersections (processes in opposite
 * orders, the local queue within the deadline, a semaphore member, one
 * force-released while held, a fair member's place, two sets of a thread,
 * a client freed mid-set, fork, handles freed before the set, fencing,
 * lock-delay, replicas, a lost give-back reply); the one script of a set
 * on one server and slot (its cost, a reentry, a busy member with and
 * without a wait, a lost reply); a 3-master Cluster across slots
 * (ordered) and in one slot (one script) and with a migrating slot, and
 * Redlock with a node stopped. Each
 * single-server test starts its own redis-server.
 */
#include "it_cluster.h"
#include "proxy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define LEASE_MS 1000           /* the clients' watchdog lease */

/* fork() in a threaded process is not supported by ThreadSanitizer
 * (test_fork.c): the tests with children are skipped under it. */
#if defined(__SANITIZE_THREAD__)
#define IT_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define IT_UNDER_TSAN 1
#endif
#endif

static void skip_under_tsan(void)
{
#ifdef IT_UNDER_TSAN
    print_message("fork() is not supported by ThreadSanitizer: skipped\n");
    skip();
#endif
}

static rl_lock *kind_lock(rl_client *c, const char *name, int kind)
{
    rl_lock *l = NULL;

    IT_RC(rl_lock_new_kind(&l, c, name, strlen(name), kind), RL_OK);
    return l;
}

static rl_lockset *make_set(rl_lock *const *locks, size_t n)
{
    rl_lockset *set = NULL;

    IT_RC(rl_lockset_new(&set, locks, n), RL_OK);
    assert_non_null(set);
    return set;
}

/* Fields of rl:{name} on rc (-1: the key is not a hash). */
static long long hlen(redisContext *rc, const char *name)
{
    redisReply *r = redisCommand(rc, "HLEN rl:{%s}", name);
    long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

    freeReplyObject(r);
    return n;
}

/* The hold count stored in our field of rl:{name} ("<count> <since>"): the
 * value of the only field; 0 when there is none. */
static long long stored_count(redisContext *rc, const char *name)
{
    char key[128];
    size_t kl = it_key(key, sizeof key, "rl:", name, strlen(name), "");
    it_hash h;

    assert_int_equal(it_hgetall(rc, key, kl, &h), 0);
    return h.fields == 0 ? 0 : atoll(h.value);
}

static void counts_are(rl_lock *const *locks, size_t n, int want)
{
    size_t i;

    for (i = 0; i < n; i++)
        IT_EQ(rl_lock_hold_count(locks[i]), want);
}

/* ---- all or nothing ---------------------------------------------------- */

/* A member held by another client: nothing of the set stays held, the
 * thread's counts are back where they were (a member it held before, too),
 * Redis has no field of ours, and the message names the member. */
static void test_all_or_nothing(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, LEASE_MS), *b = it_client(e, LEASE_MS);
    rl_lock *m[3] = { it_lock(a, "n3"), it_lock(a, "n1"), it_lock(a, "n2") };
    rl_lock *other = it_lock(b, "n2");
    rl_lockset *set = make_set(m, 3);
    int64_t t0;

    IT_RC(rl_lock_try_acquire(other, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lockset_try_acquire(set, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    assert_non_null(strstr(rl_last_error(), "'n2'"));
    counts_are(m, 3, 0);
    IT_EQ(hlen(e->rc, "n1"), 0);
    IT_EQ(hlen(e->rc, "n3"), 0);
    IT_EQ(hlen(e->rc, "n2"), 1);        /* b's field alone */

    /* Waited for: the set's wait runs out; n1 was held before the call. */
    IT_RC(rl_lock_try_acquire(m[1], 0, RL_LEASE_WATCHDOG), RL_OK);
    t0 = rt_now_ms();
    IT_RC(rl_lockset_try_acquire(set, 200, RL_LEASE_WATCHDOG), RL_ETIMEDOUT);
    IT_RANGE(rt_now_ms() - t0, 190, 1500);
    assert_non_null(strstr(rl_last_error(), "'n2'"));
    IT_EQ(rl_lock_hold_count(m[1]), 1);
    IT_EQ(stored_count(e->rc, "n1"), 1);
    IT_EQ(rl_lock_hold_count(m[0]), 0);
    IT_EQ(rl_lock_hold_count(m[2]), 0);
    IT_EQ(hlen(e->rc, "n3"), 0);
    IT_RC(rl_lock_release(m[1]), RL_OK);

    /* Freed: the whole set is taken, then given back whole. */
    IT_RC(rl_lock_release(other), RL_OK);
    IT_RC(rl_lockset_try_acquire(set, 0, RL_LEASE_WATCHDOG), RL_OK);
    counts_are(m, 3, 1);
    IT_RC(rl_lockset_release(set), RL_OK);
    counts_are(m, 3, 0);
    IT_EQ(hlen(e->rc, "n1") + hlen(e->rc, "n2") + hlen(e->rc, "n3"), 0);
    rl_lockset_free(set);
    rl_lock_free(other);
    for (int i = 0; i < 3; i++)
        rl_lock_free(m[i]);
    rl_client_free(b);
    rl_client_free(a);
}

/* One deadline for the set: the second member comes free when its holder's
 * 250 ms lease runs out, and the third (held) has only what is left of the
 * set's 400 ms, not 400 ms of its own. */
static void test_one_deadline(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, LEASE_MS), *b = it_client(e, LEASE_MS);
    rl_lock *m[3] = { it_lock(a, "d1"), it_lock(a, "d2"), it_lock(a, "d3") };
    rl_lock *o2 = it_lock(b, "d2"), *o3 = it_lock(b, "d3");
    rl_lockset *set = make_set(m, 3);
    int64_t t0;

    IT_RC(rl_lock_try_acquire(o2, 0, 250), RL_OK);
    IT_RC(rl_lock_try_acquire(o3, 0, RL_LEASE_WATCHDOG), RL_OK);
    t0 = rt_now_ms();
    IT_RC(rl_lockset_try_acquire(set, 400, RL_LEASE_WATCHDOG), RL_ETIMEDOUT);
    IT_RANGE(rt_now_ms() - t0, 390, 620);
    assert_non_null(strstr(rl_last_error(), "'d3'"));
    counts_are(m, 3, 0);
    IT_EQ(hlen(e->rc, "d1") + hlen(e->rc, "d2"), 0);
    IT_RC(rl_lock_release(o2), RL_ELOST);
    IT_RC(rl_lock_release(o3), RL_OK);
    rl_lockset_free(set);
    rl_lock_free(o2);
    rl_lock_free(o3);
    for (int i = 0; i < 3; i++)
        rl_lock_free(m[i]);
    rl_client_free(b);
    rl_client_free(a);
}

/* The first member is held by another thread of the same client: the set
 * waits in the client's local queue, and only until its deadline. */
static void test_deadline_local(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, LEASE_MS);
    rl_lock *m[2] = { it_lock(a, "e1"), it_lock(a, "e2") };
    rl_lockset *set = make_set(m, 2);
    it_acq holder;
    int64_t t0;

    it_acq_begin(&holder, m[0], 0, 1);
    IT_WAIT(atomic_load(&holder.state) >= 2, 3000);
    IT_RC(holder.rc, RL_OK);
    t0 = rt_now_ms();
    IT_RC(rl_lockset_try_acquire(set, 300, RL_LEASE_WATCHDOG), RL_ETIMEDOUT);
    IT_RANGE(rt_now_ms() - t0, 290, 800);
    assert_non_null(strstr(rl_last_error(), "'e1'"));
    counts_are(m, 2, 0);
    IT_EQ(hlen(e->rc, "e2"), 0);
    it_acq_let_go(&holder);
    assert_int_equal(it_acq_join(&holder, 3000), 0);
    IT_RC(rl_lockset_try_acquire(set, 300, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lockset_release(set), RL_OK);
    rl_lockset_free(set);
    rl_lock_free(m[0]);
    rl_lock_free(m[1]);
    rl_client_free(a);
}

/* A member taken first whose fixed lease runs out while the next is waited
 * for: the set is not held whole, so nothing of it is, and RL_ELOST names
 * that member. */
static void test_lost_meanwhile(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, LEASE_MS), *b = it_client(e, LEASE_MS);
    rl_lock *m[2] = { it_lock(a, "l1"), it_lock(a, "l2") };
    rl_lock *other = it_lock(b, "l2");
    rl_lockset *set = make_set(m, 2);

    IT_RC(rl_lock_try_acquire(other, 0, 300), RL_OK);
    IT_RC(rl_lockset_try_acquire(set, 3000, 50), RL_ELOST);
    assert_non_null(strstr(rl_last_error(), "'l1'"));
    counts_are(m, 2, 0);
    IT_EQ(rl_lockset_interrupted(set), 0);
    IT_EQ(hlen(e->rc, "l1") + hlen(e->rc, "l2"), 0);
    IT_RC(rl_lock_release(other), RL_ELOST);
    rl_lockset_free(set);
    rl_lock_free(other);
    rl_lock_free(m[0]);
    rl_lock_free(m[1]);
    rl_client_free(b);
    rl_client_free(a);
}

/* The client is shut down while its set waits for a member: the call
 * returns RL_ECANCELED and the member it took is released by the shutdown. */
typedef struct waiting_set {
    rl_lockset *set;
    rl_lock *first;
    atomic_int shut, done;
    int rc, count_after;
} waiting_set;

static void *wait_set(void *arg)
{
    waiting_set *w = arg;

    w->rc = rl_lockset_try_acquire(w->set, RL_WAIT_FOREVER, RL_LEASE_WATCHDOG);
    /* The shutdown takes the member given back in vain: once it is over,
     * the thread holds nothing. */
    w->count_after = RT_WAIT_UNTIL(atomic_load(&w->shut), 5000) ?
        rl_lock_hold_count(w->first) : -100;
    rl_interrupted();       /* the shutdown's flag, reported once */
    atomic_store(&w->done, 1);
    return NULL;
}

static void test_shutdown_while_waiting(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, LEASE_MS), *b = it_client(e, LEASE_MS);
    rl_lock *m[2] = { it_lock(a, "w1"), it_lock(a, "w2") };
    rl_lock *other = it_lock(b, "w2");
    waiting_set w = { .set = make_set(m, 2), .first = m[0] };
    pthread_t th;

    IT_RC(rl_lock_try_acquire(other, 0, RL_LEASE_WATCHDOG), RL_OK);
    assert_int_equal(pthread_create(&th, NULL, wait_set, &w), 0);
    IT_WAIT(it_stats(a).waiters == 1, 3000);
    IT_EQ(hlen(e->rc, "w1"), 1);
    IT_RC(rl_client_shutdown(a), RL_OK);
    atomic_store(&w.shut, 1);
    IT_WAIT(atomic_load(&w.done), 3000);
    pthread_join(th, NULL);
    IT_RC(w.rc, RL_ECANCELED);
    IT_RC(w.count_after, RL_ECANCELED);
    IT_EQ(hlen(e->rc, "w1"), 0);
    IT_RC(rl_lock_release(other), RL_OK);
    rl_lockset_free(w.set);
    rl_lock_free(other);
    rl_lock_free(m[0]);
    rl_lock_free(m[1]);
    rl_client_free(b);
    rl_client_free(a);
}

/* ---- threads taking overlapping sets, in opposite orders --------------- */

#define ROUNDS 150

typedef struct racer {
    rl_client *c;
    const char *names[3];
    atomic_int *inside;         /* holders of the shared name "ob" now */
    atomic_int *overlap;
    atomic_int done;
    int rc, rounds;
    char err[256];
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    rl_lock *m[3];
    rl_lockset *set = NULL;
    int i;

    for (i = 0; i < 3; i++)
        rl_lock_new(&m[i], r->c, r->names[i]);
    r->rc = rl_lockset_new(&set, m, 3);
    for (r->rounds = 0; r->rc == RL_OK && r->rounds < ROUNDS; r->rounds++) {
        /* Deadline-bound: a circle would end in RL_ETIMEDOUT, not hang. */
        if ((r->rc = rl_lockset_try_acquire(set, 3000, RL_LEASE_WATCHDOG)) != RL_OK)
            break;
        if (atomic_fetch_add(r->inside, 1) != 0)
            atomic_store(r->overlap, 1);
        atomic_fetch_sub(r->inside, 1);
        r->rc = rl_lockset_release(set);
    }
    if (r->rc != RL_OK)
        snprintf(r->err, sizeof r->err, "%s", rl_last_error());
    rl_lockset_free(set);
    for (i = 0; i < 3; i++)
        rl_lock_free(m[i]);
    atomic_store(&r->done, 1);
    return NULL;
}

static void test_opposite_orders(void **state)
{
    it_env *e = *state;
    atomic_int inside = 0, overlap = 0;
    rl_client *c0 = it_client(e, LEASE_MS), *c1 = it_client(e, LEASE_MS);
    /* Two clients (waiting in Redis), and two threads of one client
     * (waiting in its local queue). */
    racer r[3] = {
        { .c = c0, .names = { "oa", "ob", "oc" } },
        { .c = c1, .names = { "oc", "ob", "oa" } },
        { .c = c0, .names = { "ob", "oc", "oa" } },
    };
    pthread_t th[3];
    int i;

    for (i = 0; i < 3; i++) {
        r[i].inside = &inside;
        r[i].overlap = &overlap;
        assert_int_equal(pthread_create(&th[i], NULL, race, &r[i]), 0);
    }
    IT_WAIT(atomic_load(&r[0].done) && atomic_load(&r[1].done) && atomic_load(&r[2].done),
            12000);
    for (i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        if (r[i].rc != RL_OK)
            fail_msg("racer %d: round %d: %s: %s", i, r[i].rounds, rl_strerror(r[i].rc),
                     r[i].err);
        IT_EQ(r[i].rounds, ROUNDS);
    }
    IT_EQ(atomic_load(&overlap), 0);
    rl_client_free(c1);
    rl_client_free(c0);
}

/* Processes, not threads: two children, each with its own client, take
 * overlapping sets given in opposite orders. Shared memory counts the
 * holders of the common name. */
typedef struct proc_race {
    const char *url;
    const char *names[3];
    atomic_int *shared;         /* [0] inside, [1] overlap */
} proc_race;

#define PROC_ROUNDS 100

static int proc_racer(void *arg)
{
    proc_race *r = arg;
    rl_options o;
    rl_client *c = NULL;
    rl_lock *m[3] = { NULL, NULL, NULL };
    rl_lockset *set = NULL;
    int i, code = 0;

    it_options(&o, r->url, LEASE_MS, 0);
    if (rl_client_new(&c, &o) != RL_OK)
        return 10;
    for (i = 0; i < 3; i++)
        if (rl_lock_new(&m[i], c, r->names[i]) != RL_OK)
            code = 11;
    if (code == 0 && rl_lockset_new(&set, m, 3) != RL_OK)
        code = 12;
    for (i = 0; code == 0 && i < PROC_ROUNDS; i++) {
        if (rl_lockset_try_acquire(set, 5000, RL_LEASE_WATCHDOG) != RL_OK) {
            code = 13;
            break;
        }
        if (atomic_fetch_add(&r->shared[0], 1) != 0)
            atomic_store(&r->shared[1], 1);
        atomic_fetch_sub(&r->shared[0], 1);
        if (rl_lockset_release(set) != RL_OK)
            code = 14;
    }
    rl_lockset_free(set);
    for (i = 0; i < 3; i++)
        rl_lock_free(m[i]);
    rl_client_free(c);
    return code;
}

static void test_opposite_orders_processes(void **state)
{
    it_env *e = *state;
    atomic_int *shared;
    proc_race r[2] = {
        { .url = e->redis->url, .names = { "pa", "pb", "pc" } },
        { .url = e->redis->url, .names = { "pc", "pb", "pa" } },
    };
    pid_t pid[2];
    int i;

    skip_under_tsan();
    shared = mmap(NULL, 2 * sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                  -1, 0);
    assert_true(shared != MAP_FAILED);
    atomic_init(&shared[0], 0);
    atomic_init(&shared[1], 0);
    for (i = 0; i < 2; i++) {
        r[i].shared = shared;
        pid[i] = rt_child_start(proc_racer, &r[i], 30);
        assert_true(pid[i] > 0);
    }
    for (i = 0; i < 2; i++)
        IT_EQ(rt_child_wait(pid[i], 25000), 0);
    IT_EQ(atomic_load(&shared[1]), 0);
    IT_EQ(hlen(e->rc, "pa") + hlen(e->rc, "pb") + hlen(e->rc, "pc"), 0);
    munmap(shared, 2 * sizeof *shared);
}

/* ---- reentry, release, the flag ---------------------------------------- */

static void test_reentry_release(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, LEASE_MS);
    rl_lock *m[2] = { it_lock(a, "r1"), it_lock(a, "r2") };
    rl_lockset *set = make_set(m, 2);

    IT_RC(rl_lockset_acquire(set), RL_OK);
    IT_RC(rl_lockset_try_acquire(set, 0, RL_LEASE_WATCHDOG), RL_OK);
    counts_are(m, 2, 2);
    IT_EQ(stored_count(e->rc, "r1"), 2);
    IT_EQ(stored_count(e->rc, "r2"), 2);
    IT_RC(rl_lockset_release(set), RL_OK);
    counts_are(m, 2, 1);
    IT_EQ(stored_count(e->rc, "r2"), 1);
    IT_RC(rl_lockset_release(set), RL_OK);
    counts_are(m, 2, 0);
    IT_EQ(hlen(e->rc, "r1") + hlen(e->rc, "r2"), 0);

    /* Not every member held: nothing changes. */
    IT_RC(rl_lockset_release(set), RL_ENOTOWNER);
    IT_RC(rl_lock_acquire(m[1]), RL_OK);
    IT_RC(rl_lockset_release(set), RL_ENOTOWNER);
    assert_non_null(strstr(rl_last_error(), "'r1'"));
    IT_EQ(rl_lock_hold_count(m[1]), 1);
    IT_EQ(stored_count(e->rc, "r2"), 1);
    IT_RC(rl_lock_release(m[1]), RL_OK);
    rl_lockset_free(set);
    rl_lock_free(m[0]);
    rl_lock_free(m[1]);
    rl_client_free(a);
}

/* A member force-released by another client: the set's flag rises (at
 * the holder's next renewal), and its release reports the loss while
 * still giving every member back. */
static void test_interrupted(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, 300), *b = it_client(e, LEASE_MS);
    rl_lock *m[3] = { it_lock(a, "f1"), it_lock(a, "f2"), it_lock(a, "f3") };
    rl_lock *force = it_lock(b, "f2");
    rl_lockset *set = make_set(m, 3);

    IT_RC(rl_lockset_acquire(set), RL_OK);
    IT_EQ(rl_lockset_interrupted(set), 0);
    IT_RC(rl_lock_force_release(force), RL_OK);
    IT_WAIT(rl_lockset_interrupted(set) == 1, 3000);
    IT_EQ(rl_lock_interrupted(m[0]), 0);
    IT_RC(rl_lockset_release(set), RL_ELOST);
    assert_non_null(strstr(rl_last_error(), "'f2'"));
    counts_are(m, 3, 0);
    IT_EQ(rl_lockset_interrupted(set), 0);
    IT_EQ(hlen(e->rc, "f1") + hlen(e->rc, "f2") + hlen(e->rc, "f3"), 0);
    rl_lockset_free(set);
    rl_lock_free(force);
    for (int i = 0; i < 3; i++)
        rl_lock_free(m[i]);
    rl_client_free(b);
    rl_client_free(a);
}

/* ---- a member of each kind --------------------------------------------- */

/* Plain, fair, both sides of one read-write name (given read first: the
 * set takes the write side first, else the read side would refuse it) and
 * a write side alone. */
static void test_kinds(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, LEASE_MS), *b = it_client(e, LEASE_MS);
    rl_lock *m[5] = {
        kind_lock(a, "k3", RL_KIND_READ), kind_lock(a, "k1", RL_KIND_PLAIN),
        kind_lock(a, "k2", RL_KIND_FAIR), kind_lock(a, "k3", RL_KIND_WRITE),
        kind_lock(a, "k4", RL_KIND_WRITE),
    };
    rl_lock *reader = kind_lock(b, "k3", RL_KIND_READ), *plain = it_lock(b, "k1");
    rl_lock *fair = kind_lock(b, "k2", RL_KIND_FAIR);
    rl_lockset *set = make_set(m, 5);

    IT_RC(rl_lockset_try_acquire(set, 0, RL_LEASE_WATCHDOG), RL_OK);
    counts_are(m, 5, 1);
    IT_RC(rl_lock_try_acquire(reader, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(rl_lock_try_acquire(plain, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(rl_lock_try_acquire(fair, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(rl_lockset_release(set), RL_OK);
    counts_are(m, 5, 0);
    IT_EQ(hlen(e->rc, "k1") + hlen(e->rc, "k2") + hlen(e->rc, "k4"), 0);
    IT_RC(rl_lock_try_acquire(reader, 0, RL_LEASE_WATCHDOG), RL_OK);

    /* b reads k3: a's set waits for it, in vain, and takes nothing. */
    IT_RC(rl_lockset_try_acquire(set, 100, RL_LEASE_WATCHDOG), RL_ETIMEDOUT);
    assert_non_null(strstr(rl_last_error(), "'k3'"));
    counts_are(m, 5, 0);
    IT_EQ(hlen(e->rc, "k1") + hlen(e->rc, "k2"), 0);
    IT_RC(rl_lock_release(reader), RL_OK);
    rl_lockset_free(set);
    rl_lock_free(reader);
    rl_lock_free(plain);
    rl_lock_free(fair);
    for (int i = 0; i < 5; i++)
        rl_lock_free(m[i]);
    rl_client_free(b);
    rl_client_free(a);
}

/* ---- options: fencing, lock-delay, replicas ---------------------------- */

/* With fencing and a lock-delay: each member has its own token, a reentry
 * by the set keeps it; a member given back (another busy) is released
 * cleanly, so its name is free at once, not after the delay; a member
 * whose lease was lost while the set waited blocks its name for the
 * delay, as every lost hold does. */
static void test_options(void **state)
{
    it_env *e = *state;
    rl_options o;
    rl_client *a, *b, *plain;
    rl_lock *m[2], *o1, *o2, *plain2;
    rl_lockset *set;
    unsigned long long t1 = 0, t2 = 0, again = 0;

    it_options(&o, e->redis->url, LEASE_MS, 0);
    o.fencing = 1;
    o.lock_delay_ms = 1500;
    a = it_client_opts(&o);
    b = it_client_opts(&o);
    m[0] = it_lock(a, "o1");
    m[1] = it_lock(a, "o2");
    o1 = it_lock(b, "o1");
    o2 = it_lock(b, "o2");
    set = make_set(m, 2);
    plain = it_client(e, LEASE_MS);
    plain2 = it_lock(plain, "o2");

    IT_RC(rl_lockset_acquire(set), RL_OK);
    IT_RC(rl_lock_token(&t1, m[0]), RL_OK);
    IT_RC(rl_lock_token(&t2, m[1]), RL_OK);
    assert_true(t1 > 0 && t2 > 0);
    IT_RC(rl_lockset_acquire(set), RL_OK);
    IT_RC(rl_lock_token(&again, m[0]), RL_OK);
    IT_EQ(again, t1);
    IT_RC(rl_lockset_release(set), RL_OK);
    IT_RC(rl_lockset_release(set), RL_OK);

    IT_RC(rl_lock_try_acquire(o2, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lockset_try_acquire(set, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(rl_lock_try_acquire(o1, 0, RL_LEASE_WATCHDOG), RL_OK);      /* no delay */
    IT_RC(rl_lock_token(&again, o1), RL_OK);
    assert_true(again > t1);
    IT_RC(rl_lock_release(o1), RL_OK);

    /* Lost while o2 was waited for (a 300 ms lease of a client with no
     * delay of its own): o1 is blocked for the delay. */
    IT_RC(rl_lock_release(o2), RL_OK);
    IT_RC(rl_lock_try_acquire(plain2, 0, 300), RL_OK);
    IT_RC(rl_lockset_try_acquire(set, 3000, 50), RL_ELOST);
    assert_non_null(strstr(rl_last_error(), "'o1'"));
    counts_are(m, 2, 0);
    IT_RC(rl_lock_try_acquire(o1, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(rl_lock_release(plain2), RL_ELOST);
    rl_lock_free(plain2);
    rl_client_free(plain);
    rl_lockset_free(set);
    rl_lock_free(o1);
    rl_lock_free(o2);
    rl_lock_free(m[0]);
    rl_lock_free(m[1]);
    rl_client_free(b);
    rl_client_free(a);
}

/* Replica acknowledgement no replica can give: the member is undone, and
 * the set holds nothing. */
static void test_replicas(void **state)
{
    it_env *e = *state;
    rl_options o;
    rl_client *a;
    rl_lock *m[2];
    rl_lockset *set;

    it_options(&o, e->redis->url, LEASE_MS, 0);
    o.wait_replicas = 1;
    o.wait_replicas_ms = 50;
    a = it_client_opts(&o);
    m[0] = it_lock(a, "rp1");
    m[1] = it_lock(a, "rp2");
    set = make_set(m, 2);
    IT_RC(rl_lockset_try_acquire(set, 0, RL_LEASE_WATCHDOG), RL_EREPLICA);
    assert_non_null(strstr(rl_last_error(), "'rp1'"));
    counts_are(m, 2, 0);
    IT_WAIT(hlen(e->rc, "rp1") + hlen(e->rc, "rp2") == 0, 3000);
    rl_lockset_free(set);
    rl_lock_free(m[0]);
    rl_lock_free(m[1]);
    rl_client_free(a);
}

/* ---- a give-back that fails -------------------------------------------- */

/* The release of the member taken first is answered with an error (Redis
 * applied it; the reply is replaced): the hold is given up all the same,
 * flagged and its count back to 0, and the call reports the busy member. */
static void test_give_back_fails(void **state)
{
    it_env *e = *state;
    it_proxied p;
    rl_client *b = it_client(e, LEASE_MS);
    rl_lock *m[2], *other = it_lock(b, "gb");
    rl_lockset *set;
    rl_stats st;

    it_proxied_open(&p, e, "ga", LEASE_MS, 0);
    m[0] = p.l;
    m[1] = it_lock(p.c, "gb");
    set = make_set(m, 2);
    IT_RC(rl_lock_try_acquire(other, 0, RL_LEASE_WATCHDOG), RL_OK);
    rt_proxy_mangle_next_reply_matching(p.proxy, "rl:{ga}:release", "-ERR injected\r\n",
                                        strlen("-ERR injected\r\n"));
    /* A wait: the one script finds gb busy and takes nothing, then the
     * ordered path takes ga and gives it back when gb's turn times out. */
    IT_RC(rl_lockset_try_acquire(set, 1, RL_LEASE_WATCHDOG), RL_ETIMEDOUT);
    assert_non_null(strstr(rl_last_error(), "'gb'"));
    IT_EQ(rt_proxy_mangled(p.proxy), 1);
    counts_are(m, 2, 0);
    IT_EQ(rl_interrupted(), 0);
    st = it_stats(p.c);
    IT_EQ(st.lost_other, 1);
    IT_EQ(st.holds, 0);
    IT_WAIT(hlen(e->rc, "ga") == 0, 3000);

    /* The set's release: the same rule. */
    IT_RC(rl_lock_release(other), RL_OK);
    IT_RC(rl_lockset_try_acquire(set, 0, RL_LEASE_WATCHDOG), RL_OK);
    rt_proxy_mangle_next_reply_matching(p.proxy, "rl:{gb}:release", "-ERR injected\r\n",
                                        strlen("-ERR injected\r\n"));
    IT_RC(rl_lockset_release(set), RL_EREDIS);
    assert_non_null(strstr(rl_last_error(), "'gb'"));
    counts_are(m, 2, 0);
    IT_WAIT(hlen(e->rc, "ga") + hlen(e->rc, "gb") == 0, 3000);

    /* The give-back's reply is lost (the connection dropped after Redis
     * applied it): read back, the release is known to be done; no flag. */
    IT_RC(rl_lock_try_acquire(other, 0, RL_LEASE_WATCHDOG), RL_OK);
    rt_proxy_drop_next_reply_matching(p.proxy, "rl:{ga}:release");
    IT_RC(rl_lockset_try_acquire(set, 1, RL_LEASE_WATCHDOG), RL_ETIMEDOUT);
    IT_EQ(rt_proxy_dropped(p.proxy), 1);
    counts_are(m, 2, 0);
    IT_EQ(hlen(e->rc, "ga"), 0);
    IT_EQ(it_stats(p.c).lost_other, 2);
    IT_RC(rl_lock_release(other), RL_OK);
    rl_lockset_free(set);
    rl_lock_free(m[1]);
    rl_lock_free(other);
    rl_client_free(b);
    it_proxied_close(&p);
}

/* ---- one script on one server and slot -------------------------------- */

#define FIXED_MS 5000           /* a lease the watchdog leaves alone */

/* EVALSHA calls answered without error (a script's first call on a
 * connection that has not loaded it answers NOSCRIPT, and is sent again). */
static long long evalsha(redisContext *rc)
{
    long long n = rt_redis_cmdstat_ok(rc, "evalsha");

    assert_true(n >= 0);
    return n;
}

/* Plain members on one server: one EVALSHA takes them all, a member the
 * thread holds included (entered again); a busy member with no wait takes
 * nothing and costs that one script; with a wait, the ordered path takes
 * the set when the member comes free. Counts, stats and Redis agree. */
static void test_one_script(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, LEASE_MS), *b = it_client(e, LEASE_MS);
    rl_lock *m[4] = { it_lock(a, "o1"), it_lock(a, "o2"), it_lock(a, "o3"), it_lock(a, "o4") };
    rl_lock *other = it_lock(b, "o3");
    rl_lockset *set = make_set(m, 4);
    rl_stats st0 = it_stats(a), st;
    long long calls = evalsha(e->rc);

    IT_RC(rl_lockset_try_acquire(set, 0, FIXED_MS), RL_OK);
    IT_EQ(evalsha(e->rc) - calls, 1);
    counts_are(m, 4, 1);
    IT_EQ(stored_count(e->rc, "o4"), 1);
    IT_RANGE(rt_redis_pttl(e->rc, "rl:{o4}", 7), 1, FIXED_MS);
    st = it_stats(a);
    IT_EQ(st.acquisitions - st0.acquisitions, 4);
    IT_EQ(st.holds, 4);
    IT_RC(rl_lockset_release(set), RL_OK);

    /* Reentry: o2 held before the call, entered again by the same script. */
    IT_RC(rl_lock_try_acquire(m[1], 0, FIXED_MS), RL_OK);
    calls = evalsha(e->rc);
    IT_RC(rl_lockset_try_acquire(set, 0, FIXED_MS), RL_OK);
    IT_EQ(evalsha(e->rc) - calls, 1);
    IT_EQ(rl_lock_hold_count(m[1]), 2);
    IT_EQ(stored_count(e->rc, "o2"), 2);
    IT_EQ(it_stats(a).reentries - st.reentries, 1);
    IT_RC(rl_lockset_release(set), RL_OK);
    IT_EQ(stored_count(e->rc, "o2"), 1);
    /* A hold of another lease: entered again with its own (ordered path),
     * never cut short to the set's. */
    calls = evalsha(e->rc);
    IT_RC(rl_lockset_try_acquire(set, 0, 500), RL_OK);
    IT_EQ(evalsha(e->rc) - calls, 4);
    IT_RANGE(rt_redis_pttl(e->rc, "rl:{o2}", 7), 1000, FIXED_MS);
    IT_RC(rl_lockset_release(set), RL_OK);
    IT_RC(rl_lock_release(m[1]), RL_OK);

    /* Busy, no wait: nothing written, one script, one busy answer. */
    IT_RC(rl_lock_try_acquire(other, 0, 300), RL_OK);
    st = it_stats(a);
    calls = evalsha(e->rc);
    IT_RC(rl_lockset_try_acquire(set, 0, FIXED_MS), RL_EBUSY);
    IT_EQ(evalsha(e->rc) - calls, 1);
    assert_non_null(strstr(rl_last_error(), "'o3'"));
    counts_are(m, 4, 0);
    IT_EQ(hlen(e->rc, "o1") + hlen(e->rc, "o2") + hlen(e->rc, "o4"), 0);
    IT_EQ(it_stats(a).busy - st.busy, 1);

    /* Busy, with a wait: the ordered path waits for o3 (its lease). */
    IT_RC(rl_lockset_try_acquire(set, 3000, RL_LEASE_WATCHDOG), RL_OK);
    counts_are(m, 4, 1);
    IT_RC(rl_lockset_release(set), RL_OK);
    IT_EQ(it_stats(a).holds, 0);
    rl_lockset_free(set);
    for (int i = 0; i < 4; i++)
        rl_lock_free(m[i]);
    rl_lock_free(other);
    rl_client_free(b);
    rl_client_free(a);
}

/* A set of RL_LOCKSET_MAX members, one held already: one script of
 * 2 x RL_LOCKSET_MAX + 4 arguments (command.c's limit) takes them all. */
static void test_one_script_full(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, LEASE_MS);
    rl_lock *m[RL_LOCKSET_MAX];
    rl_lockset *set;
    char name[16];
    long long calls;
    size_t i;

    for (i = 0; i < RL_LOCKSET_MAX; i++) {
        snprintf(name, sizeof name, "f%02zu", i);
        m[i] = it_lock(a, name);
    }
    set = make_set(m, RL_LOCKSET_MAX);
    IT_RC(rl_lock_try_acquire(m[RL_LOCKSET_MAX - 1], 0, FIXED_MS), RL_OK);
    calls = evalsha(e->rc);
    IT_RC(rl_lockset_try_acquire(set, 0, FIXED_MS), RL_OK);
    IT_EQ(evalsha(e->rc) - calls, 1);
    counts_are(m, RL_LOCKSET_MAX - 1, 1);
    IT_EQ(rl_lock_hold_count(m[RL_LOCKSET_MAX - 1]), 2);
    IT_EQ(stored_count(e->rc, "f00") + stored_count(e->rc, "f63"), 3);
    IT_RC(rl_lockset_release(set), RL_OK);
    IT_RC(rl_lock_release(m[RL_LOCKSET_MAX - 1]), RL_OK);
    IT_EQ(hlen(e->rc, "f00") + hlen(e->rc, "f63"), 0);
    IT_EQ(it_stats(a).holds, 0);
    rl_lockset_free(set);
    for (i = 0; i < RL_LOCKSET_MAX; i++)
        rl_lock_free(m[i]);
    rl_client_free(a);
}

/* The one script's reply is lost (the connection drops after Redis ran
 * it): every member's count is read back, and the set is held whole. */
static void test_one_script_lost_reply(void **state)
{
    it_env *e = *state;
    it_proxied p;
    rl_lock *m[3];
    rl_lockset *set;
    rl_stats st0;

    it_proxied_open(&p, e, "la", LEASE_MS, 0);
    m[0] = p.l;
    m[1] = it_lock(p.c, "lb");
    m[2] = it_lock(p.c, "lc");
    set = make_set(m, 3);
    st0 = it_stats(p.c);
    /* Only the set's script names rl:{lc} ahead of a release. */
    rt_proxy_drop_next_reply_matching(p.proxy, "rl:{lc}");
    IT_RC(rl_lockset_try_acquire(set, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rt_proxy_dropped(p.proxy), 1);
    counts_are(m, 3, 1);
    IT_EQ(stored_count(e->rc, "la") + stored_count(e->rc, "lc"), 2);
    IT_EQ(it_stats(p.c).replies_resolved - st0.replies_resolved, 3);
    IT_EQ(it_stats(p.c).acquisitions - st0.acquisitions, 3);
    IT_EQ(rl_lockset_interrupted(set), 0);
    IT_RC(rl_lockset_release(set), RL_OK);
    IT_EQ(hlen(e->rc, "la") + hlen(e->rc, "lb") + hlen(e->rc, "lc"), 0);
    rl_lockset_free(set);
    rl_lock_free(m[1]);
    rl_lock_free(m[2]);
    it_proxied_close(&p);
}

/* The client is shut down while the set's one script is in flight (its
 * reply held by the proxy): the script took both members, one new and one
 * the thread held (entered again); the shutdown waits for the call, and
 * each member's acquisition then finds the client closing. The call
 * returns RL_ECANCELED and the shutdown leaves neither field behind. */
typedef struct shut_set {
    rl_lockset *set;
    rl_lock *held;
    rt_proxy *proxy;
    rl_client *c;
    int rc;
    atomic_int done;
} shut_set;

static void *take_set(void *arg)
{
    shut_set *s = arg;

    s->rc = rl_lock_try_acquire(s->held, 0, RL_LEASE_WATCHDOG);
    if (s->rc == RL_OK) {
        rt_proxy_hold_next_reply_matching(s->proxy, "rl:{sa}");
        s->rc = rl_lockset_try_acquire(s->set, 0, RL_LEASE_WATCHDOG);
    }
    rl_interrupted();
    atomic_store(&s->done, 1);
    return NULL;
}

static void *shut_down(void *arg)
{
    shut_set *s = arg;

    s->rc = rl_client_shutdown(s->c);
    return NULL;
}

static void test_one_script_shutdown(void **state)
{
    it_env *e = *state;
    it_proxied p;
    rl_lock *m[2], *probe;
    shut_set s = { 0 }, sd = { 0 };
    pthread_t th, sh;
    int rc;

    it_proxied_open(&p, e, "sa", LEASE_MS, 0);
    m[0] = p.l;
    m[1] = it_lock(p.c, "sb");
    probe = it_lock(p.c, "sz");
    s.set = make_set(m, 2);
    s.held = m[1];
    s.proxy = p.proxy;
    IT_RC(rl_lockset_try_acquire(s.set, 0, RL_LEASE_WATCHDOG), RL_OK);  /* the script loaded */
    IT_RC(rl_lockset_release(s.set), RL_OK);
    assert_int_equal(pthread_create(&th, NULL, take_set, &s), 0);
    IT_WAIT(rt_proxy_held(p.proxy) > 0, 3000);
    IT_EQ(hlen(e->rc, "sa"), 1);
    IT_EQ(stored_count(e->rc, "sb"), 2);
    sd.c = p.c;
    assert_int_equal(pthread_create(&sh, NULL, shut_down, &sd), 0);
    /* The shutdown has begun once a new call is refused (the probe's
     * release too, when it came between: the shutdown drops that hold). */
    while ((rc = rl_lock_try_acquire(probe, 0, 500)) == RL_OK)
        if ((rc = rl_lock_release(probe)) != RL_OK)
            break;
    IT_RC(rc, RL_ECANCELED);
    assert_int_equal(rt_proxy_unhold(p.proxy), 0);
    IT_WAIT(atomic_load(&s.done), 5000);
    pthread_join(th, NULL);
    pthread_join(sh, NULL);
    IT_RC(s.rc, RL_ECANCELED);
    IT_RC(sd.rc, RL_OK);
    IT_EQ(hlen(e->rc, "sa") + hlen(e->rc, "sb") + hlen(e->rc, "sz"), 0);
    rl_interrupted();       /* the probe's hold, if the shutdown dropped one */
    rl_lockset_free(s.set);
    rl_lock_free(m[1]);
    rl_lock_free(probe);
    it_proxied_close(&p);
}

/* ---- bad input --------------------------------------------------------- */

static void test_bad_input(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, LEASE_MS), *b = it_client(e, LEASE_MS);
    rl_lock *m[3] = { it_lock(a, "b1"), it_lock(a, "b2"), it_lock(a, "b1") };
    rl_lock *r = kind_lock(b, "b3", RL_KIND_READ), *w = kind_lock(b, "b3", RL_KIND_WRITE);
    rl_lock *many[RL_LOCKSET_MAX + 1];
    rl_lock *mixed[2] = { m[0], r };
    rl_lock *holes[2] = { m[0], NULL };
    rl_lock *sides[3] = { r, w, NULL };
    rl_lockset *set = (rl_lockset *)&e, *good;
    int i;

    for (i = 0; i <= RL_LOCKSET_MAX; i++)
        many[i] = m[0];
    IT_RC(rl_lockset_new(NULL, m, 2), RL_EINVAL);
    IT_RC(rl_lockset_new(&set, NULL, 2), RL_EINVAL);
    IT_RC(rl_lockset_new(&set, m, 0), RL_EINVAL);
    IT_RC(rl_lockset_new(&set, many, RL_LOCKSET_MAX + 1), RL_EINVAL);
    IT_RC(rl_lockset_new(&set, holes, 2), RL_EINVAL);
    IT_RC(rl_lockset_new(&set, mixed, 2), RL_EINVAL);
    IT_RC(rl_lockset_new(&set, m, 3), RL_EINVAL);         /* b1 twice */
    assert_non_null(strstr(rl_last_error(), "'b1'"));
    IT_RC(rl_lockset_new(&set, many, 2), RL_EINVAL);
    assert_ptr_equal(set, (rl_lockset *)&e);
    sides[2] = kind_lock(b, "b3", RL_KIND_READ);          /* one name and side twice */
    IT_RC(rl_lockset_new(&set, sides, 3), RL_EINVAL);
    assert_ptr_equal(set, (rl_lockset *)&e);

    IT_RC(rl_lockset_try_acquire(NULL, 0, RL_LEASE_WATCHDOG), RL_EINVAL);
    IT_RC(rl_lockset_acquire(NULL), RL_EINVAL);
    IT_RC(rl_lockset_release(NULL), RL_EINVAL);
    IT_RC(rl_lockset_interrupted(NULL), RL_EINVAL);
    rl_lockset_free(NULL);

    good = make_set(m, 2);
    IT_RC(rl_lockset_try_acquire(good, -5, RL_LEASE_WATCHDOG), RL_EINVAL);
    IT_RC(rl_lockset_try_acquire(good, 0, 3), RL_EINVAL);  /* lease under the minimum */
    IT_RC(rl_lockset_try_acquire(good, RL_TIME_MAX_MS + 1L, RL_LEASE_WATCHDOG), RL_EINVAL);
    counts_are(m, 2, 0);
    IT_EQ(hlen(e->rc, "b1") + hlen(e->rc, "b2"), 0);
    IT_RC(rl_lockset_release(good), RL_ENOTOWNER);

    /* A shut-down client: no new set, and a set of it takes nothing. */
    IT_RC(rl_client_shutdown(a), RL_OK);
    IT_RC(rl_lockset_new(&set, m, 2), RL_ECANCELED);
    IT_RC(rl_lockset_try_acquire(good, 0, RL_LEASE_WATCHDOG), RL_ECANCELED);
    IT_EQ(hlen(e->rc, "b1"), 0);
    /* A freed client: its handles are still valid memory, and answer
     * RL_ECANCELED like every call on them. */
    rl_client_free(b);
    IT_RC(rl_lockset_new(&set, sides, 2), RL_ECANCELED);
    assert_ptr_equal(set, (rl_lockset *)&e);
    rl_lockset_free(good);
    rl_lock_free(sides[2]);
    rl_lock_free(r);
    rl_lock_free(w);
    for (i = 0; i < 3; i++)
        rl_lock_free(m[i]);
    rl_client_free(a);
}

/* ---- the review's intersections ----------------------------------------- */

/* A semaphore's handle is a member like a lock's: the set takes one permit
 * of it, gives it back when another member is busy, and releases it with
 * the set. A thread holding 2 permits re-enters with 2, not 1: the set is
 * refused (RL_EINVAL) and nothing changes. */
static void test_semaphore_member(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, LEASE_MS), *b = it_client(e, LEASE_MS);
    rl_lock *m[2] = { NULL, it_lock(a, "sp") }, *s2 = NULL, *other = it_lock(b, "sp");
    rl_lockset *set;

    IT_RC(rl_semaphore_new(&m[0], a, "ss", 2, 2), RL_OK);
    IT_RC(rl_semaphore_new(&s2, b, "ss", 2, 2), RL_OK);
    set = make_set(m, 2);
    IT_RC(rl_lockset_try_acquire(set, 0, RL_LEASE_WATCHDOG), RL_OK);
    counts_are(m, 2, 1);
    IT_RC(rl_semaphore_acquire(s2, 2, 0, RL_LEASE_WATCHDOG), RL_EBUSY);   /* 1 of 2 taken */
    IT_RC(rl_semaphore_acquire(s2, 1, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(s2), RL_OK);
    IT_RC(rl_lockset_release(set), RL_OK);
    counts_are(m, 2, 0);

    /* Another member busy: the permit comes back at once. */
    IT_RC(rl_lock_try_acquire(other, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lockset_try_acquire(set, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    counts_are(m, 2, 0);
    IT_RC(rl_semaphore_acquire(s2, 2, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(s2), RL_OK);
    IT_RC(rl_lock_release(other), RL_OK);

    /* Held with 2 permits by the thread: the set does not take a third. */
    IT_RC(rl_semaphore_acquire(m[0], 2, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lockset_try_acquire(set, 0, RL_LEASE_WATCHDOG), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "'ss'"));
    IT_EQ(rl_lock_hold_count(m[0]), 1);
    IT_EQ(rl_lock_hold_count(m[1]), 0);
    IT_EQ(hlen(e->rc, "sp"), 0);
    IT_RC(rl_lock_release(m[0]), RL_OK);
    rl_lockset_free(set);
    rl_lock_free(s2);
    rl_lock_free(other);
    rl_lock_free(m[0]);
    rl_lock_free(m[1]);
    rl_client_free(b);
    rl_client_free(a);
}

/* A set of a semaphore and a plain lock, the semaphore force-released by
 * another client while held: the set's flag rises (the plain member's
 * does not); its release gives back both, says RL_ELOST and names the
 * semaphore; nothing is left in Redis, and the other client takes both
 * permits. */
static void test_semaphore_member_lost(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, 300), *b = it_client(e, LEASE_MS);
    rl_lock *m[2] = { NULL, it_lock(a, "lp") }, *force = NULL;
    rl_lockset *set;

    IT_RC(rl_semaphore_new(&m[0], a, "ls", 2, 2), RL_OK);
    IT_RC(rl_semaphore_new(&force, b, "ls", 2, 2), RL_OK);
    set = make_set(m, 2);
    IT_RC(rl_lockset_acquire(set), RL_OK);
    IT_EQ(rl_lockset_interrupted(set), 0);
    IT_RC(rl_lock_force_release(force), RL_OK);
    IT_WAIT(rl_lockset_interrupted(set) == 1, 3000);
    IT_EQ(rl_lock_interrupted(m[1]), 0);
    IT_RC(rl_lockset_release(set), RL_ELOST);
    assert_non_null(strstr(rl_last_error(), "'ls'"));
    counts_are(m, 2, 0);
    IT_EQ(rl_lockset_interrupted(set), 0);
    IT_EQ(hlen(e->rc, "ls") + hlen(e->rc, "lp"), 0);
    IT_RC(rl_semaphore_acquire(force, 2, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(force), RL_OK);
    rl_lockset_free(set);
    rl_lock_free(force);
    rl_lock_free(m[0]);
    rl_lock_free(m[1]);
    rl_client_free(b);
    rl_client_free(a);
}

/* Keys of a fair name's queue in Redis (0: none). */
static long long queue_keys(redisContext *rc, const char *name)
{
    redisReply *r = redisCommand(rc, "EXISTS rl:{%s}:queue rl:{%s}:queue:t", name, name);
    long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

    freeReplyObject(r);
    return n;
}

/* A set whose fair member waited in Redis's queue and ran out of time
 * leaves no place behind (another owner would wait for it until it ran
 * out), and gives back the fair member it took first. */
static void test_fair_gives_up(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, LEASE_MS), *b = it_client(e, LEASE_MS);
    rl_lock *m[2] = { kind_lock(a, "qa", RL_KIND_FAIR), kind_lock(a, "qb", RL_KIND_FAIR) };
    rl_lock *other = kind_lock(b, "qb", RL_KIND_FAIR), *first = kind_lock(b, "qa", RL_KIND_FAIR);
    rl_lockset *set = make_set(m, 2);

    IT_RC(rl_lock_try_acquire(other, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lockset_try_acquire(set, 300, RL_LEASE_WATCHDOG), RL_ETIMEDOUT);
    counts_are(m, 2, 0);
    IT_EQ(queue_keys(e->rc, "qa") + queue_keys(e->rc, "qb"), 0);
    IT_EQ(hlen(e->rc, "qa"), 0);
    IT_RC(rl_lock_try_acquire(first, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(first), RL_OK);
    IT_RC(rl_lock_release(other), RL_OK);
    rl_lockset_free(set);
    rl_lock_free(other);
    rl_lock_free(first);
    rl_lock_free(m[0]);
    rl_lock_free(m[1]);
    rl_client_free(b);
    rl_client_free(a);
}

/* The caller's handles freed while the set lives: the set still works
 * (it keeps handles of its own). */
static void test_member_freed(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, LEASE_MS);
    rl_lock *m[2] = { it_lock(a, "h1"), it_lock(a, "h2") }, *again;
    rl_lockset *set = make_set(m, 2);

    rl_lock_free(m[0]);
    rl_lock_free(m[1]);
    again = it_lock(a, "h2");
    IT_RC(rl_lockset_try_acquire(set, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(hlen(e->rc, "h1") + hlen(e->rc, "h2"), 2);
    IT_EQ(rl_lock_hold_count(again), 1);
    IT_EQ(rl_lockset_interrupted(set), 0);
    IT_RC(rl_lockset_release(set), RL_OK);
    IT_EQ(hlen(e->rc, "h1") + hlen(e->rc, "h2"), 0);
    rl_lockset_free(set);
    rl_lock_free(again);
    rl_client_free(a);
}

/* One name in two sets of one thread: the second set re-enters it, and
 * each set's release gives back its own hold. */
static void test_two_sets(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, LEASE_MS);
    rl_lock *x = it_lock(a, "tx"), *y = it_lock(a, "ty"), *z = it_lock(a, "tz");
    rl_lock *ma[2] = { x, y }, *mb[2] = { z, y };
    rl_lockset *sa = make_set(ma, 2), *sb = make_set(mb, 2);

    IT_RC(rl_lockset_acquire(sa), RL_OK);
    IT_RC(rl_lockset_acquire(sb), RL_OK);
    IT_EQ(rl_lock_hold_count(y), 2);
    IT_EQ(stored_count(e->rc, "ty"), 2);
    IT_RC(rl_lockset_release(sa), RL_OK);
    IT_EQ(rl_lock_hold_count(x), 0);
    IT_EQ(rl_lock_hold_count(y), 1);
    IT_RC(rl_lockset_release(sa), RL_ENOTOWNER);
    IT_RC(rl_lockset_release(sb), RL_OK);
    IT_EQ(hlen(e->rc, "tx") + hlen(e->rc, "ty") + hlen(e->rc, "tz"), 0);
    rl_lockset_free(sa);
    rl_lockset_free(sb);
    rl_lock_free(x);
    rl_lock_free(y);
    rl_lock_free(z);
    rl_client_free(a);
}

/* The client is freed (not only shut down) while a set waits: the call
 * returns RL_ECANCELED and nothing of the set stays in Redis. */
static void *wait_set_only(void *arg)
{
    waiting_set *w = arg;

    w->rc = rl_lockset_try_acquire(w->set, RL_WAIT_FOREVER, RL_LEASE_WATCHDOG);
    atomic_store(&w->done, 1);
    return NULL;
}

static void test_free_while_waiting(void **state)
{
    it_env *e = *state;
    rl_client *a = it_client(e, LEASE_MS), *b = it_client(e, LEASE_MS);
    rl_lock *m[2] = { it_lock(a, "v1"), it_lock(a, "v2") };
    rl_lock *other = it_lock(b, "v2");
    waiting_set w = { .set = make_set(m, 2), .first = m[0] };
    pthread_t th;

    IT_RC(rl_lock_try_acquire(other, 0, RL_LEASE_WATCHDOG), RL_OK);
    assert_int_equal(pthread_create(&th, NULL, wait_set_only, &w), 0);
    IT_WAIT(it_stats(a).waiters == 1, 3000);
    IT_EQ(hlen(e->rc, "v1"), 1);
    rl_client_free(a);
    IT_WAIT(atomic_load(&w.done), 3000);
    pthread_join(th, NULL);
    IT_RC(w.rc, RL_ECANCELED);
    IT_EQ(hlen(e->rc, "v1"), 0);
    IT_RC(rl_lockset_try_acquire(w.set, 0, RL_LEASE_WATCHDOG), RL_ECANCELED);
    IT_RC(rl_lock_release(other), RL_OK);
    rl_lockset_free(w.set);
    rl_lock_free(other);
    rl_lock_free(m[0]);
    rl_lock_free(m[1]);
    rl_client_free(b);
}

/* fork(): the child is a new owner. The parent's set is held by the
 * parent: in the child it is neither held, nor releasable, nor free. */
typedef struct fork_ctx {
    rl_lockset *set;
    rl_lock *m[2];
} fork_ctx;

static int fork_child(void *arg)
{
    fork_ctx *x = arg;

    if (rl_lockset_interrupted(x->set) != 0 || rl_lock_hold_count(x->m[0]) != 0)
        return 1;
    if (rl_lockset_release(x->set) != RL_ENOTOWNER)
        return 2;
    if (rl_lockset_try_acquire(x->set, 0, RL_LEASE_WATCHDOG) != RL_EBUSY)
        return 3;
    if (rl_lock_hold_count(x->m[0]) != 0 || rl_lock_hold_count(x->m[1]) != 0)
        return 4;
    return 0;
}

static void test_fork(void **state)
{
    it_env *e = *state;
    rl_client *a;
    fork_ctx x;
    pid_t pid;

    skip_under_tsan();
    a = it_client(e, LEASE_MS);
    x.m[0] = it_lock(a, "fk1");
    x.m[1] = it_lock(a, "fk2");
    x.set = make_set(x.m, 2);
    IT_RC(rl_lockset_acquire(x.set), RL_OK);
    pid = rt_child_start(fork_child, &x, 30);
    assert_true(pid > 0);
    IT_EQ(rt_child_wait(pid, 20000), 0);
    counts_are(x.m, 2, 1);
    IT_EQ(hlen(e->rc, "fk1") + hlen(e->rc, "fk2"), 2);
    IT_RC(rl_lockset_release(x.set), RL_OK);
    IT_EQ(hlen(e->rc, "fk1") + hlen(e->rc, "fk2"), 0);
    rl_lockset_free(x.set);
    rl_lock_free(x.m[0]);
    rl_lock_free(x.m[1]);
    rl_client_free(a);
}

/* ---- Cluster across slots ---------------------------------------------- */

/* Names on at least two masters: the set is taken in order and given back
 * across nodes; nothing stays on any node. */
/* EVALSHA calls on the masters of four names (rc[i] on master[i]). */
static long long evalsha_masters(redisContext **rc, const int *master)
{
    long long n = 0;
    int i, j;

    for (i = 0; i < 4; i++) {
        for (j = 0; j < i && master[j] != master[i]; j++)
            ;
        if (j == i)
            n += evalsha(rc[i]);
    }
    return n;
}

/* Names sharing a hash tag ("t}a": the tag is "t"), one slot: one script
 * on its master takes the set (ordered_calls: what the same set across
 * slots cost, one per member). */
static void one_slot(it_cluster *ic, rl_client *a, long long ordered_calls)
{
    static const char *const names[4] = { "t}a", "t}b", "t}c", "t}d" };
    rl_lock *m[4];
    rl_lockset *set;
    redisContext *rc;
    long long calls;
    int i;

    rc = rt_cluster_connect(ic->cl, rt_cluster_master_of(ic->cl, rt_cluster_keyslot(ic->cl, "t",
                                                                                        1)));
    assert_non_null(rc);
    for (i = 0; i < 4; i++)
        m[i] = it_lock(a, names[i]);
    set = make_set(m, 4);
    calls = evalsha(rc);
    IT_RC(rl_lockset_try_acquire(set, 0, FIXED_MS), RL_OK);
    IT_EQ(evalsha(rc) - calls, 1);
    IT_EQ(ordered_calls, 4);
    counts_are(m, 4, 1);
    IT_EQ(hlen(rc, "t}c"), 1);
    IT_RC(rl_lockset_release(set), RL_OK);
    IT_EQ(hlen(rc, "t}a") + hlen(rc, "t}d"), 0);
    rl_lockset_free(set);
    for (i = 0; i < 4; i++)
        rl_lock_free(m[i]);
    redisFree(rc);
}

static void test_cluster_slots(void **state)
{
    it_cluster *ic = *state;
    static const char *const names[4] = { "ca", "cb", "cc", "cd" };
    rl_options o;
    rl_client *a, *b;
    rl_lock *m[4], *other;
    rl_lockset *set;
    redisContext *rc[4];
    int master[4], spread = 0, i;
    long long calls;
    char key[64];

    for (i = 0; i < 4; i++) {
        size_t kl = it_key(key, sizeof key, "rl:", names[i], 2, "");
        master[i] = rt_cluster_master_of(ic->cl, rt_cluster_keyslot(ic->cl, key, kl));
        assert_true(master[i] >= 0);
        spread |= 1 << master[i];
        rc[i] = rt_cluster_connect(ic->cl, master[i]);
        assert_non_null(rc[i]);
    }
    assert_true((spread & (spread - 1)) != 0);      /* two masters at least */
    it_options(&o, ic->cl->url, LEASE_MS, 0);
    a = it_client_opts(&o);
    b = it_client_opts(&o);
    for (i = 0; i < 4; i++)
        m[i] = it_lock(a, names[i]);
    other = it_lock(b, "cd");
    set = make_set(m, 4);

    IT_RC(rl_lock_try_acquire(other, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lockset_try_acquire(set, 50, RL_LEASE_WATCHDOG), RL_ETIMEDOUT);
    counts_are(m, 4, 0);
    for (i = 0; i < 3; i++)
        IT_EQ(hlen(rc[i], names[i]), 0);
    IT_RC(rl_lock_release(other), RL_OK);
    IT_RC(rl_lockset_try_acquire(set, 0, RL_LEASE_WATCHDOG), RL_OK);
    for (i = 0; i < 4; i++)
        IT_EQ(hlen(rc[i], names[i]), 1);
    IT_RC(rl_lockset_release(set), RL_OK);
    for (i = 0; i < 4; i++)
        IT_EQ(hlen(rc[i], names[i]), 0);
    /* Across slots: one script per member (the ordered path). */
    calls = evalsha_masters(rc, master);
    IT_RC(rl_lockset_try_acquire(set, 0, FIXED_MS), RL_OK);
    calls = evalsha_masters(rc, master) - calls;
    IT_RC(rl_lockset_release(set), RL_OK);
    one_slot(ic, a, calls);
    for (i = 0; i < 4; i++) {
        redisFree(rc[i]);
        rl_lock_free(m[i]);
    }
    rl_lockset_free(set);
    rl_lock_free(other);
    rl_client_free(b);
    rl_client_free(a);
}

/* A member's slot migrates while the set is held: the set's release
 * finds it on its new master (MOVED), and a set taken while the slot is
 * half moved (keys still on the source, ASK for the rest) is all on one
 * side or the other. */
static void test_cluster_migrating(void **state)
{
    it_cluster *ic = *state;
    static const char *const names[2] = { "ma", "mb" };
    rl_options o;
    rl_client *a;
    rl_lock *m[2];
    rl_lockset *set;
    int slot, from, to;
    char key[64];
    size_t kl = it_key(key, sizeof key, "rl:", names[1], 2, "");

    slot = rt_cluster_keyslot(ic->cl, key, kl);
    from = rt_cluster_master_of(ic->cl, slot);
    to = (from + 1) % 3;
    it_options(&o, ic->cl->url, LEASE_MS, 0);
    a = it_client_opts(&o);
    m[0] = it_lock(a, names[0]);
    m[1] = it_lock(a, names[1]);
    set = make_set(m, 2);

    IT_RC(rl_lockset_acquire(set), RL_OK);
    assert_int_equal(rt_cluster_migrate_slot(ic->cl, slot, to), 0);
    IT_RC(rl_lockset_try_acquire(set, 0, RL_LEASE_WATCHDOG), RL_OK);   /* reentry */
    counts_are(m, 2, 2);
    IT_RC(rl_lockset_release(set), RL_OK);
    IT_RC(rl_lockset_release(set), RL_OK);
    counts_are(m, 2, 0);
    IT_EQ(rl_lockset_interrupted(set), 0);

    /* Half moved back: the set's member is new on the target (ASK). */
    assert_int_equal(rt_cluster_slot_begin(ic->cl, slot, from), 0);
    IT_RC(rl_lockset_try_acquire(set, 2000, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lockset_release(set), RL_OK);
    assert_int_equal(rt_cluster_slot_move_keys(ic->cl, slot), 0);
    assert_int_equal(rt_cluster_slot_finish(ic->cl, slot, from), 0);
    IT_RC(rl_lockset_try_acquire(set, 2000, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lockset_release(set), RL_OK);
    counts_are(m, 2, 0);
    rl_lockset_free(set);
    rl_lock_free(m[0]);
    rl_lock_free(m[1]);
    rl_client_free(a);
}

/* ---- Redlock once ------------------------------------------------------ */

static rt_redis *node[3];
static redisContext *nrc[3];

static int redlock_setup(void **state)
{
    (void)state;
    return rt_redis_open_all("it_lockset", 3, node, nrc);
}

static int redlock_teardown(void **state)
{
    (void)state;
    rt_redis_close_all(3, node, nrc);
    return 0;
}

static void test_redlock(void **state)
{
    char url[160];
    rl_options o;
    rl_client *a, *b;
    rl_lock *m[2], *n[2];
    rl_lockset *sa, *sb;
    int i;

    (void)state;
    snprintf(url, sizeof url, "redlock://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
             node[0]->port, node[1]->port, node[2]->port);
    it_options(&o, url, LEASE_MS, 0);
    a = it_client_opts(&o);
    b = it_client_opts(&o);
    m[0] = it_lock(a, "lc");
    m[1] = it_lock(a, "lb");
    n[0] = it_lock(b, "lc");
    n[1] = it_lock(b, "la");
    sa = make_set(m, 2);
    sb = make_set(n, 2);
    IT_RC(rl_lockset_try_acquire(sa, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lockset_try_acquire(sb, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    assert_non_null(strstr(rl_last_error(), "'lc'"));
    counts_are(n, 2, 0);
    for (i = 0; i < 3; i++)
        IT_EQ(hlen(nrc[i], "la"), 0);   /* taken first, given back */
    IT_RC(rl_lockset_release(sa), RL_OK);
    IT_RC(rl_lockset_try_acquire(sb, 1000, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lockset_release(sb), RL_OK);
    for (i = 0; i < 3; i++)
        IT_EQ(hlen(nrc[i], "la") + hlen(nrc[i], "lb") + hlen(nrc[i], "lc"), 0);

    /* A node stopped: the set is taken on the majority, given back when
     * another member is busy, released whole. */
    assert_int_equal(rt_redis_pause(node[2]), 0);
    IT_RC(rl_lock_try_acquire(m[1], 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lockset_try_acquire(sb, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lockset_try_acquire(sa, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    assert_non_null(strstr(rl_last_error(), "'lc'"));
    IT_EQ(rl_lock_hold_count(m[1]), 1);
    IT_EQ(rl_lock_hold_count(m[0]), 0);
    IT_RC(rl_lockset_release(sb), RL_OK);
    IT_RC(rl_lock_release(m[1]), RL_OK);
    for (i = 0; i < 2; i++)
        IT_EQ(hlen(nrc[i], "la") + hlen(nrc[i], "lb") + hlen(nrc[i], "lc"), 0);
    assert_int_equal(rt_redis_resume(node[2]), 0);
    rl_lockset_free(sa);
    rl_lockset_free(sb);
    for (i = 0; i < 2; i++) {
        rl_lock_free(m[i]);
        rl_lock_free(n[i]);
    }
    rl_client_free(b);
    rl_client_free(a);
}

int main(void)
{
    const struct CMUnitTest single[] = {
        cmocka_unit_test_setup_teardown(test_all_or_nothing, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_one_deadline, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_deadline_local, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_lost_meanwhile, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_while_waiting, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_opposite_orders, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_opposite_orders_processes, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_reentry_release, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_interrupted, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_kinds, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_options, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_replicas, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_give_back_fails, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_one_script, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_one_script_lost_reply, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_one_script_full, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_one_script_shutdown, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_bad_input, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_semaphore_member, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_semaphore_member_lost, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_fair_gives_up, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_two_sets, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_free_while_waiting, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_fork, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_member_freed, it_setup, it_teardown),
    };
    const struct CMUnitTest cluster[] = {
        cmocka_unit_test(test_cluster_slots),
        cmocka_unit_test(test_cluster_migrating),
    };
    const struct CMUnitTest redlock[] = {
        cmocka_unit_test(test_redlock),
    };
    int failed;

    failed = cmocka_run_group_tests_name("lockset", single, NULL, NULL);
    failed += cmocka_run_group_tests_name("lockset_cluster", cluster, it_cluster_setup,
                                          it_cluster_teardown);
    failed += cmocka_run_group_tests_name("lockset_redlock", redlock, redlock_setup,
                                          redlock_teardown);
    return failed;
}
