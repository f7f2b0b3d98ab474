/*
 * tls.c: TLS on rlock's connections (OpenSSL), and the byte transport every
 * connection reads and writes through, TLS or not.
 *
 * hiredis 0.14 has no TLS and hiredis 1.x's is its own, so TLS is rlock's:
 * a socket is connected as before (by hiredis or by an opening), then
 * rl__tls_connect() (or an opening's rl__tls_start()/rl__tls_step())
 * makes it a TLS link. A link is found by its descriptor (rl__tls_of), so
 * the code above reads and writes a descriptor or a hiredis context as it
 * always did: rl__io_recv()/rl__io_send() here, and nopipe.c's wrappers of
 * hiredis's calls, go through the link when there is one. hiredis then
 * only formats commands and parses replies.
 *
 * A link never writes on its own: no close_notify, no renegotiation, so a
 * fork child that drops its parent's connections writes nothing into the
 * parent's TLS streams.
 */
#ifndef RL_TLS_H
#define RL_TLS_H

#include <sys/types.h>

#include "common.h"

typedef struct rl__tls_link rl__tls_link;

/* The client's TLS settings from opts (url already parsed): RL_OK, with
 * nothing made when the URL is not a TLS one (TLS options given anyway:
 * RL_EINVAL), or RL_EINVAL naming the option that cannot be used. */
int rl__tls_client_init(rl_client *c, const rl_options *opts);
void rl__tls_client_free(rl_client *c);

/* Whether the client's connections are TLS ones. */
int rl__tls_on(const rl_client *c);

/*
 * Make the connected socket fd a TLS link to host (its certificate checked
 * against host, or against rl_options.tls_server_name), waiting within the
 * socket's timeouts: RL_OK, or RL_ETLS/RL_ECONN with rl_last_error() saying
 * why (who: the server, for the message). Nothing to do when the client is
 * not a TLS one.
 */
int rl__tls_connect(rl_client *c, const char *host, int fd, const char *who);

/* Why a handshake may get no answer at all: a server that does not run, or
 * a plain Redis port, which reads the ClientHello as the start of an
 * inline command and waits for the rest of the line (it answers, "does
 * not speak TLS", only when the hello happens to hold a newline). */
#define RL__TLS_SILENT_WHY "stopped? or a port without TLS (a plain port: then redis://)"

/* The same without waiting, for a caller that polls: start (RL_OK and *out,
 * or a status), then step with the socket's readiness until it returns 0
 * (done: the link is in place) or a status; 1: poll again for *events.
 * rl__tls_abort() drops an unfinished one. */
int rl__tls_start(rl_client *c, const char *host, int fd, rl__tls_link **out);
int rl__tls_step(rl__tls_link *l, const char *who, short *events);
void rl__tls_abort(rl__tls_link *l);

/* The link on fd; NULL: plain (or fd < 0). */
rl__tls_link *rl__tls_of(int fd);
/* Free fd's link, if any, before fd is closed. Writes nothing. */
void rl__tls_drop(int fd);
/* Forget fd's link without freeing it, before fd is closed: a fork child
 * closing a connection that a thread of its parent may have been using
 * (the link's copy may be mid-change). A new socket on fd is then plain
 * until a link is made on it. */
void rl__tls_forget(int fd);
/* The same, and close fd: a fork child's way out of its parent's
 * connections (writes nothing; the link is left as it was). */
void rl__tls_close(int fd);

/*
 * recv() and send() over fd's link, or plain: the same results and errno
 * (EAGAIN for "not yet" or a timeout, 0 for a closed peer), never SIGPIPE.
 * dontwait: do not wait for data (MSG_DONTWAIT). A TLS failure reads as
 * -1 with errno EPROTO; rl__tls_error() then has the words.
 */
ssize_t rl__io_recv(int fd, void *buf, size_t n, int dontwait);
ssize_t rl__io_send(int fd, const void *buf, size_t n, int dontwait);
/* Whether anything (bytes, EOF, an error) is waiting on fd now: a TLS
 * link's own records (a session ticket) do not count. */
int rl__io_readable_now(int fd);
/* The last TLS failure on fd's link, in words; NULL: none. */
const char *rl__tls_error(int fd);
/* Why rl__io_recv()/rl__io_send() on fd failed, in words: the link's for a
 * TLS failure (errno EPROTO), else strerror(errno). */
const char *rl__io_strerror(int fd);

/* fork.c's handlers: prepare waits until no thread of the library is
 * inside OpenSSL and keeps new ones out (a child would hang on an OpenSSL
 * lock held by a thread it does not have); parent and child reopen. */
void rl__tls_fork_prepare(void);
void rl__tls_fork_parent(void);
void rl__tls_fork_child(void);

#endif
