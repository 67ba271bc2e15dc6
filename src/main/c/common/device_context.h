/*
 * One device context: what create_device_context returns. It owns the runner
 * (the platform's device), the callable registry (ids 0..63), the run
 * ownership (reservations and the execution claim) and the executor threads.
 * One mutex guards the state, the registry and the ownership; it is held for
 * bookkeeping only, never across a run's execution.
 */
#ifndef PTORUN_DEVICE_CONTEXT_H
#define PTORUN_DEVICE_CONTEXT_H

#include <pthread.h>
#include <stdint.h>

#include "common/executor.h"
#include "common/run_ownership.h"
#include "platform/runner.h"
#include "runtime/runtime.h"

#define PTO_DEVICE_CONTEXT_MAGIC 0x5054434F4E544558ull /* "PTCONTEX" */

typedef enum DeviceState {
    DEVICE_FRESH,          /* created; simpler_init not yet (or not successfully) called */
    DEVICE_INITIALIZING,
    DEVICE_INITIALIZED,    /* accepts callables and runs */
    DEVICE_FINALIZING,
    DEVICE_FINALIZED,      /* finalize_device done; the context only awaits destruction */
} DeviceState;

typedef struct DeviceContext {
    uint64_t magic;
    Runner *runner;
    pthread_mutex_t lock;              /* guards everything below */
    DeviceState state;
    RunOwnership ownership;
    RuntimeCallable *callables[PTO_MAX_CALLABLES];
    /* the runtime's host scratch per pipeline slot, from init to finalize; a run
       holding the slot's reservation has it lent (runtime.h) */
    RuntimeSlotScratch *slot_scratch[PTO_PIPELINE_MAX_DEPTH];
    Executor executor;                 /* threads run only while INITIALIZED */
    unsigned comm_groups;              /* live comm handles over this context (common/comm.c); written
                                          under the lock with __atomic, read without it by runs */
} DeviceContext;

DeviceContext *device_context_create(void);

/* Refused (PTO_ERR_BUSY, message) while a run is outstanding; otherwise
 * finalizes the device if initialized and frees the context. */
int device_context_destroy(DeviceContext *dc);

/* The context behind an opaque handle, or NULL (message recorded) when the
 * handle is NULL or not a live context. `fn` names the caller in the message. */
DeviceContext *device_context_from(void *ctx, const char *fn);

/* simpler_init: once per context. The runner copies and loads the images. */
int device_context_init(DeviceContext *dc, int device_id, const DeviceImages *images, const CallConfig *prewarm);

/* finalize_device: refused while a run is outstanding; 0 when not initialized. */
int device_context_finalize(DeviceContext *dc);

int device_context_register_callable(DeviceContext *dc, int32_t id, const void *callable);
int device_context_unregister_callable(DeviceContext *dc, int32_t id);

/* PTO_OK when initialized, else PTO_ERR_WRONG_PHASE with a message naming `fn`. */
int device_context_check_initialized(DeviceContext *dc, const char *fn);
int device_context_is_registered(DeviceContext *dc, int32_t id);

/* Admission of a run, atomically under the lock: the context is initialized
 * (PTO_ERR_WRONG_PHASE), `id` is registered (PTO_ERR_NOT_REGISTERED; its
 * callable into *callable, which stays valid while the reservation is held) and
 * the reservation is admitted (PTO_ERR_BUSY; *admission and *blocker say why).
 * Once admitted, *predecessor is the reservation of the run holding the
 * execution claim — the run this one is prepared beside — or zeroed (owner
 * NULL) when none does. Messages are left to the caller, which knows the run. */
int device_context_admit(DeviceContext *dc, const RunReservation *request, int32_t id,
                         RuntimeCallable **callable, RunAdmission *admission, RunReservation *blocker,
                         RunReservation *predecessor);

RunClaim device_context_claim(DeviceContext *dc, const void *run, RunReservation *holder);
/* Drops the run's claim (if held): a launch that cannot go on after all. */
void device_context_release_claim(DeviceContext *dc, const void *run);
/* Drops the run's claim (if held) and reservation (if held). */
void device_context_release(DeviceContext *dc, const void *run);

unsigned device_context_outstanding_runs(DeviceContext *dc);

/* Comm handles pin the context: finalize and destroy are refused
 * (PTO_ERR_BUSY) while one is alive. join fails with PTO_ERR_WRONG_PHASE unless
 * initialized; leave refuses (PTO_ERR_BUSY, message naming fn) while a run is
 * outstanding, since a run may use the group's windows. */
int device_context_comm_join(DeviceContext *dc, const char *fn);
int device_context_comm_leave(DeviceContext *dc, const char *fn);
/* Undoes device_context_comm_join for a handle that never came to be. */
void device_context_comm_unjoin(DeviceContext *dc);

#endif
