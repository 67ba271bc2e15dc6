#include "services/run_args.h"

#include <stdint.h>

#include "util/last_error.h"

/* The bytes a tensor's shape, strides and start_offset reach; -1 on overflow. */
static int implied_bytes(const ChipTensor *t, uint32_t esize, uint64_t *bytes)
{
    uint64_t last = t->start_offset;
    for (uint32_t d = 0; d < t->ndims; d++)
        if (t->shapes[d] == 0) {
            *bytes = 0; /* no elements */
            return 0;
        }
    for (uint32_t d = 0; d < t->ndims; d++) {
        uint64_t step;
        if (__builtin_mul_overflow((uint64_t)(t->shapes[d] - 1), (uint64_t)t->strides[d], &step) ||
            __builtin_add_overflow(last, step, &last))
            return -1;
    }
    if (__builtin_add_overflow(last, 1, &last) || __builtin_mul_overflow(last, (uint64_t)esize, bytes))
        return -1;
    return 0;
}

/* A child_memory tensor must lie in this device's memory: both its ends are probed. */
static int probe_child_memory(const HostApi *api, const ChipTensor *t, uint32_t i)
{
    uint8_t b;
    if (host_api_copy_from_device(api, &b, (void *)(uintptr_t)t->addr, 1) != PTO_OK ||
        host_api_copy_from_device(api, &b, (void *)(uintptr_t)(t->addr + t->size - 1), 1) != PTO_OK)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "args: tensor %u is child_memory [0x%llx, +%llu) but that is not device "
                                              "memory of this context",
                        i, (unsigned long long)t->addr, (unsigned long long)t->size);
    return PTO_OK;
}

static int check_tensor(const HostApi *api, const ChipTensor *t, uint32_t i)
{
    if (t->ndims < 1 || t->ndims > PTO_MAX_TENSOR_DIMS)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "args: tensor %u has ndims %u; 1..%d allowed", i, t->ndims,
                        PTO_MAX_TENSOR_DIMS);
    uint32_t esize = pto_dtype_bytes(t->dtype);
    if (esize == 0)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "args: tensor %u has invalid dtype %u", i, t->dtype);
    for (uint32_t d = 0; d < t->ndims; d++)
        if (t->strides[d] == 0)
            return pto_fail(PTO_ERR_BAD_CALLABLE, "args: tensor %u has stride 0 in dimension %u; strides must be > 0",
                            i, d);
    uint64_t need;
    if (implied_bytes(t, esize, &need) != 0)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "args: tensor %u: its shape, strides and start_offset overflow", i);
    if (t->size < need)
        return pto_fail(PTO_ERR_BAD_CALLABLE,
                        "args: tensor %u is %llu bytes but its shape, strides and start_offset reach %llu bytes", i,
                        (unsigned long long)t->size, (unsigned long long)need);
    if (t->size > 0 && t->addr == 0)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "args: tensor %u has %llu bytes at address 0", i,
                        (unsigned long long)t->size);
    if (t->addr + t->size < t->addr)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "args: tensor %u [0x%llx, +%llu) wraps around the address space", i,
                        (unsigned long long)t->addr, (unsigned long long)t->size);
    if (t->child_memory && t->size > 0)
        return probe_child_memory(api, t, i);
    return PTO_OK;
}

int run_args_check(const HostApi *api, const ChipCallableView *v, const ChipStorageTaskArgs *args)
{
    if (args->tensor_count < 0 || args->tensor_count > PTO_MAX_TENSOR_ARGS || args->scalar_count < 0 ||
        args->scalar_count > PTO_MAX_SCALAR_ARGS)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "args: %d tensors and %d scalars; at most %d and %d", args->tensor_count,
                        args->scalar_count, PTO_MAX_TENSOR_ARGS, PTO_MAX_SCALAR_ARGS);
    if ((uint32_t)args->tensor_count != v->tensor_count || (uint32_t)args->scalar_count != v->scalar_count)
        return pto_fail(PTO_ERR_BAD_CALLABLE,
                        "args: %d tensor(s) and %d scalar(s) given; the callable's signature takes %u and %u",
                        args->tensor_count, args->scalar_count, v->tensor_count, v->scalar_count);
    for (uint32_t i = 0; i < v->tensor_count; i++) {
        int rc = check_tensor(api, &args->tensors[i], i);
        if (rc != PTO_OK)
            return rc;
    }
    return PTO_OK;
}
