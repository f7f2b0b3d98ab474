/*
 * TLS to a single server (rediss://), against real redis-servers with a
 * plain port (the test's own look at keys and INFO) and a tls-port (rlock's
 * clients), certificates made by the openssl command (tests/common/rt_tls).
 *
 *   1. it works: locks of every kind, reentry, fencing, lock-delay, the
 *      watchdog, release notices, a DNS name, a CA directory, mutual TLS;
 *   2. each failure of verification or handshake has its status and words
 *      and writes nothing; tls_server_name and tls_insecure_skip_verify;
 *   3. bad options say which and change nothing; the old options layout;
 *   4. a fork child over TLS leaves its parent's TLS streams alone;
 *   5. a cut connection is made again over TLS.
 */
#include "it_common.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy.h"
#include "rt_tls.h"

static rt_tls *certs;   /* made once for the whole run */

/* ---- servers ----------------------------------------------------------- */

enum { CERT_SERVER, CERT_ROGUE, CERT_OTHER, CERT_EXPIRED };

/* What a test's server is: passed to the setup as cmocka's prestate. */
typedef struct server_kind {
    int cert;
    int auth_clients;       /* --tls-auth-clients yes */
    const char *more;       /* further arguments, or NULL */
} server_kind;

static const server_kind good = { CERT_SERVER, 0, NULL };
static const server_kind rogue = { CERT_ROGUE, 0, NULL };
static const server_kind other = { CERT_OTHER, 0, NULL };
static const server_kind expired = { CERT_EXPIRED, 0, NULL };
static const server_kind mutual = { CERT_SERVER, 1, NULL };
static const server_kind optional = { CERT_SERVER, 0, "--tls-auth-clients optional" };
static const server_kind rogue_auth = { CERT_ROGUE, 0, "--requirepass " IT_PASSWORD };

typedef struct tls_env {
    rt_redis *redis;        /* its plain port: the test's own connection */
    redisContext *rc;
    int tls_port;
    char url[64];           /* "rediss://127.0.0.1:<tls_port>" */
} tls_env;

static int server_args(const server_kind *k, int port, char *buf, size_t cap)
{
    const char *crt[] = { certs->server_crt, certs->rogue_crt, certs->other_crt,
                          certs->expired_crt };
    const char *key[] = { certs->server_key, certs->rogue_key, certs->other_key,
                          certs->expired_key };
    size_t n;

    rt_tls_server_args(certs, port, crt[k->cert], key[k->cert], k->auth_clients, buf, cap);
    n = strlen(buf);
    if (k->more)
        snprintf(buf + n, cap - n, " %s", k->more);
    return 0;
}

static int tls_setup(void **state)
{
    const server_kind *k = *state;
    tls_env *e = calloc(1, sizeof *e);
    char args[1600];
    int attempt;

    if (!e || !certs) {
        free(e);
        return -1;
    }
    /* A free port may be taken by someone else before the server binds it. */
    for (attempt = 0; attempt < 2 && !e->redis; attempt++) {
        if ((e->tls_port = rt_free_port()) < 0)
            break;
        server_args(k, e->tls_port, args, sizeof args);
        if (rt_redis_open("tls", args, &e->redis, &e->rc) != 0)
            e->redis = NULL;
    }
    if (!e->redis) {
        free(e);
        return -1;
    }
    snprintf(e->url, sizeof e->url, "rediss://127.0.0.1:%d", e->tls_port);
    *state = e;
    return 0;
}

static int tls_teardown(void **state)
{
    tls_env *e = *state;

    if (e) {
        redisFree(e->rc);
        rt_redis_stop(e->redis);
        free(e);
    }
    *state = NULL;
    return 0;
}

#define SETUP(test, kind) \
    cmocka_unit_test_prestate_setup_teardown(test, tls_setup, tls_teardown, (void *)&(kind))

/* ---- clients ----------------------------------------------------------- */

/* Options for url (NULL: e's TLS port), trusting the test CA. */
static void tls_options(rl_options *o, const tls_env *e, const char *url, long lease_ms)
{
    it_options(o, url ? url : e->url, lease_ms, 1000);
    o->connect_timeout_ms = 1000;
    o->tls_ca_file = certs->ca;
}

/* A client on e's TLS port trusting the test CA (fails the test when it cannot). */
static rl_client *tls_client(const tls_env *e, long lease_ms)
{
    rl_options o;

    tls_options(&o, e, NULL, lease_ms);
    return it_client_opts(&o);
}

static rl_lock *kind_lock(rl_client *c, const char *name, int kind)
{
    rl_lock *l = NULL;

    IT_RC(rl_lock_new_kind(&l, c, name, strlen(name), kind), RL_OK);
    return l;
}

/* Log lines received, checked for a password as they come. */
static struct {
    pthread_mutex_t mu;
    int lines, warns, leaked;
    char warn[256];
} logged = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, "" };

static void log_line(int level, const char *message, void *payload)
{
    (void)payload;
    pthread_mutex_lock(&logged.mu);
    logged.lines++;
    if (level == RL_LOG_WARN && logged.warns++ == 0)
        snprintf(logged.warn, sizeof logged.warn, "%s", message);
    if (strstr(message, IT_PASSWORD) || strstr(message, IT_PASSWORD_ENC))
        logged.leaked = 1;
    pthread_mutex_unlock(&logged.mu);
}

static void log_reset(void)
{
    pthread_mutex_lock(&logged.mu);
    logged.lines = logged.warns = logged.leaked = 0;
    logged.warn[0] = '\0';
    pthread_mutex_unlock(&logged.mu);
}

/* ---- looking at the server --------------------------------------------- */

static long long dbsize(tls_env *e)
{
    redisReply *r = redisCommand(e->rc, "DBSIZE");
    long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

    freeReplyObject(r);
    return n;
}

/* A number from INFO <section> ("total_connections_received"); -1: none. */
static long long info_number(tls_env *e, const char *section, const char *field)
{
    redisReply *r = redisCommand(e->rc, "INFO %s", section);
    char want[96];
    const char *p;
    long long n = -1;

    snprintf(want, sizeof want, "\n%s:", field);
    if (r && r->type == REDIS_REPLY_STRING && (p = strstr(r->str, want)))
        n = strtoll(p + strlen(want), NULL, 10);
    freeReplyObject(r);
    return n;
}

/* No key, no script, no rlock command: what a refused client leaves. */
static void assert_untouched(tls_env *e)
{
    IT_EQ(dbsize(e), 0);
    IT_EQ(rt_redis_cmdstat_calls(e->rc, "evalsha"), 0);
    IT_EQ(rt_redis_cmdstat_calls(e->rc, "eval"), 0);
    IT_EQ(rt_redis_cmdstat_calls(e->rc, "script|load"), 0);
    IT_EQ(rt_redis_cmdstat_calls(e->rc, "client|setname"), 0);
}

static void assert_message(const char *words)
{
    if (!strstr(rl_last_error(), words))
        fail_msg("rl_last_error() \"%s\" does not say \"%s\"", rl_last_error(), words);
}

/* rl_client_new(o) returns `want` saying `words`, and the server saw nothing. */
static void assert_refused(tls_env *e, const rl_options *o, int want, const char *words)
{
    rl_client *c = NULL;
    int rc = rl_client_new(&c, o);

    if (c) {
        rl_client_free(c);
        fail_msg("rl_client_new(%s) made a client; expected %s", o->url, rl_strerror(want));
    }
    IT_RC(rc, want);
    assert_message(words);
    print_message("%s: %s: %s\n", o->url, rl_strerror(rc), rl_last_error());
    assert_untouched(e);
}

/* An acquisition and release over c, seen in Redis through the plain port. */
static void assert_locks(tls_env *e, rl_client *c, const char *name)
{
    rl_lock *l = it_lock(c, name);
    char key[96];
    size_t kl = it_key(key, sizeof key, "rl:", name, strlen(name), NULL);

    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);
    rl_lock_free(l);
}

/* How often the key's PTTL went back up (a renewal) within ms; fails the
 * test when the key goes. Stops at `want`. */
static int renewals_seen(tls_env *e, const char *key, size_t kl, int want, long ms)
{
    int64_t deadline = rt_now_ms() + ms;
    long long last = rt_redis_pttl(e->rc, key, kl), now;
    int n = 0;

    while (n < want && rt_now_ms() < deadline) {
        rt_sleep_ms(20);
        if ((now = rt_redis_pttl(e->rc, key, kl)) <= 0)
            fail_msg("the held key went (PTTL %lld) after %d renewals", now, n);
        if (now > last + 100)
            n++;
        last = now;
    }
    return n;
}

/* ==== 1. it works ======================================================== */

static void test_acquire_release_reentry(void **state)
{
    tls_env *e = *state;
    rl_client *c = tls_client(e, 0);
    rl_lock *l = it_lock(c, "t-basic");
    it_hash h;

    IT_RC(rl_lock_acquire(l), RL_OK);
    IT_RC(rl_lock_acquire(l), RL_OK);
    IT_EQ(rl_lock_hold_count(l), 2);
    assert_int_equal(it_hgetall(e->rc, "rl:{t-basic}", 12, &h), 0);
    IT_EQ(h.fields, 1);
    assert_string_equal(h.value, "2");
    assert_true(it_owner_field_ok(h.field, h.field_len));
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, "rl:{t-basic}", 12), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, "rl:{t-basic}", 12), 0);
    IT_RC(rl_lock_release(l), RL_ENOTOWNER);
    /* The scripts ran over TLS (the plain port saw no other client). */
    assert_true(rt_redis_cmdstat_ok(e->rc, "evalsha") >= 3);
    rl_lock_free(l);
    rl_client_free(c);
}

static void test_every_kind(void **state)
{
    tls_env *e = *state;
    rl_client *a = tls_client(e, 0), *b = tls_client(e, 0);
    rl_lock *fa = kind_lock(a, "t-fair", RL_KIND_FAIR), *fb = kind_lock(b, "t-fair", RL_KIND_FAIR);
    rl_lock *ra = kind_lock(a, "t-rw", RL_KIND_READ), *rb = kind_lock(b, "t-rw", RL_KIND_READ);
    rl_lock *wb = kind_lock(b, "t-rw", RL_KIND_WRITE);

    IT_RC(rl_lock_try_acquire(fa, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(fa, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(fb, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(rl_lock_release(fa), RL_OK);
    IT_RC(rl_lock_release(fa), RL_OK);
    IT_RC(rl_lock_try_acquire(fb, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(fb), RL_OK);

    /* Two readers share; a writer waits for both. */
    IT_RC(rl_lock_try_acquire(ra, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(rb, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(rb), RL_OK);
    IT_RC(rl_lock_try_acquire(wb, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(rl_lock_release(ra), RL_OK);
    IT_RC(rl_lock_try_acquire(wb, 2000, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(ra, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(rl_lock_release(wb), RL_OK);
    IT_EQ(dbsize(e), 2);    /* the two owner records, nothing else */

    rl_lock_free(fa);
    rl_lock_free(fb);
    rl_lock_free(ra);
    rl_lock_free(rb);
    rl_lock_free(wb);
    rl_client_free(a);
    rl_client_free(b);
}

static void test_fencing_and_delay(void **state)
{
    tls_env *e = *state;
    rl_options o;
    rl_client *a, *b = tls_client(e, 0);
    rl_lock *la, *lb;
    unsigned long long t1 = 0, t2 = 0;
    int64_t t0, got;

    tls_options(&o, e, NULL, 0);
    o.fencing = 1;
    o.lock_delay_ms = 1000;
    a = it_client_opts(&o);
    la = it_lock(a, "t-fence");
    lb = it_lock(b, "t-fence");

    IT_RC(rl_lock_acquire(la), RL_OK);
    IT_RC(rl_lock_token(&t1, la), RL_OK);
    IT_RC(rl_lock_release(la), RL_OK);
    IT_RC(rl_lock_acquire(la), RL_OK);
    IT_RC(rl_lock_token(&t2, la), RL_OK);
    IT_RC(rl_lock_release(la), RL_OK);
    if (t1 == 0 || t2 <= t1)
        fail_msg("tokens %llu then %llu: not rising", t1, t2);

    /* A hold lost (its fixed lease ran out) keeps the name for the delay. */
    t0 = rt_now_ms();
    IT_RC(rl_lock_try_acquire(la, 0, 200), RL_OK);
    IT_WAIT(rl_lock_interrupted(la) == 1, 2000);
    IT_RC(rl_lock_try_acquire(lb, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(rl_lock_try_acquire(lb, 5000, RL_LEASE_WATCHDOG), RL_OK);
    got = rt_now_ms() - t0;
    print_message("lease 200 ms, delay 1000 ms: the next holder in after %lld ms\n",
                  (long long)got);
    IT_RANGE(got, 1190, 4000);
    IT_RC(rl_lock_release(lb), RL_OK);
    IT_RC(rl_lock_release(la), RL_ELOST);

    rl_lock_free(la);
    rl_lock_free(lb);
    rl_client_free(a);
    rl_client_free(b);
}

/* Lease 1500 ms: the watchdog renews over TLS every 500 ms. */
static void test_watchdog_renews(void **state)
{
    tls_env *e = *state;
    rl_client *c = tls_client(e, 1500);
    rl_lock *l = it_lock(c, "t-wd");
    int64_t t0 = rt_now_ms();
    int n;

    IT_RC(rl_lock_acquire(l), RL_OK);
    IT_RANGE(rt_redis_pttl(e->rc, "rl:{t-wd}", 9), 1000, 1500);
    n = renewals_seen(e, "rl:{t-wd}", 9, 4, 5000);
    print_message("%d renewals seen in %lld ms\n", n, (long long)(rt_now_ms() - t0));
    IT_EQ(n, 4);
    assert_true(rt_now_ms() - t0 > 1500);   /* held past its first lease */
    IT_EQ(rl_lock_interrupted(l), 0);
    IT_EQ(it_stats(c).renewal_failures, 0);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, "rl:{t-wd}", 9), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

#define WOKEN_WITHIN_MS 100

/* The waiter's subscriber listens over TLS: the notice wakes it, long
 * before the holder's 20 s lease and faster than a 250 ms poll. */
static void test_waiter_woken_by_notice(void **state)
{
    tls_env *e = *state;
    rl_client *a = tls_client(e, 0), *b = tls_client(e, 0);
    rl_lock *la = it_lock(a, "t-wake"), *lb = it_lock(b, "t-wake");
    it_acq w;
    int64_t released_us, took_ms;

    IT_RC(rl_lock_try_acquire(la, 0, 20000), RL_OK);
    it_acq_begin(&w, lb, 10000, 0);
    IT_WAIT(rt_redis_numsub(e->rc, "rl:{t-wake}:release", 19) >= 1, 5000);
    IT_WAIT(atomic_load(&w.state) == 1 && rt_now_us() - w.t_call_us > 1000000, 5000);
    IT_EQ(atomic_load(&w.state), 1);
    released_us = rt_now_us();
    IT_RC(rl_lock_release(la), RL_OK);
    assert_int_equal(it_acq_join(&w, 5000), 0);
    IT_RC(w.rc, RL_OK);
    IT_RC(w.release_rc, RL_OK);
    took_ms = (w.t_return_us - released_us) / 1000;
    print_message("waiter woken %lld ms after the release\n", (long long)took_ms);
    IT_RANGE(took_ms, 0, WOKEN_WITHIN_MS);
    rl_lock_free(la);
    rl_lock_free(lb);
    rl_client_free(a);
    rl_client_free(b);
}

static void test_dns_name(void **state)
{
    tls_env *e = *state;
    char url[64];
    rl_options o;
    rl_client *c;

    snprintf(url, sizeof url, "rediss://localhost:%d", e->tls_port);
    tls_options(&o, e, url, 0);
    c = it_client_opts(&o);
    assert_locks(e, c, "t-dns");
    rl_client_free(c);
}

/* A directory holding the CA, hashed (`openssl rehash`) or not. */
static void make_ca_dir(char *dir, size_t cap, const char *name, int hashed)
{
    char *openssl = rt_find_binary("RL_OPENSSL", "openssl");
    char cmd[1200];
    int rc;

    assert_non_null(openssl);
    snprintf(dir, cap, "%s/%s", certs->dir, name);
    snprintf(cmd, sizeof cmd, "mkdir '%s' && cp '%s' '%s/ca.pem'", dir, certs->ca, dir);
    rc = system(cmd);
    if (rc == 0 && hashed) {
        snprintf(cmd, sizeof cmd, "'%s' rehash '%s'", openssl, dir);
        rc = system(cmd);
    }
    free(openssl);
    if (rc != 0)
        fail_msg("cannot make the CA directory: %s", cmd);
}

/* Forget what earlier clients did: for assert_untouched(). */
static void server_reset(tls_env *e)
{
    redisReply *r = redisCommand(e->rc, "FLUSHALL");

    freeReplyObject(r);
    r = redisCommand(e->rc, "CONFIG RESETSTAT");
    assert_true(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
}

static void test_ca_dir(void **state)
{
    tls_env *e = *state;
    char dir[RT_TLS_PATH + 16];
    rl_options o;
    rl_client *c;

    make_ca_dir(dir, sizeof dir, "cadir", 1);
    tls_options(&o, e, NULL, 0);
    o.tls_ca_file = NULL;
    o.tls_ca_dir = dir;
    c = it_client_opts(&o);
    assert_locks(e, c, "t-cadir");
    rl_client_free(c);

    /* The same file without its hash link is not found: the directory is what is read. */
    make_ca_dir(dir, sizeof dir, "cadir-unhashed", 0);
    server_reset(e);
    assert_refused(e, &o, RL_ETLS, "signed by an unknown CA");
}

static void test_mutual_tls(void **state)
{
    tls_env *e = *state;
    rl_options o;
    rl_client *c;

    tls_options(&o, e, NULL, 0);
    o.tls_cert_file = certs->client_crt;
    o.tls_key_file = certs->client_key;
    c = it_client_opts(&o);
    assert_locks(e, c, "t-mtls");
    rl_client_free(c);
}

/* The server asks for a certificate but takes none: the client, which has
 * none, reads the server's verdict (a session ticket: no 200 ms wait for
 * one that does not come) and goes on. */
static void test_optional_client_cert(void **state)
{
    tls_env *e = *state;
    int64_t t0 = rt_now_ms();
    rl_client *c = tls_client(e, 0);

    print_message("client made in %lld ms\n", (long long)(rt_now_ms() - t0));
    assert_locks(e, c, "t-optional");
    rl_client_free(c);
}

/* ==== 2. failures ======================================================== */

static void test_unknown_ca(void **state)
{
    tls_env *e = *state;
    rl_options o;

    tls_options(&o, e, NULL, 0);
    assert_refused(e, &o, RL_ETLS, "its certificate is signed by an unknown CA");
}

/* The system's store does not know the test CA (SSL_CERT_FILE and
 * SSL_CERT_DIR are unset in main). */
static void test_system_store(void **state)
{
    tls_env *e = *state;
    rl_options o;

    tls_options(&o, e, NULL, 0);
    o.tls_ca_file = NULL;
    assert_refused(e, &o, RL_ETLS, "its certificate is signed by an unknown CA");
}

static void test_hostname_mismatch(void **state)
{
    tls_env *e = *state;
    char url[64];
    rl_options o;

    tls_options(&o, e, NULL, 0);
    assert_refused(e, &o, RL_ETLS, "does not name the host connected to (hostname mismatch");
    snprintf(url, sizeof url, "rediss://localhost:%d", e->tls_port);
    tls_options(&o, e, url, 0);
    assert_refused(e, &o, RL_ETLS, "does not name the host connected to (hostname mismatch");
}

/* The name given is the one checked, and the only one. */
static void test_server_name(void **state)
{
    tls_env *e = *state;
    rl_options o;
    rl_client *c;

    tls_options(&o, e, NULL, 0);
    o.tls_server_name = "other.example";
    c = it_client_opts(&o);
    assert_locks(e, c, "t-sni");
    rl_client_free(c);
    o.tls_server_name = "else.example";
    IT_RC(rl_client_new(&c, &o), RL_ETLS);
    assert_message("hostname mismatch");
}

static void test_expired(void **state)
{
    tls_env *e = *state;
    rl_options o;

    tls_options(&o, e, NULL, 0);
    assert_refused(e, &o, RL_ETLS, "its certificate has expired");
}

/* TLS 1.3: the client finishes its handshake before the server refuses it,
 * so the refusal is read as the first reply. */
static void test_client_cert_required(void **state)
{
    tls_env *e = *state;
    char who[64];
    rl_options o;

    tls_options(&o, e, NULL, 0);
    assert_refused(e, &o, RL_ETLS, "the server requires a client certificate (tls_cert_file "
                   "and tls_key_file)");
    snprintf(who, sizeof who, "TLS with 127.0.0.1:%d: ", e->tls_port);
    assert_message(who);
}

static void test_plain_client_on_tls_port(void **state)
{
    tls_env *e = *state;
    char url[64];
    rl_options o;

    snprintf(url, sizeof url, "redis://127.0.0.1:%d", e->tls_port);
    it_options(&o, url, 0, 1000);
    o.connect_timeout_ms = 1000;
    assert_refused(e, &o, RL_ECONN, "(if the server expects TLS: rediss://)");
}

/*
 * A plain port reads the ClientHello as an inline command: it answers (an
 * error, which is no TLS record) only if the hello's random bytes hold a
 * newline, else it waits for one, like a stopped server. Either way the
 * words point at redis://; silence stays RL_ECONN (as good as down).
 */
static void test_tls_client_on_plain_port(void **state)
{
    tls_env *e = *state;
    char url[64];
    rl_client *c = NULL;
    rl_options o;
    int rc;

    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", e->redis->port);
    tls_options(&o, e, url, 0);
    rc = rl_client_new(&c, &o);
    assert_null(c);
    print_message("%s: %s: %s\n", url, rl_strerror(rc), rl_last_error());
    if (rc == RL_ETLS)
        assert_message("the server does not speak TLS on this port (a plain port? then "
                       "redis://)");
    else
        IT_RC(rc, RL_ECONN);
    if (rc == RL_ECONN)
        assert_message("no answer to the handshake in time (stopped? or a port without TLS (a plain "
                       "port: then redis://))");
    assert_untouched(e);
}

/* Verification off: it works, says so once at RL_LOG_WARN, never logs the
 * password; the same URL verified fails without logging it either. */
static void test_insecure_skip_verify(void **state)
{
    tls_env *e = *state;
    char url[96];
    rl_options o;
    rl_client *c;

    snprintf(url, sizeof url, "rediss://:%s@127.0.0.1:%d", IT_PASSWORD_ENC, e->tls_port);
    log_reset();
    tls_options(&o, e, url, 0);
    o.log = log_line;
    o.tls_insecure_skip_verify = 1;
    c = it_client_opts(&o);
    assert_locks(e, c, "t-insecure");
    rl_client_free(c);
    print_message("warned: %s\n", logged.warn);
    IT_EQ(logged.warns, 1);
    assert_non_null(strstr(logged.warn, "tls_insecure_skip_verify"));
    IT_EQ(logged.leaked, 0);

    log_reset();
    o.tls_insecure_skip_verify = 0;
    IT_RC(rl_client_new(&c, &o), RL_ETLS);
    assert_message("unknown CA");
    assert_null(strstr(rl_last_error(), IT_PASSWORD));
    assert_null(strstr(rl_last_error(), IT_PASSWORD_ENC));
    IT_EQ(logged.warns, 0);
    IT_EQ(logged.leaked, 0);
}

/* ==== 3. bad options ===================================================== */

/* Refused before any connection is made. */
static void assert_bad_option(tls_env *e, const rl_options *o, const char *words)
{
    long long conns = info_number(e, "stats", "total_connections_received");

    assert_refused(e, o, RL_EINVAL, words);
    IT_EQ(info_number(e, "stats", "total_connections_received"), conns);
}

static void test_bad_options(void **state)
{
    tls_env *e = *state;
    char url[64];
    rl_options o;

    tls_options(&o, e, NULL, 0);
    o.tls_cert_file = certs->client_crt;
    assert_bad_option(e, &o, "tls_cert_file and tls_key_file go together");
    o.tls_cert_file = NULL;
    o.tls_key_file = certs->client_key;
    assert_bad_option(e, &o, "tls_cert_file and tls_key_file go together");

    tls_options(&o, e, NULL, 0);
    o.tls_ca_file = "/nonexistent/ca.pem";
    assert_bad_option(e, &o, "tls_ca_file \"/nonexistent/ca.pem\"");
    tls_options(&o, e, NULL, 0);
    o.tls_ca_file = NULL;
    o.tls_ca_dir = "/nonexistent/cadir";
    assert_bad_option(e, &o, "tls_ca_dir \"/nonexistent/cadir\"");

    tls_options(&o, e, NULL, 0);
    o.tls_cert_file = certs->client_crt;
    o.tls_key_file = certs->server_key;
    /* OpenSSL 3 finds the mismatch as it loads the key, 1.1 at the check after. */
    assert_bad_option(e, &o, "tls_key_file");
    assert_message(certs->server_key);

    snprintf(url, sizeof url, "redis://127.0.0.1:%d", e->redis->port);
    tls_options(&o, e, url, 0);
    assert_bad_option(e, &o, "tls_ca_file given for a URL without TLS");
    tls_options(&o, e, url, 0);
    o.tls_ca_file = NULL;
    o.tls_insecure_skip_verify = 1;
    assert_bad_option(e, &o, "tls_insecure_skip_verify given for a URL without TLS");
}

/* A program built against layout 4 knows no TLS field: what lies past it is
 * never read, whatever it holds. */
static void test_old_layout(void **state)
{
    tls_env *e = *state;
    rl_options o;
    rl_client *c;

    memset(&o, 0x5a, sizeof o);
    IT_RC(rl_options_init(&o, 4), RL_OK);
    IT_EQ(o.version, 4);
    assert_ptr_equal(o.tls_ca_file, (const char *)(uintptr_t)0x5a5a5a5a5a5a5a5aULL);
    o.url = e->redis->url;
    c = it_client_opts(&o);
    assert_locks(e, c, "t-v4");
    rl_client_free(c);
}

/* ==== 4. fork ============================================================ */

/* In the child (no cmocka): a client of its own over TLS takes and gives
 * back a lock; the inherited handle reconnects and finds the parent's hold
 * taken by someone else (the child is a new owner). */
typedef struct fork_arg {
    const char *url;
    rl_lock *inherited;     /* the parent's handle, on the name it holds */
} fork_arg;

static int child_locks(void *arg)
{
    fork_arg *a = arg;
    rl_options o;
    rl_client *c = NULL;
    rl_lock *l = NULL;
    int code = 0;

    if (rl_options_init(&o, RL_OPTIONS_VERSION) != RL_OK)
        return 10;
    o.url = a->url;
    o.tls_ca_file = certs->ca;
    if (rl_client_new(&c, &o) != RL_OK)
        return 11;
    if (rl_lock_new(&l, c, "t-fork-child") != RL_OK)
        code = 12;
    else if (rl_lock_try_acquire(l, 2000, RL_LEASE_WATCHDOG) != RL_OK)
        code = 13;
    else if (rl_lock_release(l) != RL_OK)
        code = 14;
    else if (rl_lock_try_acquire(a->inherited, 0, RL_LEASE_WATCHDOG) != RL_EBUSY)
        code = 15;
    rl_lock_free(l);
    rl_client_free(c);
    return code;
}

static void test_fork_child(void **state)
{
    tls_env *e = *state;
    rl_client *c = tls_client(e, 1500);
    rl_lock *l = it_lock(c, "t-fork");
    fork_arg arg = { e->url, l };
    rl_stats before, after;
    long long conns;
    pid_t pid;

    /* The parent's connections are made: the watchdog's (it renewed), and
     * the pool's, idle at the fork (the child closes those, the others
     * only have their sockets closed). */
    IT_RC(rl_lock_acquire(l), RL_OK);
    IT_EQ(renewals_seen(e, "rl:{t-fork}", 11, 1, 3000), 1);
    IT_RC(rl_lock_acquire(l), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    before = it_stats(c);
    IT_EQ(before.connects, 2);
    conns = info_number(e, "clients", "connected_clients");
    pid = rt_child_start(child_locks, &arg, 30);
    assert_true(pid > 0);
    IT_EQ(rt_child_wait(pid, 20000), 0);

    /* The server closed the child's connections, and none of the parent's
     * (a close_notify written by the child into one would end it). */
    IT_WAIT(info_number(e, "clients", "connected_clients") == conns, 2000);
    /* The parent's streams carry on: no loss, nothing found broken. */
    IT_RC(rl_lock_acquire(l), RL_OK);
    IT_EQ(rl_lock_hold_count(l), 2);
    IT_EQ(renewals_seen(e, "rl:{t-fork}", 11, 2, 3000), 2);

    IT_RC(rl_lock_release(l), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    after = it_stats(c);
    IT_EQ(after.disconnects, before.disconnects);
    IT_EQ(after.renewal_failures, 0);
    IT_EQ(rl_lock_interrupted(l), 0);
    IT_EQ(rt_redis_exists(e->rc, "rl:{t-fork}", 11), 0);
    IT_EQ(rt_redis_exists(e->rc, "rl:{t-fork-child}", 17), 0);
    rl_lock_free(l);
    rl_client_free(c);
}

/* In the child: the first call on the inherited client (here, freeing its
 * handle) closes the parent's sockets; a plain client's sockets then take
 * their numbers, and must not be read as TLS links. */
static int child_plain_client(void *arg)
{
    fork_arg *a = arg;
    rl_options o;
    rl_client *c = NULL;
    rl_lock *l = NULL;
    int code = 0;

    rl_lock_free(a->inherited);
    if (rl_options_init(&o, RL_OPTIONS_VERSION) != RL_OK)
        return 21;
    o.url = a->url;
    o.connect_timeout_ms = o.command_timeout_ms = 1000;
    if (rl_client_new(&c, &o) != RL_OK) {
        fprintf(stderr, "child: plain client on %s: %s\n", a->url, rl_last_error());
        return 22;
    }
    if (rl_lock_new(&l, c, "t-fork-plain") != RL_OK)
        code = 23;
    else if (rl_lock_try_acquire(l, 2000, RL_LEASE_WATCHDOG) != RL_OK)
        code = 24;
    else if (rl_lock_release(l) != RL_OK)
        code = 25;
    rl_lock_free(l);
    rl_client_free(c);
    return code;
}

static void test_fork_child_plain_client(void **state)
{
    tls_env *e = *state;
    rl_client *c = tls_client(e, 1500);
    rl_lock *l = it_lock(c, "t-fork2");
    fork_arg arg = { e->redis->url, l };
    pid_t pid;

    IT_RC(rl_lock_acquire(l), RL_OK);
    IT_EQ(renewals_seen(e, "rl:{t-fork2}", 12, 1, 3000), 1);   /* the watchdog's connection */
    pid = rt_child_start(child_plain_client, &arg, 30);
    assert_true(pid > 0);
    IT_EQ(rt_child_wait(pid, 20000), 0);
    IT_EQ(rt_redis_exists(e->rc, "rl:{t-fork-plain}", 17), 0);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);
}

/* ==== 5. a cut connection ================================================ */

static void test_cut_connection(void **state)
{
    tls_env *e = *state;
    rt_proxy *p = rt_proxy_start(e->tls_port);
    char url[64];
    rl_options o;
    rl_client *c;
    rl_lock *l;
    long accepted;

    assert_non_null(p);
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", rt_proxy_port(p));
    tls_options(&o, e, url, 1500);
    c = it_client_opts(&o);
    l = it_lock(c, "t-cut");

    IT_RC(rl_lock_acquire(l), RL_OK);
    accepted = rt_proxy_accepted(p);
    assert_true(rt_proxy_cut_all(p) >= 1);
    /* The watchdog renews over a new TLS connection. */
    IT_EQ(renewals_seen(e, "rl:{t-cut}", 10, 2, 3000), 2);
    assert_true(rt_proxy_accepted(p) > accepted);
    IT_EQ(rl_lock_interrupted(l), 0);
    rt_proxy_cut_all(p);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, "rl:{t-cut}", 10), 0);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);
    rt_proxy_stop(p);
}

static int make_certs(void **state)
{
    (void)state;
    if (!(certs = rt_tls_make()))
        fprintf(stderr, "test_tls: no certificates: this test FAILS\n");
    return certs ? 0 : -1;
}

static int drop_certs(void **state)
{
    (void)state;
    rt_tls_free(certs);
    certs = NULL;
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SETUP(test_acquire_release_reentry, good),
        SETUP(test_every_kind, good),
        SETUP(test_fencing_and_delay, good),
        SETUP(test_watchdog_renews, good),
        SETUP(test_waiter_woken_by_notice, good),
        SETUP(test_dns_name, good),
        SETUP(test_ca_dir, good),
        SETUP(test_mutual_tls, mutual),
        SETUP(test_optional_client_cert, optional),
        SETUP(test_unknown_ca, rogue),
        SETUP(test_system_store, good),
        SETUP(test_hostname_mismatch, other),
        SETUP(test_server_name, other),
        SETUP(test_expired, expired),
        SETUP(test_client_cert_required, mutual),
        SETUP(test_plain_client_on_tls_port, good),
        SETUP(test_tls_client_on_plain_port, good),
        SETUP(test_insecure_skip_verify, rogue_auth),
        SETUP(test_bad_options, good),
        SETUP(test_old_layout, good),
        SETUP(test_fork_child, good),
        SETUP(test_fork_child_plain_client, good),
        SETUP(test_cut_connection, good),
    };

    /* IT_TLS_ONLY=<pattern>: only the tests it matches (a cmocka filter). */
    if (getenv("IT_TLS_ONLY"))
        cmocka_set_test_filter(getenv("IT_TLS_ONLY"));
    unsetenv("SSL_CERT_FILE");
    unsetenv("SSL_CERT_DIR");
    return cmocka_run_group_tests(tests, make_certs, drop_certs);
}
