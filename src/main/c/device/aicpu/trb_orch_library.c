#include "device/aicpu/trb_orch_library.h"

#include <stdio.h>
#include <string.h>

#include "util/last_error.h"
#include "util/library_cache.h"
#include "device/pto_device_abi.h"
#include "ptorun/chip_callable.h"
#include "ptorun/pto_export.h"
#include "ptorun/pto_runtime_c_api.h"

/* One per possible callable id: a device holds at most that many distinct
   orchestrations at once; beyond that the oldest load is dropped. */
#define KNOWN_LIBRARIES PTO_MAX_CALLABLES

/* The loads (memory file + dlopen, once per content), shared with the host
   side's library code. */
static LibraryCache cache = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .what = "orchestration library",
};

/* The host hashed each image at registration: a run finds its library by that
   hash without reading the image again. */
typedef struct KnownLibrary {
    uint64_t hash, size;
    void *handle;             /* NULL: free entry; else one reference in `cache` */
} KnownLibrary;

static KnownLibrary known[KNOWN_LIBRARIES];
static uint32_t next_victim;

PTO_EXPORT uint64_t pto_aicpu_dlopen_count(void)
{
    return library_cache_loads(&cache);
}

/* This copy of the image is going away: so do the libraries it loaded. */
__attribute__((destructor)) static void unload_all(void)
{
    library_cache_destroy(&cache);
}

static void *find_or_load(const uint8_t *image, uint64_t size, uint64_t hash)
{
    KnownLibrary *slot = NULL;
    for (uint32_t i = 0; i < KNOWN_LIBRARIES; i++) {
        KnownLibrary *k = &known[i];
        if (k->handle != NULL && k->hash == hash && k->size == size)
            return k->handle;
        if (k->handle == NULL && slot == NULL)
            slot = k;
    }
    if (slot == NULL) {
        slot = &known[next_victim];
        next_victim = (next_victim + 1) % KNOWN_LIBRARIES;
        library_cache_release(&cache, slot->handle);
        slot->handle = NULL;
    }
    void *handle;
    if (library_cache_acquire(&cache, image, (size_t)size, &handle) != PTO_OK)
        return NULL;
    *slot = (KnownLibrary){ hash, size, handle };
    return handle;
}

PtoOrchestrationFn trb_orch_library_entry(const uint8_t *image, uint64_t size, uint64_t hash, const char *entry,
                                          uint32_t entry_length)
{
    if (image == NULL || size == 0 || entry_length == 0 || entry_length > PTO_CALLABLE_MAX_NAME) {
        pto_fail(PTO_ERR_BAD_CALLABLE, "the orchestration library or its entry symbol is missing");
        return NULL;
    }
    void *handle = find_or_load(image, size, hash);
    if (handle == NULL)
        return NULL;
    char why[256];
    void *fn = library_cache_symbol(handle, entry, entry_length, why, sizeof why);
    if (fn == NULL) {
        pto_fail(PTO_ERR_BAD_CALLABLE, "the orchestration library exports no entry '%.*s': %s", (int)entry_length,
                 entry, why);
        return NULL;
    }
    PtoOrchestrationFn entry_fn;
    memcpy(&entry_fn, &fn, sizeof fn);
    return entry_fn;
}
