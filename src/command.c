/*
 * Commands on a connection, past the handshake: loading rlock's scripts,
 * and the hot path that runs them (and the few plain commands of a
 * fan-out, CLIENT KILL and WAIT) with rlock's own RESP encoding: write the
 * call whole, read the reply in place into the connection's buffer,
 * blocking or step by step. Opening and closing a connection is conn.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "client.h"
#include "command.h"
#include "conn.h"
#include "error.h"
#include "reply.h"
#include "resp.h"
#include "scripts.h"
#include "tls.h"
#include "util.h"

static int load_one(rl_client *c, rl__conn *conn, int script)
{
    const char *argv[3] = { "SCRIPT", "LOAD", rl__script_src[script] };
    size_t lens[3] = { 6, 4, strlen(rl__script_src[script]) };
    redisReply *r = NULL;
    int rc = rl__conn_call(conn, &r, 3, argv, lens);

    if (rc != RL_OK)
        return rc;
    if (r->type == REDIS_REPLY_ERROR)
        rc = rl__reply_error_status(r);
    else if (r->type != REDIS_REPLY_STRING || r->len != 40)
        rc = rl__err(RL_EPROTO, "SCRIPT LOAD did not return a SHA1");
    else if (!c->sha[script][0])
        memcpy(c->sha[script], r->str, 41);   /* only at creation: read-only after */
    else if (memcmp(c->sha[script], r->str, 40) != 0)
        rc = rl__err(RL_EPROTO, "SCRIPT LOAD returned another SHA1 for the same script");
    freeReplyObject(r);
    return rc;
}

int rl__conn_load_scripts(rl_client *c, rl__conn *conn)
{
    int i, rc;

    for (i = 0; i < RL__S_COUNT; i++)
        if ((rc = load_one(c, conn, i)) != RL_OK)
            return rc;
    return RL_OK;
}

/* The most arguments a script is sent: a set's one script (lockset_one.c)
 * has two per member and four more. */
#define RL__MAX_ARGS (2 * RL_LOCKSET_MAX + 4)

/* Mark the connection dead: its replies can no longer be matched. */
static int broken(rl__conn *conn, int status, const char *what)
{
    redisContext *ctx = conn->ctx;

    if (!ctx->err) {
        ctx->err = REDIS_ERR_IO;
        snprintf(ctx->errstr, sizeof ctx->errstr, "%s", what);
    }
    return rl__err(status, "Redis command: %s", what);
}

/*
 * Whether the server closed this idle connection before we wrote to it (a
 * restart, a kill, an idle timeout): a command written now would certainly
 * not run, and the caller can say so instead of "outcome unknown". Also
 * catches stray bytes, which would put replies out of step.
 */
static int closed_before_use(rl__conn *conn)
{
    return rl__io_readable_now(conn->ctx->fd);
}

/* Encode argv into conn's write buffer after its first `at` bytes; the
 * new length in *len. */
static int encode_at(rl__conn *conn, size_t at, int argc, const char **argv,
                     const size_t *lens, size_t *len)
{
    size_t n = rl__resp_encode(conn->wbuf ? conn->wbuf + at : NULL,
                               conn->wbuf ? conn->wcap - at : 0, argc, argv, lens);

    if (!conn->wbuf || n > conn->wcap - at) {
        size_t cap = at + n < 512 ? 512 : at + n;
        char *b = realloc(conn->wbuf, cap);
        if (!b)
            return rl__err(RL_ENOMEM, "out of memory");
        conn->wbuf = b;
        conn->wcap = cap;
        n = rl__resp_encode(conn->wbuf + at, conn->wcap - at, argc, argv, lens);
    }
    *len = at + n;
    return RL_OK;
}

/* Write conn's first len bytes of its write buffer. */
static int write_all(rl__conn *conn, size_t len)
{
    size_t off = 0;
    int fd = conn->ctx->fd;

    if (closed_before_use(conn)) {
        broken(conn, RL_ECONN, "connection closed by the server before use");
        return RL__UNSENT;
    }
    while (off < len) {
        /* Never a SIGPIPE: a closed peer is an error to report. */
        ssize_t n = rl__io_send(fd, conn->wbuf + off, len - off, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 && off == 0) {
            broken(conn, RL_ECONN, n < 0 ? strerror(errno) : "nothing written");
            return RL__UNSENT;
        }
        if (n <= 0)
            return broken(conn, RL_ECONN, n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
                                              ? "timed out sending" : strerror(errno));
        off += (size_t)n;
    }
    return RL_OK;
}

/* One step of reading a reply into conn->rbuf: 1 a whole reply in *out,
 * 0 more must come (only when `flags` has MSG_DONTWAIT), or a status. */
static int read_step(rl__conn *conn, rl__resp *out, int flags)
{
    char what[48];

    for (;;) {
        size_t used;
        int st = rl__resp_read(conn->rbuf, conn->rhave, out, &used);
        ssize_t n;

        if (st == 1) {
            if (conn->rskip > 0 && used < conn->rhave) {
                /* A reply passed over (CLIENT KILL's): the next is ours. */
                memmove(conn->rbuf, conn->rbuf + used, conn->rhave - used);
                conn->rhave -= used;
                conn->rskip--;
                continue;
            }
            if (conn->rskip > 0) {
                conn->rhave = 0;
                conn->rskip--;
                continue;
            }
            if (used != conn->rhave)
                return broken(conn, RL_EPROTO, "unexpected bytes after a reply");
            conn->rhave = 0;
            return 1;
        }
        if (st < 0 || conn->rhave == sizeof conn->rbuf)
            return broken(conn, RL_EPROTO, st < 0 ? "reply not understood (is the peer Redis?)"
                                                  : "reply too long to be one of rlock's");
        n = rl__io_recv(conn->ctx->fd, conn->rbuf + conn->rhave,
                        sizeof conn->rbuf - conn->rhave, flags & MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0)
            return broken(conn, RL_ECONN, "connection closed by the server");
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (flags & MSG_DONTWAIT)
                return 0;
            snprintf(what, sizeof what, "no reply within %ld ms", conn->timeout_ms);
            return broken(conn, RL_ECONN, what);
        }
        if (n < 0)
            return broken(conn, RL_ECONN, rl__io_strerror(conn->ctx->fd));
        conn->rhave += (size_t)n;
    }
}

static int fast_call(rl__conn *conn, int argc, const char **argv, const size_t *lens,
                     rl__resp *out)
{
    size_t len;
    int rc;

    if ((rc = encode_at(conn, 0, argc, argv, lens, &len)) != RL_OK)
        return rc;
    if ((rc = write_all(conn, len)) != RL_OK)
        return rc;
    conn->rhave = 0;
    conn->rskip = 0;
    return read_step(conn, out, 0) == 1 ? RL_OK : rl__err(RL_ECONN, "%s", rl__conn_error(conn));
}

/* argv for EVALSHA of script: argv must have room for 3 + nargs, nk for
 * 4 bytes. */
static int script_argv(rl_client *c, int script, int nkeys, int nargs, const char **args,
                       const size_t *lens, const char **argv, size_t *alens, char *nk)
{
    int i;

    if (nargs > RL__MAX_ARGS || nkeys > RL_LOCKSET_MAX)
        return rl__err(RL_EINVAL, "too many script arguments");
    argv[0] = "EVALSHA";
    alens[0] = 7;
    argv[1] = c->sha[script];
    alens[1] = 40;
    argv[2] = nk;
    alens[2] = rl__fmt_ll(nk, nkeys);
    for (i = 0; i < nargs; i++) {
        argv[3 + i] = args[i];
        alens[3 + i] = lens[i];
    }
    return RL_OK;
}

int rl__conn_script_fast(rl_client *c, rl__conn *conn, int script, rl__resp *out,
                         int nkeys, int nargs, const char **args, const size_t *lens)
{
    const char *argv[3 + RL__MAX_ARGS];
    size_t alens[3 + RL__MAX_ARGS];
    char nk[4];
    int rc, attempt;

    if ((rc = script_argv(c, script, nkeys, nargs, args, lens, argv, alens, nk)) != RL_OK)
        return rc;
    for (attempt = 0;; attempt++) {
        if ((rc = fast_call(conn, 3 + nargs, argv, alens, out)) != RL_OK)
            return rc;
        /* NOSCRIPT: the script did not run; load it again and retry once. */
        if (attempt == 0 && out->type == RL__RESP_ERROR && out->str_len >= 8 &&
            memcmp(out->str, "NOSCRIPT", 8) == 0) {
            if ((rc = load_one(c, conn, script)) != RL_OK)
                return rc;
            continue;
        }
        return RL_OK;
    }
}

int rl__conn_script_send(rl_client *c, rl__conn *conn, const rl__fence *kill, int script,
                         int nkeys, int nargs, const char **args, const size_t *lens)
{
    const char *argv[3 + RL__MAX_ARGS];
    size_t alens[3 + RL__MAX_ARGS], len = 0;
    char nk[4], idbuf[24];
    int rc;

    if ((rc = script_argv(c, script, nkeys, nargs, args, lens, argv, alens, nk)) != RL_OK)
        return rc;
    conn->rhave = 0;
    conn->rskip = 0;
    /* An id names a connection of one server only. */
    if (kill && kill->id > 0 && kill->server == conn->server) {
        const char *kargv[6] = { "CLIENT", "KILL", "ID", idbuf, "ADDR", kill->addr };
        size_t klens[6] = { 6, 4, 2, 0, 4, strlen(kill->addr) };
        klens[3] = rl__fmt_ll(idbuf, kill->id);
        if ((rc = encode_at(conn, 0, kill->addr[0] ? 6 : 4, kargv, klens, &len)) != RL_OK)
            return rc;
        conn->rskip = 1;
    }
    if ((rc = encode_at(conn, len, 3 + nargs, argv, alens, &len)) != RL_OK)
        return rc;
    return write_all(conn, len);
}

int rl__conn_command_send(rl__conn *conn, int argc, const char **argv, const size_t *lens)
{
    size_t len = 0;   /* set by encode_at(); gcc -O3 cannot tell */
    int rc;

    conn->rhave = 0;
    conn->rskip = 0;
    if ((rc = encode_at(conn, 0, argc, argv, lens, &len)) != RL_OK)
        return rc;
    return write_all(conn, len);
}

int rl__conn_script_recv(rl__conn *conn, rl__resp *out)
{
    if (conn->ctx->err)
        return rl__err(RL_ECONN, "%s", rl__conn_error(conn));
    return read_step(conn, out, MSG_DONTWAIT);
}

void rl__conn_abandon(rl__conn *conn, const char *why)
{
    broken(conn, RL_ECONN, why);
}

int rl__conn_wait_replicas(rl__conn *conn, int n, long timeout_ms)
{
    char nbuf[24], tbuf[24];
    const char *argv[3] = { "WAIT", nbuf, tbuf };
    size_t lens[3] = { 4, 0, 0 };
    long saved = conn->timeout_ms;
    redisReply *r = NULL;
    int rc;

    if (timeout_ms < 1)
        timeout_ms = 1;
    lens[1] = rl__fmt_ll(nbuf, n);
    lens[2] = rl__fmt_ll(tbuf, timeout_ms);
    /* The reply comes when the replicas did, or at the WAIT's own end. */
    rl__conn_set_timeout(conn, timeout_ms + saved);
    rc = rl__conn_call(conn, &r, 3, argv, lens);
    rl__conn_set_timeout(conn, saved);
    if (rc != RL_OK)
        return rc;
    if (r->type == REDIS_REPLY_INTEGER && r->integer >= n)
        rc = RL_OK;
    else if (r->type == REDIS_REPLY_INTEGER)
        rc = rl__err(RL_EREPLICA, "%lld of %d replicas acknowledged within %ld ms",
                     r->integer, n, timeout_ms);
    else if (r->type == REDIS_REPLY_ERROR)
        rc = rl__reply_error_status(r);
    else
        rc = rl__err(RL_EPROTO, "WAIT did not return an integer");
    freeReplyObject(r);
    return rc;
}
