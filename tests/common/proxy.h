/*
 * rltest — a small TCP proxy on the loopback, for injecting network faults
 * between an rlock client and a Redis server.
 *
 *     rt_proxy *p = rt_proxy_start(redis->port);
 *     opts.url = rt_proxy_url(p);          // the client talks to the proxy
 *     rt_proxy_drop_next_reply_matching(p, "EVAL");
 *     ... the next EVAL/EVALSHA reaches Redis, its reply never comes back,
 *         and that client connection is cut ...
 *     rt_proxy_stop(p);
 *
 * Each accepted client connection gets its own new connection to
 * 127.0.0.1:<target_port>; when that connect fails (server down), the client
 * connection is closed at once. The target port is looked up on every
 * connect, so a server restarted on the same port (rt_redis_restart()) is
 * reached by the next connection.
 *
 * One thread (started by rt_proxy_start, joined by rt_proxy_stop) runs all
 * connections with poll(). Every control function below may be called from
 * any thread; those that change forwarding return only once the proxy
 * thread has applied the change, so after rt_proxy_stall(p, 1) returns not
 * one more byte is forwarded, and after rt_proxy_cut_all(p) returns every
 * connection that existed is closed.
 *
 * Faults:
 *   - drop next reply: the next client->server chunk (optionally: the next
 *     one containing a given string) is forwarded; the server's reply to it
 *     is swallowed and both sides of that connection are closed. This is
 *     "the command was applied, the reply was lost".
 *   - mangle next reply: the next client->server chunk containing a given
 *     string is forwarded (Redis applies the command); the server's reply
 *     to it is replaced by bytes of the test's choosing, and the connection
 *     stays open. This is "the command was applied, the reply could not be
 *     understood" (garbage, an oversized error, ...).
 *   - stall: nothing is forwarded in either direction; sockets stay open and
 *     new connections are accepted (and stalled too). Like a frozen network.
 *   - hold: the next client->server chunk containing a given string is
 *     forwarded, and from then on everything the server sends on that
 *     connection is kept until the test lets it go (rt_proxy_unhold): "the
 *     reply is on its way", for as long as the test needs.
 *   - cut all: close every current connection (client and server side).
 *   - refuse: new client connections are accepted and closed at once.
 */
#ifndef RT_PROXY_H
#define RT_PROXY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rt_proxy rt_proxy;

/**
 * Listen on a free port of 127.0.0.1 and forward to 127.0.0.1:target_port.
 * Returns NULL (message on stderr) on failure. Stop with rt_proxy_stop().
 */
rt_proxy *rt_proxy_start(int target_port);

/** Stop the proxy thread, close every socket, free. Accepts NULL. */
void rt_proxy_stop(rt_proxy *p);

/** The port the proxy listens on. */
int rt_proxy_port(const rt_proxy *p);

/** "redis://127.0.0.1:<proxy port>"; valid until rt_proxy_stop(). */
const char *rt_proxy_url(const rt_proxy *p);

/** Arm "drop the reply to the next client->server chunk" (any connection). */
void rt_proxy_drop_next_reply(rt_proxy *p);

/**
 * Same, for the next client->server chunk that contains `needle` (ASCII,
 * compared case-insensitively, e.g. "EVAL" matches EVAL and EVALSHA).
 * NULL needle: any chunk. The needle is copied. Re-arming replaces a
 * pending arm.
 */
void rt_proxy_drop_next_reply_matching(rt_proxy *p, const char *needle);

/** Cancel a pending drop that has not matched yet. */
void rt_proxy_drop_cancel(rt_proxy *p);

/**
 * Arm "mangle the reply to the next client->server chunk that contains
 * `needle`" (any connection; ASCII, case-insensitive as for drops; NULL or
 * "": any chunk). That chunk is forwarded to the server as is; the first
 * whole RESP2 reply the server then sends on that connection is swallowed
 * and the `len` bytes of `replacement` are sent to the client instead
 * (bytes that follow the reply are forwarded unchanged). The connection
 * stays open. Meant for request/reply use: when the chunk carries several
 * commands, or earlier commands on that connection are still unanswered,
 * it is still the first reply that is replaced. A reply the proxy cannot
 * parse as RESP2 is replaced with everything received in that read.
 * Needle and replacement are copied. Re-arming replaces a pending arm.
 * A chunk that a pending drop matches is dropped, not mangled.
 */
void rt_proxy_mangle_next_reply_matching(rt_proxy *p, const char *needle,
                                         const char *replacement, size_t len);

/** How many replies were mangled so far. */
long rt_proxy_mangled(rt_proxy *p);

/** How many replies were dropped so far (each drop also cut a connection). */
long rt_proxy_dropped(rt_proxy *p);

/**
 * Arm "hold the replies on the connection of the next client->server chunk
 * that contains `needle`" (ASCII, case-insensitive as for drops; NULL or
 * "": any chunk). That chunk is forwarded; the server's bytes on that
 * connection are kept (rt_proxy_held counts them) until rt_proxy_unhold().
 * Re-arming replaces a pending arm. A chunk that a pending drop or mangle
 * matches is not held.
 */
void rt_proxy_hold_next_reply_matching(rt_proxy *p, const char *needle);

/** Bytes held now (0 once let go). */
size_t rt_proxy_held(rt_proxy *p);

/**
 * Send every held byte to its client, cancel a pending arm, and forward as
 * usual from then on; returns once the proxy thread has done so. 0 or -1.
 */
int rt_proxy_unhold(rt_proxy *p);

/** Stop (on=1) or resume (on=0) forwarding in both directions. 0 or -1. */
int rt_proxy_stall(rt_proxy *p, int on);

/** Refuse (on=1) or accept again (on=0) new client connections. 0 or -1. */
int rt_proxy_refuse(rt_proxy *p, int on);

/** Close every current connection. Returns how many were closed, or -1. */
int rt_proxy_cut_all(rt_proxy *p);

/** Connections open now (as of the proxy thread's last pass). */
int rt_proxy_connections(rt_proxy *p);

/** Client connections accepted since start (including refused ones). */
long rt_proxy_accepted(rt_proxy *p);

#ifdef __cplusplus
}
#endif

#endif /* RT_PROXY_H */
