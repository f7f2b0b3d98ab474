/*
 * The referee: the one judge used by every fault scenario.
 *
 * A critical section, run by a thread that believes it holds the lock on
 * `name`, does four separate things on the thread's own connection to the
 * referee server (never an atomic increment, on purpose):
 *
 *     GET   rf:{name}:ctr            -> v
 *     (optional work)
 *     rl_interrupted()?              -> yes: stop here, write nothing
 *     SET   rf:{name}:ctr  v+1
 *     RPUSH rf:{name}:log  "<owner>:<v+1>"
 *
 * With mutual exclusion the log of a name is exactly 1, 2, 3, ... and the
 * counter equals its length. Two holders at once show up as a value logged
 * twice (both read the same v), as a value logged out of order (one read
 * after the other wrote), or as a counter that disagrees with the log. A
 * holder whose flag was raised never writes.
 */
#ifndef RL_REFEREE_H
#define RL_REFEREE_H

#include <hiredis/hiredis.h>

#define RF_WROTE    0   /* the section ran and wrote */
#define RF_FLAGGED  1   /* the holder's flag was up: nothing written */
#define RF_ERROR  (-1)  /* the referee server did not answer (printed) */

/*
 * One critical section on `name` for `owner` (any short text naming the
 * thread, e.g. "1234.2"). work_us: microseconds of "work" between the read
 * and the flag check (0: none), which widens the window in which a second
 * holder would collide.
 */
int rf_section(redisContext *ref, const char *name, const char *owner, long work_us);

/* The verdict on a set of names. */
typedef struct rf_result {
    long long sections;     /* log entries over all names */
    long long duplicates;   /* values logged more than once */
    long long disorder;     /* entries out of sequence (not previous + 1) */
    long long mismatches;   /* names whose counter differs from their log length */
    long long violations;   /* sum of the three */
} rf_result;

/* Judge the names (comma-separated list); 0, or -1 when the referee
 * server could not be read. */
int rf_judge(redisContext *ref, const char *names, rf_result *out);

/* Log entries on one name so far (LLEN), or -1. */
long long rf_count(redisContext *ref, const char *name);

#endif
