/*
 * The checker: reads every history of a run and verifies the whole of it.
 *
 *   exclusion  a hold is valid from its acquisition's return to the t2 of
 *              its last write whose before- and after-checks both saw the
 *              flag down; no two valid intervals of exclusive holds (plain,
 *              fair, write) of a name overlap, and no write hold's overlaps
 *              a read hold's, across threads. A force-release by the
 *              controller is documented to reach holders in other processes
 *              only at their next renewal: without lock-delay, an overlap
 *              from a force's start to a lease after its end is left out.
 *              A flag, once up, stays up under its hold (a write of the
 *              hold that saw it down again is a violation).
 *   fencing    when hold A returned before hold B was invoked, A's token is
 *              below B's; no token twice. Pairs across an empty restart
 *              (the counter is gone: outside the guarantee) are left out,
 *              but in a Cluster with replicas (a failover, wait_replicas 1).
 *              A fenced semaphore's holds whose valid intervals overlap share
 *              no permit slot; of two that share one, the earlier interval's
 *              token is the lower (check_slots).
 *   delay      after a lost hold A (a release returned a status other
 *              than RL_OK, RL_ECONN (nothing sent) or RL_EREDIS (refused,
 *              nothing changed), its last one other than RL_ECONN was
 *              RL_EREDIS, it was never released, or its process was
 *              killed), no hold B with a
 *              valid write returns before A's last valid moment + delay -
 *              NM_DELAY_TOL. A thread may keep holds of several names (a
 *              release that failed leaves the count): each is followed.
 *   liveness   outside faults (and a lease, a delay and a fair place after
 *              them): an acquisition that timed out saw no stretch longer
 *              than NM_LIVE_BOUND_MS in which the name was provably free;
 *              a fair waiter that arrived NM_FAIR_GAP_MS before another is
 *              not granted only after that other's hold was valid.
 *              Waiter order (alone in their process, outside the faults
 *              that can cost a place or an intent): neither a fair waiter
 *              that timed out nor a writer is passed by a hold (a reader,
 *              for the writer) that arrived NM_FAIR_GAP_MS after it.
 *   bookkeeping  each cleanly ended process's rl_client_stats equal its
 *              history's counts, and each client shut down's its own;
 *              no key of the run left; no worker crashed.
 *   fork       a fork child sees hold count 0 on every inherited handle,
 *              re-enters nothing it did not take, exits 0; the parent's
 *              holds live at the fork are neither flagged nor lost.
 *   shutdown   no call begun after a shutdown returned gives RL_OK; a hold
 *              the shutdown cut: its thread saw the flag, then it was gone.
 *   isolation  a node stopped or down costs only its own holds: in a
 *              Cluster, a hold whose master was not faulted is never flagged
 *              while another node is out; in Redlock a hold won alone is
 *              neither flagged nor lost while a majority of the masters kept
 *              it, a master back having it again once a renewal round can
 *              have placed it there (the spread: redlock_below()); unless
 *              something that concerns it happened (see iso_excused()).
 * A hold's validity ends at its first flagged write.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nemesis.h"
#include "rlock.h"

#define NM_DELAY_TOL_NS   (30LL * 1000000)   /* timestamps are read around the events */
#define NM_LIVE_BOUND_MS  1000               /* a free name is granted to a waiter within it */
#define NM_FAIR_GAP_MS    100                /* arrival order the history can tell */
#define NM_FAIR_PLACE_MS  2500               /* a place not renewed runs out (2 s + 500 ms) */
#define NM_MS             1000000LL
#define NM_PRINT_MAX      5                  /* violations printed per invariant */
#define NM_FOREVER        INT64_MAX

typedef struct nm_hold {
    int proc, tid, name, side;
    int64_t inv, ret;          /* the acquisition that began it */
    long long token;           /* -1: none */
    unsigned slots;            /* a fenced semaphore hold's permit slots, a mask; 0: none */
    int64_t good_end;          /* t2 of its last write with both checks down; 0: none */
    int flagged;               /* a write saw the flag */
    int bad_release;           /* a release lost it (neither RL_OK, RL_ECONN nor RL_EREDIS) */
    int refused;               /* its last release other than RL_ECONN: RL_EREDIS */
    int closed;                /* its last release returned */
    int64_t rel_ret;           /* when it did */
    int64_t first_flag;        /* t1 of its first write that saw the flag; 0: none */
    int cut;                   /* released with RL_EINVAL/RL_ECANCELED during a
                                * shutdown of its client: 1 + the shutdown's index */
    int64_t flag_at;           /* the line time of its first flagged write; 0: none */
    int seen, reads, last_read;/* a cut hold: flag seen; I lines; their last value */
    int64_t lowered;           /* t2 of a write that saw the flag down after it was up; 0: none */
    int others;                /* its thread kept an earlier hold it never saw released */
    int count;                 /* the hold count its thread last saw */
    int last_release_open;     /* its last level's release was invoked and never returned */
    int permits;               /* a semaphore's hold: the k it took; else 1 */
    int member;                /* taken as a set's member (asked after the set's call) */
} nm_hold;

typedef struct nm_call {       /* an acquisition, for liveness */
    int proc, tid, name, status, newhold;
    long wait;
    int64_t inv, ret;
    int side;
    int k;                     /* a semaphore's: the permits asked */
    int set;                   /* a member of a set's call (not checked for liveness) */
} nm_call;

typedef struct nm_proc {
    char file[300];
    int index, gen, ended, killed, has_stats[NM_NAMES_MAX];
    long acq[NM_NAMES_MAX], reent[NM_NAMES_MAX], rel[NM_NAMES_MAX];
    unsigned long long s_acq[NM_NAMES_MAX], s_reent[NM_NAMES_MAX], s_rel[NM_NAMES_MAX];
    /* Worker-side faults: a fork child (1 + its k), a name's client being
     * shut down (1: begun, 2: returned; shut_rec: its record), what the
     * client's history and its last stats line say. */
    int child, shut[NM_NAMES_MAX], shut_rec[NM_NAMES_MAX];
    long canc[NM_NAMES_MAX], cut[NM_NAMES_MAX];
    unsigned long long s_lost[NM_NAMES_MAX], s_canc[NM_NAMES_MAX];
    unsigned long long s_gauges[NM_NAMES_MAX];
} nm_proc;

/* A fork or a shutdown as the worker recorded it. */
typedef struct nm_wrec {
    int kind, proc, name, status;
    int64_t start, mid, end;   /* fork: forked, -, reaped; shutdown: begun, returned, new client */
} nm_wrec;

typedef struct nm_fwin {
    int kind, arg;
    int64_t start, end;
    int node;                  /* server faults: the node it hit */
} nm_fwin;

typedef struct nm_nodelog {    /* Cluster: name served by node from `at` on */
    int64_t at;
    int name, node;
} nm_nodelog;

typedef struct nm_out {        /* Redlock: a master out (stopped or down) */
    int node;
    int64_t start, end;
} nm_out;

#define NM_OUTS_MAX (NM_FAULTS_MAX * 4)

typedef struct nm_hist {
    nm_plan plan;
    const char *dir;
    int64_t t0;
    nm_hold *holds;
    size_t nholds, capholds;
    nm_call *calls;
    size_t ncalls, capcalls;
    nm_proc procs[64];
    int nprocs;
    nm_fwin faults[NM_FAULTS_MAX * 2];
    int nfaults;
    nm_nodelog nodes[(NM_FAULTS_MAX * 2 + 1) * NM_NAMES_MAX];
    int nnodelog;
    nm_wrec wrecs[NM_FAULTS_MAX * 4];
    int nwrecs;
    nm_out outs[NM_OUTS_MAX];  /* the spread fault's masters out (O lines) */
    int nouts;
    long keys_left;
    int bad_exits;
    nm_verdict *v;
} nm_hist;

const char *nm_inv_name(int inv)
{
    static const char *const names[NM_INV_COUNT] = { "exclusion", "fencing", "delay",
                                                     "liveness", "bookkeeping", "isolation",
                                                     "fork", "shutdown", "capacity",
                                                     "sets" };
    return inv >= 0 && inv < NM_INV_COUNT ? names[inv] : "?";
}

static void *grow(void *p, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return p;
    *cap = *cap ? *cap * 2 : 256;
    p = realloc(p, *cap * size);
    if (p == NULL) {
        fprintf(stderr, "rlnemesis: out of memory\n");
        exit(2);
    }
    return p;
}

static double rel_ms(const nm_hist *h, int64_t t)
{
    return (double)(t - h->t0) / 1e6;
}

static void describe_hold(const nm_hist *h, const nm_hold *x, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s thread %d side %d: acquire invoked %.1f returned %.1f ms, token %lld, "
             "valid until %.1f, flagged %d, %s %.1f",
             h->procs[x->proc].file, x->tid, x->side, rel_ms(h, x->inv), rel_ms(h, x->ret),
             x->token, x->good_end ? rel_ms(h, x->good_end) : -1.0, x->flagged,
             x->closed ? "released" : "never released, last seen", rel_ms(h, x->rel_ret));
}

static void violation(nm_hist *h, int inv, int name, const nm_hold *a, const nm_hold *b,
                      const char *what)
{
    char da[700], db[700];

    if (++h->v->violations[inv] > NM_PRINT_MAX) {
        if (h->v->violations[inv] == NM_PRINT_MAX + 1)
            printf("VIOLATION %s: more, counted only\n", nm_inv_name(inv));
        return;
    }
    printf("VIOLATION %s name n%d: %s\n", nm_inv_name(inv), name, what);
    if (a != NULL) {
        describe_hold(h, a, da, sizeof da);
        printf("  event 1: %s\n", da);
    }
    if (b != NULL) {
        describe_hold(h, b, db, sizeof db);
        printf("  event 2: %s\n", db);
    }
    printf("  replay: rlnemesis run --seed 0x%llx   (histories: %s)\n",
           (unsigned long long)h->plan.seed, h->dir);
}

/* ---- reading ------------------------------------------------------------- */

typedef struct nm_tstate {
    int tid;
    long hold;               /* the hold of the line's name and side, -1: none */
    long held[NM_NAMES_MAX][3];  /* each name and side's hold, -1: none (a release
                                  * that failed may leave one while the thread
                                  * goes on to another name) */
    int64_t inv;
    long wait;
    long last_hold;          /* the hold its last release closed, -1: none */
    int inv_shut;            /* its call began on a client shut down (D shut seen) */
    int k;                   /* the permits its last acquire asked (A's last field) */
    int member;              /* the line is a set member's (m, r): the sets' client's */
    int before[NM_NAMES_MAX][3];  /* each member's hold count before its set's call */
    int set_status;          /* the set call's (b) */
    int64_t set_ret;         /* when it returned */
} nm_tstate;

static nm_tstate *tstate(nm_tstate *ts, int *n, int tid)
{
    int i;

    for (i = 0; i < *n; i++)
        if (ts[i].tid == tid)
            return &ts[i];
    if (*n >= 16)
        return &ts[0];
    ts[*n].tid = tid;
    ts[*n].hold = -1;
    for (i = 0; i < NM_NAMES_MAX * 3; i++)
        ts[*n].held[i / 3][i % 3] = -1;
    ts[*n].last_hold = -1;
    ts[*n].inv_shut = 0;
    return &ts[(*n)++];
}

static void wfault_violation(nm_hist *h, int inv, int pi, int tid, int64_t ns, const char *what)
{
    if (++h->v->violations[inv] > NM_PRINT_MAX)
        return;
    printf("VIOLATION %s: %s thread %d at %lld ns: %s\n  replay: rlnemesis run --seed 0x%llx"
           "   (histories: %s)\n", nm_inv_name(inv), h->procs[pi].file, tid, (long long)ns, what,
           (unsigned long long)h->plan.seed, h->dir);
}

/* Whether the thread holds another name or side than (name, side). */
static int holds_other(const nm_tstate *t, int name, int side)
{
    int i;

    for (i = 0; i < NM_NAMES_MAX * 3; i++)
        if (t->held[i / 3][i % 3] >= 0 && i != name * 3 + side)
            return 1;
    return 0;
}

/* Whether a release of x lost it, or the last one was refused. */
static int released_badly(const nm_hold *x)
{
    return x->bad_release || x->refused;
}

static void new_hold(nm_hist *h, int pi, nm_tstate *t, int64_t ns, const int *f, long long tok);

static void on_acquired(nm_hist *h, int pi, nm_tstate *t, int64_t ns, const int *f, long long tok)
{
    nm_call *c;

    h->calls = grow(h->calls, &h->capcalls, h->ncalls, sizeof *h->calls);
    c = &h->calls[h->ncalls++];
    c->proc = pi;
    c->tid = t->tid;
    c->name = f[0];
    c->status = f[2];
    c->wait = t->wait;
    c->inv = t->inv;
    c->ret = ns;
    c->newhold = f[2] == RL_OK && f[3] == 1;
    c->side = f[1];
    c->k = t->k;
    c->set = t->member;
    h->v->ops++;
    if (f[2] == RL_ECANCELED && !t->member)
        h->procs[pi].canc[f[0]]++;
    if (f[2] == RL_OK && t->inv_shut && !t->member)
        wfault_violation(h, NM_INV_SHUT, pi, t->tid, ns, "an acquisition begun on a client "
                         "shut down returned RL_OK");
    if (f[2] != RL_OK)
        return;
    new_hold(h, pi, t, ns, f, tok);
}

/* A hold begun, or entered again (count > 1). */
static void new_hold(nm_hist *h, int pi, nm_tstate *t, int64_t ns, const int *f, long long tok)
{
    if (f[3] > 1) {
        if (h->procs[pi].child && (t->hold < 0 || h->holds[t->hold].name != f[0]))
            wfault_violation(h, NM_INV_FORK, pi, t->tid, ns, "the fork child re-entered a "
                             "hold it never took (the parent's?)");
        if (!t->member)
            h->procs[pi].reent[f[0]]++;
        if (t->hold >= 0)
            h->holds[t->hold].count = f[3];
        return;
    }
    if (!t->member)
        h->procs[pi].acq[f[0]]++;
    if (t->hold >= 0)
        h->holds[t->hold].rel_ret = ns;   /* dropped without a release we saw */
    h->holds = grow(h->holds, &h->capholds, h->nholds, sizeof *h->holds);
    memset(&h->holds[h->nholds], 0, sizeof *h->holds);
    h->holds[h->nholds].others = t->hold >= 0 || holds_other(t, f[0], f[1]);
    h->holds[h->nholds].count = 1;
    h->holds[h->nholds].proc = pi;
    h->holds[h->nholds].tid = t->tid;
    h->holds[h->nholds].name = f[0];
    h->holds[h->nholds].side = f[1];
    h->holds[h->nholds].inv = t->inv;
    h->holds[h->nholds].ret = ns;
    h->holds[h->nholds].token = tok;
    h->holds[h->nholds].rel_ret = ns;
    h->holds[h->nholds].permits = t->k;
    h->holds[h->nholds].member = t->member;
    t->hold = (long)h->nholds++;
    h->v->holds++;
}

static void on_write(nm_hist *h, nm_tstate *t, int64_t t1, int before, long long t2, int after)
{
    nm_hold *x;

    h->v->writes++;
    if (t->hold < 0)
        return;
    x = &h->holds[t->hold];
    if (x->lowered == 0 && ((x->flagged && after == 0) || (before != 0 && after == 0)))
        x->lowered = t2;
    /* Validity ends at the first flagged write: after a shutdown the flag
     * is seen once and later writes look clean. */
    if (before == 0 && after == 0 && !x->flagged) {
        x->good_end = t2;
    } else if (!x->flagged) {
        x->flagged = 1;
        x->first_flag = t1;
        x->flag_at = t2;
    }
    x->seen |= before || after;
    x->rel_ret = t2;
}

static void on_released(nm_hist *h, int pi, nm_tstate *t, int64_t ns, const int *f)
{
    nm_hold *x = t->hold >= 0 ? &h->holds[t->hold] : NULL;

    h->v->ops++;
    if (f[2] == RL_OK && !t->member)
        h->procs[pi].rel[f[0]]++;
    if (f[2] == RL_OK && t->inv_shut && !t->member)
        wfault_violation(h, NM_INV_SHUT, pi, t->tid, ns, "a release begun on a client shut "
                         "down returned RL_OK");
    if (x == NULL)
        return;
    if ((f[2] == RL_EINVAL || f[2] == RL_ECANCELED) && h->procs[pi].shut[f[0]] && !x->cut &&
        !t->member) {
        x->cut = h->procs[pi].shut_rec[f[0]] + 1;
        h->procs[pi].cut[f[0]]++;
    }
    /* RL_ECONN: nothing was sent, the hold stands (the worker calls again).
     * RL_EREDIS: Redis refused the script and nothing changed; the releases
     * after it say whether the hold ended cleanly. Any other failure
     * (RL_ELOST, RL_EPROTO, a shutdown's) lost the hold for good: a later
     * RL_OK does not make it clean. */
    if (f[2] == RL_EREDIS)
        x->refused = 1;
    else if (f[2] == RL_OK)
        x->refused = 0;
    else if (f[2] != RL_ECONN)
        x->bad_release = 1;
    x->rel_ret = ns;
    x->count = f[3];
    x->last_release_open = 0;
    if (f[3] <= 0) {
        x->closed = 1;
        t->last_hold = t->hold;
        t->hold = -1;
    }
}

static nm_wrec *new_wrec(nm_hist *h, int kind, int pi, int name, int64_t ns)
{
    nm_wrec *r;

    if (h->nwrecs >= (int)(sizeof h->wrecs / sizeof h->wrecs[0]))
        return NULL;
    r = &h->wrecs[h->nwrecs++];
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->proc = pi;
    r->name = name;
    r->start = r->mid = r->end = ns;
    return r;
}

/* Stats against the history, for one client of a name; 0 when they agree.
 * A client shut down also has its cancellations, its holds lost (at least
 * those the shutdown cut) and no hold or waiter left in its gauges. */
static int books_differ(const nm_proc *p, int n, int shut)
{
    if (!p->has_stats[n] || p->s_acq[n] != (unsigned long long)p->acq[n] ||
        p->s_reent[n] != (unsigned long long)p->reent[n] ||
        p->s_rel[n] != (unsigned long long)p->rel[n] ||
        p->s_canc[n] != (unsigned long long)p->canc[n])
        return 1;
    return shut && (p->s_lost[n] < (unsigned long long)p->cut[n] || p->s_gauges[n] != 0);
}

/* "D n free": every call before this line went to the client shut down. */
static void books_of_shut_client(nm_hist *h, int pi, int n)
{
    nm_proc *p = &h->procs[pi];

    if (books_differ(p, n, 1)) {
        h->v->violations[NM_INV_BOOK]++;
        printf("VIOLATION bookkeeping name n%d: %s, client shut down: stats acq/reent/rel/"
               "canceled/lost/gauges %llu/%llu/%llu/%llu/%llu/%llu, history %ld/%ld/%ld/%ld/"
               ">=%ld/0\n", n, p->file, p->s_acq[n], p->s_reent[n], p->s_rel[n], p->s_canc[n],
               p->s_lost[n], p->s_gauges[n], p->acq[n], p->reent[n], p->rel[n], p->canc[n],
               p->cut[n]);
    }
    p->acq[n] = p->reent[n] = p->rel[n] = p->canc[n] = p->cut[n] = 0;
    p->has_stats[n] = 0;
}

static void on_shutdown_line(nm_hist *h, int pi, int64_t ns, int n, const char *word, int rc)
{
    nm_proc *p = &h->procs[pi];
    nm_wrec *r;

    if (strcmp(word, "start") == 0 && (r = new_wrec(h, NM_F_SHUTDOWN, pi, n, ns)) != NULL) {
        p->shut[n] = 1;
        p->shut_rec[n] = (int)(r - h->wrecs);
    } else if (p->shut[n] && strcmp(word, "shut") == 0) {
        p->shut[n] = 2;
        h->wrecs[p->shut_rec[n]].mid = ns;
    } else if (p->shut[n] && strcmp(word, "free") == 0) {
        books_of_shut_client(h, pi, n);
        p->shut[n] = 0;
        h->wrecs[p->shut_rec[n]].end = ns;
    } else if (strcmp(word, "new") == 0) {
        h->wrecs[p->shut_rec[n]].end = ns;
        h->wrecs[p->shut_rec[n]].status = rc;
    }
}

static void on_fork_line(nm_hist *h, int pi, int tid, int64_t ns, const char *word, int k,
                         int st)
{
    int i;

    if (strcmp(word, "fork") == 0) {
        new_wrec(h, NM_F_FORK, pi, k, ns);
        return;
    }
    for (i = 0; i < h->nwrecs; i++)
        if (h->wrecs[i].kind == NM_F_FORK && h->wrecs[i].proc == pi && h->wrecs[i].name == k) {
            h->wrecs[i].end = ns;
            h->wrecs[i].status = st;
        }
    if (st != 0)
        wfault_violation(h, NM_INV_FORK, pi, tid, ns, "a fork child did not exit with 0");
}

/* The events of worker-side faults (fork, shutdown); 1 when line was one. */
static int parse_wfault_line(nm_hist *h, int pi, nm_tstate *t, int64_t ns, char ev,
                             const char *line)
{
    long long a[9];
    char word[16];
    nm_proc *p = &h->procs[pi];
    int n;

    if ((ev == 'A' || ev == 'L') && sscanf(line, "%lld", &a[0]) == 1 && a[0] >= 0 &&
        a[0] < h->plan.nnames) {
        t->inv_shut = p->shut[a[0]] == 2;
        return 0;   /* parse_worker_line reads them too */
    }
    if (ev == 'D' && (n = sscanf(line, "%lld %15s %lld", &a[0], word, &a[1])) >= 2 &&
        a[0] >= 0 && a[0] < h->plan.nnames) {
        on_shutdown_line(h, pi, ns, (int)a[0], word, n == 3 ? (int)a[1] : 0);
        return 1;
    }
    if (ev == 'F' && (n = sscanf(line, "%15s %lld %*d %lld", word, &a[0], &a[1])) >= 2) {
        on_fork_line(h, pi, t->tid, ns, word, (int)a[0], n == 3 ? (int)a[1] : 0);
        return 1;
    }
    if (ev == 'H' && sscanf(line, "%lld %lld %lld", &a[0], &a[1], &a[2]) == 3) {
        if (a[2] != 0)
            wfault_violation(h, NM_INV_FORK, pi, t->tid, ns, "the fork child saw a hold "
                             "count other than 0 on an inherited handle");
        return 1;
    }
    if (ev == 'I' && sscanf(line, "%lld %lld %lld %lld %lld", &a[0], &a[1], &a[2], &a[3],
                            &a[4]) == 5 && t->last_hold >= 0) {
        nm_hold *x = &h->holds[t->last_hold];
        x->reads++;
        x->last_read = (int)a[4];
        x->seen |= a[2] || a[3] || a[4];
        return 1;
    }
    if (ev == 'S' && sscanf(line, "%lld %*d %*d %*d %lld %lld %lld %lld %lld", &a[0], &a[1],
                            &a[2], &a[3], &a[4], &a[5]) == 6 && a[0] >= 0 &&
        a[0] < h->plan.nnames) {
        p->s_lost[a[0]] = (unsigned long long)a[1];
        p->s_canc[a[0]] = (unsigned long long)a[2];
        p->s_gauges[a[0]] = (unsigned long long)(a[4] + a[5]);
    }
    return 0;
}

/* A release invoked: when it is the last level's and its process is
 * killed before it returns, the key may have gone cleanly (no lock-delay
 * then) or stayed: the history cannot tell. */
static void on_release_invoked(nm_hist *h, nm_tstate *t)
{
    if (t->hold >= 0 && h->holds[t->hold].count == 1)
        h->holds[t->hold].last_release_open = 1;
}

/* A member of a set after the set's call returned: a set that failed left
 * its hold count as it was, a set taken holds it one level more (a new
 * hold from the set's call to its return). */
static void on_member(nm_hist *h, int pi, nm_tstate *t, const int *f)
{
    int before = t->before[f[0]][f[1]];
    char what[160];

    if ((f[2] != RL_OK && f[3] != before) || (f[2] == RL_OK && f[3] != before + 1)) {
        snprintf(what, sizeof what, "a set that returned %d left member n%d (side %d) at hold "
                 "count %d, %d before it", f[2], f[0], f[1], f[3], before);
        wfault_violation(h, NM_INV_SET, pi, t->tid, t->set_ret, what);
    }
    on_acquired(h, pi, t, t->set_ret, f, -1);
}

/* B: a set's call (its members' counts before it); b: its return. */
static int parse_set_line(nm_tstate *t, long long ns, char ev, const char *line)
{
    int n, i, len, a[3];

    if (ev == 'b') {
        t->set_ret = ns;
        t->set_status = atoi(line);
        return 1;
    }
    if (ev != 'B' || sscanf(line, "%d %*d %*d%n", &n, &len) != 1)
        return ev == 'R';
    t->inv = ns;
    t->wait = 0;
    t->k = 1;
    line += len;
    for (i = 0; i < n && sscanf(line, "%d %d %d%n", &a[0], &a[1], &a[2], &len) == 3; i++) {
        line += len;
        if (a[0] >= 0 && a[0] < NM_NAMES_MAX && a[1] >= 0 && a[1] < 3)
            t->before[a[0]][a[1]] = a[2];
    }
    return 1;
}

static void parse_hold_line(nm_hist *h, int pi, nm_tstate *t, long long ns, char ev,
                            const char *line)
{
    long long a1, a2, a3, a4, a5, a6 = 0;
    size_t before = h->nholds;
    int f[4];

    if (ev == 'A' && sscanf(line, "%lld %lld %lld", &a1, &a2, &a3) == 3) {
        t->inv = ns;
        t->wait = (long)a3;
        t->k = sscanf(line, "%*d %*d %*d %*d %lld", &a4) == 1 && a4 > 0 ? (int)a4 : 1;
    } else if (ev == 'm' && sscanf(line, "%lld %lld %lld %lld", &a1, &a2, &a3, &a4) == 4) {
        f[0] = (int)a1, f[1] = (int)a2, f[2] = (int)a3, f[3] = (int)a4;
        on_member(h, pi, t, f);
    } else if (ev == 'r' && sscanf(line, "%lld %lld %lld %lld", &a1, &a2, &a3, &a4) == 4) {
        f[0] = (int)a1, f[1] = (int)a2, f[2] = (int)a3, f[3] = (int)a4;
        on_released(h, pi, t, ns, f);
    } else if (ev == 'a' && sscanf(line, "%lld %lld %lld %lld %lld %lld", &a1, &a2, &a3, &a4,
                                   &a5, &a6) >= 5) {
        f[0] = (int)a1, f[1] = (int)a2, f[2] = (int)a3, f[3] = (int)a4;
        if (f[0] >= 0 && f[0] < h->plan.nnames)
            on_acquired(h, pi, t, ns, f, a5);
        if (h->nholds > before)
            h->holds[h->nholds - 1].slots = (unsigned)a6;
    } else if (ev == 'L') {
        on_release_invoked(h, t);
    } else if (ev == 'W' && sscanf(line, "%lld %lld %lld %lld %lld", &a1, &a2, &a3, &a4, &a5) == 5) {
        on_write(h, t, ns, (int)a3, a4, (int)a5);
    } else if (ev == 'l' && sscanf(line, "%lld %lld %lld %lld", &a1, &a2, &a3, &a4) == 4) {
        f[0] = (int)a1, f[1] = (int)a2, f[2] = (int)a3, f[3] = (int)a4;
        if (f[0] >= 0 && f[0] < h->plan.nnames)
            on_released(h, pi, t, ns, f);
    }
}

static void parse_other_line(nm_hist *h, int pi, char ev, const char *line)
{
    long long a1, a2, a3, a4, a6;

    if (ev == 'S' && sscanf(line, "%lld %lld %lld %lld %lld", &a1, &a2, &a3, &a4, &a6) == 5 &&
        a1 >= 0 && a1 < h->plan.nnames) {
        h->procs[pi].has_stats[a1] = 1;
        h->procs[pi].s_acq[a1] = (unsigned long long)a2;
        h->procs[pi].s_reent[a1] = (unsigned long long)a3;
        h->procs[pi].s_rel[a1] = (unsigned long long)a4;
    } else if (ev == 'P' && strncmp(line, "end", 3) == 0) {
        h->procs[pi].ended = 1;
    }
}

static void parse_worker_line(nm_hist *h, int pi, nm_tstate *ts, int *nts, const char *line)
{
    long long ns, a1, a2;
    int tid;
    char ev;
    nm_tstate *t;

    if (sscanf(line, "%lld %d %c", &ns, &tid, &ev) != 3)
        return;
    t = tstate(ts, nts, tid);
    line = strchr(strchr(line, ' ') + 1, ' ') + 3;
    if (parse_wfault_line(h, pi, t, ns, ev, line) || parse_set_line(t, ns, ev, line))
        return;
    /* A line of a name and side: its hold is the thread's to act on. */
    t->member = ev == 'm' || ev == 'r';
    if (strchr("AaLlWmr", ev) == NULL || sscanf(line, "%lld %lld", &a1, &a2) != 2 || a1 < 0 ||
        a1 >= h->plan.nnames || a1 >= NM_NAMES_MAX || a2 < 0 || a2 > 2) {
        parse_other_line(h, pi, ev, line);
        return;
    }
    t->hold = t->held[a1][a2];
    parse_hold_line(h, pi, t, ns, ev, line);
    t->held[a1][a2] = t->hold;
}

static int read_worker(nm_hist *h, const char *file)
{
    char path[1100], line[512];
    nm_tstate ts[16];
    int nts = 0, pi, k;
    FILE *fp;

    if (h->nprocs >= 64)
        return -1;
    pi = h->nprocs++;
    memset(&h->procs[pi], 0, sizeof h->procs[pi]);
    snprintf(h->procs[pi].file, sizeof h->procs[pi].file, "%s", file);
    if (sscanf(file, "w%d.%d.c%d", &h->procs[pi].index, &h->procs[pi].gen, &k) == 3)
        h->procs[pi].child = k + 1;
    snprintf(path, sizeof path, "%s/%s", h->dir, file);
    if ((fp = fopen(path, "r")) == NULL)
        return -1;
    while (fgets(line, sizeof line, fp) != NULL)
        if (strchr(line, '\n') != NULL)     /* a SIGKILL may cut the last line */
            parse_worker_line(h, pi, ts, &nts, line);
    fclose(fp);
    return 0;
}

/* A fault whose end logged a status other than 0 did not happen as
 * logged, yet its window still excuses what it would have excused: the
 * run does not stand. */
static void fault_failed(nm_hist *h, const char *line, int kind, int arg)
{
    long long ns;
    int a, b, rc;
    char word[16];

    if (sscanf(line, "%lld 0 F %d %d %15s %d", &ns, &a, &b, word, &rc) != 5 || rc == 0)
        return;
    if (rc == 1) {
        /* Nothing to act on (a CLIENT KILL that found no connection, a
         * reply never sent through the proxy to drop): the fault did not
         * happen, so its window excuses nothing. Counted, not a violation. */
        h->nfaults--;
        h->v->faults--;
        h->v->undone++;
        printf("note: fault %s (arg %d) found nothing to act on: left out\n",
               nm_fault_name(kind), arg);
        return;
    }
    h->bad_exits++;
    printf("VIOLATION bookkeeping: fault %s (arg %d) was not carried out (status %d)\n",
           nm_fault_name(kind), arg, rc);
}

/* Redlock's spread fault: a master out, or back (the last stretch of that
 * master still open ends). */
static void on_out_line(nm_hist *h, int64_t ns, int node, const char *word)
{
    int i;

    if (strcmp(word, "out") == 0 && h->nouts < NM_OUTS_MAX) {
        h->outs[h->nouts].node = node;
        h->outs[h->nouts].start = ns;
        h->outs[h->nouts++].end = NM_FOREVER;
        return;
    }
    for (i = h->nouts - 1; i >= 0; i--)
        if (h->outs[i].node == node && h->outs[i].end == NM_FOREVER) {
            h->outs[i].end = ns;
            return;
        }
}

static void parse_ctl_line(nm_hist *h, const char *line)
{
    long long ns, seed;
    int a, b, c, d, e;
    char word[16];

    if (sscanf(line, "%lld 0 C %llx", &ns, &seed) == 2) {
        nm_plan_draw(&h->plan, (uint64_t)seed);
    } else if (sscanf(line, "%lld 0 T %15s", &ns, word) == 2 && strcmp(word, "start") == 0) {
        h->t0 = ns;
    } else if (sscanf(line, "%lld 0 F %d %d %15s", &ns, &a, &b, word) == 4) {
        if (strcmp(word, "start") == 0 && h->nfaults < NM_FAULTS_MAX * 2) {
            h->faults[h->nfaults].kind = a;
            h->faults[h->nfaults].arg = b;
            h->faults[h->nfaults].start = ns;
            h->faults[h->nfaults].node = -1;
            sscanf(line, "%*s 0 F %*d %*d start %d", &h->faults[h->nfaults].node);
            h->faults[h->nfaults++].end = NM_FOREVER;
            h->v->faults++;
        } else if (h->nfaults > 0) {
            h->faults[h->nfaults - 1].end = ns;
            fault_failed(h, line, a, b);
        }
    } else if (sscanf(line, "%lld 0 X %d %d %d %d %d", &ns, &a, &b, &c, &d, &e) == 6) {
        int i;
        for (i = 0; i < h->nprocs; i++)
            if (h->procs[i].index == a && h->procs[i].gen == b && !h->procs[i].child)
                h->procs[i].killed = e;
        if (e == 0 && d != 0) {
            h->bad_exits++;
            printf("VIOLATION bookkeeping: worker %d generation %d (pid %d) exited with %d\n",
                   a, b, c, d);
        }
    } else if (sscanf(line, "%lld 0 K %d", &ns, &a) == 2) {
        h->keys_left = a;
    } else if (sscanf(line, "%lld 0 O %d %15s", &ns, &a, word) == 3) {
        on_out_line(h, ns, a, word);
    } else if (sscanf(line, "%lld 0 N %d %d", &ns, &a, &b) == 3 &&
               h->nnodelog < (int)(sizeof h->nodes / sizeof h->nodes[0])) {
        h->nodes[h->nnodelog].at = ns;
        h->nodes[h->nnodelog].name = a;
        h->nodes[h->nnodelog++].node = b;
    }
}

static int read_ctl(nm_hist *h)
{
    char path[700], line[256];
    FILE *fp;

    snprintf(path, sizeof path, "%s/ctl.hist", h->dir);
    if ((fp = fopen(path, "r")) == NULL)
        return -1;
    while (fgets(line, sizeof line, fp) != NULL)
        parse_ctl_line(h, line);
    fclose(fp);
    return h->plan.nnames > 0 ? 0 : -1;
}

static int read_all(nm_hist *h)
{
    DIR *d;
    struct dirent *e;
    char path[700], line[256];
    FILE *fp;

    /* The seed first (the plan says how many names there are), then the
     * workers, then the controller's exits and keys. */
    snprintf(path, sizeof path, "%s/ctl.hist", h->dir);
    if ((fp = fopen(path, "r")) == NULL)
        return -1;
    while (fgets(line, sizeof line, fp) != NULL && h->plan.nnames == 0)
        parse_ctl_line(h, line);
    fclose(fp);
    if ((d = opendir(h->dir)) == NULL)
        return -1;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] == 'w' && strstr(e->d_name, ".hist") != NULL)
            read_worker(h, e->d_name);
    closedir(d);
    memset(&h->plan, 0, sizeof h->plan);
    h->v->faults = 0;
    return read_ctl(h);
}

/* ---- the invariants ------------------------------------------------------ */

static int fault_in(const nm_hist *h, int kind, int arg, int64_t from, int64_t to)
{
    int i;

    for (i = 0; i < h->nfaults; i++)
        if (h->faults[i].kind == kind && (arg < 0 || h->faults[i].arg == arg) &&
            h->faults[i].start <= to && h->faults[i].end >= from)
            return 1;
    return 0;
}

static int exclusive_pair(const nm_hold *a, const nm_hold *b)
{
    return a->side != NM_SIDE_READ || b->side != NM_SIDE_READ;
}

/* Whether a force-release of the name excuses the overlap of a and b:
 * without lock-delay, a holder in another process learns of it at its next
 * renewal, or when its fixed lease runs out; within a lease of the force at
 * the latest. Only the overlap inside that stretch, from the force's start
 * to a lease after its end, of a hold that was asked for before the force
 * ended is excused: what the two did before the force, or a lease after
 * it, is checked. */
static int force_excuses(const nm_hist *h, const nm_hold *a, const nm_hold *b)
{
    const nm_name *n = &h->plan.names[a->name];
    int64_t lo = a->ret > b->ret ? a->ret : b->ret;
    int64_t hi = a->good_end < b->good_end ? a->good_end : b->good_end;
    int64_t first = a->inv < b->inv ? a->inv : b->inv;
    int i;

    if (n->delay_ms != 0)
        return 0;
    for (i = 0; i < h->nfaults; i++) {
        const nm_fwin *f = &h->faults[i];
        int64_t until = f->end == NM_FOREVER ? NM_FOREVER
                                              : f->end + n->lease_ms * NM_MS + NM_DELAY_TOL_NS;
        if (f->kind == NM_F_FORCE && f->arg == a->name && first <= f->end &&
            f->start <= lo && hi <= until)
            return 1;
    }
    return 0;
}

static void check_exclusion(nm_hist *h)
{
    size_t i, j;

    for (i = 0; i < h->nholds; i++) {
        const nm_hold *a = &h->holds[i];
        if (a->good_end <= a->ret || h->plan.names[a->name].family == NM_SEM)
            continue;   /* a semaphore's holds: check_capacity() */
        for (j = i + 1; j < h->nholds; j++) {
            const nm_hold *b = &h->holds[j];
            if (b->name != a->name || b->good_end <= b->ret || !exclusive_pair(a, b))
                continue;
            if (a->proc == b->proc && a->tid == b->tid)
                continue;
            if (a->ret < b->good_end && b->ret < a->good_end && !force_excuses(h, a, b))
                violation(h, NM_INV_EXCL, a->name, a, b, "two valid holds overlap");
        }
    }
}

/* Whether a force-release of x's name reaches into x's valid interval or
 * a lease after it (as force_excuses(), for one hold). */
static int forced_near(const nm_hist *h, const nm_hold *x)
{
    const nm_name *n = &h->plan.names[x->name];
    int i;

    for (i = 0; i < h->nfaults; i++) {
        const nm_fwin *f = &h->faults[i];
        int64_t until = f->end == NM_FOREVER ? NM_FOREVER
                                              : f->end + n->lease_ms * NM_MS + NM_DELAY_TOL_NS;
        if (f->kind == NM_F_FORCE && f->arg == x->name && x->inv <= f->end &&
            f->start <= x->good_end && x->ret <= until)
            return 1;
    }
    return 0;
}

/* One end of a hold's valid interval, for the sweeps: +k at its start,
 * -k at its end (ends first at one instant). */
typedef struct nm_edge {
    int64_t at;
    int delta;
    long hold;
} nm_edge;

static int cmp_edge(const void *a, const void *b)
{
    const nm_edge *x = a, *y = b;

    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return x->delta - y->delta;
}

/* Capacity: at no instant do the valid intervals of a semaphore's holds
 * (from the acquisition's return to the last write that saw the flag down)
 * take more than its N permits, each hold its k. Holds a force-release of
 * the name reached (learnt at the next renewal) are left out. */
static void check_capacity_of(nm_hist *h, int name)
{
    nm_edge *e = malloc((2 * h->nholds + 1) * sizeof *e);
    size_t n = 0, i;
    int used = 0, over = 0;

    for (i = 0; i < h->nholds; i++) {
        const nm_hold *x = &h->holds[i];
        if (x->name != name || x->good_end <= x->ret || forced_near(h, x))
            continue;
        e[n++] = (nm_edge){ x->ret, x->permits, (long)i };
        e[n++] = (nm_edge){ x->good_end, -x->permits, (long)i };
    }
    qsort(e, n, sizeof *e, cmp_edge);
    for (i = 0; i < n; i++) {
        used += e[i].delta;
        if (used > h->plan.names[name].permits && !over) {
            char what[160];
            snprintf(what, sizeof what, "%d permits held validly at once, the semaphore has %d "
                     "(event 1: the hold that took the last)", used, h->plan.names[name].permits);
            violation(h, NM_INV_CAP, name, &h->holds[e[i].hold], NULL, what);
        }
        over = used > h->plan.names[name].permits;
    }
    free(e);
}

static void check_capacity(nm_hist *h)
{
    int i;

    for (i = 0; i < h->plan.nnames; i++)
        if (h->plan.names[i].family == NM_SEM)
            check_capacity_of(h, i);
}

/* rl_interrupted() stays 1 while the thread holds a lost lease (a lost
 * hold never comes back): a write that saw it down after a write of the
 * same hold saw it up is a flag that fell, and the writes it credits may
 * overlap no one. Left out: a thread that kept an earlier hold (its flag
 * is the thread's, and that hold may have been forgotten since). */
static void check_flag_stays(nm_hist *h)
{
    size_t i;

    for (i = 0; i < h->nholds; i++) {
        const nm_hold *x = &h->holds[i];
        /* A hold its client's shutdown cut: rl_interrupted() reports it
         * once, then forgets it (rlock.h): the flag falls by design. */
        if (x->lowered != 0 && !x->others && !x->cut)
            violation(h, NM_INV_EXCL, x->name, x, NULL,
                      "rl_interrupted() went down again under a hold it had flagged");
    }
}

/* Whether the data went with an empty restart in [from, to]. Sentinel's
 * kill is a failover to a replica that acknowledged every change (the
 * workers' wait_replicas 2: the documented condition), the old primary
 * coming back empty as a replica: nothing acknowledged is lost. */
static int data_lost(const nm_hist *h, int64_t from, int64_t to)
{
    /* Sentinel and a Cluster with replicas fail over to a replica that
     * acknowledged every change (wait_replicas): nothing is lost there. */
    return h->plan.deploy != NM_SENTINEL && h->plan.deploy != NM_CLUSTER_R &&
           (fault_in(h, NM_F_SRV_KILL_EMPTY, -1, from, to) || fault_in(h, NM_F_SPREAD, -1, from, to));
}

static void check_fencing(nm_hist *h)
{
    size_t i, j;

    for (i = 0; i < h->nholds; i++) {
        const nm_hold *a = &h->holds[i];
        if (!h->plan.names[a->name].fencing)
            continue;
        if (a->token < 0) {     /* rl_lock_token() failed on a fencing client's hold */
            violation(h, NM_INV_FENCE, a->name, a, NULL, "a hold of a fencing name has no token");
            continue;
        }
        for (j = 0; j < h->nholds; j++) {
            const nm_hold *b = &h->holds[j];
            int64_t from, to;
            if (j == i || b->name != a->name || b->token < 0)
                continue;
            from = a->inv < b->inv ? a->inv : b->inv;
            to = a->ret > b->ret ? a->ret : b->ret;
            if (data_lost(h, from, to))
                continue;   /* the counter went with the data: outside the guarantee */
            if (i < j && a->token == b->token)
                violation(h, NM_INV_FENCE, a->name, a, b, "one token handed out twice");
            else if (a->ret < b->inv && a->token >= b->token)
                violation(h, NM_INV_FENCE, a->name, a, b,
                          "a later acquisition got a token not above an earlier one's");
        }
    }
}

/* Fencing per permit (a fenced semaphore): two holds whose valid intervals
 * (from the acquisition's return to the last write that saw the flag down)
 * overlap never share a permit slot, and of two holds that share one, the
 * one whose interval ended before the other's began has the lower token.
 * Holds a force-release reached, and pairs across an empty restart, are
 * left out, as for the capacity and the tokens. */
static void check_slots(nm_hist *h)
{
    size_t i, j;

    for (i = 0; i < h->nholds; i++) {
        const nm_hold *a = &h->holds[i];
        if (!h->plan.names[a->name].fencing || h->plan.names[a->name].family != NM_SEM ||
            a->good_end <= a->ret || forced_near(h, a))
            continue;
        if (!a->slots) {
            violation(h, NM_INV_FENCE, a->name, a, NULL, "a fenced semaphore hold has no slots");
            continue;
        }
        for (j = i + 1; j < h->nholds; j++) {
            const nm_hold *b = &h->holds[j];
            if (b->name != a->name || !(a->slots & b->slots) || b->good_end <= b->ret ||
                forced_near(h, b) || data_lost(h, a->inv < b->inv ? a->inv : b->inv,
                                               a->ret > b->ret ? a->ret : b->ret))
                continue;
            if (a->ret < b->good_end && b->ret < a->good_end)
                violation(h, NM_INV_FENCE, a->name, a, b, "two valid holds share a permit slot");
            else if ((a->good_end <= b->ret && a->token >= b->token) ||
                     (b->good_end <= a->ret && b->token >= a->token))
                violation(h, NM_INV_FENCE, a->name, a, b,
                          "a later holder of a permit slot has a token not above the earlier's");
        }
    }
}

/* Whether a fault other than a fork (and, when `skip` is NM_F_SHUTDOWN, a
 * shutdown: the one that cut the hold) touches [from, to]. */
static int other_fault_in(const nm_hist *h, int skip, int64_t from, int64_t to)
{
    int i;

    for (i = 0; i < h->nfaults; i++)
        if (h->faults[i].kind != NM_F_FORK && h->faults[i].kind != skip &&
            h->faults[i].start <= to && h->faults[i].end >= from)
            return 1;
    return 0;
}

/* When a lost hold was lost, for the lock-delay rule: its last valid write,
 * or for a hold still held when its client was shut down, the shutdown's
 * start (the library gives it up then, and the delay applies). A hold held
 * for sure at the shutdown: no earlier fault could have cost it its lease
 * (a lease and a delay and 2.5 s before it), no flag seen before, and a
 * fixed lease not near its end. */
static int64_t lost_at(const nm_hist *h, const nm_hold *a)
{
    const nm_name *n = &h->plan.names[a->name];
    int64_t start, before = (nm_plan_lease_delay_max(&h->plan) + 2500) * NM_MS;

    if (!a->cut)
        return a->good_end;
    start = h->wrecs[a->cut - 1].start;
    if ((a->flag_at != 0 && a->flag_at < start) || other_fault_in(h, NM_F_SHUTDOWN, a->inv - before, start - 1) ||
        (n->fixed && start > a->inv + n->lease_ms * 9 / 10 * NM_MS))
        return a->good_end;
    return start > a->good_end ? start : a->good_end;
}

static void check_delay(nm_hist *h)
{
    size_t i, j;

    for (i = 0; i < h->nholds; i++) {
        const nm_hold *a = &h->holds[i];
        int64_t delay = (int64_t)h->plan.names[a->name].delay_ms * NM_MS, end;
        int lost = released_badly(a) || (!a->closed && !a->last_release_open);
        if (delay == 0 || !lost || a->good_end == 0)
            continue;
        end = lost_at(h, a);
        for (j = 0; j < h->nholds; j++) {
            const nm_hold *b = &h->holds[j];
            if (j == i || b->name != a->name || b->good_end <= b->ret)
                continue;
            if (b->ret <= end || b->ret >= end + delay - NM_DELAY_TOL_NS)
                continue;
            /* Forcing the name again ends the block; an empty restart
             * (drawn only longer than every lease + delay) loses it. */
            if (fault_in(h, NM_F_FORCE, a->name, a->ret, b->ret) ||
                data_lost(h, a->ret, b->ret))
                continue;
            violation(h, NM_INV_DELAY, a->name, a, b, a->cut && end > a->good_end ?
                      "granted again before the shutdown that cut the hold + delay" :
                      "granted again before the lost hold's last valid moment + delay");
        }
    }
}

/* Until when a hold may keep the name from others, as far as the history
 * can tell (a lost one: its lease and delay after the last we saw of it). */
static int64_t occupied_until(const nm_hist *h, const nm_hold *x)
{
    const nm_name *n = &h->plan.names[x->name];

    if (!x->closed)
        return NM_FOREVER;
    if (released_badly(x) || x->flagged)
        return x->rel_ret + (n->lease_ms + n->delay_ms) * NM_MS;
    return x->rel_ret;
}

/* Whether any fault, or its aftermath, touches [from, to]. */
static int quiet(const nm_hist *h, int64_t from, int64_t to)
{
    int64_t after = (nm_plan_lease_delay_max(&h->plan) + 2500) * NM_MS;
    int i;

    for (i = 0; i < h->nfaults; i++)
        if (h->faults[i].start <= to && h->faults[i].end + after >= from)
            return 0;
    return 1;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The longest stretch of [from, to] no hold of the name covers. */
static int64_t longest_free(const nm_hist *h, int name, int64_t from, int64_t to)
{
    int64_t (*iv)[2] = malloc((h->nholds + h->ncalls + 1) * sizeof *iv);
    size_t n = 0, i;
    int64_t cur = from, best = 0;

    for (i = 0; i < h->nholds; i++)
        if (h->holds[i].name == name) {
            iv[n][0] = h->holds[i].inv;
            iv[n++][1] = occupied_until(h, &h->holds[i]);
        }
    for (i = 0; i < h->ncalls; i++) {   /* an outcome not known: may hold it */
        const nm_call *c = &h->calls[i];
        const nm_name *m = &h->plan.names[name];
        int unknown = c->status != RL_OK && c->status != RL_EBUSY && c->status != RL_ETIMEDOUT;
        /* A set that failed may have held this member, taken before
         * another, until it gave it back (lockset.c's ordered path). */
        if (c->name == name && (unknown || (c->set && c->status != RL_OK))) {
            iv[n][0] = c->inv;
            iv[n++][1] = c->ret + (unknown ? (m->lease_ms + m->delay_ms) * NM_MS : 0);
        }
    }
    qsort(iv, n, sizeof *iv, cmp_i64);
    for (i = 0; i < n && cur < to; i++) {
        if (iv[i][0] > cur && (iv[i][0] < to ? iv[i][0] : to) - cur > best)
            best = (iv[i][0] < to ? iv[i][0] : to) - cur;
        if (iv[i][1] > cur)
            cur = iv[i][1];
    }
    if (cur < to && to - cur > best)
        best = to - cur;
    free(iv);
    return best;
}

/* A semaphore's: the longest stretch of [from, to] in which `need` of its
 * permits were provably free (holds occupy their k, calls of unknown
 * outcome and sets that failed theirs, as longest_free() counts them). */
static int64_t longest_room(const nm_hist *h, int name, int need, int64_t from, int64_t to)
{
    const nm_name *m = &h->plan.names[name];
    nm_edge *e = malloc((2 * (h->nholds + h->ncalls) + 1) * sizeof *e);
    size_t n = 0, i;
    int used = 0;
    int64_t free_from = from, best = 0;

    for (i = 0; i < h->nholds; i++)
        if (h->holds[i].name == name) {
            e[n++] = (nm_edge){ h->holds[i].inv, h->holds[i].permits, (long)i };
            e[n++] = (nm_edge){ occupied_until(h, &h->holds[i]), -h->holds[i].permits, (long)i };
        }
    for (i = 0; i < h->ncalls; i++) {
        const nm_call *c = &h->calls[i];
        int unknown = c->status != RL_OK && c->status != RL_EBUSY && c->status != RL_ETIMEDOUT;
        if (c->name == name && (unknown || (c->set && c->status != RL_OK))) {
            e[n++] = (nm_edge){ c->inv, c->k, -1 };
            e[n++] = (nm_edge){ c->ret + (unknown ? (m->lease_ms + m->delay_ms) * NM_MS : 0),
                                -c->k, -1 };
        }
    }
    qsort(e, n, sizeof *e, cmp_edge);
    for (i = 0; i <= n; i++) {
        int64_t at = i < n ? e[i].at : NM_FOREVER, lo = free_from > from ? free_from : from;
        int was_free = used + need <= m->permits;
        if (i < n)
            used += e[i].delta;
        if (was_free && (at < to ? at : to) - lo > best)
            best = (at < to ? at : to) - lo;
        if (!was_free || used + need > m->permits)
            free_from = at;
    }
    free(e);
    return best;
}

/* Whether another thread of x's process held or wanted x's name during its
 * wait: threads of a process queue locally, only the local head has a place
 * in Redis, and a release queues the releasing process's next waiter at the
 * tail (processes take turns). Only a waiter alone in its process is known
 * to have been queued in Redis from its call on. */
static int not_alone(const nm_hist *h, const nm_hold *x)
{
    size_t j;

    for (j = 0; j < h->nholds; j++) {
        const nm_hold *o = &h->holds[j];
        if (o != x && o->proc == x->proc && o->name == x->name && o->inv <= x->ret &&
            occupied_until(h, o) >= x->inv)
            return 1;
    }
    for (j = 0; j < h->ncalls; j++) {
        const nm_call *c = &h->calls[j];
        if (c->proc == x->proc && c->name == x->name && c->tid != x->tid &&
            c->inv <= x->ret && c->ret >= x->inv)
            return 1;
    }
    return 0;
}

/* Whether a fault that can cost a waiter its place in the queue (its
 * process stopped or killed, the queue's data lost or moved, its connection
 * cut by a proxy) touches [from, to]. SCRIPT FLUSH, CLIENT KILL (a waiter
 * asks again within 500 ms, a free name stays promised to the head, and a
 * grant whose reply the kill cut, dropped as a leftover, puts the head back
 * first: seed 0x6107) and a force-release (the queue is left as it is)
 * cannot. Nor can a place
 * left after such a fault by a wait that ended unreachable (it could not
 * leave the queue: another thread of its process is served from it) once
 * it has run out: NM_FAIR_PLACE_MS after the fault. */
static int fair_quiet(const nm_hist *h, int64_t from, int64_t to)
{
    int i;

    for (i = 0; i < h->nfaults; i++) {
        int k = h->faults[i].kind;
        if (k == NM_F_FLUSH || k == NM_F_CKILL || k == NM_F_FORCE)
            continue;
        if (h->faults[i].start <= to && h->faults[i].end + NM_FAIR_PLACE_MS * NM_MS >= from)
            return 0;
    }
    return 1;
}

static void check_fair_order(nm_hist *h, size_t xi)
{
    const nm_hold *x = &h->holds[xi];
    size_t j;

    if (x->member || not_alone(h, x))
        return;   /* a set's member is asked only after the members before it */

    for (j = 0; j < h->nholds; j++) {
        const nm_hold *y = &h->holds[j];
        if (y->name != x->name || y->proc == x->proc || y->good_end == 0)
            continue;
        if (y->inv > x->inv + NM_FAIR_GAP_MS * NM_MS && x->ret > y->good_end &&
            fair_quiet(h, x->inv - NM_FAIR_GAP_MS * NM_MS, x->ret))
            violation(h, NM_INV_LIVE, x->name, x, y,
                      "a fair waiter was served after one that arrived later");
    }
}

/* Whether a fault that can cost a waiting writer its intent (its process
 * stopped or killed, the data lost or moved, the key force-released, its
 * connection stalled or cut) touches [from, to]. SCRIPT FLUSH and CLIENT
 * KILL cannot: the intent stays in Redis, and the writer asks again well
 * within its life. */
static int intent_quiet(const nm_hist *h, int64_t from, int64_t to)
{
    int i;

    for (i = 0; i < h->nfaults; i++) {
        int k = h->faults[i].kind;
        if (k == NM_F_FLUSH || k == NM_F_CKILL)
            continue;
        if (h->faults[i].start <= to && h->faults[i].end >= from)
            return 0;
    }
    return 1;
}

/* Whether waiter c must have been ahead of y, and y was served first: y,
 * a hold of another process that arrived NM_FAIR_GAP_MS after c, wrote
 * validly before c's grant returned, or returned NM_FAIR_GAP_MS before
 * c's wait ran out (c then timed out: it still waited when y was served). */
static int served_before(const nm_call *c, const nm_hold *y)
{
    int64_t gap = NM_FAIR_GAP_MS * NM_MS;

    if (y->name != c->name || y->proc == c->proc || y->good_end == 0 || y->inv <= c->inv + gap)
        return 0;
    if (c->newhold)
        return y->good_end < c->ret;
    return c->status == RL_ETIMEDOUT && y->ret < c->inv + c->wait * NM_MS - gap;
}

static void order_violation(nm_hist *h, const nm_call *c, const nm_hold *y, const char *what)
{
    char msg[800];

    snprintf(msg, sizeof msg, "%s\n  event 1: %s thread %d side %d: acquire (wait %ld ms) "
             "invoked %.1f, %s %.1f ms", what, h->procs[c->proc].file, c->tid, c->side,
             c->wait, rel_ms(h, c->inv), c->newhold ? "granted" : "timed out", rel_ms(h, c->ret));
    violation(h, NM_INV_LIVE, c->name, NULL, y, msg);
}

/* Whether no other thread of c's process held or wanted c's name during
 * its wait (not_alone(), for a call: threads of a process queue locally,
 * and only the local head asks Redis, with a place or an intent). */
static int call_alone(const nm_hist *h, const nm_call *c)
{
    size_t j;

    for (j = 0; j < h->nholds; j++) {
        const nm_hold *o = &h->holds[j];
        if (o->proc == c->proc && o->tid != c->tid && o->name == c->name &&
            o->inv <= c->ret && occupied_until(h, o) >= c->inv)
            return 0;
    }
    for (j = 0; j < h->ncalls; j++) {
        const nm_call *d = &h->calls[j];
        if (d->proc == c->proc && d->tid != c->tid && d->name == c->name &&
            d->inv <= c->ret && d->ret >= c->inv)
            return 0;
    }
    return 1;
}

/* A fair waiter that timed out (the granted ones are check_fair_order's);
 * a writer, granted or timed out, that read holds arriving after it
 * passed (a waiting writer's intent stops new readers). Both alone in
 * their process. */
static void check_waiter_order(nm_hist *h, size_t ci)
{
    const nm_call *c = &h->calls[ci];
    int family = h->plan.names[c->name].family;
    int64_t from = c->inv - NM_FAIR_GAP_MS * NM_MS;
    size_t j;

    if (c->wait == 0 || !call_alone(h, c))
        return;
    if (family == NM_FAIR && c->status == RL_ETIMEDOUT && fair_quiet(h, from, c->ret)) {
        for (j = 0; j < h->nholds; j++)
            if (served_before(c, &h->holds[j]))
                order_violation(h, c, &h->holds[j],
                                "a fair waiter timed out while one that arrived later was served");
    }
    if (family == NM_RW && c->side == NM_SIDE_WRITE &&
        (c->newhold || c->status == RL_ETIMEDOUT) && intent_quiet(h, from, c->ret)) {
        for (j = 0; j < h->nholds; j++)
            if (h->holds[j].side == NM_SIDE_READ && served_before(c, &h->holds[j]))
                order_violation(h, c, &h->holds[j],
                                "a reader that arrived after a waiting writer was served first");
    }
}

static void check_liveness(nm_hist *h)
{
    size_t i;

    for (i = 0; i < h->ncalls; i++) {
        const nm_call *c = &h->calls[i];
        int64_t gap;
        if (c->status != RL_ETIMEDOUT || c->set || !quiet(h, c->inv, c->ret))
            continue;
        gap = h->plan.names[c->name].family == NM_SEM
                  ? longest_room(h, c->name, c->k, c->inv, c->ret)
                  : longest_free(h, c->name, c->inv, c->ret);
        if (gap > NM_LIVE_BOUND_MS * NM_MS) {
            h->v->violations[NM_INV_LIVE]++;
            printf("VIOLATION liveness name n%d: %s thread %d waited %.1f..%.1f ms and timed "
                   "out although the name was free for %.1f ms\n  replay: rlnemesis run "
                   "--seed 0x%llx   (histories: %s)\n",
                   c->name, h->procs[c->proc].file, c->tid, rel_ms(h, c->inv),
                   rel_ms(h, c->ret), (double)gap / 1e6, (unsigned long long)h->plan.seed,
                   h->dir);
        }
    }
    for (i = 0; i < h->nholds; i++)
        if (h->plan.names[h->holds[i].name].family == NM_FAIR)
            check_fair_order(h, i);
    for (i = 0; i < h->ncalls; i++)
        check_waiter_order(h, i);
}

/* Cluster: the node serving the name at t (-1: none logged). */
static int node_of(const nm_hist *h, int name, int64_t t)
{
    int i, node = -1;

    for (i = 0; i < h->nnodelog; i++)
        if (h->nodes[i].name == name && (node < 0 || h->nodes[i].at <= t))
            node = h->nodes[i].node;
    return node;
}

static int stop_kind(int kind)
{
    return kind == NM_F_SRV_STOP || kind == NM_F_SRV_KILL_KEEP || kind == NM_F_SRV_KILL_EMPTY;
}

/* A node other than x's own (own -1: Redlock, every node is another's too)
 * stopped or down within [from, to]: the fault's index, or -1. */
static int other_node_out(const nm_hist *h, int own, int64_t from, int64_t to)
{
    int i;

    for (i = 0; i < h->nfaults; i++)
        if (stop_kind(h->faults[i].kind) && (own < 0 || h->faults[i].node != own) &&
            h->faults[i].start <= to && h->faults[i].end >= from)
            return i;
    return -1;
}

/* Whether something that concerns hold x touched [from, to] or its
 * aftermath: its own node's fault (own -1: Redlock, none is its own), its
 * name moved to another node, its process stopped or killed, its name
 * forced, a fault of every client's path (SCRIPT FLUSH, CLIENT KILL, the
 * proxy), or a kind this check does not know. */
static int iso_excused(const nm_hist *h, const nm_hold *x, int own, int64_t from, int64_t to)
{
    int64_t after = (nm_plan_lease_delay_max(&h->plan) + 2500) * NM_MS;
    int i, k;

    if (own >= 0 && node_of(h, x->name, to) != own)
        return 1;
    for (i = 0; i < h->nfaults; i++) {
        const nm_fwin *f = &h->faults[i];
        if (f->start > to || f->end + after < from)
            continue;
        k = f->kind;
        if ((stop_kind(k) && (own < 0 || f->node != own)) || k == NM_F_SPREAD)
            continue;          /* another node out: what is checked */
        if ((k == NM_F_WRK_STOP || k == NM_F_WRK_KILL) && f->arg != h->procs[x->proc].index)
            continue;
        if ((k == NM_F_FORCE || k == NM_F_MIGRATE) && f->arg != x->name)
            continue;
        return 1;
    }
    return 0;
}

/* Redlock: whether hold x met another thread's call or hold of the name
 * within 50 ms of its acquisition: a race at a release, or a lost hold's
 * fields running out node by node, may have left it on 3 masters of 5,
 * with the others' fields where it lacks, until they are given back or
 * run out (a lease at most). Only a hold won alone is on every master it
 * reached. */
static int redlock_raced(const nm_hist *h, const nm_hold *x)
{
    int64_t from = x->inv - 50 * NM_MS, to = x->ret + 50 * NM_MS;
    size_t j;

    for (j = 0; j < h->ncalls; j++) {
        const nm_call *c = &h->calls[j];
        if (c->name == x->name && (c->proc != x->proc || c->tid != x->tid) &&
            c->inv <= to && c->ret >= from)
            return 1;
    }
    for (j = 0; j < h->nholds; j++) {
        const nm_hold *o = &h->holds[j];
        if ((o->proc != x->proc || o->tid != x->tid) && o->name == x->name && o->inv <= to &&
            occupied_until(h, o) >= from)
            return 1;
    }
    return 0;
}

/* Redlock: every stretch a master was out: a server fault's window, or
 * one of the spread fault's masters (O lines). Their count. */
static int redlock_outs(const nm_hist *h, nm_out *o)
{
    int i, n = 0;

    for (i = 0; i < h->nfaults && n < NM_OUTS_MAX; i++)
        if (stop_kind(h->faults[i].kind) && h->faults[i].node >= 0) {
            o[n].node = h->faults[i].node;
            o[n].start = h->faults[i].start;
            o[n++].end = h->faults[i].end;
        }
    for (i = 0; i < h->nouts && n < NM_OUTS_MAX; i++)
        o[n++] = h->outs[i];
    return n;
}

/* Redlock: whether hold x may have been on fewer than a majority of the
 * masters at some moment from its acquisition to `to`. Won alone, it is on
 * every master that was not out from a settle before its call to its
 * return; a master out loses it (stopped past the field's expiry, or
 * restarted empty); a master back has it again a settle after its return
 * (NM_SPREAD_SETTLE_MS and the hold's lease: reconnected, and a renewal
 * round placed it there) if a majority kept it until then and its lease is
 * the watchdog's (a fixed lease is never renewed). With `spread` 0 no
 * master ever has it again: the library before the spread. On a tie a
 * master's fault comes before another's return. Won in a race
 * (redlock_raced), it may be on a bare majority, which ones unknown: any
 * master out from a settle before its call to a settle after its return
 * (to `to` without the spread) may have been one of them; with none, the
 * spread has placed it on every master a settle after its return (the
 * others' fields given back or run out), and from there on it is judged as
 * a hold won alone. */
static int redlock_below(const nm_hist *h, const nm_hold *x, int64_t to, int spread)
{
    const nm_name *nm = &h->plan.names[x->name];
    int64_t settle = (NM_SPREAD_SETTLE_MS + nm->lease_ms) * NM_MS, back[NM_NODES_MAX];
    int has[NM_NODES_MAX], maj = h->plan.nnodes / 2 + 1, count = 0, n, i, k;
    char done[NM_OUTS_MAX];
    nm_out o[NM_OUTS_MAX];

    n = redlock_outs(h, o);
    if (redlock_raced(h, x)) {
        int64_t until = !spread || nm->fixed ? to : x->ret + settle;
        for (i = 0; i < n; i++)
            if (o[i].start <= until && (o[i].end == NM_FOREVER || o[i].end + settle >= x->inv))
                return 1;
    }
    memset(done, 0, sizeof done);
    for (k = 0; k < h->plan.nnodes; k++) {
        has[k] = 1;
        back[k] = 0;
    }
    for (i = 0; i < n; i++) {
        int64_t b = o[i].end == NM_FOREVER ? NM_FOREVER : o[i].end + settle;
        if (o[i].start > x->ret)
            continue;
        done[i] = 1;
        if (b < x->inv)
            continue;          /* back in reach before the call */
        has[o[i].node] = 0;    /* out at the acquisition, or not yet back in reach */
        if (b > back[o[i].node])
            back[o[i].node] = b;
    }
    for (k = 0; k < h->plan.nnodes; k++)
        count += has[k];
    if (count < maj)
        return 1;
    for (;;) {
        int64_t ot = NM_FOREVER, bt = NM_FOREVER, b;
        int oi = -1, bk = -1;
        for (i = 0; i < n; i++)
            if (!done[i] && o[i].start <= to && o[i].start < ot) {
                ot = o[i].start;
                oi = i;
            }
        for (k = 0; k < h->plan.nnodes; k++)
            if (!has[k] && back[k] <= to && back[k] < bt) {
                bt = back[k];
                bk = k;
            }
        if (oi < 0 && bk < 0)
            return 0;
        if (oi >= 0 && ot <= bt) {
            done[oi] = 1;
            k = o[oi].node;
            b = o[oi].end == NM_FOREVER ? NM_FOREVER : o[oi].end + settle;
            if (has[k]) {
                has[k] = 0;
                back[k] = b;
                if (--count < maj)
                    return 1;
            } else if (b > back[k]) {
                back[k] = b;
            }
        } else if (!spread || nm->fixed) {
            back[bk] = NM_FOREVER;   /* never placed again */
        } else {
            has[bk] = 1;
            count++;
        }
    }
}

/* When hold x was lost, for isolation: its first flagged write, or (in
 * Redlock) a release that lost it; 0: neither. */
static int64_t iso_lost_at(const nm_hist *h, const nm_hold *x)
{
    if (x->flagged)
        return x->first_flag;
    return h->plan.deploy == NM_REDLOCK && x->bad_release ? x->rel_ret : 0;
}

/* Redlock: the master of the latest stretch out touching [from, to]; -1:
 * none. */
static int redlock_out_in(const nm_hist *h, int64_t from, int64_t to)
{
    nm_out o[NM_OUTS_MAX];
    int i, n = redlock_outs(h, o), last = -1;

    for (i = 0; i < n; i++)
        if (o[i].start <= to && o[i].end >= from && (last < 0 || o[i].start > o[last].start))
            last = i;
    return last < 0 ? -1 : o[last].node;
}

static void check_isolation(nm_hist *h)
{
    int cluster = h->plan.deploy == NM_CLUSTER;
    char what[200];
    size_t i;

    if (!cluster && h->plan.deploy != NM_REDLOCK)
        return;                /* one node: nothing to isolate */
    for (i = 0; i < h->nholds; i++) {
        const nm_hold *x = &h->holds[i];
        const nm_name *n = &h->plan.names[x->name];
        int own = cluster ? node_of(h, x->name, x->ret) : -1, out;
        int64_t lost = iso_lost_at(h, x);
        if (lost == 0 || (cluster && own < 0))
            continue;
        /* A fixed lease ends by itself (counted from the call). */
        if (n->fixed && lost >= x->inv + (n->lease_ms - 100) * NM_MS)
            continue;
        if (cluster) {
            out = other_node_out(h, own, x->inv, lost);
            if (out < 0 || iso_excused(h, x, own, x->inv, lost))
                continue;
            snprintf(what, sizeof what, "flagged at %.1f ms while node %d was out (%s, own "
                     "node %d)", rel_ms(h, lost), h->faults[out].node,
                     nm_fault_name(h->faults[out].kind), own);
        } else {
            out = redlock_out_in(h, x->inv, lost);
            if (out < 0 || iso_excused(h, x, -1, x->inv, lost) || redlock_below(h, x, lost, 1))
                continue;
            snprintf(what, sizeof what, "%s at %.1f ms while a majority of the masters kept "
                     "it (master %d was out%s)", x->flagged ? "flagged" : "lost by a release",
                     rel_ms(h, lost), out, redlock_below(h, x, lost, 0)
                     ? "; on a majority only through the spread" : "");
        }
        violation(h, NM_INV_ISO, x->name, x, NULL, what);
    }
}

/* Redlock: how many holds the isolation rule judged across a master's
 * fault, and how many of them stayed on a majority only through the
 * spread (placements on masters back from a fault). */
static void print_iso_coverage(const nm_hist *h)
{
    long judged = 0, spread = 0;
    size_t i;

    if (h->plan.deploy != NM_REDLOCK)
        return;
    for (i = 0; i < h->nholds; i++) {
        const nm_hold *x = &h->holds[i];
        int64_t end = iso_lost_at(h, x);
        if (end == 0)
            end = x->rel_ret;
        if (redlock_out_in(h, x->inv, end) < 0 || iso_excused(h, x, -1, x->inv, end) ||
            redlock_below(h, x, end, 1))
            continue;
        judged++;
        spread += redlock_below(h, x, end, 0);
    }
    printf("isolation checked: %ld Redlock holds across a master's fault, %ld of them on a "
           "majority only through the spread\n", judged, spread);
}

/* How much the liveness checks could look at: a run whose every wait fell
 * in a fault's shadow checked nothing, and says so. */
static void print_live_coverage(const nm_hist *h)
{
    long timeouts = 0, quiet_to = 0, fair = 0, fair_ok = 0, waits = 0, waits_ok = 0;
    int64_t gap = NM_FAIR_GAP_MS * NM_MS;
    size_t i;

    for (i = 0; i < h->ncalls; i++) {
        const nm_call *c = &h->calls[i];
        int family = h->plan.names[c->name].family;
        if (c->set)
            continue;
        if (c->status == RL_ETIMEDOUT) {
            timeouts++;
            quiet_to += quiet(h, c->inv, c->ret);
        }
        if (c->wait > 0 && (family == NM_FAIR || (family == NM_RW && c->side == NM_SIDE_WRITE)) &&
            (c->newhold || c->status == RL_ETIMEDOUT)) {
            waits++;
            waits_ok += call_alone(h, c) && (family == NM_FAIR ? fair_quiet(h, c->inv - gap, c->ret)
                                                                : intent_quiet(h, c->inv - gap, c->ret));
        }
    }
    for (i = 0; i < h->nholds; i++)
        if (h->plan.names[h->holds[i].name].family == NM_FAIR) {
            fair++;
            fair_ok += !not_alone(h, &h->holds[i]) &&
                       fair_quiet(h, h->holds[i].inv - gap, h->holds[i].ret);
        }
    printf("liveness checked: %ld of %ld timed-out calls, %ld of %ld fair grants, %ld of %ld "
           "queued waits (fair, writer)\n", quiet_to, timeouts, fair_ok, fair, waits_ok, waits);
}

static void check_books(nm_hist *h)
{
    int i, n;

    h->v->violations[NM_INV_BOOK] += h->bad_exits;
    if (h->keys_left != 0) {
        h->v->violations[NM_INV_BOOK]++;
        printf("VIOLATION bookkeeping: %ld keys of the run left after it and one lease\n",
               h->keys_left);
    }
    for (i = 0; i < h->nprocs; i++) {
        const nm_proc *p = &h->procs[i];
        if (!p->ended) {
            if (!p->killed) {
                h->v->violations[NM_INV_BOOK]++;
                printf("VIOLATION bookkeeping: %s never ended and was not killed\n", p->file);
            }
            continue;
        }
        for (n = 0; n < h->plan.nnames; n++)
            if (books_differ(p, n, 0)) {
                h->v->violations[NM_INV_BOOK]++;
                printf("VIOLATION bookkeeping name n%d: %s stats acq/reent/rel %llu/%llu/%llu, "
                       "history %ld/%ld/%ld\n", n, p->file, p->s_acq[n], p->s_reent[n],
                       p->s_rel[n], p->acq[n], p->reent[n], p->rel[n]);
            }
    }
}

/* A hold cut by a shutdown: its thread saw the flag, then the stale hold
 * was forgotten (the last of its three reads after the section is 0). */
static void check_shutdown(nm_hist *h)
{
    size_t i;

    for (i = 0; i < h->nholds; i++) {
        const nm_hold *x = &h->holds[i];
        if (!x->cut || x->reads == 0)
            continue;
        if (!x->seen)
            violation(h, NM_INV_SHUT, x->name, x, NULL, "a hold cut by a shutdown of its "
                      "client: its thread never saw rl_interrupted() return 1");
        else if (x->last_read != 0)
            violation(h, NM_INV_SHUT, x->name, x, NULL, "a hold cut by a shutdown of its "
                      "client: rl_interrupted() still 1 after it reported the loss");
    }
}

/* A fork leaves the parent's holds alone: a hold of the forking process
 * live at the fork, with no other fault near it, is not flagged and is
 * released with RL_OK (watchdog holds: still renewed). */
static void check_fork_parent(nm_hist *h)
{
    int64_t before = (nm_plan_lease_delay_max(&h->plan) + 2500) * NM_MS;
    size_t i;
    int r;

    for (r = 0; r < h->nwrecs; r++) {
        const nm_wrec *f = &h->wrecs[r];
        if (f->kind != NM_F_FORK)
            continue;
        for (i = 0; i < h->nholds; i++) {
            const nm_hold *x = &h->holds[i];
            const nm_name *n = &h->plan.names[x->name];
            if (x->proc != f->proc || x->ret > f->start || (x->closed && x->rel_ret < f->start))
                continue;
            /* A hold never seen released because its process was killed
             * after the fork (wrk_kill) was lost to the kill, not the fork. */
            if ((!x->closed && h->procs[x->proc].killed) ||
                other_fault_in(h, NM_F_FORK, x->inv - before, x->rel_ret) ||
                (n->fixed && x->rel_ret > x->inv + n->lease_ms * 9 / 10 * NM_MS))
                continue;
            if (x->flagged || released_badly(x) || !x->closed)
                violation(h, NM_INV_FORK, x->name, x, NULL, "a hold of the parent, live at "
                          "the fork, was flagged or lost");
        }
    }
}

/* A fork's or a shutdown's fault lasts until the worker says it is over
 * (the child reaped, the new client open). */
static void extend_wfault_windows(nm_hist *h)
{
    int i, r;

    for (i = 0; i < h->nfaults; i++) {
        nm_fwin *w = &h->faults[i];
        if (w->kind != NM_F_FORK && w->kind != NM_F_SHUTDOWN)
            continue;
        for (r = 0; r < h->nwrecs; r++) {
            const nm_wrec *x = &h->wrecs[r];
            if (x->kind == w->kind && h->procs[x->proc].index == w->arg &&
                x->start >= w->start && x->start <= w->end + 10000 * NM_MS && x->end > w->end)
                w->end = x->end;
        }
    }
}

int nm_check_dir(const char *dir, nm_verdict *v)
{
    nm_hist h;

    memset(&h, 0, sizeof h);
    memset(v, 0, sizeof *v);
    h.dir = dir;
    h.v = v;
    h.keys_left = -1;
    if (read_all(&h) != 0) {
        fprintf(stderr, "rlnemesis: cannot read the histories in %s\n", dir);
        return -1;
    }
    extend_wfault_windows(&h);
    check_exclusion(&h);
    check_capacity(&h);
    check_flag_stays(&h);
    check_fencing(&h);
    check_slots(&h);
    check_delay(&h);
    check_liveness(&h);
    check_books(&h);
    check_isolation(&h);
    check_shutdown(&h);
    check_fork_parent(&h);
    print_live_coverage(&h);
    print_iso_coverage(&h);
    free(h.holds);
    free(h.calls);
    return 0;
}
