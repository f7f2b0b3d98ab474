/*
 * rlock list, show and release (inspect.c): the locks of a prefix, one
 * lock's holders and waiters, and an operator's release.
 */
#ifndef RLOCK_TOOL_INSPECT_H
#define RLOCK_TOOL_INSPECT_H

#include "common.h"

int rt_cmd_list(int argc, char **argv, rt_common *co);
int rt_cmd_show(int argc, char **argv, rt_common *co);
int rt_cmd_release(int argc, char **argv, rt_common *co);

#endif
