/* The referee; see referee.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "referee.h"
#include "rlock.h"

static void rf_work(long us)
{
    struct timespec ts;

    if (us <= 0)
        return;
    ts.tv_sec = us / 1000000;
    ts.tv_nsec = (us % 1000000) * 1000;
    nanosleep(&ts, NULL);
}

static int rf_failed(redisContext *ref, redisReply *r, const char *what)
{
    fprintf(stderr, "referee: %s: %s\n", what,
            r ? (r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply") : ref->errstr);
    if (r)
        freeReplyObject(r);
    return RF_ERROR;
}

int rf_section(redisContext *ref, const char *name, const char *owner, long work_us)
{
    char key[256], entry[160];
    redisReply *r;
    long long v = 0;

    snprintf(key, sizeof key, "rf:{%s}:ctr", name);
    r = redisCommand(ref, "GET %s", key);
    if (!r || (r->type != REDIS_REPLY_NIL && r->type != REDIS_REPLY_STRING))
        return rf_failed(ref, r, "GET");
    if (r->type == REDIS_REPLY_STRING)
        v = strtoll(r->str, NULL, 10);
    freeReplyObject(r);

    rf_work(work_us);
    if (rl_interrupted())
        return RF_FLAGGED;

    r = redisCommand(ref, "SET %s %lld", key, v + 1);
    if (!r || r->type != REDIS_REPLY_STATUS)
        return rf_failed(ref, r, "SET");
    freeReplyObject(r);

    snprintf(key, sizeof key, "rf:{%s}:log", name);
    snprintf(entry, sizeof entry, "%s:%lld", owner, v + 1);
    r = redisCommand(ref, "RPUSH %s %s", key, entry);
    if (!r || r->type != REDIS_REPLY_INTEGER)
        return rf_failed(ref, r, "RPUSH");
    freeReplyObject(r);
    return RF_WROTE;
}

long long rf_count(redisContext *ref, const char *name)
{
    redisReply *r = redisCommand(ref, "LLEN rf:{%s}:log", name);
    long long n = -1;

    if (r && r->type == REDIS_REPLY_INTEGER)
        n = r->integer;
    if (r)
        freeReplyObject(r);
    return n;
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

static int judge_one(redisContext *ref, const char *name, rf_result *out)
{
    redisReply *log, *ctr;
    long long *vals, counter = 0, prev = 0;
    size_t i, n;

    log = redisCommand(ref, "LRANGE rf:{%s}:log 0 -1", name);
    if (!log || log->type != REDIS_REPLY_ARRAY)
        return rf_failed(ref, log, "LRANGE");
    ctr = redisCommand(ref, "GET rf:{%s}:ctr", name);
    if (!ctr || (ctr->type != REDIS_REPLY_NIL && ctr->type != REDIS_REPLY_STRING)) {
        freeReplyObject(log);
        return rf_failed(ref, ctr, "GET");
    }
    if (ctr->type == REDIS_REPLY_STRING)
        counter = strtoll(ctr->str, NULL, 10);
    freeReplyObject(ctr);

    n = log->elements;
    vals = calloc(n ? n : 1, sizeof *vals);
    if (!vals) {
        freeReplyObject(log);
        return -1;
    }
    for (i = 0; i < n; i++) {
        const char *s = log->element[i]->str;
        const char *colon = s ? strrchr(s, ':') : NULL;
        vals[i] = colon ? strtoll(colon + 1, NULL, 10) : -1;
        if (vals[i] != prev + 1) {
            out->disorder++;
            if (out->disorder <= 5)
                fprintf(stderr, "referee: %s: entry %zu is \"%s\" after value %lld\n",
                        name, i, s ? s : "?", prev);
        }
        prev = vals[i];
    }
    freeReplyObject(log);
    qsort(vals, n, sizeof *vals, cmp_ll);
    for (i = 1; i < n; i++)
        if (vals[i] == vals[i - 1])
            out->duplicates++;
    free(vals);
    if (counter != (long long)n) {
        out->mismatches++;
        fprintf(stderr, "referee: %s: counter %lld but %zu log entries\n", name, counter, n);
    }
    out->sections += (long long)n;
    return 0;
}

int rf_judge(redisContext *ref, const char *names, rf_result *out)
{
    char buf[1024], *save = NULL, *tok;

    memset(out, 0, sizeof *out);
    snprintf(buf, sizeof buf, "%s", names);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (judge_one(ref, tok, out) != 0)
            return -1;
    out->violations = out->duplicates + out->disorder + out->mismatches;
    return 0;
}
