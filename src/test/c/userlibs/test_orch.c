/*
 * libptorun_test_orch.so: a user orchestration library for the end-to-end
 * tests, a PtoOrchestrationFn per entry (ptorun/pto_orchestration.h). hbg runs
 * it on the host in prepare, trb on the device at launch; either way it sees
 * the run's arguments with every tensor's addr already a device address.
 * Only include/ptorun headers: a user library sees nothing else.
 *
 * The callable that embeds it binds func_id 0 to the built-in vadd (and, for
 * paced_copy, func_id 1 to the kernel library's paced_copy).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <time.h>

#include "ptorun/chip_callable.h"
#include "ptorun/pto_export.h"
#include "ptorun/pto_orchestration.h"

#define VADD_FUNC_ID 0u
#define PACED_COPY_FUNC_ID 1u

enum {
    ORCH_ERR_ARGS = 2,           /* not the three tensors this entry expects */
    ORCH_ERR_CONTROL = 4,        /* a task count out of range */
    ORCH_FAILING_CODE = 3        /* what failing_orchestration returns */
};

/* One vadd task z = z + x over the whole of z (in place: the views alias). */
static int submit_accumulate(const PtoOrchApi *api, void *orch, const ChipTensor *x, const ChipTensor *z)
{
    PtoTaskParam p[3] = {
        {.direction = PTO_ARG_IN, .value = z->addr, .bytes = z->size},
        {.direction = PTO_ARG_IN, .value = x->addr, .bytes = z->size},
        {.direction = PTO_ARG_OUT, .value = z->addr, .bytes = z->size},
    };
    return api->submit(orch, VADD_FUNC_ID, p, 3);
}

/* repeat_vadd(control I32, x IN f32, z INOUT f32): reads count = control[0]
   with read_tensor and submits count tasks z = z + x, each depending on the
   one before (they write the same bytes), so z ends as z + x + ... + x added
   left to right. A read_tensor or submit failure is returned unchanged. */
PTO_EXPORT int repeat_vadd(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args)
{
    if (args->tensor_count != 3 || args->tensors[0].size < sizeof(int32_t) ||
        args->tensors[1].size < args->tensors[2].size)
        return ORCH_ERR_ARGS;
    int32_t count;
    int rc = api->read_tensor(orch, args->tensors[0].addr, &count, sizeof count);
    if (rc != 0)
        return rc;
    if (count < 0)
        return ORCH_ERR_CONTROL;
    for (int32_t i = 0; i < count; i++)
        if ((rc = submit_accumulate(api, orch, &args->tensors[1], &args->tensors[2])) != 0)
            return rc;
    return 0;
}

/* failing_orchestration(same arguments): submits one task, then fails with 3
   (the run fails with PTO_ERR_ORCHESTRATION carrying that code). */
PTO_EXPORT int failing_orchestration(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args)
{
    if (args->tensor_count != 3)
        return ORCH_ERR_ARGS;
    int rc = submit_accumulate(api, orch, &args->tensors[1], &args->tensors[2]);
    return rc != 0 ? rc : ORCH_FAILING_CODE;
}

/* Sleeps without burning CPU, so the pace of a run does not depend on the machine's load. */
static void sleep_us(uint64_t us)
{
    struct timespec t = {.tv_sec = (time_t)(us / 1000000u), .tv_nsec = (long)(us % 1000000u) * 1000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

/* paced_copy(x IN, z OUT, SCALAR prepare_us, SCALAR execute_us): a run with a known
   pace. The orchestration itself takes prepare_us (hbg runs it in prepare, so the
   prepare is that heavy), then submits one task of func_id 1 (the kernel library's
   paced_copy: sleeps execute_us, then z = x). */
PTO_EXPORT int paced_copy(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args)
{
    if (args->tensor_count != 2 || args->scalar_count != 2 || args->tensors[0].size < args->tensors[1].size)
        return ORCH_ERR_ARGS;
    sleep_us(args->scalars[0]);
    PtoTaskParam p[3] = {
        {.direction = PTO_ARG_IN, .value = args->tensors[0].addr, .bytes = args->tensors[1].size},
        {.direction = PTO_ARG_OUT, .value = args->tensors[1].addr, .bytes = args->tensors[1].size},
        {.direction = PTO_ARG_SCALAR, .value = args->scalars[1]},
    };
    return api->submit(orch, PACED_COPY_FUNC_ID, p, 3);
}

/* The handle of the last stash_handle run of this library copy: a misbehaving
   library that keeps it for later (the runtimes must refuse it then). */
static void *stashed_handle;

/* stash_handle(same arguments as repeat_vadd): keeps its handle in a static,
   then does what repeat_vadd does. */
PTO_EXPORT int stash_handle(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args)
{
    stashed_handle = orch;
    return repeat_vadd(api, orch, args);
}

enum { STALE_SUBMIT, STALE_WRITE, STALE_READ, STALE_ALLOC_NONZERO, STALE_SCOPE_BEGIN, STALE_CODES };

/* use_stashed_handle(control I32 IN, x IN f32, z INOUT f32, codes OUT I32[5]):
   presents the stashed handle of an earlier run to submit (z = z + x), write_tensor
   (junk into z), read_tensor, alloc_tensor and scope_begin, writes what they returned
   into codes (through its own handle), then submits one z = z + x of its own. */
PTO_EXPORT int use_stashed_handle(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args)
{
    if (args->tensor_count != 4 || args->tensors[1].size < args->tensors[2].size ||
        args->tensors[2].size < sizeof(float) || args->tensors[3].size < STALE_CODES * sizeof(int32_t))
        return ORCH_ERR_ARGS;
    const ChipTensor *x = &args->tensors[1], *z = &args->tensors[2];
    int32_t codes[STALE_CODES];
    float junk = -12345.0f, v = 0.0f;
    codes[STALE_SUBMIT] = submit_accumulate(api, stashed_handle, x, z);
    codes[STALE_WRITE] = api->write_tensor(stashed_handle, z->addr, &junk, sizeof junk);
    codes[STALE_READ] = api->read_tensor(stashed_handle, z->addr, &v, sizeof v);
    codes[STALE_ALLOC_NONZERO] = api->alloc_tensor(stashed_handle, 64) != 0;
    codes[STALE_SCOPE_BEGIN] = api->scope_begin(stashed_handle);
    int rc = api->write_tensor(orch, args->tensors[3].addr, codes, sizeof codes);
    return rc != 0 ? rc : submit_accumulate(api, orch, x, z);
}

/* ---- decode-shaped orchestrations: P14 and the sub-graph end-to-end tests ----------
 *
 * decode_inline / decode_subgraph (h INOUT f32 [M x DECODE_D], w IN f32 [layers x
 * DECODE_D x DECODE_D], tile-major: layer l's tile t is the DECODE_D x DECODE_TN block at
 * (l * tiles + t) * DECODE_D * DECODE_TN floats). Children: 2 gemm_tile (AIC), 3
 * softmax_rows, 4 tile_add, 5 vfill. Each layer, over its own tensor y (M x DECODE_D,
 * tile-major, from alloc_tensor), for every column tile t:
 *   vfill y_t = 0; gemm_tile y_t += h * w_l,t; softmax_rows y_t (rows of DECODE_TN);
 *   tile_add h_t += y_t   (h_t: the t-th M x DECODE_TN block of h's bytes)
 * so a layer's tile_adds wait for all its gemms (they read h), and the next layer's gemms
 * for all its tile_adds. decode_inline submits every task; decode_subgraph records the
 * layer once (key 1; boundary: h, the layer's weights) and submits it per layer. Both give
 * the same bytes. */
#define DECODE_D 128u
#define DECODE_TN 16u
enum { DECODE_GEMM = 2, DECODE_SOFTMAX = 3, DECODE_TILE_ADD = 4, DECODE_VFILL = 5 };

static PtoTaskParam decode_view(uint32_t direction, uint64_t addr, uint64_t bytes)
{
    return (PtoTaskParam){ .direction = direction, .value = addr, .bytes = bytes };
}

static PtoTaskParam decode_scalar(uint64_t v)
{
    return (PtoTaskParam){ .direction = PTO_ARG_SCALAR, .value = v };
}

/* One layer over h [rows x D] with weights w (D x D, tile-major) and y its own. */
static int decode_layer(const PtoOrchApi *api, void *orch, uint64_t h, uint64_t rows, uint64_t w, uint64_t y)
{
    uint64_t tile = rows * DECODE_TN * 4, wtile = (uint64_t)DECODE_D * DECODE_TN * 4;
    int rc = 0;
    for (uint32_t t = 0; t < DECODE_D / DECODE_TN && rc == 0; t++) {
        PtoTaskParam fill[2] = { decode_view(PTO_ARG_OUT, y + t * tile, tile), decode_scalar(0) };
        PtoTaskParam gemm[6] = { decode_view(PTO_ARG_IN, h, rows * DECODE_D * 4),
                                 decode_view(PTO_ARG_IN, w + t * wtile, wtile),
                                 decode_view(PTO_ARG_INOUT, y + t * tile, tile), decode_scalar(rows),
                                 decode_scalar(DECODE_D), decode_scalar(DECODE_TN) };
        PtoTaskParam soft[3] = { decode_view(PTO_ARG_IN, y + t * tile, tile),
                                 decode_view(PTO_ARG_OUT, y + t * tile, tile), decode_scalar(DECODE_TN) };
        if ((rc = api->submit(orch, DECODE_VFILL, fill, 2)) == 0 && (rc = api->submit(orch, DECODE_GEMM, gemm, 6)) == 0)
            rc = api->submit(orch, DECODE_SOFTMAX, soft, 3);
    }
    for (uint32_t t = 0; t < DECODE_D / DECODE_TN && rc == 0; t++) {
        PtoTaskParam add[2] = { decode_view(PTO_ARG_IN, y + t * tile, tile), decode_view(PTO_ARG_INOUT, h + t * tile, tile) };
        rc = api->submit(orch, DECODE_TILE_ADD, add, 2);
    }
    return rc;
}

/* The layers' count and h's rows, or non-zero when the arguments do not fit. */
static int decode_shape(const ChipStorageTaskArgs *args, uint64_t *layers, uint64_t *rows)
{
    uint64_t per_layer = (uint64_t)DECODE_D * DECODE_D * 4, per_row = (uint64_t)DECODE_D * 4;
    if (args->tensor_count != 2 || args->tensors[0].size == 0 || args->tensors[0].size % per_row != 0 ||
        args->tensors[1].size % per_layer != 0)
        return ORCH_ERR_ARGS;
    *rows = args->tensors[0].size / per_row;
    *layers = args->tensors[1].size / per_layer;
    return 0;
}

PTO_EXPORT int decode_inline(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args)
{
    uint64_t layers, rows;
    int rc = decode_shape(args, &layers, &rows);
    for (uint64_t l = 0; l < layers && rc == 0; l++) {
        rc = api->scope_begin(orch); /* y is the layer's own, as a sub-graph's tensors are */
        uint64_t y = rc == 0 ? api->alloc_tensor(orch, rows * DECODE_D * 4) : 0;
        if (rc == 0 && y == 0)
            return -1;
        if (rc == 0)
            rc = decode_layer(api, orch, args->tensors[0].addr, rows, args->tensors[1].addr + l * DECODE_D * DECODE_D * 4, y);
        if (rc == 0)
            rc = api->scope_end(orch);
    }
    return rc;
}

/* The recorded layer: boundary [0] h INOUT, [1] the layer's weights IN. */
static int decode_layer_body(const PtoOrchApi *api, void *orch, void *ctx, const PtoTaskParam *b, uint32_t n)
{
    (void)ctx, (void)n;
    uint64_t rows = b[0].bytes / (DECODE_D * 4);
    uint64_t y = api->alloc_tensor(orch, rows * DECODE_D * 4);
    return y == 0 ? -1 : decode_layer(api, orch, b[0].value, rows, b[1].value, y);
}

PTO_EXPORT int decode_subgraph(const PtoOrchApi *api, void *orch, const ChipStorageTaskArgs *args)
{
    uint64_t layers, rows;
    int rc = decode_shape(args, &layers, &rows);
    for (uint64_t l = 0; l < layers && rc == 0; l++) {
        PtoTaskParam b[2] = { decode_view(PTO_ARG_INOUT, args->tensors[0].addr, args->tensors[0].size),
                              decode_view(PTO_ARG_IN, args->tensors[1].addr + l * DECODE_D * DECODE_D * 4,
                                          (uint64_t)DECODE_D * DECODE_D * 4) };
        rc = api->subgraph_submit(orch, 1, decode_layer_body, NULL, b, 2);
    }
    return rc;
}
