/*
 * A trb recording compiled into the graph a replay walks (docs/recorded-graphs.md,
 * trb): a relocatable graph image (PtoGraphHeader, device/pto_device_abi.h) whose
 * arguments are relative to the WALK base table (PTO_TRB_WALK_BASE_*,
 * device/pto_trb_abi.h) — argument tensors and scalars at their param origins,
 * every local at its own offset in one block (never reused, so the walk needs no
 * heap ordering: the block's size is the sum of the program's allocations) — and
 * whose edges are exactly the recorded producers. Compiled on the host when a
 * recording is published.
 */
#ifndef PTORUN_TRB_WALK_IMAGE_H
#define PTORUN_TRB_WALK_IMAGE_H

#include <stdint.h>

#include "device/pto_device_abi.h"
#include "device/pto_trb_abi.h"

typedef struct TrbWalkImage {
    uint8_t *bytes;           /* the image (malloc'd) */
    uint64_t size;
    uint32_t task_count;
    uint64_t locals_bytes;    /* the locals' block */
} TrbWalkImage;

/* Compiles the `used` words of a complete recording of `tasks` tasks whose
   children are `kernels` (ascending func_id). PTO_OK; PTO_ERR_INVALID_ARGUMENT
   when the words do not compile (malformed, a child not in the table, a local
   used before its allocation, a graph past 2^32 - 1 tasks or params);
   PTO_ERR_OUT_OF_MEMORY. *out is untouched unless PTO_OK. */
int trb_walk_compile(const uint64_t *words, uint64_t used, uint64_t tasks, const PtoTrbKernel *kernels,
                     uint32_t kernel_count, TrbWalkImage *out);

void trb_walk_image_free(TrbWalkImage *img);

#endif
