/*
 * The device resources a runner keeps for its device context, the same on
 * every platform: the per-slot retained buffers, the per-bank static arenas
 * (grow, keep, release), the single-entry prebuilt runtime-arena cache (bank
 * 0) and the refcounted callable uploads (deduplicated by hash and bytes,
 * kernels resolved, kernel-library references held per upload).
 *
 * Every runner's core holds one (platform/runner_core.h); the device memory
 * it takes comes from the core's table, the kernels from the platform
 * (platform_kernel_address). Device addresses are opaque 64-bit values: this
 * code never dereferences one. The runner's lock guards everything here: the
 * HostApi entries take it themselves; helpers marked "caller holds the lock"
 * expect it held.
 */
#ifndef PTORUN_DEVICE_RESOURCES_H
#define PTORUN_DEVICE_RESOURCES_H

#include <stddef.h>
#include <stdint.h>

#include "format/chip_callable.h"
#include "ptorun/pto_runtime_c_api.h"

#define DEVICE_RESOURCE_BANKS PTO_PIPELINE_MAX_DEPTH
#define DEVICE_RESOURCE_SLOTS PTO_PIPELINE_MAX_DEPTH

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
    DeviceBank banks[DEVICE_RESOURCE_BANKS];
    DeviceArena retained[DEVICE_RESOURCE_SLOTS];
    PrebuiltCache prebuilt;
    CallableUpload *uploads;
    size_t upload_count, upload_cap;
} DeviceResources;

void device_resources_init(DeviceResources *res);

/* Forgets every record without freeing device memory (the device was reset
 * or closed: its memory went with it). Caller holds the lock or owns the
 * runner exclusively. Safe to repeat; the runner's destroy calls it last. */
void device_resources_forget(DeviceResources *res);

/* PTO_ERR_INVALID_ARGUMENT (message names fn) for a slot outside 0..max. */
int device_check_slot(uint32_t slot, const char *fn);

/* Caller holds the lock: "an arena" or "a callable upload" when the runner
 * owns the allocation at dev, else NULL. */
const char *device_resources_owned(const DeviceResources *res, uint64_t dev);
/* Caller holds the lock: a freed buffer is no longer any slot's retained one. */
void device_resources_forget_retained(DeviceResources *res, uint64_t dev);

/* The HostApi entries of the same names (platform/host_api_ops.c) are
 * device_resources.c's: runner_get_retained_temp_buffer, ...,
 * runner_release_chip_callable_buffer (platform/runner.h). */

#endif
