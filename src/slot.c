/*
 * Redis Cluster's key slot: CRC16 (XMODEM: polynomial 0x1021, initial value
 * 0, no reflection, no final xor) of the key, modulo 16384. When the key
 * holds a '{' and, after it, a '}' with at least one byte between them,
 * only those bytes are hashed (the hash tag); an empty tag "{}" does not
 * count and the whole key is hashed.
 */
#include <string.h>

#include "slot.h"

static uint16_t crc16(const unsigned char *p, size_t len)
{
    uint16_t crc = 0;
    int bit;

    /* Bitwise, most significant bit first. Renewal groups ask for a slot
     * once per hold (cached in the entry), so the table would buy little. */
    while (len--) {
        crc ^= (uint16_t)(*p++ << 8);
        for (bit = 0; bit < 8; bit++)
            crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return crc;
}

uint16_t rl__crc16(const void *data, size_t len)
{
    return crc16(data, len);
}

uint16_t rl__slot(const void *key, size_t len)
{
    const unsigned char *k = key;
    const unsigned char *open = len ? memchr(k, '{', len) : NULL;

    if (open) {
        size_t rest = len - (size_t)(open - k) - 1;
        const unsigned char *close = rest ? memchr(open + 1, '}', rest) : NULL;
        if (close && close > open + 1)
            return crc16(open + 1, (size_t)(close - open - 1)) & (RL__SLOTS - 1);
    }
    return crc16(k, len) & (RL__SLOTS - 1);
}
