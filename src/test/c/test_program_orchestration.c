/* The program interpreter (orch/program_orchestration.c) against a recording
 * PtoOrchApi: what it submits for loops, affine views and scalars, locals and
 * scopes, and every run-time refusal (format 2's views and MANUAL scopes:
 * test_program_views.c). */
#include <stdlib.h>
#include <string.h>

#include "format/chip_callable.h"
#include "util/last_error.h"
#include "orch/program_orchestration.h"
#include "ptest.h"
#include "test_callable.h"
#include "test_program_recorder.h"
#include "test_sim.h"

/* ---- what it submits -------------------------------------------------------------- */

TEST(program_straight_line_submits_resolve_views_and_scalars)
{
    TestCallableBuilder b;
    program_start(&b);
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, 8, 16), tcb_tensor(1, PTO_ARG_INOUT, 0, 64),
                            tcb_tensor(2, PTO_ARG_OUT, 60, 4), tcb_imm(0xdeadbeefcafeull), tcb_scalar_arg(0) };
    tcb_submit(&b, 1, p, 5);
    Recorder r;
    rec_init(&r);
    ChipStorageTaskArgs *args = make_args(64, 64, 64, 77);
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_OK);
    CHECK_EQ_INT(r.task_count, 1);
    const RecTask *t = &r.tasks[0];
    CHECK_EQ_INT(t->func_id, 1);
    CHECK_EQ_INT(t->n, 5);
    CHECK_EQ_INT(t->params[0].value, X_ADDR + 8);
    CHECK_EQ_INT(t->params[0].bytes, 16);
    CHECK_EQ_INT(t->params[0].direction, PTO_ARG_IN);
    CHECK_EQ_INT(t->params[1].value, Y_ADDR);
    CHECK_EQ_INT(t->params[1].direction, PTO_ARG_INOUT);
    CHECK_EQ_INT(t->params[2].value, Z_ADDR + 60);
    CHECK_EQ_INT(t->params[2].bytes, 4);
    CHECK_EQ_INT(t->params[3].value, 0xdeadbeefcafeull);
    CHECK_EQ_INT(t->params[3].direction, PTO_ARG_SCALAR);
    CHECK_EQ_INT(t->params[3].bytes, 0);
    CHECK_EQ_INT(t->params[4].value, 77);
    rec_free(&r);
    free(args);
    tcb_free(&b);
}

TEST(program_loops_evaluate_affine_views_and_scalars_per_iteration)
{
    /* LOOP i < 3 { LOOP j < 4 { SUBMIT y[16*(4i+j), +16 + 0], scalar 100*i - j } } */
    TestCallableBuilder b;
    program_start(&b);
    tcb_loop(&b, 3);
    tcb_loop(&b, 4);
    PtoAffine off = { .base = 0, .coef = { 64, 16, 0, 0 } }, size = { .base = 16, .coef = { 0 } }, val = { .base = 0, .coef = { 100, -1, 0, 0 } };
    PtoProgramParam p[] = { affine_tensor(1, PTO_ARG_INOUT, off, size), affine_scalar(val) };
    tcb_submit(&b, 1, p, 2);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_END_LOOP);
    Recorder r;
    rec_init(&r);
    ChipStorageTaskArgs *args = make_args(4, 192, 4, 0);
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_OK);
    CHECK_EQ_INT(r.task_count, 12);
    for (uint32_t i = 0; i < 3; i++)
        for (uint32_t j = 0; j < 4; j++) {
            const RecTask *t = &r.tasks[i * 4 + j];
            CHECK_EQ_INT(t->params[0].value, Y_ADDR + 16 * (4 * i + j));
            CHECK_EQ_INT(t->params[0].bytes, 16);
            CHECK_EQ_INT((int64_t)t->params[1].value, (int64_t)(100 * i) - (int64_t)j);
        }
    rec_free(&r);
    free(args);
    tcb_free(&b);
}

TEST(program_zero_trip_loops_skip_their_bodies_and_nested_loops)
{
    /* SUBMIT; LOOP 0 { LOOP 5 { SUBMIT } SCOPE { SUBMIT } }; SUBMIT */
    TestCallableBuilder b;
    program_start(&b);
    PtoProgramParam p[] = { tcb_tensor(1, PTO_ARG_INOUT, 0, 4) };
    tcb_submit(&b, 1, p, 1);
    tcb_loop(&b, 0);
    tcb_loop(&b, 5);
    tcb_submit(&b, 2, p, 1);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_SCOPE_BEGIN);
    tcb_submit(&b, 2, p, 1);
    tcb_insn(&b, PTO_OP_SCOPE_END);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_submit(&b, 1, p, 1);
    Recorder r;
    rec_init(&r);
    ChipStorageTaskArgs *args = make_args(4, 4, 4, 0);
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_OK);
    CHECK_EQ_INT(r.task_count, 2);
    CHECK_EQ_INT(r.tasks[0].func_id, 1);
    CHECK_EQ_INT(r.tasks[1].func_id, 1);
    CHECK(strcmp(r.events, "SS") == 0);
    rec_free(&r);
    free(args);
    tcb_free(&b);
}

TEST(program_locals_are_allocated_once_and_viewed_within_their_bytes)
{
    /* LOOP 3 { ALLOC l0 256; SUBMIT l0[64i, +64] OUT, x IN } ALLOC l1 0; SUBMIT l1[0,+0] */
    TestCallableBuilder b;
    program_start(&b);
    b.local_count = 2;
    tcb_loop(&b, 3);
    tcb_alloc(&b, 0, 256);
    PtoProgramParam p[] = { local_view(0, PTO_ARG_OUT, 0, 64), tcb_tensor(0, PTO_ARG_IN, 0, 64) };
    p[0].offset.coef[0] = 64;
    tcb_submit(&b, 2, p, 2);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_alloc(&b, 1, 0);
    PtoProgramParam q[] = { local_view(1, PTO_ARG_INOUT, 0, 0) };
    tcb_submit(&b, 1, q, 1);
    Recorder r;
    rec_init(&r);
    ChipStorageTaskArgs *args = make_args(64, 4, 4, 0);
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_OK);
    CHECK_EQ_INT(r.alloc_count, 2);
    CHECK_EQ_INT(r.alloc_bytes[0], 256);
    CHECK_EQ_INT(r.alloc_bytes[1], 0);
    CHECK(strcmp(r.events, "ASSSAS") == 0);
    CHECK_EQ_INT(r.task_count, 4);
    for (uint32_t i = 0; i < 3; i++) {
        CHECK_EQ_INT(r.tasks[i].params[0].value, 0x100000 + 64 * i);
        CHECK_EQ_INT(r.tasks[i].params[0].direction, PTO_ARG_OUT);
    }
    CHECK_EQ_INT(r.tasks[3].params[0].value, 0x100000 + 256 + 64);
    CHECK_EQ_INT(r.tasks[3].params[0].bytes, 0);
    rec_free(&r);
    free(args);
    tcb_free(&b);
}

TEST(program_scopes_nest_inside_loops_in_order)
{
    /* SCOPE { LOOP 2 { SCOPE { SUBMIT } } SUBMIT } */
    TestCallableBuilder b;
    program_start(&b);
    PtoProgramParam p[] = { tcb_tensor(1, PTO_ARG_INOUT, 0, 4) };
    tcb_insn(&b, PTO_OP_SCOPE_BEGIN);
    tcb_loop(&b, 2);
    tcb_insn(&b, PTO_OP_SCOPE_BEGIN);
    tcb_submit(&b, 1, p, 1);
    tcb_insn(&b, PTO_OP_SCOPE_END);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_submit(&b, 1, p, 1);
    tcb_insn(&b, PTO_OP_SCOPE_END);
    Recorder r;
    rec_init(&r);
    ChipStorageTaskArgs *args = make_args(4, 4, 4, 0);
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_OK);
    CHECK(strcmp(r.events, "((S)(S)S)") == 0);
    CHECK_EQ_INT(r.max_scope_depth, 2);
    CHECK_EQ_INT(r.scope_depth, 0);
    rec_free(&r);
    free(args);
    tcb_free(&b);
}

TEST(program_a_loop_whose_iteration_submits_nothing_ends_without_spinning)
{
    /* LOOP 2^62 { SCOPE { } LOOP 0 { SUBMIT } } then LOOP 2^62 { LOOP 2^62 { } } : both end at once */
    TestCallableBuilder b;
    program_start(&b);
    PtoProgramParam p[] = { tcb_tensor(1, PTO_ARG_INOUT, 0, 4) };
    tcb_loop(&b, 1ull << 62);
    tcb_insn(&b, PTO_OP_SCOPE_BEGIN);
    tcb_insn(&b, PTO_OP_SCOPE_END);
    tcb_loop(&b, 0);
    tcb_submit(&b, 1, p, 1);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_loop(&b, 1ull << 62);
    tcb_loop(&b, 1ull << 62);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_submit(&b, 2, p, 1);
    Recorder r;
    rec_init(&r);
    ChipStorageTaskArgs *args = make_args(4, 4, 4, 0);
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_OK);
    CHECK(strcmp(r.events, "()S") == 0);
    rec_free(&r);
    free(args);
    tcb_free(&b);
}

TEST(program_an_endless_loop_of_tasks_stops_at_the_runtime_s_error)
{
    TestCallableBuilder b;
    program_start(&b);
    PtoProgramParam p[] = { tcb_tensor(1, PTO_ARG_INOUT, 0, 4) };
    tcb_loop(&b, (uint64_t)INT64_MAX);
    tcb_submit(&b, 1, p, 1);
    tcb_insn(&b, PTO_OP_END_LOOP);
    Recorder r;
    rec_init(&r);
    r.fail_submit_after = 1000;
    r.submit_error = PTO_ERR_CAPACITY;
    ChipStorageTaskArgs *args = make_args(4, 4, 4, 0);
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_ERR_CAPACITY);
    CHECK_CONTAINS(pto_last_error(), "recorder: submit refused after 1000 tasks");
    CHECK_EQ_INT(r.task_count, 1000);
    rec_free(&r);
    free(args);
    tcb_free(&b);
}

/* ---- refusals --------------------------------------------------------------------- */

static void walk_past_the_end(TestCallableBuilder *b)
{
    /* LOOP 4 { SUBMIT x[16i, +20] }: iteration 3 reaches byte 68 of 64 */
    tcb_loop(b, 4);
    PtoAffine off = { .base = 0, .coef = { 16, 0, 0, 0 } }, size = { .base = 20, .coef = { 0 } };
    PtoProgramParam p[] = { affine_tensor(0, PTO_ARG_IN, off, size) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}

static void negative_offset(TestCallableBuilder *b)
{
    tcb_loop(b, 2);
    PtoAffine off = { .base = 8, .coef = { -8, 0, 0, 0 } }, size = { .base = 4, .coef = { 0 } };
    PtoProgramParam p[] = { affine_tensor(0, PTO_ARG_IN, off, size) };
    off.coef[0] = -16; /* second iteration: 8 - 16 < 0 */
    p[0].offset = off;
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}

static void affine_overflow(TestCallableBuilder *b)
{
    tcb_loop(b, 3);
    PtoAffine val = { .base = INT64_MAX - 1, .coef = { 1, 0, 0, 0 } };
    PtoProgramParam p[] = { affine_scalar(val) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}

static void local_before_alloc_executed(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_loop(b, 0);
    tcb_alloc(b, 0, 64);
    tcb_insn(b, PTO_OP_END_LOOP);
    PtoProgramParam p[] = { local_view(0, PTO_ARG_OUT, 0, 4) };
    tcb_submit(b, 1, p, 1);
}

static void local_view_too_large(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_alloc(b, 0, 64);
    PtoProgramParam p[] = { local_view(0, PTO_ARG_OUT, 32, 33) };
    tcb_submit(b, 1, p, 1);
}

static void writes_an_in_tensor(TestCallableBuilder *b)
{
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_INOUT, 0, 4) };
    tcb_submit(b, 1, p, 1);
}

static void uses_an_unenclosing_loop_variable(TestCallableBuilder *b)
{
    PtoAffine val = { .base = 0, .coef = { 0, 1, 0, 0 } };
    tcb_loop(b, 2);
    PtoProgramParam p[] = { affine_scalar(val) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}

static void names_tensor_three(TestCallableBuilder *b)
{
    PtoProgramParam p[] = { tcb_tensor(3, PTO_ARG_IN, 0, 4) };
    tcb_submit(b, 1, p, 1);
}

static void names_scalar_one(TestCallableBuilder *b)
{
    PtoProgramParam p[] = { tcb_scalar_arg(1) };
    tcb_submit(b, 1, p, 1);
}

static void huge_loop_count(TestCallableBuilder *b)
{
    tcb_loop(b, (uint64_t)INT64_MAX + 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}

static void unbalanced_end_loop(TestCallableBuilder *b)
{
    tcb_insn(b, PTO_OP_SCOPE_BEGIN);
    tcb_insn(b, PTO_OP_END_LOOP);
}

static void never_closed(TestCallableBuilder *b)
{
    PtoProgramParam p[] = { tcb_tensor(1, PTO_ARG_INOUT, 0, 4) };
    tcb_submit(b, 1, p, 1);
    tcb_loop(b, 2);
}

static void unknown_opcode(TestCallableBuilder *b)
{
    PtoInsnHead h = { 10, 0, 8 };
    tcb_raw(b, &h, sizeof h);
}

static void oversized_instruction(TestCallableBuilder *b)
{
    PtoInsnHead h = { PTO_OP_SCOPE_BEGIN, 0, 4096 };
    tcb_raw(b, &h, sizeof h);
}

static void too_many_params(TestCallableBuilder *b)
{
    PtoInsnHead h = { PTO_OP_SUBMIT, 33, 8 };
    tcb_raw(b, &h, sizeof h);
}

static void scalar_with_tensor_direction(TestCallableBuilder *b)
{
    PtoProgramParam p[] = { tcb_imm(1) };
    p[0].direction = PTO_ARG_IN;
    tcb_submit(b, 1, p, 1);
}

/* LOOP 3 { vcopy(x[i0 rows, cols 4*i0 .. +4] of a 4 x 10 f32 x, ...) }: i0 = 2 reaches column 12 */
static void strided_overhang(TestCallableBuilder *b)
{
    tcb_loop(b, 3);
    PtoProgramParam p[] = { tcb_view2(PTO_PARAM_ARG_TENSOR, 0, PTO_ARG_IN, PTO_DTYPE_F32, 4, 10, 0, 0, 1, 4),
                            tcb_tensor(1, PTO_ARG_OUT, 0, 16) };
    p[0].dims[1].offset.coef[0] = 4;
    tcb_submit(b, 2, p, 2);
    tcb_insn(b, PTO_OP_END_LOOP);
}
/* a 17-element f32 view of the 64-byte x: inside its (made-up) bounds, past its bytes */
static void strided_past_tensor(TestCallableBuilder *b)
{
    PtoProgramParam p[] = { tcb_view2(PTO_PARAM_ARG_TENSOR, 0, PTO_ARG_IN, PTO_DTYPE_F32, 2, 16, 0, 0, 2, 1),
                            tcb_tensor(1, PTO_ARG_OUT, 0, 16) };
    tcb_submit(b, 2, p, 2);
}

static void local_used_after_its_scope(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_insn(b, PTO_OP_SCOPE_BEGIN);
    tcb_alloc(b, 0, 64);
    tcb_insn(b, PTO_OP_SCOPE_END);
    PtoProgramParam p[] = { local_view(0, PTO_ARG_OUT, 0, 64) };
    tcb_submit(b, 1, p, 1);
}

static void five_nested_loops(TestCallableBuilder *b)
{
    for (int i = 0; i < 5; i++)
        tcb_loop(b, 1);
    for (int i = 0; i < 5; i++)
        tcb_insn(b, PTO_OP_END_LOOP);
}

TEST(program_refuses_every_run_time_defect_naming_the_instruction)
{
    ChipStorageTaskArgs *args = make_args(64, 64, 64, 0);
    check_refusal(walk_past_the_end, args, 1, PTO_ERR_BAD_CALLABLE,
                  "program instruction 1 (SUBMIT func_id 1) param 0: view [48, 48 + 20) lies outside argument tensor 0 of 64 bytes",
                  3);
    check_refusal(negative_offset, args, 0, PTO_ERR_BAD_CALLABLE, "view [-8, -8 + 4) lies outside argument tensor 0", 1);
    check_refusal(affine_overflow, args, 0, PTO_ERR_BAD_CALLABLE,
                  "program instruction 1 (SUBMIT func_id 1) param 0: the scalar value overflows", 2);
    check_refusal(local_view_too_large, args, 0, PTO_ERR_BAD_CALLABLE, "view [32, 32 + 33) lies outside local tensor 0 of 64 bytes", 0);
    check_refusal(writes_an_in_tensor, args, 0, PTO_ERR_BAD_CALLABLE,
                  "param 0 writes argument tensor 0, which the signature declares IN", 0);
    /* what registration refuses too (the decoder proves it from the text): the
       interpreter does not rely on it */
    check_refusal(local_before_alloc_executed, args, 0, PTO_ERR_BAD_CALLABLE,
                  "program instruction 3 (SUBMIT func_id 1) param 0 uses local tensor 0 before its ALLOC_TENSOR has executed",
                  0);
    check_refusal(uses_an_unenclosing_loop_variable, args, 0, PTO_ERR_BAD_CALLABLE,
                  "the scalar value uses loop variable 1 but only 1 loop(s) enclose it", 0);
    check_refusal(names_tensor_three, args, 0, PTO_ERR_BAD_CALLABLE, "names argument tensor 3; the run has 3", 0);
    check_refusal(names_scalar_one, args, 0, PTO_ERR_BAD_CALLABLE, "names argument scalar 1; the run has 1", 0);
    check_refusal(huge_loop_count, args, 0, PTO_ERR_BAD_CALLABLE, "program instruction 0 (LOOP) count 9223372036854775808 exceeds", 0);
    check_refusal(unbalanced_end_loop, args, 0, PTO_ERR_BAD_CALLABLE,
                  "program instruction 1 (END_LOOP) does not close an open LOOP", 0);
    check_refusal(never_closed, args, 0, PTO_ERR_BAD_CALLABLE, "program ends with 1 LOOP / SCOPE_BEGIN construct(s) still open", 1);
    check_refusal(unknown_opcode, args, 0, PTO_ERR_BAD_CALLABLE, "program instruction 0 has unknown opcode 10", 0);
    check_refusal(oversized_instruction, args, 0, PTO_ERR_BAD_CALLABLE, "program instruction 0 (4096 bytes at byte 16) runs past", 0);
    check_refusal(too_many_params, args, 0, PTO_ERR_BAD_CALLABLE, "program instruction 0 (SUBMIT) has 33 params, the limit is 32", 0);
    check_refusal(scalar_with_tensor_direction, args, 0, PTO_ERR_BAD_CALLABLE, "direction 1 does not fit parameter kind 2", 0);
    check_refusal(strided_overhang, args, 0, PTO_ERR_BAD_CALLABLE,
                  "program instruction 1 (SUBMIT func_id 2) param 0, a view of argument tensor 0: dim 1: elements [8, 8 "
                  "+ 4) leave its bound of 10 at i0=2",
                  2);
    check_refusal(strided_past_tensor, args, 0, PTO_ERR_BAD_CALLABLE,
                  "program instruction 0 (SUBMIT func_id 2) param 0, a view of argument tensor 0: its last element ends "
                  "at byte 68 of a 64-byte tensor at outside any loop",
                  0);
    check_refusal(local_used_after_its_scope, args, 0, PTO_ERR_BAD_CALLABLE,
                  "program instruction 3 (SUBMIT func_id 1) param 0 uses local tensor 0 after the scope it was allocated "
                  "in has ended",
                  0);
    check_refusal(five_nested_loops, args, 0, PTO_ERR_BAD_CALLABLE, "program instruction 4 (LOOP) nests deeper than 4", 0);
    free(args);
}

static void one_alloc(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_alloc(b, 0, 1000);
}

static void one_scope(TestCallableBuilder *b)
{
    tcb_insn(b, PTO_OP_SCOPE_BEGIN);
    tcb_insn(b, PTO_OP_SCOPE_END);
}

TEST(program_api_failures_come_back_with_their_codes)
{
    ChipStorageTaskArgs *args = make_args(64, 64, 64, 0);
    TestCallableBuilder b;
    Recorder r;

    program_start(&b);
    one_alloc(&b);
    rec_init(&r);
    r.fail_alloc = 1;
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_ERR_OUT_OF_MEMORY);
    CHECK_CONTAINS(pto_last_error(), "program instruction 0 (ALLOC_TENSOR local 0, 1000 bytes): recorder heap cannot hold 1000 bytes");
    rec_free(&r);
    tcb_free(&b);

    program_start(&b);
    one_scope(&b);
    rec_init(&r);
    r.fail_scope_begin = PTO_ERR_ORCHESTRATION;
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_ERR_ORCHESTRATION);
    CHECK_CONTAINS(pto_last_error(), "recorder: scope refused");
    rec_free(&r);
    tcb_free(&b);

    /* a truncated program blob and a NULL api are refused before anything runs */
    uint8_t header[8] = { 0 };
    CHECK_EQ_INT(pto_program_orchestrate(&rec_api, NULL, args, header, sizeof header, SIG, sizeof SIG),
                 PTO_ERR_BAD_CALLABLE);
    CHECK_CONTAINS(pto_last_error(), "program is 8 bytes");
    CHECK_EQ_INT(pto_program_orchestrate(NULL, NULL, args, header, sizeof header, SIG, sizeof SIG),
                 PTO_ERR_INVALID_ARGUMENT);
    free(args);
}

TEST(program_with_no_instructions_submits_nothing)
{
    TestCallableBuilder b;
    program_start(&b);
    Recorder r;
    rec_init(&r);
    ChipStorageTaskArgs *args = make_args(64, 64, 64, 0);
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_OK);
    CHECK_EQ_INT(r.task_count, 0);
    CHECK_EQ_INT(r.event_count, 0);
    rec_free(&r);
    free(args);
    tcb_free(&b);
}
