#include "rt_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int64_t rt_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t rt_now_ms(void)
{
    return rt_now_us() / 1000;
}

void rt_sleep_ms(long ms)
{
    struct timespec ts;
    if (ms <= 0)
        return;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

pid_t rt_child_start(int (*fn)(void *arg), void *arg, unsigned alarm_s)
{
    pid_t pid;

    /* Whatever the parent buffered must not be written twice. */
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "rltest: fork: %s\n", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        if (alarm_s > 0)
            alarm(alarm_s);
        _exit(fn(arg) & 0xff);
    }
    return pid;
}

#define RT_KEEP_MAX 8
#define RT_KEEP_PARK 200 /* keep fds are first moved up here, out of the way */

pid_t rt_spawn_self(char *const argv[], const int *keep, int nkeep, unsigned alarm_s)
{
    char self[4096];
    ssize_t n;
    pid_t pid;
    int i;

    if (nkeep < 0 || nkeep > RT_KEEP_MAX)
        return -1;
    /* The program's path, read now: exec of "/proc/self/exe" itself would
     * start valgrind's tool rather than the test when run under valgrind
     * (which answers this readlink with the client program). */
    n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "rltest: readlink /proc/self/exe: %s\n", strerror(errno));
        return -1;
    }
    self[n] = '\0';
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "rltest: fork: %s\n", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        /* Only async-signal-safe calls from here to execv. */
        int parked[RT_KEEP_MAX];
        for (i = 0; i < nkeep; i++) {
            parked[i] = fcntl(keep[i], F_DUPFD_CLOEXEC, RT_KEEP_PARK);
            if (parked[i] < 0)
                _exit(125);
        }
        for (i = 0; i < nkeep; i++) {
            if (dup2(parked[i], 3 + i) < 0)
                _exit(125);
        }
#ifdef SYS_close_range
        if (syscall(SYS_close_range, (unsigned)(3 + nkeep), ~0U, 0U) != 0)
#endif
        {
            int fd;
            for (fd = 3 + nkeep; fd < 4096; fd++)
                close(fd);
        }
        if (alarm_s > 0)
            alarm(alarm_s);
        execv(self, argv);
        _exit(127);
    }
    return pid;
}

/* Where a child that hangs is stuck: every thread's stack, by gdb when
 * there is one, on stderr. */
static void print_stacks(pid_t pid)
{
    char cmd[256];

    fflush(stderr);
    snprintf(cmd, sizeof cmd, "command -v gdb >/dev/null 2>&1 && timeout 30 gdb -p %d -batch "
             "-ex 'thread apply all bt' </dev/null 2>&1 | grep -v '^\\[' | head -120 >&2",
             (int)pid);
    if (system(cmd) == -1)
        fprintf(stderr, "rltest: cannot run gdb on %d\n", (int)pid);
}

int rt_child_wait(pid_t pid, long timeout_ms)
{
    const int64_t deadline = rt_now_ms() + timeout_ms;
    int status = 0;

    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            fprintf(stderr, "rltest: waitpid(%d): %s\n", (int)pid, strerror(errno));
            return -1;
        }
        if (rt_now_ms() >= deadline) {
            fprintf(stderr, "rltest: child %d still running after %ld ms; killing it\n",
                    (int)pid, timeout_ms);
            print_stacks(pid);
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            return -1;
        }
        rt_sleep_ms(RT_POLL_MS);
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return -1;
}

int rt_pipe(int fds[2])
{
    if (pipe2(fds, O_CLOEXEC) != 0) {
        fprintf(stderr, "rltest: pipe2: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

int rt_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int rt_read_full(int fd, void *buf, size_t len, long timeout_ms)
{
    const int64_t deadline = rt_now_ms() + timeout_ms;
    char *p = buf;

    while (len > 0) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        int64_t left = deadline - rt_now_ms();
        int r;
        ssize_t n;

        if (left < 0)
            left = 0;
        r = poll(&pfd, 1, (int)left);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0)
            return -1; /* deadline */
        n = read(fd, p, len);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return -1;
        }
        if (n == 0)
            return -1; /* EOF */
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

void rt_close(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

#define RT_PORTS_DEFAULT_LO 20000
#define RT_PORTS_DEFAULT_HI 29999
#define RT_PORT_DRAWS 64   /* random draws before the walk over the range */
#define RT_PORT_RECENT 128 /* ports this process handed out lately */

int rt_port_range(int *lo, int *hi)
{
    const char *v = getenv("RL_TEST_PORTS");
    char *end;
    long a, b;

    *lo = RT_PORTS_DEFAULT_LO;
    *hi = RT_PORTS_DEFAULT_HI;
    if (v == NULL || v[0] == '\0')
        return 0;
    errno = 0;
    a = strtol(v, &end, 10);
    if (errno == 0 && end != v && *end == '-') {
        const char *second = end + 1;
        b = strtol(second, &end, 10);
        if (errno == 0 && end != second && *end == '\0' && a >= 1024 && a <= b && b <= 65535) {
            *lo = (int)a;
            *hi = (int)b;
            return 0;
        }
    }
    fprintf(stderr, "rltest: RL_TEST_PORTS=%s: want LO-HI with 1024 <= LO <= HI <= 65535\n", v);
    return -1;
}

/* Ports handed out lately, so that a program starting several servers
 * (a cluster's nodes and bus ports) never gets one twice before the first
 * is bound. 0 is an empty slot. */
static _Atomic int recent_ports[RT_PORT_RECENT];
static atomic_uint recent_next;
static atomic_uint_fast64_t draw_count;

static int port_recent(int port)
{
    int i;
    for (i = 0; i < RT_PORT_RECENT; i++)
        if (atomic_load(&recent_ports[i]) == port)
            return 1;
    return 0;
}

static void port_remember(int port)
{
    atomic_store(&recent_ports[atomic_fetch_add(&recent_next, 1) % RT_PORT_RECENT], port);
}

/* A random number for the draws: splitmix64 over the time, the pid (a
 * forked child draws apart from its parent) and a counter. */
static uint64_t port_random(void)
{
    struct timespec ts;
    uint64_t z;

    clock_gettime(CLOCK_REALTIME, &ts);
    z = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 40) ^
        (atomic_fetch_add(&draw_count, 1) * 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* A socket bound to 127.0.0.1:port (listening if asked), or -1 when the
 * port is taken. No SO_REUSEADDR on a probe: a port still in TIME_WAIT is
 * skipped too. */
static int bind_port(int port, int listening)
{
    struct sockaddr_in sa;
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    if (listening)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((unsigned short)port);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || (listening && listen(fd, 64) != 0)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The descriptor bound to a free port of the range (its port into
 * *port_out), or -1. */
static int bind_in_range(int listening, int *port_out)
{
    int lo, hi, span, k, fd, start;

    if (rt_port_range(&lo, &hi) != 0)
        return -1;
    span = hi - lo + 1;
    start = (int)(port_random() % (uint64_t)span);
    for (k = 0; k < RT_PORT_DRAWS + span; k++) {
        /* Random draws, then a walk over the whole range from a random
         * start, where a port handed out lately may come again: a crowded
         * range still yields its last free port. */
        int drawn = k < RT_PORT_DRAWS;
        int port = lo + (drawn ? (int)(port_random() % (uint64_t)span) : (start + k) % span);
        if (port == 6379 || (drawn && port_recent(port)) || (fd = bind_port(port, listening)) < 0)
            continue;
        port_remember(port);
        *port_out = port;
        return fd;
    }
    fprintf(stderr, "rltest: no free port in %d-%d (RL_TEST_PORTS)\n", lo, hi);
    return -1;
}

int rt_free_port(void)
{
    int port = -1;
    int fd = bind_in_range(0, &port);

    if (fd < 0)
        return -1;
    close(fd);
    return port;
}

int rt_listen_port(int *port_out)
{
    return bind_in_range(1, port_out);
}

char *rt_find_binary(const char *env_var, const char *name)
{
    const char *env = getenv(env_var);
    const char *path = getenv("PATH");
    size_t nlen = strlen(name);
    char buf[PATH_MAX];

    if (env != NULL && env[0] != '\0') {
        if (access(env, X_OK) != 0) {
            fprintf(stderr, "rltest: %s=%s is not executable: %s\n", env_var, env,
                    strerror(errno));
            return NULL;
        }
        return strdup(env);
    }
    if (path == NULL)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path != '\0') {
        const char *end = strchr(path, ':');
        size_t n = end != NULL ? (size_t)(end - path) : strlen(path);
        if (n > 0 && n + 1 + nlen < sizeof buf) {
            memcpy(buf, path, n);
            buf[n] = '/';
            memcpy(buf + n + 1, name, nlen + 1);
            if (access(buf, X_OK) == 0)
                return strdup(buf);
        }
        if (end == NULL)
            break;
        path = end + 1;
    }
    fprintf(stderr, "rltest: %s not found on PATH and %s not set\n", name, env_var);
    return NULL;
}
