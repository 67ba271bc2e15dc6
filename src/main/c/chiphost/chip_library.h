/*
 * The chip host's one library (docs/isolation.md, Loading the library): the
 * child dlopen()s a variant library (libptorun_<arch>_<platform>_<runtime>.so)
 * and resolves every function of the contract (ptorun/pto_runtime_c_api.h)
 * up front, so a library that lacks one is refused at load, not at its first
 * call. Child side only; one library per process, never unloaded (the
 * process's exit is its unload).
 */
#ifndef PTORUN_CHIP_LIBRARY_H
#define PTORUN_CHIP_LIBRARY_H

#include <stddef.h>
#include <stdint.h>

/* What CHIP_OP_LOAD answers (chiphost/chip_ops.h). */
typedef struct ChipLibraryInfo {
    uint32_t abi_version;    /* get_pipeline_contract()->abi_version */
    uint32_t symbol_count;   /* contract functions resolved: all of them */
    char variant[64];        /* ptorun_variant(), NUL-terminated (truncated if longer) */
} ChipLibraryInfo;

/* Loads path[0..len) (not NUL-terminated) with RTLD_NOW | RTLD_LOCAL and
 * resolves the contract. PTO_ERR_WRONG_PHASE when a library is loaded already;
 * PTO_ERR_INVALID_ARGUMENT when the path is empty or holds a NUL, dlopen fails
 * (the message has dlerror(), which names the path), or a contract function is
 * missing (the message names it and the path); nothing stays loaded then. */
int chip_library_load(const char *path, size_t len, ChipLibraryInfo *info);

#endif
