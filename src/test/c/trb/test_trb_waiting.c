/* Waiting without burning CPU, and stopping: a run whose orchestrator is
 * blocked on a full ring behind a slow kernel (libtrb_test_kernels.so's
 * trb_sleep) parks every thread; a run past its timeout stops. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/last_error.h"
#include "ptest.h"
#include "test_sim.h"
#include "trb_fixture.h"

enum { FN_SLEEP = 20, READERS = 40 };

static long long wall_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000LL + t.tv_nsec / 1000;
}

/* One slow task writes x; READERS tasks each read x and write their own
   slice of y: all of them wait on the slow one, through 4-slot windows. */
static RuntimeCallable *slow_program(Runner *r, uint64_t sleep_ms)
{
    uint32_t size;
    const uint8_t *kernels = trb_test_kernels(&size);
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_OUT, PTO_ARG_OUT };
    tcb_signature(&b, sig, 2);
    trb_children(&b);
    tcb_library_child(&b, FN_SLEEP, PTO_CORE_AIV, kernels, size, "trb_sleep");
    PtoProgramParam sleep[] = { tcb_tensor(0, PTO_ARG_OUT, 0, 16), tcb_imm(sleep_ms) };
    tcb_submit(&b, FN_SLEEP, sleep, 2);
    tcb_loop(&b, READERS);
    PtoProgramParam read[] = { tcb_tensor(0, PTO_ARG_IN, 0, 16), tcb_tensor(1, PTO_ARG_OUT, 0, 16), tcb_f32(1.0f) };
    read[1].offset.coef[0] = 16;
    tcb_submit(&b, FN_VADDS, read, 3);
    tcb_insn(&b, PTO_OP_END_LOOP);
    uint8_t *bytes = tcb_build(&b, &size);
    tcb_free(&b);
    RuntimeCallable *c = trb_register(r, bytes);
    free(bytes);
    return c;
}

static CallConfig small_windows(int32_t timeout_ms)
{
    CallConfig cfg = test_config(timeout_ms);
    for (int i = 0; i < PTO_TRB_RING_COUNT; i++)
        cfg.ring_task_window[i] = 4;
    return cfg;
}

TEST(a_blocked_orchestrator_and_idle_schedulers_burn_no_cpu)
{
    Runner *r = trb_runner();
    RuntimeCallable *c = slow_program(r, 400);
    CHECK(c != NULL);
    float x[4] = { 0 }, y[READERS * 4];
    ChipStorageTaskArgs *a = test_args();
    a->tensor_count = 2;
    a->tensors[0] = test_f32_tensor(x, 4);
    a->tensors[1] = test_f32_tensor(y, READERS * 4);
    CallConfig cfg = small_windows(20000);
    long long wall = wall_us(), cpu = test_process_cpu_us();
    CHECK_EQ_INT(test_run(r, c, 0, a, &cfg, NULL), PTO_OK);
    wall = wall_us() - wall;
    cpu = test_process_cpu_us() - cpu;
    CHECK(y[0] == 2.0f && y[READERS * 4 - 4] == 2.0f && y[1] == 1.0f);
    CHECK(wall >= 400000);
    /* the slow kernel sleeps; everyone else waits parked */
    if (cpu * 4 >= wall)
        fprintf(stderr, "  %lld us of CPU in %lld us\n", cpu, wall);
    CHECK(cpu * 4 < wall);
    free(a);
    trb_release(r, c);
    runner_destroy(r);
}

TEST(a_run_past_its_timeout_stops_and_the_next_run_works)
{
    Runner *r = trb_runner();
    RuntimeCallable *slow = slow_program(r, 500), *quick = slow_program(r, 1);
    float x[4] = { 0 }, y[READERS * 4];
    for (int i = 0; i < READERS * 4; i++)
        y[i] = -3.0f;
    ChipStorageTaskArgs *a = test_args();
    a->tensor_count = 2;
    a->tensors[0] = test_f32_tensor(x, 4);
    a->tensors[1] = test_f32_tensor(y, READERS * 4);
    CallConfig cfg = small_windows(100);
    CHECK_EQ_INT(test_run(r, slow, 0, a, &cfg, NULL), PTO_ERR_TIMEOUT);
    CHECK_CONTAINS(pto_last_error(), "exceeded its timeout");
    CHECK(y[0] == -3.0f);
    cfg = small_windows(20000);
    CHECK_EQ_INT(test_run(r, quick, 0, a, &cfg, NULL), PTO_OK);
    CHECK(y[0] == 2.0f);
    free(a);
    trb_release(r, slow);
    trb_release(r, quick);
    runner_destroy(r);
}
