#include "call_config.h"

#include <string.h>

#include "arch/arch.h"
#include "util/last_error.h"

int call_config_validate(const CallConfig *cfg)
{
    /* every bound is the public header's: the Java side checks the same constants */
    if (cfg->aicpu_thread_num != 0 &&
        (cfg->aicpu_thread_num < PTO_AICPU_THREADS_MIN || cfg->aicpu_thread_num > PTO_ARCH_AICPU_THREADS_MAX))
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "CallConfig.aicpu_thread_num %d is outside %d..%d (0 = default %d)",
                        cfg->aicpu_thread_num, PTO_AICPU_THREADS_MIN, PTO_ARCH_AICPU_THREADS_MAX,
                        PTO_ARCH_AICPU_THREADS_DEFAULT);
    if (cfg->block_dim != 0 && (cfg->block_dim < PTO_BLOCK_DIM_MIN || cfg->block_dim > PTO_ARCH_MAX_BLOCKS))
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "CallConfig.block_dim %d is outside %d..%d (0 = default)",
                        cfg->block_dim, PTO_BLOCK_DIM_MIN, PTO_ARCH_MAX_BLOCKS);
    if (cfg->timeout_ms < 0)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "CallConfig.timeout_ms %d is negative", cfg->timeout_ms);
    for (int i = 0; i < PTO_TRB_RING_COUNT; i++) {
        uint64_t w = cfg->ring_task_window[i];
        if (w != 0 && (w < PTO_RING_TASK_WINDOW_MIN || (w & (w - 1)) != 0 || w > PTO_RING_TASK_WINDOW_MAX))
            return pto_fail(PTO_ERR_INVALID_ARGUMENT,
                            "CallConfig.ring_task_window[%d] %llu is not a power of two in [%d, %d]", i,
                            (unsigned long long)w, PTO_RING_TASK_WINDOW_MIN, PTO_RING_TASK_WINDOW_MAX);
        if (cfg->ring_heap[i] != 0 && cfg->ring_heap[i] < PTO_RING_HEAP_MIN)
            return pto_fail(PTO_ERR_INVALID_ARGUMENT, "CallConfig.ring_heap[%d] %llu is below %d bytes", i,
                            (unsigned long long)cfg->ring_heap[i], PTO_RING_HEAP_MIN);
        uint64_t d = cfg->ring_dep_pool[i];
        if (d != 0 && (d < PTO_RING_DEP_POOL_MIN || d > PTO_RING_DEP_POOL_MAX))
            return pto_fail(PTO_ERR_INVALID_ARGUMENT, "CallConfig.ring_dep_pool[%d] %llu is outside [%d, %d]", i,
                            (unsigned long long)d, PTO_RING_DEP_POOL_MIN, PTO_RING_DEP_POOL_MAX);
    }
    if (memchr(cfg->output_prefix, '\0', sizeof cfg->output_prefix) == NULL)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "CallConfig.output_prefix is not NUL-terminated");
    if (call_config_has_diagnostics(cfg) && cfg->output_prefix[0] == '\0')
        return pto_fail(PTO_ERR_INVALID_ARGUMENT,
                        "CallConfig.output_prefix is required when a diagnostic (trace, dump args, dep graph) is on");
    return PTO_OK;
}

int call_config_has_diagnostics(const CallConfig *cfg)
{
    return cfg->enable_trace != 0 || cfg->enable_dump_args != 0 || cfg->enable_dep_graph != 0;
}

uint32_t call_config_aicpu_threads(const CallConfig *cfg)
{
    return cfg->aicpu_thread_num == 0 ? PTO_ARCH_AICPU_THREADS_DEFAULT : (uint32_t)cfg->aicpu_thread_num;
}

uint32_t call_config_block_dim(const CallConfig *cfg)
{
    return cfg->block_dim == 0 ? PTO_ARCH_MAX_BLOCKS : (uint32_t)cfg->block_dim;
}

uint32_t call_config_timeout_ms(const CallConfig *cfg)
{
    return cfg->timeout_ms == 0 ? PTO_DEFAULT_TIMEOUT_MS : (uint32_t)cfg->timeout_ms;
}

uint64_t call_config_ring_task_window(const CallConfig *cfg, int ring)
{
    return cfg->ring_task_window[ring] ? cfg->ring_task_window[ring] : PTO_DEFAULT_RING_TASK_WINDOW;
}

uint64_t call_config_ring_heap(const CallConfig *cfg, int ring)
{
    return cfg->ring_heap[ring] ? cfg->ring_heap[ring] : PTO_DEFAULT_RING_HEAP;
}

uint64_t call_config_ring_dep_pool(const CallConfig *cfg, int ring)
{
    return cfg->ring_dep_pool[ring] ? cfg->ring_dep_pool[ring] : PTO_DEFAULT_RING_DEP_POOL;
}
