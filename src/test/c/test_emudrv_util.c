/* The emulated driver as the native tests load it (test_emudrv.h). */
#include "test_emudrv.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptest.h"

/* Loaded once and kept: the driver's accounting is process-wide. */
const Emudrv *emudrv(void)
{
    static Emudrv d;
    static int loaded;
    if (!loaded) {
        const char *dir = getenv("PTORUN_LIB_DIR");
        char path[4096];
        snprintf(path, sizeof path, "%s/libptorun_emudrv.so", dir ? dir : ".");
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (h == NULL) {
            fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
            abort();
        }
        PtoDriverApiFn fn = (PtoDriverApiFn)dlsym(h, PTO_DRIVER_API_SYMBOL);
        *(void **)&d.inject = dlsym(h, "ptorun_emudrv_inject");
        *(void **)&d.stats = dlsym(h, "ptorun_emudrv_stats");
        if (fn == NULL || d.inject == NULL || d.stats == NULL)
            abort();
        d.api = fn();
        d.handle = h;
        loaded = 1;
    }
    return &d;
}

PtoEmuStats stats_now(void)
{
    PtoEmuStats s;
    emudrv()->stats(&s);
    return s;
}

void check_stats_equal(PtoEmuStats a, PtoEmuStats b, int line)
{
    if (memcmp(&a, &b, sizeof a) != 0) {
        char m[640];
        snprintf(m, sizeof m,
                 "stats differ: devices %llu/%llu memory %llu/%llu allocations %llu/%llu streams %llu/%llu "
                 "images %llu/%llu views %llu/%llu threads %llu/%llu comm ranks %llu/%llu window sets %llu/%llu",
                 (unsigned long long)a.devices_open, (unsigned long long)b.devices_open,
                 (unsigned long long)a.memory_committed, (unsigned long long)b.memory_committed,
                 (unsigned long long)a.allocations, (unsigned long long)b.allocations,
                 (unsigned long long)a.streams, (unsigned long long)b.streams, (unsigned long long)a.images,
                 (unsigned long long)b.images, (unsigned long long)a.host_registrations,
                 (unsigned long long)b.host_registrations, (unsigned long long)a.threads,
                 (unsigned long long)b.threads, (unsigned long long)a.comm_ranks, (unsigned long long)b.comm_ranks,
                 (unsigned long long)a.comm_window_sets, (unsigned long long)b.comm_window_sets);
        ptest_record_failure(__FILE__, line, m);
    }
}

PtoDrvDevice *open_dev(int id)
{
    PtoDrvDevice *dev = NULL;
    CHECK_EQ_INT(API->open_device(id, &dev), PTO_DRV_OK);
    return dev;
}
