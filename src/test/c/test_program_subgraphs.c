/* Sub-graphs in programs (chip_callable.h, SUBGRAPH / INVOKE): the decoder's
 * checks, the static walks (task count, local peak) and the interpreter's
 * INVOKE through a recording PtoOrchApi whose subgraph_submit calls the body
 * at the first submission of a key, as the sub-graph layer does. */
#include <stdlib.h>
#include <string.h>

#include "format/chip_callable.h"
#include "orch/program_orchestration.h"
#include "util/last_error.h"
#include "ptest.h"
#include "test_program_recorder.h"
#include "test_sim.h"

/* The boundary of sub-graph 0: IN a, INOUT b, SCALAR k. */
static const uint8_t BOUNDARY[3] = { PTO_ARG_IN, PTO_ARG_INOUT, PTO_ARG_SCALAR };

/* Sub-graph 0's body: local 0 of 100 bytes; vadd(a[0, 64), k) -> local; vcopy local -> b[0, 64). */
static void layer_body(TestCallableBuilder *body)
{
    tcb_init(body);
    body->local_count = 1;
    tcb_alloc(body, 0, 100);
    PtoProgramParam add[] = { tcb_tensor(0, PTO_ARG_IN, 0, 64), local_view(0, PTO_ARG_OUT, 0, 64), tcb_scalar_arg(0) };
    tcb_submit(body, 1, add, 3);
    PtoProgramParam copy[] = { local_view(0, PTO_ARG_IN, 0, 64), tcb_tensor(1, PTO_ARG_INOUT, 0, 64) };
    tcb_submit(body, 2, copy, 2);
}

static void define_layer(TestCallableBuilder *b)
{
    TestCallableBuilder body;
    layer_body(&body);
    tcb_subgraph(b, 0, BOUNDARY, 3, &body);
    tcb_free(&body);
}

/* x[64 i, +64), y[0, 64), s */
static void invoke_layer(TestCallableBuilder *b)
{
    PtoAffine off = { .coef = { 64 } }, size = { .base = 64 };
    PtoProgramParam p[] = { affine_tensor(0, PTO_ARG_IN, off, size), tcb_tensor(1, PTO_ARG_INOUT, 0, 64),
                            tcb_scalar_arg(0) };
    tcb_invoke(b, 0, p, 3);
}

/* ALLOC local 0 (64 bytes); SUBGRAPH 0; LOOP 3 { INVOKE 0 } */
static void layers(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_alloc(b, 0, 64);
    define_layer(b);
    tcb_loop(b, 3);
    invoke_layer(b);
    tcb_insn(b, PTO_OP_END_LOOP);
}

static int decode(TestCallableBuilder *b, ChipCallableView *v, uint8_t **bytes, char *msg)
{
    uint32_t size;
    *bytes = tcb_build(b, &size);
    return chip_callable_decode(*bytes, v, msg, CHIP_CALLABLE_MESSAGE_BYTES);
}

/* ---- the decoder and the walks ------------------------------------------------------- */

TEST(subgraph_program_decodes_and_walks)
{
    TestCallableBuilder b;
    program_start(&b);
    layers(&b);
    ChipCallableView v;
    uint8_t *c;
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    int rc = decode(&b, &v, &c, msg);
    if (rc != PTO_OK)
        fprintf(stderr, "decode: %s\n", msg);
    REQUIRE(rc == PTO_OK);
    CHECK_EQ_INT(v.submit_count, 2); /* the body's */
    CHECK((v.opcodes_used & (1u << PTO_OP_SUBGRAPH)) != 0);
    CHECK((v.opcodes_used & (1u << PTO_OP_INVOKE)) != 0);
    CHECK((v.opcodes_used & (1u << PTO_OP_SUBMIT)) != 0); /* from the body */
    /* 3 invocations x (2 body tasks + entry + exit) */
    CHECK_EQ_INT(chip_program_task_count(&v), 12);
    /* 64 of its own + the block: the body's 100 bytes at 64-byte alignment = 128 */
    CHECK_EQ_INT(chip_program_local_peak(&v, 64), 64 + 128);
    /* the block is rounded to the caller's alignment too */
    CHECK_EQ_INT(chip_program_local_peak(&v, 256), 256 + 256);

    /* the walk hands out the SUBGRAPH and the body as a view of its own */
    PtoProgramCursor cur = { 0, 0 };
    PtoProgramInsn in;
    int seen = 0;
    while (chip_program_next(&v, &cur, &in)) {
        if (in.head.opcode == PTO_OP_SUBGRAPH) {
            ChipCallableView body;
            chip_program_subgraph_body(&v, &in, &body);
            CHECK_EQ_INT(body.tensor_count, 2);
            CHECK_EQ_INT(body.scalar_count, 1);
            CHECK_EQ_INT(body.program_header.instruction_count, 3);
            CHECK_EQ_INT(chip_program_task_count(&body), 2);
            CHECK_EQ_INT(chip_program_local_peak(&body, 64), 128);
            seen++;
        } else if (in.head.opcode == PTO_OP_INVOKE) {
            PtoProgramParam p;
            chip_program_param(&v, &in, 2, &p);
            CHECK_EQ_INT(p.kind, PTO_PARAM_SCALAR_ARG);
            seen++;
        }
    }
    CHECK_EQ_INT(seen, 2);
    free(c);
    tcb_free(&b);
}

TEST(subgraph_walks_count_nothing_for_a_body_without_locals_and_zero_for_a_dead_loop)
{
    TestCallableBuilder b, body;
    program_start(&b);
    tcb_init(&body);
    PtoProgramParam copy[] = { tcb_tensor(0, PTO_ARG_IN, 0, 64), tcb_tensor(1, PTO_ARG_INOUT, 0, 64) };
    tcb_submit(&body, 2, copy, 2);
    tcb_subgraph(&b, 5, BOUNDARY, 3, &body);
    tcb_free(&body);
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, 0, 64), tcb_tensor(1, PTO_ARG_INOUT, 0, 64), tcb_imm(7) };
    tcb_invoke(&b, 5, p, 3);   /* 1 + 2 */
    tcb_loop(&b, 0);
    tcb_invoke(&b, 5, p, 3);   /* never runs */
    tcb_insn(&b, PTO_OP_END_LOOP);
    ChipCallableView v;
    uint8_t *c;
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    REQUIRE(decode(&b, &v, &c, msg) == PTO_OK);
    CHECK_EQ_INT(chip_program_task_count(&v), 3);
    CHECK_EQ_INT(chip_program_local_peak(&v, 64), 0);
    free(c);
    tcb_free(&b);
}

/* A body whose only tensor is empty: the sub-graph layer still allocates a block
   (orch/subgraph.h), so the walk holds one alignment unit for it. */
TEST(subgraph_walk_holds_a_block_for_a_body_allocating_only_empty_tensors)
{
    TestCallableBuilder b, body;
    program_start(&b);
    tcb_init(&body);
    body.local_count = 1;
    tcb_alloc(&body, 0, 0);
    PtoProgramParam touch[] = { tcb_tensor(0, PTO_ARG_IN, 0, 64), tcb_local(0, PTO_ARG_OUT, 0, 0) };
    tcb_submit(&body, 2, touch, 2);
    tcb_subgraph(&b, 5, BOUNDARY, 3, &body);
    tcb_free(&body);
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, 0, 64), tcb_tensor(1, PTO_ARG_INOUT, 0, 64), tcb_imm(7) };
    tcb_invoke(&b, 5, p, 3);
    ChipCallableView v;
    uint8_t *c;
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    REQUIRE(decode(&b, &v, &c, msg) == PTO_OK);
    CHECK_EQ_INT(chip_program_local_peak(&v, 64), 64);
    free(c);
    tcb_free(&b);
}

/* The refusals: each case builds on program_start (IN x, INOUT y, OUT z, SCALAR s). */
static void subgraph_in_loop(TestCallableBuilder *b)
{
    tcb_loop(b, 2);
    define_layer(b);
    tcb_insn(b, PTO_OP_END_LOOP);
}

static void subgraph_in_scope(TestCallableBuilder *b)
{
    tcb_insn(b, PTO_OP_SCOPE_BEGIN);
    define_layer(b);
    tcb_insn(b, PTO_OP_SCOPE_END);
}

static void subgraph_twice(TestCallableBuilder *b)
{
    define_layer(b);
    define_layer(b);
}

static void invoke_undefined(TestCallableBuilder *b)
{
    invoke_layer(b);
    define_layer(b);
}

static void invoke_too_few(TestCallableBuilder *b)
{
    define_layer(b);
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, 0, 64), tcb_tensor(1, PTO_ARG_INOUT, 0, 64) };
    tcb_invoke(b, 0, p, 2);
}

static void invoke_wrong_direction(TestCallableBuilder *b)
{
    define_layer(b);
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, 0, 64), tcb_tensor(1, PTO_ARG_IN, 0, 64), tcb_scalar_arg(0) };
    tcb_invoke(b, 0, p, 3);
}

static void invoke_in_manual(TestCallableBuilder *b)
{
    define_layer(b);
    tcb_insn(b, PTO_OP_SCOPE_BEGIN_MANUAL);
    tcb_insn(b, PTO_OP_SCOPE_BEGIN);
    invoke_layer(b);
    tcb_insn(b, PTO_OP_SCOPE_END);
    tcb_insn(b, PTO_OP_SCOPE_END);
}

static void invoke_negative_view(TestCallableBuilder *b)
{
    define_layer(b);
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, -8, 64), tcb_tensor(1, PTO_ARG_INOUT, 0, 64), tcb_imm(1) };
    tcb_invoke(b, 0, p, 3);
}

/* boundary {INOUT}: passing IN argument x there writes it */
static void invoke_writes_in_argument(TestCallableBuilder *b)
{
    TestCallableBuilder body;
    tcb_init(&body);
    PtoProgramParam copy[] = { tcb_tensor(0, PTO_ARG_IN, 0, 64), tcb_tensor(0, PTO_ARG_INOUT, 64, 64) };
    tcb_submit(&body, 2, copy, 2);
    const uint8_t dirs[1] = { PTO_ARG_INOUT };
    tcb_subgraph(b, 1, dirs, 1, &body);
    tcb_free(&body);
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_INOUT, 0, 128) };
    tcb_invoke(b, 1, p, 1);
}

/* a sub-graph whose body is `shape` */
static void body_of(TestCallableBuilder *b, void (*shape)(TestCallableBuilder *))
{
    TestCallableBuilder body;
    tcb_init(&body);
    shape(&body);
    tcb_subgraph(b, 0, BOUNDARY, 3, &body);
    tcb_free(&body);
}

static void with_predecessors(TestCallableBuilder *body)
{
    PtoProgramParam copy[] = { tcb_tensor(0, PTO_ARG_IN, 0, 64), tcb_tensor(1, PTO_ARG_INOUT, 0, 64) };
    tcb_submit(body, 2, copy, 2);
    PtoAffine after = { .base = 0 };
    tcb_submit_after(body, 2, copy, 2, &after, 1);
}

static void with_manual_scope(TestCallableBuilder *body)
{
    tcb_insn(body, PTO_OP_SCOPE_BEGIN_MANUAL);
    tcb_insn(body, PTO_OP_SCOPE_END);
}

static void with_invoke(TestCallableBuilder *body)
{
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, 0, 64), tcb_tensor(1, PTO_ARG_INOUT, 0, 64), tcb_imm(1) };
    tcb_invoke(body, 0, p, 3);
}

static void with_subgraph(TestCallableBuilder *body)
{
    define_layer(body);
}

static void writing_in_boundary(TestCallableBuilder *body)
{
    PtoProgramParam copy[] = { tcb_tensor(1, PTO_ARG_IN, 0, 64), tcb_tensor(0, PTO_ARG_OUT, 0, 64) };
    tcb_submit(body, 2, copy, 2);
}

static void past_the_boundary(TestCallableBuilder *body)
{
    PtoProgramParam copy[] = { tcb_tensor(0, PTO_ARG_IN, 0, 64), tcb_tensor(2, PTO_ARG_OUT, 0, 64) };
    tcb_submit(body, 2, copy, 2);
}

static void scalar_past_the_boundary(TestCallableBuilder *body)
{
    PtoProgramParam add[] = { tcb_tensor(0, PTO_ARG_IN, 0, 64), tcb_tensor(1, PTO_ARG_INOUT, 0, 64),
                              tcb_scalar_arg(1) };
    tcb_submit(body, 1, add, 3);
}

static void unknown_child(TestCallableBuilder *body)
{
    PtoProgramParam copy[] = { tcb_tensor(0, PTO_ARG_IN, 0, 64), tcb_tensor(1, PTO_ARG_INOUT, 0, 64) };
    tcb_submit(body, 9, copy, 2);
}

static void open_loop(TestCallableBuilder *body)
{
    tcb_loop(body, 2);
}

static void body_with_predecessors(TestCallableBuilder *b) { body_of(b, with_predecessors); }
static void body_with_manual_scope(TestCallableBuilder *b) { body_of(b, with_manual_scope); }
static void body_with_invoke(TestCallableBuilder *b) { body_of(b, with_invoke); }
static void body_with_subgraph(TestCallableBuilder *b) { body_of(b, with_subgraph); }
static void body_writing_in_boundary(TestCallableBuilder *b) { body_of(b, writing_in_boundary); }
static void body_past_the_boundary(TestCallableBuilder *b) { body_of(b, past_the_boundary); }
static void body_scalar_past_the_boundary(TestCallableBuilder *b) { body_of(b, scalar_past_the_boundary); }
static void body_unknown_child(TestCallableBuilder *b) { body_of(b, unknown_child); }
static void body_open_loop(TestCallableBuilder *b) { body_of(b, open_loop); }

static void tensor_after_scalar(TestCallableBuilder *b)
{
    TestCallableBuilder body;
    tcb_init(&body);
    const uint8_t dirs[2] = { PTO_ARG_SCALAR, PTO_ARG_IN };
    tcb_subgraph(b, 0, dirs, 2, &body);
    tcb_free(&body);
}

static void no_boundary(TestCallableBuilder *b)
{
    TestCallableBuilder body;
    tcb_init(&body);
    tcb_subgraph(b, 0, BOUNDARY, 0, &body);
    tcb_free(&body);
}

static void id_too_large(TestCallableBuilder *b)
{
    TestCallableBuilder body;
    tcb_init(&body);
    tcb_subgraph(b, PTO_PROGRAM_MAX_SUBGRAPHS, BOUNDARY, 3, &body);
    tcb_free(&body);
}

static void body_bad_magic(TestCallableBuilder *b)
{
    TestCallableBuilder body;
    tcb_init(&body);
    tcb_subgraph(b, 0, BOUNDARY, 3, &body);
    tcb_free(&body);
    /* the body's header sits after the 16-byte SUBGRAPH and its 8 bytes of directions */
    b->program[24] ^= 0xFF;
}

TEST(decoder_refuses_bad_subgraphs_and_invokes)
{
    struct { void (*shape)(TestCallableBuilder *); const char *message; } cases[] = {
        { subgraph_in_loop, "instruction 1 (SUBGRAPH 0) is inside the LOOP opened at instruction 0: a sub-graph is "
                            "defined at top level" },
        { subgraph_in_scope, "instruction 1 (SUBGRAPH 0) is inside the SCOPE_BEGIN opened at instruction 0" },
        { subgraph_twice, "instruction 1 (SUBGRAPH) defines sub-graph 0 a second time" },
        { invoke_undefined, "instruction 0 (INVOKE) invokes sub-graph 0, which no earlier SUBGRAPH defines" },
        { invoke_too_few, "instruction 1 (INVOKE 0) passes 2 params; the sub-graph's boundary has 3" },
        { invoke_wrong_direction, "instruction 1 (INVOKE 0) param 1 is IN; the sub-graph's boundary parameter 1 is INOUT" },
        { invoke_in_manual, "instruction 3 (INVOKE 0) is inside the MANUAL scope opened at instruction 1: a sub-graph "
                            "is not invoked inside a MANUAL scope" },
        { invoke_negative_view, "instruction 1 param 0: the view offset reaches -8" },
        { invoke_writes_in_argument, "instruction 1 param 0 (INOUT) writes argument tensor 0, which the signature "
                                     "declares IN" },
        { body_with_predecessors, "instruction 0 (SUBGRAPH 0) body: instruction 1 (SUBMIT) names 1 predecessors: a "
                                  "sub-graph body's dependencies are all inferred" },
        { body_with_manual_scope, "instruction 0 (SUBGRAPH 0) body: instruction 0 (SCOPE_BEGIN_MANUAL): a sub-graph "
                                  "body has no MANUAL scope" },
        { body_with_invoke, "instruction 0 (SUBGRAPH 0) body: instruction 0 (INVOKE 0): a sub-graph body cannot "
                            "invoke a sub-graph" },
        { body_with_subgraph, "instruction 0 (SUBGRAPH 0) body: instruction 0 (SUBGRAPH 0): a sub-graph body cannot "
                              "define a sub-graph" },
        { body_writing_in_boundary, "instruction 0 (SUBGRAPH 0) body: instruction 0 param 1 (OUT) writes boundary "
                                    "tensor 0, which the sub-graph's boundary declares IN" },
        { body_past_the_boundary, "body: instruction 0 param 1 names boundary tensor 2 but the boundary has 2 "
                                  "tensor(s)" },
        { body_scalar_past_the_boundary, "body: instruction 0 param 2 names boundary scalar 1 but the boundary has 1 "
                                         "scalar(s)" },
        { body_unknown_child, "body: instruction 0 submits func_id 9, which is not a child of the callable" },
        { body_open_loop, "body: unbalanced program: the LOOP at instruction 0 is never closed" },
        { body_bad_magic, "instruction 0 (SUBGRAPH 0) body: program has bad magic" },
        { tensor_after_scalar, "instruction 0 (SUBGRAPH 0) boundary parameter 1 is a tensor after a scalar" },
        { no_boundary, "instruction 0 (SUBGRAPH 0) has 0 boundary parameters; a sub-graph has 1..31" },
        { id_too_large, "instruction 0 (SUBGRAPH) defines sub-graph 64; ids are below 64" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TestCallableBuilder b;
        program_start(&b);
        cases[i].shape(&b);
        ChipCallableView v;
        uint8_t *c;
        char msg[CHIP_CALLABLE_MESSAGE_BYTES] = "";
        int rc = decode(&b, &v, &c, msg);
        if (rc != PTO_ERR_BAD_CALLABLE || strstr(msg, cases[i].message) == NULL)
            fprintf(stderr, "case %zu: rc %d: %s\n", i, rc, msg);
        CHECK_EQ_INT(rc, PTO_ERR_BAD_CALLABLE);
        CHECK_CONTAINS(msg, cases[i].message);
        free(c);
        tcb_free(&b);
    }
}

/* ---- the interpreter ------------------------------------------------------------------ */

#define SG_MAX_INVOCATIONS 16

typedef struct SgInvocation {
    uint32_t key, n;
    PtoTaskParam boundary[PTO_MAX_TASK_PARAMS];
    uint32_t origins[PTO_MAX_TASK_PARAMS];
    int recorded;                 /* the body ran for it */
} SgInvocation;

/* The base recorder (its api's orch is this), plus the invocations. */
typedef struct SgRecorder {
    Recorder base;                /* first: rec_api's functions take the SgRecorder as a Recorder */
    uint32_t *origins;            /* what the interpreter writes the params' origins to */
    SgInvocation inv[SG_MAX_INVOCATIONS];
    uint32_t inv_count;
    uint64_t recorded_keys;       /* bit k: key k recorded */
} SgRecorder;

static PtoOrchApi sg_api;

/* As the sub-graph layer: the first submission of a key calls the body. */
static int sg_submit(void *orch, uint32_t key, PtoSubgraphBody body, void *ctx, const PtoTaskParam *boundary,
                     uint32_t n)
{
    SgRecorder *r = orch;
    if (r->inv_count == SG_MAX_INVOCATIONS)
        return pto_fail(PTO_ERR_CAPACITY, "sg recorder: full");
    SgInvocation *inv = &r->inv[r->inv_count++];
    inv->key = key;
    inv->n = n;
    memcpy(inv->boundary, boundary, n * sizeof *boundary);
    if (r->origins != NULL)
        memcpy(inv->origins, r->origins, n * sizeof *inv->origins);
    if (key < 64 && (r->recorded_keys & (1ull << key)) == 0) {
        r->recorded_keys |= 1ull << key;
        inv->recorded = 1;
        return body(&sg_api, orch, ctx, boundary, n);
    }
    return PTO_OK;
}

static void sg_init(SgRecorder *r)
{
    memset(r, 0, sizeof *r);
    rec_init(&r->base);
    sg_api = rec_api;
    sg_api.subgraph_submit = sg_submit;
}

static int sg_run(TestCallableBuilder *b, SgRecorder *r, const PtoOrchApi *api, const ChipStorageTaskArgs *args,
                  uint32_t *origins)
{
    uint32_t size;
    uint8_t *callable = tcb_build(b, &size);
    ChipCallableHeader *h = tcb_header(callable);
    r->origins = origins;
    pto_clear_error();
    int rc = pto_program_orchestrate_origins(api, r, args, callable + h->orchestration.offset, h->orchestration.size,
                                             callable + h->signature.offset, h->signature_length, origins);
    free(callable);
    return rc;
}

TEST(interpreter_invokes_a_subgraph_and_its_body_marks_the_boundary)
{
    TestCallableBuilder b;
    program_start(&b);
    layers(&b);
    ChipStorageTaskArgs *args = make_args(256, 64, 64, 0x5eed);
    SgRecorder r;
    sg_init(&r);
    uint32_t origins[PTO_MAX_TASK_PARAMS];
    int rc = sg_run(&b, &r, &sg_api, args, origins);
    if (rc != PTO_OK)
        fprintf(stderr, "run: %s\n", pto_last_error());
    REQUIRE(rc == PTO_OK);

    /* every iteration invoked it: an INVOKE is submitted work for the loop rule */
    REQUIRE(r.inv_count == 3);
    for (uint32_t i = 0; i < 3; i++) {
        const SgInvocation *inv = &r.inv[i];
        CHECK_EQ_INT(inv->key, 0);
        CHECK_EQ_INT(inv->n, 3);
        CHECK_EQ_INT(inv->recorded, i == 0);
        CHECK_EQ_INT(inv->boundary[0].direction, PTO_ARG_IN);
        CHECK(inv->boundary[0].value == X_ADDR + 64 * i);
        CHECK_EQ_INT(inv->boundary[0].bytes, 64);
        CHECK_EQ_INT(inv->boundary[0].reserved, 0);
        CHECK_EQ_INT(inv->boundary[1].direction, PTO_ARG_INOUT);
        CHECK(inv->boundary[1].value == Y_ADDR);
        CHECK_EQ_INT(inv->boundary[2].direction, PTO_ARG_SCALAR);
        CHECK_EQ_INT(inv->boundary[2].value, 0x5eed);
        /* the INVOKE's params' origins, written before the call as for a SUBMIT */
        CHECK_EQ_INT(inv->origins[0], PTO_PARAM_ORIGIN_TENSOR(0));
        CHECK_EQ_INT(inv->origins[1], PTO_PARAM_ORIGIN_TENSOR(1));
        CHECK_EQ_INT(inv->origins[2], PTO_PARAM_ORIGIN_SCALAR(0));
    }

    /* the body ran once, at the first invocation: its local, then its two tasks */
    CHECK_EQ_INT(r.base.task_count, 2);
    CHECK_EQ_INT(r.base.alloc_count, 2); /* the program's local 0, then the body's */
    CHECK_EQ_INT(r.base.alloc_bytes[1], 100);
    const RecTask *add = &r.base.tasks[0], *copy = &r.base.tasks[1];
    CHECK_EQ_INT(add->func_id, 1);
    CHECK(add->params[0].value == X_ADDR);          /* boundary tensor 0 of the first invocation */
    CHECK_EQ_INT(add->params[0].bytes, 64);
    CHECK_EQ_INT(add->params[0].reserved, PTO_SUBGRAPH_REF(0));
    CHECK_EQ_INT(add->params[1].reserved, 0);         /* a local of the body: no boundary parameter */
    CHECK_EQ_INT(add->params[2].value, 0x5eed);       /* boundary scalar 0 = boundary parameter 2 */
    CHECK_EQ_INT(add->params[2].reserved, PTO_SUBGRAPH_REF(2));
    CHECK_EQ_INT(copy->func_id, 2);
    CHECK(copy->params[0].value == add->params[1].value);
    CHECK_EQ_INT(copy->params[0].reserved, 0);
    CHECK(copy->params[1].value == Y_ADDR);
    CHECK_EQ_INT(copy->params[1].reserved, PTO_SUBGRAPH_REF(1));
    free(args);
    rec_free(&r.base);
    tcb_free(&b);
}

TEST(interpreter_refuses_an_invoke_without_subgraph_submit)
{
    TestCallableBuilder b;
    program_start(&b);
    layers(&b);
    ChipStorageTaskArgs *args = make_args(256, 64, 64, 1);
    SgRecorder r;
    sg_init(&r);
    int rc = sg_run(&b, &r, &rec_api, args, NULL);
    CHECK_EQ_INT(rc, PTO_ERR_ORCHESTRATION);
    CHECK_CONTAINS(pto_last_error(),
                   "program instruction 3 (INVOKE sub-graph 0): the orchestration API has no subgraph_submit");
    CHECK_EQ_INT(r.base.task_count, 0);
    free(args);
    rec_free(&r.base);
    tcb_free(&b);
}

TEST(interpreter_checks_invoke_params_like_submit_params)
{
    TestCallableBuilder b;
    program_start(&b);
    layers(&b);
    /* x holds two of the three 64-byte rows the loop views */
    ChipStorageTaskArgs *args = make_args(128, 64, 64, 1);
    SgRecorder r;
    sg_init(&r);
    int rc = sg_run(&b, &r, &sg_api, args, NULL);
    CHECK_EQ_INT(rc, PTO_ERR_BAD_CALLABLE);
    CHECK_CONTAINS(pto_last_error(), "program instruction 3 (INVOKE sub-graph 0) param 0: view [128, 128 + 64) lies "
                                     "outside argument tensor 0 of 128 bytes");
    CHECK_EQ_INT(r.inv_count, 2);
    free(args);
    rec_free(&r.base);
    tcb_free(&b);
}

/* the body views 64 bytes of a 32-byte boundary view */
static void small_boundary(TestCallableBuilder *b)
{
    define_layer(b);
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, 0, 32), tcb_tensor(1, PTO_ARG_INOUT, 0, 64), tcb_imm(3) };
    tcb_invoke(b, 0, p, 3);
}

TEST(interpreter_names_the_subgraph_when_its_body_is_refused)
{
    TestCallableBuilder b;
    program_start(&b);
    small_boundary(&b);
    ChipStorageTaskArgs *args = make_args(256, 64, 64, 1);
    SgRecorder r;
    sg_init(&r);
    int rc = sg_run(&b, &r, &sg_api, args, NULL);
    CHECK_EQ_INT(rc, PTO_ERR_BAD_CALLABLE);
    CHECK_CONTAINS(pto_last_error(), "program instruction 0 (SUBGRAPH 0) body: program instruction 1 (SUBMIT "
                                     "func_id 1) param 0: view [0, 0 + 64) lies outside boundary tensor 0 of 32 "
                                     "bytes");
    free(args);
    rec_free(&r.base);
    tcb_free(&b);
}

TEST(interpreter_refuses_an_invoke_inside_a_manual_scope)
{
    TestCallableBuilder b;
    program_start(&b);
    invoke_in_manual(&b);
    ChipStorageTaskArgs *args = make_args(256, 64, 64, 1);
    SgRecorder r;
    sg_init(&r);
    int rc = sg_run(&b, &r, &sg_api, args, NULL); /* not decoded: the interpreter refuses it itself */
    CHECK_EQ_INT(rc, PTO_ERR_BAD_CALLABLE);
    CHECK_CONTAINS(pto_last_error(), "program instruction 3 (INVOKE sub-graph 0) is inside a MANUAL scope");
    CHECK_EQ_INT(r.inv_count, 0);
    free(args);
    rec_free(&r.base);
    tcb_free(&b);
}
