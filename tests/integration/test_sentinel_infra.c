/*
 * Self-test of tests/common/rt_sentinel: a real Sentinel deployment on
 * loopback forms with every sentinel knowing the primary, the replicas and
 * each other; fails over when the primary is killed, with the data it had
 * replicated; takes the old primary back as a replica; works with a
 * password and with a sentinel down; and leaves no process behind, not even
 * when the test itself dies. Without redis-server or redis-sentinel the
 * setups fail, and so does this test.
 */
#include "it_common.h"
#include "rt_sentinel.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NAME "rltest-primary"
#define FAILOVER_WITHIN_MS 30000
#define SETTLE_WITHIN_MS 15000
#define REJOIN_WITHIN_MS 30000

static rt_sentinel *fixture;

static int setup_deployment(void **state, int replicas, const char *name, const char *extra)
{
    int64_t t0 = rt_now_ms();

    fixture = rt_sentinel_start(replicas, 3, name, extra);
    if (fixture == NULL) {
        fprintf(stderr, "sentinel_infra: cannot start a Sentinel deployment: this test FAILS "
                "without redis-server and redis-sentinel\n");
        return -1;
    }
    printf("# 1 primary, %d replicas, 3 sentinels settled after %lld ms\n", replicas,
           (long long)(rt_now_ms() - t0));
    *state = fixture;
    return 0;
}

static int setup_2x3(void **state)
{
    return setup_deployment(state, 2, NAME, NULL);
}

static int setup_auth(void **state)
{
    return setup_deployment(state, 1, "auth.primary_1", "--requirepass " IT_PASSWORD);
}

static int teardown_deployment(void **state)
{
    (void)state;
    rt_sentinel_stop(fixture);
    fixture = NULL;
    return 0;
}

/* One command on node i, on a connection of its own; the caller frees the reply. */
static redisReply *on_node(rt_sentinel *s, int i, const char *fmt, ...)
{
    redisContext *c = rt_sentinel_connect_node(s, i);
    redisReply *r;
    va_list ap;

    if (c == NULL)
        fail_msg("cannot connect to node %d", i);
    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    if (r == NULL)
        fail_msg("node %d: no reply to \"%s\"", i, fmt);
    return r;
}

/* The same on sentinel j. */
static redisReply *on_sentinel(rt_sentinel *s, int j, const char *fmt, ...)
{
    redisContext *c = rt_sentinel_connect_sentinel(s, j);
    redisReply *r;
    va_list ap;

    if (c == NULL)
        fail_msg("cannot connect to sentinel %d", j);
    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    if (r == NULL)
        fail_msg("sentinel %d: no reply to \"%s\"", j, fmt);
    return r;
}

/* Value of a field of a flat field/value array (a RESP2 map), or "". */
static const char *field(const redisReply *r, const char *name)
{
    size_t k;

    for (k = 0; r->type == REDIS_REPLY_ARRAY && k + 1 < r->elements; k += 2)
        if (strcmp(r->element[k]->str, name) == 0)
            return r->element[k + 1]->str;
    return "";
}

/* Assert a reply's type and text (a string, a status or an error). */
static void expect_reply(redisReply *r, int type, const char *want, const char *what)
{
    if (r == NULL)
        fail_msg("%s: no reply", what);
    if (r->type != type || r->str == NULL || strcmp(r->str, want) != 0)
        fail_msg("%s: reply of type %d \"%s\", expected type %d \"%s\"", what, r->type,
                 r->str != NULL ? r->str : "", type, want);
    freeReplyObject(r);
}

/* Assert node i's ROLE: "master", or "slave" of the node `of` with its link up. */
static void expect_role(rt_sentinel *s, int i, int of)
{
    redisReply *r = on_node(s, i, "ROLE");

    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    if (of < 0) {
        assert_string_equal(r->element[0]->str, "master");
    } else {
        assert_string_equal(r->element[0]->str, "slave");
        IT_EQ(r->element[2]->integer, s->node[of]->port);
        assert_string_equal(r->element[3]->str, "connected");
    }
    freeReplyObject(r);
}

/* Whether sentinel `asker` lists sentinel `about` with `flag` among its flags. */
static int peer_flagged(rt_sentinel *s, int asker, int about, const char *flag)
{
    redisContext *c = rt_sentinel_connect_sentinel(s, asker);
    redisReply *r = c != NULL ? redisCommand(c, "SENTINEL sentinels %s", s->master_name) : NULL;
    char port[16];
    int yes = 0;
    size_t k;

    snprintf(port, sizeof port, "%d", s->sentinel[about].port);
    for (k = 0; r != NULL && r->type == REDIS_REPLY_ARRAY && k < r->elements; k++)
        if (strcmp(field(r->element[k], "port"), port) == 0)
            yes = strstr(field(r->element[k], "flags"), flag) != NULL;
    freeReplyObject(r);
    if (c != NULL)
        redisFree(c);
    return yes;
}

/* Whether a process is gone (or a zombie waiting for init to reap it). */
static int process_gone(pid_t pid)
{
    char path[64], buf[256], *p;
    FILE *f;
    size_t n;

    if (kill(pid, 0) != 0)
        return errno == ESRCH;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (f == NULL)
        return 1;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');
    return p != NULL && p[1] == ' ' && p[2] == 'Z';
}

/* (1) 2 replicas, 3 sentinels: agreed at start; the primary SIGKILLed and
 * failed over with its data; the old primary back as a replica; nothing
 * left after the stop. */
static void test_failover(void **state)
{
    rt_sentinel *s = *state;
    pid_t pids[RT_SENTINEL_MAX_NODES + RT_SENTINEL_MAX_SENTINELS];
    char dirs[RT_SENTINEL_MAX_NODES + 1][256], want[512];
    int i, j, np = 0, nd = 0, old, nm;
    int64_t t0;
    redisContext *c;
    redisReply *r;

    IT_EQ(s->n, 3);
    IT_EQ(s->replicas, 2);
    IT_EQ(s->nsentinels, 3);
    IT_EQ(s->quorum, 2);
    snprintf(want, sizeof want, "sentinel://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d/" NAME,
             s->sentinel[0].port, s->sentinel[1].port, s->sentinel[2].port);
    assert_string_equal(rt_sentinel_url(s), want);
    printf("# %s\n", rt_sentinel_url(s));

    /* Every sentinel, asked directly: node 0 is the primary, with 2
     * replicas and 2 other sentinels, quorum 2, nothing down. */
    IT_EQ(rt_sentinel_primary(s), 0);
    for (j = 0; j < 3; j++) {
        char port[16];
        IT_EQ(rt_sentinel_primary_seen_by(s, j), 0);
        r = on_sentinel(s, j, "SENTINEL get-master-addr-by-name " NAME);
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        assert_string_equal(r->element[0]->str, "127.0.0.1");
        snprintf(port, sizeof port, "%d", s->node[0]->port);
        assert_string_equal(r->element[1]->str, port);
        freeReplyObject(r);
        r = on_sentinel(s, j, "SENTINEL master " NAME);
        assert_string_equal(field(r, "flags"), "master");
        assert_string_equal(field(r, "num-slaves"), "2");
        assert_string_equal(field(r, "num-other-sentinels"), "2");
        assert_string_equal(field(r, "quorum"), "2");
        IT_EQ(atol(field(r, "down-after-milliseconds")), RT_SENTINEL_DOWN_AFTER_MS);
        IT_EQ(atol(field(r, "failover-timeout")), RT_SENTINEL_FAILOVER_TIMEOUT_MS);
        assert_string_equal(field(r, "parallel-syncs"), "1");
        freeReplyObject(r);
        expect_reply(on_sentinel(s, j, "SENTINEL ckquorum " NAME), REDIS_REPLY_STATUS,
                     "OK 3 usable Sentinels. Quorum and failover authorization can be reached",
                     "SENTINEL ckquorum");
    }
    expect_role(s, 0, -1);
    expect_role(s, 1, 0);
    expect_role(s, 2, 0);
    /* Nothing fails over in a healthy deployment: the wait gives up (and
     * says what everyone said, on stderr). */
    IT_EQ(rt_sentinel_wait_failover(s, 0, 100), -1);

    /* A key written on the primary and acknowledged by both replicas. */
    c = rt_sentinel_connect_node(s, 0);
    assert_non_null(c);
    expect_reply(redisCommand(c, "SET k v0"), REDIS_REPLY_STATUS, "OK", "SET");
    r = redisCommand(c, "WAIT 2 5000");
    assert_non_null(r);
    IT_EQ(r->integer, 2);
    freeReplyObject(r);
    redisFree(c);

    t0 = rt_now_ms();
    old = rt_sentinel_kill_primary(s);
    IT_EQ(old, 0);
    IT_EQ(s->node[0]->pid, -1);
    nm = rt_sentinel_wait_failover(s, old, FAILOVER_WITHIN_MS);
    printf("# failover from node %d to node %d took %lld ms\n", old, nm,
           (long long)(rt_now_ms() - t0));
    assert_true(nm == 1 || nm == 2);
    expect_role(s, nm, -1);
    expect_reply(on_node(s, nm, "GET k"), REDIS_REPLY_STRING, "v0", "GET on the new primary");
    IT_EQ(rt_sentinel_wait_ok(s, SETTLE_WITHIN_MS), 0);
    printf("# settled %lld ms after the kill\n", (long long)(rt_now_ms() - t0));
    IT_EQ(rt_sentinel_primary(s), nm);
    for (j = 0; j < 3; j++)
        IT_EQ(rt_sentinel_primary_seen_by(s, j), nm);
    expect_role(s, 3 - nm, nm);

    /* The old primary comes back empty, as a primary; the sentinels make it
     * a replica of the new one, and it gets the key from it. */
    t0 = rt_now_ms();
    IT_EQ(rt_sentinel_restart_node(s, old, REJOIN_WITHIN_MS), 0);
    printf("# node %d back as a replica after %lld ms\n", old, (long long)(rt_now_ms() - t0));
    expect_role(s, old, nm);
    expect_reply(on_node(s, old, "GET k"), REDIS_REPLY_STRING, "v0", "GET on the old primary");
    IT_EQ(rt_sentinel_primary(s), nm);

    /* Stop: every process gone, every directory removed. */
    for (i = 0; i < s->n; i++) {
        pids[np++] = s->node[i]->pid;
        snprintf(dirs[nd++], sizeof dirs[0], "%s", s->node[i]->dir);
    }
    for (j = 0; j < s->nsentinels; j++)
        pids[np++] = s->sentinel[j].pid;
    snprintf(dirs[nd++], sizeof dirs[0], "%s", s->dir);
    rt_sentinel_stop(s);
    fixture = NULL;
    for (i = 0; i < np; i++) {
        assert_true(pids[i] > 0);
        IT_EQ(kill(pids[i], 0) == -1 && errno == ESRCH, 1);
    }
    for (i = 0; i < nd; i++) {
        struct stat st;
        IT_EQ(stat(dirs[i], &st), -1);
    }
}

/* (2) With a password, and with sentinels down: replicas authenticate to
 * their primary (masterauth), sentinels to the nodes (auth-pass) while
 * taking none themselves; 2 of 3 sentinels fail over; a restarted sentinel
 * keeps its id and learns the new primary; a paused one is seen down. */
static void test_auth_and_sentinels(void **state)
{
    rt_sentinel *s = *state;
    char myid[64];
    int nm;
    int64_t t0;
    redisContext *c;
    redisReply *r;

    IT_EQ(s->n, 2);
    assert_string_equal(s->node[0]->password, IT_PASSWORD);
    expect_role(s, 1, 0);
    /* The nodes want the password; the sentinels do not. */
    c = redisConnect("127.0.0.1", s->node[0]->port);
    assert_true(c != NULL && c->err == 0);
    r = redisCommand(c, "PING");
    assert_true(r != NULL && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOAUTH", 6) == 0);
    freeReplyObject(r);
    redisFree(c);
    expect_reply(on_sentinel(s, 0, "PING"), REDIS_REPLY_STATUS, "PONG", "PING a sentinel");
    r = on_sentinel(s, 0, "SENTINEL master auth.primary_1");
    assert_string_equal(field(r, "flags"), "master");
    freeReplyObject(r);
    expect_reply(on_node(s, 0, "SET k v1"), REDIS_REPLY_STATUS, "OK", "SET");

    /* Sentinel 2 down, then the primary: the other two fail over. */
    r = on_sentinel(s, 2, "SENTINEL myid");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    snprintf(myid, sizeof myid, "%s", r->str);
    freeReplyObject(r);
    IT_EQ(rt_sentinel_kill_sentinel(s, 2), 0);
    IT_EQ(s->sentinel[2].pid, -1);
    IT_EQ(rt_sentinel_kill_sentinel(s, 2), -1);
    t0 = rt_now_ms();
    IT_EQ(rt_sentinel_kill_primary(s), 0);
    nm = rt_sentinel_wait_failover(s, 0, FAILOVER_WITHIN_MS);
    printf("# failover with 2 of 3 sentinels took %lld ms\n", (long long)(rt_now_ms() - t0));
    IT_EQ(nm, 1);
    IT_WAIT(peer_flagged(s, 0, 2, "s_down"), 5000);

    /* Sentinel 2 again, from its rewritten config: same id, and it learns
     * the new primary from the others. */
    t0 = rt_now_ms();
    IT_EQ(rt_sentinel_restart_sentinel(s, 2), 0);
    r = on_sentinel(s, 2, "SENTINEL myid");
    expect_reply(r, REDIS_REPLY_STRING, myid, "SENTINEL myid after a restart");
    IT_WAIT(rt_sentinel_primary_seen_by(s, 2) == 1, SETTLE_WITHIN_MS);
    printf("# restarted sentinel names the new primary after %lld ms\n",
           (long long)(rt_now_ms() - t0));

    /* The old primary back: a replica only if masterauth reached it. */
    t0 = rt_now_ms();
    IT_EQ(rt_sentinel_restart_node(s, 0, REJOIN_WITHIN_MS), 0);
    printf("# node 0 back as a replica after %lld ms\n", (long long)(rt_now_ms() - t0));
    expect_role(s, 0, 1);
    expect_reply(on_node(s, 0, "GET k"), REDIS_REPLY_STRING, "v1", "GET on the old primary");

    /* A paused sentinel is seen down by the others, and back after its
     * resumption. Paused longer than down-after-milliseconds, so longer
     * than 2 s: it resumes in TILT mode (shown, not asserted: Redis' own). */
    t0 = rt_now_ms();
    IT_EQ(rt_sentinel_pause_sentinel(s, 0), 0);
    IT_EQ(s->sentinel[0].paused, 1);
    IT_WAIT(peer_flagged(s, 1, 0, "s_down"), 10000);
    IT_EQ(rt_sentinel_resume_sentinel(s, 0), 0);
    IT_EQ(s->sentinel[0].paused, 0);
    IT_EQ(rt_sentinel_wait_ok(s, SETTLE_WITHIN_MS), 0);
    r = on_sentinel(s, 0, "INFO sentinel");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    printf("# sentinel 0 paused %lld ms; after it: sentinel_tilt:%c\n",
           (long long)(rt_now_ms() - t0),
           strstr(r->str, "sentinel_tilt:") != NULL ? strstr(r->str, "sentinel_tilt:")[14] : '?');
    freeReplyObject(r);
    IT_EQ(peer_flagged(s, 1, 0, "s_down"), 0);
    IT_EQ(rt_sentinel_primary(s), 1);
    /* Stopped while paused: the stop resumes it first. */
    IT_EQ(rt_sentinel_pause_sentinel(s, 1), 0);
}

/* What the crashing child of test (3) tells its parent. */
typedef struct crash_report {
    pid_t pid[2];        /* the primary, the sentinel */
    char dir[2][256];    /* the primary's directory, the deployment's */
} crash_report;

static int crash_fd = -1;

/* In a child process: start a deployment, report it, die without stopping it. */
static int crash_child(void *arg)
{
    rt_sentinel *s = rt_sentinel_start(0, 1, NAME, NULL);
    crash_report rep;

    (void)arg;
    if (s == NULL)
        return 1;
    memset(&rep, 0, sizeof rep);
    rep.pid[0] = s->node[0]->pid;
    rep.pid[1] = s->sentinel[0].pid;
    snprintf(rep.dir[0], sizeof rep.dir[0], "%s", s->node[0]->dir);
    snprintf(rep.dir[1], sizeof rep.dir[1], "%s", s->dir);
    if (rt_write_all(crash_fd, &rep, sizeof rep) != 0)
        return 2;
    raise(SIGKILL);
    return 3;
}

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[PATH_MAX];

    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    }
    if (d != NULL)
        closedir(d);
    rmdir(dir);
}

/* (3) A test that dies takes its servers and sentinels with it
 * (PR_SET_PDEATHSIG). */
static void test_crash_leaves_nothing(void **state)
{
    crash_report rep;
    int fds[2], i;
    pid_t child;

    (void)state;
    IT_EQ(rt_pipe(fds), 0);
    crash_fd = fds[1];
    child = rt_child_start(crash_child, NULL, 60);
    assert_true(child > 0);
    rt_close(&fds[1]);
    IT_EQ(rt_read_full(fds[0], &rep, sizeof rep, 40000), 0);
    rt_close(&fds[0]);
    IT_EQ(rt_child_wait(child, 10000), 128 + SIGKILL);
    for (i = 0; i < 2; i++) {
        assert_true(rep.pid[i] > 0);
        IT_WAIT(process_gone(rep.pid[i]), 5000);
    }
    for (i = 0; i < 2; i++)
        remove_tree(rep.dir[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_failover, setup_2x3, teardown_deployment),
        cmocka_unit_test_setup_teardown(test_auth_and_sentinels, setup_auth,
                                        teardown_deployment),
        cmocka_unit_test(test_crash_leaves_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
