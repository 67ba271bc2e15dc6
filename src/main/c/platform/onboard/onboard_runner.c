/* The onboard runner's lifetime (onboard_runner.h): create, open the device
 * through the driver, finalize (reset a poisoned device, close it), destroy;
 * how a driver error becomes a PTO_ERR_* code, and the one place a device
 * failure poisons the runner (runner_note_failure). */
#include "platform/onboard/onboard_runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/arch.h"
#include "util/last_error.h"
#include "services/native_log.h"
#include "device/pto_device_abi.h"
#include "ptorun/pto_runtime_c_api.h"

_Static_assert(offsetof(struct Runner, core) == 0, "a Runner begins with its RunnerCore");

/* ---- driver errors and poisoning ---------------------------------------------- */

#define OB_POISONED " the device context is poisoned until finalize_device"

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
        /* every other driver failure (stream, lost device, and the transient
           ones: a failed copy, a refused launch, an unknown code) is a device
           failure: the device's state is unknown from here on */
        return PTO_ERR_DEVICE;
    }
}

int runner_note_failure(Runner *r, int rc)
{
    if (!pto_device_failure(rc))
        return rc;
    __atomic_store_n(&r->poisoned, 1, __ATOMIC_RELEASE);
    const char *msg = pto_last_error();
    if (strstr(msg, OB_POISONED) == NULL) /* said once, however many layers pass it on */
        pto_fail(rc, "%.*s;%s", (int)(PTO_ERROR_MESSAGE_BYTES - sizeof OB_POISONED - 2), msg, OB_POISONED);
    return rc;
}

int ob_drv_error(Runner *r, int drv_rc, const char *what)
{
    return pto_fail(pto_code(drv_rc), "onboard device %d: %s failed: %s (%d)", r->core.device_id, what,
                    r->driver.api->error_string(drv_rc), drv_rc);
}

int ob_drv_fail(Runner *r, int drv_rc, const char *what)
{
    return runner_note_failure(r, ob_drv_error(r, drv_rc, what));
}

/* ---- lifetime --------------------------------------------------------------- */

Runner *runner_create(void)
{
    Runner *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    if (runner_core_init(&r->core, 0) != PTO_OK) {
        free(r);
        return NULL;
    }
    return r;
}

void runner_destroy(Runner *r)
{
    if (r == NULL)
        return;
    runner_finalize(r);
    onboard_driver_unload(&r->driver);
    runner_core_destroy(&r->core);
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
        return ob_drv_error(r, drc, why); /* at init: the context stays un-initialized, nothing to poison */
    }
    return PTO_OK;
}

/* Forgets every device-side handle and record (the device was reset or closed). */
static void forget_device_state(Runner *r)
{
    runner_core_forget_device(&r->core, NULL);
    ob_forget_streams(r);
    ob_forget_libraries(r);
    ob_forget_views(r);
    r->aicpu = r->aicore = NULL;
    r->dev = NULL;
}

static void log_driver(Runner *r)
{
    if (r->logged)
        return;
    r->logged = 1;
    native_log(PTO_LOG_INFO, "onboard %s device %d uses driver %s (%s, %s)", PTO_ARCH_NAME, r->core.device_id,
               r->driver.path, r->driver.api->name, r->driver.from_env ? "PTORUN_DRIVER" : "bundled");
}

int platform_open(Runner *r, const DeviceImages *images)
{
    int rc = onboard_driver_load(&r->driver);
    if (rc != PTO_OK)
        return rc;
    log_driver(r);
    const PtoDriverApi *api = r->driver.api;
    int drc = api->open_device(r->core.device_id, &r->dev);
    if (drc != PTO_DRV_OK) {
        r->dev = NULL;
        return ob_drv_error(r, drc, "open_device"); /* nothing was opened: nothing to poison */
    }
    uint64_t entry;
    if ((rc = load_image(r, "AICPU image", images->aicpu, images->aicpu_size, &r->aicpu)) != PTO_OK ||
        (rc = load_image(r, "AICore image", images->aicore, images->aicore_size, &r->aicore)) != PTO_OK ||
        (rc = ob_create_persistent_streams(r)) != PTO_OK)
        goto fail_device;
    if (api->image_symbol(r->dev, r->aicpu, PTO_AICPU_ENTRY_SYMBOL, &entry) != PTO_DRV_OK) {
        rc = pto_fail(PTO_ERR_INVALID_ARGUMENT, "AICPU image exports no %s", PTO_AICPU_ENTRY_SYMBOL);
        goto fail_device;
    }
    r->poisoned = 0;
    return PTO_OK;

fail_device:
    /* closing releases every image and stream opened so far */
    api->close_device(r->dev);
    forget_device_state(r);
    return rc;
}

/* A reset device (poisoned) or a healthy one: closing releases everything it
   holds either way; the reset first aborts hung work. */
int platform_close(Runner *r)
{
    const PtoDriverApi *api = r->driver.api;
    int rc = PTO_OK;
    if (__atomic_load_n(&r->poisoned, __ATOMIC_ACQUIRE)) {
        int drc = api->reset_device(r->dev);
        if (drc != PTO_DRV_OK)
            rc = pto_fail(PTO_ERR_DEVICE, "onboard device %d: reset_device failed: %s", r->core.device_id,
                          api->error_string(drc));
    }
    int drc = api->close_device(r->dev);
    if (drc != PTO_DRV_OK && rc == PTO_OK)
        rc = pto_fail(PTO_ERR_DEVICE, "onboard device %d: close_device failed: %s", r->core.device_id,
                      api->error_string(drc));
    forget_device_state(r);
    __atomic_store_n(&r->poisoned, 0, __ATOMIC_RELEASE);
    return rc;
}

int runner_poisoned(Runner *r)
{
    return __atomic_load_n(&r->poisoned, __ATOMIC_ACQUIRE);
}
