/*
 * The trb executor's orchestration API (PtoOrchApi on the device):
 * trb_orch_api.c (the table, alloc_tensor, scopes, read/write_tensor) and
 * trb_submit.c (submit, submit_after and a sub-graph's tasks), with the helpers every call shares. Called on the
 * orchestrator's thread, unlocked; a call takes aicpu_device.lock where it
 * touches scheduler state.
 */
#ifndef PTORUN_TRB_ORCH_API_H
#define PTORUN_TRB_ORCH_API_H

#include <stdint.h>

#include "device/aicpu/trb_run.h"
#include "ptorun/pto_orchestration.h"

extern const PtoOrchApi trb_orch_api;

/* The run behind an api call's handle: NULL with *rc set when the handle is
   not this thread's live orchestration session (orch/orch_session.h).
   Releases a task the lone-task rule kept (trb_scheduler.h). */
TrbRun *trb_api_run(void *orch, const char *fn, int32_t *rc);

/* Latches the run's orchestration error (the first one) with its message,
   recorded with pto_fail so the interpreter can prefix it too. */
int32_t trb_api_fail(TrbRun *t, int32_t code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* trb_api_run for a sticky call (submit, alloc_tensor, scope_begin/end): also
   NULL, with *rc the earlier error, once one of them failed (a stopped run is
   noticed where the call takes the lock). */
TrbRun *trb_api_begin(void *orch, const char *fn, int32_t *rc);

/* A replay's recorded tasks are wired in batches under one hold of the device's
   lock (trb_recording.h): a task's wiring is a few stores, and taking the lock
   from the executing threads for each costs more than that. A batch ends after
   TRB_REPLAY_BATCH tasks (completions wait that long at most), before any other
   call of the orchestration, and when the replay ends; then the participations
   its tasks asked for are requested at once. */
#define TRB_REPLAY_BATCH 64u

typedef struct TrbReplayBatch {
    int held;                 /* the device's lock is held for the batch */
    uint32_t count;           /* tasks wired in this hold */
    uint32_t ask;             /* participations they asked for */
} TrbReplayBatch;

/* A recorded task (trb_recording.h): its params relocated, its producers
   (dep_count (task id, ref) pairs, ascending) as recorded; no tensor-map work;
   wired in batch `b` (its lock taken when not held). `after`: it was a
   submit_after (messages name the call). */
int32_t trb_submit_replayed(TrbRun *t, TrbReplayBatch *b, uint32_t func_id, const PtoTaskParam *params, uint32_t n,
                            int after, const uint64_t *deps, uint32_t dep_count);

/* Ends batch `b`, if one is held: releases the lock, asks for its participations. */
void trb_replay_batch_end(TrbRun *t, TrbReplayBatch *b);

/* The runtime's submit for a sub-graph invocation's tasks (a SubgraphSubmitFn,
   orch/subgraph.h; run: the TrbRun): the one path of submit, with the
   producers the flags and `preds` say and the accesses recorded or not;
   SUBGRAPH_BOUNDARY_FUNC is a task that runs nothing (PTO_KERNEL_ADDR_NONE,
   AIV). *handle: its task id. The run's whole-run recording is lost. */
int trb_subgraph_task(void *run, uint32_t func_id, const PtoTaskParam *params, uint32_t n, const uint64_t *preds,
                      uint32_t n_preds, uint32_t flags, const uint32_t *origins, uint64_t *handle);

int trb_api_submit(void *orch, uint32_t func_id, const PtoTaskParam *params, uint32_t n);
int trb_api_submit_after(void *orch, uint32_t func_id, const PtoTaskParam *params, uint32_t n, const uint32_t *after,
                         uint32_t n_after);

#endif
