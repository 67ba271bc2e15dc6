#include "util/alloc_table.h"

#include <stdlib.h>
#include <string.h>

#include "ptorun/pto_runtime_c_api.h"

int alloc_table_init(AllocTable *t, size_t capacity)
{
    memset(t, 0, sizeof *t);
    t->capacity = capacity;
    return pthread_mutex_init(&t->lock, NULL) == 0 ? PTO_OK : PTO_ERR_FAILED;
}

void alloc_table_destroy(AllocTable *t)
{
    free(t->ranges);
    t->ranges = NULL;
    t->count = t->cap = 0;
    pthread_mutex_destroy(&t->lock);
}

/* Index of the last range with base <= addr, or -1. Caller holds the lock. */
static ptrdiff_t find_floor(const AllocTable *t, uintptr_t addr)
{
    ptrdiff_t lo = 0, hi = (ptrdiff_t)t->count - 1, found = -1;
    while (lo <= hi) {
        ptrdiff_t mid = lo + (hi - lo) / 2;
        if (t->ranges[mid].base <= addr) {
            found = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return found;
}

int alloc_table_reserve(AllocTable *t, size_t size)
{
    int rc = PTO_OK;
    pthread_mutex_lock(&t->lock);
    if (t->capacity != 0 && (size > t->capacity || t->committed > t->capacity - size))
        rc = PTO_ERR_OUT_OF_MEMORY;
    else
        t->committed += size;
    pthread_mutex_unlock(&t->lock);
    return rc;
}

void alloc_table_unreserve(AllocTable *t, size_t size)
{
    pthread_mutex_lock(&t->lock);
    t->committed -= size;
    pthread_mutex_unlock(&t->lock);
}

int alloc_table_insert(AllocTable *t, uintptr_t base, size_t size)
{
    pthread_mutex_lock(&t->lock);
    if (t->count == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        AllocRange *grown = realloc(t->ranges, cap * sizeof *grown);
        if (grown == NULL) {
            t->committed -= size;
            pthread_mutex_unlock(&t->lock);
            return PTO_ERR_OUT_OF_MEMORY;
        }
        t->ranges = grown;
        t->cap = cap;
    }
    size_t at = (size_t)(find_floor(t, base) + 1);
    memmove(&t->ranges[at + 1], &t->ranges[at], (t->count - at) * sizeof *t->ranges);
    t->ranges[at] = (AllocRange){ base, size };
    t->count++;
    pthread_mutex_unlock(&t->lock);
    return PTO_OK;
}

int alloc_table_remove(AllocTable *t, uintptr_t base, size_t *size)
{
    int rc = PTO_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&t->lock);
    ptrdiff_t i = find_floor(t, base);
    if (i >= 0 && t->ranges[i].base == base) {
        *size = t->ranges[i].size;
        t->committed -= t->ranges[i].size;
        memmove(&t->ranges[i], &t->ranges[i + 1], (t->count - (size_t)i - 1) * sizeof *t->ranges);
        t->count--;
        rc = PTO_OK;
    }
    pthread_mutex_unlock(&t->lock);
    return rc;
}

int alloc_table_contains(AllocTable *t, uintptr_t addr, size_t n)
{
    int inside = 0;
    pthread_mutex_lock(&t->lock);
    ptrdiff_t i = find_floor(t, addr);
    if (i >= 0) {
        const AllocRange *r = &t->ranges[i];
        size_t off = addr - r->base;
        inside = off <= r->size && n <= r->size - off;
    }
    pthread_mutex_unlock(&t->lock);
    return inside;
}

size_t alloc_table_committed(AllocTable *t)
{
    pthread_mutex_lock(&t->lock);
    size_t c = t->committed;
    pthread_mutex_unlock(&t->lock);
    return c;
}

size_t alloc_table_count(AllocTable *t)
{
    pthread_mutex_lock(&t->lock);
    size_t c = t->count;
    pthread_mutex_unlock(&t->lock);
    return c;
}

void alloc_table_drain(AllocTable *t, void (*release)(uintptr_t, size_t, void *), void *arg)
{
    pthread_mutex_lock(&t->lock);
    for (size_t i = 0; i < t->count; i++) {
        release(t->ranges[i].base, t->ranges[i].size, arg);
        t->committed -= t->ranges[i].size;
    }
    t->count = 0;
    pthread_mutex_unlock(&t->lock);
}
