/*
 * A bound run's tensor table as hbg and trb share it: every argument tensor
 * with its host buffer, its device address and whether the run staged it (hbg
 * into the bank's GM heap, trb into a slice of the slot's retained staging
 * buffer). It lives in the run's slot scratch (runtime.h).
 */
#ifndef PTORUN_RUN_TENSORS_H
#define PTORUN_RUN_TENSORS_H

#include <stdint.h>

#include "format/chip_callable.h"
#include "services/host_api.h"
#include "ptorun/pto_runtime_c_api.h"

/* One argument tensor as a bound run sees it. */
typedef struct RunTensor {
    uint64_t host;            /* the caller's buffer (child memory: 0) */
    uint64_t dev;             /* device address of its bytes (planned: an offset until relocated) */
    uint64_t size;            /* bytes */
    uint8_t direction;        /* from the signature */
    uint8_t staged;           /* the run copies it to the device and back */
} RunTensor;

typedef struct RunTensorTable {
    RunTensor entries[PTO_MAX_TENSOR_ARGS];
    uint32_t count;
} RunTensorTable;

/* Records every tensor of `args` (direction from the signature of `v`; child
 * memory is passed through at its own address) and lays the staged ones out
 * from offset `start`, each at an `align`-aligned offset. *end = the first byte
 * past the last one. PTO_ERR_CAPACITY ("... than <holder> can hold") when they
 * need more than half the address space. */
int run_tensors_plan(RunTensorTable *t, const ChipCallableView *v, const ChipStorageTaskArgs *args, uint64_t start,
                     uint64_t align, const char *holder, uint64_t *end);

/* Adds `base` to every staged tensor's planned offset: its device address. */
void run_tensors_relocate(RunTensorTable *t, uint64_t base);

/* The args' tensors as the device sees them: `args`' own, at their device address. */
void run_tensors_device_view(const RunTensorTable *t, const ChipStorageTaskArgs *args, ChipTensor *out);

/* IN and INOUT tensors are copied to the device; pure OUT ones are zeroed, so
   bytes no kernel writes come back as zeros rather than as another run's data. */
int run_tensors_stage(const HostApi *api, const RunTensorTable *t);

/* Copies every staged OUT and INOUT tensor back to the caller's buffer. */
int run_tensors_copy_back(const HostApi *api, const RunTensorTable *t);

#endif
