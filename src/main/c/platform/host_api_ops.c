/* The library's one HostApiOps table (services/host_api.h, docs/abi.md): each
 * entry is the platform function that does the work, nothing in between. The
 * device memory entries are device_memory.c's, the slot, bank, cache and upload
 * entries device_resources.c's, the host libraries runner_core.c's, and the
 * host mapping each platform's own (it differs: sim identity, a2a3 onboard a
 * driver view, a5 onboard none). Every entry refuses a NULL runner or pointer. */
#include "services/host_api.h"
#include "platform/runner.h"

const HostApiOps host_api_ops = {
    .device_malloc = runner_device_malloc,
    .device_free = runner_device_free,
    .copy_to_device = runner_copy_to_device,
    .copy_from_device = runner_copy_from_device,
    .register_device_memory_to_host = runner_register_device_memory_to_host,
    .unregister_device_memory_from_host = runner_unregister_device_memory_from_host,
    .device_memset = runner_device_memset,
    .get_retained_temp_buffer = runner_get_retained_temp_buffer,
    .set_retained_temp_buffer = runner_set_retained_temp_buffer,
    .setup_static_arena = runner_setup_static_arena,
    .acquire_pooled_gm_heap = runner_acquire_pooled_gm_heap,
    .acquire_pooled_gm_sm = runner_acquire_pooled_gm_sm,
    .acquire_pooled_runtime_arena = runner_acquire_pooled_runtime_arena,
    .lookup_prebuilt_runtime_arena_cache = runner_lookup_prebuilt_runtime_arena_cache,
    .mark_prebuilt_runtime_arena_cached = runner_mark_prebuilt_runtime_arena_cached,
    .upload_chip_callable_buffer = runner_upload_chip_callable_buffer,
    .release_chip_callable_buffer = runner_release_chip_callable_buffer,
    .load_host_library = runner_load_host_library,
    .release_host_library = runner_release_host_library,
};
