/* The onboard device memory primitives (runner_core.h), each one driver call,
 * and the host views (a2a3: host_register; a5 has no host mapping). */
#include <stdlib.h>

#include "arch/arch.h"
#include "util/last_error.h"
#include "platform/onboard/onboard_runner.h"
#include "ptorun/pto_runtime_c_api.h"

int platform_alloc(Runner *r, size_t n, uint64_t *dev)
{
    int rc = runner_check_up(r, "device_malloc");
    if (rc != PTO_OK)
        return rc;
    int drc = r->driver.api->mem_alloc(r->dev, n, dev);
    if (drc == PTO_DRV_ERR_OUT_OF_MEMORY)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "onboard device %d memory exhausted: %zu bytes requested, %zu committed",
                        r->core.device_id, n, alloc_table_committed(&r->core.memory));
    return drc == PTO_DRV_OK ? PTO_OK : ob_drv_fail(r, drc, "mem_alloc");
}

int platform_free(Runner *r, uint64_t dev, int report)
{
    int drc = r->driver.api->mem_free(r->dev, dev);
    if (drc == PTO_DRV_OK)
        return PTO_OK;
    /* a release: it poisons only where a caller reports it (runner_note_failure) */
    return report ? ob_drv_error(r, drc, "mem_free") : PTO_ERR_DEVICE;
}

int platform_write(Runner *r, uint64_t dev, const void *host, size_t n)
{
    int drc = r->driver.api->memcpy_h2d(r->dev, dev, host, n);
    return drc == PTO_DRV_OK ? PTO_OK : ob_drv_fail(r, drc, "a copy to the device (memcpy_h2d)");
}

int platform_read(Runner *r, void *host, uint64_t dev, size_t n)
{
    int drc = r->driver.api->memcpy_d2h(r->dev, host, dev, n);
    return drc == PTO_DRV_OK ? PTO_OK : ob_drv_fail(r, drc, "a copy from the device (memcpy_d2h)");
}

int platform_fill(Runner *r, uint64_t dev, int value, size_t n)
{
    int drc = r->driver.api->memset_d(r->dev, dev, value, n);
    return drc == PTO_DRV_OK ? PTO_OK : ob_drv_fail(r, drc, "device_memset (memset_d)");
}

/* ---- host views (HostApi entries) ------------------------------------------------- */

#if PTO_ARCH_HOST_MAPPING
/* Caller holds the lock. */
static void *add_view(Runner *r, uint64_t dev, size_t n)
{
    ObHostView *grown =
        runner_grow(r->views, &r->view_cap, r->view_count, sizeof *grown, 4, "register_device_memory_to_host");
    if (grown == NULL)
        return NULL;
    r->views = grown;
    void *view = NULL;
    int drc = r->driver.api->host_register(r->dev, dev, n, &view);
    if (drc != PTO_DRV_OK) {
        ob_drv_fail(r, drc, "register_device_memory_to_host (host_register)");
        return NULL;
    }
    r->views[r->view_count++] = (ObHostView){ dev, view };
    return view;
}
#endif

void *runner_register_device_memory_to_host(void *runner, void *dev, size_t n)
{
    if (runner == NULL || dev == NULL) {
        runner_refuse_null("register_device_memory_to_host");
        return NULL;
    }
#if PTO_ARCH_HOST_MAPPING
    Runner *r = runner;
    /* a check, not a pin: mapping touches no bytes (the driver checks again) */
    if (runner_check_inside(r, "register_device_memory_to_host", dev_addr(dev), n) != PTO_OK)
        return NULL;
    pthread_mutex_lock(&r->core.lock);
    void *view = add_view(r, dev_addr(dev), n);
    pthread_mutex_unlock(&r->core.lock);
    return view;
#else
    (void)n;
    /* no host mapping on this arch: callers mirror through copies */
    pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "register_device_memory_to_host: %s onboard devices have no host mapping",
             PTO_ARCH_NAME);
    return NULL;
#endif
}

int runner_unregister_device_memory_from_host(void *runner, void *dev)
{
    if (runner == NULL || dev == NULL)
        return runner_refuse_null("unregister_device_memory_from_host");
    Runner *r = runner;
    pthread_mutex_lock(&r->core.lock);
    int rc = PTO_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < r->view_count; i++) {
        if (r->views[i].dev != dev_addr(dev))
            continue;
        int drc = r->driver.api->host_unregister(r->dev, r->views[i].view);
        r->views[i] = r->views[--r->view_count];
        rc = drc == PTO_DRV_OK ? PTO_OK : ob_drv_error(r, drc, "host_unregister"); /* a release, like mem_free */
        break;
    }
    pthread_mutex_unlock(&r->core.lock);
    if (rc == PTO_ERR_INVALID_ARGUMENT)
        pto_fail(rc, "unregister_device_memory_from_host: %p has no host view", dev);
    return rc;
}

void ob_forget_views(Runner *r)
{
    free(r->views);
    r->views = NULL;
    r->view_count = r->view_cap = 0;
}
