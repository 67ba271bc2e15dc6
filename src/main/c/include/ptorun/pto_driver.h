/*
 * The driver ABI: everything the onboard runner needs from a device, and all it
 * may use. A driver is a shared library exporting one function,
 *
 *     const PtoDriverApi *pto_driver_api(void);
 *
 * returning a static, complete table (no NULL entries). ptorun ships one driver,
 * the emulated device driver libptorun_emudrv.so; a hardware driver plugs in by
 * implementing the same table. The runner loads the file named by PTORUN_DRIVER
 * (a path), by default the emudrv next to itself.
 *
 * Conventions: every call returns PTO_DRV_OK (0) or a negative PtoDriverError,
 * except stream_query which may also return PTO_DRV_NOT_READY (1). Device
 * addresses are opaque 64-bit values: the host never dereferences them (except
 * through a view host_register returned). Handles (device, stream, image) are
 * owned by the driver. Every call is thread-safe. A call after PTO_DRV_ERR_DEVICE_LOST
 * fails with it until reset_device.
 *
 * Stream semantics: operations enqueued on one stream execute in order,
 * asynchronously to the host, by the driver's threads; an enqueue call returns
 * once the operation is queued (or refused). An operation that fails puts its
 * stream into the error state: later operations on it are not executed and
 * query/synchronize report the error until the stream is destroyed. Different
 * streams run concurrently.
 */
#ifndef PTORUN_PTO_DRIVER_H
#define PTORUN_PTO_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include "ptorun/pto_comm.h"

#define PTO_DRIVER_ABI_VERSION 5u
#define PTO_DRIVER_API_SYMBOL "pto_driver_api"

typedef enum PtoDriverError {
    PTO_DRV_OK = 0,
    PTO_DRV_NOT_READY = 1,              /* stream_query: work still queued or running */
    PTO_DRV_ERR_INVALID = -1,           /* bad argument or handle */
    PTO_DRV_ERR_OUT_OF_MEMORY = -2,     /* device memory exhausted */
    PTO_DRV_ERR_COPY = -3,              /* a host<->device copy failed */
    PTO_DRV_ERR_LAUNCH = -4,            /* the device refused a launch */
    PTO_DRV_ERR_STREAM = -5,            /* an operation on the stream failed (stream in error state) */
    PTO_DRV_ERR_TIMEOUT = -6,           /* not done within the timeout (stream_synchronize, comm waits) */
    PTO_DRV_ERR_DEVICE_LOST = -7,       /* the device is gone until reset_device */
    PTO_DRV_ERR_UNSUPPORTED = -8,       /* e.g. host_register on a device without host mapping */
    PTO_DRV_ERR_PEER_LOST = -9,         /* comm: a peer rank is gone (its process, its device), or the
                                           group broke; comm_last_message names the rank */
    PTO_DRV_ERR_MISMATCH = -10          /* comm: the members of a collective call asked for different
                                           things (window sizes); comm_last_message names them */
} PtoDriverError;

typedef struct PtoDrvDevice PtoDrvDevice;
typedef struct PtoDrvStream PtoDrvStream;
typedef struct PtoDrvImage PtoDrvImage;
typedef struct PtoDrvComm PtoDrvComm;
typedef struct PtoDrvWindows PtoDrvWindows;

typedef struct PtoDriverApi {
    uint32_t abi_version;               /* PTO_DRIVER_ABI_VERSION */
    uint32_t struct_size;               /* sizeof(PtoDriverApi) */
    const char *name;                   /* e.g. "ptorun emulated device driver" */

    /* devices */
    int (*open_device)(int device_id, PtoDrvDevice **out);
    int (*close_device)(PtoDrvDevice *dev);          /* releases everything the device holds */
    int (*reset_device)(PtoDrvDevice *dev);          /* aborts all work, destroys streams, frees
                                                        memory and images; clears DEVICE_LOST */

    /* device images (the AICPU executor image, the AICore image, kernel libraries):
       the driver copies the bytes and loads them into its device */
    int (*load_image)(PtoDrvDevice *dev, const void *bytes, size_t size, PtoDrvImage **out);
    int (*unload_image)(PtoDrvDevice *dev, PtoDrvImage *image);
    int (*image_symbol)(PtoDrvDevice *dev, PtoDrvImage *image, const char *name, uint64_t *dev_addr);

    /* device memory, synchronous */
    int (*mem_alloc)(PtoDrvDevice *dev, size_t bytes, uint64_t *dev_addr);
    int (*mem_free)(PtoDrvDevice *dev, uint64_t dev_addr);
    int (*memcpy_h2d)(PtoDrvDevice *dev, uint64_t dst, const void *src, size_t n);
    int (*memcpy_d2h)(PtoDrvDevice *dev, void *dst, uint64_t src, size_t n);
    int (*memset_d)(PtoDrvDevice *dev, uint64_t dst, int value, size_t n);

    /* device memory, stream-ordered */
    int (*memcpy_h2d_async)(PtoDrvStream *s, uint64_t dst, const void *src, size_t n);
    int (*memcpy_d2h_async)(PtoDrvStream *s, void *dst, uint64_t src, size_t n);
    int (*memset_d_async)(PtoDrvStream *s, uint64_t dst, int value, size_t n);

    /* host mapping: a host-visible view of device memory (PTO_DRV_ERR_UNSUPPORTED
       where the device has none) */
    int (*host_register)(PtoDrvDevice *dev, uint64_t dev_addr, size_t n, void **host_view);
    int (*host_unregister)(PtoDrvDevice *dev, void *host_view);

    /* streams */
    int (*stream_create)(PtoDrvDevice *dev, PtoDrvStream **out);
    int (*stream_destroy)(PtoDrvStream *s);          /* waits for queued work to end first */

    /* Enqueues a launch of `entry` of `image` on `s`: the device runs it on
       `block_dim` threads (AICPU image: the AICPU entry of device/pto_device_abi.h
       with hooks == NULL, args_dev its argument block; AICore image: its core entry).
       The launch completes when every thread returned. */
    int (*launch)(PtoDrvStream *s, PtoDrvImage *image, const char *entry, uint64_t args_dev, uint32_t block_dim);

    int (*stream_query)(PtoDrvStream *s);            /* never blocks: OK done, NOT_READY, or error */
    int (*stream_synchronize)(PtoDrvStream *s, uint32_t timeout_ms); /* OK, TIMEOUT, or the stream's error */

    const char *(*error_string)(int code);           /* static text for a PtoDriverError */

    /* Communication (ABI 2, comm_window_break ABI 3; docs/communication.md). A comm is one rank of a group of
       devices that meet at barriers and address each other's windows: peer-accessible
       device memory exported by its owner and imported by every peer. A hardware
       backend maps these onto its collective library (docs/driver.md); the emulated
       driver keeps windows in POSIX shared memory so ranks may live in other processes.
       Group calls on one comm are made by one thread at a time. */

    /* Joins rank `rank` of `nranks` on `dev`; ranks meet through the file at
       rootinfo_path (written by rank 0, read by the others). Collective: returns once
       every rank joined, or PTO_DRV_ERR_TIMEOUT after timeout_ms (> 0), which also
       bounds every later wait of the comm. */
    int (*comm_join)(PtoDrvDevice *dev, int rank, int nranks, const char *rootinfo_path, uint32_t timeout_ms,
                     PtoDrvComm **out);
    int (*comm_leave)(PtoDrvComm *comm);             /* releases its windows; peers see it gone */
    int (*comm_barrier)(PtoDrvComm *comm);           /* TIMEOUT, PEER_LOST (a rank gone or the group broken) */
    /* Collective over the group ranks ranks[0..count) (this rank among them, every member
       passing the same list and key): each member exports a window of `bytes` (0: signal
       block only) plus a zeroed signal block of PTO_COMM_SIGNAL_WORDS words (ptorun/pto_comm.h),
       and imports every other member's. OUT_OF_MEMORY on any member fails it on all. */
    int (*comm_window_alloc)(PtoDrvComm *comm, uint64_t key, const uint32_t *ranks, size_t count, size_t bytes,
                             PtoDrvWindows **out);
    int (*comm_window_free)(PtoDrvComm *comm, PtoDrvWindows *windows); /* local: this rank's view */
    /* Member i's window and signal block as device addresses of this rank's device:
       kernels on it and memcpy_* / memset_d on the comm's device reach them. */
    int (*comm_window_addrs)(PtoDrvWindows *windows, size_t i, uint64_t *window, uint64_t *signals);
    /* The calling thread's message for its last failed comm call ("" when none): the
       rank a TIMEOUT or PEER_LOST names. */
    const char *(*comm_last_message)(void);
    /* ABI 3. Breaks the domain over `windows` naming member `culprit` (< its count):
       writes BROKEN = 1 + culprit into every member's signal block unless one is
       there already (the first culprit wins, rank 0's block arbitrates), then rings
       every member's doorbell, so every device-side wait of every member fails at
       once naming that member (ptorun/pto_comm.h). Local and non-blocking: the host
       calls it when a run of this rank failed before or outside its collective
       kernel. INVALID (stale comm or windows, culprit out of range). */
    int (*comm_window_break)(PtoDrvComm *comm, PtoDrvWindows *windows, uint32_t culprit);
    /* ABI 4 (docs/communication.md, Across hosts). A comm whose rootinfo_path was a
       "ptorun-gloo:" root info spans hosts: the driver reaches the other hosts through
       its collective library (the emulated driver: Gloo) and runs the host step of
       collective kernels (ptorun/pto_comm.h, the span words). For such windows, member
       i's signal block is 0 when it is on another host and its window this device's
       mirror of it; this fills *out (all but its local descriptor's magic, timeout_ms
       and window_size) and returns 1; 0 when every member is on this host; INVALID. */
    int (*comm_window_span)(PtoDrvWindows *windows, PtoCommSpan *out);
    /* ABI 5. Collective as comm_window_alloc with bytes 0 (a fresh zeroed signal block
       per member, nothing exported), for a derived domain: member i's window is
       [offset, +bytes) of `group`'s window of rank ranks[i] (`group`: this comm's
       windows over every rank, in rank order; another host's member: this device's
       mirror of it), so its addresses and comm_window_span describe the slice, and
       across hosts the driver serves the slice's host steps. `group` must stay
       allocated while the slice is. INVALID (not such a `group`, the slice empty or
       outside its windows). */
    int (*comm_window_slice)(PtoDrvComm *comm, uint64_t key, const uint32_t *ranks, size_t count,
                             PtoDrvWindows *group, size_t offset, size_t bytes, PtoDrvWindows **out);
} PtoDriverApi;

typedef const PtoDriverApi *(*PtoDriverApiFn)(void);

#endif
