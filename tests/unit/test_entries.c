/* Local bookkeeping without Redis: key layout, the name table, the FIFO
 * of waiters, hold counts and the lost-lease check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rlock_int.h"

static rl_client *fake_client(const char *prefix)
{
    rl_client *c = calloc(1, sizeof *c);
    assert_non_null(c);
    c->prefix = rl__strdup(prefix);
    c->prefix_len = strlen(prefix);
    c->sub_efd = -1;
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

static void free_client(rl_client *c)
{
    rl__hold_free_spares(c);
    rl__entry_free_all(c);
    free(c->prefix);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static void test_key_layout(void **state)
{
    rl_client *c = fake_client("rl:");
    rl__entry *e;
    static const char bin[] = { 'a', 0, '}', 'b' };
    (void)state;
    e = rl__entry_get(c, "account:7", 9);
    assert_non_null(e);
    assert_string_equal(e->key, "rl:{account:7}");
    assert_int_equal(e->key_len, strlen("rl:{account:7}"));
    assert_string_equal(e->channel, "rl:{account:7}:release");
    assert_int_equal(e->channel_len, strlen("rl:{account:7}:release"));
    /* Same name, same entry; binary names are kept whole. */
    assert_ptr_equal(rl__entry_get(c, "account:7", 9), e);
    e = rl__entry_get(c, bin, sizeof bin);
    assert_int_equal(e->key_len, 3 + 1 + 4 + 1);
    assert_memory_equal(e->key, "rl:{a\0}b}", 9);
    assert_ptr_equal(rl__entry_by_channel(c, e->channel, e->channel_len), e);
    assert_null(rl__entry_by_channel(c, "rl:{zzz}:release", 16));
    assert_null(rl__entry_by_channel(c, "other:{a}:release", 17));
    assert_null(rl__entry_by_channel(c, "rl:", 3));
    free_client(c);
}

/* Names starting with '}' or the escape byte get the escape byte in front
 * of their tag: the tag is never empty, so key and channel share a slot,
 * and distinct names keep distinct keys. */
static void test_key_escape(void **state)
{
    rl_client *c = fake_client("rl:");
    static const struct { const char *name; size_t len; const char *key; size_t key_len; } k[] = {
        { "}x", 2, "rl:{\\}x}", 8 },
        { "\\}x", 3, "rl:{\\\\}x}", 9 },
        { "\\x", 2, "rl:{\\\\x}", 8 },
        { "x\\", 2, "rl:{x\\}", 7 },
        { "\\", 1, "rl:{\\\\}", 7 },
        { "}", 1, "rl:{\\}}", 7 },
        { "}}", 2, "rl:{\\}}}", 8 },
        { "a}b", 3, "rl:{a}b}", 8 },
        { "{x}", 3, "rl:{{x}}", 8 },
        { "x{", 2, "rl:{x{}", 7 },
        { "\0}", 2, "rl:{\0}}", 7 },
        { "}\0", 2, "rl:{\\}\0}", 8 },
    };
    rl__entry *e[sizeof k / sizeof k[0]];
    char big[RL_NAME_MAX];
    size_t i, j;
    (void)state;
    for (i = 0; i < sizeof k / sizeof k[0]; i++) {
        e[i] = rl__entry_get(c, k[i].name, k[i].len);
        assert_non_null(e[i]);
        e[i]->handles = 1;
        assert_int_equal(e[i]->key_len, k[i].key_len);
        assert_memory_equal(e[i]->key, k[i].key, k[i].key_len);
        assert_int_equal(e[i]->channel_len, k[i].key_len + 8);
        assert_memory_equal(e[i]->channel, k[i].key, k[i].key_len);
        assert_int_equal(e[i]->slot, rl__slot(e[i]->key, e[i]->key_len));
        assert_int_equal(e[i]->slot, rl__slot(e[i]->channel, e[i]->channel_len));
        assert_ptr_equal(rl__entry_by_channel(c, e[i]->channel, e[i]->channel_len), e[i]);
        for (j = 0; j < i; j++)
            assert_ptr_not_equal(e[i], e[j]);
    }
    /* Tags rl__entry_get() never makes name no entry. */
    assert_null(rl__entry_by_channel(c, "rl:{}x}:release", 15));
    assert_null(rl__entry_by_channel(c, "rl:{\\}:release", 15));
    assert_null(rl__entry_by_channel(c, "rl:{\\a}:release", 16));
    assert_null(rl__entry_by_channel(c, "rl:{}:release", 13));
    /* The longest name, all '}'. */
    memset(big, '}', sizeof big);
    e[0] = rl__entry_get(c, big, sizeof big);
    assert_non_null(e[0]);
    assert_int_equal(e[0]->key_len, 3 + 2 + 1 + sizeof big);
    assert_int_equal(rl__slot(e[0]->key, e[0]->key_len),
                     rl__slot(e[0]->channel, e[0]->channel_len));
    assert_ptr_equal(rl__entry_by_channel(c, e[0]->channel, e[0]->channel_len), e[0]);
    free_client(c);
}

static void test_many_names(void **state)
{
    rl_client *c = fake_client("p:");
    char name[32];
    int i;
    (void)state;
    for (i = 0; i < 5000; i++) {
        int n = snprintf(name, sizeof name, "n%d", i);
        rl__entry *e = rl__entry_get(c, name, (size_t)n);
        assert_non_null(e);
        e->handles = 1;
    }
    assert_int_equal(c->nentries, 5000);
    for (i = 0; i < 5000; i += 7) {
        int n = snprintf(name, sizeof name, "n%d", i);
        rl__entry *e = rl__entry_get(c, name, (size_t)n);
        assert_memory_equal(e->name, name, (size_t)n);
        e->handles = 0;
        rl__entry_maybe_free(c, e);
    }
    assert_int_equal(c->nentries, 5000 - 715);
    free_client(c);
}

static void test_queue_fifo(void **state)
{
    rl_client *c = fake_client("rl:");
    rl__entry *e = rl__entry_get(c, "q", 1);
    rl__waiter w[3];
    int i;
    (void)state;
    e->handles = 1;
    for (i = 0; i < 3; i++) {
        pthread_cond_init(&w[i].cond, NULL);
        rl__queue_push(e, &w[i]);
    }
    assert_int_equal(e->waiters, 3);
    assert_ptr_equal(e->q_head, &w[0]);
    /* Leaving from the middle does not wake anyone. */
    rl__queue_remove(c, e, &w[1]);
    assert_false(w[2].kicked);
    assert_ptr_equal(e->q_head->next, &w[2]);
    /* The head leaving wakes the next one. */
    rl__queue_remove(c, e, &w[0]);
    assert_ptr_equal(e->q_head, &w[2]);
    assert_true(w[2].kicked);
    rl__queue_remove(c, e, &w[2]);
    assert_null(e->q_head);
    assert_null(e->q_tail);
    assert_int_equal(e->waiters, 0);
    for (i = 0; i < 3; i++)
        pthread_cond_destroy(&w[i].cond);
    free_client(c);
}

static void test_hold_lost_check(void **state)
{
    rl_client *c = fake_client("rl:");
    rl__entry *e = rl__entry_get(c, "h", 1);
    rl__hold *h = rl__hold_new(c, e, 1, 1000, 1);
    int64_t now = rl__now_ms();
    (void)state;
    e->handles = 1;
    rl__hold_insert(c, h);
    assert_int_equal(e->local_live, 1);
    rl__hold_confirm(h, now);    /* lease 1000: margin 1000/100 + 2 = 12 */
    assert_false(rl__hold_is_lost(h, now));
    assert_false(rl__hold_is_lost(h, now + 987));
    assert_true(rl__hold_is_lost(h, now + 988));
    /* An older confirmation never moves the expiry back. */
    rl__hold_confirm(h, now - 500);
    assert_false(rl__hold_is_lost(h, now + 987));
    assert_int_equal(atomic_load(&c->stats.holds), 1);
    assert_int_equal(rl__hold_mark_lost(c, h, RL__LOST_GONE, "test"), 1);
    assert_int_equal(rl__hold_mark_lost(c, h, RL__LOST_FORCED, "test"), 0);
    /* Counted once, under the first cause. */
    assert_int_equal(atomic_load(&c->stats.lost[RL__LOST_GONE]), 1);
    assert_int_equal(atomic_load(&c->stats.lost[RL__LOST_FORCED]), 0);
    assert_true(rl__hold_is_lost(h, now));
    assert_int_equal(e->local_live, 0);
    rl__hold_remove(c, h);
    assert_int_equal(e->holds, 0);
    assert_int_equal(c->nholds, 0);
    assert_int_equal(atomic_load(&c->stats.holds), 0);
    free_client(c);
}

static void test_thread_ids(void **state)
{
    rl__thread *t = rl__thread_self();
    (void)state;
    assert_true(t->id > 0);
    assert_ptr_equal(rl__thread_self(), t);
    assert_int_equal(rl_interrupted(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_layout),
        cmocka_unit_test(test_key_escape),
        cmocka_unit_test(test_many_names),
        cmocka_unit_test(test_queue_fifo),
        cmocka_unit_test(test_hold_lost_check),
        cmocka_unit_test(test_thread_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
