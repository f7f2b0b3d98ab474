/*
 * The read-write lock (RL_KIND_READ / RL_KIND_WRITE, src/rwlock.c): shared
 * reads, exclusive writes, reentry and downgrade, upgrade refused, a plain
 * lock on the same name, a dead reader's own lease, the writer's intent
 * against a stream of readers, renewal, force-release, shutdown, and a
 * Cluster node. Each test starts its own redis-server.
 */
#include "it_common.h"
#include "proxy.h"
#include "rt_sentinel.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define LEASE_MS 1000           /* the clients' watchdog lease in most tests */

static rl_lock *rw_lock(rl_client *c, const char *name, int kind)
{
    rl_lock *l = NULL;

    IT_RC(rl_lock_new_kind(&l, c, name, strlen(name), kind), RL_OK);
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

/* The fields of rl:{name} that begin with `prefix` ("~d:": holds'
 * deadlines, "~wi:": writers' intents), or with none of '~' (prefix
 * NULL: the holds). */
static long long fields(it_env *e, const char *name, const char *prefix)
{
    redisReply *r = redisCommand(e->rc, "HKEYS rl:{%s}", name);
    long long n = r && r->type == REDIS_REPLY_ARRAY ? 0 : -100;
    size_t i;

    for (i = 0; n >= 0 && i < r->elements; i++) {
        const redisReply *f = r->element[i];
        if (prefix ? f->len >= strlen(prefix) && memcmp(f->str, prefix, strlen(prefix)) == 0
                   : f->len > 0 && f->str[0] != '~')
            n++;
    }
    freeReplyObject(r);
    return n;
}

#define hlen(e, name) fields(e, name, NULL)

/* The waiting writers' intents in rl:{name}: "~wi" holds "<field>
 * <deadline>" pairs (those run out included). */
static long long intents(it_env *e, const char *name)
{
    redisReply *r = redisCommand(e->rc, "HGET rl:{%s} ~wi", name);
    long long n = r && r->type == REDIS_REPLY_NIL ? 0 : -100;
    const char *p;

    if (r && r->type == REDIS_REPLY_STRING)
        for (n = 1, p = r->str; (p = strchr(p, ' ')) != NULL; p++)
            n++;
    freeReplyObject(r);
    return n > 0 ? n / 2 : n;
}

/* The client's threads waiting in rl_lock_try_acquire() now. */
static unsigned long long waiters(rl_client *c)
{
    rl_stats st = { .version = RL_STATS_VERSION };

    return rl_client_stats(&st, c) == RL_OK ? st.waiters : 0;
}

/* Run a try-acquire on a thread of its own (another owner of the same
 * client) and return its status; a hold it gets is released. */
typedef struct try_arg {
    rl_lock *l;
    long wait_ms;
} try_arg;

static int try_on_thread(void *p)
{
    try_arg *a = p;
    int rc = rl_lock_try_acquire(a->l, a->wait_ms, RL_LEASE_WATCHDOG);

    if (rc == RL_OK && rl_lock_release(a->l) != RL_OK)
        return -1000;
    return rc;
}

static int try_other(rl_lock *l, long wait_ms)
{
    try_arg a = { l, wait_ms };

    return it_on_thread(try_on_thread, &a, 20000);
}

/* Readers share; a writer waits for them; a writer excludes readers. */
static void test_shared_and_exclusive(void **state)
{
    it_env *e = *state;
    rl_client *c1 = it_client(e, LEASE_MS), *c2 = it_client(e, LEASE_MS);
    rl_lock *r1 = rw_lock(c1, "rw", RL_KIND_READ), *r2 = rw_lock(c2, "rw", RL_KIND_READ);
    rl_lock *w1 = rw_lock(c1, "rw", RL_KIND_WRITE), *w2 = rw_lock(c2, "rw", RL_KIND_WRITE);
    redisReply *r;
    int i;

    IT_RC(rl_lock_try_acquire(r1, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(r2, 0, RL_LEASE_WATCHDOG), RL_OK);
    /* Another thread of c1 reads beside both. */
    IT_RC(try_other(r1, 0), RL_OK);
    IT_EQ(hlen(e, "rw"), 2);
    IT_EQ(fields(e, "rw", "~d:"), 2);
    r = redisCommand(e->rc, "HKEYS rl:{rw}");
    /* Two readers' fields "<uuid>:<tid>:r", their deadlines "~d:<field>",
     * the count of holds "~n" and the sweep "~s". */
    assert_true(r && r->type == REDIS_REPLY_ARRAY && r->elements == 6);
    for (i = 0; i < (int)r->elements; i++)
        assert_true(strcmp(r->element[i]->str, "~n") == 0 ||
                    strcmp(r->element[i]->str, "~s") == 0 ||
                    (r->element[i]->len > 2 &&
                     memcmp(r->element[i]->str + r->element[i]->len - 2, ":r", 2) == 0));
    freeReplyObject(r);

    /* Writers are refused while readers hold; a waiting one registers. */
    IT_RC(rl_lock_try_acquire(w2, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_EQ(intents(e, "rw"), 0);        /* no wait: no intent */
    IT_RC(try_other(w1, 150), RL_ETIMEDOUT);
    IT_EQ(rl_lock_is_locked(w1), 1);
    {
        /* A writer of a third client waits in Redis: its intent stops new
         * readers while it waits, and goes with it when it gives up. */
        rl_client *c3 = it_client(e, LEASE_MS);
        rl_lock *w3 = rw_lock(c3, "rw", RL_KIND_WRITE);
        it_acq a;
        it_acq_begin(&a, w3, 400, 0);
        IT_WAIT(intents(e, "rw") == 1, 5000);
        IT_RC(try_other(r1, 0), RL_EBUSY);      /* a new reader: stopped */
        IT_RC(rl_lock_try_acquire(r1, 0, RL_LEASE_WATCHDOG), RL_OK);   /* a reentry: not */
        IT_RC(rl_lock_release(r1), RL_OK);
        assert_int_equal(it_acq_join(&a, 5000), 0);
        IT_RC(a.rc, RL_ETIMEDOUT);
        IT_EQ(intents(e, "rw"), 0);        /* taken back at once */
        IT_RC(try_other(r1, 0), RL_OK);
        FREE_ALL(w3, NULL, c3);
    }
    IT_RC(rl_lock_release(r1), RL_OK);
    IT_RC(rl_lock_try_acquire(w2, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(rl_lock_release(r2), RL_OK);
    IT_EQ(rl_lock_is_locked(w1), 0);
    IT_EQ(fields(e, "rw", "~d:"), 0);        /* deleted with the hash */

    IT_RC(rl_lock_try_acquire(w2, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(r1, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(rl_lock_try_acquire(w1, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(try_other(r2, 0), RL_EBUSY);      /* another thread of the writer's client */
    IT_RC(rl_lock_release(w2), RL_OK);
    IT_RC(rl_lock_try_acquire(r1, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(r1), RL_OK);
    IT_EQ(hlen(e, "rw"), 0);

    FREE_ALL(r1, r2, w1, w2, NULL, c1, c2);
}

/*
 * A writer that gives up waiting takes its intent back and tells the
 * readers it stopped: a reader waiting behind the intent gets in then,
 * not when the intent would have run out (RL__RW_INTENT_MS, 3 s).
 */
static void test_intent_withdrawn_wakes_readers(void **state)
{
    it_env *e = *state;
    rl_client *c1 = it_client(e, LEASE_MS), *c3 = it_client(e, LEASE_MS);
    rl_client *c4 = it_client(e, LEASE_MS);
    rl_lock *r1 = rw_lock(c1, "wd", RL_KIND_READ), *w3 = rw_lock(c3, "wd", RL_KIND_WRITE);
    rl_lock *r4 = rw_lock(c4, "wd", RL_KIND_READ);
    it_acq w, r;

    IT_RC(rl_lock_try_acquire(r1, 0, RL_LEASE_WATCHDOG), RL_OK);
    it_acq_begin(&w, w3, 1500, 0);
    IT_WAIT(intents(e, "wd") == 1, 5000);
    it_acq_begin(&r, r4, 10000, 1);
    assert_int_equal(it_acq_join(&w, 5000), 0);
    IT_RC(w.rc, RL_ETIMEDOUT);
    IT_WAIT(atomic_load(&r.state) >= 2, 10000);
    IT_RC(r.rc, RL_OK);
    /* Kept out by the intent until the writer gave up (1500 ms), let in
     * at once then (the withdrawal comes just before the writer returns). */
    IT_RANGE((r.t_return_us - w.t_call_us) / 1000, 1400, 10000);
    IT_RANGE((r.t_return_us - w.t_return_us) / 1000, -2000, 1000);
    IT_EQ(intents(e, "wd"), 0);
    it_acq_let_go(&r);
    assert_int_equal(it_acq_join(&r, 5000), 0);
    IT_RC(r.release_rc, RL_OK);
    IT_RC(rl_lock_release(r1), RL_OK);
    FREE_ALL(r1, w3, r4, NULL, c1, c3, c4);
}

/* Reentry on each side, downgrade, and an upgrade refused at once. */
static void test_reentry_downgrade_upgrade(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, LEASE_MS), *o = it_client(e, LEASE_MS);
    rl_lock *r = rw_lock(c, "re", RL_KIND_READ), *w = rw_lock(c, "re", RL_KIND_WRITE);
    rl_lock *or = rw_lock(o, "re", RL_KIND_READ);
    int64_t t0;

    IT_RC(rl_lock_try_acquire(r, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(r, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rl_lock_hold_count(r), 2);
    IT_EQ(rl_lock_hold_count(w), 0);
    /* Upgrade: refused at once, even with a wait. */
    t0 = rt_now_ms();
    IT_RC(rl_lock_try_acquire(w, 5000, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RANGE(rt_now_ms() - t0, 0, 500);
    IT_RC(rl_lock_release(r), RL_OK);
    IT_RC(rl_lock_release(r), RL_OK);
    IT_RC(rl_lock_release(r), RL_ENOTOWNER);

    /* Write, write again, then read beside it (the writer's own). */
    IT_RC(rl_lock_try_acquire(w, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(w, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(r, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rl_lock_hold_count(w), 2);
    IT_EQ(rl_lock_hold_count(r), 1);
    IT_EQ(hlen(e, "re"), 2);
    IT_RC(rl_lock_try_acquire(or, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(rl_lock_release(w), RL_OK);
    IT_RC(rl_lock_try_acquire(or, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    /* Downgrade: the write side goes, the read side stays, and other
     * readers may join. */
    IT_RC(rl_lock_release(w), RL_OK);
    IT_EQ(rl_lock_hold_count(w), 0);
    IT_EQ(rl_lock_hold_count(r), 1);
    IT_EQ(hlen(e, "re"), 1);
    IT_RC(rl_lock_try_acquire(or, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(or), RL_OK);
    IT_RC(rl_lock_release(r), RL_OK);
    IT_EQ(hlen(e, "re"), 0);

    FREE_ALL(r, w, or, NULL, c, o);
}

/* A plain lock on the same name (another client) and the read-write lock
 * exclude each other both ways; one client opens a name as one family. */
static void test_plain_beside(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, LEASE_MS), *p = it_client(e, LEASE_MS);
    rl_lock *r = rw_lock(c, "mix", RL_KIND_READ), *w = rw_lock(c, "mix", RL_KIND_WRITE);
    rl_lock *pl = it_lock(p, "mix"), *bad = NULL;

    IT_RC(rl_lock_new(&bad, c, "mix"), RL_EINVAL);
    IT_RC(rl_lock_try_acquire(pl, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(r, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(rl_lock_try_acquire(w, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(rl_lock_release(pl), RL_OK);
    IT_RC(rl_lock_try_acquire(r, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(pl, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(rl_lock_release(r), RL_OK);
    IT_RC(rl_lock_try_acquire(w, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(pl, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(rl_lock_release(w), RL_OK);
    FREE_ALL(r, w, pl, NULL, c, p);
}

/*
 * A writer waiting on a name that a plain lock holds leaves the plain key
 * as it is: a holder that stops renewing loses it when its lease runs out
 * (an intent's expiry kept it alive for as long as the writer waited), and
 * a plain release is the last one, announced, so the writer gets in at once.
 */
static void test_writer_waits_on_plain(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, LEASE_MS), *p = it_client(e, LEASE_MS);
    rl_lock *w = rw_lock(c, "pw", RL_KIND_WRITE), *pl = it_lock(p, "pw");
    const char *chan = "rl:{pw}:release";
    int64_t t0;
    it_acq a;

    /* A fixed lease of 600 ms, never renewed: a plain holder gone quiet. */
    IT_RC(rl_lock_try_acquire(pl, 0, 600), RL_OK);
    t0 = rt_now_ms();
    IT_RC(rl_lock_try_acquire(w, 4000, RL_LEASE_WATCHDOG), RL_OK);
    IT_RANGE(rt_now_ms() - t0, 300, 1500);
    IT_RC(rl_lock_release(w), RL_OK);
    IT_RC(rl_lock_release(pl), RL_ELOST);

    /* A plain holder that releases: the writer, waiting, is told. */
    IT_RC(rl_lock_try_acquire(pl, 0, RL_LEASE_WATCHDOG), RL_OK);
    it_acq_begin(&a, w, 10000, 1);
    /* Waiting: refused once, and listening (the first wait's subscription
     * may linger still, before this writer has asked at all). */
    IT_WAIT(waiters(c) == 1 && rt_redis_numsub(e->rc, chan, strlen(chan)) >= 1, 5000);
    IT_EQ(intents(e, "pw"), 0);
    IT_RANGE(rt_redis_pttl(e->rc, "rl:{pw}", 7), 1, LEASE_MS);
    t0 = rt_now_ms();
    IT_RC(rl_lock_release(pl), RL_OK);
    IT_WAIT(atomic_load(&a.state) >= 2, 5000);
    IT_RC(a.rc, RL_OK);
    IT_RANGE(a.t_return_us / 1000 - t0, -5, 300);
    it_acq_let_go(&a);
    assert_int_equal(it_acq_join(&a, 5000), 0);
    IT_RC(a.release_rc, RL_OK);
    FREE_ALL(w, pl, NULL, c, p);
}

/* "--child read URL NAME": take the read side (lease LEASE_MS, renewed),
 * say so on stdout, then sleep until killed. */
static int child_read(const char *url, const char *name)
{
    rl_options o;
    rl_client *c = NULL;
    rl_lock *l = NULL;

    it_options(&o, url, LEASE_MS, 0);
    if (rl_client_new(&c, &o) != RL_OK ||
        rl_lock_new_kind(&l, c, name, strlen(name), RL_KIND_READ) != RL_OK ||
        rl_lock_try_acquire(l, 5000, RL_LEASE_WATCHDOG) != RL_OK)
        return 10;
    for (;;)
        pause();
}

/*
 * A reader SIGKILLed while another reader stays (renewed, so the hash's
 * own expiry keeps moving): its field goes when its own lease ends, and a
 * waiting writer gets in as soon as the live reader leaves.
 */
static void test_dead_reader_own_lease(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, LEASE_MS), *wc = it_client(e, LEASE_MS);
    rl_lock *r = rw_lock(c, "dead", RL_KIND_READ), *w = rw_lock(wc, "dead", RL_KIND_WRITE);
    char *argv[] = { "it_rwlock", "--child", "read", e->redis->url, "dead", NULL };
    int64_t killed, t0;
    pid_t pid;

    pid = rt_spawn_self(argv, NULL, 0, 60);
    assert_true(pid > 0);
    IT_WAIT(hlen(e, "dead") == 1, 10000);
    IT_RC(rl_lock_try_acquire(r, 0, RL_LEASE_WATCHDOG), RL_OK);
    assert_int_equal(kill(pid, SIGKILL), 0);
    waitpid(pid, NULL, 0);
    killed = rt_now_ms();
    /* The live reader keeps the hash alive; the dead one's field is
     * dropped once its lease has run out (a writer's try prunes). */
    IT_RC(rl_lock_try_acquire(w, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_WAIT(rl_lock_try_acquire(w, 0, RL_LEASE_WATCHDOG) == RL_EBUSY && hlen(e, "dead") == 1,
            3 * LEASE_MS);
    /* Not before its lease: renewed every third of it, the dead reader's
     * deadline was at least two thirds of a lease after the kill. */
    IT_RANGE(rt_now_ms() - killed, LEASE_MS / 2, LEASE_MS + 800);
    IT_EQ(rl_lock_interrupted(r), 0);
    /* Now the live reader leaves: its release is the last, the notice
     * wakes the writer at once. */
    {
        it_acq a;
        it_acq_begin(&a, w, 10000, 1);
        IT_WAIT(intents(e, "dead") == 1, 5000);
        t0 = rt_now_ms();
        IT_RC(rl_lock_release(r), RL_OK);
        IT_WAIT(atomic_load(&a.state) >= 2, 5000);
        IT_RC(a.rc, RL_OK);
        IT_RANGE(a.t_return_us / 1000 - t0, -5, 500);
        IT_EQ(intents(e, "dead"), 0);  /* its intent went with its acquisition */
        it_acq_let_go(&a);
        assert_int_equal(it_acq_join(&a, 5000), 0);
        IT_RC(a.release_rc, RL_OK);
    }
    FREE_ALL(r, w, NULL, c, wc);
}

/* HLEN of rl:{name} (every field), and its count of holds "~n" (0: none). */
static long long hash_len(it_env *e, const char *name)
{
    redisReply *r = redisCommand(e->rc, "HLEN rl:{%s}", name);
    long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -100;

    freeReplyObject(r);
    return n;
}

static long long holds_count(it_env *e, const char *name)
{
    redisReply *r = redisCommand(e->rc, "HGET rl:{%s} ~n", name);
    long long n = !r ? -100 : r->type == REDIS_REPLY_NIL ? 0
                            : r->type == REDIS_REPLY_STRING ? atoll(r->str) : -100;

    freeReplyObject(r);
    return n;
}

/* A stream of readers, each in a client of its own, always overlapping. */
#define NREADERS 3
typedef struct stream {
    rl_client *c;
    rl_lock *l;
    atomic_int *stop;
    atomic_int *writing;
    atomic_int reads, violations, errors;
    pthread_t th;
} stream;

static void *reader_loop(void *p)
{
    stream *s = p;

    while (!atomic_load(s->stop)) {
        int rc = rl_lock_try_acquire(s->l, 200, RL_LEASE_WATCHDOG);
        if (rc == RL_ETIMEDOUT)
            continue;
        if (rc != RL_OK) {
            atomic_fetch_add(&s->errors, 1);
            continue;
        }
        if (atomic_load(s->writing))
            atomic_fetch_add(&s->violations, 1);
        atomic_fetch_add(&s->reads, 1);
        /* The work done under the read lock: 30 ms, or until told to stop. */
        (void)RT_WAIT_UNTIL(atomic_load(s->stop), 30);
        if (atomic_load(s->writing))
            atomic_fetch_add(&s->violations, 1);
        if (rl_lock_release(s->l) != RL_OK)
            atomic_fetch_add(&s->errors, 1);
    }
    return NULL;
}

/*
 * A writer is not starved: with readers always overlapping (the lock is
 * never free), its intent stops new readers, the current ones drain, and
 * it gets in well within its wait. Then readers go on.
 */
static void test_writer_not_starved(void **state)
{
    it_env *e = *state;
    stream s[NREADERS];
    atomic_int stop = 0, writing = 0;
    rl_client *wc = it_client(e, LEASE_MS);
    rl_lock *w = rw_lock(wc, "starve", RL_KIND_WRITE);
    int i, round, before;
    int64_t t0;

    memset(s, 0, sizeof s);
    for (i = 0; i < NREADERS; i++) {
        s[i].c = it_client(e, LEASE_MS);
        s[i].l = rw_lock(s[i].c, "starve", RL_KIND_READ);
        s[i].stop = &stop;
        s[i].writing = &writing;
        assert_int_equal(pthread_create(&s[i].th, NULL, reader_loop, &s[i]), 0);
        IT_WAIT(atomic_load(&s[i].reads) > 0, 5000);
    }
    IT_WAIT(atomic_load(&s[NREADERS - 1].reads) > 3, 5000);
    for (round = 0; round < 3; round++) {
        t0 = rt_now_ms();
        IT_RC(rl_lock_try_acquire(w, 3000, RL_LEASE_WATCHDOG), RL_OK);
        atomic_store(&writing, 1);
        IT_RANGE(rt_now_ms() - t0, 0, 1000);
        before = atomic_load(&s[0].reads) + atomic_load(&s[1].reads) + atomic_load(&s[2].reads);
        /* Held a while: any reader let in now is counted as a violation. */
        (void)RT_WAIT_UNTIL(atomic_load(&s[0].violations) + atomic_load(&s[1].violations) +
                                atomic_load(&s[2].violations) > 0, 50);
        atomic_store(&writing, 0);
        IT_RC(rl_lock_release(w), RL_OK);
        /* Readers get in again after the writer. */
        IT_WAIT(atomic_load(&s[0].reads) + atomic_load(&s[1].reads) + atomic_load(&s[2].reads) >
                    before + 3, 5000);
    }
    atomic_store(&stop, 1);
    for (i = 0; i < NREADERS; i++) {
        pthread_join(s[i].th, NULL);
        IT_EQ(atomic_load(&s[i].violations), 0);
        IT_EQ(atomic_load(&s[i].errors), 0);
        rl_lock_free(s[i].l);
        rl_client_free(s[i].c);
    }
    rl_lock_free(w);
    rl_client_free(wc);
}

/* Start a stream of readers (a client of its own with a watchdog lease of
 * lease_ms, stopped by *stop). */
static void stream_start(stream *s, it_env *e, const char *name, int lease_ms, atomic_int *stop,
                         atomic_int *writing)
{
    memset(s, 0, sizeof *s);
    s->c = it_client(e, lease_ms);
    s->l = rw_lock(s->c, name, RL_KIND_READ);
    s->stop = stop;
    s->writing = writing;
    assert_int_equal(pthread_create(&s->th, NULL, reader_loop, s), 0);
}

/* Stop it (*stop set): no error, no reader beside a writer. */
static void stream_stop(stream *s)
{
    atomic_store(s->stop, 1);
    pthread_join(s->th, NULL);
    IT_EQ(atomic_load(&s->violations), 0);
    IT_EQ(atomic_load(&s->errors), 0);
    rl_lock_free(s->l);
    rl_client_free(s->c);
}

/* Spawn n readers in processes of their own ("--child read"), wait until
 * they hold (beside `live` holds), and SIGKILL them. Returns when the first
 * kill was sent. */
static int64_t readers_die(it_env *e, const char *name, int n, int live)
{
    char *argv[] = { "it_rwlock", "--child", "read", e->redis->url, (char *)name, NULL };
    pid_t pids[64];
    int i;
    int64_t killed;

    assert_true(n <= 64);
    for (i = 0; i < n; i++) {
        pids[i] = rt_spawn_self(argv, NULL, 0, 60);
        assert_true(pids[i] > 0);
    }
    IT_WAIT(hlen(e, name) == live + n, 20000);
    killed = rt_now_ms();
    for (i = 0; i < n; i++)
        assert_int_equal(kill(pids[i], SIGKILL), 0);
    for (i = 0; i < n; i++)
        IT_EQ(rt_child_wait(pids[i], 5000), 128 + SIGKILL);
    return killed;
}

/*
 * Dead readers are dropped, whoever comes: on a name that no writer asks
 * for, one reader of ours holds throughout (renewed) while three rounds of
 * 20 readers, each in a process of its own, are SIGKILLed holding. In the
 * first round only the live readers' renewals reach the hash; in the
 * others a stream of readers comes and goes too. The dead holds stay while
 * their leases run (at most LEASE_MS after the kills); within DEAD_GONE_MS
 * the hash is back to the live holds (ours and at most one of the stream's),
 * their deadlines and three fields more, and "~n" counts the live only.
 * (The scripts before dropped a dead reader only when a writer came: HLEN
 * 43, 83 and 123.) Then a writer waits, and our release, the last live
 * hold, lets it in at once.
 *
 * The live holds have a lease of LIVE_LEASE_MS: spawning 20 processes a
 * round loads the machine (load 4 on 2 cores, more beside other builds),
 * and a 1 s lease left a renewal 667 ms of slack, which a starved watchdog
 * thread overran once in 4 runs. With 5 s, a flag means the watchdog
 * missed a renewal by more than 3 s: the library's fault. The dead keep
 * LEASE_MS (how long their fields may stay); the sweep runs when a script
 * meets the hash: our renewal (every third of LIVE_LEASE_MS) or the stream.
 */
#define DEAD_ROUNDS 3
#define DEAD_PER_ROUND 20
#define LIVE_LEASE_MS 5000
#define DEAD_GONE_MS (LEASE_MS + LIVE_LEASE_MS) /* deadline + a renewal, room for load */
static void test_dead_readers_bounded(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, LIVE_LEASE_MS), *wc = it_client(e, LIVE_LEASE_MS);
    rl_lock *r = rw_lock(c, "bound", RL_KIND_READ), *w = rw_lock(wc, "bound", RL_KIND_WRITE);
    atomic_int stop = 0, writing = 0;
    int64_t killed, t0;
    long long after, n_dead;
    int round;
    stream s;
    it_acq a;

    IT_RC(rl_lock_try_acquire(r, 0, RL_LEASE_WATCHDOG), RL_OK);
    for (round = 0; round < DEAD_ROUNDS; round++) {
        killed = readers_die(e, "bound", DEAD_PER_ROUND, 1);
        after = hash_len(e, "bound");
        /* Not before their leases end: a reader is dropped by its deadline
         * only. Each dead one renewed every third of LEASE_MS, so its
         * deadline lies two thirds of one or more after the kill: a count
         * read before then must find them all. One read later (the machine
         * slow to reap 20 children) proves nothing and is not judged. */
        n_dead = hlen(e, "bound");
        if (rt_now_ms() - killed < LEASE_MS / 2)
            IT_EQ(n_dead, 1 + DEAD_PER_ROUND);
        else
            print_message("round %d: holds counted %lld ms after the kills: not judged\n", round,
                          (long long)(rt_now_ms() - killed));
        if (round > 0) {
            atomic_store(&stop, 0);
            stream_start(&s, e, "bound", LIVE_LEASE_MS, &stop, &writing);
        }
        if (!RT_WAIT_UNTIL(hash_len(e, "bound") <= 2 * 2 + 3 && holds_count(e, "bound") <= 2,
                           DEAD_GONE_MS))
            fail_msg("round %d: HLEN %lld, ~n %lld, %lld ms after the kills (HLEN %lld then)",
                     round, hash_len(e, "bound"), holds_count(e, "bound"),
                     (long long)(rt_now_ms() - killed), after);
        print_message("round %d: HLEN %lld after the kills, %lld after %lld ms\n", round, after,
                      hash_len(e, "bound"), (long long)(rt_now_ms() - killed));
        /* Renewed every third of a lease, each dead deadline was at least
         * two thirds of one after its kill. */
        IT_RANGE(rt_now_ms() - killed, LEASE_MS / 2, DEAD_GONE_MS + 100);
        if (round > 0)
            stream_stop(&s);
        IT_EQ(rl_lock_interrupted(r), 0);
    }
    it_acq_begin(&a, w, 10000, 1);
    IT_WAIT(intents(e, "bound") == 1, 5000);
    t0 = rt_now_ms();
    IT_RC(rl_lock_release(r), RL_OK);
    IT_WAIT(atomic_load(&a.state) >= 2, 5000);
    IT_RC(a.rc, RL_OK);
    IT_RANGE(a.t_return_us / 1000 - t0, -5, 500);
    it_acq_let_go(&a);
    assert_int_equal(it_acq_join(&a, 5000), 0);
    IT_RC(a.release_rc, RL_OK);
    IT_EQ(hash_len(e, "bound"), 0);
    FREE_ALL(r, w, NULL, c, wc);
}

/*
 * A hash not of the read-write layout (RL__RW_LAYOUT, src/rwlock.h): a
 * write hold with its deadline but without the mark "~w", as the scripts
 * before 809ff77 (never released) wrote it. A reader and a writer are
 * refused with RL_EREDIS, the hash left as it was; the old scripts marked
 * the writer and answered "busy" (and could let a reader in beside it
 * first).
 */
static void test_layout_unknown_refused(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, LEASE_MS);
    rl_lock *r = rw_lock(c, "old", RL_KIND_READ), *w = rw_lock(c, "old", RL_KIND_WRITE);
    redisReply *rep;

    rep = redisCommand(e->rc, "HSET rl:{old} 00000000-0000-4000-8000-000000000009:1 %s "
                       "~d:00000000-0000-4000-8000-000000000009:1 %s", "1 0", "9999999999999");
    assert_true(rep && rep->type == REDIS_REPLY_INTEGER);
    freeReplyObject(rep);
    rep = redisCommand(e->rc, "PEXPIRE rl:{old} 60000");
    freeReplyObject(rep);
    IT_RC(rl_lock_try_acquire(r, 0, RL_LEASE_WATCHDOG), RL_EREDIS);
    assert_non_null(strstr(rl_last_error(), "not a read-write lock of layout"));
    IT_RC(rl_lock_try_acquire(w, 200, RL_LEASE_WATCHDOG), RL_EREDIS);
    IT_EQ(rl_lock_hold_count(r), 0);
    IT_EQ(rl_lock_hold_count(w), 0);
    IT_EQ(hash_len(e, "old"), 2);
    FREE_ALL(r, w, NULL, c);
    IT_EQ(hash_len(e, "old"), 2);
}

/* Read and write holds outlive their lease by renewal, each its own
 * deadline moved; a force-release flags read holds too; a client freed
 * while holding both sides leaves nothing behind. */
static void test_renewal_force_shutdown(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 300), *o = it_client(e, 300);
    rl_lock *r = rw_lock(c, "keep", RL_KIND_READ), *w = rw_lock(c, "keep", RL_KIND_WRITE);
    rl_lock *or = rw_lock(o, "keep", RL_KIND_READ);
    int64_t t0 = rt_now_ms();

    IT_RC(rl_lock_try_acquire(r, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(or, 0, RL_LEASE_WATCHDOG), RL_OK);
    /* Five leases later both still hold, and the lock is still taken. */
    IT_WAIT(rt_now_ms() - t0 > 1500, 3000);
    IT_EQ(rl_lock_interrupted(r), 0);
    IT_EQ(rl_lock_interrupted(or), 0);
    IT_EQ(hlen(e, "keep"), 2);
    IT_RC(rl_lock_release(or), RL_OK);
    IT_RC(rl_lock_release(r), RL_OK);

    /* Force-release: the read holds are flagged, this client's at once,
     * the other's at its next renewal. */
    IT_RC(rl_lock_try_acquire(r, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(or, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_force_release(w), RL_OK);
    IT_EQ(rl_lock_interrupted(r), 1);
    IT_WAIT(rl_lock_interrupted(or) == 1, 2000);
    IT_RC(rl_lock_release(r), RL_ELOST);
    IT_RC(rl_lock_release(or), RL_ELOST);
    IT_RC(rl_lock_try_acquire(or, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(or), RL_OK);

    /* Shutdown with both sides held: every field dropped. */
    IT_RC(rl_lock_try_acquire(w, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(r, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(hlen(e, "keep"), 2);
    rl_lock_free(r);
    rl_lock_free(w);
    rl_client_free(c);
    IT_EQ(hlen(e, "keep"), 0);
    IT_EQ(fields(e, "keep", "~d:"), 0);
    rl_lock_free(or);
    rl_client_free(o);
}

/* Redlock: not offered. */
static void test_redlock_refused(void **state)
{
    it_env *e = *state;
    rt_redis *more[2] = { rt_redis_start(NULL), rt_redis_start(NULL) };
    rl_options o;
    rl_client *c = NULL;
    rl_lock *l = NULL;
    char url[128];

    assert_true(more[0] && more[1]);
    snprintf(url, sizeof url, "redlock://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
             e->redis->port, more[0]->port, more[1]->port);
    it_options(&o, url, 0, 0);
    c = it_client_opts(&o);
    IT_RC(rl_lock_new_kind(&l, c, "x", 1, RL_KIND_READ), RL_ENOTSUP);
    IT_RC(rl_lock_new_kind(&l, c, "x", 1, RL_KIND_WRITE), RL_ENOTSUP);
    assert_null(l);
    IT_RC(rl_lock_new_kind(&l, c, "x", 1, RL_KIND_PLAIN), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);
    rt_redis_stop(more[0]);
    rt_redis_stop(more[1]);
}

/* Two clients (c and d, a lease of 300 ms; d is freed): readers share
 * over four leases, renewed; a writer waits for them and then excludes a
 * reader. */
static void share_and_exclude(rl_client *c, rl_client *d, const char *name)
{
    rl_lock *r = rw_lock(c, name, RL_KIND_READ), *r2 = rw_lock(d, name, RL_KIND_READ);
    rl_lock *w = rw_lock(d, name, RL_KIND_WRITE);
    int64_t t0;

    IT_RC(rl_lock_try_acquire(r, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(r2, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(r2), RL_OK);
    IT_RC(rl_lock_try_acquire(w, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    t0 = rt_now_ms();
    IT_WAIT(rt_now_ms() - t0 > 1200, 3000);     /* four leases */
    IT_EQ(rl_lock_interrupted(r), 0);
    IT_RC(rl_lock_release(r), RL_OK);
    IT_RC(rl_lock_try_acquire(w, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(r, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(rl_lock_release(w), RL_OK);
    FREE_ALL(r, r2, w, NULL, d);
}

/* A cluster-mode node (all slots): the read-write lock keeps one key, so
 * it works there as on a single server (a name whose braces would split
 * the key's tag, too); plain locks beside it. */
static void test_cluster_node(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 300);
    rl_lock *p = it_lock(c, "plain-beside");

    share_and_exclude(c, it_client(e, 300), "}odd{");
    IT_RC(rl_lock_try_acquire(p, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(p), RL_OK);
    FREE_ALL(p, NULL, c);
}

/* The count a field holds in Redis ("<count> <since>"), 0 when absent. */
static long long field_count(it_env *e, const char *name, const char *field)
{
    redisReply *r = redisCommand(e->rc, "HGET rl:{%s} %s", name, field);
    long long n = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;

    freeReplyObject(r);
    return n;
}

/* The only field of the hash whose name ends as `suffix` says (":r": a
 * reader's; "": a writer's), into buf. */
static void find_field(it_env *e, const char *name, int reader, char *buf, size_t cap)
{
    redisReply *r = redisCommand(e->rc, "HKEYS rl:{%s}", name);
    size_t i;

    buf[0] = '\0';
    for (i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        const redisReply *f = r->element[i];
        int is_reader = f->len > 2 && memcmp(f->str + f->len - 2, ":r", 2) == 0;
        if (f->str[0] != '~' && is_reader == reader)    /* not a deadline, not an intent */
            snprintf(buf, cap, "%.*s", (int)f->len, f->str);
    }
    freeReplyObject(r);
    if (!buf[0])
        fail_msg("no %s field in rl:{%s}", reader ? "reader" : "writer", name);
}

/*
 * Replies lost after Redis applied the change (the proxy swallows them):
 * each is resolved by reading the side's own field back, so no count is
 * doubled or lost, on either side, in acquire, reentry and release.
 */
static void test_lost_replies(void **state)
{
    it_env *e = *state;
    it_proxied p;
    rl_lock *r, *w;
    char rf[128], wf[128];

    it_proxied_open(&p, e, "unused", 0, 500);
    r = rw_lock(p.c, "lostrw", RL_KIND_READ);
    w = rw_lock(p.c, "lostrw", RL_KIND_WRITE);

    rt_proxy_drop_next_reply_matching(p.proxy, "EVALSHA");
    IT_RC(rl_lock_try_acquire(w, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rt_proxy_dropped(p.proxy), 1);
    find_field(e, "lostrw", 0, wf, sizeof wf);
    IT_EQ(field_count(e, "lostrw", wf), 1);
    rt_proxy_drop_next_reply_matching(p.proxy, "EVALSHA");
    IT_RC(rl_lock_try_acquire(r, 0, RL_LEASE_WATCHDOG), RL_OK);      /* downgrade side */
    find_field(e, "lostrw", 1, rf, sizeof rf);
    IT_EQ(field_count(e, "lostrw", rf), 1);
    rt_proxy_drop_next_reply_matching(p.proxy, "EVALSHA");
    IT_RC(rl_lock_try_acquire(r, 0, RL_LEASE_WATCHDOG), RL_OK);      /* reentry */
    IT_EQ(field_count(e, "lostrw", rf), 2);
    IT_EQ(rl_lock_hold_count(r), 2);
    rt_proxy_drop_next_reply_matching(p.proxy, "EVALSHA");
    IT_RC(rl_lock_release(w), RL_OK);
    IT_EQ(field_count(e, "lostrw", wf), 0);
    IT_EQ(hlen(e, "lostrw"), 1);
    rt_proxy_drop_next_reply_matching(p.proxy, "EVALSHA");
    IT_RC(rl_lock_release(r), RL_OK);
    IT_EQ(field_count(e, "lostrw", rf), 1);
    IT_RC(rl_lock_release(r), RL_OK);
    IT_EQ(hlen(e, "lostrw"), 0);
    IT_EQ(rt_proxy_dropped(p.proxy), 5);
    rl_lock_free(r);
    rl_lock_free(w);
    it_proxied_close(&p);
}

/* Sentinel mode: the primary found through a sentinel; readers share, a
 * writer waits for them, holds are renewed. */
static void test_sentinel(void **state)
{
    rt_sentinel *dep = rt_sentinel_start(0, 1, "rwm", NULL);
    rl_options o;
    rl_client *c;

    (void)state;
    assert_non_null(dep);
    it_options(&o, rt_sentinel_url(dep), 300, 0);
    c = it_client_opts(&o);
    share_and_exclude(c, it_client_opts(&o), "sn");
    rl_client_free(c);
    rt_sentinel_stop(dep);
}

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

/* In the fork child of a process holding both sides: a new owner that
 * holds neither side, is kept out of both (the parent writes), and whose
 * client, freed, leaves the parent's fields alone. Codes name the check. */
static int forked_child(rl_lock *r, rl_lock *w, rl_client *c)
{
    if (rl_lock_hold_count(r) != 0 || rl_lock_hold_count(w) != 0)
        return 40;
    if (rl_lock_release(r) != RL_ENOTOWNER || rl_lock_release(w) != RL_ENOTOWNER)
        return 41;
    if (rl_lock_try_acquire(r, 0, RL_LEASE_WATCHDOG) != RL_EBUSY)
        return 42;     /* the parent writes */
    if (rl_lock_try_acquire(w, 0, RL_LEASE_WATCHDOG) != RL_EBUSY)
        return 43;
    rl_lock_free(r);
    rl_lock_free(w);
    rl_client_free(c);
    return 0;
}

/* fork(): the child is a new owner on both sides; the parent keeps its
 * write and read holds, unflagged, and releases both. */
static void test_fork(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, LEASE_MS);
    rl_lock *r = rw_lock(c, "fk", RL_KIND_READ), *w = rw_lock(c, "fk", RL_KIND_WRITE);
    pid_t pid;

#ifdef UNDER_TSAN
    print_message("fork() tests are not supported by ThreadSanitizer: skipped\n");
    skip();
#endif
    IT_RC(rl_lock_try_acquire(w, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(r, 0, RL_LEASE_WATCHDOG), RL_OK);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(forked_child(r, w, c));
    IT_EQ(rt_child_wait(pid, 20000), 0);
    IT_EQ(hlen(e, "fk"), 2);
    IT_EQ(rl_lock_hold_count(w), 1);
    IT_EQ(rl_lock_interrupted(w), 0);
    IT_RC(rl_lock_release(w), RL_OK);
    IT_RC(rl_lock_release(r), RL_OK);
    IT_EQ(hlen(e, "fk"), 0);
    FREE_ALL(r, w, NULL, c);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_shared_and_exclusive, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_intent_withdrawn_wakes_readers, it_setup,
                                        it_teardown),
        cmocka_unit_test_setup_teardown(test_reentry_downgrade_upgrade, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_plain_beside, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_writer_waits_on_plain, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_dead_reader_own_lease, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_writer_not_starved, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_dead_readers_bounded, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_layout_unknown_refused, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_renewal_force_shutdown, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_lost_replies, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_fork, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_redlock_refused, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_cluster_node, it_setup_cluster_node, it_teardown),
        cmocka_unit_test(test_sentinel),
    };

    if (argc == 5 && strcmp(argv[1], "--child") == 0 && strcmp(argv[2], "read") == 0)
        return child_read(argv[3], argv[4]);
    if (argc == 2)
        cmocka_set_test_filter(argv[1]); /* one test by name, e.g. for repeated runs */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
