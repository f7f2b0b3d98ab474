/*
 * fork() safety. pthread_atfork handlers take no argument, so the clients of
 * the process are kept in one registry: the one piece of global state
 * besides the thread-local identity and error detail.
 *
 * Before fork: every client mutex is taken, so the child inherits tables in
 * a consistent state, then tls.c's gate is closed, so that no thread of
 * the library is inside OpenSSL. In the child: mutexes are released, condition
 * variables made anew, and each client is marked; the first call on it then
 * rebuilds it as a new owner (new UUID) holding nothing.
 */
#include <stdlib.h>
#include <unistd.h>

#include <uuid/uuid.h>

#include "client.h"
#include "error.h"
#include "fork.h"
#include "holds.h"
#include "outcome.h"
#include "owner.h"
#include "router.h"
#include "server.h"
#include "stats.h"
#include "subscriber.h"
#include "thread.h"
#include "tls.h"
#include "util.h"
#include "watchdog.h"

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static rl_client *registry;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static int atfork_rc;

static void prepare(void)
{
    rl_client *c;

    pthread_mutex_lock(&registry_mu);
    for (c = registry; c; c = c->reg_next)
        pthread_mutex_lock(&c->mu);
    /* Last: a thread inside OpenSSL takes no client mutex before it leaves. */
    rl__tls_fork_prepare();
}

static void parent(void)
{
    rl_client *c;

    rl__tls_fork_parent();
    for (c = registry; c; c = c->reg_next)
        pthread_mutex_unlock(&c->mu);
    pthread_mutex_unlock(&registry_mu);
}

static void child(void)
{
    rl_client *c;

    /* The only thread left is the one that forked: whatever it held in the
     * parent, it holds nothing here. */
    rl__thread_forget_all();
    rl__tls_fork_child();
    for (c = registry; c; c = c->reg_next) {
        atomic_store(&c->forked, 1);
        /* The child is a new client as far as its counters go. */
        rl__stats_reset(&c->stats);
        /* No thread of the child is inside a call, and none is shutting the
         * client down: a shutdown begun by the parent is over here (the
         * rebuild drops what the parent held). */
        atomic_store(&c->calls, 0);
        if (atomic_load(&c->closing))
            c->shut = 1;
        rl__cond_init(&c->pool_cond);
        rl__cond_init(&c->wd_cond);
        rl__cond_init(&c->kp_cond);
        rl__cond_init(&c->leftover_cond);
        rl__cond_init(&c->round_cond);
        rl__cond_init(&c->calls_cond);
        rl__cond_init(&c->map_cond);
        pthread_mutex_unlock(&c->mu);
    }
    pthread_mutex_unlock(&registry_mu);
}

static void register_atfork(void)
{
    atfork_rc = pthread_atfork(prepare, parent, child);
}

int rl__registry_add(rl_client *c)
{
    pthread_once(&atfork_once, register_atfork);
    if (atfork_rc != 0)
        return rl__err(RL_ENOMEM, "pthread_atfork failed");
    pthread_mutex_lock(&registry_mu);
    c->reg_next = registry;
    registry = c;
    pthread_mutex_unlock(&registry_mu);
    return RL_OK;
}

void rl__registry_remove(rl_client *c)
{
    rl_client **pp;

    pthread_mutex_lock(&registry_mu);
    for (pp = &registry; *pp; pp = &(*pp)->reg_next) {
        if (*pp == c) {
            *pp = c->reg_next;
            break;
        }
    }
    pthread_mutex_unlock(&registry_mu);
}

/* Whether c is a live client, and if so a reference on it (drop it with
 * rl__client_unref), taken under the registry lock so that a concurrent
 * rl_client_free cannot free it in between. */
int rl__registry_ref(rl_client *c)
{
    const rl_client *p;
    int found = 0;

    pthread_mutex_lock(&registry_mu);
    for (p = registry; p && !found; p = p->reg_next)
        found = p == c;
    if (found)
        atomic_fetch_add(&c->refs, 1);
    pthread_mutex_unlock(&registry_mu);
    return found;
}

/* Whether c is a live client. Compares pointers only: never reads *c, so it
 * is safe to call with a pointer to a client already freed. */
int rl__registry_has(const rl_client *c)
{
    const rl_client *p;
    int found = 0;

    pthread_mutex_lock(&registry_mu);
    for (p = registry; p && !found; p = p->reg_next)
        found = p == c;
    pthread_mutex_unlock(&registry_mu);
    return found;
}

void rl__identity_new(rl_client *c)
{
    uuid_t id;

    uuid_generate_random(id);
    uuid_unparse_lower(id, c->uuid);
    rl__owner_identity(c);
}

void rl__rebuild_after_fork(rl_client *c)
{
    /* Each part drops what the parent's threads had: connections, the
     * watchdog's and the subscriber's threads, leftovers, then holds and
     * waiters (which frees the entries nothing else keeps). */
    rl__pool_after_fork(c);
    rl__router_after_fork(c);
    rl__watchdog_after_fork(c);
    rl__sub_after_fork(c);
    rl__leftovers_free(c);
    rl__holds_after_fork(c);
    c->stopping = 0;

    rl__identity_new(c);
    /* Sentinel mode: the subscriber hears of failovers; it runs always. */
    if (c->mode == RL__MODE_SENTINEL)
        rl__sub_ensure(c);
    atomic_store_explicit(&c->forked, 0, memory_order_release);
    rl__log(c, RL_LOG_INFO, "rlock: new owner %s after fork", c->uuid);
}
