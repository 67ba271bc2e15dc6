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
 * any device, and in every process sharing this driver's state: see ptorun_emudrv_state_fd)
 * fails, once. PTO_EMU_FAULT_NONE disarms everything. Returns 0, or -1 for an unknown kind. */
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

/* The driver's own accounting, for leak checks (summed over every process sharing its state). */
PTO_EXPORT void ptorun_emudrv_stats(PtoEmuStats *out);

/* The driver's state (the armed faults and the counters of ptorun_emudrv_stats) is one block
 * (16 KiB) of lock-free atomics in a memfd (close-on-exec), created on the driver's first use. A
 * process that starts a child which loads the driver too (a chip host, docs/isolation.md)
 * may hand it that page: the child inherits the fd (dup2 to a fixed number) and finds its
 * number in the environment variable PTO_EMUDRV_STATE_FD_ENV, set in the child's
 * environment only. The child's driver then maps that page on first use instead of
 * creating its own (a bad one: size, kind or magic wrong, is refused for a private page,
 * and ptorun_emudrv_state_warning says why), so a fault armed in either process fires
 * once, in whichever process first makes a call that can suffer it, and the stats count
 * both. A child that exits cleanly has given back what it counted; one that is killed may
 * leave its counts up. */
#define PTO_EMUDRV_STATE_FD_ENV "PTORUN_EMUDRV_STATE_FD"

/* The fd of the driver's state memfd (created now if need be), for a child to inherit;
 * -1 when the driver runs on private state (no memfd could be had). The driver keeps it:
 * never close it. */
PTO_EXPORT int ptorun_emudrv_state_fd(void);

/* Once: why the state page named by PTO_EMUDRV_STATE_FD_ENV was refused; NULL when it was
 * taken (or none was named), and on every later call. The onboard runner records it as a
 * native log warning (native code never prints). */
PTO_EXPORT const char *ptorun_emudrv_state_warning(void);

#endif
