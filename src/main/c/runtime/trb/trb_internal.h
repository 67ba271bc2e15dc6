/*
 * The trb runtime's own types: a registered callable and the per-slot
 * scratch its binds reuse. Internal to runtime/trb (and its native tests).
 */
#ifndef PTORUN_TRB_INTERNAL_H
#define PTORUN_TRB_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "format/chip_callable.h"
#include "device/pto_trb_abi.h"
#include "ptorun/pto_runtime_c_api.h"
#include "runtime/run_tensors.h"
#include "runtime/runtime.h"
#include "runtime/runtime_registry.h"
#include "runtime/trb/trb_recording.h"

/* What one bind in one pipeline slot builds, kept for the next bind there: a
 * run allocates no host memory. Lent to one run from bind to unbind (runtime.h). */
struct RuntimeSlotScratch {
    const RuntimeRun *holder; /* the run it is lent to; NULL when free */
    RunTensorTable tensors;   /* staged ones are slices of the slot's retained staging buffer */
    ChipTensor dev_tensors[PTO_MAX_TENSOR_ARGS]; /* the args' tensors, addr on the device */
};

struct RuntimeCallable {
    CallableCopy copy;        /* first: the shared registration's part (runtime_registry.h) */
    PtoTrbKernel kernels[PTO_CALLABLE_MAX_CHILDREN]; /* the copy's kernels, sorted by func_id */
    uint32_t kernel_count;
    uint64_t orchestration_hash; /* library orchestrations: FNV-1a 64 of the image */
    TrbRecordingPlan plan;    /* program: what its recording needs (trb_recording.h) */
    GraphRecorder *recorder;  /* program: its recorded graph (runtime/graph_recorder.h) */
};
_Static_assert(offsetof(struct RuntimeCallable, copy) == 0, "the shared registration's part comes first");

/* Bytes of a run's header in the retained staging buffer (argument block, work
 * block, the args), before the first tensor slice. */
uint64_t trb_staging_header_bytes(void);

/* For tests: the last run's ring heap high-water marks in the api's pipeline
 * slot (PtoTrbWork.heap_peak, read from the slot's retained staging buffer). */
int trb_read_heap_peaks(const HostApi *api, uint64_t peaks[PTO_TRB_RINGS]);

/* For tests and figures: the last run's device orchestration time in the api's
 * pipeline slot (PtoTrbWork.orchestration_ns), and the device bytes of a
 * callable's current recording (0: none). */
int trb_read_orchestration_ns(const HostApi *api, uint64_t *ns);
/* For tests: how the last run in the api's slot got its graph (PtoTrbWork.record_mode). */
int trb_read_record_mode(const HostApi *api, uint32_t *mode);
uint64_t trb_callable_recording_bytes(const RuntimeCallable *c);

#endif
