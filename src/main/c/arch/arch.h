/* Chip geometry and capabilities of the arch this library is built for
 * (docs/device.md). Selected by -DPTO_ARCH_A2A3 or
 * -DPTO_ARCH_A5; nothing else in the tree tests the arch switch directly. */
#ifndef PTORUN_ARCH_H
#define PTORUN_ARCH_H

#if defined(PTO_ARCH_A2A3) == defined(PTO_ARCH_A5)
#error "exactly one of PTO_ARCH_A2A3 and PTO_ARCH_A5 must be defined"
#endif

#define PTO_ARCH_AIC_PER_BLOCK 1
#define PTO_ARCH_AIV_PER_BLOCK 2

#ifdef PTO_ARCH_A2A3
#define PTO_ARCH_NAME "a2a3"
#define PTO_ARCH_MAX_BLOCKS 24
#define PTO_ARCH_AICPU_THREADS_DEFAULT 4
#define PTO_ARCH_AICPU_THREADS_MAX 4
#define PTO_ARCH_HOST_MAPPING 1        /* onboard device memory is host-mappable */
#define PTO_ARCH_FRESH_RUN_STREAMS 1   /* a fresh AICore stream per run */
#else
#define PTO_ARCH_NAME "a5"
#define PTO_ARCH_MAX_BLOCKS 36
#define PTO_ARCH_AICPU_THREADS_DEFAULT 5
#define PTO_ARCH_AICPU_THREADS_MAX 7
#define PTO_ARCH_HOST_MAPPING 0
#define PTO_ARCH_FRESH_RUN_STREAMS 0   /* one persistent stream pair */
#endif

#endif
