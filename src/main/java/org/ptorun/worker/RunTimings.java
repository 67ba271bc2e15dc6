package org.ptorun.worker;

import java.time.Duration;

/**
 * When each phase of a run began and ended, in {@link System#nanoTime()} units. The
 * Worker stamps its own calls on the thread that drove them; {@link #executionEnd()} is
 * the library's: the {@code CLOCK_MONOTONIC} instant the run ended on the device
 * ({@link org.ptorun.RunReport#executionEnd()} — the clock HotSpot's {@code nanoTime}
 * reads on Linux), never when the Worker noticed. So for a run that ended before the
 * Worker began to finalize it,
 * {@code prepareStart <= prepareEnd <= launchStart <= launchEnd <= executionEnd <= finalizeStart <= finalizeEnd},
 * and for a run the Worker finalized while it still executed (its finalize waited)
 * {@code finalizeStart < executionEnd < finalizeEnd}, before the results were copied
 * back. A run so short that it ended while {@code launch} was returning may have
 * {@code executionEnd} before {@code launchEnd} (never before {@code launchStart}).
 */
public record RunTimings(long enqueued, long prepareStart, long prepareEnd, long launchStart, long launchEnd,
                         long executionEnd, long finalizeStart, long finalizeEnd) {

    public Duration queueWait() {
        return Duration.ofNanos(prepareStart - enqueued);
    }

    public Duration prepare() {
        return Duration.ofNanos(prepareEnd - prepareStart);
    }

    /** From the launch call until the run ended on the device. */
    public Duration execution() {
        return Duration.ofNanos(executionEnd - launchStart);
    }

    /**
     * From the finalize call until it returned: the copy-back and the release, and —
     * for a run still executing when it began — the wait for its end.
     */
    public Duration finalizeDuration() {
        return Duration.ofNanos(finalizeEnd - finalizeStart);
    }

    /** From enqueue until finalize returned. */
    public Duration total() {
        return Duration.ofNanos(finalizeEnd - enqueued);
    }
}
