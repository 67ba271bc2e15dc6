/* Storage rules through the exported functions of every built library (dlopen).
 * The platforms' devices are not built in this tree yet, so simpler_init cannot
 * succeed here: these are the rules that hold before init. Whole runs through
 * the same exported functions are in lifecycle_tests (fake platform). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptest.h"
#include "test_util.h"

typedef int (*PhaseFn)(void *, void *);

typedef struct RunApi {
    size_t (*size)(void);
    size_t (*alignment)(void);
    int (*init)(void *, int, const uint8_t *, size_t, const uint8_t *, size_t, const uint8_t *, size_t,
                const CallConfig *);
    int (*finalize_device)(void *);
    int (*register_)(void *, int32_t, const void *);
    int (*unregister)(void *, int32_t);
    int (*prepare)(void *, void *, int32_t, const void *, const CallConfig *, const NativeRunDescriptor *);
    int (*run)(void *, void *, int32_t, const void *, const CallConfig *, const NativeRunDescriptor *);
    PhaseFn phase[4]; /* launch, poll, wait, finalize */
    int (*concurrent)(void *);
} RunApi;

static int resolve(LoadedLib *lib, RunApi *api)
{
    struct { void *dst; const char *sym; } table[] = {
        { &api->size, "get_runtime_size" },
        { &api->alignment, "get_runtime_alignment" },
        { &api->init, "simpler_init" },
        { &api->finalize_device, "finalize_device" },
        { &api->register_, "simpler_register_callable" },
        { &api->unregister, "simpler_unregister_callable" },
        { &api->prepare, "simpler_prepare_run" },
        { &api->run, "simpler_run" },
        { &api->phase[0], "simpler_launch_run" },
        { &api->phase[1], "simpler_poll_run" },
        { &api->phase[2], "simpler_wait_run" },
        { &api->phase[3], "simpler_finalize_run" },
        { &api->concurrent, "supports_concurrent_native_prepare_ctx" },
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        void *f = dlsym(lib->handle, table[i].sym);
        if (f == NULL)
            return -1;
        memcpy(table[i].dst, &f, sizeof f);
    }
    return 0;
}

static void check_rules_before_init(const char *name)
{
    LoadedLib lib;
    RunApi api;
    CHECK(test_load_lib(name, &lib) == 0);
    CHECK(resolve(&lib, &api) == 0);
    size_t size = api.size(), align = api.alignment();
    CHECK(size >= 8);
    CHECK(align >= 8 && (align & (align - 1)) == 0);

    void *ctx = lib.create();
    unsigned char *s = aligned_alloc(align, size + align);
    memset(s, 0, size + align);
    ChipStorageTaskArgs *args = aligned_alloc(64, sizeof *args);
    memset(args, 0, sizeof *args);
    CallConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    NativeRunDescriptor d = { .pipeline_slot = 1, .arena_bank = 1, .run_id = 4, .generation = 2, .run_epoch = 77 };

    CHECK_EQ_INT(api.prepare(NULL, s, 0, args, &cfg, &d), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(api.prepare(ctx, NULL, 0, args, &cfg, &d), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(api.prepare(ctx, s, 0, args, NULL, &d), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(api.prepare(ctx, s, 0, args, &cfg, NULL), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(api.prepare(ctx, s, 0, NULL, &cfg, &d), PTO_ERR_INVALID_ARGUMENT);
    d.pipeline_slot = 2;
    CHECK_EQ_INT(api.prepare(ctx, s, 0, args, &cfg, &d), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(lib.last_error(), "pipeline_slot 2");
    CHECK_CONTAINS(lib.last_error(), "run_id=4 slot=2 generation=2");
    d.pipeline_slot = 1;
    d.arena_bank = 2;
    CHECK_EQ_INT(api.prepare(ctx, s, 0, args, &cfg, &d), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(lib.last_error(), "arena_bank 2");
    d.arena_bank = 1;
    CHECK_EQ_INT(api.prepare(ctx, s + 8, 0, args, &cfg, &d), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(lib.last_error(), "not aligned");
    cfg.timeout_ms = -1;
    CHECK_EQ_INT(api.prepare(ctx, s, 0, args, &cfg, &d), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(lib.last_error(), "timeout_ms");
    cfg.timeout_ms = 0;
    cfg.ring_heap[0] = 1000;
    CHECK_EQ_INT(api.prepare(ctx, s, 0, args, &cfg, &d), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(lib.last_error(), "ring_heap[0]");
    cfg.ring_heap[0] = 0;
    CHECK_EQ_INT(api.prepare(ctx, s, 0, args, &cfg, &d), PTO_ERR_WRONG_PHASE); /* before simpler_init */
    CHECK_CONTAINS(lib.last_error(), "not initialized");
    CHECK_CONTAINS(lib.last_error(), "run_epoch=77");
    CHECK_EQ_INT(api.run(ctx, s, 0, args, &cfg, &d), PTO_ERR_WRONG_PHASE);
    uint64_t tag;
    memcpy(&tag, s, 8);
    CHECK(tag == 0);

    /* phase calls on an empty storage, a garbage tag, NULLs */
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_INT(api.phase[i](ctx, s), PTO_ERR_BAD_STORAGE);
        CHECK_CONTAINS(lib.last_error(), "does not hold a prepared run");
        CHECK_EQ_INT(api.phase[i](ctx, NULL), PTO_ERR_INVALID_ARGUMENT);
        CHECK_EQ_INT(api.phase[i](NULL, s), PTO_ERR_INVALID_ARGUMENT);
    }
    memset(s, 0x42, 8);
    CHECK_EQ_INT(api.phase[3](ctx, s), PTO_ERR_BAD_STORAGE);

    CHECK_EQ_INT(api.register_(ctx, 0, args), PTO_ERR_WRONG_PHASE);
    CHECK_EQ_INT(api.unregister(ctx, 0), PTO_ERR_WRONG_PHASE);
    CHECK_EQ_INT(api.register_(ctx, 64, args), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(api.finalize_device(ctx), PTO_OK); /* nothing to release */
    /* hbg always; trb where its contract has a second slot (a2a3), a successor
       that fits the image bound (docs/device.md) */
    int overlaps = strstr(name, "hbg") != NULL || strstr(name, "a2a3") != NULL;
    CHECK_EQ_INT(api.concurrent(ctx), overlaps ? 1 : 0);
    lib.destroy(ctx);
    CHECK(strcmp(lib.last_error(), "") == 0);
    free(args);
    free(s);
    test_unload_lib(&lib);
}

TEST(storage_and_argument_rules_before_init_on_every_library)
{
    for (int i = 0; i < 8; i++)
        check_rules_before_init(TEST_ALL_VARIANTS[i]);
}
