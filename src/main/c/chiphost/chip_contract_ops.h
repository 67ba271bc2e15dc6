/*
 * The contract's calls proxied through a chip host (docs/isolation.md): one op
 * per call, and the payloads both sides use (one truth: the proxy,
 * chip_proxy.c, encodes them; the child, chip_contract_serve.c, decodes them).
 * Host byte order; every payload and answer fits CHIP_CHANNEL_PAYLOAD_BYTES.
 *
 * Handles (a device context, a communication group) travel as the u64 value
 * of the child's pointer: opaque to the parent. Pointers the child follows
 * (run storage, args, cfg, desc, a callable, init's images and prewarm, a
 * copy's host side) are arena addresses, the same in both processes; the
 * child refuses any other with PTO_ERR_INVALID_ARGUMENT naming it, and never
 * follows it. Device pointers are the child's values, passed as they are.
 *
 * Answers: a call returning int answers its value as the status when it is
 * negative (the library's message, simpler_last_error, as the payload: the
 * parent's pto_last_error), else PTO_OK with a ChipAnswer whose value is it
 * (poll_run's 0/1, a flag). A call returning a pointer or a count answers
 * PTO_OK with a ChipAnswer; a NULL handle from create_device_context or
 * comm_init, or a NULL device_malloc, answers PTO_ERR_FAILED with the library's
 * message. Out parameters come back in ChipAnswer.out.
 */
#ifndef PTORUN_CHIP_CONTRACT_OPS_H
#define PTORUN_CHIP_CONTRACT_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "chiphost/chip_channel.h"
#include "ptorun/pto_runtime_c_api.h"

#define CHIP_OP_CONTRACT_BASE 64u

/* Each op's payload: ChipCall (handle, then arg[] as listed) unless named. */
enum ChipContractOp {
    CHIP_OP_CREATE_DEVICE_CONTEXT = CHIP_OP_CONTRACT_BASE, /* -; value: the ctx */
    CHIP_OP_DESTROY_DEVICE_CONTEXT,   /* ctx */
    CHIP_OP_INIT,                     /* ChipInitCall */
    CHIP_OP_FINALIZE_DEVICE,          /* ctx */
    CHIP_OP_DEVICE_MALLOC,            /* ctx, n; value: the device pointer */
    CHIP_OP_DEVICE_FREE,              /* ctx, p */
    CHIP_OP_COMMITTED_DEVICE_MEMORY,  /* ctx; value */
    CHIP_OP_COPY_TO_DEVICE,           /* ctx, dev, host (arena), n */
    CHIP_OP_COPY_FROM_DEVICE,         /* ctx, host (arena), dev, n */
    CHIP_OP_REGISTER_CALLABLE,        /* ctx, id, callable (arena) */
    CHIP_OP_UNREGISTER_CALLABLE,      /* ctx, id */
    CHIP_OP_PREPARE_RUN,              /* ctx, storage, id, args, cfg, desc (all arena) */
    CHIP_OP_LAUNCH_RUN,               /* ctx, storage */
    CHIP_OP_POLL_RUN,                 /* ctx, storage; value: SIMPLER_NATIVE_RUN_POLL_* */
    CHIP_OP_WAIT_RUN,                 /* ctx, storage */
    CHIP_OP_FINALIZE_RUN,             /* ctx, storage */
    CHIP_OP_RUN,                      /* as PREPARE_RUN */
    CHIP_OP_AICPU_DLOPEN_COUNT,       /* ctx; value */
    CHIP_OP_HOST_DLOPEN_COUNT,        /* ctx; value */
    CHIP_OP_RUN_STREAM_SET_CREATE_COUNT, /* ctx; value */
    CHIP_OP_SUPPORTS_CONCURRENT_PREPARE, /* ctx; value */
    CHIP_OP_ARENA_BANK_GM_HEAP_BASE,  /* ctx, bank; value */
    CHIP_OP_RETAINED_TEMP_ADDR,       /* ctx, slot; value */
    CHIP_OP_DEVICE_POISONED,          /* ctx; value */
    CHIP_OP_COMM_INIT,                /* ChipCommInitCall; value: the comm */
    CHIP_OP_COMM_ALLOC_WINDOWS,       /* comm, win_size, -, -, -, outs; out[0]: device_ctx */
    CHIP_OP_COMM_GET_LOCAL_WINDOW_BASE, /* comm, -, -, -, -, -, outs; out[0]: base */
    CHIP_OP_COMM_GET_WINDOW_SIZE,     /* comm, -, -, -, -, -, outs; out[0]: size */
    CHIP_OP_COMM_DERIVE_CONTEXT,      /* ChipCommRanksCall (allocation_id unused); out[0]: device_ctx */
    CHIP_OP_COMM_ALLOC_DOMAIN_WINDOWS, /* ChipCommRanksCall (window_offset unused); out[0]: device_ctx,
                                          out[1]: local window base */
    CHIP_OP_COMM_RELEASE_DOMAIN_WINDOWS, /* comm, allocation_id, rank_count, domain_rank */
    CHIP_OP_COMM_BARRIER,             /* comm */
    CHIP_OP_COMM_BREAK_DOMAIN,        /* comm, device_ctx */
    CHIP_OP_COMM_DESTROY,             /* comm */
    CHIP_OP_CONTRACT_END
};

typedef struct ChipCall {
    uint64_t handle;     /* the child's ctx or comm */
    uint64_t arg[6];     /* an op with out parameters: arg[CHIP_CALL_OUTS] holds CHIP_OUT_* */
} ChipCall;
#define CHIP_CALL_OUTS 5

/* Which out parameters the caller passed (a NULL one reaches the library as NULL,
   so it answers as it would in process). */
#define CHIP_OUT_0 1u
#define CHIP_OUT_1 2u

typedef struct ChipAnswer {
    uint64_t value;      /* the call's return value (an int's, when not negative) */
    uint64_t out[2];     /* out parameters */
} ChipAnswer;

typedef struct ChipInitCall {
    uint64_t ctx;
    int64_t device_id;
    uint64_t aicpu, aicpu_size, aicore, aicore_size, dispatcher, dispatcher_size; /* arena (or 0 with 0 bytes) */
    uint64_t prewarm;    /* a CallConfig in the arena, or 0 */
} ChipInitCall;

typedef struct ChipCommInitCall {
    uint64_t ctx;
    int32_t rank, nranks;
    uint32_t timeout_ms;
    uint32_t path_len;   /* bytes of path, no NUL; 0: rootinfo_path NULL */
    char path[CHIP_CHANNEL_PAYLOAD_BYTES - 24];
} ChipCommInitCall;

typedef struct ChipCommRanksCall {
    uint64_t comm;
    uint64_t allocation_id;
    uint64_t rank_count;
    uint64_t window_offset;
    uint64_t window_size;
    uint32_t domain_rank;
    uint32_t flags;        /* CHIP_RANKS_IDS: rank_ids present (else NULL); CHIP_OUT_0/1 << 1 */
    uint32_t rank_ids[(CHIP_CHANNEL_PAYLOAD_BYTES - 48) / sizeof(uint32_t)];
} ChipCommRanksCall;
#define CHIP_RANKS_IDS 1u
#define CHIP_RANKS_OUTS_SHIFT 1u
#define CHIP_COMM_MAX_RANK_IDS ((CHIP_CHANNEL_PAYLOAD_BYTES - 48) / sizeof(uint32_t))

/* CHIP_OP_DESCRIBE's payload: where the log ring lies (chiphost/chip_log_ring.h),
   0: none. */
typedef struct ChipDescribeRequest {
    uint64_t log_ring;
    uint64_t log_ring_bytes;
} ChipDescribeRequest;

/* CHIP_OP_DESCRIBE's answer: what the parent asks once and keeps. */
typedef struct ChipDescription {
    uint64_t runtime_size;        /* get_runtime_size() */
    uint64_t runtime_alignment;   /* get_runtime_alignment() */
    PipelineContract contract;    /* *get_pipeline_contract() */
    char variant[64];             /* ptorun_variant(), NUL-terminated */
} ChipDescription;

_Static_assert(sizeof(ChipCommInitCall) == CHIP_CHANNEL_PAYLOAD_BYTES, "ChipCommInitCall fills a payload");
_Static_assert(offsetof(ChipCommRanksCall, rank_ids) == 48, "ChipCommRanksCall's rank ids at 48");
_Static_assert(sizeof(ChipCommRanksCall) <= CHIP_CHANNEL_PAYLOAD_BYTES, "ChipCommRanksCall fits a payload");
_Static_assert(sizeof(ChipInitCall) <= CHIP_CHANNEL_PAYLOAD_BYTES, "ChipInitCall fits a payload");
_Static_assert(sizeof(ChipDescription) <= CHIP_CHANNEL_PAYLOAD_BYTES, "ChipDescription fits a payload");

#endif
