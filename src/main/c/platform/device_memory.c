/* Device memory, the same on every platform: the table of live allocations
 * decides what may be freed, copied or set; the platform's primitives
 * (runner_core.h) move the bytes. The HostApi entries here are the table's
 * (platform/host_api_ops.c); common/c_api.c calls them too. */
#include <string.h>

#include "util/last_error.h"
#include "services/variant.h"
#include "platform/runner_core.h"
#include "ptorun/pto_runtime_c_api.h"

int runner_alloc(Runner *r, size_t n, uint64_t *dev)
{
    RunnerCore *c = runner_core(r);
    if (alloc_table_reserve(&c->memory, n) != PTO_OK)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "%s device memory exhausted: %zu bytes requested, %zu of %zu committed",
                        PTO_PLATFORM_NAME, n, alloc_table_committed(&c->memory), c->memory.capacity);
    int rc = platform_alloc(r, n, dev);
    if (rc != PTO_OK) {
        alloc_table_unreserve(&c->memory, n);
        return rc;
    }
    if (alloc_table_insert(&c->memory, (uintptr_t)*dev, n) != PTO_OK) {
        platform_free(r, *dev, 0);
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "device memory: the allocation table cannot grow");
    }
    return PTO_OK;
}

void runner_free(Runner *r, uint64_t dev)
{
    size_t size;
    if (dev != 0 && alloc_table_remove(&runner_core(r)->memory, (uintptr_t)dev, &size) == PTO_OK)
        platform_free(r, dev, 0);
}

static int refuse_outside(const char *fn, uint64_t dev, size_t n)
{
    return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: [0x%llx, +%zu) is not inside one live allocation (or communication "
                                              "window) of this context",
                    fn, (unsigned long long)dev, n);
}

int runner_check_inside(Runner *r, const char *fn, uint64_t dev, size_t n)
{
    RunnerCore *c = runner_core(r);
    if (!alloc_table_contains(&c->memory, (uintptr_t)dev, n) && !alloc_table_contains(&c->windows, (uintptr_t)dev, n))
        return refuse_outside(fn, dev, n);
    return PTO_OK;
}

int runner_pin_inside(Runner *r, const char *fn, uint64_t dev, size_t n, AllocPin *pin)
{
    RunnerCore *c = runner_core(r);
    if (alloc_table_pin(&c->memory, (uintptr_t)dev, n, pin) != PTO_OK &&
        alloc_table_pin(&c->windows, (uintptr_t)dev, n, pin) != PTO_OK)
        return refuse_outside(fn, dev, n);
    return PTO_OK;
}

int runner_add_window(Runner *r, uint64_t dev, size_t n)
{
    RunnerCore *c = runner_core(r);
    if (alloc_table_reserve(&c->windows, n) != PTO_OK || alloc_table_insert(&c->windows, (uintptr_t)dev, n) != PTO_OK)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "comm: the window table cannot grow");
    return PTO_OK;
}

void runner_remove_window(Runner *r, uint64_t dev)
{
    size_t size;
    (void)alloc_table_remove(&runner_core(r)->windows, (uintptr_t)dev, &size);
}

size_t runner_committed_bytes(Runner *r)
{
    return alloc_table_committed(&runner_core(r)->memory);
}

/* ---- HostApi entries ---------------------------------------------------------- */

void *runner_device_malloc(void *runner, size_t n)
{
    if (runner == NULL) {
        runner_refuse_null("device_malloc");
        return NULL;
    }
    if (n == 0) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "device_malloc: size 0");
        return NULL;
    }
    RunnerCore *c = runner_core(runner);
    uint64_t a = 0;
    pthread_mutex_lock(&c->lock);
    int rc = runner_alloc(runner, n, &a);
    pthread_mutex_unlock(&c->lock);
    return rc == PTO_OK ? dev_ptr(a) : NULL;
}

int runner_device_free(void *runner, void *dev)
{
    if (runner == NULL)
        return runner_refuse_null("device_free");
    if (dev == NULL)
        return PTO_OK; /* documented no-op, like free(NULL) */
    RunnerCore *c = runner_core(runner);
    uint64_t a = dev_addr(dev);
    size_t size;
    int rc;
    pthread_mutex_lock(&c->lock);
    const char *owned = device_resources_owned(&c->resources, a);
    if (owned != NULL) {
        rc = pto_fail(PTO_ERR_INVALID_ARGUMENT, "device_free: %p is %s owned by the device context; not freed", dev,
                      owned);
    } else if (alloc_table_remove(&c->memory, (uintptr_t)a, &size) != PTO_OK) {
        rc = pto_fail(PTO_ERR_INVALID_ARGUMENT,
                      "device_free: %p is not the start of a live allocation of this context; not freed", dev);
    } else {
        device_resources_forget_retained(&c->resources, a); /* a freed retained buffer is no longer the slot's */
        rc = platform_free(runner, a, 1);
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* The copies pin the range for as long as they touch it, so a device_free or
 * comm_destroy meanwhile waits for them (util/alloc_table.h). Pinned, they take
 * no lock of the runner's: device_free removes under it. */
int runner_copy_to_device(void *runner, void *dev, const void *host, size_t n)
{
    if (runner == NULL || dev == NULL || (host == NULL && n != 0))
        return runner_refuse_null("copy_to_device");
    AllocPin pin;
    int rc = runner_pin_inside(runner, "copy_to_device", dev_addr(dev), n, &pin);
    if (rc != PTO_OK)
        return rc;
    if (n > 0)
        rc = platform_write(runner, dev_addr(dev), host, n);
    alloc_table_unpin(&pin);
    return rc;
}

int runner_copy_from_device(void *runner, void *host, const void *dev, size_t n)
{
    if (runner == NULL || dev == NULL || (host == NULL && n != 0))
        return runner_refuse_null("copy_from_device");
    AllocPin pin;
    int rc = runner_pin_inside(runner, "copy_from_device", dev_addr(dev), n, &pin);
    if (rc != PTO_OK)
        return rc;
    if (n > 0)
        rc = platform_read(runner, host, dev_addr(dev), n);
    alloc_table_unpin(&pin);
    return rc;
}

int runner_device_memset(void *runner, void *dev, int value, size_t n)
{
    if (runner == NULL || dev == NULL)
        return runner_refuse_null("device_memset");
    AllocPin pin;
    int rc = runner_pin_inside(runner, "device_memset", dev_addr(dev), n, &pin);
    if (rc != PTO_OK)
        return rc;
    if (n > 0)
        rc = platform_fill(runner, dev_addr(dev), value, n);
    alloc_table_unpin(&pin);
    return rc;
}
