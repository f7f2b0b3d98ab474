/*
 * resp.c (pure): the hot path's own RESP2 encoding and reading.
 */
#ifndef RL_RESP_H
#define RL_RESP_H

#include "common.h"

#define RL__FORCE_TIDS 6        /* thread ids a force-release reply lists */
/* A fenced semaphore hold's reply: {1, 1, token, slot...}. */
#define RL__RESP_MAX_INTS (3 + RL__SEM_SLOTS_MAX)
enum { RL__RESP_INT = 1, RL__RESP_ARRAY, RL__RESP_ERROR, RL__RESP_STATUS };

typedef struct rl__resp {
    int type;
    int nints;                          /* INT: 1; ARRAY: its length */
    long long ints[RL__RESP_MAX_INTS];
    const char *str;                    /* ERROR/STATUS text, not terminated */
    size_t str_len;
} rl__resp;

/* Encode a command; returns its length, or a bound on it when > cap. */
size_t rl__resp_encode(char *buf, size_t cap, int argc, const char **argv, const size_t *lens);
/* 1: a whole reply (*used bytes); 0: need more bytes; -1: not a reply rlock reads. */
int rl__resp_read(const char *buf, size_t len, rl__resp *out, size_t *used);

#endif
