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
#include <time.h>

#include "nopipe.h"

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

int rl__redis_get_reply(redisContext *ctx, void **reply)
{
    rl__nopipe np;
    int rc;

    /* What is read already needs no write (redisGetReply looks there first). */
    if (redisGetReplyFromReader(ctx, reply) != REDIS_OK)
        return REDIS_ERR;
    if (*reply)
        return REDIS_OK;
    rl__nopipe_begin(&np);
    rc = redisGetReply(ctx, reply);
    rl__nopipe_end(&np);
    return rc;
}

int rl__redis_buffer_write(redisContext *ctx, int *done)
{
    rl__nopipe np;
    int rc;

    rl__nopipe_begin(&np);
    rc = redisBufferWrite(ctx, done);
    rl__nopipe_end(&np);
    return rc;
}

redisReply *rl__redis_command_argv(redisContext *ctx, int argc, const char **argv,
                                   const size_t *lens)
{
    rl__nopipe np;
    void *r;

    rl__nopipe_begin(&np);
    r = redisCommandArgv(ctx, argc, argv, lens);
    rl__nopipe_end(&np);
    return r;
}
