/* Whole runs through the exported functions: phases, results, acceptance and
 * messages, with the fake platform holding the run where the test needs it. */
#include "fixture.h"
#include "util/spin_wait.h"

static const NativeRunReport *report_of(const void *storage)
{
    return (const NativeRunReport *)((const uint8_t *)storage + PTO_NATIVE_RUN_REPORT_OFFSET);
}

TEST(full_run_prepare_launch_poll_wait_finalize)
{
    Fixture f;
    fix_setup(&f);
    fake_hold_drain();

    CHECK_EQ_INT(fix_prepare(&f, 0, 1, 1), PTO_OK);
    CHECK(fix_tag(f.storage[0]) == PTO_NATIVE_RUN_STORAGE_MAGIC);
    CHECK_EQ_INT(fix_word(&f, 0), -1);          /* prepare never touches the word */
    CHECK_EQ_INT(fake_record.bind_calls, 1);
    CHECK_EQ_INT(fake_record.bind_retained_slot, 1); /* the run's HostApi carries its slot */
    CHECK_EQ_INT(fake_record.bind_arena_bank, 1);    /* and its bank */
    CHECK_EQ_INT(fake_record.enqueue_calls, 0);
    const NativeRunReport *r = report_of(f.storage[0]);
    CHECK(r->launched_ctx == 0); /* the poll's words: nothing to answer before launch */
    CHECK_EQ_INT(r->device_ended, 0);

    CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[0]), PTO_OK);
    CHECK_EQ_INT(fix_word(&f, 0), 17);          /* written before launch returned */
    CHECK(r->launched_ctx == (uint64_t)(uintptr_t)f.ctx);
    CHECK_EQ_INT(fake_record.enqueue_slot, 1);
    CHECK(fake_record.enqueue_args_dev == FAKE_ARGS_DEV); /* bind's DeviceLaunch reaches enqueue */

    fake_await_drain_blocked();
    CHECK_EQ_INT(simpler_poll_run(f.ctx, f.storage[0]), SIMPLER_NATIVE_RUN_POLL_NOT_READY);
    fake_set_device_ended(1);                    /* the device's part ended, the drain has not */
    CHECK_EQ_INT(simpler_poll_run(f.ctx, f.storage[0]), SIMPLER_NATIVE_RUN_POLL_NOT_READY);
    CHECK(fake_record.query_calls >= 2);
    CHECK_EQ_INT(r->device_ended, 0); /* as the poll: the run ends with its job */

    fake_release_drain();
    CHECK_EQ_INT(simpler_wait_run(f.ctx, f.storage[0]), PTO_OK);
    CHECK_EQ_INT(r->device_ended, 1);
    CHECK_EQ_INT(simpler_poll_run(f.ctx, f.storage[0]), SIMPLER_NATIVE_RUN_POLL_COMPLETE);
    CHECK_EQ_INT(simpler_wait_run(f.ctx, f.storage[0]), PTO_OK); /* wait releases nothing */
    CHECK_EQ_INT(fake_record.collect_calls, 0);

    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
    CHECK_EQ_INT(fake_record.collect_calls, 1);
    CHECK_EQ_INT(fake_record.unbind_calls, 1);
    CHECK_EQ_INT(fake_record.collect_execution_rc, PTO_OK);
    CHECK(fix_tag(f.storage[0]) == 0);
    CHECK_EQ_INT(fix_word(&f, 0), 17);
    CHECK(r->launched_ctx == 0); /* from finalize on, a poll is the library's */
    CHECK_EQ_INT(fix_prepare(&f, 0, 1, 1), PTO_OK);
    CHECK_EQ_INT(r->device_ended, 0); /* the next prepare empties it */
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
    fix_teardown(&f);
}

TEST(finalize_writes_the_report_that_prepare_emptied)
{
    Fixture f;
    fix_setup(&f);
    fake_script.device_bytes = 4096;
    /* what a previous run left: a prepare that builds the run empties it */
    memset((uint8_t *)f.storage[0] + PTO_NATIVE_RUN_REPORT_OFFSET, 0xAB, sizeof(NativeRunReport));
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    CHECK(report_of(f.storage[0])->execution_end_ns == 0);
    CHECK(report_of(f.storage[0])->peak_device_memory == 0);
    CHECK_EQ_INT(report_of(f.storage[0])->output_file_count, 0);

    fake_hold_drain();
    CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[0]), PTO_OK);
    fake_await_drain_blocked();
    uint64_t before_end = pto_monotonic_ns(); /* the device has not finished: the drain is held */
    fake_release_drain();
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
    uint64_t after = pto_monotonic_ns();
    CHECK(fix_tag(f.storage[0]) == 0);
    const NativeRunReport *r = report_of(f.storage[0]);
    CHECK(r->execution_end_ns == fake_record.device_end_ns);
    CHECK(r->execution_end_ns >= before_end && r->execution_end_ns <= after);
    CHECK(r->peak_device_memory == 4096);
    CHECK_EQ_INT(r->output_file_count, 0);

    /* never launched: the device never finished it; its bound bytes still count */
    fake_record.device_end_ns = 0;
    fake_script.device_bytes = 512;
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
    CHECK(report_of(f.storage[0])->execution_end_ns == 0);
    CHECK(report_of(f.storage[0])->peak_device_memory == 512);

    /* the blocking composition writes it too */
    NativeRunDescriptor d = fix_desc(&f, 1, 0, 0);
    fake_script.device_bytes = 768;
    uint64_t start = pto_monotonic_ns();
    CHECK_EQ_INT(simpler_run(f.ctx, f.storage[1], FIX_CALLABLE_ID, f.args, &f.cfg, &d), PTO_OK);
    CHECK(report_of(f.storage[1])->execution_end_ns >= start);
    CHECK(report_of(f.storage[1])->execution_end_ns <= pto_monotonic_ns());
    CHECK(report_of(f.storage[1])->peak_device_memory == 768);
    fix_teardown(&f);
}

TEST(storage_is_reusable_after_finalize_without_rezeroing)
{
    Fixture f;
    fix_setup(&f);
    for (int round = 0; round < 50; round++) {
        CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
        CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[0]), PTO_OK);
        CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
        CHECK(fix_tag(f.storage[0]) == 0);
    }
    CHECK_EQ_INT(fake_record.enqueue_calls, 50);
    CHECK_EQ_INT(fake_record.collect_calls, 50);
    fix_teardown(&f);
}

TEST(failure_before_marker_never_writes_the_acceptance_word)
{
    Fixture f;
    fix_setup(&f);
    fake_script.enqueue_mode = FAKE_ENQUEUE_FAIL_BEFORE_MARKER;
    fake_script.enqueue_fail_code = PTO_ERR_DEVICE;

    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[0]), PTO_ERR_DEVICE);
    /* the executor thread's message reaches the launching thread, with the run */
    CHECK_CONTAINS(simpler_last_error(), "fake enqueue refused before the marker");
    CHECK_CONTAINS(simpler_last_error(), "run_id=100 slot=0 generation=7 dispatch_id=40 run_epoch=1000");
    CHECK_EQ_INT(fix_word(&f, 0), -1);
    CHECK_EQ_INT(fake_record.drain_calls, 0);   /* no drain after a failed enqueue */

    CHECK_EQ_INT(simpler_poll_run(f.ctx, f.storage[0]), SIMPLER_NATIVE_RUN_POLL_COMPLETE);
    CHECK_EQ_INT(simpler_wait_run(f.ctx, f.storage[0]), PTO_ERR_DEVICE);
    CHECK_CONTAINS(simpler_last_error(), "fake enqueue refused");
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_ERR_DEVICE);
    CHECK_CONTAINS(simpler_last_error(), "fake enqueue refused");
    CHECK_EQ_INT(fake_record.collect_calls, 1);
    CHECK_EQ_INT(fake_record.collect_execution_rc, PTO_ERR_DEVICE);
    CHECK_EQ_INT(fix_word(&f, 0), -1);          /* never, not even later */
    CHECK(fix_tag(f.storage[0]) == 0);
    fix_teardown(&f);
}

TEST(device_fault_after_marker_is_reported_by_wait_and_finalize)
{
    Fixture f;
    fix_setup(&f);
    fake_hold_drain();
    fake_script.drain_result = PTO_ERR_KERNEL_FAULT;

    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[0]), PTO_OK);
    CHECK_EQ_INT(fix_word(&f, 0), 17);
    fake_release_drain();
    CHECK_EQ_INT(simpler_wait_run(f.ctx, f.storage[0]), PTO_ERR_KERNEL_FAULT);
    CHECK_CONTAINS(simpler_last_error(), "fake device fault in task 7");
    CHECK_EQ_INT(simpler_poll_run(f.ctx, f.storage[0]), SIMPLER_NATIVE_RUN_POLL_COMPLETE);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_ERR_KERNEL_FAULT);
    CHECK_CONTAINS(simpler_last_error(), "fake device fault in task 7");
    CHECK_EQ_INT(fake_record.collect_execution_rc, PTO_ERR_KERNEL_FAULT);
    fix_teardown(&f);
}

TEST(validation_error_wins_over_the_execution_result)
{
    Fixture f;
    fix_setup(&f);
    fake_script.drain_result = PTO_ERR_KERNEL_FAULT;
    fake_script.collect_fail_code = PTO_ERR_ORCHESTRATION;
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    int launch_rc = simpler_launch_run(f.ctx, f.storage[0]);
    CHECK(launch_rc == PTO_OK || launch_rc == PTO_ERR_KERNEL_FAULT); /* may end before launch looks */
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_ERR_ORCHESTRATION);
    CHECK_CONTAINS(simpler_last_error(), "fake collect found a device status error");
    CHECK(fix_tag(f.storage[0]) == 0);
    fix_teardown(&f);
}

TEST(finalize_of_a_never_launched_run_unbinds_without_collecting)
{
    Fixture f;
    fix_setup(&f);
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
    CHECK_EQ_INT(fake_record.collect_calls, 0); /* no results: nothing is copied back */
    CHECK_EQ_INT(fake_record.unbind_calls, 1);
    CHECK_EQ_INT(fake_record.enqueue_calls, 0);
    CHECK_EQ_INT(fix_word(&f, 0), -1);
    CHECK(fix_tag(f.storage[0]) == 0);
    /* reservation gone: the registry may change again */
    CHECK_EQ_INT(simpler_unregister_callable(f.ctx, FIX_CALLABLE_ID), PTO_OK);
    fix_teardown(&f);
}

TEST(double_finalize_is_bad_storage)
{
    Fixture f;
    fix_setup(&f);
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[0]), PTO_OK);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_ERR_BAD_STORAGE);
    CHECK_CONTAINS(simpler_last_error(), "does not hold a prepared run");
    CHECK_EQ_INT(fake_record.collect_calls, 1);
    fix_teardown(&f);
}

TEST(phase_rules_prepared_run)
{
    Fixture f;
    fix_setup(&f);
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    CHECK_EQ_INT(simpler_poll_run(f.ctx, f.storage[0]), PTO_ERR_WRONG_PHASE);
    CHECK_CONTAINS(simpler_last_error(), "simpler_poll_run (run_id=100 slot=0");
    CHECK_CONTAINS(simpler_last_error(), "run_epoch=1000");
    CHECK_CONTAINS(simpler_last_error(), "Prepared");
    CHECK_EQ_INT(simpler_wait_run(f.ctx, f.storage[0]), PTO_ERR_WRONG_PHASE);
    CHECK_CONTAINS(simpler_last_error(), "simpler_wait_run");
    CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[0]), PTO_OK);
    CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[0]), PTO_ERR_WRONG_PHASE); /* launched already */
    CHECK_CONTAINS(simpler_last_error(), "only a Prepared run can be launched");
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
    fix_teardown(&f);
}

TEST(phase_rules_while_launching)
{
    Fixture f;
    fix_setup(&f);
    fake_hold_enqueue();
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    PhaseCall launch;
    phase_call_start(&launch, simpler_launch_run, f.ctx, f.storage[0]);
    fake_await_enqueue_blocked();               /* the launch is in flight, before the marker */
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_ERR_WRONG_PHASE);
    CHECK_CONTAINS(simpler_last_error(), "launch is still in flight");
    CHECK_EQ_INT(simpler_wait_run(f.ctx, f.storage[0]), PTO_ERR_WRONG_PHASE);
    CHECK_EQ_INT(simpler_poll_run(f.ctx, f.storage[0]), PTO_ERR_WRONG_PHASE);
    CHECK_EQ_INT(fix_word(&f, 0), -1);
    fake_release_enqueue();
    CHECK_EQ_INT(phase_call_join(&launch), PTO_OK);
    CHECK_EQ_INT(fix_word(&f, 0), 17);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
    fix_teardown(&f);
}

TEST(every_phase_driven_from_a_thread_other_than_the_preparing_one)
{
    Fixture f;
    fix_setup(&f);
    fake_hold_drain();
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    PhaseCall c;
    CHECK_EQ_INT(on_other_thread(&c, simpler_launch_run, f.ctx, f.storage[0]), PTO_OK);
    CHECK_EQ_INT(fix_word(&f, 0), 17);
    CHECK_EQ_INT(on_other_thread(&c, simpler_poll_run, f.ctx, f.storage[0]), SIMPLER_NATIVE_RUN_POLL_NOT_READY);
    fake_release_drain();
    CHECK_EQ_INT(on_other_thread(&c, simpler_wait_run, f.ctx, f.storage[0]), PTO_OK);
    CHECK_EQ_INT(on_other_thread(&c, simpler_poll_run, f.ctx, f.storage[0]), SIMPLER_NATIVE_RUN_POLL_COMPLETE);
    CHECK_EQ_INT(on_other_thread(&c, simpler_finalize_run, f.ctx, f.storage[0]), PTO_OK);
    CHECK(fix_tag(f.storage[0]) == 0);
    CHECK_EQ_INT(on_other_thread(&c, simpler_finalize_run, f.ctx, f.storage[0]), PTO_ERR_BAD_STORAGE);
    CHECK_CONTAINS(c.message, "does not hold a prepared run");
    fix_teardown(&f);
}

TEST(failing_run_message_reaches_a_waiter_on_another_thread)
{
    Fixture f;
    fix_setup(&f);
    fake_hold_drain();
    fake_script.drain_result = PTO_ERR_TIMEOUT;
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[0]), PTO_OK);
    PhaseCall wait;
    phase_call_start(&wait, simpler_wait_run, f.ctx, f.storage[0]);
    fake_release_drain();
    CHECK_EQ_INT(phase_call_join(&wait), PTO_ERR_TIMEOUT);
    CHECK_CONTAINS(wait.message, "fake device fault in task 7");
    CHECK_CONTAINS(wait.message, "run_epoch=1000");
    PhaseCall fin;
    CHECK_EQ_INT(on_other_thread(&fin, simpler_finalize_run, f.ctx, f.storage[0]), PTO_ERR_TIMEOUT);
    CHECK_CONTAINS(fin.message, "fake device fault in task 7");
    fix_teardown(&f);
}

TEST(device_query_error_is_reported_by_poll)
{
    Fixture f;
    fix_setup(&f);
    fake_hold_drain();
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[0]), PTO_OK);
    fake_await_drain_blocked();
    fake_script.query_error = PTO_ERR_DEVICE;
    CHECK_EQ_INT(simpler_poll_run(f.ctx, f.storage[0]), PTO_ERR_DEVICE);
    CHECK_CONTAINS(simpler_last_error(), "fake device query failed");
    CHECK_CONTAINS(simpler_last_error(), "run_epoch=1000");
    fake_script.query_error = 0;
    fake_release_drain();
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
    fix_teardown(&f);
}

TEST(simpler_run_composes_and_always_finalizes)
{
    Fixture f;
    fix_setup(&f);
    NativeRunDescriptor d = fix_desc(&f, 0, 0, 0);
    CHECK_EQ_INT(simpler_run(f.ctx, f.storage[0], FIX_CALLABLE_ID, f.args, &f.cfg, &d), PTO_OK);
    CHECK_EQ_INT(fix_word(&f, 0), 17);
    CHECK(fix_tag(f.storage[0]) == 0);
    CHECK_EQ_INT(fake_record.collect_calls, 1);
    CHECK_EQ_INT(fake_record.unbind_calls, 1);

    /* a failure before the marker: the first error wins, the storage is empty */
    fake_script.enqueue_mode = FAKE_ENQUEUE_FAIL_BEFORE_MARKER;
    fake_script.enqueue_fail_code = PTO_ERR_OUT_OF_MEMORY;
    d = fix_desc(&f, 1, 0, 0);
    CHECK_EQ_INT(simpler_run(f.ctx, f.storage[1], FIX_CALLABLE_ID, f.args, &f.cfg, &d), PTO_ERR_OUT_OF_MEMORY);
    CHECK_CONTAINS(simpler_last_error(), "fake enqueue refused");
    CHECK_EQ_INT(fix_word(&f, 1), -1);
    CHECK(fix_tag(f.storage[1]) == 0);
    CHECK_EQ_INT(fake_record.collect_calls, 2);

    /* a failed prepare: nothing to finalize */
    fake_script.enqueue_mode = FAKE_ENQUEUE_PUBLISH;
    fake_script.bind_fail_code = PTO_ERR_BAD_CALLABLE;
    CHECK_EQ_INT(simpler_run(f.ctx, f.storage[1], FIX_CALLABLE_ID, f.args, &f.cfg, &d), PTO_ERR_BAD_CALLABLE);
    CHECK_EQ_INT(fake_record.collect_calls, 2);
    CHECK(fix_tag(f.storage[1]) == 0);
    fix_teardown(&f);
}

TEST(a_run_without_acceptance_sink_runs)
{
    Fixture f;
    fix_setup(&f);
    NativeRunDescriptor d = fix_desc(&f, 0, 0, 0);
    d.accepted_state = NULL;
    CHECK_EQ_INT(simpler_prepare_run(f.ctx, f.storage[0], FIX_CALLABLE_ID, f.args, &f.cfg, &d), PTO_OK);
    CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[0]), PTO_OK);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
    CHECK_EQ_INT(fix_word(&f, 0), -1);
    fix_teardown(&f);
}

TEST(poisoned_runner_refuses_prepare_and_launch)
{
    Fixture f;
    fix_setup(&f);
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    fake_script.poisoned = 1;
    CHECK_EQ_INT(fix_prepare(&f, 1, 1, 1), PTO_ERR_POISONED);
    CHECK(fix_tag(f.storage[1]) == 0);
    CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[0]), PTO_ERR_POISONED);
    CHECK_CONTAINS(simpler_last_error(), "unrecovered device error");
    CHECK_EQ_INT(fix_word(&f, 0), -1);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK); /* still Prepared: abandoned */
    CHECK_EQ_INT(fake_record.collect_calls, 0);
    CHECK_EQ_INT(fake_record.unbind_calls, 1);
    fake_script.poisoned = 0;
    fix_teardown(&f);
}
