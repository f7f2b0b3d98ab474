#include "races_common.h"

#include <stdlib.h>
#include <string.h>

#include "rt_util.h"

/* ---- hooks ------------------------------------------------------------- */

/* Defined by the hooked library (src/util.c); called at named points. */
extern void (*rl__test_hook)(const char *point);

/* The armed handlers, each fired once (by whichever thread gets there
 * first): the one arm() sets, and one arm_second() sets, for a race that
 * needs two points held. */
static _Atomic(hook_arm *) g_arm[2];

atomic_long g_wd_hooks, g_wd_rounds;
_Thread_local int tl_watchdog_thread;

static void dispatch(const char *point)
{
    hook_arm *a;
    int i;

    if (strncmp(point, "watchdog.", 9) == 0) {
        tl_watchdog_thread = 1;
        atomic_fetch_add(&g_wd_hooks, 1);
        if (strcmp(point, "watchdog.before_renew") == 0)
            atomic_fetch_add(&g_wd_rounds, 1);
    }
    for (i = 0; i < 2; i++) {
        a = atomic_load(&g_arm[i]);
        if (a != NULL && strcmp(a->point, point) == 0 &&
            atomic_compare_exchange_strong(&g_arm[i], &a, NULL)) {
            a->fn(a->arg);
            return;
        }
    }
}

void races_hooks_install(void)
{
    rl__test_hook = dispatch;
}

static void arm_slot(int i, hook_arm *a, const char *point, void (*fn)(void *), void *arg)
{
    a->point = point;
    a->fn = fn;
    a->arg = arg;
    atomic_store(&g_arm[i], a);
}

void arm(hook_arm *a, const char *point, void (*fn)(void *), void *arg)
{
    arm_slot(0, a, point, fn, arg);
}

void arm_second(hook_arm *a, const char *point, void (*fn)(void *), void *arg)
{
    arm_slot(1, a, point, fn, arg);
}

void disarm(void)
{
    atomic_store(&g_arm[0], NULL);
    atomic_store(&g_arm[1], NULL);
}

int races_setup(void **state)
{
    disarm();
    return it_setup(state);
}

int races_teardown(void **state)
{
    disarm();
    return it_teardown(state);
}

/* ---- threads and memory -------------------------------------------------- */

void *xcalloc(size_t size)
{
    void *p = calloc(1, size);

    if (p == NULL)
        fail_msg("out of memory");
    return p;
}

pthread_t spawn(void *(*fn)(void *), void *arg)
{
    pthread_t th;

    if (pthread_create(&th, NULL, fn, arg) != 0)
        fail_msg("pthread_create failed");
    return th;
}

int join_at(pthread_t th, atomic_int *st, int last, long timeout_ms)
{
    if (!RT_WAIT_UNTIL(atomic_load(st) == last, timeout_ms)) {
        pthread_detach(th);
        return -1;
    }
    pthread_join(th, NULL);
    return 0;
}

void wait_until_ms(int64_t at_ms)
{
    RT_WAIT_UNTIL(rt_now_ms() >= at_ms, 60000);
}

void *races_is_locked_main(void *arg)
{
    races_call *x = arg;

    x->call_ms = rt_now_ms();
    atomic_store(&x->state, 1);
    x->rc = rl_lock_is_locked(x->l);
    x->return_us = rt_now_us();
    atomic_store(&x->state, 2);
    return NULL;
}

void *races_shutdown_main(void *arg)
{
    races_call *x = arg;

    x->call_ms = rt_now_ms();
    atomic_store(&x->state, 1);
    x->rc = rl_client_shutdown(x->c);
    x->return_us = rt_now_us();
    atomic_store(&x->state, 2);
    return NULL;
}

/* ---- Redis ---------------------------------------------------------------- */

int wait_renewed(redisContext *rc, const char *key, size_t kl, long timeout_ms)
{
    long long low = rt_redis_pttl(rc, key, kl), p;

    return RT_WAIT_UNTIL(((p = rt_redis_pttl(rc, key, kl)) < low ? (low = p, 0)
                                                                : p > low + 100),
                         timeout_ms);
}
