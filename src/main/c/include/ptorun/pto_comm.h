/*
 * The device-side descriptor of a communication domain: what
 * comm_alloc_windows, comm_derive_context and comm_alloc_domain_windows hand
 * out as `*device_ctx_out` (the device address of one of these, built in
 * device memory by the library) and what collective kernels receive as a
 * scalar argument. Every address is a device address as *this* rank's kernels
 * address it (on sim and under the emulated driver: this process's mapping of
 * the peer's shared memory).
 *
 * Signal blocks are the only memory device-side code uses to meet: each rank
 * of a domain owns one block of PTO_COMM_SIGNAL_WORDS 32-bit words, zeroed
 * when the domain is created, shared by no other domain, process-shared (a
 * futex word on sim and under the emulated driver). Its words:
 *
 *   PTO_COMM_SIG_DOORBELL  bumped by a peer after it changed anything the owner
 *                          may wait for; the owner parks on it (the only word
 *                          anyone parks on)
 *   PTO_COMM_SIG_BROKEN    0, or 1 + the domain rank whose failure broke the
 *                          domain: every later wait of every rank fails at once
 *   PTO_COMM_SIG_PID       the owner's process id while it takes part, or
 *                          PTO_COMM_PID_GONE once it left (comm_destroy) or was
 *                          lost; a peer whose process no longer exists is lost
 *   PTO_COMM_SIG_COUNTERS  the first of the collectives' counters (8: entry,
 *                          9: exit)
 *   PTO_COMM_SIG_INTENT    PTO_COMM_INTENT_WORDS words: what the owner's
 *                          current collective is about to do (kind, dtype, op,
 *                          root, element count, the data's offset in the
 *                          window, the window's bytes), written before it
 *                          signals its entry counter and compared by every
 *                          rank after the entry sync (kernels_collective.c)
 *
 * Counters only ever increase (monotonic), so a collective called again needs
 * no reset. A device-side wait spins at most the bounded spin, then parks on
 * its own doorbell, checks the broken word and its peers' liveness on every
 * wake, and gives up after timeout_ms (util/comm_signal.h).
 */
#ifndef PTORUN_PTO_COMM_H
#define PTORUN_PTO_COMM_H

#include <stddef.h>
#include <stdint.h>

#define PTO_COMM_MAX_RANKS 16u
#define PTO_COMM_SIGNAL_WORDS 128u
#define PTO_COMM_CTX_MAGIC 0x4D4D4350u      /* "PCMM" */

#define PTO_COMM_SIG_DOORBELL 0u
#define PTO_COMM_SIG_BROKEN 1u
#define PTO_COMM_SIG_PID 2u
#define PTO_COMM_SIG_COUNTERS 8u
#define PTO_COMM_PID_GONE 0xFFFFFFFFu

/* A collective's intent: PTO_COMM_SIG_INTENT + one of these. 64-bit values
   take two words, the low one first. */
#define PTO_COMM_SIG_INTENT 16u
#define PTO_COMM_INTENT_KIND 0u     /* PtoCommCollective */
#define PTO_COMM_INTENT_DTYPE 1u    /* PtoDataType of the data */
#define PTO_COMM_INTENT_OP 2u       /* PtoCommOp: 0 none, 1 sum */
#define PTO_COMM_INTENT_ROOT 3u     /* broadcast's root, else 0 */
#define PTO_COMM_INTENT_COUNT 4u    /* elements of x (2 words) */
#define PTO_COMM_INTENT_OFFSET 6u   /* x's byte offset in the window (2 words) */
#define PTO_COMM_INTENT_WINDOW 8u   /* the window's bytes as this rank's descriptor says (2 words) */
#define PTO_COMM_INTENT_WORDS 10u

typedef enum PtoCommCollective {
    PTO_COMM_ALLREDUCE_SUM = 1,
    PTO_COMM_ALLGATHER = 2,
    PTO_COMM_REDUCE_SCATTER = 3,
    PTO_COMM_BROADCAST = 4
} PtoCommCollective;

typedef enum PtoCommOp { PTO_COMM_OP_NONE = 0, PTO_COMM_OP_SUM = 1 } PtoCommOp;

_Static_assert(PTO_COMM_SIG_INTENT + PTO_COMM_INTENT_WORDS <= PTO_COMM_SIGNAL_WORDS, "intent fits the block");

/* A domain across hosts (docs/communication.md, Across hosts): the host
 * step of a collective. Its leader (the domain's lowest rank on the host)
 * posts the step in its own signal block; the host's network proxy (a thread
 * of the library on sim, of the driver onboard) runs it between the hosts'
 * leaders and writes its outcome into the same block:
 *
 *   PTO_COMM_SIG_SPAN_SEQ     the step's sequence (the collective's entry
 *                             count): posting it hands the step to the proxy
 *   PTO_COMM_SIG_SPAN_OP      PtoCommSpanOp
 *   PTO_COMM_SIG_SPAN_ROOT    MIRROR_ONE's domain rank
 *   PTO_COMM_SIG_SPAN_OFFSET  the data's byte offset in every window (2 words)
 *   PTO_COMM_SIG_SPAN_BYTES   the data's bytes (2 words)
 *   PTO_COMM_SIG_SPAN_DONE    the sequence of the last step the proxy ended
 *   PTO_COMM_SIG_SPAN_STATUS  its PtoCommSpanStatus
 *   PTO_COMM_SIG_SPAN_CULPRIT the domain rank a failure names
 *   PTO_COMM_SIG_SPAN_FIELD   on DISAGREE: the intent word that differs
 *   PTO_COMM_SIG_SPAN_VALUES  on DISAGREE: that word's 64-bit value per host
 *                             (2 words each, in host order)
 */
#define PTO_COMM_SIG_SPAN_SEQ 32u
#define PTO_COMM_SIG_SPAN_OP 33u
#define PTO_COMM_SIG_SPAN_ROOT 34u
#define PTO_COMM_SIG_SPAN_OFFSET 36u
#define PTO_COMM_SIG_SPAN_BYTES 38u
#define PTO_COMM_SIG_SPAN_DONE 40u
#define PTO_COMM_SIG_SPAN_STATUS 41u
#define PTO_COMM_SIG_SPAN_CULPRIT 42u
#define PTO_COMM_SIG_SPAN_FIELD 43u
#define PTO_COMM_SIG_SPAN_VALUES 64u

_Static_assert(PTO_COMM_SIG_SPAN_VALUES + 2u * PTO_COMM_MAX_RANKS <= PTO_COMM_SIGNAL_WORDS, "span words fit");

typedef enum PtoCommSpanOp {
    PTO_COMM_SPAN_MIRROR_ALL = 1, /* every remote member's data into this host's mirror of its window */
    PTO_COMM_SPAN_MIRROR_ONE = 2, /* one member's (the root's) */
    PTO_COMM_SPAN_SUM = 3         /* the hosts' sums (each in the leader's first mirror) summed in host order */
} PtoCommSpanOp;

typedef enum PtoCommSpanStatus {
    PTO_COMM_SPAN_OK = 0,
    PTO_COMM_SPAN_LOST = 1,     /* the culprit's host is gone */
    PTO_COMM_SPAN_TIMEOUT = 2,  /* the culprit's host did not take part in time */
    PTO_COMM_SPAN_DISAGREE = 3, /* the hosts' intents differ (FIELD, VALUES) */
    PTO_COMM_SPAN_FAILED = 4    /* anything else (out of memory, a Gloo error): culprit as for LOST */
} PtoCommSpanStatus;

typedef struct PtoCommDeviceContext {
    uint32_t magic;                          /* PTO_COMM_CTX_MAGIC */
    uint32_t rank;                           /* this rank's index in the domain */
    uint32_t nranks;                         /* 1..PTO_COMM_MAX_RANKS */
    uint32_t timeout_ms;                     /* device-side waits fail after this */
    uint64_t window_size;                    /* bytes of every rank's window */
    uint64_t windows[PTO_COMM_MAX_RANKS];    /* rank r's window (another host's: this host's mirror of it); unused 0 */
    uint64_t signals[PTO_COMM_MAX_RANKS];    /* rank r's signal block (another host's: 0); unused entries 0 */
    uint64_t span;                           /* a domain across hosts: its PtoCommSpan; else 0 */
} PtoCommDeviceContext;

_Static_assert(sizeof(PtoCommDeviceContext) == 288, "PtoCommDeviceContext size");
_Static_assert(offsetof(PtoCommDeviceContext, windows) == 24, "PtoCommDeviceContext.windows");
_Static_assert(offsetof(PtoCommDeviceContext, signals) == 152, "PtoCommDeviceContext.signals");
_Static_assert(offsetof(PtoCommDeviceContext, span) == 280, "PtoCommDeviceContext.span");

/* What a domain across hosts adds, right after its descriptor in device
 * memory. Hosts are numbered in the order of their leaders' domain ranks. The
 * local descriptor is the domain's members on this host alone (rank = this
 * rank's index among them, ascending domain ranks): the collectives meet over
 * it, and its signal block 0 is the leader's, where the host step is posted. */
typedef struct PtoCommSpan {
    uint32_t hosts;                          /* 2..PTO_COMM_MAX_RANKS */
    uint32_t host;                           /* this rank's host */
    uint32_t host_of[PTO_COMM_MAX_RANKS];    /* each domain rank's host */
    uint32_t local_rank[PTO_COMM_MAX_RANKS]; /* the domain rank of each member of `local` */
    uint64_t proxy_bell;                     /* the word the host's proxy parks on */
    PtoCommDeviceContext local;
} PtoCommSpan;

#endif
