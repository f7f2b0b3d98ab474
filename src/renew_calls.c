/*
 * The calls of a renewal round on one server's connection (renew_calls.h).
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "command.h"
#include "conn.h"
#include "error.h"
#include "keeper.h"
#include "nopipe.h"
#include "renew_calls.h"
#include "reply.h"
#include "router.h"
#include "rwlock.h"
#include "scripts.h"
#include "server.h"
#include "topology.h"
#include "util.h"

/* How a call sent on after ASK fared (renew_asked). */
enum { ASKED_OK, ASKED_SPLIT, ASKED_DOWN, ASKED_REFUSED };

/* The length of the chunk that starts at s[first], within s[..end): up to
 * RL__RENEW_BATCH pairs of one family (one renewal script: plain or
 * read-write), all placing or none (Redlock's spread) and, unless the
 * server takes any mix, of one slot (s is sorted by server, then family,
 * then placing or not, then slot). */
static size_t chunk_len(const snap *s, size_t end, size_t first, int mixed)
{
    size_t m = end - first < RL__RENEW_BATCH ? end - first : RL__RENEW_BATCH, j;
    const rl__entry *e = s[first].h->entry;

    for (j = 1; j < m; j++)
        if ((!mixed && s[first + j].h->entry->slot != e->slot) ||
            s[first + j].h->entry->family != e->family ||
            !s[first + j].place != !s[first].place)
            return j;
    return m;
}

int rl__renew_by_server_slot(const void *a, const void *b)
{
    const snap *x = a, *y = b;
    unsigned sa = x->h->entry->slot, sb = y->h->entry->slot;

    if (x->srv != y->srv)
        return x->srv->index < y->srv->index ? -1 : 1;
    if (x->h->entry->family != y->h->entry->family)
        return x->h->entry->family < y->h->entry->family ? -1 : 1;
    if (!x->place != !y->place)
        return !x->place ? -1 : 1;
    return sa < sb ? -1 : sa > sb;
}

/* Queue the renewal call of the chunk s[i, i + m) on ctx; a placing
 * chunk (Redlock's spread) carries each hold's value, "<count> <since>",
 * to place where the name is free (lua/renew.lua). */
static void append_chunk(rl_client *c, redisContext *ctx, const snap *s, size_t i, size_t m,
                         const char **argv, size_t *lens)
{
    char nk[16], lease[24];
    char (*val)[48] = NULL;
    long long since;
    size_t j, n;

    /* With a lock-delay, Redis keeps the lease plus the delay (scripts.c). */
    snprintf(lease, sizeof lease, "%ld", rl__redis_lease(c, c->lease_ms));
    argv[0] = "EVALSHA"; lens[0] = 7;
    argv[1] = c->sha[rl__rw_script(s[i].h->entry, RL__S_RENEW)]; lens[1] = 40;
    snprintf(nk, sizeof nk, "%zu", m);
    argv[2] = nk; lens[2] = strlen(nk);
    for (j = 0; j < m; j++) {
        argv[3 + j] = s[i + j].h->entry->key;
        lens[3 + j] = s[i + j].h->entry->key_len;
        argv[4 + m + j] = s[i + j].h->owner;
        lens[4 + m + j] = s[i + j].h->owner_len;
    }
    argv[3 + m] = lease;
    lens[3 + m] = strlen(lease);
    n = 4 + 2 * m;
    /* A chunk places all its pairs or none (chunk_len), cut after the
     * placements were recorded: one called off then (its hold being
     * released or lost: rl__redlock_spread_sent) is in a renew-only chunk. */
    if (s[i].place && (val = malloc(sizeof *val * m))) {
        since = rl__wall_ms();
        for (j = 0; j < m; j++) {
            argv[n + j] = val[j];
            lens[n + j] = (size_t)snprintf(val[j], sizeof val[j], "%d %lld", s[i + j].place,
                                           since);
        }
        n += m;
    }
    /* Out of memory: a renewal only (its reply is read the same way). */
    redisAppendCommandArgv(ctx, (int)n, argv, lens);
    free(val);
}

/* Whether the pass that asks the holds flagged `which` asks one key per
 * call: a chunk being split ('S'), and those of its calls answered
 * NOSCRIPT ('s'). */
static int one_key(char which)
{
    return which == 'S' || which == 's';
}

/* The length of the call for s[first] in the pass for `which`. */
static size_t call_len(const snap *s, size_t end, size_t first, int mixed, char which)
{
    return one_key(which) ? 1 : chunk_len(s, end, first, mixed);
}

/* Queue the renewal calls of g's chunks whose flags read `which` ('?': not
 * asked yet; 'N': answered NOSCRIPT; 'S', 's': the same, one call per
 * hold). Returns the number of calls. */
size_t rl__renew_send_chunks(rl_client *c, group *g, const snap *s, const char *flags,
                             char which, const char **argv, size_t *lens)
{
    size_t i, m, end = g->first + g->n, calls = 0;
    int mixed = rl__router_mixed_ok(c);

    for (i = g->first; i < end; i += m) {
        m = call_len(s, end, i, mixed, which);
        if (flags[i] != which)
            continue;
        append_chunk(c, g->conn->ctx, s, i, m, argv, lens);
        calls++;
    }
    return calls;
}

/* A chunk answered ASK (its slot is being migrated and its keys may have
 * moved): send it to the importing node, after ASKING, on an idle
 * connection of that node's pool. Flags set on success (ASKED_OK); left as they were
 * otherwise: ASKED_SPLIT when the node has some of the keys but not all,
 * ASKED_DOWN when it could not be reached, ASKED_REFUSED for the rest. */
static int renew_asked(rl_client *c, rl__server *to, const snap *s, size_t i, size_t m,
                       char *flags, const char **argv, size_t *lens)
{
    const char *asking = "ASKING";
    size_t asking_len = 6;
    rl__conn *conn;
    redisReply *r = NULL;
    const char *f;
    int k, tries, how = ASKED_DOWN;

    if (!to)
        return ASKED_REFUSED;
    /* An idle connection only: a new one is the keeper's to open (the
     * importing node may be the one that stopped); asked again soon. */
    if (!(conn = rl__pool_get_idle(c, to))) {
        pthread_mutex_lock(&c->mu);
        rl__keeper_want_conn(c, to);
        pthread_mutex_unlock(&c->mu);
        return ASKED_DOWN;
    }
    for (tries = 0; tries < 2; tries++) {
        int noscript = 0;
        redisAppendCommandArgv(conn->ctx, 1, &asking, &asking_len);
        append_chunk(c, conn->ctx, s, i, m, argv, lens);
        how = ASKED_DOWN;
        for (k = 0; k < 2; k++) {
            if (rl__redis_get_reply(conn->ctx, (void **)&r) != REDIS_OK)
                break;
            if (k == 1) {
                how = ASKED_REFUSED;
                if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0)
                    noscript = 1;
                else if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "TRYAGAIN", 8) == 0)
                    how = ASKED_SPLIT;
                else if (rl__reply_flags(r, m, &f) == RL_OK) {
                    memcpy(flags + i, f, m);
                    how = ASKED_OK;
                }
            }
            freeReplyObject(r);
        }
        /* Scripts are loaded on a connection's first use and after NOSCRIPT
         * on the paths that go to a slot's master; the importing node may
         * never have had them (added for this move, restarted, flushed). */
        if (!noscript || rl__conn_load_scripts(c, conn) != RL_OK)
            break;
    }
    rl__pool_put(c, conn);
    return how;
}

/* Read the replies to what send_chunks(.., which) queued, into flags: one
 * '1' or '0' per hold; chunks refused stay `which`, or 'N' ('s' for one
 * key) for NOSCRIPT, or 'S' when their keys straddle a slot migration. */
void rl__renew_read_chunks(rl_client *c, group *g, const snap *s, char *flags, char which,
                           const char **argv, size_t *lens)
{
    size_t i, m, end = g->first + g->n;
    int mixed = rl__router_mixed_ok(c);
    rl__server *down = NULL;    /* an importing node that could not be reached */
    rl__redirect red;

    g->noscript = 0;
    for (i = g->first; i < end; i += m) {
        const char *f;
        redisReply *r = NULL;
        m = call_len(s, end, i, mixed, which);
        if (flags[i] != which)
            continue;
        if (rl__redis_get_reply(g->conn->ctx, (void **)&r) != REDIS_OK) {
            g->rc = rl__err(RL_ECONN, "renewal on %s: %s", g->srv->name,
                            rl__conn_error(g->conn));
            return;
        }
        if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0) {
            memset(flags + i, one_key(which) ? 's' : 'N', m);
            g->noscript = 1;
        } else if (r->type == REDIS_REPLY_ERROR &&
                   rl__redirect_parse(r->str, r->len, &red) == 1 &&
                   red.kind == RL__REDIR_ASK) {
            rl__server *to;
            int how = ASKED_DOWN;
            pthread_mutex_lock(&c->mu);
            to = rl__router_redirect(c, &red, g->srv);
            pthread_mutex_unlock(&c->mu);
            /* One connect timeout per round for a dead node, not one per
             * key of a split chunk. */
            if (!to || to != down)
                how = renew_asked(c, to, s, i, m, flags, argv, lens);
            if (how == ASKED_DOWN)
                down = to;
            if (how == ASKED_SPLIT && m > 1) {
                memset(flags + i, 'S', m);
                g->split = 1;
            } else if (how != ASKED_OK && g->rc == RL_OK) {
                g->rc = rl__err(RL_ECONN, "renewal on %s: %.200s (not followed)",
                                g->srv->name, r->str);
            }
        } else if (r->type == REDIS_REPLY_ERROR && m > 1 &&
                   strncmp(r->str, "TRYAGAIN", 8) == 0) {
            /* A multi-key call while its slot migrates, with some of its
             * keys here and some not: no single node serves it whole
             * until the migration ends. Ask again one key per call. */
            memset(flags + i, 'S', m);
            g->split = 1;
        } else if (r->type == REDIS_REPLY_ERROR) {
            /* MOVED, TRYAGAIN, CLUSTERDOWN: the slot is on the move.
             * Learn what the reply says (no waiting: deadline now); those
             * holds are asked again soon, their expiry still counts. */
            rl__route rt;
            int rc;
            rl__route_init(&rt, c, s[i].h->entry->slot);
            rt.deadline = 0;
            rt.last = g->srv;
            rc = rl__route_error(c, &rt, r->str, r->len);
            if (g->rc == RL_OK)
                g->rc = rc == RL_OK ? rl__reply_error_status(r)
                                    : rl__err(RL_ECONN, "renewal on %s: %.200s", g->srv->name,
                                              r->str);
        } else {
            int st = rl__reply_flags(r, m, &f);
            if (st == RL_OK)
                memcpy(flags + i, f, m);
            else if (g->rc == RL_OK)
                g->rc = st;
        }
        freeReplyObject(r);
    }
}

/* After a pass of g's calls: if some were answered NOSCRIPT (a restart,
 * SCRIPT FLUSH; a split chunk meets it only now, as TRYAGAIN is answered
 * before a script is looked up), load the scripts and ask those once more,
 * flagged `again` ('N' or 's'). */
void rl__renew_reload_and_resend(rl_client *c, group *g, const snap *s, char *flags,
                                 char again, const char **argv, size_t *lens)
{
    int rc;

    if (!g->noscript || rl__conn_broken(g->conn))
        return;
    if ((rc = rl__conn_load_scripts(c, g->conn)) != RL_OK) {
        /* A connection that broke must be known as such: it is closed
         * after the round. */
        if (g->rc == RL_OK || rl__conn_broken(g->conn))
            g->rc = rc;
        return;
    }
    rl__renew_send_chunks(c, g, s, flags, again, argv, lens);
    rl__renew_read_chunks(c, g, s, flags, again, argv, lens);
    if (g->rc == RL_OK && g->noscript)
        g->rc = rl__err(RL_EREDIS, "renewal on %s: NOSCRIPT twice in a row", g->srv->name);
}
