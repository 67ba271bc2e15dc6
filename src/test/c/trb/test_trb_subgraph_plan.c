/* trb's whole-run recording plan (runtime/trb/trb_recording.c) and sub-graphs: a
 * program that invokes one is not recorded whole (its tasks are the sub-graph
 * layer's, which records them itself); the same program without the INVOKE is. */
#include <stdlib.h>

#include "ptest.h"
#include "runtime/trb/trb_recording.h"
#include "test_callable.h"

static const uint8_t SIG[3] = { PTO_ARG_IN, PTO_ARG_OUT, PTO_ARG_SCALAR };

/* SUBGRAPH 0 (IN a, OUT b) { SUBMIT 1 (a, b) }; SUBMIT 1 (x, y); [INVOKE 0 (x, y)] */
static TrbRecordingPlan plan_of(int invoke)
{
    TestCallableBuilder b, body;
    tcb_init(&b);
    tcb_signature(&b, SIG, sizeof SIG);
    tcb_child(&b, 1, PTO_CORE_AIV, "vcopy");
    tcb_init(&body);
    PtoProgramParam copy[] = { tcb_tensor(0, PTO_ARG_IN, 0, 64), tcb_tensor(1, PTO_ARG_OUT, 0, 64) };
    tcb_submit(&body, 1, copy, 2);
    const uint8_t dirs[2] = { PTO_ARG_IN, PTO_ARG_OUT };
    tcb_subgraph(&b, 0, dirs, 2, &body);
    tcb_free(&body);
    tcb_submit(&b, 1, copy, 2);
    if (invoke)
        tcb_invoke(&b, 0, copy, 2);
    uint32_t size;
    uint8_t *c = tcb_build(&b, &size);
    tcb_free(&b);
    ChipCallableView v;
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    TrbRecordingPlan plan = { 0 };
    int rc = chip_callable_decode(c, &v, msg, sizeof msg);
    if (rc != PTO_OK)
        fprintf(stderr, "decode: %s\n", msg);
    CHECK_EQ_INT(rc, PTO_OK);
    if (rc == PTO_OK)
        trb_recording_plan(&v, &plan);
    free(c);
    return plan;
}

TEST(trb_does_not_record_a_program_that_invokes_a_subgraph_whole)
{
    TrbRecordingPlan plain = plan_of(0), invoking = plan_of(1);
    CHECK_EQ_INT(plain.recordable, 1);
    CHECK_EQ_INT(plain.tasks, 1);   /* the SUBGRAPH alone submits nothing */
    CHECK_EQ_INT(invoking.recordable, 0);
}
