#include "it_cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IT_ANNOUNCE_MS 10000   /* gossip spreads P's new port in well under a second */

static rt_cluster *start_cluster(void)
{
    rt_cluster *cl = rt_cluster_start(3, 0, 1000, NULL);

    if (cl == NULL)
        fprintf(stderr, "it_cluster: cannot start a Redis Cluster: these tests FAIL\n");
    return cl;
}

int it_cluster_setup(void **state)
{
    it_cluster *e = calloc(1, sizeof *e);

    if (e == NULL || (e->cl = start_cluster()) == NULL) {
        free(e);
        return -1;
    }
    *state = e;
    return 0;
}

int it_cluster_teardown(void **state)
{
    it_cluster *e = *state;

    if (e == NULL)
        return 0;
    rt_cluster_stop(e->cl);
    free(e);
    *state = NULL;
    return 0;
}

/* ---- the cluster with P behind the proxy -------------------------------- */

static int node_by_id(const rt_cluster *cl, const char *id, size_t len)
{
    int i;

    for (i = 0; i < cl->n; i++)
        if (strlen(cl->id[i]) == len && memcmp(cl->id[i], id, len) == 0)
            return i;
    return -1;
}

/* One range of CLUSTER SLOTS: its bounds, its master's id and port. */
static int slot_range(const redisReply *r, long long *lo, long long *hi, const char **id,
                      size_t *idlen, long long *port)
{
    const redisReply *m;

    if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
        r->element[0]->type != REDIS_REPLY_INTEGER || r->element[1]->type != REDIS_REPLY_INTEGER)
        return -1;
    m = r->element[2];
    if (m->type != REDIS_REPLY_ARRAY || m->elements < 3 ||
        m->element[1]->type != REDIS_REPLY_INTEGER || m->element[2]->type != REDIS_REPLY_STRING)
        return -1;
    *lo = r->element[0]->integer;
    *hi = r->element[1]->integer;
    *port = m->element[1]->integer;
    *id = m->element[2]->str;
    *idlen = m->element[2]->len;
    return 0;
}

/* owner[] from node 0's CLUSTER SLOTS. 0, or -1 unless every slot is owned. */
static int read_owners(it_pcluster *e)
{
    redisReply *r = redisCommand(e->rc[0], "CLUSTER SLOTS");
    int covered = 0, s;
    size_t k;

    for (s = 0; s < RT_CLUSTER_SLOTS; s++)
        e->owner[s] = -1;
    if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(r);
        return -1;
    }
    for (k = 0; k < r->elements; k++) {
        long long lo, hi, port;
        const char *id;
        size_t idlen;
        int who;
        if (slot_range(r->element[k], &lo, &hi, &id, &idlen, &port) != 0 ||
            (who = node_by_id(e->cl, id, idlen)) < 0)
            continue;
        for (s = (int)lo; s <= hi && s < RT_CLUSTER_SLOTS; s++, covered++)
            e->owner[s] = who;
    }
    freeReplyObject(r);
    return covered == RT_CLUSTER_SLOTS ? 0 : -1;
}

/* Node 0 and two more masters that own slots. 0 or -1. */
static int choose_masters(it_pcluster *e)
{
    int owns[RT_CLUSTER_MAX_NODES] = { 0 }, s, i;

    for (s = 0; s < RT_CLUSTER_SLOTS; s++)
        owns[e->owner[s]] = 1;
    e->seed = 0;
    e->p = e->q = -1;
    for (i = 1; i < e->cl->n; i++) {
        if (!owns[i])
            continue;
        if (e->p < 0)
            e->p = i;
        else if (e->q < 0)
            e->q = i;
    }
    return owns[0] && e->p > 0 && e->q > 0 ? 0 : -1;
}

/* Whether every node's CLUSTER SLOTS gives P's ranges the proxy's port. */
static int proxy_announced(it_pcluster *e)
{
    int i, want = rt_proxy_port(e->proxy);

    for (i = 0; i < e->cl->n; i++) {
        redisReply *r = redisCommand(e->rc[i], "CLUSTER SLOTS");
        int seen = 0, stale = 0;
        size_t k;
        if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
            freeReplyObject(r);
            return 0;
        }
        for (k = 0; k < r->elements; k++) {
            long long lo, hi, port;
            const char *id;
            size_t idlen;
            if (slot_range(r->element[k], &lo, &hi, &id, &idlen, &port) != 0 ||
                node_by_id(e->cl, id, idlen) != e->p)
                continue;
            seen = 1;
            stale |= port != want;
        }
        freeReplyObject(r);
        if (!seen || stale)
            return 0;
    }
    return 1;
}

/* Start the proxy in front of P and have P announce it. 0 or -1. */
static int proxy_in_front_of_p(it_pcluster *e)
{
    redisReply *r;
    int64_t t0;
    int ok;

    e->proxy = rt_proxy_start(e->cl->node[e->p]->port);
    if (e->proxy == NULL)
        return -1;
    r = redisCommand(e->rc[e->p], "CONFIG SET cluster-announce-port %d",
                     rt_proxy_port(e->proxy));
    ok = r != NULL && r->type == REDIS_REPLY_STATUS;
    if (!ok)
        fprintf(stderr, "it_cluster: CONFIG SET cluster-announce-port: %s\n",
                r != NULL && r->type == REDIS_REPLY_ERROR ? r->str : "no status reply");
    freeReplyObject(r);
    if (!ok)
        return -1;
    t0 = rt_now_ms();
    if (!RT_WAIT_UNTIL(proxy_announced(e), IT_ANNOUNCE_MS)) {
        fprintf(stderr, "it_cluster: after %d ms not every node names node %d at the "
                "proxy's port %d\n", IT_ANNOUNCE_MS, e->p, rt_proxy_port(e->proxy));
        return -1;
    }
    fprintf(stderr, "it_cluster: masters %d (seed), %d (behind the proxy :%d, known "
            "everywhere after %lld ms), %d\n", e->seed, e->p, rt_proxy_port(e->proxy),
            (long long)(rt_now_ms() - t0), e->q);
    return 0;
}

int it_pcluster_teardown(void **state)
{
    it_pcluster *e = *state;
    int i;

    if (e == NULL)
        return 0;
    for (i = 0; i < RT_CLUSTER_MAX_NODES; i++)
        if (e->rc[i] != NULL)
            redisFree(e->rc[i]);
    rt_cluster_stop(e->cl);
    rt_proxy_stop(e->proxy);
    free(e);
    *state = NULL;
    return 0;
}

int it_pcluster_setup(void **state)
{
    it_pcluster *e = calloc(1, sizeof *e);
    int i, ok = 1;

    if (e == NULL || (e->cl = start_cluster()) == NULL) {
        free(e);
        return -1;
    }
    for (i = 0; i < e->cl->n; i++)
        ok &= (e->rc[i] = rt_cluster_connect(e->cl, i)) != NULL;
    if (!ok || read_owners(e) != 0 || choose_masters(e) != 0 || proxy_in_front_of_p(e) != 0) {
        fprintf(stderr, "it_cluster: cannot set the cluster up: these tests FAIL\n");
        it_pcluster_teardown((void **)&e);
        return -1;
    }
    *state = e;
    return 0;
}

int it_pcluster_reset_proxy(it_pcluster *e)
{
    rt_proxy_drop_cancel(e->proxy);
    return rt_proxy_stall(e->proxy, 0) == 0 && rt_proxy_refuse(e->proxy, 0) == 0 ? 0 : -1;
}

long long it_pcluster_calls(it_pcluster *e, int m, const char *command)
{
    long long n = rt_redis_cmdstat_calls(e->rc[m], command);

    if (n < 0)
        fail_msg("INFO commandstats on node %d failed", m);
    return n;
}
