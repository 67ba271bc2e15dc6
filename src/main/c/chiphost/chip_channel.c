/*
 * The chip channel (chiphost/chip_channel.h): the shared control block, its
 * seqlock-style frames and the waits of both sides.
 */
#include "chiphost/chip_channel.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chiphost/chip_memfd.h"
#include "ptorun/pto_runtime_c_api.h"
#include "util/futex_word.h"
#include "util/last_error.h"
#include "util/spin_wait.h"

#define CHIP_CHANNEL_MAGIC 0x314E484350494843ull /* "CHIPCHN1" */

/* The spins (docs/performance.md, P15): the two processes' threads outnumber the cores
   here. The child's lane thread yields the core between its spin's rounds from the start
   while it waits for the next request: the executors it wakes run on its cores. The
   parent spins as util/spin_wait.h does, but parks at once for a call that hands its
   work to another thread of the child (CHIP_CHANNEL_PARK). */
#define CHILD_YIELD_AFTER_NS 0u

/* One direction's frame. seq is 0 while the writer rewrites the rest. Every
   field is atomic (the payload in 8-byte words): a reader may copy a frame
   while the writer rewrites it, and the seqlock below discards that copy. */
#define FRAME_WORDS (CHIP_CHANNEL_PAYLOAD_BYTES / sizeof(uint64_t))
_Static_assert(CHIP_CHANNEL_PAYLOAD_BYTES % sizeof(uint64_t) == 0, "the payload is whole words");
typedef struct ChipFrame {
    _Atomic uint64_t seq;
    _Atomic uint32_t op;
    _Atomic int32_t status;
    _Atomic uint32_t len;
    uint32_t reserved;
    _Atomic uint64_t payload[FRAME_WORDS];
} ChipFrame;

/* A frame as copied out of (or into) the region. */
typedef struct FrameHead {
    uint32_t op;
    int32_t status;
    uint32_t len;
} FrameHead;

struct ChipControl {
    uint64_t magic;
    uint64_t bytes;                   /* the region's size, checked by the child */
    _Atomic uint32_t request_word;    /* bumped after every request: the child parks on it */
    _Atomic uint32_t response_word;   /* bumped after every response: the parent parks on it */
    _Atomic uint64_t taken;           /* the number of the request the child took last */
    _Atomic uint32_t taken_waiters;   /* chip_channel_await_taken callers: the child wakes them only then */
    _Atomic uint32_t request_waiters; /* the child is (about to be) parked on request_word */
    _Atomic uint32_t response_waiters; /* the parent is (about to be) parked on response_word */
    _Atomic uint32_t client_cpu;      /* 1 + the CPU the parent posted its last request from; 0: unknown */
    ChipFrame request;                /* the parent writes it */
    ChipFrame response;               /* the child writes it */
};

static size_t region_bytes(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (sizeof(ChipControl) + page - 1) / page * page;
}

static uint32_t *futex_of(_Atomic uint32_t *word)
{
    return (uint32_t *)word; /* same size and representation: the futex reads it as a plain word */
}

/* ---- frames ------------------------------------------------------------------ */

/* A seqlock without fences (Boehm, "Can seqlocks get along with programming
 * language memory models?"): the writer zeroes seq, stores every field with
 * release (so the zero is visible before any of them), then stores seq with
 * release; the reader loads seq with acquire, every field with acquire (so
 * the second seq load cannot move before them), then seq again, and keeps
 * the copy only if both loads saw the same non-zero number. */
static void frame_write(ChipFrame *f, uint64_t seq, const FrameHead *head, const unsigned char *data)
{
    atomic_store_explicit(&f->seq, 0, memory_order_relaxed);
    atomic_store_explicit(&f->op, head->op, memory_order_release);
    atomic_store_explicit(&f->status, head->status, memory_order_release);
    atomic_store_explicit(&f->len, head->len, memory_order_release);
    for (size_t i = 0, at = 0; at < head->len; i++, at += sizeof(uint64_t)) {
        uint64_t word = 0;
        size_t n = head->len - at < sizeof word ? head->len - at : sizeof word;
        memcpy(&word, data + at, n);
        atomic_store_explicit(&f->payload[i], word, memory_order_release);
    }
    atomic_store_explicit(&f->seq, seq, memory_order_release);
}

/* Bumps the direction's word, and wakes it only when someone counted itself as
 * parked there: most answers are caught by the peer's spin, and a FUTEX_WAKE is a
 * system call. Dekker with park(): the bump is ordered before the read of the
 * count, and a parker counts itself before it reads the word, so either the waker
 * sees the parker or the parker sees the bumped word (and the frame before it). */
static void frame_wake(_Atomic uint32_t *word, _Atomic uint32_t *waiters, _Atomic uint32_t *more_waiters)
{
    atomic_fetch_add(word, 1u);
    if (atomic_load(waiters) != 0 || (more_waiters != NULL && atomic_load(more_waiters) != 0))
        pto_futex_wake(futex_of(word));
}

/* When f holds a published number: copies its header to *head and its payload
 * to out (at most cap bytes) and returns that number; 0 while the frame is
 * being written or was rewritten during the copy. */
static uint64_t frame_read(ChipFrame *f, FrameHead *head, unsigned char *out, size_t cap)
{
    uint64_t seq = atomic_load_explicit(&f->seq, memory_order_acquire);
    if (seq == 0)
        return 0;
    head->op = atomic_load_explicit(&f->op, memory_order_acquire);
    head->status = atomic_load_explicit(&f->status, memory_order_acquire);
    head->len = atomic_load_explicit(&f->len, memory_order_acquire);
    size_t len = head->len < cap ? head->len : cap; /* a torn len is never trusted for the copy */
    if (len > CHIP_CHANNEL_PAYLOAD_BYTES)
        len = CHIP_CHANNEL_PAYLOAD_BYTES;
    for (size_t i = 0, at = 0; at < len; i++, at += sizeof(uint64_t)) {
        uint64_t word = atomic_load_explicit(&f->payload[i], memory_order_acquire);
        memcpy(out + at, &word, len - at < sizeof word ? len - at : sizeof word);
    }
    return atomic_load_explicit(&f->seq, memory_order_relaxed) == seq ? seq : 0;
}

/* ---- the region ------------------------------------------------------------------ */

int chip_channel_create(ChipChannel *out)
{
    *out = (ChipChannel){ .fd = -1 };
    size_t bytes = region_bytes();
    int fd;
    void *base;
    int rc = chip_memfd_map("chip channel", "ptorun-chip-channel", bytes, &fd, &base);
    if (rc != PTO_OK)
        return rc;
    ChipControl *c = base; /* a fresh memfd reads as zeros */
    c->magic = CHIP_CHANNEL_MAGIC;
    c->bytes = bytes;
    *out = (ChipChannel){ .ctl = c, .fd = fd };
    return PTO_OK;
}

int chip_channel_attach(int fd, ChipChannel *out)
{
    *out = (ChipChannel){ .fd = -1 };
    size_t bytes = region_bytes();
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size != bytes)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip channel: fd %d is not a channel of %zu bytes", fd, bytes);
    ChipControl *c = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (c == MAP_FAILED)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "chip channel: mapping fd %d: %s", fd, strerror(errno));
    if (c->magic != CHIP_CHANNEL_MAGIC || c->bytes != bytes) {
        munmap(c, bytes);
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip channel: fd %d holds no chip channel", fd);
    }
    *out = (ChipChannel){ .ctl = c, .fd = fd, .last_seq = atomic_load(&c->taken) };
    return PTO_OK;
}

size_t chip_channel_bytes(void)
{
    return sizeof(ChipControl);
}

int chip_channel_init_at(void *mem, size_t bytes, ChipChannel *out)
{
    *out = (ChipChannel){ .fd = -1 };
    if (mem == NULL || bytes < sizeof(ChipControl) || (uintptr_t)mem % _Alignof(ChipControl) != 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip channel: %zu bytes at %p hold no control block (%zu needed)",
                        bytes, mem, sizeof(ChipControl));
    ChipControl *c = mem;
    memset(c, 0, sizeof *c);
    c->magic = CHIP_CHANNEL_MAGIC;
    c->bytes = sizeof *c;
    *out = (ChipChannel){ .ctl = c, .fd = -1 };
    return PTO_OK;
}

int chip_channel_attach_at(void *mem, size_t bytes, ChipChannel *out)
{
    *out = (ChipChannel){ .fd = -1 };
    ChipControl *c = mem;
    if (mem == NULL || bytes < sizeof(ChipControl) || (uintptr_t)mem % _Alignof(ChipControl) != 0 ||
        c->magic != CHIP_CHANNEL_MAGIC || c->bytes != sizeof *c)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip channel: %p holds no chip channel", mem);
    *out = (ChipChannel){ .ctl = c, .fd = -1, .last_seq = atomic_load(&c->taken) };
    return PTO_OK;
}

void chip_channel_close(ChipChannel *ch)
{
    /* a block at an address (fd -1) belongs to whoever laid it out */
    if (ch->ctl != NULL && ch->fd >= 0)
        munmap(ch->ctl, region_bytes());
    if (ch->fd >= 0)
        close(ch->fd);
    *ch = (ChipChannel){ .fd = -1 };
}

/* ---- the parent ---------------------------------------------------------------------- */

typedef struct ResponseWait {
    ChipControl *ctl;
    uint64_t seq;
} ResponseWait;

static int response_ready(const void *arg)
{
    const ResponseWait *w = arg;
    return atomic_load_explicit(&w->ctl->response.seq, memory_order_acquire) == w->seq;
}

/* Whether the answer to request `seq` is there; copies it. */
static int take_response(ChipChannel *ch, uint64_t seq, void *reply, size_t reply_cap, FrameHead *head)
{
    ChipFrame *r = &ch->ctl->response;
    return atomic_load_explicit(&r->seq, memory_order_acquire) == seq && frame_read(r, head, reply, reply_cap) == seq;
}

/* A failing answer's payload is its message: copied again from the response
   frame (it stays as it is until the next request), whatever the reply buffer. */
static int failed(ChipChannel *ch, const FrameHead *head, uint32_t op, uint64_t seq)
{
    char message[PTO_ERROR_MESSAGE_BYTES];
    FrameHead again;
    if (head->len == 0 || frame_read(&ch->ctl->response, &again, (unsigned char *)message, sizeof message - 1) != seq)
        return pto_fail(head->status, "chip channel: the child failed op %u (request %llu) with status %d", op,
                        (unsigned long long)seq, (int)head->status);
    message[again.len < sizeof message - 1 ? again.len : sizeof message - 1] = '\0';
    return pto_fail(head->status, "%s", message);
}

static int answered(ChipChannel *ch, const FrameHead *head, uint32_t op, uint64_t seq, size_t reply_cap,
                    size_t *reply_len)
{
    if (head->status != PTO_OK) {
        if (reply_len != NULL)
            *reply_len = 0;
        return failed(ch, head, op, seq);
    }
    if (reply_len != NULL)
        *reply_len = head->len;
    if (head->len > reply_cap)
        return pto_fail(PTO_ERR_CAPACITY, "chip channel: the answer to op %u (request %llu) has %u bytes, %zu fit",
                        op, (unsigned long long)seq, head->len, reply_cap);
    return PTO_OK;
}

/* The parent's wait past its spin, counted in response_waiters: PTO_OK with the answer in
   *head and reply, or why there is none. */
static int park_for_response(ChipChannel *ch, uint32_t op, uint64_t seq, void *reply, size_t reply_cap,
                             FrameHead *head, uint32_t timeout_ms, ChipPeerCheck check, void *check_arg)
{
    ChipControl *c = ch->ctl;
    uint64_t deadline = timeout_ms == 0 ? UINT64_MAX : pto_monotonic_ns() + (uint64_t)timeout_ms * 1000000u;
    for (;;) {
        /* the word first: an answer published after this read wakes the wait below at once */
        uint32_t word = atomic_load(&c->response_word);
        if (take_response(ch, seq, reply, reply_cap, head))
            return PTO_OK;
        int rc = check == NULL ? PTO_OK : check(check_arg);
        if (rc != PTO_OK) /* an answer given just before the child died still counts */
            return take_response(ch, seq, reply, reply_cap, head) ? PTO_OK : rc;
        uint64_t now = pto_monotonic_ns();
        if (now >= deadline)
            return pto_fail(PTO_ERR_TIMEOUT, "chip channel: no answer to op %u (request %llu) within %u ms", op,
                            (unsigned long long)seq, timeout_ms);
        uint64_t slice = (uint64_t)CHIP_CHANNEL_LIVENESS_MS * 1000000u;
        pto_futex_wait_ns(futex_of(&c->response_word), word, deadline - now < slice ? deadline - now : slice);
    }
}

int chip_channel_call(ChipChannel *ch, uint32_t op, const void *payload, size_t len, void *reply, size_t reply_cap,
                      size_t *reply_len, uint32_t timeout_ms, ChipPeerCheck check, void *check_arg)
{
    if (ch == NULL || ch->ctl == NULL || (len > 0 && payload == NULL) || (reply_cap > 0 && reply == NULL))
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip channel: no channel, payload or reply buffer");
    if (len > CHIP_CHANNEL_PAYLOAD_BYTES)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip channel: a payload of %zu bytes (at most %u)", len,
                        CHIP_CHANNEL_PAYLOAD_BYTES);
    ChipControl *c = ch->ctl;
    int park_at_once = (op & CHIP_CHANNEL_PARK) != 0;
    op &= ~CHIP_CHANNEL_PARK;
    uint64_t seq = ++ch->last_seq;
    int cpu = sched_getcpu();
    atomic_store_explicit(&c->client_cpu, cpu >= 0 ? (uint32_t)cpu + 1u : 0u, memory_order_relaxed);
    FrameHead request = { .op = op, .status = PTO_OK, .len = (uint32_t)len };
    frame_write(&c->request, seq, &request, payload);
    frame_wake(&c->request_word, &c->request_waiters, NULL);

    FrameHead head;
    ResponseWait w = { c, seq };
    if (!park_at_once && pto_spin_until(response_ready, &w) &&
        take_response(ch, seq, reply, reply_cap, &head))
        return answered(ch, &head, op, seq, reply_cap, reply_len);
    atomic_fetch_add(&c->response_waiters, 1u);
    int rc = park_for_response(ch, op, seq, reply, reply_cap, &head, timeout_ms, check, check_arg);
    atomic_fetch_sub(&c->response_waiters, 1u);
    return rc == PTO_OK ? answered(ch, &head, op, seq, reply_cap, reply_len) : rc;
}

/* The child works on the parent's last request: took it, has not answered it. */
static int busy(ChipControl *c)
{
    uint64_t req = atomic_load(&c->request.seq);
    return req != 0 && atomic_load(&c->taken) == req && atomic_load(&c->response.seq) != req;
}

int chip_channel_await_taken(ChipChannel *ch, uint32_t timeout_ms)
{
    ChipControl *c = ch->ctl;
    uint64_t deadline = pto_monotonic_ns() + (uint64_t)timeout_ms * 1000000u;
    int rc = PTO_OK;
    atomic_fetch_add(&c->taken_waiters, 1u);
    for (;;) {
        uint32_t word = atomic_load(&c->response_word);
        if (busy(c))
            break;
        uint64_t now = pto_monotonic_ns();
        if (now >= deadline) {
            rc = pto_fail(PTO_ERR_TIMEOUT, "chip channel: the child took no request within %u ms", timeout_ms);
            break;
        }
        pto_futex_wait_ns(futex_of(&c->response_word), word, deadline - now);
    }
    atomic_fetch_sub(&c->taken_waiters, 1u);
    return rc;
}

/* ---- the child ---------------------------------------------------------------------------- */

static int request_posted(const void *arg)
{
    const ChipChannel *ch = arg;
    uint64_t seq = atomic_load_explicit(&ch->ctl->request.seq, memory_order_acquire);
    return seq != 0 && seq != ch->last_seq;
}

/* Parks until a request is posted: the bounded spin, then FUTEX_WAIT without
   a bound (an idle child costs no CPU; the parent wakes it per request). */
static void await_request(ChipChannel *ch)
{
    if (pto_spin_until_within(request_posted, ch, CHILD_YIELD_AFTER_NS, PTO_SPIN_BUDGET_NS))
        return;
    atomic_fetch_add(&ch->ctl->request_waiters, 1u); /* before the word is read: frame_wake */
    for (;;) {
        uint32_t word = atomic_load(&ch->ctl->request_word);
        if (request_posted(ch))
            break;
        pto_futex_wait(futex_of(&ch->ctl->request_word), word);
    }
    atomic_fetch_sub(&ch->ctl->request_waiters, 1u);
}

/* Two threads that wait for each other by spinning take turns on one core (a
   hand-off costs a yield or a sleep each way); on two cores it costs a cache
   line. Neither sleeps while calls come back to back, so the scheduler never
   places them anew: when this thread finds itself on the core the request was
   posted from, it moves to another core it may run on (and may then run
   anywhere again, so it is not pinned). docs/isolation.md, wake-ups. */
static void keep_apart_from_client(ChipControl *c)
{
    uint32_t client = atomic_load_explicit(&c->client_cpu, memory_order_relaxed);
    int me = sched_getcpu();
    if (client == 0 || me < 0 || (uint32_t)me + 1u != client)
        return;
    cpu_set_t allowed, elsewhere;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return;
    elsewhere = allowed;
    CPU_CLR(me, &elsewhere);
    if (CPU_COUNT(&elsewhere) > 0 && sched_setaffinity(0, sizeof elsewhere, &elsewhere) == 0)
        (void)sched_setaffinity(0, sizeof allowed, &allowed);
}

uint32_t chip_channel_serve_next(ChipChannel *ch, ChipHandler handler, void *arg)
{
    ChipControl *c = ch->ctl;
    unsigned char in[CHIP_CHANNEL_PAYLOAD_BYTES], out[CHIP_CHANNEL_PAYLOAD_BYTES];
    FrameHead request;
    uint64_t seq;
    for (;;) {
        await_request(ch);
        seq = frame_read(&c->request, &request, in, sizeof in);
        if (seq != 0 && seq != ch->last_seq)
            break;
    }
    ch->last_seq = seq;
    atomic_store(&c->taken, seq);
    /* Dekker with chip_channel_await_taken: taken is stored before the waiters are read,
       and a waiter counts itself before it reads the word, so one of the two sees the other */
    if (atomic_load(&c->taken_waiters) != 0)
        frame_wake(&c->response_word, &c->taken_waiters, NULL);
    keep_apart_from_client(c);

    size_t in_len = request.len < sizeof in ? request.len : sizeof in;
    size_t out_len = 0;
    int32_t status = handler(arg, request.op, in, in_len, out, &out_len);
    FrameHead response = { .op = request.op,
                           .status = status,
                           .len = (uint32_t)(out_len < sizeof out ? out_len : sizeof out) };
    frame_write(&c->response, seq, &response, out);
    frame_wake(&c->response_word, &c->response_waiters, &c->taken_waiters);
    return request.op;
}
