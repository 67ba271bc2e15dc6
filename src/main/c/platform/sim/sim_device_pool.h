/* The simulated device's threads: a small pool of persistent OS threads (one
 * per online CPU by default) that run the AICPU entry's participations of one
 * launch at a time, parked on a condition variable when there is nothing to
 * run. A launch starts with one participation, run by a device thread (one
 * wake) or by the launching thread itself (none); the executor asks for more
 * through PtoAicpuHooks when it has parallel work, and the thread that ends the
 * launch wakes its waiter unless the waiter's bounded spin catches it. */
#ifndef PTORUN_SIM_DEVICE_POOL_H
#define PTORUN_SIM_DEVICE_POOL_H

#include <stdint.h>

#include "device/pto_device_abi.h"

typedef struct SimDevicePool SimDevicePool;

/* Starts `threads` (>= 1) parked threads. PTO_OK or a PTO_ERR_* (message recorded). */
int sim_device_pool_create(uint32_t threads, SimDevicePool **out);

/* Joins the threads. The pool must not be running a launch. */
void sim_device_pool_destroy(SimDevicePool *p);

uint32_t sim_device_pool_thread_count(const SimDevicePool *p);

/* Starts a launch of `participations` (1..32) logical AICPU threads of `entry`
 * on args_dev and returns its id. PTO_ERR_BUSY (message recorded) while the
 * previous launch has not finished. The work is handed over when this returns:
 * its first participation to a device thread, or, with caller_runs_first, to
 * the caller, who must then call sim_device_pool_run_first. */
int sim_device_pool_launch(SimDevicePool *p, PtoAicpuEntryFn entry, uint64_t args_dev, uint32_t participations,
                           int caller_runs_first, uint64_t *launch_id);

/* Runs the current launch's first participation on the calling thread (after a
 * launch with caller_runs_first): a short run ends here with no thread woken. */
void sim_device_pool_run_first(SimDevicePool *p);

/* Non-zero once the launch has finished (never blocks). */
int sim_device_pool_finished(SimDevicePool *p, uint64_t launch_id);

/* Waits until the launch has finished: PTO_OK, or PTO_ERR_TIMEOUT after
 * timeout_ms (0 = no limit) with the launch still running. UINT64_MAX names
 * whichever launch is current. */
int sim_device_pool_wait(SimDevicePool *p, uint64_t launch_id, uint32_t timeout_ms);

/* The CLOCK_MONOTONIC instant (ns) the launch finished — its last
 * participation returned — or 0 while it runs (or for an id not current). */
uint64_t sim_device_pool_finished_at(SimDevicePool *p, uint64_t launch_id);

/* Blocks until some thread waits in sim_device_pool_wait for the current
 * launch: lets a test see, without a sleep, that the host is waiting. */
void sim_device_pool_await_waiter(SimDevicePool *p);

/* Blocks until n waits of sim_device_pool_wait have parked for the current
 * launch (counted from its start), at most timeout_ms: PTO_OK, or
 * PTO_ERR_TIMEOUT. Lets a test see, without a sleep, how far the host is: an
 * await that timed out asks the device to stop before its second wait. */
int sim_device_pool_await_waits(SimDevicePool *p, uint32_t n, uint32_t timeout_ms);

/* Non-zero while a launch has not finished. */
int sim_device_pool_busy(SimDevicePool *p);

#endif
