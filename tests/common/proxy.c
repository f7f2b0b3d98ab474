#include "proxy.h"
#include "rt_util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RT_PROXY_BUF 16384
#define RT_PROXY_ACK_TIMEOUT_MS 5000

typedef struct rt_conn {
    int cfd;      /* client side (accepted) */
    int sfd;      /* server side (connected to the target) */
    int dropping; /* swallow the next server reply, then close */
    /* Replace the next server reply by `repl`: the reply's bytes are
     * gathered in `pend` until one whole RESP reply has come. */
    int mangling;
    char *repl;
    size_t repl_len;
    char *pend;
    size_t pend_len, pend_cap;
    /* Keep every server reply (in `pend`) until the hold is let go. */
    int holding;
} rt_conn;

struct rt_proxy {
    int lfd;
    int wake[2];
    int port;
    int target_port;
    char url[64];
    pthread_t thread;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* Requests, written by callers under mu. */
    int stop;
    int stall;
    int refuse;
    unsigned long cut_req;
    int drop_armed;
    char *drop_needle;
    int mangle_armed;
    char *mangle_needle;
    char *mangle_repl;
    size_t mangle_len;
    long mangled;
    int hold_armed;
    char *hold_needle;
    unsigned long unhold_req;
    unsigned long seq_req;
    /* State reported by the proxy thread under mu. */
    unsigned long seq_ack;
    unsigned long cut_done;
    int last_cut_closed;
    long dropped;
    size_t held;        /* bytes held now */
    int nconns;
    long accepted;

    /* Owned by the proxy thread alone. */
    rt_conn *conns;
    size_t n, cap;
};

static int connect_target(int port)
{
    struct sockaddr_in sa;
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((unsigned short)port);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static int send_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Case-insensitive search of an ASCII needle in a binary buffer. */
static int contains_ci(const char *buf, size_t len, const char *needle)
{
    size_t m = strlen(needle), i, j;
    if (m == 0)
        return 1;
    for (i = 0; i + m <= len; i++) {
        for (j = 0; j < m; j++) {
            if (tolower((unsigned char)buf[i + j]) != tolower((unsigned char)needle[j]))
                break;
        }
        if (j == m)
            return 1;
    }
    return 0;
}

static void close_conn(rt_conn *c)
{
    if (c->cfd >= 0)
        close(c->cfd);
    if (c->sfd >= 0)
        close(c->sfd);
    c->cfd = c->sfd = -1;
    free(c->repl);
    free(c->pend);
    c->repl = c->pend = NULL;
    c->repl_len = c->pend_len = c->pend_cap = 0;
    c->mangling = 0;
    c->holding = 0;
}

/* One CRLF-terminated line from buf[pos]: its length without the CRLF,
 * -1 when incomplete. */
static long resp_line(const char *buf, size_t len, size_t pos)
{
    size_t i;
    for (i = pos; i + 1 < len; i++) {
        if (buf[i] == '\r' && buf[i + 1] == '\n')
            return (long)(i - pos);
    }
    return -1;
}

/* Length of the one whole RESP2 reply at buf[pos], 0 when more bytes are
 * needed, -1 when it is not RESP2. */
static long resp_skip(const char *buf, size_t len, size_t pos, int depth)
{
    long n, i, sub;
    long long count;
    size_t at;

    if (pos >= len)
        return 0;
    if (depth > 32)
        return -1;
    n = resp_line(buf, len, pos + 1);
    if (n < 0)
        return 0;
    at = pos + 1 + (size_t)n + 2;
    switch (buf[pos]) {
    case '+':
    case '-':
    case ':':
        return (long)(at - pos);
    case '$':
    case '*':
        count = strtoll(buf + pos + 1, NULL, 10);
        if (count < 0)
            return (long)(at - pos);
        if (buf[pos] == '$') {
            if (at + (size_t)count + 2 > len)
                return 0;
            return (long)(at + (size_t)count + 2 - pos);
        }
        for (i = 0; i < count; i++) {
            sub = resp_skip(buf, len, at, depth + 1);
            if (sub <= 0)
                return sub;
            at += (size_t)sub;
        }
        return (long)(at - pos);
    default:
        return -1;
    }
}

/* Drop closed entries from the table. */
static void compact(rt_proxy *p)
{
    size_t i, k = 0;
    for (i = 0; i < p->n; i++) {
        if (p->conns[i].cfd >= 0)
            p->conns[k++] = p->conns[i];
    }
    p->n = k;
}

static void add_conn(rt_proxy *p, int cfd, int sfd)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        rt_conn *v = realloc(p->conns, cap * sizeof *v);
        if (v == NULL) {
            close(cfd);
            close(sfd);
            return;
        }
        p->conns = v;
        p->cap = cap;
    }
    p->conns[p->n].cfd = cfd;
    p->conns[p->n].sfd = sfd;
    p->conns[p->n].dropping = 0;
    p->conns[p->n].mangling = 0;
    p->conns[p->n].repl = NULL;
    p->conns[p->n].repl_len = 0;
    p->conns[p->n].pend = NULL;
    p->conns[p->n].pend_len = p->conns[p->n].pend_cap = 0;
    p->conns[p->n].holding = 0;
    p->n++;
}

static void on_accept(rt_proxy *p, int refuse)
{
    int one = 1;
    int sfd;
    int cfd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC);

    if (cfd < 0)
        return;
    pthread_mutex_lock(&p->mu);
    p->accepted++;
    pthread_mutex_unlock(&p->mu);
    if (refuse) {
        close(cfd);
        return;
    }
    setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sfd = connect_target(p->target_port);
    if (sfd < 0) {
        close(cfd);
        return;
    }
    add_conn(p, cfd, sfd);
}

/* Client -> server. */
static void from_client(rt_proxy *p, rt_conn *c, char *buf)
{
    ssize_t n = recv(c->cfd, buf, RT_PROXY_BUF, 0);

    if (n <= 0) {
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            return;
        close_conn(c);
        return;
    }
    pthread_mutex_lock(&p->mu);
    if (p->drop_armed &&
        (p->drop_needle == NULL || contains_ci(buf, (size_t)n, p->drop_needle))) {
        p->drop_armed = 0;
        c->dropping = 1;
    } else if (p->mangle_armed && !c->mangling && !c->dropping &&
               contains_ci(buf, (size_t)n, p->mangle_needle)) {
        /* The replacement moves to the connection. */
        p->mangle_armed = 0;
        c->mangling = 1;
        free(c->repl);
        c->repl = p->mangle_repl;
        c->repl_len = p->mangle_len;
        p->mangle_repl = NULL;
        p->mangle_len = 0;
    } else if (p->hold_armed && !c->mangling && !c->dropping &&
               contains_ci(buf, (size_t)n, p->hold_needle)) {
        p->hold_armed = 0;
        c->holding = 1;
    }
    pthread_mutex_unlock(&p->mu);
    if (send_all(c->sfd, buf, (size_t)n) != 0)
        close_conn(c);
}

/* Append buf[0..n) to c's pending bytes; -1 out of memory. */
static int pend_add(rt_conn *c, const char *buf, size_t n)
{
    if (c->pend_len + n > c->pend_cap) {
        size_t cap = (c->pend_len + n) * 2;
        char *v = realloc(c->pend, cap);
        if (v == NULL)
            return -1;
        c->pend = v;
        c->pend_cap = cap;
    }
    memcpy(c->pend + c->pend_len, buf, n);
    c->pend_len += n;
    return 0;
}

/* Server -> client. */
static void from_server(rt_proxy *p, rt_conn *c, char *buf)
{
    ssize_t n = recv(c->sfd, buf, RT_PROXY_BUF, 0);

    if (n <= 0) {
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            return;
        close_conn(c);
        return;
    }
    if (c->dropping) {
        /* The server has answered, so it applied the command. The client
         * never learns the answer: its connection is cut. */
        close_conn(c);
        pthread_mutex_lock(&p->mu);
        p->dropped++;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        return;
    }
    if (c->mangling) {
        /* Gather the reply; once it is whole, send the replacement in its
         * place and whatever came after it as is. */
        long whole;
        if (pend_add(c, buf, (size_t)n) != 0) {
            close_conn(c);
            return;
        }
        whole = resp_skip(c->pend, c->pend_len, 0, 0);
        if (whole == 0)
            return;
        if (whole < 0)
            whole = (long)c->pend_len;   /* not RESP2: replace all of it */
        c->mangling = 0;
        pthread_mutex_lock(&p->mu);
        p->mangled++;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        if (send_all(c->cfd, c->repl, c->repl_len) != 0 ||
            send_all(c->cfd, c->pend + whole, c->pend_len - (size_t)whole) != 0) {
            close_conn(c);
            return;
        }
        free(c->repl);
        c->repl = NULL;
        c->repl_len = 0;
        c->pend_len = 0;
        return;
    }
    if (c->holding) {
        if (pend_add(c, buf, (size_t)n) != 0) {
            close_conn(c);
            return;
        }
        pthread_mutex_lock(&p->mu);
        p->held += (size_t)n;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        return;
    }
    if (send_all(c->cfd, buf, (size_t)n) != 0)
        close_conn(c);
}

/* Send what the holding connections kept, and forward as usual from now. */
static void unhold_all(rt_proxy *p)
{
    size_t i;

    for (i = 0; i < p->n; i++) {
        rt_conn *c = &p->conns[i];
        if (c->cfd < 0 || !c->holding)
            continue;
        c->holding = 0;
        if (send_all(c->cfd, c->pend, c->pend_len) != 0)
            close_conn(c);
        c->pend_len = 0;
    }
    p->held = 0;
}

static void *proxy_main(void *arg)
{
    rt_proxy *p = arg;
    char *buf = malloc(RT_PROXY_BUF);
    struct pollfd *pfds = NULL;
    size_t pcap = 0;

    if (buf == NULL)
        return NULL;
    for (;;) {
        int stalled, refuse;
        size_t i, np, nconn;

        pthread_mutex_lock(&p->mu);
        if (p->stop) {
            pthread_mutex_unlock(&p->mu);
            break;
        }
        if (p->cut_done != p->cut_req) {
            int closed = 0;
            for (i = 0; i < p->n; i++) {
                if (p->conns[i].cfd >= 0)
                    closed++;
                close_conn(&p->conns[i]);
            }
            p->n = 0;
            p->cut_done = p->cut_req;
            p->last_cut_closed = closed;
        }
        if (p->unhold_req) {
            unhold_all(p);
            p->unhold_req = 0;
        }
        stalled = p->stall;
        refuse = p->refuse;
        p->nconns = (int)p->n;
        p->seq_ack = p->seq_req;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);

        nconn = stalled ? 0 : p->n;
        np = 2 + 2 * nconn;
        if (np > pcap) {
            struct pollfd *v = realloc(pfds, np * sizeof *v);
            if (v == NULL)
                break;
            pfds = v;
            pcap = np;
        }
        pfds[0].fd = p->wake[0];
        pfds[0].events = POLLIN;
        pfds[1].fd = p->lfd;
        pfds[1].events = POLLIN;
        for (i = 0; i < nconn; i++) {
            pfds[2 + 2 * i].fd = p->conns[i].cfd;
            pfds[2 + 2 * i].events = POLLIN;
            pfds[3 + 2 * i].fd = p->conns[i].sfd;
            pfds[3 + 2 * i].events = POLLIN;
        }
        for (i = 0; i < np; i++)
            pfds[i].revents = 0;
        if (poll(pfds, (nfds_t)np, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (pfds[0].revents & POLLIN) {
            char drain[64];
            while (read(p->wake[0], drain, sizeof drain) > 0) {
            }
        }
        /* Forward first, then accept: the table may grow on accept. */
        for (i = 0; i < nconn; i++) {
            rt_conn *c = &p->conns[i];
            if (c->cfd >= 0 && pfds[2 + 2 * i].revents != 0)
                from_client(p, c, buf);
            if (c->sfd >= 0 && pfds[3 + 2 * i].revents != 0)
                from_server(p, c, buf);
        }
        compact(p);
        if (pfds[1].revents & POLLIN)
            on_accept(p, refuse);
    }
    free(pfds);
    free(buf);
    return NULL;
}

/* Wake the proxy thread and wait until it has applied the current requests.
 * Called with p->mu held. */
static int sync_locked(rt_proxy *p)
{
    struct timespec ts;
    unsigned long mine = ++p->seq_req;
    char b = 1;
    int rc = 0;
    ssize_t ignored;

    ignored = write(p->wake[1], &b, 1);
    (void)ignored;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += RT_PROXY_ACK_TIMEOUT_MS / 1000;
    while (p->seq_ack < mine && rc == 0)
        rc = pthread_cond_timedwait(&p->cv, &p->mu, &ts);
    if (p->seq_ack < mine) {
        fprintf(stderr, "rltest: proxy thread did not answer within %d ms\n",
                RT_PROXY_ACK_TIMEOUT_MS);
        return -1;
    }
    return 0;
}

rt_proxy *rt_proxy_start(int target_port)
{
    rt_proxy *p = calloc(1, sizeof *p);
    pthread_condattr_t ca;

    if (p == NULL)
        return NULL;
    p->target_port = target_port;
    p->wake[0] = p->wake[1] = -1;
    p->lfd = rt_listen_port(&p->port);
    if (p->lfd < 0 || pipe2(p->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        fprintf(stderr, "rltest: proxy setup: %s\n", strerror(errno));
        if (p->lfd >= 0)
            close(p->lfd);
        free(p);
        return NULL;
    }
    snprintf(p->url, sizeof p->url, "redis://127.0.0.1:%d", p->port);
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&p->thread, NULL, proxy_main, p) != 0) {
        fprintf(stderr, "rltest: proxy thread: %s\n", strerror(errno));
        close(p->lfd);
        close(p->wake[0]);
        close(p->wake[1]);
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
        free(p);
        return NULL;
    }
    return p;
}

void rt_proxy_stop(rt_proxy *p)
{
    size_t i;
    char b = 1;
    ssize_t ignored;

    if (p == NULL)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_mutex_unlock(&p->mu);
    ignored = write(p->wake[1], &b, 1);
    (void)ignored;
    pthread_join(p->thread, NULL);
    for (i = 0; i < p->n; i++)
        close_conn(&p->conns[i]);
    free(p->conns);
    free(p->drop_needle);
    free(p->mangle_needle);
    free(p->mangle_repl);
    free(p->hold_needle);
    close(p->lfd);
    close(p->wake[0]);
    close(p->wake[1]);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

int rt_proxy_port(const rt_proxy *p)
{
    return p->port;
}

const char *rt_proxy_url(const rt_proxy *p)
{
    return p->url;
}

void rt_proxy_drop_next_reply_matching(rt_proxy *p, const char *needle)
{
    char *copy = needle != NULL ? strdup(needle) : NULL;

    pthread_mutex_lock(&p->mu);
    free(p->drop_needle);
    p->drop_needle = copy;
    p->drop_armed = 1;
    pthread_mutex_unlock(&p->mu);
}

void rt_proxy_drop_next_reply(rt_proxy *p)
{
    rt_proxy_drop_next_reply_matching(p, NULL);
}

void rt_proxy_drop_cancel(rt_proxy *p)
{
    pthread_mutex_lock(&p->mu);
    p->drop_armed = 0;
    pthread_mutex_unlock(&p->mu);
}

void rt_proxy_mangle_next_reply_matching(rt_proxy *p, const char *needle,
                                         const char *replacement, size_t len)
{
    char *n = strdup(needle != NULL ? needle : "");
    char *r = malloc(len > 0 ? len : 1);

    if (n == NULL || r == NULL) {
        fprintf(stderr, "rltest: proxy mangle: out of memory\n");
        free(n);
        free(r);
        return;
    }
    if (len > 0)
        memcpy(r, replacement, len);
    pthread_mutex_lock(&p->mu);
    free(p->mangle_needle);
    free(p->mangle_repl);
    p->mangle_needle = n;
    p->mangle_repl = r;
    p->mangle_len = len;
    p->mangle_armed = 1;
    pthread_mutex_unlock(&p->mu);
}

long rt_proxy_mangled(rt_proxy *p)
{
    long n;
    pthread_mutex_lock(&p->mu);
    n = p->mangled;
    pthread_mutex_unlock(&p->mu);
    return n;
}

long rt_proxy_dropped(rt_proxy *p)
{
    long n;
    pthread_mutex_lock(&p->mu);
    n = p->dropped;
    pthread_mutex_unlock(&p->mu);
    return n;
}

int rt_proxy_stall(rt_proxy *p, int on)
{
    int rc;
    pthread_mutex_lock(&p->mu);
    p->stall = on ? 1 : 0;
    rc = sync_locked(p);
    pthread_mutex_unlock(&p->mu);
    return rc;
}

int rt_proxy_refuse(rt_proxy *p, int on)
{
    int rc;
    pthread_mutex_lock(&p->mu);
    p->refuse = on ? 1 : 0;
    rc = sync_locked(p);
    pthread_mutex_unlock(&p->mu);
    return rc;
}

int rt_proxy_cut_all(rt_proxy *p)
{
    int rc;
    pthread_mutex_lock(&p->mu);
    p->cut_req++;
    rc = sync_locked(p);
    if (rc == 0)
        rc = p->last_cut_closed;
    pthread_mutex_unlock(&p->mu);
    return rc;
}

int rt_proxy_connections(rt_proxy *p)
{
    int n;
    pthread_mutex_lock(&p->mu);
    n = p->nconns;
    pthread_mutex_unlock(&p->mu);
    return n;
}

long rt_proxy_accepted(rt_proxy *p)
{
    long n;
    pthread_mutex_lock(&p->mu);
    n = p->accepted;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void rt_proxy_hold_next_reply_matching(rt_proxy *p, const char *needle)
{
    char *n = strdup(needle != NULL ? needle : "");

    if (n == NULL) {
        fprintf(stderr, "rltest: proxy hold: out of memory\n");
        return;
    }
    pthread_mutex_lock(&p->mu);
    free(p->hold_needle);
    p->hold_needle = n;
    p->hold_armed = 1;
    pthread_mutex_unlock(&p->mu);
}

size_t rt_proxy_held(rt_proxy *p)
{
    size_t n;
    pthread_mutex_lock(&p->mu);
    n = p->held;
    pthread_mutex_unlock(&p->mu);
    return n;
}

int rt_proxy_unhold(rt_proxy *p)
{
    int rc;
    pthread_mutex_lock(&p->mu);
    p->hold_armed = 0;
    p->unhold_req = 1;
    rc = sync_locked(p);
    pthread_mutex_unlock(&p->mu);
    return rc;
}
