/*
 * The local bookkeeping of one client: a table of lock names (entries), the
 * FIFO of this process's threads waiting on each name, and the holds that
 * the watchdog renews. Everything here runs with the client mutex held,
 * except what a hold's owner thread reads through atomics.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "holds.h"
#include "rwlock.h"
#include "slot.h"
#include "stats.h"
#include "thread.h"
#include "util.h"

static int grow(rl_client *c)
{
    size_t n = c->nbuckets ? c->nbuckets * 2 : 64, i;
    rl__entry **b = calloc(n, sizeof *b);

    if (!b)
        return -1;
    for (i = 0; i < c->nbuckets; i++) {
        rl__entry *e = c->buckets[i], *next;
        for (; e; e = next) {
            next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    }
    free(c->buckets);
    c->buckets = b;
    c->nbuckets = n;
    return 0;
}

static rl__entry *lookup(rl_client *c, const void *name, size_t len, uint64_t hash)
{
    rl__entry *e;

    if (!c->nbuckets)
        return NULL;
    for (e = c->buckets[hash & (c->nbuckets - 1)]; e; e = e->next)
        if (e->hash == hash && e->name_len == len && memcmp(e->name, name, len) == 0)
            return e;
    return NULL;
}

/*
 * The hash tag of a name: the name itself, or the escape byte and the name
 * when it starts with '}' or with the escape byte. A tag that starts with
 * '}' would end at once: Redis Cluster would then hash the whole key, and
 * the key and its channel would land in different slots. Escaping the
 * escape byte too keeps distinct names on distinct keys ("}x" and "\}x"
 * become "\}x" and "\\}x"). A '}' later in a name cuts the tag short,
 * but at the same byte in every key of that name, which is all it takes.
 */
#define RL__TAG_ESC '\\'

static size_t tag_escaped(const unsigned char *name, size_t len)
{
    return len && (name[0] == '}' || name[0] == RL__TAG_ESC);
}

static void entry_free(rl__entry *e)
{
    free(e->queue_key);         /* a fair name's (fair.c) */
    free(e->places_key);
    free(e->wake_channel);
    free(e->name);
    free(e->key);
    free(e->channel);
    free(e->fence_key);
    free(e);
}

/* A key beside the lock's, of the same hash tag: "<key><suffix>". */
static size_t companion(char *out, const char *key, size_t klen, const char *suffix)
{
    size_t n = strlen(suffix);

    memcpy(out, key, klen);
    memcpy(out + klen, suffix, n + 1);
    return klen + n;
}

rl__entry *rl__entry_get(rl_client *c, const void *name, size_t len)
{
    uint64_t hash = rl__hash(name, len);
    rl__entry *e = lookup(c, name, len, hash);
    size_t esc = tag_escaped(name, len), klen;

    if (e)
        return e;
    if (c->nentries >= c->nbuckets && grow(c) != 0)
        return NULL;
    e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    klen = c->prefix_len + 1 + esc + len + 1;
    e->name = rl__memdup(name, len);
    e->key = malloc(klen + 1);
    e->channel = malloc(klen + sizeof ":release");
    e->fence_key = malloc(klen + sizeof ":fence");
    if (!e->name || !e->key || !e->channel || !e->fence_key) {
        entry_free(e);
        return NULL;
    }
    e->name_len = len;
    e->hash = hash;
    memcpy(e->key, c->prefix, c->prefix_len);
    e->key[c->prefix_len] = '{';
    if (esc)
        e->key[c->prefix_len + 1] = RL__TAG_ESC;
    memcpy(e->key + c->prefix_len + 1 + esc, name, len);
    e->key[klen - 1] = '}';
    e->key[klen] = '\0';
    e->key_len = klen;
    e->channel_len = companion(e->channel, e->key, klen, ":release");
    e->fence_key_len = companion(e->fence_key, e->key, klen, ":fence");
    e->slot = rl__slot(e->key, e->key_len);
    e->next = c->buckets[hash & (c->nbuckets - 1)];
    c->buckets[hash & (c->nbuckets - 1)] = e;
    c->nentries++;
    return e;
}

void rl__entry_maybe_free(rl_client *c, rl__entry *e)
{
    rl__entry **pp;

    if (e->handles || e->holds || e->waiters || e->leftovers || e->sub_state != RL__SUB_NONE)
        return;
    for (pp = &c->buckets[e->hash & (c->nbuckets - 1)]; *pp; pp = &(*pp)->next) {
        if (*pp == e) {
            *pp = e->next;
            c->nentries--;
            entry_free(e);
            return;
        }
    }
}

rl__entry *rl__entry_by_channel(rl_client *c, const char *ch, size_t len)
{
    size_t tail = sizeof "}:release" - 1;

    /* A fair name's channel of this process: "...}:release:<our uuid>". */
    if (len > RL__UUID_LEN + 1 && ch[len - RL__UUID_LEN - 1] == ':' &&
        memcmp(ch + len - RL__UUID_LEN, c->uuid, RL__UUID_LEN) == 0)
        len -= RL__UUID_LEN + 1;
    if (len < c->prefix_len + 1 + tail + 1 || memcmp(ch, c->prefix, c->prefix_len) != 0 ||
        ch[c->prefix_len] != '{' || memcmp(ch + len - tail, "}:release", tail) != 0)
        return NULL;
    ch += c->prefix_len + 1;
    len -= c->prefix_len + 1 + tail;
    /* Undo the escape; a tag that rl__entry_get() never makes names nothing. */
    if (ch[0] == RL__TAG_ESC) {
        if (len < 2 || !tag_escaped((const unsigned char *)ch + 1, len - 1))
            return NULL;
        ch++;
        len--;
    } else if (ch[0] == '}') {
        return NULL;
    }
    return lookup(c, ch, len, rl__hash(ch, len));
}

void rl__holds_after_fork(rl_client *c)
{
    rl__hold *h, *next;
    size_t i;

    for (h = c->holds; h; h = next) {
        next = h->c_next;
        free(h);
    }
    c->holds = NULL;
    c->nholds = 0;
    rl__hold_free_spares(c);
    for (i = 0; i < c->nbuckets; i++) {
        rl__entry *e, *enext;
        for (e = c->buckets[i]; e; e = enext) {
            enext = e->next;
            e->holds = e->waiters = e->local_live = e->leftovers = e->renewing = 0;
            e->local_reads = 0;
            e->q_head = e->q_tail = NULL;
            rl__entry_maybe_free(c, e);
        }
    }
}

void rl__entry_free_all(rl_client *c)
{
    size_t i;

    for (i = 0; i < c->nbuckets; i++) {
        rl__entry *e = c->buckets[i], *next;
        for (; e; e = next) {
            next = e->next;
            entry_free(e);
        }
    }
    free(c->buckets);
    c->buckets = NULL;
    c->nbuckets = c->nentries = 0;
}

/* ---- local waiters ---------------------------------------------------- */

void rl__queue_push(rl__entry *e, rl__waiter *w)
{
    w->next = NULL;
    w->kicked = 0;
    w->short_of = 0;
    w->serial = ++e->q_serial;
    if (e->q_tail)
        e->q_tail->next = w;
    else
        e->q_head = w;
    e->q_tail = w;
    e->waiters++;
}

void rl__queue_remove(rl_client *c, rl__entry *e, rl__waiter *w)
{
    rl__waiter **pp, *prev = NULL;
    int was_head = e->q_head == w;

    for (pp = &e->q_head; *pp; prev = *pp, pp = &(*pp)->next) {
        if (*pp == w) {
            *pp = w->next;
            if (e->q_tail == w)
                e->q_tail = prev;
            e->waiters--;
            break;
        }
    }
    if (was_head)
        rl__queue_kick_head(e);
    /* Keep the subscription a little while: under contention the next
     * wait comes soon, and re-subscribing each time costs two commands.
     * The subscriber drops it once the linger has passed. */
    if (!e->q_head && e->sub_want)
        e->linger_until = rl__now_ms() + (c->renew_ms < 1000 ? c->renew_ms : 1000);
}

void rl__queue_kick_head(rl__entry *e)
{
    if (e->q_head && !e->q_head->kicked) {
        e->q_head->kicked = 1;
        pthread_cond_signal(&e->q_head->cond);
    }
}

/* A release notice that says it gave back `freed` permits (0: it does not
 * say; a plain release's, a force-release's): wake the head, unless it is
 * a semaphore's waiter that these leave short of what it lacked. Permits
 * that come back without a notice (a holder's deadline passed) are the
 * head's own wake-up time's. */
void rl__queue_notice(rl__entry *e, long long freed)
{
    rl__waiter *w = e->q_head;

    if (w && w->short_of > 0 && freed > 0 && freed < w->short_of) {
        w->short_of -= freed;
        return;
    }
    rl__queue_kick_head(e);
}

/* Every waiting thread of the client, not only the heads: a shutdown. */
void rl__queue_wake_everyone(rl_client *c)
{
    size_t i;
    rl__entry *e;
    rl__waiter *w;

    for (i = 0; i < c->nbuckets; i++)
        for (e = c->buckets[i]; e; e = e->next)
            for (w = e->q_head; w; w = w->next) {
                w->kicked = 1;
                pthread_cond_signal(&w->cond);
            }
}

/* ---- holds ------------------------------------------------------------ */

#define RL__SPARE_MAX 64

rl__hold *rl__hold_new(rl_client *c, rl__entry *e, uint64_t tid, long lease_ms, int watchdog)
{
    rl__hold *h = c->spare_holds;
    size_t size = sizeof *h + (size_t)c->nnodes * sizeof h->nodes[0];
    int i;

    /* Reuse a freed hold: no allocation on the steady acquire path. */
    if (h) {
        c->spare_holds = h->c_next;
        c->nspare--;
        memset(h, 0, size);
    } else if (!(h = calloc(1, size))) {
        return NULL;
    }
    for (i = 0; i < c->nnodes; i++) {
        h->nodes[i].doubt.id = -1;
        h->nodes[i].spread.id = -1;
    }
    h->client = c;
    h->entry = e;
    h->tid = tid;
    h->lease_ms = lease_ms;
    h->drift_ms = rl__drift_ms(lease_ms);
    h->watchdog = watchdog;
    h->doubt.id = -1;
    atomic_init(&h->orphan, 0);
    atomic_init(&h->lost, 0);
    atomic_init(&h->expiry_ms, 0);
    return h;
}

void rl__hold_insert(rl_client *c, rl__hold *h)
{
    h->serial = ++c->next_serial;
    h->c_prev = NULL;
    h->c_next = c->holds;
    if (c->holds)
        c->holds->c_prev = h;
    c->holds = h;
    c->nholds++;
    RL__STAT_INC(c, holds);
    h->refs = 1;
    h->in_table = 1;
    h->entry->holds++;
    h->entry->local_live++;
    h->entry->local_reads += h->side == RL__SIDE_READ;
}

/* Take h out of the client's list of holds. */
static void unlist(rl_client *c, rl__hold *h)
{
    if (h->c_prev)
        h->c_prev->c_next = h->c_next;
    else
        c->holds = h->c_next;
    if (h->c_next)
        h->c_next->c_prev = h->c_prev;
    h->c_next = h->c_prev = NULL;
    c->nholds--;
    RL__STAT_DEC(c, holds);
    h->in_table = 0;
}

void rl__hold_remove(rl_client *c, rl__hold *h)
{
    if (!h->in_table)
        return;
    if (!atomic_load(&h->lost)) {
        h->entry->local_live--;
        h->entry->local_reads -= h->side == RL__SIDE_READ;
    }
    unlist(c, h);
    /* A local waiter may now take the name: wake it without a round trip
     * (a semaphore's, when the hold's permits may be enough). */
    if (h->entry->family == RL__FAM_SEM)
        rl__queue_notice(h->entry, h->permits);
    else
        rl__queue_kick_head(h->entry);
    rl__hold_unref(c, h);
}

void rl__hold_unref(rl_client *c, rl__hold *h)
{
    rl__entry *e = h->entry;

    if (--h->refs > 0)
        return;
    e->holds--;
    rl__hold_discard(c, h);
    rl__entry_maybe_free(c, e);
}

void rl__hold_discard(rl_client *c, rl__hold *h)
{
    if (c->nspare >= RL__SPARE_MAX) {
        free(h);
        return;
    }
    h->c_next = c->spare_holds;
    c->spare_holds = h;
    c->nspare++;
}

void rl__hold_free_spares(rl_client *c)
{
    rl__hold *h, *next;

    for (h = c->spare_holds; h; h = next) {
        next = h->c_next;
        free(h);
    }
    c->spare_holds = NULL;
    c->nspare = 0;
}

long rl__redis_lease(const rl_client *c, long lease_ms)
{
    /* Within RL_TIME_MAX_MS: rl_client_new() and rl_lock_try_acquire()
     * refuse a lease whose sum with the delay is past it. */
    return lease_ms + c->delay_ms;
}

long rl__drift_ms(long lease_ms)
{
    /* Clock rates may differ by well under 1 %; 2 ms covers the rest. */
    return lease_ms / 100 + 2;
}

/* The client is going away while a thread still links h in its own list:
 * take h out of the client, flagged, and let that thread free it. */
void rl__hold_orphan(rl_client *c, rl__hold *h)
{
    int live = RL__HOLD_LIVE;

    rl__hold_mark_lost(c, h, RL__LOST_SHUTDOWN, "the client was shut down");
    unlist(c, h);
    h->entry->holds--;
    /* Its thread has ended already: nobody else will free it. */
    if (!atomic_compare_exchange_strong(&h->orphan, &live, RL__HOLD_ORPHAN))
        free(h);
}

int rl__hold_is_lost(const rl__hold *h, int64_t now)
{
    return atomic_load_explicit(&h->lost, memory_order_acquire) ||
           now >= atomic_load_explicit(&h->expiry_ms, memory_order_relaxed);
}

void rl__hold_confirm(rl__hold *h, int64_t sent_ms)
{
    long long expiry = sent_ms + h->lease_ms - h->drift_ms;
    long long cur = atomic_load(&h->expiry_ms);

    /* Only ever forward: an older confirmation must not shorten a newer one. */
    while (expiry > cur && !atomic_compare_exchange_weak(&h->expiry_ms, &cur, expiry))
        ;
}

int rl__hold_renewed(rl__hold *h, int64_t sent_ms)
{
    long long expiry = sent_ms + h->lease_ms - h->drift_ms;
    long long cur = atomic_load(&h->expiry_ms);
    int64_t now = rl__now_ms();

    /* Forward, as above; and never back to life: once the confirmed
     * expiry has passed, rl_interrupted() may have told the holder so. */
    while (expiry > cur && cur > now) {
        if (atomic_compare_exchange_weak(&h->expiry_ms, &cur, expiry))
            return 1;
    }
    return expiry <= cur;
}

/* Flag the hold lost, saying why (a RL__LOST_* cause for the counters, a
 * static string for the log); the watchdog reports it to on_lost and the
 * log. Returns 1 the first time. */
int rl__hold_mark_lost(rl_client *c, rl__hold *h, int cause, const char *why)
{
    if (atomic_exchange(&h->lost, 1) != 0)
        return 0;
    /* A lease that ran out: the watchdog's could not be confirmed, a fixed
     * one simply ended. */
    if (cause == RL__LOST_EXPIRED && !h->watchdog)
        cause = RL__LOST_LEASE_ENDED;
    RL__STAT_INC(c, lost[cause]);
    h->lost_why = why;
    if (h->in_table) {
        h->entry->local_live--;
        h->entry->local_reads -= h->side == RL__SIDE_READ;
        /* A local waiter was waiting for this holder: let it ask Redis. */
        rl__queue_kick_head(h->entry);
        rl__watchdog_poke(c);
    }
    return 1;
}

/* Tell on_lost, once, that h was lost. Mutex held; dropped around the
 * callback, with a reference that keeps h alive meanwhile. */
void rl__hold_report(rl_client *c, rl__hold *h)
{
    h->reported = 1;
    if (!c->on_lost)
        return;
    h->refs++;
    pthread_mutex_unlock(&c->mu);
    c->on_lost(h->entry->name, h->entry->name_len, c->payload);
    pthread_mutex_lock(&c->mu);
    rl__hold_unref(c, h);
}
