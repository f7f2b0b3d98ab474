/*
 * Connections to Redis: opening one to a server (connect, authenticate,
 * select the database, learn its server-side id), waiting or not (an
 * "opening", driven by the caller's poll, so that several are made at
 * once), and running one plain command on it. rlock's scripts and the hot
 * path are command.c's; the pools are server.c's.
 */
#include <fcntl.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <stdio.h>

#include "client.h"
#include "conn.h"
#include "error.h"
#include "nopipe.h"
#include "reply.h"
#include "router.h"
#include "stats.h"
#include "tls.h"
#include "util.h"

static struct timeval ms_to_tv(long ms)
{
    struct timeval tv;
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    return tv;
}

/* What went wrong on a hiredis context, in words a user can act on. */
static const char *describe(redisContext *ctx, long timeout_ms, char *buf, size_t cap)
{
    if (ctx->err == REDIS_ERR_IO && strcmp(ctx->errstr, strerror(EAGAIN)) == 0) {
        snprintf(buf, cap, "no reply within %ld ms", timeout_ms);
        return buf;
    }
    if (ctx->err == REDIS_ERR_PROTOCOL) {
        snprintf(buf, cap, "the peer does not speak the Redis protocol (%s)", ctx->errstr);
        return buf;
    }
    if (ctx->err == REDIS_ERR_EOF)
        return "connection closed by the server";
    return ctx->errstr[0] ? ctx->errstr : "connection lost";
}

const char *rl__conn_error(rl__conn *conn)
{
    return describe(conn->ctx, conn->timeout_ms, conn->errbuf, sizeof conn->errbuf);
}

/* RL_EPROTO for a peer that is not Redis, RL_ECONN for the rest. */
static int io_error(redisContext *ctx, long timeout_ms, const char *what)
{
    char buf[192];

    return rl__err(ctx->err == REDIS_ERR_PROTOCOL ? RL_EPROTO : RL_ECONN, "%s: %s", what,
                   describe(ctx, timeout_ms, buf, sizeof buf));
}

int rl__conn_open(rl_client *c, rl__server *s, rl__conn **out)
{
    return rl__conn_open_within(c, s, 0, out);
}

/* Queue CLIENT SETNAME <conn_name> (owner.c builds the name); its reply,
 * an error included, is the handshake's to read and pass over. 1 when
 * queued. */
static int append_setname(const rl_client *c, redisContext *ctx)
{
    const char *argv[3] = { "CLIENT", "SETNAME", c->conn_name };
    size_t lens[3] = { 6, 7, strlen(c->conn_name) };

    return redisAppendCommandArgv(ctx, 3, argv, lens) == REDIS_OK;
}

/* The handshake, queued on ctx for one round trip: AUTH, SELECT, CLIENT
 * SETNAME and the fence probes. Returns how many replies it is owed;
 * *setname_at: which of them is SETNAME's (-1: not queued). */
static int append_handshake(const rl_client *c, redisContext *ctx, int *setname_at)
{
    static const char *const probes[3][4] = {
        { "CLIENT", "ID", NULL, NULL },
        { "CLIENT", "INFO", NULL, NULL },
        { "CLIENT", "KILL", "ID", "9223372036854775807" },
    };
    const char *argv[4];
    size_t lens[4];
    char dbbuf[16];
    int n = 0, i, p;

    if (c->url.pass) {
        argv[0] = "AUTH";
        lens[0] = 4;
        i = 1;
        if (c->url.user) {
            argv[i] = c->url.user;
            lens[i++] = strlen(c->url.user);
        }
        argv[i] = c->url.pass;
        lens[i++] = strlen(c->url.pass);
        redisAppendCommandArgv(ctx, i, argv, lens);
        n++;
    }
    if (c->url.db) {
        snprintf(dbbuf, sizeof dbbuf, "%d", c->url.db);
        argv[0] = "SELECT";
        lens[0] = 6;
        argv[1] = dbbuf;
        lens[1] = strlen(dbbuf);
        redisAppendCommandArgv(ctx, 2, argv, lens);
        n++;
    }
    /* Who we are, in CLIENT LIST (owner.c). A refusal (an ACL without
     * CLIENT) only costs the name: its reply is passed over. */
    *setname_at = append_setname(c, ctx) ? n++ : -1;
    /* The fence against late commands after a lost reply: our id, our
     * address as the server sees it, and whether we may kill at all (a probe
     * that kills nothing). Without any of them, lost replies are still read
     * back, only not fenced. */
    for (p = 0; p < 3; p++) {
        int argc = probes[p][2] ? 4 : 2;
        for (i = 0; i < argc; i++) {
            argv[i] = probes[p][i];
            lens[i] = strlen(probes[p][i]);
        }
        redisAppendCommandArgv(ctx, argc, argv, lens);
    }
    return n + 3;
}

/* A connection on ctx (taken over), its handshake still to be read. */
static rl__conn *conn_new(const rl_client *c, rl__server *s, redisContext *ctx)
{
    rl__conn *conn = calloc(1, sizeof *conn);

    if (!conn)
        return NULL;
    conn->ctx = ctx;
    conn->server = s;
    conn->fresh = c->mode == RL__MODE_SENTINEL;
    conn->timeout_ms = c->command_ms;
    conn->fence.id = -1;
    conn->fence.server = s;
    return conn;
}

/* Judge reply i of the n the handshake is owed (the last three: the fence
 * probes) into *rc and *fenced. */
static void handshake_reply(rl__conn *conn, const redisReply *r, int i, int n, int setname_at,
                            int *rc, int *fenced)
{
    int probe = i - (n - 3);      /* 0: CLIENT ID, 1: CLIENT INFO, 2: KILL */

    if (i == setname_at) {
        /* NOPERM and the like: the name is a courtesy. */
    } else if (probe < 0) {
        if (r->type == REDIS_REPLY_ERROR && *rc == RL_OK)
            *rc = rl__reply_error_status(r);
    } else if (r->type == REDIS_REPLY_ERROR) {
        if (strncmp(r->str, "NOAUTH", 6) == 0 && *rc == RL_OK)
            *rc = rl__reply_error_status(r);
        if (probe == 2)
            *fenced = 0;
    } else if (probe == 0 && r->type == REDIS_REPLY_INTEGER) {
        conn->fence.id = r->integer;
    } else if (probe == 1 && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)) {
        rl__fence info;
        if (rl__parse_client_info(r->str, r->len, &info) == 0 && info.id == conn->fence.id)
            memcpy(conn->fence.addr, info.addr, sizeof info.addr);
    }
}

/* The handshake could not be read: a status that says why. Accepted but
 * silent (stopped, overloaded): as good as down for whoever orders its
 * work by the servers that answer. */
static int handshake_broken(rl__conn *conn, long reply_ms)
{
    redisContext *ctx = conn->ctx;
    const char *tls = rl__redis_tls_error(ctx);
    int rc;

    if (tls)
        rc = rl__err(RL_ETLS, "%s", tls);   /* a client certificate was wanted, say */
    else
        rc = rl__err(ctx->err == REDIS_ERR_PROTOCOL ? RL_EPROTO : RL_ECONN,
                     "handshake with %s: %s%s", conn->server->name,
                     describe(ctx, reply_ms, conn->errbuf, sizeof conn->errbuf),
                     !rl__tls_of(ctx->fd) && (ctx->err == REDIS_ERR_EOF ||
                                               strcmp(ctx->errstr, strerror(ECONNRESET)) == 0)
                         ? " (if the server expects TLS: rediss://)" : "");

    atomic_store(&conn->server->down_until, rl__now_ms() + 2000);
    return rc;
}

/* The handshake is read, with outcome rc: on RL_OK *out is the connection,
 * with the client's reply timeout; else it is freed. */
static int handshake_end(rl_client *c, rl__conn *conn, int rc, int fenced, long reply_ms,
                         rl__conn **out)
{
    if (rc == RL_OK && !fenced) {
        conn->fence.id = -1;
        if (!atomic_exchange(&c->warned_fence, 1))
            rl__log(c, RL_LOG_ERROR, "rlock: CLIENT KILL is not permitted for this user: "
                    "commands delayed in the network after a lost reply cannot be fenced");
    }
    if (rc == RL_OK && reply_ms != c->command_ms)
        rl__conn_set_timeout(conn, c->command_ms);
    if (rc != RL_OK) {
        rl__redis_free(conn->ctx);
        free(conn);
        return rc;
    }
    /* It answered: a down mark left by an earlier try (the keeper's for
     * the watchdog, say) must not keep the application's calls off it. */
    atomic_store(&conn->server->down_until, 0);
    RL__STAT_INC(c, connects);
    *out = conn;
    return RL_OK;
}

int rl__conn_open_within(rl_client *c, rl__server *s, long within_ms, rl__conn **out)
{
    long connect_ms = within_ms > 0 && within_ms < c->connect_ms ? within_ms : c->connect_ms;
    long reply_ms = within_ms > 0 && within_ms < c->command_ms ? within_ms : c->command_ms;
    redisContext *ctx;
    redisReply *r = NULL;
    rl__conn *conn;
    int n, rc = RL_OK, i, fenced = 1, setname_at;

    if (!s->host)
        ctx = redisConnectUnixWithTimeout(c->url.path, ms_to_tv(connect_ms));
    else
        ctx = redisConnectWithTimeout(s->host, s->port, ms_to_tv(connect_ms));
    if (!ctx)
        return rl__err(RL_ENOMEM, "out of memory connecting to Redis");
    if (ctx->err) {
        rc = rl__err(RL_ECONN, "connect to %s: %s", s->name, ctx->errstr);
        rl__redis_free(ctx);
        atomic_store(&s->down_until, rl__now_ms() + 2000);
        rl__map_lost(c, s);    /* a Cluster may have moved on without it */
        return rc;
    }
    /* Not inherited by a program the application (or `rlock exec`) runs:
     * hiredis 0.14 opens its sockets without SOCK_CLOEXEC. */
    (void)fcntl(ctx->fd, F_SETFD, FD_CLOEXEC);
    if (redisSetTimeout(ctx, ms_to_tv(reply_ms)) != REDIS_OK) {
        rc = io_error(ctx, reply_ms, "set timeout");
        rl__redis_free(ctx);
        return rc;
    }
    if (s->host)
        redisEnableKeepAlive(ctx);
    if ((rc = rl__tls_connect(c, s->host, ctx->fd, s->name)) != RL_OK) {
        rl__redis_free(ctx);
        atomic_store(&s->down_until, rl__now_ms() + 2000);
        if (rc == RL_ECONN)
            rl__map_lost(c, s);
        return rc;
    }
    n = append_handshake(c, ctx, &setname_at);
    if (!(conn = conn_new(c, s, ctx))) {
        rl__redis_free(ctx);
        return rl__err(RL_ENOMEM, "out of memory");
    }
    for (i = 0; i < n; i++) {
        if (rl__redis_get_reply(ctx, (void **)&r) != REDIS_OK) {
            rc = handshake_broken(conn, reply_ms);
            break;
        }
        handshake_reply(conn, r, i, n, setname_at, &rc, &fenced);
        freeReplyObject(r);
    }
    return handshake_end(c, conn, rc, fenced, reply_ms, out);
}

/* ---- a connection opened without blocking ----------------------------- */

struct rl__opening {
    rl__server *server;
    struct addrinfo *addrs, *next;  /* the server's addresses; the next to try */
    int fd;                         /* connecting: the socket (-1: handshaking) */
    int err;                        /* connecting: why the last address failed */
    rl__tls_link *tls;              /* connected, TLS handshake under way */
    short tls_events;               /* ...waiting for these */
    rl__conn *conn;                 /* handshaking */
    int owed, got, setname_at, rc, fenced;
    long connect_ms, reply_ms;
    int64_t deadline;               /* of the connect, then of the handshake */
};

static void opening_free(rl__opening *o)
{
    rl__tls_abort(o->tls);
    if (o->fd >= 0) {
        rl__tls_drop(o->fd);
        close(o->fd);
    }
    if (o->conn) {
        rl__redis_free(o->conn->ctx);
        free(o->conn);
    }
    if (o->addrs)
        freeaddrinfo(o->addrs);
    free(o);
}

/* A connect to o's next address, without waiting: 0 begun (or done), -1
 * none left (o->err: why the last failed). */
static int connect_next(rl__opening *o)
{
    for (; o->next; o->next = o->next->ai_next) {
        struct addrinfo *a = o->next;
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                        a->ai_protocol);
        if (fd < 0) {
            o->err = errno;
            continue;
        }
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 || errno == EINPROGRESS) {
            o->fd = fd;
            o->next = a->ai_next;
            return 0;
        }
        o->err = errno;
        close(fd);
    }
    return -1;
}

/* The connect failed on every address: as rl__conn_open_within says so. */
static int connect_failed(rl_client *c, rl__opening *o)
{
    rl__server *s = o->server;
    int rc = rl__err(RL_ECONN, "connect to %s: %s", s->name, strerror(o->err));

    atomic_store(&s->down_until, rl__now_ms() + 2000);
    rl__map_lost(c, s);
    opening_free(o);
    return rc;
}

int rl__opening_start(rl_client *c, rl__server *s, long within_ms, rl__opening **out)
{
    struct addrinfo hints;
    char port[16];
    rl__opening *o;
    int gai;

    if (!s->host)
        return rl__err(RL_EINVAL, "a Unix socket is opened with rl__conn_open_within");
    if (!(o = calloc(1, sizeof *o)))
        return rl__err(RL_ENOMEM, "out of memory");
    o->server = s;
    o->fd = -1;
    o->fenced = 1;
    o->connect_ms = within_ms > 0 && within_ms < c->connect_ms ? within_ms : c->connect_ms;
    o->reply_ms = within_ms > 0 && within_ms < c->command_ms ? within_ms : c->command_ms;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(port, sizeof port, "%d", s->port);
    /* A name is looked up first, waiting, as hiredis does; an address
     * (the usual case) is not looked up at all. */
    if ((gai = getaddrinfo(s->host, port, &hints, &o->addrs)) != 0) {
        opening_free(o);
        atomic_store(&s->down_until, rl__now_ms() + 2000);
        return rl__err(RL_ECONN, "connect to %s: %s", s->name, gai_strerror(gai));
    }
    o->next = o->addrs;
    o->err = ECONNREFUSED;
    if (connect_next(o) != 0)
        return connect_failed(c, o);
    o->deadline = rl__now_ms() + o->connect_ms;
    *out = o;
    return RL_OK;
}

int64_t rl__opening_poll(const rl__opening *o, struct pollfd *pfd)
{
    pfd->fd = o->conn ? o->conn->ctx->fd : o->fd;
    pfd->events = o->conn ? POLLIN : o->tls ? o->tls_events : POLLOUT;
    pfd->revents = 0;
    return o->deadline;
}

/* Connected: hand the socket to hiredis (blocking, as every connection of
 * the client is) and write the handshake. RL_OK, or o is freed. */
static int begin_handshake(rl_client *c, rl__opening *o)
{
    int one = 1, done = 0, fl = fcntl(o->fd, F_GETFL);
    redisContext *ctx;

    (void)setsockopt(o->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (fl < 0 || fcntl(o->fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        o->err = errno;
        return connect_failed(c, o);
    }
    if (!(ctx = redisConnectFd(o->fd))) {
        opening_free(o);
        return rl__err(RL_ENOMEM, "out of memory connecting to Redis");
    }
    o->fd = -1;
    if (!(o->conn = conn_new(c, o->server, ctx))) {
        rl__redis_free(ctx);
        opening_free(o);
        return rl__err(RL_ENOMEM, "out of memory");
    }
    redisEnableKeepAlive(ctx);
    /* The write timeout too: the handshake is written in one go. */
    if (redisSetTimeout(ctx, ms_to_tv(o->reply_ms)) != REDIS_OK) {
        int rc = io_error(ctx, o->reply_ms, "set timeout");
        opening_free(o);
        return rc;
    }
    o->owed = append_handshake(c, ctx, &o->setname_at);
    while (!done) {
        if (rl__redis_buffer_write(ctx, &done) != REDIS_OK) {
            int rc = handshake_broken(o->conn, o->reply_ms);
            opening_free(o);
            return rc;
        }
    }
    o->deadline = rl__now_ms() + o->reply_ms;
    return RL_OK;
}

/* A step of the TLS handshake: 1 more to come (or the Redis handshake
 * begun), else a status and o is freed. */
static int step_tls(rl_client *c, rl__opening *o)
{
    int st = rl__tls_step(o->tls, o->server->name, &o->tls_events);

    if (st == 1)
        return 1;
    if (st != 0) {
        atomic_store(&o->server->down_until, rl__now_ms() + 2000);
        if (st == RL_ECONN)
            rl__map_lost(c, o->server);
        opening_free(o);
        return st;
    }
    o->tls = NULL;      /* in place: the descriptor's now */
    return (st = begin_handshake(c, o)) == RL_OK ? 1 : st;
}

/* The socket is writable: connected, or refused (then the next address). */
static int step_connect(rl_client *c, rl__opening *o)
{
    int err = 0, rc;
    socklen_t len = sizeof err;

    if (getsockopt(o->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    if (err == 0 && rl__tls_on(c)) {
        if ((rc = rl__tls_start(c, o->server->host, o->fd, &o->tls)) != RL_OK) {
            opening_free(o);
            return rc;
        }
        o->deadline = rl__now_ms() + o->reply_ms;
        return step_tls(c, o);
    }
    if (err == 0)
        return (rc = begin_handshake(c, o)) == RL_OK ? 1 : rc;
    close(o->fd);
    o->fd = -1;
    o->err = err;
    return connect_next(o) == 0 ? 1 : connect_failed(c, o);
}

/* Handshake replies are in: read what came, judge each reply. */
static int step_handshake(rl_client *c, rl__opening *o, rl__conn **out)
{
    redisContext *ctx = o->conn->ctx;
    rl__conn *conn = o->conn;
    int rc;

    if (rl__redis_buffer_read(ctx) != REDIS_OK) {
        rc = handshake_broken(conn, o->reply_ms);
        opening_free(o);
        return rc;
    }
    while (o->got < o->owed) {
        redisReply *r = NULL;
        if (redisGetReplyFromReader(ctx, (void **)&r) != REDIS_OK) {
            rc = handshake_broken(conn, o->reply_ms);
            opening_free(o);
            return rc;
        }
        if (!r)
            return 1;
        handshake_reply(conn, r, o->got++, o->owed, o->setname_at, &o->rc, &o->fenced);
        freeReplyObject(r);
    }
    o->conn = NULL;
    rc = handshake_end(c, conn, o->rc, o->fenced, o->reply_ms, out);
    opening_free(o);
    return rc;
}

int rl__opening_step(rl_client *c, rl__opening *o, short revents, rl__conn **out)
{
    if (!revents)
        return 1;
    if (o->tls)
        return step_tls(c, o);
    return o->conn ? step_handshake(c, o, out) : step_connect(c, o);
}

int rl__opening_expire(rl_client *c, rl__opening *o)
{
    int rc;

    if (o->tls) {
        rc = rl__err(RL_ECONN, "TLS with %s: no answer to the handshake within %ld ms (%s)",
                     o->server->name, o->reply_ms, RL__TLS_SILENT_WHY);
        atomic_store(&o->server->down_until, rl__now_ms() + 2000);
        opening_free(o);
        return rc;
    }
    if (!o->conn) {
        o->err = ETIMEDOUT;
        return connect_failed(c, o);
    }
    /* As a blocking read that timed out reads (describe()). */
    o->conn->ctx->err = REDIS_ERR_IO;
    snprintf(o->conn->ctx->errstr, sizeof o->conn->ctx->errstr, "%s", strerror(EAGAIN));
    rc = handshake_broken(o->conn, o->reply_ms);
    opening_free(o);
    return rc;
}

void rl__opening_cancel(rl__opening *o)
{
    if (o)
        opening_free(o);
}

void rl__conn_open_all(rl_client *c, rl__server *const *s, int n, rl__conn **out, int *rc,
                       char (*why)[RL__WHY_LEN])
{
    rl__opening *o[RL__NODES_MAX];
    int i;

    for (i = 0; i < n; i++) {
        out[i] = NULL;
        rc[i] = rl__opening_start(c, s[i], 0, &o[i]);
        if (rc[i] != RL_OK) {
            o[i] = NULL;
            snprintf(why[i], RL__WHY_LEN, "%s", rl_last_error());
        }
    }
    for (;;) {
        struct pollfd pfd[RL__NODES_MAX];
        int at[RL__NODES_MAX], np = 0, j;
        int64_t now = rl__now_ms(), until = -1, d;

        for (i = 0; i < n; i++) {
            if (!o[i])
                continue;
            if ((d = rl__opening_poll(o[i], &pfd[np])) <= now) {
                rc[i] = rl__opening_expire(c, o[i]);
                o[i] = NULL;
                snprintf(why[i], RL__WHY_LEN, "%s", rl_last_error());
                continue;
            }
            at[np++] = i;
            if (until < 0 || d < until)
                until = d;
        }
        if (np == 0)
            return;
        if (poll(pfd, (nfds_t)np, (int)(until - now)) < 0 && errno != EINTR)
            continue;   /* the next pass finds the deadlines */
        for (j = 0; j < np; j++) {
            int st = rl__opening_step(c, o[at[j]], pfd[j].revents, &out[at[j]]);
            if (st == 1)
                continue;
            o[at[j]] = NULL;
            rc[at[j]] = st;
            if (st != RL_OK)
                snprintf(why[at[j]], RL__WHY_LEN, "%s", rl_last_error());
        }
    }
}

void rl__conn_close(rl_client *c, rl__conn *conn)
{
    if (!conn)
        return;
    /* Every connection found broken ends here, wherever it was used. */
    if (conn->ctx->err)
        RL__STAT_INC(c, disconnects);
    rl__redis_free(conn->ctx);
    free(conn->wbuf);
    free(conn);
}

void rl__conn_set_timeout(rl__conn *conn, long ms)
{
    if (redisSetTimeout(conn->ctx, ms_to_tv(ms)) == REDIS_OK)
        conn->timeout_ms = ms;
}

int rl__conn_broken(const rl__conn *conn)
{
    return conn->ctx->err != 0;
}

/* Queue CLIENT KILL for a connection whose late commands must never run
 * (a killed client's unread commands are discarded). Returns 1 if queued. */
int rl__conn_append_kill(rl__conn *conn, const rl__fence *dead)
{
    char idbuf[24];
    const char *argv[6] = { "CLIENT", "KILL", "ID", idbuf, "ADDR", dead->addr };
    size_t lens[6] = { 6, 4, 2, 0, 4, strlen(dead->addr) };

    /* An id names a connection of one server only. */
    if (dead->id <= 0 || dead->server != conn->server)
        return 0;
    lens[3] = rl__fmt_ll(idbuf, dead->id);
    redisAppendCommandArgv(conn->ctx, dead->addr[0] ? 6 : 4, argv, lens);
    return 1;
}

int rl__conn_call(rl__conn *conn, redisReply **out, int argc, const char **argv, const size_t *lens)
{
    redisReply *r = rl__redis_command_argv(conn->ctx, argc, argv, lens);

    if (!r) {
        if (conn->ctx->err == 0)
            conn->ctx->err = REDIS_ERR_OTHER;
        return io_error(conn->ctx, conn->timeout_ms, "Redis command");
    }
    *out = r;
    return RL_OK;
}
