/*
 * Inspecting locks: rl_client_list_locks(), rl_client_inspect_lock().
 *
 * Reads Redis only, through the client's own connections (authenticated,
 * database selected) to every master that may keep a lock: the server,
 * the Cluster's masters (from the slot map), each Redlock master. Each
 * lock key is read in one pipeline (HGETALL, PTTL, the subscriber count of
 * its release channel, its fair queue's length, TIME). A holder's field
 * "<uuid>:<tid>[:r]" (read by lockinfo.c) is joined with its owner record
 * <prefix>owner:{<uuid>} (owner.c) for host, pid and name.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "common.h"
#include "error.h"
#include "fork.h"
#include "lockinfo.h"
#include "nopipe.h"
#include "router.h"
#include "slot.h"
#include "util.h"

typedef struct list_mem {
    rl_lock_list pub;
    rl_lock_info **locks;
    size_t cap;
    char **failures;
} list_mem;

typedef struct owner_rec {
    char uuid[RL__UUID_LEN + 1];
    int found;
    char host[RL__HOST_MAX];
    long long pid;
    char name[RL_CLIENT_NAME_MAX + 1];
    long long started;
    char version[32];
} owner_rec;

typedef struct scan {
    rl_client *c;
    rl__conn *conn[RL__SERVERS_MAX];
    unsigned char dead[RL__SERVERS_MAX];    /* could not connect: not tried again */
    unsigned char refused[RL__SERVERS_MAX]; /* a read refused there: recorded once */
    list_mem *out;
    owner_rec *owners;
    size_t nowners, ocap;
    int status;                             /* the first failure; RL_OK: none */
    unsigned int asked;                     /* the caller's layout version */
} scan;

/* ---- failures and connections ------------------------------------------ */

/* Record that a master (`node`) could not be read, with the detail of rc. */
static void failed_at(scan *sc, const char *node, int rc, const char *what, const char *detail)
{
    char buf[RL__HOST_MAX + 512], **p;
    size_t n = sc->out->pub.nfailures;

    if (sc->status == RL_OK)
        sc->status = rc;
    snprintf(buf, sizeof buf, "%s: %s%s%s", node, what, *what ? ": " : "", detail);
    rl__log(sc->c, RL_LOG_WARN, "inspect: %s", buf);
    if (!(p = realloc(sc->out->failures, (n + 1) * sizeof *p)))
        return;
    sc->out->failures = p;
    if ((p[n] = rl__strdup(buf)) != NULL)
        sc->out->pub.nfailures = n + 1;
    sc->out->pub.failures = (const char *const *)p;
}

static void failed(scan *sc, const rl__server *s, int rc, const char *what, const char *detail)
{
    failed_at(sc, s->name, rc, what, detail);
}

static rl__conn *conn_to(scan *sc, rl__server *s)
{
    char detail[320];
    int rc;

    if (sc->dead[s->index])
        return NULL;
    if (sc->conn[s->index] && rl__conn_broken(sc->conn[s->index]))
        sc->dead[s->index] = 1;     /* recorded when it broke */
    if (sc->conn[s->index] || sc->dead[s->index])
        return sc->dead[s->index] ? NULL : sc->conn[s->index];
    if ((rc = rl__pool_get(sc->c, s, &sc->conn[s->index])) != RL_OK) {
        snprintf(detail, sizeof detail, "%s (%s)", rl_strerror(rc), rl_last_error());
        failed(sc, s, rc, "", detail);
        sc->dead[s->index] = 1;
        sc->conn[s->index] = NULL;
    }
    return sc->conn[s->index];
}

/* s's connection back to the pool after each round trip: a list is many,
 * and the client's other threads must not wait for all of them (a pool
 * of one). */
static void conn_done(scan *sc, const rl__server *s)
{
    rl__conn *conn = sc->conn[s->index];

    if (!conn)
        return;
    if (rl__conn_broken(conn))
        sc->dead[s->index] = 1;     /* recorded when it broke */
    sc->conn[s->index] = NULL;
    rl__pool_put(sc->c, conn);
}

/* One command on s: RL_OK and *out, or a failure (recorded). */
static int call(scan *sc, rl__server *s, redisReply **out, int argc, const char **argv,
                const size_t *lens)
{
    rl__conn *conn = conn_to(sc, s);
    int rc;

    if (!conn)
        return RL_ECONN;
    if ((rc = rl__conn_call(conn, out, argc, argv, lens)) != RL_OK)
        failed(sc, s, rc, argv[0], rl_last_error());
    conn_done(sc, s);
    return rc;
}

/* The masters that may keep locks: into out, their number. */
static int masters(rl_client *c, rl__server **out)
{
    int n = 0, i;
    unsigned char seen[RL__SERVERS_MAX] = { 0 };

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

/* ---- owner records ------------------------------------------------------ */

static void copy_str(char *dst, size_t cap, const redisReply *v)
{
    size_t n = v->len < cap - 1 ? v->len : cap - 1;

    memcpy(dst, v->str, n);
    dst[n] = '\0';
}

static void owner_fields(owner_rec *o, const redisReply *r)
{
    size_t k;

    o->found = 1;
    for (k = 0; k + 1 < r->elements; k += 2) {
        const redisReply *f = r->element[k], *v = r->element[k + 1];
        if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
            continue;
        if (strcmp(f->str, "host") == 0)
            copy_str(o->host, sizeof o->host, v);
        else if (strcmp(f->str, "pid") == 0)
            o->pid = v->len ? strtoll(v->str, NULL, 10) : -1;
        else if (strcmp(f->str, "name") == 0)
            copy_str(o->name, sizeof o->name, v);
        else if (strcmp(f->str, "version") == 0)
            copy_str(o->version, sizeof o->version, v);
        else if (strcmp(f->str, "started") == 0)
            o->started = strtoll(v->str, NULL, 10);
    }
}

static int read_owner(scan *sc, rl__server *s, owner_rec *o, const char *key, size_t klen)
{
    const char *argv[2] = { "HGETALL", key };
    size_t lens[2] = { 7, klen };
    redisReply *r = NULL;

    if (call(sc, s, &r, 2, argv, lens) != RL_OK)
        return 0;
    if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2)
        owner_fields(o, r);
    freeReplyObject(r);
    return o->found;
}

/* The owner record of uuid, read once per scan: NULL when out of memory. */
static const owner_rec *owner_of(scan *sc, const char *uuid)
{
    rl__server *to[RL__SERVERS_MAX];
    char key[sizeof sc->c->owner_key];
    owner_rec *o;
    size_t i, klen;
    int n, k;

    for (i = 0; i < sc->nowners; i++)
        if (strcmp(sc->owners[i].uuid, uuid) == 0)
            return &sc->owners[i];
    if (sc->nowners == sc->ocap) {
        size_t cap = sc->ocap ? sc->ocap * 2 : 16;
        owner_rec *p = realloc(sc->owners, cap * sizeof *p);
        if (!p)
            return NULL;
        sc->owners = p;
        sc->ocap = cap;
    }
    o = &sc->owners[sc->nowners++];
    memset(o, 0, sizeof *o);
    snprintf(o->uuid, sizeof o->uuid, "%s", uuid);
    o->pid = o->started = -1;
    klen = (size_t)snprintf(key, sizeof key, "%sowner:{%s}", sc->c->prefix, uuid);
    if (sc->c->mode == RL__MODE_CLUSTER) {
        pthread_mutex_lock(&sc->c->mu);
        to[0] = rl__route_server(sc->c, rl__slot(key, klen));
        pthread_mutex_unlock(&sc->c->mu);
        n = to[0] != NULL;
    } else {
        n = masters(sc->c, to);
    }
    /* Redlock: on every master; the first that has it. */
    for (k = 0; k < n && !read_owner(sc, to[k], o, key, klen); k++)
        ;
    return o;
}

static void join_owner(scan *sc, rl__holder_mem *h)
{
    const owner_rec *o = owner_of(sc, h->owner);

    if (!o || !o->found)
        return;
    h->pub.known = 1;
    memcpy(h->host, o->host, sizeof h->host);
    memcpy(h->client_name, o->name, sizeof h->client_name);
    memcpy(h->version, o->version, sizeof h->version);
    h->pub.pid = o->pid;
    h->pub.started_ms = o->started;
}

/* ---- one lock ------------------------------------------------------------ */

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

static int add_info(list_mem *l, rl__info_mem *w)
{
    if (l->pub.count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 32;
        rl_lock_info **p = realloc(l->locks, cap * sizeof *p);
        if (!p)
            return RL_ENOMEM;
        l->locks = p;
        l->cap = cap;
        l->pub.locks = p;
    }
    l->locks[l->pub.count++] = &w->pub;
    return RL_OK;
}

/* Redis TIME as unix ms; -1 when the reply is not one. */
static long long time_ms(const redisReply *r)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING)
        return -1;
    return strtoll(r->element[0]->str, NULL, 10) * 1000 +
           strtoll(r->element[1]->str, NULL, 10) / 1000;
}

/* The lock of the replies r (HGETALL, PTTL, NUMSUB, ZCARD, TIME) as an
 * entry of the list; nothing when the key is gone or not a hash. */
static int make_info(scan *sc, const rl__server *s, const char *name, size_t nlen,
                     redisReply **r)
{
    rl__info_mem *w;
    int rc;

    /* An error (ACL, LOADING, BUSY, MOVED, ASK) says nothing of who holds
     * it: the master was not read. (WRONGTYPE is read_lock()'s.) */
    if (r[0]->type == REDIS_REPLY_ERROR) {
        if (!sc->refused[s->index])
            failed(sc, s, RL_EREDIS, "HGETALL", r[0]->str);
        sc->refused[s->index] = 1;
        return RL_OK;
    }
    if (r[0]->type != REDIS_REPLY_ARRAY || r[0]->elements < 2)
        return RL_OK;
    if (!(w = calloc(1, sizeof *w)) || !(w->name = rl__memdup(name, nlen + 1)) ||
        !(w->holders = calloc(r[0]->elements / 2, sizeof *w->holders))) {
        rl__info_free(w);
        return RL_ENOMEM;
    }
    w->name[nlen] = '\0';
    snprintf(w->node, sizeof w->node, "%s", s->name);
    w->pub.name = w->name;
    w->pub.name_len = nlen;
    w->pub.node = w->node;
    w->pub.holders = w->holders;
    w->pub.lease_left_ms = r[1]->type == REDIS_REPLY_INTEGER ? r[1]->integer : -2;
    w->pub.waiters = -1;
    if (r[2]->type == REDIS_REPLY_ARRAY && r[2]->elements == 2 &&
        r[2]->element[1]->type == REDIS_REPLY_INTEGER)
        w->pub.waiters = r[2]->element[1]->integer;
    w->pub.queued = r[3]->type == REDIS_REPLY_INTEGER ? r[3]->integer : 0;
    if ((rc = rl__info_fields(w, r[0], time_ms(r[4]))) != RL_OK ||
        (rc = add_info(sc->out, w)) != RL_OK) {
        rl__info_free(w);
        return rc;
    }
    return RL_OK;
}

/* Send the five reads of one lock key in one pipeline. */
static void append_reads(rl_client *c, rl__conn *conn, const char *key, size_t klen,
                         char *chan, char *queue)
{
    const char *a1[2] = { "HGETALL", key }, *a2[2] = { "PTTL", key };
    const char *a3[3] = { "PUBSUB", "NUMSUB", chan }, *a4[2] = { "ZCARD", queue };
    const char *a5[1] = { "TIME" };
    size_t l1[2] = { 7, klen }, l2[2] = { 4, klen }, l3[3] = { 6, 6, klen + 8 };
    size_t l4[2] = { 5, klen + 6 }, l5[1] = { 4 };

    memcpy(chan, key, klen);
    memcpy(chan + klen, ":release", 8);
    memcpy(queue, key, klen);
    memcpy(queue + klen, ":queue", 6);
    if (c->mode == RL__MODE_CLUSTER) {
        a3[1] = "SHARDNUMSUB";      /* notices are sharded there */
        l3[1] = 11;
    }
    redisAppendCommandArgv(conn->ctx, 2, a1, l1);
    redisAppendCommandArgv(conn->ctx, 2, a2, l2);
    redisAppendCommandArgv(conn->ctx, 3, a3, l3);
    redisAppendCommandArgv(conn->ctx, 2, a4, l4);
    redisAppendCommandArgv(conn->ctx, 1, a5, l5);
}

/* Room for the longest lock key a client makes (a prefix of at most 256
 * bytes, client.c; '{', an escape, the name, '}') and a suffix. */
#define KEY_ROOM (256 + 3 + RL_NAME_MAX + 16)

/* A key of a lock's name that holds another type than rlock's hash (a
 * string SET by hand, say): the name is blocked, and said so, as a
 * failure of the call that names the key (RL_EREDIS). */
static void not_a_lock(scan *sc, const rl__server *s, const char *key, size_t klen,
                       const char *name, size_t nlen)
{
    char buf[400];

    snprintf(buf, sizeof buf, "key %.*s of lock '%.*s' holds another type of value, not "
             "rlock's (WRONGTYPE): delete or rename it to free the name", (int)klen, key,
             (int)nlen, name);
    failed(sc, s, RL_EREDIS, "", buf);
}

/* One lock key on server s, as an entry of the list (when it is a lock). */
static int read_lock(scan *sc, rl__server *s, const char *key, size_t klen)
{
    char chan[KEY_ROOM], queue[KEY_ROOM];
    redisReply *r[5] = { NULL, NULL, NULL, NULL, NULL };
    rl__conn *conn = conn_to(sc, s);
    const char *name;
    size_t nlen;
    int i, rc = RL_OK;

    if (!conn || name_of(sc->c, key, klen, &name, &nlen) != 0 || klen + 9 > sizeof chan)
        return RL_OK;
    append_reads(sc->c, conn, key, klen, chan, queue);
    for (i = 0; i < 5 && rc == RL_OK; i++) {
        if (rl__redis_get_reply(conn->ctx, (void **)&r[i]) != REDIS_OK) {
            failed(sc, s, RL_ECONN, "", rl__conn_error(conn));
            rc = RL_ECONN;
        }
    }
    conn_done(sc, s);
    if (rc == RL_OK && r[0]->type == REDIS_REPLY_ERROR && strncmp(r[0]->str, "WRONGTYPE", 9) == 0)
        not_a_lock(sc, s, key, klen, name, nlen);
    else if (rc == RL_OK)
        rc = make_info(sc, s, name, nlen, r);
    for (i = 0; i < 5; i++)
        if (r[i])
            freeReplyObject(r[i]);
    return rc == RL_ENOMEM ? rc : RL_OK;
}

/* ---- every lock ---------------------------------------------------------- */

/* The client is being shut down: a list stops between two round trips,
 * as a shutdown waits for the calls in flight. */
static int closing(const scan *sc)
{
    if (!atomic_load(&sc->c->closing))
        return RL_OK;
    return rl__err(RL_ECANCELED, "the client is shutting down");
}

/* The keys of one SCAN reply, copied: read_lock() uses the connection. */
static int scan_keys(scan *sc, rl__server *s, const redisReply *keys)
{
    size_t n = keys->elements, k;
    char **copy = calloc(n ? n : 1, sizeof *copy);
    size_t *lens = calloc(n ? n : 1, sizeof *lens);
    int rc = copy && lens ? RL_OK : RL_ENOMEM;

    for (k = 0; rc == RL_OK && k < n; k++) {
        if (keys->element[k]->type != REDIS_REPLY_STRING)
            continue;
        lens[k] = keys->element[k]->len;
        if (!(copy[k] = rl__memdup(keys->element[k]->str, lens[k] + 1)))
            rc = RL_ENOMEM;
    }
    for (k = 0; copy && k < n; k++) {
        if (rc == RL_OK && copy[k] && (rc = closing(sc)) == RL_OK)
            rc = read_lock(sc, s, copy[k], lens[k]);
        free(copy[k]);
    }
    free(copy);
    free(lens);
    return rc;
}

/* One SCAN step: RL_OK and the next cursor, or a status. Every key of
 * the pattern, whatever its type: one that is not a hash blocks a name
 * (not_a_lock()). */
static int scan_step(scan *sc, rl__server *s, const char *match, char *cursor, redisReply **out)
{
    const char *argv[6] = { "SCAN", cursor, "MATCH", match, "COUNT", "1000" };
    size_t lens[6] = { 4, strlen(cursor), 5, strlen(match), 5, 4 };
    redisReply *r = NULL;
    int rc;

    if ((rc = call(sc, s, &r, 6, argv, lens)) != RL_OK)
        return rc;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY) {
        rc = r->type == REDIS_REPLY_ERROR ? RL_EREDIS : RL_EPROTO;
        failed(sc, s, rc, "SCAN", r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        freeReplyObject(r);
        return rc;
    }
    copy_str(cursor, 32, r->element[0]);
    *out = r;
    return RL_OK;
}

/* Every lock key matching `<prefix>{pattern}` on server s. */
static int scan_server(scan *sc, rl__server *s, const char *pattern)
{
    char cursor[32] = "0", match[RL_NAME_MAX + 400];
    int rc;

    snprintf(match, sizeof match, "%s{%s}", sc->c->prefix, pattern);
    for (;;) {
        redisReply *r = NULL;
        if ((rc = closing(sc)) != RL_OK)
            return rc;
        if (scan_step(sc, s, match, cursor, &r) != RL_OK)
            return RL_OK;       /* recorded; the other masters are still read */
        rc = scan_keys(sc, s, r->element[1]);
        freeReplyObject(r);
        if (rc != RL_OK || strcmp(cursor, "0") == 0)
            return rc;
    }
}

/* ---- the calls ------------------------------------------------------------ */

static int by_name(const void *a, const void *b)
{
    const rl__info_mem *x = *(rl__info_mem *const *)a, *y = *(rl__info_mem *const *)b;
    size_t n = x->pub.name_len < y->pub.name_len ? x->pub.name_len : y->pub.name_len;
    int d = memcmp(x->name, y->name, n);

    if (d)
        return d;
    if (x->pub.name_len != y->pub.name_len)
        return x->pub.name_len < y->pub.name_len ? -1 : 1;
    return strcmp(x->node, y->node);
}

static const int public_mode[] = {
    [RL__MODE_SINGLE] = RL_MODE_SINGLE,
    [RL__MODE_CLUSTER] = RL_MODE_CLUSTER,
    [RL__MODE_REDLOCK] = RL_MODE_REDLOCK,
    [RL__MODE_SENTINEL] = RL_MODE_SENTINEL,
};

/* Checks common to both calls; on RL_OK the call is begun (rl__call_end). */
static int begin(scan *sc, rl_lock_list **out, rl_client *c, unsigned int version)
{
    int rc;

    rl__err_clear();
    if (!out || !c)
        return rl__err(RL_EINVAL, "out and client must not be NULL");
    if (version == 0 || version > RL_INFO_VERSION)
        return rl__err(RL_EINVAL, "rl_lock_list version %u is not one this library knows "
                       "(1..%d): pass RL_INFO_VERSION", version, RL_INFO_VERSION);
    if (!rl__registry_has(c))
        return rl__err(RL_EINVAL, "not a live client (freed already?)");
    if ((rc = rl__call_begin(c)) != RL_OK)
        return rc;
    memset(sc, 0, sizeof *sc);
    sc->c = c;
    sc->asked = version;
    if (!(sc->out = calloc(1, sizeof *sc->out))) {
        rl__call_end(c);
        return rl__err(RL_ENOMEM, "out of memory");
    }
    sc->out->pub.version = RL_INFO_VERSION;
    sc->out->pub.mode = public_mode[c->mode];
    return RL_OK;
}

/* Join the owners, sort, hand the list out (or drop it): the status. */
static int finish(scan *sc, rl_lock_list **out, int rc)
{
    size_t i, k;
    list_mem *l = sc->out;

    for (i = 0; rc == RL_OK && i < l->pub.count; i++)
        for (k = 0; k < l->locks[i]->nholders; k++)
            join_owner(sc, (rl__holder_mem *)l->locks[i]->holders[k]);
    for (i = 0; i < RL__SERVERS_MAX; i++)
        if (sc->conn[i])
            rl__pool_put(sc->c, sc->conn[i]);
    free(sc->owners);
    rl__call_end(sc->c);
    if (rc != RL_OK) {
        rl_lock_list_free(&l->pub);
        return rc == RL_ENOMEM ? rl__err(rc, "out of memory") : rc;
    }
    if (l->pub.count)
        qsort(l->locks, l->pub.count, sizeof *l->locks, by_name);
    rl__info_as_layout(l->locks, l->pub.count, sc->asked);
    *out = &l->pub;
    if (sc->status != RL_OK)
        return rl__err(sc->status, "%s", l->pub.failures ? l->pub.failures[0] : "");
    return RL_OK;
}

int rl_client_list_locks(rl_lock_list **out, rl_client *client, const char *pattern,
                         unsigned int version)
{
    rl__server *m[RL__SERVERS_MAX];
    scan sc;
    int i, n, rc;

    if (pattern && strlen(pattern) > RL_NAME_MAX) {
        rl__err_clear();
        return rl__err(RL_EINVAL, "a pattern is at most %d bytes", RL_NAME_MAX);
    }
    if ((rc = begin(&sc, out, client, version)) != RL_OK)
        return rc;
    n = masters(client, m);
    for (i = 0; i < n && rc == RL_OK; i++)
        rc = scan_server(&sc, m[i], pattern ? pattern : "*");
    return finish(&sc, out, rc);
}

/* The key of a name, as holds.c makes it, and the masters that keep it. */
static char *key_of(rl_client *c, const void *name, size_t len, size_t *klen,
                    rl__server **m, int *n)
{
    rl__entry *e;
    char *key = NULL;

    pthread_mutex_lock(&c->mu);
    if ((e = rl__entry_get(c, name, len)) != NULL) {
        key = rl__memdup(e->key, e->key_len + 1);
        *klen = e->key_len;
        if (c->mode == RL__MODE_CLUSTER)
            m[0] = rl__route_server(c, e->slot);
        rl__entry_maybe_free(c, e);
    }
    pthread_mutex_unlock(&c->mu);
    if (key && c->mode != RL__MODE_CLUSTER)
        *n = masters(c, m);
    else
        *n = key && m[0];
    return key;
}

int rl_client_inspect_lock(rl_lock_list **out, rl_client *client, const void *name, size_t len,
                           unsigned int version)
{
    rl__server *m[RL__SERVERS_MAX] = { NULL };
    size_t klen = 0;
    char *key;
    scan sc;
    int i, n = 0, rc;

    if (!name || len == 0 || len > RL_NAME_MAX) {
        rl__err_clear();
        return rl__err(RL_EINVAL, "lock name must be 1..%d bytes, not %zu", RL_NAME_MAX,
                       name ? len : 0);
    }
    if ((rc = begin(&sc, out, client, version)) != RL_OK)
        return rc;
    if (!(key = key_of(client, name, len, &klen, m, &n)))
        rc = RL_ENOMEM;
    else if (n == 0)
        failed_at(&sc, "cluster", RL_ECONN, "", "no master is known for the name's slot");
    for (i = 0; i < n && rc == RL_OK; i++)
        rc = read_lock(&sc, m[i], key, klen);
    free(key);
    return finish(&sc, out, rc);
}

void rl_lock_list_free(rl_lock_list *list)
{
    list_mem *l = (list_mem *)list;
    size_t i;

    if (!l)
        return;
    for (i = 0; i < l->pub.count; i++)
        rl__info_free((rl__info_mem *)l->locks[i]);
    for (i = 0; i < l->pub.nfailures; i++)
        free(l->failures[i]);
    free(l->failures);
    free(l->locks);
    free(l);
}
