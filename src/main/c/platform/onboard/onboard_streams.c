/* The onboard runner's streams (onboard_runner.h): the persistent ones
 * (a2a3: one AICPU stream per slot; a5: the pair), a2a3's fresh AICore stream
 * per run (created at prepare, retired when the run is awaited or abandoned),
 * and the streams whose destroy failed, which block their slot until a retry
 * succeeds or finalize. */
#include <string.h>

#include "arch/arch.h"
#include "util/last_error.h"
#include "platform/onboard/onboard_runner.h"
#include "ptorun/pto_runtime_c_api.h"

/* Poisons nothing: at init there is nothing to poison yet, at prepare the caller notes it. */
static int create_stream(Runner *r, PtoDrvStream **out)
{
    int drc = r->driver.api->stream_create(r->dev, out);
    return drc == PTO_DRV_OK ? PTO_OK : ob_drv_error(r, drc, "stream_create");
}

int ob_create_persistent_streams(Runner *r)
{
    int rc;
#if PTO_ARCH_FRESH_RUN_STREAMS
    for (uint32_t s = 0; s < OB_SLOTS; s++)
        if ((rc = create_stream(r, &r->slots[s].aicpu)) != PTO_OK)
            return rc;
#else
    if ((rc = create_stream(r, &r->pair_aicpu)) != PTO_OK || (rc = create_stream(r, &r->pair_aicore)) != PTO_OK)
        return rc;
#endif
    return PTO_OK;
}

void ob_forget_streams(Runner *r)
{
    memset(r->slots, 0, sizeof r->slots);
    r->pair_aicpu = r->pair_aicore = NULL;
    r->stuck_count = 0;
}

int ob_retire_stream(Runner *r, PtoDrvStream *s, uint32_t slot)
{
    if (s == NULL)
        return PTO_OK;
    int drc = r->driver.api->stream_destroy(s);
    if (drc == PTO_DRV_OK)
        return PTO_OK;
    int rc = ob_drv_error(r, drc, "stream_destroy");
    if (r->stuck_count < OB_MAX_STUCK_STREAMS) {
        r->stuck[r->stuck_count] = s;
        r->stuck_slot[r->stuck_count++] = slot;
        return rc;
    }
    /* cannot even remember it: only the reset at finalize_device recovers */
    return pto_fail(PTO_ERR_DEVICE, "%s, and %d undestroyed streams are kept already", pto_last_error(),
                    OB_MAX_STUCK_STREAMS);
}

int ob_take_streams(Runner *r, uint32_t slot, PtoDrvStream **aicpu, PtoDrvStream **aicore, int *owns_aicore)
{
#if PTO_ARCH_FRESH_RUN_STREAMS
    *aicpu = r->slots[slot].aicpu;
    *aicore = r->slots[slot].run_aicore;
    r->slots[slot].run_aicore = NULL;
    *owns_aicore = 1;
    if (*aicore == NULL)
        return pto_fail(PTO_ERR_WRONG_PHASE, "submit: pipeline slot %u has no prepared run stream", slot);
#else
    (void)slot;
    *aicpu = r->pair_aicpu;
    *aicore = r->pair_aicore;
    *owns_aicore = 0;
#endif
    return PTO_OK;
}

size_t runner_run_stream_set_create_count(Runner *r)
{
    pthread_mutex_lock(&r->core.lock);
    size_t n = r->stream_set_creates;
    pthread_mutex_unlock(&r->core.lock);
    return n;
}

#if PTO_ARCH_FRESH_RUN_STREAMS
/* A stuck stream of the slot gets another destroy; PTO_OK once none is left. */
static int unblock_slot(Runner *r, uint32_t slot)
{
    for (size_t i = 0; i < r->stuck_count;) {
        if (r->stuck_slot[i] == slot && r->driver.api->stream_destroy(r->stuck[i]) == PTO_DRV_OK) {
            r->stuck[i] = r->stuck[r->stuck_count - 1];
            r->stuck_slot[i] = r->stuck_slot[--r->stuck_count];
            continue;
        }
        if (r->stuck_slot[i] == slot)
            return pto_fail(PTO_ERR_BUSY, "pipeline slot %u is blocked: a run stream of it could not be destroyed",
                            slot);
        i++;
    }
    return PTO_OK;
}

/* Caller holds the lock: the slot's fresh AICore stream for the run being prepared. */
static int create_run_stream(Runner *r, uint32_t slot)
{
    int rc = unblock_slot(r, slot);
    if (rc != PTO_OK)
        return rc;
    ObSlot *s = &r->slots[slot];
    if (s->run_aicore != NULL)
        return pto_fail(PTO_ERR_BUSY, "pipeline slot %u already holds a prepared run's stream", slot);
    if ((rc = create_stream(r, &s->run_aicore)) != PTO_OK) {
        s->run_aicore = NULL;
        return runner_note_failure(r, rc);
    }
    r->stream_set_creates++;
    return PTO_OK;
}
#endif

int runner_prepare_slot(Runner *r, uint32_t slot)
{
    int rc = device_check_slot(slot, "prepare");
    if (rc != PTO_OK)
        return rc;
    pthread_mutex_lock(&r->core.lock);
    if ((rc = runner_check_up(r, "prepare")) == PTO_OK && runner_poisoned(r))
        rc = pto_fail(PTO_ERR_POISONED, "onboard device %d is poisoned by a device error; finalize_device resets it",
                      r->core.device_id);
#if PTO_ARCH_FRESH_RUN_STREAMS
    if (rc == PTO_OK)
        rc = create_run_stream(r, slot);
#endif
    pthread_mutex_unlock(&r->core.lock);
    return rc;
}

int runner_abandon_slot(Runner *r, uint32_t slot)
{
    if (slot >= OB_SLOTS)
        return PTO_OK;
    int rc = PTO_OK;
    pthread_mutex_lock(&r->core.lock);
    if (r->core.initialized) {
        rc = ob_retire_stream(r, r->slots[slot].run_aicore, slot);
        r->slots[slot].run_aicore = NULL;
    }
    pthread_mutex_unlock(&r->core.lock);
    return rc;
}
