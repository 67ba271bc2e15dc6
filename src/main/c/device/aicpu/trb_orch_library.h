/*
 * Orchestration libraries on the device (trb): the image bytes of a callable's
 * PTO_ORCH_LIBRARY orchestration are loaded here, on the device, the first time
 * a run needs them — on the sim the AICPU image is a host shared object, so
 * this is a memory file + dlopen (RTLD_LOCAL) like the device images
 * themselves. Loaded libraries stay in a small cache keyed by the image's
 * content hash (a second callable with the same image does not load it again)
 * until this copy of the AICPU image is unloaded (finalize_device).
 *
 * Used by the orchestrator thread only; one run at a time per device.
 */
#ifndef PTORUN_TRB_ORCH_LIBRARY_H
#define PTORUN_TRB_ORCH_LIBRARY_H

#include <stdint.h>

#include "ptorun/pto_orchestration.h"

/* The entry `entry`[0..entry_length) of the library whose image is
   image[0..size) with content hash `hash`, loading it if needed. NULL with a
   PTO_ERR_BAD_CALLABLE message (last_error) when it cannot be loaded or has
   no such symbol. */
PtoOrchestrationFn trb_orch_library_entry(const uint8_t *image, uint64_t size, uint64_t hash, const char *entry,
                                          uint32_t entry_length);

#endif
