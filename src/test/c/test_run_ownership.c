/* Reservations and the execution claim (common/run_ownership.c): the
 * admission rules of docs/lifecycle.md, section 6, unit by unit. */
#include "common/run_ownership.h"
#include "ptest.h"

static int a_run, b_run, c_run; /* owners are opaque pointers */

static RunReservation request(const void *owner, uint32_t slot, uint32_t bank, int permits)
{
    return (RunReservation){ .owner = owner, .slot = slot, .bank = bank, .permits_overlap = permits,
                             .run_id = (uint64_t)slot + 10, .run_epoch = (uint64_t)slot + 100 };
}

static RunAdmission reserve(RunOwnership *o, const void *owner, uint32_t slot, uint32_t bank, int permits,
                            RunReservation *blocker)
{
    RunReservation r = request(owner, slot, bank, permits);
    return run_ownership_reserve(o, &r, blocker);
}

TEST(first_run_is_admitted_alone)
{
    RunOwnership o = { 0 };
    CHECK_EQ_INT(reserve(&o, &a_run, 0, 0, 0, NULL), RUN_ADMITTED);
    CHECK_EQ_INT(run_ownership_outstanding(&o), 1);
    CHECK_EQ_INT(reserve(&o, &a_run, 1, 1, 1, NULL), RUN_REFUSED_ALREADY_RESERVED);
    run_ownership_release_reservation(&o, &a_run);
    CHECK_EQ_INT(run_ownership_outstanding(&o), 0);
    run_ownership_release_reservation(&o, &b_run); /* unknown owner: nothing happens */
    CHECK_EQ_INT(reserve(&o, NULL, 0, 0, 1, NULL), RUN_REFUSED_FULL);
    CHECK_EQ_INT(run_ownership_outstanding(&o), 0);
}

TEST(successor_needs_a_launched_predecessor)
{
    RunOwnership o = { 0 };
    RunReservation blocker;
    CHECK_EQ_INT(reserve(&o, &a_run, 0, 0, 1, NULL), RUN_ADMITTED);
    CHECK_EQ_INT(reserve(&o, &b_run, 1, 1, 1, &blocker), RUN_REFUSED_PREDECESSOR_NOT_LAUNCHED);
    CHECK(blocker.owner == &a_run);
    CHECK_EQ_INT(blocker.run_epoch, 100);
    CHECK_EQ_INT(run_ownership_claim(&o, &a_run, NULL), RUN_CLAIMED);
    CHECK_EQ_INT(reserve(&o, &b_run, 1, 1, 1, &blocker), RUN_ADMITTED);
    CHECK(blocker.owner == NULL);
    CHECK_EQ_INT(run_ownership_outstanding(&o), 2);
    CHECK_EQ_INT(reserve(&o, &c_run, 1, 1, 1, NULL), RUN_REFUSED_SLOT_TAKEN); /* no third run */
}

TEST(successor_on_the_same_slot_or_bank_is_refused)
{
    RunOwnership o = { 0 };
    RunReservation blocker;
    CHECK_EQ_INT(reserve(&o, &a_run, 0, 0, 1, NULL), RUN_ADMITTED);
    CHECK_EQ_INT(run_ownership_claim(&o, &a_run, NULL), RUN_CLAIMED);
    CHECK_EQ_INT(reserve(&o, &b_run, 0, 1, 1, &blocker), RUN_REFUSED_SLOT_TAKEN);
    CHECK(blocker.owner == &a_run && blocker.slot == 0);
    CHECK_EQ_INT(reserve(&o, &b_run, 1, 0, 1, &blocker), RUN_REFUSED_BANK_TAKEN);
    CHECK(blocker.owner == &a_run && blocker.bank == 0);
    CHECK_EQ_INT(run_ownership_outstanding(&o), 1);
}

TEST(a_bank_both_runs_share_admits_the_successor_and_the_claim_holder_is_named)
{
    RunOwnership o = { 0 };
    RunReservation blocker, holder;
    RunReservation a = request(&a_run, 0, 0, 1), b = request(&b_run, 1, 0, 1);
    a.shares_bank = b.shares_bank = 1;
    CHECK_EQ_INT(run_ownership_reserve(&o, &a, NULL), RUN_ADMITTED);
    CHECK_EQ_INT(run_ownership_claim_holder(&o, &holder), 0);
    CHECK(holder.owner == NULL);
    CHECK_EQ_INT(run_ownership_reserve(&o, &b, &blocker), RUN_REFUSED_PREDECESSOR_NOT_LAUNCHED);
    CHECK_EQ_INT(run_ownership_claim(&o, &a_run, NULL), RUN_CLAIMED);
    CHECK_EQ_INT(run_ownership_claim_holder(&o, &holder), 1);
    CHECK(holder.owner == &a_run && holder.run_epoch == 100);
    b.shares_bank = 0; /* only one side shares: the bank is taken */
    CHECK_EQ_INT(run_ownership_reserve(&o, &b, &blocker), RUN_REFUSED_BANK_TAKEN);
    CHECK(blocker.owner == &a_run);
    b.shares_bank = 1;
    CHECK_EQ_INT(run_ownership_reserve(&o, &b, &blocker), RUN_ADMITTED);
    CHECK_EQ_INT(run_ownership_outstanding(&o), 2);
    b.owner = &c_run;
    CHECK_EQ_INT(run_ownership_reserve(&o, &b, &blocker), RUN_REFUSED_SLOT_TAKEN); /* slots never share */
}

TEST(diagnostics_on_either_side_forbid_the_overlap)
{
    RunOwnership o = { 0 };
    CHECK_EQ_INT(reserve(&o, &a_run, 0, 0, 1, NULL), RUN_ADMITTED);
    CHECK_EQ_INT(run_ownership_claim(&o, &a_run, NULL), RUN_CLAIMED);
    int successor_permits = run_overlap_refusal(1, 2, 1) == NULL; /* diagnostic successor */
    CHECK_EQ_INT(reserve(&o, &b_run, 1, 1, successor_permits, NULL), RUN_REFUSED_OVERLAP_NOT_PERMITTED);

    RunOwnership p = { 0 };
    int predecessor_permits = run_overlap_refusal(1, 2, 1) == NULL; /* diagnostic predecessor */
    CHECK_EQ_INT(reserve(&p, &a_run, 0, 0, predecessor_permits, NULL), RUN_ADMITTED);
    CHECK_EQ_INT(run_ownership_claim(&p, &a_run, NULL), RUN_CLAIMED);
    CHECK_EQ_INT(reserve(&p, &b_run, 1, 1, 1, NULL), RUN_REFUSED_PREDECESSOR_FORBIDS);
}

TEST(overlap_needs_capability_depth_and_no_diagnostics)
{
    CHECK(run_overlap_refusal(1, 2, 0) == NULL);
    CHECK_CONTAINS(run_overlap_refusal(0, 2, 0), "cannot prepare a run while another executes");
    CHECK_CONTAINS(run_overlap_refusal(1, 1, 0), "depth 1");
    CHECK_CONTAINS(run_overlap_refusal(1, 2, 1), "diagnostic");

    /* depth 1: the runs permit nothing, so a second run is refused even behind a launched one */
    RunOwnership o = { 0 };
    int permits = run_overlap_refusal(1, 1, 0) == NULL;
    CHECK_EQ_INT(reserve(&o, &a_run, 0, 0, permits, NULL), RUN_ADMITTED);
    CHECK_EQ_INT(run_ownership_claim(&o, &a_run, NULL), RUN_CLAIMED);
    CHECK_EQ_INT(reserve(&o, &b_run, 1, 1, permits, NULL), RUN_REFUSED_OVERLAP_NOT_PERMITTED);
}

TEST(claim_is_single_and_needs_a_reservation)
{
    RunOwnership o = { 0 };
    RunReservation holder;
    CHECK_EQ_INT(run_ownership_claim(&o, &a_run, NULL), RUN_CLAIM_NOT_RESERVED);
    CHECK_EQ_INT(reserve(&o, &a_run, 0, 0, 1, NULL), RUN_ADMITTED);
    CHECK_EQ_INT(run_ownership_claim(&o, &a_run, NULL), RUN_CLAIMED);
    CHECK_EQ_INT(run_ownership_claim(&o, &a_run, NULL), RUN_CLAIMED); /* idempotent for the holder */
    CHECK_EQ_INT(reserve(&o, &b_run, 1, 1, 1, NULL), RUN_ADMITTED);
    CHECK_EQ_INT(run_ownership_claim(&o, &b_run, &holder), RUN_CLAIM_BUSY);
    CHECK(holder.owner == &a_run);
    CHECK_EQ_INT(holder.run_id, 10);
    CHECK(run_ownership_holds_claim(&o, &a_run));
    CHECK(!run_ownership_holds_claim(&o, &b_run));

    /* the predecessor is finalized: claim and reservation go, the successor launches */
    run_ownership_release_claim(&o, &b_run);    /* not the holder: nothing happens */
    CHECK(run_ownership_holds_claim(&o, &a_run));
    run_ownership_release_claim(&o, &a_run);
    run_ownership_release_reservation(&o, &a_run);
    CHECK_EQ_INT(run_ownership_claim(&o, &b_run, NULL), RUN_CLAIMED);
    CHECK_EQ_INT(run_ownership_outstanding(&o), 1);
    CHECK_CONTAINS(run_admission_reason(RUN_REFUSED_PREDECESSOR_NOT_LAUNCHED), "requires an active predecessor");
}
