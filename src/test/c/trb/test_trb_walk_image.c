/* Compiling a trb recording into the graph a replay walks
 * (runtime/trb/trb_walk_image.h): every task's kernel, arguments relative to
 * the walk's bases, kept views, fan-in and fan-out exactly as recorded, every
 * allocation of a local at a block offset of its own; and words that do not
 * compile refused. */
#include <stdlib.h>
#include <string.h>

#include "util/last_error.h"
#include "orch/program_orchestration.h"
#include "format/trb_recording_ops.h"
#include "ptest.h"
#include "runtime/trb/trb_walk_image.h"

enum { FN_A = 3, FN_B = 9 };

static const PtoTrbKernel kernels[] = { { 0x1000, FN_A, PTO_CORE_AIV }, { 0x2000, FN_B, PTO_CORE_AIC } };

/* A recording being written, as the device writes one (device/aicpu/trb_recording.c). */
typedef struct Words {
    uint64_t w[512];
    uint64_t n;
} Words;

static void op(Words *r, uint64_t word)
{
    r->w[r->n++] = word;
}

static void alloc(Words *r, uint32_t local, uint64_t bytes)
{
    op(r, PTO_TRB_OP_ALLOC | (uint64_t)local << 8);
    op(r, bytes);
}

static void task(Words *r, uint32_t func_id, uint32_t params, uint32_t producers)
{
    op(r, PTO_TRB_OP_TASK | (uint64_t)params << 8 | (uint64_t)func_id << 32);
    op(r, producers);
}

static void param(Words *r, uint32_t direction, uint32_t origin, uint64_t relative, uint64_t bytes)
{
    op(r, direction | (uint64_t)origin << 32);
    op(r, relative);
    op(r, bytes);
}

static void strided_param(Words *r, uint32_t direction, uint32_t origin, uint64_t relative, uint64_t bytes)
{
    op(r, direction | TRB_RECORDED_HAS_VIEW | (uint64_t)origin << 32);
    op(r, relative);
    op(r, bytes);
    PtoTensorView v;
    memset(&v, 0, sizeof v);
    v.ndims = 2;
    v.dtype = PTO_DTYPE_F32;
    v.shape[0] = 2, v.shape[1] = 4;
    v.strides[0] = 8, v.strides[1] = 1;
    memcpy(&r->w[r->n], &v, sizeof v);
    r->n += PTO_TRB_VIEW_WORDS;
}

static void producer(Words *r, uint64_t task_id)
{
    op(r, task_id);
    op(r, task_id << 2); /* its ref: the walk does not use it */
}

/* Three tasks over one scope per tile: t0 = A(x IN, local 0 OUT) allocates local 0
   first, t1 = B(local 0 IN, y OUT strided, scalar 0) after t0, then local 0 again
   (a new allocation: another offset) and t2 = A(local 0 OUT, y INOUT) after t1. */
static void three_tasks(Words *r)
{
    memset(r, 0, sizeof *r);
    op(r, PTO_TRB_OP_SCOPE_BEGIN);
    alloc(r, 0, 100);
    task(r, FN_A, 2, 0);
    param(r, PTO_ARG_IN, PTO_PARAM_ORIGIN_TENSOR(0), 16, 100);
    param(r, PTO_ARG_OUT, PTO_PARAM_ORIGIN_LOCAL(0), 0, 100);
    task(r, FN_B, 3, 1);
    param(r, PTO_ARG_IN, PTO_PARAM_ORIGIN_LOCAL(0), 4, 96);
    strided_param(r, PTO_ARG_OUT, PTO_PARAM_ORIGIN_TENSOR(1), 32, 48);
    param(r, PTO_ARG_SCALAR, PTO_PARAM_ORIGIN_SCALAR(0), 0, 0);
    producer(r, 0);
    op(r, PTO_TRB_OP_SCOPE_END);
    op(r, PTO_TRB_OP_SCOPE_BEGIN);
    alloc(r, 0, 8);
    task(r, FN_A, 2, 1);
    param(r, PTO_ARG_OUT, PTO_PARAM_ORIGIN_LOCAL(0), 0, 8);
    param(r, PTO_ARG_INOUT, PTO_PARAM_ORIGIN_FIXED, 0x5000, 8);
    producer(r, 1);
    op(r, PTO_TRB_OP_SCOPE_END);
}

TEST(trb_walk_image_holds_each_recorded_task_with_its_bases_views_and_edges)
{
    Words r;
    three_tasks(&r);
    TrbWalkImage img;
    REQUIRE(trb_walk_compile(r.w, r.n, 3, kernels, 2, &img) == PTO_OK);
    const PtoGraphHeader *h = (const PtoGraphHeader *)img.bytes;
    CHECK_EQ_INT(h->magic, PTO_GRAPH_MAGIC);
    CHECK_EQ_INT(h->task_count, 3);
    CHECK_EQ_INT(h->arg_total, 7);
    CHECK_EQ_INT(h->fanout_total, 2);
    CHECK_EQ_INT(h->view_total, 3); /* t1's params: one strided view keeps all three */
    CHECK_EQ_INT(h->base_count, PTO_TRB_WALK_BASES);
    CHECK(img.size >= h->fanout_offset + 2 * sizeof(uint32_t));
    /* local 0's first allocation at 0, its second at the next 64-byte boundary after 100 */
    CHECK(img.locals_bytes == 128 + 8);
    const PtoGraphTask *t = (const PtoGraphTask *)(img.bytes + h->tasks_offset);
    const uint64_t *args = (const uint64_t *)(img.bytes + h->args_offset);
    const uint64_t *sizes = (const uint64_t *)(img.bytes + h->arg_sizes_offset);
    const uint32_t *bases = (const uint32_t *)(img.bytes + h->arg_bases_offset);
    const uint32_t *fanout = (const uint32_t *)(img.bytes + h->fanout_offset);
    const PtoTensorView *views = (const PtoTensorView *)(img.bytes + h->views_offset);

    CHECK(t[0].kernel_addr == 0x1000 && t[0].func_id == FN_A && t[0].core_type == PTO_CORE_AIV);
    CHECK(t[1].kernel_addr == 0x2000 && t[1].func_id == FN_B && t[1].core_type == PTO_CORE_AIC);
    CHECK_EQ_INT(t[0].fanin_count, 0);
    CHECK_EQ_INT(t[1].fanin_count, 1);
    CHECK_EQ_INT(t[2].fanin_count, 1);
    CHECK(t[0].fanout_count == 1 && fanout[t[0].fanout_index] == 1);
    CHECK(t[1].fanout_count == 1 && fanout[t[1].fanout_index] == 2);
    CHECK_EQ_INT(t[2].fanout_count, 0);

    /* t0: x + 16 (tensor 0's base), local block + 0 */
    CHECK(t[0].arg_index == 0 && t[0].arg_count == 2 && t[0].view_index == 0);
    CHECK(args[0] == 16 && sizes[0] == 100 && bases[0] == PTO_PARAM_ORIGIN_TENSOR(0));
    CHECK(args[1] == 0 && sizes[1] == 100 && bases[1] == PTO_TRB_WALK_BASE_LOCALS);
    /* t1: local block + 4, y + 32 strided, scalar 0 relocated as a scalar */
    CHECK(t[1].arg_index == 2 && t[1].arg_count == 3 && t[1].view_index == 1);
    CHECK(args[2] == 4 && bases[2] == PTO_TRB_WALK_BASE_LOCALS);
    CHECK(args[3] == 32 && sizes[3] == 48 && bases[3] == PTO_PARAM_ORIGIN_TENSOR(1));
    CHECK(args[4] == 0 && sizes[4] == 0 && bases[4] == (PTO_PARAM_ORIGIN_SCALAR(0) | PTO_GRAPH_BASE_SCALAR));
    CHECK(views[0].addr == 4 && views[0].ndims == 0);
    CHECK(views[1].addr == 32 && views[1].ndims == 2 && views[1].shape[1] == 4 && views[1].strides[0] == 8);
    CHECK(views[2].addr == 0 && views[2].ndims == 0);
    /* t2: the second allocation of local 0, and a fixed address left absolute */
    CHECK(args[5] == 128 && bases[5] == PTO_TRB_WALK_BASE_LOCALS);
    CHECK(args[6] == 0x5000 && bases[6] == 0);
    trb_walk_image_free(&img);
}

TEST(trb_walk_image_refuses_words_that_do_not_compile)
{
    Words r;
    TrbWalkImage img = { 0 };
    three_tasks(&r);
    CHECK_EQ_INT(trb_walk_compile(r.w, r.n, 4, kernels, 2, &img), PTO_ERR_INVALID_ARGUMENT); /* task count */
    CHECK_EQ_INT(trb_walk_compile(r.w, r.n - 3, 3, kernels, 2, &img), PTO_ERR_INVALID_ARGUMENT); /* cut short */
    CHECK_CONTAINS(pto_last_error(), "malformed");
    CHECK_EQ_INT(trb_walk_compile(r.w, r.n, 3, kernels, 1, &img), PTO_ERR_INVALID_ARGUMENT); /* FN_B unknown */
    CHECK_CONTAINS(pto_last_error(), "not a child");

    memset(&r, 0, sizeof r); /* a local before its allocation */
    task(&r, FN_A, 1, 0);
    param(&r, PTO_ARG_OUT, PTO_PARAM_ORIGIN_LOCAL(2), 0, 4);
    CHECK_EQ_INT(trb_walk_compile(r.w, r.n, 1, kernels, 2, &img), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(pto_last_error(), "before its allocation");

    memset(&r, 0, sizeof r); /* a producer that is not earlier */
    task(&r, FN_A, 0, 1);
    producer(&r, 0);
    CHECK_EQ_INT(trb_walk_compile(r.w, r.n, 1, kernels, 2, &img), PTO_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(pto_last_error(), "not an earlier task");

    memset(&r, 0, sizeof r); /* an operation the format does not have */
    op(&r, 0x77);
    CHECK_EQ_INT(trb_walk_compile(r.w, r.n, 0, kernels, 2, &img), PTO_ERR_INVALID_ARGUMENT);
    CHECK(img.bytes == NULL);
}
