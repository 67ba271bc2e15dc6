/*
 * The hbg runtime's own types: a registered callable and the per-bank
 * workspace its binds reuse. Internal to runtime/hbg (and its native tests).
 */
#ifndef PTORUN_HBG_INTERNAL_H
#define PTORUN_HBG_INTERNAL_H

#include <stdint.h>

#include "format/chip_callable.h"
#include "ptorun/pto_orchestration.h"
#include "ptorun/pto_runtime_c_api.h"
#include "runtime/hbg/hbg_bridge.h"
#include "runtime/hbg/hbg_graph.h"
#include "runtime/runtime.h"

/* One argument tensor as a bound run sees it. */
typedef struct HbgTensor {
    uint64_t host;            /* the caller's buffer (child memory: 0) */
    uint64_t dev;             /* device address of its bytes */
    uint64_t size;            /* bytes */
    uint8_t direction;        /* from the signature */
    uint8_t staged;           /* lives in the bank's GM heap for this run */
} HbgTensor;

/* Everything one bind in one bank builds, kept for the next bind in that bank
 * so a run allocates nothing once the workspace has seen its largest run. A
 * bank holds at most one run from bind to validate, so nothing here is shared. */
typedef struct HbgWorkspace {
    HbgTensor tensors[PTO_MAX_TENSOR_ARGS];
    uint32_t tensor_count;
    ChipStorageTaskArgs *dev_args; /* the run's args with device addresses: what the orchestration sees */
    uint64_t local_base;      /* the run's local heap in the GM heap: [local_base, local_end) */
    uint64_t local_next;      /* alloc_tensor's bump pointer */
    uint64_t local_end;
    HbgGraph graph;
    HbgBridge bridge;
    uint8_t *image;           /* host build buffer of the device image */
    size_t image_cap;
    uint8_t *mirror;          /* host staging mirror of the staged tensors where the GM heap has no host view */
    size_t mirror_cap;
    char output_prefix[PTO_OUTPUT_PREFIX_BYTES]; /* the bound run's, for its diagnostics */
} HbgWorkspace;

typedef struct HbgKernel {
    uint64_t addr;            /* resolved kernel address on the device */
    uint32_t func_id;
    uint32_t core_type;
} HbgKernel;

struct RuntimeCallable {
    uint8_t *bytes;           /* a private copy of the caller's callable */
    ChipCallableView view;    /* over `bytes` */
    void *upload_dev;         /* the device copy (refcounted by the platform) */
    HbgKernel kernels[PTO_CALLABLE_MAX_CHILDREN]; /* per child */
    uint64_t program_local_bytes; /* program: its ALLOC_TENSORs, each rounded up to HBG_LOCAL_ALIGN */
    uint64_t program_tasks;   /* program: the tasks it submits (chip_program_task_count) */
    void *orch_library;       /* library orchestration: the loaded library (refcounted per device) */
    PtoOrchestrationFn orch_entry; /* ... and its entry */
    HbgWorkspace *workspaces[PTO_PIPELINE_MAX_DEPTH]; /* per arena bank */
};

/* Locals (alloc_tensor) start on this boundary, like staged tensors. */
#define HBG_LOCAL_ALIGN 64u

/* The workspace binds of `c` use in `bank` (tests inspect its bridge). */
HbgWorkspace *hbg_workspace(const RuntimeCallable *c, uint32_t bank);

/* Runs the callable's orchestration (the program interpreter, or the library
 * entry) on the host with hbg's PtoOrchApi over `ws`: tasks go to ws->graph,
 * alloc_tensor bumps ws's local heap, read/write_tensor go through ws->bridge
 * (open while this runs). The orchestration gets a session handle, valid on
 * this thread during this call only (orch/orch_session.h). An error of a
 * submit, alloc_tensor or scope call fails the orchestration even when a
 * library ignores it, and later such calls are refused with it; a library
 * returning non-zero or leaving scopes open is PTO_ERR_ORCHESTRATION. */
int hbg_orchestrate(const RuntimeCallable *c, HbgWorkspace *ws);

#endif
