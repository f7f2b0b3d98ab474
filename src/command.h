/*
 * command.c: rlock's scripts and the hot path on a connection (whole
 * writes, replies read in place, blocking or step by step).
 */
#ifndef RL_COMMAND_H
#define RL_COMMAND_H

#include "conn.h"
#include "resp.h"

/* The hot path: EVALSHA of a script whose reply is read in place into out
 * (valid until the next call on conn). NOSCRIPT is handled. */
int rl__conn_script_fast(rl_client *c, rl__conn *conn, int script, rl__resp *out,
                         int nkeys, int nargs, const char **args, const size_t *lens);
int rl__conn_load_scripts(rl_client *c, rl__conn *conn);
/* The two halves of rl__conn_script_fast, for a call sent to several
 * servers at once (Redlock): write it (after CLIENT KILL of `kill`, when
 * its id is > 0), then read its reply as it comes, without blocking.
 * send: RL_OK, RL__UNSENT (found closed: nothing ran), or a status (the
 * connection is broken). recv: 1 and *out (valid until the next call on
 * conn) when the script's reply is in; 0 when more must come; or a status
 * (broken). A NOSCRIPT reply is returned as it is. */
int rl__conn_script_send(rl_client *c, rl__conn *conn, const rl__fence *kill, int script,
                         int nkeys, int nargs, const char **args, const size_t *lens);
int rl__conn_script_recv(rl__conn *conn, rl__resp *out);
/* The same send for a plain command whose reply is one rl__resp reads (an
 * integer: EXISTS, PTTL); read it with rl__conn_script_recv. */
int rl__conn_command_send(rl__conn *conn, int argc, const char **argv, const size_t *lens);
/* WAIT until n replicas have what conn wrote, at most timeout_ms: RL_OK,
 * RL_EREPLICA (fewer did), or a failure status. */
int rl__conn_wait_replicas(rl__conn *conn, int n, long timeout_ms);
/* Mark conn broken: a reply it owes will never be read. */
void rl__conn_abandon(rl__conn *conn, const char *why);

#endif
