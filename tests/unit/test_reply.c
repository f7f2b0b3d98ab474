/* How script replies are read: shapes accepted, everything else refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rlock_int.h"

static redisReply mk(int type)
{
    redisReply r;
    memset(&r, 0, sizeof r);
    r.type = type;
    return r;
}

static void test_result_ok(void **state)
{
    redisReply a = mk(REDIS_REPLY_ARRAY), x = mk(REDIS_REPLY_INTEGER), y = mk(REDIS_REPLY_INTEGER);
    redisReply *el[2] = { &x, &y };
    rl__result res;
    (void)state;
    a.elements = 2;
    a.element = el;
    x.integer = 1;
    y.integer = 7;
    assert_int_equal(rl__reply_result(&a, &res), RL_OK);
    assert_int_equal(res.code, RL__R_DONE);
    assert_int_equal(res.value, 7);
    x.integer = 0;
    y.integer = 1234;
    assert_int_equal(rl__reply_result(&a, &res), RL_OK);
    assert_int_equal(res.code, RL__R_BUSY);
    assert_int_equal(res.value, 1234);
    x.integer = -2;
    assert_int_equal(rl__reply_result(&a, &res), RL_OK);
    assert_int_equal(res.code, RL__R_MISMATCH);
    assert_int_equal(res.token, 0);
    /* {code, value, token}: a fenced acquisition. */
    {
        redisReply z = mk(REDIS_REPLY_INTEGER);
        redisReply *el3[3] = { &x, &y, &z };
        x.integer = 1;
        y.integer = 1;
        z.integer = 42;
        a.element = el3;
        a.elements = 3;
        assert_int_equal(rl__reply_result(&a, &res), RL_OK);
        assert_int_equal(res.value, 1);
        assert_int_equal(res.token, 42);
    }
}

static void test_result_bad_shapes(void **state)
{
    redisReply a = mk(REDIS_REPLY_ARRAY), x = mk(REDIS_REPLY_INTEGER), s = mk(REDIS_REPLY_STRING);
    redisReply *el[3] = { &x, &s, &x };
    rl__result res;
    (void)state;
    assert_int_equal(rl__reply_result(NULL, &res), RL_EPROTO);
    a.element = el;
    a.elements = 2;           /* second is a string */
    assert_int_equal(rl__reply_result(&a, &res), RL_EPROTO);
    a.elements = 3;           /* second a string */
    assert_int_equal(rl__reply_result(&a, &res), RL_EPROTO);
    el[1] = &x;
    el[2] = &s;               /* the token a string */
    assert_int_equal(rl__reply_result(&a, &res), RL_EPROTO);
    el[1] = &s;
    el[2] = &x;
    a.elements = 0;
    assert_int_equal(rl__reply_result(&a, &res), RL_EPROTO);
    el[1] = &x;
    a.elements = 2;
    x.integer = 9;            /* unknown code */
    assert_int_equal(rl__reply_result(&a, &res), RL_EPROTO);
    x.integer = -3;
    assert_int_equal(rl__reply_result(&a, &res), RL_EPROTO);
    assert_int_equal(rl__reply_result(&x, &res), RL_EPROTO);
}

static void test_errors(void **state)
{
    redisReply e = mk(REDIS_REPLY_ERROR);
    rl__result res;
    static char wrongtype[] = "WRONGTYPE Operation against a key holding the wrong kind of value";
    static char wrongpass[] = "WRONGPASS invalid username-password pair or user is disabled.";
    static char noauth[] = "NOAUTH Authentication required.";
    (void)state;
    e.str = wrongtype;
    e.len = strlen(wrongtype);
    assert_int_equal(rl__reply_result(&e, &res), RL_EREDIS);
    assert_non_null(strstr(rl_last_error(), "WRONGTYPE"));
    e.str = wrongpass;
    e.len = strlen(wrongpass);
    assert_int_equal(rl__reply_result(&e, &res), RL_EAUTH);
    e.str = noauth;
    e.len = strlen(noauth);
    assert_int_equal(rl__reply_error_status(&e), RL_EAUTH);
}

static void test_count(void **state)
{
    redisReply r = mk(REDIS_REPLY_NIL);
    long long n = -1;
    static char s1[] = "1000", s2[] = "12a", s3[] = "-1", s4[] = "1234567890123456789";
    (void)state;
    assert_int_equal(rl__reply_count(&r, &n), RL_OK);
    assert_int_equal(n, 0);
    r = mk(REDIS_REPLY_STRING);
    r.str = s1;
    r.len = 4;
    assert_int_equal(rl__reply_count(&r, &n), RL_OK);
    assert_int_equal(n, 1000);
    r.str = s2;
    r.len = 3;
    assert_int_equal(rl__reply_count(&r, &n), RL_EPROTO);
    r.str = s3;
    r.len = 2;
    assert_int_equal(rl__reply_count(&r, &n), RL_EPROTO);
    r.str = s4;
    r.len = strlen(s4);
    assert_int_equal(rl__reply_count(&r, &n), RL_EPROTO);
    r.len = 0;
    assert_int_equal(rl__reply_count(&r, &n), RL_EPROTO);
    /* "<count> <since_ms>": the count leads, the suffix is digits. */
    {
        static char t1[] = "3 1732350000123", t2[] = "3 ", t3[] = "3 17x", t4[] = " 3",
                    t5[] = "3 1 2";
        r.str = t1;
        r.len = strlen(t1);
        assert_int_equal(rl__reply_count(&r, &n), RL_OK);
        assert_int_equal(n, 3);
        r.str = t2;
        r.len = strlen(t2);
        assert_int_equal(rl__reply_count(&r, &n), RL_EPROTO);
        r.str = t3;
        r.len = strlen(t3);
        assert_int_equal(rl__reply_count(&r, &n), RL_EPROTO);
        r.str = t4;
        r.len = strlen(t4);
        assert_int_equal(rl__reply_count(&r, &n), RL_EPROTO);
        r.str = t5;
        r.len = strlen(t5);
        assert_int_equal(rl__reply_count(&r, &n), RL_OK);
        assert_int_equal(n, 3);
    }
    /* "<count> <since_ms> <token>": a fenced hold. */
    {
        static char f1[] = "2 1732350000123 18446744073709551615", f2[] = "2 1 7 9",
                    f3[] = "2 1 ", f4[] = "2 1 7x", f5[] = "2 1 123456789012345678901";
        unsigned long long token = 99;

        r.str = f1;
        r.len = strlen(f1);
        assert_int_equal(rl__reply_hold(&r, &n, &token, NULL), RL_OK);
        assert_int_equal(n, 2);
        assert_true(token == 18446744073709551615ULL);
        r.str = f1;
        r.len = 15;           /* "2 1732350000123": no token */
        assert_int_equal(rl__reply_hold(&r, &n, &token, NULL), RL_OK);
        assert_int_equal(token, 0);
        r.str = f2;
        r.len = strlen(f2);
        assert_int_equal(rl__reply_hold(&r, &n, &token, NULL), RL_OK);   /* slot 9 */
        r.str = f3;
        r.len = strlen(f3);
        assert_int_equal(rl__reply_hold(&r, &n, &token, NULL), RL_EPROTO);
        r.str = f4;
        r.len = strlen(f4);
        assert_int_equal(rl__reply_hold(&r, &n, &token, NULL), RL_EPROTO);
        r.str = f5;
        r.len = strlen(f5);
        assert_int_equal(rl__reply_hold(&r, &n, &token, NULL), RL_EPROTO);
    }
    /* "<count> <since_ms> <token> <slots>": a fenced semaphore hold. */
    {
        static const char *bad[] = { "1 5 7 ", "1 5 7 1,", "1 5 7 ,1", "1 5 7 1,,2",
                                     "1 5 7 1 2", "1 5 7 x", "1 5 0 1", "1 5 7 2147483647",
                                     "1 5 7 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16" };
        static char ok[] = "3 5 42 0,2,17";
        unsigned long long token = 0;
        rl__result sl;
        size_t i;

        r.str = ok;
        r.len = strlen(ok);
        assert_int_equal(rl__reply_hold(&r, &n, &token, &sl), RL_OK);
        assert_int_equal(n, 3);
        assert_int_equal(token, 42);
        assert_int_equal(sl.nslots, 3);
        assert_int_equal(sl.slots[0], 0);
        assert_int_equal(sl.slots[1], 2);
        assert_int_equal(sl.slots[2], 17);
        for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            r.str = (char *)bad[i];
            r.len = strlen(bad[i]);
            if (rl__reply_hold(&r, &n, &token, &sl) != RL_EPROTO)
                fail_msg("accepted: %s", bad[i]);
        }
    }
    r = mk(REDIS_REPLY_ARRAY);
    assert_int_equal(rl__reply_count(&r, &n), RL_EPROTO);
}

static void test_flags(void **state)
{
    redisReply r = mk(REDIS_REPLY_STRING);
    const char *f = NULL;
    static char ok[] = "1011", bad[] = "10x1";
    (void)state;
    r.str = ok;
    r.len = 4;
    assert_int_equal(rl__reply_flags(&r, 4, &f), RL_OK);
    assert_memory_equal(f, "1011", 4);
    assert_int_equal(rl__reply_flags(&r, 5, &f), RL_EPROTO);
    r.str = bad;
    assert_int_equal(rl__reply_flags(&r, 4, &f), RL_EPROTO);
    r = mk(REDIS_REPLY_INTEGER);
    assert_int_equal(rl__reply_flags(&r, 0, &f), RL_EPROTO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_result_ok),
        cmocka_unit_test(test_result_bad_shapes),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_count),
        cmocka_unit_test(test_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
