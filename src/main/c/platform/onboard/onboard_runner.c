/* The onboard runner: reaches its device only through the driver ABI. The driver
 * ABI and the emulated driver land with the onboard issue ([4/8]); until then
 * every device operation is refused with PTO_RUNTIME_ERR_UNSUPPORTED. */
#include <stdlib.h>

#include "common/last_error.h"
#include "platform/runner.h"
#include "ptorun/pto_runtime_c_api.h"

#define ONBOARD_NOT_BUILT "onboard device access goes through the driver ABI, which is not built yet (issue [4/8])"

struct Runner {
    int unused;
};

Runner *runner_create(void)
{
    return calloc(1, sizeof(Runner));
}

void runner_destroy(Runner *r)
{
    free(r);
}

void *runner_device_malloc(Runner *r, size_t n)
{
    (void)r;
    (void)n;
    pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "device_malloc: " ONBOARD_NOT_BUILT);
    return NULL;
}

int runner_device_free(Runner *r, void *p)
{
    (void)r;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "device_free(%p): " ONBOARD_NOT_BUILT, p);
}

size_t runner_committed_bytes(Runner *r)
{
    (void)r;
    return 0;
}

int runner_copy_to_device(Runner *r, void *dev, const void *host, size_t n)
{
    (void)r;
    (void)dev;
    (void)host;
    (void)n;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "copy_to_device: " ONBOARD_NOT_BUILT);
}

int runner_copy_from_device(Runner *r, void *host, const void *dev, size_t n)
{
    (void)r;
    (void)dev;
    (void)host;
    (void)n;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "copy_from_device: " ONBOARD_NOT_BUILT);
}

int runner_init(Runner *r, int device_id, const DeviceImages *images)
{
    (void)r;
    (void)device_id;
    (void)images;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_init: " ONBOARD_NOT_BUILT);
}

int runner_finalize(Runner *r)
{
    (void)r;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_finalize: " ONBOARD_NOT_BUILT);
}

int runner_initialized(Runner *r)
{
    (void)r;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_initialized: " ONBOARD_NOT_BUILT);
}

int runner_poisoned(Runner *r)
{
    (void)r;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_poisoned: " ONBOARD_NOT_BUILT);
}

void *runner_register_device_memory_to_host(Runner *r, void *dev, size_t n)
{
    (void)r;
    (void)dev;
    (void)n;
    pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_register_device_memory_to_host: " ONBOARD_NOT_BUILT);
    return NULL;
}

int runner_unregister_device_memory_from_host(Runner *r, void *dev)
{
    (void)r;
    (void)dev;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_unregister_device_memory_from_host: " ONBOARD_NOT_BUILT);
}

int runner_device_memset(Runner *r, void *dev, int value, size_t n)
{
    (void)r;
    (void)dev;
    (void)value;
    (void)n;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_device_memset: " ONBOARD_NOT_BUILT);
}

int runner_get_retained_temp_buffer(Runner *r, uint32_t slot, void **dev, size_t *size)
{
    (void)r;
    (void)slot;
    (void)dev;
    (void)size;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_get_retained_temp_buffer: " ONBOARD_NOT_BUILT);
}

int runner_set_retained_temp_buffer(Runner *r, uint32_t slot, void *dev, size_t size)
{
    (void)r;
    (void)slot;
    (void)dev;
    (void)size;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_set_retained_temp_buffer: " ONBOARD_NOT_BUILT);
}

int runner_setup_static_arena(Runner *r, uint32_t bank, size_t gm_heap, size_t gm_sm, size_t runtime_arena)
{
    (void)r;
    (void)bank;
    (void)gm_heap;
    (void)gm_sm;
    (void)runtime_arena;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_setup_static_arena: " ONBOARD_NOT_BUILT);
}

void *runner_acquire_pooled_gm_heap(Runner *r, uint32_t bank, size_t *size)
{
    (void)r;
    (void)bank;
    (void)size;
    pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_acquire_pooled_gm_heap: " ONBOARD_NOT_BUILT);
    return NULL;
}

void *runner_acquire_pooled_gm_sm(Runner *r, uint32_t bank, size_t *size)
{
    (void)r;
    (void)bank;
    (void)size;
    pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_acquire_pooled_gm_sm: " ONBOARD_NOT_BUILT);
    return NULL;
}

void *runner_acquire_pooled_runtime_arena(Runner *r, uint32_t bank, size_t *size)
{
    (void)r;
    (void)bank;
    (void)size;
    pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_acquire_pooled_runtime_arena: " ONBOARD_NOT_BUILT);
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
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_lookup_prebuilt_runtime_arena_cache: " ONBOARD_NOT_BUILT);
}

int runner_mark_prebuilt_runtime_arena_cached(Runner *r, uint32_t bank, uint64_t hash, const void *key, size_t key_size, void *image)
{
    (void)r;
    (void)bank;
    (void)hash;
    (void)key;
    (void)key_size;
    (void)image;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_mark_prebuilt_runtime_arena_cached: " ONBOARD_NOT_BUILT);
}

int runner_upload_chip_callable_buffer(Runner *r, const void *callable, size_t size, uint64_t hash, void **dev)
{
    (void)r;
    (void)callable;
    (void)size;
    (void)hash;
    (void)dev;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_upload_chip_callable_buffer: " ONBOARD_NOT_BUILT);
}

int runner_release_chip_callable_buffer(Runner *r, void *dev)
{
    (void)r;
    (void)dev;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_release_chip_callable_buffer: " ONBOARD_NOT_BUILT);
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
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_enqueue: " ONBOARD_NOT_BUILT);
}

int runner_query(Runner *r, RunExec *exec)
{
    (void)r;
    (void)exec;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_query: " ONBOARD_NOT_BUILT);
}

int runner_drain(Runner *r, RunExec *exec)
{
    (void)r;
    (void)exec;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_drain: " ONBOARD_NOT_BUILT);
}

int runner_load_host_library(Runner *r, const void *image, size_t size, void **handle)
{
    (void)r;
    (void)image;
    (void)size;
    *handle = NULL;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_load_host_library: " ONBOARD_NOT_BUILT);
}

int runner_release_host_library(Runner *r, void *handle)
{
    (void)r;
    (void)handle;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "runner_release_host_library: " ONBOARD_NOT_BUILT);
}

size_t runner_host_dlopen_count(Runner *r)
{
    (void)r;
    return 0;
}
