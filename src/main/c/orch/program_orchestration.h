/*
 * The program orchestration: the built-in orchestration that interprets a
 * callable's program (include/ptorun/chip_callable.h) through a PtoOrchApi,
 * exactly as a user orchestration library would drive it. One implementation
 * for both runtimes: hbg calls it on the host inside bind, trb on the device's
 * first AICPU thread at launch — so it is compiled into the host libraries and
 * into the AICPU image, and depends on nothing host-only.
 *
 * SUBMIT      -> api->submit(func_id, params) with every tensor view resolved to
 *                a device address (argument tensor i: args->tensors[i].addr +
 *                offset; local tensor j: the address alloc_tensor returned)
 *                and checked against its tensor's bytes at run time; with
 *                predecessor ordinals, api->submit_after
 * ALLOC_TENSOR-> api->alloc_tensor(bytes) whenever the local is not allocated
 * LOOP/END    -> iterate with the loop variable of that depth
 * SCOPE_BEGIN -> api->scope_begin / SCOPE_END -> api->scope_end
 * SCOPE_BEGIN_MANUAL -> api->scope_begin_mode(PTO_SCOPE_MANUAL)
 * SUBGRAPH    -> nothing but noting where sub-graph id's boundary and body are
 *                (top level only, before its INVOKEs)
 * INVOKE      -> api->subgraph_submit(id, body, ctx, params) with the params
 *                resolved exactly as SUBMIT's (checks, messages, origins) and
 *                their directions the sub-graph's boundary; not inside a MANUAL
 *                scope; a NULL subgraph_submit is PTO_ERR_ORCHESTRATION. The
 *                body, when the runtime calls it to record the sub-graph, is
 *                interpreted like a program whose signature is the boundary:
 *                ARG_TENSOR i views boundary tensor i (boundary[i].value, of
 *                boundary[i].bytes), SCALAR_ARG j is boundary scalar j, and
 *                each such param carries reserved = PTO_SUBGRAPH_REF(i) (a
 *                scalar: PTO_SUBGRAPH_REF(tensors + j)); no origins. Its
 *                refusals are prefixed "program instruction n (SUBGRAPH id) body:". An INVOKE counts as
 *                submitted work for the loop rule below.
 *
 * The program must have passed registration's validation (chip_callable.h
 * decoder); the interpreter still checks everything that depends on the run
 * (views against tensor sizes, affine overflow, loop trip counts) and fails with
 * PTO_ERR_BAD_CALLABLE naming the instruction, never touching memory outside the
 * run's tensors. An error returned by an api call is returned unchanged.
 *
 * Semantics fixed with the runtimes (issue [3/8]):
 *  - loop variables by nesting depth (0 = outermost); PtoAffine = base +
 *    sum(coef[d] * var[d]) over the enclosing loops only; LOOP count 0 skips
 *    the body; counts above INT64_MAX are refused;
 *  - a flat view is [offset, offset + size) bytes from its tensor's addr, a
 *    strided view its dims' elements (format/program_view.h); either bounded
 *    by the tensor's size (argument tensors) or the ALLOC_TENSOR bytes (locals);
 *  - a local is allocated when its ALLOC_TENSOR executes while it is not
 *    allocated; later executions (in a loop inside its scope) reuse it. A
 *    SUBMIT using a local before that is refused. A local lives until the end
 *    of the innermost scope around its ALLOC_TENSOR (both runtimes free it
 *    there): a use after it is refused, its ALLOC_TENSOR running again (a loop
 *    around the scope) allocates it anew.
 *    alloc_tensor returning 0 fails the run with PTO_ERR_OUT_OF_MEMORY, the
 *    api's message prefixed by the instruction;
 *  - SCALAR_AFFINE passes the value as the raw bits of a signed 64-bit integer;
 *  - a loop iteration that submitted no task ends its loop: every iteration
 *    does the same operations, so the rest would submit nothing either.
 *
 * Messages are recorded with pto_fail (util/last_error.h). The AICPU image
 * compiles util/last_error.c as well, so on the device the message is in that
 * image's own per-thread buffer (pto_last_error() on the calling thread).
 */
#ifndef PTORUN_PROGRAM_ORCHESTRATION_H
#define PTORUN_PROGRAM_ORCHESTRATION_H

#include <stddef.h>
#include <stdint.h>

#include "ptorun/chip_callable.h"
#include "ptorun/pto_orchestration.h"

/* `program`/`program_bytes`: the callable's orchestration blob (PtoProgramHeader
 * first). `signature`/`signature_length`: the callable's parameter directions
 * (a view that writes an IN argument tensor is refused). */
int pto_program_orchestrate(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args,
                            const uint8_t *program, size_t program_bytes,
                            const uint8_t *signature, uint32_t signature_length);

/* What a submitted parameter's value is made of, for a runtime that records the
 * run's graph and replays it with other arguments (docs/recorded-graphs.md):
 * FIXED the program alone determines it; TENSOR(i) argument tensor i's device
 * address plus an offset the program determines; SCALAR(i) argument scalar i's
 * value; LOCAL(j) the address alloc_tensor returned for local j (the program's
 * ALLOC_TENSOR local_id) plus an offset the program determines. */
#define PTO_PARAM_ORIGIN_FIXED 0u
#define PTO_PARAM_ORIGIN_TENSOR(i) (1u + (uint32_t)(i))
#define PTO_PARAM_ORIGIN_SCALAR(i) (1u + PTO_MAX_TENSOR_ARGS + (uint32_t)(i))
#define PTO_PARAM_ORIGIN_LOCAL(j) (1u + PTO_MAX_TENSOR_ARGS + PTO_MAX_SCALAR_ARGS + (uint32_t)(j))

/* pto_program_orchestrate that, when `origins` is not NULL, writes the origin of
 * each parameter of a submit (origins[0 .. n)) before making it: the api's submit
 * may read them there; and before each alloc_tensor, origins[0] =
 * PTO_PARAM_ORIGIN_LOCAL(j) of the local j it allocates (a runtime whose local
 * addresses vary between runs records the call's address for j). */
int pto_program_orchestrate_origins(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args,
                                    const uint8_t *program, size_t program_bytes, const uint8_t *signature,
                                    uint32_t signature_length, uint32_t *origins);

#endif
