/* Device failures (device_failure.h). */
#include "services/device_failure.h"

#include "util/last_error.h"

int pto_outrank(int rc, const char *saved, int other)
{
    if (pto_device_failure(other) && !pto_device_failure(rc)) {
        if (rc != PTO_OK && saved != NULL && saved[0] != '\0')
            pto_fail(other, "%s; besides: %s", pto_last_error(), saved);
        return other;
    }
    if (rc != PTO_OK)
        pto_fail(rc, "%s", saved != NULL ? saved : "");
    return rc;
}

int pto_null_failure(int fallback)
{
    int recorded = pto_last_error_code();
    return pto_device_failure(recorded) ? recorded : fallback;
}
