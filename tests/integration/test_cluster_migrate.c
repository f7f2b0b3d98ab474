/*
 * Watchdog renewals in the middle of a slot migration on a real 3-master
 * cluster (tests/common/rt_cluster.h): the slot is IMPORTING on one master,
 * MIGRATING on another, and some or all of its keys have moved. No hold may
 * be flagged while its key is alive:
 *
 *  - a hold whose key moved to an importing node that has never run the
 *    renew script (SCRIPT FLUSH stands in for a new or restarted node): the
 *    renewal that follows ASK meets NOSCRIPT there;
 *  - two holds of one slot (one renewal call) whose keys straddle the
 *    migration: the source answers the call TRYAGAIN, and the calls of one
 *    key that replace it meet NOSCRIPT on a source that lost its scripts;
 *  - read holds of a read-write lock (two clients), and a writer waiting
 *    for them, while the lock's slot moves to another master key by key
 *    and back: its one hash, deadlines ("~d:") and the writer's intent
 *    ("~wi") with it, follows the slot, the holds are renewed there, new
 *    acquisitions mid-move succeed or wait, and the writer gets in after
 *    the readers (src/rwlock.c);
 *  - a fair lock (issue 21, item 1): a release and a waiter's acquire
 *    while the slot is MIGRATING with the keys still on the source, each
 *    dropping a dead waiter and so emptying the queue, run whole (the
 *    scripts before stopped after the delete: "non local key", the
 *    release applied and reported failed, and another client got in while
 *    the holder still believed it held); a fair hold without a queue, its
 *    release refused whole mid-move and its renewals following the key.
 *
 * One cluster serves the tests; each uses names of its own and finishes
 * its migration before it ends.
 */
#include "it_cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEASE_MS 1500
#define WATCH_MS (3 * LEASE_MS)     /* three leases, nine renewal ticks */

/* The first warning the library logged, for failure messages: the
 * watchdog's reason is the evidence of what went wrong. */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char first_warning[512];

static void on_log(int level, const char *message, void *payload)
{
    (void)payload;
    if (level > RL_LOG_WARN)
        return;
    pthread_mutex_lock(&log_mu);
    if (!first_warning[0])
        snprintf(first_warning, sizeof first_warning, "%s", message);
    pthread_mutex_unlock(&log_mu);
}

static const char *warning(void)
{
    static char copy[sizeof first_warning];

    pthread_mutex_lock(&log_mu);
    memcpy(copy, first_warning, sizeof copy);
    first_warning[0] = '\0';
    pthread_mutex_unlock(&log_mu);
    return copy[0] ? copy : "(none)";
}

static rl_client *cl_client_timed(const char *url, long command_timeout_ms)
{
    rl_options o;

    it_options(&o, url, LEASE_MS, command_timeout_ms);
    o.log = on_log;
    return it_client_opts(&o);
}

static rl_client *cl_client(const char *url)
{
    return cl_client_timed(url, 0);
}

/* A name's lock key and its slot. */
static int key_of(rt_cluster *cl, const char *name, char *key, size_t *kl)
{
    *kl = it_key(key, 2200, "rl:", name, strlen(name), NULL);
    return rt_cluster_keyslot(cl, key, *kl);
}

/* PTTL of a key on node i, after ASKING (the node may be importing its
 * slot); -2: absent (or ASK from a migrating source), -3: error. */
static long long pttl_on(rt_cluster *cl, int i, const char *key, size_t kl)
{
    redisContext *rc = rt_cluster_connect(cl, i);
    const char *argv[2] = { "PTTL", key };
    size_t lens[2] = { 4, kl };
    redisReply *r;
    long long ms = -3;

    if (!rc)
        return -3;
    r = redisCommand(rc, "ASKING");
    freeReplyObject(r);
    r = redisCommandArgv(rc, 2, argv, lens);
    if (r && r->type == REDIS_REPLY_INTEGER)
        ms = r->integer;
    else if (r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "ASK ", 4) == 0)
        ms = -2;        /* the migrating source sends us on: not here */
    freeReplyObject(r);
    redisFree(rc);
    return ms;
}

/* A plain command on node i; 0 when it answered OK (or NOKEY: nothing to
 * move), -1 otherwise, printing the reply. */
static int node_cmd(rt_cluster *cl, int i, int argc, const char **argv, const size_t *lens)
{
    redisContext *rc = rt_cluster_connect(cl, i);
    redisReply *r;
    int ok;

    if (!rc)
        return -1;
    r = redisCommandArgv(rc, argc, argv, lens);
    ok = r && r->type == REDIS_REPLY_STATUS;
    if (!ok)
        print_message("node %d: %s: %s\n", i, argv[0],
                      r && r->type == REDIS_REPLY_ERROR ? r->str : "no reply");
    freeReplyObject(r);
    redisFree(rc);
    return ok ? 0 : -1;
}

/* Watch the holds for `ms` (the time the scenario calls for, a few
 * renewal ticks): none may be flagged while their keys are alive. */
static void watch_holds(rl_lock **l, int n, long ms, const char *what)
{
    int64_t t0 = rt_now_ms(), until = t0 + ms;
    int i;

    while (rt_now_ms() < until) {
        for (i = 0; i < n; i++)
            if (rl_lock_interrupted(l[i]))
                fail_msg("%s: hold %d flagged after %lld ms; watchdog said: %s", what, i,
                         (long long)(rt_now_ms() - t0), warning());
        rt_sleep_ms(10);
    }
}

/* Finding A. The key of a lone hold moves to a master that has never run
 * the renew script: the renewal answered ASK is sent there as ASKING +
 * EVALSHA, meets NOSCRIPT, must load the scripts and ask again. */
static void test_ask_to_a_node_without_scripts(void **state)
{
    it_cluster *e = *state;
    rl_client *c = cl_client(e->cl->url);
    rl_lock *l = it_lock(c, "unscripted");
    const char *flush[2] = { "SCRIPT", "FLUSH" };
    size_t flush_lens[2] = { 6, 5 };
    char key[2200];
    size_t kl;
    int slot, from, to;

    slot = key_of(e->cl, "unscripted", key, &kl);
    assert_true(slot >= 0);
    from = rt_cluster_master_of(e->cl, slot);
    assert_true(from >= 0);
    to = (from + 1) % 3;
    IT_RC(rl_lock_try_acquire(l, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(node_cmd(e->cl, to, 2, flush, flush_lens), 0);

    /* Importing/migrating with the key moved, no SETSLOT NODE yet: every
     * renewal is answered ASK by the source. */
    IT_EQ(rt_cluster_slot_begin(e->cl, slot, to), 0);
    IT_EQ(rt_cluster_slot_move_keys(e->cl, slot), 0);
    IT_EQ(pttl_on(e->cl, from, key, kl), -2);
    watch_holds(&l, 1, WATCH_MS, "key moved to a node without scripts");
    /* Renewed there: more left than one lease less the time since. */
    IT_RANGE(pttl_on(e->cl, to, key, kl), LEASE_MS / 3, LEASE_MS);

    IT_EQ(rt_cluster_slot_finish(e->cl, slot, to), 0);
    IT_EQ(rl_lock_interrupted(l), 0);
    IT_RC(rl_lock_release(l), RL_OK);
    IT_EQ(pttl_on(e->cl, to, key, kl), -2);
    rl_lock_free(l);
    rl_client_free(c);
}

/* Finding B. Two holds of one slot, renewed by one call; only one key has
 * moved, so the source answers that call TRYAGAIN (it has some keys, not
 * all): the holds must be renewed one key per call, the moved one on the
 * importing node after ASK. */
static void test_chunk_straddling_a_migration(void **state)
{
    it_cluster *e = *state;
    rl_client *c = cl_client(e->cl->url);
    static const char *const names[2] = { "yb}1", "yb}2" };
    const char *flush[2] = { "SCRIPT", "FLUSH" };
    size_t flush_lens[2] = { 6, 5 };
    rl_lock *l[2];
    char key[2][2200], port[16], warm[32];
    size_t kl[2];
    int slot, from, to, i;

    for (i = 0; i < 2; i++) {
        slot = key_of(e->cl, names[i], key[i], &kl[i]);
        assert_true(slot >= 0);
        l[i] = it_lock(c, names[i]);
    }
    IT_EQ(rt_cluster_keyslot(e->cl, key[0], kl[0]), slot);     /* one tag, one slot */
    from = rt_cluster_master_of(e->cl, slot);
    assert_true(from >= 0);
    to = (from + 1) % 3;

    /* The importing node runs the scripts already (an acquire there loads
     * them), so that only the split is tested here, not NOSCRIPT. */
    for (i = 0; i < 1000; i++) {
        char wk[2200];
        size_t wl;
        int ws;
        snprintf(warm, sizeof warm, "warm-%d", i);
        ws = key_of(e->cl, warm, wk, &wl);
        if (ws >= 0 && ws != slot && rt_cluster_master_of(e->cl, ws) == to)
            break;
    }
    assert_true(i < 1000);
    {
        rl_lock *w = it_lock(c, warm);
        IT_RC(rl_lock_try_acquire(w, 0, 5000), RL_OK);
        IT_RC(rl_lock_release(w), RL_OK);
        rl_lock_free(w);
    }

    for (i = 0; i < 2; i++)
        IT_RC(rl_lock_try_acquire(l[i], 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rt_cluster_slot_begin(e->cl, slot, to), 0);
    /* MIGRATE the first key only: the slot now straddles the two nodes. */
    snprintf(port, sizeof port, "%d", e->cl->node[to]->port);
    {
        const char *argv[6] = { "MIGRATE", "127.0.0.1", port, key[0], "0", "5000" };
        size_t lens[6] = { 7, 9, strlen(port), kl[0], 1, 4 };
        IT_EQ(node_cmd(e->cl, from, 6, argv, lens), 0);
    }
    IT_EQ(pttl_on(e->cl, from, key[0], kl[0]), -2);
    IT_RANGE(pttl_on(e->cl, from, key[1], kl[1]), 1, LEASE_MS);
    /* And the source has lost its scripts (restarted, flushed): the one-key
     * calls meet NOSCRIPT there, which the whole call never shows (TRYAGAIN
     * is answered before a script is looked up). */
    IT_EQ(node_cmd(e->cl, from, 2, flush, flush_lens), 0);

    watch_holds(l, 2, WATCH_MS, "a slot's keys on two nodes");
    IT_RANGE(pttl_on(e->cl, to, key[0], kl[0]), LEASE_MS / 3, LEASE_MS);
    IT_RANGE(pttl_on(e->cl, from, key[1], kl[1]), LEASE_MS / 3, LEASE_MS);

    /* The rest follows; the whole call is then answered ASK. */
    IT_EQ(rt_cluster_slot_move_keys(e->cl, slot), 0);
    watch_holds(l, 2, LEASE_MS, "a slot's keys all moved");
    IT_EQ(rt_cluster_slot_finish(e->cl, slot, to), 0);
    for (i = 0; i < 2; i++) {
        IT_EQ(rl_lock_interrupted(l[i]), 0);
        IT_RC(rl_lock_release(l[i]), RL_OK);
        IT_EQ(pttl_on(e->cl, to, key[i], kl[i]), -2);
        rl_lock_free(l[i]);
    }
    rl_client_free(c);
}

/* ---- read-write holds across a slot migration ---------------------------- */

/* What a read-write lock's hash holds on node i (read after ASKING, beside
 * the node's TIME): found 1 (present), 0 (absent), -2 (the node sends us
 * on: ASK or MOVED), -1 (error); its holds by side; how many holds have a
 * "~d:" deadline still ahead, within one lease (renewed there); the
 * waiting writers' intents (in "~wi"). */
typedef struct rw_view {
    int found;
    int readers, writers, dated, intents;
} rw_view;

static rw_view view_on(rt_cluster *cl, int i, const char *key, size_t kl)
{
    redisContext *rc = rt_cluster_connect(cl, i);
    const char *argv[2] = { "HGETALL", key };
    size_t lens[2] = { 7, kl };
    rw_view v = { -1, 0, 0, 0, 0 };
    redisReply *r, *t;
    long long now;
    size_t a, b;

    if (!rc)
        return v;
    t = redisCommand(rc, "TIME");
    freeReplyObject(redisCommand(rc, "ASKING"));
    r = redisCommandArgv(rc, 2, argv, lens);
    if (t && t->type == REDIS_REPLY_ARRAY && t->elements == 2 && r) {
        now = atoll(t->element[0]->str) * 1000 + atoll(t->element[1]->str) / 1000;
        if (r->type == REDIS_REPLY_ERROR &&
            (strncmp(r->str, "ASK ", 4) == 0 || strncmp(r->str, "MOVED ", 6) == 0)) {
            v.found = -2;
        } else if (r->type == REDIS_REPLY_ARRAY) {
            v.found = r->elements > 0;
            for (a = 0; a + 1 < r->elements; a += 2) {
                const char *f = r->element[a]->str;
                size_t fl = r->element[a]->len;
                if (fl == 3 && memcmp(f, "~wi", 3) == 0) {
                    /* "<field> <deadline>" pairs joined by spaces */
                    const char *p = r->element[a + 1]->str;
                    int words = *p != '\0';
                    for (; (p = strchr(p, ' ')) != NULL; p++)
                        words++;
                    v.intents += words / 2;
                    continue;
                }
                if (fl == 0 || f[0] == '~')
                    continue;
                if (fl > 2 && memcmp(f + fl - 2, ":r", 2) == 0)
                    v.readers++;
                else
                    v.writers++;
                for (b = 0; b + 1 < r->elements; b += 2) {
                    const char *g = r->element[b]->str;
                    long long left;
                    if (r->element[b]->len != fl + 3 || memcmp(g, "~d:", 3) != 0 ||
                        memcmp(g + 3, f, fl) != 0)
                        continue;
                    left = atoll(r->element[b + 1]->str) - now;
                    if (left > 0 && left <= LEASE_MS)
                        v.dated++;
                }
            }
        }
    }
    freeReplyObject(t);
    freeReplyObject(r);
    redisFree(rc);
    return v;
}

static const char *view_str(rw_view v)
{
    static char buf[128];

    snprintf(buf, sizeof buf, "found=%d readers=%d writers=%d dated=%d intents=%d", v.found,
             v.readers, v.writers, v.dated, v.intents);
    return buf;
}

/* The hash on node i holds `readers` read holds and `writers` write holds,
 * every one with its deadline ahead, and `intents` intents. */
#define IT_VIEW(cl, i, key, kl, r, w, wi)                                          \
    do {                                                                           \
        rw_view it__v = view_on((cl), (i), (key), (kl));                           \
        if (it__v.found != 1 || it__v.readers != (r) || it__v.writers != (w) ||    \
            it__v.dated != (r) + (w) || it__v.intents != (wi))                     \
            fail_msg("node %d: %s; expected %d readers, %d writers, all dated, "   \
                     "%d intents",                                                 \
                     (i), view_str(it__v), (r), (w), (wi));                        \
    } while (0)

/* Keys of a slot on node `from` (which must be MIGRATING it), moved to
 * node `to` one MIGRATE each, with a lease of renewals between: whatever
 * keys a lock keeps, a script meets the slot's keys split between the two
 * nodes. Returns how many keys moved. */
static int move_keys_one_by_one(it_cluster *e, int slot, int from, int to, rl_lock **holds,
                                int n)
{
    char port[16], slot_s[16];
    int moved = 0;

    snprintf(port, sizeof port, "%d", e->cl->node[to]->port);
    snprintf(slot_s, sizeof slot_s, "%d", slot);
    for (;;) {
        redisContext *rc = rt_cluster_connect(e->cl, from);
        redisReply *r;
        char key[2200];
        size_t kl = 0;

        assert_non_null(rc);
        r = redisCommand(rc, "CLUSTER GETKEYSINSLOT %s 1", slot_s);
        assert_true(r && r->type == REDIS_REPLY_ARRAY);
        if (r->elements == 1 && r->element[0]->len < sizeof key) {
            kl = r->element[0]->len;
            memcpy(key, r->element[0]->str, kl);
        }
        freeReplyObject(r);
        redisFree(rc);
        if (kl == 0)
            break;
        {
            const char *argv[6] = { "MIGRATE", "127.0.0.1", port, key, "0", "5000" };
            size_t lens[6] = { 7, 9, strlen(port), kl, 1, 4 };
            IT_EQ(node_cmd(e->cl, from, 6, argv, lens), 0);
        }
        moved++;
        assert_true(moved < 10);
        watch_holds(holds, n, LEASE_MS, "a key of the slot moved");
    }
    return moved;
}

/* A new acquisition while the slot is mid-move: on the name held (readers
 * and a waiting writer's intent), a reader waits (RL_EBUSY, RL_ETIMEDOUT)
 * or gets in; on a fresh name of the same slot, both sides get in, and the
 * new key lands on the importing node. Never an error (RL_EREDIS: "non
 * local key", TRYAGAIN, BUSYKEY). */
static void acquire_mid_move(rl_client *c, int to, it_cluster *e, const char *what)
{
    rl_lock *r = NULL, *w = NULL, *fresh = NULL;
    char key[2200];
    size_t kl;
    int rc;

    IT_RC(rl_lock_new_kind(&r, c, "rwm}1", 5, RL_KIND_READ), RL_OK);
    IT_RC(rl_lock_new_kind(&w, c, "rwm}2", 5, RL_KIND_WRITE), RL_OK);
    IT_RC(rl_lock_new_kind(&fresh, c, "rwm}2", 5, RL_KIND_READ), RL_OK);

    rc = rl_lock_try_acquire(r, 0, LEASE_MS);
    if (rc != RL_OK && rc != RL_EBUSY)
        fail_msg("%s: a new reader (wait 0) got %d (%s): %s", what, rc, rl_strerror(rc),
                 rl_last_error());
    if (rc == RL_OK)
        IT_RC(rl_lock_release(r), RL_OK);
    rc = rl_lock_try_acquire(r, 300, LEASE_MS);
    if (rc != RL_OK && rc != RL_ETIMEDOUT)
        fail_msg("%s: a new reader (wait 300 ms) got %d (%s): %s", what, rc,
                 rl_strerror(rc), rl_last_error());
    if (rc == RL_OK)
        IT_RC(rl_lock_release(r), RL_OK);

    key_of(e->cl, "rwm}2", key, &kl);
    IT_RC(rl_lock_try_acquire(w, 0, LEASE_MS), RL_OK);
    IT_VIEW(e->cl, to, key, kl, 0, 1, 0);
    IT_RC(rl_lock_release(w), RL_OK);
    IT_RC(rl_lock_try_acquire(fresh, 0, LEASE_MS), RL_OK);
    IT_VIEW(e->cl, to, key, kl, 1, 0, 0);
    IT_RC(rl_lock_release(fresh), RL_OK);
    IT_EQ(view_on(e->cl, to, key, kl).found, 0);
    rl_lock_free(fresh);
    rl_lock_free(w);
    rl_lock_free(r);
}

/* One move of the slot from `from` to `to` with the readers holding and
 * the writer waiting: begin, new acquisitions, the keys one by one, new
 * acquisitions again and renewals on the importing node, then the finish
 * and renewals after it. The hash (holds with their deadlines, the
 * intent) is on `to` at the end. */
static void move_slot_held(it_cluster *e, rl_client *c, int slot, int from, int to,
                           rl_lock **holds, const char *key, size_t kl, it_acq *writer)
{
    IT_EQ(rt_cluster_slot_begin(e->cl, slot, to), 0);
    acquire_mid_move(c, to, e, "slot migrating, key not moved");
    IT_RANGE(move_keys_one_by_one(e, slot, from, to, holds, 2), 1, 9);
    IT_EQ(view_on(e->cl, from, key, kl).found, -2);    /* the source sends us on */
    acquire_mid_move(c, to, e, "slot migrating, key moved");
    watch_holds(holds, 2, WATCH_MS, "read holds on the importing node");
    IT_VIEW(e->cl, to, key, kl, 2, 0, 1);
    IT_EQ(rt_cluster_slot_finish(e->cl, slot, to), 0);
    watch_holds(holds, 2, 2 * LEASE_MS, "read holds after the slot moved");
    IT_VIEW(e->cl, to, key, kl, 2, 0, 1);
    IT_EQ(view_on(e->cl, from, key, kl).found, -2);    /* MOVED */
    IT_EQ(atomic_load(&writer->state), 1);             /* still waiting */
}

/* Two readers (two clients) hold "rwm}1" with the watchdog and a writer
 * (a third client) waits for them while the slot moves to another master
 * and back. The holds stay held and unflagged, renewed on whichever node
 * has the key; the writer gets in once the readers let go, and keeps
 * readers out while it holds. */
static void test_rw_holds_across_a_migration(void **state)
{
    it_cluster *e = *state;
    rl_client *ca = cl_client(e->cl->url), *cb = cl_client(e->cl->url);
    rl_client *cw = cl_client(e->cl->url), *cn = cl_client(e->cl->url);
    rl_lock *ra = NULL, *rb = NULL, *wl = NULL, *holds[2];
    static it_acq writer;       /* static: a failed test leaves its thread behind */
    char key[2200];
    size_t kl;
    int slot, from, to;

    slot = key_of(e->cl, "rwm}1", key, &kl);
    assert_true(slot >= 0);
    from = rt_cluster_master_of(e->cl, slot);
    assert_true(from >= 0);
    to = (from + 1) % 3;
    IT_RC(rl_lock_new_kind(&ra, ca, "rwm}1", 5, RL_KIND_READ), RL_OK);
    IT_RC(rl_lock_new_kind(&rb, cb, "rwm}1", 5, RL_KIND_READ), RL_OK);
    IT_RC(rl_lock_new_kind(&wl, cw, "rwm}1", 5, RL_KIND_WRITE), RL_OK);
    holds[0] = ra;
    holds[1] = rb;

    IT_RC(rl_lock_try_acquire(ra, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_try_acquire(rb, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_VIEW(e->cl, from, key, kl, 2, 0, 0);

    /* The writer waits, its intent in the hash. */
    memset(&writer, 0, sizeof writer);
    writer.lock = wl;
    writer.wait_ms = 60000;
    writer.lease_ms = RL_LEASE_WATCHDOG;
    writer.hold = 1;
    it_acq_start(&writer);
    IT_WAIT(view_on(e->cl, from, key, kl).intents == 1, 5000);
    IT_EQ(atomic_load(&writer.state), 1);

    move_slot_held(e, cn, slot, from, to, holds, key, kl, &writer);
    move_slot_held(e, cn, slot, to, from, holds, key, kl, &writer);
    IT_EQ(rl_lock_interrupted(ra), 0);
    IT_EQ(rl_lock_interrupted(rb), 0);
    IT_EQ(rl_lock_hold_count(ra), 1);
    IT_EQ(rl_lock_hold_count(rb), 1);

    /* The readers let go: the writer gets in, alone. */
    IT_RC(rl_lock_release(ra), RL_OK);
    IT_EQ(atomic_load(&writer.state), 1);
    IT_RC(rl_lock_release(rb), RL_OK);
    IT_WAIT(atomic_load(&writer.state) >= 2, 5000);
    IT_RC(writer.rc, RL_OK);
    IT_VIEW(e->cl, from, key, kl, 0, 1, 0);
    IT_RC(rl_lock_try_acquire(ra, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    IT_RC(rl_lock_try_acquire(rb, 200, RL_LEASE_WATCHDOG), RL_ETIMEDOUT);
    IT_VIEW(e->cl, from, key, kl, 0, 1, 0);
    it_acq_let_go(&writer);
    IT_EQ(it_acq_join(&writer, 5000), 0);
    IT_RC(writer.release_rc, RL_OK);

    /* And readers are back in. */
    IT_RC(rl_lock_try_acquire(ra, 2000, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_lock_release(ra), RL_OK);
    IT_EQ(view_on(e->cl, from, key, kl).found, 0);
    print_message("first warning the library logged: %s\n", warning());
    rl_lock_free(wl);
    rl_lock_free(rb);
    rl_lock_free(ra);
    rl_client_free(cn);
    rl_client_free(cw);
    rl_client_free(cb);
    rl_client_free(ca);
}

/* ---- fair holds across a slot migration ---------------------------------- */

/* A waiter whose process died: its place (in "rl:{N}:queue:t") has run
 * out, while the queue's keys still live. That is what a dead waiter
 * leaves when a later waiter's asks kept the keys alive (their expiry is
 * the latest place, src/lua/lib/fair_settle.lua) and that waiter then took
 * the name:
 * the next fair script drops the dead one and so empties the queue. */
#define DEAD_WAITER "00000000-0000-4000-8000-00000000dead:1"

/* An integer command on key "rl:{name}<suffix>" (and arg, unless NULL) on
 * node i, after ASKING: its reply; -1 for nil; -2 when the node sends us on
 * (ASK, MOVED); -3 on an error. */
static long long int_on(rt_cluster *cl, int i, const char *cmd, const char *name,
                        const char *suffix, const char *arg)
{
    redisContext *rc = rt_cluster_connect(cl, i);
    char key[2200];
    const char *argv[3] = { cmd, key, arg };
    size_t lens[3] = { strlen(cmd), it_key(key, sizeof key, "rl:", name, strlen(name), suffix),
                       arg ? strlen(arg) : 0 };
    redisReply *r;
    long long v = -3;

    if (!rc)
        return -3;
    freeReplyObject(redisCommand(rc, "ASKING"));
    r = redisCommandArgv(rc, arg ? 3 : 2, argv, lens);
    if (r && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    else if (r && r->type == REDIS_REPLY_NIL)
        v = -1;
    else if (r && r->type == REDIS_REPLY_ERROR &&
             (strncmp(r->str, "ASK ", 4) == 0 || strncmp(r->str, "MOVED ", 6) == 0))
        v = -2;
    freeReplyObject(r);
    redisFree(rc);
    return v;
}

/* Put DEAD_WAITER alone in name's queue on node i (the name's master),
 * its place run out a millisecond ago, the queue's keys alive for 20 s. */
static void plant_dead_waiter(rt_cluster *cl, int i, const char *name)
{
    redisContext *rc = rt_cluster_connect(cl, i);
    char q[2200], p[2200];
    size_t ql = it_key(q, sizeof q, "rl:", name, strlen(name), ":queue");
    size_t pl = it_key(p, sizeof p, "rl:", name, strlen(name), ":queue:t");
    redisReply *t, *r[4];
    long long now;
    int k;

    assert_non_null(rc);
    t = redisCommand(rc, "TIME");
    assert_true(t && t->type == REDIS_REPLY_ARRAY && t->elements == 2);
    now = atoll(t->element[0]->str) * 1000 + atoll(t->element[1]->str) / 1000;
    freeReplyObject(t);
    r[0] = redisCommand(rc, "ZADD %b 1 %s", q, ql, DEAD_WAITER);
    r[1] = redisCommand(rc, "ZADD %b %lld %s", p, pl, now - 1, DEAD_WAITER);
    r[2] = redisCommand(rc, "PEXPIRE %b 20000", q, ql);
    r[3] = redisCommand(rc, "PEXPIRE %b 20000", p, pl);
    for (k = 0; k < 4; k++) {
        if (!r[k] || r[k]->type != REDIS_REPLY_INTEGER || r[k]->integer != 1)
            fail_msg("planting a dead waiter: command %d: %s", k,
                     r[k] && r[k]->type == REDIS_REPLY_ERROR ? r[k]->str : "no 1");
        freeReplyObject(r[k]);
    }
    redisFree(rc);
}

/* What a holder's release mid-migration left: the call's status, the
 * holder's count and flag just after it, and how many fields the lock's
 * hash kept on the source (-2: gone, the source sends us on). */
typedef struct fair_release_seen {
    int rc, count, flag;
    long long fields;
    char detail[256];
} fair_release_seen;

static fair_release_seen release_mid_move(rl_lock *l, rt_cluster *cl, int from,
                                          const char *name)
{
    fair_release_seen s;

    s.rc = rl_lock_release(l);
    snprintf(s.detail, sizeof s.detail, "%s", s.rc == RL_OK ? "" : rl_last_error());
    s.count = rl_lock_hold_count(l);
    s.flag = rl_lock_interrupted(l);
    s.fields = int_on(cl, from, "HLEN", name, "", NULL);
    print_message("fair release mid-migration: %d (%s: %s), count %d, flag %d, fields on the "
                  "source %lld\n", s.rc, rl_strerror(s.rc), s.detail, s.count, s.flag, s.fields);
    return s;
}

/* Refused whole (a status that says so, the holder's field still there,
 * the count still 1, no flag) or done (RL_OK, count 0, the field gone):
 * never applied and reported failed. */
static int release_consistent(const fair_release_seen *s)
{
    if (s->rc == RL_OK)
        return s->count == 0 && s->fields == -2;
    return s->count == 1 && s->flag == 0 && s->fields == 1;
}

/* Another client (other, a fair handle on the name) tries the name every
 * 10 ms for up to ms; holder is the old holder's handle (this thread's).
 * Returns the ms until other got in (-1: never), and sets *believed when
 * the old holder still believed it held then (count 1, no flag), and
 * *flag_ms to the ms from then until its flag rose (-1: not within ms). */
static long long other_gets_in(rl_lock *other, rl_lock *holder, long ms, int *believed,
                               long long *flag_ms)
{
    int64_t t0 = rt_now_ms(), in = -1;

    *believed = 0;
    *flag_ms = -1;
    while (rt_now_ms() < t0 + ms) {
        if (in < 0 && rl_lock_try_acquire(other, 0, RL_LEASE_WATCHDOG) == RL_OK) {
            in = rt_now_ms();
            *believed = rl_lock_hold_count(holder) > 0 && !rl_lock_interrupted(holder);
            if (!*believed)
                break;
        }
        if (in >= 0 && rl_lock_interrupted(holder)) {
            *flag_ms = rt_now_ms() - in;
            break;
        }
        rt_sleep_ms(10);
    }
    if (in >= 0)
        IT_RC(rl_lock_release(other), RL_OK);
    return in < 0 ? -1 : in - t0;
}

/* The slot's keys moved to `to` and the slot given to it. */
static void finish_move(it_cluster *e, int slot, int to)
{
    IT_EQ(rt_cluster_slot_move_keys(e->cl, slot), 0);
    IT_EQ(rt_cluster_slot_finish(e->cl, slot, to), 0);
}

/* Issue 21, item 1. A fair holder releases while its name's slot is
 * MIGRATING, its keys all still on the source, the queue holding a dead
 * waiter only: the release script drops the holder's field (the lock key
 * with it), drops the dead waiter (the queue's keys with it), and must
 * not touch a key it deleted (Redis: "non local key", after the delete).
 * Then another client tries the name: it may get in only once the old
 * holder no longer believes it holds. */
static void test_fair_release_mid_migration(void **state)
{
    it_cluster *e = *state;
    rl_client *ca = cl_client(e->cl->url), *cc = cl_client(e->cl->url);
    rl_lock *a = NULL, *other = NULL;
    fair_release_seen s;
    char key[2200];
    size_t kl;
    int slot, from, to, believed;
    long long in_ms, flag_ms;

    slot = key_of(e->cl, "fairm}r", key, &kl);
    assert_true(slot >= 0);
    from = rt_cluster_master_of(e->cl, slot);
    assert_true(from >= 0);
    to = (from + 1) % 3;
    IT_RC(rl_lock_new_kind(&a, ca, "fairm}r", 7, RL_KIND_FAIR), RL_OK);
    IT_RC(rl_lock_new_kind(&other, cc, "fairm}r", 7, RL_KIND_FAIR), RL_OK);

    IT_RC(rl_lock_try_acquire(a, 0, RL_LEASE_WATCHDOG), RL_OK);
    plant_dead_waiter(e->cl, from, "fairm}r");
    IT_EQ(rt_cluster_slot_begin(e->cl, slot, to), 0);
    s = release_mid_move(a, e->cl, from, "fairm}r");
    finish_move(e, slot, to);
    in_ms = other_gets_in(other, a, 3 * LEASE_MS, &believed, &flag_ms);
    if (believed)
        print_message("another client got in %lld ms after the move, the old holder still "
                      "believing it held; its flag rose %lld ms later\n", in_ms, flag_ms);
    else
        print_message("another client got in %lld ms after the move\n", in_ms);

    if (!release_consistent(&s))
        fail_msg("release mid-migration: %d (%s: %s), count %d, flag %d, fields on the "
                 "source %lld: applied and reported failed", s.rc, rl_strerror(s.rc),
                 s.detail, s.count, s.flag, s.fields);
    if (believed)
        fail_msg("another client got in %lld ms after the migration while the old holder "
                 "still believed it held (its flag rose %lld ms later)", in_ms, flag_ms);
    IT_EQ(s.rc, RL_OK);        /* the keys were all on the source: done, not refused */
    IT_RANGE(in_ms, 0, LEASE_MS);
    IT_EQ(int_on(e->cl, to, "EXISTS", "fairm}r", ":queue", NULL), 0);
    IT_EQ(int_on(e->cl, to, "EXISTS", "fairm}r", ":queue:t", NULL), 0);
    rl_lock_free(other);
    rl_lock_free(a);
    rl_client_free(cc);
    rl_client_free(ca);
}

/* The acquire's side: while the slot is MIGRATING (keys on the source), a
 * waiter asks for the held name with a dead waiter alone in the queue:
 * the script drops it (the queue's keys go), then queues the caller. It
 * must wait, never fail ("non local key"); once the holder releases, it
 * gets the name, on the new master after the slot moved. */
static void test_fair_acquire_mid_migration(void **state)
{
    it_cluster *e = *state;
    rl_client *ca = cl_client(e->cl->url), *cw = cl_client(e->cl->url);
    rl_lock *a = NULL, *w = NULL;
    static it_acq waiter;       /* static: a failed test leaves its thread behind */
    fair_release_seen s;
    char key[2200];
    size_t kl;
    int slot, from, to;

    slot = key_of(e->cl, "fairm}a", key, &kl);
    assert_true(slot >= 0);
    from = rt_cluster_master_of(e->cl, slot);
    assert_true(from >= 0);
    to = (from + 1) % 3;
    IT_RC(rl_lock_new_kind(&a, ca, "fairm}a", 7, RL_KIND_FAIR), RL_OK);
    IT_RC(rl_lock_new_kind(&w, cw, "fairm}a", 7, RL_KIND_FAIR), RL_OK);

    IT_RC(rl_lock_try_acquire(a, 0, RL_LEASE_WATCHDOG), RL_OK);
    plant_dead_waiter(e->cl, from, "fairm}a");
    IT_EQ(rt_cluster_slot_begin(e->cl, slot, to), 0);
    it_acq_begin(&waiter, w, 60000, 1);
    /* Queued in the dead one's stead, or returned. */
    IT_WAIT(atomic_load(&waiter.state) >= 2 ||
            (int_on(e->cl, from, "ZCARD", "fairm}a", ":queue", NULL) == 1 &&
             int_on(e->cl, from, "ZCARD", "fairm}a", ":queue:t", NULL) == 1 &&
             int_on(e->cl, from, "ZRANK", "fairm}a", ":queue", DEAD_WAITER) == -1), 5000);
    if (atomic_load(&waiter.state) >= 2) {
        finish_move(e, slot, to);
        fail_msg("a waiting acquire mid-migration returned %d (%s) after %lld ms",
                 waiter.rc, rl_strerror(waiter.rc),
                 (long long)(waiter.t_return_us - waiter.t_call_us) / 1000);
    }
    watch_holds(&a, 1, LEASE_MS, "a fair hold, a waiter queued mid-migration");
    IT_EQ(atomic_load(&waiter.state), 1);

    /* The queue holds the waiter: the release runs on the source, whole. */
    s = release_mid_move(a, e->cl, from, "fairm}a");
    IT_RC(s.rc, RL_OK);
    IT_EQ(s.count, 0);
    finish_move(e, slot, to);
    IT_WAIT(atomic_load(&waiter.state) >= 2, 5000);
    IT_RC(waiter.rc, RL_OK);
    IT_EQ(int_on(e->cl, to, "HLEN", "fairm}a", "", NULL), 1);
    IT_RC(rl_lock_try_acquire(a, 0, RL_LEASE_WATCHDOG), RL_EBUSY);
    it_acq_let_go(&waiter);
    IT_EQ(it_acq_join(&waiter, 5000), 0);
    IT_RC(waiter.release_rc, RL_OK);
    IT_EQ(int_on(e->cl, to, "EXISTS", "fairm}a", "", NULL), 0);
    IT_EQ(int_on(e->cl, to, "EXISTS", "fairm}a", ":queue", NULL), 0);
    rl_lock_free(w);
    rl_lock_free(a);
    rl_client_free(cw);
    rl_client_free(ca);
}

/* A fair hold (watchdog) with no queue while its slot moves: a reentry and
 * its release are served mid-move (one-key scripts); the last release
 * declares three keys of which only the lock's is there, and is
 * refused whole (TRYAGAIN until the command timeout): the hold stays, its
 * field too, renewed on whichever node has the key as it moves; after the
 * move the release is done and another client gets in. (The watchdog
 * leaves a hold alone while it is being released: the holder's command
 * timeout is a third of the lease here, so that the refused release does
 * not outlast the lease.) */
static void test_fair_hold_across_a_migration(void **state)
{
    it_cluster *e = *state;
    rl_client *ca = cl_client_timed(e->cl->url, LEASE_MS / 3), *cc = cl_client(e->cl->url);
    rl_lock *a = NULL, *other = NULL;
    fair_release_seen s;
    char key[2200];
    size_t kl;
    int slot, from, to, believed;
    long long in_ms, flag_ms;

    slot = key_of(e->cl, "fairm}h", key, &kl);
    assert_true(slot >= 0);
    from = rt_cluster_master_of(e->cl, slot);
    assert_true(from >= 0);
    to = (from + 1) % 3;
    IT_RC(rl_lock_new_kind(&a, ca, "fairm}h", 7, RL_KIND_FAIR), RL_OK);
    IT_RC(rl_lock_new_kind(&other, cc, "fairm}h", 7, RL_KIND_FAIR), RL_OK);

    IT_RC(rl_lock_try_acquire(a, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rt_cluster_slot_begin(e->cl, slot, to), 0);
    /* A reentry and a release that leaves a count: one-key scripts, served. */
    IT_RC(rl_lock_try_acquire(a, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_EQ(rl_lock_hold_count(a), 2);
    IT_RC(rl_lock_release(a), RL_OK);
    s = release_mid_move(a, e->cl, from, "fairm}h");
    if (!release_consistent(&s))
        fail_msg("release mid-migration: %d (%s: %s), count %d, flag %d, fields on the "
                 "source %lld: applied and reported failed", s.rc, rl_strerror(s.rc),
                 s.detail, s.count, s.flag, s.fields);
    IT_RC(s.rc, RL_ECONN);      /* refused (TRYAGAIN), nothing changed */
    watch_holds(&a, 1, LEASE_MS, "a fair hold after its release was refused");
    IT_EQ(rl_lock_try_acquire(other, 0, RL_LEASE_WATCHDOG) == RL_OK, 0);

    IT_EQ(rt_cluster_slot_move_keys(e->cl, slot), 0);
    IT_EQ(int_on(e->cl, from, "HLEN", "fairm}h", "", NULL), -2);
    watch_holds(&a, 1, WATCH_MS, "a fair hold moved to the importing node");
    IT_RANGE(int_on(e->cl, to, "PTTL", "fairm}h", "", NULL), LEASE_MS / 3, LEASE_MS);
    IT_EQ(rt_cluster_slot_finish(e->cl, slot, to), 0);
    watch_holds(&a, 1, LEASE_MS, "a fair hold after its slot moved");
    IT_EQ(rl_lock_hold_count(a), 1);
    IT_RC(rl_lock_release(a), RL_OK);
    in_ms = other_gets_in(other, a, 3 * LEASE_MS, &believed, &flag_ms);
    IT_EQ(believed, 0);
    IT_RANGE(in_ms, 0, LEASE_MS);
    rl_lock_free(other);
    rl_lock_free(a);
    rl_client_free(cc);
    rl_client_free(ca);
}

/* ---- two masters that send a name's slot to each other ---------------- */

/* Where node i sends a GET of key: the port a MOVED names, 0 when it
 * would serve it, -1 on error. */
static int sends_to(rt_cluster *cl, int i, const char *key, size_t kl)
{
    redisContext *rc = rt_cluster_connect(cl, i);
    const char *argv[2] = { "GET", key };
    size_t lens[2] = { 3, kl };
    redisReply *r = rc ? redisCommandArgv(rc, 2, argv, lens) : NULL;
    const char *colon;
    int port = -1;

    if (r && r->type != REDIS_REPLY_ERROR)
        port = 0;
    else if (r && strncmp(r->str, "MOVED ", 6) == 0 && (colon = strrchr(r->str, ':')) != NULL)
        port = atoi(colon + 1);
    freeReplyObject(r);
    if (rc)
        redisFree(rc);
    return port;
}

#define CIRCLE_MS 400    /* how long the two masters send the slot round */

typedef struct circle {
    rt_cluster *cl;
    int a;
    int64_t close_at;
    const char *setslot[5];
    size_t lens[5];
    int rc;
} circle;

/* At close_at, the circle's end: `a` takes the slot back. */
static void *close_circle(void *arg)
{
    circle *k = arg;
    int64_t left = k->close_at - rt_now_ms();

    if (left > 0)
        rt_sleep_ms(left);
    k->rc = node_cmd(k->cl, k->a, 5, k->setslot, k->lens);
    return NULL;
}

/* Master A gives a name's (empty) slot to B, while B still believes A owns
 * it: each answers MOVED to the other, as two masters do for a moment in a
 * failover or a migration half seen. `k` is made ready to end the circle. */
static void start_circle(it_cluster *e, const char *name, circle *k)
{
    char key[2200];
    static char slotstr[16];
    const char *give[5] = { "CLUSTER", "SETSLOT", slotstr, "NODE", NULL };
    size_t kl, glens[5];
    int slot = key_of(e->cl, name, key, &kl), a, b, i;

    assert_true(slot >= 0);
    a = rt_cluster_master_of(e->cl, slot);
    assert_true(a >= 0);
    b = (a + 1) % 3;
    snprintf(slotstr, sizeof slotstr, "%d", slot);
    give[4] = e->cl->id[b];
    for (i = 0; i < 5; i++)
        glens[i] = strlen(give[i]);
    memset(k, 0, sizeof *k);
    k->cl = e->cl;
    k->a = a;
    memcpy(k->setslot, give, sizeof give);
    k->setslot[4] = e->cl->id[a];
    for (i = 0; i < 5; i++)
        k->lens[i] = strlen(k->setslot[i]);
    IT_EQ(node_cmd(e->cl, a, 5, give, glens), 0);      /* A: "B owns it" */
    /* The circle: A sends the key to B, B back to A. */
    IT_EQ(sends_to(e->cl, a, key, kl), e->cl->node[b]->port);
    IT_EQ(sends_to(e->cl, b, key, kl), e->cl->node[a]->port);
}

/* The library, past its redirect limit, waits for the cluster to settle
 * (pausing, asking for the slot map again) within the call's time (an
 * acquisition's wait; the command timeout for a release), rather than
 * failing at once with RL_EREDIS: once A takes the slot back, the
 * acquisition succeeds. */
static void test_redirect_circle_waits_for_the_cluster(void **state)
{
    it_cluster *e = *state;
    rl_client *c = cl_client_timed(e->cl->url, 5000);
    rl_lock *l = it_lock(c, "circle-1");
    char key[2200];
    size_t kl;
    pthread_t th;
    circle k;
    int64_t t0, took;
    int rc;

    key_of(e->cl, "circle-1", key, &kl);
    /* The client learns the map before the circle: its first try goes to A. */
    IT_RC(rl_lock_try_acquire(l, 0, 1000), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    start_circle(e, "circle-1", &k);
    t0 = rt_now_ms();
    k.close_at = t0 + CIRCLE_MS;
    IT_EQ(pthread_create(&th, NULL, close_circle, &k), 0);
    rc = rl_lock_try_acquire(l, 3000, 1000);
    took = rt_now_ms() - t0;
    print_message("%s %lld ms into a circle of %d ms%s%s\n", rc == RL_OK ? "acquired" : "failed",
                  (long long)took, CIRCLE_MS, rc == RL_OK ? "" : ": ",
                  rc == RL_OK ? "" : rl_last_error());
    pthread_join(th, NULL);
    IT_EQ(k.rc, 0);
    IT_RC(rc, RL_OK);
    assert_true(took >= CIRCLE_MS);     /* it was sent round, not served */
    IT_EQ(sends_to(e->cl, (k.a + 1) % 3, key, kl), e->cl->node[k.a]->port);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);
}

#define SHUT_AT_MS 300      /* into a circle of LONG_CIRCLE_MS */
#define LONG_CIRCLE_MS 2000

typedef struct circling {
    rl_lock *l;
    int rc;
    int64_t done_at;
} circling;

static void *acquire_in_circle(void *arg)
{
    circling *w = arg;

    w->rc = rl_lock_try_acquire(w->l, 10000, 1000);
    w->done_at = rt_now_ms();
    return NULL;
}

/* A call waiting for the cluster to settle notices a shutdown at its next
 * pause (at most 200 ms), not at the end of its wait or command timeout:
 * the shutdown, which waits for calls in flight, is not held up by it. */
static void test_shutdown_ends_a_wait_for_the_cluster(void **state)
{
    it_cluster *e = *state;
    rl_client *c = cl_client_timed(e->cl->url, 10000);
    rl_lock *l = it_lock(c, "circle-2");
    pthread_t th, closer;
    circling w = { l, 0, 0 };
    circle k;
    int64_t t0, shut_at, shut_took;

    IT_RC(rl_lock_try_acquire(l, 0, 1000), RL_OK);
    IT_RC(rl_lock_release(l), RL_OK);
    start_circle(e, "circle-2", &k);
    t0 = rt_now_ms();
    k.close_at = t0 + LONG_CIRCLE_MS;
    IT_EQ(pthread_create(&closer, NULL, close_circle, &k), 0);
    IT_EQ(pthread_create(&th, NULL, acquire_in_circle, &w), 0);
    rt_sleep_ms(SHUT_AT_MS);            /* the fault's timing, not a wait for a condition */
    shut_at = rt_now_ms();
    IT_RC(rl_client_shutdown(c), RL_OK);
    shut_took = rt_now_ms() - shut_at;
    pthread_join(th, NULL);
    print_message("shutdown took %lld ms; the call returned %d, %lld ms after it, "
                  "in a circle of %d ms\n", (long long)shut_took, w.rc,
                  (long long)(w.done_at - shut_at), LONG_CIRCLE_MS);
    pthread_join(closer, NULL);
    IT_EQ(k.rc, 0);
    IT_RC(w.rc, RL_ECANCELED);
    assert_true(w.done_at - shut_at < LONG_CIRCLE_MS - SHUT_AT_MS - 1000);
    assert_true(shut_took < LONG_CIRCLE_MS - SHUT_AT_MS - 1000);
    rl_lock_free(l);
    rl_client_free(c);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ask_to_a_node_without_scripts),
        cmocka_unit_test(test_chunk_straddling_a_migration),
        cmocka_unit_test(test_rw_holds_across_a_migration),
        cmocka_unit_test(test_fair_release_mid_migration),
        cmocka_unit_test(test_fair_acquire_mid_migration),
        cmocka_unit_test(test_fair_hold_across_a_migration),
        cmocka_unit_test(test_redirect_circle_waits_for_the_cluster),
        cmocka_unit_test(test_shutdown_ends_a_wait_for_the_cluster),
    };

    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, it_cluster_setup, it_cluster_teardown);
}
