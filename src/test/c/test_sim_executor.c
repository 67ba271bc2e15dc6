/* The sim runner's AICPU executor below any runtime: launches of hand-built
 * graphs (test_sim_graph.h) whose kernels live in this test binary, awaits,
 * timeouts, queries, the calling thread's participation, device threads. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "format/chip_callable.h"
#include "util/last_error.h"
#include "services/launch_signal.h"
#include "device/pto_device_abi.h"
#include "platform/runner.h"
#include "platform/sim/sim_runner.h"
#include "ptest.h"
#include "ptorun/pto_kernel.h"
#include "test_callable.h"
#include "test_sim.h"
#include "test_sim_graph.h"

/* ---- launches ------------------------------------------------------------------------ */

TEST(executor_gives_each_task_a_free_core_of_its_type_within_block_dim)
{
    Runner *r = test_sim_runner();
    for (uint32_t block_dim = 1; block_dim <= 2; block_dim++) {
        reset_kernels();
        HandTask t[16];
        for (int i = 0; i < 16; i++)
            t[i] = (HandTask){ record_kernel, i % 4 == 0 ? PTO_CORE_AIC : PTO_CORE_AIV, (uint32_t)i, NO_CONSUMERS };
        HandGraph g;
        CHECK_EQ_INT(build_graph(r, t, 16, block_dim, 4, 10000, &g), 0);
        CHECK_EQ_INT(launch_and_await(r, &g), PTO_OK);
        CHECK_EQ_INT(status_of(&g)->tasks_completed, 16);
        CHECK_EQ_INT(status_of(&g)->finished, 1);
        for (int i = 0; i < 16; i++) {
            const PtoKernelContext *s = &test_kernels.seen[i];
            CHECK_EQ_INT(test_kernels.ran[i], 1);
            CHECK_EQ_INT(s->core_type, t[i].core_type);
            CHECK_EQ_INT(s->task_id, i);
            CHECK_EQ_INT(s->block_dim, block_dim);
            CHECK(s->block_idx < block_dim);
            CHECK_EQ_INT(s->core_id / 3, s->block_idx);
            CHECK_EQ_INT(s->core_id % 3 == 0, s->core_type == PTO_CORE_AIC);
        }
        CHECK(test_kernels.max_running[PTO_CORE_AIC] <= (int)block_dim);
        CHECK(test_kernels.max_running[PTO_CORE_AIV] <= 2 * (int)block_dim);
        free_graph(r, &g);
    }
    runner_destroy(r);
}

TEST(executor_runs_consumers_after_producers)
{
    Runner *r = test_sim_runner();
    reset_kernels();
    /* 0 -> {1, 2} -> 3 */
    HandTask t[4] = {
        { record_kernel, PTO_CORE_AIV, 0, { 1, 2, -1, -1 } },
        { record_kernel, PTO_CORE_AIC, 1, { 3, -1, -1, -1 } },
        { record_kernel, PTO_CORE_AIV, 2, { 3, -1, -1, -1 } },
        { record_kernel, PTO_CORE_AIV, 3, NO_CONSUMERS },
    };
    HandGraph g;
    CHECK_EQ_INT(build_graph(r, t, 4, 1, 4, 10000, &g), 0);
    CHECK_EQ_INT(launch_and_await(r, &g), PTO_OK);
    for (int i = 0; i < 4; i++)
        CHECK_EQ_INT(test_kernels.ran[i], 1);
    free_graph(r, &g);
    runner_destroy(r);
}

TEST(executor_records_the_first_kernel_fault_and_dispatches_no_successor)
{
    Runner *r = test_sim_runner();
    reset_kernels();
    HandTask t[3] = {
        { record_kernel, PTO_CORE_AIV, 10, { 1, -1, -1, -1 } },
        { failing_kernel, PTO_CORE_AIC, 11, { 2, -1, -1, -1 } },
        { record_kernel, PTO_CORE_AIV, 12, NO_CONSUMERS },
    };
    HandGraph g;
    CHECK_EQ_INT(build_graph(r, t, 3, 1, 2, 10000, &g), 0);
    CHECK_EQ_INT(launch_and_await(r, &g), PTO_ERR_KERNEL_FAULT);
    CHECK_CONTAINS(pto_last_error(), "kernel fault: task 1 (func_id 11) returned 7 on core ");
    PtoDeviceStatus *s = status_of(&g);
    CHECK_EQ_INT(s->error_code, PTO_ERR_KERNEL_FAULT);
    CHECK_EQ_INT(s->kernel_code, 7);
    CHECK_EQ_INT(s->task_id, 1);
    CHECK_EQ_INT(s->func_id, 11);
    CHECK_EQ_INT(s->core_id, 0);
    CHECK_EQ_INT(s->tasks_completed, 2);
    CHECK_EQ_INT(test_kernels.ran[2], 0);
    free_graph(r, &g);
    runner_destroy(r);
}

TEST(executor_completes_a_zero_task_graph_at_once)
{
    Runner *r = test_sim_runner();
    HandGraph g;
    CHECK_EQ_INT(build_graph(r, NULL, 0, 1, 4, 10000, &g), 0);
    CHECK_EQ_INT(launch_and_await(r, &g), PTO_OK);
    CHECK_EQ_INT(status_of(&g)->finished, 1);
    free_graph(r, &g);
    runner_destroy(r);
}

TEST(executor_refuses_a_malformed_graph_instead_of_running_it)
{
    Runner *r = test_sim_runner();
    reset_kernels();
    HandTask t[2] = { { record_kernel, PTO_CORE_AIV, 0, { 1, -1, -1, -1 } },
                      { record_kernel, PTO_CORE_AIV, 1, NO_CONSUMERS } };
    HandGraph g;
    CHECK_EQ_INT(build_graph(r, t, 2, 1, 2, 10000, &g), 0);
    PtoGraphTask *tasks = (PtoGraphTask *)(g.arena + sizeof(PtoAicpuArgs) + sizeof(PtoGraphHeader));
    tasks[1].fanin_count = 2; /* would never become ready */
    CHECK_EQ_INT(launch_and_await(r, &g), PTO_ERR_DEVICE);
    CHECK_EQ_INT(test_kernels.ran[0], 0);
    /* a block_dim beyond the arch */
    CHECK_EQ_INT(build_graph(r, t, 2, 1, 2, 10000, &g), 0);
    ((PtoAicpuArgs *)g.arena)->block_dim = 99;
    CHECK_EQ_INT(launch_and_await(r, &g), PTO_ERR_DEVICE);
    runner_destroy(r);
}

typedef struct StopWatch {
    Runner *r;
    PtoDeviceStatus *status;
    int waited;               /* sim_device_pool_await_waits' answer */
    int32_t stop_seen;        /* stop_request when the kernels were released */
} StopWatch;

/* Releases the blocked kernels once the host has asked the device to stop: an
   await that timed out stores the request, then parks in its second wait on the
   launch, which is the event waited for here. */
static void *release_on_stop(void *arg)
{
    StopWatch *w = arg;
    w->waited = sim_device_pool_await_waits(w->r->pool, 2, EVENT_TIMEOUT_MS);
    w->stop_seen = __atomic_load_n(&w->status->stop_request, __ATOMIC_ACQUIRE);
    release_kernels(); /* also when the wait failed: the test then fails rather than hangs */
    return NULL;
}

TEST(await_times_out_stops_dispatching_and_waits_for_kernels_in_flight)
{
    Runner *r = test_sim_runner();
    reset_kernels();
    HandTask t[3] = {
        { blocking_kernel, PTO_CORE_AIV, 1, { 2, -1, -1, -1 } },
        { record_kernel, PTO_CORE_AIV, 2, NO_CONSUMERS },
        { record_kernel, PTO_CORE_AIV, 3, NO_CONSUMERS },
    };
    HandGraph g;
    CHECK_EQ_INT(build_graph(r, t, 3, 1, 2, 50, &g), 0);
    StopWatch w = { r, status_of(&g), -1, 0 };
    pthread_t helper;
    pthread_create(&helper, NULL, release_on_stop, &w);
    CHECK_EQ_INT(launch_and_await(r, &g), PTO_ERR_TIMEOUT);
    pthread_join(helper, NULL);
    CHECK_EQ_INT(w.waited, PTO_OK);
    CHECK_EQ_INT(w.stop_seen, PTO_ERR_TIMEOUT); /* the kernel was released only after the stop request */
    CHECK_CONTAINS(pto_last_error(), "exceeded its timeout of 50 ms");
    CHECK_EQ_INT(test_kernels.ran[0], 1);
    CHECK_EQ_INT(test_kernels.ran[2], 0);        /* its producer's completion came after the stop */
    CHECK_EQ_INT(test_kernels.blocked, 0);       /* the await returned after the kernel did */
    CHECK_EQ_INT(status_of(&g)->error_code, PTO_ERR_TIMEOUT);
    free_graph(r, &g);
    /* the device is usable again */
    reset_kernels();
    CHECK_EQ_INT(build_graph(r, t + 1, 1, 1, 2, 10000, &g), 0);
    CHECK_EQ_INT(launch_and_await(r, &g), PTO_OK);
    free_graph(r, &g);
    runner_destroy(r);
}

TEST(query_never_blocks_and_a_busy_device_refuses_a_second_launch)
{
    Runner *r = test_sim_runner();
    reset_kernels();
    HandTask t[1] = { { blocking_kernel, PTO_CORE_AIC, 1, NO_CONSUMERS } };
    HandGraph g, g2;
    CHECK_EQ_INT(build_graph(r, t, 1, 1, 2, 10000, &g), 0);
    CHECK_EQ_INT(build_graph(r, t, 1, 1, 2, 10000, &g2), 0);
    RunExec exec, exec2;
    CHECK_EQ_INT(runner_submit(r, &exec, 0, &g.launch, NULL), PTO_OK);
    wait_blocked(1);
    CHECK_EQ_INT(runner_query(r, &exec), SIMPLER_NATIVE_RUN_POLL_NOT_READY);
    /* one launch at a time: refused, sticky, never published */
    volatile int32_t word = 0;
    LaunchSignal s;
    launch_signal_init(&s, &word, 3);
    CHECK_EQ_INT(runner_submit(r, &exec2, 1, &g2.launch, &s), PTO_ERR_BUSY);
    CHECK_EQ_INT(launch_signal_fired(&s), 0);
    CHECK_EQ_INT(word, 0);
    CHECK_EQ_INT(runner_query(r, &exec2), PTO_ERR_BUSY);
    CHECK_EQ_INT(runner_await_device(r, &exec2), PTO_ERR_BUSY);
    /* finalize waits for no one: it refuses */
    CHECK_EQ_INT(runner_finalize(r), PTO_ERR_BUSY);
    release_kernels();
    CHECK_EQ_INT(runner_await_device(r, &exec), PTO_OK);
    CHECK_EQ_INT(runner_query(r, &exec), SIMPLER_NATIVE_RUN_POLL_COMPLETE);
    CHECK_EQ_INT(runner_query(r, &exec2), PTO_ERR_BUSY); /* a late device cannot complete it */
    launch_signal_destroy(&s);
    runner_destroy(r);
}

#define RACING_QUERIES 200

typedef struct Poller {
    Runner *r;
    RunExec *exec;
    int first;                /* the query while the kernel is blocked */
    int waited;               /* the wait for the launch's end */
    int complete, other;      /* the queries after it */
} Poller;

/* Queries once while the run is blocked, lets it finish, waits for the device
   to end the launch (the event that also wakes the await), then queries at
   once, racing the await's move to Ended and the retiring of its execution state. */
static void *query_around_the_end(void *arg)
{
    Poller *p = arg;
    p->first = runner_query(p->r, p->exec);
    release_kernels();
    p->waited = sim_device_pool_wait(p->r->pool, UINT64_MAX, EVENT_TIMEOUT_MS);
    for (int i = 0; i < RACING_QUERIES; i++) {
        if (runner_query(p->r, p->exec) == SIMPLER_NATIVE_RUN_POLL_COMPLETE)
            p->complete++;
        else
            p->other++;
    }
    return NULL;
}

TEST(query_from_another_thread_races_the_await_safely)
{
    Runner *r = test_sim_runner();
    reset_kernels();
    HandTask t[2] = { { blocking_kernel, PTO_CORE_AIV, 1, { 1, -1, -1, -1 } },
                      { record_kernel, PTO_CORE_AIV, 2, NO_CONSUMERS } };
    HandGraph g;
    CHECK_EQ_INT(build_graph(r, t, 2, 1, 2, 10000, &g), 0);
    RunExec exec;
    CHECK_EQ_INT(runner_submit(r, &exec, 0, &g.launch, NULL), PTO_OK);
    wait_blocked(1);
    Poller p = { r, &exec, -1, -1, 0, 0 };
    pthread_t th;
    pthread_create(&th, NULL, query_around_the_end, &p);
    CHECK_EQ_INT(runner_await_device(r, &exec), PTO_OK);
    pthread_join(th, NULL);
    CHECK_EQ_INT(p.first, SIMPLER_NATIVE_RUN_POLL_NOT_READY);
    CHECK_EQ_INT(p.waited, PTO_OK);
    CHECK_EQ_INT(p.complete, RACING_QUERIES); /* before, during and after the await ended */
    CHECK_EQ_INT(p.other, 0);
    free_graph(r, &g);
    runner_destroy(r);
}

/* ---- runner_execute: the caller runs the first participation ---------------- */

static struct {
    pthread_t ran_on[MAX_TASKS];
    volatile int32_t *word;   /* the acceptance word of the run in progress */
    int32_t word_seen;        /* what the first kernel saw in it */
} inline_run;

static int32_t thread_kernel(const uint64_t *args, uint32_t nargs, const PtoKernelContext *ctx)
{
    (void)args, (void)nargs;
    inline_run.ran_on[ctx->task_id] = pthread_self();
    if (ctx->task_id == 0)
        inline_run.word_seen = *inline_run.word;
    return 0;
}

static int32_t slow_kernel(const uint64_t *args, uint32_t nargs, const PtoKernelContext *ctx)
{
    (void)args, (void)nargs;
    inline_run.ran_on[ctx->task_id] = pthread_self();
    pthread_mutex_lock(&test_kernels.lock);
    test_kernels.ran[ctx->task_id]++;
    pthread_mutex_unlock(&test_kernels.lock);
    sleep_ms(30); /* the kernel's duration, so the run outlives its deadline; synchronizes nothing */
    return 0;
}

TEST(execute_runs_a_short_run_on_the_calling_thread_after_the_marker)
{
    Runner *r = test_sim_runner();
    HandTask t[2] = { { thread_kernel, PTO_CORE_AIV, 1, { 1, -1, -1, -1 } },
                      { thread_kernel, PTO_CORE_AIC, 2, NO_CONSUMERS } };
    HandGraph g;
    CHECK_EQ_INT(build_graph(r, t, 2, 1, 4, 10000, &g), 0);
    volatile int32_t word = 0;
    LaunchSignal s;
    launch_signal_init(&s, &word, 9);
    inline_run.word = &word;
    inline_run.word_seen = 0;
    RunExec exec;
    CHECK_EQ_INT(runner_execute(r, &exec, 0, &g.launch, &s), PTO_OK);
    /* no device thread was needed: both tasks ran here, after the marker */
    CHECK(pthread_equal(inline_run.ran_on[0], pthread_self()));
    CHECK(pthread_equal(inline_run.ran_on[1], pthread_self()));
    CHECK_EQ_INT(inline_run.word_seen, 9);
    CHECK_EQ_INT(runner_query(r, &exec), SIMPLER_NATIVE_RUN_POLL_COMPLETE);
    CHECK_EQ_INT(status_of(&g)->tasks_completed, 2);
    launch_signal_destroy(&s);
    free_graph(r, &g);
    runner_destroy(r);
}

TEST(execute_times_a_run_out_on_the_device_while_the_caller_runs_it)
{
    Runner *r = test_sim_runner();
    reset_kernels();
    /* a chain on one AICPU thread: every task runs on the caller, so only the
     * device's own deadline check can stop it */
    HandTask t[4] = { { slow_kernel, PTO_CORE_AIV, 1, { 1, -1, -1, -1 } },
                      { slow_kernel, PTO_CORE_AIV, 2, { 2, -1, -1, -1 } },
                      { slow_kernel, PTO_CORE_AIV, 3, { 3, -1, -1, -1 } },
                      { slow_kernel, PTO_CORE_AIV, 4, NO_CONSUMERS } };
    HandGraph g;
    CHECK_EQ_INT(build_graph(r, t, 4, 1, 1, 50, &g), 0);
    RunExec exec;
    CHECK_EQ_INT(runner_execute(r, &exec, 0, &g.launch, NULL), PTO_ERR_TIMEOUT);
    CHECK_CONTAINS(pto_last_error(), "exceeded its timeout of 50 ms");
    CHECK(pthread_equal(inline_run.ran_on[0], pthread_self()));
    CHECK_EQ_INT(test_kernels.ran[3], 0);
    /* three 30 ms tasks already pass the 50 ms deadline, so the fourth never runs;
       how many finished before the check depends on the machine (valgrind, load) */
    CHECK(status_of(&g)->tasks_completed <= 3);
    CHECK_EQ_INT(status_of(&g)->error_code, PTO_ERR_TIMEOUT);
    free_graph(r, &g);
    /* the device is usable again */
    reset_kernels();
    CHECK_EQ_INT(build_graph(r, t + 3, 1, 1, 1, 10000, &g), 0);
    CHECK_EQ_INT(runner_execute(r, &exec, 0, &g.launch, NULL), PTO_OK);
    CHECK_EQ_INT(test_kernels.ran[0], 1);
    free_graph(r, &g);
    runner_destroy(r);
}

typedef struct Execution {
    Runner *r;
    HandGraph *g;
    int rc;
} Execution;

static void *execute_in_thread(void *arg)
{
    Execution *e = arg;
    RunExec exec;
    e->rc = runner_execute(e->r, &exec, 0, &e->g->launch, NULL);
    return NULL;
}

TEST(execute_hands_parallel_work_to_device_threads)
{
    Runner *r = test_sim_runner();
    reset_kernels();
    /* two independent tasks that only return together: the caller's
     * participation blocks in one, so a device thread must run the other */
    HandTask t[2] = { { blocking_kernel, PTO_CORE_AIV, 1, NO_CONSUMERS },
                      { blocking_kernel, PTO_CORE_AIV, 2, NO_CONSUMERS } };
    HandGraph g;
    CHECK_EQ_INT(build_graph(r, t, 2, 1, 2, 10000, &g), 0);
    Execution e = { r, &g, -1 };
    pthread_t th;
    pthread_create(&th, NULL, execute_in_thread, &e);
    wait_blocked(2);
    release_kernels();
    pthread_join(th, NULL);
    CHECK_EQ_INT(e.rc, PTO_OK);
    CHECK_EQ_INT(test_kernels.ran[0], 1);
    CHECK_EQ_INT(test_kernels.ran[1], 1);
    free_graph(r, &g);
    runner_destroy(r);
}

static SimDevicePool *awaited_pool; /* the pool whose waiter await_host_kernel waits for */

/* Returns once the host waits for the launch it belongs to: a destroy that
 * did not wait would leave it blocked and its consumer never run. */
static int32_t await_host_kernel(const uint64_t *args, uint32_t nargs, const PtoKernelContext *ctx)
{
    (void)args, (void)nargs;
    sim_device_pool_await_waiter(awaited_pool);
    pthread_mutex_lock(&test_kernels.lock);
    test_kernels.ran[ctx->task_id]++;
    pthread_mutex_unlock(&test_kernels.lock);
    return 0;
}

TEST(destroying_a_runner_waits_for_a_launch_in_flight)
{
    Runner *r = test_sim_runner();
    reset_kernels();
    awaited_pool = r->pool;
    HandTask t[2] = { { await_host_kernel, PTO_CORE_AIV, 1, { 1, -1, -1, -1 } },
                      { record_kernel, PTO_CORE_AIV, 2, NO_CONSUMERS } };
    HandGraph g;
    CHECK_EQ_INT(build_graph(r, t, 2, 1, 2, 10000, &g), 0);
    RunExec exec;
    CHECK_EQ_INT(runner_submit(r, &exec, 0, &g.launch, NULL), PTO_OK);
    runner_destroy(r); /* the graph's memory is freed only after both tasks ran */
    CHECK_EQ_INT(test_kernels.ran[0], 1);
    CHECK_EQ_INT(test_kernels.ran[1], 1);
}

TEST(submit_rolls_back_a_launch_it_cannot_hand_over)
{
    Runner *r = test_sim_runner();
    uint64_t outside[16] = { 0 };
    DeviceLaunch bad = { .args_dev = (uint64_t)(uintptr_t)outside, .aicpu_threads = 2, .block_dim = 1,
                         .timeout_ms = 100 };
    volatile int32_t word = 0;
    LaunchSignal s;
    launch_signal_init(&s, &word, 9);
    RunExec exec;
    CHECK_EQ_INT(runner_submit(r, &exec, 0, &bad, &s), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(pto_last_error(), "argument block");
    CHECK_EQ_INT(launch_signal_fired(&s), 0);
    CHECK_EQ_INT(word, 0);
    CHECK_EQ_INT(runner_query(r, &exec), PTO_ERR_INVALID_ARGUMENT);
    bad.aicpu_threads = 0;
    CHECK_EQ_INT(runner_submit(r, &exec, 0, &bad, &s), PTO_ERR_INVALID_ARGUMENT);
    bad.aicpu_threads = 2;
    bad.block_dim = 25;
    CHECK_EQ_INT(runner_submit(r, &exec, 0, &bad, &s), PTO_ERR_INVALID_ARGUMENT);
    launch_signal_destroy(&s);
    Runner *cold = runner_create();
    CHECK_EQ_INT(runner_submit(cold, &exec, 0, &bad, NULL), PTO_ERR_WRONG_PHASE);
    runner_destroy(cold);
    runner_destroy(r);
}

/* Two devices in one process: each runs its own executor copy, so a launch on
   one cannot disturb a launch in flight on the other. */
TEST(two_devices_execute_side_by_side_without_sharing_executor_state)
{
    Runner *a = test_sim_runner();
    Runner *b = test_sim_runner();
    reset_kernels();
    HandTask ta[2] = { { blocking_kernel, PTO_CORE_AIV, 1, { 1, -1, -1, -1 } },
                       { record_kernel, PTO_CORE_AIV, 2, NO_CONSUMERS } };
    HandGraph ga, gb;
    CHECK_EQ_INT(build_graph(a, ta, 2, 1, 2, 10000, &ga), 0);
    RunExec exec;
    CHECK_EQ_INT(runner_submit(a, &exec, 0, &ga.launch, NULL), PTO_OK);
    wait_blocked(1);
    HandTask tb[3] = { { record_kernel, PTO_CORE_AIC, 5, { 1, 2, -1, -1 } },
                       { record_kernel, PTO_CORE_AIV, 6, NO_CONSUMERS },
                       { record_kernel, PTO_CORE_AIV, 7, NO_CONSUMERS } };
    CHECK_EQ_INT(build_graph(b, tb, 3, 2, 4, 10000, &gb), 0);
    CHECK_EQ_INT(launch_and_await(b, &gb), PTO_OK);
    CHECK_EQ_INT(status_of(&gb)->tasks_completed, 3);
    release_kernels();
    CHECK_EQ_INT(runner_await_device(a, &exec), PTO_OK);
    CHECK_EQ_INT(status_of(&ga)->tasks_completed, 2);
    runner_destroy(b);
    runner_destroy(a);
}

/* ---- the eager launch (no hooks): what a driver that starts every thread sees ---------- */

typedef struct Participation {
    PtoAicpuEntryFn entry;
    uint64_t args_dev;
    uint32_t index, count;
    int32_t rc;
} Participation;

static void *participate(void *arg)
{
    Participation *p = arg;
    p->rc = p->entry(p->args_dev, p->index, p->count, NULL);
    return NULL;
}

TEST(eager_launch_parks_idle_threads_until_the_run_ends)
{
    char path[4096];
    const char *dir = getenv("PTORUN_LIB_DIR");
    snprintf(path, sizeof path, "%s/libptorun_aicpu_a2a3.so", dir ? dir : ".");
    void *image = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(image != NULL);
    PtoAicpuEntryFn entry = (PtoAicpuEntryFn)dlsym(image, PTO_AICPU_ENTRY_SYMBOL);
    CHECK(entry != NULL);
    Runner *r = test_sim_runner(); /* only for device memory */
    reset_kernels();
    HandTask t[6];
    for (int i = 0; i < 6; i++)
        t[i] = (HandTask){ record_kernel, PTO_CORE_AIV, (uint32_t)i, { i < 5 ? i + 1 : -1, -1, -1, -1 } };
    HandGraph g;
    CHECK_EQ_INT(build_graph(r, t, 6, 1, 3, 10000, &g), 0);
    /* a chain: at most one thread has work, the others park until the end */
    Participation p[3];
    pthread_t th[3];
    for (uint32_t i = 0; i < 3; i++) {
        p[i] = (Participation){ entry, g.launch.args_dev, i, 3, -99 };
        pthread_create(&th[i], NULL, participate, &p[i]);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(p[i].rc, PTO_AICPU_DONE);
    }
    for (int i = 0; i < 6; i++)
        CHECK_EQ_INT(test_kernels.ran[i], 1);
    CHECK_EQ_INT(status_of(&g)->finished, 1);
    CHECK_EQ_INT(status_of(&g)->error_code, 0);
    /* a participation that starts after the end returns at once */
    CHECK_EQ_INT(entry(g.launch.args_dev, 0, 3, NULL), PTO_AICPU_DONE);
    CHECK_EQ_INT(test_kernels.ran[0], 1);
    free_graph(r, &g);
    runner_destroy(r);
    dlclose(image);
}

/* ---- idle ------------------------------------------------------------------------------ */

TEST(an_idle_device_burns_no_cpu)
{
    Runner *r = test_sim_runner();
    reset_kernels();
    HandTask t[1] = { { record_kernel, PTO_CORE_AIV, 1, NO_CONSUMERS } };
    HandGraph g;
    CHECK_EQ_INT(build_graph(r, t, 1, 1, 4, 10000, &g), 0);
    CHECK_EQ_INT(launch_and_await(r, &g), PTO_OK); /* threads have worked and gone idle */
    long long before = test_process_cpu_us();
    sleep_ms(300); /* the measurement window: CPU used while nothing runs; synchronizes nothing */
    long long used = test_process_cpu_us() - before;
    if (used > 30000) {
        char m[128];
        snprintf(m, sizeof m, "an idle device used %lld us of CPU in 300 ms", used);
        ptest_record_failure(__FILE__, __LINE__, m);
    }
    free_graph(r, &g);
    runner_destroy(r);
}
