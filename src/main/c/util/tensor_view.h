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

#endif
