/*
 * Loading the chip host's library (chiphost/chip_library.h).
 */
#include "chiphost/chip_library.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "util/last_error.h"

/* The loaded library and its resolved contract: the proxied calls take their
   function from here (chip_contract_serve.c). */
static void *library;
static ChipContract contract;
static _Atomic(const ChipContract *) loaded;

/* Resolves the contract into *t; the name of the first function missing otherwise. */
static const char *resolve(void *handle, ChipContract *t)
{
#define RESOLVE(name)                                  \
    *(void **)&t->name = dlsym(handle, #name);         \
    if (t->name == NULL)                               \
        return #name;
    CHIP_CONTRACT_FUNCTIONS(RESOLVE)
#undef RESOLVE
    return NULL;
}

const ChipContract *chip_library_contract(void)
{
    return atomic_load(&loaded);
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
    ChipContract t;
    const char *missing = resolve(handle, &t);
    const PipelineContract *c = missing == NULL ? t.get_pipeline_contract() : NULL;
    if (missing != NULL || c == NULL) {
        int rc = missing != NULL ? pto_fail(PTO_ERR_INVALID_ARGUMENT,
                                            "chip host: %s is no ptorun library: it lacks %s of the contract", file,
                                            missing)
                                 : pto_fail(PTO_ERR_INVALID_ARGUMENT,
                                            "chip host: %s: get_pipeline_contract() returned NULL", file);
        dlclose(handle);
        return rc;
    }
    library = handle;
    contract = t;
    atomic_store(&loaded, &contract);
    const char *name = t.ptorun_variant();
    *info = (ChipLibraryInfo){ .abi_version = c->abi_version, .symbol_count = (uint32_t)CHIP_CONTRACT_COUNT };
    snprintf(info->variant, sizeof info->variant, "%s", name != NULL ? name : "");
    return PTO_OK;
}
