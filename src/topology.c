/*
 * What a Redis Cluster says of where its slots live: the redirections in
 * an error reply (MOVED, ASK), the errors after which a command may simply
 * be sent again, and the map of CLUSTER SLOTS. Pure: no I/O, no globals;
 * the replies are not trusted (a proxy, a fork of Redis, a future version).
 */
#include <string.h>

#include "slot.h"
#include "topology.h"

/* An error's code is its first word: "MOVEDX" is not "MOVED". */
static int is_code(const char *msg, size_t len, const char *code)
{
    size_t n = strlen(code);

    return msg && len >= n && memcmp(msg, code, n) == 0 && (len == n || msg[n] == ' ');
}

/* Whole decimal s[0..len) within [min, max]; -1 when it is not one. Five
 * digits are enough for a slot and for a port. */
static long number(const char *s, size_t len, long min, long max)
{
    long v = 0;
    size_t i;

    if (len == 0 || len > 5)
        return -1;
    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v < min || v > max ? -1 : v;
}

/*
 * s[0..len) as a NUL-terminated host in dst[RL__HOST_MAX]; -1 when too long
 * or holding a space, a control byte or a NUL. Redis 7 writes IPv6 bare
 * ("::1"); brackets, should a proxy add them, are stripped. "" and "?" both
 * become "": Redis writes "" when it does not know its own address and "?"
 * for a node without an announced hostname when hostnames are preferred;
 * either way the caller's best guess is the node that answered.
 */
static int copy_host(char *dst, const char *s, size_t len)
{
    size_t i;

    if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
        s++;
        len -= 2;
    }
    if (len == 1 && s[0] == '?')
        len = 0;
    if (len >= RL__HOST_MAX)
        return -1;
    for (i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch <= ' ' || ch == 0x7f)
            return -1;
    }
    memcpy(dst, s, len);
    dst[len] = '\0';
    return 0;
}

int rl__redirect_parse(const char *msg, size_t len, rl__redirect *out)
{
    const char *p, *end, *sp, *colon;
    long slot, port;
    int kind;

    out->kind = RL__REDIR_NONE;
    out->host[0] = '\0';
    if (is_code(msg, len, "MOVED"))
        kind = RL__REDIR_MOVED;
    else if (is_code(msg, len, "ASK"))
        kind = RL__REDIR_ASK;
    else
        return 0;

    /* "<code> <slot> <host>:<port>", one space apart, nothing after. The
     * host may be an IPv6 address with colons of its own: the port is
     * after the last one. */
    end = msg + len;
    p = msg + (kind == RL__REDIR_MOVED ? 5 : 3);
    if (p == end)
        return -1;
    p++;
    sp = memchr(p, ' ', (size_t)(end - p));
    if (!sp || (slot = number(p, (size_t)(sp - p), 0, RL__SLOTS - 1)) < 0)
        return -1;
    p = sp + 1;
    for (colon = end; colon > p && colon[-1] != ':'; colon--)
        ;
    if (colon == p)
        return -1;
    colon--;
    if ((port = number(colon + 1, (size_t)(end - colon - 1), 1, 65535)) < 0)
        return -1;
    if (copy_host(out->host, p, (size_t)(colon - p)) != 0) {
        out->host[0] = '\0';
        return -1;
    }
    out->kind = kind;
    out->slot = (uint16_t)slot;
    out->port = (int)port;
    return 1;
}

int rl__cluster_retryable(const char *msg, size_t len)
{
    return is_code(msg, len, "TRYAGAIN") || is_code(msg, len, "CLUSTERDOWN");
}

static int int_in(const redisReply *r, long long min, long long max)
{
    return r && r->type == REDIS_REPLY_INTEGER && r->integer >= min && r->integer <= max;
}

/* A node's preferred endpoint: a string, or nil (Redis 7's
 * cluster-preferred-endpoint-type unknown-endpoint) meaning "". */
static int node_host(const redisReply *r, char *dst)
{
    if (!r)
        return -1;
    if (r->type == REDIS_REPLY_NIL) {
        dst[0] = '\0';
        return 0;
    }
    if (r->type != REDIS_REPLY_STRING || (!r->str && r->len))
        return -1;
    return copy_host(dst, r->str ? r->str : "", r->len);
}

/*
 * Each range is [first, last, master, replica...]; each node is [endpoint,
 * port, id, metadata...]: Redis 3 gave two elements, 4.0 added the id, 7.0
 * a map of other names (a flat array in RESP2). Only the master is read;
 * what follows it, in a range or in a node, is let be.
 */
int rl__slots_parse(const redisReply *r,
                    int (*fn)(void *arg, int first, int last, const char *host, int port),
                    void *arg)
{
    char host[RL__HOST_MAX];
    size_t i;

    /* More ranges than slots cannot be disjoint; the bound keeps the
     * count an int. */
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements > RL__SLOTS ||
        (r->elements && !r->element))
        return -1;
    for (i = 0; i < r->elements; i++) {
        const redisReply *range = r->element[i], *node;
        int first, last, rc;

        if (!range || range->type != REDIS_REPLY_ARRAY || range->elements < 3 || !range->element)
            return -1;
        if (!int_in(range->element[0], 0, RL__SLOTS - 1) ||
            !int_in(range->element[1], 0, RL__SLOTS - 1))
            return -1;
        first = (int)range->element[0]->integer;
        last = (int)range->element[1]->integer;
        if (first > last)
            return -1;
        node = range->element[2];
        if (!node || node->type != REDIS_REPLY_ARRAY || node->elements < 2 || !node->element)
            return -1;
        if (!int_in(node->element[1], 1, 65535) || node_host(node->element[0], host) != 0)
            return -1;
        if (fn && (rc = fn(arg, first, last, host, (int)node->element[1]->integer)) != 0)
            return rc;
    }
    return (int)r->elements;
}
