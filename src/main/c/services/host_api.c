/* The HostApi forwarding functions (host_api.h): each injects the binding's
 * runner, slot or bank into its table's entry. The library's table itself is
 * the platform's (platform/host_api_ops.c). An unbound HostApi leaves the
 * out-parameters at their "nothing" value ({NULL, 0}, NULL). */
#include "host_api.h"

#include "util/last_error.h"
#include "ptorun/pto_runtime_c_api.h"

void *host_api_device_malloc(const HostApi *api, size_t n)
{
    if (api == NULL || api->ops == NULL) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "HostApi.device_malloc: no HostApi bound");
        return NULL;
    }
    return api->ops->device_malloc(api->runner, n);
}

int host_api_device_free(const HostApi *api, void *dev)
{
    if (api == NULL || api->ops == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "HostApi.device_free: no HostApi bound");
    return api->ops->device_free(api->runner, dev);
}

int host_api_copy_to_device(const HostApi *api, void *dev, const void *host, size_t n)
{
    if (api == NULL || api->ops == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "HostApi.copy_to_device: no HostApi bound");
    return api->ops->copy_to_device(api->runner, dev, host, n);
}

int host_api_copy_from_device(const HostApi *api, void *host, const void *dev, size_t n)
{
    if (api == NULL || api->ops == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "HostApi.copy_from_device: no HostApi bound");
    return api->ops->copy_from_device(api->runner, host, dev, n);
}

void *host_api_register_device_memory_to_host(const HostApi *api, void *dev, size_t n)
{
    if (api == NULL || api->ops == NULL) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "HostApi.register_device_memory_to_host: no HostApi bound");
        return NULL;
    }
    return api->ops->register_device_memory_to_host(api->runner, dev, n);
}

int host_api_unregister_device_memory_from_host(const HostApi *api, void *dev)
{
    if (api == NULL || api->ops == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "HostApi.unregister_device_memory_from_host: no HostApi bound");
    return api->ops->unregister_device_memory_from_host(api->runner, dev);
}

int host_api_device_memset(const HostApi *api, void *dev, int value, size_t n)
{
    if (api == NULL || api->ops == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "HostApi.device_memset: no HostApi bound");
    return api->ops->device_memset(api->runner, dev, value, n);
}

int host_api_get_retained_temp_buffer(const HostApi *api, void **dev, size_t *size)
{
    if (api == NULL || api->ops == NULL) {
        if (dev != NULL)
            *dev = NULL;
        if (size != NULL)
            *size = 0;
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "HostApi.get_retained_temp_buffer: no HostApi bound");
    }
    return api->ops->get_retained_temp_buffer(api->runner, api->pipeline_slot, dev, size);
}

int host_api_set_retained_temp_buffer(const HostApi *api, void *dev, size_t size)
{
    if (api == NULL || api->ops == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "HostApi.set_retained_temp_buffer: no HostApi bound");
    return api->ops->set_retained_temp_buffer(api->runner, api->pipeline_slot, dev, size);
}

int host_api_setup_static_arena(const HostApi *api, size_t gm_heap, size_t gm_sm, size_t runtime_arena)
{
    if (api == NULL || api->ops == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "HostApi.setup_static_arena: no HostApi bound");
    return api->ops->setup_static_arena(api->runner, api->arena_bank, gm_heap, gm_sm, runtime_arena);
}

void *host_api_acquire_pooled_gm_heap(const HostApi *api, size_t *size)
{
    if (api == NULL || api->ops == NULL) {
        if (size != NULL)
            *size = 0;
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "HostApi.acquire_pooled_gm_heap: no HostApi bound");
        return NULL;
    }
    return api->ops->acquire_pooled_gm_heap(api->runner, api->arena_bank, size);
}

void *host_api_acquire_pooled_gm_sm(const HostApi *api, size_t *size)
{
    if (api == NULL || api->ops == NULL) {
        if (size != NULL)
            *size = 0;
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "HostApi.acquire_pooled_gm_sm: no HostApi bound");
        return NULL;
    }
    return api->ops->acquire_pooled_gm_sm(api->runner, api->arena_bank, size);
}

void *host_api_acquire_pooled_runtime_arena(const HostApi *api, size_t *size)
{
    if (api == NULL || api->ops == NULL) {
        if (size != NULL)
            *size = 0;
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "HostApi.acquire_pooled_runtime_arena: no HostApi bound");
        return NULL;
    }
    return api->ops->acquire_pooled_runtime_arena(api->runner, api->arena_bank, size);
}

int host_api_lookup_prebuilt_runtime_arena_cache(const HostApi *api, uint64_t hash, const void *key, size_t key_size, void **image)
{
    if (api == NULL || api->ops == NULL) {
        if (image != NULL)
            *image = NULL;
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "HostApi.lookup_prebuilt_runtime_arena_cache: no HostApi bound");
    }
    return api->ops->lookup_prebuilt_runtime_arena_cache(api->runner, api->arena_bank, hash, key, key_size, image);
}

int host_api_mark_prebuilt_runtime_arena_cached(const HostApi *api, uint64_t hash, const void *key, size_t key_size, void *image)
{
    if (api == NULL || api->ops == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "HostApi.mark_prebuilt_runtime_arena_cached: no HostApi bound");
    return api->ops->mark_prebuilt_runtime_arena_cached(api->runner, api->arena_bank, hash, key, key_size, image);
}

int host_api_upload_chip_callable_buffer(const HostApi *api, const void *callable, size_t size, uint64_t hash, void **dev)
{
    if (api == NULL || api->ops == NULL) {
        if (dev != NULL)
            *dev = NULL;
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "HostApi.upload_chip_callable_buffer: no HostApi bound");
    }
    return api->ops->upload_chip_callable_buffer(api->runner, callable, size, hash, dev);
}

int host_api_release_chip_callable_buffer(const HostApi *api, void *dev)
{
    if (api == NULL || api->ops == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "HostApi.release_chip_callable_buffer: no HostApi bound");
    return api->ops->release_chip_callable_buffer(api->runner, dev);
}

int host_api_load_host_library(const HostApi *api, const void *image, size_t size, void **handle)
{
    if (api == NULL || api->ops == NULL) {
        if (handle != NULL)
            *handle = NULL;
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "HostApi.load_host_library: no HostApi bound");
    }
    return api->ops->load_host_library(api->runner, image, size, handle);
}

int host_api_release_host_library(const HostApi *api, void *handle)
{
    if (api == NULL || api->ops == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "HostApi.release_host_library: no HostApi bound");
    return api->ops->release_host_library(api->runner, handle);
}
