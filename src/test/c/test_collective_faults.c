/* The collective kernels' failures (util/comm_signal.h): a rank that never
 * arrives, a peer gone or dead, a rank refusing its arguments, concurrent
 * breaks, bad descriptors and arguments refused with their codes and nothing
 * written, codes that name their rank. Threads as ranks (test_collective.h). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptest.h"
#include "test_collective.h"
#include "util/comm_signal.h"

/* ---- sync failures ---------------------------------------------------------------------- */

static uint32_t broken_word(const Domain *d, uint32_t r)
{
    return __atomic_load_n(&d->signals[r][PTO_COMM_SIG_BROKEN], __ATOMIC_SEQ_CST);
}

TEST(collective_a_rank_that_never_arrives_times_out_naming_it)
{
    REQUIRE(load_kernels());
    /* Two ranks: the one waiting times out itself. */
    Domain d;
    domain_init(&d, 2, X_OFF + 64, 200);
    Job j = { .n = 8 };
    RankCall calls[MAX_R];
    run_ranks(&d, body_allreduce, &j, 1u << 1, calls);
    CHECK_EQ_INT(calls[0].rc, PTO_KERNEL_ERR_COMM_TIMEOUT_BASE + 1);
    CHECK(calls[0].elapsed_ns >= 200000000u);
    CHECK_EQ_INT(broken_word(&d, 0), 2);
    CHECK_EQ_INT(broken_word(&d, 1), 2);
    domain_free(&d);

    /* Four ranks, rank 2 absent: the first to time out breaks the domain naming
       rank 2; the others time out too or see it broken, naming rank 2 either way. */
    domain_init(&d, 4, X_OFF + 64, 200);
    run_ranks(&d, body_allreduce, &j, 1u << 2, calls);
    int timeouts = 0;
    for (uint32_t r = 0; r < 4; r++) {
        if (r == 2)
            continue;
        CHECK(calls[r].rc == PTO_KERNEL_ERR_COMM_TIMEOUT_BASE + 2 || calls[r].rc == PTO_KERNEL_ERR_PEER_LOST_BASE + 2);
        timeouts += calls[r].rc == PTO_KERNEL_ERR_COMM_TIMEOUT_BASE + 2;
        CHECK_EQ_INT(broken_word(&d, r), 3);
    }
    CHECK(timeouts >= 1);
    /* A broken domain fails every later call at once, naming the same rank. */
    run_ranks(&d, body_allreduce, &j, 0, calls);
    for (uint32_t r = 0; r < 4; r++)
        CHECK_EQ_INT(calls[r].rc, PTO_KERNEL_ERR_PEER_LOST_BASE + 2);
    domain_free(&d);
}

TEST(collective_a_peer_that_left_fails_the_others_fast_naming_it)
{
    REQUIRE(load_kernels());
    Domain d;
    domain_init(&d, 3, X_OFF + 64, 20000); /* a pass proves detection, not the timeout */
    d.signals[1][PTO_COMM_SIG_PID] = PTO_COMM_PID_GONE;
    Job j = { .n = 8 };
    RankCall calls[MAX_R];
    run_ranks(&d, body_allreduce, &j, 1u << 1, calls);
    CHECK_EQ_INT(calls[0].rc, PTO_KERNEL_ERR_PEER_LOST_BASE + 1);
    CHECK_EQ_INT(calls[2].rc, PTO_KERNEL_ERR_PEER_LOST_BASE + 1);
    CHECK(calls[0].elapsed_ns < 5000000000u && calls[2].elapsed_ns < 5000000000u);
    domain_free(&d);
}

TEST(collective_a_peer_whose_process_died_fails_the_others_naming_it)
{
    REQUIRE(load_kernels());
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0)
        _exit(0);
    int status;
    REQUIRE(waitpid(child, &status, 0) == child); /* reaped: kill(pid, 0) now fails with ESRCH */
    Domain d;
    domain_init(&d, 3, X_OFF + 64, 20000);
    d.signals[2][PTO_COMM_SIG_PID] = (uint32_t)child;
    Job j = { .n = 8 };
    for (uint32_t r = 0; r < 3; r++)
        j.out[r] = malloc(8 * 4 * 3);
    RankCall calls[MAX_R];
    run_ranks(&d, body_allgather, &j, 1u << 2, calls);
    free_all(j.out, 3);
    CHECK_EQ_INT(calls[0].rc, PTO_KERNEL_ERR_PEER_LOST_BASE + 2);
    CHECK_EQ_INT(calls[1].rc, PTO_KERNEL_ERR_PEER_LOST_BASE + 2);
    domain_free(&d);
}

static float outside_window[8];

/* Rank 1 passes an x outside its window; the others a good one. */
static int32_t body_allreduce_rank1_outside(RankCall *c)
{
    float *x = c->rank == 1 ? outside_window : x_of(c->d, c->rank);
    uint64_t args[] = { P(x), P(&c->d->ctx[c->rank]) }, sizes[] = { 8 * 4, 0 };
    return call_fn(fn_allreduce, 2, args, sizes, NULL);
}

TEST(collective_a_rank_refusing_its_arguments_breaks_the_domain_naming_itself)
{
    REQUIRE(load_kernels());
    Domain d;
    domain_init(&d, 3, X_OFF + 64, 20000); /* the others must not wait this long */
    RankCall calls[MAX_R];
    run_ranks(&d, body_allreduce_rank1_outside, NULL, 0, calls);
    CHECK_EQ_INT(calls[1].rc, PTO_KERNEL_ERR_NOT_IN_WINDOW);
    CHECK_EQ_INT(calls[0].rc, PTO_KERNEL_ERR_PEER_LOST_BASE + 1);
    CHECK_EQ_INT(calls[2].rc, PTO_KERNEL_ERR_PEER_LOST_BASE + 1);
    CHECK(calls[0].elapsed_ns < 5000000000u && calls[2].elapsed_ns < 5000000000u);
    for (uint32_t r = 0; r < 3; r++)
        CHECK_EQ_INT(broken_word(&d, r), 2);
    domain_free(&d);
}

TEST(collective_concurrent_breaks_leave_one_culprit_in_every_block)
{
    Domain d;
    domain_init(&d, 4, 64, 1000);
    pto_comm_break(&d.ctx[3], 1);
    pto_comm_break(&d.ctx[0], 2); /* too late: rank 0's block already names 1 */
    for (uint32_t r = 0; r < 4; r++)
        CHECK_EQ_INT(broken_word(&d, r), 2);
    uint32_t who = 99;
    CHECK_EQ_INT(pto_comm_wait_all(&d.ctx[2], PTO_COMM_SIG_COUNTERS, 0, &who), PTO_COMM_WAIT_BROKEN);
    CHECK_EQ_INT(who, 1);
    domain_free(&d);
}

/* A wait reads a peer's counter, then its PID word: a peer that reached the target
   in between and left did its part. Only a peer still short of the target is lost. */
TEST(collective_a_peer_that_reached_the_target_and_then_left_fails_nobody)
{
    Domain d;
    domain_init(&d, 3, 64, 1000);
    d.signals[1][PTO_COMM_SIG_COUNTERS] = 5;
    d.signals[1][PTO_COMM_SIG_PID] = PTO_COMM_PID_GONE; /* reached 5, then left */
    d.signals[2][PTO_COMM_SIG_COUNTERS] = 4;             /* short, still here */
    const PtoCommWaitArg w = { &d.ctx[0], PTO_COMM_SIG_COUNTERS, 5, 0, 3 };
    CHECK_EQ_INT(pto_comm_lost_peer(&w, 1), 3);
    d.signals[2][PTO_COMM_SIG_PID] = PTO_COMM_PID_GONE; /* short and gone: lost */
    CHECK_EQ_INT(pto_comm_lost_peer(&w, 1), 2);
    const PtoCommWaitArg next = { &d.ctx[0], PTO_COMM_SIG_COUNTERS, 6, 0, 3 };
    CHECK_EQ_INT(pto_comm_lost_peer(&next, 1), 1); /* gone before reaching the next target */
    domain_free(&d);
}

/* ---- refusals: nothing written, codes, and the domain broken naming the caller -------- */

/* Resets every rank's broken word (a refusal breaks the domain). */
static void unbreak(Domain *d)
{
    for (uint32_t r = 0; r < d->nr; r++)
        d->signals[r][PTO_COMM_SIG_BROKEN] = 0;
}

TEST(collective_a_bad_descriptor_is_refused_without_touching_anything)
{
    REQUIRE(load_kernels());
    Domain d;
    domain_init(&d, 2, X_OFF + 64, 1000);
    float *x = x_of(&d, 0);
    fill_rand(x, 8, 5);
    float keep[8];
    memcpy(keep, x, sizeof keep);
    PtoCommDeviceContext bad[8];
    for (int i = 0; i < 8; i++)
        bad[i] = d.ctx[0];
    bad[0].magic ^= 1;
    bad[1].nranks = 0;
    bad[2].nranks = PTO_COMM_MAX_RANKS + 1;
    bad[3].rank = 2;
    bad[4].windows[1] = 0;
    bad[5].signals[1] = 0;
    bad[6].timeout_ms = 0;
    bad[7].signals[0] += 2; /* a signal block's words must be aligned */
    uint64_t sizes[] = { 32, 0, 0 };
    for (int i = 0; i < 9; i++) {
        uint64_t ctx = i < 8 ? P(&bad[i]) : 0;
        uint64_t a1[] = { P(x), ctx };
        CHECK_EQ_INT(call_fn(fn_allreduce, 2, a1, sizes, NULL), PTO_KERNEL_ERR_COMM_CONTEXT);
        uint64_t a2[] = { P(x), ctx, 0 };
        CHECK_EQ_INT(call_fn(fn_broadcast, 3, a2, sizes, NULL), PTO_KERNEL_ERR_COMM_CONTEXT);
        float y[16];
        uint64_t a3[] = { P(x), P(y), ctx }, s3[] = { 32, 64, 0 };
        CHECK_EQ_INT(call_fn(fn_allgather, 3, a3, s3, NULL), PTO_KERNEL_ERR_COMM_CONTEXT);
        CHECK_EQ_INT(call_fn(fn_reduce_scatter, 3, a3, s3, NULL), PTO_KERNEL_ERR_COMM_CONTEXT);
    }
    /* Nothing signalled, nothing broken, x as it was. */
    for (uint32_t r = 0; r < 2; r++)
        for (uint32_t w = 0; w < PTO_COMM_SIGNAL_WORDS; w++)
            if (w != PTO_COMM_SIG_PID)
                CHECK_EQ_INT(d.signals[r][w], 0);
    CHECK(memcmp(x, keep, sizeof keep) == 0);
    domain_free(&d);
}

/* Calls `fn` as rank 0 of d and checks the refusal: the code, the domain
   broken naming rank 0, no counter touched; then repairs the domain. */
static void refused(Domain *d, PtoKernelFn fn, uint32_t nargs, const uint64_t *args, const uint64_t *sizes,
                    const PtoTensorView *views, int32_t code, int line)
{
    int32_t rc = call_fn(fn, nargs, args, sizes, views);
    if (rc != code) {
        char m[128];
        snprintf(m, sizeof m, "line %d: returned %d, expected %d", line, rc, code);
        ptest_record_failure(__FILE__, line, m);
    }
    uint32_t want_broken = code == PTO_KERNEL_ERR_PARAM_COUNT || code == PTO_KERNEL_ERR_COMM_CONTEXT ? 0 : 1;
    if (broken_word(d, 0) != want_broken || broken_word(d, 1) != want_broken)
        ptest_record_failure(__FILE__, line, "the domain's broken words");
    if (d->signals[0][PTO_COMM_SIG_COUNTERS] != 0 || d->signals[0][PTO_COMM_SIG_COUNTERS + 1] != 0)
        ptest_record_failure(__FILE__, line, "a refusal signalled");
    unbreak(d);
}

#define REFUSED(fn, nargs, args, sizes, views, code) refused(&d, fn, nargs, args, sizes, views, code, __LINE__)

TEST(collective_bad_arguments_are_refused_with_their_codes)
{
    REQUIRE(load_kernels());
    Domain d;
    domain_init(&d, 2, X_OFF + 64 * 4, 1000);
    float *x = x_of(&d, 0), y[128], z[128];
    fill_rand(x, 64, 9);
    float keep[64], ykeep[128];
    memcpy(keep, x, sizeof keep);
    memset(y, 0x5a, sizeof y);
    memcpy(ykeep, y, sizeof y);
    uint64_t ctx = P(&d.ctx[0]);

    /* Parameter counts: refused before the descriptor is read. */
    REFUSED(fn_allreduce, 3, ((uint64_t[]){ P(x), ctx, 0 }), ((uint64_t[]){ 256, 0, 0 }), NULL,
            PTO_KERNEL_ERR_PARAM_COUNT);
    REFUSED(fn_allgather, 2, ((uint64_t[]){ P(x), P(y) }), ((uint64_t[]){ 256, 512 }), NULL,
            PTO_KERNEL_ERR_PARAM_COUNT);
    REFUSED(fn_reduce_scatter, 4, ((uint64_t[]){ P(x), P(y), ctx, 0 }), ((uint64_t[]){ 256, 128, 0, 0 }), NULL,
            PTO_KERNEL_ERR_PARAM_COUNT);
    REFUSED(fn_broadcast, 2, ((uint64_t[]){ P(x), ctx }), ((uint64_t[]){ 256, 0 }), NULL,
            PTO_KERNEL_ERR_PARAM_COUNT);

    /* x outside the window: elsewhere, straddling its end. */
    REFUSED(fn_allreduce, 2, ((uint64_t[]){ P(z), ctx }), ((uint64_t[]){ 256, 0 }), NULL,
            PTO_KERNEL_ERR_NOT_IN_WINDOW);
    REFUSED(fn_allreduce, 2, ((uint64_t[]){ P(x), ctx }), ((uint64_t[]){ 256 + 4, 0 }), NULL,
            PTO_KERNEL_ERR_NOT_IN_WINDOW);
    REFUSED(fn_broadcast, 3, ((uint64_t[]){ P(z), ctx, 0 }), ((uint64_t[]){ 256, 0, 0 }), NULL,
            PTO_KERNEL_ERR_NOT_IN_WINDOW);
    REFUSED(fn_allgather, 3, ((uint64_t[]){ P(z), P(y), ctx }), ((uint64_t[]){ 256, 512, 0 }), NULL,
            PTO_KERNEL_ERR_NOT_IN_WINDOW);

    /* Sizes: not whole f32, misaligned, allgather's y not nranks x, reduce_scatter's y not the chunk. */
    REFUSED(fn_allreduce, 2, ((uint64_t[]){ P(x), ctx }), ((uint64_t[]){ 255, 0 }), NULL, PTO_KERNEL_ERR_BAD_SIZE);
    REFUSED(fn_allreduce, 2, ((uint64_t[]){ P(x) + 2, ctx }), ((uint64_t[]){ 8, 0 }), NULL,
            PTO_KERNEL_ERR_MISALIGNED);
    REFUSED(fn_allgather, 3, ((uint64_t[]){ P(x), P(y), ctx }), ((uint64_t[]){ 256, 508, 0 }), NULL,
            PTO_KERNEL_ERR_SHAPE);
    REFUSED(fn_reduce_scatter, 3, ((uint64_t[]){ P(x), P(y), ctx }), ((uint64_t[]){ 256, 132, 0 }), NULL,
            PTO_KERNEL_ERR_SHAPE);
    /* Outputs over an input: own x, the peer's x at the same offset. */
    REFUSED(fn_allgather, 3, ((uint64_t[]){ P(x) + 128, P(x) + 64, ctx }), ((uint64_t[]){ 64, 128, 0 }), NULL,
            PTO_KERNEL_ERR_COMM_OVERLAP);
    REFUSED(fn_reduce_scatter, 3, ((uint64_t[]){ P(x), P(d.windows[1] + X_OFF + 8), ctx }),
            ((uint64_t[]){ 256, 128, 0 }), NULL, PTO_KERNEL_ERR_COMM_OVERLAP);
    /* broadcast's root beyond the domain. */
    REFUSED(fn_broadcast, 3, ((uint64_t[]){ P(x), ctx, 2 }), ((uint64_t[]){ 256, 0, 0 }), NULL,
            PTO_KERNEL_ERR_BAD_SCALAR);

    /* Strided views: f16, a non-dense view, flat and strided mixed, dtypes that differ. */
    PtoTensorView f16[3] = { kv_view(x, PTO_DTYPE_F16, 1, (uint64_t)64, (uint64_t)1) };
    REFUSED(fn_allreduce, 2, ((uint64_t[]){ P(x), ctx }), ((uint64_t[]){ 256, 0 }), f16, PTO_KERNEL_ERR_DTYPE);
    PtoTensorView gaps[3] = { kv_view(x, PTO_DTYPE_F32, 1, (uint64_t)32, (uint64_t)2) };
    REFUSED(fn_allreduce, 2, ((uint64_t[]){ P(x), ctx }), ((uint64_t[]){ 256, 0 }), gaps, PTO_KERNEL_ERR_SHAPE);
    PtoTensorView mixed[3] = { kv_view(x, PTO_DTYPE_F32, 1, (uint64_t)64, (uint64_t)1) };
    REFUSED(fn_allgather, 3, ((uint64_t[]){ P(x), P(y), ctx }), ((uint64_t[]){ 256, 512, 0 }), mixed,
            PTO_KERNEL_ERR_VIEW_KIND);
    PtoTensorView differ[3] = { kv_view(x, PTO_DTYPE_F32, 1, (uint64_t)64, (uint64_t)1),
                                kv_view(y, PTO_DTYPE_I32, 1, (uint64_t)128, (uint64_t)1) };
    REFUSED(fn_allgather, 3, ((uint64_t[]){ P(x), P(y), ctx }), ((uint64_t[]){ 256, 512, 0 }), differ,
            PTO_KERNEL_ERR_DTYPE);

    CHECK(memcmp(x, keep, sizeof keep) == 0);
    CHECK(memcmp(y, ykeep, sizeof y) == 0);
    domain_free(&d);
}

TEST(collective_failure_codes_name_their_rank_in_the_message)
{
    char buf[96];
    CHECK_CONTAINS(pto_kernel_code_describe(PTO_KERNEL_ERR_PEER_LOST_BASE + 3, buf, sizeof buf), "rank 3 is gone");
    CHECK_CONTAINS(pto_kernel_code_describe(PTO_KERNEL_ERR_COMM_TIMEOUT_BASE + 15, buf, sizeof buf),
                   "timed out waiting for rank 15");
    CHECK_CONTAINS(pto_kernel_code_describe(PTO_KERNEL_ERR_NOT_IN_WINDOW, buf, sizeof buf), "window");
    CHECK_CONTAINS(pto_kernel_code_describe(PTO_KERNEL_ERR_PARAM_COUNT, buf, sizeof buf), "parameter count");
    CHECK_CONTAINS(pto_kernel_code_describe(42, buf, sizeof buf), "kernel-specific");
}
