/*
 * The runtime half of a library (hbg or trb). Exactly one implementation is
 * linked into each library; common/ reaches it only through these functions,
 * and it reaches the device only through the HostApi it is given.
 */
#ifndef PTORUN_RUNTIME_H
#define PTORUN_RUNTIME_H

#include <stdalign.h>
#include <stdint.h>

#include "common/host_api.h"
#include "platform/runner.h"
#include "ptorun/pto_runtime_c_api.h"

/* This variant's pipeline contract (design/device-model.md): static, immutable. */
const PipelineContract *runtime_pipeline_contract(void);

/* Non-zero: a run may be prepared in another slot while a run executes (hbg). */
int runtime_supports_concurrent_prepare(void);

/* A registered callable as the runtime keeps it (validated, uploaded, kernels
 * resolved). Owned by the runtime; common/ only stores the pointer per id. */
typedef struct RuntimeCallable RuntimeCallable;

/* Validates `callable` completely (PTO_ERR_BAD_CALLABLE naming the defect, never
 * reading past its total_size) and uploads it through `api` (slot 0, bank 0). */
int runtime_register_callable(const HostApi *api, const void *callable, RuntimeCallable **out);
void runtime_release_callable(const HostApi *api, RuntimeCallable *c);

/* Warms the runtime for a ring sizing at simpler_init (trb); hbg: no-op. */
int runtime_prewarm(const HostApi *api, const CallConfig *cfg);

/* The runtime's per-run state. Lives inside the NativeRunContext (the caller's
 * storage) from prepare through finalize; its content is the runtime's. */
#define PTO_RUNTIME_RUN_BYTES 1024
struct RunTraceSpans;
typedef struct RuntimeRun {
    alignas(64) unsigned char opaque[PTO_RUNTIME_RUN_BYTES];
    /* set by the caller after the zeroing, before bind: the host's phase stamps
       for the trace (common/run_trace.h); NULL = none (the trace then has no host track) */
    const struct RunTraceSpans *trace_spans;
} RuntimeRun;

/* prepare: validates the args against the callable's signature, stages tensors,
 * builds the run's runtime image (hbg: runs the host orchestration here) into the
 * slot's and bank's resources of `api`, and fills `launch`. On failure it has
 * already released everything it took. `run` is zeroed before the call. `desc`
 * is the run's identity (diagnostic file names, messages); read during the call only. */
int runtime_bind(RuntimeRun *run, const HostApi *api, const RuntimeCallable *c, const ChipStorageTaskArgs *args,
                 const CallConfig *cfg, const NativeRunDescriptor *desc, DeviceLaunch *launch);

/* finalize: when launched and execution_rc == 0, copies OUT/INOUT back to the
 * caller's buffers; when launched and failed, reads the device status to name
 * the error (returned, with its message); always frees the run's device
 * buffers (retained per-slot buffers stay with the slot). Returns 0 or the error. */
int runtime_validate(RuntimeRun *run, const HostApi *api, int launched, int execution_rc);

/* launch, wait, blocking run: names a launched run's failure from the device status
 * exactly as runtime_validate will (returned, with its message), freeing nothing, so a
 * kernel fault reads the same whichever phase reports it. */
int runtime_describe_failure(RuntimeRun *run, const HostApi *api, int execution_rc);

#endif
