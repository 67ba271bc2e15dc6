/* The program interpreter on format 2's additions, against the recording
 * PtoOrchApi (test_program_recorder.h): strided views with clamped tails,
 * selected and transposed dims, per-iteration locals, MANUAL scopes and their
 * predecessor ordinals. */
#include <stdlib.h>
#include <string.h>

#include "format/chip_callable.h"
#include "ptest.h"
#include "test_callable.h"
#include "test_program_recorder.h"

TEST(program_strided_tiles_with_clamped_tails_cover_a_matrix_exactly)
{
    /* an 11 x 37 f32 matrix x in 8 x 8 tiles: LOOP 2 { LOOP 5 { vcopy(tile of x, tile of y) } },
       each tile's extent min(N - 8*i, 8), so the last row and column tiles are 3 and 5 wide */
    TestCallableBuilder b;
    program_start(&b);
    tcb_loop(&b, 2);
    tcb_loop(&b, 5);
    PtoProgramParam p[2];
    for (int t = 0; t < 2; t++) {
        p[t] = tcb_view2(PTO_PARAM_ARG_TENSOR, (uint32_t)t, t == 0 ? PTO_ARG_IN : PTO_ARG_OUT, PTO_DTYPE_F32, 11, 37,
                         0, 0, 0, 0);
        for (int d = 0; d < 2; d++) {
            p[t].dims[d].offset.coef[d] = 8;
            p[t].dims[d].extent.base = d == 0 ? 11 : 37;
            p[t].dims[d].extent.coef[d] = -8;
            p[t].dims[d].extent.clamp = PTO_AFFINE_HAS_HI;
            p[t].dims[d].extent.hi = 8;
        }
    }
    tcb_submit(&b, 2, p, 2);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_END_LOOP);
    Recorder r;
    rec_init(&r);
    ChipStorageTaskArgs *args = make_args(11 * 37 * 4, 11 * 37 * 4, 64, 0);
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_OK);
    CHECK_EQ_INT(r.task_count, 10);
    uint8_t covered[11 * 37] = { 0 };
    for (uint32_t t = 0; t < r.task_count && t < 10; t++) {
        const PtoTaskParam *x = &r.tasks[t].params[0];
        uint64_t i = t / 5, j = t % 5, rows = i == 1 ? 3 : 8, cols = j == 4 ? 5 : 8;
        CHECK_EQ_INT(x->view.ndims, 2);
        CHECK_EQ_INT(x->view.dtype, PTO_DTYPE_F32);
        CHECK_EQ_INT(x->view.addr, X_ADDR + 4 * (8 * i * 37 + 8 * j));
        CHECK_EQ_INT(x->value, x->view.addr);
        CHECK_EQ_INT(x->view.shape[0], rows);
        CHECK_EQ_INT(x->view.shape[1], cols);
        CHECK_EQ_INT(x->view.strides[0], 37);
        CHECK_EQ_INT(x->view.strides[1], 1);
        CHECK_EQ_INT(x->bytes, 4 * ((rows - 1) * 37 + cols));
        CHECK_EQ_INT(r.tasks[t].params[1].view.addr, Y_ADDR + 4 * (8 * i * 37 + 8 * j));
        for (uint64_t a = 0; a < rows; a++)
            for (uint64_t c = 0; c < cols; c++)
                covered[(8 * i + a) * 37 + 8 * j + c]++;
    }
    for (int e = 0; e < 11 * 37; e++)
        CHECK_EQ_INT(covered[e], 1);
    rec_free(&r);
    tcb_free(&b);
    free(args);
}

TEST(program_selected_dims_and_transposed_views_reach_the_task)
{
    /* x as 2 x 3 x 4 f32: select batch i0 of LOOP 2, transpose the 3 x 4 rows and columns */
    TestCallableBuilder b;
    program_start(&b);
    tcb_loop(&b, 2);
    PtoProgramParam p[] = { { .kind = PTO_PARAM_ARG_TENSOR, .direction = PTO_ARG_IN, .dtype = PTO_DTYPE_F32,
                              .ndims = 3, .index = 0 },
                            tcb_tensor(1, PTO_ARG_OUT, 0, 48) };
    p[0].dims[0] = (PtoViewDim){ .stride = 12, .bound = 2, .flags = PTO_VIEW_DIM_SELECTED };
    p[0].dims[0].offset.coef[0] = 1;
    p[0].dims[1] = (PtoViewDim){ .stride = 1, .bound = 4 };
    p[0].dims[1].extent.base = 4;
    p[0].dims[2] = (PtoViewDim){ .stride = 4, .bound = 3 };
    p[0].dims[2].extent.base = 3;
    tcb_submit(&b, 2, p, 2);
    tcb_insn(&b, PTO_OP_END_LOOP);
    Recorder r;
    rec_init(&r);
    ChipStorageTaskArgs *args = make_args(96, 48, 64, 0);
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_OK);
    CHECK_EQ_INT(r.task_count, 2);
    for (uint32_t t = 0; t < r.task_count && t < 2; t++) {
        const PtoTensorView *v = &r.tasks[t].params[0].view;
        CHECK_EQ_INT(v->ndims, 2);
        CHECK_EQ_INT(v->addr, X_ADDR + 48 * t);
        CHECK_EQ_INT(v->shape[0], 4);
        CHECK_EQ_INT(v->shape[1], 3);
        CHECK_EQ_INT(v->strides[0], 1);
        CHECK_EQ_INT(v->strides[1], 4);
        CHECK_EQ_INT(r.tasks[t].params[0].bytes, 48);
    }
    rec_free(&r);
    tcb_free(&b);
    free(args);
}

TEST(program_a_loop_over_a_scope_allocates_its_locals_in_every_iteration)
{
    /* LOOP 3 { SCOPE { ALLOC local 0; vcopy(x, local 0) } }: allocated, used and freed per iteration */
    TestCallableBuilder b;
    program_start(&b);
    b.local_count = 1;
    tcb_loop(&b, 3);
    tcb_insn(&b, PTO_OP_SCOPE_BEGIN);
    tcb_alloc(&b, 0, 64);
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, 0, 64), local_view(0, PTO_ARG_OUT, 0, 64) };
    tcb_submit(&b, 2, p, 2);
    tcb_insn(&b, PTO_OP_SCOPE_END);
    tcb_insn(&b, PTO_OP_END_LOOP);
    Recorder r;
    rec_init(&r);
    ChipStorageTaskArgs *args = make_args(64, 64, 64, 0);
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_OK);
    CHECK_EQ_INT(r.task_count, 3);
    CHECK(strcmp(r.events, "(AS)(AS)(AS)") == 0);
    CHECK_EQ_INT(r.alloc_count, 3);
    rec_free(&r);
    tcb_free(&b);
    free(args);
}

TEST(program_manual_scopes_pass_each_tasks_predecessor_ordinals)
{
    /* SCOPE_BEGIN_MANUAL { LOOP 3 { SUBMIT after [i-1, i-2, i-1] } }: an ordinal below 0 names no task,
       a repeated one is passed once */
    TestCallableBuilder b;
    program_start(&b);
    tcb_insn(&b, PTO_OP_SCOPE_BEGIN_MANUAL);
    tcb_loop(&b, 3);
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, 0, 16), tcb_tensor(1, PTO_ARG_OUT, 0, 16) };
    PtoAffine after[] = { { .base = -1, .coef = { 1 } }, { .base = -2, .coef = { 1 } }, { .base = -1, .coef = { 1 } } };
    tcb_submit_after(&b, 2, p, 2, after, 3);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_SCOPE_END);
    Recorder r;
    rec_init(&r);
    ChipStorageTaskArgs *args = make_args(64, 64, 64, 0);
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_OK);
    CHECK_EQ_INT(r.task_count, 3);
    CHECK(strcmp(r.events, "[SSS)") == 0);
    CHECK_EQ_INT(r.tasks[0].n_after, 0);
    CHECK_EQ_INT(r.tasks[1].n_after, 1);
    CHECK_EQ_INT(r.tasks[1].after[0], 0);
    CHECK_EQ_INT(r.tasks[2].n_after, 2);
    CHECK_EQ_INT(r.tasks[2].after[0], 1);
    CHECK_EQ_INT(r.tasks[2].after[1], 0);
    rec_free(&r);
    tcb_free(&b);
    free(args);
}

static void after_outside_manual(TestCallableBuilder *b)
{
    tcb_insn(b, PTO_OP_SCOPE_BEGIN);
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, 0, 16) };
    PtoAffine after[] = { { .base = 0 } };
    tcb_submit_after(b, 2, p, 1, after, 1);
    tcb_insn(b, PTO_OP_SCOPE_END);
}

TEST(program_predecessors_outside_a_manual_scope_are_refused)
{
    TestCallableBuilder b;
    program_start(&b);
    after_outside_manual(&b);
    uint32_t size;
    uint8_t *c = tcb_build(&b, &size);
    ChipCallableView v;
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    CHECK_EQ_INT(chip_callable_decode(c, &v, msg, sizeof msg), PTO_ERR_BAD_CALLABLE);
    CHECK_CONTAINS(msg, "instruction 1 (SUBMIT) names predecessors outside a MANUAL scope");
    free(c);
    tcb_free(&b);
    ChipStorageTaskArgs *args = make_args(64, 64, 64, 0);
    check_refusal(after_outside_manual, args, 0, PTO_ERR_BAD_CALLABLE,
                  "program instruction 1 (SUBMIT func_id 2) names predecessors outside a MANUAL scope", 0);
    free(args);
}
