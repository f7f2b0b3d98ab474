/* The hot path's RESP encoding and reading. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rlock_int.h"

static void test_encode(void **state)
{
    const char *argv[3] = { "EVALSHA", "", "a\r\nb" };
    size_t lens[3] = { 7, 0, 4 };
    char buf[128], small[8];
    size_t n;
    (void)state;
    n = rl__resp_encode(buf, sizeof buf, 3, argv, lens);
    assert_int_equal(n, strlen("*3\r\n$7\r\nEVALSHA\r\n$0\r\n\r\n$4\r\na\r\nb\r\n"));
    assert_memory_equal(buf, "*3\r\n$7\r\nEVALSHA\r\n$0\r\n\r\n$4\r\na\r\nb\r\n", n);
    /* Too small: a bound is returned, nothing is written past cap. */
    memset(small, 'x', sizeof small);
    assert_true(rl__resp_encode(small, sizeof small, 3, argv, lens) > sizeof small);
}

static int read_all(const char *s, rl__resp *r)
{
    size_t used = 0;
    int st = rl__resp_read(s, strlen(s), r, &used);
    if (st == 1)
        assert_int_equal(used, strlen(s));
    return st;
}

static void test_read_shapes(void **state)
{
    rl__resp r;
    (void)state;
    assert_int_equal(read_all("*2\r\n:1\r\n:7\r\n", &r), 1);
    assert_int_equal(r.type, RL__RESP_ARRAY);
    assert_int_equal(r.nints, 2);
    assert_int_equal(r.ints[0], 1);
    assert_int_equal(r.ints[1], 7);
    assert_int_equal(read_all("*2\r\n:0\r\n:-2\r\n", &r), 1);
    assert_int_equal(r.ints[1], -2);
    assert_int_equal(read_all(":42\r\n", &r), 1);
    assert_int_equal(r.type, RL__RESP_INT);
    assert_int_equal(r.ints[0], 42);
    assert_int_equal(read_all("-NOSCRIPT No matching script\r\n", &r), 1);
    assert_int_equal(r.type, RL__RESP_ERROR);
    assert_int_equal(r.str_len, strlen("NOSCRIPT No matching script"));
    assert_int_equal(read_all("+OK\r\n", &r), 1);
    assert_int_equal(r.type, RL__RESP_STATUS);
    assert_int_equal(read_all("*0\r\n", &r), 1);
    assert_int_equal(r.nints, 0);
}

static void test_read_partial(void **state)
{
    static const char full[] = "*2\r\n:1\r\n:12345\r\n";
    rl__resp r;
    size_t used, i;
    (void)state;
    /* Every strict prefix asks for more; the whole reads. */
    for (i = 0; i < sizeof full - 1; i++)
        assert_int_equal(rl__resp_read(full, i, &r, &used), 0);
    assert_int_equal(rl__resp_read(full, sizeof full - 1, &r, &used), 1);
    assert_int_equal(used, sizeof full - 1);
}

static void test_read_rejects(void **state)
{
    static const char *bad[] = {
        "$3\r\nabc\r\n", "*20\r\n", "*-1\r\n", "*2\r\n$1\r\n", ":\r\n", ":12a\r\n", ":-\r\n",
        ":1\rx", "*x\r\n", "_\r\n", ":99999999999999999999\r\n", "*1\r\n*1\r\n",
        ":9999999999999999999\r\n",
    };
    size_t i, used;
    rl__resp r;
    (void)state;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (rl__resp_read(bad[i], strlen(bad[i]), &r, &used) != -1)
            fail_msg("accepted: %s", bad[i]);
    }
}

static void test_result(void **state)
{
    rl__resp r;
    rl__result res;
    (void)state;
    assert_int_equal(read_all("*2\r\n:0\r\n:2999\r\n", &r), 1);
    assert_int_equal(rl__resp_result(&r, &res), RL_OK);
    assert_int_equal(res.code, RL__R_BUSY);
    assert_int_equal(res.value, 2999);
    assert_int_equal(read_all("*2\r\n:5\r\n:1\r\n", &r), 1);
    assert_int_equal(rl__resp_result(&r, &res), RL_EPROTO);
    assert_int_equal(read_all("*1\r\n:1\r\n", &r), 1);
    assert_int_equal(rl__resp_result(&r, &res), RL_EPROTO);
    /* A fenced semaphore hold: {1, 1, token, slot...}; slots only when done. */
    assert_int_equal(read_all("*5\r\n:1\r\n:1\r\n:42\r\n:3\r\n:0\r\n", &r), 1);
    assert_int_equal(rl__resp_result(&r, &res), RL_OK);
    assert_int_equal(res.token, 42);
    assert_int_equal(res.nslots, 2);
    assert_int_equal(res.slots[0], 3);
    assert_int_equal(res.slots[1], 0);
    assert_int_equal(read_all("*4\r\n:0\r\n:1\r\n:42\r\n:3\r\n", &r), 1);
    assert_int_equal(rl__resp_result(&r, &res), RL_EPROTO);
    assert_int_equal(read_all("*4\r\n:1\r\n:1\r\n:42\r\n:-3\r\n", &r), 1);
    assert_int_equal(rl__resp_result(&r, &res), RL_EPROTO);
    assert_int_equal(read_all("-WRONGTYPE Operation against a key\r\n", &r), 1);
    assert_int_equal(rl__resp_result(&r, &res), RL_EREDIS);
    assert_non_null(strstr(rl_last_error(), "WRONGTYPE"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encode),
        cmocka_unit_test(test_read_shapes),
        cmocka_unit_test(test_read_partial),
        cmocka_unit_test(test_read_rejects),
        cmocka_unit_test(test_result),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
