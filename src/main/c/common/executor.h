/*
 * The executor (docs/lifecycle.md, section 5): persistent threads of one device
 * context, started at simpler_init and joined at finalize_device, parked on a
 * condition variable while idle. A launched run hands it its job; a thread runs
 * runner_execute (submit, which crosses the launch marker, then await the
 * device), then publishes the result. No thread and no allocation per run: the job record
 * lives in the run's NativeRunContext, the queue is intrusive.
 */
#ifndef PTORUN_EXECUTOR_H
#define PTORUN_EXECUTOR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "util/last_error.h"
#include "services/launch_signal.h"
#include "platform/runner.h"
#include "ptorun/pto_runtime_c_api.h"

/* The executor threads' name (/proc/<pid>/task/<tid>/comm). */
#define PTO_EXECUTOR_THREAD_NAME "ptorun-exec"

/* One run's job, owned by the run from launch through finalize. */
typedef struct ExecutorJob {
    /* what to run: set by executor_submit */
    Runner *runner;
    RunExec *exec;
    const DeviceLaunch *launch;
    LaunchSignal *signal;
    uint32_t slot;
    struct ExecutorJob *next;          /* queue link */

    /* the outcome: written by the executor thread */
    int result;
    char message[PTO_ERROR_MESSAGE_BYTES]; /* the executor thread's failure message */
    atomic_int ended;                  /* release: the job ended, result and message are final */
    uint32_t *ended_word;              /* set to 1 with `ended` (release): the run's NativeRunReport.device_ended */
    atomic_int retired;                /* the executor no longer touches the job */
    pthread_mutex_t lock;
    pthread_cond_t retired_cond;
} ExecutorJob;

typedef struct Executor {
    pthread_mutex_t lock;
    pthread_cond_t work_cond;
    ExecutorJob *head;                 /* FIFO of submitted jobs */
    ExecutorJob *tail;
    int stopping;
    unsigned thread_count;
    pthread_t threads[PTO_PIPELINE_MAX_DEPTH];
} Executor;

int executor_init(Executor *e);
void executor_destroy(Executor *e);     /* after executor_stop */

/* Starts `threads` (1..PTO_PIPELINE_MAX_DEPTH) parked threads. On failure none is left running. */
int executor_start(Executor *e, unsigned threads);
/* Wakes and joins every thread; no job may be outstanding. */
void executor_stop(Executor *e);

/* ended_word (may be NULL) is stored 1 when the job ends, 0 here. */
int executor_job_init(ExecutorJob *job, uint32_t *ended_word);
void executor_job_destroy(ExecutorJob *job); /* never while submitted and not retired */

/* Queues the job and wakes one parked thread. The job must be initialized and idle. */
void executor_submit(Executor *e, ExecutorJob *job, Runner *runner, RunExec *exec, uint32_t slot,
                     const DeviceLaunch *launch, LaunchSignal *signal);

/* Non-zero once the job ended: its result is final (acquire). Never blocks. */
int executor_job_ended(const ExecutorJob *job);

/* Blocks (bounded spin, then parks) until the job ended and the executor let go
 * of it (retired), then returns its result. */
int executor_job_wait(ExecutorJob *job);

#endif
