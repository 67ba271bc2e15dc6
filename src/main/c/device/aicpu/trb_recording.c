/* A program's recorded graph on the device (trb_recording.h). */
#include "device/aicpu/trb_recording.h"

#include <string.h>

#include "util/last_error.h"
#include "orch/program_orchestration.h"
#include "device/aicpu/trb_orch_api.h"
#include "ptorun/pto_runtime_c_api.h"

#define OP_BYTE(w) ((uint32_t)((w) & 0xffu))
#define HAS_VIEW (1u << 8)

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
        uint32_t view = is_tensor(p->direction) && p->view.ndims != 0 ? HAS_VIEW : 0;
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

/* One recorded task at word `index` (w there, avail words left): its params
   relocated, then submitted. */
static int replay_task(TrbRun *t, TrbReplayBatch *b, uint64_t index, const uint64_t *w, uint64_t avail,
                       uint64_t *words)
{
    uint32_t n = (uint32_t)(w[0] >> 8) & 0xffu, after = (uint32_t)(w[0] >> 16) & 1u, func_id = (uint32_t)(w[0] >> 32);
    if (avail < 2 || n > PTO_MAX_TASK_PARAMS)
        return malformed(t, index);
    uint64_t deps = w[1], at = 2;
    PtoTaskParam params[PTO_MAX_TASK_PARAMS];
    for (uint32_t i = 0; i < n; i++) {
        if (avail - at < 3)
            return malformed(t, index);
        uint32_t direction = (uint32_t)w[at] & 0xffu, origin = (uint32_t)(w[at] >> 32);
        int ok;
        uint64_t base = base_of(t, origin, &ok);
        if (!ok)
            return malformed(t, index);
        PtoTaskParam *p = &params[i];
        memset(p, 0, sizeof *p);
        p->direction = direction;
        p->value = base + w[at + 1];
        p->bytes = w[at + 2];
        int view = (w[at] & HAS_VIEW) != 0;
        at += 3;
        if (view) {
            if (avail - at < PTO_TRB_VIEW_WORDS)
                return malformed(t, index);
            memcpy(&p->view, &w[at], sizeof p->view);
            p->view.addr = p->value;
            at += PTO_TRB_VIEW_WORDS;
        }
    }
    if (deps > (avail - at) / 2)
        return malformed(t, index);
    *words = at + 2 * deps;
    return trb_submit_replayed(t, b, func_id, params, n, (int)after, &w[at], (uint32_t)deps);
}

/* The recording's operations in order; tasks in batches (trb_orch_api.h), every
   other operation outside them. */
static int replay_ops(TrbRun *t, void *handle, TrbReplayBatch *b)
{
    const PtoTrbRecording *rec = t->recording;
    const uint64_t *w = (const uint64_t *)(rec + 1);
    uint64_t at = 0, end = rec->used;
    while (at < end) {
        uint64_t op = w[at], words = 1;
        int rc;
        if (OP_BYTE(op) != PTO_TRB_OP_TASK)
            trb_replay_batch_end(t, b);
        switch (OP_BYTE(op)) {
        case PTO_TRB_OP_SCOPE_BEGIN: {
            uint32_t mode = (uint32_t)(op >> 8) & 0xffu;
            rc = mode == PTO_SCOPE_AUTO ? trb_orch_api.scope_begin(handle) : trb_orch_api.scope_begin_mode(handle, mode);
            break;
        }
        case PTO_TRB_OP_SCOPE_END:
            rc = trb_orch_api.scope_end(handle);
            break;
        case PTO_TRB_OP_ALLOC: {
            uint32_t local = (uint32_t)(op >> 8);
            if (end - at < 2 || local >= PTO_PROGRAM_MAX_LOCALS)
                return malformed(t, at);
            uint64_t addr = trb_orch_api.alloc_tensor(handle, w[at + 1]);
            if (addr == 0)
                return pto_fail(PTO_ERR_OUT_OF_MEMORY, "recorded ALLOC_TENSOR (local %u, %llu bytes): %s", local,
                                (unsigned long long)w[at + 1], pto_last_error());
            t->locals[local] = addr;
            words = 2;
            rc = PTO_OK;
            break;
        }
        case PTO_TRB_OP_TASK:
            rc = replay_task(t, b, at, &w[at], end - at, &words);
            break;
        default:
            return malformed(t, at);
        }
        if (rc != PTO_OK)
            return rc;
        at += words;
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
