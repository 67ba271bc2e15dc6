/* The trb executor under the eager launch model of the device ABI (hooks ==
 * NULL, as a driver that starts every AICPU thread at once would run it):
 * participations that start together, late, or after the end all return DONE
 * and the run is right. A private copy of the AICPU image is loaded here and
 * its entry called directly on runs bound by the trb runtime. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/arch.h"
#include "services/host_api.h"
#include "util/last_error.h"
#include "device/pto_device_abi.h"
#include "ptest.h"
#include "test_sim.h"
#include "trb_fixture.h"

static PtoAicpuEntryFn eager_entry(void **handle)
{
    const char *dir = getenv("PTORUN_LIB_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/libptorun_aicpu_%s.so", dir ? dir : ".", PTO_ARCH_NAME);
    *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (*handle == NULL) {
        fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
        return NULL;
    }
    void *sym = dlsym(*handle, PTO_AICPU_ENTRY_SYMBOL);
    PtoAicpuEntryFn fn;
    memcpy(&fn, &sym, sizeof fn);
    return fn;
}

typedef struct Participation {
    PtoAicpuEntryFn entry;
    uint64_t args_dev;
    uint32_t index, count;
    int32_t rc;
} Participation;

static void *participate(void *arg)
{
    Participation *p = arg;
    p->rc = p->entry(p->args_dev, p->index, p->count, NULL);
    return NULL;
}

/* Binds the tiles run, runs it with `count` eager participations, validates. */
static int run_eager(Runner *r, RuntimeCallable *c, PtoAicpuEntryFn entry, uint32_t count, float *x, uint32_t n,
                     uint32_t iterations)
{
    ChipStorageTaskArgs *a = test_args();
    a->tensor_count = 1;
    a->tensors[0] = test_f32_tensor(x, n);
    a->scalar_count = 3;
    a->scalars[0] = iterations;
    a->scalars[1] = 64;
    CallConfig cfg = test_config(20000);
    for (int i = 0; i < PTO_TRB_RING_COUNT; i++)
        cfg.ring_task_window[i] = 4;
    HostApi api = host_api_bind(r, 0, 0, &host_api_ops);
    RuntimeRun run;
    memset(&run, 0, sizeof run);
    DeviceLaunch launch;
    int rc = runtime_bind(&run, test_slot_scratch(api.runner, api.pipeline_slot), &api, c, a, &cfg, NULL, &launch);
    free(a);
    if (rc != PTO_OK)
        return rc;
    Participation p[8];
    pthread_t threads[8];
    for (uint32_t i = 0; i < count; i++) {
        p[i] = (Participation){ entry, launch.args_dev, i, count, -1 };
        pthread_create(&threads[i], NULL, participate, &p[i]);
    }
    int all_done = 1;
    for (uint32_t i = 0; i < count; i++) {
        pthread_join(threads[i], NULL);
        all_done &= p[i].rc == PTO_AICPU_DONE;
    }
    CHECK(all_done);
    /* one more, after the end: DONE at once */
    CHECK_EQ_INT(entry(launch.args_dev, 0, count, NULL), PTO_AICPU_DONE);
    const PtoAicpuArgs *args = (const PtoAicpuArgs *)(uintptr_t)launch.args_dev;
    CHECK_EQ_INT(args->status.finished, 1);
    rc = runtime_collect_results(&run, &api, args->status.error_code);
    runtime_unbind(&run, &api);
    return rc;
}

TEST(eager_participations_run_a_trb_run_to_the_end)
{
    void *handle;
    PtoAicpuEntryFn entry = eager_entry(&handle);
    Runner *r = trb_runner();
    const uint8_t sig[] = { PTO_ARG_INOUT, PTO_ARG_SCALAR, PTO_ARG_SCALAR, PTO_ARG_SCALAR };
    uint32_t size;
    uint8_t *bytes = trb_library_callable(sig, 4, "trb_orch_tiles", &size);
    RuntimeCallable *c = trb_register(r, bytes);
    free(bytes);
    CHECK(entry != NULL && c != NULL);
    for (uint32_t count = 1; count <= 4 && entry != NULL; count++) {
        float x[64] = { 0 };
        CHECK_EQ_INT(run_eager(r, c, entry, count, x, 64, 401), PTO_OK);
        /* 4 tiles of 16 floats: tile 0 got 101 increments, the others 100 */
        CHECK(x[0] == 101.0f && x[15] == 101.0f && x[16] == 100.0f && x[63] == 100.0f);
    }
    trb_release(r, c);
    runner_destroy(r);
    if (handle != NULL)
        dlclose(handle);
}
