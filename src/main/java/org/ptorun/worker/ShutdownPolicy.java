package org.ptorun.worker;

/** What {@link Worker#close()} does with runs that were enqueued but not yet prepared. */
public enum ShutdownPolicy {
    /** Run every enqueued run to completion before closing the chips. */
    DRAIN,
    /**
     * Cancel every run not yet launched (queued, or prepared and waiting for its
     * predecessor); runs already launched are still finalized. A cancelled run's future
     * completes with a {@link RunCancelledException} (it reads as cancelled).
     */
    CANCEL_QUEUED
}
