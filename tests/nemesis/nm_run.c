/*
 * The controller of one run: starts the server (and the proxy), spawns the
 * workers, plays the fault schedule, waits for the end, looks for keys
 * left behind, and hands the histories to the checker.
 *
 * Its history, ctl.hist (after "<ns> 0"):
 *   C <seed>                       the run's seed (the checker draws the plan again)
 *   T start | T end                the run began / every worker has ended
 *   F <kind> <arg> start|end <rc>  a fault (instant ones: start and end together)
 *   X <index> <gen> <pid> <status> <killed>  a worker ended (killed: by a fault)
 *   K <keys>                       keys of the run left one lease after the end
 *   N <name> <node>                Cluster: the master serving the name's slot, at
 *                                  the start and after each fault (-1: none known)
 *   O <node> out|back              Redlock's spread fault: a master killed or
 *                                  stopped / restarted or continued (inside
 *                                  the fault's F lines)
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nemesis.h"
#include "proxy.h"
#include "redis_server.h"
#include "rlock.h"
#include "rt_cluster.h"
#include "rt_sentinel.h"
#include "rt_tls.h"
#include "rt_util.h"

#define NM_SETTLE_MS 20000   /* a Cluster back to cluster_state:ok after a fault */

typedef struct nm_ctl {
    nm_plan plan;
    char dir[400];
    FILE *hist;
    rt_redis *node[NM_NODES_MAX];      /* a Cluster's are its own (c->cl) */
    rt_cluster *cl;
    rt_sentinel *sn;
    rt_tls *tls;                       /* the run's certificates (plan.tls), or NULL */
    int tls_port[NM_NODES_MAX];        /* each server's tls-port beside its plain one */
    char url[400];                     /* the deployment's URL */
    char pxurl[600];                   /* the same, the proxied node through the proxy */
    rt_proxy *px;
    rl_client *client;                 /* the controller's own, for force-release */
    rl_lock *handle[NM_NAMES_MAX];
    pid_t pid[NM_PROCS_MAX];
    int gen[NM_PROCS_MAX];
    int64_t start_ns, end_ns;
} nm_ctl;

/* For the signal handler: what to kill when rlnemesis is interrupted. */
static volatile pid_t g_pids[NM_PROCS_MAX + NM_NODES_MAX];

static void on_signal(int sig)
{
    int i;

    for (i = 0; i < NM_PROCS_MAX + NM_NODES_MAX; i++)
        if (g_pids[i] > 0)
            kill(g_pids[i], SIGKILL);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void track_pids(const nm_ctl *c)
{
    int i;

    for (i = 0; i < NM_PROCS_MAX; i++)
        g_pids[i] = i < c->plan.nprocs ? c->pid[i] : 0;
    for (i = 0; i < NM_NODES_MAX; i++)
        g_pids[NM_PROCS_MAX + i] = c->node[i] != NULL ? c->node[i]->pid : 0;
}

static void ctl_hist(nm_ctl *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void ctl_hist(nm_ctl *c, const char *fmt, ...)
{
    va_list ap;

    fprintf(c->hist, "%lld 0 ", (long long)nm_now_ns());
    va_start(ap, fmt);
    vfprintf(c->hist, fmt, ap);
    va_end(ap);
    fputc('\n', c->hist);
    fflush(c->hist);
}

static const char *worker_url(const nm_ctl *c, int index)
{
    return index == c->plan.proxied && c->px != NULL ? c->pxurl : c->url;
}

/* TLS: what a client of the run trusts and, with mutual TLS, presents. */
static void tls_options(const nm_ctl *c, rl_options *o)
{
    if (c->tls == NULL)
        return;
    o->tls_ca_file = c->tls->ca;
    if (c->plan.tls == NM_TLS_MUTUAL) {
        o->tls_cert_file = c->tls->client_crt;
        o->tls_key_file = c->tls->client_key;
    }
}

static pid_t spawn_worker(nm_ctl *c, int index)
{
    char seed[32], idx[16], gen[16], end[32], ppid[16];
    char *argv[13];
    rl_options o;

    snprintf(seed, sizeof seed, "0x%llx", (unsigned long long)c->plan.seed);
    snprintf(idx, sizeof idx, "%d", index);
    snprintf(gen, sizeof gen, "%d", c->gen[index]);
    snprintf(end, sizeof end, "%lld", (long long)c->end_ns);
    snprintf(ppid, sizeof ppid, "%d", (int)getpid());
    argv[0] = "rlnemesis";
    argv[1] = "worker";
    argv[2] = seed;
    argv[3] = idx;
    argv[4] = gen;
    argv[5] = c->dir;
    argv[6] = (char *)worker_url(c, index);
    argv[7] = end;
    argv[8] = ppid;
    argv[9] = NULL;
    if (c->tls != NULL) {      /* the CA, then a client certificate and key or "-" */
        memset(&o, 0, sizeof o);
        tls_options(c, &o);
        argv[9] = (char *)o.tls_ca_file;
        argv[10] = (char *)(o.tls_cert_file ? o.tls_cert_file : "-");
        argv[11] = (char *)(o.tls_key_file ? o.tls_key_file : "-");
        argv[12] = NULL;
    }
    c->pid[index] = rt_spawn_self(argv, NULL, 0, 180);
    track_pids(c);
    return c->pid[index];
}

static int open_force_client(nm_ctl *c)
{
    static const int kinds[] = { RL_KIND_PLAIN, RL_KIND_FAIR, RL_KIND_WRITE, RL_KIND_SEMAPHORE };
    char prefix[64], name[16];
    rl_options o;
    int i, st;

    nm_prefix_of(prefix, sizeof prefix, c->plan.seed);
    rl_options_init(&o, RL_OPTIONS_VERSION);
    o.url = c->url;
    o.key_prefix = prefix;
    /* Its owner record lives three leases: freeing the client deletes it,
     * but only on a pooled connection still alive (not after a restart). */
    o.lease_ms = 600;
    tls_options(c, &o);
    st = rl_client_new(&c->client, &o);
    for (i = 0; st == RL_OK && i < c->plan.nnames; i++) {
        nm_name_of(name, sizeof name, i);
        if (c->plan.names[i].family == NM_SEM)
            st = rl_semaphore_new(&c->handle[i], c->client, name, strlen(name),
                                  (unsigned)c->plan.names[i].permits);
        else
            st = rl_lock_new_kind(&c->handle[i], c->client, name, strlen(name),
                                  kinds[c->plan.names[i].family]);
    }
    if (st != RL_OK)
        fprintf(stderr, "rlnemesis: controller client: %s\n", rl_strerror(st));
    return st == RL_OK ? 0 : -1;
}

static void close_force_client(nm_ctl *c)
{
    int i;

    for (i = 0; i < c->plan.nnames; i++) {
        rl_lock_free(c->handle[i]);
        c->handle[i] = NULL;
    }
    rl_client_free(c->client);
    c->client = NULL;
}

/* One command on a fresh connection (CLIENT KILL would cut a kept one). */
static int server_cmd(rt_redis *srv, const char *cmd)
{
    redisContext *rc = rt_redis_connect(srv);
    redisReply *rep;
    int ok;

    if (rc == NULL)
        return -1;
    rep = redisCommand(rc, cmd);
    ok = rep != NULL && rep->type != REDIS_REPLY_ERROR;
    if (rep != NULL)
        freeReplyObject(rep);
    redisFree(rc);
    return ok ? 0 : -1;
}

/* CLIENT KILL TYPE normal on a fresh connection (skipped itself): 0 when
 * it cut at least one connection, 1 when there was none to cut (the fault
 * did not happen), -1 on an error. */
static int client_kill(rt_redis *srv)
{
    redisContext *rc = rt_redis_connect(srv);
    redisReply *rep;
    int st = -1;

    if (rc == NULL)
        return -1;
    rep = redisCommand(rc, "CLIENT KILL TYPE normal");
    if (rep != NULL && rep->type == REDIS_REPLY_INTEGER)
        st = rep->integer > 0 ? 0 : 1;
    if (rep != NULL)
        freeReplyObject(rep);
    redisFree(rc);
    return st;
}

/* Wait, without reaping it, until the server process has exited. */
static int server_exited(const rt_redis *srv)
{
    siginfo_t si;

    memset(&si, 0, sizeof si);
    return waitid(P_PID, (id_t)srv->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           si.si_pid == srv->pid;
}

static int restart_after(nm_ctl *c, rt_redis *srv, int node, long down_ms, int keep)
{
    char rdb[600];

    if (!keep) {
        snprintf(rdb, sizeof rdb, "%s/redis%d/dump.rdb", c->dir, node);
        unlink(rdb);
    }
    rt_sleep_ms(down_ms);
    return rt_redis_restart(srv);
}

/* Single with a replica: whether the replica (node 1) says its link to the
 * primary is up (after a restart of either: synced again). */
static int replica_up(const nm_ctl *c)
{
    redisContext *rc = rt_redis_connect(c->node[1]);
    redisReply *rep = rc != NULL ? redisCommand(rc, "INFO replication") : NULL;
    int up = rep != NULL && rep->type == REDIS_REPLY_STRING &&
             strstr(rep->str, "master_link_status:up") != NULL;

    if (rep != NULL)
        freeReplyObject(rep);
    if (rc != NULL)
        redisFree(rc);
    return up;
}

/* A Cluster's fault ends when every node says cluster_state:ok again (and
 * every replica's link is up); a single's with a replica, when the
 * replica's link is up again. */
static int settled(nm_ctl *c, int rc)
{
    if (rc != 0)
        return rc;
    if (c->sn != NULL)
        return rt_sentinel_wait_ok(c->sn, NM_SETTLE_MS);
    if (c->plan.deploy == NM_SINGLE_R)
        return RT_WAIT_UNTIL(replica_up(c), NM_SETTLE_MS) ? 0 : -1;
    return c->cl != NULL ? rt_cluster_wait_ok(c->cl, NM_SETTLE_MS) : 0;
}

/* Sentinel: the primary killed, a replica promoted; the old one restarted
 * (empty, demoted by the sentinels) after down_ms. */
static int sentinel_kill(nm_ctl *c, long down_ms)
{
    int old = rt_sentinel_kill_primary(c->sn);

    if (old < 0 || rt_sentinel_wait_failover(c->sn, old, NM_SETTLE_MS) < 0)
        return -1;
    rt_sleep_ms(down_ms);
    return rt_sentinel_restart_node(c->sn, old, NM_SETTLE_MS);
}

/* Sentinel: SENTINEL FAILOVER, asked of sentinel 0. Refused (a failover
 * in progress, no good replica yet) or accepted and not carried out in
 * time, the old primary still the primary: status 1, the fault did not
 * happen (the sentinels hold back a failover for twice their
 * failover-timeout after the last one; seed 0x401b8, after a kill's
 * failover). A failover that comes later anyway is one the checker was
 * not told of: what it costs shows as violations, never hides them. */
static int sentinel_failover(nm_ctl *c)
{
    redisContext *rc = rt_sentinel_connect_sentinel(c->sn, 0);
    int old = rt_sentinel_primary(c->sn), ok, refused;
    redisReply *rep;

    if (rc == NULL || old < 0) {
        if (rc != NULL)
            redisFree(rc);
        return -1;
    }
    rep = redisCommand(rc, "SENTINEL FAILOVER %s", c->sn->master_name);
    ok = rep != NULL && rep->type != REDIS_REPLY_ERROR;
    refused = rep != NULL && rep->type == REDIS_REPLY_ERROR;
    if (rep != NULL)
        freeReplyObject(rep);
    redisFree(rc);
    if (refused)
        return 1;
    if (ok && rt_sentinel_wait_failover(c->sn, old, NM_SETTLE_MS) < 0)
        return rt_sentinel_primary(c->sn) == old ? 1 : -1;
    return ok ? settled(c, 0) : -1;
}

/* The slot of name `arg` (its keys' hash tag is the name). */
static int slot_of_name(nm_ctl *c, int arg)
{
    char name[16];

    nm_name_of(name, sizeof name, arg);
    return rt_cluster_keyslot(c->cl, name, strlen(name));
}

/* The next node after `from` that is a master now (with replicas, roles
 * change with every failover); -1 if none. */
static int next_master(nm_ctl *c, int from)
{
    int k, i;

    for (k = 1; k < c->plan.nnodes; k++) {
        i = (from + k) % c->plan.nnodes;
        if (c->plan.deploy != NM_CLUSTER_R || rt_cluster_is_master(c->cl, i))
            return i;
    }
    return -1;
}

/* Move the slot of name `arg` to the next master. */
static int migrate(nm_ctl *c, int arg)
{
    int slot = slot_of_name(c, arg);
    int from = slot < 0 ? -1 : rt_cluster_master_of(c->cl, slot);
    int to = from < 0 ? -1 : next_master(c, from);

    if (to < 0)
        return -1;
    return rt_cluster_migrate_slot(c->cl, slot, to);
}

/* Cluster with replicas: CLUSTER FAILOVER asked of the replica of name
 * `arg`'s master; the fault ends when the replica masters the slot and the
 * cluster is ok again (the old master its replica, synced). */
static int cluster_failover(nm_ctl *c, int arg)
{
    int slot = slot_of_name(c, arg);
    int old = slot < 0 ? -1 : rt_cluster_master_of(c->cl, slot);
    int rep = old < 0 ? -1 : rt_cluster_replica_of(c->cl, old);

    if (rep < 0 || rt_cluster_failover(c->cl, rep) != 0 ||
        rt_cluster_wait_failover(c->cl, slot, old, NM_SETTLE_MS) < 0)
        return -1;
    return settled(c, 0);
}

/* Cluster with replicas: a node SIGKILLed. A master's replica is promoted
 * (the fault waits for it), then the node is restarted empty after down_ms
 * and rejoins as a replica; a replica is restarted empty and syncs again. */
static int cluster_kill(nm_ctl *c, int node, long down_ms)
{
    int slot = rt_cluster_first_slot_of(c->cl, node);

    if (rt_cluster_kill(c->cl, node) != 0)
        return -1;
    if (slot >= 0 && rt_cluster_wait_failover(c->cl, slot, node, NM_SETTLE_MS) < 0)
        return -1;
    rt_sleep_ms(down_ms);
    return settled(c, rt_redis_restart(c->node[node]));
}

/* The server a fault hits: SCRIPT FLUSH and CLIENT KILL of a Cluster with
 * replicas go to a master (a replica's would do nothing). */
static rt_redis *fault_target(nm_ctl *c, const nm_fault *f)
{
    int i = f->node;

    if (c->plan.deploy == NM_CLUSTER_R && (f->kind == NM_F_FLUSH || f->kind == NM_F_CKILL) &&
        !rt_cluster_is_master(c->cl, i))
        i = next_master(c, i);
    return i >= 0 ? c->node[i] : NULL;
}

/* Cluster: log which master serves each name's slot (the isolation check
 * tells a hold's own node from the others by it). */
static void log_nodes(nm_ctl *c)
{
    char name[16];
    int i, slot;

    for (i = 0; c->cl != NULL && i < c->plan.nnames; i++) {
        nm_name_of(name, sizeof name, i);
        slot = rt_cluster_keyslot(c->cl, name, strlen(name));
        ctl_hist(c, "N %d %d", i, slot < 0 ? -1 : rt_cluster_master_of(c->cl, slot));
    }
}

/* Redlock's spread fault (nm_plan.c draw_spread): two masters SIGKILLed
 * together and restarted empty after dur_ms; settle_ms later the third
 * SIGKILLed and restarted empty, or SIGSTOPped, after dur_ms. Each master's
 * stretch out is logged (O lines) for the checker. */
static int fault_spread(nm_ctl *c, const nm_fault *f)
{
    rt_redis *third = c->node[f->spread[2]];
    int i, rc = 0;

    for (i = 0; i < 2; i++) {
        ctl_hist(c, "O %d out", f->spread[i]);
        if (rt_redis_kill(c->node[f->spread[i]]) != 0)
            return -1;
    }
    for (i = 0; i < 2; i++) {
        if (restart_after(c, c->node[f->spread[i]], f->spread[i], i ? 0 : f->dur_ms, 0) != 0)
            return -1;
        ctl_hist(c, "O %d back", f->spread[i]);
    }
    track_pids(c);
    rt_sleep_ms(f->settle_ms);
    ctl_hist(c, "O %d out", f->spread[2]);
    if (f->stop_third) {
        if (rt_redis_pause(third) != 0)
            return -1;
        rt_sleep_ms(f->dur_ms);
        rc = rt_redis_resume(third);
    } else {
        if (rt_redis_kill(third) != 0)
            return -1;
        rc = restart_after(c, third, f->spread[2], f->dur_ms, 0);
    }
    ctl_hist(c, "O %d back", f->spread[2]);
    return rc;
}

static int fault_server(nm_ctl *c, const nm_fault *f)
{
    rt_redis *srv = fault_target(c, f);

    if (c->sn != NULL) {
        int primary = rt_sentinel_primary(c->sn);
        if (primary < 0)
            return -1;
        srv = c->node[primary];
        if (f->kind == NM_F_SRV_KILL_EMPTY)
            return sentinel_kill(c, f->dur_ms);
        if (f->kind == NM_F_FAILOVER)
            return sentinel_failover(c);
    }
    if (srv == NULL)
        return -1;
    if (c->plan.deploy == NM_CLUSTER_R && f->kind == NM_F_SRV_KILL_EMPTY)
        return cluster_kill(c, f->node, f->dur_ms);
    if (f->kind == NM_F_SPREAD)
        return fault_spread(c, f);
    switch (f->kind) {
    case NM_F_CFAILOVER:
        return cluster_failover(c, f->arg);
    case NM_F_SRV_STOP:
        if (rt_redis_pause(srv) != 0)
            return -1;
        rt_sleep_ms(f->dur_ms);
        return settled(c, rt_redis_resume(srv));
    case NM_F_MIGRATE:
        return settled(c, migrate(c, f->arg));
    case NM_F_SRV_KILL_KEEP:
        /* SHUTDOWN SAVE: the server goes down with every write kept. */
        server_cmd(srv, "SHUTDOWN SAVE");
        if (!RT_WAIT_UNTIL(server_exited(srv), 10000))
            return -1;
        return settled(c, restart_after(c, srv, f->node, f->dur_ms, 1));
    case NM_F_SRV_KILL_EMPTY:
        if (rt_redis_kill(srv) != 0)
            return -1;
        return settled(c, restart_after(c, srv, f->node, f->dur_ms, 0));
    case NM_F_FLUSH:
        return server_cmd(srv, "SCRIPT FLUSH");
    case NM_F_CKILL:
        return client_kill(srv);
    default:
        return -1;
    }
}

static int fault_worker(nm_ctl *c, const nm_fault *f)
{
    pid_t pid = c->pid[f->arg];
    int st;

    if (pid <= 0)
        return -1;
    if (f->kind == NM_F_WRK_STOP) {
        if (kill(pid, SIGSTOP) != 0)
            return -1;
        rt_sleep_ms(f->dur_ms);
        return kill(pid, SIGCONT);
    }
    kill(pid, SIGKILL);
    st = rt_child_wait(pid, 10000);
    ctl_hist(c, "X %d %d %d %d 1", f->arg, c->gen[f->arg], (int)pid, st);
    c->gen[f->arg]++;
    return spawn_worker(c, f->arg) > 0 ? 0 : -1;
}

/* Arm a dropped reply and wait until it was dropped, so that the window
 * logged ends when the fault happened (the drop and its cut come with the
 * worker's next command, not at the arming); none within 3 s: cancelled,
 * status 1 (the fault did not happen). */
static int drop_one_reply(rt_proxy *px)
{
    long before = rt_proxy_dropped(px);

    rt_proxy_drop_next_reply(px);
    if (RT_WAIT_UNTIL(rt_proxy_dropped(px) > before, 3000))
        return 0;
    rt_proxy_drop_cancel(px);
    return rt_proxy_dropped(px) > before ? 0 : 1;
}

static int fault_proxy(nm_ctl *c, const nm_fault *f)
{
    switch (f->kind) {
    case NM_F_PX_STALL:
        if (rt_proxy_stall(c->px, 1) != 0)
            return -1;
        rt_sleep_ms(f->dur_ms);
        return rt_proxy_stall(c->px, 0);
    case NM_F_PX_DROP:
        return drop_one_reply(c->px);
    default:
        return rt_proxy_cut_all(c->px) >= 0 ? 0 : -1;
    }
}

/* Fork in a worker (SIGUSR1, the child's time as its value) or shut one
 * name's client down in it (SIGUSR2, the name): its signal thread does it. */
static int fault_wsignal(nm_ctl *c, const nm_fault *f)
{
    pid_t pid = c->pid[f->arg];
    union sigval v;

    if (pid <= 0)
        return -1;
    v.sival_int = f->kind == NM_F_FORK ? (int)f->dur_ms : f->name;
    if (sigqueue(pid, f->kind == NM_F_FORK ? SIGUSR1 : SIGUSR2, v) != 0)
        return -1;
    rt_sleep_ms(f->dur_ms);
    return 0;
}

/* rl_lock_force_release(), called again while it sent nothing (RL_ECONN:
 * a pooled connection a restart broke), so that the fault logged happens. */
static int force_release(nm_ctl *c, int arg)
{
    int64_t deadline = rt_now_ms() + 5000;
    int st;

    while ((st = rl_lock_force_release(c->handle[arg])) == RL_ECONN && rt_now_ms() < deadline)
        rt_sleep_ms(50);
    if (st != RL_OK)
        fprintf(stderr, "rlnemesis: seed 0x%llx: force-release: %s\n",
                (unsigned long long)c->plan.seed, rl_last_error());
    return st == RL_OK ? 0 : -1;
}

static int play_fault(nm_ctl *c, const nm_fault *f)
{
    int rc;

    ctl_hist(c, "F %d %d start %d", f->kind, f->arg, f->node);
    if (f->kind == NM_F_WRK_STOP || f->kind == NM_F_WRK_KILL)
        rc = fault_worker(c, f);
    else if (f->kind == NM_F_FORCE)
        rc = force_release(c, f->arg);
    else if (f->kind == NM_F_FORK || f->kind == NM_F_SHUTDOWN)
        rc = fault_wsignal(c, f);
    else if (f->kind >= NM_F_PX_STALL && f->kind <= NM_F_PX_CUT)
        rc = fault_proxy(c, f);
    else
        rc = fault_server(c, f);
    track_pids(c);
    ctl_hist(c, "F %d %d end %d", f->kind, f->arg, rc);
    log_nodes(c);
    return rc;
}

static void sleep_until_ns(int64_t t)
{
    int64_t now = nm_now_ns();

    if (t > now)
        rt_sleep_ms((long)((t - now) / 1000000));
}

/* Keys of the run on one node, the fencing counters aside (they never
 * expire). */
static long node_keys_left(nm_ctl *c, rt_redis *srv, int print)
{
    redisContext *rc = rt_redis_connect(srv);
    char prefix[64];
    long n = 0;
    redisReply *rep;
    size_t i;

    if (rc == NULL)
        return -1;
    nm_prefix_of(prefix, sizeof prefix, c->plan.seed);
    rep = redisCommand(rc, "KEYS %s*", prefix);
    if (rep != NULL && rep->type == REDIS_REPLY_ARRAY) {
        for (i = 0; i < rep->elements; i++) {
            const char *k = rep->element[i]->str;
            size_t len = rep->element[i]->len;
            if (len > 6 && strcmp(k + len - 6, ":fence") == 0)
                continue;
            if (print)
                fprintf(stderr, "rlnemesis: seed 0x%llx: key left: %s\n",
                        (unsigned long long)c->plan.seed, k);
            n++;
        }
    } else {
        n = -1;
    }
    if (rep != NULL)
        freeReplyObject(rep);
    redisFree(rc);
    return n;
}

static long keys_left(nm_ctl *c, int print)
{
    long n = 0, k;
    int i;

    if (c->sn != NULL) {       /* replicas list what the primary has */
        i = rt_sentinel_primary(c->sn);
        return i < 0 ? -1 : node_keys_left(c, c->node[i], print);
    }
    for (i = 0; i < c->plan.nnodes; i++) {
        if ((k = node_keys_left(c, c->node[i], print)) < 0)
            return -1;
        n += k;
    }
    return n;
}

static void wait_workers(nm_ctl *c)
{
    int i;

    for (i = 0; i < c->plan.nprocs; i++) {
        int64_t left = (c->end_ns - nm_now_ns()) / 1000000 + 30000;
        int st = rt_child_wait(c->pid[i], left > 0 ? left : 1);
        ctl_hist(c, "X %d %d %d %d 0", i, c->gen[i], (int)c->pid[i], st);
        c->pid[i] = 0;
    }
    track_pids(c);
}

/* The port rlock's clients use on node i: its tls-port under TLS. */
static int client_port(const nm_ctl *c, int i)
{
    return c->tls != NULL ? c->tls_port[i] : c->node[i]->port;
}

/* The deployment's URL, with node `px` (-1: none) reached through the proxy
 * (which passes TLS bytes through as they are). */
static void make_url(nm_ctl *c, char *buf, size_t cap, int px)
{
    int redlock = c->plan.deploy == NM_REDLOCK;
    size_t n;
    int i;

    if (nm_is_cluster(c->plan.deploy)) {
        snprintf(buf, cap, "%s", c->cl->seeds);
        return;
    }
    if (c->plan.deploy == NM_SENTINEL) {
        snprintf(buf, cap, "%s", rt_sentinel_url(c->sn));
        return;
    }
    n = (size_t)snprintf(buf, cap, "%s%s://", redlock ? "redlock" : "redis",
                         c->tls != NULL ? "s" : "");
    for (i = 0; i < (redlock ? c->plan.nnodes : 1) && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s127.0.0.1:%d", i ? "," : "",
                              i == px ? rt_proxy_port(c->px) : client_port(c, i));
}

/* TLS: a tls-port beside the plain one (which the harness keeps using),
 * client certificates required under mutual TLS; a replica reaches its
 * primary's tls-port over TLS (its certificate is its client's). */
static size_t tls_server_args(nm_ctl *c, int i, char *buf, size_t cap)
{
    char tls[900];
    size_t n;

    if (c->tls == NULL)
        return 0;
    c->tls_port[i] = rt_free_port();
    rt_tls_server_args(c->tls, c->tls_port[i], NULL, NULL, c->plan.tls == NM_TLS_MUTUAL, tls,
                       sizeof tls);
    n = (size_t)snprintf(buf, cap, " %s", tls);
    if (c->plan.deploy == NM_SINGLE_R && i > 0 && n < cap)
        n += (size_t)snprintf(buf + n, cap - n, " --tls-replication yes");
    return n;
}

/* The servers of a single, a single with a replica and Redlock, each in a
 * directory of the run (SHUTDOWN SAVE leaves its dump there). Node 1 of a
 * single with a replica follows node 0; setup waits for its link. */
static int start_servers(nm_ctl *c)
{
    char args[1800], path[600];
    int i;

    for (i = 0; i < c->plan.nnodes; i++) {
        size_t n;
        snprintf(path, sizeof path, "%s/redis%d", c->dir, i);
        n = (size_t)snprintf(args, sizeof args, "--dir %s", path);
        n += tls_server_args(c, i, args + n, sizeof args - n);
        if (c->plan.deploy == NM_SINGLE_R)
            n += (size_t)snprintf(args + n, sizeof args - n, " --repl-diskless-sync-delay 0");
        if (c->plan.deploy == NM_SINGLE_R && i > 0)
            snprintf(args + n, sizeof args - n, " --replicaof 127.0.0.1 %d", client_port(c, 0));
        if (mkdir(path, 0700) != 0 || (c->node[i] = rt_redis_start(args)) == NULL) {
            fprintf(stderr, "rlnemesis: cannot start redis-server: this test FAILS without "
                            "Redis\n");
            return -1;
        }
        track_pids(c);
    }
    if (c->plan.deploy == NM_SINGLE_R && !RT_WAIT_UNTIL(replica_up(c), 10000)) {
        fprintf(stderr, "rlnemesis: the replica did not sync in 10 s\n");
        return -1;
    }
    return 0;
}

/* A Cluster (3 masters, with replicas for cluster3x1): over TLS, every
 * node gets a tls-port beside its plain one (rlock's clients get
 * cl->seeds, rediss:// and the TLS ports; the harness, redis-cli and the
 * faults keep the plain ports), the bus and replication over TLS, no
 * client certificates asked (rt_cluster_start_tls offers none). */
static rt_cluster *start_cluster(const nm_ctl *c)
{
    static const char *const args = "--cluster-require-full-coverage no";
    int replicas = c->plan.deploy == NM_CLUSTER_R;

    if (c->tls != NULL)
        return rt_cluster_start_tls(3, replicas, 1000, args, c->tls);
    return rt_cluster_start(3, replicas, 1000, args);
}

/* A primary, 2 replicas and 3 sentinels: over TLS, the sentinels and the
 * nodes each get a tls-port, the sentinels monitor the primary's over TLS
 * and rlock's clients get sentinels:// (one-way TLS, as above). */
static rt_sentinel *start_sentinel(const nm_ctl *c)
{
    if (c->tls != NULL)
        return rt_sentinel_start_tls(2, 3, "nm", NULL, RT_SENTINEL_DOWN_AFTER_MS, c->tls);
    return rt_sentinel_start(2, 3, "nm", NULL);
}

static int setup(nm_ctl *c)
{
    char path[600];
    int i;

    snprintf(path, sizeof path, "%s/ctl.hist", c->dir);
    if ((c->hist = fopen(path, "w")) == NULL)
        return -1;
    /* Certificates once per run, for the deployments that draw TLS. */
    if (c->plan.tls != NM_TLS_OFF && (c->tls = rt_tls_make()) == NULL) {
        fprintf(stderr, "rlnemesis: no certificates: this TLS run FAILS without openssl\n");
        return -1;
    }
    if (nm_is_cluster(c->plan.deploy)) {
        /* Without full coverage, the masters left serve their own slots
         * while one is down: what the isolation check relies on. */
        if ((c->cl = start_cluster(c)) == NULL) {
            fprintf(stderr, "rlnemesis: no Redis Cluster: this test FAILS without Redis\n");
            return -1;
        }
        for (i = 0; i < c->plan.nnodes; i++)
            c->node[i] = c->cl->node[i];
        track_pids(c);
    }
    if (c->plan.deploy == NM_SENTINEL) {
        if ((c->sn = start_sentinel(c)) == NULL) {
            fprintf(stderr, "rlnemesis: no Sentinel deployment: this test FAILS without "
                            "Redis\n");
            return -1;
        }
        for (i = 0; i < c->plan.nnodes; i++)
            c->node[i] = c->sn->node[i];
        track_pids(c);
    }
    if (c->cl == NULL && c->sn == NULL && start_servers(c) != 0)
        return -1;
    if (c->plan.proxied >= 0 &&
        (c->px = rt_proxy_start(client_port(c, c->plan.px_node))) == NULL)
        return -1;
    make_url(c, c->url, sizeof c->url, -1);
    if (c->px != NULL)
        make_url(c, c->pxurl, sizeof c->pxurl, c->plan.px_node);
    return open_force_client(c);
}

static void teardown(nm_ctl *c)
{
    int i;

    for (i = 0; i < c->plan.nprocs; i++)
        if (c->pid[i] > 0) {
            kill(c->pid[i], SIGKILL);
            rt_child_wait(c->pid[i], 5000);
        }
    close_force_client(c);
    rt_proxy_stop(c->px);
    if (c->cl != NULL || c->sn != NULL) {
        rt_cluster_stop(c->cl);
        rt_sentinel_stop(c->sn);
        memset(c->node, 0, sizeof c->node);
    }
    for (i = 0; i < NM_NODES_MAX; i++)
        rt_redis_stop(c->node[i]);
    memset((void *)g_pids, 0, sizeof g_pids);
    rt_tls_free(c->tls);
    c->tls = NULL;
    if (c->hist != NULL)
        fclose(c->hist);
}

/* Spawn, play the faults, wait for the end and for the keys to go. */
static int play(nm_ctl *c)
{
    int i;

    c->start_ns = nm_now_ns();
    c->end_ns = c->start_ns + (int64_t)c->plan.run_ms * 1000000;
    ctl_hist(c, "C 0x%llx", (unsigned long long)c->plan.seed);
    ctl_hist(c, "T start");
    log_nodes(c);
    for (i = 0; i < c->plan.nprocs; i++)
        if (spawn_worker(c, i) <= 0)
            return -1;
    for (i = 0; i < c->plan.nfaults; i++) {
        sleep_until_ns(c->start_ns + (int64_t)c->plan.faults[i].at_ms * 1000000);
        play_fault(c, &c->plan.faults[i]);
    }
    wait_workers(c);
    ctl_hist(c, "T end");
    close_force_client(c);     /* its owner record is a key of the run too */
    /* One lease (and delay) after the end, plus a fair place's 2 s; a
     * killed worker's owner record lives three of its leases. */
    RT_WAIT_UNTIL(keys_left(c, 0) == 0, 3 * nm_plan_lease_delay_max(&c->plan) + 3000);
    ctl_hist(c, "K %ld", keys_left(c, 1));
    return 0;
}

/* Workers inherit the mask across fork and exec: SIGUSR1 and SIGUSR2 wait
 * for their signal thread, even when sent before it has started. */
static void block_worker_signals(void)
{
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    sigprocmask(SIG_BLOCK, &set, NULL);
}

static void remove_dir(const char *dir)
{
    char cmd[600];

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "rlnemesis: could not remove %s\n", dir);
}

static void summary(const nm_ctl *c, const nm_verdict *v, long total)
{
    char desc[300];
    int i;

    nm_plan_describe(&c->plan, desc, sizeof desc);
    printf("nemesis seed=0x%llx %s ops=%ld holds=%ld writes=%ld faults=%ld undone=%ld [",
           (unsigned long long)c->plan.seed, desc, v->ops, v->holds, v->writes, v->faults,
           v->undone);
    for (i = 0; i < c->plan.nfaults; i++)
        printf("%s%s", i ? "," : "", nm_fault_name(c->plan.faults[i].kind));
    printf("] violations:");
    for (i = 0; i < NM_INV_COUNT; i++)
        printf(" %s=%ld", nm_inv_name(i), v->violations[i]);
    printf(" -> %s\n", total == 0 ? "OK" : "FAIL");
    fflush(stdout);
}

static void add_verdict(nm_verdict *sum, const nm_verdict *v)
{
    int i;

    if (sum == NULL)
        return;
    for (i = 0; i < NM_INV_COUNT; i++)
        sum->violations[i] += v->violations[i];
    sum->ops += v->ops;
    sum->holds += v->holds;
    sum->writes += v->writes;
    sum->faults += v->faults;
    sum->undone += v->undone;
}

int nm_run(uint64_t seed, int keep, char *dir_out, size_t cap, nm_verdict *sum)
{
    static nm_ctl c;
    const char *tmp = getenv("TMPDIR");
    nm_verdict v;
    long total = -1;
    int i, rc;

    memset(&c, 0, sizeof c);
    nm_plan_draw(&c.plan, seed);
    snprintf(c.dir, sizeof c.dir, "%s/rlnemesis-%llx-XXXXXX", tmp && *tmp ? tmp : "/tmp",
             (unsigned long long)seed);
    if (mkdtemp(c.dir) == NULL)
        return -1;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    block_worker_signals();
    rc = setup(&c) == 0 ? play(&c) : -1;
    teardown(&c);
    if (rc == 0 && nm_check_dir(c.dir, &v) == 0) {
        for (total = 0, i = 0; i < NM_INV_COUNT; i++)
            total += v.violations[i];
        summary(&c, &v, total);
        add_verdict(sum, &v);
    }
    if (total != 0 || keep) {
        fprintf(stderr, "rlnemesis: histories kept in %s\n", c.dir);
        snprintf(dir_out, cap, "%s", c.dir);
    } else {
        remove_dir(c.dir);
    }
    return (int)total;
}
