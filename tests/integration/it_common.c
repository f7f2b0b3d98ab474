#include "it_common.h"
#include "proxy.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int setup_with(void **state, const char *args)
{
    it_env *e = calloc(1, sizeof *e);

    if (e == NULL)
        return -1;
    if (rt_redis_open("it", args, &e->redis, &e->rc) != 0) {
        free(e);
        return -1;
    }
    *state = e;
    return 0;
}

int it_setup(void **state)
{
    return setup_with(state, NULL);
}

int it_setup_auth(void **state)
{
    return setup_with(state, "--requirepass " IT_PASSWORD);
}

int it_teardown(void **state)
{
    it_env *e = *state;

    if (e == NULL)
        return 0;
    if (e->rc != NULL)
        redisFree(e->rc);
    rt_redis_stop(e->redis);
    free(e);
    *state = NULL;
    return 0;
}

#define IT_CLUSTER_OK_WITHIN_MS 10000

static int cluster_ok(redisContext *rc)
{
    redisReply *r = redisCommand(rc, "CLUSTER INFO");
    int ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok") != NULL;

    freeReplyObject(r);
    return ok;
}

int it_setup_cluster_node(void **state)
{
    it_env *e = calloc(1, sizeof *e);
    char args[160];
    redisReply *r;
    /* The bus port: the default, port + 10000, may lie past 65535 or be taken. */
    int bus = rt_free_port();

    if (e == NULL || bus < 0) {
        free(e);
        return -1;
    }
    snprintf(args, sizeof args,
             "--cluster-enabled yes --cluster-config-file nodes.conf --cluster-port %d", bus);
    if (rt_redis_open("cluster_node", args, &e->redis, &e->rc) != 0) {
        free(e);
        return -1;
    }
    *state = e;
    r = redisCommand(e->rc, "CLUSTER ADDSLOTSRANGE 0 16383");
    if (!r || r->type != REDIS_REPLY_STATUS) {
        fprintf(stderr, "cluster_node: CLUSTER ADDSLOTSRANGE: %s\n",
                r && r->type == REDIS_REPLY_ERROR ? r->str : "no reply");
        freeReplyObject(r);
        it_teardown(state);
        return -1;
    }
    freeReplyObject(r);
    if (!RT_WAIT_UNTIL(cluster_ok(e->rc), IT_CLUSTER_OK_WITHIN_MS)) {
        fprintf(stderr, "cluster_node: cluster_state not ok after %d ms\n",
                IT_CLUSTER_OK_WITHIN_MS);
        it_teardown(state);
        return -1;
    }
    return 0;
}

void it_options(rl_options *o, const char *url, long lease_ms, long command_timeout_ms)
{
    if (rl_options_init(o, RL_OPTIONS_VERSION) != RL_OK)
        fail_msg("rl_options_init failed");
    o->url = url;
    o->lease_ms = lease_ms;
    o->command_timeout_ms = command_timeout_ms;
}

rl_client *it_client_opts(const rl_options *o)
{
    rl_client *c = NULL;
    int rc = rl_client_new(&c, o);

    if (rc != RL_OK || c == NULL)
        fail_msg("rl_client_new(%s) = %d (%s): %s", o->url ? o->url : "(default)", rc,
                 rl_strerror(rc), rl_last_error());
    return c;
}

rl_client *it_client(it_env *e, long lease_ms)
{
    rl_options o;
    it_options(&o, e->redis->url, lease_ms, 0);
    return it_client_opts(&o);
}

rl_stats it_stats(rl_client *c)
{
    rl_stats st;

    memset(&st, 0, sizeof st);
    st.version = RL_STATS_VERSION;
    IT_RC(rl_client_stats(&st, c), RL_OK);
    return st;
}

rl_lock *it_lock(rl_client *c, const char *name)
{
    rl_lock *l = NULL;
    int rc = rl_lock_new(&l, c, name);

    if (rc != RL_OK || l == NULL)
        fail_msg("rl_lock_new(%s) = %d (%s)", name, rc, rl_strerror(rc));
    return l;
}

size_t it_key(char *buf, size_t cap, const char *prefix, const void *name, size_t name_len,
              const char *suffix)
{
    const char *n = name;
    /* src/holds.c: a name starting with '}' or a backslash gets a backslash in front. */
    size_t esc = name_len && (n[0] == '}' || n[0] == '\\');
    size_t pl = strlen(prefix), sl = suffix ? strlen(suffix) : 0;
    size_t len = pl + 1 + esc + name_len + 1 + sl;

    if (len + 1 > cap)
        fail_msg("it_key: buffer too small");
    memcpy(buf, prefix, pl);
    buf[pl] = '{';
    if (esc)
        buf[pl + 1] = '\\';
    memcpy(buf + pl + 1 + esc, name, name_len);
    buf[pl + 1 + esc + name_len] = '}';
    if (sl > 0)
        memcpy(buf + pl + 2 + esc + name_len, suffix, sl);
    buf[len] = '\0';
    return len;
}

int it_hgetall(redisContext *c, const void *key, size_t key_len, it_hash *out)
{
    redisReply *rep = redisCommand(c, "HGETALL %b", key, key_len);

    memset(out, 0, sizeof *out);
    if (rep == NULL)
        return -1;
    out->type = rep->type;
    if (rep->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(rep);
        return -1;
    }
    out->fields = rep->elements / 2;
    if (rep->elements >= 2) {
        redisReply *f = rep->element[0], *v = rep->element[1];
        size_t n = f->len < sizeof out->field - 1 ? f->len : sizeof out->field - 1;
        memcpy(out->field, f->str, n);
        out->field[n] = '\0';
        out->field_len = f->len;
        const char *sp;
        n = v->len < sizeof out->raw - 1 ? v->len : sizeof out->raw - 1;
        memcpy(out->raw, v->str, n);
        out->raw[n] = '\0';
        /* "<count> <since_ms>" (src/lua/lib/hold_value.lua): value is the count. */
        sp = strchr(out->raw, ' ');
        out->since_ms = sp ? strtoll(sp + 1, NULL, 10) : -1;
        n = sp ? (size_t)(sp - out->raw) : n;
        if (n > sizeof out->value - 1)
            n = sizeof out->value - 1;
        memcpy(out->value, out->raw, n);
        out->value[n] = '\0';
    } else {
        out->since_ms = -1;
    }
    freeReplyObject(rep);
    return 0;
}

int it_owner_field_ok(const char *field, size_t len)
{
    size_t i;

    /* 8-4-4-4-12 hex digits, ':', then one or more decimal digits. */
    if (len < 38)
        return 0;
    for (i = 0; i < 36; i++) {
        int dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? field[i] != '-' : !isxdigit((unsigned char)field[i]))
            return 0;
    }
    if (field[36] != ':')
        return 0;
    for (i = 37; i < len; i++) {
        if (!isdigit((unsigned char)field[i]))
            return 0;
    }
    return 1;
}

void it_type(redisContext *c, const void *key, size_t key_len, char *buf, size_t cap)
{
    redisReply *rep = redisCommand(c, "TYPE %b", key, key_len);

    snprintf(buf, cap, "%s",
             rep != NULL && rep->type == REDIS_REPLY_STATUS ? rep->str : "(error)");
    if (rep != NULL)
        freeReplyObject(rep);
}

const char *it_describe(redisContext *c, const void *key, size_t key_len, char *buf,
                        size_t cap)
{
    it_hash h;
    if (it_hgetall(c, key, key_len, &h) != 0)
        snprintf(buf, cap, "(HGETALL failed, reply type %d)", h.type);
    else
        snprintf(buf, cap, "%zu field(s), first \"%s\" = \"%s\"", h.fields, h.field, h.value);
    return buf;
}

static void *acq_main(void *arg)
{
    it_acq *a = arg;

    a->t_call_us = rt_now_us();
    atomic_store(&a->state, 1);
    a->rc = rl_lock_try_acquire(a->lock, a->wait_ms, a->lease_ms);
    a->t_return_us = rt_now_us();
    if (a->rc == RL_OK) {
        if (a->inside != NULL && atomic_fetch_add(a->inside, 1) != 0 && a->overlap != NULL)
            atomic_store(a->overlap, 1);
        if (a->order != NULL)
            a->rank = atomic_fetch_add(a->order, 1) + 1;
        a->count_after = rl_lock_hold_count(a->lock);
    }
    atomic_store(&a->state, 2);
    if (a->rc == RL_OK) {
        if (a->hold)
            RT_WAIT_UNTIL(atomic_load(&a->go) != 0, 60000);
        if (a->inside != NULL)
            atomic_fetch_sub(a->inside, 1);
        a->release_rc = rl_lock_release(a->lock);
    }
    atomic_store(&a->state, 3);
    return NULL;
}

void it_acq_start(it_acq *a)
{
    atomic_init(&a->state, 0);
    atomic_init(&a->go, 0);
    if (pthread_create(&a->thread, NULL, acq_main, a) != 0)
        fail_msg("pthread_create failed");
    a->started = 1;
}

void it_acq_begin(it_acq *a, rl_lock *lock, long wait_ms, int hold)
{
    memset(a, 0, sizeof *a);
    a->lock = lock;
    a->wait_ms = wait_ms;
    a->lease_ms = RL_LEASE_WATCHDOG;
    a->hold = hold;
    it_acq_start(a);
}

void it_acq_let_go(it_acq *a)
{
    atomic_store(&a->go, 1);
}

int it_acq_join(it_acq *a, long timeout_ms)
{
    if (!a->started)
        return 0;
    if (!RT_WAIT_UNTIL(atomic_load(&a->state) == 3, timeout_ms))
        return -1;
    pthread_join(a->thread, NULL);
    a->started = 0;
    return 0;
}

struct on_thread {
    int (*fn)(void *);
    void *arg;
    int result;
    atomic_int done;
};

static void *on_thread_main(void *arg)
{
    struct on_thread *t = arg;
    t->result = t->fn(t->arg);
    atomic_store(&t->done, 1);
    return NULL;
}

int it_on_thread(int (*fn)(void *arg), void *arg, long timeout_ms)
{
    struct on_thread *t = calloc(1, sizeof *t);
    pthread_t th;
    int result;

    if (t == NULL)
        fail_msg("out of memory");
    t->fn = fn;
    t->arg = arg;
    atomic_init(&t->done, 0);
    if (pthread_create(&th, NULL, on_thread_main, t) != 0)
        fail_msg("pthread_create failed");
    if (!RT_WAIT_UNTIL(atomic_load(&t->done) != 0, timeout_ms)) {
        /* Leave the thread (and its record) alone: it may still run. */
        pthread_detach(th);
        fail_msg("thread did not finish within %ld ms", timeout_ms);
    }
    pthread_join(th, NULL);
    result = t->result;
    free(t);
    return result;
}

void it_proxied_open(it_proxied *p, it_env *e, const char *name, long lease_ms,
                     long timeout_ms)
{
    rl_options o;

    p->proxy = rt_proxy_start(e->redis->port);
    assert_non_null(p->proxy);
    it_options(&o, rt_proxy_url(p->proxy), lease_ms, timeout_ms);
    o.connect_timeout_ms = timeout_ms;
    p->c = it_client_opts(&o);
    p->l = it_lock(p->c, name);
    p->kl = it_key(p->key, sizeof p->key, "rl:", name, strlen(name), NULL);
}

void it_proxied_close(it_proxied *p)
{
    rl_lock_free(p->l);
    rl_client_free(p->c);
    rt_proxy_stop(p->proxy);
}
