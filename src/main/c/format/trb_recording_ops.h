/*
 * Reading a trb recording (PtoTrbRecording's words, device/pto_trb_abi.h) one
 * operation at a time. The device replays a recording with it
 * (device/aicpu/trb_recording.c) and the host compiles one into the graph a
 * replay walks (runtime/trb/trb_walk_image.c): one reader, so both read the
 * same operations from the same words.
 */
#ifndef PTORUN_TRB_RECORDING_OPS_H
#define PTORUN_TRB_RECORDING_OPS_H

#include <stdint.h>

#include "device/pto_trb_abi.h"
#include "ptorun/pto_tensor.h"

/* A TASK param's first word: direction | TRB_RECORDED_HAS_VIEW | origin << 32. */
#define TRB_RECORDED_HAS_VIEW (1u << 8)

/* A task's param as recorded: its value relative to its origin's base
   (PTO_PARAM_ORIGIN_*, orch/program_orchestration.h). */
typedef struct TrbRecordedParam {
    uint32_t direction;       /* PtoArgDirection */
    uint32_t origin;
    uint64_t relative;        /* the value minus its origin's base in the recording run */
    uint64_t bytes;
    int has_view;             /* a strided view follows; its addr is 0 */
    PtoTensorView view;
} TrbRecordedParam;

typedef struct TrbRecordedOp {
    uint32_t op;              /* PTO_TRB_OP_* */
    uint32_t mode;            /* SCOPE_BEGIN: PtoScopeMode */
    uint32_t local;           /* ALLOC: the local id */
    uint64_t bytes;           /* ALLOC */
    /* TASK */
    uint32_t func_id;
    uint32_t param_count;
    int after;                /* a submit_after */
    TrbRecordedParam params[PTO_MAX_TASK_PARAMS];
    uint32_t producer_count;
    const uint64_t *producers; /* (task id, ref) pairs, ascending task id */
} TrbRecordedOp;

/* Reads the operation at words[*at] of `used` words and moves *at past it.
   0 when the words there are not a whole operation. */
int trb_recording_read(const uint64_t *words, uint64_t used, uint64_t *at, TrbRecordedOp *op);

#endif
