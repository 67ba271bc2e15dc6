/*
 * The chip arena (docs/isolation.md): one shared-memory segment a parent and
 * its chip host map at the SAME virtual address, so that what the parent
 * builds there for a run (its NativeRunContext, descriptors, arguments: memory
 * the caller owns) holds pointers valid in both processes as they are.
 *
 * The parent creates it (an anonymous memfd, close-on-exec: nothing of it has a
 * name in /dev/shm) and maps it where the kernel likes; the child attaches the
 * inherited fd at exactly that address with MAP_FIXED_NOREPLACE, and fails
 * (PTO_ERR_BUSY, naming the range) when anything of its own sits there. The
 * child attaches it before anything else of its own maps memory (chiphost_main.c).
 *
 * The parent hands out pieces (chip_arena_alloc, chip_arena_free: any
 * thread; chiphost/chip_arena_alloc.c): first fit over an address-ordered free
 * list, coalesced on free, under a mutex. Its bookkeeping is in the parent's
 * own memory (malloc), never in the arena: the child cannot corrupt it. What
 * it hands out reads zero. Functions returning int return PTO_OK or a
 * PTO_ERR_* code with a pto_fail message.
 */
#ifndef PTORUN_CHIP_ARENA_H
#define PTORUN_CHIP_ARENA_H

#include <stddef.h>
#include <stdint.h>

typedef struct ChipArena {
    unsigned char *base;      /* NULL when none */
    size_t bytes;             /* a whole number of pages */
    int fd;                   /* the memfd; -1 once closed */
    struct ChipArenaBook *book; /* parent: the allocator's bookkeeping (malloc'd); NULL in the child */
} ChipArena;

/* Parent: a fresh arena of `bytes` (rounded up to whole pages, > 0), zeroed.
 * PTO_ERR_INVALID_ARGUMENT (0 bytes), PTO_ERR_OUT_OF_MEMORY. */
int chip_arena_create(size_t bytes, ChipArena *out);

/* Child: maps the arena of an inherited fd at exactly `base` (the arena owns
 * the fd from now on, on success only). PTO_ERR_BUSY when the range
 * [base, base + bytes) is taken in this process; PTO_ERR_INVALID_ARGUMENT when
 * fd is no memfd of `bytes` bytes or base is not page aligned;
 * PTO_ERR_OUT_OF_MEMORY when the mapping fails otherwise. */
int chip_arena_attach(int fd, uint64_t base, size_t bytes, ChipArena *out);

/* Parent: `bytes` (> 0) of zeros aligned to `align` (a power of two, at most
 * a page) from the arena, or NULL (pto_fail: PTO_ERR_CAPACITY when no free
 * range fits, PTO_ERR_INVALID_ARGUMENT for a bad request, PTO_ERR_OUT_OF_MEMORY
 * for the bookkeeping). Any thread. */
void *chip_arena_alloc(ChipArena *a, size_t bytes, size_t align);

/* Parent: gives a block chip_arena_alloc returned back (NULL, and what is no
 * block of the arena, are ignored). A block of at least
 * CHIP_ARENA_RETURN_BYTES gives its whole pages back to the system. Any thread. */
void chip_arena_free(ChipArena *a, void *p);
#define CHIP_ARENA_RETURN_BYTES ((size_t)1 << 20)

/* Parent: the bytes of the largest free range (tests). */
size_t chip_arena_largest_free(ChipArena *a);

/* Whether [addr, addr + len) lies inside the arena (len 0: addr inside or at its end). */
int chip_arena_holds(const ChipArena *a, uint64_t addr, size_t len);

/* Unmaps, closes and frees the bookkeeping; tolerates a zeroed or closed arena. The parent closes
 * its arena only after stopping the child that uses it. */
void chip_arena_close(ChipArena *a);

#endif
