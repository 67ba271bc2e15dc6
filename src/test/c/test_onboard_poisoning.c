/* Poisoning is exact, through the exported contract of every built library and
 * the emulated driver's fault injection: on an onboard library every
 * PTO_ERR_DEVICE / PTO_ERR_TIMEOUT a call returns has poisoned the device
 * context (the next prepare is refused with PTO_ERR_POISONED) and says so once
 * in its message, whatever the failed driver call was (a copy, a launch); other
 * failures (out of memory, a bad argument) poison nothing; finalize_device
 * clears it and a new context runs golden. On a sim library a device failure
 * (the injected submit failure) leaves the context usable. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptest.h"
#include "ptorun/pto_emudrv.h"
#include "test_callable.h"
#include "test_sim.h"
#include "test_util.h"

enum { N = 64, ADD = 3 };

typedef struct Lib {
    LoadedLib lib;
    int (*init)(void *, int, const uint8_t *, size_t, const uint8_t *, size_t, const uint8_t *, size_t,
                const CallConfig *);
    int (*finalize_device)(void *);
    int (*register_)(void *, int32_t, const void *);
    int (*prepare)(void *, void *, int32_t, const void *, const CallConfig *, const NativeRunDescriptor *);
    int (*launch)(void *, void *);
    int (*wait)(void *, void *);
    int (*finalize)(void *, void *);
    size_t (*size)(void);
} Lib;

static int load(const char *variant, Lib *l)
{
    if (test_load_lib(variant, &l->lib) != 0)
        return -1;
    *(void **)&l->init = dlsym(l->lib.handle, "simpler_init");
    *(void **)&l->finalize_device = dlsym(l->lib.handle, "finalize_device");
    *(void **)&l->register_ = dlsym(l->lib.handle, "simpler_register_callable");
    *(void **)&l->prepare = dlsym(l->lib.handle, "simpler_prepare_run");
    *(void **)&l->launch = dlsym(l->lib.handle, "simpler_launch_run");
    *(void **)&l->wait = dlsym(l->lib.handle, "simpler_wait_run");
    *(void **)&l->finalize = dlsym(l->lib.handle, "simpler_finalize_run");
    *(void **)&l->size = dlsym(l->lib.handle, "get_runtime_size");
    return l->init && l->finalize_device && l->register_ && l->prepare && l->launch && l->wait && l->finalize &&
                   l->size
               ? 0
               : -1;
}

/* The emulated driver the onboard libraries load (the same file, so the same instance). */
static int (*inject)(int, int);
static void (*stats)(PtoEmuStats *);

static int load_driver(void)
{
    const char *dir = getenv("PTORUN_LIB_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/libptorun_emudrv.so", dir ? dir : ".");
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL)
        return -1;
    *(void **)&inject = dlsym(h, "ptorun_emudrv_inject");
    *(void **)&stats = dlsym(h, "ptorun_emudrv_stats");
    return inject && stats ? 0 : -1;
}

static PtoEmuStats stats_now(void)
{
    PtoEmuStats s;
    stats(&s);
    return s;
}

/* c = a + b over N floats. */
static uint8_t *vadd_callable(void)
{
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_IN, PTO_ARG_IN, PTO_ARG_OUT };
    tcb_signature(&b, sig, 3);
    tcb_child(&b, 0, PTO_CORE_AIV, "vadd");
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, 0, N * 4), tcb_tensor(1, PTO_ARG_IN, 0, N * 4),
                            tcb_tensor(2, PTO_ARG_OUT, 0, N * 4) };
    tcb_submit(&b, 0, p, 3);
    uint32_t size;
    uint8_t *bytes = tcb_build(&b, &size);
    tcb_free(&b);
    return bytes;
}

/* One chip: a context initialized with its arch's images, the vadd registered. */
typedef struct Chip {
    Lib l;
    void *ctx;
    void *storage;
    ChipStorageTaskArgs *args;
    float a[N], b[N], c[N];
    CallConfig cfg;
} Chip;

static int open_chip(const char *variant, Chip *c, const uint8_t *callable)
{
    memset(c, 0, sizeof *c);
    if (load(variant, &c->l) != 0)
        return -1;
    const DeviceImages *img = test_images_of(strncmp(variant, "a5", 2) == 0 ? "a5" : "a2a3");
    c->ctx = c->l.lib.create();
    if (c->ctx == NULL ||
        c->l.init(c->ctx, 0, img->aicpu, img->aicpu_size, img->aicore, img->aicore_size, NULL, 0, NULL) != PTO_OK ||
        c->l.register_(c->ctx, ADD, callable) != PTO_OK) {
        fprintf(stderr, "%s: %s\n", variant, c->l.lib.last_error());
        return -1;
    }
    size_t bytes = (c->l.size() + 63) / 64 * 64;
    c->storage = aligned_alloc(64, bytes);
    memset(c->storage, 0, bytes);
    c->args = test_args();
    c->args->tensor_count = 3;
    c->args->tensors[0] = test_f32_tensor(c->a, N);
    c->args->tensors[1] = test_f32_tensor(c->b, N);
    c->args->tensors[2] = test_f32_tensor(c->c, N);
    c->cfg = test_config(20000);
    return 0;
}

static void close_chip(Chip *c)
{
    if (c->ctx != NULL)
        c->l.lib.destroy(c->ctx); /* finalizes the device first */
    free(c->storage);
    free(c->args);
    test_unload_lib(&c->l.lib);
}

static int prepare(Chip *c, uint64_t run_id)
{
    NativeRunDescriptor d = { .run_id = run_id, .run_epoch = run_id };
    return c->l.prepare(c->ctx, c->storage, ADD, c->args, &c->cfg, &d);
}

/* A whole run; PTO_OK and c = a + b, or the first failure (the run finalized). */
static int run_golden(Chip *c, uint64_t run_id)
{
    for (int i = 0; i < N; i++) {
        c->a[i] = (float)i;
        c->b[i] = 0.5f * (float)i;
        c->c[i] = -1.0f;
    }
    int rc = prepare(c, run_id);
    if (rc != PTO_OK)
        return rc;
    int first = c->l.launch(c->ctx, c->storage);
    if (first == PTO_OK)
        first = c->l.wait(c->ctx, c->storage);
    int rc2 = c->l.finalize(c->ctx, c->storage);
    if (first != PTO_OK || rc2 != PTO_OK)
        return first != PTO_OK ? first : rc2;
    for (int i = 0; i < N; i++)
        if (c->c[i] != 1.5f * (float)i)
            return PTO_ERR_FAILED;
    return PTO_OK;
}

static int count_of(const char *haystack, const char *needle)
{
    int n = 0;
    for (const char *p = haystack; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

#define POISONED_MARK "the device context is poisoned until finalize_device"

/* The device failure just returned poisoned the context: said once in its
   message, the next prepare refused, and after finalize_device a new context
   on the same device runs golden with the driver's accounting back. */
static void check_poisoned_then_recovers(const char *variant, Chip *c, const char *message, PtoEmuStats baseline,
                                         const uint8_t *callable)
{
    CHECK_EQ_INT(count_of(message, POISONED_MARK), 1);
    CHECK_EQ_INT(prepare(c, 90), PTO_ERR_POISONED);
    CHECK_CONTAINS(c->l.lib.last_error(), "run_id=90");
    CHECK_EQ_INT(c->l.finalize_device(c->ctx), PTO_OK);
    close_chip(c);
    PtoEmuStats after = stats_now();
    CHECK(memcmp(&after, &baseline, sizeof after) == 0);
    Chip again;
    REQUIRE(open_chip(variant, &again, callable) == 0);
    CHECK_EQ_INT(run_golden(&again, 91), PTO_OK);
    close_chip(&again);
}

static void onboard_variants(void (*scenario)(const char *, const uint8_t *))
{
    REQUIRE(load_driver() == 0);
    uint8_t *callable = vadd_callable();
    for (int v = 4; v < 8; v++) {
        scenario(TEST_ALL_VARIANTS[v], callable);
        inject(PTO_EMU_FAULT_NONE, 0);
    }
    free(callable);
}

static void failed_copy_poisons(const char *variant, const uint8_t *callable)
{
    PtoEmuStats baseline = stats_now();
    Chip c;
    REQUIRE(open_chip(variant, &c, callable) == 0);
    CHECK_EQ_INT(run_golden(&c, 1), PTO_OK);
    void *dev = c.l.lib.malloc_(c.ctx, 256);
    REQUIRE(dev != NULL);
    CHECK_EQ_INT(inject(PTO_EMU_FAULT_H2D, 0), 0);
    CHECK_EQ_INT(c.l.lib.copy_to(c.ctx, dev, c.a, 256), PTO_ERR_DEVICE);
    char message[512];
    snprintf(message, sizeof message, "%s", c.l.lib.last_error());
    CHECK_CONTAINS(c.l.lib.last_error(), "memcpy_h2d");
    c.l.lib.free_(c.ctx, dev);
    check_poisoned_then_recovers(variant, &c, message, baseline, callable);
}

TEST(onboard_a_failed_copy_is_a_device_failure_that_poisons)
{
    onboard_variants(failed_copy_poisons);
}

static void refused_launch_poisons(const char *variant, const uint8_t *callable)
{
    PtoEmuStats baseline = stats_now();
    Chip c;
    REQUIRE(open_chip(variant, &c, callable) == 0);
    CHECK_EQ_INT(prepare(&c, 2), PTO_OK);
    CHECK_EQ_INT(inject(PTO_EMU_FAULT_LAUNCH, 0), 0);
    CHECK_EQ_INT(c.l.launch(c.ctx, c.storage), PTO_ERR_DEVICE); /* refused before the marker */
    CHECK_CONTAINS(c.l.lib.last_error(), "launch refused");
    CHECK_EQ_INT(c.l.finalize(c.ctx, c.storage), PTO_ERR_DEVICE);
    char message[512];
    snprintf(message, sizeof message, "%s", c.l.lib.last_error());
    CHECK_CONTAINS(c.l.lib.last_error(), "run_id=2");
    check_poisoned_then_recovers(variant, &c, message, baseline, callable);
}

TEST(onboard_a_refused_launch_is_a_device_failure_that_poisons)
{
    onboard_variants(refused_launch_poisons);
}

static void other_failures_do_not_poison(const char *variant, const uint8_t *callable)
{
    Chip c;
    REQUIRE(open_chip(variant, &c, callable) == 0);
    CHECK_EQ_INT(inject(PTO_EMU_FAULT_ALLOC, 0), 0);
    CHECK(c.l.lib.malloc_(c.ctx, 256) == NULL);
    CHECK_CONTAINS(c.l.lib.last_error(), "(-8)");
    void *dev = c.l.lib.malloc_(c.ctx, 256);
    REQUIRE(dev != NULL);
    CHECK_EQ_INT(c.l.lib.copy_to(c.ctx, dev, c.a, 512), PTO_ERR_INVALID_ARGUMENT); /* past the allocation */
    CHECK(strstr(c.l.lib.last_error(), POISONED_MARK) == NULL);
    c.l.lib.free_(c.ctx, dev);
    CHECK_EQ_INT(run_golden(&c, 3), PTO_OK);
    close_chip(&c);
}

TEST(onboard_out_of_memory_and_a_bad_argument_do_not_poison)
{
    onboard_variants(other_failures_do_not_poison);
}

/* PTORUN_SIM_FAIL_ENQUEUE_AFTER (read at simpler_init): the second submit fails
   with PTO_ERR_DEVICE before the marker; the sim context stays usable. */
TEST(sim_a_device_failure_leaves_the_context_usable)
{
    uint8_t *callable = vadd_callable();
    for (int v = 0; v < 4; v++) {
        setenv("PTORUN_SIM_FAIL_ENQUEUE_AFTER", "1", 1);
        Chip c;
        int opened = open_chip(TEST_SIM_VARIANTS[v], &c, callable);
        unsetenv("PTORUN_SIM_FAIL_ENQUEUE_AFTER");
        REQUIRE(opened == 0);
        CHECK_EQ_INT(run_golden(&c, 1), PTO_OK);
        CHECK_EQ_INT(prepare(&c, 2), PTO_OK);
        CHECK_EQ_INT(c.l.launch(c.ctx, c.storage), PTO_ERR_DEVICE);
        CHECK_CONTAINS(c.l.lib.last_error(), "injected failure before the launch marker");
        CHECK(strstr(c.l.lib.last_error(), "poisoned") == NULL);
        CHECK_EQ_INT(c.l.finalize(c.ctx, c.storage), PTO_ERR_DEVICE);
        CHECK(strstr(c.l.lib.last_error(), "poisoned") == NULL);
        CHECK_EQ_INT(run_golden(&c, 3), PTO_OK); /* not refused: nothing was poisoned */
        close_chip(&c);
    }
    free(callable);
}
