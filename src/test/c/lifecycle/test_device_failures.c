/* Device failures (PTO_ERR_DEVICE, PTO_ERR_TIMEOUT; services/device_failure.h)
 * through the exported functions: every one a call returns reaches the
 * platform's runner_note_failure (the one place an onboard runner poisons),
 * whoever met it, and no other code does; a device failure met on the way
 * outranks the call's other outcome, so the code alone tells. */
#include "fixture.h"

TEST(every_device_failure_a_call_returns_is_noted_and_no_other_code_is)
{
    Fixture f;
    fix_setup(&f);
    /* the platform's: a submit refused before the marker, reported by three calls */
    fake_script.enqueue_mode = FAKE_ENQUEUE_FAIL_BEFORE_MARKER;
    fake_script.enqueue_fail_code = PTO_ERR_DEVICE;
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[0]), PTO_ERR_DEVICE);
    CHECK_EQ_INT(fake_record.noted, 1);
    CHECK_EQ_INT(simpler_wait_run(f.ctx, f.storage[0]), PTO_ERR_DEVICE);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_ERR_DEVICE);
    CHECK_EQ_INT(fake_record.noted, 3);
    CHECK_EQ_INT(fake_record.last_noted, PTO_ERR_DEVICE);

    /* the device's: a timeout after the marker */
    fake_script.enqueue_mode = FAKE_ENQUEUE_PUBLISH;
    fake_script.drain_result = PTO_ERR_TIMEOUT;
    NativeRunDescriptor d = fix_desc(&f, 1, 0, 0);
    CHECK_EQ_INT(simpler_run(f.ctx, f.storage[1], FIX_CALLABLE_ID, f.args, &f.cfg, &d), PTO_ERR_TIMEOUT);
    CHECK_EQ_INT(fake_record.noted, 4);
    CHECK_EQ_INT(fake_record.last_noted, PTO_ERR_TIMEOUT);

    /* the runtime's: collect finds the device's output malformed; bind fails */
    fake_script.drain_result = 0;
    fake_script.collect_fail_code = PTO_ERR_DEVICE;
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[0]), PTO_OK);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_ERR_DEVICE);
    CHECK_EQ_INT(fake_record.noted, 5);
    fake_script.collect_fail_code = 0;
    fake_script.bind_fail_code = PTO_ERR_DEVICE;
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_ERR_DEVICE);
    CHECK_EQ_INT(fake_record.noted, 6);

    /* the registration's */
    FakeCallable refused = { .register_fail_code = PTO_ERR_DEVICE };
    CHECK_EQ_INT(simpler_register_callable(f.ctx, 9, &refused), PTO_ERR_DEVICE);
    CHECK_EQ_INT(fake_record.noted, 7);

    /* other failures are not device failures */
    fake_script.bind_fail_code = PTO_ERR_BAD_CALLABLE;
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_ERR_BAD_CALLABLE);
    fake_script.bind_fail_code = 0;
    fake_script.drain_result = PTO_ERR_KERNEL_FAULT;
    d = fix_desc(&f, 1, 0, 0);
    CHECK_EQ_INT(simpler_run(f.ctx, f.storage[1], FIX_CALLABLE_ID, f.args, &f.cfg, &d), PTO_ERR_KERNEL_FAULT);
    refused.register_fail_code = PTO_ERR_OUT_OF_MEMORY;
    CHECK_EQ_INT(simpler_register_callable(f.ctx, 9, &refused), PTO_ERR_OUT_OF_MEMORY);
    CHECK_EQ_INT(fake_record.noted, 7);
    fake_script.drain_result = 0;
    fix_teardown(&f);
}

TEST(a_device_failure_of_the_execution_outranks_what_collect_names)
{
    Fixture f;
    fix_setup(&f);
    /* a kernel fault or an orchestration error named from a status block the
       drain could not read: the device failure is the run's answer */
    fake_script.drain_result = PTO_ERR_DEVICE;
    fake_script.collect_fail_code = PTO_ERR_ORCHESTRATION;
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    int launched = simpler_launch_run(f.ctx, f.storage[0]);
    CHECK(launched == PTO_OK || launched == PTO_ERR_DEVICE); /* may end before launch looks */
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_ERR_DEVICE);
    CHECK_CONTAINS(simpler_last_error(), "fake device fault in task 7; besides: fake collect found");
    CHECK_CONTAINS(simpler_last_error(), "run_id=100");
    CHECK_EQ_INT(fake_record.last_noted, PTO_ERR_DEVICE);
    /* a device failure collect meets stands as it is */
    fake_script.drain_result = PTO_ERR_KERNEL_FAULT;
    fake_script.collect_fail_code = PTO_ERR_DEVICE;
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    launched = simpler_launch_run(f.ctx, f.storage[0]);
    CHECK(launched == PTO_OK || launched == PTO_ERR_KERNEL_FAULT);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_ERR_DEVICE);
    CHECK_CONTAINS(simpler_last_error(), "fake collect found a device status error");
    fake_script.drain_result = 0;
    fake_script.collect_fail_code = 0;
    fix_teardown(&f);
}

TEST(simpler_run_reports_a_device_failure_of_finalize_over_an_earlier_other_failure)
{
    Fixture f;
    fix_setup(&f);
    fake_script.drain_result = PTO_ERR_KERNEL_FAULT;
    fake_script.collect_fail_code = PTO_ERR_DEVICE;
    NativeRunDescriptor d = fix_desc(&f, 0, 0, 0);
    CHECK_EQ_INT(simpler_run(f.ctx, f.storage[0], FIX_CALLABLE_ID, f.args, &f.cfg, &d), PTO_ERR_DEVICE);
    CHECK_CONTAINS(simpler_last_error(), "fake collect found a device status error");
    CHECK_CONTAINS(simpler_last_error(), "besides: simpler_"); /* launch or wait, whichever saw the run end */
    CHECK_CONTAINS(simpler_last_error(), "fake device fault in task 7");
    /* the other way round the first error wins, as before */
    fake_script.drain_result = PTO_ERR_TIMEOUT;
    fake_script.collect_fail_code = PTO_ERR_ORCHESTRATION;
    CHECK_EQ_INT(simpler_run(f.ctx, f.storage[0], FIX_CALLABLE_ID, f.args, &f.cfg, &d), PTO_ERR_TIMEOUT);
    CHECK_CONTAINS(simpler_last_error(), "fake device fault in task 7");
    CHECK(strstr(simpler_last_error(), "besides") == NULL);
    fake_script.drain_result = 0;
    fake_script.collect_fail_code = 0;
    fix_teardown(&f);
}

TEST(releasing_a_never_launched_runs_slot_reports_its_device_failure)
{
    Fixture f;
    fix_setup(&f);
    fake_script.abandon_fail_code = PTO_ERR_DEVICE;
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_ERR_DEVICE);
    CHECK_CONTAINS(simpler_last_error(), "simpler_finalize_run (run_id=100");
    CHECK_CONTAINS(simpler_last_error(), "fake stream release failed");
    CHECK(fix_tag(f.storage[0]) == 0); /* finalized all the same */
    /* a prepare failing after the slot was readied: the release's device failure outranks */
    fake_script.bind_fail_code = PTO_ERR_BAD_CALLABLE;
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_ERR_DEVICE);
    CHECK_CONTAINS(simpler_last_error(), "simpler_prepare_run (run_id=100");
    CHECK_CONTAINS(simpler_last_error(), "fake stream release failed; besides: ");
    CHECK_CONTAINS(simpler_last_error(), "fake bind refused");
    CHECK_EQ_INT(fake_record.noted, 2);
    /* a release failing otherwise changes nothing */
    fake_script.bind_fail_code = 0;
    fake_script.abandon_fail_code = PTO_ERR_INVALID_ARGUMENT;
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
    fake_script.abandon_fail_code = 0;
    fix_teardown(&f);
}
