/* The sim runner: the device is simulated in-process. Device memory is host
 * memory with exact accounting and an optional capacity
 * (PTORUN_SIM_DEVICE_MEMORY bytes); everything the runner itself keeps on the
 * device (arenas, retained buffers, callable uploads) is allocated there too,
 * so committed_device_memory covers all of it. The device images are loaded
 * privately per runner (sim_image.h) and run on the runner's own persistent
 * device threads (sim_device_pool.h). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch/arch.h"
#include "util/alloc_table.h"
#include "format/chip_callable.h"
#include "common/device_resources.h"
#include "util/library_cache.h"
#include "util/env.h"
#include "util/last_error.h"
#include "util/spin_wait.h"
#include "device/pto_device_abi.h"
#include "platform/runner.h"
#include "platform/runner_resources.h"
#include "platform/sim/sim_device_pool.h"
#include "platform/sim/sim_image.h"
#include "ptorun/pto_runtime_c_api.h"

/* Device allocations are aligned like a real device's GM allocations. */
#define SIM_DEVICE_ALIGNMENT 64
#define SIM_MAX_DEVICE_THREADS 64

struct Runner {
    AllocTable memory;
    pthread_mutex_t lock;      /* guards everything below */
    int initialized;
    int device_id;
    SimImage aicpu, aicore;
    PtoAicpuEntryFn aicpu_entry;
    PtoAicpuDlopenCountFn aicpu_dlopen_count; /* NULL: the image loads no libraries */
    size_t aicpu_dlopen_before;   /* loads of AICPU image copies already unloaded */
    SimDevicePool *pool;
    DeviceResources resources; /* slots, banks, prebuilt cache, uploads */
    /* user kernel libraries (the device side of the sim, loaded into this
       process like the images) and hbg orchestration libraries (the host side) */
    LibraryCache kernel_libraries, host_libraries;
    /* Test facility: the enqueue after this many successful ones fails before the
     * marker, once (PTORUN_SIM_FAIL_ENQUEUE_AFTER, read at init; -1 = never). */
    long long fail_enqueue_after;
};

/* The platform's part of a run (RunExec.opaque). */
typedef struct SimRunExec {
    uint64_t launch_id;
    PtoAicpuArgs *args;        /* the launch's argument block (device memory) */
    uint32_t timeout_ms;
    int32_t sticky_error;      /* enqueue rolled back: nothing can turn this run COMPLETE */
    int32_t result;            /* the drained result, published before state */
    uint32_t state;            /* SimRunState; atomic: query may race drain */
} SimRunExec;
_Static_assert(sizeof(SimRunExec) <= PTO_RUN_EXEC_BYTES, "SimRunExec fits RunExec");

typedef enum SimRunState { SIM_RUN_NONE = 0, SIM_RUN_ENQUEUED = 1, SIM_RUN_DRAINED = 2, SIM_RUN_FAILED = 3 } SimRunState;

static SimRunExec *sim_exec(RunExec *exec)
{
    return (SimRunExec *)exec->opaque;
}

static uint32_t exec_state(const SimRunExec *x)
{
    return __atomic_load_n(&x->state, __ATOMIC_ACQUIRE);
}

static void set_exec_state(SimRunExec *x, uint32_t state)
{
    __atomic_store_n(&x->state, state, __ATOMIC_RELEASE);
}

static const DeviceResourceOps SIM_RESOURCE_OPS; /* the platform operations, bound at create */

/* ---- lifetime --------------------------------------------------------------- */

Runner *runner_create(void)
{
    Runner *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    if (alloc_table_init(&r->memory, pto_env_size("PTORUN_SIM_DEVICE_MEMORY", 0)) != PTO_OK)
        goto fail_table;
    if (pthread_mutex_init(&r->lock, NULL) != 0)
        goto fail_lock;
    if (library_cache_init(&r->kernel_libraries, "kernel library") != PTO_OK)
        goto fail_kernel_libraries;
    if (library_cache_init(&r->host_libraries, "orchestration library") != PTO_OK)
        goto fail_host_libraries;
    device_resources_init(&r->resources, &SIM_RESOURCE_OPS, r, &r->lock);
    return r;

fail_host_libraries:
    library_cache_destroy(&r->kernel_libraries);
fail_kernel_libraries:
    pthread_mutex_destroy(&r->lock);
fail_lock:
    alloc_table_destroy(&r->memory);
fail_table:
    free(r);
    return NULL;
}

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
    alloc_table_drain(&r->memory, release_allocation, NULL);
    alloc_table_destroy(&r->memory);
    device_resources_forget(&r->resources); /* host records kept without an initialized device */
    library_cache_destroy(&r->host_libraries);
    library_cache_destroy(&r->kernel_libraries);
    pthread_mutex_destroy(&r->lock);
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
static long long injected_enqueue_failure(void)
{
    const char *text = getenv("PTORUN_SIM_FAIL_ENQUEUE_AFTER");
    if (text == NULL || *text == '\0')
        return -1;
    char *end = NULL;
    long long n = strtoll(text, &end, 10);
    return (*end == '\0' && n >= 0) ? n : -1;
}

int runner_init(Runner *r, int device_id, const DeviceImages *images)
{
    if (images == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "sim device init: no device images");
    pthread_mutex_lock(&r->lock);
    int rc;
    if (r->initialized) {
        rc = pto_fail(PTO_ERR_BUSY, "sim device %d is already initialized; finalize_device first", r->device_id);
        goto out;
    }
    if ((rc = sim_image_load(&r->aicpu, "AICPU image", images->aicpu, images->aicpu_size)) != PTO_OK)
        goto out;
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
    r->device_id = device_id;
    r->fail_enqueue_after = injected_enqueue_failure();
    r->initialized = 1;
    goto out;

fail_pool:
    sim_image_unload(&r->aicore);
fail_entry:
    sim_image_unload(&r->aicpu);
    r->aicpu_entry = NULL;
    r->aicpu_dlopen_count = NULL;
out:
    pthread_mutex_unlock(&r->lock);
    return rc;
}

int runner_finalize(Runner *r)
{
    pthread_mutex_lock(&r->lock);
    if (!r->initialized) {
        pthread_mutex_unlock(&r->lock);
        return PTO_OK;
    }
    if (sim_device_pool_busy(r->pool)) {
        pthread_mutex_unlock(&r->lock);
        return pto_fail(PTO_ERR_BUSY, "sim device %d: a launch is still running", r->device_id);
    }
    sim_device_pool_destroy(r->pool);
    r->pool = NULL;
    /* a device reset: every device allocation goes, the runner's and the user's */
    alloc_table_drain(&r->memory, release_allocation, NULL);
    device_resources_forget(&r->resources);
    /* no kernel can run any more: the libraries go with the device */
    library_cache_clear(&r->kernel_libraries);
    library_cache_clear(&r->host_libraries);
    sim_image_unload(&r->aicore);
    if (r->aicpu_dlopen_count != NULL)
        r->aicpu_dlopen_before += (size_t)r->aicpu_dlopen_count(); /* the count outlives the image */
    sim_image_unload(&r->aicpu);
    r->aicpu_entry = NULL;
    r->aicpu_dlopen_count = NULL;
    r->initialized = 0;
    pthread_mutex_unlock(&r->lock);
    return PTO_OK;
}

int runner_initialized(Runner *r)
{
    pthread_mutex_lock(&r->lock);
    int up = r->initialized;
    pthread_mutex_unlock(&r->lock);
    return up;
}

int runner_poisoned(Runner *r)
{
    (void)r; /* the simulated device has no unrecoverable state */
    return 0;
}

/* ---- device memory ----------------------------------------------------------- */

void *runner_device_malloc(Runner *r, size_t n)
{
    if (n == 0) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "device_malloc: size 0");
        return NULL;
    }
    if (alloc_table_reserve(&r->memory, n) != PTO_OK) {
        pto_fail(PTO_ERR_OUT_OF_MEMORY, "sim device memory exhausted: %zu bytes requested, %zu of %zu committed",
                 n, alloc_table_committed(&r->memory), r->memory.capacity);
        return NULL;
    }
    void *p = NULL;
    if (posix_memalign(&p, SIM_DEVICE_ALIGNMENT, n) != 0) {
        alloc_table_unreserve(&r->memory, n);
        pto_fail(PTO_ERR_OUT_OF_MEMORY, "sim device memory: host allocation of %zu bytes failed", n);
        return NULL;
    }
    if (alloc_table_insert(&r->memory, (uintptr_t)p, n) != PTO_OK) {
        free(p);
        pto_fail(PTO_ERR_OUT_OF_MEMORY, "sim device memory: allocation table cannot grow");
        return NULL;
    }
    return p;
}

/* Frees an allocation known to be live. */
static void free_device(Runner *r, void *p)
{
    size_t size;
    if (p != NULL && alloc_table_remove(&r->memory, (uintptr_t)p, &size) == PTO_OK)
        free(p);
}

int runner_device_free(Runner *r, void *p)
{
    if (p == NULL)
        return PTO_OK;
    pthread_mutex_lock(&r->lock);
    const char *owned = device_resources_owned(&r->resources, (uint64_t)(uintptr_t)p);
    if (owned != NULL) {
        pthread_mutex_unlock(&r->lock);
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "device_free: %p is %s owned by the device context; not freed", p,
                        owned);
    }
    size_t size;
    if (alloc_table_remove(&r->memory, (uintptr_t)p, &size) != PTO_OK) {
        pthread_mutex_unlock(&r->lock);
        return pto_fail(PTO_ERR_INVALID_ARGUMENT,
                        "device_free: %p is not the start of a live allocation of this context; not freed", p);
    }
    /* a freed retained buffer is no longer the slot's */
    device_resources_forget_retained(&r->resources, (uint64_t)(uintptr_t)p);
    pthread_mutex_unlock(&r->lock);
    free(p);
    return PTO_OK;
}

size_t runner_committed_bytes(Runner *r)
{
    return alloc_table_committed(&r->memory);
}

static int check_inside(Runner *r, const char *fn, const void *dev, size_t n)
{
    if (!alloc_table_contains(&r->memory, (uintptr_t)dev, n))
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: [%p, +%zu) is not inside one live allocation of this context",
                        fn, dev, n);
    return PTO_OK;
}

int runner_copy_to_device(Runner *r, void *dev, const void *host, size_t n)
{
    int rc = check_inside(r, "copy_to_device", dev, n);
    if (rc == PTO_OK && n > 0)
        memcpy(dev, host, n);
    return rc;
}

int runner_copy_from_device(Runner *r, void *host, const void *dev, size_t n)
{
    int rc = check_inside(r, "copy_from_device", dev, n);
    if (rc == PTO_OK && n > 0)
        memcpy(host, dev, n);
    return rc;
}

/* The simulated device memory is host memory: the host view is the buffer. */
void *runner_register_device_memory_to_host(Runner *r, void *dev, size_t n)
{
    return check_inside(r, "register_device_memory_to_host", dev, n) == PTO_OK ? dev : NULL;
}

int runner_unregister_device_memory_from_host(Runner *r, void *dev)
{
    return check_inside(r, "unregister_device_memory_from_host", dev, 0);
}

int runner_device_memset(Runner *r, void *dev, int value, size_t n)
{
    int rc = check_inside(r, "device_memset", dev, n);
    if (rc == PTO_OK && n > 0)
        memset(dev, value, n);
    return rc;
}

/* ---- slots, banks, the prebuilt cache, callable uploads ------------------------ */

/* The runner_* entries for them are platform/runner_resources.c's. */
DeviceResources *runner_device_resources(Runner *r)
{
    return &r->resources;
}

/* ---- the platform operations device_resources needs ------------------------------ */

static int sim_check_up(void *platform, const char *fn)
{
    const Runner *r = platform;
    if (!r->initialized)
        return pto_fail(PTO_ERR_WRONG_PHASE, "%s: the device is not initialized (simpler_init)", fn);
    return PTO_OK;
}

static int sim_check_inside(void *platform, const char *fn, uint64_t dev, size_t n)
{
    return check_inside(platform, fn, (const void *)(uintptr_t)dev, n);
}

static int sim_alloc(void *platform, size_t n, uint64_t *dev)
{
    void *p = runner_device_malloc(platform, n);
    if (p == NULL)
        return PTO_ERR_OUT_OF_MEMORY;
    *dev = (uint64_t)(uintptr_t)p;
    return PTO_OK;
}

static void sim_free(void *platform, uint64_t dev)
{
    free_device(platform, (void *)(uintptr_t)dev);
}

/* Device memory is host memory: the upload is a plain copy. */
static int sim_copy_to_device(void *platform, uint64_t dev, const void *host, size_t n)
{
    (void)platform;
    memcpy((void *)(uintptr_t)dev, host, n);
    return PTO_OK;
}

/* A built-in's address: dlsym of pto_kernel_<name> in this runner's AICore copy. */
static void *builtin_kernel(Runner *r, const ChipCallableView *v, uint32_t i, const ChipCallableChild *c)
{
    const char *name = chip_callable_blob(v, c->name);
    char symbol[sizeof PTO_KERNEL_SYMBOL_PREFIX + PTO_CALLABLE_MAX_NAME];
    memcpy(symbol, PTO_KERNEL_SYMBOL_PREFIX, sizeof PTO_KERNEL_SYMBOL_PREFIX - 1);
    memcpy(symbol + sizeof PTO_KERNEL_SYMBOL_PREFIX - 1, name, c->name.size);
    symbol[sizeof PTO_KERNEL_SYMBOL_PREFIX - 1 + c->name.size] = '\0';
    void *fn = sim_image_symbol(&r->aicore, symbol);
    if (fn == NULL)
        pto_fail(PTO_ERR_BAD_CALLABLE, "child %u (func_id %u): the AICore image has no kernel '%.*s'", i, c->func_id,
                 (int)c->name.size, name);
    return fn;
}

/* A library kernel's address: its image loaded once per content (the
   reference handed back in *library), its entry symbol resolved there. */
static void *library_kernel(Runner *r, const ChipCallableView *v, uint32_t i, const ChipCallableChild *c,
                            void **library)
{
    void *handle;
    if (library_cache_acquire(&r->kernel_libraries, v->bytes + c->image.offset, c->image.size, &handle) != PTO_OK) {
        pto_fail(PTO_ERR_BAD_CALLABLE, "child %u (func_id %u): %s", i, c->func_id, pto_last_error());
        return NULL;
    }
    *library = handle;
    char why[256];
    const char *name = chip_callable_blob(v, c->name);
    void *fn = library_cache_symbol(handle, name, c->name.size, why, sizeof why);
    if (fn == NULL)
        pto_fail(PTO_ERR_BAD_CALLABLE, "child %u (func_id %u): the kernel library has no entry symbol '%.*s': %s", i,
                 c->func_id, (int)c->name.size, name, why);
    return fn;
}

static uint64_t sim_resolve_kernel(void *platform, const ChipCallableView *v, uint32_t i, const ChipCallableChild *c,
                                   void **library)
{
    Runner *r = platform;
    void *fn = c->source_kind == PTO_KERNEL_LIBRARY ? library_kernel(r, v, i, c, library) : builtin_kernel(r, v, i, c);
    return (uint64_t)(uintptr_t)fn;
}

static void sim_release_library(void *platform, void *library)
{
    Runner *r = platform;
    library_cache_release(&r->kernel_libraries, library);
}

static const DeviceResourceOps SIM_RESOURCE_OPS = {
    .check_up = sim_check_up,
    .check_inside = sim_check_inside,
    .alloc = sim_alloc,
    .free = sim_free,
    .copy_to_device = sim_copy_to_device,
    .resolve_kernel = sim_resolve_kernel,
    .release_library = sim_release_library,
};

/* ---- host libraries ------------------------------------------------------------------ */

LibraryCache *runner_host_libraries(Runner *r)
{
    return &r->host_libraries;
}

/* ---- counters ---------------------------------------------------------------------- */

/* Orchestration libraries this device's AICPU image has loaded (trb). */
size_t runner_aicpu_dlopen_count(Runner *r)
{
    pthread_mutex_lock(&r->lock);
    size_t n = r->aicpu_dlopen_before + (r->aicpu_dlopen_count != NULL ? (size_t)r->aicpu_dlopen_count() : 0);
    pthread_mutex_unlock(&r->lock);
    return n;
}

size_t runner_run_stream_set_create_count(Runner *r)
{
    (void)r; /* the sim has no streams */
    return 0;
}

/* ---- per-run stream set ------------------------------------------------------------- */

int runner_prepare_slot(Runner *r, uint32_t slot)
{
    (void)r; /* the sim has no streams */
    (void)slot;
    return PTO_OK;
}

void runner_abandon_slot(Runner *r, uint32_t slot)
{
    (void)r;
    (void)slot;
}

/* ---- execution ------------------------------------------------------------------------ */

/* Everything a launch needs, checked before anything is handed over. */
static int check_launch(Runner *r, const DeviceLaunch *launch)
{
    if (launch == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "enqueue: no DeviceLaunch");
    if (launch->aicpu_threads < 1 || launch->aicpu_threads > PTO_ARCH_AICPU_THREADS_MAX)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "enqueue: %u AICPU threads, 1..%d supported", launch->aicpu_threads,
                        PTO_ARCH_AICPU_THREADS_MAX);
    if (launch->block_dim < 1 || launch->block_dim > PTO_ARCH_MAX_BLOCKS)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "enqueue: block_dim %u, 1..%d supported", launch->block_dim,
                        PTO_ARCH_MAX_BLOCKS);
    if (launch->timeout_ms == 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "enqueue: timeout_ms 0 (unresolved)");
    return check_inside(r, "enqueue: argument block", (const void *)(uintptr_t)launch->args_dev,
                        sizeof(PtoAicpuArgs));
}

/* runner_enqueue; with caller_runs_first the launch's first participation waits
 * for this thread (sim_device_pool_run_first) instead of a device thread. */
static int enqueue(Runner *r, RunExec *exec, const DeviceLaunch *launch, LaunchSignal *signal, int caller_runs_first)
{
    SimRunExec *x = sim_exec(exec);
    memset(x, 0, sizeof *x);
    int rc;
    pthread_mutex_lock(&r->lock);
    if (!r->initialized) {
        rc = pto_fail(PTO_ERR_WRONG_PHASE, "enqueue: the device is not initialized (simpler_init)");
    } else if (r->fail_enqueue_after == 0) {
        r->fail_enqueue_after = -1;
        rc = pto_fail(PTO_ERR_DEVICE, "enqueue: injected failure before the launch marker (PTORUN_SIM_FAIL_ENQUEUE_AFTER)");
    } else if ((rc = check_launch(r, launch)) == PTO_OK) {
        if (r->fail_enqueue_after > 0)
            r->fail_enqueue_after--;
        PtoAicpuArgs *args = (PtoAicpuArgs *)(uintptr_t)launch->args_dev;
        args->status.deadline_ns = pto_monotonic_ns() + (uint64_t)launch->timeout_ms * 1000000u;
        rc = sim_device_pool_launch(r->pool, r->aicpu_entry, launch->args_dev, launch->aicpu_threads,
                                    caller_runs_first, &x->launch_id);
    }
    pthread_mutex_unlock(&r->lock);
    if (rc != PTO_OK) {
        /* nothing was handed over; the run can never complete */
        x->sticky_error = rc;
        set_exec_state(x, SIM_RUN_FAILED);
        return rc;
    }
    x->args = (PtoAicpuArgs *)(uintptr_t)launch->args_dev;
    x->timeout_ms = launch->timeout_ms;
    set_exec_state(x, SIM_RUN_ENQUEUED);
    /* the marker: the work is on the device threads */
    if (signal != NULL)
        launch_signal_publish(signal);
    return PTO_OK;
}

int runner_enqueue(Runner *r, RunExec *exec, uint32_t slot, const DeviceLaunch *launch, LaunchSignal *signal)
{
    (void)slot; /* the sim has no per-slot streams */
    return enqueue(r, exec, launch, signal, 0);
}

int runner_execute(Runner *r, RunExec *exec, uint32_t slot, const DeviceLaunch *launch, LaunchSignal *signal)
{
    (void)slot;
    int rc = enqueue(r, exec, launch, signal, 1);
    if (rc != PTO_OK)
        return rc;
    sim_device_pool_run_first(r->pool);
    return runner_drain(r, exec);
}

int runner_query(Runner *r, RunExec *exec)
{
    SimRunExec *x = sim_exec(exec);
    switch (exec_state(x)) {
    case SIM_RUN_FAILED:
        return x->sticky_error;
    case SIM_RUN_DRAINED:
        return SIMPLER_NATIVE_RUN_POLL_COMPLETE;
    case SIM_RUN_ENQUEUED:
        return sim_device_pool_finished(r->pool, x->launch_id) ? SIMPLER_NATIVE_RUN_POLL_COMPLETE
                                                               : SIMPLER_NATIVE_RUN_POLL_NOT_READY;
    default:
        return pto_fail(PTO_ERR_WRONG_PHASE, "query: the run was never enqueued");
    }
}

/* The executor's message for the run's error (PtoAicpuArgs.message_dev), or NULL. */
static const char *device_message(Runner *r, const PtoAicpuArgs *args)
{
    const char *m = (const char *)(uintptr_t)args->message_dev;
    if (m == NULL || !alloc_table_contains(&r->memory, (uintptr_t)m, 512) || memchr(m, '\0', 512) == NULL || *m == '\0')
        return NULL;
    return m;
}

int runner_drain(Runner *r, RunExec *exec)
{
    SimRunExec *x = sim_exec(exec);
    switch (exec_state(x)) {
    case SIM_RUN_FAILED:
        return x->sticky_error;
    case SIM_RUN_DRAINED:
        return x->result;
    case SIM_RUN_ENQUEUED:
        break;
    default:
        return pto_fail(PTO_ERR_WRONG_PHASE, "drain: the run was never enqueued");
    }
    if (sim_device_pool_wait(r->pool, x->launch_id, x->timeout_ms) == PTO_ERR_TIMEOUT) {
        /* stop dispatching, then let the kernels in flight return */
        __atomic_store_n(&x->args->status.stop_request, PTO_ERR_TIMEOUT, __ATOMIC_RELEASE);
        sim_device_pool_wait(r->pool, x->launch_id, 0);
    }
    x->result = x->args->status.error_code;
    set_exec_state(x, SIM_RUN_DRAINED);
    if (x->result == PTO_ERR_TIMEOUT)
        pto_fail(PTO_ERR_TIMEOUT, "the run exceeded its timeout of %u ms; %llu task(s) had completed", x->timeout_ms,
                 (unsigned long long)x->args->status.tasks_completed);
    else if (x->result == PTO_ERR_KERNEL_FAULT)
        pto_fail(PTO_ERR_KERNEL_FAULT, "kernel fault: task %llu (func_id %u) returned %d on core %u",
                 (unsigned long long)x->args->status.task_id, x->args->status.func_id, x->args->status.kernel_code,
                 x->args->status.core_id);
    else if (x->result != PTO_OK && device_message(r, x->args) != NULL)
        pto_fail(x->result, "the device failed the run: %s", device_message(r, x->args));
    else if (x->result != PTO_OK)
        pto_fail(x->result, "the device reported error %d for the run", x->result);
    return x->result;
}
