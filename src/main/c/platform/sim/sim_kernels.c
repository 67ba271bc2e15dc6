/* Kernel addresses for the sim's callable uploads (runner_core.h): a built-in
 * is pto_kernel_<name> in this runner's AICore copy; a kernel library is
 * loaded into this process once per content (memory file + dlopen, refcounted
 * across children and uploads) and its entry symbol resolved there. */
#include <string.h>

#include "util/last_error.h"
#include "platform/sim/sim_runner.h"
#include "ptorun/pto_runtime_c_api.h"

static void *builtin_kernel(Runner *r, const ChipCallableView *v, uint32_t i, const ChipCallableChild *c)
{
    const char *name = chip_callable_blob(v, c->name);
    char symbol[sizeof PTO_KERNEL_SYMBOL_PREFIX + PTO_CALLABLE_MAX_NAME];
    memcpy(symbol, PTO_KERNEL_SYMBOL_PREFIX, sizeof PTO_KERNEL_SYMBOL_PREFIX - 1);
    memcpy(symbol + sizeof PTO_KERNEL_SYMBOL_PREFIX - 1, name, c->name.size);
    symbol[sizeof PTO_KERNEL_SYMBOL_PREFIX - 1 + c->name.size] = '\0';
    void *fn = sim_image_symbol(&r->aicore, symbol);
    if (fn == NULL)
        pto_fail(PTO_ERR_BAD_CALLABLE, "child %u (func_id %u): the AICore image has no kernel '%.*s'", i, c->func_id,
                 (int)c->name.size, name);
    return fn;
}

static void *library_kernel(Runner *r, const ChipCallableView *v, uint32_t i, const ChipCallableChild *c,
                            void **library)
{
    void *handle;
    if (library_cache_acquire(&r->kernel_libraries, v->bytes + c->image.offset, c->image.size, &handle) != PTO_OK) {
        pto_fail(PTO_ERR_BAD_CALLABLE, "child %u (func_id %u): %s", i, c->func_id, pto_last_error());
        return NULL;
    }
    *library = handle;
    char why[256];
    const char *name = chip_callable_blob(v, c->name);
    void *fn = library_cache_symbol(handle, name, c->name.size, why, sizeof why);
    if (fn == NULL)
        pto_fail(PTO_ERR_BAD_CALLABLE, "child %u (func_id %u): the kernel library has no entry symbol '%.*s': %s", i,
                 c->func_id, (int)c->name.size, name, why);
    return fn;
}

uint64_t platform_kernel_address(Runner *r, const ChipCallableView *v, uint32_t i, const ChipCallableChild *c,
                                 void **library)
{
    void *fn = c->source_kind == PTO_KERNEL_LIBRARY ? library_kernel(r, v, i, c, library) : builtin_kernel(r, v, i, c);
    return dev_addr(fn);
}

void platform_release_kernel_library(Runner *r, void *library)
{
    library_cache_release(&r->kernel_libraries, library);
}
