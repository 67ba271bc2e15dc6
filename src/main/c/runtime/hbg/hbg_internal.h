/*
 * The hbg runtime's own types: a registered callable and the per-slot
 * scratch its binds reuse. Internal to runtime/hbg (and its native tests).
 */
#ifndef PTORUN_HBG_INTERNAL_H
#define PTORUN_HBG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "format/chip_callable.h"
#include "ptorun/pto_orchestration.h"
#include "ptorun/pto_runtime_c_api.h"
#include "runtime/hbg/hbg_bridge.h"
#include "runtime/hbg/hbg_graph.h"
#include "runtime/hbg/hbg_recording.h"
#include "runtime/run_tensors.h"
#include "runtime/runtime.h"
#include "runtime/runtime_registry.h"

/* Everything one bind in one pipeline slot builds, kept for the next bind in
 * that slot so a run allocates nothing once the slot has seen its largest run.
 * Lent to one run from bind to unbind (runtime.h), so nothing here is shared. */
struct RuntimeSlotScratch {
    const RuntimeRun *holder; /* the run it is lent to; NULL when free */
    RunTensorTable tensors;   /* staged ones live in the bank's GM heap for the run */
    ChipStorageTaskArgs *dev_args; /* the run's args with device addresses: what the orchestration sees */
    uint64_t heap_base;       /* the bank's GM heap the run's staged tensors and locals are placed in */
    uint64_t local_base;      /* the run's local heap in the GM heap: [local_base, local_end) */
    uint64_t local_next;      /* alloc_tensor's bump pointer; scope_end moves it back to the scope's mark */
    uint64_t local_end;
    uint64_t local_high;      /* the highest local_next of the run: bytes below it may be handed out again */
    uint64_t local_peak;      /* local_high - local_base after the run's orchestration (tests read it) */
    HbgGraph graph;
    HbgBridge bridge;
    uint8_t *image;           /* host build buffer of the device image */
    size_t image_cap;
    uint8_t *mirror;          /* host staging mirror of the staged tensors where the GM heap has no host view */
    size_t mirror_cap;
    char output_prefix[PTO_OUTPUT_PREFIX_BYTES]; /* the bound run's, for its diagnostics */
    uint64_t bases[1 + PTO_MAX_TENSOR_ARGS + PTO_MAX_SCALAR_ARGS]; /* the run's base table (HbgBases) */
    uint32_t base_count;
};

struct RuntimeCallable {
    CallableCopy copy;        /* first: the shared registration's part (runtime_registry.h) */
    uint64_t program_local_bytes; /* program: its ALLOC_TENSORs, each rounded up to HBG_LOCAL_ALIGN */
    uint64_t program_tasks;   /* program: the tasks it submits (chip_program_task_count) */
    GraphRecorder *recorder;  /* program: its recorded graph (runtime/graph_recorder.h) */
    void *orch_library;       /* library orchestration: the loaded library (refcounted per device) */
    PtoOrchestrationFn orch_entry; /* ... and its entry */
};
_Static_assert(offsetof(struct RuntimeCallable, copy) == 0, "the shared registration's part comes first");

/* Locals (alloc_tensor) start on this boundary, like staged tensors. */
#define HBG_LOCAL_ALIGN 64u

/* Runs the callable's orchestration (the program interpreter, or the library
 * entry) on the host with hbg's PtoOrchApi over `scratch`: tasks go to scratch->graph,
 * alloc_tensor bumps its local heap (scope_end frees the scope's part), read/write_tensor go through scratch->bridge
 * (open while this runs). The orchestration gets a session handle, valid on
 * this thread during this call only (orch/orch_session.h). An error of a
 * submit, alloc_tensor or scope call fails the orchestration even when a
 * library ignores it, and later such calls are refused with it; a library
 * returning non-zero or leaving scopes open is PTO_ERR_ORCHESTRATION. */
int hbg_orchestrate(const RuntimeCallable *c, RuntimeSlotScratch *scratch);

#endif
