/*
 * The trb executor (PTO_DEVICE_WORK_TRB): orchestration on the device,
 * streaming tasks through per-scope rings while the other participations
 * execute them (design/device-model.md, "tensormap_and_ringbuffer").
 *
 * The first participation of a run is the orchestrator: it runs the callable's
 * orchestration (the program interpreter, or a user library loaded on the
 * device) against the PtoOrchApi below. Every other participation schedules:
 * a task whose producers have all finished goes to a free logical core of its
 * type (oldest first), exactly as in the graph executor. Orchestration and
 * execution overlap; when the orchestration returns, the orchestrator
 * schedules too.
 *
 * Rings (one per scope depth; depth > 3 uses ring 3), each sized by the run's
 * CallConfig and laid out in the shared runtime image (device/pto_trb_abi.h):
 *  - the task window: a task takes the next slot of its ring; slots retire in
 *    order as their tasks finish;
 *  - the dependency pool: one node per (producer still running, consumer)
 *    edge, in the consumer's ring, freed when the producer finishes;
 *  - the heap: alloc_tensor carves the current scope's ring heap; a scope's
 *    allocations are freed when it ends and every task submitted while it was
 *    open has finished (deeper scopes on ring 3 free with their depth-3 scope).
 * A full ring blocks the orchestrator (back-pressure): it waits on a condition
 * variable, running ready tasks itself when it can so that progress never
 * depends on another participation being there. A request no ring can ever
 * hold fails with PTO_ERR_CAPACITY: more producers than the ring's dependency
 * pool, a tensor larger than its heap (beside what its scope keeps).
 *
 * Dependencies come from the tensor map (trb_tensor_map.h), the same rule as
 * hbg's, so the same callable gives the same graph on both runtimes.
 *
 * Locking: aicpu_device.lock guards the scheduler state (slots' progress,
 * ready queues, dependency pools, heap accounting, counters). The tensor map,
 * the scope depth and the dependency-graph buffer are the orchestrator's
 * alone. A task's `state` is published with release ordering so the
 * orchestrator may read it without the lock.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/last_error.h"
#include "orch/orch_session.h"
#include "orch/program_orchestration.h"
#include "device/aicpu/aicpu_device.h"
#include "device/aicpu/aicpu_work.h"
#include "device/aicpu/trb_orch_library.h"
#include "device/aicpu/trb_tensor_map.h"
#include "device/pto_trb_abi.h"
#include "ptorun/chip_callable.h"
#include "ptorun/pto_orchestration.h"
#include "ptorun/pto_runtime_c_api.h"

#define TRB_RELEASE_RECORDS 64u

enum { TASK_PENDING = 0, TASK_READY = 1, TASK_RUNNING = 2, TASK_COMPLETED = 3 };

/* The heap a scope holds on its ring, freed once it has ended and every task
   submitted while it was open has finished. */
typedef struct TrbRelease {
    uint64_t bytes;           /* heap bytes it consumed, wrap-around skips included */
    uint64_t pending;         /* tasks submitted while it was open, not finished */
    int ended;
} TrbRelease;

typedef struct TrbRing {
    PtoTrbSlot *slots;
    uint64_t window;          /* power of two */
    PtoTrbDepNode *nodes;
    uint64_t node_count, node_fresh, node_free_head, nodes_in_use;
    uint8_t *heap;
    uint64_t heap_bytes, heap_top, heap_used;
    uint64_t next_local;      /* tasks submitted to the ring */
    uint64_t retire_local;    /* oldest task not finished; read unlocked by the orchestrator */
    TrbRelease releases[TRB_RELEASE_RECORDS];
    uint32_t release_head, release_count;
    int32_t open_release;     /* the open scope's record, -1 none */
} TrbRing;

typedef struct TrbRun {
    /* the run, fixed at start */
    PtoTrbWork *work;
    const PtoTrbImage *image;
    ChipStorageTaskArgs *args;
    const PtoTrbKernel *kernels;
    uint32_t kernel_count;

    /* scheduler state (lock) */
    TrbRing rings[PTO_TRB_RINGS];
    uint64_t *ready[AICPU_CORE_TYPES];
    uint64_t ready_capacity, ready_head[AICPU_CORE_TYPES], ready_tail[AICPU_CORE_TYPES];
    uint64_t submitted;       /* tasks submitted: the next task id */
    int orch_claimed, orch_finished, orch_waiting;
    uint32_t orch_thread_count;
    const PtoAicpuHooks *orch_hooks;

    /* the orchestrator's own */
    TrbTensorMap map;
    uint32_t depth;
    uint64_t *deps;           /* producers of the task being submitted: (task_id, ref) pairs, ascending */
    uint64_t deps_capacity;
    uint32_t dep_count;
    PtoTrbDepGraph *graph;    /* NULL when off */
    uint32_t *graph_func_ids, *graph_edges;
    int32_t api_error;        /* the first failing api call's code, 0 none */
} TrbRun;

static TrbRun trb_run;
static pthread_cond_t orch_cond = PTHREAD_COND_INITIALIZER;

/* ---- refs ------------------------------------------------------------------------- */

/* A task is named (local << 2) | ring; a dependency node ((ring << 32) | index + 1). */
static uint64_t task_ref(uint64_t local, uint32_t ring)
{
    return (local << 2) | ring;
}

static PtoTrbSlot *slot_of(TrbRun *t, uint64_t ref)
{
    TrbRing *r = &t->rings[ref & 3u];
    return &r->slots[(ref >> 2) & (r->window - 1)];
}

static uint32_t ring_of_depth(uint32_t depth)
{
    return depth < PTO_TRB_RINGS ? depth : PTO_TRB_RINGS - 1;
}

/* A task's state is written under the lock and read without it by the
   orchestrator: COMPLETED is published with release ordering, so a reader that
   sees it also sees the kernel's writes. */
static uint32_t task_state(const PtoTrbSlot *s)
{
    return __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
}

static void set_task_state(PtoTrbSlot *s, uint32_t state)
{
    __atomic_store_n(&s->state, state, __ATOMIC_RELEASE);
}

/* A task has finished when its slot moved on to a later task or says so. */
static int task_done(TrbRun *t, uint64_t ref)
{
    const PtoTrbSlot *s = slot_of(t, ref);
    return s->local != (ref >> 2) || task_state(s) == TASK_COMPLETED;
}

static int access_done(void *ctx, const PtoTrbAccess *a)
{
    return task_done(ctx, a->task);
}

/* ---- starting a run ------------------------------------------------------------------ */

static int region_inside(uint64_t offset, uint64_t count, uint64_t elem, uint64_t limit)
{
    return offset % 8 == 0 && offset <= limit && count <= (limit - offset) / elem;
}

static int bind_rings(TrbRun *t, const PtoTrbImage *img)
{
    uint8_t *sm = (uint8_t *)(uintptr_t)img->sm_dev;
    uint8_t *heap = (uint8_t *)(uintptr_t)img->heap_dev;
    uint64_t window_sum = 0, max_pool = 0;
    for (uint32_t i = 0; i < PTO_TRB_RINGS; i++) {
        const PtoTrbRingLayout *l = &img->rings[i];
        TrbRing *r = &t->rings[i];
        if (l->task_window < 4 || (l->task_window & (l->task_window - 1)) != 0 || l->dep_pool < 1 ||
            l->dep_pool > UINT32_MAX || l->heap_bytes < PTO_TRB_HEAP_ALIGN ||
            !region_inside(l->slots_offset, l->task_window, sizeof(PtoTrbSlot), img->sm_bytes) ||
            !region_inside(l->nodes_offset, l->dep_pool, sizeof(PtoTrbDepNode), img->sm_bytes) ||
            l->heap_offset % PTO_TRB_HEAP_ALIGN != 0 || l->heap_offset > img->heap_bytes ||
            l->heap_bytes > img->heap_bytes - l->heap_offset)
            return 0;
        *r = (TrbRing){
            .slots = (PtoTrbSlot *)(sm + l->slots_offset),
            .window = l->task_window,
            .nodes = (PtoTrbDepNode *)(sm + l->nodes_offset),
            .node_count = l->dep_pool,
            .heap = heap + l->heap_offset,
            .heap_bytes = l->heap_bytes,
            .open_release = -1,
        };
        window_sum += l->task_window;
        max_pool = l->dep_pool > max_pool ? l->dep_pool : max_pool;
    }
    if (img->ready_capacity < window_sum ||
        !region_inside(img->ready_offset, img->ready_capacity, 2 * sizeof(uint64_t), img->sm_bytes) ||
        img->map_entries < PTO_MAX_TASK_PARAMS || img->map_entries > UINT32_MAX - 1 ||
        !region_inside(img->map_offset, img->map_entries, sizeof(PtoTrbAccess), img->sm_bytes) ||
        img->scratch_entries < 2 * (max_pool + 1) ||
        !region_inside(img->scratch_offset, img->scratch_entries, sizeof(uint64_t), img->sm_bytes))
        return 0;
    t->ready_capacity = img->ready_capacity;
    t->ready[PTO_CORE_AIC] = (uint64_t *)(sm + img->ready_offset);
    t->ready[PTO_CORE_AIV] = t->ready[PTO_CORE_AIC] + img->ready_capacity;
    t->deps = (uint64_t *)(sm + img->scratch_offset);
    t->deps_capacity = img->scratch_entries / 2;
    trb_map_reset(&t->map, (PtoTrbAccess *)(sm + img->map_offset), (uint32_t)img->map_entries);
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
    return bind_rings(t, img) && bind_memory(t) && bind_dep_graph(t, w->dep_graph_dev);
}

void trb_start(AicpuDevice *d, PtoAicpuArgs *args)
{
    TrbRun *t = &trb_run;
    uint32_t block_dim = args->block_dim >= 1 && args->block_dim <= PTO_ARCH_MAX_BLOCKS ? args->block_dim : 1;
    aicpu_device_start(d, args, block_dim);
    t->submitted = 0;
    t->orch_claimed = t->orch_finished = t->orch_waiting = 0;
    t->depth = 0;
    t->dep_count = 0;
    t->api_error = 0;
    for (int c = 0; c < AICPU_CORE_TYPES; c++)
        t->ready_head[c] = t->ready_tail[c] = 0;
    if (!bind_work(t, args)) {
        /* nothing can run: the run ends before it began */
        t->orch_claimed = t->orch_finished = 1;
        aicpu_record_error(d, PTO_ERR_DEVICE, 0, 0, 0, 0);
        aicpu_end_run(d);
    }
}

/* ---- scheduling ---------------------------------------------------------------------- */

static void push_ready(TrbRun *t, uint64_t ref)
{
    PtoTrbSlot *s = slot_of(t, ref);
    set_task_state(s, TASK_READY);
    uint32_t c = s->core_type;
    t->ready[c][t->ready_tail[c]++ % t->ready_capacity] = ref;
}

static uint32_t dispatchable(const AicpuDevice *d, const TrbRun *t)
{
    uint32_t n = 0;
    for (int c = 0; c < AICPU_CORE_TYPES; c++) {
        uint64_t ready = t->ready_tail[c] - t->ready_head[c];
        n += ready < d->free_count[c] ? (uint32_t)ready : d->free_count[c];
    }
    return n;
}

/* Takes the oldest ready task that has a free core of its type. */
static int pick(AicpuDevice *d, TrbRun *t, uint64_t *ref, uint32_t *core)
{
    int best = -1;
    uint64_t best_id = 0;
    for (int c = 0; c < AICPU_CORE_TYPES; c++) {
        if (t->ready_head[c] == t->ready_tail[c] || d->free_count[c] == 0)
            continue;
        uint64_t id = slot_of(t, t->ready[c][t->ready_head[c] % t->ready_capacity])->task_id;
        if (best < 0 || id < best_id) {
            best = c;
            best_id = id;
        }
    }
    if (best < 0)
        return 0;
    *ref = t->ready[best][t->ready_head[best]++ % t->ready_capacity];
    *core = aicpu_core_take(d, (uint32_t)best);
    set_task_state(slot_of(t, *ref), TASK_RUNNING);
    return 1;
}

static void wake_orchestrator(TrbRun *t)
{
    if (t->orch_waiting)
        pthread_cond_signal(&orch_cond);
}

static void free_node(TrbRun *t, uint64_t node_ref)
{
    TrbRing *r = &t->rings[node_ref >> 32];
    r->nodes[(node_ref & UINT32_MAX) - 1].next = r->node_free_head;
    r->node_free_head = node_ref;
    r->nodes_in_use--;
}

/* Frees the heap of every leading record that has ended with all its tasks finished. */
static void release_heap(TrbRing *r)
{
    while (r->release_count > 0) {
        TrbRelease *rec = &r->releases[r->release_head];
        if (!rec->ended || rec->pending > 0)
            return;
        r->heap_used -= rec->bytes;
        r->release_head = (r->release_head + 1) % TRB_RELEASE_RECORDS;
        r->release_count--;
    }
}

static void retire(TrbRing *r)
{
    uint64_t local = r->retire_local;
    while (local < r->next_local && task_state(&r->slots[local & (r->window - 1)]) == TASK_COMPLETED)
        local++;
    __atomic_store_n(&r->retire_local, local, __ATOMIC_RELEASE);
}

static void maybe_end(AicpuDevice *d, TrbRun *t)
{
    if (!d->ended && t->orch_finished && d->in_flight == 0 && (d->stopping || d->completed == t->submitted))
        aicpu_end_run(d);
}

/* A kernel returned: release its consumers, its dependency nodes, its scopes'
   heap and its slot. */
static void complete(AicpuDevice *d, TrbRun *t, uint64_t ref, uint32_t core, int32_t rc)
{
    PtoTrbSlot *s = slot_of(t, ref);
    d->in_flight--;
    d->completed++;
    aicpu_core_give(d, s->core_type, core);
    d->args->status.tasks_completed = d->completed;
    if (rc != 0)
        aicpu_record_error(d, PTO_ERR_KERNEL_FAULT, rc, s->task_id, s->func_id, core);
    set_task_state(s, TASK_COMPLETED);
    for (uint64_t node = s->fanout_head; node != 0;) {
        const PtoTrbDepNode *n = &t->rings[node >> 32].nodes[(node & UINT32_MAX) - 1];
        uint64_t next = n->next;
        PtoTrbSlot *c = slot_of(t, n->consumer);
        if (--c->fanin_left == 0 && !d->stopping)
            push_ready(t, n->consumer);
        free_node(t, node);
        node = next;
    }
    s->fanout_head = 0;
    for (uint32_t r = 1; r < PTO_TRB_RINGS; r++) {
        if (s->release[r] == 0)
            continue;
        t->rings[r].releases[s->release[r] - 1].pending--;
        release_heap(&t->rings[r]);
    }
    retire(&t->rings[ref & 3u]);
    wake_orchestrator(t);
    maybe_end(d, t);
}

/* Runs one ready task on this participation, if there is one with a free core:
   unlocks for the kernel. Returns non-zero when it ran one. */
static int run_one(AicpuDevice *d, TrbRun *t, uint32_t thread_count, const PtoAicpuHooks *hooks)
{
    uint64_t ref;
    uint32_t core;
    if (d->stopping || !pick(d, t, &ref, &core))
        return 0;
    d->in_flight++;
    uint32_t ask = aicpu_spread_work(d, dispatchable(d, t), thread_count, hooks);
    pthread_mutex_unlock(&d->lock);
    uint32_t granted = aicpu_request_threads(hooks, ask);
    PtoTrbSlot *s = slot_of(t, ref);
    int32_t rc = aicpu_run_kernel(s->kernel_addr, s->args, s->arg_sizes, s->arg_count, s->core_type, core,
                                  d->block_dim, s->task_id, s->func_id);
    pthread_mutex_lock(&d->lock);
    aicpu_requests_granted(d, ask, granted);
    complete(d, t, ref, core, rc);
    return 1;
}

static void check_stop(AicpuDevice *d, TrbRun *t)
{
    int was_stopping = d->stopping;
    aicpu_check_stop_request(d, !t->orch_finished || d->completed < t->submitted);
    if (d->stopping && !was_stopping)
        wake_orchestrator(t);
}

/* Called with the lock held; returns with it held. */
static int32_t schedule(AicpuDevice *d, TrbRun *t, uint32_t thread_count, const PtoAicpuHooks *hooks)
{
    for (;;) {
        if (d->ended) {
            d->running--;
            return PTO_AICPU_DONE;
        }
        check_stop(d, t);
        if (run_one(d, t, thread_count, hooks))
            continue;
        if (t->orch_finished && d->in_flight == 0) {
            /* orchestration over, nothing running, nothing to dispatch */
            if (!d->stopping && d->completed < t->submitted)
                aicpu_record_error(d, PTO_ERR_DEVICE, 0, d->completed, 0, 0);
            aicpu_end_run(d);
            continue;
        }
        if (hooks != NULL) {
            d->running--;
            return PTO_AICPU_IDLE;
        }
        aicpu_park(d);
    }
}

/* ---- the orchestrator's waits ---------------------------------------------------------- */

typedef int (*WaitUntil)(TrbRun *t, const void *arg);

/* The error an api call returns once the run stops: the run's own error. */
static int32_t stop_code(const AicpuDevice *d)
{
    int32_t code = d->args->status.error_code;
    return code != 0 ? code : PTO_ERR_FAILED;
}

/* With the lock held: waits until until(t, arg) holds, running ready tasks on
   this thread meanwhile. Fails when the run stops. */
static int orch_wait(AicpuDevice *d, TrbRun *t, WaitUntil until, const void *arg)
{
    for (;;) {
        check_stop(d, t);
        if (d->stopping)
            return stop_code(d);
        if (until(t, arg))
            return PTO_OK;
        if (run_one(d, t, t->orch_thread_count, t->orch_hooks))
            continue;
        if (d->in_flight == 0)
            /* nothing runs and nothing can start: what we wait for cannot happen */
            return pto_fail(PTO_ERR_DEVICE, "trb orchestrator: waiting for the rings with no task left to run");
        t->orch_waiting = 1;
        pthread_cond_wait(&orch_cond, &d->lock);
        t->orch_waiting = 0;
    }
}

/* ---- api failures ----------------------------------------------------------------------- */

/* Latches the run's orchestration error (the first one) with its message,
   recorded with pto_fail so the interpreter can prefix it too. */
static int32_t api_fail(TrbRun *t, int32_t code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int32_t api_fail(TrbRun *t, int32_t code, const char *fmt, ...)
{
    char message[PTO_TRB_MESSAGE_BYTES];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    if (t->api_error == 0) {
        t->api_error = code;
        memcpy(t->work->message, message, sizeof message);
    }
    return pto_fail(code, "%s", message);
}

/* The run behind an api call's handle: NULL with *rc set when the handle is
   not this thread's live orchestration session (orch/orch_session.h). */
static TrbRun *api_run(void *orch, const char *fn, int32_t *rc)
{
    TrbRun *t = orch_session_resolve(orch, fn);
    if (t == NULL)
        *rc = PTO_ERR_INVALID_ARGUMENT;
    return t;
}

/* Sticky: a submit / alloc_tensor / scope call after one failed returns that
   error and does nothing (a stopped run is noticed where the call takes the
   lock). */
static int32_t api_blocked(const TrbRun *t, const char *fn)
{
    if (t->api_error == 0)
        return 0;
    return pto_fail(t->api_error, "%s: refused, an earlier call of this orchestration failed: %s", fn, t->work->message);
}

/* ---- submit ---------------------------------------------------------------------------- */

static const PtoTrbKernel *find_kernel(const TrbRun *t, uint32_t func_id)
{
    uint32_t a = 0, b = t->kernel_count;
    while (a < b) {
        uint32_t mid = a + (b - a) / 2;
        if (t->kernels[mid].func_id < func_id)
            a = mid + 1;
        else
            b = mid;
    }
    return a < t->kernel_count && t->kernels[a].func_id == func_id ? &t->kernels[a] : NULL;
}

static int is_tensor(uint32_t direction)
{
    return direction == PTO_ARG_IN || direction == PTO_ARG_OUT || direction == PTO_ARG_INOUT;
}

/* Each tensor view's class (-1 for scalars and empty views). */
static int32_t classify_params(TrbRun *t, uint32_t func_id, const PtoTaskParam *params, uint32_t n, int32_t *cls,
                               uint32_t *accesses)
{
    *accesses = 0;
    for (uint32_t i = 0; i < n; i++) {
        const PtoTaskParam *p = &params[i];
        cls[i] = -1;
        if (p->direction == PTO_ARG_SCALAR)
            continue;
        if (!is_tensor(p->direction))
            return api_fail(t, PTO_ERR_ORCHESTRATION, "submit (func_id %u): param %u has invalid direction %u", func_id,
                            i, p->direction);
        uint64_t lo = p->value, hi = p->value + p->bytes;
        if (hi < lo)
            return api_fail(t, PTO_ERR_ORCHESTRATION, "submit (func_id %u): param %u view [0x%llx, +%llu) wraps around",
                            func_id, i, (unsigned long long)lo, (unsigned long long)p->bytes);
        if (p->bytes == 0)
            continue; /* touches nothing, depends on nothing */
        if ((cls[i] = trb_map_class(&t->map, lo, hi)) < 0)
            return api_fail(t, PTO_ERR_ORCHESTRATION,
                            "submit (func_id %u): param %u view [0x%llx, +%llu) is not inside one run tensor or ring heap",
                            func_id, i, (unsigned long long)lo, (unsigned long long)p->bytes);
        (*accesses)++;
    }
    return PTO_OK;
}

static int map_has_room(TrbRun *t, const void *arg)
{
    uint32_t need = *(const uint32_t *)arg;
    if (trb_map_room(&t->map) < need)
        trb_map_reclaim(&t->map, access_done, t);
    return trb_map_room(&t->map) >= need;
}

/* Room for a task's accesses in the tensor map: entries of finished tasks are
   dropped when it is full (not while a dependency graph is collected: its
   edges to finished tasks must stay exact). */
static int32_t ensure_map_room(AicpuDevice *d, TrbRun *t, uint32_t need, uint32_t func_id)
{
    if (trb_map_room(&t->map) >= need)
        return PTO_OK;
    if (t->graph != NULL)
        return api_fail(t, PTO_ERR_CAPACITY,
                        "submit (func_id %u): the tensor map's %u entries are full and a dependency graph is being "
                        "collected, which keeps every entry",
                        func_id, t->map.capacity);
    if (map_has_room(t, &need))
        return PTO_OK;
    pthread_mutex_lock(&d->lock);
    int32_t rc = orch_wait(d, t, map_has_room, &need);
    pthread_mutex_unlock(&d->lock);
    return rc;
}

static int window_has_room(TrbRun *t, const void *arg)
{
    const TrbRing *r = &t->rings[*(const uint32_t *)arg];
    return r->next_local - __atomic_load_n(&r->retire_local, __ATOMIC_ACQUIRE) < r->window;
}

static int32_t ensure_window(AicpuDevice *d, TrbRun *t, uint32_t ring)
{
    if (window_has_room(t, &ring))
        return PTO_OK;
    pthread_mutex_lock(&d->lock);
    int32_t rc = orch_wait(d, t, window_has_room, &ring);
    pthread_mutex_unlock(&d->lock);
    return rc;
}

typedef struct DepCollector {
    TrbRun *t;
    uint64_t limit;           /* producers the ring's pool can take */
    uint32_t func_id, ring;
} DepCollector;

/* Adds a producer to the ascending, duplicate-free deps list. */
static int add_dep(void *ctx, const PtoTrbAccess *a)
{
    DepCollector *c = ctx;
    TrbRun *t = c->t;
    uint32_t lo = 0, hi = t->dep_count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->deps[2 * mid] < a->task_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < t->dep_count && t->deps[2 * lo] == a->task_id)
        return 0;
    if (t->dep_count == c->limit)
        return api_fail(t, PTO_ERR_CAPACITY,
                        "submit (func_id %u): the task has more than %llu producers; ring %u's dependency pool "
                        "holds %llu (CallConfig.ring_dep_pool[%u])",
                        c->func_id, (unsigned long long)c->limit, c->ring,
                        (unsigned long long)t->rings[c->ring].node_count, c->ring);
    memmove(&t->deps[2 * lo + 2], &t->deps[2 * lo], (size_t)(t->dep_count - lo) * 2 * sizeof(uint64_t));
    t->deps[2 * lo] = a->task_id;
    t->deps[2 * lo + 1] = a->task;
    t->dep_count++;
    return 0;
}

static int32_t collect_deps(TrbRun *t, uint32_t func_id, uint32_t ring, const PtoTaskParam *params, uint32_t n,
                            const int32_t *cls)
{
    uint64_t limit = t->rings[ring].node_count;
    DepCollector c = { t, limit < t->deps_capacity ? limit : t->deps_capacity, func_id, ring };
    t->dep_count = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (cls[i] < 0)
            continue;
        int rc = trb_map_overlaps(&t->map, cls[i], params[i].value, params[i].value + params[i].bytes,
                                  params[i].direction != PTO_ARG_IN, add_dep, &c);
        if (rc != 0)
            return rc;
    }
    return PTO_OK;
}

static int32_t record_dep_graph(TrbRun *t, uint64_t task_id, uint32_t func_id)
{
    PtoTrbDepGraph *g = t->graph;
    if (g == NULL)
        return PTO_OK;
    if (task_id >= g->task_capacity || g->edge_count + t->dep_count > g->edge_capacity)
        return api_fail(t, PTO_ERR_CAPACITY,
                        "submit (func_id %u): the dependency graph holds at most %llu tasks and %llu edges",
                        func_id, (unsigned long long)g->task_capacity, (unsigned long long)g->edge_capacity);
    t->graph_func_ids[task_id] = func_id;
    for (uint32_t i = 0; i < t->dep_count; i++) {
        t->graph_edges[2 * g->edge_count] = (uint32_t)t->deps[2 * i];
        t->graph_edges[2 * g->edge_count + 1] = (uint32_t)task_id;
        g->edge_count++;
    }
    g->task_count = task_id + 1;
    return PTO_OK;
}

/* Producers still running need a dependency node each in the consumer's ring. */
static uint64_t live_producers(TrbRun *t)
{
    uint64_t live = 0;
    for (uint32_t i = 0; i < t->dep_count; i++)
        live += !task_done(t, t->deps[2 * i + 1]);
    return live;
}

static int nodes_available(TrbRun *t, const void *arg)
{
    const TrbRing *r = &t->rings[*(const uint32_t *)arg];
    return live_producers(t) <= r->node_count - r->nodes_in_use;
}

static uint64_t take_node(TrbRing *r, uint32_t ring)
{
    uint64_t ref;
    if (r->node_free_head != 0) {
        ref = r->node_free_head;
        r->node_free_head = r->nodes[(ref & UINT32_MAX) - 1].next;
    } else {
        ref = ((uint64_t)ring << 32) | ++r->node_fresh;
    }
    r->nodes_in_use++;
    return ref;
}

/* With the lock held: the task takes its slot and its dependency nodes and
   becomes ready when no producer is left running. */
static int32_t wire_task(AicpuDevice *d, TrbRun *t, const PtoTrbKernel *k, uint32_t ring, const PtoTaskParam *params,
                         uint32_t n, uint32_t *ask)
{
    *ask = 0;
    int32_t rc = orch_wait(d, t, nodes_available, &ring);
    if (rc != PTO_OK)
        return rc;
    TrbRing *r = &t->rings[ring];
    uint64_t local = r->next_local;
    uint64_t ref = task_ref(local, ring);
    PtoTrbSlot *s = &r->slots[local & (r->window - 1)];
    s->task_id = t->submitted;
    s->local = local;
    s->kernel_addr = k->addr;
    s->fanout_head = 0;
    s->func_id = k->func_id;
    s->core_type = (uint8_t)k->core_type;
    s->arg_count = (uint16_t)n;
    set_task_state(s, TASK_PENDING);
    for (uint32_t i = 0; i < n; i++) {
        s->args[i] = params[i].value;
        s->arg_sizes[i] = params[i].direction == PTO_ARG_SCALAR ? 0 : params[i].bytes;
    }
    uint32_t fanin = 0;
    for (uint32_t i = 0; i < t->dep_count; i++) {
        uint64_t producer = t->deps[2 * i + 1];
        if (task_done(t, producer))
            continue;
        PtoTrbSlot *p = slot_of(t, producer);
        uint64_t node = take_node(r, ring);
        r->nodes[(node & UINT32_MAX) - 1] = (PtoTrbDepNode){ p->fanout_head, ref };
        p->fanout_head = node;
        fanin++;
    }
    s->fanin_left = fanin;
    s->release[0] = 0;
    for (uint32_t q = 1; q < PTO_TRB_RINGS; q++) {
        TrbRing *rq = &t->rings[q];
        s->release[q] = rq->open_release >= 0 ? (uint16_t)(rq->open_release + 1) : 0;
        if (rq->open_release >= 0)
            rq->releases[rq->open_release].pending++;
    }
    r->next_local = local + 1;
    t->submitted++;
    t->work->tasks_submitted = t->submitted;
    if (fanin == 0)
        push_ready(t, ref);
    *ask = aicpu_spread_work(d, dispatchable(d, t), t->orch_thread_count, t->orch_hooks);
    return PTO_OK;
}

static int api_submit(void *orch, uint32_t func_id, const PtoTaskParam *params, uint32_t n)
{
    int32_t rc;
    TrbRun *t = api_run(orch, "submit", &rc);
    if (t == NULL)
        return rc;
    AicpuDevice *d = &aicpu_device;
    if ((rc = api_blocked(t, "submit")) != 0)
        return rc;
    const PtoTrbKernel *k = find_kernel(t, func_id);
    if (k == NULL)
        return api_fail(t, PTO_ERR_ORCHESTRATION, "submit: func_id %u is not a child of the callable", func_id);
    if (n > PTO_MAX_TASK_PARAMS)
        return api_fail(t, PTO_ERR_CAPACITY, "submit (func_id %u): %u params, a task takes at most %u", func_id, n,
                        PTO_MAX_TASK_PARAMS);
    if (params == NULL && n > 0)
        return api_fail(t, PTO_ERR_ORCHESTRATION, "submit (func_id %u): NULL params", func_id);
    int32_t cls[PTO_MAX_TASK_PARAMS];
    uint32_t accesses;
    uint32_t ring = ring_of_depth(t->depth);
    uint64_t task_id = t->submitted;
    if ((rc = classify_params(t, func_id, params, n, cls, &accesses)) != PTO_OK ||
        (rc = ensure_map_room(d, t, accesses, func_id)) != PTO_OK || (rc = ensure_window(d, t, ring)) != PTO_OK ||
        (rc = collect_deps(t, func_id, ring, params, n, cls)) != PTO_OK ||
        (rc = record_dep_graph(t, task_id, func_id)) != PTO_OK)
        return rc;
    uint64_t ref = task_ref(t->rings[ring].next_local, ring);
    for (uint32_t i = 0; i < n; i++)
        if (cls[i] >= 0)
            trb_map_record(&t->map, cls[i], params[i].value, params[i].value + params[i].bytes,
                           params[i].direction != PTO_ARG_IN, task_id, ref);
    uint32_t ask;
    pthread_mutex_lock(&d->lock);
    rc = wire_task(d, t, k, ring, params, n, &ask);
    pthread_mutex_unlock(&d->lock);
    if (ask > 0) {
        uint32_t granted = aicpu_request_threads(t->orch_hooks, ask);
        pthread_mutex_lock(&d->lock);
        aicpu_requests_granted(d, ask, granted);
        pthread_mutex_unlock(&d->lock);
    }
    return rc;
}

/* ---- alloc_tensor and scopes ---------------------------------------------------------------- */

static uint64_t heap_addr(const TrbRing *r, uint64_t offset)
{
    return (uint64_t)(uintptr_t)r->heap + offset;
}

/* The largest piece the ring's heap can offer while only `kept` bytes (the
   newest, ending at heap_top) stay allocated. */
static uint64_t largest_piece(const TrbRing *r, uint64_t kept)
{
    if (kept == 0)
        return r->heap_bytes;
    if (kept <= r->heap_top) {
        uint64_t tail = r->heap_top - kept;
        uint64_t end = r->heap_bytes - r->heap_top;
        return end > tail ? end : tail;
    }
    return r->heap_bytes - kept;
}

/* Carves `bytes` (aligned) from the ring's heap; returns the bytes consumed
   (wrap-around skip included) or 0 when it does not fit now. */
static uint64_t heap_take(TrbRing *r, uint64_t bytes, uint64_t *offset)
{
    uint64_t h = r->heap_bytes;
    if (r->heap_used == 0)
        r->heap_top = 0;
    if (r->heap_used <= r->heap_top) { /* live bytes [top - used, top) */
        if (h - r->heap_top >= bytes) {
            *offset = r->heap_top;
            r->heap_top += bytes;
            r->heap_used += bytes;
            return bytes;
        }
        if (r->heap_top - r->heap_used >= bytes) {
            uint64_t consumed = h - r->heap_top + bytes;
            *offset = 0;
            r->heap_top = bytes;
            r->heap_used += consumed;
            return consumed;
        }
        return 0;
    }
    if (h - r->heap_used >= bytes) { /* live bytes wrap: free is [top, top + h - used) */
        *offset = r->heap_top;
        r->heap_top += bytes;
        r->heap_used += bytes;
        return bytes;
    }
    return 0;
}

typedef struct HeapRequest {
    uint32_t ring;
    uint64_t bytes, offset, consumed;
} HeapRequest;

static int heap_granted(TrbRun *t, const void *arg)
{
    HeapRequest *q = (HeapRequest *)arg;
    q->consumed = heap_take(&t->rings[q->ring], q->bytes, &q->offset);
    return q->consumed > 0;
}

static int release_record_free(TrbRun *t, const void *arg)
{
    return t->rings[*(const uint32_t *)arg].release_count < TRB_RELEASE_RECORDS;
}

/* With the lock held: the open scope's release record on the ring, created at
   its first allocation. */
static int32_t open_release(AicpuDevice *d, TrbRun *t, uint32_t ring)
{
    TrbRing *r = &t->rings[ring];
    if (ring == 0 || r->open_release >= 0)
        return PTO_OK;
    int32_t rc = orch_wait(d, t, release_record_free, &ring);
    if (rc != PTO_OK)
        return rc;
    uint32_t index = (r->release_head + r->release_count++) % TRB_RELEASE_RECORDS;
    r->releases[index] = (TrbRelease){ 0, 0, 0 };
    r->open_release = (int32_t)index;
    return PTO_OK;
}

static uint64_t api_alloc_tensor(void *orch, uint64_t bytes)
{
    int32_t rc;
    TrbRun *t = api_run(orch, "alloc_tensor", &rc);
    if (t == NULL || api_blocked(t, "alloc_tensor") != 0)
        return 0;
    AicpuDevice *d = &aicpu_device;
    uint32_t ring = ring_of_depth(t->depth);
    TrbRing *r = &t->rings[ring];
    if (bytes == 0)
        return heap_addr(r, 0); /* a view of it touches nothing */
    uint64_t aligned = (bytes + PTO_TRB_HEAP_ALIGN - 1) / PTO_TRB_HEAP_ALIGN * PTO_TRB_HEAP_ALIGN;
    if (aligned < bytes || aligned > r->heap_bytes) {
        api_fail(t, PTO_ERR_CAPACITY,
                 "alloc_tensor: %llu bytes can never fit ring %u's heap of %llu bytes (CallConfig.ring_heap[%u])",
                 (unsigned long long)bytes, ring, (unsigned long long)r->heap_bytes, ring);
        return 0;
    }
    pthread_mutex_lock(&d->lock);
    HeapRequest q = { ring, aligned, 0, 0 };
    rc = open_release(d, t, ring);
    if (rc == PTO_OK) {
        uint64_t kept = ring == 0 ? r->heap_used : r->releases[r->open_release].bytes;
        if (largest_piece(r, kept) < aligned)
            rc = api_fail(t, PTO_ERR_CAPACITY,
                          "alloc_tensor: %llu bytes cannot fit ring %u's heap of %llu bytes beside the %llu bytes its "
                          "scope keeps (CallConfig.ring_heap[%u])",
                          (unsigned long long)bytes, ring, (unsigned long long)r->heap_bytes,
                          (unsigned long long)kept, ring);
        else
            rc = orch_wait(d, t, heap_granted, &q);
    }
    if (rc == PTO_OK && ring > 0)
        r->releases[r->open_release].bytes += q.consumed;
    pthread_mutex_unlock(&d->lock);
    if (rc != PTO_OK)
        return 0;
    /* the memory's earlier users have all finished: forget their accesses */
    uint64_t addr = heap_addr(r, q.offset);
    int32_t cls = trb_map_class(&t->map, addr, addr + aligned);
    if (cls >= 0)
        trb_map_purge(&t->map, cls, addr, addr + aligned);
    return addr;
}

static int api_scope_begin(void *orch)
{
    int32_t rc;
    TrbRun *t = api_run(orch, "scope_begin", &rc);
    if (t == NULL)
        return rc;
    if ((rc = api_blocked(t, "scope_begin")) != 0)
        return rc;
    if (t->depth >= PTO_TRB_MAX_SCOPE_DEPTH)
        return api_fail(t, PTO_ERR_ORCHESTRATION, "scope_begin: scopes nest at most %u deep", PTO_TRB_MAX_SCOPE_DEPTH);
    t->depth++;
    return PTO_OK;
}

static int api_scope_end(void *orch)
{
    int32_t rc;
    TrbRun *t = api_run(orch, "scope_end", &rc);
    if (t == NULL)
        return rc;
    AicpuDevice *d = &aicpu_device;
    if ((rc = api_blocked(t, "scope_end")) != 0)
        return rc;
    if (t->depth == 0)
        return api_fail(t, PTO_ERR_ORCHESTRATION, "scope_end without a matching scope_begin");
    /* a scope at depth <= 3 owns its ring's allocations; deeper ones free with depth 3 */
    if (t->depth < PTO_TRB_RINGS && t->rings[t->depth].open_release >= 0) {
        TrbRing *r = &t->rings[t->depth];
        pthread_mutex_lock(&d->lock);
        r->releases[r->open_release].ended = 1;
        r->open_release = -1;
        release_heap(r);
        pthread_mutex_unlock(&d->lock);
    }
    t->depth--;
    return PTO_OK;
}

/* ---- read_tensor and write_tensor -------------------------------------------------------------- */

typedef struct Span {
    int32_t cls;
    uint64_t lo, hi;
    int writes;
} Span;

static int pending_access(void *ctx, const PtoTrbAccess *a)
{
    return !task_done(ctx, a->task);
}

static int span_settled(TrbRun *t, const void *arg)
{
    const Span *s = arg;
    return trb_map_overlaps(&t->map, s->cls, s->lo, s->hi, s->writes, pending_access, t) == 0;
}

/* The bytes of a run tensor or ring heap, once every task that writes them
   (and, for a write, reads them) has finished. A zero-length access must lie
   inside one too (as on hbg) and waits for nothing. */
static int32_t settle_span(TrbRun *t, uint64_t addr, uint64_t n, int writes, const char *fn, Span *s)
{
    if (addr + n < addr || (s->cls = trb_map_class(&t->map, addr, addr + n)) < 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: [0x%llx, +%llu) is not inside one run tensor or ring heap", fn,
                        (unsigned long long)addr, (unsigned long long)n);
    *s = (Span){ s->cls, addr, addr + n, writes };
    if (n == 0 || span_settled(t, s))
        return PTO_OK;
    AicpuDevice *d = &aicpu_device;
    pthread_mutex_lock(&d->lock);
    int32_t rc = orch_wait(d, t, span_settled, s);
    pthread_mutex_unlock(&d->lock);
    return rc;
}

/* read/write_tensor are not sticky: a refused access changes nothing, so the
   library may handle it (and may still read after a failed submit). */
static int api_read_tensor(void *orch, uint64_t dev_addr, void *dst, uint64_t n)
{
    int32_t rc;
    TrbRun *t = api_run(orch, "read_tensor", &rc);
    if (t == NULL)
        return rc;
    if (dst == NULL && n > 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "read_tensor: NULL destination");
    Span s;
    rc = settle_span(t, dev_addr, n, 0, "read_tensor", &s);
    if (rc == PTO_OK && n > 0)
        memcpy(dst, (const void *)(uintptr_t)dev_addr, n);
    return rc;
}

static int api_write_tensor(void *orch, uint64_t dev_addr, const void *src, uint64_t n)
{
    int32_t rc;
    TrbRun *t = api_run(orch, "write_tensor", &rc);
    if (t == NULL)
        return rc;
    if (src == NULL && n > 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "write_tensor: NULL source");
    Span s;
    rc = settle_span(t, dev_addr, n, 1, "write_tensor", &s);
    if (rc == PTO_OK && n > 0)
        memcpy((void *)(uintptr_t)dev_addr, src, n);
    return rc;
}

static const PtoOrchApi trb_orch_api = {
    .submit = api_submit,
    .alloc_tensor = api_alloc_tensor,
    .scope_begin = api_scope_begin,
    .scope_end = api_scope_end,
    .read_tensor = api_read_tensor,
    .write_tensor = api_write_tensor,
};

/* ---- orchestrating ------------------------------------------------------------------------------ */

/* Runs the callable's orchestration (unlocked). *loaded is 0 when a library
   orchestration could not even be loaded. */
static int orchestrate(TrbRun *t, int *loaded)
{
    const PtoTrbWork *w = t->work;
    const uint8_t *orchestration = (const uint8_t *)(uintptr_t)w->orchestration_dev;
    pto_clear_error();
    *loaded = 1;
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
    int ret = fn == NULL ? pto_program_orchestrate(&trb_orch_api, handle, t->args, orchestration, w->orchestration_bytes,
                                                   (const uint8_t *)(uintptr_t)w->signature_dev, w->signature_length)
                         : fn(&trb_orch_api, handle, t->args);
    orch_session_close(&session);
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
    if (code != PTO_OK && !d->stopping) {
        memcpy(w->message, message, sizeof message);
        aicpu_record_error(d, code, ret, t->submitted, 0, 0);
    }
    t->orch_finished = 1;
    maybe_end(d, t);
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
        int ret = orchestrate(t, &loaded);
        pthread_mutex_lock(&d->lock);
        finish_orchestration(d, t, ret, loaded);
    }
    return schedule(d, t, thread_count, hooks);
}
