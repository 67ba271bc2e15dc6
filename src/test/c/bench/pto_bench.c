/*
 * libptorun_bench.so: the native side of the benchmark suite (src/test/java/org/ptorun/bench).
 * The JMH benchmarks call it through JNA, so the C-driven figures are measured in the
 * same suite run as the Java ones they are compared with (docs/performance.md, P1, P2, P5):
 *
 *  - a trivial-run cycle driven from C: prepare -> launch -> poll (-> wait) -> finalize on
 *    a device context of its own, opened on the very library file Java loaded, through
 *    the exported contract only (dlopen + dlsym of include/ptorun/pto_runtime_c_api.h);
 *  - the machine's floor: one condition-variable round trip between two threads (wake a
 *    parked thread, it wakes the caller back), no spinning on either side;
 *  - a single-threaded memcpy.
 *
 * Each call does one operation; JMH times it (one JNA direct call, ~0.1 us, is included
 * in every figure alike). Errors: NULL or a negative code, the reason in
 * pto_bench_last_error(). The native tests also link it (test_bench_native.c), so
 * it runs under the sanitizers too.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "pto_bench.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptorun/pto_runtime_c_api.h"

static _Thread_local char last_error[1024];

static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
}

PTO_EXPORT const char *pto_bench_last_error(void)
{
    return last_error;
}

/* ---- a trivial run driven from C ------------------------------------------------ */

/* The exported functions the cycle needs, resolved from the library Java loaded. */
typedef struct Contract {
    const char *(*simpler_last_error)(void);
    void *(*create_device_context)(void);
    void (*destroy_device_context)(void *);
    int (*simpler_init)(void *, int, const uint8_t *, size_t, const uint8_t *, size_t, const uint8_t *, size_t,
                        const CallConfig *);
    int (*finalize_device)(void *);
    size_t (*get_runtime_size)(void);
    size_t (*get_runtime_alignment)(void);
    size_t (*committed_device_memory_ctx)(void *);
    int (*simpler_register_callable)(void *, int32_t, const void *);
    int (*simpler_prepare_run)(void *, void *, int32_t, const void *, const CallConfig *,
                               const NativeRunDescriptor *);
    int (*simpler_launch_run)(void *, void *);
    int (*simpler_poll_run)(void *, void *);
    int (*simpler_wait_run)(void *, void *);
    int (*simpler_finalize_run)(void *, void *);
} Contract;

typedef struct PtoBenchCycle {
    void *library;
    Contract api;
    void *ctx;
    int32_t callable_id;
    void *storage;                 /* one run storage, zeroed once, reused run after run */
    ChipStorageTaskArgs *args;     /* no tensors, no scalars */
    CallConfig config;             /* defaults (all zero) */
    NativeRunDescriptor desc;      /* slot 0, bank 0; run id and epoch per run */
    uint64_t runs;
} PtoBenchCycle;

/* Epochs of this driver, far from the Java side's (RunEpochs counts up from 1), so the
   two never meet in one process. */
#define C_DRIVER_EPOCH_BASE (UINT64_C(1) << 62)

#define RESOLVE(field)                                                                           \
    do {                                                                                         \
        *(void **)&c->api.field = dlsym(c->library, #field);                                     \
        if (c->api.field == NULL) {                                                              \
            fail("%s does not export %s", library_path, #field);                                 \
            goto fail_library;                                                                   \
        }                                                                                        \
    } while (0)

PTO_EXPORT PtoBenchCycle *pto_bench_cycle_open(const char *library_path, const uint8_t *aicpu, size_t aicpu_size,
                                               const uint8_t *aicore, size_t aicore_size, const uint8_t *callable,
                                               int32_t callable_id)
{
    PtoBenchCycle *c = calloc(1, sizeof *c);
    if (c == NULL) {
        fail("out of memory");
        return NULL;
    }
    /* The same file JNA loaded: the dynamic loader hands back the same object. */
    c->library = dlopen(library_path, RTLD_NOW | RTLD_LOCAL);
    if (c->library == NULL) {
        fail("dlopen %s: %s", library_path, dlerror());
        free(c);
        return NULL;
    }
    RESOLVE(simpler_last_error);
    RESOLVE(create_device_context);
    RESOLVE(destroy_device_context);
    RESOLVE(simpler_init);
    RESOLVE(finalize_device);
    RESOLVE(get_runtime_size);
    RESOLVE(get_runtime_alignment);
    RESOLVE(committed_device_memory_ctx);
    RESOLVE(simpler_register_callable);
    RESOLVE(simpler_prepare_run);
    RESOLVE(simpler_launch_run);
    RESOLVE(simpler_poll_run);
    RESOLVE(simpler_wait_run);
    RESOLVE(simpler_finalize_run);

    size_t align = c->api.get_runtime_alignment();
    size_t size = (c->api.get_runtime_size() + align - 1) / align * align;
    c->storage = aligned_alloc(align, size);
    c->args = aligned_alloc(_Alignof(ChipStorageTaskArgs), sizeof *c->args);
    if (c->storage == NULL || c->args == NULL) {
        fail("out of memory for the run storage");
        goto fail_memory;
    }
    memset(c->storage, 0, size);
    memset(c->args, 0, sizeof *c->args);
    c->callable_id = callable_id;
    c->desc.generation = 1;

    c->ctx = c->api.create_device_context();
    if (c->ctx == NULL) {
        fail("create_device_context: %s", c->api.simpler_last_error());
        goto fail_memory;
    }
    int rc = c->api.simpler_init(c->ctx, 0, aicpu, aicpu_size, aicore, aicore_size, NULL, 0, NULL);
    if (rc == PTO_OK)
        rc = c->api.simpler_register_callable(c->ctx, callable_id, callable);
    if (rc != PTO_OK) {
        fail("open the device and register the callable (%d): %s", rc, c->api.simpler_last_error());
        c->api.destroy_device_context(c->ctx);
        goto fail_memory;
    }
    return c;

fail_memory:
    free(c->args);
    free(c->storage);
fail_library:
    dlclose(c->library);
    free(c);
    return NULL;
}

/* One full cycle, the calls ChipWorker makes: prepare, launch, poll, wait when the
   poll did not see the end, finalize. Returns 0 or the first error. */
PTO_EXPORT int pto_bench_cycle_run(PtoBenchCycle *c)
{
    c->runs++;
    c->desc.run_id = c->runs;
    c->desc.dispatch_id = c->runs;
    c->desc.run_epoch = C_DRIVER_EPOCH_BASE + c->runs;
    int rc = c->api.simpler_prepare_run(c->ctx, c->storage, c->callable_id, c->args, &c->config, &c->desc);
    if (rc != PTO_OK) {
        fail("prepare (%d): %s", rc, c->api.simpler_last_error());
        return rc;
    }
    int run_rc = c->api.simpler_launch_run(c->ctx, c->storage);
    if (run_rc == PTO_OK) {
        int polled = c->api.simpler_poll_run(c->ctx, c->storage);
        if (polled == SIMPLER_NATIVE_RUN_POLL_NOT_READY)
            run_rc = c->api.simpler_wait_run(c->ctx, c->storage);
        else if (polled < 0)
            run_rc = polled;
    }
    if (run_rc != PTO_OK)
        fail("run (%d): %s", run_rc, c->api.simpler_last_error());
    rc = c->api.simpler_finalize_run(c->ctx, c->storage);
    if (rc != PTO_OK) {
        fail("finalize (%d): %s", rc, c->api.simpler_last_error());
        return rc;
    }
    return run_rc;
}

PTO_EXPORT size_t pto_bench_cycle_committed_device_memory(PtoBenchCycle *c)
{
    return c->api.committed_device_memory_ctx(c->ctx);
}

PTO_EXPORT void pto_bench_cycle_close(PtoBenchCycle *c)
{
    if (c == NULL)
        return;
    c->api.destroy_device_context(c->ctx);
    dlclose(c->library);
    free(c->args);
    free(c->storage);
    free(c);
}

/* ---- the floor: one condition-variable round trip ------------------------------- */

/* `turn` counts hand-offs: odd = the echo thread's turn, even = the caller's. Each side
   parks on its own condition variable until the turn is its own. */
typedef struct PtoBenchPingPong {
    pthread_mutex_t lock;
    pthread_cond_t echo_wake;
    pthread_cond_t caller_wake;
    uint64_t turn;
    int stop;
    pthread_t echo;
} PtoBenchPingPong;

static void *echo_main(void *arg)
{
    PtoBenchPingPong *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stop && p->turn % 2 == 0)
            pthread_cond_wait(&p->echo_wake, &p->lock);
        if (p->stop)
            break;
        p->turn++;
        pthread_cond_signal(&p->caller_wake);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

PTO_EXPORT PtoBenchPingPong *pto_bench_pingpong_open(void)
{
    PtoBenchPingPong *p = calloc(1, sizeof *p);
    if (p == NULL) {
        fail("out of memory");
        return NULL;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->echo_wake, NULL);
    pthread_cond_init(&p->caller_wake, NULL);
    int rc = pthread_create(&p->echo, NULL, echo_main, p);
    if (rc != 0) {
        fail("pthread_create: %s", strerror(rc));
        free(p);
        return NULL;
    }
    return p;
}

/* Wakes the parked echo thread and parks until it wakes the caller back. */
PTO_EXPORT void pto_bench_pingpong_round(PtoBenchPingPong *p)
{
    pthread_mutex_lock(&p->lock);
    p->turn++;
    pthread_cond_signal(&p->echo_wake);
    while (p->turn % 2 != 0)
        pthread_cond_wait(&p->caller_wake, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

PTO_EXPORT void pto_bench_pingpong_close(PtoBenchPingPong *p)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_signal(&p->echo_wake);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->echo, NULL);
    pthread_cond_destroy(&p->caller_wake);
    pthread_cond_destroy(&p->echo_wake);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* ---- memcpy ---------------------------------------------------------------------- */

/* P5's reference: one thread copying n bytes (addresses of Java direct buffers). */
PTO_EXPORT void pto_bench_memcpy(uint64_t dst, uint64_t src, uint64_t n)
{
    memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, (size_t)n);
}
