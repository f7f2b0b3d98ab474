/* Helpers shared by the examples (not part of rlock). */
#ifndef EX_REDIS_H
#define EX_REDIS_H

#include <hiredis/hiredis.h>

/* Program name used in messages. */
extern const char *ex_prog;

/*
 * The examples' own connection, for their own data. On a Redis Cluster a
 * key lives on one node: a command sent elsewhere is answered "MOVED slot
 * host:port", and ex_command() then moves the connection to that node and
 * sends it again. Keep all of a program's keys in one hash slot (give them
 * one {tag}) and the connection moves at most once.
 */
typedef struct ex_conn {
    redisContext *ctx;
    char user[128], pass[128];  /* to log in again on another node */
} ex_conn;

/* Connect to "redis://[[user]:pass@]host[:port][,host[:port]...][/db]" (the
 * seeds are tried in order) or "unix:///path[?db=N]" (no percent-decoding).
 * NULL after printing why. */
ex_conn *ex_connect_url(const char *url);

/* Close and free; NULL is fine. */
void ex_close(ex_conn *c);

/* Run a command, following MOVED; print and return NULL on a connection or
 * Redis error. */
redisReply *ex_command(ex_conn *c, const char *fmt, ...);

/* For commands whose reply does not matter: 0 on success, -1 on error. */
int ex_ok(redisReply *r);

/* A whole decimal number within [min, max] into *out: 0, or -1. */
int ex_parse_long(const char *s, long min, long max, long *out);

#endif
