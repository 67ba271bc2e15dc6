/*
 * The shared trb runtime image on bank 0 (device/pto_trb_abi.h): its layout
 * for a ring sizing, and making sure it exists — from the prebuilt image cache
 * when the sizing matches the one last built, else built and recorded.
 */
#ifndef PTORUN_TRB_IMAGE_H
#define PTORUN_TRB_IMAGE_H

#include <stdint.h>

#include "services/host_api.h"
#include "device/pto_trb_abi.h"
#include "ptorun/pto_runtime_c_api.h"

/* The resolved ring sizing; serialized (per ring: task window, heap, dependency
 * pool, as little-endian u64) it is the prebuilt cache's key. */
typedef struct TrbSizing {
    uint64_t task_window[PTO_TRB_RINGS];
    uint64_t heap[PTO_TRB_RINGS];
    uint64_t dep_pool[PTO_TRB_RINGS];
} TrbSizing;

#define TRB_SIZING_KEY_BYTES (3 * PTO_TRB_RINGS * sizeof(uint64_t))

/* The config's ring sizing, defaults (services/call_config.h) for zero fields;
 * cfg NULL = all defaults. */
void trb_sizing_of(const CallConfig *cfg, TrbSizing *s);

/* The image for `s` on the bank `bank0` is bound to (bank 0): *image_dev is
 * its device address, *built non-zero when this call built it. Fails with
 * PTO_ERR_CAPACITY when the sizing cannot be laid out, or with the arena's
 * error (nothing of the image then remains valid). With may_build 0 (another
 * run executes on the image) it only looks the image up: a sizing other than
 * the cached one is PTO_ERR_OVERLAP_NOT_NOW, naming the sizes that differ,
 * with nothing written. */
int trb_image_ensure(const HostApi *bank0, const TrbSizing *s, int may_build, uint64_t *image_dev, int *built);

#endif
