/* The onboard runner: reaches its device only through the driver ABI. The driver
 * ABI and the emulated driver land with the onboard issue ([4/8]); until then
 * every device operation is refused with PTO_RUNTIME_ERR_UNSUPPORTED. */
#include <stdlib.h>

#include "common/last_error.h"
#include "platform/runner.h"
#include "ptorun/pto_runtime_c_api.h"

#define ONBOARD_NOT_BUILT "onboard device access goes through the driver ABI, which is not built yet (issue [4/8])"

struct Runner {
    int unused;
};

Runner *runner_create(void)
{
    return calloc(1, sizeof(Runner));
}

void runner_destroy(Runner *r)
{
    free(r);
}

void *runner_device_malloc(Runner *r, size_t n)
{
    (void)r;
    (void)n;
    pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "device_malloc: " ONBOARD_NOT_BUILT);
    return NULL;
}

int runner_device_free(Runner *r, void *p)
{
    (void)r;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "device_free(%p): " ONBOARD_NOT_BUILT, p);
}

size_t runner_committed_bytes(Runner *r)
{
    (void)r;
    return 0;
}

int runner_copy_to_device(Runner *r, void *dev, const void *host, size_t n)
{
    (void)r;
    (void)dev;
    (void)host;
    (void)n;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "copy_to_device: " ONBOARD_NOT_BUILT);
}

int runner_copy_from_device(Runner *r, void *host, const void *dev, size_t n)
{
    (void)r;
    (void)dev;
    (void)host;
    (void)n;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, "copy_from_device: " ONBOARD_NOT_BUILT);
}
