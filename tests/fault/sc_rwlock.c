/*
 * Read-write lock scenarios (src/rwlock.c): worker processes, each with
 * reader threads and a writer thread on one name, while the driver
 * SIGKILLs a random worker now and then (mid-section, mid-wait, holding
 * either side) and starts a new one in its place.
 *
 *   rw_kill          on a single server
 *   rw_cluster_kill  on a 3-master Redis Cluster
 *
 * The referee for a read-write lock: a section adds "<pid>.<thread>" ->
 * 'r' or 'w' to the referee hash rf:{name}:in, then reads the hash back:
 * a writer must find itself alone, a reader no 'w'. Both write before they
 * read, on one referee server, so of two sections that overlap at least
 * the later one sees the other. Each overlap counts one violation. A
 * killed worker's entries are removed once it is reaped: until its lease
 * runs out, nobody may enter beside it anyway.
 *
 * Verdict: 0 violations, no flag raised in a survivor, every survivor's
 * writer got in (no writer starved by the readers), reads and writes done.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault.h"
#include "scenarios.h"

#define RW_LEASE 1000
#define RW_PROCS 3

typedef struct rw_thread {
    pthread_t th;
    rl_client *c;
    int write, index;
    long long sections, violations, flags, timeouts, fails;
} rw_thread;

/* One section; 1 when it overlapped a section it must not overlap. */
static int rw_section(redisContext *ref, const char *name, const char *me, int write,
                      long work_us, long long *flags)
{
    redisReply *r;
    int bad = 0;
    size_t i;

    fx_cmd(ref, "HSET rf:{%s}:in %s %s", name, me, write ? "w" : "r");
    r = redisCommand(ref, "HVALS rf:{%s}:in", name);
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        bad = -1;
    } else if (write) {
        bad = r->elements != 1;
    } else {
        for (i = 0; i < r->elements; i++)
            if (r->element[i]->type == REDIS_REPLY_STRING && r->element[i]->str[0] == 'w')
                bad = 1;
    }
    if (r)
        freeReplyObject(r);
    if (bad > 0)
        fx_cmd(ref, "INCR rf:{%s}:viol", name);
    if (work_us)
        usleep((useconds_t)work_us);     /* the work done inside */
    if (rl_interrupted())
        (*flags)++;
    fx_cmd(ref, "HDEL rf:{%s}:in %s", name, me);
    return bad;
}

static void *rw_thread_main(void *arg)
{
    rw_thread *t = arg;
    redisContext *ref = fx_connect((int)fx_argl("ref_port", 0), 5000);
    const char *name = fx_arg("name", "rw");
    long work_us = fx_argl("work_us", 2000);
    rl_lock *l = NULL;
    char me[48];
    int rc;

    snprintf(me, sizeof me, "%d.%d", (int)getpid(), t->index);
    if (!ref || rl_lock_new_kind(&l, t->c, name, strlen(name),
                                 t->write ? RL_KIND_WRITE : RL_KIND_READ) != RL_OK) {
        t->fails++;
        goto out;
    }
    while (fx_cmd(ref, "EXISTS rf:stop") == 0) {
        rc = rl_lock_try_acquire(l, 5000, RL_LEASE_WATCHDOG);
        if (rc == RL_ETIMEDOUT) {
            t->timeouts++;
            continue;
        }
        if (rc != RL_OK) {
            fx_note("rw worker: acquire: %s (%s)", rl_strerror(rc), rl_last_error());
            t->fails++;
            continue;
        }
        if (rw_section(ref, name, me, t->write, work_us, &t->flags) > 0)
            t->violations++;
        t->sections++;
        if ((rc = rl_lock_release(l)) != RL_OK) {
            fx_note("rw worker: release: %s (%s)", rl_strerror(rc), rl_last_error());
            t->fails++;
        }
        if (t->write)
            usleep(100000);  /* writers come now and then; readers all the time */
    }
out:
    rl_lock_free(l);
    if (ref)
        redisFree(ref);
    return NULL;
}

/* Worker: `readers` reader threads and one writer thread on `name`. */
int role_rw_loop(void)
{
    rl_client *c = fx_worker_client();
    redisContext *ref = fx_connect((int)fx_argl("ref_port", 0), 5000);
    int n = (int)fx_argl("readers", 3) + 1, i;
    long long reads = 0, writes = 0, viol = 0, flags = 0, timeouts = 0, fails = 0;
    rw_thread *t = calloc((size_t)n, sizeof *t);

    if (!ref || !t)
        return 91;
    fx_event_push(ref, "rw:ready", "%d", (int)getpid());
    for (i = 0; i < n; i++) {
        t[i].c = c;
        t[i].index = i;
        t[i].write = i == 0;
        if (pthread_create(&t[i].th, NULL, rw_thread_main, &t[i]) != 0)
            return 92;
    }
    for (i = 0; i < n; i++) {
        pthread_join(t[i].th, NULL);
        *(t[i].write ? &writes : &reads) += t[i].sections;
        viol += t[i].violations;
        flags += t[i].flags;
        timeouts += t[i].timeouts;
        fails += t[i].fails;
    }
    fx_report(ref, "reads=%lld writes=%lld violations=%lld flags=%lld timeouts=%lld fails=%lld",
              reads, writes, viol, flags, timeouts, fails);
    free(t);
    rl_client_free(c);
    redisFree(ref);
    return fails ? 1 : 0;
}

static pid_t spawn_worker(const fx_env *env, const char *name)
{
    if (env->cl)
        return fx_spawnf("rw_loop", 300, "url=%s ref_port=%d name=%s lease=%d readers=3",
                         env->cl->seeds, env->ref->port, name, RW_LEASE);
    return fx_spawnf("rw_loop", 300, "lock_port=%d ref_port=%d name=%s lease=%d readers=3",
                     env->lock->port, env->ref->port, name, RW_LEASE);
}

/* Remove a dead worker's entries from the referee's hash. */
static void forget(redisContext *ref, const char *name, pid_t pid)
{
    redisReply *r = redisCommand(ref, "HKEYS rf:{%s}:in", name);
    char prefix[24];
    size_t i, pl = (size_t)snprintf(prefix, sizeof prefix, "%d.", (int)pid);

    if (r && r->type == REDIS_REPLY_ARRAY)
        for (i = 0; i < r->elements; i++)
            if (r->element[i]->len > pl && memcmp(r->element[i]->str, prefix, pl) == 0)
                fx_cmd(ref, "HDEL rf:{%s}:in %s", name, r->element[i]->str);
    if (r)
        freeReplyObject(r);
}

static int run(fx_env *env)
{
    const char *name = "rw";
    int kills = (int)fx_scale(4, 40), k, i, bad, pass, ready = 0;
    unsigned seed = (unsigned)rt_now_us();
    pid_t pids[RW_PROCS];
    char msg[64];
    fx_reports rep;
    long long viol;

    for (i = 0; i < RW_PROCS; i++)
        pids[i] = spawn_worker(env, name);
    for (i = 0; i < RW_PROCS; i++)
        ready += fx_event_wait(env->rc, "rw:ready", msg, sizeof msg, 30000) == 0;
    for (k = 0; k < kills && ready == RW_PROCS; k++) {
        int v = (int)(rand_r(&seed) % RW_PROCS);
        /* Let it run a while, somewhere in its cycle, then kill it. */
        rt_sleep_ms(300 + (long)(rand_r(&seed) % 700));
        kill(pids[v], SIGKILL);
        rt_child_wait(pids[v], 10000);
        forget(env->rc, name, pids[v]);
        pids[v] = spawn_worker(env, name);
        if (fx_event_wait(env->rc, "rw:ready", msg, sizeof msg, 30000) != 0)
            ready--;
    }
    /* The survivors run on for a lease or two after the last kill. */
    rt_sleep_ms(2 * RW_LEASE);
    fx_cmd(env->rc, "SET rf:stop 1");
    bad = fx_wait_all(pids, RW_PROCS, 60000);
    viol = fx_cmd(env->rc, "INCRBY rf:{%s}:viol 0", name);
    if (fx_reports_load(env->rc, &rep) != 0)
        return fx_verdict(fx_scenario, 0, "error=referee_unreadable");
    pass = bad == 0 && ready == RW_PROCS && viol == 0 && rep.n == RW_PROCS &&
           fx_reports_sum(&rep, "violations") == 0 && fx_reports_sum(&rep, "flags") == 0 &&
           fx_reports_sum(&rep, "fails") == 0 && fx_reports_sum(&rep, "reads") > 0 &&
           fx_reports_sum(&rep, "writes") > 0;
    /* No writer starved: every survivor's writer got in. */
    for (i = 0; i < rep.n; i++)
        if (!strstr(rep.lines[i], " writes=") || strstr(rep.lines[i], " writes=0 "))
            pass = 0;
    i = fx_verdict(fx_scenario, pass,
                   "kills=%d/%d violations=%lld reads=%lld writes=%lld flags=%lld "
                   "timeouts=%lld fails=%lld workers_failed=%d", k, kills, viol,
                   fx_reports_sum(&rep, "reads"), fx_reports_sum(&rep, "writes"),
                   fx_reports_sum(&rep, "flags"), fx_reports_sum(&rep, "timeouts"),
                   fx_reports_sum(&rep, "fails"), bad);
    fx_reports_free(&rep);
    return i;
}

int sc_rw_kill(void)
{
    fx_env env;
    int rc;

    if (fx_env_start(&env, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_redis");
    rc = run(&env);
    fx_env_stop(&env);
    return rc;
}

int sc_rw_cluster_kill(void)
{
    fx_env env;
    int rc;

    if (fx_env_start_cluster(&env, 3, 0, 2000, NULL) != 0)
        return fx_verdict(fx_scenario, 0, "error=no_cluster");
    rc = run(&env);
    fx_env_stop(&env);
    return rc;
}
