/* The library's HostApiOps table and the HostApi forwarding functions
 * (host_api.h). Each table entry checks its runner and pointers, then calls the
 * platform's runner_* function of the same name; each forwarding function
 * injects the binding's runner, slot or bank. On failure an entry leaves its
 * out-parameters at their "nothing" value ({NULL, 0}, NULL) so a caller that
 * ignores the code still reads nothing stale. */
#include "host_api.h"

#include "util/last_error.h"
#include "platform/runner.h"
#include "ptorun/pto_runtime_c_api.h"

static void *ops_device_malloc(void *runner, size_t n)
{
    if (runner == NULL) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "host_api.device_malloc: NULL runner or pointer");
        return NULL;
    }
    return runner_device_malloc((Runner *)runner, n);
}

static int ops_device_free(void *runner, void *dev)
{
    if (runner == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "host_api.device_free: NULL runner or pointer");
    if (dev == NULL)
        return PTO_OK; /* documented no-op, like free(NULL) */
    return runner_device_free((Runner *)runner, dev);
}

static int ops_copy_to_device(void *runner, void *dev, const void *host, size_t n)
{
    if (runner == NULL || dev == NULL || host == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "host_api.copy_to_device: NULL runner or pointer");
    return runner_copy_to_device((Runner *)runner, dev, host, n);
}

static int ops_copy_from_device(void *runner, void *host, const void *dev, size_t n)
{
    if (runner == NULL || dev == NULL || host == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "host_api.copy_from_device: NULL runner or pointer");
    return runner_copy_from_device((Runner *)runner, host, dev, n);
}

static void *ops_register_device_memory_to_host(void *runner, void *dev, size_t n)
{
    if (runner == NULL || dev == NULL) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "host_api.register_device_memory_to_host: NULL runner or pointer");
        return NULL;
    }
    return runner_register_device_memory_to_host((Runner *)runner, dev, n);
}

static int ops_unregister_device_memory_from_host(void *runner, void *dev)
{
    if (runner == NULL || dev == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "host_api.unregister_device_memory_from_host: NULL runner or pointer");
    return runner_unregister_device_memory_from_host((Runner *)runner, dev);
}

static int ops_device_memset(void *runner, void *dev, int value, size_t n)
{
    if (runner == NULL || dev == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "host_api.device_memset: NULL runner or pointer");
    return runner_device_memset((Runner *)runner, dev, value, n);
}

static int ops_get_retained_temp_buffer(void *runner, uint32_t slot, void **dev, size_t *size)
{
    if (dev != NULL)
        *dev = NULL;
    if (size != NULL)
        *size = 0;
    if (runner == NULL || dev == NULL || size == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "host_api.get_retained_temp_buffer: NULL runner or pointer");
    return runner_get_retained_temp_buffer((Runner *)runner, slot, dev, size);
}

static int ops_set_retained_temp_buffer(void *runner, uint32_t slot, void *dev, size_t size)
{
    if (runner == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "host_api.set_retained_temp_buffer: NULL runner or pointer");
    return runner_set_retained_temp_buffer((Runner *)runner, slot, dev, size);
}

static int ops_setup_static_arena(void *runner, uint32_t bank, size_t gm_heap, size_t gm_sm, size_t runtime_arena)
{
    if (runner == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "host_api.setup_static_arena: NULL runner or pointer");
    return runner_setup_static_arena((Runner *)runner, bank, gm_heap, gm_sm, runtime_arena);
}

static void *ops_acquire_pooled_gm_heap(void *runner, uint32_t bank, size_t *size)
{
    size_t ignored;
    if (size == NULL)
        size = &ignored; /* the size is an optional out-parameter */
    *size = 0;
    if (runner == NULL) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "host_api.acquire_pooled_gm_heap: NULL runner or pointer");
        return NULL;
    }
    return runner_acquire_pooled_gm_heap((Runner *)runner, bank, size);
}

static void *ops_acquire_pooled_gm_sm(void *runner, uint32_t bank, size_t *size)
{
    size_t ignored;
    if (size == NULL)
        size = &ignored; /* the size is an optional out-parameter */
    *size = 0;
    if (runner == NULL) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "host_api.acquire_pooled_gm_sm: NULL runner or pointer");
        return NULL;
    }
    return runner_acquire_pooled_gm_sm((Runner *)runner, bank, size);
}

static void *ops_acquire_pooled_runtime_arena(void *runner, uint32_t bank, size_t *size)
{
    size_t ignored;
    if (size == NULL)
        size = &ignored; /* the size is an optional out-parameter */
    *size = 0;
    if (runner == NULL) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "host_api.acquire_pooled_runtime_arena: NULL runner or pointer");
        return NULL;
    }
    return runner_acquire_pooled_runtime_arena((Runner *)runner, bank, size);
}

static int ops_lookup_prebuilt_runtime_arena_cache(void *runner, uint32_t bank, uint64_t hash, const void *key, size_t key_size, void **image)
{
    if (image != NULL)
        *image = NULL;
    if (runner == NULL || image == NULL || (key == NULL && key_size != 0))
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "host_api.lookup_prebuilt_runtime_arena_cache: NULL runner or pointer");
    return runner_lookup_prebuilt_runtime_arena_cache((Runner *)runner, bank, hash, key, key_size, image);
}

static int ops_mark_prebuilt_runtime_arena_cached(void *runner, uint32_t bank, uint64_t hash, const void *key, size_t key_size, void *image)
{
    if (runner == NULL || image == NULL || (key == NULL && key_size != 0))
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "host_api.mark_prebuilt_runtime_arena_cached: NULL runner or pointer");
    return runner_mark_prebuilt_runtime_arena_cached((Runner *)runner, bank, hash, key, key_size, image);
}

static int ops_upload_chip_callable_buffer(void *runner, const void *callable, size_t size, uint64_t hash, void **dev)
{
    if (dev != NULL)
        *dev = NULL;
    if (runner == NULL || callable == NULL || dev == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "host_api.upload_chip_callable_buffer: NULL runner or pointer");
    return runner_upload_chip_callable_buffer((Runner *)runner, callable, size, hash, dev);
}

static int ops_release_chip_callable_buffer(void *runner, void *dev)
{
    if (runner == NULL || dev == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "host_api.release_chip_callable_buffer: NULL runner or pointer");
    return runner_release_chip_callable_buffer((Runner *)runner, dev);
}

static int ops_load_host_library(void *runner, const void *image, size_t size, void **handle)
{
    if (handle != NULL)
        *handle = NULL;
    if (runner == NULL || image == NULL || handle == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "host_api.load_host_library: NULL runner or pointer");
    return runner_load_host_library((Runner *)runner, image, size, handle);
}

static int ops_release_host_library(void *runner, void *handle)
{
    if (runner == NULL || handle == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "host_api.release_host_library: NULL runner or pointer");
    return runner_release_host_library((Runner *)runner, handle);
}

const HostApiOps host_api_ops = {
    .device_malloc = ops_device_malloc,
    .device_free = ops_device_free,
    .copy_to_device = ops_copy_to_device,
    .copy_from_device = ops_copy_from_device,
    .register_device_memory_to_host = ops_register_device_memory_to_host,
    .unregister_device_memory_from_host = ops_unregister_device_memory_from_host,
    .device_memset = ops_device_memset,
    .get_retained_temp_buffer = ops_get_retained_temp_buffer,
    .set_retained_temp_buffer = ops_set_retained_temp_buffer,
    .setup_static_arena = ops_setup_static_arena,
    .acquire_pooled_gm_heap = ops_acquire_pooled_gm_heap,
    .acquire_pooled_gm_sm = ops_acquire_pooled_gm_sm,
    .acquire_pooled_runtime_arena = ops_acquire_pooled_runtime_arena,
    .lookup_prebuilt_runtime_arena_cache = ops_lookup_prebuilt_runtime_arena_cache,
    .mark_prebuilt_runtime_arena_cached = ops_mark_prebuilt_runtime_arena_cached,
    .upload_chip_callable_buffer = ops_upload_chip_callable_buffer,
    .release_chip_callable_buffer = ops_release_chip_callable_buffer,
    .load_host_library = ops_load_host_library,
    .release_host_library = ops_release_host_library,
};

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
