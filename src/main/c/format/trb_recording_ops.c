/* Reading a trb recording (trb_recording_ops.h). */
#include "format/trb_recording_ops.h"

#include <string.h>

#define OP_BYTE(w) ((uint32_t)((w) & 0xffu))

static int read_task(const uint64_t *w, uint64_t avail, uint64_t *words, TrbRecordedOp *op)
{
    op->param_count = (uint32_t)(w[0] >> 8) & 0xffu;
    op->after = (int)((w[0] >> 16) & 1u);
    op->func_id = (uint32_t)(w[0] >> 32);
    if (avail < 2 || op->param_count > PTO_MAX_TASK_PARAMS)
        return 0;
    uint64_t producers = w[1], at = 2;
    for (uint32_t i = 0; i < op->param_count; i++) {
        if (avail - at < 3)
            return 0;
        TrbRecordedParam *p = &op->params[i];
        p->direction = (uint32_t)w[at] & 0xffu;
        p->origin = (uint32_t)(w[at] >> 32);
        p->relative = w[at + 1];
        p->bytes = w[at + 2];
        p->has_view = (w[at] & TRB_RECORDED_HAS_VIEW) != 0;
        at += 3;
        if (p->has_view) {
            if (avail - at < PTO_TRB_VIEW_WORDS)
                return 0;
            memcpy(&p->view, &w[at], sizeof p->view);
            at += PTO_TRB_VIEW_WORDS;
        } else {
            memset(&p->view, 0, sizeof p->view);
        }
    }
    if (producers > (avail - at) / 2)
        return 0;
    op->producer_count = (uint32_t)producers;
    op->producers = &w[at];
    *words = at + 2 * producers;
    return 1;
}

int trb_recording_read(const uint64_t *words, uint64_t used, uint64_t *at, TrbRecordedOp *op)
{
    if (*at >= used)
        return 0;
    const uint64_t *w = &words[*at];
    uint64_t avail = used - *at, n = 1;
    op->op = OP_BYTE(w[0]);
    switch (op->op) {
    case PTO_TRB_OP_SCOPE_BEGIN:
        op->mode = (uint32_t)(w[0] >> 8) & 0xffu;
        break;
    case PTO_TRB_OP_SCOPE_END:
        break;
    case PTO_TRB_OP_ALLOC:
        if (avail < 2)
            return 0;
        op->local = (uint32_t)(w[0] >> 8);
        op->bytes = w[1];
        n = 2;
        break;
    case PTO_TRB_OP_TASK:
        if (!read_task(w, avail, &n, op))
            return 0;
        break;
    default:
        return 0;
    }
    *at += n;
    return 1;
}
