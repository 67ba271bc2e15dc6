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

#include "ptorun/pto_runtime_c_api.h"

/* Every PTO_EXPORT function of ptorun/pto_runtime_c_api.h, in its order: the
   one list the resolver and the table below are made of. A test
   (chiphost_load_resolves_the_contract) checks the header's declarations
   against it, so a function added there and not here fails it. */
#define CHIP_CONTRACT_FUNCTIONS(X) \
    X(ptorun_variant) X(simpler_last_error) \
    X(create_device_context) X(destroy_device_context) X(simpler_init) X(finalize_device) \
    X(get_runtime_size) X(get_runtime_alignment) \
    X(device_malloc_ctx) X(device_free_ctx) X(committed_device_memory_ctx) X(copy_to_device_ctx) \
    X(copy_from_device_ctx) \
    X(simpler_register_callable) X(simpler_unregister_callable) \
    X(simpler_prepare_run) X(simpler_launch_run) X(simpler_poll_run) X(simpler_wait_run) X(simpler_finalize_run) \
    X(simpler_run) \
    X(get_aicpu_dlopen_count) X(get_host_dlopen_count) X(get_run_stream_set_create_count) \
    X(get_pipeline_contract) X(supports_concurrent_native_prepare_ctx) X(get_arena_bank_gm_heap_base_ctx) \
    X(get_retained_temp_addr_ctx) \
    X(device_poisoned_ctx) \
    X(comm_init) X(comm_alloc_windows) X(comm_get_local_window_base) X(comm_get_window_size) X(comm_derive_context) \
    X(comm_alloc_domain_windows) X(comm_release_domain_windows) X(comm_barrier) X(comm_break_domain) X(comm_destroy) \
    X(ptorun_log_pending) X(ptorun_log_next)

/* The resolved contract: one typed pointer per function, named as it is
   (its type is the header's declaration's). */
typedef struct ChipContract {
#define CHIP_CONTRACT_SLOT(name) __typeof__(name) *name;
    CHIP_CONTRACT_FUNCTIONS(CHIP_CONTRACT_SLOT)
#undef CHIP_CONTRACT_SLOT
} ChipContract;

#define CHIP_CONTRACT_ONE(name) +1
#define CHIP_CONTRACT_COUNT (0 CHIP_CONTRACT_FUNCTIONS(CHIP_CONTRACT_ONE))

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

/* The loaded library's contract; NULL before a successful load. Any thread
   (the load happens-before every later op: the channel orders them). */
const ChipContract *chip_library_contract(void);

#endif
