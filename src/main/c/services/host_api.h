/*
 * HostApiOps and HostApi (docs/abi.md): how the runtime halves (hbg, trb)
 * reach the device. One static, complete HostApiOps table per library
 * (host_api_ops, no NULL entries), defined by the platform
 * (platform/host_api_ops.c): its entries are the platform's functions
 * themselves. Every entry takes the runner first, returns its failure value on
 * a NULL runner or pointer and records a message. A
 * HostApi is a 24-byte value binding the table to one runner, one pipeline slot
 * and one arena bank; the host_api_* functions forward through it, injecting
 * the slot into the retained-buffer calls and the bank into the arena and cache
 * calls. Nothing is recovered from a thread-local or a mutable runner field.
 */
#ifndef PTORUN_HOST_API_H
#define PTORUN_HOST_API_H

#include <stddef.h>
#include <stdint.h>

typedef struct HostApiOps {
    void *(*device_malloc)(void *runner, size_t n);                              /* NULL on failure */
    int (*device_free)(void *runner, void *dev);                                 /* NULL: no-op */
    int (*copy_to_device)(void *runner, void *dev, const void *host, size_t n);
    int (*copy_from_device)(void *runner, void *host, const void *dev, size_t n);
    /* host-visible view of a device buffer: sim identity, a2a3 onboard a mapping,
       a5 onboard NULL (unsupported) */
    void *(*register_device_memory_to_host)(void *runner, void *dev, size_t n);
    int (*unregister_device_memory_from_host)(void *runner, void *dev);
    int (*device_memset)(void *runner, void *dev, int value, size_t n);
    /* the slot's retained staging buffer ({NULL,0} when none); kept until finalize_device */
    int (*get_retained_temp_buffer)(void *runner, uint32_t slot, void **dev, size_t *size);
    int (*set_retained_temp_buffer)(void *runner, uint32_t slot, void *dev, size_t size);
    /* commit the bank's GM heap, GM shared memory and runtime arena (0 skips one);
       idempotent for equal-or-smaller sizes, grows otherwise; failure releases all three */
    int (*setup_static_arena)(void *runner, uint32_t bank, size_t gm_heap, size_t gm_sm, size_t runtime_arena);
    void *(*acquire_pooled_gm_heap)(void *runner, uint32_t bank, size_t *size);
    void *(*acquire_pooled_gm_sm)(void *runner, uint32_t bank, size_t *size);
    void *(*acquire_pooled_runtime_arena)(void *runner, uint32_t bank, size_t *size);
    /* single-entry cache of a prebuilt runtime image (trb): 1 hit, 0 miss */
    int (*lookup_prebuilt_runtime_arena_cache)(void *runner, uint32_t bank, uint64_t hash,
                                               const void *key, size_t key_size, void **image);
    int (*mark_prebuilt_runtime_arena_cached)(void *runner, uint32_t bank, uint64_t hash,
                                              const void *key, size_t key_size, void *image);
    /* upload a validated ChipCallable once per content hash (refcounted), resolve each
       child's kernel into the uploaded copy's resolved_addr; *dev = the copy */
    int (*upload_chip_callable_buffer)(void *runner, const void *callable, size_t size,
                                       uint64_t hash, void **dev);
    /* drop one reference taken by upload_chip_callable_buffer */
    int (*release_chip_callable_buffer)(void *runner, void *dev);
    /* load a host-side shared library from bytes (an hbg orchestration
       library) once per content per device context, refcounted; *handle is its
       dlopen handle. Counted by get_host_dlopen_count. */
    int (*load_host_library)(void *runner, const void *image, size_t size, void **handle);
    /* drop one reference taken by load_host_library (the last one unloads it) */
    int (*release_host_library)(void *runner, void *handle);
} HostApiOps;

typedef struct HostApi {
    void *runner;
    uint32_t pipeline_slot;
    uint32_t arena_bank;
    const HostApiOps *ops;
} HostApi;
_Static_assert(sizeof(HostApi) == 24, "HostApi is a 24-byte value");

/* The library's one table: the platform's functions (platform/host_api_ops.c). */
extern const HostApiOps host_api_ops;

static inline HostApi host_api_bind(void *runner, uint32_t slot, uint32_t bank, const HostApiOps *ops)
{
    return (HostApi){ runner, slot, bank, ops };
}

void *host_api_device_malloc(const HostApi *api, size_t n);
int host_api_device_free(const HostApi *api, void *dev);
int host_api_copy_to_device(const HostApi *api, void *dev, const void *host, size_t n);
int host_api_copy_from_device(const HostApi *api, void *host, const void *dev, size_t n);
void *host_api_register_device_memory_to_host(const HostApi *api, void *dev, size_t n);
int host_api_unregister_device_memory_from_host(const HostApi *api, void *dev);
int host_api_device_memset(const HostApi *api, void *dev, int value, size_t n);
int host_api_get_retained_temp_buffer(const HostApi *api, void **dev, size_t *size);   /* slot */
int host_api_set_retained_temp_buffer(const HostApi *api, void *dev, size_t size);     /* slot */
int host_api_setup_static_arena(const HostApi *api, size_t gm_heap, size_t gm_sm, size_t runtime_arena); /* bank */
void *host_api_acquire_pooled_gm_heap(const HostApi *api, size_t *size);               /* bank */
void *host_api_acquire_pooled_gm_sm(const HostApi *api, size_t *size);                 /* bank */
void *host_api_acquire_pooled_runtime_arena(const HostApi *api, size_t *size);         /* bank */
int host_api_lookup_prebuilt_runtime_arena_cache(const HostApi *api, uint64_t hash, const void *key,
                                                 size_t key_size, void **image);       /* bank */
int host_api_mark_prebuilt_runtime_arena_cached(const HostApi *api, uint64_t hash, const void *key,
                                                size_t key_size, void *image);         /* bank */
int host_api_upload_chip_callable_buffer(const HostApi *api, const void *callable, size_t size,
                                         uint64_t hash, void **dev);
int host_api_release_chip_callable_buffer(const HostApi *api, void *dev);
int host_api_load_host_library(const HostApi *api, const void *image, size_t size, void **handle);
int host_api_release_host_library(const HostApi *api, void *handle);

#endif
