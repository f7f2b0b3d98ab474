/*
 * rltest — a throwaway Redis Sentinel deployment on loopback for tests.
 *
 * An rt_sentinel is one primary and `replicas` replicas, every one a real
 * redis-server started with rt_redis_start() (redis_server.h: free port,
 * own directory, no persistence, PR_SET_PDEATHSIG), watched by `nsentinels`
 * real sentinels that know the primary by the name the test chose. Tests
 * never use an ambient Redis or Sentinel.
 *
 * Binaries: redis-server as in redis_server.h ($RL_REDIS_SERVER or $PATH);
 * the sentinels from $RL_REDIS_SENTINEL when set, else `redis-sentinel` on
 * $PATH (Debian's /usr/bin/redis-sentinel). When either is missing or the
 * deployment does not settle, rt_sentinel_start() prints why and returns
 * NULL: the test must then FAIL, never skip.
 *
 * Nodes. Every node gets --repl-diskless-sync-delay 0 (a replica syncs at
 * once rather than after 5 s); the replicas also --replicaof the primary.
 * With --requirepass in the extra arguments every node also gets
 * --masterauth with the same password (any node may become a replica) and
 * the sentinels `sentinel auth-pass`. Nodes are numbered 0..n-1 in the
 * order they were started, node 0 being the first primary; which node is
 * primary now is what failovers made it: ask rt_sentinel_primary().
 *
 * Sentinels. Each one is a redis-sentinel process with a config file of
 * its own in the deployment's directory (a sentinel rewrites its config:
 * its id, epochs and what it learned survive rt_sentinel_restart_sentinel()),
 * on a free port of 127.0.0.1, with
 *     sentinel monitor <name> 127.0.0.1 <primary port> <quorum>
 *     sentinel down-after-milliseconds <name> <down_after_ms, 2000 by default>
 *     sentinel failover-timeout <name> 3000
 *     sentinel parallel-syncs <name> 1
 *     sentinel resolve-hostnames no
 * where quorum is a majority of the sentinels. Sentinels take no password.
 * Like the servers, they ask the kernel to SIGKILL them when the thread
 * that started them ends, so a crashed test leaves none behind.
 *
 * Why 2000 ms and not less: a sentinel that learns of a new primary from
 * another opens a new link to it, counted from the switch, and (as seen
 * with Redis 7.0 on a loaded 2-core machine, with down-after 500 and 1000)
 * may declare the new primary subjectively down right at down-after, its
 * PONG arriving ~100 ms later. The other sentinels' votes that took the
 * old primary down still count for 5 s, so that is an objective down at
 * once, and a second failover follows (sometimes a third): 6 of 24
 * stressed failovers with 500 ms, 3 of 64 with 1000 ms, 0 of 64 with
 * 2000 ms. rt_sentinel_start_ex() takes less for a test that wants to see
 * exactly that.
 *
 * Sentinel's own timings stay Redis' defaults, so expect: about 2-3 s for
 * a start (sentinels find each other by hello messages every 2 s), about
 * 3.5 s from a kill to a new primary named by a quorum (2 s to subjective
 * down, then agreement, election and promotion; a split election retries
 * after 2 x failover-timeout, about 6 s later), and about 10 s for a
 * restarted old primary to be turned into a replica (sentinels wait 8 s
 * after a role change). A sentinel stopped (rt_sentinel_pause_sentinel())
 * for more than 2 s enters TILT mode for 30 s after it resumes, during
 * which it does not act.
 *
 * "Live" below means started, not killed and not paused. Waits poll every
 * 50 ms, each time on fresh connections, until a deadline; none sleeps
 * blindly.
 *
 * Threads: like rt_redis, an rt_sentinel is driven from one thread that
 * outlives its processes (normally the test's main thread). Functions print
 * their reasons for failing on stderr with an "rltest:" prefix.
 */
#ifndef RT_SENTINEL_H
#define RT_SENTINEL_H

#include <sys/types.h>

#include <hiredis/hiredis.h>

#include "redis_server.h"
#include "rt_tls.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Most replicas, so at most 1 + RT_SENTINEL_MAX_REPLICAS nodes. */
#define RT_SENTINEL_MAX_REPLICAS 8
#define RT_SENTINEL_MAX_NODES (1 + RT_SENTINEL_MAX_REPLICAS)

/** Most sentinels in one deployment. */
#define RT_SENTINEL_MAX_SENTINELS 7

/** down-after-milliseconds of rt_sentinel_start() (see above for why not less). */
#define RT_SENTINEL_DOWN_AFTER_MS 2000

/** failover-timeout of every deployment. */
#define RT_SENTINEL_FAILOVER_TIMEOUT_MS 3000

/** One sentinel process. Read the fields; do not write them. */
typedef struct rt_sentinel_proc {
    int port;            /* TCP port on 127.0.0.1; kept across restarts */
    pid_t pid;           /* sentinel process, or -1 while it is down */
    int paused;          /* 1 between pause and resume */
    char conf[320];      /* its config file, which it rewrites (in rt_sentinel.dir) */
    char log[320];       /* its logfile */
    char out[320];       /* private: its stdout and stderr */
    int tls_port;        /* its TLS port (rt_sentinel_start_tls()), else 0 */
} rt_sentinel_proc;

/** A Sentinel deployment started by the test. Read the fields; do not write them. */
typedef struct rt_sentinel {
    int replicas;        /* as asked */
    int n;               /* nodes: 1 + replicas */
    int nsentinels;      /* as asked */
    int quorum;          /* nsentinels / 2 + 1 */
    long down_after_ms;  /* down-after-milliseconds */
    rt_redis *node[RT_SENTINEL_MAX_NODES];
    rt_sentinel_proc sentinel[RT_SENTINEL_MAX_SENTINELS];
    char master_name[64];
    char url[512];       /* "sentinel://127.0.0.1:<s0>,127.0.0.1:<s1>,.../<name>" (no password;
                            TLS: sentinels:// and the sentinels' TLS ports) */
    char dir[256];       /* the sentinels' config files and logs */
    char *binary;        /* private: the redis-sentinel binary */
    int tls;             /* 1: started by rt_sentinel_start_tls() */
    int tls_port[RT_SENTINEL_MAX_NODES]; /* each node's TLS port (0 without TLS) */
    const rt_tls *tls_files; /* private: the certificates */
} rt_sentinel;

/**
 * Start 1 primary, `replicas` replicas of it (0..RT_SENTINEL_MAX_REPLICAS)
 * and `nsentinels` sentinels (1..RT_SENTINEL_MAX_SENTINELS) that monitor it
 * as master_name (1..63 characters of [A-Za-z0-9._-]), with a
 * down-after-milliseconds of RT_SENTINEL_DOWN_AFTER_MS; then wait (at most
 * 30 s) until rt_sentinel_wait_ok() holds: every sentinel names node 0,
 * knows every replica and every other sentinel, and every replica's link is
 * up.
 *
 * extra_server_args: NULL or more arguments for every node, as for
 * rt_redis_start() (--requirepass is seen: see above).
 *
 * Returns the handle (free it with rt_sentinel_stop()), or NULL after
 * printing why; everything started on the way is stopped again.
 */
rt_sentinel *rt_sentinel_start(int replicas, int nsentinels, const char *master_name,
                               const char *extra_server_args);

/** rt_sentinel_start() with down-after-milliseconds of down_after_ms (> 0). */
rt_sentinel *rt_sentinel_start_ex(int replicas, int nsentinels, const char *master_name,
                                  const char *extra_server_args, long down_after_ms);

/**
 * rt_sentinel_start_ex() over TLS. Every node also gets a --tls-port of its
 * own (s->tls_port[i]) with the certificates of `tls` (rt_tls_server_args():
 * the server certificate, no client certificate asked of clients) and
 * --tls-replication yes: replicas reach the primary's TLS port over TLS
 * (and announce their own TLS port). Every sentinel also gets a tls-port
 * of its own (sentinel[j].tls_port), the same certificates, and
 * tls-replication yes: it monitors the primary's TLS port, reaches the
 * nodes and the other sentinels over TLS, and names TLS ports (of nodes
 * and of sentinels). The config keys are those of Redis 6+ and Valkey
 * alike (tls-port, tls-cert-file, tls-key-file, tls-ca-cert-file,
 * tls-auth-clients, tls-replication), so $RL_REDIS_SENTINEL may be
 * valkey-sentinel. The plain ports stay for the test's own connections
 * and every function here (nodes and sentinels are recognised by either
 * port); s->url is "sentinels://127.0.0.1:<TLS port of s0>,.../<name>".
 * `tls` must outlive the deployment (restarts read its files again).
 */
rt_sentinel *rt_sentinel_start_tls(int replicas, int nsentinels, const char *master_name,
                                   const char *extra_server_args, long down_after_ms,
                                   const rt_tls *tls);

/**
 * Stop every sentinel (SIGCONT if paused, SIGTERM, reap; SIGKILL after
 * 10 s), then every node (rt_redis_stop()), remove the deployment's
 * directory and free the handle. Accepts NULL and killed or paused
 * processes.
 */
void rt_sentinel_stop(rt_sentinel *s);

/** s->url: "sentinel://127.0.0.1:<s0>,.../<master_name>", for rl_options.url. */
const char *rt_sentinel_url(const rt_sentinel *s);

/*
 * Who is primary. A sentinel "names" the node it answers to SENTINEL
 * get-master-addr-by-name with (nodes are recognised by their port).
 */

/**
 * Index of the node a strict majority of the live sentinels that answer
 * name. -1 when they do not agree, none answers, or the node they name is
 * not one of ours (message on stderr).
 */
int rt_sentinel_primary(rt_sentinel *s);

/** Index of the node sentinel j names; -1 on error or when it is not ours. */
int rt_sentinel_primary_seen_by(rt_sentinel *s, int j);

/**
 * Wait (at most timeout_ms) until at least s->quorum live sentinels name
 * one node other than `old`, and that node is live and answers ROLE as
 * master. Returns its index, or -1 on timeout after printing what the
 * sentinels and nodes said.
 */
int rt_sentinel_wait_failover(rt_sentinel *s, int old, long timeout_ms);

/**
 * Wait (at most timeout_ms) until the deployment is settled: every live
 * sentinel names the same node, which is live, answers ROLE as master and
 * has flags "master" (no down, no failover under way) in SENTINEL MASTER;
 * every live sentinel lists every other live node in SENTINEL REPLICAS and
 * every other live sentinel in SENTINEL SENTINELS, none flagged down or
 * disconnected; every other live node is a replica of it with
 * master_link_status:up. 0, or -1 after printing what everyone said.
 */
int rt_sentinel_wait_ok(rt_sentinel *s, long timeout_ms);

/*
 * Nodes.
 */

/**
 * A new hiredis context on node i (rt_redis_connect(): authenticated, 5 s
 * command timeout); the caller frees it with redisFree(). NULL on failure.
 */
redisContext *rt_sentinel_connect_node(rt_sentinel *s, int i);

/** SIGKILL node i (rt_redis_kill()): a crash. 0, or -1 when it was not running. */
int rt_sentinel_kill_node(rt_sentinel *s, int i);

/**
 * SIGKILL the node rt_sentinel_primary() names. Returns its index (for
 * rt_sentinel_wait_failover() and rt_sentinel_restart_node()), or -1.
 */
int rt_sentinel_kill_primary(rt_sentinel *s);

/**
 * Restart node i (rt_redis_restart(): same port, same arguments, empty
 * data). A node started as the primary comes back as an empty primary and
 * a replica as a replica of node 0, whatever the sentinels have done since:
 * the sentinels then turn it into a replica of the primary they know.
 * With timeout_ms > 0, then wait for rt_sentinel_wait_ok(s, timeout_ms);
 * with 0, return as soon as the server answers.
 * 0, or -1 after printing why.
 */
int rt_sentinel_restart_node(rt_sentinel *s, int i, long timeout_ms);

/*
 * Sentinel processes, by index 0..nsentinels-1.
 */

/**
 * A new hiredis context on sentinel j (no password), with a 5 s command
 * timeout; the caller frees it with redisFree(). NULL on failure (message
 * on stderr).
 */
redisContext *rt_sentinel_connect_sentinel(rt_sentinel *s, int j);

/** SIGKILL sentinel j and reap it. 0, or -1 when it was not running. */
int rt_sentinel_kill_sentinel(rt_sentinel *s, int j);

/** SIGSTOP sentinel j: its connections stay open, nothing is answered. 0 or -1. */
int rt_sentinel_pause_sentinel(rt_sentinel *s, int j);

/** SIGCONT a paused sentinel j. 0 or -1. */
int rt_sentinel_resume_sentinel(rt_sentinel *s, int j);

/**
 * Stop sentinel j if it runs (SIGTERM) and start it again on the same port
 * from its (rewritten) config file: same id, same knowledge. Waits (10 s)
 * until it answers PING. 0, or -1 after printing why.
 */
int rt_sentinel_restart_sentinel(rt_sentinel *s, int j);

#ifdef __cplusplus
}
#endif

#endif /* RT_SENTINEL_H */
