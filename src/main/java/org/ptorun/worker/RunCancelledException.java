package org.ptorun.worker;

import java.util.concurrent.CancellationException;

/**
 * A run the {@link Worker} gave up without launching it: {@link Worker#close()} under
 * {@link ShutdownPolicy#CANCEL_QUEUED} cancels every run not yet launched. Its
 * {@link RunTicket#result() future} completes with this exception, which says which run,
 * at which stage and under which policy; its cause is the close that cancelled it (its
 * stack trace shows where close was called).
 *
 * <p>It is a {@link CancellationException}, so the future behaves as a cancelled one:
 * {@code isCancelled()} is true, and {@code get()} and {@code join()} throw this
 * exception itself (not wrapped). The same exception is the run's entry in the
 * {@link DrainReport}.
 */
public final class RunCancelledException extends CancellationException {

    private static final long serialVersionUID = 1L;

    private final ShutdownPolicy policy;
    private final long runId;
    private final long dispatchId;
    private final int deviceId;
    private final boolean prepared;

    RunCancelledException(RunTicket ticket, boolean prepared, ShutdownPolicy policy, Throwable cause) {
        super("Worker.close() under ShutdownPolicy." + policy + " cancelled the run "
                + (prepared ? "after its prepare, before its launch (finalized unlaunched)" : "before its prepare")
                + " (that policy cancels every run not yet launched): device " + ticket.deviceId() + " "
                + (prepared && ticket.run != null ? ticket.run.identity()
                        : "(run_id=" + Long.toUnsignedString(ticket.runId()) + " dispatch_id="
                                + Long.toUnsignedString(ticket.dispatchId()) + ")"));
        initCause(cause);
        this.policy = policy;
        this.runId = ticket.runId();
        this.dispatchId = ticket.dispatchId();
        this.deviceId = ticket.deviceId();
        this.prepared = prepared;
    }

    /** The policy under which the Worker closed. */
    public ShutdownPolicy policy() {
        return policy;
    }

    /** The cancelled run's id ({@link RunTicket#runId()}). */
    public long runId() {
        return runId;
    }

    /** The cancelled run's dispatch id ({@link RunTicket#dispatchId()}). */
    public long dispatchId() {
        return dispatchId;
    }

    /** The device id of the chip the run was assigned to. */
    public int deviceId() {
        return deviceId;
    }

    /** True when the run had been prepared (then finalized without a launch); false when it was still queued. */
    public boolean wasPrepared() {
        return prepared;
    }
}
