#include "executor.h"

#include <stdio.h>
#include <string.h>

#include "util/spin_wait.h"

int executor_init(Executor *e)
{
    memset(e, 0, sizeof *e);
    if (pthread_mutex_init(&e->lock, NULL) != 0)
        return pto_fail(PTO_ERR_FAILED, "executor: cannot initialize its mutex");
    if (pthread_cond_init(&e->work_cond, NULL) != 0) {
        pthread_mutex_destroy(&e->lock);
        return pto_fail(PTO_ERR_FAILED, "executor: cannot initialize its condition variable");
    }
    return PTO_OK;
}

void executor_destroy(Executor *e)
{
    pthread_cond_destroy(&e->work_cond);
    pthread_mutex_destroy(&e->lock);
}

/* Parks until a job is queued or the executor stops; NULL means stop. */
static ExecutorJob *next_job(Executor *e)
{
    pthread_mutex_lock(&e->lock);
    while (e->head == NULL && !e->stopping)
        pthread_cond_wait(&e->work_cond, &e->lock);
    ExecutorJob *job = e->head;
    if (job != NULL) {
        e->head = job->next;
        if (e->head == NULL)
            e->tail = NULL;
        job->next = NULL;
    }
    pthread_mutex_unlock(&e->lock);
    return job;
}

/* Publishes the outcome: the job ended. `ended` goes first (release) so that a
 * launch woken by the notify sees it; `retired` goes last, under the job's lock,
 * because once a waiter sees it the run may be torn down (signal and job
 * destroyed, storage reused): nothing of the job may be touched after it. */
static void end_job(ExecutorJob *job, int rc)
{
    job->result = rc;
    if (rc != PTO_OK) {
        const char *msg = pto_last_error();
        if (msg[0] == '\0')
            snprintf(job->message, sizeof job->message, "execution failed with code %d", rc);
        else
            snprintf(job->message, sizeof job->message, "%s", msg);
    } else {
        job->message[0] = '\0';
    }
    atomic_store_explicit(&job->ended, 1, memory_order_release);
    if (job->ended_word != NULL) /* a reader of the storage may answer the poll from it now */
        __atomic_store_n(job->ended_word, 1u, __ATOMIC_RELEASE);
    launch_signal_notify(job->signal);

    pthread_mutex_lock(&job->lock);
    atomic_store_explicit(&job->retired, 1, memory_order_release);
    pthread_cond_broadcast(&job->retired_cond);
    pthread_mutex_unlock(&job->lock);
}

static void run_job(ExecutorJob *job)
{
    pto_clear_error();
    end_job(job, runner_execute(job->runner, job->exec, job->slot, job->launch, job->signal));
}

static void *executor_thread(void *arg)
{
    Executor *e = arg;
    for (ExecutorJob *job; (job = next_job(e)) != NULL;)
        run_job(job);
    return NULL;
}

int executor_start(Executor *e, unsigned threads)
{
    if (threads == 0 || threads > PTO_PIPELINE_MAX_DEPTH)
        return pto_fail(PTO_ERR_INVALID_ARGUMENT, "executor: %u threads requested (1..%u)", threads,
                        PTO_PIPELINE_MAX_DEPTH);
    e->stopping = 0;
    e->thread_count = 0;
    for (unsigned i = 0; i < threads; i++) {
        int err = pthread_create(&e->threads[i], NULL, executor_thread, e);
        if (err != 0) {
            executor_stop(e);
            return pto_fail(PTO_ERR_FAILED, "executor: cannot start thread %u of %u (error %d)", i + 1, threads,
                            err);
        }
        e->thread_count++;
        /* named here, not by the thread itself, so the name is set when start returns */
        pthread_setname_np(e->threads[i], PTO_EXECUTOR_THREAD_NAME);
    }
    return PTO_OK;
}

void executor_stop(Executor *e)
{
    pthread_mutex_lock(&e->lock);
    e->stopping = 1;
    pthread_cond_broadcast(&e->work_cond);
    pthread_mutex_unlock(&e->lock);
    for (unsigned i = 0; i < e->thread_count; i++)
        pthread_join(e->threads[i], NULL);
    e->thread_count = 0;
}

int executor_job_init(ExecutorJob *job, uint32_t *ended_word)
{
    if (pthread_mutex_init(&job->lock, NULL) != 0)
        return pto_fail(PTO_ERR_FAILED, "executor job: cannot initialize its mutex");
    if (pthread_cond_init(&job->retired_cond, NULL) != 0) {
        pthread_mutex_destroy(&job->lock);
        return pto_fail(PTO_ERR_FAILED, "executor job: cannot initialize its condition variable");
    }
    job->next = NULL;
    job->result = PTO_OK;
    job->message[0] = '\0';
    atomic_init(&job->ended, 0);
    atomic_init(&job->retired, 0);
    job->ended_word = ended_word;
    if (ended_word != NULL)
        __atomic_store_n(ended_word, 0u, __ATOMIC_RELEASE);
    return PTO_OK;
}

void executor_job_destroy(ExecutorJob *job)
{
    pthread_cond_destroy(&job->retired_cond);
    pthread_mutex_destroy(&job->lock);
}

void executor_submit(Executor *e, ExecutorJob *job, Runner *runner, RunExec *exec, uint32_t slot,
                     const DeviceLaunch *launch, LaunchSignal *signal)
{
    job->runner = runner;
    job->exec = exec;
    job->slot = slot;
    job->launch = launch;
    job->signal = signal;
    job->next = NULL;

    pthread_mutex_lock(&e->lock);
    if (e->tail != NULL)
        e->tail->next = job;
    else
        e->head = job;
    e->tail = job;
    pthread_cond_signal(&e->work_cond);
    pthread_mutex_unlock(&e->lock);
}

int executor_job_ended(const ExecutorJob *job)
{
    return atomic_load_explicit(&job->ended, memory_order_acquire);
}

static int job_retired(const void *job)
{
    return atomic_load_explicit(&((const ExecutorJob *)job)->retired, memory_order_acquire);
}

int executor_job_wait(ExecutorJob *job)
{
    pto_spin_until(job_retired, job);
    /* Taken even when the spin saw `retired`: the executor sets it under this
     * lock, so acquiring it proves the executor has left its critical section
     * and the job may be destroyed. */
    pthread_mutex_lock(&job->lock);
    while (!atomic_load_explicit(&job->retired, memory_order_acquire))
        pthread_cond_wait(&job->retired_cond, &job->lock);
    pthread_mutex_unlock(&job->lock);
    return job->result;
}
