/*
 * The emulated device driver: devices, the handle registry, device memory,
 * images, host views, reset and close, and the exported table (pto_driver.h).
 * docs/driver.md describes the emulation's choices.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "util/env.h"
#include "emudrv/emudrv.h"
#include "ptorun/pto_export.h"
#include "ptorun/pto_runtime_c_api.h"

/* ---- the handle registry ------------------------------------------------
   Every live device, stream and image is on a list here; a call takes a use
   of its handle (users) after finding it, and destroy/close/reset unlink the
   handle first and then wait for its uses to end, so nothing is freed under
   a running call and a stale handle is refused. */
static pthread_mutex_t g_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_registry_cond = PTHREAD_COND_INITIALIZER; /* a use ended */
static PtoDrvDevice *g_devices;
static PtoDrvStream *g_streams;
static PtoDrvImage *g_images;

#define LIST_FIND(head, item, found)                                          \
    do {                                                                      \
        found = 0;                                                            \
        for (__typeof__(head) it_ = (head); it_ != NULL; it_ = it_->reg_next) \
            if (it_ == (item)) {                                              \
                found = 1;                                                    \
                break;                                                        \
            }                                                                 \
    } while (0)

#define LIST_UNLINK(head, item)                                               \
    do {                                                                      \
        for (__typeof__(head) *at_ = &(head); *at_ != NULL; at_ = &(*at_)->reg_next) \
            if (*at_ == (item)) {                                             \
                *at_ = (item)->reg_next;                                      \
                break;                                                        \
            }                                                                 \
    } while (0)

static int device_acquire(PtoDrvDevice *dev)
{
    int found;
    pthread_mutex_lock(&g_registry_lock);
    LIST_FIND(g_devices, dev, found);
    if (found && (dev->dead || dev->resetting))
        found = 0;
    if (found)
        dev->users++;
    pthread_mutex_unlock(&g_registry_lock);
    return found ? PTO_DRV_OK : PTO_DRV_ERR_INVALID;
}

static void device_release(PtoDrvDevice *dev)
{
    pthread_mutex_lock(&g_registry_lock);
    if (--dev->users <= 1)
        pthread_cond_broadcast(&g_registry_cond);
    pthread_mutex_unlock(&g_registry_lock);
}

int emu_stream_acquire(PtoDrvStream *s)
{
    int found;
    pthread_mutex_lock(&g_registry_lock);
    LIST_FIND(g_streams, s, found);
    if (found && (s->dead || s->dev->resetting || s->dev->dead))
        found = 0;
    if (found)
        s->users++;
    pthread_mutex_unlock(&g_registry_lock);
    return found ? PTO_DRV_OK : PTO_DRV_ERR_INVALID;
}

void emu_stream_release(PtoDrvStream *s)
{
    pthread_mutex_lock(&g_registry_lock);
    if (--s->users <= 1)
        pthread_cond_broadcast(&g_registry_cond);
    pthread_mutex_unlock(&g_registry_lock);
}

int emu_image_acquire(PtoDrvImage *img, PtoDrvDevice *dev)
{
    int found;
    pthread_mutex_lock(&g_registry_lock);
    LIST_FIND(g_images, img, found);
    if (found && (img->dead || img->dev != dev))
        found = 0;
    if (found)
        img->users++;
    pthread_mutex_unlock(&g_registry_lock);
    return found ? PTO_DRV_OK : PTO_DRV_ERR_INVALID;
}

void emu_image_release(PtoDrvImage *img)
{
    pthread_mutex_lock(&g_registry_lock);
    if (--img->users <= 1)
        pthread_cond_broadcast(&g_registry_cond);
    pthread_mutex_unlock(&g_registry_lock);
}

void emu_stream_register(PtoDrvStream *s)
{
    pthread_mutex_lock(&g_registry_lock);
    s->reg_next = g_streams;
    g_streams = s;
    pthread_mutex_unlock(&g_registry_lock);
}

int emu_stream_unregister(PtoDrvStream *s)
{
    pthread_mutex_lock(&g_registry_lock);
    if (s->dead) {
        pthread_mutex_unlock(&g_registry_lock);
        return PTO_DRV_ERR_INVALID;
    }
    s->dead = 1;
    LIST_UNLINK(g_streams, s);
    s->dev->destroys++;
    while (s->users > 1)
        pthread_cond_wait(&g_registry_cond, &g_registry_lock);
    s->users = 0;
    pthread_mutex_unlock(&g_registry_lock);
    return PTO_DRV_OK;
}

void emu_stream_destroyed(PtoDrvDevice *dev)
{
    pthread_mutex_lock(&g_registry_lock);
    dev->destroys--;
    pthread_cond_broadcast(&g_registry_cond);
    pthread_mutex_unlock(&g_registry_lock);
}

/* A call's first step on a device: a use of it; DEVICE_LOST when it is lost or
   the armed fault makes it so now. */
static int device_enter(PtoDrvDevice *dev)
{
    int rc = device_acquire(dev);
    if (rc != PTO_DRV_OK)
        return rc;
    if (atomic_load(&dev->lost)) {
        device_release(dev);
        return PTO_DRV_ERR_DEVICE_LOST;
    }
    if (emu_fault_hit(PTO_EMU_FAULT_DEVICE_LOST)) {
        emu_device_lose(dev);
        device_release(dev);
        return PTO_DRV_ERR_DEVICE_LOST;
    }
    return PTO_DRV_OK;
}

int emu_device_enter(PtoDrvDevice *dev)
{
    return device_enter(dev);
}

void emu_device_exit(PtoDrvDevice *dev)
{
    device_release(dev);
}

int emu_device_addresses(PtoDrvDevice *dev, uint64_t addr, size_t n)
{
    return alloc_table_contains(&dev->memory, (uintptr_t)addr, n) ||
           alloc_table_contains(&dev->windows, (uintptr_t)addr, n);
}

int emu_device_pin(PtoDrvDevice *dev, uint64_t addr, size_t n, AllocPin *pin)
{
    return alloc_table_pin(&dev->memory, (uintptr_t)addr, n, pin) == PTO_OK ||
           alloc_table_pin(&dev->windows, (uintptr_t)addr, n, pin) == PTO_OK;
}

int emu_stream_enter(PtoDrvStream *s)
{
    int rc = emu_stream_acquire(s);
    if (rc != PTO_DRV_OK)
        return rc;
    if (atomic_load(&s->dev->lost)) {
        emu_stream_release(s);
        return PTO_DRV_ERR_DEVICE_LOST;
    }
    if (emu_fault_hit(PTO_EMU_FAULT_DEVICE_LOST)) {
        emu_device_lose(s->dev);
        emu_stream_release(s);
        return PTO_DRV_ERR_DEVICE_LOST;
    }
    return PTO_DRV_OK;
}

void emu_device_lose(PtoDrvDevice *dev)
{
    pthread_mutex_lock(&dev->lock);
    atomic_store(&dev->lost, 1);
    /* engines drop queued work of a lost device; hangs end now */
    for (PtoDrvStream *s = dev->streams; s != NULL; s = s->dev_next) {
        if (s->current != NULL && s->current->hang)
            s->current->released = 1;
        pthread_cond_broadcast(&s->idle_cond);
    }
    pthread_cond_broadcast(&dev->launch_cond);
    pthread_mutex_unlock(&dev->lock);
}

/* ---- devices ------------------------------------------------------------- */

static int open_device(int device_id, PtoDrvDevice **out)
{
    if (out == NULL || device_id < 0 || device_id > EMU_MAX_DEVICE_ID)
        return PTO_DRV_ERR_INVALID;
    PtoDrvDevice *dev = calloc(1, sizeof *dev);
    if (dev == NULL)
        return PTO_DRV_ERR_OUT_OF_MEMORY;
    dev->device_id = device_id;
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0)
        goto fail_dev;
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (pthread_mutex_init(&dev->lock, NULL) != 0)
        goto fail_attr;
    if (pthread_cond_init(&dev->engine_cond, NULL) != 0)
        goto fail_lock;
    if (pthread_cond_init(&dev->part_cond, NULL) != 0)
        goto fail_engine_cond;
    if (pthread_cond_init(&dev->launch_cond, &attr) != 0)
        goto fail_part_cond;
    /* a capacity of 0 in the environment means no limit */
    if (alloc_table_init(&dev->memory, pto_env_size(EMU_MEMORY_ENV, EMU_DEFAULT_MEMORY)) != PTO_OK)
        goto fail_launch_cond;
    if (alloc_table_init(&dev->windows, 0) != PTO_OK)
        goto fail_memory;
    if (library_cache_init(&dev->images, "device image") != PTO_OK)
        goto fail_windows;
    pthread_condattr_destroy(&attr);

    pthread_mutex_lock(&g_registry_lock);
    dev->reg_next = g_devices;
    g_devices = dev;
    pthread_mutex_unlock(&g_registry_lock);
    atomic_fetch_add(&emu_counters()->devices_open, 1);
    *out = dev;
    return PTO_DRV_OK;

fail_windows:
    alloc_table_destroy(&dev->windows);
fail_memory:
    alloc_table_destroy(&dev->memory);
fail_launch_cond:
    pthread_cond_destroy(&dev->launch_cond);
fail_part_cond:
    pthread_cond_destroy(&dev->part_cond);
fail_engine_cond:
    pthread_cond_destroy(&dev->engine_cond);
fail_lock:
    pthread_mutex_destroy(&dev->lock);
fail_attr:
    pthread_condattr_destroy(&attr);
fail_dev:
    free(dev);
    return PTO_DRV_ERR_OUT_OF_MEMORY;
}

static void free_memory_block(uintptr_t base, size_t size, void *arg)
{
    (void)arg;
    free((void *)base);
    atomic_fetch_sub(&emu_counters()->memory_committed, size);
    atomic_fetch_sub(&emu_counters()->allocations, 1);
}

/* Everything a device holds, gone: what reset and close share. The caller
   made sure no new call can reach the device (resetting or dead). */
static void device_teardown(PtoDrvDevice *dev)
{
    /* 1. no new lookups of its streams and images; the streams this teardown
          frees (a stream_destroy past unregister frees its own) */
    PtoDrvStream *killed = NULL;
    pthread_mutex_lock(&g_registry_lock);
    for (PtoDrvStream *s = g_streams, *next; s != NULL; s = next) {
        next = s->reg_next;
        if (s->dev == dev && !s->dead) {
            s->dead = 1;
            LIST_UNLINK(g_streams, s);
            s->kill_next = killed;
            killed = s;
        }
    }
    for (PtoDrvImage *img = g_images, *next; img != NULL; img = next) {
        next = img->reg_next;
        if (img->dev == dev && !img->dead) {
            img->dead = 1;
            LIST_UNLINK(g_images, img);
        }
    }
    pthread_mutex_unlock(&g_registry_lock);

    /* 2. no work left on the device */
    pthread_mutex_lock(&dev->lock);
    emu_streams_abort(dev);
    pthread_mutex_unlock(&dev->lock);

    /* 3. no call still using a stream or image (a synchronize woke up in 2) */
    pthread_mutex_lock(&g_registry_lock);
    for (;;) {
        int busy = dev->destroys > 0;
        for (PtoDrvStream *s = killed; s != NULL; s = s->kill_next)
            busy |= s->users > 0;
        for (PtoDrvImage *img = dev->image_list; img != NULL; img = img->dev_next)
            busy |= img->users > 0;
        if (!busy)
            break;
        pthread_cond_wait(&g_registry_cond, &g_registry_lock);
    }
    pthread_mutex_unlock(&g_registry_lock);

    /* 4. the device's threads end */
    emu_threads_join(dev);

    /* 5. free what it held */
    pthread_mutex_lock(&dev->lock);
    for (PtoDrvStream *s = killed, *next; s != NULL; s = next) {
        next = s->kill_next;
        emu_stream_free(s);
    }
    while (dev->image_list != NULL) {
        PtoDrvImage *img = dev->image_list;
        dev->image_list = img->dev_next;
        library_cache_release(&dev->images, img->handle);
        free(img);
        atomic_fetch_sub(&emu_counters()->images, 1);
    }
    atomic_fetch_sub(&emu_counters()->host_registrations, dev->view_count);
    dev->view_count = 0;
    pthread_mutex_unlock(&dev->lock);
    alloc_table_drain(&dev->memory, free_memory_block, NULL);
}

static int close_device(PtoDrvDevice *dev)
{
    int found;
    pthread_mutex_lock(&g_registry_lock);
    LIST_FIND(g_devices, dev, found);
    if (!found || dev->dead) {
        pthread_mutex_unlock(&g_registry_lock);
        return PTO_DRV_ERR_INVALID;
    }
    dev->dead = 1;
    LIST_UNLINK(g_devices, dev);
    while (dev->users > 0)
        pthread_cond_wait(&g_registry_cond, &g_registry_lock);
    pthread_mutex_unlock(&g_registry_lock);

    emu_comm_forget_device(dev);
    device_teardown(dev);
    library_cache_destroy(&dev->images);
    alloc_table_destroy(&dev->windows);
    alloc_table_destroy(&dev->memory);
    free(dev->views);
    pthread_cond_destroy(&dev->launch_cond);
    pthread_cond_destroy(&dev->part_cond);
    pthread_cond_destroy(&dev->engine_cond);
    pthread_mutex_destroy(&dev->lock);
    free(dev);
    atomic_fetch_sub(&emu_counters()->devices_open, 1);
    return PTO_DRV_OK;
}

/* Works on a lost device too: that is how a device comes back. */
static int reset_device(PtoDrvDevice *dev)
{
    int found;
    pthread_mutex_lock(&g_registry_lock);
    LIST_FIND(g_devices, dev, found);
    if (!found || dev->dead || dev->resetting) {
        pthread_mutex_unlock(&g_registry_lock);
        return PTO_DRV_ERR_INVALID;
    }
    dev->resetting = 1;
    while (dev->users > 0)
        pthread_cond_wait(&g_registry_cond, &g_registry_lock);
    pthread_mutex_unlock(&g_registry_lock);

    emu_comm_forget_device(dev);
    device_teardown(dev);
    atomic_store(&dev->lost, 0);

    pthread_mutex_lock(&g_registry_lock);
    dev->resetting = 0;
    pthread_mutex_unlock(&g_registry_lock);
    return PTO_DRV_OK;
}

/* ---- device memory ------------------------------------------------------- */

static int mem_alloc(PtoDrvDevice *dev, size_t bytes, uint64_t *dev_addr)
{
    int rc = device_enter(dev);
    if (rc != PTO_DRV_OK)
        return rc;
    void *block = NULL;
    if (dev_addr == NULL || bytes == 0) {
        rc = PTO_DRV_ERR_INVALID;
        goto out;
    }
    if (emu_fault_hit(PTO_EMU_FAULT_ALLOC) || alloc_table_reserve(&dev->memory, bytes) != PTO_OK) {
        rc = PTO_DRV_ERR_OUT_OF_MEMORY;
        goto out;
    }
    if (posix_memalign(&block, EMU_MEM_ALIGN, bytes) != 0) {
        alloc_table_unreserve(&dev->memory, bytes);
        rc = PTO_DRV_ERR_OUT_OF_MEMORY;
        goto out;
    }
    if (alloc_table_insert(&dev->memory, (uintptr_t)block, bytes) != PTO_OK) {
        free(block);
        rc = PTO_DRV_ERR_OUT_OF_MEMORY;
        goto out;
    }
    atomic_fetch_add(&emu_counters()->memory_committed, bytes);
    atomic_fetch_add(&emu_counters()->allocations, 1);
    *dev_addr = (uint64_t)(uintptr_t)block;
out:
    device_release(dev);
    return rc;
}

/* Host views inside [base, base+size) die with the allocation. dev->lock held. */
static void drop_views_in(PtoDrvDevice *dev, uint64_t base, size_t size)
{
    size_t kept = 0;
    for (size_t i = 0; i < dev->view_count; i++) {
        if (dev->views[i].dev_addr >= base && dev->views[i].dev_addr - base < size)
            atomic_fetch_sub(&emu_counters()->host_registrations, 1);
        else
            dev->views[kept++] = dev->views[i];
    }
    dev->view_count = kept;
}

static int mem_free(PtoDrvDevice *dev, uint64_t dev_addr)
{
    int rc = device_enter(dev);
    if (rc != PTO_DRV_OK)
        return rc;
    size_t size = 0;
    if (alloc_table_remove(&dev->memory, (uintptr_t)dev_addr, &size) != PTO_OK) {
        rc = PTO_DRV_ERR_INVALID;
    } else {
        pthread_mutex_lock(&dev->lock);
        drop_views_in(dev, dev_addr, size);
        pthread_mutex_unlock(&dev->lock);
        free_memory_block((uintptr_t)dev_addr, size, NULL);
    }
    device_release(dev);
    return rc;
}

/* Checks a synchronous copy's device range and host pointer, then the fault;
 * on PTO_DRV_OK the range is pinned (mem_free and window frees wait for the
 * copy) and the device entered, both given back by copy_exit. */
static int copy_enter(PtoDrvDevice *dev, uint64_t dev_addr, const void *host, size_t n, PtoEmuFault fault,
                      AllocPin *pin)
{
    int rc = device_enter(dev);
    if (rc != PTO_DRV_OK)
        return rc;
    if ((host == NULL && n > 0) || !emu_device_pin(dev, dev_addr, n, pin)) {
        rc = PTO_DRV_ERR_INVALID;
        goto fail_range;
    }
    if (fault != PTO_EMU_FAULT_NONE && n > 0 && emu_fault_hit(fault)) {
        rc = PTO_DRV_ERR_COPY;
        goto fail_fault;
    }
    return PTO_DRV_OK;

fail_fault:
    alloc_table_unpin(pin);
fail_range:
    device_release(dev);
    return rc;
}

static void copy_exit(PtoDrvDevice *dev, const AllocPin *pin)
{
    alloc_table_unpin(pin);
    device_release(dev);
}

static int memcpy_h2d(PtoDrvDevice *dev, uint64_t dst, const void *src, size_t n)
{
    AllocPin pin;
    int rc = copy_enter(dev, dst, src, n, PTO_EMU_FAULT_H2D, &pin);
    if (rc != PTO_DRV_OK)
        return rc;
    if (n > 0)
        memcpy((void *)(uintptr_t)dst, src, n);
    copy_exit(dev, &pin);
    return PTO_DRV_OK;
}

static int memcpy_d2h(PtoDrvDevice *dev, void *dst, uint64_t src, size_t n)
{
    AllocPin pin;
    int rc = copy_enter(dev, src, dst, n, PTO_EMU_FAULT_D2H, &pin);
    if (rc != PTO_DRV_OK)
        return rc;
    if (n > 0)
        memcpy(dst, (const void *)(uintptr_t)src, n);
    copy_exit(dev, &pin);
    return PTO_DRV_OK;
}

static int memset_d(PtoDrvDevice *dev, uint64_t dst, int value, size_t n)
{
    static const char any_host = 0;
    AllocPin pin;
    int rc = copy_enter(dev, dst, &any_host, n, PTO_EMU_FAULT_NONE, &pin);
    if (rc != PTO_DRV_OK)
        return rc;
    if (n > 0)
        memset((void *)(uintptr_t)dst, value, n);
    copy_exit(dev, &pin);
    return PTO_DRV_OK;
}

/* ---- host views -----------------------------------------------------------
   Device memory is host memory here, so the view is the device address
   itself; registrations are still tracked so an unregister of something never
   registered is refused and the accounting shows leaks. */

static int host_register(PtoDrvDevice *dev, uint64_t dev_addr, size_t n, void **host_view)
{
    int rc = device_enter(dev);
    if (rc != PTO_DRV_OK)
        return rc;
    if (host_view == NULL || n == 0 || !emu_device_addresses(dev, dev_addr, n)) {
        rc = PTO_DRV_ERR_INVALID;
        goto out;
    }
    pthread_mutex_lock(&dev->lock);
    if (dev->view_count == dev->view_cap) {
        size_t cap = dev->view_cap ? dev->view_cap * 2 : 16;
        EmuHostView *grown = realloc(dev->views, cap * sizeof *grown);
        if (grown == NULL) {
            pthread_mutex_unlock(&dev->lock);
            rc = PTO_DRV_ERR_OUT_OF_MEMORY;
            goto out;
        }
        dev->views = grown;
        dev->view_cap = cap;
    }
    dev->views[dev->view_count++] = (EmuHostView){ dev_addr, n };
    pthread_mutex_unlock(&dev->lock);
    atomic_fetch_add(&emu_counters()->host_registrations, 1);
    *host_view = (void *)(uintptr_t)dev_addr;
out:
    device_release(dev);
    return rc;
}

static int host_unregister(PtoDrvDevice *dev, void *host_view)
{
    int rc = device_enter(dev);
    if (rc != PTO_DRV_OK)
        return rc;
    rc = PTO_DRV_ERR_INVALID;
    pthread_mutex_lock(&dev->lock);
    for (size_t i = 0; i < dev->view_count; i++) {
        if (dev->views[i].dev_addr == (uint64_t)(uintptr_t)host_view) {
            dev->views[i] = dev->views[--dev->view_count];
            atomic_fetch_sub(&emu_counters()->host_registrations, 1);
            rc = PTO_DRV_OK;
            break;
        }
    }
    pthread_mutex_unlock(&dev->lock);
    device_release(dev);
    return rc;
}

/* ---- images ---------------------------------------------------------------
   Each device loads its own copy (memory file + dlopen RTLD_LOCAL through the
   device's library cache), so two devices share no device-side globals. */

static int load_image(PtoDrvDevice *dev, const void *bytes, size_t size, PtoDrvImage **out)
{
    int rc = device_enter(dev);
    if (rc != PTO_DRV_OK)
        return rc;
    void *handle = NULL;
    PtoDrvImage *img = NULL;
    if (out == NULL || bytes == NULL || size == 0) {
        rc = PTO_DRV_ERR_INVALID;
        goto out;
    }
    img = calloc(1, sizeof *img);
    if (img == NULL) {
        rc = PTO_DRV_ERR_OUT_OF_MEMORY;
        goto out;
    }
    int load = library_cache_acquire(&dev->images, bytes, size, &handle);
    if (load != PTO_OK) {
        rc = load == PTO_ERR_OUT_OF_MEMORY ? PTO_DRV_ERR_OUT_OF_MEMORY : PTO_DRV_ERR_INVALID;
        goto out_free;
    }
    img->dev = dev;
    img->handle = handle;
    pthread_mutex_lock(&dev->lock);
    img->dev_next = dev->image_list;
    dev->image_list = img;
    pthread_mutex_unlock(&dev->lock);
    pthread_mutex_lock(&g_registry_lock);
    img->reg_next = g_images;
    g_images = img;
    pthread_mutex_unlock(&g_registry_lock);
    atomic_fetch_add(&emu_counters()->images, 1);
    *out = img;
    goto out;
out_free:
    free(img);
out:
    device_release(dev);
    return rc;
}

/* Refused (INVALID) while a launch of the image is queued or running. */
static int unload_image(PtoDrvDevice *dev, PtoDrvImage *img)
{
    int rc = device_enter(dev);
    if (rc != PTO_DRV_OK)
        return rc;
    if (emu_image_acquire(img, dev) != PTO_DRV_OK) {
        device_release(dev);
        return PTO_DRV_ERR_INVALID;
    }
    pthread_mutex_lock(&dev->lock);
    int busy = img->launches_pending > 0;
    pthread_mutex_unlock(&dev->lock);
    pthread_mutex_lock(&g_registry_lock);
    if (busy || img->dead) {
        img->users--;
        pthread_cond_broadcast(&g_registry_cond);
        pthread_mutex_unlock(&g_registry_lock);
        device_release(dev);
        return PTO_DRV_ERR_INVALID;
    }
    img->dead = 1;
    LIST_UNLINK(g_images, img);
    while (img->users > 1)
        pthread_cond_wait(&g_registry_cond, &g_registry_lock);
    pthread_mutex_unlock(&g_registry_lock);

    pthread_mutex_lock(&dev->lock);
    for (PtoDrvImage **at = &dev->image_list; *at != NULL; at = &(*at)->dev_next)
        if (*at == img) {
            *at = img->dev_next;
            break;
        }
    pthread_mutex_unlock(&dev->lock);
    library_cache_release(&dev->images, img->handle);
    free(img);
    atomic_fetch_sub(&emu_counters()->images, 1);
    device_release(dev);
    return PTO_DRV_OK;
}

static int image_symbol(PtoDrvDevice *dev, PtoDrvImage *img, const char *name, uint64_t *dev_addr)
{
    int rc = device_enter(dev);
    if (rc != PTO_DRV_OK)
        return rc;
    if (name == NULL || dev_addr == NULL || emu_image_acquire(img, dev) != PTO_DRV_OK) {
        device_release(dev);
        return PTO_DRV_ERR_INVALID;
    }
    char why[128];
    void *sym = library_cache_symbol(img->handle, name, strlen(name), why, sizeof why);
    if (sym == NULL)
        rc = PTO_DRV_ERR_INVALID;
    else
        *dev_addr = (uint64_t)(uintptr_t)sym;
    emu_image_release(img);
    device_release(dev);
    return rc;
}

/* ---- streams: creation needs the device ---------------------------------- */

static int stream_create(PtoDrvDevice *dev, PtoDrvStream **out)
{
    int rc = device_enter(dev);
    if (rc != PTO_DRV_OK)
        return rc;
    rc = out == NULL ? PTO_DRV_ERR_INVALID : emu_stream_create(dev, out);
    device_release(dev);
    return rc;
}

/* ---- the table ------------------------------------------------------------ */

static const char *error_string(int code)
{
    switch (code) {
    case PTO_DRV_OK: return "success";
    case PTO_DRV_NOT_READY: return "work still queued or running";
    case PTO_DRV_ERR_INVALID: return "invalid argument or handle";
    case PTO_DRV_ERR_OUT_OF_MEMORY: return "device memory exhausted";
    case PTO_DRV_ERR_COPY: return "host/device copy failed";
    case PTO_DRV_ERR_LAUNCH: return "launch refused by the device";
    case PTO_DRV_ERR_STREAM: return "an operation on the stream failed";
    case PTO_DRV_ERR_TIMEOUT: return "not done within the timeout";
    case PTO_DRV_ERR_DEVICE_LOST: return "device lost (reset required)";
    case PTO_DRV_ERR_UNSUPPORTED: return "not supported by this device";
    case PTO_DRV_ERR_PEER_LOST: return "a peer rank is gone or the comm group broke";
    case PTO_DRV_ERR_MISMATCH: return "the comm group's members asked for different things";
    default: return "unknown driver error";
    }
}

static const PtoDriverApi emudrv_api = {
    .abi_version = PTO_DRIVER_ABI_VERSION,
    .struct_size = sizeof(PtoDriverApi),
    .name = "ptorun emulated device driver",
    .open_device = open_device,
    .close_device = close_device,
    .reset_device = reset_device,
    .load_image = load_image,
    .unload_image = unload_image,
    .image_symbol = image_symbol,
    .mem_alloc = mem_alloc,
    .mem_free = mem_free,
    .memcpy_h2d = memcpy_h2d,
    .memcpy_d2h = memcpy_d2h,
    .memset_d = memset_d,
    .memcpy_h2d_async = emu_memcpy_h2d_async,
    .memcpy_d2h_async = emu_memcpy_d2h_async,
    .memset_d_async = emu_memset_d_async,
    .host_register = host_register,
    .host_unregister = host_unregister,
    .stream_create = stream_create,
    .stream_destroy = emu_stream_destroy,
    .launch = emu_launch,
    .stream_query = emu_stream_query,
    .stream_synchronize = emu_stream_synchronize,
    .error_string = error_string,
    .comm_join = emu_comm_join,
    .comm_leave = emu_comm_leave,
    .comm_barrier = emu_comm_barrier,
    .comm_window_alloc = emu_comm_window_alloc,
    .comm_window_free = emu_comm_window_free,
    .comm_window_addrs = emu_comm_window_addrs,
    .comm_last_message = emu_comm_last_message,
    .comm_window_break = emu_comm_window_break,
    .comm_window_span = emu_comm_window_span,
    .comm_window_slice = emu_comm_window_slice,
};

PTO_EXPORT const PtoDriverApi *pto_driver_api(void)
{
    return &emudrv_api;
}
