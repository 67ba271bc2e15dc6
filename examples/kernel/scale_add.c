/*
 * A user kernel library: scale_add(IN x, INOUT y, SCALAR a) computes
 * y[i] = a * x[i] + y[i] over bytes(y) / 4 floats. Build it against the headers the
 * ptorun jar carries (docs/getting-started.md):
 *
 *   cc -std=c11 -O2 -fPIC -shared -Wl,--no-undefined \
 *      -I ptorun-sdk/META-INF/ptorun/include -o libscale_add.so scale_add.c
 */
#include <stdint.h>

#include "ptorun/pto_export.h"
#include "ptorun/pto_kernel.h"

enum { SCALE_ADD_BAD_ARGS = 1, SCALE_ADD_VIEW_TOO_SMALL = 2 };

PTO_EXPORT int32_t scale_add(const uint64_t *args, uint32_t nargs, const PtoKernelContext *k)
{
    if (nargs != 3 || k->arg_sizes[1] % sizeof(float) != 0)
        return SCALE_ADD_BAD_ARGS;
    if (k->arg_sizes[0] < k->arg_sizes[1])
        return SCALE_ADD_VIEW_TOO_SMALL; /* never read past x's view */
    union {
        uint32_t bits;
        float value;
    } a = { .bits = (uint32_t)args[2] };
    const float *x = (const float *)(uintptr_t)args[0];
    float *y = (float *)(uintptr_t)args[1];
    for (uint64_t i = 0; i < k->arg_sizes[1] / sizeof(float); i++)
        y[i] = a.value * x[i] + y[i];
    return 0;
}
