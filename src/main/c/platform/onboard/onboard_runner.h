/* The onboard runner: reaches its device only through the driver ABI
 * (pto_driver.h). Device addresses are opaque 64-bit values: the runner never
 * dereferences one; memory moves through the driver's copies (or, on a2a3, a
 * host_register view). Its own device resources (arenas, retained buffers,
 * callable uploads) are ordinary allocations in the core's table, so
 * committed_device_memory covers them.
 *
 * Streams: a2a3 keeps one persistent AICPU stream per pipeline slot and gives
 * every run a fresh AICore stream, created when the run is prepared
 * (runner_prepare_slot) and retired when it is awaited; a5 has one persistent
 * stream pair. A device failure (PTO_ERR_DEVICE or PTO_ERR_TIMEOUT: any failed
 * driver call but out-of-memory, a bad argument or an unsupported call)
 * poisons the runner until runner_finalize, which resets the device.
 *
 * Files: onboard_runner.c (lifetime, driver errors), onboard_memory.c (device
 * memory, host views), onboard_kernels.c (kernel libraries and addresses),
 * onboard_streams.c (persistent and per-run streams), onboard_execution.c
 * (submit, query, await). */
#ifndef PTORUN_ONBOARD_RUNNER_H
#define PTORUN_ONBOARD_RUNNER_H

#include "platform/onboard/onboard_driver.h"
#include "platform/runner_core.h"

#define OB_SLOTS PTO_PIPELINE_MAX_DEPTH
/* streams whose destroy failed, kept until finalize retries them */
#define OB_MAX_STUCK_STREAMS 8

/* A kernel library loaded into the device, once per content. */
typedef struct ObLibrary {
    PtoDrvImage *image;
    void *bytes;          /* host copy: the identity of the content */
    size_t size;
    uint32_t refs;
} ObLibrary;

typedef struct ObHostView {
    uint64_t dev;
    void *view;
} ObHostView;

typedef struct ObSlot {
    PtoDrvStream *aicpu;      /* a2a3: persistent per slot */
    PtoDrvStream *run_aicore; /* a2a3: the prepared run's fresh AICore stream */
} ObSlot;

struct Runner {
    RunnerCore core;           /* first: what every runner keeps the same way; its lock guards what follows */
    OnboardDriver driver;
    int logged;
    int poisoned;              /* atomic */
    PtoDrvDevice *dev;
    PtoDrvImage *aicpu, *aicore;
    ObSlot slots[OB_SLOTS];
    PtoDrvStream *pair_aicpu, *pair_aicore; /* a5: the persistent pair */
    PtoDrvStream *stuck[OB_MAX_STUCK_STREAMS];
    uint32_t stuck_slot[OB_MAX_STUCK_STREAMS];
    size_t stuck_count;
    size_t stream_set_creates;
    ObLibrary *libraries;
    size_t library_count, library_cap;
    ObHostView *views;
    size_t view_count, view_cap;
};

/* ---- driver errors (onboard_runner.c) ------------------------------------- */

/* Records a driver failure of `what` (the calling thread's message) and returns
 * its PTO_ERR_* code; poisons nothing. For failures whose caller either reports
 * the code (which poisons there, runner_note_failure) or has no code to report:
 * releases, and bringing the device up (nothing to poison yet). */
int ob_drv_error(Runner *r, int drv_rc, const char *what);
/* ob_drv_error, then runner_note_failure: a device failure poisons at once. */
int ob_drv_fail(Runner *r, int drv_rc, const char *what);

/* ---- kernel libraries (onboard_kernels.c) --------------------------------- */

/* Caller holds the lock: forgets every library record (the device went). */
void ob_forget_libraries(Runner *r);

/* ---- host views (onboard_memory.c) ---------------------------------------- */

void ob_forget_views(Runner *r);

/* ---- streams (onboard_streams.c); caller holds the lock ------------------- */

int ob_create_persistent_streams(Runner *r);
void ob_forget_streams(Runner *r);
/* Destroys a stream; one whose destroy failed is kept, blocking its slot, until
 * finalize. PTO_OK, or the failure (ob_drv_error: poisons nothing itself), which
 * the caller folds into what it reports (pto_outrank). */
int ob_retire_stream(Runner *r, PtoDrvStream *s, uint32_t slot);
/* The run's streams, taken from the slot (a2a3: its fresh AICore stream goes
 * with the run, *owns_aicore = 1) or the persistent pair (a5). */
int ob_take_streams(Runner *r, uint32_t slot, PtoDrvStream **aicpu, PtoDrvStream **aicore, int *owns_aicore);

#endif
