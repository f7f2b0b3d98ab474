/*
 * renew_calls.c: the calls of a renewal round on one server's connection:
 * its holds cut into script calls (up to RL__RENEW_BATCH pairs of one
 * family and, unless the server takes any mix, of one slot; Redlock's
 * placing pairs apart), queued, and their replies read into one flag per
 * hold, following ASK, splitting a chunk that straddles a migration, and
 * loading the scripts again after NOSCRIPT. The round itself (which holds,
 * which connection, when it is read, what a flag means for a hold) is
 * renew.c's.
 */
#ifndef RL_RENEW_CALLS_H
#define RL_RENEW_CALLS_H

#include "common.h"
#include "conn.h"
#include "holds.h"
#include "server.h"

typedef struct snap {
    rl__hold *h;
    rl__server *srv;        /* the server that arbitrates it this round */
    int place;              /* Redlock: place h where the name is free (the
                             * spread, rl__redlock_spread_wanted), at this
                             * count once sent (rl__redlock_spread_sent);
                             * 0: renew only */
} snap;

/* The holds of one server in a round: s[first, first + n). */
typedef struct group {
    rl__server *srv;
    rl__conn *conn;
    size_t first, n;
    int64_t sent;           /* when its first command went out */
    int rc;
    int noscript;           /* chunks answered NOSCRIPT */
    int split;              /* chunks to ask again one key per call ('S') */
    int read;               /* its replies were read (or it failed) */
    int pending;            /* no connection yet: the keeper opens one */
    int killed;             /* CLIENT KILL of `unfenced` queued ahead of its calls */
    rl__fence unfenced;     /* Redlock: its server's wd_unfenced when it was sent */
    int64_t deadline;       /* read by then at the latest */
} group;

/* qsort order of a round's snapshot: by server, then family, then placing
 * or not, then slot. */
int rl__renew_by_server_slot(const void *a, const void *b);
/* Queue the renewal calls of g's chunks whose flags read `which` ('?': not
 * asked yet; 'N': answered NOSCRIPT; 'S', 's': the same, one call per
 * hold). Returns the number of calls. */
size_t rl__renew_send_chunks(rl_client *c, group *g, const snap *s, const char *flags,
                             char which, const char **argv, size_t *lens);
/* Read the replies to what rl__renew_send_chunks(.., which) queued, into
 * flags: one '1', '0' or '2' per hold; chunks refused stay `which`, or 'N'
 * ('s' for one key) for NOSCRIPT, or 'S' when their keys straddle a slot
 * migration. */
void rl__renew_read_chunks(rl_client *c, group *g, const snap *s, char *flags, char which,
                           const char **argv, size_t *lens);
/* After a pass of g's calls answered NOSCRIPT: load the scripts and ask
 * those once more, flagged `again` ('N' or 's'). */
void rl__renew_reload_and_resend(rl_client *c, group *g, const snap *s, char *flags,
                                 char again, const char **argv, size_t *lens);

#endif
