/*
 * Tensor views as byte sets (include/ptorun/pto_tensor.h): validation, the
 * byte span, and the exact questions dependency inference asks — do two views
 * share a byte, does one view hold every byte of another. Pure functions, no
 * allocation: the host runtimes (hbg) and the AICPU image (trb) compile the
 * same code, so both infer the same graph.
 *
 * A view's bytes: every element (i0, …) covers the esz = pto_dtype_bytes(dtype)
 * bytes at addr + esz * sum(i_d * strides[d]). A flat task parameter (view
 * ndims 0) is the 1-D U8 view tensor_view_flat(value, bytes) for every
 * question here.
 *
 * Cost: both questions reduce each view to runs of contiguous bytes (merging
 * contiguous dims) and descend only into the sub-blocks whose byte range can
 * meet the other view, so they are bounded by the rows (runs) of the views,
 * never by their elements: two dense views are one run each.
 */
#ifndef PTORUN_TENSOR_VIEW_H
#define PTORUN_TENSOR_VIEW_H

#include <stdint.h>

#include "ptorun/pto_orchestration.h"
#include "ptorun/pto_tensor.h"

/* NULL when `v` is a valid strided view (known dtype, ndims 1..5, its span and
 * addr + span without overflow), with *span set to its byte span: the offset of
 * its last byte + 1 from addr, 0 when any extent is 0. Otherwise a short
 * reason ("unknown dtype 12", …) that stays valid (a static string). Dims at
 * and past ndims are ignored. */
const char *tensor_view_check(const PtoTensorView *v, uint64_t *span);

/* The byte span of a valid view (as tensor_view_check reports it). */
uint64_t tensor_view_span(const PtoTensorView *v);

/* The flat view [addr, addr + bytes) as a 1-D U8 view. */
PtoTensorView tensor_view_flat(uint64_t addr, uint64_t bytes);

/* Whether two valid views share at least one byte (an empty view shares none). */
int tensor_view_conflict(const PtoTensorView *a, const PtoTensorView *b);

/* Whether every byte of `a` is a byte of `w` (valid views; an empty `a` is
 * covered by anything). Exact for every view, self-overlapping ones included
 * (distinct indices hitting the same bytes): it follows w's runs byte range
 * by byte range rather than counting bytes. */
int tensor_view_covers(const PtoTensorView *w, const PtoTensorView *a);

/* ---- task parameters -------------------------------------------------------
   A tensor parameter's view: ndims 0 is the flat byte view [value, value +
   bytes); ndims >= 1 a strided view with view.addr == value and bytes == its
   span. */

/* Whether p is a tensor parameter (IN, OUT, INOUT). */
int tensor_view_param_is_tensor(const PtoTaskParam *p);

/* NULL when the tensor parameter's view is well-formed (always for a flat
   one), else a short reason (a static string). */
const char *tensor_view_param_check(const PtoTaskParam *p);

/* Whether a kernel needs p's view stored to see it (a strided view, or a flat
   zero-byte one, which could not be told from a scalar otherwise); every
   other parameter's view follows from (value, bytes): see
   tensor_view_kernel_entry. */
int tensor_view_param_kept(const PtoTaskParam *p);

/* Whether a task's kernel views must be stored: for all n parameters, when
   any one's view must (tensor_view_param_kept). */
int tensor_view_params_kept(const PtoTaskParam *params, uint32_t n);

/* The PtoKernelContext.views entry of parameter p: zero for a scalar, {addr =
   value, ndims 0, the rest zero} for a flat view, the view itself (dims past
   ndims zeroed) for a strided one. */
PtoTensorView tensor_view_kernel_entry(const PtoTaskParam *p);

/* The entry a kernel gets for an argument whose view was not stored: what
   tensor_view_kernel_entry gives for a scalar (size 0) or a flat view with
   bytes (size > 0). */
static inline PtoTensorView tensor_view_entry_of_arg(uint64_t arg, uint64_t size)
{
    return (PtoTensorView){ .addr = size > 0 ? arg : 0 };
}

#endif
