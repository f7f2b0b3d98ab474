/*
 * rltest — throwaway redis-server processes for tests.
 *
 * Each rt_redis is one real redis-server, started by the test on a free
 * loopback port with an empty temporary directory, no persistence
 * (--save '' --appendonly no) and its log in that directory. Tests never
 * use an ambient Redis (no 6379).
 *
 * Which binary: $RL_REDIS_SERVER when set, else `redis-server` found on
 * $PATH. When it cannot be found or started, rt_redis_start() prints why
 * (including the server's log) and returns NULL: the test must then FAIL,
 * never skip.
 *
 * The server process asks the kernel to SIGKILL it when the thread that
 * started it ends (PR_SET_PDEATHSIG), so a crashed test leaves no server
 * behind. Consequence: start, restart and stop servers from a thread that
 * outlives them (normally the test's main thread).
 *
 * Threads: an rt_redis handle is not thread-safe; drive it from one thread.
 * rt_redis_connect() returns a fresh hiredis context owned by the caller
 * (hiredis contexts are not thread-safe either: one per thread).
 *
 * Also re-exports the deadline helpers of rt_util.h (rt_now_ms(),
 * RT_WAIT_UNTIL(), ...).
 */
#ifndef RT_REDIS_SERVER_H
#define RT_REDIS_SERVER_H

#include <stddef.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

#include "rt_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A redis-server started by the test. Read the fields; do not write them. */
typedef struct rt_redis {
    int port;          /* TCP port on 127.0.0.1; kept across rt_redis_restart() */
    pid_t pid;         /* server process, or -1 while it is down */
    char url[64];      /* "redis://127.0.0.1:<port>" (no password in it) */
    char dir[256];     /* the server's --dir: a fresh mkdtemp() directory */
    char *password;    /* value of --requirepass in the extra args, or NULL */
    int paused;        /* 1 between rt_redis_pause() and rt_redis_resume() */
    int argc;          /* private: the server's argument vector */
    char **argv;
    char *binary;
} rt_redis;

/**
 * Start a redis-server on a free port of 127.0.0.1 and wait (at most 10 s)
 * until it answers PING.
 *
 * extra_args: NULL, or more server arguments separated by spaces, e.g.
 * "--requirepass s3cret" or "--maxmemory 10mb". Single or double quotes
 * group words ("--save ''" style). A --requirepass value is remembered so
 * that rt_redis_connect() authenticates.
 *
 * Returns the handle (free it with rt_redis_stop()), or NULL after printing
 * the reason on stderr.
 */
rt_redis *rt_redis_start(const char *extra_args);

/**
 * Shut the server down (SIGCONT if paused, SIGTERM, reap; SIGKILL if it has
 * not gone after 10 s), remove its directory and free the handle.
 * Accepts NULL and handles whose server is already down.
 */
void rt_redis_stop(rt_redis *r);

/**
 * fork + exec `binary` with argv (NULL-terminated), stdin from /dev/null,
 * stdout and stderr appended to out_path, no descriptor above 2 inherited,
 * SIGKILLed when the test process dies. Returns the pid, or -1 after
 * printing why. Used for redis-server and redis-sentinel alike.
 */
pid_t rt_spawn_logged(const char *binary, char *const argv[], const char *out_path);

/**
 * SIGKILL the server and reap it: a crash, all data lost. The handle stays
 * valid (port and directory kept) for rt_redis_restart() or rt_redis_stop().
 * Returns 0, or -1 when the server was not running.
 */
int rt_redis_kill(rt_redis *r);

/**
 * Stop the server if it runs (SIGTERM; its state is lost since nothing is
 * saved) and start a new one on the SAME port with the same arguments,
 * waiting until it answers PING (10 s). Clients reconnecting to the old
 * address reach the new, empty server.
 * Returns 0, or -1 after printing why.
 */
int rt_redis_restart(rt_redis *r);

/** SIGSTOP the server: connections stay open, nothing is answered. 0 or -1. */
int rt_redis_pause(rt_redis *r);

/** SIGCONT a paused server. 0 or -1. */
int rt_redis_resume(rt_redis *r);

/**
 * A new hiredis context on the server, authenticated when the server has a
 * password, with a 5 s command timeout (so a paused server cannot hang the
 * test forever). The caller frees it with redisFree(). NULL on failure
 * (message on stderr).
 */
redisContext *rt_redis_connect(const rt_redis *r);

/**
 * rt_redis_start(extra_args) and rt_redis_connect() on it, for a test's
 * fixture: 0 with *server and *ctx set, or -1 with neither (the server is
 * stopped again when no context can be made). When the server cannot be
 * started it also prints "<who>: cannot start redis-server: this test FAILS
 * without Redis" on stderr.
 */
int rt_redis_open(const char *who, const char *extra_args, rt_redis **server,
                  redisContext **ctx);

/**
 * A fixture of n servers (Redlock tests): rt_redis_open() on each, 0 or -1.
 * rt_redis_close_all() stops them, those opened before a failure included;
 * rt_redis_reset_all() makes each one up (resumed, restarted when stopped),
 * answering on a new context, and empty (FLUSHALL), 0 or -1.
 */
int rt_redis_open_all(const char *who, int n, rt_redis **server, redisContext **ctx);
void rt_redis_close_all(int n, rt_redis **server, redisContext **ctx);
int rt_redis_reset_all(int n, rt_redis **server, redisContext **ctx);

/*
 * Inspection helpers. All take a context from rt_redis_connect().
 */

/**
 * Number of calls of `command` (lower case, e.g. "evalsha") since the
 * server started or since CONFIG RESETSTAT, from INFO commandstats.
 * 0 when never called; -1 on error.
 */
long long rt_redis_cmdstat_calls(redisContext *c, const char *command);

/**
 * The calls of `command` that succeeded: calls less failed_calls (an error
 * reply, NOSCRIPT included) and rejected_calls. 0 when never called; -1 on
 * error.
 */
long long rt_redis_cmdstat_ok(redisContext *c, const char *command);

/** Subscribers of a (binary) channel, from PUBSUB NUMSUB; -1 on error. */
long long rt_redis_numsub(redisContext *c, const void *channel, size_t len);

/**
 * On a connection subscribed with PSUBSCRIBE: the messages read before one
 * whose payload is `last` (the caller publishes it on a channel of the
 * pattern, after what it counts). -1 when the connection fails or times
 * out.
 */
int rt_redis_pmessages_before(redisContext *sub, const char *last);

/** Sharded subscribers (SSUBSCRIBE) of a (binary) channel on this node,
 * from PUBSUB SHARDNUMSUB; -1 on error. */
long long rt_redis_shardnumsub(redisContext *c, const void *channel, size_t len);

/** Whether a (binary) key exists: 1, 0, or -1 on error. */
int rt_redis_exists(redisContext *c, const void *key, size_t len);

/** DEL of a (binary) key: the keys deleted (0 or 1), or -1 on error. */
long long rt_redis_del(redisContext *c, const void *key, size_t len);

/** PTTL of a (binary) key in ms: -2 absent, -1 no expiry; -3 on error. */
long long rt_redis_pttl(redisContext *c, const void *key, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* RT_REDIS_SERVER_H */
