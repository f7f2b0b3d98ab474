/*
 * leader -- leader election among processes: one leader at a time, the
 * others watching who leads, a hand-over when the leader dies, and a leader
 * that steps down the moment it can no longer prove it leads.
 *
 * What it shows
 *   1. An election is a lock. Every candidate waits for the lock NAME with
 *      a watchdog lease; the one that holds it leads. No other API.
 *   2. Watching. Between slices of its wait, a candidate reads who holds
 *      the lock (rl_client_inspect_lock(): the holder's host, pid and
 *      client name, from the owner record its client keeps in Redis) and
 *      prints each change.
 *   3. Hand-over. A leader that dies (SIGKILL, a crash) stops renewing: its
 *      lease runs out in Redis and a waiting candidate leads, within the
 *      lease. A leader told to stop (SIGINT, SIGTERM) finishes its step of
 *      work and releases: a candidate leads at once (the release notice
 *      wakes it).
 *   4. Stepping down. The leader works in short steps and polls
 *      rl_interrupted() between them (no I/O). When its lease can no longer
 *      be proven (Redis unreachable, the process stopped past its lease),
 *      the flag rises before anyone else can lead: the leader drops the
 *      step it was on, releases (RL_ELOST) and stands again as a candidate.
 *
 * How to run
 *   redis-server --port 6400 --save '' --daemonize yes
 *   ./leader redis://127.0.0.1:6400 election a &
 *   ./leader redis://127.0.0.1:6400 election b &
 *   ./leader redis://127.0.0.1:6400 election c &
 *   then kill -9 the leader; or kill -STOP it for a few seconds, then -CONT.
 *
 *   leader [options] URL NAME [ID]
 *   URL   redis://[[user]:pass@]host[:port][/db], a cluster's seeds
 *         redis://host:port,host:port,..., unix:///path[?db=N], or any
 *         other URL rlock takes
 *   NAME  the election: the name of its lock
 *   ID    this candidate, 1..64 of [A-Za-z0-9._-] (default: its pid); it is
 *         the client's name (rl_options.client_name), so the others and
 *         `rlock list` show it
 *   --lease-ms L    the leader's watchdog lease (2000; 300..60000)
 *   --watch-ms W    how often a candidate looks who leads (250; 10..10000)
 *   --journal FILE  append "ID start N" and "ID end N" around each step of
 *                   work, under flock(), each written only while the lease
 *                   holds: a record that two leaders' work never overlapped
 *                   (tests/integration/test_leader.c reads it)
 *
 * Output: one line per event on stdout, flushed at once.
 *   CANDIDATE ID host:pid                    started
 *   FOLLOW ID leader=host:pid (LEADER-ID)    the leader changed; leader=none:
 *                                            nobody leads
 *   LEAD ID                                  took the lead
 *   STEPDOWN ID WHY release=STATUS           WHY: lost (its flag rose) or
 *                                            signal (told to stop)
 *   QUIT ID                                  the end
 * Exit 0 after SIGINT or SIGTERM, 1 on an error, 2 on bad arguments.
 */
#define _DEFAULT_SOURCE         /* flock() */
#define _POSIX_C_SOURCE 200809L /* sigaction, nanosleep, gethostname */

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <rlock.h>

#include "ex_redis.h"

/* What ends a leader's term. */
enum { GO_ON, LOST, SIGNALLED, FAILED };

/* Steps of work: WORK_TICKS ticks of TICK_MS, the flag polled before each. */
#define TICK_MS    10
#define WORK_TICKS 10

typedef struct candidate {
    const char *id, *name;
    rl_client *client;
    rl_lock *lock;
    long watch_ms;
    int journal;            /* the journal's descriptor, -1: none */
    int unreachable;        /* the last wait ended with Redis away */
    char seen[160];         /* the leader last printed: "none", "host:pid (id)" */
} candidate;

/* Set by SIGINT / SIGTERM, on whichever thread takes it. */
static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    stop_signal = sig;
}

/* SA_RESTART: the library's threads may take the signal in a read. */
static void catch_stop_signals(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* Show the library's warnings (a renewal that failed, Redis away). */
static void on_log(int level, const char *message, void *payload)
{
    (void)payload;
    if (level <= RL_LOG_WARN)
        fprintf(stderr, "  [rlock %s] %s\n",
                level == RL_LOG_ERROR ? "error" : "warn", message);
}

/* A stand-in for a bit of real work. */
static void work_for(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static const char *status_name(int rc)
{
    switch (rc) {
    case RL_OK:        return "RL_OK";
    case RL_ELOST:     return "RL_ELOST";
    case RL_ENOTOWNER: return "RL_ENOTOWNER";
    case RL_ECONN:     return "RL_ECONN";
    default:           return rl_strerror(rc);
    }
}

/* ---- the candidates: who leads ---------------------------------------- */

/* Who holds the lock, as the owner record of its client tells: printed
 * when it changed since last time. Silent when Redis cannot be read. */
static void watch(candidate *c)
{
    rl_lock_list *list = NULL;
    const rl_holder_info *h;
    char now[sizeof c->seen];

    if (rl_client_inspect_lock(&list, c->client, c->name, strlen(c->name),
                               RL_INFO_VERSION) != RL_OK) {
        rl_lock_list_free(list);
        return;
    }
    if (list->count == 0 || list->locks[0]->nholders == 0)
        snprintf(now, sizeof now, "none");
    else if ((h = list->locks[0]->holders[0])->known)
        snprintf(now, sizeof now, "%s:%lld (%s)", h->host, h->pid,
                 h->client_name[0] ? h->client_name : "-");
    else    /* its record expired, or its user may not write one */
        snprintf(now, sizeof now, "unknown (owner %.8s)", h->owner);
    rl_lock_list_free(list);
    if (strcmp(now, c->seen) != 0) {
        snprintf(c->seen, sizeof c->seen, "%s", now);
        printf("FOLLOW %s leader=%s\n", c->id, now);
    }
}

/* ---- the leader: work while the flag is down -------------------------- */

/*
 * One line of the journal. The flag is read under the file lock: another
 * leader's lease begins only after ours has run out in Redis, and our flag
 * rises before that, so once it has written a line none of ours can follow.
 */
static int journal(candidate *c, const char *what, long step)
{
    char line[128];
    int why = GO_ON, n;

    if (c->journal < 0)
        return rl_interrupted() ? LOST : GO_ON;
    if (flock(c->journal, LOCK_EX) != 0) {
        perror("leader: flock");
        return FAILED;
    }
    if (rl_interrupted())
        why = LOST;
    else {
        n = snprintf(line, sizeof line, "%s %s %ld\n", c->id, what, step);
        if (write(c->journal, line, (size_t)n) != n) {
            perror("leader: journal");
            why = FAILED;
        }
    }
    flock(c->journal, LOCK_UN);
    return why;
}

/* Work in steps until the flag rises or a signal says stop. A signal lets
 * the step end; the flag drops it on the spot. */
static int lead(candidate *c)
{
    int why;

    for (long step = 1;; step++) {
        if (stop_signal)
            return SIGNALLED;
        if ((why = journal(c, "start", step)) != GO_ON)
            return why;
        for (int tick = 0; tick < WORK_TICKS; tick++) {
            if (rl_interrupted())
                return LOST;
            work_for(TICK_MS);
        }
        if ((why = journal(c, "end", step)) != GO_ON)
            return why;
    }
}

/* Release and say why the term ended. A lost hold is released too: the
 * release reports the loss (RL_ELOST) and forgets the hold. RL_ECONN sent
 * nothing: try again for a while. 0, or -1 when the hold is still there. */
static int step_down(candidate *c, int why)
{
    static const char *const words[] = { "?", "lost", "signal", "error" };
    int rc, tries = 0;

    while ((rc = rl_lock_release(c->lock)) == RL_ECONN && ++tries < 10)
        work_for(200);
    printf("STEPDOWN %s %s release=%s\n", c->id, words[why], status_name(rc));
    snprintf(c->seen, sizeof c->seen, "none");
    return rl_lock_hold_count(c->lock) == 0 ? 0 : -1;
}

/* Stand until a signal: wait for the lock in slices, watch who leads
 * between them (not while Redis is away: the wait rides the outage out). */
static int run(candidate *c)
{
    int rc, why;

    while (!stop_signal) {
        if (!c->unreachable)
            watch(c);
        rc = rl_lock_try_acquire(c->lock, c->watch_ms, RL_LEASE_WATCHDOG);
        if (rc == RL_ECONN) {
            if (!c->unreachable)
                fprintf(stderr, "leader: Redis is unreachable (%s); waiting\n",
                        rl_last_error());
            c->unreachable = 1;
            continue;
        }
        if (c->unreachable)
            fprintf(stderr, "leader: Redis answers again\n");
        c->unreachable = 0;
        if (rc == RL_ETIMEDOUT || rc == RL_EBUSY)
            continue;
        if (rc != RL_OK) {
            fprintf(stderr, "leader: acquire: %s (%s)\n", rl_strerror(rc), rl_last_error());
            return 1;
        }
        printf("LEAD %s\n", c->id);
        why = lead(c);
        if (step_down(c, why) != 0 || why == FAILED)
            return 1;
    }
    return 0;
}

/* ---- setting up ------------------------------------------------------- */

static int usage(int status)
{
    fprintf(status ? stderr : stdout,
            "usage: leader [--lease-ms L] [--watch-ms W] [--journal FILE] URL NAME [ID]\n"
            "  URL             redis://[[user]:pass@]host[:port][/db], a cluster's seeds\n"
            "                  redis://host:port,..., unix:///path[?db=N], ...\n"
            "  NAME            the election (the lock's name)\n"
            "  ID              this candidate, 1..64 of [A-Za-z0-9._-] (its pid)\n"
            "  --lease-ms L    the leader's watchdog lease (2000; 300..60000)\n"
            "  --watch-ms W    how often a candidate looks who leads (250; 10..10000)\n"
            "  --journal FILE  append each step of work to FILE, under flock()\n");
    return status;
}

int main(int argc, char **argv)
{
    const char *url, *path = NULL;
    long lease_ms = 2000;
    char host[256], pid_id[24];
    candidate c = { .watch_ms = 250, .journal = -1, .seen = "none" };
    rl_options opts;
    int i, rc, status = 1;

    ex_prog = "leader";
    for (i = 1; i < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = val == NULL;

        if (strcmp(argv[i], "--help") == 0)
            return usage(0);
        if (!bad && strcmp(argv[i], "--lease-ms") == 0)
            bad = ex_parse_long(val, 300, 60000, &lease_ms);
        else if (!bad && strcmp(argv[i], "--watch-ms") == 0)
            bad = ex_parse_long(val, 10, 10000, &c.watch_ms);
        else if (!bad && strcmp(argv[i], "--journal") == 0)
            path = val;
        else
            bad = 1;
        if (bad) {
            fprintf(stderr, "leader: bad option \"%s\"\n", argv[i]);
            return 2;
        }
    }
    if (argc - i < 2 || argc - i > 3)
        return usage(2);
    url = argv[i];
    c.name = argv[i + 1];
    snprintf(pid_id, sizeof pid_id, "%ld", (long)getpid());
    c.id = argc - i == 3 ? argv[i + 2] : pid_id;
    if (strlen(c.id) > RL_CLIENT_NAME_MAX || c.id[0] == '\0' ||
        strspn(c.id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                     "0123456789._-") != strlen(c.id)) {
        fprintf(stderr, "leader: ID \"%s\": 1..64 of [A-Za-z0-9._-]\n", c.id);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);   /* one line per event, at once */
    catch_stop_signals();
    if (path && (c.journal = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
                                  0644)) < 0) {
        perror(path);
        return 1;
    }

    rl_options_init(&opts, RL_OPTIONS_VERSION);
    opts.url = url;
    opts.lease_ms = lease_ms;       /* renewed every lease / 3 */
    opts.client_name = c.id;        /* shown to the others by the owner record */
    opts.log = on_log;
    if ((rc = rl_client_new(&c.client, &opts)) != RL_OK ||
        (rc = rl_lock_new(&c.lock, c.client, c.name)) != RL_OK) {
        fprintf(stderr, "leader: setup: %s (%s)\n", rl_strerror(rc), rl_last_error());
        goto out;
    }
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    printf("CANDIDATE %s %s:%ld\n", c.id, host, (long)getpid());
    status = run(&c);
    printf("QUIT %s\n", c.id);

out:
    rl_lock_free(c.lock);
    rl_client_free(c.client);
    if (c.journal >= 0)
        close(c.journal);
    return status;
}
