/*
 * Parsing of the connection URL. Pure: no I/O, no globals; every failure
 * says what was wrong through rl_last_error() and leaves *out cleared.
 *
 *   redis://[[user]:pass@]host[:port][,host[:port]...][/db]   host may be [ipv6]
 *   unix:///path/to/socket[?db=N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "holds.h"
#include "url.h"
#include "util.h"

#define RL__URL_MAX 4096

static int hexval(int ch)
{
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* Copy s[0..len) percent-decoded; NULL on a bad escape, an embedded NUL, or no memory. */
static char *decode(const char *s, size_t len, int *nomem)
{
    char *out = malloc(len + 1);
    size_t i, o = 0;

    if (!out) {
        *nomem = 1;
        return NULL;
    }
    for (i = 0; i < len; i++) {
        if (s[i] == '%') {
            int hi, lo;
            if (i + 2 >= len) {
                free(out);
                return NULL;
            }
            hi = hexval((unsigned char)s[i + 1]);
            lo = hexval((unsigned char)s[i + 2]);
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                free(out);
                return NULL;
            }
            out[o++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
    return out;
}

/* Whole decimal number in s[0..len), within [min, max]. */
static int parse_num(const char *s, size_t len, long min, long max, long *out)
{
    long v = 0;
    size_t i;

    if (len == 0 || len > 9)
        return -1;
    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int fail(rl__url *u, int status, const char *why)
{
    rl__url_clear(u);
    if (status == RL_ENOMEM)
        return rl__err(RL_ENOMEM, "out of memory parsing the URL");
    /* The URL may carry a password: the message never quotes it. */
    return rl__err(status, "bad URL: %s", why);
}

static int parse_unix(rl__url *u, const char *rest)
{
    const char *q = strchr(rest, '?');
    size_t plen = q ? (size_t)(q - rest) : strlen(rest);
    int nomem = 0;
    long db = 0;

    u->is_unix = 1;
    if (plen == 0 || rest[0] != '/')
        return fail(u, RL_EINVAL, "unix:// needs an absolute socket path (unix:///path)");
    if (q) {
        if (strncmp(q, "?db=", 4) != 0 || parse_num(q + 4, strlen(q + 4), 0, 1000000, &db) != 0)
            return fail(u, RL_EINVAL, "the only query a unix:// URL takes is ?db=N");
    }
    u->path = decode(rest, plen, &nomem);
    if (!u->path)
        return fail(u, nomem ? RL_ENOMEM : RL_EINVAL, "bad percent-escape in the socket path");
    u->db = (int)db;
    return RL_OK;
}

/* A failure in one seed of the list; which one, when there are several. */
static int fail_seed(rl__url *u, int i, int nseeds, const char *why)
{
    if (nseeds == 1)
        return fail(u, RL_EINVAL, why);
    rl__url_clear(u);
    return rl__err(RL_EINVAL, "bad URL: seed %d of %d: %s", i + 1, nseeds, why);
}

/* One seed, s[0..end): host[:port] or [ipv6][:port], into u->seeds[i]. */
static int parse_seed(rl__url *u, int i, int nseeds, const char *s, const char *end)
{
    const char *host = s, *host_end, *port = NULL;
    rl__endpoint *ep = &u->seeds[i];
    long num;

    if (s == end)
        return fail_seed(u, i, nseeds,
                         nseeds == 1 ? "missing host" : "empty host in the seed list");
    if (*host == '[') {
        host_end = memchr(host, ']', (size_t)(end - host));
        if (!host_end || host_end == host + 1)
            return fail_seed(u, i, nseeds, "unterminated or empty [IPv6] host");
        if (host_end + 1 < end) {
            if (host_end[1] != ':')
                return fail_seed(u, i, nseeds, "junk after the [IPv6] host");
            port = host_end + 2;
        }
        host++;
    } else {
        host_end = memchr(host, ':', (size_t)(end - host));
        if (host_end)
            port = host_end + 1;
        else
            host_end = end;
    }
    if (host_end == host)
        return fail_seed(u, i, nseeds, "missing host");
    for (const char *p = host; p < host_end; p++) {
        unsigned char ch = (unsigned char)*p;
        if (ch <= ' ' || ch == '@' || ch == '%' || ch >= 0x7f || (ch == '[' || ch == ']'))
            return fail_seed(u, i, nseeds, "bad character in host");
    }
    ep->host = rl__memdup(host, (size_t)(host_end - host) + 1);
    if (!ep->host)
        return fail(u, RL_ENOMEM, "");
    ep->host[host_end - host] = '\0';

    ep->port = u->sentinel ? 26379 : 6379;
    if (port) {
        if (parse_num(port, (size_t)(end - port), 1, 65535, &num) != 0)
            return fail_seed(u, i, nseeds, "port must be a number from 1 to 65535");
        ep->port = (int)num;
    }
    return RL_OK;
}

static int parse_tcp(rl__url *u, const char *rest)
{
    const char *end = rest + strlen(rest);
    const char *slash = strchr(rest, '/');
    const char *auth_end, *host;
    size_t auth_len;
    int nomem = 0, nseeds, rc;
    long num;

    if (!slash)
        slash = end;
    if (memchr(rest, '?', (size_t)(end - rest)) || memchr(rest, '#', (size_t)(end - rest)))
        return fail(u, RL_EINVAL, "query strings and fragments are not supported");

    /* user:pass@ — the last '@' before the path ends it (passwords may hold '@' escaped). */
    auth_end = NULL;
    for (const char *p = rest; p < slash; p++)
        if (*p == '@')
            auth_end = p;
    host = rest;
    if (auth_end) {
        const char *colon = memchr(rest, ':', (size_t)(auth_end - rest));
        auth_len = (size_t)(auth_end - rest);
        if (!colon)
            return fail(u, RL_EINVAL, "credentials need a password (user:pass@ or :pass@)");
        if (colon > rest) {
            u->user = decode(rest, (size_t)(colon - rest), &nomem);
            if (!u->user)
                return fail(u, nomem ? RL_ENOMEM : RL_EINVAL, "bad percent-escape in the user");
        }
        u->pass = decode(colon + 1, auth_len - (size_t)(colon + 1 - rest), &nomem);
        if (!u->pass)
            return fail(u, nomem ? RL_ENOMEM : RL_EINVAL, "bad percent-escape in the password");
        if (u->pass[0] == '\0')
            return fail(u, RL_EINVAL, "empty password");
        host = auth_end + 1;
    }

    /* The seed list: host[:port] pairs separated by commas, up to the path. */
    nseeds = 1;
    for (const char *p = host; p < slash; p++)
        if (*p == ',')
            nseeds++;
    if (nseeds > RL__SEEDS_MAX)
        return fail(u, RL_EINVAL, "more than " RL__STR(RL__SEEDS_MAX) " seed hosts");
    for (int i = 0; i < nseeds; i++) {
        const char *seed_end = memchr(host, ',', (size_t)(slash - host));
        if (!seed_end)
            seed_end = slash;
        if ((rc = parse_seed(u, i, nseeds, host, seed_end)) != RL_OK)
            return rc;
        host = seed_end + 1;
    }
    u->nseeds = nseeds;
    u->host = u->seeds[0].host;
    u->port = u->seeds[0].port;

    if (slash < end && slash + 1 < end) {
        if (parse_num(slash + 1, (size_t)(end - slash - 1), 0, 1000000, &num) != 0)
            return fail(u, RL_EINVAL, "database must be a number after the '/'");
        u->db = (int)num;
    }
    return RL_OK;
}

/* sentinel://[[user]:pass@]host[:port][,host[:port]...]/<master name>[/db]:
 * the sentinels (port 26379 by default) and the name they know the
 * primary by; the credentials and the database are the primary's. */
static int parse_sentinel(rl__url *u, const char *rest)
{
    const char *slash = strchr(rest, '/'), *name, *name_end;
    char *tcp;
    size_t head;
    int rc, nomem = 0;

    if (!slash || slash[1] == '\0' || slash[1] == '/')
        return fail(u, RL_EINVAL, "sentinel:// needs the master's name after the '/'");
    name = slash + 1;
    name_end = strchr(name, '/');
    if (!name_end)
        name_end = name + strlen(name);
    /* What is left is a redis:// URL without the name: parse it as one. */
    head = (size_t)(slash - rest);
    tcp = malloc(head + strlen(name_end) + 1);
    if (!tcp)
        return fail(u, RL_ENOMEM, "");
    memcpy(tcp, rest, head);
    strcpy(tcp + head, name_end);
    u->sentinel = 1;
    rc = parse_tcp(u, tcp);
    free(tcp);
    if (rc != RL_OK)
        return rc;
    u->sentinel = 1;
    u->service = decode(name, (size_t)(name_end - name), &nomem);
    if (!u->service)
        return fail(u, nomem ? RL_ENOMEM : RL_EINVAL, "bad percent-escape in the master's name");
    if (!u->service[0] || strpbrk(u->service, " \r\n"))
        return fail(u, RL_EINVAL, "the master's name must not be empty or hold blanks");
    return RL_OK;
}

/* The TLS schemes, each the same grammar as its plain one. */
static const char *const tls_schemes[][2] = {
    { "rediss://", "redis://" },
    { "redlocks://", "redlock://" },
    { "sentinels://", "sentinel://" },
};

int rl__url_parse(rl__url *out, const char *url)
{
    size_t i;

    memset(out, 0, sizeof *out);
    if (!url)
        url = "redis://127.0.0.1:6379";
    if (strlen(url) > RL__URL_MAX)
        return fail(out, RL_EINVAL, "longer than 4096 bytes");
    for (i = 0; i < sizeof tls_schemes / sizeof tls_schemes[0]; i++) {
        size_t n = strlen(tls_schemes[i][0]);
        if (strncmp(url, tls_schemes[i][0], n) == 0) {
            char *plain = malloc(strlen(url));
            int rc;
            if (!plain)
                return fail(out, RL_ENOMEM, "");
            strcpy(plain, tls_schemes[i][1]);
            strcat(plain, url + n);
            rc = rl__url_parse(out, plain);
            free(plain);
            out->tls = rc == RL_OK;
            return rc;
        }
    }
    if (strncmp(url, "redis://", 8) == 0)
        return parse_tcp(out, url + 8);
    if (strncmp(url, "redlock://", 10) == 0) {
        int rc = parse_tcp(out, url + 10);
        if (rc != RL_OK)
            return rc;
        out->redlock = 1;
        if (out->nseeds < 3 || out->nseeds > RL__NODES_MAX || out->nseeds % 2 == 0) {
            rl__url_clear(out);
            return rl__err(RL_EINVAL, "bad URL: redlock:// needs an odd number of masters, "
                           "3 to %d", RL__NODES_MAX);
        }
        for (int i = 0; i < out->nseeds; i++)
            for (int j = 0; j < i; j++)
                if (out->seeds[i].port == out->seeds[j].port &&
                    strcmp(out->seeds[i].host, out->seeds[j].host) == 0) {
                    rl__url_clear(out);
                    return rl__err(RL_EINVAL, "bad URL: redlock:// names master %d twice "
                                   "(as %d and %d)", j + 1, j + 1, i + 1);
                }
        return RL_OK;
    }
    if (strncmp(url, "sentinel://", 11) == 0)
        return parse_sentinel(out, url + 11);
    if (strncmp(url, "unix://", 7) == 0)
        return parse_unix(out, url + 7);
    return fail(out, RL_EINVAL, "scheme must be redis://, redlock://, sentinel://, unix:// "
                "or, with TLS, rediss://, redlocks://, sentinels://");
}

/* Length of a leading "scheme://" of a scheme rlock knows (or refuses by
 * name), or 0: a word of the user's own in front of "://" may be a
 * password typed in the wrong place. */
static size_t scheme_len(const char *url)
{
    static const char *const known[] = { "redis://", "redlock://", "sentinel://", "unix://",
                                         "rediss://", "redlocks://", "sentinels://" };
    size_t i;

    for (i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strncmp(url, known[i], strlen(known[i])) == 0)
            return strlen(known[i]);
    return 0;
}

const char *rl__url_redact(const char *url, char *buf, size_t cap)
{
    char saved[512];
    const char *at;
    size_t head;
    rl__url u;
    int ok;

    if (cap == 0)
        return buf;
    if (!url)
        url = "redis://127.0.0.1:6379";
    /* Whether it parses decides what is shown: a URL of no known shape
     * may hold a password anywhere (a missing '/' or '@' moves it out of
     * the userinfo), so nothing of it but the scheme is ever shown. */
    snprintf(saved, sizeof saved, "%s", rl_last_error());
    ok = rl__url_parse(&u, url) == RL_OK;
    rl__url_clear(&u);
    rl__err(RL_OK, "%s", saved);

    head = scheme_len(url);
    if (!ok) {
        snprintf(buf, cap, "%.*s***", (int)head, url);
        return buf;
    }
    /* Parsed: every '@' is the userinfo's (a host never holds one). */
    at = strrchr(url + head, '@');
    if (at)
        snprintf(buf, cap, "%.*s***%s", (int)head, url, at);
    else
        snprintf(buf, cap, "%s", url);
    return buf;
}

void rl__url_clear(rl__url *u)
{
    if (!u)
        return;
    /* host aliases seeds[0].host: each seed's host is freed once, host not
     * apart. A parse that failed half-way may have filled seeds past nseeds. */
    for (int i = 0; i < RL__SEEDS_MAX; i++)
        free(u->seeds[i].host);
    free(u->path);
    free(u->service);
    free(u->user);
    if (u->pass) {
        /* Do not leave the password in freed memory. */
        volatile char *p = u->pass;
        while (*p)
            *p++ = '\0';
        free(u->pass);
    }
    memset(u, 0, sizeof *u);
}

int rl_url_redact(char *out, size_t cap, const char *url)
{
    if (!out || cap == 0) {
        rl__err_clear();
        return rl__err(RL_EINVAL, "out must not be NULL, nor cap 0");
    }
    rl__url_redact(url, out, cap);
    return RL_OK;
}
