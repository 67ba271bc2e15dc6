/*
 * A program's recorded graph on the device (docs/recorded-graphs.md, trb; the
 * layout: PtoTrbRecording, device/pto_trb_abi.h).
 *
 * RECORD: the program interpreter runs as always, naming each param's origin
 * (pto_program_orchestrate_origins) and each alloc_tensor's local; the api
 * appends every scope, allocation and task to the recording: a task's params
 * relative to their origins' bases in this run (argument tensor addresses,
 * scalars, the addresses alloc_tensor returned for the locals) and the
 * producers collect_deps found. The tensor map runs on the run's own pools
 * (PtoTrbWork.record_scratch_dev), large enough that it never forgets an
 * access of a finished task, so the producers are exactly the dependency-graph
 * file's edges, whatever the timing. Anything that does not fit loses the
 * recording (the run goes on as an ordinary one); it is complete only when the
 * orchestration succeeded.
 *
 * REPLAY: the recording is walked instead of the program: scopes and
 * alloc_tensor as the api does them (the ring heaps), each task's params
 * relocated onto this run's bases and locals, its producers taken from the
 * recording; no classification, no tensor-map work; then the task is wired
 * as any other (trb_submit_replayed).
 */
#ifndef PTORUN_TRB_RECORDING_H
#define PTORUN_TRB_RECORDING_H

#include <stdint.h>

#include "device/aicpu/trb_run.h"
#include "ptorun/pto_orchestration.h"

/* Checks the work block's recording fields and points t at them; RECORD also
   re-points the tensor map at the run's own pools (after bind_rings, before
   the map's classes are formed). 0 when they are malformed. */
int trb_recording_bind(TrbRun *t, const PtoTrbWork *w);

/* RECORD hooks, called after the api call succeeded; no-ops otherwise. */
void trb_record_scope_begin(TrbRun *t, uint32_t mode);
void trb_record_scope_end(TrbRun *t);
void trb_record_alloc(TrbRun *t, uint64_t bytes, uint64_t addr);
/* A task whose producers are t->deps (ref its own ref, `after` 1 for submit_after). */
void trb_record_task(TrbRun *t, uint64_t task_id, uint64_t ref, uint32_t func_id, const PtoTaskParam *params,
                     uint32_t n, int after);
/* Something could not be recorded: the recording is lost for this run. */
void trb_record_lose(TrbRun *t);

/* The orchestration ended (succeeded: its judged code is 0): marks a RECORD
   run's recording complete when nothing was lost. */
void trb_record_finish(TrbRun *t, int succeeded);

/* REPLAY: submits the recorded graph through the session `handle`. */
int trb_replay(TrbRun *t, void *handle);

#endif
