/*
 * The hbg runtime's own types: a registered callable and the per-bank
 * workspace its binds reuse. Internal to runtime/hbg (and its native tests).
 */
#ifndef PTORUN_HBG_INTERNAL_H
#define PTORUN_HBG_INTERNAL_H

#include <stdint.h>

#include "common/chip_callable.h"
#include "ptorun/pto_runtime_c_api.h"
#include "runtime/hbg/hbg_bridge.h"
#include "runtime/hbg/hbg_graph.h"
#include "runtime/runtime.h"

/* One argument tensor as a bound run sees it. */
typedef struct HbgTensor {
    uint64_t host;            /* the caller's buffer (child memory: 0) */
    uint64_t dev;             /* device address of its bytes */
    uint64_t size;            /* bytes */
    uint8_t direction;        /* from the signature */
    uint8_t staged;           /* lives in the bank's GM heap for this run */
} HbgTensor;

/* Everything one bind in one bank builds, kept for the next bind in that bank
 * so a run allocates nothing once the workspace has seen its largest run. A
 * bank holds at most one run from bind to validate, so nothing here is shared. */
typedef struct HbgWorkspace {
    HbgTensor tensors[PTO_MAX_TENSOR_ARGS];
    uint32_t tensor_count;
    HbgGraph graph;
    HbgBridge bridge;
    uint8_t *image;           /* host build buffer of the device image */
    size_t image_cap;
} HbgWorkspace;

typedef struct HbgKernel {
    uint64_t addr;            /* resolved kernel address on the device */
    uint32_t func_id;
    uint32_t core_type;
} HbgKernel;

struct RuntimeCallable {
    uint8_t *bytes;           /* a private copy of the caller's callable */
    ChipCallableView view;    /* over `bytes` */
    void *upload_dev;         /* the device copy (refcounted by the platform) */
    HbgKernel kernels[PTO_CALLABLE_MAX_CHILDREN]; /* per child */
    HbgWorkspace *workspaces[PTO_PIPELINE_MAX_DEPTH]; /* per arena bank */
};

/* The workspace binds of `c` use in `bank` (tests inspect its bridge). */
HbgWorkspace *hbg_workspace(const RuntimeCallable *c, uint32_t bank);

#endif
