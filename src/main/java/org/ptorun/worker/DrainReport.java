package org.ptorun.worker;

import java.util.List;

/**
 * What a {@link Worker#drain()} saw: the runs finalized since the previous drain
 * returned (each run is counted by exactly one drain).
 *
 * @param succeeded runs that finalized successfully
 * @param failed runs that completed exceptionally (cancelled ones included)
 * @param failures the first {@link Worker#MAX_REPORTED_FAILURES} of the failed runs, in completion order
 */
public record DrainReport(long succeeded, long failed, List<RunFailure> failures) {

    /** A run that failed, and why. */
    public record RunFailure(RunTicket ticket, Throwable cause) {
    }

    public DrainReport {
        failures = List.copyOf(failures);
    }

    public boolean allSucceeded() {
        return failed == 0;
    }
}
