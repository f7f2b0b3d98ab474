/* Clocks, condition variables on the monotonic clock, hashing, copies. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

#ifdef RL_TEST_HOOKS
void (*rl__test_hook)(const char *point);
#endif

int64_t rl__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t rl__wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int rl__cond_init(pthread_cond_t *cond)
{
    pthread_condattr_t attr;
    int rc;

    if (pthread_condattr_init(&attr) != 0)
        return -1;
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    rc = pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
    return rc == 0 ? 0 : -1;
}

int rl__cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mu, int64_t deadline_ms)
{
    struct timespec ts;

    if (deadline_ms < 0)
        return pthread_cond_wait(cond, mu);
    ts.tv_sec = (time_t)(deadline_ms / 1000);
    ts.tv_nsec = (long)(deadline_ms % 1000) * 1000000L;
    return pthread_cond_timedwait(cond, mu, &ts);
}

long rl__backoff_ms(long prev, long first, long max)
{
    if (!prev)
        return first;
    return prev * 2 > max ? max : prev * 2;
}

/* FNV-1a, 64 bit: names are short and not chosen by an attacker of the table. */
uint64_t rl__hash(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ULL;
    size_t i;

    for (i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

size_t rl__fmt_ll(char *buf, long long v)
{
    char tmp[24];
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    size_t n = 0, i = 0;

    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        buf[i++] = '-';
    while (n)
        buf[i++] = tmp[--n];
    buf[i] = '\0';
    return i;
}

char *rl__strdup(const char *s)
{
    return s ? rl__memdup(s, strlen(s) + 1) : NULL;
}

void *rl__memdup(const void *p, size_t len)
{
    void *copy = malloc(len ? len : 1);
    if (copy && len)
        memcpy(copy, p, len);
    return copy;
}
