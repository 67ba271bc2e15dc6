/*
 * The emulated device driver (libptorun_emudrv.so) through its exported table
 * only, dlopen'ed from $PTORUN_LIB_DIR like the onboard runners load it: every
 * table entry, stream ordering and concurrency, the AICPU image's graph work
 * through a launch, each injected fault with its recovery, capacity, and the
 * driver's accounting back to baseline.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "device/pto_device_abi.h"
#include "ptest.h"
#include "ptorun/chip_callable.h"
#include "ptorun/pto_driver.h"
#include "ptorun/pto_emudrv.h"
#include "test_emudrv.h"
#include "test_sim.h"

static PtoDrvStream *new_stream(PtoDrvDevice *dev)
{
    PtoDrvStream *s = NULL;
    CHECK_EQ_INT(API->stream_create(dev, &s), PTO_DRV_OK);
    return s;
}

static uint64_t dev_alloc(PtoDrvDevice *dev, size_t n)
{
    uint64_t a = 0;
    CHECK_EQ_INT(API->mem_alloc(dev, n, &a), PTO_DRV_OK);
    return a;
}

typedef struct Images {
    PtoDrvImage *aicpu, *aicore;
} Images;

static Images load_images(PtoDrvDevice *dev)
{
    const DeviceImages *src = test_images();
    Images im = { NULL, NULL };
    CHECK(src != NULL);
    if (src == NULL)
        return im;
    CHECK_EQ_INT(API->load_image(dev, src->aicpu, src->aicpu_size, &im.aicpu), PTO_DRV_OK);
    CHECK_EQ_INT(API->load_image(dev, src->aicore, src->aicore_size, &im.aicore), PTO_DRV_OK);
    return im;
}

static uint64_t symbol(PtoDrvDevice *dev, PtoDrvImage *img, const char *name)
{
    uint64_t a = 0;
    CHECK_EQ_INT(API->image_symbol(dev, img, name, &a), PTO_DRV_OK);
    return a;
}

static void sleep_ms(long ms)
{
    struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&t, NULL);
}

/* ---- a graph run through the driver ----------------------------------------
   x = fill(2.0); y = x + 3.0 (vadds), on n floats: two tasks, one edge. The
   argument block, graph and state are built on the host and copied to the
   device on the stream, as an onboard runner does. */

#define GRAPH_N 256

typedef struct DevGraph {
    uint64_t args, state, x, y;
    uint8_t host[1024];
    size_t bytes;
} DevGraph;

static uint64_t serial = 1ull << 44;

static uint64_t f32_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static void graph_build(PtoDrvDevice *dev, PtoDrvImage *aicore, DevGraph *g)
{
    g->x = dev_alloc(dev, GRAPH_N * 4);
    g->y = dev_alloc(dev, GRAPH_N * 4);
    g->state = dev_alloc(dev, 64 + pto_graph_state_bytes(2));
    size_t tasks_off = sizeof(PtoGraphHeader), args_off = tasks_off + 2 * sizeof(PtoGraphTask);
    size_t sizes_off = args_off + 5 * 8, fan_off = sizes_off + 5 * 8;
    size_t graph_bytes = fan_off + 8;
    g->bytes = sizeof(PtoAicpuArgs) + graph_bytes;
    g->args = dev_alloc(dev, g->bytes);
    memset(g->host, 0, sizeof g->host);
    PtoAicpuArgs *a = (PtoAicpuArgs *)g->host;
    *a = (PtoAicpuArgs){ .magic = PTO_AICPU_ARGS_MAGIC, .abi_version = PTO_DEVICE_ABI_VERSION,
                         .work_kind = PTO_DEVICE_WORK_GRAPH, .block_dim = 2, .run_serial = serial++,
                         .work_dev = g->args + sizeof *a, .work_bytes = graph_bytes, .state_dev = g->state,
                         .state_bytes = 64 + pto_graph_state_bytes(2) };
    uint8_t *base = g->host + sizeof *a;
    *(PtoGraphHeader *)base = (PtoGraphHeader){ .magic = PTO_GRAPH_MAGIC, .task_count = 2, .tasks_offset = tasks_off,
                                                .args_offset = args_off, .arg_sizes_offset = sizes_off,
                                                .fanout_offset = fan_off, .arg_total = 5, .fanout_total = 1 };
    PtoGraphTask *t = (PtoGraphTask *)(base + tasks_off);
    t[0] = (PtoGraphTask){ .kernel_addr = symbol(dev, aicore, "pto_kernel_vfill"), .func_id = 1,
                           .core_type = PTO_CORE_AIV, .arg_index = 0, .arg_count = 2, .fanout_index = 0,
                           .fanout_count = 1 };
    t[1] = (PtoGraphTask){ .kernel_addr = symbol(dev, aicore, "pto_kernel_vadds"), .func_id = 2,
                           .core_type = PTO_CORE_AIV, .arg_index = 2, .arg_count = 3, .fanin_count = 1 };
    uint64_t *args = (uint64_t *)(base + args_off), *sizes = (uint64_t *)(base + sizes_off);
    args[0] = g->x, sizes[0] = GRAPH_N * 4;
    args[1] = f32_bits(2.0f), sizes[1] = 0;
    args[2] = g->x, sizes[2] = GRAPH_N * 4;
    args[3] = g->y, sizes[3] = GRAPH_N * 4;
    args[4] = f32_bits(3.0f), sizes[4] = 0;
    *(uint32_t *)(base + fan_off) = 1;
}

static void graph_free(PtoDrvDevice *dev, DevGraph *g)
{
    CHECK_EQ_INT(API->mem_free(dev, g->x), PTO_DRV_OK);
    CHECK_EQ_INT(API->mem_free(dev, g->y), PTO_DRV_OK);
    CHECK_EQ_INT(API->mem_free(dev, g->state), PTO_DRV_OK);
    CHECK_EQ_INT(API->mem_free(dev, g->args), PTO_DRV_OK);
}

/* Uploads the graph on `s`, launches AICore on `core_s` and AICPU on `s`. */
static void graph_launch(PtoDrvStream *s, PtoDrvStream *core_s, const Images *im, DevGraph *g, int expect_aicpu)
{
    CHECK_EQ_INT(API->memset_d_async(s, g->y, 0, GRAPH_N * 4), PTO_DRV_OK);
    CHECK_EQ_INT(API->memcpy_h2d_async(s, g->args, g->host, g->bytes), PTO_DRV_OK);
    CHECK_EQ_INT(API->launch(core_s, im->aicore, PTO_AICORE_ENTRY_SYMBOL, g->args, 2), PTO_DRV_OK);
    CHECK_EQ_INT(API->launch(s, im->aicpu, PTO_AICPU_ENTRY_SYMBOL, g->args, 4), expect_aicpu);
}

/* Reads back the status block and y; checks a finished, correct run. */
static void graph_check(PtoDrvDevice *dev, DevGraph *g)
{
    PtoAicpuArgs a;
    float y[GRAPH_N];
    CHECK_EQ_INT(API->memcpy_d2h(dev, &a, g->args, sizeof a), PTO_DRV_OK);
    CHECK_EQ_INT(API->memcpy_d2h(dev, y, g->y, sizeof y), PTO_DRV_OK);
    CHECK_EQ_INT(a.status.finished, 1);
    CHECK_EQ_INT(a.status.error_code, 0);
    CHECK_EQ_INT(a.status.tasks_completed, 2);
    int good = 1;
    for (int i = 0; i < GRAPH_N; i++)
        good &= y[i] == 5.0f;
    CHECK(good);
}

/* ---- the table ------------------------------------------------------------ */

TEST(emudrv_exports_a_complete_table_and_nothing_else)
{
    const PtoDriverApi *api = API;
    CHECK_EQ_INT(api->abi_version, PTO_DRIVER_ABI_VERSION);
    CHECK_EQ_INT(api->struct_size, sizeof(PtoDriverApi));
    CHECK(api->name != NULL && strstr(api->name, "emulated") != NULL);
    const void *const *entries = (const void *const *)&api->open_device;
    size_t n = (sizeof(PtoDriverApi) - offsetof(PtoDriverApi, open_device)) / sizeof(void *);
    for (size_t i = 0; i < n; i++)
        CHECK(entries[i] != NULL);
    const char *seen[16];
    int codes[] = { 1, 0, -1, -2, -3, -4, -5, -6, -7, -8, -9 };
    for (int i = 0; i < 11; i++) {
        seen[i] = api->error_string(codes[i]);
        CHECK(seen[i] != NULL);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(seen[i], seen[j]) != 0);
    }
    CHECK_CONTAINS(api->error_string(-99), "unknown");
    const char *dir = getenv("PTORUN_LIB_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/libptorun_emudrv.so", dir ? dir : ".");
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL);
    if (h != NULL) {
        CHECK(dlsym(h, "alloc_table_init") == NULL);      /* reused pieces stay hidden */
        CHECK(dlsym(h, "emu_fault_hit") == NULL);
        dlclose(h);
    }
}

TEST(emudrv_devices_open_close_and_refuse_bad_handles)
{
    PtoEmuStats base = stats_now();
    PtoDrvDevice *dev = NULL;
    CHECK_EQ_INT(API->open_device(-1, &dev), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->open_device(64, &dev), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->open_device(0, NULL), PTO_DRV_ERR_INVALID);
    PtoDrvDevice *a = open_dev(0), *b = open_dev(0); /* each open is its own emulated device */
    CHECK(a != b);
    CHECK_EQ_INT(stats_now().devices_open, base.devices_open + 2);
    CHECK_EQ_INT(API->close_device(a), PTO_DRV_OK);
    CHECK_EQ_INT(API->close_device(a), PTO_DRV_ERR_INVALID);  /* stale: refused, not followed */
    uint64_t addr;
    CHECK_EQ_INT(API->mem_alloc(a, 64, &addr), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->mem_alloc((PtoDrvDevice *)&addr, 64, &addr), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->close_device(b), PTO_DRV_OK);
    CHECK_STATS(stats_now(), base);
}

/* ---- memory ------------------------------------------------------------------ */

TEST(emudrv_memory_is_allocated_copied_set_and_range_checked)
{
    PtoEmuStats base = stats_now();
    PtoDrvDevice *dev = open_dev(1);
    uint64_t a = 0;
    CHECK_EQ_INT(API->mem_alloc(dev, 0, &a), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->mem_alloc(dev, 16, NULL), PTO_DRV_ERR_INVALID);
    a = dev_alloc(dev, 1000);
    CHECK(a != 0 && a % 512 == 0);
    CHECK_EQ_INT(stats_now().memory_committed, base.memory_committed + 1000);
    CHECK_EQ_INT(stats_now().allocations, base.allocations + 1);

    uint8_t in[1000], out[1000];
    for (int i = 0; i < 1000; i++)
        in[i] = (uint8_t)(i * 7);
    CHECK_EQ_INT(API->memcpy_h2d(dev, a, in, 1000), PTO_DRV_OK);
    CHECK_EQ_INT(API->memset_d(dev, a + 10, 0xAB, 20), PTO_DRV_OK);
    CHECK_EQ_INT(API->memcpy_d2h(dev, out, a, 1000), PTO_DRV_OK);
    CHECK(memcmp(out, in, 10) == 0 && out[10] == 0xAB && out[29] == 0xAB && memcmp(out + 30, in + 30, 970) == 0);

    CHECK_EQ_INT(API->memcpy_h2d(dev, a + 1, in, 1000), PTO_DRV_ERR_INVALID);   /* one byte past the end */
    CHECK_EQ_INT(API->memcpy_d2h(dev, out, a - 1, 4), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->memset_d(dev, a + 999, 0, 2), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->memcpy_h2d(dev, a, NULL, 4), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->memcpy_d2h(dev, out, 12345, 4), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->mem_free(dev, a + 8), PTO_DRV_ERR_INVALID);               /* not an allocation's start */
    CHECK_EQ_INT(API->mem_free(dev, a), PTO_DRV_OK);
    CHECK_EQ_INT(API->mem_free(dev, a), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->memcpy_h2d(dev, a, in, 4), PTO_DRV_ERR_INVALID);          /* freed memory */
    CHECK_EQ_INT(API->close_device(dev), PTO_DRV_OK);
    CHECK_STATS(stats_now(), base);
}

TEST(emudrv_capacity_comes_from_the_environment_at_open)
{
    PtoEmuStats base = stats_now();
    setenv("PTORUN_EMU_DEVICE_MEMORY", "64K", 1);
    PtoDrvDevice *small = open_dev(2);
    unsetenv("PTORUN_EMU_DEVICE_MEMORY");
    PtoDrvDevice *big = open_dev(3);
    uint64_t a = dev_alloc(small, 48 << 10), b = 0;
    CHECK_EQ_INT(API->mem_alloc(small, 32 << 10, &b), PTO_DRV_ERR_OUT_OF_MEMORY);
    b = dev_alloc(small, 16 << 10);                       /* exactly up to the capacity */
    CHECK_EQ_INT(API->mem_alloc(small, 1, &b), PTO_DRV_ERR_OUT_OF_MEMORY);
    CHECK_EQ_INT(API->mem_free(small, a), PTO_DRV_OK);
    a = dev_alloc(small, 32 << 10);
    uint64_t c = dev_alloc(big, 1 << 20);                 /* default: 1 GiB */
    CHECK_EQ_INT(API->mem_alloc(big, (1ull << 30) + 1, &b), PTO_DRV_ERR_OUT_OF_MEMORY);
    (void)c;
    CHECK_EQ_INT(API->close_device(small), PTO_DRV_OK); /* close frees what is left */
    CHECK_EQ_INT(API->close_device(big), PTO_DRV_OK);
    CHECK_STATS(stats_now(), base);
}

TEST(emudrv_host_views_show_device_memory_and_are_tracked)
{
    PtoEmuStats base = stats_now();
    PtoDrvDevice *dev = open_dev(4);
    uint64_t a = dev_alloc(dev, 256), b = dev_alloc(dev, 256);
    void *view = NULL, *view2 = NULL;
    CHECK_EQ_INT(API->host_register(dev, a, 256, &view), PTO_DRV_OK);
    CHECK_EQ_INT(API->host_register(dev, a, 257, &view2), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->host_register(dev, a, 0, &view2), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(stats_now().host_registrations, base.host_registrations + 1);
    memset(view, 0x5A, 256);
    uint8_t out[256];
    CHECK_EQ_INT(API->memcpy_d2h(dev, out, a, 256), PTO_DRV_OK);
    CHECK(out[0] == 0x5A && out[255] == 0x5A);
    CHECK_EQ_INT(API->host_unregister(dev, out), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->host_unregister(dev, view), PTO_DRV_OK);
    CHECK_EQ_INT(API->host_unregister(dev, view), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->host_register(dev, b + 64, 64, &view2), PTO_DRV_OK);
    CHECK_EQ_INT(API->mem_free(dev, b), PTO_DRV_OK);     /* the view dies with its memory */
    CHECK_EQ_INT(API->host_unregister(dev, view2), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->host_register(dev, a, 16, &view), PTO_DRV_OK);
    CHECK_EQ_INT(API->close_device(dev), PTO_DRV_OK);
    CHECK_STATS(stats_now(), base);
}

/* ---- images -------------------------------------------------------------------- */

TEST(emudrv_images_load_per_device_and_resolve_symbols)
{
    PtoEmuStats base = stats_now();
    PtoDrvDevice *d0 = open_dev(5), *d1 = open_dev(6);
    Images i0 = load_images(d0), i1 = load_images(d1);
    CHECK_EQ_INT(stats_now().images, base.images + 4);
    uint64_t k0 = symbol(d0, i0.aicore, "pto_kernel_vadd"), k1 = symbol(d1, i1.aicore, "pto_kernel_vadd");
    CHECK(k0 != 0 && k1 != 0 && k0 != k1);               /* a private copy per device */
    CHECK(symbol(d0, i0.aicore, PTO_AICORE_ENTRY_SYMBOL) != 0);
    CHECK(symbol(d0, i0.aicpu, PTO_AICPU_ENTRY_SYMBOL) != 0);
    uint64_t x = 0;
    CHECK_EQ_INT(API->image_symbol(d0, i0.aicore, "pto_kernel_nope", &x), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->image_symbol(d0, i1.aicore, "pto_kernel_vadd", &x), PTO_DRV_ERR_INVALID); /* d1's image */
    PtoDrvImage *junk = NULL;
    const char garbage[] = "not an image";
    CHECK_EQ_INT(API->load_image(d0, garbage, sizeof garbage, &junk), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->load_image(d0, NULL, 0, &junk), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->unload_image(d0, i0.aicore), PTO_DRV_OK);
    CHECK_EQ_INT(API->unload_image(d0, i0.aicore), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->image_symbol(d0, i0.aicore, "pto_kernel_vadd", &x), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->close_device(d0), PTO_DRV_OK);
    CHECK_EQ_INT(API->close_device(d1), PTO_DRV_OK);
    CHECK_STATS(stats_now(), base);
}

/* ---- streams --------------------------------------------------------------------- */

TEST(emudrv_a_stream_executes_copies_and_launches_in_order)
{
    PtoEmuStats base = stats_now();
    PtoDrvDevice *dev = open_dev(7);
    Images im = load_images(dev);
    PtoDrvStream *s = new_stream(dev);
    uint64_t a = dev_alloc(dev, 4096);
    static uint8_t pattern[4096], first[4096], second[4096];
    for (int i = 0; i < 4096; i++)
        pattern[i] = (uint8_t)(i * 13 + 1);
    for (int round = 0; round < 50; round++) {
        CHECK_EQ_INT(API->memset_d_async(s, a, 1, 4096), PTO_DRV_OK);
        CHECK_EQ_INT(API->memcpy_h2d_async(s, a, pattern, 4096), PTO_DRV_OK);
        CHECK_EQ_INT(API->launch(s, im.aicore, PTO_AICORE_ENTRY_SYMBOL, a, 8), PTO_DRV_OK);
        CHECK_EQ_INT(API->memcpy_d2h_async(s, first, a, 4096), PTO_DRV_OK);
        CHECK_EQ_INT(API->memset_d_async(s, a, 7, 4096), PTO_DRV_OK);
        CHECK_EQ_INT(API->memcpy_d2h_async(s, second, a, 4096), PTO_DRV_OK);
        CHECK_EQ_INT(API->stream_synchronize(s, 10000), PTO_DRV_OK);
        CHECK(memcmp(first, pattern, 4096) == 0);
        CHECK(second[0] == 7 && second[4095] == 7);
    }
    CHECK_EQ_INT(API->stream_query(s), PTO_DRV_OK);
    CHECK_EQ_INT(API->stream_synchronize(s, 0), PTO_DRV_OK);

    /* destroy waits for what is queued */
    CHECK_EQ_INT(API->memcpy_h2d_async(s, a, pattern, 4096), PTO_DRV_OK);
    memset(second, 0, sizeof second);
    CHECK_EQ_INT(API->memcpy_d2h_async(s, second, a, 4096), PTO_DRV_OK);
    CHECK_EQ_INT(API->stream_destroy(s), PTO_DRV_OK);
    CHECK(memcmp(second, pattern, 4096) == 0);
    CHECK_EQ_INT(API->stream_destroy(s), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->stream_query(s), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->close_device(dev), PTO_DRV_OK);
    CHECK_STATS(stats_now(), base);
}

TEST(emudrv_refuses_bad_enqueues_without_queueing_them)
{
    PtoDrvDevice *dev = open_dev(8), *other = open_dev(9);
    Images im = load_images(dev), oim = load_images(other);
    PtoDrvStream *s = new_stream(dev);
    uint64_t a = dev_alloc(dev, 256);
    uint8_t buf[256];
    CHECK_EQ_INT(API->memcpy_h2d_async(s, a, buf, 257), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->memcpy_d2h_async(s, NULL, a, 4), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->memset_d_async(s, a + 256, 0, 1), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->launch(s, im.aicore, PTO_AICORE_ENTRY_SYMBOL, a, 0), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->launch(s, im.aicore, PTO_AICORE_ENTRY_SYMBOL, a, 65), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->launch(s, im.aicore, "no_such_entry", a, 1), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->launch(s, im.aicore, NULL, a, 1), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->launch(s, oim.aicore, PTO_AICORE_ENTRY_SYMBOL, a, 1), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->launch(s, im.aicpu, PTO_AICPU_ENTRY_SYMBOL, a + 200, 1), PTO_DRV_ERR_INVALID); /* args cut */
    CHECK_EQ_INT(API->stream_query(s), PTO_DRV_OK);     /* nothing was queued, no error state */
    CHECK_EQ_INT(API->stream_create(dev, NULL), PTO_DRV_ERR_INVALID);
    CHECK_EQ_INT(API->close_device(dev), PTO_DRV_OK);   /* with a live stream and images */
    CHECK_EQ_INT(API->close_device(other), PTO_DRV_OK);
}

TEST(emudrv_runs_the_aicpu_graph_through_a_launch)
{
    PtoEmuStats base = stats_now();
    PtoDrvDevice *dev = open_dev(10);
    Images im = load_images(dev);
    PtoDrvStream *s = new_stream(dev), *core = new_stream(dev);
    DevGraph g;
    graph_build(dev, im.aicore, &g);
    for (int run = 0; run < 20; run++) {
        ((PtoAicpuArgs *)g.host)->run_serial = serial++;
        graph_launch(s, core, &im, &g, PTO_DRV_OK);
        CHECK_EQ_INT(API->stream_synchronize(core, 10000), PTO_DRV_OK);
        CHECK_EQ_INT(API->stream_synchronize(s, 10000), PTO_DRV_OK);
        graph_check(dev, &g);
    }
    graph_free(dev, &g);
    CHECK_EQ_INT(API->stream_destroy(s), PTO_DRV_OK);
    CHECK_EQ_INT(API->stream_destroy(core), PTO_DRV_OK);
    CHECK_EQ_INT(API->close_device(dev), PTO_DRV_OK);
    CHECK_STATS(stats_now(), base);
}

TEST(emudrv_launches_of_one_image_on_two_streams_run_one_after_the_other)
{
    PtoDrvDevice *dev = open_dev(11);
    Images im = load_images(dev);
    PtoDrvStream *s[2] = { new_stream(dev), new_stream(dev) }, *core = new_stream(dev);
    DevGraph g[2];
    graph_build(dev, im.aicore, &g[0]);
    graph_build(dev, im.aicore, &g[1]);
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 2; i++) {
            ((PtoAicpuArgs *)g[i].host)->run_serial = serial++;
            graph_launch(s[i], core, &im, &g[i], PTO_DRV_OK);
        }
        for (int i = 0; i < 2; i++) {
            CHECK_EQ_INT(API->stream_synchronize(s[i], 10000), PTO_DRV_OK);
            graph_check(dev, &g[i]);
        }
    }
    CHECK_EQ_INT(API->close_device(dev), PTO_DRV_OK);
}

TEST(emudrv_streams_run_concurrently_and_query_never_blocks)
{
    PtoEmuStats base = stats_now();
    PtoDrvDevice *dev = open_dev(12);
    Images im = load_images(dev);
    PtoDrvStream *hung = new_stream(dev), *other = new_stream(dev);
    DevGraph g;
    graph_build(dev, im.aicore, &g);
    CHECK_EQ_INT(emudrv()->inject(PTO_EMU_FAULT_HANG, 0), 0);
    graph_launch(hung, other, &im, &g, PTO_DRV_OK);
    /* the other stream works while the first one hangs */
    uint64_t a = dev_alloc(dev, 64);
    uint8_t in[64] = { 9 }, out[64] = { 0 };
    CHECK_EQ_INT(API->memcpy_h2d_async(other, a, in, 64), PTO_DRV_OK);
    CHECK_EQ_INT(API->memcpy_d2h_async(other, out, a, 64), PTO_DRV_OK);
    CHECK_EQ_INT(API->stream_synchronize(other, 10000), PTO_DRV_OK);
    CHECK(out[0] == 9);
    for (int i = 0; i < 100; i++)
        CHECK_EQ_INT(API->stream_query(hung), PTO_DRV_NOT_READY);
    CHECK_EQ_INT(API->stream_synchronize(hung, 0), PTO_DRV_ERR_TIMEOUT);
    CHECK_EQ_INT(API->stream_destroy(hung), PTO_DRV_OK);  /* destroy ends the hang */
    CHECK_EQ_INT(API->close_device(dev), PTO_DRV_OK);
    CHECK_STATS(stats_now(), base);
}

/* ---- faults ----------------------------------------------------------------------- */

TEST(emudrv_inject_refuses_unknown_kinds_and_none_disarms)
{
    CHECK_EQ_INT(emudrv()->inject(PTO_EMU_FAULT_PEER_LOST + 1, 0), -1);
    CHECK_EQ_INT(emudrv()->inject(-1, 0), -1);
    CHECK_EQ_INT(emudrv()->inject(PTO_EMU_FAULT_ALLOC, -1), -1);
    PtoDrvDevice *dev = open_dev(13);
    CHECK_EQ_INT(emudrv()->inject(PTO_EMU_FAULT_ALLOC, 0), 0);
    CHECK_EQ_INT(emudrv()->inject(PTO_EMU_FAULT_DEVICE_LOST, 0), 0);
    CHECK_EQ_INT(emudrv()->inject(PTO_EMU_FAULT_NONE, 0), 0);
    uint64_t a = dev_alloc(dev, 64);
    CHECK_EQ_INT(API->mem_free(dev, a), PTO_DRV_OK);
    CHECK_EQ_INT(API->close_device(dev), PTO_DRV_OK);
}

TEST(emudrv_fault_alloc_fails_the_nth_allocation_once)
{
    PtoDrvDevice *dev = open_dev(14);
    CHECK_EQ_INT(emudrv()->inject(PTO_EMU_FAULT_ALLOC, 2), 0);
    uint64_t a[4] = { 0 };
    CHECK_EQ_INT(API->mem_alloc(dev, 64, &a[0]), PTO_DRV_OK);
    CHECK_EQ_INT(API->mem_alloc(dev, 64, &a[1]), PTO_DRV_OK);
    CHECK_EQ_INT(API->mem_alloc(dev, 64, &a[2]), PTO_DRV_ERR_OUT_OF_MEMORY);
    CHECK_EQ_INT(API->mem_alloc(dev, 64, &a[3]), PTO_DRV_OK);
    CHECK_EQ_INT(stats_now().allocations >= 3, 1);
    CHECK_EQ_INT(API->close_device(dev), PTO_DRV_OK);
}

static void check_copy_faults(PtoEmuFault kind)
{
    PtoEmuStats base = stats_now();
    PtoDrvDevice *dev = open_dev(15);
    PtoDrvStream *s = new_stream(dev);
    uint64_t a = dev_alloc(dev, 64);
    uint8_t buf[64] = { 3 };
    CHECK_EQ_INT(API->memset_d(dev, a, 3, 64), PTO_DRV_OK);
    int h2d = kind == PTO_EMU_FAULT_H2D;
    /* synchronous: the call fails with COPY, once */
    CHECK_EQ_INT(emudrv()->inject(kind, 1), 0);
    for (int i = 0; i < 3; i++) {
        int rc = h2d ? API->memcpy_h2d(dev, a, buf, 64) : API->memcpy_d2h(dev, buf, a, 64);
        CHECK_EQ_INT(rc, i == 1 ? PTO_DRV_ERR_COPY : PTO_DRV_OK);
    }
    /* asynchronous: queued, fails on the device, the stream keeps the error */
    CHECK_EQ_INT(emudrv()->inject(kind, 0), 0);
    uint8_t marker[64] = { 0 };
    int rc = h2d ? API->memcpy_h2d_async(s, a, buf, 64) : API->memcpy_d2h_async(s, marker, a, 64);
    CHECK_EQ_INT(rc, PTO_DRV_OK);
    CHECK_EQ_INT(API->stream_synchronize(s, 10000), PTO_DRV_ERR_STREAM);
    CHECK_EQ_INT(API->stream_query(s), PTO_DRV_ERR_STREAM);
    CHECK_EQ_INT(API->memset_d_async(s, a, 0, 64), PTO_DRV_ERR_STREAM); /* no more work on it */
    if (!h2d)
        CHECK_EQ_INT(marker[0], 0);                                      /* the bytes did not move */
    CHECK_EQ_INT(API->stream_destroy(s), PTO_DRV_OK);
    s = new_stream(dev);                                                 /* a new stream works */
    CHECK_EQ_INT(API->memcpy_d2h_async(s, marker, a, 64), PTO_DRV_OK);
    CHECK_EQ_INT(API->stream_synchronize(s, 10000), PTO_DRV_OK);
    CHECK_EQ_INT(marker[0], 3);
    CHECK_EQ_INT(API->close_device(dev), PTO_DRV_OK);
    CHECK_STATS(stats_now(), base);
}

TEST(emudrv_fault_h2d_fails_sync_and_async_copies)
{
    check_copy_faults(PTO_EMU_FAULT_H2D);
}

TEST(emudrv_fault_d2h_fails_sync_and_async_copies)
{
    check_copy_faults(PTO_EMU_FAULT_D2H);
}

TEST(emudrv_fault_launch_refuses_the_launch_and_the_stream_stays_usable)
{
    PtoDrvDevice *dev = open_dev(16);
    Images im = load_images(dev);
    PtoDrvStream *s = new_stream(dev), *core = new_stream(dev);
    DevGraph g;
    graph_build(dev, im.aicore, &g);
    CHECK_EQ_INT(emudrv()->inject(PTO_EMU_FAULT_LAUNCH, 1), 0);     /* the AICore launch passes */
    graph_launch(s, core, &im, &g, PTO_DRV_ERR_LAUNCH);
    CHECK_EQ_INT(API->stream_synchronize(s, 10000), PTO_DRV_OK);
    PtoAicpuArgs a;
    CHECK_EQ_INT(API->memcpy_d2h(dev, &a, g.args, sizeof a), PTO_DRV_OK);
    CHECK_EQ_INT(a.status.finished, 0);                              /* never ran */
    ((PtoAicpuArgs *)g.host)->run_serial = serial++;
    graph_launch(s, core, &im, &g, PTO_DRV_OK);
    CHECK_EQ_INT(API->stream_synchronize(s, 10000), PTO_DRV_OK);
    graph_check(dev, &g);
    CHECK_EQ_INT(API->close_device(dev), PTO_DRV_OK);
}

TEST(emudrv_fault_stream_runs_the_launch_then_fails_its_stream)
{
    PtoDrvDevice *dev = open_dev(17);
    Images im = load_images(dev);
    PtoDrvStream *s = new_stream(dev), *core = new_stream(dev);
    DevGraph g;
    graph_build(dev, im.aicore, &g);
    CHECK_EQ_INT(emudrv()->inject(PTO_EMU_FAULT_STREAM, 1), 0);     /* hits the AICPU launch */
    graph_launch(s, core, &im, &g, PTO_DRV_OK);
    CHECK_EQ_INT(API->stream_synchronize(core, 10000), PTO_DRV_OK);
    CHECK_EQ_INT(API->stream_synchronize(s, 10000), PTO_DRV_ERR_STREAM);
    CHECK_EQ_INT(API->stream_query(s), PTO_DRV_ERR_STREAM);
    graph_check(dev, &g);                                            /* it did execute */
    CHECK_EQ_INT(API->stream_destroy(s), PTO_DRV_OK);
    s = new_stream(dev);
    ((PtoAicpuArgs *)g.host)->run_serial = serial++;
    graph_launch(s, core, &im, &g, PTO_DRV_OK);
    CHECK_EQ_INT(API->stream_synchronize(s, 10000), PTO_DRV_OK);
    graph_check(dev, &g);
    CHECK_EQ_INT(API->close_device(dev), PTO_DRV_OK);
}

TEST(emudrv_fault_hang_times_out_then_destroy_releases_it)
{
    PtoEmuStats base = stats_now();
    PtoDrvDevice *dev = open_dev(18);
    Images im = load_images(dev);
    PtoDrvStream *s = new_stream(dev), *core = new_stream(dev);
    DevGraph g;
    graph_build(dev, im.aicore, &g);
    CHECK_EQ_INT(emudrv()->inject(PTO_EMU_FAULT_HANG, 0), 0);       /* AICPU launches only */
    graph_launch(s, core, &im, &g, PTO_DRV_OK);
    CHECK_EQ_INT(API->stream_synchronize(core, 10000), PTO_DRV_OK); /* the AICore launch is not hung */
    CHECK_EQ_INT(API->stream_query(s), PTO_DRV_NOT_READY);
    CHECK_EQ_INT(API->stream_synchronize(s, 100), PTO_DRV_ERR_TIMEOUT);
    CHECK_EQ_INT(API->stream_query(s), PTO_DRV_ERR_TIMEOUT);        /* declared failed */
    CHECK_EQ_INT(API->stream_synchronize(s, 10000), PTO_DRV_ERR_TIMEOUT);
    CHECK_EQ_INT(API->memset_d_async(s, g.y, 0, 4), PTO_DRV_ERR_TIMEOUT);
    CHECK_EQ_INT(API->stream_destroy(s), PTO_DRV_OK);
    PtoAicpuArgs a;
    CHECK_EQ_INT(API->memcpy_d2h(dev, &a, g.args, sizeof a), PTO_DRV_OK);
    CHECK_EQ_INT(a.status.finished, 0);
    s = new_stream(dev);
    ((PtoAicpuArgs *)g.host)->run_serial = serial++;
    graph_launch(s, core, &im, &g, PTO_DRV_OK);
    CHECK_EQ_INT(API->stream_synchronize(s, 10000), PTO_DRV_OK);
    graph_check(dev, &g);
    CHECK_EQ_INT(API->close_device(dev), PTO_DRV_OK);
    CHECK_STATS(stats_now(), base);
}

TEST(emudrv_fault_hang_is_released_by_reset)
{
    PtoEmuStats base = stats_now();
    PtoDrvDevice *dev = open_dev(19);
    Images im = load_images(dev);
    PtoDrvStream *s = new_stream(dev), *core = new_stream(dev);
    DevGraph g;
    graph_build(dev, im.aicore, &g);
    CHECK_EQ_INT(emudrv()->inject(PTO_EMU_FAULT_HANG, 0), 0);
    graph_launch(s, core, &im, &g, PTO_DRV_OK);
    CHECK_EQ_INT(API->stream_query(s), PTO_DRV_NOT_READY);
    CHECK_EQ_INT(API->reset_device(dev), PTO_DRV_OK);
    CHECK_EQ_INT(API->stream_query(s), PTO_DRV_ERR_INVALID);       /* reset destroyed the streams */
    PtoEmuStats after = stats_now();
    CHECK_EQ_INT(after.streams, base.streams);
    CHECK_EQ_INT(after.allocations, base.allocations);
    CHECK_EQ_INT(after.images, base.images);
    CHECK_EQ_INT(after.devices_open, base.devices_open + 1);
    im = load_images(dev);                                          /* and the device works again */
    s = new_stream(dev);
    core = new_stream(dev);
    graph_build(dev, im.aicore, &g);
    graph_launch(s, core, &im, &g, PTO_DRV_OK);
    CHECK_EQ_INT(API->stream_synchronize(s, 10000), PTO_DRV_OK);
    graph_check(dev, &g);
    CHECK_EQ_INT(API->close_device(dev), PTO_DRV_OK);
    CHECK_STATS(stats_now(), base);
}

TEST(emudrv_fault_device_lost_fails_every_call_until_reset)
{
    PtoEmuStats base = stats_now();
    PtoDrvDevice *dev = open_dev(20);
    Images im = load_images(dev);
    PtoDrvStream *s = new_stream(dev), *core = new_stream(dev);
    DevGraph g;
    graph_build(dev, im.aicore, &g);
    CHECK_EQ_INT(emudrv()->inject(PTO_EMU_FAULT_DEVICE_LOST, 3), 0);
    graph_launch(s, core, &im, &g, PTO_DRV_ERR_DEVICE_LOST);        /* the 4th call (the AICPU launch) */
    uint64_t a = 0;
    uint8_t buf[8];
    void *view;
    PtoDrvStream *s2;
    PtoDrvImage *img;
    CHECK_EQ_INT(API->stream_query(s), PTO_DRV_ERR_DEVICE_LOST);
    CHECK_EQ_INT(API->stream_query(core), PTO_DRV_ERR_DEVICE_LOST);
    CHECK_EQ_INT(API->stream_synchronize(s, 10000), PTO_DRV_ERR_DEVICE_LOST);
    CHECK_EQ_INT(API->mem_alloc(dev, 64, &a), PTO_DRV_ERR_DEVICE_LOST);
    CHECK_EQ_INT(API->mem_free(dev, g.x), PTO_DRV_ERR_DEVICE_LOST);
    CHECK_EQ_INT(API->memcpy_d2h(dev, buf, g.x, 8), PTO_DRV_ERR_DEVICE_LOST);
    CHECK_EQ_INT(API->memcpy_h2d(dev, g.x, buf, 8), PTO_DRV_ERR_DEVICE_LOST);
    CHECK_EQ_INT(API->memset_d(dev, g.x, 0, 8), PTO_DRV_ERR_DEVICE_LOST);
    CHECK_EQ_INT(API->host_register(dev, g.x, 8, &view), PTO_DRV_ERR_DEVICE_LOST);
    CHECK_EQ_INT(API->stream_create(dev, &s2), PTO_DRV_ERR_DEVICE_LOST);
    CHECK_EQ_INT(API->load_image(dev, buf, 8, &img), PTO_DRV_ERR_DEVICE_LOST);
    CHECK_EQ_INT(API->image_symbol(dev, im.aicore, "pto_kernel_vadd", &a), PTO_DRV_ERR_DEVICE_LOST);
    CHECK_EQ_INT(API->memcpy_h2d_async(s, g.x, buf, 8), PTO_DRV_ERR_DEVICE_LOST);
    CHECK_EQ_INT(API->stream_destroy(s), PTO_DRV_ERR_DEVICE_LOST);
    CHECK_EQ_INT(API->reset_device(dev), PTO_DRV_OK);
    PtoEmuStats after = stats_now();
    CHECK_EQ_INT(after.streams, base.streams);
    CHECK_EQ_INT(after.allocations, base.allocations);
    CHECK_EQ_INT(after.memory_committed, base.memory_committed);
    CHECK_EQ_INT(after.images, base.images);
    CHECK_EQ_INT(API->memcpy_d2h(dev, buf, g.x, 8), PTO_DRV_ERR_INVALID); /* reset freed it */
    im = load_images(dev);
    s = new_stream(dev);
    core = new_stream(dev);
    graph_build(dev, im.aicore, &g);
    graph_launch(s, core, &im, &g, PTO_DRV_OK);
    CHECK_EQ_INT(API->stream_synchronize(s, 10000), PTO_DRV_OK);
    graph_check(dev, &g);
    CHECK_EQ_INT(API->close_device(dev), PTO_DRV_OK);
    CHECK_STATS(stats_now(), base);
}

TEST(emudrv_device_lost_during_execution_surfaces_at_query)
{
    PtoDrvDevice *dev = open_dev(21);
    Images im = load_images(dev);
    PtoDrvStream *s = new_stream(dev), *core = new_stream(dev);
    DevGraph g;
    graph_build(dev, im.aicore, &g);
    CHECK_EQ_INT(emudrv()->inject(PTO_EMU_FAULT_HANG, 0), 0);
    graph_launch(s, core, &im, &g, PTO_DRV_OK);
    CHECK_EQ_INT(emudrv()->inject(PTO_EMU_FAULT_DEVICE_LOST, 0), 0);
    CHECK_EQ_INT(API->stream_query(s), PTO_DRV_ERR_DEVICE_LOST);    /* lost while it ran */
    CHECK_EQ_INT(API->stream_query(s), PTO_DRV_ERR_DEVICE_LOST);
    CHECK_EQ_INT(API->close_device(dev), PTO_DRV_OK);               /* close works on a lost device */
}

/* ---- accounting and idleness ------------------------------------------------------ */

TEST(emudrv_close_releases_everything_a_busy_device_holds)
{
    PtoEmuStats base = stats_now();
    PtoDrvDevice *dev = open_dev(22);
    Images im = load_images(dev);
    PtoDrvStream *s[4];
    for (int i = 0; i < 4; i++)
        s[i] = new_stream(dev);
    DevGraph g;
    graph_build(dev, im.aicore, &g);
    void *view;
    CHECK_EQ_INT(API->host_register(dev, g.x, 16, &view), PTO_DRV_OK);
    graph_launch(s[0], s[1], &im, &g, PTO_DRV_OK);
    CHECK_EQ_INT(API->stream_synchronize(s[0], 10000), PTO_DRV_OK);
    CHECK_EQ_INT(emudrv()->inject(PTO_EMU_FAULT_HANG, 0), 0);
    graph_launch(s[2], s[3], &im, &g, PTO_DRV_OK);                  /* hangs */
    CHECK_EQ_INT(API->memset_d_async(s[2], g.x, 0, 16), PTO_DRV_OK); /* queued behind the hang */
    PtoEmuStats busy = stats_now();
    CHECK(busy.threads > base.threads);
    CHECK_EQ_INT(busy.streams, base.streams + 4);
    CHECK_EQ_INT(busy.host_registrations, base.host_registrations + 1);
    CHECK_EQ_INT(API->close_device(dev), PTO_DRV_OK);
    CHECK_STATS(stats_now(), base);
}

TEST(emudrv_a_stream_per_run_costs_no_thread_per_run)
{
    PtoEmuStats base = stats_now();
    PtoDrvDevice *dev = open_dev(23);
    Images im = load_images(dev);
    PtoDrvStream *aicpu = new_stream(dev);
    DevGraph g;
    graph_build(dev, im.aicore, &g);
    /* The pools grow to what is in flight at once, and how much overlaps depends
       on scheduling (load, sanitizers): two streams busy at once want two engines,
       the AICPU launch 4 participations and the AICore launch min(2, cpus), plus a
       thread or two woken late. Bound it well below one thread per run (30 runs),
       which is the bug this guards against. */
    uint64_t bound = 16;
    for (int run = 0; run < 30; run++) {
        PtoDrvStream *core = new_stream(dev);                       /* fresh per run, as on a2a3 */
        ((PtoAicpuArgs *)g.host)->run_serial = serial++;
        graph_launch(aicpu, core, &im, &g, PTO_DRV_OK);
        CHECK_EQ_INT(API->stream_synchronize(aicpu, 10000), PTO_DRV_OK);
        CHECK_EQ_INT(API->stream_destroy(core), PTO_DRV_OK);
        graph_check(dev, &g);
        CHECK(stats_now().threads - base.threads <= bound);
    }
    CHECK_EQ_INT(API->close_device(dev), PTO_DRV_OK);
}

TEST(emudrv_a_wide_core_launch_starts_no_more_threads_than_cpus)
{
    PtoEmuStats base = stats_now();
    PtoDrvDevice *dev = open_dev(25);
    Images im = load_images(dev);
    PtoDrvStream *s = new_stream(dev);
    uint64_t a = dev_alloc(dev, 64);
    /* 64 independent core calls: the launch completes only once every one returned */
    for (int round = 0; round < 20; round++)
        CHECK_EQ_INT(API->launch(s, im.aicore, PTO_AICORE_ENTRY_SYMBOL, a, 64), PTO_DRV_OK);
    CHECK_EQ_INT(API->stream_synchronize(s, 10000), PTO_DRV_OK);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    /* one engine for the stream, and participation threads up to the CPUs */
    CHECK(stats_now().threads - base.threads <= (uint64_t)(cpus < 1 ? 1 : cpus) + 1);
    CHECK_EQ_INT(API->stream_destroy(s), PTO_DRV_OK);
    CHECK_EQ_INT(API->close_device(dev), PTO_DRV_OK);
    CHECK_STATS(stats_now(), base);
}

TEST(emudrv_an_idle_driver_burns_no_cpu)
{
    PtoDrvDevice *dev = open_dev(24);
    Images im = load_images(dev);
    PtoDrvStream *s = new_stream(dev), *core = new_stream(dev);
    DevGraph g;
    graph_build(dev, im.aicore, &g);
    graph_launch(s, core, &im, &g, PTO_DRV_OK);
    CHECK_EQ_INT(API->stream_synchronize(s, 10000), PTO_DRV_OK);    /* threads worked and went idle */
    long long before = test_process_cpu_us();
    sleep_ms(300);
    long long used = test_process_cpu_us() - before;
    if (used > 30000) {
        char m[128];
        snprintf(m, sizeof m, "an idle emulated device used %lld us of CPU in 300 ms", used);
        ptest_record_failure(__FILE__, __LINE__, m);
    }
    CHECK_EQ_INT(API->close_device(dev), PTO_DRV_OK);
}
