/* The callable decoder on programs: nesting, locals and their scopes, views
 * over the loops' ranges (flat and strided, every iteration it can enumerate),
 * predecessor ordinals; each refusal names its instruction and parameter. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/chip_callable.h"
#include "util/last_error.h"
#include "ptest.h"
#include "ptorun/pto_runtime_c_api.h"
#include "test_callable.h"

/* ---- program structure --------------------------------------------------------- */

static int decode_program(void (*shape)(TestCallableBuilder *), char *msg)
{
    TestCallableBuilder b;
    tcb_base_program(&b);
    shape(&b);
    uint32_t size;
    uint8_t *c = tcb_build(&b, &size);
    int rc = tcb_decode(c, msg);
    free(c);
    tcb_free(&b);
    return rc;
}

static void loop_left_open(TestCallableBuilder *b) { tcb_loop(b, 2); }
static void end_loop_alone(TestCallableBuilder *b) { tcb_insn(b, PTO_OP_END_LOOP); }
static void scope_left_open(TestCallableBuilder *b) { tcb_insn(b, PTO_OP_SCOPE_BEGIN); }
static void scope_end_alone(TestCallableBuilder *b) { tcb_insn(b, PTO_OP_SCOPE_END); }
static void crossed(TestCallableBuilder *b)
{
    tcb_loop(b, 2);
    tcb_insn(b, PTO_OP_SCOPE_BEGIN);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void five_loops(TestCallableBuilder *b)
{
    for (int i = 0; i < 5; i++)
        tcb_loop(b, 1);
    for (int i = 0; i < 5; i++)
        tcb_insn(b, PTO_OP_END_LOOP);
}
static void five_scopes(TestCallableBuilder *b)
{
    for (int i = 0; i < 5; i++)
        tcb_insn(b, PTO_OP_SCOPE_BEGIN);
    for (int i = 0; i < 5; i++)
        tcb_insn(b, PTO_OP_SCOPE_END);
}
static void four_of_each(TestCallableBuilder *b)
{
    for (int i = 0; i < 4; i++) {
        tcb_insn(b, PTO_OP_SCOPE_BEGIN);
        tcb_loop(b, 1);
    }
    for (int i = 0; i < 4; i++) {
        tcb_insn(b, PTO_OP_END_LOOP);
        tcb_insn(b, PTO_OP_SCOPE_END);
    }
}
static void local_used_before_alloc(TestCallableBuilder *b)
{
    b->local_count = 1;
    PtoProgramParam p[] = { { .kind = PTO_PARAM_LOCAL_TENSOR, .direction = PTO_ARG_OUT, .index = 0 } };
    tcb_submit(b, 1, p, 1);
    tcb_alloc(b, 0, 64);
}
static void local_allocated_twice(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_alloc(b, 0, 64);
    tcb_alloc(b, 0, 64);
}
static void alloc_out_of_range(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_alloc(b, 1, 64);
}
static PtoProgramParam looped_view(uint32_t kind, uint32_t index, uint8_t dir, int64_t off, int64_t coef, int64_t size)
{
    PtoProgramParam p = tcb_tensor(index, dir, off, size);
    p.kind = (uint8_t)kind;
    p.offset.coef[0] = coef;
    return p;
}
static void writes_in_tensor(TestCallableBuilder *b)
{
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_OUT, 0, 4) };
    tcb_submit(b, 1, p, 1);
}
static void negative_view_in_loop(TestCallableBuilder *b)
{
    tcb_loop(b, 3);
    PtoProgramParam p[] = { looped_view(PTO_PARAM_ARG_TENSOR, 0, PTO_ARG_IN, 8, -8, 4) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void negative_size(TestCallableBuilder *b)
{
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, 0, -4) };
    tcb_submit(b, 1, p, 1);
}
static void negative_view_never_runs(TestCallableBuilder *b)
{
    tcb_loop(b, 0);
    PtoProgramParam p[] = { looped_view(PTO_PARAM_ARG_TENSOR, 0, PTO_ARG_IN, -8, 0, -4) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void local_view_past_alloc(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_alloc(b, 0, 64);
    tcb_loop(b, 4);
    PtoProgramParam p[] = { looped_view(PTO_PARAM_LOCAL_TENSOR, 0, PTO_ARG_OUT, 0, 16, 20) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void local_view_tiles_its_alloc(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_alloc(b, 0, 64);
    tcb_loop(b, 4);
    PtoProgramParam p[] = { looped_view(PTO_PARAM_LOCAL_TENSOR, 0, PTO_ARG_OUT, 0, 16, 16) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void loop_count_too_large(TestCallableBuilder *b)
{
    tcb_loop(b, (uint64_t)INT64_MAX + 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void scalar_leaves_int64(TestCallableBuilder *b)
{
    tcb_loop(b, (uint64_t)INT64_MAX);
    PtoProgramParam p[] = { { .kind = PTO_PARAM_SCALAR_AFFINE, .direction = PTO_ARG_SCALAR } };
    p[0].offset.coef[0] = 2;
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void offset_leaves_int64(TestCallableBuilder *b)
{
    tcb_loop(b, 1ull << 62);
    PtoProgramParam p[] = { looped_view(PTO_PARAM_ARG_TENSOR, 0, PTO_ARG_IN, 0, 4, 4) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void alloc_in_a_repeated_scope(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_loop(b, 2);
    tcb_insn(b, PTO_OP_SCOPE_BEGIN);
    tcb_alloc(b, 0, 64);
    PtoProgramParam p[] = { tcb_local(0, PTO_ARG_OUT, 0, 64) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_SCOPE_END);
    tcb_insn(b, PTO_OP_END_LOOP);
}
/* 11 x 37 f32 rows tiled 8 x 8 (2 x 5 tiles), the last tile of each dim clamped */
static PtoProgramParam clamped_tile(uint32_t kind, uint32_t index, uint8_t direction, int64_t rows, int64_t cols)
{
    PtoProgramParam p = tcb_view2(kind, index, direction, PTO_DTYPE_F32, rows, cols, 0, 0, 0, 0);
    for (int d = 0; d < 2; d++) {
        p.dims[d].offset.coef[d] = 8;
        p.dims[d].extent.base = d == 0 ? rows : cols;
        p.dims[d].extent.coef[d] = -8;
        p.dims[d].extent.clamp = PTO_AFFINE_HAS_HI;
        p.dims[d].extent.hi = 8;
    }
    return p;
}
static void tiles_with_clamped_tails(TestCallableBuilder *b)
{
    tcb_loop(b, 2);
    tcb_loop(b, 5);
    PtoProgramParam p[] = { clamped_tile(PTO_PARAM_ARG_TENSOR, 0, PTO_ARG_IN, 11, 37) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void tiles_overhanging_a_row(TestCallableBuilder *b)
{
    tcb_loop(b, 2);
    tcb_loop(b, 5);
    PtoProgramParam p[] = { clamped_tile(PTO_PARAM_ARG_TENSOR, 0, PTO_ARG_IN, 11, 37) };
    p[0].dims[1].extent.clamp = 0; /* no tail clamp: the last column tile is 8 wide */
    p[0].dims[1].extent.hi = 0;
    p[0].dims[1].extent.base = 8;
    p[0].dims[1].extent.coef[1] = 0;
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void overhang_in_a_long_loop(TestCallableBuilder *b)
{
    tcb_loop(b, 1u << 20); /* beyond the iterations registration enumerates: ranges prove it */
    PtoProgramParam p[] = { tcb_view2(PTO_PARAM_ARG_TENSOR, 0, PTO_ARG_IN, PTO_DTYPE_F32, 11, 37, 0, 32, 1, 8) };
    p[0].dims[0].offset.coef[0] = 0;
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void strided_local_past_alloc(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_alloc(b, 0, 4 * 4 * 4 - 4); /* one f32 short of 4 x 4 */
    PtoProgramParam p[] = { tcb_view2(PTO_PARAM_LOCAL_TENSOR, 0, PTO_ARG_OUT, PTO_DTYPE_F32, 4, 4, 0, 0, 4, 4) };
    tcb_submit(b, 1, p, 1);
}
static void strided_bad_dtype(TestCallableBuilder *b)
{
    PtoProgramParam p[] = { tcb_view2(PTO_PARAM_ARG_TENSOR, 0, PTO_ARG_IN, 77, 4, 4, 0, 0, 4, 4) };
    tcb_submit(b, 1, p, 1);
}
static void strided_selected_with_extent(TestCallableBuilder *b)
{
    PtoProgramParam p[] = { tcb_view2(PTO_PARAM_ARG_TENSOR, 0, PTO_ARG_IN, PTO_DTYPE_F32, 4, 4, 1, 0, 1, 4) };
    p[0].dims[0].flags = PTO_VIEW_DIM_SELECTED;
    tcb_submit(b, 1, p, 1);
}
static void strided_clamp_inverted(TestCallableBuilder *b)
{
    PtoProgramParam p[] = { tcb_view2(PTO_PARAM_ARG_TENSOR, 0, PTO_ARG_IN, PTO_DTYPE_F32, 4, 4, 0, 0, 4, 4) };
    p[0].dims[1].extent.clamp = PTO_AFFINE_HAS_LO | PTO_AFFINE_HAS_HI;
    p[0].dims[1].extent.lo = 3;
    p[0].dims[1].extent.hi = 2;
    tcb_submit(b, 1, p, 1);
}
static void local_used_after_its_scope(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_insn(b, PTO_OP_SCOPE_BEGIN);
    tcb_alloc(b, 0, 64);
    tcb_insn(b, PTO_OP_SCOPE_END);
    PtoProgramParam p[] = { tcb_local(0, PTO_ARG_OUT, 0, 64) };
    tcb_submit(b, 1, p, 1);
}
static void local_of_a_scope_reused_by_an_inner_loop(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_insn(b, PTO_OP_SCOPE_BEGIN);
    tcb_loop(b, 3);
    tcb_alloc(b, 0, 64);
    tcb_insn(b, PTO_OP_SCOPE_BEGIN);
    PtoProgramParam p[] = { tcb_local(0, PTO_ARG_OUT, 0, 64) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_SCOPE_END);
    tcb_insn(b, PTO_OP_END_LOOP);
    tcb_insn(b, PTO_OP_SCOPE_END);
}
static void loop_with_params(TestCallableBuilder *b)
{
    PtoLoopInsn l = { .head = { PTO_OP_LOOP, 1, sizeof l }, .count = 1 };
    tcb_raw(b, &l, sizeof l);
}

TEST(decoder_checks_program_nesting_and_locals)
{
    struct { void (*shape)(TestCallableBuilder *); int ok; const char *message; } cases[] = {
        { loop_left_open, 0, "the LOOP at instruction 2 is never closed" },
        { end_loop_alone, 0, "instruction 2 (END_LOOP) closes nothing" },
        { scope_left_open, 0, "the SCOPE_BEGIN at instruction 2 is never closed" },
        { scope_end_alone, 0, "instruction 2 (SCOPE_END) closes nothing" },
        { crossed, 0, "instruction 4 (END_LOOP) would close the SCOPE_BEGIN opened at instruction 3" },
        { five_loops, 0, "instruction 6 (LOOP) nests loops deeper than 4" },
        { five_scopes, 0, "instruction 6 (SCOPE_BEGIN) nests scopes deeper than 4" },
        { four_of_each, 1, "" },
        { local_used_before_alloc, 0, "uses local tensor 0 before its ALLOC_TENSOR" },
        { local_allocated_twice, 0, "allocates local 0 a second time" },
        { alloc_out_of_range, 0, "allocates local 1 but local_count is 1" },
        { loop_with_params, 0, "(LOOP) has param_count 1, must be 0" },
        { writes_in_tensor, 0, "instruction 2 param 0 (OUT) writes argument tensor 0, which the signature declares IN" },
        { negative_view_in_loop, 0, "instruction 3 param 0: the view offset reaches -8; a view lies inside its tensor" },
        { negative_size, 0, "instruction 2 param 0: the view size reaches -4" },
        { negative_view_never_runs, 1, "" },
        { local_view_past_alloc, 0, "instruction 4 param 0: the view reaches byte 68 of local tensor 0, which has 64 bytes" },
        { local_view_tiles_its_alloc, 1, "" },
        { loop_count_too_large, 0, "instruction 2 (LOOP) count 9223372036854775808 exceeds 9223372036854775807" },
        { scalar_leaves_int64, 0, "instruction 3 param 0: the scalar value leaves the 64-bit range in some iteration" },
        { alloc_in_a_repeated_scope, 1, "" },
        { tiles_with_clamped_tails, 1, "" },
        { tiles_overhanging_a_row, 0,
          "instruction 4 param 0 (IN argument tensor 0): dim 1: elements [32, 32 + 8) leave its bound of 37 at i0=0, "
          "i1=4" },
        { strided_local_past_alloc, 0,
          "instruction 3 param 0 (OUT local tensor 0): its last element ends at byte 64 of a 60-byte tensor at "
          "outside any loop" },
        { overhang_in_a_long_loop, 0, "instruction 3 param 0: dim 1 reaches element 40 of its bound of 37 in some "
                                      "iteration" },
        { strided_bad_dtype, 0, "instruction 2 param 0: dtype 77 is not a PtoDataType" },
        { strided_selected_with_extent, 0, "instruction 2 param 0: dim 0 is SELECTED (extent 1) but carries an extent" },
        { strided_clamp_inverted, 0, "instruction 2 param 0: dim 1 has a malformed clamp" },
        { local_used_after_its_scope, 0,
          "instruction 5 param 0 uses local tensor 0 after the scope that frees it (SCOPE_BEGIN at instruction 2) has "
          "ended" },
        { local_of_a_scope_reused_by_an_inner_loop, 1, "" },
        { offset_leaves_int64, 0, "instruction 3 param 0: the view's offset leaves the 64-bit range in some iteration" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char msg[CHIP_CALLABLE_MESSAGE_BYTES];
        int rc = decode_program(cases[i].shape, msg);
        if (cases[i].ok) {
            CHECK_EQ_INT(rc, PTO_OK);
        } else {
            CHECK_EQ_INT(rc, PTO_ERR_BAD_CALLABLE);
            CHECK_CONTAINS(msg, cases[i].message);
        }
    }
}

/* Found by fuzz_chip_callable's differential invariant (registration accepts
   => the interpreter runs the program): a local allocated only inside a LOOP of
   count 0 and used after it was accepted, and every run then refused it ("uses
   local tensor 0 before its ALLOC_TENSOR has executed"). Registration now
   refuses it, as the Java Program builder does; a use that never runs either
   stays fine. Regression input: corpus/chip_callable/regress-local-allocated-in-zero-trip-loop. */
static void local_allocated_only_in_a_zero_trip_loop(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_loop(b, 0);
    tcb_alloc(b, 0, 64);
    tcb_insn(b, PTO_OP_END_LOOP);
    PtoProgramParam p[] = { tcb_local(0, PTO_ARG_OUT, 0, 64) };
    tcb_submit(b, 1, p, 1);
}
static void local_of_a_zero_trip_loop_used_only_inside_it(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_loop(b, 0);
    tcb_alloc(b, 0, 64);
    PtoProgramParam p[] = { tcb_local(0, PTO_ARG_OUT, 0, 64) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void local_of_a_zero_trip_loop_used_in_another(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_loop(b, 0);
    tcb_alloc(b, 0, 64);
    tcb_insn(b, PTO_OP_END_LOOP);
    tcb_loop(b, 5);
    tcb_loop(b, 0);
    PtoProgramParam p[] = { tcb_local(0, PTO_ARG_OUT, 0, 64) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
    tcb_insn(b, PTO_OP_END_LOOP);
}
static void local_of_a_running_loop_used_after_it(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_loop(b, 2);
    tcb_alloc(b, 0, 64);
    tcb_insn(b, PTO_OP_END_LOOP);
    PtoProgramParam p[] = { tcb_local(0, PTO_ARG_OUT, 0, 64) };
    tcb_submit(b, 1, p, 1);
}

TEST(decoder_refuses_a_local_whose_alloc_never_runs_before_a_use_that_does)
{
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    CHECK_EQ_INT(decode_program(local_allocated_only_in_a_zero_trip_loop, msg), PTO_ERR_BAD_CALLABLE);
    CHECK_CONTAINS(msg, "instruction 5 param 0 uses local tensor 0, whose ALLOC_TENSOR (instruction 3) is inside a "
                        "LOOP of count 0 and never runs");
    CHECK_EQ_INT(decode_program(local_of_a_zero_trip_loop_used_only_inside_it, msg), PTO_OK);
    CHECK_EQ_INT(decode_program(local_of_a_zero_trip_loop_used_in_another, msg), PTO_OK);
    CHECK_EQ_INT(decode_program(local_of_a_running_loop_used_after_it, msg), PTO_OK);
}

TEST(decoder_limits_names_to_128_bytes)
{
    TestCallableBuilder b;
    tcb_init(&b);
    char name[130];
    memset(name, 'k', 129);
    name[129] = '\0';
    tcb_child(&b, 1, PTO_CORE_AIV, name);
    uint32_t size;
    uint8_t *c = tcb_build(&b, &size);
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    CHECK_EQ_INT(tcb_decode(c, msg), PTO_ERR_BAD_CALLABLE);
    CHECK_CONTAINS(msg, "name is 129 bytes long, the limit is 128");
    free(c);
    tcb_free(&b);
}

TEST(fnv1a64_matches_the_reference_vectors)
{
    CHECK(pto_fnv1a64("", 0) == 0xcbf29ce484222325ull);
    CHECK(pto_fnv1a64("a", 1) == 0xaf63dc4c8601ec8cull);
    CHECK(pto_fnv1a64("foobar", 6) == 0x85944171f73967e8ull);
}

TEST(builtin_kernel_names_are_known_exactly)
{
    CHECK(pto_builtin_kernel_known("vadd", 4));
    CHECK(pto_builtin_kernel_known("noop", 4));
    CHECK(!pto_builtin_kernel_known("vad", 3));
    CHECK(!pto_builtin_kernel_known("vaddx", 5));
    CHECK(!pto_builtin_kernel_known("malloc", 6));
}

/* Found by the fuzz target (src/test/fuzz, docs/hardening.md): a caller that
   grows the header's total_size between registration's validation and its
   private copy made the decoder trust the new size and read past the copy,
   which holds only the validated bytes (a heap overflow under the asan target).
   Here the changed header also moves the program past those bytes. The copy
   must be refused for its changed total_size before it is decoded. The
   regression input is corpus/chip_callable/regress-private-copy-total-size-grew. */
TEST(private_copy_refuses_a_total_size_changed_after_validation)
{
    uint32_t size;
    uint8_t *valid = tcb_base_callable(&size);
    ChipCallableView v;
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    CHECK_EQ_INT(chip_callable_decode(valid, &v, msg, sizeof msg), PTO_OK);

    uint8_t *changed = malloc(size); /* exactly the validated bytes, as the caller holds them */
    memcpy(changed, valid, size);
    ChipCallableHeader h;
    memcpy(&h, changed, sizeof h);
    h.orchestration.offset = (size + 7u) & ~7u;
    h.orchestration.size = 64;
    h.total_size = h.orchestration.offset + h.orchestration.size;
    memcpy(changed, &h, sizeof h);

    uint8_t *copy = changed; /* must come back NULL */
    ChipCallableView copy_view;
    CHECK_EQ_INT(chip_callable_private_copy(changed, size, &copy, &copy_view), PTO_ERR_BAD_CALLABLE);
    CHECK(copy == NULL);
    CHECK_EQ_INT(copy_view.header.total_size, 0);
    CHECK_CONTAINS(pto_last_error(), "total_size changed");

    /* the unchanged bytes still copy */
    CHECK_EQ_INT(chip_callable_private_copy(valid, size, &copy, &copy_view), PTO_OK);
    CHECK(copy != NULL && memcmp(copy, valid, size) == 0);
    CHECK_EQ_INT(copy_view.header.total_size, size);
    free(copy);
    /* too few bytes for a header: refused without reading any */
    CHECK_EQ_INT(chip_callable_private_copy(valid, 8, &copy, &copy_view), PTO_ERR_BAD_CALLABLE);
    CHECK(copy == NULL);
    free(changed);
    free(valid);
}

/* ---- the static task count ------------------------------------------------- */

static uint64_t task_count_of(TestCallableBuilder *b)
{
    uint32_t size;
    uint8_t *c = tcb_build(b, &size);
    tcb_free(b);
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    ChipCallableView v;
    uint64_t tasks = 0xBAD;
    if (chip_callable_decode(c, &v, msg, sizeof msg) == PTO_OK)
        tasks = chip_program_task_count(&v);
    else
        fprintf(stderr, "decode: %s\n", msg);
    free(c);
    return tasks;
}

static void submit_adds(TestCallableBuilder *b)
{
    PtoProgramParam adds[] = { tcb_tensor(2, PTO_ARG_IN, 0, 64), tcb_tensor(2, PTO_ARG_OUT, 0, 64),
                               tcb_scalar_arg(0) };
    tcb_submit(b, 2, adds, 3);
}

TEST(program_task_count_is_each_submit_times_its_loops_trip_counts)
{
    TestCallableBuilder b;
    tcb_base_program(&b); /* two SUBMITs */
    CHECK_EQ_INT(task_count_of(&b), 2);

    /* 2 + 5 * (1 + 0 * 1 + 3 * 2) = 37 */
    tcb_base_program(&b);
    tcb_loop(&b, 5);
    submit_adds(&b);
    tcb_loop(&b, 0);
    submit_adds(&b);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_loop(&b, 3);
    submit_adds(&b);
    submit_adds(&b);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_END_LOOP);
    CHECK_EQ_INT(task_count_of(&b), 37);

    /* four loops of 2^16 around one SUBMIT: 2^64 does not fit, it saturates */
    tcb_base_program(&b);
    for (int d = 0; d < 4; d++)
        tcb_loop(&b, 1ull << 16);
    submit_adds(&b);
    for (int d = 0; d < 4; d++)
        tcb_insn(&b, PTO_OP_END_LOOP);
    CHECK(task_count_of(&b) == UINT64_MAX);

    /* ... but a loop of count 0 inside zeroes what the outer loops multiplied */
    tcb_base_program(&b);
    tcb_loop(&b, (uint64_t)INT64_MAX);
    tcb_loop(&b, (uint64_t)INT64_MAX);
    tcb_loop(&b, 0);
    submit_adds(&b);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_END_LOOP);
    CHECK_EQ_INT(task_count_of(&b), 2);

    /* a sum that overflows saturates too, and loops around nothing add nothing */
    tcb_base_program(&b);
    tcb_loop(&b, (uint64_t)INT64_MAX);
    submit_adds(&b);
    submit_adds(&b);
    submit_adds(&b);
    tcb_insn(&b, PTO_OP_END_LOOP);
    CHECK(task_count_of(&b) == UINT64_MAX);
    tcb_base_program(&b);
    tcb_loop(&b, (uint64_t)INT64_MAX);
    tcb_insn(&b, PTO_OP_END_LOOP);
    CHECK_EQ_INT(task_count_of(&b), 2);
}
