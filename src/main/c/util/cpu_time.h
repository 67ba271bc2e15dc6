/* The calling thread's CPU time: what an orchestration costs, not the time its
 * thread was parked or descheduled (NativeRunReport.orchestration_ns). */
#ifndef PTORUN_CPU_TIME_H
#define PTORUN_CPU_TIME_H

#include <stdint.h>
#include <time.h>

static inline uint64_t pto_thread_cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

#endif
