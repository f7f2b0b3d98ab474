/*
 * How rlock reads Redis replies. Pure: takes a parsed reply, trusts nothing
 * about its shape, and turns it into a status or a value.
 */
#include <limits.h>
#include <string.h>

#include "conn.h"
#include "error.h"
#include "reply.h"
#include "resp.h"

static int is_int(const redisReply *r)
{
    return r && r->type == REDIS_REPLY_INTEGER;
}

int rl__error_status(const char *s, size_t n)
{
    int len = (int)(n > 400 ? 400 : n);

    if ((n >= 9 && strncmp(s, "WRONGPASS", 9) == 0) || (n >= 6 && strncmp(s, "NOAUTH", 6) == 0) ||
        memmem(s, n, "invalid password", 16) || memmem(s, n, "invalid username-password", 25))
        return rl__err(RL_EAUTH, "%.*s", len, s);
    return rl__err(RL_EREDIS, "%.*s", len, s);
}

int rl__reply_error_status(const redisReply *reply)
{
    return rl__error_status(reply->str ? reply->str : "", reply->str ? reply->len : 0);
}

int rl__resp_result(const rl__resp *resp, rl__result *out)
{
    int i;

    if (resp->type == RL__RESP_ERROR)
        return rl__error_status(resp->str, resp->str_len);

    /* {code, value} or, with a fencing token, {code, value, token}; a
     * fenced semaphore hold's slots follow its token. */
    if (resp->type != RL__RESP_ARRAY || resp->nints < 2 ||
        (resp->nints > 3 && resp->ints[0] != RL__R_DONE))
        return rl__err(RL_EPROTO, "unexpected reply shape from an rlock script");
    if (resp->ints[0] < RL__R_MISMATCH || resp->ints[0] > RL__R_DONE)
        return rl__err(RL_EPROTO, "unexpected result code %lld from an rlock script",
                       resp->ints[0]);
    out->code = (int)resp->ints[0];
    out->value = resp->ints[1];
    out->token = resp->nints >= 3 ? (unsigned long long)resp->ints[2] : 0;
    out->nslots = resp->nints > 3 ? (unsigned)(resp->nints - 3) : 0;
    for (i = 3; i < resp->nints; i++) {
        if (resp->ints[i] < 0 || resp->ints[i] >= RL_SEMAPHORE_MAX)
            return rl__err(RL_EPROTO, "a permit slot out of range from an rlock script");
        out->slots[i - 3] = (unsigned)resp->ints[i];
    }
    return RL_OK;
}

/* "id=7 addr=10.0.0.2:51234 laddr=... fd=8 ..." (CLIENT INFO): our id and
 * our address as the server sees it, which is what CLIENT KILL matches. */
int rl__parse_client_info(const char *s, size_t len, rl__fence *out)
{
    size_t i = 0;
    int have_id = 0, have_addr = 0;

    out->id = -1;
    out->addr[0] = '\0';
    while (i < len) {
        size_t start = i, end;
        while (i < len && s[i] != ' ' && s[i] != '\n' && s[i] != '\r')
            i++;
        end = i;
        while (i < len && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r'))
            i++;
        if (end - start > 3 && memcmp(s + start, "id=", 3) == 0 && !have_id) {
            long long v = 0;
            size_t k;
            for (k = start + 3; k < end && k - start < 3 + 18; k++) {
                if (s[k] < '0' || s[k] > '9')
                    break;
                v = v * 10 + (s[k] - '0');
            }
            if (k != end)
                return -1;
            out->id = v;
            have_id = 1;
        } else if (end - start > 5 && memcmp(s + start, "addr=", 5) == 0 && !have_addr) {
            size_t n = end - start - 5;
            if (n >= sizeof out->addr)
                return -1;
            memcpy(out->addr, s + start + 5, n);
            out->addr[n] = '\0';
            have_addr = 1;
        }
    }
    if (!have_id || !have_addr) {
        out->id = -1;
        out->addr[0] = '\0';
        return -1;
    }
    return 0;
}

int rl__reply_result(const redisReply *reply, rl__result *out)
{
    if (!reply)
        return rl__err(RL_EPROTO, "no reply");
    if (reply->type == REDIS_REPLY_ERROR)
        return rl__reply_error_status(reply);
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 2 || reply->elements > 3 ||
        !is_int(reply->element[0]) || !is_int(reply->element[1]) ||
        (reply->elements == 3 && !is_int(reply->element[2])))
        return rl__err(RL_EPROTO, "unexpected reply shape from an rlock script");
    out->code = (int)reply->element[0]->integer;
    out->value = reply->element[1]->integer;
    out->token = reply->elements == 3 ? (unsigned long long)reply->element[2]->integer : 0;
    out->nslots = 0;
    if (out->code < RL__R_MISMATCH || out->code > RL__R_DONE)
        return rl__err(RL_EPROTO, "unexpected result code %lld from an rlock script",
                       (long long)reply->element[0]->integer);
    return RL_OK;
}

/* Digits from s[*i] up to a space or the end, at most `max` of them. */
static int digits(const char *s, size_t n, size_t *i, int max, unsigned long long *out)
{
    unsigned long long v = 0;
    size_t start = *i;

    for (; *i < n && s[*i] != ' '; (*i)++) {
        unsigned d = (unsigned)(s[*i] - '0');
        if (s[*i] < '0' || s[*i] > '9' || (int)(*i - start) >= max ||
            v > (ULLONG_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return *i > start ? 0 : -1;
}

int rl__parse_slots(const char *s, size_t len, rl__result *out)
{
    unsigned long long v;
    size_t i = 0, start;

    out->nslots = 0;
    while (i < len) {
        start = i;
        for (v = 0; i < len && s[i] >= '0' && s[i] <= '9' && i - start < 10; i++)
            v = v * 10 + (unsigned)(s[i] - '0');
        if (i == start || v >= RL_SEMAPHORE_MAX || out->nslots == RL__SEM_SLOTS_MAX ||
            (i < len && (s[i] != ',' || i + 1 == len)))
            return rl__err(RL_EPROTO, "permit slots are not \"<n>[,<n>...]\"");
        out->slots[out->nslots++] = (unsigned)v;
        i += i < len;
    }
    return out->nslots ? RL_OK : rl__err(RL_EPROTO, "no permit slots");
}

int rl__reply_hold(const redisReply *reply, long long *count, unsigned long long *token,
                   rl__result *slots)
{
    unsigned long long v, since, tok = 0;
    size_t i = 0;
    rl__result ignored;

    if (!reply)
        return rl__err(RL_EPROTO, "no reply");
    if (reply->type == REDIS_REPLY_ERROR)
        return rl__reply_error_status(reply);
    if (slots)
        slots->nslots = 0;
    if (reply->type == REDIS_REPLY_NIL || reply->type == REDIS_REPLY_INTEGER) {
        *count = reply->type == REDIS_REPLY_NIL ? 0 : reply->integer;
        *token = 0;
        return RL_OK;
    }
    /* "<count>", "<count> <since_ms>", "<count> <since_ms> <token>" or, a
     * fenced semaphore hold's, "<count> <since_ms> <token> <slots>"
     * (src/lua/lib/hold_value.lua, sem_slots.lua): the count leads. */
    if (reply->type != REDIS_REPLY_STRING ||
        digits(reply->str, reply->len, &i, 18, &v) != 0)
        return rl__err(RL_EPROTO, "hold count is not a number");
    if (i < reply->len && (i++, digits(reply->str, reply->len, &i, 19, &since) != 0))
        return rl__err(RL_EPROTO, "hold value is not \"<count> <since> [<token>]\"");
    if (i < reply->len && (i++, digits(reply->str, reply->len, &i, 20, &tok) != 0))
        return rl__err(RL_EPROTO, "hold value is not \"<count> <since> [<token>]\"");
    if (i < reply->len && (!tok || (i++, rl__parse_slots(reply->str + i, reply->len - i,
                                                           slots ? slots : &ignored) != RL_OK)))
        return rl__err(RL_EPROTO, "hold value is not \"<count> <since> <token> [<slots>]\"");
    *count = (long long)v;
    *token = tok;
    return RL_OK;
}

int rl__reply_count(const redisReply *reply, long long *out)
{
    unsigned long long token;

    return rl__reply_hold(reply, out, &token, NULL);
}

int rl__reply_flags(const redisReply *reply, size_t n, const char **out)
{
    size_t i;

    if (!reply)
        return rl__err(RL_EPROTO, "no reply");
    if (reply->type == REDIS_REPLY_ERROR)
        return rl__reply_error_status(reply);
    if ((reply->type != REDIS_REPLY_STRING && reply->type != REDIS_REPLY_STATUS) ||
        reply->len != n)
        return rl__err(RL_EPROTO, "renewal reply has the wrong length");
    for (i = 0; i < n; i++)
        if (reply->str[i] != '0' && reply->str[i] != '1' && reply->str[i] != '2')
            return rl__err(RL_EPROTO, "renewal reply holds a bad flag");
    *out = reply->str;
    return RL_OK;
}
