/* Compiling a trb recording into the graph a replay walks (trb_walk_image.h). */
#include "runtime/trb/trb_walk_image.h"

#include <stdlib.h>
#include <string.h>

#include "format/trb_recording_ops.h"
#include "orch/program_orchestration.h"
#include "ptorun/pto_runtime_c_api.h"
#include "util/last_error.h"
#include "util/sorted_search.h"
#include "util/tensor_view.h"

/* What the recording holds, counted before anything is laid out. */
typedef struct Counts {
    uint64_t tasks, args, views, edges, locals_bytes;
} Counts;

/* Where each local of the program is in the current iteration: its offset in the
   locals' block, UINT64_MAX before its first allocation. */
typedef struct Locals {
    uint64_t offset[PTO_PROGRAM_MAX_LOCALS];
    uint64_t top;
} Locals;

static int bad(const char *what)
{
    return pto_fail(PTO_ERR_INVALID_ARGUMENT, "trb walk image: %s", what);
}

static int place_local(Locals *l, const TrbRecordedOp *op)
{
    if (op->local >= PTO_PROGRAM_MAX_LOCALS)
        return 0;
    uint64_t at = (l->top + PTO_TRB_HEAP_ALIGN - 1) / PTO_TRB_HEAP_ALIGN * PTO_TRB_HEAP_ALIGN;
    if (at < l->top || op->bytes > UINT64_MAX - at)
        return 0;
    l->offset[op->local] = at;
    l->top = at + op->bytes;
    return 1;
}

/* A task's params as the kernel gets them, relative to their bases; each one's
   base index (PTO_TRB_WALK_BASE_*, with PTO_GRAPH_BASE_SCALAR for a scalar). */
static int relative_params(const TrbRecordedOp *op, const Locals *l, PtoTaskParam *params, uint32_t *bases)
{
    for (uint32_t i = 0; i < op->param_count; i++) {
        const TrbRecordedParam *r = &op->params[i];
        PtoTaskParam *p = &params[i];
        memset(p, 0, sizeof *p);
        p->direction = r->direction;
        p->value = r->relative;
        p->bytes = r->bytes;
        if (r->origin >= PTO_PARAM_ORIGIN_LOCAL(0)) {
            uint32_t j = r->origin - PTO_PARAM_ORIGIN_LOCAL(0);
            if (j >= PTO_PROGRAM_MAX_LOCALS || l->offset[j] == UINT64_MAX)
                return 0;
            p->value += l->offset[j];
            bases[i] = PTO_TRB_WALK_BASE_LOCALS;
        } else {
            bases[i] = r->origin; /* FIXED 0: absolute; an argument at its origin */
        }
        if (r->direction == PTO_ARG_SCALAR && bases[i] != 0)
            bases[i] |= PTO_GRAPH_BASE_SCALAR;
        if (r->has_view) {
            p->view = r->view;
            p->view.addr = p->value;
        }
    }
    return 1;
}

/* Pass 1: the counts, every operation read and every local placed once. */
static int count(const uint64_t *words, uint64_t used, Counts *c)
{
    Locals l;
    memset(c, 0, sizeof *c);
    memset(&l, 0xff, sizeof l.offset);
    l.top = 0;
    TrbRecordedOp op;
    PtoTaskParam params[PTO_MAX_TASK_PARAMS];
    uint32_t bases[PTO_MAX_TASK_PARAMS];
    for (uint64_t at = 0; at < used;) {
        if (!trb_recording_read(words, used, &at, &op))
            return bad("the recording is malformed");
        if (op.op == PTO_TRB_OP_ALLOC && !place_local(&l, &op))
            return bad("an allocation does not fit");
        if (op.op != PTO_TRB_OP_TASK)
            continue;
        if (!relative_params(&op, &l, params, bases))
            return bad("a task uses a local before its allocation");
        for (uint32_t d = 0; d < op.producer_count; d++)
            if (op.producers[2 * d] >= c->tasks)
                return bad("a producer is not an earlier task");
        c->tasks++;
        c->args += op.param_count;
        c->views += tensor_view_params_kept(params, op.param_count) ? op.param_count : 0;
        c->edges += op.producer_count;
    }
    c->locals_bytes = l.top;
    return PTO_OK;
}

static const PtoTrbKernel *find_kernel(const PtoTrbKernel *kernels, uint32_t count, uint32_t func_id)
{
    uint32_t a = PTO_SORTED_FIRST(kernels, count, func_id, func_id, 0);
    return a < count && kernels[a].func_id == func_id ? &kernels[a] : NULL;
}

static uint64_t align8(uint64_t n)
{
    return (n + 7) & ~(uint64_t)7;
}

/* The header, every region placed; the image's size. */
static uint64_t lay_out(const Counts *c, PtoGraphHeader *h)
{
    uint64_t at = align8(sizeof *h);
    *h = (PtoGraphHeader){ .magic = PTO_GRAPH_MAGIC,
                           .task_count = (uint32_t)c->tasks,
                           .arg_total = (uint32_t)c->args,
                           .fanout_total = (uint32_t)c->edges,
                           .view_total = (uint32_t)c->views,
                           .base_count = PTO_TRB_WALK_BASES };
    h->tasks_offset = at;
    at = align8(at + c->tasks * sizeof(PtoGraphTask));
    h->args_offset = at;
    at = align8(at + c->args * sizeof(uint64_t));
    h->arg_sizes_offset = at;
    at = align8(at + c->args * sizeof(uint64_t));
    h->views_offset = at;
    at = align8(at + c->views * sizeof(PtoTensorView));
    h->arg_bases_offset = at;
    at = align8(at + c->args * sizeof(uint32_t));
    h->fanout_offset = at;
    return align8(at + c->edges * sizeof(uint32_t));
}

/* Pass 2: every task, its params and fan-in; each producer's fan-out counted. */
static int fill_tasks(const uint64_t *words, uint64_t used, const PtoTrbKernel *kernels, uint32_t kernel_count,
                      uint8_t *image)
{
    const PtoGraphHeader *h = (const PtoGraphHeader *)image;
    PtoGraphTask *tasks = (PtoGraphTask *)(image + h->tasks_offset);
    uint64_t *args = (uint64_t *)(image + h->args_offset), *sizes = (uint64_t *)(image + h->arg_sizes_offset);
    PtoTensorView *views = (PtoTensorView *)(image + h->views_offset);
    uint32_t *arg_bases = (uint32_t *)(image + h->arg_bases_offset);
    Locals l;
    memset(&l, 0xff, sizeof l.offset);
    l.top = 0;
    TrbRecordedOp op;
    PtoTaskParam params[PTO_MAX_TASK_PARAMS];
    uint32_t task = 0, arg = 0, view = 0;
    for (uint64_t at = 0; at < used;) {
        trb_recording_read(words, used, &at, &op); /* pass 1 read them all */
        if (op.op == PTO_TRB_OP_ALLOC)
            place_local(&l, &op);
        if (op.op != PTO_TRB_OP_TASK)
            continue;
        const PtoTrbKernel *k = find_kernel(kernels, kernel_count, op.func_id);
        if (k == NULL)
            return bad("a task's func_id is not a child of the callable");
        relative_params(&op, &l, params, &arg_bases[arg]);
        int kept = tensor_view_params_kept(params, op.param_count);
        tasks[task] = (PtoGraphTask){ .kernel_addr = k->addr,
                                      .func_id = k->func_id,
                                      .core_type = k->core_type,
                                      .arg_index = arg,
                                      .arg_count = op.param_count,
                                      .fanin_count = op.producer_count,
                                      .view_index = kept ? view + 1 : 0 };
        for (uint32_t i = 0; i < op.param_count; i++, arg++) {
            args[arg] = params[i].value;
            sizes[arg] = params[i].direction == PTO_ARG_SCALAR ? 0 : params[i].bytes;
            if (kept)
                views[view++] = tensor_view_kernel_entry(&params[i]);
        }
        for (uint32_t d = 0; d < op.producer_count; d++)
            tasks[op.producers[2 * d]].fanout_count++;
        task++;
    }
    return PTO_OK;
}

/* Pass 3: each producer's consumers, ascending, in its slice of the fan-out array. */
static void fill_fanout(const uint64_t *words, uint64_t used, uint8_t *image)
{
    const PtoGraphHeader *h = (const PtoGraphHeader *)image;
    PtoGraphTask *tasks = (PtoGraphTask *)(image + h->tasks_offset);
    uint32_t *fanout = (uint32_t *)(image + h->fanout_offset);
    uint32_t next = 0;
    for (uint32_t i = 0; i < h->task_count; i++) {
        tasks[i].fanout_index = next;
        next += tasks[i].fanout_count;
        tasks[i].fanout_count = 0;
    }
    TrbRecordedOp op;
    uint32_t consumer = 0;
    for (uint64_t at = 0; at < used;) {
        trb_recording_read(words, used, &at, &op);
        if (op.op != PTO_TRB_OP_TASK)
            continue;
        for (uint32_t d = 0; d < op.producer_count; d++) {
            PtoGraphTask *p = &tasks[op.producers[2 * d]];
            fanout[p->fanout_index + p->fanout_count++] = consumer;
        }
        consumer++;
    }
}

int trb_walk_compile(const uint64_t *words, uint64_t used, uint64_t tasks, const PtoTrbKernel *kernels,
                     uint32_t kernel_count, TrbWalkImage *out)
{
    Counts c;
    int rc = count(words, used, &c);
    if (rc != PTO_OK)
        return rc;
    if (c.tasks != tasks || c.tasks >= UINT32_MAX || c.args >= UINT32_MAX || c.views >= UINT32_MAX ||
        c.edges >= UINT32_MAX)
        return bad("the recording's tasks, params or edges are past what an image holds");
    PtoGraphHeader h;
    uint64_t size = lay_out(&c, &h);
    uint8_t *image = calloc(1, size);
    if (image == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "trb walk image: out of host memory for %llu bytes",
                        (unsigned long long)size);
    memcpy(image, &h, sizeof h);
    if ((rc = fill_tasks(words, used, kernels, kernel_count, image)) != PTO_OK) {
        free(image);
        return rc;
    }
    fill_fanout(words, used, image);
    *out = (TrbWalkImage){ image, size, (uint32_t)c.tasks, c.locals_bytes };
    return PTO_OK;
}

void trb_walk_image_free(TrbWalkImage *img)
{
    free(img->bytes);
    memset(img, 0, sizeof *img);
}
