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
 *
 * The command runs in a process group of its own, and rlock is a child
 * subreaper: whatever the command starts stays in its group (unless it
 * leaves it) and, orphaned, becomes rlock's child. Every stop (a signal,
 * the lease lost, the command's own exit with children left) is sent to the
 * whole group, and the lock is released only once no process of the group
 * is left: nothing the command started runs on without the lock. In the
 * foreground of a terminal the command's group gets the terminal (its
 * Ctrl-C, Ctrl-Z and reads are the command's, as under a shell) and rlock
 * takes it back when the command is over.
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
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exec.h"

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

/* Signals meant for the command (a log reopen, a reload): passed on to
 * its group, which decides; they neither stop it nor end rlock. Their
 * default action would kill rlock and leave the command running on a
 * lease nobody renews. */
static int relay_signal(int sig)
{
    return sig == SIGUSR1 || sig == SIGUSR2 || sig == SIGALRM;
}

/* A job control stop of rlock's own group (`kill -TSTP %job`, or another
 * process of its job, the far end of a pipeline, reading the terminal in
 * the background: SIGTTIN goes to the whole group). */
static int suspend_signal(int sig)
{
    return sig == SIGTSTP || sig == SIGTTIN;
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
        /* Only stop signals are taken here (and those meant for the
         * command, which is not there yet); SIGCHLD cannot come yet. */
        while (read(w->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
            if (stop_signal((int)si.ssi_signo) || relay_signal((int)si.ssi_signo)) {
                w->sig = (int)si.ssi_signo;
                rl_client_shutdown(w->client);
                return NULL;
            }
            if (suspend_signal((int)si.ssi_signo))
                kill(getpid(), SIGSTOP);    /* no command yet: stop as the job */
        }
    }
}

/* The command, in a process group of its own (pgid = its pid); with tty >= 0
 * that group is made the terminal's foreground group before the command
 * runs (so that it never reads the terminal as a background job). */
static int spawn(pid_t *pid, char **cmd, const sigset_t *mask, int tty)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t def;
    int rc;

    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&fa);
    sigemptyset(&def);
    sigaddset(&def, SIGPIPE);
    sigaddset(&def, SIGTERM);
    sigaddset(&def, SIGINT);
    sigaddset(&def, SIGHUP);
    sigaddset(&def, SIGQUIT);
    sigaddset(&def, SIGCHLD);
    sigaddset(&def, SIGTTOU);
    sigaddset(&def, SIGUSR1);
    sigaddset(&def, SIGUSR2);
    sigaddset(&def, SIGALRM);
    posix_spawnattr_setsigmask(&attr, mask);
    posix_spawnattr_setsigdefault(&attr, &def);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                    POSIX_SPAWN_SETPGROUP);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 35)
    if (tty >= 0)
        posix_spawn_file_actions_addtcsetpgrp_np(&fa, tty);
    rc = posix_spawnp(pid, cmd[0], &fa, &attr, cmd, environ);
#else
    /* Handed over from here: a read of the command's before it is made
     * stops it (SIGTTIN), and the SIGCONT continues it. */
    rc = posix_spawnp(pid, cmd[0], &fa, &attr, cmd, environ);
    if (rc == 0 && tty >= 0 && tcsetpgrp(tty, *pid) == 0)
        kill(-*pid, SIGCONT);
#endif
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    return rc;
}

/* The controlling terminal, when rlock's group is its foreground group:
 * the command's group gets it. Else -1 (no terminal, or rlock runs in the
 * background: the command's group stays in the background too). */
static int foreground_tty(void)
{
    int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);

    if (fd >= 0 && tcgetpgrp(fd) != getpgrp()) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* The command and what it started, as one process group. */
typedef struct job {
    pid_t pid;          /* the command, leader of the group `pid` */
    int tty;            /* the terminal handed to the group, -1: none */
    int st;             /* the command's wait status, once `exited` */
    int exited;
    int why;            /* 's' a stop signal, 'l' the lease lost, 'x' the command exited */
    int stop_sig;
    int killed;         /* SIGKILL sent */
    long long kill_at;  /* SIGKILL to the group at this time, -1: none */
} job;

/* Take the terminal back when the command's group has it (SIGTTOU is
 * blocked: rlock is in the background of it by then). Never from the
 * shell: after a stop and `bg`, rlock runs in the background. */
static void tty_back(job *j)
{
    if (j->tty >= 0) {
        if (tcgetpgrp(j->tty) == j->pid)
            tcsetpgrp(j->tty, getpgrp());
        close(j->tty);
        j->tty = -1;
    }
}

/* Stop the whole group: `sig` now, SIGKILL after the grace. A stopped
 * process would keep `sig` pending through the grace: SIGCONT lets it act. */
static void stop_group(job *j, int why, int sig, long grace_ms)
{
    if (j->why)
        return;
    j->why = why;
    tty_back(j);
    kill(-j->pid, sig);
    kill(-j->pid, SIGCONT);
    j->kill_at = mono_ms() + grace_ms;
}

/* The command stopped (by `sig`: Ctrl-Z on the terminal it was given, or
 * a read of the terminal in the background): stop rlock too, with the
 * terminal back, so that the shell sees the job stopped. Once continued
 * (fg or bg), continue the command, with the terminal when rlock has it
 * (fg). */
static void job_stopped(job *j, int sig)
{
    if (j->tty < 0) {
        /* Started in the background: the command read (or wrote) the
         * terminal, which stops its group, a group no shell knows of.
         * rlock stops instead, as the job it is; continued in the
         * foreground (fg), the command's group gets the terminal. */
        if (sig != SIGTTIN && sig != SIGTTOU)
            return;
        kill(getpid(), SIGSTOP);
        if ((j->tty = foreground_tty()) >= 0)
            tcsetpgrp(j->tty, j->pid);
        kill(-j->pid, SIGCONT);
        return;
    }
    if (tcgetpgrp(j->tty) == j->pid)
        tcsetpgrp(j->tty, getpgrp());
    kill(getpid(), SIGSTOP);
    if (tcgetpgrp(j->tty) == getpgrp())
        tcsetpgrp(j->tty, j->pid);
    kill(-j->pid, SIGCONT);
}

/* rlock's group was stopped (suspend_signal): the command's group, which
 * does not share it, stops first, then rlock; once continued, the command
 * too. A command left running while rlock is stopped would outlive the
 * lease nobody renews. The terminal stays where it is. */
static void job_suspend(job *j)
{
    kill(-j->pid, SIGSTOP);
    kill(getpid(), SIGSTOP);
    kill(-j->pid, SIGCONT);
}

/* Reap every child that ended: the command (its status kept), and those
 * of its group orphaned to rlock (a subreaper). */
static void reap(job *j)
{
    pid_t r;
    int st;

    if (!j->exited && (r = waitpid(j->pid, &st, WNOHANG | WUNTRACED)) == j->pid) {
        if (WIFSTOPPED(st))
            job_stopped(j, WSTOPSIG(st));
        else {
            j->st = st;
            j->exited = 1;
        }
    }
    while ((r = waitpid(-1, &st, WNOHANG)) > 0) {
        if (r == j->pid) {
            j->st = st;
            j->exited = 1;
        }
    }
}

/* No process of the group is left (zombies count: reap() reaps ours). */
static int group_gone(const job *j)
{
    return kill(-j->pid, 0) != 0 && errno == ESRCH;
}

/* Run until the command and every process of its group are gone. */
static void run(job *j, rl_lock *lock, int sfd, const char *name, long grace_ms)
{
    for (;;) {
        struct pollfd p[2] = { { sfd, POLLIN, 0 }, { lost_pipe[0], POLLIN, 0 } };
        struct signalfd_siginfo si;
        long long now = mono_ms();
        int timeout = RT_TICK_MS;
        char drain[64];

        if (j->kill_at >= 0 && !j->killed && j->kill_at - now < timeout)
            timeout = j->kill_at > now ? (int)(j->kill_at - now) : 0;
        if (poll(p, 2, timeout) < 0 && errno != EINTR)
            break;
        /* Passed on to the group, which never shares rlock's: a signal
         * rlock got, the command's group did not (a terminal's goes to its
         * foreground group, the command's once it was handed the terminal). */
        while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
            int sig = (int)si.ssi_signo;
            if (sig == SIGCHLD)
                continue;
            if (suspend_signal(sig)) {
                job_suspend(j);
                continue;
            }
            if (j->why || relay_signal(sig)) {
                kill(-j->pid, sig);
            } else {
                j->stop_sig = sig;
                stop_group(j, 's', sig, grace_ms);
            }
        }
        while (read(lost_pipe[0], drain, sizeof drain) > 0)
            p[1].revents = POLLIN;
        if (!j->why && (p[1].revents || rl_lock_interrupted(lock) == 1)) {
            rt_err("the lease of '%s' was lost: stopping the command (SIGTERM, SIGKILL "
                   "after %ld ms)", name, grace_ms);
            stop_group(j, 'l', SIGTERM, grace_ms);
        }
        /* SIGCHLD may coalesce: ask after every wake-up. */
        reap(j);
        if (j->exited && !j->why && !group_gone(j)) {
            rt_err("the command left processes behind: stopping them (SIGTERM, SIGKILL "
                   "after %ld ms)", grace_ms);
            stop_group(j, 'x', SIGTERM, grace_ms);
        }
        if (j->exited && group_gone(j))
            break;
        if (j->kill_at >= 0 && !j->killed && mono_ms() >= j->kill_at) {
            kill(-j->pid, SIGKILL);
            j->killed = 1;
        }
    }
    tty_back(j);
}

/* What `rlock exec` was asked to do. */
typedef struct exec_args {
    long wait_ms, lease_ms, grace_ms;
    const char *name;
    char **cmd;
} exec_args;

/* The command line into *a: 0, or the status to exit with. */
static int parse_args(int argc, char **argv, rt_common *co, exec_args *a)
{
    static const struct option longs[] = {
        RT_COMMON_LONGS,
        { "wait", required_argument, NULL, 'w' },
        { "lease", required_argument, NULL, 'l' },
        { "grace", required_argument, NULL, 'g' },
        { "watchdog-lease", required_argument, NULL, 'W' },
        { NULL, 0, NULL, 0 },
    };
    int opt, rc;

    a->wait_ms = RL_WAIT_FOREVER;
    a->lease_ms = RL_LEASE_WATCHDOG;
    a->grace_ms = RT_GRACE_MS;
    while ((opt = getopt_long(argc, argv, "+:" RT_COMMON_SHORT "w:l:g:W:", longs, NULL)) != -1) {
        if (opt == 'w' || opt == 'g') {
            if (rt_opt_ms(opt == 'w' ? "--wait" : "--grace", optarg, 0, "",
                          opt == 'w' ? &a->wait_ms : &a->grace_ms) != 0)
                return RT_EXIT_USAGE;
        } else if (opt == 'l' || opt == 'W') {
            if (rt_opt_ms(opt == 'l' ? "--lease" : "--watchdog-lease", optarg, RL_LEASE_MIN_MS,
                          "the shortest lease", opt == 'l' ? &a->lease_ms : &co->lease_ms) != 0)
                return RT_EXIT_USAGE;
        } else if ((rc = rt_common_opt(opt, optarg, argv, "exec", co)) != 0) {
            return rc > 0 ? RT_EXIT_OK : RT_EXIT_USAGE;
        }
    }
    if (a->lease_ms != RL_LEASE_WATCHDOG && co->lease_ms) {
        rt_err("exec: --lease (a fixed lease) and --watchdog-lease (a renewed one) exclude "
               "each other: give one");
        return RT_EXIT_USAGE;
    }
    if (optind < argc && strcmp(argv[optind], "--") == 0)
        optind++;
    if (argc - optind < 2)
        return rt_args_error("exec", "NAME [--] CMD [ARGS...]");
    a->name = argv[optind++];
    if (strcmp(argv[optind], "--") == 0)
        optind++;
    else if (argv[optind][0] == '-') {
        /* "exec job --wait 0 make": an option misplaced, not a command. */
        rt_err("exec: '%s' after NAME: exec's options go before NAME, the command after it "
               "(a command that begins with '-' after --)", argv[optind]);
        return RT_EXIT_USAGE;
    }
    if (optind >= argc)
        return rt_args_error("exec", "NAME [--] CMD [ARGS...]");
    a->cmd = argv + optind;
    if (!co->name)
        co->name = "rlock-exec";
    return -1;
}

/* Every signal we act on is read from the returned descriptor (-1 on
 * failure), *old the mask to give the command; blocked before any thread
 * of the library exists, so that they all inherit the mask. */
static int block_signals(sigset_t *old)
{
    sigset_t stops, ttou;
    int sfd;

    sigemptyset(&stops);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGHUP);
    sigaddset(&stops, SIGQUIT);
    sigaddset(&stops, SIGCHLD);
    sigaddset(&stops, SIGTSTP);
    sigaddset(&stops, SIGTTIN);
    sigaddset(&stops, SIGUSR1);
    sigaddset(&stops, SIGUSR2);
    sigaddset(&stops, SIGALRM);
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    if (sigprocmask(SIG_BLOCK, &stops, old) != 0 || sigprocmask(SIG_BLOCK, &ttou, NULL) != 0 ||
        (sfd = signalfd(-1, &stops, SFD_CLOEXEC | SFD_NONBLOCK)) < 0 ||
        pipe2(lost_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        rt_err("signals: %s", strerror(errno));
        return -1;
    }
    return sfd;
}

/* Take the lock; a stop signal meanwhile cancels the wait. 0 once taken,
 * else the status to exit with (the lock and the client freed). */
static int take(rl_client *client, rl_lock *lock, int sfd, const exec_args *a)
{
    watch w;
    pthread_t wt;
    int rc;

    memset(&w, 0, sizeof w);
    w.client = client;
    w.sfd = sfd;
    if (pipe2(w.quit, O_CLOEXEC) != 0 || pthread_create(&wt, NULL, watch_main, &w) != 0) {
        rt_err("cannot start the signal watcher");
        rc = RT_EXIT_REDIS;
        goto out;
    }
    rc = rl_lock_try_acquire(lock, a->wait_ms, a->lease_ms);
    if (write(w.quit[1], "q", 1) < 0) {
        /* the thread is gone already */
    }
    pthread_join(wt, NULL);
    close(w.quit[0]);
    close(w.quit[1]);
    if (w.sig) {
        /* The shutdown released whatever the acquisition got. */
        rt_err("got signal %d while waiting for '%s'", w.sig, a->name);
        rc = 128 + w.sig;
    } else if (rc == RL_EBUSY || rc == RL_ETIMEDOUT) {
        rt_err("'%s' is held by another owner (not acquired within %ld ms)", a->name,
               a->wait_ms);
        rc = rt_exit_of(rc);
    } else if (rc != RL_OK) {
        rt_err("cannot acquire '%s': %s (%s)", a->name, rl_strerror(rc), rl_last_error());
        rc = rt_exit_of(rc);
    } else {
        return 0;
    }
out:
    rl_lock_free(lock);
    rl_client_free(client);
    return rc;
}

/* rlock's exit status once the command's group is gone and the lock was
 * released with status rc. */
static int exit_status(job *j, const char *name, int rc)
{
    if (rc == RL_ELOST && j->why != 's')
        j->why = 'l';
    else if (rc != RL_OK && rc != RL_ELOST)
        rt_err("release of '%s': %s (%s); it runs out with its lease", name, rl_strerror(rc),
               rl_last_error());
    if (j->why == 's')
        return 128 + j->stop_sig;
    if (j->why == 'l')
        return RT_EXIT_LOST;
    if (WIFEXITED(j->st))
        return WEXITSTATUS(j->st);
    if (WIFSIGNALED(j->st))
        return 128 + WTERMSIG(j->st);
    return RT_EXIT_REDIS;
}

int rt_cmd_exec(int argc, char **argv, rt_common *co)
{
    rl_client *client = NULL;
    rl_lock *lock = NULL;
    exec_args a;
    sigset_t old;
    job j;
    int rc, ex, sfd;

    if ((rc = parse_args(argc, argv, co, &a)) >= 0)
        return rc;
    if ((sfd = block_signals(&old)) < 0)
        return RT_EXIT_REDIS;
    if ((rc = rt_client(&client, co, on_lost, NULL)) != RT_EXIT_OK)
        return rc;
    if ((rc = rl_lock_new(&lock, client, a.name)) != RL_OK) {
        rt_err("lock name: %s", rl_last_error());
        rl_client_free(client);
        return RT_EXIT_USAGE;
    }
    if ((rc = take(client, lock, sfd, &a)) != 0)
        return rc;

    /* Orphans of the command's group become rlock's children (to reap). */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    memset(&j, 0, sizeof j);
    j.kill_at = -1;
    j.tty = foreground_tty();
    if ((rc = spawn(&j.pid, a.cmd, &old, j.tty)) != 0) {
        rt_err("%s: %s", a.cmd[0], strerror(rc));
        tty_back(&j);
        rl_lock_release(lock);
        rl_lock_free(lock);
        rl_client_free(client);
        return rc == ENOENT ? RT_EXIT_NOTFOUND : RT_EXIT_NOEXEC;
    }
    run(&j, lock, sfd, a.name, a.grace_ms);
    ex = exit_status(&j, a.name, rl_lock_release(lock));
    rl_lock_free(lock);
    rl_client_free(client);
    close(sfd);
    return ex;
}
