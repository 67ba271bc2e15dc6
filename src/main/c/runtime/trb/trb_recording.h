/*
 * Recorded graphs on trb, host half (docs/recorded-graphs.md, trb; which
 * recording a prepare replays, and when one is replaced or freed:
 * runtime/graph_recorder.h; the device half: device/aicpu/trb_recording.h).
 *
 * A program's first run of a geometry records its graph on the device, into a
 * PtoTrbRecording in device memory the bind allocates (sized at registration
 * from the program text: its tasks, params and allocations, and at most
 * TRB_RECORDING_EDGES_PER_ACCESS producers per tensor access); collect
 * publishes it after the run succeeded and the device marked it complete,
 * and only then. A later run of that geometry replays it: the device walks
 * the recording instead of interpreting the program. A program whose
 * recording, or whose record run's tensor-map pools, would exceed
 * TRB_RECORDING_MAX_BYTES is never recorded; neither is a run whose buffers
 * device memory cannot hold now, nor one whose recording the device lost (a
 * task with more producers than fit, a full tensor map): those runs are built
 * the ordinary way. A library orchestration is never recorded.
 *
 * Memory: the recording counts in the chip's committed device memory (not in
 * a run's peak: like a callable's upload, every run of the geometry shares it) and is
 * freed when replaced, or with the callable at unregister or close. A record
 * run's tensor-map pools are the run's own, freed at its finalize.
 */
#ifndef PTORUN_TRB_RECORDING_H
#define PTORUN_TRB_RECORDING_H

#include <stdint.h>

#include "device/pto_trb_abi.h"
#include "format/chip_callable.h"
#include "runtime/graph_recorder.h"
#include "runtime/trb/trb_image.h"
#include "runtime/run_tensors.h"
#include "services/host_api.h"

/* The largest recording, and the largest record run's tensor-map pools. */
#define TRB_RECORDING_MAX_BYTES (64ull << 20)
/* The producers a recording holds: this many per tensor access of the program, plus 64. */
#define TRB_RECORDING_EDGES_PER_ACCESS 4u

/* What a program's recording needs (registration: the program text alone). */
typedef struct TrbRecordingPlan {
    int recordable;           /* 0: a library, a program with an INVOKE, or too large */
    uint64_t tasks;           /* chip_program_task_count */
    uint64_t words;           /* PtoTrbRecording.capacity */
    uint64_t map_entries, map_views; /* the record run's tensor-map pools */
} TrbRecordingPlan;

void trb_recording_plan(const ChipCallableView *v, TrbRecordingPlan *plan);

/* A run's part (in the run state). */
typedef struct TrbRecordingRun {
    uint32_t mode;            /* PtoTrbWork.record_mode */
    uint32_t graph_source;    /* PTO_RUN_GRAPH_* */
    uint32_t scalar_count;
    GraphRecording *held;     /* replayed, or made and published: given back at unbind */
    GraphRecording *made;     /* RECORD: made, not published (yet) */
    void *scratch;            /* RECORD: the tensor-map pools */
    uint64_t device_bytes;    /* the run's own: the record run's tensor-map pools */
} TrbRecordingRun;

/* bind, after the tensors' placement: with the recording of this geometry,
   WALK its compiled graph when the run's ring sizing is the record run's, else
   REPLAY it; else RECORD into a new one when the plan allows and memory holds
   it; else OFF. Fails only with a device failure (services/device_failure.h). */
int trb_recording_bind(const HostApi *api, GraphRecorder *r, const TrbRecordingPlan *plan, const RunTensorTable *t,
                       uint32_t scalar_count, const TrbSizing *sizing, TrbRecordingRun *run);

/* The work block's recording fields. */
void trb_recording_work(const TrbRecordingRun *run, const TrbRecordingPlan *plan, PtoTrbWork *w);

/* collect of a successful run: publishes a RECORD run's recording when the
   device completed it (then graph_source RECORDED), compiled first into the
   graph later replays walk (trb_walk_image.h; the callable's `kernels`, ascending
   func_id). Fails only with a device failure. */
int trb_recording_collect(const HostApi *api, GraphRecorder *r, const RunTensorTable *t, const PtoTrbKernel *kernels,
                          uint32_t kernel_count, TrbRecordingRun *run);

/* unbind: frees the run's own and gives the recording back. */
void trb_recording_unbind(const HostApi *api, GraphRecorder *r, TrbRecordingRun *run);

/* The device bytes of the current recording (0: none), for tests and figures. */
uint64_t trb_recorder_bytes(GraphRecorder *r);

#endif
