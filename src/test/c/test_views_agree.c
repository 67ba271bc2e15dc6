/* Strided views end to end, through the exported functions of the built sim
 * libraries (dlopen), on hbg and trb of both arches: an orchestration library
 * (fixtures/fixture_view_orch.c) submits column tiles of one row-major matrix
 * as strided views, and kernels (fixtures/fixture_view_kernels.c) check the
 * views they get. The dependency graph has no edge between the tiles, exactly
 * the expected ones otherwise, and is byte-identical on both runtimes; so is
 * the graph of random strided views. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptest.h"
#include "test_callable.h"
#include "test_sim.h"
#include "test_util.h"

enum { ROWS = 8, COLS = 64, TILE = 16, TILE_ELEMS = ROWS * TILE };


/* The callable running `entry` of the view orchestration library over its kernels. */
static uint8_t *view_callable(const char *entry)
{
    uint32_t klib_size, olib_size;
    const uint8_t *klib = test_fixture("view_kernels", &klib_size), *olib = test_fixture("view_orch", &olib_size);
    if (klib == NULL || olib == NULL)
        return NULL;
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_INOUT, PTO_ARG_OUT, PTO_ARG_OUT, PTO_ARG_OUT, PTO_ARG_SCALAR };
    tcb_signature(&b, sig, 5);
    tcb_library_child(&b, 1, PTO_CORE_AIV, klib, klib_size, "fx_tile_fill");
    tcb_library_child(&b, 2, PTO_CORE_AIV, klib, klib_size, "fx_view_gather");
    tcb_library_child(&b, 3, PTO_CORE_AIC, klib, klib_size, "fx_flat_sum");
    tcb_library_child(&b, 4, PTO_CORE_AIV, klib, klib_size, "fx_nop");
    tcb_library_child(&b, 5, PTO_CORE_AIV, klib, klib_size, "fx_all_strided");
    tcb_orchestration_library(&b, olib, olib_size, entry);
    uint32_t size;
    uint8_t *bytes = tcb_build(&b, &size);
    tcb_free(&b);
    return bytes;
}

typedef struct Outcome {
    int rc;
    char error[400];
    char *dot;                /* malloc'd DOT text, NULL when none */
    float m[ROWS * COLS], out1[TILE_ELEMS], out2[TILE_ELEMS], out3[1];
} Outcome;

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *text = calloc(1, 1 << 18);
    size_t n = fread(text, 1, (1 << 18) - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* Runs the callable on one library with the dependency graph on. */
static void run_on(const char *variant, const char *arch, const uint8_t *callable, uint64_t seed, const char *dir,
                   Outcome *o);

/* run_on with trb's rings sized to `window` task slots (its view pools: 64 views). */
static void run_small(const char *variant, const char *arch, const uint8_t *callable, uint64_t window,
                      const char *dir, Outcome *o);

static void run_sized(const char *variant, const char *arch, const uint8_t *callable, uint64_t seed, uint64_t window,
                      const char *dir, Outcome *o)
{
    int graph = dir != NULL;
    memset(o, 0, sizeof *o);
    o->rc = -1;
    TestRunApi api;
    if (test_load_run_api(variant, &api) != 0) {
        CHECK(!"the library loads");
        return;
    }
    const DeviceImages *img = test_images_of(arch);
    void *ctx = api.lib.create();
    CHECK_EQ_INT(api.init(ctx, 0, img->aicpu, img->aicpu_size, img->aicore, img->aicore_size, NULL, 0, NULL), PTO_OK);
    CHECK_EQ_INT(api.register_(ctx, 3, callable), PTO_OK);
    for (int i = 0; i < ROWS * COLS; i++)
        o->m[i] = -1.0f;
    ChipStorageTaskArgs *args = test_args();
    args->tensor_count = 4;
    args->scalar_count = 1;
    args->tensors[0] = test_f32_tensor(o->m, ROWS * COLS);
    args->tensors[1] = test_f32_tensor(o->out1, TILE_ELEMS);
    args->tensors[2] = test_f32_tensor(o->out2, TILE_ELEMS);
    args->tensors[3] = test_f32_tensor(o->out3, 1);
    args->scalars[0] = seed;
    CallConfig cfg = test_config(20000);
    cfg.enable_dep_graph = graph;
    for (int r = 0; r < PTO_TRB_RING_COUNT && window > 0; r++)
        cfg.ring_task_window[r] = window;
    if (graph)
        snprintf(cfg.output_prefix, sizeof cfg.output_prefix, "%s", dir);
    NativeRunDescriptor desc = { .run_id = 7, .run_epoch = 8 };
    void *storage = aligned_alloc(64, (api.size() + 63) / 64 * 64);
    memset(storage, 0, api.size());
    o->rc = api.run(ctx, storage, 3, args, &cfg, &desc);
    snprintf(o->error, sizeof o->error, "%s", api.lib.last_error());
    if (graph) {
        char path[512];
        snprintf(path, sizeof path, "%s/dep_graph_7_8.dot", dir);
        o->dot = read_text(path);
        unlink(path);
    }
    free(storage);
    free(args);
    api.lib.destroy(ctx);
    test_unload_lib(&api.lib);
}

static void run_on(const char *variant, const char *arch, const uint8_t *callable, uint64_t seed, const char *dir,
                   Outcome *o)
{
    run_sized(variant, arch, callable, seed, 0, dir, o);
}

static void run_small(const char *variant, const char *arch, const uint8_t *callable, uint64_t window,
                      const char *dir, Outcome *o)
{
    run_sized(variant, arch, callable, 0, window, dir, o);
}

static int count_of(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

static const char *const ARCHES[2] = { "a2a3", "a5" };

TEST(views_column_tiles_are_independent_and_kernels_get_their_views_on_both_runtimes)
{
    uint8_t *callable = view_callable("fx_views_tiles");
    REQUIRE(callable != NULL);
    char dir[64] = "/tmp/ptorun_views_XXXXXX";
    REQUIRE(mkdtemp(dir) != NULL);
    static Outcome runs[2];
    for (int a = 0; a < 2; a++) {
        for (int r = 0; r < 2; r++) {
            char variant[32];
            snprintf(variant, sizeof variant, "%s_sim_%s", ARCHES[a], r == 0 ? "hbg" : "trb");
            Outcome *o = &runs[r];
            run_on(variant, ARCHES[a], callable, 0, dir, o);
            if (o->rc != PTO_OK)
                fprintf(stderr, "%s: %s\n", variant, o->error);
            CHECK_EQ_INT(o->rc, PTO_OK);
            REQUIRE(o->dot != NULL);
            /* eight tasks, and exactly these edges: none between the tiles t0..t3 */
            CHECK(strstr(o->dot, "t7 [label=\"7 f3\"];") != NULL);
            static const char *const edges[] = { "t1 -> t4;", "t2 -> t5;", "t1 -> t6;", "t4 -> t6;",
                                                 "t0 -> t7;", "t2 -> t7;", "t3 -> t7;", "t6 -> t7;" };
            for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++)
                CHECK(strstr(o->dot, edges[e]) != NULL);
            CHECK_EQ_INT(count_of(o->dot, "->"), 8);
            /* what the kernels made of their views */
            for (int i = 0; i < ROWS; i++)
                for (int j = 0; j < COLS; j++) {
                    float want = j / TILE == 1 ? 9.0f : (float)(j / TILE + 1);
                    CHECK(o->m[i * COLS + j] == want);
                }
            for (int i = 0; i < TILE_ELEMS; i++)
                CHECK(o->out1[i] == 2.0f && o->out2[i] == 3.0f);
            CHECK(o->out3[0] == (1.0f + 9.0f + 3.0f + 4.0f) * TILE_ELEMS);
        }
        CHECK(runs[0].dot != NULL && runs[1].dot != NULL && strcmp(runs[0].dot, runs[1].dot) == 0);
        free(runs[0].dot);
        free(runs[1].dot);
    }
    rmdir(dir);
    free(callable);
}

TEST(views_a_kernel_refuses_a_view_it_does_not_expect_on_both_runtimes)
{
    uint8_t *callable = view_callable("fx_views_flat_fill");
    REQUIRE(callable != NULL);
    char dir[64] = "/tmp/ptorun_views_XXXXXX";
    REQUIRE(mkdtemp(dir) != NULL);
    for (int v = 0; v < 4; v++) {
        char variant[32];
        snprintf(variant, sizeof variant, "%s_sim_%s", ARCHES[v / 2], v % 2 == 0 ? "hbg" : "trb");
        static Outcome o;
        run_on(variant, ARCHES[v / 2], callable, 0, dir, &o);
        CHECK_EQ_INT(o.rc, PTO_ERR_KERNEL_FAULT);
        CHECK_CONTAINS(o.error, "returned 11"); /* fx_tile_fill: the view is not 2-D */
        free(o.dot);
    }
    rmdir(dir);
    free(callable);
}

TEST(views_random_strided_views_give_the_same_graph_on_hbg_and_trb)
{
    uint8_t *callable = view_callable("fx_views_random");
    REQUIRE(callable != NULL);
    char dir[64] = "/tmp/ptorun_views_XXXXXX";
    REQUIRE(mkdtemp(dir) != NULL);
    static const uint64_t seeds[] = { 0x9e3779b97f4a7c15ull, 0x2545f4914f6cdd1dull, 12345 };
    for (size_t k = 0; k < sizeof seeds / sizeof seeds[0]; k++) {
        static Outcome h, t;
        const char *arch = ARCHES[k % 2];
        char hbg[32], trb[32];
        snprintf(hbg, sizeof hbg, "%s_sim_hbg", arch);
        snprintf(trb, sizeof trb, "%s_sim_trb", arch);
        run_on(hbg, arch, callable, seeds[k], dir, &h);
        run_on(trb, arch, callable, seeds[k], dir, &t);
        CHECK_EQ_INT(h.rc, PTO_OK);
        CHECK_EQ_INT(t.rc, PTO_OK);
        CHECK(h.dot != NULL && t.dot != NULL);
        if (h.dot != NULL && t.dot != NULL) {
            CHECK(strstr(h.dot, "t299 [label=\"299 f4\"];") != NULL);
            if (strcmp(h.dot, t.dot) != 0) {
                char m[128];
                snprintf(m, sizeof m, "seed 0x%llx: hbg and trb graphs differ", (unsigned long long)seeds[k]);
                ptest_record_failure(__FILE__, __LINE__, m);
            }
            CHECK(count_of(h.dot, "->") > 100);
        }
        free(h.dot);
        free(t.dot);
    }
    rmdir(dir);
    free(callable);
}

TEST(views_tasks_with_many_strided_views_wait_for_trbs_view_pool)
{
    uint8_t *callable = view_callable("fx_views_wide");
    REQUIRE(callable != NULL);
    char dir[64] = "/tmp/ptorun_views_XXXXXX";
    REQUIRE(mkdtemp(dir) != NULL);
    for (int a = 0; a < 2; a++) {
        static Outcome h, t;
        char hbg[32], trb[32];
        snprintf(hbg, sizeof hbg, "%s_sim_hbg", ARCHES[a]);
        snprintf(trb, sizeof trb, "%s_sim_trb", ARCHES[a]);
        run_small(hbg, ARCHES[a], callable, 16, dir, &h);
        run_small(trb, ARCHES[a], callable, 16, dir, &t); /* 31 views a task: two tasks fill a pool */
        if (t.rc != PTO_OK)
            fprintf(stderr, "%s: %s\n", trb, t.error);
        CHECK_EQ_INT(h.rc, PTO_OK);
        CHECK_EQ_INT(t.rc, PTO_OK);
        CHECK(h.dot != NULL && t.dot != NULL && strcmp(h.dot, t.dot) == 0);
        CHECK(h.dot != NULL && strstr(h.dot, "t23 [label=\"23 f5\"];") != NULL);
        free(h.dot);
        free(t.dot);
    }
    rmdir(dir);
    free(callable);
}

/* Without a dependency graph trb drops the map entries (and view records) of
   finished tasks when they run out: 200 tasks of 31 strided accesses outgrow
   the 1024 view records many times over. */
TEST(views_trb_reuses_the_tensor_maps_view_records_of_finished_tasks)
{
    uint8_t *callable = view_callable("fx_views_wide");
    REQUIRE(callable != NULL);
    for (int a = 0; a < 2; a++) {
        static Outcome o;
        char trb[32];
        snprintf(trb, sizeof trb, "%s_sim_trb", ARCHES[a]);
        run_sized(trb, ARCHES[a], callable, 200, 16, NULL, &o);
        if (o.rc != PTO_OK)
            fprintf(stderr, "%s: %s\n", trb, o.error);
        CHECK_EQ_INT(o.rc, PTO_OK);
    }
    free(callable);
}
