/*
 * url.c (pure): the URL of a deployment, parsed, and shown without its
 * credentials.
 */
#ifndef RL_URL_H
#define RL_URL_H

#include "common.h"

#define RL__SEEDS_MAX 16

/* One TCP endpoint: a host (brackets stripped) and a port. */
typedef struct rl__endpoint {
    char *host;
    int port;
} rl__endpoint;

/*
 * redis://[[user]:pass@]host[:port][,host[:port]...][/db]: several seed
 * nodes of one deployment (a Cluster's nodes), tried in order. host and port
 * are the first seed's (host aliases seeds[0].host).
 */
typedef struct rl__url {
    int is_unix;
    char *host;     /* TCP host, brackets stripped */
    int port;
    int nseeds;     /* TCP: host:port pairs given, 1..RL__SEEDS_MAX; unix: 0 */
    int redlock;    /* redlock://: the seeds are independent masters (Redlock) */
    int sentinel;   /* sentinel://: the seeds are sentinels, asked for `service` */
    int tls;        /* rediss://, redlocks://, sentinels://: every connection is TLS */
    char *service;  /* sentinel://: the name the sentinels know the primary by */
    rl__endpoint seeds[RL__SEEDS_MAX];
    char *path;     /* unix socket path */
    char *user;     /* NULL: none */
    char *pass;     /* NULL: none */
    int db;
} rl__url;

int rl__url_parse(rl__url *out, const char *url);
void rl__url_clear(rl__url *url);
/* The URL as it may be shown (a message, a log line), into buf: a URL that
 * parses keeps its scheme and what follows its last '@' (hosts, path,
 * database), its credentials shown as "***"; one that does not parse shows
 * "***" after its scheme when that is one rlock knows, else alone. No byte
 * of any userinfo, whatever the URL's shape, reaches buf. Leaves
 * rl_last_error() as it was. Returns buf. */
const char *rl__url_redact(const char *url, char *buf, size_t cap);

#endif
