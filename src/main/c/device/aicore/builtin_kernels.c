/*
 * The AICore image: the built-in kernels (device/pto_builtin_kernels.h lists
 * them, docs/kernels.md documents their parameters). Each checks its parameter
 * count and every view size it relies on (PtoKernelContext.arg_sizes) before
 * touching memory, so a malformed task is refused, never overrun.
 *
 * Views may alias (c = a + s in place), so nothing here is `restrict`.
 */
#include <stdint.h>
#include <string.h>

#include "device/pto_builtin_kernels.h"
#include "device/pto_device_abi.h"
#include "ptorun/pto_export.h"
#include "ptorun/pto_kernel.h"

#define KERNEL_SIGNATURE(name) \
    PTO_EXPORT int32_t pto_kernel_##name(const uint64_t *args, uint32_t nargs, const PtoKernelContext *k)
#define DECLARE_KERNEL(name) KERNEL_SIGNATURE(name);
PTO_BUILTIN_KERNELS(DECLARE_KERNEL)

/* Referencing every listed kernel makes a missing definition a link error. */
#define KERNEL_ENTRY(name) pto_kernel_##name,
__attribute__((used)) static const PtoKernelFn builtin_kernels[] = { PTO_BUILTIN_KERNELS(KERNEL_ENTRY) };

PTO_EXPORT uint32_t pto_device_abi_version(void)
{
    return PTO_DEVICE_ABI_VERSION;
}

/* An f32 view: 4-byte aligned and a whole number of elements. */
static int32_t check_f32_view(uint64_t addr, uint64_t bytes)
{
    if (bytes % sizeof(float) != 0)
        return PTO_KERNEL_ERR_BAD_SIZE;
    if (addr % _Alignof(float) != 0)
        return PTO_KERNEL_ERR_MISALIGNED;
    return PTO_KERNEL_OK;
}

static float f32_from_bits(uint64_t raw)
{
    uint32_t bits = (uint32_t)raw;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Checks a binary operation's views: two inputs at least as large as the output. */
static int32_t check_binary(const uint64_t *args, const uint64_t *sizes)
{
    int32_t rc;
    if ((rc = check_f32_view(args[2], sizes[2])) != PTO_KERNEL_OK)
        return rc;
    if (sizes[0] < sizes[2] || sizes[1] < sizes[2])
        return PTO_KERNEL_ERR_VIEW_TOO_SMALL;
    if (args[0] % _Alignof(float) != 0 || args[1] % _Alignof(float) != 0)
        return PTO_KERNEL_ERR_MISALIGNED;
    return PTO_KERNEL_OK;
}

/* Checks a with-scalar operation's views: input at least as large as the output. */
static int32_t check_unary(const uint64_t *args, const uint64_t *sizes)
{
    int32_t rc;
    if ((rc = check_f32_view(args[1], sizes[1])) != PTO_KERNEL_OK)
        return rc;
    if (sizes[0] < sizes[1])
        return PTO_KERNEL_ERR_VIEW_TOO_SMALL;
    if (args[0] % _Alignof(float) != 0)
        return PTO_KERNEL_ERR_MISALIGNED;
    return PTO_KERNEL_OK;
}

KERNEL_SIGNATURE(noop)
{
    (void)args, (void)nargs, (void)k;
    return PTO_KERNEL_OK;
}

/* vcopy(IN x, OUT y): y = the first bytes(y) bytes of x, any dtype. */
KERNEL_SIGNATURE(vcopy)
{
    if (nargs != 2)
        return PTO_KERNEL_ERR_PARAM_COUNT;
    if (k->arg_sizes[0] < k->arg_sizes[1])
        return PTO_KERNEL_ERR_VIEW_TOO_SMALL;
    memmove((void *)(uintptr_t)args[1], (const void *)(uintptr_t)args[0], (size_t)k->arg_sizes[1]);
    return PTO_KERNEL_OK;
}

/* vfill(OUT y, SCALAR v): every f32 of y = v. */
KERNEL_SIGNATURE(vfill)
{
    if (nargs != 2)
        return PTO_KERNEL_ERR_PARAM_COUNT;
    int32_t rc = check_f32_view(args[0], k->arg_sizes[0]);
    if (rc != PTO_KERNEL_OK)
        return rc;
    float *y = (float *)(uintptr_t)args[0];
    float v = f32_from_bits(args[1]);
    uint64_t n = k->arg_sizes[0] / sizeof(float);
    for (uint64_t i = 0; i < n; i++)
        y[i] = v;
    return PTO_KERNEL_OK;
}

#define BINARY_KERNEL(name, op)                                            \
    KERNEL_SIGNATURE(name)                                                 \
    {                                                                      \
        if (nargs != 3)                                                    \
            return PTO_KERNEL_ERR_PARAM_COUNT;                             \
        int32_t rc = check_binary(args, k->arg_sizes);                     \
        if (rc != PTO_KERNEL_OK)                                           \
            return rc;                                                     \
        const float *a = (const float *)(uintptr_t)args[0];                \
        const float *b = (const float *)(uintptr_t)args[1];                \
        float *c = (float *)(uintptr_t)args[2];                            \
        uint64_t n = k->arg_sizes[2] / sizeof(float);                      \
        for (uint64_t i = 0; i < n; i++)                                   \
            c[i] = a[i] op b[i];                                           \
        return PTO_KERNEL_OK;                                              \
    }

#define SCALAR_KERNEL(name, op)                                            \
    KERNEL_SIGNATURE(name)                                                 \
    {                                                                      \
        if (nargs != 3)                                                    \
            return PTO_KERNEL_ERR_PARAM_COUNT;                             \
        int32_t rc = check_unary(args, k->arg_sizes);                      \
        if (rc != PTO_KERNEL_OK)                                           \
            return rc;                                                     \
        const float *a = (const float *)(uintptr_t)args[0];                \
        float *c = (float *)(uintptr_t)args[1];                            \
        float s = f32_from_bits(args[2]);                                  \
        uint64_t n = k->arg_sizes[1] / sizeof(float);                      \
        for (uint64_t i = 0; i < n; i++)                                   \
            c[i] = a[i] op s;                                              \
        return PTO_KERNEL_OK;                                              \
    }

/* vadd(IN a, IN b, OUT c), vmul(IN a, IN b, OUT c): n = bytes(c) / 4. */
BINARY_KERNEL(vadd, +)
BINARY_KERNEL(vmul, *)
/* vadds(IN a, OUT c, SCALAR s), vmuls(IN a, OUT c, SCALAR s): c = a + s, c = a * s. */
SCALAR_KERNEL(vadds, +)
SCALAR_KERNEL(vmuls, *)
