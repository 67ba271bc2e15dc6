/*
 * Sub-graphs (pto_orchestration.h, subgraph_submit; docs/orchestration.md,
 * "Sub-graphs"): the one implementation behind both runtimes' subgraph_submit,
 * compiled into the host libraries (hbg) and the AICPU image (trb) like the
 * program interpreter.
 *
 * Recording. The first submission of a key in a run calls the body against
 * this layer's own PtoOrchApi, in an orchestration session of its own, with
 * the real boundary. Each task is kept as its func_id and its params relative
 * to what they are made of: a boundary view plus an offset, a boundary scalar,
 * the invocation's local block plus an offset (alloc_tensor inside the body
 * bumps through that block, SUBGRAPH_LOCAL_ALIGN-aligned, a body scope's end
 * moving the bump back), or a constant. The dependencies between the
 * sub-graph's tasks are inferred as the runtimes infer them between tasks:
 * a task depends on every earlier access sharing a byte with one of its views
 * that is a write, or that it writes; a write covering an earlier access
 * supersedes it. Nothing of the runtime is touched while recording.
 *
 * Invocation (every submission, the first included, so a recorded and a
 * replayed invocation are the same tasks and edges):
 *   scope_begin; block = alloc_tensor(local bytes)     -- when the body allocated
 *                                                         (1 byte when only empty tensors)
 *   entry: SUBGRAPH_BOUNDARY_FUNC over the boundary views and the block,
 *          dependencies inferred and its accesses recorded (INFER | RECORD)
 *   each task, bound: its recorded producers in the invocation, or the entry
 *          when it has none; nothing inferred, nothing recorded
 *   exit:  SUBGRAPH_BOUNDARY_FUNC over the same views, after the entry and
 *          every task no other task depends on; its accesses recorded (RECORD)
 *   scope_end                                         -- when it opened one
 * so the invocation waits for what its boundary depends on, later tasks
 * touching the boundary wait for all of it, and reused block bytes are
 * ordered after the exit.
 *
 * A recording belongs to its run: it lives in the orchestrating image's heap
 * (the host's for hbg, the AICPU's for trb) from its first submission until
 * the run's orchestration ends (subgraph_table_clear). Past the run's budget
 * (SUBGRAPH_RUN_BUDGET_BYTES), a sub-graph is recorded for its submission and
 * dropped after it: every submission of that key records it again.
 *
 * One thread: a table is its run's orchestrator's own.
 */
#ifndef PTORUN_SUBGRAPH_H
#define PTORUN_SUBGRAPH_H

#include <stdint.h>

#include "ptorun/pto_orchestration.h"

/* The func_id of an invocation's entry and exit tasks: above every callable's
   func_ids (PTO_CALLABLE_MAX_FUNC_ID); they run nothing (PTO_KERNEL_ADDR_NONE). */
#define SUBGRAPH_BOUNDARY_FUNC 0xFFFFFFFFu

#define SUBGRAPH_TASK_INFER 1u   /* dependencies on earlier tasks inferred from the views */
#define SUBGRAPH_TASK_RECORD 2u  /* accesses recorded: later tasks' inference sees them */

#define SUBGRAPH_LOCAL_ALIGN 64u /* alloc_tensor inside a body; the program walk sizes the block with it */
#define SUBGRAPH_MAX_TASKS 65536u
#define SUBGRAPH_RUN_BUDGET_BYTES (64ull << 20)

/* The runtime's submit for an invocation's tasks. flags: SUBGRAPH_TASK_*.
   preds: handles this function returned earlier in the same invocation, each
   once, the task's explicit producers. origins: each param's origin
   (orch/program_orchestration.h), NULL when unknown (a runtime recording the
   whole run then does not record it). Writes the task's handle to *handle.
   An error is returned unchanged by subgraph_invoke. */
typedef int (*SubgraphSubmitFn)(void *run, uint32_t func_id, const PtoTaskParam *params, uint32_t n,
                                const uint64_t *preds, uint32_t n_preds, uint32_t flags, const uint32_t *origins,
                                uint64_t *handle);

struct SubgraphRecording;

typedef struct SubgraphTable {
    struct SubgraphRecording *first;
    uint64_t bytes;               /* held by the run's recordings */
    uint64_t budget;              /* the most they may hold; 0: SUBGRAPH_RUN_BUDGET_BYTES (tests set less) */
} SubgraphTable;

/* One subgraph_submit of the run `run` (the runtime's state; `api`/`orch` the
   public api and the run's session handle, for scope_begin, alloc_tensor and
   scope_end). boundary_origins: each boundary param's origin, or NULL.
   Failures are recorded with pto_fail: PTO_ERR_ORCHESTRATION for a bad
   boundary or body, the body's or the runtime's error unchanged. */
int subgraph_invoke(SubgraphTable *table, SubgraphSubmitFn submit, void *run, const PtoOrchApi *api, void *orch,
                    uint32_t key, PtoSubgraphBody body, void *ctx, const PtoTaskParam *boundary, uint32_t n,
                    const uint32_t *boundary_origins);

/* Frees the run's recordings (the end of its orchestration, whatever its outcome). */
void subgraph_table_clear(SubgraphTable *table);

#endif
