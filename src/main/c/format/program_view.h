/*
 * The values a program computes: affine expressions with their clamps, and
 * the strided views of tensor parameters (include/ptorun/chip_callable.h).
 * One home for their meaning, used by registration's decoder (which proves
 * what it can for every iteration) and by the interpreter (which checks each
 * view again as it submits it). Pure functions: no allocation, no
 * last_error, so the AICPU image links them too.
 */
#ifndef PTORUN_FORMAT_PROGRAM_VIEW_H
#define PTORUN_FORMAT_PROGRAM_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "ptorun/chip_callable.h"
#include "ptorun/pto_tensor.h"

/* Elements beyond which a view's reach is refused (or left unproved): far past
   any tensor, low enough that sums of int64 products never overflow 128 bits. */
#define PTO_VIEW_REACH_LIMIT (((__int128)1) << 100)

/* The value of `a` with loop variable d = vars[d] (d < depth; a coefficient of
   a deeper variable must be 0), clamped. 0, or -1 when a step overflows int64. */
int pto_affine_eval(const PtoAffine *a, const int64_t *vars, uint32_t depth, int64_t *out);

/* Checks the fields of a strided view parameter (ndims 1..5) that do not
   depend on loop values: the dtype, strides and bounds >= 0, a SELECTED dim's
   extent left zero, unused dims zero, every clamp well-formed. 0, or -1 with
   the defect in why. */
int pto_view_param_check(const PtoProgramParam *p, char *why, size_t why_size);

/* Non-zero when a clamp of `a` is malformed (unknown bits, lo > hi, reserved set). */
int pto_affine_malformed(const PtoAffine *a);

/* Resolves a strided view parameter (already checked by pto_view_param_check) at
   loop values vars[0..depth) over a tensor of `tensor_bytes` bytes at
   `tensor_addr`: every dim's offset and extent inside its bound, the origin not
   negative, and every element inside the tensor. On success fills *view (the
   dims not SELECTED, in order; a view with every dim SELECTED is one element,
   ndims 1) and *span (bytes from view->addr past its last element; 0 when
   empty) and returns 0; otherwise -1 with the defect in why. */
int pto_view_param_resolve(const PtoProgramParam *p, const int64_t *vars, uint32_t depth, uint64_t tensor_addr,
                           uint64_t tensor_bytes, PtoTensorView *view, uint64_t *span, char *why, size_t why_size);

/* Writes "i0=3, i1=0" (or "no loop") for the loop values into buf. */
void pto_loop_values_text(const int64_t *vars, uint32_t depth, char *buf, size_t size);

#endif
