/*
 * The chip host's log ring (docs/isolation.md): the library in the child
 * records its native log (ptorun_log_next); after every op it served, the
 * child moves those records here, a ring in the arena the parent allocated and
 * named (CHIP_OP_DESCRIBE). The parent reads it without any call, so the last
 * lines are still there after the child died.
 *
 * Fixed-size slots; head (next slot written) and tail (next slot read) are
 * atomics. One writer at a time (the child's lanes push under its mutex), one
 * reader at a time (the parent reads under its own). A full ring drops its
 * oldest record (the writer advances tail) and counts it; the reader copies a
 * slot and keeps the copy only if its own advance of tail succeeds, so a slot
 * the writer reclaimed meanwhile is never taken half rewritten.
 */
#ifndef PTORUN_CHIP_LOG_RING_H
#define PTORUN_CHIP_LOG_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define CHIP_LOG_SLOTS 256u
#define CHIP_LOG_TEXT_BYTES 512u   /* with the NUL */
#define CHIP_LOG_RING_MAGIC 0x31474F4C50494843ull /* "CHIPLOG1" */

typedef struct ChipLogSlot {
    int32_t level;
    uint32_t reserved;
    char text[CHIP_LOG_TEXT_BYTES];
} ChipLogSlot;

typedef struct ChipLogRing {
    uint64_t magic;
    _Atomic uint64_t head;     /* records written ever */
    _Atomic uint64_t tail;     /* records read or dropped ever */
    _Atomic uint64_t dropped;  /* records dropped ever */
    ChipLogSlot slots[CHIP_LOG_SLOTS];
} ChipLogRing;

/* Parent: lays an empty ring out at mem (zeroed arena memory). */
void chip_log_ring_init(ChipLogRing *r);

/* Child: whether mem holds a ring the parent laid out. */
int chip_log_ring_valid(const ChipLogRing *r);

/* Child, one writer at a time: appends (level, text), dropping the oldest when full. */
void chip_log_ring_push(ChipLogRing *r, int32_t level, const char *text);

/* Parent, one reader at a time: records waiting, and a dropped notice pending
   (ring dropped more than *dropped_seen) counted as one. */
uint64_t chip_log_ring_pending(ChipLogRing *r, uint64_t dropped_seen);

/* Parent, one reader at a time: ptorun_log_next's semantics: the oldest
   record's text into buf (NUL-terminated, truncated to cap), its level
   returned; 0 when empty. A drop not reported yet comes first, as a
   PTO_LOG_WARN naming how many (*dropped_seen advances). */
int chip_log_ring_next(ChipLogRing *r, uint64_t *dropped_seen, char *buf, size_t cap);

#endif
