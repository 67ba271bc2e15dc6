/* The runner_* entries every platform shares (platform/runner_resources.h):
 * each forwards to the runner's DeviceResources. */
#include "platform/runner_resources.h"

#include "util/last_error.h"
#include "ptorun/pto_runtime_c_api.h"

int runner_get_retained_temp_buffer(Runner *r, uint32_t slot, void **dev, size_t *size)
{
    return device_resources_get_retained(runner_device_resources(r), slot, dev, size);
}

int runner_set_retained_temp_buffer(Runner *r, uint32_t slot, void *dev, size_t size)
{
    return device_resources_set_retained(runner_device_resources(r), slot, dev, size);
}

uint64_t runner_retained_temp_addr(Runner *r, uint32_t slot)
{
    return device_resources_retained_addr(runner_device_resources(r), slot);
}

int runner_setup_static_arena(Runner *r, uint32_t bank, size_t gm_heap, size_t gm_sm, size_t runtime_arena)
{
    return device_resources_setup_static_arena(runner_device_resources(r), bank, gm_heap, gm_sm, runtime_arena);
}

void *runner_acquire_pooled_gm_heap(Runner *r, uint32_t bank, size_t *size)
{
    return device_resources_acquire_gm_heap(runner_device_resources(r), bank, size);
}

void *runner_acquire_pooled_gm_sm(Runner *r, uint32_t bank, size_t *size)
{
    return device_resources_acquire_gm_sm(runner_device_resources(r), bank, size);
}

void *runner_acquire_pooled_runtime_arena(Runner *r, uint32_t bank, size_t *size)
{
    return device_resources_acquire_runtime_arena(runner_device_resources(r), bank, size);
}

uint64_t runner_arena_bank_gm_heap_base(Runner *r, uint32_t bank)
{
    return device_resources_gm_heap_base(runner_device_resources(r), bank);
}

int runner_lookup_prebuilt_runtime_arena_cache(Runner *r, uint32_t bank, uint64_t hash, const void *key,
                                               size_t key_size, void **image)
{
    return device_resources_lookup_prebuilt(runner_device_resources(r), bank, hash, key, key_size, image);
}

int runner_mark_prebuilt_runtime_arena_cached(Runner *r, uint32_t bank, uint64_t hash, const void *key,
                                              size_t key_size, void *image)
{
    return device_resources_mark_prebuilt(runner_device_resources(r), bank, hash, key, key_size, image);
}

int runner_upload_chip_callable_buffer(Runner *r, const void *callable, size_t size, uint64_t hash, void **dev)
{
    return device_resources_upload_callable(runner_device_resources(r), callable, size, hash, dev);
}

int runner_release_chip_callable_buffer(Runner *r, void *dev)
{
    return device_resources_release_callable(runner_device_resources(r), dev);
}

int runner_load_host_library(Runner *r, const void *image, size_t size, void **handle)
{
    *handle = NULL;
    if (!runner_initialized(r))
        return pto_fail(PTO_ERR_WRONG_PHASE, "load_host_library: the device is not initialized (simpler_init)");
    return library_cache_acquire(runner_host_libraries(r), image, size, handle);
}

int runner_release_host_library(Runner *r, void *handle)
{
    return library_cache_release(runner_host_libraries(r), handle);
}

size_t runner_host_dlopen_count(Runner *r)
{
    return library_cache_loads(runner_host_libraries(r));
}
