/*
 * The AICPU image's entry (PTO_AICPU_ENTRY_SYMBOL) and what its work kinds
 * share (aicpu_device.h). A participation takes the device lock, starts the
 * run if its argument block is new, and hands itself to the run's work kind:
 * the graph executor (hbg) or the trb executor.
 */
#include "device/aicpu/aicpu_device.h"

#include <string.h>

#include "util/spin_wait.h"
#include "util/tensor_view.h"
#include "device/aicpu/aicpu_work.h"
#include "ptorun/chip_callable.h"
#include "ptorun/pto_export.h"
#include "ptorun/pto_kernel.h"
#include "ptorun/pto_runtime_c_api.h"

AicpuDevice aicpu_device = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .work_cond = PTHREAD_COND_INITIALIZER,
};

PTO_EXPORT uint32_t pto_device_abi_version(void)
{
    return PTO_DEVICE_ABI_VERSION;
}

void aicpu_device_start(AicpuDevice *d, PtoAicpuArgs *args, uint32_t block_dim)
{
    d->args = args;
    d->serial = args->run_serial;
    d->in_flight = 0;
    d->completed = 0;
    d->stopping = 0;
    d->ended = 0;
    d->running = d->parked = d->signaled = d->requested = 0;
    d->block_dim = block_dim;
    /* a trace buffer the host did not set up is ignored, never written */
    PtoTraceHeader *tr = (PtoTraceHeader *)(uintptr_t)args->trace_dev;
    d->trace = tr != NULL && args->trace_dev % 8 == 0 && tr->magic == PTO_TRACE_MAGIC ? tr : NULL;
    if (d->trace != NULL)
        __atomic_store_n(&d->trace->count, 0, __ATOMIC_RELAXED);
    for (int t = 0; t < AICPU_CORE_TYPES; t++)
        d->free_count[t] = 0;
    /* lowest core ids on top of the stacks */
    for (uint32_t b = block_dim; b-- > 0;) {
        for (uint32_t lane = AICPU_LANES_PER_BLOCK; lane-- > PTO_ARCH_AIC_PER_BLOCK;)
            d->free_cores[PTO_CORE_AIV][d->free_count[PTO_CORE_AIV]++] = b * AICPU_LANES_PER_BLOCK + lane;
        d->free_cores[PTO_CORE_AIC][d->free_count[PTO_CORE_AIC]++] = b * AICPU_LANES_PER_BLOCK;
    }
}

uint32_t aicpu_core_take(AicpuDevice *d, uint32_t core_type)
{
    return d->free_count[core_type] > 0 ? d->free_cores[core_type][--d->free_count[core_type]] : 0;
}

void aicpu_core_give(AicpuDevice *d, uint32_t core_type, uint32_t core)
{
    d->free_cores[core_type][d->free_count[core_type]++] = core;
}

void aicpu_record_error(AicpuDevice *d, int32_t code, int32_t kernel_code, uint64_t task_id, uint32_t func_id,
                        uint32_t core_id)
{
    PtoDeviceStatus *s = &d->args->status;
    if (s->error_code == 0) {
        s->kernel_code = kernel_code;
        s->task_id = task_id;
        s->func_id = func_id;
        s->core_id = core_id;
        s->error_code = code;
    }
    d->stopping = 1;
}

void aicpu_record_kernel_fault(AicpuDevice *d, int32_t rc, uint64_t task_id, uint32_t func_id, uint32_t core_id,
                               const char *message)
{
    int first = d->args->status.error_code == 0;
    aicpu_record_error(d, PTO_ERR_KERNEL_FAULT, rc, task_id, func_id, core_id);
    char *out = (char *)(uintptr_t)d->args->message_dev;
    if (!first || out == NULL)
        return;
    /* the kernel may have left it unterminated: bound it */
    size_t n = strnlen(message, PTO_KERNEL_MESSAGE_BYTES - 1);
    memcpy(out, message, n);
    out[n] = '\0';
}

void aicpu_check_stop_request(AicpuDevice *d, int work_left)
{
    if (d->stopping || !work_left)
        return;
    const PtoDeviceStatus *s = &d->args->status;
    int32_t reason = __atomic_load_n(&s->stop_request, __ATOMIC_ACQUIRE);
    if (reason == 0 && s->deadline_ns != 0 && pto_monotonic_ns() >= s->deadline_ns)
        reason = PTO_ERR_TIMEOUT;
    if (reason != 0)
        aicpu_record_error(d, reason, 0, 0, 0, 0);
}

void aicpu_end_run(AicpuDevice *d)
{
    d->ended = 1;
    d->args->status.tasks_completed = d->completed;
    d->args->status.finished = 1;
    if (d->parked > 0)
        pthread_cond_broadcast(&d->work_cond);
}

void aicpu_participation_begin(AicpuDevice *d)
{
    d->running++;
    if (d->requested > 0)
        d->requested--;
}

uint32_t aicpu_on_the_way(const AicpuDevice *d)
{
    return d->requested + d->signaled;
}

uint32_t aicpu_spread_work(AicpuDevice *d, uint32_t startable, uint32_t thread_count, const PtoAicpuHooks *hooks)
{
    /* a participation on its way takes one of the tasks when it arrives:
       waking another for that task would only find it gone */
    uint32_t on_the_way = aicpu_on_the_way(d);
    if (startable <= on_the_way)
        return 0;
    startable -= on_the_way;
    if (hooks == NULL) {
        uint32_t idle = d->parked - d->signaled;
        uint32_t k = startable < idle ? startable : idle;
        for (uint32_t i = 0; i < k; i++)
            pthread_cond_signal(&d->work_cond);
        d->signaled += k;
        return 0;
    }
    uint32_t present = d->running + d->requested;
    uint32_t room = thread_count > present ? thread_count - present : 0;
    uint32_t k = startable < room ? startable : room;
    d->requested += k;
    return k;
}

uint32_t aicpu_request_threads(const PtoAicpuHooks *hooks, uint32_t ask)
{
    return ask > 0 ? hooks->request_threads(hooks->ctx, ask) : 0;
}

void aicpu_requests_granted(AicpuDevice *d, uint32_t asked, uint32_t granted)
{
    uint32_t refused = asked - granted;
    d->requested -= refused < d->requested ? refused : d->requested;
}

void aicpu_park(AicpuDevice *d)
{
    d->parked++;
    pthread_cond_wait(&d->work_cond, &d->lock);
    d->parked--;
    if (d->signaled > 0)
        d->signaled--;
}

int aicpu_idle(AicpuDevice *d, int over, uint64_t tasks_left, const PtoAicpuHooks *hooks)
{
    if (over) {
        /* nothing runs and no task can come: tasks left are the device's fault */
        if (!d->stopping && tasks_left > 0)
            aicpu_record_error(d, PTO_ERR_DEVICE, 0, d->completed, 0, 0);
        aicpu_end_run(d);
        return 0;
    }
    if (hooks != NULL) {
        d->running--;
        return 1;
    }
    aicpu_park(d);
    return 0;
}

int32_t aicpu_run_kernel(uint64_t kernel_addr, const uint64_t *args, const uint64_t *arg_sizes,
                         const PtoTensorView *views, uint32_t nargs, uint32_t core_type, uint32_t core,
                         uint32_t block_dim, uint64_t task_id, uint32_t func_id, char *message)
{
    if (kernel_addr == PTO_KERNEL_ADDR_NONE) {
        message[0] = '\0';
        return 0; /* PTO_KERNEL_OK */
    }
    PtoTensorView made[PTO_MAX_TASK_PARAMS];
    if (views == NULL && nargs <= PTO_MAX_TASK_PARAMS) {
        for (uint32_t i = 0; i < nargs; i++)
            made[i] = tensor_view_entry_of_arg(args[i], arg_sizes[i]);
        views = made;
    }
    PtoKernelContext kc = {
        .core_type = core_type,
        .core_id = core,
        .block_idx = core / AICPU_LANES_PER_BLOCK,
        .block_dim = block_dim,
        .task_id = task_id,
        .arg_sizes = arg_sizes,
        .views = views,
        .message = message,
        .message_bytes = PTO_KERNEL_MESSAGE_BYTES,
    };
    message[0] = '\0';
    PtoKernelFn fn = (PtoKernelFn)(uintptr_t)kernel_addr;
    PtoTraceHeader *tr = aicpu_device.trace;
    if (tr == NULL)
        return fn(args, nargs, &kc);
    uint64_t start = pto_monotonic_ns();
    int32_t rc = fn(args, nargs, &kc);
    uint64_t end = pto_monotonic_ns();
    uint64_t i = __atomic_fetch_add(&tr->count, 1, __ATOMIC_RELAXED);
    if (i < tr->capacity)
        ((PtoTraceRecord *)(tr + 1))[i] = (PtoTraceRecord){ task_id, start, end, func_id, core };
    return rc;
}

/* The run's work kind, or 0 for an argument block no executor accepts. */
static uint32_t work_kind(const PtoAicpuArgs *args)
{
    if (args->magic != PTO_AICPU_ARGS_MAGIC || args->abi_version != PTO_DEVICE_ABI_VERSION)
        return 0;
    return args->work_kind;
}

PTO_EXPORT int32_t pto_aicpu_entry(uint64_t args_dev, uint32_t thread_idx, uint32_t thread_count,
                                   const PtoAicpuHooks *hooks)
{
    (void)thread_idx; /* participations are told apart by arrival, not by index */
    PtoAicpuArgs *args = (PtoAicpuArgs *)(uintptr_t)args_dev;
    if (args == NULL || thread_count == 0)
        return PTO_AICPU_DONE;
    if (hooks != NULL && hooks->request_threads == NULL)
        hooks = NULL;
    AicpuDevice *d = &aicpu_device;
    pthread_mutex_lock(&d->lock);
    uint32_t kind = work_kind(args);
    if (d->args != args || d->serial != args->run_serial) {
        if (kind == PTO_DEVICE_WORK_TRB)
            trb_start(d, args);
        else
            graph_start(d, args);
    }
    int32_t rc = kind == PTO_DEVICE_WORK_TRB ? trb_participate(d, thread_count, hooks)
                                             : graph_participate(d, thread_count, hooks);
    pthread_mutex_unlock(&d->lock);
    return rc;
}
