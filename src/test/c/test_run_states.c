/* The two state machines of one run below the contract, each walked whole:
 * NativeRunPhase (common/native_run_context.c, native_run_to) and the platform's
 * RunExecState (platform/device_run.c, run_exec_to). Every path of the table
 * leads where it says; every other move is refused with PTO_ERR_WRONG_PHASE,
 * a message naming both states, and nothing changed. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "common/native_run_context.h"
#include "platform/device_run.h"
#include "ptest.h"
#include "ptorun/pto_runtime_c_api.h"
#include "util/last_error.h"

/* ---- NativeRunPhase -------------------------------------------------------- */

/* The paths, as docs/lifecycle.md (section 4) lists them: from -> to. */
static int phase_path(int from, int to)
{
    return (from == NATIVE_RUN_PREPARED && to == NATIVE_RUN_LAUNCHING) ||
           (from == NATIVE_RUN_LAUNCHING && to == NATIVE_RUN_RUNNING) ||
           (from == NATIVE_RUN_LAUNCHING && to == NATIVE_RUN_ENDED) ||
           (from == NATIVE_RUN_RUNNING && to == NATIVE_RUN_ENDED);
}

static NativeRunContext run; /* large: static, zeroed; only its phase and descriptor are read */

TEST(native_run_phase_moves_only_along_its_table)
{
    static const char *const names[NATIVE_RUN_PHASE_COUNT] = { "Prepared", "Launching", "Running", "Ended" };
    run.desc.run_id = 7;
    run.desc.run_epoch = 70;
    int allowed = 0, refused = 0;
    for (int from = 0; from < NATIVE_RUN_PHASE_COUNT; from++) {
        CHECK(strcmp(native_run_phase_name(from), names[from]) == 0);
        for (int to = 0; to < NATIVE_RUN_PHASE_COUNT; to++) {
            atomic_store(&run.phase, from); /* the test sets the start; the library never writes it so */
            pto_clear_error();
            int rc = native_run_to(&run, "test_move", (NativeRunPhase)to);
            if (phase_path(from, to)) {
                CHECK_EQ_INT(rc, PTO_OK);
                CHECK_EQ_INT(atomic_load(&run.phase), to);
                CHECK_EQ_INT(pto_last_error()[0], '\0');
                allowed++;
            } else {
                char expected[128];
                snprintf(expected, sizeof expected, "the run is %s and cannot move to %s", names[from], names[to]);
                CHECK_EQ_INT(rc, PTO_ERR_WRONG_PHASE);
                CHECK_EQ_INT(atomic_load(&run.phase), from);
                CHECK_CONTAINS(pto_last_error(), "test_move (run_id=7 slot=0");
                CHECK_CONTAINS(pto_last_error(), "run_epoch=70");
                CHECK_CONTAINS(pto_last_error(), expected);
                refused++;
            }
        }
    }
    CHECK_EQ_INT(allowed, 4);
    CHECK_EQ_INT(allowed + refused, NATIVE_RUN_PHASE_COUNT * NATIVE_RUN_PHASE_COUNT);
}

TEST(native_run_phase_outside_the_enum_is_refused)
{
    atomic_store(&run.phase, NATIVE_RUN_RUNNING);
    CHECK_EQ_INT(native_run_to(&run, "test_move", (NativeRunPhase)NATIVE_RUN_PHASE_COUNT), PTO_ERR_WRONG_PHASE);
    CHECK_CONTAINS(pto_last_error(), "the run is Running and cannot move to unknown");
    CHECK_EQ_INT(atomic_load(&run.phase), NATIVE_RUN_RUNNING);
    atomic_store(&run.phase, -1);
    CHECK_EQ_INT(native_run_to(&run, "test_move", NATIVE_RUN_ENDED), PTO_ERR_WRONG_PHASE);
    CHECK_CONTAINS(pto_last_error(), "the run is unknown and cannot move to Ended");
    CHECK_EQ_INT(atomic_load(&run.phase), -1);
}

/* ---- RunExecState ---------------------------------------------------------- */

static int exec_path(int from, int to)
{
    return (from == RUN_EXEC_NONE && to == RUN_EXEC_SUBMITTED) || (from == RUN_EXEC_NONE && to == RUN_EXEC_REFUSED) ||
           (from == RUN_EXEC_SUBMITTED && to == RUN_EXEC_ENDED);
}

TEST(run_exec_state_moves_only_along_its_table)
{
    static const char *const names[RUN_EXEC_STATE_COUNT] = { "None", "Submitted", "Ended", "Refused" };
    int allowed = 0, refused = 0;
    for (int from = 0; from < RUN_EXEC_STATE_COUNT; from++) {
        CHECK(strcmp(run_exec_state_name((uint32_t)from), names[from]) == 0);
        for (int to = 0; to < RUN_EXEC_STATE_COUNT; to++) {
            RunExecHead h;
            memset(&h, 0, sizeof h);
            h.state = (uint32_t)from;
            h.error = -99;
            pto_clear_error();
            int rc = run_exec_to(&h, (RunExecState)to, -5);
            if (exec_path(from, to)) {
                CHECK_EQ_INT(rc, -5); /* the caller's result, passed through */
                CHECK_EQ_INT(h.state, to);
                CHECK_EQ_INT(h.error, -5);
                allowed++;
            } else {
                char expected[128];
                snprintf(expected, sizeof expected, "the run's execution is %s and cannot move to %s", names[from],
                         names[to]);
                CHECK_EQ_INT(rc, PTO_ERR_WRONG_PHASE);
                CHECK_EQ_INT(h.state, from);
                CHECK_EQ_INT(h.error, -99);
                CHECK_CONTAINS(pto_last_error(), expected);
                refused++;
            }
        }
    }
    CHECK_EQ_INT(allowed, 3);
    CHECK_EQ_INT(allowed + refused, RUN_EXEC_STATE_COUNT * RUN_EXEC_STATE_COUNT);
}

TEST(run_exec_records_the_launch_then_answers_from_its_state)
{
    RunExecHead h;
    memset(&h, 0, sizeof h);
    int rc = 1;
    CHECK_EQ_INT(run_exec_known(&h, 1, &rc), 1); /* never submitted */
    CHECK_EQ_INT(rc, PTO_ERR_WRONG_PHASE);
    DeviceLaunch launch;
    memset(&launch, 0, sizeof launch);
    launch.args_dev = 0x1000;
    launch.timeout_ms = 250;
    CHECK_EQ_INT(run_exec_submitted(&h, &launch), PTO_OK);
    CHECK(h.args_dev == 0x1000);
    CHECK_EQ_INT(h.timeout_ms, 250);
    CHECK_EQ_INT(run_exec_known(&h, 1, &rc), 0); /* the device must be asked */
    CHECK_EQ_INT(run_exec_submitted(&h, &launch), PTO_ERR_WRONG_PHASE); /* submitted once */
    run_exec_stamp_end(&h, 1234);
    CHECK_EQ_INT(run_exec_to(&h, RUN_EXEC_ENDED, PTO_ERR_KERNEL_FAULT), PTO_ERR_KERNEL_FAULT);
    CHECK_EQ_INT(run_exec_known(&h, 1, &rc), 1);
    CHECK_EQ_INT(rc, SIMPLER_NATIVE_RUN_POLL_COMPLETE); /* the ABI's spelling of "ended" */
    CHECK_EQ_INT(run_exec_known(&h, 0, &rc), 1);
    CHECK_EQ_INT(rc, PTO_ERR_KERNEL_FAULT);               /* an await again: the same result */
    CHECK_EQ_INT(run_exec_to(&h, RUN_EXEC_ENDED, PTO_OK), PTO_ERR_WRONG_PHASE); /* ended once */
    CHECK_EQ_INT(h.error, PTO_ERR_KERNEL_FAULT);
    RunExec exec;
    memcpy(exec.opaque, &h, sizeof h);
    CHECK(runner_execution_end_ns(&exec) == 1234);
}
