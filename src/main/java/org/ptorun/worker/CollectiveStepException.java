package org.ptorun.worker;

import java.util.List;
import java.util.Map;

/**
 * A collective step failed on at least one rank, so it failed on every rank: each rank's
 * future completes with this exception, naming the failed ranks and carrying each one's
 * own failure ({@link #failures()}; the first is also the cause).
 */
public final class CollectiveStepException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final transient Map<Integer, Throwable> failures;

    CollectiveStepException(int rank, Map<Integer, Throwable> failures) {
        super("collective step failed on rank(s) " + List.copyOf(failures.keySet()) + " (seen by rank " + rank + "): "
                + failures.values().iterator().next().getMessage(), failures.values().iterator().next());
        this.failures = Map.copyOf(failures);
    }

    /** The ranks whose runs failed, in rank order. */
    public List<Integer> failedRanks() {
        return failures.keySet().stream().sorted().toList();
    }

    /** Each failed rank's own failure. */
    public Map<Integer, Throwable> failures() {
        return failures;
    }
}
