/*
 * Shared pieces of rlock's integration tests: a cmocka fixture with a fresh
 * redis-server per test, status assertions that print names and details,
 * readers of rlock's Redis layout, and a thread that acquires a lock.
 *
 * cmocka assertions are used from the test's main thread only; worker
 * threads and child processes record results that the main thread checks.
 */
#ifndef IT_COMMON_H
#define IT_COMMON_H

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "rlock.h"
#include "redis_server.h"

/* Fixture: one redis-server and one inspection context per test. */
typedef struct it_env {
    rt_redis *redis;
    redisContext *rc; /* main thread only */
} it_env;

/** cmocka setup: start a server (fails the test when it cannot). */
int it_setup(void **state);
/** cmocka setup for a server with --requirepass IT_PASSWORD. */
int it_setup_auth(void **state);
/** cmocka setup for a cluster-mode server (its nodes.conf in its own
 * directory: the server runs there) that owns every slot, once the cluster
 * says it is ok; a plain redis:// client uses it as one Cluster node. */
int it_setup_cluster_node(void **state);
/** cmocka teardown: stop the server. */
int it_teardown(void **state);

#define IT_PASSWORD "p@ss:w/rd"
#define IT_PASSWORD_ENC "p%40ss%3Aw%2Frd"

/** Options for `url` with optional lease (0: default) and timeouts (0: default). */
void it_options(rl_options *o, const char *url, long lease_ms, long command_timeout_ms);

/** A client on env's server, failing the test when it cannot be made. */
rl_client *it_client(it_env *e, long lease_ms);

/** The client's rl_client_stats (this header's layout), failing the test when
 * they cannot be read. */
rl_stats it_stats(rl_client *c);
rl_client *it_client_opts(const rl_options *o);

/** A lock handle, failing the test when it cannot be made. */
rl_lock *it_lock(rl_client *c, const char *name);

/* Assert that a status-returning expression gives `want`. */
#define IT_RC(expr, want)                                                         \
    do {                                                                          \
        int it__got = (expr);                                                     \
        int it__want = (want);                                                    \
        if (it__got != it__want)                                                  \
            fail_msg("%s = %d (%s), expected %d (%s); rl_last_error: \"%s\"",     \
                     #expr, it__got, rl_strerror(it__got), it__want,              \
                     rl_strerror(it__want), rl_last_error());                     \
    } while (0)

/* Assert an integer expression's exact value, printing both signed. */
#define IT_EQ(expr, want)                                                         \
    do {                                                                          \
        long long it__got = (long long)(expr);                                    \
        long long it__want = (long long)(want);                                   \
        if (it__got != it__want)                                                  \
            fail_msg("%s = %lld, expected %lld", #expr, it__got, it__want);       \
    } while (0)

/* Assert lo <= expr <= hi. */
#define IT_RANGE(expr, lo, hi)                                                    \
    do {                                                                          \
        long long it__got = (long long)(expr);                                    \
        if (it__got < (long long)(lo) || it__got > (long long)(hi))               \
            fail_msg("%s = %lld, expected in [%lld, %lld]", #expr, it__got,       \
                     (long long)(lo), (long long)(hi));                           \
    } while (0)

/* Assert that a condition becomes true within timeout_ms. */
#define IT_WAIT(cond, timeout_ms)                                                 \
    do {                                                                          \
        if (!RT_WAIT_UNTIL(cond, timeout_ms))                                     \
            fail_msg("still false after %ld ms: %s", (long)(timeout_ms), #cond);  \
    } while (0)

/*
 * rlock's layout in Redis.
 */

/** Build "<prefix>{<name>}<suffix>" (binary-safe) into buf; returns its length.
 * A name starting with '}' or a backslash gets a backslash in front (src/holds.c). */
size_t it_key(char *buf, size_t cap, const char *prefix, const void *name, size_t name_len,
              const char *suffix);

/** What HGETALL found at a key. */
typedef struct it_hash {
    int type;            /* REDIS_REPLY_ARRAY on success */
    size_t fields;       /* number of fields */
    char field[128];     /* first field (NUL-terminated, truncated) */
    size_t field_len;    /* its real length */
    char value[32];      /* its hold count: the value up to the first space */
    char raw[48];        /* its value as stored: "<count>" or "<count> <since_ms>" */
    long long since_ms;  /* the value's "held since" (unix ms); -1: none */
} it_hash;

/** HGETALL key; 0 on success (also for an absent key: fields 0), -1 on error. */
int it_hgetall(redisContext *c, const void *key, size_t key_len, it_hash *out);

/** Whether a field looks like "<36-char uuid>:<decimal thread id>". */
int it_owner_field_ok(const char *field, size_t len);

/** Type of a key as Redis names it ("hash", "string", "none"), into buf. */
void it_type(redisContext *c, const void *key, size_t key_len, char *buf, size_t cap);

/** A one-line description of the hash at key, for failure messages. */
const char *it_describe(redisContext *c, const void *key, size_t key_len, char *buf,
                        size_t cap);

/*
 * A thread that takes a lock: rl_lock_try_acquire(lock, wait_ms, lease_ms),
 * records the outcome, and (when `hold` is set and it got the lock) keeps
 * it until it_acq_let_go(), then releases it once.
 */
typedef struct it_acq {
    /* set before it_acq_start() */
    rl_lock *lock;
    long wait_ms;
    long lease_ms;
    int hold;
    atomic_int *order;   /* optional: shared counter; the acquisition rank goes to rank */
    atomic_int *inside;  /* optional: shared count of holders, to detect overlap */
    atomic_int *overlap; /* optional: set when two holders overlapped */

    /* results */
    atomic_int state;    /* 0 created, 1 calling, 2 returned, 3 finished */
    int rc;
    int count_after;     /* rl_lock_hold_count right after a successful acquire */
    int release_rc;
    int rank;            /* 1-based acquisition order, when order != NULL */
    int64_t t_call_us, t_return_us;
    atomic_int go;
    pthread_t thread;
    int started;
} it_acq;

/** Start the thread (fails the test when it cannot). */
void it_acq_start(it_acq *a);
/** Clear *a, and start it on lock with the watchdog's lease, waiting up to
 * wait_ms; hold: keep the lock until it_acq_let_go(). */
void it_acq_begin(it_acq *a, rl_lock *lock, long wait_ms, int hold);
/** Tell a holding thread to release. */
void it_acq_let_go(it_acq *a);
/** Wait up to timeout_ms for the thread to finish, then join it; 0 or -1 (not joined). */
int it_acq_join(it_acq *a, long timeout_ms);

/**
 * Run fn(arg) on a new thread (a fresh rlock thread identity), wait up to
 * timeout_ms for it and join it. Returns fn's result; fails the test when
 * the thread does not finish in time.
 */
int it_on_thread(int (*fn)(void *arg), void *arg, long timeout_ms);

/*
 * A client that reaches the test's redis-server through the fault proxy
 * (tests/common/proxy.h), with one lock handle.
 */
typedef struct it_proxied {
    struct rt_proxy *proxy;
    rl_client *c;
    rl_lock *l;
    char key[64];   /* the lock's key, "rl:{<name>}" */
    size_t kl;
} it_proxied;

/** Start a proxy and a client through it (lease_ms, command and connect
 * timeouts as given; 0: defaults), and a handle on `name`. */
void it_proxied_open(it_proxied *p, it_env *e, const char *name, long lease_ms,
                     long timeout_ms);
void it_proxied_close(it_proxied *p);

#endif /* IT_COMMON_H */
