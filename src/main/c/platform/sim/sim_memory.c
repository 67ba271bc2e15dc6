/* The sim's device memory primitives (runner_core.h): device memory is host
 * memory, aligned like a real device's GM allocations, so the bytes move with
 * memcpy and the host view of a buffer is the buffer. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util/last_error.h"
#include "platform/sim/sim_runner.h"
#include "ptorun/pto_runtime_c_api.h"

#define SIM_DEVICE_ALIGNMENT 64
/* Large buffers (a run's staged tensors, arenas) are first touched inside a prepare:
 * on 2 MiB pages that costs one fault per 2 MiB instead of one per 4 KiB
 * (docs/performance.md, P10). Advice only: without transparent huge pages it is a no-op. */
#define SIM_HUGE_PAGE ((size_t)2 << 20)
#define SIM_HUGE_MIN (4 * SIM_HUGE_PAGE)

int platform_alloc(Runner *r, size_t n, uint64_t *dev)
{
    (void)r; /* the table's capacity already admitted n */
    void *p = NULL;
    size_t align = n >= SIM_HUGE_MIN ? SIM_HUGE_PAGE : SIM_DEVICE_ALIGNMENT;
    if (posix_memalign(&p, align, n) != 0)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "sim device memory: host allocation of %zu bytes failed", n);
    if (align == SIM_HUGE_PAGE)
        (void)madvise(p, n & ~(SIM_HUGE_PAGE - 1), MADV_HUGEPAGE);
    *dev = dev_addr(p);
    return PTO_OK;
}

int platform_free(Runner *r, uint64_t dev, int report)
{
    (void)r;
    (void)report; /* free() cannot fail */
    free(dev_ptr(dev));
    return PTO_OK;
}

int platform_write(Runner *r, uint64_t dev, const void *host, size_t n)
{
    (void)r;
    memcpy(dev_ptr(dev), host, n);
    return PTO_OK;
}

int platform_read(Runner *r, void *host, uint64_t dev, size_t n)
{
    (void)r;
    memcpy(host, dev_ptr(dev), n);
    return PTO_OK;
}

int platform_fill(Runner *r, uint64_t dev, int value, size_t n)
{
    (void)r;
    memset(dev_ptr(dev), value, n);
    return PTO_OK;
}

/* ---- the host view (HostApi entries) ---------------------------------------------- */

void *runner_register_device_memory_to_host(void *runner, void *dev, size_t n)
{
    if (runner == NULL || dev == NULL) {
        runner_refuse_null("register_device_memory_to_host");
        return NULL;
    }
    /* a check, not a pin: the view is the buffer, and its user touches it after we return */
    return runner_check_inside(runner, "register_device_memory_to_host", dev_addr(dev), n) == PTO_OK ? dev : NULL;
}

int runner_unregister_device_memory_from_host(void *runner, void *dev)
{
    if (runner == NULL || dev == NULL)
        return runner_refuse_null("unregister_device_memory_from_host");
    return runner_check_inside(runner, "unregister_device_memory_from_host", dev_addr(dev), 0);
}
