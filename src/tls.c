/*
 * TLS links (tls.h): OpenSSL over rlock's own socket transport. A link's
 * BIO reads and writes the descriptor with recv()/send(), never waiting
 * (MSG_DONTWAIT), and no write raises SIGPIPE (MSG_NOSIGNAL); a blocking
 * call polls between OpenSSL's tries, each wait within the socket's
 * timeouts (SO_RCVTIMEO, SO_SNDTIMEO: hiredis's redisSetTimeout()).
 *
 * fork(): a child that uses OpenSSL hangs on any OpenSSL lock another
 * thread of the parent held at the fork (a handshake's random numbers,
 * its algorithm caches). So every OpenSSL call of the library runs inside
 * the gate, and fork.c's prepare handler closes the gate (after every
 * client mutex): fork() waits until no library thread is inside OpenSSL.
 * Nothing waits on the network inside the gate (a blocking read or write
 * polls outside it), and nothing inside takes a library lock.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "client.h"
#include "error.h"
#include "tls.h"
#include "util.h"

struct rl__tls_link {
    SSL *ssl;
    int fd;
    int cert_asked;     /* the server asked for the client's certificate */
    int got_data;       /* a read returned data */
    char who[RL__HOST_MAX + 32];    /* the server ("sentinel host:port"), for the words */
    char why[RL__HOST_MAX + 200];   /* the last failure, in words */
};

/* ---- the gate ----------------------------------------------------------- */

/* A count of the threads inside, under a mutex that the fork's prepare
 * handler keeps over the fork (as fork.c keeps the client mutexes): the
 * child unlocks it, a plain mutex, as the thread that locked it. */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;   /* none inside, or open again */
static int inside;      /* threads between enter() and leave() */
static int closing;     /* a fork waits for them: nobody enters meanwhile */

/* Never nested: a waiting fork would hold a second entry back. */
static void enter(void)
{
    pthread_mutex_lock(&gate_mu);
    while (closing)
        pthread_cond_wait(&gate_cv, &gate_mu);
    inside++;
    pthread_mutex_unlock(&gate_mu);
}

static void leave(void)
{
    pthread_mutex_lock(&gate_mu);
    if (--inside == 0 && closing)
        pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
}

void rl__tls_fork_prepare(void)
{
    pthread_mutex_lock(&gate_mu);
    closing = 1;
    while (inside > 0)
        pthread_cond_wait(&gate_cv, &gate_mu);
    /* gate_mu stays locked over the fork. */
}

void rl__tls_fork_parent(void)
{
    closing = 0;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
}

void rl__tls_fork_child(void)
{
    /* The one thread left: those the parent had inside or waiting are
     * not here. */
    inside = 0;
    closing = 0;
    rl__cond_init(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
}

/* ---- links by descriptor ----------------------------------------------- */

#define PAGE_BITS 12
#define PAGE_SIZE (1 << PAGE_BITS)
#define NPAGES 256          /* descriptors below 2^20 */

typedef _Atomic(rl__tls_link *) link_slot;

static _Atomic(link_slot *) pages[NPAGES];
static atomic_int any_link;   /* a link was ever made: plain processes skip the table */

static link_slot *slot_of(int fd, int make)
{
    link_slot *page, *fresh = NULL;

    if (fd < 0 || (fd >> PAGE_BITS) >= NPAGES)
        return NULL;
    page = atomic_load_explicit(&pages[fd >> PAGE_BITS], memory_order_acquire);
    if (!page && make) {
        if (!(fresh = calloc(PAGE_SIZE, sizeof *fresh)))
            return NULL;
        if (atomic_compare_exchange_strong(&pages[fd >> PAGE_BITS], &page, fresh))
            page = fresh;
        else
            free(fresh);    /* another thread's page is in place: page is it */
    }
    return page ? &page[fd & (PAGE_SIZE - 1)] : NULL;
}

/* fd's slot, when a link was ever made (else NULL, at the cost of one load). */
static link_slot *slot_if_any(int fd)
{
    return atomic_load_explicit(&any_link, memory_order_relaxed) ? slot_of(fd, 0) : NULL;
}

rl__tls_link *rl__tls_of(int fd)
{
    link_slot *s = slot_if_any(fd);

    return s ? atomic_load_explicit(s, memory_order_acquire) : NULL;
}

static void link_free_inside(rl__tls_link *l)
{
    if (!l)
        return;
    SSL_free(l->ssl);       /* and its BIO; SSL_free writes nothing */
    free(l);
}

static void link_free(rl__tls_link *l)
{
    if (!l)
        return;
    enter();
    link_free_inside(l);
    leave();
}

void rl__tls_drop(int fd)
{
    link_slot *s = slot_if_any(fd);

    if (s)
        link_free(atomic_exchange(s, NULL));
}

void rl__tls_forget(int fd)
{
    link_slot *s = slot_if_any(fd);

    if (s)
        atomic_store(s, NULL);
}

void rl__tls_close(int fd)
{
    rl__tls_forget(fd);
    close(fd);
}

static int link_put(rl__tls_link *l)
{
    link_slot *s;

    atomic_store(&any_link, 1);
    if (!(s = slot_of(l->fd, 1)))
        return rl__err(RL_ENOMEM, "TLS: no room for descriptor %d", l->fd);
    /* A link left by a fork child's parent on a reused descriptor is not ours to free. */
    (void)atomic_exchange(s, l);
    return RL_OK;
}

/* ---- the BIO ----------------------------------------------------------- */

static int bio_write(BIO *b, const char *buf, int n)
{
    rl__tls_link *l = BIO_get_data(b);
    ssize_t w;

    BIO_clear_retry_flags(b);
    do
        w = send(l->fd, buf, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (w < 0 && errno == EINTR);
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        BIO_set_retry_write(b);
    return (int)w;
}

static int bio_read(BIO *b, char *buf, int n)
{
    rl__tls_link *l = BIO_get_data(b);
    ssize_t r;

    BIO_clear_retry_flags(b);
    do
        r = recv(l->fd, buf, (size_t)n, MSG_DONTWAIT);
    while (r < 0 && errno == EINTR);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        BIO_set_retry_read(b);
    return (int)r;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b, (void)num, (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int bio_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

static BIO_METHOD *bio_method;
static pthread_once_t bio_once = PTHREAD_ONCE_INIT;

static void bio_method_make(void)
{
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "rlock socket");

    if (m && BIO_meth_set_write(m, bio_write) && BIO_meth_set_read(m, bio_read) &&
        BIO_meth_set_ctrl(m, bio_ctrl) && BIO_meth_set_create(m, bio_create))
        bio_method = m;
    else if (m)
        BIO_meth_free(m);
}

/* ---- the client's settings --------------------------------------------- */

/* Called by OpenSSL when the server asks for the client's certificate,
 * given or not: noted (TLS 1.3 says only later whether it took it). */
static int on_cert_request(SSL *ssl, void *arg)
{
    rl__tls_link *l = BIO_get_data(SSL_get_rbio(ssl));

    (void)arg;
    if (l)
        l->cert_asked = 1;
    return 1;
}

int rl__tls_on(const rl_client *c)
{
    return c->tls_ctx != NULL;
}

/* The first error OpenSSL queued, in words, into buf. */
static const char *ssl_words(char *buf, size_t cap)
{
    unsigned long e = ERR_peek_error();

    if (!e)
        snprintf(buf, cap, "%s", strerror(errno ? errno : EPROTO));
    else
        ERR_error_string_n(e, buf, cap);
    ERR_clear_error();
    return buf;
}

static int tls_option_error(SSL_CTX *ctx, const char *option, const char *path)
{
    char words[160];

    ssl_words(words, sizeof words);
    SSL_CTX_free(ctx);
    return rl__err(RL_EINVAL, "%s \"%s\" cannot be used: %s", option, path, words);
}

/* Whether path is a directory we may read: OpenSSL looks into one only
 * when a handshake needs it, and then a missing one reads as an unknown
 * CA. errno says why not. */
static int is_dir(const char *path)
{
    struct stat st;

    if (stat(path, &st) != 0 || access(path, R_OK | X_OK) != 0)
        return 0;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return 0;
    }
    return 1;
}

/* The first TLS option set in o, by name; NULL: none. */
static const char *tls_option_given(const rl_options *o)
{
    if (o->version < 5)
        return NULL;
    return o->tls_ca_file ? "tls_ca_file" : o->tls_ca_dir ? "tls_ca_dir"
         : o->tls_cert_file ? "tls_cert_file" : o->tls_key_file ? "tls_key_file"
         : o->tls_server_name ? "tls_server_name"
         : o->tls_insecure_skip_verify ? "tls_insecure_skip_verify" : NULL;
}

static int client_init_inside(rl_client *c, const rl_options *o)
{
    const char *given = tls_option_given(o);
    SSL_CTX *ctx;

    if (!c->url.tls)
        return given ? rl__err(RL_EINVAL, "%s given for a URL without TLS (rediss://, "
                               "redlocks:// or sentinels://)", given) : RL_OK;
    if (o->version >= 5 && (!o->tls_cert_file) != (!o->tls_key_file))
        return rl__err(RL_EINVAL, "tls_cert_file and tls_key_file go together");
    if (o->version >= 5 && o->tls_server_name &&
        (!o->tls_server_name[0] || strlen(o->tls_server_name) > 253))
        return rl__err(RL_EINVAL, "tls_server_name must be 1..253 bytes");
    pthread_once(&bio_once, bio_method_make);
    ERR_clear_error();
    if (!bio_method || !(ctx = SSL_CTX_new(TLS_client_method())))
        return rl__err(RL_ENOMEM, "TLS: cannot make an OpenSSL context");
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
    if (o->version >= 5 && (o->tls_ca_file || o->tls_ca_dir)) {
        if (o->tls_ca_dir && !is_dir(o->tls_ca_dir)) {
            SSL_CTX_free(ctx);
            return rl__err(RL_EINVAL, "tls_ca_dir \"%s\" cannot be used: %s", o->tls_ca_dir,
                           strerror(errno));
        }
        if (SSL_CTX_load_verify_locations(ctx, o->tls_ca_file, o->tls_ca_dir) != 1)
            return tls_option_error(ctx, o->tls_ca_file ? "tls_ca_file" : "tls_ca_dir",
                                    o->tls_ca_file ? o->tls_ca_file : o->tls_ca_dir);
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        return tls_option_error(ctx, "the system's trust store", "default");
    }
    if (o->version >= 5 && o->tls_cert_file) {
        if (SSL_CTX_use_certificate_chain_file(ctx, o->tls_cert_file) != 1)
            return tls_option_error(ctx, "tls_cert_file", o->tls_cert_file);
        if (SSL_CTX_use_PrivateKey_file(ctx, o->tls_key_file, SSL_FILETYPE_PEM) != 1)
            return tls_option_error(ctx, "tls_key_file", o->tls_key_file);
        if (SSL_CTX_check_private_key(ctx) != 1)
            return tls_option_error(ctx, "tls_key_file (does not match tls_cert_file)",
                                    o->tls_key_file);
    }
    SSL_CTX_set_cert_cb(ctx, on_cert_request, NULL);
    c->tls_insecure = o->version >= 5 && o->tls_insecure_skip_verify;
    SSL_CTX_set_verify(ctx, c->tls_insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
    if (o->version >= 5 && o->tls_server_name && !(c->tls_name = strdup(o->tls_server_name))) {
        SSL_CTX_free(ctx);
        return rl__err(RL_ENOMEM, "out of memory");
    }
    c->tls_ctx = ctx;
    return RL_OK;
}

int rl__tls_client_init(rl_client *c, const rl_options *o)
{
    int rc;

    enter();
    rc = client_init_inside(c, o);
    leave();
    return rc;
}

void rl__tls_client_free(rl_client *c)
{
    if (c->tls_ctx) {
        enter();
        SSL_CTX_free(c->tls_ctx);
        leave();
    }
    c->tls_ctx = NULL;
    free(c->tls_name);
    c->tls_name = NULL;
}

/* ---- handshakes -------------------------------------------------------- */

static int is_ip(const char *host)
{
    unsigned char a[16];

    return inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;
}

static int start_inside(rl_client *c, const char *name, rl__tls_link *l)
{
    BIO *bio;

    ERR_clear_error();
    if (!(l->ssl = SSL_new(c->tls_ctx)) || !(bio = BIO_new(bio_method)))
        return rl__err(RL_ENOMEM, "TLS: out of memory");
    BIO_set_data(bio, l);
    SSL_set_bio(l->ssl, bio, bio);
    if (!is_ip(name))
        SSL_set_tlsext_host_name(l->ssl, name);
    if (!c->tls_insecure) {
        int ok = is_ip(name) ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(l->ssl), name)
                             : SSL_set1_host(l->ssl, name);
        if (ok != 1)
            return rl__err(RL_EINVAL, "TLS: cannot check certificates against \"%s\"", name);
    }
    SSL_set_connect_state(l->ssl);
    return RL_OK;
}

int rl__tls_start(rl_client *c, const char *host, int fd, rl__tls_link **out)
{
    rl__tls_link *l;
    int rc;

    if (!(l = calloc(1, sizeof *l)))
        return rl__err(RL_ENOMEM, "out of memory");
    l->fd = fd;
    enter();
    if ((rc = start_inside(c, c->tls_name ? c->tls_name : host, l)) != RL_OK)
        link_free_inside(l);
    leave();
    if (rc == RL_OK)
        *out = l;
    return rc;
}

/* Why the handshake or a read failed, as a status and words in l->why. */
static int failure(rl__tls_link *l, int ret, const char *who)
{
    int e = SSL_get_error(l->ssl, ret), saved = errno;
    long v = SSL_get_verify_result(l->ssl);
    unsigned long q = ERR_peek_error();
    int reason = ERR_GET_REASON(q);
    char words[160];
    int rc = RL_ETLS;

    /* Not verifying (tls_insecure_skip_verify), OpenSSL still records why
     * the certificate would not pass: that is not why this failed. */
    if (v != X509_V_OK && SSL_get_verify_mode(l->ssl) != SSL_VERIFY_NONE &&
        !SSL_is_init_finished(l->ssl)) {
        const char *what;
        switch (v) {
        case X509_V_ERR_HOSTNAME_MISMATCH:
        case X509_V_ERR_IP_ADDRESS_MISMATCH:
            what = "its certificate does not name the host connected to (hostname mismatch; "
                   "tls_server_name sets the name to check)";
            break;
        case X509_V_ERR_CERT_HAS_EXPIRED:
            what = "its certificate has expired";
            break;
        case X509_V_ERR_CERT_NOT_YET_VALID:
            what = "its certificate is not valid yet";
            break;
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
        case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
        case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
            what = "its certificate is signed by an unknown CA (tls_ca_file or tls_ca_dir "
                   "names the CA to trust)";
            break;
        default:
            what = X509_verify_cert_error_string(v);
        }
        snprintf(l->why, sizeof l->why, "TLS with %s: %s", who, what);
    } else if (l->cert_asked && !l->got_data &&
               (!q || reason > SSL_AD_REASON_OFFSET || ERR_GET_LIB(q) == ERR_LIB_SYS ||
                reason == SSL_R_UNEXPECTED_EOF_WHILE_READING)) {
        /* It asked for the client's certificate, then alerted or dropped
         * the link before answering anything: TLS 1.3 refuses a
         * certificate after the client's side of the handshake, and its
         * alert may be lost to the reset the requests sent meanwhile
         * cause (for which OpenSSL 3.0 queues nothing, later releases the
         * system's error or an unexpected EOF). */
        snprintf(l->why, sizeof l->why, "TLS with %s: %s", who, SSL_get_certificate(l->ssl)
                 ? "the server refused the client certificate (tls_cert_file: not signed "
                   "by a CA it trusts, or expired?)"
                 : "the server requires a client certificate (tls_cert_file and tls_key_file)");
    } else if (q && (reason == SSL_R_WRONG_VERSION_NUMBER ||
                     reason == SSL_R_PACKET_LENGTH_TOO_LONG ||
                     reason == SSL_R_UNKNOWN_PROTOCOL)) {
        snprintf(l->why, sizeof l->why, "TLS with %s: the server does not speak TLS on this "
                 "port (a plain port? then redis://)", who);
    } else if (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN ||
               reason == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        rc = RL_ECONN;
        snprintf(l->why, sizeof l->why, "TLS with %s: %s", who,
                 saved && e == SSL_ERROR_SYSCALL && !q ? strerror(saved)
                 : "connection closed by the server");
    } else {
        snprintf(l->why, sizeof l->why, "TLS with %s: %s", who, ssl_words(words, sizeof words));
    }
    ERR_clear_error();
    return rc;
}

int rl__tls_step(rl__tls_link *l, const char *who, short *events)
{
    int ret, e, rc;

    if (!l->who[0])
        snprintf(l->who, sizeof l->who, "%s", who);
    enter();
    ERR_clear_error();
    errno = 0;
    ret = SSL_do_handshake(l->ssl);
    e = ret == 1 ? SSL_ERROR_NONE : SSL_get_error(l->ssl, ret);
    rc = e == SSL_ERROR_NONE || e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE
         ? RL_OK : failure(l, ret, who);
    leave();
    if (e == SSL_ERROR_NONE)
        return link_put(l);
    if (rc == RL_OK) {
        *events = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
        return 1;
    }
    return rl__err(rc, "%s", l->why);
}

/* Wait until fd is ready for events, within the socket's timeout for
 * them (none set: no limit). 1 ready, 0 timed out, -1 failed (errno). */
static int wait_for(int fd, short events)
{
    struct pollfd p = { fd, events, 0 };
    struct timeval tv = { 0, 0 };
    socklen_t len = sizeof tv;
    int64_t ms = -1, until = 0;
    int n;

    if (getsockopt(fd, SOL_SOCKET, events == POLLOUT ? SO_SNDTIMEO : SO_RCVTIMEO, &tv, &len) == 0 &&
        (tv.tv_sec > 0 || tv.tv_usec > 0)) {
        ms = (int64_t)tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000;
        until = rl__now_ms() + ms;
    }
    for (;;) {
        n = poll(&p, 1, ms < 0 ? -1 : (int)ms);
        if (n >= 0 || errno != EINTR)
            return n > 0 ? 1 : n;
        if (ms >= 0 && (ms = until - rl__now_ms()) < 0)
            ms = 0;
    }
}

void rl__tls_abort(rl__tls_link *l)
{
    link_free(l);
}

int rl__tls_connect(rl_client *c, const char *host, int fd, const char *who)
{
    rl__tls_link *l;
    short events;
    int rc, w = 1;

    if (!c->tls_ctx)
        return RL_OK;
    if ((rc = rl__tls_start(c, host, fd, &l)) != RL_OK)
        return rc;
    /* The socket's timeouts bound each wait. */
    while ((rc = rl__tls_step(l, who, &events)) == 1 && (w = wait_for(fd, events)) > 0)
        ;
    if (rc == 1 && w < 0)
        rc = rl__err(RL_ECONN, "TLS with %s: %s", who, strerror(errno));
    else if (rc == 1)
        rc = rl__err(RL_ECONN, "TLS with %s: no answer to the handshake in time (%s)", who,
                     RL__TLS_SILENT_WHY);
    if (rc != 0) {
        link_free(l);
        return rc;
    }
    return RL_OK;
}

/* ---- reading and writing ----------------------------------------------- */

static ssize_t io_result(rl__tls_link *l, int ret)
{
    int e = SSL_get_error(l->ssl, ret);
    /* Closed before any answer by a server that asked for the client's
     * certificate: failure() says why. */
    int cert_refusal = l->cert_asked && !l->got_data;

    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        errno = EAGAIN;
        return -1;
    }
    if (e == SSL_ERROR_ZERO_RETURN && !cert_refusal)
        return 0;
    if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && !cert_refusal) {
        ERR_clear_error();
        if (errno == 0)
            return 0;   /* EOF without close_notify: closed all the same */
        return -1;
    }
    (void)failure(l, ret, l->who);
    if (strstr(l->why, "connection closed"))
        return 0;
    errno = EPROTO;
    return -1;
}

/* One SSL_read or SSL_write, inside the gate; *events: what it waits for. */
static ssize_t io_once(rl__tls_link *l, void *buf, size_t n, int write, short *events)
{
    int ret, len = n > INT32_MAX ? INT32_MAX : (int)n, saved;
    ssize_t r;

    enter();
    ERR_clear_error();
    errno = 0;
    ret = write ? SSL_write(l->ssl, buf, len) : SSL_read(l->ssl, buf, len);
    RL__HOOK("tls.inside");
    if (ret > 0) {
        l->got_data |= !write;
        r = ret;
    } else {
        *events = SSL_want_write(l->ssl) ? POLLOUT : POLLIN;
        r = io_result(l, ret);
    }
    saved = errno;
    leave();
    errno = saved;
    return r;
}

/* A read or write that may wait polls outside the gate between tries. */
static ssize_t io(rl__tls_link *l, void *buf, size_t n, int write, int dontwait)
{
    short events = POLLIN;
    ssize_t r;
    int w;

    for (;;) {
        r = io_once(l, buf, n, write, &events);
        if (r >= 0 || errno != EAGAIN || dontwait)
            return r;
        if ((w = wait_for(l->fd, events)) <= 0) {
            if (w == 0)
                errno = EAGAIN;     /* as a socket's timeout says it */
            return -1;
        }
    }
}

ssize_t rl__io_recv(int fd, void *buf, size_t n, int dontwait)
{
    rl__tls_link *l = rl__tls_of(fd);

    if (!l)
        return recv(fd, buf, n, dontwait ? MSG_DONTWAIT : 0);
    return io(l, buf, n, 0, dontwait);
}

ssize_t rl__io_send(int fd, const void *buf, size_t n, int dontwait)
{
    rl__tls_link *l = rl__tls_of(fd);

    if (!l)
        return send(fd, buf, n, MSG_NOSIGNAL | (dontwait ? MSG_DONTWAIT : 0));
    if (n == 0)
        return 0;
    return io(l, (void *)buf, n, 1, dontwait);
}

int rl__io_readable_now(int fd)
{
    rl__tls_link *l = rl__tls_of(fd);
    char b;
    int ret;

    if (!l) {
        ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
        return n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
    }
    /* Reads the records waiting (a session ticket is taken in here),
     * keeps any data. */
    enter();
    ERR_clear_error();
    errno = 0;
    ret = SSL_peek(l->ssl, &b, 1);
    ret = ret > 0 || io_result(l, ret) >= 0 || errno != EAGAIN;
    leave();
    return ret;
}

const char *rl__tls_error(int fd)
{
    rl__tls_link *l = rl__tls_of(fd);

    return l && l->why[0] ? l->why : NULL;
}

const char *rl__io_strerror(int fd)
{
    const char *tls = errno == EPROTO ? rl__tls_error(fd) : NULL;

    return tls ? tls : strerror(errno);
}
