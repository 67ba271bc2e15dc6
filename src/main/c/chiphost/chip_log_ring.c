/* The chip host's log ring (chiphost/chip_log_ring.h). */
#include "chiphost/chip_log_ring.h"

#include <stdio.h>
#include <string.h>

#include "ptorun/pto_runtime_c_api.h"

void chip_log_ring_init(ChipLogRing *r)
{
    memset(r, 0, sizeof *r);
    r->magic = CHIP_LOG_RING_MAGIC;
}

int chip_log_ring_valid(const ChipLogRing *r)
{
    return r->magic == CHIP_LOG_RING_MAGIC;
}

void chip_log_ring_push(ChipLogRing *r, int32_t level, const char *text)
{
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    /* full: drop the oldest, unless the reader took it meanwhile (then there is room).
       acquire: the reader's copy of that slot is done before we rewrite it */
    while (head - tail >= CHIP_LOG_SLOTS) {
        if (atomic_compare_exchange_weak_explicit(&r->tail, &tail, tail + 1, memory_order_acq_rel,
                                                  memory_order_acquire)) {
            atomic_fetch_add(&r->dropped, 1);
            break;
        }
    }
    ChipLogSlot *s = &r->slots[head % CHIP_LOG_SLOTS];
    s->level = level;
    snprintf(s->text, sizeof s->text, "%s", text);
    atomic_store_explicit(&r->head, head + 1, memory_order_release); /* the slot, then its publication */
}

uint64_t chip_log_ring_pending(ChipLogRing *r, uint64_t dropped_seen)
{
    uint64_t head = atomic_load(&r->head), tail = atomic_load(&r->tail);
    return (head > tail ? head - tail : 0) + (atomic_load(&r->dropped) > dropped_seen);
}

int chip_log_ring_next(ChipLogRing *r, uint64_t *dropped_seen, char *buf, size_t cap)
{
    if (buf == NULL || cap == 0)
        return PTO_ERR_INVALID_ARGUMENT;
    uint64_t dropped = atomic_load(&r->dropped);
    if (dropped > *dropped_seen) {
        snprintf(buf, cap, "chip host log: %llu records dropped (the oldest first)",
                 (unsigned long long)(dropped - *dropped_seen));
        *dropped_seen = dropped;
        return PTO_LOG_WARN;
    }
    for (;;) {
        uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (atomic_load_explicit(&r->head, memory_order_acquire) == tail)
            return 0;
        const ChipLogSlot *s = &r->slots[tail % CHIP_LOG_SLOTS];
        char text[CHIP_LOG_TEXT_BYTES];
        int32_t level = s->level;
        memcpy(text, s->text, sizeof text);
        /* keep the copy only if the writer did not reclaim the slot meanwhile */
        if (atomic_compare_exchange_strong_explicit(&r->tail, &tail, tail + 1, memory_order_acq_rel,
                                                    memory_order_acquire)) {
            text[sizeof text - 1] = '\0';
            snprintf(buf, cap, "%s", text);
            /* the child wrote it: never let a level read as a failure code */
            return level >= PTO_LOG_ERROR && level <= PTO_LOG_TRACE ? level : PTO_LOG_TRACE;
        }
    }
}
