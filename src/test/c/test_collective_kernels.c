/* The collective kernels of the AICore image (allreduce_sum, allgather,
 * reduce_scatter, broadcast) and their device-side sync (util/comm_signal.h),
 * with threads as ranks of one process: a domain is plain malloc'd windows and
 * signal blocks whose PID words are this process. Every result equals a
 * sequential reference summed in rank order, bit for bit; every sync failure
 * names the rank it blames on every rank. Threads meet only through the
 * kernels themselves and pthread_join: no sleeps. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ptest.h"
#include "test_collective.h"
#include "util/comm_signal.h"

static const uint32_t RANK_COUNTS[] = { 1, 2, 3, 4, 16 };

/* n elements for nr ranks: not a multiple of nr, several blocks per chunk for
   the small counts. */
static uint64_t n_for(uint32_t nr)
{
    return nr == 16 ? 5003 : 2600u * nr + 7;
}

TEST(collective_allreduce_sum_matches_the_rank_order_sum_on_every_rank)
{
    REQUIRE(load_kernels());
    for (size_t t = 0; t < sizeof RANK_COUNTS / sizeof *RANK_COUNTS; t++) {
        uint32_t nr = RANK_COUNTS[t];
        uint64_t n = n_for(nr);
        Domain d;
        domain_init(&d, nr, X_OFF + n * 4 + 64, 10000);
        float *xs[MAX_R], *want = malloc(n * 4 + 4);
        fill_inputs(&d, n, xs, nr);
        ref_sum(want, xs, nr, 0, n);
        Job j = { .n = n };
        RankCall calls[MAX_R];
        run_ranks(&d, body_allreduce, &j, 0, calls);
        CHECK(all_ok(calls, nr));
        for (uint32_t r = 0; r < nr; r++)
            CHECK(same_f32(x_of(&d, r), want, n));
        free_all(xs, nr);
        free(want);
        domain_free(&d);
    }
}

TEST(collective_allgather_concatenates_every_rank_s_x_in_rank_order)
{
    REQUIRE(load_kernels());
    for (size_t t = 0; t < sizeof RANK_COUNTS / sizeof *RANK_COUNTS; t++) {
        uint32_t nr = RANK_COUNTS[t];
        uint64_t n = n_for(nr) / 3;
        Domain d;
        domain_init(&d, nr, X_OFF + n * 4 + 64, 10000);
        float *xs[MAX_R];
        fill_inputs(&d, n, xs, 100 + nr);
        Job j = { .n = n };
        for (uint32_t r = 0; r < nr; r++)
            j.out[r] = malloc(n * 4 * nr + 4);
        RankCall calls[MAX_R];
        run_ranks(&d, body_allgather, &j, 0, calls);
        CHECK(all_ok(calls, nr));
        for (uint32_t r = 0; r < nr; r++) {
            for (uint32_t p = 0; p < nr; p++)
                CHECK(same_f32(j.out[r] + p * n, xs[p], n));
            CHECK(same_f32(x_of(&d, r), xs[r], n)); /* x untouched */
        }
        free_all(j.out, nr);
        free_all(xs, nr);
        domain_free(&d);
    }
}

TEST(collective_reduce_scatter_gives_each_rank_its_floor_split_chunk_of_the_sum)
{
    REQUIRE(load_kernels());
    for (size_t t = 0; t < sizeof RANK_COUNTS / sizeof *RANK_COUNTS; t++) {
        uint32_t nr = RANK_COUNTS[t];
        uint64_t n = n_for(nr);
        Domain d;
        domain_init(&d, nr, X_OFF + n * 4 + 64, 10000);
        float *xs[MAX_R], *want = malloc(n * 4 + 4);
        fill_inputs(&d, n, xs, 200 + nr);
        ref_sum(want, xs, nr, 0, n);
        Job j = { .n = n };
        for (uint32_t r = 0; r < nr; r++)
            j.out[r] = malloc(n * 4 + 4);
        RankCall calls[MAX_R];
        run_ranks(&d, body_reduce_scatter, &j, 0, calls);
        CHECK(all_ok(calls, nr));
        for (uint32_t r = 0; r < nr; r++) {
            uint64_t lo = lo_of(n, nr, r), hi = lo_of(n, nr, r + 1);
            CHECK(same_f32(j.out[r], want + lo, hi - lo));
            CHECK(same_f32(x_of(&d, r), xs[r], n));
        }
        free_all(j.out, nr);
        free_all(xs, nr);
        free(want);
        domain_free(&d);
    }
}

TEST(collective_broadcast_copies_the_root_s_x_to_every_rank)
{
    REQUIRE(load_kernels());
    for (size_t t = 0; t < sizeof RANK_COUNTS / sizeof *RANK_COUNTS; t++) {
        uint32_t nr = RANK_COUNTS[t];
        uint64_t n = n_for(nr);
        Domain d;
        domain_init(&d, nr, X_OFF + n * 4 + 64, 10000);
        for (uint32_t root = 0; root < nr; root += (nr > 2 ? nr - 1 : 1)) {
            float *xs[MAX_R];
            fill_inputs(&d, n, xs, 300 + root);
            Job j = { .n = n, .root = root };
            RankCall calls[MAX_R];
            run_ranks(&d, body_broadcast, &j, 0, calls);
            CHECK(all_ok(calls, nr));
            for (uint32_t r = 0; r < nr; r++)
                CHECK(same_f32(x_of(&d, r), xs[root], n));
            free_all(xs, nr);
        }
        domain_free(&d);
    }
}

TEST(collective_empty_tensors_still_sync)
{
    REQUIRE(load_kernels());
    Domain d;
    domain_init(&d, 3, 4096, 10000);
    Job j = { .n = 0 };
    for (uint32_t r = 0; r < 3; r++)
        j.out[r] = malloc(4);
    RankCall calls[MAX_R];
    run_ranks(&d, body_allreduce, &j, 0, calls);
    CHECK(all_ok(calls, 3));
    run_ranks(&d, body_allgather, &j, 0, calls);
    CHECK(all_ok(calls, 3));
    run_ranks(&d, body_reduce_scatter, &j, 0, calls);
    CHECK(all_ok(calls, 3));
    /* Every call consumed one entry and one exit count on every rank. */
    for (uint32_t r = 0; r < 3; r++) {
        CHECK_EQ_INT(d.signals[r][PTO_COMM_SIG_COUNTERS], 3);
        CHECK_EQ_INT(d.signals[r][PTO_COMM_SIG_COUNTERS + 1], 3);
    }
    free_all(j.out, 3);
    domain_free(&d);
}

/* ---- i32 on dense strided views ----------------------------------------------------- */

typedef struct StridedJob {
    uint64_t n;
    uint32_t dtype;
} StridedJob;

static int32_t body_allreduce_strided(RankCall *c)
{
    StridedJob *j = c->arg;
    void *x = x_of(c->d, c->rank);
    /* A 2-D dense view: rows of 5 (n is a multiple of 5). */
    PtoTensorView v[2] = { kv_view(x, j->dtype, 2, j->n / 5, (uint64_t)5, (uint64_t)5, (uint64_t)1) };
    uint64_t args[] = { P(x), P(&c->d->ctx[c->rank]) }, sizes[] = { j->n * 4, 0 };
    return call_fn(fn_allreduce, 2, args, sizes, v);
}

TEST(collective_allreduce_sum_of_i32_on_a_dense_strided_view_wraps)
{
    REQUIRE(load_kernels());
    const uint32_t nr = 3;
    const uint64_t n = 4005;
    Domain d;
    domain_init(&d, nr, X_OFF + n * 4, 10000);
    uint32_t *xs[MAX_R], *want = malloc(n * 4);
    for (uint32_t r = 0; r < nr; r++) {
        xs[r] = malloc(n * 4);
        uint32_t s = 77u + r;
        for (uint64_t i = 0; i < n; i++)
            xs[r][i] = s = s * 1664525u + 1013904223u; /* sums overflow */
        memcpy(x_of(&d, r), xs[r], n * 4);
    }
    for (uint64_t i = 0; i < n; i++)
        want[i] = xs[0][i] + xs[1][i] + xs[2][i];
    StridedJob j = { n, PTO_DTYPE_I32 };
    RankCall calls[MAX_R];
    run_ranks(&d, body_allreduce_strided, &j, 0, calls);
    CHECK(all_ok(calls, nr));
    for (uint32_t r = 0; r < nr; r++)
        CHECK(memcmp(x_of(&d, r), want, n * 4) == 0);
    for (uint32_t r = 0; r < nr; r++)
        free(xs[r]);
    free(want);
    domain_free(&d);
}

/* ---- many calls, mixed collectives: the counters keep every rank in step ------------ */

#define MIX_ITERS 6
#define MIX_N 301u

typedef struct MixJob {
    float *after_allreduce[MAX_R][MIX_ITERS];
    float *gathered[MAX_R][MIX_ITERS];
    float *scattered[MAX_R][MIX_ITERS];
    float *after_broadcast[MAX_R][MIX_ITERS];
    int32_t first_failure[MAX_R];
} MixJob;

static int32_t body_mix(RankCall *c)
{
    MixJob *m = c->arg;
    uint32_t r = c->rank, nr = c->d->nr;
    float *x = x_of(c->d, r);
    uint64_t ctx = P(&c->d->ctx[r]);
    uint64_t chunk = lo_of(MIX_N, nr, r + 1) - lo_of(MIX_N, nr, r);
    for (uint32_t it = 0; it < MIX_ITERS; it++) {
        int32_t rc;
        /* Refilling x is safe: the last call's exit sync means nobody still reads it. */
        fill_rand(x, MIX_N, 1000u * it + r);
        uint64_t a1[] = { P(x), ctx }, s1[] = { MIX_N * 4, 0 };
        if ((rc = call_fn(fn_allreduce, 2, a1, s1, NULL)) != 0)
            return rc;
        memcpy(m->after_allreduce[r][it], x, MIX_N * 4);
        fill_rand(x, MIX_N, 1000u * it + 500u + r);
        uint64_t a2[] = { P(x), P(m->gathered[r][it]), ctx }, s2[] = { MIX_N * 4, MIX_N * 4 * nr, 0 };
        if ((rc = call_fn(fn_allgather, 3, a2, s2, NULL)) != 0)
            return rc;
        uint64_t a3[] = { P(x), P(m->scattered[r][it]), ctx }, s3[] = { MIX_N * 4, chunk * 4, 0 };
        if ((rc = call_fn(fn_reduce_scatter, 3, a3, s3, NULL)) != 0)
            return rc;
        uint64_t a4[] = { P(x), ctx, it % nr }, s4[] = { MIX_N * 4, 0, 0 };
        if ((rc = call_fn(fn_broadcast, 3, a4, s4, NULL)) != 0)
            return rc;
        memcpy(m->after_broadcast[r][it], x, MIX_N * 4);
    }
    return 0;
}

TEST(collective_repeated_mixed_calls_stay_in_step_across_a_counter_wrap)
{
    REQUIRE(load_kernels());
    const uint32_t nr = 3;
    Domain d;
    domain_init(&d, nr, X_OFF + MIX_N * 4, 10000);
    /* Counters close to 2^32: the wait's compare must be wrap-safe. */
    for (uint32_t r = 0; r < nr; r++)
        d.signals[r][PTO_COMM_SIG_COUNTERS] = d.signals[r][PTO_COMM_SIG_COUNTERS + 1] = 0xFFFFFFFDu;
    MixJob *m = calloc(1, sizeof *m);
    for (uint32_t r = 0; r < nr; r++)
        for (uint32_t it = 0; it < MIX_ITERS; it++) {
            m->after_allreduce[r][it] = malloc(MIX_N * 4);
            m->gathered[r][it] = malloc(MIX_N * 4 * nr);
            m->scattered[r][it] = malloc(MIX_N * 4);
            m->after_broadcast[r][it] = malloc(MIX_N * 4);
        }
    RankCall calls[MAX_R];
    run_ranks(&d, body_mix, m, 0, calls);
    CHECK(all_ok(calls, nr));
    float *xs[MAX_R], want[MIX_N];
    for (uint32_t r = 0; r < nr; r++)
        xs[r] = malloc(MIX_N * 4);
    for (uint32_t it = 0; it < MIX_ITERS && all_ok(calls, nr); it++) {
        for (uint32_t r = 0; r < nr; r++)
            fill_rand(xs[r], MIX_N, 1000u * it + r);
        ref_sum(want, xs, nr, 0, MIX_N);
        for (uint32_t r = 0; r < nr; r++)
            CHECK(same_f32(m->after_allreduce[r][it], want, MIX_N));
        for (uint32_t r = 0; r < nr; r++)
            fill_rand(xs[r], MIX_N, 1000u * it + 500u + r);
        ref_sum(want, xs, nr, 0, MIX_N);
        for (uint32_t r = 0; r < nr; r++) {
            for (uint32_t p = 0; p < nr; p++)
                CHECK(same_f32(m->gathered[r][it] + p * MIX_N, xs[p], MIX_N));
            uint64_t lo = lo_of(MIX_N, nr, r), hi = lo_of(MIX_N, nr, r + 1);
            CHECK(same_f32(m->scattered[r][it], want + lo, hi - lo));
            CHECK(same_f32(m->after_broadcast[r][it], xs[it % nr], MIX_N));
        }
    }
    for (uint32_t r = 0; r < nr; r++) {
        CHECK_EQ_INT(d.signals[r][PTO_COMM_SIG_COUNTERS], (uint32_t)(0xFFFFFFFDu + 4 * MIX_ITERS));
        for (uint32_t it = 0; it < MIX_ITERS; it++) {
            free(m->after_allreduce[r][it]);
            free(m->gathered[r][it]);
            free(m->scattered[r][it]);
            free(m->after_broadcast[r][it]);
        }
    }
    free_all(xs, nr);
    free(m);
    domain_free(&d);
}

/* ---- a peer in another process: windows and signal blocks in shared memory ----------- */

TEST(collective_allreduce_sum_with_a_forked_process_as_the_peer)
{
    REQUIRE(load_kernels());
    enum { N = 5000 };
    const size_t window = X_OFF + N * 4, block = PTO_COMM_SIGNAL_WORDS * 4;
    /* Both windows, both signal blocks and the child's result in one shared mapping. */
    char *shm = mmap(NULL, 2 * window + 2 * block + 64, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    REQUIRE(shm != MAP_FAILED);
    Domain d;
    memset(&d, 0, sizeof d);
    d.nr = 2;
    for (uint32_t r = 0; r < 2; r++) {
        d.windows[r] = shm + r * window;
        d.signals[r] = (uint32_t *)(shm + 2 * window + r * block);
    }
    int32_t *child_rc = (int32_t *)(shm + 2 * window + 2 * block);
    *child_rc = -1;
    for (uint32_t r = 0; r < 2; r++) {
        d.ctx[r] = (PtoCommDeviceContext){ .magic = PTO_COMM_CTX_MAGIC, .rank = r, .nranks = 2,
                                           .timeout_ms = 20000, .window_size = window };
        for (uint32_t p = 0; p < 2; p++) {
            d.ctx[r].windows[p] = P(d.windows[p]);
            d.ctx[r].signals[p] = P(d.signals[p]);
        }
    }
    float *xs[2], want[N];
    fill_inputs(&d, N, xs, 77);
    ref_sum(want, xs, 2, 0, N);
    d.signals[0][PTO_COMM_SIG_PID] = (uint32_t)getpid();
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        d.signals[1][PTO_COMM_SIG_PID] = (uint32_t)getpid();
        uint64_t args[] = { P(x_of(&d, 1)), P(&d.ctx[1]) }, sizes[] = { N * 4, 0 };
        *child_rc = call_fn(fn_allreduce, 2, args, sizes, NULL);
        _exit(0);
    }
    uint64_t args[] = { P(x_of(&d, 0)), P(&d.ctx[0]) }, sizes[] = { N * 4, 0 };
    CHECK_EQ_INT(call_fn(fn_allreduce, 2, args, sizes, NULL), PTO_KERNEL_OK);
    int status;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status));
    CHECK_EQ_INT(*child_rc, PTO_KERNEL_OK);
    CHECK(same_f32(x_of(&d, 0), want, N));
    CHECK(same_f32(x_of(&d, 1), want, N));
    free_all(xs, 2);
    munmap(shm, 2 * window + 2 * block + 64);
}
