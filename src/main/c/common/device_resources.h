/*
 * The device resources a runner keeps for its device context, the same on
 * every platform: the per-slot retained buffers, the per-bank static arenas
 * (grow, keep, release), the single-entry prebuilt runtime-arena cache (bank
 * 0) and the refcounted callable uploads (deduplicated by hash and bytes,
 * kernels resolved, kernel-library references held per upload).
 *
 * A runner embeds one DeviceResources and binds it to itself with the few
 * platform operations it needs (DeviceResourceOps). Device addresses are
 * opaque 64-bit values: the shared code never dereferences one. The runner's
 * lock guards everything here: the device_resources_* entry points take it
 * themselves; helpers marked "caller holds the lock" expect it held.
 */
#ifndef PTORUN_DEVICE_RESOURCES_H
#define PTORUN_DEVICE_RESOURCES_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "format/chip_callable.h"
#include "ptorun/pto_runtime_c_api.h"

#define DEVICE_RESOURCE_BANKS PTO_PIPELINE_MAX_DEPTH
#define DEVICE_RESOURCE_SLOTS PTO_PIPELINE_MAX_DEPTH

/* What the shared logic needs from the platform. `platform` is the runner.
 * check_inside may be called with or without the runner's lock; every other
 * operation is called with it held. Each records its own message on failure. */
typedef struct DeviceResourceOps {
    /* PTO_ERR_WRONG_PHASE (message names fn) unless the device is initialized. */
    int (*check_up)(void *platform, const char *fn);
    /* PTO_ERR_INVALID_ARGUMENT unless [dev, +n) lies inside one live allocation. */
    int (*check_inside)(void *platform, const char *fn, uint64_t dev, size_t n);
    int (*alloc)(void *platform, size_t n, uint64_t *dev);
    void (*free)(void *platform, uint64_t dev);        /* an allocation known to be live */
    int (*copy_to_device)(void *platform, uint64_t dev, const void *host, size_t n);
    /* The device address of child i's kernel, or 0 with a PTO_ERR_BAD_CALLABLE
     * message. *library is set to the kernel-library reference the child took
     * (NULL when none), also when the address cannot be resolved. */
    uint64_t (*resolve_kernel)(void *platform, const ChipCallableView *v, uint32_t i, const ChipCallableChild *c,
                               void **library);
    void (*release_library)(void *platform, void *library);
} DeviceResourceOps;

typedef struct DeviceArena {
    uint64_t base;
    size_t size;
} DeviceArena;

typedef struct DeviceBank {
    DeviceArena gm_heap, gm_sm, runtime_arena;
} DeviceBank;

typedef struct PrebuiltCache {
    int valid;
    uint64_t hash;
    void *key;           /* host copy */
    size_t key_size;
    uint64_t image;
} PrebuiltCache;

typedef struct CallableUpload {
    uint64_t dev;        /* the device copy */
    void *host;          /* the uploaded bytes, kernels resolved (for dedup) */
    size_t size;
    uint64_t hash;       /* of the caller's bytes */
    uint32_t refs;
    uint32_t library_count;
    void *libraries[PTO_CALLABLE_MAX_CHILDREN]; /* kernel-library references its children hold */
} CallableUpload;

typedef struct DeviceResources {
    const DeviceResourceOps *ops;
    void *platform;
    pthread_mutex_t *lock;   /* the runner's */
    DeviceBank banks[DEVICE_RESOURCE_BANKS];
    DeviceArena retained[DEVICE_RESOURCE_SLOTS];
    PrebuiltCache prebuilt;
    CallableUpload *uploads;
    size_t upload_count, upload_cap;
} DeviceResources;

void device_resources_init(DeviceResources *res, const DeviceResourceOps *ops, void *platform, pthread_mutex_t *lock);

/* Forgets every record without freeing device memory (the device was reset,
 * closed or drained: its memory went with it). Caller holds the lock or owns
 * the runner exclusively. Safe to repeat; the runner's destroy calls it last. */
void device_resources_forget(DeviceResources *res);

/* PTO_ERR_INVALID_ARGUMENT (message names fn) for a slot outside 0..max. */
int device_check_slot(uint32_t slot, const char *fn);

/* Caller holds the lock: "an arena" or "a callable upload" when the runner
 * owns the allocation at dev, else NULL. */
const char *device_resources_owned(const DeviceResources *res, uint64_t dev);
/* Caller holds the lock: a freed buffer is no longer any slot's retained one. */
void device_resources_forget_retained(DeviceResources *res, uint64_t dev);

/* ---- the runner_* HostApi entries of the same names ----------------------- */
int device_resources_get_retained(DeviceResources *res, uint32_t slot, void **dev, size_t *size);
int device_resources_set_retained(DeviceResources *res, uint32_t slot, void *dev, size_t size);
uint64_t device_resources_retained_addr(DeviceResources *res, uint32_t slot);

int device_resources_setup_static_arena(DeviceResources *res, uint32_t bank, size_t gm_heap, size_t gm_sm,
                                        size_t runtime_arena);
void *device_resources_acquire_gm_heap(DeviceResources *res, uint32_t bank, size_t *size);
void *device_resources_acquire_gm_sm(DeviceResources *res, uint32_t bank, size_t *size);
void *device_resources_acquire_runtime_arena(DeviceResources *res, uint32_t bank, size_t *size);
uint64_t device_resources_gm_heap_base(DeviceResources *res, uint32_t bank);

int device_resources_lookup_prebuilt(DeviceResources *res, uint32_t bank, uint64_t hash, const void *key,
                                     size_t key_size, void **image);
int device_resources_mark_prebuilt(DeviceResources *res, uint32_t bank, uint64_t hash, const void *key,
                                   size_t key_size, void *image);

int device_resources_upload_callable(DeviceResources *res, const void *callable, size_t size, uint64_t hash,
                                     void **dev);
int device_resources_release_callable(DeviceResources *res, void *dev);

#endif
