/* Kernel library for the trb native tests (libtrb_test_kernels.so). */
#include <stdint.h>
#include <time.h>

#include "ptorun/pto_kernel.h"

#define EXPORT __attribute__((visibility("default")))

/* (OUT x, SCALAR ms): sleeps ms milliseconds, then writes 1.0f into x[0]. */
EXPORT int32_t trb_sleep(const uint64_t *args, uint32_t nargs, const PtoKernelContext *k)
{
    if (nargs != 2 || k->arg_sizes[0] < 4)
        return 1;
    struct timespec t = { (time_t)(args[1] / 1000), (long)(args[1] % 1000) * 1000000L };
    while (nanosleep(&t, &t) != 0)
        ;
    float one = 1.0f;
    *(float *)(uintptr_t)args[0] = one;
    return 0;
}
