/* Binary search over an array of structs sorted by one unsigned key: the task
 * graph (hbg), the device's tensor map and kernel table (trb) all keep sorted
 * arrays and ask "the first element at or after / after this key". */
#ifndef PTORUN_SORTED_SEARCH_H
#define PTORUN_SORTED_SEARCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The index of the first of `count` elements whose key is >= `at` (or > `at` when
 * `after` is non-zero); `count` when there is none. Elements are `stride` bytes
 * apart, each with a `key_size`-byte (4 or 8) unsigned key `key_offset` bytes in,
 * ascending. */
static inline uint32_t pto_sorted_first(const void *items, uint32_t count, size_t stride, size_t key_offset,
                                        size_t key_size, uint64_t at, int after)
{
    uint32_t a = 0, b = count;
    while (a < b) {
        uint32_t mid = a + (b - a) / 2;
        const unsigned char *p = (const unsigned char *)items + (size_t)mid * stride + key_offset;
        uint64_t key;
        if (key_size == sizeof(uint32_t)) {
            uint32_t k32;
            memcpy(&k32, p, sizeof k32);
            key = k32;
        } else {
            memcpy(&key, p, sizeof key);
        }
        if (key < at || (after && key == at))
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

/* pto_sorted_first over an array `arr` of `count` structs keyed by member `key`. */
#define PTO_SORTED_FIRST(arr, count, key, at, after)                                                  \
    pto_sorted_first((arr), (count), sizeof *(arr), offsetof(__typeof__(*(arr)), key),                \
                     sizeof((arr)->key), (at), (after))

#endif
