/*
 * The kernel signature: built-in kernels of the AICore image and user kernel
 * libraries alike. docs/kernels.md lists every built-in's parameters.
 */
#ifndef PTORUN_PTO_KERNEL_H
#define PTORUN_PTO_KERNEL_H

#include <stdint.h>

#include "ptorun/pto_tensor.h"

typedef struct PtoKernelContext {
    uint32_t core_type;       /* PtoCoreType: 0 AIC, 1 AIV */
    uint32_t core_id;         /* logical core that runs the task */
    uint32_t block_idx, block_dim;
    uint64_t task_id;
    /* Byte size of each argument's view (0 for scalars), parallel to `args`, so a
     * kernel can refuse a view too small for its work instead of overrunning it. */
    const uint64_t *arg_sizes;
    /* The view of each argument, parallel to `args`, on both runtimes: a
     * scalar's entry is all zero; a flat view's (submitted with ndims 0) is
     * {addr = args[i], ndims 0, the rest zero}, its bytes arg_sizes[i]; a
     * strided view's is the view as submitted (dims past ndims zero).
     * args[i] == views[i].addr for tensors. */
    const PtoTensorView *views;
    /* The kernel's message channel: a buffer of message_bytes (0: none, message
     * NULL) the kernel may fill with a NUL-terminated text before it returns
     * non-zero; the executor keeps the run's first faulting task's text and the
     * host appends it to the run's failure message (docs/kernels.md). Private
     * to this call (one per core), empty when the kernel starts. */
    char *message;
    uint32_t message_bytes;
} PtoKernelContext;

/* What the executors give every kernel call as PtoKernelContext.message. */
#define PTO_KERNEL_MESSAGE_BYTES 256u

/* args: per task parameter, in order, the device address of a tensor view or the
 * raw 64 bits of a scalar (an f32 scalar is its IEEE bits in the low 32 bits).
 * Non-zero return fails the run with PTO_ERR_KERNEL_FAULT (a built-in's
 * PTO_KERNEL_ERR_RANKS_DISAGREE with PTO_ERR_RANKS_DISAGREE), the text the kernel
 * left in k->message appended to the run's message. */
typedef int32_t (*PtoKernelFn)(const uint64_t *args, uint32_t nargs, const PtoKernelContext *k);

#endif
