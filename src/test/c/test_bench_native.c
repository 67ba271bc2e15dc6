/* The benchmark suite's native side (bench/pto_bench.c) linked into the native tests,
 * so it also runs under ASan/UBSan and TSan: the C driver of a trivial run on every sim
 * library through the exported contract, the floor's round trips, memcpy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/pto_bench.h"
#include "ptest.h"
#include "test_callable.h"
#include "test_sim.h"
#include "test_util.h"

TEST(bench_c_driver_runs_trivial_runs_on_every_sim_library_and_keeps_device_memory_flat)
{
    TestCallableBuilder b;
    tcb_init(&b);
    tcb_child(&b, 0, PTO_CORE_AIV, "noop");
    tcb_submit(&b, 0, NULL, 0);
    uint32_t size;
    uint8_t *callable = tcb_build(&b, &size);
    tcb_free(&b);
    const char *dir = getenv("PTORUN_LIB_DIR");
    for (int v = 0; v < 4; v++) {
        const char *variant = TEST_SIM_VARIANTS[v];
        char path[4096];
        snprintf(path, sizeof path, "%s/libptorun_%s.so", dir ? dir : ".", variant);
        const DeviceImages *images = test_images_of(strncmp(variant, "a5", 2) == 0 ? "a5" : "a2a3");
        CHECK(images != NULL);
        if (images == NULL)
            continue;
        PtoBenchCycle *c =
            pto_bench_cycle_open(path, images->aicpu, images->aicpu_size, images->aicore, images->aicore_size, callable, 3);
        CHECK(c != NULL);
        if (c == NULL) {
            fprintf(stderr, "%s: %s\n", variant, pto_bench_last_error());
            continue;
        }
        CHECK_EQ_INT(pto_bench_cycle_run(c), PTO_OK);
        size_t baseline = pto_bench_cycle_committed_device_memory(c);
        CHECK(baseline > 0);
        for (int i = 0; i < 200; i++) {
            CHECK_EQ_INT(pto_bench_cycle_run(c), PTO_OK);
            CHECK(pto_bench_cycle_committed_device_memory(c) == baseline);
        }
        pto_bench_cycle_close(c);
    }
    free(callable);
}

TEST(bench_c_driver_refuses_a_missing_library_with_its_name)
{
    uint8_t image = 1;
    CHECK(pto_bench_cycle_open("/nonexistent/libptorun_x.so", &image, 1, &image, 1, &image, 0) == NULL);
    CHECK_CONTAINS(pto_bench_last_error(), "dlopen /nonexistent/libptorun_x.so");
}

TEST(bench_floor_round_trips_are_answered_and_memcpy_copies)
{
    PtoBenchPingPong *p = pto_bench_pingpong_open();
    CHECK(p != NULL);
    for (int i = 0; i < 2000; i++)
        pto_bench_pingpong_round(p); /* returns only once the echo thread answered */
    pto_bench_pingpong_close(p);

    enum { N = 4096 + 3 };
    uint8_t *src = malloc(N), *dst = calloc(1, N);
    for (int i = 0; i < N; i++)
        src[i] = (uint8_t)(i * 31 + 7);
    pto_bench_memcpy((uint64_t)(uintptr_t)dst, (uint64_t)(uintptr_t)src, N);
    CHECK(memcmp(dst, src, N) == 0);
    free(src);
    free(dst);
}
