/* NativeRunContext: one run's whole state, placement-constructed in storage the
 * caller owns (design/lifecycle.md). The lifecycle issue ([2/8]) fills it in;
 * until then it is a stable placeholder so get_runtime_size() and
 * get_runtime_alignment() already report a real layout with the tag at 0. */
#ifndef PTORUN_NATIVE_RUN_CONTEXT_H
#define PTORUN_NATIVE_RUN_CONTEXT_H

#include <stdint.h>

typedef struct __attribute__((aligned(64))) NativeRunContext {
    uint64_t tag; /* 0 empty; PTO_NATIVE_RUN_STORAGE_MAGIC holds a prepared run */
} NativeRunContext;

#endif
