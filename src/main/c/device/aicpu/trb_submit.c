/*
 * The orchestration API's submit on the device (trb_orch_api.h): a task's
 * views are classified in the tensor map, its producers collected (the same
 * rule as hbg's, so the same callable gives the same graph on both runtimes),
 * it takes its ring's next slot and a dependency node per producer still
 * running, and the scheduler queues it (trb_scheduler.h). Inside a MANUAL
 * scope the task's accesses are recorded apart (trb_tensor_map.h), so no task
 * of the scope infers a dependency on another; submit_after adds the declared
 * ones. A sub-graph invocation's tasks (trb_subgraph_task, orch/subgraph.h)
 * take the same path: they infer their producers and record their accesses
 * only as their flags say, and add the producers the layer names. A full
 * tensor map, window or dependency pool blocks the orchestrator until tasks
 * finish; a task with more producers than its ring's pool can ever hold fails
 * with PTO_ERR_CAPACITY.
 */
#include <string.h>

#include "device/aicpu/trb_orch_api.h"
#include "device/aicpu/trb_recording.h"
#include "device/aicpu/trb_scheduler.h"
#include "ptorun/pto_runtime_c_api.h"
#include "util/last_error.h"
#include "util/sorted_search.h"
#include "util/tensor_view.h"

static int access_done(void *ctx, const PtoTrbAccess *a)
{
    return trb_task_done(ctx, a->task);
}

static const PtoTrbKernel *find_kernel(const TrbRun *t, uint32_t func_id)
{
    uint32_t a = PTO_SORTED_FIRST(t->kernels, t->kernel_count, func_id, func_id, 0);
    return a < t->kernel_count && t->kernels[a].func_id == func_id ? &t->kernels[a] : NULL;
}

static int is_tensor(uint32_t direction)
{
    return direction == PTO_ARG_IN || direction == PTO_ARG_OUT || direction == PTO_ARG_INOUT;
}

/* What a task needs of the tensor map: entries, and view records for its
   strided accesses. */
typedef struct MapNeed {
    uint32_t entries, views;
} MapNeed;

/* Checks each param; each tensor view's class when the task infers or records
   its accesses (flags: SUBGRAPH_TASK_*), else -1 (and for scalars and empty
   views); the map room its recorded accesses need. */
static int32_t classify_params(TrbRun *t, const char *fn, uint32_t func_id, const PtoTaskParam *params, uint32_t n,
                               uint32_t flags, int32_t *cls, MapNeed *need)
{
    need->entries = need->views = 0;
    for (uint32_t i = 0; i < n; i++) {
        const PtoTaskParam *p = &params[i];
        cls[i] = -1;
        if (p->direction == PTO_ARG_SCALAR)
            continue;
        if (!is_tensor(p->direction))
            return trb_api_fail(t, PTO_ERR_ORCHESTRATION, "%s (func_id %u): param %u has invalid direction %u", fn,
                                func_id, i, p->direction);
        uint64_t lo = p->value, hi = p->value + p->bytes;
        if (hi < lo)
            return trb_api_fail(t, PTO_ERR_ORCHESTRATION,
                                "%s (func_id %u): param %u view [0x%llx, +%llu) wraps around", fn, func_id, i,
                                (unsigned long long)lo, (unsigned long long)p->bytes);
        const char *bad = tensor_view_param_check(p);
        if (bad != NULL)
            return trb_api_fail(t, PTO_ERR_ORCHESTRATION, "%s (func_id %u): param %u strided view at 0x%llx: %s", fn,
                                func_id, i, (unsigned long long)lo, bad);
        if (p->bytes == 0 || (flags & (SUBGRAPH_TASK_INFER | SUBGRAPH_TASK_RECORD)) == 0)
            continue; /* touches nothing, depends on nothing; or the map never sees it */
        if ((cls[i] = trb_map_class(&t->map, lo, hi)) < 0)
            return trb_api_fail(t, PTO_ERR_ORCHESTRATION,
                                "%s (func_id %u): param %u view [0x%llx, +%llu) is not inside one run tensor or "
                                "ring heap",
                                fn, func_id, i, (unsigned long long)lo, (unsigned long long)p->bytes);
        if ((flags & SUBGRAPH_TASK_RECORD) == 0)
            continue; /* inferred from, not recorded: no room needed */
        need->entries++;
        need->views += p->view.ndims != 0;
    }
    return PTO_OK;
}

static int map_fits(const TrbTensorMap *m, const MapNeed *need)
{
    return trb_map_room(m) >= need->entries && trb_map_view_room(m) >= need->views;
}

static int map_has_room(TrbRun *t, const void *arg)
{
    const MapNeed *need = arg;
    if (!map_fits(&t->map, need))
        trb_map_reclaim(&t->map, access_done, t);
    return map_fits(&t->map, need);
}

/* Room for a task's accesses in the tensor map: entries of finished tasks are
   dropped when it is full (not while a dependency graph is collected: its
   edges to finished tasks must stay exact). */
static int32_t ensure_map_room(AicpuDevice *d, TrbRun *t, const MapNeed *need, const char *fn, uint32_t func_id)
{
    if (map_fits(&t->map, need))
        return PTO_OK;
    trb_record_lose(t); /* reclaiming forgets producers: a recording would not be exact */
    if (t->graph != NULL)
        return trb_api_fail(t, PTO_ERR_CAPACITY,
                            "%s (func_id %u): the tensor map's %u entries (%u strided views) are full and a "
                            "dependency graph is being collected, which keeps every entry",
                            fn, func_id, t->map.capacity, t->map.view_capacity);
    return trb_orch_await(d, t, map_has_room, need);
}

static int window_has_room(TrbRun *t, const void *arg)
{
    return trb_ring_window_has_room(&t->rings[*(const uint32_t *)arg]);
}

static int32_t ensure_window(AicpuDevice *d, TrbRun *t, uint32_t ring)
{
    return trb_orch_await(d, t, window_has_room, &ring);
}

/* A task keeping its views takes a block of its ring's view pool, freed when it retires. */
typedef struct ViewNeed {
    uint32_t ring, count;
} ViewNeed;

static int views_have_room(TrbRun *t, const void *arg)
{
    const ViewNeed *v = arg;
    return trb_ring_views_fit(&t->rings[v->ring], v->count);
}

static int32_t ensure_views(AicpuDevice *d, TrbRun *t, uint32_t ring, uint32_t count)
{
    ViewNeed need = { ring, count };
    return count == 0 ? PTO_OK : trb_orch_await(d, t, views_have_room, &need);
}

typedef struct DepCollector {
    TrbRun *t;
    uint64_t limit;           /* producers the ring's pool can take */
    uint32_t func_id, ring;
    const char *fn;           /* the api call, for its messages */
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
        return trb_api_fail(t, PTO_ERR_CAPACITY,
                            "%s (func_id %u): the task has more than %llu producers; ring %u's dependency pool "
                            "holds %llu (CallConfig.ring_dep_pool[%u])",
                            c->fn, c->func_id, (unsigned long long)c->limit, c->ring,
                            (unsigned long long)t->rings[c->ring].node_count, c->ring);
    memmove(&t->deps[2 * lo + 2], &t->deps[2 * lo], (size_t)(t->dep_count - lo) * 2 * sizeof(uint64_t));
    t->deps[2 * lo] = a->task_id;
    t->deps[2 * lo + 1] = a->task;
    t->dep_count++;
    return 0;
}

/* How a task finds its producers and keeps its accesses: submit and
   submit_after infer and record (SUBGRAPH_TASK_INFER | SUBGRAPH_TASK_RECORD);
   a sub-graph's task as its flags say, with its explicit producers. */
typedef struct Wiring {
    uint32_t flags;           /* SUBGRAPH_TASK_* */
    int is_after;             /* a submit_after (the whole-run recording says so) */
    const uint32_t *after;    /* submit_after: ordinals of the innermost (MANUAL) scope's tasks */
    uint32_t n_after;
    uint64_t after_base;      /* that scope's first task */
    const uint64_t *preds;    /* a sub-graph's task: earlier task ids */
    uint32_t n_preds;
} Wiring;

/* The ref of an earlier task: each ring's slots hold its last `window` tasks
   in task-id order (only this thread writes them); a task no slot holds any
   more has finished (its slot was retired and reused). */
static uint64_t ref_of_task(TrbRun *t, uint64_t task_id)
{
    for (uint32_t ring = 0; ring < PTO_TRB_RINGS; ring++) {
        const TrbRing *r = &t->rings[ring];
        uint64_t lo = r->next_local > r->window ? r->next_local - r->window : 0, hi = r->next_local;
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;
            if (r->slots[mid & (r->window - 1)].task_id < task_id)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < r->next_local && r->slots[lo & (r->window - 1)].task_id == task_id)
            return trb_task_ref(lo, ring);
    }
    return TRB_REF_FINISHED;
}

static int add_task(DepCollector *c, uint64_t producer)
{
    PtoTrbAccess a = { .task_id = producer, .task = ref_of_task(c->t, producer) };
    return add_dep(c, &a);
}

/* After the inferred producers: a submit_after's ordinals (its inferred
   producers are all earlier than the scope: never the same task), each once;
   a sub-graph task's earlier task ids (one inferred too counts once). */
static int32_t add_explicit(DepCollector *c, const Wiring *w, uint64_t task_id)
{
    TrbRun *t = c->t;
    uint64_t earlier = task_id - w->after_base;
    for (uint32_t i = 0; i < w->n_after; i++) {
        uint32_t o = w->after[i];
        if (o >= earlier)
            return trb_api_fail(t, PTO_ERR_INVALID_ARGUMENT,
                                "submit_after: after[%u] = %u is not an earlier submit of this scope (it has %llu)", i,
                                o, (unsigned long long)earlier);
        uint64_t producer = w->after_base + o;
        for (uint32_t d = 0; d < t->dep_count; d++)
            if (t->deps[2 * d] == producer)
                return trb_api_fail(t, PTO_ERR_INVALID_ARGUMENT, "submit_after: after[%u] = %u is listed twice", i, o);
        int rc = add_task(c, producer);
        if (rc != 0)
            return rc;
    }
    for (uint32_t i = 0; i < w->n_preds; i++) {
        if (w->preds[i] >= task_id)
            return trb_api_fail(t, PTO_ERR_INVALID_ARGUMENT,
                                "%s (func_id %u): producer %u is task %llu, not an earlier task (this is task %llu)",
                                c->fn, c->func_id, i, (unsigned long long)w->preds[i], (unsigned long long)task_id);
        int rc = add_task(c, w->preds[i]);
        if (rc != 0)
            return rc;
    }
    return PTO_OK;
}

static int32_t collect_deps(TrbRun *t, const char *fn, uint32_t func_id, uint32_t ring, const PtoTaskParam *params,
                            uint32_t n, const int32_t *cls, const Wiring *w)
{
    uint64_t limit = t->rings[ring].node_count;
    DepCollector c = { t, limit < t->deps_capacity ? limit : t->deps_capacity, func_id, ring, fn };
    t->dep_count = 0;
    for (uint32_t i = 0; i < n && (w->flags & SUBGRAPH_TASK_INFER); i++) {
        if (cls[i] < 0)
            continue;
        int rc = trb_map_conflicts(&t->map, cls[i], params[i].value, params[i].value + params[i].bytes,
                                   params[i].view.ndims != 0 ? &params[i].view : NULL,
                                   params[i].direction != PTO_ARG_IN, add_dep, &c);
        if (rc != 0)
            return rc;
    }
    return add_explicit(&c, w, t->submitted);
}

static int32_t record_dep_graph(TrbRun *t, const char *fn, uint64_t task_id, uint32_t func_id)
{
    PtoTrbDepGraph *g = t->graph;
    if (g == NULL)
        return PTO_OK;
    if (task_id >= g->task_capacity || g->edge_count + t->dep_count > g->edge_capacity)
        return trb_api_fail(t, PTO_ERR_CAPACITY,
                            "%s (func_id %u): the dependency graph holds at most %llu tasks and %llu edges", fn,
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
        live += !trb_task_done(t, t->deps[2 * i + 1]);
    return live;
}

static int nodes_available(TrbRun *t, const void *arg)
{
    const TrbRing *r = &t->rings[*(const uint32_t *)arg];
    return live_producers(t) <= r->node_count - r->nodes_in_use;
}

/* With the lock held: the task takes its slot and its dependency nodes and
   becomes ready when no producer is left running. */
static int32_t wire_task(AicpuDevice *d, TrbRun *t, const PtoTrbKernel *k, uint32_t ring, const PtoTaskParam *params,
                         uint32_t n, uint32_t views, uint32_t *ask)
{
    *ask = 0;
    int32_t rc = trb_orch_wait(d, t, nodes_available, &ring);
    if (rc != PTO_OK)
        return rc;
    TrbRing *r = &t->rings[ring];
    uint64_t local = r->next_local;
    uint64_t ref = trb_task_ref(local, ring);
    PtoTrbSlot *s = &r->slots[local & (r->window - 1)];
    s->task_id = t->submitted;
    s->local = local;
    s->kernel_addr = k->addr;
    s->fanout_head = 0;
    s->func_id = k->func_id;
    s->core_type = (uint8_t)k->core_type;
    s->arg_count = (uint16_t)n;
    trb_set_task_state(s, TASK_PENDING);
    for (uint32_t i = 0; i < n; i++) {
        s->args[i] = params[i].value;
        s->arg_sizes[i] = params[i].direction == PTO_ARG_SCALAR ? 0 : params[i].bytes;
    }
    s->view_index = 0;
    if (views > 0) { /* room ensured before (ensure_views): only this thread takes views */
        uint64_t first = trb_ring_take_views(r, views);
        for (uint32_t i = 0; i < n; i++)
            r->views[first + i] = tensor_view_kernel_entry(&params[i]);
        s->view_index = (uint32_t)first + 1;
    }
    s->view_end = r->view_head;
    uint32_t fanin = 0;
    for (uint32_t i = 0; i < t->dep_count; i++) {
        uint64_t producer = t->deps[2 * i + 1];
        if (trb_task_done(t, producer))
            continue;
        PtoTrbSlot *p = trb_slot_of(t, producer);
        uint64_t node = trb_ring_take_node(r, ring);
        *trb_ring_node(r, node) = (PtoTrbDepNode){ p->fanout_head, ref };
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
    *ask = trb_sched_submitted(d, t, ref, fanin == 0);
    return PTO_OK;
}

/* wire_task under the device's lock, then the participations it asks for. */
static int32_t wire_and_schedule(AicpuDevice *d, TrbRun *t, const PtoTrbKernel *k, uint32_t ring,
                                 const PtoTaskParam *params, uint32_t n, uint32_t views)
{
    uint32_t ask;
    pthread_mutex_lock(&d->lock);
    int32_t rc = wire_task(d, t, k, ring, params, n, views, &ask);
    pthread_mutex_unlock(&d->lock);
    trb_sched_request(d, t, ask);
    return rc;
}

/* The one path of a built task (submit, submit_after, a sub-graph's task):
   its views checked and classified, room in the tensor map (for what it
   records), its ring's window and view pool; its producers collected; the
   dependency-graph file, the whole-run recording and the tensor map told;
   then wired and scheduled. */
static int submit_task(TrbRun *t, const char *fn, const PtoTrbKernel *k, const PtoTaskParam *params, uint32_t n,
                       const Wiring *w)
{
    int32_t rc;
    AicpuDevice *d = &aicpu_device;
    uint32_t func_id = k->func_id;
    if (n > PTO_MAX_TASK_PARAMS)
        return trb_api_fail(t, PTO_ERR_CAPACITY, "%s (func_id %u): %u params, a task takes at most %u", fn, func_id, n,
                            PTO_MAX_TASK_PARAMS);
    if (params == NULL && n > 0)
        return trb_api_fail(t, PTO_ERR_ORCHESTRATION, "%s (func_id %u): NULL params", fn, func_id);
    int32_t cls[PTO_MAX_TASK_PARAMS];
    MapNeed need;
    uint32_t ring = trb_ring_of_depth(t->depth);
    uint64_t task_id = t->submitted;
    uint32_t views = 0;
    if ((rc = classify_params(t, fn, func_id, params, n, w->flags, cls, &need)) != PTO_OK ||
        (rc = ensure_map_room(d, t, &need, fn, func_id)) != PTO_OK || (rc = ensure_window(d, t, ring)) != PTO_OK ||
        (rc = ensure_views(d, t, ring, views = tensor_view_params_kept(params, n) ? n : 0)) != PTO_OK ||
        (rc = collect_deps(t, fn, func_id, ring, params, n, cls, w)) != PTO_OK ||
        (rc = record_dep_graph(t, fn, task_id, func_id)) != PTO_OK)
        return rc;
    uint64_t ref = trb_task_ref(t->rings[ring].next_local, ring);
    trb_record_task(t, task_id, ref, func_id, params, n, w->is_after);
    for (uint32_t i = 0; i < n && (w->flags & SUBGRAPH_TASK_RECORD); i++) {
        if (cls[i] < 0)
            continue;
        uint64_t lo = params[i].value, hi = lo + params[i].bytes;
        const PtoTensorView *view = params[i].view.ndims != 0 ? &params[i].view : NULL;
        int writes = params[i].direction != PTO_ARG_IN;
        if (t->manual_depth != 0)
            trb_map_record_manual(&t->map, cls[i], lo, hi, view, writes, task_id, ref);
        else
            trb_map_record(&t->map, cls[i], lo, hi, view, writes, task_id, ref);
    }
    return wire_and_schedule(d, t, k, ring, params, n, views);
}

/* submit and submit_after: a child of the callable, dependencies inferred and accesses recorded. */
static int submit_child(TrbRun *t, const char *fn, uint32_t func_id, const PtoTaskParam *params, uint32_t n,
                        const Wiring *w)
{
    const PtoTrbKernel *k = find_kernel(t, func_id);
    if (k == NULL)
        return trb_api_fail(t, PTO_ERR_ORCHESTRATION, "%s: func_id %u is not a child of the callable", fn, func_id);
    return submit_task(t, fn, k, params, n, w);
}

/* A sub-graph invocation's entry and exit: a task that runs nothing. */
static const PtoTrbKernel boundary_kernel = {
    .addr = PTO_KERNEL_ADDR_NONE,
    .func_id = SUBGRAPH_BOUNDARY_FUNC,
    .core_type = PTO_CORE_AIV,
};

int trb_subgraph_task(void *run, uint32_t func_id, const PtoTaskParam *params, uint32_t n, const uint64_t *preds,
                      uint32_t n_preds, uint32_t flags, const uint32_t *origins, uint64_t *handle)
{
    (void)origins; /* a run with sub-graphs is not recorded whole */
    TrbRun *t = run;
    AicpuDevice *d = &aicpu_device;
    const char *fn = "subgraph_submit";
    trb_sched_release_kept(d, t); /* the orchestration goes on (trb_api_run) */
    trb_record_lose(t);
    if (t->api_error != 0)
        return pto_fail(t->api_error, "%s: refused, an earlier call of this orchestration failed: %s", fn,
                        t->work->message);
    if (preds == NULL && n_preds > 0)
        return trb_api_fail(t, PTO_ERR_INVALID_ARGUMENT, "%s (func_id %u): NULL producers with %u of them", fn,
                            func_id, n_preds);
    const PtoTrbKernel *k = func_id == SUBGRAPH_BOUNDARY_FUNC ? &boundary_kernel : find_kernel(t, func_id);
    if (k == NULL)
        return trb_api_fail(t, PTO_ERR_ORCHESTRATION, "%s: func_id %u is not a child of the callable", fn, func_id);
    uint64_t task_id = t->submitted;
    Wiring w = { .flags = flags, .preds = preds, .n_preds = n_preds };
    int rc = submit_task(t, fn, k, params, n, &w);
    if (rc == PTO_OK && handle != NULL)
        *handle = task_id;
    return rc;
}

void trb_replay_batch_end(TrbRun *t, TrbReplayBatch *b)
{
    if (!b->held)
        return;
    uint32_t ask = b->ask;
    *b = (TrbReplayBatch){ 0 };
    pthread_mutex_unlock(&aicpu_device.lock);
    trb_sched_request(&aicpu_device, t, ask);
}

int32_t trb_submit_replayed(TrbRun *t, TrbReplayBatch *b, uint32_t func_id, const PtoTaskParam *params, uint32_t n,
                            int after, const uint64_t *deps, uint32_t dep_count)
{
    AicpuDevice *d = &aicpu_device;
    const char *fn = after ? "submit_after" : "submit";
    if (b->held && b->count == TRB_REPLAY_BATCH)
        trb_replay_batch_end(t, b);
    if (!b->held) {
        pthread_mutex_lock(&d->lock);
        b->held = 1;
    }
    b->ask += trb_sched_release_kept_locked(d, t); /* the orchestration goes on (trb_api_run) */
    const PtoTrbKernel *k = find_kernel(t, func_id);
    if (k == NULL)
        return trb_api_fail(t, PTO_ERR_ORCHESTRATION, "%s: func_id %u is not a child of the callable", fn, func_id);
    uint32_t ring = trb_ring_of_depth(t->depth);
    uint64_t pool = t->rings[ring].node_count, limit = pool < t->deps_capacity ? pool : t->deps_capacity;
    if (dep_count > limit) /* this run's dependency pool may be smaller than the recording run's */
        return trb_api_fail(t, PTO_ERR_CAPACITY,
                            "%s (func_id %u): the task has more than %llu producers; ring %u's dependency pool "
                            "holds %llu (CallConfig.ring_dep_pool[%u])",
                            fn, func_id, (unsigned long long)limit, ring, (unsigned long long)pool, ring);
    int32_t rc;
    uint32_t views = tensor_view_params_kept(params, n) ? n : 0, ask = 0;
    ViewNeed need = { ring, views };
    if (!window_has_room(t, &ring) || (views > 0 && !views_have_room(t, &need))) {
        /* about to wait for the kernels: the participations asked for so far first */
        trb_replay_batch_end(t, b);
        pthread_mutex_lock(&d->lock);
        b->held = 1;
    }
    if ((rc = trb_orch_wait(d, t, window_has_room, &ring)) != PTO_OK ||
        (views > 0 && (rc = trb_orch_wait(d, t, views_have_room, &need)) != PTO_OK))
        return rc;
    memcpy(t->deps, deps, (size_t)dep_count * 2 * sizeof(uint64_t));
    t->dep_count = dep_count;
    if ((rc = record_dep_graph(t, fn, t->submitted, func_id)) != PTO_OK)
        return rc;
    rc = wire_task(d, t, k, ring, params, n, views, &ask);
    b->ask += ask;
    b->count++;
    return rc;
}

int trb_api_submit(void *orch, uint32_t func_id, const PtoTaskParam *params, uint32_t n)
{
    int32_t rc;
    TrbRun *t = trb_api_begin(orch, "submit", &rc);
    Wiring w = { .flags = SUBGRAPH_TASK_INFER | SUBGRAPH_TASK_RECORD };
    return t == NULL ? rc : submit_child(t, "submit", func_id, params, n, &w);
}

int trb_api_submit_after(void *orch, uint32_t func_id, const PtoTaskParam *params, uint32_t n, const uint32_t *after,
                         uint32_t n_after)
{
    int32_t rc;
    TrbRun *t = trb_api_begin(orch, "submit_after", &rc);
    if (t == NULL)
        return rc;
    if (t->depth == 0)
        return trb_api_fail(t, PTO_ERR_ORCHESTRATION, "submit_after: no scope is open (it needs a MANUAL scope)");
    if (t->scope_mode[t->depth] != PTO_SCOPE_MANUAL)
        return trb_api_fail(t, PTO_ERR_ORCHESTRATION, "submit_after: the innermost scope is AUTO, not MANUAL");
    if (after == NULL && n_after > 0)
        return trb_api_fail(t, PTO_ERR_INVALID_ARGUMENT, "submit_after: NULL after with n_after %u", n_after);
    uint64_t earlier = t->submitted - t->scope_first[t->depth];
    if (n_after > earlier)
        return trb_api_fail(t, PTO_ERR_INVALID_ARGUMENT,
                            "submit_after: n_after %u exceeds the %llu earlier submits of this scope", n_after,
                            (unsigned long long)earlier);
    Wiring w = { .flags = SUBGRAPH_TASK_INFER | SUBGRAPH_TASK_RECORD,
                 .is_after = 1,
                 .after = after,
                 .n_after = n_after,
                 .after_base = t->scope_first[t->depth] };
    return submit_child(t, "submit_after", func_id, params, n, &w);
}
