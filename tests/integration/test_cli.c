/*
 * The rlock command (src/tools), run as a separate process against the
 * test's own redis-server (RLOCK_URL), and the owner identity it shows:
 * exec passes the command's status on, stops the command when the lease is
 * lost, stops it and releases when rlock itself is told to stop; list and
 * show name the holders of other processes (a semaphore's with their
 * permits); release --force wakes a waiter of another process at once;
 * the TLS options against a TLS redis-server (certificates made by
 * openssl). Without redis-server every test FAILS.
 */
#include "it_common.h"
#include "rt_cluster.h"
#include "rt_tls.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef RLOCK_CLI
#error "RLOCK_CLI: the path of the built rlock binary"
#endif

extern char **environ;

/* rlock's own exit statuses (rlock.1), apart from any command's. */
enum { ST_USAGE = 122, ST_LOST = 123, ST_NOTTAKEN = 124, ST_FAILED = 125 };

/* A running rlock: its pid and where its stdout goes. */
typedef struct cli {
    pid_t pid;
    char out[400];
    int status;
    int done;
} cli;

static char tmpdir[300];

/* Every rlock started, so that a failed test leaves none behind (a waiter
 * of a stopped Redis waits as long as it takes, and would keep ctest's
 * output pipe open). */
static pid_t started[64];
static int nstarted;

static int teardown(void **state)
{
    int i, st;

    for (i = 0; i < nstarted; i++) {
        if (started[i] > 0 && waitpid(started[i], &st, WNOHANG) == 0) {
            kill(started[i], SIGKILL);
            waitpid(started[i], &st, 0);
        }
    }
    nstarted = 0;
    return it_teardown(state);
}

/* Start rlock with args; its stdout (and its stderr too with `both`) into
 * the file x->out. */
static void cli_spawn(cli *x, const char *const *args, int both)
{
    const char *argv[32];
    posix_spawn_file_actions_t fa;
    static int seq;
    int n, rc;

    argv[0] = RLOCK_CLI;
    for (n = 0; args[n]; n++)
        argv[n + 1] = args[n];
    argv[n + 1] = NULL;
    memset(x, 0, sizeof *x);
    snprintf(x->out, sizeof x->out, "%s/out.%d", tmpdir, ++seq);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, x->out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (both)
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
    /* None of the test's own descriptors (its Redis connections): what a
     * command run by rlock holds is rlock's. */
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    rc = posix_spawn(&x->pid, RLOCK_CLI, &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        fail_msg("cannot run %s: %s", RLOCK_CLI, strerror(rc));
    if (nstarted < (int)(sizeof started / sizeof started[0]))
        started[nstarted++] = x->pid;
}

static void cli_start(cli *x, const char *const *args)
{
    cli_spawn(x, args, 0);
}

static int cli_reaped(cli *x)
{
    if (!x->done && waitpid(x->pid, &x->status, WNOHANG) == x->pid)
        x->done = 1;
    return x->done;
}

/* Wait for it to exit (fails the test after timeout_ms): its exit status,
 * or 1000 + signal when a signal ended it. */
static int cli_wait(cli *x, long timeout_ms)
{
    if (!RT_WAIT_UNTIL(cli_reaped(x), timeout_ms)) {
        kill(x->pid, SIGKILL);
        waitpid(x->pid, &x->status, 0);
        fail_msg("rlock (pid %d) still running after %ld ms", (int)x->pid, timeout_ms);
    }
    return WIFEXITED(x->status) ? WEXITSTATUS(x->status) : 1000 + WTERMSIG(x->status);
}

/* Kill a leftover (a failed test's), never a reaped pid. */
static void cli_kill(cli *x)
{
    if (x->pid > 0 && !cli_reaped(x)) {
        kill(x->pid, SIGKILL);
        waitpid(x->pid, &x->status, 0);
        x->done = 1;
    }
}

/* Run to the end; its stdout (with `both`, and its stderr) into buf. */
static int cli_run_out(const char *const *args, int both, char *buf, size_t cap,
                       long timeout_ms)
{
    cli x;
    int st;
    FILE *f;
    size_t n = 0;

    cli_spawn(&x, args, both);
    st = cli_wait(&x, timeout_ms);
    if (buf) {
        buf[0] = '\0';
        if ((f = fopen(x.out, "r"))) {
            n = fread(buf, 1, cap - 1, f);
            fclose(f);
        }
        buf[n] = '\0';
    }
    return st;
}

static int cli_run(const char *const *args, char *buf, size_t cap, long timeout_ms)
{
    return cli_run_out(args, 0, buf, cap, timeout_ms);
}

static int key_exists(it_env *e, const char *name)
{
    char key[128];
    size_t kl = it_key(key, sizeof key, "rl:", name, strlen(name), NULL);
    return rt_redis_exists(e->rc, key, kl) == 1;
}

/* The pid a command wrote into path, 0 while the file is not complete. */
static pid_t read_pid(const char *path)
{
    FILE *f = fopen(path, "r");
    long v = 0;
    char nl = 0;

    if (!f)
        return 0;
    if (fscanf(f, "%ld%c", &v, &nl) != 2 || nl != '\n')
        v = 0;
    fclose(f);
    return (pid_t)v;
}

static int gone(pid_t pid)
{
    return kill(pid, 0) != 0 && errno == ESRCH;
}

static int setup(void **state)
{
    int rc = it_setup(state);
    it_env *e;

    if (rc != 0)
        return rc;
    e = *state;
    snprintf(tmpdir, sizeof tmpdir, "%s", e->redis->dir);
    setenv("RLOCK_URL", e->redis->url, 1);
    return 0;
}

/* ---- exec ------------------------------------------------------------ */

static void test_exec_status(void **state)
{
    it_env *e = *state;
    char marker[400], script[500];
    rl_client *c;
    rl_lock *l;
    struct stat sb;

    IT_EQ(cli_run((const char *[]){ "exec", "st", "--", "true", NULL }, NULL, 0, 20000), 0);
    IT_EQ(cli_run((const char *[]){ "exec", "st", "--", "sh", "-c", "exit 3", NULL }, NULL, 0,
                  20000), 3);
    IT_EQ(cli_run((const char *[]){ "exec", "st", "sh", "-c", "kill -9 $$", NULL }, NULL, 0,
                  20000), 128 + 9);
    IT_EQ(cli_run((const char *[]){ "exec", "st", "--", "/nonexistent/cmd", NULL }, NULL, 0,
                  20000), 127);
    IT_EQ(key_exists(e, "st"), 0);
    /* Usage errors. */
    IT_EQ(cli_run((const char *[]){ "exec", "st", NULL }, NULL, 0, 20000), ST_USAGE);
    IT_EQ(cli_run((const char *[]){ "frobnicate", NULL }, NULL, 0, 20000), ST_USAGE);

    /* Held by another: --wait 0 gives ST_NOTTAKEN and never runs the command; a
     * wait that runs out too. */
    c = it_client(e, 0);
    l = it_lock(c, "st");
    IT_RC(rl_lock_acquire(l), RL_OK);
    snprintf(marker, sizeof marker, "%s/ran", tmpdir);
    snprintf(script, sizeof script, "touch %s", marker);
    IT_EQ(cli_run((const char *[]){ "exec", "--wait", "0", "st", "--", "sh", "-c", script,
                                     NULL }, NULL, 0, 20000), ST_NOTTAKEN);
    IT_EQ(cli_run((const char *[]){ "exec", "--wait", "300", "st", "--", "sh", "-c", script,
                                     NULL }, NULL, 0, 20000), ST_NOTTAKEN);
    IT_EQ(stat(marker, &sb), -1);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);

    /* Unreachable Redis: ST_FAILED (a bad URL: ST_USAGE); the password never printed, even one
     * holding a '/' (base64) that ends no host. */
    for (int k = 0; k < 2; k++) {
        static const char *const urls[] = { "redis://:hunter2@127.0.0.1:1",
                                             "redis://:hun/ter2@127.0.0.1:1" };
        char err[256] = "";
        cli x;
        FILE *f;
        char errpath[400];
        posix_spawn_file_actions_t fa;
        const char *argv[8] = { RLOCK_CLI, "--url", urls[k], "list", NULL };
        int rc;
        snprintf(errpath, sizeof errpath, "%s/err", tmpdir);
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 2, errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        memset(&x, 0, sizeof x);
        rc = posix_spawn(&x.pid, RLOCK_CLI, &fa, NULL, (char *const *)argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        IT_EQ(rc, 0);
        IT_EQ(cli_wait(&x, 20000), k == 0 ? ST_FAILED : ST_USAGE);   /* unreachable; bad URL */
        f = fopen(errpath, "r");
        assert_non_null(f);
        err[fread(err, 1, sizeof err - 1, f)] = '\0';
        fclose(f);
        if (!strstr(err, k == 0 ? "redis://***@127.0.0.1:1" : "--url 'redis://***'") ||
            strstr(err, "hunter2") ||
            strstr(err, "ter2"))
            fail_msg("stderr: %s", err);
    }

    /* The command inherits none of rlock's connections to Redis. */
    {
        char out[4096];
        IT_EQ(cli_run((const char *[]){ "exec", "fds", "--", "sh", "-c",
                                         "ls -l /proc/$$/fd; echo done", NULL },
                      out, sizeof out, 20000), 0);
        if (!strstr(out, "done") || strstr(out, "socket:"))
            fail_msg("the command inherited sockets:\n%s", out);
    }
}

/* rlock exec NAME -- sh -c 'echo $$ > pidfile; exec sleep 60', started;
 * returns once the lock is held and the command runs (its pid). */
static pid_t start_sleeper(it_env *e, cli *x, const char *name, const char *const *opts,
                           char *pidfile, size_t cap)
{
    static int seq;
    const char *args[24];
    char script[1200];
    int n = 0, i;
    pid_t child = 0;

    snprintf(pidfile, cap, "%s/cmd.%d.pid", tmpdir, ++seq);
    snprintf(script, sizeof script, "echo $$ > %s.tmp && mv %s.tmp %s && exec sleep 60",
             pidfile, pidfile, pidfile);
    args[n++] = "exec";
    for (i = 0; opts && opts[i]; i++)
        args[n++] = opts[i];
    args[n++] = name;
    args[n++] = "--";
    args[n++] = "sh";
    args[n++] = "-c";
    args[n++] = script;
    args[n] = NULL;
    cli_start(x, args);
    IT_WAIT((child = read_pid(pidfile)) > 0 || cli_reaped(x), 10000);
    if (x->done)
        fail_msg("rlock exec ended early, status 0x%x", x->status);
    assert_true(key_exists(e, name));
    return child;
}

static void test_exec_lost_on_delete(void **state)
{
    it_env *e = *state;
    char pidfile[400], key[64];
    size_t kl = it_key(key, sizeof key, "rl:", "del", 3, NULL);
    pid_t child;
    cli x;
    redisReply *r;

    /* Renewed every 200 ms: the delete is seen at the next renewal. */
    child = start_sleeper(e, &x, "del", (const char *[]){ "--watchdog-lease", "600",
                                                          "--grace", "300", NULL },
                          pidfile, sizeof pidfile);
    r = redisCommand(e->rc, "DEL %b", key, kl);
    assert_non_null(r);
    freeReplyObject(r);
    IT_EQ(cli_wait(&x, 10000), ST_LOST);
    assert_true(gone(child));
    cli_kill(&x);
}

static void test_exec_lost_on_pause(void **state)
{
    it_env *e = *state;
    char pidfile[400];
    redisReply *r;
    pid_t child;
    int64_t t0;
    cli x;

    /* Redis stops answering for longer than the lease: the lease can no
     * longer be proven, and the command is stopped. */
    child = start_sleeper(e, &x, "pause", (const char *[]){ "--watchdog-lease", "900",
                                                            "--grace", "200", NULL },
                          pidfile, sizeof pidfile);
    r = redisCommand(e->rc, "CLIENT PAUSE 4000 ALL");
    assert_non_null(r);
    IT_EQ(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    t0 = rt_now_ms();
    IT_WAIT(gone(child), 3000);
    /* Not before the lease (less its margin) could have run out. */
    IT_RANGE(rt_now_ms() - t0, 400, 3000);
    IT_EQ(cli_wait(&x, 15000), ST_LOST);
    cli_kill(&x);
}

static void test_exec_sigterm(void **state)
{
    it_env *e = *state;
    char pidfile[400];
    pid_t child;
    cli x;

    child = start_sleeper(e, &x, "term", NULL, pidfile, sizeof pidfile);
    IT_EQ(kill(x.pid, SIGTERM), 0);
    IT_EQ(cli_wait(&x, 10000), 128 + SIGTERM);
    assert_true(gone(child));
    IT_EQ(key_exists(e, "term"), 0);

    /* A command that ignores SIGTERM is killed after the grace. */
    {
        const char *args[] = { "exec", "--grace", "300", "term2", "--", "sh", "-c", NULL,
                               NULL };
        char script[1400];
        snprintf(pidfile, sizeof pidfile, "%s/trap.pid", tmpdir);
        snprintf(script, sizeof script,
                 "trap '' TERM; echo $$ > %s.tmp && mv %s.tmp %s; while :; do sleep 1; done",
                 pidfile, pidfile, pidfile);
        args[7] = script;
        cli_start(&x, args);
        IT_WAIT((child = read_pid(pidfile)) > 0, 10000);
        IT_EQ(kill(x.pid, SIGINT), 0);
        IT_EQ(cli_wait(&x, 10000), 128 + SIGINT);
        assert_true(gone(child));
        IT_EQ(key_exists(e, "term2"), 0);
    }

    /* Stopped while waiting for the lock: the wait ends, nothing runs. */
    {
        rl_client *c = it_client(e, 0);
        rl_lock *l = it_lock(c, "term3");
        IT_RC(rl_lock_acquire(l), RL_OK);
        cli_start(&x, (const char *[]){ "exec", "term3", "--", "true", NULL });
        /* Its wait is on: it listens for the release notice. */
        IT_WAIT(rt_redis_numsub(e->rc, "rl:{term3}:release", 18) == 1, 10000);
        IT_EQ(kill(x.pid, SIGTERM), 0);
        IT_EQ(cli_wait(&x, 10000), 128 + SIGTERM);
        IT_RC(rl_lock_release(l), RL_OK);
        rl_lock_free(l);
        rl_client_free(c);
    }
}

/* ---- exec: the command's whole process group (issue 21 item 10) ------- */

/* rlock exec NAME -- sh -c '<trap> sleep 60 & echo $! > gpid; <then>':
 * started; returns the grandchild's pid (the sleep) once the lock is held.
 * `then` is "wait" (the shell waits for the sleep) or an exit. */
/* SIGUSR1, SIGUSR2 and SIGALRM sent to rlock reach the command, which
 * decides (here: it notes it, goes on, then exits 7): rlock was killed by
 * them, the command ran on with nobody renewing the lease and the name
 * stayed blocked until it ran out. While rlock waits for the lock, one
 * ends the wait like SIGTERM. */
static void test_exec_relays_user_signals(void **state)
{
    static const int sigs[] = { SIGUSR1, SIGUSR2, SIGALRM };
    it_env *e = *state;
    char pidfile[350], seen[350], script[2400];
    const char *args[] = { "exec", "relay", "--", "sh", "-c", NULL, NULL };
    pid_t child;
    size_t i;
    cli x;

    for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        snprintf(pidfile, sizeof pidfile, "%s/relay%zu.pid", tmpdir, i);
        snprintf(seen, sizeof seen, "%s/relay%zu.seen", tmpdir, i);
        snprintf(script, sizeof script, "trap 'touch %s' USR1 USR2 ALRM; echo $$ > %s.tmp && "
                 "mv %s.tmp %s; n=0; while [ ! -e %s ] && [ $n -lt 200 ]; do sleep 0.05; "
                 "n=$((n+1)); done; [ -e %s ] && exit 7; exit 9", seen, pidfile, pidfile,
                 pidfile, seen, seen);
        args[5] = script;
        cli_start(&x, args);
        IT_WAIT((child = read_pid(pidfile)) > 0 || cli_reaped(&x), 10000);
        IT_EQ(kill(x.pid, sigs[i]), 0);
        IT_EQ(cli_wait(&x, 10000), 7);
        assert_true(gone(child));
        IT_EQ(key_exists(e, "relay"), 0);
    }
    {
        rl_client *c = it_client(e, 0);
        rl_lock *l = it_lock(c, "relay2");
        IT_RC(rl_lock_acquire(l), RL_OK);
        cli_start(&x, (const char *[]){ "exec", "relay2", "--", "true", NULL });
        IT_WAIT(rt_redis_numsub(e->rc, "rl:{relay2}:release", 19) == 1, 10000);
        IT_EQ(kill(x.pid, SIGUSR1), 0);
        IT_EQ(cli_wait(&x, 10000), 128 + SIGUSR1);
        IT_RC(rl_lock_release(l), RL_OK);
        rl_lock_free(l);
        rl_client_free(c);
    }
}

static pid_t start_grandparent(cli *x, const char *name, const char *const *opts,
                               const char *trap, const char *then)
{
    static int seq;
    const char *args[24];
    char script[1400], pidfile[400];
    int n = 0, i;
    pid_t grandchild = 0;

    snprintf(pidfile, sizeof pidfile, "%s/gpid.%d", tmpdir, ++seq);
    snprintf(script, sizeof script, "%s sleep 60 & echo $! > %s.tmp && mv %s.tmp %s; %s",
             trap, pidfile, pidfile, pidfile, then);
    args[n++] = "exec";
    for (i = 0; opts && opts[i]; i++)
        args[n++] = opts[i];
    args[n++] = name;
    args[n++] = "--";
    args[n++] = "sh";
    args[n++] = "-c";
    args[n++] = script;
    args[n] = NULL;
    cli_start(x, args);
    IT_WAIT((grandchild = read_pid(pidfile)) > 0 || cli_reaped(x), 10000);
    if (x->done && !grandchild)
        fail_msg("rlock exec ended early, status 0x%x", x->status);
    return grandchild;
}

/* Wait until the lock's key is gone (the release); the grandchild must be
 * gone by then. The old rlock released with the grandchild still running
 * (reparented to init, for the rest of its 60 s). */
static void assert_gone_before_release(it_env *e, const char *name, pid_t grandchild)
{
    int alive_at_release;

    IT_WAIT(!key_exists(e, name), 10000);
    alive_at_release = !gone(grandchild);
    if (alive_at_release) {
        kill(grandchild, SIGKILL);
        fail_msg("'%s' released while the command's child %d still ran", name,
                 (int)grandchild);
    }
}

static void test_exec_group_on_sigterm(void **state)
{
    it_env *e = *state;
    pid_t g;
    cli x;

    g = start_grandparent(&x, "gterm", NULL, "", "wait");
    IT_EQ(key_exists(e, "gterm"), 1);
    IT_EQ(kill(x.pid, SIGTERM), 0);
    assert_gone_before_release(e, "gterm", g);
    IT_EQ(cli_wait(&x, 10000), 128 + SIGTERM);
}

/* A command and its child that ignore SIGTERM and SIGINT: killed as a
 * group after the grace, then released. */
static void test_exec_group_ignoring(void **state)
{
    it_env *e = *state;
    int64_t t0;
    pid_t g;
    cli x;

    g = start_grandparent(&x, "gign", (const char *[]){ "--grace", "300", NULL },
                          "trap '' TERM INT;", "wait");
    IT_EQ(kill(x.pid, SIGINT), 0);
    t0 = rt_now_ms();
    assert_gone_before_release(e, "gign", g);
    IT_RANGE(rt_now_ms() - t0, 250, 10000);    /* not before the grace */
    IT_EQ(cli_wait(&x, 10000), 128 + SIGINT);
}

static void test_exec_group_on_loss(void **state)
{
    it_env *e = *state;
    char key[64];
    size_t kl = it_key(key, sizeof key, "rl:", "gloss", 5, NULL);
    redisReply *r;
    pid_t g;
    cli x;

    g = start_grandparent(&x, "gloss", (const char *[]){ "--watchdog-lease", "600",
                                                            "--grace", "300", NULL },
                          "trap '' TERM;", "wait");
    r = redisCommand(e->rc, "DEL %b", key, kl);
    assert_non_null(r);
    freeReplyObject(r);
    IT_EQ(cli_wait(&x, 10000), ST_LOST);
    if (!gone(g)) {
        kill(g, SIGKILL);
        fail_msg("rlock exited 4 with the command's child %d still running", (int)g);
    }

    /* A fixed lease that runs out while the command runs: the same. */
    g = start_grandparent(&x, "gfixed", (const char *[]){ "--lease", "700", "--grace", "300",
                                                          NULL },
                          "trap '' TERM;", "wait");
    IT_EQ(cli_wait(&x, 10000), ST_LOST);
    if (!gone(g)) {
        kill(g, SIGKILL);
        fail_msg("rlock exited 4 (fixed lease) with the command's child %d still running",
                 (int)g);
    }
}

/* rlock's own statuses never read like a command's usual ones: `exec n --
 * sh -c 'exit 2'` used to exit 2 as "Redis unreachable" did (issue 25). */
static void test_exec_status_apart(void **state)
{
    it_env *e = *state;
    char cmd[32];
    rl_client *c;
    rl_lock *l;
    int k, own[3];

    for (k = 1; k <= 5; k++) {
        snprintf(cmd, sizeof cmd, "exit %d", k);
        IT_EQ(cli_run((const char *[]){ "exec", "ap", "--", "sh", "-c", cmd, NULL }, NULL, 0,
                      20000), k);
    }
    own[0] = cli_run((const char *[]){ "-u", "redis://127.0.0.1:1", "exec", "ap", "--", "true",
                                       NULL }, NULL, 0, 20000);
    own[1] = cli_run((const char *[]){ "exec", "ap", NULL }, NULL, 0, 20000);
    c = it_client(e, 0);
    l = it_lock(c, "ap");
    IT_RC(rl_lock_acquire(l), RL_OK);
    own[2] = cli_run((const char *[]){ "exec", "--wait", "0", "ap", "--", "true", NULL }, NULL,
                     0, 20000);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);
    IT_EQ(own[0], ST_FAILED);
    IT_EQ(own[1], ST_USAGE);
    IT_EQ(own[2], ST_NOTTAKEN);
}

/* A refused option or value: one line that names the option and the rule,
 * with the usage status, never the whole help; a bad URL or client name is
 * a usage error that names its option, not "cannot use" the URL (issue 25). */
static void test_option_errors(void **state)
{
    static const struct {
        const char *args[8];
        const char *want, *never;
    } cases[] = {
        { { "--grace", "2000", "exec", "n", "--", "true" }, "--grace is an option of exec",
          "Usage" },
        { { "exec", "--lease", "5", "n", "--", "true" }, "--lease: 5 ms is below the shortest "
          "lease, 10 ms", "not a number" },
        { { "exec", "--wait", "5s", "n", "--", "true" }, "--wait: '5s' is not a number of "
          "milliseconds", "lease" },
        { { "exec", "--grace", "99999999999", "n", "--", "true" }, "--grace: 99999999999 ms is "
          "past the longest", "lease" },
        { { "-n", "my job", "list" }, "--name 'my job': client_name must be 1..64", "URL" },
        { { "-u", "redis://h:notaport", "list" }, "--url 'redis://***': bad URL: port",
          "cannot use" },
        { { "list", "--bogus" }, "list: unknown option '--bogus'", "Usage" },
        { { "list", "--wait", "3" }, "--wait is an option of exec", "Usage" },
        { { "exec", "--wait" }, "exec: --wait needs a value", "Usage" },
        { { NULL } , "a command is needed", "Usage" },
        { { "exec", "n" }, "exec takes [OPTIONS] NAME [--] CMD", "Usage" },
        { { "show" }, "show takes [OPTIONS] NAME", "Usage" },
        { { "frobnicate" }, "unknown command 'frobnicate': exec, list", "Usage" },
        { { "exec", "-l", "100", "-W", "100", "n", "true" }, "exec: --lease (a fixed lease) and "
          "--watchdog-lease (a renewed one) exclude each other", "Usage" },
        { { "list", "--json=1" }, "list: --json takes no value", "'-j'" },
        { { "exec", "--wa", "5", "n", "true" }, "exec: '--wa' is ambiguous: --wait or "
          "--watchdog-lease", "unknown" },
        { { "--help=x", "list" }, "--help takes no value", "'-h'" },
        { { "release", "--force=yes", "n" }, "release: --force takes no value", "'-f'" },
        { { "exec", "n", "--wait", "0", "true" }, "exec: '--wait' after NAME", "No such file" },
        { { "exec", "n", "-w0", "--", "true" }, "exec: '-w0' after NAME", "No such file" },
        { { "--tls-ca-file", "/x", "list" }, "--tls-ca-file needs a URL with TLS (rediss://, "
          "sentinels:// or redlocks://), not RLOCK_URL 'redis://127.0.0.1:", "/x" },
        { { "-u", "rediss://127.0.0.1:1", "--tls-cert", "/x", "list" }, "--tls-cert and "
          "--tls-key go together", "tls_" },
        { { "list", "--tls-c", "/x" }, "list: '--tls-c' is ambiguous: --tls-ca-file, "
          "--tls-ca-dir or --tls-cert", "unknown" },
        { { "show", "--tls-insecure-skip-verify=1", "n" }, "show: --tls-insecure-skip-verify "
          "takes no value", "ambiguous" },
    };
    char out[4096], pattern[RL_NAME_MAX + 2], url[256];
    size_t i;
    int st;
    (void)state;

    snprintf(url, sizeof url, "%s", getenv("RLOCK_URL"));

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        st = cli_run_out(cases[i].args, 1, out, sizeof out, 10000);
        if (st != ST_USAGE || !strstr(out, cases[i].want) || strstr(out, cases[i].never) ||
            strchr(out, '\n') != out + strlen(out) - 1)
            fail_msg("rlock %s %s: exit %d, wanted %d and one line with \"%s\":\n%s",
                     cases[i].args[0] ? cases[i].args[0] : "", cases[i].args[1] ?
                     cases[i].args[1] : "", st, ST_USAGE, cases[i].want, out);
    }
    /* A bad URL from the environment names it, not an option not given. */
    setenv("RLOCK_URL", "redis://:pw@h:notaport", 1);
    st = cli_run_out((const char *[]){ "list", NULL }, 1, out, sizeof out, 10000);
    if (st != ST_USAGE || !strstr(out, "RLOCK_URL 'redis://***': bad URL: port") ||
        strstr(out, "--url"))
        fail_msg("RLOCK_URL=redis://:pw@h:notaport rlock list: exit %d:\n%s", st, out);
    st = cli_run_out((const char *[]){ "-u", "redis://h:x", "list", NULL }, 1, out, sizeof out,
                     10000);
    if (st != ST_USAGE || !strstr(out, "--url 'redis://***': bad URL"))
        fail_msg("rlock -u redis://h:x list (RLOCK_URL set): exit %d:\n%s", st, out);
    setenv("RLOCK_URL", url, 1);
    /* --help lists --version among the options "before or after COMMAND":
     * after it, it was an unknown option. */
    st = cli_run_out((const char *[]){ "list", "--version", NULL }, 1, out, sizeof out, 10000);
    if (st != 0 || strncmp(out, "rlock ", 6) != 0)
        fail_msg("rlock list --version: exit %d:\n%s", st, out);
    st = cli_run_out((const char *[]){ "exec", "-V", NULL }, 1, out, sizeof out, 10000);
    if (st != 0 || strncmp(out, "rlock ", 6) != 0)
        fail_msg("rlock exec -V: exit %d:\n%s", st, out);
    /* A pattern longer than a name is the command line's fault (it was
     * 125, "invalid argument", as if Redis had failed). */
    memset(pattern, '*', RL_NAME_MAX + 1);
    pattern[RL_NAME_MAX + 1] = '\0';
    st = cli_run_out((const char *[]){ "list", pattern, NULL }, 1, out, sizeof out, 10000);
    if (st != ST_USAGE || !strstr(out, "list: a pattern is at most 1024 bytes"))
        fail_msg("rlock list <%d bytes>: exit %d:\n%s", RL_NAME_MAX + 1, st, out);
}

/* A key of the name that is not rlock's (a string SET by hand) blocks the
 * name: show, list and exec say so, naming the key, and fail. It was "not
 * held" (exit 0) for show, left out by list, a raw WRONGTYPE with a script
 * sha by exec (issue 25). */
static void test_foreign_key(void **state)
{
    it_env *e = *state;
    static const char *const cmds[][6] = {
        { "show", "job1", NULL }, { "list", NULL }, { "list", "job*", NULL },
        { "--json", "show", "job1", NULL }, { "exec", "job1", "--", "true", NULL },
    };
    char out[4096];
    redisReply *r;
    size_t i;
    int st;

    r = redisCommand(e->rc, "SET rl:{job1} v");
    freeReplyObject(r);
    for (i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        st = cli_run_out(cmds[i], 1, out, sizeof out, 20000);
        if (st != ST_FAILED || !strstr(out, "key rl:{job1} of lock 'job1'") ||
            !strstr(out, "not rlock's") || strstr(out, "not held") || strstr(out, "script:"))
            fail_msg("rlock %s %s: exit %d:\n%s", cmds[i][0], cmds[i][1] ? cmds[i][1] : "", st,
                     out);
    }
    r = redisCommand(e->rc, "GET rl:{job1}");
    assert_string_equal(r->str, "v");   /* left as it was */
    freeReplyObject(r);
    /* Its name's control bytes are shown as \xNN, as in the table: the
     * line that names it printed them as they were, to the terminal. */
    r = redisCommand(e->rc, "SET %s v", "rl:{j\x1b]0;t\x07}");
    freeReplyObject(r);
    st = cli_run_out((const char *[]){ "list", "j*", NULL }, 1, out, sizeof out, 20000);
    if (st != ST_FAILED || strchr(out, 0x1b) || strchr(out, 0x07) ||
        !strstr(out, "key rl:{j\\x1b]0;t\\x07} of lock 'j\\x1b]0;t\\x07'"))
        fail_msg("rlock list j*: exit %d:\n%s", st, out);
}

/* JSON: a number is a number (null when unknown), never a string; the
 * thread was "1" beside a numeric pid (issue 25). Holders: this process's,
 * one without an owner record, a field rlock did not write. */
static void test_json_types(void **state)
{
    it_env *e = *state;
    static const char *const numeric[] = { "thread", "count", "since_ms", "age_ms", "pid",
                                            "started_ms", "lease_left_ms", "waiters",
                                            "permits", "free_permits" };
    rl_client *c = it_client(e, 0);
    rl_lock *l = it_lock(c, "js");
    char out[4096], want[64], *p;
    redisReply *r;
    size_t i;

    IT_RC(rl_lock_acquire(l), RL_OK);
    r = redisCommand(e->rc, "HSET rl:{js2} 00000000-0000-4000-8000-00000000abcd:3 1 odd 1");
    freeReplyObject(r);
    IT_EQ(cli_run((const char *[]){ "--json", "list", "js*", NULL }, out, sizeof out, 20000), 0);
    for (i = 0; i < sizeof numeric / sizeof numeric[0]; i++) {
        snprintf(want, sizeof want, "\"%s\": ", numeric[i]);
        for (p = strstr(out, want); p; p = strstr(p + 1, want)) {
            p += strlen(want);
            if (!(*p >= '0' && *p <= '9') && *p != '-' && strncmp(p, "null", 4) != 0)
                fail_msg("\"%s\" is not a number:\n%s", numeric[i], out);
        }
    }
    snprintf(want, sizeof want, "\"pid\": %d, ", (int)getpid());
    if (!strstr(out, "\"thread\": 1, \"reader\": false") || !strstr(out, want) ||
        !strstr(out, "\"thread\": 3, \"reader\": false, \"count\": 1, \"since_ms\": null") ||
        !strstr(out, "\"thread\": null") || !strstr(out, "\"pid\": null"))
        fail_msg("list --json:\n%s", out);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);
}

/* A field written by hand is shown as a holder whose owner is the
 * field's text: JSON escapes it like every other string, the table and
 * show print its control bytes as \xNN (the owner was put between quotes
 * as it was, "a"b", and its escapes reached the terminal). */
static void test_json_odd_fields(void **state)
{
    it_env *e = *state;
    char out[4096];
    redisReply *r;

    r = redisCommand(e->rc, "HSET rl:{odd} %s 1", "q\"b\\s\x1b[2J");
    freeReplyObject(r);
    IT_EQ(cli_run((const char *[]){ "--json", "show", "odd", NULL }, out, sizeof out, 20000), 0);
    if (!strstr(out, "\"owner\": \"q\\\"b\\\\s\\u001b[2J\""))
        fail_msg("show --json:\n%s", out);
    IT_EQ(cli_run((const char *[]){ "list", "odd", NULL }, out, sizeof out, 20000), 0);
    if (strchr(out, 0x1b) || !strstr(out, "q\"b\\x5cs\\x1b"))
        fail_msg("list:\n%s", out);
    IT_EQ(cli_run((const char *[]){ "show", "odd", NULL }, out, sizeof out, 20000), 0);
    if (strchr(out, 0x1b) || !strstr(out, "q\"b\\x5cs\\x1b[2J"))
        fail_msg("show:\n%s", out);
    /* A name is any bytes; JSON is UTF-8: a byte that is not part of a
     * UTF-8 sequence is U+FFFD (it was written as it was: invalid JSON). */
    {
        rl_client *c = it_client(e, 0);
        rl_lock *l = it_lock(c, "utf\xe9 \xc3\xa9 \xed\xa0\x80");
        IT_RC(rl_lock_acquire(l), RL_OK);
        IT_EQ(cli_run((const char *[]){ "--json", "list", "utf*", NULL }, out, sizeof out,
                      20000), 0);
        if (!strstr(out, "\"name\": \"utf\\ufffd \xc3\xa9 \\ufffd\\ufffd\\ufffd\""))
            fail_msg("list --json:\n%s", out);
        IT_RC(rl_lock_release(l), RL_OK);
        rl_lock_free(l);
        rl_client_free(c);
    }
}

/* The command exits and leaves a child behind in its group: stopped too
 * before the release; rlock exits with the command's status. */
static void test_exec_group_on_exit(void **state)
{
    it_env *e = *state;
    pid_t g;
    cli x;

    g = start_grandparent(&x, "gexit", NULL, "", "exit 3");
    assert_gone_before_release(e, "gexit", g);
    IT_EQ(cli_wait(&x, 10000), 3);
}

/* A command stopped (SIGSTOP, not from a terminal) when rlock is told to
 * stop: the group is continued along with the SIGTERM, so that it ends at
 * once instead of after the grace. */
static void test_exec_group_stopped(void **state)
{
    it_env *e = *state;
    int64_t t0;
    pid_t g;
    cli x;

    g = start_grandparent(&x, "gstop", (const char *[]){ "--grace", "5000", NULL }, "",
                          "wait");
    IT_EQ(kill(g, SIGSTOP), 0);
    IT_EQ(kill(x.pid, SIGTERM), 0);
    t0 = rt_now_ms();
    assert_gone_before_release(e, "gstop", g);
    IT_RANGE(rt_now_ms() - t0, 0, 4000);       /* not the grace's SIGKILL */
    IT_EQ(cli_wait(&x, 10000), 128 + SIGTERM);
}

/* ---- list, show, owner identity -------------------------------------- */

static void test_list_show(void **state)
{
    it_env *e = *state;
    char out[8192], pidfile[300], host[256], want[512];
    rl_options o;
    rl_client *c;
    rl_lock *l;
    cli holder, waiter;
    redisReply *r;
    it_hash h;
    char key[64];
    size_t kl;
    int64_t before = 0;

    assert_int_equal(gethostname(host, sizeof host), 0);
    /* Another process holds "alpha"; another waits for it. */
    start_sleeper(e, &holder, "alpha", (const char *[]){ "--name", "holder-one", NULL },
                  pidfile, sizeof pidfile);
    cli_start(&waiter, (const char *[]){ "exec", "alpha", "--", "true", NULL });
    /* This process holds "beta" twice, under its own name. */
    it_options(&o, e->redis->url, 0, 0);
    o.client_name = "tester.2";
    c = it_client_opts(&o);
    l = it_lock(c, "beta");
    before = (int64_t)time(NULL) * 1000 - 1000;
    IT_RC(rl_lock_acquire(l), RL_OK);
    IT_RC(rl_lock_acquire(l), RL_OK);

    /* The value: count and since, the since kept by reentry. */
    kl = it_key(key, sizeof key, "rl:", "beta", 4, NULL);
    IT_EQ(it_hgetall(e->rc, key, kl, &h), 0);
    assert_string_equal(h.value, "2");
    IT_RANGE(h.since_ms, before, before + 60000);

    IT_WAIT(({
                r = redisCommand(e->rc, "PUBSUB NUMSUB rl:{alpha}:release");
                int on = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
                         r->element[1]->integer == 1;
                if (r)
                    freeReplyObject(r);
                on;
            }), 10000);

    IT_EQ(cli_run((const char *[]){ "list", NULL }, out, sizeof out, 20000), 0);
    /* alpha: the holder's host, rlock's pid, its name, count 1, one waiter. */
    snprintf(want, sizeof want, " %s ", host);
    if (!strstr(out, "alpha ") || !strstr(out, want) || !strstr(out, "holder-one") ||
        !strstr(out, "tester.2"))
        fail_msg("list:\n%s", out);
    {
        char line[1024], line2[1024], pid[32];
        const char *a = strstr(out, "\nalpha "), *b = strstr(out, "\nbeta ");
        if (!a || !b)
            fail_msg("list:\n%s", out);
        snprintf(line, sizeof line, "%.*s", (int)strcspn(a + 1, "\n"), a + 1);
        snprintf(line2, sizeof line2, "%.*s", (int)strcspn(b + 1, "\n"), b + 1);
        snprintf(pid, sizeof pid, " %d ", (int)holder.pid);
        if (!strstr(line, pid) || !strstr(line, " 1 ") || !strstr(line, "Z ") ||
            !strstr(line, "s ") || line[strlen(line) - 1] != '1')
            fail_msg("alpha's line: %s (want pid %d, count 1, since, lease, 1 waiter)", line,
                     (int)holder.pid);
        snprintf(pid, sizeof pid, " %d ", (int)getpid());
        if (!strstr(line2, pid) || !strstr(line2, " 2 ") || !strstr(line2, "tester.2"))
            fail_msg("beta's line: %s (want pid %d, count 2)", line2, (int)getpid());
    }
    /* A pattern. */
    IT_EQ(cli_run((const char *[]){ "list", "bet*", NULL }, out, sizeof out, 20000), 0);
    if (strstr(out, "alpha") || !strstr(out, "beta"))
        fail_msg("list bet*:\n%s", out);

    /* show, and JSON. */
    IT_EQ(cli_run((const char *[]){ "show", "alpha", NULL }, out, sizeof out, 20000), 0);
    snprintf(want, sizeof want, "pid:       %d\n", (int)holder.pid);
    if (!strstr(out, want) || !strstr(out, "client:    holder-one") ||
        !strstr(out, "count:     1") || !strstr(out, "waiting:     1 "))
        fail_msg("show alpha:\n%s", out);
    IT_EQ(cli_run((const char *[]){ "--json", "show", "beta", NULL }, out, sizeof out, 20000),
          0);
    snprintf(want, sizeof want, "\"pid\": %d, \"client_name\": \"tester.2\"", (int)getpid());
    if (!strstr(out, want) || !strstr(out, "\"count\": 2"))
        fail_msg("show --json beta:\n%s", out);
    IT_EQ(cli_run((const char *[]){ "show", "free-one", NULL }, out, sizeof out, 20000), 0);
    if (!strstr(out, "not held"))
        fail_msg("show free-one:\n%s", out);

    /* A holder without an owner record: shown, as unknown. */
    r = redisCommand(e->rc, "HSET rl:{gamma} 00000000-0000-4000-8000-00000000abcd:3 1");
    freeReplyObject(r);
    IT_EQ(cli_run((const char *[]){ "list", "gamma", NULL }, out, sizeof out, 20000), 0);
    if (!strstr(out, "gamma ") || !strstr(out, "unknown") || !strstr(out, "00000000 "))
        fail_msg("list gamma:\n%s", out);

    /* Lock-delay: the "~delay" field is not a holder; a lost hold's
     * tombstone is shown as such. */
    r = redisCommand(e->rc, "HSET rl:{delta} 00000000-0000-4000-8000-00000000abcd:3 1 ~delay 700");
    freeReplyObject(r);
    r = redisCommand(e->rc, "HSET rl:{omega} ~delay 5000");
    freeReplyObject(r);
    r = redisCommand(e->rc, "PEXPIRE rl:{omega} 60000");
    freeReplyObject(r);
    IT_EQ(cli_run((const char *[]){ "show", "delta", NULL }, out, sizeof out, 20000), 0);
    if (strstr(out, "~delay") || !strstr(out, "lock-delay:  700 ms") ||
        strstr(out, "a hold was lost") || !strstr(out, "count:     1"))
        fail_msg("show delta:\n%s", out);
    IT_EQ(cli_run((const char *[]){ "show", "omega", NULL }, out, sizeof out, 20000), 0);
    if (strstr(out, "~delay") || strstr(out, "holder:") ||
        !strstr(out, "lock-delay:  5000 ms") || !strstr(out, "a hold was lost"))
        fail_msg("show omega:\n%s", out);

    /* The connection names: rlock:<name>:<host>:<pid>:<uuid8>. */
    r = redisCommand(e->rc, "CLIENT LIST");
    assert_non_null(r);
    snprintf(want, sizeof want, "name=rlock:tester.2:%s:%d:", host, (int)getpid());
    if (!strstr(r->str, want))
        fail_msg("CLIENT LIST lacks %s:\n%s", want, r->str);
    snprintf(want, sizeof want, "name=rlock:holder-one:%s:%d:", host, (int)holder.pid);
    if (!strstr(r->str, want))
        fail_msg("CLIENT LIST lacks %s:\n%s", want, r->str);
    freeReplyObject(r);

    IT_RC(rl_lock_release(l), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);
    kill(holder.pid, SIGTERM);
    IT_EQ(cli_wait(&holder, 10000), 128 + SIGTERM);
    IT_EQ(cli_wait(&waiter, 10000), 0);
}

static void test_release_force_wakes(void **state)
{
    it_env *e = *state;
    char pidfile[400], out[4096];
    int64_t t0, t1;
    cli holder, waiter;

    /* Held for 30 s leases by another process; a waiter in a third. */
    start_sleeper(e, &holder, "stuck", NULL, pidfile, sizeof pidfile);
    cli_start(&waiter, (const char *[]){ "exec", "stuck", "--", "true", NULL });
    IT_WAIT(rt_redis_numsub(e->rc, "rl:{stuck}:release", 18) == 1, 10000);
    IT_EQ(cli_run((const char *[]){ "release", "stuck", NULL }, NULL, 0, 20000), ST_USAGE);
    t0 = rt_now_ms();
    IT_EQ(cli_run((const char *[]){ "release", "--force", "stuck", NULL }, out, sizeof out,
                  20000), 0);
    /* The waiter took it, ran `true` and exited: well within the lease. */
    IT_EQ(cli_wait(&waiter, 25000), 0);
    t1 = rt_now_ms();
    print_message("wake latency after release --force: %lld ms (lease 30000)\n",
                  (long long)(t1 - t0));
    IT_RANGE(t1 - t0, 0, 2000);
    /* The holder learns it at its next renewal (every 10 s): ST_LOST. */
    IT_EQ(cli_wait(&holder, 15000), ST_LOST);
}

/* When a holder's flag rose (on_lost): ms, 0 before. */
static void note_flag(const char *name, size_t len, void *payload)
{
    int64_t zero = 0;

    (void)name;
    (void)len;
    atomic_compare_exchange_strong((_Atomic int64_t *)payload, &zero, rt_now_ms());
}

/* Issue 21 item 7 through the command: a holder with a lock-delay (1500,
 * renewed every 3000) force-released by `rlock release --force` learns it
 * at its next renewal; a waiter must not get in before its flag rose and
 * the delay went by after it (it got in 1.5 s before the flag). */
static void test_release_force_delay(void **state)
{
    it_env *e = *state;
    _Atomic int64_t flag_at = 0;
    unsigned long long rounds;
    rl_client *a, *b;
    rl_lock *la, *lb;
    rl_options o;
    rl_stats st;
    int64_t t_force, t_in;
    it_acq w;

    it_options(&o, e->redis->url, 6000, 1000);
    o.renew_interval_ms = 3000;
    o.lock_delay_ms = 1500;
    o.on_lost = note_flag;
    o.payload = &flag_at;
    a = it_client_opts(&o);
    b = it_client(e, 0);
    la = it_lock(a, "dl-cli");
    lb = it_lock(b, "dl-cli");
    memset(&st, 0, sizeof st);
    st.version = RL_STATS_VERSION;
    IT_RC(rl_lock_acquire(la), RL_OK);
    IT_RC(rl_client_stats(&st, a), RL_OK);
    rounds = st.renewal_rounds;
    IT_WAIT(rl_client_stats(&st, a) == RL_OK && st.renewal_rounds > rounds, 5000);
    it_acq_begin(&w, lb, 30000, 0);
    IT_WAIT(rt_redis_numsub(e->rc, "rl:{dl-cli}:release", 19) >= 1, 5000);
    t_force = rt_now_ms();
    IT_EQ(cli_run((const char *[]){ "release", "--force", "dl-cli", NULL }, NULL, 0, 20000), 0);
    IT_EQ(it_acq_join(&w, 20000), 0);
    IT_RC(w.rc, RL_OK);
    t_in = w.t_return_us / 1000;
    IT_WAIT(atomic_load(&flag_at) != 0, 10000);
    print_message("release --force: the holder's flag %lld ms later, the waiter in %lld ms "
                  "later (delay 1500)\n", (long long)(atomic_load(&flag_at) - t_force),
                  (long long)(t_in - t_force));
    if (t_in < atomic_load(&flag_at) + 1500)
        fail_msg("the waiter got in %lld ms after the holder's flag rose (delay 1500)",
                 (long long)(t_in - atomic_load(&flag_at)));
    IT_RC(rl_lock_release(la), RL_ELOST);
    rl_lock_free(la);
    rl_lock_free(lb);
    rl_client_free(a);
    rl_client_free(b);
}

/* The other kinds: a fair lock's queued waiters are counted (they do not
 * listen on the release channel) and its first waiter is woken by
 * release --force on its own channel; a read-write lock's deadline fields
 * are not shown as holders. */
static void test_fair_and_rw_shown(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0), *o = it_client(e, 0);
    rl_lock *f = NULL, *fo = NULL, *r = NULL, *ro = NULL;
    char out[8192];
    redisContext *sub;
    redisReply *rep;
    it_acq a[2];
    int i;

    IT_RC(rl_lock_new_kind(&f, c, "fa", 2, RL_KIND_FAIR), RL_OK);
    IT_RC(rl_lock_new_kind(&fo, o, "fa", 2, RL_KIND_FAIR), RL_OK);
    IT_RC(rl_lock_acquire(f), RL_OK);
    for (i = 0; i < 2; i++)
        it_acq_begin(&a[i], fo, 30000, 1);
    /* One thread queued in Redis, the other behind it in its process. */
    IT_WAIT(({
                rep = redisCommand(e->rc, "ZCARD rl:{fa}:queue");
                int one = rep && rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
                freeReplyObject(rep);
                one;
            }), 10000);
    IT_EQ(cli_run((const char *[]){ "show", "fa", NULL }, out, sizeof out, 20000), 0);
    if (!strstr(out, "queued:      1 thread(s)") || !strstr(out, "count:     1"))
        fail_msg("show fa:\n%s", out);
    IT_EQ(cli_run((const char *[]){ "--json", "list", "fa", NULL }, out, sizeof out, 20000), 0);
    if (!strstr(out, "\"queued\": 1"))
        fail_msg("list --json fa:\n%s", out);

    sub = rt_redis_connect(e->redis);
    assert_non_null(sub);
    rep = redisCommand(sub, "PSUBSCRIBE rl:{fa}:release:*");
    assert_true(rep && rep->type == REDIS_REPLY_ARRAY);
    freeReplyObject(rep);
    IT_EQ(cli_run((const char *[]){ "release", "--force", "fa", NULL }, out, sizeof out, 20000),
          0);
    rep = redisCommand(e->rc, "PUBLISH rl:{fa}:release:it-sentinel end");
    freeReplyObject(rep);
    IT_EQ(rt_redis_pmessages_before(sub, "end"), 1);     /* the first waiter's process, woken */
    redisFree(sub);
    for (i = 0; i < 2; i++) {   /* each holds in turn: let it go */
        int k = -1;
        IT_WAIT((k = atomic_load(&a[0].state) == 2 ? 0 : atomic_load(&a[1].state) == 2 ? 1 : -1) >=
                    0, 20000);
        it_acq_let_go(&a[k]);
        IT_WAIT(atomic_load(&a[k].state) == 3, 20000);
    }
    for (i = 0; i < 2; i++) {
        assert_int_equal(it_acq_join(&a[i], 20000), 0);
        IT_RC(a[i].rc, RL_OK);
        IT_RC(a[i].release_rc, RL_OK);
    }
    IT_RC(rl_lock_release(f), RL_ELOST);        /* forced away from under it */

    /* Two readers: two holders, no "~d:" deadline among them. */
    IT_RC(rl_lock_new_kind(&r, c, "rw", 2, RL_KIND_READ), RL_OK);
    IT_RC(rl_lock_new_kind(&ro, o, "rw", 2, RL_KIND_READ), RL_OK);
    IT_RC(rl_lock_acquire(r), RL_OK);
    IT_RC(rl_lock_acquire(ro), RL_OK);
    IT_EQ(cli_run((const char *[]){ "--json", "show", "rw", NULL }, out, sizeof out, 20000), 0);
    if (strstr(out, "~d:") || !strstr(out, "\"reader\": true") ||
        strstr(strstr(out, "\"reader\": true") + 1, "\"reader\": true") == NULL)
        fail_msg("show --json rw:\n%s", out);
    IT_RC(rl_lock_release(r), RL_OK);
    IT_RC(rl_lock_release(ro), RL_OK);
    rl_lock_free(f);
    rl_lock_free(fo);
    rl_lock_free(r);
    rl_lock_free(ro);
    rl_client_free(c);
    rl_client_free(o);
}

/* A semaphore of 3: list and show print each holder's permits and the
 * permits left free, JSON says the kind and the counts, a hold past its
 * deadline is not shown; release --force frees every permit through a
 * semaphore's handle and wakes a waiter of another client at once (the
 * holders' leases are 30 s), and the holders' releases say RL_ELOST. */
static void test_semaphore_shown(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0), *o = it_client(e, 0), *w = it_client(e, 0);
    rl_lock *s = NULL, *so = NULL, *sw = NULL;
    char out[8192];
    int64_t t0;
    redisReply *r;
    it_acq a;

    IT_RC(rl_semaphore_new(&s, c, "pool", 4, 3), RL_OK);
    IT_RC(rl_semaphore_new(&so, o, "pool", 4, 3), RL_OK);
    IT_RC(rl_semaphore_new(&sw, w, "pool", 4, 3), RL_OK);
    IT_RC(rl_semaphore_acquire(s, 2, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_semaphore_acquire(so, 1, 0, RL_LEASE_WATCHDOG), RL_OK);
    r = redisCommand(e->rc, "HSET rl:{pool} 00000000-0000-4000-8000-00000000dead:9 %s "
                     "~d:00000000-0000-4000-8000-00000000dead:9 1 "
                     "~k:00000000-0000-4000-8000-00000000dead:9 1", "1 1000");
    freeReplyObject(r);
    it_acq_begin(&a, sw, 20000, 0);     /* one permit: none is free */
    IT_WAIT(rt_redis_numsub(e->rc, "rl:{pool}:release", 17) == 1, 10000);

    IT_EQ(cli_run((const char *[]){ "list", "po*", NULL }, out, sizeof out, 20000), 0);
    if (!strstr(out, " PERMITS ") || !strstr(out, " FREE ") || !strstr(out, " 2/3 ") ||
        !strstr(out, " 1/3 ") || !strstr(out, " 0 ") || strstr(out, "00000000"))
        fail_msg("list po*:\n%s", out);
    IT_EQ(cli_run((const char *[]){ "show", "pool", NULL }, out, sizeof out, 20000), 0);
    if (!strstr(out, "kind:        semaphore\n") || !strstr(out, "permits:     3, 0 free\n") ||
        !strstr(out, "  permits:   2 of 3\n") || !strstr(out, "  permits:   1 of 3\n") ||
        !strstr(out, "waiting:     1 ") || strstr(out, "00000000-") || strstr(out, "~"))
        fail_msg("show pool:\n%s", out);
    IT_EQ(cli_run((const char *[]){ "--json", "show", "pool", NULL }, out, sizeof out, 20000),
          0);
    if (!strstr(out, "\"kind\": \"semaphore\", \"permits\": 3, \"free_permits\": 0, ") ||
        !strstr(out, "\"permits\": 2}") || !strstr(out, "\"permits\": 1}") ||
        strstr(out, "00000000-"))
        fail_msg("show --json pool:\n%s", out);
    /* No PERMITS column without a semaphore. */
    IT_EQ(cli_run((const char *[]){ "list", "nothing*", NULL }, out, sizeof out, 20000), 0);
    if (strstr(out, "PERMITS"))
        fail_msg("list nothing*:\n%s", out);

    t0 = rt_now_ms();
    IT_EQ(cli_run_out((const char *[]){ "release", "--force", "pool", NULL }, 1, out,
                      sizeof out, 20000), 0);
    if (!strstr(out, "released semaphore 'pool', all 3 permits"))
        fail_msg("release --force pool:\n%s", out);
    assert_int_equal(it_acq_join(&a, 20000), 0);
    print_message("semaphore waiter in %lld ms after release --force (leases 30000)\n",
                  (long long)(rt_now_ms() - t0));
    IT_RANGE(rt_now_ms() - t0, 0, 5000);
    IT_RC(a.rc, RL_OK);
    IT_RC(a.release_rc, RL_OK);
    IT_RC(rl_lock_release(s), RL_ELOST);
    IT_RC(rl_lock_release(so), RL_ELOST);
    rl_lock_free(s);
    rl_lock_free(so);
    rl_lock_free(sw);
    rl_client_free(c);
    rl_client_free(o);
    rl_client_free(w);
}

/* ---- the option -------------------------------------------------------- */

static void test_client_name_option(void **state)
{
    it_env *e = *state;
    rl_options o;
    rl_client *c = NULL;
    char longname[RL_CLIENT_NAME_MAX + 2];
    const char *bad[] = { "", "has space", "colon:x", "new\nline", "brace{", longname };
    size_t i;
    redisReply *r;

    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        it_options(&o, e->redis->url, 0, 0);
        o.client_name = bad[i];
        IT_RC(rl_client_new(&c, &o), RL_EINVAL);
    }
    /* Nothing was written. */
    r = redisCommand(e->rc, "DBSIZE");
    IT_EQ(r->integer, 0);
    freeReplyObject(r);
    /* 64 bytes is fine; a layout-2 caller has no name and still works. */
    longname[RL_CLIENT_NAME_MAX] = '\0';
    it_options(&o, e->redis->url, 0, 0);
    o.client_name = longname;
    IT_RC(rl_client_new(&c, &o), RL_OK);
    /* Its owner record: exactly host, pid, name, started, version. */
    r = redisCommand(e->rc, "KEYS rl:owner:{*}");
    IT_EQ(r->elements, 1);
    {
        redisReply *h = redisCommand(e->rc, "HGETALL %s", r->element[0]->str);
        char pid[24];
        IT_EQ(h->elements, 10);
        snprintf(pid, sizeof pid, "%d", (int)getpid());
        for (i = 0; i < h->elements; i += 2) {
            const char *f = h->element[i]->str, *v = h->element[i + 1]->str;
            if (!strcmp(f, "pid"))
                assert_string_equal(v, pid);
            else if (!strcmp(f, "name"))
                assert_string_equal(v, longname);
            else if (!strcmp(f, "version"))
                assert_string_equal(v, rl_version());
            else if (!strcmp(f, "started"))
                /* time() reads a coarse clock: it can lag the record's
                 * CLOCK_REALTIME by a tick across a second's edge. */
                IT_RANGE(atoll(v), (long long)time(NULL) * 1000 - 60000,
                         (long long)time(NULL) * 1000 + 2000);
            else if (strcmp(f, "host") != 0)
                fail_msg("unexpected field %s in the owner record", f);
        }
        freeReplyObject(h);
    }
    freeReplyObject(r);
    rl_client_free(c);
    {
        rl_options o2;
        IT_RC(rl_options_init(&o2, 2), RL_OK);
        o2.url = e->redis->url;
        IT_RC(rl_client_new(&c, &o2), RL_OK);
        rl_client_free(c);
    }
    /* A graceful exit leaves nothing behind, owner records included. */
    r = redisCommand(e->rc, "DBSIZE");
    IT_EQ(r->integer, 0);
    freeReplyObject(r);
}

/* The owner record of the holder of `name` (HGET field): its pid, -1 when
 * there is none. */
static long record_pid(redisContext *rc, const char *name, long long *pttl)
{
    char key[128], okey[128];
    size_t kl = it_key(key, sizeof key, "rl:", name, strlen(name), NULL);
    it_hash h;
    redisReply *r;
    long pid = -1;

    if (it_hgetall(rc, key, kl, &h) != 0 || h.fields != 1 || h.field_len < 36)
        return -1;
    snprintf(okey, sizeof okey, "rl:owner:{%.36s}", h.field);
    r = redisCommand(rc, "HGET %s pid", okey);
    if (r && r->type == REDIS_REPLY_STRING)
        pid = atol(r->str);
    if (r)
        freeReplyObject(r);
    r = redisCommand(rc, "PTTL %s", okey);
    if (pttl)
        *pttl = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -3;
    if (r)
        freeReplyObject(r);
    return pid;
}

static void test_owner_record(void **state)
{
    it_env *e = *state;
    rl_options o;
    rl_client *c;
    rl_lock *l;
    long long pttl = 0;
    int up[2], down[2];
    pid_t child;
    char b;

    /* Lease 300 ms: the record lives 1 s, refreshed while a lock is held. */
    it_options(&o, e->redis->url, 300, 0);
    o.client_name = "rec";
    c = it_client_opts(&o);
    l = it_lock(c, "rec");
    IT_RC(rl_lock_acquire(l), RL_OK);
    IT_EQ(record_pid(e->rc, "rec", &pttl), getpid());
    IT_RANGE(pttl, 1, 1000);
    /* Refreshed while held (its PTTL goes up again), never missing. */
    {
        long long last = pttl;
        int refreshes = 0;
        IT_WAIT(({
                    long long p = 0;
                    long pid = record_pid(e->rc, "rec", &p);
                    if (pid != getpid() || p <= 0)
                        fail_msg("owner record pid %ld, pttl %lld", pid, p);
                    if (p > last + 50)
                        refreshes++;
                    last = p;
                    refreshes >= 3;
                }), 5000);
    }
    IT_RC(rl_lock_release(l), RL_OK);

    /* A fork child is a new owner: its own record, with its pid. */
    assert_int_equal(pipe(up), 0);
    assert_int_equal(pipe(down), 0);
    child = fork();
    if (child == 0) {
        int ok = rl_lock_acquire(l) == RL_OK;
        if (write(up[1], ok ? "y" : "n", 1) != 1 || read(down[0], &b, 1) != 1)
            _exit(2);
        _exit(rl_lock_release(l) == RL_OK ? 0 : 1);
    }
    assert_true(child > 0);
    close(up[1]);
    close(down[0]);
    /* EOF (0) when the child died first: the assertion fails, no hang. */
    IT_EQ(read(up[0], &b, 1), 1);
    IT_EQ(b, 'y');
    /* Written by the child's watchdog once it holds the lock. */
    IT_WAIT(record_pid(e->rc, "rec", NULL) == child, 5000);
    IT_EQ(write(down[1], "g", 1), 1);
    {
        int st;
        IT_WAIT(waitpid(child, &st, WNOHANG) == child, 10000);
        IT_EQ(WIFEXITED(st) && WEXITSTATUS(st) == 0, 1);
    }
    close(up[0]);
    close(down[1]);
    rl_lock_free(l);
    rl_client_free(c);
}

/* list on a Cluster of 3 masters and on a Redlock of 3: every master. */
static void test_cluster_and_redlock(void **state)
{
    char out[16384], url[256];
    const char *names[] = { "n1", "n2", "n3", "n4", "n5", "n6" };
    rt_cluster *cl = rt_cluster_start(3, 0, 1000, NULL);
    rt_redis *node[3] = { NULL, NULL, NULL };
    redisContext *ctl[3] = { NULL, NULL, NULL };
    rl_options o;
    rl_client *c;
    rl_lock *l[6];
    size_t i;
    int nodes_seen = 0;

    (void)state;
    if (!cl)
        fail_msg("cannot start a cluster");
    it_options(&o, cl->url, 0, 0);
    o.client_name = "clus";
    c = it_client_opts(&o);
    for (i = 0; i < 6; i++) {
        l[i] = it_lock(c, names[i]);
        IT_RC(rl_lock_acquire(l[i]), RL_OK);
    }
    IT_EQ(cli_run((const char *[]){ "--url", cl->url, "list", NULL }, out, sizeof out, 20000),
          0);
    for (i = 0; i < 6; i++) {
        char want[64];
        snprintf(want, sizeof want, "\n%s ", names[i]);
        if (!strstr(out, want))
            fail_msg("cluster list lacks %s:\n%s", names[i], out);
    }
    for (i = 0; i < 3; i++) {
        char want[64];
        snprintf(want, sizeof want, ":%d ", cl->node[i]->port);
        nodes_seen += strstr(out, want) != NULL;
    }
    if (nodes_seen < 2 || strstr(out, "unknown") || !strstr(out, "clus"))
        fail_msg("cluster list (names on %d masters):\n%s", nodes_seen, out);
    IT_EQ(cli_run((const char *[]){ "--url", cl->url, "release", "--force", "n4", NULL }, NULL,
                  0, 20000), 0);
    IT_EQ(cli_run((const char *[]){ "--url", cl->url, "show", "n4", NULL }, out, sizeof out,
                  20000), 0);
    if (!strstr(out, "not held"))
        fail_msg("show n4 after release --force:\n%s", out);
    IT_EQ(cli_run((const char *[]){ "--url", cl->url, "exec", "--wait", "0", "n5", "--", "true",
                                     NULL }, NULL, 0, 20000), ST_NOTTAKEN);
    IT_EQ(cli_run((const char *[]){ "--url", cl->url, "exec", "--wait", "0", "n4", "--", "true",
                                     NULL }, NULL, 0, 20000), 0);
    /* A key of a name not rlock's, on the master of its slot: exec and
     * show name it (the slot's master is the one that takes the SET). */
    for (i = 0; i < 3; i++) {
        redisContext *n = redisConnect("127.0.0.1", cl->node[i]->port);
        redisReply *r = n ? redisCommand(n, "SET rl:{ck} v") : NULL;
        freeReplyObject(r);
        redisFree(n);
    }
    IT_EQ(cli_run_out((const char *[]){ "--url", cl->url, "exec", "--wait", "0", "ck", "--",
                                         "true", NULL }, 1, out, sizeof out, 20000), ST_FAILED);
    if (!strstr(out, "key rl:{ck} of lock 'ck'"))
        fail_msg("cluster exec on a foreign key:\n%s", out);
    IT_EQ(cli_run_out((const char *[]){ "--url", cl->url, "show", "ck", NULL }, 1, out,
                      sizeof out, 20000), ST_FAILED);
    if (!strstr(out, "key rl:{ck} of lock 'ck'"))
        fail_msg("cluster show on a foreign key:\n%s", out);
    for (i = 0; i < 6; i++)
        rl_lock_free(l[i]);
    rl_client_free(c);
    rt_cluster_stop(cl);

    /* Redlock: the name on every master, each with the owner record. */
    for (i = 0; i < 3; i++)
        if (rt_redis_open("it_cli", NULL, &node[i], &ctl[i]) != 0)
            fail_msg("cannot start redis %zu", i);
    snprintf(url, sizeof url, "redlock://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
             node[0]->port, node[1]->port, node[2]->port);
    it_options(&o, url, 0, 0);
    o.client_name = "redl";
    c = it_client_opts(&o);
    l[0] = it_lock(c, "rl1");
    IT_RC(rl_lock_acquire(l[0]), RL_OK);
    IT_EQ(cli_run((const char *[]){ "--url", url, "list", NULL }, out, sizeof out, 20000), 0);
    for (i = 0; i < 3; i++) {
        char want[64];
        snprintf(want, sizeof want, "rl1   127.0.0.1:%d ", node[i]->port);
        if (!strstr(out, want))
            fail_msg("redlock list lacks node %d:\n%s", node[i]->port, out);
    }
    if (strstr(out, "unknown") || !strstr(out, "redl"))
        fail_msg("redlock list:\n%s", out);
    IT_EQ(cli_run((const char *[]){ "--url", url, "exec", "--wait", "0", "rl1", "--", "true",
                                     NULL }, NULL, 0, 20000), ST_NOTTAKEN);
    IT_RC(rl_lock_release(l[0]), RL_OK);
    IT_EQ(cli_run((const char *[]){ "--url", url, "exec", "--wait", "0", "rl1", "--", "true",
                                     NULL }, NULL, 0, 20000), 0);
    /* A queue on one node (left there by a single-server fair client):
     * Redlock offers no fair lock, and release --force frees it all the
     * same. */
    IT_RC(rl_lock_acquire(l[0]), RL_OK);
    freeReplyObject(redisCommand(ctl[0], "ZADD rl:{rl1}:queue 1 someone"));
    IT_EQ(cli_run((const char *[]){ "--url", url, "release", "--force", "rl1", NULL }, out,
                  sizeof out, 20000), 0);
    IT_EQ(cli_run((const char *[]){ "--url", url, "exec", "--wait", "0", "rl1", "--", "true",
                                     NULL }, NULL, 0, 20000), 0);
    IT_RC(rl_lock_release(l[0]), RL_ELOST);
    rl_lock_free(l[0]);
    rl_client_free(c);
    /* A key of the name not rlock's on a majority: exec says so at once,
     * naming it (was "cannot reach Redis", retried for the whole wait:
     * forever by default, without a word). */
    freeReplyObject(redisCommand(ctl[1], "SET rl:{rk} v"));
    freeReplyObject(redisCommand(ctl[2], "SET rl:{rk} v"));
    IT_EQ(cli_run_out((const char *[]){ "--url", url, "exec", "rk", "--", "true", NULL }, 1,
                      out, sizeof out, 20000), ST_FAILED);
    if (!strstr(out, "key rl:{rk} of lock 'rk'") || strstr(out, "cannot reach"))
        fail_msg("redlock exec on a foreign key:\n%s", out);
    for (i = 0; i < 3; i++) {
        redisFree(ctl[i]);
        rt_redis_stop(node[i]);
    }
}

/* A user that may not use CLIENT (no SETNAME, no fence) nor write owner
 * records: everything works, and the holder is shown as unknown. */
static void test_acl_without_client(void **state)
{
    it_env *e = *state;
    char url[256], out[4096];
    rl_options o;
    rl_client *c;
    rl_lock *l;
    redisReply *r;

    r = redisCommand(e->rc, "ACL SETUSER locker on >pw ~rl:{* &* +@all -client");
    assert_non_null(r);
    IT_EQ(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    snprintf(url, sizeof url, "redis://locker:pw@127.0.0.1:%d", e->redis->port);
    it_options(&o, url, 0, 0);
    o.client_name = "acl";
    c = it_client_opts(&o);
    l = it_lock(c, "acl");
    IT_RC(rl_lock_acquire(l), RL_OK);
    r = redisCommand(e->rc, "KEYS rl:owner:*");
    IT_EQ(r->elements, 0);
    freeReplyObject(r);
    r = redisCommand(e->rc, "CLIENT LIST");
    if (strstr(r->str, "name=rlock:acl:"))
        fail_msg("a user without CLIENT named its connection:\n%s", r->str);
    freeReplyObject(r);
    IT_EQ(cli_run((const char *[]){ "list", NULL }, out, sizeof out, 20000), 0);
    if (!strstr(out, "\nacl ") || !strstr(out, "unknown"))
        fail_msg("list:\n%s", out);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);
}

/* ---- a terminal's Ctrl-C ------------------------------------------------ */

/* The command of the test below: it records the si_code of every SIGINT it
 * gets (SI_KERNEL from a terminal, SI_USER from kill()), each handled
 * slowly so that one more coming meanwhile is kept pending, not merged. */
static volatile sig_atomic_t int_count;
static volatile sig_atomic_t int_codes[8];

static void on_sigint(int sig, siginfo_t *si, void *ctx)
{
    struct timespec ts = { 0, 100 * 1000000L };

    (void)sig;
    (void)ctx;
    if (int_count < 8)
        int_codes[int_count] = si->si_code;
    int_count++;
    nanosleep(&ts, NULL);
}

static int sigint_recorder(const char *codes_path, const char *pid_path)
{
    struct sigaction sa;
    char tmp[512];
    int64_t until;
    FILE *f;
    int i;

    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigint;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGINT, &sa, NULL);
    alarm(30);
    snprintf(tmp, sizeof tmp, "%s.tmp", pid_path);
    if (!(f = fopen(tmp, "w")))
        return 3;
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
    rename(tmp, pid_path);
    while (int_count == 0)
        pause();
    /* Taken: say so, then leave room for rlock's own, if it sends one. */
    snprintf(tmp, sizeof tmp, "%s.got", pid_path);
    if ((f = fopen(tmp, "w")))
        fclose(f);
    until = rt_now_ms() + 1500;
    while (rt_now_ms() < until)
        rt_sleep_ms(10);
    if (!(f = fopen(codes_path, "w")))
        return 3;
    for (i = 0; i < int_count && i < 8; i++)
        fprintf(f, "%d\n", (int)int_codes[i]);
    fclose(f);
    return 0;
}

/* Run rlock with argv (argv[0] RLOCK_CLI) in a pseudo-terminal and a
 * session of its own: rlock's group is the terminal's foreground group, as
 * under a shell. The terminal's master side in *master. */
static pid_t pty_rlock(const char *const *argv, int *master)
{
    pid_t pid;

    *master = posix_openpt(O_RDWR | O_NOCTTY);
    assert_true(*master >= 0);
    assert_int_equal(grantpt(*master), 0);
    assert_int_equal(unlockpt(*master), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int slave;
        setsid();
        if ((slave = open(ptsname(*master), O_RDWR)) < 0)
            _exit(126);
        dup2(slave, 0);
        dup2(slave, 1);
        dup2(slave, 2);
        closefrom(3);
        execve(RLOCK_CLI, (char *const *)argv, environ);
        _exit(127);
    }
    if (nstarted < (int)(sizeof started / sizeof started[0]))
        started[nstarted++] = pid;
    return pid;
}

/* Review finding: Ctrl-C in a terminal reaches the whole foreground group,
 * rlock and its command alike; rlock passed it on once more, so the
 * command got two (for many programs, "press again to force"). Now the
 * command's group has the terminal (issue 21 item 10): the command gets
 * the terminal's SIGINT, rlock none, and rlock exits with the command's
 * status once the command is gone (130 for one that dies of it; the
 * recorder here exits 0). Run in a pseudo-terminal of its own; rlock is
 * stopped while the command takes the terminal's signal, so that a second
 * one cannot merge with the first while both are pending. */
static void test_exec_terminal_ctrl_c(void **state)
{
    it_env *e = *state;
    char self[300], codes[400], pidfile[400], buf[64];
    const char *argv[16];
    int master, st = 0, n, kernel = 0, user = 0;
    ssize_t len;
    pid_t pid;
    FILE *f;

    len = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(len > 0);
    self[len] = '\0';
    snprintf(codes, sizeof codes, "%s/codes", tmpdir);
    snprintf(pidfile, sizeof pidfile, "%s/rec.pid", tmpdir);
    argv[0] = RLOCK_CLI;
    argv[1] = "exec";
    argv[2] = "--grace";
    argv[3] = "5000";
    argv[4] = "tty";
    argv[5] = "--";
    argv[6] = self;
    argv[7] = "--sigint-recorder";
    argv[8] = codes;
    argv[9] = pidfile;
    argv[10] = NULL;
    pid = pty_rlock(argv, &master);
    IT_WAIT(read_pid(pidfile) > 0, 10000);
    IT_EQ(key_exists(e, "tty"), 1);
    /* The command's group has the terminal (the recorder leads it). */
    IT_EQ(tcgetpgrp(master), read_pid(pidfile));
    {
        char got[420];
        snprintf(got, sizeof got, "%s.got", pidfile);
        IT_EQ(kill(pid, SIGSTOP), 0);
        IT_WAIT(waitpid(pid, &st, WNOHANG | WUNTRACED) == pid && WIFSTOPPED(st), 5000);
        IT_EQ(write(master, "\003", 1), 1);      /* Ctrl-C */
        IT_WAIT(access(got, F_OK) == 0, 5000);
        IT_EQ(kill(pid, SIGCONT), 0);
    }
    IT_WAIT(waitpid(pid, &st, WNOHANG) == pid, 10000);
    IT_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st), 0);
    IT_EQ(key_exists(e, "tty"), 0);
    close(master);
    f = fopen(codes, "r");
    assert_non_null(f);
    while (fgets(buf, sizeof buf, f)) {
        n = atoi(buf);
        kernel += n == SI_KERNEL;
        user += n == SI_USER;
    }
    fclose(f);
    if (kernel != 1 || user != 0)
        fail_msg("the command got %d SIGINT from the terminal and %d from rlock (want 1, 0)",
                 kernel, user);
}

/* The terminal comes back to rlock's group once the command is over: here
 * the command exits and leaves a child that ignores SIGTERM; during the
 * grace before its SIGKILL the terminal is rlock's again, and the lock is
 * released only after the child is gone. */
static void test_exec_terminal_back(void **state)
{
    it_env *e = *state;
    char pidfile[400], script[1400];
    const char *argv[12] = { RLOCK_CLI, "exec", "--grace", "1500", "ttyb", "--", "sh", "-c" };
    int master, st = 0;
    pid_t pid, g = 0;

    snprintf(pidfile, sizeof pidfile, "%s/ttyb.pid", tmpdir);
    snprintf(script, sizeof script,
             "trap '' TERM; sleep 60 & echo $! > %s.tmp && mv %s.tmp %s; exit 0", pidfile,
             pidfile, pidfile);
    argv[8] = script;
    pid = pty_rlock(argv, &master);
    IT_WAIT((g = read_pid(pidfile)) > 0, 10000);
    IT_WAIT(tcgetpgrp(master) == pid, 1000);
    IT_EQ(gone(g), 0);
    IT_EQ(key_exists(e, "ttyb"), 1);
    assert_gone_before_release(e, "ttyb", g);
    IT_WAIT(waitpid(pid, &st, WNOHANG) == pid, 10000);
    IT_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st), 0);
    close(master);
}

/* Ctrl-Z stops the command, whose group has the terminal: rlock stops too
 * (as a shell's job would), with the terminal back; continued in the
 * foreground, it hands the terminal to the command again and continues it. */
static void test_exec_terminal_ctrl_z(void **state)
{
    it_env *e = *state;
    char pidfile[400], script[1400];
    const char *argv[12] = { RLOCK_CLI, "exec", "ttyz", "--", "sh", "-c" };
    int master, st = 0;
    pid_t pid, cmd = 0;

    snprintf(pidfile, sizeof pidfile, "%s/ttyz.pid", tmpdir);
    snprintf(script, sizeof script, "echo $$ > %s.tmp && mv %s.tmp %s; exec sleep 60", pidfile,
             pidfile, pidfile);
    argv[6] = script;
    pid = pty_rlock(argv, &master);
    IT_WAIT((cmd = read_pid(pidfile)) > 0, 10000);
    IT_WAIT(tcgetpgrp(master) == cmd, 1000);
    IT_EQ(write(master, "\032", 1), 1);          /* Ctrl-Z */
    IT_WAIT(waitpid(pid, &st, WNOHANG | WUNTRACED) == pid && WIFSTOPPED(st), 5000);
    IT_EQ(tcgetpgrp(master), pid);
    IT_EQ(kill(pid, SIGCONT), 0);
    IT_WAIT(tcgetpgrp(master) == cmd, 5000);
    IT_EQ(key_exists(e, "ttyz"), 1);
    IT_EQ(kill(pid, SIGTERM), 0);
    IT_WAIT(waitpid(pid, &st, WNOHANG) == pid, 10000);
    IT_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st), 128 + SIGTERM);
    IT_EQ(gone(cmd), 1);
    IT_EQ(key_exists(e, "ttyz"), 0);
    close(master);
}

/* A job control shell, as far as the test needs one: a session of its own
 * on a new pseudo-terminal (its master side in *master), rlock started as
 * a background job (`rlock ... &`: a process group of its own, not the
 * terminal's). The shell reports the job's stop, as `jobs` would, by
 * creating `stopped`, then runs `fg` (the terminal to the job's group, a
 * SIGCONT to it) and exits with rlock's status. The job's pid into
 * `jobpid`. */
static pid_t pty_background(const char *const *argv, int *master, const char *stopped,
                            const char *jobpid)
{
    char slave_name[128];
    pid_t pid;

    *master = posix_openpt(O_RDWR | O_NOCTTY);
    assert_true(*master >= 0);
    assert_int_equal(grantpt(*master), 0);
    assert_int_equal(unlockpt(*master), 0);
    snprintf(slave_name, sizeof slave_name, "%s", ptsname(*master));
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char num[32];
        int slave, st, fd, n;
        pid_t job;
        setsid();
        if ((slave = open(slave_name, O_RDWR)) < 0)
            _exit(126);
        alarm(30);
        if ((job = fork()) == 0) {
            setpgid(0, 0);
            dup2(slave, 0);
            dup2(slave, 1);
            dup2(slave, 2);
            closefrom(3);
            execve(RLOCK_CLI, (char *const *)argv, environ);
            _exit(127);
        }
        setpgid(job, job);
        n = snprintf(num, sizeof num, "%d\n", (int)job);
        if ((fd = open(jobpid, O_WRONLY | O_CREAT | O_TRUNC, 0600)) >= 0) {
            if (write(fd, num, (size_t)n) != n)
                _exit(125);
            close(fd);
        }
        if (waitpid(job, &st, WUNTRACED) != job || !WIFSTOPPED(st))
            _exit(124);
        if ((fd = open(stopped, O_WRONLY | O_CREAT | O_TRUNC, 0600)) >= 0)
            close(fd);
        tcsetpgrp(slave, job);
        kill(-job, SIGCONT);
        while (waitpid(job, &st, 0) != job || WIFSTOPPED(st))
            ;
        _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st));
    }
    if (nstarted < (int)(sizeof started / sizeof started[0]))
        started[nstarted++] = pid;
    return pid;
}

/* Review finding: rlock started in the background (`rlock exec ... &`)
 * handed the terminal to nobody, and a command that reads it was stopped
 * (SIGTTIN) in a group of its own that no shell sees: rlock went on
 * running, holding the lock, and `fg` continued rlock's group only, never
 * the command's; the lock was held until someone killed the command.
 * Now rlock stops with it, as the job it is, and continued in the
 * foreground, hands the command's group the terminal and continues it. */
static void test_exec_background_read(void **state)
{
    it_env *e = *state;
    char stopped[400], jobpid[400], out[400], script[1400], got[64] = "";
    const char *argv[12] = { RLOCK_CLI, "exec", "ttybg", "--", "sh", "-c" };
    int master, st = 0, ok;
    pid_t shell, job = 0;
    FILE *f;

    snprintf(stopped, sizeof stopped, "%s/bg.stopped", tmpdir);
    snprintf(jobpid, sizeof jobpid, "%s/bg.job", tmpdir);
    snprintf(out, sizeof out, "%s/bg.out", tmpdir);
    snprintf(script, sizeof script, "read x && echo \"$x\" > %s.tmp && mv %s.tmp %s", out, out,
             out);
    argv[6] = script;
    shell = pty_background(argv, &master, stopped, jobpid);
    IT_WAIT((job = read_pid(jobpid)) > 0, 10000);
    IT_WAIT(key_exists(e, "ttybg"), 10000);
    ok = RT_WAIT_UNTIL(access(stopped, F_OK) == 0, 5000);
    if (!ok) {
        int held = key_exists(e, "ttybg");
        kill(job, SIGTERM);         /* rlock stops the command's group */
        RT_WAIT_UNTIL(waitpid(shell, &st, WNOHANG) == shell, 10000);
        close(master);
        fail_msg("5 s after the command's read of the terminal rlock still runs, the lock %s",
                 held ? "held" : "free");
    }
    /* fg: the command's group gets the terminal (neither the shell's nor
     * rlock's), reads the line and exits 0. */
    IT_WAIT(tcgetpgrp(master) > 0 && tcgetpgrp(master) != shell && tcgetpgrp(master) != job,
            5000);
    IT_EQ(write(master, "hello\n", 6), 6);
    IT_WAIT(waitpid(shell, &st, WNOHANG) == shell, 10000);
    IT_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st), 0);
    f = fopen(out, "r");
    assert_non_null(f);
    assert_non_null(fgets(got, sizeof got, f));
    fclose(f);
    assert_string_equal(got, "hello\n");
    IT_EQ(key_exists(e, "ttybg"), 0);
    close(master);
}

/* The state letter of pid in /proc (R, S, T, Z, ...), 0: gone. */
static char proc_state(pid_t pid)
{
    char path[64], buf[512], *p;
    FILE *f;
    size_t n;

    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (!(f = fopen(path, "r")))
        return 0;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : 0;
}

/* Review finding: rlock in a pipeline whose other end reads the terminal
 * (`rlock exec NAME -- cmd | less`). rlock's job is the terminal's
 * foreground group, and rlock hands the terminal to the command's group:
 * the reader's read then raises SIGTTIN, which the kernel sends to the
 * reader's whole group, rlock's. rlock stopped (the default action) while
 * the command, in a group of its own, ran on: nobody renewed the lease,
 * and the name came free while the command still ran. The same for a
 * `kill -TSTP %job` from the shell. A stop of rlock must stop the command
 * first. Here a job control shell on a pseudo-terminal runs rlock (lease
 * 1000 ms) and the reader as one foreground job. */
static void test_exec_pipeline_reader_stop(void **state)
{
    it_env *e = *state;
    char cmdpid[400], rdpid[400], script[1400], reader[2400], slave_name[128];
    const char *argv[12] = { RLOCK_CLI, "exec", "--watchdog-lease", "1000", "ttypipe", "--",
                             "sh", "-c" };
    int master, st = 0, ok;
    pid_t shell, job, cmd = 0, rd = 0;
    char cs = 0;

    snprintf(cmdpid, sizeof cmdpid, "%s/pipe.cmd", tmpdir);
    snprintf(rdpid, sizeof rdpid, "%s/pipe.rd", tmpdir);
    snprintf(script, sizeof script, "echo $$ > %s.tmp && mv %s.tmp %s; exec sleep 60", cmdpid,
             cmdpid, cmdpid);
    snprintf(reader, sizeof reader,
             "echo $$ > %s.tmp && mv %s.tmp %s; while [ ! -s %s ]; do sleep 0.05; done; "
             "read x < /dev/tty", rdpid, rdpid, rdpid, cmdpid);
    argv[8] = script;
    master = posix_openpt(O_RDWR | O_NOCTTY);
    assert_true(master >= 0);
    assert_int_equal(grantpt(master), 0);
    assert_int_equal(unlockpt(master), 0);
    snprintf(slave_name, sizeof slave_name, "%s", ptsname(master));
    /* The shell: rlock leads the job's group, the reader joins it, and the
     * job gets the terminal; then waits for rlock. */
    job = 0;
    shell = fork();
    assert_true(shell >= 0);
    if (shell == 0) {
        int slave, i;
        pid_t kid[2];
        setsid();
        if ((slave = open(slave_name, O_RDWR)) < 0)
            _exit(126);
        alarm(30);
        for (i = 0; i < 2; i++) {
            if ((kid[i] = fork()) == 0) {
                setpgid(0, i ? kid[0] : 0);
                dup2(slave, 0);
                dup2(slave, 1);
                dup2(slave, 2);
                closefrom(3);
                if (i)
                    execl("/bin/sh", "sh", "-c", reader, (char *)NULL);
                else
                    execve(RLOCK_CLI, (char *const *)argv, environ);
                _exit(127);
            }
            setpgid(kid[i], kid[0]);
        }
        tcsetpgrp(slave, kid[0]);
        while (waitpid(kid[0], &st, 0) != kid[0])
            ;
        _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st));
    }
    if (nstarted < (int)(sizeof started / sizeof started[0]))
        started[nstarted++] = shell;
    IT_WAIT((cmd = read_pid(cmdpid)) > 0, 10000);
    IT_WAIT((rd = read_pid(rdpid)) > 0, 10000);
    job = getpgid(rd);
    IT_WAIT(key_exists(e, "ttypipe"), 10000);
    /* The reader's read stops rlock's group (rlock among it). */
    ok = RT_WAIT_UNTIL(proc_state(job) == 'T', 5000);
    if (ok)
        ok = RT_WAIT_UNTIL((cs = proc_state(cmd)) == 'T', 2000);
    if (!ok) {
        char js = proc_state(job);
        int held = key_exists(e, "ttypipe");
        /* What a lease of 1000 ms does meanwhile, the command running. */
        RT_WAIT_UNTIL(!key_exists(e, "ttypipe"), 3000);
        held = held * 2 + key_exists(e, "ttypipe");
        cs = proc_state(cmd);
        kill(-cmd, SIGKILL);
        kill(-job, SIGKILL);
        RT_WAIT_UNTIL(waitpid(shell, &st, WNOHANG) == shell, 10000);
        close(master);
        fail_msg("rlock '%c', the command '%c' 3 s later; the lock %s", js ? js : '-',
                 cs ? cs : '-', held == 2 ? "came free while the command ran"
                                          : held ? "held" : "free, the command running");
    }
    /* Both stopped while the lease runs out; the job continued without its
     * reader, rlock finds the lease lost, stops the command and exits ST_LOST. */
    IT_WAIT(!key_exists(e, "ttypipe"), 5000);
    IT_EQ(proc_state(cmd), 'T');
    kill(rd, SIGKILL);
    kill(-job, SIGCONT);
    IT_WAIT(waitpid(shell, &st, WNOHANG) == shell, 15000);
    IT_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st), ST_LOST);
    IT_WAIT(gone(cmd), 5000);
    close(master);
}

/* ---- URLs ------------------------------------------------------------- */

/* Issue 21 item 11: whatever shape the URL has, its userinfo never reaches
 * the terminal, given with -u or in $RLOCK_URL, for every subcommand. The
 * old tool echoed the secret for 6 of these 14 shapes. */
static void test_url_never_shown(void **state)
{
    static const char *urls[] = {
        "redis//:S3cr3t@127.0.0.1:6379", "redis:/:S3cr3t@127.0.0.1:6379",
        ":S3cr3t@127.0.0.1:6379", "redis://S3cr3t@127.0.0.1:1", "redis://:S3cr3t@127.0.0.1:1",
        "redis://u:S3cr3t@127.0.0.1:1", "S3cr3t@h", "redis://:S3cr3t@h:notaport",
        "rediss://:S3cr3t@h", "http://u:S3cr3t@h", "redis://:S3cr3t", "redis://:S3cr3t@",
        "redis:///:S3cr3t@h", "redis://:p@ss:S3cr3t@127.0.0.1:1",
    };
    static const char *cmds[][5] = {
        { "list", NULL }, { "show", "n", NULL }, { "release", "--force", "n", NULL },
        { "exec", "n", "--", "true", NULL },
    };
    char out[2048];
    size_t i, k;
    int st;
    (void)state;

    for (i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        for (k = 0; k < sizeof cmds / sizeof cmds[0]; k++) {
            const char *args[8] = { "-u", urls[i] };
            memcpy(args + 2, cmds[k], sizeof cmds[k]);
            st = cli_run_out(args, 1, out, sizeof out, 10000);
            if (strstr(out, "S3cr3t") || strstr(out, "3cr3"))
                fail_msg("rlock -u '%s' %s: the secret shown: %s", urls[i], cmds[k][0], out);
            if (st != ST_FAILED && st != ST_USAGE)   /* unreachable, or a bad URL */
                fail_msg("rlock -u '%s' %s exited %d: %s", urls[i], cmds[k][0], st, out);
        }
        setenv("RLOCK_URL", urls[i], 1);
        st = cli_run_out((const char *const[]){ "list", NULL }, 1, out, sizeof out, 10000);
        if (strstr(out, "S3cr3t"))
            fail_msg("RLOCK_URL='%s' rlock list: the secret shown: %s", urls[i], out);
        if (st != ST_FAILED && st != ST_USAGE)
            fail_msg("RLOCK_URL='%s' rlock list exited %d: %s", urls[i], st, out);
    }
}

/* ---- TLS --------------------------------------------------------------- */

/* rlock with args over TLS: its exit status, stdout and stderr into out;
 * fails the test unless it exits `want` and out holds `has`. */
static void tls_run(const char *const *args, int want, const char *has, char *out, size_t cap)
{
    int st = cli_run_out(args, 1, out, cap, 20000);
    char line[1200] = "rlock";
    size_t i;

    if (st == want && strstr(out, has))
        return;
    for (i = 0; args[i]; i++)
        snprintf(line + strlen(line), sizeof line - strlen(line), " %s", args[i]);
    fail_msg("%s: exit %d, wanted %d and \"%s\":\n%s", line, st, want, has, out);
}

/* Issue 24: every subcommand over rediss:// with --tls-ca-file, on a
 * server whose plain port the test's own clients use; the statuses and
 * lines of each failure. */
static void test_tls(void **state)
{
    rt_tls *t = rt_tls_make();
    rt_redis *srv = NULL, *mtls = NULL;
    redisContext *ctl = NULL, *mctl = NULL;
    char args[1600], url[128], purl[128], murl[128], out[8192];
    rl_options o;
    rl_client *c;
    rl_lock *l;
    int port = rt_free_port(), mport;

    (void)state;
    if (!t)
        fail_msg("cannot make the certificates (openssl)");
    if (rt_redis_open("it_cli", rt_tls_server_args(t, port, NULL, NULL, 0, args, sizeof args),
                      &srv, &ctl) != 0)
        fail_msg("cannot start a TLS redis-server");
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", port);
    snprintf(purl, sizeof purl, "rediss://:S3cr3t@127.0.0.1:%d", port);

    /* A holder on the plain port: list, show and exec see it over TLS;
     * release --force frees it; exec then runs under the lock. */
    it_options(&o, srv->url, 0, 0);
    o.client_name = "plainholder";
    c = it_client_opts(&o);
    l = it_lock(c, "tl1");
    IT_RC(rl_lock_acquire(l), RL_OK);
    tls_run((const char *[]){ "-u", url, "--tls-ca-file", t->ca, "list", NULL }, 0,
            "plainholder", out, sizeof out);
    tls_run((const char *[]){ "-u", url, "show", "--tls-ca-file", t->ca, "tl1", NULL }, 0,
            "plainholder", out, sizeof out);
    tls_run((const char *[]){ "-u", url, "exec", "--tls-ca-file", t->ca, "--wait", "0", "tl1",
                              "--", "true", NULL }, ST_NOTTAKEN, "held by another", out,
            sizeof out);
    tls_run((const char *[]){ "-u", url, "--tls-ca-file", t->ca, "release", "--force", "tl1",
                              NULL }, 0, "released 'tl1'", out, sizeof out);
    IT_EQ(rt_redis_exists(ctl, "rl:{tl1}", 8), 0);
    tls_run((const char *[]){ "-u", url, "--tls-ca-file", t->ca, "exec", "--wait", "0", "tl1",
                              "--", "echo", "ran-over-tls", NULL }, 0, "ran-over-tls", out,
            sizeof out);
    IT_RC(rl_lock_release(l), RL_ELOST);
    rl_lock_free(l);
    rl_client_free(c);

    /* No --tls-ca-file: the system's CAs do not know the test's CA. Exit
     * 125 as for any connection that fails, the cause named; no password. */
    tls_run((const char *[]){ "-u", purl, "list", NULL }, ST_FAILED,
            "its certificate is signed by an unknown CA", out, sizeof out);
    if (strstr(out, "S3cr3t") || !strstr(out, "rediss://***@127.0.0.1:"))
        fail_msg("rlock list, unknown CA:\n%s", out);
    tls_run((const char *[]){ "-u", url, "exec", "n", "--", "true", NULL }, ST_FAILED,
            "unknown CA", out, sizeof out);
    /* --tls-insecure-skip-verify gets through, and says what it costs. */
    tls_run((const char *[]){ "-u", url, "--tls-insecure-skip-verify", "list", NULL }, 0,
            "rlock: warning: --tls-insecure-skip-verify: no certificate is verified", out,
            sizeof out);
    /* rediss:// to the plain port: Redis waits for the end of a "command"
     * that never comes; the line says what to check. */
    snprintf(args, sizeof args, "rediss%s", srv->url + 5);
    tls_run((const char *[]){ "-u", args, "--tls-ca-file", t->ca, "list", NULL }, ST_FAILED,
            "a plain port: then redis://", out, sizeof out);
    /* A TLS option with the plain port's URL: a usage error naming it. */
    tls_run((const char *[]){ "-u", srv->url, "--tls-ca-file", t->ca, "list", NULL }, ST_USAGE,
            "--tls-ca-file needs a URL with TLS", out, sizeof out);
    /* --tls-ca-dir: a directory of CAs, as openssl rehash lays it out. */
    snprintf(args, sizeof args, "mkdir %s/cadir && cp %s %s/cadir/ && %s rehash %s/cadir",
             tmpdir, t->ca, tmpdir, getenv("RL_OPENSSL") ? getenv("RL_OPENSSL") : "openssl",
             tmpdir);
    IT_EQ(system(args), 0);
    snprintf(args, sizeof args, "%s/cadir", tmpdir);
    tls_run((const char *[]){ "-u", url, "--tls-ca-dir", args, "show", "tl1", NULL }, 0,
            "not held", out, sizeof out);
    redisFree(ctl);
    rt_redis_stop(srv);

    /* A certificate for another name: the mismatch said; --tls-server-name
     * names what to expect. */
    port = rt_free_port();
    if (rt_redis_open("it_cli", rt_tls_server_args(t, port, t->other_crt, t->other_key, 0, args,
                                                   sizeof args), &srv, &ctl) != 0)
        fail_msg("cannot start a TLS redis-server (other name)");
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", port);
    tls_run((const char *[]){ "-u", url, "--tls-ca-file", t->ca, "list", NULL }, ST_FAILED,
            "does not name the host connected to (hostname mismatch", out, sizeof out);
    tls_run((const char *[]){ "-u", url, "--tls-ca-file", t->ca, "--tls-server-name",
                              "other.example", "list", NULL }, 0, "", out, sizeof out);
    redisFree(ctl);
    rt_redis_stop(srv);

    /* Mutual TLS: without a client certificate the server refuses, and
     * rlock says so; with --tls-cert and --tls-key it works. */
    mport = rt_free_port();
    if (rt_redis_open("it_cli", rt_tls_server_args(t, mport, NULL, NULL, 1, args, sizeof args),
                      &mtls, &mctl) != 0)
        fail_msg("cannot start a TLS redis-server (auth clients)");
    snprintf(murl, sizeof murl, "rediss://127.0.0.1:%d", mport);
    /* TLS 1.3: the server's alert may come after rlock's first command, and
     * the reset that answers that command can discard it. The words stay (it
     * was "cannot reach Redis ... Connection reset by peer" one time in two):
     * several tries, each must say it. */
    for (int k = 0; k < 8; k++)
        tls_run((const char *[]){ "-u", murl, "--tls-ca-file", t->ca, "list", NULL }, ST_FAILED,
                "the server requires a client certificate", out, sizeof out);
    /* A client certificate the server refuses (expired): said so, the same
     * way (it was OpenSSL's "sslv3 alert certificate expired", or that reset). */
    for (int k = 0; k < 8; k++)
        tls_run((const char *[]){ "-u", murl, "--tls-ca-file", t->ca, "--tls-cert",
                                  t->expired_crt, "--tls-key", t->expired_key, "list", NULL },
                ST_FAILED, "the server refused the client certificate (tls_cert_file", out,
                sizeof out);
    tls_run((const char *[]){ "-u", murl, "--tls-ca-file", t->ca, "--tls-cert", t->client_crt,
                              "--tls-key", t->client_key, "exec", "--wait", "0", "tm", "--",
                              "echo", "mutual", NULL }, 0, "mutual", out, sizeof out);
    tls_run((const char *[]){ "-u", murl, "--tls-ca-file", t->ca, "--tls-cert", t->client_crt,
                              "--tls-key", t->client_key, "show", "tm", NULL }, 0, "not held",
            out, sizeof out);
    redisFree(mctl);
    rt_redis_stop(mtls);
    rt_tls_free(t);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_exec_status, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_status_apart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_option_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_types, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_odd_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_lost_on_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_lost_on_pause, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_sigterm, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_relays_user_signals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_terminal_ctrl_c, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_terminal_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_terminal_ctrl_z, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_background_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_pipeline_reader_stop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_group_on_sigterm, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_group_ignoring, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_group_on_loss, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_group_on_exit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_group_stopped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_show, setup, teardown),
        cmocka_unit_test_setup_teardown(test_release_force_wakes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_release_force_delay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fair_and_rw_shown, setup, teardown),
        cmocka_unit_test_setup_teardown(test_semaphore_shown, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_name_option, setup, teardown),
        cmocka_unit_test_setup_teardown(test_owner_record, setup, teardown),
        cmocka_unit_test_setup_teardown(test_acl_without_client, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_and_redlock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_url_never_shown, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls, setup, teardown),
    };

    if (argc == 4 && strcmp(argv[1], "--sigint-recorder") == 0)
        return sigint_recorder(argv[2], argv[3]);
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
