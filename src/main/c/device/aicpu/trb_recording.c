/* A program's recorded graph on the device (trb_recording.h). */
#include "device/aicpu/trb_recording.h"

#include <string.h>

#include "util/last_error.h"
#include "format/trb_recording_ops.h"
#include "orch/program_orchestration.h"
#include "device/aicpu/trb_orch_api.h"
#include "ptorun/pto_runtime_c_api.h"

static int is_tensor(uint32_t direction)
{
    return direction == PTO_ARG_IN || direction == PTO_ARG_OUT || direction == PTO_ARG_INOUT;
}

int trb_recording_bind(TrbRun *t, const PtoTrbWork *w)
{
    t->record_mode = PTO_TRB_RECORD_OFF;
    t->recording = NULL;
    t->recording_ok = 0;
    t->record_refs = NULL;
    if (w->record_mode == PTO_TRB_RECORD_OFF)
        return 1;
    if (w->record_mode == PTO_TRB_WALK) { /* trb_walk.h checks the rest */
        t->record_mode = w->orchestration_kind == PTO_ORCH_PROGRAM ? PTO_TRB_WALK : PTO_TRB_RECORD_OFF;
        return w->orchestration_kind == PTO_ORCH_PROGRAM;
    }
    if ((w->record_mode != PTO_TRB_RECORD && w->record_mode != PTO_TRB_REPLAY) ||
        w->orchestration_kind != PTO_ORCH_PROGRAM || w->recording_dev == 0 || w->recording_dev % 8 != 0)
        return 0;
    PtoTrbRecording *rec = (PtoTrbRecording *)(uintptr_t)w->recording_dev;
    if (rec->magic != PTO_TRB_RECORDING_MAGIC)
        return 0;
    if (w->record_mode == PTO_TRB_REPLAY) {
        if (!rec->complete || rec->used > rec->capacity)
            return 0;
    } else {
        if (w->record_scratch_dev == 0 || w->record_scratch_dev % 8 != 0 || w->record_map_entries == 0 ||
            w->record_map_entries > UINT32_MAX - 1 || w->record_map_views > UINT32_MAX - 1)
            return 0;
        rec->complete = 0;
        rec->used = rec->task_count = 0;
        PtoTrbAccess *pool = (PtoTrbAccess *)(uintptr_t)w->record_scratch_dev;
        PtoTensorView *views = (PtoTensorView *)(pool + w->record_map_entries);
        t->record_refs = (uint64_t *)(views + w->record_map_views);
        trb_map_reset(&t->map, pool, (uint32_t)w->record_map_entries, views, (uint32_t)w->record_map_views);
        t->recording_ok = 1;
    }
    t->record_mode = w->record_mode;
    t->recording = rec;
    return 1;
}

/* ---- recording ------------------------------------------------------------------------ */

static int recording(const TrbRun *t)
{
    return t->record_mode == PTO_TRB_RECORD && t->recording_ok;
}

void trb_record_lose(TrbRun *t)
{
    t->recording_ok = 0;
}

/* Room for `words` more words (else the recording is lost): where they go. */
static uint64_t *reserve(TrbRun *t, uint64_t words)
{
    PtoTrbRecording *rec = t->recording;
    if (words > rec->capacity - rec->used) {
        trb_record_lose(t);
        return NULL;
    }
    uint64_t *at = (uint64_t *)(rec + 1) + rec->used;
    rec->used += words;
    return at;
}

void trb_record_scope_begin(TrbRun *t, uint32_t mode)
{
    uint64_t *w = recording(t) ? reserve(t, 1) : NULL;
    if (w != NULL)
        w[0] = PTO_TRB_OP_SCOPE_BEGIN | (uint64_t)(mode & 0xffu) << 8;
}

void trb_record_scope_end(TrbRun *t)
{
    uint64_t *w = recording(t) ? reserve(t, 1) : NULL;
    if (w != NULL)
        w[0] = PTO_TRB_OP_SCOPE_END;
}

void trb_record_alloc(TrbRun *t, uint64_t bytes, uint64_t addr)
{
    if (!recording(t))
        return;
    /* the interpreter names the local it allocates (program_orchestration.h) */
    uint32_t origin = t->record_origins[0];
    if (origin < PTO_PARAM_ORIGIN_LOCAL(0) || origin - PTO_PARAM_ORIGIN_LOCAL(0) >= PTO_PROGRAM_MAX_LOCALS) {
        trb_record_lose(t);
        return;
    }
    uint32_t local = origin - PTO_PARAM_ORIGIN_LOCAL(0);
    uint64_t *w = reserve(t, 2);
    if (w == NULL)
        return;
    w[0] = PTO_TRB_OP_ALLOC | (uint64_t)local << 8;
    w[1] = bytes;
    t->locals[local] = addr;
}

/* The base a param of this origin is relative to in this run; 0 with *ok 0 when
   the origin names nothing of the run. */
static uint64_t base_of(const TrbRun *t, uint32_t origin, int *ok)
{
    const ChipStorageTaskArgs *a = t->args;
    *ok = 1;
    if (origin == PTO_PARAM_ORIGIN_FIXED)
        return 0;
    if (origin < PTO_PARAM_ORIGIN_SCALAR(0)) {
        uint32_t i = origin - PTO_PARAM_ORIGIN_TENSOR(0);
        if (i < (uint32_t)a->tensor_count)
            return a->tensors[i].addr;
    } else if (origin < PTO_PARAM_ORIGIN_LOCAL(0)) {
        uint32_t i = origin - PTO_PARAM_ORIGIN_SCALAR(0);
        if (i < (uint32_t)a->scalar_count)
            return a->scalars[i];
    } else if (origin - PTO_PARAM_ORIGIN_LOCAL(0) < PTO_PROGRAM_MAX_LOCALS) {
        return t->locals[origin - PTO_PARAM_ORIGIN_LOCAL(0)];
    }
    *ok = 0;
    return 0;
}

void trb_record_task(TrbRun *t, uint64_t task_id, uint64_t ref, uint32_t func_id, const PtoTaskParam *params,
                     uint32_t n, int after)
{
    if (!recording(t))
        return;
    if (task_id >= t->recording->task_capacity || task_id != t->recording->task_count) {
        trb_record_lose(t);
        return;
    }
    uint64_t words = 2 + 2 * (uint64_t)t->dep_count;
    for (uint32_t i = 0; i < n; i++)
        words += 3 + (is_tensor(params[i].direction) && params[i].view.ndims != 0 ? PTO_TRB_VIEW_WORDS : 0);
    uint64_t *w = reserve(t, words);
    if (w == NULL)
        return;
    *w++ = PTO_TRB_OP_TASK | (uint64_t)n << 8 | (uint64_t)(after != 0) << 16 | (uint64_t)func_id << 32;
    *w++ = t->dep_count;
    for (uint32_t i = 0; i < n; i++) {
        const PtoTaskParam *p = &params[i];
        int ok;
        uint32_t origin = t->record_origins[i];
        uint64_t base = base_of(t, origin, &ok);
        uint32_t view = is_tensor(p->direction) && p->view.ndims != 0 ? TRB_RECORDED_HAS_VIEW : 0;
        if (!ok || p->direction > 0xffu) {
            trb_record_lose(t);
            return;
        }
        *w++ = (p->direction | view) | (uint64_t)origin << 32;
        *w++ = p->value - base;
        *w++ = p->bytes;
        if (view) {
            PtoTensorView v = p->view;
            v.addr = 0; /* the value, relocated */
            memcpy(w, &v, sizeof v);
            w += PTO_TRB_VIEW_WORDS;
        }
    }
    for (uint32_t d = 0; d < t->dep_count; d++) {
        uint64_t producer = t->deps[2 * d];
        /* a producer whose slot was reused has its ref still: each task's ref is
           the same in every run of the recording (its ring and ring-local index) */
        *w++ = producer;
        *w++ = t->record_refs[producer];
    }
    t->record_refs[task_id] = ref;
    t->recording->task_count = task_id + 1;
}

void trb_record_finish(TrbRun *t, int succeeded)
{
    if (t->record_mode == PTO_TRB_RECORD && succeeded && t->recording_ok)
        t->recording->complete = 1;
}

/* ---- replaying ------------------------------------------------------------------------- */

static int malformed(TrbRun *t, uint64_t at)
{
    return trb_api_fail(t, PTO_ERR_DEVICE, "the recorded graph is malformed at word %llu", (unsigned long long)at);
}

/* One recorded task: its params relocated onto this run's bases, then submitted. */
static int replay_task(TrbRun *t, TrbReplayBatch *b, uint64_t index, const TrbRecordedOp *op)
{
    PtoTaskParam params[PTO_MAX_TASK_PARAMS];
    for (uint32_t i = 0; i < op->param_count; i++) {
        const TrbRecordedParam *r = &op->params[i];
        int ok;
        uint64_t base = base_of(t, r->origin, &ok);
        if (!ok)
            return malformed(t, index);
        PtoTaskParam *p = &params[i];
        memset(p, 0, sizeof *p);
        p->direction = r->direction;
        p->value = base + r->relative;
        p->bytes = r->bytes;
        if (r->has_view) {
            p->view = r->view;
            p->view.addr = p->value;
        }
    }
    return trb_submit_replayed(t, b, op->func_id, params, op->param_count, op->after, op->producers,
                               op->producer_count);
}

/* The recording's operations in order; tasks in batches (trb_orch_api.h), every
   other operation outside them. */
static int replay_ops(TrbRun *t, void *handle, TrbReplayBatch *b)
{
    const PtoTrbRecording *rec = t->recording;
    const uint64_t *w = (const uint64_t *)(rec + 1);
    uint64_t at = 0, end = rec->used;
    TrbRecordedOp op;
    while (at < end) {
        uint64_t index = at;
        if (!trb_recording_read(w, end, &at, &op))
            return malformed(t, index);
        if (op.op != PTO_TRB_OP_TASK)
            trb_replay_batch_end(t, b);
        int rc;
        switch (op.op) {
        case PTO_TRB_OP_SCOPE_BEGIN:
            rc = op.mode == PTO_SCOPE_AUTO ? trb_orch_api.scope_begin(handle)
                                           : trb_orch_api.scope_begin_mode(handle, op.mode);
            break;
        case PTO_TRB_OP_SCOPE_END:
            rc = trb_orch_api.scope_end(handle);
            break;
        case PTO_TRB_OP_ALLOC: {
            if (op.local >= PTO_PROGRAM_MAX_LOCALS)
                return malformed(t, index);
            uint64_t addr = trb_orch_api.alloc_tensor(handle, op.bytes);
            if (addr == 0)
                return pto_fail(PTO_ERR_OUT_OF_MEMORY, "recorded ALLOC_TENSOR (local %u, %llu bytes): %s", op.local,
                                (unsigned long long)op.bytes, pto_last_error());
            t->locals[op.local] = addr;
            rc = PTO_OK;
            break;
        }
        default: /* PTO_TRB_OP_TASK: the reader knows no other */
            rc = replay_task(t, b, index, &op);
            break;
        }
        if (rc != PTO_OK)
            return rc;
    }
    return PTO_OK;
}

int trb_replay(TrbRun *t, void *handle)
{
    TrbReplayBatch b = { 0 };
    int rc = replay_ops(t, handle, &b);
    trb_replay_batch_end(t, &b);
    return rc;
}
