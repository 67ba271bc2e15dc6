/* The lone-task rule of the trb scheduler (device/aicpu/trb_scheduler.h): a
 * task a submit makes ready alone, with no participation on its way, is run by
 * the orchestrator's own thread instead of a woken pool thread. The kernels
 * report the thread they ran on (libtrb_test_kernels.so's trb_thread_id), the
 * orchestration its own (libtrb_test_orch.so's trb_orch_lone). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/last_error.h"
#include "ptest.h"
#include "test_sim.h"
#include "trb_fixture.h"

enum { FN_THREAD_ID = 21, FN_MEET = 22, CHAIN = 64 };

/* A callable with the built-in children, the two thread-reporting kernels and
 * the library orchestration `entry`. */
static RuntimeCallable *thread_callable(Runner *r, const uint8_t *signature, uint32_t n, const char *entry)
{
    uint32_t kernels_size, orch_size, size;
    const uint8_t *kernels = trb_test_kernels(&kernels_size), *orch = trb_test_orch(&orch_size);
    if (kernels == NULL || orch == NULL)
        return NULL;
    TestCallableBuilder b;
    tcb_init(&b);
    tcb_signature(&b, signature, n);
    trb_children(&b);
    tcb_library_child(&b, FN_THREAD_ID, PTO_CORE_AIV, kernels, kernels_size, "trb_thread_id");
    tcb_library_child(&b, FN_MEET, PTO_CORE_AIV, kernels, kernels_size, "trb_meet");
    tcb_orchestration_library(&b, orch, orch_size, entry);
    uint8_t *bytes = tcb_build(&b, &size);
    tcb_free(&b);
    RuntimeCallable *c = trb_register(r, bytes);
    free(bytes);
    return c;
}

static RuntimeCallable *lone_callable(Runner *r)
{
    const uint8_t sig[] = { PTO_ARG_OUT, PTO_ARG_OUT, PTO_ARG_SCALAR, PTO_ARG_SCALAR };
    return thread_callable(r, sig, 4, "trb_orch_lone");
}

typedef struct LoneRun {
    uint32_t ran_on, orchestrated_on;
} LoneRun;

/* One trb_orch_lone run: its task returns `code`; the orchestration goes on
   for `ms` after the submit. */
static int run_lone(Runner *r, RuntimeCallable *c, uint64_t code, uint64_t ms, int32_t timeout_ms, LoneRun *out)
{
    memset(out, 0, sizeof *out);
    ChipStorageTaskArgs *a = test_args();
    a->tensor_count = 2;
    a->tensors[0] = test_f32_tensor((float *)&out->ran_on, 1);
    a->tensors[1] = test_f32_tensor((float *)&out->orchestrated_on, 1);
    a->scalar_count = 2;
    a->scalars[0] = code;
    a->scalars[1] = ms;
    CallConfig cfg = test_config(timeout_ms);
    int rc = test_run(r, c, 0, a, &cfg, NULL);
    free(a);
    return rc;
}

TEST(a_lone_task_runs_on_the_orchestrator_thread)
{
    Runner *r = trb_runner();
    RuntimeCallable *c = lone_callable(r);
    CHECK(c != NULL);
    for (int i = 0; i < 20 && c != NULL; i++) {
        LoneRun run;
        CHECK_EQ_INT(run_lone(r, c, 0, 0, 20000, &run), PTO_OK);
        CHECK(run.orchestrated_on != 0);
        CHECK_EQ_INT(run.ran_on, run.orchestrated_on);
    }
    trb_release(r, c);
    runner_destroy(r);
}

/* x[i + 1] = x[i] + 1 for i < CHAIN: every task waits for the one before, so
   each step has exactly one ready task. */
static RuntimeCallable *chain_program(Runner *r)
{
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_INOUT };
    tcb_signature(&b, sig, 1);
    trb_children(&b);
    tcb_loop(&b, CHAIN);
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, 0, 4), tcb_tensor(0, PTO_ARG_OUT, 4, 4), tcb_f32(1.0f) };
    p[0].offset.coef[0] = 4;
    p[1].offset.coef[0] = 4;
    tcb_submit(&b, FN_VADDS, p, 3);
    tcb_insn(&b, PTO_OP_END_LOOP);
    uint32_t size;
    uint8_t *bytes = tcb_build(&b, &size);
    tcb_free(&b);
    RuntimeCallable *c = trb_register(r, bytes);
    free(bytes);
    return c;
}

TEST(a_chain_with_one_ready_task_per_step_computes_every_step)
{
    Runner *r = trb_runner();
    RuntimeCallable *c = chain_program(r);
    CHECK(c != NULL);
    /* default rings, and 4-slot windows where the orchestrator blocks and runs tasks itself */
    const uint64_t windows[] = { 0, 4 };
    for (size_t w = 0; w < 2 && c != NULL; w++) {
        float x[CHAIN + 1];
        x[0] = 0.0f;
        for (int i = 1; i <= CHAIN; i++)
            x[i] = -1.0f;
        ChipStorageTaskArgs *a = test_args();
        a->tensor_count = 1;
        a->tensors[0] = test_f32_tensor(x, CHAIN + 1);
        CallConfig cfg = test_config(20000);
        for (int i = 0; i < PTO_TRB_RING_COUNT; i++)
            cfg.ring_task_window[i] = windows[w];
        CHECK_EQ_INT(test_run(r, c, 0, a, &cfg, NULL), PTO_OK);
        int exact = 1;
        for (int i = 0; i <= CHAIN; i++)
            exact &= x[i] == (float)i;
        CHECK(exact);
        free(a);
    }
    trb_release(r, c);
    runner_destroy(r);
}

TEST(tasks_ready_together_still_run_on_pool_threads_at_once)
{
    setenv("PTORUN_SIM_DEVICE_THREADS", "3", 1);
    Runner *r = trb_runner();
    unsetenv("PTORUN_SIM_DEVICE_THREADS");
    const uint8_t sig[] = { PTO_ARG_OUT, PTO_ARG_SCALAR, PTO_ARG_SCALAR };
    RuntimeCallable *c = thread_callable(r, sig, 3, "trb_orch_meet");
    CHECK(c != NULL);
    for (uint64_t group = 1; group <= 5 && c != NULL; group++) {
        uint32_t ids[2] = { 0, 0 };
        ChipStorageTaskArgs *a = test_args();
        a->tensor_count = 1;
        a->tensors[0] = test_f32_tensor((float *)ids, 2);
        a->scalar_count = 2;
        a->scalars[0] = group;
        a->scalars[1] = 2; /* two trb_meet tasks: they return only when both run at once */
        CallConfig cfg = test_config(60000);
        int rc = test_run(r, c, 0, a, &cfg, NULL);
        if (rc != PTO_OK)
            fprintf(stderr, "  group %llu: %s\n", (unsigned long long)group, pto_last_error());
        CHECK_EQ_INT(rc, PTO_OK);
        CHECK(ids[0] != 0 && ids[1] != 0 && ids[0] != ids[1]);
        free(a);
    }
    trb_release(r, c);
    runner_destroy(r);
}

TEST(a_kernel_fault_of_a_lone_task_fails_the_run_and_the_next_run_works)
{
    Runner *r = trb_runner();
    RuntimeCallable *c = lone_callable(r);
    CHECK(c != NULL);
    LoneRun run;
    CHECK_EQ_INT(run_lone(r, c, 7, 0, 20000, &run), PTO_ERR_KERNEL_FAULT);
    CHECK_CONTAINS(pto_last_error(), "task 0 (func_id 21");
    CHECK_CONTAINS(pto_last_error(), "returned 7");
    CHECK_EQ_INT(run_lone(r, c, 0, 0, 20000, &run), PTO_OK);
    CHECK_EQ_INT(run.ran_on, run.orchestrated_on);
    trb_release(r, c);
    runner_destroy(r);
}

/* The kept task waits for the orchestrator, which goes on past the run's
   deadline: the task never starts, the run times out, the next run works. */
TEST(a_lone_task_kept_past_the_deadline_never_starts)
{
    Runner *r = trb_runner();
    RuntimeCallable *c = lone_callable(r);
    CHECK(c != NULL);
    LoneRun run;
    CHECK_EQ_INT(run_lone(r, c, 0, 300, 50, &run), PTO_ERR_TIMEOUT);
    CHECK_CONTAINS(pto_last_error(), "exceeded its timeout");
    CHECK_CONTAINS(pto_last_error(), "0 of 1 submitted task(s) completed");
    CHECK_EQ_INT(run_lone(r, c, 0, 0, 20000, &run), PTO_OK);
    CHECK_EQ_INT(run.ran_on, run.orchestrated_on);
    trb_release(r, c);
    runner_destroy(r);
}
