/*
 * client.c: the client (struct rl_client: every module's state of one
 * client, under its mutex), the calls in flight, and the bells of its
 * threads.
 */
#ifndef RL_CLIENT_H
#define RL_CLIENT_H

#include "common.h"
#include "holds.h"
#include "scripts.h"
#include "server.h"
#include "stats.h"
#include "url.h"

struct rl_client {
    atomic_int refs;                /* 1 for the user, 1 per rl_lock */
    atomic_int closed;
    atomic_int forked;              /* set in a fork child: rebuild before use */
    rl_client *reg_next;            /* process registry, for pthread_atfork */

    rl__url url;
    char *prefix;
    size_t prefix_len;
    long lease_ms, renew_ms;
    long connect_ms, command_ms;
    int pool_size;
    int wait_replicas;              /* WAIT for this many replicas (0: off) */
    long wait_replicas_ms;
    int fencing;                    /* rl_options.fencing: tokens handed out */
    long delay_ms;                  /* rl_options.lock_delay_ms (0: off) */
    void (*on_lost)(const char *name, size_t len, void *payload);
    void (*log)(int level, const char *message, void *payload);
    void *payload;
    struct ssl_ctx_st *tls_ctx;     /* TLS (tls.c): the OpenSSL context; NULL: plain */
    char *tls_name;                 /* rl_options.tls_server_name; NULL: each host's own */
    int tls_insecure;               /* rl_options.tls_insecure_skip_verify */

    char uuid[RL__UUID_LEN + 1];
    /* Who we are, for operators (owner.c); set with the uuid, read-only
     * until a fork child makes a new identity. */
    char *name;                     /* rl_options.client_name; NULL: none */
    char host[RL__HOST_MAX];
    pid_t pid;
    int64_t started_ms;             /* CLOCK_REALTIME */
    char conn_name[192];            /* CLIENT SETNAME of every connection */
    char owner_key[320];            /* <prefix>owner:{<uuid>} */
    size_t owner_key_len;
    atomic_int warned_fence;        /* logged once: CLIENT KILL refused */
    atomic_int no_notices;          /* the user may not PUBLISH/SUBSCRIBE release channels */
    atomic_int no_subscribe;        /* Redis refused a subscription otherwise: waiters poll */
    /* Raised by whoever sees a server fail (a refused connect, a broken
     * connection, a lost subscriber link, CLUSTERDOWN): the slot map may be
     * out of date. The router refreshes it at the next routed call, or
     * the keeper when a watchdog round finds it due, and lowers the flag.
     * A flag, not a call, so that the server layer needs nothing from the
     * router above it. A count of the
     * times it was raised (rl__map_suspect()): a Sentinel ask lowers it
     * only when nobody raised it again while it asked (rl__router_refresh). */
    atomic_int map_suspect;
    atomic_int closing;             /* shutdown begun: calls fail, waits are cancelled */
    atomic_int calls;               /* API calls in flight */
    char sha[RL__S_COUNT][41];      /* filled once at creation, then read-only */
    rl__stats stats;                /* rl_client_stats(): atomics, no lock */

    pthread_mutex_t mu;             /* guards everything below */

    /* servers and routing */
    rl__server *servers[RL__SERVERS_MAX];
    int nservers;
    rl__server *home;               /* the first that answered: single mode's server */
    int mode;                       /* RL__MODE_*: learned at creation */
    int nnodes, quorum;             /* Redlock: servers[0..nnodes) are the masters */
    int sentinel_last;              /* Sentinel: the seed that answered last */
    uint16_t *slot_map;             /* Cluster: server index per slot, RL__NO_SERVER unknown */
    int64_t map_refresh_at;         /* refresh the slot map then (0: now) */
    int map_refreshing;             /* a thread is asking the cluster */
    pthread_cond_t map_cond;        /* Sentinel: an ask of the sentinels ended */
    uint64_t asks_begun, asks_done; /* Sentinel: asks begun; the last that answered */
    int pool_waiters;
    pthread_cond_t pool_cond;

    /* entries and holds */
    rl__entry **buckets;
    size_t nbuckets, nentries;
    rl__hold *holds;
    size_t nholds;
    rl__hold *spare_holds;          /* freed holds kept for reuse */
    int nspare;
    rl__leftover *leftovers;
    pthread_cond_t leftover_cond;   /* a claimed leftover was processed */
    uint64_t next_serial;

    /* watchdog */
    int wd_started;
    int64_t wd_wake_at;             /* when the watchdog will wake; -1: never; 0: awake */
    pthread_t wd_thread;
    pthread_cond_t wd_cond;
    int64_t wd_next_renew;
    pthread_cond_t round_cond;      /* a renewal round ended */
    int wd_failed;                  /* renewal rounds failed in a row */
    int64_t owner_due;              /* the owner record is to be written again then */
    int64_t wd_failed_since;

    /* keeper (keeper.c): the watchdog's upkeep that may wait on one node */
    int kp_started;
    pthread_t kp_thread;            /* starts the others, never waits on a node */
    int kp_map_started;
    pthread_t kp_map_thread;        /* the slot map's refresh */
    struct rl__keeper_worker *kp_workers[RL__SERVERS_MAX];  /* per server, by index */
    pthread_cond_t kp_cond;         /* every keeper thread waits on it */
    int kp_map;                     /* the watchdog found the slot map due */

    /* subscriber */
    redisContext *sub_ctx[RL__SERVERS_MAX]; /* per server; owned by the subscriber thread */
    redisContext *sub_switch;       /* Sentinel: its link to a sentinel (same owner) */
    int sub_started;
    pthread_t sub_thread;
    int sub_efd;                    /* eventfd: wake the subscriber */

    int stopping;                   /* the watchdog, keeper and subscriber must end */
    pthread_cond_t calls_cond;      /* the last call in flight left; a shutdown ended */
    int shut;                       /* shutdown finished */
};

int rl__client_enter(rl_client *c);       /* closed? forked? then rebuild */
int rl__call_begin(rl_client *c);         /* enter, and count the call in flight */
void rl__call_end(rl_client *c);
void rl__client_unref(rl_client *c);

/* Ring the watchdog's bell: there is work it should look at now (a hold
 * flagged and to be reported, a release that ended).
 * The bell belongs to the client, so the modules the watchdog builds on
 * (holds, outcome) ring it without calling up into watchdog.c. Mutex held. */
/* A connection to s was lost or refused: the map (Cluster) or the
 * primary's address (Sentinel) may be out of date. */
static inline void rl__map_suspect(rl_client *c)
{
    atomic_fetch_add(&c->map_suspect, 1);
}

static inline void rl__map_lost(rl_client *c, rl__server *s)
{
    atomic_fetch_add(&s->losses, 1);
    rl__map_suspect(c);
}

static inline void rl__watchdog_poke(rl_client *c)
{
    if (c->wd_started)
        pthread_cond_signal(&c->wd_cond);
}

/* The keeper's bell (keeper.c): a leftover to drop, a connection or the
 * slot map the watchdog wants. Heard by each of its threads (one per
 * server). Mutex held. */
static inline void rl__keeper_poke(rl_client *c)
{
    if (c->kp_started)
        pthread_cond_broadcast(&c->kp_cond);
}

#endif
