/* The sim runner's lifetime (sim_runner.h): create, bring the device up,
 * close it (a device reset: every allocation goes), destroy. */
#include "platform/sim/sim_runner.h"

#include <stdlib.h>
#include <unistd.h>

#include "util/env.h"
#include "util/last_error.h"
#include "ptorun/pto_runtime_c_api.h"

#define SIM_MAX_DEVICE_THREADS 64

_Static_assert(offsetof(struct Runner, core) == 0, "a Runner begins with its RunnerCore");

Runner *runner_create(void)
{
    Runner *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    if (runner_core_init(&r->core, pto_env_size("PTORUN_SIM_DEVICE_MEMORY", 0)) != PTO_OK)
        goto fail_core;
    if (library_cache_init(&r->kernel_libraries, "kernel library") != PTO_OK)
        goto fail_kernel_libraries;
    return r;

fail_kernel_libraries:
    runner_core_destroy(&r->core);
fail_core:
    free(r);
    return NULL;
}

/* Device memory is host memory: a reset frees it. */
static void release_allocation(uintptr_t base, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    free((void *)base);
}

void runner_destroy(Runner *r)
{
    if (r == NULL)
        return;
    /* never free memory under running device threads: let a launch end first */
    while (runner_finalize(r) == PTO_ERR_BUSY)
        sim_device_pool_wait(r->pool, UINT64_MAX, 0);
    alloc_table_drain(&r->core.memory, release_allocation, NULL); /* user buffers of a never-initialized device */
    runner_core_destroy(&r->core);
    library_cache_destroy(&r->kernel_libraries);
    free(r);
}

/* Device threads: PTORUN_SIM_DEVICE_THREADS, else one per online CPU, at least 1. */
static uint32_t device_thread_count(void)
{
    size_t n = pto_env_size("PTORUN_SIM_DEVICE_THREADS", 0);
    if (n == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        n = cpus > 0 ? (size_t)cpus : 1;
    }
    return n > SIM_MAX_DEVICE_THREADS ? SIM_MAX_DEVICE_THREADS : (uint32_t)n;
}

/* PTORUN_SIM_FAIL_ENQUEUE_AFTER=<n>: lets tests prove what a failure before the
 * launch marker does (no acceptance, sticky error, chip usable afterwards). */
static long long injected_submit_failure(void)
{
    const char *text = getenv("PTORUN_SIM_FAIL_ENQUEUE_AFTER");
    if (text == NULL || *text == '\0')
        return -1;
    char *end = NULL;
    long long n = strtoll(text, &end, 10);
    return (*end == '\0' && n >= 0) ? n : -1;
}

int platform_open(Runner *r, const DeviceImages *images)
{
    int rc = sim_image_load(&r->aicpu, "AICPU image", images->aicpu, images->aicpu_size);
    if (rc != PTO_OK)
        return rc;
    r->aicpu_entry = (PtoAicpuEntryFn)sim_image_symbol(&r->aicpu, PTO_AICPU_ENTRY_SYMBOL);
    if (r->aicpu_entry == NULL) {
        rc = pto_fail(PTO_ERR_INVALID_ARGUMENT, "AICPU image exports no %s", PTO_AICPU_ENTRY_SYMBOL);
        goto fail_entry;
    }
    r->aicpu_dlopen_count = (PtoAicpuDlopenCountFn)sim_image_symbol(&r->aicpu, PTO_AICPU_DLOPEN_COUNT_SYMBOL);
    if ((rc = sim_image_load(&r->aicore, "AICore image", images->aicore, images->aicore_size)) != PTO_OK)
        goto fail_entry;
    if ((rc = sim_device_pool_create(device_thread_count(), &r->pool)) != PTO_OK)
        goto fail_pool;
    r->fail_submit_after = injected_submit_failure();
    return PTO_OK;

fail_pool:
    sim_image_unload(&r->aicore);
fail_entry:
    sim_image_unload(&r->aicpu);
    r->aicpu_entry = NULL;
    r->aicpu_dlopen_count = NULL;
    return rc;
}

int platform_close(Runner *r)
{
    if (sim_device_pool_busy(r->pool))
        return pto_fail(PTO_ERR_BUSY, "sim device %d: a launch is still running", r->core.device_id);
    sim_device_pool_destroy(r->pool);
    r->pool = NULL;
    /* a device reset: every device allocation goes, the runner's and the user's */
    runner_core_forget_device(&r->core, release_allocation);
    library_cache_clear(&r->kernel_libraries); /* no kernel can run any more */
    sim_image_unload(&r->aicore);
    if (r->aicpu_dlopen_count != NULL)
        r->aicpu_dlopen_before += (size_t)r->aicpu_dlopen_count(); /* the count outlives the image */
    sim_image_unload(&r->aicpu);
    r->aicpu_entry = NULL;
    r->aicpu_dlopen_count = NULL;
    return PTO_OK;
}

int runner_poisoned(Runner *r)
{
    (void)r; /* the simulated device has no unrecoverable state */
    return 0;
}

/* A device failure on the sim (an injected submit failure, a timeout) leaves
   the simulated device usable: nothing to poison. */
int runner_note_failure(Runner *r, int rc)
{
    (void)r;
    return rc;
}

/* ---- counters ---------------------------------------------------------------------- */

/* Orchestration libraries this device's AICPU image has loaded (trb). */
size_t runner_aicpu_dlopen_count(Runner *r)
{
    pthread_mutex_lock(&r->core.lock);
    size_t n = r->aicpu_dlopen_before + (r->aicpu_dlopen_count != NULL ? (size_t)r->aicpu_dlopen_count() : 0);
    pthread_mutex_unlock(&r->core.lock);
    return n;
}

size_t runner_run_stream_set_create_count(Runner *r)
{
    (void)r; /* the sim has no streams */
    return 0;
}

/* ---- per-run stream set: the sim has none ------------------------------------------- */

int runner_prepare_slot(Runner *r, uint32_t slot)
{
    (void)r;
    (void)slot;
    return PTO_OK;
}

int runner_abandon_slot(Runner *r, uint32_t slot)
{
    (void)r;
    (void)slot;
    return PTO_OK;
}
