/* A lock's hash read as rl_lock_info (lockinfo.c), with no Redis: a
 * semaphore's permits, free permits and holds (one past its deadline left
 * out, one without a deadline kept), a read-write lock's sides, a plain
 * lock, and what a caller of layout 1 is given. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lockinfo.h"

#define U1 "00000000-0000-4000-8000-000000000001"
#define U2 "00000000-0000-4000-8000-000000000002"
#define U3 "00000000-0000-4000-8000-000000000003"
#define U4 "00000000-0000-4000-8000-000000000004"

/* An HGETALL reply of n/2 fields and values (strings of `kv`). */
typedef struct hash {
    redisReply top, el[32];
    redisReply *ptr[32];
} hash;

static const redisReply *mk_hash(hash *h, const char *const *kv, size_t n)
{
    size_t i;

    memset(h, 0, sizeof *h);
    h->top.type = REDIS_REPLY_ARRAY;
    h->top.elements = n;
    h->top.element = h->ptr;
    for (i = 0; i < n; i++) {
        h->el[i].type = REDIS_REPLY_STRING;
        h->el[i].str = (char *)kv[i];
        h->el[i].len = strlen(kv[i]);
        h->ptr[i] = &h->el[i];
    }
    return &h->top;
}

/* The info of the hash kv (now: Redis ms; the key's PTTL 9000). */
static rl__info_mem *read_hash(const char *const *kv, size_t n, long long now)
{
    rl__info_mem *w = calloc(1, sizeof *w);
    hash h;

    assert_non_null(w);
    w->holders = calloc(n / 2 + 1, sizeof *w->holders);
    assert_non_null(w->holders);
    w->pub.holders = w->holders;
    w->pub.lease_left_ms = 9000;
    assert_int_equal(rl__info_fields(w, mk_hash(&h, kv, n), now), RL_OK);
    return w;
}

static const rl_holder_info *holder(const rl__info_mem *w, const char *owner)
{
    size_t k;

    for (k = 0; k < w->pub.nholders; k++)
        if (strcmp(w->holders[k]->owner, owner) == 0)
            return w->holders[k];
    return NULL;
}

static void test_semaphore(void **state)
{
    /* U1 2 permits, live; U2 dead (deadline 1000 <= now); U3 no "~k:" (1
     * permit) and no deadline (the key's); U4 3 permits, live. */
    static const char *const kv[] = {
        "~N", "8",
        U1 ":1", "2 500", "~d:" U1 ":1", "7000", "~k:" U1 ":1", "2",
        U2 ":4", "1 400", "~d:" U2 ":4", "1000", "~k:" U2 ":4", "5",
        U3 ":2", "1 300",
        U4 ":7", "1 200", "~d:" U4 ":7", "5001", "~k:" U4 ":7", "3",
    };
    rl__info_mem *w = read_hash(kv, sizeof kv / sizeof kv[0], 5000);
    rl_lock_info *one = &w->pub;
    const rl_holder_info *h;

    (void)state;
    assert_int_equal(w->pub.kind, RL_KIND_SEMAPHORE);
    assert_int_equal(w->pub.permits, 8);
    assert_int_equal(w->pub.free_permits, 2);       /* 8 - (2 + 1 + 3) */
    assert_int_equal(w->pub.nholders, 3);
    assert_null(holder(w, U2));
    assert_non_null(h = holder(w, U1));
    assert_int_equal(h->permits, 2);
    assert_int_equal(h->lease_left_ms, 2000);
    assert_int_equal(h->side, RL_KIND_PLAIN);
    assert_int_equal(h->count, 2);
    assert_non_null(h = holder(w, U3));
    assert_int_equal(h->permits, 1);
    assert_int_equal(h->lease_left_ms, 9000);
    assert_non_null(h = holder(w, U4));
    assert_int_equal(h->lease_left_ms, 1);
    rl__info_as_layout(&one, 1, 2);
    assert_int_equal(w->pub.kind, RL_KIND_SEMAPHORE);
    rl__info_as_layout(&one, 1, 1);
    assert_int_equal(w->pub.kind, RL_KIND_RW);
    assert_int_equal(w->holders[0]->side, RL_KIND_WRITE);
    rl__info_free(w);

    /* Redis's time unknown: no hold is judged dead. */
    w = read_hash(kv, sizeof kv / sizeof kv[0], -1);
    assert_int_equal(w->pub.nholders, 4);
    assert_int_equal(w->pub.free_permits, 0);       /* 11 counted: never below 0 */
    rl__info_free(w);
}

static void test_other_kinds(void **state)
{
    static const char *const rw[] = {
        "~n", "1", U1 ":1:r", "1 500", "~d:" U1 ":1:r", "6000", U2 ":3", "1 400",
    };
    static const char *const plain[] = { U1 ":1", "1 500" };
    rl__info_mem *w = read_hash(rw, sizeof rw / sizeof rw[0], 5000);

    (void)state;
    assert_int_equal(w->pub.kind, RL_KIND_RW);
    assert_int_equal(w->pub.nholders, 2);
    assert_int_equal(holder(w, U1)->side, RL_KIND_READ);
    assert_int_equal(holder(w, U1)->lease_left_ms, 1000);
    assert_int_equal(holder(w, U2)->side, RL_KIND_WRITE);
    assert_int_equal(holder(w, U1)->permits, 0);
    assert_int_equal(w->pub.permits, 0);
    rl__info_free(w);
    w = read_hash(plain, 2, 5000);
    assert_int_equal(w->pub.kind, RL_KIND_PLAIN);
    assert_int_equal(w->pub.free_permits, 0);
    assert_int_equal(w->holders[0]->permits, 0);
    assert_int_equal(w->holders[0]->lease_left_ms, 9000);
    rl__info_free(w);
    rl__info_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_semaphore),
        cmocka_unit_test(test_other_kinds),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
