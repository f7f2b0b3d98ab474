/*
 * rltest — a throwaway Redis Cluster on loopback for tests.
 *
 * An rt_cluster is nmasters masters with `replicas` replicas each, every
 * node a real redis-server started with rt_redis_start() (redis_server.h:
 * free port, own directory, no persistence, PR_SET_PDEATHSIG) in cluster
 * mode, joined by `redis-cli --cluster create`. Tests never use an ambient
 * Redis.
 *
 * Binaries: redis-server as in redis_server.h ($RL_REDIS_SERVER or $PATH);
 * redis-cli from $RL_REDIS_CLI when set, else `redis-cli` on $PATH. When
 * either is missing or the cluster does not form, rt_cluster_start() prints
 * why and returns NULL: the test must then FAIL, never skip.
 *
 * Every node gets --cluster-enabled yes, a bus port of its own
 * (--cluster-port, from rt_free_port()), --cluster-node-timeout as asked,
 * and --repl-diskless-sync-delay 0 (replicas sync at once rather than after
 * the default 5 s). Its nodes.conf is NOT in the node's own directory but in
 * a directory of the cluster (absolute --cluster-config-file), because
 * rt_redis_restart() empties the node's directory: there the file, and so
 * the node's identity and slot map, survive rt_cluster_restart_all().
 * Data does not survive a restart (nothing is saved).
 *
 * Nodes are numbered 0..n-1 in the order they were started; which of them
 * are masters is what redis-cli decided and what failovers changed since:
 * ask rt_cluster_master_of() rather than assume.
 *
 * "Live" below means started, not killed and not paused (rt_redis pid > 0,
 * paused == 0). Waits poll the live nodes every few milliseconds, each on a
 * fresh connection, until a deadline; none sleeps blindly.
 *
 * Threads: like rt_redis, an rt_cluster is driven from one thread that
 * outlives its nodes (normally the test's main thread). Functions print
 * their reasons for failing on stderr with an "rltest:" prefix.
 */
#ifndef RT_CLUSTER_H
#define RT_CLUSTER_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "redis_server.h"
#include "rt_tls.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Most nodes in one rt_cluster. */
#define RT_CLUSTER_MAX_NODES 12

/** Number of hash slots of a Redis Cluster. */
#define RT_CLUSTER_SLOTS 16384

/** A Redis Cluster started by the test. Read the fields; do not write them. */
typedef struct rt_cluster {
    int nmasters, replicas;          /* as asked: masters, replicas per master */
    int n;                           /* nodes started = nmasters * (1 + replicas) */
    rt_redis *node[RT_CLUSTER_MAX_NODES];
    char url[64];                    /* "redis://127.0.0.1:<port of node 0>" (TLS: rediss://
                                        and the TLS port) */
    char seeds[512];                 /* "redis://127.0.0.1:<p0>,127.0.0.1:<p1>,..." every node
                                        (TLS: rediss:// and the TLS ports) */
    char id[RT_CLUSTER_MAX_NODES][48]; /* each node's cluster node id (kept across restarts) */
    char dir[256];                   /* private: the nodes-<i>.conf files, redis-cli's log */
    int tls;                         /* 1: started by rt_cluster_start_tls() */
    int tls_port[RT_CLUSTER_MAX_NODES]; /* each node's TLS port (0 without TLS) */
} rt_cluster;

/**
 * Start nmasters (3 or more) masters and `replicas` replicas of each
 * (nmasters * (1 + replicas) <= RT_CLUSTER_MAX_NODES), create the cluster
 * with `redis-cli --cluster create ... --cluster-replicas <replicas>
 * --cluster-yes`, then wait (at most 30 s) until every node says
 * cluster_state:ok, every node's CLUSTER SLOTS covers all 16384 slots with
 * the same nmasters masters, and every replica's link to its master is up.
 *
 * node_timeout_ms: --cluster-node-timeout (about 1000 keeps failovers in
 * tests short). extra_args: NULL or more server arguments for every node,
 * as for rt_redis_start() (with --requirepass, also give --masterauth).
 *
 * Returns the handle (free it with rt_cluster_stop()), or NULL after
 * printing why; everything started on the way is stopped again.
 */
rt_cluster *rt_cluster_start(int nmasters, int replicas, long node_timeout_ms,
                             const char *extra_args);

/**
 * rt_cluster_start() over TLS: every node also gets a --tls-port of its own
 * (cl->tls_port[i]), the certificates of `tls` (rt_tls_server_args(): the
 * server certificate, no client certificates asked of clients),
 * --tls-cluster yes (the bus over TLS: MIGRATE too) and --tls-replication
 * yes (replicas reach their masters over TLS). The plain ports stay for the
 * test's own hiredis connections and redis-cli, which keep working as
 * above (CLUSTER SLOTS and CLUSTER NODES show plain clients the plain
 * ports); cl->url and cl->seeds name the TLS ports with rediss://. `tls`
 * must outlive the cluster (the servers read its files at every restart).
 */
rt_cluster *rt_cluster_start_tls(int nmasters, int replicas, long node_timeout_ms,
                                 const char *extra_args, const rt_tls *tls);

/**
 * Stop every node (rt_redis_stop(): also killed or paused ones), remove the
 * cluster's directory and free the handle. Accepts NULL.
 */
void rt_cluster_stop(rt_cluster *cl);

/**
 * Index of the node that is master of `slot` now, as the first live node
 * that answers CLUSTER SLOTS sees it. -1 on error or when no node owns it.
 */
int rt_cluster_master_of(rt_cluster *cl, int slot);

/**
 * Index of the master of `slot` as node `ask` sees it (ask < 0: the first
 * live node that answers). -1 on error, when no node owns the slot, or when
 * the owner is not one of this cluster's nodes.
 */
int rt_cluster_master_seen_by(rt_cluster *cl, int slot, int ask);

/**
 * Index of a live replica of master index m, from CLUSTER NODES (asked of
 * m when live, else of the first live node); replicas flagged as failed
 * are not counted. -1 if none (or on error).
 */
int rt_cluster_replica_of(rt_cluster *cl, int m);

/** CLUSTER KEYSLOT of a (binary) key, asked of a live node; -1 on error. */
int rt_cluster_keyslot(rt_cluster *cl, const void *key, size_t len);

/**
 * A new hiredis context on node i (rt_redis_connect(): authenticated, 5 s
 * command timeout); the caller frees it with redisFree(). The context is
 * not cluster-aware: other nodes' slots answer MOVED. NULL on failure.
 */
redisContext *rt_cluster_connect(rt_cluster *cl, int i);

/**
 * SIGKILL node i (rt_redis_kill()): a crash. Its handle, port and nodes.conf
 * stay for rt_cluster_restart_all() or rt_cluster_stop(). 0, or -1 when it
 * was not running.
 */
int rt_cluster_kill(rt_cluster *cl, int i);

/**
 * Wait (at most timeout_ms) until a node other than `old` is master of
 * `slot` according to every live node, that node is live, and every live
 * node says cluster_state:ok. Returns the new master's index, or -1 on
 * timeout after printing what each node said.
 */
int rt_cluster_wait_failover(rt_cluster *cl, int slot, int old, long timeout_ms);

/*
 * Moving one slot between masters, in steps so that a test can act between
 * them (the slot answers ASK for missing keys on the source once keys are
 * moving, and MOVED everywhere but on the destination after the finish).
 * Each returns 0, or -1 after printing why.
 */

/**
 * CLUSTER SETSLOT slot IMPORTING <source id> on node `to`, then CLUSTER
 * SETSLOT slot MIGRATING <`to`'s id> on the slot's master (the source).
 * `to` must be another master.
 */
int rt_cluster_slot_begin(rt_cluster *cl, int slot, int to);

/**
 * On the source (the slot's master, which must be MIGRATING it):
 * CLUSTER GETKEYSINSLOT and MIGRATE ... KEYS (5000 ms timeout, no REPLACE)
 * to the destination it names, until the slot is empty there (at most 30 s).
 */
int rt_cluster_slot_move_keys(rt_cluster *cl, int slot);

/**
 * CLUSTER SETSLOT slot NODE <`to`'s id> on `to`, on the source, then on
 * every other live master; then wait (at most 30 s) until every live node
 * sees `to` as the slot's master and says cluster_state:ok.
 */
int rt_cluster_slot_finish(rt_cluster *cl, int slot, int to);

/** rt_cluster_slot_begin(), _move_keys() and _finish() in a row. */
int rt_cluster_migrate_slot(rt_cluster *cl, int slot, int to);

/**
 * Restart every node, killed ones included (rt_redis_restart(): same port,
 * same arguments; nodes.conf is kept, data is not), then
 * rt_cluster_wait_ok(cl, timeout_ms). 0, or -1 after printing why.
 * Expect about 2 s at least: a master that rejoins holds cluster_state:fail
 * for a while after its start (Redis' writable delay).
 */
int rt_cluster_restart_all(rt_cluster *cl, long timeout_ms);

/**
 * Wait (at most timeout_ms) until every live node says cluster_state:ok,
 * every live node's CLUSTER SLOTS covers all slots with the same masters,
 * all of them live, and every live replica's link to its master is up.
 * 0, or -1 after printing what each node said.
 */
int rt_cluster_wait_ok(rt_cluster *cl, long timeout_ms);

/*
 * Roles, and a failover asked for (a cluster with replicas).
 */

/** Whether node i is live and a master now (ROLE): 1 or 0. */
int rt_cluster_is_master(rt_cluster *cl, int i);

/**
 * The lowest slot node i is master of, as the first live node that answers
 * CLUSTER SLOTS sees it; -1 when it owns none (a replica) or on error.
 */
int rt_cluster_first_slot_of(rt_cluster *cl, int i);

/**
 * CLUSTER FAILOVER on node `replica` (a coordinated failover: its master
 * stops writes until the replica has them all, then the replica takes its
 * slots; nothing is lost). Returns as soon as the node accepted it: wait
 * with rt_cluster_wait_failover(). 0, or -1 after printing why.
 */
int rt_cluster_failover(rt_cluster *cl, int replica);

#ifdef __cplusplus
}
#endif

#endif /* RT_CLUSTER_H */
