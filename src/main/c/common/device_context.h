/* One device context: what create_device_context returns. It owns the runner
 * (the platform's device) and, from the lifecycle issue on, the callable
 * registry, reservations, the execution claim and the executor threads. */
#ifndef PTORUN_DEVICE_CONTEXT_H
#define PTORUN_DEVICE_CONTEXT_H

#include <stdint.h>

#include "platform/runner.h"

#define PTO_DEVICE_CONTEXT_MAGIC 0x5054434F4E544558ull /* "PTCONTEX" */

typedef struct DeviceContext {
    uint64_t magic;
    Runner *runner;
} DeviceContext;

DeviceContext *device_context_create(void);
void device_context_destroy(DeviceContext *dc);

/* The context behind an opaque handle, or NULL (message recorded) when the
 * handle is NULL or not a live context. `fn` names the caller in the message. */
DeviceContext *device_context_from(void *ctx, const char *fn);

#endif
