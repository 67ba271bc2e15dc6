/* The run execution both platforms share (device_run.h). */
#include "platform/device_run.h"

#include <string.h>

#include "arch/arch.h"
#include "util/last_error.h"
#include "device/pto_device_abi.h"
#include "platform/runner_core.h"
#include "ptorun/pto_runtime_c_api.h"

/* The executor's message (PtoAicpuArgs.message_dev) is a NUL-terminated text
 * of fewer bytes than this. */
#define DEVICE_MESSAGE_BYTES 512

int device_run_check_launch(Runner *r, const DeviceLaunch *launch)
{
    if (launch == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "submit: no DeviceLaunch");
    if (launch->aicpu_threads < 1 || launch->aicpu_threads > PTO_ARCH_AICPU_THREADS_MAX)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "submit: %u AICPU threads, 1..%d supported", launch->aicpu_threads,
                        PTO_ARCH_AICPU_THREADS_MAX);
    if (launch->block_dim < 1 || launch->block_dim > PTO_ARCH_MAX_BLOCKS)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "submit: block_dim %u, 1..%d supported", launch->block_dim,
                        PTO_ARCH_MAX_BLOCKS);
    if (launch->timeout_ms == 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "submit: timeout_ms 0 (unresolved)");
    /* a check, not a pin: the device reads the block during the run (the caller keeps it) */
    return runner_check_inside(r, "submit: argument block", launch->args_dev, sizeof(PtoAicpuArgs));
}

const char *run_exec_state_name(uint32_t state)
{
    switch (state) {
    case RUN_EXEC_NONE:
        return "None";
    case RUN_EXEC_SUBMITTED:
        return "Submitted";
    case RUN_EXEC_ENDED:
        return "Ended";
    case RUN_EXEC_REFUSED:
        return "Refused";
    }
    return "unknown";
}

/* Every path a run's execution state takes, listed once:
 *
 *   None      -> Submitted   the platform's submit crossed the launch marker
 *   None      -> Refused     the submit rolled back before the marker: `error` is its sticky error
 *   Submitted -> Ended       the await has the device's result in `error` (runner_await_device)
 *
 * Ended and Refused are the last; a query and a repeated await read them and change
 * nothing (run_exec_known). The platform's submit zeroes the head (None) first. */
static const unsigned char exec_paths[RUN_EXEC_STATE_COUNT][RUN_EXEC_STATE_COUNT] = {
    [RUN_EXEC_NONE][RUN_EXEC_SUBMITTED] = 1,
    [RUN_EXEC_NONE][RUN_EXEC_REFUSED] = 1,
    [RUN_EXEC_SUBMITTED][RUN_EXEC_ENDED] = 1,
};
_Static_assert(RUN_EXEC_REFUSED + 1 == RUN_EXEC_STATE_COUNT, "the table covers every state");

int run_exec_to(RunExecHead *h, RunExecState to, int rc)
{
    uint32_t from = __atomic_load_n(&h->state, __ATOMIC_ACQUIRE);
    if (from >= RUN_EXEC_STATE_COUNT || (uint32_t)to >= RUN_EXEC_STATE_COUNT || !exec_paths[from][to])
        return pto_fail(PTO_ERR_WRONG_PHASE,
                        "the run's execution is %s and cannot move to %s: no path of its states leads there "
                        "(internal error)", run_exec_state_name(from), run_exec_state_name((uint32_t)to));
    h->error = rc;
    __atomic_store_n(&h->state, (uint32_t)to, __ATOMIC_RELEASE);
    return rc;
}

int run_exec_submitted(RunExecHead *h, const DeviceLaunch *launch)
{
    h->args_dev = launch->args_dev;
    h->timeout_ms = launch->timeout_ms;
    return run_exec_to(h, RUN_EXEC_SUBMITTED, PTO_OK);
}

void run_exec_stamp_end(RunExecHead *h, uint64_t ns)
{
    h->end_ns = ns;
}

uint64_t runner_execution_end_ns(const RunExec *exec)
{
    const RunExecHead *h = (const RunExecHead *)exec->opaque; /* every platform's RunExec begins with it */
    return __atomic_load_n(&h->state, __ATOMIC_ACQUIRE) == RUN_EXEC_ENDED ? h->end_ns : 0;
}

int run_exec_known(const RunExecHead *h, int query, int *rc)
{
    switch (__atomic_load_n(&h->state, __ATOMIC_ACQUIRE)) {
    case RUN_EXEC_SUBMITTED:
        return 0;
    case RUN_EXEC_REFUSED:
        *rc = h->error;
        return 1;
    case RUN_EXEC_ENDED:
        *rc = query ? SIMPLER_NATIVE_RUN_POLL_COMPLETE : h->error;
        return 1;
    default:
        *rc = pto_fail(PTO_ERR_WRONG_PHASE, "%s: the run was never submitted", query ? "query" : "await_device");
        return 1;
    }
}

/* The executor's message for the run's error, read into buf (*out NULL when
 * there is none); the read's code when it met a device failure. */
static int device_message(Runner *r, uint64_t message_dev, char *buf, const char **out)
{
    *out = NULL;
    AllocPin pin; /* the caller may free the message buffer meanwhile: device_free waits for the read */
    if (message_dev == 0 || runner_pin_inside(r, "message", message_dev, DEVICE_MESSAGE_BYTES, &pin) != PTO_OK)
        return PTO_OK;
    int rc = platform_read(r, buf, message_dev, DEVICE_MESSAGE_BYTES);
    alloc_table_unpin(&pin);
    if (rc != PTO_OK)
        return pto_device_failure(rc) ? rc : PTO_OK;
    *out = memchr(buf, '\0', DEVICE_MESSAGE_BYTES) != NULL && buf[0] != '\0' ? buf : NULL;
    return PTO_OK;
}

int device_run_verdict(Runner *r, const RunExecHead *h)
{
    PtoAicpuArgs args;
    int rc = platform_read(r, &args, h->args_dev, sizeof args);
    if (rc != PTO_OK)
        return rc;
    const PtoDeviceStatus *s = &args.status;
    int32_t result = s->error_code;
    if (result == PTO_OK)
        return PTO_OK;
    if (result == PTO_ERR_TIMEOUT)
        return pto_fail(PTO_ERR_TIMEOUT, "the run exceeded its timeout of %u ms; %llu task(s) had completed",
                        h->timeout_ms, (unsigned long long)s->tasks_completed);
    if (result == PTO_ERR_KERNEL_FAULT)
        return pto_fail(PTO_ERR_KERNEL_FAULT, "kernel fault: task %llu (func_id %u) returned %d on core %u",
                        (unsigned long long)s->task_id, s->func_id, s->kernel_code, s->core_id);
    char buf[DEVICE_MESSAGE_BYTES];
    const char *message;
    int read_rc = device_message(r, args.message_dev, buf, &message);
    if (read_rc != PTO_OK) /* a device failure outranks the error it was reading about */
        return pto_fail(read_rc, "%s; the device had reported error %d for the run", pto_last_error(), result);
    if (message != NULL)
        return pto_fail(result, "the device failed the run: %s", message);
    return pto_fail(result, "the device reported error %d for the run", result);
}
