/* The exported contract (include/ptorun/pto_runtime_c_api.h; the communication
 * group's calls are comm.c's). Each entry point clears the calling thread's
 * message, validates its arguments and forwards to the device context, the
 * native-run state machine, the runner, the runtime or the native log (whose
 * two calls leave the message alone). */
#include <stdalign.h>

#include "services/call_config.h"
#include "services/device_failure.h"
#include "common/device_context.h"
#include "util/last_error.h"
#include "common/native_run_context.h"
#include "services/native_log.h"
#include "services/variant.h"
#include "ptorun/pto_runtime_c_api.h"
#include "runtime/runtime.h"

const char *ptorun_variant(void)
{
    return PTO_VARIANT_NAME;
}

const char *simpler_last_error(void)
{
    return pto_last_error();
}

/* Every code an exported call returns on a device context passes here: the
 * one place where a device failure the call reports (whoever met it: the
 * platform, the runtime, the device's status) poisons the context, so the code
 * alone tells (services/device_failure.h). A device failure implies a live
 * context: every call refuses a bad one with PTO_ERR_INVALID_ARGUMENT first.
 * simpler_init and finalize_device do not come here: a failed init leaves the
 * context un-initialized, a finalized one refuses all work. */
static int noted(void *ctx, int rc)
{
    if (pto_device_failure(rc))
        runner_note_failure(((DeviceContext *)ctx)->runner, rc);
    return rc;
}

/* ---- lifecycle ----------------------------------------------------------- */

void *create_device_context(void)
{
    pto_clear_error();
    return device_context_create();
}

/* Refused while a native run is outstanding: the context stays alive (and is
 * leaked if the caller never finalizes its runs) rather than freeing memory
 * under a live run; simpler_last_error says why. */
void destroy_device_context(void *ctx)
{
    pto_clear_error();
    if (ctx == NULL)
        return;
    DeviceContext *dc = device_context_from(ctx, "destroy_device_context");
    if (dc != NULL)
        device_context_destroy(dc);
}

/* The dispatcher image is accepted and ignored (docs/device.md). */
int simpler_init(void *ctx, int device_id, const uint8_t *aicpu, size_t aicpu_size,
                 const uint8_t *aicore, size_t aicore_size, const uint8_t *dispatcher,
                 size_t dispatcher_size, const CallConfig *prewarm)
{
    (void)dispatcher, (void)dispatcher_size;
    pto_clear_error();
    DeviceContext *dc = device_context_from(ctx, "simpler_init");
    if (dc == NULL)
        return PTO_ERR_INVALID_ARGUMENT;
    if (device_id < 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "simpler_init: device_id %d is negative", device_id);
    if (aicpu == NULL || aicpu_size == 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "simpler_init: the AICPU image is %s", aicpu == NULL ? "NULL" : "empty");
    if (aicore == NULL || aicore_size == 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "simpler_init: the AICore image is %s", aicore == NULL ? "NULL" : "empty");
    if (prewarm != NULL && call_config_validate(prewarm) != PTO_OK)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "simpler_init: prewarm %s", pto_last_error());
    DeviceImages images = { aicpu, aicpu_size, aicore, aicore_size };
    return device_context_init(dc, device_id, &images, prewarm);
}

int finalize_device(void *ctx)
{
    pto_clear_error();
    DeviceContext *dc = device_context_from(ctx, "finalize_device");
    if (dc == NULL)
        return PTO_ERR_INVALID_ARGUMENT;
    return device_context_finalize(dc);
}

/* ---- sizing --------------------------------------------------------------- */

size_t get_runtime_size(void)
{
    return sizeof(NativeRunContext);
}

size_t get_runtime_alignment(void)
{
    return alignof(NativeRunContext);
}

/* ---- device memory -------------------------------------------------------- */

void *device_malloc_ctx(void *ctx, size_t n)
{
    pto_clear_error();
    void *p = NULL;
    DeviceContext *dc = device_context_from(ctx, "device_malloc");
    if (dc != NULL && n == 0)
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "device_malloc: size 0");
    else if (dc != NULL)
        p = runner_device_malloc(dc->runner, n);
    if (p == NULL) {
        /* a NULL cannot say why: the message leads with the code, "(<code>) ..." */
        int code = pto_last_error_code();
        code = code != 0 ? code : PTO_ERR_OUT_OF_MEMORY;
        if (dc != NULL)
            noted(dc, code);
        pto_fail(code, "(%d) %s", code, pto_last_error());
    }
    return p;
}

void device_free_ctx(void *ctx, void *p)
{
    pto_clear_error();
    DeviceContext *dc = device_context_from(ctx, "device_free");
    if (dc == NULL || p == NULL)
        return;
    runner_device_free(dc->runner, p);
}

size_t committed_device_memory_ctx(void *ctx)
{
    pto_clear_error();
    DeviceContext *dc = device_context_from(ctx, "committed_device_memory");
    return dc == NULL ? 0 : runner_committed_bytes(dc->runner);
}

int copy_to_device_ctx(void *ctx, void *dev, const void *host, size_t n)
{
    pto_clear_error();
    DeviceContext *dc = device_context_from(ctx, "copy_to_device");
    if (dc == NULL)
        return PTO_ERR_INVALID_ARGUMENT;
    if (dev == NULL || (host == NULL && n != 0))
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "copy_to_device: NULL %s pointer", dev == NULL ? "device" : "host");
    return noted(dc, runner_copy_to_device(dc->runner, dev, host, n));
}

int copy_from_device_ctx(void *ctx, void *host, const void *dev, size_t n)
{
    pto_clear_error();
    DeviceContext *dc = device_context_from(ctx, "copy_from_device");
    if (dc == NULL)
        return PTO_ERR_INVALID_ARGUMENT;
    if (dev == NULL || (host == NULL && n != 0))
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "copy_from_device: NULL %s pointer", dev == NULL ? "device" : "host");
    return noted(dc, runner_copy_from_device(dc->runner, host, dev, n));
}

/* ---- callables ------------------------------------------------------------ */

static int check_callable_id(int32_t id, const char *fn)
{
    if (id < 0 || id >= PTO_MAX_CALLABLES)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: callable id %d is outside 0..%d", fn, id, PTO_MAX_CALLABLES - 1);
    return PTO_OK;
}

int simpler_register_callable(void *ctx, int32_t id, const void *callable)
{
    static const char fn[] = "simpler_register_callable";
    pto_clear_error();
    DeviceContext *dc = device_context_from(ctx, fn);
    if (dc == NULL)
        return PTO_ERR_INVALID_ARGUMENT;
    int rc = check_callable_id(id, fn);
    if (rc != PTO_OK)
        return rc;
    if (callable == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s(%d): callable is NULL", fn, id);
    return noted(dc, device_context_register_callable(dc, id, callable));
}

/* An id that is not registered is not an error (0). */
int simpler_unregister_callable(void *ctx, int32_t id)
{
    static const char fn[] = "simpler_unregister_callable";
    pto_clear_error();
    DeviceContext *dc = device_context_from(ctx, fn);
    if (dc == NULL)
        return PTO_ERR_INVALID_ARGUMENT;
    int rc = check_callable_id(id, fn);
    if (rc != PTO_OK)
        return rc;
    return noted(dc, device_context_unregister_callable(dc, id));
}

/* ---- native runs: the state machine is in native_run_context.c ------------ */

int simpler_prepare_run(void *ctx, void *storage, int32_t id, const void *args,
                        const CallConfig *cfg, const NativeRunDescriptor *desc)
{
    pto_clear_error();
    return noted(ctx, native_run_prepare(ctx, storage, id, args, cfg, desc));
}

int simpler_launch_run(void *ctx, void *storage)
{
    pto_clear_error();
    return noted(ctx, native_run_launch(ctx, storage));
}

int simpler_poll_run(void *ctx, void *storage)
{
    pto_clear_error();
    return noted(ctx, native_run_poll(ctx, storage));
}

int simpler_wait_run(void *ctx, void *storage)
{
    pto_clear_error();
    return noted(ctx, native_run_wait(ctx, storage));
}

int simpler_finalize_run(void *ctx, void *storage)
{
    pto_clear_error();
    return noted(ctx, native_run_finalize(ctx, storage));
}

int simpler_run(void *ctx, void *storage, int32_t id, const void *args,
                const CallConfig *cfg, const NativeRunDescriptor *desc)
{
    pto_clear_error();
    return noted(ctx, native_run_blocking(ctx, storage, id, args, cfg, desc));
}

/* ---- counters ------------------------------------------------------------- */

size_t get_aicpu_dlopen_count(void *ctx)
{
    pto_clear_error();
    DeviceContext *dc = device_context_from(ctx, "get_aicpu_dlopen_count");
    return dc == NULL ? 0 : runner_aicpu_dlopen_count(dc->runner);
}

/* hbg host orchestration library loads (trb never loads one on the host: 0). */
size_t get_host_dlopen_count(void *ctx)
{
    pto_clear_error();
    DeviceContext *dc = device_context_from(ctx, "get_host_dlopen_count");
    return dc == NULL ? 0 : runner_host_dlopen_count(dc->runner);
}

size_t get_run_stream_set_create_count(void *ctx)
{
    pto_clear_error();
    DeviceContext *dc = device_context_from(ctx, "get_run_stream_set_create_count");
    return dc == NULL ? 0 : runner_run_stream_set_create_count(dc->runner);
}

/* ---- pipeline ------------------------------------------------------------- */

const PipelineContract *get_pipeline_contract(void)
{
    return runtime_pipeline_contract();
}

int supports_concurrent_native_prepare_ctx(void *ctx)
{
    pto_clear_error();
    if (device_context_from(ctx, "supports_concurrent_native_prepare_ctx") == NULL)
        return 0;
    return runtime_supports_overlap() ? 1 : 0;
}

uint64_t get_arena_bank_gm_heap_base_ctx(void *ctx, uint32_t bank)
{
    pto_clear_error();
    DeviceContext *dc = device_context_from(ctx, "get_arena_bank_gm_heap_base_ctx");
    if (dc == NULL)
        return 0;
    if (bank >= PTO_PIPELINE_MAX_DEPTH) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "get_arena_bank_gm_heap_base_ctx: bank %u is not below %u", bank,
                 PTO_PIPELINE_MAX_DEPTH);
        return 0;
    }
    return runner_arena_bank_gm_heap_base(dc->runner, bank);
}

uint64_t get_retained_temp_addr_ctx(void *ctx, uint32_t slot)
{
    pto_clear_error();
    DeviceContext *dc = device_context_from(ctx, "get_retained_temp_addr_ctx");
    if (dc == NULL)
        return 0;
    if (slot >= PTO_PIPELINE_MAX_DEPTH) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "get_retained_temp_addr_ctx: slot %u is not below %u", slot,
                 PTO_PIPELINE_MAX_DEPTH);
        return 0;
    }
    return runner_retained_temp_addr(dc->runner, slot);
}

/* ---- native log: the ring is services/native_log.c's ----------------------- */

uint64_t ptorun_log_pending(void)
{
    return native_log_pending();
}

int ptorun_log_next(char *buf, size_t cap)
{
    return native_log_next(buf, cap);
}

/* runner_poisoned, the rule's one answer (runner_note_failure sets it): asked by
 * the caller after a failed call, so it leaves that call's message alone and
 * answers 0 for anything that is no live context rather than recording why. */
int device_poisoned_ctx(void *ctx)
{
    DeviceContext *dc = ctx;
    if (dc == NULL || dc->magic != PTO_DEVICE_CONTEXT_MAGIC)
        return 0;
    return runner_poisoned(dc->runner) ? 1 : 0;
}
