/* The hbg runtime on the sim platform, end to end below the exported API:
 * register, bind, enqueue with a real launch signal, drain, validate. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/chip_callable.h"
#include "util/last_error.h"
#include "services/launch_signal.h"
#include "ptest.h"
#include "platform/runner_core.h"
#include "runtime/hbg/hbg_internal.h"
#include "test_callable.h"
#include "test_sim.h"

enum { A, B, S, P, Q, R, F, CHAIN_TENSORS };
enum { FN_VADD = 1, FN_VADDS = 2, FN_VMUL = 3 };

/* f = (a+b+1)*(a+b+2)+(a+b) as five tasks over argument tensors:
   s = a+b; p = s+1; q = s+2; r = p*q; f = r+s. `fault_bytes` (when non-zero)
   shrinks r = p*q's first input view so its kernel refuses the task. */
static uint8_t *chain_callable(uint32_t n, uint32_t fault_bytes, uint32_t *size)
{
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[CHAIN_TENSORS] = { PTO_ARG_IN, PTO_ARG_IN, PTO_ARG_INOUT, PTO_ARG_OUT,
                                         PTO_ARG_OUT, PTO_ARG_OUT, PTO_ARG_OUT };
    tcb_signature(&b, sig, CHAIN_TENSORS);
    tcb_child(&b, FN_VADD, PTO_CORE_AIV, "vadd");
    tcb_child(&b, FN_VADDS, PTO_CORE_AIV, "vadds");
    tcb_child(&b, FN_VMUL, PTO_CORE_AIC, "vmul");
    int64_t bytes = (int64_t)n * 4;
    PtoProgramParam t0[] = { tcb_tensor(A, PTO_ARG_IN, 0, bytes), tcb_tensor(B, PTO_ARG_IN, 0, bytes),
                             tcb_tensor(S, PTO_ARG_OUT, 0, bytes) };
    PtoProgramParam t1[] = { tcb_tensor(S, PTO_ARG_IN, 0, bytes), tcb_tensor(P, PTO_ARG_OUT, 0, bytes), tcb_f32(1.0f) };
    PtoProgramParam t2[] = { tcb_tensor(S, PTO_ARG_IN, 0, bytes), tcb_tensor(Q, PTO_ARG_OUT, 0, bytes), tcb_f32(2.0f) };
    PtoProgramParam t3[] = { tcb_tensor(P, PTO_ARG_IN, 0, fault_bytes ? fault_bytes : bytes),
                             tcb_tensor(Q, PTO_ARG_IN, 0, bytes), tcb_tensor(R, PTO_ARG_OUT, 0, bytes) };
    PtoProgramParam t4[] = { tcb_tensor(R, PTO_ARG_IN, 0, bytes), tcb_tensor(S, PTO_ARG_IN, 0, bytes),
                             tcb_tensor(F, PTO_ARG_OUT, 0, bytes) };
    tcb_submit(&b, FN_VADD, t0, 3);
    tcb_submit(&b, FN_VADDS, t1, 3);
    tcb_submit(&b, FN_VADDS, t2, 3);
    tcb_submit(&b, FN_VMUL, t3, 3);
    tcb_submit(&b, FN_VADD, t4, 3);
    uint8_t *c = tcb_build(&b, size);
    tcb_free(&b);
    return c;
}

typedef struct Chain {
    uint32_t n;
    float *t[CHAIN_TENSORS];
    ChipStorageTaskArgs *args;
} Chain;

static void chain_init(Chain *c, uint32_t n, uint32_t seed)
{
    c->n = n;
    c->args = test_args();
    c->args->tensor_count = CHAIN_TENSORS;
    for (int i = 0; i < CHAIN_TENSORS; i++) {
        c->t[i] = malloc((size_t)n * sizeof(float) + 4);
        for (uint32_t j = 0; j < n; j++)
            c->t[i][j] = -777.0f; /* sentinel: outputs must be overwritten */
        c->args->tensors[i] = test_f32_tensor(c->t[i], n);
    }
    srand(seed);
    for (uint32_t j = 0; j < n; j++) {
        c->t[A][j] = (float)(rand() % 20001 - 10000) / 137.0f;
        c->t[B][j] = (float)(rand() % 20001 - 10000) / 59.0f;
    }
}

static void chain_free(Chain *c)
{
    for (int i = 0; i < CHAIN_TENSORS; i++)
        free(c->t[i]);
    free(c->args);
}

/* Bit for bit against the same operations in C. */
static int chain_matches_reference(const Chain *c)
{
    for (uint32_t j = 0; j < c->n; j++) {
        float s = c->t[A][j] + c->t[B][j];
        float p = s + 1.0f, q = s + 2.0f;
        float r = p * q;
        float f = r + s;
        float want[CHAIN_TENSORS] = { c->t[A][j], c->t[B][j], s, p, q, r, f };
        for (int i = S; i < CHAIN_TENSORS; i++)
            if (memcmp(&want[i], &c->t[i][j], sizeof(float)) != 0)
                return 0;
    }
    return 1;
}

static RuntimeCallable *register_callable(Runner *r, const uint8_t *bytes)
{
    HostApi api = host_api_bind(r, 0, 0, &host_api_ops);
    RuntimeCallable *c = NULL;
    int rc = runtime_register_callable(&api, bytes, &c);
    if (rc != PTO_OK)
        fprintf(stderr, "register: %s\n", pto_last_error());
    return c;
}

static void release_callable(Runner *r, RuntimeCallable *c)
{
    HostApi api = host_api_bind(r, 0, 0, &host_api_ops);
    runtime_release_callable(&api, c);
}

TEST(vector_chain_matches_the_c_reference_bit_for_bit)
{
    Runner *r = test_sim_runner();
    CallConfig cfg = test_config(10000);
    const uint32_t sizes[] = { 1, 3, 64, 1000, 100003 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint32_t size;
        uint8_t *bytes = chain_callable(sizes[i], 0, &size);
        RuntimeCallable *c = register_callable(r, bytes);
        CHECK(c != NULL);
        Chain ch;
        chain_init(&ch, sizes[i], (uint32_t)i + 1);
        int exec_rc = -99;
        CHECK_EQ_INT(test_run(r, c, 0, ch.args, &cfg, &exec_rc), PTO_OK);
        CHECK_EQ_INT(exec_rc, PTO_OK);
        if (!chain_matches_reference(&ch)) {
            char m[96];
            snprintf(m, sizeof m, "chain of %u elements differs from the reference", sizes[i]);
            ptest_record_failure(__FILE__, __LINE__, m);
        }
        chain_free(&ch);
        release_callable(r, c);
        free(bytes);
    }
    runner_destroy(r);
}

TEST(vector_chain_dependencies_are_raw_war_and_waw_in_submission_order)
{
    Runner *r = test_sim_runner();
    uint32_t size;
    uint8_t *bytes = chain_callable(16, 0, &size);
    RuntimeCallable *c = register_callable(r, bytes);
    Chain ch;
    chain_init(&ch, 16, 7);
    HostApi api = host_api_bind(r, 0, 0, &host_api_ops);
    RuntimeRun run;
    memset(&run, 0, sizeof run);
    DeviceLaunch launch;
    CallConfig cfg = test_config(10000);
    CHECK_EQ_INT(runtime_bind(&run, test_slot_scratch(api.runner, api.pipeline_slot), &api, c, ch.args, &cfg, NULL, &launch), PTO_OK);
    const HbgGraph *g = &test_slot_scratch(r, 0)->graph;
    CHECK_EQ_INT(g->task_count, 5);
    const uint32_t fanin[5] = { 0, 1, 1, 2, 2 };
    for (int t = 0; t < 5; t++)
        CHECK_EQ_INT(g->tasks[t].fanin_count, fanin[t]);
    /* producer -> consumer, consumers ascending */
    const uint32_t edges[][2] = { { 0, 1 }, { 0, 2 }, { 1, 3 }, { 2, 3 }, { 0, 4 }, { 3, 4 } };
    CHECK_EQ_INT(g->edge_count, 6);
    for (uint32_t e = 0; e < g->edge_count && e < 6; e++) {
        CHECK_EQ_INT(g->edges[2 * e], edges[e][0]);
        CHECK_EQ_INT(g->edges[2 * e + 1], edges[e][1]);
    }
    CHECK_EQ_INT(launch.aicpu_threads, 4);
    CHECK_EQ_INT(launch.block_dim, 24);
    CHECK_EQ_INT(launch.timeout_ms, 10000);
    runtime_unbind(&run, &api);
    chain_free(&ch);
    release_callable(r, c);
    free(bytes);
    runner_destroy(r);
}

/* WAR and WAW on overlapping sub-views of one tensor, and no edge between
   disjoint views or between two readers. */
TEST(dependencies_follow_overlapping_byte_ranges)
{
    Runner *r = test_sim_runner();
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_INOUT, PTO_ARG_OUT };
    tcb_signature(&b, sig, 2);
    tcb_child(&b, 1, PTO_CORE_AIV, "vcopy");
    PtoProgramParam t0[] = { tcb_tensor(0, PTO_ARG_IN, 0, 32), tcb_tensor(1, PTO_ARG_OUT, 0, 32) };   /* reads x[0,32) */
    PtoProgramParam t1[] = { tcb_tensor(0, PTO_ARG_IN, 16, 32), tcb_tensor(1, PTO_ARG_OUT, 32, 32) }; /* reads x[16,48) */
    PtoProgramParam t2[] = { tcb_tensor(1, PTO_ARG_IN, 64, 16), tcb_tensor(0, PTO_ARG_OUT, 40, 16) }; /* WAR on t1 */
    PtoProgramParam t3[] = { tcb_tensor(1, PTO_ARG_IN, 64, 16), tcb_tensor(0, PTO_ARG_OUT, 60, 4) };  /* disjoint */
    PtoProgramParam t4[] = { tcb_tensor(1, PTO_ARG_IN, 64, 16), tcb_tensor(0, PTO_ARG_OUT, 0, 64) };  /* WAW+WAR */
    tcb_submit(&b, 1, t0, 2);
    tcb_submit(&b, 1, t1, 2);
    tcb_submit(&b, 1, t2, 2);
    tcb_submit(&b, 1, t3, 2);
    tcb_submit(&b, 1, t4, 2);
    uint32_t size;
    uint8_t *bytes = tcb_build(&b, &size);
    tcb_free(&b);
    RuntimeCallable *c = register_callable(r, bytes);
    uint8_t x[64], y[96];
    for (int i = 0; i < 64; i++)
        x[i] = (uint8_t)i;
    ChipStorageTaskArgs *args = test_args();
    args->tensor_count = 2;
    args->tensors[0] = test_f32_tensor((float *)x, 16);
    args->tensors[1] = test_f32_tensor((float *)y, 24);
    HostApi api = host_api_bind(r, 0, 0, &host_api_ops);
    RuntimeRun run;
    memset(&run, 0, sizeof run);
    DeviceLaunch launch;
    CallConfig cfg = test_config(10000);
    CHECK_EQ_INT(runtime_bind(&run, test_slot_scratch(api.runner, api.pipeline_slot), &api, c, args, &cfg, NULL, &launch), PTO_OK);
    const HbgGraph *g = &test_slot_scratch(r, 0)->graph;
    /* t2 writes x[40,56): after t1 (read x[16,48)), not t0; reads y[64,80): nobody wrote it.
       t3 writes x[60,64): conflicts with nobody.
       t4 writes x[0,64): after t0, t1 (readers), t2, t3 (writers). */
    const uint32_t fanin[5] = { 0, 0, 1, 0, 4 };
    for (int t = 0; t < 5; t++)
        CHECK_EQ_INT(g->tasks[t].fanin_count, fanin[t]);
    CHECK_EQ_INT(g->edges[0], 1);
    CHECK_EQ_INT(g->edges[1], 2);
    runtime_unbind(&run, &api);
    free(args);
    release_callable(r, c);
    free(bytes);
    runner_destroy(r);
}

TEST(a_kernel_fault_fails_the_run_naming_task_and_func_id_and_copies_nothing_back)
{
    Runner *r = test_sim_runner();
    uint32_t size;
    uint8_t *bytes = chain_callable(64, 8, &size);
    RuntimeCallable *c = register_callable(r, bytes);
    Chain ch;
    chain_init(&ch, 64, 3);
    CallConfig cfg = test_config(10000);
    int exec_rc = 0;
    CHECK_EQ_INT(test_run(r, c, 0, ch.args, &cfg, &exec_rc), PTO_ERR_KERNEL_FAULT);
    CHECK_EQ_INT(exec_rc, PTO_ERR_KERNEL_FAULT);
    CHECK_CONTAINS(pto_last_error(), "task 3 (func_id 3, kernel 'vmul') returned 2 (a view is too small)");
    CHECK_CONTAINS(pto_last_error(), "4 of 5 task(s) completed");
    for (uint32_t j = 0; j < 64; j++)
        CHECK(ch.t[S][j] == -777.0f && ch.t[R][j] == -777.0f && ch.t[F][j] == -777.0f);
    chain_free(&ch);
    /* the device and the callable are fine afterwards */
    uint8_t *good = chain_callable(64, 0, &size);
    RuntimeCallable *c2 = register_callable(r, good);
    chain_init(&ch, 64, 4);
    CHECK_EQ_INT(test_run(r, c2, 0, ch.args, &cfg, NULL), PTO_OK);
    CHECK(chain_matches_reference(&ch));
    chain_free(&ch);
    release_callable(r, c2);
    release_callable(r, c);
    free(good);
    free(bytes);
    runner_destroy(r);
}

TEST(a_program_without_tasks_completes_at_once)
{
    Runner *r = test_sim_runner();
    TestCallableBuilder b;
    tcb_init(&b);
    const uint8_t sig[] = { PTO_ARG_OUT };
    tcb_signature(&b, sig, 1);
    uint32_t size;
    uint8_t *bytes = tcb_build(&b, &size);
    tcb_free(&b);
    RuntimeCallable *c = register_callable(r, bytes);
    float out[4] = { 5, 5, 5, 5 };
    ChipStorageTaskArgs *args = test_args();
    args->tensor_count = 1;
    args->tensors[0] = test_f32_tensor(out, 4);
    CallConfig cfg = test_config(10000);
    CHECK_EQ_INT(test_run(r, c, 0, args, &cfg, NULL), PTO_OK);
    /* an OUT no task wrote comes back zeroed, never as stale device bytes */
    CHECK(out[0] == 0.0f && out[3] == 0.0f);
    free(args);
    release_callable(r, c);
    free(bytes);
    runner_destroy(r);
}

TEST(committed_memory_returns_to_its_baseline_after_every_run)
{
    Runner *r = test_sim_runner();
    uint32_t size;
    uint8_t *bytes = chain_callable(4096, 0, &size);
    RuntimeCallable *c = register_callable(r, bytes);
    size_t registered = runner_committed_bytes(r);
    CHECK_EQ_INT(registered, size);
    CallConfig cfg = test_config(10000);
    Chain ch;
    chain_init(&ch, 4096, 9);
    CHECK_EQ_INT(test_run(r, c, 0, ch.args, &cfg, NULL), PTO_OK);
    size_t baseline = runner_committed_bytes(r); /* now with bank 0's arenas */
    CHECK(baseline > registered);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(test_run(r, c, 0, ch.args, &cfg, NULL), PTO_OK);
        CHECK_EQ_INT(runner_committed_bytes(r), baseline);
    }
    CHECK(chain_matches_reference(&ch));
    chain_free(&ch);
    /* the first run recorded the chain's graph: the callable's until it is released */
    uint64_t recorded = hbg_recorder_bytes(c->recorder);
    CHECK(recorded > sizeof(PtoGraphHeader));
    release_callable(r, c);
    CHECK_EQ_INT(runner_committed_bytes(r), baseline - registered - recorded);
    CHECK_EQ_INT(runner_finalize(r), PTO_OK);
    CHECK_EQ_INT(runner_committed_bytes(r), 0);
    free(bytes);
    runner_destroy(r);
}

/* Bank 1 is bound while bank 0's run executes; each has its own GM heap. */
/* A graph the device has no room to record is built every run, and right; once
   there is room, the next registration records it. */
TEST(a_graph_the_device_has_no_room_for_is_built_every_run_and_still_right)
{
    setenv("PTORUN_SIM_DEVICE_MEMORY", "4M", 1);
    Runner *r = test_sim_runner();
    unsetenv("PTORUN_SIM_DEVICE_MEMORY");
    uint32_t size;
    uint8_t *bytes = chain_callable(1024, 0, &size);
    RuntimeCallable *c = register_callable(r, bytes);
    CallConfig cfg = test_config(10000);
    Chain ch;
    chain_init(&ch, 1024, 4);
    CHECK_EQ_INT(test_run(r, c, 0, ch.args, &cfg, NULL), PTO_OK);
    uint64_t recorded = hbg_recorder_bytes(c->recorder);
    chain_free(&ch);
    REQUIRE(recorded > 0);
    release_callable(r, c);

    /* all but recorded - 1 bytes taken: the arenas stay, a recording cannot fit */
    uint64_t filler = 0;
    size_t free_bytes = ((size_t)4 << 20) - runner_committed_bytes(r);
    REQUIRE(runner_alloc(r, free_bytes - (recorded - 1) - size, &filler) == PTO_OK);
    c = register_callable(r, bytes);
    REQUIRE(c != NULL);
    for (int i = 0; i < 3; i++) {
        chain_init(&ch, 1024, 5 + (uint32_t)i);
        CHECK_EQ_INT(test_run(r, c, 0, ch.args, &cfg, NULL), PTO_OK);
        CHECK(chain_matches_reference(&ch));
        CHECK_EQ_INT(hbg_recorder_bytes(c->recorder), 0);
        CHECK_EQ_INT(pto_last_error_code(), PTO_OK); /* not recording is no error */
        chain_free(&ch);
    }
    runner_free(r, filler);
    chain_init(&ch, 1024, 9);
    CHECK_EQ_INT(test_run(r, c, 0, ch.args, &cfg, NULL), PTO_OK);
    CHECK(chain_matches_reference(&ch));
    CHECK_EQ_INT(hbg_recorder_bytes(c->recorder), recorded);
    chain_free(&ch);
    release_callable(r, c);
    free(bytes);
    runner_destroy(r);
}

TEST(runs_in_banks_0_and_1_use_different_gm_heaps_and_overlap)
{
    Runner *r = test_sim_runner();
    uint32_t size;
    uint8_t *bytes = chain_callable(512, 0, &size);
    RuntimeCallable *c = register_callable(r, bytes);
    CallConfig cfg = test_config(10000);
    Chain ch0, ch1;
    chain_init(&ch0, 512, 11);
    chain_init(&ch1, 512, 12);
    HostApi api0 = host_api_bind(r, 0, 0, &host_api_ops), api1 = host_api_bind(r, 1, 1, &host_api_ops);
    RuntimeRun run0, run1;
    memset(&run0, 0, sizeof run0);
    memset(&run1, 0, sizeof run1);
    DeviceLaunch l0, l1;
    RunExec e0, e1;
    CHECK_EQ_INT(runtime_bind(&run0, test_slot_scratch(api0.runner, api0.pipeline_slot), &api0, c, ch0.args, &cfg, NULL, &l0), PTO_OK);
    CHECK_EQ_INT(runner_submit(r, &e0, 0, &l0, NULL), PTO_OK);
    CHECK_EQ_INT(runtime_bind(&run1, test_slot_scratch(api1.runner, api1.pipeline_slot), &api1, c, ch1.args, &cfg, NULL, &l1), PTO_OK);
    CHECK(runner_arena_bank_gm_heap_base(r, 0) != 0);
    CHECK(runner_arena_bank_gm_heap_base(r, 1) != 0);
    CHECK(runner_arena_bank_gm_heap_base(r, 0) != runner_arena_bank_gm_heap_base(r, 1));
    CHECK(l0.args_dev != l1.args_dev);
    int rc0 = runner_await_device(r, &e0);
    CHECK_EQ_INT(rc0, PTO_OK);
    CHECK_EQ_INT(runtime_collect_results(&run0, &api0, rc0), PTO_OK);
    runtime_unbind(&run0, &api0);
    CHECK_EQ_INT(runner_submit(r, &e1, 1, &l1, NULL), PTO_OK);
    int rc1 = runner_await_device(r, &e1);
    CHECK_EQ_INT(rc1, PTO_OK);
    CHECK_EQ_INT(runtime_collect_results(&run1, &api1, rc1), PTO_OK);
    runtime_unbind(&run1, &api1);
    CHECK(chain_matches_reference(&ch0));
    CHECK(chain_matches_reference(&ch1));
    chain_free(&ch0);
    chain_free(&ch1);
    release_callable(r, c);
    free(bytes);
    runner_destroy(r);
}

TEST(a_prepared_run_that_never_launches_copies_nothing_back)
{
    Runner *r = test_sim_runner();
    uint32_t size;
    uint8_t *bytes = chain_callable(32, 0, &size);
    RuntimeCallable *c = register_callable(r, bytes);
    Chain ch;
    chain_init(&ch, 32, 5);
    HostApi api = host_api_bind(r, 0, 0, &host_api_ops);
    RuntimeRun run;
    memset(&run, 0, sizeof run);
    DeviceLaunch launch;
    CallConfig cfg = test_config(10000);
    CHECK_EQ_INT(runtime_bind(&run, test_slot_scratch(api.runner, api.pipeline_slot), &api, c, ch.args, &cfg, NULL, &launch), PTO_OK);
    runtime_unbind(&run, &api);
    CHECK(ch.t[F][0] == -777.0f);
    CHECK(test_slot_scratch(r, 0)->holder == NULL); /* unbind handed the slot's scratch back */
    CHECK_EQ_INT(runtime_collect_results(&run, &api, PTO_OK), PTO_ERR_WRONG_PHASE);
    runtime_unbind(&run, &api); /* an unbound run: a no-op */
    chain_free(&ch);
    release_callable(r, c);
    free(bytes);
    runner_destroy(r);
}

/* ---- refusals ------------------------------------------------------------------------ */

TEST(hbg_registration_refuses_libraries_that_do_not_load_and_leaks_nothing)
{
    Runner *r = test_sim_runner();
    HostApi api = host_api_bind(r, 0, 0, &host_api_ops);
    /* a kernel library child whose image is not a library */
    TestCallableBuilder b;
    tcb_init(&b);
    static const uint8_t junk[16] = "not an ELF file";
    tcb_library_child(&b, 4, PTO_CORE_AIV, junk, sizeof junk, "fx_saxpy");
    uint32_t size;
    uint8_t *bytes = tcb_build(&b, &size);
    tcb_free(&b);
    RuntimeCallable *c = (RuntimeCallable *)1;
    CHECK_EQ_INT(runtime_register_callable(&api, bytes, &c), PTO_ERR_BAD_CALLABLE);
    CHECK(c == NULL);
    CHECK_CONTAINS(pto_last_error(), "child 0 (func_id 4): kernel library image (16 bytes) cannot be loaded: ");
    free(bytes);
    /* a library orchestration whose image is not a library */
    tcb_init(&b);
    tcb_child(&b, 4, PTO_CORE_AIV, "noop");
    tcb_orchestration_library(&b, junk, sizeof junk, "fx_orch_repeat");
    bytes = tcb_build(&b, &size);
    tcb_free(&b);
    CHECK_EQ_INT(runtime_register_callable(&api, bytes, &c), PTO_ERR_BAD_CALLABLE);
    CHECK_CONTAINS(pto_last_error(),
                   "register_callable: the orchestration library: orchestration library image (16 bytes) cannot be loaded: ");
    /* and a malformed one */
    tcb_header(bytes)->magic = 0;
    CHECK_EQ_INT(runtime_register_callable(&api, bytes, &c), PTO_ERR_BAD_CALLABLE);
    CHECK_CONTAINS(pto_last_error(), "register_callable: bad magic");
    CHECK_EQ_INT(runner_committed_bytes(r), 0);
    CHECK_EQ_INT(runner_host_dlopen_count(r), 0);
    free(bytes);
    runner_destroy(r);
}

/* Committed bytes besides the two banks' arenas (which stay by design). */
static size_t non_arena_committed(Runner *r)
{
    size_t total = runner_committed_bytes(r);
    for (uint32_t bank = 0; bank < 2; bank++) {
        size_t size = 0;
        if (runner_acquire_pooled_gm_heap(r, bank, &size) != NULL)
            total -= size;
        if (runner_acquire_pooled_gm_sm(r, bank, &size) != NULL)
            total -= size;
        if (runner_acquire_pooled_runtime_arena(r, bank, &size) != NULL)
            total -= size;
    }
    return total;
}

/* A bind that fails: PTO_ERR_BAD_CALLABLE naming the defect, the bridge
   closed, nothing left committed beyond the bank's arenas. */
static void check_bind_refused(Runner *r, RuntimeCallable *c, const ChipStorageTaskArgs *args, const char *message)
{
    HostApi api = host_api_bind(r, 0, 0, &host_api_ops);
    RuntimeRun run;
    memset(&run, 0, sizeof run);
    DeviceLaunch launch;
    CallConfig cfg = test_config(10000);
    size_t before = non_arena_committed(r);
    CHECK_EQ_INT(runtime_bind(&run, test_slot_scratch(api.runner, api.pipeline_slot), &api, c, args, &cfg, NULL, &launch), PTO_ERR_BAD_CALLABLE);
    CHECK_CONTAINS(pto_last_error(), message);
    const HbgBridge *bridge = &test_slot_scratch(r, 0)->bridge;
    CHECK(bridge->api == NULL);
    CHECK_EQ_INT(bridge->count, 0);
    CHECK_EQ_INT(non_arena_committed(r), before);
}

TEST(bind_refuses_args_that_disagree_with_the_signature_naming_the_tensor)
{
    Runner *r = test_sim_runner();
    uint32_t size;
    uint8_t *bytes = chain_callable(16, 0, &size);
    RuntimeCallable *c = register_callable(r, bytes);
    Chain ch;
    chain_init(&ch, 16, 1);
    CallConfig cfg = test_config(10000);
    CHECK_EQ_INT(test_run(r, c, 0, ch.args, &cfg, NULL), PTO_OK); /* arenas in place */

    ChipStorageTaskArgs *a = test_args();
    memcpy(a, ch.args, sizeof *a);
    a->tensor_count = 6;
    check_bind_refused(r, c, a, "args: 6 tensor(s) and 0 scalar(s) given; the callable's signature takes 7 and 0");
    a->tensor_count = 7;
    a->scalar_count = -1;
    check_bind_refused(r, c, a, "args: 7 tensors and -1 scalars");
    a->scalar_count = 0;
    a->tensors[2].ndims = 0;
    check_bind_refused(r, c, a, "args: tensor 2 has ndims 0");
    a->tensors[2].ndims = 6;
    check_bind_refused(r, c, a, "args: tensor 2 has ndims 6");
    a->tensors[2] = ch.args->tensors[2];
    a->tensors[3].dtype = 10;
    check_bind_refused(r, c, a, "args: tensor 3 has invalid dtype 10");
    a->tensors[3] = ch.args->tensors[3];
    a->tensors[4].strides[0] = 0;
    check_bind_refused(r, c, a, "args: tensor 4 has stride 0 in dimension 0");
    a->tensors[4] = ch.args->tensors[4];
    a->tensors[5].size = 60;
    check_bind_refused(r, c, a, "args: tensor 5 is 60 bytes but its shape, strides and start_offset reach 64 bytes");
    a->tensors[5].size = 64;
    a->tensors[5].start_offset = 1;
    check_bind_refused(r, c, a, "reach 68 bytes");
    a->tensors[5] = ch.args->tensors[5];
    a->tensors[6].shapes[0] = 0x80000000u;
    a->tensors[6].strides[0] = 0x80000000u;
    a->tensors[6].dtype = PTO_DTYPE_U64;
    a->tensors[6].ndims = 5;
    for (int d = 1; d < 5; d++) {
        a->tensors[6].shapes[d] = 0xFFFFFFFFu;
        a->tensors[6].strides[d] = 0xFFFFFFFFu;
    }
    check_bind_refused(r, c, a, "args: tensor 6: its shape, strides and start_offset overflow");
    a->tensors[6] = ch.args->tensors[6];
    a->tensors[0].addr = 0;
    check_bind_refused(r, c, a, "args: tensor 0 has 64 bytes at address 0");
    a->tensors[0] = ch.args->tensors[0];
    a->tensors[1].child_memory = 1; /* a host pointer posing as device memory */
    check_bind_refused(r, c, a, "args: tensor 1 is child_memory");
    a->tensors[1] = ch.args->tensors[1];

    /* the callable still runs */
    CHECK_EQ_INT(test_run(r, c, 0, a, &cfg, NULL), PTO_OK);
    CHECK(chain_matches_reference(&ch));
    free(a);
    chain_free(&ch);
    release_callable(r, c);
    free(bytes);
    runner_destroy(r);
}

TEST(bind_checks_every_view_against_its_tensor)
{
    Runner *r = test_sim_runner();
    /* views 8 bytes too long for 16-float tensors */
    uint32_t size;
    uint8_t *bytes = chain_callable(18, 0, &size);
    RuntimeCallable *c = register_callable(r, bytes);
    Chain ch;
    chain_init(&ch, 16, 1);
    check_bind_refused(r, c, ch.args,
                       "program instruction 0 (SUBMIT func_id 1) param 0: view [0, 0 + 72) lies outside argument "
                       "tensor 0 of 64 bytes");
    release_callable(r, c);
    free(bytes);

    /* what the text alone proves wrong is refused at registration already */
    HostApi api = host_api_bind(r, 0, 0, &host_api_ops);
    const uint8_t sig[] = { PTO_ARG_IN, PTO_ARG_OUT };
    PtoProgramParam writes_in[] = { tcb_tensor(1, PTO_ARG_IN, 0, 16), tcb_tensor(0, PTO_ARG_OUT, 0, 16) };
    PtoProgramParam negative[] = { tcb_tensor(0, PTO_ARG_IN, -4, 16), tcb_tensor(1, PTO_ARG_OUT, 0, 16) };
    struct { const PtoProgramParam *params; const char *message; } refused[] = {
        { writes_in, "instruction 0 param 1 (OUT) writes argument tensor 0, which the signature declares IN" },
        { negative, "instruction 0 param 0: the view offset reaches -4; a view lies inside its tensor" },
    };
    for (int i = 0; i < 2; i++) {
        TestCallableBuilder b;
        tcb_init(&b);
        tcb_signature(&b, sig, 2);
        tcb_child(&b, 1, PTO_CORE_AIV, "vcopy");
        tcb_submit(&b, 1, refused[i].params, 2);
        bytes = tcb_build(&b, &size);
        tcb_free(&b);
        c = NULL;
        CHECK_EQ_INT(runtime_register_callable(&api, bytes, &c), PTO_ERR_BAD_CALLABLE);
        CHECK_CONTAINS(pto_last_error(), refused[i].message);
        CHECK(c == NULL);
        free(bytes);
    }
    chain_free(&ch);
    runner_destroy(r);
}

TEST(child_memory_tensors_are_passed_through_never_staged_or_copied_back)
{
    Runner *r = test_sim_runner();
    uint32_t size;
    uint8_t *bytes = chain_callable(256, 0, &size);
    RuntimeCallable *c = register_callable(r, bytes);
    Chain ch;
    chain_init(&ch, 256, 21);
    /* b and f live on the device */
    float *dev_b = runner_device_malloc(r, 256 * 4);
    float *dev_f = runner_device_malloc(r, 256 * 4);
    CHECK_EQ_INT(runner_copy_to_device(r, dev_b, ch.t[B], 256 * 4), PTO_OK);
    ch.args->tensors[B].addr = (uint64_t)(uintptr_t)dev_b;
    ch.args->tensors[B].child_memory = 1;
    ch.args->tensors[F].addr = (uint64_t)(uintptr_t)dev_f;
    ch.args->tensors[F].child_memory = 1;
    CallConfig cfg = test_config(10000);
    CHECK_EQ_INT(test_run(r, c, 0, ch.args, &cfg, NULL), PTO_OK);
    CHECK(ch.t[F][0] == -777.0f); /* not copied back */
    CHECK_EQ_INT(runner_copy_from_device(r, ch.t[F], dev_f, 256 * 4), PTO_OK);
    CHECK(chain_matches_reference(&ch));
    runner_device_free(r, dev_b);
    runner_device_free(r, dev_f);
    chain_free(&ch);
    release_callable(r, c);
    free(bytes);
    runner_destroy(r);
}

/* ---- the bridge across bind: open while the orchestration runs, closed after ------------ */

static struct {
    int calls;
    int fail_at;              /* the call (1-based) that fails; 0 none */
    const RuntimeCallable *c;
    const HostApi *bound;     /* the HostApi bind was given */
    int latched_ok;           /* the bridge held `bound` when the heap view was registered */
    int registered;
} fi;

static int fi_fails(void)
{
    return ++fi.calls == fi.fail_at;
}

static int fi_copy_to_device(void *r, void *dev, const void *host, size_t n)
{
    return fi_fails() ? PTO_ERR_DEVICE : host_api_ops.copy_to_device(r, dev, host, n);
}
static int fi_copy_from_device(void *r, void *host, const void *dev, size_t n)
{
    return fi_fails() ? PTO_ERR_DEVICE : host_api_ops.copy_from_device(r, host, dev, n);
}
static void *fi_register(void *r, void *dev, size_t n)
{
    fi.registered++;
    fi.latched_ok += test_slot_scratch(r, 0)->bridge.api == fi.bound;
    return fi_fails() ? NULL : host_api_ops.register_device_memory_to_host(r, dev, n);
}
static int fi_unregister(void *r, void *dev)
{
    return fi_fails() ? PTO_ERR_DEVICE : host_api_ops.unregister_device_memory_from_host(r, dev);
}
static int fi_memset(void *r, void *dev, int v, size_t n)
{
    return fi_fails() ? PTO_ERR_DEVICE : host_api_ops.device_memset(r, dev, v, n);
}
static int fi_setup(void *r, uint32_t bank, size_t a, size_t b, size_t c)
{
    return fi_fails() ? PTO_ERR_OUT_OF_MEMORY : host_api_ops.setup_static_arena(r, bank, a, b, c);
}
static void *fi_heap(void *r, uint32_t bank, size_t *size)
{
    return fi_fails() ? NULL : host_api_ops.acquire_pooled_gm_heap(r, bank, size);
}
static void *fi_sm(void *r, uint32_t bank, size_t *size)
{
    return fi_fails() ? NULL : host_api_ops.acquire_pooled_gm_sm(r, bank, size);
}
static void *fi_arena(void *r, uint32_t bank, size_t *size)
{
    return fi_fails() ? NULL : host_api_ops.acquire_pooled_runtime_arena(r, bank, size);
}

TEST(bind_closes_the_bridge_on_success_and_on_every_failing_path)
{
    Runner *r = test_sim_runner();
    uint32_t size;
    uint8_t *bytes = chain_callable(64, 0, &size);
    RuntimeCallable *c = register_callable(r, bytes);
    Chain ch;
    chain_init(&ch, 64, 8);
    CallConfig cfg = test_config(10000);
    CHECK_EQ_INT(test_run(r, c, 0, ch.args, &cfg, NULL), PTO_OK);
    size_t baseline = non_arena_committed(r);

    HostApiOps ops = host_api_ops;
    ops.copy_to_device = fi_copy_to_device;
    ops.copy_from_device = fi_copy_from_device;
    ops.register_device_memory_to_host = fi_register;
    ops.unregister_device_memory_from_host = fi_unregister;
    ops.device_memset = fi_memset;
    ops.setup_static_arena = fi_setup;
    ops.acquire_pooled_gm_heap = fi_heap;
    ops.acquire_pooled_gm_sm = fi_sm;
    ops.acquire_pooled_runtime_arena = fi_arena;
    HostApi api = host_api_bind(r, 0, 0, &ops);
    const HbgBridge *bridge = &test_slot_scratch(r, 0)->bridge;
    /* the bridge is opened by binds that run the orchestration: no replaying here */
    GraphRecorder *recorder = c->recorder;
    c->recorder = NULL;
    int failures = 0, successes = 0;
    for (int k = 1; k < 64; k++) {
        memset(&fi, 0, sizeof fi);
        fi.fail_at = k;
        fi.c = c;
        fi.bound = &api;
        RuntimeRun run;
        memset(&run, 0, sizeof run);
        DeviceLaunch launch;
        int rc = runtime_bind(&run, test_slot_scratch(api.runner, api.pipeline_slot), &api, c, ch.args, &cfg, NULL, &launch);
        CHECK(bridge->api == NULL);
        CHECK_EQ_INT(bridge->count, 0);
        CHECK_EQ_INT(fi.latched_ok, fi.registered);
        CHECK_EQ_INT(non_arena_committed(r), baseline);
        if (rc == PTO_OK) {
            successes++;
            runtime_unbind(&run, &api);
        } else {
            failures++;
        }
        if (fi.calls < k)
            break; /* no call failed: every failure point has been visited */
    }
    CHECK(failures >= 5);
    CHECK(successes >= 2); /* the clean bind, and a failed register (mirrors instead) */
    CHECK_EQ_INT(fi.registered, 1);
    c->recorder = recorder;

    /* a failure inside the orchestration closes it too */
    uint8_t *bad = chain_callable(80, 0, &size);
    RuntimeCallable *cb = register_callable(r, bad);
    check_bind_refused(r, cb, ch.args, "lies outside argument tensor 0");
    release_callable(r, cb);
    free(bad);

    /* and the device still computes */
    CHECK_EQ_INT(test_run(r, c, 0, ch.args, &cfg, NULL), PTO_OK);
    CHECK(chain_matches_reference(&ch));
    chain_free(&ch);
    release_callable(r, c);
    free(bytes);
    runner_destroy(r);
}

/* A run through mirrored regions (no host mapping) computes the same. */
static void *no_mapping(void *r, void *dev, size_t n)
{
    (void)r, (void)dev, (void)n;
    return NULL;
}

TEST(bind_without_a_host_mapping_uses_mirrors_and_still_computes)
{
    Runner *r = test_sim_runner();
    uint32_t size;
    uint8_t *bytes = chain_callable(128, 0, &size);
    RuntimeCallable *c = register_callable(r, bytes);
    Chain ch;
    chain_init(&ch, 128, 31);
    HostApiOps ops = host_api_ops;
    ops.register_device_memory_to_host = no_mapping;
    HostApi api = host_api_bind(r, 0, 0, &ops);
    RuntimeRun run;
    memset(&run, 0, sizeof run);
    DeviceLaunch launch;
    CallConfig cfg = test_config(10000);
    CHECK_EQ_INT(runtime_bind(&run, test_slot_scratch(api.runner, api.pipeline_slot), &api, c, ch.args, &cfg, NULL, &launch), PTO_OK);
    RunExec exec;
    CHECK_EQ_INT(runner_submit(r, &exec, 0, &launch, NULL), PTO_OK);
    int rc = runner_await_device(r, &exec);
    CHECK_EQ_INT(runtime_collect_results(&run, &api, rc), PTO_OK);
    runtime_unbind(&run, &api);
    CHECK(chain_matches_reference(&ch));
    chain_free(&ch);
    release_callable(r, c);
    free(bytes);
    runner_destroy(r);
}
