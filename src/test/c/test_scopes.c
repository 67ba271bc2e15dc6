/* Scopes on both runtimes: MANUAL scopes and submit_after, the tensors a scope
 * frees, and what cannot fit. Compiled into native_tests (hbg, a2a3) and into
 * trb_tests_<arch>: the same cases, below the exported API, on the runtime of
 * the binary; every graph is checked against one expected text, so both
 * runtimes write the same dependency graph. The orchestration library is
 * fixtures/fixture_scopes.c. */
#include <stdio.h>
#include <string.h>

#include "util/last_error.h"
#include "ptest.h"
#include "scope_run.h"
#include "test_sim.h"
#ifdef PTO_RUNTIME_TRB
#include "runtime/trb/trb_internal.h"
#else
#include "runtime/hbg/hbg_internal.h"
#endif

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
        scope_open_fixture(&s, "scopes", "fx_scopes_manual", 0, 0);
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
    scope_open_fixture(&s, "scopes", "fx_scopes_loop", 3, 1024);
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
    scope_open_fixture(&s, "scopes", "fx_scopes_loop", 100, 64);
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
    scope_open_fixture(&s, "scopes", "fx_scopes_loop", 10000, 1024);
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
    scope_open_fixture(&s, "scopes", "fx_scopes_chain", 1000, 0);
    tiny_rings(&s);
    CHECK_EQ_INT(scope_run(&s), PTO_OK);
    CHECK(tile_is(s.y, s.x, 1000.0f, 0.0f));
    scope_close(&s);
}

/* A task after 8 predecessors: trb's dependency pool of 4 can never hold them. */
TEST(a_fan_in_beyond_the_dependency_pool_is_refused_on_trb)
{
    ScopeRun s;
    scope_open_fixture(&s, "scopes", "fx_scopes_chain", 8, 1);
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
    scope_open_fixture(&s, "scopes", "fx_scopes_refuse", 768 << 10, 10);
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
        scope_open_fixture(&s, "scopes", "fx_scopes_refuse", 0, (uint64_t)cases[i].which);
        CHECK_EQ_INT(scope_run(&s), cases[i].code);
        CHECK_CONTAINS(pto_last_error(), cases[i].message);
        CHECK_CONTAINS(pto_last_error(), "returned 0 after a failed call");
        CHECK_EQ_INT(s.report[0], cases[i].code);
        CHECK_EQ_INT(s.report[1], cases[i].code); /* sticky: the plain submit after it is refused */
        scope_close(&s);
    }
}
