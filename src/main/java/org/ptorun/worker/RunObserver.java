package org.ptorun.worker;

import java.time.Duration;

/**
 * Told of every run a {@link Worker} finishes: the hook for metrics
 * ({@code org.ptorun.metrics.WorkerMetrics}), a timeline ({@link WorkerTimeline}, set with
 * {@link Worker.Builder#trace}) or any other accounting, set with
 * {@link Worker.Builder#runObserver} — which may be called more than once: every
 * observer is told, in the order given.
 *
 * <p>{@link #runFinished} is called exactly once per run admitted — succeeded, failed,
 * failed fast on a poisoned chip, or cancelled by {@code close()} — on the thread that
 * finished it (a chip's driver, or the thread closing the Worker), after the run's future
 * was completed and before the run stops counting as outstanding: so once
 * {@link Worker#drain()} or {@link Worker#close()} returned, every run it waited for was
 * observed. An observer must be quick and must not block (it holds up the chip's driver),
 * and must not call back into the Worker's enqueue, drain or close. An exception it throws
 * is caught and logged (once per Worker); it never affects a run or the Worker.
 */
public interface RunObserver {

    /** The Worker was built with this observer: called once, before any run. */
    default void workerBuilt(Worker worker) {
    }

    /**
     * A run finished.
     *
     * @param ticket the run (its chip: {@link RunTicket#deviceId()}; its callable:
     *        {@link RunTicket#callableId()})
     * @param result the run's result when it succeeded, else null
     * @param failure what its future failed with (a {@link RunCancelledException} when
     *        cancelled by close), null when it succeeded
     */
    default void runFinished(RunTicket ticket, RunResult result, Throwable failure) {
    }

    /**
     * A collective step ({@link Worker#enqueueCollective}) finished: every rank's run did.
     * Called once per step, after each rank's {@link #runFinished}, on the thread that
     * completed the step's last rank future (the Worker's callback executor when anything
     * else depends on it) — so possibly after a {@code drain()} returned.
     *
     * @param step the step
     * @param latency from its enqueue until its last rank's run finished and was seen to
     * @param failure the {@link CollectiveStepException} naming the failed ranks, null when
     *        every rank succeeded
     */
    default void collectiveStepFinished(CollectiveStep step, Duration latency, Throwable failure) {
    }
}
