#include "device_context.h"

#include <stdlib.h>

#include "last_error.h"
#include "ptorun/pto_runtime_c_api.h"

DeviceContext *device_context_create(void)
{
    DeviceContext *dc = calloc(1, sizeof *dc);
    if (dc == NULL)
        goto fail;
    dc->runner = runner_create();
    if (dc->runner == NULL)
        goto fail_runner;
    dc->magic = PTO_DEVICE_CONTEXT_MAGIC;
    return dc;

fail_runner:
    free(dc);
fail:
    pto_fail(PTO_ERR_OUT_OF_MEMORY, "create_device_context: out of host memory");
    return NULL;
}

void device_context_destroy(DeviceContext *dc)
{
    dc->magic = 0;
    runner_destroy(dc->runner);
    free(dc);
}

DeviceContext *device_context_from(void *ctx, const char *fn)
{
    DeviceContext *dc = ctx;
    if (dc == NULL) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: device context is NULL", fn);
        return NULL;
    }
    if (dc->magic != PTO_DEVICE_CONTEXT_MAGIC) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: %p is not a live device context", fn, ctx);
        return NULL;
    }
    return dc;
}
