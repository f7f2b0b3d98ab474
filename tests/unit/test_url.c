/* URL parsing: every accepted form, and rejection of what is not one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
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

/* The TLS schemes: the grammar of their plain ones, and the flag. */
static void test_tls_schemes(void **state)
{
    rl__url u;
    (void)state;

    parse_ok("rediss://:pw@h1:7000,h2/3", &u);
    assert_int_equal(u.tls, 1);
    assert_int_equal(u.nseeds, 2);
    assert_string_equal(u.seeds[1].host, "h2");
    assert_int_equal(u.seeds[1].port, 6379);
    assert_string_equal(u.pass, "pw");
    assert_int_equal(u.db, 3);
    rl__url_clear(&u);

    parse_ok("redlocks://a:1,b:2,c:3", &u);
    assert_int_equal(u.tls, 1);
    assert_int_equal(u.redlock, 1);
    rl__url_clear(&u);

    parse_ok("sentinels://s1,s2:26380/mymaster/1", &u);
    assert_int_equal(u.tls, 1);
    assert_int_equal(u.sentinel, 1);
    assert_string_equal(u.service, "mymaster");
    assert_int_equal(u.seeds[0].port, 26379);
    rl__url_clear(&u);

    parse_ok("redis://h", &u);
    assert_int_equal(u.tls, 0);
    rl__url_clear(&u);
}

static void test_rejects(void **state)
{
    static const char *bad[] = {
        "", "redis:/", "redis://", "http://h", "rediss://", "rediss://h:0", "redlocks://a:1,b:2",
        "sentinels://h", "redis://h:", "redis://h:0",
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

/* Every seed slot is empty: what a refused URL must leave. */
static void assert_no_seeds(const rl__url *u)
{
    int i;
    assert_int_equal(u->nseeds, 0);
    for (i = 0; i < RL__SEEDS_MAX; i++)
        assert_null(u->seeds[i].host);
}

static void test_one_seed(void **state)
{
    rl__url u;
    (void)state;
    parse_ok("redis://example.org:7000/1", &u);
    assert_int_equal(u.nseeds, 1);
    assert_ptr_equal(u.seeds[0].host, u.host);
    assert_string_equal(u.seeds[0].host, "example.org");
    assert_int_equal(u.seeds[0].port, 7000);
    assert_int_equal(u.port, 7000);
    assert_null(u.seeds[1].host);
    rl__url_clear(&u);

    parse_ok(NULL, &u);
    assert_int_equal(u.nseeds, 1);
    assert_ptr_equal(u.seeds[0].host, u.host);
    assert_int_equal(u.seeds[0].port, 6379);
    rl__url_clear(&u);

    parse_ok("redis://[::1]", &u);
    assert_int_equal(u.nseeds, 1);
    assert_string_equal(u.seeds[0].host, "::1");
    assert_int_equal(u.seeds[0].port, 6379);
    rl__url_clear(&u);

    /* A unix socket is no seed list. */
    parse_ok("unix:///run/redis.sock", &u);
    assert_int_equal(u.nseeds, 0);
    assert_null(u.host);
    assert_null(u.seeds[0].host);
    rl__url_clear(&u);
}

static void test_seed_list(void **state)
{
    rl__url u;
    (void)state;
    parse_ok("redis://alice:s3cr%2Ct@node-a:7000,node-b,10.0.0.3:7002/4", &u);
    assert_int_equal(u.nseeds, 3);
    assert_string_equal(u.seeds[0].host, "node-a");
    assert_int_equal(u.seeds[0].port, 7000);
    assert_string_equal(u.seeds[1].host, "node-b");
    assert_int_equal(u.seeds[1].port, 6379);
    assert_string_equal(u.seeds[2].host, "10.0.0.3");
    assert_int_equal(u.seeds[2].port, 7002);
    /* host and port are the first seed's. */
    assert_ptr_equal(u.host, u.seeds[0].host);
    assert_int_equal(u.port, 7000);
    assert_int_equal(u.db, 4);
    assert_string_equal(u.user, "alice");
    assert_string_equal(u.pass, "s3cr,t");
    rl__url_clear(&u);
    assert_null(u.host);
    assert_int_equal(u.nseeds, 0);

    /* A ',' in the password, unescaped: the credentials end at the last '@'. */
    parse_ok("redis://:a,b@h1,h2:7001", &u);
    assert_string_equal(u.pass, "a,b");
    assert_int_equal(u.nseeds, 2);
    assert_string_equal(u.seeds[0].host, "h1");
    assert_string_equal(u.seeds[1].host, "h2");
    assert_int_equal(u.seeds[1].port, 7001);
    rl__url_clear(&u);

    /* Duplicates are the caller's business. */
    parse_ok("redis://h:1,h:1/", &u);
    assert_int_equal(u.nseeds, 2);
    assert_string_equal(u.seeds[1].host, "h");
    assert_int_equal(u.seeds[1].port, 1);
    assert_int_equal(u.db, 0);
    rl__url_clear(&u);
}

static void test_seed_ipv6(void **state)
{
    rl__url u;
    (void)state;
    parse_ok("redis://[fe80::1]:7000,[::1],127.0.0.1:7002", &u);
    assert_int_equal(u.nseeds, 3);
    assert_string_equal(u.host, "fe80::1");
    assert_int_equal(u.port, 7000);
    assert_string_equal(u.seeds[1].host, "::1");
    assert_int_equal(u.seeds[1].port, 6379);
    assert_string_equal(u.seeds[2].host, "127.0.0.1");
    assert_int_equal(u.seeds[2].port, 7002);
    rl__url_clear(&u);

    parse_ok("redis://h,[2001:db8::7]:6380", &u);
    assert_int_equal(u.nseeds, 2);
    assert_string_equal(u.host, "h");
    assert_string_equal(u.seeds[1].host, "2001:db8::7");
    assert_int_equal(u.seeds[1].port, 6380);
    rl__url_clear(&u);
}

static void test_seed_max(void **state)
{
    char url[512];
    size_t n;
    rl__url u;
    int i;
    (void)state;

    n = (size_t)snprintf(url, sizeof url, "redis://h0:7000");
    for (i = 1; i < RL__SEEDS_MAX; i++)
        n += (size_t)snprintf(url + n, sizeof url - n, ",h%d:%d", i, 7000 + i);
    parse_ok(url, &u);
    assert_int_equal(u.nseeds, RL__SEEDS_MAX);
    assert_string_equal(u.seeds[RL__SEEDS_MAX - 1].host, "h15");
    assert_int_equal(u.seeds[RL__SEEDS_MAX - 1].port, 7015);
    rl__url_clear(&u);

    /* One more is refused. */
    snprintf(url + n, sizeof url - n, ",h16:7016");
    assert_int_equal(rl__url_parse(&u, url), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "16"));
    assert_null(u.host);
    assert_no_seeds(&u);
}

static void test_seed_rejects(void **state)
{
    static const char *bad[] = {
        "redis://a,,b", "redis://a,", "redis://,a", "redis://,", "redis://a,/1",
        "redis://a,b:0", "redis://a,b:65536", "redis://a,b:x", "redis://a,b:", "redis://a:1x,b",
        "redis://a,[::1", "redis://a,[]:1", "redis://a,[::1]x", "redis://a,::1", "redis://a,b c",
        "redis://a,b%20", "redis://:pw@,a", "redis://:pw@a,", "redis://a,b/x", "redis://a,b?db=1",
        "redis://a,b:1:2",
    };
    size_t i;
    (void)state;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rl__url u;
        int rc = rl__url_parse(&u, bad[i]);
        if (rc != RL_EINVAL)
            fail_msg("'%s' gave %d, expected RL_EINVAL", bad[i], rc);
        assert_null(u.host);
        assert_null(u.pass);
        assert_null(u.user);
        assert_no_seeds(&u);
        assert_true(strlen(rl_last_error()) > 0);
    }
}

static void test_seed_errors_say_which(void **state)
{
    rl__url u;
    (void)state;
    assert_int_equal(rl__url_parse(&u, "redis://:hunter2@a,b:0,c"), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "seed 2 of 3"));
    assert_non_null(strstr(rl_last_error(), "port"));
    assert_null(strstr(rl_last_error(), "hunter2"));

    assert_int_equal(rl__url_parse(&u, "redis://:hunter2@a,,c"), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "seed 2 of 3"));
    assert_non_null(strstr(rl_last_error(), "empty"));
    assert_null(strstr(rl_last_error(), "hunter2"));

    assert_int_equal(rl__url_parse(&u, "redis://u:hunter2@a,[::1"), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "seed 2 of 2"));
    assert_null(strstr(rl_last_error(), "hunter2"));
}

static void test_redlock_forms(void **state)
{
    static const char *bad[] = {
        "redlock://a", "redlock://a,b", "redlock://a,b,c,d", "redlock://a:1,b:1,a:1",
        "redlock://a,b,c,d,e,f,g,h,i,j,k", "redlock://a,,c", "redlock://a,b,c?x",
    };
    rl__url u;
    size_t i;
    (void)state;
    parse_ok("redlock://:pw@a:1,b:2,c:3/4", &u);
    assert_true(u.redlock);
    assert_false(u.sentinel);
    assert_int_equal(u.nseeds, 3);
    assert_string_equal(u.seeds[2].host, "c");
    assert_int_equal(u.seeds[2].port, 3);
    assert_string_equal(u.pass, "pw");
    assert_int_equal(u.db, 4);
    rl__url_clear(&u);
    parse_ok("redlock://a,b,c,d,e,f,g,h,i", &u);
    assert_int_equal(u.nseeds, 9);
    assert_int_equal(u.seeds[8].port, 6379);
    rl__url_clear(&u);
    /* The same host on other ports is another master. */
    parse_ok("redlock://a:1,a:2,a:3", &u);
    rl__url_clear(&u);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = rl__url_parse(&u, bad[i]);
        if (rc != RL_EINVAL)
            fail_msg("'%s' gave %d, expected RL_EINVAL", bad[i], rc);
        assert_null(u.host);
        assert_no_seeds(&u);
    }
    assert_int_equal(rl__url_parse(&u, "redlock://:hunter2@a,b"), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "odd number"));
    assert_null(strstr(rl_last_error(), "hunter2"));
}

static void test_sentinel_forms(void **state)
{
    static const char *bad[] = {
        "sentinel://a", "sentinel://a/", "sentinel://a//1", "sentinel://a/m/x",
        "sentinel://a,,b/m", "sentinel://a/m%zz", "sentinel://a/m%20n", "sentinel://a:0/m",
    };
    rl__url u;
    size_t i;
    (void)state;
    parse_ok("sentinel://s1,s2:26380/mymaster", &u);
    assert_true(u.sentinel);
    assert_false(u.redlock);
    assert_int_equal(u.nseeds, 2);
    assert_int_equal(u.seeds[0].port, 26379);   /* the sentinels' default */
    assert_int_equal(u.seeds[1].port, 26380);
    assert_string_equal(u.service, "mymaster");
    assert_int_equal(u.db, 0);
    rl__url_clear(&u);
    parse_ok("sentinel://u:p%40ss@[::1]:5000/my%2Dmaster/7", &u);
    assert_string_equal(u.user, "u");
    assert_string_equal(u.pass, "p@ss");
    assert_string_equal(u.seeds[0].host, "::1");
    assert_string_equal(u.service, "my-master");
    assert_int_equal(u.db, 7);
    rl__url_clear(&u);
    assert_null(u.service);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = rl__url_parse(&u, bad[i]);
        if (rc != RL_EINVAL)
            fail_msg("'%s' gave %d, expected RL_EINVAL", bad[i], rc);
        assert_null(u.host);
        assert_null(u.service);
        assert_no_seeds(&u);
    }
    assert_int_equal(rl__url_parse(&u, "sentinel://:hunter2@a/"), RL_EINVAL);
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

/* Issue 21 item 11: whatever the URL's shape, no byte of its userinfo is
 * shown. The planted secret S3cr3t sits where a user would put a password
 * in each shape, a well-formed one or not. */
static void test_redact_hides_userinfo(void **state)
{
    static const struct { const char *url, *shown; } cases[] = {
        /* the issue's shapes: a scheme mistyped, or no scheme at all */
        { "redis//:S3cr3t@127.0.0.1:6379", "***" },
        { "redis:/:S3cr3t@127.0.0.1:6379", "***" },
        { ":S3cr3t@127.0.0.1:6379", "***" },
        { "redis://S3cr3t@host", "redis://***" },
        /* parsed: the hosts, path and database stay, the userinfo goes */
        { "redis://:S3cr3t@127.0.0.1:6379", "redis://***@127.0.0.1:6379" },
        { "redis://alice:S3cr3t@h:1,h2:2/3", "redis://***@h:1,h2:2/3" },
        { "redis://:p@S3cr3t@h", "redis://***@h" },
        { "redis://:S3cr3t%40x@h", "redis://***@h" },
        { "redis://:S3/cr3t@h", "redis://***" },   /* a raw '/' ends the hosts */
        { "redis://:a,S3cr3t@h1,h2", "redis://***@h1,h2" },
        { "redlock://:S3cr3t@a:1,b:2,c:3", "redlock://***@a:1,b:2,c:3" },
        { "sentinel://:S3cr3t@s1:26379/mymaster/2", "sentinel://***@s1:26379/mymaster/2" },
        { "redis://127.0.0.1:6379/2", "redis://127.0.0.1:6379/2" },
        { "unix:///run/redis.sock?db=1", "unix:///run/redis.sock?db=1" },
        /* refused: nothing but the scheme, wherever the secret went */
        { "redis://:S3cr3t", "redis://***" },
        { "redis://:S3cr3t@", "redis://***" },
        { "redis://:S3cr3t@h:notaport", "redis://***" },
        { "redis://u:S3cr3t@h/x", "redis://***" },
        { "redis:///:S3cr3t@h", "redis://***" },
        { "redis://h:S3cr3t", "redis://***" },
        { "redis://:S3cr3t%zz@h", "redis://***" },
        { "rediss://:S3cr3t@h", "rediss://***@h" },
        { "redlocks://:S3cr3t@a:1,b:2,c:3", "redlocks://***@a:1,b:2,c:3" },
        { "sentinels://:S3cr3t@s1/m", "sentinels://***@s1/m" },
        { "rediss://:S3cr3t@h:x", "rediss://***" },
        { "http://u:S3cr3t@h", "***" },
        { "S3cr3t@h", "***" },
        { "S3cr3t", "***" },
        { "S3cr3t://h", "***" },            /* a word before "://" is no scheme of rlock's */
        { "redis:S3cr3t@h", "***" },
        { "//:S3cr3t@h", "***" },
        { "redis://:S3cr3t@h?db=1", "redis://***" },
        { "unix://:S3cr3t@/s", "unix://***" },
        { "redis\n://:S3cr3t@h", "***" },
        { "", "***" },
    };
    char buf[128];
    size_t i;
    (void)state;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rl__err(RL_EINVAL, "detail before");
        rl__url_redact(cases[i].url, buf, sizeof buf);
        if (strcmp(buf, cases[i].shown) != 0)
            fail_msg("'%s' shown as '%s', expected '%s'", cases[i].url, buf, cases[i].shown);
        if (strstr(buf, "S3cr3t") || strstr(buf, "3cr3"))
            fail_msg("'%s' shown as '%s': the secret", cases[i].url, buf);
        /* The caller's detail (the reason the URL was refused) is kept. */
        assert_string_equal(rl_last_error(), "detail before");
    }
    /* NULL is the default URL; a short buffer is cut, still NUL-ended. */
    assert_string_equal(rl__url_redact(NULL, buf, sizeof buf), "redis://127.0.0.1:6379");
    rl__url_redact("redis://:S3cr3t@h", buf, 6);
    assert_string_equal(buf, "redis");
}

/* The secret planted at every position of many URLs, well-formed or cut
 * short: it never shows, in the redacted URL or in a parse error's text. */
static void test_redact_planted_everywhere(void **state)
{
    static const char *shapes[] = {
        "redis://u:@h:1/2", "redis://:@h", "redlock://:@a,b,c", "sentinel://:@s/m/1",
        "redis//:@h", "redis:/:@h", ":@h", "redis://@h", "unix:///s", "redis://h",
    };
    static const char secret[] = "Qz!9kW";
    char url[128], buf[160];
    size_t i, at;
    (void)state;

    for (i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        for (at = 0; at <= strlen(shapes[i]); at++) {
            const char *last_at;
            rl__url u;
            int rc;

            snprintf(url, sizeof url, "%.*s%s%s", (int)at, shapes[i], secret, shapes[i] + at);
            rc = rl__url_parse(&u, url);
            if (rc != RL_OK && strstr(rl_last_error(), secret))
                fail_msg("'%s': the error '%s' holds the secret", url, rl_last_error());
            rl__url_clear(&u);
            rl__url_redact(url, buf, sizeof buf);
            /* Shown only where a parsed URL keeps it: after its last '@'
             * (a host, a path, a master's name), never in a userinfo. */
            last_at = strrchr(url, '@');
            if (strstr(buf, secret) && (rc != RL_OK || (last_at && strstr(url, secret) < last_at)))
                fail_msg("'%s' shown as '%s'", url, buf);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_tcp_forms),
        cmocka_unit_test(test_credentials),
        cmocka_unit_test(test_unix),
        cmocka_unit_test(test_tls_schemes),
        cmocka_unit_test(test_rejects),
        cmocka_unit_test(test_password_never_in_error),
        cmocka_unit_test(test_too_long),
        cmocka_unit_test(test_one_seed),
        cmocka_unit_test(test_seed_list),
        cmocka_unit_test(test_seed_ipv6),
        cmocka_unit_test(test_seed_max),
        cmocka_unit_test(test_seed_rejects),
        cmocka_unit_test(test_seed_errors_say_which),
        cmocka_unit_test(test_redlock_forms),
        cmocka_unit_test(test_sentinel_forms),
        cmocka_unit_test(test_redact_hides_userinfo),
        cmocka_unit_test(test_redact_planted_everywhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
