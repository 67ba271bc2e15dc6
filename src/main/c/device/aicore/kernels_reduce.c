/*
 * The reductions: reduce_sum, reduce_max, and the row-wise softmax_rows. Each
 * reduces in index order starting from the first element, one rounding per
 * operation, so a sequential reference written in that order matches bit for
 * bit (docs/kernels.md).
 */
#include <math.h>
#include <stdint.h>

#include "device/aicore/kernel_common.h"

/* acc combined with x: f32 addition, or Java's Math.max. */
static float combine(int is_max, float acc, float x)
{
    return is_max ? max_f32(acc, x) : acc + x;
}

/* What an empty reduction gives: +0 for a sum, -inf (the identity of max)
   for a max. */
static float empty_result(int is_max)
{
    return is_max ? -INFINITY : 0.0f;
}

/* Reduces n f32 values `step` bytes apart, the first at p, left to right. */
static float reduce_line(int is_max, const char *p, int64_t step, uint64_t n)
{
    if (n == 0)
        return empty_result(is_max);
    float acc = *(const float *)p;
    for (uint64_t i = 1; i < n; i++)
        acc = combine(is_max, acc, *(const float *)(p + (int64_t)i * step));
    return acc;
}

/* The flat form: c[0] = the reduction of all bytes(a) / 4 f32 of a. */
static int32_t reduce_flat(const uint64_t *args, const PtoKernelContext *k, int is_max)
{
    int32_t rc;
    if ((rc = kernel_check_f32_view(args[0], k->arg_sizes[0])) != PTO_KERNEL_OK ||
        (rc = kernel_check_f32_view(args[1], k->arg_sizes[1])) != PTO_KERNEL_OK)
        return rc;
    if (k->arg_sizes[1] < sizeof(float))
        return PTO_KERNEL_ERR_VIEW_TOO_SMALL;
    const float *a = (const float *)(uintptr_t)args[0];
    uint64_t n = k->arg_sizes[0] / sizeof(float);
    float acc = n > 0 ? a[0] : empty_result(is_max);
    if (is_max)
        for (uint64_t i = 1; i < n; i++)
            acc = max_f32(acc, a[i]);
    else
        for (uint64_t i = 1; i < n; i++)
            acc = acc + a[i];
    *(float *)(uintptr_t)args[1] = acc;
    return PTO_KERNEL_OK;
}

/* The whole-view walk of the 2-param strided form: one accumulator carried
   across rows in row-major order. */
typedef struct WholeView {
    int is_max, started;
    float acc;
} WholeView;

static void whole_view_row(char *const *p, uint64_t n, const KTensor *t, void *ctx)
{
    WholeView *w = ctx;
    const int64_t step = t[0].step[t[0].ndims - 1];
    for (uint64_t i = 0; i < n; i++) {
        float x = *(const float *)(p[0] + (int64_t)i * step);
        w->acc = w->started ? combine(w->is_max, w->acc, x) : x;
        w->started = 1;
    }
}

/* The along-dim walk: p[0] is the first element of a's line for output p[1]. */
typedef struct AlongDim {
    int is_max;
    uint64_t extent; /* a's extent along the reduced dim */
    int64_t step;    /* and its step */
} AlongDim;

static void along_dim_row(char *const *p, uint64_t n, const KTensor *t, void *ctx)
{
    const AlongDim *r = ctx;
    const uint32_t last = t[0].ndims - 1;
    const int64_t sa = t[0].step[last], sc = t[1].step[last];
    for (uint64_t i = 0; i < n; i++)
        *(float *)(p[1] + (int64_t)i * sc) = reduce_line(r->is_max, p[0] + (int64_t)i * sa, r->step, r->extent);
}

static int32_t reduce_strided(const uint64_t *args, uint32_t nargs, const PtoKernelContext *k, int is_max)
{
    KTensor t[2];
    int32_t rc;
    if ((rc = kernel_strided_tensor(args, k, 0, 0, &t[0])) != PTO_KERNEL_OK ||
        (rc = kernel_strided_tensor(args, k, 1, 1, &t[1])) != PTO_KERNEL_OK)
        return rc;
    if (t[0].dtype != PTO_DTYPE_F32 || t[1].dtype != PTO_DTYPE_F32)
        return PTO_KERNEL_ERR_DTYPE;
    if (nargs == 2) {
        /* The whole of a into c's element (0, ..., 0), as the flat form's c[0]. */
        if (t[1].empty)
            return PTO_KERNEL_ERR_SHAPE;
        WholeView w = { is_max, 0, empty_result(is_max) };
        kernel_for_each_row(&t[0], 1, whole_view_row, &w);
        *(float *)t[1].base = w.acc;
        return PTO_KERNEL_OK;
    }
    uint64_t dim = args[2];
    if (t[0].ndims != t[1].ndims)
        return PTO_KERNEL_ERR_SHAPE;
    if (dim >= t[0].ndims)
        return PTO_KERNEL_ERR_BAD_SCALAR;
    for (uint32_t d = 0; d < t[0].ndims; d++)
        if (t[1].shape[d] != (d == dim ? 1 : t[0].shape[d]))
            return PTO_KERNEL_ERR_SHAPE;
    /* Walk c's shape with a pinned to the first element along dim; each
       output element then reduces a's line along dim. */
    AlongDim r = { is_max, t[0].shape[dim], t[0].step[dim] };
    KTensor lines[2] = { t[0], t[1] };
    lines[0].shape[dim] = 1;
    lines[0].empty = t[1].empty;
    kernel_for_each_row(lines, 2, along_dim_row, &r);
    return PTO_KERNEL_OK;
}

/* reduce_sum / reduce_max (IN a, OUT c [, SCALAR dim]). */
static int32_t reduce(const uint64_t *args, uint32_t nargs, const PtoKernelContext *k, int is_max)
{
    int strided;
    int32_t rc = kernel_in_out_kind(nargs, k, &strided);
    if (rc != PTO_KERNEL_OK)
        return rc;
    if (strided)
        return reduce_strided(args, nargs, k, is_max);
    /* A flat view has no dims to reduce along: its form has no dim scalar. */
    return nargs == 2 ? reduce_flat(args, k, is_max) : PTO_KERNEL_ERR_PARAM_COUNT;
}

/* reduce_sum(IN a, OUT c): c[0] = a[0] + a[1] + ... left to right in f32
   (n = bytes(a) / 4; no elements: +0). Only c[0] is written.
   reduce_sum(IN a, OUT c, SCALAR dim), strided: the sums along dim. */
KERNEL_SIGNATURE(reduce_sum)
{
    return reduce(args, nargs, k, 0);
}

/* reduce_max: as reduce_sum, with Java's Math.max for the addition and -inf
   for an empty reduction. */
KERNEL_SIGNATURE(reduce_max)
{
    return reduce(args, nargs, k, 1);
}

/* One row of softmax_rows, its elements sa and sc floats apart: m = the first
   maximum (a later element replaces it only when strictly greater), e_i =
   exp(a_i - m), s = e_0 + e_1 + ... left to right, c_i = e_i / s. c may be a
   itself: a_i is read before c_i is written. */
static inline void softmax_row(const float *a, int64_t sa, float *c, int64_t sc, uint64_t cols)
{
    float m = a[0];
    for (uint64_t i = 1; i < cols; i++)
        if (a[(int64_t)i * sa] > m)
            m = a[(int64_t)i * sa];
    float s = 0.0f;
    for (uint64_t i = 0; i < cols; i++) {
        float e = exp_f32(a[(int64_t)i * sa] - m);
        c[(int64_t)i * sc] = e;
        s = i == 0 ? e : s + e;
    }
    for (uint64_t i = 0; i < cols; i++)
        c[(int64_t)i * sc] = c[(int64_t)i * sc] / s;
}

static void softmax_view_row(char *const *p, uint64_t n, const KTensor *t, void *ctx)
{
    (void)ctx;
    const uint32_t last = t[0].ndims - 1;
    /* steps are whole floats: stride * 4 */
    softmax_row((const float *)p[0], t[0].step[last] / (int64_t)sizeof(float), (float *)p[1],
                t[1].step[last] / (int64_t)sizeof(float), n);
}

/* softmax_rows(IN a, OUT c), strided: each row along the last dim. */
static int32_t softmax_strided(const uint64_t *args, const PtoKernelContext *k)
{
    KTensor t[2];
    int32_t rc;
    if ((rc = kernel_strided_tensor(args, k, 0, 0, &t[0])) != PTO_KERNEL_OK ||
        (rc = kernel_strided_tensor(args, k, 1, 1, &t[1])) != PTO_KERNEL_OK)
        return rc;
    if (!kernel_same_shape(&t[0], &t[1]))
        return PTO_KERNEL_ERR_SHAPE;
    if (t[0].dtype != PTO_DTYPE_F32 || t[1].dtype != PTO_DTYPE_F32)
        return PTO_KERNEL_ERR_DTYPE;
    kernel_for_each_row(t, 2, softmax_view_row, NULL);
    return PTO_KERNEL_OK;
}

/* softmax_rows(IN a, OUT c, SCALAR cols), flat: rows = bytes(c) / (4 * cols),
   each row of c the softmax of the same row of a. softmax_rows(IN a, OUT c),
   strided: the rows are the last dim. */
KERNEL_SIGNATURE(softmax_rows)
{
    int strided;
    int32_t rc = kernel_in_out_kind(nargs, k, &strided);
    if (rc != PTO_KERNEL_OK)
        return rc;
    /* Flat views need the cols scalar; strided ones carry their rows: each
       kind has its own parameter count. */
    if (strided != (nargs == 2))
        return PTO_KERNEL_ERR_PARAM_COUNT;
    if (strided)
        return softmax_strided(args, k);
    const uint64_t *sizes = k->arg_sizes;
    if ((rc = kernel_check_unary_f32(args, sizes)) != PTO_KERNEL_OK)
        return rc;
    uint64_t cols = args[2], row_bytes;
    if (cols == 0 || __builtin_mul_overflow(cols, (uint64_t)sizeof(float), &row_bytes))
        return PTO_KERNEL_ERR_BAD_SCALAR;
    if (sizes[1] % row_bytes != 0)
        return PTO_KERNEL_ERR_BAD_SIZE;
    const float *a = (const float *)(uintptr_t)args[0];
    float *c = (float *)(uintptr_t)args[1];
    uint64_t rows = sizes[1] / row_bytes;
    for (uint64_t r = 0; r < rows; r++)
        softmax_row(a + r * cols, 1, c + r * cols, 1, cols);
    return PTO_KERNEL_OK;
}
