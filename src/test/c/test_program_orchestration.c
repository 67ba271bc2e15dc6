/* The program interpreter (orch/program_orchestration.c) against a recording
 * PtoOrchApi: what it submits for loops, affine views and scalars, locals and
 * scopes, and every run-time refusal. */
#include <stdlib.h>
#include <string.h>

#include "format/chip_callable.h"
#include "util/last_error.h"
#include "orch/program_orchestration.h"
#include "ptest.h"
#include "test_callable.h"
#include "test_sim.h"

/* ---- a recording orchestration API -------------------------------------------------- */

#define REC_MAX_TASKS 4096
#define REC_MAX_EVENTS 8192

typedef struct RecTask {
    uint32_t func_id, n;
    PtoTaskParam params[PTO_MAX_TASK_PARAMS];
    uint32_t after[PTO_PROGRAM_MAX_AFTER], n_after; /* submit_after's predecessors */
} RecTask;

typedef struct Recorder {
    RecTask *tasks;
    uint32_t task_count;
    char events[REC_MAX_EVENTS];   /* 'S' submit, 'A' alloc, '(' scope_begin, ')' scope_end */
    uint32_t event_count;
    uint64_t heap_next;            /* fake device addresses handed out by alloc_tensor */
    uint64_t alloc_bytes[64];
    uint32_t alloc_count;
    int fail_submit_after;         /* >= 0: the submit after this many fails */
    int submit_error;
    int fail_alloc;                /* non-zero: alloc_tensor fails */
    int fail_scope_begin;          /* non-zero: scope_begin returns this */
    int scope_depth, max_scope_depth;
} Recorder;

static void rec_event(Recorder *r, char e)
{
    if (r->event_count + 1 < REC_MAX_EVENTS)
        r->events[r->event_count++] = e;
    r->events[r->event_count] = '\0';
}

static int rec_submit(void *orch, uint32_t func_id, const PtoTaskParam *params, uint32_t n)
{
    Recorder *r = orch;
    if (r->fail_submit_after >= 0 && r->task_count == (uint32_t)r->fail_submit_after)
        return pto_fail(r->submit_error, "recorder: submit refused after %u tasks", r->task_count);
    if (r->task_count == REC_MAX_TASKS)
        return pto_fail(PTO_ERR_CAPACITY, "recorder: full");
    RecTask *t = &r->tasks[r->task_count++];
    t->func_id = func_id;
    t->n = n;
    memcpy(t->params, params, n * sizeof *params);
    rec_event(r, 'S');
    return PTO_OK;
}

static uint64_t rec_alloc(void *orch, uint64_t bytes)
{
    Recorder *r = orch;
    if (r->fail_alloc) {
        pto_fail(PTO_ERR_OUT_OF_MEMORY, "recorder heap cannot hold %llu bytes", (unsigned long long)bytes);
        return 0;
    }
    uint64_t addr = r->heap_next;
    r->heap_next += (bytes + 63) / 64 * 64 + 64;
    if (r->alloc_count < 64)
        r->alloc_bytes[r->alloc_count] = bytes;
    r->alloc_count++;
    rec_event(r, 'A');
    return addr;
}

static int rec_scope_begin(void *orch)
{
    Recorder *r = orch;
    if (r->fail_scope_begin)
        return pto_fail(r->fail_scope_begin, "recorder: scope refused");
    if (++r->scope_depth > r->max_scope_depth)
        r->max_scope_depth = r->scope_depth;
    rec_event(r, '(');
    return PTO_OK;
}

static int rec_scope_end(void *orch)
{
    Recorder *r = orch;
    r->scope_depth--;
    rec_event(r, ')');
    return PTO_OK;
}

static int rec_read(void *orch, uint64_t dev, void *dst, uint64_t n)
{
    (void)orch, (void)dev, (void)dst, (void)n;
    return PTO_ERR_INVALID_ARGUMENT;
}

static int rec_write(void *orch, uint64_t dev, const void *src, uint64_t n)
{
    (void)orch, (void)dev, (void)src, (void)n;
    return PTO_ERR_INVALID_ARGUMENT;
}

static int rec_scope_begin_mode(void *orch, uint32_t mode)
{
    int rc = rec_scope_begin(orch);
    if (rc == PTO_OK && mode == PTO_SCOPE_MANUAL)
        ((Recorder *)orch)->events[((Recorder *)orch)->event_count - 1] = '[';
    return rc;
}

static int rec_submit_after(void *orch, uint32_t func_id, const PtoTaskParam *params, uint32_t n,
                            const uint32_t *after, uint32_t n_after)
{
    Recorder *r = orch;
    int rc = rec_submit(orch, func_id, params, n);
    if (rc == PTO_OK) {
        RecTask *t = &r->tasks[r->task_count - 1];
        memcpy(t->after, after, n_after * sizeof *after);
        t->n_after = n_after;
    }
    return rc;
}

static const PtoOrchApi rec_api = { .submit = rec_submit, .alloc_tensor = rec_alloc, .scope_begin = rec_scope_begin,
                                    .scope_end = rec_scope_end, .read_tensor = rec_read, .write_tensor = rec_write,
                                    .scope_begin_mode = rec_scope_begin_mode, .submit_after = rec_submit_after };

static void rec_init(Recorder *r)
{
    memset(r, 0, sizeof *r);
    r->tasks = calloc(REC_MAX_TASKS, sizeof *r->tasks);
    r->heap_next = 0x100000;
    r->fail_submit_after = -1;
}

static void rec_free(Recorder *r)
{
    free(r->tasks);
}

/* ---- programs ---------------------------------------------------------------------- */

/* Signature: IN x (tensor 0), INOUT y (tensor 1), OUT z (tensor 2), SCALAR s. */
static const uint8_t SIG[] = { PTO_ARG_IN, PTO_ARG_INOUT, PTO_ARG_OUT, PTO_ARG_SCALAR };
#define X_ADDR 0x10000ull
#define Y_ADDR 0x20000ull
#define Z_ADDR 0x30000ull

static void program_start(TestCallableBuilder *b)
{
    tcb_init(b);
    tcb_signature(b, SIG, sizeof SIG);
    tcb_child(b, 1, PTO_CORE_AIV, "vadd");
    tcb_child(b, 2, PTO_CORE_AIV, "vcopy");
}

static ChipStorageTaskArgs *make_args(uint64_t x_bytes, uint64_t y_bytes, uint64_t z_bytes, uint64_t s)
{
    ChipStorageTaskArgs *a = test_args();
    a->tensor_count = 3;
    a->scalar_count = 1;
    a->tensors[0].addr = X_ADDR, a->tensors[0].size = x_bytes;
    a->tensors[1].addr = Y_ADDR, a->tensors[1].size = y_bytes;
    a->tensors[2].addr = Z_ADDR, a->tensors[2].size = z_bytes;
    a->scalars[0] = s;
    return a;
}

/* Builds the callable and runs its program through the recorder. */
static int run_program(TestCallableBuilder *b, Recorder *r, const ChipStorageTaskArgs *args, int validate)
{
    uint32_t size;
    uint8_t *callable = tcb_build(b, &size);
    if (validate) {
        ChipCallableView v;
        char msg[CHIP_CALLABLE_MESSAGE_BYTES];
        int drc = chip_callable_decode(callable, &v, msg, sizeof msg);
        if (drc != PTO_OK)
            fprintf(stderr, "  decoder: %s\n", msg);
        CHECK_EQ_INT(drc, PTO_OK);
    }
    ChipCallableHeader *h = tcb_header(callable);
    int rc = pto_program_orchestrate(&rec_api, r, args, callable + h->orchestration.offset, h->orchestration.size,
                                     callable + h->signature.offset, h->signature_length);
    free(callable);
    return rc;
}

static PtoProgramParam affine_tensor(uint32_t arg, uint8_t dir, PtoAffine off, PtoAffine size)
{
    PtoProgramParam p = tcb_tensor(arg, dir, 0, 0);
    p.offset = off;
    p.size = size;
    return p;
}

static PtoProgramParam affine_scalar(PtoAffine value)
{
    PtoProgramParam p = { .kind = PTO_PARAM_SCALAR_AFFINE, .direction = PTO_ARG_SCALAR };
    p.offset = value;
    return p;
}

static PtoProgramParam local_view(uint32_t local, uint8_t dir, int64_t off, int64_t size)
{
    PtoProgramParam p = tcb_tensor(local, dir, off, size);
    p.kind = PTO_PARAM_LOCAL_TENSOR;
    return p;
}

/* ---- what it submits -------------------------------------------------------------- */

TEST(program_straight_line_submits_resolve_views_and_scalars)
{
    TestCallableBuilder b;
    program_start(&b);
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, 8, 16), tcb_tensor(1, PTO_ARG_INOUT, 0, 64),
                            tcb_tensor(2, PTO_ARG_OUT, 60, 4), tcb_imm(0xdeadbeefcafeull), tcb_scalar_arg(0) };
    tcb_submit(&b, 1, p, 5);
    Recorder r;
    rec_init(&r);
    ChipStorageTaskArgs *args = make_args(64, 64, 64, 77);
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_OK);
    CHECK_EQ_INT(r.task_count, 1);
    const RecTask *t = &r.tasks[0];
    CHECK_EQ_INT(t->func_id, 1);
    CHECK_EQ_INT(t->n, 5);
    CHECK_EQ_INT(t->params[0].value, X_ADDR + 8);
    CHECK_EQ_INT(t->params[0].bytes, 16);
    CHECK_EQ_INT(t->params[0].direction, PTO_ARG_IN);
    CHECK_EQ_INT(t->params[1].value, Y_ADDR);
    CHECK_EQ_INT(t->params[1].direction, PTO_ARG_INOUT);
    CHECK_EQ_INT(t->params[2].value, Z_ADDR + 60);
    CHECK_EQ_INT(t->params[2].bytes, 4);
    CHECK_EQ_INT(t->params[3].value, 0xdeadbeefcafeull);
    CHECK_EQ_INT(t->params[3].direction, PTO_ARG_SCALAR);
    CHECK_EQ_INT(t->params[3].bytes, 0);
    CHECK_EQ_INT(t->params[4].value, 77);
    rec_free(&r);
    free(args);
    tcb_free(&b);
}

TEST(program_loops_evaluate_affine_views_and_scalars_per_iteration)
{
    /* LOOP i < 3 { LOOP j < 4 { SUBMIT y[16*(4i+j), +16 + 0], scalar 100*i - j } } */
    TestCallableBuilder b;
    program_start(&b);
    tcb_loop(&b, 3);
    tcb_loop(&b, 4);
    PtoAffine off = { .base = 0, .coef = { 64, 16, 0, 0 } }, size = { .base = 16, .coef = { 0 } }, val = { .base = 0, .coef = { 100, -1, 0, 0 } };
    PtoProgramParam p[] = { affine_tensor(1, PTO_ARG_INOUT, off, size), affine_scalar(val) };
    tcb_submit(&b, 1, p, 2);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_END_LOOP);
    Recorder r;
    rec_init(&r);
    ChipStorageTaskArgs *args = make_args(4, 192, 4, 0);
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_OK);
    CHECK_EQ_INT(r.task_count, 12);
    for (uint32_t i = 0; i < 3; i++)
        for (uint32_t j = 0; j < 4; j++) {
            const RecTask *t = &r.tasks[i * 4 + j];
            CHECK_EQ_INT(t->params[0].value, Y_ADDR + 16 * (4 * i + j));
            CHECK_EQ_INT(t->params[0].bytes, 16);
            CHECK_EQ_INT((int64_t)t->params[1].value, (int64_t)(100 * i) - (int64_t)j);
        }
    rec_free(&r);
    free(args);
    tcb_free(&b);
}

TEST(program_zero_trip_loops_skip_their_bodies_and_nested_loops)
{
    /* SUBMIT; LOOP 0 { LOOP 5 { SUBMIT } SCOPE { SUBMIT } }; SUBMIT */
    TestCallableBuilder b;
    program_start(&b);
    PtoProgramParam p[] = { tcb_tensor(1, PTO_ARG_INOUT, 0, 4) };
    tcb_submit(&b, 1, p, 1);
    tcb_loop(&b, 0);
    tcb_loop(&b, 5);
    tcb_submit(&b, 2, p, 1);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_SCOPE_BEGIN);
    tcb_submit(&b, 2, p, 1);
    tcb_insn(&b, PTO_OP_SCOPE_END);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_submit(&b, 1, p, 1);
    Recorder r;
    rec_init(&r);
    ChipStorageTaskArgs *args = make_args(4, 4, 4, 0);
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_OK);
    CHECK_EQ_INT(r.task_count, 2);
    CHECK_EQ_INT(r.tasks[0].func_id, 1);
    CHECK_EQ_INT(r.tasks[1].func_id, 1);
    CHECK(strcmp(r.events, "SS") == 0);
    rec_free(&r);
    free(args);
    tcb_free(&b);
}

TEST(program_locals_are_allocated_once_and_viewed_within_their_bytes)
{
    /* LOOP 3 { ALLOC l0 256; SUBMIT l0[64i, +64] OUT, x IN } ALLOC l1 0; SUBMIT l1[0,+0] */
    TestCallableBuilder b;
    program_start(&b);
    b.local_count = 2;
    tcb_loop(&b, 3);
    tcb_alloc(&b, 0, 256);
    PtoProgramParam p[] = { local_view(0, PTO_ARG_OUT, 0, 64), tcb_tensor(0, PTO_ARG_IN, 0, 64) };
    p[0].offset.coef[0] = 64;
    tcb_submit(&b, 2, p, 2);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_alloc(&b, 1, 0);
    PtoProgramParam q[] = { local_view(1, PTO_ARG_INOUT, 0, 0) };
    tcb_submit(&b, 1, q, 1);
    Recorder r;
    rec_init(&r);
    ChipStorageTaskArgs *args = make_args(64, 4, 4, 0);
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_OK);
    CHECK_EQ_INT(r.alloc_count, 2);
    CHECK_EQ_INT(r.alloc_bytes[0], 256);
    CHECK_EQ_INT(r.alloc_bytes[1], 0);
    CHECK(strcmp(r.events, "ASSSAS") == 0);
    CHECK_EQ_INT(r.task_count, 4);
    for (uint32_t i = 0; i < 3; i++) {
        CHECK_EQ_INT(r.tasks[i].params[0].value, 0x100000 + 64 * i);
        CHECK_EQ_INT(r.tasks[i].params[0].direction, PTO_ARG_OUT);
    }
    CHECK_EQ_INT(r.tasks[3].params[0].value, 0x100000 + 256 + 64);
    CHECK_EQ_INT(r.tasks[3].params[0].bytes, 0);
    rec_free(&r);
    free(args);
    tcb_free(&b);
}

TEST(program_scopes_nest_inside_loops_in_order)
{
    /* SCOPE { LOOP 2 { SCOPE { SUBMIT } } SUBMIT } */
    TestCallableBuilder b;
    program_start(&b);
    PtoProgramParam p[] = { tcb_tensor(1, PTO_ARG_INOUT, 0, 4) };
    tcb_insn(&b, PTO_OP_SCOPE_BEGIN);
    tcb_loop(&b, 2);
    tcb_insn(&b, PTO_OP_SCOPE_BEGIN);
    tcb_submit(&b, 1, p, 1);
    tcb_insn(&b, PTO_OP_SCOPE_END);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_submit(&b, 1, p, 1);
    tcb_insn(&b, PTO_OP_SCOPE_END);
    Recorder r;
    rec_init(&r);
    ChipStorageTaskArgs *args = make_args(4, 4, 4, 0);
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_OK);
    CHECK(strcmp(r.events, "((S)(S)S)") == 0);
    CHECK_EQ_INT(r.max_scope_depth, 2);
    CHECK_EQ_INT(r.scope_depth, 0);
    rec_free(&r);
    free(args);
    tcb_free(&b);
}

TEST(program_a_loop_whose_iteration_submits_nothing_ends_without_spinning)
{
    /* LOOP 2^62 { SCOPE { } LOOP 0 { SUBMIT } } then LOOP 2^62 { LOOP 2^62 { } } : both end at once */
    TestCallableBuilder b;
    program_start(&b);
    PtoProgramParam p[] = { tcb_tensor(1, PTO_ARG_INOUT, 0, 4) };
    tcb_loop(&b, 1ull << 62);
    tcb_insn(&b, PTO_OP_SCOPE_BEGIN);
    tcb_insn(&b, PTO_OP_SCOPE_END);
    tcb_loop(&b, 0);
    tcb_submit(&b, 1, p, 1);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_loop(&b, 1ull << 62);
    tcb_loop(&b, 1ull << 62);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_submit(&b, 2, p, 1);
    Recorder r;
    rec_init(&r);
    ChipStorageTaskArgs *args = make_args(4, 4, 4, 0);
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_OK);
    CHECK(strcmp(r.events, "()S") == 0);
    rec_free(&r);
    free(args);
    tcb_free(&b);
}

TEST(program_an_endless_loop_of_tasks_stops_at_the_runtime_s_error)
{
    TestCallableBuilder b;
    program_start(&b);
    PtoProgramParam p[] = { tcb_tensor(1, PTO_ARG_INOUT, 0, 4) };
    tcb_loop(&b, (uint64_t)INT64_MAX);
    tcb_submit(&b, 1, p, 1);
    tcb_insn(&b, PTO_OP_END_LOOP);
    Recorder r;
    rec_init(&r);
    r.fail_submit_after = 1000;
    r.submit_error = PTO_ERR_CAPACITY;
    ChipStorageTaskArgs *args = make_args(4, 4, 4, 0);
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_ERR_CAPACITY);
    CHECK_CONTAINS(pto_last_error(), "recorder: submit refused after 1000 tasks");
    CHECK_EQ_INT(r.task_count, 1000);
    rec_free(&r);
    free(args);
    tcb_free(&b);
}

/* ---- refusals --------------------------------------------------------------------- */

/* Builds `setup`'s program, runs it with `args`, expects `code` and `message`. */
static void check_refusal(void (*setup)(TestCallableBuilder *), const ChipStorageTaskArgs *args, int validate,
                          int code, const char *message, uint32_t tasks_before)
{
    TestCallableBuilder b;
    program_start(&b);
    setup(&b);
    Recorder r;
    rec_init(&r);
    int rc = run_program(&b, &r, args, validate);
    CHECK_EQ_INT(rc, code);
    CHECK_CONTAINS(pto_last_error(), message);
    CHECK_EQ_INT(r.task_count, tasks_before);
    rec_free(&r);
    tcb_free(&b);
}

static void walk_past_the_end(TestCallableBuilder *b)
{
    /* LOOP 4 { SUBMIT x[16i, +20] }: iteration 3 reaches byte 68 of 64 */
    tcb_loop(b, 4);
    PtoAffine off = { .base = 0, .coef = { 16, 0, 0, 0 } }, size = { .base = 20, .coef = { 0 } };
    PtoProgramParam p[] = { affine_tensor(0, PTO_ARG_IN, off, size) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}

static void negative_offset(TestCallableBuilder *b)
{
    tcb_loop(b, 2);
    PtoAffine off = { .base = 8, .coef = { -8, 0, 0, 0 } }, size = { .base = 4, .coef = { 0 } };
    PtoProgramParam p[] = { affine_tensor(0, PTO_ARG_IN, off, size) };
    off.coef[0] = -16; /* second iteration: 8 - 16 < 0 */
    p[0].offset = off;
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}

static void affine_overflow(TestCallableBuilder *b)
{
    tcb_loop(b, 3);
    PtoAffine val = { .base = INT64_MAX - 1, .coef = { 1, 0, 0, 0 } };
    PtoProgramParam p[] = { affine_scalar(val) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}

static void local_before_alloc_executed(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_loop(b, 0);
    tcb_alloc(b, 0, 64);
    tcb_insn(b, PTO_OP_END_LOOP);
    PtoProgramParam p[] = { local_view(0, PTO_ARG_OUT, 0, 4) };
    tcb_submit(b, 1, p, 1);
}

static void local_view_too_large(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_alloc(b, 0, 64);
    PtoProgramParam p[] = { local_view(0, PTO_ARG_OUT, 32, 33) };
    tcb_submit(b, 1, p, 1);
}

static void writes_an_in_tensor(TestCallableBuilder *b)
{
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_INOUT, 0, 4) };
    tcb_submit(b, 1, p, 1);
}

static void uses_an_unenclosing_loop_variable(TestCallableBuilder *b)
{
    PtoAffine val = { .base = 0, .coef = { 0, 1, 0, 0 } };
    tcb_loop(b, 2);
    PtoProgramParam p[] = { affine_scalar(val) };
    tcb_submit(b, 1, p, 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}

static void names_tensor_three(TestCallableBuilder *b)
{
    PtoProgramParam p[] = { tcb_tensor(3, PTO_ARG_IN, 0, 4) };
    tcb_submit(b, 1, p, 1);
}

static void names_scalar_one(TestCallableBuilder *b)
{
    PtoProgramParam p[] = { tcb_scalar_arg(1) };
    tcb_submit(b, 1, p, 1);
}

static void huge_loop_count(TestCallableBuilder *b)
{
    tcb_loop(b, (uint64_t)INT64_MAX + 1);
    tcb_insn(b, PTO_OP_END_LOOP);
}

static void unbalanced_end_loop(TestCallableBuilder *b)
{
    tcb_insn(b, PTO_OP_SCOPE_BEGIN);
    tcb_insn(b, PTO_OP_END_LOOP);
}

static void never_closed(TestCallableBuilder *b)
{
    PtoProgramParam p[] = { tcb_tensor(1, PTO_ARG_INOUT, 0, 4) };
    tcb_submit(b, 1, p, 1);
    tcb_loop(b, 2);
}

static void unknown_opcode(TestCallableBuilder *b)
{
    PtoInsnHead h = { 9, 0, 8 };
    tcb_raw(b, &h, sizeof h);
}

static void oversized_instruction(TestCallableBuilder *b)
{
    PtoInsnHead h = { PTO_OP_SCOPE_BEGIN, 0, 4096 };
    tcb_raw(b, &h, sizeof h);
}

static void too_many_params(TestCallableBuilder *b)
{
    PtoInsnHead h = { PTO_OP_SUBMIT, 33, 8 };
    tcb_raw(b, &h, sizeof h);
}

static void scalar_with_tensor_direction(TestCallableBuilder *b)
{
    PtoProgramParam p[] = { tcb_imm(1) };
    p[0].direction = PTO_ARG_IN;
    tcb_submit(b, 1, p, 1);
}

/* LOOP 3 { vcopy(x[i0 rows, cols 4*i0 .. +4] of a 4 x 10 f32 x, ...) }: i0 = 2 reaches column 12 */
static void strided_overhang(TestCallableBuilder *b)
{
    tcb_loop(b, 3);
    PtoProgramParam p[] = { tcb_view2(PTO_PARAM_ARG_TENSOR, 0, PTO_ARG_IN, PTO_DTYPE_F32, 4, 10, 0, 0, 1, 4),
                            tcb_tensor(1, PTO_ARG_OUT, 0, 16) };
    p[0].dims[1].offset.coef[0] = 4;
    tcb_submit(b, 2, p, 2);
    tcb_insn(b, PTO_OP_END_LOOP);
}
/* a 17-element f32 view of the 64-byte x: inside its (made-up) bounds, past its bytes */
static void strided_past_tensor(TestCallableBuilder *b)
{
    PtoProgramParam p[] = { tcb_view2(PTO_PARAM_ARG_TENSOR, 0, PTO_ARG_IN, PTO_DTYPE_F32, 2, 16, 0, 0, 2, 1),
                            tcb_tensor(1, PTO_ARG_OUT, 0, 16) };
    tcb_submit(b, 2, p, 2);
}

static void local_used_after_its_scope(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_insn(b, PTO_OP_SCOPE_BEGIN);
    tcb_alloc(b, 0, 64);
    tcb_insn(b, PTO_OP_SCOPE_END);
    PtoProgramParam p[] = { local_view(0, PTO_ARG_OUT, 0, 64) };
    tcb_submit(b, 1, p, 1);
}

static void five_nested_loops(TestCallableBuilder *b)
{
    for (int i = 0; i < 5; i++)
        tcb_loop(b, 1);
    for (int i = 0; i < 5; i++)
        tcb_insn(b, PTO_OP_END_LOOP);
}

TEST(program_refuses_every_run_time_defect_naming_the_instruction)
{
    ChipStorageTaskArgs *args = make_args(64, 64, 64, 0);
    check_refusal(walk_past_the_end, args, 1, PTO_ERR_BAD_CALLABLE,
                  "program instruction 1 (SUBMIT func_id 1) param 0: view [48, 48 + 20) lies outside argument tensor 0 of 64 bytes",
                  3);
    check_refusal(negative_offset, args, 0, PTO_ERR_BAD_CALLABLE, "view [-8, -8 + 4) lies outside argument tensor 0", 1);
    check_refusal(affine_overflow, args, 0, PTO_ERR_BAD_CALLABLE,
                  "program instruction 1 (SUBMIT func_id 1) param 0: the scalar value overflows", 2);
    check_refusal(local_view_too_large, args, 0, PTO_ERR_BAD_CALLABLE, "view [32, 32 + 33) lies outside local tensor 0 of 64 bytes", 0);
    check_refusal(writes_an_in_tensor, args, 0, PTO_ERR_BAD_CALLABLE,
                  "param 0 writes argument tensor 0, which the signature declares IN", 0);
    /* what registration refuses too (the decoder proves it from the text): the
       interpreter does not rely on it */
    check_refusal(local_before_alloc_executed, args, 0, PTO_ERR_BAD_CALLABLE,
                  "program instruction 3 (SUBMIT func_id 1) param 0 uses local tensor 0 before its ALLOC_TENSOR has executed",
                  0);
    check_refusal(uses_an_unenclosing_loop_variable, args, 0, PTO_ERR_BAD_CALLABLE,
                  "the scalar value uses loop variable 1 but only 1 loop(s) enclose it", 0);
    check_refusal(names_tensor_three, args, 0, PTO_ERR_BAD_CALLABLE, "names argument tensor 3; the run has 3", 0);
    check_refusal(names_scalar_one, args, 0, PTO_ERR_BAD_CALLABLE, "names argument scalar 1; the run has 1", 0);
    check_refusal(huge_loop_count, args, 0, PTO_ERR_BAD_CALLABLE, "program instruction 0 (LOOP) count 9223372036854775808 exceeds", 0);
    check_refusal(unbalanced_end_loop, args, 0, PTO_ERR_BAD_CALLABLE,
                  "program instruction 1 (END_LOOP) does not close an open LOOP", 0);
    check_refusal(never_closed, args, 0, PTO_ERR_BAD_CALLABLE, "program ends with 1 LOOP / SCOPE_BEGIN construct(s) still open", 1);
    check_refusal(unknown_opcode, args, 0, PTO_ERR_BAD_CALLABLE, "program instruction 0 has unknown opcode 9", 0);
    check_refusal(oversized_instruction, args, 0, PTO_ERR_BAD_CALLABLE, "program instruction 0 (4096 bytes at byte 16) runs past", 0);
    check_refusal(too_many_params, args, 0, PTO_ERR_BAD_CALLABLE, "program instruction 0 (SUBMIT) has 33 params, the limit is 32", 0);
    check_refusal(scalar_with_tensor_direction, args, 0, PTO_ERR_BAD_CALLABLE, "direction 1 does not fit parameter kind 2", 0);
    check_refusal(strided_overhang, args, 0, PTO_ERR_BAD_CALLABLE,
                  "program instruction 1 (SUBMIT func_id 2) param 0, a view of argument tensor 0: dim 1: elements [8, 8 "
                  "+ 4) leave its bound of 10 at i0=2",
                  2);
    check_refusal(strided_past_tensor, args, 0, PTO_ERR_BAD_CALLABLE,
                  "program instruction 0 (SUBMIT func_id 2) param 0, a view of argument tensor 0: its last element ends "
                  "at byte 68 of a 64-byte tensor at outside any loop",
                  0);
    check_refusal(local_used_after_its_scope, args, 0, PTO_ERR_BAD_CALLABLE,
                  "program instruction 3 (SUBMIT func_id 1) param 0 uses local tensor 0 after the scope it was allocated "
                  "in has ended",
                  0);
    check_refusal(five_nested_loops, args, 0, PTO_ERR_BAD_CALLABLE, "program instruction 4 (LOOP) nests deeper than 4", 0);
    free(args);
}

static void one_alloc(TestCallableBuilder *b)
{
    b->local_count = 1;
    tcb_alloc(b, 0, 1000);
}

static void one_scope(TestCallableBuilder *b)
{
    tcb_insn(b, PTO_OP_SCOPE_BEGIN);
    tcb_insn(b, PTO_OP_SCOPE_END);
}

TEST(program_api_failures_come_back_with_their_codes)
{
    ChipStorageTaskArgs *args = make_args(64, 64, 64, 0);
    TestCallableBuilder b;
    Recorder r;

    program_start(&b);
    one_alloc(&b);
    rec_init(&r);
    r.fail_alloc = 1;
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_ERR_OUT_OF_MEMORY);
    CHECK_CONTAINS(pto_last_error(), "program instruction 0 (ALLOC_TENSOR local 0, 1000 bytes): recorder heap cannot hold 1000 bytes");
    rec_free(&r);
    tcb_free(&b);

    program_start(&b);
    one_scope(&b);
    rec_init(&r);
    r.fail_scope_begin = PTO_ERR_ORCHESTRATION;
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_ERR_ORCHESTRATION);
    CHECK_CONTAINS(pto_last_error(), "recorder: scope refused");
    rec_free(&r);
    tcb_free(&b);

    /* a truncated program blob and a NULL api are refused before anything runs */
    uint8_t header[8] = { 0 };
    CHECK_EQ_INT(pto_program_orchestrate(&rec_api, NULL, args, header, sizeof header, SIG, sizeof SIG),
                 PTO_ERR_BAD_CALLABLE);
    CHECK_CONTAINS(pto_last_error(), "program is 8 bytes");
    CHECK_EQ_INT(pto_program_orchestrate(NULL, NULL, args, header, sizeof header, SIG, sizeof SIG),
                 PTO_ERR_INVALID_ARGUMENT);
    free(args);
}

TEST(program_strided_tiles_with_clamped_tails_cover_a_matrix_exactly)
{
    /* an 11 x 37 f32 matrix x in 8 x 8 tiles: LOOP 2 { LOOP 5 { vcopy(tile of x, tile of y) } },
       each tile's extent min(N - 8*i, 8), so the last row and column tiles are 3 and 5 wide */
    TestCallableBuilder b;
    program_start(&b);
    tcb_loop(&b, 2);
    tcb_loop(&b, 5);
    PtoProgramParam p[2];
    for (int t = 0; t < 2; t++) {
        p[t] = tcb_view2(PTO_PARAM_ARG_TENSOR, (uint32_t)t, t == 0 ? PTO_ARG_IN : PTO_ARG_OUT, PTO_DTYPE_F32, 11, 37,
                         0, 0, 0, 0);
        for (int d = 0; d < 2; d++) {
            p[t].dims[d].offset.coef[d] = 8;
            p[t].dims[d].extent.base = d == 0 ? 11 : 37;
            p[t].dims[d].extent.coef[d] = -8;
            p[t].dims[d].extent.clamp = PTO_AFFINE_HAS_HI;
            p[t].dims[d].extent.hi = 8;
        }
    }
    tcb_submit(&b, 2, p, 2);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_END_LOOP);
    Recorder r;
    rec_init(&r);
    ChipStorageTaskArgs *args = make_args(11 * 37 * 4, 11 * 37 * 4, 64, 0);
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_OK);
    CHECK_EQ_INT(r.task_count, 10);
    uint8_t covered[11 * 37] = { 0 };
    for (uint32_t t = 0; t < r.task_count && t < 10; t++) {
        const PtoTaskParam *x = &r.tasks[t].params[0];
        uint64_t i = t / 5, j = t % 5, rows = i == 1 ? 3 : 8, cols = j == 4 ? 5 : 8;
        CHECK_EQ_INT(x->view.ndims, 2);
        CHECK_EQ_INT(x->view.dtype, PTO_DTYPE_F32);
        CHECK_EQ_INT(x->view.addr, X_ADDR + 4 * (8 * i * 37 + 8 * j));
        CHECK_EQ_INT(x->value, x->view.addr);
        CHECK_EQ_INT(x->view.shape[0], rows);
        CHECK_EQ_INT(x->view.shape[1], cols);
        CHECK_EQ_INT(x->view.strides[0], 37);
        CHECK_EQ_INT(x->view.strides[1], 1);
        CHECK_EQ_INT(x->bytes, 4 * ((rows - 1) * 37 + cols));
        CHECK_EQ_INT(r.tasks[t].params[1].view.addr, Y_ADDR + 4 * (8 * i * 37 + 8 * j));
        for (uint64_t a = 0; a < rows; a++)
            for (uint64_t c = 0; c < cols; c++)
                covered[(8 * i + a) * 37 + 8 * j + c]++;
    }
    for (int e = 0; e < 11 * 37; e++)
        CHECK_EQ_INT(covered[e], 1);
    rec_free(&r);
    tcb_free(&b);
    free(args);
}

TEST(program_selected_dims_and_transposed_views_reach_the_task)
{
    /* x as 2 x 3 x 4 f32: select batch i0 of LOOP 2, transpose the 3 x 4 rows and columns */
    TestCallableBuilder b;
    program_start(&b);
    tcb_loop(&b, 2);
    PtoProgramParam p[] = { { .kind = PTO_PARAM_ARG_TENSOR, .direction = PTO_ARG_IN, .dtype = PTO_DTYPE_F32,
                              .ndims = 3, .index = 0 },
                            tcb_tensor(1, PTO_ARG_OUT, 0, 48) };
    p[0].dims[0] = (PtoViewDim){ .stride = 12, .bound = 2, .flags = PTO_VIEW_DIM_SELECTED };
    p[0].dims[0].offset.coef[0] = 1;
    p[0].dims[1] = (PtoViewDim){ .stride = 1, .bound = 4 };
    p[0].dims[1].extent.base = 4;
    p[0].dims[2] = (PtoViewDim){ .stride = 4, .bound = 3 };
    p[0].dims[2].extent.base = 3;
    tcb_submit(&b, 2, p, 2);
    tcb_insn(&b, PTO_OP_END_LOOP);
    Recorder r;
    rec_init(&r);
    ChipStorageTaskArgs *args = make_args(96, 48, 64, 0);
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_OK);
    CHECK_EQ_INT(r.task_count, 2);
    for (uint32_t t = 0; t < r.task_count && t < 2; t++) {
        const PtoTensorView *v = &r.tasks[t].params[0].view;
        CHECK_EQ_INT(v->ndims, 2);
        CHECK_EQ_INT(v->addr, X_ADDR + 48 * t);
        CHECK_EQ_INT(v->shape[0], 4);
        CHECK_EQ_INT(v->shape[1], 3);
        CHECK_EQ_INT(v->strides[0], 1);
        CHECK_EQ_INT(v->strides[1], 4);
        CHECK_EQ_INT(r.tasks[t].params[0].bytes, 48);
    }
    rec_free(&r);
    tcb_free(&b);
    free(args);
}

TEST(program_a_loop_over_a_scope_allocates_its_locals_in_every_iteration)
{
    /* LOOP 3 { SCOPE { ALLOC local 0; vcopy(x, local 0) } }: allocated, used and freed per iteration */
    TestCallableBuilder b;
    program_start(&b);
    b.local_count = 1;
    tcb_loop(&b, 3);
    tcb_insn(&b, PTO_OP_SCOPE_BEGIN);
    tcb_alloc(&b, 0, 64);
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, 0, 64), local_view(0, PTO_ARG_OUT, 0, 64) };
    tcb_submit(&b, 2, p, 2);
    tcb_insn(&b, PTO_OP_SCOPE_END);
    tcb_insn(&b, PTO_OP_END_LOOP);
    Recorder r;
    rec_init(&r);
    ChipStorageTaskArgs *args = make_args(64, 64, 64, 0);
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_OK);
    CHECK_EQ_INT(r.task_count, 3);
    CHECK(strcmp(r.events, "(AS)(AS)(AS)") == 0);
    CHECK_EQ_INT(r.alloc_count, 3);
    rec_free(&r);
    tcb_free(&b);
    free(args);
}

TEST(program_manual_scopes_pass_each_tasks_predecessor_ordinals)
{
    /* SCOPE_BEGIN_MANUAL { LOOP 3 { SUBMIT after [i-1, i-2, i-1] } }: an ordinal below 0 names no task,
       a repeated one is passed once */
    TestCallableBuilder b;
    program_start(&b);
    tcb_insn(&b, PTO_OP_SCOPE_BEGIN_MANUAL);
    tcb_loop(&b, 3);
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, 0, 16), tcb_tensor(1, PTO_ARG_OUT, 0, 16) };
    PtoAffine after[] = { { .base = -1, .coef = { 1 } }, { .base = -2, .coef = { 1 } }, { .base = -1, .coef = { 1 } } };
    tcb_submit_after(&b, 2, p, 2, after, 3);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_SCOPE_END);
    Recorder r;
    rec_init(&r);
    ChipStorageTaskArgs *args = make_args(64, 64, 64, 0);
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_OK);
    CHECK_EQ_INT(r.task_count, 3);
    CHECK(strcmp(r.events, "[SSS)") == 0);
    CHECK_EQ_INT(r.tasks[0].n_after, 0);
    CHECK_EQ_INT(r.tasks[1].n_after, 1);
    CHECK_EQ_INT(r.tasks[1].after[0], 0);
    CHECK_EQ_INT(r.tasks[2].n_after, 2);
    CHECK_EQ_INT(r.tasks[2].after[0], 1);
    CHECK_EQ_INT(r.tasks[2].after[1], 0);
    rec_free(&r);
    tcb_free(&b);
    free(args);
}

static void after_outside_manual(TestCallableBuilder *b)
{
    tcb_insn(b, PTO_OP_SCOPE_BEGIN);
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, 0, 16) };
    PtoAffine after[] = { { .base = 0 } };
    tcb_submit_after(b, 2, p, 1, after, 1);
    tcb_insn(b, PTO_OP_SCOPE_END);
}

TEST(program_predecessors_outside_a_manual_scope_are_refused)
{
    TestCallableBuilder b;
    program_start(&b);
    after_outside_manual(&b);
    uint32_t size;
    uint8_t *c = tcb_build(&b, &size);
    ChipCallableView v;
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    CHECK_EQ_INT(chip_callable_decode(c, &v, msg, sizeof msg), PTO_ERR_BAD_CALLABLE);
    CHECK_CONTAINS(msg, "instruction 1 (SUBMIT) names predecessors outside a MANUAL scope");
    free(c);
    tcb_free(&b);
    ChipStorageTaskArgs *args = make_args(64, 64, 64, 0);
    check_refusal(after_outside_manual, args, 0, PTO_ERR_BAD_CALLABLE,
                  "program instruction 1 (SUBMIT func_id 2) names predecessors outside a MANUAL scope", 0);
    free(args);
}

TEST(program_with_no_instructions_submits_nothing)
{
    TestCallableBuilder b;
    program_start(&b);
    Recorder r;
    rec_init(&r);
    ChipStorageTaskArgs *args = make_args(64, 64, 64, 0);
    CHECK_EQ_INT(run_program(&b, &r, args, 1), PTO_OK);
    CHECK_EQ_INT(r.task_count, 0);
    CHECK_EQ_INT(r.event_count, 0);
    rec_free(&r);
    free(args);
    tcb_free(&b);
}
