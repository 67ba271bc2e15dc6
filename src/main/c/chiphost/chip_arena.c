/*
 * The chip arena (chiphost/chip_arena.h): a memfd mapped at one address in
 * the parent and in its chip host (the allocator is chip_arena_alloc.c).
 */
#include "chiphost/chip_arena.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chiphost/chip_arena_book.h"
#include "chiphost/chip_memfd.h"
#include "ptorun/pto_runtime_c_api.h"
#include "util/last_error.h"
#include "util/spin_wait.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000 /* Linux >= 4.17; older C library headers lack it */
#endif

static size_t page_bytes(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

/* Where the parent puts its arena: a random GiB-aligned slot in [16 TiB, 80 TiB)
   of the x86-64 user space, far from where either process's loader, heap and mmap
   areas go (PIE executables and brk near 0x55..., libraries, stacks and anonymous
   maps near 0x7f...), so the child finds the range free almost always. Left out
   under a sanitizer, whose shadow memory owns fixed ranges there. */
#define ARENA_AREA_START 0x100000000000ull
#define ARENA_AREA_BYTES 0x400000000000ull
#define ARENA_SLOT_BYTES (1ull << 30)
#define ARENA_PLACE_TRIES 16

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ARENA_PLACED 0
#else
#define ARENA_PLACED (UINTPTR_MAX > 0xffffffffu)
#endif

/* Moves a fresh mapping of fd to a slot of the arena area; keeps it where it is
   when every slot tried is taken. Returns the mapping's address. */
static void *place_away(int fd, size_t bytes, void *where)
{
    if (!ARENA_PLACED)
        return where;
    uint64_t span = ((uint64_t)bytes + ARENA_SLOT_BYTES - 1) / ARENA_SLOT_BYTES * ARENA_SLOT_BYTES;
    if (span >= ARENA_AREA_BYTES)
        return where;
    uint64_t slots = (ARENA_AREA_BYTES - span) / ARENA_SLOT_BYTES + 1;
    uint64_t seed = (uint64_t)(uintptr_t)where ^ ((uint64_t)getpid() << 32) ^ (uint64_t)pto_monotonic_ns();
    for (int i = 0; i < ARENA_PLACE_TRIES; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull; /* an LCG step: spread, not secrecy */
        uint64_t base = ARENA_AREA_START + (seed >> 33) % slots * ARENA_SLOT_BYTES;
        void *at = mmap((void *)(uintptr_t)base, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE,
                        fd, 0);
        if (at == (void *)(uintptr_t)base) {
            munmap(where, bytes);
            return at;
        }
        if (at != MAP_FAILED)
            munmap(at, bytes); /* a kernel without NOREPLACE took it as a hint */
    }
    return where;
}

int chip_arena_create(size_t bytes, ChipArena *out)
{
    *out = (ChipArena){ .fd = -1 };
    size_t page = page_bytes();
    if (bytes == 0 || bytes > SIZE_MAX - page)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip arena: %zu bytes", bytes);
    bytes = (bytes + page - 1) / page * page;
    int fd;
    void *base;
    int rc = chip_memfd_map("chip arena", "ptorun-chip-arena", bytes, &fd, &base);
    if (rc != PTO_OK)
        return rc;
    base = place_away(fd, bytes, base);
    *out = (ChipArena){ .base = base, .bytes = bytes, .fd = fd };
    rc = chip_arena_book_create(out);
    if (rc != PTO_OK)
        chip_arena_close(out);
    return rc;
}

int chip_arena_attach(int fd, uint64_t base, size_t bytes, ChipArena *out)
{
    *out = (ChipArena){ .fd = -1 };
    uint64_t end = base + bytes;
    struct stat st;
    if (bytes == 0 || base == 0 || base % page_bytes() != 0 || end < base)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip arena: no arena at [0x%llx, 0x%llx)",
                        (unsigned long long)base, (unsigned long long)end);
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_size != bytes)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip arena: fd %d is no arena of %zu bytes", fd, bytes);
    /* NOREPLACE: a range taken here must fail, never be overwritten (MAP_FIXED would
       silently unmap whatever of ours sat there). A kernel before 4.17 ignores the
       flag and takes base as a hint: another address means the same failure. */
    void *at = mmap((void *)(uintptr_t)base, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
    if (at == MAP_FAILED && errno != EEXIST)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "chip arena: mapping [0x%llx, 0x%llx) failed: %s",
                        (unsigned long long)base, (unsigned long long)end, strerror(errno));
    if (at != (void *)(uintptr_t)base) {
        if (at != MAP_FAILED)
            munmap(at, bytes);
        return pto_fail(PTO_ERR_BUSY,
                        "chip arena: [0x%llx, 0x%llx) is taken in pid %d: the arena cannot sit there at the "
                        "parent's address",
                        (unsigned long long)base, (unsigned long long)end, (int)getpid());
    }
    *out = (ChipArena){ .base = at, .bytes = bytes, .fd = fd };
    return PTO_OK;
}

int chip_arena_holds(const ChipArena *a, uint64_t addr, size_t len)
{
    uint64_t base = (uint64_t)(uintptr_t)a->base;
    return a->base != NULL && addr >= base && addr - base <= a->bytes && len <= a->bytes - (addr - base);
}

void chip_arena_close(ChipArena *a)
{
    chip_arena_book_free(a);
    if (a->base != NULL)
        munmap(a->base, a->bytes);
    if (a->fd >= 0)
        close(a->fd);
    *a = (ChipArena){ .fd = -1 };
}
