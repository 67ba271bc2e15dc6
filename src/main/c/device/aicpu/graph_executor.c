/*
 * The graph executor (PTO_DEVICE_WORK_GRAPH, hbg): schedules a prebuilt task
 * graph (graph_run.h) cooperatively over however many participations the
 * platform starts.
 *
 * Participations never wait for each other to gather; idle ones park on a
 * condition variable (eager launch) or hand their thread back to the platform
 * (on-demand launch). Its state is guarded by aicpu_device.lock.
 */
#include <stdint.h>

#include "device/aicpu/aicpu_device.h"
#include "device/aicpu/aicpu_work.h"
#include "device/aicpu/graph_run.h"
#include "device/pto_device_abi.h"
#include "ptorun/chip_callable.h"
#include "ptorun/pto_kernel.h"
#include "ptorun/pto_runtime_c_api.h"

static GraphRun graph_run;

/* ---- starting a run --------------------------------------------------------- */

static int range_inside(uint64_t offset, uint64_t count, uint64_t elem, uint64_t limit, uint64_t align)
{
    if (offset % align != 0 || offset > limit)
        return 0;
    return count <= (limit - offset) / elem;
}

static void push_ready(GraphRun *g, uint32_t task)
{
    uint32_t type = g->tasks[task].core_type;
    g->ready[type][g->ready_tail[type]++] = task;
}

int graph_run_bind(GraphRun *g, const PtoGraphHeader *h, uint64_t limit, uint32_t *state, uint64_t state_bytes,
                   const uint64_t *bases, uint64_t base_count)
{
    for (int t = 0; t < AICPU_CORE_TYPES; t++)
        g->ready_head[t] = g->ready_tail[t] = 0;
    g->task_count = 0;
    if (limit < sizeof *h || h->magic != PTO_GRAPH_MAGIC)
        return 0;
    if (!range_inside(h->tasks_offset, h->task_count, sizeof(PtoGraphTask), limit, 8) ||
        !range_inside(h->args_offset, h->arg_total, sizeof(uint64_t), limit, 8) ||
        !range_inside(h->arg_sizes_offset, h->arg_total, sizeof(uint64_t), limit, 8) ||
        !range_inside(h->views_offset, h->view_total, sizeof(PtoTensorView), limit, 8) ||
        !range_inside(h->fanout_offset, h->fanout_total, sizeof(uint32_t), limit, 4))
        return 0;
    if (h->task_count > 0 && (state == NULL || (uintptr_t)state % 4 != 0 ||
                              state_bytes < pto_graph_state_bytes(h->task_count)))
        return 0;
    if (h->base_count > 0 && (!range_inside(h->arg_bases_offset, h->arg_total, sizeof(uint32_t), limit, 4) ||
                              bases == NULL || (uintptr_t)bases % 8 != 0 || base_count < h->base_count))
        return 0;
    const uint8_t *base = (const uint8_t *)h;
    g->tasks = (const PtoGraphTask *)(base + h->tasks_offset);
    g->task_args = (const uint64_t *)(base + h->args_offset);
    g->task_arg_sizes = (const uint64_t *)(base + h->arg_sizes_offset);
    g->views = (const PtoTensorView *)(base + h->views_offset);
    g->fanout = (const uint32_t *)(base + h->fanout_offset);
    g->arg_bases = h->base_count > 0 ? (const uint32_t *)(base + h->arg_bases_offset) : NULL;
    g->bases = h->base_count > 0 ? bases : NULL;
    for (uint32_t i = 0; g->arg_bases != NULL && i < h->arg_total; i++)
        if ((g->arg_bases[i] & ~PTO_GRAPH_BASE_SCALAR) > h->base_count)
            return 0;
    g->fanin_left = state;
    g->ready[PTO_CORE_AIC] = state + h->task_count;
    g->ready[PTO_CORE_AIV] = state + 2 * (uint64_t)h->task_count;

    /* Every task well-formed, every edge pointing forward, and each fan-in equal to
       its incoming edges: a graph that passes cannot overrun or deadlock. */
    for (uint32_t i = 0; i < h->task_count; i++)
        g->fanin_left[i] = 0;
    for (uint32_t i = 0; i < h->task_count; i++) {
        const PtoGraphTask *t = &g->tasks[i];
        if (t->kernel_addr == 0 || t->core_type >= AICPU_CORE_TYPES ||
            t->arg_index > h->arg_total || t->arg_count > h->arg_total - t->arg_index ||
            t->fanout_index > h->fanout_total || t->fanout_count > h->fanout_total - t->fanout_index ||
            (t->view_index != 0 && (t->view_index - 1 > h->view_total || t->arg_count > h->view_total - (t->view_index - 1))))
            return 0;
        for (uint32_t e = 0; e < t->fanout_count; e++) {
            uint32_t c = g->fanout[t->fanout_index + e];
            if (c <= i || c >= h->task_count)
                return 0;
            g->fanin_left[c]++;
        }
    }
    for (uint32_t i = 0; i < h->task_count; i++)
        if (g->fanin_left[i] != g->tasks[i].fanin_count)
            return 0;
    g->task_count = h->task_count;
    for (uint32_t i = 0; i < g->task_count; i++)
        if (g->fanin_left[i] == 0)
            push_ready(g, i);
    return 1;
}

/* Checks the argument block and binds its graph image. */
static int bind_image(GraphRun *g, PtoAicpuArgs *args)
{
    if (args->magic != PTO_AICPU_ARGS_MAGIC || args->abi_version != PTO_DEVICE_ABI_VERSION ||
        args->work_kind != PTO_DEVICE_WORK_GRAPH || args->work_dev == 0 || args->work_dev % 8 != 0)
        return 0;
    if (args->block_dim < 1 || args->block_dim > PTO_ARCH_MAX_BLOCKS)
        return 0;
    return graph_run_bind(g, (const PtoGraphHeader *)(uintptr_t)args->work_dev, args->work_bytes,
                          (uint32_t *)(uintptr_t)args->state_dev, args->state_bytes,
                          (const uint64_t *)(uintptr_t)args->bases_dev, args->base_count);
}

void graph_start(AicpuDevice *d, PtoAicpuArgs *args)
{
    GraphRun *g = &graph_run;
    uint32_t block_dim = args->block_dim >= 1 && args->block_dim <= PTO_ARCH_MAX_BLOCKS ? args->block_dim : 1;
    aicpu_device_start(d, args, block_dim);
    if (!bind_image(g, args)) { /* it left task_count 0 */
        aicpu_record_error(d, PTO_ERR_DEVICE, 0, 0, 0, 0);
        aicpu_end_run(d);
        return;
    }
    if (g->task_count == 0)
        aicpu_end_run(d);
}

/* ---- scheduling ------------------------------------------------------------- */

static uint32_t startable(const AicpuDevice *d, const GraphRun *g)
{
    uint32_t n = 0;
    for (int t = 0; t < AICPU_CORE_TYPES; t++) {
        uint32_t ready = g->ready_tail[t] - g->ready_head[t];
        n += ready < d->free_count[t] ? ready : d->free_count[t];
    }
    return n;
}

/* Takes the oldest ready task that has a free core of its type. */
static int pick(AicpuDevice *d, GraphRun *g, uint32_t *task, uint32_t *core)
{
    int best = -1;
    for (int t = 0; t < AICPU_CORE_TYPES; t++) {
        if (g->ready_head[t] == g->ready_tail[t] || d->free_count[t] == 0)
            continue;
        if (best < 0 || g->ready[t][g->ready_head[t]] < g->ready[best][g->ready_head[best]])
            best = t;
    }
    if (best < 0)
        return 0;
    *task = g->ready[best][g->ready_head[best]++];
    *core = aicpu_core_take(d, (uint32_t)best);
    return 1;
}

static void complete(AicpuDevice *d, GraphRun *g, uint32_t id, uint32_t core, int32_t rc, const char *message)
{
    const PtoGraphTask *t = &g->tasks[id];
    d->in_flight--;
    d->completed++;
    aicpu_core_give(d, t->core_type, core);
    d->args->status.tasks_completed = d->completed;
    if (rc != 0) {
        aicpu_record_kernel_fault(d, rc, id, t->func_id, core, message);
    } else if (!d->stopping) {
        for (uint32_t e = 0; e < t->fanout_count; e++) {
            uint32_t c = g->fanout[t->fanout_index + e];
            if (--g->fanin_left[c] == 0)
                push_ready(g, c);
        }
    }
    if (d->completed == g->task_count)
        aicpu_end_run(d);
}

/* Runs one task's kernel; a relocatable image's arguments (and kept views) are
   first made absolute from the run's bases, in a copy: the image is shared. */
static int32_t run_task(const AicpuDevice *d, const GraphRun *g, uint32_t task, uint32_t core, char *message)
{
    const PtoGraphTask *t = &g->tasks[task];
    const uint64_t *args = &g->task_args[t->arg_index];
    const PtoTensorView *views = t->view_index != 0 ? &g->views[t->view_index - 1] : NULL;
    uint64_t own_args[PTO_MAX_TASK_PARAMS];
    PtoTensorView own_views[PTO_MAX_TASK_PARAMS];
    if (g->arg_bases != NULL && t->arg_count <= PTO_MAX_TASK_PARAMS) {
        const uint32_t *arg_bases = &g->arg_bases[t->arg_index];
        for (uint32_t i = 0; i < t->arg_count; i++) {
            uint32_t k = arg_bases[i] & ~PTO_GRAPH_BASE_SCALAR;
            uint64_t base = k != 0 ? g->bases[k - 1] : 0;
            own_args[i] = args[i] + base;
            if (views != NULL) {
                own_views[i] = views[i];
                if (!(arg_bases[i] & PTO_GRAPH_BASE_SCALAR))
                    own_views[i].addr += base;
            }
        }
        args = own_args;
        views = views != NULL ? own_views : NULL;
    }
    return aicpu_run_kernel(t->kernel_addr, args, &g->task_arg_sizes[t->arg_index], views, t->arg_count, t->core_type,
                            core, d->block_dim, task, t->func_id, message);
}

int32_t graph_run_schedule(AicpuDevice *d, GraphRun *g, uint32_t thread_count, const PtoAicpuHooks *hooks)
{
    for (;;) {
        if (d->ended) {
            d->running--;
            return PTO_AICPU_DONE;
        }
        aicpu_check_stop_request(d, d->completed < g->task_count);
        uint32_t task, core;
        if (!d->stopping && pick(d, g, &task, &core)) {
            d->in_flight++;
            uint32_t ask = aicpu_spread_work(d, startable(d, g), thread_count, hooks);
            pthread_mutex_unlock(&d->lock);
            uint32_t granted = aicpu_request_threads(hooks, ask);
            char message[PTO_KERNEL_MESSAGE_BYTES];
            int32_t rc = run_task(d, g, task, core, message);
            pthread_mutex_lock(&d->lock);
            aicpu_requests_granted(d, ask, granted);
            complete(d, g, task, core, rc, message);
            continue;
        }
        if (aicpu_idle(d, d->in_flight == 0, g->task_count - d->completed, hooks))
            return PTO_AICPU_IDLE;
    }
}

int32_t graph_participate(AicpuDevice *d, uint32_t thread_count, const PtoAicpuHooks *hooks)
{
    aicpu_participation_begin(d);
    return graph_run_schedule(d, &graph_run, thread_count, hooks);
}
