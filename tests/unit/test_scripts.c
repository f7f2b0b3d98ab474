/*
 * rlock's Lua scripts (rl__script_src[]) run on a real redis-server with
 * hostile lease arguments. Unlike the other unit tests this one needs
 * redis-server (tests/common's rt_redis_start): without it, it FAILS.
 *
 * The library never sends these values (rlock checks leases before calling
 * a script), but a script is the last line of defence: Redis does not roll
 * back a script's earlier writes when a later command fails, so a script
 * that writes first and checks later can leave a lock without expiry — one
 * that nobody can ever take again.
 *
 * Layouts (src/lua/<name>.lua):
 *   acquire  KEYS lock[, fence]; ARGV lease_ms, owner, held[, since, fence, delay_ms]
 *   release  KEYS lock;          ARGV owner, held, lease_ms[, notice, channel]
 *   renew    KEYS lock1..N;      ARGV lease_ms, owner1..N[, value1..N]
 *   force    KEYS lock;          ARGV "<uuid>:", notice, channel
 *   fair acquire  KEYS lock, queue, places; ARGV lease_ms, owner, 0, since, place_ms
 *   fair release  KEYS lock, queue, places; ARGV as release[, next, place_ms]
 *   fair leave    KEYS lock, queue, places; ARGV owner, notice, channel
 *   sem acquire   KEYS lock[, fence]; ARGV lease_ms, owner, held, since, N, k
 *   sem release, sem renew: as release and renew
 *   set acquire   KEYS lock1..n; ARGV lease_ms, owner, since, delay_ms, held1..n
 *
 * The second half checks fencing tokens and lock-delay at the script level,
 * then the read-write and semaphore scripts, then every script as the
 * source of a migrating Cluster slot runs it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "redis_server.h"
#include "rlock_int.h"

#define OWNER "00000000-0000-4000-8000-000000000001:7"
#define KEY "rl:{s}"
#define CHANNEL "rl:{s}:release"
#define FENCE_KEY "rl:{s}:fence"
#define OTHER "00000000-0000-4000-8000-000000000002:9"

#define IT_ASSERT_RANGE(expr, lo, hi)                                              \
    do {                                                                           \
        long long v_ = (expr);                                                     \
        if (v_ < (lo) || v_ > (hi))                                                \
            fail_msg("%s = %lld, expected %lld..%lld", #expr, v_, (long long)(lo), \
                     (long long)(hi));                                             \
    } while (0)

/* Finding 3b: lease arguments a script must refuse: the review's five, and
 * RL_TIME_MAX_MS + 1, a fraction and an empty string. */
static const char *const hostile[] = { "9223372036854775807", "0", "-5", "abc", "1e30",
                                       "2147483648", "1.5", "" };
#define NHOSTILE (sizeof hostile / sizeof hostile[0])

typedef struct env {
    rt_redis *redis;
    redisContext *rc;
    char sha[RL__S_COUNT][41];
} env;

static int setup(void **state)
{
    env *e = calloc(1, sizeof *e);
    int i;

    if (e == NULL)
        return -1;
    if (rt_redis_open("unit_scripts", NULL, &e->redis, &e->rc) != 0) {
        free(e);
        return -1;
    }
    for (i = 0; i < RL__S_COUNT; i++) {
        redisReply *r = redisCommand(e->rc, "SCRIPT LOAD %s", rl__script_src[i]);
        if (r == NULL || r->type != REDIS_REPLY_STRING || r->len != 40) {
            fprintf(stderr, "unit_scripts: SCRIPT LOAD of script %d failed: %s\n", i,
                    r != NULL && r->str != NULL ? r->str : e->rc->errstr);
            if (r != NULL)
                freeReplyObject(r);
            redisFree(e->rc);
            rt_redis_stop(e->redis);
            free(e);
            return -1;
        }
        memcpy(e->sha[i], r->str, 41);
        freeReplyObject(r);
    }
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    env *e = *state;

    if (e == NULL)
        return 0;
    redisFree(e->rc);
    rt_redis_stop(e->redis);
    free(e);
    *state = NULL;
    return 0;
}

/* EVALSHA script with nkeys keys followed by args (argc strings in all). */
static redisReply *run(env *e, int script, int nkeys, int argc, const char **argv)
{
    const char *v[16];
    size_t lens[16];
    char nk[8];
    int i, n = 0;
    redisReply *r;

    assert_true(argc + 3 <= 16);
    snprintf(nk, sizeof nk, "%d", nkeys);
    v[n++] = "EVALSHA";
    v[n++] = e->sha[script];
    v[n++] = nk;
    for (i = 0; i < argc; i++)
        v[n++] = argv[i];
    for (i = 0; i < n; i++)
        lens[i] = strlen(v[i]);
    r = redisCommandArgv(e->rc, n, v, lens);
    if (r == NULL)
        fail_msg("EVALSHA: connection error: %s", e->rc->errstr);
    return r;
}

static redisReply *acquire(env *e, const char *lease, const char *held)
{
    const char *a[4] = { KEY, lease, OWNER, held };
    return run(e, RL__S_ACQUIRE, 1, 4, a);
}

static redisReply *release(env *e, const char *held, const char *lease)
{
    const char *a[6] = { KEY, OWNER, held, lease, "1", CHANNEL };
    return run(e, RL__S_RELEASE, 1, 6, a);
}

static redisReply *renew(env *e, const char *lease)
{
    const char *a[3] = { KEY, lease, OWNER };
    return run(e, RL__S_RENEW, 1, 3, a);
}

static void flush(env *e)
{
    redisReply *r = redisCommand(e->rc, "FLUSHALL");
    assert_non_null(r);
    freeReplyObject(r);
}

static long long pttl(env *e)
{
    return rt_redis_pttl(e->rc, KEY, strlen(KEY));
}

static int exists(env *e)
{
    return rt_redis_exists(e->rc, KEY, strlen(KEY));
}

/* Our field's count, 0 when absent. */
static long long count(env *e)
{
    redisReply *r = redisCommand(e->rc, "HGET %s %s", KEY, OWNER);
    long long n;

    assert_non_null(r);
    if (r->type == REDIS_REPLY_NIL) {
        freeReplyObject(r);
        return 0;
    }
    if (r->type != REDIS_REPLY_STRING)
        fail_msg("HGET: reply type %d", r->type);
    n = strtoll(r->str, NULL, 10);
    freeReplyObject(r);
    return n;
}

static const char *describe(const redisReply *r, char *buf, size_t cap)
{
    switch (r->type) {
    case REDIS_REPLY_ERROR:
        snprintf(buf, cap, "error \"%s\"", r->str);
        break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
        snprintf(buf, cap, "\"%s\"", r->str);
        break;
    case REDIS_REPLY_INTEGER:
        snprintf(buf, cap, "%lld", r->integer);
        break;
    case REDIS_REPLY_ARRAY:
        if (r->elements == 2 && r->element[0]->type == REDIS_REPLY_INTEGER &&
            r->element[1]->type == REDIS_REPLY_INTEGER)
            snprintf(buf, cap, "{%lld, %lld}", r->element[0]->integer,
                     r->element[1]->integer);
        else
            snprintf(buf, cap, "an array of %zu", r->elements);
        break;
    default:
        snprintf(buf, cap, "reply type %d", r->type);
    }
    return buf;
}

/* A {code, value} reply. */
static void expect_pair(redisReply *r, long long code, long long value)
{
    char d[256];

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_INTEGER || r->element[0]->integer != code ||
        r->element[1]->type != REDIS_REPLY_INTEGER || r->element[1]->integer != value)
        fail_msg("expected {%lld, %lld}, got %s", code, value, describe(r, d, sizeof d));
}

/* A held lock of ours with count n and a 60 s lease, set up through the
 * script itself with sane arguments (which also checks that it works). */
static void hold(env *e, int n)
{
    int i;
    char held[8];

    flush(e);
    for (i = 0; i < n; i++) {
        redisReply *r;
        snprintf(held, sizeof held, "%d", i);
        r = acquire(e, "60000", held);
        expect_pair(r, 1, i + 1);
        freeReplyObject(r);
    }
    assert_int_equal(count(e), n);
    assert_true(pttl(e) > 0);
}

/* Finding 3b: a first acquisition with a bad lease answers an error and
 * writes nothing (old script: HSET ran, then PEXPIRE failed, leaving a
 * lock without expiry; with "0" the key was deleted but success reported). */
static void test_acquire_with_bad_lease_writes_nothing(void **state)
{
    env *e = *state;
    size_t i;
    char d[256];

    for (i = 0; i < NHOSTILE; i++) {
        redisReply *r;

        flush(e);
        r = acquire(e, hostile[i], "0");
        if (r->type != REDIS_REPLY_ERROR)
            fail_msg("acquire with lease \"%s\": %s, expected an error (PTTL now %lld)",
                     hostile[i], describe(r, d, sizeof d), pttl(e));
        freeReplyObject(r);
        if (exists(e) != 0)
            fail_msg("acquire with lease \"%s\" left the key (PTTL %lld, count %lld)",
                     hostile[i], pttl(e), count(e));
    }
}

/* Finding 3b: reentry with a bad lease answers an error, keeps the count
 * and never removes the expiry. */
static void test_reentry_with_bad_lease_changes_nothing(void **state)
{
    env *e = *state;
    size_t i;
    char d[256];

    for (i = 0; i < NHOSTILE; i++) {
        redisReply *r;
        long long t;

        hold(e, 1);
        r = acquire(e, hostile[i], "1");
        if (r->type != REDIS_REPLY_ERROR)
            fail_msg("reentry with lease \"%s\": %s, expected an error", hostile[i],
                     describe(r, d, sizeof d));
        freeReplyObject(r);
        t = pttl(e);
        if (count(e) != 1 || t <= 0 || t > 60000)
            fail_msg("reentry with lease \"%s\": count %lld, PTTL %lld (expected 1 and "
                     "0 < PTTL <= 60000)", hostile[i], count(e), t);

        /* Ours already, held 0 (an acquisition reported failed but applied):
         * the "start afresh" path must check the lease first too. */
        r = acquire(e, hostile[i], "0");
        if (r->type != REDIS_REPLY_ERROR)
            fail_msg("re-acquire (held 0) with lease \"%s\": %s, expected an error",
                     hostile[i], describe(r, d, sizeof d));
        freeReplyObject(r);
        t = pttl(e);
        if (count(e) != 1 || t <= 0 || t > 60000)
            fail_msg("re-acquire (held 0) with lease \"%s\": count %lld, PTTL %lld",
                     hostile[i], count(e), t);
    }
}

/* Finding 3b: an inner release (count 2) with a bad lease answers an error
 * and leaves the count at 2 with its expiry. ("0" is not bad here: for
 * release it means "leave the expiry alone".) */
static void test_release_with_bad_lease_keeps_the_count(void **state)
{
    env *e = *state;
    size_t i;
    char d[256];
    redisReply *r;

    for (i = 0; i < NHOSTILE; i++) {
        long long t;

        if (strcmp(hostile[i], "0") == 0)
            continue;
        hold(e, 2);
        r = release(e, "2", hostile[i]);
        if (r->type != REDIS_REPLY_ERROR)
            fail_msg("release of count 2 with lease \"%s\": %s (count now %lld), expected "
                     "an error", hostile[i], describe(r, d, sizeof d), count(e));
        freeReplyObject(r);
        t = pttl(e);
        if (count(e) != 2 || t <= 0 || t > 60000)
            fail_msg("release with lease \"%s\": count %lld, PTTL %lld (expected 2 and "
                     "0 < PTTL <= 60000)", hostile[i], count(e), t);
    }

    /* Control: a sane inner release works. */
    hold(e, 2);
    r = release(e, "2", "60000");
    expect_pair(r, 1, 1);
    freeReplyObject(r);
    assert_int_equal(count(e), 1);
    assert_true(pttl(e) > 0);
}

/* Finding 3b: a renewal with a bad lease never removes an existing expiry
 * nor the lock, and leaves the lease as it was (the old script, which never
 * shortens, set a lease past RL_TIME_MAX_MS when told so). */
static void test_renew_with_bad_lease_keeps_the_expiry(void **state)
{
    env *e = *state;
    size_t i;
    redisReply *r;

    for (i = 0; i < NHOSTILE; i++) {
        long long t;

        hold(e, 1);
        r = renew(e, hostile[i]);
        freeReplyObject(r);
        t = pttl(e);
        if (exists(e) != 1 || count(e) != 1 || t <= 0 || t > 60000)
            fail_msg("renew with lease \"%s\": exists %d, count %lld, PTTL %lld (expected "
                     "the hold untouched with 0 < PTTL <= 60000)",
                     hostile[i], exists(e), count(e), t);
    }

    /* Control: a sane renewal extends the lease and reports the hold. */
    hold(e, 1);
    r = renew(e, "120000");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, "1");
    freeReplyObject(r);
    assert_true(pttl(e) > 60000);
}


/* Redlock's spread: a renewal carrying a value per pair places our hold
 * where the key does not exist at all ('2'), and nowhere else: beside
 * another owner's field, or without the values, nothing is written; our
 * own field is renewed as ever ('1', its value kept); values that are not
 * one per pair are refused with nothing written. */
static void test_renew_places_only_where_free(void **state)
{
    env *e = *state;
    const char *place[4] = { KEY, "5000", OWNER, "3 1700000000000" };
    const char *short_[5] = { KEY, "5000", OWNER, "1 1", "1 1" };
    const char *empty[4] = { KEY, "5000", OWNER, "" };
    redisReply *r;

    flush(e);
    r = run(e, RL__S_RENEW, 1, 3, place);       /* no value: a renewal only */
    assert_string_equal(r->str, "0");
    freeReplyObject(r);
    assert_int_equal(exists(e), 0);
    r = run(e, RL__S_RENEW, 1, 5, short_);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    assert_int_equal(exists(e), 0);

    r = run(e, RL__S_RENEW, 1, 4, empty);       /* an empty value: renewed only */
    assert_string_equal(r->str, "0");
    freeReplyObject(r);
    assert_int_equal(exists(e), 0);

    r = run(e, RL__S_RENEW, 1, 4, place);       /* free: placed */
    assert_string_equal(r->str, "2");
    freeReplyObject(r);
    assert_int_equal(count(e), 3);
    IT_ASSERT_RANGE(pttl(e), 1, 5000);
    r = redisCommand(e->rc, "HLEN %s", KEY);
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);

    hold(e, 2);                                 /* ours: renewed, value kept */
    r = run(e, RL__S_RENEW, 1, 4, place);
    assert_string_equal(r->str, "1");
    freeReplyObject(r);
    assert_int_equal(count(e), 2);

    flush(e);                                   /* another's: untouched */
    freeReplyObject(redisCommand(e->rc, "HSET %s %s %s", KEY, OTHER, "1 5"));
    freeReplyObject(redisCommand(e->rc, "PEXPIRE %s 3000", KEY));
    r = run(e, RL__S_RENEW, 1, 4, place);
    assert_string_equal(r->str, "0");
    freeReplyObject(r);
    assert_int_equal(count(e), 0);
    IT_ASSERT_RANGE(pttl(e), 1, 3000);
    flush(e);
}

/* ---- fencing tokens and lock-delay ---------------------------------------- */

/* The acquire script as the library sends it: fenced, or with a delay
 * (the lease then already holds lease + delay, as the client sends it). */
static redisReply *acquire_as(env *e, const char *owner, const char *lease, const char *held,
                              const char *fence, const char *delay)
{
    const char *a[8] = { KEY, FENCE_KEY, lease, owner, held, "1700000000000", fence, delay };
    if (fence[0] == '1')
        return run(e, RL__S_ACQUIRE, 2, 8, a);
    a[1] = KEY;
    return run(e, RL__S_ACQUIRE, 1, 7, a + 1);
}

/* {1, count, token}: the token, after checking the rest. */
static long long expect_token(redisReply *r, long long n)
{
    char d[256];
    long long t;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != REDIS_REPLY_INTEGER || r->element[0]->integer != 1 ||
        r->element[1]->type != REDIS_REPLY_INTEGER || r->element[1]->integer != n ||
        r->element[2]->type != REDIS_REPLY_INTEGER)
        fail_msg("expected {1, %lld, token}, got %s", n, describe(r, d, sizeof d));
    t = r->element[2]->integer;
    freeReplyObject(r);
    return t;
}

static void drop_key(env *e, const char *key)
{
    redisReply *r = redisCommand(e->rc, "DEL %s", key);
    assert_non_null(r);
    freeReplyObject(r);
}

/* Tokens rise strictly across release, expiry (here: the key deleted) and
 * a second owner; a reentry and a partial release keep the token. */
static void test_fencing_tokens_rise(void **state)
{
    env *e = *state;
    const char *rel[6] = { KEY, OWNER, "2", "60000", "1", CHANNEL };
    long long t1, t2, t3, t4;
    redisReply *r;

    flush(e);
    t1 = expect_token(acquire_as(e, OWNER, "60000", "0", "1", "0"), 1);
    assert_int_equal(expect_token(acquire_as(e, OWNER, "60000", "1", "1", "0"), 2), t1);
    r = run(e, RL__S_RELEASE, 1, 6, rel);       /* 2 -> 1 keeps the token */
    expect_pair(r, 1, 1);
    freeReplyObject(r);
    assert_int_equal(expect_token(acquire_as(e, OWNER, "60000", "1", "1", "0"), 2), t1);
    drop_key(e, KEY);                            /* as if its lease ran out */
    t2 = expect_token(acquire_as(e, OTHER, "60000", "0", "1", "0"), 1);
    assert_true(t2 > t1);
    /* Without fencing: no token, and the counter is left alone. */
    drop_key(e, KEY);
    r = acquire_as(e, OWNER, "60000", "0", "0", "0");
    expect_pair(r, 1, 1);
    freeReplyObject(r);
    drop_key(e, KEY);
    t3 = expect_token(acquire_as(e, OWNER, "60000", "0", "1", "0"), 1);
    assert_int_equal(t3, t2 + 1);
    /* A busy name hands out nothing. */
    r = acquire_as(e, OTHER, "60000", "0", "1", "0");
    assert_int_equal(r->element[0]->integer, 0);
    freeReplyObject(r);
    drop_key(e, KEY);
    t4 = expect_token(acquire_as(e, OTHER, "60000", "0", "1", "0"), 1);
    assert_int_equal(t4, t3 + 1);
}

static long long hlen(env *e)
{
    redisReply *r = redisCommand(e->rc, "HLEN %s", KEY);
    long long n;

    assert_true(r && r->type == REDIS_REPLY_INTEGER);
    n = r->integer;
    freeReplyObject(r);
    return n;
}

/* Lock-delay: the holder's key carries the delay; a clean release ends it,
 * a drop leaves a tombstone for the delay, a force-release one for the
 * lease left and the delay, which every acquirer sees as busy; the
 * holder's own thread too. */
static void test_lock_delay(void **state)
{
    env *e = *state;
    const char *rel[6] = { KEY, OWNER, "1", "0", "1", CHANNEL };
    const char *drop[6] = { KEY, OWNER, "0", "0", "1", CHANNEL };
    const char *force[4] = { KEY, "00000000-0000-4000-8000-000000000002:", "1", CHANNEL };
    long long left;
    redisReply *r;

    /* Held with lease 1000 + delay 5000: Redis keeps 6000. */
    flush(e);
    r = acquire_as(e, OWNER, "6000", "0", "0", "5000");
    expect_pair(r, 1, 1);
    freeReplyObject(r);
    IT_ASSERT_RANGE(pttl(e), 5000, 6000);
    assert_int_equal(hlen(e), 2);
    /* A clean release: gone, delay and all. */
    r = run(e, RL__S_RELEASE, 1, 6, rel);
    expect_pair(r, 1, 0);
    freeReplyObject(r);
    assert_int_equal(exists(e), 0);

    /* A drop (held 0: given up as lost) leaves the tombstone for the delay. */
    r = acquire_as(e, OWNER, "60000", "0", "0", "5000");
    freeReplyObject(r);
    r = run(e, RL__S_RELEASE, 1, 6, drop);
    expect_pair(r, 1, 0);
    freeReplyObject(r);
    assert_int_equal(exists(e), 1);
    assert_int_equal(count(e), 0);
    assert_int_equal(hlen(e), 1);
    left = pttl(e);
    IT_ASSERT_RANGE(left, 4000, 5000);
    /* Busy for everyone, the old owner included, until it runs out. */
    r = acquire_as(e, OTHER, "1000", "0", "0", "0");
    assert_int_equal(r->element[0]->integer, 0);
    IT_ASSERT_RANGE(r->element[1]->integer, 4000, 5000);
    freeReplyObject(r);
    r = acquire_as(e, OWNER, "1000", "0", "0", "0");
    assert_int_equal(r->element[0]->integer, 0);
    freeReplyObject(r);
    /* Its release by anyone finds no field and changes nothing. */
    r = run(e, RL__S_RELEASE, 1, 6, rel);
    expect_pair(r, -1, 0);
    freeReplyObject(r);
    assert_int_equal(hlen(e), 1);

    /* A force-release leaves the tombstone too, and reports the holder.
     * The holder learns of it at its next renewal at the latest, or at its
     * lease's end: the key keeps its expiry, lease left and delay. */
    flush(e);
    r = acquire_as(e, OTHER, "60000", "0", "0", "5000");
    freeReplyObject(r);
    r = run(e, RL__S_FORCE, 1, 4, force);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 3);
    assert_int_equal(r->element[2]->integer, 9);
    freeReplyObject(r);
    assert_int_equal(hlen(e), 1);
    IT_ASSERT_RANGE(pttl(e), 59000, 60000);
    /* A second one (the tombstone alone): the operator's way out. */
    r = run(e, RL__S_FORCE, 1, 4, force);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    assert_int_equal(exists(e), 0);

    /* Without a delay, a drop deletes as before. */
    flush(e);
    r = acquire_as(e, OWNER, "60000", "0", "0", "0");
    freeReplyObject(r);
    assert_int_equal(hlen(e), 1);
    r = run(e, RL__S_RELEASE, 1, 6, drop);
    expect_pair(r, 1, 0);
    freeReplyObject(r);
    assert_int_equal(exists(e), 0);

    /* Two owners (a leftover beside a hold): the first to go leaves the
     * other's hold and the delay alone. */
    flush(e);
    r = acquire_as(e, OWNER, "60000", "0", "0", "5000");
    freeReplyObject(r);
    r = redisCommand(e->rc, "HSET %s %s 1", KEY, OTHER);
    freeReplyObject(r);
    r = run(e, RL__S_RELEASE, 1, 6, rel);
    expect_pair(r, 1, 0);
    freeReplyObject(r);
    assert_int_equal(hlen(e), 2);               /* OTHER and the delay */
    IT_ASSERT_RANGE(pttl(e), 59000, 60000);
}

/* Review findings on lock-delay: a hold whose lease part ran out (PTTL <=
 * delay) is gone for its owner too: a late clean release, a reentry, a
 * renewal and an acquisition anew all find it gone, and the rest of the
 * delay stays; a force-release of a tombstone alone ends the delay. */
static void test_lock_delay_after_the_lease(void **state)
{
    env *e = *state;
    const char *rel[6] = { KEY, OWNER, "1", "0", "1", CHANNEL };
    const char *drop[6] = { KEY, OWNER, "0", "0", "1", CHANNEL };
    const char *ren[3] = { KEY, "2300", OWNER };
    const char *force[4] = { KEY, "00000000-0000-4000-8000-000000000002:", "1", CHANNEL };
    redisReply *r;
    long long left;

    /* Lease 300 + delay 2000: the lease part is over once PTTL <= 2000. */
    flush(e);
    r = acquire_as(e, OWNER, "2300", "0", "0", "2000");
    expect_pair(r, 1, 1);
    freeReplyObject(r);
    if (!RT_WAIT_UNTIL(pttl(e) <= 1950, 2000))
        fail_msg("the lease part never ran out");
    r = acquire_as(e, OWNER, "2300", "1", "0", "2000");        /* reentry */
    expect_pair(r, -1, 0);
    freeReplyObject(r);
    r = run(e, RL__S_RENEW, 1, 3, ren);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, "0");
    freeReplyObject(r);
    IT_ASSERT_RANGE(pttl(e), 1, 1950);                       /* not renewed */
    r = acquire_as(e, OWNER, "2300", "0", "0", "2000");        /* anew: busy */
    assert_int_equal(r->element[0]->integer, 0);
    freeReplyObject(r);
    r = run(e, RL__S_RELEASE, 1, 6, rel);                      /* late and "clean" */
    expect_pair(r, -1, 0);
    freeReplyObject(r);
    assert_int_equal(count(e), 0);
    assert_int_equal(hlen(e), 1);                              /* the tombstone */
    left = pttl(e);
    IT_ASSERT_RANGE(left, 1, 1950);
    r = acquire_as(e, OTHER, "1000", "0", "0", "0");
    assert_int_equal(r->element[0]->integer, 0);
    freeReplyObject(r);

    /* A drop after the lease: the rest of the delay, not a new one. */
    flush(e);
    r = acquire_as(e, OWNER, "2300", "0", "0", "2000");
    freeReplyObject(r);
    if (!RT_WAIT_UNTIL(pttl(e) <= 1950, 2000))
        fail_msg("the lease part never ran out");
    r = run(e, RL__S_RELEASE, 1, 6, drop);
    expect_pair(r, 1, 0);
    freeReplyObject(r);
    assert_int_equal(hlen(e), 1);
    IT_ASSERT_RANGE(pttl(e), 1, 1950);

    /* A force-release of the tombstone alone ends the delay. */
    r = run(e, RL__S_FORCE, 1, 4, force);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    assert_int_equal(exists(e), 0);
}

/* The read-write acquire (KEYS lock; ARGV lease_ms, field, held, since,
 * side, intent_ms) of a new hold, side 'r' or 'w', the writer with an
 * intent of 3 s. */
static redisReply *rw_acquire(env *e, const char *field, const char *side)
{
    const char *a[7] = { KEY, "1000", field, "0", "123", side, "3000" };
    return run(e, RL__S_RW_ACQUIRE, 1, 7, a);
}

/* Redis's clock (ms), as the scripts read it. */
static long long redis_now(env *e)
{
    redisReply *r = redisCommand(e->rc, "TIME");
    long long ms;

    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    ms = strtoll(r->element[0]->str, NULL, 10) * 1000 + strtoll(r->element[1]->str, NULL, 10) / 1000;
    freeReplyObject(r);
    return ms;
}

/* HSET KEY with the fields and values of a (n strings), then a 60 s expiry. */
static void plant(env *e, int n, const char **a)
{
    const char *v[32];
    int i;
    redisReply *r;

    assert_true(n + 2 <= 32);
    v[0] = "HSET";
    v[1] = KEY;
    for (i = 0; i < n; i++)
        v[i + 2] = a[i];
    r = redisCommandArgv(e->rc, n + 2, v, NULL);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    freeReplyObject(r);
    r = redisCommand(e->rc, "PEXPIRE %s 60000", KEY);
    assert_non_null(r);
    freeReplyObject(r);
}

/* A thread whose write hold ran out (its deadline passed, no script has
 * dropped it yet) is no longer the writer: its read acquire waits for
 * another writer's live intent as any reader's does (the fast path took
 * "~w" naming our thread for a live write hold, and let us in past it). */
static void test_rw_own_lapsed_write_hold_passes_no_intent(void **state)
{
    env *e = *state;
    char past[24], later[64];
    long long now;
    redisReply *r;

    flush(e);
    now = redis_now(e);
    snprintf(past, sizeof past, "%lld", now - 1000);
    snprintf(later, sizeof later, "%s %lld", OTHER, now + 30000);
    {
        const char *a[10] = { OWNER, "1 123", "~d:" OWNER, past, "~n", "1", "~w", OWNER,
                              "~wi", later };
        plant(e, 10, a);
    }
    r = rw_acquire(e, OWNER ":r", "r");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    if (r->element[0]->integer != 0)
        fail_msg("admitted past a live intent, our write hold having run out: {%lld, %lld}",
                 r->element[0]->integer, r->element[1]->integer);
    IT_ASSERT_RANGE(r->element[1]->integer, 1, 30000);
    freeReplyObject(r);
}

/* The hash's fields, joined as "field=value;" in HGETALL's order: what a
 * refused call must leave as it was. */
static void snapshot(env *e, char *buf, size_t cap)
{
    redisReply *r = redisCommand(e->rc, "HGETALL %s", KEY);
    size_t i, n = 0;

    assert_true(r && r->type == REDIS_REPLY_ARRAY);
    buf[0] = '\0';
    for (i = 0; i + 1 < r->elements && n < cap; i += 2)
        n += (size_t)snprintf(buf + n, cap - n, "%s=%s;", r->element[i]->str,
                              r->element[i + 1]->str);
    freeReplyObject(r);
}

/* A hash not of the read-write layout RL__RW_LAYOUT (the scripts before
 * 809ff77 were never released, and carry no repair now): an intent field
 * of theirs ("~wi:<writer's field>" = deadline), or a live write hold
 * without its mark "~w" (theirs had none). A new hold on either side is
 * refused with an error, and nothing is written; before, the first was
 * dropped and the second marked, both silently (and a reader could be let
 * in beside such a writer before the mark was put in). */
static void test_rw_layout_unknown_refused(void **state)
{
    env *e = *state;
    char live[24], before[512], after[512];
    const char *side[2] = { "r", "w" };
    int c, i;
    redisReply *r;

    for (c = 0; c < 2; c++) {
        flush(e);
        snprintf(live, sizeof live, "%lld", redis_now(e) + 30000);
        if (c == 0) {
            const char *a[8] = { OTHER ":r", "1 123", "~d:" OTHER ":r", live, "~n", "1",
                                 "~wi:" OTHER, live };
            plant(e, 8, a);
        } else {
            const char *a[4] = { OTHER, "1 123", "~d:" OTHER, live };
            plant(e, 4, a);
        }
        snapshot(e, before, sizeof before);
        for (i = 0; i < 3; i++) {
            /* a reader, a writer, and a reader of the writer's own thread */
            const char *f = i < 2 ? OWNER : c == 1 ? OTHER ":r"
                                                   : "00000000-0000-4000-8000-000000000003:1:r";
            r = rw_acquire(e, f, i == 2 ? "r" : side[i]);
            if (r->type != REDIS_REPLY_ERROR ||
                strstr(r->str, "layout " RL__STR(RL__RW_LAYOUT)) == NULL)
                fail_msg("%s, %s: not refused",
                         c == 0 ? "an old intent field" : "a writer without its mark", f);
            freeReplyObject(r);
            snapshot(e, after, sizeof after);
            assert_string_equal(after, before);
        }
    }
}

/* Plant k readers "…-<i>:1:r" (i from `first`) with deadline `deadline`. */
static void plant_readers(env *e, int first, int k, long long deadline)
{
    int i;

    for (i = first; i < first + k; i++) {
        redisReply *r = redisCommand(e->rc, "HSET %s 00000000-0000-4000-8000-%012d:1:r %s "
                                     "~d:00000000-0000-4000-8000-%012d:1:r %lld", KEY, i, "1 0",
                                     i, deadline);
        assert_non_null(r);
        freeReplyObject(r);
    }
}

static long long hget_num(env *e, const char *field)
{
    redisReply *r = redisCommand(e->rc, "HGET %s %s", KEY, field);
    long long n;

    assert_non_null(r);
    n = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
    freeReplyObject(r);
    return n;
}

/* Redis's count of HSCAN calls so far (INFO commandstats). */
static long long hscans(env *e)
{
    redisReply *r = redisCommand(e->rc, "INFO commandstats");
    const char *p;
    long long n = 0;

    assert_true(r && r->type == REDIS_REPLY_STRING);
    p = strstr(r->str, "cmdstat_hscan:calls=");
    if (p != NULL)
        n = atoll(p + strlen("cmdstat_hscan:calls="));
    freeReplyObject(r);
    return n;
}

/* A reader's acquire and release of OWNER:r (the release by the plain
 * release's arguments, notice on). */
static void rw_pair(env *e)
{
    const char *rel[6] = { KEY, OWNER ":r", "1", "0", "1", CHANNEL };
    redisReply *r = rw_acquire(e, OWNER ":r", "r");

    expect_pair(r, 1, 1);
    freeReplyObject(r);
    r = run(e, RL__S_RW_RELEASE, 1, 6, rel);
    expect_pair(r, 1, 0);
    freeReplyObject(r);
}

/*
 * Dead readers on a name no writer asks for (issue 21, item 8): 400 holds
 * past their deadline beside one live reader (OTHER:r), planted with "~n"
 * counting them all and the sweep "~s" due. Readers' acquire+release pairs
 * alone (no writer, no whole look) drop them all within two sweeps of the
 * hash (2 x 803 / RL__RW_SWEEP_STEP calls), "~n" as the hash says after
 * every call; then the same with the live reader's renewals alone. Once
 * done, the sweep waits for the earliest live deadline: pairs cost no
 * HSCAN. (The scripts before left them all: HLEN 805 for good.)
 */
static void test_rw_sweep_drops_dead_readers(void **state)
{
    env *e = *state;
    const char *ren[3] = { KEY, "30000", OTHER ":r" };
    long long now, calls, bound, n, scans;
    char live[24], due[24];
    int pass;
    redisReply *r;

    for (pass = 0; pass < 2; pass++) {
        flush(e);
        now = redis_now(e);
        plant_readers(e, 0, 400, now - 1000);
        snprintf(live, sizeof live, "%lld", now + 60000);
        snprintf(due, sizeof due, "0 %lld", now - 1000);
        {
            const char *a[8] = { OTHER ":r", "1 123", "~d:" OTHER ":r", live, "~n", "401",
                                 "~s", due };
            plant(e, 8, a);
        }
        bound = 2 * (hlen(e) / RL__RW_SWEEP_STEP + 1);
        for (calls = 0; hlen(e) > 4 && calls <= bound; calls++) {
            if (pass == 0) {
                rw_pair(e);
            } else {
                r = run(e, RL__S_RW_RENEW, 1, 3, ren);
                assert_true(r->type == REDIS_REPLY_STRING && strcmp(r->str, "1") == 0);
                freeReplyObject(r);
            }
            n = hget_num(e, "~n");
            if (hlen(e) != 2 * n + 2)
                fail_msg("%s %lld: ~n = %lld, HLEN %lld", pass ? "renewal" : "pair", calls, n,
                         hlen(e));
        }
        if (hlen(e) > 4)
            fail_msg("%s: HLEN %lld after %lld calls", pass ? "renewals" : "pairs", hlen(e),
                     calls);
        print_message("%s: 400 dead readers dropped in %lld calls (bound %lld)\n",
                      pass ? "renewals" : "reader pairs", calls, bound);
        assert_int_equal(hget_num(e, "~n"), 1);
    }
    /* Nothing due: no sweep. */
    scans = hscans(e);
    for (calls = 0; calls < 20; calls++)
        rw_pair(e);
    assert_int_equal(hscans(e), scans);
}

/* The sweep leaves live holds alone, however many it reads: 300 readers
 * whose deadlines are a minute off, the sweep due; a full sweep's worth of
 * pairs leaves all 300, and "~n" at 300. */
static void test_rw_sweep_keeps_live_readers(void **state)
{
    env *e = *state;
    long long now;
    char due[24];
    int calls;

    flush(e);
    now = redis_now(e);
    plant_readers(e, 0, 300, now + 60000);
    snprintf(due, sizeof due, "0 %lld", now - 1);
    {
        const char *a[4] = { "~n", "300", "~s", due };
        plant(e, 4, a);
    }
    for (calls = 0; calls < 2 * (602 / RL__RW_SWEEP_STEP + 1); calls++)
        rw_pair(e);
    assert_int_equal(hlen(e), 602);
    assert_int_equal(hget_num(e, "~n"), 300);
}

/* A write hold past its deadline met by the sweep (a renewal of a live
 * reader's, the sweep due): dropped with its mark "~w" and "~n" counts the
 * reader alone, so that the next reader's few-field look lets it in. */
static void test_rw_sweep_drops_a_dead_writer(void **state)
{
    env *e = *state;
    const char *ren[3] = { KEY, "30000", OTHER ":r" };
    char past[24], live[24], due[24];
    long long now;
    redisReply *r;

    flush(e);
    now = redis_now(e);
    snprintf(past, sizeof past, "%lld", now - 1000);
    snprintf(live, sizeof live, "%lld", now + 60000);
    snprintf(due, sizeof due, "0 %lld", now - 1000);
    {
        const char *a[14] = { OTHER ":r", "1 123", "~d:" OTHER ":r", live, OTHER, "1 123",
                              "~d:" OTHER, past, "~w", OTHER, "~n", "2", "~s", due };
        plant(e, 14, a);
    }
    r = run(e, RL__S_RW_RENEW, 1, 3, ren);
    assert_true(r->type == REDIS_REPLY_STRING && strcmp(r->str, "1") == 0);
    freeReplyObject(r);
    assert_int_equal(hlen(e), 4);       /* the reader, its deadline, "~n", "~s" */
    assert_int_equal(hget_num(e, "~n"), 1);
    r = rw_acquire(e, OWNER ":r", "r");
    expect_pair(r, 1, 1);
    freeReplyObject(r);
}

/* More dead holds than one look drops (it drops a thousand fields at most,
 * 500 holds): those it leaves stay counted in "~n", so the hash stays as
 * "~n" says (with the dead ones left out of the count, a release of one
 * later brought "~n" below the holds left). */
static void test_rw_dead_past_the_cap_stay_counted(void **state)
{
    env *e = *state;
    long long now, n, fields;
    redisReply *r;
    int i;

    flush(e);
    now = redis_now(e);
    for (i = 0; i < 600; i++) {
        r = redisCommand(e->rc, "HSET %s 00000000-0000-4000-8000-%012d:1:r %s "
                         "~d:00000000-0000-4000-8000-%012d:1:r %lld", KEY, i, "1 0", i,
                         now - 1000);
        assert_non_null(r);
        freeReplyObject(r);
    }
    {
        char live[24];
        snprintf(live, sizeof live, "%lld", now + 30000);
        const char *a[6] = { OTHER ":r", "1 123", "~d:" OTHER ":r", live, "~n", "601" };
        plant(e, 6, a);
    }
    /* A writer's try reads the whole hash: 500 dead holds dropped. */
    r = rw_acquire(e, OWNER, "w");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->element[0]->integer, 0);
    freeReplyObject(r);
    r = redisCommand(e->rc, "HGET %s ~n", KEY);
    assert_true(r && r->type == REDIS_REPLY_STRING);
    n = atoll(r->str);
    freeReplyObject(r);
    fields = hlen(e);
    /* the holds and their deadlines, "~n", the writer's intent "~wi", the
     * sweep "~s" */
    if (fields != 2 * n + 3)
        fail_msg("~n = %lld but the hash has %lld fields (expected %lld)", n, fields, 2 * n + 3);
    assert_int_equal(n, 101);
}

/* A name held by a plain owner without expiry (not set by rlock): the
 * read-write acquire answers its PTTL, -1, as the plain acquire does (the
 * client then waits a lease; a wait of 0 had it ask again at once, every
 * millisecond, for as long as it waited). */
static void test_rw_wait_on_a_key_without_expiry(void **state)
{
    env *e = *state;
    redisReply *r;

    flush(e);
    r = redisCommand(e->rc, "HSET %s %s 1", KEY, OTHER);
    assert_non_null(r);
    freeReplyObject(r);
    r = rw_acquire(e, OWNER, "w");
    expect_pair(r, 0, -1);
    freeReplyObject(r);
    r = rw_acquire(e, OWNER ":r", "r");
    expect_pair(r, 0, -1);
    freeReplyObject(r);
    assert_int_equal(pttl(e), -1);
}

/* A writer waiting on a plain holder's key (a hold of 500 ms) registers no
 * intent there, and leaves the key's expiry as it is. */
static void test_rw_writer_leaves_a_plain_key_alone(void **state)
{
    env *e = *state;
    const char *a[4] = { KEY, "500", OTHER, "0" };
    redisReply *r;

    flush(e);
    r = run(e, RL__S_ACQUIRE, 1, 4, a);
    expect_pair(r, 1, 1);
    freeReplyObject(r);
    r = rw_acquire(e, OWNER, "w");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->element[0]->integer, 0);
    freeReplyObject(r);
    IT_ASSERT_RANGE(pttl(e), 1, 500);
    r = redisCommand(e->rc, "HLEN %s", KEY);
    assert_non_null(r);
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
}

/* A read-write acquire with a bad intent answers an error and writes
 * nothing (it wrote the intent, then PEXPIRE failed: "1e30" left an
 * intent that stopped every new reader while the key lived). */
static void test_rw_bad_intent_writes_nothing(void **state)
{
    static const char *const bad[] = { "1e30", "2147483648", "1.5", "-5", "nan" };
    env *e = *state;
    const char *rd[7] = { KEY, "60000", OTHER ":r", "0", "123", "r", "0" };
    size_t i;
    redisReply *r;

    flush(e);
    r = run(e, RL__S_RW_ACQUIRE, 1, 7, rd);
    expect_pair(r, 1, 1);
    freeReplyObject(r);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *a[7] = { KEY, "1000", OWNER, "0", "123", "w", bad[i] };
        r = run(e, RL__S_RW_ACQUIRE, 1, 7, a);
        if (r->type != REDIS_REPLY_ERROR)
            fail_msg("intent \"%s\": no error", bad[i]);
        freeReplyObject(r);
        r = redisCommand(e->rc, "HLEN %s", KEY);
        assert_non_null(r);
        if (r->integer != 4)    /* the reader's field, its deadline, the count, the sweep */
            fail_msg("intent \"%s\": %lld fields, expected 4", bad[i], r->integer);
        freeReplyObject(r);
    }
}

/* ---- scripts on a Cluster slot's migrating source -----------------------
 *
 * While a slot is MIGRATING, its source runs a script only when every key
 * the script declares is there (else TRYAGAIN or ASK: refused whole), and
 * stops it at the first command on a key that is no longer there ("Script
 * attempted to access a non local key"), after what it wrote before: Redis
 * does not undo those writes, and the caller is told the script failed.
 * This shim, put in front of a script's text, has one server judge the
 * same way: keys declared but absent refuse the call whole ("REFUSED"); a
 * command on a key absent at that point stops it ("non local key"). The
 * commands of rlock's scripts name their key first; TIME, PUBLISH and
 * SPUBLISH name none (Redis serves a channel's notice on the source).
 */
static const char migrating_shim[] =
    "local real = redis\n"
    "local function gone(cmd, k)\n"
    "  local c = string.lower(cmd)\n"
    "  return c ~= 'time' and c ~= 'publish' and c ~= 'spublish' and\n"
    "         real.call('exists', k) == 0\n"
    "end\n"
    "local redis = {\n"
    "  call = function(cmd, k, ...)\n"
    "    if k == nil then return real.call(cmd) end\n"
    "    if gone(cmd, k) then error('non local key ' .. k .. ' (' .. cmd .. ')') end\n"
    "    return real.call(cmd, k, ...)\n"
    "  end,\n"
    "  pcall = function(cmd, k, ...)\n"
    "    if gone(cmd, k) then return {err = 'non local key ' .. k} end\n"
    "    return real.pcall(cmd, k, ...)\n"
    "  end,\n"
    "  error_reply = real.error_reply, status_reply = real.status_reply,\n"
    "  replicate_commands = real.replicate_commands,\n"
    "}\n"
    "for _, k in ipairs(KEYS) do\n"
    "  if real.call('exists', k) == 0 then return real.status_reply('REFUSED') end\n"
    "end\n";

/* EVAL of script's text behind the shim (nkeys keys, then the args). */
static redisReply *run_migrating(env *e, int script, int nkeys, int argc,
                                 const char *const *argv)
{
    size_t sl = strlen(migrating_shim), tl = strlen(rl__script_src[script]);
    char *text = malloc(sl + tl + 1);
    const char *v[16];
    char nk[8];
    int i, n = 0;
    redisReply *r;

    assert_non_null(text);
    assert_true(argc + 3 <= 16);
    memcpy(text, migrating_shim, sl);
    memcpy(text + sl, rl__script_src[script], tl + 1);
    snprintf(nk, sizeof nk, "%d", nkeys);
    v[n++] = "EVAL";
    v[n++] = text;
    v[n++] = nk;
    for (i = 0; i < argc; i++)
        v[n++] = argv[i];
    r = redisCommandArgv(e->rc, n, v, NULL);
    free(text);
    if (r == NULL)
        fail_msg("EVAL: connection error: %s", e->rc->errstr);
    return r;
}

/* Refused whole or run to its end: never an error, above all never
 * stopped midway. */
static void expect_whole(redisReply *r, const char *what)
{
    char d[512];

    if (r->type == REDIS_REPLY_ERROR)
        fail_msg("%s: %s", what, describe(r, d, sizeof d));
    freeReplyObject(r);
}

#define QUEUE_KEY "rl:{s}:queue"
#define PLACES_KEY "rl:{s}:queue:t"
#define DEAD "00000000-0000-4000-8000-00000000dead:1"
#define NEXT "00000000-0000-4000-8000-000000000001:8"

#define PLACELESS "00000000-0000-4000-8000-000000000004:2"

/* A fair name's state: the lock free (holder 0), ours (1) or another's (2);
 * queued, a bit each: 1 a dead waiter (its place ran out), 2 us, 4
 * another, 8 one queued without a place (left by hand), in that order of
 * arrival; the keys live for 10 s. */
static void fair_state(env *e, int holder, int queued)
{
    static const char *const who[4] = { DEAD, OWNER, OTHER, PLACELESS };
    long long now;
    int i;

    flush(e);
    now = redis_now(e);
    if (holder)
        freeReplyObject(redisCommand(e->rc, "HSET %s %s 1", KEY, holder == 1 ? OWNER : OTHER));
    for (i = 0; i < 4; i++) {
        if (!(queued & (1 << i)))
            continue;
        freeReplyObject(redisCommand(e->rc, "ZADD %s %d %s", QUEUE_KEY, i + 1, who[i]));
        if (i < 3)
            freeReplyObject(redisCommand(e->rc, "ZADD %s %lld %s", PLACES_KEY,
                                         i == 0 ? now - 1 : now + 2000, who[i]));
    }
    freeReplyObject(redisCommand(e->rc, "PEXPIRE %s 10000", KEY));
    freeReplyObject(redisCommand(e->rc, "PEXPIRE %s 10000", QUEUE_KEY));
    freeReplyObject(redisCommand(e->rc, "PEXPIRE %s 10000", PLACES_KEY));
}

/* One run of the matrix below: 1 when the script was stopped midway (or
 * failed otherwise), said on stdout. */
static int stopped(redisReply *r, const char *what)
{
    char d[512];
    int bad = r->type == REDIS_REPLY_ERROR;

    if (bad)
        print_message("%s: %s\n", what, describe(r, d, sizeof d));
    freeReplyObject(r);
    return bad;
}

/* Issue 21, item 1: every fair script, in every state of the lock and the
 * queue, on a migrating source: refused whole or run whole. The scripts
 * before the fix dropped the last field (the lock key with it) or the
 * last places (the queue's keys), then touched those keys again: a
 * release was applied and reported failed, a waiter's acquire failed. */
static void test_fair_scripts_whole_on_a_migrating_source(void **state)
{
    env *e = *state;
    const char *const acq[2][8] = {
        { KEY, QUEUE_KEY, PLACES_KEY, "10000", OWNER, "0", "123", "2000" },
        { KEY, QUEUE_KEY, PLACES_KEY, "10000", OWNER, "0", "123", "0" },
    };
    const char *const rel[3][10] = {
        { KEY, QUEUE_KEY, PLACES_KEY, OWNER, "1", "0", "1", CHANNEL },
        { KEY, QUEUE_KEY, PLACES_KEY, OWNER, "0", "0", "1", CHANNEL },
        { KEY, QUEUE_KEY, PLACES_KEY, OWNER, "1", "0", "1", CHANNEL, NEXT, "2000" },
    };
    const char *const leave[2][6] = {
        { KEY, QUEUE_KEY, PLACES_KEY, OWNER, "1", CHANNEL },
        { KEY, QUEUE_KEY, PLACES_KEY, "", "1", CHANNEL },
    };
    char what[128];
    int holder, queued, i, runs = 0, bad = 0;

    for (holder = 0; holder < 3; holder++) {
        for (queued = 0; queued < 16; queued++) {
            for (i = 0; i < 2; i++, runs++) {
                fair_state(e, holder, queued);
                snprintf(what, sizeof what, "acquire (place %s), holder %d, queued %d",
                         acq[i][7], holder, queued);
                bad += stopped(run_migrating(e, RL__S_FAIR_ACQUIRE, 3, 8, acq[i]), what);
            }
            for (i = 0; i < 3; i++, runs++) {
                fair_state(e, holder, queued);
                snprintf(what, sizeof what, "release %d, holder %d, queued %d", i, holder,
                         queued);
                bad += stopped(run_migrating(e, RL__S_FAIR_RELEASE, 3, i == 2 ? 10 : 8,
                                             rel[i]), what);
            }
            for (i = 0; i < 2; i++, runs++) {
                fair_state(e, holder, queued);
                snprintf(what, sizeof what, "leave %d, holder %d, queued %d", i, holder, queued);
                bad += stopped(run_migrating(e, RL__S_FAIR_LEAVE, 3, 6, leave[i]), what);
            }
        }
    }
    if (bad)
        fail_msg("%d of %d fair script runs stopped midway on a migrating source", bad, runs);
}

/* What the scripts changed, on a migrating source where they run: the
 * last release takes the lock and the dead waiter's place, and tells the
 * plain channel (nobody left queued); a waiter's ask drops the dead one
 * and queues the caller; a waiter leaving drops both places. */
static void test_fair_scripts_on_a_migrating_source_do_their_work(void **state)
{
    env *e = *state;
    const char *const rel[8] = { KEY, QUEUE_KEY, PLACES_KEY, OWNER, "1", "0", "1", CHANNEL };
    const char *const relnext[10] = { KEY, QUEUE_KEY, PLACES_KEY, OWNER, "1", "0", "1",
                                      CHANNEL, NEXT, "2000" };
    const char *const acq[8] = { KEY, QUEUE_KEY, PLACES_KEY, "10000", NEXT, "0", "123", "2000" };
    const char *const leave[6] = { KEY, QUEUE_KEY, PLACES_KEY, OTHER, "1", CHANNEL };
    redisReply *r;

    fair_state(e, 1, 1);
    r = run_migrating(e, RL__S_FAIR_RELEASE, 3, 8, rel);
    expect_pair(r, 1, 0);
    freeReplyObject(r);
    assert_int_equal(exists(e), 0);
    assert_int_equal(rt_redis_exists(e->rc, QUEUE_KEY, strlen(QUEUE_KEY)), 0);
    assert_int_equal(rt_redis_exists(e->rc, PLACES_KEY, strlen(PLACES_KEY)), 0);

    /* The release queues our next thread in the dead one's stead. */
    fair_state(e, 1, 1);
    r = run_migrating(e, RL__S_FAIR_RELEASE, 3, 10, relnext);
    expect_pair(r, 1, 0);
    freeReplyObject(r);
    assert_int_equal(exists(e), 0);
    r = redisCommand(e->rc, "ZRANGE %s 0 -1", QUEUE_KEY);
    assert_true(r && r->type == REDIS_REPLY_ARRAY && r->elements == 1);
    assert_string_equal(r->element[0]->str, NEXT);
    freeReplyObject(r);
    IT_ASSERT_RANGE(rt_redis_pttl(e->rc, PLACES_KEY, strlen(PLACES_KEY)), 1000, 10000);

    /* A waiter's ask while another holds: the dead one goes, it queues. */
    fair_state(e, 2, 1);
    r = run_migrating(e, RL__S_FAIR_ACQUIRE, 3, 8, acq);
    assert_true(r->type == REDIS_REPLY_ARRAY && r->element[0]->integer == 0);
    IT_ASSERT_RANGE(r->element[1]->integer, 1, 10000);
    freeReplyObject(r);
    r = redisCommand(e->rc, "ZRANGE %s 0 -1", PLACES_KEY);
    assert_true(r && r->type == REDIS_REPLY_ARRAY && r->elements == 1);
    assert_string_equal(r->element[0]->str, NEXT);
    freeReplyObject(r);

    /* The last live waiter leaves, the dead one with it. */
    fair_state(e, 1, 1 | 4);
    expect_whole(run_migrating(e, RL__S_FAIR_LEAVE, 3, 6, leave), "leave");
    assert_int_equal(rt_redis_exists(e->rc, QUEUE_KEY, strlen(QUEUE_KEY)), 0);
    assert_int_equal(rt_redis_exists(e->rc, PLACES_KEY, strlen(PLACES_KEY)), 0);
    assert_int_equal(count(e), 1);
}

/* ---- a set's one script ---- */

#define KEY2 "rl:{s}2"
#define KEY3 "rl:{s}3"

/* set_acquire.lua over KEY, KEY2, KEY3 with these held counts. */
static redisReply *set_acquire(env *e, const char *lease, const char *delay, const char *h1,
                               const char *h2, const char *h3)
{
    const char *a[10] = { KEY, KEY2, KEY3, lease, OWNER, "123", delay, h1, h2, h3 };
    return run(e, RL__S_SET_ACQUIRE, 3, 10, a);
}

/* Our field's count in key k, 0 when absent. */
static long long count_of(env *e, const char *k)
{
    redisReply *r = redisCommand(e->rc, "HGET %s %s", k, OWNER);
    long long n = r && r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;

    assert_non_null(r);
    freeReplyObject(r);
    return n;
}

static void expect_counts(env *e, long long c1, long long c2, long long c3)
{
    assert_int_equal(count_of(e, KEY), c1);
    assert_int_equal(count_of(e, KEY2), c2);
    assert_int_equal(count_of(e, KEY3), c3);
}

/* A reply {code, i[, value]}. */
static void expect_member(redisReply *r, long long code, long long i)
{
    char d[256];

    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
        r->element[0]->integer != code || r->element[1]->integer != i)
        fail_msg("expected {%lld, %lld, ...}, got %s", code, i, describe(r, d, sizeof d));
    freeReplyObject(r);
}

static void expect_taken(redisReply *r)
{
    char d[256];

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 1 || r->element[0]->integer != 1)
        fail_msg("expected {1}, got %s", describe(r, d, sizeof d));
    freeReplyObject(r);
}

/* Every member or none: a bad lease, a busy member, a reentry whose count
 * or field is not the caller's write nothing; a free set is taken whole,
 * entered again whole. */
static void test_set_acquire_all_or_none(void **state)
{
    env *e = *state;
    const char *other[4] = { KEY2, "60000", OTHER, "0" };
    const char *const again[10] = { KEY, KEY2, KEY3, "60000", OWNER, "123", "0", "3", "1", "3" };
    redisReply *r;
    size_t i;

    for (i = 0; i < NHOSTILE; i++) {
        r = set_acquire(e, hostile[i], "0", "0", "0", "0");
        assert_int_equal(r->type, REDIS_REPLY_ERROR);
        freeReplyObject(r);
        assert_int_equal(exists(e), 0);
    }
    expect_pair(r = run(e, RL__S_ACQUIRE, 1, 4, other), 1, 1);
    freeReplyObject(r);
    expect_member(set_acquire(e, "60000", "0", "0", "0", "0"), 0, 2);
    expect_counts(e, 0, 0, 0);
    assert_int_equal(exists(e), 0);

    flush(e);
    expect_taken(set_acquire(e, "60000", "0", "0", "0", "0"));
    expect_counts(e, 1, 1, 1);
    IT_ASSERT_RANGE(rt_redis_pttl(e->rc, KEY3, strlen(KEY3)), 1, 60000);
    expect_taken(set_acquire(e, "60000", "0", "1", "1", "1"));
    expect_counts(e, 2, 2, 2);
    expect_member(set_acquire(e, "60000", "0", "2", "2", "1"), -2, 3);
    expect_counts(e, 2, 2, 2);
    r = redisCommand(e->rc, "HDEL %s %s", KEY2, OWNER);
    freeReplyObject(r);
    expect_member(set_acquire(e, "60000", "0", "2", "2", "2"), -1, 2);
    expect_counts(e, 2, 0, 2);
    /* A new member beside two reentries: all taken. */
    expect_taken(set_acquire(e, "60000", "0", "2", "0", "2"));
    expect_counts(e, 3, 1, 3);
    /* On a migrating slot's source: whole (every key read before any write). */
    expect_whole(run_migrating(e, RL__S_SET_ACQUIRE, 3, 10, again), "a set entered again");
    expect_counts(e, 4, 2, 4);
}

/* Lock-delay: new holds carry it; a member whose lease ran out (its
 * tombstone) is busy to the set, and nothing else is written. */
static void test_set_acquire_lock_delay(void **state)
{
    env *e = *state;
    redisReply *r;

    expect_taken(set_acquire(e, "65000", "5000", "0", "0", "0"));
    r = redisCommand(e->rc, "HGET %s ~delay", KEY2);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, "5000");
    freeReplyObject(r);
    flush(e);
    r = redisCommand(e->rc, "HSET %s ~delay 5000", KEY3);
    freeReplyObject(r);
    r = redisCommand(e->rc, "PEXPIRE %s 4000", KEY3);
    freeReplyObject(r);
    expect_member(set_acquire(e, "65000", "5000", "0", "0", "0"), 0, 3);
    expect_counts(e, 0, 0, 0);
    assert_int_equal(exists(e), 0);
}

/* ---- the semaphore's scripts ---- */

static redisReply *sem_acquire(env *e, const char *owner, const char *lease, const char *held,
                               const char *n, const char *k)
{
    const char *a[7] = { KEY, lease, owner, held, "123", n, k };
    return run(e, RL__S_SEM_ACQUIRE, 1, 7, a);
}

/* Bad leases and permit counts: an error, nothing written (a new hold),
 * the count and expiry kept (a reentry, a release). */
static void test_sem_bad_arguments_write_nothing(void **state)
{
    env *e = *state;
    static const char *const counts[][2] = { { "0", "1" }, { "3", "0" }, { "3", "4" },
                                             { "abc", "1" }, { "3", "1.5" }, { "3", "" } };
    const char *rel[6] = { KEY, OWNER, "2", NULL, "1", CHANNEL };
    redisReply *r;
    size_t i;

    for (i = 0; i < NHOSTILE; i++) {
        flush(e);
        r = sem_acquire(e, OWNER, hostile[i], "0", "3", "1");
        assert_int_equal(r->type, REDIS_REPLY_ERROR);
        freeReplyObject(r);
        assert_int_equal(exists(e), 0);
    }
    for (i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        r = sem_acquire(e, OWNER, "60000", "0", counts[i][0], counts[i][1]);
        assert_int_equal(r->type, REDIS_REPLY_ERROR);
        freeReplyObject(r);
        assert_int_equal(exists(e), 0);
    }
    expect_pair(r = sem_acquire(e, OWNER, "60000", "0", "3", "2"), 1, 1);
    freeReplyObject(r);
    expect_pair(r = sem_acquire(e, OWNER, "60000", "1", "3", "2"), 1, 2);
    freeReplyObject(r);
    for (i = 0; i < NHOSTILE; i++) {
        r = sem_acquire(e, OWNER, hostile[i], "2", "3", "2");
        assert_int_equal(r->type, REDIS_REPLY_ERROR);
        freeReplyObject(r);
        if (strcmp(hostile[i], "0") == 0)
            continue;       /* a release's "leave the lease alone" */
        rel[3] = hostile[i];
        r = run(e, RL__S_SEM_RELEASE, 1, 6, rel);
        assert_int_equal(r->type, REDIS_REPLY_ERROR);
        freeReplyObject(r);
        assert_int_equal(count(e), 2);
        IT_ASSERT_RANGE(pttl(e), 1, 60000);
    }
}

/* Another N than the live holds': refused, nothing written; a hold past
 * its deadline is dropped by the next new hold's look and its permits
 * counted free; the last release takes the key. */
static void test_sem_count_and_dead_holds(void **state)
{
    env *e = *state;
    const char *rel[6] = { KEY, OWNER, "1", "0", "1", CHANNEL };
    redisReply *r;

    flush(e);
    expect_pair(r = sem_acquire(e, OTHER, "60000", "0", "3", "2"), 1, 1);
    freeReplyObject(r);
    r = sem_acquire(e, OWNER, "60000", "0", "4", "1");
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_non_null(strstr(r->str, "has 3 permits in Redis, not 4"));
    freeReplyObject(r);
    assert_int_equal(count(e), 0);
    r = sem_acquire(e, OWNER, "60000", "0", "3", "2");          /* 2 + 2 > 3 */
    assert_int_equal(r->element[0]->integer, 0);
    IT_ASSERT_RANGE(r->element[1]->integer, 59000, 60000);      /* OTHER's deadline */
    assert_int_equal(r->elements, 3);
    assert_int_equal(r->element[2]->integer, 1);                /* 1 permit short */
    freeReplyObject(r);
    /* OTHER's deadline passes (set back by hand): its 2 permits are free. */
    freeReplyObject(redisCommand(e->rc, "HSET %s ~d:%s 1", KEY, OTHER));
    expect_pair(r = sem_acquire(e, OWNER, "60000", "0", "3", "3"), 1, 1);
    freeReplyObject(r);
    r = redisCommand(e->rc, "HEXISTS %s %s", KEY, OTHER);
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    expect_pair(r = run(e, RL__S_SEM_RELEASE, 1, 6, rel), 1, 0);
    freeReplyObject(r);
    assert_int_equal(exists(e), 0);
}

/* A fenced new hold of k permits of n (KEYS lock, fence): the reply's
 * token, its slots written to slots ("0,2"). */
static long long sem_fenced(env *e, const char *owner, const char *n, const char *k,
                            char *slots, size_t cap)
{
    const char *a[8] = { KEY, FENCE_KEY, "60000", owner, "0", "123", n, k };
    redisReply *r = run(e, RL__S_SEM_ACQUIRE, 2, 8, a);
    char d[256];
    size_t i, at = 0;
    long long t;

    if (r->type != REDIS_REPLY_ARRAY || r->elements < 4 || r->element[0]->integer != 1)
        fail_msg("expected {1, 1, token, slot...}, got %s", describe(r, d, sizeof d));
    t = r->element[2]->integer;
    slots[0] = '\0';
    for (i = 3; i < r->elements; i++)
        at += (size_t)snprintf(slots + at, cap - at, "%s%lld", i > 3 ? "," : "",
                               r->element[i]->integer);
    freeReplyObject(r);
    return t;
}

/* Fencing per permit: each new hold takes the lowest slots no live hold
 * has and a token from the name's counter, both in its value; a dead
 * hold's slots are free again; more than RL__SEM_SLOTS_MAX permits and a
 * counter past 2^53 are refused, nothing written but the counter. */
static void test_sem_fenced_slots(void **state)
{
    env *e = *state;
    const char *big[8] = { KEY, FENCE_KEY, "60000", OWNER, "0", "123", "20", "17" };
    char s[64], want[64];
    long long t1, t2, t3;
    redisReply *r;

    flush(e);
    t1 = sem_fenced(e, OTHER, "3", "2", s, sizeof s);
    assert_string_equal(s, "0,1");
    t2 = sem_fenced(e, OWNER, "3", "1", s, sizeof s);
    assert_string_equal(s, "2");
    assert_int_equal(t2, t1 + 1);
    r = redisCommand(e->rc, "HGET %s %s", KEY, OWNER);
    snprintf(want, sizeof want, "1 123 %lld 2", t2);
    assert_string_equal(r->str, want);
    freeReplyObject(r);
    /* OTHER's deadline passes: its slots go to the next hold. */
    freeReplyObject(redisCommand(e->rc, "HSET %s ~d:%s 1", KEY, OTHER));
    t3 = sem_fenced(e, "00000000-0000-4000-8000-000000000003:1", "3", "2", s, sizeof s);
    assert_string_equal(s, "0,1");
    assert_true(t3 > t2);
    flush(e);
    r = run(e, RL__S_SEM_ACQUIRE, 2, 8, big);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    assert_int_equal(exists(e), 0);
    assert_int_equal(rt_redis_exists(e->rc, FENCE_KEY, strlen(FENCE_KEY)), 0);
    freeReplyObject(redisCommand(e->rc, "SET %s 9007199254740991", FENCE_KEY));
    big[7] = "1";
    r = run(e, RL__S_SEM_ACQUIRE, 2, 8, big);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_non_null(strstr(r->str, "2^53"));
    freeReplyObject(r);
    assert_int_equal(exists(e), 0);
}

/* The first hold on a free name has no deadline field, nor "~k:" for one
 * permit: the key's expiry is its deadline. Another's new hold writes it
 * that deadline before moving the key's expiry out, so a holder that dies
 * keeps its permit for its own lease, not the other's; a reentry and a
 * renewal with a shorter lease write their own, the key's expiry, never
 * less (the client's confirmed expiry only moves forward). */
static void test_sem_first_hold_has_the_key_expiry(void **state)
{
    env *e = *state;
    const char *renew[3] = { KEY, "1000", OWNER };
    redisReply *r;

    flush(e);
    expect_pair(r = sem_acquire(e, OWNER, "5000", "0", "3", "1"), 1, 1);
    freeReplyObject(r);
    assert_int_equal(hlen(e), 2);                                 /* the hold, "~N" */
    IT_ASSERT_RANGE(pttl(e), 1, 5000);
    expect_pair(r = sem_acquire(e, OTHER, "60000", "0", "3", "2"), 1, 1);
    freeReplyObject(r);
    IT_ASSERT_RANGE(hget_num(e, "~d:" OWNER) - redis_now(e), 1, 5000);   /* not 60 s */
    IT_ASSERT_RANGE(pttl(e), 59000, 60000);
    /* Its deadline passes (set back by hand): its permit is free. */
    freeReplyObject(redisCommand(e->rc, "HSET %s ~d:%s 1", KEY, OWNER));
    expect_pair(r = sem_acquire(e, "00000000-0000-4000-8000-000000000003:1", "60000", "0", "3",
                                "1"), 1, 1);
    freeReplyObject(r);
    flush(e);
    expect_pair(r = sem_acquire(e, OWNER, "60000", "0", "3", "1"), 1, 1);
    freeReplyObject(r);
    expect_pair(r = sem_acquire(e, OWNER, "1000", "1", "3", "1"), 1, 2);
    freeReplyObject(r);
    IT_ASSERT_RANGE(hget_num(e, "~d:" OWNER) - redis_now(e), 59000, 60000);
    flush(e);
    expect_pair(r = sem_acquire(e, OWNER, "60000", "0", "3", "1"), 1, 1);
    freeReplyObject(r);
    r = run(e, RL__S_SEM_RENEW, 1, 3, renew);
    assert_string_equal(r->str, "1");
    freeReplyObject(r);
    IT_ASSERT_RANGE(hget_num(e, "~d:" OWNER) - redis_now(e), 59000, 60000);
    IT_ASSERT_RANGE(pttl(e), 59000, 60000);
}

/* The semaphore's releases (the last, a drop, a dead hold's) and renewal
 * run whole on a migrating source. */
static void test_sem_scripts_whole_on_a_migrating_source(void **state)
{
    env *e = *state;
    const char *const rel1[6] = { KEY, OWNER, "1", "0", "1", CHANNEL };
    const char *const drop[6] = { KEY, OWNER, "0", "0", "1", CHANNEL };
    const char *const renew[3] = { KEY, "60000", OWNER };
    redisReply *r;

    flush(e);
    expect_pair(r = sem_acquire(e, OWNER, "60000", "0", "3", "2"), 1, 1);
    freeReplyObject(r);
    expect_whole(run_migrating(e, RL__S_SEM_RENEW, 1, 3, renew), "renewal");
    expect_whole(run_migrating(e, RL__S_SEM_RELEASE, 1, 6, rel1), "last release");
    assert_int_equal(exists(e), 0);
    expect_pair(r = sem_acquire(e, OWNER, "60000", "0", "3", "2"), 1, 1);
    freeReplyObject(r);
    expect_whole(run_migrating(e, RL__S_SEM_RELEASE, 1, 6, drop), "drop");
    assert_int_equal(exists(e), 0);
    expect_pair(r = sem_acquire(e, OTHER, "60000", "0", "3", "1"), 1, 1);
    freeReplyObject(r);
    expect_pair(r = sem_acquire(e, OWNER, "60000", "0", "3", "2"), 1, 1);
    freeReplyObject(r);
    freeReplyObject(redisCommand(e->rc, "HSET %s ~d:%s 1", KEY, OWNER));
    expect_whole(run_migrating(e, RL__S_SEM_RELEASE, 1, 6, rel1), "a dead hold's release");
    expect_whole(run_migrating(e, RL__S_SEM_RELEASE, 1, 6,
                               (const char *const[6]){ KEY, OTHER, "1", "0", "1", CHANNEL }),
                 "the last live hold's release");
    assert_int_equal(exists(e), 0);
}

/* The plain and read-write scripts already keep the rule (the fix is the
 * fair scripts'): their last releases, a drop leaving a lock-delay's
 * tombstone, a force-release, a writer taking its intent back, on a
 * migrating source. */
static void test_plain_and_rw_scripts_whole_on_a_migrating_source(void **state)
{
    env *e = *state;
    const char *const rel1[6] = { KEY, OWNER, "1", "0", "1", CHANNEL };
    const char *const drop[6] = { KEY, OWNER, "0", "0", "1", CHANNEL };
    const char *const force[4] = { KEY, "00000000-0000-4000-8000-000000000001:", "1", CHANNEL };
    const char *delayed[7] = { KEY, "10000", OWNER, "0", "123", "0", "5000" };
    const char *const rrel[6] = { KEY, OWNER ":r", "1", "0", "1", CHANNEL };
    static const char intent[] = "~wi:" OWNER;
    const char *const wback[6] = { KEY, intent, "0", "0", "1", CHANNEL };
    redisReply *r;

    hold(e, 1);
    expect_whole(run_migrating(e, RL__S_RELEASE, 1, 6, rel1), "plain last release");
    assert_int_equal(exists(e), 0);
    hold(e, 1);
    expect_whole(run_migrating(e, RL__S_RELEASE, 1, 6, drop), "plain drop");
    hold(e, 2);
    expect_whole(run_migrating(e, RL__S_FORCE, 1, 4, force), "force-release");
    assert_int_equal(exists(e), 0);

    flush(e);
    expect_pair(r = run(e, RL__S_ACQUIRE, 1, 7, delayed), 1, 1);
    freeReplyObject(r);
    expect_whole(run_migrating(e, RL__S_RELEASE, 1, 6, drop), "drop with a lock-delay");
    assert_int_equal(exists(e), 1);         /* the tombstone */
    expect_whole(run_migrating(e, RL__S_FORCE, 1, 4, force), "force-release of a tombstone");

    flush(e);
    expect_pair(r = rw_acquire(e, OWNER ":r", "r"), 1, 1);
    freeReplyObject(r);
    expect_whole(run_migrating(e, RL__S_RW_RELEASE, 1, 6, rrel), "last reader's release");
    assert_int_equal(exists(e), 0);

    flush(e);
    expect_pair(r = rw_acquire(e, OTHER ":r", "r"), 1, 1);
    freeReplyObject(r);
    r = rw_acquire(e, OWNER, "w");          /* waits, its intent registered */
    assert_int_equal(r->element[0]->integer, 0);
    freeReplyObject(r);
    expect_whole(run_migrating(e, RL__S_RW_RELEASE, 1, 6, wback), "a writer's intent back");
    expect_whole(run_migrating(e, RL__S_RW_RELEASE, 1, 6,
                               (const char *const[6]){ KEY, OTHER ":r", "1", "0", "1", CHANNEL }),
                 "the reader's release after the intent");
    assert_int_equal(exists(e), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_acquire_with_bad_lease_writes_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_reentry_with_bad_lease_changes_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_release_with_bad_lease_keeps_the_count, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fencing_tokens_rise, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lock_delay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lock_delay_after_the_lease, setup, teardown),
        cmocka_unit_test_setup_teardown(test_renew_with_bad_lease_keeps_the_expiry, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_renew_places_only_where_free, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rw_wait_on_a_key_without_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rw_dead_past_the_cap_stay_counted, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rw_bad_intent_writes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rw_writer_leaves_a_plain_key_alone, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rw_own_lapsed_write_hold_passes_no_intent, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rw_layout_unknown_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rw_sweep_drops_dead_readers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rw_sweep_keeps_live_readers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rw_sweep_drops_a_dead_writer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fair_scripts_whole_on_a_migrating_source, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fair_scripts_on_a_migrating_source_do_their_work,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_acquire_all_or_none, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_acquire_lock_delay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sem_bad_arguments_write_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sem_count_and_dead_holds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sem_fenced_slots, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sem_first_hold_has_the_key_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sem_scripts_whole_on_a_migrating_source, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_plain_and_rw_scripts_whole_on_a_migrating_source,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
