/* A bounded spin before parking. A cross-core wake through a condition
 * variable costs ~10-15 us; when the awaited event is that close, a short spin
 * catches it without the sleep/wake pair. The budget is bounded (quality.md:
 * <= 50 us) so an idle or blocked thread still parks and burns no CPU. */
#ifndef PTORUN_SPIN_WAIT_H
#define PTORUN_SPIN_WAIT_H

#include <sched.h>
#include <stdint.h>
#include <time.h>

#define PTO_SPIN_BUDGET_NS 20000u
#define PTO_SPIN_YIELD_AFTER_NS 4000u

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

/* Spins at most PTO_SPIN_BUDGET_NS for ready(arg) to turn non-zero; returns it.
 * After PTO_SPIN_YIELD_AFTER_NS it yields the core between rounds of pauses: on a
 * machine with as many busy threads as cores, the thread this one waits for may
 * be queued on this very core, and a spinner that keeps it waits out its whole
 * budget for nothing. Not sooner: when that thread runs on another core, pauses
 * see its event within nanoseconds, a yield (a system call) within a microsecond. */
static inline int pto_spin_until(int (*ready)(const void *), const void *arg)
{
    if (ready(arg))
        return 1;
    uint64_t start = pto_monotonic_ns(), now = start;
    do {
        for (int i = 0; i < 64; i++) {
            pto_cpu_relax();
            if (ready(arg))
                return 1;
        }
        if (now - start >= PTO_SPIN_YIELD_AFTER_NS) {
            sched_yield();
            if (ready(arg))
                return 1;
        }
        now = pto_monotonic_ns();
    } while (now - start < PTO_SPIN_BUDGET_NS);
    return 0;
}

#endif
