/* A fresh shared-memory region for a chip host (chip_memfd.h). */
#include "chiphost/chip_memfd.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ptorun/pto_runtime_c_api.h"
#include "util/last_error.h"

int chip_memfd_map(const char *what, const char *name, size_t bytes, int *fd, void **base)
{
    int f = memfd_create(name, MFD_CLOEXEC);
    if (f < 0)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "%s: memfd_create failed: %s", what, strerror(errno));
    void *at = MAP_FAILED;
    if (ftruncate(f, (off_t)bytes) != 0 ||
        (at = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0)) == MAP_FAILED) {
        int err = errno;
        close(f);
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "%s: %zu bytes of shared memory: %s", what, bytes, strerror(err));
    }
    *fd = f;
    *base = at; /* a fresh memfd reads as zeros */
    return PTO_OK;
}
