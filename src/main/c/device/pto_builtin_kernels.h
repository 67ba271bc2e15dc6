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
    X(tile_add)                \
    X(allreduce_sum)           \
    X(allgather)               \
    X(reduce_scatter)          \
    X(broadcast)

/* What a built-in returns when it refuses its task (the run then fails with
 * PTO_ERR_KERNEL_FAULT naming the task, its func_id and this code). A refusing
 * kernel has written nothing. */
#define PTO_KERNEL_OK 0
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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
/* The collectives (kernels_collective.c). A collective that refuses its
   arguments after its descriptor checked out breaks the domain naming its own
   rank, so its peers fail fast (PTO_KERNEL_ERR_PEER_LOST_BASE + that rank)
   instead of waiting for it until their timeout. */
#define PTO_KERNEL_ERR_COMM_CONTEXT 12  /* the comm scalar is 0 or no valid PtoCommDeviceContext */
#define PTO_KERNEL_ERR_NOT_IN_WINDOW 13 /* a data tensor that must lie in this rank's window does not */
#define PTO_KERNEL_ERR_COMM_OVERLAP 14  /* an output overlaps a rank's input */
/* The ranks' intents differ (kind, dtype, count, offset, root, window): no
   data moved, every rank did the exit sync (the domain stays usable) and left
   the same text in PtoKernelContext.message; the run fails with
   PTO_ERR_RANKS_DISAGREE. */
#define PTO_KERNEL_ERR_RANKS_DISAGREE 15
/* Sync failures name a rank r (0..PTO_COMM_MAX_RANKS-1) in the low byte. */
#define PTO_KERNEL_ERR_PEER_LOST_BASE 0x100    /* + r: rank r is gone, or the domain was broken naming it */
#define PTO_KERNEL_ERR_COMM_TIMEOUT_BASE 0x200 /* + r: timed out waiting for rank r */
#define PTO_KERNEL_ERR_RANK_SPAN 0x100

/* What a built-in kernel's refusal code means, for the runtimes' failure
   messages: a fixed text, or for a sync failure one naming the rank, written
   into buf (which it returns). */
static inline const char *pto_kernel_code_describe(int32_t code, char *buf, size_t size)
{
    const char *m;
    switch (code) {
    case PTO_KERNEL_ERR_PARAM_COUNT: m = "wrong parameter count"; break;
    case PTO_KERNEL_ERR_VIEW_TOO_SMALL: m = "a view is too small"; break;
    case PTO_KERNEL_ERR_BAD_SIZE: m = "a view size is not a multiple of the element size"; break;
    case PTO_KERNEL_ERR_MISALIGNED: m = "a view is misaligned"; break;
    case PTO_KERNEL_ERR_BAD_SCALAR: m = "a scalar parameter is out of range"; break;
    case PTO_KERNEL_ERR_CORE_TYPE: m = "the kernel cannot run on this core type"; break;
    case PTO_KERNEL_ERR_DTYPE: m = "a view's dtype is not one the kernel takes"; break;
    case PTO_KERNEL_ERR_SHAPE: m = "the views' shapes do not fit the kernel"; break;
    case PTO_KERNEL_ERR_VIEW_KIND: m = "flat and strided views in one task"; break;
    case PTO_KERNEL_ERR_BAD_VIEW: m = "a malformed view descriptor"; break;
    case PTO_KERNEL_ERR_OUTPUT_OVERLAP: m = "an output view reaches one element through distinct indices"; break;
    case PTO_KERNEL_ERR_COMM_CONTEXT: m = "no valid communication domain descriptor"; break;
    case PTO_KERNEL_ERR_NOT_IN_WINDOW: m = "a tensor is not inside this rank's communication window"; break;
    case PTO_KERNEL_ERR_COMM_OVERLAP: m = "an output overlaps a rank's input"; break;
    case PTO_KERNEL_ERR_RANKS_DISAGREE: m = "the ranks disagree on the collective"; break;
    default:
        if (code >= PTO_KERNEL_ERR_PEER_LOST_BASE && code < PTO_KERNEL_ERR_PEER_LOST_BASE + PTO_KERNEL_ERR_RANK_SPAN) {
            snprintf(buf, size, "rank %d is gone or broke the communication domain",
                     code - PTO_KERNEL_ERR_PEER_LOST_BASE);
            return buf;
        }
        if (code >= PTO_KERNEL_ERR_COMM_TIMEOUT_BASE &&
            code < PTO_KERNEL_ERR_COMM_TIMEOUT_BASE + PTO_KERNEL_ERR_RANK_SPAN) {
            snprintf(buf, size, "timed out waiting for rank %d", code - PTO_KERNEL_ERR_COMM_TIMEOUT_BASE);
            return buf;
        }
        m = "kernel-specific code";
        break;
    }
    snprintf(buf, size, "%s", m);
    return buf;
}

#endif
