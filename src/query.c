/*
 * What a handle's caller may ask without changing anything: the calling
 * thread's hold count, token and flag (no I/O), and whether the name is
 * held and for how long (one command on its key).
 */
#include <string.h>

#include "client.h"
#include "conn.h"
#include "error.h"
#include "holds.h"
#include "lock.h"
#include "redlock.h"
#include "reply.h"
#include "router.h"
#include "thread.h"
#include "util.h"

/* One command on a key of e's slot (not Redlock), following redirects;
 * its integer reply in *out. */
static int key_command(rl_client *c, const rl__entry *e, int argc, const char **argv,
                       const size_t *lens, long long *out)
{
    rl__conn *conn;
    rl__route rt;
    redisReply *r = NULL;
    int rc;

    rl__route_init(&rt, c, e->slot);
    while ((rc = rl__route_get(c, &rt, &conn)) == RL_OK) {
        rc = rl__conn_call(conn, &r, argc, argv, lens);
        if (rc == RL_OK && r->type == REDIS_REPLY_ERROR &&
            (rc = rl__route_error(c, &rt, r->str, r->len)) != RL_OK) {
            freeReplyObject(r);
            r = NULL;
        }
        rl__pool_put(c, conn);
        if (rc != RL__RETRY)
            break;
    }
    if (rc == RL_OK) {
        if (r->type == REDIS_REPLY_INTEGER)
            *out = r->integer;
        else if (r->type == REDIS_REPLY_ERROR)
            rc = rl__reply_error_status(r);
        else
            rc = rl__err(RL_EPROTO, "%s did not return an integer", argv[0]);
        freeReplyObject(r);
    }
    return rc;
}

int rl_lock_hold_count(const rl_lock *lock)
{
    const rl__hold *h;

    rl__err_clear();
    if (!lock)
        return rl__err(RL_EINVAL, "lock is NULL");
    if (atomic_load(&lock->client->closed))
        return rl__shut_down();
    h = rl__lock_find(lock, rl__thread_self());
    return h ? h->count : 0;
}

int rl_lock_token(unsigned long long *out, const rl_lock *lock)
{
    const rl__hold *h;

    rl__err_clear();
    if (!out || !lock)
        return rl__err(RL_EINVAL, "out and lock must not be NULL");
    if (atomic_load(&lock->client->closed))
        return rl__shut_down();
    if (!lock->client->fencing)
        return rl__err(RL_ENOTSUP, "the client was made without rl_options.fencing");
    h = rl__thread_find(rl__thread_self(), lock->client, lock->entry);
    if (!h)
        return rl__err(RL_ENOTOWNER, "the calling thread does not hold this lock");
    if (!h->token)
        return rl__err(RL_EPROTO, "the hold has no fencing token in Redis");
    *out = h->token;
    return RL_OK;
}

int rl_semaphore_slots(const rl_lock *sem, unsigned *slots, unsigned cap, unsigned *n)
{
    const rl__hold *h;

    rl__err_clear();
    if (!sem || !n || (!slots && cap > 0))
        return rl__err(RL_EINVAL, "sem and n must not be NULL, nor slots with cap > 0");
    if (sem->kind != RL_KIND_SEMAPHORE)
        return rl__err(RL_EINVAL, "not a semaphore's handle (rl_semaphore_new())");
    if (atomic_load(&sem->client->closed))
        return rl__shut_down();
    if (!sem->client->fencing)
        return rl__err(RL_ENOTSUP, "the client was made without rl_options.fencing");
    h = rl__thread_find(rl__thread_self(), sem->client, sem->entry);
    if (!h)
        return rl__err(RL_ENOTOWNER, "the calling thread does not hold this semaphore");
    if (!h->nslots)
        return rl__err(RL_EPROTO, "the hold has no permit slots in Redis");
    *n = h->nslots;
    if (cap < h->nslots)
        return rl__err(RL_EINVAL, "room for %u slots, the hold has %u", cap, h->nslots);
    memcpy(slots, h->slots, h->nslots * sizeof slots[0]);
    return RL_OK;
}

int rl_lock_interrupted(const rl_lock *lock)
{
    const rl__hold *h;

    rl__err_clear();
    if (!lock)
        return rl__err(RL_EINVAL, "lock is NULL");
    /* After a shutdown: a hold the client let go of still counts as lost
     * until rl_interrupted() has reported it. */
    if (atomic_load(&lock->client->closed))
        return rl__thread_has_orphan(rl__thread_self(), lock->client, lock->entry);
    h = rl__lock_find(lock, rl__thread_self());
    return h ? rl__hold_is_lost(h, rl__now_ms()) : 0;
}

/* One plain command on the lock's key, returning an integer. */
static int key_query(rl_lock *lock, const char *cmd, long long *out)
{
    const char *argv[2];
    size_t lens[2];
    int rc;

    if ((rc = rl__lock_begin(lock)) != RL_OK)
        return rc;
    if (lock->client->mode == RL__MODE_REDLOCK) {
        rc = rl__redlock_query(lock->client, lock->entry, cmd, out);
        rl__call_end(lock->client);
        return rc;
    }
    argv[0] = cmd;
    lens[0] = strlen(cmd);
    argv[1] = lock->entry->key;
    lens[1] = lock->entry->key_len;
    rc = key_command(lock->client, lock->entry, 2, argv, lens, out);
    rl__call_end(lock->client);
    return rc;
}

int rl_lock_is_locked(rl_lock *lock)
{
    long long n = 0;
    int rc = key_query(lock, "EXISTS", &n);

    return rc == RL_OK ? n > 0 : rc;
}

int rl_lock_ttl(long *out, rl_lock *lock)
{
    long long n = 0;
    int rc;

    if (!out) {
        rl__err_clear();
        return rl__err(RL_EINVAL, "out is NULL");
    }
    if ((rc = key_query(lock, "PTTL", &n)) == RL_OK)
        *out = (long)n;
    return rc;
}
