#include "sim_image.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/last_error.h"
#include "device/pto_device_abi.h"
#include "ptorun/pto_runtime_c_api.h"

static int write_all(int fd, const uint8_t *bytes, size_t size)
{
    while (size > 0) {
        ssize_t n = write(fd, bytes, size);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        bytes += n;
        size -= (size_t)n;
    }
    return 0;
}

int sim_image_load(SimImage *img, const char *what, const uint8_t *bytes, size_t size)
{
    img->handle = NULL;
    img->fd = -1;
    img->what = what;
    if (bytes == NULL || size == 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s is empty", what);
    int fd = memfd_create(what, MFD_CLOEXEC);
    if (fd < 0)
        return pto_fail(PTO_ERR_FAILED, "%s: memfd_create failed: %s", what, strerror(errno));
    if (write_all(fd, bytes, size) != 0) {
        int err = errno;
        close(fd);
        return pto_fail(PTO_ERR_FAILED, "%s: writing %zu bytes to its memory file failed: %s", what, size,
                        strerror(err));
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        close(fd);
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s (%zu bytes) cannot be loaded: %s", what, size, dlerror());
    }

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
