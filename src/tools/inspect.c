/*
 * rlock list / show / release --force, on the library's public API: list
 * is rl_client_list_locks(), show rl_client_inspect_lock() (every master
 * that may keep a lock, with the client's own URL, credentials, mode and
 * slot map); this file prints what they return. A holder without an
 * owner record is shown as "unknown". release --force is
 * rl_lock_force_release(): the delete and the release notice in one
 * script, so waiters wake at once (through a handle of the name's kind:
 * a fair lock's, a semaphore's, else a plain one).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "inspect.h"

static long long wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The holder's thread as its hash field says it: "<tid>", a reader "<tid>:r". */
static const char *tid_of(const rl_holder_info *h, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%s", h->thread, h->side == RL_KIND_READ ? ":r" : "");
    return buf;
}

/* A holder's pid as text: "" when its owner record has none. */
static const char *pid_of(const rl_holder_info *h, char *buf, size_t cap)
{
    if (h->pid >= 0)
        snprintf(buf, cap, "%lld", h->pid);
    else
        buf[0] = '\0';
    return buf;
}

/* ---- output ------------------------------------------------------------ */

static const char *kind_name(int kind)
{
    switch (kind) {
    case RL_KIND_FAIR:      return "fair";
    case RL_KIND_RW:        return "read-write";
    case RL_KIND_SEMAPHORE: return "semaphore";
    default:                return "plain";
    }
}

static char *printable(const char *s, size_t len)
{
    char *out = malloc(len * 4 + 1), *p = out;
    size_t i;

    if (!out)
        return NULL;
    for (i = 0; i < len; i++) {
        unsigned char b = (unsigned char)s[i];
        if (b < 0x20 || b == 0x7f || b == '\\')
            p += sprintf(p, "\\x%02x", b);
        else
            *p++ = (char)b;
    }
    *p = '\0';
    return out;
}

static void iso_time(char *buf, size_t cap, long long ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    if (ms < 0 || !gmtime_r(&t, &tm)) {
        snprintf(buf, cap, "-");
        return;
    }
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + strlen(buf), cap - strlen(buf), ".%03lldZ", ms % 1000);
}

static void duration(char *buf, size_t cap, long long ms)
{
    if (ms < 0)
        snprintf(buf, cap, "-");
    else if (ms < 1000)
        snprintf(buf, cap, "%lldms", ms);
    else if (ms < 60000)
        snprintf(buf, cap, "%.1fs", (double)ms / 1000.0);
    else if (ms < 3600000)
        snprintf(buf, cap, "%lldm%02llds", ms / 60000, ms / 1000 % 60);
    else if (ms < 86400000)
        snprintf(buf, cap, "%lldh%02lldm", ms / 3600000, ms / 60000 % 60);
    else
        snprintf(buf, cap, "%lldd%02lldh", ms / 86400000, ms / 3600000 % 24);
}

static void lease_left(char *buf, size_t cap, long long pttl)
{
    if (pttl == -1)
        snprintf(buf, cap, "no-expiry");
    else if (pttl < 0)
        snprintf(buf, cap, "gone");
    else
        duration(buf, cap, pttl);
}

/* The length of the UTF-8 sequence of 2 to 4 bytes at s (n bytes left), 0
 * when it is not one (a stray byte, an overlong form, a surrogate, past
 * U+10FFFF). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char lo = 0x80, hi = 0xbf;
    size_t len, i;

    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        len = 2;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        len = 3;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        len = 4;
    else
        return 0;
    if (s[0] == 0xe0)
        lo = 0xa0;
    else if (s[0] == 0xed)
        hi = 0x9f;
    else if (s[0] == 0xf0)
        lo = 0x90;
    else if (s[0] == 0xf4)
        hi = 0x8f;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

/* A JSON string: valid UTF-8 whatever the bytes (a name is any bytes):
 * each byte that is not part of a UTF-8 sequence is U+FFFD, as jq does. */
static void json_str(FILE *f, const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i, k;

    fputc('"', f);
    for (i = 0; i < len; i++) {
        if (u[i] == '"' || u[i] == '\\')
            fprintf(f, "\\%c", u[i]);
        else if (u[i] < 0x20 || u[i] == 0x7f)
            fprintf(f, "\\u%04x", u[i]);
        else if (u[i] < 0x80)
            fputc(u[i], f);
        else if ((k = utf8_seq(u + i, len - i)) > 0) {
            fwrite(u + i, 1, k, f);
            i += k - 1;
        } else
            fputs("\\ufffd", f);
    }
    fputc('"', f);
}

/* A number, or null when it is unknown (below 0). */
static void json_num(FILE *f, const char *key, long long v)
{
    if (v >= 0)
        fprintf(f, ", \"%s\": %lld", key, v);
    else
        fprintf(f, ", \"%s\": null", key);
}

/* Every number a number (null when unknown), every text a string: the
 * thread is rlock's number (null for a field rlock did not write), a
 * reader of a read-write lock says so apart. */
static void json_holder(FILE *f, const rl_holder_info *h, long long now)
{
    char *end;
    long long tid = strtoll(h->thread, &end, 10);

    fputs("{\"owner\": ", f);
    json_str(f, h->owner, strlen(h->owner));
    json_num(f, "thread", *h->thread && !*end ? tid : -1);
    fprintf(f, ", \"reader\": %s, \"count\": %lld", h->side == RL_KIND_READ ? "true" : "false",
            h->count);
    json_num(f, "since_ms", h->since_ms);
    json_num(f, "age_ms", h->since_ms >= 0 ? now - h->since_ms : -1);
    if (h->known) {
        fputs(", \"host\": ", f);
        json_str(f, h->host, strlen(h->host));
        json_num(f, "pid", h->pid);
        fputs(", \"client_name\": ", f);
        json_str(f, h->client_name, strlen(h->client_name));
        json_num(f, "started_ms", h->started_ms);
        fputs(", \"version\": ", f);
        json_str(f, h->version, strlen(h->version));
    } else {
        fputs(", \"host\": null, \"pid\": null, \"client_name\": null, \"started_ms\": null, "
              "\"version\": null", f);
    }
    /* Appended, as the library appends fields: the hold's own lease (a
     * read-write lock's and a semaphore's holds each have theirs) and a
     * semaphore hold's permits. */
    fprintf(f, ", \"lease_left_ms\": %lld", h->lease_left_ms);
    json_num(f, "permits", h->permits > 0 ? h->permits : -1);
    fputs("}", f);
}

static void print_json(const rl_lock_list *l, FILE *f)
{
    long long now = wall_ms();
    size_t i, k;

    fputs("[", f);
    for (i = 0; i < l->count; i++) {
        const rl_lock_info *w = l->locks[i];
        fputs(i ? ",\n {\"name\": " : "\n {\"name\": ", f);
        json_str(f, w->name, w->name_len);
        fprintf(f, ", \"node\": ");
        json_str(f, w->node, strlen(w->node));
        fprintf(f, ", \"lease_left_ms\": %lld", w->lease_left_ms);
        json_num(f, "waiters", w->waiters);
        fprintf(f, ", \"queued\": %lld, \"kind\": \"%s\"", w->queued, kind_name(w->kind));
        json_num(f, "permits", w->kind == RL_KIND_SEMAPHORE ? w->permits : -1);
        json_num(f, "free_permits", w->kind == RL_KIND_SEMAPHORE ? w->free_permits : -1);
        fputs(", \"holders\": [", f);
        for (k = 0; k < w->nholders; k++) {
            fputs(k ? ", " : "", f);
            json_holder(f, w->holders[k], now);
        }
        fputs("]}", f);
    }
    fputs(l->count ? "\n]\n" : "]\n", f);
}

enum { C_NAME, C_NODE, C_OWNER, C_HOST, C_PID, C_TID, C_CLIENT, C_COUNT, C_PERMITS, C_FREE,
       C_SINCE, C_AGE, C_LEASE, C_WAITERS, C_N };
static const char *const heads[C_N] = { "NAME", "NODE", "OWNER", "HOST", "PID", "TID",
                                        "CLIENT", "COUNT", "PERMITS", "FREE", "SINCE", "AGE",
                                        "LEASE", "WAITERS" };

/* The columns a table shows: NODE when several masters are read, PERMITS
 * and FREE when a semaphore is listed. */
typedef struct columns {
    int node, sem;
} columns;

/* The cells of one holder's row of the table (each malloc'ed, or NULL). */
static void table_row(char **cells, const rl_lock_info *w, const rl_holder_info *h,
                      long long now)
{
    char b[C_N][300], pid[32];
    int c;

    snprintf(b[C_NODE], sizeof b[0], "%s", w->node);
    snprintf(b[C_HOST], sizeof b[0], "%s", h->known ? h->host : "unknown");
    snprintf(b[C_PID], sizeof b[0], "%s", h->known ? pid_of(h, pid, sizeof pid) : "-");
    tid_of(h, b[C_TID], sizeof b[0]);
    snprintf(b[C_CLIENT], sizeof b[0], "%s",
             h->known && h->client_name[0] ? h->client_name : "-");
    snprintf(b[C_COUNT], sizeof b[0], "%lld", h->count);
    if (w->kind == RL_KIND_SEMAPHORE) {
        snprintf(b[C_PERMITS], sizeof b[0], "%lld/%lld", h->permits, w->permits);
        snprintf(b[C_FREE], sizeof b[0], "%lld", w->free_permits);
    } else {
        snprintf(b[C_PERMITS], sizeof b[0], "-");
        snprintf(b[C_FREE], sizeof b[0], "-");
    }
    iso_time(b[C_SINCE], sizeof b[0], h->since_ms);
    duration(b[C_AGE], sizeof b[0], h->since_ms >= 0 ? now - h->since_ms : -1);
    /* The hold's own: a read-write lock's or a semaphore's holds each
     * have their deadline; any other's is the key's. */
    lease_left(b[C_LEASE], sizeof b[0], h->lease_left_ms);
    if (w->waiters >= 0)
        snprintf(b[C_WAITERS], sizeof b[0], "%lld", w->waiters + w->queued);
    else
        snprintf(b[C_WAITERS], sizeof b[0], "?");
    cells[C_NAME] = printable(w->name, w->name_len);
    /* A field written by hand is an owner of any bytes: never the
     * terminal's escapes. */
    for (c = 1; c < C_N; c++)
        cells[c] = c == C_OWNER ? printable(h->owner, strnlen(h->owner, 8)) : strdup(b[c]);
}

static void print_cells(FILE *f, char *const *cells, const size_t *width, columns cols)
{
    int c;

    for (c = 0; c < C_N; c++) {
        if ((c == C_NODE && !cols.node) || ((c == C_PERMITS || c == C_FREE) && !cols.sem))
            continue;
        if (c == C_WAITERS)
            fprintf(f, "%s\n", cells[c] ? cells[c] : "?");
        else
            fprintf(f, "%-*s  ", (int)width[c], cells[c] ? cells[c] : "?");
    }
}

static void print_table(const rl_lock_list *l, FILE *f)
{
    long long now = wall_ms();
    size_t width[C_N], i, k, n = 0, r;
    char *(*cells)[C_N];
    columns cols = { l->mode == RL_MODE_CLUSTER || l->mode == RL_MODE_REDLOCK, 0 };
    int c;

    for (i = 0; i < l->count; i++) {
        n += l->locks[i]->nholders;
        cols.sem |= l->locks[i]->kind == RL_KIND_SEMAPHORE;
    }
    if (!(cells = calloc(n ? n : 1, sizeof *cells)))
        return;
    for (c = 0; c < C_N; c++)
        width[c] = strlen(heads[c]);
    for (i = 0, r = 0; i < l->count; i++) {
        for (k = 0; k < l->locks[i]->nholders; k++, r++) {
            table_row(cells[r], l->locks[i], l->locks[i]->holders[k], now);
            for (c = 0; c < C_N; c++)
                if (cells[r][c] && strlen(cells[r][c]) > width[c])
                    width[c] = strlen(cells[r][c]);
        }
    }
    print_cells(f, (char *const *)heads, width, cols);
    for (r = 0; r < n; r++) {
        print_cells(f, cells[r], width, cols);
        for (c = 0; c < C_N; c++)
            free(cells[r][c]);
    }
    free(cells);
}

static void detail_holder(FILE *f, const rl_lock_info *w, const rl_holder_info *h,
                          long long now)
{
    char t[64], d[64], tid[64], pid[32], *po = printable(h->owner, strlen(h->owner));
    const char *owner = po ? po : "?";

    tid_of(h, tid, sizeof tid);
    fprintf(f, "holder:      %s:%s\n", owner, tid);
    fprintf(f, "  count:     %lld\n", h->count);
    if (w->kind == RL_KIND_SEMAPHORE)
        fprintf(f, "  permits:   %lld of %lld\n", h->permits, w->permits);
    if (w->kind == RL_KIND_SEMAPHORE || w->kind == RL_KIND_RW) {
        lease_left(d, sizeof d, h->lease_left_ms);
        fprintf(f, "  lease:     %s (its own deadline)\n", d);
    }
    iso_time(t, sizeof t, h->since_ms);
    duration(d, sizeof d, h->since_ms >= 0 ? now - h->since_ms : -1);
    fprintf(f, "  since:     %s (%s ago)\n", t, d);
    if (h->known) {
        fprintf(f, "  host:      %s\n", h->host);
        fprintf(f, "  pid:       %s\n", pid_of(h, pid, sizeof pid));
        fprintf(f, "  thread:    %s (rlock's thread number in that process)\n", tid);
        fprintf(f, "  client:    %s\n", h->client_name[0] ? h->client_name : "-");
        iso_time(t, sizeof t, h->started_ms);
        fprintf(f, "  started:   %s\n", t);
        fprintf(f, "  version:   %s\n", h->version);
    } else {
        fprintf(f, "  owner:     unknown (no owner record for %s)\n", owner);
    }
    free(po);
}

static void print_detail(const rl_lock_list *l, const char *name, FILE *f)
{
    long long now = wall_ms();
    char *pn = printable(name, strlen(name)), d[64];
    size_t i, k;

    if (!l->count && !l->nfailures)     /* else unknown: the failures say why */
        fprintf(f, "%s: not held\n", pn ? pn : name);
    for (i = 0; i < l->count; i++) {
        const rl_lock_info *w = l->locks[i];
        fprintf(f, "lock:        %s\n", pn ? pn : name);
        fprintf(f, "kind:        %s\n", kind_name(w->kind));
        fprintf(f, "node:        %s\n", w->node);
        lease_left(d, sizeof d, w->lease_left_ms);
        fprintf(f, "lease left:  %s\n", d);
        if (w->kind == RL_KIND_SEMAPHORE)
            fprintf(f, "permits:     %lld, %lld free\n", w->permits, w->free_permits);
        if (w->delay_ms > 0)
            fprintf(f, "lock-delay:  %lld ms (included in the lease left)%s\n", w->delay_ms,
                    w->nholders ? "" : "; a hold was lost: nobody may take it until it runs out");
        if (w->waiters >= 0)
            fprintf(f, "waiting:     %lld process(es) listening for its release\n",
                    w->waiters);
        else
            fprintf(f, "waiting:     unknown\n");
        if (w->queued > 0)
            fprintf(f, "queued:      %lld thread(s) in the fair lock's queue, served in order\n",
                    w->queued);
        for (k = 0; k < w->nholders; k++)
            detail_holder(f, w, w->holders[k], now);
    }
    free(pn);
}

/* ---- commands ----------------------------------------------------------- */

static int parse_simple(int argc, char **argv, rt_common *co, int *force, const char *cmd)
{
    static const struct option longs[] = {
        { "force", no_argument, NULL, 'f' },    /* release's only */
        RT_COMMON_LONGS,
        { NULL, 0, NULL, 0 },
    };
    int opt, rc;

    while ((opt = getopt_long(argc, argv, force ? ":" RT_COMMON_SHORT "f" : ":" RT_COMMON_SHORT,
                              force ? longs : longs + 1, NULL)) != -1) {
        if (opt == 'f' && force) {
            *force = 1;
            continue;
        }
        if ((rc = rt_common_opt(opt, optarg, argv, cmd, co)) != 0)
            return rc > 0 ? -2 : -1;
    }
    if (!co->name)
        co->name = "rlock-cli";
    return optind;
}

/* What a list or inspect call returned: 0, or -1 when something failed
 * (each master that could not be read is reported). */
static int reported(int rc, const rl_lock_list *l)
{
    size_t i;

    if (!l) {
        rt_err("%s (%s)", rl_strerror(rc), rl_last_error());
        return -1;
    }
    /* A failure may name a key, of any bytes: never the terminal's escapes. */
    for (i = 0; i < l->nfailures; i++) {
        char *p = printable(l->failures[i], strlen(l->failures[i]));
        rt_err("%s", p ? p : l->failures[i]);
        free(p);
    }
    return rc == RL_OK ? 0 : -1;
}

int rt_cmd_list(int argc, char **argv, rt_common *co)
{
    const char *pattern = "*";
    rl_lock_list *l = NULL;
    rl_client *c;
    int rc, at = parse_simple(argc, argv, co, NULL, "list");

    if (at < 0)
        return at == -2 ? RT_EXIT_OK : RT_EXIT_USAGE;
    if (argc - at > 1)
        return rt_args_error("list", "[PATTERN]");
    if (argc - at == 1)
        pattern = argv[at];
    if (strlen(pattern) > RL_NAME_MAX) {
        rt_err("list: a pattern is at most %d bytes", RL_NAME_MAX);
        return RT_EXIT_USAGE;
    }
    if ((rc = rt_client(&c, co, NULL, NULL)) != RT_EXIT_OK)
        return rc;
    rc = rl_client_list_locks(&l, c, pattern, RL_INFO_VERSION);
    rc = reported(rc, l);
    if (l && co->json)
        print_json(l, stdout);
    else if (l)
        print_table(l, stdout);
    rl_lock_list_free(l);
    rl_client_free(c);
    return rc ? RT_EXIT_REDIS : RT_EXIT_OK;
}

static int check_name(const char *name)
{
    size_t n = strlen(name);

    if (n == 0 || n > RL_NAME_MAX) {
        rt_err("a lock name is 1..%d bytes", RL_NAME_MAX);
        return -1;
    }
    return 0;
}

int rt_cmd_show(int argc, char **argv, rt_common *co)
{
    rl_lock_list *l = NULL;
    rl_client *c;
    int rc, at = parse_simple(argc, argv, co, NULL, "show");

    if (at < 0)
        return at == -2 ? RT_EXIT_OK : RT_EXIT_USAGE;
    if (argc - at != 1)
        return rt_args_error("show", "NAME");
    if (check_name(argv[at]) != 0)
        return RT_EXIT_USAGE;
    if ((rc = rt_client(&c, co, NULL, NULL)) != RT_EXIT_OK)
        return rc;
    rc = rl_client_inspect_lock(&l, c, argv[at], strlen(argv[at]), RL_INFO_VERSION);
    rc = reported(rc, l);
    if (l && co->json)
        print_json(l, stdout);
    else if (l)
        print_detail(l, argv[at], stdout);
    rl_lock_list_free(l);
    rl_client_free(c);
    return rc ? RT_EXIT_REDIS : RT_EXIT_OK;
}

/* How a force-release opens the name, and what it says after. */
typedef struct target {
    int kind;               /* RL_KIND_PLAIN, _FAIR or _SEMAPHORE */
    unsigned permits;       /* a semaphore's N */
    int delayed;            /* a holder has a lock-delay: the name stays blocked */
} target;

/* Before a force-release: whose hold goes (for the operator's log), and
 * how to open the name (*t). */
static void before_release(rl_client *c, const char *name, int json, target *t)
{
    rl_lock_list *l = NULL;
    size_t i;
    int rc;

    memset(t, 0, sizeof *t);
    t->kind = RL_KIND_PLAIN;
    rc = rl_client_inspect_lock(&l, c, name, strlen(name), RL_INFO_VERSION);
    reported(rc, l);
    if (!l)
        return;     /* the force still goes ahead, as a plain lock's */
    if (!json && l->count)
        print_table(l, stderr);
    for (i = 0; i < l->count; i++) {
        /* A fair lock with a queue: its first waiter is woken on its own
         * channel, which a fair handle's force-release does. (Redlock
         * offers no fair lock: a queue there is a single server's
         * leftover.) */
        if (l->locks[i]->queued && l->mode != RL_MODE_REDLOCK)
            t->kind = RL_KIND_FAIR;
        /* A semaphore through a semaphore's handle (rl_semaphore_new()
         * wants its N): the whole name goes, every permit with it.
         * (Redlock offers none: there it is a single server's leftover.) */
        if (l->locks[i]->kind == RL_KIND_SEMAPHORE && l->mode != RL_MODE_REDLOCK &&
            l->locks[i]->permits > 0 && l->locks[i]->permits <= RL_SEMAPHORE_MAX) {
            t->kind = RL_KIND_SEMAPHORE;
            t->permits = (unsigned)l->locks[i]->permits;
        }
        if (l->locks[i]->delay_ms > 0 && l->locks[i]->nholders > 0)
            t->delayed = 1;
    }
    rl_lock_list_free(l);
}

int rt_cmd_release(int argc, char **argv, rt_common *co)
{
    rl_client *c;
    rl_lock *lock;
    int force = 0, rc, at = parse_simple(argc, argv, co, &force, "release");
    target t;
    long left;

    if (at < 0)
        return at == -2 ? RT_EXIT_OK : RT_EXIT_USAGE;
    if (argc - at != 1)
        return rt_args_error("release", "--force NAME");
    if (!force) {
        rt_err("release takes --force: it frees the lock whoever holds it (a holder in "
               "another process learns it at its next renewal)");
        return RT_EXIT_USAGE;
    }
    if (check_name(argv[at]) != 0)
        return RT_EXIT_USAGE;
    if ((rc = rt_client(&c, co, NULL, NULL)) != RT_EXIT_OK)
        return rc;
    before_release(c, argv[at], co->json, &t);
    if (t.kind == RL_KIND_SEMAPHORE)
        rc = rl_semaphore_new(&lock, c, argv[at], strlen(argv[at]), t.permits);
    else
        rc = rl_lock_new_kind(&lock, c, argv[at], strlen(argv[at]), t.kind);
    if (rc != RL_OK) {
        rt_err("%s", rl_last_error());
        rl_client_free(c);
        return RT_EXIT_USAGE;
    }
    rc = rl_lock_force_release(lock);
    if (rc != RL_OK)
        rt_err("release of '%s': %s (%s)", argv[at], rl_strerror(rc), rl_last_error());
    else if (t.delayed && rl_lock_ttl(&left, lock) == RL_OK && left > 0)
        /* The holder's lock-delay: the lease it had left, and the delay. */
        fprintf(stderr, "%s: released '%s'; its holder's lock-delay keeps it blocked for "
                "%ld ms more (release --force again ends that)\n", rt_prog, argv[at], left);
    else if (t.kind == RL_KIND_SEMAPHORE)
        fprintf(stderr, "%s: released semaphore '%s', all %u permits; its waiters were "
                "woken\n", rt_prog, argv[at], t.permits);
    else
        fprintf(stderr, "%s: released '%s'; its waiters were woken\n", rt_prog, argv[at]);
    rl_lock_free(lock);
    rl_client_free(c);
    return rc == RL_OK ? RT_EXIT_OK : RT_EXIT_REDIS;
}
