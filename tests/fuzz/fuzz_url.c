/*
 * libFuzzer target: the connection URL parser, rl__url_parse() (src/url.c).
 * Input: any bytes, taken as a NUL-terminated URL (stopping at the first
 * NUL, as a C caller's string would). Checks what a successful parse
 * promises: a host or a socket path, a port in 1..65535, a database >= 0.
 * Then the same bytes with a secret planted at a place the first byte
 * chooses: no error text ever holds it, and rl__url_redact() shows it only
 * where a URL that parses keeps it, after its last '@' (a host, a path).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlock_int.h"

static void planted(const uint8_t *data, size_t size)
{
    static const char secret[] = "Qz!9kW";
    size_t at = size ? data[0] % size : 0, len, tail, shown_len;
    char *s = malloc(size + sizeof secret), shown[8192];
    const char *last_at, *scheme;
    rl__url u;
    int rc;

    if (!s)
        return;
    /* data[1..at) + secret + data[at..size), up to the first NUL. */
    len = at > 1 ? at - 1 : 0;
    tail = size > 1 + len ? size - 1 - len : 0;
    memcpy(s, data + 1, len);
    memcpy(s + len, secret, sizeof secret - 1);
    memcpy(s + len + sizeof secret - 1, data + 1 + len, tail);
    s[len + sizeof secret - 1 + tail] = '\0';
    rc = rl__url_parse(&u, s);
    if (rc != RL_OK && strstr(rl_last_error(), secret))
        abort();
    rl__url_clear(&u);
    rl__url_redact(s, shown, sizeof shown);
    shown_len = strlen(shown);
    if (shown_len < 3)
        abort();
    /* Refused: "***" after nothing or a scheme, nothing of the rest. */
    scheme = strstr(shown, "://");
    if (rc != RL_OK && (strcmp(shown + shown_len - 3, "***") != 0 ||
                        (scheme ? scheme + 6 : shown + 3) != shown + shown_len ||
                        strncmp(shown, s, shown_len - 3) != 0))
        abort();
    /* Parsed: the URL from its last '@' on, nothing between the scheme and
     * it (the userinfo, where the secret may sit). */
    last_at = strrchr(s, '@');
    if (rc == RL_OK && !last_at && strcmp(shown, s) != 0)
        abort();
    if (rc == RL_OK && last_at &&
        (strcmp(shown + shown_len - strlen(last_at), last_at) != 0 ||
         strncmp(shown + shown_len - strlen(last_at) - 3, "***", 3) != 0 ||
         !strstr(s, "://") || strstr(s, "://") + 3 != s + (shown_len - strlen(last_at) - 3)))
        abort();
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    rl__url u;

    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    if (rl__url_parse(&u, s) == RL_OK) {
        if (u.is_unix ? (!u.path || u.path[0] != '/')
                      : (!u.host || !u.host[0] || u.port < 1 || u.port > 65535))
            abort();
        if (u.db < 0 || (u.pass && !u.pass[0]))
            abort();
    } else if (u.host || u.path || u.user || u.pass) {
        abort();        /* a failed parse leaves nothing allocated */
    }
    rl__url_clear(&u);
    free(s);
    planted(data, size);
    return 0;
}
