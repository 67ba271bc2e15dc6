/* The sub-graph layer below any runtime (orch/subgraph.h): what it hands a
 * runtime's submit for each invocation — the entry, the bound tasks with their
 * recorded producers, the exit — written as text by a fake runtime and compared
 * with the expected text; a sub-graph past the run's budget gives the same text
 * as a kept one; the inference inside a body follows the runtimes' rule. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "orch/subgraph.h"
#include "ptorun/chip_callable.h"
#include "util/last_error.h"
#include "ptest.h"

#define BLOCK_ADDR 0x700000ull

typedef struct FakeRun {
    char log[8192];
    size_t at;
    uint64_t tasks;
    int scopes, allocs;
    int body_calls;
} FakeRun;

static void say(FakeRun *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    r->at += (size_t)vsnprintf(r->log + r->at, sizeof r->log - r->at, fmt, ap);
    va_end(ap);
}

/* One line per task: its handle, func_id (-1 the entry or exit), flags, params, producers. */
static int fake_task(void *run, uint32_t func_id, const PtoTaskParam *params, uint32_t n, const uint64_t *preds,
                     uint32_t n_preds, uint32_t flags, const uint32_t *origins, uint64_t *handle)
{
    (void)origins;
    FakeRun *r = run;
    *handle = r->tasks++;
    say(r, "t%llu f%d flags %u", (unsigned long long)*handle,
        func_id == SUBGRAPH_BOUNDARY_FUNC ? -1 : (int)func_id, flags);
    for (uint32_t i = 0; i < n; i++) {
        if (params[i].direction == PTO_ARG_SCALAR)
            say(r, " s%llu", (unsigned long long)params[i].value);
        else
            say(r, " [%#llx+%llu]", (unsigned long long)params[i].value, (unsigned long long)params[i].bytes);
    }
    say(r, " after");
    for (uint32_t i = 0; i < n_preds; i++)
        say(r, " t%llu", (unsigned long long)preds[i]);
    say(r, "\n");
    return PTO_OK;
}

static int fake_scope_begin(void *orch)
{
    ((FakeRun *)orch)->scopes++;
    return PTO_OK;
}

static int fake_scope_end(void *orch)
{
    ((FakeRun *)orch)->scopes--;
    return PTO_OK;
}

static uint64_t fake_alloc(void *orch, uint64_t bytes)
{
    (void)bytes;
    ((FakeRun *)orch)->allocs++;
    return BLOCK_ADDR;
}

static const PtoOrchApi fake_api = { .scope_begin = fake_scope_begin, .scope_end = fake_scope_end,
                                     .alloc_tensor = fake_alloc };

static PtoTaskParam flat(uint32_t direction, uint64_t addr, uint64_t bytes)
{
    return (PtoTaskParam){ .direction = direction, .value = addr, .bytes = bytes };
}

/* boundary [0] IN a (64 B), [1] INOUT c (64 B), [2] scalar k:
   t0: local L = a * k     (reads a, writes L)
   t1: c += L              (reads L, writes c: after t0)
   t2: reads a only        (no producer inside: after the entry)
   sinks t1, t2 */
static int body_three(const PtoOrchApi *api, void *orch, void *ctx, const PtoTaskParam *b, uint32_t n)
{
    (void)n;
    ((FakeRun *)ctx)->body_calls++;
    uint64_t local = api->alloc_tensor(orch, 64);
    PtoTaskParam p0[3] = { b[0], flat(PTO_ARG_OUT, local, 64), b[2] };
    p0[2].reserved = PTO_SUBGRAPH_REF(2);
    PtoTaskParam p1[2] = { flat(PTO_ARG_IN, local, 64), b[1] };
    PtoTaskParam p2[1] = { b[0] };
    int rc = api->submit(orch, 7, p0, 3);
    if (rc == PTO_OK)
        rc = api->submit(orch, 8, p1, 2);
    return rc == PTO_OK ? api->submit(orch, 9, p2, 1) : rc;
}

static int invoke_three(SubgraphTable *table, FakeRun *r, uint64_t a, uint64_t c, uint64_t k)
{
    PtoTaskParam b[3] = { flat(PTO_ARG_IN, a, 64), flat(PTO_ARG_INOUT, c, 64),
                          { .direction = PTO_ARG_SCALAR, .value = k } };
    return subgraph_invoke(table, fake_task, r, &fake_api, r, 1, body_three, r, b, 3, NULL);
}

static const char THREE[] =
    "t0 f-1 flags 3 [0x1000+64] [0x2000+64] [0x700000+64] after\n"
    "t1 f7 flags 0 [0x1000+64] [0x700000+64] s5 after t0\n"
    "t2 f8 flags 0 [0x700000+64] [0x2000+64] after t1\n"
    "t3 f9 flags 0 [0x1000+64] after t0\n"
    "t4 f-1 flags 2 [0x1000+64] [0x2000+64] [0x700000+64] after t0 t2 t3\n"
    "t5 f-1 flags 3 [0x3000+64] [0x4000+64] [0x700000+64] after\n"
    "t6 f7 flags 0 [0x3000+64] [0x700000+64] s6 after t5\n"
    "t7 f8 flags 0 [0x700000+64] [0x4000+64] after t6\n"
    "t8 f9 flags 0 [0x3000+64] after t5\n"
    "t9 f-1 flags 2 [0x3000+64] [0x4000+64] [0x700000+64] after t5 t7 t8\n";

TEST(an_invocation_is_an_entry_the_bound_tasks_after_their_recorded_producers_and_an_exit)
{
    FakeRun r = { 0 };
    SubgraphTable table = { 0 };
    CHECK_EQ_INT(invoke_three(&table, &r, 0x1000, 0x2000, 5), PTO_OK);
    CHECK_EQ_INT(invoke_three(&table, &r, 0x3000, 0x4000, 6), PTO_OK);
    CHECK_EQ_INT(r.body_calls, 1); /* recorded once, replayed after */
    CHECK_EQ_INT(r.allocs, 2);     /* a block per invocation, in a scope of its own */
    CHECK_EQ_INT(r.scopes, 0);
    if (strcmp(r.log, THREE) != 0) {
        fprintf(stderr, "submitted:\n%sexpected:\n%s", r.log, THREE);
        CHECK(0);
    }
    subgraph_table_clear(&table);
}

TEST(a_sub_graph_past_the_budget_is_recorded_at_each_submission_with_the_same_tasks_and_edges)
{
    FakeRun kept = { 0 }, dropped = { 0 };
    SubgraphTable big = { 0 }, tiny = { .budget = 1 };
    CHECK_EQ_INT(invoke_three(&big, &kept, 0x1000, 0x2000, 5), PTO_OK);
    CHECK_EQ_INT(invoke_three(&big, &kept, 0x3000, 0x4000, 6), PTO_OK);
    CHECK_EQ_INT(invoke_three(&tiny, &dropped, 0x1000, 0x2000, 5), PTO_OK);
    CHECK_EQ_INT(invoke_three(&tiny, &dropped, 0x3000, 0x4000, 6), PTO_OK);
    CHECK_EQ_INT(kept.body_calls, 1);
    CHECK_EQ_INT(dropped.body_calls, 2);
    CHECK(tiny.first == NULL && tiny.bytes == 0);
    CHECK(big.first != NULL && big.bytes > 0);
    CHECK(strcmp(kept.log, dropped.log) == 0);
    subgraph_table_clear(&big);
    subgraph_table_clear(&tiny);
}

/* Writes of c cover earlier accesses as on the runtimes (body task k is t1+k):
   b0 writes c; b1 writes c (after b0, whose access it covers and drops); b2
   reads c (after b1 only); b3 writes the even floats of c, a strided view
   (after b1 and b2; it covers neither); b4 reads the odd floats (after b1,
   not b3: they share no byte); b5 reads all of c (after b1 and b3). Sinks:
   b4, b5. */
static int body_cover(const PtoOrchApi *api, void *orch, void *ctx, const PtoTaskParam *b, uint32_t n)
{
    (void)ctx, (void)n;
    PtoTaskParam w = b[0], r = b[0];
    w.direction = PTO_ARG_OUT;
    r.direction = PTO_ARG_IN;
    PtoTaskParam col0 = { .direction = PTO_ARG_OUT, .value = b[0].value, .bytes = 60,
                          .view = { .addr = b[0].value, .dtype = PTO_DTYPE_F32, .ndims = 2, .shape = { 8, 1 },
                                    .strides = { 2, 1 } } };
    PtoTaskParam col1 = col0;
    col1.direction = PTO_ARG_IN;
    col1.value = col1.view.addr = b[0].value + 4;
    int rc = PTO_OK;
    const PtoTaskParam *ps[6] = { &w, &w, &r, &col0, &col1, &r };
    for (int i = 0; i < 6 && rc == PTO_OK; i++)
        rc = api->submit(orch, (uint32_t)(10 + i), ps[i], 1);
    return rc;
}

TEST(the_inference_inside_a_body_follows_the_runtimes_rule)
{
    FakeRun r = { 0 };
    SubgraphTable table = { 0 };
    PtoTaskParam b[1] = { flat(PTO_ARG_INOUT, 0x1000, 64) };
    CHECK_EQ_INT(subgraph_invoke(&table, fake_task, &r, &fake_api, &r, 2, body_cover, NULL, b, 1, NULL), PTO_OK);
    static const char want[] = "t0 f-1 flags 3 [0x1000+64] after\n"
                               "t1 f10 flags 0 [0x1000+64] after t0\n"
                               "t2 f11 flags 0 [0x1000+64] after t1\n"
                               "t3 f12 flags 0 [0x1000+64] after t2\n"
                               "t4 f13 flags 0 [0x1000+60] after t2 t3\n"
                               "t5 f14 flags 0 [0x1004+60] after t2\n"
                               "t6 f15 flags 0 [0x1000+64] after t2 t4\n"
                               "t7 f-1 flags 2 [0x1000+64] after t0 t5 t6\n";
    if (strcmp(r.log, want) != 0) {
        fprintf(stderr, "submitted:\n%sexpected:\n%s", r.log, want);
        CHECK(0);
    }
    CHECK_EQ_INT(r.scopes, 0);
    CHECK_EQ_INT(r.allocs, 0); /* no tensors of its own: no block, no scope */
    subgraph_table_clear(&table);
}

/* A strided boundary view holds its elements, not every byte of its span:
   the even floats of c are the boundary; the odd ones, between them, are not
   (the entry and exit would not order them), named or found by address. */
static int body_between(const PtoOrchApi *api, void *orch, void *ctx, const PtoTaskParam *b, uint32_t n)
{
    (void)n;
    PtoTaskParam odd = b[0];
    odd.value = odd.view.addr = b[0].value + 4;
    odd.bytes = 52; /* 7 odd floats, 52 bytes of span: inside the even view's 60 */
    odd.view.shape[0] = 7;
    odd.reserved = ctx != NULL ? PTO_SUBGRAPH_REF(0) : 0;
    return api->submit(orch, 3, &odd, 1);
}

TEST(a_view_between_a_strided_boundarys_elements_is_refused)
{
    PtoTaskParam even = { .direction = PTO_ARG_INOUT, .value = 0x1000, .bytes = 60,
                          .view = { .addr = 0x1000, .dtype = PTO_DTYPE_F32, .ndims = 2, .shape = { 8, 1 },
                                    .strides = { 2, 1 } } };
    for (int named = 0; named < 2; named++) {
        FakeRun r = { 0 };
        SubgraphTable table = { 0 };
        int rc = subgraph_invoke(&table, fake_task, &r, &fake_api, &r, 3, body_between, named ? &r : NULL, &even, 1,
                                 NULL);
        CHECK_EQ_INT(rc, PTO_ERR_ORCHESTRATION);
        CHECK(strstr(pto_last_error(), named ? "does not lie inside boundary param 0, which it names"
                                             : "lies inside no boundary view") != NULL);
        CHECK_EQ_INT((int)r.tasks, 0); /* refused while recording: nothing reached the runtime */
        subgraph_table_clear(&table);
    }
}

/* A body whose only tensor is empty still gets a block: its view's address is
   inside the run's memory, not 0 (found by the fuzzer). */
static int body_empty_local(const PtoOrchApi *api, void *orch, void *ctx, const PtoTaskParam *b, uint32_t n)
{
    (void)ctx, (void)n;
    uint64_t local = api->alloc_tensor(orch, 0);
    PtoTaskParam p[2] = { b[0], flat(PTO_ARG_OUT, local, 0) };
    return local == 0 ? -1 : api->submit(orch, 4, p, 2);
}

TEST(a_body_allocating_only_an_empty_tensor_gets_a_block)
{
    FakeRun r = { 0 };
    SubgraphTable table = { 0 };
    PtoTaskParam b[1] = { flat(PTO_ARG_IN, 0x1000, 64) };
    CHECK_EQ_INT(subgraph_invoke(&table, fake_task, &r, &fake_api, &r, 4, body_empty_local, NULL, b, 1, NULL), PTO_OK);
    CHECK_EQ_INT(r.allocs, 1);
    CHECK(strstr(r.log, "t1 f4 flags 0 [0x1000+64] [0x700000+0] after t0\n") != NULL);
    subgraph_table_clear(&table);
}
