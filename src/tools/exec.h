/*
 * rlock exec (exec.c): run a command while holding a lock.
 */
#ifndef RLOCK_TOOL_EXEC_H
#define RLOCK_TOOL_EXEC_H

#include "common.h"

int rt_cmd_exec(int argc, char **argv, rt_common *co);

#endif
