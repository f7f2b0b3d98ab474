/* Helpers shared by the examples (not part of rlock). */
#ifndef EX_REDIS_H
#define EX_REDIS_H

#include <hiredis/hiredis.h>

/* Program name used in messages. */
extern const char *ex_prog;

/* Run a command; print and return NULL on a connection or Redis error. */
redisReply *ex_command(redisContext *rc, const char *fmt, ...);

/* For commands whose reply does not matter: 0 on success, -1 on error. */
int ex_ok(redisReply *r);

/* Connect to "redis://[[user]:pass@]host[:port][/db]" or "unix:///path[?db=N]"
 * (no percent-decoding). NULL after printing why. */
redisContext *ex_connect_url(const char *url);

/* A whole decimal number within [min, max] into *out: 0, or -1. */
int ex_parse_long(const char *s, long min, long max, long *out);

#endif
