/* The harness of the collective kernels' tests (test_collective_kernels.c,
 * test_collective_faults.c): a domain of plain malloc'd windows and signal
 * blocks whose PID words are this process, ranks as threads calling a kernel,
 * the kernels' bodies and the rank-order reference. */
#ifndef PTORUN_TEST_COLLECTIVE_H
#define PTORUN_TEST_COLLECTIVE_H

#include <pthread.h>
#include <stdint.h>

#include "ptorun/pto_comm.h"
#include "ptorun/pto_kernel.h"
#include "test_kernel_views.h"

#define MAX_R PTO_COMM_MAX_RANKS
#define X_OFF 192u /* x's offset in every window: not at the window's start */

typedef struct Domain {
    uint32_t nr;
    uint64_t window_size;
    char *windows[MAX_R];
    uint32_t *signals[MAX_R];
    PtoCommDeviceContext ctx[MAX_R];
} Domain;

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

typedef struct Job {
    uint64_t n;
    float *out[MAX_R]; /* per-rank outputs (allgather, reduce_scatter) */
    uint64_t root;
} Job;

void domain_init(Domain *d, uint32_t nr, uint64_t window_size, uint32_t timeout_ms);
void domain_free(Domain *d);
float *x_of(Domain *d, uint32_t r);
uint32_t fbits(float f);
/* Wide magnitudes and both signs, so the summation order shows in the bits. */
void fill_rand(float *x, uint64_t n, uint32_t seed);
int same_f32(const float *got, const float *want, uint64_t n);
uint64_t lo_of(uint64_t n, uint32_t nr, uint32_t r);

extern PtoKernelFn fn_allreduce, fn_allgather, fn_reduce_scatter, fn_broadcast;
int load_kernels(void);
int32_t call_fn(PtoKernelFn fn, uint32_t nargs, const uint64_t *args, const uint64_t *sizes,
                const PtoTensorView *views);
/* Runs body on every rank not in `absent` (a bit mask), each in its own
   thread, and waits for all. */
void run_ranks(Domain *d, RankBody body, void *arg, uint32_t absent, RankCall *calls);

int32_t body_allreduce(RankCall *c);
int32_t body_allgather(RankCall *c);
int32_t body_reduce_scatter(RankCall *c);
int32_t body_broadcast(RankCall *c);
/* want[i] = ((x0[i] + x1[i]) + x2[i]) + ... */
void ref_sum(float *want, float *const *xs, uint32_t nr, uint64_t lo, uint64_t hi);
int all_ok(const RankCall *calls, uint32_t nr);
/* Fills every rank's x, keeps a copy of the inputs in xs. */
void fill_inputs(Domain *d, uint64_t n, float **xs, uint32_t seed);
void free_all(float **p, uint32_t count);

#endif
