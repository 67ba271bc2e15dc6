/* Kernels on the onboard device (runner_core.h): a built-in's address is
 * pto_kernel_<name> in the AICore image (image_symbol); a kernel library is
 * loaded into the device (load_image) once per content per runner and
 * refcounted across children and uploads, the reference a child holds being
 * the library's driver image. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/last_error.h"
#include "device/pto_device_abi.h"
#include "platform/onboard/onboard_runner.h"
#include "ptorun/pto_runtime_c_api.h"

/* Caller holds the lock. A free record, the array grown when none is. */
static int free_library_record(Runner *r, size_t *slot)
{
    *slot = r->library_count;
    for (size_t i = 0; i < r->library_count; i++)
        if (r->libraries[i].image == NULL)
            *slot = i;
    ObLibrary *grown = runner_grow(r->libraries, &r->library_cap, *slot, sizeof *grown, 4, "kernel library");
    if (grown == NULL)
        return PTO_ERR_OUT_OF_MEMORY;
    r->libraries = grown;
    return PTO_OK;
}

/* Caller holds the lock. Index of the library holding `bytes`, loaded now if new. */
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
    size_t slot;
    int rc = free_library_record(r, &slot);
    if (rc != PTO_OK)
        return rc;
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
        return ob_drv_fail(r, drc, "load_image of a kernel library");
    }
    r->libraries[slot] = (ObLibrary){ image, copy, size, 1 };
    if (slot == r->library_count)
        r->library_count++;
    *index = (uint32_t)slot;
    return PTO_OK;
}

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
            ob_drv_fail(r, drc, "image_symbol");
        return 0;
    }
    return a;
}

uint64_t platform_kernel_address(Runner *r, const ChipCallableView *v, uint32_t i, const ChipCallableChild *c,
                                 void **library)
{
    const char *name = chip_callable_blob(v, c->name);
    char symbol[sizeof PTO_KERNEL_SYMBOL_PREFIX + PTO_CALLABLE_MAX_NAME];
    if (c->source_kind != PTO_KERNEL_LIBRARY) {
        snprintf(symbol, sizeof symbol, "%s%.*s", PTO_KERNEL_SYMBOL_PREFIX, (int)c->name.size, name);
        return symbol_of(r, r->aicore, symbol, i, c->func_id, "the AICore image");
    }
    uint32_t index = 0;
    int rc = acquire_library(r, v->bytes + c->image.offset, c->image.size, &index);
    if (rc != PTO_OK) {
        /* a device failure stays one (it poisoned): the code must tell */
        pto_fail(pto_device_failure(rc) ? rc : PTO_ERR_BAD_CALLABLE, "child %u (func_id %u): %s", i, c->func_id,
                 pto_last_error());
        return 0;
    }
    *library = r->libraries[index].image;
    snprintf(symbol, sizeof symbol, "%.*s", (int)c->name.size, name);
    return symbol_of(r, r->libraries[index].image, symbol, i, c->func_id, "the kernel library");
}

void platform_release_kernel_library(Runner *r, void *library)
{
    for (size_t i = 0; i < r->library_count; i++) {
        ObLibrary *l = &r->libraries[i];
        if (l->image != library)
            continue;
        if (--l->refs == 0) {
            r->driver.api->unload_image(r->dev, l->image);
            free(l->bytes);
            *l = (ObLibrary){ 0 };
        }
        return;
    }
}

void ob_forget_libraries(Runner *r)
{
    for (size_t i = 0; i < r->library_count; i++)
        free(r->libraries[i].bytes);
    free(r->libraries);
    r->libraries = NULL;
    r->library_count = r->library_cap = 0;
}

/* The AICPU image's own count of orchestration libraries it loaded (trb). The
   driver ABI has no way to read a device-side counter, but the emulated
   device runs its images in this process: its image_symbol value is the
   function itself. Diagnostic only; a hardware driver reports 0 here. */
size_t runner_aicpu_dlopen_count(Runner *r)
{
    pthread_mutex_lock(&r->core.lock);
    uint64_t fn = 0;
    if (r->core.initialized &&
        r->driver.api->image_symbol(r->dev, r->aicpu, PTO_AICPU_DLOPEN_COUNT_SYMBOL, &fn) != PTO_DRV_OK)
        fn = 0;
    size_t n = fn != 0 ? (size_t)((PtoAicpuDlopenCountFn)(uintptr_t)fn)() : 0;
    pthread_mutex_unlock(&r->core.lock);
    return n;
}
