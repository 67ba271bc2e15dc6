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
        /** {@code RunTicket[run_id=… dispatch_id=… device=…]: <exception class>: <message>}. */
        @Override
        public String toString() {
            return ticket + ": " + cause;
        }
    }

    public DrainReport {
        failures = List.copyOf(failures);
    }

    public boolean allSucceeded() {
        return failed == 0;
    }

    /**
     * The counts on the first line, then one line per listed failure (ticket and exception),
     * and a last line counting the failures beyond {@link Worker#MAX_REPORTED_FAILURES}:
     * a report of many failures stays readable in a log.
     */
    @Override
    public String toString() {
        StringBuilder b = new StringBuilder("DrainReport[succeeded=").append(succeeded).append(", failed=")
                .append(failed).append(']');
        for (RunFailure f : failures) {
            b.append('\n').append("  ").append(f);
        }
        if (failed > failures.size()) {
            b.append('\n').append("  ... and ").append(failed - failures.size())
                    .append(" more failures, not listed");
        }
        return b.toString();
    }
}
