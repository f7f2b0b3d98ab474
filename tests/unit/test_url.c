/* URL parsing: every accepted form, and rejection of what is not one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rlock_int.h"

static void parse_ok(const char *s, rl__url *u)
{
    int rc = rl__url_parse(u, s);
    if (rc != RL_OK)
        fail_msg("%s rejected: %s", s ? s : "(default)", rl_last_error());
}

static void test_defaults(void **state)
{
    rl__url u;
    (void)state;
    parse_ok(NULL, &u);
    assert_string_equal(u.host, "127.0.0.1");
    assert_int_equal(u.port, 6379);
    assert_int_equal(u.db, 0);
    assert_null(u.user);
    assert_null(u.pass);
    assert_false(u.is_unix);
    rl__url_clear(&u);
}

static void test_tcp_forms(void **state)
{
    rl__url u;
    (void)state;
    parse_ok("redis://example.org", &u);
    assert_string_equal(u.host, "example.org");
    assert_int_equal(u.port, 6379);
    rl__url_clear(&u);

    parse_ok("redis://10.0.0.1:7000/3", &u);
    assert_string_equal(u.host, "10.0.0.1");
    assert_int_equal(u.port, 7000);
    assert_int_equal(u.db, 3);
    rl__url_clear(&u);

    parse_ok("redis://h:1/", &u);
    assert_int_equal(u.port, 1);
    assert_int_equal(u.db, 0);
    rl__url_clear(&u);

    parse_ok("redis://[::1]:6380/2", &u);
    assert_string_equal(u.host, "::1");
    assert_int_equal(u.port, 6380);
    assert_int_equal(u.db, 2);
    rl__url_clear(&u);

    parse_ok("redis://[fe80::1]", &u);
    assert_string_equal(u.host, "fe80::1");
    assert_int_equal(u.port, 6379);
    rl__url_clear(&u);
}

static void test_credentials(void **state)
{
    rl__url u;
    (void)state;
    parse_ok("redis://:secret@localhost", &u);
    assert_null(u.user);
    assert_string_equal(u.pass, "secret");
    rl__url_clear(&u);

    parse_ok("redis://alice:p%40ss%3Aw@h:6000", &u);
    assert_string_equal(u.user, "alice");
    assert_string_equal(u.pass, "p@ss:w");
    assert_string_equal(u.host, "h");
    assert_int_equal(u.port, 6000);
    rl__url_clear(&u);

    /* An unescaped '@' in the password: the last '@' ends the credentials. */
    parse_ok("redis://bob:a@b@h", &u);
    assert_string_equal(u.pass, "a@b");
    assert_string_equal(u.host, "h");
    rl__url_clear(&u);
}

static void test_unix(void **state)
{
    rl__url u;
    (void)state;
    parse_ok("unix:///run/redis.sock", &u);
    assert_true(u.is_unix);
    assert_string_equal(u.path, "/run/redis.sock");
    assert_int_equal(u.db, 0);
    rl__url_clear(&u);

    parse_ok("unix:///tmp/r%20s.sock?db=5", &u);
    assert_string_equal(u.path, "/tmp/r s.sock");
    assert_int_equal(u.db, 5);
    rl__url_clear(&u);
}

static void test_rejects(void **state)
{
    static const char *bad[] = {
        "", "redis:/", "redis://", "http://h", "rediss://h", "redis://h:", "redis://h:0",
        "redis://h:65536", "redis://h:12x", "redis://h:-1", "redis://h/x", "redis://h/1/2",
        "redis://user@h", "redis://u:@h", "redis://[::1", "redis://[]:1", "redis://[::1]x",
        "redis://h?db=1", "redis://h#f", "redis://:pa%zzss@h", "redis://:p%0@h",
        "redis://:p%00@h", "redis://ho st", "unix://", "unix://relative", "unix:///s?x=1",
        "unix:///s?db=", "unix:///s?db=x", "redis://@h", "redis://h:99999999999",
    };
    size_t i;
    (void)state;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rl__url u;
        int rc = rl__url_parse(&u, bad[i]);
        if (rc != RL_EINVAL)
            fail_msg("'%s' gave %d, expected RL_EINVAL", bad[i], rc);
        /* Nothing is left allocated or set. */
        assert_null(u.host);
        assert_null(u.pass);
        assert_null(u.path);
        assert_true(strlen(rl_last_error()) > 0);
    }
}

static void test_password_never_in_error(void **state)
{
    rl__url u;
    (void)state;
    assert_int_equal(rl__url_parse(&u, "redis://:hunter2@h:notaport"), RL_EINVAL);
    assert_null(strstr(rl_last_error(), "hunter2"));
    assert_int_equal(rl__url_parse(&u, "redis://:hunter2%zz@h"), RL_EINVAL);
    assert_null(strstr(rl_last_error(), "hunter2"));
}

static void test_too_long(void **state)
{
    static char big[5000];
    rl__url u;
    (void)state;
    memcpy(big, "redis://", 8);
    memset(big + 8, 'a', sizeof big - 9);
    assert_int_equal(rl__url_parse(&u, big), RL_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_tcp_forms),
        cmocka_unit_test(test_credentials),
        cmocka_unit_test(test_unix),
        cmocka_unit_test(test_rejects),
        cmocka_unit_test(test_password_never_in_error),
        cmocka_unit_test(test_too_long),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
