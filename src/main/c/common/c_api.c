/* The exported contract (include/ptorun/pto_runtime_c_api.h). Each entry point
 * clears the calling thread's message, validates its arguments and forwards to
 * the device context, the runner or the runtime. Capabilities whose issue has
 * not landed yet refuse with PTO_RUNTIME_ERR_UNSUPPORTED and say so. */
#include <stdalign.h>

#include "common/device_context.h"
#include "common/last_error.h"
#include "common/native_run_context.h"
#include "common/variant.h"
#include "ptorun/pto_runtime_c_api.h"
#include "runtime/runtime.h"

#define NOT_BUILT(what, issue) what " is not built yet (issue " issue ")"
#define LIFECYCLE_NOT_BUILT(fn) NOT_BUILT(fn ": the native-run lifecycle", "[2/8]")

const char *ptorun_variant(void)
{
    return PTO_VARIANT_NAME;
}

const char *simpler_last_error(void)
{
    return pto_last_error();
}

/* ---- lifecycle ----------------------------------------------------------- */

void *create_device_context(void)
{
    pto_clear_error();
    return device_context_create();
}

void destroy_device_context(void *ctx)
{
    pto_clear_error();
    if (ctx == NULL)
        return;
    DeviceContext *dc = device_context_from(ctx, "destroy_device_context");
    if (dc != NULL)
        device_context_destroy(dc);
}

int simpler_init(void *ctx, int device_id, const uint8_t *aicpu, size_t aicpu_size,
                 const uint8_t *aicore, size_t aicore_size, const uint8_t *dispatcher,
                 size_t dispatcher_size, const CallConfig *prewarm)
{
    (void)device_id, (void)aicpu, (void)aicpu_size, (void)aicore, (void)aicore_size;
    (void)dispatcher, (void)dispatcher_size, (void)prewarm;
    pto_clear_error();
    if (device_context_from(ctx, "simpler_init") == NULL)
        return PTO_ERR_INVALID_ARGUMENT;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, LIFECYCLE_NOT_BUILT("simpler_init"));
}

int finalize_device(void *ctx)
{
    pto_clear_error();
    if (device_context_from(ctx, "finalize_device") == NULL)
        return PTO_ERR_INVALID_ARGUMENT;
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, LIFECYCLE_NOT_BUILT("finalize_device"));
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
    DeviceContext *dc = device_context_from(ctx, "device_malloc");
    if (dc == NULL)
        return NULL;
    if (n == 0) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "device_malloc: size 0");
        return NULL;
    }
    return runner_device_malloc(dc->runner, n);
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
    return runner_copy_to_device(dc->runner, dev, host, n);
}

int copy_from_device_ctx(void *ctx, void *host, const void *dev, size_t n)
{
    pto_clear_error();
    DeviceContext *dc = device_context_from(ctx, "copy_from_device");
    if (dc == NULL)
        return PTO_ERR_INVALID_ARGUMENT;
    if (dev == NULL || (host == NULL && n != 0))
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "copy_from_device: NULL %s pointer", dev == NULL ? "device" : "host");
    return runner_copy_from_device(dc->runner, host, dev, n);
}

/* ---- callables ------------------------------------------------------------ */

int simpler_register_callable(void *ctx, int32_t id, const void *callable)
{
    (void)ctx, (void)id, (void)callable;
    pto_clear_error();
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, LIFECYCLE_NOT_BUILT("simpler_register_callable"));
}

int simpler_unregister_callable(void *ctx, int32_t id)
{
    (void)ctx, (void)id;
    pto_clear_error();
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, LIFECYCLE_NOT_BUILT("simpler_unregister_callable"));
}

/* ---- native runs ---------------------------------------------------------- */

int simpler_prepare_run(void *ctx, void *storage, int32_t id, const void *args,
                        const CallConfig *cfg, const NativeRunDescriptor *desc)
{
    (void)ctx, (void)storage, (void)id, (void)args, (void)cfg, (void)desc;
    pto_clear_error();
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, LIFECYCLE_NOT_BUILT("simpler_prepare_run"));
}

int simpler_launch_run(void *ctx, void *storage)
{
    (void)ctx, (void)storage;
    pto_clear_error();
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, LIFECYCLE_NOT_BUILT("simpler_launch_run"));
}

int simpler_poll_run(void *ctx, void *storage)
{
    (void)ctx, (void)storage;
    pto_clear_error();
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, LIFECYCLE_NOT_BUILT("simpler_poll_run"));
}

int simpler_wait_run(void *ctx, void *storage)
{
    (void)ctx, (void)storage;
    pto_clear_error();
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, LIFECYCLE_NOT_BUILT("simpler_wait_run"));
}

int simpler_finalize_run(void *ctx, void *storage)
{
    (void)ctx, (void)storage;
    pto_clear_error();
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, LIFECYCLE_NOT_BUILT("simpler_finalize_run"));
}

int simpler_run(void *ctx, void *storage, int32_t id, const void *args,
                const CallConfig *cfg, const NativeRunDescriptor *desc)
{
    (void)ctx, (void)storage, (void)id, (void)args, (void)cfg, (void)desc;
    pto_clear_error();
    return pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, LIFECYCLE_NOT_BUILT("simpler_run"));
}

/* ---- counters ------------------------------------------------------------- */

size_t get_aicpu_dlopen_count(void *ctx)
{
    (void)ctx;
    pto_clear_error();
    pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, NOT_BUILT("get_aicpu_dlopen_count: orchestration libraries", "[3/8]"));
    return 0;
}

size_t get_host_dlopen_count(void *ctx)
{
    (void)ctx;
    pto_clear_error();
    pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, NOT_BUILT("get_host_dlopen_count: orchestration libraries", "[3/8]"));
    return 0;
}

size_t get_run_stream_set_create_count(void *ctx)
{
    (void)ctx;
    pto_clear_error();
    pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, NOT_BUILT("get_run_stream_set_create_count: onboard run streams", "[4/8]"));
    return 0;
}

/* ---- pipeline ------------------------------------------------------------- */

const PipelineContract *get_pipeline_contract(void)
{
    return runtime_pipeline_contract();
}

int supports_concurrent_native_prepare_ctx(void *ctx)
{
    (void)ctx;
    pto_clear_error();
    pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, LIFECYCLE_NOT_BUILT("supports_concurrent_native_prepare"));
    return 0;
}

uint64_t get_arena_bank_gm_heap_base_ctx(void *ctx, uint32_t bank)
{
    (void)ctx, (void)bank;
    pto_clear_error();
    pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, LIFECYCLE_NOT_BUILT("get_arena_bank_gm_heap_base"));
    return 0;
}

uint64_t get_retained_temp_addr_ctx(void *ctx, uint32_t slot)
{
    (void)ctx, (void)slot;
    pto_clear_error();
    pto_fail(PTO_RUNTIME_ERR_UNSUPPORTED, NOT_BUILT("get_retained_temp_addr: trb retained buffers", "[3/8]"));
    return 0;
}
