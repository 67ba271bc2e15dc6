/*
 * The elementwise built-ins: vcopy, vfill, vadd, vsub, vmul, vdiv, vmax,
 * vadds, vmuls, vexp, vrelu, tile_add. Flat views keep the byte-range forms
 * (f32; the output's size decides the work); strided views of one shape are
 * walked in row-major order of that shape, with the dtype taken from the views
 * (docs/kernels.md, "Strided views").
 */
#include <stdint.h>
#include <string.h>

#include "device/aicore/kernel_common.h"

/* Checks a binary operation's views: two inputs at least as large as the output. */
static int32_t check_binary(const uint64_t *args, const uint64_t *sizes)
{
    int32_t rc;
    if ((rc = kernel_check_f32_view(args[2], sizes[2])) != PTO_KERNEL_OK)
        return rc;
    if (sizes[0] < sizes[2] || sizes[1] < sizes[2])
        return PTO_KERNEL_ERR_VIEW_TOO_SMALL;
    if (args[0] % _Alignof(float) != 0 || args[1] % _Alignof(float) != 0)
        return PTO_KERNEL_ERR_MISALIGNED;
    return PTO_KERNEL_OK;
}


/* ---- strided views ------------------------------------------------------------ */

enum ew_op { OP_COPY, OP_FILL, OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MAX, OP_ADDS, OP_MULS, OP_EXP, OP_RELU, OP_TILE_ADD };

/* An elementwise kernel's shape: its tensor parameters are args[0..tensors),
   the last of them the output; a scalar, if any, follows them. */
typedef struct EwSpec {
    enum ew_op op;
    uint32_t tensors;
    int takes_i32; /* i32 views allowed besides f32 */
} EwSpec;

typedef struct EwRow {
    enum ew_op op;
    uint32_t dtype;
    uint64_t scalar; /* raw bits */
} EwRow;

#define AT(T, p, i, step) (*(T *)((p) + (int64_t)(i) * (step)))

/* c = expr(x, y) along one row of three tensors (a, b, c). */
#define ROW3(T, expr)                                                  \
    for (uint64_t i = 0; i < n; i++) {                                 \
        T x = AT(const T, p[0], i, s0), y = AT(const T, p[1], i, s1);  \
        AT(T, p[2], i, s2) = (expr);                                   \
    }
/* c = expr(x) along one row of two tensors (a, c); y is c's old value. */
#define ROW2(T, expr)                                                  \
    for (uint64_t i = 0; i < n; i++) {                                 \
        T x = AT(const T, p[0], i, s0), y = AT(const T, p[1], i, s1);  \
        (void)y;                                                       \
        AT(T, p[1], i, s1) = (expr);                                   \
    }

static int32_t max_i32(int32_t a, int32_t b)
{
    return a >= b ? a : b;
}

static void ew_row_f32(char *const *p, uint64_t n, const KTensor *t, const EwRow *r)
{
    const uint32_t last = t[0].ndims - 1;
    const int64_t s0 = t[0].step[last], s1 = t[1].step[last], s2 = t[2].step[last];
    const float s = f32_from_bits(r->scalar);
    switch (r->op) {
    case OP_ADD: ROW3(float, x + y) break;
    case OP_SUB: ROW3(float, x - y) break;
    case OP_MUL: ROW3(float, x * y) break;
    case OP_DIV: ROW3(float, x / y) break;
    case OP_MAX: ROW3(float, max_f32(x, y)) break;
    case OP_ADDS: ROW2(float, x + s) break;
    case OP_MULS: ROW2(float, x * s) break;
    case OP_EXP: ROW2(float, exp_f32(x)) break;
    case OP_RELU: ROW2(float, max_f32(x, 0.0f)) break;
    case OP_TILE_ADD: ROW2(float, y + x) break;
    default: break;
    }
}

/* i32 arithmetic wraps in two's complement, like Java's int: done on uint32_t,
   where C defines the wrap. */
static void ew_row_i32(char *const *p, uint64_t n, const KTensor *t, const EwRow *r)
{
    const uint32_t last = t[0].ndims - 1;
    const int64_t s0 = t[0].step[last], s1 = t[1].step[last], s2 = t[2].step[last];
    switch (r->op) {
    case OP_ADD: ROW3(uint32_t, x + y) break;
    case OP_SUB: ROW3(uint32_t, x - y) break;
    case OP_MUL: ROW3(uint32_t, x * y) break;
    case OP_MAX: ROW3(int32_t, max_i32(x, y)) break;
    default: break;
    }
}

static void ew_row(char *const *p, uint64_t n, const KTensor *t, void *ctx)
{
    const EwRow *r = ctx;
    if (r->op == OP_FILL) {
        const int64_t s0 = t[0].step[t[0].ndims - 1];
        uint32_t v = (uint32_t)r->scalar; /* f32 bits or the i32 itself */
        for (uint64_t i = 0; i < n; i++)
            memcpy(p[0] + (int64_t)i * s0, &v, sizeof v);
    } else if (r->op == OP_COPY) {
        const int64_t s0 = t[0].step[t[0].ndims - 1], s1 = t[1].step[t[1].ndims - 1];
        for (uint64_t i = 0; i < n; i++)
            memmove(p[1] + (int64_t)i * s1, p[0] + (int64_t)i * s0, t[1].esz);
    } else if (r->dtype == PTO_DTYPE_I32) {
        ew_row_i32(p, n, t, r);
    } else {
        ew_row_f32(p, n, t, r);
    }
}

/* The strided form of every elementwise kernel: checks each view, their one
   shape and their dtypes, then walks them row by row. */
static int32_t ew_strided(const uint64_t *args, uint32_t nargs, const PtoKernelContext *k, const EwSpec *spec)
{
    KTensor t[3];
    int32_t rc;
    for (uint32_t j = 0; j < spec->tensors; j++)
        if ((rc = kernel_strided_tensor(args, k, j, j == spec->tensors - 1, &t[j])) != PTO_KERNEL_OK)
            return rc;
    for (uint32_t j = 1; j < spec->tensors; j++)
        if (!kernel_same_shape(&t[0], &t[j]))
            return PTO_KERNEL_ERR_SHAPE;
    for (uint32_t j = 1; j < spec->tensors; j++) {
        /* vcopy moves elements whatever they are; it only needs them the same width. */
        int same = spec->op == OP_COPY ? t[j].esz == t[0].esz : t[j].dtype == t[0].dtype;
        if (!same)
            return PTO_KERNEL_ERR_DTYPE;
    }
    if (spec->op != OP_COPY && t[0].dtype != PTO_DTYPE_F32 && !(spec->takes_i32 && t[0].dtype == PTO_DTYPE_I32))
        return PTO_KERNEL_ERR_DTYPE;
    for (uint32_t j = spec->tensors; j < 3; j++)
        t[j] = t[spec->tensors - 1]; /* the row loops read a step for every slot */
    EwRow r = { spec->op, t[0].dtype, nargs > spec->tensors ? args[spec->tensors] : 0 };
    kernel_for_each_row(t, spec->tensors, ew_row, &r);
    return PTO_KERNEL_OK;
}

/* Routes a task to the strided form when its tensors are strided; *handled
   says whether it did (rc is then the kernel's result). */
static int32_t ew_try_strided(const uint64_t *args, uint32_t nargs, const PtoKernelContext *k, const EwSpec *spec,
                              int *handled)
{
    static const uint32_t idx[3] = { 0, 1, 2 };
    int strided;
    int32_t rc = kernel_view_kind(k, idx, spec->tensors, &strided);
    *handled = rc != PTO_KERNEL_OK || strided;
    if (rc != PTO_KERNEL_OK || !strided)
        return rc;
    return ew_strided(args, nargs, k, spec);
}

/* ---- the kernels ------------------------------------------------------------- */

/* vcopy(IN x, OUT y): y = the first bytes(y) bytes of x, any dtype. */
KERNEL_SIGNATURE(vcopy)
{
    if (nargs != 2)
        return PTO_KERNEL_ERR_PARAM_COUNT;
    static const EwSpec spec = { OP_COPY, 2, 0 };
    int handled;
    int32_t rc = ew_try_strided(args, nargs, k, &spec, &handled);
    if (handled)
        return rc;
    if (k->arg_sizes[0] < k->arg_sizes[1])
        return PTO_KERNEL_ERR_VIEW_TOO_SMALL;
    memmove((void *)(uintptr_t)args[1], (const void *)(uintptr_t)args[0], (size_t)k->arg_sizes[1]);
    return PTO_KERNEL_OK;
}

/* vfill(OUT y, SCALAR v): every f32 of y = v. */
KERNEL_SIGNATURE(vfill)
{
    if (nargs != 2)
        return PTO_KERNEL_ERR_PARAM_COUNT;
    static const EwSpec spec = { OP_FILL, 1, 1 };
    int handled;
    int32_t rc = ew_try_strided(args, nargs, k, &spec, &handled);
    if (handled)
        return rc;
    if ((rc = kernel_check_f32_view(args[0], k->arg_sizes[0])) != PTO_KERNEL_OK)
        return rc;
    float *y = (float *)(uintptr_t)args[0];
    float v = f32_from_bits(args[1]);
    uint64_t n = k->arg_sizes[0] / sizeof(float);
    for (uint64_t i = 0; i < n; i++)
        y[i] = v;
    return PTO_KERNEL_OK;
}

/* c[i] = expr of a[i] and b[i] (IN a, IN b, OUT c), n = bytes(c) / 4. */
#define BINARY_KERNEL(name, op, i32, expr)                             \
    KERNEL_SIGNATURE(name)                                             \
    {                                                                  \
        if (nargs != 3)                                                \
            return PTO_KERNEL_ERR_PARAM_COUNT;                         \
        static const EwSpec spec = { op, 3, i32 };                     \
        int handled;                                                   \
        int32_t rc = ew_try_strided(args, nargs, k, &spec, &handled);  \
        if (handled)                                                   \
            return rc;                                                 \
        if ((rc = check_binary(args, k->arg_sizes)) != PTO_KERNEL_OK)  \
            return rc;                                                 \
        const float *a = (const float *)(uintptr_t)args[0];            \
        const float *b = (const float *)(uintptr_t)args[1];            \
        float *c = (float *)(uintptr_t)args[2];                        \
        uint64_t n = k->arg_sizes[2] / sizeof(float);                  \
        for (uint64_t i = 0; i < n; i++)                               \
            c[i] = (expr);                                             \
        return PTO_KERNEL_OK;                                          \
    }

/* c[i] = expr of x = a[i] and, with three params, the scalar s (IN a, OUT c
   [, SCALAR s]), n = bytes(c) / 4. */
#define UNARY_KERNEL(name, op, nparams, expr)                          \
    KERNEL_SIGNATURE(name)                                             \
    {                                                                  \
        if (nargs != (nparams))                                        \
            return PTO_KERNEL_ERR_PARAM_COUNT;                         \
        static const EwSpec spec = { op, 2, 0 };                       \
        int handled;                                                   \
        int32_t rc = ew_try_strided(args, nargs, k, &spec, &handled);  \
        if (handled)                                                   \
            return rc;                                                 \
        if ((rc = kernel_check_unary_f32(args, k->arg_sizes)) != PTO_KERNEL_OK)   \
            return rc;                                                 \
        const float *a = (const float *)(uintptr_t)args[0];            \
        float *c = (float *)(uintptr_t)args[1];                        \
        float s = (nparams) == 3 ? f32_from_bits(args[2]) : 0.0f;      \
        (void)s;                                                       \
        uint64_t n = k->arg_sizes[1] / sizeof(float);                  \
        for (uint64_t i = 0; i < n; i++) {                             \
            float x = a[i];                                            \
            c[i] = (expr);                                             \
        }                                                              \
        return PTO_KERNEL_OK;                                          \
    }

/* vadd, vsub, vmul, vdiv (IN a, IN b, OUT c): n = bytes(c) / 4; strided: f32
   or i32 but vdiv, f32 only. */
BINARY_KERNEL(vadd, OP_ADD, 1, a[i] + b[i])
BINARY_KERNEL(vsub, OP_SUB, 1, a[i] - b[i])
BINARY_KERNEL(vmul, OP_MUL, 1, a[i] * b[i])
BINARY_KERNEL(vdiv, OP_DIV, 0, a[i] / b[i])
/* vadds(IN a, OUT c, SCALAR s), vmuls(IN a, OUT c, SCALAR s): c = a + s, c = a * s. */
UNARY_KERNEL(vadds, OP_ADDS, 3, x + s)
UNARY_KERNEL(vmuls, OP_MULS, 3, x * s)
/* vmax(IN a, IN b, OUT c): c[i] = max(a[i], b[i]) as Java's Math.max. */
BINARY_KERNEL(vmax, OP_MAX, 1, max_f32(a[i], b[i]))
/* vexp(IN a, OUT c): c[i] = (float)exp((double)a[i]). */
UNARY_KERNEL(vexp, OP_EXP, 2, exp_f32(x))
/* vrelu(IN a, OUT c): c[i] = Math.max(a[i], 0.0f): NaN stays NaN, -0 becomes +0. */
UNARY_KERNEL(vrelu, OP_RELU, 2, max_f32(x, 0.0f))
/* tile_add(IN a, INOUT c): c[i] = c[i] + a[i]. */
UNARY_KERNEL(tile_add, OP_TILE_ADD, 2, c[i] + x)
