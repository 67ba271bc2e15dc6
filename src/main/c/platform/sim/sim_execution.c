/* The sim's run execution (runner.h): submit hands the launch to the device
 * threads (or, in runner_execute, to the calling thread), query asks the pool,
 * await waits on it within the run's timeout. */
#include <string.h>

#include "util/last_error.h"
#include "util/spin_wait.h"
#include "platform/device_run.h"
#include "platform/sim/sim_runner.h"
#include "ptorun/pto_runtime_c_api.h"

/* The platform's part of a run (RunExec.opaque). */
typedef struct SimRunExec {
    RunExecHead head;
    uint64_t launch_id;
} SimRunExec;
_Static_assert(sizeof(SimRunExec) <= PTO_RUN_EXEC_BYTES, "SimRunExec fits RunExec");

static SimRunExec *sim_exec(RunExec *exec)
{
    return (SimRunExec *)exec->opaque;
}

/* Caller holds the lock: the injected failure, counted down once per submit. */
static int injected_failure(Runner *r)
{
    if (r->fail_submit_after != 0) {
        if (r->fail_submit_after > 0)
            r->fail_submit_after--;
        return PTO_OK;
    }
    r->fail_submit_after = -1;
    return pto_fail(PTO_ERR_DEVICE, "submit: injected failure before the launch marker (PTORUN_SIM_FAIL_ENQUEUE_AFTER)");
}

/* runner_submit; with caller_runs_first the launch's first participation waits
 * for this thread (sim_device_pool_run_first) instead of a device thread. */
static int submit(Runner *r, RunExec *exec, const DeviceLaunch *launch, LaunchSignal *signal, int caller_runs_first)
{
    SimRunExec *x = sim_exec(exec);
    memset(x, 0, sizeof *x);
    pthread_mutex_lock(&r->core.lock);
    int rc = runner_check_up(r, "submit");
    if (rc == PTO_OK && (rc = device_run_check_launch(r, launch)) == PTO_OK &&
        (rc = injected_failure(r)) == PTO_OK) {
        /* while the caller runs participation 0 nobody waits with a timeout: the device keeps the deadline */
        PtoAicpuArgs *args = dev_ptr(launch->args_dev);
        args->status.deadline_ns = pto_monotonic_ns() + (uint64_t)launch->timeout_ms * 1000000u;
        rc = sim_device_pool_launch(r->pool, r->aicpu_entry, launch->args_dev, launch->aicpu_threads,
                                    caller_runs_first, &x->launch_id);
    }
    pthread_mutex_unlock(&r->core.lock);
    if (rc != PTO_OK)
        return run_exec_to(&x->head, RUN_EXEC_REFUSED, rc); /* nothing was handed over; the run never starts */
    if ((rc = run_exec_submitted(&x->head, launch)) != PTO_OK)
        return rc;
    /* the marker: the work is on the device threads */
    if (signal != NULL)
        launch_signal_publish(signal);
    return PTO_OK;
}

int runner_submit(Runner *r, RunExec *exec, uint32_t slot, const DeviceLaunch *launch, LaunchSignal *signal)
{
    (void)slot; /* the sim has no per-slot streams */
    return submit(r, exec, launch, signal, 0);
}

int runner_execute(Runner *r, RunExec *exec, uint32_t slot, const DeviceLaunch *launch, LaunchSignal *signal)
{
    (void)slot;
    int rc = submit(r, exec, launch, signal, 1);
    if (rc != PTO_OK)
        return rc;
    sim_device_pool_run_first(r->pool);
    return runner_await_device(r, exec);
}

int runner_query(Runner *r, RunExec *exec)
{
    SimRunExec *x = sim_exec(exec);
    int rc;
    if (run_exec_known(&x->head, 1, &rc))
        return rc;
    return sim_device_pool_finished(r->pool, x->launch_id) ? SIMPLER_NATIVE_RUN_POLL_COMPLETE
                                                           : SIMPLER_NATIVE_RUN_POLL_NOT_READY;
}

int runner_await_device(Runner *r, RunExec *exec)
{
    SimRunExec *x = sim_exec(exec);
    int rc;
    if (run_exec_known(&x->head, 0, &rc))
        return rc;
    if (sim_device_pool_wait(r->pool, x->launch_id, x->head.timeout_ms) == PTO_ERR_TIMEOUT) {
        /* start no more tasks, then let the kernels in flight return */
        PtoAicpuArgs *args = dev_ptr(x->head.args_dev);
        __atomic_store_n(&args->status.stop_request, PTO_ERR_TIMEOUT, __ATOMIC_RELEASE);
        sim_device_pool_wait(r->pool, x->launch_id, 0);
    }
    /* the run ended on the device: no other launch starts before this run is finalized (the execution claim) */
    run_exec_stamp_end(&x->head, sim_device_pool_finished_at(r->pool, x->launch_id));
    return run_exec_to(&x->head, RUN_EXEC_ENDED, device_run_verdict(r, &x->head));
}
