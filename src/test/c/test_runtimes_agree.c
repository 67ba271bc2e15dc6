/* hbg and trb agree, through the exported functions of the built sim
 * libraries (dlopen): the same program callable gives bit-identical outputs
 * and a byte-identical dependency-graph file on both runtimes of an arch
 * (docs/device.md "Dependency rule"). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptest.h"
#include "test_callable.h"
#include "test_sim.h"
#include "test_util.h"

enum { TILE = 32, TILES = 3, N = TILE * TILES };
enum { FN_VMUL = 1, FN_VADD = 2, FN_VCOPY = 3, FN_TILE_ADD = 4, FN_VFILL = 5, FN_VADDS = 6 };


static PtoProgramParam tile(uint32_t arg, uint8_t dir, uint32_t tiles)
{
    PtoProgramParam p = tcb_tensor(arg, dir, 0, (int64_t)tiles * TILE * 4);
    p.offset.coef[0] = TILE * 4;
    return p;
}

/* Tiles, a view across two tiles, reuse of a scope's local, a write covering
   earlier readers, and a run-level write covering everything. */
static uint8_t *mixed_program(uint32_t *size)
{
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_IN, PTO_ARG_IN, PTO_ARG_INOUT, PTO_ARG_OUT };
    tcb_signature(&b, sig, 4);
    tcb_child(&b, FN_VMUL, PTO_CORE_AIV, "vmul");
    tcb_child(&b, FN_VADD, PTO_CORE_AIV, "vadd");
    tcb_child(&b, FN_VCOPY, PTO_CORE_AIV, "vcopy");
    tcb_child(&b, FN_TILE_ADD, PTO_CORE_AIV, "tile_add");
    tcb_child(&b, FN_VFILL, PTO_CORE_AIV, "vfill");
    tcb_child(&b, FN_VADDS, PTO_CORE_AIC, "vadds");
    b.local_count = 2;
    const int64_t tb = TILE * 4;
    tcb_loop(&b, TILES);
    PtoProgramParam mul[] = { tile(0, PTO_ARG_IN, 1), tile(1, PTO_ARG_IN, 1), tile(3, PTO_ARG_OUT, 1) };
    tcb_submit(&b, FN_VMUL, mul, 3);
    tcb_insn(&b, PTO_OP_END_LOOP);
    PtoProgramParam across[] = { tcb_tensor(3, PTO_ARG_IN, tb / 2, tb), tcb_tensor(0, PTO_ARG_IN, 0, tb),
                                 tcb_tensor(2, PTO_ARG_OUT, tb, tb) };
    tcb_submit(&b, FN_VADD, across, 3);
    tcb_insn(&b, PTO_OP_SCOPE_BEGIN);
    tcb_alloc(&b, 0, tb);
    tcb_loop(&b, TILES);
    PtoProgramParam in[] = { tile(3, PTO_ARG_IN, 1), tcb_local(0, PTO_ARG_OUT, 0, tb) };
    tcb_submit(&b, FN_VCOPY, in, 2);
    PtoProgramParam acc[] = { tcb_local(0, PTO_ARG_IN, 0, tb), tile(2, PTO_ARG_INOUT, 1) };
    tcb_submit(&b, FN_TILE_ADD, acc, 2);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_SCOPE_END);
    tcb_insn(&b, PTO_OP_SCOPE_BEGIN);
    tcb_alloc(&b, 1, tb);
    PtoProgramParam two[] = { tcb_local(1, PTO_ARG_OUT, 0, tb), tcb_f32(2.0f) };
    tcb_submit(&b, FN_VFILL, two, 2);
    tcb_loop(&b, TILES);
    PtoProgramParam scale[] = { tile(2, PTO_ARG_IN, 1), tcb_local(1, PTO_ARG_IN, 0, tb), tile(3, PTO_ARG_OUT, 1) };
    tcb_submit(&b, FN_VMUL, scale, 3);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_SCOPE_END);
    PtoProgramParam bump[] = { tcb_tensor(3, PTO_ARG_IN, 0, N * 4), tcb_tensor(3, PTO_ARG_OUT, 0, N * 4),
                               tcb_f32(0.5f) };
    tcb_submit(&b, FN_VADDS, bump, 3);
    PtoProgramParam clear[] = { tcb_tensor(2, PTO_ARG_OUT, 0, tb * 2), tcb_f32(0.0f) };
    tcb_submit(&b, FN_VFILL, clear, 2);
    uint8_t *bytes = tcb_build(&b, size);
    tcb_free(&b);
    return bytes;
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *text = calloc(1, 1 << 16);
    size_t n = fread(text, 1, (1 << 16) - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* Runs the program on one library; returns its DOT text (malloc'd) and outputs. */
static char *run_on(const char *variant, const char *arch, const uint8_t *callable, const char *dir, int tiny,
                    float *acc, float *out)
{
    TestRunApi api;
    if (test_load_run_api(variant, &api) != 0)
        return NULL;
    const DeviceImages *img = test_images_of(arch);
    void *ctx = api.lib.create();
    char *text = NULL;
    CHECK_EQ_INT(api.init(ctx, 0, img->aicpu, img->aicpu_size, img->aicore, img->aicore_size, NULL, 0, NULL), PTO_OK);
    CHECK_EQ_INT(api.register_(ctx, 5, callable), PTO_OK);
    float x[N], w[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)(i % 7) - 2.5f;
        w[i] = (float)(i % 5) * 0.25f;
        acc[i] = (float)i;
        out[i] = -1.0f;
    }
    ChipStorageTaskArgs *args = test_args();
    args->tensor_count = 4;
    args->tensors[0] = test_f32_tensor(x, N);
    args->tensors[1] = test_f32_tensor(w, N);
    args->tensors[2] = test_f32_tensor(acc, N);
    args->tensors[3] = test_f32_tensor(out, N);
    CallConfig cfg = test_config(20000);
    cfg.enable_dep_graph = 1;
    for (int r = 0; r < PTO_TRB_RING_COUNT && tiny; r++) {
        /* trb: every scope's local reuses the heap the previous scope freed */
        cfg.ring_task_window[r] = 4;
        cfg.ring_heap[r] = 1024;
        cfg.ring_dep_pool[r] = 8;
    }
    snprintf(cfg.output_prefix, sizeof cfg.output_prefix, "%s", dir);
    NativeRunDescriptor desc = { .run_id = 12, .run_epoch = 34 };
    void *storage = aligned_alloc(64, (api.size() + 63) / 64 * 64);
    memset(storage, 0, api.size());
    int rc = api.run(ctx, storage, 5, args, &cfg, &desc);
    if (rc != PTO_OK)
        fprintf(stderr, "%s: %s\n", variant, api.lib.last_error());
    CHECK_EQ_INT(rc, PTO_OK);
    char path[512];
    snprintf(path, sizeof path, "%s/dep_graph_12_34.dot", dir);
    text = read_text(path);
    unlink(path);
    free(storage);
    free(args);
    api.lib.destroy(ctx);
    test_unload_lib(&api.lib);
    return text;
}

TEST(hbg_and_trb_give_the_same_outputs_and_dependency_graph)
{
    uint32_t size;
    uint8_t *callable = mixed_program(&size);
    char dir[64] = "/tmp/ptorun_agree_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    const char *arches[] = { "a2a3", "a5" };
    for (int k = 0; k < 4; k++) {
        int a = k / 2, tiny = k % 2;
        char hbg[32], trb[32];
        snprintf(hbg, sizeof hbg, "%s_sim_hbg", arches[a]);
        snprintf(trb, sizeof trb, "%s_sim_trb", arches[a]);
        float acc_h[N], out_h[N], acc_t[N], out_t[N];
        char *dot_h = run_on(hbg, arches[a], callable, dir, tiny, acc_h, out_h);
        char *dot_t = run_on(trb, arches[a], callable, dir, tiny, acc_t, out_t);
        CHECK(dot_h != NULL && dot_t != NULL);
        if (dot_h != NULL && dot_t != NULL) {
            CHECK(strcmp(dot_h, dot_t) == 0);
            if (strcmp(dot_h, dot_t) != 0)
                fprintf(stderr, "hbg:\n%s\ntrb:\n%s", dot_h, dot_t);
            CHECK(strstr(dot_h, "t15 [label=\"15 f5\"];") != NULL); /* 16 tasks */
        }
        CHECK(memcmp(acc_h, acc_t, sizeof acc_h) == 0);
        CHECK(memcmp(out_h, out_t, sizeof out_h) == 0);
        CHECK(acc_h[0] == 0.0f && acc_h[2 * TILE] != 0.0f);
        free(dot_h);
        free(dot_t);
    }
    rmdir(dir);
    free(callable);
}

/* simpler_init's prewarm builds trb's runtime image for that sizing, so the
   first run of that sizing builds nothing (hbg: nothing to warm). */
TEST(trb_prewarm_at_init_builds_the_image_the_first_run_uses)
{
    uint32_t size;
    uint8_t *callable = mixed_program(&size);
    const char *variants[] = { "a2a3_sim_trb", "a5_sim_trb", "a2a3_sim_hbg" };
    const char *arches[] = { "a2a3", "a5", "a2a3" };
    for (int v = 0; v < 3; v++) {
        TestRunApi api;
        CHECK(test_load_run_api(variants[v], &api) == 0);
        const DeviceImages *img = test_images_of(arches[v]);
        void *ctx = api.lib.create();
        CallConfig prewarm = test_config(0);
        CHECK_EQ_INT(api.init(ctx, 0, img->aicpu, img->aicpu_size, img->aicore, img->aicore_size, NULL, 0, &prewarm),
                     PTO_OK);
        size_t after_init = api.lib.committed(ctx);
        int trb = v < 2;
        CHECK(trb ? after_init > ((size_t)1 << 20) : after_init == 0); /* default rings: MiBs of image */
        CHECK_EQ_INT(api.register_(ctx, 1, callable), PTO_OK);
        size_t registered = api.lib.committed(ctx);
        float x[N] = { 0 }, w[N] = { 0 }, acc[N] = { 0 }, out[N];
        ChipStorageTaskArgs *args = test_args();
        args->tensor_count = 4;
        args->tensors[0] = test_f32_tensor(x, N);
        args->tensors[1] = test_f32_tensor(w, N);
        args->tensors[2] = test_f32_tensor(acc, N);
        args->tensors[3] = test_f32_tensor(out, N);
        CallConfig cfg = test_config(20000);
        NativeRunDescriptor desc = { .run_id = 1, .run_epoch = 2 };
        void *storage = aligned_alloc(64, (api.size() + 63) / 64 * 64);
        memset(storage, 0, api.size());
        CHECK_EQ_INT(api.run(ctx, storage, 1, args, &cfg, &desc), PTO_OK);
        uint64_t (*retained)(void *, uint32_t);
        *(void **)&retained = dlsym(api.lib.handle, "get_retained_temp_addr_ctx");
        if (trb) { /* the run added its retained staging buffer, not another image */
            CHECK(api.lib.committed(ctx) - registered < ((size_t)256 << 10));
            CHECK(retained(ctx, 0) != 0);
        } else {
            CHECK_EQ_INT(retained(ctx, 0), 0); /* hbg stages in its banks' GM heaps */
        }
        free(storage);
        free(args);
        api.lib.destroy(ctx);
        test_unload_lib(&api.lib);
    }
    free(callable);
}
