/*
 * libFuzzer target: the connection URL parser, rl__url_parse() (src/url.c).
 * Input: any bytes, taken as a NUL-terminated URL (stopping at the first
 * NUL, as a C caller's string would). Checks what a successful parse
 * promises: a host or a socket path, a port in 1..65535, a database >= 0.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rlock_int.h"

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
    return 0;
}
