/* hbg's per-run state lives in the run's slot scratch, owned by the device
 * context and lent to one run from bind to unbind, never in the callable:
 * through the exported functions of a2a3/sim/hbg, and at the runtime level. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/device_context.h"
#include "common/native_run_context.h"
#include "ptest.h"
#include "runtime/hbg/hbg_internal.h"
#include "test_callable.h"
#include "test_sim.h"

#define N 256
#define CALLABLE_ID 3
enum { A, B, SUM, TENSORS };

/* sum = a + b: one vadd task. */
static uint8_t *vadd_callable(uint32_t *size)
{
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[TENSORS] = { PTO_ARG_IN, PTO_ARG_IN, PTO_ARG_OUT };
    tcb_signature(&b, sig, TENSORS);
    tcb_child(&b, 1, PTO_CORE_AIV, "vadd");
    PtoProgramParam p[] = { tcb_tensor(A, PTO_ARG_IN, 0, N * 4), tcb_tensor(B, PTO_ARG_IN, 0, N * 4),
                            tcb_tensor(SUM, PTO_ARG_OUT, 0, N * 4) };
    tcb_submit(&b, 1, p, 3);
    uint8_t *c = tcb_build(&b, size);
    tcb_free(&b);
    return c;
}

/* One run's buffers, storage and descriptor. */
typedef struct Run {
    float t[TENSORS][N];
    ChipStorageTaskArgs *args;
    void *storage;
    NativeRunDescriptor desc;
} Run;

static void run_init(Run *r, uint32_t slot, float a)
{
    r->args = test_args();
    r->args->tensor_count = TENSORS;
    for (int i = 0; i < TENSORS; i++) {
        for (int j = 0; j < N; j++)
            r->t[i][j] = i == A ? a : i == B ? (float)j : -777.0f;
        r->args->tensors[i] = test_f32_tensor(r->t[i], N);
    }
    r->storage = aligned_alloc(get_runtime_alignment(), get_runtime_size());
    memset(r->storage, 0, get_runtime_size());
    r->desc = (NativeRunDescriptor){ .pipeline_slot = slot, .arena_bank = slot, .run_id = 100 + slot,
                                     .generation = 1, .run_epoch = 1000 + slot };
}

static void run_free(Run *r)
{
    free(r->args);
    free(r->storage);
}

static int run_sum_is(const Run *r, float a)
{
    for (int j = 0; j < N; j++)
        if (r->t[SUM][j] != a + (float)j)
            return 0;
    return 1;
}

static int run_untouched(const Run *r)
{
    for (int j = 0; j < N; j++)
        if (r->t[SUM][j] != -777.0f)
            return 0;
    return 1;
}

static const RuntimeRun *runtime_of(const Run *r)
{
    return &((const NativeRunContext *)r->storage)->runtime;
}

/* An initialized a2a3/sim/hbg device context with the vadd callable registered. */
static DeviceContext *open_context(void)
{
    const DeviceImages *img = test_images();
    void *ctx = create_device_context();
    uint32_t size;
    uint8_t *bytes = vadd_callable(&size);
    if (img == NULL || ctx == NULL ||
        simpler_init(ctx, 0, img->aicpu, img->aicpu_size, img->aicore, img->aicore_size, NULL, 0, NULL) != PTO_OK ||
        simpler_register_callable(ctx, CALLABLE_ID, bytes) != PTO_OK) {
        free(bytes);
        return NULL;
    }
    free(bytes);
    return ctx;
}

static int prepare(DeviceContext *dc, Run *r, const CallConfig *cfg)
{
    return simpler_prepare_run(dc, r->storage, CALLABLE_ID, r->args, cfg, &r->desc);
}

TEST(hbg_two_runs_of_one_callable_on_two_slots_at_once_keep_separate_state)
{
    DeviceContext *dc = open_context();
    REQUIRE(dc != NULL);
    CallConfig cfg = test_config(10000);
    Run r0, r1;
    run_init(&r0, 0, 1.0f);
    run_init(&r1, 1, 2.0f);
    CHECK(dc->slot_scratch[0] != NULL && dc->slot_scratch[1] != NULL && dc->slot_scratch[0] != dc->slot_scratch[1]);
    CHECK_EQ_INT(prepare(dc, &r0, &cfg), PTO_OK);
    CHECK_EQ_INT(simpler_launch_run(dc, r0.storage), PTO_OK);
    /* the successor binds while the predecessor holds the claim */
    CHECK_EQ_INT(prepare(dc, &r1, &cfg), PTO_OK);
    CHECK(dc->slot_scratch[0]->holder == runtime_of(&r0));
    CHECK(dc->slot_scratch[1]->holder == runtime_of(&r1));
    /* the successor's bind wrote its own slot's tensor table, not the predecessor's */
    CHECK_EQ_INT(dc->slot_scratch[0]->tensors.entries[SUM].host, (uint64_t)(uintptr_t)r0.t[SUM]);
    CHECK_EQ_INT(dc->slot_scratch[1]->tensors.entries[SUM].host, (uint64_t)(uintptr_t)r1.t[SUM]);
    CHECK_EQ_INT(simpler_finalize_run(dc, r0.storage), PTO_OK);
    CHECK(dc->slot_scratch[0]->holder == NULL);
    CHECK(run_sum_is(&r0, 1.0f));
    CHECK_EQ_INT(simpler_launch_run(dc, r1.storage), PTO_OK);
    CHECK_EQ_INT(simpler_finalize_run(dc, r1.storage), PTO_OK);
    CHECK(dc->slot_scratch[1]->holder == NULL);
    CHECK(run_sum_is(&r1, 2.0f));
    run_free(&r0);
    run_free(&r1);
    CHECK_EQ_INT(finalize_device(dc), PTO_OK);
    destroy_device_context(dc);
}

TEST(hbg_a_run_finalized_without_launch_hands_its_slot_scratch_back)
{
    DeviceContext *dc = open_context();
    REQUIRE(dc != NULL);
    CallConfig cfg = test_config(10000);
    Run r;
    run_init(&r, 1, 3.0f);
    CHECK_EQ_INT(prepare(dc, &r, &cfg), PTO_OK);
    CHECK(dc->slot_scratch[1]->holder == runtime_of(&r));
    CHECK_EQ_INT(simpler_finalize_run(dc, r.storage), PTO_OK);
    CHECK(dc->slot_scratch[1]->holder == NULL);
    CHECK(run_untouched(&r)); /* nothing copied back */
    /* the slot and its scratch serve the next run */
    CHECK_EQ_INT(simpler_run(dc, r.storage, CALLABLE_ID, r.args, &cfg, &r.desc), PTO_OK);
    CHECK(dc->slot_scratch[1]->holder == NULL);
    CHECK(run_sum_is(&r, 3.0f));
    run_free(&r);
    CHECK_EQ_INT(finalize_device(dc), PTO_OK);
    destroy_device_context(dc);
}

TEST(hbg_a_failed_prepare_leaves_its_slot_scratch_free)
{
    DeviceContext *dc = open_context();
    REQUIRE(dc != NULL);
    CallConfig cfg = test_config(10000);
    Run r;
    run_init(&r, 0, 4.0f);
    r.args->tensor_count = TENSORS - 1; /* refused by bind, after it took the scratch */
    CHECK_EQ_INT(prepare(dc, &r, &cfg), PTO_ERR_BAD_CALLABLE);
    CHECK(dc->slot_scratch[0]->holder == NULL);
    CHECK_EQ_INT(*(const uint64_t *)r.storage, 0); /* the storage is empty */
    r.args->tensor_count = TENSORS;
    CHECK_EQ_INT(simpler_run(dc, r.storage, CALLABLE_ID, r.args, &cfg, &r.desc), PTO_OK);
    CHECK(run_sum_is(&r, 4.0f));
    run_free(&r);
    CHECK_EQ_INT(finalize_device(dc), PTO_OK);
    destroy_device_context(dc);
}

TEST(hbg_bind_refuses_a_slot_scratch_lent_to_another_run)
{
    Runner *runner = test_sim_runner();
    REQUIRE(runner != NULL);
    HostApi api = host_api_bind(runner, 0, 0, &host_api_ops);
    uint32_t size;
    uint8_t *bytes = vadd_callable(&size);
    RuntimeCallable *c = NULL;
    REQUIRE(runtime_register_callable(&api, bytes, &c) == PTO_OK);
    RuntimeSlotScratch *s = runtime_slot_scratch_create();
    REQUIRE(s != NULL);
    CallConfig cfg = test_config(10000);
    Run r0, r1;
    run_init(&r0, 0, 5.0f);
    run_init(&r1, 0, 6.0f);
    RuntimeRun run0, run1;
    memset(&run0, 0, sizeof run0);
    memset(&run1, 0, sizeof run1);
    DeviceLaunch l0, l1;
    CHECK_EQ_INT(runtime_bind(&run0, s, &api, c, r0.args, &cfg, NULL, &l0), PTO_OK);
    CHECK_EQ_INT(runtime_bind(&run1, s, &api, c, r1.args, &cfg, NULL, &l1), PTO_ERR_FAILED);
    CHECK_CONTAINS(pto_last_error(), "lent to another run");
    CHECK(s->holder == &run0);
    CHECK_EQ_INT(s->tensors.entries[SUM].host, (uint64_t)(uintptr_t)r0.t[SUM]); /* run 0's state is intact */
    runtime_unbind(&run0, &api);
    CHECK(s->holder == NULL);
    CHECK_EQ_INT(runtime_bind(&run1, s, &api, c, r1.args, &cfg, NULL, &l1), PTO_OK);
    runtime_unbind(&run1, &api);
    runtime_slot_scratch_destroy(s);
    runtime_release_callable(&api, c);
    free(bytes);
    run_free(&r0);
    run_free(&r1);
    runner_destroy(runner);
}
