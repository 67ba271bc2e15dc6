#include "sim_device_pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/last_error.h"
#include "util/spin_wait.h"
#include "ptorun/pto_runtime_c_api.h"

#define MAX_PARTICIPATIONS 32u
/* what /proc/self/task/<tid>/comm shows, so tests and operators can count them */
#define SIM_DEVICE_THREAD_NAME "ptorun-simdev"

struct SimDevicePool {
    pthread_mutex_t lock;         /* guards everything below */
    pthread_cond_t work_cond;     /* idle threads */
    pthread_cond_t done_cond;     /* launch waiters */
    pthread_cond_t waiter_cond;   /* sim_device_pool_await_waiter, _await_waits */
    uint32_t waiters;             /* threads parked on done_cond */
    uint32_t waits_begun;         /* blocking waits begun on the current launch */
    pthread_t *threads;
    uint32_t thread_count;
    uint32_t idle;                /* threads parked on work_cond */
    uint32_t busy;                /* threads inside a participation */
    int stopping;

    /* the current launch */
    uint64_t launch_id;           /* 0 before the first */
    PtoAicpuEntryFn entry;
    uint64_t args_dev;
    uint32_t participations;      /* logical AICPU threads of the launch */
    uint32_t running_mask;        /* participation indices inside the entry */
    uint32_t pending;             /* granted, not yet started */
    int closed;                   /* a participation returned DONE: start no more */
    int finished;                 /* closed and none running */
    uint64_t finished_ns;         /* CLOCK_MONOTONIC when it finished */
    _Atomic uint64_t finished_id; /* the last finished launch, read without the lock by waiters' spin */
    PtoAicpuHooks hooks;
};

static uint32_t lowest_free_index(uint32_t mask)
{
    return (uint32_t)__builtin_ctz(~mask);
}

/* Ends the launch once it is closed and nothing runs: wakes its waiters. */
static void maybe_finish(SimDevicePool *p)
{
    if (p->closed && p->running_mask == 0 && !p->finished) {
        p->finished = 1;
        p->finished_ns = pto_monotonic_ns(); /* the device's end: its last participation returned */
        p->pending = 0;
        atomic_store_explicit(&p->finished_id, p->launch_id, memory_order_release);
        pthread_cond_broadcast(&p->done_cond);
    }
}

/* Runs participation `index` (already marked running) of the current launch;
 * called and returns with the lock held, which it drops around the entry. */
static void participate(SimDevicePool *p, uint32_t index)
{
    PtoAicpuEntryFn entry = p->entry;
    uint64_t args_dev = p->args_dev;
    uint32_t n = p->participations;
    pthread_mutex_unlock(&p->lock);

    int32_t rc = entry(args_dev, index, n, &p->hooks);

    pthread_mutex_lock(&p->lock);
    p->running_mask &= ~(1u << index);
    if (rc != PTO_AICPU_IDLE)
        p->closed = 1;
    maybe_finish(p);
}

static void *device_thread(void *arg)
{
    SimDevicePool *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stopping && (p->pending == 0 || p->closed)) {
            p->idle++;
            pthread_cond_wait(&p->work_cond, &p->lock);
            p->idle--;
        }
        if (p->stopping)
            break;
        p->pending--;
        uint32_t index = lowest_free_index(p->running_mask);
        p->running_mask |= 1u << index;
        p->busy++;
        participate(p, index);
        p->busy--;
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

void sim_device_pool_run_first(SimDevicePool *p)
{
    pthread_mutex_lock(&p->lock);
    participate(p, 0);
    pthread_mutex_unlock(&p->lock);
}

/* PtoAicpuHooks.request_threads: grants what free threads and free indices
   allow. A free thread is any not inside a participation: parked, or not
   parked yet (just started, or back from a participation and waiting for the
   lock) — every one of them looks at `pending` before it parks, so counting
   only the parked ones would refuse a thread that is about to be free and
   leave a ready task without one (a fresh pool under load). */
static uint32_t request_threads(void *ctx, uint32_t n)
{
    SimDevicePool *p = ctx;
    pthread_mutex_lock(&p->lock);
    uint32_t granted = 0;
    if (!p->closed) {
        uint32_t running = (uint32_t)__builtin_popcount(p->running_mask);
        uint32_t free_indices = p->participations - running - p->pending;
        uint32_t free_threads = p->thread_count - p->busy;
        uint32_t idle = free_threads > p->pending ? free_threads - p->pending : 0;
        granted = n < free_indices ? n : free_indices;
        granted = granted < idle ? granted : idle;
        p->pending += granted;
        for (uint32_t i = 0; i < granted; i++)
            pthread_cond_signal(&p->work_cond);
    }
    pthread_mutex_unlock(&p->lock);
    return granted;
}

int sim_device_pool_create(uint32_t threads, SimDevicePool **out)
{
    *out = NULL;
    SimDevicePool *p = calloc(1, sizeof *p);
    if (p == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "sim device: out of host memory for its thread pool");
    p->threads = calloc(threads, sizeof *p->threads);
    if (p->threads == NULL)
        goto fail_threads;
    if (pthread_mutex_init(&p->lock, NULL) != 0)
        goto fail_lock;
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0)
        goto fail_attr;
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (pthread_cond_init(&p->done_cond, &attr) != 0)
        goto fail_done;
    if (pthread_cond_init(&p->work_cond, NULL) != 0)
        goto fail_work;
    if (pthread_cond_init(&p->waiter_cond, &attr) != 0)
        goto fail_waiter;
    pthread_condattr_destroy(&attr);
    p->finished = 1; /* no launch yet */
    p->closed = 1;
    p->hooks.ctx = p;
    p->hooks.request_threads = request_threads;
    for (uint32_t i = 0; i < threads; i++) {
        if (pthread_create(&p->threads[i], NULL, device_thread, p) != 0) {
            p->thread_count = i;
            sim_device_pool_destroy(p);
            return pto_fail(PTO_ERR_FAILED, "sim device: cannot start device thread %u of %u", i, threads);
        }
        p->thread_count = i + 1;
        /* named here, not by the thread itself, so the name is set when create returns */
        pthread_setname_np(p->threads[i], SIM_DEVICE_THREAD_NAME);
    }
    *out = p;
    return PTO_OK;

fail_waiter:
    pthread_cond_destroy(&p->work_cond);
fail_work:
    pthread_cond_destroy(&p->done_cond);
fail_done:
    pthread_condattr_destroy(&attr);
fail_attr:
    pthread_mutex_destroy(&p->lock);
fail_lock:
    free(p->threads);
fail_threads:
    free(p);
    return pto_fail(PTO_ERR_FAILED, "sim device: cannot set up its thread pool");
}

void sim_device_pool_destroy(SimDevicePool *p)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = 1;
    pthread_cond_broadcast(&p->work_cond);
    pthread_mutex_unlock(&p->lock);
    for (uint32_t i = 0; i < p->thread_count; i++)
        pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->waiter_cond);
    pthread_cond_destroy(&p->work_cond);
    pthread_cond_destroy(&p->done_cond);
    pthread_mutex_destroy(&p->lock);
    free(p->threads);
    free(p);
}

uint32_t sim_device_pool_thread_count(const SimDevicePool *p)
{
    return p->thread_count;
}

int sim_device_pool_launch(SimDevicePool *p, PtoAicpuEntryFn entry, uint64_t args_dev, uint32_t participations,
                           int caller_runs_first, uint64_t *launch_id)
{
    if (participations < 1 || participations > MAX_PARTICIPATIONS)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "sim device: %u AICPU threads requested, 1..%u supported",
                        participations, MAX_PARTICIPATIONS);
    pthread_mutex_lock(&p->lock);
    if (!p->finished) {
        uint64_t busy = p->launch_id;
        pthread_mutex_unlock(&p->lock);
        return pto_fail(PTO_ERR_BUSY, "sim device: launch %llu is still running", (unsigned long long)busy);
    }
    p->launch_id++;
    p->entry = entry;
    p->args_dev = args_dev;
    p->participations = participations;
    p->closed = 0;
    p->finished = 0;
    p->waits_begun = 0;
    *launch_id = p->launch_id;
    if (caller_runs_first) {
        p->running_mask = 1u; /* index 0, the caller's */
        p->pending = 0;
    } else {
        p->running_mask = 0;
        p->pending = 1;
        pthread_cond_signal(&p->work_cond);
    }
    pthread_mutex_unlock(&p->lock);
    return PTO_OK;
}

int sim_device_pool_finished(SimDevicePool *p, uint64_t launch_id)
{
    pthread_mutex_lock(&p->lock);
    int done = launch_id < p->launch_id || (launch_id == p->launch_id && p->finished);
    pthread_mutex_unlock(&p->lock);
    return done;
}

uint64_t sim_device_pool_finished_at(SimDevicePool *p, uint64_t launch_id)
{
    pthread_mutex_lock(&p->lock);
    uint64_t ns = launch_id == p->launch_id && p->finished ? p->finished_ns : 0;
    pthread_mutex_unlock(&p->lock);
    return ns;
}

static struct timespec deadline_after(uint32_t ms)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

typedef struct LaunchRef {
    SimDevicePool *pool;
    uint64_t launch_id;
} LaunchRef;

static int launch_finished(const void *arg)
{
    const LaunchRef *ref = arg;
    return atomic_load_explicit(&ref->pool->finished_id, memory_order_acquire) >= ref->launch_id;
}

int sim_device_pool_wait(SimDevicePool *p, uint64_t launch_id, uint32_t timeout_ms)
{
    /* a launch ending within the spin budget costs no sleep/wake pair */
    if (launch_id != UINT64_MAX) {
        LaunchRef ref = {p, launch_id};
        if (pto_spin_until(launch_finished, &ref))
            return PTO_OK;
    }
    struct timespec deadline = deadline_after(timeout_ms);
    int rc = PTO_OK;
    pthread_mutex_lock(&p->lock);
    if (launch_id == UINT64_MAX)
        launch_id = p->launch_id;
    p->waiters++;
    p->waits_begun++;
    pthread_cond_broadcast(&p->waiter_cond);
    while (launch_id == p->launch_id && !p->finished) {
        if (timeout_ms == 0) {
            pthread_cond_wait(&p->done_cond, &p->lock);
        } else if (pthread_cond_timedwait(&p->done_cond, &p->lock, &deadline) == ETIMEDOUT &&
                   !p->finished) {
            rc = PTO_ERR_TIMEOUT;
            break;
        }
    }
    p->waiters--;
    pthread_mutex_unlock(&p->lock);
    return rc;
}

void sim_device_pool_await_waiter(SimDevicePool *p)
{
    pthread_mutex_lock(&p->lock);
    while (p->waiters == 0)
        pthread_cond_wait(&p->waiter_cond, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

int sim_device_pool_await_waits(SimDevicePool *p, uint32_t n, uint32_t timeout_ms)
{
    struct timespec deadline = deadline_after(timeout_ms);
    int rc = PTO_OK;
    pthread_mutex_lock(&p->lock);
    while (p->waits_begun < n && rc == PTO_OK)
        if (pthread_cond_timedwait(&p->waiter_cond, &p->lock, &deadline) == ETIMEDOUT && p->waits_begun < n)
            rc = PTO_ERR_TIMEOUT;
    pthread_mutex_unlock(&p->lock);
    return rc;
}

int sim_device_pool_busy(SimDevicePool *p)
{
    pthread_mutex_lock(&p->lock);
    int busy = !p->finished;
    pthread_mutex_unlock(&p->lock);
    return busy;
}
