/*
 * Certificates for TLS tests (rt_tls.h), made by the openssl command.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_tls.h"
#include "rt_util.h"

/* $1: the directory, $2: openssl. EC keys: quick to make. The expired
 * certificate needs `openssl ca` (x509 -req cannot date one in the past). */
static const char script[] =
    "set -e\n"
    "cd \"$1\"; o=$2\n"
    "key='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes'\n"
    "names='subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost'\n"
    "\"$o\" req -x509 $key -keyout ca.key -out ca.crt -days 3 -subj '/CN=rlock test CA'\n"
    "mk() {\n"
    "  \"$o\" req $key -keyout $1.key -out $1.csr -subj \"/CN=$2\"\n"
    "  printf '%s\\n' \"$3\" > $1.ext\n"
    "  \"$o\" x509 -req -in $1.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out $1.crt \\\n"
    "    -days 3 -extfile $1.ext\n"
    "}\n"
    "mk server localhost \"$names\"\n"
    "mk other other.example 'subjectAltName=DNS:other.example'\n"
    "mk client rlock-client 'extendedKeyUsage=clientAuth'\n"
    "\"$o\" req -x509 $key -keyout rogue.key -out rogue.crt -days 3 -subj /CN=localhost \\\n"
    "  -addext \"$names\"\n"
    "mkdir db; : > db/index.txt; echo 01 > db/serial\n"
    "printf '%s\\n' '[ca]' 'default_ca = c' '[c]' 'database = db/index.txt' \\\n"
    "  'serial = db/serial' 'new_certs_dir = db' 'certificate = ca.crt' \\\n"
    "  'private_key = ca.key' 'default_md = sha256' 'policy = p' 'copy_extensions = copy' \\\n"
    "  '[p]' 'commonName = supplied' > ca.cnf\n"
    "\"$o\" req $key -keyout expired.key -out expired.csr -subj /CN=localhost -addext \"$names\"\n"
    "\"$o\" ca -batch -config ca.cnf -startdate 20200101000000Z -enddate 20200102000000Z \\\n"
    "  -in expired.csr -out expired.crt\n";

static void path(char *out, const rt_tls *t, const char *file)
{
    snprintf(out, RT_TLS_PATH, "%s/%s", t->dir, file);
}

static int run_script(const rt_tls *t, const char *openssl)
{
    char log[RT_TLS_PATH], cmd[RT_TLS_PATH + 32];
    pid_t pid;
    int st;

    path(log, t, "openssl.log");
    if ((pid = fork()) < 0)
        return -1;
    if (pid == 0) {
        if (!freopen(log, "w", stdout) || !freopen(log, "a", stderr))
            _exit(127);
        execl("/bin/sh", "sh", "-c", script, "sh", t->dir, openssl, (char *)NULL);
        _exit(127);
    }
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "rt_tls: making the certificates failed; %s says:\n", log);
        snprintf(cmd, sizeof cmd, "cat '%s' >&2", log);
        if (system(cmd) != 0)
            fprintf(stderr, "(cannot show it)\n");
        return -1;
    }
    return 0;
}

rt_tls *rt_tls_make(void)
{
    const char *tmp = getenv("TMPDIR");
    char *openssl = rt_find_binary("RL_OPENSSL", "openssl");
    rt_tls *t = calloc(1, sizeof *t);

    if (!t || !openssl) {
        free(t);
        free(openssl);
        return NULL;
    }
    snprintf(t->dir, sizeof t->dir, "%s/rltls.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(t->dir)) {
        perror("rt_tls: mkdtemp");
        free(t);
        free(openssl);
        return NULL;
    }
    if (run_script(t, openssl) != 0) {
        free(openssl);
        rt_tls_free(t);
        return NULL;
    }
    free(openssl);
    path(t->ca, t, "ca.crt");
    path(t->server_crt, t, "server.crt");
    path(t->server_key, t, "server.key");
    path(t->expired_crt, t, "expired.crt");
    path(t->expired_key, t, "expired.key");
    path(t->other_crt, t, "other.crt");
    path(t->other_key, t, "other.key");
    path(t->rogue_crt, t, "rogue.crt");
    path(t->rogue_key, t, "rogue.key");
    path(t->client_crt, t, "client.crt");
    path(t->client_key, t, "client.key");
    return t;
}

void rt_tls_free(rt_tls *t)
{
    char cmd[300];

    if (!t)
        return;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->dir);
    if (strstr(t->dir, "/rltls.") && system(cmd) != 0)
        fprintf(stderr, "rt_tls: cannot remove %s\n", t->dir);
    free(t);
}

const char *rt_tls_server_args(const rt_tls *t, int tls_port, const char *crt, const char *key,
                               int auth_clients, char *buf, size_t cap)
{
    snprintf(buf, cap, "--tls-port %d --tls-cert-file %s --tls-key-file %s "
             "--tls-ca-cert-file %s --tls-auth-clients %s", tls_port,
             crt ? crt : t->server_crt, key ? key : t->server_key, t->ca,
             auth_clients ? "yes" : "no");
    return buf;
}
