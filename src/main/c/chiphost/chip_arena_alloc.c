/*
 * The chip arena's allocator (chiphost/chip_arena.h): first fit over an
 * address-ordered list of free ranges, coalesced on free, under one mutex.
 * Both lists (free ranges, blocks handed out) are sorted arrays in malloc'd
 * memory of the parent: the child, which maps the arena, cannot reach them.
 *
 * Zeroes: a block reads zero when handed out. A small one is memset then; a
 * large one (>= CHIP_ARENA_RETURN_BYTES) has its whole pages punched out of
 * the memfd (a punched page reads zero, and costs no memory until touched) and
 * only its partial edge pages memset. A large block freed has its whole pages
 * punched too: that memory goes back to the system at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chiphost/chip_arena.h"
#include "chiphost/chip_arena_book.h"
#include "ptorun/pto_runtime_c_api.h"
#include "util/last_error.h"

/* Sizes are rounded up to, and blocks aligned to at least, this: no sliver of
   a free range is ever too small to be worth a list entry. */
#define GRAIN 16u

typedef struct Span {
    size_t at;      /* offset from the arena's base */
    size_t bytes;
} Span;

struct ChipArenaBook {
    pthread_mutex_t lock;
    Span *free_spans;  /* address order, no two adjacent (coalesced) */
    size_t free_count, free_cap;
    Span *used;        /* address order */
    size_t used_count, used_cap;
};

static size_t page_bytes(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

int chip_arena_book_create(ChipArena *a)
{
    struct ChipArenaBook *b = calloc(1, sizeof *b);
    Span *f = malloc(sizeof *f);
    if (b == NULL || f == NULL) {
        free(b);
        free(f);
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "chip arena: no memory for its bookkeeping");
    }
    pthread_mutex_init(&b->lock, NULL);
    f[0] = (Span){ 0, a->bytes };
    b->free_spans = f;
    b->free_count = b->free_cap = 1;
    a->book = b;
    return PTO_OK;
}

void chip_arena_book_free(ChipArena *a)
{
    struct ChipArenaBook *b = a->book;
    if (b == NULL)
        return;
    pthread_mutex_destroy(&b->lock);
    free(b->free_spans);
    free(b->used);
    free(b);
    a->book = NULL;
}

/* The first index whose span starts at or after `at`. */
static size_t lower_bound(const Span *s, size_t n, size_t at)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s[mid].at < at)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int grow(Span **s, size_t *cap, size_t need)
{
    if (*cap >= need)
        return 1;
    size_t n = *cap * 2 > need ? *cap * 2 : need;
    Span *bigger = realloc(*s, n * sizeof **s);
    if (bigger == NULL)
        return 0;
    *s = bigger;
    *cap = n;
    return 1;
}

/* Punches the whole pages of [at, at + bytes) out of the memfd (they read zero
   afterwards, in both processes); memset where punching is not possible. With
   `edges`, the partial pages at both ends are zeroed too. */
static void punch(ChipArena *a, size_t at, size_t bytes, int edges)
{
    size_t page = page_bytes();
    size_t first = (at + page - 1) / page * page, last = (at + bytes) / page * page;
    if (last <= first) {
        if (edges)
            memset(a->base + at, 0, bytes);
        return;
    }
    if (fallocate(a->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)first, (off_t)(last - first)) != 0)
        memset(a->base + first, 0, last - first);
    if (edges) {
        memset(a->base + at, 0, first - at);
        memset(a->base + last, 0, at + bytes - last);
    }
}

/* Takes [at, at + bytes) out of free span i (it lies inside it): what remains
   before and after stays free. The caller made room for one more entry. */
static void carve(struct ChipArenaBook *b, size_t i, size_t at, size_t bytes)
{
    Span f = b->free_spans[i];
    Span lead = { f.at, at - f.at }, tail = { at + bytes, f.at + f.bytes - (at + bytes) };
    Span keep[2];
    size_t n = 0;
    if (lead.bytes > 0)
        keep[n++] = lead;
    if (tail.bytes > 0)
        keep[n++] = tail;
    memmove(&b->free_spans[i + n], &b->free_spans[i + 1], (b->free_count - i - 1) * sizeof(Span));
    memcpy(&b->free_spans[i], keep, n * sizeof(Span));
    b->free_count = b->free_count - 1 + n;
}

void *chip_arena_alloc(ChipArena *a, size_t bytes, size_t align)
{
    if (a == NULL || a->base == NULL || a->book == NULL || bytes == 0 || align == 0 || (align & (align - 1)) != 0 ||
        align > page_bytes()) {
        (void)pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip arena: no arena, or %zu bytes aligned to %zu", bytes, align);
        return NULL;
    }
    if (bytes > a->bytes) {
        (void)pto_fail(PTO_ERR_CAPACITY, "chip arena: %zu bytes do not fit an arena of %zu", bytes, a->bytes);
        return NULL;
    }
    size_t size = (bytes + GRAIN - 1) / GRAIN * GRAIN;
    if (align < GRAIN)
        align = GRAIN;
    struct ChipArenaBook *b = a->book;
    pthread_mutex_lock(&b->lock);
    /* room first: a free span may split in two, and the free list never needs
       more entries than blocks + 2 (so chip_arena_free never has to grow it) */
    if (!grow(&b->used, &b->used_cap, b->used_count + 1) ||
        !grow(&b->free_spans, &b->free_cap, b->used_count + 2)) {
        pthread_mutex_unlock(&b->lock);
        (void)pto_fail(PTO_ERR_OUT_OF_MEMORY, "chip arena: no memory for its bookkeeping");
        return NULL;
    }
    size_t at = 0, i;
    /* the base is page aligned, so an offset aligned to `align` is an address aligned to it */
    for (i = 0; i < b->free_count; i++) {
        Span f = b->free_spans[i];
        at = (f.at + align - 1) & ~(align - 1);
        if (at - f.at <= f.bytes && size <= f.bytes - (at - f.at))
            break;
    }
    if (i == b->free_count) {
        size_t largest = 0;
        for (size_t k = 0; k < b->free_count; k++)
            largest = b->free_spans[k].bytes > largest ? b->free_spans[k].bytes : largest;
        pthread_mutex_unlock(&b->lock);
        (void)pto_fail(PTO_ERR_CAPACITY,
                       "chip arena: %zu bytes aligned to %zu do not fit (the largest free range has %zu of %zu)",
                       bytes, align, largest, a->bytes);
        return NULL;
    }
    carve(b, i, at, size);
    size_t u = lower_bound(b->used, b->used_count, at);
    memmove(&b->used[u + 1], &b->used[u], (b->used_count - u) * sizeof(Span));
    b->used[u] = (Span){ at, size };
    b->used_count++;
    pthread_mutex_unlock(&b->lock);
    /* zeroed outside the lock: the block is ours alone now */
    if (size >= CHIP_ARENA_RETURN_BYTES)
        punch(a, at, size, 1);
    else
        memset(a->base + at, 0, size);
    return a->base + at;
}

void chip_arena_free(ChipArena *a, void *p)
{
    if (a == NULL || a->book == NULL || p == NULL || !chip_arena_holds(a, (uint64_t)(uintptr_t)p, 0))
        return;
    struct ChipArenaBook *b = a->book;
    size_t at = (size_t)((unsigned char *)p - a->base);
    pthread_mutex_lock(&b->lock);
    size_t u = lower_bound(b->used, b->used_count, at);
    if (u == b->used_count || b->used[u].at != at) {
        pthread_mutex_unlock(&b->lock);
        return; /* no block of ours */
    }
    Span s = b->used[u];
    memmove(&b->used[u], &b->used[u + 1], (b->used_count - u - 1) * sizeof(Span));
    b->used_count--;
    /* under the lock: once the range is free, another thread may take and write it */
    if (s.bytes >= CHIP_ARENA_RETURN_BYTES)
        punch(a, s.at, s.bytes, 0);
    size_t i = lower_bound(b->free_spans, b->free_count, s.at);
    int join_prev = i > 0 && b->free_spans[i - 1].at + b->free_spans[i - 1].bytes == s.at;
    int join_next = i < b->free_count && s.at + s.bytes == b->free_spans[i].at;
    if (join_prev && join_next) {
        b->free_spans[i - 1].bytes += s.bytes + b->free_spans[i].bytes;
        memmove(&b->free_spans[i], &b->free_spans[i + 1], (b->free_count - i - 1) * sizeof(Span));
        b->free_count--;
    } else if (join_prev) {
        b->free_spans[i - 1].bytes += s.bytes;
    } else if (join_next) {
        b->free_spans[i].at = s.at;
        b->free_spans[i].bytes += s.bytes;
    } else { /* room is there: free ranges never outnumber blocks + 2 (chip_arena_alloc) */
        memmove(&b->free_spans[i + 1], &b->free_spans[i], (b->free_count - i) * sizeof(Span));
        b->free_spans[i] = s;
        b->free_count++;
    }
    pthread_mutex_unlock(&b->lock);
}

size_t chip_arena_largest_free(ChipArena *a)
{
    if (a == NULL || a->book == NULL)
        return 0;
    size_t largest = 0;
    pthread_mutex_lock(&a->book->lock);
    for (size_t k = 0; k < a->book->free_count; k++)
        largest = a->book->free_spans[k].bytes > largest ? a->book->free_spans[k].bytes : largest;
    pthread_mutex_unlock(&a->book->lock);
    return largest;
}
