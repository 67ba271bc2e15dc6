/*
 * Extras of the emulated device driver (libptorun_emudrv.so) beyond the driver
 * ABI (pto_driver.h): fault injection and resource accounting, so tests can
 * drive every error path of the onboard runners and prove nothing leaks.
 */
#ifndef PTORUN_PTO_EMUDRV_H
#define PTORUN_PTO_EMUDRV_H

#include <stddef.h>
#include <stdint.h>

#include "ptorun/pto_export.h"

typedef enum PtoEmuFault {
    PTO_EMU_FAULT_NONE = 0,
    PTO_EMU_FAULT_ALLOC = 1,        /* mem_alloc fails with PTO_DRV_ERR_OUT_OF_MEMORY */
    PTO_EMU_FAULT_H2D = 2,          /* a host->device copy (sync or async) fails */
    PTO_EMU_FAULT_D2H = 3,          /* a device->host copy (sync or async) fails */
    PTO_EMU_FAULT_LAUNCH = 4,       /* launch is refused with PTO_DRV_ERR_LAUNCH */
    PTO_EMU_FAULT_STREAM = 5,       /* the next launch executes and then puts its stream in error */
    PTO_EMU_FAULT_HANG = 6,         /* the next AICPU launch hangs until its stream is synchronized past
                                       its timeout, destroyed, or the device is reset */
    PTO_EMU_FAULT_DEVICE_LOST = 7,  /* the device is lost: every call fails until reset_device */
    PTO_EMU_FAULT_PEER_LOST = 8     /* the next comm call or launch on a device that takes part in a comm
                                       group loses the device and its ranks: its peers see them gone */
} PtoEmuFault;

/* Arms one fault: the (after_n_calls + 1)-th call that can suffer `kind` (process-wide,
 * any device) fails, once. PTO_EMU_FAULT_NONE disarms everything. Returns 0, or -1 for
 * an unknown kind. */
PTO_EXPORT int ptorun_emudrv_inject(int kind, int after_n_calls);

typedef struct PtoEmuStats {
    uint64_t devices_open;
    uint64_t memory_committed;      /* bytes of device memory allocated, all devices */
    uint64_t allocations;           /* live allocations */
    uint64_t streams;               /* live streams */
    uint64_t images;                /* loaded images */
    uint64_t host_registrations;    /* live host views */
    uint64_t threads;               /* driver threads alive */
    uint64_t comm_ranks;            /* live comm ranks (comm_join without comm_leave) */
    uint64_t comm_window_sets;      /* live window allocations (comm_window_alloc without free) */
} PtoEmuStats;

/* The driver's own accounting, for leak checks. */
PTO_EXPORT void ptorun_emudrv_stats(PtoEmuStats *out);

#endif
