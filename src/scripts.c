/*
 * The Lua scripts: the only code that changes a lock in Redis. Each runs
 * atomically; they are loaded once (SCRIPT LOAD) and called by EVALSHA.
 *
 * Each is a file of src/lua/, which opens with its contract (KEYS, ARGV,
 * reply, what it never does); src/lua/README.md gives the rules they all
 * keep and how a file becomes the text below. The build assembles them
 * into rl_scripts_lua.h (cmake/rlockLuaGen.cmake): one `<name>_src[]` per
 * src/lua/<name>.lua, its includes expanded, the text Redis receives.
 */
#include "rl_scripts_lua.h"
#include "scripts.h"

const char *const rl__script_src[RL__S_COUNT] = {
    [RL__S_ACQUIRE] = acquire_src,
    [RL__S_RELEASE] = release_src,
    [RL__S_RENEW] = renew_src,
    [RL__S_FORCE] = force_src,
    [RL__S_FAIR_ACQUIRE] = fair_acquire_src,
    [RL__S_FAIR_RELEASE] = fair_release_src,
    [RL__S_FAIR_LEAVE] = fair_leave_src,
    [RL__S_RW_ACQUIRE] = rw_acquire_src,
    [RL__S_RW_RELEASE] = rw_release_src,
    [RL__S_RW_RENEW] = rw_renew_src,
    [RL__S_SEM_ACQUIRE] = sem_acquire_src,
    [RL__S_SEM_RELEASE] = sem_release_src,
    [RL__S_SEM_RENEW] = sem_renew_src,
    [RL__S_SET_ACQUIRE] = set_acquire_src,
};
