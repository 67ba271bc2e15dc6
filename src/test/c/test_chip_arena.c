/*
 * The chip arena and the chip host's library (docs/isolation.md): the parent
 * writes into its arena and the real ptorun-chiphost (PTO_CHIPHOST_EXE) reads
 * the same bytes at the same address, and the other way round; addresses
 * outside the arena refused; an arena range taken in the child fails the start
 * naming it; LOAD of a variant library resolving the whole contract
 * (PTO_CONTRACT_HEADER's count), and of what is no library failing with
 * messages naming the path; nothing left behind (no fd, no /dev/shm entry).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chiphost/chip_arena.h"
#include "chiphost/chip_library.h"
#include "chiphost/chip_ops.h"
#include "chiphost/chip_process.h"
#include "ptest.h"
#include "test_util.h"
#include "ptorun/pto_runtime_c_api.h"
#include "util/last_error.h"

#ifndef PTO_CHIPHOST_EXE
#error "PTO_CHIPHOST_EXE: the path of ptorun-chiphost (src/test/c/Makefile sets it)"
#endif
#ifndef PTO_CONTRACT_HEADER
#error "PTO_CONTRACT_HEADER: the path of ptorun/pto_runtime_c_api.h (src/test/c/Makefile sets it)"
#endif

#define CALL_BOUND_MS 10000u
#define ARENA_BYTES (1u << 20)

/* The fds of process pid above stdio, as a bit set of 0..63 (-1 when unreadable). */
static long long fds_of(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    if (d == NULL)
        return -1;
    long long set = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] != '.' && fd > 2 && fd < 64)
            set |= 1ll << fd;
        else if (fd >= 64)
            set |= 1ll << 63;
    }
    closedir(d);
    return set;
}

static int peek(ChipProcess *p, const void *addr, uint32_t len, void *out, size_t *got)
{
    unsigned char req[CHIP_OP_PEEK_BYTES];
    uint64_t a = (uint64_t)(uintptr_t)addr;
    memcpy(req + CHIP_OP_ADDRESS_AT, &a, sizeof a);
    memcpy(req + CHIP_OP_PEEK_LENGTH_AT, &len, sizeof len);
    return chip_process_call(p, CHIP_OP_ARENA_PEEK, req, sizeof req, out, len, got, CALL_BOUND_MS);
}

static int poke(ChipProcess *p, const void *addr, const void *bytes, size_t len)
{
    unsigned char req[CHIP_CHANNEL_PAYLOAD_BYTES];
    uint64_t a = (uint64_t)(uintptr_t)addr;
    memcpy(req + CHIP_OP_ADDRESS_AT, &a, sizeof a);
    memcpy(req + CHIP_OP_POKE_DATA_AT, bytes, len);
    return chip_process_call(p, CHIP_OP_ARENA_POKE, req, CHIP_OP_POKE_DATA_AT + len, NULL, 0, NULL, CALL_BOUND_MS);
}

static int load(ChipProcess *p, const char *path, ChipLibraryInfo *info)
{
    size_t len = 0;
    int rc = chip_process_call(p, CHIP_OP_LOAD, path, strlen(path), info, sizeof *info, &len, CALL_BOUND_MS);
    return rc == PTO_OK && len != sizeof *info ? PTO_ERR_FAILED : rc;
}

static int start_with_arena(ChipArena *a, ChipProcess *p)
{
    ChipProcessConfig cfg = { .arena = a };
    return chip_process_start_with(PTO_CHIPHOST_EXE, &cfg, p);
}

/* The chip host's contract list (chiphost/chip_library.h), as one string of " name " entries. */
#define CONTRACT_NAME(name) " " #name " "
static const char CONTRACT_NAMES[] = CHIP_CONTRACT_FUNCTIONS(CONTRACT_NAME);

/* The PTO_EXPORT functions the contract header declares; *unlisted counts
   those missing from the chip host's list. */
static int header_exports(int *unlisted)
{
    FILE *f = fopen(PTO_CONTRACT_HEADER, "re");
    if (f == NULL)
        return -1;
    char line[1024];
    int n = 0;
    *unlisted = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        char *paren = strchr(line, '(');
        if (strncmp(line, "PTO_EXPORT ", 11) != 0 || paren == NULL)
            continue;
        n++;
        char *name = paren;
        while (name > line && (name[-1] == '_' || (name[-1] >= 'a' && name[-1] <= 'z') ||
                               (name[-1] >= '0' && name[-1] <= '9')))
            name--;
        char key[128];
        snprintf(key, sizeof key, " %.*s ", (int)(paren - name), name);
        if (strstr(CONTRACT_NAMES, key) == NULL) {
            fprintf(stderr, "%s is not in CHIP_CONTRACT_FUNCTIONS\n", key);
            ++*unlisted;
        }
    }
    fclose(f);
    return n;
}

static void lib_path(char *out, size_t cap, const char *env, const char *file)
{
    const char *dir = getenv(env);
    snprintf(out, cap, "%s/%s", dir ? dir : ".", file);
}

/* ---- the arena in one process --------------------------------------------------- */

TEST(chiphost_arena_alloc_first_fit_frees_and_coalesces)
{
    ChipArena a;
    REQUIRE(chip_arena_create(5000, &a) == PTO_OK);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    CHECK_EQ_INT(a.bytes, (5000 + page - 1) / page * page);
    CHECK_EQ_INT((uintptr_t)a.base % page, 0);
    unsigned char *x = chip_arena_alloc(&a, 3, 1);
    unsigned char *y = chip_arena_alloc(&a, 100, 64);
    CHECK(x == a.base);
    CHECK(y == a.base + 64);
    CHECK(chip_arena_alloc(&a, a.bytes, 8) == NULL);
    CHECK_EQ_INT(pto_last_error_code(), PTO_ERR_CAPACITY);
    CHECK(chip_arena_alloc(&a, 8, 3) == NULL);
    CHECK_EQ_INT(pto_last_error_code(), PTO_ERR_INVALID_ARGUMENT);
    unsigned char *z = chip_arena_alloc(&a, 20, 8); /* first fit: the gap between x and y */
    CHECK(z == a.base + 16);
    memset(z, 0xAB, 20);
    chip_arena_free(&a, z);
    unsigned char *again = chip_arena_alloc(&a, 20, 8); /* reused, and zeroed */
    CHECK(again == z);
    CHECK(again != NULL && again[0] == 0 && again[19] == 0);
    chip_arena_free(&a, again);
    chip_arena_free(&a, x);
    chip_arena_free(&a, x + 1); /* no block: ignored */
    chip_arena_free(&a, NULL);
    CHECK(chip_arena_largest_free(&a) < a.bytes);
    chip_arena_free(&a, y);
    CHECK_EQ_INT(chip_arena_largest_free(&a), a.bytes); /* coalesced whole */
    unsigned char *all = chip_arena_alloc(&a, a.bytes, page);
    CHECK(all == a.base);
    CHECK(chip_arena_alloc(&a, 1, 1) == NULL);
    chip_arena_free(&a, all);
    CHECK(chip_arena_holds(&a, (uintptr_t)a.base, a.bytes));
    CHECK(!chip_arena_holds(&a, (uintptr_t)a.base - 1, 1));
    CHECK(!chip_arena_holds(&a, (uintptr_t)a.base + a.bytes - 1, 2));
    CHECK_EQ_INT(chip_arena_create(0, &(ChipArena){ .fd = -1 }), PTO_ERR_INVALID_ARGUMENT);
    chip_arena_close(&a);
    chip_arena_close(&a); /* twice is harmless */
}

TEST(chiphost_arena_attach_refuses_a_taken_range)
{
    /* in the parent itself the arena's range is taken: by the arena */
    ChipArena a, b;
    REQUIRE(chip_arena_create(ARENA_BYTES, &a) == PTO_OK);
    int fd = dup(a.fd);
    REQUIRE(fd >= 0);
    char range[64];
    snprintf(range, sizeof range, "[0x%llx, 0x%llx)", (unsigned long long)(uintptr_t)a.base,
             (unsigned long long)(uintptr_t)(a.base + a.bytes));
    CHECK_EQ_INT(chip_arena_attach(fd, (uintptr_t)a.base, a.bytes, &b), PTO_ERR_BUSY);
    CHECK_CONTAINS(pto_last_error(), range);
    CHECK_CONTAINS(pto_last_error(), "is taken");
    CHECK_EQ_INT(chip_arena_attach(fd, (uintptr_t)a.base, a.bytes / 2, &b), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(chip_arena_attach(fd, (uintptr_t)a.base + 1, a.bytes, &b), PTO_ERR_INVALID_ARGUMENT);
    close(fd); /* a failed attach leaves the fd to its caller */
    chip_arena_close(&a);
}

TEST(chiphost_arena_sits_far_from_the_loaders_and_mmap_areas)
{
    /* two arenas: both in [16 TiB, 80 TiB) (chip_arena.c), whatever the kernel's own
       choice would have been; a sanitizer's shadow owns that area, so there the kernel
       places them */
    ChipArena a, b;
    REQUIRE(chip_arena_create(ARENA_BYTES, &a) == PTO_OK);
    REQUIRE(chip_arena_create(ARENA_BYTES, &b) == PTO_OK);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    for (int i = 0; i < 2; i++) {
        uint64_t base = (uint64_t)(uintptr_t)(i == 0 ? a.base : b.base);
        CHECK(base >= 0x100000000000ull && base < 0x500000000000ull);
        CHECK(base % (1ull << 30) == 0);
    }
#endif
    CHECK(a.base != b.base);
    chip_arena_close(&b);
    chip_arena_close(&a);
}

/* ---- the arena shared with the child ------------------------------------------- */

TEST(chiphost_arena_peek_reads_the_parents_bytes)
{
    ChipArena a;
    REQUIRE(chip_arena_create(ARENA_BYTES, &a) == PTO_OK);
    ChipProcess p;
    REQUIRE(start_with_arena(&a, &p) == PTO_OK);
    (void)chip_arena_alloc(&a, 24, 8); /* the pattern does not sit at the base */
    unsigned char *mine = chip_arena_alloc(&a, CHIP_CHANNEL_PAYLOAD_BYTES, 64);
    REQUIRE(mine != NULL);
    for (size_t i = 0; i < CHIP_CHANNEL_PAYLOAD_BYTES; i++)
        mine[i] = (unsigned char)(i * 131u + 17u);
    static unsigned char back[CHIP_CHANNEL_PAYLOAD_BYTES];
    size_t got = 0;
    CHECK_EQ_INT(peek(&p, mine, CHIP_CHANNEL_PAYLOAD_BYTES, back, &got), PTO_OK);
    CHECK_EQ_INT(got, CHIP_CHANNEL_PAYLOAD_BYTES);
    CHECK(memcmp(back, mine, CHIP_CHANNEL_PAYLOAD_BYTES) == 0);
    /* rewritten: the child sees the new bytes, at an unaligned address too */
    memcpy(mine + 3, "rewritten", 9);
    memset(back, 0, sizeof back);
    CHECK_EQ_INT(peek(&p, mine + 3, 9, back, &got), PTO_OK);
    CHECK_EQ_INT(got, 9);
    CHECK(memcmp(back, "rewritten", 9) == 0);
    /* the arena's last byte is in it */
    a.base[a.bytes - 1] = 0x5A;
    CHECK_EQ_INT(peek(&p, a.base + a.bytes - 1, 1, back, &got), PTO_OK);
    CHECK_EQ_INT(back[0], 0x5A);
    chip_process_stop(&p, CHIP_PROCESS_STOP_GRACE_MS);
    chip_arena_close(&a);
}

TEST(chiphost_arena_poke_lands_at_the_same_pointer)
{
    ChipArena a;
    REQUIRE(chip_arena_create(ARENA_BYTES, &a) == PTO_OK);
    ChipProcess p;
    REQUIRE(start_with_arena(&a, &p) == PTO_OK);
    uint64_t *words = chip_arena_alloc(&a, 64 * sizeof(uint64_t), 64);
    REQUIRE(words != NULL);
    uint64_t pattern[64];
    for (size_t i = 0; i < 64; i++)
        pattern[i] = i * 0x9E3779B97F4A7C15ull + 1;
    CHECK_EQ_INT(poke(&p, words, pattern, sizeof pattern), PTO_OK);
    CHECK(memcmp(words, pattern, sizeof pattern) == 0);
    /* a pointer the child writes is one the parent follows as it is */
    uint64_t *slot = chip_arena_alloc(&a, sizeof(uint64_t), 8);
    REQUIRE(slot != NULL);
    uint64_t target = (uint64_t)(uintptr_t)&words[5];
    CHECK_EQ_INT(poke(&p, slot, &target, sizeof target), PTO_OK);
    CHECK(*(uint64_t **)slot == &words[5] && **(uint64_t **)slot == pattern[5]);
    chip_process_stop(&p, CHIP_PROCESS_STOP_GRACE_MS);
    chip_arena_close(&a);
}

TEST(chiphost_arena_refuses_addresses_outside)
{
    ChipArena a;
    REQUIRE(chip_arena_create(ARENA_BYTES, &a) == PTO_OK);
    ChipProcess p;
    REQUIRE(start_with_arena(&a, &p) == PTO_OK);
    char arena_range[64];
    snprintf(arena_range, sizeof arena_range, "the arena [0x%llx, 0x%llx)", (unsigned long long)(uintptr_t)a.base,
             (unsigned long long)(uintptr_t)(a.base + a.bytes));
    unsigned char back[16];
    size_t got = 1;
    CHECK_EQ_INT(peek(&p, a.base - 1, 2, back, &got), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(pto_last_error(), "is outside");
    CHECK_CONTAINS(pto_last_error(), arena_range);
    CHECK_EQ_INT(got, 0);
    CHECK_EQ_INT(peek(&p, a.base + a.bytes - 4, 8, back, &got), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(pto_last_error(), arena_range);
    CHECK_EQ_INT(peek(&p, &got, sizeof got, back, &got), PTO_ERR_INVALID_ARGUMENT); /* our stack */
    CHECK_EQ_INT(poke(&p, a.base + a.bytes - 2, "abcd", 4), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(pto_last_error(), arena_range);
    CHECK_EQ_INT(poke(&p, (void *)(uintptr_t)UINT64_MAX, "ab", 2), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(a.base[a.bytes - 1], 0); /* nothing written */
    CHECK_EQ_INT(chip_process_call(&p, CHIP_OP_PING, NULL, 0, NULL, 0, NULL, CALL_BOUND_MS), PTO_OK);
    chip_process_stop(&p, CHIP_PROCESS_STOP_GRACE_MS);

    /* a child without an arena refuses every address */
    REQUIRE(chip_process_start(PTO_CHIPHOST_EXE, &p) == PTO_OK);
    CHECK_EQ_INT(peek(&p, a.base, 1, back, &got), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(pto_last_error(), "no arena");
    chip_process_stop(&p, CHIP_PROCESS_STOP_GRACE_MS);
    chip_arena_close(&a);
}

TEST(chiphost_arena_taken_in_the_child_fails_the_start)
{
    int fds = test_dir_entries("/proc/self/fd");
    ChipArena a;
    REQUIRE(chip_arena_create(ARENA_BYTES, &a) == PTO_OK);
    ChipProcessConfig cfg = { .arena = &a, .test_arena_taken = 1 };
    ChipProcess p;
    char range[64];
    snprintf(range, sizeof range, "[0x%llx, 0x%llx) is taken in pid ",
             (unsigned long long)(uintptr_t)a.base, (unsigned long long)(uintptr_t)(a.base + a.bytes));
    CHECK_EQ_INT(chip_process_start_with(PTO_CHIPHOST_EXE, &cfg, &p), PTO_ERR_BUSY);
    CHECK_CONTAINS(pto_last_error(), range);
    CHECK_EQ_INT(p.pid, 0); /* nothing left: the child killed and collected */
    CHECK(waitpid(-1, NULL, WNOHANG) <= 0);
    /* the same arena serves a child that could map it */
    REQUIRE(start_with_arena(&a, &p) == PTO_OK);
    chip_process_stop(&p, CHIP_PROCESS_STOP_GRACE_MS);
    chip_arena_close(&a);
    CHECK_EQ_INT(test_dir_entries("/proc/self/fd"), fds);
}

TEST(chiphost_arena_leaves_nothing_behind)
{
    int fds = test_dir_entries("/proc/self/fd");
    int shm = test_dir_entries("/dev/shm");
    ChipArena a;
    REQUIRE(chip_arena_create(ARENA_BYTES, &a) == PTO_OK);
    ChipProcess p;
    REQUIRE(start_with_arena(&a, &p) == PTO_OK);
    /* the child holds its channel at 3, its arena at 4, nothing else above stdio */
    CHECK_EQ_INT(fds_of(p.pid), (1ll << 3) | (1ll << 4));
    CHECK_EQ_INT(test_dir_entries("/dev/shm"), shm);
    chip_process_stop(&p, CHIP_PROCESS_STOP_GRACE_MS);
    chip_arena_close(&a);
    CHECK_EQ_INT(test_dir_entries("/proc/self/fd"), fds);
    CHECK_EQ_INT(test_dir_entries("/dev/shm"), shm);

    /* an arena at a low fd (3 or 4, the child's own numbers) still reaches the child whole */
    int low = fcntl(0, F_DUPFD, 0);
    REQUIRE(low >= 0);
    close(low);
    if (low >= 3 && low <= 4) {
        REQUIRE(chip_arena_create(ARENA_BYTES, &a) == PTO_OK);
        if (a.fd != low) { /* move it down to the free low number */
            int moved = dup3(a.fd, low, O_CLOEXEC);
            REQUIRE(moved == low);
            close(a.fd);
            a.fd = moved;
        }
        REQUIRE(start_with_arena(&a, &p) == PTO_OK);
        a.base[100] = 42;
        unsigned char back = 0;
        size_t got = 0;
        CHECK_EQ_INT(peek(&p, a.base + 100, 1, &back, &got), PTO_OK);
        CHECK_EQ_INT(back, 42);
        CHECK_EQ_INT(a.fd, low);
        chip_process_stop(&p, CHIP_PROCESS_STOP_GRACE_MS);
        chip_arena_close(&a);
        CHECK_EQ_INT(test_dir_entries("/proc/self/fd"), fds);
    }
}

/* ---- loading the library ------------------------------------------------------- */

TEST(chiphost_load_resolves_the_contract)
{
    char path[256];
    lib_path(path, sizeof path, "PTORUN_LIB_DIR", "libptorun_a2a3_sim_hbg.so");
    ChipProcess p;
    REQUIRE(chip_process_start(PTO_CHIPHOST_EXE, &p) == PTO_OK);
    ChipLibraryInfo info = { 0 };
    CHECK_EQ_INT(load(&p, path, &info), PTO_OK);
    CHECK_EQ_INT(info.abi_version, PTO_PIPELINE_CONTRACT_ABI_VERSION);
    int unlisted = -1;
    CHECK(header_exports(&unlisted) > 25);
    CHECK_EQ_INT(info.symbol_count, header_exports(&unlisted)); /* the child's list is the whole contract */
    CHECK_EQ_INT(unlisted, 0);
    CHECK_EQ_INT(CHIP_CONTRACT_COUNT, info.symbol_count);
    CHECK(strcmp(info.variant, "a2a3/sim/hbg") == 0);
    /* one library per child */
    CHECK_EQ_INT(load(&p, path, &info), PTO_ERR_WRONG_PHASE);
    CHECK_CONTAINS(pto_last_error(), "loaded already");
    CHECK_EQ_INT(chip_process_call(&p, CHIP_OP_PING, NULL, 0, NULL, 0, NULL, CALL_BOUND_MS), PTO_OK);
    chip_process_stop(&p, CHIP_PROCESS_STOP_GRACE_MS);
}

TEST(chiphost_load_failures_name_the_path)
{
    ChipProcess p;
    REQUIRE(chip_process_start(PTO_CHIPHOST_EXE, &p) == PTO_OK);
    ChipLibraryInfo info;
    CHECK_EQ_INT(load(&p, "/nonexistent/libptorun_nothing.so", &info), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(pto_last_error(), "/nonexistent/libptorun_nothing.so");
    CHECK_EQ_INT(load(&p, PTO_CONTRACT_HEADER, &info), PTO_ERR_INVALID_ARGUMENT); /* no ELF file */
    CHECK_CONTAINS(pto_last_error(), PTO_CONTRACT_HEADER);
    CHECK_CONTAINS(pto_last_error(), "cannot load");
    /* a real shared library that is no ptorun variant */
    char fixture[256];
    lib_path(fixture, sizeof fixture, "PTORUN_FIXTURE_DIR", "libptorun_fixture_kernels.so");
    CHECK_EQ_INT(load(&p, fixture, &info), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(pto_last_error(), fixture);
    CHECK_CONTAINS(pto_last_error(), "lacks ptorun_variant");
    CHECK_EQ_INT(chip_process_call(&p, CHIP_OP_LOAD, NULL, 0, NULL, 0, NULL, CALL_BOUND_MS),
                 PTO_ERR_INVALID_ARGUMENT);
    /* nothing stayed loaded: a real library still loads */
    char path[256];
    lib_path(path, sizeof path, "PTORUN_LIB_DIR", "libptorun_a2a3_sim_hbg.so");
    CHECK_EQ_INT(load(&p, path, &info), PTO_OK);
    chip_process_stop(&p, CHIP_PROCESS_STOP_GRACE_MS);
}

/* ---- the allocator under threads --------------------------------------------------- */

enum { RACE_THREADS = 4, RACE_ROUNDS = 3000, RACE_LIVE = 16 };

typedef struct RaceBlock {
    unsigned char *p;
    size_t bytes;
} RaceBlock;

typedef struct Race {
    ChipArena *arena;
    pthread_mutex_t lock; /* the live blocks of every thread, for the overlap check */
    RaceBlock live[RACE_THREADS * RACE_LIVE];
    int failures;         /* counted by the threads, checked by the test */
} Race;

typedef struct Racer {
    Race *race;
    int id;
} Racer;

static uint64_t race_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void race_fail(Race *r, const char *what, const void *p, size_t bytes)
{
    pthread_mutex_lock(&r->lock);
    if (r->failures++ < 5)
        fprintf(stderr, "arena race: %s (%p, %zu bytes)\n", what, p, bytes);
    pthread_mutex_unlock(&r->lock);
}

/* Registers a fresh block, or fails when it overlaps one still live. */
static void race_register(Race *r, int slot, unsigned char *p, size_t bytes)
{
    pthread_mutex_lock(&r->lock);
    int overlap = 0;
    for (int i = 0; i < RACE_THREADS * RACE_LIVE; i++) {
        RaceBlock *b = &r->live[i];
        if (b->p != NULL && p < b->p + b->bytes && b->p < p + bytes)
            overlap = 1;
    }
    r->live[slot] = (RaceBlock){ p, bytes };
    pthread_mutex_unlock(&r->lock);
    if (overlap)
        race_fail(r, "a block overlaps a live one", p, bytes);
}

static void *racer(void *arg)
{
    Racer *me = arg;
    Race *r = me->race;
    uint64_t seed = 0x9E3779B97F4A7C15ull * (uint64_t)(me->id + 1);
    RaceBlock mine[RACE_LIVE] = { { 0 } };
    unsigned char pattern = (unsigned char)(0x11 * (me->id + 1));
    for (int round = 0; round < RACE_ROUNDS; round++) {
        int k = (int)(race_next(&seed) % RACE_LIVE);
        RaceBlock *b = &mine[k];
        if (b->p != NULL) { /* our pattern is intact, then the block goes back */
            for (size_t i = 0; i < b->bytes; i++)
                if (b->p[i] != pattern) {
                    race_fail(r, "a block's pattern was overwritten", b->p, b->bytes);
                    break;
                }
            pthread_mutex_lock(&r->lock);
            r->live[me->id * RACE_LIVE + k] = (RaceBlock){ 0 };
            pthread_mutex_unlock(&r->lock);
            chip_arena_free(r->arena, b->p);
            *b = (RaceBlock){ 0 };
            continue;
        }
        uint64_t x = race_next(&seed);
        /* mostly small, some of them large enough to have their pages punched */
        size_t bytes = x % 16 == 0 ? CHIP_ARENA_RETURN_BYTES + (size_t)(x >> 8) % (1u << 20)
                                   : 1 + (size_t)(x >> 8) % 20000;
        size_t align = (size_t)1 << ((x >> 40) % 13);
        unsigned char *p = chip_arena_alloc(r->arena, bytes, align);
        if (p == NULL) {
            if (pto_last_error_code() != PTO_ERR_CAPACITY)
                race_fail(r, "alloc failed other than full", NULL, bytes);
            continue;
        }
        if ((uintptr_t)p % align != 0)
            race_fail(r, "a block is misaligned", p, bytes);
        for (size_t i = 0; i < bytes; i++)
            if (p[i] != 0) {
                race_fail(r, "a fresh block is not zero", p, bytes);
                break;
            }
        race_register(r, me->id * RACE_LIVE + k, p, bytes);
        memset(p, pattern, bytes);
        *b = (RaceBlock){ p, bytes };
    }
    for (int k = 0; k < RACE_LIVE; k++) {
        pthread_mutex_lock(&r->lock);
        r->live[me->id * RACE_LIVE + k] = (RaceBlock){ 0 };
        pthread_mutex_unlock(&r->lock);
        chip_arena_free(r->arena, mine[k].p);
    }
    return NULL;
}

TEST(chiphost_arena_alloc_and_free_race_from_threads)
{
    static Race r; /* static: the live table is large for a stack */
    ChipArena a;
    REQUIRE(chip_arena_create((size_t)24 << 20, &a) == PTO_OK);
    memset(&r, 0, sizeof r);
    r.arena = &a;
    pthread_mutex_init(&r.lock, NULL);
    pthread_t threads[RACE_THREADS];
    Racer racers[RACE_THREADS];
    for (int i = 0; i < RACE_THREADS; i++) {
        racers[i] = (Racer){ &r, i };
        REQUIRE(pthread_create(&threads[i], NULL, racer, &racers[i]) == 0);
    }
    for (int i = 0; i < RACE_THREADS; i++)
        pthread_join(threads[i], NULL);
    CHECK_EQ_INT(r.failures, 0);
    /* everything given back: the arena is one free range again, and reads zero where punched */
    CHECK_EQ_INT(chip_arena_largest_free(&a), a.bytes);
    unsigned char *all = chip_arena_alloc(&a, a.bytes, 4096);
    CHECK(all == a.base);
    int zero = 1;
    for (size_t i = 0; all != NULL && i < a.bytes; i += 4096)
        zero &= all[i] == 0;
    CHECK(zero);
    chip_arena_free(&a, all);
    pthread_mutex_destroy(&r.lock);
    chip_arena_close(&a);
}

/* ---- lanes --------------------------------------------------------------------------- */

typedef struct HungCall {
    ChipProcess *p;
    ChipChannel *lane;
    int rc;
    char message[256];
} HungCall;

static void *call_hang(void *arg)
{
    HungCall *h = arg;
    h->rc = chip_process_call_on(h->p, h->lane, CHIP_OP_HANG, NULL, 0, NULL, 0, NULL, 0);
    snprintf(h->message, sizeof h->message, "%s", pto_last_error());
    return NULL;
}

static int open_lane(ChipProcess *p, ChipArena *a, ChipChannel *lane)
{
    void *mem = chip_arena_alloc(a, chip_channel_bytes(), 64);
    if (mem == NULL || chip_channel_init_at(mem, chip_channel_bytes(), lane) != PTO_OK)
        return PTO_ERR_FAILED;
    uint64_t addr = (uint64_t)(uintptr_t)mem;
    return chip_process_call(p, CHIP_OP_OPEN_LANE, &addr, sizeof addr, NULL, 0, NULL, CALL_BOUND_MS);
}

TEST(chiphost_lanes_serve_beside_a_hung_one_and_exit_on_any)
{
    ChipArena a;
    REQUIRE(chip_arena_create(ARENA_BYTES, &a) == PTO_OK);
    ChipProcess p;
    REQUIRE(start_with_arena(&a, &p) == PTO_OK);
    /* refused: a block outside the arena, and arena memory holding no block */
    uint64_t outside = (uint64_t)(uintptr_t)&p;
    CHECK_EQ_INT(chip_process_call(&p, CHIP_OP_OPEN_LANE, &outside, 8, NULL, 0, NULL, CALL_BOUND_MS),
                 PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(pto_last_error(), "is outside the arena");
    void *blank = chip_arena_alloc(&a, chip_channel_bytes(), 64);
    uint64_t blank_at = (uint64_t)(uintptr_t)blank;
    CHECK_EQ_INT(chip_process_call(&p, CHIP_OP_OPEN_LANE, &blank_at, 8, NULL, 0, NULL, CALL_BOUND_MS),
                 PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(pto_last_error(), "holds no chip channel");
    CHECK_EQ_INT(chip_channel_init_at(blank, 8, &(ChipChannel){ 0 }), PTO_ERR_INVALID_ARGUMENT);

    ChipChannel lane1, lane2;
    REQUIRE(open_lane(&p, &a, &lane1) == PTO_OK);
    REQUIRE(open_lane(&p, &a, &lane2) == PTO_OK);
    CHECK_EQ_INT(lane1.fd, -1);
    HungCall h = { .p = &p, .lane = &lane1 };
    pthread_t thread;
    REQUIRE(pthread_create(&thread, NULL, call_hang, &h) == 0);
    CHECK_EQ_INT(chip_channel_await_taken(&lane1, CALL_BOUND_MS), PTO_OK); /* the child hangs in it */
    /* the other lanes serve meanwhile */
    uint64_t v = 42, back = 0;
    size_t len = 0;
    CHECK_EQ_INT(chip_process_call_on(&p, &lane2, CHIP_OP_PING, &v, sizeof v, &back, sizeof back, &len,
                                      CALL_BOUND_MS),
                 PTO_OK);
    CHECK(back == 42);
    CHECK_EQ_INT(chip_process_call(&p, CHIP_OP_PING, NULL, 0, NULL, 0, NULL, CALL_BOUND_MS), PTO_OK);
    /* EXIT on a lane ends the process: the hung call learns it */
    CHECK_EQ_INT(chip_process_call_on(&p, &lane2, CHIP_OP_EXIT, NULL, 0, NULL, 0, NULL, CALL_BOUND_MS), PTO_OK);
    pthread_join(thread, NULL);
    CHECK_EQ_INT(h.rc, PTO_ERR_CHIP_CRASHED);
    CHECK_CONTAINS(h.message, "exited with status 0");
    CHECK_EQ_INT(chip_process_kill(&p, SIGKILL), PTO_ERR_CHIP_CRASHED); /* never a collected pid */
    /* a lane at an address is not unmapped by its close: the arena still owns it */
    unsigned char *mem = (unsigned char *)lane1.ctl;
    chip_channel_close(&lane1);
    mem[0] ^= 1;
    chip_channel_close(&lane2);
    chip_process_stop(&p, CHIP_PROCESS_STOP_GRACE_MS);
    chip_arena_close(&a);
}
