/* The hand-built-graph harness of the sim runner tests (test_sim_graph.h). */
#include "test_sim_graph.h"

#include <string.h>
#include <time.h>

#include "services/launch_signal.h"
#include "ptest.h"

void sleep_ms(long ms)
{
    struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&t, NULL);
}

/* ---- test kernels ------------------------------------------------------------- */

TestKernels test_kernels = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, { 0 }, { { 0 } }, { 0 }, { 0 }, 0, 0 };

void reset_kernels(void)
{
    pthread_mutex_lock(&test_kernels.lock);
    memset(test_kernels.ran, 0, sizeof test_kernels.ran);
    memset(test_kernels.seen, 0, sizeof test_kernels.seen);
    memset(test_kernels.running, 0, sizeof test_kernels.running);
    memset(test_kernels.max_running, 0, sizeof test_kernels.max_running);
    test_kernels.release = 0;
    test_kernels.blocked = 0;
    pthread_mutex_unlock(&test_kernels.lock);
}

/* Records where it ran and how many of its core type ran at once. */
int32_t record_kernel(const uint64_t *args, uint32_t nargs, const PtoKernelContext *ctx)
{
    (void)args, (void)nargs;
    pthread_mutex_lock(&test_kernels.lock);
    test_kernels.ran[ctx->task_id]++;
    test_kernels.seen[ctx->task_id] = *ctx;
    int now = ++test_kernels.running[ctx->core_type];
    if (now > test_kernels.max_running[ctx->core_type])
        test_kernels.max_running[ctx->core_type] = now;
    pthread_mutex_unlock(&test_kernels.lock);
    sleep_ms(2); /* the kernel's duration, so overlapping tasks can be observed; synchronizes nothing */
    pthread_mutex_lock(&test_kernels.lock);
    test_kernels.running[ctx->core_type]--;
    pthread_mutex_unlock(&test_kernels.lock);
    return 0;
}

int32_t blocking_kernel(const uint64_t *args, uint32_t nargs, const PtoKernelContext *ctx)
{
    (void)args, (void)nargs;
    pthread_mutex_lock(&test_kernels.lock);
    test_kernels.ran[ctx->task_id]++;
    test_kernels.blocked++;
    pthread_cond_broadcast(&test_kernels.cond);
    while (!test_kernels.release)
        pthread_cond_wait(&test_kernels.cond, &test_kernels.lock);
    test_kernels.blocked--;
    pthread_mutex_unlock(&test_kernels.lock);
    return 0;
}

int32_t failing_kernel(const uint64_t *args, uint32_t nargs, const PtoKernelContext *ctx)
{
    (void)args, (void)nargs;
    pthread_mutex_lock(&test_kernels.lock);
    test_kernels.ran[ctx->task_id]++;
    pthread_mutex_unlock(&test_kernels.lock);
    return 7;
}

void release_kernels(void)
{
    pthread_mutex_lock(&test_kernels.lock);
    test_kernels.release = 1;
    pthread_cond_broadcast(&test_kernels.cond);
    pthread_mutex_unlock(&test_kernels.lock);
}

void wait_blocked(int n)
{
    pthread_mutex_lock(&test_kernels.lock);
    while (test_kernels.blocked < n)
        pthread_cond_wait(&test_kernels.cond, &test_kernels.lock);
    pthread_mutex_unlock(&test_kernels.lock);
}

/* ---- hand-built graphs ---------------------------------------------------------- */

static uint64_t next_serial = 1ull << 40;

int build_graph(Runner *r, const HandTask *t, uint32_t n, uint32_t block_dim, uint32_t threads,
                uint32_t timeout_ms, HandGraph *g)
{
    uint32_t edges = 0;
    for (uint32_t i = 0; i < n; i++)
        for (int e = 0; e < 4 && t[i].consumers[e] >= 0; e++)
            edges++;
    size_t tasks_off = sizeof(PtoGraphHeader), fan_off = tasks_off + n * sizeof(PtoGraphTask);
    size_t graph_bytes = fan_off + edges * sizeof(uint32_t) + 8;
    size_t total = sizeof(PtoAicpuArgs) + graph_bytes;
    g->arena = runner_device_malloc(r, total);
    g->state = runner_device_malloc(r, 64 + pto_graph_state_bytes(n));
    if (g->arena == NULL || g->state == NULL)
        return -1;
    memset(g->arena, 0, total);
    PtoAicpuArgs *a = (PtoAicpuArgs *)g->arena;
    *a = (PtoAicpuArgs){ .magic = PTO_AICPU_ARGS_MAGIC, .abi_version = PTO_DEVICE_ABI_VERSION,
                         .work_kind = PTO_DEVICE_WORK_GRAPH, .block_dim = block_dim, .run_serial = next_serial++,
                         .work_dev = (uint64_t)(uintptr_t)(g->arena + sizeof *a), .work_bytes = graph_bytes,
                         .state_dev = (uint64_t)(uintptr_t)g->state, .state_bytes = 64 + pto_graph_state_bytes(n) };
    uint8_t *base = g->arena + sizeof *a;
    PtoGraphHeader *h = (PtoGraphHeader *)base;
    *h = (PtoGraphHeader){ .magic = PTO_GRAPH_MAGIC, .task_count = n, .tasks_offset = tasks_off,
                           .args_offset = tasks_off, .arg_sizes_offset = tasks_off, .fanout_offset = fan_off,
                           .arg_total = 0, .fanout_total = edges };
    PtoGraphTask *tasks = (PtoGraphTask *)(base + tasks_off);
    uint32_t *fanout = (uint32_t *)(base + fan_off);
    uint32_t at = 0;
    for (uint32_t i = 0; i < n; i++) {
        tasks[i] = (PtoGraphTask){ .kernel_addr = (uint64_t)(uintptr_t)t[i].fn, .func_id = t[i].func_id,
                                   .core_type = t[i].core_type, .fanout_index = at };
        for (int e = 0; e < 4 && t[i].consumers[e] >= 0; e++) {
            fanout[at++] = (uint32_t)t[i].consumers[e];
            tasks[i].fanout_count++;
        }
    }
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t e = 0; e < tasks[i].fanout_count; e++)
            tasks[fanout[tasks[i].fanout_index + e]].fanin_count++;
    g->launch = (DeviceLaunch){ .args_dev = (uint64_t)(uintptr_t)g->arena, .aicpu_threads = threads,
                                .block_dim = block_dim, .timeout_ms = timeout_ms };
    return 0;
}

PtoDeviceStatus *status_of(HandGraph *g)
{
    return &((PtoAicpuArgs *)g->arena)->status;
}

void free_graph(Runner *r, HandGraph *g)
{
    runner_device_free(r, g->arena);
    runner_device_free(r, g->state);
}

int launch_and_await(Runner *r, HandGraph *g)
{
    volatile int32_t word = 0;
    LaunchSignal s;
    launch_signal_init(&s, &word, 5);
    RunExec exec;
    int rc = runner_submit(r, &exec, 0, &g->launch, &s);
    if (rc == PTO_OK) {
        CHECK_EQ_INT(word, 5);
        rc = runner_await_device(r, &exec);
    }
    launch_signal_destroy(&s);
    return rc;
}
