/*
 * Fault injection and accounting of the emulated driver (pto_emudrv.h).
 *
 * Both live in one state page: a memfd (MFD_CLOEXEC) this driver instance
 * creates on first use, or the one its process inherited from the process that
 * started it (a chip host: PTORUN_EMUDRV_STATE_FD names the fd, set in the
 * child's environment only; docs/isolation.md, Emulated faults). Every driver
 * instance that maps the page shares one armed fault per kind and one set of
 * counters, so a fault armed in a JVM fires in its chip hosts, and its stats
 * count their devices. Every field is a lock-free C11 atomic: the page is
 * written by many processes at once, and a process killed at any point leaves
 * it consistent.
 *
 * The counters are kept per process: each process claims a slot of the page
 * (its pid as the owner) on first use and counts into it; stats sum the slots
 * whose owner still exists (kill(pid, 0)), so a chip host that was killed
 * drops out of the stats once it is collected, whatever it held. A slot of a
 * gone owner is taken over by the next process that needs one. Slot 0 is
 * everyone's (never dropped): a process that finds no free slot counts there.
 *
 * Each fault kind has its own one-shot countdown: -1 disarmed, else the calls
 * that could suffer it still to let pass; the call that finds it at zero moves
 * it to -1 (a compare-exchange, so exactly one call in all the processes wins)
 * and suffers the fault. The fast path (nothing armed) is one relaxed load.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emudrv/emudrv.h"
#include "ptorun/pto_export.h"

#define FAULT_KINDS (PTO_EMU_FAULT_PEER_LOST + 1)
#define STATE_MAGIC 0x3154535544554d45ull /* "EMUDUST1" little-endian: the emudrv's state page */
#define STATE_VERSION 1u
#define STATE_BYTES 16384u
#define STATE_SLOTS 128
#define SLOT_SHARED (-1) /* slot 0's owner: always counted */

_Static_assert(ATOMIC_LONG_LOCK_FREE == 2 && ATOMIC_LLONG_LOCK_FREE == 2,
               "the shared state page needs lock-free 64-bit atomics");

/* One process's counters. */
typedef struct EmuSlot {
    _Atomic int32_t owner; /* 0 free, a pid, or SLOT_SHARED (slot 0) */
    uint32_t reserved;
    EmuCounters counters;
} EmuSlot;

typedef struct EmuState {
    uint64_t magic;                        /* STATE_MAGIC once initialised */
    uint32_t version;                      /* STATE_VERSION */
    uint32_t bytes;                        /* sizeof(EmuState) */
    _Atomic int64_t countdown[FAULT_KINDS]; /* -1 disarmed, else calls to let pass first */
    EmuSlot slots[STATE_SLOTS];
} EmuState;

_Static_assert(sizeof(EmuState) <= STATE_BYTES, "the state fits its page");

/* The page in use (NULL until first use); its memfd (-1: the private fallback). */
static EmuState *_Atomic g_state;
static int g_state_fd = -1;
static EmuCounters *g_counters; /* this process's slot's */
static pthread_once_t g_state_once = PTHREAD_ONCE_INIT;
/* The private state, when no memfd could be had. */
static EmuState g_private;
/* Why an inherited page was refused ("" when none was, or it was taken already). */
static char g_warning[256];
static atomic_int g_warning_taken;

static void state_fill(EmuState *s)
{
    memset(s, 0, sizeof *s);
    for (int k = 0; k < FAULT_KINDS; k++)
        atomic_init(&s->countdown[k], -1);
    atomic_init(&s->slots[0].owner, SLOT_SHARED);
    s->version = STATE_VERSION;
    s->bytes = (uint32_t)sizeof(EmuState);
    s->magic = STATE_MAGIC;
}

/* The inherited page at fd, or NULL with the reason in g_warning. */
static EmuState *state_adopt(const char *text)
{
    char *end;
    errno = 0;
    long fd = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || fd < 0 || fd > INT_MAX) {
        snprintf(g_warning, sizeof g_warning, "%s=%s names no file descriptor", PTO_EMUDRV_STATE_FD_ENV, text);
        return NULL;
    }
    struct stat st;
    if (fstat((int)fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != (off_t)STATE_BYTES) {
        snprintf(g_warning, sizeof g_warning, "%s=%ld: fd %ld is no emulated driver state (%s)",
                 PTO_EMUDRV_STATE_FD_ENV, fd, fd, errno != 0 ? strerror(errno) : "wrong kind or size");
        return NULL;
    }
    void *m = mmap(NULL, STATE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
    if (m == MAP_FAILED) {
        snprintf(g_warning, sizeof g_warning, "%s=%ld: mmap failed: %s", PTO_EMUDRV_STATE_FD_ENV, fd,
                 strerror(errno));
        return NULL;
    }
    EmuState *s = m;
    uint64_t magic = s->magic;
    uint32_t version = s->version, bytes = s->bytes;
    if (magic != STATE_MAGIC || version != STATE_VERSION || bytes != sizeof(EmuState)) {
        munmap(m, STATE_BYTES);
        snprintf(g_warning, sizeof g_warning,
                 "%s=%ld: fd %ld holds no emulated driver state of this version (magic %llx, version %u)",
                 PTO_EMUDRV_STATE_FD_ENV, fd, fd, (unsigned long long)magic, version);
        return NULL;
    }
    (void)fcntl((int)fd, F_SETFD, FD_CLOEXEC); /* ours now: no further child inherits it by accident */
    g_state_fd = (int)fd;
    return s;
}

/* A fresh page of this process's own, or NULL (the private state is used then). */
static EmuState *state_create(void)
{
    int fd = memfd_create("ptorun-emudrv-state", MFD_CLOEXEC);
    if (fd < 0)
        return NULL;
    if (ftruncate(fd, STATE_BYTES) != 0) {
        close(fd);
        return NULL;
    }
    void *m = mmap(NULL, STATE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        close(fd);
        return NULL;
    }
    state_fill(m);
    g_state_fd = fd;
    return m;
}

/* Whether a slot's owner still counts: the shared slot, or a process that exists
   (a zombie too: it is counted until its parent collects it). */
static int owner_counts(int32_t owner)
{
    return owner == SLOT_SHARED || (owner > 0 && (kill((pid_t)owner, 0) == 0 || errno != ESRCH));
}

static void counters_zero(EmuCounters *c)
{
    _Atomic uint64_t *f[] = { &c->devices_open, &c->memory_committed, &c->allocations, &c->streams, &c->images,
                              &c->host_registrations, &c->threads, &c->comm_ranks, &c->comm_window_sets };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        atomic_store(f[i], 0);
}

/* This process's slot: a free one, else one whose owner is gone (zeroed), else the shared one. */
static EmuCounters *slot_claim(EmuState *s)
{
    int32_t me = (int32_t)getpid();
    for (int i = 1; i < STATE_SLOTS; i++) {
        int32_t free_owner = 0;
        if (atomic_compare_exchange_strong(&s->slots[i].owner, &free_owner, me))
            return &s->slots[i].counters;
    }
    for (int i = 1; i < STATE_SLOTS; i++) {
        int32_t owner = atomic_load(&s->slots[i].owner);
        if (!owner_counts(owner) && atomic_compare_exchange_strong(&s->slots[i].owner, &owner, me)) {
            counters_zero(&s->slots[i].counters);
            return &s->slots[i].counters;
        }
    }
    return &s->slots[0].counters;
}

static void state_init(void)
{
    const char *inherited = getenv(PTO_EMUDRV_STATE_FD_ENV);
    EmuState *s = inherited != NULL && inherited[0] != '\0' ? state_adopt(inherited) : NULL;
    if (s == NULL)
        s = state_create();
    if (s == NULL) {
        state_fill(&g_private);
        s = &g_private;
    }
    g_counters = slot_claim(s);
    atomic_store_explicit(&g_state, s, memory_order_release);
}

static EmuState *state(void)
{
    EmuState *s = atomic_load_explicit(&g_state, memory_order_acquire);
    if (s != NULL)
        return s;
    pthread_once(&g_state_once, state_init);
    return atomic_load_explicit(&g_state, memory_order_acquire);
}

EmuCounters *emu_counters(void)
{
    (void)state();
    return g_counters;
}

int emu_fault_hit(PtoEmuFault kind)
{
    _Atomic int64_t *c = &state()->countdown[kind];
    int64_t left = atomic_load_explicit(c, memory_order_relaxed);
    while (left >= 0) {
        if (atomic_compare_exchange_weak(c, &left, left == 0 ? -1 : left - 1))
            return left == 0;
    }
    return 0;
}

PTO_EXPORT int ptorun_emudrv_inject(int kind, int after_n_calls)
{
    if (kind < PTO_EMU_FAULT_NONE || kind > PTO_EMU_FAULT_PEER_LOST || after_n_calls < 0)
        return -1;
    EmuState *s = state();
    if (kind == PTO_EMU_FAULT_NONE) {
        for (int k = 0; k < FAULT_KINDS; k++)
            atomic_store(&s->countdown[k], -1);
    } else {
        atomic_store(&s->countdown[kind], (int64_t)after_n_calls);
    }
    return 0;
}

PTO_EXPORT void ptorun_emudrv_stats(PtoEmuStats *out)
{
    if (out == NULL)
        return;
    EmuState *s = state();
    *out = (PtoEmuStats){ 0 };
    for (int i = 0; i < STATE_SLOTS; i++) {
        int32_t owner = atomic_load(&s->slots[i].owner);
        if (owner == 0 || !owner_counts(owner))
            continue;
        EmuCounters *c = &s->slots[i].counters;
        out->devices_open += atomic_load(&c->devices_open);
        out->memory_committed += atomic_load(&c->memory_committed);
        out->allocations += atomic_load(&c->allocations);
        out->streams += atomic_load(&c->streams);
        out->images += atomic_load(&c->images);
        out->host_registrations += atomic_load(&c->host_registrations);
        out->threads += atomic_load(&c->threads);
        out->comm_ranks += atomic_load(&c->comm_ranks);
        out->comm_window_sets += atomic_load(&c->comm_window_sets);
    }
}

PTO_EXPORT int ptorun_emudrv_state_fd(void)
{
    (void)state();
    return g_state_fd;
}

PTO_EXPORT const char *ptorun_emudrv_state_warning(void)
{
    (void)state();
    if (g_warning[0] == '\0' || atomic_exchange(&g_warning_taken, 1) != 0)
        return NULL;
    return g_warning;
}
