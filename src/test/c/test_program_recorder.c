/* The program interpreter's test harness (test_program_recorder.h). */
#include "test_program_recorder.h"

#include <stdlib.h>
#include <string.h>

#include "format/chip_callable.h"
#include "orch/program_orchestration.h"
#include "util/last_error.h"
#include "ptest.h"
#include "test_sim.h"

/* ---- a recording orchestration API -------------------------------------------------- */

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

const PtoOrchApi rec_api = { .submit = rec_submit, .alloc_tensor = rec_alloc, .scope_begin = rec_scope_begin,
                                    .scope_end = rec_scope_end, .read_tensor = rec_read, .write_tensor = rec_write,
                                    .scope_begin_mode = rec_scope_begin_mode, .submit_after = rec_submit_after };

void rec_init(Recorder *r)
{
    memset(r, 0, sizeof *r);
    r->tasks = calloc(REC_MAX_TASKS, sizeof *r->tasks);
    r->heap_next = 0x100000;
    r->fail_submit_after = -1;
}

void rec_free(Recorder *r)
{
    free(r->tasks);
}

/* ---- programs ---------------------------------------------------------------------- */

/* Signature: IN x (tensor 0), INOUT y (tensor 1), OUT z (tensor 2), SCALAR s. */
const uint8_t SIG[4] = { PTO_ARG_IN, PTO_ARG_INOUT, PTO_ARG_OUT, PTO_ARG_SCALAR };

void program_start(TestCallableBuilder *b)
{
    tcb_init(b);
    tcb_signature(b, SIG, sizeof SIG);
    tcb_child(b, 1, PTO_CORE_AIV, "vadd");
    tcb_child(b, 2, PTO_CORE_AIV, "vcopy");
}

ChipStorageTaskArgs *make_args(uint64_t x_bytes, uint64_t y_bytes, uint64_t z_bytes, uint64_t s)
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
int run_program(TestCallableBuilder *b, Recorder *r, const ChipStorageTaskArgs *args, int validate)
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

PtoProgramParam affine_tensor(uint32_t arg, uint8_t dir, PtoAffine off, PtoAffine size)
{
    PtoProgramParam p = tcb_tensor(arg, dir, 0, 0);
    p.offset = off;
    p.size = size;
    return p;
}

PtoProgramParam affine_scalar(PtoAffine value)
{
    PtoProgramParam p = { .kind = PTO_PARAM_SCALAR_AFFINE, .direction = PTO_ARG_SCALAR };
    p.offset = value;
    return p;
}

PtoProgramParam local_view(uint32_t local, uint8_t dir, int64_t off, int64_t size)
{
    PtoProgramParam p = tcb_tensor(local, dir, off, size);
    p.kind = PTO_PARAM_LOCAL_TENSOR;
    return p;
}

/* Builds `setup`'s program, runs it with `args`, expects `code` and `message`. */
void check_refusal(void (*setup)(TestCallableBuilder *), const ChipStorageTaskArgs *args, int validate,
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
