/* A bounded spin before parking. A cross-core wake through a condition
 * variable costs ~10-15 us; when the awaited event is that close, a short spin
 * catches it without the sleep/wake pair. The budget is bounded (quality.md:
 * <= 50 us) so an idle or blocked thread still parks and burns no CPU. */
#ifndef PTORUN_SPIN_WAIT_H
#define PTORUN_SPIN_WAIT_H

#include <stdint.h>
#include <time.h>

#define PTO_SPIN_BUDGET_NS 20000u

static inline uint64_t pto_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void pto_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Spins at most PTO_SPIN_BUDGET_NS for ready(arg) to turn non-zero; returns it. */
static inline int pto_spin_until(int (*ready)(const void *), const void *arg)
{
    if (ready(arg))
        return 1;
    uint64_t deadline = pto_monotonic_ns() + PTO_SPIN_BUDGET_NS;
    do {
        for (int i = 0; i < 64; i++) {
            pto_cpu_relax();
            if (ready(arg))
                return 1;
        }
    } while (pto_monotonic_ns() < deadline);
    return 0;
}

#endif
