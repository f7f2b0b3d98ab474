/*
 * examples/leader.c run as real processes against the test's own
 * redis-server: three candidates elect exactly one leader and the others
 * name it (its owner record); a leader SIGKILLed is followed by another
 * within its lease and a second; a leader SIGSTOPped past its lease steps
 * down (its flag) once it runs again, and its work never overlaps the next
 * leader's (the journal each leader writes under flock()); SIGTERM steps a
 * leader down cleanly, exit 0, and the next leads at once. Without
 * redis-server every test FAILS.
 */
#include "it_common.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef LEADER_BIN
#error "LEADER_BIN: the path of the built examples/leader"
#endif

extern char **environ;

#define LEASE_MS 1000L
#define LEASE_ARG "1000"
#define NCAND 3

/* A running candidate: its pid and the file its stdout goes to. */
typedef struct cand {
    char id[2];
    pid_t pid;
    char out[400];
    int status;
    int done;
} cand;

static cand cands[NCAND];
static char journal_path[400];
static int finished;    /* the test ran to its end */

/* Kill what a failed test left running. */
static void cand_kill(cand *x)
{
    if (x->pid > 0 && !x->done) {
        kill(x->pid, SIGKILL);
        waitpid(x->pid, &x->status, 0);
        x->done = 1;
    }
}

/* A test that failed shows what each candidate printed. */
static int teardown(void **state)
{
    char line[512];
    FILE *f;

    for (int i = 0; i < NCAND; i++) {
        cand_kill(&cands[i]);
        if (!finished && cands[i].pid > 0 && (f = fopen(cands[i].out, "r"))) {
            while (fgets(line, sizeof line, f))
                fprintf(stderr, "#   %s: %s", cands[i].id, line);
            fclose(f);
        }
        cands[i].pid = 0;
    }
    finished = 0;
    return it_teardown(state);
}

/* Start candidate `id`: its stdout and stderr into a file of dir; killed
 * when the test process dies. */
static void cand_start(cand *x, const char *id, const char *url, const char *dir)
{
    const char *argv[] = { LEADER_BIN, "--lease-ms", LEASE_ARG, "--journal", journal_path,
                           url, "election", id, NULL };

    memset(x, 0, sizeof *x);
    snprintf(x->id, sizeof x->id, "%s", id);
    snprintf(x->out, sizeof x->out, "%s/out.%s", dir, id);
    if ((x->pid = rt_spawn_logged(LEADER_BIN, (char *const *)argv, x->out)) < 0)
        fail_msg("cannot run %s", LEADER_BIN);
}

static int cand_reaped(cand *x)
{
    if (!x->done && waitpid(x->pid, &x->status, WNOHANG) == x->pid)
        x->done = 1;
    return x->done;
}

/* Its exit status once it has ended (within timeout_ms), 1000 + signal
 * when a signal ended it. */
static int cand_wait(cand *x, long timeout_ms)
{
    if (!RT_WAIT_UNTIL(cand_reaped(x), timeout_ms))
        fail_msg("candidate %s (pid %d) still running after %ld ms", x->id, (int)x->pid,
                 timeout_ms);
    return WIFEXITED(x->status) ? WEXITSTATUS(x->status) : 1000 + WTERMSIG(x->status);
}

/* How many complete lines of x's output begin with `prefix`; the last of
 * them into last (when not NULL). */
static int lines(const cand *x, const char *prefix, char *last, size_t cap)
{
    char line[512];
    size_t plen = strlen(prefix);
    int n = 0;
    FILE *f = fopen(x->out, "r");

    if (last)
        last[0] = '\0';
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, prefix, plen) != 0 || !strchr(line, '\n'))
            continue;
        n++;
        if (last)
            snprintf(last, cap, "%.*s", (int)strcspn(line, "\n"), line);
    }
    fclose(f);
    return n;
}

static int leads(const cand *x)
{
    char prefix[16];

    snprintf(prefix, sizeof prefix, "LEAD %.1s", x->id);
    return lines(x, prefix, NULL, 0);
}

/* "host:pid" of x, as its CANDIDATE line says ("" until it is written). */
static void whereabouts(const cand *x, char *out, size_t cap)
{
    char last[512];

    if (lines(x, "CANDIDATE ", last, sizeof last) == 1 && strlen(last) > 12)
        snprintf(out, cap, "%s", last + 12);    /* after "CANDIDATE x " */
    else
        out[0] = '\0';
}

/* Whether x's last FOLLOW line names `leader`, host, pid and id. */
static int follows(const cand *x, const cand *leader)
{
    char last[512], want[1100], where[512];

    whereabouts(leader, where, sizeof where);
    snprintf(want, sizeof want, "FOLLOW %s leader=%s (%s)", x->id, where, leader->id);
    return where[0] && lines(x, "FOLLOW ", last, sizeof last) > 0 && strcmp(last, want) == 0;
}

/* The one candidate of the running ones that has led, when exactly one
 * has; else NULL. */
static cand *the_leader(void)
{
    cand *found = NULL;

    for (int i = 0; i < NCAND; i++) {
        if (cands[i].done || leads(&cands[i]) == 0)
            continue;
        if (found)
            return NULL;
        found = &cands[i];
    }
    return found;
}

/* The candidate that is neither x nor y. */
static cand *other(const cand *x, const cand *y)
{
    for (int i = 0; i < NCAND; i++)
        if (&cands[i] != x && &cands[i] != y)
            return &cands[i];
    return NULL;
}

/* Whether `line` is x's step-down for its flag: the release reports the
 * loss (RL_ELOST, or RL_ENOTOWNER once the field is gone). */
static int stepped_down_lost(const cand *x, const char *line)
{
    char lost[64], notowner[64];

    snprintf(lost, sizeof lost, "STEPDOWN %s lost release=RL_ELOST", x->id);
    snprintf(notowner, sizeof notowner, "STEPDOWN %s lost release=RL_ENOTOWNER", x->id);
    return strcmp(line, lost) == 0 || strcmp(line, notowner) == 0;
}

static int journal_has(const char *line)
{
    char buf[128];
    size_t len = strlen(line);
    int found = 0;
    FILE *f = fopen(journal_path, "r");

    while (f && !found && fgets(buf, sizeof buf, f))
        found = strncmp(buf, line, len) == 0 && buf[len] == '\n';
    if (f)
        fclose(f);
    return found;
}

/*
 * Every line of the journal is "X start 1" (a term begins, after anything:
 * the last leader's step may have been dropped when its flag rose), "X end
 * N" right after "X start N", or "X start N+1" right after "X end N": the
 * steps of two leaders never overlap. The terms' ids into terms.
 */
static void check_journal(char *terms, size_t cap)
{
    char line[128], id[8], what[8], prev_id[8] = "", prev_what[8] = "";
    long step, prev_step = 0;
    size_t nterms = 0;
    int lineno = 0;
    FILE *f = fopen(journal_path, "r");

    if (!f)
        fail_msg("no journal at %s", journal_path);
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (sscanf(line, "%7s %7s %ld", id, what, &step) != 3)
            fail_msg("journal line %d unreadable: %s", lineno, line);
        if (strcmp(what, "start") == 0 && step == 1) {
            if (nterms + 1 < cap)
                terms[nterms++] = id[0];
        } else if (strcmp(id, prev_id) != 0 ||
                   (strcmp(what, "end") == 0
                        ? strcmp(prev_what, "start") != 0 || step != prev_step
                        : strcmp(prev_what, "end") != 0 || step != prev_step + 1)) {
            fclose(f);
            fail_msg("journal line %d, \"%s %s %ld\", overlaps or skips: it follows "
                     "\"%s %s %ld\"", lineno, id, what, step, prev_id, prev_what, prev_step);
        }
        snprintf(prev_id, sizeof prev_id, "%s", id);
        snprintf(prev_what, sizeof prev_what, "%s", what);
        prev_step = step;
    }
    fclose(f);
    terms[nterms] = '\0';
}

/* Candidates a, b, c: who leads, and who after it. */
static void test_election(void **state)
{
    it_env *e = *state;
    cand *first, *second, *third;
    char last[512], want[128], terms[16];
    int64_t t0;

    snprintf(journal_path, sizeof journal_path, "%s/journal", e->redis->dir);
    cand_start(&cands[0], "a", e->redis->url, e->redis->dir);
    cand_start(&cands[1], "b", e->redis->url, e->redis->dir);
    cand_start(&cands[2], "c", e->redis->url, e->redis->dir);

    /* One leads; the other two name it, and none of them leads. */
    IT_WAIT((first = the_leader()) != NULL, 5000);
    for (int i = 0; i < NCAND; i++)
        if (&cands[i] != first)
            IT_WAIT(follows(&cands[i], first), 3000);
    for (int i = 0; i < NCAND; i++)
        IT_EQ(leads(&cands[i]), &cands[i] == first);

    /* SIGKILL: another leads within the lease and a second. */
    t0 = rt_now_ms();
    kill(first->pid, SIGKILL);
    IT_EQ(cand_wait(first, 2000), 1000 + SIGKILL);
    IT_WAIT((second = the_leader()) != NULL, LEASE_MS + 1000);
    printf("# hand-over after SIGKILL: %lld ms (lease %ld ms)\n",
           (long long)(rt_now_ms() - t0), LEASE_MS);
    third = other(first, second);
    IT_WAIT(follows(third, second), 3000);
    IT_EQ(leads(third), 0);

    /* SIGSTOP past its lease: the third leads and works meanwhile... */
    t0 = rt_now_ms();
    kill(second->pid, SIGSTOP);
    IT_WAIT(leads(third) == 1, LEASE_MS + 1000);
    IT_RANGE(rt_now_ms() - t0, LEASE_MS / 2, LEASE_MS + 1000);
    snprintf(want, sizeof want, "%s end 1", third->id);
    IT_WAIT(journal_has(want), 2000);
    /* ...and once it runs again, the second steps down (its flag), follows
     * the third and stands again, without leading. */
    kill(second->pid, SIGCONT);
    IT_WAIT(lines(second, "STEPDOWN ", last, sizeof last) == 1, 2000);
    if (!stepped_down_lost(second, last))
        fail_msg("after SIGCONT: \"%s\", not a step-down for a lost lease", last);
    IT_WAIT(follows(second, third), 3000);
    IT_EQ(leads(second), 1);

    /* SIGTERM: the third ends its step, releases, exits 0; the second
     * leads at once (the release notice), well within a lease. */
    t0 = rt_now_ms();
    kill(third->pid, SIGTERM);
    IT_EQ(cand_wait(third, 2000), 0);
    IT_EQ(lines(third, "STEPDOWN ", last, sizeof last), 1);
    snprintf(want, sizeof want, "STEPDOWN %s signal release=RL_OK", third->id);
    assert_string_equal(last, want);
    IT_EQ(lines(third, "QUIT ", NULL, 0), 1);
    IT_WAIT(leads(second) == 2, LEASE_MS - 200);
    printf("# hand-over after SIGTERM: %lld ms\n", (long long)(rt_now_ms() - t0));
    snprintf(want, sizeof want, "%s end 1", second->id);
    IT_WAIT(journal_has(want), 2000);
    kill(second->pid, SIGTERM);
    IT_EQ(cand_wait(second, 2000), 0);

    /* Four terms in this order, no step of one inside another's. */
    check_journal(terms, sizeof terms);
    snprintf(want, sizeof want, "%s%s%s%s", first->id, second->id, third->id, second->id);
    assert_string_equal(terms, want);
    finished = 1;
}

/* Bad arguments: exit 2, nothing started. */
static void test_bad_arguments(void **state)
{
    it_env *e = *state;
    const char *ids[] = { "has space", "", "x/y", NULL };

    for (int i = 0; ids[i]; i++) {
        const char *argv[] = { LEADER_BIN, e->redis->url, "election", ids[i], NULL };
        pid_t pid;
        int st;

        assert_int_equal(posix_spawn(&pid, LEADER_BIN, NULL, NULL, (char *const *)argv,
                                     environ), 0);
        assert_int_equal(waitpid(pid, &st, 0), pid);
        IT_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 2);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_election, it_setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_arguments, it_setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
