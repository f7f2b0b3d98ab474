/*
 * Scenario 8, server-side refusals: Redis says no, and rlock must say so
 * clearly and leave everything as it was.
 *
 *   wrong or missing password            RL_EAUTH; the password never in the detail
 *   ACL user without EVALSHA             RL_EREDIS "NOPERM"; no key written, not
 *                                        retried as if it were an outage
 *   ACL user without SCRIPT              rl_client_new fails with RL_EREDIS
 *   ACL user restricted to other keys    RL_EREDIS "NOPERM"
 *   ACL user without CLIENT              works (the connection id is optional)
 *   maxmemory reached, noeviction        new locks and reentries: RL_EREDIS "OOM",
 *                                        counts unchanged in Redis and locally;
 *                                        renewals (PEXPIRE) and final releases
 *                                        still work, so no hold is lost
 *   a key of the wrong type              RL_EREDIS "WRONGTYPE"; the key untouched by
 *                                        acquire, release and force-release; a hold
 *                                        whose key is replaced is flagged
 *   a read-only replica                  RL_EREDIS "READONLY"
 */
#include <stdio.h>
#include <string.h>

#include "fault.h"
#include "scenarios.h"

#define RF_PASS "s3cret-Pw"
#define RF_LEASE 600

static int checks, failed, flags;

static void check(int ok, const char *what, int rc)
{
    checks++;
    if (!ok) {
        failed++;
        fx_note("check failed: %s (status %s, detail \"%s\")", what, rl_strerror(rc),
                rl_last_error());
    }
}

static int client_at(rl_client **out, const char *userpass, int port)
{
    rl_options o;
    char url[256];

    rl_options_init(&o, RL_OPTIONS_VERSION);
    snprintf(url, sizeof url, "redis://%s%s127.0.0.1:%d", userpass ? userpass : "",
             userpass ? "@" : "", port);
    o.url = url;
    o.lease_ms = RF_LEASE;
    o.command_timeout_ms = 1000;
    return rl_client_new(out, &o);
}

static int has(const char *detail, const char *what)
{
    return strstr(detail, what) != NULL;
}

/* A string value of a key, for "untouched" checks. */
static int value_is(redisContext *c, const char *key, const char *want)
{
    redisReply *r = redisCommand(c, "GET %s", key);
    int ok = r && r->type == REDIS_REPLY_STRING && strcmp(r->str, want) == 0;

    if (r)
        freeReplyObject(r);
    return ok;
}

/* acquire with a wait on a refused lock: must fail at once, not ride it out */
static void refused_acquire(rl_lock *lock, const char *what, const char *detail, redisContext *lc,
                            const char *key)
{
    char label[160];
    int64_t t0 = rt_now_ms();
    int rc = rl_lock_try_acquire(lock, 3000, RL_LEASE_WATCHDOG);
    int64_t took = rt_now_ms() - t0;

    snprintf(label, sizeof label, "%s: acquire is RL_EREDIS with %s", what, detail);
    check(rc == RL_EREDIS && has(rl_last_error(), detail), label, rc);
    snprintf(label, sizeof label, "%s: refused at once, not waited out (%lld ms)", what,
             (long long)took);
    check(took < 1000, label, rc);
    snprintf(label, sizeof label, "%s: nothing held", what);
    check(rl_lock_hold_count(lock) == 0 && rl_lock_release(lock) == RL_ENOTOWNER, label, rc);
    if (key) {
        snprintf(label, sizeof label, "%s: no key written", what);
        check(rt_redis_exists(lc, key, strlen(key)) == 0, label, rc);
    }
}

static void acl_checks(fx_env *env)
{
    rl_client *c;
    rl_lock *lock;
    int rc;

    fx_cmd(env->lc, "ACL SETUSER noeval on >pw ~* &* +@all -evalsha -eval");
    fx_cmd(env->lc, "ACL SETUSER noscript on >pw ~* &* +@all -script");
    fx_cmd(env->lc, "ACL SETUSER otherkeys on >pw ~other:* &* +@all");
    fx_cmd(env->lc, "ACL SETUSER noclient on >pw ~* &* +@all -client");

    rc = client_at(&c, "noeval:pw", env->lock->port);
    check(rc == RL_OK, "ACL without EVALSHA: the client connects", rc);
    if (rc == RL_OK) {
        rl_lock_new(&lock, c, "acl1");
        refused_acquire(lock, "ACL without EVALSHA", "NOPERM", env->lc, "rl:{acl1}");
        rl_lock_free(lock);
        rl_client_free(c);
    }
    rc = client_at(&c, "noeval:wrong", env->lock->port);
    check(rc == RL_EAUTH, "ACL user, wrong password: RL_EAUTH", rc);
    if (rc == RL_OK)
        rl_client_free(c);

    rc = client_at(&c, "noscript:pw", env->lock->port);
    check(rc == RL_EREDIS && has(rl_last_error(), "NOPERM"),
          "ACL without SCRIPT: rl_client_new is RL_EREDIS with NOPERM", rc);
    if (rc == RL_OK)
        rl_client_free(c);

    rc = client_at(&c, "otherkeys:pw", env->lock->port);
    check(rc == RL_OK, "ACL on other keys: the client connects", rc);
    if (rc == RL_OK) {
        rl_lock_new(&lock, c, "acl2");
        refused_acquire(lock, "ACL on other keys", "NOPERM", env->lc, "rl:{acl2}");
        rl_lock_free(lock);
        rl_client_free(c);
    }

    rc = client_at(&c, "noclient:pw", env->lock->port);
    check(rc == RL_OK, "ACL without CLIENT: the client connects", rc);
    if (rc == RL_OK) {
        rl_lock_new(&lock, c, "acl3");
        rc = rl_lock_try_acquire(lock, 0, RL_LEASE_WATCHDOG);
        check(rc == RL_OK, "ACL without CLIENT: acquire works", rc);
        rc = rl_lock_release(lock);
        check(rc == RL_OK, "ACL without CLIENT: release works", rc);
        rl_lock_free(lock);
        rl_client_free(c);
    }
}

static void maxmemory_checks(fx_env *env, rl_client *c)
{
    rl_lock *x, *y, *z;
    long long v = -1;
    int rc;

    rl_lock_new(&x, c, "mmx");
    rl_lock_new(&y, c, "mmy");
    rl_lock_new(&z, c, "mmz");
    check(rl_lock_try_acquire(x, 0, RL_LEASE_WATCHDOG) == RL_OK, "maxmemory: setup x", 0);
    check(rl_lock_try_acquire(y, 0, RL_LEASE_WATCHDOG) == RL_OK &&
          rl_lock_try_acquire(y, 0, RL_LEASE_WATCHDOG) == RL_OK, "maxmemory: setup y (twice)", 0);
    fx_cmd(env->lc, "CONFIG SET maxmemory-policy noeviction");
    fx_cmd(env->lc, "CONFIG SET maxmemory 1");

    refused_acquire(z, "maxmemory", "OOM", env->lc, "rl:{mmz}");
    rc = rl_lock_try_acquire(x, 0, RL_LEASE_WATCHDOG);
    check(rc == RL_EREDIS && has(rl_last_error(), "OOM"), "maxmemory: reentry is RL_EREDIS OOM", rc);
    check(rl_lock_hold_count(x) == 1 && fx_lock_fields(env->lc, "mmx", NULL, 0, &v) == 1 && v == 1,
          "maxmemory: the refused reentry changed no count", rc);
    rc = rl_lock_release(y);
    check(rc == RL_EREDIS && has(rl_last_error(), "OOM"),
          "maxmemory: a release that rewrites the count is RL_EREDIS OOM", rc);
    check(rl_lock_hold_count(y) == 2 && fx_lock_fields(env->lc, "mmy", NULL, 0, &v) == 1 && v == 2,
          "maxmemory: the refused release changed no count", rc);
    /* Renewal is PEXPIRE, which Redis allows when out of memory: over three
     * leases the holds must not be flagged. This wait is the test itself. */
    check(!RT_WAIT_UNTIL(rl_lock_interrupted(x) != 0 || rl_lock_interrupted(y) != 0,
                         3 * RF_LEASE),
          "maxmemory: renewals keep the holds (no flag over three leases)", 0);
    rc = rl_lock_release(x);
    check(rc == RL_OK && rt_redis_exists(env->lc, "rl:{mmx}", 8) == 0,
          "maxmemory: the final release (a delete) works", rc);
    fx_cmd(env->lc, "CONFIG SET maxmemory 0");
    rc = rl_lock_release(y);
    check(rc == RL_OK && rl_lock_release(y) == RL_OK && rt_redis_exists(env->lc, "rl:{mmy}", 8) == 0,
          "maxmemory lifted: releases work again", rc);
    rc = rl_lock_try_acquire(z, 0, RL_LEASE_WATCHDOG);
    check(rc == RL_OK && rl_lock_release(z) == RL_OK, "maxmemory lifted: acquire works again", rc);
    rl_lock_free(x);
    rl_lock_free(y);
    rl_lock_free(z);
}

static void wrongtype_checks(fx_env *env, rl_client *c)
{
    rl_lock *s, *l, *h;
    int rc;

    fx_cmd(env->lc, "SET rl:{wts} not-a-lock");
    fx_cmd(env->lc, "RPUSH rl:{wtl} not-a-lock");
    rl_lock_new(&s, c, "wts");
    rl_lock_new(&l, c, "wtl");
    rl_lock_new(&h, c, "wth");

    refused_acquire(s, "wrong type (string)", "WRONGTYPE", NULL, NULL);
    refused_acquire(l, "wrong type (list)", "WRONGTYPE", NULL, NULL);
    rc = rl_lock_force_release(s);
    check(rc == RL_EREDIS, "wrong type: force-release is RL_EREDIS", rc);
    check(value_is(env->lc, "rl:{wts}", "not-a-lock") &&
          rt_redis_pttl(env->lc, "rl:{wts}", 8) == -1 && fx_cmd(env->lc, "LLEN rl:{wtl}") == 1,
          "wrong type: the keys are untouched", rc);
    check(rl_lock_is_locked(s) == 1, "wrong type: is_locked reports the key", 0);

    /* A held lock whose key is replaced under it: the watchdog flags it, the
     * release reports the loss and leaves the stranger's key alone. */
    rc = rl_lock_try_acquire(h, 0, RL_LEASE_WATCHDOG);
    check(rc == RL_OK, "wrong type: setup wth", rc);
    fx_cmd(env->lc, "DEL rl:{wth}");
    fx_cmd(env->lc, "SET rl:{wth} stranger");
    rc = RT_WAIT_UNTIL(rl_lock_interrupted(h) == 1, RF_LEASE + 1000);
    flags += rc;
    check(rc, "wrong type: a hold whose key was replaced is flagged", 0);
    rc = rl_lock_release(h);
    check(rc == RL_ELOST || rc == RL_ENOTOWNER, "wrong type: its release reports the loss", rc);
    check(value_is(env->lc, "rl:{wth}", "stranger"), "wrong type: the stranger's key survives", rc);
    rl_lock_free(s);
    rl_lock_free(l);
    rl_lock_free(h);
}

static void replica_checks(fx_env *env)
{
    rt_redis *rep = rt_redis_start(NULL);
    redisContext *rc3;
    rl_client *c;
    rl_lock *lock;
    int rc;

    if (!rep) {
        check(0, "read-only replica: start a third server", 0);
        return;
    }
    rc3 = fx_connect(rep->port, 5000);
    fx_cmd(rc3, "REPLICAOF 127.0.0.1 %d", env->ref->port);
    rc = client_at(&c, NULL, rep->port);
    check(rc == RL_OK, "read-only replica: the client connects", rc);
    if (rc == RL_OK) {
        rl_lock_new(&lock, c, "ro");
        refused_acquire(lock, "read-only replica", "READONLY", rc3, "rl:{ro}");
        rl_lock_free(lock);
        rl_client_free(c);
    }
    redisFree(rc3);
    rt_redis_stop(rep);
}

int sc_refusals(void)
{
    char up[128];
    rl_client *c;
    rl_lock *lock;
    fx_env env;
    int rc;

    if (fx_env_start(&env, "--requirepass " RF_PASS) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_redis");

    rc = client_at(&c, ":Wr0ngPassw0rd", env.lock->port);
    check(rc == RL_EAUTH, "wrong password: RL_EAUTH", rc);
    check(!has(rl_last_error(), "Wr0ngPassw0rd"), "wrong password: not quoted in the detail", rc);
    if (rc == RL_OK)
        rl_client_free(c);
    rc = client_at(&c, NULL, env.lock->port);
    check(rc == RL_EAUTH, "no password: RL_EAUTH", rc);
    if (rc == RL_OK)
        rl_client_free(c);

    acl_checks(&env);

    snprintf(up, sizeof up, ":%s", RF_PASS);
    rc = client_at(&c, up, env.lock->port);
    check(rc == RL_OK, "right password: the client connects", rc);
    if (rc != RL_OK)
        return fx_verdict(fx_scenario, 0, "checks=%d failed=%d", checks, failed);
    rl_lock_new(&lock, c, "ok");
    rc = rl_lock_try_acquire(lock, 0, RL_LEASE_WATCHDOG);
    check(rc == RL_OK && rl_lock_release(lock) == RL_OK, "right password: lock and unlock", rc);
    rl_lock_free(lock);

    maxmemory_checks(&env, c);
    wrongtype_checks(&env, c);
    rl_client_free(c);
    replica_checks(&env);

    rc = fx_verdict(fx_scenario, failed == 0,
                    "checks=%d failed=%d sections=0 violations=0 flags=%d", checks, failed,
                    flags);
    fx_env_stop(&env);
    return rc;
}
