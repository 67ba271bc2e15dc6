/* The device context around the runs: init, registry, teardown refusals,
 * queries and the executor threads. */
#include "fixture.h"

#include <dirent.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    if (d != NULL)
        closedir(d);
    return n;
}

/* Executor threads alive now, found by their name. */
static int executor_count(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue; /* exited meanwhile */
        if (fgets(comm, sizeof comm, f) != NULL && strncmp(comm, "ptorun-exec", 11) == 0)
            n++;
        fclose(f);
    }
    if (d != NULL)
        closedir(d);
    return n;
}

/* A joined thread can linger in /proc for a moment until the kernel reaps it:
 * wait (bounded, generously) for the count to reach `expected`, then report it. */
static int settled_executor_count(int expected)
{
    int n = executor_count();
    for (int i = 0; i < 5000 && n != expected; i++) {
        struct timespec ts = { 0, 1000000L };
        nanosleep(&ts, NULL);
        n = executor_count();
    }
    return n;
}

static double process_cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0) {
    }
}

TEST(init_runs_once_and_a_failed_init_can_be_retried)
{
    fake_reset();
    void *ctx = create_device_context();
    fake_script.init_fail_code = PTO_ERR_DEVICE;
    CHECK_EQ_INT(simpler_init(ctx, 0, fix_image, sizeof fix_image, fix_image, sizeof fix_image, NULL, 0, NULL),
                 PTO_ERR_DEVICE);
    CHECK_CONTAINS(simpler_last_error(), "fake runner_init refused");
    fake_script.init_fail_code = 0;
    CallConfig prewarm = { 0 };
    /* the dispatcher image is accepted and ignored */
    CHECK_EQ_INT(simpler_init(ctx, 0, fix_image, sizeof fix_image, fix_image, sizeof fix_image, fix_image, 3, &prewarm),
                 PTO_OK);
    CHECK_EQ_INT(fake_record.prewarm_calls, 1);
    CHECK_EQ_INT(simpler_init(ctx, 0, fix_image, sizeof fix_image, fix_image, sizeof fix_image, NULL, 0, NULL),
                 PTO_ERR_WRONG_PHASE);
    CHECK_CONTAINS(simpler_last_error(), "already initialized");
    CHECK_EQ_INT(finalize_device(ctx), PTO_OK);
    CHECK_EQ_INT(finalize_device(ctx), PTO_OK); /* nothing left to release */
    CHECK_EQ_INT(fake_record.finalize_calls, 1);
    CHECK_EQ_INT(simpler_init(ctx, 0, fix_image, sizeof fix_image, fix_image, sizeof fix_image, NULL, 0, NULL),
                 PTO_ERR_WRONG_PHASE);
    CHECK_CONTAINS(simpler_last_error(), "finalized");
    destroy_device_context(ctx);
}

TEST(init_refuses_bad_arguments)
{
    fake_reset();
    void *ctx = create_device_context();
    CHECK_EQ_INT(simpler_init(NULL, 0, fix_image, 1, fix_image, 1, NULL, 0, NULL), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(simpler_init(ctx, -1, fix_image, 1, fix_image, 1, NULL, 0, NULL), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(simpler_init(ctx, 0, NULL, 1, fix_image, 1, NULL, 0, NULL), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "AICPU image is NULL");
    CHECK_EQ_INT(simpler_init(ctx, 0, fix_image, 1, fix_image, 0, NULL, 0, NULL), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "AICore image is empty");
    CallConfig bad = { .block_dim = -4 };
    CHECK_EQ_INT(simpler_init(ctx, 0, fix_image, 1, fix_image, 1, NULL, 0, &bad), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "prewarm CallConfig.block_dim");
    CHECK_EQ_INT(fake_record.init_calls, 0);
    destroy_device_context(ctx);
}

TEST(registry_and_prepare_are_refused_before_init)
{
    fake_reset();
    void *ctx = create_device_context();
    FakeCallable c = { 0 };
    CHECK_EQ_INT(simpler_register_callable(ctx, 0, &c), PTO_ERR_WRONG_PHASE);
    CHECK_CONTAINS(simpler_last_error(), "not initialized");
    CHECK_EQ_INT(simpler_unregister_callable(ctx, 0), PTO_ERR_WRONG_PHASE);
    void *s = fix_new_storage();
    ChipStorageTaskArgs *args = aligned_alloc(64, sizeof *args);
    memset(args, 0, sizeof *args);
    CallConfig cfg = { 0 };
    NativeRunDescriptor d = { .run_epoch = 3 };
    CHECK_EQ_INT(simpler_prepare_run(ctx, s, 0, args, &cfg, &d), PTO_ERR_WRONG_PHASE);
    CHECK_CONTAINS(simpler_last_error(), "simpler_init");
    CHECK(fix_tag(s) == 0);
    CHECK_EQ_INT(finalize_device(ctx), PTO_OK);
    destroy_device_context(ctx);
    free(args);
    free(s);
}

TEST(register_replaces_only_after_the_new_callable_succeeded)
{
    Fixture f;
    fix_setup(&f);
    CHECK_EQ_INT(fake_record.live_callables, 1);
    FakeCallable bad = { .register_fail_code = PTO_ERR_BAD_CALLABLE };
    CHECK_EQ_INT(simpler_register_callable(f.ctx, FIX_CALLABLE_ID, &bad), PTO_ERR_BAD_CALLABLE);
    CHECK_CONTAINS(simpler_last_error(), "fake callable refused");
    CHECK_EQ_INT(fake_record.release_calls, 0);
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK); /* the old one is still registered */
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);

    FakeCallable good = { .tag = 2 };
    CHECK_EQ_INT(simpler_register_callable(f.ctx, FIX_CALLABLE_ID, &good), PTO_OK);
    CHECK_EQ_INT(fake_record.release_calls, 1); /* the replaced one was released */
    CHECK_EQ_INT(fake_record.live_callables, 1);

    CHECK_EQ_INT(simpler_unregister_callable(f.ctx, 33), PTO_OK); /* unknown id */
    CHECK_EQ_INT(fake_record.release_calls, 1);
    CHECK_EQ_INT(simpler_register_callable(f.ctx, 64, &good), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(simpler_register_callable(f.ctx, -1, &good), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(simpler_register_callable(f.ctx, 1, NULL), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(simpler_unregister_callable(f.ctx, 64), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(simpler_register_callable(f.ctx, 63, &good), PTO_OK);
    CHECK_EQ_INT(fake_record.live_callables, 2);
    fix_teardown(&f);
    CHECK_EQ_INT(fake_record.live_callables, 0); /* finalize_device releases every callable */
}

/* Registry changes, finalize_device and destroy_device_context while a run is
 * outstanding (prepared, or running) are refused and change nothing. */
static void check_refused_while_outstanding(Fixture *f)
{
    CHECK_EQ_INT(simpler_register_callable(f->ctx, 9, &f->callable), PTO_ERR_BUSY);
    CHECK_CONTAINS(simpler_last_error(), "outstanding");
    CHECK_EQ_INT(simpler_unregister_callable(f->ctx, FIX_CALLABLE_ID), PTO_ERR_BUSY);
    CHECK_EQ_INT(simpler_unregister_callable(f->ctx, 9), PTO_ERR_BUSY);
    CHECK_EQ_INT(finalize_device(f->ctx), PTO_ERR_BUSY);
    CHECK_CONTAINS(simpler_last_error(), "finalize_device: 1 native run(s) outstanding");
    destroy_device_context(f->ctx);
    CHECK_CONTAINS(simpler_last_error(), "destroy_device_context (the context is left alive)");
    CHECK_EQ_INT(fake_record.finalize_calls, 0);
    CHECK_EQ_INT(fake_record.release_calls, 0);
}

TEST(registry_and_teardown_are_refused_while_a_run_is_outstanding)
{
    Fixture f;
    fix_setup(&f);
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    check_refused_while_outstanding(&f);          /* prepared */
    fake_hold_drain();
    CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[0]), PTO_OK);
    check_refused_while_outstanding(&f);          /* running */
    fake_release_drain();
    CHECK_EQ_INT(simpler_wait_run(f.ctx, f.storage[0]), PTO_OK);
    check_refused_while_outstanding(&f);          /* complete, not finalized */
    /* the context survived every refusal */
    CHECK_EQ_INT(simpler_poll_run(f.ctx, f.storage[0]), SIMPLER_NATIVE_RUN_POLL_COMPLETE);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
    CHECK_EQ_INT(simpler_register_callable(f.ctx, 9, &f.callable), PTO_OK);
    fix_teardown(&f);
}

TEST(destroy_finalizes_an_initialized_context)
{
    fake_reset();
    void *ctx = create_device_context();
    CHECK_EQ_INT(simpler_init(ctx, 0, fix_image, sizeof fix_image, fix_image, sizeof fix_image, NULL, 0, NULL), PTO_OK);
    FakeCallable c = { 0 };
    CHECK_EQ_INT(simpler_register_callable(ctx, 0, &c), PTO_OK);
    destroy_device_context(ctx);
    CHECK(strcmp(simpler_last_error(), "") == 0);
    CHECK_EQ_INT(fake_record.finalize_calls, 1);
    CHECK_EQ_INT(fake_record.live_callables, 0);
    destroy_device_context(NULL);
}

TEST(queries_forward_to_the_runner)
{
    Fixture f;
    fix_setup(&f);
    CHECK_EQ_INT(get_arena_bank_gm_heap_base_ctx(f.ctx, 1), 0x2000);
    CHECK_EQ_INT(get_arena_bank_gm_heap_base_ctx(f.ctx, 2), 0);
    CHECK_CONTAINS(simpler_last_error(), "bank 2");
    CHECK_EQ_INT(get_retained_temp_addr_ctx(f.ctx, 0), 0x2000);
    CHECK_EQ_INT(get_retained_temp_addr_ctx(f.ctx, 2), 0);
    CHECK_EQ_INT(get_aicpu_dlopen_count(f.ctx), 3);
    CHECK_EQ_INT(get_run_stream_set_create_count(f.ctx), 5);
    CHECK_EQ_INT(get_host_dlopen_count(f.ctx), 4);
    CHECK_EQ_INT(get_host_dlopen_count(NULL), 0);
    CHECK_EQ_INT(get_aicpu_dlopen_count(NULL), 0);
    CHECK_EQ_INT(get_arena_bank_gm_heap_base_ctx(NULL, 0), 0);
    fix_teardown(&f);
}

TEST(executor_threads_are_bounded_by_depth_and_joined_at_finalize)
{
    fake_reset();
    CHECK_EQ_INT(settled_executor_count(0), 0);
    void *ctx = create_device_context();
    CHECK_EQ_INT(executor_count(), 0);           /* nothing runs before init */
    CHECK_EQ_INT(simpler_init(ctx, 0, fix_image, sizeof fix_image, fix_image, sizeof fix_image, NULL, 0, NULL), PTO_OK);
    CHECK_EQ_INT(executor_count(), 2);           /* depth 2 */
    CHECK_EQ_INT(finalize_device(ctx), PTO_OK);
    CHECK_EQ_INT(settled_executor_count(0), 0);  /* stopped and joined */
    destroy_device_context(ctx);

    fake_script.pipeline_depth = 1;
    ctx = create_device_context();
    CHECK_EQ_INT(simpler_init(ctx, 0, fix_image, sizeof fix_image, fix_image, sizeof fix_image, NULL, 0, NULL), PTO_OK);
    CHECK_EQ_INT(executor_count(), 1);
    destroy_device_context(ctx);                 /* finalizes, joins */
    CHECK_EQ_INT(settled_executor_count(0), 0);
}

TEST(no_thread_per_run)
{
    Fixture f;
    fix_setup(&f);
    CHECK_EQ_INT(settled_executor_count(2), 2);
    int before = thread_count(); /* no thread of this test is exiting: nothing to settle */
    for (int i = 0; i < 20; i++) {
        fake_hold_drain();
        CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
        CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[0]), PTO_OK);
        fake_await_drain_blocked();
        CHECK_EQ_INT(thread_count(), before);    /* the run executes on a persistent thread */
        fake_release_drain();
        CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
    }
    fix_teardown(&f);
}

/* A CPU-use bound, not a speed assertion: parked executors burn nothing. */
TEST(idle_device_context_burns_no_cpu)
{
    Fixture f;
    fix_setup(&f);
    for (int i = 0; i < 5; i++) { /* executors have run jobs and parked again */
        CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
        CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[0]), PTO_OK);
        CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
    }
    double cpu0 = process_cpu_seconds();
    sleep_ms(200);
    double used = process_cpu_seconds() - cpu0;
    CHECK(used < 0.2 * 0.10);
    fix_teardown(&f);
}

/* The launching thread blocks on the launch signal, parked: a launch held
 * before the marker for ~200 ms costs a small fraction of that in CPU. */
TEST(blocked_launch_burns_no_cpu)
{
    Fixture f;
    fix_setup(&f);
    fake_hold_enqueue();
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    PhaseCall launch;
    phase_call_start(&launch, simpler_launch_run, f.ctx, f.storage[0]);
    fake_await_enqueue_blocked();
    double cpu0 = process_cpu_seconds();
    sleep_ms(200);
    double used = process_cpu_seconds() - cpu0;
    CHECK(used < 0.2 * 0.25);
    fake_release_enqueue();
    CHECK_EQ_INT(phase_call_join(&launch), PTO_OK);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
    fix_teardown(&f);
}
