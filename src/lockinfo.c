/*
 * A lock's hash as rl_lock_info (inspect.c reads it; this file only reads
 * the reply). A field "<uuid>:<tid>[:r]" is a holder, valued "<count>
 * <since_ms>[ <token>]". Fields that begin with '~' are not holders:
 * "~delay" is a lock-delay (src/lua/), "~N" a semaphore's permit count
 * and "~k:<field>" a hold's permits (semaphore.c), "~d:<field>" a
 * read-write or semaphore hold's deadline, the others a read-write lock's
 * count, writer and intents (rwlock.c). A semaphore's hold past its
 * deadline is not a holder: the scripts count it as gone.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lockinfo.h"

static void copy_str(char *dst, size_t cap, const redisReply *v)
{
    size_t n = v->len < cap - 1 ? v->len : cap - 1;

    memcpy(dst, v->str, n);
    dst[n] = '\0';
}

static rl__holder_mem *holder_new(const redisReply *f, const redisReply *v)
{
    rl__holder_mem *h = calloc(1, sizeof *h);
    const char *colon;
    char val[48];
    size_t tl;

    if (!h)
        return NULL;
    h->pub.side = RL_KIND_PLAIN;
    colon = memchr(f->str, ':', f->len);
    if (colon && colon - f->str == RL__UUID_LEN) {
        memcpy(h->owner, f->str, RL__UUID_LEN);
        tl = f->len - RL__UUID_LEN - 1;
        if (tl >= 2 && memcmp(colon + 1 + tl - 2, ":r", 2) == 0) {
            h->pub.side = RL_KIND_READ;      /* "<uuid>:<tid>:r": a reader (rwlock.c) */
            tl -= 2;
        }
        snprintf(h->thread, sizeof h->thread, "%.*s", (int)tl, colon + 1);
    } else {
        snprintf(h->owner, sizeof h->owner, "%.*s",
                 (int)(f->len < RL__UUID_LEN ? f->len : RL__UUID_LEN), f->str);
        snprintf(h->thread, sizeof h->thread, "?");
    }
    copy_str(val, sizeof val, v);
    /* "<count> <since_ms>[ <token>]" or "<count>" (src/lua/acquire.lua). */
    h->pub.count = strtoll(val, NULL, 10);
    h->pub.since_ms = strchr(val, ' ') ? strtoll(strchr(val, ' ') + 1, NULL, 10) : -1;
    h->pub.pid = h->pub.started_ms = -1;
    h->pub.owner = h->owner;
    h->pub.thread = h->thread;
    h->pub.host = h->host;
    h->pub.client_name = h->client_name;
    h->pub.version = h->version;
    return h;
}

static int rw_field(const redisReply *f)
{
    return (f->len == 2 && (memcmp(f->str, "~n", 2) == 0 || memcmp(f->str, "~w", 2) == 0 ||
                            memcmp(f->str, "~s", 2) == 0)) ||
           (f->len == 3 && memcmp(f->str, "~wi", 3) == 0) ||
           (f->len > 3 && memcmp(f->str, "~d:", 3) == 0);
}

/* The holder of w whose field follows the three bytes of f's tag ("~d:",
 * "~k:"): "<owner>:<thread>", a reader's with ":r"; NULL when none is. */
static rl_holder_info *holder_of(rl__info_mem *w, const redisReply *f)
{
    char field[RL__OWNER_MAX + 8];
    size_t k, n;

    for (k = 0; k < w->pub.nholders; k++) {
        rl_holder_info *h = w->holders[k];
        n = (size_t)snprintf(field, sizeof field, "%s:%s%s", h->owner, h->thread,
                             h->side == RL_KIND_READ ? ":r" : "");
        if (n + 3 == f->len && memcmp(field, f->str + 3, n) == 0)
            return h;
    }
    return NULL;
}

/* The per-hold fields of a read-write lock or a semaphore: a deadline
 * "~d:<field>" (Redis ms) as the lease left of the holder whose field it
 * is; a semaphore's "~k:<field>" as its permits. */
static void hold_fields(rl__info_mem *w, const redisReply *hash, long long now)
{
    size_t k;

    for (k = 0; k + 1 < hash->elements; k += 2) {
        const redisReply *f = hash->element[k], *v = hash->element[k + 1];
        rl_holder_info *h;
        if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING || f->len <= 3 ||
            (memcmp(f->str, "~d:", 3) != 0 && memcmp(f->str, "~k:", 3) != 0) ||
            !(h = holder_of(w, f)))
            continue;
        if (f->str[1] == 'k')
            h->permits = strtoll(v->str, NULL, 10);
        else if (now >= 0)
            h->lease_left_ms = strtoll(v->str, NULL, 10) - now;
    }
}

/* A semaphore's holds: each holds a permit unless its "~k:" says more, as
 * the scripts count; one past its deadline is gone, as for the scripts,
 * and its permits are free. A hold without a deadline lives as long as
 * the key (the scripts count it as live). */
static void sem_holds(rl__info_mem *w, const redisReply *hash, long long now)
{
    long long used = 0;
    size_t k, n = 0;

    for (k = 0; k < w->pub.nholders; k++) {
        w->holders[k]->permits = 1;
        w->holders[k]->lease_left_ms = LLONG_MIN;
    }
    hold_fields(w, hash, now);
    for (k = 0; k < w->pub.nholders; k++) {
        rl_holder_info *h = w->holders[k];
        if (h->lease_left_ms == LLONG_MIN) {
            h->lease_left_ms = w->pub.lease_left_ms;
        } else if (h->lease_left_ms <= 0) {
            free(h);        /* a rl__holder_mem, whose first member it is */
            continue;
        }
        used += h->permits;
        w->holders[n++] = h;
    }
    w->pub.nholders = n;
    w->pub.free_permits = w->pub.permits > used ? w->pub.permits - used : 0;
    w->pub.kind = RL_KIND_SEMAPHORE;
}

/* The hash's fields as holders of w; the '~' fields as what they say. */
int rl__info_fields(rl__info_mem *w, const redisReply *hash, long long now)
{
    size_t k;
    int rw = 0, sem = 0;

    for (k = 0; k + 1 < hash->elements; k += 2) {
        const redisReply *f = hash->element[k], *v = hash->element[k + 1];
        rl__holder_mem *h;
        if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
            continue;
        if (f->len == 6 && memcmp(f->str, "~delay", 6) == 0) {
            w->pub.delay_ms = strtoll(v->str, NULL, 10);
            continue;
        }
        if (f->len == 2 && memcmp(f->str, "~N", 2) == 0) {
            w->pub.permits = strtoll(v->str, NULL, 10);
            sem = 1;
            continue;
        }
        if (f->len > 0 && f->str[0] == '~') {
            rw |= rw_field(f);
            continue;
        }
        if (!(h = holder_new(f, v)))
            return RL_ENOMEM;
        h->pub.lease_left_ms = w->pub.lease_left_ms;
        rw |= h->pub.side == RL_KIND_READ;
        w->holders[w->pub.nholders++] = &h->pub;
    }
    if (sem) {
        sem_holds(w, hash, now);
        return RL_OK;
    }
    if (rw)
        hold_fields(w, hash, now);
    for (k = 0; rw && k < w->pub.nholders; k++)
        if (w->holders[k]->side == RL_KIND_PLAIN)
            w->holders[k]->side = RL_KIND_WRITE;
    w->pub.kind = rw ? RL_KIND_RW : w->pub.queued > 0 ? RL_KIND_FAIR : RL_KIND_PLAIN;
    if (w->pub.delay_ms > 0 && w->pub.nholders == 0 && w->pub.lease_left_ms > 0)
        w->pub.delay_left_ms = w->pub.lease_left_ms;
    return RL_OK;
}

void rl__info_free(rl__info_mem *w)
{
    size_t k;

    if (!w)
        return;
    for (k = 0; k < w->pub.nholders; k++)
        free(w->holders[k]);
    free(w->holders);
    free(w->name);
    free(w);
}

/* A caller of layout 1 is given no kind its header lacks: a semaphore
 * reads as layout 1's library read it, a read-write lock held on its
 * write side. */
void rl__info_as_layout(rl_lock_info *const *locks, size_t n, unsigned int asked)
{
    size_t i, k;

    for (i = 0; asked < 2 && i < n; i++) {
        if (locks[i]->kind != RL_KIND_SEMAPHORE)
            continue;
        locks[i]->kind = RL_KIND_RW;
        for (k = 0; k < locks[i]->nholders; k++)
            locks[i]->holders[k]->side = RL_KIND_WRITE;
    }
}
