/* Validation and resolution of a run's CallConfig (docs/abi.md). */
#ifndef PTORUN_CALL_CONFIG_H
#define PTORUN_CALL_CONFIG_H

#include <stdint.h>

#include "ptorun/pto_runtime_c_api.h"

/* Ring defaults for trb (hbg reads ring 0 only). */
#define PTO_DEFAULT_RING_TASK_WINDOW 1024u
#define PTO_DEFAULT_RING_HEAP (1u << 20)
#define PTO_DEFAULT_RING_DEP_POOL 4096u

/* PTO_OK, or PTO_ERR_INVALID_ARGUMENT with a message naming the field. */
int call_config_validate(const CallConfig *cfg);

/* Non-zero when any diagnostic (trace, dump args, dep graph) is on: such a run
 * never takes part in a pipelined overlap. */
int call_config_has_diagnostics(const CallConfig *cfg);

uint32_t call_config_aicpu_threads(const CallConfig *cfg);   /* 0 -> arch default */
uint32_t call_config_block_dim(const CallConfig *cfg);       /* 0 -> arch max blocks */
uint32_t call_config_timeout_ms(const CallConfig *cfg);      /* 0 -> PTO_DEFAULT_TIMEOUT_MS */
uint64_t call_config_ring_task_window(const CallConfig *cfg, int ring);
uint64_t call_config_ring_heap(const CallConfig *cfg, int ring);
uint64_t call_config_ring_dep_pool(const CallConfig *cfg, int ring);

#endif
