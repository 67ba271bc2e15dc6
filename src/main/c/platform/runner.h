/* The platform half of a library: the runner that owns one device. Exactly one
 * implementation is linked into each library (platform/sim or platform/onboard);
 * common/ reaches it only through these functions. Every function records a
 * precise message (last_error.h) when it fails. */
#ifndef PTORUN_RUNNER_H
#define PTORUN_RUNNER_H

#include <stddef.h>
#include <stdint.h>

typedef struct Runner Runner;

/* Creates a runner with no device attached. NULL when out of host memory. */
Runner *runner_create(void);
void runner_destroy(Runner *r);

/* Device memory of the runner's device; the runner never frees or copies
 * outside a live allocation. */
void *runner_device_malloc(Runner *r, size_t n);
int runner_device_free(Runner *r, void *p);
size_t runner_committed_bytes(Runner *r);
int runner_copy_to_device(Runner *r, void *dev, const void *host, size_t n);
int runner_copy_from_device(Runner *r, void *host, const void *dev, size_t n);

#endif
