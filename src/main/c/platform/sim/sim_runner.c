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

/* ---- not built yet ---- */

int runner_init(Runner *r, int device_id, const DeviceImages *images)
{
    (void)r;
    (void)device_id;
    (void)images;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_init: sim device execution is not built yet (issue [2/8])");
}

int runner_finalize(Runner *r)
{
    (void)r;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_finalize: sim device execution is not built yet (issue [2/8])");
}

int runner_initialized(Runner *r)
{
    (void)r;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_initialized: sim device execution is not built yet (issue [2/8])");
}

int runner_poisoned(Runner *r)
{
    (void)r;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_poisoned: sim device execution is not built yet (issue [2/8])");
}

void *runner_register_device_memory_to_host(Runner *r, void *dev, size_t n)
{
    (void)r;
    (void)dev;
    (void)n;
    pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_register_device_memory_to_host: sim device execution is not built yet (issue [2/8])");
    return NULL;
}

int runner_unregister_device_memory_from_host(Runner *r, void *dev)
{
    (void)r;
    (void)dev;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_unregister_device_memory_from_host: sim device execution is not built yet (issue [2/8])");
}

int runner_device_memset(Runner *r, void *dev, int value, size_t n)
{
    (void)r;
    (void)dev;
    (void)value;
    (void)n;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_device_memset: sim device execution is not built yet (issue [2/8])");
}

int runner_get_retained_temp_buffer(Runner *r, uint32_t slot, void **dev, size_t *size)
{
    (void)r;
    (void)slot;
    (void)dev;
    (void)size;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_get_retained_temp_buffer: sim device execution is not built yet (issue [2/8])");
}

int runner_set_retained_temp_buffer(Runner *r, uint32_t slot, void *dev, size_t size)
{
    (void)r;
    (void)slot;
    (void)dev;
    (void)size;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_set_retained_temp_buffer: sim device execution is not built yet (issue [2/8])");
}

int runner_setup_static_arena(Runner *r, uint32_t bank, size_t gm_heap, size_t gm_sm, size_t runtime_arena)
{
    (void)r;
    (void)bank;
    (void)gm_heap;
    (void)gm_sm;
    (void)runtime_arena;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_setup_static_arena: sim device execution is not built yet (issue [2/8])");
}

void *runner_acquire_pooled_gm_heap(Runner *r, uint32_t bank, size_t *size)
{
    (void)r;
    (void)bank;
    (void)size;
    pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_acquire_pooled_gm_heap: sim device execution is not built yet (issue [2/8])");
    return NULL;
}

void *runner_acquire_pooled_gm_sm(Runner *r, uint32_t bank, size_t *size)
{
    (void)r;
    (void)bank;
    (void)size;
    pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_acquire_pooled_gm_sm: sim device execution is not built yet (issue [2/8])");
    return NULL;
}

void *runner_acquire_pooled_runtime_arena(Runner *r, uint32_t bank, size_t *size)
{
    (void)r;
    (void)bank;
    (void)size;
    pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_acquire_pooled_runtime_arena: sim device execution is not built yet (issue [2/8])");
    return NULL;
}

int runner_lookup_prebuilt_runtime_arena_cache(Runner *r, uint32_t bank, uint64_t hash, const void *key, size_t key_size, void **image)
{
    (void)r;
    (void)bank;
    (void)hash;
    (void)key;
    (void)key_size;
    (void)image;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_lookup_prebuilt_runtime_arena_cache: sim device execution is not built yet (issue [2/8])");
}

int runner_mark_prebuilt_runtime_arena_cached(Runner *r, uint32_t bank, uint64_t hash, const void *key, size_t key_size, void *image)
{
    (void)r;
    (void)bank;
    (void)hash;
    (void)key;
    (void)key_size;
    (void)image;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_mark_prebuilt_runtime_arena_cached: sim device execution is not built yet (issue [2/8])");
}

int runner_upload_chip_callable_buffer(Runner *r, const void *callable, size_t size, uint64_t hash, void **dev)
{
    (void)r;
    (void)callable;
    (void)size;
    (void)hash;
    (void)dev;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_upload_chip_callable_buffer: sim device execution is not built yet (issue [2/8])");
}

int runner_release_chip_callable_buffer(Runner *r, void *dev)
{
    (void)r;
    (void)dev;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_release_chip_callable_buffer: sim device execution is not built yet (issue [2/8])");
}

uint64_t runner_arena_bank_gm_heap_base(Runner *r, uint32_t bank)
{
    (void)r;
    (void)bank;
    return 0;
}

uint64_t runner_retained_temp_addr(Runner *r, uint32_t slot)
{
    (void)r;
    (void)slot;
    return 0;
}

size_t runner_aicpu_dlopen_count(Runner *r)
{
    (void)r;
    return 0;
}

size_t runner_run_stream_set_create_count(Runner *r)
{
    (void)r;
    return 0;
}

int runner_enqueue(Runner *r, RunExec *exec, uint32_t slot, const DeviceLaunch *launch, LaunchSignal *signal)
{
    (void)r;
    (void)exec;
    (void)slot;
    (void)launch;
    (void)signal;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_enqueue: sim device execution is not built yet (issue [2/8])");
}

int runner_query(Runner *r, RunExec *exec)
{
    (void)r;
    (void)exec;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_query: sim device execution is not built yet (issue [2/8])");
}

int runner_drain(Runner *r, RunExec *exec)
{
    (void)r;
    (void)exec;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_drain: sim device execution is not built yet (issue [2/8])");
}
