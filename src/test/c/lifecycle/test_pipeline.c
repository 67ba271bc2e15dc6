/* Pipelining through the exported functions: the execution claim, successor
 * admission and its refusals (docs/lifecycle.md, section 6). The fake runtime is
 * hbg-like by default: depth 2, concurrent prepare supported. */
#include "fixture.h"

#include <time.h>

/* Prepares run 0 (slot 0, bank 0), launches it and holds it in the drain. */
static void start_predecessor(Fixture *f)
{
    fake_hold_drain();
    CHECK_EQ_INT(fix_prepare(f, 0, 0, 0), PTO_OK);
    CHECK_EQ_INT(simpler_launch_run(f->ctx, f->storage[0]), PTO_OK);
    fake_await_drain_blocked();
}

static void finish_predecessor(Fixture *f)
{
    fake_release_drain();
    CHECK_EQ_INT(simpler_finalize_run(f->ctx, f->storage[0]), PTO_OK);
}

TEST(successor_is_prepared_while_the_predecessor_runs_and_launches_after_it)
{
    Fixture f;
    fix_setup(&f);
    start_predecessor(&f);

    CHECK_EQ_INT(fix_prepare(&f, 1, 1, 1), PTO_OK);
    CHECK_EQ_INT(fake_record.bind_retained_slot, 1);
    CHECK_EQ_INT(fake_record.bind_arena_bank, 1);
    CHECK_EQ_INT(fix_word(&f, 1), -1);

    CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[1]), PTO_ERR_BUSY);
    CHECK_CONTAINS(simpler_last_error(), "execution claim is held by run (run_id=100 slot=0 run_epoch=1000)");
    CHECK_CONTAINS(simpler_last_error(), "simpler_launch_run (run_id=101 slot=1");
    CHECK_EQ_INT(fix_word(&f, 1), -1);
    CHECK_EQ_INT(simpler_poll_run(f.ctx, f.storage[1]), PTO_ERR_WRONG_PHASE); /* still Prepared */
    CHECK_EQ_INT(fake_record.enqueue_calls, 1);

    finish_predecessor(&f);
    CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[1]), PTO_OK); /* the same token, later */
    CHECK_EQ_INT(fix_word(&f, 1), 18);
    CHECK_EQ_INT(fake_record.enqueue_slot, 1);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[1]), PTO_OK);
    fix_teardown(&f);
}

TEST(the_device_context_owns_one_runtime_scratch_per_slot_and_lends_each_slot_its_own)
{
    Fixture f;
    fix_setup(&f);
    CHECK_EQ_INT(fake_record.live_scratches, PTO_PIPELINE_MAX_DEPTH); /* from simpler_init, none per callable */
    start_predecessor(&f);
    CHECK_EQ_INT(fix_prepare(&f, 1, 1, 1), PTO_OK); /* the successor, while the predecessor runs */
    const RuntimeSlotScratch *s0 = fake_record.bind_scratch[0], *s1 = fake_record.bind_scratch[1];
    CHECK(s0 != NULL && s1 != NULL);
    CHECK(s0 != s1); /* the runs share no runtime state */
    finish_predecessor(&f);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[1]), PTO_OK); /* never launched */
    CHECK_EQ_INT(fake_record.unbind_calls, 2);
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK); /* slot 0 again: its own scratch again, reused */
    CHECK(fake_record.bind_scratch[0] == s0);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
    CHECK_EQ_INT(fake_record.live_scratches, PTO_PIPELINE_MAX_DEPTH); /* no run allocated one */
    fix_teardown(&f);
    CHECK_EQ_INT(fake_record.live_scratches, 0); /* finalize_device freed them */
}

TEST(successor_behind_a_prepared_only_run_is_refused)
{
    Fixture f;
    fix_setup(&f);
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    CHECK_EQ_INT(fix_prepare(&f, 1, 1, 1), PTO_ERR_BUSY);
    CHECK_CONTAINS(simpler_last_error(), "requires an active predecessor");
    CHECK(fix_tag(f.storage[1]) == 0);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
    fix_teardown(&f);
}

TEST(successor_on_the_same_slot_or_bank_is_refused)
{
    Fixture f;
    fix_setup(&f);
    start_predecessor(&f);
    CHECK_EQ_INT(fix_prepare(&f, 1, 0, 1), PTO_ERR_BUSY);
    CHECK_CONTAINS(simpler_last_error(), "pipeline slot is reserved");
    CHECK_EQ_INT(fix_prepare(&f, 1, 1, 0), PTO_ERR_BUSY);
    CHECK_CONTAINS(simpler_last_error(), "arena bank is reserved");
    CHECK(fix_tag(f.storage[1]) == 0);
    CHECK_EQ_INT(fake_record.bind_calls, 1);
    finish_predecessor(&f);
    fix_teardown(&f);
}

TEST(a_shared_bank_admits_a_successor_and_bind_is_told_it_overlaps)
{
    Fixture f;
    fix_setup(&f);
    fake_script.shared_bank = 1; /* trb's contract: both slots name bank 0 */
    start_predecessor(&f);
    CHECK_EQ_INT(fake_record.bind_overlaps, 0); /* nothing executed beside the first */
    CHECK_EQ_INT(fix_prepare(&f, 1, 1, 0), PTO_OK);
    CHECK_EQ_INT(fake_record.bind_overlaps, 1);
    CHECK_EQ_INT(fake_record.bind_arena_bank, 0);
    CHECK_EQ_INT(fix_prepare(&f, 2, 1, 0), PTO_ERR_BUSY); /* the slot still counts */
    CHECK_CONTAINS(simpler_last_error(), "pipeline slot is reserved");
    finish_predecessor(&f);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[1]), PTO_OK);
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK); /* alone again */
    CHECK_EQ_INT(fake_record.bind_overlaps, 0);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
    fix_teardown(&f);
}

TEST(not_now_names_the_executing_run_takes_nothing_and_the_successor_prepares_after_it)
{
    Fixture f;
    fix_setup(&f);
    fake_script.shared_bank = 1;
    start_predecessor(&f);
    fake_script.bind_fail_code = PTO_ERR_OVERLAP_NOT_NOW;
    CHECK_EQ_INT(fix_prepare(&f, 1, 1, 0), PTO_ERR_OVERLAP_NOT_NOW);
    CHECK_CONTAINS(simpler_last_error(), "simpler_prepare_run (run_id=101 slot=1");
    CHECK_CONTAINS(simpler_last_error(), "not now: run (run_id=100 slot=0 run_epoch=1000) executes and fake bind "
                                         "refused; prepare this run again once that run is finalized");
    CHECK(fix_tag(f.storage[1]) == 0);
    CHECK_EQ_INT(fake_record.unbind_calls, 0);
    CHECK_EQ_INT(fake_record.abandon_slot, 1); /* its slot was released again */
    fake_script.bind_fail_code = 0;
    finish_predecessor(&f);
    CHECK_EQ_INT(fix_prepare(&f, 1, 1, 0), PTO_OK); /* the same run, once the predecessor is finalized */
    CHECK_EQ_INT(fake_record.bind_overlaps, 0);
    CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[1]), PTO_OK);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[1]), PTO_OK);
    fix_teardown(&f);
}

TEST(no_third_run_while_two_are_outstanding)
{
    Fixture f;
    fix_setup(&f);
    start_predecessor(&f);
    CHECK_EQ_INT(fix_prepare(&f, 1, 1, 1), PTO_OK);
    CHECK_EQ_INT(fix_prepare(&f, 2, 1, 1), PTO_ERR_BUSY);
    CHECK(fix_tag(f.storage[2]) == 0);
    finish_predecessor(&f);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[1]), PTO_OK);
    fix_teardown(&f);
}

TEST(a_diagnostic_run_on_either_side_forbids_the_overlap)
{
    Fixture f;
    fix_setup(&f);
    start_predecessor(&f);
    f.cfg.enable_dep_graph = 1;
    strcpy(f.cfg.output_prefix, "/tmp/ptorun-test");
    CHECK_EQ_INT(fix_prepare(&f, 1, 1, 1), PTO_ERR_BUSY); /* diagnostic successor */
    CHECK_CONTAINS(simpler_last_error(), "diagnostic");
    finish_predecessor(&f);

    /* diagnostic predecessor, ordinary successor */
    fake_hold_drain();
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[0]), PTO_OK);
    f.cfg.enable_dep_graph = 0;
    CHECK_EQ_INT(fix_prepare(&f, 1, 1, 1), PTO_ERR_BUSY);
    CHECK_CONTAINS(simpler_last_error(), "permits no successor");
    CHECK(fix_tag(f.storage[1]) == 0);
    finish_predecessor(&f);
    fix_teardown(&f);
}

TEST(depth_1_or_no_concurrent_prepare_forbids_the_overlap)
{
    Fixture f;
    fix_setup(&f);
    fake_script.pipeline_depth = 1;
    start_predecessor(&f);
    CHECK_EQ_INT(fix_prepare(&f, 1, 1, 1), PTO_ERR_BUSY);
    CHECK_CONTAINS(simpler_last_error(), "depth 1");
    finish_predecessor(&f);

    fake_script.pipeline_depth = 2;
    fake_script.concurrent_prepare = 0; /* a runtime that cannot overlap */
    start_predecessor(&f);
    CHECK_EQ_INT(fix_prepare(&f, 1, 1, 1), PTO_ERR_BUSY);
    CHECK_CONTAINS(simpler_last_error(), "cannot prepare a run while another executes");
    finish_predecessor(&f);
    fix_teardown(&f);
}

TEST(concurrent_prepare_capability_follows_the_runtime)
{
    Fixture f;
    fix_setup(&f);
    CHECK_EQ_INT(supports_concurrent_native_prepare_ctx(f.ctx), 1);
    fake_script.concurrent_prepare = 0;
    CHECK_EQ_INT(supports_concurrent_native_prepare_ctx(f.ctx), 0);
    CHECK_EQ_INT(supports_concurrent_native_prepare_ctx(NULL), 0);
    fix_teardown(&f);
}

/* ---- two threads pipelining runs on their own slots ----------------------- */

typedef struct Pipeliner {
    Fixture *f;
    int index;          /* storage and slot/bank */
    int runs;
    int completed;
    int unexpected;     /* any result other than OK or BUSY */
} Pipeliner;

static void nap(void)
{
    struct timespec ts = { 0, 50 * 1000 };
    nanosleep(&ts, NULL);
}

/* Calls fn until it stops answering BUSY (the other thread's run is in the way). */
static int until_not_busy(int (*fn)(Pipeliner *), Pipeliner *p)
{
    int rc;
    while ((rc = fn(p)) == PTO_ERR_BUSY)
        nap();
    return rc;
}

static int pipeliner_prepare(Pipeliner *p)
{
    NativeRunDescriptor d = {
        .pipeline_slot = (uint32_t)p->index,
        .arena_bank = (uint32_t)p->index,
        .run_epoch = (uint64_t)p->completed + 1,
    };
    return simpler_prepare_run(p->f->ctx, p->f->storage[p->index], FIX_CALLABLE_ID, p->f->args, &p->f->cfg, &d);
}

static int pipeliner_launch(Pipeliner *p)
{
    return simpler_launch_run(p->f->ctx, p->f->storage[p->index]);
}

static void *pipeline_runs(void *arg)
{
    Pipeliner *p = arg;
    for (int i = 0; i < p->runs; i++) {
        if (until_not_busy(pipeliner_prepare, p) != PTO_OK) {
            p->unexpected++;
            continue;
        }
        int rc = until_not_busy(pipeliner_launch, p);
        rc |= simpler_finalize_run(p->f->ctx, p->f->storage[p->index]);
        if (rc == PTO_OK)
            p->completed++;
        else
            p->unexpected++;
    }
    return NULL;
}

TEST(two_threads_pipelining_on_their_own_slots_share_the_claim)
{
    Fixture f;
    fix_setup(&f);
    Pipeliner p[2] = { { &f, 0, 200, 0, 0 }, { &f, 1, 200, 0, 0 } };
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, pipeline_runs, &p[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ_INT(p[i].completed, 200);
        CHECK_EQ_INT(p[i].unexpected, 0);
        CHECK(fix_tag(f.storage[i]) == 0);
    }
    CHECK_EQ_INT(fake_record.enqueue_calls, 400);
    CHECK_EQ_INT(fake_record.collect_calls, 400);
    fix_teardown(&f); /* finalize_device succeeds: nothing outstanding */
}

/* ---- the caller's descriptor is read once ---------------------------------- */

/* A thread that rewrites the caller's descriptor while prepare is inside the
   runtime's bind (where hbg runs a user orchestration), then lets bind go on. */
typedef struct DescFlipper {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int requested, flipped;
    NativeRunDescriptor *desc;
    volatile int32_t *other_word;
    pthread_t thread;
} DescFlipper;

static void *flipper_body(void *arg)
{
    DescFlipper *fl = arg;
    pthread_mutex_lock(&fl->lock);
    while (!fl->requested)
        pthread_cond_wait(&fl->cond, &fl->lock);
    fl->desc->pipeline_slot = 1;
    fl->desc->arena_bank = 1;
    fl->desc->run_id = 999;
    fl->desc->accepted_state = fl->other_word;
    fl->desc->accepted_value = 99;
    fl->flipped = 1;
    pthread_cond_broadcast(&fl->cond);
    pthread_mutex_unlock(&fl->lock);
    return NULL;
}

/* The bind hook: wakes the flipper and waits until it has rewritten the descriptor. */
static void flip_during_bind(void *arg)
{
    DescFlipper *fl = arg;
    pthread_mutex_lock(&fl->lock);
    fl->requested = 1;
    pthread_cond_broadcast(&fl->cond);
    while (!fl->flipped)
        pthread_cond_wait(&fl->cond, &fl->lock);
    pthread_mutex_unlock(&fl->lock);
}

TEST(prepare_binds_the_slot_and_bank_it_copied_while_the_caller_rewrites_its_descriptor)
{
    Fixture f;
    fix_setup(&f);
    NativeRunDescriptor d = fix_desc(&f, 0, 0, 0);
    f.word[1] = -1;
    DescFlipper fl = { .desc = &d, .other_word = &f.word[1] };
    pthread_mutex_init(&fl.lock, NULL);
    pthread_cond_init(&fl.cond, NULL);
    pthread_create(&fl.thread, NULL, flipper_body, &fl);
    fake_script.bind_hook = flip_during_bind;
    fake_script.bind_hook_arg = &fl;

    CHECK_EQ_INT(simpler_prepare_run(f.ctx, f.storage[0], FIX_CALLABLE_ID, f.args, &f.cfg, &d), PTO_OK);
    pthread_join(fl.thread, NULL);
    fake_script.bind_hook = NULL;
    CHECK_EQ_INT(fl.flipped, 1);
    CHECK_EQ_INT(d.pipeline_slot, 1); /* the caller's copy did change during prepare */
    /* ... yet the run's HostApi and slot are the ones it was prepared for */
    CHECK_EQ_INT(fake_record.bind_retained_slot, 0);
    CHECK_EQ_INT(fake_record.bind_arena_bank, 0);
    CHECK_EQ_INT(fake_record.prepare_slot, 0);

    CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[0]), PTO_OK);
    CHECK_EQ_INT(fake_record.enqueue_slot, 0);
    CHECK_EQ_INT(fix_word(&f, 0), 17); /* the captured sink and value, not the rewritten ones */
    CHECK_EQ_INT(fix_word(&f, 1), -1);

    /* the reservation is slot 0, bank 0: a successor on slot 0 is refused, one on (1, 1) admitted */
    CHECK_EQ_INT(fix_prepare(&f, 1, 0, 1), PTO_ERR_BUSY);
    CHECK_CONTAINS(simpler_last_error(), "pipeline slot is reserved by another native run (run_id=100 slot=0 bank=0");
    CHECK_EQ_INT(fix_prepare(&f, 1, 1, 1), PTO_OK);
    CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[1]), PTO_ERR_BUSY);
    CHECK_CONTAINS(simpler_last_error(), "execution claim is held by run (run_id=100 slot=0");

    /* finalize releases (0, 0), the reservation it took: (0, 0) is free again, (1, 1) still held */
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
    CHECK_EQ_INT(simpler_launch_run(f.ctx, f.storage[1]), PTO_OK);
    CHECK_EQ_INT(fake_record.enqueue_slot, 1);
    CHECK_EQ_INT(fix_prepare(&f, 2, 1, 0), PTO_ERR_BUSY);
    CHECK_CONTAINS(simpler_last_error(), "(run_id=101 slot=1 bank=1");
    CHECK_EQ_INT(fix_prepare(&f, 2, 0, 0), PTO_OK);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[1]), PTO_OK);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[2]), PTO_OK); /* never launched: abandons its slot */
    CHECK_EQ_INT(fake_record.abandon_slot, 0);
    pthread_cond_destroy(&fl.cond);
    pthread_mutex_destroy(&fl.lock);
    fix_teardown(&f);
}

/* A bind that fails after the caller rewrote its descriptor unwinds the slot
   the run prepared, not the one the caller's descriptor names by then. */
TEST(a_failed_bind_abandons_the_prepared_slot_while_the_caller_rewrites_its_descriptor)
{
    Fixture f;
    fix_setup(&f);
    NativeRunDescriptor d = fix_desc(&f, 0, 0, 0);
    f.word[1] = -1;
    DescFlipper fl = { .desc = &d, .other_word = &f.word[1] };
    pthread_mutex_init(&fl.lock, NULL);
    pthread_cond_init(&fl.cond, NULL);
    pthread_create(&fl.thread, NULL, flipper_body, &fl);
    fake_script.bind_hook = flip_during_bind;
    fake_script.bind_hook_arg = &fl;
    fake_script.bind_fail_code = PTO_ERR_OUT_OF_MEMORY;
    fake_script.bind_fail_after_hook = 1;

    CHECK_EQ_INT(simpler_prepare_run(f.ctx, f.storage[0], FIX_CALLABLE_ID, f.args, &f.cfg, &d), PTO_ERR_OUT_OF_MEMORY);
    CHECK_CONTAINS(simpler_last_error(), "simpler_prepare_run (run_id=100 slot=0");
    pthread_join(fl.thread, NULL);
    CHECK_EQ_INT(fl.flipped, 1);
    CHECK_EQ_INT(fake_record.prepare_slot, 0);
    CHECK_EQ_INT(fake_record.abandon_slot, 0);
    CHECK(fix_tag(f.storage[0]) == 0);

    /* the reservation is gone: (0, 0) can be prepared again */
    fake_script.bind_hook = NULL;
    fake_script.bind_fail_code = 0;
    CHECK_EQ_INT(fix_prepare(&f, 0, 0, 0), PTO_OK);
    CHECK_EQ_INT(simpler_finalize_run(f.ctx, f.storage[0]), PTO_OK);
    CHECK_EQ_INT(fix_word(&f, 1), -1);
    pthread_cond_destroy(&fl.cond);
    pthread_mutex_destroy(&fl.lock);
    fix_teardown(&f);
}
