/*
 * What both platforms do the same way for a run's execution: the checks a
 * launch passes before anything is handed over, the state every platform's
 * RunExec begins with (RunExecHead), and the run's verdict read back from its
 * status block (device/pto_device_abi.h).
 */
#ifndef PTORUN_DEVICE_RUN_H
#define PTORUN_DEVICE_RUN_H

#include <stdint.h>

#include "platform/runner.h"

typedef enum RunExecState {
    RUN_EXEC_NONE = 0,   /* never submitted */
    RUN_EXEC_SUBMITTED,  /* past the launch marker, the result not yet known */
    RUN_EXEC_SETTLED,    /* awaited: `error` is the device's result */
    RUN_EXEC_REFUSED,    /* the submit rolled back: `error` is sticky, nothing can complete the run */
} RunExecState;

/* The first member of every platform's RunExec content. */
typedef struct RunExecHead {
    uint64_t args_dev;   /* the launch's argument block */
    uint32_t timeout_ms;
    int32_t error;       /* published before `state` */
    uint32_t state;      /* RunExecState; atomic: a query may race the await */
    uint32_t reserved;
    uint64_t end_ns;     /* CLOCK_MONOTONIC instant the platform saw the device finish the run, 0 until
                            then (runner_execution_end_ns): written by the await before it settles */
} RunExecHead;

/* A launch's geometry and timeout resolved, its argument block inside device
 * memory; PTO_ERR_INVALID_ARGUMENT naming what is wrong otherwise. */
int device_run_check_launch(Runner *r, const DeviceLaunch *launch);

/* The submit rolled back with rc (returned). */
int run_exec_refuse(RunExecHead *h, int rc);
/* The run crossed the marker with this launch. */
void run_exec_submitted(RunExecHead *h, const DeviceLaunch *launch);
/* The await's result rc (returned). */
int run_exec_settle(RunExecHead *h, int rc);
/* The await saw the device finish the run at `ns` (CLOCK_MONOTONIC). */
void run_exec_ended(RunExecHead *h, uint64_t ns);

/* Non-zero when the run's answer needs no device: *rc is then the submit's
 * sticky error, the settled result (for a query: COMPLETE), or
 * PTO_ERR_WRONG_PHASE for a run never submitted. */
int run_exec_known(const RunExecHead *h, int query, int *rc);

/* The device's verdict on a finished run, from its status block: 0, or its
 * first error with a message saying what failed where. */
int device_run_verdict(Runner *r, const RunExecHead *h);

#endif
