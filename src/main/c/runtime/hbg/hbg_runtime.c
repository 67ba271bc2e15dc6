/*
 * The hbg runtime (host_build_graph): the orchestration runs on the host in
 * prepare and builds the whole task graph; the device only schedules it.
 *
 * bind: check the args against the signature; commit the bank's GM heap and
 * stage every non-child tensor into it (IN/INOUT copied, pure OUT zeroed);
 * open the host-access bridge, run the orchestration (the program interpreter),
 * close the bridge; write the graph into the bank's runtime arena (argument
 * block + graph image) with its scratch state in the bank's GM shared memory.
 * validate: copy OUT/INOUT back after a successful run, or name the failing
 * task from the device's status block.
 *
 * Everything a bind writes is its own bank's (bank = slot), so a run may be
 * prepared while another executes in the other bank.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/call_config.h"
#include "common/chip_callable.h"
#include "common/last_error.h"
#include "common/run_args.h"
#include "device/pto_builtin_kernels.h"
#include "device/pto_device_abi.h"
#include "ptorun/pto_orchestration.h"
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
} HbgRun;
_Static_assert(sizeof(HbgRun) <= PTO_RUNTIME_RUN_BYTES, "HbgRun fits RuntimeRun");

/* The orchestration handle: what PtoOrchApi calls reach. */
typedef struct HbgOrch {
    const RuntimeCallable *callable;
    HbgWorkspace *ws;
} HbgOrch;

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

/* ---- the orchestration API ---------------------------------------------------- */

static int orch_submit(void *orch, uint32_t func_id, const PtoTaskParam *params, uint32_t n)
{
    HbgOrch *o = orch;
    int child = chip_callable_child_of(&o->callable->view, func_id);
    if (child < 0)
        return pto_fail(PTO_ERR_ORCHESTRATION, "submit: func_id %u is not a child of the callable", func_id);
    if (params == NULL && n > 0)
        return pto_fail(PTO_ERR_ORCHESTRATION, "submit: NULL params");
    const HbgKernel *k = &o->callable->kernels[child];
    return hbg_graph_submit(&o->ws->graph, k->addr, k->func_id, k->core_type, params, n);
}

static uint64_t orch_alloc_tensor(void *orch, uint64_t bytes)
{
    (void)orch, (void)bytes;
    pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "alloc_tensor: run-scoped tensors arrive with issue [3/8]");
    return 0;
}

static int orch_scope(void *orch)
{
    (void)orch;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "scope_begin / scope_end: scopes arrive with issue [3/8]");
}

static int orch_read_tensor(void *orch, uint64_t dev_addr, void *dst, uint64_t n)
{
    return hbg_bridge_read(&((HbgOrch *)orch)->ws->bridge, dev_addr, dst, n);
}

static int orch_write_tensor(void *orch, uint64_t dev_addr, const void *src, uint64_t n)
{
    return hbg_bridge_write(&((HbgOrch *)orch)->ws->bridge, dev_addr, src, n);
}

static const PtoOrchApi hbg_orch_api = {
    .submit = orch_submit,
    .alloc_tensor = orch_alloc_tensor,
    .scope_begin = orch_scope,
    .scope_end = orch_scope,
    .read_tensor = orch_read_tensor,
    .write_tensor = orch_write_tensor,
};

/* ---- registration ---------------------------------------------------------------- */

/* What this hbg runs: program orchestrations of SUBMITs of built-ins. */
static int check_hbg_support(const ChipCallableView *v)
{
    if (v->header.orchestration_kind == PTO_ORCH_LIBRARY)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "register_callable: orchestration libraries arrive with issue [3/8]; "
                                              "hbg runs program orchestrations for now");
    for (uint32_t i = 0; i < v->header.child_count; i++) {
        ChipCallableChild c;
        chip_callable_child(v, i, &c);
        if (c.source_kind == PTO_KERNEL_LIBRARY)
            return pto_fail(PTO_ERR_BAD_CALLABLE,
                            "register_callable: child %u (func_id %u) is a kernel library; kernel libraries arrive "
                            "with issue [3/8]",
                            i, c.func_id);
    }
    for (uint32_t op = PTO_OP_ALLOC_TENSOR; op <= PTO_OP_SCOPE_END; op++)
        if (v->opcodes_used & (1u << op))
            return pto_fail(PTO_ERR_BAD_CALLABLE,
                            "register_callable: the program uses %s, which arrives with issue [3/8]; hbg interprets "
                            "SUBMIT for now",
                            pto_opcode_name(op));
    return PTO_OK;
}

static void destroy_workspace(HbgWorkspace *ws)
{
    if (ws == NULL)
        return;
    hbg_graph_destroy(&ws->graph);
    hbg_bridge_destroy(&ws->bridge);
    free(ws->image);
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
    if (c == NULL || (c->bytes = malloc(total_size)) == NULL)
        goto oom;
    memcpy(c->bytes, callable, total_size);
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    /* decode the copy: it is what every later step reads */
    if (chip_callable_decode(c->bytes, &c->view, msg, sizeof msg) != PTO_OK || c->view.header.total_size != total_size) {
        destroy_callable(c);
        return pto_fail(PTO_ERR_BAD_CALLABLE, "register_callable: the callable changed while it was being registered");
    }
    for (uint32_t b = 0; b < PTO_PIPELINE_MAX_DEPTH; b++) {
        HbgWorkspace *ws = calloc(1, sizeof *ws);
        if (ws == NULL)
            goto oom;
        hbg_graph_init(&ws->graph);
        hbg_bridge_init(&ws->bridge);
        c->workspaces[b] = ws;
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

int runtime_register_callable(const HostApi *api, const void *callable, RuntimeCallable **out)
{
    if (out == NULL || api == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "register_callable: NULL %s", out == NULL ? "out" : "HostApi");
    *out = NULL;
    ChipCallableView probe;
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    if (chip_callable_decode(callable, &probe, msg, sizeof msg) != PTO_OK)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "register_callable: %s", msg);
    int rc = check_hbg_support(&probe);
    if (rc != PTO_OK)
        return rc;
    RuntimeCallable *c = NULL;
    if ((rc = copy_callable(callable, probe.header.total_size, &c)) != PTO_OK)
        return rc;
    uint64_t hash = pto_fnv1a64(c->bytes, c->view.header.total_size);
    if ((rc = host_api_upload_chip_callable_buffer(api, c->bytes, c->view.header.total_size, hash, &c->upload_dev)) !=
        PTO_OK)
        goto fail_upload;
    if ((rc = read_kernels(api, c)) != PTO_OK)
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
    if (c->upload_dev != NULL)
        host_api_release_chip_callable_buffer(api, c->upload_dev);
    destroy_callable(c);
}

/* ---- bind: the args ----------------------------------------------------------------- */

/* Checks the args against the signature and records every tensor; returns the
   GM heap bytes the staged ones need (their offsets in tensors[i].dev). */
static int bind_args(const HostApi *api, const RuntimeCallable *c, HbgWorkspace *ws, const ChipStorageTaskArgs *args,
                     uint64_t *heap_bytes)
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
    *heap_bytes = offset;
    return PTO_OK;
}

/* Commits the bank's GM heap, places the staged tensors in it and forms the
   alias classes of every tensor. */
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

/* Opens the bridge on the staged tensors: views into the host mapping of the
   GM heap when the platform has one, else the caller's buffers as mirrors.
   Child-memory tensors are not reachable (reads of them fail closed). */
static int open_bridge(const HostApi *api, HbgWorkspace *ws, uint8_t *heap, uint64_t heap_bytes, uint8_t **heap_view)
{
    hbg_bridge_reset(&ws->bridge, api);
    *heap_view = heap_bytes > 0 ? host_api_register_device_memory_to_host(api, heap, heap_bytes) : NULL;
    for (uint32_t i = 0; i < ws->tensor_count; i++) {
        const HbgTensor *t = &ws->tensors[i];
        if (!t->staged || t->size == 0)
            continue;
        void *view = *heap_view != NULL ? *heap_view + (t->dev - (uint64_t)(uintptr_t)heap) : (void *)(uintptr_t)t->host;
        int rc = hbg_bridge_add(&ws->bridge, t->dev, t->size, view);
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

/* ---- bind: the program interpreter -------------------------------------------------- */

static int eval_affine(const PtoAffine *a, const int64_t *loop_vars, int64_t *out)
{
    int64_t v = a->base;
    for (uint32_t k = 0; k < PTO_PROGRAM_MAX_LOOP_DEPTH; k++) {
        int64_t term;
        if (__builtin_mul_overflow(a->coef[k], loop_vars[k], &term) || __builtin_add_overflow(v, term, &v))
            return -1;
    }
    *out = v;
    return 0;
}

typedef struct ParamSite {
    uint32_t insn, param, func_id;
} ParamSite;

/* A program parameter as a task parameter, its view checked against its tensor. */
static int resolve_param(const HbgWorkspace *ws, const ChipStorageTaskArgs *args, const PtoProgramParam *p,
                         const int64_t *loop_vars, ParamSite at, PtoTaskParam *out)
{
    int64_t off, size;
    *out = (PtoTaskParam){ .direction = p->direction };
    switch (p->kind) {
    case PTO_PARAM_ARG_TENSOR: {
        const HbgTensor *t = &ws->tensors[p->index];
        if (eval_affine(&p->offset, loop_vars, &off) != 0 || eval_affine(&p->size, loop_vars, &size) != 0)
            return pto_fail(PTO_ERR_BAD_CALLABLE,
                            "program instruction %u (SUBMIT func_id %u) param %u: the view's offset or size overflows",
                            at.insn, at.func_id, at.param);
        if (off < 0 || size < 0 || (uint64_t)off > t->size || (uint64_t)size > t->size - (uint64_t)off)
            return pto_fail(PTO_ERR_BAD_CALLABLE,
                            "program instruction %u (SUBMIT func_id %u) param %u: view [%lld, %lld + %lld) lies outside "
                            "argument tensor %u of %llu bytes",
                            at.insn, at.func_id, at.param, (long long)off, (long long)off, (long long)size, p->index,
                            (unsigned long long)t->size);
        if (p->direction != PTO_ARG_IN && t->direction == PTO_ARG_IN)
            return pto_fail(PTO_ERR_BAD_CALLABLE,
                            "program instruction %u (SUBMIT func_id %u) param %u writes argument tensor %u, which the "
                            "signature declares IN",
                            at.insn, at.func_id, at.param, p->index);
        out->value = t->dev + (uint64_t)off;
        out->bytes = (uint64_t)size;
        return PTO_OK;
    }
    case PTO_PARAM_SCALAR_IMM:
        out->value = p->imm;
        return PTO_OK;
    case PTO_PARAM_SCALAR_ARG:
        out->value = args->scalars[p->index];
        return PTO_OK;
    case PTO_PARAM_SCALAR_AFFINE:
        if (eval_affine(&p->offset, loop_vars, &off) != 0)
            return pto_fail(PTO_ERR_BAD_CALLABLE,
                            "program instruction %u (SUBMIT func_id %u) param %u: the scalar value overflows", at.insn,
                            at.func_id, at.param);
        out->value = (uint64_t)off;
        return PTO_OK;
    default:
        return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u param %u: local tensors arrive with issue [3/8]",
                        at.insn, at.param);
    }
}

/* Runs the program orchestration: every SUBMIT becomes a task through the
   same PtoOrchApi a user orchestration uses. */
static int run_program(HbgOrch *orch, const ChipStorageTaskArgs *args)
{
    const ChipCallableView *v = &orch->callable->view;
    const int64_t loop_vars[PTO_PROGRAM_MAX_LOOP_DEPTH] = { 0 };
    PtoProgramCursor cursor = { 0, 0 };
    PtoProgramInsn insn;
    while (chip_program_next(v, &cursor, &insn)) {
        uint32_t index = cursor.index - 1;
        if (insn.head.opcode != PTO_OP_SUBMIT)
            return pto_fail(PTO_ERR_BAD_CALLABLE, "program instruction %u: %s arrives with issue [3/8]", index,
                            pto_opcode_name(insn.head.opcode));
        PtoTaskParam params[PTO_MAX_TASK_PARAMS];
        for (uint32_t i = 0; i < insn.head.param_count; i++) {
            PtoProgramParam p;
            chip_program_param(v, &insn, i, &p);
            ParamSite at = { index, i, insn.u.submit.func_id };
            int rc = resolve_param(orch->ws, args, &p, loop_vars, at, &params[i]);
            if (rc != PTO_OK)
                return rc;
        }
        int rc = hbg_orch_api.submit(orch, insn.u.submit.func_id, params, insn.head.param_count);
        if (rc != PTO_OK)
            return rc;
    }
    return PTO_OK;
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
static int write_image(const HostApi *api, HbgWorkspace *ws, const CallConfig *cfg, DeviceLaunch *launch,
                       uint64_t *args_dev)
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
    (void)desc; /* identity for diagnostic outputs ([3/8]) */
    if (run == NULL || api == NULL || c == NULL || args == NULL || cfg == NULL || launch == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "bind: NULL run, HostApi, callable, args, config or launch");
    HbgWorkspace *ws = hbg_workspace(c, api->arena_bank);
    if (ws == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "bind: arena bank %u is outside 0..%u", api->arena_bank,
                        PTO_PIPELINE_MAX_DEPTH - 1);
    hbg_graph_reset(&ws->graph);
    uint64_t heap_bytes = 0;
    uint8_t *heap = NULL;
    int rc;
    if ((rc = bind_args(api, c, ws, args, &heap_bytes)) != PTO_OK ||
        (rc = place_tensors(api, ws, heap_bytes, &heap)) != PTO_OK || (rc = stage_tensors(api, ws)) != PTO_OK)
        return rc;

    /* the orchestration sees the run through the bridge only while it runs */
    uint8_t *heap_view = NULL;
    HbgOrch orch = { c, ws };
    if ((rc = open_bridge(api, ws, heap, heap_bytes, &heap_view)) == PTO_OK)
        rc = run_program(&orch, args);
    close_bridge(api, ws, heap, heap_view);
    if (rc != PTO_OK)
        return rc;

    HbgRun *h = hbg_run(run);
    if ((rc = write_image(api, ws, cfg, launch, &h->args_dev)) != PTO_OK)
        return rc;
    h->task_count = ws->graph.task_count;
    h->callable = c;
    h->ws = ws;
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

static const char *kernel_code_meaning(int32_t code)
{
    switch (code) {
    case PTO_KERNEL_ERR_PARAM_COUNT: return "wrong parameter count";
    case PTO_KERNEL_ERR_VIEW_TOO_SMALL: return "a view is too small";
    case PTO_KERNEL_ERR_BAD_SIZE: return "a view size is not a multiple of the element size";
    case PTO_KERNEL_ERR_MISALIGNED: return "a view is misaligned";
    default: return "kernel-specific code";
    }
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
                        kernel_code_meaning(s.kernel_code), s.core_id, (unsigned long long)s.tasks_completed,
                        h->task_count);
    }
    if (s.error_code == PTO_ERR_TIMEOUT)
        return pto_fail(PTO_ERR_TIMEOUT, "the run exceeded its timeout: %llu of %u task(s) completed",
                        (unsigned long long)s.tasks_completed, h->task_count);
    if (s.error_code == PTO_ERR_DEVICE)
        return pto_fail(PTO_ERR_DEVICE, "the device executor refused the run's graph image");
    return pto_fail(execution_rc, "the run failed (%d) with %llu of %u task(s) completed", execution_rc,
                    (unsigned long long)s.tasks_completed, h->task_count);
}

int runtime_validate(RuntimeRun *run, const HostApi *api, int launched, int execution_rc)
{
    if (run == NULL || api == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "validate: NULL run or HostApi");
    HbgRun *h = hbg_run(run);
    if (h->magic != HBG_RUN_MAGIC)
        return pto_fail(PTO_ERR_WRONG_PHASE, "validate: the run was never bound");
    int rc = PTO_OK;
    if (launched && execution_rc == PTO_OK)
        rc = copy_back(api, h->ws);
    else if (launched)
        rc = describe_failure(api, h, execution_rc);
    /* staged tensors live in the bank's GM heap: nothing per run to free */
    memset(h, 0, sizeof *h);
    return rc;
}
