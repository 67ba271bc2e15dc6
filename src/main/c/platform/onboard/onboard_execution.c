/* The onboard run execution (runner.h): submit launches the AICore entry,
 * then the AICPU entry (the marker is the driver accepting the latter); query
 * asks both streams without blocking; await synchronizes them within the run's
 * timeout, reads the verdict and retires the run's fresh stream. */
#include <stdio.h>
#include <string.h>

#include "util/last_error.h"
#include "util/spin_wait.h"
#include "device/pto_device_abi.h"
#include "platform/device_run.h"
#include "platform/onboard/onboard_runner.h"
#include "ptorun/pto_runtime_c_api.h"

#define OB_AICORE_ENTRY "pto_aicore_entry"

/* The platform's part of a run (RunExec.opaque). */
typedef struct ObRunExec {
    RunExecHead head;
    PtoDrvStream *aicpu, *aicore;
    uint32_t slot;
    int owns_aicore;             /* a2a3: the fresh stream is retired when the run is awaited */
    int aicpu_ended, aicore_ended; /* the stream's part of the run ended: latched by query, under the lock */
} ObRunExec;
_Static_assert(sizeof(ObRunExec) <= PTO_RUN_EXEC_BYTES, "ObRunExec fits RunExec");

static ObRunExec *ob_exec(RunExec *exec)
{
    return (ObRunExec *)exec->opaque;
}

/* AICore first, then the AICPU: the marker is the driver accepting the latter. */
static int launch_both(Runner *r, ObRunExec *x, const DeviceLaunch *launch)
{
    const PtoDriverApi *api = r->driver.api;
    int drc = api->launch(x->aicore, r->aicore, OB_AICORE_ENTRY, launch->args_dev, launch->block_dim);
    if (drc != PTO_DRV_OK)
        return ob_drv_fail(r, drc, "launch of the AICore image");
    drc = api->launch(x->aicpu, r->aicpu, PTO_AICPU_ENTRY_SYMBOL, launch->args_dev, launch->aicpu_threads);
    if (drc != PTO_DRV_OK)
        return ob_drv_fail(r, drc, "launch of the AICPU image");
    return PTO_OK;
}

/* Caller holds the lock: takes the run's streams and launches, or rolls back. */
static int launch_run(Runner *r, ObRunExec *x, uint32_t slot, const DeviceLaunch *launch)
{
    int rc;
    if ((rc = runner_check_up(r, "submit")) != PTO_OK || (rc = device_check_slot(slot, "submit")) != PTO_OK ||
        (rc = ob_take_streams(r, slot, &x->aicpu, &x->aicore, &x->owns_aicore)) != PTO_OK)
        return rc;
    if (runner_poisoned(r))
        rc = pto_fail(PTO_ERR_POISONED, "onboard device %d is poisoned by a device error", r->core.device_id);
    else if ((rc = device_run_check_launch(r, launch)) == PTO_OK)
        rc = launch_both(r, x, launch);
    if (rc != PTO_OK && x->owns_aicore) {
        /* nothing reached the AICPU: the fresh stream goes now (its AICore work, if any, returns at once) */
        char saved[PTO_ERROR_MESSAGE_BYTES];
        snprintf(saved, sizeof saved, "%s", pto_last_error());
        rc = pto_outrank(rc, saved, runner_note_failure(r, ob_retire_stream(r, x->aicore, slot)));
        x->aicore = NULL;
    }
    return rc;
}

int runner_submit(Runner *r, RunExec *exec, uint32_t slot, const DeviceLaunch *launch, LaunchSignal *signal)
{
    ObRunExec *x = ob_exec(exec);
    memset(x, 0, sizeof *x);
    x->slot = slot;
    pthread_mutex_lock(&r->core.lock);
    int rc = launch_run(r, x, slot, launch);
    rc = rc == PTO_OK ? run_exec_submitted(&x->head, launch) : run_exec_to(&x->head, RUN_EXEC_REFUSED, rc);
    pthread_mutex_unlock(&r->core.lock);
    if (rc == PTO_OK && signal != NULL)
        launch_signal_publish(signal);
    return rc;
}

/* Caller holds the lock: latches each stream once it reported its part of the run ended. */
static int query_streams(Runner *r, ObRunExec *x)
{
    const PtoDriverApi *api = r->driver.api;
    int drc = PTO_DRV_OK;
    if (!x->aicore_ended && (drc = api->stream_query(x->aicore)) == PTO_DRV_OK)
        x->aicore_ended = 1;
    if (drc >= 0 && !x->aicpu_ended && (drc = api->stream_query(x->aicpu)) == PTO_DRV_OK)
        x->aicpu_ended = 1;
    if (drc < 0)
        return ob_drv_fail(r, drc, "stream_query");
    return x->aicore_ended && x->aicpu_ended ? SIMPLER_NATIVE_RUN_POLL_COMPLETE : SIMPLER_NATIVE_RUN_POLL_NOT_READY;
}

/* Non-blocking. Under the lock, so an await cannot retire a stream meanwhile. */
int runner_query(Runner *r, RunExec *exec)
{
    ObRunExec *x = ob_exec(exec);
    pthread_mutex_lock(&r->core.lock);
    int rc;
    if (!run_exec_known(&x->head, 1, &rc))
        rc = query_streams(r, x);
    pthread_mutex_unlock(&r->core.lock);
    return rc;
}

/* Waits for both streams within the run's timeout. */
static int synchronize_run(Runner *r, ObRunExec *x)
{
    const PtoDriverApi *api = r->driver.api;
    int drc = api->stream_synchronize(x->aicpu, x->head.timeout_ms);
    if (drc == PTO_DRV_ERR_TIMEOUT)
        return runner_note_failure(r, pto_fail(PTO_ERR_TIMEOUT, "the run exceeded its timeout of %u ms on onboard device %d",
                                               x->head.timeout_ms, r->core.device_id));
    if (drc != PTO_DRV_OK)
        return ob_drv_fail(r, drc, "the run's AICPU stream");
    if ((drc = api->stream_synchronize(x->aicore, x->head.timeout_ms)) != PTO_DRV_OK)
        return ob_drv_fail(r, drc, "the run's AICore stream");
    return PTO_OK;
}

int runner_await_device(Runner *r, RunExec *exec)
{
    ObRunExec *x = ob_exec(exec);
    int rc;
    if (run_exec_known(&x->head, 0, &rc))
        return rc;
    rc = synchronize_run(r, x);
    if (rc == PTO_OK) {
        run_exec_stamp_end(&x->head, pto_monotonic_ns()); /* both streams synchronized: the run ended on the device */
        rc = device_run_verdict(r, &x->head);
    }
    pthread_mutex_lock(&r->core.lock);
    /* a hung launch stays until the reset: its stream is released with the device */
    if (x->owns_aicore && r->core.initialized) {
        char saved[PTO_ERROR_MESSAGE_BYTES];
        snprintf(saved, sizeof saved, "%s", rc != PTO_OK ? pto_last_error() : "");
        /* a stream the device cannot destroy is a device failure of this run, which reports it */
        rc = pto_outrank(rc, saved, runner_note_failure(r, ob_retire_stream(r, x->aicore, x->slot)));
    }
    rc = run_exec_to(&x->head, RUN_EXEC_ENDED, rc);
    x->aicore = x->aicpu = NULL;
    pthread_mutex_unlock(&r->core.lock);
    return rc;
}

/* The driver runs the whole launch on its own threads: nothing to do here beyond
 * the two calls. */
int runner_execute(Runner *r, RunExec *exec, uint32_t slot, const DeviceLaunch *launch, LaunchSignal *signal)
{
    int rc = runner_submit(r, exec, slot, launch, signal);
    return rc == PTO_OK ? runner_await_device(r, exec) : rc;
}
