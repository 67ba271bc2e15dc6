/* A bound run's tensor table (run_tensors.h). */
#include "runtime/run_tensors.h"

#include <stddef.h>

#include "util/last_error.h"

int run_tensors_plan(RunTensorTable *t, const ChipCallableView *v, const ChipStorageTaskArgs *args, uint64_t start,
                     uint64_t align, const char *holder, uint64_t *end)
{
    uint64_t offset = start;
    t->count = v->tensor_count;
    for (uint32_t i = 0; i < v->tensor_count; i++) {
        const ChipTensor *a = &args->tensors[i];
        RunTensor *r = &t->entries[i];
        *r = (RunTensor){ .host = a->addr, .dev = a->addr, .size = a->size, .direction = v->signature[i] };
        if (a->child_memory) {
            r->host = 0;
            continue;
        }
        offset = (offset + align - 1) / align * align; /* offset <= SIZE_MAX / 2: cannot wrap */
        r->staged = 1;
        r->dev = offset;
        if (__builtin_add_overflow(offset, a->size, &offset) || offset > SIZE_MAX / 2)
            return pto_fail(PTO_ERR_CAPACITY, "args: the staged tensors need more bytes than %s can hold", holder);
    }
    *end = offset;
    return PTO_OK;
}

void run_tensors_relocate(RunTensorTable *t, uint64_t base)
{
    for (uint32_t i = 0; i < t->count; i++)
        if (t->entries[i].staged)
            t->entries[i].dev += base;
}

void run_tensors_device_view(const RunTensorTable *t, const ChipStorageTaskArgs *args, ChipTensor *out)
{
    for (uint32_t i = 0; i < t->count; i++) {
        out[i] = args->tensors[i];
        out[i].addr = t->entries[i].dev;
    }
}

int run_tensors_stage(const HostApi *api, const RunTensorTable *t)
{
    for (uint32_t i = 0; i < t->count; i++) {
        const RunTensor *r = &t->entries[i];
        if (!r->staged || r->size == 0)
            continue;
        void *dev = (void *)(uintptr_t)r->dev;
        int rc = r->direction == PTO_ARG_OUT ? host_api_device_memset(api, dev, 0, r->size)
                                             : host_api_copy_to_device(api, dev, (const void *)(uintptr_t)r->host, r->size);
        if (rc != PTO_OK)
            return rc;
    }
    return PTO_OK;
}

int run_tensors_copy_back(const HostApi *api, const RunTensorTable *t)
{
    for (uint32_t i = 0; i < t->count; i++) {
        const RunTensor *r = &t->entries[i];
        if (!r->staged || r->size == 0 || r->direction == PTO_ARG_IN)
            continue;
        int rc = host_api_copy_from_device(api, (void *)(uintptr_t)r->host, (const void *)(uintptr_t)r->dev, r->size);
        if (rc != PTO_OK)
            return pto_fail(rc, "collect: copying tensor %u (%llu bytes) back to the host failed", i,
                            (unsigned long long)r->size);
    }
    return PTO_OK;
}
