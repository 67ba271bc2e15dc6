/* The device resources every runner keeps (device_resources.h), and their
 * HostApi entries (platform/host_api_ops.c): one home for what the sim and
 * onboard runners share. Each entry refuses a NULL runner or pointer and, on
 * failure, leaves its out-parameters at their "nothing" value ({NULL, 0},
 * NULL) so a caller that ignores the code still reads nothing stale. */
#include "platform/device_resources.h"

#include <stdlib.h>
#include <string.h>

#include "util/last_error.h"
#include "platform/runner_core.h"

void device_resources_init(DeviceResources *res)
{
    memset(res, 0, sizeof *res);
}

void device_resources_forget(DeviceResources *res)
{
    memset(res->banks, 0, sizeof res->banks);
    memset(res->retained, 0, sizeof res->retained);
    free(res->prebuilt.key);
    memset(&res->prebuilt, 0, sizeof res->prebuilt);
    for (size_t i = 0; i < res->upload_count; i++)
        free(res->uploads[i].host);
    free(res->uploads);
    res->uploads = NULL;
    res->upload_count = res->upload_cap = 0;
}

int device_check_slot(uint32_t slot, const char *fn)
{
    if (slot >= DEVICE_RESOURCE_SLOTS)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: pipeline slot %u is outside 0..%u", fn, slot,
                        DEVICE_RESOURCE_SLOTS - 1);
    return PTO_OK;
}

const char *device_resources_owned(const DeviceResources *res, uint64_t dev)
{
    for (uint32_t b = 0; b < DEVICE_RESOURCE_BANKS; b++) {
        const DeviceBank *bank = &res->banks[b];
        if (dev == bank->gm_heap.base || dev == bank->gm_sm.base || dev == bank->runtime_arena.base)
            return "an arena";
    }
    for (size_t i = 0; i < res->upload_count; i++)
        if (dev == res->uploads[i].dev)
            return "a callable upload";
    return NULL;
}

void device_resources_forget_retained(DeviceResources *res, uint64_t dev)
{
    for (uint32_t s = 0; s < DEVICE_RESOURCE_SLOTS; s++)
        if (res->retained[s].base == dev)
            res->retained[s] = (DeviceArena){ 0, 0 };
}

/* ---- retained buffers (per slot) ----------------------------------------------- */

int runner_get_retained_temp_buffer(void *runner, uint32_t slot, void **dev, size_t *size)
{
    if (dev != NULL)
        *dev = NULL;
    if (size != NULL)
        *size = 0;
    if (runner == NULL || dev == NULL || size == NULL)
        return runner_refuse_null("get_retained_temp_buffer");
    int rc = device_check_slot(slot, "get_retained_temp_buffer");
    if (rc != PTO_OK)
        return rc;
    RunnerCore *c = runner_core(runner);
    pthread_mutex_lock(&c->lock);
    *dev = dev_ptr(c->resources.retained[slot].base);
    *size = c->resources.retained[slot].size;
    pthread_mutex_unlock(&c->lock);
    return PTO_OK;
}

/* Records the slot's buffer (NULL clears it). The caller frees the previous one
 * itself (device_free) if it replaces it; finalize frees the recorded one. */
int runner_set_retained_temp_buffer(void *runner, uint32_t slot, void *dev, size_t size)
{
    if (runner == NULL)
        return runner_refuse_null("set_retained_temp_buffer");
    int rc = device_check_slot(slot, "set_retained_temp_buffer");
    if (rc != PTO_OK)
        return rc;
    /* a check, not a pin: the slot records the address; runs touch it later */
    if (dev != NULL && (rc = runner_check_inside(runner, "set_retained_temp_buffer", dev_addr(dev), size)) != PTO_OK)
        return rc;
    RunnerCore *c = runner_core(runner);
    pthread_mutex_lock(&c->lock);
    c->resources.retained[slot] = (DeviceArena){ dev_addr(dev), dev == NULL ? 0 : size };
    pthread_mutex_unlock(&c->lock);
    return PTO_OK;
}

uint64_t runner_retained_temp_addr(Runner *r, uint32_t slot)
{
    if (slot >= DEVICE_RESOURCE_SLOTS)
        return 0;
    RunnerCore *c = runner_core(r);
    pthread_mutex_lock(&c->lock);
    uint64_t addr = c->resources.retained[slot].base;
    pthread_mutex_unlock(&c->lock);
    return addr;
}

/* ---- arenas (per bank) ---------------------------------------------------------- */

static int check_bank(uint32_t bank, const char *fn)
{
    if (bank >= DEVICE_RESOURCE_BANKS)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: arena bank %u is outside 0..%u", fn, bank,
                        DEVICE_RESOURCE_BANKS - 1);
    return PTO_OK;
}

static void drop_prebuilt_cache(DeviceResources *res)
{
    free(res->prebuilt.key);
    memset(&res->prebuilt, 0, sizeof res->prebuilt);
}

/* Caller holds the lock. */
static void release_arena(Runner *r, DeviceArena *a)
{
    runner_free(r, a->base);
    *a = (DeviceArena){ 0, 0 };
}

/* Caller holds the lock. Grows an arena to at least `want` bytes (0 or already
 * large enough: kept). */
static int grow_arena(Runner *r, DeviceArena *a, size_t want)
{
    if (want == 0 || want <= a->size)
        return PTO_OK;
    release_arena(r, a);
    uint64_t p = 0;
    int rc = runner_alloc(r, want, &p);
    if (rc != PTO_OK)
        return rc;
    *a = (DeviceArena){ p, want };
    return PTO_OK;
}

int runner_setup_static_arena(void *runner, uint32_t bank, size_t gm_heap, size_t gm_sm, size_t runtime_arena)
{
    if (runner == NULL)
        return runner_refuse_null("setup_static_arena");
    int rc = check_bank(bank, "setup_static_arena");
    if (rc != PTO_OK)
        return rc;
    RunnerCore *c = runner_core(runner);
    pthread_mutex_lock(&c->lock);
    DeviceBank *b = &c->resources.banks[bank];
    /* a prebuilt image lives in bank 0's runtime arena: a new one (even at the
       same address) leaves the cache stale */
    if (bank == 0 && runtime_arena > b->runtime_arena.size)
        drop_prebuilt_cache(&c->resources);
    if ((rc = grow_arena(runner, &b->gm_heap, gm_heap)) != PTO_OK ||
        (rc = grow_arena(runner, &b->gm_sm, gm_sm)) != PTO_OK ||
        (rc = grow_arena(runner, &b->runtime_arena, runtime_arena)) != PTO_OK) {
        /* a bank is whole or empty */
        release_arena(runner, &b->gm_heap);
        release_arena(runner, &b->gm_sm);
        release_arena(runner, &b->runtime_arena);
        if (bank == 0)
            drop_prebuilt_cache(&c->resources);
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

typedef enum ArenaKind { ARENA_GM_HEAP, ARENA_GM_SM, ARENA_RUNTIME } ArenaKind;

static void *acquire_arena(void *runner, uint32_t bank, size_t *size, ArenaKind which, const char *fn)
{
    size_t ignored;
    if (size == NULL)
        size = &ignored; /* the size is an optional out-parameter */
    *size = 0;
    if (runner == NULL) {
        runner_refuse_null(fn);
        return NULL;
    }
    if (check_bank(bank, fn) != PTO_OK)
        return NULL;
    RunnerCore *c = runner_core(runner);
    pthread_mutex_lock(&c->lock);
    DeviceBank *b = &c->resources.banks[bank];
    DeviceArena *a = which == ARENA_GM_HEAP ? &b->gm_heap : which == ARENA_GM_SM ? &b->gm_sm : &b->runtime_arena;
    uint64_t base = a->base;
    *size = a->size;
    pthread_mutex_unlock(&c->lock);
    if (base == 0)
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: bank %u has none committed (setup_static_arena first)", fn, bank);
    return dev_ptr(base);
}

void *runner_acquire_pooled_gm_heap(void *runner, uint32_t bank, size_t *size)
{
    return acquire_arena(runner, bank, size, ARENA_GM_HEAP, "acquire_pooled_gm_heap");
}

void *runner_acquire_pooled_gm_sm(void *runner, uint32_t bank, size_t *size)
{
    return acquire_arena(runner, bank, size, ARENA_GM_SM, "acquire_pooled_gm_sm");
}

void *runner_acquire_pooled_runtime_arena(void *runner, uint32_t bank, size_t *size)
{
    return acquire_arena(runner, bank, size, ARENA_RUNTIME, "acquire_pooled_runtime_arena");
}

uint64_t runner_arena_bank_gm_heap_base(Runner *r, uint32_t bank)
{
    if (bank >= DEVICE_RESOURCE_BANKS)
        return 0;
    RunnerCore *c = runner_core(r);
    pthread_mutex_lock(&c->lock);
    uint64_t base = c->resources.banks[bank].gm_heap.base;
    pthread_mutex_unlock(&c->lock);
    return base;
}

/* ---- the prebuilt runtime-arena cache (bank 0, one entry) ------------------------ */

/* The arguments both cache entries check alike. */
static int check_cache_call(void *runner, uint32_t bank, const void *key, size_t key_size, const void *image,
                            const char *fn)
{
    if (runner == NULL || image == NULL || (key == NULL && key_size != 0))
        return runner_refuse_null(fn);
    if (bank != 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: the prebuilt runtime-arena cache is bank 0's; bank %u asked",
                        fn, bank);
    return PTO_OK;
}

int runner_lookup_prebuilt_runtime_arena_cache(void *runner, uint32_t bank, uint64_t hash, const void *key,
                                               size_t key_size, void **image)
{
    if (image != NULL)
        *image = NULL;
    int rc = check_cache_call(runner, bank, key, key_size, image, "lookup_prebuilt_runtime_arena_cache");
    if (rc != PTO_OK)
        return rc;
    RunnerCore *c = runner_core(runner);
    pthread_mutex_lock(&c->lock);
    const PrebuiltCache *p = &c->resources.prebuilt;
    int hit = p->valid && p->hash == hash && p->key_size == key_size &&
              (key_size == 0 || memcmp(p->key, key, key_size) == 0);
    *image = hit ? dev_ptr(p->image) : NULL;
    pthread_mutex_unlock(&c->lock);
    return hit;
}

int runner_mark_prebuilt_runtime_arena_cached(void *runner, uint32_t bank, uint64_t hash, const void *key,
                                              size_t key_size, void *image)
{
    const char *fn = "mark_prebuilt_runtime_arena_cached";
    int rc = check_cache_call(runner, bank, key, key_size, image, fn);
    /* a check, not a pin: the cache records the address only */
    if (rc != PTO_OK || (rc = runner_check_inside(runner, fn, dev_addr(image), 0)) != PTO_OK)
        return rc;
    void *copy = NULL;
    if (key_size > 0) {
        if ((copy = malloc(key_size)) == NULL)
            return pto_fail(PTO_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
        memcpy(copy, key, key_size);
    }
    RunnerCore *c = runner_core(runner);
    pthread_mutex_lock(&c->lock);
    drop_prebuilt_cache(&c->resources);
    c->resources.prebuilt = (PrebuiltCache){ 1, hash, copy, key_size, dev_addr(image) };
    pthread_mutex_unlock(&c->lock);
    return PTO_OK;
}

/* ---- callable uploads ------------------------------------------------------------- */

/* Same bytes as an uploaded copy, ignoring the resolved_addr fields the upload
   patched. */
static int same_callable(const CallableUpload *u, const ChipCallableView *v)
{
    const uint8_t *mine = u->host;
    uint32_t from = 0;
    for (uint32_t i = 0; i < v->header.child_count; i++) {
        uint32_t at = chip_callable_resolved_addr_offset(v, i);
        if (memcmp(mine + from, v->bytes + from, at - from) != 0)
            return 0;
        from = at + (uint32_t)sizeof(uint64_t);
    }
    return memcmp(mine + from, v->bytes + from, v->header.total_size - from) == 0;
}

/* Caller holds the lock. */
static void release_libraries(Runner *r, CallableUpload *u)
{
    for (uint32_t i = 0; i < u->library_count; i++)
        platform_release_kernel_library(r, u->libraries[i]);
    u->library_count = 0;
}

/* Caller holds the lock. Writes each child's kernel address into the host
   copy. On failure the library references taken so far are released. */
static int resolve_kernels(Runner *r, const ChipCallableView *v, uint8_t *host, CallableUpload *u)
{
    for (uint32_t i = 0; i < v->header.child_count; i++) {
        ChipCallableChild c;
        chip_callable_child(v, i, &c);
        void *library = NULL;
        uint64_t addr = platform_kernel_address(r, v, i, &c, &library);
        if (library != NULL)
            u->libraries[u->library_count++] = library;
        if (addr == 0) {
            release_libraries(r, u);
            /* the message's code: a device failure (which poisoned) must not read as a bad callable */
            return pto_device_failure(pto_last_error_code()) ? pto_last_error_code() : PTO_ERR_BAD_CALLABLE;
        }
        memcpy(host + chip_callable_resolved_addr_offset(v, i), &addr, sizeof addr);
    }
    return PTO_OK;
}

static int add_upload(DeviceResources *res, CallableUpload u)
{
    CallableUpload *grown =
        runner_grow(res->uploads, &res->upload_cap, res->upload_count, sizeof u, 8, "upload_chip_callable_buffer");
    if (grown == NULL)
        return PTO_ERR_OUT_OF_MEMORY;
    res->uploads = grown;
    res->uploads[res->upload_count++] = u;
    return PTO_OK;
}

/* Caller holds the lock: a resolved copy on the host, then on the device. */
static int upload_new(Runner *r, const ChipCallableView *v, const void *callable, size_t size, uint64_t hash,
                      uint64_t *dev)
{
    CallableUpload u = { .size = size, .hash = hash, .refs = 1 };
    if ((u.host = malloc(size)) == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "upload_chip_callable_buffer: out of host memory");
    memcpy(u.host, callable, size);
    int rc = resolve_kernels(r, v, u.host, &u);
    if (rc != PTO_OK)
        goto fail_resolve;
    if ((rc = runner_alloc(r, size, &u.dev)) != PTO_OK)
        goto fail_alloc;
    /* no pin: the allocation is not handed out yet and device_free needs the lock we hold */
    if ((rc = platform_write(r, u.dev, u.host, size)) != PTO_OK)
        goto fail_copy;
    if ((rc = add_upload(&runner_core(r)->resources, u)) != PTO_OK)
        goto fail_copy;
    *dev = u.dev;
    return PTO_OK;

fail_copy:
    runner_free(r, u.dev);
fail_alloc:
    release_libraries(r, &u);
fail_resolve:
    free(u.host);
    return rc;
}

int runner_upload_chip_callable_buffer(void *runner, const void *callable, size_t size, uint64_t hash, void **dev)
{
    if (dev != NULL)
        *dev = NULL;
    if (runner == NULL || callable == NULL || dev == NULL)
        return runner_refuse_null("upload_chip_callable_buffer");
    ChipCallableView v;
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    if (chip_callable_decode(callable, &v, msg, sizeof msg) != PTO_OK)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "upload_chip_callable_buffer: %s", msg);
    if (size != v.header.total_size)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "upload_chip_callable_buffer: %zu bytes given, total_size is %u",
                        size, v.header.total_size);
    RunnerCore *c = runner_core(runner);
    pthread_mutex_lock(&c->lock);
    int rc = runner_check_up(runner, "upload_chip_callable_buffer");
    if (rc != PTO_OK)
        goto out;
    for (size_t i = 0; i < c->resources.upload_count; i++) {
        CallableUpload *u = &c->resources.uploads[i];
        if (u->hash == hash && u->size == size && same_callable(u, &v)) {
            u->refs++;
            *dev = dev_ptr(u->dev);
            goto out;
        }
    }
    uint64_t a = 0;
    if ((rc = upload_new(runner, &v, callable, size, hash, &a)) == PTO_OK)
        *dev = dev_ptr(a);
out:
    pthread_mutex_unlock(&c->lock);
    return rc;
}

int runner_release_chip_callable_buffer(void *runner, void *dev)
{
    if (runner == NULL || dev == NULL)
        return runner_refuse_null("release_chip_callable_buffer");
    RunnerCore *c = runner_core(runner);
    DeviceResources *res = &c->resources;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < res->upload_count; i++) {
        CallableUpload *u = &res->uploads[i];
        if (u->dev != dev_addr(dev))
            continue;
        if (--u->refs == 0) {
            release_libraries(runner, u);
            runner_free(runner, u->dev);
            free(u->host);
            res->uploads[i] = res->uploads[--res->upload_count];
        }
        pthread_mutex_unlock(&c->lock);
        return PTO_OK;
    }
    pthread_mutex_unlock(&c->lock);
    return pto_fail(PTO_ERR_INVALID_ARGUMENT, "release_chip_callable_buffer: %p is not an uploaded callable", dev);
}
