/*
 * Who may use the runner (docs/lifecycle.md, sections 1 and 6): at most two
 * reservations {owner, slot, bank, permits_overlap}, one per prepared run
 * from prepare to finalize, and the single execution claim, held by the run
 * that executes from launch to finalize. Pure bookkeeping: the device context
 * calls these under its lock. Owners are opaque pointers (NativeRunContext).
 */
#ifndef PTORUN_RUN_OWNERSHIP_H
#define PTORUN_RUN_OWNERSHIP_H

#include <stdint.h>

#include "ptorun/pto_runtime_c_api.h"

typedef struct RunReservation {
    const void *owner;          /* NULL: the entry is free */
    uint32_t slot;
    uint32_t bank;
    int permits_overlap;
    int shares_bank;            /* the bank is the context's one copy (DEVICE_SCRATCH arenas):
                                   another run sharing it may hold it too (docs/lifecycle.md, 6) */
    uint64_t run_id;            /* identity, for messages only */
    uint64_t run_epoch;
} RunReservation;

typedef struct RunOwnership {
    RunReservation reservations[PTO_PIPELINE_MAX_DEPTH];
    const void *claim_owner;    /* the run holding the execution claim, or NULL */
} RunOwnership;

typedef enum RunAdmission {
    RUN_ADMITTED = 0,
    RUN_REFUSED_ALREADY_RESERVED,       /* this owner holds a reservation already */
    RUN_REFUSED_SLOT_TAKEN,             /* another run holds the same pipeline slot */
    RUN_REFUSED_BANK_TAKEN,             /* another run holds the same arena bank */
    RUN_REFUSED_FULL,                   /* every reservation is taken */
    RUN_REFUSED_OVERLAP_NOT_PERMITTED,  /* this run may not be a successor */
    RUN_REFUSED_PREDECESSOR_FORBIDS,    /* the other run permits no successor */
    RUN_REFUSED_PREDECESSOR_NOT_LAUNCHED, /* the other run does not hold the claim */
} RunAdmission;

typedef enum RunClaim {
    RUN_CLAIMED = 0,
    RUN_CLAIM_NOT_RESERVED,             /* the owner holds no reservation */
    RUN_CLAIM_BUSY,                     /* another run holds the claim */
} RunClaim;

/* Admits `request` (owner, slot, bank, permits_overlap, shares_bank, identity) or
 * says why not; `*blocker` (optional) receives a copy of the reservation that
 * refused it (owner NULL when none did). A second run is admitted only as a
 * successor: both permit overlap, the first holds the execution claim, the slots
 * differ and so do the banks, unless both runs share theirs (shares_bank). */
RunAdmission run_ownership_reserve(RunOwnership *o, const RunReservation *request, RunReservation *blocker);
void run_ownership_release_reservation(RunOwnership *o, const void *owner);

/* Takes the execution claim for a reserved owner; idempotent for the holder.
 * `*holder` (optional) receives a copy of the holder's reservation when busy. */
RunClaim run_ownership_claim(RunOwnership *o, const void *owner, RunReservation *holder);
void run_ownership_release_claim(RunOwnership *o, const void *owner);
int run_ownership_holds_claim(const RunOwnership *o, const void *owner);

/* Copies the reservation of the run holding the execution claim into *holder and
 * returns 1; 0 (and *holder zeroed) when nobody holds it. */
int run_ownership_claim_holder(const RunOwnership *o, RunReservation *holder);

/* Number of reservations held: registry changes and device teardown wait for 0. */
unsigned run_ownership_outstanding(const RunOwnership *o);

const char *run_admission_reason(RunAdmission a);

/* Why a run may not take part in an overlap (as predecessor or successor), or
 * NULL when it may: the runtime must support concurrent prepare, the contract's
 * depth must exceed 1, and the run must have no diagnostic on. */
const char *run_overlap_refusal(int runtime_overlaps, uint32_t pipeline_depth, int has_diagnostics);

#endif
