/*
 * What the AICore image's kernel files share: the kernel signature macro, the
 * f32 helpers whose exact semantics every kernel must agree on, and the
 * resolution of tensor parameters into flat or strided form. Internal to the
 * image (built with -fvisibility=hidden: only PTO_EXPORT symbols leave it).
 *
 * A tensor parameter is flat when PtoKernelContext.views is NULL or its
 * view has ndims 0: the bytes [args[i], args[i] + arg_sizes[i]), as before
 * views existed. Otherwise it is strided: element (i0, ..., i{n-1}) lives at
 * addr + esz * sum(i_d * strides[d]) (ptorun/pto_tensor.h).
 */
#ifndef PTORUN_AICORE_KERNEL_COMMON_H
#define PTORUN_AICORE_KERNEL_COMMON_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "device/pto_builtin_kernels.h"
#include "ptorun/pto_export.h"
#include "ptorun/pto_kernel.h"
#include "ptorun/pto_runtime_c_api.h"

#define KERNEL_SIGNATURE(name) \
    PTO_EXPORT int32_t pto_kernel_##name(const uint64_t *args, uint32_t nargs, const PtoKernelContext *k)

/* A strided tensor parameter, checked and ready for the loops. */
typedef struct KTensor {
    char *base;     /* element (0, ..., 0) */
    uint32_t dtype; /* PtoDataType */
    uint32_t esz;   /* bytes per element */
    uint32_t ndims; /* 1..PTO_VIEW_MAX_DIMS */
    uint64_t shape[PTO_VIEW_MAX_DIMS];
    int64_t step[PTO_VIEW_MAX_DIMS]; /* byte distance between neighbours along each dim */
    int empty;                       /* some extent is 0 */
} KTensor;

static inline float f32_from_bits(uint64_t raw)
{
    uint32_t bits = (uint32_t)raw;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Java's Math.max for floats, so a plain Java reference matches bit for bit:
   a NaN operand wins (the first one), +0 is above -0. */
static inline float max_f32(float a, float b)
{
    if (isnan(a))
        return a;
    if (a == 0.0f && b == 0.0f && signbit(a))
        return b;
    return a >= b ? a : b;
}

/* The exponential every kernel uses: computed in double, rounded once to f32. */
static inline float exp_f32(float x)
{
    return (float)exp((double)x);
}

/* An f32 flat view: 4-byte aligned and a whole number of elements. */
int32_t kernel_check_f32_view(uint64_t addr, uint64_t bytes);

/* Whether the tensor parameters `idx[0..count)` are all flat (*strided = 0) or
   all strided (*strided = 1); a mix is PTO_KERNEL_ERR_VIEW_KIND. */
/* The flat checks of an f32 map (IN args[0], OUT args[1]): the output a whole
   number of aligned f32, the input at least as large and aligned. */
int32_t kernel_check_unary_f32(const uint64_t *args, const uint64_t *sizes);

/* For a kernel of (IN a, OUT c [, SCALAR]): 2 or 3 params, and whether its two
   tensors are strided (kernel_view_kind). */
int32_t kernel_in_out_kind(uint32_t nargs, const PtoKernelContext *k, int *strided);

int32_t kernel_view_kind(const PtoKernelContext *k, const uint32_t *idx, uint32_t count, int *strided);

/* Checks strided parameter i and fills *t: a well-formed descriptor
   (PTO_KERNEL_ERR_BAD_VIEW), a known dtype (PTO_KERNEL_ERR_DTYPE), its span
   within arg_sizes[i] (PTO_KERNEL_ERR_VIEW_TOO_SMALL), an address aligned to
   its element size (PTO_KERNEL_ERR_MISALIGNED) and, for an output, no element
   reached by two distinct indices (PTO_KERNEL_ERR_OUTPUT_OVERLAP). */
int32_t kernel_strided_tensor(const uint64_t *args, const PtoKernelContext *k, uint32_t i, int output, KTensor *t);

/* Whether a and b have the same ndims and extents. */
int kernel_same_shape(const KTensor *a, const KTensor *b);

/* Visits the innermost rows of `count` tensors of one shape (t[0]'s) in
   row-major order: row(p, n, ctx) gets each tensor's pointer to the row's
   first element; along the row, tensor j advances by t[j].step[last]. */
typedef void (*KernelRowFn)(char *const *p, uint64_t n, const KTensor *t, void *ctx);
void kernel_for_each_row(const KTensor *t, uint32_t count, KernelRowFn row, void *ctx);

#endif
