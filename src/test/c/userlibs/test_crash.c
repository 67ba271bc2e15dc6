/*
 * libptorun_test_crash.so: user kernels that take their process down, for the
 * chip-isolation tests (docs/isolation.md): in process isolation the chip host
 * dies, the JVM and every other chip go on. Never run them in process.
 */
#define _POSIX_C_SOURCE 200809L

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "ptorun/pto_export.h"
#include "ptorun/pto_kernel.h"

/* segfault(any): stores through a wild pointer, as a kernel with a bad address does. */
PTO_EXPORT int32_t segfault(const uint64_t *args, uint32_t nargs, const PtoKernelContext *k)
{
    (void)args;
    (void)nargs;
    (void)k;
    volatile uintptr_t wild = 16; /* volatile: a real store, not a trap the compiler puts there */
    *(volatile int32_t *)wild = 1;
    return 0;
}

/* abort_kernel(any): abort(), as a failed assertion in user code does. */
PTO_EXPORT int32_t abort_kernel(const uint64_t *args, uint32_t nargs, const PtoKernelContext *k)
{
    (void)args;
    (void)nargs;
    (void)k;
    abort();
}

/* hang(any): never returns, as a kernel stuck in a loop does; parked, so the
   machine's cores stay free while the watchdog waits for the deadline. */
PTO_EXPORT int32_t hang(const uint64_t *args, uint32_t nargs, const PtoKernelContext *k)
{
    (void)args;
    (void)nargs;
    (void)k;
    for (;;)
        pause();
}
