/*
 * libptorun_test_kernels.so: a user kernel library for the end-to-end tests.
 * Built for the host with the kernel signature of ptorun/pto_kernel.h; a
 * callable embeds its bytes (Kernel.fromLibrary) and names an entry symbol.
 * Only include/ptorun headers: a user library sees nothing else.
 *
 * Compiled with -ffp-contract=off: a*x + y is one multiply and one add, each
 * rounded, exactly as the Java reference computes it.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <string.h>
#include <time.h>

#include "ptorun/pto_export.h"
#include "ptorun/pto_kernel.h"

/* The refusal codes this library returns (the run fails with
   PTO_ERR_KERNEL_FAULT naming the task, its func_id and the code). */
enum {
    SAXPY_ERR_PARAM_COUNT = 1,
    SAXPY_ERR_VIEW_TOO_SMALL = 2,
    SAXPY_ERR_BAD_SIZE = 3,
    SAXPY_ERR_MISALIGNED = 4,
    ALWAYS_FAIL_CODE = 7,
    PACED_COPY_ERR_ARGS = 8,
    GATED_COPY_ERR_ARGS = 9,
    GATED_COPY_ERR_NEVER_OPENED = 10
};

/* saxpy(IN x, INOUT y, SCALAR a): y[i] = a * x[i] + y[i] for n = bytes(y) / 4
   f32 elements; a is f32 bits in the low 32 bits of the scalar. Every size and
   address is checked before memory is touched. */
PTO_EXPORT int32_t saxpy(const uint64_t *args, uint32_t nargs, const PtoKernelContext *k)
{
    if (nargs != 3)
        return SAXPY_ERR_PARAM_COUNT;
    uint64_t x_bytes = k->arg_sizes[0], y_bytes = k->arg_sizes[1];
    if (y_bytes % sizeof(float) != 0)
        return SAXPY_ERR_BAD_SIZE;
    if (x_bytes < y_bytes)
        return SAXPY_ERR_VIEW_TOO_SMALL;
    if (args[0] % _Alignof(float) != 0 || args[1] % _Alignof(float) != 0)
        return SAXPY_ERR_MISALIGNED;
    union {
        uint32_t bits;
        float value;
    } a = {.bits = (uint32_t)args[2]};
    const float *x = (const float *)(uintptr_t)args[0];
    float *y = (float *)(uintptr_t)args[1];
    uint64_t n = y_bytes / sizeof(float);
    for (uint64_t i = 0; i < n; i++)
        y[i] = a.value * x[i] + y[i];
    return 0;
}

/* always_fail(any): touches nothing and fails its task with code 7, so tests can
   drive a kernel fault through a user library. */
PTO_EXPORT int32_t always_fail(const uint64_t *args, uint32_t nargs, const PtoKernelContext *k)
{
    (void)args;
    (void)nargs;
    (void)k;
    return ALWAYS_FAIL_CODE;
}

/* paced_copy(IN x, OUT z, SCALAR execute_us): sleeps execute_us (without burning CPU,
   so a run's execution takes a known time whatever the machine's load), then z = x. */
PTO_EXPORT int32_t paced_copy(const uint64_t *args, uint32_t nargs, const PtoKernelContext *k)
{
    if (nargs != 3 || k->arg_sizes[0] < k->arg_sizes[1])
        return PACED_COPY_ERR_ARGS;
    uint64_t us = args[2];
    struct timespec t = {.tv_sec = (time_t)(us / 1000000u), .tv_nsec = (long)(us % 1000000u) * 1000L};
    while (nanosleep(&t, &t) != 0) {
    }
    memcpy((void *)(uintptr_t)args[1], (const void *)(uintptr_t)args[0], k->arg_sizes[1]);
    return 0;
}

/* gated_copy(IN x, OUT z, SCALAR gate): waits until the int32 at host address
   `gate` is non-zero — a test opens it: on the sim and the emulated driver the
   kernels run in the test's process — then z = x. It looks every 20 us without
   burning a core; a gate still shut after 30 s fails the task (code 10), so a
   failed test cannot leave a run that never ends. */
PTO_EXPORT int32_t gated_copy(const uint64_t *args, uint32_t nargs, const PtoKernelContext *k)
{
    if (nargs != 3 || k->arg_sizes[0] < k->arg_sizes[1] || args[2] == 0)
        return GATED_COPY_ERR_ARGS;
    const int32_t *gate = (const int32_t *)(uintptr_t)args[2];
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    time_t give_up = now.tv_sec + 30;
    while (__atomic_load_n(gate, __ATOMIC_ACQUIRE) == 0) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec >= give_up)
            return GATED_COPY_ERR_NEVER_OPENED;
        struct timespec t = {.tv_sec = 0, .tv_nsec = 20000L};
        while (nanosleep(&t, &t) != 0) {
        }
    }
    memcpy((void *)(uintptr_t)args[1], (const void *)(uintptr_t)args[0], k->arg_sizes[1]);
    return 0;
}
