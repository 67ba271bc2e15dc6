/* The sim runner below any runtime: device images, device memory, arenas,
 * retained buffers, the prebuilt cache and callable uploads (the executor's
 * launches are in test_sim_executor.c). */
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

/* ---- images and lifetime ---------------------------------------------------------- */

TEST(runner_init_refuses_a_second_init_and_comes_back_after_finalize)
{
    Runner *r = test_sim_runner();
    CHECK(r != NULL);
    CHECK_EQ_INT(runner_initialized(r), 1);
    CHECK_EQ_INT(runner_poisoned(r), 0);
    CHECK_EQ_INT(runner_init(r, 0, test_images()), PTO_ERR_BUSY);
    CHECK_CONTAINS(pto_last_error(), "already initialized");
    CHECK_EQ_INT(runner_finalize(r), PTO_OK);
    CHECK_EQ_INT(runner_initialized(r), 0);
    CHECK_EQ_INT(runner_finalize(r), PTO_OK);
    CHECK_EQ_INT(runner_init(r, 1, test_images()), PTO_OK);
    runner_destroy(r);
}

TEST(runner_init_refuses_bad_images_and_stays_uninitialized)
{
    const DeviceImages *good = test_images();
    Runner *r = runner_create();
    uint8_t junk[256];
    memset(junk, 0x5a, sizeof junk);
    DeviceImages bad = *good;
    bad.aicpu = junk;
    bad.aicpu_size = sizeof junk;
    CHECK_EQ_INT(runner_init(r, 0, &bad), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(pto_last_error(), "AICPU image (256 bytes) cannot be loaded");
    bad = *good;
    bad.aicpu = good->aicore; /* an image, but not an executor */
    bad.aicpu_size = good->aicore_size;
    CHECK_EQ_INT(runner_init(r, 0, &bad), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(pto_last_error(), "exports no pto_aicpu_entry");
    bad = *good;
    bad.aicore_size = 0;
    CHECK_EQ_INT(runner_init(r, 0, &bad), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(pto_last_error(), "AICore image is empty");
    CHECK_EQ_INT(runner_init(r, 0, NULL), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(runner_initialized(r), 0);
    CHECK_EQ_INT(runner_committed_bytes(r), 0);
    CHECK_EQ_INT(runner_init(r, 0, good), PTO_OK);
    runner_destroy(r);
}

TEST(the_a5_images_load_and_run_a_graph)
{
    Runner *r = runner_create();
    CHECK(test_images_of("a5") != NULL);
    CHECK_EQ_INT(runner_init(r, 0, test_images_of("a5")), PTO_OK);
    reset_kernels();
    HandTask t[3] = { { record_kernel, PTO_CORE_AIC, 1, { 2, -1, -1, -1 } },
                      { record_kernel, PTO_CORE_AIV, 2, { 2, -1, -1, -1 } },
                      { record_kernel, PTO_CORE_AIV, 3, NO_CONSUMERS } };
    HandGraph g;
    CHECK_EQ_INT(build_graph(r, t, 3, 2, 4, 10000, &g), 0);
    CHECK_EQ_INT(launch_and_await(r, &g), PTO_OK);
    CHECK_EQ_INT(status_of(&g)->tasks_completed, 3);
    free_graph(r, &g);
    runner_destroy(r);
}

/* ---- device memory, arenas, retained buffers, cache --------------------------------- */

TEST(runner_device_memory_helpers_check_their_ranges)
{
    Runner *r = test_sim_runner();
    uint8_t *p = runner_device_malloc(r, 100);
    CHECK(p != NULL);
    CHECK_EQ_INT(runner_device_memset(r, p, 0xab, 100), PTO_OK);
    CHECK(p[0] == 0xab && p[99] == 0xab);
    CHECK_EQ_INT(runner_device_memset(r, p + 50, 0, 51), PTO_ERR_INVALID_ARGUMENT);
    CHECK(p[99] == 0xab);
    CHECK(runner_register_device_memory_to_host(r, p, 100) == p);
    CHECK(runner_register_device_memory_to_host(r, p + 10, 100) == NULL);
    CHECK_EQ_INT(runner_unregister_device_memory_from_host(r, p), PTO_OK);
    CHECK(runner_device_malloc(r, 0) == NULL);
    CHECK_EQ_INT(runner_device_free(r, p), PTO_OK);
    CHECK_EQ_INT(runner_device_free(r, p), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(runner_committed_bytes(r), 0);
    runner_destroy(r);
}

TEST(runner_arenas_grow_or_keep_per_bank_and_are_not_user_freeable)
{
    Runner *r = test_sim_runner();
    size_t size = 0;
    CHECK(runner_acquire_pooled_gm_heap(r, 0, &size) == NULL);
    CHECK_EQ_INT(runner_arena_bank_gm_heap_base(r, 0), 0);
    CHECK_EQ_INT(runner_setup_static_arena(r, 0, 4096, 1024, 2048), PTO_OK);
    CHECK_EQ_INT(runner_committed_bytes(r), 4096 + 1024 + 2048);
    void *heap = runner_acquire_pooled_gm_heap(r, 0, &size);
    CHECK(heap != NULL);
    CHECK_EQ_INT(size, 4096);
    CHECK_EQ_INT(runner_arena_bank_gm_heap_base(r, 0), (uint64_t)(uintptr_t)heap);
    /* equal or smaller keeps, 0 skips */
    CHECK_EQ_INT(runner_setup_static_arena(r, 0, 4000, 0, 2048), PTO_OK);
    CHECK(runner_acquire_pooled_gm_heap(r, 0, &size) == heap);
    CHECK_EQ_INT(runner_committed_bytes(r), 4096 + 1024 + 2048);
    /* larger grows */
    CHECK_EQ_INT(runner_setup_static_arena(r, 0, 0, 8192, 0), PTO_OK);
    runner_acquire_pooled_gm_sm(r, 0, &size);
    CHECK_EQ_INT(size, 8192);
    CHECK_EQ_INT(runner_committed_bytes(r), 4096 + 8192 + 2048);
    /* another bank has its own */
    CHECK_EQ_INT(runner_setup_static_arena(r, 1, 4096, 0, 0), PTO_OK);
    CHECK(runner_arena_bank_gm_heap_base(r, 1) != 0);
    CHECK(runner_arena_bank_gm_heap_base(r, 1) != runner_arena_bank_gm_heap_base(r, 0));
    CHECK_EQ_INT(runner_setup_static_arena(r, 2, 4096, 0, 0), PTO_ERR_INVALID_ARGUMENT);
    /* the device context's, not the user's */
    CHECK_EQ_INT(runner_device_free(r, heap), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(pto_last_error(), "an arena owned by the device context");
    CHECK(runner_acquire_pooled_gm_heap(r, 0, &size) == heap);
    /* an arena that cannot grow empties its bank */
    CHECK_EQ_INT(runner_setup_static_arena(r, 1, 4096, 4096, 4096), PTO_OK);
    setenv("PTORUN_SIM_DEVICE_MEMORY", "64K", 1);
    Runner *small = runner_create();
    unsetenv("PTORUN_SIM_DEVICE_MEMORY");
    CHECK_EQ_INT(runner_setup_static_arena(small, 1, 4096, 4096, 4096), PTO_OK);
    CHECK_EQ_INT(runner_setup_static_arena(small, 1, 4096, 60 << 10, 0), PTO_ERR_OUT_OF_MEMORY);
    CHECK_CONTAINS(pto_last_error(), "sim device memory exhausted");
    CHECK_EQ_INT(runner_arena_bank_gm_heap_base(small, 1), 0);
    CHECK_EQ_INT(runner_committed_bytes(small), 0);
    runner_destroy(small);
    CHECK_EQ_INT(runner_finalize(r), PTO_OK);
    CHECK_EQ_INT(runner_committed_bytes(r), 0);
    CHECK_EQ_INT(runner_arena_bank_gm_heap_base(r, 0), 0);
    runner_destroy(r);
}

TEST(runner_retained_buffers_belong_to_their_slot_until_freed)
{
    Runner *r = test_sim_runner();
    void *dev = (void *)1;
    size_t size = 1;
    CHECK_EQ_INT(runner_get_retained_temp_buffer(r, 1, &dev, &size), PTO_OK);
    CHECK(dev == NULL && size == 0);
    void *a = runner_device_malloc(r, 2048);
    CHECK_EQ_INT(runner_set_retained_temp_buffer(r, 1, a, 2048), PTO_OK);
    CHECK_EQ_INT(runner_retained_temp_addr(r, 1), (uint64_t)(uintptr_t)a);
    CHECK_EQ_INT(runner_retained_temp_addr(r, 0), 0);
    CHECK_EQ_INT(runner_set_retained_temp_buffer(r, 1, a, 4096), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(runner_set_retained_temp_buffer(r, 2, a, 2048), PTO_ERR_INVALID_ARGUMENT);
    /* freeing it (to grow it) forgets it */
    CHECK_EQ_INT(runner_device_free(r, a), PTO_OK);
    CHECK_EQ_INT(runner_retained_temp_addr(r, 1), 0);
    void *b = runner_device_malloc(r, 4096);
    CHECK_EQ_INT(runner_set_retained_temp_buffer(r, 1, b, 4096), PTO_OK);
    CHECK_EQ_INT(runner_get_retained_temp_buffer(r, 1, &dev, &size), PTO_OK);
    CHECK(dev == b && size == 4096);
    CHECK_EQ_INT(runner_finalize(r), PTO_OK);
    CHECK_EQ_INT(runner_committed_bytes(r), 0);
    CHECK_EQ_INT(runner_retained_temp_addr(r, 1), 0);
    runner_destroy(r);
}

TEST(runner_prebuilt_cache_holds_one_bank0_entry)
{
    Runner *r = test_sim_runner();
    CHECK_EQ_INT(runner_setup_static_arena(r, 0, 0, 0, 4096), PTO_OK);
    void *arena = runner_acquire_pooled_runtime_arena(r, 0, NULL);
    void *image = (void *)1;
    uint64_t key[2] = { 16, 32 };
    CHECK_EQ_INT(runner_lookup_prebuilt_runtime_arena_cache(r, 0, 77, key, sizeof key, &image), 0);
    CHECK(image == NULL);
    CHECK_EQ_INT(runner_mark_prebuilt_runtime_arena_cached(r, 0, 77, key, sizeof key, arena), PTO_OK);
    CHECK_EQ_INT(runner_lookup_prebuilt_runtime_arena_cache(r, 0, 77, key, sizeof key, &image), 1);
    CHECK(image == arena);
    uint64_t other[2] = { 16, 64 };
    CHECK_EQ_INT(runner_lookup_prebuilt_runtime_arena_cache(r, 0, 77, other, sizeof other, &image), 0);
    CHECK_EQ_INT(runner_lookup_prebuilt_runtime_arena_cache(r, 0, 78, key, sizeof key, &image), 0);
    CHECK_EQ_INT(runner_lookup_prebuilt_runtime_arena_cache(r, 1, 77, key, sizeof key, &image),
                 PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(runner_mark_prebuilt_runtime_arena_cached(r, 0, 77, key, sizeof key, key), PTO_ERR_INVALID_ARGUMENT);
    /* the image lived in the runtime arena: when it moves the entry goes */
    CHECK_EQ_INT(runner_setup_static_arena(r, 0, 0, 0, 1 << 20), PTO_OK);
    CHECK_EQ_INT(runner_lookup_prebuilt_runtime_arena_cache(r, 0, 77, key, sizeof key, &image), 0);
    runner_destroy(r);
}

/* ---- callable uploads ---------------------------------------------------------------- */

static uint8_t *small_callable(uint32_t *size, const char *kernel)
{
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_OUT };
    tcb_signature(&b, sig, 1);
    tcb_child(&b, 3, PTO_CORE_AIV, kernel);
    tcb_child(&b, 9, PTO_CORE_AIC, "noop");
    uint8_t *c = tcb_build(&b, size);
    tcb_free(&b);
    return c;
}

static uint64_t resolved(const void *dev_copy, uint32_t child)
{
    const ChipCallableHeader *h = dev_copy;
    ChipCallableChild c;
    memcpy(&c, (const uint8_t *)dev_copy + h->children.offset + child * sizeof c, sizeof c);
    return c.resolved_addr;
}

TEST(runner_uploads_once_per_content_and_resolves_kernels_per_device)
{
    Runner *r = test_sim_runner();
    Runner *other = test_sim_runner();
    uint32_t size;
    uint8_t *c = small_callable(&size, "vfill");
    uint64_t hash = pto_fnv1a64(c, size);
    void *d1 = NULL, *d2 = NULL, *d3 = NULL, *e = NULL;
    CHECK_EQ_INT(runner_upload_chip_callable_buffer(r, c, size, hash, &d1), PTO_OK);
    CHECK_EQ_INT(runner_committed_bytes(r), size);
    CHECK_EQ_INT(runner_upload_chip_callable_buffer(r, c, size, hash, &d2), PTO_OK);
    CHECK(d1 == d2);
    CHECK_EQ_INT(runner_committed_bytes(r), size);
    CHECK(resolved(d1, 0) != 0 && resolved(d1, 1) != 0 && resolved(d1, 0) != resolved(d1, 1));
    CHECK(resolved(c, 0) == 0); /* the caller's bytes are never patched */
    /* other content, other copy */
    uint32_t size2;
    uint8_t *c2 = small_callable(&size2, "vcopy");
    CHECK_EQ_INT(runner_upload_chip_callable_buffer(r, c2, size2, pto_fnv1a64(c2, size2), &d3), PTO_OK);
    CHECK(d3 != d1);
    CHECK_EQ_INT(runner_committed_bytes(r), size + size2);
    /* another device has its own AICore image: its kernels live elsewhere */
    CHECK_EQ_INT(runner_upload_chip_callable_buffer(other, c, size, hash, &e), PTO_OK);
    CHECK(resolved(e, 0) != 0 && resolved(e, 0) != resolved(d1, 0));
    /* refcounted release */
    CHECK_EQ_INT(runner_device_free(r, d1), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(runner_release_chip_callable_buffer(r, d1), PTO_OK);
    CHECK_EQ_INT(runner_committed_bytes(r), size + size2);
    CHECK_EQ_INT(runner_release_chip_callable_buffer(r, d1), PTO_OK);
    CHECK_EQ_INT(runner_committed_bytes(r), size2);
    CHECK_EQ_INT(runner_release_chip_callable_buffer(r, d1), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(runner_release_chip_callable_buffer(r, d3), PTO_OK);
    CHECK_EQ_INT(runner_committed_bytes(r), 0);
    /* a hash that lies does not merge different bytes */
    CHECK_EQ_INT(runner_upload_chip_callable_buffer(r, c, size, 1, &d1), PTO_OK);
    CHECK_EQ_INT(runner_upload_chip_callable_buffer(r, c2, size2, 1, &d2), PTO_OK);
    CHECK(d1 != d2);
    /* a callable that is not one */
    c[0] ^= 1;
    CHECK_EQ_INT(runner_upload_chip_callable_buffer(r, c, size, hash, &d1), PTO_ERR_BAD_CALLABLE);
    CHECK_CONTAINS(pto_last_error(), "bad magic");
    c[0] ^= 1;
    /* nothing to resolve against before init */
    Runner *cold = runner_create();
    CHECK_EQ_INT(runner_upload_chip_callable_buffer(cold, c, size, hash, &d1), PTO_ERR_WRONG_PHASE);
    runner_destroy(cold);
    free(c);
    free(c2);
    runner_destroy(other);
    runner_destroy(r);
}
