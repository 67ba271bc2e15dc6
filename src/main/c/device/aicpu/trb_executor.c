/*
 * The trb executor (PTO_DEVICE_WORK_TRB): orchestration on the device,
 * streaming tasks through per-scope rings while the other participations
 * execute them (docs/device.md, "The trb runtime").
 *
 * This file is the work kind itself: starting a run (the argument, work and
 * image blocks checked and bound), and a participation. The first
 * participation of a run is the orchestrator: it runs the callable's
 * orchestration (the program interpreter, or a user library loaded on the
 * device) against the device PtoOrchApi (trb_orch_api.h) and judges its
 * outcome; then it schedules like every other participation
 * (trb_scheduler.h). Orchestration and execution overlap. The run's state is
 * trb_run.h's; the rings are trb_rings.h's; dependencies come from the
 * tensor map (trb_tensor_map.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util/cpu_time.h"
#include "util/last_error.h"
#include "orch/orch_session.h"
#include "orch/program_orchestration.h"
#include "device/aicpu/aicpu_work.h"
#include "device/aicpu/trb_orch_api.h"
#include "device/aicpu/trb_orch_library.h"
#include "device/aicpu/trb_recording.h"
#include "device/aicpu/trb_run.h"
#include "device/aicpu/trb_scheduler.h"
#include "device/aicpu/trb_walk.h"
#include "ptorun/pto_runtime_c_api.h"

TrbRun trb_run;

/* ---- starting a run ------------------------------------------------------------------ */

static int bind_rings(TrbRun *t, const PtoTrbImage *img)
{
    uint8_t *sm = (uint8_t *)(uintptr_t)img->sm_dev;
    uint64_t window_sum = 0, max_pool = 0;
    for (uint32_t i = 0; i < PTO_TRB_RINGS; i++) {
        const PtoTrbRingLayout *l = &img->rings[i];
        if (!trb_ring_bind(&t->rings[i], l, img))
            return 0;
        window_sum += l->task_window;
        max_pool = l->dep_pool > max_pool ? l->dep_pool : max_pool;
    }
    if (img->ready_capacity < window_sum ||
        !trb_region_fits(img->ready_offset, img->ready_capacity, 2 * sizeof(uint64_t), img->sm_bytes) ||
        img->map_entries < PTO_MAX_TASK_PARAMS || img->map_entries > UINT32_MAX - 1 ||
        !trb_region_fits(img->map_offset, img->map_entries, sizeof(PtoTrbAccess), img->sm_bytes) ||
        img->map_views < PTO_MAX_TASK_PARAMS || img->map_views > UINT32_MAX - 1 ||
        !trb_region_fits(img->map_views_offset, img->map_views, sizeof(PtoTensorView), img->sm_bytes) ||
        img->scratch_entries < 2 * (max_pool + 1) ||
        !trb_region_fits(img->scratch_offset, img->scratch_entries, sizeof(uint64_t), img->sm_bytes))
        return 0;
    t->ready_capacity = img->ready_capacity;
    t->ready[PTO_CORE_AIC] = (uint64_t *)(sm + img->ready_offset);
    t->ready[PTO_CORE_AIV] = t->ready[PTO_CORE_AIC] + img->ready_capacity;
    t->deps = (uint64_t *)(sm + img->scratch_offset);
    t->deps_capacity = img->scratch_entries / 2;
    trb_map_reset(&t->map, (PtoTrbAccess *)(sm + img->map_offset), (uint32_t)img->map_entries,
                  (PtoTensorView *)(sm + img->map_views_offset), (uint32_t)img->map_views);
    return 1;
}

/* The classes of the tensor map: every argument tensor with bytes and every ring heap. */
static int bind_memory(TrbRun *t)
{
    const ChipStorageTaskArgs *a = t->args;
    if (a->tensor_count < 0 || a->tensor_count > PTO_MAX_TENSOR_ARGS || a->scalar_count < 0 ||
        a->scalar_count > PTO_MAX_SCALAR_ARGS)
        return 0;
    for (int32_t i = 0; i < a->tensor_count; i++) {
        const ChipTensor *x = &a->tensors[i];
        if (x->size > 0) {
            if (x->addr + x->size < x->addr)
                return 0;
            trb_map_add_range(&t->map, x->addr, x->addr + x->size);
        }
    }
    for (uint32_t i = 0; i < PTO_TRB_RINGS; i++) {
        const TrbRing *r = &t->rings[i];
        trb_map_add_range(&t->map, (uint64_t)(uintptr_t)r->heap, (uint64_t)(uintptr_t)r->heap + r->heap_bytes);
    }
    trb_map_seal(&t->map);
    return 1;
}

static int bind_dep_graph(TrbRun *t, uint64_t dev)
{
    t->graph = NULL;
    if (dev == 0)
        return 1;
    PtoTrbDepGraph *g = (PtoTrbDepGraph *)(uintptr_t)dev;
    if (dev % 8 != 0 || g->magic != PTO_TRB_DEP_GRAPH_MAGIC || g->task_capacity > UINT32_MAX ||
        g->edge_capacity > UINT32_MAX)
        return 0;
    g->task_count = g->edge_count = 0;
    t->graph = g;
    t->graph_func_ids = (uint32_t *)(g + 1);
    t->graph_edges = t->graph_func_ids + g->task_capacity;
    return 1;
}

/* Checks the argument block, the work block and the runtime image, and points t at them. */
static int bind_work(TrbRun *t, PtoAicpuArgs *args)
{
    if (args->work_dev == 0 || args->work_dev % 8 != 0 || args->work_bytes < sizeof(PtoTrbWork) ||
        args->block_dim < 1 || args->block_dim > PTO_ARCH_MAX_BLOCKS)
        return 0;
    PtoTrbWork *w = (PtoTrbWork *)(uintptr_t)args->work_dev;
    if (w->magic != PTO_TRB_WORK_MAGIC || w->image_dev == 0 || w->image_dev % 8 != 0 || w->args_dev == 0 ||
        w->args_dev % 64 != 0 || w->kernel_count > PTO_CALLABLE_MAX_CHILDREN ||
        (w->orchestration_kind != PTO_ORCH_PROGRAM && w->orchestration_kind != PTO_ORCH_LIBRARY))
        return 0;
    const PtoTrbImage *img = (const PtoTrbImage *)(uintptr_t)w->image_dev;
    if (img->magic != PTO_TRB_IMAGE_MAGIC || img->version != PTO_TRB_IMAGE_VERSION || img->sm_dev == 0 ||
        img->sm_dev % 64 != 0 || img->heap_dev == 0 || img->heap_dev % PTO_TRB_HEAP_ALIGN != 0)
        return 0;
    for (uint32_t i = 0; i < w->kernel_count; i++)
        if (w->kernels[i].addr == 0 || w->kernels[i].core_type >= AICPU_CORE_TYPES ||
            (i > 0 && w->kernels[i].func_id <= w->kernels[i - 1].func_id))
            return 0;
    t->work = w;
    t->image = img;
    t->args = (ChipStorageTaskArgs *)(uintptr_t)w->args_dev;
    t->kernels = w->kernels;
    t->kernel_count = w->kernel_count;
    w->tasks_submitted = 0;
    w->orchestration_code = 0;
    w->message[0] = '\0';
    w->orchestration_ns = 0;
    return bind_rings(t, img) && trb_recording_bind(t, w) && bind_memory(t) && bind_dep_graph(t, w->dep_graph_dev);
}

void trb_start(AicpuDevice *d, PtoAicpuArgs *args)
{
    TrbRun *t = &trb_run;
    uint32_t block_dim = args->block_dim >= 1 && args->block_dim <= PTO_ARCH_MAX_BLOCKS ? args->block_dim : 1;
    aicpu_device_start(d, args, block_dim);
    t->submitted = 0;
    t->orch_claimed = t->orch_finished = t->orch_waiting = 0;
    t->depth = 0;
    t->manual_depth = 0;
    t->dep_count = 0;
    t->api_error = 0;
    t->record_mode = PTO_TRB_RECORD_OFF;
    t->recording = NULL;
    t->walking = 0;
    trb_sched_reset(t);
    if (!bind_work(t, args)) {
        /* nothing can run: the run ends before it began */
        t->orch_claimed = t->orch_finished = 1;
        aicpu_record_error(d, PTO_ERR_DEVICE, 0, 0, 0, 0);
        aicpu_end_run(d);
    }
}

/* ---- orchestrating ------------------------------------------------------------------------------ */

/* Runs the callable's orchestration (unlocked). *loaded is 0 when a library
   orchestration could not even be loaded. */
static int orchestrate(TrbRun *t, int *loaded)
{
    const PtoTrbWork *w = t->work;
    const uint8_t *orchestration = (const uint8_t *)(uintptr_t)w->orchestration_dev;
    pto_clear_error();
    *loaded = 1;
    if (t->record_mode == PTO_TRB_WALK)
        return trb_walk_bind(t); /* the compiled graph: nothing to orchestrate */
    PtoOrchestrationFn fn = NULL;
    if (w->orchestration_kind != PTO_ORCH_PROGRAM) {
        fn = trb_orch_library_entry(orchestration, w->orchestration_bytes, w->orchestration_hash,
                                    (const char *)(uintptr_t)w->entry_dev, w->entry_length);
        if (fn == NULL) {
            *loaded = 0;
            return PTO_ERR_BAD_CALLABLE;
        }
    }
    /* the handle is a session of this call, not &trb_run: a library keeping it
       cannot reach a later run's state through it (orch/orch_session.h) */
    OrchSession session;
    void *handle = orch_session_open(&session, t);
    int ret;
    if (t->record_mode == PTO_TRB_REPLAY)
        ret = trb_replay(t, handle); /* the program's recorded graph instead of the program */
    else if (fn == NULL) /* recording: the interpreter names each param's origin */
        ret = pto_program_orchestrate_origins(&trb_orch_api, handle, t->args, orchestration, w->orchestration_bytes,
                                              (const uint8_t *)(uintptr_t)w->signature_dev, w->signature_length,
                                              t->record_mode == PTO_TRB_RECORD ? t->record_origins : NULL);
    else
        ret = fn(&trb_orch_api, handle, t->args);
    orch_session_close(&session);
    subgraph_table_clear(&t->subgraphs); /* the run's recorded sub-graphs end with its orchestration */
    return ret;
}

/* Formats a message, cut at `size` bytes. */
static void describe(char *out, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void describe(char *out, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, size, fmt, ap);
    va_end(ap);
}

/* What a finished orchestration means for the run, as hbg judges it
   (runtime/hbg/hbg_orch.c): the interpreter's code is the run's (a failed api
   call's, when there was one); a library
   returning non-zero is PTO_ERR_ORCHESTRATION; a library returning 0 after a
   failed call fails with that call's code; open scopes are an error. 0 and no
   message when it succeeded. */
static int32_t judge_orchestration(TrbRun *t, int ret, int loaded, char *message, size_t size)
{
    const PtoTrbWork *w = t->work;
    if (w->orchestration_kind == PTO_ORCH_PROGRAM) {
        /* a failed api call's code wins: the interpreter turns a failed
           alloc_tensor (which returns 0) into OUT_OF_MEMORY */
        describe(message, size, "%s", pto_last_error());
        return t->api_error != PTO_OK ? t->api_error : ret;
    }
    if (!loaded) {
        describe(message, size, "%s", pto_last_error());
        return PTO_ERR_BAD_CALLABLE;
    }
    int name_len = (int)w->entry_length;
    const char *name = (const char *)(uintptr_t)w->entry_dev;
    if (ret != 0) {
        const char *why = t->api_error != 0 ? w->message : pto_last_error();
        describe(message, size, "orchestration '%.*s' returned %d%s%s", name_len, name, ret, why[0] != '\0' ? ": " : "",
                 why);
        return PTO_ERR_ORCHESTRATION;
    }
    if (t->api_error != 0) {
        describe(message, size, "orchestration '%.*s' returned 0 after a failed call: %s", name_len, name, w->message);
        return t->api_error;
    }
    if (t->depth != 0) {
        describe(message, size, "orchestration '%.*s' returned with %u scope(s) still open", name_len, name, t->depth);
        return PTO_ERR_ORCHESTRATION;
    }
    return PTO_OK;
}

/* With the lock held: the orchestration returned `ret`; its failure (when it is
   the run's first) goes to the status block, its message to the work block. */
static void finish_orchestration(AicpuDevice *d, TrbRun *t, int ret, int loaded)
{
    PtoTrbWork *w = t->work;
    char message[PTO_TRB_MESSAGE_BYTES];
    int32_t code = judge_orchestration(t, ret, loaded, message, sizeof message);
    w->orchestration_code = ret;
    trb_record_finish(t, code == PTO_OK);
    for (uint32_t r = 0; r < PTO_TRB_RINGS; r++)
        w->heap_peak[r] = t->rings[r].heap_peak; /* only the orchestration allocates */
    if (t->record_mode == PTO_TRB_WALK && code == PTO_OK) {
        /* the graph's tasks are all known: from now on every participation schedules it */
        t->walking = 1;
        t->submitted = w->tasks_submitted = t->walk.task_count;
        w->heap_peak[0] = w->walk_locals_bytes; /* the locals' block, from the GM heap's start */
    }
    if (code != PTO_OK && !d->stopping) {
        memcpy(w->message, message, sizeof message);
        aicpu_record_error(d, code, ret, t->submitted, 0, 0);
    }
    t->orch_finished = 1;
    t->kept = 0; /* a kept task is this thread's to run now (trb_schedule) */
    trb_sched_maybe_end(d, t);
}

int32_t trb_participate(AicpuDevice *d, uint32_t thread_count, const PtoAicpuHooks *hooks)
{
    TrbRun *t = &trb_run;
    aicpu_participation_begin(d);
    if (!t->orch_claimed && !d->ended) {
        t->orch_claimed = 1;
        t->orch_thread_count = thread_count;
        t->orch_hooks = hooks;
        pthread_mutex_unlock(&d->lock);
        int loaded;
        /* the orchestrator's own CPU time (PtoTrbWork.orchestration_ns): not the time it was
           parked or descheduled while kernels ran */
        uint64_t start = pto_thread_cpu_ns();
        int ret = orchestrate(t, &loaded);
        t->work->orchestration_ns = pto_thread_cpu_ns() - start;
        pthread_mutex_lock(&d->lock);
        finish_orchestration(d, t, ret, loaded);
    }
    return trb_schedule(d, t, thread_count, hooks);
}
