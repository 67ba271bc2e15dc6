/* The harness of the collective kernels' tests (test_collective.h). */
#include "test_collective.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/spin_wait.h"
void domain_init(Domain *d, uint32_t nr, uint64_t window_size, uint32_t timeout_ms)
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

void domain_free(Domain *d)
{
    for (uint32_t r = 0; r < d->nr; r++) {
        free(d->windows[r]);
        free(d->signals[r]);
    }
}

float *x_of(Domain *d, uint32_t r)
{
    return (float *)(d->windows[r] + X_OFF);
}

uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Wide magnitudes and both signs, so the summation order shows in the bits. */
void fill_rand(float *x, uint64_t n, uint32_t seed)
{
    uint32_t s = seed * 2654435761u + 12345u;
    for (uint64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)((int32_t)(s >> 8) % 200001 - 100000) / (float)(1 + (s & 4095)) * ((s & 0x10000) ? 1e-3f : 1e3f);
    }
}

int same_f32(const float *got, const float *want, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (fbits(got[i]) != fbits(want[i])) {
            fprintf(stderr, "  element %llu: %a != expected %a\n", (unsigned long long)i, (double)got[i],
                    (double)want[i]);
            return 0;
        }
    return 1;
}

uint64_t lo_of(uint64_t n, uint32_t nr, uint32_t r)
{
    return (uint64_t)r * n / nr;
}

/* ---- calling a kernel on every rank, one thread each ------------------------------- */

PtoKernelFn fn_allreduce, fn_allgather, fn_reduce_scatter, fn_broadcast;

int load_kernels(void)
{
    fn_allreduce = kv_kernel("allreduce_sum");
    fn_allgather = kv_kernel("allgather");
    fn_reduce_scatter = kv_kernel("reduce_scatter");
    fn_broadcast = kv_kernel("broadcast");
    return fn_allreduce && fn_allgather && fn_reduce_scatter && fn_broadcast;
}

int32_t call_fn(PtoKernelFn fn, uint32_t nargs, const uint64_t *args, const uint64_t *sizes,
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
void run_ranks(Domain *d, RankBody body, void *arg, uint32_t absent, RankCall *calls)
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

int32_t body_allreduce(RankCall *c)
{
    Job *j = c->arg;
    uint64_t args[] = { P(x_of(c->d, c->rank)), P(&c->d->ctx[c->rank]) }, sizes[] = { j->n * 4, 0 };
    return call_fn(fn_allreduce, 2, args, sizes, NULL);
}

int32_t body_allgather(RankCall *c)
{
    Job *j = c->arg;
    uint64_t args[] = { P(x_of(c->d, c->rank)), P(j->out[c->rank]), P(&c->d->ctx[c->rank]) };
    uint64_t sizes[] = { j->n * 4, j->n * 4 * c->d->nr, 0 };
    return call_fn(fn_allgather, 3, args, sizes, NULL);
}

int32_t body_reduce_scatter(RankCall *c)
{
    Job *j = c->arg;
    uint32_t nr = c->d->nr;
    uint64_t chunk = lo_of(j->n, nr, c->rank + 1) - lo_of(j->n, nr, c->rank);
    uint64_t args[] = { P(x_of(c->d, c->rank)), P(j->out[c->rank]), P(&c->d->ctx[c->rank]) };
    uint64_t sizes[] = { j->n * 4, chunk * 4, 0 };
    return call_fn(fn_reduce_scatter, 3, args, sizes, NULL);
}

int32_t body_broadcast(RankCall *c)
{
    Job *j = c->arg;
    uint64_t args[] = { P(x_of(c->d, c->rank)), P(&c->d->ctx[c->rank]), j->root }, sizes[] = { j->n * 4, 0, 0 };
    return call_fn(fn_broadcast, 3, args, sizes, NULL);
}

/* want[i] = ((x0[i] + x1[i]) + x2[i]) + ... */
void ref_sum(float *want, float *const *xs, uint32_t nr, uint64_t lo, uint64_t hi)
{
    for (uint64_t i = lo; i < hi; i++) {
        float acc = xs[0][i];
        for (uint32_t p = 1; p < nr; p++)
            acc = acc + xs[p][i];
        want[i - lo] = acc;
    }
}

int all_ok(const RankCall *calls, uint32_t nr)
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
void fill_inputs(Domain *d, uint64_t n, float **xs, uint32_t seed)
{
    for (uint32_t r = 0; r < d->nr; r++) {
        xs[r] = malloc(n * 4 + 4);
        fill_rand(xs[r], n, seed * 131u + r);
        memcpy(x_of(d, r), xs[r], n * 4);
    }
}

void free_all(float **p, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++)
        free(p[i]);
}
