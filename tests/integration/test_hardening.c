/*
 * Hardening: regression tests for the findings of the review — ACL users
 * without channel rights, out-of-range times, a lost reply on a release
 * that came too late, renewal settings that cannot keep a lease, replies
 * that cannot be understood, statuses after a client is freed, the words
 * and the rate of rlock's messages, and the rl_options ABI.
 *
 * Every test starts its own redis-server (fixture). Nothing here sleeps to
 * synchronise: waits are conditions with deadlines, including "until the
 * clock reaches t" where a test needs time to pass.
 */
#include "it_common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy.h"
#include "rt_util.h"

/* ---- helpers ------------------------------------------------------------ */

/* Wait until the monotonic clock reaches t_ms (a condition on the clock,
 * with a deadline a little past it). */
static void wait_until_clock(int64_t t_ms)
{
    int64_t left = t_ms - rt_now_ms();
    IT_WAIT(rt_now_ms() >= t_ms, (left > 0 ? left : 0) + 1000);
}

/* Assert that rl_last_error() contains `needle` (and print it either way). */
#define IT_MSG_HAS(needle)                                                        \
    do {                                                                          \
        const char *it__m = rl_last_error();                                      \
        if (strstr(it__m, (needle)) == NULL)                                      \
            fail_msg("rl_last_error() = \"%s\": expected it to contain \"%s\"",   \
                     it__m, (needle));                                            \
    } while (0)

#define IT_MSG_HAS_NOT(needle)                                                    \
    do {                                                                          \
        const char *it__m = rl_last_error();                                      \
        if (strstr(it__m, (needle)) != NULL)                                      \
            fail_msg("rl_last_error() = \"%s\": expected it NOT to contain "      \
                     "\"%s\"", it__m, (needle));                                  \
    } while (0)

/*
 * A log callback that counts lines per level and keeps the last lines of
 * level INFO and more severe (DEBUG lines are only counted, so that chatty
 * debugging cannot push the lines the tests look for out of the ring).
 */
#define LOG_RING 64
#define LOG_LINE 384

typedef struct logcap {
    atomic_long count[4];          /* per RL_LOG_* level */
    pthread_mutex_t mu;
    long seq;                      /* lines stored so far (ring position) */
    struct {
        long seq;
        int level;
        char text[LOG_LINE];
    } ring[LOG_RING];
} logcap;

static void logcap_init(logcap *lc)
{
    int i;

    memset(lc, 0, sizeof *lc);
    for (i = 0; i < 4; i++)
        atomic_init(&lc->count[i], 0);
    pthread_mutex_init(&lc->mu, NULL);
}

static void logcap_destroy(logcap *lc)
{
    pthread_mutex_destroy(&lc->mu);
}

static void logcap_cb(int level, const char *message, void *payload)
{
    logcap *lc = payload;
    int l = level < 0 ? 0 : level > 3 ? 3 : level;

    atomic_fetch_add(&lc->count[l], 1);
    if (l > RL_LOG_INFO)
        return;
    pthread_mutex_lock(&lc->mu);
    {
        long at = lc->seq % LOG_RING;
        lc->ring[at].seq = lc->seq;
        lc->ring[at].level = level;
        snprintf(lc->ring[at].text, LOG_LINE, "%s", message);
        lc->seq++;
    }
    pthread_mutex_unlock(&lc->mu);
}

static long logcap_seq(logcap *lc)
{
    long s;
    pthread_mutex_lock(&lc->mu);
    s = lc->seq;
    pthread_mutex_unlock(&lc->mu);
    return s;
}

/* The first stored line with seq >= from (lc->mu held). */
static long logcap_first(const logcap *lc, long from)
{
    long s = lc->seq - LOG_RING;

    if (s < from)
        s = from;
    return s < 0 ? 0 : s;
}

/* Whether a stored line with seq >= from, of a level in [lo, hi], contains
 * both needles (needle2 may be NULL). */
static int logcap_find(logcap *lc, long from, int lo, int hi, const char *needle1,
                       const char *needle2)
{
    long s;
    int found = 0;

    pthread_mutex_lock(&lc->mu);
    s = logcap_first(lc, from);
    for (; s < lc->seq && !found; s++) {
        long at = s % LOG_RING;
        if (lc->ring[at].level < lo || lc->ring[at].level > hi)
            continue;
        if (strstr(lc->ring[at].text, needle1) == NULL)
            continue;
        if (needle2 != NULL && strstr(lc->ring[at].text, needle2) == NULL)
            continue;
        found = 1;
    }
    pthread_mutex_unlock(&lc->mu);
    return found;
}

static void logcap_dump(logcap *lc, long from)
{
    long s;
    static const char *names[] = { "ERROR", "WARN", "INFO", "DEBUG" };

    pthread_mutex_lock(&lc->mu);
    s = logcap_first(lc, from);
    for (; s < lc->seq; s++) {
        long at = s % LOG_RING;
        int lv = lc->ring[at].level;
        print_message("  log %-5s %s\n", lv >= 0 && lv <= 3 ? names[lv] : "?",
                      lc->ring[at].text);
    }
    pthread_mutex_unlock(&lc->mu);
}

static long logcap_warn_err(logcap *lc)
{
    return atomic_load(&lc->count[RL_LOG_ERROR]) + atomic_load(&lc->count[RL_LOG_WARN]);
}

/* ---- Finding 1: ACL users without channel rights ----------------------- */

static void make_acl_user(it_env *e)
{
    redisReply *r = redisCommand(e->rc, "ACL SETUSER app on >apppw ~rl:* resetchannels +@all");

    if (r == NULL || r->type == REDIS_REPLY_ERROR)
        fail_msg("ACL SETUSER failed: %s", r ? r->str : e->rc->errstr);
    freeReplyObject(r);
}

static rl_client *acl_client(it_env *e, char *url, size_t cap, logcap *lc)
{
    rl_options o;

    snprintf(url, cap, "redis://app:apppw@127.0.0.1:%d", e->redis->port);
    it_options(&o, url, 0, 0);
    if (lc != NULL) {
        o.log = logcap_cb;
        o.payload = lc;
    }
    return it_client_opts(&o);
}

/* A client of that user (make_acl_user) holding `name` with a watchdog lease. */
typedef struct acl_hold {
    char url[128], key[64];
    size_t kl;
    rl_client *c;
    rl_lock *l;
} acl_hold;

static void acl_hold_open(acl_hold *h, it_env *e, const char *name)
{
    h->kl = it_key(h->key, sizeof h->key, "rl:", name, strlen(name), NULL);
    make_acl_user(e);
    h->c = acl_client(e, h->url, sizeof h->url, NULL);
    h->l = it_lock(h->c, name);
    IT_RC(rl_lock_try_acquire(h->l, 0, RL_LEASE_WATCHDOG), RL_OK);
}

static void acl_hold_close(acl_hold *h)
{
    rl_lock_free(h->l);
    rl_client_free(h->c);
}

/* Finding 1: a user that may not PUBLISH or SUBSCRIBE still gets a working
 * client, and is told so once, at RL_LOG_ERROR, before rl_client_new()
 * returns. */
static void test_acl_without_channels_is_logged_at_error(void **state)
{
    it_env *e = *state;
    char url[128];
    logcap lc;
    rl_client *c;
    long errors;

    logcap_init(&lc);
    make_acl_user(e);
    c = acl_client(e, url, sizeof url, &lc);
    /* Told by the time rl_client_new returned, not later. */
    if (!logcap_find(&lc, 0, RL_LOG_ERROR, RL_LOG_ERROR, "channel", NULL)) {
        logcap_dump(&lc, 0);
        fail_msg("no RL_LOG_ERROR line mentioning \"channel\" by the time rl_client_new "
                 "returned");
    }
    errors = atomic_load(&lc.count[RL_LOG_ERROR]);
    rl_client_free(c);
    IT_EQ(errors, 1);
    logcap_destroy(&lc);
}

/* Finding 1: a release whose notice Redis refuses (the DEL ran before the
 * refused PUBLISH, and Redis does not roll it back) reports the release. */
static void test_acl_without_channels_release_reports_the_change(void **state)
{
    it_env *e = *state;
    acl_hold h;

    acl_hold_open(&h, e, "aclx");
    IT_EQ(rt_redis_exists(e->rc, h.key, h.kl), 1);
    IT_RC(rl_lock_release(h.l), RL_OK);
    IT_EQ(rl_lock_hold_count(h.l), 0);
    IT_EQ(rt_redis_exists(e->rc, h.key, h.kl), 0);
    IT_EQ(rl_interrupted(), 0);
    acl_hold_close(&h);
}

/* Finding 1: the same for a force-release of a held lock. */
static void test_acl_without_channels_force_release_reports_the_change(void **state)
{
    it_env *e = *state;
    acl_hold h;

    acl_hold_open(&h, e, "aclf");
    IT_RC(rl_lock_force_release(h.l), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, h.key, h.kl), 0);
    /* Our own hold was deleted under us: flagged, and reported on release. */
    IT_EQ(rl_lock_interrupted(h.l), 1);
    IT_RC(rl_lock_release(h.l), RL_ELOST);
    IT_EQ(rl_lock_hold_count(h.l), 0);
    IT_EQ(rl_interrupted(), 0);
    acl_hold_close(&h);
}

/* Finding 1: without release notices, a waiter asks Redis again at a
 * bounded interval instead of sleeping the holder's whole lease. */
static void test_acl_without_channels_waiter_wakes_soon_after_release(void **state)
{
    it_env *e = *state;
    char url_a[128], url_b[128], key[64];
    size_t kl = it_key(key, sizeof key, "rl:", "aclwait", 7, NULL);
    rl_client *ca, *cb;
    rl_lock *la, *lb;
    it_acq b;
    int64_t t_rel_us, latency_ms;
    int rel_rc;

    make_acl_user(e);
    ca = acl_client(e, url_a, sizeof url_a, NULL);
    cb = acl_client(e, url_b, sizeof url_b, NULL);
    la = it_lock(ca, "aclwait");
    lb = it_lock(cb, "aclwait");

    IT_RC(rl_lock_try_acquire(la, 0, RL_LEASE_WATCHDOG), RL_OK); /* 30 s lease */
    memset(&b, 0, sizeof b);
    b.lock = lb;
    b.wait_ms = 5000;
    b.lease_ms = RL_LEASE_WATCHDOG;
    it_acq_start(&b);
    IT_WAIT(atomic_load(&b.state) >= 1, 5000);
    /* Let B get past its first try and into its wait. */
    wait_until_clock(b.t_call_us / 1000 + 200);
    if (atomic_load(&b.state) != 1)    /* still waiting: A holds */
        fail_msg("the waiter returned before the release: %d (%s)", b.rc, rl_strerror(b.rc));

    t_rel_us = rt_now_us();
    rel_rc = rl_lock_release(la);
    if (it_acq_join(&b, 8000) != 0)
        fail_msg("the waiter did not return within 8 s");
    if (b.rc != RL_OK)
        fail_msg("the waiter got %d (%s) after %lld ms; A's release returned %s, and the "
                 "lock is %s in Redis",
                 b.rc, rl_strerror(b.rc), (long long)((b.t_return_us - b.t_call_us) / 1000),
                 rl_strerror(rel_rc),
                 rt_redis_exists(e->rc, key, kl) == 1 ? "still" : "no longer");
    latency_ms = (b.t_return_us - t_rel_us) / 1000;
    print_message("waiter without release notices got the lock %lld ms after the release "
                  "(it waited %lld ms in all)\n",
                  (long long)latency_ms, (long long)((b.t_return_us - b.t_call_us) / 1000));
    IT_RANGE(latency_ms, 0, 1000);
    IT_EQ(b.count_after, 1);
    IT_RC(b.release_rc, RL_OK);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);
    IT_RC(rel_rc, RL_OK);   /* checked last: the wake-up is this test's point */

    rl_lock_free(la);
    rl_lock_free(lb);
    rl_client_free(ca);
    rl_client_free(cb);
}

/* ---- Finding 3: limits -------------------------------------------------- */

/* Finding 3: leases and waits beyond RL_TIME_MAX_MS are refused and write
 * nothing; the longest lease is a real expiry, never "no expiry". */
static void test_times_beyond_max_are_refused_and_write_nothing(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    rl_lock *l = it_lock(c, "limits");
    char key[64];
    size_t kl = it_key(key, sizeof key, "rl:", "limits", 6, NULL);
    long long pttl;
    static const struct {
        long wait_ms, lease_ms;
        const char *what;
    } bad[] = {
        { 0, LONG_MAX, "lease LONG_MAX" },
#if LONG_MAX > RL_TIME_MAX_MS
        { 0, RL_TIME_MAX_MS + 1L, "lease RL_TIME_MAX_MS + 1" },
        { RL_TIME_MAX_MS + 1L, 1000, "wait RL_TIME_MAX_MS + 1" },
        { LONG_MAX, 1000, "wait LONG_MAX" },
#endif
    };
    size_t i;

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = rl_lock_try_acquire(l, bad[i].wait_ms, bad[i].lease_ms);
        /* Nothing written, whatever the status (checked first: the old code
         * left a lock without expiry behind). */
        if (rt_redis_exists(e->rc, key, kl) != 0)
            fail_msg("%s: %s, and the key is in Redis with PTTL %lld", bad[i].what,
                     rl_strerror(rc), rt_redis_pttl(e->rc, key, kl));
        if (rc != RL_EINVAL)
            fail_msg("%s: %d (%s), expected RL_EINVAL; rl_last_error: \"%s\"", bad[i].what,
                     rc, rl_strerror(rc), rl_last_error());
        IT_EQ(rl_lock_hold_count(l), 0);
    }

    IT_RC(rl_lock_try_acquire(l, 0, RL_TIME_MAX_MS), RL_OK);
    pttl = rt_redis_pttl(e->rc, key, kl);
    if (pttl <= 0)
        fail_msg("PTTL after a lease of RL_TIME_MAX_MS = %lld (expected > 0)", pttl);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);

    rl_lock_free(l);
    rl_client_free(c);
}

/* Finding 3: option times beyond RL_TIME_MAX_MS are refused by
 * rl_client_new, which then leaves *out untouched. */
static void test_option_times_beyond_max_are_refused(void **state)
{
    it_env *e = *state;
    rl_options o;
    rl_client *c = NULL;

#if LONG_MAX > RL_TIME_MAX_MS
    it_options(&o, e->redis->url, RL_TIME_MAX_MS + 1L, 0);
    IT_RC(rl_client_new(&c, &o), RL_EINVAL);
    assert_null(c);

    it_options(&o, e->redis->url, 0, RL_TIME_MAX_MS + 1L);
    IT_RC(rl_client_new(&c, &o), RL_EINVAL);
    assert_null(c);

    it_options(&o, e->redis->url, 0, 0);
    o.connect_timeout_ms = RL_TIME_MAX_MS + 1L;
    IT_RC(rl_client_new(&c, &o), RL_EINVAL);
    assert_null(c);
#endif
    it_options(&o, e->redis->url, LONG_MAX, 0);
    IT_RC(rl_client_new(&c, &o), RL_EINVAL);
    assert_null(c);

    /* The longest lease itself is fine. */
    it_options(&o, e->redis->url, RL_TIME_MAX_MS, 0);
    IT_RC(rl_client_new(&c, &o), RL_OK);
    assert_non_null(c);
    rl_client_free(c);
}

/* ---- Finding 4: lost reply on a release that came after the lease ------ */

struct late_release {
    rl_lock *lock;
    atomic_int stage;     /* 1: acquired (t_acq set); 2: go; 3: released */
    int acq_rc, rel_rc, count_after;
    int64_t t_acq_ms, t_send_ms;
    char rel_msg[256];
};

static void *late_release_main(void *arg)
{
    struct late_release *h = arg;

    h->acq_rc = rl_lock_try_acquire(h->lock, 0, 1000);
    h->t_acq_ms = rt_now_ms();
    atomic_store(&h->stage, 1);
    if (h->acq_rc == RL_OK) {
        RT_WAIT_UNTIL(atomic_load(&h->stage) == 2, 10000);
        h->t_send_ms = rt_now_ms();
        h->rel_rc = rl_lock_release(h->lock);
        snprintf(h->rel_msg, sizeof h->rel_msg, "%s", rl_last_error());
        h->count_after = rl_lock_hold_count(h->lock);
    }
    atomic_store(&h->stage, 3);
    return NULL;
}

/* Finding 4: the final release reached Redis only after the fixed lease
 * ran out, and its reply was lost; reading the count back finds nothing.
 * That is not "released": the lease may have run out while held. */
static void test_lost_reply_on_release_after_lease_expired_is_lost(void **state)
{
    it_env *e = *state;
    it_proxied p;
    struct late_release h;
    pthread_t th;

    it_proxied_open(&p, e, "late", 0, 3000);
    memset(&h, 0, sizeof h);
    h.lock = p.l;
    atomic_init(&h.stage, 0);
    assert_int_equal(pthread_create(&th, NULL, late_release_main, &h), 0);
    IT_WAIT(atomic_load(&h.stage) == 1, 5000);
    IT_RC(h.acq_rc, RL_OK);

    assert_int_equal(rt_redis_pause(e->redis), 0);
    rt_proxy_drop_next_reply_matching(p.proxy, "EVAL");
    atomic_store(&h.stage, 2);
    /* Redis sees the release only after the 1000 ms lease has run out. */
    wait_until_clock(h.t_acq_ms + 1300);
    assert_int_equal(rt_redis_resume(e->redis), 0);

    if (!RT_WAIT_UNTIL(atomic_load(&h.stage) == 3, 8000)) {
        pthread_detach(th);
        fail_msg("the release did not return within 8 s of resuming Redis");
    }
    pthread_join(th, NULL);
    print_message("release sent %lld ms after the acquisition: %s (\"%s\")\n",
                  (long long)(h.t_send_ms - h.t_acq_ms), rl_strerror(h.rel_rc), h.rel_msg);
    IT_RANGE(h.t_send_ms - h.t_acq_ms, 0, 900);   /* sent well before local expiry */
    IT_EQ(rt_proxy_dropped(p.proxy), 1);
    IT_RC(h.rel_rc, RL_ELOST);
    IT_EQ(h.count_after, 0);
    IT_EQ(rt_redis_exists(e->rc, p.key, p.kl), 0);
    it_proxied_close(&p);
}

/* ---- Finding 9: renew_interval_ms validation ---------------------------- */

/* The rule documented in rlock.h. */
static int renew_ok(long lease, long renew, long cmd)
{
    long margin = lease / 100 + 2;
    long m = cmd < renew ? cmd : renew;
    return renew + m <= lease - margin;
}

/* Finding 9: a renewal interval that cannot renew a hold before its lease
 * (less the drift margin) runs out is refused, and the message says which
 * option is wrong. */
static void test_renew_interval_that_cannot_keep_the_lease_is_refused(void **state)
{
    it_env *e = *state;
    static const struct {
        long lease, renew, cmd; /* cmd 0: default 2000 */
    } cases[] = {
        { 1000, 999, 0 },    /* old code accepted it */
        { 1000, 900, 0 },    /* old code accepted it */
        { 1000, 495, 0 },    /* 990 > 988: just over */
        { 1000, 494, 0 },    /* 988: just fits */
        { 1000, 333, 0 },
        { 30000, 15000, 15000 },   /* 30000 > 29698 */
        { 30000, 27699, 0 },       /* 27699 + 2000 > 29698: just over */
        { 30000, 27698, 0 },       /* just fits */
        { 30000, 15000, 0 },       /* 15000 + 2000 <= 29698: fits the documented rule */
        { 30000, 10000, 0 },
    };
    size_t i;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rl_options o;
        rl_client *c = NULL;
        long cmd = cases[i].cmd ? cases[i].cmd : 2000;
        int want = renew_ok(cases[i].lease, cases[i].renew, cmd) ? RL_OK : RL_EINVAL;
        int rc;

        it_options(&o, e->redis->url, cases[i].lease, cases[i].cmd);
        o.renew_interval_ms = cases[i].renew;
        rc = rl_client_new(&c, &o);
        if (rc != want)
            fail_msg("lease %ld, renew %ld, command timeout %ld: rl_client_new = %d (%s), "
                     "expected %s; rl_last_error: \"%s\"",
                     cases[i].lease, cases[i].renew, cmd, rc, rl_strerror(rc),
                     rl_strerror(want), rl_last_error());
        if (want == RL_EINVAL) {
            assert_null(c);
            IT_MSG_HAS("renew_interval_ms");
        }
        rl_client_free(c);
    }
}

/* ---- Finding 10: malformed or oversized replies on the hot path --------- */

static char *oversized_error(size_t *len)
{
    size_t n = 5 + 3000 + 2;
    char *s = malloc(n);

    if (s == NULL)
        fail_msg("out of memory");
    memcpy(s, "-ERR ", 5);
    memset(s + 5, 'x', 3000);
    memcpy(s + 5 + 3000, "\r\n", 2);
    *len = n;
    return s;
}

/* Acquire with a mangled reply: the acquisition was applied, and rlock must
 * find that out (read it back) rather than leave a hold nobody releases. */
static void acquire_with_mangled_reply(it_env *e, const char *name, const char *repl,
                                       size_t repl_len)
{
    it_proxied p;
    it_hash h;
    int rc;

    it_proxied_open(&p, e, name, 0, 1000);    /* 30 s lease: a ghost would stay */
    rt_proxy_mangle_next_reply_matching(p.proxy, "EVAL", repl, repl_len);
    rc = rl_lock_try_acquire(p.l, 0, RL_LEASE_WATCHDOG);
    print_message("acquire with a mangled reply: %s (%s), hold count %d\n", rl_strerror(rc),
                  rl_last_error(), rl_lock_hold_count(p.l));
    IT_EQ(rt_proxy_mangled(p.proxy), 1);
    if (rc != RL_OK) {
        /* Whatever the status, our field must not stay behind. */
        char d[256];
        if (!RT_WAIT_UNTIL(rt_redis_exists(e->rc, p.key, p.kl) == 0, 2000))
            fail_msg("acquire returned %s with hold count %d, and the lock is still in "
                     "Redis 2000 ms later (%s): a ghost lock nobody releases",
                     rl_strerror(rc), rl_lock_hold_count(p.l),
                     it_describe(e->rc, p.key, p.kl, d, sizeof d));
    }
    IT_RC(rc, RL_OK);
    IT_EQ(rl_lock_hold_count(p.l), 1);
    IT_EQ(it_hgetall(e->rc, p.key, p.kl, &h), 0);
    IT_EQ(h.fields, 1);
    assert_true(it_owner_field_ok(h.field, h.field_len));
    assert_string_equal(h.value, "1");
    IT_RC(rl_lock_release(p.l), RL_OK);
    IT_EQ(rl_lock_hold_count(p.l), 0);
    IT_EQ(rt_redis_exists(e->rc, p.key, p.kl), 0);
    it_proxied_close(&p);
}

/* Finding 10a: the acquire's reply is replaced by an oversized error. */
static void test_acquire_with_oversized_error_reply_reads_the_outcome_back(void **state)
{
    size_t n;
    char *s = oversized_error(&n);

    acquire_with_mangled_reply(*state, "mangle_big", s, n);
    free(s);
}

/* Finding 10b: the acquire's reply is replaced by garbage. */
static void test_acquire_with_garbage_reply_reads_the_outcome_back(void **state)
{
    static const char garbage[] = "%bogus\r\n";

    acquire_with_mangled_reply(*state, "mangle_junk", garbage, sizeof garbage - 1);
}

/* Finding 10c: the final release's reply is mangled (both kinds). */
static void test_release_with_mangled_reply_reads_the_outcome_back(void **state)
{
    it_env *e = *state;
    static const char garbage[] = "%bogus\r\n";
    size_t big_len;
    char *big = oversized_error(&big_len);
    const char *repl[2] = { big, garbage };
    size_t lens[2] = { big_len, sizeof garbage - 1 };
    int i;

    for (i = 0; i < 2; i++) {
        it_proxied p;
        int rc;

        it_proxied_open(&p, e, i == 0 ? "mrel_big" : "mrel_junk", 0, 1000);
        IT_RC(rl_lock_try_acquire(p.l, 0, RL_LEASE_WATCHDOG), RL_OK);
        rt_proxy_mangle_next_reply_matching(p.proxy, "EVAL", repl[i], lens[i]);
        rc = rl_lock_release(p.l);
        print_message("release with a %s reply: %s (%s), hold count %d\n",
                      i == 0 ? "oversized error" : "garbage", rl_strerror(rc),
                      rl_last_error(), rl_lock_hold_count(p.l));
        IT_EQ(rt_proxy_mangled(p.proxy), 1);
        IT_RC(rc, RL_OK);
        IT_EQ(rl_lock_hold_count(p.l), 0);
        IT_EQ(rt_redis_exists(e->rc, p.key, p.kl), 0);
        IT_EQ(rl_interrupted(), 0);
        it_proxied_close(&p);
    }
    free(big);
}

/* ---- Finding 11: statuses after a free ---------------------------------- */

struct freer {
    rl_client *c;
    rl_lock *l, *l2;
    int acq_rc;
    int li_l, li_l2, ri1, ri2, li_after;
    int rel, acq, ttl, count, locked, force;
    long ttl_out;
};

static int freer_main(void *arg)
{
    struct freer *f = arg;

    f->acq_rc = rl_lock_try_acquire(f->l, 0, RL_LEASE_WATCHDOG);
    rl_client_free(f->c);               /* by the thread that holds */
    f->li_l = rl_lock_interrupted(f->l);
    f->li_l2 = rl_lock_interrupted(f->l2);
    f->ri1 = rl_interrupted();
    f->ri2 = rl_interrupted();
    f->li_after = rl_lock_interrupted(f->l);
    f->rel = rl_lock_release(f->l);
    f->acq = rl_lock_try_acquire(f->l, 0, RL_LEASE_WATCHDOG);
    f->ttl_out = 12345;
    f->ttl = rl_lock_ttl(&f->ttl_out, f->l);
    f->count = rl_lock_hold_count(f->l);
    f->locked = rl_lock_is_locked(f->l);
    f->force = rl_lock_force_release(f->l);
    return 0;
}

/* Finding 11: a thread that held a lock through a client it then freed is
 * told once (rl_lock_interrupted 1, rl_interrupted 1 then 0), and every
 * call on the freed client's handles is refused — never RL_OK. */
static void test_statuses_after_client_free_are_consistent(void **state)
{
    it_env *e = *state;
    struct freer f;
    char key[64];
    size_t kl = it_key(key, sizeof key, "rl:", "freed", 5, NULL);

    memset(&f, 0, sizeof f);
    f.c = it_client(e, 0);
    f.l = it_lock(f.c, "freed");
    f.l2 = it_lock(f.c, "freed_other");
    it_on_thread(freer_main, &f, 15000);

    IT_RC(f.acq_rc, RL_OK);
    IT_EQ(f.li_l, 1);
    IT_EQ(f.li_l2, 0);
    IT_EQ(f.ri1, 1);
    IT_EQ(f.ri2, 0);
    IT_EQ(f.li_after, 0);
    IT_RC(f.rel, RL_ECANCELED);
    IT_RC(f.acq, RL_ECANCELED);
    IT_RC(f.ttl, RL_ECANCELED);
    IT_EQ(f.ttl_out, 12345);
    IT_RC(f.count, RL_ECANCELED);
    IT_RC(f.locked, RL_ECANCELED);
    IT_RC(f.force, RL_ECANCELED);
    /* A thread that never held through it. */
    IT_EQ(rl_lock_interrupted(f.l), 0);
    IT_EQ(rl_interrupted(), 0);
    /* The free released the hold in Redis. */
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);

    rl_lock_free(f.l);
    rl_lock_free(f.l2);
}

/* ---- Finding 12: messages ------------------------------------------------ */

/* Finding 12a: a Redis that stops answering is named as such. */
static void test_paused_redis_message_names_the_timeout(void **state)
{
    it_env *e = *state;
    rl_options o;
    rl_client *c;
    rl_lock *l;

    it_options(&o, e->redis->url, 0, 300);
    c = it_client_opts(&o);
    l = it_lock(c, "paused");
    IT_RC(rl_lock_is_locked(l), 0);     /* a working connection in the pool */

    assert_int_equal(rt_redis_pause(e->redis), 0);
    IT_RC(rl_lock_is_locked(l), RL_ECONN);
    print_message("is_locked on a paused Redis: \"%s\"\n", rl_last_error());
    IT_MSG_HAS("no reply within 300 ms");
    IT_MSG_HAS_NOT("Resource temporarily unavailable");

    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_ECONN);
    print_message("one-shot acquire on a paused Redis: \"%s\"\n", rl_last_error());
    IT_MSG_HAS("no reply within 300 ms");
    IT_MSG_HAS_NOT("Resource temporarily unavailable");
    IT_EQ(rl_lock_hold_count(l), 0);
    assert_int_equal(rt_redis_resume(e->redis), 0);

    rl_lock_free(l);
    rl_client_free(c);
}

/* A TCP listener that answers every connection like an HTTP server. */
struct http_peer {
    int lfd, port;
    atomic_int stop;
    atomic_int served;
    pthread_t th;
};

static void *http_peer_main(void *arg)
{
    static const char resp[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
    struct http_peer *h = arg;
    char buf[512];

    while (!atomic_load(&h->stop)) {
        struct pollfd pfd = { h->lfd, POLLIN, 0 };
        int64_t until;
        int fd;

        if (poll(&pfd, 1, 50) <= 0)
            continue;
        fd = accept(h->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        /* Read what the client says first (an HTTP server would), so that
         * closing does not reset the connection under the answer. */
        pfd.fd = fd;
        pfd.events = POLLIN;
        if (poll(&pfd, 1, 500) > 0)
            (void)recv(fd, buf, sizeof buf, 0);
        (void)send(fd, resp, sizeof resp - 1, MSG_NOSIGNAL);
        shutdown(fd, SHUT_WR);
        until = rt_now_ms() + 1000;
        while (rt_now_ms() < until) {
            ssize_t n;
            pfd.revents = 0;
            if (poll(&pfd, 1, 50) <= 0)
                continue;
            n = recv(fd, buf, sizeof buf, 0);
            if (n <= 0)
                break;
        }
        close(fd);
        atomic_fetch_add(&h->served, 1);
    }
    return NULL;
}

static void http_peer_start(struct http_peer *h)
{
    memset(h, 0, sizeof *h);
    atomic_init(&h->stop, 0);
    atomic_init(&h->served, 0);
    h->lfd = rt_listen_port(&h->port);
    if (h->lfd < 0)
        fail_msg("cannot listen on a port of RL_TEST_PORTS");
    assert_int_equal(pthread_create(&h->th, NULL, http_peer_main, h), 0);
}

static void http_peer_stop(struct http_peer *h)
{
    atomic_store(&h->stop, 1);
    pthread_join(h->th, NULL);
    close(h->lfd);
}

/* Finding 12b: a peer that is not Redis is called that, as RL_EPROTO. */
static void test_non_redis_peer_is_a_protocol_error(void **state)
{
    struct http_peer h;
    rl_options o;
    rl_client *c = NULL;
    char url[64];
    int rc;

    (void)state;
    http_peer_start(&h);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", h.port);
    it_options(&o, url, 0, 1000);
    o.connect_timeout_ms = 1000;
    rc = rl_client_new(&c, &o);
    print_message("rl_client_new against an HTTP peer: %s: \"%s\"\n", rl_strerror(rc),
                  rl_last_error());
    http_peer_stop(&h);
    assert_true(atomic_load(&h.served) >= 1);
    IT_RC(rc, RL_EPROTO);
    assert_null(c);
    IT_MSG_HAS("does not speak the Redis protocol");
}

/* Finding 12c: a one-shot try against a Redis that is gone says the
 * connection was refused; nothing was sent, so no "outcome unknown", and
 * nothing is flagged. */
static void test_killed_redis_one_shot_says_refused(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    rl_lock *l = it_lock(c, "killed");
    char key[64];
    size_t kl = it_key(key, sizeof key, "rl:", "killed", 6, NULL);

    IT_RC(rl_lock_is_locked(l), 0);     /* a connection in the pool */
    assert_int_equal(rt_redis_kill(e->redis), 0);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_ECONN);
    print_message("one-shot acquire on a killed Redis: \"%s\"\n", rl_last_error());
    IT_MSG_HAS("refused");
    IT_MSG_HAS_NOT("outcome unknown");
    IT_EQ(rl_lock_hold_count(l), 0);
    IT_EQ(rl_interrupted(), 0);

    assert_int_equal(rt_redis_restart(e->redis), 0);
    redisFree(e->rc);
    e->rc = rt_redis_connect(e->redis);
    assert_non_null(e->rc);
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 1);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(rt_redis_exists(e->rc, key, kl), 0);

    rl_lock_free(l);
    rl_client_free(c);
}

/* The number of owner records (keys "rl:owner:*") on the server. */
static long owner_records(it_env *e)
{
    redisReply *r = redisCommand(e->rc, "KEYS rl:owner:*");
    long n;

    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    n = (long)r->elements;
    freeReplyObject(r);
    return n;
}

/* Freeing a client deletes its owner record even when every pooled
 * connection died meanwhile (CLIENT KILL here; a server restart is the
 * same to the client): it opens a new one rather than leave the record to
 * expire three leases later. */
static void test_free_after_pool_died_deletes_owner_record(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 1000);
    rl_lock *l = it_lock(c, "ownerless");
    redisReply *r;

    IT_RC(rl_lock_acquire(l), RL_OK);
    IT_WAIT(owner_records(e) == 1, 5000);
    IT_RC(rl_lock_release(l), RL_OK);
    r = redisCommand(e->rc, "CLIENT KILL TYPE normal");
    assert_non_null(r);
    assert_true(r->type == REDIS_REPLY_INTEGER && r->integer >= 1);
    freeReplyObject(r);
    rl_lock_free(l);
    rl_client_free(c);
    IT_EQ(owner_records(e), 0);
}

/* Finding 12d: an outage is reported at a bounded rate, the loss by name,
 * and the recovery once. */
static void test_outage_logs_at_a_bounded_rate(void **state)
{
    it_env *e = *state;
    logcap lc;
    rl_options o;
    rl_client *c;
    rl_lock *held, *after;
    long warn0, seq0, logged, seq_restart;
    int64_t t_kill;
    int rc;

    logcap_init(&lc);
    it_options(&o, e->redis->url, 600, 0);   /* renew every 200 ms */
    o.log = logcap_cb;
    o.payload = &lc;
    c = it_client_opts(&o);
    held = it_lock(c, "lr_held");
    after = it_lock(c, "lr_after");
    IT_RC(rl_lock_try_acquire(held, 0, RL_LEASE_WATCHDOG), RL_OK);

    assert_int_equal(rt_redis_kill(e->redis), 0);
    t_kill = rt_now_ms();
    warn0 = logcap_warn_err(&lc);
    seq0 = logcap_seq(&lc);
    wait_until_clock(t_kill + 2000);
    logged = logcap_warn_err(&lc) - warn0;
    print_message("WARN+ERROR lines in the 2000 ms after the kill: %ld\n", logged);
    if (logged > 4 || !logcap_find(&lc, seq0, RL_LOG_ERROR, RL_LOG_INFO, "lr_held", "lost")) {
        logcap_dump(&lc, seq0);
        if (logged > 4)
            fail_msg("%ld WARN+ERROR lines in 2000 ms of outage (at most 4 expected)", logged);
        fail_msg("no line names the lost lock \"lr_held\" and says \"lost\"");
    }
    IT_EQ(rl_lock_interrupted(held), 1);

    seq_restart = logcap_seq(&lc);
    assert_int_equal(rt_redis_restart(e->redis), 0);
    redisFree(e->rc);
    e->rc = rt_redis_connect(e->redis);
    assert_non_null(e->rc);
    /* Something to renew, so that a round can succeed. */
    rc = rl_lock_try_acquire(after, 3000, RL_LEASE_WATCHDOG);
    IT_RC(rc, RL_OK);
    if (!RT_WAIT_UNTIL(logcap_find(&lc, seq_restart, RL_LOG_INFO, RL_LOG_INFO, "again", NULL),
                       3000)) {
        logcap_dump(&lc, seq_restart);
        fail_msg("no INFO line saying renewals work \"again\" within 3000 ms");
    }
    IT_RC(rl_lock_release(after), RL_OK);
    IT_RC(rl_lock_release(held), RL_ELOST);
    IT_EQ(rl_interrupted(), 0);

    rl_lock_free(held);
    rl_lock_free(after);
    rl_client_free(c);
    logcap_destroy(&lc);
}

/* Finding 12e: options not filled by rl_options_init are refused, with a
 * message that says what to do. */
static void test_options_without_version_are_refused(void **state)
{
    it_env *e = *state;
    rl_options o;
    rl_client *c = NULL;

    memset(&o, 0, sizeof o);
    o.url = e->redis->url;
    IT_RC(rl_client_new(&c, &o), RL_EINVAL);
    assert_null(c);
    print_message("version 0: \"%s\"\n", rl_last_error());
    IT_MSG_HAS("rl_options_init");
}

/* Finding 12f: a wait that runs out while Redis is unreachable says so
 * (RL_ECONN), not that the lock was held (RL_ETIMEDOUT), and it does wait. */
static void test_wait_on_killed_redis_ends_with_econn_at_its_deadline(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    rl_lock *l = it_lock(c, "waitdown");
    int64_t t0, took;

    IT_RC(rl_lock_is_locked(l), 0);
    assert_int_equal(rt_redis_kill(e->redis), 0);
    t0 = rt_now_ms();
    IT_RC(rl_lock_try_acquire(l, 500, RL_LEASE_WATCHDOG), RL_ECONN);
    took = rt_now_ms() - t0;
    print_message("wait of 500 ms on a killed Redis returned after %lld ms: \"%s\"\n",
                  (long long)took, rl_last_error());
    IT_RANGE(took, 450, 2500);
    IT_EQ(rl_lock_hold_count(l), 0);
    IT_EQ(rl_interrupted(), 0);

    rl_lock_free(l);
    rl_client_free(c);
}

/* ---- Finding 13: options ABI -------------------------------------------- */

/* Finding 13: rl_options_init writes the layout of the version it is given
 * and not one byte past it; unknown versions write nothing. */
static void test_options_init_writes_only_its_layout(void **state)
{
    enum { EXTRA = 64 };
    union {
        rl_options o;
        unsigned char b[sizeof(rl_options) + EXTRA];
    } buf;
    size_t i;
    unsigned int bad[2] = { 0, RL_OPTIONS_VERSION + 1 };
    int k;

    (void)state;
    memset(&buf, 0xAB, sizeof buf);
    IT_RC(rl_options_init(&buf.o, RL_OPTIONS_VERSION), RL_OK);
    IT_EQ(buf.o.version, RL_OPTIONS_VERSION);
    for (i = sizeof(rl_options); i < sizeof buf.b; i++) {
        if (buf.b[i] != 0xAB)
            fail_msg("rl_options_init wrote byte %zu past the struct (0x%02x)",
                     i - sizeof(rl_options), buf.b[i]);
    }

    for (k = 0; k < 2; k++) {
        memset(&buf, 0xAB, sizeof buf);
        IT_RC(rl_options_init(&buf.o, bad[k]), RL_EINVAL);
        for (i = 0; i < sizeof buf.b; i++) {
            if (buf.b[i] != 0xAB)
                fail_msg("rl_options_init(version %u) wrote byte %zu (0x%02x)", bad[k], i,
                         buf.b[i]);
        }
    }
    IT_RC(rl_options_init(NULL, RL_OPTIONS_VERSION), RL_EINVAL);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, it_setup, it_teardown)
    const struct CMUnitTest tests[] = {
        T(test_acl_without_channels_is_logged_at_error),
        T(test_acl_without_channels_release_reports_the_change),
        T(test_acl_without_channels_force_release_reports_the_change),
        T(test_acl_without_channels_waiter_wakes_soon_after_release),
        T(test_times_beyond_max_are_refused_and_write_nothing),
        T(test_option_times_beyond_max_are_refused),
        T(test_lost_reply_on_release_after_lease_expired_is_lost),
        T(test_renew_interval_that_cannot_keep_the_lease_is_refused),
        T(test_acquire_with_oversized_error_reply_reads_the_outcome_back),
        T(test_acquire_with_garbage_reply_reads_the_outcome_back),
        T(test_release_with_mangled_reply_reads_the_outcome_back),
        T(test_statuses_after_client_free_are_consistent),
        T(test_paused_redis_message_names_the_timeout),
        T(test_non_redis_peer_is_a_protocol_error),
        T(test_killed_redis_one_shot_says_refused),
        T(test_free_after_pool_died_deletes_owner_record),
        T(test_outage_logs_at_a_bounded_rate),
        T(test_options_without_version_are_refused),
        T(test_wait_on_killed_redis_ends_with_econn_at_its_deadline),
        T(test_options_init_writes_only_its_layout),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
