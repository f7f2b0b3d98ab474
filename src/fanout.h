/*
 * fanout.c: one change sent to the Redlock nodes at once, and its votes.
 * Shared by fanout.c and redlock.c only.
 */
#ifndef RL_FANOUT_H
#define RL_FANOUT_H

#include "conn.h"
#include "resp.h"

#define RL__PLAIN (-1)          /* the "script" of a plain command (a query) */

/* How one node took part in a change. */
enum { V_SKIP, V_WAIT, V_OPEN, V_SENT, V_DONE, V_FAIL, V_LOST };

typedef struct vote {
    int state;              /* V_*: WAIT to be sent, OPEN its connection being
                             * made, SENT awaited, DONE: resp holds its answer */
    int64_t deadline;       /* V_SENT: read by then */
    int rc;                 /* V_FAIL: why */
    rl__opening *opening;   /* V_OPEN */
    rl__conn *conn;
    rl__resp resp;          /* V_DONE: the script's reply (ints only) */
    rl__fence lost;         /* V_LOST: the connection that carried it */
    int reloaded;           /* NOSCRIPT met and the scripts loaded again */
    int nargs;
    const char *args[6];
    size_t lens[6];
    char held[24], lease[24], since[24];
} vote;

/*
 * Send `script` with each node's args (v[i].args, state V_WAIT; V_SKIP
 * nodes are left out) to every node at once, after CLIENT KILL of kill[i]
 * where given, and read the replies as they come, each node by the
 * per-node timeout, and once `ok` votes decide, the rest for a short grace
 * only (ok NULL: every node is heard). A node without an idle connection
 * gets a new one, made while the others are sent to and read (a stopped node's handshake delays nobody),
 * and sent to as soon as it is made; one past the pool's limit is sent to
 * after the others' replies are read, on another thread's connection.
 * *sent_ms: when the first went out. Nodes not answered end V_LOST (sent)
 * or V_FAIL (not).
 */
void rl__fanout_run(rl_client *c, int script, long lease_ms, vote *v, rl__fence *const *kill,
                    int (*ok)(const vote *), int64_t *sent_ms);

#endif
