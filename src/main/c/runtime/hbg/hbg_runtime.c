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
 * shared memory. validate: copy OUT/INOUT back after a successful run (and
 * write the dependency graph when asked), or name the failing task from the
 * device's status block.
 *
 * Everything a bind writes is its own bank's (bank = slot), so a run may be
 * prepared while another executes in the other bank.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/call_config.h"
#include "format/chip_callable.h"
#include "common/dep_graph.h"
#include "util/last_error.h"
#include "common/run_trace.h"
#include "common/run_args.h"
#include "device/pto_builtin_kernels.h"
#include "device/pto_device_abi.h"
#include "ptorun/pto_orchestration.h"
#include "util/library_cache.h"
#include "runtime/hbg/hbg_internal.h"
#include "runtime/runtime.h"

#define HBG_RUN_MAGIC 0x48424752u      /* "HBGR": a bound run */
#define HBG_STAGING_ALIGN 64u          /* staged tensors start on a cache line */
#define HBG_ARENA_GRANULE (64u << 10)  /* arenas grow in these steps */

/* The runtime's part of a run (RuntimeRun.opaque). */
typedef struct HbgRun {
    uint32_t magic;
    uint32_t task_count;
    const RuntimeCallable *callable;
    HbgWorkspace *ws;
    uint64_t args_dev;        /* the argument block (and status) on the device */
    int32_t dep_graph;        /* CallConfig.enable_dep_graph (prefix in ws->output_prefix) */
    void *trace;              /* the run's trace buffer (CallConfig.enable_trace), NULL when off */
    uint32_t timeout_ms;      /* the run's deadline, for the timeout's message */
    NativeRunDescriptor desc; /* the run's identity (zero when bind was given none) */
} HbgRun;
_Static_assert(sizeof(HbgRun) <= PTO_RUNTIME_RUN_BYTES, "HbgRun fits RuntimeRun");

/* Tells the device executor that an argument block belongs to a new run. */
static _Atomic uint64_t next_run_serial = 1;

static HbgRun *hbg_run(RuntimeRun *run)
{
    return (HbgRun *)run->opaque;
}

int runtime_supports_concurrent_prepare(void)
{
    return 1;
}

int runtime_prewarm(const HostApi *api, const CallConfig *cfg)
{
    (void)api, (void)cfg; /* hbg rebuilds its image every run: nothing to warm */
    return PTO_OK;
}

HbgWorkspace *hbg_workspace(const RuntimeCallable *c, uint32_t bank)
{
    return bank < PTO_PIPELINE_MAX_DEPTH ? c->workspaces[bank] : NULL;
}

static size_t round_up(size_t n, size_t granule)
{
    return n == 0 ? granule : (n + granule - 1) / granule * granule;
}

/* ---- registration ---------------------------------------------------------------- */

static void destroy_workspace(HbgWorkspace *ws)
{
    if (ws == NULL)
        return;
    hbg_graph_destroy(&ws->graph);
    hbg_bridge_destroy(&ws->bridge);
    free(ws->image);
    free(ws->mirror);
    free(ws->dev_args);
    free(ws);
}

static void destroy_callable(RuntimeCallable *c)
{
    for (uint32_t b = 0; b < PTO_PIPELINE_MAX_DEPTH; b++)
        destroy_workspace(c->workspaces[b]);
    free(c->bytes);
    free(c);
}

/* A private, validated copy of the caller's bytes with its workspaces. */
static int copy_callable(const void *callable, uint32_t total_size, RuntimeCallable **out)
{
    RuntimeCallable *c = calloc(1, sizeof *c);
    if (c == NULL)
        goto oom;
    int rc = chip_callable_private_copy(callable, total_size, &c->bytes, &c->view);
    if (rc != PTO_OK) {
        destroy_callable(c);
        return rc;
    }
    for (uint32_t b = 0; b < PTO_PIPELINE_MAX_DEPTH; b++) {
        HbgWorkspace *ws = calloc(1, sizeof *ws);
        if (ws == NULL)
            goto oom;
        hbg_graph_init(&ws->graph);
        hbg_bridge_init(&ws->bridge);
        c->workspaces[b] = ws;
        if ((ws->dev_args = aligned_alloc(_Alignof(ChipStorageTaskArgs), sizeof *ws->dev_args)) == NULL)
            goto oom;
    }
    *out = c;
    return PTO_OK;

oom:
    if (c != NULL)
        destroy_callable(c);
    return pto_fail(PTO_ERR_OUT_OF_MEMORY, "register_callable: out of host memory");
}

/* Reads each child's resolved kernel address back from the uploaded copy. */
static int read_kernels(const HostApi *api, RuntimeCallable *c)
{
    const ChipCallableView *v = &c->view;
    uint32_t n = v->header.child_count;
    ChipCallableChild children[PTO_CALLABLE_MAX_CHILDREN];
    if (n == 0)
        return PTO_OK;
    int rc = host_api_copy_from_device(api, children, (uint8_t *)c->upload_dev + v->header.children.offset,
                                       (size_t)n * sizeof *children);
    if (rc != PTO_OK)
        return rc;
    for (uint32_t i = 0; i < n; i++) {
        if (children[i].resolved_addr == 0)
            return pto_fail(PTO_ERR_BAD_CALLABLE, "register_callable: child %u (func_id %u) was not resolved", i,
                            children[i].func_id);
        c->kernels[i] = (HbgKernel){ children[i].resolved_addr, children[i].func_id, children[i].core_type };
    }
    return PTO_OK;
}

/* A program's local heap: its ALLOC_TENSORs (each allocated once per run),
   each rounded up to HBG_LOCAL_ALIGN; saturates instead of wrapping (bind then
   cannot commit it and says so). */
static uint64_t program_local_bytes(const ChipCallableView *v)
{
    uint64_t total = 0;
    PtoProgramCursor cursor = { 0, 0 };
    PtoProgramInsn insn;
    while (chip_program_next(v, &cursor, &insn)) {
        if (insn.head.opcode != PTO_OP_ALLOC_TENSOR)
            continue;
        uint64_t bytes = insn.u.alloc.bytes, rounded;
        if (__builtin_add_overflow(bytes, HBG_LOCAL_ALIGN - 1, &rounded) ||
            __builtin_add_overflow(total, rounded / HBG_LOCAL_ALIGN * HBG_LOCAL_ALIGN, &total))
            return UINT64_MAX;
    }
    return total;
}

/* A library orchestration: its image loaded on the host (once per content per
   device context, counted by get_host_dlopen_count) and its entry resolved. */
static int load_orchestration(const HostApi *api, RuntimeCallable *c)
{
    const ChipCallableHeader *h = &c->view.header;
    int rc = host_api_load_host_library(api, c->bytes + h->orchestration.offset, h->orchestration.size,
                                        &c->orch_library);
    if (rc != PTO_OK)
        return pto_fail(rc, "register_callable: the orchestration library: %s", pto_last_error());
    char why[256];
    const char *entry = chip_callable_blob(&c->view, h->orchestration_entry);
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

int runtime_register_callable(const HostApi *api, const void *callable, RuntimeCallable **out)
{
    if (out == NULL || api == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "register_callable: NULL %s", out == NULL ? "out" : "HostApi");
    *out = NULL;
    ChipCallableView probe;
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    if (chip_callable_decode(callable, &probe, msg, sizeof msg) != PTO_OK)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "register_callable: %s", msg);
    RuntimeCallable *c = NULL;
    int rc = copy_callable(callable, probe.header.total_size, &c);
    if (rc != PTO_OK)
        return rc;
    uint64_t hash = pto_fnv1a64(c->bytes, c->view.header.total_size);
    if ((rc = host_api_upload_chip_callable_buffer(api, c->bytes, c->view.header.total_size, hash, &c->upload_dev)) !=
        PTO_OK)
        goto fail_upload;
    if ((rc = read_kernels(api, c)) != PTO_OK)
        goto fail_kernels;
    if (c->view.header.orchestration_kind == PTO_ORCH_LIBRARY)
        rc = load_orchestration(api, c);
    else {
        c->program_local_bytes = program_local_bytes(&c->view);
        c->program_tasks = chip_program_task_count(&c->view);
    }
    if (rc != PTO_OK)
        goto fail_kernels;
    *out = c;
    return PTO_OK;

fail_kernels:
    host_api_release_chip_callable_buffer(api, c->upload_dev);
fail_upload:
    destroy_callable(c);
    return rc;
}

void runtime_release_callable(const HostApi *api, RuntimeCallable *c)
{
    if (c == NULL)
        return;
    if (c->orch_library != NULL)
        host_api_release_host_library(api, c->orch_library);
    if (c->upload_dev != NULL)
        host_api_release_chip_callable_buffer(api, c->upload_dev);
    destroy_callable(c);
}

/* ---- bind: the args ----------------------------------------------------------------- */

/* Checks the args against the signature and records every tensor; returns the
   GM heap bytes the staged ones and then the local heap (`local_bytes`) need
   (offsets in tensors[i].dev and ws->local_base). */
static int bind_args(const HostApi *api, const RuntimeCallable *c, HbgWorkspace *ws, const ChipStorageTaskArgs *args,
                     uint64_t local_bytes, uint64_t *heap_bytes)
{
    const ChipCallableView *v = &c->view;
    int rc = run_args_check(api, v, args);
    if (rc != PTO_OK)
        return rc;
    uint64_t offset = 0;
    ws->tensor_count = v->tensor_count;
    for (uint32_t i = 0; i < v->tensor_count; i++) {
        const ChipTensor *t = &args->tensors[i];
        HbgTensor *h = &ws->tensors[i];
        *h = (HbgTensor){ .host = t->addr, .dev = t->addr, .size = t->size, .direction = v->signature[i] };
        if (t->child_memory) {
            h->host = 0;
            continue;
        }
        offset = (offset + HBG_STAGING_ALIGN - 1) / HBG_STAGING_ALIGN * HBG_STAGING_ALIGN;
        h->staged = 1;
        h->dev = offset;
        if (__builtin_add_overflow(offset, t->size, &offset) || offset > SIZE_MAX / 2)
            return pto_fail(PTO_ERR_CAPACITY, "args: the staged tensors need more bytes than a GM heap can hold");
    }
    ws->local_base = (offset + HBG_LOCAL_ALIGN - 1) / HBG_LOCAL_ALIGN * HBG_LOCAL_ALIGN;
    if (__builtin_add_overflow(ws->local_base, local_bytes, &offset) || offset > SIZE_MAX / 2)
        return pto_fail(PTO_ERR_CAPACITY, "bind: the staged tensors and a %llu-byte local heap need more bytes than a GM "
                                          "heap can hold",
                        (unsigned long long)local_bytes);
    ws->local_end = offset;
    *heap_bytes = offset;
    return PTO_OK;
}

/* The args as the orchestration sees them: every tensor's addr is its device address. */
static void device_args(HbgWorkspace *ws, const ChipStorageTaskArgs *args)
{
    ChipStorageTaskArgs *d = ws->dev_args;
    for (uint32_t i = 0; i < ws->tensor_count; i++) {
        d->tensors[i] = args->tensors[i];
        d->tensors[i].addr = ws->tensors[i].dev;
    }
    memcpy(d->scalars, args->scalars, (size_t)args->scalar_count * sizeof d->scalars[0]);
    d->tensor_count = args->tensor_count;
    d->scalar_count = args->scalar_count;
}

/* Commits the bank's GM heap, places the staged tensors and the local heap in
   it and forms the alias classes of every tensor (the local heap is one range:
   its allocations are fresh bytes that no argument tensor overlaps). */
static int place_tensors(const HostApi *api, HbgWorkspace *ws, uint64_t heap_bytes, uint8_t **heap)
{
    int rc = host_api_setup_static_arena(api, round_up(heap_bytes, HBG_ARENA_GRANULE), 0, 0);
    if (rc != PTO_OK)
        return rc;
    size_t heap_size;
    if ((*heap = host_api_acquire_pooled_gm_heap(api, &heap_size)) == NULL)
        return PTO_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < ws->tensor_count; i++) {
        HbgTensor *t = &ws->tensors[i];
        if (t->staged)
            t->dev += (uint64_t)(uintptr_t)*heap;
        if (t->size > 0 && (rc = hbg_graph_add_range(&ws->graph, t->dev, t->dev + t->size)) != PTO_OK)
            return rc;
    }
    ws->local_base += (uint64_t)(uintptr_t)*heap;
    ws->local_end += (uint64_t)(uintptr_t)*heap;
    ws->local_next = ws->local_base;
    if (ws->local_end > ws->local_base &&
        (rc = hbg_graph_add_range(&ws->graph, ws->local_base, ws->local_end)) != PTO_OK)
        return rc;
    hbg_graph_seal_classes(&ws->graph);
    return PTO_OK;
}

/* IN and INOUT tensors are copied in; pure OUT ones are zeroed, so bytes no
   kernel writes come back as zeros rather than as another run's data. */
static int stage_tensors(const HostApi *api, const HbgWorkspace *ws)
{
    for (uint32_t i = 0; i < ws->tensor_count; i++) {
        const HbgTensor *t = &ws->tensors[i];
        if (!t->staged || t->size == 0)
            continue;
        void *dev = (void *)(uintptr_t)t->dev;
        int rc = t->direction == PTO_ARG_OUT ? host_api_device_memset(api, dev, 0, t->size)
                                             : host_api_copy_to_device(api, dev, (const void *)(uintptr_t)t->host, t->size);
        if (rc != PTO_OK)
            return rc;
    }
    return PTO_OK;
}

/* ---- bind: the bridge --------------------------------------------------------------- */

/* The host staging mirror where the GM heap has no host view (a5 onboard): a
   private copy of what stage_tensors put on the device (IN/INOUT bytes, zeroed
   OUT), laid out like the heap, so reads see the device's bytes and writes
   never touch the caller's buffers. Returns NULL on out-of-memory. */
static uint8_t *stage_mirror(HbgWorkspace *ws, const uint8_t *heap)
{
    size_t bytes = 0;
    for (uint32_t i = 0; i < ws->tensor_count; i++) {
        const HbgTensor *t = &ws->tensors[i];
        if (t->staged && t->size > 0 && t->dev - (uint64_t)(uintptr_t)heap + t->size > bytes)
            bytes = (size_t)(t->dev - (uint64_t)(uintptr_t)heap + t->size);
    }
    if (bytes > ws->mirror_cap) {
        uint8_t *p = realloc(ws->mirror, bytes);
        if (p == NULL)
            return NULL;
        ws->mirror = p;
        ws->mirror_cap = bytes;
    }
    for (uint32_t i = 0; i < ws->tensor_count; i++) {
        const HbgTensor *t = &ws->tensors[i];
        if (!t->staged || t->size == 0)
            continue;
        uint8_t *m = ws->mirror + (t->dev - (uint64_t)(uintptr_t)heap);
        if (t->direction == PTO_ARG_OUT)
            memset(m, 0, t->size);
        else
            memcpy(m, (const void *)(uintptr_t)t->host, t->size);
    }
    return ws->mirror;
}

/* Opens the bridge on the staged tensors: views into the host mapping of the
   GM heap when the platform has one (a2a3), else the workspace's staging
   mirror, whose writes the bridge pushes to the device through HostApi.
   Child-memory tensors are not reachable (reads of them fail closed). */
static int open_bridge(const HostApi *api, HbgWorkspace *ws, uint8_t *heap, uint64_t heap_bytes, uint8_t **heap_view)
{
    hbg_bridge_reset(&ws->bridge, api);
    *heap_view = heap_bytes > 0 ? host_api_register_device_memory_to_host(api, heap, heap_bytes) : NULL;
    uint8_t *mirror = NULL;
    if (*heap_view == NULL && heap_bytes > 0) {
        pto_clear_error(); /* no host mapping is the normal case here, not an error */
        if ((mirror = stage_mirror(ws, heap)) == NULL)
            return pto_fail(PTO_ERR_OUT_OF_MEMORY, "bind: out of host memory for the staging mirror");
    }
    uint8_t *base = *heap_view != NULL ? *heap_view : mirror;
    for (uint32_t i = 0; i < ws->tensor_count; i++) {
        const HbgTensor *t = &ws->tensors[i];
        if (!t->staged || t->size == 0)
            continue;
        int rc = hbg_bridge_add(&ws->bridge, t->dev, t->size, base + (t->dev - (uint64_t)(uintptr_t)heap));
        if (rc != PTO_OK)
            return rc;
    }
    return PTO_OK;
}

static void close_bridge(const HostApi *api, HbgWorkspace *ws, uint8_t *heap, uint8_t *heap_view)
{
    hbg_bridge_reset(&ws->bridge, NULL);
    if (heap_view != NULL)
        host_api_unregister_device_memory_from_host(api, heap);
}

/* ---- bind: the device image ----------------------------------------------------------- */

static int reserve_image(HbgWorkspace *ws, size_t bytes)
{
    if (bytes <= ws->image_cap)
        return PTO_OK;
    size_t cap = round_up(bytes, HBG_ARENA_GRANULE);
    uint8_t *p = realloc(ws->image, cap);
    if (p == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "bind: out of host memory for a %zu-byte device image", bytes);
    ws->image = p;
    ws->image_cap = cap;
    return PTO_OK;
}

/* Writes the argument block and the graph into the bank's runtime arena (the
   scheduler's scratch state goes to its GM shared memory) and fills launch. */
static int write_image(const HostApi *api, HbgWorkspace *ws, const CallConfig *cfg, const void *trace,
                       DeviceLaunch *launch, uint64_t *args_dev)
{
    HbgGraph *g = &ws->graph;
    size_t graph_bytes = hbg_graph_image_bytes(g);
    size_t total = sizeof(PtoAicpuArgs) + graph_bytes;
    int rc = host_api_setup_static_arena(api, 0, round_up(pto_graph_state_bytes(g->task_count), HBG_ARENA_GRANULE),
                                         round_up(total, HBG_ARENA_GRANULE));
    if (rc != PTO_OK)
        return rc;
    size_t sm_size, arena_size;
    uint8_t *sm = host_api_acquire_pooled_gm_sm(api, &sm_size);
    uint8_t *arena = host_api_acquire_pooled_runtime_arena(api, &arena_size);
    if (sm == NULL || arena == NULL)
        return PTO_ERR_OUT_OF_MEMORY;
    if ((rc = reserve_image(ws, total)) != PTO_OK)
        return rc;

    uint32_t block_dim = call_config_block_dim(cfg);
    PtoAicpuArgs a = {
        .magic = PTO_AICPU_ARGS_MAGIC,
        .abi_version = PTO_DEVICE_ABI_VERSION,
        .work_kind = PTO_DEVICE_WORK_GRAPH,
        .block_dim = block_dim,
        .run_serial = atomic_fetch_add(&next_run_serial, 1),
        .work_dev = (uint64_t)(uintptr_t)arena + sizeof(PtoAicpuArgs),
        .work_bytes = graph_bytes,
        .state_dev = (uint64_t)(uintptr_t)sm,
        .state_bytes = sm_size,
        .trace_dev = (uint64_t)(uintptr_t)trace,
    };
    memcpy(ws->image, &a, sizeof a);
    hbg_graph_write_image(g, ws->image + sizeof a);
    if ((rc = host_api_copy_to_device(api, arena, ws->image, total)) != PTO_OK)
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

int runtime_bind(RuntimeRun *run, const HostApi *api, const RuntimeCallable *c, const ChipStorageTaskArgs *args,
                 const CallConfig *cfg, const NativeRunDescriptor *desc, DeviceLaunch *launch)
{
    if (run == NULL || api == NULL || c == NULL || args == NULL || cfg == NULL || launch == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "bind: NULL run, HostApi, callable, args, config or launch");
    HbgWorkspace *ws = hbg_workspace(c, api->arena_bank);
    if (ws == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "bind: arena bank %u is outside 0..%u", api->arena_bank,
                        PTO_PIPELINE_MAX_DEPTH - 1);
    hbg_graph_reset(&ws->graph);
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
    if ((rc = bind_args(api, c, ws, args, local_bytes, &heap_bytes)) != PTO_OK ||
        (rc = place_tensors(api, ws, heap_bytes, &heap)) != PTO_OK || (rc = stage_tensors(api, ws)) != PTO_OK)
        return rc;
    device_args(ws, args);

    /* the orchestration sees the run through the bridge only while it runs */
    uint8_t *heap_view = NULL;
    if ((rc = open_bridge(api, ws, heap, heap_bytes, &heap_view)) == PTO_OK)
        rc = hbg_orchestrate(c, ws);
    close_bridge(api, ws, heap, heap_view);
    if (rc != PTO_OK)
        return rc;

    HbgRun *h = hbg_run(run);
    /* the graph is built: its task count is the trace's size */
    void *trace = NULL;
    if (cfg->enable_trace && ((rc = run_trace_check_tasks(ws->graph.task_count, "the run's graph has")) != PTO_OK ||
                              (rc = run_trace_alloc(api, ws->graph.task_count, &trace)) != PTO_OK))
        return rc;
    if ((rc = write_image(api, ws, cfg, trace, launch, &h->args_dev)) != PTO_OK) {
        run_trace_free(api, &trace);
        return rc;
    }
    h->trace = trace;
    h->task_count = ws->graph.task_count;
    h->timeout_ms = launch->timeout_ms;
    h->callable = c;
    h->ws = ws;
    h->dep_graph = cfg->enable_dep_graph;
    if (h->dep_graph || h->trace != NULL)
        memcpy(ws->output_prefix, cfg->output_prefix, sizeof ws->output_prefix);
    if (desc != NULL)
        h->desc = *desc;
    h->magic = HBG_RUN_MAGIC;
    return PTO_OK;
}

/* ---- validate -------------------------------------------------------------------------- */

static int copy_back(const HostApi *api, const HbgWorkspace *ws)
{
    for (uint32_t i = 0; i < ws->tensor_count; i++) {
        const HbgTensor *t = &ws->tensors[i];
        if (!t->staged || t->size == 0 || t->direction == PTO_ARG_IN)
            continue;
        int rc = host_api_copy_from_device(api, (void *)(uintptr_t)t->host, (const void *)(uintptr_t)t->dev, t->size);
        if (rc != PTO_OK)
            return pto_fail(rc, "validate: copying tensor %u (%llu bytes) back to the host failed", i,
                            (unsigned long long)t->size);
    }
    return PTO_OK;
}

/* The failed run's error, named from the device's status block. */
static int describe_failure(const HostApi *api, const HbgRun *h, int execution_rc)
{
    PtoDeviceStatus s;
    void *status_dev = (void *)(uintptr_t)(h->args_dev + offsetof(PtoAicpuArgs, status));
    if (host_api_copy_from_device(api, &s, status_dev, sizeof s) != PTO_OK)
        return pto_fail(execution_rc, "the run failed (%d); its device status could not be read", execution_rc);
    if (s.error_code == PTO_ERR_KERNEL_FAULT) {
        int child = chip_callable_child_of(&h->callable->view, s.func_id);
        ChipCallableChild c = { 0 };
        if (child >= 0)
            chip_callable_child(&h->callable->view, (uint32_t)child, &c);
        return pto_fail(PTO_ERR_KERNEL_FAULT,
                        "kernel fault: task %llu (func_id %u, kernel '%.*s') returned %d (%s) on core %u; %llu of %u "
                        "task(s) completed",
                        (unsigned long long)s.task_id, s.func_id, (int)c.name.size,
                        child >= 0 ? chip_callable_blob(&h->callable->view, c.name) : "", s.kernel_code,
                        c.source_kind == PTO_KERNEL_LIBRARY ? "the kernel library's own code"
                                                            : pto_kernel_code_meaning(s.kernel_code),
                        s.core_id, (unsigned long long)s.tasks_completed,
                        h->task_count);
    }
    /* a hung device never writes its status: the host's timeout is the answer */
    if (s.error_code == PTO_ERR_TIMEOUT || (s.error_code == 0 && execution_rc == PTO_ERR_TIMEOUT))
        return pto_fail(PTO_ERR_TIMEOUT, "the run exceeded its timeout of %u ms: %llu of %u task(s) completed",
                        h->timeout_ms, (unsigned long long)s.tasks_completed, h->task_count);
    if (s.error_code == PTO_ERR_DEVICE)
        return pto_fail(PTO_ERR_DEVICE, "the device executor refused the run's graph image");
    return pto_fail(execution_rc, "the run failed (%d) with %llu of %u task(s) completed", execution_rc,
                    (unsigned long long)s.tasks_completed, h->task_count);
}

/* The run's graph as the DOT diagnostic (common/dep_graph.h). */
static int write_dep_graph(const HbgRun *h)
{
    const HbgGraph *g = &h->ws->graph;
    uint32_t *func_ids = malloc(((size_t)g->task_count + 2 * (size_t)g->edge_count + 1) * sizeof *func_ids);
    if (func_ids == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "validate: out of host memory for the dependency graph");
    uint32_t *producers = func_ids + g->task_count, *consumers = producers + g->edge_count;
    for (uint32_t t = 0; t < g->task_count; t++)
        func_ids[t] = g->tasks[t].func_id;
    for (uint32_t e = 0; e < g->edge_count; e++) {
        producers[e] = g->edges[2 * e];
        consumers[e] = g->edges[2 * e + 1];
    }
    int rc = dep_graph_write(h->ws->output_prefix, &h->desc, g->task_count, func_ids, producers, consumers,
                             g->edge_count);
    free(func_ids);
    return rc;
}

int runtime_describe_failure(RuntimeRun *run, const HostApi *api, int execution_rc)
{
    if (run == NULL || api == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "describe: NULL run or HostApi");
    HbgRun *h = hbg_run(run);
    if (h->magic != HBG_RUN_MAGIC)
        return pto_fail(PTO_ERR_WRONG_PHASE, "describe: the run was never bound");
    return describe_failure(api, h, execution_rc);
}

int runtime_validate(RuntimeRun *run, const HostApi *api, int launched, int execution_rc)
{
    if (run == NULL || api == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "validate: NULL run or HostApi");
    HbgRun *h = hbg_run(run);
    if (h->magic != HBG_RUN_MAGIC)
        return pto_fail(PTO_ERR_WRONG_PHASE, "validate: the run was never bound");
    int rc = PTO_OK;
    if (launched && execution_rc == PTO_OK) {
        rc = copy_back(api, h->ws);
        if (rc == PTO_OK && h->dep_graph)
            rc = write_dep_graph(h);
        if (rc == PTO_OK && h->trace != NULL)
            rc = run_trace_write(api, h->trace, h->ws->output_prefix, &h->desc, &h->callable->view,
                                 run->trace_spans);
    } else if (launched)
        rc = describe_failure(api, h, execution_rc);
    /* staged tensors live in the bank's GM heap: only the trace buffer is per run */
    run_trace_free(api, &h->trace);
    memset(h, 0, sizeof *h);
    return rc;
}
