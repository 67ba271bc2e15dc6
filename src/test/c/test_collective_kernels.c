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
#include "test_kernel_views.h"
#include "util/comm_signal.h"

#define MAX_R PTO_COMM_MAX_RANKS
#define X_OFF 192u /* x's offset in every window: not at the window's start */

typedef struct Domain {
    uint32_t nr;
    uint64_t window_size;
    char *windows[MAX_R];
    uint32_t *signals[MAX_R];
    PtoCommDeviceContext ctx[MAX_R];
} Domain;

static void domain_init(Domain *d, uint32_t nr, uint64_t window_size, uint32_t timeout_ms)
{
    memset(d, 0, sizeof *d);
    d->nr = nr;
    d->window_size = window_size;
    for (uint32_t r = 0; r < nr; r++) {
        d->windows[r] = aligned_alloc(64, (window_size + 63) / 64 * 64);
        memset(d->windows[r], 0, window_size);
        d->signals[r] = calloc(PTO_COMM_SIGNAL_WORDS, sizeof(uint32_t));
        d->signals[r][PTO_COMM_SIG_PID] = (uint32_t)getpid();
    }
    for (uint32_t r = 0; r < nr; r++) {
        PtoCommDeviceContext *c = &d->ctx[r];
        c->magic = PTO_COMM_CTX_MAGIC;
        c->rank = r;
        c->nranks = nr;
        c->timeout_ms = timeout_ms;
        c->window_size = window_size;
        for (uint32_t p = 0; p < nr; p++) {
            c->windows[p] = P(d->windows[p]);
            c->signals[p] = P(d->signals[p]);
        }
    }
}

static void domain_free(Domain *d)
{
    for (uint32_t r = 0; r < d->nr; r++) {
        free(d->windows[r]);
        free(d->signals[r]);
    }
}

static float *x_of(Domain *d, uint32_t r)
{
    return (float *)(d->windows[r] + X_OFF);
}

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Wide magnitudes and both signs, so the summation order shows in the bits. */
static void fill_rand(float *x, uint64_t n, uint32_t seed)
{
    uint32_t s = seed * 2654435761u + 12345u;
    for (uint64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)((int32_t)(s >> 8) % 200001 - 100000) / (float)(1 + (s & 4095)) * ((s & 0x10000) ? 1e-3f : 1e3f);
    }
}

static int same_f32(const float *got, const float *want, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (fbits(got[i]) != fbits(want[i])) {
            fprintf(stderr, "  element %llu: %a != expected %a\n", (unsigned long long)i, (double)got[i],
                    (double)want[i]);
            return 0;
        }
    return 1;
}

static uint64_t lo_of(uint64_t n, uint32_t nr, uint32_t r)
{
    return (uint64_t)r * n / nr;
}

/* ---- calling a kernel on every rank, one thread each ------------------------------- */

typedef struct RankCall RankCall;
typedef int32_t (*RankBody)(RankCall *rc);
struct RankCall {
    Domain *d;
    uint32_t rank;
    RankBody body;
    void *arg;
    int32_t rc;
    uint64_t elapsed_ns;
    pthread_t thread;
};

static PtoKernelFn fn_allreduce, fn_allgather, fn_reduce_scatter, fn_broadcast;

static int load_kernels(void)
{
    fn_allreduce = kv_kernel("allreduce_sum");
    fn_allgather = kv_kernel("allgather");
    fn_reduce_scatter = kv_kernel("reduce_scatter");
    fn_broadcast = kv_kernel("broadcast");
    return fn_allreduce && fn_allgather && fn_reduce_scatter && fn_broadcast;
}

static int32_t call_fn(PtoKernelFn fn, uint32_t nargs, const uint64_t *args, const uint64_t *sizes,
                       const PtoTensorView *views)
{
    PtoKernelContext k = { .core_type = PTO_CORE_AIV, .block_dim = 1, .arg_sizes = sizes, .views = views };
    return fn(args, nargs, &k);
}

static void *rank_main(void *arg)
{
    RankCall *rc = arg;
    uint64_t t0 = pto_monotonic_ns();
    rc->rc = rc->body(rc);
    rc->elapsed_ns = pto_monotonic_ns() - t0;
    return NULL;
}

/* Runs body on every rank not in `absent` (a bit mask), each in its own
   thread, and waits for all. */
static void run_ranks(Domain *d, RankBody body, void *arg, uint32_t absent, RankCall *calls)
{
    for (uint32_t r = 0; r < d->nr; r++) {
        calls[r] = (RankCall){ .d = d, .rank = r, .body = body, .arg = arg, .rc = -1 };
        if (!(absent >> r & 1u))
            pthread_create(&calls[r].thread, NULL, rank_main, &calls[r]);
    }
    for (uint32_t r = 0; r < d->nr; r++)
        if (!(absent >> r & 1u))
            pthread_join(calls[r].thread, NULL);
}

/* ---- the collectives on flat f32 views ------------------------------------------------ */

typedef struct Job {
    uint64_t n;
    float *out[MAX_R]; /* per-rank outputs (allgather, reduce_scatter) */
    uint64_t root;
} Job;

static int32_t body_allreduce(RankCall *c)
{
    Job *j = c->arg;
    uint64_t args[] = { P(x_of(c->d, c->rank)), P(&c->d->ctx[c->rank]) }, sizes[] = { j->n * 4, 0 };
    return call_fn(fn_allreduce, 2, args, sizes, NULL);
}

static int32_t body_allgather(RankCall *c)
{
    Job *j = c->arg;
    uint64_t args[] = { P(x_of(c->d, c->rank)), P(j->out[c->rank]), P(&c->d->ctx[c->rank]) };
    uint64_t sizes[] = { j->n * 4, j->n * 4 * c->d->nr, 0 };
    return call_fn(fn_allgather, 3, args, sizes, NULL);
}

static int32_t body_reduce_scatter(RankCall *c)
{
    Job *j = c->arg;
    uint32_t nr = c->d->nr;
    uint64_t chunk = lo_of(j->n, nr, c->rank + 1) - lo_of(j->n, nr, c->rank);
    uint64_t args[] = { P(x_of(c->d, c->rank)), P(j->out[c->rank]), P(&c->d->ctx[c->rank]) };
    uint64_t sizes[] = { j->n * 4, chunk * 4, 0 };
    return call_fn(fn_reduce_scatter, 3, args, sizes, NULL);
}

static int32_t body_broadcast(RankCall *c)
{
    Job *j = c->arg;
    uint64_t args[] = { P(x_of(c->d, c->rank)), P(&c->d->ctx[c->rank]), j->root }, sizes[] = { j->n * 4, 0, 0 };
    return call_fn(fn_broadcast, 3, args, sizes, NULL);
}

/* want[i] = ((x0[i] + x1[i]) + x2[i]) + ... */
static void ref_sum(float *want, float *const *xs, uint32_t nr, uint64_t lo, uint64_t hi)
{
    for (uint64_t i = lo; i < hi; i++) {
        float acc = xs[0][i];
        for (uint32_t p = 1; p < nr; p++)
            acc = acc + xs[p][i];
        want[i - lo] = acc;
    }
}

static int all_ok(const RankCall *calls, uint32_t nr)
{
    int ok = 1;
    for (uint32_t r = 0; r < nr; r++)
        if (calls[r].rc != PTO_KERNEL_OK) {
            fprintf(stderr, "  rank %u returned %d\n", r, calls[r].rc);
            ok = 0;
        }
    return ok;
}

/* Fills every rank's x, keeps a copy of the inputs in xs. */
static void fill_inputs(Domain *d, uint64_t n, float **xs, uint32_t seed)
{
    for (uint32_t r = 0; r < d->nr; r++) {
        xs[r] = malloc(n * 4 + 4);
        fill_rand(xs[r], n, seed * 131u + r);
        memcpy(x_of(d, r), xs[r], n * 4);
    }
}

static void free_all(float **p, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++)
        free(p[i]);
}

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
