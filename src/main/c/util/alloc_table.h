/* Live device allocations of one memory space, with exact accounting and an
 * optional capacity. Answers "is [addr, addr+n) inside one live allocation?" so
 * frees and copies outside live allocations are refused instead of performed.
 * Used by the sim device and by the emulated driver. Thread-safe.
 *
 * The rule that makes the answer hold while the bytes move: a call that
 * touches memory holds a pin (alloc_table_pin, then alloc_table_unpin when
 * done); freeing (alloc_table_remove, alloc_table_drain) waits for the pins of
 * what it frees; a pin is refused once freeing began. So a caller that unmaps
 * or frees only after alloc_table_remove returned never pulls memory from
 * under a copy, and a copy that comes after the free began is refused like one
 * after the free. Pins are short (one copy); pinned code must not wait for
 * anything a freer may hold. */
#ifndef PTORUN_ALLOC_TABLE_H
#define PTORUN_ALLOC_TABLE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef struct AllocRange {
    uintptr_t base;
    size_t size;
    size_t pins; /* calls touching it now */
    int dying;   /* a remove or drain waits for its pins: no new pin */
} AllocRange;

typedef struct AllocTable {
    pthread_mutex_t lock;
    pthread_cond_t unpinned; /* the last pin of a dying range went */
    AllocRange *ranges;     /* sorted by base, non-overlapping */
    size_t count;
    size_t cap;
    size_t committed;       /* sum of live sizes */
    size_t capacity;        /* 0 = unlimited */
} AllocTable;

int alloc_table_init(AllocTable *t, size_t capacity);
void alloc_table_destroy(AllocTable *t);

/* Reserves `size` bytes of the capacity; PTO_ERR_OUT_OF_MEMORY when it would
 * exceed it. Call before allocating, then alloc_table_insert or
 * alloc_table_unreserve. */
int alloc_table_reserve(AllocTable *t, size_t size);
void alloc_table_unreserve(AllocTable *t, size_t size);

/* Records a reserved allocation; PTO_ERR_OUT_OF_MEMORY when the table cannot grow
 * (the reservation is then returned). */
int alloc_table_insert(AllocTable *t, uintptr_t base, size_t size);

/* Forgets the allocation starting exactly at `base` and returns its size through
 * *size; PTO_ERR_INVALID_ARGUMENT when no live allocation starts there (or its
 * removal already began). Refuses new pins on it at once, then waits until the
 * pins it has are gone: the memory may be released when this returns. */
int alloc_table_remove(AllocTable *t, uintptr_t base, size_t *size);

/* Non-zero when [addr, addr+n) lies inside one live allocation (n may be 0);
 * an allocation being removed is no longer live. */
int alloc_table_contains(AllocTable *t, uintptr_t addr, size_t n);

/* A held pin: the allocation starting at `base` in `table` stays until unpinned. */
typedef struct AllocPin {
    AllocTable *table;
    uintptr_t base;
} AllocPin;

/* Pins the live allocation holding [addr, addr+n) (n may be 0): PTO_OK, or
 * PTO_ERR_INVALID_ARGUMENT (nothing pinned, no message) when there is none or
 * its removal began. */
int alloc_table_pin(AllocTable *t, uintptr_t addr, size_t n, AllocPin *pin);
/* Gives a pin back; wakes the remover waiting for it. */
void alloc_table_unpin(const AllocPin *pin);

size_t alloc_table_committed(AllocTable *t);
size_t alloc_table_count(AllocTable *t);

/* Removes every allocation, calling release(base, size, arg) for each (table
 * lock held), after waiting for their pins like alloc_table_remove. For a
 * table nobody adds to any more (its device is closing). */
void alloc_table_drain(AllocTable *t, void (*release)(uintptr_t, size_t, void *), void *arg);

#endif
