/* Storage rules of prepare and of every phase call, in the documented order. */
#include "fixture.h"

#include <stdint.h>

TEST(prepare_checks_arguments_in_order)
{
    Fixture f;
    fix_setup(&f);
    NativeRunDescriptor d = fix_desc(&f, 0, 0, 0);
    void *s = f.storage[0];

    CHECK_EQ_INT(simpler_prepare_run(NULL, s, FIX_CALLABLE_ID, f.args, &f.cfg, &d), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "device context is NULL");
    CHECK_EQ_INT(simpler_prepare_run(f.ctx, NULL, FIX_CALLABLE_ID, f.args, &f.cfg, &d), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "storage is NULL");
    CHECK_EQ_INT(simpler_prepare_run(f.ctx, s, FIX_CALLABLE_ID, f.args, NULL, &d), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "cfg");
    CHECK_EQ_INT(simpler_prepare_run(f.ctx, s, FIX_CALLABLE_ID, f.args, &f.cfg, NULL), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "desc");
    CHECK_EQ_INT(simpler_prepare_run(f.ctx, s, FIX_CALLABLE_ID, NULL, &f.cfg, &d), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "args is NULL");

    d.pipeline_slot = 2;
    CHECK_EQ_INT(simpler_prepare_run(f.ctx, s, FIX_CALLABLE_ID, f.args, &f.cfg, &d), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "pipeline_slot 2");
    d.pipeline_slot = 0;
    d.arena_bank = 2;
    CHECK_EQ_INT(simpler_prepare_run(f.ctx, s, FIX_CALLABLE_ID, f.args, &f.cfg, &d), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "arena_bank 2");
    d.arena_bank = 0;

    /* misaligned comes before the tag: a storage at +8 is refused even though its "tag" reads 0 */
    CHECK_EQ_INT(simpler_prepare_run(f.ctx, (char *)s + 8, FIX_CALLABLE_ID, f.args, &f.cfg, &d),
                 PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "not aligned");

    f.cfg.aicpu_thread_num = 1;
    CHECK_EQ_INT(simpler_prepare_run(f.ctx, s, FIX_CALLABLE_ID, f.args, &f.cfg, &d), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "aicpu_thread_num");
    f.cfg.aicpu_thread_num = 0;
    f.cfg.enable_trace = 1; /* a diagnostic without output_prefix */
    CHECK_EQ_INT(simpler_prepare_run(f.ctx, s, FIX_CALLABLE_ID, f.args, &f.cfg, &d), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "output_prefix");
    f.cfg.enable_trace = 0;
    f.cfg.ring_task_window[2] = 6;
    CHECK_EQ_INT(simpler_prepare_run(f.ctx, s, FIX_CALLABLE_ID, f.args, &f.cfg, &d), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "ring_task_window[2]");
    f.cfg.ring_task_window[2] = 0;

    CHECK_EQ_INT(simpler_prepare_run(f.ctx, s, 64, f.args, &f.cfg, &d), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(simpler_last_error(), "callable id 64");
    CHECK_EQ_INT(simpler_prepare_run(f.ctx, s, 6, f.args, &f.cfg, &d), PTO_ERR_NOT_REGISTERED);
    CHECK_CONTAINS(simpler_last_error(), "callable 6 is not registered");

    CHECK_EQ_INT(fake_record.bind_calls, 0);
    CHECK(fix_tag(s) == 0);
    CHECK_EQ_INT(simpler_prepare_run(f.ctx, s, FIX_CALLABLE_ID, f.args, &f.cfg, &d), PTO_OK);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, s), PTO_OK);
    fix_teardown(&f);
}

TEST(prepare_refuses_a_storage_holding_a_run_or_not_zeroed)
{
    Fixture f;
    fix_setup(&f);
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    CHECK_EQ_INT(fix_prepare(&f, 0, 1, 1), PTO_ERR_BAD_STORAGE);
    CHECK_CONTAINS(simpler_last_error(), "already holds a prepared run; finalize it first");
    CHECK(fix_tag(f.storage[0]) == PTO_NATIVE_RUN_STORAGE_MAGIC); /* the run in it is untouched */
    CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[0]), PTO_OK);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);

    memset(f.storage[1], 0xAB, 8);
    CHECK_EQ_INT(fix_prepare(&f, 1, 0, 0), PTO_ERR_BAD_STORAGE);
    CHECK_CONTAINS(simpler_last_error(), "not zero-initialized");
    CHECK(fix_tag(f.storage[1]) == 0xABABABABABABABABull); /* a refused storage is not written */
    CHECK_EQ_INT(fake_record.bind_calls, 1);
    fix_teardown(&f);
}

TEST(phase_calls_refuse_an_empty_storage)
{
    Fixture f;
    fix_setup(&f);
    PhaseFn calls[] = { simpler_launch_run, simpler_poll_run, simpler_wait_run, simpler_finalize_run };
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_INT(calls[i](f.ctx, f.storage[0]), PTO_ERR_BAD_STORAGE);
        CHECK_CONTAINS(simpler_last_error(), "does not hold a prepared run");
        CHECK_EQ_INT(calls[i](f.ctx, NULL), PTO_ERR_INVALID_ARGUMENT);
        CHECK_EQ_INT(calls[i](NULL, f.storage[0]), PTO_ERR_INVALID_ARGUMENT);
        CHECK_EQ_INT(calls[i]((char *)f.storage[0] + 8, f.storage[0]), PTO_ERR_INVALID_ARGUMENT); /* not a context */
        CHECK_EQ_INT(calls[i](f.ctx, (char *)f.storage[0] + 8), PTO_ERR_INVALID_ARGUMENT);
    }
    memset(f.storage[1], 0x11, 8);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[1]), PTO_ERR_BAD_STORAGE);
    fix_teardown(&f);
}

TEST(phase_calls_refuse_a_run_of_another_device_context)
{
    Fixture f;
    fix_setup(&f);
    void *other = create_device_context();
    CHECK_EQ_INT(simpler_init(other, 1, fix_image, sizeof fix_image, fix_image, sizeof fix_image, NULL, 0, NULL),
                 PTO_OK);
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    PhaseFn calls[] = { simpler_launch_run, simpler_poll_run, simpler_wait_run, simpler_finalize_run };
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_INT(calls[i](other, f.storage[0]), PTO_ERR_BAD_STORAGE);
        CHECK_CONTAINS(simpler_last_error(), "belongs to another device context");
        CHECK_CONTAINS(simpler_last_error(), "run_epoch=1000");
    }
    /* the run is unharmed and finishes on its own context */
    CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[0]), PTO_OK);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
    CHECK_EQ_INT(finalize_device(other), PTO_OK);
    destroy_device_context(other);
    fix_teardown(&f);
}

TEST(failed_bind_leaves_tag_0_and_no_reservation)
{
    Fixture f;
    fix_setup(&f);
    fake_script.bind_fail_code = PTO_ERR_BAD_CALLABLE;
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_ERR_BAD_CALLABLE);
    CHECK_CONTAINS(simpler_last_error(), "fake bind refused");
    CHECK_CONTAINS(simpler_last_error(), "simpler_prepare_run (run_id=100 slot=0");
    CHECK(fix_tag(f.storage[0]) == 0);
    CHECK_EQ_INT(fix_word(&f, 0), -1);
    /* no reservation is left behind: registry changes are allowed */
    CHECK_EQ_INT(simpler_register_callable(f.ctx, 9, &f.callable), PTO_OK);
    CHECK_EQ_INT(simpler_unregister_callable(f.ctx, 9), PTO_OK);
    /* and the storage is reusable without re-zeroing */
    fake_script.bind_fail_code = 0;
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
    fix_teardown(&f);
}

TEST(refused_admission_leaves_tag_0)
{
    Fixture f;
    fix_setup(&f);
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    CHECK_EQ_INT(fix_prepare(&f, 1, 0, 1), PTO_ERR_BUSY); /* same slot */
    CHECK(fix_tag(f.storage[1]) == 0);
    CHECK_EQ_INT(fake_record.bind_calls, 1);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
    CHECK_EQ_INT(fix_prepare(&f, 1, 0, 1), PTO_OK);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[1]), PTO_OK);
    fix_teardown(&f);
}

TEST(sizes_and_alignment_describe_the_run_storage)
{
    CHECK(get_runtime_size() >= 8);
    size_t a = get_runtime_alignment();
    CHECK(a >= 8 && (a & (a - 1)) == 0);
    CHECK(get_runtime_size() % a == 0);
}
