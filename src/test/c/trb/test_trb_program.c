/* Program orchestrations on trb: the shared interpreter runs on the device.
 * Golden results against C references computed with the kernels' documented
 * operation order (docs/kernels.md), degenerate runs, run-time refusals by the
 * interpreter, and the dependency-graph file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/last_error.h"
#include "ptest.h"
#include "test_sim.h"
#include "trb_fixture.h"

static int same_bits(const float *a, const float *b, uint32_t n)
{
    return memcmp(a, b, (size_t)n * sizeof(float)) == 0;
}

static CallConfig tiny_rings(void)
{
    CallConfig cfg = test_config(20000);
    for (int i = 0; i < PTO_TRB_RING_COUNT; i++) {
        cfg.ring_task_window[i] = 4;
        cfg.ring_heap[i] = 1024;
        cfg.ring_dep_pool[i] = 4;
    }
    return cfg;
}

/* ---- the vector chain ------------------------------------------------------------------- */

enum { A, B, S, P, Q, R, F, CHAIN_TENSORS };

/* f = (a+b+1)*(a+b+2)+(a+b); fault_bytes shrinks r = p*q's first input. */
static RuntimeCallable *chain_program(Runner *r, uint32_t n, uint32_t fault_bytes)
{
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[CHAIN_TENSORS] = { PTO_ARG_IN,  PTO_ARG_IN,  PTO_ARG_INOUT, PTO_ARG_OUT,
                                         PTO_ARG_OUT, PTO_ARG_OUT, PTO_ARG_OUT };
    tcb_signature(&b, sig, CHAIN_TENSORS);
    trb_children(&b);
    int64_t bytes = (int64_t)n * 4;
    PtoProgramParam t0[] = { tcb_tensor(A, PTO_ARG_IN, 0, bytes), tcb_tensor(B, PTO_ARG_IN, 0, bytes),
                             tcb_tensor(S, PTO_ARG_OUT, 0, bytes) };
    PtoProgramParam t1[] = { tcb_tensor(S, PTO_ARG_IN, 0, bytes), tcb_tensor(P, PTO_ARG_OUT, 0, bytes), tcb_f32(1.0f) };
    PtoProgramParam t2[] = { tcb_tensor(S, PTO_ARG_IN, 0, bytes), tcb_tensor(Q, PTO_ARG_OUT, 0, bytes), tcb_f32(2.0f) };
    PtoProgramParam t3[] = { tcb_tensor(P, PTO_ARG_IN, 0, fault_bytes ? fault_bytes : bytes),
                             tcb_tensor(Q, PTO_ARG_IN, 0, bytes), tcb_tensor(R, PTO_ARG_OUT, 0, bytes) };
    PtoProgramParam t4[] = { tcb_tensor(R, PTO_ARG_IN, 0, bytes), tcb_tensor(S, PTO_ARG_IN, 0, bytes),
                             tcb_tensor(F, PTO_ARG_OUT, 0, bytes) };
    tcb_submit(&b, FN_VADD, t0, 3);
    tcb_submit(&b, FN_VADDS, t1, 3);
    tcb_submit(&b, FN_VADDS, t2, 3);
    tcb_submit(&b, FN_VMUL, t3, 3);
    tcb_submit(&b, FN_VADD, t4, 3);
    return trb_register_built(r, &b);
}

static float *chain_args(ChipStorageTaskArgs *a, uint32_t n, uint32_t seed)
{
    float *t = malloc((size_t)CHAIN_TENSORS * n * sizeof(float));
    a->tensor_count = CHAIN_TENSORS;
    for (int i = 0; i < CHAIN_TENSORS; i++) {
        for (uint32_t j = 0; j < n; j++)
            t[i * n + j] = -777.0f;
        a->tensors[i] = test_f32_tensor(t + i * n, n);
    }
    trb_fill(t, n, seed);
    trb_fill(t + n, n, seed + 100);
    return t;
}

static int chain_good(const float *t, uint32_t n)
{
    for (uint32_t j = 0; j < n; j++) {
        float s = t[j] + t[n + j], p = s + 1.0f, q = s + 2.0f, r = p * q, f = r + s;
        float want[CHAIN_TENSORS] = { t[j], t[n + j], s, p, q, r, f };
        for (int i = S; i < CHAIN_TENSORS; i++)
            if (memcmp(&want[i], &t[i * n + j], sizeof(float)) != 0)
                return 0;
    }
    return 1;
}

TEST(trb_program_vector_chain_matches_the_c_reference_bit_for_bit)
{
    Runner *r = trb_runner();
    const uint32_t sizes[] = { 1, 7, 1000, 65536 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        RuntimeCallable *c = chain_program(r, sizes[i], 0);
        ChipStorageTaskArgs *a = test_args();
        float *t = chain_args(a, sizes[i], (uint32_t)i);
        CallConfig cfg = i % 2 ? tiny_rings() : test_config(20000);
        CHECK_EQ_INT(test_run(r, c, (uint32_t)i % 2, a, &cfg, NULL), PTO_OK);
        CHECK(chain_good(t, sizes[i]));
        free(t);
        free(a);
        trb_release(r, c);
    }
    runner_destroy(r);
}

TEST(trb_program_kernel_fault_names_the_task_and_the_next_run_works)
{
    Runner *r = trb_runner();
    RuntimeCallable *bad = chain_program(r, 64, 8), *good = chain_program(r, 64, 0);
    ChipStorageTaskArgs *a = test_args();
    float *t = chain_args(a, 64, 5);
    CallConfig cfg = test_config(20000);
    int exec_rc = 0;
    CHECK_EQ_INT(test_run(r, bad, 0, a, &cfg, &exec_rc), PTO_ERR_KERNEL_FAULT);
    CHECK_EQ_INT(exec_rc, PTO_ERR_KERNEL_FAULT);
    CHECK_CONTAINS(pto_last_error(), "kernel fault: task 3 (func_id 3, kernel 'vmul') returned 2 (a view is too small)");
    CHECK(t[S * 64] == -777.0f && t[F * 64 + 63] == -777.0f); /* nothing copied back */
    CHECK_EQ_INT(test_run(r, good, 0, a, &cfg, NULL), PTO_OK);
    CHECK(chain_good(t, 64));
    free(t);
    free(a);
    trb_release(r, bad);
    trb_release(r, good);
    runner_destroy(r);
}

/* ---- loops, locals and scopes ----------------------------------------------------------- */

enum { TILE = 64, TILES = 5, N = TILE * TILES };

static PtoProgramParam tile_view(uint32_t arg, uint8_t dir, int64_t tile_bytes, uint32_t loop_depth)
{
    PtoProgramParam p = tcb_tensor(arg, dir, 0, tile_bytes);
    p.offset.coef[loop_depth] = tile_bytes;
    return p;
}

/* In a scope (ring 1): out[t] = x[t] * w[t] + 1 per tile through local 0,
   each tile in a nested scope; in a sibling scope (ring 1 again, reusing the
   freed heap): each tile of out copied through local 2 and back; at run level
   (ring 0): twice over all tiles out += x through local 1; a zero-trip loop. */
static RuntimeCallable *tiled_program(Runner *r)
{
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_IN, PTO_ARG_IN, PTO_ARG_OUT };
    tcb_signature(&b, sig, 3);
    trb_children(&b);
    tcb_child(&b, 7, PTO_CORE_AIV, "tile_add");
    b.local_count = 3;
    const int64_t tb = TILE * 4;
    tcb_insn(&b, PTO_OP_SCOPE_BEGIN);
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
    tcb_insn(&b, PTO_OP_SCOPE_END);

    tcb_insn(&b, PTO_OP_SCOPE_BEGIN);
    tcb_alloc(&b, 2, tb);
    tcb_loop(&b, TILES);
    PtoProgramParam out_copy[] = { tile_view(2, PTO_ARG_IN, tb, 0), tcb_local(2, PTO_ARG_OUT, 0, tb) };
    tcb_submit(&b, FN_VCOPY, out_copy, 2);
    PtoProgramParam back[] = { tcb_local(2, PTO_ARG_IN, 0, tb), tile_view(2, PTO_ARG_OUT, tb, 0) };
    tcb_submit(&b, FN_VCOPY, back, 2);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_SCOPE_END);

    tcb_alloc(&b, 1, tb);
    tcb_loop(&b, 2);
    tcb_loop(&b, TILES);
    PtoProgramParam copy[] = { tile_view(0, PTO_ARG_IN, tb, 1), tcb_local(1, PTO_ARG_OUT, 0, tb) };
    tcb_submit(&b, FN_VCOPY, copy, 2);
    PtoProgramParam acc[] = { tcb_local(1, PTO_ARG_IN, 0, tb), tile_view(2, PTO_ARG_INOUT, tb, 1) };
    tcb_submit(&b, 7, acc, 2);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_loop(&b, 0);
    PtoProgramParam none[1];
    tcb_submit(&b, FN_NOOP, none, 0);
    tcb_insn(&b, PTO_OP_END_LOOP);
    return trb_register_built(r, &b);
}

static void run_tiled(Runner *r, RuntimeCallable *c, const CallConfig *cfg)
{
    float *x = malloc(N * 4), *w = malloc(N * 4), *out = malloc(N * 4), *want = malloc(N * 4);
    trb_fill(x, N, 1);
    trb_fill(w, N, 2);
    for (uint32_t i = 0; i < N; i++) {
        want[i] = ((x[i] * w[i] + 1.0f) + x[i]) + x[i];
        out[i] = -5.0f;
    }
    ChipStorageTaskArgs *a = test_args();
    a->tensor_count = 3;
    a->tensors[0] = test_f32_tensor(x, N);
    a->tensors[1] = test_f32_tensor(w, N);
    a->tensors[2] = test_f32_tensor(out, N);
    int rc = test_run(r, c, 0, a, cfg, NULL);
    if (rc != PTO_OK)
        fprintf(stderr, "tiled: %s\n", pto_last_error());
    CHECK_EQ_INT(rc, PTO_OK);
    CHECK(same_bits(out, want, N));
    free(a);
    free(x), free(w), free(out), free(want);
}

TEST(trb_program_with_loops_locals_and_scopes_matches_the_reference)
{
    Runner *r = trb_runner();
    RuntimeCallable *c = tiled_program(r);
    CHECK(c != NULL);
    CallConfig defaults = test_config(20000), tiny = tiny_rings();
    for (int round = 0; round < 3; round++) {
        run_tiled(r, c, &defaults);
        run_tiled(r, c, &tiny); /* smallest legal rings: window 4, heap 1024, dependency pool 4 */
    }
    trb_release(r, c);
    runner_destroy(r);
}

/* ---- a tiled batched GEMM and a softmax ---------------------------------------------------- */

enum { GM = 8, GK = 16, GN = 8, BATCH = 2 };
enum { FN_GEMM = 10, FN_TILE_ADD = 11, FN_SOFTMAX = 12 };

/* C[b] = sum over tiles t of A[b][t] . B[b][t], each product through a local
   zeroed by vfill, accumulated into C by tile_add in tile order. */
static RuntimeCallable *gemm_program(Runner *r, uint32_t tiles)
{
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_IN, PTO_ARG_IN, PTO_ARG_OUT };
    tcb_signature(&b, sig, 3);
    trb_children(&b);
    tcb_child(&b, FN_GEMM, PTO_CORE_AIC, "gemm_tile");
    tcb_child(&b, FN_TILE_ADD, PTO_CORE_AIV, "tile_add");
    b.local_count = 1;
    const int64_t a_tile = GM * GK * 4, b_tile = GK * GN * 4, c_bytes = GM * GN * 4;
    tcb_alloc(&b, 0, c_bytes);
    tcb_loop(&b, BATCH);
    tcb_loop(&b, tiles);
    PtoProgramParam zero[] = { tcb_local(0, PTO_ARG_OUT, 0, c_bytes), tcb_f32(0.0f) };
    tcb_submit(&b, FN_VFILL, zero, 2);
    PtoProgramParam mm[] = { tcb_tensor(0, PTO_ARG_IN, 0, a_tile), tcb_tensor(1, PTO_ARG_IN, 0, b_tile),
                             tcb_local(0, PTO_ARG_INOUT, 0, c_bytes), tcb_imm(GM), tcb_imm(GK), tcb_imm(GN) };
    mm[0].offset.coef[0] = a_tile * tiles;
    mm[0].offset.coef[1] = a_tile;
    mm[1].offset.coef[0] = b_tile * tiles;
    mm[1].offset.coef[1] = b_tile;
    tcb_submit(&b, FN_GEMM, mm, 6);
    PtoProgramParam acc[] = { tcb_local(0, PTO_ARG_IN, 0, c_bytes), tile_view(2, PTO_ARG_INOUT, c_bytes, 0) };
    tcb_submit(&b, FN_TILE_ADD, acc, 2);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_END_LOOP);
    return trb_register_built(r, &b);
}

TEST(trb_tiled_batched_gemm_matches_the_reference)
{
    Runner *r = trb_runner();
    const uint32_t tile_counts[] = { 1, 2, 5 };
    for (size_t k = 0; k < 3; k++) {
        uint32_t tiles = tile_counts[k];
        RuntimeCallable *c = gemm_program(r, tiles);
        CHECK(c != NULL);
        uint32_t na = BATCH * tiles * GM * GK, nb = BATCH * tiles * GK * GN, nc = BATCH * GM * GN;
        float *a = malloc(na * 4), *bm = malloc(nb * 4), *out = malloc(nc * 4), *want = calloc(nc, 4);
        trb_fill(a, na, 3);
        trb_fill(bm, nb, 4);
        for (uint32_t bt = 0; bt < BATCH; bt++)
            for (uint32_t t = 0; t < tiles; t++) {
                const float *at = a + (bt * tiles + t) * GM * GK, *btile = bm + (bt * tiles + t) * GK * GN;
                for (uint32_t i = 0; i < GM; i++)
                    for (uint32_t j = 0; j < GN; j++) {
                        float acc = 0.0f;
                        for (uint32_t q = 0; q < GK; q++)
                            acc = acc + at[i * GK + q] * btile[q * GN + j];
                        want[bt * GM * GN + i * GN + j] = want[bt * GM * GN + i * GN + j] + acc;
                    }
            }
        ChipStorageTaskArgs *args = test_args();
        args->tensor_count = 3;
        args->tensors[0] = test_f32_tensor(a, na);
        args->tensors[1] = test_f32_tensor(bm, nb);
        args->tensors[2] = test_f32_tensor(out, nc);
        CallConfig cfg = k == 2 ? tiny_rings() : test_config(20000);
        int rc = test_run(r, c, 0, args, &cfg, NULL);
        if (rc != PTO_OK)
            fprintf(stderr, "gemm: %s\n", pto_last_error());
        CHECK_EQ_INT(rc, PTO_OK);
        CHECK(same_bits(out, want, nc));
        free(args);
        free(a), free(bm), free(out), free(want);
        trb_release(r, c);
    }
    runner_destroy(r);
}

enum { ROWS = 10, COLS = 37, ROWS_PER_TASK = 2 };

TEST(trb_row_softmax_matches_the_reference)
{
    Runner *r = trb_runner();
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_IN, PTO_ARG_OUT };
    tcb_signature(&b, sig, 2);
    trb_children(&b);
    tcb_child(&b, FN_SOFTMAX, PTO_CORE_AIV, "softmax_rows");
    const int64_t block = ROWS_PER_TASK * COLS * 4;
    tcb_loop(&b, ROWS / ROWS_PER_TASK);
    PtoProgramParam sm[] = { tile_view(0, PTO_ARG_IN, block, 0), tile_view(1, PTO_ARG_OUT, block, 0), tcb_imm(COLS) };
    tcb_submit(&b, FN_SOFTMAX, sm, 3);
    tcb_insn(&b, PTO_OP_END_LOOP);
    RuntimeCallable *c = trb_register_built(r, &b);
    float a[ROWS * COLS], out[ROWS * COLS], want[ROWS * COLS];
    trb_fill(a, ROWS * COLS, 8);
    for (uint32_t row = 0; row < ROWS; row++) {
        const float *x = a + row * COLS;
        float m = x[0];
        for (uint32_t i = 1; i < COLS; i++)
            if (x[i] > m)
                m = x[i];
        float e[COLS], s = 0.0f;
        for (uint32_t i = 0; i < COLS; i++) {
            float d = x[i] - m;
            e[i] = (float)exp((double)d);
            s = s + e[i];
        }
        for (uint32_t i = 0; i < COLS; i++)
            want[row * COLS + i] = e[i] / s;
    }
    ChipStorageTaskArgs *args = test_args();
    args->tensor_count = 2;
    args->tensors[0] = test_f32_tensor(a, ROWS * COLS);
    args->tensors[1] = test_f32_tensor(out, ROWS * COLS);
    CallConfig cfg = test_config(20000);
    CHECK_EQ_INT(test_run(r, c, 0, args, &cfg, NULL), PTO_OK);
    CHECK(same_bits(out, want, ROWS * COLS));
    free(args);
    trb_release(r, c);
    runner_destroy(r);
}

/* ---- degenerate runs and run-time refusals --------------------------------------------------- */

TEST(trb_zero_task_programs_and_zero_byte_tensors_complete)
{
    Runner *r = trb_runner();
    const uint8_t sig[] = { PTO_ARG_IN, PTO_ARG_OUT };
    TestCallableBuilder b;
    tcb_init(&b);
    tcb_signature(&b, sig, 2);
    trb_children(&b);
    RuntimeCallable *empty = trb_register_built(r, &b);
    tcb_init(&b);
    tcb_signature(&b, sig, 2);
    trb_children(&b);
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, 0, 0), tcb_tensor(1, PTO_ARG_OUT, 0, 0) };
    tcb_submit(&b, FN_VCOPY, p, 2);
    tcb_submit(&b, FN_VCOPY, p, 2);
    b.local_count = 1;
    tcb_alloc(&b, 0, 0);
    PtoProgramParam q[] = { tcb_local(0, PTO_ARG_IN, 0, 0), tcb_tensor(1, PTO_ARG_OUT, 0, 0) };
    tcb_submit(&b, FN_VCOPY, q, 2);
    RuntimeCallable *zero_views = trb_register_built(r, &b);
    float a[1] = { 1.0f }, c[1] = { 2.0f };
    ChipStorageTaskArgs *args = test_args();
    args->tensor_count = 2;
    args->tensors[0] = test_f32_tensor(a, 0);
    args->tensors[1] = test_f32_tensor(c, 0);
    CallConfig cfgs[] = { test_config(20000), tiny_rings() };
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 20; i++) {
            CHECK_EQ_INT(test_run(r, empty, 0, args, &cfgs[k], NULL), PTO_OK);
            CHECK_EQ_INT(test_run(r, zero_views, 0, args, &cfgs[k], NULL), PTO_OK);
        }
    CHECK(c[0] == 2.0f);
    free(args);
    trb_release(r, empty);
    trb_release(r, zero_views);
    runner_destroy(r);
}

TEST(trb_interpreter_refusals_on_the_device_name_the_instruction)
{
    Runner *r = trb_runner();
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_OUT };
    tcb_signature(&b, sig, 1);
    trb_children(&b);
    PtoProgramParam ok[] = { tcb_tensor(0, PTO_ARG_OUT, 0, 64), tcb_f32(1.0f) };
    tcb_submit(&b, FN_VFILL, ok, 2);
    PtoProgramParam far[] = { tcb_tensor(0, PTO_ARG_OUT, 4096, 64), tcb_f32(1.0f) };
    tcb_submit(&b, FN_VFILL, far, 2);
    RuntimeCallable *c = trb_register_built(r, &b);
    float x[64];
    ChipStorageTaskArgs *args = test_args();
    args->tensor_count = 1;
    args->tensors[0] = test_f32_tensor(x, 64); /* 256 bytes: the second view is outside */
    CallConfig cfg = test_config(20000);
    int exec_rc = 0;
    CHECK_EQ_INT(test_run(r, c, 0, args, &cfg, &exec_rc), PTO_ERR_BAD_CALLABLE);
    CHECK_EQ_INT(exec_rc, PTO_ERR_BAD_CALLABLE);
    CHECK_CONTAINS(pto_last_error(), "instruction 1");
    CHECK_CONTAINS(pto_last_error(), "orchestration failed at task 1");
    /* bigger tensors: fine */
    float y[2048];
    args->tensors[0] = test_f32_tensor(y, 2048);
    CHECK_EQ_INT(test_run(r, c, 0, args, &cfg, NULL), PTO_OK);
    CHECK(y[0] == 1.0f && y[1024 + 15] == 1.0f);
    free(args);
    trb_release(r, c);
    runner_destroy(r);
}

/* ---- requests no ring can ever hold ------------------------------------------------------------ */

TEST(trb_program_requests_that_can_never_fit_are_capacity_errors)
{
    Runner *r = trb_runner();
    /* five producers into one consumer, dependency pool 4 */
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_OUT, PTO_ARG_OUT };
    tcb_signature(&b, sig, 2);
    trb_children(&b);
    tcb_loop(&b, 5);
    PtoProgramParam one[] = { tcb_tensor(0, PTO_ARG_OUT, 0, 4), tcb_f32(1.0f) };
    one[0].offset.coef[0] = 4;
    tcb_submit(&b, FN_VFILL, one, 2);
    tcb_insn(&b, PTO_OP_END_LOOP);
    PtoProgramParam all[] = { tcb_tensor(0, PTO_ARG_IN, 0, 20), tcb_tensor(1, PTO_ARG_OUT, 0, 20) };
    tcb_submit(&b, FN_VCOPY, all, 2);
    RuntimeCallable *fan_in = trb_register_built(r, &b);
    /* a local larger than its ring's heap */
    tcb_init(&b);
    tcb_signature(&b, sig, 2);
    trb_children(&b);
    b.local_count = 1;
    tcb_insn(&b, PTO_OP_SCOPE_BEGIN);
    tcb_alloc(&b, 0, 2048);
    PtoProgramParam use[] = { tcb_local(0, PTO_ARG_OUT, 0, 2048), tcb_f32(1.0f) };
    tcb_submit(&b, FN_VFILL, use, 2);
    tcb_insn(&b, PTO_OP_SCOPE_END);
    RuntimeCallable *big = trb_register_built(r, &b);

    float x[8], y[8] = { -1, -1, -1, -1, -1, -1, -1, -1 };
    ChipStorageTaskArgs *args = test_args();
    args->tensor_count = 2;
    args->tensors[0] = test_f32_tensor(x, 8);
    args->tensors[1] = test_f32_tensor(y, 8);
    CallConfig tiny = tiny_rings(), roomy = tiny_rings();
    roomy.ring_dep_pool[0] = 8;
    roomy.ring_heap[1] = 4096;
    CHECK_EQ_INT(test_run(r, fan_in, 0, args, &tiny, NULL), PTO_ERR_CAPACITY);
    CHECK_CONTAINS(pto_last_error(), "more than 4 producers");
    CHECK(y[0] == -1.0f);
    CHECK_EQ_INT(test_run(r, fan_in, 0, args, &roomy, NULL), PTO_OK);
    CHECK(y[0] == 1.0f && y[4] == 1.0f);
    CHECK_EQ_INT(test_run(r, big, 0, args, &tiny, NULL), PTO_ERR_CAPACITY);
    CHECK_CONTAINS(pto_last_error(), "2048 bytes can never fit ring 1's heap of 1024 bytes");
    CHECK_EQ_INT(test_run(r, big, 0, args, &roomy, NULL), PTO_OK);
    free(args);
    trb_release(r, fan_in);
    trb_release(r, big);
    runner_destroy(r);
}

/* ---- the dependency-graph file ----------------------------------------------------------------- */

static const char DIAMOND_DOT[] = "digraph ptorun_run {\n"
                                  "  t0 [label=\"0 f5\"];\n"
                                  "  t1 [label=\"1 f2\"];\n"
                                  "  t2 [label=\"2 f2\"];\n"
                                  "  t3 [label=\"3 f1\"];\n"
                                  "  t0 -> t1;\n"
                                  "  t0 -> t2;\n"
                                  "  t1 -> t3;\n"
                                  "  t2 -> t3;\n"
                                  "}\n";

TEST(trb_writes_the_dependency_graph_at_finalize)
{
    Runner *r = trb_runner();
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_OUT, PTO_ARG_OUT, PTO_ARG_OUT, PTO_ARG_OUT };
    tcb_signature(&b, sig, 4);
    trb_children(&b);
    PtoProgramParam t0[] = { tcb_tensor(0, PTO_ARG_OUT, 0, 64), tcb_f32(2.0f) };
    PtoProgramParam t1[] = { tcb_tensor(0, PTO_ARG_IN, 0, 64), tcb_tensor(1, PTO_ARG_OUT, 0, 64), tcb_f32(1.0f) };
    PtoProgramParam t2[] = { tcb_tensor(0, PTO_ARG_IN, 0, 64), tcb_tensor(2, PTO_ARG_OUT, 0, 64), tcb_f32(3.0f) };
    PtoProgramParam t3[] = { tcb_tensor(1, PTO_ARG_IN, 0, 64), tcb_tensor(2, PTO_ARG_IN, 0, 64),
                             tcb_tensor(3, PTO_ARG_OUT, 0, 64) };
    tcb_submit(&b, FN_VFILL, t0, 2);
    tcb_submit(&b, FN_VADDS, t1, 3);
    tcb_submit(&b, FN_VADDS, t2, 3);
    tcb_submit(&b, FN_VADD, t3, 3);
    RuntimeCallable *c = trb_register_built(r, &b);
    float t[4][16];
    ChipStorageTaskArgs *args = test_args();
    args->tensor_count = 4;
    for (int i = 0; i < 4; i++)
        args->tensors[i] = test_f32_tensor(t[i], 16);
    char dir[64] = "/tmp/ptorun_trb_XXXXXX", path[256];
    CHECK(mkdtemp(dir) != NULL);
    CallConfig cfg = tiny_rings();
    cfg.enable_dep_graph = 1;
    snprintf(cfg.output_prefix, sizeof cfg.output_prefix, "%s", dir);
    NativeRunDescriptor desc = { .run_id = 3, .run_epoch = 44 };
    size_t committed = runner_committed_bytes(r);
    CHECK_EQ_INT(test_run_desc(r, c, 0, args, &cfg, &desc, NULL), PTO_OK);
    CHECK(t[3][15] == 8.0f);
    snprintf(path, sizeof path, "%s/dep_graph_3_44.dot", dir);
    FILE *f = fopen(path, "rb");
    char text[1024] = { 0 };
    if (f != NULL) {
        CHECK(fread(text, 1, sizeof text - 1, f) > 0);
        fclose(f);
    }
    CHECK(strcmp(text, DIAMOND_DOT) == 0);
    if (strcmp(text, DIAMOND_DOT) != 0)
        fprintf(stderr, "  got:\n%s", text);
    unlink(path);
    rmdir(dir);
    /* the graph buffer was the run's: gone with it (retained buffer and image stay) */
    CHECK(runner_committed_bytes(r) >= committed);
    size_t after_first = runner_committed_bytes(r);
    desc.run_epoch = 45;
    CHECK_EQ_INT(test_run_desc(r, c, 0, args, &cfg, &desc, NULL), PTO_OK);
    CHECK_EQ_INT(runner_committed_bytes(r), after_first);
    snprintf(path, sizeof path, "%s/dep_graph_3_45.dot", dir);
    unlink(path);
    rmdir(dir);
    free(args);
    trb_release(r, c);
    runner_destroy(r);
}

/* trb streams any number of tasks, but a diagnostic run's dependency graph
   records at most 2^16: a program with more is refused at bind, before its
   first task, naming the count and the limit; without the graph it runs. */
TEST(trb_a_dependency_graph_run_refuses_more_tasks_than_the_graph_records_before_any)
{
    Runner *r = trb_runner();
    TestCallableBuilder b;
    tcb_init(&b);
    trb_children(&b);
    tcb_loop(&b, 2);
    tcb_loop(&b, (1u << 15) + 1);
    PtoProgramParam none[1];
    tcb_submit(&b, FN_NOOP, none, 0);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_END_LOOP);
    RuntimeCallable *c = trb_register_built(r, &b);
    ChipStorageTaskArgs *args = test_args();
    CallConfig cfg = test_config(20000);
    cfg.enable_dep_graph = 1;
    snprintf(cfg.output_prefix, sizeof cfg.output_prefix, "/nonexistent/ptorun_never_written");
    size_t committed = runner_committed_bytes(r);
    CHECK_EQ_INT(test_run(r, c, 0, args, &cfg, NULL), PTO_ERR_CAPACITY);
    CHECK_CONTAINS(pto_last_error(), "bind: the program submits 65538 tasks");
    CHECK_CONTAINS(pto_last_error(), "the dependency graph (CallConfig.enable_dep_graph) records at most 65536 tasks");
    CHECK_EQ_INT(runner_committed_bytes(r), committed); /* nothing staged, no graph buffer */
    cfg.enable_dep_graph = 0;
    CHECK_EQ_INT(test_run(r, c, 0, args, &cfg, NULL), PTO_OK);
    free(args);
    trb_release(r, c);
    runner_destroy(r);
}
