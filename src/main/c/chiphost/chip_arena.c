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

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000 /* Linux >= 4.17; older C library headers lack it */
#endif

static size_t page_bytes(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
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
