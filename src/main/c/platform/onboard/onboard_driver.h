/* Loading the device driver of an onboard runner: libptorun_driver.so in the
 * directory of the library this code is linked into when it exists (a link the
 * Java loader makes for -Dptorun.driver), else the shared library named by
 * PTORUN_DRIVER (a path), else the bundled emulated driver
 * (libptorun_emudrv.so) in the directory of the library this code is linked
 * into. The table it exports must be complete: a missing file, symbol or
 * entry is refused with PTO_ERR_DEVICE and a message naming the file and what
 * is missing. */
#ifndef PTORUN_ONBOARD_DRIVER_H
#define PTORUN_ONBOARD_DRIVER_H

#include <limits.h>

#include "ptorun/pto_driver.h"

typedef struct OnboardDriver {
    void *handle;                 /* dlopen handle; NULL when not loaded */
    const PtoDriverApi *api;
    char path[PATH_MAX];
    int from_env;                 /* 1: PTORUN_DRIVER named it */
    int pinned;                   /* 1: libptorun_driver.so next to the runner (-Dptorun.driver) */
} OnboardDriver;

int onboard_driver_load(OnboardDriver *d);
void onboard_driver_unload(OnboardDriver *d);

#endif
