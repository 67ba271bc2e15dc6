/*
 * The device ABI: what a runtime's host half hands the AICPU executor image for
 * one run, and what the executor reports back. One ABI for every platform (the
 * sim runner, the emulated onboard driver) and every runtime (hbg today, trb
 * next): a platform only knows "run PTO_AICPU_ENTRY_SYMBOL with args_dev on N
 * threads", plus the fixed head of the argument block (the status block).
 *
 * Everything here lives in device memory and is position-independent: the
 * argument block names its other regions by device address, and those regions
 * name their parts by byte offsets from their own start. Little-endian LP64,
 * fields naturally aligned.
 */
#ifndef PTORUN_PTO_DEVICE_ABI_H
#define PTORUN_PTO_DEVICE_ABI_H

#include <stddef.h>
#include <stdint.h>

#define PTO_DEVICE_ABI_VERSION 8u

/* Both images export `uint32_t pto_device_abi_version(void)`; a platform refuses
 * an image whose version differs from the one it was built with. */
#define PTO_DEVICE_ABI_VERSION_SYMBOL "pto_device_abi_version"
typedef uint32_t (*PtoDeviceAbiVersionFn)(void);

/* The AICore image exports each built-in kernel `k` (device/pto_builtin_kernels.h)
 * as the PtoKernelFn `pto_kernel_k`; the prefix keeps a kernel name from ever
 * resolving to an unrelated symbol of the image's dependencies. */
#define PTO_KERNEL_SYMBOL_PREFIX "pto_kernel_"

/* The kernel_addr of a task that runs nothing: a sub-graph invocation's entry
 * and exit tasks (orch/subgraph.h), which only carry dependencies. It completes
 * as soon as it is picked, on either executor. */
#define PTO_KERNEL_ADDR_NONE ((uint64_t)1)

/* ---- the AICPU entry ------------------------------------------------------

   int32_t pto_aicpu_entry(uint64_t args_dev, uint32_t thread_idx,
                           uint32_t thread_count, const PtoAicpuHooks *hooks);

   One call is one *participation* of a logical AICPU thread (thread_idx <
   thread_count, at most one running participation per index) in the run
   described by the PtoAicpuArgs at args_dev. The executor never waits for its
   participations to gather: any number of them, started in any order, complete
   the run, and a participation that starts after the run ended returns DONE at
   once.

   hooks == NULL (eager launch, e.g. a driver that starts all thread_count
   participations at once): a participation with nothing to do parks on a
   condition variable and returns PTO_AICPU_DONE only when the run has ended.
   The launch is finished when every participation has returned.

   hooks != NULL (on-demand launch, the sim): the platform starts one
   participation; the executor asks for more through hooks->request_threads when
   it has parallel work. A participation with nothing to do returns
   PTO_AICPU_IDLE instead of parking. The launch is finished when a
   participation has returned PTO_AICPU_DONE and none is running; the platform
   then starts no further participation. */
#define PTO_AICPU_ENTRY_SYMBOL "pto_aicpu_entry"

/* ---- the AICore core entry -----------------------------------------------

   int32_t pto_aicore_entry(uint64_t args_dev, uint32_t core_idx, uint32_t core_count);

   What an onboard driver launches on a run's AICore stream, once per core
   (core_idx < core_count = block_dim). Non-zero fails the launch. The built-in
   AICore image's entry returns 0 at once: the AICPU executor calls the kernels
   itself in this emulation (docs/driver.md). */
#define PTO_AICORE_ENTRY_SYMBOL "pto_aicore_entry"
typedef int32_t (*PtoAicoreEntryFn)(uint64_t args_dev, uint32_t core_idx, uint32_t core_count);

/* The AICPU image also exports `uint64_t pto_aicpu_dlopen_count(void)`: how many
   orchestration libraries this copy of the image has loaded (trb), for
   get_aicpu_dlopen_count. */
#define PTO_AICPU_DLOPEN_COUNT_SYMBOL "pto_aicpu_dlopen_count"
typedef uint64_t (*PtoAicpuDlopenCountFn)(void);

#define PTO_AICPU_IDLE 0  /* nothing to do now; the run goes on (hooks only) */
#define PTO_AICPU_DONE 1  /* the run has ended: its status block is final */

typedef struct PtoAicpuHooks {
    void *ctx;
    /* Starts up to `n` more participations of this launch (indices not running);
       returns how many it will start. Never blocks; may be called from any
       participation, never with the executor's locks held. */
    uint32_t (*request_threads)(void *ctx, uint32_t n);
} PtoAicpuHooks;

typedef int32_t (*PtoAicpuEntryFn)(uint64_t args_dev, uint32_t thread_idx, uint32_t thread_count,
                                   const PtoAicpuHooks *hooks);

/* ---- the status block -----------------------------------------------------
   Inside the argument block at a fixed offset, so a platform can request a
   stop and read the result without knowing the runtime. Written zero by the
   host when it builds the argument block. */
typedef struct PtoDeviceStatus {
    int32_t error_code;       /* 0, or the run's first error (a PTO_ERR_* code):
                                 KERNEL_FAULT a kernel returned non-zero; TIMEOUT (or
                                 whatever stop_request held) the run stopped on request
                                 with tasks left; DEVICE a malformed argument block or
                                 work image; trb also CAPACITY, ORCHESTRATION,
                                 BAD_CALLABLE, ... for a failed orchestration (task_id
                                 then = the tasks it had submitted, kernel_code = what
                                 it returned) */
    int32_t kernel_code;      /* KERNEL_FAULT: the kernel's return value */
    uint64_t task_id;         /* KERNEL_FAULT: the failing task */
    uint32_t func_id;         /* KERNEL_FAULT: its func_id */
    uint32_t core_id;         /* KERNEL_FAULT: the logical core it ran on */
    uint64_t tasks_completed; /* tasks whose kernel returned (successfully or not) */
    int32_t stop_request;     /* host -> device: non-zero asks the executor to start
                                 nothing more; the value is the error it records when
                                 tasks are left (the sim writes PTO_ERR_TIMEOUT) */
    uint32_t finished;        /* 1 once the run has ended */
    uint64_t deadline_ns;     /* host -> device: 0, or a CLOCK_MONOTONIC instant after
                                 which the executor acts as on stop_request =
                                 PTO_ERR_TIMEOUT (the sim sets it: its first
                                 participation may run on the thread that would
                                 otherwise time the run out) */
    uint64_t reserved[2];
} PtoDeviceStatus;

/* ---- the argument block ---------------------------------------------------- */
#define PTO_AICPU_ARGS_MAGIC 0x41435041u  /* "APCA" */

typedef enum PtoDeviceWorkKind {
    PTO_DEVICE_WORK_GRAPH = 1, /* a prebuilt task graph (hbg): PtoGraphHeader at work_dev */
    PTO_DEVICE_WORK_TRB = 2    /* device orchestration over rings (trb): PtoTrbWork at work_dev,
                                  device/pto_trb_abi.h; state_dev unused */
} PtoDeviceWorkKind;

typedef struct PtoAicpuArgs {
    uint32_t magic;           /* PTO_AICPU_ARGS_MAGIC */
    uint32_t abi_version;     /* PTO_DEVICE_ABI_VERSION */
    uint32_t work_kind;       /* PtoDeviceWorkKind */
    uint32_t block_dim;       /* blocks in use, 1..arch max: block_dim AIC + 2*block_dim AIV cores */
    uint64_t run_serial;      /* non-zero, different for every argument block the host
                                 builds: tells the executor a new run starts */
    uint64_t work_dev;        /* device address of the work image (kind-specific) */
    uint64_t work_bytes;
    uint64_t state_dev;       /* device address of the run's scratch state, at least
                                 pto_graph_state_bytes(task_count) for GRAPH */
    uint64_t state_bytes;
    uint64_t message_dev;     /* 0, or the device address of a NUL-terminated message
                                 (< 512 bytes) the executor writes when it records the
                                 run's first error: for KERNEL_FAULT the faulting
                                 kernel's own text (PtoKernelContext.message, < 256
                                 bytes, "" when it left none); for other errors but
                                 TIMEOUT the executor's (trb: orchestration failures);
                                 a platform may quote it */
    PtoDeviceStatus status;
    uint64_t trace_dev;       /* 0, or the device address of the run's PtoTraceHeader
                                 (CallConfig.enable_trace): every task's kernel call is
                                 recorded there */
    uint64_t bases_dev;       /* 0, or the device address of the run's base table: uint64_t
                                 [base_count], the values a relocatable graph image's
                                 arguments are relative to (PtoGraphHeader.arg_bases_offset) */
    uint64_t base_count;
} PtoAicpuArgs;

/* ---- the trace buffer (enable_trace) ----------------------------------------
   Allocated by the host at bind only when the trace is on, header written with
   count 0; the executor appends one record per kernel call (any order, slot by
   an atomic fetch-add on count) and drops the ones past capacity (count still
   counts them, so the host can tell). Timestamps are the device's
   CLOCK_MONOTONIC in ns: on the sim and the emulated driver that is the host's
   clock; a real device would need its clock mapped onto the host's. */
#define PTO_TRACE_MAGIC 0x43525450u  /* "PTRC" */

typedef struct PtoTraceHeader {
    uint32_t magic;           /* PTO_TRACE_MAGIC */
    uint32_t capacity;        /* PtoTraceRecord[capacity] follow the header */
    uint64_t count;           /* device: kernel calls recorded (may exceed capacity) */
} PtoTraceHeader;

typedef struct PtoTraceRecord {
    uint64_t task_id;
    uint64_t start_ns;        /* just before the kernel call */
    uint64_t end_ns;          /* just after it returned */
    uint32_t func_id;
    uint32_t core_id;         /* the logical core (block * 3 + lane) */
} PtoTraceRecord;

static inline uint64_t pto_trace_bytes(uint32_t capacity)
{
    return sizeof(PtoTraceHeader) + (uint64_t)capacity * sizeof(PtoTraceRecord);
}

/* ---- the graph work image (hbg) --------------------------------------------
   Built on the host in prepare. Task ids are submission order; a task's
   producers all have smaller ids, so the graph is acyclic by construction.
   Logical core id = block * 3 + lane (lane 0 the AIC, lanes 1 and 2 the AIVs). */
#define PTO_GRAPH_MAGIC 0x48505247u  /* "GRPH" */

typedef struct PtoGraphHeader {
    uint32_t magic;           /* PTO_GRAPH_MAGIC */
    uint32_t task_count;
    uint64_t tasks_offset;    /* PtoGraphTask[task_count] */
    uint64_t args_offset;     /* uint64_t[arg_total]: per task, its kernel arguments */
    uint64_t arg_sizes_offset;/* uint64_t[arg_total]: view bytes per argument (0 for scalars) */
    uint64_t fanout_offset;   /* uint32_t[fanout_total]: consumer task ids */
    uint32_t arg_total;
    uint32_t fanout_total;
    uint64_t views_offset;    /* PtoTensorView[view_total]: the kept kernel views (PtoGraphTask.view_index) */
    uint32_t view_total;
    uint32_t base_count;      /* 0: every argument is absolute; else the image is relocatable:
                                 PtoAicpuArgs.base_count must be at least this */
    uint64_t arg_bases_offset;/* base_count > 0: uint32_t[arg_total], per argument 0 (absolute)
                                 or k: the argument (and its kept view's addr) is relative to
                                 bases[k - 1] of the run's base table, to which the executor
                                 adds it (wrapping) before the kernel call. One image then
                                 serves every run of a recorded graph (hbg): a run writes its
                                 base table, not the image (docs/recorded-graphs.md) */
} PtoGraphHeader;

/* An arg_bases entry with this bit is a scalar's: its value is relocated, its
   (all-zero) kept view entry is not. */
#define PTO_GRAPH_BASE_SCALAR 0x80000000u

typedef struct PtoGraphTask {
    uint64_t kernel_addr;     /* PtoKernelFn on the device */
    uint32_t func_id;
    uint32_t core_type;       /* PtoCoreType */
    uint32_t arg_index;       /* first of arg_count entries in args / arg_sizes */
    uint32_t arg_count;
    uint32_t fanout_index;    /* first of fanout_count entries in fanout */
    uint32_t fanout_count;
    uint32_t fanin_count;     /* producers that must finish first */
    /* 0: the kernel's views follow from args / arg_sizes (a scalar's entry zero,
       a flat view's {addr = arg, ndims 0}); else 1 + the first of arg_count
       entries in the views array: the PtoKernelContext.views of a task with a
       strided (or a zero-byte flat) view, parallel to its args. */
    uint32_t view_index;
} PtoGraphTask;

/* Scratch state of a graph run (state_dev), owned by the executor during the
   run, no content required from the host: per task its remaining fan-in, then
   one ready queue per core type. */
static inline uint64_t pto_graph_state_bytes(uint32_t task_count)
{
    return (uint64_t)task_count * 3u * sizeof(uint32_t);
}

_Static_assert(sizeof(PtoDeviceStatus) == 64, "PtoDeviceStatus size");
_Static_assert(sizeof(PtoAicpuArgs) == 152, "PtoAicpuArgs size");
_Static_assert(sizeof(PtoTraceHeader) == 16, "PtoTraceHeader size");
_Static_assert(sizeof(PtoTraceRecord) == 32, "PtoTraceRecord size");
_Static_assert(offsetof(PtoAicpuArgs, status) == 64, "PtoAicpuArgs.status");
_Static_assert(sizeof(PtoGraphHeader) == 72, "PtoGraphHeader size");
_Static_assert(sizeof(PtoGraphTask) == 40, "PtoGraphTask size");

#endif
