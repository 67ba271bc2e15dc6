/*
 * A prebuilt task graph being run (device/pto_device_abi.h, PtoGraphHeader):
 * hbg's work kind (graph_executor.c) and a trb run that walks its recorded
 * graph (trb_walk.h) schedule one the same way — a ready task goes to a free
 * logical core of its type, oldest first; its completion decrements its
 * consumers' fan-in; the first kernel error is recorded and starts no further
 * task. The state is guarded by aicpu_device.lock once scheduling began.
 */
#ifndef PTORUN_GRAPH_RUN_H
#define PTORUN_GRAPH_RUN_H

#include <stdint.h>

#include "device/aicpu/aicpu_device.h"
#include "device/pto_device_abi.h"

typedef struct GraphRun {
    /* the work image, immutable during the run */
    const PtoGraphTask *tasks;
    const uint64_t *task_args;
    const uint64_t *task_arg_sizes;
    const PtoTensorView *views;
    const uint32_t *fanout;
    uint32_t task_count;
    /* a relocatable image (recorded graph): per argument its base (0 none), and the run's bases */
    const uint32_t *arg_bases;
    const uint64_t *bases;

    /* scheduling */
    uint32_t *fanin_left;         /* per task, in the run's scratch state */
    uint32_t *ready[AICPU_CORE_TYPES];  /* FIFO per core type; each task enters once */
    uint32_t ready_head[AICPU_CORE_TYPES], ready_tail[AICPU_CORE_TYPES];
} GraphRun;

/* Checks the image `h` of `limit` bytes (every task well-formed, every edge
   pointing forward, each fan-in equal to its incoming edges: a graph that
   passes cannot overrun or deadlock) and points g at it, at `state` of
   state_bytes for its scheduling and at `bases` (base_count of them) for a
   relocatable image; then queues the tasks no producer holds back. 0 when
   anything is malformed. */
int graph_run_bind(GraphRun *g, const PtoGraphHeader *h, uint64_t limit, uint32_t *state, uint64_t state_bytes,
                   const uint64_t *bases, uint64_t base_count);

/* A participation, with the lock held: runs ready tasks until the run has
   ended (PTO_AICPU_DONE) or this participation idles (PTO_AICPU_IDLE). The
   run ends when its last task completed, or when nothing runs any more after
   a stop. */
int32_t graph_run_schedule(AicpuDevice *d, GraphRun *g, uint32_t thread_count, const PtoAicpuHooks *hooks);

#endif
