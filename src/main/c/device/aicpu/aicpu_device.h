/*
 * What every kind of device work shares inside the AICPU image: the one lock
 * and the run's identity, the logical cores, the participations (eager and on
 * demand, device/pto_device_abi.h), the status block, and calling a kernel.
 *
 * The state lives in the image's globals: a platform loads one copy of the
 * image per device and a device executes one launch at a time, so the globals
 * are exactly "this device's executor". Everything here is guarded by
 * aicpu_device.lock unless a comment says otherwise.
 */
#ifndef PTORUN_AICPU_DEVICE_H
#define PTORUN_AICPU_DEVICE_H

#include <pthread.h>
#include <stdint.h>

#include "arch/arch.h"
#include "device/pto_device_abi.h"
#include "ptorun/pto_tensor.h"

#define AICPU_CORE_TYPES 2
#define AICPU_LANES_PER_BLOCK (PTO_ARCH_AIC_PER_BLOCK + PTO_ARCH_AIV_PER_BLOCK)
#define AICPU_MAX_CORES_PER_TYPE (PTO_ARCH_MAX_BLOCKS * PTO_ARCH_AIV_PER_BLOCK)

typedef struct AicpuDevice {
    pthread_mutex_t lock;         /* guards everything below and the work kinds' state */
    pthread_cond_t work_cond;     /* parked participations (eager launch) */

    /* which run: a new (args, run_serial) pair starts a new one */
    PtoAicpuArgs *args;
    uint64_t serial;

    /* logical cores: block * 3 + lane, lane 0 the AIC */
    uint32_t block_dim;
    uint32_t free_cores[AICPU_CORE_TYPES][AICPU_MAX_CORES_PER_TYPE]; /* stacks of idle cores */
    uint32_t free_count[AICPU_CORE_TYPES];

    uint32_t in_flight;           /* kernels running now */
    uint64_t completed;           /* kernels returned */
    int stopping;                 /* an error is recorded: start nothing more */
    int ended;                    /* the status block is final */

    /* participations */
    uint32_t running;             /* inside the entry, parked ones included */
    uint32_t parked;
    uint32_t signaled;            /* parked ones already woken, not yet running */
    uint32_t requested;           /* asked of the platform, not yet arrived */

    /* the run's trace buffer (args->trace_dev), NULL when off; set at start,
       read unlocked by aicpu_run_kernel */
    PtoTraceHeader *trace;
} AicpuDevice;

extern AicpuDevice aicpu_device;

/* Forgets the previous run and binds `args`; every core free, nothing counted. */
void aicpu_device_start(AicpuDevice *d, PtoAicpuArgs *args, uint32_t block_dim);

/* The lowest-numbered idle core of a type (0 when none: check free_count first). */
uint32_t aicpu_core_take(AicpuDevice *d, uint32_t core_type);
void aicpu_core_give(AicpuDevice *d, uint32_t core_type, uint32_t core);

/* Records the run's first error in the status block and starts no more tasks. */
void aicpu_record_error(AicpuDevice *d, int32_t code, int32_t kernel_code, uint64_t task_id, uint32_t func_id,
                        uint32_t core_id);

/* A kernel returned rc != 0: records the run's first error as KERNEL_FAULT
   and, when it is the first, copies the kernel's message (its
   PtoKernelContext.message, "" when it left none) to args->message_dev. */
void aicpu_record_kernel_fault(AicpuDevice *d, int32_t rc, uint64_t task_id, uint32_t func_id, uint32_t core_id,
                               const char *message);

/* A host stop request (the sim's timeout) becomes the error when work is left. */
void aicpu_check_stop_request(AicpuDevice *d, int work_left);

/* Makes the status block final and wakes every parked participation. */
void aicpu_end_run(AicpuDevice *d);

/* A participation entering (it may be one the executor requested). */
void aicpu_participation_begin(AicpuDevice *d);

/* Participations asked of the platform (on demand) or signaled (eager) that
   have not arrived yet: each will take a ready task. */
uint32_t aicpu_on_the_way(const AicpuDevice *d);

/* `startable` tasks could start now beside the caller's: wakes parked
   participations (eager) or returns how many to ask the platform for, already
   counted as requested (on demand), for the tasks no participation on its way
   will take. Call hooks->request_threads with the
   result after unlocking, then aicpu_requests_granted. */
uint32_t aicpu_spread_work(AicpuDevice *d, uint32_t startable, uint32_t thread_count, const PtoAicpuHooks *hooks);
uint32_t aicpu_request_threads(const PtoAicpuHooks *hooks, uint32_t ask); /* unlocked */
void aicpu_requests_granted(AicpuDevice *d, uint32_t asked, uint32_t granted);

/* Parks an idle participation (eager launch) until work is spread or the run ends. */
void aicpu_park(AicpuDevice *d);

/* A participation found nothing to start. When the run is `over` (nothing
   runs and no task can come) it ends the run, recording PTO_ERR_DEVICE when
   `tasks_left` remain and no error was recorded; otherwise it parks (eager)
   or leaves (on demand: returns 1, the caller returns PTO_AICPU_IDLE). 0: look
   again. */
int aicpu_idle(AicpuDevice *d, int over, uint64_t tasks_left, const PtoAicpuHooks *hooks);

/* Calls a kernel (unlocked), recording it in the run's trace buffer when there is one.
   views: the kernel's views parallel to args, or NULL when they follow from
   args and arg_sizes (util/tensor_view.h, tensor_view_entry_of_arg): then they
   are made on this stack. message: PTO_KERNEL_MESSAGE_BYTES of the caller's
   (one per call, so per core), handed to the kernel empty as its message
   channel. */
int32_t aicpu_run_kernel(uint64_t kernel_addr, const uint64_t *args, const uint64_t *arg_sizes,
                         const PtoTensorView *views, uint32_t nargs,
                         uint32_t core_type, uint32_t core, uint32_t block_dim, uint64_t task_id, uint32_t func_id,
                         char *message);

#endif
