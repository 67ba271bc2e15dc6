/* Runs of a fixture orchestration library on either runtime (scope_run.h). */
#include "scope_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch/arch.h"
#include "services/host_api.h"
#include "util/last_error.h"
#include "ptest.h"
#include "test_callable.h"
#include "test_sim.h"
#ifdef PTO_RUNTIME_TRB
#include "runtime/trb/trb_internal.h"
#else
#include "runtime/hbg/hbg_internal.h"
#endif

void scope_open_fixture(ScopeRun *s, const char *fixture, const char *entry, uint64_t n, uint64_t which)
{
    memset(s, 0, sizeof *s);
    const DeviceImages *images = test_images_of(PTO_ARCH_NAME);
    s->runner = runner_create();
    if (images == NULL || s->runner == NULL || runner_init(s->runner, 0, images) != PTO_OK)
        fprintf(stderr, "scope_open: no sim runner: %s\n", pto_last_error());
    uint32_t image_size;
    const uint8_t *image = test_fixture(fixture, &image_size);
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_IN, PTO_ARG_INOUT, PTO_ARG_INOUT, PTO_ARG_SCALAR, PTO_ARG_SCALAR, PTO_ARG_SCALAR };
    tcb_signature(&b, sig, sizeof sig);
    tcb_child(&b, 1, PTO_CORE_AIV, "vcopy");
    tcb_child(&b, 2, PTO_CORE_AIV, "tile_add");
    tcb_child(&b, 3, PTO_CORE_AIV, "vadds");
    tcb_child(&b, 4, PTO_CORE_AIC, "noop");
    if (image != NULL)
        tcb_orchestration_library(&b, image, image_size, entry);
    uint32_t size;
    uint8_t *bytes = tcb_build(&b, &size);
    tcb_free(&b);
    HostApi api = host_api_bind(s->runner, 0, 0, &host_api_ops);
    if (runtime_register_callable(&api, bytes, &s->callable) != PTO_OK)
        fprintf(stderr, "register %s: %s\n", entry, pto_last_error());
    free(bytes);
    for (int i = 0; i < XN; i++)
        s->x[i] = (float)(i % 4);
    s->args = test_args();
    s->args->tensor_count = 3;
    s->args->tensors[0] = test_f32_tensor(s->x, XN);
    s->args->tensors[1] = test_f32_tensor(s->y, YN);
    s->args->tensors[2] = test_f32_tensor(s->j, JN);
    s->args->scalar_count = 3;
    s->args->scalars[0] = n;
    s->args->scalars[1] = which;
    s->args->scalars[2] = (uint64_t)(uintptr_t)s->report;
    s->report[0] = s->report[1] = 777;
    s->cfg = test_config(60000);
}

void scope_graph(ScopeRun *s)
{
    snprintf(s->dir, sizeof s->dir, "/tmp/ptorun_scopes_XXXXXX");
    CHECK(mkdtemp(s->dir) != NULL);
    s->cfg.enable_dep_graph = 1;
    snprintf(s->cfg.output_prefix, sizeof s->cfg.output_prefix, "%s", s->dir);
}

void tiny_rings(ScopeRun *s)
{
    for (int r = 0; r < PTO_TRB_RING_COUNT; r++) {
        s->cfg.ring_task_window[r] = 4;
        s->cfg.ring_heap[r] = 1024;
        s->cfg.ring_dep_pool[r] = 4;
    }
}

int scope_run(ScopeRun *s)
{
    NativeRunDescriptor desc = { .run_id = 7, .run_epoch = 8 };
    int rc = test_run_desc(s->runner, s->callable, 0, s->args, &s->cfg, &desc, NULL);
    if (rc != PTO_OK)
        fprintf(stderr, "scope run: %s\n", pto_last_error());
    return rc;
}

void check_graph(ScopeRun *s, const char *expected, int line)
{
    char path[128];
    snprintf(path, sizeof path, "%s/dep_graph_7_8.dot", s->dir);
    FILE *f = fopen(path, "rb");
    char text[8192] = "";
    if (f != NULL) {
        text[fread(text, 1, sizeof text - 1, f)] = '\0';
        fclose(f);
    }
    unlink(path);
    rmdir(s->dir);
    if (strcmp(text, expected) != 0) {
        fprintf(stderr, "graph:\n%s\nexpected:\n%s", text, expected);
        ptest_record_failure(__FILE__, line, "the dependency graph is not the expected one");
    }
}

void scope_close(ScopeRun *s)
{
    HostApi api = host_api_bind(s->runner, 0, 0, &host_api_ops);
    if (s->callable != NULL)
        runtime_release_callable(&api, s->callable);
    runner_destroy(s->runner);
    free(s->args);
}

uint64_t heap_peak(ScopeRun *s)
{
#ifdef PTO_RUNTIME_TRB
    uint64_t peaks[PTO_TRB_RINGS] = { 0 };
    HostApi api = host_api_bind(s->runner, 0, 0, &host_api_ops);
    CHECK_EQ_INT(trb_read_heap_peaks(&api, peaks), PTO_OK);
    return peaks[1];
#else
    return test_slot_scratch(s->runner, 0)->local_peak;
#endif
}

int tile_is(const float *t, const float *x, float times, float plus)
{
    for (int i = 0; i < TILE_FLOATS; i++)
        if (t[i] != times * x[i] + plus)
            return 0;
    return 1;
}

