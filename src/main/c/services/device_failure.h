/*
 * Device failures: PTO_ERR_DEVICE and PTO_ERR_TIMEOUT. On an onboard library
 * every one an exported call returns has poisoned the device context until
 * finalize_device, and nothing else poisons (runner_note_failure,
 * platform/runner.h, is where it happens); the sim never poisons. So that the
 * code always tells, a device failure met while a call does something else
 * outranks that call's other outcome (pto_outrank). docs/reliability.md §4.
 */
#ifndef PTORUN_DEVICE_FAILURE_H
#define PTORUN_DEVICE_FAILURE_H

#include "ptorun/pto_runtime_c_api.h"

static inline int pto_device_failure(int rc)
{
    return rc == PTO_ERR_DEVICE || rc == PTO_ERR_TIMEOUT;
}

/* A call's outcome `rc` (its message saved in `saved`; ignored when rc is
 * PTO_OK) after a later step failed with `other` (the calling thread's current
 * message): `other` wins when it is a device failure and rc is not, its message
 * then followed by rc's ("; besides: ..."); otherwise rc stays, with its saved
 * message restored. Returns the winner; the thread's message is the winner's. */
int pto_outrank(int rc, const char *saved, int other);

/* The code for a call that returned NULL (which cannot carry one): the code of
 * the failure it recorded (pto_last_error_code) when that is a device failure,
 * else `fallback` (typically PTO_ERR_OUT_OF_MEMORY). */
int pto_null_failure(int fallback);

#endif
