/*
 * libFuzzer target: the hot path's own RESP2 reader, rl__resp_read()
 * (src/resp.c), and rl__resp_result() (src/reply.c) on what it reads.
 * The bytes are one stream of replies, read reply after reply as a
 * connection would. Checks:
 *   - a complete reply never claims more bytes than it was given, nor none;
 *   - every shorter prefix of a complete reply is "need more" (0), never a
 *     different reply (a reply cut by the network is not accepted early);
 *   - when hiredis's reader also takes the same bytes, it reads the same
 *     type and the same integers (differential).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <hiredis/read.h>

#include "rlock_int.h"

static void agree_with_hiredis(const char *buf, size_t len, const rl__resp *r)
{
    redisReader *rd = redisReaderCreate();
    void *reply = NULL;
    const redisReply *h;
    int i;

    if (!rd)
        return;
    redisReaderFeed(rd, buf, len);
    if (redisReaderGetReply(rd, &reply) != REDIS_OK || !reply) {
        /* hiredis is stricter on some spellings Redis never sends (":01"). */
        redisReaderFree(rd);
        return;
    }
    h = reply;
    if (r->type == RL__RESP_INT && (h->type != REDIS_REPLY_INTEGER || h->integer != r->ints[0]))
        abort();
    if (r->type == RL__RESP_ARRAY) {
        if (h->type != REDIS_REPLY_ARRAY || h->elements != (size_t)r->nints)
            abort();
        for (i = 0; i < r->nints; i++)
            if (h->element[i]->type != REDIS_REPLY_INTEGER || h->element[i]->integer != r->ints[i])
                abort();
    }
    if ((r->type == RL__RESP_ERROR && h->type != REDIS_REPLY_ERROR) ||
        (r->type == RL__RESP_STATUS && h->type != REDIS_REPLY_STATUS))
        abort();
    freeReplyObject(reply);
    redisReaderFree(rd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A private copy, so that reads past the given length are caught. */
    char *buf = malloc(size ? size : 1);
    size_t off = 0, used, k;
    rl__resp r, p;
    rl__result res;
    int st, replies = 0;

    if (!buf)
        return 0;
    memcpy(buf, data, size);
    while (off < size && replies < 32) {
        used = 0;
        st = rl__resp_read(buf + off, size - off, &r, &used);
        if (st != 1)
            break;
        if (used == 0 || used > size - off)
            abort();
        for (k = 0; k < used; k++) {
            size_t u2 = 0;
            if (rl__resp_read(buf + off, k, &p, &u2) != 0 && k > 0) {
                /* A prefix may be refused outright (-1) only if the whole is not a reply. */
                if (rl__resp_read(buf + off, k, &p, &u2) == 1)
                    abort();
            }
        }
        agree_with_hiredis(buf + off, used, &r);
        rl__resp_result(&r, &res);
        off += used;
        replies++;
    }
    free(buf);
    return 0;
}
