/* The sim runner: the device is simulated in-process. Device memory is host
 * memory with exact accounting and an optional capacity
 * (PTORUN_SIM_DEVICE_MEMORY bytes); everything the runner itself keeps on the
 * device (arenas, retained buffers, callable uploads) is allocated there too,
 * so committed_device_memory covers all of it. The device images are loaded
 * privately per runner (sim_image.h) and run on the runner's own persistent
 * device threads (sim_device_pool.h).
 *
 * Files: sim_runner.c (lifetime), sim_memory.c (device memory and the host
 * view), sim_kernels.c (kernel addresses, kernel libraries), sim_execution.c
 * (submit, query, await). */
#ifndef PTORUN_SIM_RUNNER_H
#define PTORUN_SIM_RUNNER_H

#include "util/library_cache.h"
#include "device/pto_device_abi.h"
#include "platform/runner_core.h"
#include "platform/sim/sim_device_pool.h"
#include "platform/sim/sim_image.h"

struct Runner {
    RunnerCore core;           /* first: what every runner keeps the same way; its lock guards what follows */
    SimImage aicpu, aicore;
    PtoAicpuEntryFn aicpu_entry;
    PtoAicpuDlopenCountFn aicpu_dlopen_count; /* NULL: the image loads no libraries */
    size_t aicpu_dlopen_before;   /* loads of AICPU image copies already unloaded */
    SimDevicePool *pool;
    /* user kernel libraries: the device side of the sim, loaded into this process like the images */
    LibraryCache kernel_libraries;
    /* Test facility: the submit after this many successful ones fails before the
     * marker, once (PTORUN_SIM_FAIL_ENQUEUE_AFTER, read at init; -1 = never). */
    long long fail_submit_after;
};

#endif
