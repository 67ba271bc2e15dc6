/* The fake platform and runtime of lifecycle_tests (fake_device.h). */
#include "fake_device.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/last_error.h"
#include "util/spin_wait.h"
#include "platform/runner.h"
#include "runtime/runtime.h"

FakeScript fake_script;
FakeRecord fake_record;

static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fake_cond = PTHREAD_COND_INITIALIZER;
static int enqueue_held, enqueue_blocked;
static int drain_held, drain_blocked;
static int device_ended;

void fake_reset(void)
{
    pthread_mutex_lock(&fake_lock);
    memset(&fake_script, 0, sizeof fake_script);
    memset(&fake_record, 0, sizeof fake_record);
    fake_script.pipeline_depth = 2;
    fake_script.concurrent_prepare = 1;
    fake_record.bind_retained_slot = 99;
    fake_record.bind_arena_bank = 99;
    fake_record.prepare_slot = fake_record.abandon_slot = 99;
    enqueue_held = enqueue_blocked = 0;
    drain_held = drain_blocked = 0;
    device_ended = 0;
    pthread_cond_broadcast(&fake_cond);
    pthread_mutex_unlock(&fake_lock);
}

static void set_flag(int *flag, int value)
{
    pthread_mutex_lock(&fake_lock);
    *flag = value;
    pthread_cond_broadcast(&fake_cond);
    pthread_mutex_unlock(&fake_lock);
}

static void await_flag(const int *flag)
{
    pthread_mutex_lock(&fake_lock);
    while (!*flag)
        pthread_cond_wait(&fake_cond, &fake_lock);
    pthread_mutex_unlock(&fake_lock);
}

void fake_hold_enqueue(void) { set_flag(&enqueue_held, 1); }
void fake_release_enqueue(void) { set_flag(&enqueue_held, 0); }
void fake_hold_drain(void) { set_flag(&drain_held, 1); }
void fake_release_drain(void) { set_flag(&drain_held, 0); }
void fake_set_device_ended(int ended) { set_flag(&device_ended, ended); }
void fake_await_enqueue_blocked(void) { await_flag(&enqueue_blocked); }
void fake_await_drain_blocked(void) { await_flag(&drain_blocked); }

/* Parks the calling (executor) thread while *held, announcing it in *blocked. */
static void pass_gate(const int *held, int *blocked)
{
    pthread_mutex_lock(&fake_lock);
    while (*held) {
        *blocked = 1;
        pthread_cond_broadcast(&fake_cond);
        pthread_cond_wait(&fake_cond, &fake_lock);
    }
    *blocked = 0;
    pthread_mutex_unlock(&fake_lock);
}

static void count(int *counter)
{
    pthread_mutex_lock(&fake_lock);
    (*counter)++;
    pthread_mutex_unlock(&fake_lock);
}

/* ======================= platform (platform/runner.h) ======================= */

struct Runner {
    int initialized;
    size_t committed;
};

Runner *runner_create(void) { return calloc(1, sizeof(Runner)); }
void runner_destroy(Runner *r) { free(r); }

int runner_init(Runner *r, int device_id, const DeviceImages *images)
{
    (void)device_id, (void)images;
    count(&fake_record.init_calls);
    if (fake_script.init_fail_code != 0)
        return pto_fail(fake_script.init_fail_code, "fake runner_init refused");
    r->initialized = 1;
    return PTO_OK;
}

int runner_finalize(Runner *r)
{
    count(&fake_record.finalize_calls);
    r->initialized = 0;
    return PTO_OK;
}

int runner_initialized(Runner *r) { return r->initialized; }
int runner_poisoned(Runner *r) { (void)r; return fake_script.poisoned; }
int runner_prepare_slot(Runner *r, uint32_t slot)
{
    (void)r;
    pthread_mutex_lock(&fake_lock);
    fake_record.prepare_slot = slot;
    pthread_mutex_unlock(&fake_lock);
    return 0;
}

int runner_abandon_slot(Runner *r, uint32_t slot)
{
    (void)r;
    pthread_mutex_lock(&fake_lock);
    fake_record.abandon_slot = slot;
    pthread_mutex_unlock(&fake_lock);
    if (fake_script.abandon_fail_code != 0)
        return pto_fail(fake_script.abandon_fail_code, "fake stream release failed");
    return PTO_OK;
}

/* Records what the exported calls report; poisons nothing (a test sets
   fake_script.poisoned itself). */
int runner_note_failure(Runner *r, int rc)
{
    (void)r;
    pthread_mutex_lock(&fake_lock);
    fake_record.noted++;
    fake_record.last_noted = rc;
    pthread_mutex_unlock(&fake_lock);
    return rc;
}

void *runner_device_malloc(void *r, size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p != NULL)
        ((Runner *)r)->committed += n;
    return p;
}

int runner_device_free(void *r, void *p)
{
    (void)r;
    free(p);
    return PTO_OK;
}

size_t runner_committed_bytes(Runner *r) { return r->committed; }

int runner_copy_to_device(void *r, void *dev, const void *host, size_t n)
{
    (void)r;
    memcpy(dev, host, n);
    return PTO_OK;
}

int runner_copy_from_device(void *r, void *host, const void *dev, size_t n)
{
    (void)r;
    memcpy(host, dev, n);
    return PTO_OK;
}

void *runner_register_device_memory_to_host(void *r, void *dev, size_t n) { (void)r, (void)n; return dev; }
int runner_unregister_device_memory_from_host(void *r, void *dev) { (void)r, (void)dev; return PTO_OK; }

int runner_device_memset(void *r, void *dev, int value, size_t n)
{
    (void)r;
    memset(dev, value, n);
    return PTO_OK;
}

int runner_get_retained_temp_buffer(void *r, uint32_t slot, void **dev, size_t *size)
{
    (void)r, (void)slot;
    *dev = NULL;
    *size = 0;
    return PTO_OK;
}

int runner_set_retained_temp_buffer(void *r, uint32_t slot, void *dev, size_t size)
{
    (void)r, (void)dev, (void)size;
    fake_record.bind_retained_slot = slot;
    return PTO_OK;
}

int runner_setup_static_arena(void *r, uint32_t bank, size_t gm_heap, size_t gm_sm, size_t runtime_arena)
{
    (void)r, (void)gm_heap, (void)gm_sm, (void)runtime_arena;
    fake_record.bind_arena_bank = bank;
    return PTO_OK;
}

void *runner_acquire_pooled_gm_heap(void *r, uint32_t bank, size_t *size) { (void)r, (void)bank; *size = 0; return NULL; }
void *runner_acquire_pooled_gm_sm(void *r, uint32_t bank, size_t *size) { (void)r, (void)bank; *size = 0; return NULL; }
void *runner_acquire_pooled_runtime_arena(void *r, uint32_t bank, size_t *size) { (void)r, (void)bank; *size = 0; return NULL; }

int runner_lookup_prebuilt_runtime_arena_cache(void *r, uint32_t bank, uint64_t hash, const void *key, size_t key_size,
                                               void **image)
{
    (void)r, (void)bank, (void)hash, (void)key, (void)key_size;
    *image = NULL;
    return 0;
}

int runner_mark_prebuilt_runtime_arena_cached(void *r, uint32_t bank, uint64_t hash, const void *key, size_t key_size,
                                              void *image)
{
    (void)r, (void)bank, (void)hash, (void)key, (void)key_size, (void)image;
    return PTO_OK;
}

int runner_upload_chip_callable_buffer(void *r, const void *callable, size_t size, uint64_t hash, void **dev)
{
    (void)r, (void)size, (void)hash;
    *dev = (void *)callable;
    return PTO_OK;
}

int runner_release_chip_callable_buffer(void *r, void *dev) { (void)r, (void)dev; return PTO_OK; }

int runner_load_host_library(void *r, const void *image, size_t size, void **handle)
{
    (void)r, (void)size;
    *handle = (void *)image;
    return PTO_OK;
}

int runner_release_host_library(void *r, void *handle) { (void)r, (void)handle; return PTO_OK; }
size_t runner_host_dlopen_count(Runner *r) { (void)r; return 4; }

uint64_t runner_arena_bank_gm_heap_base(Runner *r, uint32_t bank) { (void)r; return 0x1000u * (bank + 1); }
uint64_t runner_retained_temp_addr(Runner *r, uint32_t slot) { (void)r; return 0x2000u * (slot + 1); }
size_t runner_aicpu_dlopen_count(Runner *r) { (void)r; return 3; }
size_t runner_run_stream_set_create_count(Runner *r) { (void)r; return 5; }

int runner_submit(Runner *r, RunExec *exec, uint32_t slot, const DeviceLaunch *launch, LaunchSignal *signal)
{
    (void)r, (void)exec;
    pthread_mutex_lock(&fake_lock);
    fake_record.enqueue_calls++;
    fake_record.enqueue_slot = slot;
    fake_record.enqueue_args_dev = launch->args_dev;
    pthread_mutex_unlock(&fake_lock);
    pass_gate(&enqueue_held, &enqueue_blocked);
    if (fake_script.enqueue_mode == FAKE_ENQUEUE_FAIL_BEFORE_MARKER)
        return pto_fail(fake_script.enqueue_fail_code, "fake enqueue refused before the marker");
    launch_signal_publish(signal);
    return PTO_OK;
}

int runner_query(Runner *r, RunExec *exec)
{
    (void)r, (void)exec;
    count(&fake_record.query_calls);
    if (fake_script.query_error != 0)
        return pto_fail(fake_script.query_error, "fake device query failed");
    pthread_mutex_lock(&fake_lock);
    int ended = device_ended;
    pthread_mutex_unlock(&fake_lock);
    return ended ? SIMPLER_NATIVE_RUN_POLL_COMPLETE : SIMPLER_NATIVE_RUN_POLL_NOT_READY;
}

int runner_await_device(Runner *r, RunExec *exec)
{
    (void)r, (void)exec;
    count(&fake_record.drain_calls);
    pass_gate(&drain_held, &drain_blocked);
    pthread_mutex_lock(&fake_lock);
    fake_record.device_end_ns = pto_monotonic_ns();
    pthread_mutex_unlock(&fake_lock);
    if (fake_script.drain_result != 0)
        return pto_fail(fake_script.drain_result, "fake device fault in task 7");
    return PTO_OK;
}

uint64_t runner_execution_end_ns(const RunExec *exec)
{
    (void)exec;
    pthread_mutex_lock(&fake_lock);
    uint64_t ns = fake_record.device_end_ns;
    pthread_mutex_unlock(&fake_lock);
    return ns;
}

int runner_execute(Runner *r, RunExec *exec, uint32_t slot, const DeviceLaunch *launch, LaunchSignal *signal)
{
    int rc = runner_submit(r, exec, slot, launch, signal);
    return rc == PTO_OK ? runner_await_device(r, exec) : rc;
}

/* The library's one HostApiOps table (services/host_api.h), as platform/host_api_ops.c has it. */
const HostApiOps host_api_ops = {
    .device_malloc = runner_device_malloc,
    .device_free = runner_device_free,
    .copy_to_device = runner_copy_to_device,
    .copy_from_device = runner_copy_from_device,
    .register_device_memory_to_host = runner_register_device_memory_to_host,
    .unregister_device_memory_from_host = runner_unregister_device_memory_from_host,
    .device_memset = runner_device_memset,
    .get_retained_temp_buffer = runner_get_retained_temp_buffer,
    .set_retained_temp_buffer = runner_set_retained_temp_buffer,
    .setup_static_arena = runner_setup_static_arena,
    .acquire_pooled_gm_heap = runner_acquire_pooled_gm_heap,
    .acquire_pooled_gm_sm = runner_acquire_pooled_gm_sm,
    .acquire_pooled_runtime_arena = runner_acquire_pooled_runtime_arena,
    .lookup_prebuilt_runtime_arena_cache = runner_lookup_prebuilt_runtime_arena_cache,
    .mark_prebuilt_runtime_arena_cached = runner_mark_prebuilt_runtime_arena_cached,
    .upload_chip_callable_buffer = runner_upload_chip_callable_buffer,
    .release_chip_callable_buffer = runner_release_chip_callable_buffer,
    .load_host_library = runner_load_host_library,
    .release_host_library = runner_release_host_library,
};

/* ======================= runtime (runtime/runtime.h) ======================== */

struct RuntimeCallable {
    FakeCallable callable;
};

/* Immutable, as a real contract is: one per scriptable depth, and depth 2 with
   the arenas shared by both slots (trb's shape). */
static const PipelineContract fake_contracts[3] = {
    { .abi_version = PTO_PIPELINE_CONTRACT_ABI_VERSION, .pipeline_depth = 1 },
    { .abi_version = PTO_PIPELINE_CONTRACT_ABI_VERSION, .pipeline_depth = 2 },
    { .abi_version = PTO_PIPELINE_CONTRACT_ABI_VERSION,
      .resource_count = 3,
      .pipeline_depth = 2,
      .resources = {
          { PTO_PIPELINE_GM_HEAP, PTO_PIPELINE_DEVICE_SCRATCH, 0 },
          { PTO_PIPELINE_GM_SM, PTO_PIPELINE_DEVICE_SCRATCH, 0 },
          { PTO_PIPELINE_RUNTIME_IMAGE, PTO_PIPELINE_DEVICE_SCRATCH, 0 },
      } },
};

const PipelineContract *runtime_pipeline_contract(void)
{
    return &fake_contracts[fake_script.pipeline_depth == 1 ? 0 : fake_script.shared_bank ? 2 : 1];
}

int runtime_supports_overlap(void) { return fake_script.concurrent_prepare; }

int runtime_register_callable(const HostApi *api, const void *callable, RuntimeCallable **out)
{
    (void)api;
    count(&fake_record.register_calls);
    const FakeCallable *fc = callable;
    if (fc->register_fail_code != 0)
        return pto_fail(fc->register_fail_code, "fake callable refused");
    RuntimeCallable *c = malloc(sizeof *c);
    if (c == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "fake callable: out of memory");
    c->callable = *fc;
    *out = c;
    count(&fake_record.live_callables);
    return PTO_OK;
}

void runtime_release_callable(const HostApi *api, RuntimeCallable *c)
{
    (void)api;
    pthread_mutex_lock(&fake_lock);
    fake_record.release_calls++;
    fake_record.live_callables--;
    pthread_mutex_unlock(&fake_lock);
    free(c);
}

int runtime_prewarm(const HostApi *api, const CallConfig *cfg)
{
    (void)api, (void)cfg;
    count(&fake_record.prewarm_calls);
    return PTO_OK;
}

struct RuntimeSlotScratch {
    int unused;
};

RuntimeSlotScratch *runtime_slot_scratch_create(void)
{
    RuntimeSlotScratch *s = calloc(1, sizeof *s);
    if (s != NULL)
        count(&fake_record.live_scratches);
    return s;
}

void runtime_slot_scratch_destroy(RuntimeSlotScratch *s)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&fake_lock);
    fake_record.live_scratches--;
    pthread_mutex_unlock(&fake_lock);
    free(s);
}

int runtime_bind(RuntimeRun *run, RuntimeSlotScratch *scratch, const HostApi *api, const RuntimeCallable *c,
                 const ChipStorageTaskArgs *args, const CallConfig *cfg, const NativeRunDescriptor *desc,
                 DeviceLaunch *launch)
{
    (void)c, (void)args, (void)cfg, (void)desc;
    count(&fake_record.bind_calls);
    pthread_mutex_lock(&fake_lock);
    fake_record.bind_scratch[api->pipeline_slot] = scratch;
    fake_record.bind_overlaps = run->overlaps;
    pthread_mutex_unlock(&fake_lock);
    if (fake_script.bind_fail_code != 0 && !fake_script.bind_fail_after_hook)
        return pto_fail(fake_script.bind_fail_code, "fake bind refused");
    if (fake_script.bind_hook != NULL)
        fake_script.bind_hook(fake_script.bind_hook_arg);
    if (fake_script.bind_fail_code != 0)
        return pto_fail(fake_script.bind_fail_code, "fake bind refused");
    /* reach the runner through the run's own HostApi, as a runtime does */
    host_api_set_retained_temp_buffer(api, NULL, 0);
    host_api_setup_static_arena(api, 0, 0, 0);
    memset(run->opaque, 0x5A, 16);
    launch->args_dev = FAKE_ARGS_DEV;
    launch->timeout_ms = 1000;
    return PTO_OK;
}

int runtime_read_failure(RuntimeRun *run, const HostApi *api, int execution_rc)
{
    (void)run;
    (void)api;
    return execution_rc; /* the fake device's message stands */
}

int runtime_collect_results(RuntimeRun *run, const HostApi *api, int execution_rc)
{
    (void)run, (void)api;
    pthread_mutex_lock(&fake_lock);
    fake_record.collect_calls++;
    fake_record.collect_execution_rc = execution_rc;
    pthread_mutex_unlock(&fake_lock);
    if (fake_script.collect_fail_code != 0)
        return pto_fail(fake_script.collect_fail_code, "fake collect found a device status error");
    return PTO_OK;
}

uint32_t runtime_run_graph_source(const RuntimeRun *run)
{
    (void)run; /* the fake runtime builds nothing */
    return PTO_RUN_GRAPH_BUILT;
}

uint64_t runtime_run_orchestration_ns(const RuntimeRun *run)
{
    (void)run; /* nor orchestrates */
    return 0;
}

uint64_t runtime_run_device_bytes(const RuntimeRun *run)
{
    (void)run;
    return fake_script.device_bytes;
}

void runtime_unbind(RuntimeRun *run, const HostApi *api)
{
    (void)run, (void)api;
    count(&fake_record.unbind_calls);
}
