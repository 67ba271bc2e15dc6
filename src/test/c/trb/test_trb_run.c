/* The trb runtime on the sim platform, end to end below the exported API:
 * register, bind, enqueue with a real launch signal, drain, validate — the
 * orchestration running on the device (library orchestrations here; programs
 * in test_trb_program.c). Built once per arch (trb_tests_a2a3, trb_tests_a5). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/host_api.h"
#include "util/last_error.h"
#include "ptest.h"
#include "test_sim.h"
#include "trb_fixture.h"

enum { A, B, S, P, Q, R, F, CHAIN_TENSORS };

static const uint8_t CHAIN_SIGNATURE[CHAIN_TENSORS] = { PTO_ARG_IN,  PTO_ARG_IN,  PTO_ARG_INOUT, PTO_ARG_OUT,
                                                        PTO_ARG_OUT, PTO_ARG_OUT, PTO_ARG_OUT };

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

static RuntimeCallable *library_callable(Runner *r, const uint8_t *signature, uint32_t n, const char *entry)
{
    uint32_t size;
    uint8_t *bytes = trb_library_callable(signature, n, entry, &size);
    RuntimeCallable *c = trb_register(r, bytes);
    free(bytes);
    return c;
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

TEST(library_chain_matches_the_c_reference_bit_for_bit)
{
    Runner *r = trb_runner();
    RuntimeCallable *c = library_callable(r, CHAIN_SIGNATURE, CHAIN_TENSORS, "trb_orch_chain");
    CHECK(c != NULL);
    CallConfig cfg = test_config(20000);
    const uint32_t sizes[] = { 1, 3, 64, 1000, 100003 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0] && c != NULL; i++) {
        Chain ch;
        chain_init(&ch, sizes[i], (uint32_t)i + 1);
        int rc = test_run(r, c, 0, ch.args, &cfg, NULL);
        if (rc != PTO_OK)
            fprintf(stderr, "chain n=%u: %s\n", sizes[i], pto_last_error());
        CHECK_EQ_INT(rc, PTO_OK);
        CHECK(chain_matches_reference(&ch));
        chain_free(&ch);
    }
    /* the library was loaded on the device once, for all five runs */
    CHECK_EQ_INT(runner_aicpu_dlopen_count(r), 1);
    trb_release(r, c);
    runner_destroy(r);
}

TEST(a_second_callable_with_the_same_library_does_not_load_it_again)
{
    Runner *r = trb_runner();
    RuntimeCallable *c1 = library_callable(r, CHAIN_SIGNATURE, CHAIN_TENSORS, "trb_orch_chain");
    /* same library image, another entry and signature: another callable */
    const uint8_t sig[] = { PTO_ARG_INOUT, PTO_ARG_SCALAR, PTO_ARG_SCALAR, PTO_ARG_SCALAR };
    RuntimeCallable *c2 = library_callable(r, sig, 4, "trb_orch_tiles");
    CallConfig cfg = test_config(20000);
    CHECK_EQ_INT(runner_aicpu_dlopen_count(r), 0);
    Chain ch;
    chain_init(&ch, 100, 3);
    CHECK_EQ_INT(test_run(r, c1, 0, ch.args, &cfg, NULL), PTO_OK);
    CHECK(chain_matches_reference(&ch));
    chain_free(&ch);
    float x[64] = { 0 };
    ChipStorageTaskArgs *a = test_args();
    a->tensor_count = 1;
    a->tensors[0] = test_f32_tensor(x, 64);
    a->scalar_count = 3;
    a->scalars[0] = 10;
    a->scalars[1] = sizeof x; /* one tile */
    CHECK_EQ_INT(test_run(r, c2, 0, a, &cfg, NULL), PTO_OK);
    CHECK(x[0] == 10.0f && x[63] == 10.0f);
    CHECK_EQ_INT(runner_aicpu_dlopen_count(r), 1);
    free(a);
    trb_release(r, c1);
    trb_release(r, c2);
    runner_destroy(r);
}

/* x: `tiles` tiles of 16 floats; `iterations` increments spread round-robin. */
static void run_tiles(Runner *r, RuntimeCallable *c, const CallConfig *cfg, uint32_t tiles, uint32_t iterations,
                      int scoped)
{
    uint32_t n = tiles * 16;
    float *x = malloc(n * sizeof(float));
    for (uint32_t i = 0; i < n; i++)
        x[i] = (float)i;
    ChipStorageTaskArgs *a = test_args();
    a->tensor_count = 1;
    a->tensors[0] = test_f32_tensor(x, n);
    a->scalar_count = 3;
    a->scalars[0] = iterations;
    a->scalars[1] = 16 * sizeof(float);
    a->scalars[2] = (uint64_t)scoped;
    int rc = test_run(r, c, 0, a, cfg, NULL);
    if (rc != PTO_OK)
        fprintf(stderr, "tiles: %s\n", pto_last_error());
    CHECK_EQ_INT(rc, PTO_OK);
    int good = 1;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t tile = i / 16;
        uint32_t adds = iterations / tiles + (tile < iterations % tiles);
        good &= x[i] == (float)i + (float)adds;
    }
    CHECK(good);
    free(a);
    free(x);
}

TEST(a_thousand_tasks_complete_through_rings_of_four_slots)
{
    Runner *r = trb_runner();
    const uint8_t sig[] = { PTO_ARG_INOUT, PTO_ARG_SCALAR, PTO_ARG_SCALAR, PTO_ARG_SCALAR };
    RuntimeCallable *c = library_callable(r, sig, 4, "trb_orch_tiles");
    CallConfig cfg = tiny_rings();
    run_tiles(r, c, &cfg, 8, 1000, 0);
    run_tiles(r, c, &cfg, 3, 1000, 0);
    /* 2000 tasks, each iteration's local in the scope's 1024-byte ring heap */
    run_tiles(r, c, &cfg, 8, 1000, 1);
    trb_release(r, c);
    runner_destroy(r);
}

TEST(back_pressure_completes_on_a_single_device_thread)
{
    setenv("PTORUN_SIM_DEVICE_THREADS", "1", 1);
    Runner *r = trb_runner();
    unsetenv("PTORUN_SIM_DEVICE_THREADS");
    const uint8_t sig[] = { PTO_ARG_INOUT, PTO_ARG_SCALAR, PTO_ARG_SCALAR, PTO_ARG_SCALAR };
    RuntimeCallable *c = library_callable(r, sig, 4, "trb_orch_tiles");
    CallConfig cfg = tiny_rings();
    run_tiles(r, c, &cfg, 5, 300, 0);
    run_tiles(r, c, &cfg, 5, 300, 1);
    trb_release(r, c);
    runner_destroy(r);
}

static int run_fan_in(Runner *r, RuntimeCallable *c, const CallConfig *cfg, uint32_t k, float *y)
{
    float x[8];
    ChipStorageTaskArgs *a = test_args();
    a->tensor_count = 2;
    a->tensors[0] = test_f32_tensor(x, 8);
    a->tensors[1] = test_f32_tensor(y, 8);
    a->scalar_count = 1;
    a->scalars[0] = k;
    int rc = test_run(r, c, 0, a, cfg, NULL);
    free(a);
    return rc;
}

TEST(more_producers_than_the_dependency_pool_is_a_capacity_error)
{
    Runner *r = trb_runner();
    const uint8_t sig[] = { PTO_ARG_OUT, PTO_ARG_OUT, PTO_ARG_SCALAR };
    RuntimeCallable *c = library_callable(r, sig, 3, "trb_orch_fan_in");
    CallConfig cfg = tiny_rings();
    float y[8] = { -1, -1, -1, -1, -1, -1, -1, -1 };
    CHECK_EQ_INT(run_fan_in(r, c, &cfg, 4, y), PTO_OK);
    CHECK(y[0] == 0.0f && y[3] == 3.0f && y[4] == 0.0f);
    float z[8] = { -1, -1, -1, -1, -1, -1, -1, -1 };
    /* the library returns the submit's code: hbg's rule makes that ORCHESTRATION */
    CHECK_EQ_INT(run_fan_in(r, c, &cfg, 5, z), PTO_ERR_ORCHESTRATION);
    CHECK_CONTAINS(pto_last_error(), "orchestration 'trb_orch_fan_in' returned -13: submit (func_id 4)");
    CHECK_CONTAINS(pto_last_error(), "more than 4 producers");
    CHECK_CONTAINS(pto_last_error(), "ring_dep_pool[0]");
    CHECK(z[0] == -1.0f); /* a failed run copies nothing back */
    /* and the device runs the next run */
    CHECK_EQ_INT(run_fan_in(r, c, &cfg, 3, y), PTO_OK);
    trb_release(r, c);
    runner_destroy(r);
}

/* The library ignores a failed alloc_tensor and returns 0: the call's own code. */
static int run_alloc(Runner *r, RuntimeCallable *c, const CallConfig *cfg, uint64_t bytes, uint64_t depth)
{
    ChipStorageTaskArgs *a = test_args();
    a->scalar_count = 3;
    a->scalars[0] = bytes;
    a->scalars[1] = depth;
    a->scalars[2] = 1;
    int rc = test_run(r, c, 0, a, cfg, NULL);
    free(a);
    return rc;
}

TEST(a_tensor_larger_than_its_ring_heap_is_a_capacity_error)
{
    Runner *r = trb_runner();
    const uint8_t sig[] = { PTO_ARG_SCALAR, PTO_ARG_SCALAR, PTO_ARG_SCALAR };
    RuntimeCallable *c = library_callable(r, sig, 3, "trb_orch_alloc");
    CallConfig cfg = tiny_rings();
    cfg.ring_heap[2] = 4096;
    CHECK_EQ_INT(run_alloc(r, c, &cfg, 1024, 1), PTO_OK);   /* exactly the heap */
    CHECK_EQ_INT(run_alloc(r, c, &cfg, 1025, 1), PTO_ERR_CAPACITY);
    CHECK_CONTAINS(pto_last_error(), "orchestration 'trb_orch_alloc' returned 0 after a failed call: alloc_tensor: "
                                     "1025 bytes can never fit ring 1's heap of 1024 bytes");
    CHECK_EQ_INT(run_alloc(r, c, &cfg, 4000, 2), PTO_OK);   /* ring 2 is larger */
    CHECK_EQ_INT(run_alloc(r, c, &cfg, 4000, 5), PTO_ERR_CAPACITY); /* depth 5 uses ring 3 */
    CHECK_CONTAINS(pto_last_error(), "ring 3");
    CHECK_EQ_INT(run_alloc(r, c, &cfg, 0, 0), PTO_OK);
    trb_release(r, c);
    runner_destroy(r);
}

TEST(a_kernel_fault_names_the_task_and_func_id_and_copies_nothing_back)
{
    Runner *r = trb_runner();
    const uint8_t sig[] = { PTO_ARG_OUT, PTO_ARG_OUT };
    RuntimeCallable *c = library_callable(r, sig, 2, "trb_orch_fault");
    CallConfig cfg = tiny_rings();
    float x[16], y[16];
    for (int i = 0; i < 16; i++)
        x[i] = y[i] = -5.0f;
    ChipStorageTaskArgs *a = test_args();
    a->tensor_count = 2;
    a->tensors[0] = test_f32_tensor(x, 16);
    a->tensors[1] = test_f32_tensor(y, 16);
    int exec_rc = 0;
    CHECK_EQ_INT(test_run(r, c, 0, a, &cfg, &exec_rc), PTO_ERR_KERNEL_FAULT);
    CHECK_EQ_INT(exec_rc, PTO_ERR_KERNEL_FAULT);
    CHECK_CONTAINS(pto_last_error(), "kernel fault: task 1 (func_id 2, kernel 'vadds') returned 2");
    CHECK(x[0] == -5.0f && y[0] == -5.0f);
    free(a);
    trb_release(r, c);

    /* the device runs the next run correctly */
    RuntimeCallable *chain = library_callable(r, CHAIN_SIGNATURE, CHAIN_TENSORS, "trb_orch_chain");
    Chain ch;
    chain_init(&ch, 500, 9);
    CHECK_EQ_INT(test_run(r, chain, 0, ch.args, &cfg, NULL), PTO_OK);
    CHECK(chain_matches_reference(&ch));
    chain_free(&ch);
    trb_release(r, chain);
    runner_destroy(r);
}

TEST(orchestration_failures_are_named)
{
    Runner *r = trb_runner();
    CallConfig cfg = test_config(20000);
    ChipStorageTaskArgs *a = test_args();
    struct { const char *entry; int code; const char *says; } cases[] = {
        { "trb_orch_returns_7", PTO_ERR_ORCHESTRATION, "orchestration 'trb_orch_returns_7' returned 7" },
        { "trb_orch_unbalanced", PTO_ERR_ORCHESTRATION, "returned with 1 scope(s) still open" },
        { "trb_orch_stray_view", PTO_ERR_ORCHESTRATION, "returned -14: submit (func_id 5): param 0 view" },
        { "trb_orch_no_such_entry", PTO_ERR_BAD_CALLABLE, "exports no entry 'trb_orch_no_such_entry'" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        RuntimeCallable *c = library_callable(r, NULL, 0, cases[i].entry);
        CHECK_EQ_INT(test_run(r, c, 0, a, &cfg, NULL), cases[i].code);
        CHECK_CONTAINS(pto_last_error(), cases[i].says);
        trb_release(r, c);
    }
    RuntimeCallable *c = library_callable(r, NULL, 0, "trb_orch_nothing");
    CHECK_EQ_INT(test_run(r, c, 0, a, &cfg, NULL), PTO_OK);
    trb_release(r, c);
    free(a);
    runner_destroy(r);
}

TEST(a_run_with_no_task_completes_at_once)
{
    Runner *r = trb_runner();
    const uint8_t sig[] = { PTO_ARG_SCALAR };
    RuntimeCallable *c = library_callable(r, sig, 1, "trb_orch_noops");
    ChipStorageTaskArgs *a = test_args();
    a->scalar_count = 1;
    CallConfig cfg = tiny_rings();
    for (int i = 0; i < 50; i++)
        CHECK_EQ_INT(test_run(r, c, 0, a, &cfg, NULL), PTO_OK);
    a->scalars[0] = 5000; /* and many noop tasks through 4-slot windows */
    CHECK_EQ_INT(test_run(r, c, 0, a, &cfg, NULL), PTO_OK);
    free(a);
    trb_release(r, c);
    runner_destroy(r);
}

TEST(read_tensor_decides_what_to_submit)
{
    Runner *r = trb_runner();
    const uint8_t sig[] = { PTO_ARG_IN, PTO_ARG_INOUT };
    RuntimeCallable *c = library_callable(r, sig, 2, "trb_orch_read_control");
    CallConfig cfg = test_config(20000);
    int32_t count = 6;
    float x[32] = { 0 };
    ChipStorageTaskArgs *a = test_args();
    a->tensor_count = 2;
    a->tensors[0] = test_f32_tensor((float *)&count, 1);
    a->tensors[0].dtype = PTO_DTYPE_I32;
    a->tensors[1] = test_f32_tensor(x, 32);
    CHECK_EQ_INT(test_run(r, c, 0, a, &cfg, NULL), PTO_OK);
    CHECK(x[0] == 6.0f && x[31] == 6.0f);
    count = 0;
    CHECK_EQ_INT(test_run(r, c, 0, a, &cfg, NULL), PTO_OK);
    CHECK(x[0] == 6.0f);
    free(a);
    trb_release(r, c);
    runner_destroy(r);
}

TEST(read_tensor_waits_for_the_producer_and_write_tensor_reaches_the_tensor)
{
    Runner *r = trb_runner();
    const uint8_t sig[] = { PTO_ARG_OUT, PTO_ARG_OUT };
    RuntimeCallable *c = library_callable(r, sig, 2, "trb_orch_read_after_write");
    CallConfig cfg = test_config(20000);
    for (int round = 0; round < 20; round++) {
        float x[4096], y[4];
        ChipStorageTaskArgs *a = test_args();
        a->tensor_count = 2;
        a->tensors[0] = test_f32_tensor(x, 4096);
        a->tensors[1] = test_f32_tensor(y, 4);
        CHECK_EQ_INT(test_run(r, c, 0, a, &cfg, NULL), PTO_OK);
        CHECK(x[0] == 7.0f && x[1] == 3.0f && x[2] == 7.0f && x[4095] == 7.0f);
        CHECK(y[0] == 8.0f && y[3] == 8.0f);
        free(a);
    }
    trb_release(r, c);
    runner_destroy(r);
}
