/* Callable registration, once for both runtimes (runtime_registry.h). */
#include "runtime/runtime_registry.h"

#include <stdlib.h>

#include "util/last_error.h"

static CallableCopy *copy_of(RuntimeCallable *c)
{
    return (CallableCopy *)c; /* the first member of every runtime's RuntimeCallable */
}

/* Reads each child's resolved kernel address back from the uploaded copy. */
static int read_kernels(const HostApi *api, CallableCopy *copy)
{
    const ChipCallableView *v = &copy->view;
    uint32_t n = v->header.child_count;
    ChipCallableChild children[PTO_CALLABLE_MAX_CHILDREN];
    if (n == 0)
        return PTO_OK;
    int rc = host_api_copy_from_device(api, children, (uint8_t *)copy->upload_dev + v->header.children.offset,
                                       (size_t)n * sizeof *children);
    if (rc != PTO_OK)
        return rc;
    for (uint32_t i = 0; i < n; i++) {
        if (children[i].resolved_addr == 0)
            return pto_fail(PTO_ERR_BAD_CALLABLE, "register_callable: child %u (func_id %u) was not resolved", i,
                            children[i].func_id);
        copy->kernels[i] = (CallableKernel){ children[i].resolved_addr, children[i].func_id, children[i].core_type };
    }
    return PTO_OK;
}

/* Uploads the private copy and reads its kernels; on failure nothing stays uploaded. */
static int upload(const HostApi *api, CallableCopy *copy)
{
    uint32_t total = copy->view.header.total_size;
    int rc = host_api_upload_chip_callable_buffer(api, copy->bytes, total, pto_fnv1a64(copy->bytes, total),
                                                  &copy->upload_dev);
    if (rc != PTO_OK)
        return rc;
    if ((rc = read_kernels(api, copy)) != PTO_OK) {
        host_api_release_chip_callable_buffer(api, copy->upload_dev);
        copy->upload_dev = NULL;
    }
    return rc;
}

int runtime_register_callable(const HostApi *api, const void *callable, RuntimeCallable **out)
{
    if (out == NULL || api == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "register_callable: NULL %s", out == NULL ? "out" : "HostApi");
    *out = NULL;
    ChipCallableView probe;
    char msg[CHIP_CALLABLE_MESSAGE_BYTES];
    if (chip_callable_decode(callable, &probe, msg, sizeof msg) != PTO_OK)
        return pto_fail(PTO_ERR_BAD_CALLABLE, "register_callable: %s", msg);
    RuntimeCallable *c = calloc(1, runtime_callable_size());
    if (c == NULL)
        return pto_fail(PTO_ERR_OUT_OF_MEMORY, "register_callable: out of host memory");
    CallableCopy *copy = copy_of(c);
    int rc = chip_callable_private_copy(callable, probe.header.total_size, &copy->bytes, &copy->view);
    if (rc != PTO_OK)
        goto fail_copy;
    if ((rc = upload(api, copy)) != PTO_OK)
        goto fail_upload;
    if ((rc = runtime_callable_attach(api, c)) != PTO_OK)
        goto fail_attach;
    *out = c;
    return PTO_OK;

fail_attach:
    host_api_release_chip_callable_buffer(api, copy->upload_dev);
fail_upload:
    free(copy->bytes);
fail_copy:
    free(c);
    return rc;
}

void runtime_release_callable(const HostApi *api, RuntimeCallable *c)
{
    if (c == NULL)
        return;
    CallableCopy *copy = copy_of(c);
    runtime_callable_detach(api, c);
    host_api_release_chip_callable_buffer(api, copy->upload_dev);
    free(copy->bytes);
    free(c);
}
