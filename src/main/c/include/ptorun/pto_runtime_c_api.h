/*
 * ptorun host-runtime C contract.
 *
 * Every libptorun_<arch>_<platform>_<runtime>.so exports exactly the functions
 * declared here and nothing else. This header is the single source of the
 * contract: symbols, constants, error codes and every structure that crosses
 * the boundary, with its size and field offsets asserted at compile time.
 * docs/abi.md explains it for users; docs/lifecycle.md the run's life.
 */
#ifndef PTORUN_PTO_RUNTIME_C_API_H
#define PTORUN_PTO_RUNTIME_C_API_H

#include <stddef.h>
#include <stdint.h>

#include "ptorun/pto_export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- error codes: 0 success, negative failure ---------------------------- */
#define PTO_OK                        0
#define PTO_ERR_FAILED               -1
#define PTO_RUNTIME_ERR_UNSUPPORTED  -2
#define PTO_ERR_INVALID_ARGUMENT     -3
#define PTO_ERR_BAD_STORAGE          -4
#define PTO_ERR_WRONG_PHASE          -5
#define PTO_ERR_BUSY                 -6
#define PTO_ERR_NOT_REGISTERED       -7
#define PTO_ERR_OUT_OF_MEMORY        -8
#define PTO_ERR_DEVICE               -9
#define PTO_ERR_KERNEL_FAULT        -10
#define PTO_ERR_TIMEOUT             -11
#define PTO_ERR_BAD_CALLABLE        -12
#define PTO_ERR_CAPACITY            -13
#define PTO_ERR_ORCHESTRATION       -14
#define PTO_ERR_POISONED            -15
/* PTO_ERR_RANKS_DISAGREE: the ranks of a collective call (a collective kernel,
   a window allocation) asked for different things; nothing moved or stayed
   allocated, the group and its domains stay usable (docs/abi.md). */
#define PTO_ERR_RANKS_DISAGREE      -16
/* PTO_ERR_OVERLAP_NOT_NOW: prepare only. The run could be prepared, but not while the
   run named in the message executes: preparing it now would rewrite working memory
   that run uses (trb: its ring sizing differs from the runtime image the executing run
   is bound to). Nothing was taken, the storage stays empty and the chip fully usable;
   prepare it again after that run is finalized (docs/abi.md). */
#define PTO_ERR_OVERLAP_NOT_NOW     -17
/* PTO_ERR_CHIP_CRASHED: the process that runs the chip (its chip host,
   docs/isolation.md) is gone: killed by a signal or exited. The call in flight
   and every later call of that chip fail with it; the message names the
   signal or the exit status and the process id. */
#define PTO_ERR_CHIP_CRASHED        -18

/* native log levels (ptorun_log_next), in SLF4J's order */
#define PTO_LOG_ERROR 1
#define PTO_LOG_WARN  2
#define PTO_LOG_INFO  3
#define PTO_LOG_DEBUG 4
#define PTO_LOG_TRACE 5

/* ---- constants ----------------------------------------------------------- */
#define PTO_PIPELINE_CONTRACT_ABI_VERSION   1u
#define PTO_PIPELINE_MAX_DEPTH              2u
#define PTO_PIPELINE_MAX_RESOURCES          8u
#define PTO_MAX_CALLABLES                  64
#define PTO_MAX_TENSOR_ARGS               256
#define PTO_MAX_SCALAR_ARGS               128
#define PTO_MAX_TENSOR_DIMS                 5
#define PTO_TRB_RING_COUNT                  4
#define PTO_OUTPUT_PREFIX_BYTES          1024
#define PTO_DEFAULT_TIMEOUT_MS          45000

/* CallConfig bounds (call_config_validate refuses a value outside them; 0 is always
   "the default"). The arch maxima of aicpu_thread_num and block_dim are per arch
   (src/main/c/arch/arch.h): PTO_ARCH_AICPU_THREADS_MAX, PTO_ARCH_MAX_BLOCKS. */
#define PTO_AICPU_THREADS_MIN               2   /* the first thread orchestrates on trb */
#define PTO_BLOCK_DIM_MIN                   1
#define PTO_RING_TASK_WINDOW_MIN            4   /* and a power of two */
#define PTO_RING_TASK_WINDOW_MAX   0x7FFFFFFF   /* INT32_MAX: the largest legal window is 2^30 */
#define PTO_RING_HEAP_MIN                1024   /* bytes; no maximum here: trb refuses a sizing
                                                   beyond its arena with PTO_ERR_CAPACITY */
#define PTO_RING_DEP_POOL_MIN               4
#define PTO_RING_DEP_POOL_MAX      0x7FFFFFFF   /* INT32_MAX */

/* First 8 bytes of a run storage holding a prepared run ("SMPLRUN1"). */
#define PTO_NATIVE_RUN_STORAGE_MAGIC 0x534D504C52554E31ull
/* Where a run storage holds its NativeRunReport: right after the tag. */
#define PTO_NATIVE_RUN_REPORT_OFFSET 8
/* NativeRunReport: the diagnostic files a run can write (the dependency graph and
   the trace), and the bytes of one file's path with its NUL (any output_prefix of
   fewer than PTO_OUTPUT_PREFIX_BYTES bytes plus a file name fits). */
#define PTO_RUN_REPORT_MAX_FILES            2
#define PTO_RUN_REPORT_PATH_BYTES        (PTO_OUTPUT_PREFIX_BYTES + 64)

/* A run's identity in every message about it, formatted from this one definition by
   the library and by the Java binding (NativeRun.identity): run_id, pipeline slot,
   lease generation, dispatch_id, run_epoch, in that order. */
#define PTO_RUN_IDENTITY_FORMAT "(run_id=%llu slot=%u generation=%llu dispatch_id=%llu run_epoch=%llu)"

#define SIMPLER_NATIVE_RUN_POLL_NOT_READY 0
#define SIMPLER_NATIVE_RUN_POLL_COMPLETE  1

/* PipelineResource.kind; 0 is never valid (it is what an unfilled entry reads as). */
typedef enum PipelineResourceKind {
    PTO_PIPELINE_KIND_UNSPECIFIED = 0,
    PTO_PIPELINE_GM_HEAP = 1,
    PTO_PIPELINE_GM_SM = 2,
    PTO_PIPELINE_RUNTIME_IMAGE = 3,
    PTO_PIPELINE_TASK_ARGS = 4,
    PTO_PIPELINE_AICPU_STREAM = 5,
    PTO_PIPELINE_AICORE_STREAM = 6
} PipelineResourceKind;

/* PipelineResource.resource_class */
typedef enum PipelineResourceClass {
    PTO_PIPELINE_HOST_PER_RUN = 0,   /* carries the run's own content: pipeline_depth copies */
    PTO_PIPELINE_DEVICE_SCRATCH = 1, /* populated once, reused: one copy */
    PTO_PIPELINE_EXEC_HANDLE = 2     /* owned while the run executes: pipeline_depth copies */
} PipelineResourceClass;

/* ChipTensor.dtype */
typedef enum PtoDataType {
    PTO_DTYPE_F32 = 0, PTO_DTYPE_F16 = 1, PTO_DTYPE_BF16 = 2, PTO_DTYPE_I32 = 3,
    PTO_DTYPE_I64 = 4, PTO_DTYPE_U8 = 5, PTO_DTYPE_I8 = 6, PTO_DTYPE_I16 = 7,
    PTO_DTYPE_U32 = 8, PTO_DTYPE_U64 = 9
} PtoDataType;
#define PTO_DTYPE_COUNT 10

/* Bytes of one element of `dtype`; 0 for a value that is no PtoDataType. */
static inline uint32_t pto_dtype_bytes(uint32_t dtype)
{
    switch (dtype) {
    case PTO_DTYPE_U8: case PTO_DTYPE_I8: return 1;
    case PTO_DTYPE_F16: case PTO_DTYPE_BF16: case PTO_DTYPE_I16: return 2;
    case PTO_DTYPE_F32: case PTO_DTYPE_I32: case PTO_DTYPE_U32: return 4;
    case PTO_DTYPE_I64: case PTO_DTYPE_U64: return 8;
    default: return 0;
    }
}

/* ---- structures crossing the boundary ------------------------------------ */

typedef struct NativeRunDescriptor {
    uint32_t pipeline_slot;            /* < PTO_PIPELINE_MAX_DEPTH */
    uint32_t arena_bank;               /* < 2; trb maps every slot to bank 0 */
    uint64_t run_id;                   /* diagnostic */
    uint64_t generation;               /* lease generation; diagnostic after admission */
    uint64_t dispatch_id;              /* diagnostic */
    uint64_t run_epoch;                /* process-unique identity of this prepare */
    volatile int32_t *accepted_state;  /* optional acceptance sink; NULL = none */
    int32_t accepted_value;            /* stored into the sink at the launch marker */
} NativeRunDescriptor;

typedef struct PipelineResource {
    uint32_t kind;
    uint32_t resource_class;
    uint64_t bytes_per_copy;           /* reserved, 0 */
} PipelineResource;

typedef struct PipelineContract {
    uint32_t abi_version;
    uint32_t resource_count;
    uint32_t pipeline_depth;
    uint32_t reserved0;
    PipelineResource resources[PTO_PIPELINE_MAX_RESOURCES];
} PipelineContract;

typedef struct PipelineSlotLease {
    uint32_t slot_id;
    uint32_t reserved;                 /* 0 */
    uint64_t generation;               /* 0 = invalid */
} PipelineSlotLease;

#pragma pack(push, 1)
typedef struct CallConfig {
    int32_t aicpu_thread_num;          /* 0 = arch default; else PTO_AICPU_THREADS_MIN..arch max */
    int32_t block_dim;                 /* 0 = variant default; else PTO_BLOCK_DIM_MIN..arch max */
    int32_t enable_trace;              /* diagnostic */
    int32_t enable_dump_args;          /* diagnostic */
    int32_t enable_dep_graph;          /* diagnostic */
    int32_t timeout_ms;                /* 0 = PTO_DEFAULT_TIMEOUT_MS */
    uint64_t ring_task_window[PTO_TRB_RING_COUNT]; /* 0 = default; else a power of two in
                                                      PTO_RING_TASK_WINDOW_MIN..PTO_RING_TASK_WINDOW_MAX */
    uint64_t ring_heap[PTO_TRB_RING_COUNT];        /* 0 = default; else >= PTO_RING_HEAP_MIN */
    uint64_t ring_dep_pool[PTO_TRB_RING_COUNT];    /* 0 = default; else PTO_RING_DEP_POOL_MIN..PTO_RING_DEP_POOL_MAX */
    char output_prefix[PTO_OUTPUT_PREFIX_BYTES];   /* required when a diagnostic is on */
} CallConfig;
#pragma pack(pop)

typedef struct __attribute__((aligned(64))) ChipTensor {
    uint64_t addr;            /* host address; a device address when child_memory */
    uint64_t size;            /* bytes */
    uint64_t owner_task_id;   /* reserved, 0 */
    uint64_t start_offset;    /* elements */
    int32_t version;          /* reserved, 0 */
    uint32_t ndims;           /* 1..5 */
    uint8_t dtype;            /* PtoDataType */
    uint8_t manual_dep;       /* reserved, 0 */
    uint8_t is_contiguous;
    uint8_t child_memory;     /* 1: already a device buffer, passed through */
    uint32_t shapes[PTO_MAX_TENSOR_DIMS];
    uint64_t reserved64;
    uint32_t strides[PTO_MAX_TENSOR_DIMS]; /* elements, each > 0 */
    uint8_t reserved[36];
} ChipTensor;

/* What the library reports of a run, inside its run storage at
 * PTO_NATIVE_RUN_REPORT_OFFSET (docs/abi.md, Run storage). simpler_prepare_run
 * empties it when it builds the run (a refused prepare leaves the storage as it
 * was); simpler_finalize_run (and simpler_run after a successful prepare) writes
 * it whatever the outcome, before it returns; the caller reads it after that
 * return, until it prepares the next run in the same storage. Nothing else of
 * the storage is the caller's to read. */
/* NativeRunReport.graph_source. BUILT: the orchestration built the run's graph
   (a library's, a graph that could not be recorded, a run whose prepare failed);
   RECORDED: it built the graph and recorded it for later runs of the callable;
   REPLAYED: prepare bound the run's arguments to a recording, built nothing. */
#define PTO_RUN_GRAPH_BUILT    0
#define PTO_RUN_GRAPH_RECORDED 1
#define PTO_RUN_GRAPH_REPLAYED 2

typedef struct NativeRunReport {
    uint64_t execution_end_ns;         /* CLOCK_MONOTONIC ns at which the platform saw the device
                                          finish the run (sim: the launch's last AICPU participation
                                          returned; onboard: the run's streams synchronized); 0 when
                                          the device never finished it: never launched, refused before
                                          the launch marker, timed out or lost onboard */
    uint64_t peak_device_memory;       /* bytes of device memory the run's own data took at its peak
                                          (docs/abi.md); trb counts its locals only after a successful run */
    uint32_t output_file_count;        /* 0..PTO_RUN_REPORT_MAX_FILES */
    uint32_t graph_source;             /* PTO_RUN_GRAPH_*: how prepare got the run's task graph
                                          (docs/recorded-graphs.md) */
    char output_files[PTO_RUN_REPORT_MAX_FILES][PTO_RUN_REPORT_PATH_BYTES]; /* the files written,
                                          NUL-terminated, in the order written: dep graph, then trace */
    uint64_t orchestration_ns;         /* CPU time of the thread that ran the run's orchestration,
                                          from its start to its return: hbg the host's in prepare
                                          (0 when prepare replayed a recorded graph), trb the device
                                          orchestrator's; 0 when none ran */
    /* The poll's answer without a call (docs/abi.md, Answering a poll from the storage), each
       word stored with release, read with acquire, any time: */
    uint64_t launched_ctx;             /* the device context (its handle's value) whose simpler_launch_run
                                          of this run returned PTO_OK, from just before that return
                                          until its simpler_finalize_run begins; otherwise 0 */
    uint32_t device_ended;             /* 1 from the moment a poll would answer COMPLETE (the run's work
                                          ended) until the next prepare in this storage; otherwise 0 */
    uint32_t reserved;                 /* 0 */
} NativeRunReport;

typedef struct __attribute__((aligned(64))) ChipStorageTaskArgs {
    ChipTensor tensors[PTO_MAX_TENSOR_ARGS];
    uint64_t scalars[PTO_MAX_SCALAR_ARGS];
    int32_t tensor_count;
    int32_t scalar_count;
} ChipStorageTaskArgs;

/* Layout is contract: a change here is an ABI break. */
#define PTO_ASSERT_LAYOUT(type, field, off) \
    _Static_assert(offsetof(type, field) == (off), #type "." #field " offset")
_Static_assert(sizeof(NativeRunDescriptor) == 56, "NativeRunDescriptor size");
_Static_assert(_Alignof(NativeRunDescriptor) == 8, "NativeRunDescriptor align");
PTO_ASSERT_LAYOUT(NativeRunDescriptor, pipeline_slot, 0);
PTO_ASSERT_LAYOUT(NativeRunDescriptor, arena_bank, 4);
PTO_ASSERT_LAYOUT(NativeRunDescriptor, run_id, 8);
PTO_ASSERT_LAYOUT(NativeRunDescriptor, generation, 16);
PTO_ASSERT_LAYOUT(NativeRunDescriptor, dispatch_id, 24);
PTO_ASSERT_LAYOUT(NativeRunDescriptor, run_epoch, 32);
PTO_ASSERT_LAYOUT(NativeRunDescriptor, accepted_state, 40);
PTO_ASSERT_LAYOUT(NativeRunDescriptor, accepted_value, 48);
_Static_assert(sizeof(PipelineResource) == 16, "PipelineResource size");
PTO_ASSERT_LAYOUT(PipelineResource, kind, 0);
PTO_ASSERT_LAYOUT(PipelineResource, resource_class, 4);
PTO_ASSERT_LAYOUT(PipelineResource, bytes_per_copy, 8);
_Static_assert(sizeof(PipelineContract) == 144, "PipelineContract size");
PTO_ASSERT_LAYOUT(PipelineContract, abi_version, 0);
PTO_ASSERT_LAYOUT(PipelineContract, resource_count, 4);
PTO_ASSERT_LAYOUT(PipelineContract, pipeline_depth, 8);
PTO_ASSERT_LAYOUT(PipelineContract, resources, 16);
_Static_assert(sizeof(PipelineSlotLease) == 16, "PipelineSlotLease size");
PTO_ASSERT_LAYOUT(PipelineSlotLease, slot_id, 0);
PTO_ASSERT_LAYOUT(PipelineSlotLease, reserved, 4);
PTO_ASSERT_LAYOUT(PipelineSlotLease, generation, 8);
_Static_assert(sizeof(CallConfig) == 1144, "CallConfig size");
_Static_assert(_Alignof(CallConfig) == 1, "CallConfig is packed");
PTO_ASSERT_LAYOUT(CallConfig, aicpu_thread_num, 0);
PTO_ASSERT_LAYOUT(CallConfig, block_dim, 4);
PTO_ASSERT_LAYOUT(CallConfig, enable_trace, 8);
PTO_ASSERT_LAYOUT(CallConfig, enable_dump_args, 12);
PTO_ASSERT_LAYOUT(CallConfig, enable_dep_graph, 16);
PTO_ASSERT_LAYOUT(CallConfig, timeout_ms, 20);
PTO_ASSERT_LAYOUT(CallConfig, ring_task_window, 24);
PTO_ASSERT_LAYOUT(CallConfig, ring_heap, 56);
PTO_ASSERT_LAYOUT(CallConfig, ring_dep_pool, 88);
PTO_ASSERT_LAYOUT(CallConfig, output_prefix, 120);
_Static_assert(sizeof(ChipTensor) == 128, "ChipTensor size");
_Static_assert(_Alignof(ChipTensor) == 64, "ChipTensor align");
PTO_ASSERT_LAYOUT(ChipTensor, addr, 0);
PTO_ASSERT_LAYOUT(ChipTensor, size, 8);
PTO_ASSERT_LAYOUT(ChipTensor, owner_task_id, 16);
PTO_ASSERT_LAYOUT(ChipTensor, start_offset, 24);
PTO_ASSERT_LAYOUT(ChipTensor, version, 32);
PTO_ASSERT_LAYOUT(ChipTensor, ndims, 36);
PTO_ASSERT_LAYOUT(ChipTensor, dtype, 40);
PTO_ASSERT_LAYOUT(ChipTensor, manual_dep, 41);
PTO_ASSERT_LAYOUT(ChipTensor, is_contiguous, 42);
PTO_ASSERT_LAYOUT(ChipTensor, child_memory, 43);
PTO_ASSERT_LAYOUT(ChipTensor, shapes, 44);
PTO_ASSERT_LAYOUT(ChipTensor, reserved64, 64);
PTO_ASSERT_LAYOUT(ChipTensor, strides, 72);
PTO_ASSERT_LAYOUT(ChipTensor, reserved, 92);
_Static_assert(sizeof(NativeRunReport) == 2224, "NativeRunReport size");
_Static_assert(_Alignof(NativeRunReport) == 8, "NativeRunReport align");
PTO_ASSERT_LAYOUT(NativeRunReport, execution_end_ns, 0);
PTO_ASSERT_LAYOUT(NativeRunReport, peak_device_memory, 8);
PTO_ASSERT_LAYOUT(NativeRunReport, output_file_count, 16);
PTO_ASSERT_LAYOUT(NativeRunReport, graph_source, 20);
PTO_ASSERT_LAYOUT(NativeRunReport, output_files, 24);
PTO_ASSERT_LAYOUT(NativeRunReport, orchestration_ns, 2200);
PTO_ASSERT_LAYOUT(NativeRunReport, launched_ctx, 2208);
PTO_ASSERT_LAYOUT(NativeRunReport, device_ended, 2216);
_Static_assert(sizeof(ChipStorageTaskArgs) == 33856, "ChipStorageTaskArgs size");
_Static_assert(_Alignof(ChipStorageTaskArgs) == 64, "ChipStorageTaskArgs align");
PTO_ASSERT_LAYOUT(ChipStorageTaskArgs, tensors, 0);
PTO_ASSERT_LAYOUT(ChipStorageTaskArgs, scalars, 32768);
PTO_ASSERT_LAYOUT(ChipStorageTaskArgs, tensor_count, 33792);
PTO_ASSERT_LAYOUT(ChipStorageTaskArgs, scalar_count, 33796);

/* ---- exported functions -------------------------------------------------- */

/* identity */
PTO_EXPORT const char *ptorun_variant(void);
PTO_EXPORT const char *simpler_last_error(void);

/* lifecycle */
PTO_EXPORT void *create_device_context(void);
PTO_EXPORT void destroy_device_context(void *ctx);
PTO_EXPORT int simpler_init(void *ctx, int device_id,
                            const uint8_t *aicpu, size_t aicpu_size,
                            const uint8_t *aicore, size_t aicore_size,
                            const uint8_t *dispatcher, size_t dispatcher_size,
                            const CallConfig *prewarm);
PTO_EXPORT int finalize_device(void *ctx);

/* sizing of one run storage (a NativeRunContext): at least
   PTO_NATIVE_RUN_REPORT_OFFSET + sizeof(NativeRunReport) bytes */
PTO_EXPORT size_t get_runtime_size(void);
PTO_EXPORT size_t get_runtime_alignment(void);

/* device memory */
PTO_EXPORT void *device_malloc_ctx(void *ctx, size_t n);
PTO_EXPORT void device_free_ctx(void *ctx, void *p);
PTO_EXPORT size_t committed_device_memory_ctx(void *ctx);
PTO_EXPORT int copy_to_device_ctx(void *ctx, void *dev, const void *host, size_t n);
PTO_EXPORT int copy_from_device_ctx(void *ctx, void *host, const void *dev, size_t n);

/* callables */
PTO_EXPORT int simpler_register_callable(void *ctx, int32_t id, const void *callable);
PTO_EXPORT int simpler_unregister_callable(void *ctx, int32_t id);

/* native runs */
PTO_EXPORT int simpler_prepare_run(void *ctx, void *storage, int32_t id, const void *args,
                                   const CallConfig *cfg, const NativeRunDescriptor *desc);
PTO_EXPORT int simpler_launch_run(void *ctx, void *storage);
PTO_EXPORT int simpler_poll_run(void *ctx, void *storage);
PTO_EXPORT int simpler_wait_run(void *ctx, void *storage);
PTO_EXPORT int simpler_finalize_run(void *ctx, void *storage);
PTO_EXPORT int simpler_run(void *ctx, void *storage, int32_t id, const void *args,
                           const CallConfig *cfg, const NativeRunDescriptor *desc);

/* counters */
PTO_EXPORT size_t get_aicpu_dlopen_count(void *ctx);
PTO_EXPORT size_t get_host_dlopen_count(void *ctx);
PTO_EXPORT size_t get_run_stream_set_create_count(void *ctx);

/* pipeline */
PTO_EXPORT const PipelineContract *get_pipeline_contract(void);
PTO_EXPORT int supports_concurrent_native_prepare_ctx(void *ctx);
PTO_EXPORT uint64_t get_arena_bank_gm_heap_base_ctx(void *ctx, uint32_t bank);
PTO_EXPORT uint64_t get_retained_temp_addr_ctx(void *ctx, uint32_t slot);

/* 1 when the device context is poisoned (it refuses work after an unrecovered device
 * error, until finalize_device; docs/reliability.md §4), else 0 (also for NULL or a
 * pointer without a live context's tag; never pass a destroyed one). The one answer
 * to "did that failure poison?": a caller asks after a failed call instead of
 * deciding from the code. Leaves simpler_last_error alone. */
PTO_EXPORT int device_poisoned_ctx(void *ctx);

/* communication group (docs/communication.md): one handle per rank; the device-side
 * descriptor the *_ctx_out values point to is PtoCommDeviceContext (ptorun/pto_comm.h).
 * Collective calls (comm_init, comm_alloc_windows, comm_derive_context,
 * comm_alloc_domain_windows, comm_barrier) are made by every member, in the same order.
 * One thread at a time per handle is not required: calls on a handle are serialized.
 * comm_init returns NULL on failure (simpler_last_error says why). */
PTO_EXPORT void *comm_init(void *ctx, int rank, int nranks, const char *rootinfo_path, uint32_t timeout_ms);
PTO_EXPORT int comm_alloc_windows(void *comm, size_t win_size, uint64_t *device_ctx_out);
PTO_EXPORT int comm_get_local_window_base(void *comm, uint64_t *base_out);
PTO_EXPORT int comm_get_window_size(void *comm, size_t *size_out);
PTO_EXPORT int comm_derive_context(void *comm, const uint32_t *rank_ids, size_t rank_count, uint32_t domain_rank,
                                   size_t window_offset, size_t window_size, uint64_t *device_ctx_out);
PTO_EXPORT int comm_alloc_domain_windows(void *comm, uint64_t allocation_id, const uint32_t *rank_ids,
                                         size_t rank_count, uint32_t domain_rank, size_t window_size,
                                         uint64_t *device_ctx_out, uint64_t *local_window_base_out);
PTO_EXPORT int comm_release_domain_windows(void *comm, uint64_t allocation_id, size_t rank_count,
                                           uint32_t domain_rank);
PTO_EXPORT int comm_barrier(void *comm);
/* Breaks the domain whose descriptor is device_ctx (a *device_ctx_out of this handle)
 * naming this rank: every member's collective waits fail at once naming it. For callers
 * that refuse a run naming the domain before it reaches the library; a run the library
 * refuses, or that fails, breaks the domains its scalars name itself. Local, never
 * blocks; a broken domain stays broken (close the group, open a new one). */
PTO_EXPORT int comm_break_domain(void *comm, uint64_t device_ctx);

/* Leaves the group and frees the handle (NULL tolerated); PTO_ERR_BUSY while a run is
 * outstanding on the handle's context. */
PTO_EXPORT int comm_destroy(void *comm);

/* native log: native code never prints; it records (level, text) in a bounded ring
 * of this library that the caller drains. Both leave simpler_last_error alone.
 * ptorun_log_pending: records waiting (an atomic load, cheap to call after every call).
 * ptorun_log_next: moves the oldest record's text into buf (NUL-terminated, truncated
 * to cap) and returns its PTO_LOG_* level; 0 when empty; PTO_ERR_INVALID_ARGUMENT for
 * a NULL buf or cap 0. After an overflow the first record is a PTO_LOG_WARN saying how
 * many records were dropped (the oldest go first). */
PTO_EXPORT uint64_t ptorun_log_pending(void);
PTO_EXPORT int ptorun_log_next(char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* PTORUN_PTO_RUNTIME_C_API_H */
