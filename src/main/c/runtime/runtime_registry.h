/*
 * Callable registration as hbg and trb share it: runtime_registry.c implements
 * runtime_register_callable and runtime_release_callable (runtime.h) once.
 * Register decodes and validates the callable, keeps a private copy, uploads it
 * (once per content: the platform resolves each child's kernel into the
 * upload), reads every child's kernel back, then lets the runtime add its own
 * part. Each runtime's struct RuntimeCallable begins with a CallableCopy and
 * provides the three hooks below.
 */
#ifndef PTORUN_RUNTIME_REGISTRY_H
#define PTORUN_RUNTIME_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "format/chip_callable.h"
#include "services/host_api.h"
#include "runtime/runtime.h"

/* The kernel one child resolved to. */
typedef struct CallableKernel {
    uint64_t addr;            /* resolved kernel address on the device */
    uint32_t func_id;
    uint32_t core_type;       /* PtoCoreType */
} CallableKernel;

/* The part of a registered callable both runtimes keep: the first member of
 * their struct RuntimeCallable. */
typedef struct CallableCopy {
    uint8_t *bytes;           /* a private copy of the caller's callable */
    ChipCallableView view;    /* over `bytes` */
    void *upload_dev;         /* the device copy (refcounted by the platform) */
    CallableKernel kernels[PTO_CALLABLE_MAX_CHILDREN]; /* per child, in child order */
} CallableCopy;

/* ---- provided by each runtime ---------------------------------------------- */

/* sizeof its struct RuntimeCallable (whose first member is the CallableCopy). */
size_t runtime_callable_size(void);

/* The runtime's own part of a callable whose copy is uploaded and whose kernels
 * are read (hbg: the orchestration library, or the program's local heap and
 * task count; trb: the kernel table sorted by func_id, the orchestration's
 * hash). On failure it has released what it took and recorded why. */
int runtime_callable_attach(const HostApi *api, RuntimeCallable *c);

/* Releases what runtime_callable_attach took. */
void runtime_callable_detach(const HostApi *api, RuntimeCallable *c);

#endif
