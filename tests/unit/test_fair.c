/*
 * The fair lock's pure parts (src/fair.c): its keys and channel, and the
 * arguments that turn an acquire or release call into the fair script's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rlock_int.h"

static rl__entry *fair_entry(void)
{
    static char key[] = "rl:{n}", channel[] = "rl:{n}:release";
    rl__entry *e = calloc(1, sizeof *e);

    assert_non_null(e);
    e->key = key;
    e->key_len = strlen(key);
    e->channel = channel;
    e->channel_len = strlen(channel);
    e->family = RL__FAM_FAIR;
    assert_int_equal(rl__fair_entry_init(e), 0);
    return e;
}

static void test_keys_and_channel(void **state)
{
    rl__entry *e = fair_entry();
    rl_client c;
    const char *ch;
    size_t len;

    (void)state;
    assert_string_equal(e->queue_key, "rl:{n}:queue");
    assert_int_equal(e->queue_len, strlen("rl:{n}:queue"));
    assert_string_equal(e->places_key, "rl:{n}:queue:t");
    memset(&c, 0, sizeof c);
    memcpy(c.uuid, "0123456789abcdef0123456789abcdef0123", RL__UUID_LEN + 1);
    ch = rl__entry_sub_channel(&c, e, &len);
    assert_int_equal(len, strlen("rl:{n}:release:") + RL__UUID_LEN);
    assert_memory_equal(ch, "rl:{n}:release:0123456789abcdef0123456789abcdef0123", len);
    /* Another family subscribes to the plain channel. */
    e->family = RL__FAM_PLAIN;
    ch = rl__entry_sub_channel(&c, e, &len);
    assert_memory_equal(ch, "rl:{n}:release", len);
    assert_int_equal(len, strlen("rl:{n}:release"));
    rl__fair_entry_free(e);
    free(e);
}

static void test_args(void **state)
{
    rl__entry *e = fair_entry();
    const char *args[10] = { "K", "lease", "owner", "0", "since" };
    size_t lens[10] = { 1, 5, 5, 1, 5 };
    char placebuf[24];
    int script = RL__S_ACQUIRE, nargs = 5;

    (void)state;
    /* A new acquisition: the fair script, the queue's keys, the place. */
    assert_int_equal(rl__fair_args(e, 1, &script, 0, 2000, NULL, 0,
                                   placebuf, args, lens, &nargs), 3);
    assert_int_equal(script, RL__S_FAIR_ACQUIRE);
    assert_int_equal(nargs, 8);
    assert_string_equal(args[1], "rl:{n}:queue");
    assert_string_equal(args[2], "rl:{n}:queue:t");
    assert_string_equal(args[3], "lease");
    assert_string_equal(args[6], "since");
    assert_string_equal(args[7], "2000");
    assert_int_equal(lens[7], 4);
    /* Reentry: the plain script, untouched. */
    script = RL__S_ACQUIRE;
    nargs = 4;
    assert_int_equal(rl__fair_args(e, 1, &script, 1, 2000, NULL, 0,
                                   placebuf, args, lens, &nargs), 1);
    assert_int_equal(script, RL__S_ACQUIRE);
    assert_int_equal(nargs, 4);
    /* A release queueing the next waiter. */
    script = RL__S_RELEASE;
    nargs = 6;
    assert_int_equal(rl__fair_args(e, 1, &script, 1, 0, "next", 4,
                                   placebuf, args, lens, &nargs), 3);
    assert_int_equal(script, RL__S_FAIR_RELEASE);
    assert_int_equal(nargs, 10);
    assert_string_equal(args[8], "next");
    assert_int_equal(atoi(args[9]), RL__FAIR_PLACE_MS);
    /* A plain name: nothing changes, the caller's key count stays (a
     * fenced acquisition declares two). */
    e->family = RL__FAM_PLAIN;
    script = RL__S_RELEASE;
    nargs = 6;
    assert_int_equal(rl__fair_args(e, 2, &script, 1, 0, "next", 4,
                                   placebuf, args, lens, &nargs), 2);
    assert_int_equal(script, RL__S_RELEASE);
    assert_int_equal(nargs, 6);
    rl__fair_entry_free(e);
    free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys_and_channel),
        cmocka_unit_test(test_args),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
