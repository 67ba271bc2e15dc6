/* The hand-built-graph harness of the sim runner tests (test_sim_runner.c,
 * test_sim_executor.c): kernels that live in the test binary (to observe cores,
 * block on demand and fail on demand) and graphs built by hand for them. */
#ifndef PTORUN_TEST_SIM_GRAPH_H
#define PTORUN_TEST_SIM_GRAPH_H

#include <pthread.h>
#include <stdint.h>

#include "device/pto_device_abi.h"
#include "platform/runner.h"
#include "ptorun/pto_kernel.h"

/* How long a test waits for an event before it fails instead of hanging. */
#define EVENT_TIMEOUT_MS 20000

#define MAX_TASKS 64

/* What the test kernels saw, under `lock`; `cond` signals a change. */
typedef struct TestKernels {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int ran[MAX_TASKS];
    PtoKernelContext seen[MAX_TASKS];
    int running[2], max_running[2];
    int release;              /* blocking_kernel returns once set */
    int blocked;              /* blocking kernels currently waiting */
} TestKernels;

extern TestKernels test_kernels;

/* Only for time that must pass (a kernel's duration, a measurement window),
   never to wait for something: the tests synchronize on events. */
void sleep_ms(long ms);

void reset_kernels(void);
int32_t record_kernel(const uint64_t *args, uint32_t nargs, const PtoKernelContext *ctx);
int32_t blocking_kernel(const uint64_t *args, uint32_t nargs, const PtoKernelContext *ctx);
int32_t failing_kernel(const uint64_t *args, uint32_t nargs, const PtoKernelContext *ctx);
void release_kernels(void);
void wait_blocked(int n);

typedef struct HandTask {
    PtoKernelFn fn;
    uint32_t core_type;
    uint32_t func_id;
    int consumers[4];         /* task ids, -1 terminated */
} HandTask;

typedef struct HandGraph {
    uint8_t *arena;           /* argument block + graph, device memory */
    uint8_t *state;
    DeviceLaunch launch;
} HandGraph;

#define NO_CONSUMERS { -1, -1, -1, -1 }

int build_graph(Runner *r, const HandTask *t, uint32_t n, uint32_t block_dim, uint32_t threads,
                uint32_t timeout_ms, HandGraph *g);
PtoDeviceStatus *status_of(HandGraph *g);
void free_graph(Runner *r, HandGraph *g);
/* submit + await; the acceptance word must be written exactly at submit. */
int launch_and_await(Runner *r, HandGraph *g);

#endif
