/*
 * The launch signal (docs/lifecycle.md, "Launch acceptance"): a sticky,
 * one-shot event per run carrying the run's acceptance sink. The platform calls
 * launch_signal_publish() at the real kernel-launch marker; the executor calls
 * launch_signal_notify() when the run's job ends, whatever the reason; the
 * launching thread waits (condition variable, no spinning) for either.
 */
#ifndef PTORUN_LAUNCH_SIGNAL_H
#define PTORUN_LAUNCH_SIGNAL_H

#include <pthread.h>
#include <stdint.h>

typedef struct LaunchSignal {
    pthread_mutex_t lock;
    pthread_cond_t fired_cond;
    volatile int32_t *sink;   /* NULL once fired or when none was given */
    int32_t value;
    int fired;
} LaunchSignal;

int launch_signal_init(LaunchSignal *s, volatile int32_t *sink, int32_t value);
void launch_signal_destroy(LaunchSignal *s);

/* If not fired: release-store the value into the sink (if any), forget the sink,
 * fire, wake the waiter. Otherwise nothing. */
void launch_signal_publish(LaunchSignal *s);

/* If not fired: forget the sink without writing it, fire, wake the waiter. */
void launch_signal_notify(LaunchSignal *s);

/* Blocks until fired; returns at once when it already has. */
void launch_signal_wait(LaunchSignal *s);

int launch_signal_fired(LaunchSignal *s);

#endif
