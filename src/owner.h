/*
 * owner.c: the owner record and the connection name.
 */
#ifndef RL_OWNER_H
#define RL_OWNER_H

#include "common.h"
#include "conn.h"

#define RL__NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"
#define RL__CONN_HOST_MAX 64        /* host name bytes in a connection name */
#define RL__OWNER_TTL_MIN_MS 1000   /* the record lives 3 leases, at least this */
#define RL__OWNER_REFRESH_MS 100    /* the watchdog awaits a refresh at most this
                                     * (and a quarter of the renewal interval) */

/* Names for the identity just made (rl__identity_new): pid, started, the
 * connection name, the record's key; the record is due now. */
void rl__owner_identity(rl_client *c);
long rl__owner_ttl_ms(const rl_client *c);
/* Queue the record's HSET and PEXPIRE on conn (returns how many: 2), and
 * read those replies (RL_OK, RL_EREDIS refused (logged), RL_ECONN). */
int rl__owner_append(rl_client *c, rl__conn *conn);
int rl__owner_read(rl_client *c, rl__conn *conn, int n);
/* Write the record where it lives (Redlock: on every master), on pool
 * connections: at creation and after fork. Mutex NOT held. */
void rl__owner_write(rl_client *c);
/* Delete it: a shutdown, after its holds were released. Mutex NOT held. */
void rl__owner_erase(rl_client *c);
/* The watchdog's refresh: on its own connections, else the pool's without
 * waiting; replies awaited briefly. Mutex held; dropped during I/O. */
void rl__owner_refresh(rl_client *c);

#endif
