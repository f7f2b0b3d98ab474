/*
 * rlock version, in one place. CMake reads the three numbers below; the
 * shared library's SOVERSION is RL_VERSION_MAJOR.
 */
#ifndef RLOCK_VERSION_H
#define RLOCK_VERSION_H

#define RL_VERSION_MAJOR 0
#define RL_VERSION_MINOR 1
#define RL_VERSION_PATCH 0

#define RL_VERSION_STRING "0.1.0"

/* One comparable number: 0x00MMmmpp. */
#define RL_VERSION_HEX \
    ((RL_VERSION_MAJOR << 16) | (RL_VERSION_MINOR << 8) | RL_VERSION_PATCH)

#endif
