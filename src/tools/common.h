/*
 * The rlock command's common part (common.c): exit statuses, the options
 * every subcommand takes, the client they make, and error reporting.
 *
 * rlock is a program like any other: it links the shared library and uses
 * include/rlock.h only (list and show: rl_client_list_locks() and
 * rl_client_inspect_lock()). common.c calls none of the command files;
 * rlock.c (main) calls exec.c and inspect.c, and neither calls the other
 * or rlock.c (scripts/layers.sh src/tools).
 */
#ifndef RLOCK_TOOL_COMMON_H
#define RLOCK_TOOL_COMMON_H

#include <stdio.h>

#include "rlock.h"

/* Exit statuses (rlock --help, rlock.1). rlock's own are 122..125, beside
 * the shell's 126, 127 and 128+N, as timeout(1) reserves 124..127 (and
 * env(1), nice(1) 125..127): every other status of exec is the command's
 * own, and rlock exits with one of its own only after a line on stderr. */
#define RT_EXIT_OK       0
#define RT_EXIT_USAGE    122 /* a bad option, value, URL, name or command line */
#define RT_EXIT_LOST     123 /* exec: the lease was lost, the command stopped */
#define RT_EXIT_NOTTAKEN 124 /* exec: the lock was not acquired in time */
#define RT_EXIT_REDIS    125 /* cannot connect (TLS included), Redis refused, other failure */
#define RT_EXIT_NOEXEC   126 /* exec: the command could not be run */
#define RT_EXIT_NOTFOUND 127 /* exec: the command was not found */

/* Options common to every subcommand. */
typedef struct rt_common {
    const char *url;        /* --url, else $RLOCK_URL, else the default */
    const char *prefix;     /* --prefix (NULL: the library's, "rl:") */
    const char *name;       /* --name: the client name shown to others */
    int json;               /* --json */
    long lease_ms;          /* exec --watchdog-lease (0: the library's 30 s) */
    const char *url_from;   /* where url came from, for a refusal: "--url", "RLOCK_URL" */
    const char *tls_ca_file;     /* --tls-ca-file ... (rl_options version 5) */
    const char *tls_ca_dir;
    const char *tls_cert;
    const char *tls_key;
    const char *tls_server_name;
    int tls_insecure;            /* --tls-insecure-skip-verify: warned on stderr */
    const char *tls_first;       /* the first TLS option given, for a plain URL's refusal */
} rt_common;


extern const char *rt_prog;

void rt_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The value of option `opt`, a count of ms from min (`what`, e.g. "the
 * shortest lease") to RL_TIME_MAX_MS: 0, or -1 (reported, naming the
 * option and the rule). */
int rt_opt_ms(const char *opt, const char *s, long min, const char *what, long *out);
/* A client for the common options: RT_EXIT_OK, or the exit status of the
 * failure (reported: a refused option names it, RT_EXIT_USAGE). */
int rt_client(rl_client **out, const rt_common *co, void (*on_lost)(const char *, size_t, void *),
              void *payload);
/* Arguments that do not fit subcommand `cmd`: one line saying what it
 * takes (`wanted`); RT_EXIT_USAGE. */
int rt_args_error(const char *cmd, const char *wanted);
/* An rl_* status as an exit status. */
int rt_exit_of(int status);

/* The common options, for each subcommand's getopt_long. */
/* ':' first (after '+' where the caller stops at a non-option): a missing
 * value is ':', and getopt prints nothing (opterr 0, rlock.c). */
#define RT_COMMON_SHORT "u:p:n:jhV"
/* The TLS options have no letter: getopt_long() returns these. */
enum {
    RT_OPT_TLS_CA_FILE = 256, RT_OPT_TLS_CA_DIR, RT_OPT_TLS_CERT, RT_OPT_TLS_KEY,
    RT_OPT_TLS_SERVER_NAME, RT_OPT_TLS_INSECURE
};
#define RT_COMMON_LONGS \
    { "url", required_argument, NULL, 'u' }, \
    { "prefix", required_argument, NULL, 'p' }, \
    { "name", required_argument, NULL, 'n' }, \
    { "json", no_argument, NULL, 'j' }, \
    { "help", no_argument, NULL, 'h' }, \
    { "version", no_argument, NULL, 'V' }, \
    { "tls-ca-file", required_argument, NULL, RT_OPT_TLS_CA_FILE }, \
    { "tls-ca-dir", required_argument, NULL, RT_OPT_TLS_CA_DIR }, \
    { "tls-cert", required_argument, NULL, RT_OPT_TLS_CERT }, \
    { "tls-key", required_argument, NULL, RT_OPT_TLS_KEY }, \
    { "tls-server-name", required_argument, NULL, RT_OPT_TLS_SERVER_NAME }, \
    { "tls-insecure-skip-verify", no_argument, NULL, RT_OPT_TLS_INSECURE }
/* Apply a common option: 0 done, 1 --help or --version (printed: exit 0), -1 not a
 * common option (reported in one line that names it, for the subcommand
 * `cmd`, NULL before one: a usage error). */
int rt_common_opt(int opt, const char *arg, char **argv, const char *cmd, rt_common *co);
void rt_usage(FILE *f);

#endif
