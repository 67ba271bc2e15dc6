package org.ptorun;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Run epochs: one process-wide counter shared by every ChipWorker. The first epoch is
 * 1, 0 is never minted (no token names it), an epoch is never reused, and running past
 * 2^64-1 is an error rather than a wrap. One epoch per prepare or blocking-run attempt,
 * minted before admission (a refused one consumes one): the library names a run's
 * diagnostic files by run id and epoch, so no two runs of the process share a name.
 */
final class RunEpochs {

    private static final RunEpochs PROCESS = new RunEpochs(0);

    private final AtomicLong last;

    RunEpochs(long start) {
        this.last = new AtomicLong(start);
    }

    /** The next epoch of the process-wide counter. */
    static long next() {
        return PROCESS.mint();
    }

    /**
     * The next epoch of this counter.
     *
     * @throws IllegalStateException when the u64 epochs are exhausted
     */
    long mint() {
        while (true) {
            long current = last.get();
            if (current == -1L) {
                throw new IllegalStateException("run epochs exhausted: every u64 value was minted");
            }
            if (last.compareAndSet(current, current + 1)) {
                return current + 1;
            }
        }
    }
}
