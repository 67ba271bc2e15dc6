/* The elementwise built-ins on strided views (docs/kernels.md, "Strided
 * views"): tiles of a row-major matrix, tail tiles, transposes, 5-D views,
 * i32 arithmetic, in-place updates and empty views all equal a plain
 * sequential reference walked in row-major order, bit for bit; and every
 * refusal of a malformed view task has its code and writes nothing. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ptest.h"
#include "test_kernel_views.h"

enum { ROWS = 11, COLS = 37, TILE_R = 4, TILE_C = 8 };

typedef enum { B_ADD, B_SUB, B_MUL, B_DIV, B_MAX } BinaryOp;
static const char *const binary_names[] = { "vadd", "vsub", "vmul", "vdiv", "vmax" };

static float ref_binary(BinaryOp op, float a, float b)
{
    switch (op) {
    case B_ADD: return a + b;
    case B_SUB: return a - b;
    case B_MUL: return a * b;
    case B_DIV: return a / b;
    default: return kv_max(a, b);
    }
}

TEST(views_null_and_ndims_0_are_the_flat_forms)
{
    float a[40], b[40], c[40], want[40];
    kv_fill(a, 40, 1);
    kv_fill(b, 40, 2);
    for (int i = 0; i < 40; i++)
        want[i] = a[i] + b[i];
    PtoTensorView flat[3];
    memset(flat, 0, sizeof flat);
    uint64_t args[] = { P(a), P(b), P(c) }, sizes[] = { sizeof a, sizeof b, sizeof c };
    memset(c, 0, sizeof c);
    CHECK_EQ_INT(kv_call_sized("vadd", PTO_CORE_AIV, 3, args, sizes, flat), PTO_KERNEL_OK);
    CHECK(kv_same_bits(c, want, 40));
    memset(c, 0, sizeof c);
    CHECK_EQ_INT(kv_call_sized("vadd", PTO_CORE_AIV, 3, args, sizes, NULL), PTO_KERNEL_OK);
    CHECK(kv_same_bits(c, want, 40));
}

/* Every tile of an 11 x 37 row-major matrix, 4 x 8 with tail tiles of 3 rows
   and 5 columns, through each binary kernel: c equals the reference and a
   single tile's call writes its tile only. */
TEST(views_binary_kernels_on_tiles_of_an_11x37_matrix)
{
    static float a[ROWS * COLS], b[ROWS * COLS], c[ROWS * COLS], want[ROWS * COLS];
    kv_fill(a, ROWS * COLS, 3);
    kv_fill(b, ROWS * COLS, 4);
    b[40] = 0.0f; /* a division by zero */
    a[41] = NAN;
    for (int op = 0; op < 5; op++) {
        for (int i = 0; i < ROWS * COLS; i++) {
            want[i] = ref_binary((BinaryOp)op, a[i], b[i]);
            c[i] = -7.0f;
        }
        for (int r0 = 0; r0 < ROWS; r0 += TILE_R)
            for (int c0 = 0; c0 < COLS; c0 += TILE_C) {
                uint64_t h = ROWS - r0 < TILE_R ? ROWS - r0 : TILE_R, w = COLS - c0 < TILE_C ? COLS - c0 : TILE_C;
                int at = r0 * COLS + c0;
                PtoTensorView v[3] = { kv_2d(a + at, PTO_DTYPE_F32, h, w, COLS, 1),
                                       kv_2d(b + at, PTO_DTYPE_F32, h, w, COLS, 1),
                                       kv_2d(c + at, PTO_DTYPE_F32, h, w, COLS, 1) };
                uint64_t args[] = { P(a + at), P(b + at), P(c + at) };
                CHECK_EQ_INT(kv_call(binary_names[op], PTO_CORE_AIV, 3, args, v), PTO_KERNEL_OK);
                if (r0 == 0 && c0 == 0) /* the first tile wrote its 4 x 8 elements only */
                    for (int i = 0; i < ROWS * COLS; i++)
                        if (i / COLS >= TILE_R || i % COLS >= TILE_C)
                            CHECK_EQ_INT(kv_bits(c[i]), kv_bits(-7.0f));
            }
        CHECK(kv_same_bits(c, want, ROWS * COLS));
    }
}

/* One column tile (all 11 rows, columns 29..36: the 5-wide tail plus 3) through
   every unary kernel, out of place and in place. */
TEST(views_unary_kernels_on_a_column_tile)
{
    static float a[ROWS * COLS], c[ROWS * COLS], want[ROWS * COLS];
    const int c0 = 29, w = COLS - 29;
    const char *names[] = { "vadds", "vmuls", "vexp", "vrelu", "tile_add", "vcopy", "vfill" };
    const float s = 1.375f;
    for (int op = 0; op < 7; op++) {
        kv_fill(a, ROWS * COLS, 5);
        for (int i = 0; i < ROWS * COLS; i++)
            a[i] = op == 2 ? a[i] / 97.0f : a[i];
        kv_fill(c, ROWS * COLS, 6);
        memcpy(want, c, sizeof c);
        for (int r = 0; r < ROWS; r++)
            for (int j = c0; j < COLS; j++) {
                float x = a[r * COLS + j], *y = &want[r * COLS + j];
                switch (op) {
                case 0: *y = x + s; break;
                case 1: *y = x * s; break;
                case 2: *y = (float)exp((double)x); break;
                case 3: *y = kv_max(x, 0.0f); break;
                case 4: *y = *y + x; break;
                case 5: *y = x; break;
                default: *y = s; break;
                }
            }
        PtoTensorView v[3] = { kv_2d(a + c0, PTO_DTYPE_F32, ROWS, w, COLS, 1),
                               kv_2d(c + c0, PTO_DTYPE_F32, ROWS, w, COLS, 1) };
        uint64_t args[] = { P(a + c0), P(c + c0), kv_bits(s) };
        uint32_t nargs = op < 2 ? 3 : 2;
        if (op == 6) { /* vfill(OUT y, SCALAR v) */
            v[0] = v[1];
            memset(&v[1], 0, sizeof v[1]);
            args[0] = args[1];
            args[1] = kv_bits(s);
        }
        CHECK_EQ_INT(kv_call(names[op], PTO_CORE_AIV, nargs, args, v), PTO_KERNEL_OK);
        CHECK(kv_same_bits(c, want, ROWS * COLS));
    }
    /* in place through identical views: a = a + s on the tile */
    kv_fill(a, ROWS * COLS, 7);
    memcpy(want, a, sizeof a);
    for (int r = 0; r < ROWS; r++)
        for (int j = c0; j < COLS; j++)
            want[r * COLS + j] = want[r * COLS + j] + s;
    PtoTensorView same[3] = { kv_2d(a + c0, PTO_DTYPE_F32, ROWS, w, COLS, 1),
                              kv_2d(a + c0, PTO_DTYPE_F32, ROWS, w, COLS, 1) };
    uint64_t in_place[] = { P(a + c0), P(a + c0), kv_bits(s) };
    CHECK_EQ_INT(kv_call("vadds", PTO_CORE_AIV, 3, in_place, same), PTO_KERNEL_OK);
    CHECK(kv_same_bits(a, want, ROWS * COLS));
}

TEST(views_vcopy_of_a_transposed_view_transposes_any_dtype)
{
    static float a[ROWS * COLS], t[COLS * ROWS];
    kv_fill(a, ROWS * COLS, 8);
    memset(t, 0, sizeof t);
    PtoTensorView v[2] = { kv_2d(a, PTO_DTYPE_F32, COLS, ROWS, 1, COLS), kv_2d(t, PTO_DTYPE_F32, COLS, ROWS, ROWS, 1) };
    uint64_t args[] = { P(a), P(t) };
    CHECK_EQ_INT(kv_call("vcopy", PTO_CORE_AIV, 2, args, v), PTO_KERNEL_OK);
    int ok = 1;
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < COLS; j++)
            ok &= kv_bits(t[j * ROWS + i]) == kv_bits(a[i * COLS + j]);
    CHECK(ok);

    /* 2-byte elements (f16 bits into i16: same width), and 8-byte ones */
    uint16_t h[3 * 5], ht[5 * 3] = { 0 };
    for (int i = 0; i < 15; i++)
        h[i] = (uint16_t)(0x3c00 + i * 7);
    PtoTensorView hv[2] = { kv_2d(h, PTO_DTYPE_F16, 5, 3, 1, 5), kv_2d(ht, PTO_DTYPE_I16, 5, 3, 3, 1) };
    uint64_t hargs[] = { P(h), P(ht) };
    CHECK_EQ_INT(kv_call("vcopy", PTO_CORE_AIV, 2, hargs, hv), PTO_KERNEL_OK);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++)
            CHECK_EQ_INT(ht[j * 3 + i], h[i * 5 + j]);
    uint64_t q[6] = { 1, 2, 3, 4, 5, 6 }, qo[3] = { 0 };
    PtoTensorView qv[2] = { kv_view(q, PTO_DTYPE_U64, 1, (uint64_t)3, (uint64_t)2),
                            kv_view(qo, PTO_DTYPE_I64, 1, (uint64_t)3, (uint64_t)1) };
    uint64_t qargs[] = { P(q), P(qo) };
    CHECK_EQ_INT(kv_call("vcopy", PTO_CORE_AIV, 2, qargs, qv), PTO_KERNEL_OK);
    CHECK(qo[0] == 1 && qo[1] == 3 && qo[2] == 5);
}

/* A 5-D permuted input, a broadcast (stride 0) input and a dense output. */
TEST(views_five_dims_and_broadcast_inputs_walk_in_row_major_order)
{
    enum { N = 2 * 3 * 2 * 2 * 3 };
    float a[N], b[3], c[N], want[N];
    kv_fill(a, N, 9);
    kv_fill(b, 3, 10);
    /* a's dims permuted: shape [2,3,2,2,3] over a dense [3,2,2,3,2] buffer */
    PtoTensorView v[3] = {
        kv_view(a, PTO_DTYPE_F32, 5, (uint64_t)2, (uint64_t)3, (uint64_t)2, (uint64_t)2, (uint64_t)3,
                (uint64_t)1, (uint64_t)24, (uint64_t)12, (uint64_t)6, (uint64_t)2),
        kv_view(b, PTO_DTYPE_F32, 5, (uint64_t)2, (uint64_t)3, (uint64_t)2, (uint64_t)2, (uint64_t)3,
                (uint64_t)0, (uint64_t)0, (uint64_t)0, (uint64_t)0, (uint64_t)1),
        kv_view(c, PTO_DTYPE_F32, 5, (uint64_t)2, (uint64_t)3, (uint64_t)2, (uint64_t)2, (uint64_t)3,
                (uint64_t)36, (uint64_t)12, (uint64_t)6, (uint64_t)3, (uint64_t)1),
    };
    for (uint64_t l = 0; l < N; l++)
        want[kv_offset(&v[2], l)] = a[kv_offset(&v[0], l)] * b[kv_offset(&v[1], l)];
    uint64_t args[] = { P(a), P(b), P(c) };
    CHECK_EQ_INT(kv_call("vmul", PTO_CORE_AIV, 3, args, v), PTO_KERNEL_OK);
    CHECK(kv_same_bits(c, want, N));
}

TEST(views_i32_arithmetic_wraps_like_java_int)
{
    enum { N = 12 };
    int32_t a[N] = { INT32_MAX, INT32_MIN, -1, 0, 7, -7, 65536, 123456789, INT32_MAX, INT32_MIN, 3, -100000 };
    int32_t b[N] = { 1, -1, INT32_MIN, 0, -9, 9, 65536, 987654321, INT32_MAX, INT32_MIN, -3, 300000 };
    int32_t c[N];
    const char *names[] = { "vadd", "vsub", "vmul", "vmax" };
    for (int op = 0; op < 4; op++) {
        PtoTensorView v[3] = { kv_2d(a, PTO_DTYPE_I32, 3, 4, 4, 1), kv_2d(b, PTO_DTYPE_I32, 3, 4, 4, 1),
                               kv_2d(c, PTO_DTYPE_I32, 3, 4, 4, 1) };
        uint64_t args[] = { P(a), P(b), P(c) };
        CHECK_EQ_INT(kv_call(names[op], PTO_CORE_AIV, 3, args, v), PTO_KERNEL_OK);
        for (int i = 0; i < N; i++) {
            uint32_t x = (uint32_t)a[i], y = (uint32_t)b[i], want;
            switch (op) {
            case 0: want = x + y; break;
            case 1: want = x - y; break;
            case 2: want = x * y; break;
            default: want = (uint32_t)(a[i] >= b[i] ? a[i] : b[i]); break;
            }
            CHECK_EQ_INT((uint32_t)c[i], want);
        }
    }
    /* vfill with an i32 scalar: its low 32 bits, every other element */
    int32_t f[8] = { 0 };
    PtoTensorView fv[2] = { kv_view(f, PTO_DTYPE_I32, 1, (uint64_t)4, (uint64_t)2) };
    uint64_t fargs[] = { P(f), (uint64_t)(uint32_t)-5 };
    CHECK_EQ_INT(kv_call("vfill", PTO_CORE_AIV, 2, fargs, fv), PTO_KERNEL_OK);
    for (int i = 0; i < 8; i++)
        CHECK_EQ_INT(f[i], i % 2 == 0 ? -5 : 0);
}

TEST(views_empty_views_do_nothing_and_succeed)
{
    float a[4] = { 1, 2, 3, 4 }, c[4] = { -9, -9, -9, -9 };
    PtoTensorView v[3] = { kv_2d(a, PTO_DTYPE_F32, 0, 4, 4, 1), kv_2d(a, PTO_DTYPE_F32, 0, 4, 4, 1),
                           kv_2d(c, PTO_DTYPE_F32, 0, 4, 4, 1) };
    uint64_t args[] = { P(a), P(a), P(c) };
    const char *names[] = { "vadd", "vsub", "vmul", "vdiv", "vmax" };
    for (int i = 0; i < 5; i++)
        CHECK_EQ_INT(kv_call(names[i], PTO_CORE_AIV, 3, args, v), PTO_KERNEL_OK);
    PtoTensorView u[3] = { kv_2d(a, PTO_DTYPE_F32, 2, 0, 2, 1), kv_2d(c, PTO_DTYPE_F32, 2, 0, 2, 1), { 0 } };
    uint64_t uargs[] = { P(a), P(c), 0 };
    const char *unary[] = { "vcopy", "vexp", "vrelu", "tile_add", "vadds", "vmuls" };
    for (int i = 0; i < 6; i++)
        CHECK_EQ_INT(kv_call(unary[i], PTO_CORE_AIV, i < 4 ? 2 : 3, uargs, u), PTO_KERNEL_OK);
    PtoTensorView fv[2] = { kv_view(c, PTO_DTYPE_F32, 1, (uint64_t)0, (uint64_t)1) };
    uint64_t fargs[] = { P(c), kv_bits(5.0f) };
    CHECK_EQ_INT(kv_call("vfill", PTO_CORE_AIV, 2, fargs, fv), PTO_KERNEL_OK);
    for (int i = 0; i < 4; i++)
        CHECK_EQ_INT(kv_bits(c[i]), kv_bits(-9.0f));
}

/* ---- refusals ------------------------------------------------------------------ */

static float out[64];

static void reset_out(void)
{
    for (int i = 0; i < 64; i++)
        out[i] = -9.0f;
}

static int out_untouched(void)
{
    for (int i = 0; i < 64; i++)
        if (kv_bits(out[i]) != kv_bits(-9.0f))
            return 0;
    return 1;
}

/* Calls `name` on views (their spans as sizes) and expects `code`, out untouched. */
static void refused(const char *name, uint32_t core, uint32_t nargs, const uint64_t *args, const PtoTensorView *v,
                    int32_t code)
{
    reset_out();
    int32_t rc = kv_call(name, core, nargs, args, v);
    if (rc != code)
        fprintf(stderr, "  %s returned %d, expected %d\n", name, rc, code);
    CHECK_EQ_INT(rc, code);
    CHECK(out_untouched());
}

TEST(views_elementwise_refusals_have_their_codes_and_write_nothing)
{
    static float in[64];
    uint64_t args[] = { P(in), P(in), P(out) };
    PtoTensorView ok_in = kv_2d(in, PTO_DTYPE_F32, 4, 4, 8, 1), ok_out = kv_2d(out, PTO_DTYPE_F32, 4, 4, 8, 1);
    PtoTensorView v[3];

    /* dtype: f16 arithmetic, i32 vdiv and vexp, dtypes that disagree, an unknown dtype, vcopy widths */
    for (int j = 0; j < 3; j++)
        v[j] = kv_2d(j == 2 ? (void *)out : (void *)in, PTO_DTYPE_F16, 4, 4, 8, 1);
    refused("vadd", PTO_CORE_AIV, 3, args, v, PTO_KERNEL_ERR_DTYPE);
    for (int j = 0; j < 3; j++)
        v[j].dtype = PTO_DTYPE_I32;
    refused("vdiv", PTO_CORE_AIV, 3, args, v, PTO_KERNEL_ERR_DTYPE);
    refused("vexp", PTO_CORE_AIV, 2, (uint64_t[]){ P(in), P(out) }, (PtoTensorView[]){ v[0], v[2] },
            PTO_KERNEL_ERR_DTYPE);
    refused("vadds", PTO_CORE_AIV, 3, (uint64_t[]){ P(in), P(out), 0 }, (PtoTensorView[]){ v[0], v[2], { 0 } },
            PTO_KERNEL_ERR_DTYPE);
    v[0] = ok_in, v[1] = ok_in, v[2] = ok_out;
    v[1].dtype = PTO_DTYPE_I32;
    refused("vadd", PTO_CORE_AIV, 3, args, v, PTO_KERNEL_ERR_DTYPE);
    v[1].dtype = 77;
    refused("vmax", PTO_CORE_AIV, 3, args, v, PTO_KERNEL_ERR_DTYPE);
    PtoTensorView cp[2] = { kv_2d(in, PTO_DTYPE_F32, 4, 4, 8, 1), kv_2d(out, PTO_DTYPE_F16, 4, 4, 8, 1) };
    refused("vcopy", PTO_CORE_AIV, 2, (uint64_t[]){ P(in), P(out) }, cp, PTO_KERNEL_ERR_DTYPE);

    /* shape: extents or ndims that disagree */
    v[0] = ok_in, v[1] = kv_2d(in, PTO_DTYPE_F32, 4, 3, 8, 1), v[2] = ok_out;
    refused("vsub", PTO_CORE_AIV, 3, args, v, PTO_KERNEL_ERR_SHAPE);
    v[1] = kv_view(in, PTO_DTYPE_F32, 3, (uint64_t)1, (uint64_t)4, (uint64_t)4, (uint64_t)32, (uint64_t)8,
                   (uint64_t)1);
    refused("vsub", PTO_CORE_AIV, 3, args, v, PTO_KERNEL_ERR_SHAPE);

    /* parameter count, before anything else */
    refused("vadd", PTO_CORE_AIV, 2, args, (PtoTensorView[]){ ok_in, ok_in, ok_out }, PTO_KERNEL_ERR_PARAM_COUNT);
    refused("vfill", PTO_CORE_AIV, 3, args, (PtoTensorView[]){ ok_out, { 0 }, { 0 } }, PTO_KERNEL_ERR_PARAM_COUNT);

    /* a flat and a strided tensor in one task */
    PtoTensorView flat = { 0 };
    refused("vmul", PTO_CORE_AIV, 3, args, (PtoTensorView[]){ ok_in, flat, ok_out }, PTO_KERNEL_ERR_VIEW_KIND);
    refused("vcopy", PTO_CORE_AIV, 2, (uint64_t[]){ P(in), P(out) }, (PtoTensorView[]){ ok_in, flat },
            PTO_KERNEL_ERR_VIEW_KIND);

    /* malformed descriptors: 6 dims, an address that is not the arg, a span that overflows */
    v[0] = ok_in, v[1] = ok_in, v[2] = ok_out;
    v[2].ndims = 6;
    refused("vadd", PTO_CORE_AIV, 3, args, v, PTO_KERNEL_ERR_BAD_VIEW);
    v[2] = ok_out;
    v[2].addr += 4;
    refused("vadd", PTO_CORE_AIV, 3, args, v, PTO_KERNEL_ERR_BAD_VIEW);
    v[2] = ok_out;
    v[0].strides[0] = UINT64_MAX / 2;
    refused("vadd", PTO_CORE_AIV, 3, args, v, PTO_KERNEL_ERR_BAD_VIEW);

    /* a span beyond arg_sizes, a misaligned element */
    v[0] = ok_in;
    uint64_t short_sizes[] = { kv_span(&ok_in), kv_span(&ok_in) - 4, kv_span(&ok_out) };
    reset_out();
    CHECK_EQ_INT(kv_call_sized("vadd", PTO_CORE_AIV, 3, args, short_sizes, v), PTO_KERNEL_ERR_VIEW_TOO_SMALL);
    CHECK(out_untouched());
    uint64_t mis_args[] = { P(in), P(in) + 2, P(out) };
    v[1].addr = P(in) + 2;
    refused("vadd", PTO_CORE_AIV, 3, mis_args, v, PTO_KERNEL_ERR_MISALIGNED);

    /* outputs reaching one element twice: a 0 stride, rows overlapping */
    v[1] = ok_in;
    v[2] = kv_2d(out, PTO_DTYPE_F32, 4, 4, 0, 1);
    refused("vadd", PTO_CORE_AIV, 3, args, v, PTO_KERNEL_ERR_OUTPUT_OVERLAP);
    v[2] = kv_2d(out, PTO_DTYPE_F32, 4, 4, 3, 1);
    refused("vadd", PTO_CORE_AIV, 3, args, v, PTO_KERNEL_ERR_OUTPUT_OVERLAP);
    PtoTensorView fill0 = kv_view(out, PTO_DTYPE_F32, 1, (uint64_t)3, (uint64_t)0);
    refused("vfill", PTO_CORE_AIV, 2, (uint64_t[]){ P(out), 0 }, (PtoTensorView[]){ fill0, { 0 } },
            PTO_KERNEL_ERR_OUTPUT_OVERLAP);
    /* but an input may repeat elements, and an extent-1 dim's stride is never used */
    v[0] = kv_2d(in, PTO_DTYPE_F32, 4, 4, 0, 1), v[1] = ok_in, v[2] = ok_out;
    CHECK_EQ_INT(kv_call("vadd", PTO_CORE_AIV, 3, args, v), PTO_KERNEL_OK);
    v[0] = kv_2d(in, PTO_DTYPE_F32, 1, 4, 0, 1), v[1] = v[0];
    v[2] = kv_2d(out, PTO_DTYPE_F32, 1, 4, 0, 1);
    CHECK_EQ_INT(kv_call("vadd", PTO_CORE_AIV, 3, args, v), PTO_KERNEL_OK);
}
