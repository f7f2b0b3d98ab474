/*
 * Shared pieces of the deterministic race tests (test_races.c and
 * test_review.c): the hook dispatcher that opens a race window on purpose,
 * thread helpers that never leave a test blocked, a verdict that holds the
 * first failure until the threads are let go, and a few waits.
 *
 * Both programs run against rlock_hooked: the library's own sources
 * compiled with RL_TEST_HOOKS, which call rl__test_hook at named points
 * (RL__HOOK in src/common.h). A test arms a handler for one point, once;
 * the handler runs on the library's thread and holds it inside the race
 * window (only ever with a bounded wait) while the test drives the other
 * side of the race.
 *
 * Rules, as in it_common.h: cmocka assertions are used from the test's
 * main thread only (fail_msg in spawn() and xcalloc() included); other
 * threads and child processes record what they saw, and the main thread
 * checks once they have finished. Nothing sleeps to synchronise: every wait
 * is a condition with a deadline, or a point in time that the scenario
 * itself calls for (wait_until_ms).
 */
#ifndef RACES_COMMON_H
#define RACES_COMMON_H

#include <stdio.h>

#include "it_common.h"

/* ThreadSanitizer cannot follow a fork() child of a multi-threaded process
 * that starts threads of its own (see tests/integration/test_fork.c). */
#if defined(__SANITIZE_THREAD__)
#define RACES_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RACES_UNDER_TSAN 1
#endif
#endif
#ifndef RACES_UNDER_TSAN
#define RACES_UNDER_TSAN 0
#endif

/* First thing in a test that forks: under ThreadSanitizer, skip it (and
 * return from the test). */
#define RACES_SKIP_FORK_UNDER_TSAN()                                              \
    do {                                                                          \
        if (RACES_UNDER_TSAN) {                                                   \
            print_message("fork() tests are not supported by ThreadSanitizer: "   \
                          "skipped\n");                                           \
            skip();                                                               \
            return;                                                               \
        }                                                                         \
    } while (0)

/*
 * Hooks.
 */

/* A handler for one hook point: fn(arg) runs on the library's thread that
 * reached `point`. */
typedef struct hook_arm {
    const char *point;
    void (*fn)(void *arg);
    void *arg;
} hook_arm;

/** Install the dispatcher as rl__test_hook: once, in main(), before any
 * thread exists (the library reads the pointer without synchronisation). */
void races_hooks_install(void);

/** Arm `a` (filled in here) as the one handler; it fires once, on whichever
 * thread reaches `point` first. Replaces a handler armed before. */
void arm(hook_arm *a, const char *point, void (*fn)(void *), void *arg);
/** Arm a second handler, at another point, next to the one arm() set. */
void arm_second(hook_arm *a, const char *point, void (*fn)(void *), void *arg);
/** Drop the armed handlers that have not fired. */
void disarm(void);

/* Calls of any "watchdog.*" point, and renewal rounds begun
 * ("watchdog.before_renew"), by any client's watchdog. */
extern atomic_long g_wd_hooks, g_wd_rounds;
/* Set on a thread that ran a "watchdog.*" hook point: a watchdog thread. */
extern _Thread_local int tl_watchdog_thread;

/** cmocka setup and teardown: it_setup()/it_teardown(), with no handler
 * armed before or after. */
int races_setup(void **state);
int races_teardown(void **state);

/*
 * Threads and memory.
 */

/** calloc(1, size), failing the test when it cannot. */
void *xcalloc(size_t size);

/** Start fn(arg) on a new thread, failing the test when it cannot. */
pthread_t spawn(void *(*fn)(void *), void *arg);

/** Join a thread that sets *st to `last` as its last step, if it does
 * within timeout_ms. 0, or -1: still running, detached and left alone. */
int join_at(pthread_t th, atomic_int *st, int last, long timeout_ms);

/** Wait for a point in time (CLOCK_MONOTONIC, ms): a deadline that the
 * scenario itself calls for, never a stand-in for a condition. Usable in a
 * fork() child (no cmocka). */
void wait_until_ms(int64_t at_ms);

/*
 * A thread that makes one call and records it. Set l (for
 * races_is_locked_main) or c (for races_shutdown_main), then spawn() it
 * with the record as argument; join with join_at(th, &call->state, 2, ...).
 */
typedef struct races_call {
    rl_lock *l;
    rl_client *c;
    atomic_int state;   /* 1 calling; 2 returned */
    int rc;             /* what the call returned */
    int64_t call_ms;    /* rt_now_ms() just before the call */
    int64_t return_us;  /* rt_now_us() just after it */
} races_call;

/** Thread body: rl_lock_is_locked(call->l). */
void *races_is_locked_main(void *call);
/** Thread body: rl_client_shutdown(call->c). */
void *races_shutdown_main(void *call);

/*
 * The first failed check of a test whose threads must be let go before it
 * may fail: V_CHECK records it (the first one only), V_DONE fails the test
 * with it, once every thread is joined and everything is freed.
 */
typedef struct verdict {
    char msg[512];
} verdict;

#define V_CHECK(v, cond, ...)                                                     \
    do {                                                                          \
        if (!(cond) && (v)->msg[0] == '\0')                                       \
            snprintf((v)->msg, sizeof (v)->msg, __VA_ARGS__);                     \
    } while (0)

#define V_DONE(v)                                                                 \
    do {                                                                          \
        if ((v)->msg[0] != '\0')                                                  \
            fail_msg("%s", (v)->msg);                                             \
    } while (0)

/*
 * Redis.
 */

/** Wait until the watchdog renews the lease of key: its PTTL jumps up by
 * more than 100 ms over the lowest value seen. 1, or 0 on timeout. */
int wait_renewed(redisContext *rc, const char *key, size_t kl, long timeout_ms);

#endif /* RACES_COMMON_H */
