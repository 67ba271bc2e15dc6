/*
 * NativeRunContext: one run's whole state, placement-constructed in storage the
 * caller owns (docs/lifecycle.md, section 3), and the library-level state machine
 * that carries it through prepare -> launch -> poll/wait -> finalize.
 *
 * The first 8 bytes are the tag: 0 while the storage is empty,
 * PTO_NATIVE_RUN_STORAGE_MAGIC while it holds a prepared run. The tag is
 * published last (release) when the context is built and reset to 0 after it
 * is torn down, so a failed prepare and a finalized run both leave the storage
 * reusable without re-zeroing. Phases: Prepared -> Launching -> Running ->
 * Ended, each change through native_run_to. Calls on one run must not be
 * concurrent; any thread may make them.
 *
 * The report (NativeRunReport, right after the tag) outlives the run: prepare
 * empties it, finalize fills it before it empties the storage, and the caller
 * reads it until its next prepare in this storage.
 */
#ifndef PTORUN_NATIVE_RUN_CONTEXT_H
#define PTORUN_NATIVE_RUN_CONTEXT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common/comm_run.h"
#include "common/device_context.h"
#include "common/executor.h"
#include "services/host_api.h"
#include "services/launch_signal.h"
#include "services/run_trace.h"
#include "platform/runner.h"
#include "ptorun/pto_runtime_c_api.h"
#include "runtime/runtime.h"

typedef enum NativeRunPhase {
    NATIVE_RUN_PREPARED = 0,
    NATIVE_RUN_LAUNCHING = 1,   /* inside simpler_launch_run, waiting for the launch signal */
    NATIVE_RUN_RUNNING = 2,     /* the launch marker was crossed; the job may still run */
    NATIVE_RUN_ENDED = 3,       /* the job (submit and await) ended: the device's end of the run */
} NativeRunPhase;
#define NATIVE_RUN_PHASE_COUNT 4

typedef struct NativeRunContext {
    _Atomic uint64_t tag;               /* offset 0: 0 or PTO_NATIVE_RUN_STORAGE_MAGIC */
    NativeRunReport report;             /* offset PTO_NATIVE_RUN_REPORT_OFFSET: the caller reads it after finalize */
    DeviceContext *owner;
    atomic_int phase;                   /* NativeRunPhase: set at prepare, then changed only by native_run_to */
    int claim_held;                     /* cleanup flags: what finalize must release */
    int reservation_held;
    NativeRunDescriptor desc;           /* copied at prepare; the caller's copy is never read again */
    HostApi host_api;                   /* {runner, desc.pipeline_slot, desc.arena_bank, &host_api_ops} */
    DeviceLaunch launch;                /* filled by runtime_bind */
    LaunchSignal signal;                /* carries the acceptance sink */
    CallConfig config;                  /* copied at prepare */
    RuntimeRun runtime;                 /* the runtime's per-run state */
    RunExec exec;                       /* the platform's per-run execution state */
    ExecutorJob job;                    /* the run's job record, from launch through finalize */
    RunTraceSpans trace_spans;          /* host phase stamps (CallConfig.enable_trace only) */
    RunCommDomains comm;                /* the domains its scalars name: broken if the run fails */
} NativeRunContext;

_Static_assert(offsetof(NativeRunContext, tag) == 0, "the storage tag is the first 8 bytes");
_Static_assert(sizeof(((NativeRunContext *)0)->tag) == 8, "the storage tag is 8 bytes");
_Static_assert(offsetof(NativeRunContext, report) == PTO_NATIVE_RUN_REPORT_OFFSET,
               "the run's report is where the contract says");

/* The exported native-run calls (pto_runtime_c_api.h), with every check of
 * docs/abi.md and docs/lifecycle.md in the documented order. Every error
 * message names the call and the run: (run_id slot generation dispatch_id run_epoch). */
int native_run_prepare(void *ctx, void *storage, int32_t id, const void *args, const CallConfig *cfg,
                       const NativeRunDescriptor *desc);
int native_run_launch(void *ctx, void *storage);
int native_run_poll(void *ctx, void *storage);
int native_run_wait(void *ctx, void *storage);
int native_run_finalize(void *ctx, void *storage);
int native_run_blocking(void *ctx, void *storage, int32_t id, const void *args, const CallConfig *cfg,
                        const NativeRunDescriptor *desc);

/* The one writer of a prepared run's phase: moves it from its phase to `to` along
 * one of the paths the table in native_run_context.c lists (Prepared -> Launching,
 * Launching -> Running, Launching -> Ended, Running -> Ended). Any other move is a
 * bug of the caller: PTO_ERR_WRONG_PHASE, "<fn> <run>: ..." naming both phases, and
 * the phase unchanged. */
int native_run_to(NativeRunContext *run, const char *fn, NativeRunPhase to);
/* "Prepared", "Launching", "Running", "Ended"; "unknown" for anything else. */
const char *native_run_phase_name(int phase);

#endif
