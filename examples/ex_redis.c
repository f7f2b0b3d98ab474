/*
 * Shared by the examples: a plain hiredis connection of their own, for
 * their own data, to the Redis (or the Redis Cluster) that rlock's URL
 * names.
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

/* For connecting and for each reply. */
static const struct timeval ex_timeout = { 2, 0 };

/* For commands whose reply does not matter: 0 on success, -1 on error. */
int ex_ok(redisReply *r)
{
    if (r == NULL)
        return -1;
    freeReplyObject(r);
    return 0;
}

/* Point c at a new connection to host:port (port 0: the Unix socket at
 * host). The old connection is closed only once the new one is up. */
static int connect_to(ex_conn *c, const char *host, int port)
{
    redisContext *ctx = port ? redisConnectWithTimeout(host, port, ex_timeout)
                             : redisConnectUnixWithTimeout(host, ex_timeout);

    if (ctx == NULL || ctx->err) {
        const char *why = ctx ? ctx->errstr : "out of memory";
        if (port)
            fprintf(stderr, "%s: cannot connect to %s:%d: %s\n", ex_prog, host, port, why);
        else
            fprintf(stderr, "%s: cannot connect to %s: %s\n", ex_prog, host, why);
        redisFree(ctx);
        return -1;
    }
    redisFree(c->ctx);
    c->ctx = ctx;
    return 0;
}

/* Log in, when the URL had a password: 0 or -1. */
static int login(ex_conn *c)
{
    if (c->pass[0] == '\0')
        return 0;
    return ex_ok(c->user[0] ? ex_command(c, "AUTH %s %s", c->user, c->pass)
                            : ex_command(c, "AUTH %s", c->pass));
}

/* err is "MOVED <slot> <host>:<port>": connect to that node, log in. The
 * host is empty when it is the one we are connected to. */
static int follow_moved(ex_conn *c, const char *err)
{
    const char *addr = strchr(err + 6, ' '), *colon;
    char host[256];
    size_t len;

    if (addr == NULL || (colon = strrchr(++addr, ':')) == NULL ||
        (len = (size_t)(colon - addr)) >= sizeof host)
        return -1;
    memcpy(host, addr, len);
    host[len] = '\0';
    if (len == 0 && c->ctx->tcp.host != NULL)
        snprintf(host, sizeof host, "%s", c->ctx->tcp.host);
    if (connect_to(c, host, atoi(colon + 1)) != 0)
        return -1;
    return login(c);
}

/* Run a command, following MOVED; print and return NULL on a connection or
 * Redis error. */
redisReply *ex_command(ex_conn *c, const char *fmt, ...)
{
    va_list ap;
    redisReply *r;

    for (int hops = 0;; hops++) {
        va_start(ap, fmt);
        r = redisvCommand(c->ctx, fmt, ap);
        va_end(ap);
        if (r == NULL) {
            fprintf(stderr, "%s: redis: %s\n", ex_prog, c->ctx->errstr);
            return NULL;
        }
        /* The key is on another node of the cluster: go there and send the
         * command again. A few hops at most: a slot may move meanwhile. */
        if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "MOVED ", 6) == 0 &&
            hops < 3 && follow_moved(c, r->str) == 0) {
            freeReplyObject(r);
            continue;
        }
        if (r->type == REDIS_REPLY_ERROR) {
            fprintf(stderr, "%s: redis: %s\n", ex_prog, r->str);
            freeReplyObject(r);
            return NULL;
        }
        return r;
    }
}

/* "host[:port]" or "[ipv6][:port]", cut in place. 0, or -1 if malformed. */
static int split_seed(char *seed, char **host, int *port)
{
    char *p;

    *host = seed;
    *port = 6379;
    if (*seed == '[') {
        *host = seed + 1;
        if ((p = strchr(*host, ']')) == NULL)
            return -1;
        *p++ = '\0';
    } else {
        p = seed + strcspn(seed, ":");
    }
    if (*p == ':')
        *port = atoi(p + 1);
    *p = '\0';
    if (**host == '\0')
        *host = "127.0.0.1";
    return *port > 0 && *port < 65536 ? 0 : -1;
}

/*
 * A connection of our own, for the examples' data, to the Redis that
 * rlock's URL names. Understands the plain URL forms (no percent-decoding);
 * of a seed list (a cluster), the first seed that answers.
 */
ex_conn *ex_connect_url(const char *url)
{
    char buf[512], *hosts, *p, *seed, *save = NULL, *host;
    int port, db = 0;
    ex_conn *c;

    if (strlen(url) >= sizeof buf)
        goto bad_url;
    if ((c = calloc(1, sizeof *c)) == NULL) {
        fprintf(stderr, "%s: out of memory\n", ex_prog);
        return NULL;
    }
    if (strncmp(url, "unix://", 7) == 0) {
        strcpy(buf, url + 7);
        if ((p = strchr(buf, '?')) != NULL) {       /* ?db=N */
            *p = '\0';
            if (strncmp(p + 1, "db=", 3) == 0)
                db = atoi(p + 4);
        }
        if (connect_to(c, buf, 0) != 0)
            goto fail;
    } else if (strncmp(url, "redis://", 8) == 0) {
        strcpy(buf, url + 8);
        hosts = buf;
        if ((p = strrchr(buf, '@')) != NULL) {      /* [user]:pass@ */
            *p = '\0';
            hosts = p + 1;
            if ((p = strchr(buf, ':')) != NULL) {
                *p++ = '\0';
                if (strlen(buf) >= sizeof c->user || strlen(p) >= sizeof c->pass)
                    goto bad_url_free;
                strcpy(c->user, buf);
                strcpy(c->pass, p);
            }
        }
        if ((p = strchr(hosts, '/')) != NULL) {     /* /db */
            *p = '\0';
            db = atoi(p + 1);
        }
        /* host[:port][,host[:port]...]: the first seed that answers. */
        for (seed = strtok_r(hosts, ",", &save); seed && !c->ctx;
             seed = strtok_r(NULL, ",", &save)) {
            if (split_seed(seed, &host, &port) != 0)
                goto bad_url_free;
            connect_to(c, host, port);
        }
        if (c->ctx == NULL)
            goto fail;
    } else {
        goto bad_url;
    }
    if (login(c) != 0 || (db != 0 && ex_ok(ex_command(c, "SELECT %d", db)) != 0))
        goto fail;
    return c;

bad_url_free:
    free(c);
bad_url:
    fprintf(stderr, "%s: cannot use URL \"%s\"\n", ex_prog, url);
    return NULL;
fail:
    ex_close(c);
    return NULL;
}

void ex_close(ex_conn *c)
{
    if (c == NULL)
        return;
    redisFree(c->ctx);
    free(c);
}

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
