/*
 * Fuzz target: the program interpreter (orch/program_orchestration.c) on
 * program bytes that never passed registration. On trb it reads the program
 * from device memory the host wrote, so it trusts nothing; this target holds it
 * to that.
 *
 * Input:
 *   u8  L                     signature length
 *   u8  signature[L]          raw directions (handed over in an L-byte buffer; NULL when L = 0)
 *   u8  tensor_count          the run's argument tensors
 *   u8  scalar_count          the run's scalars (> 128 is out of range)
 *   u32 size[tensor_count]    bytes of each argument tensor, placed at (i + 1) << 40
 *   ... the program           (handed over in a buffer of exactly its size)
 *
 * Invariants, beyond "no crash, no leak, no UB, no read outside the program
 * and signature buffers":
 *  - the code is PTO_OK, PTO_ERR_BAD_CALLABLE (message naming the program),
 *    PTO_ERR_INVALID_ARGUMENT exactly when scalar_count > 128,
 *    PTO_ERR_OUT_OF_MEMORY only after the fake refused an ALLOC_TENSOR (the
 *    message names it), or the fake's PTO_ERR_CAPACITY unchanged; every
 *    failure leaves a message;
 *  - every submitted tensor view lies inside its argument tensor or its local,
 *    scalars carry no bytes, scopes balance (fuzz_orch.c);
 *  - the same input gives the same code and the same tasks again;
 *  - every param's origin (pto_program_orchestrate_origins) is right, and a run
 *    with every tensor elsewhere and other scalar values gives the same code and
 *    the same tasks up to those origins: the program's graph depends on the
 *    argument geometry only, which recorded graphs rely on (fuzz_orch.h).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/last_error.h"
#include "orch/program_orchestration.h"
#include "fuzz_common.h"
#include "fuzz_orch.h"
#include "ptorun/pto_runtime_c_api.h"

#define SUBMIT_BUDGET 4096u
#define ALLOC_LIMIT (1ull << 30)

typedef struct Outcome {
    int rc;
    uint64_t submitted;
    uint32_t locals;
    uint64_t relocated_hash;
} Outcome;

static Outcome run_once(const ChipStorageTaskArgs *args, const uint8_t *program, size_t program_bytes,
                        const uint8_t *signature, uint32_t signature_length)
{
    FuzzOrch orch;
    fuzz_orch_init(&orch, args, NULL, SUBMIT_BUDGET, ALLOC_LIMIT);
    uint32_t origins[PTO_MAX_TASK_PARAMS];
    orch.origins = origins;
    pto_clear_error();
    int rc = pto_program_orchestrate_origins(&fuzz_orch_api, &orch, args, program, program_bytes, signature,
                                             signature_length, origins);
    const char *msg = pto_last_error();
    FUZZ_CHECK(fuzz_documented_code(rc), "undocumented code %d", rc);
    if (rc != PTO_OK)
        FUZZ_CHECK(fuzz_message_ok(msg, PTO_ERROR_MESSAGE_BYTES), "failure %d without a message", rc);
    switch (rc) {
    case PTO_OK:
        FUZZ_CHECK(orch.scope_depth == 0, "success with %u scopes open", orch.scope_depth);
        FUZZ_CHECK(!orch.budget_hit && !orch.alloc_refused, "success after the fake refused a call%s", "");
        break;
    case PTO_ERR_BAD_CALLABLE:
        FUZZ_CHECK(strncmp(msg, "program", 7) == 0, "a refusal not naming the program: %s", msg);
        break;
    case PTO_ERR_INVALID_ARGUMENT:
        FUZZ_CHECK(args->scalar_count > PTO_MAX_SCALAR_ARGS || orch.after_refused,
                   "INVALID_ARGUMENT for %d scalars: %s", args->scalar_count, msg);
        break;
    case PTO_ERR_OUT_OF_MEMORY:
        /* the fake's refusal, or a sub-graph body's tensors past the recorder's bound */
        FUZZ_CHECK((orch.alloc_refused && strstr(msg, "ALLOC_TENSOR") != NULL) || strstr(msg, "subgraph_submit") != NULL,
                   "OUT_OF_MEMORY: %s", msg);
        break;
    case PTO_ERR_CAPACITY:
        FUZZ_CHECK(orch.budget_hit, "CAPACITY without the budget reached: %s", msg);
        break;
    case PTO_ERR_ORCHESTRATION: /* a sub-graph's boundary of another geometry than its recording's */
        FUZZ_CHECK(orch.subgraph_refused && strstr(msg, "subgraph_submit") != NULL, "ORCHESTRATION: %s", msg);
        break;
    default:
        FUZZ_CHECK(0, "unexpected code %d: %s", rc, msg);
    }
    if (args->scalar_count > PTO_MAX_SCALAR_ARGS)
        FUZZ_CHECK(rc == PTO_ERR_INVALID_ARGUMENT, "%d scalars accepted with %d", args->scalar_count, rc);
    fuzz_expect(rc == PTO_OK, "pto_program_orchestrate", msg);
    fuzz_orch_finish(&orch);
    return (Outcome){ rc, orch.submitted, orch.local_count, orch.relocated_hash };
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t at = 0;
    uint32_t signature_length = (uint32_t)fuzz_read_le(data, size, at++, 1);
    uint8_t *signature = NULL;
    if (signature_length > 0) {
        signature = calloc(1, signature_length);
        FUZZ_CHECK(signature != NULL, "out of memory%s", "");
        for (uint32_t i = 0; i < signature_length; i++)
            signature[i] = (uint8_t)fuzz_read_le(data, size, at++, 1);
    }
    ChipStorageTaskArgs *args = aligned_alloc(_Alignof(ChipStorageTaskArgs), sizeof *args);
    FUZZ_CHECK(args != NULL, "out of memory%s", "");
    memset(args, 0, sizeof *args);
    args->tensor_count = (int32_t)fuzz_read_le(data, size, at++, 1);
    args->scalar_count = (int32_t)fuzz_read_le(data, size, at++, 1);
    for (int32_t i = 0; i < args->tensor_count; i++, at += 4) {
        args->tensors[i].addr = (uint64_t)(i + 1) << 40;
        args->tensors[i].size = fuzz_read_le(data, size, at, 4);
    }
    for (int32_t i = 0; i < args->scalar_count && i < PTO_MAX_SCALAR_ARGS; i++)
        args->scalars[i] = 0x5ca1a5000000ull + (uint64_t)i;

    size_t program_bytes = at < size ? size - at : 0;
    uint8_t *program = malloc(program_bytes > 0 ? program_bytes : 1);
    FUZZ_CHECK(program != NULL, "out of memory%s", "");
    if (program_bytes > 0)
        memcpy(program, data + at, program_bytes);

    Outcome first = run_once(args, program, program_bytes, signature, signature_length);
    Outcome second = run_once(args, program, program_bytes, signature, signature_length);
    FUZZ_CHECK(first.rc == second.rc && first.submitted == second.submitted && first.locals == second.locals,
               "two runs differ: %d/%d, %llu/%llu tasks", first.rc, second.rc, (unsigned long long)first.submitted,
               (unsigned long long)second.submitted);

    /* the same geometry elsewhere, with other scalars: the same graph up to the origins */
    for (int32_t i = 0; i < args->tensor_count; i++)
        args->tensors[i].addr += 0x10000ull * (uint64_t)(i + 3);
    for (int32_t i = 0; i < args->scalar_count && i < PTO_MAX_SCALAR_ARGS; i++)
        args->scalars[i] ^= 0xfedcba9876ull;
    Outcome moved = run_once(args, program, program_bytes, signature, signature_length);
    FUZZ_CHECK(moved.rc == first.rc && moved.submitted == first.submitted && moved.relocated_hash == first.relocated_hash,
               "the same geometry elsewhere differs: %d/%d, %llu/%llu tasks, relocated hash %llx/%llx", first.rc,
               moved.rc, (unsigned long long)first.submitted, (unsigned long long)moved.submitted,
               (unsigned long long)first.relocated_hash, (unsigned long long)moved.relocated_hash);

    free(program);
    free(args);
    free(signature);
    return 0;
}
