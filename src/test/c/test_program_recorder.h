/* The program interpreter's test harness: a recording PtoOrchApi (every
 * submit, its params and predecessors; allocs and scopes as events), the
 * callable every program test starts from, and running a program through it. */
#ifndef PTORUN_TEST_PROGRAM_RECORDER_H
#define PTORUN_TEST_PROGRAM_RECORDER_H

#include <stdint.h>

#include "ptorun/chip_callable.h"
#include "ptorun/pto_orchestration.h"
#include "test_callable.h"

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

extern const PtoOrchApi rec_api;
void rec_init(Recorder *r);
void rec_free(Recorder *r);

/* Arguments x (IN), y (INOUT), z (OUT) at these fake device addresses, and one scalar. */
#define X_ADDR 0x10000ull
#define Y_ADDR 0x20000ull
#define Z_ADDR 0x30000ull

/* The signature of program_start's callable. */
extern const uint8_t SIG[4];

/* A callable of signature {IN, INOUT, OUT, SCALAR} and children 1 (vadd), 2 (vcopy). */
void program_start(TestCallableBuilder *b);
/* Its arguments (test_args(): the caller frees them). */
ChipStorageTaskArgs *make_args(uint64_t x_bytes, uint64_t y_bytes, uint64_t z_bytes, uint64_t s);
/* Builds the callable and runs its program through the recorder (decoding it first when `validate`). */
int run_program(TestCallableBuilder *b, Recorder *r, const ChipStorageTaskArgs *args, int validate);

PtoProgramParam affine_tensor(uint32_t arg, uint8_t dir, PtoAffine off, PtoAffine size);
PtoProgramParam affine_scalar(PtoAffine value);
PtoProgramParam local_view(uint32_t local, uint8_t dir, int64_t off, int64_t size);

/* Builds `setup`'s program, runs it with `args`, expects `code`, `message` and that many tasks before it. */
void check_refusal(void (*setup)(TestCallableBuilder *), const ChipStorageTaskArgs *args, int validate, int code,
                   const char *message, uint32_t tasks_before);

#endif
