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
 *                and checked against its tensor's bytes at run time
 * ALLOC_TENSOR-> api->alloc_tensor(bytes), once per local id
 * LOOP/END    -> iterate with the loop variable of that depth
 * SCOPE_BEGIN -> api->scope_begin / SCOPE_END -> api->scope_end
 *
 * The program must have passed registration's validation (chip_callable.h
 * decoder); the interpreter still checks everything that depends on the run
 * (views against tensor sizes, affine overflow, loop trip counts) and fails with
 * PTO_ERR_BAD_CALLABLE naming the instruction, never touching memory outside the
 * run's tensors. An error returned by an api call is returned unchanged.
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

#endif
