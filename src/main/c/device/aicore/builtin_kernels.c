/*
 * The AICore image: the built-in kernels (device/pto_builtin_kernels.h lists
 * them, docs/kernels.md documents their parameters). Each checks its parameter
 * count and every view size it relies on (PtoKernelContext.arg_sizes) before
 * touching memory, so a malformed task is refused, never overrun.
 *
 * Views may alias (c = a + s in place), so nothing here is `restrict`.
 *
 * Results must be bit-identical to a plain sequential reference (docs/kernels.md
 * fixes every summation order): the image is compiled with -ffp-contract=off
 * (no fused multiply-add) and never with reassociating flags.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "device/pto_builtin_kernels.h"
#include "device/pto_device_abi.h"
#include "ptorun/chip_callable.h"
#include "ptorun/pto_export.h"
#include "ptorun/pto_kernel.h"

#define KERNEL_SIGNATURE(name) \
    PTO_EXPORT int32_t pto_kernel_##name(const uint64_t *args, uint32_t nargs, const PtoKernelContext *k)
#define DECLARE_KERNEL(name) KERNEL_SIGNATURE(name);
PTO_BUILTIN_KERNELS(DECLARE_KERNEL)

/* Referencing every listed kernel makes a missing definition a link error. */
#define KERNEL_ENTRY(name) pto_kernel_##name,
__attribute__((used)) static const PtoKernelFn builtin_kernels[] = { PTO_BUILTIN_KERNELS(KERNEL_ENTRY) };

PTO_EXPORT uint32_t pto_device_abi_version(void)
{
    return PTO_DEVICE_ABI_VERSION;
}

/* The core entry an onboard driver launches on the run's AICore stream
 * (PTO_AICORE_ENTRY_SYMBOL). It returns at once: in this emulation the AICPU
 * executor calls the kernels itself, and the launch exists so the run's AICore
 * stream carries real device work, with its ordering and its faults. */
PTO_EXPORT int32_t pto_aicore_entry(uint64_t args_dev, uint32_t core_idx, uint32_t core_count)
{
    (void)args_dev;
    (void)core_idx;
    (void)core_count;
    return 0;
}

/* An f32 view: 4-byte aligned and a whole number of elements. */
static int32_t check_f32_view(uint64_t addr, uint64_t bytes)
{
    if (bytes % sizeof(float) != 0)
        return PTO_KERNEL_ERR_BAD_SIZE;
    if (addr % _Alignof(float) != 0)
        return PTO_KERNEL_ERR_MISALIGNED;
    return PTO_KERNEL_OK;
}

static float f32_from_bits(uint64_t raw)
{
    uint32_t bits = (uint32_t)raw;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Checks a binary operation's views: two inputs at least as large as the output. */
static int32_t check_binary(const uint64_t *args, const uint64_t *sizes)
{
    int32_t rc;
    if ((rc = check_f32_view(args[2], sizes[2])) != PTO_KERNEL_OK)
        return rc;
    if (sizes[0] < sizes[2] || sizes[1] < sizes[2])
        return PTO_KERNEL_ERR_VIEW_TOO_SMALL;
    if (args[0] % _Alignof(float) != 0 || args[1] % _Alignof(float) != 0)
        return PTO_KERNEL_ERR_MISALIGNED;
    return PTO_KERNEL_OK;
}

/* Checks an elementwise map's views (input args[0], output args[1]): the input
   at least as large as the output. */
static int32_t check_unary(const uint64_t *args, const uint64_t *sizes)
{
    int32_t rc;
    if ((rc = check_f32_view(args[1], sizes[1])) != PTO_KERNEL_OK)
        return rc;
    if (sizes[0] < sizes[1])
        return PTO_KERNEL_ERR_VIEW_TOO_SMALL;
    if (args[0] % _Alignof(float) != 0)
        return PTO_KERNEL_ERR_MISALIGNED;
    return PTO_KERNEL_OK;
}

KERNEL_SIGNATURE(noop)
{
    (void)args, (void)nargs, (void)k;
    return PTO_KERNEL_OK;
}

/* vcopy(IN x, OUT y): y = the first bytes(y) bytes of x, any dtype. */
KERNEL_SIGNATURE(vcopy)
{
    if (nargs != 2)
        return PTO_KERNEL_ERR_PARAM_COUNT;
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
    int32_t rc = check_f32_view(args[0], k->arg_sizes[0]);
    if (rc != PTO_KERNEL_OK)
        return rc;
    float *y = (float *)(uintptr_t)args[0];
    float v = f32_from_bits(args[1]);
    uint64_t n = k->arg_sizes[0] / sizeof(float);
    for (uint64_t i = 0; i < n; i++)
        y[i] = v;
    return PTO_KERNEL_OK;
}

/* Java's Math.max for floats, so a plain Java reference matches bit for bit:
   a NaN operand wins (the first one), +0 is above -0. */
static float max_f32(float a, float b)
{
    if (isnan(a))
        return a;
    if (a == 0.0f && b == 0.0f && signbit(a))
        return b;
    return a >= b ? a : b;
}

/* The exponential every kernel uses: computed in double, rounded once to f32. */
static float exp_f32(float x)
{
    return (float)exp((double)x);
}

/* c[i] = expr of a[i] and b[i] (IN a, IN b, OUT c), n = bytes(c) / 4. */
#define BINARY_KERNEL(name, expr)                                      \
    KERNEL_SIGNATURE(name)                                             \
    {                                                                  \
        if (nargs != 3)                                                \
            return PTO_KERNEL_ERR_PARAM_COUNT;                         \
        int32_t rc = check_binary(args, k->arg_sizes);                 \
        if (rc != PTO_KERNEL_OK)                                       \
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
#define UNARY_KERNEL(name, nparams, expr)                              \
    KERNEL_SIGNATURE(name)                                             \
    {                                                                  \
        if (nargs != (nparams))                                        \
            return PTO_KERNEL_ERR_PARAM_COUNT;                         \
        int32_t rc = check_unary(args, k->arg_sizes);                  \
        if (rc != PTO_KERNEL_OK)                                       \
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

/* vadd, vsub, vmul, vdiv (IN a, IN b, OUT c): n = bytes(c) / 4. */
BINARY_KERNEL(vadd, a[i] + b[i])
BINARY_KERNEL(vsub, a[i] - b[i])
BINARY_KERNEL(vmul, a[i] * b[i])
BINARY_KERNEL(vdiv, a[i] / b[i])
/* vadds(IN a, OUT c, SCALAR s), vmuls(IN a, OUT c, SCALAR s): c = a + s, c = a * s. */
UNARY_KERNEL(vadds, 3, x + s)
UNARY_KERNEL(vmuls, 3, x * s)
/* vmax(IN a, IN b, OUT c): c[i] = max(a[i], b[i]) as Java's Math.max. */
BINARY_KERNEL(vmax, max_f32(a[i], b[i]))
/* vexp(IN a, OUT c): c[i] = (float)exp((double)a[i]). */
UNARY_KERNEL(vexp, 2, exp_f32(x))
/* vrelu(IN a, OUT c): c[i] = Math.max(a[i], 0.0f): NaN stays NaN, -0 becomes +0. */
UNARY_KERNEL(vrelu, 2, max_f32(x, 0.0f))
/* tile_add(IN a, INOUT c): c[i] = c[i] + a[i]. */
UNARY_KERNEL(tile_add, 2, c[i] + x)

/* reduce_sum(IN a, OUT c): c[0] = a[0] + a[1] + ... left to right in f32
   (n = bytes(a) / 4; no elements: +0). Only c[0] is written. */
KERNEL_SIGNATURE(reduce_sum)
{
    if (nargs != 2)
        return PTO_KERNEL_ERR_PARAM_COUNT;
    int32_t rc;
    if ((rc = check_f32_view(args[0], k->arg_sizes[0])) != PTO_KERNEL_OK ||
        (rc = check_f32_view(args[1], k->arg_sizes[1])) != PTO_KERNEL_OK)
        return rc;
    if (k->arg_sizes[1] < sizeof(float))
        return PTO_KERNEL_ERR_VIEW_TOO_SMALL;
    const float *a = (const float *)(uintptr_t)args[0];
    uint64_t n = k->arg_sizes[0] / sizeof(float);
    float sum = n > 0 ? a[0] : 0.0f;
    for (uint64_t i = 1; i < n; i++)
        sum = sum + a[i];
    *(float *)(uintptr_t)args[1] = sum;
    return PTO_KERNEL_OK;
}

/* One row of softmax_rows: m = the first maximum (a later element replaces it
   only when strictly greater), e_i = exp(a_i - m), s = e_0 + e_1 + ... left to
   right, c_i = e_i / s. c may be a itself: a_i is read before c_i is written. */
static void softmax_row(const float *a, float *c, uint64_t cols)
{
    float m = a[0];
    for (uint64_t i = 1; i < cols; i++)
        if (a[i] > m)
            m = a[i];
    float s = 0.0f;
    for (uint64_t i = 0; i < cols; i++) {
        float e = exp_f32(a[i] - m);
        c[i] = e;
        s = i == 0 ? e : s + e;
    }
    for (uint64_t i = 0; i < cols; i++)
        c[i] = c[i] / s;
}

/* softmax_rows(IN a, OUT c, SCALAR cols): rows = bytes(c) / (4 * cols), each
   row of c the softmax of the same row of a. */
KERNEL_SIGNATURE(softmax_rows)
{
    if (nargs != 3)
        return PTO_KERNEL_ERR_PARAM_COUNT;
    int32_t rc = check_unary(args, k->arg_sizes);
    if (rc != PTO_KERNEL_OK)
        return rc;
    uint64_t cols = args[2], row_bytes;
    if (cols == 0 || __builtin_mul_overflow(cols, (uint64_t)sizeof(float), &row_bytes))
        return PTO_KERNEL_ERR_BAD_SCALAR;
    if (k->arg_sizes[1] % row_bytes != 0)
        return PTO_KERNEL_ERR_BAD_SIZE;
    const float *a = (const float *)(uintptr_t)args[0];
    float *c = (float *)(uintptr_t)args[1];
    uint64_t rows = k->arg_sizes[1] / row_bytes;
    for (uint64_t r = 0; r < rows; r++)
        softmax_row(a + r * cols, c + r * cols, cols);
    return PTO_KERNEL_OK;
}

/* Bytes of a rows x cols f32 matrix; 0 when that overflows. */
static uint64_t matrix_bytes(uint64_t rows, uint64_t cols)
{
    uint64_t n;
    if (__builtin_mul_overflow(rows, cols, &n) || __builtin_mul_overflow(n, (uint64_t)sizeof(float), &n))
        return 0;
    return n;
}

static int32_t check_gemm(const uint64_t *args, const uint64_t *sizes)
{
    uint64_t m = args[3], kk = args[4], n = args[5];
    uint64_t a_bytes = matrix_bytes(m, kk), b_bytes = matrix_bytes(kk, n), c_bytes = matrix_bytes(m, n);
    if ((a_bytes == 0 && m != 0 && kk != 0) || (b_bytes == 0 && kk != 0 && n != 0) ||
        (c_bytes == 0 && m != 0 && n != 0))
        return PTO_KERNEL_ERR_BAD_SCALAR;
    if (sizes[0] < a_bytes || sizes[1] < b_bytes || sizes[2] < c_bytes)
        return PTO_KERNEL_ERR_VIEW_TOO_SMALL;
    for (int i = 0; i < 3; i++)
        if (args[i] % _Alignof(float) != 0)
            return PTO_KERNEL_ERR_MISALIGNED;
    return PTO_KERNEL_OK;
}

/* gemm_tile(IN A, IN B, INOUT C, SCALAR M, SCALAR K, SCALAR N), AIC only:
   C[M x N] += A[M x K] * B[K x N], row-major. Each C[i][j] accumulates its
   products in ascending k, one rounding per multiply and per add, exactly as
   "acc = C[i][j]; for k: acc = acc + A[i][k] * B[k][j]". Walking k outside j
   keeps that order per element while streaming rows of B. C must not overlap
   A or B. */
KERNEL_SIGNATURE(gemm_tile)
{
    if (nargs != 6)
        return PTO_KERNEL_ERR_PARAM_COUNT;
    if (k->core_type != PTO_CORE_AIC)
        return PTO_KERNEL_ERR_CORE_TYPE;
    int32_t rc = check_gemm(args, k->arg_sizes);
    if (rc != PTO_KERNEL_OK)
        return rc;
    const float *a = (const float *)(uintptr_t)args[0];
    const float *b = (const float *)(uintptr_t)args[1];
    float *c = (float *)(uintptr_t)args[2];
    uint64_t m = args[3], kk = args[4], n = args[5];
    for (uint64_t i = 0; i < m; i++) {
        float *c_row = c + i * n;
        for (uint64_t p = 0; p < kk; p++) {
            float a_ip = a[i * kk + p];
            const float *b_row = b + p * n;
            for (uint64_t j = 0; j < n; j++)
                c_row[j] = c_row[j] + a_ip * b_row[j];
        }
    }
    return PTO_KERNEL_OK;
}
