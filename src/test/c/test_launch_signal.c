/* The launch signal (services/launch_signal.c): sticky, one-shot, the sink
 * written at most once and only by publish, waiters parked. */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "services/launch_signal.h"
#include "ptest.h"
#include "ptorun/pto_runtime_c_api.h"

static int32_t read_word(volatile int32_t *w)
{
    return __atomic_load_n(w, __ATOMIC_ACQUIRE);
}

TEST(publish_stores_once_and_stays_sticky)
{
    volatile int32_t word = 0;
    LaunchSignal s;
    CHECK_EQ_INT(launch_signal_init(&s, &word, 17), PTO_OK);
    CHECK(!launch_signal_fired(&s));
    launch_signal_publish(&s);
    CHECK_EQ_INT(read_word(&word), 17);
    CHECK(launch_signal_fired(&s));
    word = 23;
    launch_signal_publish(&s);                  /* no second store */
    CHECK_EQ_INT(read_word(&word), 23);
    launch_signal_notify(&s);                   /* nor does a late notify touch it */
    CHECK_EQ_INT(read_word(&word), 23);
    launch_signal_wait(&s);                     /* a waiter after the event returns at once */
    launch_signal_destroy(&s);
}

TEST(notify_before_publish_suppresses_the_store)
{
    volatile int32_t word = 5;
    LaunchSignal s;
    CHECK_EQ_INT(launch_signal_init(&s, &word, 17), PTO_OK);
    launch_signal_notify(&s);
    CHECK(launch_signal_fired(&s));
    launch_signal_publish(&s);
    CHECK_EQ_INT(read_word(&word), 5);
    launch_signal_wait(&s);
    launch_signal_destroy(&s);
}

TEST(signal_without_sink_fires)
{
    LaunchSignal s;
    CHECK_EQ_INT(launch_signal_init(&s, NULL, 17), PTO_OK);
    launch_signal_publish(&s);
    CHECK(launch_signal_fired(&s));
    launch_signal_wait(&s);
    launch_signal_destroy(&s);
}

typedef struct Waiter {
    LaunchSignal *signal;
    double cpu_seconds;        /* the waiter thread's own CPU time while waiting */
    double wall_seconds;
} Waiter;

static double clock_seconds(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *wait_and_measure(void *arg)
{
    Waiter *w = arg;
    double cpu0 = clock_seconds(CLOCK_THREAD_CPUTIME_ID);
    double wall0 = clock_seconds(CLOCK_MONOTONIC);
    launch_signal_wait(w->signal);
    w->cpu_seconds = clock_seconds(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    w->wall_seconds = clock_seconds(CLOCK_MONOTONIC) - wall0;
    return NULL;
}

/* A CPU-use bound, not a speed assertion: the waiter parks. */
TEST(blocked_waiter_uses_almost_no_cpu)
{
    volatile int32_t word = 0;
    LaunchSignal s;
    CHECK_EQ_INT(launch_signal_init(&s, &word, 1), PTO_OK);
    Waiter w = { .signal = &s };
    pthread_t t;
    pthread_create(&t, NULL, wait_and_measure, &w);
    struct timespec pause = { 0, 200 * 1000000L };
    while (nanosleep(&pause, &pause) != 0) {
    }
    CHECK_EQ_INT(read_word(&word), 0);          /* still blocked, nothing written */
    launch_signal_publish(&s);
    pthread_join(t, NULL);
    CHECK_EQ_INT(read_word(&word), 1);
    CHECK(w.wall_seconds >= 0.15);              /* it really was blocked until the publish */
    CHECK(w.cpu_seconds < 0.25 * w.wall_seconds);
    launch_signal_destroy(&s);
}

typedef struct Racer {
    pthread_barrier_t *start;
    LaunchSignal *signal;
    int publish;
} Racer;

static void *race(void *arg)
{
    Racer *r = arg;
    pthread_barrier_wait(r->start);
    if (r->publish)
        launch_signal_publish(r->signal);
    else
        launch_signal_notify(r->signal);
    return NULL;
}

/* Whichever of publish and notify wins, the sink's final value is settled
   by the time a waiter wakes: a publish that won stored before the signal
   fired, and one that lost never stores afterwards. */
TEST(publish_racing_notify_writes_the_value_or_nothing_before_waking)
{
    for (int i = 0; i < 300; i++) {
        volatile int32_t word = -1;
        LaunchSignal s;
        CHECK_EQ_INT(launch_signal_init(&s, &word, 9), PTO_OK);
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, 2);
        Racer p = { &start, &s, 1 }, n = { &start, &s, 0 };
        pthread_t tp, tn;
        pthread_create(&tp, NULL, race, &p);
        pthread_create(&tn, NULL, race, &n);
        launch_signal_wait(&s);
        int32_t at_wake = read_word(&word);     /* before either racer is known to be done */
        pthread_join(tp, NULL);
        pthread_join(tn, NULL);
        CHECK(at_wake == 9 || at_wake == -1);
        CHECK_EQ_INT(read_word(&word), at_wake);
        word = -2;
        launch_signal_publish(&s);              /* fired: never stores again */
        CHECK_EQ_INT(read_word(&word), -2);
        pthread_barrier_destroy(&start);
        launch_signal_destroy(&s);
    }
}
