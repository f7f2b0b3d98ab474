/*
 * rl_client_list_locks() / rl_client_inspect_lock(): who holds what, read
 * through the public API on a single server, a 3-master Cluster and a
 * Redlock set of 3: plain, fair, read and write holds, a semaphore's
 * permits, a holder in another process, waiters, a lock-delay left alone,
 * a field not rlock's, a name nobody holds, a master that cannot be read,
 * and bad input.
 */
#include "it_common.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rt_cluster.h"

static long long wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static rl_client *named_client(const char *url, const char *name)
{
    rl_options o;

    it_options(&o, url, 0, 0);
    o.client_name = name;
    return it_client_opts(&o);
}

static rl_lock *kind_lock(rl_client *c, const char *name, int kind)
{
    rl_lock *l = NULL;

    IT_RC(rl_lock_new_kind(&l, c, name, strlen(name), kind), RL_OK);
    return l;
}

/* rl_client_inspect_lock() of name, which must succeed. */
static rl_lock_list *inspect(rl_client *c, const char *name)
{
    rl_lock_list *l = NULL;

    IT_RC(rl_client_inspect_lock(&l, c, name, strlen(name), RL_INFO_VERSION), RL_OK);
    assert_non_null(l);
    IT_EQ(l->version, RL_INFO_VERSION);
    IT_EQ(l->nfailures, 0);
    return l;
}

/* Check a holder that this process's client `cname` holds. */
static void holder_is(const rl_holder_info *h, long long pid, const char *cname, int side,
                      long long count)
{
    char host[256];

    IT_EQ(h->known, 1);
    IT_EQ(h->pid, pid);
    assert_string_equal(h->client_name, cname);
    IT_EQ(h->side, side);
    IT_EQ(h->count, count);
    IT_EQ(strlen(h->owner), 36);
    IT_EQ(strspn(h->thread, "0123456789") == strlen(h->thread) && h->thread[0], 1);
    IT_RANGE(h->since_ms, wall_ms() - 60000, wall_ms() + 1000);
    IT_RANGE(h->started_ms, wall_ms() - 600000, wall_ms() + 1000);
    IT_RANGE(h->lease_left_ms, 1, 30000);
    assert_string_equal(h->version, rl_version());
    IT_EQ(gethostname(host, sizeof host), 0);
    host[sizeof host - 1] = '\0';
    assert_string_equal(h->host, host);
}

/* ---- a holder in another process -------------------------------------- */

typedef struct child {
    pid_t pid;
    int up, down;
} child;

/* Fork a child that holds `name` (kind) through a client of its own,
 * named cname, until told to let go. */
static void child_hold(child *ch, const char *url, const char *name, int kind,
                       const char *cname)
{
    int up[2], down[2];
    char b;

    assert_int_equal(pipe(up), 0);
    assert_int_equal(pipe(down), 0);
    ch->pid = fork();
    if (ch->pid == 0) {
        rl_options o;
        rl_client *c;
        rl_lock *l;
        int ok;
        it_options(&o, url, 0, 0);
        o.client_name = cname;
        ok = rl_client_new(&c, &o) == RL_OK &&
             rl_lock_new_kind(&l, c, name, strlen(name), kind) == RL_OK &&
             rl_lock_acquire(l) == RL_OK;
        if (write(up[1], ok ? "y" : "n", 1) != 1 || !ok || read(down[0], &b, 1) != 1)
            _exit(2);
        _exit(rl_lock_release(l) == RL_OK ? 0 : 1);
    }
    assert_true(ch->pid > 0);
    close(up[1]);
    close(down[0]);
    ch->up = up[0];
    ch->down = down[1];
    {
        struct pollfd p = { ch->up, POLLIN, 0 };
        IT_EQ(poll(&p, 1, 20000), 1);
    }
    IT_EQ(read(ch->up, &b, 1), 1);      /* EOF when the child died first */
    IT_EQ(b, 'y');
}

static void child_done(child *ch)
{
    int st;

    IT_EQ(write(ch->down, "g", 1), 1);
    IT_WAIT(waitpid(ch->pid, &st, WNOHANG) == ch->pid, 20000);
    IT_EQ(WIFEXITED(st) && WEXITSTATUS(st) == 0, 1);
    close(ch->up);
    close(ch->down);
}

/* ---- single server ------------------------------------------------------ */

/* Plain holds: ours (reentered), another process's, a waiting process; the
 * list by pattern; a name nobody holds. */
static void test_plain(void **state)
{
    it_env *e = *state;
    rl_client *c = named_client(e->redis->url, "insp.main");
    rl_client *w = named_client(e->redis->url, "insp.wait");
    rl_lock *beta = it_lock(c, "beta"), *wl = it_lock(w, "alpha");
    rl_lock_list *l;
    const rl_lock_info *in;
    child ch;
    it_acq a;

    IT_RC(rl_lock_acquire(beta), RL_OK);
    IT_RC(rl_lock_acquire(beta), RL_OK);
    child_hold(&ch, e->redis->url, "alpha", RL_KIND_PLAIN, "insp.child");

    l = inspect(c, "beta");
    IT_EQ(l->mode, RL_MODE_SINGLE);
    IT_EQ(l->count, 1);
    in = l->locks[0];
    IT_EQ(in->name_len, 4);
    assert_string_equal(in->name, "beta");
    IT_EQ(in->kind, RL_KIND_PLAIN);
    IT_EQ(in->nholders, 1);
    IT_EQ(in->waiters, 0);
    IT_EQ(in->queued, 0);
    IT_EQ(in->delay_ms, 0);
    IT_RANGE(in->lease_left_ms, 1, 30000);
    holder_is(in->holders[0], getpid(), "insp.main", RL_KIND_PLAIN, 2);
    rl_lock_list_free(l);

    /* Another process holds alpha; a thread of a third client waits. */
    it_acq_begin(&a, wl, 20000, 0);
    IT_WAIT(({
                rl_lock_list *x = inspect(c, "alpha");
                int one = x->count == 1 && x->locks[0]->waiters == 1;
                rl_lock_list_free(x);
                one;
            }), 10000);
    l = inspect(c, "alpha");
    holder_is(l->locks[0]->holders[0], ch.pid, "insp.child", RL_KIND_PLAIN, 1);
    rl_lock_list_free(l);
    child_done(&ch);
    assert_int_equal(it_acq_join(&a, 20000), 0);
    IT_RC(a.rc, RL_OK);
    IT_RC(a.release_rc, RL_OK);

    /* The list: every name, sorted; a pattern. */
    IT_RC(rl_client_list_locks(&l, c, NULL, RL_INFO_VERSION), RL_OK);
    IT_EQ(l->count, 1);                 /* alpha was let go */
    assert_string_equal(l->locks[0]->name, "beta");
    rl_lock_list_free(l);
    child_hold(&ch, e->redis->url, "alpha", RL_KIND_PLAIN, "insp.child");
    IT_RC(rl_client_list_locks(&l, c, "*", RL_INFO_VERSION), RL_OK);
    IT_EQ(l->count, 2);
    assert_string_equal(l->locks[0]->name, "alpha");
    assert_string_equal(l->locks[1]->name, "beta");
    rl_lock_list_free(l);
    IT_RC(rl_client_list_locks(&l, c, "b*", RL_INFO_VERSION), RL_OK);
    IT_EQ(l->count, 1);
    assert_string_equal(l->locks[0]->name, "beta");
    rl_lock_list_free(l);
    child_done(&ch);

    /* Nobody holds it: an empty list, no failure; nothing left in Redis. */
    l = inspect(c, "free-one");
    IT_EQ(l->count, 0);
    rl_lock_list_free(l);
    IT_EQ(rt_redis_exists(e->rc, "rl:{free-one}", 13), 0);

    IT_RC(rl_lock_release(beta), RL_OK);
    IT_RC(rl_lock_release(beta), RL_OK);
    l = inspect(c, "beta");
    IT_EQ(l->count, 0);
    rl_lock_list_free(l);
    rl_lock_free(beta);
    rl_lock_free(wl);
    rl_client_free(w);
    rl_client_free(c);
}

/* A fair lock with a thread queued; read and write holds. */
static void test_fair_rw(void **state)
{
    it_env *e = *state;
    rl_client *c = named_client(e->redis->url, "insp.main");
    rl_client *o = named_client(e->redis->url, "insp.other");
    rl_lock *f = kind_lock(c, "fa", RL_KIND_FAIR), *fo = kind_lock(o, "fa", RL_KIND_FAIR);
    rl_lock *r = kind_lock(c, "rw", RL_KIND_READ), *wr = kind_lock(c, "rw", RL_KIND_WRITE);
    rl_lock *ro = kind_lock(o, "rw", RL_KIND_READ);
    rl_lock_list *l;
    const rl_lock_info *in;
    it_acq a, b;
    size_t k;

    IT_RC(rl_lock_acquire(f), RL_OK);
    it_acq_begin(&a, fo, 20000, 0);
    IT_WAIT(({
                rl_lock_list *x = inspect(c, "fa");
                int q = x->count == 1 && x->locks[0]->queued == 1;
                rl_lock_list_free(x);
                q;
            }), 10000);
    l = inspect(c, "fa");
    IT_EQ(l->locks[0]->kind, RL_KIND_FAIR);
    IT_EQ(l->locks[0]->nholders, 1);
    holder_is(l->locks[0]->holders[0], getpid(), "insp.main", RL_KIND_PLAIN, 1);
    rl_lock_list_free(l);
    IT_RC(rl_lock_release(f), RL_OK);
    assert_int_equal(it_acq_join(&a, 20000), 0);
    IT_RC(a.rc, RL_OK);

    /* Two readers, of two clients: two holders on the read side, each with
     * its own deadline; no '~' field among them. */
    IT_RC(rl_lock_acquire(r), RL_OK);
    it_acq_begin(&b, ro, 20000, 1);
    IT_WAIT(atomic_load(&b.state) == 2, 20000);
    IT_RC(b.rc, RL_OK);
    l = inspect(c, "rw");
    in = l->locks[0];
    IT_EQ(in->kind, RL_KIND_RW);
    IT_EQ(in->nholders, 2);
    for (k = 0; k < 2; k++) {
        const rl_holder_info *h = in->holders[k];
        int mine = strcmp(h->client_name, "insp.main") == 0;
        holder_is(h, getpid(), mine ? "insp.main" : "insp.other", RL_KIND_READ, 1);
        IT_RANGE(h->lease_left_ms, 1, 30000);
    }
    rl_lock_list_free(l);
    it_acq_let_go(&b);
    assert_int_equal(it_acq_join(&b, 20000), 0);
    IT_RC(b.release_rc, RL_OK);
    IT_RC(rl_lock_release(r), RL_OK);

    /* The write side, re-entered, and a read taken beside it (downgrade). */
    IT_RC(rl_lock_acquire(wr), RL_OK);
    IT_RC(rl_lock_acquire(wr), RL_OK);
    IT_RC(rl_lock_acquire(r), RL_OK);
    l = inspect(c, "rw");
    in = l->locks[0];
    IT_EQ(in->kind, RL_KIND_RW);
    IT_EQ(in->nholders, 2);
    for (k = 0; k < 2; k++) {
        const rl_holder_info *h = in->holders[k];
        int write = h->side == RL_KIND_WRITE;
        holder_is(h, getpid(), "insp.main", write ? RL_KIND_WRITE : RL_KIND_READ, write ? 2 : 1);
    }
    assert_string_equal(in->holders[0]->thread, in->holders[1]->thread);
    IT_EQ(in->holders[0]->side + in->holders[1]->side, RL_KIND_READ + RL_KIND_WRITE);
    rl_lock_list_free(l);
    IT_RC(rl_lock_release(r), RL_OK);
    IT_RC(rl_lock_release(wr), RL_OK);
    IT_RC(rl_lock_release(wr), RL_OK);

    rl_lock_free(f);
    rl_lock_free(fo);
    rl_lock_free(r);
    rl_lock_free(wr);
    rl_lock_free(ro);
    rl_client_free(o);
    rl_client_free(c);
}

/* A semaphore of 5 permits: read as one (its permit count, each hold's
 * permits and deadline, the permits left free), a hold past its deadline
 * left out as the scripts leave it out; a caller of layout 1 gets the
 * kinds its header knows. */
static void test_semaphore(void **state)
{
    it_env *e = *state;
    rl_client *c = named_client(e->redis->url, "insp.main");
    rl_client *o = named_client(e->redis->url, "insp.other");
    rl_lock *s = NULL, *so = NULL;
    const rl_lock_info *in;
    rl_lock_list *l;
    redisReply *r;
    size_t k;

    IT_RC(rl_semaphore_new(&s, c, "pool", 4, 5), RL_OK);
    IT_RC(rl_semaphore_new(&so, o, "pool", 4, 5), RL_OK);
    IT_RC(rl_semaphore_acquire(s, 2, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_semaphore_acquire(s, 2, 0, RL_LEASE_WATCHDOG), RL_OK);
    IT_RC(rl_semaphore_acquire(so, 2, 0, RL_LEASE_WATCHDOG), RL_OK);
    /* A dead holder's fields, as a SIGKILLed one leaves them until an
     * acquisition drops them: its permit is free. */
    r = redisCommand(e->rc, "HSET rl:{pool} 00000000-0000-4000-8000-00000000dead:9 %s "
                     "~d:00000000-0000-4000-8000-00000000dead:9 1 "
                     "~k:00000000-0000-4000-8000-00000000dead:9 1", "1 1000");
    freeReplyObject(r);

    l = inspect(c, "pool");
    IT_EQ(l->count, 1);
    in = l->locks[0];
    IT_EQ(in->kind, RL_KIND_SEMAPHORE);
    IT_EQ(in->permits, 5);
    IT_EQ(in->free_permits, 1);
    IT_EQ(in->nholders, 2);
    IT_RANGE(in->lease_left_ms, 1, 30000);
    for (k = 0; k < 2; k++) {
        const rl_holder_info *h = in->holders[k];
        int mine = strcmp(h->client_name, "insp.main") == 0;
        holder_is(h, getpid(), mine ? "insp.main" : "insp.other", RL_KIND_PLAIN, mine ? 2 : 1);
        IT_EQ(h->permits, 2);
    }
    rl_lock_list_free(l);
    IT_RC(rl_client_list_locks(&l, c, "po*", RL_INFO_VERSION), RL_OK);
    IT_EQ(l->count, 1);
    IT_EQ(l->locks[0]->kind, RL_KIND_SEMAPHORE);
    IT_EQ(l->locks[0]->free_permits, 1);
    rl_lock_list_free(l);

    /* Layout 1: no RL_KIND_SEMAPHORE, which its header lacks. */
    IT_RC(rl_client_inspect_lock(&l, c, "pool", 4, 1), RL_OK);
    IT_EQ(l->version, RL_INFO_VERSION);
    IT_EQ(l->locks[0]->kind, RL_KIND_RW);
    IT_EQ(l->locks[0]->holders[0]->side, RL_KIND_WRITE);
    rl_lock_list_free(l);

    IT_RC(rl_lock_release(s), RL_OK);
    IT_RC(rl_lock_release(s), RL_OK);
    IT_RC(rl_lock_release(so), RL_OK);
    /* The dead hold's fields are all that is left: no holder, all free. */
    l = inspect(c, "pool");
    IT_EQ(l->count, 1);
    IT_EQ(l->locks[0]->kind, RL_KIND_SEMAPHORE);
    IT_EQ(l->locks[0]->nholders, 0);
    IT_EQ(l->locks[0]->free_permits, 5);
    rl_lock_list_free(l);
    {   /* A plain lock: no permits. */
        rl_lock *p = it_lock(c, "plainp");
        IT_RC(rl_lock_acquire(p), RL_OK);
        l = inspect(c, "plainp");
        IT_EQ(l->locks[0]->permits, 0);
        IT_EQ(l->locks[0]->free_permits, 0);
        IT_EQ(l->locks[0]->holders[0]->permits, 0);
        rl_lock_list_free(l);
        IT_RC(rl_lock_release(p), RL_OK);
        rl_lock_free(p);
    }
    rl_lock_free(s);
    rl_lock_free(so);
    rl_client_free(o);
    rl_client_free(c);
}

/* What rlock did not write: a field that is not "<uuid>:<tid>", a
 * lock-delay left alone, a binary name, a key that is not a hash. */
static void test_odd_keys(void **state)
{
    it_env *e = *state;
    rl_client *c = named_client(e->redis->url, "insp.main");
    rl_lock *bin;
    rl_lock_list *l;
    const rl_holder_info *h;
    redisReply *r;
    const char name[] = "}x\ny";

    r = redisCommand(e->rc, "HSET rl:{gamma} 00000000-0000-4000-8000-00000000abcd:3 1");
    freeReplyObject(r);
    l = inspect(c, "gamma");
    IT_EQ(l->count, 1);
    h = l->locks[0]->holders[0];
    IT_EQ(h->known, 0);
    IT_EQ(h->pid, -1);
    IT_EQ(h->started_ms, -1);
    IT_EQ(h->since_ms, -1);
    IT_EQ(h->count, 1);
    IT_EQ(l->locks[0]->lease_left_ms, -1);
    IT_EQ(h->lease_left_ms, -1);
    IT_EQ(l->locks[0]->delay_ms, 0);
    IT_EQ(l->locks[0]->delay_left_ms, 0);
    assert_string_equal(h->host, "");
    assert_string_equal(h->owner, "00000000-0000-4000-8000-00000000abcd");
    assert_string_equal(h->thread, "3");
    rl_lock_list_free(l);

    r = redisCommand(e->rc, "HSET rl:{omega} ~delay 5000");
    freeReplyObject(r);
    r = redisCommand(e->rc, "PEXPIRE rl:{omega} 5000");
    freeReplyObject(r);
    l = inspect(c, "omega");
    IT_EQ(l->count, 1);
    IT_EQ(l->locks[0]->nholders, 0);
    IT_EQ(l->locks[0]->delay_ms, 5000);
    IT_RANGE(l->locks[0]->lease_left_ms, 1, 5000);
    IT_EQ(l->locks[0]->delay_left_ms, l->locks[0]->lease_left_ms);
    rl_lock_list_free(l);

    /* A holder with a lock-delay: counted in the lease, nothing left alone yet. */
    {
        rl_options o;
        rl_client *d;
        rl_lock *dl;
        it_options(&o, e->redis->url, 0, 0);
        o.lock_delay_ms = 4000;
        d = it_client_opts(&o);
        dl = it_lock(d, "delayed");
        IT_RC(rl_lock_acquire(dl), RL_OK);
        l = inspect(c, "delayed");
        IT_EQ(l->locks[0]->nholders, 1);
        IT_EQ(l->locks[0]->delay_ms, 4000);
        IT_EQ(l->locks[0]->delay_left_ms, 0);
        IT_RANGE(l->locks[0]->lease_left_ms, 4001, 34000);
        rl_lock_list_free(l);
        IT_RC(rl_lock_release(dl), RL_OK);
        rl_lock_free(dl);
        rl_client_free(d);
    }

    /* A key of the name that is not a hash blocks it: said so, naming the
     * key, as a failure of the call (it was skipped silently). */
    r = redisCommand(e->rc, "SET rl:{str} x");
    freeReplyObject(r);
    IT_RC(rl_client_inspect_lock(&l, c, "str", 3, RL_INFO_VERSION), RL_EREDIS);
    IT_EQ(l->count, 0);
    IT_EQ(l->nfailures, 1);
    if (!strstr(l->failures[0], "key rl:{str} of lock 'str'") ||
        !strstr(l->failures[0], "WRONGTYPE") || !strstr(rl_last_error(), "key rl:{str} "))
        fail_msg("failure: %s; rl_last_error(): %s", l->failures[0], rl_last_error());
    rl_lock_list_free(l);

    IT_RC(rl_lock_new_bin(&bin, c, name, sizeof name - 1), RL_OK);
    IT_RC(rl_lock_acquire(bin), RL_OK);
    IT_RC(rl_client_inspect_lock(&l, c, name, sizeof name - 1, RL_INFO_VERSION), RL_OK);
    IT_EQ(l->count, 1);
    IT_EQ(l->locks[0]->name_len, sizeof name - 1);
    IT_EQ(memcmp(l->locks[0]->name, name, sizeof name - 1), 0);
    rl_lock_list_free(l);
    IT_RC(rl_client_list_locks(&l, c, NULL, RL_INFO_VERSION), RL_EREDIS);
    IT_EQ(l->count, 3);                 /* gamma, omega, }x\ny by bytes; str a failure */
    IT_EQ(l->nfailures, 1);
    if (!strstr(l->failures[0], "key rl:{str} of lock 'str'"))
        fail_msg("failure: %s", l->failures[0]);
    assert_string_equal(l->locks[0]->name, "gamma");
    IT_EQ(memcmp(l->locks[2]->name, name, sizeof name - 1), 0);
    rl_lock_list_free(l);
    IT_RC(rl_lock_release(bin), RL_OK);
    rl_lock_free(bin);
    rl_client_free(c);
}

/* Bad input: RL_EINVAL, *out untouched, nothing sent. */
static void test_bad_input(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0);
    static rl_lock_list untouched;
    rl_lock_list *l = &untouched, *keep = l;
    char big[RL_NAME_MAX + 2], buf[128];
    long long calls;

    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    calls = rt_redis_cmdstat_calls(e->rc, "scan") + rt_redis_cmdstat_calls(e->rc, "hgetall");
    IT_RC(rl_client_list_locks(NULL, c, "*", RL_INFO_VERSION), RL_EINVAL);
    IT_RC(rl_client_list_locks(&l, NULL, "*", RL_INFO_VERSION), RL_EINVAL);
    IT_RC(rl_client_list_locks(&l, c, "*", 0), RL_EINVAL);
    IT_RC(rl_client_list_locks(&l, c, "*", RL_INFO_VERSION + 1), RL_EINVAL);
    assert_true(strstr(rl_last_error(), "version") != NULL);
    IT_RC(rl_client_list_locks(&l, c, big, RL_INFO_VERSION), RL_EINVAL);
    IT_RC(rl_client_inspect_lock(NULL, c, "a", 1, RL_INFO_VERSION), RL_EINVAL);
    IT_RC(rl_client_inspect_lock(&l, NULL, "a", 1, RL_INFO_VERSION), RL_EINVAL);
    IT_RC(rl_client_inspect_lock(&l, c, NULL, 1, RL_INFO_VERSION), RL_EINVAL);
    IT_RC(rl_client_inspect_lock(&l, c, "a", 0, RL_INFO_VERSION), RL_EINVAL);
    IT_RC(rl_client_inspect_lock(&l, c, big, RL_NAME_MAX + 1, RL_INFO_VERSION), RL_EINVAL);
    IT_RC(rl_client_inspect_lock(&l, c, "a", 1, 7), RL_EINVAL);
    assert_ptr_equal(l, keep);
    IT_EQ(rt_redis_cmdstat_calls(e->rc, "scan") + rt_redis_cmdstat_calls(e->rc, "hgetall"),
          calls);
    rl_lock_list_free(NULL);

    /* A client shut down: refused. */
    IT_RC(rl_client_shutdown(c), RL_OK);
    IT_RC(rl_client_list_locks(&l, c, "*", RL_INFO_VERSION), RL_ECANCELED);
    IT_RC(rl_client_inspect_lock(&l, c, "a", 1, RL_INFO_VERSION), RL_ECANCELED);
    assert_ptr_equal(l, keep);
    rl_client_free(c);

    /* rl_url_redact: never a byte of the password; bad input refused. */
    IT_RC(rl_url_redact(buf, sizeof buf, "redis://user:s3cret@h:1/2"), RL_OK);
    assert_string_equal(buf, "redis://***@h:1/2");
    IT_RC(rl_url_redact(buf, sizeof buf, "redis://s3cret@@"), RL_OK);
    assert_null(strstr(buf, "s3cret"));
    IT_RC(rl_url_redact(buf, 4, "redis://user:s3cret@h:1"), RL_OK);
    IT_EQ(strlen(buf), 3);
    IT_RC(rl_url_redact(buf, sizeof buf, NULL), RL_OK);
    assert_string_equal(buf, "redis://127.0.0.1:6379");
    IT_RC(rl_url_redact(NULL, 8, "redis://h"), RL_EINVAL);
    IT_RC(rl_url_redact(buf, 0, "redis://h"), RL_EINVAL);
}

/* A master that answers HGETALL with an error (here an ACL that denies it;
 * as well -LOADING, -BUSY, a Cluster's MOVED or ASK) has not said that
 * nobody holds the name: the read is a failure, named, not a list of 0. */
static void test_read_refused(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0), *peek;
    rl_lock *held = it_lock(c, "held");
    rl_lock_list *l = NULL;
    rl_options o;
    redisReply *r;
    char url[256];

    IT_RC(rl_lock_acquire(held), RL_OK);
    r = redisCommand(e->rc, "ACL SETUSER peek on >pw ~* &* +@all -hgetall");
    assert_non_null(r);
    IT_EQ(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    snprintf(url, sizeof url, "redis://peek:pw@127.0.0.1:%d", e->redis->port);
    it_options(&o, url, 0, 0);
    peek = it_client_opts(&o);

    IT_RC(rl_client_inspect_lock(&l, peek, "held", 4, RL_INFO_VERSION), RL_EREDIS);
    assert_non_null(l);
    IT_EQ(l->count, 0);
    IT_EQ(l->nfailures, 1);
    assert_non_null(strstr(l->failures[0], "HGETALL"));
    rl_lock_list_free(l);
    l = NULL;
    IT_RC(rl_client_list_locks(&l, peek, "held", RL_INFO_VERSION), RL_EREDIS);
    assert_non_null(l);
    IT_EQ(l->count, 0);
    IT_EQ(l->nfailures, 1);
    rl_lock_list_free(l);

    rl_client_free(peek);
    IT_RC(rl_lock_release(held), RL_OK);
    rl_lock_free(held);
    rl_client_free(c);
}

/* A SCAN refused with TYPE is asked again without it (Redis before 6 has
 * no TYPE); refused again, the master was not read: a failure, not an
 * empty list. */
static void test_scan_refused(void **state)
{
    it_env *e = *state;
    rl_client *c = it_client(e, 0), *peek;
    rl_lock *held = it_lock(c, "held");
    rl_lock_list *l = NULL;
    rl_options o;
    redisReply *r;
    char url[256];

    IT_RC(rl_lock_acquire(held), RL_OK);
    r = redisCommand(e->rc, "ACL SETUSER noscan on >pw ~* &* +@all -scan");
    assert_non_null(r);
    IT_EQ(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    snprintf(url, sizeof url, "redis://noscan:pw@127.0.0.1:%d", e->redis->port);
    it_options(&o, url, 0, 0);
    peek = it_client_opts(&o);
    r = redisCommand(e->rc, "CONFIG RESETSTAT");
    freeReplyObject(r);

    IT_RC(rl_client_list_locks(&l, peek, NULL, RL_INFO_VERSION), RL_EREDIS);
    assert_non_null(l);
    IT_EQ(l->count, 0);
    IT_EQ(l->nfailures, 1);
    assert_non_null(strstr(l->failures[0], "SCAN"));
    rl_lock_list_free(l);
    /* It reached Redis, and was refused (not counted as a call). */
    r = redisCommand(e->rc, "INFO commandstats");
    assert_non_null(strstr(r->str, "cmdstat_scan:calls=0,"));
    assert_non_null(strstr(r->str, "rejected_calls=1,"));
    freeReplyObject(r);

    rl_client_free(peek);
    IT_RC(rl_lock_release(held), RL_OK);
    rl_lock_free(held);
    rl_client_free(c);
}

/* The longest key a client makes (a prefix of 256 bytes, a name of
 * RL_NAME_MAX) is read like any other. */
static void test_long_key(void **state)
{
    it_env *e = *state;
    static char prefix[257], name[RL_NAME_MAX];
    rl_lock_list *l = NULL;
    rl_options o;
    rl_client *c;
    rl_lock *lk;

    memset(prefix, 'p', sizeof prefix - 1);
    memset(name, 'n', sizeof name);
    it_options(&o, e->redis->url, 0, 0);
    o.key_prefix = prefix;
    c = it_client_opts(&o);
    IT_RC(rl_lock_new_bin(&lk, c, name, sizeof name), RL_OK);
    IT_RC(rl_lock_acquire(lk), RL_OK);
    IT_RC(rl_client_inspect_lock(&l, c, name, sizeof name, RL_INFO_VERSION), RL_OK);
    IT_EQ(l->count, 1);
    IT_EQ(l->locks[0]->name_len, sizeof name);
    IT_EQ(l->locks[0]->nholders, 1);
    rl_lock_list_free(l);
    IT_RC(rl_client_list_locks(&l, c, NULL, RL_INFO_VERSION), RL_OK);
    IT_EQ(l->count, 1);
    rl_lock_list_free(l);
    IT_RC(rl_lock_release(lk), RL_OK);
    rl_lock_free(lk);
    rl_client_free(c);
}

/* A list over many keys, in another thread. */
typedef struct {
    rl_client *c;
    rl_lock_list *l;
    atomic_int rc;
} long_list;

static void *list_main(void *arg)
{
    long_list *ll = arg;

    atomic_store(&ll->rc, rl_client_list_locks(&ll->l, ll->c, "many*", RL_INFO_VERSION));
    return NULL;
}

/* A shutdown waits for the calls in flight, each "bounded by the command
 * timeout": a list is one round trip per key, so it stops between keys
 * when the client shuts down (RL_ECANCELED), rather than holding the
 * shutdown for the whole keyspace. */
static void test_list_shutdown(void **state)
{
    enum { KEYS = 30000 };
    it_env *e = *state;
    long_list ll = { 0 };
    redisReply *r;
    pthread_t th;
    long long before;
    int i;

    for (i = 0; i < KEYS; i++)
        redisAppendCommand(e->rc, "HSET rl:{many%d} 00000000-0000-4000-8000-000000000001:1 1",
                           i);
    for (i = 0; i < KEYS; i++) {
        IT_EQ(redisGetReply(e->rc, (void **)&r), REDIS_OK);
        freeReplyObject(r);
    }
    ll.c = it_client(e, 0);
    before = rt_redis_cmdstat_calls(e->rc, "hgetall");
    IT_EQ(pthread_create(&th, NULL, list_main, &ll), 0);
    assert_true(RT_WAIT_UNTIL(rt_redis_cmdstat_calls(e->rc, "hgetall") > before + 10, 10000));
    IT_RC(rl_client_shutdown(ll.c), RL_OK);
    IT_EQ(pthread_join(th, NULL), 0);
    IT_RC(atomic_load(&ll.rc), RL_ECANCELED);
    assert_null(ll.l);
    assert_true(rt_redis_cmdstat_calls(e->rc, "hgetall") < before + KEYS);
    rl_client_free(ll.c);
}

/* A list holds no connection of the pool for longer than a page of its
 * SCAN: with a pool of one, another thread's try (no wait) during a long
 * list is answered in one round trip or so, not when the list ends. */
static void test_list_pool(void **state)
{
    enum { KEYS = 30000 };
    it_env *e = *state;
    long_list ll = { 0 };
    redisReply *r;
    pthread_t th;
    long long before;
    rl_options o;
    rl_lock *lk;
    int i;

    for (i = 0; i < KEYS; i++)
        redisAppendCommand(e->rc, "HSET rl:{many%d} 00000000-0000-4000-8000-000000000001:1 1",
                           i);
    for (i = 0; i < KEYS; i++) {
        IT_EQ(redisGetReply(e->rc, (void **)&r), REDIS_OK);
        freeReplyObject(r);
    }
    it_options(&o, e->redis->url, 0, 0);
    o.pool_size = 1;
    ll.c = it_client_opts(&o);
    lk = it_lock(ll.c, "other");
    before = rt_redis_cmdstat_calls(e->rc, "hgetall");
    IT_EQ(pthread_create(&th, NULL, list_main, &ll), 0);
    assert_true(RT_WAIT_UNTIL(rt_redis_cmdstat_calls(e->rc, "hgetall") > before + 10, 10000));
    IT_RC(rl_lock_try_acquire(lk, 0, RL_LEASE_WATCHDOG), RL_OK);
    /* Not after the list: it is still on its way. */
    assert_true(rt_redis_cmdstat_calls(e->rc, "hgetall") < before + KEYS);
    IT_EQ(pthread_join(th, NULL), 0);
    IT_RC(atomic_load(&ll.rc), RL_OK);
    IT_EQ(ll.l->count, KEYS);
    rl_lock_list_free(ll.l);
    IT_RC(rl_lock_release(lk), RL_OK);
    rl_lock_free(lk);
    rl_client_free(ll.c);
}

/* ---- Cluster and Redlock ------------------------------------------------- */

/* A 3-master Cluster: every master listed, each name on its own master,
 * owner records found through their own slot; fair, read-write and a
 * semaphore. */
static void test_cluster(void **state)
{
    const char *names[] = { "n1", "n2", "n3", "n4", "n5", "n6" };
    rt_cluster *cl = rt_cluster_start(3, 0, 1000, NULL);
    rl_client *c, *o;
    rl_lock *l[6], *f, *fo, *rd, *wr, *sm = NULL;
    rl_lock_list *ls;
    size_t i;
    int seen[3] = { 0, 0, 0 };
    child ch;
    it_acq a;

    (void)state;
    if (!cl)
        fail_msg("cannot start a cluster");
    c = named_client(cl->url, "clus");
    o = named_client(cl->url, "clus.other");
    for (i = 0; i < 6; i++) {
        l[i] = it_lock(c, names[i]);
        IT_RC(rl_lock_acquire(l[i]), RL_OK);
    }
    child_hold(&ch, cl->url, "n7", RL_KIND_PLAIN, "clus.child");
    IT_RC(rl_client_list_locks(&ls, c, "n*", RL_INFO_VERSION), RL_OK);
    IT_EQ(ls->mode, RL_MODE_CLUSTER);
    IT_EQ(ls->count, 7);
    for (i = 0; i < 7; i++) {
        const rl_lock_info *in = ls->locks[i];
        char key[16];
        int m, slot, k;
        snprintf(key, sizeof key, "rl:{n%zu}", i + 1);
        IT_EQ(in->name[1] - '0', (long long)i + 1);
        slot = rt_cluster_keyslot(cl, key, strlen(key));
        m = rt_cluster_master_of(cl, slot);
        for (k = 0; k < 3; k++)
            if (strstr(in->node, ":") && atoi(strrchr(in->node, ':') + 1) ==
                                             cl->node[k]->port)
                break;
        IT_EQ(k, m);
        seen[k] = 1;
        holder_is(in->holders[0], i < 6 ? getpid() : ch.pid, i < 6 ? "clus" : "clus.child",
                  RL_KIND_PLAIN, 1);
    }
    IT_EQ(seen[0] + seen[1] + seen[2] >= 2, 1);
    rl_lock_list_free(ls);
    ls = inspect(c, "n7");
    IT_EQ(ls->count, 1);
    holder_is(ls->locks[0]->holders[0], ch.pid, "clus.child", RL_KIND_PLAIN, 1);
    rl_lock_list_free(ls);
    child_done(&ch);
    ls = inspect(c, "n7");
    IT_EQ(ls->count, 0);
    rl_lock_list_free(ls);

    /* Fair, with a thread of another client queued; read and write. */
    f = kind_lock(c, "cf", RL_KIND_FAIR);
    fo = kind_lock(o, "cf", RL_KIND_FAIR);
    IT_RC(rl_lock_acquire(f), RL_OK);
    it_acq_begin(&a, fo, 20000, 0);
    IT_WAIT(({
                rl_lock_list *x = inspect(c, "cf");
                int q = x->count == 1 && x->locks[0]->queued == 1 &&
                        x->locks[0]->kind == RL_KIND_FAIR;
                rl_lock_list_free(x);
                q;
            }), 10000);
    IT_RC(rl_lock_release(f), RL_OK);
    assert_int_equal(it_acq_join(&a, 20000), 0);
    IT_RC(a.rc, RL_OK);
    rd = kind_lock(c, "cr", RL_KIND_READ);
    wr = kind_lock(o, "cw", RL_KIND_WRITE);
    IT_RC(rl_lock_acquire(rd), RL_OK);
    IT_RC(rl_lock_acquire(wr), RL_OK);
    ls = inspect(c, "cr");
    IT_EQ(ls->locks[0]->kind, RL_KIND_RW);
    holder_is(ls->locks[0]->holders[0], getpid(), "clus", RL_KIND_READ, 1);
    rl_lock_list_free(ls);
    ls = inspect(c, "cw");
    IT_EQ(ls->locks[0]->kind, RL_KIND_RW);
    holder_is(ls->locks[0]->holders[0], getpid(), "clus.other", RL_KIND_WRITE, 1);
    rl_lock_list_free(ls);
    IT_RC(rl_lock_release(rd), RL_OK);
    IT_RC(rl_lock_release(wr), RL_OK);

    /* A semaphore, read on its slot's master. */
    IT_RC(rl_semaphore_new(&sm, c, "cs", 2, 3), RL_OK);
    IT_RC(rl_semaphore_acquire(sm, 2, 0, RL_LEASE_WATCHDOG), RL_OK);
    ls = inspect(c, "cs");
    IT_EQ(ls->count, 1);
    IT_EQ(ls->locks[0]->kind, RL_KIND_SEMAPHORE);
    IT_EQ(ls->locks[0]->free_permits, 1);
    IT_EQ(ls->locks[0]->holders[0]->permits, 2);
    holder_is(ls->locks[0]->holders[0], getpid(), "clus", RL_KIND_PLAIN, 1);
    rl_lock_list_free(ls);
    IT_RC(rl_lock_release(sm), RL_OK);
    rl_lock_free(sm);

    for (i = 0; i < 6; i++)
        rl_lock_free(l[i]);
    rl_lock_free(f);
    rl_lock_free(fo);
    rl_lock_free(rd);
    rl_lock_free(wr);
    rl_client_free(o);
    rl_client_free(c);
    rt_cluster_stop(cl);
}

/* Redlock of 3: a name once per master; a master down: the others are
 * still read, and the failure is named. */
static void test_redlock(void **state)
{
    rt_redis *node[3] = { NULL, NULL, NULL };
    redisContext *ctl[3] = { NULL, NULL, NULL };
    rl_client *c;
    rl_lock *l;
    rl_lock_list *ls;
    char url[256], port[16];
    size_t i;

    (void)state;
    for (i = 0; i < 3; i++)
        if (rt_redis_open("it_inspect", NULL, &node[i], &ctl[i]) != 0)
            fail_msg("cannot start redis %zu", i);
    snprintf(url, sizeof url, "redlock://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
             node[0]->port, node[1]->port, node[2]->port);
    c = named_client(url, "redl");
    l = it_lock(c, "rl1");
    IT_RC(rl_lock_acquire(l), RL_OK);
    ls = inspect(c, "rl1");
    IT_EQ(ls->mode, RL_MODE_REDLOCK);
    IT_EQ(ls->count, 3);
    for (i = 0; i < 3; i++)
        holder_is(ls->locks[i]->holders[0], getpid(), "redl", RL_KIND_PLAIN, 1);
    rl_lock_list_free(ls);

    rt_redis_stop(node[1]);
    node[1] = NULL;
    IT_RC(rl_client_list_locks(&ls, c, NULL, RL_INFO_VERSION), RL_ECONN);
    assert_non_null(ls);
    IT_EQ(ls->count, 2);
    IT_EQ(ls->nfailures, 1);
    snprintf(port, sizeof port, ":%d", node[0]->port);
    IT_EQ(strstr(ls->locks[0]->node, port) != NULL || strstr(ls->locks[1]->node, port) != NULL,
          1);
    rl_lock_list_free(ls);
    IT_RC(rl_lock_release(l), RL_OK);
    rl_lock_free(l);
    rl_client_free(c);
    for (i = 0; i < 3; i++) {
        if (ctl[i])
            redisFree(ctl[i]);
        if (node[i])
            rt_redis_stop(node[i]);
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_plain, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_fair_rw, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_semaphore, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_odd_keys, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_bad_input, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_read_refused, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_list_shutdown, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_scan_refused, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_long_key, it_setup, it_teardown),
        cmocka_unit_test_setup_teardown(test_list_pool, it_setup, it_teardown),
        cmocka_unit_test(test_cluster),
        cmocka_unit_test(test_redlock),
    };

    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
