#include "launch_signal.h"

#include <stdatomic.h>

#include "ptorun/pto_runtime_c_api.h"

int launch_signal_init(LaunchSignal *s, volatile int32_t *sink, int32_t value)
{
    if (pthread_mutex_init(&s->lock, NULL) != 0)
        return PTO_ERR_FAILED;
    if (pthread_cond_init(&s->fired_cond, NULL) != 0) {
        pthread_mutex_destroy(&s->lock);
        return PTO_ERR_FAILED;
    }
    s->sink = sink;
    s->value = value;
    s->fired = 0;
    return PTO_OK;
}

void launch_signal_destroy(LaunchSignal *s)
{
    pthread_cond_destroy(&s->fired_cond);
    pthread_mutex_destroy(&s->lock);
}

/* Fires once; `store` decides whether the sink is written on the way. */
static void fire(LaunchSignal *s, int store)
{
    pthread_mutex_lock(&s->lock);
    if (!s->fired) {
        if (store && s->sink != NULL)
            atomic_store_explicit((_Atomic int32_t *)s->sink, s->value, memory_order_release);
        s->sink = NULL;
        s->fired = 1;
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

void launch_signal_wait(LaunchSignal *s)
{
    pthread_mutex_lock(&s->lock);
    while (!s->fired)
        pthread_cond_wait(&s->fired_cond, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

int launch_signal_fired(LaunchSignal *s)
{
    pthread_mutex_lock(&s->lock);
    int fired = s->fired;
    pthread_mutex_unlock(&s->lock);
    return fired;
}
