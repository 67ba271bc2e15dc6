/*
 * The trb scheduler: ready queues per core type, the start of a ready task on a
 * free logical core of its type (oldest first, as in the graph executor),
 * completion (consumers released, dependency nodes, scope heaps and slots
 * freed), the end of the run, and the orchestrator's waits.
 *
 * Who runs a ready task. A participation that finishes a kernel runs the next
 * ready task itself and wakes others only for the tasks beyond that one; the
 * orchestrator, which is busy orchestrating, wakes participations for what its
 * submits make ready, except under the **lone-task rule**: a task a submit
 * makes ready that is the only startable task, while no participation is on
 * its way (asked of the platform or signaled, not yet arrived), is *kept* —
 * nobody is woken for it. The orchestrator runs it itself when the
 * orchestration returns or waits (back-pressure, read/write_tensor); if the
 * orchestration makes another api call first, the kept task is released (a
 * participation is woken for it, as any other ready task), so a kept task
 * waits for at most the orchestration's own code between two calls. A kept
 * task is an ordinary ready task in every other respect: any participation
 * that looks for work may take it, a stop or a passed deadline keeps it from
 * starting, and a kernel fault is recorded the same way.
 *
 * Every function here is called with aicpu_device.lock held unless it says
 * otherwise.
 */
#ifndef PTORUN_TRB_SCHEDULER_H
#define PTORUN_TRB_SCHEDULER_H

#include <stdint.h>

#include "device/aicpu/aicpu_device.h"
#include "device/aicpu/trb_run.h"

/* Forgets the previous run's queues and kept task. */
void trb_sched_reset(TrbRun *t);

/* The orchestrator submitted task `ref`, ready when `ready`: queues it and
   returns how many participations to ask for (trb_sched_request), 0 when the
   lone-task rule keeps it. */
uint32_t trb_sched_submitted(AicpuDevice *d, TrbRun *t, uint64_t ref, int ready);

/* Unlocked: the orchestration goes on, so a kept task still waiting is
   released (a participation is asked for it). */
void trb_sched_release_kept(AicpuDevice *d, TrbRun *t);

/* trb_sched_release_kept with the lock held: the participations to ask for
   (trb_sched_request, once the lock is released). */
uint32_t trb_sched_release_kept_locked(AicpuDevice *d, TrbRun *t);

/* Unlocked: asks the platform for `ask` participations and books its answer. */
void trb_sched_request(AicpuDevice *d, const TrbRun *t, uint32_t ask);

/* Ends the run once the orchestration has returned and nothing is left to run. */
void trb_sched_maybe_end(AicpuDevice *d, TrbRun *t);

/* A participation schedules until the run ends (DONE) or, on-demand, until it
   has nothing to do (IDLE); returns with the lock held. */
int32_t trb_schedule(AicpuDevice *d, TrbRun *t, uint32_t thread_count, const PtoAicpuHooks *hooks);

typedef int (*TrbWaitUntil)(TrbRun *t, const void *arg);

/* The orchestrator waits until until(t, arg) holds, running ready tasks on its
   own thread meanwhile and parking (never spinning) when it cannot. Fails with
   the run's error when the run stops. */
int32_t trb_orch_wait(AicpuDevice *d, TrbRun *t, TrbWaitUntil until, const void *arg);

/* Unlocked: trb_orch_wait, taking the lock only when until(t, arg) does not
   hold already. */
int32_t trb_orch_await(AicpuDevice *d, TrbRun *t, TrbWaitUntil until, const void *arg);

#endif
