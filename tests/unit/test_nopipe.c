/*
 * nopipe.c: a write to a broken pipe between rl__nopipe_begin() and
 * rl__nopipe_end() neither ends this program (SIGPIPE is left at its
 * default here) nor leaves a SIGPIPE pending; the thread's mask comes back
 * as it was; a SIGPIPE of the application's own stays pending. No Redis.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "nopipe.h"

/* A pipe whose reader is gone: every write raises SIGPIPE. */
static int broken_pipe(void)
{
    int p[2];

    assert_int_equal(pipe(p), 0);
    close(p[0]);
    return p[1];
}

static int pipe_pending(void)
{
    sigset_t s;

    assert_int_equal(sigpending(&s), 0);
    return sigismember(&s, SIGPIPE);
}

static int pipe_blocked(void)
{
    sigset_t s;

    pthread_sigmask(SIG_BLOCK, NULL, &s);
    return sigismember(&s, SIGPIPE);
}

static void test_write_raises_nothing(void **state)
{
    int fd = broken_pipe();
    rl__nopipe np;
    ssize_t n;
    int i;
    (void)state;

    assert_true(signal(SIGPIPE, SIG_DFL) != SIG_ERR);
    for (i = 0; i < 3; i++) {
        rl__nopipe_begin(&np);
        assert_true(pipe_blocked());
        n = write(fd, "x", 1);
        assert_int_equal(n, -1);
        assert_int_equal(errno, EPIPE);
        errno = EPIPE;
        rl__nopipe_end(&np);
        assert_int_equal(errno, EPIPE);      /* the caller still reads why */
        assert_false(pipe_blocked());
        assert_false(pipe_pending());
    }
    /* Without the guard the same write would end the program: shown in a
     * child, so that the test goes on. */
    {
        pid_t pid = fork();
        int st;
        if (pid == 0) {
            if (write(fd, "x", 1) < 0)
                _exit(1);
            _exit(0);
        }
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGPIPE);
    }
    close(fd);
}

/* An application that blocks SIGPIPE itself and has one pending: it stays
 * pending, and the mask stays blocked. */
static void test_application_pipe_kept(void **state)
{
    int fd = broken_pipe();
    sigset_t s, old;
    rl__nopipe np;
    (void)state;

    sigemptyset(&s);
    sigaddset(&s, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &s, &old);
    assert_int_equal(write(fd, "x", 1), -1);      /* the application's own */
    assert_true(pipe_pending());
    rl__nopipe_begin(&np);
    assert_int_equal(write(fd, "x", 1), -1);
    rl__nopipe_end(&np);
    assert_true(pipe_pending());
    assert_true(pipe_blocked());

    /* Blocked but none pending: the library's SIGPIPE is taken back. */
    {
        const struct timespec zero = { 0, 0 };
        assert_int_equal(sigtimedwait(&s, NULL, &zero), SIGPIPE);
    }
    rl__nopipe_begin(&np);
    assert_int_equal(write(fd, "x", 1), -1);
    rl__nopipe_end(&np);
    assert_false(pipe_pending());
    assert_true(pipe_blocked());
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(fd);
}

/* What the guard costs per call (four system calls), printed. */
static void test_cost(void **state)
{
    struct timespec a, b;
    rl__nopipe np;
    double us;
    int i, n = 100000;
    (void)state;

    clock_gettime(CLOCK_MONOTONIC, &a);
    for (i = 0; i < n; i++) {
        rl__nopipe_begin(&np);
        rl__nopipe_end(&np);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    us = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / 1e3 / n;
    printf("rl__nopipe_begin + end: %.3f us per call\n", us);
    assert_true(us < 50.0);      /* a loose bound: a round trip is ~20-50 us */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_raises_nothing),
        cmocka_unit_test(test_application_pipe_kept),
        cmocka_unit_test(test_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
