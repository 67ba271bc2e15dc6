/* The sim runner: the device is simulated in-process. Device memory is host
 * memory with exact accounting and an optional capacity
 * (PTORUN_SIM_DEVICE_MEMORY bytes); everything the runner itself keeps on the
 * device (arenas, retained buffers, callable uploads) is allocated there too,
 * so committed_device_memory covers all of it. The device images are loaded
 * privately per runner (sim_image.h) and run on the runner's own persistent
 * device threads (sim_device_pool.h). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch/arch.h"
#include "common/alloc_table.h"
#include "common/chip_callable.h"
#include "common/library_cache.h"
#include "common/env.h"
#include "common/last_error.h"
#include "device/pto_device_abi.h"
#include "platform/runner.h"
#include "platform/sim/sim_device_pool.h"
#include "platform/sim/sim_image.h"
#include "ptorun/pto_runtime_c_api.h"

/* Device allocations are aligned like a real device's GM allocations. */
#define SIM_DEVICE_ALIGNMENT 64
#define SIM_BANKS PTO_PIPELINE_MAX_DEPTH
#define SIM_SLOTS PTO_PIPELINE_MAX_DEPTH
#define SIM_MAX_DEVICE_THREADS 64

typedef struct SimArena {
    void *base;
    size_t size;
} SimArena;

typedef struct SimBank {
    SimArena gm_heap, gm_sm, runtime_arena;
} SimBank;

typedef struct SimPrebuiltCache {
    int valid;
    uint64_t hash;
    void *key;           /* host copy */
    size_t key_size;
    void *image;
} SimPrebuiltCache;

typedef struct SimUpload {
    void *dev;           /* the uploaded copy, kernels resolved */
    size_t size;
    uint64_t hash;       /* of the caller's bytes */
    uint32_t refs;
    uint32_t library_count;
    void *libraries[PTO_CALLABLE_MAX_CHILDREN]; /* kernel-library references its children hold */
} SimUpload;

struct Runner {
    AllocTable memory;
    pthread_mutex_t lock;      /* guards everything below */
    int initialized;
    int device_id;
    SimImage aicpu, aicore;
    PtoAicpuEntryFn aicpu_entry;
    PtoAicpuDlopenCountFn aicpu_dlopen_count; /* NULL: the image loads no libraries */
    size_t aicpu_dlopen_before;   /* loads of AICPU image copies already unloaded */
    SimDevicePool *pool;
    SimBank banks[SIM_BANKS];
    SimArena retained[SIM_SLOTS];
    SimPrebuiltCache prebuilt;
    SimUpload *uploads;
    size_t upload_count, upload_cap;
    /* user kernel libraries (the device side of the sim, loaded into this
       process like the images) and hbg orchestration libraries (the host side) */
    LibraryCache kernel_libraries, host_libraries;
    /* Test facility: the enqueue after this many successful ones fails before the
     * marker, once (PTORUN_SIM_FAIL_ENQUEUE_AFTER, read at init; -1 = never). */
    long long fail_enqueue_after;
};

/* The platform's part of a run (RunExec.opaque). */
typedef struct SimRunExec {
    uint64_t launch_id;
    PtoAicpuArgs *args;        /* the launch's argument block (device memory) */
    uint32_t timeout_ms;
    int32_t sticky_error;      /* enqueue rolled back: nothing can turn this run COMPLETE */
    int32_t result;            /* the drained result, published before state */
    uint32_t state;            /* SimRunState; atomic: query may race drain */
} SimRunExec;
_Static_assert(sizeof(SimRunExec) <= PTO_RUN_EXEC_BYTES, "SimRunExec fits RunExec");

typedef enum SimRunState { SIM_RUN_NONE = 0, SIM_RUN_ENQUEUED = 1, SIM_RUN_DRAINED = 2, SIM_RUN_FAILED = 3 } SimRunState;

static SimRunExec *sim_exec(RunExec *exec)
{
    return (SimRunExec *)exec->opaque;
}

static uint32_t exec_state(const SimRunExec *x)
{
    return __atomic_load_n(&x->state, __ATOMIC_ACQUIRE);
}

static void set_exec_state(SimRunExec *x, uint32_t state)
{
    __atomic_store_n(&x->state, state, __ATOMIC_RELEASE);
}

/* ---- lifetime --------------------------------------------------------------- */

Runner *runner_create(void)
{
    Runner *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    if (alloc_table_init(&r->memory, pto_env_size("PTORUN_SIM_DEVICE_MEMORY", 0)) != PTO_OK)
        goto fail_table;
    if (pthread_mutex_init(&r->lock, NULL) != 0)
        goto fail_lock;
    if (library_cache_init(&r->kernel_libraries, "kernel library") != PTO_OK)
        goto fail_kernel_libraries;
    if (library_cache_init(&r->host_libraries, "orchestration library") != PTO_OK)
        goto fail_host_libraries;
    return r;

fail_host_libraries:
    library_cache_destroy(&r->kernel_libraries);
fail_kernel_libraries:
    pthread_mutex_destroy(&r->lock);
fail_lock:
    alloc_table_destroy(&r->memory);
fail_table:
    free(r);
    return NULL;
}

static void release_allocation(uintptr_t base, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    free((void *)base);
}

void runner_destroy(Runner *r)
{
    if (r == NULL)
        return;
    /* never free memory under running device threads: let a launch end first */
    while (runner_finalize(r) == PTO_ERR_BUSY)
        sim_device_pool_wait(r->pool, UINT64_MAX, 0);
    alloc_table_drain(&r->memory, release_allocation, NULL);
    alloc_table_destroy(&r->memory);
    library_cache_destroy(&r->host_libraries);
    library_cache_destroy(&r->kernel_libraries);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

/* Device threads: PTORUN_SIM_DEVICE_THREADS, else one per online CPU, at least 1. */
static uint32_t device_thread_count(void)
{
    size_t n = pto_env_size("PTORUN_SIM_DEVICE_THREADS", 0);
    if (n == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        n = cpus > 0 ? (size_t)cpus : 1;
    }
    return n > SIM_MAX_DEVICE_THREADS ? SIM_MAX_DEVICE_THREADS : (uint32_t)n;
}

/* PTORUN_SIM_FAIL_ENQUEUE_AFTER=<n>: lets tests prove what a failure before the
 * launch marker does (no acceptance, sticky error, chip usable afterwards). */
static long long injected_enqueue_failure(void)
{
    const char *text = getenv("PTORUN_SIM_FAIL_ENQUEUE_AFTER");
    if (text == NULL || *text == '\0')
        return -1;
    char *end = NULL;
    long long n = strtoll(text, &end, 10);
    return (*end == '\0' && n >= 0) ? n : -1;
}

int runner_init(Runner *r, int device_id, const DeviceImages *images)
{
    if (images == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "sim device init: no device images");
    pthread_mutex_lock(&r->lock);
    int rc;
    if (r->initialized) {
        rc = pto_fail(PTO_ERR_BUSY, "sim device %d is already initialized; finalize_device first", r->device_id);
        goto out;
    }
    if ((rc = sim_image_load(&r->aicpu, "AICPU image", images->aicpu, images->aicpu_size)) != PTO_OK)
        goto out;
    r->aicpu_entry = (PtoAicpuEntryFn)sim_image_symbol(&r->aicpu, PTO_AICPU_ENTRY_SYMBOL);
    if (r->aicpu_entry == NULL) {
        rc = pto_fail(PTO_ERR_INVALID_ARGUMENT, "AICPU image exports no %s", PTO_AICPU_ENTRY_SYMBOL);
        goto fail_entry;
    }
    r->aicpu_dlopen_count = (PtoAicpuDlopenCountFn)sim_image_symbol(&r->aicpu, PTO_AICPU_DLOPEN_COUNT_SYMBOL);
    if ((rc = sim_image_load(&r->aicore, "AICore image", images->aicore, images->aicore_size)) != PTO_OK)
        goto fail_entry;
    if ((rc = sim_device_pool_create(device_thread_count(), &r->pool)) != PTO_OK)
        goto fail_pool;
    r->device_id = device_id;
    r->fail_enqueue_after = injected_enqueue_failure();
    r->initialized = 1;
    goto out;

fail_pool:
    sim_image_unload(&r->aicore);
fail_entry:
    sim_image_unload(&r->aicpu);
    r->aicpu_entry = NULL;
    r->aicpu_dlopen_count = NULL;
out:
    pthread_mutex_unlock(&r->lock);
    return rc;
}

static void drop_prebuilt_cache(Runner *r)
{
    free(r->prebuilt.key);
    memset(&r->prebuilt, 0, sizeof r->prebuilt);
}

int runner_finalize(Runner *r)
{
    pthread_mutex_lock(&r->lock);
    if (!r->initialized) {
        pthread_mutex_unlock(&r->lock);
        return PTO_OK;
    }
    if (sim_device_pool_busy(r->pool)) {
        pthread_mutex_unlock(&r->lock);
        return pto_fail(PTO_ERR_BUSY, "sim device %d: a launch is still running", r->device_id);
    }
    sim_device_pool_destroy(r->pool);
    r->pool = NULL;
    /* a device reset: every device allocation goes, the runner's and the user's */
    alloc_table_drain(&r->memory, release_allocation, NULL);
    memset(r->banks, 0, sizeof r->banks);
    memset(r->retained, 0, sizeof r->retained);
    drop_prebuilt_cache(r);
    free(r->uploads);
    r->uploads = NULL;
    r->upload_count = r->upload_cap = 0;
    /* no kernel can run any more: the libraries go with the device */
    library_cache_clear(&r->kernel_libraries);
    library_cache_clear(&r->host_libraries);
    sim_image_unload(&r->aicore);
    if (r->aicpu_dlopen_count != NULL)
        r->aicpu_dlopen_before += (size_t)r->aicpu_dlopen_count(); /* the count outlives the image */
    sim_image_unload(&r->aicpu);
    r->aicpu_entry = NULL;
    r->aicpu_dlopen_count = NULL;
    r->initialized = 0;
    pthread_mutex_unlock(&r->lock);
    return PTO_OK;
}

int runner_initialized(Runner *r)
{
    pthread_mutex_lock(&r->lock);
    int up = r->initialized;
    pthread_mutex_unlock(&r->lock);
    return up;
}

int runner_poisoned(Runner *r)
{
    (void)r; /* the simulated device has no unrecoverable state */
    return 0;
}

/* ---- device memory ----------------------------------------------------------- */

void *runner_device_malloc(Runner *r, size_t n)
{
    if (n == 0) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "device_malloc: size 0");
        return NULL;
    }
    if (alloc_table_reserve(&r->memory, n) != PTO_OK) {
        pto_fail(PTO_ERR_OUT_OF_MEMORY, "sim device memory exhausted: %zu bytes requested, %zu of %zu committed",
                 n, alloc_table_committed(&r->memory), r->memory.capacity);
        return NULL;
    }
    void *p = NULL;
    if (posix_memalign(&p, SIM_DEVICE_ALIGNMENT, n) != 0) {
        alloc_table_unreserve(&r->memory, n);
        pto_fail(PTO_ERR_OUT_OF_MEMORY, "sim device memory: host allocation of %zu bytes failed", n);
        return NULL;
    }
    if (alloc_table_insert(&r->memory, (uintptr_t)p, n) != PTO_OK) {
        free(p);
        pto_fail(PTO_ERR_OUT_OF_MEMORY, "sim device memory: allocation table cannot grow");
        return NULL;
    }
    return p;
}

/* Frees an allocation known to be live. */
static void free_device(Runner *r, void *p)
{
    size_t size;
    if (p != NULL && alloc_table_remove(&r->memory, (uintptr_t)p, &size) == PTO_OK)
        free(p);
}

/* What the runner itself owns at `p`, or NULL. Caller holds r->lock. */
static const char *runner_owned(const Runner *r, const void *p)
{
    for (uint32_t b = 0; b < SIM_BANKS; b++) {
        const SimBank *bank = &r->banks[b];
        if (p == bank->gm_heap.base || p == bank->gm_sm.base || p == bank->runtime_arena.base)
            return "an arena";
    }
    for (size_t i = 0; i < r->upload_count; i++)
        if (p == r->uploads[i].dev)
            return "a callable upload";
    return NULL;
}

int runner_device_free(Runner *r, void *p)
{
    if (p == NULL)
        return PTO_OK;
    pthread_mutex_lock(&r->lock);
    const char *owned = runner_owned(r, p);
    if (owned != NULL) {
        pthread_mutex_unlock(&r->lock);
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "device_free: %p is %s owned by the device context; not freed", p,
                        owned);
    }
    size_t size;
    if (alloc_table_remove(&r->memory, (uintptr_t)p, &size) != PTO_OK) {
        pthread_mutex_unlock(&r->lock);
        return pto_fail(PTO_ERR_INVALID_ARGUMENT,
                        "device_free: %p is not the start of a live allocation of this context; not freed", p);
    }
    /* a freed retained buffer is no longer the slot's */
    for (uint32_t s = 0; s < SIM_SLOTS; s++)
        if (r->retained[s].base == p)
            r->retained[s] = (SimArena){ NULL, 0 };
    pthread_mutex_unlock(&r->lock);
    free(p);
    return PTO_OK;
}

size_t runner_committed_bytes(Runner *r)
{
    return alloc_table_committed(&r->memory);
}

static int check_inside(Runner *r, const char *fn, const void *dev, size_t n)
{
    if (!alloc_table_contains(&r->memory, (uintptr_t)dev, n))
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: [%p, +%zu) is not inside one live allocation of this context",
                        fn, dev, n);
    return PTO_OK;
}

int runner_copy_to_device(Runner *r, void *dev, const void *host, size_t n)
{
    int rc = check_inside(r, "copy_to_device", dev, n);
    if (rc == PTO_OK && n > 0)
        memcpy(dev, host, n);
    return rc;
}

int runner_copy_from_device(Runner *r, void *host, const void *dev, size_t n)
{
    int rc = check_inside(r, "copy_from_device", dev, n);
    if (rc == PTO_OK && n > 0)
        memcpy(host, dev, n);
    return rc;
}

/* The simulated device memory is host memory: the host view is the buffer. */
void *runner_register_device_memory_to_host(Runner *r, void *dev, size_t n)
{
    return check_inside(r, "register_device_memory_to_host", dev, n) == PTO_OK ? dev : NULL;
}

int runner_unregister_device_memory_from_host(Runner *r, void *dev)
{
    return check_inside(r, "unregister_device_memory_from_host", dev, 0);
}

int runner_device_memset(Runner *r, void *dev, int value, size_t n)
{
    int rc = check_inside(r, "device_memset", dev, n);
    if (rc == PTO_OK && n > 0)
        memset(dev, value, n);
    return rc;
}

/* ---- retained buffers (per slot) ----------------------------------------------- */

static int check_slot(uint32_t slot, const char *fn)
{
    if (slot >= SIM_SLOTS)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: pipeline slot %u is outside 0..%u", fn, slot, SIM_SLOTS - 1);
    return PTO_OK;
}

int runner_get_retained_temp_buffer(Runner *r, uint32_t slot, void **dev, size_t *size)
{
    int rc = check_slot(slot, "get_retained_temp_buffer");
    if (rc != PTO_OK)
        return rc;
    pthread_mutex_lock(&r->lock);
    *dev = r->retained[slot].base;
    *size = r->retained[slot].size;
    pthread_mutex_unlock(&r->lock);
    return PTO_OK;
}

/* Records the slot's buffer (NULL clears it). The caller frees the previous one
 * itself (device_free) if it replaces it; finalize frees the recorded one. */
int runner_set_retained_temp_buffer(Runner *r, uint32_t slot, void *dev, size_t size)
{
    int rc = check_slot(slot, "set_retained_temp_buffer");
    if (rc != PTO_OK)
        return rc;
    if (dev != NULL && (rc = check_inside(r, "set_retained_temp_buffer", dev, size)) != PTO_OK)
        return rc;
    pthread_mutex_lock(&r->lock);
    r->retained[slot] = (SimArena){ dev, dev == NULL ? 0 : size };
    pthread_mutex_unlock(&r->lock);
    return PTO_OK;
}

uint64_t runner_retained_temp_addr(Runner *r, uint32_t slot)
{
    if (slot >= SIM_SLOTS)
        return 0;
    pthread_mutex_lock(&r->lock);
    uint64_t addr = (uint64_t)(uintptr_t)r->retained[slot].base;
    pthread_mutex_unlock(&r->lock);
    return addr;
}

/* ---- arenas (per bank) ---------------------------------------------------------- */

static int check_bank(uint32_t bank, const char *fn)
{
    if (bank >= SIM_BANKS)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: arena bank %u is outside 0..%u", fn, bank, SIM_BANKS - 1);
    return PTO_OK;
}

static void release_arena(Runner *r, SimArena *a)
{
    free_device(r, a->base);
    *a = (SimArena){ NULL, 0 };
}

/* Grows an arena to at least `want` bytes (0 or already large enough: kept). */
static int grow_arena(Runner *r, SimArena *a, size_t want)
{
    if (want == 0 || want <= a->size)
        return PTO_OK;
    release_arena(r, a);
    void *p = runner_device_malloc(r, want);
    if (p == NULL)
        return PTO_ERR_OUT_OF_MEMORY;
    *a = (SimArena){ p, want };
    return PTO_OK;
}

int runner_setup_static_arena(Runner *r, uint32_t bank, size_t gm_heap, size_t gm_sm, size_t runtime_arena)
{
    int rc = check_bank(bank, "setup_static_arena");
    if (rc != PTO_OK)
        return rc;
    pthread_mutex_lock(&r->lock);
    SimBank *b = &r->banks[bank];
    /* a prebuilt image lives in bank 0's runtime arena: a new one (even at the
       same address) leaves the cache stale */
    if (bank == 0 && runtime_arena > b->runtime_arena.size)
        drop_prebuilt_cache(r);
    if ((rc = grow_arena(r, &b->gm_heap, gm_heap)) != PTO_OK || (rc = grow_arena(r, &b->gm_sm, gm_sm)) != PTO_OK ||
        (rc = grow_arena(r, &b->runtime_arena, runtime_arena)) != PTO_OK) {
        /* a bank is whole or empty */
        release_arena(r, &b->gm_heap);
        release_arena(r, &b->gm_sm);
        release_arena(r, &b->runtime_arena);
        if (bank == 0)
            drop_prebuilt_cache(r);
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

static void *acquire_arena(Runner *r, uint32_t bank, size_t *size, int which, const char *fn)
{
    if (check_bank(bank, fn) != PTO_OK)
        return NULL;
    pthread_mutex_lock(&r->lock);
    SimBank *b = &r->banks[bank];
    SimArena *a = which == 0 ? &b->gm_heap : which == 1 ? &b->gm_sm : &b->runtime_arena;
    void *base = a->base;
    if (size != NULL)
        *size = a->size;
    pthread_mutex_unlock(&r->lock);
    if (base == NULL)
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: bank %u has none committed (setup_static_arena first)", fn, bank);
    return base;
}

void *runner_acquire_pooled_gm_heap(Runner *r, uint32_t bank, size_t *size)
{
    return acquire_arena(r, bank, size, 0, "acquire_pooled_gm_heap");
}

void *runner_acquire_pooled_gm_sm(Runner *r, uint32_t bank, size_t *size)
{
    return acquire_arena(r, bank, size, 1, "acquire_pooled_gm_sm");
}

void *runner_acquire_pooled_runtime_arena(Runner *r, uint32_t bank, size_t *size)
{
    return acquire_arena(r, bank, size, 2, "acquire_pooled_runtime_arena");
}

uint64_t runner_arena_bank_gm_heap_base(Runner *r, uint32_t bank)
{
    if (bank >= SIM_BANKS)
        return 0;
    pthread_mutex_lock(&r->lock);
    uint64_t base = (uint64_t)(uintptr_t)r->banks[bank].gm_heap.base;
    pthread_mutex_unlock(&r->lock);
    return base;
}

/* ---- the prebuilt runtime-arena cache (bank 0, one entry) ------------------------ */

static int check_cache_bank(uint32_t bank, const char *fn)
{
    if (bank != 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: the prebuilt runtime-arena cache is bank 0's; bank %u asked",
                        fn, bank);
    return PTO_OK;
}

int runner_lookup_prebuilt_runtime_arena_cache(Runner *r, uint32_t bank, uint64_t hash, const void *key,
                                               size_t key_size, void **image)
{
    int rc = check_cache_bank(bank, "lookup_prebuilt_runtime_arena_cache");
    if (rc != PTO_OK)
        return rc;
    if (key == NULL && key_size != 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "lookup_prebuilt_runtime_arena_cache: NULL key of %zu bytes",
                        key_size);
    pthread_mutex_lock(&r->lock);
    const SimPrebuiltCache *c = &r->prebuilt;
    int hit = c->valid && c->hash == hash && c->key_size == key_size &&
              (key_size == 0 || memcmp(c->key, key, key_size) == 0);
    *image = hit ? c->image : NULL;
    pthread_mutex_unlock(&r->lock);
    return hit;
}

int runner_mark_prebuilt_runtime_arena_cached(Runner *r, uint32_t bank, uint64_t hash, const void *key,
                                              size_t key_size, void *image)
{
    int rc = check_cache_bank(bank, "mark_prebuilt_runtime_arena_cached");
    if (rc != PTO_OK)
        return rc;
    if (key == NULL && key_size != 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "mark_prebuilt_runtime_arena_cached: NULL key of %zu bytes",
                        key_size);
    if ((rc = check_inside(r, "mark_prebuilt_runtime_arena_cached", image, 0)) != PTO_OK)
        return rc;
    void *copy = NULL;
    if (key_size > 0) {
        if ((copy = malloc(key_size)) == NULL)
            return pto_fail(PTO_ERR_OUT_OF_MEMORY, "mark_prebuilt_runtime_arena_cached: out of host memory");
        memcpy(copy, key, key_size);
    }
    pthread_mutex_lock(&r->lock);
    drop_prebuilt_cache(r);
    r->prebuilt = (SimPrebuiltCache){ 1, hash, copy, key_size, image };
    pthread_mutex_unlock(&r->lock);
    return PTO_OK;
}

/* ---- callable uploads ------------------------------------------------------------- */

/* Same bytes as an uploaded copy, ignoring the resolved_addr fields the upload
   patched. */
static int same_callable(const SimUpload *u, const ChipCallableView *v)
{
    const uint8_t *dev = u->dev;
    uint32_t from = 0;
    for (uint32_t i = 0; i < v->header.child_count; i++) {
        uint32_t at = chip_callable_resolved_addr_offset(v, i);
        if (memcmp(dev + from, v->bytes + from, at - from) != 0)
            return 0;
        from = at + (uint32_t)sizeof(uint64_t);
    }
    return memcmp(dev + from, v->bytes + from, v->header.total_size - from) == 0;
}

static void release_libraries(Runner *r, SimUpload *u)
{
    for (uint32_t i = 0; i < u->library_count; i++)
        library_cache_release(&r->kernel_libraries, u->libraries[i]);
    u->library_count = 0;
}

/* A built-in's address: dlsym of pto_kernel_<name> in this runner's AICore copy. */
static void *builtin_kernel(Runner *r, const ChipCallableView *v, uint32_t i, const ChipCallableChild *c)
{
    const char *name = chip_callable_blob(v, c->name);
    char symbol[sizeof PTO_KERNEL_SYMBOL_PREFIX + PTO_CALLABLE_MAX_NAME];
    memcpy(symbol, PTO_KERNEL_SYMBOL_PREFIX, sizeof PTO_KERNEL_SYMBOL_PREFIX - 1);
    memcpy(symbol + sizeof PTO_KERNEL_SYMBOL_PREFIX - 1, name, c->name.size);
    symbol[sizeof PTO_KERNEL_SYMBOL_PREFIX - 1 + c->name.size] = '\0';
    void *fn = sim_image_symbol(&r->aicore, symbol);
    if (fn == NULL)
        pto_fail(PTO_ERR_BAD_CALLABLE, "child %u (func_id %u): the AICore image has no kernel '%.*s'", i, c->func_id,
                 (int)c->name.size, name);
    return fn;
}

/* A library kernel's address: its image loaded once per content (a reference
   recorded in `u`), its entry symbol resolved there. */
static void *library_kernel(Runner *r, const ChipCallableView *v, uint32_t i, const ChipCallableChild *c, SimUpload *u)
{
    void *handle;
    if (library_cache_acquire(&r->kernel_libraries, v->bytes + c->image.offset, c->image.size, &handle) != PTO_OK) {
        pto_fail(PTO_ERR_BAD_CALLABLE, "child %u (func_id %u): %s", i, c->func_id, pto_last_error());
        return NULL;
    }
    u->libraries[u->library_count++] = handle;
    char why[256];
    const char *name = chip_callable_blob(v, c->name);
    void *fn = library_cache_symbol(handle, name, c->name.size, why, sizeof why);
    if (fn == NULL)
        pto_fail(PTO_ERR_BAD_CALLABLE, "child %u (func_id %u): the kernel library has no entry symbol '%.*s': %s", i,
                 c->func_id, (int)c->name.size, name, why);
    return fn;
}

/* Writes each child's kernel address into the uploaded copy. On failure the
   library references taken so far are released. */
static int resolve_kernels(Runner *r, const ChipCallableView *v, uint8_t *dev, SimUpload *u)
{
    for (uint32_t i = 0; i < v->header.child_count; i++) {
        ChipCallableChild c;
        chip_callable_child(v, i, &c);
        void *fn = c.source_kind == PTO_KERNEL_LIBRARY ? library_kernel(r, v, i, &c, u) : builtin_kernel(r, v, i, &c);
        if (fn == NULL) {
            release_libraries(r, u);
            return PTO_ERR_BAD_CALLABLE;
        }
        uint64_t addr = (uint64_t)(uintptr_t)fn;
        memcpy(dev + chip_callable_resolved_addr_offset(v, i), &addr, sizeof addr);
    }
    return PTO_OK;
}

static int add_upload(Runner *r, SimUpload u)
{
    if (r->upload_count == r->upload_cap) {
        size_t cap = r->upload_cap ? r->upload_cap * 2 : 8;
        SimUpload *grown = realloc(r->uploads, cap * sizeof *grown);
        if (grown == NULL)
            return pto_fail(PTO_ERR_OUT_OF_MEMORY, "upload_chip_callable_buffer: out of host memory");
        r->uploads = grown;
        r->upload_cap = cap;
    }
    r->uploads[r->upload_count++] = u;
    return PTO_OK;
}

int runner_upload_chip_callable_buffer(Runner *r, const void *callable, size_t size, uint64_t hash, void **dev)
{
    ChipCallableView v;
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    if (chip_callable_decode(callable, &v, msg, sizeof msg) != PTO_OK)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "upload_chip_callable_buffer: %s", msg);
    if (size != v.header.total_size)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "upload_chip_callable_buffer: %zu bytes given, total_size is %u",
                        size, v.header.total_size);
    pthread_mutex_lock(&r->lock);
    int rc = PTO_OK;
    if (!r->initialized) {
        rc = pto_fail(PTO_ERR_WRONG_PHASE, "upload_chip_callable_buffer: the device is not initialized (simpler_init)");
        goto out;
    }
    for (size_t i = 0; i < r->upload_count; i++) {
        SimUpload *u = &r->uploads[i];
        if (u->hash == hash && u->size == size && same_callable(u, &v)) {
            u->refs++;
            *dev = u->dev;
            goto out;
        }
    }
    uint8_t *copy = runner_device_malloc(r, size);
    if (copy == NULL) {
        rc = PTO_ERR_OUT_OF_MEMORY;
        goto out;
    }
    memcpy(copy, callable, size);
    SimUpload u = { .dev = copy, .size = size, .hash = hash, .refs = 1 };
    if ((rc = resolve_kernels(r, &v, copy, &u)) != PTO_OK) {
        free_device(r, copy);
        goto out;
    }
    if ((rc = add_upload(r, u)) != PTO_OK) {
        release_libraries(r, &u);
        free_device(r, copy);
        goto out;
    }
    *dev = copy;
out:
    pthread_mutex_unlock(&r->lock);
    return rc;
}

int runner_release_chip_callable_buffer(Runner *r, void *dev)
{
    pthread_mutex_lock(&r->lock);
    for (size_t i = 0; i < r->upload_count; i++) {
        SimUpload *u = &r->uploads[i];
        if (u->dev != dev)
            continue;
        if (--u->refs == 0) {
            release_libraries(r, u);
            free_device(r, u->dev);
            r->uploads[i] = r->uploads[--r->upload_count];
        }
        pthread_mutex_unlock(&r->lock);
        return PTO_OK;
    }
    pthread_mutex_unlock(&r->lock);
    return pto_fail(PTO_ERR_INVALID_ARGUMENT, "release_chip_callable_buffer: %p is not an uploaded callable", dev);
}

/* ---- host libraries ------------------------------------------------------------------ */

int runner_load_host_library(Runner *r, const void *image, size_t size, void **handle)
{
    *handle = NULL;
    if (!runner_initialized(r))
        return pto_fail(PTO_ERR_WRONG_PHASE, "load_host_library: the device is not initialized (simpler_init)");
    return library_cache_acquire(&r->host_libraries, image, size, handle);
}

int runner_release_host_library(Runner *r, void *handle)
{
    return library_cache_release(&r->host_libraries, handle);
}

size_t runner_host_dlopen_count(Runner *r)
{
    return library_cache_loads(&r->host_libraries);
}

/* ---- counters ---------------------------------------------------------------------- */

/* Orchestration libraries this device's AICPU image has loaded (trb). */
size_t runner_aicpu_dlopen_count(Runner *r)
{
    pthread_mutex_lock(&r->lock);
    size_t n = r->aicpu_dlopen_before + (r->aicpu_dlopen_count != NULL ? (size_t)r->aicpu_dlopen_count() : 0);
    pthread_mutex_unlock(&r->lock);
    return n;
}

size_t runner_run_stream_set_create_count(Runner *r)
{
    (void)r; /* the sim has no streams */
    return 0;
}

/* ---- per-run stream set ------------------------------------------------------------- */

int runner_prepare_slot(Runner *r, uint32_t slot)
{
    (void)r; /* the sim has no streams */
    (void)slot;
    return PTO_OK;
}

void runner_abandon_slot(Runner *r, uint32_t slot)
{
    (void)r;
    (void)slot;
}

/* ---- execution ------------------------------------------------------------------------ */

/* Everything a launch needs, checked before anything is handed over. */
static int check_launch(Runner *r, const DeviceLaunch *launch)
{
    if (launch == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "enqueue: no DeviceLaunch");
    if (launch->aicpu_threads < 1 || launch->aicpu_threads > PTO_ARCH_AICPU_THREADS_MAX)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "enqueue: %u AICPU threads, 1..%d supported", launch->aicpu_threads,
                        PTO_ARCH_AICPU_THREADS_MAX);
    if (launch->block_dim < 1 || launch->block_dim > PTO_ARCH_MAX_BLOCKS)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "enqueue: block_dim %u, 1..%d supported", launch->block_dim,
                        PTO_ARCH_MAX_BLOCKS);
    if (launch->timeout_ms == 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "enqueue: timeout_ms 0 (unresolved)");
    return check_inside(r, "enqueue: argument block", (const void *)(uintptr_t)launch->args_dev,
                        sizeof(PtoAicpuArgs));
}

int runner_enqueue(Runner *r, RunExec *exec, uint32_t slot, const DeviceLaunch *launch, LaunchSignal *signal)
{
    (void)slot; /* the sim has no per-slot streams */
    SimRunExec *x = sim_exec(exec);
    memset(x, 0, sizeof *x);
    int rc;
    pthread_mutex_lock(&r->lock);
    if (!r->initialized) {
        rc = pto_fail(PTO_ERR_WRONG_PHASE, "enqueue: the device is not initialized (simpler_init)");
    } else if (r->fail_enqueue_after == 0) {
        r->fail_enqueue_after = -1;
        rc = pto_fail(PTO_ERR_DEVICE, "enqueue: injected failure before the launch marker (PTORUN_SIM_FAIL_ENQUEUE_AFTER)");
    } else if ((rc = check_launch(r, launch)) == PTO_OK) {
        if (r->fail_enqueue_after > 0)
            r->fail_enqueue_after--;
        rc = sim_device_pool_launch(r->pool, r->aicpu_entry, launch->args_dev, launch->aicpu_threads, &x->launch_id);
    }
    pthread_mutex_unlock(&r->lock);
    if (rc != PTO_OK) {
        /* nothing was handed over; the run can never complete */
        x->sticky_error = rc;
        set_exec_state(x, SIM_RUN_FAILED);
        return rc;
    }
    x->args = (PtoAicpuArgs *)(uintptr_t)launch->args_dev;
    x->timeout_ms = launch->timeout_ms;
    set_exec_state(x, SIM_RUN_ENQUEUED);
    /* the marker: the work is on the device threads */
    if (signal != NULL)
        launch_signal_publish(signal);
    return PTO_OK;
}

int runner_query(Runner *r, RunExec *exec)
{
    SimRunExec *x = sim_exec(exec);
    switch (exec_state(x)) {
    case SIM_RUN_FAILED:
        return x->sticky_error;
    case SIM_RUN_DRAINED:
        return SIMPLER_NATIVE_RUN_POLL_COMPLETE;
    case SIM_RUN_ENQUEUED:
        return sim_device_pool_finished(r->pool, x->launch_id) ? SIMPLER_NATIVE_RUN_POLL_COMPLETE
                                                               : SIMPLER_NATIVE_RUN_POLL_NOT_READY;
    default:
        return pto_fail(PTO_ERR_WRONG_PHASE, "query: the run was never enqueued");
    }
}

/* The executor's message for the run's error (PtoAicpuArgs.message_dev), or NULL. */
static const char *device_message(Runner *r, const PtoAicpuArgs *args)
{
    const char *m = (const char *)(uintptr_t)args->message_dev;
    if (m == NULL || !alloc_table_contains(&r->memory, (uintptr_t)m, 512) || memchr(m, '\0', 512) == NULL || *m == '\0')
        return NULL;
    return m;
}

int runner_drain(Runner *r, RunExec *exec)
{
    SimRunExec *x = sim_exec(exec);
    switch (exec_state(x)) {
    case SIM_RUN_FAILED:
        return x->sticky_error;
    case SIM_RUN_DRAINED:
        return x->result;
    case SIM_RUN_ENQUEUED:
        break;
    default:
        return pto_fail(PTO_ERR_WRONG_PHASE, "drain: the run was never enqueued");
    }
    if (sim_device_pool_wait(r->pool, x->launch_id, x->timeout_ms) == PTO_ERR_TIMEOUT) {
        /* stop dispatching, then let the kernels in flight return */
        __atomic_store_n(&x->args->status.stop_request, PTO_ERR_TIMEOUT, __ATOMIC_RELEASE);
        sim_device_pool_wait(r->pool, x->launch_id, 0);
    }
    x->result = x->args->status.error_code;
    set_exec_state(x, SIM_RUN_DRAINED);
    if (x->result == PTO_ERR_TIMEOUT)
        pto_fail(PTO_ERR_TIMEOUT, "the run exceeded its timeout of %u ms; %llu task(s) had completed", x->timeout_ms,
                 (unsigned long long)x->args->status.tasks_completed);
    else if (x->result == PTO_ERR_KERNEL_FAULT)
        pto_fail(PTO_ERR_KERNEL_FAULT, "task %llu (func_id %u) failed: its kernel returned %d",
                 (unsigned long long)x->args->status.task_id, x->args->status.func_id, x->args->status.kernel_code);
    else if (x->result != PTO_OK && device_message(r, x->args) != NULL)
        pto_fail(x->result, "the run failed (%d): %s", x->result, device_message(r, x->args));
    else if (x->result != PTO_OK)
        pto_fail(x->result, "the device reported error %d for the run", x->result);
    return x->result;
}
