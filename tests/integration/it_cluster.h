/*
 * Group fixtures of the integration tests on a real Redis Cluster: three
 * masters on loopback (tests/common/rt_cluster.h), started once for a whole
 * cmocka group because starting one takes seconds.
 *
 * it_pcluster also puts one master, P, behind the fault proxy
 * (tests/common/proxy.h): P announces the proxy's port (CONFIG SET
 * cluster-announce-port; its bus port stays as it is), so every node's
 * CLUSTER SLOTS names P at the proxy and a client seeded with node 0 learns
 * that address by itself. rt_cluster's surveys know masters by port, so
 * while P announces the proxy the fixture keeps its own slot table, by node
 * id, and a context on each node at its real port.
 *
 * Setup functions print why they failed on stderr ("it_cluster:") and
 * return -1: the group then FAILS, never skips.
 */
#ifndef IT_CLUSTER_H
#define IT_CLUSTER_H

#include "it_common.h"
#include "proxy.h"
#include "rt_cluster.h"

/* Fixture: a 3-master cluster. */
typedef struct it_cluster {
    rt_cluster *cl;
} it_cluster;

/** cmocka group setup: start the cluster; *state is an it_cluster. */
int it_cluster_setup(void **state);
/** cmocka group teardown: stop the cluster. */
int it_cluster_teardown(void **state);

/* Fixture: a 3-master cluster with master P behind the fault proxy. */
typedef struct it_pcluster {
    rt_cluster *cl;
    rt_proxy *proxy;
    int seed, p, q;            /* masters: node 0 (the seed), the proxied one, the third */
    int owner[RT_CLUSTER_SLOTS];               /* node index per slot, by node id */
    redisContext *rc[RT_CLUSTER_MAX_NODES];    /* main thread only; real ports */
} it_pcluster;

/** cmocka group setup: start the cluster, connect to every node, read the
 * owner table, pick the masters and put the proxy in front of P, waiting
 * until every node names P at the proxy; *state is an it_pcluster. */
int it_pcluster_setup(void **state);
/** cmocka group teardown: close the contexts, stop the cluster and the proxy. */
int it_pcluster_teardown(void **state);

/** Have the proxy forward everything and drop nothing. 0 or -1. */
int it_pcluster_reset_proxy(it_pcluster *e);

/** Executed calls of a command on node m, from INFO commandstats (a call
 * refused before it ran, by CLUSTERDOWN say, is not counted); fails the
 * test when they cannot be read. */
long long it_pcluster_calls(it_pcluster *e, int m, const char *command);

#endif /* IT_CLUSTER_H */
