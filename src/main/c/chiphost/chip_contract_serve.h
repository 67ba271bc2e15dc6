/*
 * The child's side of the proxied contract (chiphost/chip_contract_ops.h):
 * decodes a payload, checks the pointers it follows against the arena, calls
 * the loaded library's function (chip_library_contract) and encodes the
 * answer. Many lanes serve at once: nothing here is per-call state but the
 * log ring's mutex.
 */
#ifndef PTORUN_CHIP_CONTRACT_SERVE_H
#define PTORUN_CHIP_CONTRACT_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "chiphost/chip_arena.h"

/* Serves contract op `op` (CHIP_OP_CONTRACT_BASE..): the ChipHandler's contract. */
int32_t chip_contract_serve(const ChipArena *arena, uint32_t op, const void *in, size_t in_len, void *out,
                            size_t *out_len);

/* CHIP_OP_DESCRIBE: takes the log ring the request names (in the arena),
   answers the loaded library's ChipDescription. */
int32_t chip_contract_describe(const ChipArena *arena, const void *in, size_t in_len, void *out, size_t *out_len);

/* Moves the library's pending log records into the log ring (none named: they
   stay in the library). After every op served, before its answer. */
void chip_contract_drain_log(void);

#endif
