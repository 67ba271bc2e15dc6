/* Device-memory group through the exported contract of every built library. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptest.h"
#include "test_util.h"

static void check_round_trip(const char *name)
{
    LoadedLib lib;
    CHECK(test_load_lib(name, &lib) == 0);
    void *ctx = lib.create();
    CHECK(ctx != NULL);
    CHECK_EQ_INT(lib.committed(ctx), 0);
    CHECK(strcmp(lib.last_error(), "") == 0);

    enum { N = 4096 };
    uint8_t in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = (uint8_t)(i * 7 + 3);
    void *a = lib.malloc_(ctx, N);
    void *b = lib.malloc_(ctx, 100);
    CHECK(a != NULL && b != NULL);
    CHECK_EQ_INT(lib.committed(ctx), N + 100);
    CHECK_EQ_INT(lib.copy_to(ctx, a, in, N), PTO_OK);
    memset(out, 0, sizeof out);
    CHECK_EQ_INT(lib.copy_from(ctx, out, a, N), PTO_OK);
    CHECK(memcmp(in, out, N) == 0);
    /* a sub-range inside the allocation is fine */
    CHECK_EQ_INT(lib.copy_from(ctx, out, (uint8_t *)a + 10, N - 10), PTO_OK);
    CHECK(memcmp(in + 10, out, N - 10) == 0);
    /* zero bytes at the very end are inside */
    CHECK_EQ_INT(lib.copy_to(ctx, (uint8_t *)a + N, in, 0), PTO_OK);

    lib.free_(ctx, b);
    CHECK_EQ_INT(lib.committed(ctx), N);
    lib.free_(ctx, a);
    CHECK_EQ_INT(lib.committed(ctx), 0);
    lib.destroy(ctx);
    test_unload_lib(&lib);
}

TEST(device_memory_round_trip_and_accounting_on_every_sim_library)
{
    for (int i = 0; i < 4; i++)
        check_round_trip(TEST_SIM_VARIANTS[i]);
}

static void check_refusals(const char *name)
{
    LoadedLib lib;
    CHECK(test_load_lib(name, &lib) == 0);
    void *ctx = lib.create();
    uint8_t host[256] = { 0 };
    uint8_t *a = lib.malloc_(ctx, 128);
    CHECK(a != NULL);

    /* copies past the end, straddling, before the start, of freed or foreign memory */
    CHECK_EQ_INT(lib.copy_to(ctx, a, host, 129), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(lib.last_error(), "not inside one live allocation");
    CHECK_EQ_INT(lib.copy_from(ctx, host, a + 100, 29), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(lib.copy_from(ctx, host, a - 1, 1), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(lib.copy_to(ctx, host, host, 8), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(lib.copy_to(ctx, NULL, host, 8), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(lib.last_error(), "NULL device pointer");
    CHECK_EQ_INT(lib.copy_from(ctx, NULL, a, 8), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(lib.copy_from(NULL, host, a, 8), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(lib.last_error(), "device context is NULL");

    /* a free of an interior or foreign pointer is refused, logged and not performed */
    lib.free_(ctx, a + 8);
    CHECK_CONTAINS(lib.last_error(), "not the start of a live allocation");
    lib.free_(ctx, host);
    CHECK_EQ_INT(lib.committed(ctx), 128);
    lib.free_(ctx, NULL);
    CHECK(strcmp(lib.last_error(), "") == 0);

    /* zero-size allocation */
    CHECK(lib.malloc_(ctx, 0) == NULL);
    CHECK_CONTAINS(lib.last_error(), "size 0");

    /* the context still works afterwards */
    CHECK_EQ_INT(lib.copy_to(ctx, a, host, 128), PTO_OK);
    lib.free_(ctx, a);
    /* a double free is refused too */
    lib.free_(ctx, a);
    CHECK_CONTAINS(lib.last_error(), "not the start of a live allocation");
    CHECK_EQ_INT(lib.copy_to(ctx, a, host, 1), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(lib.committed(ctx), 0);
    lib.destroy(ctx);
    test_unload_lib(&lib);
}

TEST(device_memory_refuses_frees_and_copies_outside_live_allocations)
{
    for (int i = 0; i < 4; i++)
        check_refusals(TEST_SIM_VARIANTS[i]);
}

TEST(device_memory_capacity_limit_gives_out_of_memory)
{
    setenv("PTORUN_SIM_DEVICE_MEMORY", "1K", 1);
    LoadedLib lib;
    CHECK(test_load_lib("a5_sim_trb", &lib) == 0);
    void *ctx = lib.create();
    unsetenv("PTORUN_SIM_DEVICE_MEMORY");
    void *a = lib.malloc_(ctx, 1000);
    CHECK(a != NULL);
    CHECK(lib.malloc_(ctx, 25) == NULL);
    CHECK_CONTAINS(lib.last_error(), "exhausted");
    void *b = lib.malloc_(ctx, 24);
    CHECK(b != NULL);
    lib.free_(ctx, a);
    lib.free_(ctx, b);
    CHECK_EQ_INT(lib.committed(ctx), 0);
    lib.destroy(ctx);
    test_unload_lib(&lib);
}

TEST(onboard_device_memory_is_refused_before_simpler_init)
{
    for (int i = 4; i < 8; i++) {
        LoadedLib lib;
        CHECK(test_load_lib(TEST_ALL_VARIANTS[i], &lib) == 0);
        void *ctx = lib.create();
        CHECK(ctx != NULL);
        CHECK(lib.malloc_(ctx, 64) == NULL);
        CHECK_CONTAINS(lib.last_error(), "not initialized");
        CHECK_EQ_INT(lib.committed(ctx), 0);
        lib.destroy(ctx);
        test_unload_lib(&lib);
    }
}
