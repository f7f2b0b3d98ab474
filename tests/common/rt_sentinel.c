#include "rt_sentinel.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define RT_SENTINEL_SETTLE_MS 30000  /* a new deployment agreeing on everything */
#define RT_SENTINEL_PROC_MS 10000    /* one sentinel answering PING; stopping one */
#define RT_SENTINEL_POLL_MS 50       /* a survey asks every process several things */
#define RT_SENTINEL_PORT_ATTEMPTS 5
#define RT_SENTINEL_LOG_TAIL 40      /* lines of each sentinel's log shown on failure */

/* What one sentinel said in one survey. */
typedef struct sentinel_view {
    int up;                /* live and answered */
    int primary;           /* node it names: index; -1 none; -2 not one of ours */
    char flags[64];        /* SENTINEL MASTER's flags */
    char replica[RT_SENTINEL_MAX_NODES][64];  /* flags it lists each node with; "" unlisted */
    char peer[RT_SENTINEL_MAX_SENTINELS][64]; /* flags it lists each sentinel with */
} sentinel_view;

/* What one node said (ROLE) in one survey. */
typedef struct node_view {
    int up;          /* live and answered */
    int master;      /* role master */
    int master_port; /* a replica's master's port */
    int link_up;     /* a replica's link state "connected" (master_link_status:up) */
} node_view;

typedef struct deployment_view {
    sentinel_view sv[RT_SENTINEL_MAX_SENTINELS];
    node_view nv[RT_SENTINEL_MAX_NODES];
} deployment_view;

static int node_live(const rt_sentinel *s, int i)
{
    return i >= 0 && i < s->n && s->node[i] != NULL && s->node[i]->pid > 0 &&
           !s->node[i]->paused;
}

static int sentinel_live(const rt_sentinel *s, int j)
{
    return j >= 0 && j < s->nsentinels && s->sentinel[j].pid > 0 && !s->sentinel[j].paused;
}

static int node_of_port(const rt_sentinel *s, long port)
{
    int i;
    for (i = 0; i < s->n; i++)
        if (s->node[i] != NULL && (s->node[i]->port == port || s->tls_port[i] == port))
            return i;
    return -2;
}

static int sentinel_of_port(const rt_sentinel *s, long port)
{
    int j;
    for (j = 0; j < s->nsentinels; j++)
        if (s->sentinel[j].port == port || s->sentinel[j].tls_port == port)
            return j;
    return -2;
}

static const char *reply_error(const redisReply *r)
{
    if (r == NULL)
        return "no reply";
    return r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply";
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

/* The last `lines` lines of a file on stderr: a sentinel's log grows with
 * every event, and its end is what explains a wait that timed out. */
static void dump_tail(const char *path, int lines)
{
    FILE *f = fopen(path, "r");
    char *buf;
    long size, k;
    int seen = 0;

    if (f == NULL)
        return;
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
        (buf = malloc((size_t)size + 1)) == NULL) {
        fclose(f);
        return;
    }
    size = (long)fread(buf, 1, (size_t)size, f);
    buf[size] = '\0';
    fclose(f);
    for (k = size - 1; k > 0; k--)
        if (buf[k - 1] == '\n' && ++seen == lines)
            break;
    if (k < 0)
        k = 0;
    fprintf(stderr, "rltest: ---- %s (last %d lines) ----\n%s", path, lines, buf + k);
    free(buf);
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[PATH_MAX];

    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d != NULL)
        closedir(d);
    rmdir(dir);
}

/*
 * Arguments and config.
 */

/* The next word of a server argument string into word (which has room for
 * all of s), split and quoted as rt_redis_start() does: blanks separate,
 * '...' and "..." group, quotes are removed. Returns where the scan goes
 * on, or NULL when no word is left. */
static const char *next_word(const char *s, char *word)
{
    size_t n = 0;
    int have = 0;

    while (*s == ' ' || *s == '\t' || *s == '\n')
        s++;
    while (*s != '\0' && *s != ' ' && *s != '\t' && *s != '\n') {
        if (*s == '\'' || *s == '"') {
            char q = *s++;
            while (*s != '\0' && *s != q)
                word[n++] = *s++;
            if (*s == q)
                s++;
        } else {
            word[n++] = *s++;
        }
        have = 1;
    }
    word[n] = '\0';
    return have ? s : NULL;
}

/* The value of the last --requirepass in extra (malloc'd), as the server
 * will see it; NULL when there is none. *oom set when memory ran out. */
static char *find_password(const char *extra, int *oom)
{
    char *word, *pw = NULL;
    int after = 0;

    *oom = 0;
    if (extra == NULL)
        return NULL;
    word = malloc(strlen(extra) + 1);
    if (word == NULL) {
        *oom = 1;
        return NULL;
    }
    while ((extra = next_word(extra, word)) != NULL) {
        if (after) {
            free(pw);
            pw = strdup(word);
            if (pw == NULL)
                *oom = 1;
        }
        after = strcmp(word, "--requirepass") == 0;
    }
    free(word);
    return pw;
}

/* The node arguments every node gets: diskless sync at once, the password
 * to reach a primary (any node may become a replica), the test's extras.
 * For rt_redis_start(), which quotes with '...' or "..." (no escapes). */
static char *node_args(const char *pw, const char *extra)
{
    size_t cap = 128 + (pw != NULL ? strlen(pw) : 0) + (extra != NULL ? strlen(extra) : 0);
    char *args = malloc(cap);
    size_t len;

    if (args == NULL)
        return NULL;
    len = (size_t)snprintf(args, cap, "--repl-diskless-sync-delay 0");
    if (pw != NULL) {
        char q = strchr(pw, '\'') != NULL ? '"' : '\'';
        if (strchr(pw, q) != NULL) {
            fprintf(stderr, "rltest: a --requirepass holding both quote characters cannot "
                    "be passed on as --masterauth\n");
            free(args);
            return NULL;
        }
        len += (size_t)snprintf(args + len, cap - len, " --masterauth %c%s%c", q, pw, q);
    }
    snprintf(args + len, cap - len, " %s", extra != NULL ? extra : "");
    return args;
}

/* A config file value in double quotes, escaped as the config parser
 * (sdssplitargs) reads it. */
static void put_quoted(FILE *f, const char *v)
{
    fputc('"', f);
    for (; *v != '\0'; v++) {
        if (*v == '"' || *v == '\\')
            fprintf(f, "\\%c", *v);
        else if ((unsigned char)*v < 0x20)
            fprintf(f, "\\x%02x", (unsigned char)*v);
        else
            fputc(*v, f);
    }
    fputc('"', f);
}

/* A sentinel's TLS settings: its own TLS port beside the plain one, and
 * TLS to the nodes and the other sentinels (tls-replication). */
static void write_tls_conf(FILE *f, const rt_tls *t, int tls_port)
{
    fprintf(f, "tls-port %d\ntls-cert-file ", tls_port);
    put_quoted(f, t->server_crt);
    fprintf(f, "\ntls-key-file ");
    put_quoted(f, t->server_key);
    fprintf(f, "\ntls-ca-cert-file ");
    put_quoted(f, t->ca);
    fprintf(f, "\ntls-auth-clients no\ntls-replication yes\n");
}

/* Write sentinel j's config, monitoring the primary on primary_port. */
static int write_conf(const rt_sentinel *s, int j, int primary_port, const char *pw)
{
    const rt_sentinel_proc *p = &s->sentinel[j];
    const char *name = s->master_name;
    FILE *f = fopen(p->conf, "w");
    int ok;

    if (f == NULL) {
        fprintf(stderr, "rltest: cannot write %s: %s\n", p->conf, strerror(errno));
        return -1;
    }
    fprintf(f, "port %d\nbind 127.0.0.1\ndaemonize no\ndir ", p->port);
    put_quoted(f, s->dir);
    fprintf(f, "\nlogfile ");
    put_quoted(f, p->log);
    fprintf(f, "\nsentinel resolve-hostnames no\n"
            "sentinel monitor %s 127.0.0.1 %d %d\n"
            "sentinel down-after-milliseconds %s %ld\n"
            "sentinel failover-timeout %s %d\n"
            "sentinel parallel-syncs %s 1\n",
            name, primary_port, s->quorum, name, s->down_after_ms, name,
            RT_SENTINEL_FAILOVER_TIMEOUT_MS, name);
    if (pw != NULL) {
        fprintf(f, "sentinel auth-pass %s ", name);
        put_quoted(f, pw);
        fputc('\n', f);
    }
    if (s->tls)
        write_tls_conf(f, s->tls_files, p->tls_port);
    ok = !ferror(f);
    if (fclose(f) != 0 || !ok) {
        fprintf(stderr, "rltest: cannot write %s\n", p->conf);
        return -1;
    }
    return 0;
}

/*
 * Sentinel processes.
 */

/* Start sentinel j from its config. --sentinel as well, in case the binary
 * is not called redis-sentinel (Redis picks the mode from argv[0] or that
 * flag). */
static int spawn_sentinel(rt_sentinel *s, int j)
{
    rt_sentinel_proc *p = &s->sentinel[j];
    char *argv[] = { s->binary, p->conf, "--sentinel", NULL };
    pid_t pid = rt_spawn_logged(s->binary, argv, p->out);

    if (pid < 0)
        return -1;
    p->pid = pid;
    return 0;
}

static redisContext *connect_sentinel_port(int port, long connect_ms)
{
    struct timeval tv = { connect_ms / 1000, (connect_ms % 1000) * 1000 };
    struct timeval cmd = { 5, 0 };
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);

    if (c == NULL)
        return NULL;
    if (c->err || redisSetTimeout(c, cmd) != REDIS_OK) {
        redisFree(c);
        return NULL;
    }
    return c;
}

/* Whether an INFO server reply comes from a sentinel: Redis says
 * "redis_mode:sentinel", Valkey 8 "server_mode:sentinel" (no redis_mode). */
static int info_says_sentinel(const char *info)
{
    return strstr(info, "redis_mode:sentinel\r") != NULL ||
           strstr(info, "server_mode:sentinel\r") != NULL;
}

/* Whether the process on sentinel j's port is ours and answers PING. */
static int sentinel_answers(const rt_sentinel *s, int j)
{
    const rt_sentinel_proc *p = &s->sentinel[j];
    redisContext *c = connect_sentinel_port(p->port, 500);
    redisReply *r;
    char want[64];
    int ours = 0;

    if (c == NULL)
        return 0;
    r = redisCommand(c, "INFO server");
    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        snprintf(want, sizeof want, "process_id:%d\r", (int)p->pid);
        ours = strstr(r->str, want) != NULL && info_says_sentinel(r->str);
    }
    freeReplyObject(r);
    if (ours) {
        r = redisCommand(c, "PING");
        ours = r != NULL && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
        freeReplyObject(r);
    }
    redisFree(c);
    return ours;
}

/* Spawn sentinel j and wait until it answers. 0; -1 when it failed for
 * good; 1 when the process exited early (e.g. its port was taken). */
static int spawn_and_wait(rt_sentinel *s, int j, int64_t deadline)
{
    rt_sentinel_proc *p = &s->sentinel[j];
    int status;

    if (spawn_sentinel(s, j) != 0)
        return -1;
    for (;;) {
        if (waitpid(p->pid, &status, WNOHANG) == p->pid) {
            p->pid = -1;
            return 1;
        }
        if (sentinel_answers(s, j))
            return 0;
        if (rt_now_ms() >= deadline) {
            fprintf(stderr, "rltest: sentinel %d on port %d did not answer PING within %d ms\n",
                    j, p->port, RT_SENTINEL_PROC_MS);
            kill(p->pid, SIGKILL);
            while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR) {
            }
            p->pid = -1;
            return -1;
        }
        rt_sleep_ms(10);
    }
}

static void dump_sentinel_logs(const rt_sentinel_proc *p)
{
    dump_file(p->out);
    dump_file(p->log);
}

/* Start sentinel j on a free port, monitoring the primary on primary_port. */
static int start_sentinel(rt_sentinel *s, int j, int primary_port, const char *pw)
{
    rt_sentinel_proc *p = &s->sentinel[j];
    const int64_t deadline = rt_now_ms() + RT_SENTINEL_PROC_MS;
    int attempt;

    snprintf(p->conf, sizeof p->conf, "%s/sentinel-%d.conf", s->dir, j);
    snprintf(p->log, sizeof p->log, "%s/sentinel-%d.log", s->dir, j);
    snprintf(p->out, sizeof p->out, "%s/sentinel-%d.out", s->dir, j);
    for (attempt = 0; attempt < RT_SENTINEL_PORT_ATTEMPTS; attempt++) {
        int rc;
        p->port = rt_free_port();
        p->tls_port = s->tls ? rt_free_port() : 0;
        if (p->port < 0 || p->tls_port < 0 || write_conf(s, j, primary_port, pw) != 0)
            break;
        rc = spawn_and_wait(s, j, deadline);
        if (rc == 0)
            return 0;
        if (rc < 0)
            break;
        /* Exited early: maybe someone took the port between our probe and
         * the sentinel's bind. Try another port. */
        fprintf(stderr, "rltest: redis-sentinel exited at start (port %d), attempt %d\n",
                p->port, attempt + 1);
    }
    fprintf(stderr, "rltest: could not start sentinel %d (%s)\n", j, s->binary);
    dump_sentinel_logs(p);
    return -1;
}

static void terminate_sentinel(rt_sentinel_proc *p)
{
    if (p->pid <= 0)
        return;
    if (p->paused) {
        kill(p->pid, SIGCONT);
        p->paused = 0;
    }
    kill(p->pid, SIGTERM);
    rt_child_wait(p->pid, RT_SENTINEL_PROC_MS);
    p->pid = -1;
}

/*
 * Surveys: what every live sentinel and node says now.
 */

/* Value of `name` in a flat field/value array (a RESP2 map); NULL if absent. */
static const char *field(const redisReply *r, const char *name)
{
    size_t k;

    if (r == NULL || r->type != REDIS_REPLY_ARRAY)
        return NULL;
    for (k = 0; k + 1 < r->elements; k += 2)
        if (r->element[k]->type == REDIS_REPLY_STRING &&
            r->element[k + 1]->type == REDIS_REPLY_STRING && strcmp(r->element[k]->str, name) == 0)
            return r->element[k + 1]->str;
    return NULL;
}

/* The node a SENTINEL get-master-addr-by-name reply names: index, -1 none
 * (or not a reply of that shape), -2 not one of ours. */
static int named_node(const rt_sentinel *s, const redisReply *r)
{
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[1]->type != REDIS_REPLY_STRING)
        return -1;
    return node_of_port(s, strtol(r->element[1]->str, NULL, 10));
}

/* The "flags" of each entry of a SENTINEL REPLICAS / SENTINELS reply into
 * out[index], the entry recognised by its port through of_port(). */
static void read_entries(const rt_sentinel *s, const redisReply *r,
                         int (*of_port)(const rt_sentinel *, long), char (*out)[64], int max)
{
    size_t k;

    if (r == NULL || r->type != REDIS_REPLY_ARRAY)
        return;
    for (k = 0; k < r->elements; k++) {
        const char *port = field(r->element[k], "port"), *flags = field(r->element[k], "flags");
        int i = port != NULL ? of_port(s, strtol(port, NULL, 10)) : -1;
        if (i >= 0 && i < max)
            snprintf(out[i], sizeof out[i], "%s", flags != NULL ? flags : "?");
    }
}

static void survey_sentinel(const rt_sentinel *s, int j, sentinel_view *v)
{
    redisContext *c;
    redisReply *r;
    const char *name = s->master_name;

    memset(v, 0, sizeof *v);
    v->primary = -1;
    if (!sentinel_live(s, j) || (c = connect_sentinel_port(s->sentinel[j].port, 2000)) == NULL)
        return;
    r = redisCommand(c, "SENTINEL get-master-addr-by-name %s", name);
    v->up = r != NULL && (r->type == REDIS_REPLY_ARRAY || r->type == REDIS_REPLY_NIL);
    v->primary = named_node(s, r);
    freeReplyObject(r);
    r = redisCommand(c, "SENTINEL master %s", name);
    snprintf(v->flags, sizeof v->flags, "%s", field(r, "flags") != NULL ? field(r, "flags") : "");
    freeReplyObject(r);
    r = redisCommand(c, "SENTINEL replicas %s", name);
    read_entries(s, r, node_of_port, v->replica, RT_SENTINEL_MAX_NODES);
    if (r == NULL || r->type != REDIS_REPLY_ARRAY)
        v->up = 0;
    freeReplyObject(r);
    r = redisCommand(c, "SENTINEL sentinels %s", name);
    read_entries(s, r, sentinel_of_port, v->peer, RT_SENTINEL_MAX_SENTINELS);
    if (r == NULL || r->type != REDIS_REPLY_ARRAY)
        v->up = 0;
    freeReplyObject(r);
    redisFree(c);
}

/* ROLE of node i: ["master", ...] or ["slave", host, port, state, offset]. */
static void survey_node(const rt_sentinel *s, int i, node_view *v)
{
    redisContext *c;
    redisReply *r;

    memset(v, 0, sizeof *v);
    if (!node_live(s, i) || (c = rt_redis_connect(s->node[i])) == NULL)
        return;
    r = redisCommand(c, "ROLE");
    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
        r->element[0]->type == REDIS_REPLY_STRING) {
        v->up = 1;
        v->master = strcmp(r->element[0]->str, "master") == 0;
        if (!v->master && r->elements >= 4 && r->element[2]->type == REDIS_REPLY_INTEGER &&
            r->element[3]->type == REDIS_REPLY_STRING) {
            v->master_port = (int)r->element[2]->integer;
            /* "connected" is the state INFO shows as master_link_status:up. */
            v->link_up = strcmp(r->element[3]->str, "connected") == 0;
        }
    }
    freeReplyObject(r);
    redisFree(c);
}

static void survey(const rt_sentinel *s, deployment_view *v)
{
    int i;

    for (i = 0; i < s->nsentinels; i++)
        survey_sentinel(s, i, &v->sv[i]);
    for (i = 0; i < s->n; i++)
        survey_node(s, i, &v->nv[i]);
}

/* Print what everyone said, for a wait that timed out. */
static void describe(const rt_sentinel *s, const deployment_view *v)
{
    int i, j;

    for (j = 0; j < s->nsentinels; j++) {
        const sentinel_view *sv = &v->sv[j];
        char list[768] = "";
        size_t len = 0;
        if (!sentinel_live(s, j)) {
            fprintf(stderr, "rltest:   sentinel %d (port %d): %s\n", j, s->sentinel[j].port,
                    s->sentinel[j].paused ? "paused" : "down");
            continue;
        }
        if (!sv->up) {
            fprintf(stderr, "rltest:   sentinel %d (port %d): no answer\n", j,
                    s->sentinel[j].port);
            continue;
        }
        for (i = 0; i < s->n && len < sizeof list; i++)
            if (sv->replica[i][0] != '\0')
                len += (size_t)snprintf(list + len, sizeof list - len, " node %d=%s", i,
                                        sv->replica[i]);
        for (i = 0; i < s->nsentinels && len < sizeof list; i++)
            if (sv->peer[i][0] != '\0')
                len += (size_t)snprintf(list + len, sizeof list - len, " sentinel %d=%s", i,
                                        sv->peer[i]);
        fprintf(stderr, "rltest:   sentinel %d (port %d): names node %d, flags \"%s\"; "
                "lists%s\n", j, s->sentinel[j].port, sv->primary, sv->flags,
                len > 0 ? list : " nothing");
    }
    for (i = 0; i < s->n; i++) {
        const node_view *nv = &v->nv[i];
        int port = s->node[i] != NULL ? s->node[i]->port : 0;
        if (!node_live(s, i))
            fprintf(stderr, "rltest:   node %d (port %d): %s\n", i, port,
                    s->node[i] != NULL && s->node[i]->paused ? "paused" : "down");
        else if (!nv->up)
            fprintf(stderr, "rltest:   node %d (port %d): no answer\n", i, port);
        else if (nv->master)
            fprintf(stderr, "rltest:   node %d (port %d): master\n", i, port);
        else
            fprintf(stderr, "rltest:   node %d (port %d): replica of port %d, link %s\n", i,
                    port, nv->master_port, nv->link_up ? "up" : "down");
    }
    for (j = 0; j < s->nsentinels; j++)
        if (s->sentinel[j].log[0] != '\0')
            dump_tail(s->sentinel[j].log, RT_SENTINEL_LOG_TAIL);
}

/*
 * Conditions on a survey: each returns -1 while unmet, else its result.
 */

/* Every live node but `primary` is a replica of it with its link up. */
static int replicas_linked(const rt_sentinel *s, const deployment_view *v, int primary)
{
    int i;

    for (i = 0; i < s->n; i++) {
        if (i == primary || !node_live(s, i))
            continue;
        if (!v->nv[i].up || v->nv[i].master || !v->nv[i].link_up ||
            node_of_port(s, v->nv[i].master_port) != primary)
            return 0;
    }
    return 1;
}

/* Before any sentinel runs: node 0's replicas are linked to it. */
static int cond_linked(const rt_sentinel *s, const deployment_view *v, int arg)
{
    (void)arg;
    return node_live(s, 0) && v->nv[0].up && v->nv[0].master && replicas_linked(s, v, 0) ? 0
                                                                                      : -1;
}

/* Whether flags of a SENTINEL REPLICAS / SENTINELS entry say it is listed
 * as `role` and reachable. Other flags are let pass: a peer keeps
 * "master_down" (its last vote on the old primary) for 5 s after a
 * failover. */
static int listed_up(const char *flags, const char *role)
{
    return strstr(flags, role) != NULL && strstr(flags, "s_down") == NULL &&
           strstr(flags, "disconnected") == NULL;
}

/* Settled (see rt_sentinel_wait_ok()); arg >= 0: with node arg as primary. */
static int cond_ok(const rt_sentinel *s, const deployment_view *v, int arg)
{
    int i, j, p = -1, any = 0;

    for (j = 0; j < s->nsentinels; j++) {
        const sentinel_view *sv = &v->sv[j];
        if (!sentinel_live(s, j))
            continue;
        if (!sv->up || sv->primary < 0 || (p >= 0 && sv->primary != p) ||
            strcmp(sv->flags, "master") != 0)
            return -1;
        p = sv->primary;
        any = 1;
        for (i = 0; i < s->n; i++)
            if (i != p && node_live(s, i) && !listed_up(sv->replica[i], "slave"))
                return -1;
        for (i = 0; i < s->nsentinels; i++)
            if (i != j && sentinel_live(s, i) && !listed_up(sv->peer[i], "sentinel"))
                return -1;
    }
    if (!any || !node_live(s, p) || !v->nv[p].up || !v->nv[p].master ||
        !replicas_linked(s, v, p) || (arg >= 0 && p != arg))
        return -1;
    return p;
}

/* A quorum of live sentinels name one live node other than arg, and it
 * says it is master. */
static int cond_failover(const rt_sentinel *s, const deployment_view *v, int arg)
{
    int votes[RT_SENTINEL_MAX_NODES] = { 0 };
    int i, j;

    for (j = 0; j < s->nsentinels; j++) {
        int p = v->sv[j].primary;
        if (sentinel_live(s, j) && v->sv[j].up && p >= 0 && p != arg)
            votes[p]++;
    }
    for (i = 0; i < s->n; i++)
        if (votes[i] >= s->quorum && node_live(s, i) && v->nv[i].up && v->nv[i].master)
            return i;
    return -1;
}

typedef int (*survey_cond)(const rt_sentinel *s, const deployment_view *v, int arg);

/* Survey until cond holds or timeout_ms pass; cond's result, or -1 after
 * printing "<what> after N ms" and what everyone said. */
static int wait_views(const rt_sentinel *s, survey_cond cond, int arg, long timeout_ms,
                      const char *what)
{
    const int64_t start = rt_now_ms();
    deployment_view *v = malloc(sizeof *v);
    int rc;

    if (v == NULL) {
        fprintf(stderr, "rltest: out of memory\n");
        return -1;
    }
    for (;;) {
        survey(s, v);
        rc = cond(s, v, arg);
        if (rc >= 0 || rt_now_ms() - start >= timeout_ms)
            break;
        rt_sleep_ms(RT_SENTINEL_POLL_MS);
    }
    if (rc < 0) {
        fprintf(stderr, "rltest: %s after %ld ms; they said:\n", what, timeout_ms);
        describe(s, v);
    }
    free(v);
    return rc;
}

/*
 * Public functions.
 */

static int name_ok(const char *name)
{
    size_t n = name != NULL ? strlen(name) : 0;

    if (n == 0 || n >= sizeof ((rt_sentinel *)0)->master_name)
        return 0;
    return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") ==
           n;
}

/* Node i's arguments into buf: the common ones, a replica's --replicaof
 * node 0 (its TLS port with TLS), and with TLS a TLS port of its own and
 * replication over TLS. */
static void node_start_args(rt_sentinel *s, int i, const char *args, char *buf, size_t cap)
{
    size_t len = 0;

    buf[0] = '\0';
    if (i > 0)
        len = (size_t)snprintf(buf, cap, "--replicaof 127.0.0.1 %d ",
                               s->tls ? s->tls_port[0] : s->node[0]->port);
    if (s->tls) {
        s->tls_port[i] = rt_free_port();
        rt_tls_server_args(s->tls_files, s->tls_port[i], NULL, NULL, 0, buf + len, cap - len);
        len += strlen(buf + len);
        len += (size_t)snprintf(buf + len, cap - len, " --tls-replication yes ");
    }
    snprintf(buf + len, cap - len, "%s", args);
}

rt_sentinel *rt_sentinel_start_ex(int replicas, int nsentinels, const char *master_name,
                                  const char *extra_server_args, long down_after_ms)
{
    return rt_sentinel_start_tls(replicas, nsentinels, master_name, extra_server_args,
                                 down_after_ms, NULL);
}

rt_sentinel *rt_sentinel_start_tls(int replicas, int nsentinels, const char *master_name,
                                   const char *extra_server_args, long down_after_ms,
                                   const rt_tls *tls)
{
    const char *tmp = getenv("TMPDIR");
    rt_sentinel *s;
    char *pw = NULL, *args = NULL, *rargs = NULL;
    size_t len, cap;
    int i, j, oom;

    if (replicas < 0 || replicas > RT_SENTINEL_MAX_REPLICAS || nsentinels < 1 ||
        nsentinels > RT_SENTINEL_MAX_SENTINELS || down_after_ms <= 0 || !name_ok(master_name)) {
        fprintf(stderr, "rltest: rt_sentinel_start(%d replicas, %d sentinels, \"%s\", "
                "down-after %ld ms): at most %d replicas, 1 to %d sentinels, a name of "
                "[A-Za-z0-9._-] shorter than 64\n", replicas, nsentinels,
                master_name != NULL ? master_name : "(null)", down_after_ms,
                RT_SENTINEL_MAX_REPLICAS, RT_SENTINEL_MAX_SENTINELS);
        return NULL;
    }
    s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->replicas = replicas;
    s->n = 1 + replicas;
    s->nsentinels = nsentinels;
    s->quorum = nsentinels / 2 + 1;
    s->down_after_ms = down_after_ms;
    s->tls = tls != NULL;
    s->tls_files = tls;
    snprintf(s->master_name, sizeof s->master_name, "%s", master_name);
    for (j = 0; j < RT_SENTINEL_MAX_SENTINELS; j++)
        s->sentinel[j].pid = -1;
    s->binary = rt_find_binary("RL_REDIS_SENTINEL", "redis-sentinel");
    if (s->binary == NULL)
        goto fail;
    if (tmp == NULL || tmp[0] == '\0')
        tmp = "/tmp";
    snprintf(s->dir, sizeof s->dir, "%s/rltest-sentinel-XXXXXX", tmp);
    if (mkdtemp(s->dir) == NULL) {
        fprintf(stderr, "rltest: mkdtemp %s: %s\n", s->dir, strerror(errno));
        s->dir[0] = '\0';
        goto fail;
    }

    pw = find_password(extra_server_args, &oom);
    args = oom ? NULL : node_args(pw, extra_server_args);
    if (args == NULL)
        goto fail;
    cap = strlen(args) + 2048;
    rargs = malloc(cap);
    if (rargs == NULL)
        goto fail;
    for (i = 0; i < s->n; i++) {
        node_start_args(s, i, args, rargs, cap);
        s->node[i] = rt_redis_start(rargs);
        if (s->node[i] == NULL)
            goto fail;
    }
    /* Linked before the sentinels start: their first INFO of the primary
     * then lists every replica (the next would come 10 s later). */
    if (wait_views(s, cond_linked, 0, RT_SENTINEL_SETTLE_MS, "the replicas are not linked") < 0)
        goto fail;

    for (j = 0; j < nsentinels; j++)
        if (start_sentinel(s, j, s->tls ? s->tls_port[0] : s->node[0]->port, pw) != 0)
            goto fail;
    len = (size_t)snprintf(s->url, sizeof s->url, "%s://", s->tls ? "sentinels" : "sentinel");
    for (j = 0; j < nsentinels && len < sizeof s->url; j++)
        len += (size_t)snprintf(s->url + len, sizeof s->url - len, "%s127.0.0.1:%d",
                                j > 0 ? "," : "",
                                s->tls ? s->sentinel[j].tls_port : s->sentinel[j].port);
    if (len < sizeof s->url)
        snprintf(s->url + len, sizeof s->url - len, "/%s", master_name);

    if (wait_views(s, cond_ok, 0, RT_SENTINEL_SETTLE_MS, "the new deployment is not settled") <
        0)
        goto fail;
    free(pw);
    free(args);
    free(rargs);
    return s;
fail:
    fprintf(stderr, "rltest: could not start a Sentinel deployment of 1 primary, %d replicas "
            "and %d sentinels\n", replicas, nsentinels);
    free(pw);
    free(args);
    free(rargs);
    rt_sentinel_stop(s);
    return NULL;
}

rt_sentinel *rt_sentinel_start(int replicas, int nsentinels, const char *master_name,
                               const char *extra_server_args)
{
    return rt_sentinel_start_ex(replicas, nsentinels, master_name, extra_server_args,
                                RT_SENTINEL_DOWN_AFTER_MS);
}

void rt_sentinel_stop(rt_sentinel *s)
{
    int i;

    if (s == NULL)
        return;
    /* The sentinels first, so that none reacts to the nodes going away. */
    for (i = 0; i < s->nsentinels; i++)
        terminate_sentinel(&s->sentinel[i]);
    for (i = s->n - 1; i >= 0; i--)
        rt_redis_stop(s->node[i]);
    /* Config files, logs, and whatever temporary file a sentinel left
     * there while rewriting its config. */
    if (s->dir[0] != '\0')
        remove_dir(s->dir);
    free(s->binary);
    free(s);
}

const char *rt_sentinel_url(const rt_sentinel *s)
{
    return s != NULL ? s->url : NULL;
}

int rt_sentinel_primary_seen_by(rt_sentinel *s, int j)
{
    redisContext *c;
    redisReply *r;
    int p;

    if (s == NULL || !sentinel_live(s, j))
        return -1;
    c = rt_sentinel_connect_sentinel(s, j);
    if (c == NULL)
        return -1;
    r = redisCommand(c, "SENTINEL get-master-addr-by-name %s", s->master_name);
    p = named_node(s, r);
    if (p < 0)
        fprintf(stderr, "rltest: sentinel %d: get-master-addr-by-name %s: %s\n", j,
                s->master_name,
                r != NULL && r->type == REDIS_REPLY_ARRAY && p == -2 ? "not one of our nodes"
                                                                    : reply_error(r));
    freeReplyObject(r);
    redisFree(c);
    return p < 0 ? -1 : p;
}

int rt_sentinel_primary(rt_sentinel *s)
{
    int votes[RT_SENTINEL_MAX_NODES] = { 0 };
    int i, j, answered = 0;

    if (s == NULL)
        return -1;
    for (j = 0; j < s->nsentinels; j++) {
        int p = sentinel_live(s, j) ? rt_sentinel_primary_seen_by(s, j) : -1;
        if (p >= 0) {
            votes[p]++;
            answered++;
        }
    }
    for (i = 0; i < s->n; i++)
        if (2 * votes[i] > answered)
            return i;
    fprintf(stderr, "rltest: the sentinels do not agree on a primary (%d answered)\n",
            answered);
    return -1;
}

int rt_sentinel_wait_failover(rt_sentinel *s, int old, long timeout_ms)
{
    char what[96];

    if (s == NULL)
        return -1;
    snprintf(what, sizeof what, "no primary other than node %d named by %d sentinels", old,
             s->quorum);
    return wait_views(s, cond_failover, old, timeout_ms, what);
}

int rt_sentinel_wait_ok(rt_sentinel *s, long timeout_ms)
{
    if (s == NULL)
        return -1;
    return wait_views(s, cond_ok, -1, timeout_ms, "the deployment is not settled") < 0 ? -1 : 0;
}

redisContext *rt_sentinel_connect_node(rt_sentinel *s, int i)
{
    if (s == NULL || i < 0 || i >= s->n || s->node[i] == NULL)
        return NULL;
    return rt_redis_connect(s->node[i]);
}

int rt_sentinel_kill_node(rt_sentinel *s, int i)
{
    if (s == NULL || i < 0 || i >= s->n)
        return -1;
    return rt_redis_kill(s->node[i]);
}

int rt_sentinel_kill_primary(rt_sentinel *s)
{
    int p = rt_sentinel_primary(s);

    if (p < 0 || rt_redis_kill(s->node[p]) != 0) {
        fprintf(stderr, "rltest: no running primary to kill (sentinels name node %d)\n", p);
        return -1;
    }
    return p;
}

int rt_sentinel_restart_node(rt_sentinel *s, int i, long timeout_ms)
{
    if (s == NULL || i < 0 || i >= s->n)
        return -1;
    if (rt_redis_restart(s->node[i]) != 0)
        return -1;
    return timeout_ms > 0 ? rt_sentinel_wait_ok(s, timeout_ms) : 0;
}

redisContext *rt_sentinel_connect_sentinel(rt_sentinel *s, int j)
{
    redisContext *c;

    if (s == NULL || j < 0 || j >= s->nsentinels)
        return NULL;
    c = connect_sentinel_port(s->sentinel[j].port, 2000);
    if (c == NULL)
        fprintf(stderr, "rltest: cannot connect to sentinel %d on port %d\n", j,
                s->sentinel[j].port);
    return c;
}

int rt_sentinel_kill_sentinel(rt_sentinel *s, int j)
{
    rt_sentinel_proc *p;
    int status;

    if (s == NULL || j < 0 || j >= s->nsentinels || s->sentinel[j].pid <= 0)
        return -1;
    p = &s->sentinel[j];
    kill(p->pid, SIGKILL);
    while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR) {
    }
    p->pid = -1;
    p->paused = 0;
    return 0;
}

int rt_sentinel_pause_sentinel(rt_sentinel *s, int j)
{
    if (s == NULL || j < 0 || j >= s->nsentinels || s->sentinel[j].pid <= 0 ||
        kill(s->sentinel[j].pid, SIGSTOP) != 0)
        return -1;
    s->sentinel[j].paused = 1;
    return 0;
}

int rt_sentinel_resume_sentinel(rt_sentinel *s, int j)
{
    if (s == NULL || j < 0 || j >= s->nsentinels || s->sentinel[j].pid <= 0 ||
        kill(s->sentinel[j].pid, SIGCONT) != 0)
        return -1;
    s->sentinel[j].paused = 0;
    return 0;
}

int rt_sentinel_restart_sentinel(rt_sentinel *s, int j)
{
    int64_t deadline;

    if (s == NULL || j < 0 || j >= s->nsentinels || s->sentinel[j].conf[0] == '\0')
        return -1;
    terminate_sentinel(&s->sentinel[j]);
    deadline = rt_now_ms() + RT_SENTINEL_PROC_MS;
    /* The same port must be reused; if the new process exits at once (the
     * port still busy for a moment), try again until the deadline. */
    for (;;) {
        int rc = spawn_and_wait(s, j, deadline);
        if (rc == 0)
            return 0;
        if (rc < 0 || rt_now_ms() >= deadline)
            break;
        rt_sleep_ms(50);
    }
    fprintf(stderr, "rltest: could not restart sentinel %d on port %d\n", j,
            s->sentinel[j].port);
    dump_sentinel_logs(&s->sentinel[j]);
    return -1;
}
