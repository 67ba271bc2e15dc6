/*
 * What every runner keeps the same way, whatever its device (the memory
 * bookkeeping the sim and onboard runners share): the runner's lock, whether
 * the device is up, the table of live device allocations (every address the
 * context handed out, so frees and copies outside them are refused), the slot,
 * bank, cache and upload records (platform/device_resources.h) and the host
 * libraries (hbg orchestration libraries, loaded on the host on every
 * platform). Each platform's struct Runner begins with a RunnerCore, so the
 * shared code reaches it from the runner alone.
 *
 * The shared code reaches the device through the few primitives declared at
 * the end, which each platform implements once: resolved at link time, no
 * table. Device addresses are opaque 64-bit values here; only a platform
 * knows whether one is a host pointer.
 */
#ifndef PTORUN_RUNNER_CORE_H
#define PTORUN_RUNNER_CORE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "util/alloc_table.h"
#include "format/chip_callable.h"
#include "util/library_cache.h"
#include "platform/device_resources.h"
#include "platform/runner.h"

typedef struct RunnerCore {
    pthread_mutex_t lock;      /* guards the core and the platform's own state */
    int initialized;           /* written under the lock */
    int device_id;
    AllocTable memory;         /* live device allocations (own lock: copies check without the runner's) */
    AllocTable windows;        /* communication windows this device addresses (common/comm.c): copies
                                  and child_memory tensors may use them; committed memory omits them */
    DeviceResources resources; /* slots, banks, prebuilt cache, uploads */
    LibraryCache host_libraries;
} RunnerCore;

/* The core of a runner: the first member of every struct Runner. */
static inline RunnerCore *runner_core(Runner *r)
{
    return (RunnerCore *)r;
}

static inline void *dev_ptr(uint64_t a)
{
    return (void *)(uintptr_t)a;
}

static inline uint64_t dev_addr(const void *p)
{
    return (uint64_t)(uintptr_t)p;
}

/* `capacity`: device memory bytes the table admits (0 = no limit of its own). */
int runner_core_init(RunnerCore *c, size_t capacity);
/* After the device is gone: frees the host records. */
void runner_core_destroy(RunnerCore *c);
/* The device was reset or closed: every allocation goes (release is called
 * for each, NULL when the device released them itself), every record is
 * forgotten, the host libraries are unloaded. Caller holds the lock. */
void runner_core_forget_device(RunnerCore *c, void (*release)(uintptr_t, size_t, void *));

/* `array` (elements of elem_size bytes, *cap of them), grown so that one more
 * than `count` fit: doubled, from `first`. NULL (array untouched, message
 * naming what) when out of host memory. */
void *runner_grow(void *array, size_t *cap, size_t count, size_t elem_size, size_t first, const char *what);

/* Caller holds the lock: PTO_ERR_WRONG_PHASE (message names fn) unless the device is up. */
int runner_check_up(Runner *r, const char *fn);
/* PTO_ERR_INVALID_ARGUMENT unless [dev, +n) lies inside one live allocation
 * or one communication window. Only for calls that do not touch the bytes
 * themselves (they record or hand out the address): a call that reads or
 * writes them pins instead. */
int runner_check_inside(Runner *r, const char *fn, uint64_t dev, size_t n);
/* runner_check_inside, and on PTO_OK *pin holds that allocation or window
 * until alloc_table_unpin(pin): freeing it (device_free, comm_destroy) waits
 * for the pin, and a pin is refused once freeing began (util/alloc_table.h).
 * Pinned, a call must not take the runner's lock: removals wait under it. */
int runner_pin_inside(Runner *r, const char *fn, uint64_t dev, size_t n, AllocPin *pin);
/* Records "<entry>: NULL runner or pointer" and returns PTO_ERR_INVALID_ARGUMENT. */
int runner_refuse_null(const char *entry);

/* Caller holds the lock: n > 0 bytes of device memory, recorded in the table. */
int runner_alloc(Runner *r, size_t n, uint64_t *dev);
/* Caller holds the lock: frees an allocation known to be live. */
void runner_free(Runner *r, uint64_t dev);

/* ---- what each platform implements for the shared code -------------------- */

/* Caller holds the lock; the core's device_id is set. Brings the device up
 * with the images (their bytes are copied), or leaves nothing open. */
int platform_open(Runner *r, const DeviceImages *images);
/* Caller holds the lock. Releases every device resource (calling
 * runner_core_forget_device): the device is down afterwards whatever the
 * result, except PTO_ERR_BUSY, which leaves it up and untouched. */
int platform_close(Runner *r);

/* Caller holds the lock. n > 0 bytes of device memory (the table's capacity
 * already admitted them); PTO_ERR_* with a message otherwise. */
int platform_alloc(Runner *r, size_t n, uint64_t *dev);
/* Caller holds the lock: gives back memory the table no longer holds. With
 * `report` 0 (a rollback, or a release whose caller reports something else) a
 * failure is neither recorded nor acted on. */
int platform_free(Runner *r, uint64_t dev, int report);
/* n > 0 bytes inside one live allocation (pinned by the caller, or owned by a
 * caller holding the lock). They take no lock of the runner's. */
int platform_write(Runner *r, uint64_t dev, const void *host, size_t n);
int platform_read(Runner *r, void *host, uint64_t dev, size_t n);
int platform_fill(Runner *r, uint64_t dev, int value, size_t n);
/* Caller holds the lock. The device address of child i's kernel, or 0 with a
 * PTO_ERR_BAD_CALLABLE message. *library is set to the kernel-library
 * reference the child took (NULL when none), also when the address cannot be
 * resolved. */
uint64_t platform_kernel_address(Runner *r, const ChipCallableView *v, uint32_t i, const ChipCallableChild *c,
                                 void **library);
/* Caller holds the lock: drops a reference platform_kernel_address took. */
void platform_release_kernel_library(Runner *r, void *library);

#endif
