/*
 * The trb scheduler (trb_scheduler.h): ready queues, task starts, completion,
 * the end of the run, the orchestrator's waits and the lone-task rule.
 */
#include "device/aicpu/trb_scheduler.h"

#include "util/last_error.h"
#include "ptorun/pto_kernel.h"
#include "ptorun/pto_runtime_c_api.h"

/* the orchestrator parks here while it waits for the rings (trb_orch_wait) */
static pthread_cond_t orch_cond = PTHREAD_COND_INITIALIZER;

void trb_sched_reset(TrbRun *t)
{
    for (int c = 0; c < AICPU_CORE_TYPES; c++)
        t->ready_head[c] = t->ready_tail[c] = 0;
    t->kept = 0;
}

/* ---- ready queues -------------------------------------------------------------------- */

static uint64_t ready_count(const TrbRun *t, uint32_t core_type)
{
    return t->ready_tail[core_type] - t->ready_head[core_type];
}

static void push_ready(TrbRun *t, uint64_t ref)
{
    PtoTrbSlot *s = trb_slot_of(t, ref);
    trb_set_task_state(s, TASK_READY);
    uint32_t c = s->core_type;
    t->ready[c][t->ready_tail[c]++ % t->ready_capacity] = ref;
}

/* Ready tasks that have a free core of their type. */
static uint32_t startable(const AicpuDevice *d, const TrbRun *t)
{
    uint32_t n = 0;
    for (uint32_t c = 0; c < AICPU_CORE_TYPES; c++) {
        uint64_t ready = ready_count(t, c);
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
        uint64_t id = trb_slot_of(t, t->ready[c][t->ready_head[c] % t->ready_capacity])->task_id;
        if (best < 0 || id < best_id) {
            best = c;
            best_id = id;
        }
    }
    if (best < 0)
        return 0;
    *ref = t->ready[best][t->ready_head[best]++ % t->ready_capacity];
    *core = aicpu_core_take(d, (uint32_t)best);
    trb_set_task_state(trb_slot_of(t, *ref), TASK_RUNNING);
    return 1;
}

/* ---- the lone-task rule ------------------------------------------------------------------ */

/* The task just queued (of `core_type`) is the only one that could start now,
   and nobody is on the way to take it. */
static int lone_task(const AicpuDevice *d, const TrbRun *t, uint32_t core_type)
{
    return !d->stopping && startable(d, t) == 1 && ready_count(t, core_type) == 1 && d->free_count[core_type] > 0 &&
           aicpu_on_the_way(d) == 0;
}

uint32_t trb_sched_submitted(AicpuDevice *d, TrbRun *t, uint64_t ref, int ready)
{
    if (ready) {
        push_ready(t, ref);
        uint32_t core_type = trb_slot_of(t, ref)->core_type;
        if (lone_task(d, t, core_type)) {
            t->kept = 1;
            t->kept_ref = ref;
            return 0;
        }
    }
    return aicpu_spread_work(d, startable(d, t), t->orch_thread_count, t->orch_hooks);
}

void trb_sched_request(AicpuDevice *d, const TrbRun *t, uint32_t ask)
{
    if (ask == 0)
        return;
    uint32_t granted = aicpu_request_threads(t->orch_hooks, ask);
    pthread_mutex_lock(&d->lock);
    aicpu_requests_granted(d, ask, granted);
    pthread_mutex_unlock(&d->lock);
}

uint32_t trb_sched_release_kept_locked(AicpuDevice *d, TrbRun *t)
{
    if (!t->kept)
        return 0;
    t->kept = 0;
    const PtoTrbSlot *s = trb_slot_of(t, t->kept_ref);
    if (!d->stopping && s->local == (t->kept_ref >> 2) && trb_task_state(s) == TASK_READY)
        return aicpu_spread_work(d, startable(d, t), t->orch_thread_count, t->orch_hooks);
    return 0;
}

void trb_sched_release_kept(AicpuDevice *d, TrbRun *t)
{
    if (!t->kept)
        return;
    pthread_mutex_lock(&d->lock);
    uint32_t ask = trb_sched_release_kept_locked(d, t);
    pthread_mutex_unlock(&d->lock);
    trb_sched_request(d, t, ask);
}

/* ---- completion ---------------------------------------------------------------------------- */

static void wake_orchestrator(TrbRun *t)
{
    if (t->orch_waiting)
        pthread_cond_signal(&orch_cond);
}

void trb_sched_maybe_end(AicpuDevice *d, TrbRun *t)
{
    if (!d->ended && t->orch_finished && d->in_flight == 0 && (d->stopping || d->completed == t->submitted))
        aicpu_end_run(d);
}

/* A kernel returned: release its consumers, its dependency nodes, its scopes'
   heap and its slot. */
static void complete(AicpuDevice *d, TrbRun *t, uint64_t ref, uint32_t core, int32_t rc, const char *message)
{
    PtoTrbSlot *s = trb_slot_of(t, ref);
    d->in_flight--;
    d->completed++;
    aicpu_core_give(d, s->core_type, core);
    d->args->status.tasks_completed = d->completed;
    if (rc != 0)
        aicpu_record_kernel_fault(d, rc, s->task_id, s->func_id, core, message);
    trb_set_task_state(s, TASK_COMPLETED);
    for (uint64_t node = s->fanout_head; node != 0;) {
        TrbRing *nr = &t->rings[node >> 32];
        const PtoTrbDepNode *n = trb_ring_node(nr, node);
        uint64_t next = n->next;
        PtoTrbSlot *c = trb_slot_of(t, n->consumer);
        if (--c->fanin_left == 0 && !d->stopping)
            push_ready(t, n->consumer);
        trb_ring_free_node(nr, node);
        node = next;
    }
    s->fanout_head = 0;
    for (uint32_t r = 1; r < PTO_TRB_RINGS; r++) {
        if (s->release[r] == 0)
            continue;
        t->rings[r].releases[s->release[r] - 1].pending--;
        trb_ring_release_heap(&t->rings[r]);
    }
    trb_ring_retire(&t->rings[ref & 3u]);
    wake_orchestrator(t);
    trb_sched_maybe_end(d, t);
}

/* ---- starting tasks ------------------------------------------------------------------------------ */

/* Runs one ready task on this participation, if there is one with a free core:
   unlocks for the kernel. Returns non-zero when it ran one. */
static int run_one(AicpuDevice *d, TrbRun *t, uint32_t thread_count, const PtoAicpuHooks *hooks)
{
    uint64_t ref;
    uint32_t core;
    if (d->stopping || !pick(d, t, &ref, &core))
        return 0;
    d->in_flight++;
    uint32_t ask = aicpu_spread_work(d, startable(d, t), thread_count, hooks);
    pthread_mutex_unlock(&d->lock);
    uint32_t granted = aicpu_request_threads(hooks, ask);
    PtoTrbSlot *s = trb_slot_of(t, ref);
    const PtoTensorView *views = s->view_index != 0 ? &t->rings[ref & 3u].views[s->view_index - 1] : NULL;
    char message[PTO_KERNEL_MESSAGE_BYTES];
    int32_t rc = aicpu_run_kernel(s->kernel_addr, s->args, s->arg_sizes, views, s->arg_count, s->core_type, core,
                                  d->block_dim, s->task_id, s->func_id, message);
    pthread_mutex_lock(&d->lock);
    aicpu_requests_granted(d, ask, granted);
    complete(d, t, ref, core, rc, message);
    return 1;
}

static void check_stop(AicpuDevice *d, TrbRun *t)
{
    int was_stopping = d->stopping;
    aicpu_check_stop_request(d, !t->orch_finished || d->completed < t->submitted);
    if (d->stopping && !was_stopping)
        wake_orchestrator(t);
}

int32_t trb_schedule(AicpuDevice *d, TrbRun *t, uint32_t thread_count, const PtoAicpuHooks *hooks)
{
    for (;;) {
        if (d->ended) {
            d->running--;
            return PTO_AICPU_DONE;
        }
        if (t->walking) /* a walked graph (trb_walk.h): scheduled as hbg's */
            return graph_run_schedule(d, &t->walk, thread_count, hooks);
        check_stop(d, t);
        if (run_one(d, t, thread_count, hooks))
            continue;
        /* over: the orchestration has returned and nothing runs */
        if (aicpu_idle(d, t->orch_finished && d->in_flight == 0, t->submitted - d->completed, hooks))
            return PTO_AICPU_IDLE;
    }
}

/* ---- the orchestrator's waits ---------------------------------------------------------- */

/* The error an api call returns once the run stops: the run's own error. */
static int32_t stop_code(const AicpuDevice *d)
{
    int32_t code = d->args->status.error_code;
    return code != 0 ? code : PTO_ERR_FAILED;
}

int32_t trb_orch_wait(AicpuDevice *d, TrbRun *t, TrbWaitUntil until, const void *arg)
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

int32_t trb_orch_await(AicpuDevice *d, TrbRun *t, TrbWaitUntil until, const void *arg)
{
    if (until(t, arg))
        return PTO_OK;
    pthread_mutex_lock(&d->lock);
    int32_t rc = trb_orch_wait(d, t, until, arg);
    pthread_mutex_unlock(&d->lock);
    return rc;
}
