/*
 * Streams of the emulated driver: in-order queues of copies, memsets and
 * launches, executed asynchronously by the device's *engine* threads, and the
 * device's *participation* threads that run a launch's entry block_dim times.
 *
 * Both are small persistent pools per device, created on demand (at most one
 * engine per stream with work, at most one participation thread per
 * participation waiting) and parked on a condition variable when idle, so
 * creating a stream creates no thread, a stream per run costs no thread per
 * run, and an idle device burns no CPU. An engine takes a ready stream and
 * runs its operations in order until the queue is empty.
 *
 * A device runs one launch of an image at a time: the AICPU image keeps its
 * executor state in the globals of the device's copy, so launches of the same
 * image on different streams queue on the device (as a real device queues
 * kernels for a busy engine).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "device/pto_device_abi.h"
#include "emudrv/emudrv.h"
#include "ptorun/pto_runtime_c_api.h"

/* ---- threads ------------------------------------------------------------- */

/* what /proc/self/task/<tid>/comm shows for engines and participation threads alike,
 * so tests and operators can count the driver's threads */
#define EMU_THREAD_NAME "ptorun-emudrv"

static void *engine_main(void *arg);
static void *participation_main(void *arg);

static int spawn(PtoDrvDevice *dev, void *(*main)(void *), pthread_t *slot)
{
    if (pthread_create(slot, NULL, main, dev) != 0)
        return -1;
    /* named here, not by the thread itself, so the name is set when spawn returns */
    pthread_setname_np(*slot, EMU_THREAD_NAME);
    atomic_fetch_add(&emu_counters()->threads, 1);
    return 0;
}

void emu_threads_join(PtoDrvDevice *dev)
{
    pthread_mutex_lock(&dev->lock);
    dev->shutdown = 1;
    pthread_cond_broadcast(&dev->engine_cond);
    pthread_cond_broadcast(&dev->part_cond);
    uint32_t engines = dev->engine_count, parts = dev->part_thread_count;
    pthread_mutex_unlock(&dev->lock);
    /* the arrays only grow while work is queued, and nothing is queued now */
    for (uint32_t i = 0; i < engines; i++)
        pthread_join(dev->engines[i], NULL);
    for (uint32_t i = 0; i < parts; i++)
        pthread_join(dev->part_threads[i], NULL);
    pthread_mutex_lock(&dev->lock);
    dev->engine_count = dev->part_thread_count = 0;
    dev->shutdown = 0;
    pthread_mutex_unlock(&dev->lock);
    atomic_fetch_sub(&emu_counters()->threads, engines + parts);
}

/* ---- operations ---------------------------------------------------------- */

/* dev->lock held */
static EmuOp *op_take(PtoDrvStream *s)
{
    EmuOp *op = s->free_ops;
    if (op != NULL)
        s->free_ops = op->next;
    else
        op = malloc(sizeof *op);
    if (op != NULL)
        memset(op, 0, sizeof *op);
    return op;
}

/* dev->lock held */
static void op_recycle(PtoDrvStream *s, EmuOp *op)
{
    if (op->kind == EMU_OP_LAUNCH)
        op->image->launches_pending--;
    op->next = s->free_ops;
    s->free_ops = op;
}

/* Queues `op` (dev->lock held) and makes sure an engine will run the stream.
   Refused (nothing queued) only when the device has no engine and cannot
   start one. */
static int op_submit(PtoDrvDevice *dev, PtoDrvStream *s, EmuOp *op)
{
    if (!s->running && !s->queued) {
        if (dev->ready_count + 1 > dev->engines_idle && dev->engine_count < EMU_MAX_ENGINES &&
            spawn(dev, engine_main, &dev->engines[dev->engine_count]) == 0)
            dev->engine_count++;
        if (dev->engine_count == 0)
            return PTO_DRV_ERR_OUT_OF_MEMORY;
        s->queued = 1;
        s->ready_next = NULL;
        if (dev->ready_tail != NULL)
            dev->ready_tail->ready_next = s;
        else
            dev->ready_head = s;
        dev->ready_tail = s;
        dev->ready_count++;
        pthread_cond_signal(&dev->engine_cond);
    }
    op->next = NULL;
    if (s->tail != NULL)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    return PTO_DRV_OK;
}

/* A copy or memset; runs without dev->lock. The range is pinned again: memory
   freed while the operation was queued fails the stream instead of being
   touched, and a free meanwhile waits for the bytes to move. */
static int execute_transfer(PtoDrvDevice *dev, EmuOp *op)
{
    if (op->skip)
        return op->fail;
    AllocPin pin;
    if (!emu_device_pin(dev, op->dev_addr, op->n, &pin))
        return PTO_DRV_ERR_STREAM;
    void *dev_mem = (void *)(uintptr_t)op->dev_addr;
    switch (op->kind) {
    case EMU_OP_H2D: memcpy(dev_mem, op->host, op->n); break;
    case EMU_OP_D2H: memcpy(op->host, dev_mem, op->n); break;
    default: memset(dev_mem, op->value, op->n); break;
    }
    alloc_table_unpin(&pin);
    return op->fail;
}

/* How many participation threads a launch wakes. AICPU participations run at
   once (idle ones park inside the executor until the run ends); core entries
   are independent calls, so more threads than CPUs would only queue for them —
   the woken threads take the remaining cores in turn. Waking exactly these
   (never broadcasting) keeps a launch from stirring every idle thread. */
static uint32_t threads_to_wake(const EmuOp *op)
{
    if (op->aicpu)
        return op->block_dim;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    uint32_t limit = cpus < 1 ? 1u : (uint32_t)cpus;
    return op->block_dim < limit ? op->block_dim : limit;
}

/* A launch (dev->lock held): waits for its image to be free, hands block_dim
   participations to the participation threads and waits for all to return.
   Returns the error the stream takes (0 none). */
static int execute_launch(PtoDrvDevice *dev, PtoDrvStream *s, EmuOp *op)
{
    if (op->hang) {
        /* released by a synchronize that timed out (which records TIMEOUT),
           by destroy, reset or close, or by the device being lost */
        while (!op->released && !s->closing)
            pthread_cond_wait(&dev->launch_cond, &dev->lock);
        return 0;
    }
    PtoDrvImage *img = op->image;
    while (img->busy && !op->released)
        pthread_cond_wait(&dev->launch_cond, &dev->lock);
    if (op->released)
        return 0;
    img->busy = 1;
    op->next_part = 0;
    op->parts_left = op->block_dim;
    op->job_next = NULL;
    if (dev->job_tail != NULL)
        dev->job_tail->job_next = op;
    else
        dev->job_head = op;
    dev->job_tail = op;
    dev->parts_unclaimed += op->block_dim;
    /* threads busy with another launch come back for this one when done, so
       the pool only grows to what the launches in progress want together */
    uint32_t wake = threads_to_wake(op);
    dev->threads_wanted += wake;
    while (dev->part_thread_count < dev->threads_wanted && dev->part_thread_count < EMU_MAX_PARTICIPATION_THREADS &&
           spawn(dev, participation_main, &dev->part_threads[dev->part_thread_count]) == 0)
        dev->part_thread_count++;
    if (dev->part_thread_count == 0) {
        /* no thread could be started: the launch fails on the device; it was
           the only job, since any other job would have a thread */
        dev->job_head = dev->job_tail = NULL;
        dev->parts_unclaimed = 0;
        dev->threads_wanted -= wake;
        img->busy = 0;
        pthread_cond_broadcast(&dev->launch_cond);
        return PTO_DRV_ERR_STREAM;
    }
    op->started = 1;
    for (uint32_t i = 0; i < wake; i++)
        pthread_cond_signal(&dev->part_cond);
    while (op->parts_left > 0)
        pthread_cond_wait(&dev->launch_cond, &dev->lock);
    dev->threads_wanted -= wake;
    img->busy = 0;
    pthread_cond_broadcast(&dev->launch_cond);
    return op->core_failed ? PTO_DRV_ERR_STREAM : op->fail;
}

/* Runs the stream's operations in order until its queue is empty (dev->lock
   held). After an error, or on a lost device, the rest is dropped unexecuted. */
static void run_stream(PtoDrvDevice *dev, PtoDrvStream *s)
{
    EmuOp *op;
    while ((op = s->head) != NULL) {
        s->head = op->next;
        if (s->head == NULL)
            s->tail = NULL;
        s->current = op;
        if (s->error == 0 && !atomic_load(&dev->lost)) {
            int rc;
            if (op->kind == EMU_OP_LAUNCH) {
                rc = execute_launch(dev, s, op);
            } else {
                pthread_mutex_unlock(&dev->lock);
                rc = execute_transfer(dev, op);
                pthread_mutex_lock(&dev->lock);
            }
            if (rc != 0 && s->error == 0)
                s->error = rc;
        }
        s->current = NULL;
        op_recycle(s, op);
        if (s->error != 0)
            pthread_cond_broadcast(&s->idle_cond);
    }
}

static void *engine_main(void *arg)
{
    PtoDrvDevice *dev = arg;
    pthread_mutex_lock(&dev->lock);
    for (;;) {
        while (!dev->shutdown && dev->ready_head == NULL) {
            dev->engines_idle++;
            pthread_cond_wait(&dev->engine_cond, &dev->lock);
            dev->engines_idle--;
        }
        PtoDrvStream *s = dev->ready_head;
        if (s == NULL)
            break;
        dev->ready_head = s->ready_next;
        if (dev->ready_head == NULL)
            dev->ready_tail = NULL;
        dev->ready_count--;
        s->queued = 0;
        s->running = 1;
        run_stream(dev, s);
        s->running = 0;
        pthread_cond_broadcast(&s->idle_cond);
    }
    pthread_mutex_unlock(&dev->lock);
    return NULL;
}

static void *participation_main(void *arg)
{
    PtoDrvDevice *dev = arg;
    pthread_mutex_lock(&dev->lock);
    for (;;) {
        while (!dev->shutdown && dev->job_head == NULL) {
            dev->part_threads_idle++;
            pthread_cond_wait(&dev->part_cond, &dev->lock);
            dev->part_threads_idle--;
        }
        EmuOp *op = dev->job_head;
        if (op == NULL)
            break;
        uint32_t idx = op->next_part++;
        if (op->next_part == op->block_dim) {
            dev->job_head = op->job_next;
            if (dev->job_head == NULL)
                dev->job_tail = NULL;
        }
        dev->parts_unclaimed--;
        pthread_mutex_unlock(&dev->lock);
        int32_t rc;
        if (op->aicpu)
            rc = ((PtoAicpuEntryFn)op->entry)(op->args_dev, idx, op->block_dim, NULL);
        else
            rc = ((PtoAicoreEntryFn)op->entry)(op->args_dev, idx, op->block_dim);
        pthread_mutex_lock(&dev->lock);
        if (!op->aicpu && rc != 0)
            op->core_failed = 1;
        if (--op->parts_left == 0)
            pthread_cond_broadcast(&dev->launch_cond);
    }
    pthread_mutex_unlock(&dev->lock);
    return NULL;
}

/* ---- teardown -------------------------------------------------------------- */

void emu_streams_abort(PtoDrvDevice *dev)
{
    for (PtoDrvStream *s = dev->streams; s != NULL; s = s->dev_next) {
        s->closing = 1;
        while (s->head != NULL) {
            EmuOp *op = s->head;
            s->head = op->next;
            op_recycle(s, op);
        }
        s->tail = NULL;
        EmuOp *cur = s->current;
        if (cur != NULL && cur->kind == EMU_OP_LAUNCH) {
            cur->released = 1;
            /* a running AICPU launch is asked to start nothing more (its
               kernels in flight still finish), as a device reset would stop it */
            if (cur->aicpu && cur->started) {
                PtoAicpuArgs *args = (PtoAicpuArgs *)(uintptr_t)cur->args_dev;
                int32_t none = 0;
                __atomic_compare_exchange_n(&args->status.stop_request, &none, PTO_ERR_DEVICE, 0, __ATOMIC_RELEASE,
                                            __ATOMIC_RELAXED);
            }
        }
    }
    pthread_cond_broadcast(&dev->launch_cond);
    for (PtoDrvStream *s = dev->streams; s != NULL; s = s->dev_next) {
        pthread_cond_broadcast(&s->idle_cond);
        while (s->running || s->queued)
            pthread_cond_wait(&s->idle_cond, &dev->lock);
    }
}

/* ---- the stream calls -------------------------------------------------------- */

int emu_stream_create(PtoDrvDevice *dev, PtoDrvStream **out)
{
    PtoDrvStream *s = calloc(1, sizeof *s);
    if (s == NULL)
        return PTO_DRV_ERR_OUT_OF_MEMORY;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&s->idle_cond, &attr);
    pthread_condattr_destroy(&attr);
    if (rc != 0) {
        free(s);
        return PTO_DRV_ERR_OUT_OF_MEMORY;
    }
    s->dev = dev;
    pthread_mutex_lock(&dev->lock);
    s->dev_next = dev->streams;
    dev->streams = s;
    pthread_mutex_unlock(&dev->lock);
    emu_stream_register(s);
    atomic_fetch_add(&emu_counters()->streams, 1);
    *out = s;
    return PTO_DRV_OK;
}

void emu_stream_free(PtoDrvStream *s)
{
    PtoDrvDevice *dev = s->dev;
    for (PtoDrvStream **at = &dev->streams; *at != NULL; at = &(*at)->dev_next)
        if (*at == s) {
            *at = s->dev_next;
            break;
        }
    while (s->free_ops != NULL) {
        EmuOp *op = s->free_ops;
        s->free_ops = op->next;
        free(op);
    }
    pthread_cond_destroy(&s->idle_cond);
    free(s);
    atomic_fetch_sub(&emu_counters()->streams, 1);
}

int emu_stream_destroy(PtoDrvStream *s)
{
    int rc = emu_stream_enter(s);
    if (rc != PTO_DRV_OK)
        return rc;
    PtoDrvDevice *dev = s->dev;
    pthread_mutex_lock(&dev->lock);
    s->closing = 1; /* no more enqueues; an injected hang ends now */
    pthread_cond_broadcast(&dev->launch_cond);
    while (s->running || s->queued)
        pthread_cond_wait(&s->idle_cond, &dev->lock);
    pthread_mutex_unlock(&dev->lock);
    if (emu_stream_unregister(s) != PTO_DRV_OK) {
        emu_stream_release(s);
        return PTO_DRV_ERR_INVALID;
    }
    pthread_mutex_lock(&dev->lock);
    emu_stream_free(s);
    pthread_mutex_unlock(&dev->lock);
    emu_stream_destroyed(dev);
    return PTO_DRV_OK;
}

/* An enqueue's checks under dev->lock: the stream takes work, and an op for it. */
static int op_begin(PtoDrvStream *s, EmuOp **out)
{
    if (s->closing)
        return PTO_DRV_ERR_INVALID;
    if (s->error != 0)
        return s->error;
    *out = op_take(s);
    return *out != NULL ? PTO_DRV_OK : PTO_DRV_ERR_OUT_OF_MEMORY;
}

static int enqueue_transfer(PtoDrvStream *s, EmuOpKind kind, uint64_t dev_addr, void *host, int value, size_t n,
                            PtoEmuFault fault)
{
    int rc = emu_stream_enter(s);
    if (rc != PTO_DRV_OK)
        return rc;
    PtoDrvDevice *dev = s->dev;
    if ((kind != EMU_OP_MEMSET && host == NULL && n > 0) ||
        !emu_device_addresses(s->dev, dev_addr, n)) {
        emu_stream_release(s);
        return PTO_DRV_ERR_INVALID;
    }
    pthread_mutex_lock(&dev->lock);
    EmuOp *op = NULL;
    rc = op_begin(s, &op);
    if (rc == PTO_DRV_OK) {
        op->kind = kind;
        op->dev_addr = dev_addr;
        op->host = host;
        op->value = value;
        op->n = n;
        /* an async copy fails where a real one would: on the device, leaving
           its stream in the error state */
        if (fault != PTO_EMU_FAULT_NONE && n > 0 && emu_fault_hit(fault)) {
            op->skip = 1;
            op->fail = PTO_DRV_ERR_STREAM;
        }
        rc = op_submit(dev, s, op);
        if (rc != PTO_DRV_OK)
            op_recycle(s, op);
    }
    pthread_mutex_unlock(&dev->lock);
    emu_stream_release(s);
    return rc;
}

int emu_memcpy_h2d_async(PtoDrvStream *s, uint64_t dst, const void *src, size_t n)
{
    return enqueue_transfer(s, EMU_OP_H2D, dst, (void *)src, 0, n, PTO_EMU_FAULT_H2D);
}

int emu_memcpy_d2h_async(PtoDrvStream *s, void *dst, uint64_t src, size_t n)
{
    return enqueue_transfer(s, EMU_OP_D2H, src, dst, 0, n, PTO_EMU_FAULT_D2H);
}

int emu_memset_d_async(PtoDrvStream *s, uint64_t dst, int value, size_t n)
{
    return enqueue_transfer(s, EMU_OP_MEMSET, dst, NULL, value, n, PTO_EMU_FAULT_NONE);
}

/* The checks of a launch that need no lock: entry, block_dim, argument block. */
static int launch_check(PtoDrvStream *s, PtoDrvImage *image, const char *entry, uint64_t args_dev,
                        uint32_t block_dim, void **fn, int *aicpu)
{
    if (entry == NULL || block_dim == 0 || block_dim > EMU_MAX_BLOCK_DIM)
        return PTO_DRV_ERR_INVALID;
    char why[128];
    *fn = library_cache_symbol(image->handle, entry, strlen(entry), why, sizeof why);
    if (*fn == NULL)
        return PTO_DRV_ERR_INVALID;
    *aicpu = strcmp(entry, PTO_AICPU_ENTRY_SYMBOL) == 0;
    /* the AICPU entry reads its argument block: it must be device memory */
    if (*aicpu && !alloc_table_contains(&s->dev->memory, (uintptr_t)args_dev, sizeof(PtoAicpuArgs)))
        return PTO_DRV_ERR_INVALID;
    return PTO_DRV_OK;
}

int emu_launch(PtoDrvStream *s, PtoDrvImage *image, const char *entry, uint64_t args_dev, uint32_t block_dim)
{
    int rc = emu_stream_enter(s);
    if (rc != PTO_DRV_OK)
        return rc;
    PtoDrvDevice *dev = s->dev;
    if (emu_comm_fault_hit(dev)) {
        emu_stream_release(s);
        return PTO_DRV_ERR_DEVICE_LOST;
    }
    if (emu_image_acquire(image, dev) != PTO_DRV_OK) {
        emu_stream_release(s);
        return PTO_DRV_ERR_INVALID;
    }
    void *fn = NULL;
    int aicpu = 0;
    rc = launch_check(s, image, entry, args_dev, block_dim, &fn, &aicpu);
    if (rc == PTO_DRV_OK) {
        pthread_mutex_lock(&dev->lock);
        EmuOp *op = NULL;
        rc = op_begin(s, &op);
        if (rc == PTO_DRV_OK && emu_fault_hit(PTO_EMU_FAULT_LAUNCH)) {
            op_recycle(s, op); /* not a launch yet: no pending count to undo */
            rc = PTO_DRV_ERR_LAUNCH;
        } else if (rc == PTO_DRV_OK) {
            op->kind = EMU_OP_LAUNCH;
            op->image = image;
            op->entry = fn;
            op->aicpu = aicpu;
            op->args_dev = args_dev;
            op->block_dim = block_dim;
            if (emu_fault_hit(PTO_EMU_FAULT_STREAM))
                op->fail = PTO_DRV_ERR_STREAM;
            if (aicpu && emu_fault_hit(PTO_EMU_FAULT_HANG))
                op->hang = 1;
            image->launches_pending++;
            rc = op_submit(dev, s, op);
            if (rc != PTO_DRV_OK)
                op_recycle(s, op);
        }
        pthread_mutex_unlock(&dev->lock);
    }
    emu_image_release(image);
    emu_stream_release(s);
    return rc;
}

/* dev->lock held */
static int stream_busy(const PtoDrvStream *s)
{
    return s->running || s->queued || s->head != NULL;
}

int emu_stream_query(PtoDrvStream *s)
{
    int rc = emu_stream_enter(s);
    if (rc != PTO_DRV_OK)
        return rc;
    pthread_mutex_lock(&s->dev->lock);
    rc = s->error != 0 ? s->error : stream_busy(s) ? PTO_DRV_NOT_READY : PTO_DRV_OK;
    pthread_mutex_unlock(&s->dev->lock);
    emu_stream_release(s);
    return rc;
}

static struct timespec deadline_after(uint32_t ms)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += ms / 1000u;
    t.tv_nsec += (long)(ms % 1000u) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

/* timeout_ms: 0 checks once, UINT32_MAX waits without limit. */
int emu_stream_synchronize(PtoDrvStream *s, uint32_t timeout_ms)
{
    int rc = emu_stream_enter(s);
    if (rc != PTO_DRV_OK)
        return rc;
    PtoDrvDevice *dev = s->dev;
    struct timespec deadline = deadline_after(timeout_ms);
    int timed_out = 0;
    pthread_mutex_lock(&dev->lock);
    while (!timed_out && !atomic_load(&dev->lost) && s->error == 0 && stream_busy(s)) {
        if (timeout_ms == 0)
            timed_out = 1;
        else if (timeout_ms == UINT32_MAX)
            pthread_cond_wait(&s->idle_cond, &dev->lock);
        else
            timed_out = pthread_cond_timedwait(&s->idle_cond, &dev->lock, &deadline) == ETIMEDOUT;
    }
    if (atomic_load(&dev->lost)) {
        rc = PTO_DRV_ERR_DEVICE_LOST;
    } else if (s->error != 0) {
        rc = s->error;
    } else if (timed_out && stream_busy(s)) {
        rc = PTO_DRV_ERR_TIMEOUT;
        /* the emulation's watchdog: a hung kernel seen past a timeout is
           declared failed; the stream keeps reporting TIMEOUT */
        EmuOp *cur = s->current;
        if (cur != NULL && cur->hang && !cur->released) {
            s->error = PTO_DRV_ERR_TIMEOUT;
            cur->released = 1;
            pthread_cond_broadcast(&dev->launch_cond);
        }
    }
    pthread_mutex_unlock(&dev->lock);
    emu_stream_release(s);
    return rc;
}
