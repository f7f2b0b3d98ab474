/* Redis Cluster key slots (src/slot.c), without Redis: CRC16/XMODEM and
 * the hash-tag rule, against slots a real server reported. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rlock_int.h"

static void test_crc16_check_value(void **state)
{
    (void)state;
    /* The CRC catalogue's check value of CRC-16/XMODEM. */
    assert_int_equal(rl__crc16("123456789", 9), 0x31C3);
    assert_int_equal(rl__crc16("", 0), 0);
    assert_int_equal(rl__slot("123456789", 9), 0x31C3 & 16383);
}

typedef struct known {
    const char *key;
    size_t len;
    unsigned slot;
} known;

#define K(lit, slot) { lit, sizeof lit - 1, slot }

/*
 * Generated once with `CLUSTER KEYSLOT <key>` on redis-server 7.0.15
 * started by hand with --cluster-enabled yes (keys sent as binary bulk
 * strings). Do not edit: regenerate.
 */
static const known redis_says[] = {
    K("", 0),
    K("a", 15495),
    K("123456789", 12739),
    K("foo", 12182),
    K("bar", 5061),
    K("hello world", 15332),
    K("rl:{account:7}", 2611),
    K("rl:{account:7}:release", 2611),
    K("{user1000}.following", 3443),
    K("{user1000}.followers", 3443),
    K("foo{}{bar}", 8363),          /* empty tag: the whole key */
    K("foo{{bar}}zap", 4015),       /* tag "{bar" */
    K("foo{bar}{zap}", 5061),       /* first tag only: "bar" */
    K("{}", 15257),
    K("{}x", 10595),
    K("x{}", 2608),
    K("{", 4092),                   /* '{' without '}' */
    K("}", 12090),
    K("x{y", 2740),
    K("x}y{", 8402),                /* '}' before the '{' does not close it */
    K("}{a}", 15495),               /* = "a" */
    K("{a", 10276),
    K("a{b", 13340),
    K("rl:{}x}", 4800),             /* 0.1's key of name "}x"... */
    K("rl:{}x}:release", 4366),     /* ...and its channel: two slots */
    K("rl:{\\}x}", 7033),           /* the escaped key of "}x"... */
    K("rl:{\\}x}:release", 7033),   /* ...and its channel: one slot */
    K("\0", 0),
    K("\0a", 15495),                /* leading zero bytes leave the CRC at 0 */
    K("a\0b", 8383),
    K("{\0}", 0),
    K("x{\0\0}y", 0),
    K("\xff\xfe\xfd", 287),
    K("{\xff}", 7920),
    K("{\xff}zzz", 7920),
};

static void test_known_slots(void **state)
{
    size_t i;
    (void)state;
    for (i = 0; i < sizeof redis_says / sizeof redis_says[0]; i++) {
        unsigned got = rl__slot(redis_says[i].key, redis_says[i].len);
        if (got != redis_says[i].slot)
            fail_msg("key #%zu (%zu bytes): slot %u, Redis says %u", i, redis_says[i].len, got,
                     redis_says[i].slot);
    }
}

static void test_long_keys(void **state)
{
    unsigned char all[256], braces[1024], big[3 + 1 + 1024 + 1];
    size_t i;
    (void)state;
    /* Same source as above: bytes 0..255, 1024 '}', "rl:{" 1024 'a' "}". */
    for (i = 0; i < sizeof all; i++)
        all[i] = (unsigned char)i;
    assert_int_equal(rl__slot(all, sizeof all), 16155);
    memset(braces, '}', sizeof braces);
    assert_int_equal(rl__slot(braces, sizeof braces), 630);
    memcpy(big, "rl:{", 4);
    memset(big + 4, 'a', 1024);
    big[sizeof big - 1] = '}';
    assert_int_equal(rl__slot(big, sizeof big), 10609);
    /* A tag is hashed on its own, wherever it sits. */
    assert_int_equal(rl__slot(big + 3, sizeof big - 3), rl__slot(big + 4, 1024));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc16_check_value),
        cmocka_unit_test(test_known_slots),
        cmocka_unit_test(test_long_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
