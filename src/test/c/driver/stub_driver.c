/* A small driver for the onboard runner's tests until (and besides) the
 * emulated driver: implements pto_driver.h in-process. Device memory is host
 * memory (addresses are pointers), images are dlopen'ed from memory files,
 * every stream has one worker thread running its queue in order, a launch runs
 * its entry on block_dim threads. An image without the requested entry (the
 * AICore image's core entry) runs nothing. Not fault-injecting: that is the
 * emulated driver's job. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "device/pto_device_abi.h"
#include "ptorun/pto_driver.h"

#define EXPORT __attribute__((visibility("default")))

struct PtoDrvDevice { int id; };
struct PtoDrvImage { void *handle; int fd; };

typedef struct Op {
    struct Op *next;
    int kind; /* 0 launch, 1 h2d, 2 d2h, 3 memset */
    PtoAicpuEntryFn entry;
    uint64_t args;
    uint32_t dim;
    void *dst;
    const void *src;
    int value;
    size_t n;
} Op;

struct PtoDrvStream {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    pthread_t thread;
    Op *head, *tail;
    int busy, stop;
};

typedef struct Part { PtoAicpuEntryFn entry; uint64_t args; uint32_t idx, count; } Part;

static void *part_main(void *arg)
{
    Part *p = arg;
    p->entry(p->args, p->idx, p->count, NULL);
    return NULL;
}

static void run_op(Op *op)
{
    switch (op->kind) {
    case 0: {
        if (op->entry == NULL)
            break;
        pthread_t t[64];
        Part parts[64];
        uint32_t n = op->dim > 64 ? 64 : op->dim;
        for (uint32_t i = 0; i < n; i++) {
            parts[i] = (Part){ op->entry, op->args, i, n };
            pthread_create(&t[i], NULL, part_main, &parts[i]);
        }
        for (uint32_t i = 0; i < n; i++)
            pthread_join(t[i], NULL);
        break;
    }
    case 1:
    case 2:
        memcpy(op->dst, op->src, op->n);
        break;
    default:
        memset(op->dst, op->value, op->n);
    }
}

static void *stream_main(void *arg)
{
    PtoDrvStream *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (s->head == NULL && !s->stop)
            pthread_cond_wait(&s->cv, &s->lock);
        if (s->head == NULL)
            break;
        Op *op = s->head;
        s->busy = 1;
        pthread_mutex_unlock(&s->lock);
        run_op(op);
        pthread_mutex_lock(&s->lock);
        s->head = op->next;
        if (s->head == NULL)
            s->tail = NULL;
        s->busy = 0;
        free(op);
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static int enqueue(PtoDrvStream *s, Op op)
{
    Op *o = malloc(sizeof *o);
    if (o == NULL)
        return PTO_DRV_ERR_OUT_OF_MEMORY;
    *o = op;
    o->next = NULL;
    pthread_mutex_lock(&s->lock);
    if (s->tail)
        s->tail->next = o;
    else
        s->head = o;
    s->tail = o;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->lock);
    return PTO_DRV_OK;
}

static int open_device(int id, PtoDrvDevice **out)
{
    *out = calloc(1, sizeof **out);
    (*out)->id = id;
    return PTO_DRV_OK;
}
static int close_device(PtoDrvDevice *d) { free(d); return PTO_DRV_OK; }
static int reset_device(PtoDrvDevice *d) { (void)d; return PTO_DRV_OK; }

static int load_image(PtoDrvDevice *d, const void *bytes, size_t size, PtoDrvImage **out)
{
    (void)d;
    int fd = memfd_create("stub-image", MFD_CLOEXEC);
    if (fd < 0 || write(fd, bytes, size) != (ssize_t)size) {
        if (fd >= 0)
            close(fd);
        return PTO_DRV_ERR_INVALID;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        close(fd);
        return PTO_DRV_ERR_INVALID;
    }
    *out = malloc(sizeof **out);
    **out = (PtoDrvImage){ h, fd };
    return PTO_DRV_OK;
}
static int unload_image(PtoDrvDevice *d, PtoDrvImage *i)
{
    (void)d;
    dlclose(i->handle);
    close(i->fd);
    free(i);
    return PTO_DRV_OK;
}
static int image_symbol(PtoDrvDevice *d, PtoDrvImage *i, const char *name, uint64_t *a)
{
    (void)d;
    void *p = dlsym(i->handle, name);
    if (p == NULL)
        return PTO_DRV_ERR_INVALID;
    *a = (uint64_t)(uintptr_t)p;
    return PTO_DRV_OK;
}
static int mem_alloc(PtoDrvDevice *d, size_t n, uint64_t *a)
{
    (void)d;
    void *p = NULL;
    if (posix_memalign(&p, 64, n) != 0)
        return PTO_DRV_ERR_OUT_OF_MEMORY;
    *a = (uint64_t)(uintptr_t)p;
    return PTO_DRV_OK;
}
static int mem_free(PtoDrvDevice *d, uint64_t a) { (void)d; free((void *)(uintptr_t)a); return PTO_DRV_OK; }
static int h2d(PtoDrvDevice *d, uint64_t dst, const void *src, size_t n) { (void)d; memcpy((void *)(uintptr_t)dst, src, n); return 0; }
static int d2h(PtoDrvDevice *d, void *dst, uint64_t src, size_t n) { (void)d; memcpy(dst, (void *)(uintptr_t)src, n); return 0; }
static int mset(PtoDrvDevice *d, uint64_t dst, int v, size_t n) { (void)d; memset((void *)(uintptr_t)dst, v, n); return 0; }
static int h2d_async(PtoDrvStream *s, uint64_t dst, const void *src, size_t n)
{
    return enqueue(s, (Op){ .kind = 1, .dst = (void *)(uintptr_t)dst, .src = src, .n = n });
}
static int d2h_async(PtoDrvStream *s, void *dst, uint64_t src, size_t n)
{
    return enqueue(s, (Op){ .kind = 2, .dst = dst, .src = (const void *)(uintptr_t)src, .n = n });
}
static int mset_async(PtoDrvStream *s, uint64_t dst, int v, size_t n)
{
    return enqueue(s, (Op){ .kind = 3, .dst = (void *)(uintptr_t)dst, .value = v, .n = n });
}
static int host_register(PtoDrvDevice *d, uint64_t a, size_t n, void **view) { (void)d; (void)n; *view = (void *)(uintptr_t)a; return 0; }
static int host_unregister(PtoDrvDevice *d, void *v) { (void)d; (void)v; return 0; }

static int stream_create(PtoDrvDevice *d, PtoDrvStream **out)
{
    (void)d;
    PtoDrvStream *s = calloc(1, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_create(&s->thread, NULL, stream_main, s);
    *out = s;
    return PTO_DRV_OK;
}
static int stream_destroy(PtoDrvStream *s)
{
    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return PTO_DRV_OK;
}
static int launch(PtoDrvStream *s, PtoDrvImage *i, const char *entry, uint64_t args, uint32_t dim)
{
    return enqueue(s, (Op){ .kind = 0, .entry = (PtoAicpuEntryFn)dlsym(i->handle, entry), .args = args, .dim = dim });
}
static int stream_query(PtoDrvStream *s)
{
    pthread_mutex_lock(&s->lock);
    int rc = s->head == NULL ? PTO_DRV_OK : PTO_DRV_NOT_READY;
    pthread_mutex_unlock(&s->lock);
    return rc;
}
static int stream_synchronize(PtoDrvStream *s, uint32_t timeout_ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    int rc = PTO_DRV_OK;
    pthread_mutex_lock(&s->lock);
    while (s->head != NULL)
        if (pthread_cond_timedwait(&s->cv, &s->lock, &until) != 0) {
            rc = s->head == NULL ? PTO_DRV_OK : PTO_DRV_ERR_TIMEOUT;
            break;
        }
    pthread_mutex_unlock(&s->lock);
    return rc;
}
static const char *error_string(int code) { return code == 0 ? "ok" : "stub driver error"; }

static const PtoDriverApi api = {
    PTO_DRIVER_ABI_VERSION, sizeof(PtoDriverApi), "ptorun test stub driver",
    open_device, close_device, reset_device, load_image, unload_image, image_symbol,
    mem_alloc, mem_free, h2d, d2h, mset, h2d_async, d2h_async, mset_async,
    host_register, host_unregister, stream_create, stream_destroy, launch, stream_query,
    stream_synchronize, error_string,
};

EXPORT const PtoDriverApi *pto_driver_api(void) { return &api; }
