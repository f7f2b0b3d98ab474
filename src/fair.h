/*
 * fair.c: the fair lock's queue.
 */
#ifndef RL_FAIR_H
#define RL_FAIR_H

#include "common.h"
#include "holds.h"

#define RL__FAIR_PLACE_MS 2000  /* a waiter's place runs out unless renewed within this */
#define RL__FAIR_RENEW_MS 500   /* ...and a waiter renews it (asks again) this often */

/* Make the queue's keys and channel of a name opened as fair (idempotent):
 * 0, or -1 out of memory. Mutex held. */
int rl__fair_entry_init(rl__entry *e);
void rl__fair_entry_free(rl__entry *e);
/* The channel this process subscribes to for e's notices: a fair name's
 * channel of this process's own, the release channel otherwise. Mutex held. */
const char *rl__entry_sub_channel(const rl_client *c, rl__entry *e, size_t *len);
/* Turn the arguments of an acquire or release script call (args[0] the
 * key, then *nargs - 1 ARGV; room for four more) into the fair script's
 * when e is fair and the change is one the fair scripts make: the queue's
 * keys inserted; place_ms appended to a new acquisition, or `next` (when
 * not NULL) and its place to a release (formatted in placebuf, 24 bytes);
 * *script changed to match. Returns the number of keys: 3, or the caller's
 * nkeys when nothing changed. */
int rl__fair_args(const rl__entry *e, int nkeys, int *script, long long held, long place_ms,
                  const char *next, size_t next_len, char *placebuf, const char **args,
                  size_t *lens, int *nargs);

#endif
