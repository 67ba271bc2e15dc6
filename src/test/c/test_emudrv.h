/* The emulated driver as the native tests load it (dlopen from $PTORUN_LIB_DIR,
 * once, kept: its accounting is process-wide), and the checks its tests share. */
#ifndef PTORUN_TEST_EMUDRV_H
#define PTORUN_TEST_EMUDRV_H

#include "ptorun/pto_driver.h"
#include "ptorun/pto_emudrv.h"

typedef struct Emudrv {
    void *handle; /* the dlopen handle, for the extras a test looks up itself */
    const PtoDriverApi *api;
    int (*inject)(int, int);
    void (*stats)(PtoEmuStats *);
} Emudrv;

const Emudrv *emudrv(void);
#define API (emudrv()->api)

PtoEmuStats stats_now(void);
void check_stats_equal(PtoEmuStats a, PtoEmuStats b, int line);
#define CHECK_STATS(a, b) check_stats_equal((a), (b), __LINE__)

/* open_device(id) checked */
PtoDrvDevice *open_dev(int id);

#endif
