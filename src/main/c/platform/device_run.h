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
    RUN_EXEC_ENDED,      /* awaited: the run ended, `error` is its result (the device's verdict, or the
                            await's timeout or device failure) */
    RUN_EXEC_REFUSED,    /* the submit rolled back: `error` is sticky, the run never starts */
} RunExecState;
#define RUN_EXEC_STATE_COUNT 4

/* The first member of every platform's RunExec content. */
typedef struct RunExecHead {
    uint64_t args_dev;   /* the launch's argument block */
    uint32_t timeout_ms;
    int32_t error;       /* published before `state` */
    uint32_t state;      /* RunExecState: 0 when the platform's submit begins, then changed only by
                            run_exec_to; atomic: a query may race the await */
    uint32_t reserved;
    uint64_t end_ns;     /* CLOCK_MONOTONIC instant the platform saw the run end on the device, 0 until
                            then (runner_execution_end_ns): written by the await before the state is Ended */
} RunExecHead;

/* A launch's geometry and timeout resolved, its argument block inside device
 * memory; PTO_ERR_INVALID_ARGUMENT naming what is wrong otherwise. */
int device_run_check_launch(Runner *r, const DeviceLaunch *launch);

/* The one writer of a run's execution state: moves it from its state to `to`
 * along one of the paths the table in device_run.c lists (None -> Submitted,
 * None -> Refused, Submitted -> Ended), `error` set to rc first (published by the
 * state's release store), and returns rc. Any other move is a bug of the caller:
 * PTO_ERR_WRONG_PHASE naming both states, the head unchanged. */
int run_exec_to(RunExecHead *h, RunExecState to, int rc);
/* The run crossed the marker with this launch: records its argument block and
 * timeout, then None -> Submitted (run_exec_to's answer). */
int run_exec_submitted(RunExecHead *h, const DeviceLaunch *launch);
/* The await saw the run end on the device at `ns` (CLOCK_MONOTONIC), before it moves the state to Ended. */
void run_exec_stamp_end(RunExecHead *h, uint64_t ns);
/* "None", "Submitted", "Ended", "Refused"; "unknown" for anything else. */
const char *run_exec_state_name(uint32_t state);

/* Non-zero when the run's answer needs no device: *rc is then the submit's
 * sticky error, the ended run's result (for a query: SIMPLER_NATIVE_RUN_POLL_COMPLETE,
 * the ABI's spelling of "ended"), or PTO_ERR_WRONG_PHASE for a run never submitted. */
int run_exec_known(const RunExecHead *h, int query, int *rc);

/* The device's verdict on a run that ended on it, from its status block: 0, or
 * its first error with a message saying what failed where. */
int device_run_verdict(Runner *r, const RunExecHead *h);

#endif
