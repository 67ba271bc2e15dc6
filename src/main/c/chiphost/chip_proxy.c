/*
 * The proxy library's management calls (chiphost/chip_proxy.h): starting and
 * stopping a chip, its child's life, its arena and its log ring. The
 * forwarded contract is chip_proxy_contract.c, the lanes chip_proxy_lanes.c.
 */
#include <stdlib.h>
#include <string.h>

#include "chiphost/chip_library.h"
#include "chiphost/chip_ops.h"
#include "chiphost/chip_proxy_chip.h"
#include "ptorun/pto_runtime_c_api.h"
#include "util/last_error.h"

/* How long the start's LOAD and DESCRIBE may take (a library's constructors run in LOAD). */
#define START_CALL_MS 60000u

/* LOAD, the log ring, DESCRIBE: the parts of a start after the spawn. */
static int load_and_describe(ProxyChip *c, const char *library)
{
    ChipLibraryInfo info;
    size_t got = 0;
    int rc = chip_process_call(&c->proc, CHIP_OP_LOAD, library, strlen(library), &info, sizeof info, &got,
                               START_CALL_MS);
    if (rc != PTO_OK)
        return rc;
    c->log = chip_arena_alloc(&c->arena, sizeof(ChipLogRing), 64);
    if (c->log == NULL)
        return pto_fail(pto_last_error_code(), "chip proxy: no room for the log ring: %s", pto_last_error());
    chip_log_ring_init(c->log);
    ChipDescribeRequest req = { (uint64_t)(uintptr_t)c->log, sizeof(ChipLogRing) };
    rc = chip_process_call(&c->proc, CHIP_OP_DESCRIBE, &req, sizeof req, &c->desc, sizeof c->desc, &got,
                           START_CALL_MS);
    if (rc == PTO_OK && got != sizeof c->desc)
        rc = pto_fail(PTO_ERR_FAILED, "chip proxy: a description of %zu bytes (%zu expected)", got, sizeof c->desc);
    c->desc.variant[sizeof c->desc.variant - 1] = '\0';
    return rc;
}

/* chip_proxy_start, the driver state shared when driver_state_fd >= 0. */
static void *start(const char *exe, const char *library, uint64_t arena_bytes, int driver_state_fd)
{
    pto_clear_error();
    if (exe == NULL || library == NULL || library[0] == '\0' || arena_bytes == 0 || arena_bytes > SIZE_MAX) {
        (void)pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip_proxy_start: needs an executable, a library and an arena size");
        return NULL;
    }
    ProxyChip *c = calloc(1, sizeof *c);
    if (c == NULL) {
        (void)pto_fail(PTO_ERR_OUT_OF_MEMORY, "chip_proxy_start: no memory");
        return NULL;
    }
    pthread_mutex_init(&c->manage, NULL);
    pthread_mutex_init(&c->lanes_lock, NULL);
    pthread_cond_init(&c->lanes_changed, NULL);
    pthread_mutex_init(&c->log_lock, NULL);
    int started = 0;
    int rc = chip_arena_create((size_t)arena_bytes, &c->arena);
    if (rc == PTO_OK) {
        ChipProcessConfig cfg = { .arena = &c->arena,
                                  .share_driver_state = driver_state_fd >= 0,
                                  .driver_state_fd = driver_state_fd };
        rc = chip_process_start_with(exe, &cfg, &c->proc);
        started = rc == PTO_OK;
    }
    if (rc == PTO_OK)
        rc = load_and_describe(c, library);
    if (rc == PTO_OK)
        rc = proxy_lanes_open_first(c);
    if (rc == PTO_OK)
        return c;

    /* unwind in reverse: the child, the arena, the chip (stop keeps our message) */
    if (started)
        chip_process_stop(&c->proc, CHIP_PROCESS_STOP_GRACE_MS);
    chip_arena_close(&c->arena);
    pthread_mutex_destroy(&c->log_lock);
    pthread_cond_destroy(&c->lanes_changed);
    pthread_mutex_destroy(&c->lanes_lock);
    pthread_mutex_destroy(&c->manage);
    free(c);
    return NULL;
}

PTO_EXPORT void *chip_proxy_start(const char *exe, const char *library, uint64_t arena_bytes)
{
    return start(exe, library, arena_bytes, -1);
}

PTO_EXPORT void *chip_proxy_start_with_driver_state(const char *exe, const char *library, uint64_t arena_bytes,
                                                    int driver_state_fd)
{
    return start(exe, library, arena_bytes, driver_state_fd);
}

PTO_EXPORT void chip_proxy_stop(void *chip)
{
    ProxyChip *c = chip;
    if (c == NULL)
        return;
    /* lane 0: the child exits at once, whatever its lanes (no call is in flight) */
    chip_process_stop(&c->proc, CHIP_PROCESS_STOP_GRACE_MS);
    chip_arena_close(&c->arena); /* the lanes and the log ring with it */
    pthread_mutex_destroy(&c->log_lock);
    pthread_cond_destroy(&c->lanes_changed);
    pthread_mutex_destroy(&c->lanes_lock);
    pthread_mutex_destroy(&c->manage);
    free(c);
}

PTO_EXPORT int chip_proxy_kill(void *chip, int sig)
{
    pto_clear_error();
    if (chip == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip_proxy_kill: no chip");
    return chip_process_kill(&((ProxyChip *)chip)->proc, sig);
}

PTO_EXPORT int64_t chip_proxy_pid(void *chip)
{
    return chip == NULL ? 0 : (int64_t)((ProxyChip *)chip)->proc.pid;
}

PTO_EXPORT int chip_proxy_alive(void *chip)
{
    return chip != NULL && !chip_process_gone(&((ProxyChip *)chip)->proc);
}

PTO_EXPORT const char *chip_proxy_death(void *chip)
{
    ProxyChip *c = chip;
    /* fixed once gone is set: stable until stop */
    return c != NULL && atomic_load(&c->proc.gone) ? c->proc.death : "";
}

PTO_EXPORT const char *chip_proxy_last_error(void)
{
    return pto_last_error();
}

PTO_EXPORT const char *chip_proxy_variant(void *chip)
{
    return chip == NULL ? "" : ((ProxyChip *)chip)->desc.variant;
}

PTO_EXPORT uint64_t chip_proxy_runtime_size(void *chip)
{
    return chip == NULL ? 0 : ((ProxyChip *)chip)->desc.runtime_size;
}

PTO_EXPORT uint64_t chip_proxy_runtime_alignment(void *chip)
{
    return chip == NULL ? 0 : ((ProxyChip *)chip)->desc.runtime_alignment;
}

PTO_EXPORT const void *chip_proxy_pipeline_contract(void *chip)
{
    return chip == NULL ? NULL : &((ProxyChip *)chip)->desc.contract;
}

PTO_EXPORT uint64_t chip_proxy_arena_alloc(void *chip, uint64_t bytes, uint64_t align)
{
    pto_clear_error();
    if (chip == NULL || bytes > SIZE_MAX || align > SIZE_MAX) {
        (void)pto_fail(PTO_ERR_INVALID_ARGUMENT, "chip_proxy_arena_alloc: no chip, or %llu bytes",
                       (unsigned long long)bytes);
        return 0;
    }
    return (uint64_t)(uintptr_t)chip_arena_alloc(&((ProxyChip *)chip)->arena, (size_t)bytes, (size_t)align);
}

PTO_EXPORT void chip_proxy_arena_free(void *chip, uint64_t address)
{
    if (chip != NULL && address != 0)
        chip_arena_free(&((ProxyChip *)chip)->arena, (void *)(uintptr_t)address);
}

PTO_EXPORT int chip_proxy_in_arena(void *chip, uint64_t address, uint64_t bytes)
{
    return chip != NULL && bytes <= SIZE_MAX && chip_arena_holds(&((ProxyChip *)chip)->arena, address, (size_t)bytes);
}

PTO_EXPORT uint64_t chip_proxy_log_pending(void *chip)
{
    ProxyChip *c = chip;
    if (c == NULL)
        return 0;
    pthread_mutex_lock(&c->log_lock);
    uint64_t n = chip_log_ring_pending(c->log, c->log_dropped_seen);
    pthread_mutex_unlock(&c->log_lock);
    return n;
}

PTO_EXPORT int chip_proxy_log_next(void *chip, char *buf, size_t cap)
{
    ProxyChip *c = chip;
    if (c == NULL || buf == NULL || cap == 0)
        return PTO_ERR_INVALID_ARGUMENT; /* as ptorun_log_next: leaves the last error alone */
    pthread_mutex_lock(&c->log_lock);
    int level = chip_log_ring_next(c->log, &c->log_dropped_seen, buf, cap);
    pthread_mutex_unlock(&c->log_lock);
    return level;
}

PTO_EXPORT uint64_t chip_proxy_lane_count(void *chip)
{
    ProxyChip *c = chip;
    if (c == NULL)
        return 0;
    pthread_mutex_lock(&c->lanes_lock);
    uint64_t n = c->lane_count;
    pthread_mutex_unlock(&c->lanes_lock);
    return n;
}
