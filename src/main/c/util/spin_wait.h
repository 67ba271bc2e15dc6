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

/* Spins at most budget_ns for ready(arg) to turn non-zero; returns it.
 * After yield_after_ns it yields the core between rounds of pauses: on a
 * machine with as many busy threads as cores, the thread this one waits for may
 * be queued on this very core, and a spinner that keeps it waits out its whole
 * budget for nothing. */
static inline int pto_spin_until_within(int (*ready)(const void *), const void *arg, uint64_t yield_after_ns,
                                        uint64_t budget_ns)
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
        if (now - start >= yield_after_ns) {
            sched_yield();
            if (ready(arg))
                return 1;
        }
        now = pto_monotonic_ns();
    } while (now - start < budget_ns);
    return 0;
}

/* The spin of a thread waiting for one in its own process: yields only after
 * PTO_SPIN_YIELD_AFTER_NS. Not sooner: when that thread runs on another core,
 * pauses see its event within nanoseconds, a yield (a system call) within a
 * microsecond. */
static inline int pto_spin_until(int (*ready)(const void *), const void *arg)
{
    return pto_spin_until_within(ready, arg, PTO_SPIN_YIELD_AFTER_NS, PTO_SPIN_BUDGET_NS);
}

#endif
