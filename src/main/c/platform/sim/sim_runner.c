/* The sim runner: the device is simulated in-process. Device memory is host
 * memory with exact accounting and an optional capacity
 * (PTORUN_SIM_DEVICE_MEMORY bytes). */
#include <stdlib.h>
#include <string.h>

#include "common/alloc_table.h"
#include "common/env.h"
#include "common/last_error.h"
#include "platform/runner.h"
#include "ptorun/pto_runtime_c_api.h"

/* Device allocations are aligned like a real device's GM allocations. */
#define SIM_DEVICE_ALIGNMENT 64

struct Runner {
    AllocTable memory;
};

Runner *runner_create(void)
{
    Runner *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    if (alloc_table_init(&r->memory, pto_env_size("PTORUN_SIM_DEVICE_MEMORY", 0)) != PTO_OK) {
        free(r);
        return NULL;
    }
    return r;
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
    alloc_table_drain(&r->memory, release_allocation, NULL);
    alloc_table_destroy(&r->memory);
    free(r);
}

void *runner_device_malloc(Runner *r, size_t n)
{
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

int runner_device_free(Runner *r, void *p)
{
    size_t size;
    if (alloc_table_remove(&r->memory, (uintptr_t)p, &size) != PTO_OK)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT,
                        "device_free: %p is not the start of a live allocation of this context; not freed", p);
    free(p);
    return PTO_OK;
}

size_t runner_committed_bytes(Runner *r)
{
    return alloc_table_committed(&r->memory);
}

int runner_copy_to_device(Runner *r, void *dev, const void *host, size_t n)
{
    if (!alloc_table_contains(&r->memory, (uintptr_t)dev, n))
        return pto_fail(PTO_ERR_INVALID_ARGUMENT,
                        "copy_to_device: [%p, +%zu) is not inside one live allocation of this context", dev, n);
    memcpy(dev, host, n);
    return PTO_OK;
}

int runner_copy_from_device(Runner *r, void *host, const void *dev, size_t n)
{
    if (!alloc_table_contains(&r->memory, (uintptr_t)dev, n))
        return pto_fail(PTO_ERR_INVALID_ARGUMENT,
                        "copy_from_device: [%p, +%zu) is not inside one live allocation of this context", dev, n);
    memcpy(host, dev, n);
    return PTO_OK;
}
