/*
 * rlock list / show / release --force.
 *
 * list and show read Redis only (SCAN, HGETALL, PTTL, PUBSUB NUMSUB): on
 * every master that may keep a lock — the server, the Cluster's masters
 * (from the client's slot map), or each Redlock master — through the
 * client's own connections (authenticated, database selected). A holder's
 * field "<uuid>:<tid>" is joined with its owner record
 * <prefix>owner:{<uuid>} (src/owner.c) for host, pid and name; a holder
 * without one is shown as "unknown". release --force is
 * rl_lock_force_release(): the delete and the release notice in one
 * script, so waiters wake at once.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nopipe.h"
#include "rlock_int.h"
#include "tool.h"

typedef struct owner_rec {
    char uuid[RL__UUID_LEN + 1];
    int found;
    char host[RL__HOST_MAX];
    char pid[24];
    char name[RL_CLIENT_NAME_MAX + 1];
    long long started;          /* unix ms; -1 unknown */
    char version[32];
} owner_rec;

typedef struct holder {
    char uuid[RL__UUID_LEN + 1];
    char tid[24];
    long long count;
    long long since;            /* unix ms; -1: not stored (older client) */
    const owner_rec *owner;
} holder;

typedef struct row {
    char *name;
    size_t name_len;
    const rl__server *node;
    long long pttl;
    long long waiters;          /* -1: unknown */
    long long queued;           /* a fair lock's waiters in its queue (0: none, or not fair) */
    long long delay_ms;         /* the holder's lock-delay; 0: none */
    int nh;
    holder *h;
} row;

typedef struct scan {
    rl_client *c;
    rl__conn *conn[RL__SERVERS_MAX];
    row *rows;
    size_t nrows, cap;
    owner_rec *owners;
    size_t nowners, ocap;
    int failed;
} scan;

/* ---- connections ------------------------------------------------------ */

static rl__conn *conn_to(scan *sc, rl__server *s)
{
    int rc;

    if (sc->conn[s->index])
        return sc->conn[s->index];
    if ((rc = rl__pool_get(sc->c, s, &sc->conn[s->index])) != RL_OK) {
        rt_err("%s: %s (%s)", s->name, rl_strerror(rc), rl_last_error());
        sc->failed = 1;
        return sc->conn[s->index] = NULL;
    }
    return sc->conn[s->index];
}

static void scan_done(scan *sc)
{
    size_t i;

    for (i = 0; i < RL__SERVERS_MAX; i++)
        if (sc->conn[i])
            rl__pool_put(sc->c, sc->conn[i]);
    for (i = 0; i < sc->nrows; i++) {
        free(sc->rows[i].name);
        free(sc->rows[i].h);
    }
    free(sc->rows);
    free(sc->owners);
}

/* The masters that may keep locks: into out, their number. */
static int masters(rl_client *c, rl__server **out)
{
    int n = 0, i, seen[RL__SERVERS_MAX] = { 0 };

    pthread_mutex_lock(&c->mu);
    if (c->mode == RL__MODE_REDLOCK) {
        for (i = 0; i < c->nnodes; i++)
            out[n++] = c->servers[i];
    } else if (c->mode == RL__MODE_CLUSTER) {
        for (i = 0; i < RL__SLOTS; i++) {
            uint16_t k = c->slot_map[i];
            if (k != RL__NO_SERVER && !seen[k]) {
                seen[k] = 1;
                out[n++] = c->servers[k];
            }
        }
    } else {
        out[n++] = c->home;
    }
    pthread_mutex_unlock(&c->mu);
    return n;
}

/* ---- owner records ---------------------------------------------------- */

static void copy_str(char *dst, size_t cap, const redisReply *v)
{
    size_t n = v->len < cap - 1 ? v->len : cap - 1;

    memcpy(dst, v->str, n);
    dst[n] = '\0';
}

static int read_owner(scan *sc, rl__server *s, owner_rec *o)
{
    char key[sizeof sc->c->owner_key];
    const char *argv[2] = { "HGETALL", key };
    size_t lens[2] = { 7, 0 };
    rl__conn *conn = conn_to(sc, s);
    redisReply *r = NULL;
    size_t k;

    if (!conn)
        return 0;
    lens[1] = (size_t)snprintf(key, sizeof key, "%sowner:{%s}", sc->c->prefix, o->uuid);
    if (rl__conn_call(conn, &r, 2, argv, lens) != RL_OK)
        return 0;
    if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2) {
        o->found = 1;
        for (k = 0; k + 1 < r->elements; k += 2) {
            const redisReply *f = r->element[k], *v = r->element[k + 1];
            if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
                continue;
            if (strcmp(f->str, "host") == 0)
                copy_str(o->host, sizeof o->host, v);
            else if (strcmp(f->str, "pid") == 0)
                copy_str(o->pid, sizeof o->pid, v);
            else if (strcmp(f->str, "name") == 0)
                copy_str(o->name, sizeof o->name, v);
            else if (strcmp(f->str, "version") == 0)
                copy_str(o->version, sizeof o->version, v);
            else if (strcmp(f->str, "started") == 0)
                o->started = strtoll(v->str, NULL, 10);
        }
    }
    freeReplyObject(r);
    return o->found;
}

static const owner_rec *owner_of(scan *sc, const char *uuid)
{
    rl__server *to[RL__SERVERS_MAX];
    owner_rec *o;
    size_t i;
    int n, k;
    char key[sizeof sc->c->owner_key];

    for (i = 0; i < sc->nowners; i++)
        if (strcmp(sc->owners[i].uuid, uuid) == 0)
            return &sc->owners[i];
    if (sc->nowners == sc->ocap) {
        size_t cap = sc->ocap ? sc->ocap * 2 : 16;
        owner_rec *p = realloc(sc->owners, cap * sizeof *p);
        if (!p)
            return NULL;
        /* rows keep pointers: fix them up */
        for (i = 0; i < sc->nrows; i++)
            for (k = 0; k < sc->rows[i].nh; k++)
                if (sc->rows[i].h[k].owner)
                    sc->rows[i].h[k].owner = p + (sc->rows[i].h[k].owner - sc->owners);
        sc->owners = p;
        sc->ocap = cap;
    }
    o = &sc->owners[sc->nowners++];
    memset(o, 0, sizeof *o);
    snprintf(o->uuid, sizeof o->uuid, "%s", uuid);
    o->started = -1;
    if (sc->c->mode == RL__MODE_CLUSTER) {
        size_t kl = (size_t)snprintf(key, sizeof key, "%sowner:{%s}", sc->c->prefix, uuid);
        pthread_mutex_lock(&sc->c->mu);
        to[0] = rl__route_server(sc->c, rl__slot(key, kl));
        pthread_mutex_unlock(&sc->c->mu);
        n = 1;
    } else {
        n = masters(sc->c, to);
    }
    /* Redlock: on every master; the first that has it. */
    for (k = 0; k < n && !read_owner(sc, to[k], o); k++)
        ;
    return o;
}

/* ---- locks ------------------------------------------------------------ */

/* The lock name of key "<prefix>{<tag>}": 0 and *name set, or -1. */
static int name_of(const rl_client *c, const char *key, size_t len, const char **name,
                   size_t *nlen)
{
    if (len < c->prefix_len + 3 || memcmp(key, c->prefix, c->prefix_len) != 0 ||
        key[c->prefix_len] != '{' || key[len - 1] != '}')
        return -1;
    *name = key + c->prefix_len + 1;
    *nlen = len - c->prefix_len - 2;
    /* Undo holds.c's escape of a leading '}' or backslash. */
    if (*nlen >= 2 && (*name)[0] == '\\' && ((*name)[1] == '}' || (*name)[1] == '\\')) {
        (*name)++;
        (*nlen)--;
    }
    return 0;
}

/* HGETALL, PTTL, the subscriber count of one lock key on server s and its
 * fair queue's length, as a row (nothing when the key is gone or is not a
 * hash). A fair lock's waiters listen on channels of their own, not on
 * the release channel: its queue counts them. */
static void read_lock(scan *sc, rl__server *s, const char *key, size_t klen)
{
    rl_client *c = sc->c;
    rl__conn *conn = conn_to(sc, s);
    char chan[RL__OWNER_MAX + 1200], queue[RL__OWNER_MAX + 1200];
    const char *name;
    size_t nlen, k, clen;
    redisReply *r[4] = { NULL, NULL, NULL, NULL };
    row *w;
    int i, ok = 1;

    if (!conn || name_of(c, key, klen, &name, &nlen) != 0 || klen + 9 > sizeof chan)
        return;
    memcpy(chan, key, klen);
    memcpy(chan + klen, ":release", 8);
    clen = klen + 8;
    memcpy(queue, key, klen);
    memcpy(queue + klen, ":queue", 6);
    {
        const char *a1[2] = { "HGETALL", key }, *a2[2] = { "PTTL", key };
        size_t l1[2] = { 7, klen }, l2[2] = { 4, klen };
        const char *a3[4] = { "PUBSUB", "NUMSUB", chan }, *a4[2] = { "ZCARD", queue };
        size_t l3[3] = { 6, 6, clen }, l4[2] = { 5, klen + 6 };
        if (c->mode == RL__MODE_CLUSTER) {
            a3[1] = "SHARDNUMSUB";      /* notices are sharded there */
            l3[1] = 11;
        }
        redisAppendCommandArgv(conn->ctx, 2, a1, l1);
        redisAppendCommandArgv(conn->ctx, 2, a2, l2);
        redisAppendCommandArgv(conn->ctx, 3, a3, l3);
        redisAppendCommandArgv(conn->ctx, 2, a4, l4);
    }
    for (i = 0; i < 4; i++) {
        if (rl__redis_get_reply(conn->ctx, (void **)&r[i]) != REDIS_OK) {
            rt_err("%s: %s", s->name, rl__conn_error(conn));
            sc->failed = 1;
            ok = 0;
            break;
        }
    }
    if (!ok || r[0]->type != REDIS_REPLY_ARRAY || r[0]->elements < 2)
        goto out;
    if (sc->nrows == sc->cap) {
        size_t cap = sc->cap ? sc->cap * 2 : 32;
        row *p = realloc(sc->rows, cap * sizeof *p);
        if (!p)
            goto out;
        sc->rows = p;
        sc->cap = cap;
    }
    w = &sc->rows[sc->nrows];
    memset(w, 0, sizeof *w);
    w->name = malloc(nlen + 1);
    w->h = calloc(r[0]->elements / 2, sizeof *w->h);
    if (!w->name || !w->h) {
        free(w->name);
        free(w->h);
        goto out;
    }
    memcpy(w->name, name, nlen);
    w->name[nlen] = '\0';
    w->name_len = nlen;
    w->node = s;
    w->pttl = r[1]->type == REDIS_REPLY_INTEGER ? r[1]->integer : -3;
    w->waiters = -1;
    if (r[2]->type == REDIS_REPLY_ARRAY && r[2]->elements == 2 &&
        r[2]->element[1]->type == REDIS_REPLY_INTEGER)
        w->waiters = r[2]->element[1]->integer;
    w->queued = r[3]->type == REDIS_REPLY_INTEGER ? r[3]->integer : 0;
    sc->nrows++;
    for (k = 0; k + 1 < r[0]->elements; k += 2) {
        const redisReply *f = r[0]->element[k], *v = r[0]->element[k + 1];
        holder *h = &w->h[w->nh];
        const char *colon;
        char val[48];
        if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
            continue;
        if (f->len == 6 && memcmp(f->str, "~delay", 6) == 0) {
            /* Not an owner: the holder's lock-delay (src/scripts.c). */
            w->delay_ms = strtoll(v->str, NULL, 10);
            continue;
        }
        if (f->len > 0 && f->str[0] == '~')
            continue;   /* not an owner: a read-write lock's deadline or intent */
        colon = memchr(f->str, ':', f->len);
        if (colon && colon - f->str == RL__UUID_LEN) {
            memcpy(h->uuid, f->str, RL__UUID_LEN);
            snprintf(h->tid, sizeof h->tid, "%.*s", (int)(f->len - RL__UUID_LEN - 1), colon + 1);
        } else {
            snprintf(h->uuid, sizeof h->uuid, "%.*s", (int)(f->len < 36 ? f->len : 36), f->str);
            snprintf(h->tid, sizeof h->tid, "?");
        }
        copy_str(val, sizeof val, v);
        /* "<count> <since_ms>" or "<count>" (src/scripts.c). */
        h->count = strtoll(val, NULL, 10);
        h->since = strchr(val, ' ') ? strtoll(strchr(val, ' ') + 1, NULL, 10) : -1;
        w->nh++;
    }
out:
    for (i = 0; i < 4; i++)
        if (r[i])
            freeReplyObject(r[i]);
}

/* Every lock key matching `<prefix>{pattern}` on server s. */
static void scan_server(scan *sc, rl__server *s, const char *pattern)
{
    char cursor[32] = "0", match[1400];
    int with_type = 1;

    snprintf(match, sizeof match, "%s{%s}", sc->c->prefix, pattern);
    do {
        const char *argv[7] = { "SCAN", cursor, "MATCH", match, "COUNT", "1000", "TYPE" };
        size_t lens[8] = { 4, strlen(cursor), 5, strlen(match), 5, 4, 4 };
        const char *av[8];
        size_t lv[8];
        rl__conn *conn = conn_to(sc, s);
        redisReply *r = NULL;
        char **keys;
        size_t *klens, n, k;
        int argc = 6;

        if (!conn)
            return;
        memcpy(av, argv, sizeof argv);
        memcpy(lv, lens, sizeof lens);
        if (with_type) {
            av[7] = "hash";      /* lock keys only; Redis >= 6 */
            lv[7] = 4;
            argc = 8;
        }
        if (rl__conn_call(conn, &r, argc, av, lv) != RL_OK) {
            rt_err("%s: SCAN: %s", s->name, rl_last_error());
            sc->failed = 1;
            return;
        }
        if (r->type == REDIS_REPLY_ERROR && with_type) {
            freeReplyObject(r);
            with_type = 0;       /* older Redis: HGETALL skips what is not a hash */
            strcpy(cursor, "0");
            continue;
        }
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[1]->type != REDIS_REPLY_ARRAY) {
            rt_err("%s: SCAN: %s", s->name, r->type == REDIS_REPLY_ERROR ? r->str
                                                                         : "unexpected reply");
            freeReplyObject(r);
            sc->failed = 1;
            return;
        }
        copy_str(cursor, sizeof cursor, r->element[0]);
        n = r->element[1]->elements;
        keys = calloc(n ? n : 1, sizeof *keys);
        klens = calloc(n ? n : 1, sizeof *klens);
        for (k = 0; keys && klens && k < n; k++) {
            keys[k] = rl__memdup(r->element[1]->element[k]->str, r->element[1]->element[k]->len);
            klens[k] = r->element[1]->element[k]->len;
        }
        freeReplyObject(r);
        for (k = 0; keys && klens && k < n; k++) {
            if (keys[k])
                read_lock(sc, s, keys[k], klens[k]);
            free(keys[k]);
        }
        free(keys);
        free(klens);
    } while (strcmp(cursor, "0") != 0 && !sc->failed);
}

static void join_owners(scan *sc)
{
    size_t i;
    int k;

    for (i = 0; i < sc->nrows; i++)
        for (k = 0; k < sc->rows[i].nh; k++)
            sc->rows[i].h[k].owner = owner_of(sc, sc->rows[i].h[k].uuid);
}

static int by_name(const void *a, const void *b)
{
    const row *x = a, *y = b;
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int d = memcmp(x->name, y->name, n);

    if (d)
        return d;
    if (x->name_len != y->name_len)
        return x->name_len < y->name_len ? -1 : 1;
    return strcmp(x->node->name, y->node->name);
}

/* ---- output ------------------------------------------------------------ */

static char *printable(const char *s, size_t len)
{
    char *out = malloc(len * 4 + 1), *p = out;
    size_t i;

    if (!out)
        return NULL;
    for (i = 0; i < len; i++) {
        unsigned char b = (unsigned char)s[i];
        if (b < 0x20 || b == 0x7f || b == '\\')
            p += sprintf(p, "\\x%02x", b);
        else
            *p++ = (char)b;
    }
    *p = '\0';
    return out;
}

static void iso_time(char *buf, size_t cap, long long ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    if (ms < 0 || !gmtime_r(&t, &tm)) {
        snprintf(buf, cap, "-");
        return;
    }
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + strlen(buf), cap - strlen(buf), ".%03lldZ", ms % 1000);
}

static void duration(char *buf, size_t cap, long long ms)
{
    if (ms < 0)
        snprintf(buf, cap, "-");
    else if (ms < 1000)
        snprintf(buf, cap, "%lldms", ms);
    else if (ms < 60000)
        snprintf(buf, cap, "%.1fs", (double)ms / 1000.0);
    else if (ms < 3600000)
        snprintf(buf, cap, "%lldm%02llds", ms / 60000, ms / 1000 % 60);
    else if (ms < 86400000)
        snprintf(buf, cap, "%lldh%02lldm", ms / 3600000, ms / 60000 % 60);
    else
        snprintf(buf, cap, "%lldd%02lldh", ms / 86400000, ms / 3600000 % 24);
}

static void lease_left(char *buf, size_t cap, long long pttl)
{
    if (pttl == -1)
        snprintf(buf, cap, "no-expiry");
    else if (pttl < 0)
        snprintf(buf, cap, "gone");
    else
        duration(buf, cap, pttl);
}

static void json_str(FILE *f, const char *s, size_t len)
{
    size_t i;

    fputc('"', f);
    for (i = 0; i < len; i++) {
        unsigned char b = (unsigned char)s[i];
        if (b == '"' || b == '\\')
            fprintf(f, "\\%c", b);
        else if (b < 0x20 || b == 0x7f)
            fprintf(f, "\\u%04x", b);
        else
            fputc(b, f);
    }
    fputc('"', f);
}

static void print_json(const scan *sc, FILE *f)
{
    long long now = rl__wall_ms();
    size_t i;
    int k;

    fputs("[", f);
    for (i = 0; i < sc->nrows; i++) {
        const row *w = &sc->rows[i];
        fputs(i ? ",\n {\"name\": " : "\n {\"name\": ", f);
        json_str(f, w->name, w->name_len);
        fprintf(f, ", \"node\": ");
        json_str(f, w->node->name, strlen(w->node->name));
        fprintf(f, ", \"lease_left_ms\": %lld, \"waiters\": %lld, \"queued\": %lld, "
                "\"holders\": [", w->pttl, w->waiters, w->queued);
        for (k = 0; k < w->nh; k++) {
            const holder *h = &w->h[k];
            const owner_rec *o = h->owner;
            fprintf(f, "%s{\"owner\": \"%s\", \"thread\": ", k ? ", " : "", h->uuid);
            json_str(f, h->tid, strlen(h->tid));
            fprintf(f, ", \"count\": %lld, \"since_ms\": %lld, \"age_ms\": %lld", h->count,
                    h->since, h->since >= 0 ? now - h->since : -1);
            if (o && o->found) {
                fputs(", \"host\": ", f);
                json_str(f, o->host, strlen(o->host));
                fprintf(f, ", \"pid\": %s, \"client_name\": ", o->pid[0] ? o->pid : "null");
                json_str(f, o->name, strlen(o->name));
                fprintf(f, ", \"started_ms\": %lld, \"version\": ", o->started);
                json_str(f, o->version, strlen(o->version));
            } else {
                fputs(", \"host\": null, \"pid\": null, \"client_name\": null", f);
            }
            fputs("}", f);
        }
        fputs("]}", f);
    }
    fputs(sc->nrows ? "\n]\n" : "]\n", f);
}

enum { C_NAME, C_NODE, C_OWNER, C_HOST, C_PID, C_TID, C_CLIENT, C_COUNT, C_SINCE, C_AGE,
       C_LEASE, C_WAITERS, C_N };
static const char *const heads[C_N] = { "NAME", "NODE", "OWNER", "HOST", "PID", "TID",
                                        "CLIENT", "COUNT", "SINCE", "AGE", "LEASE",
                                        "WAITERS" };

static void print_table(const scan *sc, FILE *f)
{
    long long now = rl__wall_ms();
    size_t width[C_N], i, n = 0, r;
    char *(*cells)[C_N];
    int k, c, with_node = sc->c->mode == RL__MODE_CLUSTER || sc->c->mode == RL__MODE_REDLOCK;

    for (i = 0; i < sc->nrows; i++)
        n += (size_t)sc->rows[i].nh;
    if (!(cells = calloc(n ? n : 1, sizeof *cells)))
        return;
    for (c = 0; c < C_N; c++)
        width[c] = strlen(heads[c]);
    for (i = 0, r = 0; i < sc->nrows; i++) {
        const row *w = &sc->rows[i];
        for (k = 0; k < w->nh; k++, r++) {
            const holder *h = &w->h[k];
            const owner_rec *o = h->owner;
            char b[C_N][RL__HOST_MAX + 16];
            snprintf(b[C_NODE], sizeof b[0], "%s", w->node->name);
            snprintf(b[C_OWNER], sizeof b[0], "%.8s", h->uuid);
            snprintf(b[C_HOST], sizeof b[0], "%s", o && o->found ? o->host : "unknown");
            snprintf(b[C_PID], sizeof b[0], "%s", o && o->found ? o->pid : "-");
            snprintf(b[C_TID], sizeof b[0], "%s", h->tid);
            snprintf(b[C_CLIENT], sizeof b[0], "%s",
                     o && o->found && o->name[0] ? o->name : "-");
            snprintf(b[C_COUNT], sizeof b[0], "%lld", h->count);
            iso_time(b[C_SINCE], sizeof b[0], h->since);
            duration(b[C_AGE], sizeof b[0], h->since >= 0 ? now - h->since : -1);
            lease_left(b[C_LEASE], sizeof b[0], w->pttl);
            if (w->waiters >= 0)
                snprintf(b[C_WAITERS], sizeof b[0], "%lld", w->waiters + w->queued);
            else
                snprintf(b[C_WAITERS], sizeof b[0], "?");
            cells[r][C_NAME] = printable(w->name, w->name_len);
            for (c = 1; c < C_N; c++)
                cells[r][c] = rl__strdup(b[c]);
            for (c = 0; c < C_N; c++)
                if (cells[r][c] && strlen(cells[r][c]) > width[c])
                    width[c] = strlen(cells[r][c]);
        }
    }
    for (c = 0; c < C_N; c++) {
        if (c == C_NODE && !with_node)
            continue;
        if (c == C_WAITERS)
            fprintf(f, "%s\n", heads[c]);
        else
            fprintf(f, "%-*s  ", (int)width[c], heads[c]);
    }
    for (r = 0; r < n; r++) {
        for (c = 0; c < C_N; c++) {
            if (c == C_NODE && !with_node)
                continue;
            if (c == C_WAITERS)
                fprintf(f, "%s\n", cells[r][c] ? cells[r][c] : "?");
            else
                fprintf(f, "%-*s  ", (int)width[c], cells[r][c] ? cells[r][c] : "?");
        }
        for (c = 0; c < C_N; c++)
            free(cells[r][c]);
    }
    free(cells);
}

static void print_detail(const scan *sc, const char *name, FILE *f)
{
    long long now = rl__wall_ms();
    char *pn = printable(name, strlen(name)), t[64], d[64];
    size_t i;
    int k;

    if (!sc->nrows)
        fprintf(f, "%s: not held\n", pn ? pn : name);
    for (i = 0; i < sc->nrows; i++) {
        const row *w = &sc->rows[i];
        fprintf(f, "lock:        %s\n", pn ? pn : name);
        fprintf(f, "node:        %s\n", w->node->name);
        lease_left(d, sizeof d, w->pttl);
        fprintf(f, "lease left:  %s\n", d);
        if (w->delay_ms > 0)
            fprintf(f, "lock-delay:  %lld ms (included in the lease left)%s\n", w->delay_ms,
                    w->nh ? "" : "; a hold was lost: nobody may take it until it runs out");
        if (w->waiters >= 0)
            fprintf(f, "waiting:     %lld process(es) listening for its release\n",
                    w->waiters);
        else
            fprintf(f, "waiting:     unknown\n");
        if (w->queued > 0)
            fprintf(f, "queued:      %lld thread(s) in the fair lock's queue, served in order\n",
                    w->queued);
        for (k = 0; k < w->nh; k++) {
            const holder *h = &w->h[k];
            const owner_rec *o = h->owner;
            fprintf(f, "holder:      %s:%s\n", h->uuid, h->tid);
            fprintf(f, "  count:     %lld\n", h->count);
            iso_time(t, sizeof t, h->since);
            duration(d, sizeof d, h->since >= 0 ? now - h->since : -1);
            fprintf(f, "  since:     %s (%s ago)\n", t, d);
            if (o && o->found) {
                fprintf(f, "  host:      %s\n", o->host);
                fprintf(f, "  pid:       %s\n", o->pid);
                fprintf(f, "  thread:    %s (rlock's thread number in that process)\n",
                        h->tid);
                fprintf(f, "  client:    %s\n", o->name[0] ? o->name : "-");
                iso_time(t, sizeof t, o->started);
                fprintf(f, "  started:   %s\n", t);
                fprintf(f, "  version:   %s\n", o->version);
            } else {
                fprintf(f, "  owner:     unknown (no owner record for %s)\n", h->uuid);
            }
        }
    }
    free(pn);
}

/* ---- commands ----------------------------------------------------------- */

static int parse_simple(int argc, char **argv, rt_common *co, int *force, const char *usage)
{
    static const struct option longs[] = {
        RT_COMMON_LONGS,
        { "force", no_argument, NULL, 'f' },
        { NULL, 0, NULL, 0 },
    };
    int opt, rc;

    while ((opt = getopt_long(argc, argv, RT_COMMON_SHORT "f", longs, NULL)) != -1) {
        if (opt == 'f' && force) {
            *force = 1;
            continue;
        }
        if ((rc = rt_common_opt(opt, optarg, co)) != 0) {
            if (rc < 0)
                fputs(usage, stderr);
            return rc > 0 ? -2 : -1;
        }
    }
    if (!co->name)
        co->name = "rlock-cli";
    return optind;
}

int rt_cmd_list(int argc, char **argv, rt_common *co)
{
    static const char usage[] = "usage: rlock list [--url URL] [--json] [PATTERN]\n";
    rl__server *m[RL__SERVERS_MAX];
    const char *pattern = "*";
    scan sc;
    int i, n, at = parse_simple(argc, argv, co, NULL, usage);

    if (at < 0)
        return at == -2 ? RT_EXIT_OK : RT_EXIT_USAGE;
    if (argc - at > 1) {
        fputs(usage, stderr);
        return RT_EXIT_USAGE;
    }
    if (argc - at == 1)
        pattern = argv[at];
    memset(&sc, 0, sizeof sc);
    if (rt_client(&sc.c, co, NULL, NULL) != RL_OK)
        return RT_EXIT_REDIS;
    n = masters(sc.c, m);
    for (i = 0; i < n; i++)
        scan_server(&sc, m[i], pattern);
    join_owners(&sc);
    if (sc.nrows)
        qsort(sc.rows, sc.nrows, sizeof *sc.rows, by_name);
    if (co->json)
        print_json(&sc, stdout);
    else
        print_table(&sc, stdout);
    n = sc.failed;
    scan_done(&sc);
    rl_client_free(sc.c);
    return n ? RT_EXIT_REDIS : RT_EXIT_OK;
}

/* Rows for one name, from each server that may keep it. */
static int collect_one(scan *sc, const char *name)
{
    rl__server *m[RL__SERVERS_MAX];
    rl__entry *e;
    char *key;
    size_t klen;
    int i, n;

    pthread_mutex_lock(&sc->c->mu);
    e = rl__entry_get(sc->c, name, strlen(name));
    key = e ? rl__memdup(e->key, e->key_len + 1) : NULL;
    klen = e ? e->key_len : 0;
    if (e && sc->c->mode == RL__MODE_CLUSTER)
        m[0] = rl__route_server(sc->c, e->slot);
    pthread_mutex_unlock(&sc->c->mu);
    if (!key)
        return RL_ENOMEM;
    n = sc->c->mode == RL__MODE_CLUSTER ? 1 : masters(sc->c, m);
    for (i = 0; i < n; i++)
        read_lock(sc, m[i], key, klen);
    free(key);
    join_owners(sc);
    return RL_OK;
}

static int check_name(const char *name)
{
    size_t n = strlen(name);

    if (n == 0 || n > RL_NAME_MAX) {
        rt_err("a lock name is 1..%d bytes", RL_NAME_MAX);
        return -1;
    }
    return 0;
}

int rt_cmd_show(int argc, char **argv, rt_common *co)
{
    static const char usage[] = "usage: rlock show [--url URL] [--json] NAME\n";
    scan sc;
    int at = parse_simple(argc, argv, co, NULL, usage), failed;

    if (at < 0)
        return at == -2 ? RT_EXIT_OK : RT_EXIT_USAGE;
    if (argc - at != 1) {
        fputs(usage, stderr);
        return RT_EXIT_USAGE;
    }
    if (check_name(argv[at]) != 0)
        return RT_EXIT_USAGE;
    memset(&sc, 0, sizeof sc);
    if (rt_client(&sc.c, co, NULL, NULL) != RL_OK)
        return RT_EXIT_REDIS;
    if (collect_one(&sc, argv[at]) != RL_OK)
        sc.failed = 1;
    if (co->json)
        print_json(&sc, stdout);
    else
        print_detail(&sc, argv[at], stdout);
    failed = sc.failed;
    scan_done(&sc);
    rl_client_free(sc.c);
    return failed ? RT_EXIT_REDIS : RT_EXIT_OK;
}

int rt_cmd_release(int argc, char **argv, rt_common *co)
{
    static const char usage[] = "usage: rlock release --force [--url URL] NAME\n";
    rl_client *c;
    rl_lock *lock;
    scan sc;
    size_t i;
    int force = 0, rc, kind, delayed, at = parse_simple(argc, argv, co, &force, usage);
    long left;

    if (at < 0)
        return at == -2 ? RT_EXIT_OK : RT_EXIT_USAGE;
    if (argc - at != 1) {
        fputs(usage, stderr);
        return RT_EXIT_USAGE;
    }
    if (!force) {
        rt_err("release takes --force: it frees the lock whoever holds it (a holder in "
               "another process learns it at its next renewal)");
        return RT_EXIT_USAGE;
    }
    if (check_name(argv[at]) != 0)
        return RT_EXIT_USAGE;
    if (rt_client(&c, co, NULL, NULL) != RL_OK)
        return RT_EXIT_REDIS;
    /* Say whose hold goes, for the operator's log. */
    memset(&sc, 0, sizeof sc);
    sc.c = c;
    if (collect_one(&sc, argv[at]) == RL_OK && !co->json) {
        if (sc.nrows)
            print_table(&sc, stderr);
    }
    /* A fair lock with a queue: its first waiter is woken on its own
     * channel, which a fair handle's force-release does. (Redlock offers
     * no fair lock: a queue there is a single server's leftover.) */
    for (i = 0; i < sc.nrows && !sc.rows[i].queued; i++)
        ;
    kind = i < sc.nrows && c->mode != RL__MODE_REDLOCK ? RL_KIND_FAIR : RL_KIND_PLAIN;
    /* A holder with a lock-delay: its name stays blocked after the force. */
    for (i = 0; i < sc.nrows && !(sc.rows[i].delay_ms > 0 && sc.rows[i].nh > 0); i++)
        ;
    delayed = i < sc.nrows;
    scan_done(&sc);
    if ((rc = rl_lock_new_kind(&lock, c, argv[at], strlen(argv[at]), kind)) != RL_OK) {
        rt_err("%s", rl_last_error());
        rl_client_free(c);
        return RT_EXIT_USAGE;
    }
    rc = rl_lock_force_release(lock);
    if (rc != RL_OK)
        rt_err("release of '%s': %s (%s)", argv[at], rl_strerror(rc), rl_last_error());
    else if (delayed && rl_lock_ttl(&left, lock) == RL_OK && left > 0)
        /* The holder's lock-delay: the lease it had left, and the delay. */
        fprintf(stderr, "%s: released '%s'; its holder's lock-delay keeps it blocked for "
                "%ld ms more (release --force again ends that)\n", rt_prog, argv[at], left);
    else
        fprintf(stderr, "%s: released '%s'; its waiters were woken\n", rt_prog, argv[at]);
    rl_lock_free(lock);
    rl_client_free(c);
    return rc == RL_OK ? RT_EXIT_OK : RT_EXIT_REDIS;
}
