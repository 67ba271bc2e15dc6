/* libptorun_bench.so, the native side of the benchmark suite (pto_bench.c): the
 * functions the JMH benchmarks call through JNA, and test_bench_native.c directly. */
#ifndef PTORUN_PTO_BENCH_H
#define PTORUN_PTO_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "ptorun/pto_export.h"

typedef struct PtoBenchCycle PtoBenchCycle;
typedef struct PtoBenchPingPong PtoBenchPingPong;

PTO_EXPORT const char *pto_bench_last_error(void);

PTO_EXPORT PtoBenchCycle *pto_bench_cycle_open(const char *library_path, const uint8_t *aicpu, size_t aicpu_size,
                                               const uint8_t *aicore, size_t aicore_size, const uint8_t *callable,
                                               int32_t callable_id);
PTO_EXPORT int pto_bench_cycle_run(PtoBenchCycle *c);
PTO_EXPORT size_t pto_bench_cycle_committed_device_memory(PtoBenchCycle *c);
PTO_EXPORT void pto_bench_cycle_close(PtoBenchCycle *c);

PTO_EXPORT PtoBenchPingPong *pto_bench_pingpong_open(void);
PTO_EXPORT void pto_bench_pingpong_round(PtoBenchPingPong *p);
PTO_EXPORT void pto_bench_pingpong_close(PtoBenchPingPong *p);

PTO_EXPORT void pto_bench_memcpy(uint64_t dst, uint64_t src, uint64_t n);

#endif
