/* What a run has to do with communication domains (common/comm.c): a run
 * that fails — refused at prepare or launch, or ending with an error — breaks
 * every live domain its scalar arguments name (a scalar equal to the device
 * address of one of this context's domain descriptors), naming this rank, so
 * its peers fail at once instead of waiting for the group timeout in their
 * collective's entry sync. The peers cannot tell "not yet entered" from
 * "done": a failed run breaks its domains even if its collective completed. */
#ifndef PTORUN_COMM_RUN_H
#define PTORUN_COMM_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "common/device_context.h"

/* How many named domains one run remembers; a run naming more breaks the first ones. */
#define PTO_RUN_COMM_DOMAINS 8u

typedef struct RunCommDomains {
    uint32_t count;
    uint64_t device_ctx[PTO_RUN_COMM_DOMAINS];
} RunCommDomains;

/* Notes the live domains of dc that scalars[0..count) name. One atomic load
 * when no comm handle lives over dc (the usual run). */
void comm_run_note(DeviceContext *dc, const uint64_t *scalars, size_t count, RunCommDomains *out);

/* Breaks the noted domains that are still live, naming this rank in each, and
 * forgets them (a second call does nothing). Keeps the thread's error message:
 * the run's own failure is what its caller reports. */
void comm_run_break(DeviceContext *dc, RunCommDomains *named);

#endif
