/*
 * Writes that never raise SIGPIPE (nopipe.h). The SIGPIPE a write raises on
 * a broken connection is directed at the writing thread, so blocking it in
 * that thread is enough: it stays pending instead of being delivered, and
 * is taken back with a zero-timeout sigtimedwait() before the mask is
 * restored. A SIGPIPE that was already pending when the write began is the
 * application's and stays (a second one would merge into it anyway). The
 * one case taken by mistake: a SIGPIPE sent to the whole process with
 * kill() during the call while every other thread blocks it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "nopipe.h"
#include "tls.h"

static void pipe_set(sigset_t *s)
{
    sigemptyset(s);
    sigaddset(s, SIGPIPE);
}

void rl__nopipe_begin(rl__nopipe *np)
{
    sigset_t pipe, pending;

    pipe_set(&pipe);
    pthread_sigmask(SIG_BLOCK, &pipe, &np->old);
    np->was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
}

void rl__nopipe_end(rl__nopipe *np)
{
    static const struct timespec now = { 0, 0 };
    int saved = errno;
    sigset_t pipe;

    pipe_set(&pipe);
    if (!np->was_pending)
        while (sigtimedwait(&pipe, NULL, &now) < 0 && errno == EINTR)
            ;
    if (!sigismember(&np->old, SIGPIPE))
        pthread_sigmask(SIG_SETMASK, &np->old, NULL);
    errno = saved;
}

/* Some hiredis 1.x releases name their sds functions hi_sds*; 0.14 and
 * the later ones sds* (CMakeLists.txt checks which). */
#ifdef RL_HIREDIS_HI_SDS
#  define rl__sdslen hi_sdslen
#  define rl__sdsrange hi_sdsrange
#else
#  define rl__sdslen sdslen
#  define rl__sdsrange sdsrange
#endif

/* ---- over a TLS link: rlock's transport, hiredis's buffers -------------- */

/* A failure on ctx, as hiredis would have set it. */
static int set_error(redisContext *ctx, ssize_t n)
{
    if (n == 0) {
        ctx->err = REDIS_ERR_EOF;
        snprintf(ctx->errstr, sizeof ctx->errstr, "%s", "Server closed the connection");
    } else {
        ctx->err = REDIS_ERR_IO;
        snprintf(ctx->errstr, sizeof ctx->errstr, "%s", rl__io_strerror(ctx->fd));
    }
    return REDIS_ERR;
}

/* Write what ctx has queued: all of it, waiting within the socket's
 * timeout (wait), or what goes now. */
static int tls_write(redisContext *ctx, int wait, int *done)
{
    for (;;) {
        size_t len = rl__sdslen(ctx->obuf);
        ssize_t n;

        if (len == 0) {
            if (done)
                *done = 1;
            return REDIS_OK;
        }
        n = rl__io_send(ctx->fd, ctx->obuf, len, !wait);
        if (n < 0 && errno == EAGAIN && !wait) {
            if (done)
                *done = 0;
            return REDIS_OK;
        }
        if (n <= 0)
            return set_error(ctx, n);
        rl__sdsrange(ctx->obuf, (int)n, -1);
    }
}

/* Read what has come into ctx's reader: waiting for some (wait), or not. */
static int tls_read(redisContext *ctx, int wait)
{
    char buf[16384];

    for (;;) {
        ssize_t n = rl__io_recv(ctx->fd, buf, sizeof buf, !wait);
        if (n < 0 && errno == EAGAIN && !wait)
            return REDIS_OK;
        if (n <= 0)
            return set_error(ctx, n);
        if (redisReaderFeed(ctx->reader, buf, (size_t)n) != REDIS_OK) {
            ctx->err = ctx->reader->err;
            snprintf(ctx->errstr, sizeof ctx->errstr, "%s", ctx->reader->errstr);
            return REDIS_ERR;
        }
        /* What the link has decrypted already is taken now, so that a
         * poll of the socket never misses it. */
        wait = 0;
    }
}

/* As redisGetReply(): a non-blocking context only looks at what was read
 * (its caller polls, then reads with rl__redis_buffer_read()). */
static int tls_get_reply(redisContext *ctx, void **reply)
{
    if (!(ctx->flags & REDIS_BLOCK))
        return REDIS_OK;
    if (tls_write(ctx, 1, NULL) != REDIS_OK)
        return REDIS_ERR;
    for (;;) {
        if (redisGetReplyFromReader(ctx, reply) != REDIS_OK)
            return REDIS_ERR;
        if (*reply)
            return REDIS_OK;
        if (tls_read(ctx, 1) != REDIS_OK)
            return REDIS_ERR;
    }
}

/* ---- the wrappers -------------------------------------------------------- */

int rl__redis_get_reply(redisContext *ctx, void **reply)
{
    rl__nopipe np;
    int rc;

    /* What is read already needs no write (redisGetReply looks there first). */
    if (redisGetReplyFromReader(ctx, reply) != REDIS_OK)
        return REDIS_ERR;
    if (*reply)
        return REDIS_OK;
    if (rl__tls_of(ctx->fd))
        return tls_get_reply(ctx, reply);
    rl__nopipe_begin(&np);
    rc = redisGetReply(ctx, reply);
    rl__nopipe_end(&np);
    return rc;
}

int rl__redis_buffer_write(redisContext *ctx, int *done)
{
    rl__nopipe np;
    int rc;

    if (rl__tls_of(ctx->fd))
        return tls_write(ctx, (ctx->flags & REDIS_BLOCK) != 0, done);
    rl__nopipe_begin(&np);
    rc = redisBufferWrite(ctx, done);
    rl__nopipe_end(&np);
    return rc;
}

int rl__redis_buffer_read(redisContext *ctx)
{
    if (rl__tls_of(ctx->fd))
        return tls_read(ctx, 0);
    return redisBufferRead(ctx);
}

redisReply *rl__redis_command_argv(redisContext *ctx, int argc, const char **argv,
                                   const size_t *lens)
{
    rl__nopipe np;
    void *r;

    if (rl__tls_of(ctx->fd)) {
        if (redisAppendCommandArgv(ctx, argc, argv, lens) != REDIS_OK ||
            rl__redis_get_reply(ctx, &r) != REDIS_OK)
            return NULL;
        return r;
    }
    rl__nopipe_begin(&np);
    r = redisCommandArgv(ctx, argc, argv, lens);
    rl__nopipe_end(&np);
    return r;
}

const char *rl__redis_tls_error(const redisContext *ctx)
{
    const char *tls = rl__tls_error(ctx->fd);

    /* set_error() puts the link's words there (cut to fit) for a TLS
     * failure only. */
    return tls && ctx->err == REDIS_ERR_IO &&
                   strncmp(ctx->errstr, tls, sizeof ctx->errstr - 1) == 0 ? tls : NULL;
}

void rl__redis_free(redisContext *ctx)
{
    if (!ctx)
        return;
    rl__tls_drop(ctx->fd);
    redisFree(ctx);
}
