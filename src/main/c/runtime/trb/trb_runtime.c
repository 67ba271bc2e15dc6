/*
 * The trb runtime (tensormap_and_ringbuffer), host half: the orchestration
 * runs on the device at launch (device/aicpu/trb_executor.c); the host stages
 * the run and reads its outcome.
 *
 * register: decode, keep a private copy, upload it (kernels resolved by the
 *   platform), keep the kernel table and — for a library orchestration — the
 *   image's content hash, so the device loads each library once.
 * bind: check the args against the signature; make sure the shared runtime
 *   image exists on bank 0 for the run's ring sizing (prebuilt cache); pack the
 *   argument block, the work block, the args and every staged tensor (IN/INOUT
 *   copied, pure OUT zeroed; child memory passed through) into the slot's
 *   retained staging buffer in 1024-byte aligned slices, growing it when too
 *   small; allocate the run's dependency-graph buffer when asked.
 * collect: copy OUT/INOUT back after success and write the dependency graph,
 *   or name the failure from the status and work blocks. unbind: free the
 *   run's dependency-graph and trace buffers (the retained buffer and the
 *   image stay).
 * A program's graph is recorded on the device at its first run of an argument
 * geometry and replayed there after (trb_recording.h): bind chooses, collect
 * keeps a completed recording, unbind frees or gives back.
 *
 * Everything a bind writes is its slot's (scratch, retained buffer), the run's
 * own (dependency-graph and trace buffers) or — only when it builds it — bank
 * 0's shared image. The device writes that image while a run executes (ring
 * slots, dependency pools, view pools, heaps, ready queues, tensor map and
 * scratch: trb_image.c), so a run prepared beside an executing one
 * (RuntimeRun.overlaps, on a2a3's second slot) must find its ring sizing already
 * built — the prebuilt cache's, i.e. the executing run's — and then writes
 * nothing of bank 0; otherwise it is PTO_ERR_OVERLAP_NOT_NOW with nothing
 * taken. Hence runtime_supports_overlap() = 1 at depth 2 (trb_contract.c). The
 * successor launches only once its predecessor is finalized (the execution
 * claim), and the device resets the image's state at every run's start.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/call_config.h"
#include "format/chip_callable.h"
#include "services/dep_graph.h"
#include "services/run_trace.h"
#include "util/last_error.h"
#include "services/run_args.h"
#include "device/pto_builtin_kernels.h"
#include "device/pto_device_abi.h"
#include "device/pto_trb_abi.h"
#include "runtime/runtime.h"
#include "runtime/runtime_run.h"
#include "runtime/trb/trb_image.h"
#include "runtime/trb/trb_internal.h"
#include "runtime/trb/trb_recording.h"

#define TRB_RUN_MAGIC 0x54524252u      /* "TRBR": a bound run */
#define ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))

/* The dependency graph a diagnostic run collects, at most. */
#define TRB_DEP_GRAPH_TASKS (1u << 16)
#define TRB_DEP_GRAPH_EDGES (1u << 18)

/* The run's header in the retained staging buffer. */
typedef struct TrbHeader {
    PtoAicpuArgs args;
    PtoTrbWork work;
} TrbHeader;

#define TRB_ARGS_OFFSET ALIGN_UP(sizeof(TrbHeader), 64u)
#define TRB_SLICES_OFFSET ALIGN_UP(TRB_ARGS_OFFSET + sizeof(ChipStorageTaskArgs), PTO_TRB_STAGING_ALIGN)

/* Where a slot's last run's device orchestration time is in its retained staging
   buffer: the benchmark reads it there on the sim, whose device memory is host memory
   (src/test/java/org/ptorun/TrbFigures.java names the same number). */
#define TRB_ORCHESTRATION_NS_OFFSET 1896u
_Static_assert(offsetof(TrbHeader, work) + offsetof(PtoTrbWork, orchestration_ns) == TRB_ORCHESTRATION_NS_OFFSET,
               "TrbFigures.ORCHESTRATION_NS_OFFSET");

/* The runtime's part of a run (RuntimeRun.opaque). */
typedef struct TrbRunState {
    uint32_t magic;
    uint32_t orchestration_kind;
    const RuntimeCallable *callable;
    RuntimeSlotScratch *scratch; /* the run's slot's, lent from bind to unbind */
    uint8_t *staging;         /* the slot's retained buffer: header first */
    void *dep_graph;          /* the run's dependency-graph buffer, NULL when off */
    void *trace;              /* the run's trace buffer, NULL when off */
    char *output_prefix;      /* a copy, when the dependency graph or the trace is on */
    uint32_t timeout_ms;      /* the run's deadline, for the timeout's message */
    uint64_t device_bytes;    /* its staging, dependency-graph and trace bytes; collect adds the locals' peak */
    NativeRunDescriptor desc; /* a copy: names the dependency-graph file */
    TrbRecordingRun rec;      /* a program's recorded graph (trb_recording.h) */
    uint64_t orchestration_ns; /* the device orchestrator's CPU time (PtoTrbWork), read at collect */
} TrbRunState;
_Static_assert(sizeof(TrbRunState) <= PTO_RUNTIME_RUN_BYTES, "TrbRunState fits RuntimeRun");

static TrbRunState *trb_run(RuntimeRun *run)
{
    return (TrbRunState *)run->opaque;
}

uint64_t trb_staging_header_bytes(void)
{
    return TRB_SLICES_OFFSET;
}

/* The shared image lives on bank 0 whatever the run's bank. */
static HostApi bank0_of(const HostApi *api)
{
    HostApi b = *api;
    b.arena_bank = 0;
    return b;
}

int runtime_prewarm(const HostApi *api, const CallConfig *cfg)
{
    if (api == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "prewarm: NULL HostApi");
    TrbSizing sizing;
    trb_sizing_of(cfg, &sizing);
    HostApi bank0 = bank0_of(api);
    uint64_t image;
    int built;
    return trb_image_ensure(&bank0, &sizing, 1, &image, &built);
}

/* For tests and figures: `size` bytes at `offset` of the work block the api's
   slot last ran. */
static int read_work(const HostApi *api, const char *fn, size_t offset, void *out, size_t size)
{
    void *dev = NULL;
    size_t have = 0;
    int rc = host_api_get_retained_temp_buffer(api, &dev, &have);
    if (rc == PTO_OK && (dev == NULL || have < sizeof(TrbHeader)))
        rc = pto_fail(PTO_ERR_WRONG_PHASE, "%s: the slot has run nothing", fn);
    if (rc == PTO_OK)
        rc = host_api_copy_from_device(api, out, (uint8_t *)dev + offsetof(TrbHeader, work) + offset, size);
    return rc;
}

int trb_read_heap_peaks(const HostApi *api, uint64_t peaks[PTO_TRB_RINGS])
{
    return read_work(api, __func__, offsetof(PtoTrbWork, heap_peak), peaks, PTO_TRB_RINGS * sizeof peaks[0]);
}

int trb_read_orchestration_ns(const HostApi *api, uint64_t *ns)
{
    return read_work(api, __func__, offsetof(PtoTrbWork, orchestration_ns), ns, sizeof *ns);
}

int trb_read_record_mode(const HostApi *api, uint32_t *mode)
{
    return read_work(api, __func__, offsetof(PtoTrbWork, record_mode), mode, sizeof *mode);
}

uint64_t trb_callable_recording_bytes(const RuntimeCallable *c)
{
    return trb_recorder_bytes(c->recorder);
}

/* ---- the slot scratch and registration (the shared part: runtime_registry.c) ---------- */

RuntimeSlotScratch *runtime_slot_scratch_create(void)
{
    RuntimeSlotScratch *s = calloc(1, sizeof *s);
    if (s == NULL)
        pto_fail(PTO_ERR_OUT_OF_MEMORY, "slot scratch: out of host memory");
    return s;
}

void runtime_slot_scratch_destroy(RuntimeSlotScratch *s)
{
    free(s);
}

size_t runtime_callable_size(void)
{
    return sizeof(RuntimeCallable);
}

static int by_func_id(const void *a, const void *b)
{
    const PtoTrbKernel *x = a, *y = b;
    return x->func_id < y->func_id ? -1 : x->func_id > y->func_id;
}

int runtime_callable_attach(const HostApi *api, RuntimeCallable *c)
{
    (void)api;
    const ChipCallableHeader *h = &c->copy.view.header;
    if (h->orchestration_kind == PTO_ORCH_LIBRARY)
        c->orchestration_hash = pto_fnv1a64(c->copy.bytes + h->orchestration.offset, h->orchestration.size);
    c->kernel_count = h->child_count;
    for (uint32_t i = 0; i < c->kernel_count; i++) {
        const CallableKernel *k = &c->copy.kernels[i];
        c->kernels[i] = (PtoTrbKernel){ k->addr, k->func_id, k->core_type };
    }
    qsort(c->kernels, c->kernel_count, sizeof c->kernels[0], by_func_id);
    if (h->orchestration_kind != PTO_ORCH_PROGRAM)
        return PTO_OK; /* a library's graph may depend on anything: never recorded */
    trb_recording_plan(&c->copy.view, &c->plan);
    c->recorder = graph_recorder_create();
    return c->recorder != NULL ? PTO_OK : PTO_ERR_OUT_OF_MEMORY;
}

void runtime_callable_detach(const HostApi *api, RuntimeCallable *c)
{
    graph_recorder_destroy(c->recorder, api); /* no run is outstanding: nobody holds its recording */
    c->recorder = NULL;
}

/* ---- bind: staging ----------------------------------------------------------------- */

/* Records every tensor and returns the staging bytes the run needs: the
   header, then a 1024-aligned slice per staged tensor with bytes. */
static int plan_staging(const ChipCallableView *v, RuntimeSlotScratch *s, const ChipStorageTaskArgs *args,
                        uint64_t *required)
{
    uint64_t end;
    int rc = run_tensors_plan(&s->tensors, v, args, TRB_SLICES_OFFSET, PTO_TRB_STAGING_ALIGN, "a staging buffer", &end);
    if (rc == PTO_OK)
        *required = ALIGN_UP(end, (uint64_t)PTO_TRB_STAGING_ALIGN); /* end <= SIZE_MAX / 2: cannot wrap */
    return rc;
}

/* The slot's retained buffer, at least `required` bytes: kept when big enough,
   else the old one is freed and a larger one allocated. A failed allocation
   leaves the slot with no buffer. */
static int retained_buffer(const HostApi *api, uint64_t required, uint8_t **buffer)
{
    void *dev = NULL;
    size_t size = 0;
    int rc = host_api_get_retained_temp_buffer(api, &dev, &size);
    if (rc != PTO_OK)
        return rc;
    if (dev != NULL && size >= required) {
        *buffer = dev;
        return PTO_OK;
    }
    if (dev != NULL) {
        if ((rc = host_api_device_free(api, dev)) != PTO_OK || (rc = host_api_set_retained_temp_buffer(api, NULL, 0)) != PTO_OK)
            return rc;
    }
    void *grown = host_api_device_malloc(api, (size_t)required);
    if (grown == NULL)
        return pto_fail(pto_null_failure(PTO_ERR_OUT_OF_MEMORY),
                        "bind: the retained staging buffer of pipeline slot %u cannot grow to %llu bytes: %s",
                        api->pipeline_slot, (unsigned long long)required, pto_last_error());
    if ((rc = host_api_set_retained_temp_buffer(api, grown, (size_t)required)) != PTO_OK) {
        host_api_device_free(api, grown);
        return rc;
    }
    *buffer = grown;
    return PTO_OK;
}

/* Places every staged tensor in its slice: IN and INOUT are copied in, pure OUT
   ones zeroed, so bytes no kernel writes come back as zeros, never as another
   run's data. Fills the device view of the args' tensors. */
static int stage_tensors(const HostApi *api, RuntimeSlotScratch *s, const ChipStorageTaskArgs *args, uint8_t *buffer)
{
    run_tensors_relocate(&s->tensors, (uint64_t)(uintptr_t)buffer);
    run_tensors_device_view(&s->tensors, args, s->dev_tensors);
    return run_tensors_stage(api, &s->tensors);
}

/* The args as the device sees them: the tensors (device addresses), the
   scalars and the counts; the unused rest of the structure is not written. */
static int write_args(const HostApi *api, const RuntimeSlotScratch *s, const ChipStorageTaskArgs *args, uint8_t *buffer)
{
    uint8_t *dev = buffer + TRB_ARGS_OFFSET;
    int rc = PTO_OK;
    if (s->tensors.count > 0)
        rc = host_api_copy_to_device(api, dev + offsetof(ChipStorageTaskArgs, tensors), s->dev_tensors,
                                     s->tensors.count * sizeof(ChipTensor));
    if (rc == PTO_OK && args->scalar_count > 0)
        rc = host_api_copy_to_device(api, dev + offsetof(ChipStorageTaskArgs, scalars), args->scalars,
                                     (size_t)args->scalar_count * sizeof(uint64_t));
    if (rc == PTO_OK)
        rc = host_api_copy_to_device(api, dev + offsetof(ChipStorageTaskArgs, tensor_count), &args->tensor_count,
                                     2 * sizeof(int32_t));
    return rc;
}

/* trb streams tasks through its rings, so a run's task count is unbounded;
   only the dependency graph a diagnostic run records has a fixed capacity.
   A program that would overflow it is refused before its first task rather
   than at task TRB_DEP_GRAPH_TASKS. */
static int check_dep_graph_tasks(const RuntimeCallable *c, const CallConfig *cfg)
{
    if (!cfg->enable_dep_graph || c->copy.view.header.orchestration_kind != PTO_ORCH_PROGRAM)
        return PTO_OK;
    uint64_t tasks = chip_program_task_count(&c->copy.view);
    if (tasks == UINT64_MAX)
        return pto_fail(PTO_ERR_CAPACITY,
                        "bind: the program's task count (its SUBMITs times their loops' trip counts) overflows 64 "
                        "bits; the dependency graph (CallConfig.enable_dep_graph) records at most %u tasks",
                        TRB_DEP_GRAPH_TASKS);
    if (tasks > TRB_DEP_GRAPH_TASKS)
        return pto_fail(PTO_ERR_CAPACITY,
                        "bind: the program submits %llu tasks (its SUBMITs times their loops' trip counts); the "
                        "dependency graph (CallConfig.enable_dep_graph) records at most %u tasks",
                        (unsigned long long)tasks, TRB_DEP_GRAPH_TASKS);
    return PTO_OK;
}

/* The trace holds RUN_TRACE_MAX_TASKS records: a program known to submit more
   is refused here; a library's count is unknown, so finalize refuses to write
   a trace that overflowed. */
static int check_trace_tasks(const RuntimeCallable *c, const CallConfig *cfg)
{
    if (!cfg->enable_trace || c->copy.view.header.orchestration_kind != PTO_ORCH_PROGRAM)
        return PTO_OK;
    return run_trace_check_tasks(chip_program_task_count(&c->copy.view),
                                 "the program submits (its SUBMITs times their loops' trip counts)");
}

static int alloc_trace(const HostApi *api, const CallConfig *cfg, TrbRunState *h)
{
    if (!cfg->enable_trace)
        return PTO_OK;
    if (h->output_prefix == NULL && (h->output_prefix = strdup(cfg->output_prefix)) == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "bind: out of host memory");
    uint32_t capacity = RUN_TRACE_MAX_TASKS;
    if (h->orchestration_kind == PTO_ORCH_PROGRAM) {
        uint64_t tasks = chip_program_task_count(&h->callable->copy.view);
        capacity = tasks < capacity ? (uint32_t)tasks : capacity;
    }
    int rc = run_trace_alloc(api, capacity, &h->trace);
    if (rc == PTO_OK)
        h->device_bytes += pto_trace_bytes(capacity);
    return rc;
}

static int alloc_dep_graph(const HostApi *api, const CallConfig *cfg, TrbRunState *h)
{
    if (!cfg->enable_dep_graph)
        return PTO_OK;
    size_t bytes = pto_trb_dep_graph_bytes(TRB_DEP_GRAPH_TASKS, TRB_DEP_GRAPH_EDGES);
    PtoTrbDepGraph header = {
        .magic = PTO_TRB_DEP_GRAPH_MAGIC,
        .task_capacity = TRB_DEP_GRAPH_TASKS,
        .edge_capacity = TRB_DEP_GRAPH_EDGES,
    };
    if ((h->output_prefix = strdup(cfg->output_prefix)) == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "bind: out of host memory");
    if ((h->dep_graph = host_api_device_malloc(api, bytes)) == NULL)
        return pto_fail(pto_null_failure(PTO_ERR_OUT_OF_MEMORY),
                        "bind: no device memory for the dependency graph (%zu bytes): %s",
                        bytes, pto_last_error());
    h->device_bytes += bytes;
    return host_api_copy_to_device(api, h->dep_graph, &header, sizeof header);
}

static void free_run_memory(const HostApi *api, TrbRunState *h)
{
    trb_recording_unbind(api, h->callable->recorder, &h->rec);
    if (h->dep_graph != NULL)
        host_api_device_free(api, h->dep_graph);
    run_trace_free(api, &h->trace);
    free(h->output_prefix);
    h->dep_graph = NULL;
    h->output_prefix = NULL;
}

/* The argument block and the work block at the head of the staging buffer. */
static int write_header(const HostApi *api, const RuntimeCallable *c, const CallConfig *cfg, uint64_t image_dev,
                        const TrbRunState *h)
{
    const ChipCallableView *v = &c->copy.view;
    const uint8_t *upload = c->copy.upload_dev;
    uint64_t base = (uint64_t)(uintptr_t)h->staging;
    TrbHeader hdr;
    memset(&hdr, 0, sizeof hdr);
    hdr.args = (PtoAicpuArgs){
        .magic = PTO_AICPU_ARGS_MAGIC,
        .abi_version = PTO_DEVICE_ABI_VERSION,
        .work_kind = PTO_DEVICE_WORK_TRB,
        .block_dim = call_config_block_dim(cfg),
        .run_serial = runtime_next_run_serial(),
        .work_dev = base + offsetof(TrbHeader, work),
        .work_bytes = sizeof(PtoTrbWork),
        .message_dev = base + offsetof(TrbHeader, work) + offsetof(PtoTrbWork, message),
        .trace_dev = (uint64_t)(uintptr_t)h->trace,
    };
    PtoTrbWork *w = &hdr.work;
    w->magic = PTO_TRB_WORK_MAGIC;
    w->orchestration_kind = v->header.orchestration_kind;
    w->image_dev = image_dev;
    w->args_dev = base + TRB_ARGS_OFFSET;
    w->orchestration_dev = (uint64_t)(uintptr_t)(upload + v->header.orchestration.offset);
    w->orchestration_bytes = v->header.orchestration.size;
    w->orchestration_hash = c->orchestration_hash;
    if (v->header.orchestration_kind == PTO_ORCH_LIBRARY) {
        w->entry_dev = (uint64_t)(uintptr_t)(upload + v->header.orchestration_entry.offset);
        w->entry_length = v->header.orchestration_entry.size;
    }
    w->signature_dev = (uint64_t)(uintptr_t)(upload + v->header.signature.offset);
    w->signature_length = v->header.signature_length;
    w->dep_graph_dev = (uint64_t)(uintptr_t)h->dep_graph;
    w->kernel_count = c->kernel_count;
    memcpy(w->kernels, c->kernels, c->kernel_count * sizeof c->kernels[0]);
    trb_recording_work(&h->rec, &c->plan, w);
    return host_api_copy_to_device(api, h->staging, &hdr, sizeof hdr);
}

/* Checks the args and stages them with the run's header into the slot's retained buffer. */
static int stage_run(const HostApi *api, RuntimeSlotScratch *s, TrbRunState *h, const RuntimeCallable *c,
                     const ChipStorageTaskArgs *args, const CallConfig *cfg, int overlaps)
{
    int rc = run_args_check(api, &c->copy.view, args);
    if (rc == PTO_OK)
        rc = check_dep_graph_tasks(c, cfg);
    if (rc == PTO_OK)
        rc = check_trace_tasks(c, cfg);
    if (rc != PTO_OK)
        return rc;
    TrbSizing sizing;
    trb_sizing_of(cfg, &sizing);
    HostApi bank0 = bank0_of(api);
    uint64_t image_dev = 0, required = 0;
    int built;
    if ((rc = trb_image_ensure(&bank0, &sizing, !overlaps, &image_dev, &built)) != PTO_OK ||
        (rc = plan_staging(&c->copy.view, s, args, &required)) != PTO_OK ||
        (rc = retained_buffer(api, required, &h->staging)) != PTO_OK ||
        (rc = stage_tensors(api, s, args, h->staging)) != PTO_OK || (rc = write_args(api, s, args, h->staging)) != PTO_OK)
        return rc;
    h->orchestration_kind = c->copy.view.header.orchestration_kind;
    h->callable = c;
    h->device_bytes = required; /* the run's part of the retained buffer, which may be larger */
    /* the tensors are placed: the run's geometry is known (replay or record, trb_recording.h) */
    if ((rc = trb_recording_bind(api, c->recorder, &c->plan, &s->tensors, (uint32_t)args->scalar_count, &sizing,
                                 &h->rec)) !=
            PTO_OK ||
        (rc = alloc_dep_graph(api, cfg, h)) != PTO_OK || (rc = alloc_trace(api, cfg, h)) != PTO_OK ||
        (rc = write_header(api, c, cfg, image_dev, h)) != PTO_OK)
        free_run_memory(api, h);
    return rc;
}

int runtime_bind(RuntimeRun *run, RuntimeSlotScratch *scratch, const HostApi *api, const RuntimeCallable *c,
                 const ChipStorageTaskArgs *args, const CallConfig *cfg, const NativeRunDescriptor *desc,
                 DeviceLaunch *launch)
{
    int rc = runtime_bind_check(run, scratch, api, c, args, cfg, launch);
    TrbRunState *h = rc == PTO_OK ? trb_run(run) : NULL;
    if (h == NULL || (rc = runtime_lend_scratch(&scratch->holder, run)) != PTO_OK)
        return rc;
    memset(h, 0, sizeof *h);
    if ((rc = stage_run(api, scratch, h, c, args, cfg, run->overlaps)) != PTO_OK) {
        scratch->holder = NULL;
        memset(h, 0, sizeof *h);
        return rc;
    }
    *launch = (DeviceLaunch){
        .args_dev = (uint64_t)(uintptr_t)h->staging,
        .aicpu_threads = call_config_aicpu_threads(cfg),
        .block_dim = call_config_block_dim(cfg),
        .timeout_ms = call_config_timeout_ms(cfg),
    };
    h->timeout_ms = launch->timeout_ms;
    if (desc != NULL)
        h->desc = *desc;
    h->scratch = scratch;
    h->magic = TRB_RUN_MAGIC;
    return PTO_OK;
}

/* ---- collect and unbind ---------------------------------------------------------------- */

/* Reads the collected graph back and writes it next to the run's other outputs. */
static int write_dep_graph(const HostApi *api, const TrbRunState *h, NativeRunReport *report)
{
    PtoTrbDepGraph g;
    int rc = host_api_copy_from_device(api, &g, h->dep_graph, sizeof g);
    if (rc != PTO_OK)
        return rc;
    if (g.task_count > TRB_DEP_GRAPH_TASKS || g.edge_count > TRB_DEP_GRAPH_EDGES)
        return pto_fail(PTO_ERR_DEVICE, "collect: the device's dependency graph is malformed");
    uint32_t tasks = (uint32_t)g.task_count, edges = (uint32_t)g.edge_count;
    uint32_t *func_ids = malloc((tasks + 1) * sizeof *func_ids);
    uint32_t *pairs = malloc((2 * (size_t)edges + 1) * sizeof *pairs);
    uint32_t *producers = malloc((edges + 1) * sizeof *producers);
    uint32_t *consumers = malloc((edges + 1) * sizeof *consumers);
    const uint8_t *dev = h->dep_graph;
    if (func_ids == NULL || pairs == NULL || producers == NULL || consumers == NULL) {
        rc = pto_fail(PTO_ERR_OUT_OF_MEMORY, "collect: out of host memory for the dependency graph");
    } else if ((tasks == 0 ||
                (rc = host_api_copy_from_device(api, func_ids, dev + sizeof g, tasks * sizeof *func_ids)) == PTO_OK) &&
               (edges == 0 ||
                (rc = host_api_copy_from_device(api, pairs, dev + sizeof g + TRB_DEP_GRAPH_TASKS * sizeof(uint32_t),
                                                2 * (size_t)edges * sizeof *pairs)) == PTO_OK)) {
        for (uint32_t e = 0; e < edges; e++) {
            producers[e] = pairs[2 * e];
            consumers[e] = pairs[2 * e + 1];
        }
        rc = dep_graph_write(h->output_prefix, &h->desc, tasks, func_ids, producers, consumers, edges, report);
    }
    free(func_ids);
    free(pairs);
    free(producers);
    free(consumers);
    return rc;
}

/* The failed run's error, named from the device's status and work blocks. */
static int read_failure(const HostApi *api, const TrbRunState *h, int execution_rc)
{
    TrbHeader hdr;
    int rc = host_api_copy_from_device(api, &hdr, h->staging, sizeof hdr);
    if (rc != PTO_OK)
        return runtime_unreadable_status(execution_rc, rc);
    const PtoDeviceStatus *s = &hdr.args.status;
    const PtoTrbWork *w = &hdr.work;
    hdr.work.message[sizeof hdr.work.message - 1] = '\0';
    unsigned long long done = (unsigned long long)s->tasks_completed, submitted = (unsigned long long)w->tasks_submitted;
    char progress[96];
    snprintf(progress, sizeof progress, "%llu of %llu submitted task(s) completed", done, submitted);
    /* a hung device never writes its status: the host's timeout is the answer */
    int device_error = s->error_code == 0 && execution_rc == PTO_ERR_TIMEOUT ? PTO_ERR_TIMEOUT : s->error_code;
    switch (device_error) {
    case PTO_ERR_KERNEL_FAULT:
        return runtime_kernel_fault(&h->callable->copy.view, s, progress, w->message);
    case PTO_ERR_TIMEOUT:
        return pto_fail(PTO_ERR_TIMEOUT, "the run exceeded its timeout of %u ms: %s", h->timeout_ms, progress);
    case 0:
        return pto_fail(execution_rc, "the run failed (%d) with %s", execution_rc, progress);
    default:
        if (w->message[0] == '\0')
            return pto_fail(s->error_code, "the device executor failed the run (%d) after %llu of %llu task(s)",
                            s->error_code, done, submitted);
        return pto_fail(s->error_code, "orchestration failed at task %llu: %s; %s", (unsigned long long)s->task_id,
                        w->message, progress);
    }
}

int runtime_read_failure(RuntimeRun *run, const HostApi *api, int execution_rc)
{
    int rc = runtime_run_check(run, api, TRB_RUN_MAGIC, "read_failure");
    return rc != PTO_OK ? rc : read_failure(api, trb_run(run), execution_rc);
}

void runtime_unbind(RuntimeRun *run, const HostApi *api)
{
    if (!runtime_run_bound(run, api, TRB_RUN_MAGIC))
        return; /* never bound, or already unbound: nothing to release */
    TrbRunState *h = trb_run(run);
    /* the retained buffer stays with the slot, the image with bank 0 */
    free_run_memory(api, h);
    h->scratch->holder = NULL;
    memset(h, 0, sizeof *h);
}

int runtime_run_outputs(RuntimeRun *run, const HostApi *api, RunOutputs *out)
{
    int rc = runtime_run_check(run, api, TRB_RUN_MAGIC, "collect");
    const TrbRunState *h = trb_run(run);
    if (rc == PTO_OK)
        *out = (RunOutputs){ .tensors = &h->scratch->tensors, .trace = h->trace, .output_prefix = h->output_prefix,
                             .desc = &h->desc, .view = &h->callable->copy.view };
    return rc;
}

int runtime_write_dep_graph(RuntimeRun *run, const HostApi *api)
{
    const TrbRunState *h = trb_run(run);
    return h->dep_graph != NULL ? write_dep_graph(api, h, run->report) : PTO_OK;
}

int runtime_collect_device_figures(RuntimeRun *run, const HostApi *api)
{
    TrbRunState *h = trb_run(run);
    uint64_t peaks[PTO_TRB_RINGS];
    int rc = host_api_copy_from_device(api, peaks,
                                       h->staging + offsetof(TrbHeader, work) + offsetof(PtoTrbWork, heap_peak),
                                       sizeof peaks);
    if (rc == PTO_OK)
        rc = host_api_copy_from_device(api, &h->orchestration_ns,
                                       h->staging + offsetof(TrbHeader, work) + offsetof(PtoTrbWork, orchestration_ns),
                                       sizeof h->orchestration_ns);
    if (rc != PTO_OK)
        return rc;
    /* each ring's peak: a bound on the bytes in use at once over all rings */
    for (uint32_t r = 0; r < PTO_TRB_RINGS; r++)
        h->device_bytes += peaks[r];
    /* the run succeeded: a recording the device completed is kept (and only then) */
    return trb_recording_collect(api, h->callable->recorder, &h->scratch->tensors, h->callable->kernels,
                                 h->callable->kernel_count, &h->rec);
}

uint32_t runtime_run_graph_source(const RuntimeRun *run)
{
    const TrbRunState *h = (const TrbRunState *)run->opaque;
    return h->magic == TRB_RUN_MAGIC ? h->rec.graph_source : PTO_RUN_GRAPH_BUILT;
}

uint64_t runtime_run_orchestration_ns(const RuntimeRun *run)
{
    const TrbRunState *h = (const TrbRunState *)run->opaque;
    return h->magic == TRB_RUN_MAGIC ? h->orchestration_ns : 0;
}

uint64_t runtime_run_device_bytes(const RuntimeRun *run)
{
    const TrbRunState *h = (const TrbRunState *)run->opaque;
    return h->magic == TRB_RUN_MAGIC ? h->device_bytes + h->rec.device_bytes : 0;
}
