#include "sim_image.h"

#include <dlfcn.h>
#include <unistd.h>

#include "util/last_error.h"
#include "util/library_cache.h"
#include "device/pto_device_abi.h"
#include "ptorun/pto_runtime_c_api.h"

int sim_image_load(SimImage *img, const char *what, const uint8_t *bytes, size_t size)
{
    img->handle = NULL;
    img->fd = -1;
    img->what = what;
    if (bytes == NULL || size == 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s is empty", what);
    void *handle;
    int fd;
    int rc = library_open_bytes(what, bytes, size, PTO_ERR_INVALID_ARGUMENT, &handle, &fd);
    if (rc != PTO_OK)
        return rc;

    PtoDeviceAbiVersionFn version = (PtoDeviceAbiVersionFn)dlsym(handle, PTO_DEVICE_ABI_VERSION_SYMBOL);
    if (version == NULL) {
        dlclose(handle);
        close(fd);
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s is not a ptorun device image: it exports no %s", what,
                        PTO_DEVICE_ABI_VERSION_SYMBOL);
    }
    uint32_t v = version();
    if (v != PTO_DEVICE_ABI_VERSION) {
        dlclose(handle);
        close(fd);
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s speaks device ABI version %u; this library needs %u", what, v,
                        PTO_DEVICE_ABI_VERSION);
    }
    img->handle = handle;
    img->fd = fd;
    return PTO_OK;
}

void *sim_image_symbol(const SimImage *img, const char *name)
{
    return img->handle == NULL ? NULL : dlsym(img->handle, name);
}

void sim_image_unload(SimImage *img)
{
    if (img->handle != NULL)
        dlclose(img->handle);
    if (img->fd >= 0)
        close(img->fd);
    img->handle = NULL;
    img->fd = -1;
}
