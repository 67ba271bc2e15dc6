/*
 * The platform half of a library: the runner that owns one device. Exactly one
 * platform is linked into each library: what both do the same way lives in
 * the .c files of platform/ (runner_core.h), the rest in platform/sim or
 * platform/onboard.
 * common/ calls these directly; the runtime halves reach the device only
 * through HostApi, whose one table (platform/host_api_ops.c) holds the
 * functions of the "HostApi entries" sections below themselves: they take the
 * runner as void * (the table's type) and refuse a NULL runner or pointer.
 * Every function records a precise message (last_error.h) when it fails and
 * returns a PTO_ERR_* code, NULL or 0.
 */
#ifndef PTORUN_RUNNER_H
#define PTORUN_RUNNER_H

#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>

#include "services/device_failure.h"
#include "services/launch_signal.h"

typedef struct Runner Runner;

/* Device images handed to simpler_init (the runner keeps its own copies). */
typedef struct DeviceImages {
    const uint8_t *aicpu;
    size_t aicpu_size;
    const uint8_t *aicore;
    size_t aicore_size;
} DeviceImages;

/* What the device runs for one run: filled by the runtime at bind, consumed by
 * the platform at launch. The platform launches the AICore image's entry, then
 * the AICPU image's entry with `args_dev`; it knows nothing of their content. */
typedef struct DeviceLaunch {
    uint64_t args_dev;        /* device address of the AICPU entry's argument block */
    uint32_t aicpu_threads;   /* resolved: 2..arch max */
    uint32_t block_dim;       /* resolved: 1..arch max */
    uint32_t timeout_ms;      /* resolved: never 0 */
    uint32_t reserved;
} DeviceLaunch;

/* The platform's per-run execution state. Lives inside the NativeRunContext (the
 * caller's storage) from launch through finalize; its content is the platform's. */
#define PTO_RUN_EXEC_BYTES 256
typedef struct RunExec {
    alignas(64) unsigned char opaque[PTO_RUN_EXEC_BYTES];
} RunExec;

/* ---- lifetime ------------------------------------------------------------- */
Runner *runner_create(void);                    /* no device attached; NULL when out of memory */
void runner_destroy(Runner *r);                 /* releases everything still held */
int runner_init(Runner *r, int device_id, const DeviceImages *images);
int runner_finalize(Runner *r);                 /* releases every device resource; back to un-initialized */
int runner_initialized(Runner *r);
int runner_poisoned(Runner *r);                 /* non-zero after an unrecovered device error */

/* ---- device failures (services/device_failure.h) ----------------------------- */

/* The one place a device failure poisons: onboard, a device failure poisons the
 * runner (until runner_finalize) and the calling thread's message then ends
 * with "; the device context is poisoned until finalize_device" (added once);
 * the sim does nothing (its device has no unrecoverable state). Returns rc.
 * The exported calls pass every code they return through it (common/c_api.c),
 * and the onboard runner passes each driver failure at once (ob_drv_fail). */
int runner_note_failure(Runner *r, int rc);

/* ---- device memory: HostApi entries (platform/device_memory.c; the host
 * mapping is each platform's) ---------------------------------------------- */
void *runner_device_malloc(void *runner, size_t n);
int runner_device_free(void *runner, void *dev);
int runner_copy_to_device(void *runner, void *dev, const void *host, size_t n);
int runner_copy_from_device(void *runner, void *host, const void *dev, size_t n);
void *runner_register_device_memory_to_host(void *runner, void *dev, size_t n);
int runner_unregister_device_memory_from_host(void *runner, void *dev);
int runner_device_memset(void *runner, void *dev, int value, size_t n);
size_t runner_committed_bytes(Runner *r);
/* Communication windows (common/comm.c): ranges this device addresses that it
 * did not allocate (a peer's window, mapped by the group). Copies and
 * child_memory tensors may use them; committed memory omits them. */
int runner_add_window(Runner *r, uint64_t dev, size_t n);
void runner_remove_window(Runner *r, uint64_t dev);

/* ---- per-slot and per-bank resources: HostApi entries (platform/device_resources.c) */
int runner_get_retained_temp_buffer(void *runner, uint32_t slot, void **dev, size_t *size);
int runner_set_retained_temp_buffer(void *runner, uint32_t slot, void *dev, size_t size);
int runner_setup_static_arena(void *runner, uint32_t bank, size_t gm_heap, size_t gm_sm, size_t runtime_arena);
void *runner_acquire_pooled_gm_heap(void *runner, uint32_t bank, size_t *size);
void *runner_acquire_pooled_gm_sm(void *runner, uint32_t bank, size_t *size);
void *runner_acquire_pooled_runtime_arena(void *runner, uint32_t bank, size_t *size);
int runner_lookup_prebuilt_runtime_arena_cache(void *runner, uint32_t bank, uint64_t hash, const void *key,
                                               size_t key_size, void **image);
int runner_mark_prebuilt_runtime_arena_cached(void *runner, uint32_t bank, uint64_t hash, const void *key,
                                              size_t key_size, void *image);
int runner_upload_chip_callable_buffer(void *runner, const void *callable, size_t size, uint64_t hash, void **dev);
int runner_release_chip_callable_buffer(void *runner, void *dev);
/* Host-side libraries from bytes (hbg orchestration libraries): once per content
 * per runner, refcounted (util/library_cache.h); unloaded at the last release
 * or at runner_finalize (platform/runner_core.c). */
int runner_load_host_library(void *runner, const void *image, size_t size, void **handle);
int runner_release_host_library(void *runner, void *handle);

/* ---- queries for the exported counters ------------------------------------ */
uint64_t runner_arena_bank_gm_heap_base(Runner *r, uint32_t bank);  /* 0 if never committed */
uint64_t runner_retained_temp_addr(Runner *r, uint32_t slot);       /* 0 if none */
size_t runner_aicpu_dlopen_count(Runner *r);
size_t runner_host_dlopen_count(Runner *r);                          /* host library loads ever */
size_t runner_run_stream_set_create_count(Runner *r);

/* ---- per-run stream set (prepare) ----------------------------------------- */

/* Called by the lifecycle once a run holds its slot (prepare), before the
 * runtime binds it: the platform gets the run's per-run execution resources
 * ready (onboard a2a3: a fresh AICore stream). PTO_ERR_POISONED when the device
 * context refuses work. runner_abandon_slot releases them for a run that will
 * never be launched (its prepare failed later, or it is finalized Prepared):
 * PTO_OK, or the device failure the release met (which the caller reports);
 * a launched run's are released by runner_await_device. The sim has none. */
int runner_prepare_slot(Runner *r, uint32_t slot);
int runner_abandon_slot(Runner *r, uint32_t slot);

/* ---- execution: the run's job is submit, then await the device (executor thread) */

/* Submits the run to the device and crosses the launch marker, calling
 * launch_signal_publish(signal) exactly there. Before the marker it owns
 * rollback: a failure undoes everything, leaves a sticky error in `exec`, and
 * never publishes. On success, everything query and await need is in `exec`. */
int runner_submit(Runner *r, RunExec *exec, uint32_t slot, const DeviceLaunch *launch, LaunchSignal *signal);

/* Never blocks: SIMPLER_NATIVE_RUN_POLL_NOT_READY (0), _COMPLETE (1, the ABI's
 * spelling of "ended") when the run ended on the device, or a negative error.
 * Safe concurrently with runner_await_device. */
int runner_query(Runner *r, RunExec *exec);

/* Waits for the run to end on the device (at most launch->timeout_ms, then
 * PTO_ERR_TIMEOUT), releases the run's execution resources and returns the
 * device's result (0, or the first error the device reported). Asking again
 * returns the same result. */
int runner_await_device(Runner *r, RunExec *exec);

/* The CLOCK_MONOTONIC instant (ns) at which the platform saw the run end on
 * the device (NativeRunReport.execution_end_ns): the sim, when the launch's last
 * AICPU participation returned (on the thread that ran it, the host's
 * clock); onboard, when the run's streams synchronized (the host's clock, never
 * the device's). 0 when the run never ended on the device: never submitted, refused,
 * or the await met a timeout or a device failure onboard. Read once the
 * job ended and the executor let go of it (executor_job_wait). */
uint64_t runner_execution_end_ns(const RunExec *exec);

/* The executor's job: runner_submit, then (on success) runner_await_device, on
 * the calling thread. A platform may do more on that thread than the two calls
 * would — the sim runs the run's first device participation on it, so a short
 * run costs no hand-off to a device thread and none back — but the marker, the
 * rollback and the result are exactly those of submit then await. */
int runner_execute(Runner *r, RunExec *exec, uint32_t slot, const DeviceLaunch *launch, LaunchSignal *signal);

#endif
