/*
 * reply.c (pure): what a reply says (a script's result, a count, an
 * error's status, CLIENT INFO).
 */
#ifndef RL_REPLY_H
#define RL_REPLY_H

#include "common.h"
#include "resp.h"

/* What a script said, decoded from its reply. */
typedef struct rl__result {
    int code;           /* see RL__R_* */
    long long value;    /* count, or PTTL when busy */
    unsigned long long token; /* done: the hold's fencing token (0: none);
                               * busy, a semaphore's: the permits it lacked */
    unsigned nslots;          /* done, a fenced semaphore's new hold: its permit
                               * slots (lua/lib/sem_slots.lua); 0: none */
    unsigned slots[RL__SEM_SLOTS_MAX];
} rl__result;

#define RL__R_DONE      1   /* applied; value = new count */
#define RL__R_BUSY      0   /* held by another; value = PTTL */
#define RL__R_NOTOWNER (-1) /* our field is absent */
#define RL__R_MISMATCH (-2) /* our field holds another count; value = it */

int rl__reply_result(const redisReply *reply, rl__result *out);
int rl__reply_count(const redisReply *reply, long long *out); /* HGET: nil → 0 */
/* HGET of a hold's value: its count (nil → 0) and fencing token (0: none);
 * with slots not NULL, a fenced semaphore hold's slots into slots->slots
 * and slots->nslots (0: none). */
int rl__reply_hold(const redisReply *reply, long long *count, unsigned long long *token,
                   rl__result *slots);
/* A fenced semaphore hold's slots, "<n>[,<n>...]" (s, len bytes), into
 * out->slots and out->nslots. Pure. */
int rl__parse_slots(const char *s, size_t len, rl__result *out);
/* A renewal's reply: n flags, '1' renewed, '0' gone, '2' placed (Redlock's spread). */
int rl__reply_flags(const redisReply *reply, size_t n, const char **out);
int rl__reply_error_status(const redisReply *reply);
int rl__error_status(const char *msg, size_t len);
int rl__resp_result(const rl__resp *resp, rl__result *out);
typedef struct rl__fence rl__fence;
int rl__parse_client_info(const char *s, size_t len, rl__fence *out);

#endif
