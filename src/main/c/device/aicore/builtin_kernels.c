/*
 * The AICore image: the built-in kernels (device/pto_builtin_kernels.h lists
 * them, docs/kernels.md documents their parameters), one file per concept:
 * kernels_elementwise.c, kernels_reduce.c, kernels_matrix.c,
 * kernels_collective.c. This file holds the image's entry points and what the kernels share: the checks of flat
 * views and the resolution and walking of strided views (kernel_common.h).
 *
 * Each kernel checks its parameter count and every view it relies on
 * (PtoKernelContext.arg_sizes, .views) before touching memory, so a malformed
 * task is refused, never overrun, and a refused task has written nothing.
 *
 * Views may alias (c = a + s in place), so nothing here is `restrict`.
 *
 * Results must be bit-identical to a plain sequential reference (docs/kernels.md
 * fixes every summation order): the image is compiled with -ffp-contract=off
 * (no fused multiply-add) and never with reassociating flags.
 */
#include <stdint.h>

#include "device/aicore/kernel_common.h"
#include "device/pto_device_abi.h"

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

KERNEL_SIGNATURE(noop)
{
    (void)args, (void)nargs, (void)k;
    return PTO_KERNEL_OK;
}

int32_t kernel_check_f32_view(uint64_t addr, uint64_t bytes)
{
    if (bytes % sizeof(float) != 0)
        return PTO_KERNEL_ERR_BAD_SIZE;
    if (addr % _Alignof(float) != 0)
        return PTO_KERNEL_ERR_MISALIGNED;
    return PTO_KERNEL_OK;
}

int32_t kernel_check_unary_f32(const uint64_t *args, const uint64_t *sizes)
{
    int32_t rc;
    if ((rc = kernel_check_f32_view(args[1], sizes[1])) != PTO_KERNEL_OK)
        return rc;
    if (sizes[0] < sizes[1])
        return PTO_KERNEL_ERR_VIEW_TOO_SMALL;
    if (args[0] % _Alignof(float) != 0)
        return PTO_KERNEL_ERR_MISALIGNED;
    return PTO_KERNEL_OK;
}

int32_t kernel_in_out_kind(uint32_t nargs, const PtoKernelContext *k, int *strided)
{
    static const uint32_t idx[2] = { 0, 1 };
    if (nargs != 2 && nargs != 3)
        return PTO_KERNEL_ERR_PARAM_COUNT;
    return kernel_view_kind(k, idx, 2, strided);
}

int32_t kernel_view_kind(const PtoKernelContext *k, const uint32_t *idx, uint32_t count, int *strided)
{
    /* No views at all is how every runtime called kernels before views existed:
       all flat. */
    uint32_t n_strided = 0;
    if (k->views != NULL)
        for (uint32_t j = 0; j < count; j++)
            n_strided += k->views[idx[j]].ndims != 0;
    if (n_strided != 0 && n_strided != count)
        return PTO_KERNEL_ERR_VIEW_KIND;
    *strided = n_strided != 0;
    return PTO_KERNEL_OK;
}

/* Whether an output's elements are all distinct: with its dims of extent > 1
   taken by ascending stride, each stride must exceed the farthest offset the
   smaller-strided dims reach. That is exact for every layout a slice, a tile
   or a transpose of a dense tensor gives; the rare interleaved layout it also
   refuses cannot come from one. */
static int distinct_elements(const uint64_t *shape, const uint64_t *strides, uint32_t ndims)
{
    uint32_t order[PTO_VIEW_MAX_DIMS], n = 0;
    for (uint32_t d = 0; d < ndims; d++) {
        if (shape[d] < 2)
            continue;
        uint32_t at = n++;
        while (at > 0 && strides[order[at - 1]] > strides[d]) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = d;
    }
    uint64_t reach = 0; /* cannot overflow: the caller bounded the span */
    for (uint32_t j = 0; j < n; j++) {
        uint32_t d = order[j];
        if (strides[d] <= reach)
            return 0;
        reach += (shape[d] - 1) * strides[d];
    }
    return 1;
}

int32_t kernel_strided_tensor(const uint64_t *args, const PtoKernelContext *k, uint32_t i, int output, KTensor *t)
{
    const PtoTensorView *v = &k->views[i];
    if (v->ndims == 0 || v->ndims > PTO_VIEW_MAX_DIMS || v->addr != args[i])
        return PTO_KERNEL_ERR_BAD_VIEW;
    uint32_t esz = pto_dtype_bytes(v->dtype);
    if (esz == 0)
        return PTO_KERNEL_ERR_DTYPE;
    memset(t, 0, sizeof *t);
    t->base = (char *)(uintptr_t)v->addr;
    t->dtype = v->dtype;
    t->esz = esz;
    t->ndims = v->ndims;
    for (uint32_t d = 0; d < v->ndims; d++) {
        t->shape[d] = v->shape[d];
        t->empty |= v->shape[d] == 0;
    }
    if (t->empty)
        return PTO_KERNEL_OK; /* no element: nothing is read or written */
    /* The offset of the last element, then the span in bytes: either
       overflowing makes the descriptor unusable. */
    uint64_t last = 0, span, term, end;
    for (uint32_t d = 0; d < v->ndims; d++) {
        if (__builtin_mul_overflow(v->shape[d] - 1, v->strides[d], &term) ||
            __builtin_add_overflow(last, term, &last))
            return PTO_KERNEL_ERR_BAD_VIEW;
    }
    if (__builtin_add_overflow(last, 1, &span) || __builtin_mul_overflow(span, (uint64_t)esz, &span) ||
        span > (uint64_t)INT64_MAX || __builtin_add_overflow(v->addr, span, &end))
        return PTO_KERNEL_ERR_BAD_VIEW;
    if (span > k->arg_sizes[i])
        return PTO_KERNEL_ERR_VIEW_TOO_SMALL;
    if (v->addr % esz != 0)
        return PTO_KERNEL_ERR_MISALIGNED;
    if (output && !distinct_elements(v->shape, v->strides, v->ndims))
        return PTO_KERNEL_ERR_OUTPUT_OVERLAP;
    /* A dim of extent 1 is never stepped along, whatever its stride. Any other
       step is below the span, so it fits int64. */
    for (uint32_t d = 0; d < v->ndims; d++)
        t->step[d] = v->shape[d] > 1 ? (int64_t)(v->strides[d] * esz) : 0;
    return PTO_KERNEL_OK;
}

int kernel_same_shape(const KTensor *a, const KTensor *b)
{
    if (a->ndims != b->ndims)
        return 0;
    for (uint32_t d = 0; d < a->ndims; d++)
        if (a->shape[d] != b->shape[d])
            return 0;
    return 1;
}

#define ROW_MAX_TENSORS 3u

void kernel_for_each_row(const KTensor *t, uint32_t count, KernelRowFn row, void *ctx)
{
    const uint32_t nd = t[0].ndims;
    if (t[0].empty || count > ROW_MAX_TENSORS)
        return;
    /* Byte offsets from each base, kept in unsigned arithmetic: rewinding a
       dim wraps through values no pointer may hold, so pointers are formed
       only for rows that exist. */
    uint64_t off[ROW_MAX_TENSORS] = { 0 }, idx[PTO_VIEW_MAX_DIMS] = { 0 };
    char *p[ROW_MAX_TENSORS];
    for (;;) {
        for (uint32_t j = 0; j < count; j++)
            p[j] = t[j].base + off[j];
        row(p, t[0].shape[nd - 1], t, ctx);
        int d = (int)nd - 2;
        for (; d >= 0; d--) {
            for (uint32_t j = 0; j < count; j++)
                off[j] += (uint64_t)t[j].step[d];
            if (++idx[d] < t[0].shape[d])
                break;
            for (uint32_t j = 0; j < count; j++)
                off[j] -= (uint64_t)t[j].step[d] * t[0].shape[d];
            idx[d] = 0;
        }
        if (d < 0)
            return;
    }
}
