/* rlfault's common machinery; see fault.h. */
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault.h"
#include "referee.h"

#if defined(__has_feature)
#  if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#    define FX_SANITIZED 1
#  endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#  define FX_SANITIZED 1
#endif
#ifdef FX_SANITIZED
#  include <sanitizer/allocator_interface.h>
#endif

const char *fx_scenario = "?";

/* ---- servers ------------------------------------------------------------- */

int fx_env_start(fx_env *env, const char *lock_args)
{
    memset(env, 0, sizeof *env);
    env->ref = rt_redis_start(NULL);
    env->lock = rt_redis_start(lock_args);
    if (!env->ref || !env->lock) {
        fx_note("cannot start redis-server");
        fx_env_stop(env);
        return -1;
    }
    env->lc = fx_connect(env->lock->port, 5000);
    env->rc = fx_connect(env->ref->port, 5000);
    if (!env->lc || !env->rc) {
        fx_env_stop(env);
        return -1;
    }
    if (env->lock->password)
        fx_cmd(env->lc, "AUTH %s", env->lock->password);
    return 0;
}

int fx_env_start_cluster(fx_env *env, int nmasters, int replicas, long node_timeout_ms,
                         const char *node_args)
{
    memset(env, 0, sizeof *env);
    env->ref = rt_redis_start(NULL);
    if (!env->ref) {
        fx_note("cannot start redis-server for the referee");
        return -1;
    }
    env->rc = fx_connect(env->ref->port, 5000);
    env->cl = rt_cluster_start(nmasters, replicas, node_timeout_ms, node_args);
    if (!env->rc || !env->cl) {
        fx_note("cannot start a Redis Cluster of %d masters with %d replicas each",
                nmasters, replicas);
        fx_env_stop(env);
        return -1;
    }
    return 0;
}

int fx_env_start_redlock(fx_env *env, int n, const char *node_args)
{
    size_t at;
    int i;

    memset(env, 0, sizeof *env);
    if (n < 3 || n > FX_NODES_MAX || n % 2 == 0) {
        fx_note("a Redlock set has an odd number of masters, 3..%d, not %d", FX_NODES_MAX, n);
        return -1;
    }
    env->ref = rt_redis_start(NULL);
    if (!env->ref || !(env->rc = fx_connect(env->ref->port, 5000))) {
        fx_note("cannot start redis-server for the referee");
        fx_env_stop(env);
        return -1;
    }
    at = (size_t)snprintf(env->url, sizeof env->url, "redlock://");
    for (i = 0; i < n; i++) {
        if (!(env->node[i] = rt_redis_start(node_args))) {
            fx_note("cannot start redis-server for Redlock master %d of %d", i + 1, n);
            fx_env_stop(env);
            return -1;
        }
        env->nnodes = i + 1;
        at += (size_t)snprintf(env->url + at, sizeof env->url - at, "%s127.0.0.1:%d",
                               i ? "," : "", env->node[i]->port);
    }
    return 0;
}

int fx_env_start_sentinel(fx_env *env, int replicas, int sentinels, const char *name,
                          const char *node_args)
{
    memset(env, 0, sizeof *env);
    env->ref = rt_redis_start(NULL);
    if (!env->ref || !(env->rc = fx_connect(env->ref->port, 5000))) {
        fx_note("cannot start redis-server for the referee");
        fx_env_stop(env);
        return -1;
    }
    env->sn = rt_sentinel_start(replicas, sentinels, name, node_args);
    if (!env->sn) {
        fx_note("cannot start a Sentinel deployment of 1 primary, %d replicas and %d "
                "sentinels (redis-server and redis-sentinel are needed)", replicas, sentinels);
        fx_env_stop(env);
        return -1;
    }
    if ((size_t)snprintf(env->url, sizeof env->url, "%s", rt_sentinel_url(env->sn)) >=
        sizeof env->url) {
        fx_note("the Sentinel URL does not fit: %s", rt_sentinel_url(env->sn));
        fx_env_stop(env);
        return -1;
    }
    return 0;
}

void fx_env_stop(fx_env *env)
{
    int i;

    if (env->lc)
        redisFree(env->lc);
    if (env->rc)
        redisFree(env->rc);
    rt_cluster_stop(env->cl);
    rt_sentinel_stop(env->sn);
    for (i = 0; i < env->nnodes; i++)
        rt_redis_stop(env->node[i]);
    rt_redis_stop(env->lock);
    rt_redis_stop(env->ref);
    memset(env, 0, sizeof *env);
}

/* ---- scale ----------------------------------------------------------------- */

int fx_torture(void)
{
    const char *v = getenv("RL_TORTURE");
    return v && strcmp(v, "1") == 0;
}

long fx_scale(long short_v, long long_v)
{
    return fx_torture() ? long_v : short_v;
}

long fx_env_long(const char *name, long def)
{
    const char *v = getenv(name);
    char *end;
    long n;

    if (!v || !*v)
        return def;
    n = strtol(v, &end, 10);
    return *end ? def : n;
}

/* ---- workers ------------------------------------------------------------------ */

pid_t fx_spawn(const char *role, unsigned alarm_s, const char *const *args)
{
    const char *argv[64];
    int n = 0, i;
    pid_t pid;

    argv[n++] = "rlfault";
    argv[n++] = "worker";
    argv[n++] = role;
    for (i = 0; args && args[i] && n < 62; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) {
        fx_note("fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (alarm_s)
            alarm(alarm_s);
        /* The driver's sockets (proxy, servers) must not live on in the
         * worker, or closing them in the driver would not close them. */
        close_range(3, ~0U, 0);
        execv("/proc/self/exe", (char *const *)argv);
        _exit(127);
    }
    return pid;
}

pid_t fx_spawnf(const char *role, unsigned alarm_s, const char *fmt, ...)
{
    char buf[2048], *save = NULL, *tok;
    const char *args[60];
    int n = 0;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    for (tok = strtok_r(buf, " ", &save); tok && n < 59; tok = strtok_r(NULL, " ", &save))
        args[n++] = tok;
    args[n] = NULL;
    return fx_spawn(role, alarm_s, args);
}

int fx_wait_ready(redisContext *ref, int n, long timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;
    char msg[32];
    int i;

    for (i = 0; i < n; i++) {
        int64_t left = deadline - rt_now_ms();
        if (left <= 0 || fx_event_wait(ref, "ready", msg, sizeof msg, left) != 0) {
            fx_note("only %d of %d workers got ready", i, n);
            return -1;
        }
    }
    return 0;
}

int fx_wait_all(pid_t *pids, int n, long timeout_ms)
{
    int64_t deadline = rt_now_ms() + timeout_ms;
    int bad = 0, i;

    for (i = 0; i < n; i++) {
        int64_t left = deadline - rt_now_ms();
        int rc;
        if (pids[i] <= 0)
            continue;
        rc = rt_child_wait(pids[i], left > 0 ? left : 1);
        if (rc != 0) {
            fx_note("worker %d ended with status %d", (int)pids[i], rc);
            bad++;
        }
        pids[i] = 0;
    }
    return bad;
}

static int fx_argc;
static char **fx_argv;

void fx_args_set(int argc, char **argv)
{
    fx_argc = argc;
    fx_argv = argv;
}

const char *fx_arg(const char *key, const char *def)
{
    size_t klen = strlen(key);
    int i;

    for (i = 0; i < fx_argc; i++)
        if (strncmp(fx_argv[i], key, klen) == 0 && fx_argv[i][klen] == '=')
            return fx_argv[i] + klen + 1;
    return def;
}

long fx_argl(const char *key, long def)
{
    const char *v = fx_arg(key, NULL);
    return v ? strtol(v, NULL, 10) : def;
}

/* ---- connections ------------------------------------------------------------- */

redisContext *fx_connect(int port, long timeout_ms)
{
    struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);

    if (!c || c->err) {
        fx_note("connect to 127.0.0.1:%d: %s", port, c ? c->errstr : "out of memory");
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    return c;
}

long long fx_cmd(redisContext *c, const char *fmt, ...)
{
    redisReply *r;
    long long v = 0;
    va_list ap;

    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (!r) {
        fx_note("command \"%s\": %s", fmt, c->errstr);
        return -1;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        fx_note("command \"%s\": %s", fmt, r->str);
        v = -1;
    } else if (r->type == REDIS_REPLY_INTEGER) {
        v = r->integer;
    }
    freeReplyObject(r);
    return v;
}

/* ---- events --------------------------------------------------------------------- */

int fx_event_push(redisContext *ref, const char *queue, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fx_cmd(ref, "RPUSH rf:ev:%s %s", queue, msg) > 0 ? 0 : -1;
}

int fx_event_wait(redisContext *ref, const char *queue, char *buf, size_t cap, long timeout_ms)
{
    struct timeval tv = { (timeout_ms + 3000) / 1000, ((timeout_ms + 3000) % 1000) * 1000 };
    struct timeval dflt = { 5, 0 };
    redisReply *r;
    int rc = -1;

    redisSetTimeout(ref, tv);
    r = redisCommand(ref, "BLPOP rf:ev:%s %.3f", queue, timeout_ms / 1000.0);
    redisSetTimeout(ref, dflt);
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2) {
        snprintf(buf, cap, "%s", r->element[1]->str);
        rc = 0;
    } else if (!r) {
        fx_note("BLPOP %s: %s", queue, ref->errstr);
    }
    if (r)
        freeReplyObject(r);
    return rc;
}

int fx_event_poll(redisContext *ref, const char *queue, char *buf, size_t cap)
{
    redisReply *r = redisCommand(ref, "LPOP rf:ev:%s", queue);
    int rc = -1;

    if (r && r->type == REDIS_REPLY_STRING) {
        snprintf(buf, cap, "%s", r->str);
        rc = 0;
    }
    if (r)
        freeReplyObject(r);
    return rc;
}

/* ---- reports ------------------------------------------------------------------------ */

int fx_report(redisContext *ref, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    return fx_cmd(ref, "RPUSH rf:reports %s", line) > 0 ? 0 : -1;
}

int fx_list_load(redisContext *ref, const char *list, fx_reports *out)
{
    redisReply *r = redisCommand(ref, "LRANGE %s 0 -1", list);
    size_t i;
    int ok;

    memset(out, 0, sizeof *out);
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        if (r)
            freeReplyObject(r);
        return -1;
    }
    out->lines = calloc(r->elements + 1, sizeof *out->lines);
    ok = out->lines != NULL;
    for (i = 0; ok && i < r->elements; i++)
        ok = (out->lines[out->n++] = strdup(r->element[i]->str)) != NULL;
    freeReplyObject(r);
    if (!ok)
        fx_reports_free(out);
    return ok ? 0 : -1;
}

int fx_reports_load(redisContext *ref, fx_reports *out)
{
    return fx_list_load(ref, "rf:reports", out);
}

static int report_value(const char *line, const char *key, long long *v)
{
    size_t klen = strlen(key);
    const char *p = line;

    while ((p = strstr(p, key)) != NULL) {
        if ((p == line || p[-1] == ' ') && p[klen] == '=') {
            *v = strtoll(p + klen + 1, NULL, 10);
            return 1;
        }
        p += klen;
    }
    return 0;
}

long long fx_reports_sum(const fx_reports *r, const char *key)
{
    long long sum = 0, v;
    int i;

    for (i = 0; i < r->n; i++)
        if (report_value(r->lines[i], key, &v))
            sum += v;
    return sum;
}

long long fx_reports_max(const fx_reports *r, const char *key)
{
    long long max = 0, v;
    int i;

    for (i = 0; i < r->n; i++)
        if (report_value(r->lines[i], key, &v) && v > max)
            max = v;
    return max;
}

void fx_reports_free(fx_reports *r)
{
    int i;

    for (i = 0; i < r->n; i++)
        free(r->lines[i]);
    free(r->lines);
    memset(r, 0, sizeof *r);
}

/* ---- resources ------------------------------------------------------------------------ */

long fx_rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;

    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = strtol(line + 6, NULL, 10);
    fclose(f);
    return kb;
}

int fx_fd_count(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    int n = 0;

    if (!d)
        return -1;
    while ((de = readdir(d)) != NULL)
        if (de->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1;   /* the directory stream's own descriptor */
}

void fx_fd_list(char *buf, size_t cap)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    size_t at = 0;

    buf[0] = '\0';
    if (!d)
        return;
    while ((de = readdir(d)) != NULL && at + 80 < cap) {
        char path[300], target[64];
        ssize_t n;
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/fd/%s", de->d_name);
        n = readlink(path, target, sizeof target - 1);
        target[n > 0 ? n : 0] = '\0';
        at += (size_t)snprintf(buf + at, cap - at, "%s:%s ", de->d_name, target);
    }
    closedir(d);
}

long long fx_heap_bytes(void)
{
#ifdef FX_SANITIZED
    return (long long)__sanitizer_get_current_allocated_bytes();
#else
    struct mallinfo2 mi = mallinfo2();
    return (long long)mi.uordblks + (long long)mi.hblkhd;
#endif
}

int fx_sanitized(void)
{
#ifdef FX_SANITIZED
    return 1;
#else
    return 0;
#endif
}

/* ---- verdict ----------------------------------------------------------------------------- */

void fx_note(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[%s %d] %s\n", fx_scenario, (int)getpid(), buf);
}

int fx_verdict(const char *scenario, int pass, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    printf("scenario=%s %s result=%s\n", scenario, buf, pass ? "PASS" : "FAIL");
    fflush(stdout);
    return pass ? 0 : 1;
}

void fx_lock_key(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "rl:{%s}", name);
}

int fx_lock_fields(redisContext *c, const char *name, char *field, size_t fcap, long long *value)
{
    char key[256];
    redisReply *r;
    int n;

    fx_lock_key(key, sizeof key, name);
    r = redisCommand(c, "HGETALL %s", key);
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        if (r)
            freeReplyObject(r);
        return -1;
    }
    n = (int)(r->elements / 2);
    if (n > 0) {
        if (field)
            snprintf(field, fcap, "%s", r->element[0]->str);
        if (value)
            *value = strtoll(r->element[1]->str, NULL, 10);
    }
    freeReplyObject(r);
    return n;
}

int fx_finish(fx_env *env, pid_t *pids, int n, const char *names, struct rf_result *res,
              fx_reports *rep, int *bad)
{
    fx_cmd(env->rc, "SET rf:stop 1");
    *bad = fx_wait_all(pids, n, 60000);
    if (rf_judge(env->rc, names, res) != 0 || fx_reports_load(env->rc, rep) != 0)
        return -1;
    return res->violations == 0 && *bad == 0 && rep->n == n &&
           fx_reports_sum(rep, "fails") == 0 && fx_reports_sum(rep, "timeouts") == 0 &&
           fx_reports_sum(rep, "sections") == res->sections;
}
