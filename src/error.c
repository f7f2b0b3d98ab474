/* Status names, the thread-local error detail, and the log callback. */
#include <stdio.h>
#include <string.h>

#include "client.h"
#include "error.h"

static _Thread_local char rl__detail[512];

const char *rl_strerror(int status)
{
    switch (status) {
    case RL_OK:        return "success";
    case RL_EBUSY:     return "lock is held by another owner";
    case RL_ETIMEDOUT: return "timed out waiting for the lock";
    case RL_ENOTOWNER: return "lock is not held by the calling thread";
    case RL_ELOST:     return "lease of the lock was lost";
    case RL_EINVAL:    return "invalid argument";
    case RL_ENOMEM:    return "out of memory";
    case RL_ECONN:     return "cannot reach Redis";
    case RL_EREDIS:    return "Redis returned an error";
    case RL_EPROTO:    return "Redis state contradicts the lock protocol";
    case RL_EAUTH:     return "Redis refused the credentials";
    case RL_ECANCELED: return "cancelled: the client was shut down";
    case RL_EREPLICA:  return "too few replicas acknowledged in time";
    case RL_ENOTSUP:   return "not supported here";
    case RL_ETLS:      return "TLS failed (certificate or handshake)";
    default:           return "unknown status";
    }
}

const char *rl_last_error(void)
{
    return rl__detail;
}

const char *rl_version(void)
{
    return RL_VERSION_STRING;
}

int rl__err(int status, const char *fmt, ...)
{
    char buf[sizeof rl__detail];
    va_list ap;

    /* Format aside first: the arguments may include rl_last_error() itself. */
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    memcpy(rl__detail, buf, sizeof buf);
    return status;
}

int rl__shut_down(void)
{
    return rl__err(RL_ECANCELED, "the client was shut down (rl_client_shutdown() or "
                   "rl_client_free()): no call on it or its handles does anything now");
}

void rl__err_clear(void)
{
    rl__detail[0] = '\0';
}

void rl__log(rl_client *c, int level, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    if (!c || !c->log)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->log(level, msg, c->payload);
}
