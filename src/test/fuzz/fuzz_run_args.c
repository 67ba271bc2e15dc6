/*
 * Fuzz target: a run's arguments against its callable's signature
 * (services/run_args.c, run_args_check), as prepare checks them on both runtimes.
 *
 * Input:
 *   i32 tensor_count, i32 scalar_count      ChipStorageTaskArgs counts, raw
 *   u16 signature tensors, u16 signature scalars
 *   ChipTensor[...]                         128 bytes each, raw, from tensors[0] on
 *                                           (missing bytes are 0)
 *
 * The device memory of the fake HostApi is [FUZZ_DEVICE_BASE, +FUZZ_DEVICE_BYTES):
 * a child_memory tensor must lie there (the Java corpus generator places its
 * device tensors inside it).
 *
 * Invariants, beyond "no crash, no leak, no UB":
 *  - the verdict equals an independent model of run_args.h's rules, computed in
 *    128-bit arithmetic (counts, ndims, dtype, strides, implied bytes, NULL
 *    address, wrap-around, child_memory inside the device);
 *  - a refusal is PTO_ERR_BAD_CALLABLE with an "args: " message, and when it
 *    names a tensor, the model finds that tensor invalid;
 *  - nothing is read past the caller's tensor_count (the rest of the block is
 *    poisoned for ASan) and the scalars are not read; the HostApi is only asked
 *    one-byte reads, only for child_memory tensors.
 */
#include <sanitizer/asan_interface.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "services/host_api.h"
#include "util/last_error.h"
#include "services/run_args.h"
#include "fuzz_common.h"
#include "ptorun/pto_runtime_c_api.h"

#define FUZZ_DEVICE_BASE 0x10000000000ull
#define FUZZ_DEVICE_BYTES (1ull << 20)
#define HEADER_BYTES 12u

typedef struct FakeRunner {
    uint32_t probes;
    uint32_t child_memory_tensors;
} FakeRunner;

static int fake_copy_from_device(void *runner, void *host, const void *dev, size_t n)
{
    FakeRunner *r = runner;
    FUZZ_CHECK(host != NULL && n == 1, "probe of %zu bytes", n);
    r->probes++;
    uint64_t a = (uint64_t)(uintptr_t)dev;
    if (a < FUZZ_DEVICE_BASE || a >= FUZZ_DEVICE_BASE + FUZZ_DEVICE_BYTES)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "fuzz: 0x%llx is no device memory", (unsigned long long)a);
    *(uint8_t *)host = 0;
    return PTO_OK;
}

/* Every other entry is NULL: run_args_check calling one crashes, which the
   fuzzer reports. */
static const HostApiOps fake_ops = { .copy_from_device = fake_copy_from_device };

/* ---- the model ---------------------------------------------------------------------- */

static uint32_t model_dtype_bytes(uint8_t dtype)
{
    static const uint8_t bytes[PTO_DTYPE_COUNT] = {
        [PTO_DTYPE_F32] = 4, [PTO_DTYPE_F16] = 2, [PTO_DTYPE_BF16] = 2, [PTO_DTYPE_I32] = 4, [PTO_DTYPE_I64] = 8,
        [PTO_DTYPE_U8] = 1,  [PTO_DTYPE_I8] = 1,  [PTO_DTYPE_I16] = 2,  [PTO_DTYPE_U32] = 4, [PTO_DTYPE_U64] = 8,
    };
    return dtype < PTO_DTYPE_COUNT ? bytes[dtype] : 0;
}

static int model_tensor_ok(const ChipTensor *t)
{
    if (t->ndims < 1 || t->ndims > PTO_MAX_TENSOR_DIMS)
        return 0;
    uint32_t esize = model_dtype_bytes(t->dtype);
    if (esize == 0)
        return 0;
    int empty = 0;
    for (uint32_t d = 0; d < t->ndims; d++) {
        if (t->strides[d] == 0)
            return 0;
        empty |= t->shapes[d] == 0;
    }
    unsigned __int128 need = 0;
    if (!empty) {
        unsigned __int128 last = t->start_offset;
        for (uint32_t d = 0; d < t->ndims; d++)
            last += (unsigned __int128)(t->shapes[d] - 1u) * t->strides[d];
        need = (last + 1) * esize;
    }
    if (need > UINT64_MAX || t->size < (uint64_t)need)
        return 0;
    if (t->size > 0 && t->addr == 0)
        return 0;
    if ((unsigned __int128)t->addr + t->size > UINT64_MAX)
        return 0;
    if (t->child_memory && t->size > 0)
        return t->addr >= FUZZ_DEVICE_BASE && t->addr + t->size <= FUZZ_DEVICE_BASE + FUZZ_DEVICE_BYTES;
    return 1;
}

static int model_counts_ok(const ChipStorageTaskArgs *a, const ChipCallableView *v)
{
    return a->tensor_count >= 0 && a->tensor_count <= PTO_MAX_TENSOR_ARGS && a->scalar_count >= 0 &&
           a->scalar_count <= PTO_MAX_SCALAR_ARGS && (uint32_t)a->tensor_count == v->tensor_count &&
           (uint32_t)a->scalar_count == v->scalar_count;
}

/* ---- the target --------------------------------------------------------------------- */

/* The index named by "args: tensor N" followed by ' ' or ':', or -1. */
static long named_tensor(const char *msg)
{
    static const char prefix[] = "args: tensor ";
    if (strncmp(msg, prefix, sizeof prefix - 1) != 0)
        return -1;
    char *end;
    long i = strtol(msg + sizeof prefix - 1, &end, 10);
    return (*end == ' ' || *end == ':') ? i : -1;
}

static uint32_t clamp_count(int32_t n, uint32_t max)
{
    return n < 0 ? 0 : (uint32_t)n > max ? max : (uint32_t)n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ChipStorageTaskArgs *args = aligned_alloc(_Alignof(ChipStorageTaskArgs), sizeof *args);
    FUZZ_CHECK(args != NULL, "out of memory%s", "");
    memset(args, 0, sizeof *args);
    args->tensor_count = (int32_t)(uint32_t)fuzz_read_le(data, size, 0, 4);
    args->scalar_count = (int32_t)(uint32_t)fuzz_read_le(data, size, 4, 4);
    ChipCallableView view;
    memset(&view, 0, sizeof view);
    view.tensor_count = (uint32_t)fuzz_read_le(data, size, 8, 2);
    view.scalar_count = (uint32_t)fuzz_read_le(data, size, 10, 2);
    if (size > HEADER_BYTES) {
        size_t n = size - HEADER_BYTES;
        if (n > sizeof args->tensors)
            n = sizeof args->tensors;
        memcpy(args->tensors, data + HEADER_BYTES, n);
    }
    /* what run_args_check may read: the counts and tensors[0, tensor_count) */
    uint32_t readable = clamp_count(args->tensor_count, PTO_MAX_TENSOR_ARGS);
    ASAN_POISON_MEMORY_REGION(&args->tensors[readable], (PTO_MAX_TENSOR_ARGS - readable) * sizeof(ChipTensor));
    ASAN_POISON_MEMORY_REGION(args->scalars, sizeof args->scalars);

    int expected = model_counts_ok(args, &view);
    long first_bad = -1;
    uint32_t child_memory = 0;
    for (uint32_t i = 0; expected && i < view.tensor_count; i++) {
        if (args->tensors[i].child_memory && args->tensors[i].size > 0)
            child_memory++;
        if (!model_tensor_ok(&args->tensors[i])) {
            expected = 0;
            first_bad = i;
        }
    }

    FakeRunner runner = { 0, 0 };
    HostApi api = host_api_bind(&runner, 0, 0, &fake_ops);
    pto_clear_error();
    int rc = run_args_check(&api, &view, args);
    const char *msg = pto_last_error();
    FUZZ_CHECK(fuzz_documented_code(rc), "undocumented code %d", rc);
    fuzz_expect(rc == PTO_OK, "run_args_check", msg);
    FUZZ_CHECK((rc == PTO_OK) == expected, "run_args_check returned %d (%s), the model says %s", rc, msg,
               expected ? "valid" : "invalid");
    if (rc == PTO_OK) {
        FUZZ_CHECK(msg[0] == '\0', "success with a message: %s", msg);
        FUZZ_CHECK(runner.probes == 2 * child_memory, "%u probes for %u child_memory tensors", runner.probes,
                   child_memory);
    } else {
        FUZZ_CHECK(rc == PTO_ERR_BAD_CALLABLE, "refused with %d: %s", rc, msg);
        FUZZ_CHECK(fuzz_message_ok(msg, PTO_ERROR_MESSAGE_BYTES) && strncmp(msg, "args: ", 6) == 0,
                   "refusal message: %s", msg);
        long named = named_tensor(msg);
        if (named >= 0)
            FUZZ_CHECK(named == first_bad, "the message names tensor %ld, the model's first invalid one is %ld: %s",
                       named, first_bad, msg);
        else
            FUZZ_CHECK(first_bad < 0, "the model finds tensor %ld invalid, the message names none: %s", first_bad,
                       msg);
        FUZZ_CHECK(runner.probes <= 2 * view.tensor_count, "%u probes", runner.probes);
    }

    ASAN_UNPOISON_MEMORY_REGION(args, sizeof *args);
    free(args);
    return 0;
}
