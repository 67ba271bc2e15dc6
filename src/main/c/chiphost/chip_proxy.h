/*
 * libptorun_chipproxy.so (docs/isolation.md, The proxy library): the contract
 * of ptorun/pto_runtime_c_api.h forwarded to a chip host, the child process
 * ptorun-chiphost that loads the variant library, so a chip's crash kills the
 * child only. Variant-independent, parent side; the Java side binds these by
 * name (JNA direct mapping).
 *
 * A chip (void *chip) is one child with its arena; calls come from many
 * threads at once, each on a lane of its own (opened on demand, at most
 * CHIP_PROXY_MAX_LANES; beyond, a call waits parked for a free lane). Calls
 * have no timeout: liveness slices tell a dead child within ~20 ms, and
 * chip_proxy_kill ends a hang.
 *
 * The forwarded calls return what the contract function returns. Once the
 * child is gone every call fails with PTO_ERR_CHIP_CRASHED and its death
 * message (chip_proxy_last_error): pointer calls return NULL/0, void calls do
 * nothing, destroy_device_context and comm_destroy just free the proxy handle,
 * device_poisoned returns 1. ctx and comm are proxy handles (the chip and the
 * child's pointer value). Pointers the child follows (run storage, args, cfg,
 * desc, a callable, init's images and prewarm) must lie in the chip's arena
 * (chip_proxy_arena_alloc): the child refuses others with
 * PTO_ERR_INVALID_ARGUMENT naming them. A copy's host buffer may lie anywhere:
 * outside the arena the proxy bounces it through arena chunks.
 */
#ifndef PTORUN_CHIP_PROXY_H
#define PTORUN_CHIP_PROXY_H

#include <stddef.h>
#include <stdint.h>

#include "ptorun/pto_export.h"

#define CHIP_PROXY_MAX_LANES 32u

/* ---- management ---------------------------------------------------------------- */

/* Spawns exe (ptorun-chiphost) with a fresh arena of arena_bytes, loads library (a path), reads its description,
   sets up the log ring and a first lane; NULL on failure (chip_proxy_last_error). Call from a thread that outlives
   the chip (PR_SET_PDEATHSIG follows the spawning thread). */
PTO_EXPORT void *chip_proxy_start(const char *exe, const char *library, uint64_t arena_bytes);
/* chip_proxy_start, the child sharing the caller's emulated driver state: driver_state_fd is
   ptorun_emudrv_state_fd() of the driver the caller would arm faults in (ptorun/pto_emudrv.h);
   the child inherits it at fd 5 with PTORUN_EMUDRV_STATE_FD=5 in its environment only, so its
   driver shares the armed faults and the stats. -1: none (as chip_proxy_start). The caller
   keeps its fd. */
PTO_EXPORT void *chip_proxy_start_with_driver_state(const char *exe, const char *library, uint64_t arena_bytes,
                                                    int driver_state_fd);
/* EXIT, a grace, SIGKILL; collects the child, frees lanes, arena, everything; NULL tolerated; no call in flight. */
PTO_EXPORT void chip_proxy_stop(void *chip);
/* Sends sig to the child (crash on demand, the hang watchdog): PTO_OK, or PTO_ERR_CHIP_CRASHED when gone already. */
PTO_EXPORT int chip_proxy_kill(void *chip, int sig);
/* The child's process id (kept after its death). */
PTO_EXPORT int64_t chip_proxy_pid(void *chip);
/* 1 alive, 0 gone (a non-blocking check; collects a dead child). */
PTO_EXPORT int chip_proxy_alive(void *chip);
/* Why the child is gone (e.g. "chip host pid 4711 was killed by signal 9 (Killed)"); "" while alive; stable until stop. */
PTO_EXPORT const char *chip_proxy_death(void *chip);
/* The calling thread's last failure message ("" when none). */
PTO_EXPORT const char *chip_proxy_last_error(void);
/* The loaded library's ptorun_variant(), e.g. "a2a3/sim/hbg". */
PTO_EXPORT const char *chip_proxy_variant(void *chip);
/* The loaded library's get_runtime_size(): the bytes of one run storage. */
PTO_EXPORT uint64_t chip_proxy_runtime_size(void *chip);
/* The loaded library's get_runtime_alignment(). */
PTO_EXPORT uint64_t chip_proxy_runtime_alignment(void *chip);
/* A copy of the child's PipelineContract, held by the proxy. */
PTO_EXPORT const void *chip_proxy_pipeline_contract(void *chip);
/* bytes of zeros in the arena aligned to align (a power of two <= a page); 0 + last error when none fit. */
PTO_EXPORT uint64_t chip_proxy_arena_alloc(void *chip, uint64_t bytes, uint64_t align);
/* Gives an arena block back (0 tolerated). */
PTO_EXPORT void chip_proxy_arena_free(void *chip, uint64_t address);
/* 1 when [address, address + bytes) lies in the chip's arena, else 0. */
PTO_EXPORT int chip_proxy_in_arena(void *chip, uint64_t address, uint64_t bytes);
/* Native log records waiting in the chip's log ring (a drop notice counts one). */
PTO_EXPORT uint64_t chip_proxy_log_pending(void *chip);
/* ptorun_log_next's semantics over the chip's log ring (in the arena: works after the child's death). */
PTO_EXPORT int chip_proxy_log_next(void *chip, char *buf, size_t cap);
/* Lanes opened so far (for tests and figures). */
PTO_EXPORT uint64_t chip_proxy_lane_count(void *chip);

/* ---- the contract, forwarded (ctx, comm: proxy handles) ------------------------ */

/* create_device_context in the child; the proxy handle, or NULL. */
PTO_EXPORT void *chip_proxy_create_device_context(void *chip);
/* destroy_device_context, then frees the handle (only the handle when the child is gone); NULL tolerated. */
PTO_EXPORT void chip_proxy_destroy_device_context(void *ctx);
/* simpler_init; the images and prewarm in the arena (or NULL with size 0). */
PTO_EXPORT int chip_proxy_init(void *ctx, int device_id, const uint8_t *aicpu, size_t aicpu_size,
                               const uint8_t *aicore, size_t aicore_size, const uint8_t *dispatcher,
                               size_t dispatcher_size, const void *prewarm);
/* finalize_device. */
PTO_EXPORT int chip_proxy_finalize_device(void *ctx);
/* device_malloc_ctx: the child's device pointer value as is; NULL on failure. */
PTO_EXPORT void *chip_proxy_device_malloc(void *ctx, size_t n);
/* device_free_ctx. */
PTO_EXPORT void chip_proxy_device_free(void *ctx, void *p);
/* committed_device_memory_ctx. */
PTO_EXPORT size_t chip_proxy_committed_device_memory(void *ctx);
/* copy_to_device_ctx; host anywhere (outside the arena: bounced through arena chunks). */
PTO_EXPORT int chip_proxy_copy_to_device(void *ctx, void *dev, const void *host, size_t n);
/* copy_from_device_ctx; host anywhere (outside the arena: bounced through arena chunks). */
PTO_EXPORT int chip_proxy_copy_from_device(void *ctx, void *host, const void *dev, size_t n);
/* simpler_register_callable; the callable in the arena. */
PTO_EXPORT int chip_proxy_register_callable(void *ctx, int32_t id, const void *callable);
/* simpler_unregister_callable. */
PTO_EXPORT int chip_proxy_unregister_callable(void *ctx, int32_t id);
/* simpler_prepare_run; storage, args, cfg, desc (and desc's accepted_state) in the arena. */
PTO_EXPORT int chip_proxy_prepare_run(void *ctx, void *storage, int32_t id, const void *args, const void *cfg,
                                      const void *desc);
/* simpler_launch_run. */
PTO_EXPORT int chip_proxy_launch_run(void *ctx, void *storage);
/* simpler_poll_run. */
PTO_EXPORT int chip_proxy_poll_run(void *ctx, void *storage);
/* simpler_wait_run (blocks its lane only). */
PTO_EXPORT int chip_proxy_wait_run(void *ctx, void *storage);
/* simpler_finalize_run. */
PTO_EXPORT int chip_proxy_finalize_run(void *ctx, void *storage);
/* simpler_run; as prepare_run. */
PTO_EXPORT int chip_proxy_run(void *ctx, void *storage, int32_t id, const void *args, const void *cfg,
                              const void *desc);
/* get_aicpu_dlopen_count. */
PTO_EXPORT size_t chip_proxy_aicpu_dlopen_count(void *ctx);
/* get_host_dlopen_count. */
PTO_EXPORT size_t chip_proxy_host_dlopen_count(void *ctx);
/* get_run_stream_set_create_count. */
PTO_EXPORT size_t chip_proxy_run_stream_set_create_count(void *ctx);
/* supports_concurrent_native_prepare_ctx. */
PTO_EXPORT int chip_proxy_supports_concurrent_native_prepare(void *ctx);
/* get_arena_bank_gm_heap_base_ctx. */
PTO_EXPORT uint64_t chip_proxy_arena_bank_gm_heap_base(void *ctx, uint32_t bank);
/* get_retained_temp_addr_ctx. */
PTO_EXPORT uint64_t chip_proxy_retained_temp_addr(void *ctx, uint32_t slot);
/* device_poisoned_ctx; 1 for a gone chip. */
PTO_EXPORT int chip_proxy_device_poisoned(void *ctx);
/* comm_init (the rootinfo path travels in the payload); the proxy comm handle, or NULL. */
PTO_EXPORT void *chip_proxy_comm_init(void *ctx, int rank, int nranks, const char *rootinfo_path,
                                      uint32_t timeout_ms);
/* comm_alloc_windows. */
PTO_EXPORT int chip_proxy_comm_alloc_windows(void *comm, size_t win_size, uint64_t *device_ctx_out);
/* comm_get_local_window_base. */
PTO_EXPORT int chip_proxy_comm_get_local_window_base(void *comm, uint64_t *base_out);
/* comm_get_window_size. */
PTO_EXPORT int chip_proxy_comm_get_window_size(void *comm, size_t *size_out);
/* comm_derive_context (rank ids travel in the payload: at most CHIP_COMM_MAX_RANK_IDS). */
PTO_EXPORT int chip_proxy_comm_derive_context(void *comm, const uint32_t *rank_ids, size_t rank_count,
                                              uint32_t domain_rank, size_t window_offset, size_t window_size,
                                              uint64_t *device_ctx_out);
/* comm_alloc_domain_windows (rank ids as comm_derive_context). */
PTO_EXPORT int chip_proxy_comm_alloc_domain_windows(void *comm, uint64_t allocation_id, const uint32_t *rank_ids,
                                                    size_t rank_count, uint32_t domain_rank, size_t window_size,
                                                    uint64_t *device_ctx_out, uint64_t *local_window_base_out);
/* comm_release_domain_windows. */
PTO_EXPORT int chip_proxy_comm_release_domain_windows(void *comm, uint64_t allocation_id, size_t rank_count,
                                                      uint32_t domain_rank);
/* comm_barrier. */
PTO_EXPORT int chip_proxy_comm_barrier(void *comm);
/* comm_break_domain. */
PTO_EXPORT int chip_proxy_comm_break_domain(void *comm, uint64_t device_ctx);
/* comm_destroy, then frees the handle when it succeeded; a gone child: frees it and returns PTO_OK (the rank left with its process); NULL tolerated. */
PTO_EXPORT int chip_proxy_comm_destroy(void *comm);

#endif
