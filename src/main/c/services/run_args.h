/* The run's arguments against its callable's signature, as both runtimes
 * check them in prepare before staging anything. */
#ifndef PTORUN_RUN_ARGS_H
#define PTORUN_RUN_ARGS_H

#include "format/chip_callable.h"
#include "services/host_api.h"
#include "ptorun/pto_runtime_c_api.h"

/* PTO_OK, or PTO_ERR_BAD_CALLABLE naming the defect: counts within 256/128 and
 * equal to the signature's; per tensor ndims 1..5, a known dtype, strides > 0,
 * `size` at least what shape, strides and start_offset reach (overflow-checked),
 * a non-NULL address when it has bytes, no wrap-around; a child_memory tensor
 * must lie in this device's memory (both ends probed through `api`). */
int run_args_check(const HostApi *api, const ChipCallableView *v, const ChipStorageTaskArgs *args);

#endif
