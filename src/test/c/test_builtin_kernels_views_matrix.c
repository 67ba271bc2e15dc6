/* gemm_tile, reduce_sum, reduce_max and softmax_rows on strided views
 * (docs/kernels.md, "Strided views"): each equals a plain sequential reference
 * in the documented order bit for bit, and malformed tasks are refused with
 * their codes, writing nothing. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ptest.h"
#include "test_kernel_views.h"

/* ---- gemm_tile -------------------------------------------------------------------- */

/* C[i][j] (ldc) += sum over p of A[i][p] * B[p][j], A and B through element
   strides, in the documented order. */
static void ref_gemm(const float *a, uint64_t ar, uint64_t ac, const float *b, uint64_t br, uint64_t bc, float *c,
                     uint64_t cr, uint32_t m, uint32_t k, uint32_t n)
{
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t j = 0; j < n; j++) {
            float acc = c[i * cr + j];
            for (uint32_t p = 0; p < k; p++)
                acc = acc + a[i * ar + p * ac] * b[p * br + j * bc];
            c[i * cr + j] = acc;
        }
}

/* A tile of C (rows 3..7, columns 29..36 of an 11 x 37 matrix: a tail tile)
   += A[5 x 13] * B, B given transposed (stored N x K row-major). */
TEST(views_gemm_tile_with_a_transposed_b_into_a_tail_tile)
{
    enum { M = 5, K = 13, N = 8, LDC = 37 };
    static float a[M * K], bt[N * K], c[11 * LDC], want[11 * LDC];
    kv_fill(a, M * K, 21);
    kv_fill(bt, N * K, 22);
    kv_fill(c, 11 * LDC, 23);
    memcpy(want, c, sizeof c);
    float *ct = c + 3 * LDC + 29;
    ref_gemm(a, K, 1, bt, 1, K, want + 3 * LDC + 29, LDC, M, K, N);
    PtoTensorView v[3] = { kv_2d(a, PTO_DTYPE_F32, M, K, K, 1), kv_2d(bt, PTO_DTYPE_F32, K, N, 1, K),
                           kv_2d(ct, PTO_DTYPE_F32, M, N, LDC, 1) };
    uint64_t args[] = { P(a), P(bt), P(ct) };
    CHECK_EQ_INT(kv_call("gemm_tile", PTO_CORE_AIC, 3, args, v), PTO_KERNEL_OK);
    CHECK(kv_same_bits(c, want, 11 * LDC));
}

/* K = 37 split 16 + 21 across two calls over column tiles of a row-major A
   and row tiles of B: the second call carries on each element's sum, so C
   equals the one-call reference. */
TEST(views_gemm_tile_split_over_k_accumulates_like_one_call)
{
    enum { M = 11, K = 37, N = 6, K1 = 16 };
    static float a[M * K], b[K * N], c[M * N], want[M * N];
    kv_fill(a, M * K, 24);
    kv_fill(b, K * N, 25);
    kv_fill(c, M * N, 26);
    memcpy(want, c, sizeof c);
    ref_gemm(a, K, 1, b, N, 1, want, N, M, K, N);
    for (int half = 0; half < 2; half++) {
        uint64_t k0 = half == 0 ? 0 : K1, kn = half == 0 ? K1 : K - K1;
        PtoTensorView v[3] = { kv_2d(a + k0, PTO_DTYPE_F32, M, kn, K, 1), kv_2d(b + k0 * N, PTO_DTYPE_F32, kn, N, N, 1),
                               kv_2d(c, PTO_DTYPE_F32, M, N, N, 1) };
        uint64_t args[] = { P(a + k0), P(b + k0 * N), P(c) };
        CHECK_EQ_INT(kv_call("gemm_tile", PTO_CORE_AIC, 3, args, v), PTO_KERNEL_OK);
    }
    CHECK(kv_same_bits(c, want, M * N));
    /* K = 0 leaves C as it is */
    PtoTensorView e[3] = { kv_2d(a, PTO_DTYPE_F32, M, 0, K, 1), kv_2d(b, PTO_DTYPE_F32, 0, N, N, 1),
                           kv_2d(c, PTO_DTYPE_F32, M, N, N, 1) };
    uint64_t eargs[] = { P(a), P(b), P(c) };
    CHECK_EQ_INT(kv_call("gemm_tile", PTO_CORE_AIC, 3, eargs, e), PTO_KERNEL_OK);
    CHECK(kv_same_bits(c, want, M * N));
}

/* ---- reductions ------------------------------------------------------------------- */

/* Reduces a (rows x cols, element strides rs, cs) along dim into c (cr, cc). */
static void ref_reduce(int is_max, const float *a, uint32_t rows, uint32_t cols, uint64_t rs, uint64_t cs, int dim,
                       float *c, uint64_t cr, uint64_t cc)
{
    uint32_t outer = dim == 0 ? cols : rows, along = dim == 0 ? rows : cols;
    for (uint32_t o = 0; o < outer; o++) {
        float acc = is_max ? -INFINITY : 0.0f;
        for (uint32_t i = 0; i < along; i++) {
            float x = dim == 0 ? a[i * rs + o * cs] : a[o * rs + i * cs];
            acc = i == 0 ? x : is_max ? kv_max(acc, x) : acc + x;
        }
        if (dim == 0)
            c[o * cc] = acc;
        else
            c[o * cr] = acc;
    }
}

TEST(views_reductions_along_dim_0_and_1_of_3x5_and_of_a_strided_tile)
{
    static float m[11 * 37];
    kv_fill(m, 11 * 37, 27);
    m[5] = NAN; /* reduce_max: a NaN wins from where it appears on */
    const char *names[] = { "reduce_sum", "reduce_max" };
    for (int is_max = 0; is_max < 2; is_max++)
        for (int tile = 0; tile < 2; tile++)
            for (int dim = 0; dim < 2; dim++) {
                /* a dense 3 x 5, or the 4 x 6 tile at rows 2.., columns 30.. of 11 x 37 */
                const float *a = tile ? m + 2 * 37 + 30 : m;
                uint32_t rows = tile ? 4 : 3, cols = tile ? 6 : 5;
                uint64_t rs = tile ? 37 : 5;
                /* the output: 2 elements apart, to show its strides are honoured */
                float c[16], want[16];
                for (int i = 0; i < 16; i++)
                    c[i] = want[i] = -3.0f;
                uint64_t cshape0 = dim == 0 ? 1 : rows, cshape1 = dim == 0 ? cols : 1;
                uint64_t cr = dim == 0 ? 0 : 2, cc = dim == 0 ? 2 : 0;
                ref_reduce(is_max, a, rows, cols, rs, 1, dim, want, cr, cc);
                PtoTensorView v[3] = { kv_2d(a, PTO_DTYPE_F32, rows, cols, rs, 1),
                                       kv_2d(c, PTO_DTYPE_F32, cshape0, cshape1, cr, cc), { 0 } };
                uint64_t args[] = { P(a), P(c), (uint64_t)dim };
                CHECK_EQ_INT(kv_call(names[is_max], PTO_CORE_AIV, 3, args, v), PTO_KERNEL_OK);
                CHECK(kv_same_bits(c, want, 16));
            }
}

TEST(views_reductions_of_1_d_views_empty_lines_and_whole_views)
{
    float a[9], c[2];
    kv_fill(a, 9, 28);
    /* 1-D, every other element, along dim 0 */
    float sum = a[0], max = a[0];
    for (int i = 2; i < 9; i += 2) {
        sum = sum + a[i];
        max = kv_max(max, a[i]);
    }
    PtoTensorView v[3] = { kv_view(a, PTO_DTYPE_F32, 1, (uint64_t)5, (uint64_t)2),
                           kv_view(c, PTO_DTYPE_F32, 1, (uint64_t)1, (uint64_t)1), { 0 } };
    uint64_t args[] = { P(a), P(c), 0 };
    CHECK_EQ_INT(kv_call("reduce_sum", PTO_CORE_AIV, 3, args, v), PTO_KERNEL_OK);
    CHECK_EQ_INT(kv_bits(c[0]), kv_bits(sum));
    CHECK_EQ_INT(kv_call("reduce_max", PTO_CORE_AIV, 3, args, v), PTO_KERNEL_OK);
    CHECK_EQ_INT(kv_bits(c[0]), kv_bits(max));
    /* the 2-param form on strided views: the whole view, row-major, into c's first element */
    float grid[6] = { 1.5f, -2.25f, 1e8f, 3.0f, -1e8f, 0.125f }, t_sum, t_max;
    PtoTensorView g[2] = { kv_2d(grid, PTO_DTYPE_F32, 3, 2, 1, 3), kv_view(c, PTO_DTYPE_F32, 1, (uint64_t)2, (uint64_t)1) };
    t_sum = grid[0] + grid[3] + grid[1] + grid[4] + grid[2] + grid[5];
    t_max = kv_max(kv_max(kv_max(kv_max(kv_max(grid[0], grid[3]), grid[1]), grid[4]), grid[2]), grid[5]);
    c[1] = -3.0f;
    uint64_t gargs[] = { P(grid), P(c) };
    CHECK_EQ_INT(kv_call("reduce_sum", PTO_CORE_AIV, 2, gargs, g), PTO_KERNEL_OK);
    CHECK_EQ_INT(kv_bits(c[0]), kv_bits(t_sum));
    CHECK_EQ_INT(kv_call("reduce_max", PTO_CORE_AIV, 2, gargs, g), PTO_KERNEL_OK);
    CHECK_EQ_INT(kv_bits(c[0]), kv_bits(t_max));
    CHECK_EQ_INT(kv_bits(c[1]), kv_bits(-3.0f));
    /* an empty line: +0 for a sum, -inf for a max; an empty output: nothing */
    PtoTensorView e[3] = { kv_2d(a, PTO_DTYPE_F32, 0, 2, 2, 1), kv_2d(c, PTO_DTYPE_F32, 1, 2, 2, 1), { 0 } };
    c[0] = c[1] = -3.0f;
    CHECK_EQ_INT(kv_call("reduce_sum", PTO_CORE_AIV, 3, args, e), PTO_KERNEL_OK);
    CHECK(kv_bits(c[0]) == kv_bits(0.0f) && kv_bits(c[1]) == kv_bits(0.0f));
    CHECK_EQ_INT(kv_call("reduce_max", PTO_CORE_AIV, 3, args, e), PTO_KERNEL_OK);
    CHECK(c[0] == -INFINITY && c[1] == -INFINITY);
    e[0] = kv_2d(a, PTO_DTYPE_F32, 3, 0, 2, 1), e[1] = kv_2d(c, PTO_DTYPE_F32, 1, 0, 2, 1);
    c[0] = -3.0f;
    args[2] = 0;
    CHECK_EQ_INT(kv_call("reduce_sum", PTO_CORE_AIV, 3, args, e), PTO_KERNEL_OK);
    CHECK_EQ_INT(kv_bits(c[0]), kv_bits(-3.0f));
    /* the legacy flat form of reduce_max: -inf for no elements */
    uint64_t sizes[] = { 0, 4 };
    CHECK_EQ_INT(kv_call_sized("reduce_max", PTO_CORE_AIV, 2, gargs, sizes, NULL), PTO_KERNEL_OK);
    CHECK(c[0] == -INFINITY);
    sizes[0] = sizeof grid;
    CHECK_EQ_INT(kv_call_sized("reduce_max", PTO_CORE_AIV, 2, gargs, sizes, NULL), PTO_KERNEL_OK);
    CHECK_EQ_INT(kv_bits(c[0]), kv_bits(1e8f));
}

/* ---- softmax_rows ------------------------------------------------------------------ */

static void ref_softmax_row(const float *x, uint64_t sx, float *y, uint64_t sy, uint32_t cols)
{
    float m = x[0];
    for (uint32_t i = 1; i < cols; i++)
        if (x[i * sx] > m)
            m = x[i * sx];
    float s = 0.0f;
    for (uint32_t i = 0; i < cols; i++) {
        y[i * sy] = (float)exp((double)(x[i * sx] - m));
        s = i == 0 ? y[i * sy] : s + y[i * sy];
    }
    for (uint32_t i = 0; i < cols; i++)
        y[i * sy] = y[i * sy] / s;
}

TEST(views_softmax_rows_on_a_strided_tile_and_on_columns)
{
    enum { R = 11, C = 37 };
    static float a[R * C], c[R * C], want[R * C];
    kv_fill(a, R * C, 29);
    for (int i = 0; i < R * C; i++)
        a[i] = a[i] / 31.0f;
    /* rows 1..9, columns 30..36 (a tail tile), written into the same place of c */
    kv_fill(c, R * C, 30);
    memcpy(want, c, sizeof c);
    int at = 1 * C + 30;
    for (int r = 0; r < 9; r++)
        ref_softmax_row(a + at + r * C, 1, want + at + r * C, 1, 7);
    PtoTensorView v[2] = { kv_2d(a + at, PTO_DTYPE_F32, 9, 7, C, 1), kv_2d(c + at, PTO_DTYPE_F32, 9, 7, C, 1) };
    uint64_t args[] = { P(a + at), P(c + at) };
    CHECK_EQ_INT(kv_call("softmax_rows", PTO_CORE_AIV, 2, args, v), PTO_KERNEL_OK);
    CHECK(kv_same_bits(c, want, R * C));
    /* a transposed view: each "row" is a column of a; in place */
    memcpy(want, a, sizeof a);
    for (int j = 0; j < C; j++)
        ref_softmax_row(want + j, C, want + j, C, R);
    PtoTensorView t[2] = { kv_2d(a, PTO_DTYPE_F32, C, R, 1, C), kv_2d(a, PTO_DTYPE_F32, C, R, 1, C) };
    uint64_t targs[] = { P(a), P(a) };
    CHECK_EQ_INT(kv_call("softmax_rows", PTO_CORE_AIV, 2, targs, t), PTO_KERNEL_OK);
    CHECK(kv_same_bits(a, want, R * C));
    /* no rows: nothing */
    PtoTensorView e[2] = { kv_2d(a, PTO_DTYPE_F32, 0, R, 1, C), kv_2d(c, PTO_DTYPE_F32, 0, R, 1, C) };
    uint64_t eargs[] = { P(a), P(c) };
    CHECK_EQ_INT(kv_call("softmax_rows", PTO_CORE_AIV, 2, eargs, e), PTO_KERNEL_OK);
}

/* ---- refusals ---------------------------------------------------------------------- */

static float out[64];

static void refused(const char *name, uint32_t core, uint32_t nargs, const uint64_t *args, const PtoTensorView *v,
                    int32_t code)
{
    for (int i = 0; i < 64; i++)
        out[i] = -9.0f;
    int32_t rc = kv_call(name, core, nargs, args, v);
    if (rc != code)
        fprintf(stderr, "  %s returned %d, expected %d\n", name, rc, code);
    CHECK_EQ_INT(rc, code);
    for (int i = 0; i < 64; i++)
        CHECK_EQ_INT(kv_bits(out[i]), kv_bits(-9.0f));
}

TEST(views_matrix_and_reduction_refusals_have_their_codes_and_write_nothing)
{
    static float in[64];
    PtoTensorView a = kv_2d(in, PTO_DTYPE_F32, 4, 3, 3, 1), b = kv_2d(in, PTO_DTYPE_F32, 3, 5, 5, 1);
    PtoTensorView c = kv_2d(out, PTO_DTYPE_F32, 4, 5, 5, 1), flat = { 0 };
    uint64_t g[] = { P(in), P(in), P(out), 4, 3, 5 };
    /* gemm_tile: the strided form has 3 params, the flat one 6; AIC only; shapes and dtypes */
    refused("gemm_tile", PTO_CORE_AIC, 6, g, (PtoTensorView[]){ a, b, c, flat, flat, flat }, PTO_KERNEL_ERR_PARAM_COUNT);
    refused("gemm_tile", PTO_CORE_AIC, 3, g, (PtoTensorView[]){ flat, flat, flat }, PTO_KERNEL_ERR_PARAM_COUNT);
    refused("gemm_tile", PTO_CORE_AIV, 3, g, (PtoTensorView[]){ a, b, c }, PTO_KERNEL_ERR_CORE_TYPE);
    refused("gemm_tile", PTO_CORE_AIC, 3, g, (PtoTensorView[]){ a, flat, c }, PTO_KERNEL_ERR_VIEW_KIND);
    refused("gemm_tile", PTO_CORE_AIC, 3, g, (PtoTensorView[]){ a, kv_2d(in, PTO_DTYPE_F32, 4, 5, 5, 1), c },
            PTO_KERNEL_ERR_SHAPE);
    refused("gemm_tile", PTO_CORE_AIC, 3, g, (PtoTensorView[]){ a, b, kv_2d(out, PTO_DTYPE_F32, 4, 4, 5, 1) },
            PTO_KERNEL_ERR_SHAPE);
    PtoTensorView a3 = kv_view(in, PTO_DTYPE_F32, 3, (uint64_t)1, (uint64_t)4, (uint64_t)3, (uint64_t)12,
                               (uint64_t)3, (uint64_t)1);
    refused("gemm_tile", PTO_CORE_AIC, 3, g, (PtoTensorView[]){ a3, b, c }, PTO_KERNEL_ERR_SHAPE);
    PtoTensorView ai = a;
    ai.dtype = PTO_DTYPE_I32;
    refused("gemm_tile", PTO_CORE_AIC, 3, g, (PtoTensorView[]){ ai, b, c }, PTO_KERNEL_ERR_DTYPE);
    refused("gemm_tile", PTO_CORE_AIC, 3, g, (PtoTensorView[]){ a, b, kv_2d(out, PTO_DTYPE_F32, 4, 5, 0, 1) },
            PTO_KERNEL_ERR_OUTPUT_OVERLAP);

    /* reductions: counts, the dim, the output's shape, dtypes, mixing */
    uint64_t r[] = { P(in), P(out), 1, 0 };
    PtoTensorView ra = kv_2d(in, PTO_DTYPE_F32, 3, 5, 5, 1), rc1 = kv_2d(out, PTO_DTYPE_F32, 3, 1, 1, 1);
    const char *names[] = { "reduce_sum", "reduce_max" };
    for (int i = 0; i < 2; i++) {
        refused(names[i], PTO_CORE_AIV, 4, r, (PtoTensorView[]){ ra, rc1, flat, flat }, PTO_KERNEL_ERR_PARAM_COUNT);
        refused(names[i], PTO_CORE_AIV, 1, r, (PtoTensorView[]){ ra }, PTO_KERNEL_ERR_PARAM_COUNT);
        refused(names[i], PTO_CORE_AIV, 3, r, (PtoTensorView[]){ flat, flat, flat }, PTO_KERNEL_ERR_PARAM_COUNT);
        refused(names[i], PTO_CORE_AIV, 3, r, (PtoTensorView[]){ ra, flat, flat }, PTO_KERNEL_ERR_VIEW_KIND);
        refused(names[i], PTO_CORE_AIV, 3, (uint64_t[]){ P(in), P(out), 2 }, (PtoTensorView[]){ ra, rc1, flat },
                PTO_KERNEL_ERR_BAD_SCALAR);
        refused(names[i], PTO_CORE_AIV, 3, (uint64_t[]){ P(in), P(out), 0 }, (PtoTensorView[]){ ra, rc1, flat },
                PTO_KERNEL_ERR_SHAPE);
        refused(names[i], PTO_CORE_AIV, 3, r, (PtoTensorView[]){ ra, kv_view(out, PTO_DTYPE_F32, 1, (uint64_t)3,
                (uint64_t)1), flat }, PTO_KERNEL_ERR_SHAPE);
        PtoTensorView ri = ra;
        ri.dtype = PTO_DTYPE_I32;
        refused(names[i], PTO_CORE_AIV, 3, r, (PtoTensorView[]){ ri, rc1, flat }, PTO_KERNEL_ERR_DTYPE);
        refused(names[i], PTO_CORE_AIV, 3, r, (PtoTensorView[]){ ra, kv_2d(out, PTO_DTYPE_F32, 3, 1, 0, 1), flat },
                PTO_KERNEL_ERR_OUTPUT_OVERLAP);
        refused(names[i], PTO_CORE_AIV, 2, r, (PtoTensorView[]){ ra, kv_2d(out, PTO_DTYPE_F32, 0, 1, 1, 1) },
                PTO_KERNEL_ERR_SHAPE);
    }

    /* softmax_rows: the strided form has 2 params, the flat one 3; shapes, dtypes */
    uint64_t s[] = { P(in), P(out), 5 };
    PtoTensorView sa = kv_2d(in, PTO_DTYPE_F32, 3, 5, 5, 1), sc = kv_2d(out, PTO_DTYPE_F32, 3, 5, 5, 1);
    refused("softmax_rows", PTO_CORE_AIV, 3, s, (PtoTensorView[]){ sa, sc, flat }, PTO_KERNEL_ERR_PARAM_COUNT);
    refused("softmax_rows", PTO_CORE_AIV, 2, s, (PtoTensorView[]){ sa, flat }, PTO_KERNEL_ERR_VIEW_KIND);
    refused("softmax_rows", PTO_CORE_AIV, 2, s, (PtoTensorView[]){ sa, kv_2d(out, PTO_DTYPE_F32, 3, 4, 5, 1) },
            PTO_KERNEL_ERR_SHAPE);
    PtoTensorView sh = sc;
    sh.dtype = PTO_DTYPE_BF16;
    refused("softmax_rows", PTO_CORE_AIV, 2, s, (PtoTensorView[]){ sa, sh }, PTO_KERNEL_ERR_DTYPE);
}
