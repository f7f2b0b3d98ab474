#include "rt_cluster.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RT_CLUSTER_FORM_MS 30000  /* redis-cli's create; then the wait for ok */
#define RT_CLUSTER_AGREE_MS 30000 /* moving a slot's keys; agreeing on its new master */
#define RT_CLUSTER_POLL_MS 20     /* a survey asks every node several things */
#define RT_CLUSTER_NODE_ATTEMPTS 2
#define RT_CLUSTER_MIGRATE_BATCH 100

/* What one node said in one survey of the cluster. */
typedef struct node_view {
    int up;       /* live and answered */
    int state_ok; /* cluster_state:ok */
    int master;   /* role:master */
    int link_up;  /* a replica's master_link_status:up */
    int covered;  /* slots its CLUSTER SLOTS assigns */
    int role[RT_CLUSTER_MAX_NODES]; /* per node, its CLUSTER NODES: -1 master, else the
                                       index of its master; -2 unknown */
    int owner[RT_CLUSTER_SLOTS]; /* node index per slot; -1 none, -2 not one of ours */
} node_view;

static int live(const rt_cluster *cl, int i)
{
    return i >= 0 && i < cl->n && cl->node[i] != NULL && cl->node[i]->pid > 0 &&
           !cl->node[i]->paused;
}

static int first_live(const rt_cluster *cl)
{
    int i;
    for (i = 0; i < cl->n; i++)
        if (live(cl, i))
            return i;
    return -1;
}

static int index_of_port(const rt_cluster *cl, long long port)
{
    int i;
    for (i = 0; i < cl->n; i++)
        if (cl->node[i] != NULL && (cl->node[i]->port == port || cl->tls_port[i] == port))
            return i;
    return -2;
}

static int index_of_id(const rt_cluster *cl, const char *id, size_t len)
{
    int i;
    for (i = 0; i < cl->n; i++)
        if (strlen(cl->id[i]) == len && memcmp(cl->id[i], id, len) == 0)
            return i;
    return -2;
}

static const char *reply_error(const redisReply *r)
{
    if (r == NULL)
        return "no reply";
    return r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply";
}

/* A command on node i that must answer +OK; 0 or -1 after printing why. */
static int command_ok(rt_cluster *cl, int i, const char *what, const char *fmt, ...)
{
    redisContext *c = rt_cluster_connect(cl, i);
    redisReply *r = NULL;
    va_list ap;
    int ok;

    if (c == NULL)
        return -1;
    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    ok = r != NULL && r->type == REDIS_REPLY_STATUS;
    if (!ok)
        fprintf(stderr, "rltest: node %d (port %d): %s: %s\n", i, cl->node[i]->port, what,
                reply_error(r));
    freeReplyObject(r);
    redisFree(c);
    return ok ? 0 : -1;
}

/* CLUSTER SLOTS into owner[]; returns the number of slots assigned, -1 on error. */
static int read_slots(const rt_cluster *cl, redisContext *c, int *owner)
{
    redisReply *r = redisCommand(c, "CLUSTER SLOTS");
    int covered = 0, s;
    size_t i;

    for (s = 0; s < RT_CLUSTER_SLOTS; s++)
        owner[s] = -1;
    if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(r);
        return -1;
    }
    for (i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i], *m;
        long long lo, hi;
        int who;
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
            e->element[0]->type != REDIS_REPLY_INTEGER ||
            e->element[1]->type != REDIS_REPLY_INTEGER)
            continue;
        m = e->element[2];
        if (m->type != REDIS_REPLY_ARRAY || m->elements < 2 ||
            m->element[1]->type != REDIS_REPLY_INTEGER)
            continue;
        /* Identify the master by its port: the host it is given as depends
         * on what the node learned of itself (see the report in the test). */
        who = index_of_port(cl, m->element[1]->integer);
        lo = e->element[0]->integer;
        hi = e->element[1]->integer;
        for (s = lo < 0 ? 0 : (int)lo; s <= hi && s < RT_CLUSTER_SLOTS; s++) {
            if (owner[s] == -1)
                covered++;
            owner[s] = who;
        }
    }
    freeReplyObject(r);
    return covered;
}

/* The fields of one CLUSTER NODES line: id, address, flags, master id, and
 * from index 8 the slots. Splits `line` in place; returns the count. */
static int split_fields(char *line, char **f, int max)
{
    int n = 0;
    char *save = NULL, *t;

    for (t = strtok_r(line, " ", &save); t != NULL && n < max; t = strtok_r(NULL, " ", &save))
        f[n++] = t;
    return n;
}

/* Node roles from a CLUSTER NODES text (modified in place) into role[]. */
static void read_roles(const rt_cluster *cl, char *nodes, int *role)
{
    char *line, *save = NULL;
    int j;

    for (j = 0; j < RT_CLUSTER_MAX_NODES; j++)
        role[j] = -2;
    for (line = strtok_r(nodes, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char *f[4];
        if (split_fields(line, f, 4) < 4 || (j = index_of_id(cl, f[0], strlen(f[0]))) < 0)
            continue;
        if (strstr(f[2], "slave") != NULL)
            role[j] = index_of_id(cl, f[3], strlen(f[3]));
        else if (strstr(f[2], "master") != NULL)
            role[j] = -1;
    }
}

/* Ask every live node for its cluster state, slot map and replication role. */
static void survey(const rt_cluster *cl, node_view *v)
{
    int i;

    for (i = 0; i < cl->n; i++) {
        redisContext *c;
        redisReply *r;

        v[i].up = v[i].state_ok = v[i].master = v[i].link_up = 0;
        v[i].covered = -1;
        if (!live(cl, i) || (c = rt_redis_connect(cl->node[i])) == NULL)
            continue;
        r = redisCommand(c, "CLUSTER INFO");
        if (r != NULL && r->type == REDIS_REPLY_STRING) {
            v[i].up = 1;
            v[i].state_ok = strstr(r->str, "cluster_state:ok") != NULL;
        }
        freeReplyObject(r);
        v[i].covered = read_slots(cl, c, v[i].owner);
        r = redisCommand(c, "CLUSTER NODES");
        if (r != NULL && r->type == REDIS_REPLY_STRING)
            read_roles(cl, r->str, v[i].role);
        else
            v[i].up = 0;
        freeReplyObject(r);
        r = redisCommand(c, "INFO replication");
        if (r != NULL && r->type == REDIS_REPLY_STRING) {
            v[i].master = strstr(r->str, "role:master") != NULL;
            v[i].link_up = strstr(r->str, "master_link_status:up") != NULL;
        } else {
            v[i].up = 0;
        }
        freeReplyObject(r);
        redisFree(c);
    }
}

/* Print what the nodes said, for a wait that timed out. */
static void describe(const rt_cluster *cl, const node_view *v, int slot)
{
    int i, f = first_live(cl);

    for (i = 0; i < cl->n; i++) {
        int port = cl->node[i] != NULL ? cl->node[i]->port : 0;
        if (!live(cl, i)) {
            fprintf(stderr, "rltest:   node %d (port %d): %s\n", i, port,
                    cl->node[i] != NULL && cl->node[i]->paused ? "paused" : "down");
        } else if (!v[i].up) {
            fprintf(stderr, "rltest:   node %d (port %d): no answer\n", i, port);
        } else {
            char of[48] = "", roles[8 * RT_CLUSTER_MAX_NODES] = "";
            size_t len = 0;
            int j;
            if (slot >= 0 && v[i].covered >= 0)
                snprintf(of, sizeof of, ", master of slot %d: %d", slot, v[i].owner[slot]);
            /* "3>0": node 3 replicates node 0; "1M": node 1 is a master. */
            for (j = 0; j < cl->n && len < sizeof roles; j++) {
                if (v[i].role[j] >= 0)
                    len += (size_t)snprintf(roles + len, sizeof roles - len, " %d>%d", j,
                                            v[i].role[j]);
                else
                    len += (size_t)snprintf(roles + len, sizeof roles - len, " %d%s", j,
                                            v[i].role[j] == -1 ? "M" : "?");
            }
            fprintf(stderr, "rltest:   node %d (port %d, %s%s): cluster_state:%s, %d slots "
                    "assigned%s; roles:%s\n", i, port, v[i].master ? "master" : "replica",
                    v[i].master ? "" : v[i].link_up ? ", link up" : ", link down",
                    v[i].state_ok ? "ok" : "not ok", v[i].covered, of, roles);
        }
    }
    if (f >= 0) {
        redisContext *c = rt_redis_connect(cl->node[f]);
        redisReply *r = c != NULL ? redisCommand(c, "CLUSTER NODES") : NULL;
        if (r != NULL && r->type == REDIS_REPLY_STRING)
            fprintf(stderr, "rltest:   CLUSTER NODES of node %d:\n%s", f, r->str);
        freeReplyObject(r);
        if (c != NULL)
            redisFree(c);
    }
}

/*
 * Conditions on a survey: each returns -1 while unmet, else its result.
 * Common ground: every live node answered and says cluster_state:ok.
 */
static int all_ok(const rt_cluster *cl, const node_view *v)
{
    int i, any = 0;
    for (i = 0; i < cl->n; i++) {
        if (!live(cl, i))
            continue;
        if (!v[i].up || !v[i].state_ok)
            return 0;
        any = 1;
    }
    return any;
}

/* ok everywhere, one complete slot map everywhere, its masters live, the
 * same roles (who replicates whom) everywhere, every live replica linked;
 * with arg > 0 also exactly arg masters. */
static int cond_ok(const rt_cluster *cl, const node_view *v, int slot, int arg)
{
    int i, s, f = first_live(cl), masters = 0;
    unsigned char seen[RT_CLUSTER_MAX_NODES] = { 0 };

    (void)slot;
    if (!all_ok(cl, v))
        return -1;
    for (i = 0; i < cl->n; i++) {
        if (!live(cl, i))
            continue;
        if (v[i].covered != RT_CLUSTER_SLOTS ||
            memcmp(v[i].owner, v[f].owner, sizeof v[f].owner) != 0 ||
            memcmp(v[i].role, v[f].role, sizeof v[f].role) != 0)
            return -1;
        if (!v[i].master && !v[i].link_up)
            return -1;
    }
    for (s = 0; s < RT_CLUSTER_SLOTS; s++) {
        int m = v[f].owner[s];
        if (!live(cl, m))
            return -1;
        masters += !seen[m];
        seen[m] = 1;
    }
    return arg > 0 && masters != arg ? -1 : 0;
}

/* ok everywhere and every live node names the same live master of slot, not arg. */
static int cond_failover(const rt_cluster *cl, const node_view *v, int slot, int arg)
{
    int i, m = -1;

    if (!all_ok(cl, v))
        return -1;
    for (i = 0; i < cl->n; i++) {
        if (!live(cl, i))
            continue;
        if (v[i].covered < 0)
            return -1;
        if (m == -1)
            m = v[i].owner[slot];
        if (v[i].owner[slot] != m)
            return -1;
    }
    return m != arg && live(cl, m) ? m : -1;
}

/* The slot map is agreed and arg is master of slot. */
static int cond_moved(const rt_cluster *cl, const node_view *v, int slot, int arg)
{
    return cond_ok(cl, v, slot, 0) == 0 && v[first_live(cl)].owner[slot] == arg ? arg : -1;
}

typedef int (*view_cond)(const rt_cluster *cl, const node_view *v, int slot, int arg);

/* Survey until cond holds or timeout_ms pass; cond's result, or -1 after
 * printing "<what> after N ms" and the nodes' answers. */
static int wait_views(const rt_cluster *cl, view_cond cond, int slot, int arg, long timeout_ms,
                      const char *what)
{
    const int64_t start = rt_now_ms();
    node_view *v = calloc(RT_CLUSTER_MAX_NODES, sizeof *v);
    int rc = -1;

    if (v == NULL) {
        fprintf(stderr, "rltest: out of memory\n");
        return -1;
    }
    for (;;) {
        survey(cl, v);
        rc = cond(cl, v, slot, arg);
        if (rc >= 0 || rt_now_ms() - start >= timeout_ms)
            break;
        rt_sleep_ms(RT_CLUSTER_POLL_MS);
    }
    if (rc < 0) {
        fprintf(stderr, "rltest: %s after %ld ms; the nodes said:\n", what, timeout_ms);
        describe(cl, v, slot);
    }
    free(v);
    return rc;
}

static void dump_file(const char *path)
{
    char buf[512];
    FILE *f = fopen(path, "r");

    if (f == NULL)
        return;
    fprintf(stderr, "rltest: ---- %s ----\n", path);
    while (fgets(buf, sizeof buf, f) != NULL)
        fputs(buf, stderr);
    fclose(f);
}

/* `redis-cli --cluster create` over every node, its output in dir/cli.log,
 * the password (if any) passed as REDISCLI_AUTH. 0 or -1. */
static int run_create(rt_cluster *cl, const char *cli)
{
    char addr[RT_CLUSTER_MAX_NODES][32], reps[16], log[PATH_MAX], auth[300];
    char *argv[RT_CLUSTER_MAX_NODES + 8];
    char **envp;
    const char *pw = cl->node[0]->password;
    size_t nenv = 0, k = 0;
    int argc = 0, i, out_fd, null_fd, rc;
    pid_t pid;
    sigset_t none;

    argv[argc++] = (char *)cli;
    argv[argc++] = "--cluster";
    argv[argc++] = "create";
    for (i = 0; i < cl->n; i++) {
        snprintf(addr[i], sizeof addr[i], "127.0.0.1:%d", cl->node[i]->port);
        argv[argc++] = addr[i];
    }
    snprintf(reps, sizeof reps, "%d", cl->replicas);
    argv[argc++] = "--cluster-replicas";
    argv[argc++] = reps;
    argv[argc++] = "--cluster-yes";
    argv[argc] = NULL;

    while (environ[nenv] != NULL)
        nenv++;
    envp = calloc(nenv + 2, sizeof *envp);
    if (envp == NULL)
        return -1;
    for (i = 0; environ[i] != NULL; i++)
        if (strncmp(environ[i], "REDISCLI_AUTH=", 14) != 0)
            envp[k++] = environ[i];
    if (pw != NULL) {
        snprintf(auth, sizeof auth, "REDISCLI_AUTH=%s", pw);
        envp[k++] = auth;
    }

    snprintf(log, sizeof log, "%s/cli.log", cl->dir);
    out_fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (out_fd < 0 || null_fd < 0) {
        fprintf(stderr, "rltest: open %s: %s\n", log, strerror(errno));
        rc = -1;
        goto out;
    }
    sigemptyset(&none);
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "rltest: fork: %s\n", strerror(errno));
        rc = -1;
        goto out;
    }
    if (pid == 0) {
        /* Only async-signal-safe calls from here to execve. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        sigprocmask(SIG_SETMASK, &none, NULL);
        dup2(null_fd, 0);
        dup2(out_fd, 1);
        dup2(out_fd, 2);
#ifdef SYS_close_range
        if (syscall(SYS_close_range, 3U, ~0U, 0U) != 0)
#endif
        {
            int fd;
            for (fd = 3; fd < 4096; fd++)
                close(fd);
        }
        execve(cli, argv, envp);
        _exit(127);
    }
    rc = rt_child_wait(pid, RT_CLUSTER_FORM_MS);
    if (rc != 0) {
        fprintf(stderr, "rltest: %s --cluster create ... exited with %d%s\n", cli, rc,
                rc < 0 ? " (timed out)" : rc == 127 ? " (could not be executed)" : "");
        dump_file(log);
        rc = -1;
    }
out:
    if (out_fd >= 0)
        close(out_fd);
    if (null_fd >= 0)
        close(null_fd);
    free(envp);
    return rc;
}

/* The TLS arguments of node i on a new TLS port (into buf), or "" without
 * TLS. */
static const char *tls_args(rt_cluster *cl, int i, const rt_tls *tls, char *buf, size_t cap)
{
    size_t len;

    buf[0] = '\0';
    if (tls == NULL)
        return buf;
    cl->tls_port[i] = rt_free_port();
    rt_tls_server_args(tls, cl->tls_port[i], NULL, NULL, 0, buf, cap);
    len = strlen(buf);
    snprintf(buf + len, cap - len, " --tls-cluster yes --tls-replication yes");
    return buf;
}

/* Start node i in cluster mode, its nodes.conf in the cluster's directory. */
static rt_redis *start_node(rt_cluster *cl, int i, long node_timeout_ms, const char *extra,
                            const rt_tls *tls)
{
    size_t cap = strlen(cl->dir) + (extra != NULL ? strlen(extra) : 0) + 2048;
    char *args = malloc(cap), conf[PATH_MAX], targs[1536];
    rt_redis *r = NULL;
    int attempt;

    if (args == NULL)
        return NULL;
    snprintf(conf, sizeof conf, "%s/nodes-%d.conf", cl->dir, i);
    /* A bus (or TLS) port taken between the probe and the server's bind
     * makes the start fail: once more with others. */
    for (attempt = 0; attempt < RT_CLUSTER_NODE_ATTEMPTS && r == NULL; attempt++) {
        int bus = rt_free_port();
        if (bus < 0)
            break;
        unlink(conf);
        snprintf(args, cap,
                 "--cluster-enabled yes --cluster-config-file '%s' --cluster-port %d "
                 "--cluster-node-timeout %ld --repl-diskless-sync-delay 0 %s %s",
                 conf, bus, node_timeout_ms, tls_args(cl, i, tls, targs, sizeof targs),
                 extra != NULL ? extra : "");
        r = rt_redis_start(args);
    }
    free(args);
    return r;
}

/* CLUSTER MYID of node i into cl->id[i]. */
static int read_id(rt_cluster *cl, int i)
{
    redisContext *c = rt_cluster_connect(cl, i);
    redisReply *r = c != NULL ? redisCommand(c, "CLUSTER MYID") : NULL;
    int ok = r != NULL && r->type == REDIS_REPLY_STRING && r->len < sizeof cl->id[i];

    if (ok)
        memcpy(cl->id[i], r->str, r->len + 1);
    else
        fprintf(stderr, "rltest: node %d: CLUSTER MYID: %s\n", i, reply_error(r));
    freeReplyObject(r);
    if (c != NULL)
        redisFree(c);
    return ok ? 0 : -1;
}

/* The URL of node 0 and the seeds of every node, by their TLS ports when
 * the cluster has TLS. */
static void make_urls(rt_cluster *cl)
{
    const char *scheme = cl->tls ? "rediss" : "redis";
    size_t len;
    int i;

    snprintf(cl->url, sizeof cl->url, "%s://127.0.0.1:%d", scheme,
             cl->tls ? cl->tls_port[0] : cl->node[0]->port);
    len = (size_t)snprintf(cl->seeds, sizeof cl->seeds, "%s://", scheme);
    for (i = 0; i < cl->n && len < sizeof cl->seeds; i++)
        len += (size_t)snprintf(cl->seeds + len, sizeof cl->seeds - len, "%s127.0.0.1:%d",
                                i > 0 ? "," : "",
                                cl->tls ? cl->tls_port[i] : cl->node[i]->port);
}

rt_cluster *rt_cluster_start(int nmasters, int replicas, long node_timeout_ms,
                             const char *extra_args)
{
    return rt_cluster_start_tls(nmasters, replicas, node_timeout_ms, extra_args, NULL);
}

rt_cluster *rt_cluster_start_tls(int nmasters, int replicas, long node_timeout_ms,
                                 const char *extra_args, const rt_tls *tls)
{
    const char *tmp = getenv("TMPDIR");
    rt_cluster *cl;
    char *cli;
    int i;

    if (nmasters < 3 || replicas < 0 ||
        nmasters * (1 + replicas) > RT_CLUSTER_MAX_NODES || node_timeout_ms <= 0) {
        fprintf(stderr, "rltest: rt_cluster_start(%d masters, %d replicas each): at least 3 "
                "masters and at most %d nodes\n", nmasters, replicas, RT_CLUSTER_MAX_NODES);
        return NULL;
    }
    cli = rt_find_binary("RL_REDIS_CLI", "redis-cli");
    if (cli == NULL)
        return NULL;
    cl = calloc(1, sizeof *cl);
    if (cl == NULL) {
        free(cli);
        return NULL;
    }
    cl->nmasters = nmasters;
    cl->replicas = replicas;
    cl->n = nmasters * (1 + replicas);
    cl->tls = tls != NULL;
    if (tmp == NULL || tmp[0] == '\0')
        tmp = "/tmp";
    snprintf(cl->dir, sizeof cl->dir, "%s/rltest-cluster-XXXXXX", tmp);
    if (mkdtemp(cl->dir) == NULL) {
        fprintf(stderr, "rltest: mkdtemp %s: %s\n", cl->dir, strerror(errno));
        cl->dir[0] = '\0';
        goto fail;
    }
    for (i = 0; i < cl->n; i++) {
        cl->node[i] = start_node(cl, i, node_timeout_ms, extra_args, tls);
        if (cl->node[i] == NULL || read_id(cl, i) != 0)
            goto fail;
    }
    make_urls(cl);
    if (run_create(cl, cli) != 0)
        goto fail;
    if (wait_views(cl, cond_ok, -1, nmasters, RT_CLUSTER_FORM_MS,
                   "the new cluster is not ok") < 0)
        goto fail;
    free(cli);
    return cl;
fail:
    fprintf(stderr, "rltest: could not start a cluster of %d masters with %d replicas each\n",
            nmasters, replicas);
    free(cli);
    rt_cluster_stop(cl);
    return NULL;
}

void rt_cluster_stop(rt_cluster *cl)
{
    int i;

    if (cl == NULL)
        return;
    for (i = cl->n - 1; i >= 0; i--)
        rt_redis_stop(cl->node[i]);
    if (cl->dir[0] != '\0') {
        /* nodes-<i>.conf, cli.log, and whatever temporary file a server
         * left there while saving its config. */
        DIR *d = opendir(cl->dir);
        struct dirent *e;
        char path[PATH_MAX];
        while (d != NULL && (e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(path, sizeof path, "%s/%s", cl->dir, e->d_name);
            unlink(path);
        }
        if (d != NULL)
            closedir(d);
        rmdir(cl->dir);
    }
    free(cl);
}

int rt_cluster_master_seen_by(rt_cluster *cl, int slot, int ask)
{
    int *owner;
    int i, m = -1;

    if (cl == NULL || slot < 0 || slot >= RT_CLUSTER_SLOTS)
        return -1;
    owner = malloc(RT_CLUSTER_SLOTS * sizeof *owner);
    if (owner == NULL)
        return -1;
    for (i = ask < 0 ? 0 : ask; i < cl->n; i++) {
        redisContext *c = live(cl, i) ? rt_redis_connect(cl->node[i]) : NULL;
        int covered = c != NULL ? read_slots(cl, c, owner) : -1;
        if (c != NULL)
            redisFree(c);
        if (covered >= 0) {
            m = owner[slot] >= 0 ? owner[slot] : -1;
            break;
        }
        if (ask >= 0) {
            fprintf(stderr, "rltest: node %d did not answer CLUSTER SLOTS\n", ask);
            break;
        }
    }
    free(owner);
    return m;
}

int rt_cluster_master_of(rt_cluster *cl, int slot)
{
    return rt_cluster_master_seen_by(cl, slot, -1);
}

/* CLUSTER NODES of node i, a copy the caller frees; NULL on error. */
static char *cluster_nodes(rt_cluster *cl, int i)
{
    redisContext *c = live(cl, i) ? rt_redis_connect(cl->node[i]) : NULL;
    redisReply *r = c != NULL ? redisCommand(c, "CLUSTER NODES") : NULL;
    char *s = NULL;

    if (r != NULL && r->type == REDIS_REPLY_STRING)
        s = strdup(r->str);
    else
        fprintf(stderr, "rltest: node %d: CLUSTER NODES: %s\n", i,
                c == NULL ? "not reachable" : reply_error(r));
    freeReplyObject(r);
    if (c != NULL)
        redisFree(c);
    return s;
}

int rt_cluster_replica_of(rt_cluster *cl, int m)
{
    char *nodes, *line, *save = NULL;
    int found = -1;

    if (cl == NULL || m < 0 || m >= cl->n || cl->id[m][0] == '\0')
        return -1;
    nodes = cluster_nodes(cl, live(cl, m) ? m : first_live(cl));
    if (nodes == NULL)
        return -1;
    for (line = strtok_r(nodes, "\n", &save); line != NULL && found < 0;
         line = strtok_r(NULL, "\n", &save)) {
        char *f[8];
        int i;
        if (split_fields(line, f, 8) < 4 || strcmp(f[3], cl->id[m]) != 0 ||
            strstr(f[2], "slave") == NULL || strstr(f[2], "fail") != NULL)
            continue;
        i = index_of_id(cl, f[0], strlen(f[0]));
        if (live(cl, i))
            found = i;
    }
    free(nodes);
    return found;
}

int rt_cluster_keyslot(rt_cluster *cl, const void *key, size_t len)
{
    int i;

    if (cl == NULL)
        return -1;
    for (i = 0; i < cl->n; i++) {
        redisContext *c = live(cl, i) ? rt_redis_connect(cl->node[i]) : NULL;
        redisReply *r = c != NULL ? redisCommand(c, "CLUSTER KEYSLOT %b", key, len) : NULL;
        int slot = r != NULL && r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -1;
        freeReplyObject(r);
        if (c != NULL)
            redisFree(c);
        if (slot >= 0)
            return slot;
    }
    fprintf(stderr, "rltest: CLUSTER KEYSLOT: no live node answered\n");
    return -1;
}

redisContext *rt_cluster_connect(rt_cluster *cl, int i)
{
    if (cl == NULL || i < 0 || i >= cl->n || cl->node[i] == NULL)
        return NULL;
    return rt_redis_connect(cl->node[i]);
}

int rt_cluster_kill(rt_cluster *cl, int i)
{
    if (cl == NULL || i < 0 || i >= cl->n)
        return -1;
    return rt_redis_kill(cl->node[i]);
}

int rt_cluster_wait_failover(rt_cluster *cl, int slot, int old, long timeout_ms)
{
    char what[96];

    if (cl == NULL || slot < 0 || slot >= RT_CLUSTER_SLOTS)
        return -1;
    snprintf(what, sizeof what, "no agreed new master of slot %d (old: node %d)", slot, old);
    return wait_views(cl, cond_failover, slot, old, timeout_ms, what);
}

int rt_cluster_wait_ok(rt_cluster *cl, long timeout_ms)
{
    if (cl == NULL)
        return -1;
    return wait_views(cl, cond_ok, -1, 0, timeout_ms, "cluster not ok") < 0 ? -1 : 0;
}

/* Whether node i is a master now (ROLE). */
static int is_master(rt_cluster *cl, int i)
{
    redisContext *c = live(cl, i) ? rt_redis_connect(cl->node[i]) : NULL;
    redisReply *r = c != NULL ? redisCommand(c, "ROLE") : NULL;
    int yes = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
              r->element[0]->type == REDIS_REPLY_STRING &&
              strcmp(r->element[0]->str, "master") == 0;

    freeReplyObject(r);
    if (c != NULL)
        redisFree(c);
    return yes;
}

int rt_cluster_slot_begin(rt_cluster *cl, int slot, int to)
{
    int src;

    if (cl == NULL || slot < 0 || slot >= RT_CLUSTER_SLOTS || !live(cl, to))
        return -1;
    src = rt_cluster_master_seen_by(cl, slot, to);
    if (src < 0 || src == to || !live(cl, src)) {
        fprintf(stderr, "rltest: slot %d: master is node %d, cannot move it to node %d\n", slot,
                src, to);
        return -1;
    }
    if (command_ok(cl, to, "SETSLOT IMPORTING", "CLUSTER SETSLOT %d IMPORTING %s", slot,
                   cl->id[src]) != 0 ||
        command_ok(cl, src, "SETSLOT MIGRATING", "CLUSTER SETSLOT %d MIGRATING %s", slot,
                   cl->id[to]) != 0)
        return -1;
    return 0;
}

/* The node that node src is migrating `slot` to, from the "[slot->-id]"
 * entry of its own CLUSTER NODES line; -1 when it is not migrating it. */
static int migrating_to(rt_cluster *cl, int src, int slot)
{
    char *nodes = cluster_nodes(cl, src), *line, *save = NULL, want[32];
    size_t wl;
    int to = -1;

    if (nodes == NULL)
        return -1;
    wl = (size_t)snprintf(want, sizeof want, "[%d->-", slot);
    for (line = strtok_r(nodes, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char *p, *end;
        if (strstr(line, ",myself") == NULL && strstr(line, " myself") == NULL)
            continue;
        p = strstr(line, want);
        if (p != NULL && (end = strchr(p + wl, ']')) != NULL)
            to = index_of_id(cl, p + wl, (size_t)(end - (p + wl)));
        break;
    }
    free(nodes);
    return to < 0 ? -1 : to;
}

int rt_cluster_slot_move_keys(rt_cluster *cl, int slot)
{
    const int64_t deadline = rt_now_ms() + RT_CLUSTER_AGREE_MS;
    redisContext *c;
    char port[16];
    int src, to, rc = -1;

    if (cl == NULL || slot < 0 || slot >= RT_CLUSTER_SLOTS)
        return -1;
    src = rt_cluster_master_of(cl, slot);
    to = src >= 0 ? migrating_to(cl, src, slot) : -1;
    if (to < 0 || !live(cl, to)) {
        fprintf(stderr, "rltest: slot %d: its master (node %d) is not migrating it to a live "
                "node (rt_cluster_slot_begin first)\n", slot, src);
        return -1;
    }
    c = rt_cluster_connect(cl, src);
    if (c == NULL)
        return -1;
    /* With tls-cluster, MIGRATE reaches the destination over TLS. */
    snprintf(port, sizeof port, "%d", cl->tls ? cl->tls_port[to] : cl->node[to]->port);
    for (;;) {
        redisReply *keys = redisCommand(c, "CLUSTER GETKEYSINSLOT %d %d", slot,
                                        RT_CLUSTER_MIGRATE_BATCH);
        const char *argv[10 + RT_CLUSTER_MIGRATE_BATCH];
        size_t argl[10 + RT_CLUSTER_MIGRATE_BATCH];
        redisReply *r;
        int argc = 0, ok;
        size_t k;

        if (keys == NULL || keys->type != REDIS_REPLY_ARRAY) {
            fprintf(stderr, "rltest: node %d: CLUSTER GETKEYSINSLOT %d: %s\n", src, slot,
                    reply_error(keys));
            freeReplyObject(keys);
            break;
        }
        if (keys->elements == 0) {
            freeReplyObject(keys);
            rc = 0;
            break;
        }
        if (rt_now_ms() >= deadline) {
            fprintf(stderr, "rltest: slot %d: keys still on node %d after %d ms\n", slot, src,
                    RT_CLUSTER_AGREE_MS);
            freeReplyObject(keys);
            break;
        }
#define RT_ARG(s, l) (argv[argc] = (s), argl[argc++] = (l))
        RT_ARG("MIGRATE", 7);
        RT_ARG("127.0.0.1", 9);
        RT_ARG(port, strlen(port));
        RT_ARG("", 0);
        RT_ARG("0", 1);
        RT_ARG("5000", 4);
        if (cl->node[to]->password != NULL) {
            RT_ARG("AUTH", 4);
            RT_ARG(cl->node[to]->password, strlen(cl->node[to]->password));
        }
        RT_ARG("KEYS", 4);
        for (k = 0; k < keys->elements && k < RT_CLUSTER_MIGRATE_BATCH; k++)
            RT_ARG(keys->element[k]->str, keys->element[k]->len);
#undef RT_ARG
        r = redisCommandArgv(c, argc, argv, argl);
        /* NOKEY: the keys expired in the meantime; the next round sees. */
        ok = r != NULL && r->type == REDIS_REPLY_STATUS;
        if (!ok)
            fprintf(stderr, "rltest: node %d: MIGRATE of %zu keys of slot %d to node %d: %s\n",
                    src, keys->elements, slot, to, reply_error(r));
        freeReplyObject(r);
        freeReplyObject(keys);
        if (!ok)
            break;
    }
    redisFree(c);
    return rc;
}

int rt_cluster_slot_finish(rt_cluster *cl, int slot, int to)
{
    char what[64];
    int src, i;

    if (cl == NULL || slot < 0 || slot >= RT_CLUSTER_SLOTS || !live(cl, to))
        return -1;
    src = rt_cluster_master_of(cl, slot);
    /* The destination first: should the source's news reach it before its
     * own SETSLOT, it would already have claimed the slot. */
    if (command_ok(cl, to, "SETSLOT NODE", "CLUSTER SETSLOT %d NODE %s", slot, cl->id[to]) != 0)
        return -1;
    if (src >= 0 && src != to && live(cl, src) &&
        command_ok(cl, src, "SETSLOT NODE", "CLUSTER SETSLOT %d NODE %s", slot, cl->id[to]) != 0)
        return -1;
    for (i = 0; i < cl->n; i++) {
        if (i == to || i == src || !is_master(cl, i))
            continue;
        if (command_ok(cl, i, "SETSLOT NODE", "CLUSTER SETSLOT %d NODE %s", slot,
                       cl->id[to]) != 0)
            return -1;
    }
    snprintf(what, sizeof what, "slot %d not agreed to be on node %d", slot, to);
    return wait_views(cl, cond_moved, slot, to, RT_CLUSTER_AGREE_MS, what) < 0 ? -1 : 0;
}

int rt_cluster_migrate_slot(rt_cluster *cl, int slot, int to)
{
    if (rt_cluster_slot_begin(cl, slot, to) != 0 || rt_cluster_slot_move_keys(cl, slot) != 0 ||
        rt_cluster_slot_finish(cl, slot, to) != 0)
        return -1;
    return 0;
}

int rt_cluster_restart_all(rt_cluster *cl, long timeout_ms)
{
    int i;

    if (cl == NULL)
        return -1;
    for (i = 0; i < cl->n; i++) {
        if (rt_redis_restart(cl->node[i]) != 0) {
            fprintf(stderr, "rltest: cluster node %d did not restart\n", i);
            return -1;
        }
    }
    return rt_cluster_wait_ok(cl, timeout_ms);
}

int rt_cluster_is_master(rt_cluster *cl, int i)
{
    return cl != NULL && live(cl, i) && is_master(cl, i);
}

int rt_cluster_first_slot_of(rt_cluster *cl, int i)
{
    int *owner;
    int j, s, covered = -1;

    if (cl == NULL || (owner = malloc(RT_CLUSTER_SLOTS * sizeof *owner)) == NULL)
        return -1;
    for (j = 0; j < cl->n && covered < 0; j++) {
        redisContext *c = live(cl, j) ? rt_redis_connect(cl->node[j]) : NULL;
        if (c != NULL) {
            covered = read_slots(cl, c, owner);
            redisFree(c);
        }
    }
    for (s = 0; covered >= 0 && s < RT_CLUSTER_SLOTS; s++)
        if (owner[s] == i)
            break;
    free(owner);
    return covered >= 0 && s < RT_CLUSTER_SLOTS ? s : -1;
}

int rt_cluster_failover(rt_cluster *cl, int replica)
{
    if (cl == NULL || !live(cl, replica))
        return -1;
    return command_ok(cl, replica, "CLUSTER FAILOVER", "CLUSTER FAILOVER");
}
