#include "device/aicpu/trb_orch_library.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/last_error.h"
#include "device/pto_device_abi.h"
#include "ptorun/chip_callable.h"
#include "ptorun/pto_export.h"
#include "ptorun/pto_runtime_c_api.h"

/* One per possible callable id: a device holds at most that many distinct
   orchestrations at once; beyond that the oldest load is dropped. */
#define ORCH_LIBRARY_CACHE PTO_MAX_CALLABLES

typedef struct OrchLibrary {
    uint64_t hash, size;
    void *handle;             /* NULL: free entry */
    int fd;                   /* the memory file, open while loaded: the loader knows
                                 an object by its path (/proc/self/fd/<fd>) */
} OrchLibrary;

static OrchLibrary libraries[ORCH_LIBRARY_CACHE];
static uint32_t next_victim;
static uint64_t dlopen_count; /* read by the host at any time: atomic access */

PTO_EXPORT uint64_t pto_aicpu_dlopen_count(void)
{
    return __atomic_load_n(&dlopen_count, __ATOMIC_RELAXED);
}

static void unload(OrchLibrary *l)
{
    if (l->handle == NULL)
        return;
    dlclose(l->handle);
    close(l->fd);
    *l = (OrchLibrary){ 0 };
}

/* This copy of the image is going away: so do the libraries it loaded. */
__attribute__((destructor)) static void unload_all(void)
{
    for (uint32_t i = 0; i < ORCH_LIBRARY_CACHE; i++)
        unload(&libraries[i]);
}

static int write_all(int fd, const uint8_t *bytes, uint64_t size)
{
    while (size > 0) {
        ssize_t n = write(fd, bytes, size);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        bytes += n;
        size -= (uint64_t)n;
    }
    return 0;
}

static int load(OrchLibrary *l, const uint8_t *image, uint64_t size, uint64_t hash)
{
    int fd = memfd_create("ptorun orchestration library", MFD_CLOEXEC);
    if (fd < 0)
        return pto_fail(PTO_ERR_FAILED, "orchestration library: memfd_create failed: %s", strerror(errno));
    if (write_all(fd, image, size) != 0) {
        int err = errno;
        close(fd);
        return pto_fail(PTO_ERR_FAILED, "orchestration library: writing its %llu bytes failed: %s",
                        (unsigned long long)size, strerror(err));
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        close(fd);
        return pto_fail(PTO_ERR_BAD_CALLABLE, "the orchestration library (%llu bytes) cannot be loaded on the device: %s",
                        (unsigned long long)size, dlerror());
    }
    *l = (OrchLibrary){ hash, size, handle, fd };
    __atomic_fetch_add(&dlopen_count, 1, __ATOMIC_RELAXED);
    return PTO_OK;
}

static OrchLibrary *find_or_load(const uint8_t *image, uint64_t size, uint64_t hash)
{
    OrchLibrary *free_entry = NULL;
    for (uint32_t i = 0; i < ORCH_LIBRARY_CACHE; i++) {
        OrchLibrary *l = &libraries[i];
        if (l->handle != NULL && l->hash == hash && l->size == size)
            return l;
        if (l->handle == NULL && free_entry == NULL)
            free_entry = l;
    }
    if (free_entry == NULL) {
        free_entry = &libraries[next_victim];
        next_victim = (next_victim + 1) % ORCH_LIBRARY_CACHE;
        unload(free_entry);
    }
    return load(free_entry, image, size, hash) == PTO_OK ? free_entry : NULL;
}

PtoOrchestrationFn trb_orch_library_entry(const uint8_t *image, uint64_t size, uint64_t hash, const char *entry,
                                          uint32_t entry_length)
{
    if (image == NULL || size == 0 || entry_length == 0 || entry_length > PTO_CALLABLE_MAX_NAME) {
        pto_fail(PTO_ERR_BAD_CALLABLE, "the orchestration library or its entry symbol is missing");
        return NULL;
    }
    OrchLibrary *l = find_or_load(image, size, hash);
    if (l == NULL)
        return NULL;
    char symbol[PTO_CALLABLE_MAX_NAME + 1];
    memcpy(symbol, entry, entry_length);
    symbol[entry_length] = '\0';
    void *fn = dlsym(l->handle, symbol);
    if (fn == NULL) {
        pto_fail(PTO_ERR_BAD_CALLABLE, "the orchestration library exports no entry '%s'", symbol);
        return NULL;
    }
    PtoOrchestrationFn entry_fn;
    memcpy(&entry_fn, &fn, sizeof fn);
    return entry_fn;
}
