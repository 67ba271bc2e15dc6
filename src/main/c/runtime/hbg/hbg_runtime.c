/*
 * The hbg runtime (host_build_graph): the orchestration runs on the host in
 * prepare and builds the whole task graph; the device only schedules it.
 *
 * bind: check the args against the signature; commit the bank's GM heap and
 * stage every non-child tensor into it (IN/INOUT copied, pure OUT zeroed);
 * reserve the run's local heap (alloc_tensor) after them; open the host-access
 * bridge, run the orchestration (the program interpreter or a user library,
 * hbg_orch.c), close the bridge; write the graph into the bank's runtime arena
 * (argument block + graph image) with its scratch state in the bank's GM
 * shared memory. collect: copy OUT/INOUT back after a successful run (and
 * write the dependency graph when asked), or name the failing task from the
 * device's status block. unbind: free the run's trace buffer.
 *
 * Everything a bind writes is its own slot's scratch and its own bank's (bank =
 * slot), so a run may be prepared while another executes in the other slot.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/call_config.h"
#include "format/chip_callable.h"
#include "services/dep_graph.h"
#include "util/cpu_time.h"
#include "util/last_error.h"
#include "services/run_trace.h"
#include "services/run_args.h"
#include "device/pto_builtin_kernels.h"
#include "device/pto_device_abi.h"
#include "ptorun/pto_orchestration.h"
#include "util/library_cache.h"
#include "runtime/hbg/hbg_internal.h"
#include "runtime/runtime.h"
#include "runtime/runtime_run.h"

#define HBG_RUN_MAGIC 0x48424752u      /* "HBGR": a bound run */
#define HBG_STAGING_ALIGN 64u          /* staged tensors start on a cache line */
#define HBG_ARENA_GRANULE (64u << 10)  /* arenas grow in these steps */
#define HBG_MESSAGE_BYTES 512u         /* the executor's message after the argument block (< 512: device_run.c) */

/* The runtime's part of a run (RuntimeRun.opaque). */
typedef struct HbgRun {
    uint32_t magic;
    uint32_t task_count;
    const RuntimeCallable *callable;
    RuntimeSlotScratch *scratch; /* the run's slot's, lent from bind to unbind */
    uint64_t args_dev;        /* the argument block (and status) on the device */
    int32_t dep_graph;        /* CallConfig.enable_dep_graph (prefix in scratch->output_prefix) */
    void *trace;              /* the run's trace buffer (CallConfig.enable_trace), NULL when off */
    uint32_t timeout_ms;      /* the run's deadline, for the timeout's message */
    uint64_t device_bytes;    /* what the run's own data takes on the device (runtime_run_device_bytes) */
    NativeRunDescriptor desc; /* the run's identity (zero when bind was given none) */
    const HbgRecording *recording; /* the recorded graph the run holds, NULL when it has its own image */
    uint32_t graph_source;    /* PTO_RUN_GRAPH_* */
    uint64_t orchestration_ns; /* the orchestration's CPU time in bind, 0 when it replayed */
} HbgRun;
_Static_assert(sizeof(HbgRun) <= PTO_RUNTIME_RUN_BYTES, "HbgRun fits RuntimeRun");

static HbgRun *hbg_run(RuntimeRun *run)
{
    return (HbgRun *)run->opaque;
}

int runtime_prewarm(const HostApi *api, const CallConfig *cfg)
{
    (void)api, (void)cfg; /* hbg rebuilds its image every run: nothing to warm */
    return PTO_OK;
}

static size_t round_up(size_t n, size_t granule)
{
    return n == 0 ? granule : (n + granule - 1) / granule * granule;
}

/* ---- the slot scratch ------------------------------------------------------------ */

RuntimeSlotScratch *runtime_slot_scratch_create(void)
{
    RuntimeSlotScratch *s = calloc(1, sizeof *s);
    if (s == NULL)
        goto oom;
    hbg_graph_init(&s->graph);
    hbg_bridge_init(&s->bridge);
    if ((s->dev_args = aligned_alloc(_Alignof(ChipStorageTaskArgs), sizeof *s->dev_args)) == NULL)
        goto oom_args;
    return s;

oom_args:
    free(s);
oom:
    pto_fail(PTO_ERR_OUT_OF_MEMORY, "slot scratch: out of host memory");
    return NULL;
}

void runtime_slot_scratch_destroy(RuntimeSlotScratch *s)
{
    if (s == NULL)
        return;
    hbg_graph_destroy(&s->graph);
    hbg_bridge_destroy(&s->bridge);
    free(s->image);
    free(s->mirror);
    free(s->dev_args);
    free(s);
}

/* ---- registration (the shared part: runtime_registry.c) ------------------------- */

size_t runtime_callable_size(void)
{
    return sizeof(RuntimeCallable);
}


/* A library orchestration: its image loaded on the host (once per content per
   device context, counted by get_host_dlopen_count) and its entry resolved. */
static int load_orchestration(const HostApi *api, RuntimeCallable *c)
{
    const ChipCallableView *v = &c->copy.view;
    const ChipCallableHeader *h = &v->header;
    int rc = host_api_load_host_library(api, c->copy.bytes + h->orchestration.offset, h->orchestration.size,
                                        &c->orch_library);
    if (rc != PTO_OK)
        return pto_fail(rc, "register_callable: the orchestration library: %s", pto_last_error());
    char why[256];
    const char *entry = chip_callable_blob(v, h->orchestration_entry);
    c->orch_entry = (PtoOrchestrationFn)library_cache_symbol(c->orch_library, entry, h->orchestration_entry.size, why,
                                                             sizeof why);
    if (c->orch_entry == NULL) {
        host_api_release_host_library(api, c->orch_library);
        c->orch_library = NULL;
        return pto_fail(PTO_ERR_BAD_CALLABLE, "register_callable: the orchestration library has no entry symbol '%.*s': %s",
                        (int)h->orchestration_entry.size, entry, why);
    }
    return PTO_OK;
}

int runtime_callable_attach(const HostApi *api, RuntimeCallable *c)
{
    if (c->copy.view.header.orchestration_kind == PTO_ORCH_LIBRARY)
        return load_orchestration(api, c);
    c->program_local_bytes = chip_program_local_peak(&c->copy.view, HBG_LOCAL_ALIGN);
    c->program_tasks = chip_program_task_count(&c->copy.view);
    c->recorder = graph_recorder_create();
    return c->recorder != NULL ? PTO_OK : PTO_ERR_OUT_OF_MEMORY;
}

void runtime_callable_detach(const HostApi *api, RuntimeCallable *c)
{
    if (c->orch_library != NULL)
        host_api_release_host_library(api, c->orch_library);
    c->orch_library = NULL;
    graph_recorder_destroy(c->recorder, api); /* no run is outstanding: nobody holds its recording */
    c->recorder = NULL;
}

/* ---- bind: the args ----------------------------------------------------------------- */

/* Checks the args against the signature and records every tensor; returns the
   GM heap bytes the staged ones and then the local heap (`local_bytes`) need
   (offsets in the tensor table and s->local_base). */
static int bind_args(const HostApi *api, const RuntimeCallable *c, RuntimeSlotScratch *s,
                     const ChipStorageTaskArgs *args, uint64_t local_bytes, uint64_t *heap_bytes)
{
    const ChipCallableView *v = &c->copy.view;
    uint64_t offset;
    int rc = run_args_check(api, v, args);
    if (rc != PTO_OK ||
        (rc = run_tensors_plan(&s->tensors, v, args, 0, HBG_STAGING_ALIGN, "a GM heap", &offset)) != PTO_OK)
        return rc;
    s->local_base = (offset + HBG_LOCAL_ALIGN - 1) / HBG_LOCAL_ALIGN * HBG_LOCAL_ALIGN;
    if (__builtin_add_overflow(s->local_base, local_bytes, &offset) || offset > SIZE_MAX / 2)
        return pto_fail(PTO_ERR_CAPACITY, "bind: the staged tensors and a %llu-byte local heap need more bytes than a GM "
                                          "heap can hold",
                        (unsigned long long)local_bytes);
    s->local_end = offset;
    *heap_bytes = offset;
    return PTO_OK;
}

/* The args as the orchestration sees them: every tensor's addr is its device address. */
static void device_args(RuntimeSlotScratch *s, const ChipStorageTaskArgs *args)
{
    ChipStorageTaskArgs *d = s->dev_args;
    run_tensors_device_view(&s->tensors, args, d->tensors);
    memcpy(d->scalars, args->scalars, (size_t)args->scalar_count * sizeof d->scalars[0]);
    d->tensor_count = args->tensor_count;
    d->scalar_count = args->scalar_count;
}

/* Commits the bank's GM heap, places the staged tensors and the local heap in
   it and forms the alias classes of every tensor (the local heap is one range:
   its allocations are fresh bytes that no argument tensor overlaps). */
static int place_tensors(const HostApi *api, RuntimeSlotScratch *s, uint64_t heap_bytes, uint8_t **heap)
{
    int rc = host_api_setup_static_arena(api, round_up(heap_bytes, HBG_ARENA_GRANULE), 0, 0);
    if (rc != PTO_OK)
        return rc;
    size_t heap_size;
    if ((*heap = host_api_acquire_pooled_gm_heap(api, &heap_size)) == NULL)
        return PTO_ERR_OUT_OF_MEMORY;
    s->heap_base = (uint64_t)(uintptr_t)*heap;
    run_tensors_relocate(&s->tensors, (uint64_t)(uintptr_t)*heap);
    for (uint32_t i = 0; i < s->tensors.count; i++) {
        const RunTensor *t = &s->tensors.entries[i];
        if (t->size > 0 && (rc = hbg_graph_add_range(&s->graph, t->dev, t->dev + t->size)) != PTO_OK)
            return rc;
    }
    s->local_base += (uint64_t)(uintptr_t)*heap;
    s->local_end += (uint64_t)(uintptr_t)*heap;
    s->local_next = s->local_high = s->local_base;
    s->local_peak = 0;
    if (s->local_end > s->local_base &&
        (rc = hbg_graph_add_range(&s->graph, s->local_base, s->local_end)) != PTO_OK)
        return rc;
    hbg_graph_seal_classes(&s->graph);
    return PTO_OK;
}

/* ---- bind: the bridge --------------------------------------------------------------- */

/* The host staging mirror where the GM heap has no host view (a5 onboard): a
   private copy of what stage_tensors put on the device (IN/INOUT bytes, zeroed
   OUT), laid out like the heap, so reads see the device's bytes and writes
   never touch the caller's buffers. Returns NULL on out-of-memory. */
static uint8_t *stage_mirror(RuntimeSlotScratch *s, const uint8_t *heap)
{
    size_t bytes = 0;
    for (uint32_t i = 0; i < s->tensors.count; i++) {
        const RunTensor *t = &s->tensors.entries[i];
        if (t->staged && t->size > 0 && t->dev - (uint64_t)(uintptr_t)heap + t->size > bytes)
            bytes = (size_t)(t->dev - (uint64_t)(uintptr_t)heap + t->size);
    }
    if (bytes > s->mirror_cap || s->mirror == NULL) { /* none staged: still a mirror, of no bytes */
        uint8_t *p = realloc(s->mirror, bytes > 0 ? bytes : 1);
        if (p == NULL)
            return NULL;
        s->mirror = p;
        s->mirror_cap = bytes > 0 ? bytes : 1;
    }
    for (uint32_t i = 0; i < s->tensors.count; i++) {
        const RunTensor *t = &s->tensors.entries[i];
        if (!t->staged || t->size == 0)
            continue;
        uint8_t *m = s->mirror + (t->dev - (uint64_t)(uintptr_t)heap);
        if (t->direction == PTO_ARG_OUT)
            memset(m, 0, t->size);
        else
            memcpy(m, (const void *)(uintptr_t)t->host, t->size);
    }
    return s->mirror;
}

/* Opens the bridge on the staged tensors: views into the host mapping of the
   GM heap when the platform has one (a2a3), else the slot scratch's staging
   mirror, whose writes the bridge pushes to the device through HostApi.
   Child-memory tensors are not reachable (reads of them fail closed). */
static int open_bridge(const HostApi *api, RuntimeSlotScratch *s, uint8_t *heap, uint64_t heap_bytes, uint8_t **heap_view)
{
    hbg_bridge_reset(&s->bridge, api);
    *heap_view = heap_bytes > 0 ? host_api_register_device_memory_to_host(api, heap, heap_bytes) : NULL;
    uint8_t *mirror = NULL;
    if (*heap_view == NULL && heap_bytes > 0) {
        if (pto_device_failure(pto_last_error_code())) /* the mapping met a device failure: the run has one */
            return pto_last_error_code();
        pto_clear_error(); /* no host mapping is the normal case here, not an error */
        if ((mirror = stage_mirror(s, heap)) == NULL)
            return pto_fail(PTO_ERR_OUT_OF_MEMORY, "bind: out of host memory for the staging mirror");
    }
    uint8_t *base = *heap_view != NULL ? *heap_view : mirror;
    for (uint32_t i = 0; i < s->tensors.count; i++) {
        const RunTensor *t = &s->tensors.entries[i];
        if (!t->staged || t->size == 0)
            continue;
        int rc = hbg_bridge_add(&s->bridge, t->dev, t->size, base + (t->dev - (uint64_t)(uintptr_t)heap));
        if (rc != PTO_OK)
            return rc;
    }
    return PTO_OK;
}

static void close_bridge(const HostApi *api, RuntimeSlotScratch *s, uint8_t *heap, uint8_t *heap_view)
{
    hbg_bridge_reset(&s->bridge, NULL);
    if (heap_view != NULL)
        host_api_unregister_device_memory_from_host(api, heap);
}

/* ---- bind: the device image ----------------------------------------------------------- */

static int reserve_image(RuntimeSlotScratch *s, size_t bytes)
{
    if (bytes <= s->image_cap)
        return PTO_OK;
    size_t cap = round_up(bytes, HBG_ARENA_GRANULE);
    uint8_t *p = realloc(s->image, cap);
    if (p == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "bind: out of host memory for a %zu-byte device image", bytes);
    s->image = p;
    s->image_cap = cap;
    return PTO_OK;
}

/* Writes the argument block and the run's graph — its own image, or with a
   recording the run's base table — into the bank's runtime arena (the
   scheduler's scratch state goes to its GM shared memory) and fills launch. */
static int write_image(const HostApi *api, RuntimeSlotScratch *s, const HbgRecording *rec, uint32_t task_count,
                       const CallConfig *cfg, const void *trace, DeviceLaunch *launch, uint64_t *args_dev,
                       uint64_t *image_bytes)
{
    HbgGraph *g = &s->graph;
    size_t graph_bytes = rec != NULL ? 0 : hbg_graph_image_bytes(g, NULL);
    size_t bases_bytes = rec != NULL ? (size_t)rec->base_count * sizeof(uint64_t) : 0;
    /* the argument block, the executor's message (a faulting kernel's text), the base table or the graph */
    size_t total = sizeof(PtoAicpuArgs) + HBG_MESSAGE_BYTES + bases_bytes + graph_bytes;
    /* and the scheduler's state in the GM shared memory */
    *image_bytes = total + pto_graph_state_bytes(task_count);
    int rc = host_api_setup_static_arena(api, 0, round_up(pto_graph_state_bytes(task_count), HBG_ARENA_GRANULE),
                                         round_up(total, HBG_ARENA_GRANULE));
    if (rc != PTO_OK)
        return rc;
    size_t sm_size, arena_size;
    uint8_t *sm = host_api_acquire_pooled_gm_sm(api, &sm_size);
    uint8_t *arena = host_api_acquire_pooled_runtime_arena(api, &arena_size);
    if (sm == NULL || arena == NULL)
        return PTO_ERR_OUT_OF_MEMORY;
    if ((rc = reserve_image(s, total)) != PTO_OK)
        return rc;

    uint32_t block_dim = call_config_block_dim(cfg);
    PtoAicpuArgs a = {
        .magic = PTO_AICPU_ARGS_MAGIC,
        .abi_version = PTO_DEVICE_ABI_VERSION,
        .work_kind = PTO_DEVICE_WORK_GRAPH,
        .block_dim = block_dim,
        .run_serial = runtime_next_run_serial(),
        .work_dev = rec != NULL ? rec->image_dev
                                : (uint64_t)(uintptr_t)arena + sizeof(PtoAicpuArgs) + HBG_MESSAGE_BYTES,
        .work_bytes = rec != NULL ? rec->image_bytes : graph_bytes,
        .state_dev = (uint64_t)(uintptr_t)sm,
        .state_bytes = sm_size,
        .message_dev = (uint64_t)(uintptr_t)arena + sizeof(PtoAicpuArgs),
        .trace_dev = (uint64_t)(uintptr_t)trace,
        .bases_dev = rec != NULL ? (uint64_t)(uintptr_t)arena + sizeof(PtoAicpuArgs) + HBG_MESSAGE_BYTES : 0,
        .base_count = rec != NULL ? rec->base_count : 0,
    };
    memcpy(s->image, &a, sizeof a);
    memset(s->image + sizeof a, 0, HBG_MESSAGE_BYTES);
    if (rec != NULL)
        memcpy(s->image + sizeof a + HBG_MESSAGE_BYTES, s->bases, bases_bytes);
    else
        hbg_graph_write_image(g, s->image + sizeof a + HBG_MESSAGE_BYTES, NULL);
    if ((rc = host_api_copy_to_device(api, arena, s->image, total)) != PTO_OK)
        return rc;
    *launch = (DeviceLaunch){
        .args_dev = (uint64_t)(uintptr_t)arena,
        .aicpu_threads = call_config_aicpu_threads(cfg),
        .block_dim = block_dim,
        .timeout_ms = call_config_timeout_ms(cfg),
    };
    *args_dev = launch->args_dev;
    return PTO_OK;
}

/* A program's recorded graph for this run: the one of its geometry, else the
   graph just built, recorded now (hbg_recording.h). */
static int replay_or_record(const HostApi *api, HbgRun *h, RuntimeSlotScratch *s, const RuntimeCallable *c,
                            const ChipStorageTaskArgs *args, int built)
{
    HbgBases bases = { s->bases, 1 + s->tensors.count + (uint32_t)args->scalar_count, s->tensors.count };
    hbg_recording_bases(s->bases, s->local_base, &s->tensors, args->scalars, (uint32_t)args->scalar_count);
    s->base_count = bases.count;
    if (!built) {
        if ((h->recording = hbg_recording_take(c->recorder, &s->tensors, (uint32_t)args->scalar_count)) == NULL)
            return PTO_OK;
        /* the locals as the recorded orchestration left them */
        s->local_high = s->local_base + h->recording->local_high;
        s->local_peak = h->recording->local_high;
        h->graph_source = PTO_RUN_GRAPH_REPLAYED;
        return PTO_OK;
    }
    int rc = hbg_recording_make(c->recorder, api, &s->graph, &s->tensors, &bases, s->local_high - s->local_base,
                                &s->image, &s->image_cap, &h->recording);
    if (h->recording != NULL)
        h->graph_source = PTO_RUN_GRAPH_RECORDED;
    return rc;
}

/* Builds the run's graph in the scratch: stages the args, then replays the
   program's recording or runs the orchestration (recording a program's graph). */
static int build_graph(const HostApi *api, HbgRun *h, RuntimeSlotScratch *s, const RuntimeCallable *c,
                       const ChipStorageTaskArgs *args, const CallConfig *cfg)
{
    hbg_graph_reset(&s->graph);
    /* A program's task count is known before it runs: one that cannot fit the
       graph is refused before anything is staged or submitted, instead of
       after millions of submits. */
    if (c->orch_entry == NULL && c->program_tasks > HBG_MAX_TASKS)
        return c->program_tasks == UINT64_MAX
                   ? pto_fail(PTO_ERR_CAPACITY,
                              "bind: the program's task count (its SUBMITs times their loops' trip counts) overflows "
                              "64 bits; an hbg run holds at most %u tasks",
                              HBG_MAX_TASKS)
                   : pto_fail(PTO_ERR_CAPACITY,
                              "bind: the program submits %llu tasks (its SUBMITs times their loops' trip counts); an "
                              "hbg run holds at most %u tasks",
                              (unsigned long long)c->program_tasks, HBG_MAX_TASKS);
    /* a library's allocations are unknown in advance: it gets ring 0's heap */
    uint64_t local_bytes = c->orch_entry != NULL ? call_config_ring_heap(cfg, 0) : c->program_local_bytes;
    uint64_t heap_bytes = 0;
    uint8_t *heap = NULL;
    int rc;
    if ((rc = bind_args(api, c, s, args, local_bytes, &heap_bytes)) != PTO_OK ||
        (rc = place_tensors(api, s, heap_bytes, &heap)) != PTO_OK || (rc = run_tensors_stage(api, &s->tensors)) != PTO_OK)
        return rc;
    if (c->recorder != NULL && ((rc = replay_or_record(api, h, s, c, args, 0)) != PTO_OK || h->recording != NULL))
        return rc;
    device_args(s, args);

    /* the orchestration sees the run through the bridge only while it runs */
    uint8_t *heap_view = NULL;
    if ((rc = open_bridge(api, s, heap, heap_bytes, &heap_view)) == PTO_OK) {
        uint64_t start = pto_thread_cpu_ns();
        rc = hbg_orchestrate(c, s);
        h->orchestration_ns = pto_thread_cpu_ns() - start;
    }
    close_bridge(api, s, heap, heap_view);
    if (rc == PTO_OK && c->recorder != NULL)
        rc = replay_or_record(api, h, s, c, args, 1);
    return rc;
}

/* Writes the built graph's image (with the run's trace buffer when asked). */
static int write_run(const HostApi *api, HbgRun *h, RuntimeSlotScratch *s, const CallConfig *cfg,
                     DeviceLaunch *launch)
{
    /* the graph is built (or recorded): its task count is the trace's size */
    int rc;
    if (cfg->enable_trace && ((rc = run_trace_check_tasks(h->task_count, "the run's graph has")) != PTO_OK ||
                              (rc = run_trace_alloc(api, h->task_count, &h->trace)) != PTO_OK))
        return rc;
    uint64_t image_bytes = 0;
    if ((rc = write_image(api, s, h->recording, h->task_count, cfg, h->trace, launch, &h->args_dev, &image_bytes)) !=
        PTO_OK) {
        run_trace_free(api, &h->trace);
        return rc;
    }
    /* the GM heap up to the locals' high-water: the staged tensors, then the locals' peak; a
       recording's image is the callable's, like its upload, not the run's */
    uint64_t heap_used = s->local_high - s->heap_base;
    h->device_bytes = heap_used + image_bytes + (h->trace != NULL ? pto_trace_bytes(h->task_count) : 0);
    return PTO_OK;
}

int runtime_bind(RuntimeRun *run, RuntimeSlotScratch *scratch, const HostApi *api, const RuntimeCallable *c,
                 const ChipStorageTaskArgs *args, const CallConfig *cfg, const NativeRunDescriptor *desc,
                 DeviceLaunch *launch)
{
    int rc = runtime_bind_check(run, scratch, api, c, args, cfg, launch);
    if (rc == PTO_OK)
        rc = runtime_lend_scratch(&scratch->holder, run);
    if (rc != PTO_OK)
        return rc;
    HbgRun *h = hbg_run(run);
    h->graph_source = PTO_RUN_GRAPH_BUILT;
    if ((rc = build_graph(api, h, scratch, c, args, cfg)) == PTO_OK) {
        h->task_count = h->recording != NULL ? h->recording->task_count : scratch->graph.task_count;
        rc = write_run(api, h, scratch, cfg, launch);
    }
    if (rc != PTO_OK) {
        if (h->recording != NULL)
            hbg_recording_give_back(c->recorder, h->recording);
        scratch->holder = NULL;
        memset(h, 0, sizeof *h);
        return rc;
    }
    h->timeout_ms = launch->timeout_ms;
    h->callable = c;
    h->scratch = scratch;
    h->dep_graph = cfg->enable_dep_graph;
    if (h->dep_graph || h->trace != NULL)
        memcpy(scratch->output_prefix, cfg->output_prefix, sizeof scratch->output_prefix);
    if (desc != NULL)
        h->desc = *desc;
    h->magic = HBG_RUN_MAGIC;
    return PTO_OK;
}

/* ---- collect and unbind ---------------------------------------------------------------- */

/* The failed run's error, named from the device's status block. */
static int read_failure(const HostApi *api, const HbgRun *h, int execution_rc)
{
    PtoDeviceStatus s;
    void *status_dev = (void *)(uintptr_t)(h->args_dev + offsetof(PtoAicpuArgs, status));
    int rc = host_api_copy_from_device(api, &s, status_dev, sizeof s);
    if (rc != PTO_OK)
        return runtime_unreadable_status(execution_rc, rc);
    char progress[96];
    snprintf(progress, sizeof progress, "%llu of %u task(s) completed", (unsigned long long)s.tasks_completed,
             h->task_count);
    if (s.error_code == PTO_ERR_KERNEL_FAULT) {
        char message[HBG_MESSAGE_BYTES];
        void *message_dev = (void *)(uintptr_t)(h->args_dev + sizeof(PtoAicpuArgs));
        if (host_api_copy_from_device(api, message, message_dev, sizeof message) != PTO_OK)
            message[0] = '\0'; /* the status says what happened; the text only adds to it */
        message[sizeof message - 1] = '\0';
        return runtime_kernel_fault(&h->callable->copy.view, &s, progress, message);
    }
    /* a hung device never writes its status: the host's timeout is the answer */
    if (s.error_code == PTO_ERR_TIMEOUT || (s.error_code == 0 && execution_rc == PTO_ERR_TIMEOUT))
        return pto_fail(PTO_ERR_TIMEOUT, "the run exceeded its timeout of %u ms: %s", h->timeout_ms, progress);
    if (s.error_code == PTO_ERR_DEVICE)
        return pto_fail(PTO_ERR_DEVICE, "the device executor refused the run's graph image");
    return pto_fail(execution_rc, "the run failed (%d) with %s", execution_rc, progress);
}

int runtime_read_failure(RuntimeRun *run, const HostApi *api, int execution_rc)
{
    int rc = runtime_run_check(run, api, HBG_RUN_MAGIC, "read_failure");
    return rc != PTO_OK ? rc : read_failure(api, hbg_run(run), execution_rc);
}

/* The run's graph as the DOT diagnostic (services/dep_graph.h). */
static int write_dep_graph(const HbgRun *h, NativeRunReport *report)
{
    const HbgRecording *rec = h->recording;
    if (rec != NULL)
        return dep_graph_write(h->scratch->output_prefix, &h->desc, rec->task_count, rec->func_ids, rec->producers,
                               rec->consumers, rec->edge_count, report);
    const HbgGraph *g = &h->scratch->graph;
    uint32_t *func_ids = malloc(((size_t)g->task_count + 2 * (size_t)g->edge_count + 1) * sizeof *func_ids);
    if (func_ids == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "collect: out of host memory for the dependency graph");
    uint32_t *producers = func_ids + g->task_count, *consumers = producers + g->edge_count;
    for (uint32_t t = 0; t < g->task_count; t++)
        func_ids[t] = g->tasks[t].func_id;
    uint32_t edges = 0;
    for (uint32_t e = 0; e < g->edge_count; e++) {
        if (g->edges[2 * e] & HBG_EDGE_REUSE)
            continue; /* orders a reuse of freed local bytes: no dependency (hbg_graph.h) */
        producers[edges] = g->edges[2 * e];
        consumers[edges++] = g->edges[2 * e + 1];
    }
    int rc = dep_graph_write(h->scratch->output_prefix, &h->desc, g->task_count, func_ids, producers, consumers,
                             edges, report);
    free(func_ids);
    return rc;
}

int runtime_run_outputs(RuntimeRun *run, const HostApi *api, RunOutputs *out)
{
    int rc = runtime_run_check(run, api, HBG_RUN_MAGIC, "collect");
    const HbgRun *h = hbg_run(run);
    if (rc == PTO_OK)
        *out = (RunOutputs){ &h->scratch->tensors, h->trace, h->scratch->output_prefix, &h->desc,
                             &h->callable->copy.view };
    return rc;
}

int runtime_write_dep_graph(RuntimeRun *run, const HostApi *api)
{
    (void)api; /* hbg's graph is the host's own */
    const HbgRun *h = hbg_run(run);
    return h->dep_graph ? write_dep_graph(h, run->report) : PTO_OK;
}

int runtime_collect_device_figures(RuntimeRun *run, const HostApi *api)
{
    (void)run, (void)api; /* the host ran the orchestration: bind knew its locals' peak */
    return PTO_OK;
}

uint32_t runtime_run_graph_source(const RuntimeRun *run)
{
    const HbgRun *h = (const HbgRun *)run->opaque;
    return h->magic == HBG_RUN_MAGIC ? h->graph_source : PTO_RUN_GRAPH_BUILT;
}

uint64_t runtime_run_orchestration_ns(const RuntimeRun *run)
{
    const HbgRun *h = (const HbgRun *)run->opaque;
    return h->magic == HBG_RUN_MAGIC ? h->orchestration_ns : 0;
}

uint64_t runtime_run_device_bytes(const RuntimeRun *run)
{
    const HbgRun *h = (const HbgRun *)run->opaque;
    return h->magic == HBG_RUN_MAGIC ? h->device_bytes : 0;
}

void runtime_unbind(RuntimeRun *run, const HostApi *api)
{
    if (!runtime_run_bound(run, api, HBG_RUN_MAGIC))
        return; /* never bound, or already unbound: nothing to release */
    HbgRun *h = hbg_run(run);
    /* staged tensors live in the bank's GM heap: only the trace buffer is per run */
    run_trace_free(api, &h->trace);
    if (h->recording != NULL)
        hbg_recording_give_back(h->callable->recorder, h->recording);
    h->scratch->holder = NULL;
    memset(h, 0, sizeof *h);
}
