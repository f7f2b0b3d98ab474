/*
 * error.c: the failure detail behind rl_last_error(), and the log
 * callback.
 */
#ifndef RL_ERROR_H
#define RL_ERROR_H

#include "common.h"

/* Record the detail of a failure for rl_last_error() and return status. */
int rl__err(int status, const char *fmt, ...) RL__PRINTF(2, 3);
void rl__err_clear(void);
/* A call on a client that was shut down (or is being): RL_ECANCELED, with
 * a detail that says so. */
int rl__shut_down(void);
void rl__log(rl_client *c, int level, const char *fmt, ...) RL__PRINTF(3, 4);

#endif
