/*
 * Internals of the emulated device driver (libptorun_emudrv.so): the objects
 * behind the driver ABI's handles and what the files of emudrv/ share.
 *
 *   emudrv_device.c  devices, the handle registry, memory, images, host views,
 *                    reset and close, the exported table
 *   emudrv_stream.c  streams: in-order queues run by the device's engine
 *                    threads; launches run on the device's participation threads
 *   emudrv_fault.c   fault injection and the driver's own accounting, in a
 *                    state page shared with the process's chip hosts
 *   emudrv_comm.c    communication groups: the shared-memory group of
 *                    util/comm_shm.h behind the driver ABI's comm entries
 *
 * Locks: g_registry_lock (emudrv_device.c) guards the handle registry and the
 * `users` counts; each device's `lock` guards its streams, queues and threads.
 * Never both at once. A call touching device bytes holds a pin of its memory or
 * window table (and no lock) while it does; frees wait for pins, not locks.
 * Handles are validated against the registry on every call,
 * so a stale handle (after destroy, reset or close) is refused, never followed.
 */
#ifndef PTORUN_EMUDRV_H
#define PTORUN_EMUDRV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "util/alloc_table.h"
#include "util/library_cache.h"
#include "ptorun/pto_driver.h"
#include "ptorun/pto_emudrv.h"

#define EMU_MAX_DEVICE_ID 63
#define EMU_MAX_BLOCK_DIM 64           /* threads of one launch */
#define EMU_MAX_ENGINES 64             /* stream engine threads per device */
#define EMU_MAX_PARTICIPATION_THREADS 64
#define EMU_MEM_ALIGN 512              /* device allocations, like a real allocator's granule */
#define EMU_DEFAULT_MEMORY (1ull << 30)
#define EMU_MEMORY_ENV "PTORUN_EMU_DEVICE_MEMORY"

typedef enum EmuOpKind { EMU_OP_H2D, EMU_OP_D2H, EMU_OP_MEMSET, EMU_OP_LAUNCH } EmuOpKind;

/* One queued stream operation. Recycled through its stream's free list. */
typedef struct EmuOp {
    struct EmuOp *next;        /* stream queue, or free list */
    struct EmuOp *job_next;    /* the device's participation queue (launches) */
    EmuOpKind kind;
    int fail;                  /* injected: the stream error this op ends with (0 none) */
    int skip;                  /* injected copy failure: the bytes are not moved */
    uint64_t dev_addr;
    void *host;
    size_t n;
    int value;
    /* launches */
    struct PtoDrvImage *image;
    void *entry;
    int aicpu;                 /* the AICPU entry (eager, hooks == NULL), else a core entry */
    uint64_t args_dev;
    uint32_t block_dim;
    int hang;                  /* injected: blocks until released */
    int released;              /* abort, hang release: do not (or no longer) run it */
    int started;               /* its participations were handed out */
    uint32_t next_part;        /* next participation index to hand out */
    uint32_t parts_left;       /* participations not yet returned */
    int core_failed;           /* a core entry returned non-zero */
} EmuOp;

struct PtoDrvStream {
    /* registry (g_registry_lock) */
    struct PtoDrvStream *reg_next;
    int users;
    int dead;
    PtoDrvDevice *dev;
    struct PtoDrvStream *kill_next;  /* a device teardown's list of the streams it frees */
    /* the rest: dev->lock */
    struct PtoDrvStream *dev_next;   /* the device's streams */
    struct PtoDrvStream *ready_next; /* the device's ready list */
    EmuOp *head, *tail;              /* queued, not started */
    EmuOp *free_ops;
    EmuOp *current;                  /* being executed by an engine */
    int queued;                      /* on the ready list */
    int running;                     /* an engine executes its ops */
    int closing;                     /* destroy or teardown: no more enqueues */
    int error;                       /* sticky PtoDriverError, 0 when healthy */
    pthread_cond_t idle_cond;        /* broadcast when idle or in error */
};

struct PtoDrvImage {
    struct PtoDrvImage *reg_next;
    int users;
    int dead;
    PtoDrvDevice *dev;
    struct PtoDrvImage *dev_next;    /* dev->lock */
    void *handle;                    /* from the device's library cache */
    uint32_t launches_pending;       /* dev->lock: queued or running launches */
    int busy;                        /* dev->lock: a launch of it runs on the device */
};

typedef struct EmuHostView {
    uint64_t dev_addr;
    size_t n;
} EmuHostView;

struct PtoDrvDevice {
    struct PtoDrvDevice *reg_next;
    int users;
    int dead;
    int resetting;                   /* registry: new calls refused during reset */
    int destroys;                    /* registry: stream_destroy calls past unregister */
    int device_id;
    atomic_int lost;

    pthread_mutex_t lock;
    pthread_cond_t engine_cond;      /* idle engines park here */
    pthread_cond_t part_cond;        /* idle participation threads park here */
    pthread_cond_t launch_cond;      /* launch progress, image busy, hang release */

    AllocTable memory;
    AllocTable windows;              /* comm windows this device addresses (emudrv_comm.c); not its memory */
    LibraryCache images;

    /* dev->lock */
    EmuHostView *views;
    size_t view_count, view_cap;
    PtoDrvStream *streams;
    PtoDrvImage *image_list;
    PtoDrvStream *ready_head, *ready_tail;
    uint32_t ready_count;
    int shutdown;
    pthread_t engines[EMU_MAX_ENGINES];
    uint32_t engine_count, engines_idle;
    EmuOp *job_head, *job_tail;
    uint32_t parts_unclaimed;
    uint32_t threads_wanted;        /* sum of threads_to_wake over the launches in progress */
    pthread_t part_threads[EMU_MAX_PARTICIPATION_THREADS];
    uint32_t part_thread_count, part_threads_idle;
};

/* ---- emudrv_fault.c ---- */
/* The driver's accounting. It lives in the driver's state page (emudrv_fault.c):
 * a memfd shared with the chip hosts the process starts, so every process that
 * maps it counts into the same counters (docs/isolation.md, Emulated faults). */
typedef struct EmuCounters {
    _Atomic uint64_t devices_open, memory_committed, allocations, streams, images, host_registrations,
        threads, comm_ranks, comm_window_sets;
} EmuCounters;
/* The counters of the state page (mapped on first use). */
EmuCounters *emu_counters(void);

/* 1 when this call is the one an armed fault of `kind` hits (which disarms it). */
int emu_fault_hit(PtoEmuFault kind);

/* ---- emudrv_device.c: the registry ---- */
/* Takes a use of a live handle; PTO_DRV_ERR_INVALID for anything else. */
int emu_stream_acquire(PtoDrvStream *s);
void emu_stream_release(PtoDrvStream *s);
int emu_image_acquire(PtoDrvImage *img, PtoDrvDevice *dev);
void emu_image_release(PtoDrvImage *img);
/* Marks a device lost: queued work is dropped, hangs are released. */
void emu_device_lose(PtoDrvDevice *dev);
/* Registers a new stream; unregisters one (waits until only the caller uses it,
 * then the caller owns it and must call emu_stream_destroyed after freeing it).
 * PTO_DRV_ERR_INVALID when a teardown or another destroy got there first (the
 * caller's use is then still to be released). */
void emu_stream_register(PtoDrvStream *s);
int emu_stream_unregister(PtoDrvStream *s);
void emu_stream_destroyed(PtoDrvDevice *dev);
/* A call's first step on a stream: a use of it, DEVICE_LOST when its device is
 * lost (or the injected fault makes it so). */
int emu_stream_enter(PtoDrvStream *s);

/* Non-zero when [addr, +n) is the device's memory or a comm window it addresses. */
int emu_device_addresses(PtoDrvDevice *dev, uint64_t addr, size_t n);
/* emu_device_addresses, and when non-zero *pin holds that allocation or window
 * until alloc_table_unpin: every entry that touches device bytes pins them, so
 * mem_free and window frees wait for it (util/alloc_table.h). */
int emu_device_pin(PtoDrvDevice *dev, uint64_t addr, size_t n, AllocPin *pin);
/* A use of a live device (as every call on it takes), DEVICE_LOST when it is lost. */
int emu_device_enter(PtoDrvDevice *dev);
void emu_device_exit(PtoDrvDevice *dev);

/* ---- emudrv_comm.c ---- */
int emu_comm_join(PtoDrvDevice *dev, int rank, int nranks, const char *rootinfo_path, uint32_t timeout_ms,
                  PtoDrvComm **out);
int emu_comm_leave(PtoDrvComm *comm);
int emu_comm_barrier(PtoDrvComm *comm);
int emu_comm_window_alloc(PtoDrvComm *comm, uint64_t key, const uint32_t *ranks, size_t count, size_t bytes,
                          PtoDrvWindows **out);
int emu_comm_window_free(PtoDrvComm *comm, PtoDrvWindows *windows);
int emu_comm_window_addrs(PtoDrvWindows *windows, size_t i, uint64_t *window, uint64_t *signals);
const char *emu_comm_last_message(void);
int emu_comm_window_break(PtoDrvComm *comm, PtoDrvWindows *windows, uint32_t culprit);
int emu_comm_window_span(PtoDrvWindows *windows, PtoCommSpan *out);
int emu_comm_window_slice(PtoDrvComm *comm, uint64_t key, const uint32_t *ranks, size_t count, PtoDrvWindows *group,
                          size_t offset, size_t bytes, PtoDrvWindows **out);
/* The device is being reset or closed: its ranks leave their groups. */
void emu_comm_forget_device(PtoDrvDevice *dev);
/* PTO_EMU_FAULT_PEER_LOST for a call on `dev`: when the device takes part in a
 * group and the fault hits, its ranks are marked lost, the device is lost, and
 * this returns 1 (the call then fails with PTO_DRV_ERR_DEVICE_LOST). */
int emu_comm_fault_hit(PtoDrvDevice *dev);

/* ---- emudrv_stream.c ---- */
int emu_stream_create(PtoDrvDevice *dev, PtoDrvStream **out);
int emu_stream_destroy(PtoDrvStream *s);
int emu_memcpy_h2d_async(PtoDrvStream *s, uint64_t dst, const void *src, size_t n);
int emu_memcpy_d2h_async(PtoDrvStream *s, void *dst, uint64_t src, size_t n);
int emu_memset_d_async(PtoDrvStream *s, uint64_t dst, int value, size_t n);
int emu_launch(PtoDrvStream *s, PtoDrvImage *image, const char *entry, uint64_t args_dev, uint32_t block_dim);
int emu_stream_query(PtoDrvStream *s);
int emu_stream_synchronize(PtoDrvStream *s, uint32_t timeout_ms);
/* Teardown of a device (reset, close), dev->lock held: drops every queued op,
 * releases hangs, asks running AICPU launches to stop, then waits until no
 * engine runs any of the device's streams. */
void emu_streams_abort(PtoDrvDevice *dev);
/* Frees a stream nobody uses any more (dev->lock held; unlinks it). */
void emu_stream_free(PtoDrvStream *s);
/* Stops and joins the device's threads (dev->lock NOT held). */
void emu_threads_join(PtoDrvDevice *dev);

#endif
