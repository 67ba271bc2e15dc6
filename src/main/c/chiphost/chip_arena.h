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
 * The parent hands out pieces with a bump allocator (chip_arena_alloc):
 * lock-free, any thread; nothing is ever given back before chip_arena_close.
 * Functions returning int return PTO_OK or a PTO_ERR_* code with a pto_fail
 * message.
 */
#ifndef PTORUN_CHIP_ARENA_H
#define PTORUN_CHIP_ARENA_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ChipArena {
    unsigned char *base;      /* NULL when none */
    size_t bytes;             /* a whole number of pages */
    int fd;                   /* the memfd; -1 once closed */
    _Atomic size_t used;      /* parent: the bump allocator's offset */
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

/* Parent: `bytes` (> 0) aligned to `align` (a power of two, at most a page)
 * from the arena, or NULL (pto_fail: PTO_ERR_CAPACITY when it is full,
 * PTO_ERR_INVALID_ARGUMENT for a bad request). Any thread. */
void *chip_arena_alloc(ChipArena *a, size_t bytes, size_t align);

/* Whether [addr, addr + len) lies inside the arena (len 0: addr inside or at its end). */
int chip_arena_holds(const ChipArena *a, uint64_t addr, size_t len);

/* Unmaps and closes; tolerates a zeroed or closed arena. The parent closes
 * its arena only after stopping the child that uses it. */
void chip_arena_close(ChipArena *a);

#endif
