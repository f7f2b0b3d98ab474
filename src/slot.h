/*
 * slot.c (pure): Redis Cluster key slots.
 */
#ifndef RL_SLOT_H
#define RL_SLOT_H

#include "common.h"

#define RL__SLOTS 16384
uint16_t rl__crc16(const void *data, size_t len);      /* CRC16/XMODEM */
uint16_t rl__slot(const void *key, size_t len);        /* honours {hash tags} */

#endif
