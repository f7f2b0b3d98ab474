/*
 * rt_tls — certificates for TLS tests, made by the `openssl` command in a
 * fresh temporary directory: one CA, and certificates it signed for the
 * servers and a client, plus the bad ones each failure needs.
 *
 * Which binary: $RL_OPENSSL when set, else `openssl` on $PATH. When it
 * cannot be found or fails, rt_tls_make() prints why and returns NULL: the
 * test must then FAIL, never skip.
 */
#ifndef RT_TLS_H
#define RT_TLS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RT_TLS_PATH 320

/** Paths of the files made. Read them; do not write them. */
typedef struct rt_tls {
    char dir[256];
    char ca[RT_TLS_PATH];           /* the CA's certificate (PEM): trust this */
    char server_crt[RT_TLS_PATH];   /* names 127.0.0.1, ::1 and localhost */
    char server_key[RT_TLS_PATH];
    char expired_crt[RT_TLS_PATH];  /* the same names, expired in 2020 */
    char expired_key[RT_TLS_PATH];
    char other_crt[RT_TLS_PATH];    /* names only "other.example" (a hostname mismatch) */
    char other_key[RT_TLS_PATH];
    char rogue_crt[RT_TLS_PATH];    /* right names, self-signed (an unknown CA) */
    char rogue_key[RT_TLS_PATH];
    char client_crt[RT_TLS_PATH];   /* a client's, for mutual TLS */
    char client_key[RT_TLS_PATH];
} rt_tls;

/** Make the certificates (a few hundred ms). NULL: failed, said on stderr. */
rt_tls *rt_tls_make(void);

/** Remove the directory and free t. NULL: nothing. */
void rt_tls_free(rt_tls *t);

/**
 * redis-server arguments for TLS on tls_port beside its plain port (which
 * the tests' own hiredis connections keep using): the certificate
 * `crt`/`key` (NULL: server_crt/server_key), the CA for client
 * certificates, and --tls-auth-clients yes or no. Into buf; returns buf.
 */
const char *rt_tls_server_args(const rt_tls *t, int tls_port, const char *crt, const char *key,
                               int auth_clients, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
