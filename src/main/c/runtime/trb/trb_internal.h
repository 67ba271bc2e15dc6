/*
 * The trb runtime's own types: a registered callable and the per-slot
 * workspace its binds reuse. Internal to runtime/trb (and its native tests).
 */
#ifndef PTORUN_TRB_INTERNAL_H
#define PTORUN_TRB_INTERNAL_H

#include <stdint.h>

#include "format/chip_callable.h"
#include "device/pto_trb_abi.h"
#include "ptorun/pto_runtime_c_api.h"
#include "runtime/runtime.h"

/* One argument tensor as a bound run sees it. */
typedef struct TrbTensor {
    uint64_t host;            /* the caller's buffer (child memory: 0) */
    uint64_t dev;             /* device address of its bytes */
    uint64_t size;            /* bytes */
    uint8_t direction;        /* from the signature */
    uint8_t staged;           /* a slice of the slot's retained staging buffer */
} TrbTensor;

/* What one bind in one pipeline slot builds, kept for the next bind there: a
 * run allocates no host memory. */
typedef struct TrbWorkspace {
    TrbTensor tensors[PTO_MAX_TENSOR_ARGS];
    uint32_t tensor_count;
    ChipTensor dev_tensors[PTO_MAX_TENSOR_ARGS]; /* the args' tensors, addr on the device */
} TrbWorkspace;

struct RuntimeCallable {
    uint8_t *bytes;           /* a private copy of the caller's callable */
    ChipCallableView view;    /* over `bytes` */
    void *upload_dev;         /* the device copy (refcounted by the platform) */
    PtoTrbKernel kernels[PTO_CALLABLE_MAX_CHILDREN]; /* sorted by func_id */
    uint32_t kernel_count;
    uint64_t orchestration_hash; /* library orchestrations: FNV-1a 64 of the image */
    TrbWorkspace *workspaces[PTO_PIPELINE_MAX_DEPTH]; /* per pipeline slot */
};

/* Bytes of a run's header in the retained staging buffer (argument block, work
 * block, the args), before the first tensor slice. */
uint64_t trb_staging_header_bytes(void);

#endif
