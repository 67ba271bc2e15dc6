/* What the tests of the built-in kernels' strided-view forms share: loading a
 * kernel from the AICore image, building views over host buffers, calling a
 * kernel with them, and walking a view's elements in row-major order the
 * plain way (a multi-index per element), independent of the kernels' walk. */
#ifndef PTORUN_TEST_KERNEL_VIEWS_H
#define PTORUN_TEST_KERNEL_VIEWS_H

#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/pto_builtin_kernels.h"
#include "ptorun/chip_callable.h"
#include "ptorun/pto_kernel.h"
#include "ptorun/pto_runtime_c_api.h"

#define P(ptr) ((uint64_t)(uintptr_t)(ptr))

static inline PtoKernelFn kv_kernel(const char *name)
{
    static void *handle;
    if (handle == NULL) {
        const char *dir = getenv("PTORUN_LIB_DIR");
        char path[4096];
        snprintf(path, sizeof path, "%s/libptorun_aicore_a2a3.so", dir ? dir : ".");
        handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (handle == NULL) {
            fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
            return NULL;
        }
    }
    char symbol[128];
    snprintf(symbol, sizeof symbol, "pto_kernel_%s", name);
    return (PtoKernelFn)dlsym(handle, symbol);
}

/* A view of `ndims` dims over host memory: shape then strides (elements). */
static inline PtoTensorView kv_view(const void *base, uint32_t dtype, uint32_t ndims, ...)
{
    PtoTensorView v;
    memset(&v, 0, sizeof v);
    v.addr = P(base);
    v.dtype = dtype;
    v.ndims = ndims;
    va_list ap;
    va_start(ap, ndims);
    for (uint32_t d = 0; d < ndims; d++)
        v.shape[d] = va_arg(ap, uint64_t);
    for (uint32_t d = 0; d < ndims; d++)
        v.strides[d] = va_arg(ap, uint64_t);
    va_end(ap);
    return v;
}

/* A 2-D view: rows x cols, row stride rs, column stride cs. */
static inline PtoTensorView kv_2d(const void *base, uint32_t dtype, uint64_t rows, uint64_t cols, uint64_t rs,
                                  uint64_t cs)
{
    return kv_view(base, dtype, 2, rows, cols, rs, cs);
}

static inline uint64_t kv_count(const PtoTensorView *v)
{
    uint64_t n = 1; /* a view of over 5 dims (a refusal's input) counts its first 5 */
    for (uint32_t d = 0; d < v->ndims && d < PTO_VIEW_MAX_DIMS; d++)
        n *= v->shape[d];
    return n;
}

/* The byte span of a view: what arg_sizes carries for it. */
static inline uint64_t kv_span(const PtoTensorView *v)
{
    if (kv_count(v) == 0)
        return 0;
    uint64_t last = 0;
    for (uint32_t d = 0; d < v->ndims && d < PTO_VIEW_MAX_DIMS; d++)
        last += (v->shape[d] - 1) * v->strides[d];
    return (last + 1) * pto_dtype_bytes(v->dtype);
}

/* Element offset (in elements) of the l-th element in row-major order. */
static inline uint64_t kv_offset(const PtoTensorView *v, uint64_t l)
{
    uint64_t off = 0;
    for (int d = (int)v->ndims - 1; d >= 0; d--) {
        off += (l % v->shape[d]) * v->strides[d];
        l /= v->shape[d];
    }
    return off;
}

/* Calls `name` with tensor views (a scalar's entry zero) and their spans as
   arg_sizes; views == NULL calls it the way runtimes did before views. */
static inline int32_t kv_call(const char *name, uint32_t core_type, uint32_t nargs, const uint64_t *args,
                              const PtoTensorView *views)
{
    PtoKernelFn fn = kv_kernel(name);
    if (fn == NULL)
        return -1000;
    uint64_t sizes[8] = { 0 };
    for (uint32_t i = 0; i < nargs && i < 8; i++)
        sizes[i] = views[i].ndims == 0 ? 0 : kv_span(&views[i]);
    PtoKernelContext k = { .core_type = core_type, .block_dim = 1, .arg_sizes = sizes, .views = views };
    return fn(args, nargs, &k);
}

/* The same with explicit arg_sizes (flat views, or a span the test distorts). */
static inline int32_t kv_call_sized(const char *name, uint32_t core_type, uint32_t nargs, const uint64_t *args,
                                    const uint64_t *sizes, const PtoTensorView *views)
{
    PtoKernelFn fn = kv_kernel(name);
    if (fn == NULL)
        return -1000;
    PtoKernelContext k = { .core_type = core_type, .block_dim = 1, .arg_sizes = sizes, .views = views };
    return fn(args, nargs, &k);
}

static inline uint32_t kv_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Inputs that exercise rounding: wide magnitudes, negative values, zeros of both signs. */
static inline void kv_fill(float *x, uint32_t n, uint32_t seed)
{
    uint32_t s = seed * 2654435761u + 1;
    for (uint32_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)((int32_t)(s >> 8) % 200001 - 100000) / (float)(1 + (s & 1023));
    }
    if (n > 3) {
        x[1] = 0.0f;
        x[2] = -0.0f;
    }
}

/* Whether n floats match bit for bit; names the first difference. */
static inline int kv_same_bits(const float *a, const float *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (kv_bits(a[i]) != kv_bits(b[i])) {
            fprintf(stderr, "  element %u: %a (0x%08x) != expected %a (0x%08x)\n", i, (double)a[i], kv_bits(a[i]),
                    (double)b[i], kv_bits(b[i]));
            return 0;
        }
    return 1;
}

/* Java's Math.max(float, float). */
static inline float kv_max(float a, float b)
{
    if (a != a)
        return a;
    if (a == 0.0f && b == 0.0f && signbit(a))
        return b;
    return a >= b ? a : b;
}

#endif
