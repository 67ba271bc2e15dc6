/* The content hash that dedups callable uploads and library loads: FNV-1a 64.
 * Not cryptographic; every user compares the bytes as well before it trusts a
 * match. */
#ifndef PTORUN_CONTENT_HASH_H
#define PTORUN_CONTENT_HASH_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a 64 over data[0..n). */
static inline uint64_t pto_fnv1a64(const void *data, size_t n)
{
    const uint8_t *p = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

#endif
