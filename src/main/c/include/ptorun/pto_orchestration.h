/*
 * The orchestration API, one for both runtimes and for user orchestration
 * libraries: an orchestration submits tasks whose dependencies the runtime
 * infers from the bytes their views share (read-after-write, write-after-read,
 * write-after-write, in submission order; docs/orchestration.md).
 */
#ifndef PTORUN_PTO_ORCHESTRATION_H
#define PTORUN_PTO_ORCHESTRATION_H

#include <stdint.h>

#include "ptorun/pto_runtime_c_api.h"
#include "ptorun/pto_tensor.h"

typedef struct PtoTaskParam {
    uint32_t direction;       /* PtoArgDirection */
    uint32_t reserved;        /* 0 */
    uint64_t value;           /* tensors: device address of the view; scalars: raw bits */
    uint64_t bytes;           /* tensors: the view's byte span (below); scalars: 0 */
    /* tensors: the view itself.
       view.ndims == 0: the flat 1-D byte view [value, value + bytes), what an
       orchestration that builds flat views writes by leaving this field zero;
       the rest of `view` is ignored.
       view.ndims 1..5: a strided view (pto_tensor.h) with view.addr == value
       and bytes == its byte span: the offset of its last byte + 1 from addr
       (esz * (1 + sum((shape[d] - 1) * strides[d])), esz the dtype's bytes),
       0 when any extent is 0 (an empty view, which conflicts with nothing).
       A view breaking this is PTO_ERR_ORCHESTRATION at submit. Two views
       conflict when they share a byte; kernels get the view in
       PtoKernelContext.views. */
    PtoTensorView view;
} PtoTaskParam;

/* Scope modes (scope_begin_mode). AUTO infers every dependency; inside a MANUAL
   scope the runtime infers none between the scope's own tasks: each declares its
   predecessors in that scope with submit_after. Dependencies on tasks submitted
   before the scope, and of later tasks on the scope's tasks, are inferred as usual.
   A scope's own tasks are all tasks submitted while it is open, nested scopes
   included: an AUTO scope inside a MANUAL one infers nothing between them either.
   Every scope ends the lifetime of the tensors alloc_tensor returned inside it.
   Scopes nest at most 64 deep (docs/orchestration.md, "MANUAL scopes"). */
typedef enum PtoScopeMode { PTO_SCOPE_AUTO = 0, PTO_SCOPE_MANUAL = 1 } PtoScopeMode;

struct PtoOrchApi;

/* A sub-graph's body (subgraph_submit): submits the sub-graph's tasks through
   api/orch, with views inside the boundary views it is given or inside tensors
   it allocates with alloc_tensor (the invocation's own). It runs once per
   recording, not once per invocation, so it must depend on nothing but its
   boundary: read_tensor, write_tensor, MANUAL scopes, submit_after and nested
   subgraph_submit are refused inside it. */
typedef int (*PtoSubgraphBody)(const struct PtoOrchApi *api, void *orch, void *ctx, const PtoTaskParam *boundary,
                               uint32_t n);

/* In a sub-graph body, PtoTaskParam.reserved may name the boundary parameter a
   value stands for: PTO_SUBGRAPH_REF(k), k its index in the boundary. A scalar
   with it takes boundary[k]'s value at every invocation; without it, the value
   is a constant of the recording. A tensor view with it is a view of boundary
   view k (it must lie inside it); without it, of the first boundary view that
   holds it, or of the invocation's own tensors. */
#define PTO_SUBGRAPH_REF(k) (1u + (uint32_t)(k))

typedef struct PtoOrchApi {
    int (*submit)(void *orch, uint32_t func_id, const PtoTaskParam *params, uint32_t n);
    uint64_t (*alloc_tensor)(void *orch, uint64_t bytes);   /* intermediate, run-scoped; 0 on failure */
    int (*scope_begin)(void *orch);
    int (*scope_end)(void *orch);
    /* read or write bytes of a run tensor by device address: on hbg (host) through the
       host-access bridge, on trb (device) directly; outside the run's tensors: error */
    int (*read_tensor)(void *orch, uint64_t dev_addr, void *dst, uint64_t n);
    int (*write_tensor)(void *orch, uint64_t dev_addr, const void *src, uint64_t n);
    /* scope_begin(orch) is scope_begin_mode(orch, PTO_SCOPE_AUTO). */
    int (*scope_begin_mode)(void *orch, uint32_t mode);
    /* In the innermost scope, which must be MANUAL: submit a task that waits for
       exactly the tasks named in `after`, each the ordinal (0 = first) of an earlier
       submit of this scope instance; anything else is PTO_ERR_INVALID_ARGUMENT. */
    int (*submit_after)(void *orch, uint32_t func_id, const PtoTaskParam *params, uint32_t n,
                        const uint32_t *after, uint32_t n_after);
    /* Submits sub-graph `key` with this boundary (views and scalars) as one unit
       (docs/orchestration.md, "Sub-graphs"): the first submission of a key in a
       run calls body to record the sub-graph; later ones bind the boundary to
       that recording without calling body. The invocation waits for what its
       boundary views depend on, and later tasks touching them wait for all of
       it; its tensors from alloc_tensor are its own. A boundary whose geometry
       (count, directions, views' shapes, strides, dtypes and sizes, overlaps
       between them) differs from the recording's is PTO_ERR_ORCHESTRATION naming
       the parameter and both geometries. Not inside a MANUAL scope. */
    int (*subgraph_submit)(void *orch, uint32_t key, PtoSubgraphBody body, void *ctx, const PtoTaskParam *boundary,
                           uint32_t n);
} PtoOrchApi;

/* Receives the run's arguments with every tensor's addr rewritten to its device address. */
typedef int (*PtoOrchestrationFn)(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args);

#endif
