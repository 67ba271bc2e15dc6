/* Kernel library for the trb native tests (libtrb_test_kernels.so). */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ptorun/pto_kernel.h"

#define EXPORT __attribute__((visibility("default")))

/* (OUT x, SCALAR ms): sleeps ms milliseconds, then writes 1.0f into x[0]. */
EXPORT int32_t trb_sleep(const uint64_t *args, uint32_t nargs, const PtoKernelContext *k)
{
    if (nargs != 2 || k->arg_sizes[0] < 4)
        return 1;
    struct timespec t = { (time_t)(args[1] / 1000), (long)(args[1] % 1000) * 1000000L };
    while (nanosleep(&t, &t) != 0)
        ;
    float one = 1.0f;
    *(float *)(uintptr_t)args[0] = one;
    return 0;
}

/* The kernel's thread, as a non-zero number (the OS thread id). */
static uint32_t this_thread(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

/* (OUT x, SCALAR code): writes the calling thread's id into x[0] (as a u32)
   and returns code. */
EXPORT int32_t trb_thread_id(const uint64_t *args, uint32_t nargs, const PtoKernelContext *k)
{
    if (nargs != 2 || k->arg_sizes[0] < 4)
        return 1;
    uint32_t id = this_thread();
    memcpy((void *)(uintptr_t)args[0], &id, sizeof id);
    return (int32_t)args[1];
}

static pthread_mutex_t meet_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t meet_cond = PTHREAD_COND_INITIALIZER;
static uint64_t meet_group, meet_arrived;

/* (OUT x, SCALAR group, SCALAR n): returns once n calls of the group are
   inside it at the same time — which only concurrent threads achieve — and
   writes this thread's id into x[0]. Gives up (returns 9) after 20 s so a run
   that never brings them together fails instead of hanging. */
EXPORT int32_t trb_meet(const uint64_t *args, uint32_t nargs, const PtoKernelContext *k)
{
    if (nargs != 3 || k->arg_sizes[0] < 4)
        return 1;
    struct timespec give_up;
    clock_gettime(CLOCK_REALTIME, &give_up);
    give_up.tv_sec += 20;
    pthread_mutex_lock(&meet_lock);
    if (meet_group != args[1]) {
        meet_group = args[1];
        meet_arrived = 0;
    }
    meet_arrived++;
    pthread_cond_broadcast(&meet_cond);
    int rc = 0;
    while (meet_arrived < args[2] && rc == 0)
        rc = pthread_cond_timedwait(&meet_cond, &meet_lock, &give_up);
    int met = meet_arrived >= args[2];
    pthread_mutex_unlock(&meet_lock);
    if (!met)
        return 9;
    uint32_t id = this_thread();
    memcpy((void *)(uintptr_t)args[0], &id, sizeof id);
    return 0;
}
