/* The launch signal (launch_signal.h). `fired` changes only under the lock,
 * but is also read lock-free (atomic builtins on the plain int of the agreed
 * header) so the launching thread can catch a marker that is microseconds
 * away with a bounded spin instead of a sleep/wake pair. */
#include "launch_signal.h"

#include <stdatomic.h>

#include "util/last_error.h"
#include "ptorun/pto_runtime_c_api.h"
#include "util/spin_wait.h"

int launch_signal_init(LaunchSignal *s, volatile int32_t *sink, int32_t value)
{
    if (pthread_mutex_init(&s->lock, NULL) != 0)
        return pto_fail(PTO_ERR_FAILED, "launch signal: cannot initialize its mutex");
    if (pthread_cond_init(&s->fired_cond, NULL) != 0) {
        pthread_mutex_destroy(&s->lock);
        return pto_fail(PTO_ERR_FAILED, "launch signal: cannot initialize its condition variable");
    }
    s->sink = sink;
    s->value = value;
    __atomic_store_n(&s->fired, 0, __ATOMIC_RELAXED);
    return PTO_OK;
}

void launch_signal_destroy(LaunchSignal *s)
{
    pthread_cond_destroy(&s->fired_cond);
    pthread_mutex_destroy(&s->lock);
}

/* Fires once; `store` decides whether the sink is written on the way. The
 * sink is forgotten either way, so no later call can write it. */
static void fire(LaunchSignal *s, int store)
{
    pthread_mutex_lock(&s->lock);
    if (!__atomic_load_n(&s->fired, __ATOMIC_RELAXED)) {
        if (store && s->sink != NULL)
            atomic_store_explicit((volatile _Atomic int32_t *)s->sink, s->value, memory_order_release);
        s->sink = NULL;
        __atomic_store_n(&s->fired, 1, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&s->fired_cond);
    }
    pthread_mutex_unlock(&s->lock);
}

void launch_signal_publish(LaunchSignal *s)
{
    fire(s, 1);
}

void launch_signal_notify(LaunchSignal *s)
{
    fire(s, 0);
}

static int signal_fired(const void *s)
{
    return __atomic_load_n(&((const LaunchSignal *)s)->fired, __ATOMIC_ACQUIRE);
}

void launch_signal_wait(LaunchSignal *s)
{
    if (pto_spin_until(signal_fired, s))
        return;
    pthread_mutex_lock(&s->lock);
    while (!__atomic_load_n(&s->fired, __ATOMIC_RELAXED))
        pthread_cond_wait(&s->fired_cond, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

int launch_signal_fired(LaunchSignal *s)
{
    return signal_fired(s);
}
