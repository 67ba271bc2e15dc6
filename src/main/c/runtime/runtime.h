/*
 * The runtime half of a library (hbg or trb). Exactly one implementation is
 * linked into each library; common/ reaches it only through these functions,
 * and it reaches the device only through the HostApi it is given.
 */
#ifndef PTORUN_RUNTIME_H
#define PTORUN_RUNTIME_H

#include <stdalign.h>
#include <stdint.h>

#include "services/host_api.h"
#include "platform/runner.h"
#include "ptorun/pto_runtime_c_api.h"

/* This variant's pipeline contract (docs/device.md): static, immutable. */
const PipelineContract *runtime_pipeline_contract(void);

/* Non-zero: a run may be prepared in another slot while a run executes (hbg
 * always; trb on a depth-2 contract, when the run fits the working memory the
 * executing run is bound to: runtime_bind refuses one that does not with
 * PTO_ERR_OVERLAP_NOT_NOW). */
int runtime_supports_overlap(void);

/* A registered callable as the runtime keeps it (validated, uploaded, kernels
 * resolved). Owned by the runtime; common/ only stores the pointer per id. */
typedef struct RuntimeCallable RuntimeCallable;

/* Validates `callable` completely (PTO_ERR_BAD_CALLABLE naming the defect, never
 * reading past its total_size) and uploads it through `api` (slot 0, bank 0). */
int runtime_register_callable(const HostApi *api, const void *callable, RuntimeCallable **out);
void runtime_release_callable(const HostApi *api, RuntimeCallable *c);

/* Warms the runtime for a ring sizing at simpler_init (trb); hbg: no-op. */
int runtime_prewarm(const HostApi *api, const CallConfig *cfg);

/* The runtime's host scratch of one pipeline slot: what a bind builds and the
 * next bind in that slot reuses (hbg: the tensor table, the graph, the bridge,
 * the image and mirror buffers; trb: the tensor table and the device view of
 * the args' tensors), so a run allocates nothing once its slot has seen its
 * largest run. The device context owns one per slot from simpler_init to
 * finalize_device and never a callable: bind lends it to the run, which holds
 * the slot's reservation, until unbind, so two runs never share one. */
typedef struct RuntimeSlotScratch RuntimeSlotScratch;
RuntimeSlotScratch *runtime_slot_scratch_create(void);   /* NULL (message recorded) when out of host memory */
void runtime_slot_scratch_destroy(RuntimeSlotScratch *s); /* NULL: no-op; never while lent to a run */

/* The runtime's per-run state. Lives inside the NativeRunContext (the caller's
 * storage) from prepare through finalize; its content is the runtime's. */
#define PTO_RUNTIME_RUN_BYTES 1024
struct RunTraceSpans;
typedef struct RuntimeRun {
    alignas(64) unsigned char opaque[PTO_RUNTIME_RUN_BYTES];
    /* set by the caller after the zeroing, before bind: the host's phase stamps
       for the trace (services/run_trace.h); NULL = none (the trace then has no host track) */
    const struct RunTraceSpans *trace_spans;
    /* set likewise: where collect records the diagnostic files it wrote; NULL = nowhere */
    NativeRunReport *report;
    /* set likewise: non-zero when the run is prepared beside a run of the context that
       holds the execution claim (launched, not yet finalized). bind must then rewrite
       nothing that run uses; what it cannot prepare without doing so it refuses with
       PTO_ERR_OVERLAP_NOT_NOW, saying why, having taken nothing */
    int overlaps;
} RuntimeRun;

/* prepare: validates the args against the callable's signature, stages tensors,
 * builds the run's runtime image (hbg: runs the host orchestration here) into the
 * slot's and bank's resources of `api`, and fills `launch`. With run->overlaps it
 * writes nothing another run of the context may use (PTO_ERR_OVERLAP_NOT_NOW when
 * it would have to). `scratch` is the
 * run's slot's (api->pipeline_slot): lent to the run from here until
 * runtime_unbind. On failure it has already released everything it took, the
 * scratch included. `run` is zeroed before the call. `desc` is the run's
 * identity (diagnostic file names, messages); read during the call only. */
int runtime_bind(RuntimeRun *run, RuntimeSlotScratch *scratch, const HostApi *api, const RuntimeCallable *c,
                 const ChipStorageTaskArgs *args, const CallConfig *cfg, const NativeRunDescriptor *desc,
                 DeviceLaunch *launch);

/* finalize of a launched run: when execution_rc == 0, copies OUT/INOUT back to
 * the caller's buffers and writes the diagnostics asked for; otherwise reads the
 * device status to name the error (runtime_read_failure). Frees nothing.
 * Returns 0 or the error (with its message). */
int runtime_collect_results(RuntimeRun *run, const HostApi *api, int execution_rc);

/* finalize, launched or not: frees the run's own device buffers (retained
 * per-slot buffers stay with the slot), hands the slot scratch back and
 * empties `run`. A run that was never bound (or is already unbound): no-op. */
void runtime_unbind(RuntimeRun *run, const HostApi *api);

/* finalize, before unbind: the bytes of device memory the bound run's own data
 * took at its peak (NativeRunReport.peak_device_memory), never the arenas' or
 * buffers' rounded, retained sizes. hbg: the staged tensors and the locals at
 * their high-water in the bank's GM heap, the argument block, executor message
 * and graph image in its runtime arena, the scheduler state in its GM shared
 * memory, the trace buffer. trb: the run's part of the slot's retained staging
 * buffer (header, args, staged tensors), the dependency-graph and trace buffers,
 * and — once a successful run was collected — its locals: the sum of each ring
 * heap's peak. Child-memory tensors (the caller's buffers) and what outlives the
 * run for every run alike (callable uploads, trb's shared ring image) are not
 * counted. 0 for a run never bound. Touches no device. */
uint64_t runtime_run_device_bytes(const RuntimeRun *run);

/* finalize, before unbind: how bind got the run's task graph
 * (NativeRunReport.graph_source, PTO_RUN_GRAPH_*); BUILT for a run never bound.
 * hbg records a program's graph at its first prepare and replays it after
 * (runtime/hbg/hbg_recording.h); trb does so in its device-side orchestration
 * (runtime/trb/trb_recording.h): RECORDED once collect kept the recording. */
uint32_t runtime_run_graph_source(const RuntimeRun *run);

/* NativeRunReport.orchestration_ns of a collected run: the CPU time its
 * orchestration took (hbg: in bind; trb: on the device); 0 when none ran. */
uint64_t runtime_run_orchestration_ns(const RuntimeRun *run);

/* launch, wait, blocking run, collect: reads a launched run's device status and
 * names its failure (returned, with its message), freeing nothing, so a kernel
 * fault reads the same whichever phase reports it. */
int runtime_read_failure(RuntimeRun *run, const HostApi *api, int execution_rc);

#endif
