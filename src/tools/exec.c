/*
 * rlock exec: a distributed flock(1). Take the lock, run the command, keep
 * the lock while it runs, release it on every way out.
 *
 * Signals are blocked from the start and read from a signalfd, so the
 * library's threads (created later) inherit the mask and every signal
 * lands in the one loop below. The lease's loss comes from the on_lost
 * callback (the watchdog thread) through a pipe; rl_lock_interrupted() is
 * asked too at each tick of the loop, because it does not depend on the
 * watchdog thread being scheduled (it compares the last confirmed expiry
 * with the clock).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

extern char **environ;

#define RT_TICK_MS 100          /* rl_lock_interrupted() asked at least this often */
#define RT_GRACE_MS 5000        /* SIGTERM, then SIGKILL after this */

static int lost_pipe[2] = { -1, -1 };

/* From the watchdog thread: wake the loop. */
static void on_lost(const char *name, size_t len, void *payload)
{
    char b = 1;

    (void)name;
    (void)len;
    (void)payload;
    if (write(lost_pipe[1], &b, 1) < 0) {
        /* full: the loop is woken already */
    }
}

static long long mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int stop_signal(int sig)
{
    return sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT;
}

/* While the main thread waits for the lock: a signal to stop shuts the
 * client down, which cancels the wait (RL_ECANCELED). */
typedef struct watch {
    rl_client *client;
    int sfd;
    int quit[2];
    int sig;            /* the stop signal received, 0: none */
} watch;

static void *watch_main(void *arg)
{
    watch *w = arg;
    struct pollfd p[2] = { { w->sfd, POLLIN, 0 }, { w->quit[0], POLLIN, 0 } };
    struct signalfd_siginfo si;

    for (;;) {
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            return NULL;
        if (p[1].revents)
            return NULL;
        if (!(p[0].revents & POLLIN))
            continue;
        /* Only stop signals are taken here; SIGCHLD cannot come yet. */
        while (read(w->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
            if (stop_signal((int)si.ssi_signo)) {
                w->sig = (int)si.ssi_signo;
                rl_client_shutdown(w->client);
                return NULL;
            }
        }
    }
}

static int spawn(pid_t *pid, char **cmd, const sigset_t *mask)
{
    posix_spawnattr_t attr;
    sigset_t def;
    int rc;

    posix_spawnattr_init(&attr);
    sigemptyset(&def);
    sigaddset(&def, SIGPIPE);
    sigaddset(&def, SIGTERM);
    sigaddset(&def, SIGINT);
    sigaddset(&def, SIGHUP);
    sigaddset(&def, SIGQUIT);
    sigaddset(&def, SIGCHLD);
    posix_spawnattr_setsigmask(&attr, mask);
    posix_spawnattr_setsigdefault(&attr, &def);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    rc = posix_spawnp(pid, cmd[0], NULL, &attr, cmd, environ);
    posix_spawnattr_destroy(&attr);
    return rc;
}

static const char exec_usage[] =
    "usage: rlock exec [--url URL] [--wait MS] [--lease MS | --watchdog-lease MS] [--grace MS]\n"
    "                  NAME [--] CMD [ARGS...]\n";

int rt_cmd_exec(int argc, char **argv, rt_common *co)
{
    static const struct option longs[] = {
        RT_COMMON_LONGS,
        { "wait", required_argument, NULL, 'w' },
        { "lease", required_argument, NULL, 'l' },
        { "grace", required_argument, NULL, 'g' },
        { "watchdog-lease", required_argument, NULL, 'W' },
        { NULL, 0, NULL, 0 },
    };
    long wait_ms = RL_WAIT_FOREVER, lease_ms = RL_LEASE_WATCHDOG, grace_ms = RT_GRACE_MS;
    sigset_t stops, old;
    rl_client *client = NULL;
    rl_lock *lock = NULL;
    const char *name;
    char **cmd;
    watch w;
    pthread_t wt;
    pid_t pid;
    int opt, rc, st = 0, ex, why = 0, stop_sig = 0, killed = 0, sfd;
    long long kill_at = -1;

    while ((opt = getopt_long(argc, argv, "+" RT_COMMON_SHORT "w:l:g:W:", longs, NULL)) != -1) {
        long *to = opt == 'w' ? &wait_ms : opt == 'l' ? &lease_ms : opt == 'g' ? &grace_ms
                 : opt == 'W' ? &co->lease_ms : NULL;
        if (to) {
            if (rt_parse_ms(optarg, to) != 0 ||
                ((opt == 'l' || opt == 'W') && *to < RL_LEASE_MIN_MS)) {
                rt_err("--%s: '%s' is not a number of ms (leases: %d..%ld)",
                       opt == 'w' ? "wait" : opt == 'l' ? "lease" : opt == 'g' ? "grace"
                       : "watchdog-lease", optarg, RL_LEASE_MIN_MS, RL_TIME_MAX_MS);
                return RT_EXIT_USAGE;
            }
            continue;
        }
        if ((rc = rt_common_opt(opt, optarg, co)) != 0) {
            if (rc < 0)
                fputs(exec_usage, stderr);
            return rc > 0 ? RT_EXIT_OK : RT_EXIT_USAGE;
        }
    }
    if (optind < argc && strcmp(argv[optind], "--") == 0)
        optind++;
    if (argc - optind < 2) {
        fputs(exec_usage, stderr);
        return RT_EXIT_USAGE;
    }
    name = argv[optind++];
    if (strcmp(argv[optind], "--") == 0)
        optind++;
    if (optind >= argc) {
        fputs(exec_usage, stderr);
        return RT_EXIT_USAGE;
    }
    cmd = argv + optind;
    if (!co->name)
        co->name = "rlock-exec";

    /* Every signal we act on is read from sfd; blocked before any thread
     * of the library exists, so that they all inherit the mask. */
    sigemptyset(&stops);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGHUP);
    sigaddset(&stops, SIGQUIT);
    sigaddset(&stops, SIGCHLD);
    signal(SIGPIPE, SIG_IGN);
    if (sigprocmask(SIG_BLOCK, &stops, &old) != 0 ||
        (sfd = signalfd(-1, &stops, SFD_CLOEXEC | SFD_NONBLOCK)) < 0 ||
        pipe2(lost_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        rt_err("signals: %s", strerror(errno));
        return RT_EXIT_REDIS;
    }
    if (rt_client(&client, co, on_lost, NULL) != RL_OK)
        return RT_EXIT_REDIS;
    if ((rc = rl_lock_new(&lock, client, name)) != RL_OK) {
        rt_err("lock name: %s", rl_last_error());
        rl_client_free(client);
        return RT_EXIT_USAGE;
    }

    /* Take the lock; a stop signal meanwhile cancels the wait. */
    memset(&w, 0, sizeof w);
    w.client = client;
    w.sfd = sfd;
    if (pipe2(w.quit, O_CLOEXEC) != 0 || pthread_create(&wt, NULL, watch_main, &w) != 0) {
        rt_err("cannot start the signal watcher");
        rl_lock_free(lock);
        rl_client_free(client);
        return RT_EXIT_REDIS;
    }
    rc = rl_lock_try_acquire(lock, wait_ms, lease_ms);
    if (write(w.quit[1], "q", 1) < 0) {
        /* the thread is gone already */
    }
    pthread_join(wt, NULL);
    close(w.quit[0]);
    close(w.quit[1]);
    if (w.sig) {
        /* The shutdown released whatever the acquisition got. */
        rt_err("got signal %d while waiting for '%s'", w.sig, name);
        rl_lock_free(lock);
        rl_client_free(client);
        return 128 + w.sig;
    }
    if (rc != RL_OK) {
        if (rc == RL_EBUSY || rc == RL_ETIMEDOUT)
            rt_err("'%s' is held by another owner (not acquired within %ld ms)", name,
                   wait_ms);
        else
            rt_err("cannot acquire '%s': %s (%s)", name, rl_strerror(rc), rl_last_error());
        rl_lock_free(lock);
        rl_client_free(client);
        return rt_exit_of(rc);
    }

    if ((rc = spawn(&pid, cmd, &old)) != 0) {
        rt_err("%s: %s", cmd[0], strerror(rc));
        rl_lock_release(lock);
        rl_lock_free(lock);
        rl_client_free(client);
        return rc == ENOENT ? RT_EXIT_NOTFOUND : RT_EXIT_NOEXEC;
    }

    for (;;) {
        struct pollfd p[2] = { { sfd, POLLIN, 0 }, { lost_pipe[0], POLLIN, 0 } };
        struct signalfd_siginfo si;
        long long now = mono_ms();
        int timeout = RT_TICK_MS, gone = 0;
        char drain[64];

        if (kill_at >= 0 && !killed && kill_at - now < timeout)
            timeout = kill_at > now ? (int)(kill_at - now) : 0;
        if (poll(p, 2, timeout) < 0 && errno != EINTR)
            break;
        while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
            int sig = (int)si.ssi_signo;
            if (sig == SIGCHLD)
                continue;
            /* Passed on to the command; we leave once it is gone. Not
             * when the terminal sent it (Ctrl-C, Ctrl-\, a hangup): it
             * went to the whole foreground group, the command included,
             * and a second one would read as "press again to force". */
            if (si.ssi_code != SI_KERNEL || getpgid(pid) != getpgrp())
                kill(pid, sig);
            if (!why) {
                why = 's';
                stop_sig = sig;
                kill_at = mono_ms() + grace_ms;
            }
        }
        while (read(lost_pipe[0], drain, sizeof drain) > 0)
            p[1].revents = POLLIN;
        if (!why && (p[1].revents || rl_lock_interrupted(lock) == 1)) {
            why = 'l';
            rt_err("the lease of '%s' was lost: stopping the command (SIGTERM, SIGKILL "
                   "after %ld ms)", name, grace_ms);
            kill(pid, SIGTERM);
            kill_at = mono_ms() + grace_ms;
        }
        /* SIGCHLD may coalesce: ask after every wake-up. */
        rc = waitpid(pid, &st, WNOHANG);
        gone = rc == pid || (rc < 0 && errno == ECHILD);
        if (gone)
            break;
        if (kill_at >= 0 && !killed && mono_ms() >= kill_at) {
            kill(pid, SIGKILL);
            killed = 1;
        }
    }

    rc = rl_lock_release(lock);
    if (rc == RL_ELOST && !why)
        why = 'l';
    else if (rc != RL_OK && rc != RL_ELOST)
        rt_err("release of '%s': %s (%s); it runs out with its lease", name, rl_strerror(rc),
               rl_last_error());
    if (why == 's')
        ex = 128 + stop_sig;
    else if (why == 'l')
        ex = RT_EXIT_LOST;
    else if (WIFEXITED(st))
        ex = WEXITSTATUS(st);
    else if (WIFSIGNALED(st))
        ex = 128 + WTERMSIG(st);
    else
        ex = RT_EXIT_REDIS;
    rl_lock_free(lock);
    rl_client_free(client);
    close(sfd);
    return ex;
}
