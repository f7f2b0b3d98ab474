/*
 * rltest — small helpers shared by rlock's integration tests, fault-injection
 * tests and benchmarks: monotonic time, bounded waits on conditions, child
 * processes with deadlines, and pipes used as one-shot signals between
 * processes.
 *
 * Rule of the house: tests never sleep to synchronise. They wait for a
 * condition, with a deadline on CLOCK_MONOTONIC, and fail when the deadline
 * passes. rt_sleep_ms() exists only as the step of such a polling loop (and
 * for "hold this lock for about a second" in scenarios that need it).
 *
 * Every function here is safe to call from any thread. None of them prints
 * on success; failures are reported on stderr with an "rltest:" prefix so
 * that a failing test says why.
 */
#ifndef RT_UTIL_H
#define RT_UTIL_H

#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Milliseconds on CLOCK_MONOTONIC (system-wide: comparable across processes). */
int64_t rt_now_ms(void);

/** Microseconds on CLOCK_MONOTONIC. */
int64_t rt_now_us(void);

/** Sleep for `ms` milliseconds (restarts after signals). A polling step only. */
void rt_sleep_ms(long ms);

/** Polling step of RT_WAIT_UNTIL, in milliseconds. */
#define RT_POLL_MS 2

/**
 * RT_WAIT_UNTIL(cond, timeout_ms): evaluate `cond` until it is true or
 * `timeout_ms` milliseconds (CLOCK_MONOTONIC) have passed. Evaluates to 1
 * when `cond` became true (it is tested one last time at the deadline),
 * else 0. `cond` is evaluated many times: keep it free of side effects
 * that must not repeat.
 *
 *     assert_true(RT_WAIT_UNTIL(rl_interrupted() == 1, 2000));
 */
#define RT_WAIT_UNTIL(cond, timeout_ms)                                      \
    __extension__({                                                           \
        const int64_t rt__deadline = rt_now_ms() + (int64_t)(timeout_ms);     \
        int rt__ok = 0;                                                       \
        for (;;) {                                                            \
            if (cond) {                                                       \
                rt__ok = 1;                                                   \
                break;                                                        \
            }                                                                 \
            if (rt_now_ms() >= rt__deadline) {                                \
                rt__ok = (cond) ? 1 : 0;                                      \
                break;                                                        \
            }                                                                 \
            rt_sleep_ms(RT_POLL_MS);                                          \
        }                                                                     \
        rt__ok;                                                               \
    })

/*
 * Child processes.
 *
 * rt_child_start() forks; the child runs fn(arg) and leaves with
 * _exit(fn's return value & 0xff), so no atexit handler, cmocka state or
 * stdio buffer of the parent runs twice. The child also gets an alarm()
 * of `alarm_s` seconds (0: none) so a hung child cannot outlive the test.
 * Inside fn, use plain checks and return a non-zero code; do not use
 * cmocka assertions (they would longjmp into the parent's copy of the
 * test runner).
 *
 * Returns the child's pid, or -1 (errno set, message on stderr).
 */
pid_t rt_child_start(int (*fn)(void *arg), void *arg, unsigned alarm_s);

/**
 * Wait up to timeout_ms for child `pid` to end and reap it.
 * Returns its exit code (0..255); 128 + signal number when it was killed by
 * a signal; -1 when it did not end in time (it is then SIGKILLed and
 * reaped, so nothing is left behind) or on error.
 */
int rt_child_wait(pid_t pid, long timeout_ms);

/**
 * Start this same program again in a new process: fork, then execv of
 * this program (the path /proc/self/exe links to) with `argv`
 * (NULL-terminated; argv[0] is only a name).
 * A fresh process image, not a copy of this multi-threaded one: what a
 * child needs it must build itself (rlock client included), which is what
 * "another process" means, and what ThreadSanitizer supports.
 *
 * keep[0..nkeep-1] (at most 8 fds) appear in the new process as fds 3, 4,
 * ...; every other descriptor above 2 is closed. stdin/stdout/stderr are
 * shared. alarm_s as for rt_child_start() (an alarm survives execv).
 * The test's main() recognises the arguments and runs the child's part.
 * Reap it with rt_child_wait(). Returns the pid, or -1.
 */
pid_t rt_spawn_self(char *const argv[], const int *keep, int nkeep, unsigned alarm_s);

/**
 * The ports every server of the tests takes: RL_TEST_PORTS=LO-HI (1024 <=
 * LO <= HI <= 65535), by default 20000-29999, below the kernel's range for
 * outgoing connections (32768-60999), so that no program's connection can
 * hold a server's port. Into *lo and *hi; returns 0, or -1 with a message
 * on stderr when RL_TEST_PORTS is malformed (nothing is started then).
 */
int rt_port_range(int *lo, int *hi);

/**
 * A TCP port of 127.0.0.1 in the range of rt_port_range() that was free a
 * moment ago: drawn at random (so that tests run at once rarely draw the
 * same), checked by binding it (and closed again), never one this process
 * handed out lately. A busy port is skipped: random draws first, then every
 * port of the range from a random start. Someone else may still take it
 * before it is used: a caller retries with another when its server fails
 * to start. Also for a Redis Cluster bus port (--cluster-port): the default,
 * port + 10000, may lie outside the range, past 65535, or be taken.
 * Returns the port, or -1 (message on stderr: bad range, none free).
 */
int rt_free_port(void);

/**
 * A socket listening on 127.0.0.1 at a port of that range, for a server the
 * test runs itself (a proxy, a fake peer): the port into *port_out.
 * Returns the descriptor (close-on-exec), or -1 (message on stderr).
 */
int rt_listen_port(int *port_out);

/**
 * A binary the tests run: $<env_var> when set (it must be executable), else
 * the first `name` on $PATH. Returns a malloc'd path, or NULL (message on
 * stderr: the test must then FAIL).
 */
char *rt_find_binary(const char *env_var, const char *name);

/*
 * One-byte signals over a pipe, e.g. between a test and its child process.
 */

/** pipe2(O_CLOEXEC). Returns 0 or -1. */
int rt_pipe(int fds[2]);

/** Write `len` bytes fully (retries on EINTR / short writes). Returns 0 or -1. */
int rt_write_all(int fd, const void *buf, size_t len);

/**
 * Read exactly `len` bytes, waiting at most timeout_ms in total.
 * Returns 0, or -1 on timeout, EOF or error.
 */
int rt_read_full(int fd, void *buf, size_t len, long timeout_ms);

/** Close fd if >= 0 and set it to -1. */
void rt_close(int *fd);

#ifdef __cplusplus
}
#endif

#endif /* RT_UTIL_H */
