/* Live device allocations of one memory space, with exact accounting and an
 * optional capacity. Answers "is [addr, addr+n) inside one live allocation?" so
 * frees and copies outside live allocations are refused instead of performed.
 * Used by the sim device and by the emulated driver. Thread-safe. */
#ifndef PTORUN_ALLOC_TABLE_H
#define PTORUN_ALLOC_TABLE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef struct AllocRange {
    uintptr_t base;
    size_t size;
} AllocRange;

typedef struct AllocTable {
    pthread_mutex_t lock;
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
 * *size; PTO_ERR_INVALID_ARGUMENT when no live allocation starts there. */
int alloc_table_remove(AllocTable *t, uintptr_t base, size_t *size);

/* Non-zero when [addr, addr+n) lies inside one live allocation (n may be 0). */
int alloc_table_contains(AllocTable *t, uintptr_t addr, size_t n);

size_t alloc_table_committed(AllocTable *t);
size_t alloc_table_count(AllocTable *t);

/* Removes every allocation, calling release(base, size, arg) for each. */
void alloc_table_drain(AllocTable *t, void (*release)(uintptr_t, size_t, void *), void *arg);

#endif
