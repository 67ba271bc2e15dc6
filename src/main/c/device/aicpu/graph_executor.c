/*
 * The AICPU image: the device-side executor behind PTO_AICPU_ENTRY_SYMBOL
 * (device/pto_device_abi.h). For a GRAPH run (hbg) it schedules the prebuilt
 * task graph cooperatively over however many participations the platform
 * starts: a ready task goes to a free logical core of its type, its completion
 * decrements its consumers' fan-in, the first kernel error is recorded in the
 * status block and stops all further dispatching.
 *
 * The scheduler state lives in this image's globals: the platform loads one
 * copy of the image per device and a device executes one run at a time, so
 * the globals are exactly "this device's executor". Participations never wait
 * for each other to gather; idle ones park on a condition variable (eager
 * launch) or hand their thread back to the platform (on-demand launch).
 */
#include <pthread.h>
#include <stdint.h>

#include "arch/arch.h"
#include "device/pto_device_abi.h"
#include "ptorun/chip_callable.h"
#include "ptorun/pto_export.h"
#include "ptorun/pto_kernel.h"
#include "ptorun/pto_runtime_c_api.h"

#define CORE_TYPES 2
#define LANES_PER_BLOCK (PTO_ARCH_AIC_PER_BLOCK + PTO_ARCH_AIV_PER_BLOCK)
#define MAX_CORES_PER_TYPE (PTO_ARCH_MAX_BLOCKS * PTO_ARCH_AIV_PER_BLOCK)

typedef struct GraphRun {
    pthread_mutex_t lock;         /* guards everything below */
    pthread_cond_t work_cond;     /* parked participations (eager launch) */

    /* which run: a new (args, run_serial) pair starts a new one */
    PtoAicpuArgs *args;
    uint64_t serial;

    /* the work image, immutable during the run */
    const PtoGraphTask *tasks;
    const uint64_t *task_args;
    const uint64_t *task_arg_sizes;
    const uint32_t *fanout;
    uint32_t task_count;
    uint32_t block_dim;

    /* scheduling */
    uint32_t *fanin_left;         /* per task, in the run's scratch state */
    uint32_t *ready[CORE_TYPES];  /* FIFO per core type; each task enters once */
    uint32_t ready_head[CORE_TYPES], ready_tail[CORE_TYPES];
    uint32_t free_cores[CORE_TYPES][MAX_CORES_PER_TYPE]; /* stack of idle logical cores */
    uint32_t free_count[CORE_TYPES];
    uint32_t in_flight;           /* kernels running now */
    uint64_t completed;           /* kernels returned */
    int stopping;                 /* an error is recorded: dispatch nothing more */
    int ended;                    /* the status block is final */

    /* participations */
    uint32_t running;             /* participations inside the entry, parked ones included */
    uint32_t parked;
    uint32_t signaled;            /* parked ones already woken, not yet running */
    uint32_t requested;           /* asked of the platform, not yet arrived */
} GraphRun;

static GraphRun graph_run = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .work_cond = PTHREAD_COND_INITIALIZER,
};

PTO_EXPORT uint32_t pto_device_abi_version(void)
{
    return PTO_DEVICE_ABI_VERSION;
}

/* ---- status ---------------------------------------------------------------- */

static void record_error(GraphRun *g, int32_t code, int32_t kernel_code, uint64_t task_id, uint32_t func_id,
                         uint32_t core_id)
{
    PtoDeviceStatus *s = &g->args->status;
    if (s->error_code == 0) {
        s->kernel_code = kernel_code;
        s->task_id = task_id;
        s->func_id = func_id;
        s->core_id = core_id;
        s->error_code = code;
    }
    g->stopping = 1;
}

static void end_run(GraphRun *g)
{
    g->ended = 1;
    g->args->status.tasks_completed = g->completed;
    g->args->status.finished = 1;
    if (g->parked > 0)
        pthread_cond_broadcast(&g->work_cond);
}

static void check_stop_request(GraphRun *g)
{
    int32_t reason = __atomic_load_n(&g->args->status.stop_request, __ATOMIC_ACQUIRE);
    if (reason != 0 && !g->stopping && g->completed < g->task_count)
        record_error(g, reason, 0, 0, 0, 0);
}

/* ---- starting a run --------------------------------------------------------- */

static int range_inside(uint64_t offset, uint64_t count, uint64_t elem, uint64_t limit, uint64_t align)
{
    if (offset % align != 0 || offset > limit)
        return 0;
    return count <= (limit - offset) / elem;
}

/* Checks the argument block and the graph image, and points g at them. */
static int bind_image(GraphRun *g, PtoAicpuArgs *args)
{
    if (args->magic != PTO_AICPU_ARGS_MAGIC || args->abi_version != PTO_DEVICE_ABI_VERSION ||
        args->work_kind != PTO_DEVICE_WORK_GRAPH || args->work_dev == 0 || args->work_dev % 8 != 0)
        return 0;
    if (args->block_dim < 1 || args->block_dim > PTO_ARCH_MAX_BLOCKS)
        return 0;
    const PtoGraphHeader *h = (const PtoGraphHeader *)(uintptr_t)args->work_dev;
    uint64_t limit = args->work_bytes;
    if (limit < sizeof *h || h->magic != PTO_GRAPH_MAGIC)
        return 0;
    if (!range_inside(h->tasks_offset, h->task_count, sizeof(PtoGraphTask), limit, 8) ||
        !range_inside(h->args_offset, h->arg_total, sizeof(uint64_t), limit, 8) ||
        !range_inside(h->arg_sizes_offset, h->arg_total, sizeof(uint64_t), limit, 8) ||
        !range_inside(h->fanout_offset, h->fanout_total, sizeof(uint32_t), limit, 4))
        return 0;
    if (h->task_count > 0 && (args->state_dev == 0 || args->state_dev % 4 != 0 ||
                              args->state_bytes < pto_graph_state_bytes(h->task_count)))
        return 0;
    const uint8_t *base = (const uint8_t *)h;
    g->tasks = (const PtoGraphTask *)(base + h->tasks_offset);
    g->task_args = (const uint64_t *)(base + h->args_offset);
    g->task_arg_sizes = (const uint64_t *)(base + h->arg_sizes_offset);
    g->fanout = (const uint32_t *)(base + h->fanout_offset);
    g->task_count = h->task_count;
    g->block_dim = args->block_dim;
    uint32_t *state = (uint32_t *)(uintptr_t)args->state_dev;
    g->fanin_left = state;
    g->ready[PTO_CORE_AIC] = state + h->task_count;
    g->ready[PTO_CORE_AIV] = state + 2 * (uint64_t)h->task_count;

    /* Every task well-formed, every edge pointing forward, and each fan-in equal to
       its incoming edges: a graph that passes cannot overrun or deadlock. */
    for (uint32_t i = 0; i < h->task_count; i++)
        g->fanin_left[i] = 0;
    for (uint32_t i = 0; i < h->task_count; i++) {
        const PtoGraphTask *t = &g->tasks[i];
        if (t->kernel_addr == 0 || t->core_type >= CORE_TYPES ||
            t->arg_index > h->arg_total || t->arg_count > h->arg_total - t->arg_index ||
            t->fanout_index > h->fanout_total || t->fanout_count > h->fanout_total - t->fanout_index)
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
    return 1;
}

static void push_ready(GraphRun *g, uint32_t task)
{
    uint32_t type = g->tasks[task].core_type;
    g->ready[type][g->ready_tail[type]++] = task;
}

static void start_run(GraphRun *g, PtoAicpuArgs *args)
{
    g->args = args;
    g->serial = args->run_serial;
    g->task_count = 0;
    g->in_flight = 0;
    g->completed = 0;
    g->stopping = 0;
    g->ended = 0;
    g->running = g->parked = g->signaled = g->requested = 0;
    for (int t = 0; t < CORE_TYPES; t++)
        g->ready_head[t] = g->ready_tail[t] = g->free_count[t] = 0;

    if (!bind_image(g, args)) {
        g->task_count = 0;
        record_error(g, PTO_ERR_DEVICE, 0, 0, 0, 0);
        end_run(g);
        return;
    }
    /* lowest core ids on top of the stacks */
    for (uint32_t b = g->block_dim; b-- > 0;) {
        for (uint32_t lane = LANES_PER_BLOCK; lane-- > PTO_ARCH_AIC_PER_BLOCK;)
            g->free_cores[PTO_CORE_AIV][g->free_count[PTO_CORE_AIV]++] = b * LANES_PER_BLOCK + lane;
        g->free_cores[PTO_CORE_AIC][g->free_count[PTO_CORE_AIC]++] = b * LANES_PER_BLOCK;
    }
    for (uint32_t i = 0; i < g->task_count; i++)
        if (g->fanin_left[i] == 0)
            push_ready(g, i);
    if (g->task_count == 0)
        end_run(g);
}

/* ---- scheduling ------------------------------------------------------------- */

static uint32_t dispatchable(const GraphRun *g)
{
    uint32_t n = 0;
    for (int t = 0; t < CORE_TYPES; t++) {
        uint32_t ready = g->ready_tail[t] - g->ready_head[t];
        n += ready < g->free_count[t] ? ready : g->free_count[t];
    }
    return n;
}

/* Takes the oldest ready task that has a free core of its type. */
static int pick(GraphRun *g, uint32_t *task, uint32_t *core)
{
    int best = -1;
    for (int t = 0; t < CORE_TYPES; t++) {
        if (g->ready_head[t] == g->ready_tail[t] || g->free_count[t] == 0)
            continue;
        if (best < 0 || g->ready[t][g->ready_head[t]] < g->ready[best][g->ready_head[best]])
            best = t;
    }
    if (best < 0)
        return 0;
    *task = g->ready[best][g->ready_head[best]++];
    *core = g->free_cores[best][--g->free_count[best]];
    return 1;
}

static void complete(GraphRun *g, uint32_t id, uint32_t core, int32_t rc)
{
    const PtoGraphTask *t = &g->tasks[id];
    g->in_flight--;
    g->completed++;
    g->free_cores[t->core_type][g->free_count[t->core_type]++] = core;
    g->args->status.tasks_completed = g->completed;
    if (rc != 0) {
        record_error(g, PTO_ERR_KERNEL_FAULT, rc, id, t->func_id, core);
    } else if (!g->stopping) {
        for (uint32_t e = 0; e < t->fanout_count; e++) {
            uint32_t c = g->fanout[t->fanout_index + e];
            if (--g->fanin_left[c] == 0)
                push_ready(g, c);
        }
    }
    if (g->completed == g->task_count)
        end_run(g);
}

static int32_t run_kernel(const GraphRun *g, uint32_t id, uint32_t core)
{
    const PtoGraphTask *t = &g->tasks[id];
    PtoKernelContext kc = {
        .core_type = t->core_type,
        .core_id = core,
        .block_idx = core / LANES_PER_BLOCK,
        .block_dim = g->block_dim,
        .task_id = id,
        .arg_sizes = &g->task_arg_sizes[t->arg_index],
    };
    PtoKernelFn fn = (PtoKernelFn)(uintptr_t)t->kernel_addr;
    return fn(&g->task_args[t->arg_index], t->arg_count, &kc);
}

/* More dispatchable work than this participation can take: wake parked
   participations, or (on-demand launch) returns how many to ask the platform
   for, already counted as requested. */
static uint32_t spread_work(GraphRun *g, uint32_t thread_count, const PtoAicpuHooks *hooks)
{
    uint32_t extra = dispatchable(g);
    if (extra == 0)
        return 0;
    if (hooks == NULL) {
        uint32_t idle = g->parked - g->signaled;
        uint32_t k = extra < idle ? extra : idle;
        for (uint32_t i = 0; i < k; i++)
            pthread_cond_signal(&g->work_cond);
        g->signaled += k;
        return 0;
    }
    uint32_t present = g->running + g->requested;
    uint32_t room = thread_count > present ? thread_count - present : 0;
    uint32_t k = extra < room ? extra : room;
    g->requested += k;
    return k;
}

/* One participation, called and returning with g->lock held. */
static int32_t participate(GraphRun *g, uint32_t thread_count, const PtoAicpuHooks *hooks)
{
    g->running++;
    if (g->requested > 0)
        g->requested--;
    for (;;) {
        if (g->ended) {
            g->running--;
            return PTO_AICPU_DONE;
        }
        check_stop_request(g);
        uint32_t task, core;
        if (!g->stopping && pick(g, &task, &core)) {
            g->in_flight++;
            uint32_t ask = spread_work(g, thread_count, hooks);
            pthread_mutex_unlock(&g->lock);
            uint32_t granted = ask > 0 ? hooks->request_threads(hooks->ctx, ask) : 0;
            int32_t rc = run_kernel(g, task, core);
            pthread_mutex_lock(&g->lock);
            g->requested -= ask - granted < g->requested ? ask - granted : g->requested;
            complete(g, task, core, rc);
            continue;
        }
        if (g->in_flight == 0) {
            /* nothing running and nothing to dispatch: the run is over */
            if (!g->stopping && g->completed < g->task_count)
                record_error(g, PTO_ERR_DEVICE, 0, g->completed, 0, 0);
            end_run(g);
            continue;
        }
        if (hooks != NULL) {
            g->running--;
            return PTO_AICPU_IDLE;
        }
        g->parked++;
        pthread_cond_wait(&g->work_cond, &g->lock);
        g->parked--;
        if (g->signaled > 0)
            g->signaled--;
    }
}

PTO_EXPORT int32_t pto_aicpu_entry(uint64_t args_dev, uint32_t thread_idx, uint32_t thread_count,
                                   const PtoAicpuHooks *hooks)
{
    (void)thread_idx; /* every graph participation is alike */
    PtoAicpuArgs *args = (PtoAicpuArgs *)(uintptr_t)args_dev;
    if (args == NULL || thread_count == 0)
        return PTO_AICPU_DONE;
    if (hooks != NULL && hooks->request_threads == NULL)
        hooks = NULL;
    GraphRun *g = &graph_run;
    pthread_mutex_lock(&g->lock);
    if (g->args != args || g->serial != args->run_serial)
        start_run(g, args);
    int32_t rc = participate(g, thread_count, hooks);
    pthread_mutex_unlock(&g->lock);
    return rc;
}
