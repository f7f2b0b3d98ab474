/*
 * A lock's hash read as the public rl_lock_info and rl_holder_info, with
 * no I/O: inspect.c reads Redis and hands each key's HGETALL here.
 */
#ifndef RL_LOCKINFO_H
#define RL_LOCKINFO_H

#include "common.h"
#include "topology.h"     /* RL__HOST_MAX */

/* The public structs and the memory their strings point into. */
typedef struct rl__holder_mem {
    rl_holder_info pub;
    char owner[RL__UUID_LEN + 1];
    char thread[24];
    char host[RL__HOST_MAX];
    char client_name[RL_CLIENT_NAME_MAX + 1];
    char version[32];
} rl__holder_mem;

typedef struct rl__info_mem {
    rl_lock_info pub;
    char *name;
    char node[RL__HOST_MAX + 8];
    rl_holder_info **holders;   /* room for every field of the hash */
} rl__info_mem;

/* The fields of `hash` (an HGETALL reply) as w's holders, kind, permits
 * and lock-delay; now is Redis TIME in ms (-1: unknown), w's lease_left_ms
 * and queued already set. RL_OK or RL_ENOMEM. */
int rl__info_fields(rl__info_mem *w, const redisReply *hash, long long now);
/* Free w, its holders and its name. Accepts NULL. */
void rl__info_free(rl__info_mem *w);
/* A caller of layout `asked`: locks[0..n) with no kind its header lacks. */
void rl__info_as_layout(rl_lock_info *const *locks, size_t n, unsigned int asked);

#endif
