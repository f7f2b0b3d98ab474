/*
 * libFuzzer target: Redis replies as rlock interprets them. The bytes are
 * fed to a hiredis reader (the RESP parser rlock's connections use); every
 * reply it produces goes through rl__reply_result() (script results),
 * rl__reply_count() (HGET read-backs) and rl__reply_flags() (renewal
 * answers, for the reply's own length and for a length taken from the
 * input) from src/reply.c. Checks the results they promise.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <hiredis/read.h>

#include "rlock_int.h"

static void interpret(const redisReply *r, size_t n_hint)
{
    rl__result res;
    long long count;
    const char *flags;
    size_t n;

    if (rl__reply_result(r, &res) == RL_OK &&
        (res.code < RL__R_MISMATCH || res.code > RL__R_DONE))
        abort();
    if (rl__reply_count(r, &count) == RL_OK && r && r->type == REDIS_REPLY_STRING && count < 0)
        abort();
    if (!r) {
        rl__reply_flags(r, n_hint, &flags);
        return;
    }
    n = r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ? r->len : 0;
    if (rl__reply_flags(r, n, &flags) == RL_OK) {
        for (size_t i = 0; i < n; i++)
            if (flags[i] != '0' && flags[i] != '1' && flags[i] != '2')
                abort();
    }
    rl__reply_flags(r, n_hint, &flags);
    if (r->type == REDIS_REPLY_ERROR)
        rl__reply_error_status(r);
    if (r->type == REDIS_REPLY_ARRAY)
        for (size_t i = 0; i < r->elements && i < 8; i++)
            if (r->element[i])
                interpret(r->element[i], n_hint);
}

/*
 * hiredis 0.14's reader has no limit on the size an aggregate or a bulk
 * string may declare ("*310101101\r\n" makes it calloc 2.4 GB at once;
 * hiredis >= 1.0 has maxelements). That is the reader's, not rlock's:
 * inputs that declare more than 100000 elements or bytes are skipped.
 */
static int declares_huge(const uint8_t *data, size_t size)
{
    size_t i, j;

    for (i = 0; i + 1 < size; i++) {
        if (data[i] != '*' && data[i] != '$')
            continue;
        for (j = i + 1; j < size && data[j] >= '0' && data[j] <= '9'; j++)
            if (j - i > 5)
                return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    redisReader *rd;
    void *reply;
    size_t n_hint = size ? data[0] % 64 : 0;
    int replies = 0;

    if (declares_huge(data, size))
        return 0;
    rd = redisReaderCreate();
    if (!rd)
        return 0;
    /* Feed in two pieces, as a socket would deliver them. */
    if (size > 2) {
        redisReaderFeed(rd, (const char *)data + 1, (size - 1) / 2);
        redisReaderFeed(rd, (const char *)data + 1 + (size - 1) / 2, size - 1 - (size - 1) / 2);
    } else if (size > 1) {
        redisReaderFeed(rd, (const char *)data + 1, size - 1);
    }
    while (replies < 64 && redisReaderGetReply(rd, &reply) == REDIS_OK && reply) {
        interpret(reply, n_hint);
        freeReplyObject(reply);
        replies++;
    }
    /* No reply at all is still a case rlock handles. */
    interpret(NULL, 0);
    redisReaderFree(rd);
    return 0;
}
