/*
 * One renewal round of the watchdog (rl__renew_round): every watchdog-kept
 * hold of the process renewed in one pipelined round (RL__RENEW_BATCH pairs
 * per script call). A Redis Cluster node refuses a script whose keys lie in
 * different slots (CROSSSLOT), so there each call holds the keys of one
 * slot only; a single server takes them in any mix, and 10,000 holds cost
 * 10 calls. While a slot migrates, a call whose keys lie on both nodes is
 * refused (TRYAGAIN): its holds are then asked one key per call, each
 * followed to wherever its key is. A pair reported gone flags its hold at
 * once.
 *
 * No server's renewal waits on another server: each is read by its own
 * deadline, as it answers; a server without a connection yet is left to
 * the keeper (keeper.c), which opens one. When the thread runs and sleeps
 * is watchdog.c's.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "command.h"
#include "conn.h"
#include "error.h"
#include "holds.h"
#include "keeper.h"
#include "nopipe.h"
#include "redlock.h"
#include "renew.h"
#include "renew_calls.h"
#include "reply.h"
#include "router.h"
#include "rwlock.h"
#include "scripts.h"
#include "server.h"
#include "stats.h"
#include "thread.h"
#include "topology.h"
#include "util.h"

static int flush(group *g)
{
    int done = 0;

    while (!done)
        if (rl__redis_buffer_write(g->conn->ctx, &done) != REDIS_OK)
            return rl__err(RL_ECONN, "renewal on %s: %s", g->srv->name, rl__conn_error(g->conn));
    return RL_OK;
}

/* Whether a placement's reply was read (Redlock's spread). */
static int placed_read(char flag)
{
    return flag == '0' || flag == '1' || flag == '2';
}

/* Confirm at once the holds g's server renewed: a master that answers
 * late must not leave the others' holds unconfirmed meanwhile. A hold
 * placed there ('2', Redlock's spread) is not confirmed by this round:
 * it counts from the next one on, found there as any field of ours. */
static void confirm_group(rl_client *c, const group *g, const snap *s, const char *flags)
{
    /* Every reply read: a placement answered with an error did not run. */
    int answered = !rl__conn_broken(g->conn);
    size_t i;

    pthread_mutex_lock(&c->mu);
    for (i = g->first; i < g->first + g->n; i++) {
        rl__hold *h = s[i].h;
        if (s[i].place && (answered || placed_read(flags[i])))
            rl__redlock_spread_read(h, g->srv->index, flags[i], s[i].place, g->sent);
        if (flags[i] != '1' || !h->in_table || h->releasing || atomic_load(&h->lost))
            continue;
        if (c->mode == RL__MODE_REDLOCK)
            rl__redlock_node_renewed(c, h, g->srv->index, g->sent, 1);
        else
            rl__hold_renewed(h, g->sent);
    }
    pthread_mutex_unlock(&c->mu);
}

/* Replica acknowledgement: a renewal counts as confirmed only once the
 * replicas have it. When too few do by g's deadline, g's renewed holds
 * stay unconfirmed (their last confirmed expiry stands; a round is tried
 * again soon); a field found gone is gone all the same. */
static void await_replicas(rl_client *c, group *g, const snap *s, char *flags)
{
    long left = (long)(g->deadline - rl__now_ms());
    int rc;
    size_t i;

    (void)s;
    rc = rl__conn_wait_replicas(g->conn, c->wait_replicas,
                                left < c->wait_replicas_ms ? left : c->wait_replicas_ms);
    if (rc == RL_OK)
        return;
    for (i = g->first; i < g->first + g->n; i++)
        if (flags[i] == '1')
            flags[i] = '?';
    if (g->rc == RL_OK)
        g->rc = rc;
}

/* The reply to the CLIENT KILL sent ahead of g's calls: once it is read,
 * the connection it names runs nothing more, so the placements it carried
 * unanswered have run or never will. An error (the kill refused) leaves
 * them unresolved: killed again next round. */
static void read_kill(rl_client *c, group *g)
{
    redisReply *r = NULL;

    if (rl__redis_get_reply(g->conn->ctx, (void **)&r) != REDIS_OK) {
        g->rc = rl__err(RL_ECONN, "renewal on %s: %s", g->srv->name, rl__conn_error(g->conn));
        return;
    }
    if (r->type == REDIS_REPLY_INTEGER) {
        pthread_mutex_lock(&c->mu);
        rl__redlock_spread_fenced(c, g->srv->index, &g->unfenced);
        if (g->srv->wd_unfenced.id == g->unfenced.id)
            g->srv->wd_unfenced.id = -1;
        pthread_mutex_unlock(&c->mu);
    }
    freeReplyObject(r);
}

/* Read every reply of g, by its deadline at the latest, and confirm what
 * its server renewed. */
static void read_group(rl_client *c, group *g, snap *s, char *flags, const char **argv,
                       size_t *lens)
{
    long wait = (long)(g->deadline - rl__now_ms());

    rl__conn_set_timeout(g->conn, wait < 20 ? 20 : wait);
    if (g->killed)
        read_kill(c, g);
    rl__renew_read_chunks(c, g, s, flags, '?', argv, lens);
    rl__renew_reload_and_resend(c, g, s, flags, 'N', argv, lens);
    /* Chunks whose keys straddle a migration: one call per hold now,
     * each answered here or followed after ASK, in this round. Their
     * confirmation counts from g->sent, before these calls went out,
     * so it is never later than the renewal it confirms. */
    if (g->split && !rl__conn_broken(g->conn)) {
        rl__renew_send_chunks(c, g, s, flags, 'S', argv, lens);
        rl__renew_read_chunks(c, g, s, flags, 'S', argv, lens);
        rl__renew_reload_and_resend(c, g, s, flags, 's', argv, lens);
    }
    if (c->wait_replicas && !rl__conn_broken(g->conn))
        await_replicas(c, g, s, flags);
    confirm_group(c, g, s, flags);
    g->read = 1;
}

/* When g's replies must have been read: its holds' first expiry (the
 * thread must be free to flag and report that hold when its time comes),
 * or the command timeout from now. */
static int64_t read_deadline(rl_client *c, const group *g, const snap *s)
{
    int64_t deadline = rl__now_ms() + c->command_ms;
    size_t i;

    for (i = g->first; i < g->first + g->n; i++)
        if (atomic_load(&s[i].h->expiry_ms) < deadline)
            deadline = atomic_load(&s[i].h->expiry_ms);
    return deadline;
}

/* Read the sent groups' replies in the order they come, until every one
 * is read or `stop_at` (-1: no such limit): a server that accepted the
 * calls but does not answer (stopped, overloaded) is read last, and only
 * until its deadline; every other server is read, and its holds
 * confirmed, as soon as it answers. */
static void read_ready_first(rl_client *c, group *g, size_t ng, snap *s, char *flags,
                             int64_t stop_at, const char **argv, size_t *lens)
{
    for (;;) {
        struct pollfd pfd[RL__SERVERS_MAX];
        size_t at[RL__SERVERS_MAX], np = 0, j, k;
        int64_t first = -1, now = rl__now_ms();
        int ready, failed;

        for (k = 0; k < ng; k++) {
            if (g[k].read || g[k].rc != RL_OK || !g[k].sent)
                continue;
            pfd[np].fd = g[k].conn->ctx->fd;
            pfd[np].events = POLLIN;
            pfd[np].revents = 0;
            at[np++] = k;
            if (first < 0 || g[k].deadline < first)
                first = g[k].deadline;
        }
        if (np == 0 || (stop_at >= 0 && now >= stop_at))
            return;
        if (stop_at >= 0 && stop_at < first)
            first = stop_at;
        ready = poll(pfd, (nfds_t)np, first > now ? (int)(first - now) : 0);
        failed = ready < 0 && errno != EINTR;
        now = rl__now_ms();
        for (j = 0; j < np; j++) {
            k = at[j];
            /* Answered, or out of time; or poll itself failed, and then
             * each is read in turn, still bounded by its deadline. */
            if (!pfd[j].revents && g[k].deadline > now && !failed)
                continue;
            read_group(c, &g[k], s, flags, argv, lens);
        }
    }
}

/* g's server has no connection for the watchdog: the keeper opens one.
 * One found down lately counts as failed; else g waits for it. */
static void want_conn(rl_client *c, group *g)
{
    pthread_mutex_lock(&c->mu);
    rl__keeper_want_conn(c, g->srv);
    pthread_mutex_unlock(&c->mu);
    if (atomic_load(&g->srv->down_until) > rl__now_ms())
        g->rc = rl__err(RL_ECONN, "%s was found down a moment ago", g->srv->name);
    else
        g->pending = 1;
}

/* g's connection is the watchdog's now: set it where a fork child and the
 * teardown find it. The keeper may have set one there since the round
 * began (the one asked for): that one is used, and conn goes back to the
 * pool. */
static void use_conn(rl_client *c, group *g, rl__conn *conn)
{
    rl__conn *spare = NULL;

    pthread_mutex_lock(&c->mu);
    if (g->srv->wd_conn) {
        spare = conn;
        conn = g->srv->wd_conn;
    } else {
        g->srv->wd_conn = conn;
    }
    pthread_mutex_unlock(&c->mu);
    g->conn = conn;
    if (spare)
        rl__pool_adopt(c, spare);
}

/* Record g's placements (Redlock's spread) on its connection before they
 * are written, so that a last release begun after this fences them; those
 * of a hold whose last release has begun are renewals only. A connection
 * given up on with placements unanswered is killed ahead of g's calls,
 * which then place nothing: one such connection per server at most. */
static void spread_fences(rl_client *c, group *g, snap *s)
{
    size_t i;

    pthread_mutex_lock(&c->mu);
    g->unfenced = g->srv->wd_unfenced;
    for (i = g->first; i < g->first + g->n; i++)
        if (s[i].place)
            s[i].place = g->unfenced.id > 0 ? 0
                                            : rl__redlock_spread_sent(c, s[i].h, g->srv->index,
                                                                      &g->conn->fence);
    pthread_mutex_unlock(&c->mu);
    if (g->unfenced.id > 0)
        g->killed = rl__conn_append_kill(g->conn, &g->unfenced);
}

/* Write g's calls; its holds' confirmation counts from now. */
static void send_group(rl_client *c, group *g, snap *s, const char *flags,
                       const char **argv, size_t *lens)
{
    /* Before the placements' counts are read: a change learned since is
     * one they may not carry (rl__redlock_spread_read). */
    g->sent = rl__now_ms();
    if (c->mode == RL__MODE_REDLOCK)
        spread_fences(c, g, s);
    g->deadline = read_deadline(c, g, s);
    rl__renew_send_chunks(c, g, s, flags, '?', argv, lens);
    g->rc = flush(g);
}

/* One round for every server at once: the calls on every connection are
 * written before any reply is read, and replies are read as they come,
 * so a slow, stopped or dead server delays nobody else's renewal (each
 * hold's confirmation counts from when its own server's calls went out).
 * A server without a connection is not waited for: the keeper opens one
 * (connect and handshake can take their whole timeouts), and the round
 * runs again when it is there. */
static void renew_servers(rl_client *c, group *g, size_t ng, snap *s, char *flags)
{
    /* A placing chunk (Redlock's spread) carries a value per pair too. */
    const char **argv = malloc(sizeof *argv * (4 + 3 * RL__RENEW_BATCH));
    size_t *lens = malloc(sizeof *lens * (4 + 3 * RL__RENEW_BATCH));
    size_t k;
    rl__conn *conn;

    for (k = 0; k < ng; k++) {
        g[k].rc = !argv || !lens ? rl__err(RL_ENOMEM, "out of memory") : RL_OK;
        /* The one the keeper opened for us since the round began; else
         * the application threads may have a connection there already:
         * taking it spares the keeper a connect and a handshake. */
        if (!g[k].conn) {
            pthread_mutex_lock(&c->mu);
            g[k].conn = g[k].srv->wd_conn;
            pthread_mutex_unlock(&c->mu);
        }
        if (!g[k].conn && (conn = rl__pool_detach_idle(c, g[k].srv)))
            use_conn(c, &g[k], conn);
        if (!g[k].conn && g[k].rc == RL_OK)
            want_conn(c, &g[k]);
    }
    for (k = 0; k < ng; k++)
        if (g[k].rc == RL_OK && g[k].conn)
            send_group(c, &g[k], s, flags, argv, lens);
    read_ready_first(c, g, ng, s, flags, -1, argv, lens);
    free(argv);
    free(lens);
}

/* Redlock: one snap of h per node, placing h where a majority vouches
 * for it and that node does not (the spread). Mutex held. */
static int add_node_snaps(rl_client *c, rl__hold *h, snap **s, size_t *n, size_t *cap)
{
    /* Not where a leftover of the same thread waits: that field is to be
     * dropped, and must not vouch for the hold meanwhile. */
    unsigned skip = c->leftovers ? rl__redlock_leftover_nodes(c, h->entry, h->tid) : 0;
    int64_t now = rl__now_ms();
    int i;

    if (*n + (size_t)c->nnodes > *cap) {
        size_t ncap = *cap ? *cap * 2 : 64;
        snap *ns;
        while (ncap < *n + (size_t)c->nnodes)
            ncap *= 2;
        if (!(ns = realloc(*s, sizeof **s * ncap)))
            return RL_ENOMEM;
        *s = ns;
        *cap = ncap;
    }
    for (i = 0; i < c->nnodes; i++) {
        if (skip & (1u << i))
            continue;
        (*s)[*n].h = h;
        (*s)[*n].srv = c->servers[i];
        (*s)[*n].place = rl__redlock_spread_wanted(h, i, now);
        h->refs++;
        h->entry->renewing++;
        (*n)++;
    }
    return RL_OK;
}

/* Whether the round worked: every server answered, or (Redlock) a
 * majority of the nodes: one node down must not make every round a
 * failed one, retried four times as often. */
static int round_status(rl_client *c, const group *g, size_t ng)
{
    size_t k, ok = 0;
    int rc = RL_OK;

    for (k = 0; k < ng; k++) {
        if (g[k].rc == RL_OK && !g[k].pending)
            ok++;
        else if (g[k].rc != RL_OK && rc == RL_OK)
            rc = g[k].rc;
    }
    if (c->mode == RL__MODE_REDLOCK && ok >= (size_t)c->quorum)
        return RL_OK;
    return rc;
}

/* When the next round is due after one that ended with rc. Mutex held. */
static void schedule_next(rl_client *c, const group *g, size_t ng, int rc)
{
    long retry = c->renew_ms / 4;
    int64_t sent = 0;
    size_t k;
    int pending = 0, ready = 0;

    retry = retry < 10 ? 10 : retry > 500 ? 500 : retry;
    for (k = 0; k < ng; k++) {
        pending |= g[k].pending;
        /* The keeper's connection came while this round ran. */
        ready |= g[k].pending && g[k].srv->wd_conn;
        if (g[k].sent && (!sent || g[k].sent < sent))
            sent = g[k].sent;
    }
    if (rc == RL_OK) {
        c->wd_next_renew = (sent ? sent : rl__now_ms()) + c->renew_ms;
        /* A server still waits for its connection: the keeper rings when
         * it is there; asked again soon in any case. */
        if (pending && rl__now_ms() + retry < c->wd_next_renew)
            c->wd_next_renew = rl__now_ms() + (ready ? 0 : retry);
        if (c->wd_failed)
            rl__log(c, RL_LOG_INFO, "rlock watchdog: renewals work again after %d failed "
                    "rounds (%lld ms)", c->wd_failed, (long long)(rl__now_ms() - c->wd_failed_since));
        c->wd_failed = 0;
        return;
    }
    c->wd_next_renew = rl__now_ms() + (ready ? 0 : retry);
    /* Said once per outage, not once per retry. */
    if (!c->wd_failed++) {
        c->wd_failed_since = rl__now_ms();
        rl__log(c, RL_LOG_WARN, "rlock watchdog: renewal failed, retrying every %ld ms "
                "until it works again: %s", retry, rl_last_error());
    }
}

/* The watchdog holds to renew this round, each pinned (a reference, and
 * its name's renewing count) until the round ends: *np of them in *sp
 * (fewer when out of memory). Mutex held. */
static void take_snaps(rl_client *c, snap **sp, size_t *np)
{
    snap *s = NULL;
    size_t n = 0, cap = 0;
    rl__hold *h;

    for (h = c->holds; h; h = h->c_next) {
        if (!h->watchdog || h->releasing || atomic_load(&h->lost))
            continue;
        if (n == cap) {
            snap *ns = realloc(s, sizeof *s * (cap = cap ? cap * 2 : 64));
            if (!ns)
                break;
            s = ns;
        }
        if (c->mode == RL__MODE_REDLOCK) {
            /* Redlock: renewed on every node, even one that did not grant
             * it: a field found there is ours and counts. */
            if (add_node_snaps(c, h, &s, &n, &cap) != RL_OK)
                break;
            continue;
        }
        s[n].h = h;
        s[n].srv = rl__route_server(c, h->entry->slot);
        s[n].place = 0;
        h->refs++;
        /* Until the round ends, a new hold of this name waits: a renewal
         * landing after it would stretch its lease (same owner field). */
        h->entry->renewing++;
        n++;
    }
    *sp = s;
    *np = n;
}

/* The n snaps, sorted by server, in groups of one server each (*gp, *ngp),
 * with their flags ('?': no answer yet); *flagsp or *gp NULL when out of
 * memory. Mutex held. */
static void group_snaps(rl_client *c, snap *s, size_t n, char **flagsp, group **gp,
                        size_t *ngp)
{
    char *flags = NULL;
    group *g = NULL;
    size_t ng = 0, i;

    if (n) {
        qsort(s, n, sizeof *s, rl__renew_by_server_slot);
        flags = malloc(n);
        g = calloc((size_t)c->nservers, sizeof *g);
        if (flags && g) {
            memset(flags, '?', n);
            for (i = 0; i < n; i++) {
                if (!i || s[i].srv != s[i - 1].srv) {
                    g[ng].srv = s[i].srv;
                    /* Stays set while in use (a fork child closes its
                     * socket); freed only under the mutex, after it was
                     * cleared. */
                    g[ng].conn = s[i].srv->wd_conn;
                    g[ng++].first = i;
                }
                g[ng - 1].n++;
            }
        }
    }
    *flagsp = flags;
    *gp = g;
    *ngp = ng;
}

/* g's connection is given up on: placements it carried whose replies were
 * not read may still land (a command in flight, one queued on the server)
 * until that connection is killed, ahead of the next round's calls there.
 * Their holds are not placed there again until then (rl__redlock_spread_
 * count), and a last release meanwhile fences them itself. Mutex held. */
static void unanswered_placements(rl__server *srv, const group *g, const snap *s,
                                  const char *flags)
{
    size_t i;

    /* A connection that cannot be fenced leaves its holds unplaced there. */
    if (g->conn->fence.id <= 0 || srv->wd_unfenced.id > 0)
        return;
    for (i = g->first; i < g->first + g->n; i++)
        if (s[i].place > 0 && !placed_read(flags[i])) {
            srv->wd_unfenced = g->conn->fence;
            return;
        }
}

/* The round is over (rc): close the connections that failed, set when the
 * next round is due, flag the holds whose field was found gone and unpin
 * the snaps. Mutex held. */
static void end_round(rl_client *c, group *g, size_t ng, snap *s, size_t n, const char *flags,
                      int rc)
{
    rl__conn *dead[RL__SERVERS_MAX];
    int ndead = 0;
    rl__hold *h;
    size_t i, k;

    for (k = 0; k < ng; k++) {
        if ((g[k].rc == RL_ECONN || g[k].rc == RL_EPROTO) && g[k].conn) {
            dead[ndead++] = g[k].conn;
            g[k].srv->wd_conn = NULL;
            rl__map_lost(c, g[k].srv);    /* a server went away, it seems */
            unanswered_placements(g[k].srv, &g[k], s, flags);
        }
    }
    schedule_next(c, g, ng, rc);
    for (k = 0; k < ng; k++) {
        for (i = g[k].first; i < g[k].first + g[k].n; i++) {
            h = s[i].h;
            /* Those renewed were confirmed as their server answered. */
            if (flags[i] != '0' || !h->in_table || h->releasing || atomic_load(&h->lost))
                continue;
            if (c->mode != RL__MODE_REDLOCK)
                rl__hold_mark_lost(c, h, RL__LOST_GONE, "the renewal found its field gone "
                                         "(expired, deleted or taken)");
            else if (!rl__redlock_node_renewed(c, h, g[k].srv->index, g[k].sent, 0))
                rl__hold_mark_lost(c, h, RL__LOST_GONE,
                                   "the renewal found its field gone on so many "
                                         "nodes that no majority vouches for it");
        }
    }
    for (i = 0; i < n; i++) {
        s[i].h->entry->renewing--;
        rl__hold_unref(c, s[i].h);
    }
    if (n)
        pthread_cond_broadcast(&c->round_cond);
    /* Freed under the mutex: a fork now cannot see them half gone. */
    for (k = 0; k < (size_t)ndead; k++)
        rl__conn_close(c, dead[k]);
}

void rl__renew_round(rl_client *c)
{
    snap *s = NULL;
    group *g = NULL;
    char *flags = NULL;
    size_t n = 0, ng = 0;
    int rc = RL_OK;

    /* Cluster: where the slots are now, when that is due (a node went
     * away, a MOVED), is asked by the keeper: the first node it asks may
     * be the one that stopped. This round goes by the map we have; a hold
     * whose slot moved is answered MOVED and asked again soon. */
    if (rl__router_map_due(c))
        rl__keeper_want_map(c);
    take_snaps(c, &s, &n);
    group_snaps(c, s, n, &flags, &g, &ng);
    pthread_mutex_unlock(&c->mu);
    RL__HOOK("watchdog.before_renew");

    if (n && (!flags || !g))
        rc = rl__err(RL_ENOMEM, "out of memory");
    else if (n)
        renew_servers(c, g, ng, s, flags);
    if (rc == RL_OK)
        rc = round_status(c, g, ng);
    if (rc != RL_OK)
        RL__HOOK("watchdog.renew_failed");
    if (n) {
        RL__STAT_INC(c, renewal_rounds);
        if (rc != RL_OK)
            RL__STAT_INC(c, renewal_failures);
    }

    pthread_mutex_lock(&c->mu);
    end_round(c, g, ng, s, n, flags, rc);
    free(s);
    free(g);
    free(flags);
}
