/*
 * Loading the chip host's library (chiphost/chip_library.h).
 */
#include "chiphost/chip_library.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "ptorun/pto_runtime_c_api.h"
#include "util/last_error.h"

/* Every PTO_EXPORT function of ptorun/pto_runtime_c_api.h, in its order. A test
   (chiphost_load_resolves_the_contract) counts the header's declarations
   against this list, so a function added there and not here fails it. */
static const char *const CONTRACT[] = {
    "ptorun_variant", "simpler_last_error",
    "create_device_context", "destroy_device_context", "simpler_init", "finalize_device",
    "get_runtime_size", "get_runtime_alignment",
    "device_malloc_ctx", "device_free_ctx", "committed_device_memory_ctx", "copy_to_device_ctx",
    "copy_from_device_ctx",
    "simpler_register_callable", "simpler_unregister_callable",
    "simpler_prepare_run", "simpler_launch_run", "simpler_poll_run", "simpler_wait_run", "simpler_finalize_run",
    "simpler_run",
    "get_aicpu_dlopen_count", "get_host_dlopen_count", "get_run_stream_set_create_count",
    "get_pipeline_contract", "supports_concurrent_native_prepare_ctx", "get_arena_bank_gm_heap_base_ctx",
    "get_retained_temp_addr_ctx",
    "device_poisoned_ctx",
    "comm_init", "comm_alloc_windows", "comm_get_local_window_base", "comm_get_window_size", "comm_derive_context",
    "comm_alloc_domain_windows", "comm_release_domain_windows", "comm_barrier", "comm_break_domain", "comm_destroy",
    "ptorun_log_pending", "ptorun_log_next",
};
#define CONTRACT_COUNT (sizeof CONTRACT / sizeof CONTRACT[0])

/* The loaded library and its resolved contract, in CONTRACT's order: the later
   proxied calls take their function from here. */
static void *library;
static void *functions[CONTRACT_COUNT];

/* Resolves CONTRACT into functions; the name of the first one missing otherwise. */
static const char *resolve(void *handle)
{
    for (size_t i = 0; i < CONTRACT_COUNT; i++) {
        (void)dlerror();
        functions[i] = dlsym(handle, CONTRACT[i]);
        if (functions[i] == NULL)
            return CONTRACT[i];
    }
    return NULL;
}

static void *function(const char *name)
{
    for (size_t i = 0; i < CONTRACT_COUNT; i++)
        if (strcmp(CONTRACT[i], name) == 0)
            return functions[i];
    return NULL;
}

int chip_library_load(const char *path, size_t len, ChipLibraryInfo *info)
{
    char file[PATH_MAX];
    if (library != NULL)
        return pto_fail(PTO_ERR_WRONG_PHASE, "chip host: a library is loaded already (one per chip host)");
    if (len == 0 || len >= sizeof file || memchr(path, '\0', len) != NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip host: LOAD needs a path of 1..%zu bytes without NUL (got %zu)",
                        sizeof file - 1, len);
    memcpy(file, path, len);
    file[len] = '\0';
    void *handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip host: cannot load %s: %s", file, dlerror());
    const char *missing = resolve(handle);
    const PipelineContract *(*contract)(void) = NULL;
    const char *(*variant)(void) = NULL;
    const PipelineContract *c = NULL;
    if (missing == NULL) {
        *(void **)&contract = function("get_pipeline_contract");
        *(void **)&variant = function("ptorun_variant");
        c = contract();
    }
    if (missing != NULL || c == NULL) {
        int rc = missing != NULL ? pto_fail(PTO_ERR_INVALID_ARGUMENT,
                                            "chip host: %s is no ptorun library: it lacks %s of the contract", file,
                                            missing)
                                 : pto_fail(PTO_ERR_INVALID_ARGUMENT,
                                            "chip host: %s: get_pipeline_contract() returned NULL", file);
        memset(functions, 0, sizeof functions);
        dlclose(handle);
        return rc;
    }
    library = handle;
    const char *name = variant();
    *info = (ChipLibraryInfo){ .abi_version = c->abi_version, .symbol_count = (uint32_t)CONTRACT_COUNT };
    snprintf(info->variant, sizeof info->variant, "%s", name != NULL ? name : "");
    return PTO_OK;
}
