/*
 * What the subcommands of rlock(1) share: the usage text, messages, the
 * common options, the client they make, exit statuses. Called by rlock.c,
 * exec.c and inspect.c; calls none of them.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

const char *rt_prog = "rlock";

static const char usage_text[] =
    "Usage: rlock [OPTIONS] COMMAND ...\n"
    "\n"
    "Distributed reentrant locks on Redis, for operators and shell scripts.\n"
    "\n"
    "Commands:\n"
    "  exec [--wait MS] [--lease MS | --watchdog-lease MS] [--grace MS] NAME [--] CMD [ARGS...]\n"
    "        run CMD while holding the lock NAME (a distributed flock(1)); the\n"
    "        lease is kept by the watchdog (--watchdog-lease, default 30000,\n"
    "        renewed every third) unless --lease gives a fixed one. --wait: how\n"
    "        long to wait for the lock (default: forever; 0: try once). CMD\n"
    "        runs in a process group of its own, which gets the terminal when\n"
    "        rlock runs in its foreground (Ctrl-C, Ctrl-Z reach CMD). When the\n"
    "        lease is lost the group gets SIGTERM, then SIGKILL after --grace\n"
    "        (default 5000 ms); SIGTERM, SIGINT, SIGHUP and SIGQUIT sent to\n"
    "        rlock are passed to the group, and what CMD leaves behind when it\n"
    "        exits is stopped the same way. The lock is released once no\n"
    "        process of the group is left. SIGUSR1, SIGUSR2 and SIGALRM are\n"
    "        passed to the group and stop nothing.\n"
    "  list [PATTERN]\n"
    "        every held lock whose name matches the glob PATTERN (default *),\n"
    "        with its holders: host, pid, thread, client name, hold count,\n"
    "        held since, lease left, waiting processes; a semaphore's holders\n"
    "        with their permits (PERMITS k/N) and the permits left (FREE)\n"
    "  show NAME\n"
    "        the same for one lock, in detail\n"
    "  release --force NAME\n"
    "        delete the lock whoever holds it (a semaphore: every permit) and\n"
    "        wake its waiters at once\n"
    "        (never use a plain DEL: waiters would sleep a whole lease)\n"
    "\n"
    "Options (before or after COMMAND; for exec, before NAME):\n"
    "  -u, --url URL      Redis: redis://[[user]:pass@]host[:port][/db],\n"
    "                     unix:///path, a Cluster node, sentinel://...,\n"
    "                     redlock://...; with TLS: rediss://, sentinels://,\n"
    "                     redlocks:// (default: $RLOCK_URL, else\n"
    "                     redis://127.0.0.1:6379)\n"
    "  -p, --prefix P     key prefix of the locks (default rl:)\n"
    "  -n, --name NAME    this client's name, shown to others (default\n"
    "                     rlock-exec for exec, rlock-cli otherwise)\n"
    "  -j, --json         list, show: JSON instead of a table\n"
    "  -h, --help         this help\n"
    "  -V, --version      the version\n"
    "\n"
    "TLS options (only with rediss://, sentinels:// or redlocks://; by default the\n"
    "server's certificate must chain to the system's CAs, or $SSL_CERT_FILE's,\n"
    "and name the host connected to):\n"
    "  --tls-ca-file FILE     trust the CAs of this PEM file instead\n"
    "  --tls-ca-dir DIR       or of this directory (openssl rehash layout)\n"
    "  --tls-cert FILE        mutual TLS: this client's certificate (PEM)...\n"
    "  --tls-key FILE         ...and its key (PEM, unencrypted); both or neither\n"
    "  --tls-server-name NAME the name expected in the certificates (and sent,\n"
    "                         SNI) instead of the host connected to\n"
    "  --tls-insecure-skip-verify\n"
    "                         DANGER: verify no certificate (anyone on the path\n"
    "                         can pose as Redis); a warning on stderr each time\n"
    "\n"
    "Exit status (rlock's own are 122..125, apart from any command's usual\n"
    "ones, as timeout(1) keeps 124..127; each comes with a line on stderr):\n"
    "  0      success (exec: the command exited 0)\n"
    "  122    usage: a bad option, value, URL, name or command line\n"
    "  123    exec: the lease was lost while the command ran; it was stopped\n"
    "  124    exec: the lock was not acquired within --wait\n"
    "  125    cannot connect (a failed TLS handshake or verification too: the\n"
    "         line says why), Redis refused, a key of the name is not rlock's\n"
    "         (another type: the key is named), or another failure of rlock\n"
    "  126    exec: the command could not be run; 127: it was not found\n"
    "  128+N  exec: the command was killed by signal N, or rlock itself got\n"
    "         signal N (the command was stopped and the lock released)\n"
    "  exec otherwise exits with the command's own status.\n";

void rt_err(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s: ", rt_prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int rt_opt_ms(const char *opt, const char *s, long min, const char *what, long *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (end == s || *end || (!errno && v < 0)) {
        rt_err("%s: '%s' is not a number of milliseconds (digits only, %ld..%ld)", opt, s,
               min, RL_TIME_MAX_MS);
        return -1;
    }
    if (errno || v > RL_TIME_MAX_MS) {
        rt_err("%s: %s ms is past the longest, %ld ms", opt, s, RL_TIME_MAX_MS);
        return -1;
    }
    if (v < min) {
        rt_err("%s: %ld ms is below %s, %ld ms", opt, v, what, min);
        return -1;
    }
    *out = v;
    return 0;
}

int rt_exit_of(int status)
{
    switch (status) {
    case RL_OK:
        return RT_EXIT_OK;
    case RL_EBUSY:
    case RL_ETIMEDOUT:
        return RT_EXIT_NOTTAKEN;
    case RL_ELOST:
        return RT_EXIT_LOST;
    case RL_ECONN:
    case RL_ETLS:       /* a connection that failed, as any other */
        return RT_EXIT_REDIS;
    default:
        return RT_EXIT_REDIS;
    }
}

int rt_args_error(const char *cmd, const char *wanted)
{
    rt_err("%s takes [OPTIONS] %s (rlock --help)", cmd, wanted);
    return RT_EXIT_USAGE;
}

/* The option a refusal of rl_client_new() is about: its detail names the
 * field (rl_options), or the URL (from --url or $RLOCK_URL). */
static const char *option_of(const char *detail, const rt_common *co)
{
    if (strncmp(detail, "client_name", 11) == 0)
        return "--name";
    if (strncmp(detail, "key_prefix", 10) == 0)
        return "--prefix";
    return co->url_from;
}

/* The TLS fields of rl_options and their options. */
static const char *const tls_fields[][2] = {
    { "tls_ca_file", "--tls-ca-file" }, { "tls_ca_dir", "--tls-ca-dir" },
    { "tls_cert_file", "--tls-cert" }, { "tls_key_file", "--tls-key" },
    { "tls_server_name", "--tls-server-name" },
};

/* A refusal of the TLS options (detail names rl_options' fields), said with
 * the options' names: 1 when it was one (reported), else 0. */
static int tls_refusal(const char *detail, const rt_common *co, const char *safe_url)
{
    char line[512];
    size_t n = 0, i;

    if (strstr(detail, " given for a URL without TLS")) {
        rt_err("%s needs a URL with TLS (rediss://, sentinels:// or redlocks://), not %s '%s'",
               co->tls_first ? co->tls_first : "a TLS option", co->url_from, safe_url);
        return 1;
    }
    if (strncmp(detail, "tls_", 4) != 0)
        return 0;
    while (*detail && n + 32 < sizeof line) {
        for (i = 0; i < sizeof tls_fields / sizeof tls_fields[0]; i++)
            if (strncmp(detail, tls_fields[i][0], strlen(tls_fields[i][0])) == 0)
                break;
        if (i == sizeof tls_fields / sizeof tls_fields[0]) {
            line[n++] = *detail++;
            continue;
        }
        n += (size_t)snprintf(line + n, sizeof line - n, "%s", tls_fields[i][1]);
        detail += strlen(tls_fields[i][0]);
    }
    line[n] = '\0';
    rt_err("%s", line);
    return 1;
}

static void set_tls(rl_options *o, const rt_common *co)
{
    o->tls_ca_file = co->tls_ca_file;
    o->tls_ca_dir = co->tls_ca_dir;
    o->tls_cert_file = co->tls_cert;
    o->tls_key_file = co->tls_key;
    o->tls_server_name = co->tls_server_name;
    o->tls_insecure_skip_verify = co->tls_insecure;
}

int rt_client(rl_client **out, const rt_common *co, void (*on_lost)(const char *, size_t, void *),
              void *payload)
{
    rl_options o;
    char safe[512] = "";
    const char *opt;
    int rc;

    rl_options_init(&o, RL_OPTIONS_VERSION);
    o.url = co->url;
    o.key_prefix = co->prefix;
    o.client_name = co->name;
    o.lease_ms = co->lease_ms;
    o.on_lost = on_lost;
    o.payload = payload;
    set_tls(&o, co);
    rc = rl_client_new(out, &o);
    if (co->tls_insecure && rc != RL_EINVAL)
        rt_err("warning: --tls-insecure-skip-verify: no certificate is verified; anyone on "
               "the path can pose as Redis, read the password and take or free locks");
    if (rc == RL_OK)
        return RT_EXIT_OK;
    rl_url_redact(safe, sizeof safe, co->url);  /* keeps rl_last_error() */
    if (rc != RL_EINVAL) {
        /* RL_ECONN, RL_ETLS, RL_EAUTH...: the line says which, and why. */
        rt_err("cannot use %s: %s (%s)", safe, rl_strerror(rc), rl_last_error());
        return RT_EXIT_REDIS;
    }
    if (tls_refusal(rl_last_error(), co, safe))
        return RT_EXIT_USAGE;
    opt = option_of(rl_last_error(), co);
    rt_err("%s '%s': %s", opt, opt == co->url_from ? safe
           : strcmp(opt, "--name") == 0 && co->name ? co->name
           : co->prefix ? co->prefix : "", rl_last_error());
    return RT_EXIT_USAGE;
}

void rt_usage(FILE *f)
{
    fputs(usage_text, f);
}

/* Options of one subcommand only, for the line that says so. */
static const char *const owned[][2] = {
    { "--wait", "exec" }, { "-w", "exec" }, { "--lease", "exec" }, { "-l", "exec" },
    { "--grace", "exec" }, { "-g", "exec" }, { "--watchdog-lease", "exec" }, { "-W", "exec" },
    { "--force", "release" }, { "-f", "release" },
};

/* The options that take no value, for "--json=1". */
static const struct {
    const char *name;
    int val;
} flags[] = { { "--json", 'j' }, { "--help", 'h' }, { "--version", 'V' }, { "--force", 'f' },
               { "--tls-insecure-skip-verify", RT_OPT_TLS_INSECURE } };

/* Whether the argument `arg` ("--js=1", say) is a flag's long name (or an
 * abbreviation of it) given a value: getopt_long() refuses it with the
 * flag's letter in optopt, as if that letter were unknown. */
static const char *flag_given_value(const char *arg)
{
    size_t i, n = strcspn(arg, "=");

    if (strncmp(arg, "--", 2) != 0 || !arg[n] || n < 3)
        return NULL;
    for (i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (flags[i].val == optopt && strncmp(arg, flags[i].name, n) == 0)
            return flags[i].name;
    return NULL;
}

/* The long options that share a beginning ("--w", "--tls-c"): getopt_long()
 * refuses an abbreviation of two as if it were unknown. With cmd, the
 * subcommand's (NULL: every subcommand's). */
static const char *const alike[][2] = {
    { "--wait", "exec" }, { "--watchdog-lease", "exec" }, { "--tls-ca-file", NULL },
    { "--tls-ca-dir", NULL }, { "--tls-cert", NULL }, { "--tls-key", NULL },
    { "--tls-server-name", NULL }, { "--tls-insecure-skip-verify", NULL },
};

/* Whether `text` abbreviates two or more options of cmd: 1, and what it
 * could be ("--wait or --watchdog-lease") into out. */
static int ambiguous(const char *text, const char *cmd, char *out, size_t cap)
{
    size_t n = strlen(text), i, len = 0;
    int found = 0;
    const char *last = NULL;

    out[0] = '\0';
    for (i = 0; n > 2 && i < sizeof alike / sizeof alike[0]; i++) {
        if (strncmp(text, alike[i][0], n) != 0 ||
            (alike[i][1] && (!cmd || strcmp(cmd, alike[i][1]) != 0)))
            continue;
        if (last)
            len += (size_t)snprintf(out + len, len < cap ? cap - len : 0, "%s%s",
                                    found > 1 ? ", " : "", last);
        last = alike[i][0];
        found++;
    }
    if (found > 1 && len < cap)
        snprintf(out + len, cap - len, " or %s", last);
    return found > 1;
}

/* An option getopt_long() refused: one line that names it. */
static void bad_option(int opt, char **argv, const char *cmd)
{
    const char *flag = opt == '?' && optind > 0 ? flag_given_value(argv[optind - 1]) : NULL;
    char text[64], could[160];
    size_t i;

    if (flag) {
        rt_err("%s%s%s takes no value (rlock --help)", cmd ? cmd : "", cmd ? ": " : "", flag);
        return;
    }
    /* A long option's name is in argv (optopt is 0 when it is unknown, its
     * value when its argument is missing); a short one's is optopt. */
    if (!optopt || (opt == ':' && strncmp(argv[optind - 1], "--", 2) == 0))
        snprintf(text, sizeof text, "%.*s", (int)strcspn(argv[optind - 1], "="),
                 argv[optind - 1]);
    else
        snprintf(text, sizeof text, "-%c", optopt);
    if (opt == ':') {
        rt_err("%s%s%s needs a value (rlock --help)", cmd ? cmd : "", cmd ? ": " : "", text);
        return;
    }
    if (ambiguous(text, cmd, could, sizeof could)) {
        rt_err("%s%s'%s' is ambiguous: %s (rlock --help)", cmd ? cmd : "", cmd ? ": " : "",
               text, could);
        return;
    }
    for (i = 0; i < sizeof owned / sizeof owned[0]; i++) {
        if (strcmp(text, owned[i][0]) == 0 && (!cmd || strcmp(cmd, owned[i][1]) != 0)) {
            rt_err("%s is an option of %s: put it after '%s' (rlock %s %s ...)", text,
                   owned[i][1], owned[i][1], owned[i][1], text);
            return;
        }
    }
    rt_err("%s%sunknown option '%s' (rlock --help)", cmd ? cmd : "", cmd ? ": " : "", text);
}

/* A TLS option: its value into co; 0, or -1 when opt is not one. */
static int tls_opt(int opt, const char *arg, rt_common *co)
{
    static const char *const names[] = {
        "--tls-ca-file", "--tls-ca-dir", "--tls-cert", "--tls-key", "--tls-server-name",
        "--tls-insecure-skip-verify",
    };

    switch (opt) {
    case RT_OPT_TLS_CA_FILE: co->tls_ca_file = arg; break;
    case RT_OPT_TLS_CA_DIR: co->tls_ca_dir = arg; break;
    case RT_OPT_TLS_CERT: co->tls_cert = arg; break;
    case RT_OPT_TLS_KEY: co->tls_key = arg; break;
    case RT_OPT_TLS_SERVER_NAME: co->tls_server_name = arg; break;
    case RT_OPT_TLS_INSECURE: co->tls_insecure = 1; break;
    default: return -1;
    }
    if (!co->tls_first)
        co->tls_first = names[opt - RT_OPT_TLS_CA_FILE];
    return 0;
}

int rt_common_opt(int opt, const char *arg, char **argv, const char *cmd, rt_common *co)
{
    if (tls_opt(opt, arg, co) == 0)
        return 0;
    switch (opt) {
    case 'u': co->url = arg; co->url_from = "--url"; return 0;
    case 'p': co->prefix = arg; return 0;
    case 'n': co->name = arg; return 0;
    case 'j': co->json = 1; return 0;
    case 'h': rt_usage(stdout); return 1;
    case 'V': printf("rlock %s\n", rl_version()); return 1;
    default: bad_option(opt, argv, cmd); return -1;
    }
}
