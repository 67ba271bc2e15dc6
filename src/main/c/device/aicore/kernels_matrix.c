/*
 * gemm_tile, AIC only: C += A * B, every C[i][j] accumulated in ascending k,
 * one rounding per multiply and per add, exactly as
 * "acc = C[i][j]; for k: acc = acc + A[i][k] * B[k][j]" (docs/kernels.md).
 * Walking k outside j keeps that order per element while streaming rows of B.
 * C must not overlap A or B.
 */
#include <stdint.h>

#include "device/aicore/kernel_common.h"
#include "ptorun/chip_callable.h" /* PTO_CORE_AIC */

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

/* The flat form: row-major A[M x K], B[K x N], C[M x N] from the scalars. */
static int32_t gemm_flat(const uint64_t *args, const PtoKernelContext *k)
{
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

#define AT(t, i, j) (*(float *)((t).base + (int64_t)(i) * (t).step[0] + (int64_t)(j) * (t).step[1]))

/* The strided form: 2-D views A[M x K], B[K x N], C[M x N], any strides (a
   column tile, a transposed B), M, K and N from their shapes. */
static int32_t gemm_strided(const uint64_t *args, const PtoKernelContext *k)
{
    KTensor t[3];
    int32_t rc;
    for (uint32_t j = 0; j < 3; j++)
        if ((rc = kernel_strided_tensor(args, k, j, j == 2, &t[j])) != PTO_KERNEL_OK)
            return rc;
    if (t[0].ndims != 2 || t[1].ndims != 2 || t[2].ndims != 2 || t[0].shape[1] != t[1].shape[0] ||
        t[2].shape[0] != t[0].shape[0] || t[2].shape[1] != t[1].shape[1])
        return PTO_KERNEL_ERR_SHAPE;
    for (uint32_t j = 0; j < 3; j++)
        if (t[j].dtype != PTO_DTYPE_F32)
            return PTO_KERNEL_ERR_DTYPE;
    const uint64_t m = t[0].shape[0], kk = t[0].shape[1], n = t[1].shape[1];
    /* An empty A or B (K = 0) leaves C as it is; an empty C has nothing to do. */
    if (t[0].empty || t[1].empty || t[2].empty)
        return PTO_KERNEL_OK;
    for (uint64_t i = 0; i < m; i++)
        for (uint64_t p = 0; p < kk; p++) {
            float a_ip = AT(t[0], i, p);
            for (uint64_t j = 0; j < n; j++)
                AT(t[2], i, j) = AT(t[2], i, j) + a_ip * AT(t[1], p, j);
        }
    return PTO_KERNEL_OK;
}

/* gemm_tile(IN A, IN B, INOUT C, SCALAR M, SCALAR K, SCALAR N) on flat views,
   gemm_tile(IN A, IN B, INOUT C) on strided ones. */
KERNEL_SIGNATURE(gemm_tile)
{
    if (nargs != 3 && nargs != 6)
        return PTO_KERNEL_ERR_PARAM_COUNT;
    if (k->core_type != PTO_CORE_AIC)
        return PTO_KERNEL_ERR_CORE_TYPE;
    static const uint32_t idx[3] = { 0, 1, 2 };
    int strided;
    int32_t rc = kernel_view_kind(k, idx, 3, &strided);
    if (rc != PTO_KERNEL_OK)
        return rc;
    /* Each kind of view has its own parameter count. */
    if (strided != (nargs == 3))
        return PTO_KERNEL_ERR_PARAM_COUNT;
    return strided ? gemm_strided(args, k) : gemm_flat(args, k);
}
