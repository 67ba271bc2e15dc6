#include "device_context.h"

#include <stdlib.h>

#include "services/host_api.h"
#include "util/last_error.h"
#include "ptorun/pto_runtime_c_api.h"

DeviceContext *device_context_create(void)
{
    DeviceContext *dc = calloc(1, sizeof *dc);
    if (dc == NULL)
        goto fail;
    if (pthread_mutex_init(&dc->lock, NULL) != 0)
        goto fail_lock;
    if (executor_init(&dc->executor) != PTO_OK)
        goto fail_executor;
    dc->runner = runner_create();
    if (dc->runner == NULL)
        goto fail_runner;
    dc->state = DEVICE_FRESH;
    dc->magic = PTO_DEVICE_CONTEXT_MAGIC;
    return dc;

fail_runner:
    executor_destroy(&dc->executor);
fail_executor:
    pthread_mutex_destroy(&dc->lock);
fail_lock:
    free(dc);
fail:
    pto_fail(PTO_ERR_OUT_OF_MEMORY, "create_device_context: out of host memory");
    return NULL;
}

DeviceContext *device_context_from(void *ctx, const char *fn)
{
    DeviceContext *dc = ctx;
    if (dc == NULL) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: device context is NULL", fn);
        return NULL;
    }
    if (dc->magic != PTO_DEVICE_CONTEXT_MAGIC) {
        pto_fail(PTO_ERR_INVALID_ARGUMENT, "%s: %p is not a live device context", fn, ctx);
        return NULL;
    }
    return dc;
}

/* ---- state ---------------------------------------------------------------- */

/* Moves from `from` to `to` under the lock; PTO_OK or the state found. */
static int transition(DeviceContext *dc, DeviceState from, DeviceState to, DeviceState *found)
{
    pthread_mutex_lock(&dc->lock);
    *found = dc->state;
    int ok = dc->state == from;
    if (ok)
        dc->state = to;
    pthread_mutex_unlock(&dc->lock);
    return ok ? PTO_OK : PTO_ERR_WRONG_PHASE;
}

static void set_state(DeviceContext *dc, DeviceState s)
{
    pthread_mutex_lock(&dc->lock);
    dc->state = s;
    pthread_mutex_unlock(&dc->lock);
}

static const char *state_name(DeviceState s)
{
    switch (s) {
    case DEVICE_FRESH:
        return "not initialized (call simpler_init first)";
    case DEVICE_INITIALIZING:
        return "being initialized";
    case DEVICE_INITIALIZED:
        return "initialized";
    case DEVICE_FINALIZING:
        return "being finalized";
    case DEVICE_FINALIZED:
        return "finalized (create a new device context)";
    }
    return "in an unknown state";
}

int device_context_check_initialized(DeviceContext *dc, const char *fn)
{
    pthread_mutex_lock(&dc->lock);
    DeviceState s = dc->state;
    pthread_mutex_unlock(&dc->lock);
    if (s != DEVICE_INITIALIZED)
        return pto_fail(PTO_ERR_WRONG_PHASE, "%s: the device context is %s", fn, state_name(s));
    return PTO_OK;
}

/* Registration and prewarm reach the device through a HostApi bound to slot 0, bank 0. */
static HostApi context_host_api(DeviceContext *dc)
{
    return host_api_bind(dc->runner, 0, 0, &host_api_ops);
}

static unsigned executor_threads(void)
{
    uint32_t depth = runtime_pipeline_contract()->pipeline_depth;
    if (depth < 1)
        return 1;
    return depth > PTO_PIPELINE_MAX_DEPTH ? PTO_PIPELINE_MAX_DEPTH : depth;
}

/* ---- init and finalize ---------------------------------------------------- */

static void destroy_slot_scratch(DeviceContext *dc)
{
    for (uint32_t s = 0; s < PTO_PIPELINE_MAX_DEPTH; s++) {
        runtime_slot_scratch_destroy(dc->slot_scratch[s]);
        dc->slot_scratch[s] = NULL;
    }
}

static int create_slot_scratch(DeviceContext *dc)
{
    for (uint32_t s = 0; s < PTO_PIPELINE_MAX_DEPTH; s++) {
        if ((dc->slot_scratch[s] = runtime_slot_scratch_create()) == NULL) {
            destroy_slot_scratch(dc);
            return PTO_ERR_OUT_OF_MEMORY;
        }
    }
    return PTO_OK;
}

int device_context_init(DeviceContext *dc, int device_id, const DeviceImages *images, const CallConfig *prewarm)
{
    DeviceState found;
    if (transition(dc, DEVICE_FRESH, DEVICE_INITIALIZING, &found) != PTO_OK)
        return pto_fail(PTO_ERR_WRONG_PHASE, "simpler_init: the device context is %s; simpler_init runs once per context",
                        found == DEVICE_INITIALIZED ? "already initialized" : state_name(found));
    int rc = create_slot_scratch(dc);
    if (rc != PTO_OK)
        goto fail;
    if ((rc = runner_init(dc->runner, device_id, images)) != PTO_OK)
        goto fail_scratch;
    HostApi api = context_host_api(dc);
    if (prewarm != NULL && (rc = runtime_prewarm(&api, prewarm)) != PTO_OK)
        goto fail_runner;
    if ((rc = executor_start(&dc->executor, executor_threads())) != PTO_OK)
        goto fail_runner;
    set_state(dc, DEVICE_INITIALIZED);
    return PTO_OK;

fail_runner:
    runner_finalize(dc->runner);
fail_scratch:
    destroy_slot_scratch(dc);
fail:
    set_state(dc, DEVICE_FRESH);
    return rc;
}

static void release_all_callables(DeviceContext *dc)
{
    HostApi api = context_host_api(dc);
    for (int id = 0; id < PTO_MAX_CALLABLES; id++) {
        if (dc->callables[id] != NULL) {
            runtime_release_callable(&api, dc->callables[id]);
            dc->callables[id] = NULL;
        }
    }
}

/* Under the lock: refuses (PTO_ERR_BUSY) while a run is outstanding, else
 * moves INITIALIZED to FINALIZING. `*was_initialized` tells whether there is
 * anything to tear down. */
static int begin_finalize(DeviceContext *dc, const char *fn, int *was_initialized)
{
    int rc = PTO_OK;
    *was_initialized = 0;
    pthread_mutex_lock(&dc->lock);
    unsigned outstanding = run_ownership_outstanding(&dc->ownership);
    if (outstanding != 0) {
        rc = pto_fail(PTO_ERR_BUSY, "%s: %u native run(s) outstanding; finalize them first", fn, outstanding);
    } else if (dc->comm_groups != 0) {
        rc = pto_fail(PTO_ERR_BUSY, "%s: %u comm group(s) alive over this context; comm_destroy them first", fn,
                      dc->comm_groups);
    } else if (dc->state == DEVICE_INITIALIZING || dc->state == DEVICE_FINALIZING) {
        rc = pto_fail(PTO_ERR_BUSY, "%s: the device context is %s on another thread", fn, state_name(dc->state));
    } else if (dc->state == DEVICE_INITIALIZED) {
        dc->state = DEVICE_FINALIZING;
        *was_initialized = 1;
    }
    pthread_mutex_unlock(&dc->lock);
    return rc;
}

/* Tears down an initialized context that begin_finalize moved to FINALIZING:
 * nothing else can reach the runner or the registry meanwhile. */
static int finish_finalize(DeviceContext *dc)
{
    executor_stop(&dc->executor);
    release_all_callables(dc);
    destroy_slot_scratch(dc);
    int rc = runner_finalize(dc->runner);
    set_state(dc, DEVICE_FINALIZED);
    return rc;
}

int device_context_finalize(DeviceContext *dc)
{
    int initialized;
    int rc = begin_finalize(dc, "finalize_device", &initialized);
    if (rc != PTO_OK || !initialized)
        return rc;
    return finish_finalize(dc);
}

int device_context_destroy(DeviceContext *dc)
{
    int initialized;
    int rc = begin_finalize(dc, "destroy_device_context (the context is left alive)", &initialized);
    if (rc != PTO_OK)
        return rc;
    if (initialized)
        rc = finish_finalize(dc);
    dc->magic = 0;
    runner_destroy(dc->runner);
    executor_destroy(&dc->executor);
    pthread_mutex_destroy(&dc->lock);
    free(dc);
    return rc;
}

/* ---- callable registry ---------------------------------------------------- */

/* Under the lock: the registry may change only while initialized and no run is outstanding. */
static int registry_open(DeviceContext *dc, const char *fn, int32_t id)
{
    if (dc->state != DEVICE_INITIALIZED)
        return pto_fail(PTO_ERR_WRONG_PHASE, "%s(%d): the device context is %s", fn, id, state_name(dc->state));
    unsigned outstanding = run_ownership_outstanding(&dc->ownership);
    if (outstanding != 0)
        return pto_fail(PTO_ERR_BUSY, "%s(%d): refused while %u native run(s) are outstanding; finalize them first",
                        fn, id, outstanding);
    return PTO_OK;
}

/* The lock is held across the runtime's registration: registration is rare,
 * and no run can be outstanding meanwhile (a racing prepare waits for it at
 * admission and then sees the new registry). */
int device_context_register_callable(DeviceContext *dc, int32_t id, const void *callable)
{
    HostApi api = context_host_api(dc);
    RuntimeCallable *registered = NULL;
    pthread_mutex_lock(&dc->lock);
    int rc = registry_open(dc, "simpler_register_callable", id);
    if (rc == PTO_OK)
        rc = runtime_register_callable(&api, callable, &registered);
    if (rc == PTO_OK) {
        /* the old one is released only once its replacement succeeded */
        RuntimeCallable *old = dc->callables[id];
        dc->callables[id] = registered;
        if (old != NULL)
            runtime_release_callable(&api, old);
    }
    pthread_mutex_unlock(&dc->lock);
    return rc;
}

int device_context_unregister_callable(DeviceContext *dc, int32_t id)
{
    HostApi api = context_host_api(dc);
    pthread_mutex_lock(&dc->lock);
    int rc = registry_open(dc, "simpler_unregister_callable", id);
    if (rc == PTO_OK && dc->callables[id] != NULL) {
        runtime_release_callable(&api, dc->callables[id]);
        dc->callables[id] = NULL;
    }
    pthread_mutex_unlock(&dc->lock);
    return rc;
}

int device_context_is_registered(DeviceContext *dc, int32_t id)
{
    pthread_mutex_lock(&dc->lock);
    int registered = dc->callables[id] != NULL;
    pthread_mutex_unlock(&dc->lock);
    return registered;
}

/* ---- run ownership -------------------------------------------------------- */

int device_context_admit(DeviceContext *dc, const RunReservation *request, int32_t id,
                         RuntimeCallable **callable, RunAdmission *admission, RunReservation *blocker,
                         RunReservation *predecessor)
{
    int rc = PTO_OK;
    *callable = NULL;
    *admission = RUN_ADMITTED;
    *predecessor = (RunReservation){ 0 };
    pthread_mutex_lock(&dc->lock);
    if (dc->state != DEVICE_INITIALIZED)
        rc = PTO_ERR_WRONG_PHASE;
    else if (dc->callables[id] == NULL)
        rc = PTO_ERR_NOT_REGISTERED;
    else if ((*admission = run_ownership_reserve(&dc->ownership, request, blocker)) != RUN_ADMITTED)
        rc = PTO_ERR_BUSY;
    else {
        *callable = dc->callables[id];
        run_ownership_claim_holder(&dc->ownership, predecessor);
    }
    pthread_mutex_unlock(&dc->lock);
    return rc;
}

RunClaim device_context_claim(DeviceContext *dc, const void *run, RunReservation *holder)
{
    pthread_mutex_lock(&dc->lock);
    RunClaim c = run_ownership_claim(&dc->ownership, run, holder);
    pthread_mutex_unlock(&dc->lock);
    return c;
}

void device_context_release_claim(DeviceContext *dc, const void *run)
{
    pthread_mutex_lock(&dc->lock);
    run_ownership_release_claim(&dc->ownership, run);
    pthread_mutex_unlock(&dc->lock);
}

void device_context_release(DeviceContext *dc, const void *run)
{
    pthread_mutex_lock(&dc->lock);
    run_ownership_release_claim(&dc->ownership, run);
    run_ownership_release_reservation(&dc->ownership, run);
    pthread_mutex_unlock(&dc->lock);
}

unsigned device_context_outstanding_runs(DeviceContext *dc)
{
    pthread_mutex_lock(&dc->lock);
    unsigned n = run_ownership_outstanding(&dc->ownership);
    pthread_mutex_unlock(&dc->lock);
    return n;
}

int device_context_comm_join(DeviceContext *dc, const char *fn)
{
    pthread_mutex_lock(&dc->lock);
    DeviceState s = dc->state;
    if (s == DEVICE_INITIALIZED) /* atomic: the run path reads it without the lock */
        __atomic_fetch_add(&dc->comm_groups, 1u, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&dc->lock);
    return s == DEVICE_INITIALIZED ? PTO_OK
                                   : pto_fail(PTO_ERR_WRONG_PHASE, "%s: the device context is %s", fn, state_name(s));
}

int device_context_comm_leave(DeviceContext *dc, const char *fn)
{
    pthread_mutex_lock(&dc->lock);
    unsigned outstanding = run_ownership_outstanding(&dc->ownership);
    if (outstanding == 0)
        __atomic_fetch_sub(&dc->comm_groups, 1u, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&dc->lock);
    return outstanding == 0 ? PTO_OK
                            : pto_fail(PTO_ERR_BUSY, "%s: %u native run(s) outstanding on the device context, and a "
                                                     "run may use the group's windows; finalize them first",
                                       fn, outstanding);
}

void device_context_comm_unjoin(DeviceContext *dc)
{
    pthread_mutex_lock(&dc->lock);
    __atomic_fetch_sub(&dc->comm_groups, 1u, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&dc->lock);
}
