/* hbg end to end on the sim (below the exported API) with what issue [3/8]
 * adds: programs with loops, locals and scopes; user kernel libraries; user
 * orchestration libraries (host dlopen count); the dependency-graph file;
 * degenerate runs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/chip_callable.h"
#include "services/dep_graph.h"
#include "util/last_error.h"
#include "ptest.h"
#include "runtime/hbg/hbg_internal.h"
#include "test_callable.h"
#include "test_sim.h"

static RuntimeCallable *reg(Runner *r, const uint8_t *bytes)
{
    HostApi api = host_api_bind(r, 0, 0, &host_api_ops);
    RuntimeCallable *c = NULL;
    int rc = runtime_register_callable(&api, bytes, &c);
    if (rc != PTO_OK)
        fprintf(stderr, "  register: %s\n", pto_last_error());
    return c;
}

static int reg_rc(Runner *r, const uint8_t *bytes)
{
    HostApi api = host_api_bind(r, 0, 0, &host_api_ops);
    RuntimeCallable *c = NULL;
    int rc = runtime_register_callable(&api, bytes, &c);
    if (c != NULL)
        runtime_release_callable(&api, c);
    return rc;
}

static void unreg(Runner *r, RuntimeCallable *c)
{
    HostApi api = host_api_bind(r, 0, 0, &host_api_ops);
    runtime_release_callable(&api, c);
}

static uint8_t *build(TestCallableBuilder *b)
{
    uint32_t size;
    uint8_t *bytes = tcb_build(b, &size);
    tcb_free(b);
    return bytes;
}

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static void fill(float *x, uint32_t n, uint32_t seed)
{
    uint32_t s = seed * 2654435761u + 7;
    for (uint32_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)((int32_t)(s >> 9) % 20001 - 10000) / (float)(3 + (s & 255));
    }
}

static int same_bits(const float *a, const float *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (bits(a[i]) != bits(b[i])) {
            fprintf(stderr, "  element %u: %a != expected %a\n", i, (double)a[i], (double)b[i]);
            return 0;
        }
    return 1;
}

static PtoProgramParam tile_view(uint32_t arg, uint8_t dir, int64_t tile_bytes, uint32_t loop_depth)
{
    PtoProgramParam p = tcb_tensor(arg, dir, 0, tile_bytes);
    p.offset.coef[loop_depth] = tile_bytes;
    return p;
}

/* ---- a program with loops, locals and scopes ----------------------------------------- */

enum { TILE = 64, TILES = 5, N = TILE * TILES };
enum { FN_VMUL = 1, FN_VADDS = 2, FN_TILE_ADD = 3, FN_NOOP = 4 };

/* out[t] = x[t] * w[t] + 1 per tile through one local, each tile in a scope;
   then twice over all tiles out += x (nested loops); then a zero-trip loop. */
static uint8_t *tiled_program(void)
{
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_IN, PTO_ARG_IN, PTO_ARG_OUT };
    tcb_signature(&b, sig, 3);
    tcb_child(&b, FN_VMUL, PTO_CORE_AIV, "vmul");
    tcb_child(&b, FN_VADDS, PTO_CORE_AIV, "vadds");
    tcb_child(&b, FN_TILE_ADD, PTO_CORE_AIV, "tile_add");
    tcb_child(&b, FN_NOOP, PTO_CORE_AIC, "noop");
    b.local_count = 1;
    const int64_t tb = TILE * 4;
    tcb_alloc(&b, 0, tb);
    tcb_loop(&b, TILES);
    tcb_insn(&b, PTO_OP_SCOPE_BEGIN);
    PtoProgramParam mul[] = { tile_view(0, PTO_ARG_IN, tb, 0), tile_view(1, PTO_ARG_IN, tb, 0),
                              tcb_local(0, PTO_ARG_OUT, 0, tb) };
    tcb_submit(&b, FN_VMUL, mul, 3);
    PtoProgramParam adds[] = { tcb_local(0, PTO_ARG_IN, 0, tb), tile_view(2, PTO_ARG_OUT, tb, 0), tcb_f32(1.0f) };
    tcb_submit(&b, FN_VADDS, adds, 3);
    tcb_insn(&b, PTO_OP_SCOPE_END);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_loop(&b, 2);
    tcb_loop(&b, TILES);
    PtoProgramParam acc[] = { tile_view(0, PTO_ARG_IN, tb, 1), tile_view(2, PTO_ARG_INOUT, tb, 1) };
    tcb_submit(&b, FN_TILE_ADD, acc, 2);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_loop(&b, 0);
    PtoProgramParam none[1];
    tcb_submit(&b, FN_NOOP, none, 0);
    tcb_insn(&b, PTO_OP_END_LOOP);
    return build(&b);
}

TEST(hbg_program_with_loops_locals_and_scopes_matches_the_reference)
{
    Runner *r = test_sim_runner();
    uint8_t *bytes = tiled_program();
    RuntimeCallable *c = reg(r, bytes);
    CHECK(c != NULL);
    CHECK_EQ_INT(c->program_local_bytes, TILE * 4);
    float *x = malloc(N * 4), *w = malloc(N * 4), *out = malloc(N * 4), *want = malloc(N * 4);
    fill(x, N, 1);
    fill(w, N, 2);
    for (uint32_t i = 0; i < N; i++)
        want[i] = ((x[i] * w[i] + 1.0f) + x[i]) + x[i];
    ChipStorageTaskArgs *args = test_args();
    args->tensor_count = 3;
    args->tensors[0] = test_f32_tensor(x, N);
    args->tensors[1] = test_f32_tensor(w, N);
    args->tensors[2] = test_f32_tensor(out, N);
    CallConfig cfg = test_config(10000);
    for (uint32_t bank = 0; bank < 2; bank++) {
        for (uint32_t i = 0; i < N; i++)
            out[i] = -5.0f;
        int exec_rc = -99;
        CHECK_EQ_INT(test_run(r, c, bank, args, &cfg, &exec_rc), PTO_OK);
        CHECK_EQ_INT(exec_rc, PTO_OK);
        CHECK(same_bits(out, want, N));
        /* the first run builds (and records) the graph, the second replays it: builds nothing */
        const RuntimeSlotScratch *ws = test_slot_scratch(r, bank);
        CHECK_EQ_INT(ws->graph.task_count, bank == 0 ? 4 * TILES : 0);
        CHECK_EQ_INT(ws->local_high - ws->local_base, TILE * 4);
        CHECK_EQ_INT(ws->local_end - ws->local_base, TILE * 4);
    }
    /* every tile's vmul waits for the previous tile's vadds (WAR on the local) */
    const HbgGraph *g = &test_slot_scratch(r, 0)->graph;
    CHECK_EQ_INT(g->tasks[2].fanin_count, 2); /* after vmul 0 (WAW l0) and vadds 1 (WAR l0) */
    unreg(r, c);
    free(bytes);
    free(args);
    free(x), free(w), free(out), free(want);
    runner_destroy(r);
}

TEST(hbg_program_local_heap_too_large_for_the_device_fails_the_prepare_cleanly)
{
    setenv("PTORUN_SIM_DEVICE_MEMORY", "1M", 1);
    Runner *r = test_sim_runner();
    unsetenv("PTORUN_SIM_DEVICE_MEMORY");
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_OUT };
    tcb_signature(&b, sig, 1);
    tcb_child(&b, 1, PTO_CORE_AIV, "vfill");
    b.local_count = 1;
    tcb_alloc(&b, 0, 4u << 20);
    PtoProgramParam p[] = { tcb_local(0, PTO_ARG_OUT, 0, 64), tcb_f32(1.0f) };
    tcb_submit(&b, 1, p, 2);
    uint8_t *bytes = build(&b);
    RuntimeCallable *c = reg(r, bytes);
    float out[4];
    ChipStorageTaskArgs *args = test_args();
    args->tensor_count = 1;
    args->tensors[0] = test_f32_tensor(out, 4);
    CallConfig cfg = test_config(10000);
    CHECK_EQ_INT(test_run(r, c, 0, args, &cfg, NULL), PTO_ERR_OUT_OF_MEMORY);
    CHECK_CONTAINS(pto_last_error(), "sim device memory exhausted");
    CHECK(test_slot_scratch(r, 0)->bridge.api == NULL);
    unreg(r, c);
    CHECK_EQ_INT(runner_committed_bytes(r), 0);
    free(bytes);
    free(args);
    runner_destroy(r);
}

/* ---- degenerate runs --------------------------------------------------------------- */

TEST(hbg_zero_task_programs_and_zero_byte_tensors_complete)
{
    Runner *r = test_sim_runner();
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_IN, PTO_ARG_OUT };
    tcb_signature(&b, sig, 2);
    tcb_child(&b, 1, PTO_CORE_AIV, "vcopy");
    uint8_t *empty = build(&b);
    tcb_init(&b);
    tcb_signature(&b, sig, 2);
    tcb_child(&b, 1, PTO_CORE_AIV, "vcopy");
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, 0, 0), tcb_tensor(1, PTO_ARG_OUT, 0, 0) };
    tcb_submit(&b, 1, p, 2);
    tcb_submit(&b, 1, p, 2);
    uint8_t *zero_views = build(&b);
    float a[1] = { 1.0f }, c[1] = { 2.0f };
    ChipStorageTaskArgs *args = test_args();
    args->tensor_count = 2;
    args->tensors[0] = test_f32_tensor(a, 0);
    args->tensors[1] = test_f32_tensor(c, 0);
    CallConfig cfg = test_config(10000);
    uint8_t *callables[] = { empty, zero_views };
    for (int i = 0; i < 2; i++) {
        RuntimeCallable *k = reg(r, callables[i]);
        int exec_rc = -99;
        CHECK_EQ_INT(test_run(r, k, 0, args, &cfg, &exec_rc), PTO_OK);
        CHECK_EQ_INT(exec_rc, PTO_OK);
        CHECK_EQ_INT(test_slot_scratch(r, 0)->graph.task_count, (uint32_t)i * 2);
        CHECK_EQ_INT(test_slot_scratch(r, 0)->graph.edge_count, 0); /* zero-byte views depend on nothing */
        unreg(r, k);
    }
    CHECK(bits(c[0]) == bits(2.0f));
    free(empty);
    free(zero_views);
    free(args);
    runner_destroy(r);
}

/* ---- the dependency-graph file --------------------------------------------------------- */

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *text = calloc(1, 1 << 16);
    size_t n = fread(text, 1, (1 << 16) - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

static void make_temp_dir(char *dir, size_t size)
{
    snprintf(dir, size, "/tmp/ptorun_test_XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
}

static const char DIAMOND_DOT[] = "digraph ptorun_run {\n"
                                  "  t0 [label=\"0 f1\"];\n"
                                  "  t1 [label=\"1 f2\"];\n"
                                  "  t2 [label=\"2 f2\"];\n"
                                  "  t3 [label=\"3 f3\"];\n"
                                  "  t0 -> t1;\n"
                                  "  t0 -> t2;\n"
                                  "  t1 -> t3;\n"
                                  "  t2 -> t3;\n"
                                  "}\n";

TEST(hbg_writes_the_dependency_graph_of_a_diamond_at_finalize)
{
    Runner *r = test_sim_runner();
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_OUT, PTO_ARG_OUT, PTO_ARG_OUT, PTO_ARG_OUT };
    tcb_signature(&b, sig, 4);
    tcb_child(&b, 1, PTO_CORE_AIV, "vfill");
    tcb_child(&b, 2, PTO_CORE_AIV, "vadds");
    tcb_child(&b, 3, PTO_CORE_AIV, "vadd");
    PtoProgramParam t0[] = { tcb_tensor(0, PTO_ARG_OUT, 0, 64), tcb_f32(2.0f) };
    PtoProgramParam t1[] = { tcb_tensor(0, PTO_ARG_IN, 0, 64), tcb_tensor(1, PTO_ARG_OUT, 0, 64), tcb_f32(1.0f) };
    PtoProgramParam t2[] = { tcb_tensor(0, PTO_ARG_IN, 0, 64), tcb_tensor(2, PTO_ARG_OUT, 0, 64), tcb_f32(3.0f) };
    PtoProgramParam t3[] = { tcb_tensor(1, PTO_ARG_IN, 0, 64), tcb_tensor(2, PTO_ARG_IN, 0, 64),
                             tcb_tensor(3, PTO_ARG_OUT, 0, 64) };
    tcb_submit(&b, 1, t0, 2);
    tcb_submit(&b, 2, t1, 3);
    tcb_submit(&b, 2, t2, 3);
    tcb_submit(&b, 3, t3, 3);
    uint8_t *bytes = build(&b);
    RuntimeCallable *c = reg(r, bytes);
    float t[4][16];
    ChipStorageTaskArgs *args = test_args();
    args->tensor_count = 4;
    for (int i = 0; i < 4; i++)
        args->tensors[i] = test_f32_tensor(t[i], 16);

    char dir[64], prefix[128], path[256];
    make_temp_dir(dir, sizeof dir);
    snprintf(prefix, sizeof prefix, "%s/graphs/run", dir); /* created on demand */
    CallConfig cfg = test_config(10000);
    cfg.enable_dep_graph = 1;
    cfg.enable_trace = 1;      /* accepted; hbg writes no trace (docs/device.md) */
    cfg.enable_dump_args = 1;
    snprintf(cfg.output_prefix, sizeof cfg.output_prefix, "%s", prefix);
    NativeRunDescriptor desc = { .run_id = 7, .run_epoch = 99 };
    CHECK_EQ_INT(test_run_desc(r, c, 0, args, &cfg, &desc, NULL), PTO_OK);
    CHECK(bits(t[3][15]) == bits(8.0f));
    snprintf(path, sizeof path, "%s/dep_graph_7_99.dot", prefix);
    char *text = read_text(path);
    CHECK(text != NULL && strcmp(text, DIAMOND_DOT) == 0);
    if (text != NULL && strcmp(text, DIAMOND_DOT) != 0)
        fprintf(stderr, "  got:\n%s", text);
    free(text);
    unlink(path);

    /* off: no file */
    cfg.enable_dep_graph = 0;
    desc.run_epoch = 100;
    CHECK_EQ_INT(test_run_desc(r, c, 1, args, &cfg, &desc, NULL), PTO_OK);
    snprintf(path, sizeof path, "%s/dep_graph_7_100.dot", prefix);
    CHECK(access(path, F_OK) != 0);
    rmdir(prefix);
    snprintf(path, sizeof path, "%s/graphs", dir);
    rmdir(path);
    rmdir(dir);
    unreg(r, c);
    free(bytes);
    free(args);
    runner_destroy(r);
}

TEST(dep_graph_writer_sorts_and_dedups_edges_and_refuses_bad_input)
{
    char dir[64], path[256];
    make_temp_dir(dir, sizeof dir);
    NativeRunDescriptor desc = { .run_id = 1, .run_epoch = 2 };
    const uint32_t func_ids[4] = { 1, 2, 2, 3 };
    const uint32_t prod[] = { 2, 1, 0, 0, 2 }, cons[] = { 3, 3, 2, 1, 3 };
    NativeRunReport report = { 0 };
    CHECK_EQ_INT(dep_graph_write(dir, &desc, 4, func_ids, prod, cons, 5, &report), PTO_OK);
    snprintf(path, sizeof path, "%s/dep_graph_1_2.dot", dir);
    CHECK_EQ_INT(report.output_file_count, 1); /* the path it wrote is recorded, exactly */
    CHECK(strcmp(report.output_files[0], path) == 0);
    char *text = read_text(path);
    CHECK(text != NULL && strcmp(text, DIAMOND_DOT) == 0);
    free(text);
    unlink(path);

    /* no tasks */
    CHECK_EQ_INT(dep_graph_write(dir, &desc, 0, NULL, NULL, NULL, 0, NULL), PTO_OK);
    text = read_text(path);
    CHECK(text != NULL && strcmp(text, "digraph ptorun_run {\n}\n") == 0);
    free(text);
    unlink(path);

    const uint32_t back_p[] = { 2 }, back_c[] = { 1 };
    CHECK_EQ_INT(dep_graph_write(dir, &desc, 4, func_ids, back_p, back_c, 1, &report), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(report.output_file_count, 1); /* a file not written is not recorded */
    CHECK_CONTAINS(pto_last_error(), "edge 0 (t2 -> t1) is not a forward edge of 4 tasks");
    const uint32_t out_p[] = { 0 }, out_c[] = { 4 };
    CHECK_EQ_INT(dep_graph_write(dir, &desc, 4, func_ids, out_p, out_c, 1, NULL), PTO_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(dep_graph_write(dir, NULL, 4, func_ids, NULL, NULL, 0, NULL), PTO_ERR_INVALID_ARGUMENT);

    /* a prefix under a regular file cannot be created */
    char file[128], under[160];
    snprintf(file, sizeof file, "%s/plain", dir);
    FILE *f = fopen(file, "w");
    fclose(f);
    snprintf(under, sizeof under, "%s/sub", file);
    CHECK_EQ_INT(dep_graph_write(under, &desc, 4, func_ids, prod, cons, 5, NULL), PTO_ERR_FAILED);
    CHECK_CONTAINS(pto_last_error(), "cannot create directory");
    unlink(file);
    rmdir(dir);
}

/* ---- user kernel libraries -------------------------------------------------------------- */

enum { KN = 1000 };

/* Signature IN x, INOUT y, SCALAR a; children 1 = fx_saxpy, 2 = fx_fail (library),
   3 = vcopy; the program: `pattern` of func ids, each on (x, y[, a]). */
static uint8_t *saxpy_program(const uint8_t *lib, uint32_t lib_size, const uint32_t *pattern, uint32_t n,
                              const char *saxpy_symbol)
{
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_IN, PTO_ARG_INOUT, PTO_ARG_SCALAR };
    tcb_signature(&b, sig, 3);
    tcb_library_child(&b, 1, PTO_CORE_AIV, lib, lib_size, saxpy_symbol);
    tcb_library_child(&b, 2, PTO_CORE_AIC, lib, lib_size, "fx_fail");
    tcb_child(&b, 3, PTO_CORE_AIV, "vcopy");
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, 0, KN * 4), tcb_tensor(1, PTO_ARG_INOUT, 0, KN * 4),
                            tcb_scalar_arg(0) };
    for (uint32_t i = 0; i < n; i++)
        tcb_submit(&b, pattern[i], p, 3);
    return build(&b);
}

static ChipStorageTaskArgs *saxpy_args(float *x, float *y, float a)
{
    ChipStorageTaskArgs *args = test_args();
    args->tensor_count = 2;
    args->scalar_count = 1;
    args->tensors[0] = test_f32_tensor(x, KN);
    args->tensors[1] = test_f32_tensor(y, KN);
    args->scalars[0] = bits(a);
    return args;
}

TEST(hbg_kernel_library_runs_loaded_once_per_content_and_per_device)
{
    uint32_t lib_size;
    const uint8_t *lib = test_fixture("kernels", &lib_size);
    CHECK(lib != NULL);
    if (lib == NULL)
        return;
    Runner *r = test_sim_runner(), *r2 = test_sim_runner();
    const uint32_t twice[] = { 1, 1 }, once[] = { 1 };
    uint8_t *k1 = saxpy_program(lib, lib_size, twice, 2, "fx_saxpy");
    uint8_t *k2 = saxpy_program(lib, lib_size, once, 1, "fx_saxpy");
    RuntimeCallable *c1 = reg(r, k1), *c2 = reg(r, k2), *c3 = reg(r2, k1);
    CHECK(c1 != NULL && c2 != NULL && c3 != NULL);
    /* one load per device: the same entry address for both callables of r, another on r2 */
    CHECK(c1->copy.kernels[0].addr != 0);
    CHECK_EQ_INT(c1->copy.kernels[0].addr, c2->copy.kernels[0].addr);
    CHECK(c1->copy.kernels[0].addr != c3->copy.kernels[0].addr);
    CHECK(c1->copy.kernels[1].addr != c1->copy.kernels[0].addr);

    float x[KN], y[KN], want[KN];
    fill(x, KN, 3);
    fill(y, KN, 4);
    const float a = 1.25f;
    for (uint32_t i = 0; i < KN; i++)
        want[i] = a * x[i] + (a * x[i] + y[i]);
    ChipStorageTaskArgs *args = saxpy_args(x, y, a);
    CallConfig cfg = test_config(10000);
    CHECK_EQ_INT(test_run(r, c1, 0, args, &cfg, NULL), PTO_OK);
    CHECK(same_bits(y, want, KN));
    unreg(r, c1);
    unreg(r, c2);
    unreg(r2, c3);
    CHECK_EQ_INT(runner_committed_bytes(r2), 0);
    free(k1);
    free(k2);
    free(args);
    runner_destroy(r);
    runner_destroy(r2);
}

TEST(hbg_kernel_library_globals_are_private_to_each_device)
{
    uint32_t lib_size;
    const uint8_t *lib = test_fixture("kernels", &lib_size);
    if (lib == NULL)
        return;
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_OUT };
    tcb_signature(&b, sig, 1);
    tcb_library_child(&b, 1, PTO_CORE_AIV, lib, lib_size, "fx_count");
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_OUT, 0, 4) };
    tcb_submit(&b, 1, p, 1);
    uint8_t *bytes = build(&b);
    Runner *r = test_sim_runner(), *r2 = test_sim_runner();
    RuntimeCallable *c = reg(r, bytes), *c2 = reg(r2, bytes);
    uint32_t count = 0;
    ChipStorageTaskArgs *args = test_args();
    args->tensor_count = 1;
    args->tensors[0] = test_f32_tensor((float *)&count, 1);
    CallConfig cfg = test_config(10000);
    CHECK_EQ_INT(test_run(r, c, 0, args, &cfg, NULL), PTO_OK);
    CHECK_EQ_INT(count, 1);
    CHECK_EQ_INT(test_run(r, c, 0, args, &cfg, NULL), PTO_OK);
    CHECK_EQ_INT(count, 2);
    CHECK_EQ_INT(test_run(r2, c2, 0, args, &cfg, NULL), PTO_OK);
    CHECK_EQ_INT(count, 1);
    /* the last release unloads the library: a new registration starts over */
    unreg(r, c);
    c = reg(r, bytes);
    CHECK_EQ_INT(test_run(r, c, 0, args, &cfg, NULL), PTO_OK);
    CHECK_EQ_INT(count, 1);
    unreg(r, c);
    unreg(r2, c2);
    free(bytes);
    free(args);
    runner_destroy(r);
    runner_destroy(r2);
}

TEST(hbg_a_failing_library_kernel_fails_the_run_and_the_next_run_works)
{
    uint32_t lib_size;
    const uint8_t *lib = test_fixture("kernels", &lib_size);
    if (lib == NULL)
        return;
    Runner *r = test_sim_runner();
    const uint32_t failing[] = { 1, 2, 1 }, good[] = { 1 };
    uint8_t *kf = saxpy_program(lib, lib_size, failing, 3, "fx_saxpy");
    uint8_t *kg = saxpy_program(lib, lib_size, good, 1, "fx_saxpy");
    RuntimeCallable *cf = reg(r, kf), *cg = reg(r, kg);
    float x[KN], y[KN], y0[KN];
    fill(x, KN, 5);
    fill(y, KN, 6);
    memcpy(y0, y, sizeof y);
    ChipStorageTaskArgs *args = saxpy_args(x, y, 2.0f);
    char dir[64];
    make_temp_dir(dir, sizeof dir);
    CallConfig cfg = test_config(10000);
    cfg.enable_dep_graph = 1;
    snprintf(cfg.output_prefix, sizeof cfg.output_prefix, "%s", dir);
    NativeRunDescriptor desc = { .run_id = 3, .run_epoch = 4 };
    int exec_rc = 0;
    CHECK_EQ_INT(test_run_desc(r, cf, 0, args, &cfg, &desc, &exec_rc), PTO_ERR_KERNEL_FAULT);
    CHECK_EQ_INT(exec_rc, PTO_ERR_KERNEL_FAULT);
    CHECK_CONTAINS(pto_last_error(),
                   "kernel fault: task 1 (func_id 2, kernel 'fx_fail') returned 42 (the kernel library's own code)");
    CHECK(same_bits(y, y0, KN)); /* nothing copied back */
    char path[128];
    snprintf(path, sizeof path, "%s/dep_graph_3_4.dot", dir);
    CHECK(access(path, F_OK) != 0); /* a failed run writes no graph */
    rmdir(dir);
    cfg.enable_dep_graph = 0;
    CHECK_EQ_INT(test_run(r, cg, 0, args, &cfg, NULL), PTO_OK);
    for (uint32_t i = 0; i < KN; i++)
        y0[i] = 2.0f * x[i] + y0[i];
    CHECK(same_bits(y, y0, KN));
    unreg(r, cf);
    unreg(r, cg);
    free(kf);
    free(kg);
    free(args);
    runner_destroy(r);
}

TEST(hbg_kernel_library_without_the_entry_symbol_is_refused_without_a_leak)
{
    uint32_t lib_size;
    const uint8_t *lib = test_fixture("kernels", &lib_size);
    if (lib == NULL)
        return;
    Runner *r = test_sim_runner();
    const uint32_t once[] = { 1 };
    uint8_t *bytes = saxpy_program(lib, lib_size, once, 1, "fx_nope");
    CHECK_EQ_INT(reg_rc(r, bytes), PTO_ERR_BAD_CALLABLE);
    CHECK_CONTAINS(pto_last_error(), "child 0 (func_id 1): the kernel library has no entry symbol 'fx_nope': ");
    CHECK_EQ_INT(runner_committed_bytes(r), 0);
    free(bytes);
    runner_destroy(r);
}

/* ---- user orchestration libraries ----------------------------------------------------- */

enum { ON = 300 };

/* Signature IN ctl, IN x, INOUT y, SCALAR a; children 1 = fx_saxpy (library), 2 = vcopy. */
static uint8_t *orch_callable(const char *entry)
{
    uint32_t klib_size, olib_size;
    const uint8_t *klib = test_fixture("kernels", &klib_size), *olib = test_fixture("orch", &olib_size);
    if (klib == NULL || olib == NULL)
        return NULL;
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_IN, PTO_ARG_IN, PTO_ARG_INOUT, PTO_ARG_SCALAR };
    tcb_signature(&b, sig, 4);
    tcb_library_child(&b, 1, PTO_CORE_AIV, klib, klib_size, "fx_saxpy");
    tcb_child(&b, 2, PTO_CORE_AIV, "vcopy");
    tcb_orchestration_library(&b, olib, olib_size, entry);
    return build(&b);
}

typedef struct OrchRun {
    int32_t ctl;
    float x[ON], y[ON];
    ChipStorageTaskArgs *args;
} OrchRun;

static void orch_run_init(OrchRun *o, int32_t ctl, float a)
{
    o->ctl = ctl;
    fill(o->x, ON, 8);
    fill(o->y, ON, 9);
    o->args = test_args();
    o->args->tensor_count = 3;
    o->args->scalar_count = 1;
    o->args->tensors[0] = test_f32_tensor((float *)&o->ctl, 1);
    o->args->tensors[0].dtype = PTO_DTYPE_I32;
    o->args->tensors[1] = test_f32_tensor(o->x, ON);
    o->args->tensors[2] = test_f32_tensor(o->y, ON);
    o->args->scalars[0] = bits(a);
}

/* y after `times` sequential saxpy steps. */
static void saxpy_reference(const OrchRun *o, float a, uint32_t times, float *want)
{
    memcpy(want, o->y, sizeof o->y);
    for (uint32_t t = 0; t < times; t++)
        for (uint32_t i = 0; i < ON; i++)
            want[i] = a * o->x[i] + want[i];
}

TEST(hbg_orchestration_library_reads_control_values_and_is_loaded_once_per_content)
{
    uint8_t *repeat = orch_callable("fx_orch_repeat"), *write_ctl = orch_callable("fx_orch_write_ctl");
    CHECK(repeat != NULL && write_ctl != NULL);
    if (repeat == NULL || write_ctl == NULL)
        return;
    Runner *r = test_sim_runner();
    CHECK_EQ_INT(runner_host_dlopen_count(r), 0);
    RuntimeCallable *c1 = reg(r, repeat);
    CHECK_EQ_INT(runner_host_dlopen_count(r), 1);
    RuntimeCallable *c2 = reg(r, write_ctl);
    CHECK_EQ_INT(runner_host_dlopen_count(r), 1); /* same image: no second load */
    CHECK(c1->orch_library == c2->orch_library && c1->orch_entry != c2->orch_entry);

    const float a = 0.75f;
    OrchRun o;
    float want[ON];
    CallConfig cfg = test_config(10000);
    orch_run_init(&o, 3, a);
    saxpy_reference(&o, a, 4, want); /* 3 tasks on x, then one through the local copy */
    CHECK_EQ_INT(test_run(r, c1, 0, o.args, &cfg, NULL), PTO_OK);
    CHECK(same_bits(o.y, want, ON));
    CHECK_EQ_INT(test_slot_scratch(r, 0)->graph.task_count, 5);
    CHECK(test_slot_scratch(r, 0)->bridge.api == NULL);
    free(o.args);

    orch_run_init(&o, 0, a);
    saxpy_reference(&o, a, 5, want);
    CHECK_EQ_INT(test_run(r, c2, 1, o.args, &cfg, NULL), PTO_OK);
    CHECK(same_bits(o.y, want, ON));
    CHECK_EQ_INT(o.ctl, 0); /* an IN tensor written through the bridge is never copied back */
    free(o.args);

    /* the last release unloads it; registering again loads it again */
    unreg(r, c1);
    unreg(r, c2);
    CHECK_EQ_INT(runner_host_dlopen_count(r), 1);
    c1 = reg(r, repeat);
    CHECK_EQ_INT(runner_host_dlopen_count(r), 2);
    unreg(r, c1);
    /* another device context loads its own copy */
    Runner *r2 = test_sim_runner();
    c1 = reg(r2, repeat);
    CHECK_EQ_INT(runner_host_dlopen_count(r2), 1);
    unreg(r2, c1);
    free(repeat);
    free(write_ctl);
    runner_destroy(r);
    runner_destroy(r2);
}

TEST(hbg_orchestration_library_failures_name_the_entry_and_leave_the_chip_usable)
{
    struct { const char *entry; int code; const char *message; } cases[] = {
        { "fx_orch_fail", PTO_ERR_ORCHESTRATION, "orchestration 'fx_orch_fail' returned 7" },
        { "fx_orch_open_scope", PTO_ERR_ORCHESTRATION,
          "orchestration 'fx_orch_open_scope' returned with 1 scope(s) still open" },
        { "fx_orch_ignore_error", PTO_ERR_ORCHESTRATION,
          "orchestration 'fx_orch_ignore_error' returned 0 after a failed call: submit: func_id 999 is not a child" },
        { "fx_orch_bad_read", PTO_ERR_ORCHESTRATION, "orchestration 'fx_orch_bad_read' returned -3: " },
    };
    uint8_t *good = orch_callable("fx_orch_repeat");
    if (good == NULL)
        return;
    Runner *r = test_sim_runner();
    RuntimeCallable *ok = reg(r, good);
    CallConfig cfg = test_config(10000);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t *bytes = orch_callable(cases[i].entry);
        RuntimeCallable *c = reg(r, bytes);
        OrchRun o;
        orch_run_init(&o, 1, 1.0f);
        float y0[ON];
        memcpy(y0, o.y, sizeof y0);
        CHECK_EQ_INT(test_run(r, c, 0, o.args, &cfg, NULL), cases[i].code);
        CHECK_CONTAINS(pto_last_error(), cases[i].message);
        CHECK(test_slot_scratch(r, 0)->bridge.api == NULL);
        CHECK(same_bits(o.y, y0, ON));
        float want[ON];
        saxpy_reference(&o, 1.0f, 2, want);
        CHECK_EQ_INT(test_run(r, ok, 0, o.args, &cfg, NULL), PTO_OK);
        CHECK(same_bits(o.y, want, ON));
        free(o.args);
        unreg(r, c);
        free(bytes);
    }
    CHECK_EQ_INT(runner_host_dlopen_count(r), 1);

    /* a local heap too small for the library's alloc_tensor */
    OrchRun o;
    orch_run_init(&o, 1, 1.0f);
    cfg.ring_heap[0] = 1024;
    CHECK_EQ_INT(test_run(r, ok, 0, o.args, &cfg, NULL), PTO_ERR_ORCHESTRATION);
    CHECK_CONTAINS(pto_last_error(), "returned -1: alloc_tensor: 1200 bytes do not fit the run's 1024-byte local heap (0 in use");
    free(o.args);

    /* an entry the library does not export */
    uint8_t *missing = orch_callable("fx_orch_missing");
    CHECK_EQ_INT(reg_rc(r, missing), PTO_ERR_BAD_CALLABLE);
    CHECK_CONTAINS(pto_last_error(), "the orchestration library has no entry symbol 'fx_orch_missing'");
    free(missing);
    unreg(r, ok);
    CHECK_EQ_INT(runner_committed_bytes(r) > 0, 1); /* the banks' arenas stay */
    free(good);
    runner_destroy(r);
}

/* A program's task count is static: one an hbg run cannot hold is refused at
   bind before a single task is submitted (it used to submit 2^22 tasks first),
   naming the count and the limit. */
static uint8_t *looped_noops(uint64_t outer, uint64_t inner)
{
    TestCallableBuilder b;
    tcb_init(&b);
    tcb_child(&b, FN_NOOP, PTO_CORE_AIC, "noop");
    tcb_loop(&b, outer);
    tcb_loop(&b, inner);
    PtoProgramParam none[1];
    tcb_submit(&b, FN_NOOP, none, 0);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_END_LOOP);
    return build(&b);
}

TEST(hbg_refuses_a_program_with_more_tasks_than_a_run_holds_before_submitting_any)
{
    Runner *r = test_sim_runner();
    CallConfig cfg = test_config(10000);
    ChipStorageTaskArgs *args = test_args();
    struct { uint64_t outer, inner; const char *says; } cases[] = {
        { 1, HBG_MAX_TASKS + 1ull, "bind: the program submits 4194305 tasks" },
        { 1ull << 20, 1ull << 20, "bind: the program submits 1099511627776 tasks" },
        { (uint64_t)INT64_MAX, (uint64_t)INT64_MAX, "bind: the program's task count" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t *bytes = looped_noops(cases[i].outer, cases[i].inner);
        RuntimeCallable *c = reg(r, bytes);
        CHECK(c != NULL);
        if (c == NULL) {
            free(bytes);
            continue;
        }
        CHECK_EQ_INT(test_run(r, c, 0, args, &cfg, NULL), PTO_ERR_CAPACITY);
        CHECK_CONTAINS(pto_last_error(), cases[i].says);
        CHECK_CONTAINS(pto_last_error(), "an hbg run holds at most 4194304 tasks");
        CHECK_EQ_INT(test_slot_scratch(r, 0)->graph.task_count, 0);
        unreg(r, c);
        free(bytes);
    }
    /* what fits runs: 1000 tasks */
    uint8_t *bytes = looped_noops(10, 100);
    RuntimeCallable *c = reg(r, bytes);
    CHECK_EQ_INT(c->program_tasks, 1000);
    CHECK_EQ_INT(test_run(r, c, 0, args, &cfg, NULL), PTO_OK);
    CHECK_EQ_INT(test_slot_scratch(r, 0)->graph.task_count, 1000);
    unreg(r, c);
    free(bytes);
    free(args);
    runner_destroy(r);
}
