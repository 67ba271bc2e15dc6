#include "util/alloc_table.h"

#include <stdlib.h>
#include <string.h>

#include "ptorun/pto_runtime_c_api.h"

int alloc_table_init(AllocTable *t, size_t capacity)
{
    memset(t, 0, sizeof *t);
    t->capacity = capacity;
    if (pthread_mutex_init(&t->lock, NULL) != 0)
        goto fail_lock;
    if (pthread_cond_init(&t->unpinned, NULL) != 0)
        goto fail_cond;
    return PTO_OK;

fail_cond:
    pthread_mutex_destroy(&t->lock);
fail_lock:
    return PTO_ERR_FAILED;
}

void alloc_table_destroy(AllocTable *t)
{
    free(t->ranges);
    t->ranges = NULL;
    t->count = t->cap = 0;
    pthread_cond_destroy(&t->unpinned);
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

/* Index of the range starting exactly at base, or -1. Caller holds the lock. */
static ptrdiff_t find_exact(const AllocTable *t, uintptr_t base)
{
    ptrdiff_t i = find_floor(t, base);
    return i >= 0 && t->ranges[i].base == base ? i : -1;
}

/* Index of the live (not dying) range holding [addr, addr+n), or -1. Caller
 * holds the lock. */
static ptrdiff_t find_live(const AllocTable *t, uintptr_t addr, size_t n)
{
    ptrdiff_t i = find_floor(t, addr);
    if (i < 0)
        return -1;
    const AllocRange *r = &t->ranges[i];
    size_t off = addr - r->base;
    return !r->dying && off <= r->size && n <= r->size - off ? i : -1;
}

/* Non-zero while a dying range still has pins. Caller holds the lock. */
static int dying_pinned(const AllocTable *t)
{
    for (size_t i = 0; i < t->count; i++)
        if (t->ranges[i].dying && t->ranges[i].pins > 0)
            return 1;
    return 0;
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
    t->ranges[at] = (AllocRange){ .base = base, .size = size };
    t->count++;
    pthread_mutex_unlock(&t->lock);
    return PTO_OK;
}

int alloc_table_remove(AllocTable *t, uintptr_t base, size_t *size)
{
    pthread_mutex_lock(&t->lock);
    ptrdiff_t i = find_exact(t, base);
    if (i < 0 || t->ranges[i].dying) {
        pthread_mutex_unlock(&t->lock);
        return PTO_ERR_INVALID_ARGUMENT;
    }
    t->ranges[i].dying = 1;
    /* found again by base after each wait: inserts and removes shift indexes */
    while (i >= 0 && t->ranges[i].pins > 0) {
        pthread_cond_wait(&t->unpinned, &t->lock);
        i = find_exact(t, base);
    }
    if (i < 0) { /* a drain released it meanwhile: nothing left for the caller to free */
        pthread_mutex_unlock(&t->lock);
        return PTO_ERR_INVALID_ARGUMENT;
    }
    *size = t->ranges[i].size;
    t->committed -= t->ranges[i].size;
    memmove(&t->ranges[i], &t->ranges[i + 1], (t->count - (size_t)i - 1) * sizeof *t->ranges);
    t->count--;
    pthread_mutex_unlock(&t->lock);
    return PTO_OK;
}

int alloc_table_contains(AllocTable *t, uintptr_t addr, size_t n)
{
    pthread_mutex_lock(&t->lock);
    int inside = find_live(t, addr, n) >= 0;
    pthread_mutex_unlock(&t->lock);
    return inside;
}

int alloc_table_pin(AllocTable *t, uintptr_t addr, size_t n, AllocPin *pin)
{
    int rc = PTO_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&t->lock);
    ptrdiff_t i = find_live(t, addr, n);
    if (i >= 0) {
        t->ranges[i].pins++;
        *pin = (AllocPin){ t, t->ranges[i].base };
        rc = PTO_OK;
    }
    pthread_mutex_unlock(&t->lock);
    return rc;
}

void alloc_table_unpin(const AllocPin *pin)
{
    AllocTable *t = pin->table;
    pthread_mutex_lock(&t->lock);
    /* a pinned range stays in the table: removal waits for it */
    AllocRange *r = &t->ranges[find_exact(t, pin->base)];
    if (--r->pins == 0 && r->dying)
        pthread_cond_broadcast(&t->unpinned);
    pthread_mutex_unlock(&t->lock);
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
    for (size_t i = 0; i < t->count; i++)
        t->ranges[i].dying = 1;
    while (dying_pinned(t))
        pthread_cond_wait(&t->unpinned, &t->lock);
    for (size_t i = 0; i < t->count; i++) {
        release(t->ranges[i].base, t->ranges[i].size, arg);
        t->committed -= t->ranges[i].size;
    }
    t->count = 0;
    pthread_mutex_unlock(&t->lock);
}
