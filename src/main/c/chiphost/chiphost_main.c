/*
 * ptorun-chiphost: the child process one chip runs in (docs/isolation.md).
 *
 *   ptorun-chiphost <channel fd> <parent pid> [<arena fd> <arena base> <arena bytes> [test-arena-taken]]
 *
 * Maps the parent's arena at the parent's address (chiphost/chip_arena.h)
 * before anything else, ties its life to the parent's, maps the chip channel
 * it inherited (chiphost/chip_channel.h) and serves the ops of
 * chiphost/chip_ops.h until CHIP_OP_EXIT. It never prints: a failure to start
 * is its exit status only (StartFailure), which the parent reports; an arena
 * it could not map is the answer to every request instead (with the message
 * naming the range), so the parent's start fails with it.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "chiphost/chip_arena.h"
#include "chiphost/chip_channel.h"
#include "chiphost/chip_contract_ops.h"
#include "chiphost/chip_contract_serve.h"
#include "chiphost/chip_library.h"
#include "chiphost/chip_ops.h"
#include "ptorun/pto_runtime_c_api.h"
#include "util/futex_word.h"
#include "util/last_error.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* Exit statuses of a child that could not start serving. */
enum StartFailure {
    START_USAGE = 64,       /* wrong arguments */
    START_LIFE_TIE = 65,    /* prctl(PR_SET_PDEATHSIG) failed */
    START_ORPHAN = 66,      /* the parent died before the tie held */
    START_NO_CHANNEL = 67   /* the fd holds no chip channel */
};

/* The child's state: its arena, or why it has none it was given. */
typedef struct Host {
    ChipArena arena;       /* base NULL: none */
    int32_t arena_error;   /* PTO_OK, or the failure every request answers */
    char arena_message[PTO_ERROR_MESSAGE_BYTES];
} Host;

static int parse_int(const char *s, long *out)
{
    char *end;
    errno = 0;
    *out = strtol(s, &end, 10);
    return errno == 0 && end != s && *end == '\0' && *out > 0 && *out <= INT_MAX;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    *out = v;
    return errno == 0 && end != s && *end == '\0' && v > 0 && s[0] != '-';
}

/* A failure's answer: its status, its message as payload (chip_ops.h). */
static int32_t answer_failure(int32_t status, const char *message, void *out, size_t *out_len)
{
    size_t n = strlen(message);
    n = n < CHIP_CHANNEL_PAYLOAD_BYTES ? n : CHIP_CHANNEL_PAYLOAD_BYTES;
    memcpy(out, message, n);
    *out_len = n;
    return status;
}

/* Whether [addr, addr + len) is in the arena; a pto_fail naming both ranges otherwise. */
static int in_arena(const Host *h, uint64_t addr, size_t len)
{
    if (chip_arena_holds(&h->arena, addr, len))
        return PTO_OK;
    if (h->arena.base == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip host: no arena (asked for %zu bytes at 0x%llx)", len,
                        (unsigned long long)addr);
    uint64_t base = (uint64_t)(uintptr_t)h->arena.base;
    return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip host: [0x%llx, +%zu) is outside the arena [0x%llx, 0x%llx)",
                    (unsigned long long)addr, len, (unsigned long long)base,
                    (unsigned long long)(base + h->arena.bytes));
}

/* CHIP_OP_ARENA_PEEK: the bytes at an arena address, read through this process's mapping. */
static int32_t peek(const Host *h, const unsigned char *in, size_t len, void *out, size_t *out_len)
{
    uint64_t addr;
    uint32_t n;
    if (len != CHIP_OP_PEEK_BYTES)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip host: PEEK takes %u bytes, got %zu", CHIP_OP_PEEK_BYTES, len);
    memcpy(&addr, in + CHIP_OP_ADDRESS_AT, sizeof addr);
    memcpy(&n, in + CHIP_OP_PEEK_LENGTH_AT, sizeof n);
    if (n > CHIP_CHANNEL_PAYLOAD_BYTES)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip host: PEEK of %u bytes (at most %u)", n,
                        CHIP_CHANNEL_PAYLOAD_BYTES);
    int rc = in_arena(h, addr, n);
    if (rc != PTO_OK)
        return rc;
    memcpy(out, (const void *)(uintptr_t)addr, n);
    *out_len = n;
    return PTO_OK;
}

/* CHIP_OP_ARENA_POKE: writes bytes at an arena address. */
static int32_t poke(const Host *h, const unsigned char *in, size_t len)
{
    uint64_t addr;
    if (len < CHIP_OP_POKE_DATA_AT)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip host: POKE takes an address and bytes, got %zu bytes", len);
    memcpy(&addr, in + CHIP_OP_ADDRESS_AT, sizeof addr);
    size_t n = len - CHIP_OP_POKE_DATA_AT;
    int rc = in_arena(h, addr, n);
    if (rc != PTO_OK)
        return rc;
    memcpy((void *)(uintptr_t)addr, in + CHIP_OP_POKE_DATA_AT, n);
    return PTO_OK;
}

static int32_t load(const void *in, size_t len, void *out, size_t *out_len)
{
    ChipLibraryInfo info;
    int rc = chip_library_load(in, len, &info);
    if (rc != PTO_OK)
        return rc;
    memcpy(out, &info, sizeof info);
    *out_len = sizeof info;
    return PTO_OK;
}

/* CHIP_OP_CRASH: dies of the signal asked for, without a core file (a crash on
   request is no bug to keep evidence of). Returns only when the signal did not
   kill (not a valid signal). */
static int32_t crash(const void *in, size_t len)
{
    int32_t sig = 0;
    if (len < sizeof sig)
        return PTO_ERR_INVALID_ARGUMENT;
    memcpy(&sig, in, sizeof sig);
    struct rlimit none = { 0, 0 };
    (void)setrlimit(RLIMIT_CORE, &none);
    sigset_t one;
    sigemptyset(&one);
    if (sigaddset(&one, sig) != 0)
        return PTO_ERR_INVALID_ARGUMENT;
    signal(sig, SIG_DFL);
    sigprocmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
    return PTO_ERR_INVALID_ARGUMENT;
}

/* CHIP_OP_HANG: parks forever on a word nobody wakes (no CPU burnt). */
static _Noreturn void hang(void)
{
    static uint32_t never;
    for (;;)
        pto_futex_wait(&never, 0);
}

static int32_t serve(void *arg, uint32_t op, const void *in, size_t in_len, void *out, size_t *out_len);

/* A lane (CHIP_OP_OPEN_LANE): a control block in the arena, served by a thread
   of its own with the same handler; it parks in FUTEX_WAIT while idle. */
typedef struct Lane {
    ChipChannel ch;
    Host *host;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int running;
} Lane;

static void *lane_main(void *arg)
{
    Lane *l = arg;
    ChipChannel ch = l->ch;
    Host *h = l->host;
    pthread_mutex_lock(&l->lock);
    l->running = 1; /* the opener waits for this, then frees l */
    pthread_cond_signal(&l->cond);
    pthread_mutex_unlock(&l->lock);
    while (chip_channel_serve_next(&ch, serve, h) != CHIP_OP_EXIT) {
    }
    exit(0); /* EXIT on any lane ends the chip host; its answer is published already */
}

static int32_t open_lane(Host *h, const void *in, size_t len)
{
    uint64_t addr;
    if (len != sizeof addr)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip host: OPEN_LANE takes 8 bytes, got %zu", len);
    memcpy(&addr, in, sizeof addr);
    int rc = in_arena(h, addr, chip_channel_bytes());
    Lane l = { .host = h };
    if (rc == PTO_OK)
        rc = chip_channel_attach_at((void *)(uintptr_t)addr, chip_channel_bytes(), &l.ch);
    if (rc != PTO_OK)
        return rc;
    pthread_mutex_init(&l.lock, NULL);
    pthread_cond_init(&l.cond, NULL);
    pthread_attr_t attr;
    pthread_t t;
    int err = pthread_attr_init(&attr);
    if (err == 0) {
        (void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        err = pthread_create(&t, &attr, lane_main, &l);
        pthread_attr_destroy(&attr);
    }
    if (err == 0) { /* answer once the thread runs: it copied what it needs of l */
        pthread_mutex_lock(&l.lock);
        while (!l.running)
            pthread_cond_wait(&l.cond, &l.lock);
        pthread_mutex_unlock(&l.lock);
    }
    pthread_cond_destroy(&l.cond);
    pthread_mutex_destroy(&l.lock);
    return err == 0 ? PTO_OK
                    : pto_fail(err == EAGAIN ? PTO_ERR_OUT_OF_MEMORY : PTO_ERR_FAILED,
                               "chip host: no thread for a lane: %s", strerror(err));
}

static int32_t dispatch(Host *h, uint32_t op, const void *in, size_t in_len, void *out, size_t *out_len)
{
    switch (op) {
    case CHIP_OP_PING:
        memcpy(out, in, in_len);
        *out_len = in_len;
        return PTO_OK;
    case CHIP_OP_CRASH:
        return crash(in, in_len);
    case CHIP_OP_HANG:
        hang();
    case CHIP_OP_EXIT:
        return PTO_OK;
    case CHIP_OP_ARENA_PEEK:
        return peek(h, in, in_len, out, out_len);
    case CHIP_OP_ARENA_POKE:
        return poke(h, in, in_len);
    case CHIP_OP_LOAD:
        return load(in, in_len, out, out_len);
    case CHIP_OP_OPEN_LANE:
        return open_lane(h, in, in_len);
    case CHIP_OP_DESCRIBE:
        return chip_contract_describe(&h->arena, in, in_len, out, out_len);
    default:
        if (op >= CHIP_OP_CONTRACT_BASE && op < CHIP_OP_CONTRACT_END)
            return chip_contract_serve(&h->arena, op, in, in_len, out, out_len);
        return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "chip host: no op %u", op);
    }
}

/* Every failure goes back with its message (chip_ops.h); a child without the
   arena it was given answers every request but EXIT with why. Lanes call it
   concurrently: it keeps no state of its own. */
/* Bumped (acq_rel) as an op starts and as it ends. The parent orders ops on
   different lanes (it sends the next after the answer to the last), but that
   order passes through the parent's process, which a thread sanitizer in this
   one cannot see; these RMWs state it here too (one uncontended atomic per op). */
static _Atomic uint64_t op_order;

static int32_t serve(void *arg, uint32_t op, const void *in, size_t in_len, void *out, size_t *out_len)
{
    Host *h = arg;
    atomic_fetch_add_explicit(&op_order, 1, memory_order_acq_rel);
    if (h->arena_error != PTO_OK && op != CHIP_OP_EXIT)
        return answer_failure(h->arena_error, h->arena_message, out, out_len);
    pto_clear_error();
    int32_t status = dispatch(h, op, in, in_len, out, out_len);
    chip_contract_drain_log(); /* before the answer: the parent sees what the op logged (EXIT too) */
    if (status != PTO_OK) {
        *out_len = 0;
        status = answer_failure(status, pto_last_error(), out, out_len);
    }
    atomic_fetch_add_explicit(&op_order, 1, memory_order_acq_rel);
    return status;
}

/* Maps the arena argv names, FIRST in main: anything this process maps later
   (malloc's arenas, the channel, the library LOAD brings with its own
   dependencies, thread stacks) may land anywhere the kernel likes, the
   parent's arena range included; mapped first, the arena only competes with
   what exec and the dynamic loader placed before main. A failure is kept for
   the answers (serve), not an exit: the parent gets the message. `taken`
   (tests): a page of our own sits at the base first, as a real clash would. */
static void attach_arena(Host *h, char **argv, int taken)
{
    long fd;
    uint64_t base, bytes;
    int rc;
    if (!parse_int(argv[0], &fd) || !parse_u64(argv[1], &base) || !parse_u64(argv[2], &bytes) || bytes > SIZE_MAX)
        rc = pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip host: bad arena arguments %s %s %s", argv[0], argv[1], argv[2]);
    else {
        if (taken)
            (void)mmap((void *)(uintptr_t)base, 1, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        rc = chip_arena_attach((int)fd, base, (size_t)bytes, &h->arena);
    }
    if (rc != PTO_OK) {
        h->arena_error = rc;
        memcpy(h->arena_message, pto_last_error(), sizeof h->arena_message);
    }
}

int main(int argc, char **argv)
{
    static Host host; /* static: no stack frame of main's is in its way, and it is zeroed */
    long fd, parent;
    int taken = argc == 7 && strcmp(argv[6], "test-arena-taken") == 0;
    if ((argc != 3 && argc != 6 && !taken) || !parse_int(argv[1], &fd) || !parse_int(argv[2], &parent))
        return START_USAGE;
    if (argc >= 6)
        attach_arena(&host, argv + 3, taken);
    /* die with the parent; then close the race of a parent that died before
       the tie was made (we were reparented already: getppid differs) */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        return START_LIFE_TIE;
    if (getppid() != (pid_t)parent)
        return START_ORPHAN;
    ChipChannel ch;
    if (chip_channel_attach((int)fd, &ch) != PTO_OK)
        return START_NO_CHANNEL;
    while (chip_channel_serve_next(&ch, serve, &host) != CHIP_OP_EXIT) {
    }
    /* nothing unmapped: lane threads may still park on their blocks in the arena; exit unmaps */
    return 0;
}
