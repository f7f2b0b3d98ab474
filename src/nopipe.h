/*
 * Writes that never raise SIGPIPE. A write to a connection the server
 * closed raises SIGPIPE in the writing thread, and its default action ends
 * the process: a library must not leave that to its application. rlock's
 * own writes use send(MSG_NOSIGNAL); hiredis 0.14 writes with write(), so
 * every hiredis call that may write goes through the wrappers below, which
 * keep SIGPIPE blocked in the calling thread for the call and take back a
 * SIGPIPE the call raised (Linux has no SO_NOSIGPIPE).
 */
#ifndef RLOCK_NOPIPE_H
#define RLOCK_NOPIPE_H

#include <signal.h>

#include <hiredis/hiredis.h>

/* The calling thread's SIGPIPE state around one write. */
typedef struct rl__nopipe {
    sigset_t old;        /* the thread's mask before */
    int was_pending;     /* a SIGPIPE of the application's was pending: keep it */
} rl__nopipe;

/* Block SIGPIPE in the calling thread. */
void rl__nopipe_begin(rl__nopipe *np);
/* Take back a SIGPIPE raised since rl__nopipe_begin() and restore the
 * thread's mask. errno is kept. */
void rl__nopipe_end(rl__nopipe *np);

/* redisGetReply(), redisBufferWrite() and redisCommandArgv() without
 * SIGPIPE, over the context's TLS link when it has one (tls.h). A reply
 * already read costs no system call. */
int rl__redis_get_reply(redisContext *ctx, void **reply);
int rl__redis_buffer_write(redisContext *ctx, int *done);
/* redisBufferRead(), for a socket poll() found readable: over a TLS link,
 * never waits (a record only partly come stays for the next call). */
int rl__redis_buffer_read(redisContext *ctx);
/* The TLS failure that broke ctx (a certificate, a handshake), in words;
 * NULL: none (plain, or broken otherwise). */
const char *rl__redis_tls_error(const redisContext *ctx);
/* redisFree(), the context's TLS link dropped first. */
void rl__redis_free(redisContext *ctx);
redisReply *rl__redis_command_argv(redisContext *ctx, int argc, const char **argv,
                                   const size_t *lens);

#endif
