/*
 * A tensor view as tasks and kernels see it: a device address, an element
 * type, up to five dimensions and an element stride per dimension. Element
 * (i0, …, i{n-1}) of the view lives at
 *
 *     addr + elem_bytes(dtype) * sum(i_d * strides[d])
 *
 * Strides are in elements and never negative (a transpose permutes dims, it
 * does not reverse them); a stride of 0 repeats an element along that dim.
 * A view with any extent 0 is empty: it has no element and conflicts with
 * nothing. Two views conflict when they share a byte and at least one of them
 * is written (docs/orchestration.md); the runtimes infer dependencies from
 * exactly that rule.
 */
#ifndef PTORUN_PTO_TENSOR_H
#define PTORUN_PTO_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#define PTO_VIEW_MAX_DIMS 5u

typedef struct PtoTensorView {
    uint64_t addr;                        /* device address of element (0, …, 0) */
    uint32_t dtype;                       /* PtoDataType (pto_runtime_c_api.h) */
    uint32_t ndims;                       /* 1..PTO_VIEW_MAX_DIMS; 0: no strided view (a scalar, or a
                                             flat byte view: PtoTaskParam, PtoKernelContext) */
    uint64_t shape[PTO_VIEW_MAX_DIMS];    /* extent per dim, outermost first; unused dims 0 */
    uint64_t strides[PTO_VIEW_MAX_DIMS];  /* element stride per dim; unused dims 0 */
} PtoTensorView;

_Static_assert(sizeof(PtoTensorView) == 96, "PtoTensorView size");
_Static_assert(offsetof(PtoTensorView, shape) == 16, "PtoTensorView.shape");
_Static_assert(offsetof(PtoTensorView, strides) == 56, "PtoTensorView.strides");

#endif
