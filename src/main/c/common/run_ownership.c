#include "run_ownership.h"

#include <stddef.h>

static RunReservation *find_reservation(RunOwnership *o, const void *owner)
{
    for (unsigned i = 0; i < PTO_PIPELINE_MAX_DEPTH; i++)
        if (o->reservations[i].owner == owner)
            return &o->reservations[i];
    return NULL;
}

/* Checks the request's owner, slot and bank against one held reservation. A bank
   both runs share is no conflict: it is the context's one copy, and the runtime
   keeps a successor off what its predecessor uses there. */
static RunAdmission conflict_with(const RunReservation *held, const RunReservation *request)
{
    if (held->owner == request->owner)
        return RUN_REFUSED_ALREADY_RESERVED;
    if (held->slot == request->slot)
        return RUN_REFUSED_SLOT_TAKEN;
    if (held->bank == request->bank && !(held->shares_bank && request->shares_bank))
        return RUN_REFUSED_BANK_TAKEN;
    return RUN_ADMITTED;
}

/* May a run permitting `permits_overlap` follow `predecessor`? */
static RunAdmission successor_admission(const RunOwnership *o, const RunReservation *predecessor,
                                        int permits_overlap)
{
    if (!permits_overlap)
        return RUN_REFUSED_OVERLAP_NOT_PERMITTED;
    if (!predecessor->permits_overlap)
        return RUN_REFUSED_PREDECESSOR_FORBIDS;
    if (o->claim_owner != predecessor->owner)
        return RUN_REFUSED_PREDECESSOR_NOT_LAUNCHED;
    return RUN_ADMITTED;
}

RunAdmission run_ownership_reserve(RunOwnership *o, const RunReservation *request, RunReservation *blocker)
{
    RunReservation *free_entry = NULL;
    const RunReservation *held = NULL;
    unsigned held_count = 0;
    if (blocker != NULL)
        *blocker = (RunReservation){ 0 };
    if (request->owner == NULL)
        return RUN_REFUSED_FULL; /* a NULL owner would read as a free entry */

    for (unsigned i = 0; i < PTO_PIPELINE_MAX_DEPTH; i++) {
        RunReservation *r = &o->reservations[i];
        if (r->owner == NULL) {
            if (free_entry == NULL)
                free_entry = r;
            continue;
        }
        RunAdmission conflict = conflict_with(r, request);
        if (conflict != RUN_ADMITTED) {
            if (blocker != NULL)
                *blocker = *r;
            return conflict;
        }
        held = r;
        held_count++;
    }
    if (free_entry == NULL || held_count > 1)
        return RUN_REFUSED_FULL;
    if (held != NULL) {
        RunAdmission a = successor_admission(o, held, request->permits_overlap);
        if (a != RUN_ADMITTED) {
            if (blocker != NULL)
                *blocker = *held;
            return a;
        }
    }
    *free_entry = *request;
    return RUN_ADMITTED;
}

void run_ownership_release_reservation(RunOwnership *o, const void *owner)
{
    RunReservation *r = find_reservation(o, owner);
    if (r != NULL && owner != NULL)
        *r = (RunReservation){ 0 };
}

RunClaim run_ownership_claim(RunOwnership *o, const void *owner, RunReservation *holder)
{
    if (holder != NULL)
        *holder = (RunReservation){ 0 };
    if (owner == NULL || find_reservation(o, owner) == NULL)
        return RUN_CLAIM_NOT_RESERVED;
    if (o->claim_owner != NULL && o->claim_owner != owner) {
        if (holder != NULL) {
            const RunReservation *r = find_reservation(o, o->claim_owner);
            *holder = r != NULL ? *r : (RunReservation){ .owner = o->claim_owner };
        }
        return RUN_CLAIM_BUSY;
    }
    o->claim_owner = owner;
    return RUN_CLAIMED;
}

void run_ownership_release_claim(RunOwnership *o, const void *owner)
{
    if (owner != NULL && o->claim_owner == owner)
        o->claim_owner = NULL;
}

int run_ownership_holds_claim(const RunOwnership *o, const void *owner)
{
    return owner != NULL && o->claim_owner == owner;
}

int run_ownership_claim_holder(const RunOwnership *o, RunReservation *holder)
{
    *holder = (RunReservation){ 0 };
    for (unsigned i = 0; o->claim_owner != NULL && i < PTO_PIPELINE_MAX_DEPTH; i++) {
        if (o->reservations[i].owner == o->claim_owner) {
            *holder = o->reservations[i];
            return 1;
        }
    }
    return 0;
}

unsigned run_ownership_outstanding(const RunOwnership *o)
{
    unsigned n = 0;
    for (unsigned i = 0; i < PTO_PIPELINE_MAX_DEPTH; i++)
        n += o->reservations[i].owner != NULL;
    return n;
}

const char *run_admission_reason(RunAdmission a)
{
    switch (a) {
    case RUN_ADMITTED:
        return "admitted";
    case RUN_REFUSED_ALREADY_RESERVED:
        return "this run already holds a reservation";
    case RUN_REFUSED_SLOT_TAKEN:
        return "its pipeline slot is reserved by another native run";
    case RUN_REFUSED_BANK_TAKEN:
        return "its arena bank is reserved by another native run";
    case RUN_REFUSED_FULL:
        return "every reservation of the device context is taken";
    case RUN_REFUSED_OVERLAP_NOT_PERMITTED:
        return "another native run is outstanding and this run may not overlap it";
    case RUN_REFUSED_PREDECESSOR_FORBIDS:
        return "the outstanding native run permits no successor (it has a diagnostic on)";
    case RUN_REFUSED_PREDECESSOR_NOT_LAUNCHED:
        return "requires an active predecessor: the outstanding native run has not been launched";
    }
    return "refused";
}

const char *run_overlap_refusal(int runtime_overlaps, uint32_t pipeline_depth, int has_diagnostics)
{
    if (!runtime_overlaps)
        return "this library cannot prepare a run while another executes";
    if (pipeline_depth < 2)
        return "the pipeline contract has depth 1";
    if (has_diagnostics)
        return "a run with a diagnostic on never overlaps another run";
    return NULL;
}
