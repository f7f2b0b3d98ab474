/*
 * rlnemesis — random, replayable fault schedules over rlock, and one checker
 * of the whole history (issue 23).
 *
 * One 64-bit seed draws a whole test (nm_plan_draw()): the deployment, the
 * lock names with their kind and options, the worker processes and threads,
 * their hold and think times, the run length and the fault schedule. The
 * same seed always draws the same plan; timing may differ between runs.
 *
 *   rlnemesis run --seed S [--keep]       one run: draw, run, check, one summary line
 *   rlnemesis run --seeds N --from S      N runs, seeds S, S+1, ...
 *   rlnemesis check DIR                   check the histories a run kept in DIR
 *   rlnemesis worker ...                  a worker process (spawned by `run`)
 *
 * Histories are text files in the run's directory, one event a line, each
 * line "<CLOCK_MONOTONIC ns> <thread> <event> ...": w<index>.<generation>.hist
 * per worker process, ctl.hist for the controller (faults, exits, keys left).
 * See nm_worker.c and nm_run.c for the events each writes, nm_check.c for
 * what is verified.
 */
#ifndef RL_NEMESIS_H
#define RL_NEMESIS_H

#include <stddef.h>
#include <stdint.h>

/* ---- the PRNG: xoshiro256** seeded by splitmix64 ------------------------- */

typedef struct nm_rng {
    uint64_t s[4];
} nm_rng;

void nm_rng_seed(nm_rng *r, uint64_t seed);
uint64_t nm_rng_next(nm_rng *r);
/* A number in lo..hi, both included (lo <= hi). */
long nm_rng_range(nm_rng *r, long lo, long hi);
/* 1 with probability pct %. */
int nm_rng_pct(nm_rng *r, int pct);

/* ---- the plan ------------------------------------------------------------ */

#define NM_NAMES_MAX 3
#define NM_PROCS_MAX 4
#define NM_FAULTS_MAX 8
#define NM_NODES_MAX 6

/* Deployments. */
#define NM_SINGLE  0   /* one redis-server */
#define NM_REDLOCK 1   /* Redlock over 5 independent masters: plain names only */
#define NM_CLUSTER 2   /* Redis Cluster, 3 masters */
#define NM_SENTINEL 3  /* a primary, 2 replicas, 3 sentinels; wait_replicas 2 */
#define NM_SINGLE_R 4  /* a primary (node 0) and its replica (node 1); wait_replicas 1 */
#define NM_CLUSTER_R 5 /* Redis Cluster, 3 masters x 1 replica (6 nodes); wait_replicas 1 */

/* Families of a name (each has its own client options in every worker). */
#define NM_PLAIN 0
#define NM_FAIR  1
#define NM_RW    2
#define NM_SEM   3   /* a semaphore of `permits` permits; a section takes k of them */

/* Sides of a hold, as written in histories. */
#define NM_SIDE_EXCL  0  /* plain or fair */
#define NM_SIDE_READ  1
#define NM_SIDE_WRITE 2

typedef struct nm_name {
    int family;       /* NM_PLAIN, NM_FAIR, NM_RW */
    int fencing;      /* rl_options.fencing (plain and semaphore: the library refuses the others) */
    long delay_ms;    /* rl_options.lock_delay_ms: 0 or 300..1500 (plain only) */
    long lease_ms;    /* the watchdog's lease, or the fixed lease of every call */
    int fixed;        /* 1: each acquisition passes lease_ms (never renewed) */
    int permits;      /* NM_SEM: N, 1..4 (each section takes 1..N) */
} nm_name;

/* Faults. Each runs alone (the schedule never overlaps two). */
enum {
    NM_F_SRV_STOP,      /* SIGSTOP the server for dur_ms, then SIGCONT */
    NM_F_SRV_KILL_KEEP, /* SHUTDOWN SAVE (a crash that keeps every write), down dur_ms */
    NM_F_SRV_KILL_EMPTY,/* SIGKILL, restart empty after dur_ms (> every lease + delay) */
    NM_F_WRK_STOP,      /* SIGSTOP worker `arg` for dur_ms (past its leases), SIGCONT */
    NM_F_WRK_KILL,      /* SIGKILL worker `arg`; a new one takes its place */
    NM_F_FLUSH,         /* SCRIPT FLUSH */
    NM_F_CKILL,         /* CLIENT KILL TYPE normal */
    NM_F_FORCE,         /* rl_lock_force_release() of name `arg` by the controller */
    NM_F_PX_STALL,      /* the proxy forwards nothing for dur_ms (delay / blackhole) */
    NM_F_PX_DROP,       /* the proxy drops the reply to the next command */
    NM_F_PX_CUT,        /* the proxy cuts every connection */
    NM_F_COUNT,         /* the kinds above are drawn; those below replace some in a mode */
    NM_F_MIGRATE = NM_F_COUNT, /* Cluster: move name `arg`'s slot to another master */
    NM_F_FAILOVER,      /* Sentinel: SENTINEL FAILOVER (a replica promoted, no data lost) */
    NM_F_CFAILOVER,     /* Cluster with replicas: CLUSTER FAILOVER asked of the replica of
                           name `arg`'s master (coordinated, no data lost) */
    NM_F_FORK,          /* worker `arg` forks; the child takes names for up to dur_ms */
    NM_F_SHUTDOWN,      /* worker `arg` shuts down name `name`'s client and opens a new one */
    NM_F_SPREAD,        /* Redlock: masters spread[0] and spread[1] SIGKILLed together,
                           restarted empty after dur_ms; settle_ms later master spread[2]
                           SIGKILLed (restarted empty after dur_ms) or, with stop_third,
                           SIGSTOPped for dur_ms (nm_plan.c draw_spread) */
    NM_F_KINDS
};

typedef struct nm_fault {
    int kind;
    long at_ms;       /* from the start of the run */
    long dur_ms;      /* 0 for instant faults */
    int arg;          /* worker index or name index, as the kind says */
    int node;         /* server faults: which node */
    int name;         /* NM_F_SHUTDOWN: the name whose client is shut down */
    int spread[3];    /* NM_F_SPREAD: the two masters killed together, then the third */
    long settle_ms;   /* NM_F_SPREAD: from the two's restart to the third's fault */
    int stop_third;   /* NM_F_SPREAD: the third SIGSTOPped rather than killed */
} nm_fault;

typedef struct nm_plan {
    uint64_t seed;
    int deploy;           /* NM_SINGLE, NM_REDLOCK, ... */
    int nnodes;           /* servers: 1, 5 for Redlock, 3 masters for Cluster, 2 for a
                             single with its replica, 6 nodes for Cluster with replicas */
    int px_node;          /* the node the proxy stands in front of */
    int nnames;
    nm_name names[NM_NAMES_MAX];
    int nprocs;           /* worker processes */
    int nthreads;         /* threads per worker */
    int depth_max;        /* reentry depth 1..3 */
    long hold_ms_max;     /* pause between writes of a section */
    long think_ms_max;    /* pause between sections */
    long run_ms;          /* workers start no section after this */
    int proxied;          /* the worker whose clients go through the proxy; -1: none */
    int nfaults;
    nm_fault faults[NM_FAULTS_MAX];
    int queue;            /* the queue profile (nm_plan.c): one fair or rw name, asked at once */
    int tls;              /* NM_TLS_*: the workers and the controller's client over TLS */
    int sets;             /* % of sections that take a set of names (rl_lockset_*); 0: none */
} nm_plan;

/* TLS (nm_plan.c draw_tls, draw_tls_cs): the servers get a tls-port beside
 * their plain one (the harness's own connections stay plain), rlock's
 * clients use rediss://, redlocks:// or sentinels:// and trust the run's CA
 * (tests/common/rt_tls.h). Cluster and Sentinel: NM_TLS_ON only. */
#define NM_TLS_OFF    0
#define NM_TLS_ON     1   /* server certificates only */
#define NM_TLS_MUTUAL 2   /* the servers also require a client certificate */

/* Redlock: a master back after a fault has the holds a majority vouches for
 * (the spread) within this plus one lease of the hold's: a client skips a
 * server it found down for 2 s, then its keeper reconnects and the next
 * renewal round places (one interval, a third of the lease); the rest is
 * margin for a loaded machine. The spread fault waits longer than this
 * before its third master's fault (draw_spread), the checker no longer. */
#define NM_SPREAD_SETTLE_MS 3000

void nm_plan_draw(nm_plan *p, uint64_t seed);
/* Whether name i can be a set's member: not a semaphore, no fencing or
 * lock-delay (the set's client has neither: nm_worker.c). */
int nm_set_member(const nm_plan *p, int i);
/* Whether the deployment is a Redis Cluster (with or without replicas). */
int nm_is_cluster(int deploy);
/* The wait_replicas every worker client of the deployment sets. */
int nm_wait_replicas(int deploy);
/* "single names=plain(f,d500,w900),rw(x1200) procs=3x2 depth=2 run=9000" */
void nm_plan_describe(const nm_plan *p, char *buf, size_t cap);
const char *nm_fault_name(int kind);
/* Longest lease + lock-delay over the plan's names, in ms. */
long nm_plan_lease_delay_max(const nm_plan *p);
/* The lock name of index i for this seed: "n<i>". */
void nm_name_of(char *buf, size_t cap, int i);
/* The key prefix of a run: "nm:<seed in hex>:". */
void nm_prefix_of(char *buf, size_t cap, uint64_t seed);

/* ---- the parts ------------------------------------------------------------ */

/* Time on CLOCK_MONOTONIC, in ns (one host: comparable across processes). */
int64_t nm_now_ns(void);

/* `rlnemesis worker <seed> <index> <generation> <dir> <url> <end_ns> <ppid>
 * [<tls_ca> <tls_cert>|- <tls_key>|-]` (the last three in TLS runs). */
int nm_worker_main(int argc, char **argv);

/* Violations by invariant, as counted by the checker. */
enum {
    NM_INV_EXCL, NM_INV_FENCE, NM_INV_DELAY, NM_INV_LIVE, NM_INV_BOOK,
    NM_INV_ISO,        /* a stopped node cost only its own holds */
    NM_INV_FORK,       /* a fork child held nothing and took nothing of its parent's */
    NM_INV_SHUT,       /* a client shut down mid-call: flags seen once, nothing RL_OK after */
    NM_INV_CAP,        /* a semaphore's valid holds never take more than its permits */
    NM_INV_SET,        /* a failed set left nothing held, a set taken holds every member */
    NM_INV_COUNT
};

typedef struct nm_verdict {
    long violations[NM_INV_COUNT];
    long ops;        /* acquire and release calls recorded */
    long holds;      /* holds begun */
    long writes;     /* writes recorded */
    long faults;     /* faults the controller logged */
    long undone;     /* ...of which found nothing to act on (status 1): left out */
} nm_verdict;

/* Check every history of DIR (the plan is drawn again from the seed written
 * in ctl.hist). Prints each violation with its two events and the replay
 * command. 0, or -1 when the histories cannot be read. */
int nm_check_dir(const char *dir, nm_verdict *v);
const char *nm_inv_name(int inv);

/* One run of a seed; prints its summary line and adds its figures to *sum
 * (may be NULL). dir_out (cap bytes) receives the run's directory when kept.
 * Returns the number of violations, or -1 when the run could not be carried
 * out (no Redis: the test FAILS). */
int nm_run(uint64_t seed, int keep, char *dir_out, size_t cap, nm_verdict *sum);

#endif /* RL_NEMESIS_H */
