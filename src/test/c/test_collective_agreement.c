/* The collectives' agreement check (kernels_collective.c): ranks that pass a
 * different element count, dtype, offset, root or collective each fail with
 * PTO_KERNEL_ERR_RANKS_DISAGREE and the same message, no window or output byte
 * changes, the domain is not broken, and a following agreeing collective on
 * the same domain succeeds bit-exactly. Threads as ranks (test_collective.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device/pto_builtin_kernels.h"
#include "ptest.h"
#include "test_collective.h"

/* What one rank does in a disagreement test: its own kernel and arguments. */
typedef struct Call {
    PtoKernelFn fn;
    uint32_t nargs;
    uint64_t args[3], sizes[3];
    PtoTensorView views[3];
    int strided;
    int no_message; /* a caller that gives the kernel no message channel */
    char message[PTO_KERNEL_MESSAGE_BYTES];
} Call;

typedef struct Plan {
    Call call[MAX_R];
} Plan;

static int32_t body_planned(RankCall *c)
{
    Call *k = &((Plan *)c->arg)->call[c->rank];
    PtoKernelContext kc = { .core_type = PTO_CORE_AIV, .block_dim = 1, .arg_sizes = k->sizes,
                            .views = k->strided ? k->views : NULL, .message = k->no_message ? NULL : k->message,
                            .message_bytes = k->no_message ? 0 : sizeof k->message };
    if (!k->no_message)
        k->message[0] = '\0';
    return k->fn(k->args, k->nargs, &kc);
}

static void allreduce_call(Call *k, Domain *d, uint32_t r, uint64_t off, uint64_t n)
{
    *k = (Call){ .fn = fn_allreduce, .nargs = 2 };
    k->args[0] = P(d->windows[r] + off);
    k->args[1] = P(&d->ctx[r]);
    k->sizes[0] = n * 4;
}

/* Snapshots of every window and signal-free state to prove nothing moved. */
typedef struct Snapshot {
    char *windows[MAX_R];
} Snapshot;

static void snap(const Domain *d, Snapshot *s)
{
    for (uint32_t r = 0; r < d->nr; r++) {
        s->windows[r] = malloc(d->window_size);
        memcpy(s->windows[r], d->windows[r], d->window_size);
    }
}

static int unchanged(const Domain *d, Snapshot *s)
{
    int same = 1;
    for (uint32_t r = 0; r < d->nr; r++) {
        same &= memcmp(s->windows[r], d->windows[r], d->window_size) == 0;
        free(s->windows[r]);
    }
    return same;
}

/* Runs the plan; every rank must fail with RANKS_DISAGREE and `want` as its
   message, nothing may change, and the domain must not be broken. */
static void expect_disagreement(Domain *d, Plan *plan, const char *want)
{
    Snapshot s;
    snap(d, &s);
    RankCall calls[MAX_R];
    run_ranks(d, body_planned, plan, 0, calls);
    for (uint32_t r = 0; r < d->nr; r++) {
        CHECK_EQ_INT(calls[r].rc, PTO_KERNEL_ERR_RANKS_DISAGREE);
        CHECK_CONTAINS(plan->call[r].message, want);
        CHECK(strcmp(plan->call[r].message, want) == 0);
        CHECK_EQ_INT(__atomic_load_n(&d->signals[r][PTO_COMM_SIG_BROKEN], __ATOMIC_SEQ_CST), 0);
        /* both counters consumed once, like any call */
        CHECK_EQ_INT(d->signals[r][PTO_COMM_SIG_COUNTERS], d->signals[0][PTO_COMM_SIG_COUNTERS]);
        CHECK_EQ_INT(d->signals[r][PTO_COMM_SIG_COUNTERS + 1], d->signals[0][PTO_COMM_SIG_COUNTERS + 1]);
    }
    CHECK(unchanged(d, &s));
}

/* An agreeing allreduce_sum of n elements at X_OFF afterwards: bit-exact. */
static void expect_agreeing_allreduce(Domain *d, uint64_t n, uint32_t seed)
{
    float *xs[MAX_R];
    fill_inputs(d, n, xs, seed);
    float *want = malloc(n * 4 + 4);
    ref_sum(want, xs, d->nr, 0, n);
    Job j = { .n = n };
    RankCall calls[MAX_R];
    run_ranks(d, body_allreduce, &j, 0, calls);
    CHECK(all_ok(calls, d->nr));
    for (uint32_t r = 0; r < d->nr; r++)
        CHECK(same_f32(x_of(d, r), want, n));
    free(want);
    free_all(xs, d->nr);
}

TEST(collective_allreduce_counts_that_differ_fail_every_rank_alike_and_move_nothing)
{
    REQUIRE(load_kernels());
    Domain d;
    domain_init(&d, 3, 8192, 5000);
    float *xs[MAX_R];
    fill_inputs(&d, 1001, xs, 7);
    Plan plan;
    const uint64_t counts[3] = { 1001, 1000, 1001 };
    for (uint32_t r = 0; r < 3; r++)
        allreduce_call(&plan.call[r], &d, r, X_OFF, counts[r]);
    expect_disagreement(&d, &plan,
                        "allreduce_sum: the ranks disagree on the element count: rank 1 has 1000, the others 1001 "
                        "(rank 0 1001, rank 1 1000, rank 2 1001)");
    expect_agreeing_allreduce(&d, 1001, 8);
    free_all(xs, 3);
    domain_free(&d);
}

TEST(collective_allreduce_dtypes_that_differ_fail_every_rank_alike)
{
    REQUIRE(load_kernels());
    Domain d;
    domain_init(&d, 2, 4096, 5000);
    Plan plan;
    for (uint32_t r = 0; r < 2; r++) {
        allreduce_call(&plan.call[r], &d, r, X_OFF, 64);
        plan.call[r].strided = 1;
        plan.call[r].views[0] = kv_view(d.windows[r] + X_OFF, r == 0 ? PTO_DTYPE_F32 : PTO_DTYPE_I32, 1,
                                        (uint64_t)64, (uint64_t)1);
    }
    expect_disagreement(&d, &plan,
                        "allreduce_sum: the ranks disagree on the dtype: rank 1 has i32, the others f32 "
                        "(rank 0 f32, rank 1 i32)");
    expect_agreeing_allreduce(&d, 64, 9);
    domain_free(&d);
}

TEST(collective_allgather_counts_that_differ_fail_and_write_no_output)
{
    REQUIRE(load_kernels());
    Domain d;
    domain_init(&d, 2, 4096, 5000);
    float *xs[MAX_R];
    fill_inputs(&d, 32, xs, 3);
    float *out[2];
    Plan plan;
    for (uint32_t r = 0; r < 2; r++) {
        uint64_t n = r == 0 ? 32 : 16;
        out[r] = calloc(2 * 32, 4);
        plan.call[r] = (Call){ .fn = fn_allgather, .nargs = 3 };
        plan.call[r].args[0] = P(x_of(&d, r));
        plan.call[r].args[1] = P(out[r]);
        plan.call[r].args[2] = P(&d.ctx[r]);
        plan.call[r].sizes[0] = n * 4;
        plan.call[r].sizes[1] = n * 4 * 2;
    }
    expect_disagreement(&d, &plan,
                        "allgather: the ranks disagree on the element count: rank 1 has 16, the others 32 "
                        "(rank 0 32, rank 1 16)");
    for (uint32_t r = 0; r < 2; r++) {
        for (uint32_t i = 0; i < 64; i++)
            CHECK_EQ_INT(fbits(out[r][i]), 0);
        free(out[r]);
    }
    expect_agreeing_allreduce(&d, 32, 4);
    free_all(xs, 2);
    domain_free(&d);
}

TEST(collective_reduce_scatter_offsets_that_differ_fail_and_write_no_output)
{
    REQUIRE(load_kernels());
    Domain d;
    domain_init(&d, 3, 4096, 5000);
    float *xs[MAX_R];
    fill_inputs(&d, 30, xs, 5);
    float *out[3];
    Plan plan;
    for (uint32_t r = 0; r < 3; r++) {
        uint64_t off = r == 2 ? X_OFF + 64 : X_OFF;
        out[r] = calloc(10, 4);
        plan.call[r] = (Call){ .fn = fn_reduce_scatter, .nargs = 3 };
        plan.call[r].args[0] = P(d.windows[r] + off);
        plan.call[r].args[1] = P(out[r]);
        plan.call[r].args[2] = P(&d.ctx[r]);
        plan.call[r].sizes[0] = 30 * 4;
        plan.call[r].sizes[1] = 10 * 4;
    }
    expect_disagreement(&d, &plan,
                        "reduce_scatter: the ranks disagree on the data offset in the window: rank 2 has 256, the "
                        "others 192 (rank 0 192, rank 1 192, rank 2 256)");
    for (uint32_t r = 0; r < 3; r++) {
        for (uint32_t i = 0; i < 10; i++)
            CHECK_EQ_INT(fbits(out[r][i]), 0);
        free(out[r]);
    }
    expect_agreeing_allreduce(&d, 30, 6);
    free_all(xs, 3);
    domain_free(&d);
}

TEST(collective_broadcast_roots_that_differ_fail_every_rank_alike)
{
    REQUIRE(load_kernels());
    Domain d;
    domain_init(&d, 2, 4096, 5000);
    float *xs[MAX_R];
    fill_inputs(&d, 40, xs, 11);
    Plan plan;
    for (uint32_t r = 0; r < 2; r++) {
        plan.call[r] = (Call){ .fn = fn_broadcast, .nargs = 3 };
        plan.call[r].args[0] = P(x_of(&d, r));
        plan.call[r].args[1] = P(&d.ctx[r]);
        plan.call[r].args[2] = r; /* each rank names itself the root */
        plan.call[r].sizes[0] = 40 * 4;
    }
    /* two ranks, two values: the tie goes to rank 0's, so rank 1 is the odd one */
    expect_disagreement(&d, &plan,
                        "broadcast: the ranks disagree on the root: rank 1 has 1, the others 0 (rank 0 0, rank 1 1)");
    expect_agreeing_allreduce(&d, 40, 12);
    free_all(xs, 2);
    domain_free(&d);
}

TEST(collective_different_collectives_on_one_domain_fail_every_rank_alike)
{
    REQUIRE(load_kernels());
    Domain d;
    domain_init(&d, 3, 4096, 5000);
    float *xs[MAX_R];
    fill_inputs(&d, 24, xs, 13);
    Plan plan;
    for (uint32_t r = 0; r < 3; r++)
        allreduce_call(&plan.call[r], &d, r, X_OFF, 24);
    plan.call[0] = (Call){ .fn = fn_broadcast, .nargs = 3 };
    plan.call[0].args[0] = P(x_of(&d, 0));
    plan.call[0].args[1] = P(&d.ctx[0]);
    plan.call[0].sizes[0] = 24 * 4;
    expect_disagreement(&d, &plan,
                        "collective: the ranks disagree on the collective: rank 0 has broadcast, the others "
                        "allreduce_sum (rank 0 broadcast, rank 1 allreduce_sum, rank 2 allreduce_sum)");
    expect_agreeing_allreduce(&d, 24, 14);
    free_all(xs, 3);
    domain_free(&d);
}

TEST(collective_many_disagreements_in_a_row_keep_the_domain_usable)
{
    REQUIRE(load_kernels());
    Domain d;
    domain_init(&d, 3, 8192, 5000);
    float *xs[MAX_R];
    fill_inputs(&d, 100, xs, 15);
    for (int round = 0; round < 20; round++) {
        Plan plan;
        for (uint32_t r = 0; r < 3; r++)
            allreduce_call(&plan.call[r], &d, r, X_OFF, r == (uint32_t)round % 3 ? 99 : 100);
        RankCall calls[MAX_R];
        run_ranks(&d, body_planned, &plan, 0, calls);
        for (uint32_t r = 0; r < 3; r++) {
            CHECK_EQ_INT(calls[r].rc, PTO_KERNEL_ERR_RANKS_DISAGREE);
            CHECK(strcmp(plan.call[r].message, plan.call[0].message) == 0);
        }
    }
    expect_agreeing_allreduce(&d, 100, 16);
    free_all(xs, 3);
    domain_free(&d);
}

TEST(collective_a_disagreement_without_a_message_channel_still_fails_alike)
{
    REQUIRE(load_kernels());
    Domain d;
    domain_init(&d, 2, 4096, 5000);
    Job j = { .n = 8 };
    RankCall calls[MAX_R];
    float *xs[MAX_R];
    fill_inputs(&d, 8, xs, 17);
    Plan plan;
    allreduce_call(&plan.call[0], &d, 0, X_OFF, 8);
    allreduce_call(&plan.call[1], &d, 1, X_OFF, 7);
    plan.call[0].no_message = plan.call[1].no_message = 1;
    plan.call[0].message[0] = plan.call[1].message[0] = 'x'; /* must stay untouched */
    run_ranks(&d, body_planned, &plan, 0, calls);
    CHECK_EQ_INT(calls[0].rc, PTO_KERNEL_ERR_RANKS_DISAGREE);
    CHECK_EQ_INT(calls[1].rc, PTO_KERNEL_ERR_RANKS_DISAGREE);
    CHECK(plan.call[0].message[0] == 'x' && plan.call[1].message[0] == 'x');
    run_ranks(&d, body_allreduce, &j, 0, calls);
    CHECK(all_ok(calls, 2));
    free_all(xs, 2);
    domain_free(&d);
}
