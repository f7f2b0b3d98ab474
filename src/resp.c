/*
 * A small RESP2 encoder and reader for the hot path (acquire and release).
 *
 * hiredis formats every command into fresh heap strings and builds every
 * reply out of heap objects; that is several allocations per lock
 * operation. The hot path instead encodes into a buffer owned by the
 * connection and reads the few reply shapes rlock's scripts produce
 * (an integer, an array of integers, an error or a status line) in place.
 * Pure: no I/O here, so it is unit-tested and fuzzed on its own.
 */
#include <limits.h>
#include <string.h>

#include "resp.h"

static size_t put_num(char *p, unsigned long long v)
{
    char tmp[24];
    size_t n = 0, i;

    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (i = 0; i < n; i++)
        p[i] = tmp[n - 1 - i];
    return n;
}

size_t rl__resp_encode(char *buf, size_t cap, int argc, const char **argv, const size_t *lens)
{
    size_t need = 1 + 20 + 2, at = 0;
    int i;

    for (i = 0; i < argc; i++)
        need += 1 + 20 + 2 + lens[i] + 2;
    if (need > cap)
        return need;        /* a bound: the caller grows its buffer and retries */
    buf[at++] = '*';
    at += put_num(buf + at, (unsigned long long)argc);
    buf[at++] = '\r';
    buf[at++] = '\n';
    for (i = 0; i < argc; i++) {
        buf[at++] = '$';
        at += put_num(buf + at, lens[i]);
        buf[at++] = '\r';
        buf[at++] = '\n';
        memcpy(buf + at, argv[i], lens[i]);
        at += lens[i];
        buf[at++] = '\r';
        buf[at++] = '\n';
    }
    return at;
}

/* One line ending in CRLF, starting at buf[*pos]. Returns its length
 * without the CRLF, -1 when incomplete, -2 when malformed. */
static long line(const char *buf, size_t len, size_t pos)
{
    const char *cr = memchr(buf + pos, '\r', len - pos);

    if (!cr) {
        /* A line longer than this is not one of ours. */
        return len - pos > 4096 ? -2 : -1;
    }
    if ((size_t)(cr - buf) + 1 >= len)
        return -1;
    if (cr[1] != '\n')
        return -2;
    return (long)(cr - (buf + pos));
}

static int parse_int(const char *s, long n, long long *out)
{
    long long v = 0;
    int neg = 0;
    long i = 0;

    if (n <= 0 || n > 19)
        return -1;
    if (s[0] == '-') {
        neg = 1;
        i = 1;
        if (n == 1)
            return -1;
    }
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        if (v > (LLONG_MAX - (s[i] - '0')) / 10)
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = neg ? -v : v;
    return 0;
}

int rl__resp_read(const char *buf, size_t len, rl__resp *out, size_t *used)
{
    size_t pos = 1;
    long n;
    long long count, i;

    memset(out, 0, sizeof *out);
    if (len == 0)
        return 0;
    n = line(buf, len, pos);
    if (n < 0)
        return n == -1 ? 0 : -1;
    switch (buf[0]) {
    case '-':
    case '+':
        out->type = buf[0] == '-' ? RL__RESP_ERROR : RL__RESP_STATUS;
        out->str = buf + 1;
        out->str_len = (size_t)n;
        *used = pos + (size_t)n + 2;
        return 1;
    case ':':
        out->type = RL__RESP_INT;
        if (parse_int(buf + 1, n, &out->ints[0]) != 0)
            return -1;
        out->nints = 1;
        *used = pos + (size_t)n + 2;
        return 1;
    case '*':
        if (parse_int(buf + 1, n, &count) != 0 || count < 0 || count > RL__RESP_MAX_INTS)
            return -1;
        pos += (size_t)n + 2;
        for (i = 0; i < count; i++) {
            if (pos >= len)
                return 0;
            if (buf[pos] != ':')
                return -1;
            n = line(buf, len, pos + 1);
            if (n < 0)
                return n == -1 ? 0 : -1;
            if (parse_int(buf + pos + 1, n, &out->ints[i]) != 0)
                return -1;
            pos += 1 + (size_t)n + 2;
        }
        out->type = RL__RESP_ARRAY;
        out->nints = (int)count;
        *used = pos;
        return 1;
    default:
        return -1;
    }
}
