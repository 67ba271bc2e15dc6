/*
 * A recording PtoOrchApi for the fuzz targets that run the program interpreter
 * (pto_program_orchestrate). It checks every call the interpreter makes:
 * each tensor parameter is a view inside one of the run's argument tensors or
 * inside a local the interpreter allocated through it, scalars carry no bytes,
 * directions are known, scopes never close more than they opened, and (with a
 * decoded callable) every func_id is a child of it. read_tensor/write_tensor
 * abort: the interpreter never calls them. subgraph_submit checks the boundary
 * like a submit's params and calls the body at every submission (not only the
 * first, as the sub-graph layer does: more of the body interpreted), with
 * scopes and locals of its own; the body's params marked PTO_SUBGRAPH_REF(k)
 * must be boundary parameter k's value or lie inside its view.
 *
 * Work is bounded: submit returns PTO_ERR_CAPACITY once `submit_budget` tasks
 * were accepted (the interpreter must hand that code back unchanged), and an
 * alloc_tensor of more than `alloc_limit` bytes returns 0.
 */
#ifndef PTORUN_FUZZ_ORCH_H
#define PTORUN_FUZZ_ORCH_H

#include <stdint.h>

#include "format/chip_callable.h"
#include "ptorun/pto_orchestration.h"

/* Where the fake hands out local tensors: far above any argument tensor the
   targets place (so a view of a local is never mistaken for an argument's). */
#define FUZZ_LOCAL_BASE 0x4000000000000000ull
#define FUZZ_LOCAL_STRIDE 0x1000ull

typedef struct FuzzRange {
    uint64_t addr, bytes;
} FuzzRange;

typedef struct FuzzOrch {
    /* set by the target */
    const ChipStorageTaskArgs *args;
    const ChipCallableView *view;     /* NULL: func_ids are not checked */
    uint64_t submit_budget;
    uint64_t alloc_limit;
    const uint32_t *origins;          /* NULL, or where the interpreter names each submit's param origins */
    /* recorded */
    uint64_t submitted;
    uint64_t relocated_hash;          /* with origins: the tasks with every param made relative to its origin */
    int budget_hit;                   /* submit returned PTO_ERR_CAPACITY */
    int alloc_refused;                /* alloc_tensor returned 0 */
    int after_refused;                /* submit_after named no earlier task of its scope */
    uint32_t local_count;             /* live locals: a scope's end frees those allocated in it */
    FuzzRange locals[PTO_PROGRAM_MAX_LOCALS];
    uint32_t scope_depth;
    /* per open scope (1..scope_depth): live locals and tasks submitted when it began, MANUAL or not */
    uint32_t scope_locals[PTO_PROGRAM_MAX_SCOPE_DEPTH + 1];
    uint64_t scope_first[PTO_PROGRAM_MAX_SCOPE_DEPTH + 1];
    uint8_t scope_manual[PTO_PROGRAM_MAX_SCOPE_DEPTH + 1];
    /* inside a sub-graph body: its boundary; NULL outside */
    const PtoTaskParam *boundary;
    uint32_t boundary_n;
    uint64_t invocations;             /* subgraph_submit calls */
} FuzzOrch;

/* With `origins` set, submit also checks each param's origin
   (orch/program_orchestration.h: a tensor view lies in the argument tensor or a
   local it names, a scalar of SCALAR(j) is scalar j's value, a view is never
   FIXED) and folds the task, every param made relative to its origin, into
   relocated_hash: two runs of one argument geometry must fold the same hash,
   whatever their addresses and scalar values — what a recorded graph relies on
   (docs/recorded-graphs.md). */

/* The api table over a FuzzOrch passed as `orch`. */
extern const PtoOrchApi fuzz_orch_api;

/* Ready for one interpreter run. */
void fuzz_orch_init(FuzzOrch *o, const ChipStorageTaskArgs *args, const ChipCallableView *view,
                    uint64_t submit_budget, uint64_t alloc_limit);

#endif
