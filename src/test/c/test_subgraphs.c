/* Sub-graphs through the orchestration API on both runtimes (compiled into
 * native_tests for hbg and trb_tests_<arch> for trb, like test_scopes.c): the
 * values, one expected dependency graph for both, aliasing boundaries, and
 * every refusal with its message. The library is fixtures/fixture_subgraphs.c. */
#include <stdio.h>
#include <string.h>

#include "util/last_error.h"
#include "ptest.h"
#include "scope_run.h"

TEST(subgraph_layers_give_the_values_of_their_tasks)
{
    ScopeRun s;
    scope_open_fixture(&s, "subgraphs", "fx_subgraph_layers", 0, 0);
    CHECK_EQ_INT(scope_run(&s), PTO_OK);
    CHECK(tile_is(&s.y[0], s.x, 4.0f, 6.0f)); /* sum over l of x + l */
    for (int l = 1; l <= 3; l++)
        CHECK(tile_is(&s.y[l * TILE_FLOATS], s.x, 1.0f, 10.0f));
    scope_close(&s);
}

/* fx_subgraph_layers, invocation by invocation (e entry, x exit: "subgraph"):
 *   four layers chained through y0: e, vadds a -> t, tile_add t -> c, x;
 *   the tile_add waits for its vadds (t), each exit for its entry and its sink
 *   (the tile_add), each entry for the exit before it (y0);
 *   three layers on y1, y2, y3: nothing in common with the chain or each other
 *   (x0 is read only; the bytes their tensors share are ordered outside the graph) */
static const char LAYERS_GRAPH[] = "digraph ptorun_run {\n"
                                   "  t0 [label=\"0 subgraph\"];\n"
                                   "  t1 [label=\"1 f3\"];\n"
                                   "  t2 [label=\"2 f2\"];\n"
                                   "  t3 [label=\"3 subgraph\"];\n"
                                   "  t4 [label=\"4 subgraph\"];\n"
                                   "  t5 [label=\"5 f3\"];\n"
                                   "  t6 [label=\"6 f2\"];\n"
                                   "  t7 [label=\"7 subgraph\"];\n"
                                   "  t8 [label=\"8 subgraph\"];\n"
                                   "  t9 [label=\"9 f3\"];\n"
                                   "  t10 [label=\"10 f2\"];\n"
                                   "  t11 [label=\"11 subgraph\"];\n"
                                   "  t12 [label=\"12 subgraph\"];\n"
                                   "  t13 [label=\"13 f3\"];\n"
                                   "  t14 [label=\"14 f2\"];\n"
                                   "  t15 [label=\"15 subgraph\"];\n"
                                   "  t16 [label=\"16 subgraph\"];\n"
                                   "  t17 [label=\"17 f3\"];\n"
                                   "  t18 [label=\"18 f2\"];\n"
                                   "  t19 [label=\"19 subgraph\"];\n"
                                   "  t20 [label=\"20 subgraph\"];\n"
                                   "  t21 [label=\"21 f3\"];\n"
                                   "  t22 [label=\"22 f2\"];\n"
                                   "  t23 [label=\"23 subgraph\"];\n"
                                   "  t24 [label=\"24 subgraph\"];\n"
                                   "  t25 [label=\"25 f3\"];\n"
                                   "  t26 [label=\"26 f2\"];\n"
                                   "  t27 [label=\"27 subgraph\"];\n"
                                   "  t0 -> t1;\n"
                                   "  t1 -> t2;\n"
                                   "  t0 -> t3;\n"
                                   "  t2 -> t3;\n"
                                   "  t3 -> t4;\n"
                                   "  t4 -> t5;\n"
                                   "  t5 -> t6;\n"
                                   "  t4 -> t7;\n"
                                   "  t6 -> t7;\n"
                                   "  t7 -> t8;\n"
                                   "  t8 -> t9;\n"
                                   "  t9 -> t10;\n"
                                   "  t8 -> t11;\n"
                                   "  t10 -> t11;\n"
                                   "  t11 -> t12;\n"
                                   "  t12 -> t13;\n"
                                   "  t13 -> t14;\n"
                                   "  t12 -> t15;\n"
                                   "  t14 -> t15;\n"
                                   "  t16 -> t17;\n"
                                   "  t17 -> t18;\n"
                                   "  t16 -> t19;\n"
                                   "  t18 -> t19;\n"
                                   "  t20 -> t21;\n"
                                   "  t21 -> t22;\n"
                                   "  t20 -> t23;\n"
                                   "  t22 -> t23;\n"
                                   "  t24 -> t25;\n"
                                   "  t25 -> t26;\n"
                                   "  t24 -> t27;\n"
                                   "  t26 -> t27;\n"
                                   "}\n";

TEST(subgraph_layers_give_one_graph_on_both_runtimes)
{
    for (int tiny = 0; tiny < 2; tiny++) {
        ScopeRun s;
        scope_open_fixture(&s, "subgraphs", "fx_subgraph_layers", 0, 0);
        scope_graph(&s);
        if (tiny)
            tiny_rings(&s); /* trb: slots wrap while invocations are in flight */
        CHECK_EQ_INT(scope_run(&s), PTO_OK);
        check_graph(&s, LAYERS_GRAPH, __LINE__);
        CHECK(tile_is(&s.y[0], s.x, 4.0f, 6.0f));
        scope_close(&s);
    }
}

TEST(aliasing_boundaries_replay_when_they_alias_alike_and_are_refused_otherwise)
{
    ScopeRun s;
    scope_open_fixture(&s, "subgraphs", "fx_subgraph_alias", 0, 0);
    for (int i = 0; i < TILE_FLOATS; i++)
        s.y[5 * TILE_FLOATS + i] = (float)i;
    CHECK_EQ_INT(scope_run(&s), PTO_OK);
    for (int i = 0; i < TILE_FLOATS; i++) /* twice y = y + (y + 1) */
        CHECK(s.y[5 * TILE_FLOATS + i] == 4.0f * (float)i + 3.0f);
    scope_close(&s);

    scope_open_fixture(&s, "subgraphs", "fx_subgraph_alias", 0, 1);
    CHECK_EQ_INT(scope_run(&s), PTO_ERR_ORCHESTRATION);
    CHECK_CONTAINS(pto_last_error(), "subgraph_submit (key 2): boundary params 0 and 1 do not overlap; in its recording "
                                     "they overlap, the second starting 0 bytes after the first");
    scope_close(&s);
}

TEST(a_boundary_of_another_geometry_is_refused_naming_both)
{
    static const struct {
        int which;
        const char *message;
    } cases[] = {
        { 20, "subgraph_submit (key 1): boundary param 0 is an IN flat view of 128 bytes; in its recording it is an IN "
              "flat view of 64 bytes" },
        { 21, "subgraph_submit (key 1): boundary param 1 is an OUT flat view of 64 bytes; in its recording it is an "
              "INOUT flat view of 64 bytes" },
        { 22, "subgraph_submit (key 1): boundary param 0 is an IN view of dtype 0, shape [16], strides [1] (64 bytes); "
              "in its recording it is an IN flat view of 64 bytes" },
        { 23, "subgraph_submit (key 1): boundary params 0 and 1 overlap, the second starting 0 bytes after the first; "
              "in its recording they do not overlap" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ScopeRun s;
        scope_open_fixture(&s, "subgraphs", "fx_subgraph_refuse", 0, (uint64_t)cases[i].which);
        CHECK_EQ_INT(scope_run(&s), PTO_ERR_ORCHESTRATION);
        CHECK_CONTAINS(pto_last_error(), cases[i].message);
        CHECK_EQ_INT(s.report[0], PTO_ERR_ORCHESTRATION);
        scope_close(&s);
    }
}

TEST(bodies_breaking_the_rules_are_refused_precisely)
{
    static const struct {
        int which, code;
        const char *message;
    } cases[] = {
        { 1, PTO_ERR_ORCHESTRATION, "read_tensor is not available in a sub-graph body" },
        { 2, PTO_ERR_INVALID_ARGUMENT, "is a sub-graph body's; inside a body, call the api the body was given" },
        { 3, PTO_ERR_ORCHESTRATION, "subgraph_submit (key 3): the body left 1 scope(s) open" },
        { 4, PTO_ERR_ORCHESTRATION, "lies inside no boundary view and no tensor the body allocated" },
        { 5, PTO_ERR_ORCHESTRATION, "scope_begin_mode 1: a body opens AUTO scopes only" },
        { 6, PTO_ERR_ORCHESTRATION, "submit (func_id 1) param 1 writes boundary param 0, which is IN" },
        { 7, PTO_ERR_ORCHESTRATION, "subgraph_submit is not available in a sub-graph body" },
        { 8, PTO_OK, "subgraph_submit: func_id 99 is not a child of the callable" },
        { 10, PTO_ERR_ORCHESTRATION, "subgraph_submit (key 1): not inside a MANUAL scope" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ScopeRun s;
        scope_open_fixture(&s, "subgraphs", "fx_subgraph_refuse", 0, (uint64_t)cases[i].which);
        CHECK_EQ_INT(scope_run(&s), PTO_ERR_ORCHESTRATION); /* a library's failed run says so, whatever the call's code */
        CHECK_CONTAINS(pto_last_error(), cases[i].message);
        if (cases[i].which != 3)
            CHECK_EQ_INT(s.report[0], cases[i].code);
        scope_close(&s);
    }
}
