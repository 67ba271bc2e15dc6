/*
 * The trb (tensormap_and_ringbuffer) part of the device ABI: what the trb host
 * half hands the AICPU image for a PTO_DEVICE_WORK_TRB run
 * (device/pto_device_abi.h), and the layout of the shared runtime image both
 * sides agree on.
 *
 * Two regions:
 *  - the **runtime image** (PtoTrbImage, in bank 0's runtime arena): built once
 *    per ring sizing by the host and reused run after run (the prebuilt image
 *    cache). It names the rings' regions in bank 0's GM shared memory (task
 *    slots, dependency pools, ready queues, tensor map, scratch) and GM heap
 *    (one heap per ring) by device address + byte offsets. Its content depends
 *    on the ring sizing only; the device resets what it uses at every run.
 *  - the **work block** (PtoTrbWork, right after the PtoAicpuArgs at args_dev,
 *    in the pipeline slot's retained staging buffer): what this run runs — the
 *    orchestration, the callable's kernels, the run's arguments — and what the
 *    device reports back beyond the status block (message, task count).
 *
 * Everything is little-endian LP64, naturally aligned. The slot, dependency
 * node and tensor-map entry layouts are the device's own; they are here so the
 * host can size their regions.
 */
#ifndef PTORUN_PTO_TRB_ABI_H
#define PTORUN_PTO_TRB_ABI_H

#include <stddef.h>
#include <stdint.h>

#include "ptorun/chip_callable.h"
#include "ptorun/pto_runtime_c_api.h"
#include "ptorun/pto_tensor.h"

#define PTO_TRB_IMAGE_MAGIC 0x42525450u   /* "PTRB" */
#define PTO_TRB_IMAGE_VERSION 2u
#define PTO_TRB_WORK_MAGIC 0x4B525754u    /* "TWRK" */
#define PTO_TRB_DEP_GRAPH_MAGIC 0x47445254u /* "TRDG" */
#define PTO_TRB_RECORDING_MAGIC 0x43455254u /* "TREC" */

#define PTO_TRB_RINGS PTO_TRB_RING_COUNT  /* ring r serves scope depth r; deeper scopes use ring 3 */
#define PTO_TRB_MAX_SCOPE_DEPTH 64u       /* nesting a user orchestration may reach */
#define PTO_TRB_HEAP_ALIGN 64u            /* alloc_tensor results are aligned to this */
#define PTO_TRB_STAGING_ALIGN 1024u       /* slices of the retained staging buffer */
#define PTO_TRB_MIN_TENSOR_MAP 4096u      /* tensor-map entries, at least */
#define PTO_TRB_MESSAGE_BYTES 512u

/* A ring's sizing and where its regions are. */
typedef struct PtoTrbRingLayout {
    uint64_t task_window;     /* task slots, a power of two >= 4 */
    uint64_t heap_bytes;      /* >= 1024 */
    uint64_t dep_pool;        /* dependency nodes, >= 4 */
    uint64_t slots_offset;    /* GM SM: PtoTrbSlot[task_window] */
    uint64_t nodes_offset;    /* GM SM: PtoTrbDepNode[dep_pool] */
    uint64_t heap_offset;     /* GM heap: heap_bytes */
    uint64_t view_pool;       /* kernel views, >= pto_trb_min_view_pool(): the views of the tasks
                                 that keep theirs (PtoTrbSlot.view_index), in submission order */
    uint64_t views_offset;    /* GM SM: PtoTensorView[view_pool] */
} PtoTrbRingLayout;

/* The runtime image (bank 0's runtime arena). */
typedef struct PtoTrbImage {
    uint32_t magic;           /* PTO_TRB_IMAGE_MAGIC */
    uint32_t version;         /* PTO_TRB_IMAGE_VERSION */
    uint64_t sizing_hash;     /* FNV-1a 64 of the sizing key it was built for */
    uint64_t sm_dev, sm_bytes;      /* bank 0's GM shared memory */
    uint64_t heap_dev, heap_bytes;  /* bank 0's GM heap */
    uint64_t ready_offset;    /* GM SM: uint64_t[2][ready_capacity], one FIFO per core type */
    uint64_t ready_capacity;  /* sum of the task windows: every live task fits */
    uint64_t map_offset;      /* GM SM: PtoTrbAccess[map_entries] */
    uint64_t map_entries;
    uint64_t map_views_offset;/* GM SM: PtoTensorView[map_views], the strided views of map entries */
    uint64_t map_views;
    uint64_t scratch_offset;  /* GM SM: uint64_t[scratch_entries], the orchestrator's */
    uint64_t scratch_entries; /* largest dependency pool + 1 */
    PtoTrbRingLayout rings[PTO_TRB_RINGS];
} PtoTrbImage;

/* A kernel of the run's callable, sorted by func_id. */
typedef struct PtoTrbKernel {
    uint64_t addr;            /* PtoKernelFn on the device (the upload's resolved_addr) */
    uint32_t func_id;
    uint32_t core_type;       /* PtoCoreType */
} PtoTrbKernel;

/* The work block of one run (after the PtoAicpuArgs at args_dev). */
typedef struct PtoTrbWork {
    uint32_t magic;           /* PTO_TRB_WORK_MAGIC */
    uint32_t orchestration_kind; /* PtoOrchestrationKind */
    uint64_t image_dev;       /* the PtoTrbImage */
    uint64_t args_dev;        /* the run's ChipStorageTaskArgs, tensor addrs on the device */
    /* PROGRAM: the program (in the callable upload); LIBRARY: the library image */
    uint64_t orchestration_dev;
    uint64_t orchestration_bytes;
    uint64_t orchestration_hash; /* LIBRARY: FNV-1a 64 of the image (the device's load cache key) */
    uint64_t entry_dev;       /* LIBRARY: the entry symbol (not NUL-terminated) */
    uint32_t entry_length;
    uint32_t signature_length;
    uint64_t signature_dev;   /* the callable's PtoArgDirection bytes */
    uint64_t dep_graph_dev;   /* PtoTrbDepGraph to fill, 0 = off */
    uint32_t kernel_count;    /* <= PTO_CALLABLE_MAX_CHILDREN */
    uint32_t record_mode;     /* PTO_TRB_RECORD_*: a program's recorded graph (docs/recorded-graphs.md, trb) */
    PtoTrbKernel kernels[PTO_CALLABLE_MAX_CHILDREN];
    uint64_t recording_dev;   /* RECORD, REPLAY: the PtoTrbRecording */
    /* RECORD: the run's own tensor-map pools, so the map never forgets an access and the
       recorded producers are exact: PtoTrbAccess[record_map_entries], then
       PtoTensorView[record_map_views], then uint64_t[recording task capacity] (each task's ref) */
    uint64_t record_scratch_dev;
    uint64_t record_map_entries, record_map_views;
    /* WALK: the recording compiled into a relocatable graph image (PtoGraphHeader,
       device/pto_device_abi.h) of walk_bytes, its scheduling state
       (pto_graph_state_bytes of its tasks), and the bytes of its locals, placed from
       the GM heap's start (docs/recorded-graphs.md, trb) */
    uint64_t walk_dev, walk_bytes, walk_state_dev, walk_state_bytes, walk_locals_bytes;
    /* written by the device */
    uint64_t tasks_submitted;
    int32_t orchestration_code; /* what a failing orchestration returned */
    uint32_t reserved1;
    char message[PTO_TRB_MESSAGE_BYTES]; /* the first orchestration error, NUL-terminated */
    uint64_t heap_peak[PTO_TRB_RINGS]; /* per ring: the most heap bytes in use at once (internal tests read it) */
    uint64_t orchestration_ns;  /* the orchestrator thread's CPU time (CLOCK_THREAD_CPUTIME_ID) from
                                   the orchestration's start to its return (interpreting, or replaying
                                   a recording; ready tasks it runs while waiting for room included) */
} PtoTrbWork;

/* PtoTrbWork.record_mode */
enum {
    PTO_TRB_RECORD_OFF = 0,   /* interpret, record nothing (a library, or no recording for the run) */
    PTO_TRB_RECORD = 1,       /* interpret and record the graph into recording_dev */
    PTO_TRB_REPLAY = 2,       /* replay recording_dev instead of interpreting */
    PTO_TRB_WALK = 3,         /* walk the recording's compiled graph (walk_dev): no orchestration, no rings */
};

/* The base table of a WALK run (the graph image's arg_bases, 1-based): argument
   tensor i and scalar j at their param origins (PTO_PARAM_ORIGIN_TENSOR(i) and
   _SCALAR(j), orch/program_orchestration.h), then the locals' block, the GM heap's
   start: every local is placed in it at the offset compilation gave it. */
#define PTO_TRB_WALK_BASE_LOCALS (1u + PTO_MAX_TENSOR_ARGS + PTO_MAX_SCALAR_ARGS)
#define PTO_TRB_WALK_BASES PTO_TRB_WALK_BASE_LOCALS

/* A recorded program graph (docs/recorded-graphs.md, trb): the header, then
 * `capacity` uint64_t words of operations in orchestration order. Each begins
 * with a word whose low byte is its PTO_TRB_OP_*:
 *   SCOPE_BEGIN  w0 = op | mode << 8
 *   SCOPE_END    w0 = op
 *   ALLOC        w0 = op | local << 8; w1 = bytes
 *   TASK         w0 = op | n << 8 | after << 16 | func_id << 32; w1 = producers;
 *                per param: direction | has_view << 8 | origin << 32 (PTO_PARAM_ORIGIN_*), the
 *                value relative to its origin's base, bytes, and with has_view its PtoTensorView
 *                (12 words, addr 0); then per producer (ascending task id): task id, ref
 * Written by the device in a RECORD run; read by the device in a REPLAY run. */
typedef struct PtoTrbRecording {
    uint32_t magic;           /* PTO_TRB_RECORDING_MAGIC */
    uint32_t complete;        /* device: 1 once a RECORD run's orchestration succeeded with every
                                 operation recorded; 0 = never replay it */
    uint64_t capacity;        /* words after the header */
    uint64_t task_capacity;   /* tasks it may hold (the program's task count) */
    uint64_t used;            /* device: words written */
    uint64_t task_count;      /* device: tasks recorded */
} PtoTrbRecording;

enum { PTO_TRB_OP_SCOPE_BEGIN = 1, PTO_TRB_OP_SCOPE_END = 2, PTO_TRB_OP_ALLOC = 3, PTO_TRB_OP_TASK = 4 };
#define PTO_TRB_VIEW_WORDS (sizeof(PtoTensorView) / sizeof(uint64_t))

/* The dependency graph the device collects for enable_dep_graph: per task its
 * func_id, and every (producer, consumer) edge; task ids are submission order. */
typedef struct PtoTrbDepGraph {
    uint32_t magic;           /* PTO_TRB_DEP_GRAPH_MAGIC */
    uint32_t reserved;
    uint64_t task_capacity;   /* uint32_t func_ids[task_capacity] follow the header */
    uint64_t edge_capacity;   /* then uint32_t edges[2 * edge_capacity]: producer, consumer */
    uint64_t task_count;      /* written by the device */
    uint64_t edge_count;
} PtoTrbDepGraph;

static inline uint64_t pto_trb_dep_graph_bytes(uint64_t tasks, uint64_t edges)
{
    return sizeof(PtoTrbDepGraph) + tasks * sizeof(uint32_t) + edges * 2 * sizeof(uint32_t);
}

/* ---- device-owned layouts (sized by the host) ------------------------------ */

/* One task slot of a ring. */
typedef struct PtoTrbSlot {
    uint64_t task_id;         /* submission order over the whole run */
    uint64_t local;           /* ring-local submission index this slot holds */
    uint64_t kernel_addr;
    uint64_t fanout_head;     /* first PtoTrbDepNode ref of its consumers, 0 = none */
    uint32_t func_id;
    uint32_t fanin_left;      /* producers not finished yet */
    uint32_t state;           /* device-private */
    uint16_t arg_count;
    uint8_t core_type;
    uint8_t reserved;
    uint16_t release[PTO_TRB_RINGS]; /* heap release record per ring (index + 1), 0 = none */
    uint64_t view_end;        /* the ring's view-pool position after this task's views: the
                                 pool is free up to here once the task retires */
    uint32_t view_index;      /* 0: the kernel's views follow from args / arg_sizes (a scalar's
                                 entry zero, a flat view's {addr = arg, ndims 0}); else 1 + the
                                 first of arg_count entries in the ring's view pool */
    uint32_t reserved1;
    uint64_t args[PTO_MAX_TASK_PARAMS];
    uint64_t arg_sizes[PTO_MAX_TASK_PARAMS];
} PtoTrbSlot;

/* A consumer waiting on a producer: a node of the producer's fan-out list,
 * taken from the consumer's ring's dependency pool. */
typedef struct PtoTrbDepNode {
    uint64_t next;            /* next node ref, 0 = end */
    uint64_t consumer;        /* ring-local ref of the consumer: (local << 2) | ring */
} PtoTrbDepNode;

/* One tensor-map entry: an access of a task to a view spanning [lo, hi). */
typedef struct PtoTrbAccess {
    uint64_t lo, hi;
    uint64_t task_id;
    uint64_t task;            /* ring-local ref: (local << 2) | ring */
    uint32_t next;            /* next entry of its list (index + 1), 0 = end */
    uint32_t view;            /* 0: the flat view [lo, hi); else its strided view in the
                                 map's view pool (index + 1) */
} PtoTrbAccess;

/* A ring's view pool holds at least two tasks' worth of views, so a task's
   block (taken whole, never split over the pool's end) always fits an empty pool. */
static inline uint64_t pto_trb_min_view_pool(void)
{
    return 2u * PTO_MAX_TASK_PARAMS;
}

_Static_assert(sizeof(PtoTrbRingLayout) == 64, "PtoTrbRingLayout size");
_Static_assert(sizeof(PtoTrbImage) == 112 + 4 * 64, "PtoTrbImage size");
_Static_assert(sizeof(PtoTrbKernel) == 16, "PtoTrbKernel size");
_Static_assert(sizeof(PtoTrbDepGraph) == 40, "PtoTrbDepGraph size");
_Static_assert(sizeof(PtoTrbRecording) == 40, "PtoTrbRecording size");
_Static_assert(sizeof(PtoTrbSlot) == 72 + 16 * PTO_MAX_TASK_PARAMS, "PtoTrbSlot size");
_Static_assert(sizeof(PtoTrbDepNode) == 16, "PtoTrbDepNode size");
_Static_assert(sizeof(PtoTrbAccess) == 40, "PtoTrbAccess size");

#endif
