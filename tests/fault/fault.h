/*
 * rlfault — the fault-injection suite's common machinery.
 *
 * One program, `rlfault`, plays two parts:
 *
 *   rlfault <scenario>                   the driver: starts its own redis-servers
 *                                        (one for the locks, one for the referee),
 *                                        spawns workers, injects the fault, judges
 *                                        and prints one verdict line
 *   rlfault worker <role> key=value...   a worker process, spawned by a driver
 *                                        (fork + exec of /proc/self/exe, so each
 *                                        worker starts clean: no inherited
 *                                        threads, sanitizer state or sockets)
 *
 * Drivers and workers talk through the referee server only: a worker
 * announces with fx_event_push() and the driver waits with fx_event_wait()
 * (BLPOP, with a deadline). The lock server is the one that gets hurt; the
 * referee server is never faulted, so its records survive every scenario.
 *
 * RL_TORTURE=1 makes every scenario run its long form (fx_scale()).
 */
#ifndef RL_FAULT_H
#define RL_FAULT_H

#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

#include "rlock.h"
#include "redis_server.h"
#include "rt_cluster.h"
#include "rt_sentinel.h"

/* ---- the two servers of a driver --------------------------------------- */

#define FX_NODES_MAX 9   /* Redlock: the most masters a redlock:// URL may name */

typedef struct fx_env {
    rt_redis *lock;      /* the server rlock uses; the one faults are injected into */
    rt_redis *ref;       /* the referee's server: never faulted */
    redisContext *lc;    /* driver's inspection connection to the lock server */
    redisContext *rc;    /* driver's connection to the referee server */
    rt_cluster *cl;      /* fx_env_start_cluster(): the Redis Cluster rlock uses instead of
                            `lock` (then lock and lc are NULL); workers get url=<cl->seeds> */
    rt_redis *node[FX_NODES_MAX]; /* fx_env_start_redlock(): the independent masters */
    int nnodes;
    char url[256];       /* fx_env_start_redlock(): "redlock://127.0.0.1:<port>,..." (every
                            node, in order); fx_env_start_sentinel(): the deployment's
                            "sentinel://..." URL; workers get url=<url> */
    rt_sentinel *sn;     /* fx_env_start_sentinel(): the Sentinel deployment rlock uses
                            (then lock and lc are NULL) */
} fx_env;

/* Start both servers (extra args for the lock server may be NULL). 0 or -1. */
int fx_env_start(fx_env *env, const char *lock_args);
/* The referee's server and, for the locks, a Redis Cluster (rt_cluster_start()
 * with these arguments). 0, or -1 after printing why (redis-server or
 * redis-cli missing, or no cluster formed): the scenario must then FAIL. */
int fx_env_start_cluster(fx_env *env, int nmasters, int replicas, long node_timeout_ms,
                         const char *node_args);
/* The referee's server and, for the locks, n independent redis-servers (n
 * odd, 3..FX_NODES_MAX) named by env->url for a Redlock client; lock and lc
 * stay NULL. node_args as for rt_redis_start(), may be NULL (no
 * --requirepass: the URL carries no password). 0, or -1 after printing
 * why, with nothing left running: the scenario must then FAIL. A node
 * killed, paused or restarted by the scenario keeps its slot in env->node
 * (and its port in the URL). */
int fx_env_start_redlock(fx_env *env, int n, const char *node_args);
/* The referee's server and, for the locks, a Sentinel deployment
 * (rt_sentinel_start(): 1 primary, `replicas` replicas, `sentinels`
 * sentinels monitoring it as `name`, node_args for every node, may be NULL)
 * named by env->url; lock and lc stay NULL. 0, or -1 after printing why
 * (redis-server or redis-sentinel missing, or no settled deployment), with
 * nothing left running: the scenario must then FAIL. */
int fx_env_start_sentinel(fx_env *env, int replicas, int sentinels, const char *name,
                          const char *node_args);
/* Stops every server of the env (each node of a cluster, of a Redlock set
 * or of a Sentinel deployment too, its sentinels first; paused ones are
 * resumed first). */
void fx_env_stop(fx_env *env);

/* ---- scale --------------------------------------------------------------- */

/* 1 when RL_TORTURE=1: long forms. */
int fx_torture(void);
/* short_v normally, long_v under RL_TORTURE=1. */
long fx_scale(long short_v, long long_v);
/* An integer from the environment, or def. */
long fx_env_long(const char *name, long def);

/* ---- workers --------------------------------------------------------------- */

/*
 * Spawn `rlfault worker <role> <args...>` (args: NULL-terminated list of
 * "key=value" strings). The worker gets an alarm of alarm_s seconds so that
 * a hung worker cannot outlive the test. Returns the pid or -1.
 */
pid_t fx_spawn(const char *role, unsigned alarm_s, const char *const *args);

/* Same, with a printf-built argument list: keys and values separated by
 * spaces, e.g. fx_spawnf("loop", 60, "threads=%d names=%s", 4, "a,b"). */
pid_t fx_spawnf(const char *role, unsigned alarm_s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Wait until n `loop` workers have announced that their client is
 * connected (faults must not hit a worker's rl_client_new). 0 or -1. */
int fx_wait_ready(redisContext *ref, int n, long timeout_ms);

/* Wait for every pid (deadline shared), reap them; returns how many exited
 * with a status other than 0 (a timed-out one is killed and counts). */
int fx_wait_all(pid_t *pids, int n, long timeout_ms);

/* Inside a worker: the arguments. */
void fx_args_set(int argc, char **argv);
const char *fx_arg(const char *key, const char *def);
long fx_argl(const char *key, long def);

/* ---- connections ------------------------------------------------------------ */

/* A hiredis context on 127.0.0.1:port with a command timeout; NULL on error. */
redisContext *fx_connect(int port, long timeout_ms);
/* One command, reply freed; returns the integer reply (or 0 for OK/string),
 * -1 on error (printed). */
long long fx_cmd(redisContext *c, const char *fmt, ...);

/* ---- events, through the referee server ----------------------------------- */

int fx_event_push(redisContext *ref, const char *queue, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* BLPOP queue up to timeout_ms; 0 and the message in buf, or -1 on timeout. */
int fx_event_wait(redisContext *ref, const char *queue, char *buf, size_t cap, long timeout_ms);
/* LPOP queue without waiting: 0 and the message, or -1 when empty. */
int fx_event_poll(redisContext *ref, const char *queue, char *buf, size_t cap);

/* ---- worker reports --------------------------------------------------------- */

/*
 * Each worker ends by pushing one report line, "key=value key=value ...", to
 * the referee list rf:reports. fx_reports_sum() adds a key over all reports,
 * fx_reports_max() takes its maximum.
 */
typedef struct fx_reports {
    int n;
    char **lines;
} fx_reports;

int fx_report(redisContext *ref, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int fx_reports_load(redisContext *ref, fx_reports *out);
/* Every line of any referee list (LRANGE 0 -1), in the same form: 0, or -1
 * (nothing to free) when it cannot be read. fx_reports_load() is this for
 * rf:reports. */
int fx_list_load(redisContext *ref, const char *list, fx_reports *out);
long long fx_reports_sum(const fx_reports *r, const char *key);
long long fx_reports_max(const fx_reports *r, const char *key);
void fx_reports_free(fx_reports *r);

struct rf_result;
/*
 * The end of an outage scenario: tell the workers to stop, wait for them,
 * and judge. 1 when the referee saw no violation, every worker exited well
 * and reported no failure and no timeout, and every section a worker counted
 * is in the log; 0 when not; -1 when the referee cannot be read. *res and
 * *rep are filled for the verdict line (free rep with fx_reports_free).
 */
int fx_finish(fx_env *env, pid_t *pids, int n, const char *names, struct rf_result *res,
              fx_reports *rep, int *bad);

/* ---- the process's own resources ------------------------------------------- */

long fx_rss_kb(void);        /* VmRSS from /proc/self/status, or -1 */
int fx_fd_count(void);       /* entries of /proc/self/fd, or -1 */
/* "fd:target" for every open descriptor, space-separated, into buf. */
void fx_fd_list(char *buf, size_t cap);
long long fx_heap_bytes(void); /* bytes allocated and not freed (allocator stats) */
int fx_sanitized(void);      /* built with ASan or TSan */

/* ---- verdict ---------------------------------------------------------------- */

/* Print a diagnostic line on stderr, prefixed with the scenario. */
void fx_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print the verdict line on stdout ("scenario=... <figures> result=PASS|FAIL")
 * and return the exit status for main (0 or 1). */
int fx_verdict(const char *scenario, int pass, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The lock key rlock uses for a name under the default prefix ("rl:{name}"). */
void fx_lock_key(char *buf, size_t cap, const char *name);

/* HGETALL of a lock hash: number of fields, and the first field and its value. */
int fx_lock_fields(redisContext *c, const char *name, char *field, size_t fcap, long long *value);

#endif
