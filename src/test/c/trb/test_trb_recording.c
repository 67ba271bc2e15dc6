/* Recorded graphs on trb (docs/recorded-graphs.md, trb): a program's first run
 * of a geometry records its graph on the device, later runs of it replay the
 * recording (no interpretation, no tensor-map work), with other data, scalars,
 * ring sizings and slots, bit for bit and with the same dependency graph. A new
 * geometry or registration records afresh; a failed run, a library
 * orchestration and a lost recording are never replayed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/last_error.h"
#include "ptest.h"
#include "runtime/trb/trb_internal.h"
#include "services/launch_signal.h"
#include "test_sim.h"
#include "trb_fixture.h"

enum { FN_TILE_ADD = 7 };

typedef struct Outcome {
    uint32_t source;          /* PTO_RUN_GRAPH_* */
    uint32_t mode;            /* PtoTrbWork.record_mode: how the device got the graph */
    uint64_t orchestration_ns;
} Outcome;

/* test_run_desc that also reports how the run got its graph and the device's orchestration time. */
static int run(Runner *r, const RuntimeCallable *c, uint32_t slot, const ChipStorageTaskArgs *args,
               const CallConfig *cfg, const NativeRunDescriptor *desc, Outcome *o)
{
    HostApi api = host_api_bind(r, slot, slot, &host_api_ops);
    RuntimeRun rr;
    memset(&rr, 0, sizeof rr);
    memset(o, 0, sizeof *o);
    DeviceLaunch launch;
    int rc = runtime_bind(&rr, test_slot_scratch(r, slot), &api, c, args, cfg, desc, &launch);
    if (rc != PTO_OK)
        return rc;
    volatile int32_t accepted = 0;
    LaunchSignal signal;
    launch_signal_init(&signal, &accepted, 41);
    RunExec exec;
    memset(&exec, 0, sizeof exec);
    int erc = runner_submit(r, &exec, slot, &launch, &signal);
    int launched = erc == PTO_OK;
    if (launched) {
        int drc = runner_await_device(r, &exec);
        erc = erc == PTO_OK ? drc : erc;
    }
    launch_signal_destroy(&signal);
    rc = launched ? runtime_collect_results(&rr, &api, erc) : PTO_OK;
    o->source = runtime_run_graph_source(&rr);
    runtime_unbind(&rr, &api);
    if (launched && trb_read_orchestration_ns(&api, &o->orchestration_ns) != PTO_OK)
        o->orchestration_ns = 0;
    if (launched && trb_read_record_mode(&api, &o->mode) != PTO_OK)
        o->mode = UINT32_MAX;
    return erc != PTO_OK ? erc : rc;
}

static uint64_t f32_bits(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return bits;
}

/* ---- a program with loops, locals, nested AUTO scopes, a MANUAL scope and a scalar ---------- */

enum { TILES = 4 };

static PtoProgramParam tile_view(uint32_t arg, uint8_t dir, int64_t tile_bytes)
{
    PtoProgramParam p = tcb_tensor(arg, dir, 0, tile_bytes);
    p.offset.coef[0] = tile_bytes;
    return p;
}

/* out[t] = x[t] * w[t] + scalar 0, tile by tile through local 0 (inner scopes
   on ring 2); then in a MANUAL scope tile 0 is copied to local 1 and, after
   that copy (submit_after), written back plus 1. */
static RuntimeCallable *mixed_program(Runner *r, uint32_t tile)
{
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_IN, PTO_ARG_IN, PTO_ARG_OUT, PTO_ARG_SCALAR };
    tcb_signature(&b, sig, 4);
    trb_children(&b);
    b.local_count = 2;
    const int64_t tb = (int64_t)tile * 4;
    tcb_insn(&b, PTO_OP_SCOPE_BEGIN);
    tcb_alloc(&b, 0, (uint64_t)tb);
    tcb_loop(&b, TILES);
    tcb_insn(&b, PTO_OP_SCOPE_BEGIN);
    PtoProgramParam mul[] = { tile_view(0, PTO_ARG_IN, tb), tile_view(1, PTO_ARG_IN, tb),
                              tcb_local(0, PTO_ARG_OUT, 0, tb) };
    tcb_submit(&b, FN_VMUL, mul, 3);
    PtoProgramParam adds[] = { tcb_local(0, PTO_ARG_IN, 0, tb), tile_view(2, PTO_ARG_OUT, tb), tcb_scalar_arg(0) };
    tcb_submit(&b, FN_VADDS, adds, 3);
    tcb_insn(&b, PTO_OP_SCOPE_END);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_insn(&b, PTO_OP_SCOPE_END);
    tcb_insn(&b, PTO_OP_SCOPE_BEGIN_MANUAL);
    tcb_alloc(&b, 1, (uint64_t)tb);
    PtoProgramParam copy[] = { tcb_tensor(2, PTO_ARG_IN, 0, tb), tcb_local(1, PTO_ARG_OUT, 0, tb) };
    tcb_submit(&b, FN_VCOPY, copy, 2);
    PtoProgramParam back[] = { tcb_local(1, PTO_ARG_IN, 0, tb), tcb_tensor(2, PTO_ARG_OUT, 0, tb), tcb_f32(1.0f) };
    PtoAffine after = { .base = 0 };
    tcb_submit_after(&b, FN_VADDS, back, 3, &after, 1);
    tcb_insn(&b, PTO_OP_SCOPE_END);
    return trb_register_built(r, &b);
}

/* Runs the mixed program over tensors of `n` floats (>= TILES * tile) with
   fresh data from `seed` and the scalar `s`; checks every output bit; how the
   device got the graph (PTO_TRB_*). */
static uint32_t run_mixed(Runner *r, const RuntimeCallable *c, uint32_t slot, uint32_t tile, uint32_t n,
                          uint32_t seed, float s, const CallConfig *cfg, uint32_t want_source)
{
    float *x = malloc(n * 4), *w = malloc(n * 4), *out = malloc(n * 4), *want = malloc(n * 4);
    trb_fill(x, n, seed);
    trb_fill(w, n, seed + 1);
    for (uint32_t i = 0; i < n; i++) {
        out[i] = -5.0f;
        want[i] = i < TILES * tile ? x[i] * w[i] + s : 0.0f; /* OUT: bytes no task writes come back zeroed */
        if (i < tile)
            want[i] = want[i] + 1.0f;
    }
    ChipStorageTaskArgs *a = test_args();
    a->tensor_count = 3;
    a->tensors[0] = test_f32_tensor(x, n);
    a->tensors[1] = test_f32_tensor(w, n);
    a->tensors[2] = test_f32_tensor(out, n);
    a->scalar_count = 1;
    a->scalars[0] = f32_bits(s);
    Outcome o;
    int rc = run(r, c, slot, a, cfg, NULL, &o);
    if (rc != PTO_OK)
        fprintf(stderr, "mixed: %s\n", pto_last_error());
    CHECK_EQ_INT(rc, PTO_OK);
    CHECK_EQ_INT(o.source, want_source);
    CHECK(memcmp(out, want, (size_t)n * 4) == 0);
    free(a);
    free(x), free(w), free(out), free(want);
    return o.mode;
}

static CallConfig tiny_rings(void)
{
    CallConfig cfg = test_config(20000);
    for (int i = 0; i < PTO_TRB_RING_COUNT; i++) {
        cfg.ring_task_window[i] = 4;
        cfg.ring_heap[i] = 1024;
        cfg.ring_dep_pool[i] = 4;
    }
    return cfg;
}

TEST(trb_a_program_records_its_graph_at_its_first_run_and_replays_it_with_other_data_scalars_rings_and_slots)
{
    Runner *r = trb_runner();
    RuntimeCallable *c = mixed_program(r, 64);
    REQUIRE(c != NULL);
    CallConfig defaults = test_config(20000), tiny = tiny_rings();
    CHECK(trb_callable_recording_bytes(c) == 0);
    CHECK_EQ_INT(run_mixed(r, c, 0, 64, 256, 1, 0.5f, &defaults, PTO_RUN_GRAPH_RECORDED), PTO_TRB_RECORD);
    uint64_t recorded = trb_callable_recording_bytes(c);
    CHECK(recorded > 0);
    /* the record run's rings: the compiled graph is walked */
    CHECK_EQ_INT(run_mixed(r, c, 0, 64, 256, 2, -3.25f, &defaults, PTO_RUN_GRAPH_REPLAYED), PTO_TRB_WALK);
    /* window 4, heap 1024, dependency pool 4: other ring heap addresses, slots reused sooner;
       replayed through the rings */
    CHECK_EQ_INT(run_mixed(r, c, 0, 64, 256, 3, 7.0f, &tiny, PTO_RUN_GRAPH_REPLAYED), PTO_TRB_REPLAY);
    CHECK_EQ_INT(run_mixed(r, c, 1, 64, 256, 4, 1.5f, &defaults, PTO_RUN_GRAPH_REPLAYED), PTO_TRB_WALK);
    CHECK(trb_callable_recording_bytes(c) == recorded); /* replays keep the one recording */
    /* the recording is the callable's: freed with it */
    size_t before = runner_committed_bytes(r);
    trb_release(r, c);
    CHECK(before - runner_committed_bytes(r) >= recorded);
    runner_destroy(r);
}

TEST(trb_another_geometry_or_registration_records_afresh_and_one_recording_is_kept)
{
    Runner *r = trb_runner();
    RuntimeCallable *c = mixed_program(r, 64);
    REQUIRE(c != NULL);
    CallConfig cfg = test_config(20000);
    run_mixed(r, c, 0, 64, 256, 1, 0.5f, &cfg, PTO_RUN_GRAPH_RECORDED);
    run_mixed(r, c, 0, 64, 256, 2, 0.5f, &cfg, PTO_RUN_GRAPH_REPLAYED);
    run_mixed(r, c, 0, 64, 300, 3, 0.5f, &cfg, PTO_RUN_GRAPH_RECORDED); /* other sizes: another geometry */
    run_mixed(r, c, 0, 64, 300, 4, 0.5f, &cfg, PTO_RUN_GRAPH_REPLAYED);
    run_mixed(r, c, 0, 64, 256, 5, 0.5f, &cfg, PTO_RUN_GRAPH_RECORDED); /* the first one was replaced */
    trb_release(r, c);
    c = mixed_program(r, 64);
    run_mixed(r, c, 0, 64, 256, 6, 0.5f, &cfg, PTO_RUN_GRAPH_RECORDED); /* a new registration */
    run_mixed(r, c, 0, 64, 256, 7, 0.5f, &cfg, PTO_RUN_GRAPH_REPLAYED);
    trb_release(r, c);
    runner_destroy(r);
}

TEST(trb_a_failed_run_records_nothing_and_a_library_orchestration_is_never_recorded)
{
    Runner *r = trb_runner();
    /* local tiles of 2048 bytes never fit a 1024-byte ring heap: the orchestration fails */
    RuntimeCallable *c = mixed_program(r, 512);
    REQUIRE(c != NULL);
    CallConfig tiny = tiny_rings(), defaults = test_config(20000);
    float *x = calloc(2048, 4), *w = calloc(2048, 4), *out = calloc(2048, 4);
    ChipStorageTaskArgs *a = test_args();
    a->tensor_count = 3;
    a->tensors[0] = test_f32_tensor(x, 2048);
    a->tensors[1] = test_f32_tensor(w, 2048);
    a->tensors[2] = test_f32_tensor(out, 2048);
    a->scalar_count = 1;
    Outcome o;
    CHECK_EQ_INT(run(r, c, 0, a, &tiny, NULL, &o), PTO_ERR_CAPACITY);
    CHECK_EQ_INT(o.source, PTO_RUN_GRAPH_BUILT);
    CHECK(trb_callable_recording_bytes(c) == 0);
    run_mixed(r, c, 0, 512, 2048, 1, 2.0f, &defaults, PTO_RUN_GRAPH_RECORDED);
    run_mixed(r, c, 0, 512, 2048, 2, 2.0f, &defaults, PTO_RUN_GRAPH_REPLAYED);
    /* replayed with the tiny rings, the allocation fails as the built run's did */
    CHECK_EQ_INT(run(r, c, 0, a, &tiny, NULL, &o), PTO_ERR_CAPACITY);
    CHECK_CONTAINS(pto_last_error(), "can never fit ring 1's heap of 1024 bytes");
    CHECK_EQ_INT(o.source, PTO_RUN_GRAPH_REPLAYED);
    trb_release(r, c);

    static const uint8_t sig[] = { PTO_ARG_IN, PTO_ARG_IN, PTO_ARG_INOUT, PTO_ARG_OUT,
                                   PTO_ARG_OUT, PTO_ARG_OUT, PTO_ARG_OUT };
    uint32_t size;
    uint8_t *bytes = trb_library_callable(sig, 7, "trb_orch_chain", &size);
    RuntimeCallable *lib = trb_register(r, bytes);
    free(bytes);
    REQUIRE(lib != NULL);
    float *t = calloc(7 * 64, 4);
    a->tensor_count = 7;
    a->scalar_count = 0;
    for (int i = 0; i < 7; i++)
        a->tensors[i] = test_f32_tensor(t + i * 64, 64);
    for (int k = 0; k < 2; k++) {
        CHECK_EQ_INT(run(r, lib, 0, a, &defaults, NULL, &o), PTO_OK);
        CHECK_EQ_INT(o.source, PTO_RUN_GRAPH_BUILT);
    }
    CHECK(trb_callable_recording_bytes(lib) == 0);
    trb_release(r, lib);
    free(t);
    free(a);
    free(x), free(w), free(out);
    runner_destroy(r);
}

/* ---- the dependency graph and the producers' limit ------------------------------------------ */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *text = calloc(1, 1 << 16);
    size_t n = fread(text, 1, (1 << 16) - 1, f);
    fclose(f);
    text[n] = '\0';
    return text;
}

/* The mixed program's graph file from a built (recording) run, from a replay
   walking the compiled graph and from one through other rings: byte for byte
   the same. */
TEST(trb_a_replayed_run_writes_the_dependency_graph_file_a_built_run_writes)
{
    Runner *r = trb_runner();
    RuntimeCallable *c = mixed_program(r, 64);
    REQUIRE(c != NULL);
    char dir[64] = "/tmp/ptorun_trb_rec_XXXXXX", path[256];
    REQUIRE(mkdtemp(dir) != NULL);
    CallConfig cfg = test_config(20000);
    cfg.enable_dep_graph = 1;
    snprintf(cfg.output_prefix, sizeof cfg.output_prefix, "%s", dir);
    float x[256], w[256], out[256];
    trb_fill(x, 256, 1);
    trb_fill(w, 256, 2);
    ChipStorageTaskArgs *a = test_args();
    a->tensor_count = 3;
    a->tensors[0] = test_f32_tensor(x, 256);
    a->tensors[1] = test_f32_tensor(w, 256);
    a->tensors[2] = test_f32_tensor(out, 256);
    a->scalar_count = 1;
    CallConfig tiny = tiny_rings();
    tiny.enable_dep_graph = 1;
    snprintf(tiny.output_prefix, sizeof tiny.output_prefix, "%s", dir);
    char *text[3] = { NULL, NULL, NULL };
    const CallConfig *cfgs[3] = { &cfg, &cfg, &tiny };
    const uint32_t want[3] = { PTO_RUN_GRAPH_RECORDED, PTO_RUN_GRAPH_REPLAYED, PTO_RUN_GRAPH_REPLAYED };
    const uint32_t want_mode[3] = { PTO_TRB_RECORD, PTO_TRB_WALK, PTO_TRB_REPLAY };
    for (int k = 0; k < 3; k++) {
        NativeRunDescriptor desc = { .run_id = 9, .run_epoch = (uint64_t)k };
        Outcome o;
        CHECK_EQ_INT(run(r, c, 0, a, cfgs[k], &desc, &o), PTO_OK);
        CHECK_EQ_INT(o.source, want[k]);
        CHECK_EQ_INT(o.mode, want_mode[k]);
        snprintf(path, sizeof path, "%s/dep_graph_9_%d.dot", dir, k);
        text[k] = slurp(path);
        unlink(path);
    }
    rmdir(dir);
    REQUIRE(text[0] != NULL && text[1] != NULL && text[2] != NULL);
    /* 4 x (vmul -> vadds), then vcopy after tile 0's vadds, then vadds after the copy and that vadds */
    CHECK_CONTAINS(text[0], "t0 -> t1;\n");
    CHECK_CONTAINS(text[0], "t1 -> t8;\n");
    CHECK_CONTAINS(text[0], "t8 -> t9;\n");
    CHECK(strcmp(text[0], text[1]) == 0);
    CHECK(strcmp(text[0], text[2]) == 0);
    free(text[0]);
    free(text[1]);
    free(text[2]);
    free(a);
    trb_release(r, c);
    runner_destroy(r);
}

/* k tasks fill one float of x each, one task copies all of x: k producers. A
   replay in rings whose dependency pool is smaller fails as a built run does. */
TEST(trb_a_replay_checks_the_producers_against_its_own_dependency_pool)
{
    Runner *r = trb_runner();
    enum { K = 8 };
    RuntimeCallable *c[2];
    for (int v = 0; v < 2; v++) {
        TestCallableBuilder b;
        tcb_init(&b);
        const uint8_t sig[] = { PTO_ARG_OUT, PTO_ARG_OUT };
        tcb_signature(&b, sig, 2);
        trb_children(&b);
        tcb_loop(&b, K);
        PtoProgramParam one[] = { tile_view(0, PTO_ARG_OUT, 4), tcb_f32(3.0f) };
        tcb_submit(&b, FN_VFILL, one, 2);
        tcb_insn(&b, PTO_OP_END_LOOP);
        PtoProgramParam all[] = { tcb_tensor(0, PTO_ARG_IN, 0, K * 4), tcb_tensor(1, PTO_ARG_OUT, 0, K * 4) };
        tcb_submit(&b, FN_VCOPY, all, 2);
        c[v] = trb_register_built(r, &b);
        REQUIRE(c[v] != NULL);
    }
    float x[K], y[K];
    ChipStorageTaskArgs *a = test_args();
    a->tensor_count = 2;
    a->tensors[0] = test_f32_tensor(x, K);
    a->tensors[1] = test_f32_tensor(y, K);
    CallConfig tiny = tiny_rings(), defaults = test_config(20000);
    Outcome o;
    CHECK_EQ_INT(run(r, c[1], 0, a, &tiny, NULL, &o), PTO_ERR_CAPACITY); /* built */
    CHECK_CONTAINS(pto_last_error(), "the task has more than 4 producers");
    CHECK_EQ_INT(o.source, PTO_RUN_GRAPH_BUILT);
    CHECK_EQ_INT(run(r, c[0], 0, a, &defaults, NULL, &o), PTO_OK);
    CHECK_EQ_INT(o.source, PTO_RUN_GRAPH_RECORDED);
    CHECK(y[0] == 3.0f && y[K - 1] == 3.0f);
    CHECK_EQ_INT(run(r, c[0], 0, a, &tiny, NULL, &o), PTO_ERR_CAPACITY); /* replayed */
    CHECK_CONTAINS(pto_last_error(), "the task has more than 4 producers");
    CHECK_EQ_INT(o.source, PTO_RUN_GRAPH_REPLAYED);
    memset(y, 0, sizeof y);
    CHECK_EQ_INT(run(r, c[0], 0, a, &defaults, NULL, &o), PTO_OK);
    CHECK_EQ_INT(o.source, PTO_RUN_GRAPH_REPLAYED);
    CHECK(y[0] == 3.0f && y[K - 1] == 3.0f);
    free(a);
    trb_release(r, c[0]);
    trb_release(r, c[1]);
    runner_destroy(r);
}

/* ---- the device's orchestration time ------------------------------------------------------- */

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* A 4096-task chain z += x, recorded then replayed, right every time, each run's
   device orchestration time reported (to stderr: no unit test compares timings;
   P13 measures them, docs/performance.md). */
TEST(trb_a_long_chain_replays_right_and_reports_its_orchestration_time)
{
    enum { TASKS = 4096, FLOATS = 64, REPLAYS = 5 };
    Runner *r = trb_runner();
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_IN, PTO_ARG_INOUT };
    tcb_signature(&b, sig, 2);
    trb_children(&b);
    tcb_child(&b, FN_TILE_ADD, PTO_CORE_AIV, "tile_add");
    tcb_loop(&b, TASKS);
    PtoProgramParam p[] = { tcb_tensor(0, PTO_ARG_IN, 0, FLOATS * 4), tcb_tensor(1, PTO_ARG_INOUT, 0, FLOATS * 4) };
    tcb_submit(&b, FN_TILE_ADD, p, 2);
    tcb_insn(&b, PTO_OP_END_LOOP);
    RuntimeCallable *c = trb_register_built(r, &b);
    REQUIRE(c != NULL);
    float x[FLOATS], z[FLOATS];
    for (int i = 0; i < FLOATS; i++)
        x[i] = 1.0f;
    ChipStorageTaskArgs *a = test_args();
    a->tensor_count = 2;
    a->tensors[0] = test_f32_tensor(x, FLOATS);
    a->tensors[1] = test_f32_tensor(z, FLOATS);
    /* a window and a dependency pool holding every task: the orchestrator never waits for
       the kernels, its time is its own */
    CallConfig cfg = test_config(60000);
    cfg.ring_task_window[0] = 2 * TASKS;
    cfg.ring_dep_pool[0] = 2 * TASKS;
    uint64_t first = 0, replay[REPLAYS];
    for (int k = 0; k <= REPLAYS; k++) {
        memset(z, 0, sizeof z);
        Outcome o;
        CHECK_EQ_INT(run(r, c, 0, a, &cfg, NULL, &o), PTO_OK);
        CHECK_EQ_INT(o.source, k == 0 ? PTO_RUN_GRAPH_RECORDED : PTO_RUN_GRAPH_REPLAYED);
        CHECK(z[0] == (float)TASKS && z[FLOATS - 1] == (float)TASKS);
        CHECK(o.orchestration_ns > 0);
        if (k == 0)
            first = o.orchestration_ns;
        else
            replay[k - 1] = o.orchestration_ns;
    }
    qsort(replay, REPLAYS, sizeof replay[0], by_value);
    fprintf(stderr, "  trb device orchestration of %d tasks: recording run %llu ns, replays (median) %llu ns\n", TASKS,
            (unsigned long long)first, (unsigned long long)replay[REPLAYS / 2]);
    free(a);
    trb_release(r, c);
    runner_destroy(r);
}

/* ---- recordings never replayed ------------------------------------------------------------- */

/* K tasks fill a float each of x, then K tasks each copy all of x into their
   own tile of y: K * K producers, more than a recording holds (4 per access
   plus 64). The device loses the recording; every run is built. */
TEST(trb_a_recording_the_device_lost_is_never_kept)
{
    enum { K = 20 };
    Runner *r = trb_runner();
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_OUT, PTO_ARG_OUT };
    tcb_signature(&b, sig, 2);
    trb_children(&b);
    tcb_loop(&b, K);
    PtoProgramParam one[] = { tile_view(0, PTO_ARG_OUT, 4), tcb_f32(2.5f) };
    tcb_submit(&b, FN_VFILL, one, 2);
    tcb_insn(&b, PTO_OP_END_LOOP);
    tcb_loop(&b, K);
    PtoProgramParam all[] = { tcb_tensor(0, PTO_ARG_IN, 0, K * 4), tile_view(1, PTO_ARG_OUT, K * 4) };
    tcb_submit(&b, FN_VCOPY, all, 2);
    tcb_insn(&b, PTO_OP_END_LOOP);
    RuntimeCallable *c = trb_register_built(r, &b);
    REQUIRE(c != NULL);
    float x[K], y[K * K];
    ChipStorageTaskArgs *a = test_args();
    a->tensor_count = 2;
    a->tensors[0] = test_f32_tensor(x, K);
    a->tensors[1] = test_f32_tensor(y, K * K);
    CallConfig cfg = test_config(20000);
    for (int k = 0; k < 2; k++) {
        memset(y, 0, sizeof y);
        Outcome o;
        CHECK_EQ_INT(run(r, c, 0, a, &cfg, NULL, &o), PTO_OK);
        CHECK_EQ_INT(o.source, PTO_RUN_GRAPH_BUILT);
        CHECK(y[0] == 2.5f && y[K * K - 1] == 2.5f);
    }
    CHECK(trb_callable_recording_bytes(c) == 0);
    free(a);
    trb_release(r, c);
    runner_destroy(r);
}

/* A run whose orchestration completed its recording but whose kernel faulted:
   nothing is kept, the next run of that geometry is built again. */
TEST(trb_a_run_that_fails_after_its_orchestration_keeps_no_recording)
{
    Runner *r = trb_runner();
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_IN, PTO_ARG_IN, PTO_ARG_OUT };
    tcb_signature(&b, sig, 3);
    trb_children(&b);
    PtoProgramParam ok[] = { tcb_tensor(0, PTO_ARG_IN, 0, 256), tcb_tensor(1, PTO_ARG_IN, 0, 256),
                             tcb_tensor(2, PTO_ARG_OUT, 0, 256) };
    tcb_submit(&b, FN_VADD, ok, 3);
    PtoProgramParam bad[] = { tcb_tensor(0, PTO_ARG_IN, 0, 8), tcb_tensor(1, PTO_ARG_IN, 0, 256),
                              tcb_tensor(2, PTO_ARG_OUT, 0, 256) }; /* a view too small: the kernel faults */
    tcb_submit(&b, FN_VMUL, bad, 3);
    RuntimeCallable *c = trb_register_built(r, &b);
    REQUIRE(c != NULL);
    float x[64] = { 0 }, w[64] = { 0 }, out[64];
    ChipStorageTaskArgs *a = test_args();
    a->tensor_count = 3;
    a->tensors[0] = test_f32_tensor(x, 64);
    a->tensors[1] = test_f32_tensor(w, 64);
    a->tensors[2] = test_f32_tensor(out, 64);
    CallConfig cfg = test_config(20000);
    for (int k = 0; k < 2; k++) {
        Outcome o;
        CHECK_EQ_INT(run(r, c, 0, a, &cfg, NULL, &o), PTO_ERR_KERNEL_FAULT);
        CHECK_EQ_INT(o.source, PTO_RUN_GRAPH_BUILT);
        CHECK(trb_callable_recording_bytes(c) == 0);
    }
    free(a);
    trb_release(r, c);
    runner_destroy(r);
}

/* ---- a walked graph's failures -------------------------------------------------------------- */

/* Three tasks each write their thread id to a float of x and return scalar 0:
   a walked replay whose kernel returns 7 fails precisely, keeps the recording,
   and the next one walks it again. */
TEST(trb_a_kernel_fault_in_a_walked_graph_fails_that_run_alone)
{
    enum { FN_THREAD_ID = 21, N = 3 };
    Runner *r = trb_runner();
    uint32_t kernels_size;
    const uint8_t *kernels = trb_test_kernels(&kernels_size);
    REQUIRE(kernels != NULL);
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_OUT, PTO_ARG_SCALAR };
    tcb_signature(&b, sig, 2);
    trb_children(&b);
    tcb_library_child(&b, FN_THREAD_ID, PTO_CORE_AIV, kernels, kernels_size, "trb_thread_id");
    tcb_loop(&b, N);
    PtoProgramParam p[] = { tile_view(0, PTO_ARG_OUT, 4), tcb_scalar_arg(0) };
    tcb_submit(&b, FN_THREAD_ID, p, 2);
    tcb_insn(&b, PTO_OP_END_LOOP);
    RuntimeCallable *c = trb_register_built(r, &b);
    REQUIRE(c != NULL);
    uint32_t ids[N];
    ChipStorageTaskArgs *a = test_args();
    a->tensor_count = 1;
    a->tensors[0] = test_f32_tensor((float *)ids, N);
    a->scalar_count = 1;
    CallConfig cfg = test_config(20000);
    const uint64_t codes[] = { 0, 0, 7, 0 };
    const int want_rc[] = { PTO_OK, PTO_OK, PTO_ERR_KERNEL_FAULT, PTO_OK };
    const uint32_t want_mode[] = { PTO_TRB_RECORD, PTO_TRB_WALK, PTO_TRB_WALK, PTO_TRB_WALK };
    for (int k = 0; k < 4; k++) {
        memset(ids, 0, sizeof ids);
        a->scalars[0] = codes[k];
        Outcome o;
        CHECK_EQ_INT(run(r, c, 0, a, &cfg, NULL, &o), want_rc[k]);
        CHECK_EQ_INT(o.mode, want_mode[k]);
        if (want_rc[k] == PTO_OK)
            CHECK(ids[0] != 0 && ids[1] != 0 && ids[2] != 0);
        else
            CHECK_CONTAINS(pto_last_error(), "(func_id 21");
        if (want_rc[k] != PTO_OK)
            CHECK_CONTAINS(pto_last_error(), "returned 7");
    }
    free(a);
    trb_release(r, c);
    runner_destroy(r);
}
