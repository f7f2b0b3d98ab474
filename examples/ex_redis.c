/*
 * Shared by the examples: a plain hiredis connection of their own, for
 * their own data, to the Redis that rlock's URL names.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "ex_redis.h"

const char *ex_prog = "example";

/* Run a command; print and return NULL on a connection or Redis error. */
redisReply *ex_command(redisContext *rc, const char *fmt, ...)
{
    va_list ap;
    redisReply *r;

    va_start(ap, fmt);
    r = redisvCommand(rc, fmt, ap);
    va_end(ap);
    if (r == NULL) {
        fprintf(stderr, "%s: redis: %s\n", ex_prog, rc->errstr);
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "%s: redis: %s\n", ex_prog, r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

/* For commands whose reply does not matter: 0 on success, -1 on error. */
int ex_ok(redisReply *r)
{
    if (r == NULL)
        return -1;
    freeReplyObject(r);
    return 0;
}

/*
 * A hiredis connection of our own, for the accounts, to the Redis that
 * rlock's URL names. Understands the plain URL forms (no percent-decoding).
 */
redisContext *ex_connect_url(const char *url)
{
    struct timeval tv = { 2, 0 };
    char buf[512], *host, *auth = NULL, *p;
    int port = 6379, db = 0, is_unix = 0;
    redisContext *rc;

    if (strlen(url) >= sizeof buf)
        goto bad_url;
    if (strncmp(url, "redis://", 8) == 0) {
        strcpy(buf, url + 8);
        host = buf;
        if ((p = strrchr(host, '@')) != NULL) {     /* [user]:pass@ */
            *p = '\0';
            auth = host;
            host = p + 1;
        }
        if ((p = strchr(host, '/')) != NULL) {      /* /db */
            *p = '\0';
            db = atoi(p + 1);
        }
        if (*host == '[') {                         /* [IPv6] */
            host++;
            if ((p = strchr(host, ']')) == NULL)
                goto bad_url;
            *p++ = '\0';
        } else {
            p = host + strcspn(host, ":");
        }
        if (*p == ':')                              /* :port */
            port = atoi(p + 1);
        *p = '\0';
        if (*host == '\0')
            host = "127.0.0.1";
    } else if (strncmp(url, "unix://", 7) == 0) {
        strcpy(buf, url + 7);
        host = buf;
        is_unix = 1;
        if ((p = strchr(host, '?')) != NULL) {      /* ?db=N */
            *p = '\0';
            if (strncmp(p + 1, "db=", 3) == 0)
                db = atoi(p + 4);
        }
    } else {
        goto bad_url;
    }

    rc = is_unix ? redisConnectUnixWithTimeout(host, tv)
                 : redisConnectWithTimeout(host, port, tv);
    if (rc == NULL || rc->err) {
        fprintf(stderr, "%s: cannot connect to %s: %s\n", ex_prog, url,
                rc ? rc->errstr : "out of memory");
        redisFree(rc);
        return NULL;
    }
    if (auth != NULL && (p = strchr(auth, ':')) != NULL && p[1] != '\0') {
        *p = '\0';
        if (ex_ok(*auth ? ex_command(rc, "AUTH %s %s", auth, p + 1)
                     : ex_command(rc, "AUTH %s", p + 1)) != 0)
            goto fail;
    }
    if (db != 0 && ex_ok(ex_command(rc, "SELECT %d", db)) != 0)
        goto fail;
    return rc;

fail:
    redisFree(rc);
    return NULL;
bad_url:
    fprintf(stderr, "%s: cannot use URL \"%s\"\n", ex_prog, url);
    return NULL;
}

/* ---- the job --------------------------------------------------------- */

/* An unexpected rlock status: say what and why, and count a failure. */

int ex_parse_long(const char *s, long min, long max, long *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}
