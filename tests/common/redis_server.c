#include "redis_server.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define RT_START_TIMEOUT_MS 10000
#define RT_STOP_TIMEOUT_MS 10000
#define RT_PORT_ATTEMPTS 5

/* Index of the port's value in argv (binary, "--port", value, ...). */
#define RT_ARGV_PORT 2

/* Append one argument (copied) to r->argv, keeping it NULL-terminated. */
static int push_arg(rt_redis *r, const char *s, size_t n)
{
    char **v = realloc(r->argv, (size_t)(r->argc + 2) * sizeof *v);
    if (v == NULL)
        return -1;
    r->argv = v;
    v[r->argc] = strndup(s, n);
    if (v[r->argc] == NULL)
        return -1;
    r->argc++;
    v[r->argc] = NULL;
    return 0;
}

/* Split extra arguments on blanks; '...' and "..." group (quotes removed). */
static int push_extra_args(rt_redis *r, const char *s)
{
    char *word = malloc(strlen(s) + 1);
    int rc = 0;

    if (word == NULL)
        return -1;
    while (*s != '\0' && rc == 0) {
        size_t n = 0;
        int have = 0;
        while (*s == ' ' || *s == '\t' || *s == '\n')
            s++;
        while (*s != '\0' && *s != ' ' && *s != '\t' && *s != '\n') {
            if (*s == '\'' || *s == '"') {
                char q = *s++;
                while (*s != '\0' && *s != q)
                    word[n++] = *s++;
                if (*s == q)
                    s++;
            } else {
                word[n++] = *s++;
            }
            have = 1;
        }
        if (have)
            rc = push_arg(r, word, n);
    }
    free(word);
    return rc;
}

static void remove_dir_contents(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[PATH_MAX];

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}

/* Print the server's stdout/stderr and log, to explain a failed start. */
static void dump_logs(const rt_redis *r)
{
    static const char *const files[] = { "stdout.log", "redis.log" };
    char path[PATH_MAX];
    char buf[512];
    size_t i;

    for (i = 0; i < sizeof files / sizeof files[0]; i++) {
        FILE *f;
        snprintf(path, sizeof path, "%s/%s", r->dir, files[i]);
        f = fopen(path, "r");
        if (f == NULL)
            continue;
        fprintf(stderr, "rltest: ---- %s ----\n", path);
        while (fgets(buf, sizeof buf, f) != NULL)
            fputs(buf, stderr);
        fclose(f);
    }
}

static void close_fds_from_3(void)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3U, ~0U, 0U) == 0)
        return;
#endif
    {
        long max = sysconf(_SC_OPEN_MAX);
        int fd;
        if (max < 0 || max > 65536)
            max = 65536;
        for (fd = 3; fd < max; fd++)
            close(fd);
    }
}

pid_t rt_spawn_logged(const char *binary, char *const argv[], const char *out_path)
{
    int out_fd, null_fd;
    pid_t parent = getpid(), pid;
    sigset_t none;

    out_fd = open(out_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (out_fd < 0 || null_fd < 0) {
        fprintf(stderr, "rltest: open %s: %s\n", out_path, strerror(errno));
        if (out_fd >= 0)
            close(out_fd);
        if (null_fd >= 0)
            close(null_fd);
        return -1;
    }
    sigemptyset(&none);
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "rltest: fork: %s\n", strerror(errno));
        close(out_fd);
        close(null_fd);
        return -1;
    }
    if (pid == 0) {
        /* Only async-signal-safe calls from here on. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(126);
        sigprocmask(SIG_SETMASK, &none, NULL);
        dup2(null_fd, 0);
        dup2(out_fd, 1);
        dup2(out_fd, 2);
        /* Inherited sockets (a proxy's, a client's) must not stay open in
         * the server, or closing them in the test would not close them. */
        close_fds_from_3();
        execv(binary, argv);
        {
            static const char msg[] = "rltest: execv failed\n";
            ssize_t ignored = write(2, msg, sizeof msg - 1);
            (void)ignored;
        }
        _exit(127);
    }
    close(out_fd);
    close(null_fd);
    return pid;
}

static int spawn(rt_redis *r)
{
    char path[PATH_MAX];
    pid_t pid;

    snprintf(path, sizeof path, "%s/stdout.log", r->dir);
    pid = rt_spawn_logged(r->binary, r->argv, path);
    if (pid < 0)
        return -1;
    r->pid = pid;
    return 0;
}

static redisContext *connect_port(int port, const char *password, long timeout_ms)
{
    struct timeval tv;
    redisContext *c;

    tv.tv_sec = timeout_ms / 1000;
    tv.tv_usec = (timeout_ms % 1000) * 1000;
    c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (c == NULL)
        return NULL;
    if (c->err) {
        redisFree(c);
        return NULL;
    }
    if (password != NULL) {
        redisReply *rep = redisCommand(c, "AUTH %s", password);
        int ok = rep != NULL && rep->type == REDIS_REPLY_STATUS;
        if (rep != NULL)
            freeReplyObject(rep);
        if (!ok) {
            redisFree(c);
            return NULL;
        }
    }
    return c;
}

/* Whether the server on r->port is our process (not some other server). */
static int answers_as_ours(const rt_redis *r)
{
    redisContext *c = connect_port(r->port, r->password, 500);
    redisReply *rep;
    int ours = 0;
    char want[64];

    if (c == NULL)
        return 0;
    rep = redisCommand(c, "INFO server");
    if (rep != NULL && rep->type == REDIS_REPLY_STRING) {
        snprintf(want, sizeof want, "process_id:%d\r", (int)r->pid);
        ours = strstr(rep->str, want) != NULL;
    }
    if (rep != NULL)
        freeReplyObject(rep);
    if (ours) {
        rep = redisCommand(c, "PING");
        ours = rep != NULL && rep->type == REDIS_REPLY_STATUS && strcmp(rep->str, "PONG") == 0;
        if (rep != NULL)
            freeReplyObject(rep);
    }
    redisFree(c);
    return ours;
}

/*
 * Spawn and wait until it answers PING. Returns 0; -1 when it failed for
 * good; 1 when the process exited early (e.g. the port was taken).
 */
static int spawn_and_wait(rt_redis *r, int64_t deadline)
{
    int status;

    if (spawn(r) != 0)
        return -1;
    for (;;) {
        pid_t w = waitpid(r->pid, &status, WNOHANG);
        if (w == r->pid) {
            r->pid = -1;
            return 1;
        }
        if (answers_as_ours(r))
            return 0;
        if (rt_now_ms() >= deadline) {
            fprintf(stderr, "rltest: redis-server on port %d did not answer PING within %d ms\n",
                    r->port, RT_START_TIMEOUT_MS);
            kill(r->pid, SIGKILL);
            waitpid(r->pid, &status, 0);
            r->pid = -1;
            return -1;
        }
        rt_sleep_ms(10);
    }
}

static void set_port(rt_redis *r, int port)
{
    char buf[16];
    r->port = port;
    snprintf(buf, sizeof buf, "%d", port);
    free(r->argv[RT_ARGV_PORT]);
    r->argv[RT_ARGV_PORT] = strdup(buf);
    snprintf(r->url, sizeof r->url, "redis://127.0.0.1:%d", port);
}

static void free_handle(rt_redis *r)
{
    int i;
    for (i = 0; i < r->argc; i++)
        free(r->argv[i]);
    free(r->argv);
    free(r->binary);
    free(r->password);
    free(r);
}

rt_redis *rt_redis_start(const char *extra_args)
{
    rt_redis *r = calloc(1, sizeof *r);
    char logfile[PATH_MAX];
    const char *tmp = getenv("TMPDIR");
    int64_t deadline;
    int attempt, i;

    if (r == NULL)
        return NULL;
    r->pid = -1;
    r->binary = rt_find_binary("RL_REDIS_SERVER", "redis-server");
    if (r->binary == NULL) {
        free(r);
        return NULL;
    }
    if (tmp == NULL || tmp[0] == '\0')
        tmp = "/tmp";
    snprintf(r->dir, sizeof r->dir, "%s/rltest-redis-XXXXXX", tmp);
    if (mkdtemp(r->dir) == NULL) {
        fprintf(stderr, "rltest: mkdtemp %s: %s\n", r->dir, strerror(errno));
        free_handle(r);
        return NULL;
    }
    snprintf(logfile, sizeof logfile, "%s/redis.log", r->dir);

    if (push_arg(r, r->binary, strlen(r->binary)) != 0 || push_arg(r, "--port", 6) != 0 ||
        push_arg(r, "0", 1) != 0 || push_arg(r, "--bind", 6) != 0 ||
        push_arg(r, "127.0.0.1", 9) != 0 || push_arg(r, "--save", 6) != 0 ||
        push_arg(r, "", 0) != 0 || push_arg(r, "--appendonly", 12) != 0 ||
        push_arg(r, "no", 2) != 0 || push_arg(r, "--daemonize", 11) != 0 ||
        push_arg(r, "no", 2) != 0 || push_arg(r, "--dir", 5) != 0 ||
        push_arg(r, r->dir, strlen(r->dir)) != 0 || push_arg(r, "--logfile", 9) != 0 ||
        push_arg(r, logfile, strlen(logfile)) != 0 ||
        (extra_args != NULL && push_extra_args(r, extra_args) != 0)) {
        fprintf(stderr, "rltest: out of memory\n");
        rt_redis_stop(r);
        return NULL;
    }
    for (i = 0; i + 1 < r->argc; i++) {
        if (strcmp(r->argv[i], "--requirepass") == 0) {
            free(r->password);
            r->password = strdup(r->argv[i + 1]);
        }
    }

    deadline = rt_now_ms() + RT_START_TIMEOUT_MS;
    for (attempt = 0; attempt < RT_PORT_ATTEMPTS; attempt++) {
        int port = rt_free_port();
        int rc;
        if (port < 0)
            break;
        set_port(r, port);
        rc = spawn_and_wait(r, deadline);
        if (rc == 0)
            return r;
        if (rc < 0)
            break;
        /* Exited early: maybe someone took the port between our probe and
         * the server's bind. Try another port. */
        fprintf(stderr, "rltest: redis-server exited at start (port %d), attempt %d\n", port,
                attempt + 1);
    }
    fprintf(stderr, "rltest: could not start %s\n", r->binary);
    dump_logs(r);
    rt_redis_stop(r);
    return NULL;
}

static void terminate(rt_redis *r)
{
    if (r->pid <= 0)
        return;
    if (r->paused) {
        kill(r->pid, SIGCONT);
        r->paused = 0;
    }
    kill(r->pid, SIGTERM);
    rt_child_wait(r->pid, RT_STOP_TIMEOUT_MS);
    r->pid = -1;
}

void rt_redis_stop(rt_redis *r)
{
    if (r == NULL)
        return;
    terminate(r);
    if (r->dir[0] != '\0') {
        remove_dir_contents(r->dir);
        rmdir(r->dir);
    }
    free_handle(r);
}

int rt_redis_kill(rt_redis *r)
{
    int status;
    if (r == NULL || r->pid <= 0)
        return -1;
    kill(r->pid, SIGKILL);
    while (waitpid(r->pid, &status, 0) < 0 && errno == EINTR) {
    }
    r->pid = -1;
    r->paused = 0;
    return 0;
}

int rt_redis_restart(rt_redis *r)
{
    int64_t deadline;

    if (r == NULL)
        return -1;
    terminate(r);
    remove_dir_contents(r->dir);
    deadline = rt_now_ms() + RT_START_TIMEOUT_MS;
    /* The same port must be reused; if the new server exits at once (the
     * port still busy for a moment), try again until the deadline. */
    for (;;) {
        int rc = spawn_and_wait(r, deadline);
        if (rc == 0)
            return 0;
        if (rc < 0 || rt_now_ms() >= deadline)
            break;
        rt_sleep_ms(50);
    }
    fprintf(stderr, "rltest: could not restart redis-server on port %d\n", r->port);
    dump_logs(r);
    return -1;
}

int rt_redis_pause(rt_redis *r)
{
    if (r == NULL || r->pid <= 0 || kill(r->pid, SIGSTOP) != 0)
        return -1;
    r->paused = 1;
    return 0;
}

int rt_redis_resume(rt_redis *r)
{
    if (r == NULL || r->pid <= 0 || kill(r->pid, SIGCONT) != 0)
        return -1;
    r->paused = 0;
    return 0;
}

redisContext *rt_redis_connect(const rt_redis *r)
{
    redisContext *c;
    struct timeval tv = { 5, 0 };

    if (r == NULL)
        return NULL;
    c = connect_port(r->port, r->password, 2000);
    if (c == NULL) {
        fprintf(stderr, "rltest: cannot connect to redis-server on port %d\n", r->port);
        return NULL;
    }
    redisSetTimeout(c, tv);
    return c;
}

int rt_redis_open(const char *who, const char *extra_args, rt_redis **server,
                  redisContext **ctx)
{
    rt_redis *r = rt_redis_start(extra_args);

    if (r == NULL) {
        fprintf(stderr, "%s: cannot start redis-server: this test FAILS without Redis\n", who);
        return -1;
    }
    *ctx = rt_redis_connect(r);
    if (*ctx == NULL) {
        rt_redis_stop(r);
        return -1;
    }
    *server = r;
    return 0;
}

int rt_redis_open_all(const char *who, int n, rt_redis **server, redisContext **ctx)
{
    int i;

    for (i = 0; i < n; i++)
        if (rt_redis_open(who, NULL, &server[i], &ctx[i]) != 0)
            return -1;
    return 0;
}

void rt_redis_close_all(int n, rt_redis **server, redisContext **ctx)
{
    int i;

    for (i = 0; i < n; i++) {
        if (ctx[i])
            redisFree(ctx[i]);
        ctx[i] = NULL;
        rt_redis_stop(server[i]);
        server[i] = NULL;
    }
}

int rt_redis_reset_all(int n, rt_redis **server, redisContext **ctx)
{
    int i;

    for (i = 0; i < n; i++) {
        redisReply *r;
        if (server[i]->paused)
            rt_redis_resume(server[i]);
        if (server[i]->pid < 0 && rt_redis_restart(server[i]) != 0)
            return -1;
        if (ctx[i])
            redisFree(ctx[i]);
        if (!(ctx[i] = rt_redis_connect(server[i])))
            return -1;
        if (!(r = redisCommand(ctx[i], "FLUSHALL")))
            return -1;
        freeReplyObject(r);
    }
    return 0;
}

/* A counter of `command`'s line in INFO commandstats ("calls",
 * "failed_calls", ...): 0 when absent, -1 on error. */
static long long cmdstat_field(const char *info, const char *command, const char *field)
{
    char want[128];
    const char *p, *end, *f;

    snprintf(want, sizeof want, "cmdstat_%s:", command);
    /* The ':' after the name keeps "eval" from matching "evalsha". */
    if ((p = strstr(info, want)) == NULL)
        return 0;
    end = strchr(p, '\n');
    snprintf(want, sizeof want, "%s=", field);
    for (f = strstr(p, want); f != NULL && (end == NULL || f < end); f = strstr(f + 1, want))
        if (f[-1] == ':' || f[-1] == ',')
            return strtoll(f + strlen(want), NULL, 10);
    return 0;
}

static long long cmdstat(redisContext *c, const char *command, int ok_only)
{
    redisReply *rep = redisCommand(c, "INFO commandstats");
    long long n = -1;

    if (rep == NULL)
        return -1;
    if (rep->type == REDIS_REPLY_STRING) {
        n = cmdstat_field(rep->str, command, "calls");
        if (ok_only)
            n -= cmdstat_field(rep->str, command, "failed_calls") +
                 cmdstat_field(rep->str, command, "rejected_calls");
    }
    freeReplyObject(rep);
    return n;
}

long long rt_redis_cmdstat_calls(redisContext *c, const char *command)
{
    return cmdstat(c, command, 0);
}

long long rt_redis_cmdstat_ok(redisContext *c, const char *command)
{
    return cmdstat(c, command, 1);
}

static long long numsub(redisContext *c, const char *sub, const void *channel, size_t len)
{
    redisReply *rep = redisCommand(c, "PUBSUB %s %b", sub, channel, len);
    long long n = -1;

    if (rep == NULL)
        return -1;
    if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
        rep->element[1]->type == REDIS_REPLY_INTEGER)
        n = rep->element[1]->integer;
    freeReplyObject(rep);
    return n;
}

long long rt_redis_numsub(redisContext *c, const void *channel, size_t len)
{
    return numsub(c, "NUMSUB", channel, len);
}

long long rt_redis_shardnumsub(redisContext *c, const void *channel, size_t len)
{
    return numsub(c, "SHARDNUMSUB", channel, len);
}

int rt_redis_pmessages_before(redisContext *sub, const char *last)
{
    int n = 0;

    for (;;) {
        redisReply *r = NULL;
        int end;
        if (redisGetReply(sub, (void **)&r) != REDIS_OK || r == NULL)
            return -1;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 4 ||
            strcmp(r->element[0]->str, "pmessage") != 0) {
            freeReplyObject(r);
            continue;
        }
        end = strcmp(r->element[3]->str, last) == 0;
        freeReplyObject(r);
        if (end)
            return n;
        n++;
    }
}

/* The integer reply of a one-key command (fmt takes the key as %b), or
 * `error` when there is none. */
static long long key_integer(redisContext *c, const char *fmt, const void *key, size_t len,
                             long long error)
{
    redisReply *rep = redisCommand(c, fmt, key, len);
    long long n = error;

    if (rep == NULL)
        return error;
    if (rep->type == REDIS_REPLY_INTEGER)
        n = rep->integer;
    freeReplyObject(rep);
    return n;
}

int rt_redis_exists(redisContext *c, const void *key, size_t len)
{
    long long n = key_integer(c, "EXISTS %b", key, len, -1);

    return n < 0 ? -1 : n > 0;
}

long long rt_redis_del(redisContext *c, const void *key, size_t len)
{
    return key_integer(c, "DEL %b", key, len, -1);
}

long long rt_redis_pttl(redisContext *c, const void *key, size_t len)
{
    return key_integer(c, "PTTL %b", key, len, -3);
}
