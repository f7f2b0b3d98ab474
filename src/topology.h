/*
 * topology.c (pure): what a Redis Cluster says of its slots (redirects,
 * CLUSTER SLOTS).
 */
#ifndef RL_TOPOLOGY_H
#define RL_TOPOLOGY_H

#include "common.h"

#define RL__HOST_MAX 256    /* host names and addresses, NUL included */

enum { RL__REDIR_NONE, RL__REDIR_MOVED, RL__REDIR_ASK };

/* "MOVED <slot> <host>:<port>" or "ASK <slot> <host>:<port>". */
typedef struct rl__redirect {
    int kind;                   /* RL__REDIR_* */
    uint16_t slot;
    char host[RL__HOST_MAX];    /* "" when the reply names no host (":port"):
                                 * the node that answered */
    int port;
} rl__redirect;

/* An error reply's text (msg[0..len), not necessarily terminated): 1 and
 * *out set when it is a well-formed MOVED or ASK; 0 when it is another
 * error; -1 when it starts with MOVED or ASK but cannot be parsed. */
int rl__redirect_parse(const char *msg, size_t len, rl__redirect *out);

/* Errors of a Cluster in motion, after which the command certainly did
 * not run and may be sent again: TRYAGAIN, CLUSTERDOWN. 1 or 0. */
int rl__cluster_retryable(const char *msg, size_t len);

/* For each slot range of a CLUSTER SLOTS reply, fn(arg, first, last, host,
 * port) with its master; host is "" when the reply gives none (or "?"):
 * the node that answered. fn returns 0 to go on. Returns the number of
 * ranges, -1 when the reply is malformed (fn may have been called for the
 * ranges before), or what fn returned when not 0. */
int rl__slots_parse(const redisReply *r,
                    int (*fn)(void *arg, int first, int last, const char *host, int port),
                    void *arg);

#endif
