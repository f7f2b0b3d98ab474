/* What a Redis Cluster says of its slots (src/topology.c), without Redis:
 * MOVED/ASK redirections, the errors worth sending again, and CLUSTER
 * SLOTS replies built by hand in the shapes Redis 3 to 7 send. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rlock_int.h"

/* ---- replies built by hand; rfree() frees what these allocate ---------- */

static redisReply *mk(int type)
{
    redisReply *r = calloc(1, sizeof *r);
    assert_non_null(r);
    r->type = type;
    return r;
}

static redisReply *mk_int(long long v)
{
    redisReply *r = mk(REDIS_REPLY_INTEGER);
    r->integer = v;
    return r;
}

static redisReply *mk_str(const char *s)
{
    redisReply *r = mk(REDIS_REPLY_STRING);
    r->len = strlen(s);
    r->str = malloc(r->len + 1);
    assert_non_null(r->str);
    memcpy(r->str, s, r->len + 1);
    return r;
}

static redisReply *mk_nil(void)
{
    return mk(REDIS_REPLY_NIL);
}

/* An array of n elements, given as arguments. */
static redisReply *mk_arr(size_t n, ...)
{
    redisReply *r = mk(REDIS_REPLY_ARRAY);
    va_list ap;
    size_t i;

    r->elements = n;
    if (n) {
        r->element = calloc(n, sizeof *r->element);
        assert_non_null(r->element);
    }
    va_start(ap, n);
    for (i = 0; i < n; i++)
        r->element[i] = va_arg(ap, redisReply *);
    va_end(ap);
    return r;
}

static void rfree(redisReply *r)
{
    size_t i;

    if (!r)
        return;
    for (i = 0; i < r->elements; i++)
        rfree(r->element[i]);
    free(r->element);
    free(r->str);
    free(r);
}

/* A node as Redis 7 writes it: endpoint, port, id, map of other names. */
static redisReply *node7(redisReply *endpoint, int port, const char *id)
{
    return mk_arr(4, endpoint, mk_int(port), mk_str(id), mk_arr(0));
}

static redisReply *range(int first, int last, redisReply *master)
{
    return mk_arr(3, mk_int(first), mk_int(last), master);
}

/* ---- what the callback saw --------------------------------------------- */

typedef struct seen_range {
    int first, last, port;
    char host[RL__HOST_MAX];
} seen_range;

typedef struct seen {
    int n;
    int stop_at;        /* 1-based call that returns stop_rc; 0: never */
    int stop_rc;
    seen_range r[8];
} seen;

static int collect(void *arg, int first, int last, const char *host, int port)
{
    seen *s = arg;

    assert_non_null(host);
    assert_true(strlen(host) < RL__HOST_MAX);
    if (s->n < 8) {
        s->r[s->n].first = first;
        s->r[s->n].last = last;
        s->r[s->n].port = port;
        strcpy(s->r[s->n].host, host);
    }
    s->n++;
    return s->n == s->stop_at ? s->stop_rc : 0;
}

static void assert_range(const seen *s, int i, int first, int last, const char *host, int port)
{
    assert_true(i < s->n);
    assert_int_equal(s->r[i].first, first);
    assert_int_equal(s->r[i].last, last);
    assert_string_equal(s->r[i].host, host);
    assert_int_equal(s->r[i].port, port);
}

/* ---- CLUSTER SLOTS ----------------------------------------------------- */

static void test_slots_three_ranges(void **state)
{
    seen s = {0};
    redisReply *r = mk_arr(3,
        range(0, 5460, node7(mk_str("127.0.0.1"), 30001, "09dbe9720cda62f7865eabc5fd8857c5d2678366")),
        range(5461, 10922, node7(mk_str("127.0.0.1"), 30002, "c9d93d9f2c0c524ff34cc11838c2003d8c29e013")),
        range(10923, 16383, node7(mk_str("127.0.0.1"), 30003, "044ec91f325b7595e76dbcb18cc688b6a5b434a1")));
    (void)state;

    assert_int_equal(rl__slots_parse(r, collect, &s), 3);
    assert_int_equal(s.n, 3);
    assert_range(&s, 0, 0, 5460, "127.0.0.1", 30001);
    assert_range(&s, 1, 5461, 10922, "127.0.0.1", 30002);
    assert_range(&s, 2, 10923, 16383, "127.0.0.1", 30003);
    /* Without a callback: only the count. */
    assert_int_equal(rl__slots_parse(r, NULL, NULL), 3);
    rfree(r);
}

static void test_slots_replicas(void **state)
{
    seen s = {0};
    redisReply *r = mk_arr(2,
        mk_arr(5, mk_int(0), mk_int(8191),
               node7(mk_str("10.0.0.1"), 7000, "m1"),
               node7(mk_str("10.0.0.4"), 7003, "r1"),
               node7(mk_str("10.0.0.5"), 7004, "r2")),
        mk_arr(4, mk_int(8192), mk_int(16383),
               node7(mk_str("10.0.0.2"), 7001, "m2"),
               node7(mk_str("10.0.0.6"), 7005, "r3")));
    (void)state;

    assert_int_equal(rl__slots_parse(r, collect, &s), 2);
    assert_range(&s, 0, 0, 8191, "10.0.0.1", 7000);
    assert_range(&s, 1, 8192, 16383, "10.0.0.2", 7001);
    rfree(r);
}

static void test_slots_no_host(void **state)
{
    seen s = {0};
    /* "" (Redis not knowing its own address), "?" (hostnames preferred,
     * none announced), nil (unknown-endpoint): the node that answered. */
    redisReply *r = mk_arr(4,
        range(0, 99, node7(mk_str(""), 7000, "a")),
        range(100, 199, node7(mk_str("?"), 7001, "b")),
        range(200, 299, node7(mk_nil(), 7002, "c")),
        range(300, 300, node7(mk_str("::1"), 7003, "d")));
    (void)state;

    assert_int_equal(rl__slots_parse(r, collect, &s), 4);
    assert_range(&s, 0, 0, 99, "", 7000);
    assert_range(&s, 1, 100, 199, "", 7001);
    assert_range(&s, 2, 200, 299, "", 7002);
    assert_range(&s, 3, 300, 300, "::1", 7003);
    rfree(r);
}

static void test_slots_extra_elements(void **state)
{
    seen s = {0};
    redisReply *r = mk_arr(3,
        /* Redis 7: the map of other names, flat in RESP2; and more after it. */
        range(0, 10, mk_arr(6, mk_str("node-a.example"), mk_int(7000), mk_str("id-a"),
                            mk_arr(2, mk_str("ip"), mk_str("10.0.0.1")),
                            mk_str("future"), mk_int(42))),
        /* Redis 3: endpoint and port only. */
        range(11, 20, mk_arr(2, mk_str("10.0.0.2"), mk_int(7001))),
        /* Something after the replicas that is not a node. */
        mk_arr(5, mk_int(21), mk_int(16383), node7(mk_str("10.0.0.3"), 7002, "id-c"),
               node7(mk_str("10.0.0.9"), 7009, "id-r"), mk_int(7)));
    (void)state;

    assert_int_equal(rl__slots_parse(r, collect, &s), 3);
    assert_range(&s, 0, 0, 10, "node-a.example", 7000);
    assert_range(&s, 1, 11, 20, "10.0.0.2", 7001);
    assert_range(&s, 2, 21, 16383, "10.0.0.3", 7002);
    rfree(r);
}

static void test_slots_empty(void **state)
{
    seen s = {0};
    redisReply *r = mk_arr(0);
    (void)state;

    /* A cluster with no slot assigned yet. */
    assert_int_equal(rl__slots_parse(r, collect, &s), 0);
    assert_int_equal(s.n, 0);
    rfree(r);
}

static void test_slots_host_length(void **state)
{
    char name[RL__HOST_MAX + 1];
    seen s = {0};
    redisReply *r;
    (void)state;

    memset(name, 'h', sizeof name - 1);
    name[RL__HOST_MAX - 1] = '\0';         /* 255 bytes: fits */
    r = mk_arr(1, range(0, 1, node7(mk_str(name), 7000, "a")));
    assert_int_equal(rl__slots_parse(r, collect, &s), 1);
    assert_range(&s, 0, 0, 1, name, 7000);
    rfree(r);

    name[RL__HOST_MAX - 1] = 'h';          /* 256: does not */
    name[RL__HOST_MAX] = '\0';
    r = mk_arr(1, range(0, 1, node7(mk_str(name), 7000, "a")));
    assert_int_equal(rl__slots_parse(r, collect, &s), -1);
    rfree(r);
}

/* One malformed range (or whole reply): -1, and the callback never called. */
static void expect_malformed(redisReply *r, const char *what)
{
    seen s = {0};
    int rc = rl__slots_parse(r, collect, &s);

    if (rc != -1 || s.n != 0)
        fail_msg("%s: gave %d after %d calls, expected -1 and none", what, rc, s.n);
    rfree(r);
}

static redisReply *one(redisReply *range_reply)
{
    return mk_arr(1, range_reply);
}

static void test_slots_malformed(void **state)
{
    redisReply *embedded_nul;
    (void)state;

    assert_int_equal(rl__slots_parse(NULL, collect, NULL), -1);
    expect_malformed(mk_str("ERR This instance has cluster support disabled"), "a string");
    expect_malformed(mk(REDIS_REPLY_ERROR), "an error");
    expect_malformed(mk_int(3), "an integer");
    expect_malformed(mk_nil(), "nil");
    expect_malformed(mk_arr(1, mk_int(0)), "a range that is an integer");
    expect_malformed(mk_arr(1, mk_nil()), "a range that is nil");
    expect_malformed(one(mk_arr(2, mk_int(0), mk_int(1))), "a range without a master");
    expect_malformed(one(mk_arr(0)), "an empty range");
    expect_malformed(one(range(16384, 16384, node7(mk_str("h"), 1, "a"))), "first 16384");
    expect_malformed(one(range(0, 16384, node7(mk_str("h"), 1, "a"))), "last 16384");
    expect_malformed(one(range(-1, 5, node7(mk_str("h"), 1, "a"))), "first -1");
    expect_malformed(one(range(6, 5, node7(mk_str("h"), 1, "a"))), "first > last");
    expect_malformed(one(mk_arr(3, mk_str("0"), mk_int(5), node7(mk_str("h"), 1, "a"))),
                     "first a string");
    expect_malformed(one(mk_arr(3, mk_int(0), mk_nil(), node7(mk_str("h"), 1, "a"))),
                     "last nil");
    expect_malformed(one(range(0, 5, mk_str("h:1"))), "master a string");
    expect_malformed(one(range(0, 5, mk_arr(1, mk_str("h")))), "master without a port");
    expect_malformed(one(range(0, 5, mk_arr(0))), "master empty");
    expect_malformed(one(range(0, 5, mk_arr(3, mk_str("h"), mk_str("7000"), mk_str("a")))),
                     "port a string");
    expect_malformed(one(range(0, 5, node7(mk_str("h"), 0, "a"))), "port 0");
    expect_malformed(one(range(0, 5, node7(mk_str("h"), 65536, "a"))), "port 65536");
    expect_malformed(one(range(0, 5, node7(mk_int(1), 7000, "a"))), "host an integer");
    expect_malformed(one(range(0, 5, node7(mk_arr(0), 7000, "a"))), "host an array");
    expect_malformed(one(range(0, 5, node7(mk_str("bad host"), 7000, "a"))), "host with a space");

    embedded_nul = mk_str("h\001x");
    embedded_nul->str[1] = '\0';
    expect_malformed(one(range(0, 5, node7(embedded_nul, 7000, "a"))), "host with a NUL");
}

static void test_slots_malformed_after_good(void **state)
{
    seen s = {0};
    redisReply *r = mk_arr(3,
        range(0, 5, node7(mk_str("h"), 7000, "a")),
        range(6, 4, node7(mk_str("h"), 7001, "b")),
        range(7, 9, node7(mk_str("h"), 7002, "c")));
    (void)state;

    /* The ranges before the bad one were seen; none after. */
    assert_int_equal(rl__slots_parse(r, collect, &s), -1);
    assert_int_equal(s.n, 1);
    assert_range(&s, 0, 0, 5, "h", 7000);
    rfree(r);
}

static void test_slots_fn_stops(void **state)
{
    seen s = {0};
    redisReply *r = mk_arr(3,
        range(0, 5, node7(mk_str("h"), 7000, "a")),
        range(6, 9, node7(mk_str("h"), 7001, "b")),
        range(10, 16383, node7(mk_str("h"), 7002, "c")));
    (void)state;

    s.stop_at = 2;
    s.stop_rc = 7;
    assert_int_equal(rl__slots_parse(r, collect, &s), 7);
    assert_int_equal(s.n, 2);
    assert_range(&s, 1, 6, 9, "h", 7001);

    memset(&s, 0, sizeof s);
    s.stop_at = 1;
    s.stop_rc = RL_ENOMEM;
    assert_int_equal(rl__slots_parse(r, collect, &s), RL_ENOMEM);
    assert_int_equal(s.n, 1);
    rfree(r);
}

/* ---- MOVED / ASK ------------------------------------------------------- */

/* Parse s[0..strlen) from a heap copy with no NUL after it, so that a read
 * past len is caught under AddressSanitizer. */
static int redirect(const char *s, rl__redirect *out)
{
    size_t len = strlen(s);
    char *buf = malloc(len ? len : 1);
    int rc;

    assert_non_null(buf);
    memcpy(buf, s, len);
    rc = rl__redirect_parse(buf, len, out);
    free(buf);
    return rc;
}

static void expect_redirect(const char *s, int kind, int slot, const char *host, int port)
{
    rl__redirect r;
    int rc = redirect(s, &r);

    if (rc != 1)
        fail_msg("'%s' gave %d, expected 1", s, rc);
    assert_int_equal(r.kind, kind);
    assert_int_equal(r.slot, slot);
    assert_string_equal(r.host, host);
    assert_int_equal(r.port, port);
}

static void test_redirect_good(void **state)
{
    (void)state;
    expect_redirect("MOVED 3999 127.0.0.1:6381", RL__REDIR_MOVED, 3999, "127.0.0.1", 6381);
    expect_redirect("ASK 3999 127.0.0.1:6381", RL__REDIR_ASK, 3999, "127.0.0.1", 6381);
    expect_redirect("MOVED 0 h:1", RL__REDIR_MOVED, 0, "h", 1);
    expect_redirect("MOVED 16383 h:65535", RL__REDIR_MOVED, 16383, "h", 65535);
    expect_redirect("ASK 12182 redis-node-3.cache.example.com:7000", RL__REDIR_ASK, 12182,
                    "redis-node-3.cache.example.com", 7000);
    /* Redis 7 writes IPv6 bare: the port follows the last colon. */
    expect_redirect("MOVED 3999 ::1:6381", RL__REDIR_MOVED, 3999, "::1", 6381);
    expect_redirect("ASK 1 2001:db8::7:7000", RL__REDIR_ASK, 1, "2001:db8::7", 7000);
    expect_redirect("MOVED 2 [::1]:6381", RL__REDIR_MOVED, 2, "::1", 6381);
    /* No host (unknown-endpoint) or "?" (no hostname announced): the node
     * that answered. */
    expect_redirect("MOVED 3999 :6381", RL__REDIR_MOVED, 3999, "", 6381);
    expect_redirect("ASK 3999 ?:6381", RL__REDIR_ASK, 3999, "", 6381);
}

static void test_redirect_not_terminated(void **state)
{
    static const char buf[] = "MOVED 3999 127.0.0.1:6381999 garbage";
    static const char ask[] = "ASK 42 node-b:7001\r\n";
    rl__redirect r;
    (void)state;

    assert_int_equal(rl__redirect_parse(buf, 25, &r), 1);
    assert_int_equal(r.kind, RL__REDIR_MOVED);
    assert_int_equal(r.slot, 3999);
    assert_string_equal(r.host, "127.0.0.1");
    assert_int_equal(r.port, 6381);

    assert_int_equal(rl__redirect_parse(buf, 23, &r), 1);
    assert_int_equal(r.port, 63);

    assert_int_equal(rl__redirect_parse(ask, sizeof ask - 3, &r), 1);
    assert_int_equal(r.kind, RL__REDIR_ASK);
    assert_string_equal(r.host, "node-b");
    assert_int_equal(r.port, 7001);
    /* With the CRLF inside len it is not a port. */
    assert_int_equal(rl__redirect_parse(ask, sizeof ask - 1, &r), -1);
}

static void test_redirect_host_length(void **state)
{
    char msg[16 + RL__HOST_MAX + 8];
    rl__redirect r;
    int n;
    (void)state;

    n = snprintf(msg, sizeof msg, "MOVED 1 ");
    memset(msg + n, 'h', RL__HOST_MAX - 1);
    strcpy(msg + n + RL__HOST_MAX - 1, ":7000");
    assert_int_equal(redirect(msg, &r), 1);
    assert_int_equal(strlen(r.host), RL__HOST_MAX - 1);

    memset(msg + n, 'h', RL__HOST_MAX);
    strcpy(msg + n + RL__HOST_MAX, ":7000");
    assert_int_equal(redirect(msg, &r), -1);
}

static void test_redirect_bad(void **state)
{
    static const char *bad[] = {
        "MOVED 16384 h:1", "MOVED 99999 h:1", "MOVED 123456 h:1", "MOVED -1 h:1",
        "MOVED 3999 h:0", "MOVED 3999 h:70000", "MOVED 3999 h:65536", "MOVED 3999 h:123456",
        "MOVED 3999h:1", "MOVED 3999", "MOVED 3999 ", "MOVED", "MOVED ", "ASK", "MOVED  3999 h:1",
        "MOVED 3999  h:1", "MOVED x h:1", "ASK 39x9 h:1", "MOVED 3999 h", "MOVED 3999 h:",
        "MOVED 3999 h:12x", "MOVED 3999 h:1 ", "MOVED 3999 h:-1", "MOVED 3999 a b:1",
        "MOVED 3999 h:1 extra", "MOVED 3999 :", "MOVED 3999 h\t:1",
    };
    size_t i;
    (void)state;

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rl__redirect r;
        int rc = redirect(bad[i], &r);
        if (rc != -1)
            fail_msg("'%s' gave %d, expected -1", bad[i], rc);
        assert_int_equal(r.kind, RL__REDIR_NONE);
    }
}

static void test_redirect_other_errors(void **state)
{
    static const char *other[] = {
        "", "ERR unknown command", "MOVEDX 3999 h:1", "MOVED3999 h:1", "ASKING", "ASK3999 h:1",
        "moved 3999 h:1", " MOVED 3999 h:1", "TRYAGAIN Multiple keys request during rehashing",
        "CLUSTERDOWN The cluster is down", "NOSCRIPT No matching script",
    };
    rl__redirect r;
    size_t i;
    (void)state;

    for (i = 0; i < sizeof other / sizeof other[0]; i++) {
        int rc = redirect(other[i], &r);
        if (rc != 0)
            fail_msg("'%s' gave %d, expected 0", other[i], rc);
        assert_int_equal(r.kind, RL__REDIR_NONE);
    }
    assert_int_equal(rl__redirect_parse(NULL, 0, &r), 0);
}

/* ---- TRYAGAIN / CLUSTERDOWN -------------------------------------------- */

static int retryable(const char *s)
{
    size_t len = strlen(s);
    char *buf = malloc(len ? len : 1);
    int rc;

    assert_non_null(buf);
    memcpy(buf, s, len);
    rc = rl__cluster_retryable(buf, len);
    free(buf);
    return rc;
}

static void test_retryable(void **state)
{
    static const char *yes[] = {
        "TRYAGAIN Multiple keys request during rehashing of slot",
        "CLUSTERDOWN The cluster is down", "CLUSTERDOWN Hash slot not served",
        "CLUSTERDOWN The cluster is down and only accepts read commands",
        "TRYAGAIN", "CLUSTERDOWN",
    };
    static const char *no[] = {
        "", "ERR unknown command", "MOVED 3999 h:1", "ASK 3999 h:1", "TRYAGAINX",
        "CLUSTERDOWNX x", "CLUSTERDOW", "TRYAGAI", "tryagain", " TRYAGAIN", "LOADING Redis is loading",
        "BUSY Redis is busy running a script", "READONLY You can't write against a read only replica.",
    };
    static const char trailing[] = "CLUSTERDOWNISH";
    size_t i;
    (void)state;

    for (i = 0; i < sizeof yes / sizeof yes[0]; i++)
        if (retryable(yes[i]) != 1)
            fail_msg("'%s' is retryable", yes[i]);
    for (i = 0; i < sizeof no / sizeof no[0]; i++)
        if (retryable(no[i]) != 0)
            fail_msg("'%s' is not retryable", no[i]);
    /* len ends the code. */
    assert_int_equal(rl__cluster_retryable(trailing, 11), 1);
    assert_int_equal(rl__cluster_retryable(trailing, sizeof trailing - 1), 0);
    assert_int_equal(rl__cluster_retryable(NULL, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slots_three_ranges),
        cmocka_unit_test(test_slots_replicas),
        cmocka_unit_test(test_slots_no_host),
        cmocka_unit_test(test_slots_extra_elements),
        cmocka_unit_test(test_slots_empty),
        cmocka_unit_test(test_slots_host_length),
        cmocka_unit_test(test_slots_malformed),
        cmocka_unit_test(test_slots_malformed_after_good),
        cmocka_unit_test(test_slots_fn_stops),
        cmocka_unit_test(test_redirect_good),
        cmocka_unit_test(test_redirect_not_terminated),
        cmocka_unit_test(test_redirect_host_length),
        cmocka_unit_test(test_redirect_bad),
        cmocka_unit_test(test_redirect_other_errors),
        cmocka_unit_test(test_retryable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
