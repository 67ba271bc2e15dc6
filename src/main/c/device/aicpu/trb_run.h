/*
 * The state of the device's trb run (PTO_DEVICE_WORK_TRB), shared by the trb
 * executor's parts: the run's blocks (trb_executor.c), its rings
 * (trb_rings.h), the scheduler (trb_scheduler.h) and the orchestration API
 * (trb_orch_api.h).
 *
 * Locking: aicpu_device.lock guards the scheduler state (slots' progress,
 * ready queues, dependency pools, heap accounting, counters). The tensor map,
 * the scope depth, the dependency-graph buffer and the kept task are the
 * orchestrator's alone. A task's `state` is published with release ordering
 * so the orchestrator may read it without the lock.
 */
#ifndef PTORUN_TRB_RUN_H
#define PTORUN_TRB_RUN_H

#include <pthread.h>
#include <stdint.h>

#include "device/aicpu/aicpu_device.h"
#include "device/aicpu/graph_run.h"
#include "device/aicpu/trb_rings.h"
#include "device/aicpu/trb_tensor_map.h"
#include "device/pto_trb_abi.h"
#include "orch/subgraph.h"
#include "ptorun/chip_callable.h"

typedef struct TrbRun {
    /* the run, fixed at start */
    PtoTrbWork *work;
    const PtoTrbImage *image;
    ChipStorageTaskArgs *args;
    const PtoTrbKernel *kernels;
    uint32_t kernel_count;

    /* scheduler state (lock) */
    TrbRing rings[PTO_TRB_RINGS];
    uint64_t *ready[AICPU_CORE_TYPES];
    uint64_t ready_capacity, ready_head[AICPU_CORE_TYPES], ready_tail[AICPU_CORE_TYPES];
    uint64_t submitted;       /* tasks submitted: the next task id */
    int orch_claimed, orch_finished, orch_waiting;
    uint32_t orch_thread_count;
    const PtoAicpuHooks *orch_hooks;

    /* the orchestrator's own */
    TrbTensorMap map;
    uint32_t depth;
    uint32_t manual_depth;    /* the depth of the outermost open MANUAL scope, 0 none */
    uint32_t scope_mode[PTO_TRB_MAX_SCOPE_DEPTH + 1];  /* per open depth: PtoScopeMode */
    uint64_t scope_first[PTO_TRB_MAX_SCOPE_DEPTH + 1]; /* per open depth: its first task id (ordinal 0) */
    uint64_t *deps;           /* producers of the task being submitted: (task_id, ref) pairs, ascending */
    uint64_t deps_capacity;
    uint32_t dep_count;
    PtoTrbDepGraph *graph;    /* NULL when off */
    uint32_t *graph_func_ids, *graph_edges;
    int32_t api_error;        /* the first failing api call's code, 0 none */
    int kept;                 /* a lone ready task was kept for this thread (trb_scheduler.h) */
    uint64_t kept_ref;
    SubgraphTable subgraphs;  /* the run's recorded sub-graphs, cleared when its orchestration ends */

    /* a program's recorded graph, the orchestrator's own (trb_recording.h) */
    uint32_t record_mode;     /* PTO_TRB_RECORD_* */
    int recording_ok;         /* RECORD: every operation so far is in the recording */
    PtoTrbRecording *recording; /* RECORD, REPLAY; NULL when off */
    uint64_t *record_refs;    /* RECORD: each recorded task's ref, by task id */
    uint32_t record_origins[PTO_MAX_TASK_PARAMS]; /* RECORD: the interpreter's origins of the call */
    uint64_t locals[PTO_PROGRAM_MAX_LOCALS]; /* RECORD, REPLAY: each local's address in this run */

    /* WALK (trb_walk.h): the compiled graph, scheduled once `walking` is set (lock) */
    GraphRun walk;
    uint64_t walk_bases[PTO_TRB_WALK_BASES];
    int walking;
} TrbRun;

extern TrbRun trb_run;

/* A task is named (local << 2) | ring. */
static inline uint64_t trb_task_ref(uint64_t local, uint32_t ring)
{
    return (local << 2) | ring;
}

static inline PtoTrbSlot *trb_slot_of(TrbRun *t, uint64_t ref)
{
    TrbRing *r = &t->rings[ref & 3u];
    return &r->slots[(ref >> 2) & (r->window - 1)];
}

/* The ref of a producer known to have finished whose slot holds a later task
   already (an explicit predecessor of submit_after, trb_submit.c). */
#define TRB_REF_FINISHED UINT64_MAX

/* A task has finished when its slot moved on to a later task or says so. */
static inline int trb_task_done(TrbRun *t, uint64_t ref)
{
    if (ref == TRB_REF_FINISHED)
        return 1;
    const PtoTrbSlot *s = trb_slot_of(t, ref);
    return s->local != (ref >> 2) || trb_task_state(s) == TASK_COMPLETED;
}

#endif
