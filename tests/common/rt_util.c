#include "rt_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
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

int rt_free_port(void)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    int port = -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        fprintf(stderr, "rltest: socket: %s\n", strerror(errno));
        return -1;
    }
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin_port);
    else
        fprintf(stderr, "rltest: bind/getsockname: %s\n", strerror(errno));
    close(fd);
    return port;
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
