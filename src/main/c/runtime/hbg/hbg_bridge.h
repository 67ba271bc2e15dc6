/*
 * The hbg host-access bridge (docs/lifecycle.md): while an hbg orchestration
 * runs on the host inside bind, it reaches run tensors by their device
 * addresses through this bridge. Each region maps a device range to a host
 * view: the device memory itself when the platform maps it to the host
 * (direct), or a host mirror whose written bytes are pushed to the device
 * through the run's HostApi (mirrored).
 *
 * A bridge belongs to one bind (it lives in the run's slot scratch, runtime.h,
 * and is reached only through the orchestration handle, never a process
 * global). It holds the run's HostApi only while the orchestration runs: bind
 * opens it with hbg_bridge_reset(b, api) and closes it with
 * hbg_bridge_reset(b, NULL) on every exit path.
 */
#ifndef PTORUN_HBG_BRIDGE_H
#define PTORUN_HBG_BRIDGE_H

#include <stdint.h>

#include "services/host_api.h"

typedef struct HbgRegion {
    uint64_t dev_base;
    uint64_t size;
    uint8_t *host_view;
    int mirrored;             /* host_view is not the device memory itself */
} HbgRegion;

typedef struct HbgBridge {
    HbgRegion *regions;
    uint32_t count, cap;
    const HostApi *api;       /* non-NULL only while an orchestration runs */
} HbgBridge;

void hbg_bridge_init(HbgBridge *b);
void hbg_bridge_destroy(HbgBridge *b);

/* Drops every region and latches `api` (NULL closes the bridge). */
void hbg_bridge_reset(HbgBridge *b, const HostApi *api);

/* Registers [dev_base, dev_base + size) with its host view; mirrored when the
 * view is not the device address itself. PTO_ERR_INVALID_ARGUMENT for size 0,
 * a NULL view or a range that wraps; PTO_ERR_OUT_OF_MEMORY. */
int hbg_bridge_add(HbgBridge *b, uint64_t dev_base, uint64_t size, void *host_view);

/* Copies n bytes at dev_addr out of / into one region. A span not inside one
 * region fails (PTO_ERR_INVALID_ARGUMENT) and leaves the destination
 * untouched. A write to a mirrored region pushes the bytes to the device
 * first; without a HostApi, or when the push fails, nothing is written and the
 * error is returned. */
int hbg_bridge_read(const HbgBridge *b, uint64_t dev_addr, void *dst, uint64_t n);
int hbg_bridge_write(const HbgBridge *b, uint64_t dev_addr, const void *src, uint64_t n);

#endif
