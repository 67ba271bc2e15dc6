/* The runner core (runner_core.h): its lifetime, the up check, and the host
 * libraries every platform loads the same way. */
#include "platform/runner_core.h"

#include <stdlib.h>
#include <string.h>

#include "util/last_error.h"
#include "services/variant.h"
#include "ptorun/pto_runtime_c_api.h"

int runner_core_init(RunnerCore *c, size_t capacity)
{
    memset(c, 0, sizeof *c);
    if (alloc_table_init(&c->memory, capacity) != PTO_OK)
        goto fail_table;
    if (alloc_table_init(&c->windows, 0) != PTO_OK)
        goto fail_windows;
    if (pthread_mutex_init(&c->lock, NULL) != 0)
        goto fail_lock;
    if (library_cache_init(&c->host_libraries, "orchestration library") != PTO_OK)
        goto fail_libraries;
    device_resources_init(&c->resources);
    return PTO_OK;

fail_libraries:
    pthread_mutex_destroy(&c->lock);
fail_lock:
    alloc_table_destroy(&c->windows);
fail_windows:
    alloc_table_destroy(&c->memory);
fail_table:
    return PTO_ERR_OUT_OF_MEMORY;
}

void runner_core_destroy(RunnerCore *c)
{
    alloc_table_destroy(&c->windows);
    alloc_table_destroy(&c->memory);
    device_resources_forget(&c->resources); /* host records kept without an initialized device */
    library_cache_destroy(&c->host_libraries);
    pthread_mutex_destroy(&c->lock);
}

static void forget_allocation(uintptr_t base, size_t size, void *arg)
{
    (void)base;
    (void)size;
    (void)arg; /* the device released it itself */
}

void runner_core_forget_device(RunnerCore *c, void (*release)(uintptr_t, size_t, void *))
{
    alloc_table_drain(&c->memory, release != NULL ? release : forget_allocation, NULL);
    device_resources_forget(&c->resources);
    /* nothing can call into them any more: the libraries go with the device */
    library_cache_clear(&c->host_libraries);
}

int runner_init(Runner *r, int device_id, const DeviceImages *images)
{
    if (images == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s device init: no device images", PTO_PLATFORM_NAME);
    RunnerCore *c = runner_core(r);
    pthread_mutex_lock(&c->lock);
    int rc;
    if (c->initialized) {
        rc = pto_fail(PTO_ERR_BUSY, "%s device %d is already initialized; finalize_device first", PTO_PLATFORM_NAME,
                      c->device_id);
    } else {
        c->device_id = device_id;
        c->initialized = (rc = platform_open(r, images)) == PTO_OK;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

int runner_finalize(Runner *r)
{
    RunnerCore *c = runner_core(r);
    pthread_mutex_lock(&c->lock);
    int rc = c->initialized ? platform_close(r) : PTO_OK;
    if (rc != PTO_ERR_BUSY)
        c->initialized = 0;
    pthread_mutex_unlock(&c->lock);
    return rc;
}

int runner_initialized(Runner *r)
{
    RunnerCore *c = runner_core(r);
    pthread_mutex_lock(&c->lock);
    int up = c->initialized;
    pthread_mutex_unlock(&c->lock);
    return up;
}

int runner_check_up(Runner *r, const char *fn)
{
    if (!runner_core(r)->initialized)
        return pto_fail(PTO_ERR_WRONG_PHASE, "%s: the device is not initialized (simpler_init)", fn);
    return PTO_OK;
}

void *runner_grow(void *array, size_t *cap, size_t count, size_t elem_size, size_t first, const char *what)
{
    if (count < *cap)
        return array;
    size_t grown_cap = *cap ? *cap * 2 : first;
    void *grown = realloc(array, grown_cap * elem_size);
    if (grown == NULL) {
        pto_fail(PTO_ERR_OUT_OF_MEMORY, "%s: out of host memory", what);
        return NULL;
    }
    *cap = grown_cap;
    return grown;
}

int runner_refuse_null(const char *entry)
{
    return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: NULL runner or pointer", entry);
}

/* ---- host libraries (HostApi entries) ------------------------------------------- */

int runner_load_host_library(void *runner, const void *image, size_t size, void **handle)
{
    if (handle != NULL)
        *handle = NULL;
    if (runner == NULL || image == NULL || handle == NULL)
        return runner_refuse_null("load_host_library");
    RunnerCore *c = runner_core(runner);
    if (!runner_initialized(runner))
        return pto_fail(PTO_ERR_WRONG_PHASE, "load_host_library: the device is not initialized (simpler_init)");
    return library_cache_acquire(&c->host_libraries, image, size, handle);
}

int runner_release_host_library(void *runner, void *handle)
{
    if (runner == NULL || handle == NULL)
        return runner_refuse_null("release_host_library");
    return library_cache_release(&runner_core(runner)->host_libraries, handle);
}

size_t runner_host_dlopen_count(Runner *r)
{
    return library_cache_loads(&runner_core(r)->host_libraries);
}
