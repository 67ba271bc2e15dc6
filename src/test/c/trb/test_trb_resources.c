/* The trb runtime's persistent device resources: the per-slot retained
 * staging buffer and the shared bank-0 runtime image with its prebuilt cache. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/host_api.h"
#include "util/last_error.h"
#include "ptest.h"
#include "runtime/trb/trb_image.h"
#include "runtime/trb/trb_internal.h"
#include "test_sim.h"
#include "trb_fixture.h"

#define CHAIN_TENSORS 7

static const uint8_t CHAIN_SIGNATURE[CHAIN_TENSORS] = { PTO_ARG_IN,  PTO_ARG_IN,  PTO_ARG_INOUT, PTO_ARG_OUT,
                                                        PTO_ARG_OUT, PTO_ARG_OUT, PTO_ARG_OUT };

static RuntimeCallable *chain_callable(Runner *r)
{
    uint32_t size;
    uint8_t *bytes = trb_library_callable(CHAIN_SIGNATURE, CHAIN_TENSORS, "trb_orch_chain", &size);
    RuntimeCallable *c = trb_register(r, bytes);
    free(bytes);
    return c;
}

/* One chain run of n floats per tensor in `slot`; its return code. */
static int run_chain(Runner *r, RuntimeCallable *c, uint32_t slot, uint32_t n)
{
    ChipStorageTaskArgs *a = test_args();
    float *buffers[CHAIN_TENSORS];
    a->tensor_count = CHAIN_TENSORS;
    for (int i = 0; i < CHAIN_TENSORS; i++) {
        buffers[i] = calloc(n, sizeof(float));
        a->tensors[i] = test_f32_tensor(buffers[i], n);
    }
    CallConfig cfg = test_config(20000);
    int rc = test_run(r, c, slot, a, &cfg, NULL);
    int good = 1;
    for (uint32_t j = 0; j < n && rc == PTO_OK; j++)
        good &= buffers[6][j] == 2.0f; /* a = b = 0: (0+1)*(0+2)+0 */
    CHECK(good);
    for (int i = 0; i < CHAIN_TENSORS; i++)
        free(buffers[i]);
    free(a);
    return rc;
}

static size_t retained_size(Runner *r, uint32_t slot)
{
    void *dev;
    size_t size;
    runner_get_retained_temp_buffer(r, slot, &dev, &size);
    return size;
}

/* The staging bytes of a chain of n floats: header + 7 slices. */
static size_t chain_staging(uint32_t n)
{
    size_t slice = ((size_t)n * 4 + 1023) / 1024 * 1024;
    return trb_staging_header_bytes() + CHAIN_TENSORS * slice;
}

TEST(same_shape_runs_reuse_the_retained_buffer)
{
    Runner *r = trb_runner();
    RuntimeCallable *c = chain_callable(r);
    CHECK_EQ_INT(runner_retained_temp_addr(r, 0), 0);
    CHECK_EQ_INT(run_chain(r, c, 0, 1000), PTO_OK);
    uint64_t addr = runner_retained_temp_addr(r, 0);
    size_t committed = runner_committed_bytes(r);
    CHECK(addr != 0);
    CHECK_EQ_INT(retained_size(r, 0), chain_staging(1000));
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_INT(run_chain(r, c, 0, 1000), PTO_OK);
        CHECK_EQ_INT(runner_retained_temp_addr(r, 0), addr);
        CHECK_EQ_INT(runner_committed_bytes(r), committed); /* nothing allocated, nothing left behind */
    }
    trb_release(r, c);
    runner_destroy(r);
}

TEST(a_larger_run_grows_the_buffer_and_a_smaller_run_keeps_it)
{
    Runner *r = trb_runner();
    RuntimeCallable *c = chain_callable(r);
    CHECK_EQ_INT(run_chain(r, c, 0, 100), PTO_OK);
    size_t small = retained_size(r, 0), before = runner_committed_bytes(r);
    CHECK_EQ_INT(run_chain(r, c, 0, 100000), PTO_OK);
    size_t big = retained_size(r, 0);
    CHECK_EQ_INT(big, chain_staging(100000));
    /* one free of the small buffer, one allocation of the big one */
    CHECK_EQ_INT(runner_committed_bytes(r), before - small + big);
    uint64_t addr = runner_retained_temp_addr(r, 0);
    CHECK_EQ_INT(run_chain(r, c, 0, 100), PTO_OK);
    CHECK_EQ_INT(retained_size(r, 0), big);
    CHECK_EQ_INT(runner_retained_temp_addr(r, 0), addr);
    CHECK_EQ_INT(runner_committed_bytes(r), before - small + big);
    trb_release(r, c);
    runner_destroy(r);
}

TEST(each_pipeline_slot_keeps_its_own_retained_buffer)
{
    Runner *r = trb_runner();
    RuntimeCallable *c = chain_callable(r);
    CHECK_EQ_INT(run_chain(r, c, 0, 100), PTO_OK);
    CHECK_EQ_INT(run_chain(r, c, 1, 5000), PTO_OK);
    CHECK(runner_retained_temp_addr(r, 0) != 0 && runner_retained_temp_addr(r, 1) != 0);
    CHECK(runner_retained_temp_addr(r, 0) != runner_retained_temp_addr(r, 1));
    CHECK_EQ_INT(retained_size(r, 0), chain_staging(100));
    CHECK_EQ_INT(retained_size(r, 1), chain_staging(5000));
    trb_release(r, c);
    runner_destroy(r);
}

TEST(a_failed_grow_fails_the_prepare_leaks_nothing_and_leaves_the_slot_empty)
{
    /* learn what a small run commits, then cap the device just below the grow */
    Runner *probe = trb_runner();
    RuntimeCallable *pc = chain_callable(probe);
    CHECK_EQ_INT(run_chain(probe, pc, 0, 100), PTO_OK);
    size_t committed_small = runner_committed_bytes(probe), small = retained_size(probe, 0);
    trb_release(probe, pc);
    runner_destroy(probe);
    size_t big = chain_staging(50000);
    char cap[64];
    snprintf(cap, sizeof cap, "%zu", committed_small - small + big - 1);
    setenv("PTORUN_SIM_DEVICE_MEMORY", cap, 1);
    Runner *r = trb_runner();
    unsetenv("PTORUN_SIM_DEVICE_MEMORY");
    RuntimeCallable *c = chain_callable(r);

    CHECK_EQ_INT(run_chain(r, c, 0, 100), PTO_OK);
    CHECK_EQ_INT(runner_committed_bytes(r), committed_small);
    CHECK_EQ_INT(run_chain(r, c, 0, 50000), PTO_ERR_OUT_OF_MEMORY);
    CHECK_CONTAINS(pto_last_error(), "retained staging buffer of pipeline slot 0 cannot grow");
    CHECK_EQ_INT(runner_retained_temp_addr(r, 0), 0);
    CHECK_EQ_INT(retained_size(r, 0), 0);
    CHECK_EQ_INT(runner_committed_bytes(r), committed_small - small);
    /* the slot starts over */
    CHECK_EQ_INT(run_chain(r, c, 0, 100), PTO_OK);
    CHECK_EQ_INT(runner_committed_bytes(r), committed_small);
    trb_release(r, c);
    runner_destroy(r);
}

static TrbSizing tiny_sizing(void)
{
    TrbSizing s;
    for (int i = 0; i < PTO_TRB_RINGS; i++) {
        s.task_window[i] = 4;
        s.heap[i] = 1024;
        s.dep_pool[i] = 4;
    }
    return s;
}

TEST(the_prebuilt_image_is_reused_for_one_sizing_and_rebuilt_for_another)
{
    Runner *r = trb_runner();
    HostApi api = host_api_bind(r, 1, 1, &host_api_ops);
    HostApi bank0 = host_api_bind(r, 1, 0, &host_api_ops);
    TrbSizing defaults, tiny = tiny_sizing();
    trb_sizing_of(NULL, &defaults);
    uint64_t first, image;
    int built;
    CHECK_EQ_INT(trb_image_ensure(&bank0, &defaults, 1, &first, &built), PTO_OK);
    CHECK_EQ_INT(built, 1);
    size_t committed = runner_committed_bytes(r);
    CHECK_EQ_INT(trb_image_ensure(&bank0, &defaults, 1, &image, &built), PTO_OK);
    CHECK_EQ_INT(built, 0);
    CHECK_EQ_INT(image, first);
    CHECK_EQ_INT(runner_committed_bytes(r), committed);
    CHECK_EQ_INT(trb_image_ensure(&bank0, &tiny, 1, &image, &built), PTO_OK);
    CHECK_EQ_INT(built, 1);
    CHECK_EQ_INT(trb_image_ensure(&bank0, &tiny, 1, &image, &built), PTO_OK);
    CHECK_EQ_INT(built, 0);
    CHECK_EQ_INT(trb_image_ensure(&bank0, &defaults, 1, &image, &built), PTO_OK);
    CHECK_EQ_INT(built, 1); /* one entry: the other sizing replaced it */
    /* the image lives in bank 0 whatever bank the run's HostApi names */
    CHECK_EQ_INT(runtime_prewarm(&api, NULL), PTO_OK);
    CHECK_EQ_INT(trb_image_ensure(&bank0, &defaults, 1, &image, &built), PTO_OK);
    CHECK_EQ_INT(built, 0);
    CHECK(runner_arena_bank_gm_heap_base(r, 0) != 0);
    CHECK_EQ_INT(runner_arena_bank_gm_heap_base(r, 1), 0);
    runner_destroy(r);
}

/* A chain run of n floats in `slot` with `cfg`, bound as if beside an executing run
   when `beside`; checked against the chain's arithmetic. */
static int run_chain_with(Runner *r, RuntimeCallable *c, uint32_t slot, uint32_t n, const CallConfig *cfg, int beside)
{
    ChipStorageTaskArgs *a = test_args();
    float *buffers[CHAIN_TENSORS];
    a->tensor_count = CHAIN_TENSORS;
    for (int i = 0; i < CHAIN_TENSORS; i++) {
        buffers[i] = calloc(n, sizeof(float));
        for (uint32_t j = 0; j < n && i < 2; j++)
            buffers[i][j] = (float)(j % 7) + (float)i; /* a = j%7, b = j%7 + 1 */
        a->tensors[i] = test_f32_tensor(buffers[i], n);
    }
    int rc = beside ? test_run_beside(r, c, slot, a, cfg, NULL) : test_run(r, c, slot, a, cfg, NULL);
    int good = 1;
    for (uint32_t j = 0; j < n && rc == PTO_OK; j++) {
        float s = buffers[0][j] + buffers[1][j]; /* the chain: f = (s+1)*(s+2)+s */
        good &= buffers[6][j] == (s + 1.0f) * (s + 2.0f) + s;
    }
    CHECK(good);
    for (int i = 0; i < CHAIN_TENSORS; i++)
        free(buffers[i]);
    free(a);
    return rc;
}

TEST(a_run_beside_an_executing_one_uses_the_image_it_fits_and_rewrites_no_byte_of_bank_0)
{
    Runner *r = trb_runner();
    RuntimeCallable *c = chain_callable(r);
    CHECK_EQ_INT(run_chain(r, c, 0, 1000), PTO_OK); /* builds the default image */
    HostApi bank0 = host_api_bind(r, 0, 0, &host_api_ops);
    size_t heap_size, sm_size, arena_size;
    uint8_t *heap = host_api_acquire_pooled_gm_heap(&bank0, &heap_size);
    uint8_t *sm = host_api_acquire_pooled_gm_sm(&bank0, &sm_size);
    uint8_t *arena = host_api_acquire_pooled_runtime_arena(&bank0, &arena_size);
    CHECK(heap != NULL && sm != NULL && arena != NULL);
    /* mark every byte of bank 0 (sim device memory is host memory): a bind that
       wrote any of it, or moved an arena, would show */
    uint8_t header[sizeof(PtoTrbImage)];
    memcpy(header, arena, sizeof header);
    memset(heap, 0xA5, heap_size);
    memset(sm, 0x5A, sm_size);
    size_t committed = runner_committed_bytes(r);
    CallConfig cfg = test_config(20000);
    HostApi api1 = host_api_bind(r, 1, 1, &host_api_ops);
    RuntimeRun run;
    memset(&run, 0, sizeof run);
    run.overlaps = 1;
    DeviceLaunch launch;
    ChipStorageTaskArgs *a = test_args();
    CHECK_EQ_INT(runtime_bind(&run, test_slot_scratch(r, 1), &api1, c, a, &cfg, NULL, &launch), PTO_ERR_BAD_CALLABLE);
    a->tensor_count = CHAIN_TENSORS;
    float buffers[CHAIN_TENSORS][64] = { { 0 } };
    for (int i = 0; i < CHAIN_TENSORS; i++)
        a->tensors[i] = test_f32_tensor(buffers[i], 64);
    CHECK_EQ_INT(runtime_bind(&run, test_slot_scratch(r, 1), &api1, c, a, &cfg, NULL, &launch), PTO_OK);
    int untouched = memcmp(header, arena, sizeof header) == 0;
    for (size_t i = 0; i < heap_size; i++)
        untouched &= heap[i] == 0xA5;
    for (size_t i = 0; i < sm_size; i++)
        untouched &= sm[i] == 0x5A;
    CHECK(untouched);
    CHECK(host_api_acquire_pooled_gm_heap(&bank0, NULL) == heap);
    runtime_unbind(&run, &api1);
    free(a);
    /* and the run it prepared computes right on that image once it launches */
    CHECK_EQ_INT(run_chain_with(r, c, 1, 3000, &cfg, 1), PTO_OK);
    CHECK(runner_committed_bytes(r) > committed); /* slot 1's staging, nothing of bank 0 */
    CHECK(host_api_acquire_pooled_runtime_arena(&bank0, NULL) == arena);
    trb_release(r, c);
    runner_destroy(r);
}

TEST(a_run_beside_an_executing_one_that_needs_another_image_is_not_now_and_takes_nothing)
{
    Runner *r = trb_runner();
    RuntimeCallable *c = chain_callable(r);
    CHECK_EQ_INT(run_chain(r, c, 0, 1000), PTO_OK); /* the default image */
    HostApi bank0 = host_api_bind(r, 0, 0, &host_api_ops);
    void *arena = host_api_acquire_pooled_runtime_arena(&bank0, NULL);
    size_t committed = runner_committed_bytes(r);
    CallConfig cfg = test_config(20000);
    cfg.ring_task_window[0] = 16;
    cfg.ring_heap[2] = 4096;
    CHECK_EQ_INT(run_chain_with(r, c, 1, 1000, &cfg, 1), PTO_ERR_OVERLAP_NOT_NOW);
    CHECK_CONTAINS(pto_last_error(), "this run's ring sizing differs from the runtime image that run uses");
    CHECK_CONTAINS(pto_last_error(), "ring 0 task window 16 (image 1024), ring 2 heap 4096 (image 1048576)");
    CHECK_EQ_INT(runner_committed_bytes(r), committed); /* no staging buffer, no image */
    CHECK_EQ_INT(runner_retained_temp_addr(r, 1), 0);
    CHECK(host_api_acquire_pooled_runtime_arena(&bank0, NULL) == arena);
    /* every field that differs is counted, three named */
    for (int i = 0; i < PTO_TRB_RING_COUNT; i++)
        cfg.ring_dep_pool[i] = 64;
    CHECK_EQ_INT(run_chain_with(r, c, 1, 1000, &cfg, 1), PTO_ERR_OVERLAP_NOT_NOW);
    CHECK_CONTAINS(pto_last_error(), "ring 0 dependency pool 64 (image 4096), ring 1 dependency pool 64 (image "
                                     "4096) and 3 more");
    /* the same slot binds a fitting run right after; alone, the other sizing builds its image */
    CallConfig defaults = test_config(20000);
    CHECK_EQ_INT(run_chain_with(r, c, 1, 1000, &defaults, 1), PTO_OK);
    CHECK_EQ_INT(run_chain_with(r, c, 1, 1000, &cfg, 0), PTO_OK);
    CHECK(host_api_acquire_pooled_runtime_arena(&bank0, NULL) != NULL);
    trb_release(r, c);
    runner_destroy(r);
}

TEST(prewarm_builds_the_image_for_its_config_and_runs_of_either_sizing_work)
{
    Runner *r = trb_runner();
    HostApi bank0 = host_api_bind(r, 0, 0, &host_api_ops);
    CallConfig cfg = test_config(20000);
    for (int i = 0; i < PTO_TRB_RING_COUNT; i++)
        cfg.ring_task_window[i] = 16;
    CHECK_EQ_INT(runtime_prewarm(&bank0, &cfg), PTO_OK);
    TrbSizing s;
    trb_sizing_of(&cfg, &s);
    uint64_t image;
    int built;
    CHECK_EQ_INT(trb_image_ensure(&bank0, &s, 1, &image, &built), PTO_OK);
    CHECK_EQ_INT(built, 0);
    RuntimeCallable *c = chain_callable(r);
    for (int round = 0; round < 4; round++)
        CHECK_EQ_INT(run_chain(r, c, 0, 3000), PTO_OK); /* default sizing, rebuilt once */
    trb_release(r, c);
    runner_destroy(r);
}

TEST(an_absurd_ring_sizing_is_refused_without_harm)
{
    setenv("PTORUN_SIM_DEVICE_MEMORY", "256M", 1);
    Runner *r = trb_runner();
    unsetenv("PTORUN_SIM_DEVICE_MEMORY");
    HostApi bank0 = host_api_bind(r, 0, 0, &host_api_ops);
    TrbSizing s = tiny_sizing();
    s.heap[2] = (uint64_t)1 << 62;
    uint64_t image;
    int built;
    CHECK_EQ_INT(trb_image_ensure(&bank0, &s, 1, &image, &built), PTO_ERR_CAPACITY);
    CHECK_CONTAINS(pto_last_error(), "ring sizing");
    s = tiny_sizing();
    s.task_window[1] = (uint64_t)1 << 20; /* 600 MB of task slots: more than this device has */
    CHECK_EQ_INT(trb_image_ensure(&bank0, &s, 1, &image, &built), PTO_ERR_OUT_OF_MEMORY);
    CHECK_EQ_INT(runner_committed_bytes(r), 0);
    /* and runs still work afterwards */
    RuntimeCallable *c = chain_callable(r);
    CHECK_EQ_INT(run_chain(r, c, 0, 100), PTO_OK);
    trb_release(r, c);
    runner_destroy(r);
}
