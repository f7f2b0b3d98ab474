/*
 * libFuzzer target: lock names and the channel names that come back from
 * Redis. A name (binary, 1..RL_NAME_MAX bytes) becomes an entry of the
 * client's table, with its key "<prefix>{<tag>}" and its release channel
 * "<prefix>{<tag>}:release", the tag being the name with a backslash in
 * front when it starts with '}' or a backslash (src/holds.c); the
 * subscriber maps a channel in a Redis message back to its entry with
 * rl__entry_by_channel(). The
 * input is split into a prefix, a few names and a channel to look up.
 * Checks: every entry's own channel maps back to it, its key has the
 * documented shape, key and channel share a Redis Cluster slot (when the
 * prefix has no brace, as rl_client_new requires), and a foreign channel
 * never maps to a wrong entry.
 * No I/O: the client is a bare table, never connected.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rlock_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rl_client *c = calloc(1, sizeof *c);
    rl__entry *made[8];
    size_t nmade = 0, off = 0, i;
    size_t plen = size ? data[0] % 8 : 0;
    int braced;

    if (!c)
        return 0;
    off = size ? 1 : 0;
    if (plen > size - off)
        plen = size - off;
    c->prefix = malloc(plen + 1);
    memcpy(c->prefix, data + off, plen);
    c->prefix[plen] = '\0';
    c->prefix_len = plen;
    off += plen;
    braced = memchr(c->prefix, '{', plen) || memchr(c->prefix, '}', plen);

    /* Names: 0xff separates them; the last piece is the channel to look up. */
    while (off < size && nmade < 8) {
        const uint8_t *sep = memchr(data + off, 0xff, size - off);
        size_t len = sep ? (size_t)(sep - (data + off)) : size - off;
        if (!sep) {
            rl__entry *e = rl__entry_by_channel(c, (const char *)data + off, len);
            if (e && (e->channel_len != len || memcmp(e->channel, data + off, len) != 0))
                abort();
            break;
        }
        if (len >= 1 && len <= RL_NAME_MAX) {
            rl__entry *e = rl__entry_get(c, data + off, len);
            size_t esc = data[off] == '}' || data[off] == '\\';
            if (!e)
                break;
            if (e->name_len != len || memcmp(e->name, data + off, len) != 0 ||
                e->key_len != plen + len + 2 + esc || e->key[plen] != '{' ||
                (esc && e->key[plen + 1] != '\\') ||
                memcmp(e->key + plen + 1 + esc, data + off, len) != 0 ||
                e->slot != rl__slot(e->key, e->key_len) ||
                (!braced && e->slot != rl__slot(e->channel, e->channel_len)) ||
                e->key[e->key_len - 1] != '}' ||
                e->channel_len != e->key_len + 8 ||
                memcmp(e->channel + e->key_len, ":release", 8) != 0)
                abort();
            made[nmade++] = e;
        }
        off += len + 1;
    }
    for (i = 0; i < nmade; i++)
        if (rl__entry_by_channel(c, made[i]->channel, made[i]->channel_len) != made[i])
            abort();
    rl__entry_free_all(c);
    free(c->prefix);
    free(c);
    return 0;
}
