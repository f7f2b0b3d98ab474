/*
 * The watchdog: one thread per client that keeps watchdog leases alive and
 * raises the flag of every hold it can no longer vouch for.
 *
 * Each tick renews every watchdog-kept hold of the process in one pipelined
 * round (RL__RENEW_BATCH pairs per script call). A Redis Cluster node
 * refuses a script whose keys lie in different slots (CROSSSLOT), so there
 * each call holds the keys of one slot only; a single server takes them in
 * any mix, and 10,000 holds cost 10 calls. A pair reported gone flags
 * its hold at once. A round that fails is retried soon; meanwhile each
 * hold's last confirmed expiry (local monotonic clock, less a drift margin)
 * decides when its flag rises. Fixed leases are never renewed: their flag
 * rises when the lease runs out. With nothing held the thread sleeps
 * without a timeout.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rlock_int.h"

typedef struct snap {
    rl__hold *h;
} snap;

/* c->wd_mode: learned from INFO each time the watchdog connects. */
enum { RL__WD_UNKNOWN, RL__WD_SINGLE, RL__WD_CLUSTER };

static void *watchdog_main(void *arg);

int rl__watchdog_ensure(rl_client *c)
{
    int rc;

    if (c->wd_started)
        return RL_OK;
    c->wd_next_renew = 0;
    rc = pthread_create(&c->wd_thread, NULL, watchdog_main, c);
    if (rc != 0)
        return rl__err(RL_ENOMEM, "cannot start the watchdog thread");
    c->wd_started = 1;
    return RL_OK;
}

void rl__watchdog_poke(rl_client *c)
{
    if (c->wd_started)
        pthread_cond_signal(&c->wd_cond);
}

void rl__watchdog_schedule(rl_client *c, const rl__hold *h)
{
    int64_t due = atomic_load(&h->expiry_ms);

    if (h->watchdog && rl__now_ms() + c->renew_ms < due)
        due = rl__now_ms() + c->renew_ms;
    /* Wake the thread only when it would otherwise sleep past what this
     * hold needs: a loop of acquire/release then costs no context switch. */
    if (c->wd_started && (c->wd_wake_at < 0 || due < c->wd_wake_at))
        pthread_cond_signal(&c->wd_cond);
}

void rl__watchdog_after_fork(rl_client *c)
{
    /* The thread does not exist here; its connection may be mid-use. */
    c->wd_started = 0;
    c->wd_wake_at = 0;
    if (c->wd_conn && c->wd_conn->ctx && c->wd_conn->ctx->fd >= 0)
        close(c->wd_conn->ctx->fd);
    c->wd_conn = NULL;
    c->wd_failed = 0;
    c->wd_mode = RL__WD_UNKNOWN;
}

void rl__watchdog_stop(rl_client *c)
{
    int started;

    pthread_mutex_lock(&c->mu);
    c->stopping = 1;
    started = c->wd_started;
    pthread_cond_signal(&c->wd_cond);
    pthread_mutex_unlock(&c->mu);
    if (started)
        pthread_join(c->wd_thread, NULL);
    pthread_mutex_lock(&c->mu);
    c->wd_started = 0;
    pthread_mutex_unlock(&c->mu);
}

/* The length of the chunk that starts at s[first]: up to RL__RENEW_BATCH
 * pairs and, on a cluster node, of one slot (s is then sorted by slot). */
static size_t chunk_len(const snap *s, size_t n, size_t first, int cluster)
{
    size_t m = n - first < RL__RENEW_BATCH ? n - first : RL__RENEW_BATCH, j;

    if (cluster)
        for (j = 1; j < m; j++)
            if (s[first + j].h->entry->slot != s[first].h->entry->slot)
                return j;
    return m;
}

static int by_slot(const void *a, const void *b)
{
    unsigned sa = ((const snap *)a)->h->entry->slot, sb = ((const snap *)b)->h->entry->slot;

    return sa < sb ? -1 : sa > sb;
}

/* Ask the server, once per watchdog connection, whether it runs in cluster mode.
 * Only a broken connection fails; a server that refuses INFO (an ACL user
 * without it) gets one-slot calls, which every mode accepts. */
static int learn_mode(rl_client *c, rl__conn *conn)
{
    const char *argv[2] = { "INFO", "cluster" };
    size_t lens[2] = { 4, 7 };
    redisReply *r = NULL;
    int rc = rl__conn_call(conn, &r, 2, argv, lens);

    if (rc != RL_OK)
        return rc;
    if (r->type == REDIS_REPLY_STRING)
        c->wd_mode = strstr(r->str, "cluster_enabled:1") ? RL__WD_CLUSTER : RL__WD_SINGLE;
    else
        c->wd_mode = RL__WD_CLUSTER;
    freeReplyObject(r);
    rl__log(c, RL_LOG_DEBUG, "rlock watchdog: %s",
            c->wd_mode == RL__WD_CLUSTER ? "one slot per renewal call" : "server not in cluster mode");
    return RL_OK;
}

/* Send every chunk, then read every reply: one round trip per tick. */
static int renew_round(rl_client *c, rl__conn *conn, snap *s, size_t n, char *flags)
{
    int cluster = c->wd_mode == RL__WD_CLUSTER;
    size_t i, j, m;
    const char **argv = malloc(sizeof *argv * (4 + 2 * RL__RENEW_BATCH));
    size_t *lens = malloc(sizeof *lens * (4 + 2 * RL__RENEW_BATCH));
    char nk[16], lease[24];
    int rc = RL_OK, noscript = 0, pass;

    if (!argv || !lens) {
        free(argv);
        free(lens);
        return rl__err(RL_ENOMEM, "out of memory");
    }
    snprintf(lease, sizeof lease, "%ld", c->lease_ms);
    for (pass = 0; pass < 2 && rc == RL_OK; pass++) {
        for (i = 0; i < n; i += m) {
            m = chunk_len(s, n, i, cluster);
            argv[0] = "EVALSHA"; lens[0] = 7;
            argv[1] = c->sha[RL__S_RENEW]; lens[1] = 40;
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
            redisAppendCommandArgv(conn->ctx, (int)(4 + 2 * m), argv, lens);
        }
        noscript = 0;
        for (i = 0; i < n; i += m) {
            const char *f;
            redisReply *r = NULL;
            m = chunk_len(s, n, i, cluster);
            if (redisGetReply(conn->ctx, (void **)&r) != REDIS_OK) {
                rc = rl__err(RL_ECONN, "renewal: %s", rl__conn_error(conn));
                break;
            }
            if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0) {
                noscript = 1;
            } else if (rc == RL_OK) {
                int st = rl__reply_flags(r, m, &f);
                if (st == RL_OK)
                    memcpy(flags + i, f, m);
                else
                    rc = st;
            }
            freeReplyObject(r);
        }
        if (rc != RL_OK || !noscript)
            break;
        rc = rl__conn_load_scripts(c, conn);
    }
    /* NOSCRIPT on the second pass too: those chunks renewed nothing. */
    if (rc == RL_OK && noscript)
        rc = rl__err(RL_EREDIS, "renewal: NOSCRIPT twice in a row");
    free(argv);
    free(lens);
    return rc;
}

/* The round that renews every watchdog hold. Mutex held on entry and exit;
 * dropped while Redis is asked. */
static void renew(rl_client *c)
{
    snap *s = NULL;
    char *flags = NULL;
    size_t n = 0, cap = 0, i;
    rl__hold *h;
    rl__conn *conn, *dead = NULL;
    int64_t sent, earliest = 0;
    int rc;

    for (h = c->holds; h; h = h->c_next) {
        if (!h->watchdog || h->releasing || atomic_load(&h->lost))
            continue;
        if (n == cap) {
            snap *ns = realloc(s, sizeof *s * (cap = cap ? cap * 2 : 64));
            if (!ns)
                break;
            s = ns;
        }
        s[n].h = h;
        h->refs++;
        /* Until the round ends, a new hold of this name waits: a renewal
         * landing after it would stretch its lease (same owner field). */
        h->entry->renewing++;
        if (!n || atomic_load(&h->expiry_ms) < earliest)
            earliest = atomic_load(&h->expiry_ms);
        n++;
    }
    flags = n ? malloc(n) : NULL;
    /* c->wd_conn stays set while in use (a fork child closes its socket),
     * and is freed only under the mutex, after it was cleared. */
    conn = c->wd_conn;
    pthread_mutex_unlock(&c->mu);
    RL__HOOK("watchdog.before_renew");

    rc = n && !flags ? rl__err(RL_ENOMEM, "out of memory") : RL_OK;
    if (rc == RL_OK && n && !conn) {
        rc = rl__conn_open(c, &conn);
        if (rc != RL_OK) {
            conn = NULL;
        } else {
            pthread_mutex_lock(&c->mu);
            c->wd_conn = conn;
            pthread_mutex_unlock(&c->mu);
        }
    }
    sent = rl__now_ms();
    if (rc == RL_OK && n) {
        /* Do not stay blocked past the first expiry: the thread must be
         * free to flag and report that hold when its time comes. */
        long wait = (long)(earliest - sent);
        if (wait > c->command_ms)
            wait = c->command_ms;
        rl__conn_set_timeout(conn, wait < 20 ? 20 : wait);
    }
    if (rc == RL_OK && n && c->wd_mode == RL__WD_UNKNOWN)
        rc = learn_mode(c, conn);
    if (rc == RL_OK && n && c->wd_mode == RL__WD_CLUSTER)
        qsort(s, n, sizeof *s, by_slot);
    if (rc == RL_OK && n)
        rc = renew_round(c, conn, s, n, flags);
    if (rc != RL_OK)
        RL__HOOK("watchdog.renew_failed");

    pthread_mutex_lock(&c->mu);
    if ((rc == RL_ECONN || rc == RL_EPROTO) && conn) {
        dead = conn;
        c->wd_conn = NULL;
        c->wd_mode = RL__WD_UNKNOWN;    /* the next server may run another mode */
    }
    if (rc == RL_OK) {
        c->wd_next_renew = sent + c->renew_ms;
        if (c->wd_failed)
            rl__log(c, RL_LOG_INFO, "rlock watchdog: renewals work again after %d failed "
                    "rounds (%lld ms)", c->wd_failed, (long long)(rl__now_ms() - c->wd_failed_since));
        c->wd_failed = 0;
    } else {
        long retry = c->renew_ms / 4;
        retry = retry < 10 ? 10 : retry > 500 ? 500 : retry;
        c->wd_next_renew = rl__now_ms() + retry;
        /* Said once per outage, not once per retry. */
        if (!c->wd_failed++) {
            c->wd_failed_since = rl__now_ms();
            rl__log(c, RL_LOG_WARN, "rlock watchdog: renewal failed, retrying every %ld ms "
                    "until it works again: %s", retry, rl_last_error());
        }
    }
    for (i = 0; i < n; i++) {
        h = s[i].h;
        if (rc == RL_OK && h->in_table && !h->releasing && !atomic_load(&h->lost)) {
            if (flags[i] == '1')
                rl__hold_confirm(h, sent);
            else
                rl__hold_mark_lost(c, h, "the renewal found its field gone "
                                         "(expired, deleted or taken)");
        }
        h->entry->renewing--;
        rl__hold_unref(c, h);
    }
    if (n)
        pthread_cond_broadcast(&c->round_cond);
    /* Freed under the mutex: a fork now cannot see it half gone. */
    rl__conn_close(c, dead);
    free(s);
    free(flags);
}

/* Call on_lost for every newly lost hold, one at a time without the mutex
 * held, and log why. Nothing to allocate, so nothing that can fail. */
static void report(rl_client *c, int64_t now)
{
    rl__hold *h;

    for (;;) {
        for (h = c->holds; h; h = h->c_next) {
            if (!atomic_load(&h->lost) && !h->releasing && now >= atomic_load(&h->expiry_ms))
                rl__hold_mark_lost(c, h, "its lease was not confirmed before it ran out");
            if (atomic_load(&h->lost) && !h->reported && !h->releasing)
                break;
        }
        if (!h)
            return;
        rl__log(c, RL_LOG_WARN, "rlock: lock '%.*s' lost: %s",
                (int)(h->entry->name_len > 200 ? 200 : h->entry->name_len), h->entry->name,
                h->lost_why ? h->lost_why : "flagged");
        rl__hold_report(c, h);
    }
}

/* Drop the fields that unresolved changes may have left. Mutex held. */
static void drop_leftovers(rl_client *c)
{
    rl__leftover *lo, *tried = NULL;
    rl__fence late;
    int failed = 0, rc;

    /* Oldest first (new ones are pushed in front); stop at an unreachable
     * Redis, but let no single refusal starve the others. */
    for (;;) {
        rl__leftover *pick = NULL;
        for (lo = c->leftovers; lo && lo != tried; lo = lo->next)
            if (!lo->claimed)
                pick = lo;
        if (!pick || c->stopping)
            break;
        pick->claimed = 1;
        pthread_mutex_unlock(&c->mu);
        RL__HOOK("watchdog.before_drop");
        rc = rl__leftover_drop(c, pick, &late);
        pthread_mutex_lock(&c->mu);
        rl__leftover_done(c, pick, rc, &late);
        if (rc != RL_OK) {
            failed = 1;
            if (rc == RL_ECONN)
                break;
            tried = pick;     /* still listed: only look at newer ones now */
        }
    }
    /* Retry after a failure; look again soon at what an application thread
     * is dropping itself right now. */
    c->leftover_retry_at = rl__now_ms() + (failed ? (c->renew_ms < 500 ? c->renew_ms : 500) : 50);
}

static void *watchdog_main(void *arg)
{
    rl_client *c = arg;
    rl__conn *conn;

    pthread_mutex_lock(&c->mu);
    while (!c->stopping) {
        int64_t now = rl__now_ms(), next = -1;
        int renewable = 0;
        rl__hold *h;

        report(c, now);
        if (c->leftovers) {
            if (now >= c->leftover_retry_at) {
                drop_leftovers(c);
                continue;
            }
            next = c->leftover_retry_at;
        }
        for (h = c->holds; h; h = h->c_next) {
            int64_t exp;
            if (atomic_load(&h->lost) || h->releasing)
                continue;
            if (h->watchdog)
                renewable = 1;
            exp = atomic_load(&h->expiry_ms);
            if (next < 0 || exp < next)
                next = exp;
        }
        if (renewable) {
            if (c->wd_next_renew == 0)
                c->wd_next_renew = now + c->renew_ms;
            if (now >= c->wd_next_renew) {
                renew(c);
                continue;
            }
            if (next < 0 || c->wd_next_renew < next)
                next = c->wd_next_renew;
        } else if (c->wd_next_renew && now >= c->wd_next_renew) {
            /* Nothing to renew for a whole period: go idle. Until then the
             * tick keeps running, so short holds do not wake the thread. */
            c->wd_next_renew = 0;
        } else if (c->wd_next_renew && (next < 0 || c->wd_next_renew < next)) {
            next = c->wd_next_renew;
        }
        c->wd_wake_at = next;
        rl__cond_wait_until(&c->wd_cond, &c->mu, next);
        c->wd_wake_at = 0;
    }
    conn = c->wd_conn;
    c->wd_conn = NULL;
    pthread_mutex_unlock(&c->mu);
    rl__conn_close(c, conn);
    return NULL;
}
