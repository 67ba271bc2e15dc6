/*
 * The built-in kernels of the AICore image: the one list of their names, read by
 * the image (which defines pto_kernel_<name> for each), by the callable decoder
 * (which refuses an unknown built-in name) and documented in docs/kernels.md.
 * Every built-in has the PtoKernelFn signature of ptorun/pto_kernel.h.
 */
#ifndef PTORUN_PTO_BUILTIN_KERNELS_H
#define PTORUN_PTO_BUILTIN_KERNELS_H

#define PTO_BUILTIN_KERNELS(X) \
    X(noop)                    \
    X(vcopy)                   \
    X(vfill)                   \
    X(vadd)                    \
    X(vadds)                   \
    X(vmul)                    \
    X(vmuls)                   \
    X(vsub)                    \
    X(vdiv)                    \
    X(vmax)                    \
    X(vexp)                    \
    X(vrelu)                   \
    X(reduce_sum)              \
    X(reduce_max)              \
    X(softmax_rows)            \
    X(gemm_tile)               \
    X(tile_add)

/* What a built-in returns when it refuses its task (the run then fails with
 * PTO_ERR_KERNEL_FAULT naming the task, its func_id and this code). A refusing
 * kernel has written nothing. */
#define PTO_KERNEL_OK 0
#include <stdint.h>

#define PTO_KERNEL_ERR_PARAM_COUNT 1    /* wrong number of parameters */
#define PTO_KERNEL_ERR_VIEW_TOO_SMALL 2 /* an input view is smaller than the output needs */
#define PTO_KERNEL_ERR_BAD_SIZE 3       /* an f32 view whose byte size is not a multiple of 4 */
#define PTO_KERNEL_ERR_MISALIGNED 4     /* an f32 view whose address is not 4-byte aligned */
#define PTO_KERNEL_ERR_BAD_SCALAR 5     /* a scalar parameter is out of range (0 columns, sizes that overflow) */
#define PTO_KERNEL_ERR_CORE_TYPE 6      /* the kernel runs on the other core type (gemm_tile: AIC only) */
#define PTO_KERNEL_ERR_DTYPE 7          /* a strided view's dtype the kernel does not take, or dtypes that disagree */
#define PTO_KERNEL_ERR_SHAPE 8          /* strided views whose shapes disagree, or not the dims the form needs */
#define PTO_KERNEL_ERR_VIEW_KIND 9      /* flat and strided tensor parameters in one task */
#define PTO_KERNEL_ERR_BAD_VIEW 10      /* a malformed strided view: > 5 dims, addr != arg, span overflowing */
#define PTO_KERNEL_ERR_OUTPUT_OVERLAP 11 /* an output view whose distinct indices reach the same element */

/* What a built-in kernel's refusal code means, for the runtimes' failure messages. */
static inline const char *pto_kernel_code_meaning(int32_t code)
{
    switch (code) {
    case PTO_KERNEL_ERR_PARAM_COUNT: return "wrong parameter count";
    case PTO_KERNEL_ERR_VIEW_TOO_SMALL: return "a view is too small";
    case PTO_KERNEL_ERR_BAD_SIZE: return "a view size is not a multiple of the element size";
    case PTO_KERNEL_ERR_MISALIGNED: return "a view is misaligned";
    case PTO_KERNEL_ERR_BAD_SCALAR: return "a scalar parameter is out of range";
    case PTO_KERNEL_ERR_CORE_TYPE: return "the kernel cannot run on this core type";
    case PTO_KERNEL_ERR_DTYPE: return "a view's dtype is not one the kernel takes";
    case PTO_KERNEL_ERR_SHAPE: return "the views' shapes do not fit the kernel";
    case PTO_KERNEL_ERR_VIEW_KIND: return "flat and strided views in one task";
    case PTO_KERNEL_ERR_BAD_VIEW: return "a malformed view descriptor";
    case PTO_KERNEL_ERR_OUTPUT_OVERLAP: return "an output view reaches one element through distinct indices";
    default: return "kernel-specific code";
    }
}

#endif
