/* Scopes on both runtimes: MANUAL scopes and submit_after, the tensors a scope
 * frees, and what cannot fit. Compiled into native_tests (hbg, a2a3) and into
 * trb_tests_<arch>: the same cases, below the exported API, on the runtime of
 * the binary; every graph is checked against one expected text, so both
 * runtimes write the same dependency graph. The orchestration library is
 * fixtures/fixture_scopes.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch/arch.h"
#include "services/host_api.h"
#include "util/last_error.h"
#include "ptest.h"
#include "test_callable.h"
#include "test_sim.h"
#ifdef PTO_RUNTIME_TRB
#include "runtime/trb/trb_internal.h"
#else
#include "runtime/hbg/hbg_internal.h"
#endif

enum { XN = 64, YN = 128, JN = 64, TILE_FLOATS = 16 };

typedef struct ScopeRun {
    Runner *runner;
    RuntimeCallable *callable;
    float x[XN], y[YN], j[JN];
    int32_t report[2];
    ChipStorageTaskArgs *args;
    CallConfig cfg;
    char dir[64];
} ScopeRun;

static void scope_open(ScopeRun *s, const char *entry, uint64_t n, uint64_t which)
{
    memset(s, 0, sizeof *s);
    const DeviceImages *images = test_images_of(PTO_ARCH_NAME);
    s->runner = runner_create();
    if (images == NULL || s->runner == NULL || runner_init(s->runner, 0, images) != PTO_OK)
        fprintf(stderr, "scope_open: no sim runner: %s\n", pto_last_error());
    uint32_t image_size;
    const uint8_t *image = test_fixture("scopes", &image_size);
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_IN, PTO_ARG_INOUT, PTO_ARG_INOUT, PTO_ARG_SCALAR, PTO_ARG_SCALAR, PTO_ARG_SCALAR };
    tcb_signature(&b, sig, sizeof sig);
    tcb_child(&b, 1, PTO_CORE_AIV, "vcopy");
    tcb_child(&b, 2, PTO_CORE_AIV, "tile_add");
    tcb_child(&b, 3, PTO_CORE_AIV, "vadds");
    tcb_child(&b, 4, PTO_CORE_AIC, "noop");
    if (image != NULL)
        tcb_orchestration_library(&b, image, image_size, entry);
    uint32_t size;
    uint8_t *bytes = tcb_build(&b, &size);
    tcb_free(&b);
    HostApi api = host_api_bind(s->runner, 0, 0, &host_api_ops);
    if (runtime_register_callable(&api, bytes, &s->callable) != PTO_OK)
        fprintf(stderr, "register %s: %s\n", entry, pto_last_error());
    free(bytes);
    for (int i = 0; i < XN; i++)
        s->x[i] = (float)(i % 4);
    s->args = test_args();
    s->args->tensor_count = 3;
    s->args->tensors[0] = test_f32_tensor(s->x, XN);
    s->args->tensors[1] = test_f32_tensor(s->y, YN);
    s->args->tensors[2] = test_f32_tensor(s->j, JN);
    s->args->scalar_count = 3;
    s->args->scalars[0] = n;
    s->args->scalars[1] = which;
    s->args->scalars[2] = (uint64_t)(uintptr_t)s->report;
    s->report[0] = s->report[1] = 777;
    s->cfg = test_config(60000);
}

/* Collects the dependency graph of the next run into a fresh directory. */
static void scope_graph(ScopeRun *s)
{
    snprintf(s->dir, sizeof s->dir, "/tmp/ptorun_scopes_XXXXXX");
    CHECK(mkdtemp(s->dir) != NULL);
    s->cfg.enable_dep_graph = 1;
    snprintf(s->cfg.output_prefix, sizeof s->cfg.output_prefix, "%s", s->dir);
}

static void tiny_rings(ScopeRun *s)
{
    for (int r = 0; r < PTO_TRB_RING_COUNT; r++) {
        s->cfg.ring_task_window[r] = 4;
        s->cfg.ring_heap[r] = 1024;
        s->cfg.ring_dep_pool[r] = 4;
    }
}

static int scope_run(ScopeRun *s)
{
    NativeRunDescriptor desc = { .run_id = 7, .run_epoch = 8 };
    int rc = test_run_desc(s->runner, s->callable, 0, s->args, &s->cfg, &desc, NULL);
    if (rc != PTO_OK)
        fprintf(stderr, "scope run: %s\n", pto_last_error());
    return rc;
}

/* The run's graph file equals `expected` (then removed with its directory). */
static void check_graph(ScopeRun *s, const char *expected, int line)
{
    char path[128];
    snprintf(path, sizeof path, "%s/dep_graph_7_8.dot", s->dir);
    FILE *f = fopen(path, "rb");
    char text[8192] = "";
    if (f != NULL) {
        text[fread(text, 1, sizeof text - 1, f)] = '\0';
        fclose(f);
    }
    unlink(path);
    rmdir(s->dir);
    if (strcmp(text, expected) != 0) {
        fprintf(stderr, "graph:\n%s\nexpected:\n%s", text, expected);
        ptest_record_failure(__FILE__, line, "the dependency graph is not the expected one");
    }
}

static void scope_close(ScopeRun *s)
{
    HostApi api = host_api_bind(s->runner, 0, 0, &host_api_ops);
    if (s->callable != NULL)
        runtime_release_callable(&api, s->callable);
    runner_destroy(s->runner);
    free(s->args);
}

/* The local (hbg) / ring 1 (trb) heap high-water mark of slot 0's last run. */
static uint64_t heap_peak(ScopeRun *s)
{
#ifdef PTO_RUNTIME_TRB
    uint64_t peaks[PTO_TRB_RINGS] = { 0 };
    HostApi api = host_api_bind(s->runner, 0, 0, &host_api_ops);
    CHECK_EQ_INT(trb_read_heap_peaks(&api, peaks), PTO_OK);
    return peaks[1];
#else
    return test_slot_scratch(s->runner, 0)->local_peak;
#endif
}

static int tile_is(const float *t, const float *x, float times, float plus)
{
    for (int i = 0; i < TILE_FLOATS; i++)
        if (t[i] != times * x[i] + plus)
            return 0;
    return 1;
}

/* fx_scopes_manual, task by task (ordinals in the MANUAL scope in brackets):
 *   t0 vcopy x0 -> y0
 *   MANUAL: t1 [0] vadds y0 -> y1        submit: after t0, inferred (before the scope)
 *           t2 [1] vadds y1 -> y2        after {0}
 *           t3 [2] vadds y1 -> y3        after {0}
 *           t4 [3] tile_add y2 -> y3     after {1, 2}: fan-in
 *           t5, t6 noop -> j0            WAW, not inferred
 *           AUTO inside: t7 noop j0 -> j1, t8 noop j1 -> j2: still the MANUAL
 *           scope's tasks, nothing inferred between them
 *   t9 tile_add y3 -> y0: on t3 and t4 (both wrote y3, neither dropped the
 *      other), t0 (WAW) and t1 (WAR)
 *   t10 noop j0 -> j3: on t5 and t6
 *   twice: MANUAL { vadds y0 -> y4 (t11, t13); tile_add y4 -> y5 after {0} (t12, t14) }:
 *      t13 infers t9, t11, t12 from before its scope; t14 infers t11 (y4's
 *      writer before its scope) and t12 besides its declared t13
 *   t15 vcopy y5 -> y6: on t14 only (its write covered t12's when its scope ended) */
static const char MANUAL_GRAPH[] = "digraph ptorun_run {\n"
                                   "  t0 [label=\"0 f1\"];\n"
                                   "  t1 [label=\"1 f3\"];\n"
                                   "  t2 [label=\"2 f3\"];\n"
                                   "  t3 [label=\"3 f3\"];\n"
                                   "  t4 [label=\"4 f2\"];\n"
                                   "  t5 [label=\"5 f4\"];\n"
                                   "  t6 [label=\"6 f4\"];\n"
                                   "  t7 [label=\"7 f4\"];\n"
                                   "  t8 [label=\"8 f4\"];\n"
                                   "  t9 [label=\"9 f2\"];\n"
                                   "  t10 [label=\"10 f4\"];\n"
                                   "  t11 [label=\"11 f3\"];\n"
                                   "  t12 [label=\"12 f2\"];\n"
                                   "  t13 [label=\"13 f3\"];\n"
                                   "  t14 [label=\"14 f2\"];\n"
                                   "  t15 [label=\"15 f1\"];\n"
                                   "  t0 -> t1;\n"
                                   "  t1 -> t2;\n"
                                   "  t1 -> t3;\n"
                                   "  t2 -> t4;\n"
                                   "  t3 -> t4;\n"
                                   "  t0 -> t9;\n"
                                   "  t1 -> t9;\n"
                                   "  t3 -> t9;\n"
                                   "  t4 -> t9;\n"
                                   "  t5 -> t10;\n"
                                   "  t6 -> t10;\n"
                                   "  t9 -> t11;\n"
                                   "  t11 -> t12;\n"
                                   "  t9 -> t13;\n"
                                   "  t11 -> t13;\n"
                                   "  t12 -> t13;\n"
                                   "  t11 -> t14;\n"
                                   "  t12 -> t14;\n"
                                   "  t13 -> t14;\n"
                                   "  t14 -> t15;\n"
                                   "}\n";

TEST(manual_scopes_chains_fan_in_nesting_and_loops_give_the_expected_graph)
{
    for (int tiny = 0; tiny < 2; tiny++) {
        ScopeRun s;
        scope_open(&s, "fx_scopes_manual", 0, 0);
        scope_graph(&s);
        if (tiny)
            tiny_rings(&s); /* trb: producers finish and slots wrap while the scope is open */
        CHECK_EQ_INT(scope_run(&s), PTO_OK);
        check_graph(&s, MANUAL_GRAPH, __LINE__);
        CHECK(tile_is(&s.y[2 * TILE_FLOATS], s.x, 1.0f, 2.0f));
        CHECK(tile_is(&s.y[3 * TILE_FLOATS], s.x, 2.0f, 5.0f));
        CHECK(tile_is(&s.y[6 * TILE_FLOATS], s.x, 6.0f, 11.0f));
        scope_close(&s);
    }
}

/* Three iterations of scope { alloc; vadds x0 -> tmp; tile_add tmp -> y0 }:
   the scratch of one iteration is not the tensor of the next, on either
   runtime (hbg orders the reuse of its bytes outside the graph). */
static const char LOOP_GRAPH[] = "digraph ptorun_run {\n"
                                 "  t0 [label=\"0 f3\"];\n"
                                 "  t1 [label=\"1 f2\"];\n"
                                 "  t2 [label=\"2 f3\"];\n"
                                 "  t3 [label=\"3 f2\"];\n"
                                 "  t4 [label=\"4 f3\"];\n"
                                 "  t5 [label=\"5 f2\"];\n"
                                 "  t0 -> t1;\n"
                                 "  t1 -> t3;\n"
                                 "  t2 -> t3;\n"
                                 "  t3 -> t5;\n"
                                 "  t4 -> t5;\n"
                                 "}\n";

TEST(a_scope_loop_with_scratch_gives_the_same_graph_on_both_runtimes)
{
    ScopeRun s;
    scope_open(&s, "fx_scopes_loop", 3, 1024);
    scope_graph(&s);
    tiny_rings(&s);
    CHECK_EQ_INT(scope_run(&s), PTO_OK);
    check_graph(&s, LOOP_GRAPH, __LINE__);
    CHECK(tile_is(s.y, s.x, 3.0f, 3.0f)); /* 0 + 1 + 2 */
    CHECK_EQ_INT(heap_peak(&s), 1024);
    scope_close(&s);
}

/* y0 = n x0 + the sum over i < n of (i % 8). */
static float loop_sum(uint64_t n)
{
    return (float)(n / 8 * 28 + (n % 8) * (n % 8 - 1) / 2);
}

#ifndef PTO_RUNTIME_TRB
/* hbg frees a scope's scratch at scope_end: a loop reuses one iteration's
   bytes, and each iteration's writer of the scratch is ordered after the
   previous iteration's reader and writer of those bytes (reuse edges in the
   device image, none in the dependency graph). */
TEST(hbg_a_100_iteration_scope_loop_reuses_one_iterations_scratch_in_order)
{
    ScopeRun s;
    scope_open(&s, "fx_scopes_loop", 100, 64);
    CHECK_EQ_INT(scope_run(&s), PTO_OK);
    CHECK(tile_is(s.y, s.x, 100.0f, loop_sum(100)));
    CHECK_EQ_INT(heap_peak(&s), 64);
    const HbgGraph *g = &test_slot_scratch(s.runner, 0)->graph;
    int war = 0, waw = 0, reuse = 0;
    for (uint32_t e = 0; e < g->edge_count; e++) {
        uint32_t p = g->edges[2 * e], c = g->edges[2 * e + 1];
        if (!(p & HBG_EDGE_REUSE))
            continue;
        reuse++;
        p &= ~HBG_EDGE_REUSE;
        war += c % 2 == 0 && p == c - 1; /* vadds after the previous tile_add */
        waw += c % 2 == 0 && p == c - 2; /* vadds after the previous vadds */
    }
    CHECK_EQ_INT(war, 99);
    CHECK_EQ_INT(waw, 99);
    CHECK_EQ_INT(reuse, 198);
    scope_close(&s);
}
#endif

/* 10 000 iterations of a scope with scratch: hbg's local heap and trb's ring
   heap hold one iteration's at most (trb's ring 1 heap is one iteration's:
   each allocation waits for the previous scope's release). */
TEST(a_10000_iteration_scope_loop_needs_one_iterations_heap)
{
    ScopeRun s;
    scope_open(&s, "fx_scopes_loop", 10000, 1024);
    s.cfg.ring_heap[1] = 1024;
    CHECK_EQ_INT(scope_run(&s), PTO_OK);
    CHECK(tile_is(s.y, s.x, 10000.0f, loop_sum(10000)));
    CHECK_EQ_INT(heap_peak(&s), 1024);
    scope_close(&s);
}

/* A MANUAL chain of 1000 tasks through task windows of 4 and dependency pools of 4. */
TEST(a_long_manual_chain_streams_through_tiny_rings)
{
    ScopeRun s;
    scope_open(&s, "fx_scopes_chain", 1000, 0);
    tiny_rings(&s);
    CHECK_EQ_INT(scope_run(&s), PTO_OK);
    CHECK(tile_is(s.y, s.x, 1000.0f, 0.0f));
    scope_close(&s);
}

/* A task after 8 predecessors: trb's dependency pool of 4 can never hold them. */
TEST(a_fan_in_beyond_the_dependency_pool_is_refused_on_trb)
{
    ScopeRun s;
    scope_open(&s, "fx_scopes_chain", 8, 1);
    tiny_rings(&s);
#ifdef PTO_RUNTIME_TRB
    CHECK_EQ_INT(scope_run(&s), PTO_ERR_ORCHESTRATION); /* the library returned the call's PTO_ERR_CAPACITY */
    CHECK_CONTAINS(pto_last_error(), "returned -13: submit_after (func_id 4): the task has more than 4 producers; ring 1's "
                                     "dependency pool holds 4");
#else
    CHECK_EQ_INT(scope_run(&s), PTO_OK); /* hbg's graph has no pool */
    CHECK(tile_is(s.y, s.x, 8.0f, 0.0f));
#endif
    scope_close(&s);
}

/* Two allocations of 3/4 of the heap in one scope: never both at once. */
TEST(a_scope_keeping_more_than_its_heap_is_refused)
{
    ScopeRun s;
    scope_open(&s, "fx_scopes_refuse", 768 << 10, 10);
#ifdef PTO_RUNTIME_TRB
    CHECK_EQ_INT(scope_run(&s), PTO_ERR_CAPACITY);
    CHECK_CONTAINS(pto_last_error(), "cannot fit ring 1's heap of 1048576 bytes beside the 786432 bytes its scope keeps");
    CHECK_EQ_INT(s.report[1], PTO_ERR_CAPACITY);
#else
    CHECK_EQ_INT(scope_run(&s), PTO_ERR_OUT_OF_MEMORY);
    CHECK_CONTAINS(pto_last_error(), "786432 bytes do not fit the run's 1048576-byte local heap (786432 in use");
    CHECK_EQ_INT(s.report[1], PTO_ERR_OUT_OF_MEMORY);
#endif
    scope_close(&s);
}

TEST(misused_scopes_and_submit_after_are_refused_and_sticky)
{
    static const struct {
        int which, code;
        const char *message;
    } cases[] = {
        { 1, PTO_ERR_ORCHESTRATION, "submit_after: no scope is open (it needs a MANUAL scope)" },
        { 2, PTO_ERR_ORCHESTRATION, "submit_after: the innermost scope is AUTO, not MANUAL" },
        { 3, PTO_ERR_INVALID_ARGUMENT, "scope_begin_mode: mode 5 is neither PTO_SCOPE_AUTO (0) nor PTO_SCOPE_MANUAL (1)" },
        { 4, PTO_ERR_INVALID_ARGUMENT, "submit_after: after[1] = 2 is not an earlier submit of this scope (it has 2)" },
        { 5, PTO_ERR_INVALID_ARGUMENT, "submit_after: after[1] = 0 is listed twice" },
        { 6, PTO_ERR_INVALID_ARGUMENT, "submit_after: n_after 2 exceeds the 1 earlier submits of this scope" },
        { 7, PTO_ERR_INVALID_ARGUMENT, "submit_after: NULL after with n_after 1" },
        { 8, PTO_ERR_ORCHESTRATION, "submit_after: the innermost scope is AUTO, not MANUAL" },
        { 9, PTO_ERR_INVALID_ARGUMENT, "submit_after: n_after 1 exceeds the 0 earlier submits of this scope" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ScopeRun s;
        scope_open(&s, "fx_scopes_refuse", 0, (uint64_t)cases[i].which);
        CHECK_EQ_INT(scope_run(&s), cases[i].code);
        CHECK_CONTAINS(pto_last_error(), cases[i].message);
        CHECK_CONTAINS(pto_last_error(), "returned 0 after a failed call");
        CHECK_EQ_INT(s.report[0], cases[i].code);
        CHECK_EQ_INT(s.report[1], cases[i].code); /* sticky: the plain submit after it is refused */
        scope_close(&s);
    }
}
