package org.ptorun.worker;

import java.time.Duration;

/**
 * When each phase of a run began and ended, in {@link System#nanoTime()} units on the
 * thread that drove it. Execution runs from the launch call until the Worker saw the run
 * complete (a poll that answered true, or an await that returned), so it includes the
 * time until the Worker looked.
 */
public record RunTimings(long enqueued, long prepareStart, long prepareEnd, long launchStart, long launchEnd,
                         long executionEnd, long finalizeStart, long finalizeEnd) {

    public Duration queueWait() {
        return Duration.ofNanos(prepareStart - enqueued);
    }

    public Duration prepare() {
        return Duration.ofNanos(prepareEnd - prepareStart);
    }

    /** From the launch call until the Worker saw the run complete. */
    public Duration execution() {
        return Duration.ofNanos(executionEnd - launchStart);
    }

    public Duration finalizeDuration() {
        return Duration.ofNanos(finalizeEnd - finalizeStart);
    }

    /** From enqueue until finalize returned. */
    public Duration total() {
        return Duration.ofNanos(finalizeEnd - enqueued);
    }
}
