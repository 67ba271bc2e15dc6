/* The onboard runner: reaches its device only through the driver ABI
 * (pto_driver.h). Device addresses are opaque 64-bit values carried in void *:
 * the runner never dereferences one; memory moves through the driver's copies
 * (or, on a2a3, a host_register view). Its own device resources (arenas,
 * retained buffers, callable uploads) are ordinary allocations in the same
 * table, so committed_device_memory covers them.
 *
 * Streams: a2a3 keeps one persistent AICPU stream per pipeline slot and gives
 * every run a fresh AICore stream, created when the run is prepared
 * (runner_prepare_slot) and retired at drain; a5 has one persistent stream
 * pair. A device error (stream error, timeout, device lost) poisons the
 * runner until runner_finalize, which resets the device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/arch.h"
#include "util/alloc_table.h"
#include "format/chip_callable.h"
#include "common/device_resources.h"
#include "util/last_error.h"
#include "util/library_cache.h"
#include "common/native_log.h"
#include "device/pto_device_abi.h"
#include "platform/onboard/onboard_driver.h"
#include "platform/runner.h"
#include "platform/runner_resources.h"
#include "ptorun/pto_runtime_c_api.h"

#define OB_SLOTS PTO_PIPELINE_MAX_DEPTH
#define OB_AICORE_ENTRY "pto_aicore_entry"
#define OB_MESSAGE_BYTES 512
/* streams whose destroy failed, kept until finalize retries them */
#define OB_MAX_STUCK_STREAMS 8

/* A kernel library loaded into the device, once per content. */
typedef struct ObLibrary {
    PtoDrvImage *image;
    void *bytes;          /* host copy: the identity of the content */
    size_t size;
    uint32_t refs;
} ObLibrary;

typedef struct ObHostView {
    uint64_t dev;
    void *view;
} ObHostView;

typedef struct ObSlot {
    PtoDrvStream *aicpu;  /* a2a3: persistent per slot */
    PtoDrvStream *run_aicore; /* a2a3: the prepared run's fresh AICore stream */
} ObSlot;

struct Runner {
    AllocTable memory;
    pthread_mutex_t lock;      /* guards everything below */
    OnboardDriver driver;
    int logged;
    int initialized;
    int poisoned;
    int device_id;
    PtoDrvDevice *dev;
    PtoDrvImage *aicpu, *aicore;
    ObSlot slots[OB_SLOTS];
    PtoDrvStream *pair_aicpu, *pair_aicore; /* a5: the persistent pair */
    PtoDrvStream *stuck[OB_MAX_STUCK_STREAMS];
    uint32_t stuck_slot[OB_MAX_STUCK_STREAMS];
    size_t stuck_count;
    size_t stream_set_creates;
    DeviceResources resources; /* slots, banks, prebuilt cache, uploads */
    ObLibrary *libraries;
    size_t library_count, library_cap;
    ObHostView *views;
    size_t view_count, view_cap;
    LibraryCache host_libraries;
};

typedef enum ObRunState { OB_RUN_NONE = 0, OB_RUN_ENQUEUED, OB_RUN_DRAINED, OB_RUN_FAILED } ObRunState;

/* The platform's part of a run (RunExec.opaque). */
typedef struct ObRunExec {
    PtoDrvStream *aicpu, *aicore;
    uint64_t args_dev;
    uint32_t timeout_ms;
    uint32_t slot;
    int owns_aicore;           /* a2a3: the fresh stream is retired at drain */
    int aicpu_done, aicore_done; /* latched by query */
    int32_t sticky_error;
    int32_t result;
    uint32_t state;            /* ObRunState; query reads it under r->lock */
} ObRunExec;
_Static_assert(sizeof(ObRunExec) <= PTO_RUN_EXEC_BYTES, "ObRunExec fits RunExec");

static ObRunExec *ob_exec(RunExec *exec)
{
    return (ObRunExec *)exec->opaque;
}

static uint64_t dev_addr(const void *p)
{
    return (uint64_t)(uintptr_t)p;
}

static void *dev_ptr(uint64_t a)
{
    return (void *)(uintptr_t)a;
}

/* ---- driver errors ------------------------------------------------------------ */

static int poisoning(int drv_rc)
{
    return drv_rc == PTO_DRV_ERR_STREAM || drv_rc == PTO_DRV_ERR_TIMEOUT || drv_rc == PTO_DRV_ERR_DEVICE_LOST;
}

static int pto_code(int drv_rc)
{
    switch (drv_rc) {
    case PTO_DRV_ERR_OUT_OF_MEMORY:
        return PTO_ERR_OUT_OF_MEMORY;
    case PTO_DRV_ERR_TIMEOUT:
        return PTO_ERR_TIMEOUT;
    case PTO_DRV_ERR_INVALID:
        return PTO_ERR_INVALID_ARGUMENT;
    case PTO_DRV_ERR_UNSUPPORTED:
        return PTO_RUNTIME_ERR_UNSUPPORTED;
    default:
        return PTO_ERR_DEVICE;
    }
}

static void poison(Runner *r)
{
    __atomic_store_n(&r->poisoned, 1, __ATOMIC_RELEASE);
}

/* Records a driver failure: poisons the runner on a device error and returns
   the PTO_ERR_* code. */
static int drv_fail(Runner *r, int drv_rc, const char *what)
{
    if (poisoning(drv_rc))
        poison(r);
    return pto_fail(pto_code(drv_rc), "onboard device %d: %s failed: %s (%d)%s", r->device_id, what,
                    r->driver.api->error_string(drv_rc), drv_rc,
                    poisoning(drv_rc) ? "; the device context is poisoned until finalize_device" : "");
}

static const DeviceResourceOps OB_RESOURCE_OPS; /* the platform operations, bound at create */

/* ---- lifetime --------------------------------------------------------------- */

Runner *runner_create(void)
{
    Runner *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    if (alloc_table_init(&r->memory, 0) != PTO_OK)
        goto fail_table;
    if (pthread_mutex_init(&r->lock, NULL) != 0)
        goto fail_lock;
    if (library_cache_init(&r->host_libraries, "orchestration library") != PTO_OK)
        goto fail_host_libraries;
    device_resources_init(&r->resources, &OB_RESOURCE_OPS, r, &r->lock);
    return r;

fail_host_libraries:
    pthread_mutex_destroy(&r->lock);
fail_lock:
    alloc_table_destroy(&r->memory);
fail_table:
    free(r);
    return NULL;
}

void runner_destroy(Runner *r)
{
    if (r == NULL)
        return;
    runner_finalize(r);
    onboard_driver_unload(&r->driver);
    alloc_table_destroy(&r->memory);
    device_resources_forget(&r->resources); /* host records kept without an initialized device */
    library_cache_destroy(&r->host_libraries);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

static int load_image(Runner *r, const char *what, const uint8_t *bytes, size_t size, PtoDrvImage **out)
{
    if (bytes == NULL || size == 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "onboard device init: no %s", what);
    int drc = r->driver.api->load_image(r->dev, bytes, size, out);
    if (drc != PTO_DRV_OK) {
        char why[64];
        snprintf(why, sizeof why, "load_image of the %s", what);
        return drv_fail(r, drc, why);
    }
    return PTO_OK;
}

static int create_stream(Runner *r, PtoDrvStream **out)
{
    int drc = r->driver.api->stream_create(r->dev, out);
    return drc == PTO_DRV_OK ? PTO_OK : drv_fail(r, drc, "stream_create");
}

/* The persistent streams: one AICPU stream per slot (a2a3) or the pair (a5). */
static int create_persistent_streams(Runner *r)
{
    int rc;
#if PTO_ARCH_FRESH_RUN_STREAMS
    for (uint32_t s = 0; s < OB_SLOTS; s++)
        if ((rc = create_stream(r, &r->slots[s].aicpu)) != PTO_OK)
            return rc;
#else
    if ((rc = create_stream(r, &r->pair_aicpu)) != PTO_OK || (rc = create_stream(r, &r->pair_aicore)) != PTO_OK)
        return rc;
#endif
    return PTO_OK;
}

static void forget_allocation(uintptr_t base, size_t size, void *arg)
{
    (void)base;
    (void)size;
    (void)arg; /* the device released it itself */
}

/* Forgets every device-side handle and record (the device was reset or closed). */
static void forget_device_state(Runner *r)
{
    alloc_table_drain(&r->memory, forget_allocation, NULL);
    memset(r->slots, 0, sizeof r->slots);
    r->pair_aicpu = r->pair_aicore = NULL;
    r->stuck_count = 0;
    device_resources_forget(&r->resources);
    for (size_t i = 0; i < r->library_count; i++)
        free(r->libraries[i].bytes);
    free(r->libraries);
    r->libraries = NULL;
    r->library_count = r->library_cap = 0;
    free(r->views);
    r->views = NULL;
    r->view_count = r->view_cap = 0;
    r->aicpu = r->aicore = NULL;
    r->dev = NULL;
}

static void log_driver(Runner *r)
{
    if (r->logged)
        return;
    r->logged = 1;
    native_log(PTO_LOG_INFO, "onboard %s device %d uses driver %s (%s, %s)", PTO_ARCH_NAME, r->device_id,
            r->driver.path, r->driver.api->name, r->driver.from_env ? "PTORUN_DRIVER" : "bundled");
}

int runner_init(Runner *r, int device_id, const DeviceImages *images)
{
    if (images == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "onboard device init: no device images");
    pthread_mutex_lock(&r->lock);
    int rc;
    if (r->initialized) {
        rc = pto_fail(PTO_ERR_BUSY, "onboard device %d is already initialized; finalize_device first", r->device_id);
        goto out;
    }
    if ((rc = onboard_driver_load(&r->driver)) != PTO_OK)
        goto out;
    r->device_id = device_id;
    log_driver(r);
    const PtoDriverApi *api = r->driver.api;
    int drc = api->open_device(device_id, &r->dev);
    if (drc != PTO_DRV_OK) {
        r->dev = NULL;
        rc = drv_fail(r, drc, "open_device");
        r->poisoned = 0; /* nothing was opened: nothing to reset */
        goto out;
    }
    if ((rc = load_image(r, "AICPU image", images->aicpu, images->aicpu_size, &r->aicpu)) != PTO_OK ||
        (rc = load_image(r, "AICore image", images->aicore, images->aicore_size, &r->aicore)) != PTO_OK ||
        (rc = create_persistent_streams(r)) != PTO_OK)
        goto fail_device;
    uint64_t entry;
    if ((drc = api->image_symbol(r->dev, r->aicpu, PTO_AICPU_ENTRY_SYMBOL, &entry)) != PTO_DRV_OK) {
        rc = pto_fail(PTO_ERR_INVALID_ARGUMENT, "AICPU image exports no %s", PTO_AICPU_ENTRY_SYMBOL);
        goto fail_device;
    }
    r->initialized = 1;
    r->poisoned = 0;
    goto out;

fail_device:
    /* closing releases every image and stream opened so far */
    api->close_device(r->dev);
    forget_device_state(r);
    r->poisoned = 0;
out:
    pthread_mutex_unlock(&r->lock);
    return rc;
}

/* A reset device (poisoned) or a healthy one: closing releases everything it
   holds either way; the reset first aborts hung work. */
int runner_finalize(Runner *r)
{
    pthread_mutex_lock(&r->lock);
    if (!r->initialized) {
        pthread_mutex_unlock(&r->lock);
        return PTO_OK;
    }
    const PtoDriverApi *api = r->driver.api;
    int rc = PTO_OK;
    if (__atomic_load_n(&r->poisoned, __ATOMIC_ACQUIRE)) {
        int drc = api->reset_device(r->dev);
        if (drc != PTO_DRV_OK)
            rc = pto_fail(PTO_ERR_DEVICE, "onboard device %d: reset_device failed: %s", r->device_id,
                          api->error_string(drc));
    }
    int drc = api->close_device(r->dev);
    if (drc != PTO_DRV_OK && rc == PTO_OK)
        rc = pto_fail(PTO_ERR_DEVICE, "onboard device %d: close_device failed: %s", r->device_id,
                      api->error_string(drc));
    forget_device_state(r);
    library_cache_clear(&r->host_libraries);
    r->initialized = 0;
    __atomic_store_n(&r->poisoned, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&r->lock);
    return rc;
}

int runner_initialized(Runner *r)
{
    pthread_mutex_lock(&r->lock);
    int up = r->initialized;
    pthread_mutex_unlock(&r->lock);
    return up;
}

int runner_poisoned(Runner *r)
{
    return __atomic_load_n(&r->poisoned, __ATOMIC_ACQUIRE);
}

/* ---- device memory ----------------------------------------------------------- */

static int check_up(Runner *r, const char *fn)
{
    if (!r->initialized)
        return pto_fail(PTO_ERR_WRONG_PHASE, "%s: the device is not initialized (simpler_init)", fn);
    return PTO_OK;
}

/* Caller holds r->lock. */
static int alloc_device(Runner *r, size_t n, uint64_t *out)
{
    int rc = check_up(r, "device_malloc");
    if (rc != PTO_OK)
        return rc;
    uint64_t a = 0;
    int drc = r->driver.api->mem_alloc(r->dev, n, &a);
    if (drc != PTO_DRV_OK) {
        if (drc == PTO_DRV_ERR_OUT_OF_MEMORY)
            return pto_fail(PTO_ERR_OUT_OF_MEMORY, "onboard device %d memory exhausted: %zu bytes requested, %zu committed",
                            r->device_id, n, alloc_table_committed(&r->memory));
        return drv_fail(r, drc, "mem_alloc");
    }
    alloc_table_reserve(&r->memory, n);
    if (alloc_table_insert(&r->memory, (uintptr_t)a, n) != PTO_OK) {
        r->driver.api->mem_free(r->dev, a);
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "onboard device memory: allocation table cannot grow");
    }
    *out = a;
    return PTO_OK;
}

/* Frees an allocation known to be live. Caller holds r->lock. */
static void free_device(Runner *r, uint64_t a)
{
    size_t size;
    if (a != 0 && alloc_table_remove(&r->memory, (uintptr_t)a, &size) == PTO_OK)
        r->driver.api->mem_free(r->dev, a);
}

void *runner_device_malloc(Runner *r, size_t n)
{
    if (n == 0) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "device_malloc: size 0");
        return NULL;
    }
    pthread_mutex_lock(&r->lock);
    uint64_t a = 0;
    int rc = alloc_device(r, n, &a);
    pthread_mutex_unlock(&r->lock);
    return rc == PTO_OK ? dev_ptr(a) : NULL;
}

int runner_device_free(Runner *r, void *p)
{
    if (p == NULL)
        return PTO_OK;
    uint64_t a = dev_addr(p);
    pthread_mutex_lock(&r->lock);
    int rc = PTO_OK;
    const char *owned = device_resources_owned(&r->resources, a);
    size_t size;
    if (owned != NULL) {
        rc = pto_fail(PTO_ERR_INVALID_ARGUMENT, "device_free: %p is %s owned by the device context; not freed", p,
                      owned);
    } else if (alloc_table_remove(&r->memory, (uintptr_t)a, &size) != PTO_OK) {
        rc = pto_fail(PTO_ERR_INVALID_ARGUMENT,
                      "device_free: %p is not the start of a live allocation of this context; not freed", p);
    } else {
        device_resources_forget_retained(&r->resources, a);
        int drc = r->driver.api->mem_free(r->dev, a);
        if (drc != PTO_DRV_OK)
            rc = drv_fail(r, drc, "mem_free");
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

size_t runner_committed_bytes(Runner *r)
{
    return alloc_table_committed(&r->memory);
}

static int check_inside(Runner *r, const char *fn, uint64_t a, size_t n)
{
    if (!alloc_table_contains(&r->memory, (uintptr_t)a, n))
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: [0x%llx, +%zu) is not inside one live allocation of this context",
                        fn, (unsigned long long)a, n);
    return PTO_OK;
}

int runner_copy_to_device(Runner *r, void *dev, const void *host, size_t n)
{
    int rc = check_inside(r, "copy_to_device", dev_addr(dev), n);
    if (rc != PTO_OK || n == 0)
        return rc;
    int drc = r->driver.api->memcpy_h2d(r->dev, dev_addr(dev), host, n);
    return drc == PTO_DRV_OK ? PTO_OK : drv_fail(r, drc, "copy_to_device (memcpy_h2d)");
}

int runner_copy_from_device(Runner *r, void *host, const void *dev, size_t n)
{
    int rc = check_inside(r, "copy_from_device", dev_addr(dev), n);
    if (rc != PTO_OK || n == 0)
        return rc;
    int drc = r->driver.api->memcpy_d2h(r->dev, host, dev_addr(dev), n);
    return drc == PTO_DRV_OK ? PTO_OK : drv_fail(r, drc, "copy_from_device (memcpy_d2h)");
}

int runner_device_memset(Runner *r, void *dev, int value, size_t n)
{
    int rc = check_inside(r, "device_memset", dev_addr(dev), n);
    if (rc != PTO_OK || n == 0)
        return rc;
    int drc = r->driver.api->memset_d(r->dev, dev_addr(dev), value, n);
    return drc == PTO_DRV_OK ? PTO_OK : drv_fail(r, drc, "device_memset (memset_d)");
}

/* ---- host mapping (a2a3 only) ----------------------------------------------------- */

void *runner_register_device_memory_to_host(Runner *r, void *dev, size_t n)
{
#if PTO_ARCH_HOST_MAPPING
    if (check_inside(r, "register_device_memory_to_host", dev_addr(dev), n) != PTO_OK)
        return NULL;
    pthread_mutex_lock(&r->lock);
    void *view = NULL;
    if (r->view_count == r->view_cap) {
        size_t cap = r->view_cap ? r->view_cap * 2 : 4;
        ObHostView *grown = realloc(r->views, cap * sizeof *grown);
        if (grown == NULL) {
            pto_fail(PTO_ERR_OUT_OF_MEMORY, "register_device_memory_to_host: out of host memory");
            goto out;
        }
        r->views = grown;
        r->view_cap = cap;
    }
    int drc = r->driver.api->host_register(r->dev, dev_addr(dev), n, &view);
    if (drc != PTO_DRV_OK) {
        view = NULL;
        drv_fail(r, drc, "register_device_memory_to_host (host_register)");
        goto out;
    }
    r->views[r->view_count++] = (ObHostView){ dev_addr(dev), view };
out:
    pthread_mutex_unlock(&r->lock);
    return view;
#else
    (void)r;
    (void)dev;
    (void)n;
    /* no host mapping on this arch: callers mirror through copies */
    pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "register_device_memory_to_host: %s onboard devices have no host mapping",
             PTO_ARCH_NAME);
    return NULL;
#endif
}

int runner_unregister_device_memory_from_host(Runner *r, void *dev)
{
    pthread_mutex_lock(&r->lock);
    int rc = PTO_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < r->view_count; i++) {
        if (r->views[i].dev != dev_addr(dev))
            continue;
        int drc = r->driver.api->host_unregister(r->dev, r->views[i].view);
        r->views[i] = r->views[--r->view_count];
        rc = drc == PTO_DRV_OK ? PTO_OK : drv_fail(r, drc, "host_unregister");
        break;
    }
    pthread_mutex_unlock(&r->lock);
    if (rc == PTO_ERR_INVALID_ARGUMENT)
        pto_fail(rc, "unregister_device_memory_from_host: %p has no host view", dev);
    return rc;
}

/* ---- slots, banks, the prebuilt cache, callable uploads ------------------------ */

/* The runner_* entries for them are platform/runner_resources.c's. */
DeviceResources *runner_device_resources(Runner *r)
{
    return &r->resources;
}

/* ---- kernel libraries (device images, once per content, refcounted) ------------ */

/* Caller holds r->lock. Index of the library holding `bytes`, loaded now if new. */
static int acquire_library(Runner *r, const void *bytes, size_t size, uint32_t *index)
{
    for (size_t i = 0; i < r->library_count; i++) {
        ObLibrary *l = &r->libraries[i];
        if (l->image != NULL && l->size == size && memcmp(l->bytes, bytes, size) == 0) {
            l->refs++;
            *index = (uint32_t)i;
            return PTO_OK;
        }
    }
    size_t slot = r->library_count;
    for (size_t i = 0; i < r->library_count; i++)
        if (r->libraries[i].image == NULL)
            slot = i;
    if (slot == r->library_cap) {
        size_t cap = r->library_cap ? r->library_cap * 2 : 4;
        ObLibrary *grown = realloc(r->libraries, cap * sizeof *grown);
        if (grown == NULL)
            return pto_fail(PTO_ERR_OUT_OF_MEMORY, "kernel library: out of host memory");
        r->libraries = grown;
        r->library_cap = cap;
    }
    void *copy = malloc(size);
    if (copy == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "kernel library: out of host memory");
    memcpy(copy, bytes, size);
    PtoDrvImage *image = NULL;
    int drc = r->driver.api->load_image(r->dev, bytes, size, &image);
    if (drc != PTO_DRV_OK) {
        free(copy);
        if (drc == PTO_DRV_ERR_INVALID)
            return pto_fail(PTO_ERR_BAD_CALLABLE, "the kernel library is not a loadable image: %s",
                            r->driver.api->error_string(drc));
        return drv_fail(r, drc, "load_image of a kernel library");
    }
    r->libraries[slot] = (ObLibrary){ image, copy, size, 1 };
    if (slot == r->library_count)
        r->library_count++;
    *index = (uint32_t)slot;
    return PTO_OK;
}

static void release_library(Runner *r, uint32_t index)
{
    ObLibrary *l = &r->libraries[index];
    if (l->image == NULL || --l->refs > 0)
        return;
    r->driver.api->unload_image(r->dev, l->image);
    free(l->bytes);
    *l = (ObLibrary){ 0 };
}

/* ---- kernel addresses for callable uploads ------------------------------------ */

/* The device address of a symbol of a loaded image, or 0 with a message. */
static uint64_t symbol_of(Runner *r, PtoDrvImage *image, const char *symbol, uint32_t i, uint32_t func_id,
                          const char *where)
{
    uint64_t a = 0;
    int drc = r->driver.api->image_symbol(r->dev, image, symbol, &a);
    if (drc != PTO_DRV_OK || a == 0) {
        if (drc == PTO_DRV_OK || drc == PTO_DRV_ERR_INVALID)
            pto_fail(PTO_ERR_BAD_CALLABLE, "child %u (func_id %u): %s has no kernel '%s'", i, func_id, where, symbol);
        else
            drv_fail(r, drc, "image_symbol");
        return 0;
    }
    return a;
}

/* The kernel's device address; a library kernel's reference goes to *library. */
static uint64_t kernel_address(Runner *r, const ChipCallableView *v, uint32_t i, const ChipCallableChild *c,
                               void **library)
{
    const char *name = chip_callable_blob(v, c->name);
    char symbol[sizeof PTO_KERNEL_SYMBOL_PREFIX + PTO_CALLABLE_MAX_NAME];
    if (c->source_kind != PTO_KERNEL_LIBRARY) {
        snprintf(symbol, sizeof symbol, "%s%.*s", PTO_KERNEL_SYMBOL_PREFIX, (int)c->name.size, name);
        return symbol_of(r, r->aicore, symbol, i, c->func_id, "the AICore image");
    }
    uint32_t index = 0;
    if (acquire_library(r, v->bytes + c->image.offset, c->image.size, &index) != PTO_OK) {
        pto_fail(PTO_ERR_BAD_CALLABLE, "child %u (func_id %u): %s", i, c->func_id, pto_last_error());
        return 0;
    }
    *library = r->libraries[index].image;
    snprintf(symbol, sizeof symbol, "%.*s", (int)c->name.size, name);
    return symbol_of(r, r->libraries[index].image, symbol, i, c->func_id, "the kernel library");
}

/* ---- the platform operations device_resources needs ------------------------------ */

static int ob_check_up(void *platform, const char *fn)
{
    return check_up(platform, fn);
}

static int ob_check_inside(void *platform, const char *fn, uint64_t dev, size_t n)
{
    return check_inside(platform, fn, dev, n);
}

static int ob_alloc(void *platform, size_t n, uint64_t *dev)
{
    return alloc_device(platform, n, dev);
}

static void ob_free(void *platform, uint64_t dev)
{
    free_device(platform, dev);
}

static int ob_copy_to_device(void *platform, uint64_t dev, const void *host, size_t n)
{
    Runner *r = platform;
    int drc = r->driver.api->memcpy_h2d(r->dev, dev, host, n);
    return drc == PTO_DRV_OK ? PTO_OK : drv_fail(r, drc, "upload_chip_callable_buffer (memcpy_h2d)");
}

static uint64_t ob_resolve_kernel(void *platform, const ChipCallableView *v, uint32_t i, const ChipCallableChild *c,
                                  void **library)
{
    return kernel_address(platform, v, i, c, library);
}

/* A kernel-library reference is the library's driver image. */
static void ob_release_library(void *platform, void *library)
{
    Runner *r = platform;
    for (size_t i = 0; i < r->library_count; i++)
        if (r->libraries[i].image == library) {
            release_library(r, (uint32_t)i);
            return;
        }
}

static const DeviceResourceOps OB_RESOURCE_OPS = {
    .check_up = ob_check_up,
    .check_inside = ob_check_inside,
    .alloc = ob_alloc,
    .free = ob_free,
    .copy_to_device = ob_copy_to_device,
    .resolve_kernel = ob_resolve_kernel,
    .release_library = ob_release_library,
};

/* ---- host libraries (hbg orchestration: host side, as on the sim) --------------- */

LibraryCache *runner_host_libraries(Runner *r)
{
    return &r->host_libraries;
}

/* ---- counters ---------------------------------------------------------------------- */

/* The AICPU image's own count of orchestration libraries it loaded (trb). The
   driver ABI has no way to read a device-side counter, but the emulated
   device runs its images in this process: its image_symbol value is the
   function itself. Diagnostic only; a hardware driver reports 0 here. */
size_t runner_aicpu_dlopen_count(Runner *r)
{
    pthread_mutex_lock(&r->lock);
    uint64_t fn = 0;
    if (r->initialized && r->driver.api->image_symbol(r->dev, r->aicpu, PTO_AICPU_DLOPEN_COUNT_SYMBOL, &fn) != PTO_DRV_OK)
        fn = 0;
    size_t n = fn != 0 ? (size_t)((PtoAicpuDlopenCountFn)(uintptr_t)fn)() : 0;
    pthread_mutex_unlock(&r->lock);
    return n;
}

size_t runner_run_stream_set_create_count(Runner *r)
{
    pthread_mutex_lock(&r->lock);
    size_t n = r->stream_set_creates;
    pthread_mutex_unlock(&r->lock);
    return n;
}

/* ---- run streams ----------------------------------------------------------------- */

/* Caller holds r->lock. Destroys a stream; one whose destroy failed is kept,
   blocking its slot, until finalize. */
static void retire_stream(Runner *r, PtoDrvStream *s, uint32_t slot)
{
    if (s == NULL)
        return;
    int drc = r->driver.api->stream_destroy(s);
    if (drc == PTO_DRV_OK)
        return;
    if (poisoning(drc))
        poison(r);
    if (r->stuck_count < OB_MAX_STUCK_STREAMS) {
        r->stuck[r->stuck_count] = s;
        r->stuck_slot[r->stuck_count++] = slot;
    } else {
        poison(r); /* cannot even remember it: only a reset recovers */
    }
}

#if PTO_ARCH_FRESH_RUN_STREAMS
/* A stuck stream of the slot gets another destroy; PTO_OK once none is left. */
static int unblock_slot(Runner *r, uint32_t slot)
{
    for (size_t i = 0; i < r->stuck_count;) {
        if (r->stuck_slot[i] == slot && r->driver.api->stream_destroy(r->stuck[i]) == PTO_DRV_OK) {
            r->stuck[i] = r->stuck[r->stuck_count - 1];
            r->stuck_slot[i] = r->stuck_slot[--r->stuck_count];
            continue;
        }
        if (r->stuck_slot[i] == slot)
            return pto_fail(PTO_ERR_BUSY, "pipeline slot %u is blocked: a run stream of it could not be destroyed",
                            slot);
        i++;
    }
    return PTO_OK;
}

#endif

int runner_prepare_slot(Runner *r, uint32_t slot)
{
    int rc = device_check_slot(slot, "prepare");
    if (rc != PTO_OK)
        return rc;
    pthread_mutex_lock(&r->lock);
    if ((rc = check_up(r, "prepare")) != PTO_OK)
        goto out;
    if (runner_poisoned(r)) {
        rc = pto_fail(PTO_ERR_POISONED, "onboard device %d is poisoned by a device error; finalize_device resets it",
                      r->device_id);
        goto out;
    }
#if PTO_ARCH_FRESH_RUN_STREAMS
    if ((rc = unblock_slot(r, slot)) != PTO_OK)
        goto out;
    ObSlot *s = &r->slots[slot];
    if (s->run_aicore != NULL) {
        rc = pto_fail(PTO_ERR_BUSY, "pipeline slot %u already holds a prepared run's stream", slot);
        goto out;
    }
    if ((rc = create_stream(r, &s->run_aicore)) != PTO_OK) {
        s->run_aicore = NULL;
        goto out;
    }
    r->stream_set_creates++;
#endif
out:
    pthread_mutex_unlock(&r->lock);
    return rc;
}

void runner_abandon_slot(Runner *r, uint32_t slot)
{
    if (slot >= OB_SLOTS)
        return;
    pthread_mutex_lock(&r->lock);
    if (r->initialized) {
        retire_stream(r, r->slots[slot].run_aicore, slot);
        r->slots[slot].run_aicore = NULL;
    }
    pthread_mutex_unlock(&r->lock);
}

/* ---- execution ------------------------------------------------------------------------ */

static int check_launch(Runner *r, const DeviceLaunch *launch)
{
    if (launch == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "enqueue: no DeviceLaunch");
    if (launch->aicpu_threads < 1 || launch->aicpu_threads > PTO_ARCH_AICPU_THREADS_MAX)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "enqueue: %u AICPU threads, 1..%d supported", launch->aicpu_threads,
                        PTO_ARCH_AICPU_THREADS_MAX);
    if (launch->block_dim < 1 || launch->block_dim > PTO_ARCH_MAX_BLOCKS)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "enqueue: block_dim %u, 1..%d supported", launch->block_dim,
                        PTO_ARCH_MAX_BLOCKS);
    if (launch->timeout_ms == 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "enqueue: timeout_ms 0 (unresolved)");
    return check_inside(r, "enqueue: argument block", launch->args_dev, sizeof(PtoAicpuArgs));
}

/* Caller holds r->lock: the run's streams, taken from the slot (a2a3) or the pair. */
static int take_streams(Runner *r, ObRunExec *x, uint32_t slot)
{
#if PTO_ARCH_FRESH_RUN_STREAMS
    x->aicpu = r->slots[slot].aicpu;
    x->aicore = r->slots[slot].run_aicore;
    r->slots[slot].run_aicore = NULL;
    x->owns_aicore = 1;
    if (x->aicore == NULL)
        return pto_fail(PTO_ERR_WRONG_PHASE, "enqueue: pipeline slot %u has no prepared run stream", slot);
#else
    (void)slot;
    x->aicpu = r->pair_aicpu;
    x->aicore = r->pair_aicore;
    x->owns_aicore = 0;
#endif
    return PTO_OK;
}

/* AICore first, then the AICPU: the marker is the driver accepting the latter. */
static int launch_both(Runner *r, ObRunExec *x, const DeviceLaunch *launch)
{
    const PtoDriverApi *api = r->driver.api;
    int drc = api->launch(x->aicore, r->aicore, OB_AICORE_ENTRY, launch->args_dev, launch->block_dim);
    if (drc != PTO_DRV_OK)
        return drv_fail(r, drc, "launch of the AICore image");
    drc = api->launch(x->aicpu, r->aicpu, PTO_AICPU_ENTRY_SYMBOL, launch->args_dev, launch->aicpu_threads);
    if (drc != PTO_DRV_OK)
        return drv_fail(r, drc, "launch of the AICPU image");
    return PTO_OK;
}

int runner_enqueue(Runner *r, RunExec *exec, uint32_t slot, const DeviceLaunch *launch, LaunchSignal *signal)
{
    ObRunExec *x = ob_exec(exec);
    memset(x, 0, sizeof *x);
    x->slot = slot;
    int rc;
    pthread_mutex_lock(&r->lock);
    if ((rc = check_up(r, "enqueue")) != PTO_OK || (rc = device_check_slot(slot, "enqueue")) != PTO_OK)
        goto out;
    if ((rc = take_streams(r, x, slot)) != PTO_OK)
        goto out;
    if (runner_poisoned(r))
        rc = pto_fail(PTO_ERR_POISONED, "onboard device %d is poisoned by a device error", r->device_id);
    else if ((rc = check_launch(r, launch)) == PTO_OK)
        rc = launch_both(r, x, launch);
    if (rc != PTO_OK && x->owns_aicore) {
        /* nothing reached the AICPU: the fresh stream goes now (its AICore work, if any, returns at once) */
        retire_stream(r, x->aicore, slot);
        x->aicore = NULL;
    }
out:
    if (rc == PTO_OK) {
        x->args_dev = launch->args_dev;
        x->timeout_ms = launch->timeout_ms;
        x->state = OB_RUN_ENQUEUED;
    } else {
        x->sticky_error = rc;
        x->state = OB_RUN_FAILED;
    }
    pthread_mutex_unlock(&r->lock);
    if (rc == PTO_OK && signal != NULL)
        launch_signal_publish(signal);
    return rc;
}

/* Non-blocking: latches each stream once it reported done. Under r->lock, so
   drain cannot retire a stream meanwhile. */
int runner_query(Runner *r, RunExec *exec)
{
    ObRunExec *x = ob_exec(exec);
    pthread_mutex_lock(&r->lock);
    int rc;
    switch (x->state) {
    case OB_RUN_FAILED:
        rc = x->sticky_error;
        break;
    case OB_RUN_DRAINED:
        rc = SIMPLER_NATIVE_RUN_POLL_COMPLETE;
        break;
    case OB_RUN_ENQUEUED: {
        const PtoDriverApi *api = r->driver.api;
        int drc = PTO_DRV_OK;
        if (!x->aicore_done && (drc = api->stream_query(x->aicore)) == PTO_DRV_OK)
            x->aicore_done = 1;
        if (drc >= 0 && !x->aicpu_done && (drc = api->stream_query(x->aicpu)) == PTO_DRV_OK)
            x->aicpu_done = 1;
        if (drc < 0)
            rc = drv_fail(r, drc, "stream_query");
        else
            rc = x->aicore_done && x->aicpu_done ? SIMPLER_NATIVE_RUN_POLL_COMPLETE : SIMPLER_NATIVE_RUN_POLL_NOT_READY;
        break;
    }
    default:
        rc = pto_fail(PTO_ERR_WRONG_PHASE, "query: the run was never enqueued");
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

/* The run's result from its status block, read through the driver. */
static int device_result(Runner *r, ObRunExec *x)
{
    PtoAicpuArgs args;
    int drc = r->driver.api->memcpy_d2h(r->dev, &args, x->args_dev, sizeof args);
    if (drc != PTO_DRV_OK)
        return drv_fail(r, drc, "reading the run's status block (memcpy_d2h)");
    int32_t result = args.status.error_code;
    if (result == PTO_OK)
        return PTO_OK;
    if (result == PTO_ERR_TIMEOUT)
        return pto_fail(PTO_ERR_TIMEOUT, "the run exceeded its timeout of %u ms; %llu task(s) had completed",
                        x->timeout_ms, (unsigned long long)args.status.tasks_completed);
    if (result == PTO_ERR_KERNEL_FAULT)
        return pto_fail(PTO_ERR_KERNEL_FAULT, "kernel fault: task %llu (func_id %u) returned %d on core %u",
                        (unsigned long long)args.status.task_id, args.status.func_id, args.status.kernel_code,
                        args.status.core_id);
    char message[OB_MESSAGE_BYTES];
    if (args.message_dev != 0 && alloc_table_contains(&r->memory, (uintptr_t)args.message_dev, sizeof message) &&
        r->driver.api->memcpy_d2h(r->dev, message, args.message_dev, sizeof message) == PTO_DRV_OK &&
        memchr(message, '\0', sizeof message) != NULL && message[0] != '\0')
        return pto_fail(result, "the device failed the run: %s", message);
    return pto_fail(result, "the device reported error %d for the run", result);
}

/* Waits for both streams within the run's timeout. */
static int synchronize_run(Runner *r, ObRunExec *x)
{
    const PtoDriverApi *api = r->driver.api;
    int drc = api->stream_synchronize(x->aicpu, x->timeout_ms);
    if (drc == PTO_DRV_ERR_TIMEOUT) {
        poison(r);
        return pto_fail(PTO_ERR_TIMEOUT,
                        "the run exceeded its timeout of %u ms on onboard device %d; the device context is poisoned "
                        "until finalize_device",
                        x->timeout_ms, r->device_id);
    }
    if (drc != PTO_DRV_OK)
        return drv_fail(r, drc, "the run's AICPU stream");
    if ((drc = api->stream_synchronize(x->aicore, x->timeout_ms)) != PTO_DRV_OK)
        return drv_fail(r, drc, "the run's AICore stream");
    return PTO_OK;
}

int runner_drain(Runner *r, RunExec *exec)
{
    ObRunExec *x = ob_exec(exec);
    pthread_mutex_lock(&r->lock);
    uint32_t state = x->state;
    pthread_mutex_unlock(&r->lock);
    switch (state) {
    case OB_RUN_FAILED:
        return x->sticky_error;
    case OB_RUN_DRAINED:
        return x->result;
    case OB_RUN_ENQUEUED:
        break;
    default:
        return pto_fail(PTO_ERR_WRONG_PHASE, "drain: the run was never enqueued");
    }
    int rc = synchronize_run(r, x);
    if (rc == PTO_OK)
        rc = device_result(r, x);
    pthread_mutex_lock(&r->lock);
    x->result = rc;
    x->state = OB_RUN_DRAINED;
    /* a hung launch stays until the reset: its stream is released with the device */
    if (x->owns_aicore && r->initialized)
        retire_stream(r, x->aicore, x->slot);
    x->aicore = x->aicpu = NULL;
    pthread_mutex_unlock(&r->lock);
    return rc;
}

/* The driver runs the whole launch on its own threads: nothing to do here beyond
 * the two calls. */
int runner_execute(Runner *r, RunExec *exec, uint32_t slot, const DeviceLaunch *launch, LaunchSignal *signal)
{
    int rc = runner_enqueue(r, exec, slot, launch, signal);
    return rc == PTO_OK ? runner_drain(r, exec) : rc;
}
