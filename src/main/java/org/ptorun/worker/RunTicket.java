package org.ptorun.worker;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import org.ptorun.AcceptanceWord;
import org.ptorun.CallConfig;
import org.ptorun.DeviceBuffer;
import org.ptorun.NativeRun;
import org.ptorun.PipelineSlotLease;
import org.ptorun.RunReport;
import org.ptorun.TaskArgs;

/**
 * One enqueued run: its identity, its chip, its launch acceptance and its result.
 *
 * <p>{@link #result()} completes normally with a {@link RunResult}, exceptionally with the
 * run's {@code PtoRunException} (a {@code ChipPoisonedException} when its chip was poisoned
 * before it ran), or cancelled by {@link Worker#close()} under
 * {@link ShutdownPolicy#CANCEL_QUEUED} — then {@code isCancelled()} is true and
 * {@code get()} / {@code join()} throw a {@link RunCancelledException} naming the run and
 * the policy, whose cause is that close. User code never runs on the thread that drives the
 * chip: continuations attached before completion run on the Worker's callback executor
 * ({@link Worker.Builder#callbackExecutor}), and when anything depends on the future at
 * completion (also through {@code CompletableFuture.allOf}) the completion itself is
 * handed to that executor; with no dependents it completes on the driving thread at no
 * cost. Completing or cancelling the future yourself does not affect the run.
 */
public final class RunTicket {

    private final long runId;
    private final long dispatchId;
    private final int deviceId;
    private final WorkerFuture<RunResult> result;
    /** Its chip's lane (the Worker's index of the chip). */
    final int lane;

    // set at enqueue, read by the chip's driver
    final int callableId;
    final CallConfig config;
    TaskArgs args;
    final long enqueuedAt;
    /** Its config as the chip is given it (see {@link #chipConfig()}); set by its chip's driver. */
    private CallConfig chipConfig;
    /** Worker.Builder.captureFailures: its inputs copied at admission; null when off. */
    org.ptorun.capture.RunCapture capture;
    /**
     * A rank of a collective step: the dispatch ids of the step's runs in rank order (shared
     * by them, never changed); null for a run of its own. Set at admission before it is queued.
     */
    long[] stepDispatchIds;
    /** The device buffers of its args, held from enqueue until it finishes (none: empty). */
    private List<DeviceBuffer.Hold> holds = List.of();

    // owned by the thread driving the chip's lane (one at a time, see ChipLane)
    NativeRun run;
    PipelineSlotLease lease;
    long prepareStart;
    long prepareEnd;
    long launchStart;
    long launchEnd;
    RunReport report;         // what its successful finalize returned
    long finalizeStart;
    long finalizeEnd;
    boolean launched;
    long launchOrdinal;
    long pollMark;

    /** System.nanoTime() when the Worker finished it; written before {@link #finished}, read after it. */
    private long finishedAt;

    // read by any thread
    private volatile AcceptanceWord word;
    private volatile boolean finished;
    private volatile boolean acceptedAtFinish;

    RunTicket(long runId, long dispatchId, int lane, int deviceId, int callableId, TaskArgs args,
              CallConfig config, long enqueuedAt, Executor callbacks) {
        this.result = new WorkerFuture<>(callbacks);
        this.runId = runId;
        this.dispatchId = dispatchId;
        this.lane = lane;
        this.deviceId = deviceId;
        this.callableId = callableId;
        this.args = args;
        this.config = config;
        this.enqueuedAt = enqueuedAt;
    }

    /** The run id the chip sees: the Worker assigns it, equal to the dispatch id. */
    public long runId() {
        return runId;
    }

    /** The run's place in the Worker's dispatch order: 1, 2, 3, ... across every chip. */
    public long dispatchId() {
        return dispatchId;
    }

    /** The id the run's callable was registered under ({@link Worker#register}). */
    public int callableId() {
        return callableId;
    }

    /** The device id of the chip the run was assigned to. */
    public int deviceId() {
        return deviceId;
    }

    /**
     * The acceptance word the run captured at prepare; empty before prepare. The word is
     * the Worker's and is reused for a later run once this one is finalized: read
     * {@link #isAccepted()} rather than the word after that.
     */
    public Optional<AcceptanceWord> acceptanceWord() {
        return finished ? Optional.empty() : Optional.ofNullable(word);
    }

    /**
     * True once the run crossed its launch marker; stays as it was at finalize (a run
     * that failed before the marker is never accepted).
     */
    public boolean isAccepted() {
        AcceptanceWord w = word;
        if (w == null) {
            return false;
        }
        boolean now = !finished && w.isAccepted();
        // the word is reset for a later run only after finished is set: re-check
        return finished ? acceptedAtFinish : now;
    }

    /**
     * When the run was enqueued: a {@link System#nanoTime()} reading, the clock of
     * {@link RunTimings} ({@link RunTimings#enqueued()} of a successful run).
     */
    public long enqueuedNanos() {
        return enqueuedAt;
    }

    /**
     * When the Worker finished the run, whatever its outcome: a {@link System#nanoTime()}
     * reading taken once its last call on the chip returned (a successful run's finalize,
     * a failed run's failing phase or the finalize that followed it) or, for a run that
     * never reached its chip (failed fast on a poisoned chip, cancelled by close), when it
     * was failed or cancelled; before its future is completed and before a failure capture
     * is written. 0 while the run is not done.
     */
    public long finishedNanos() {
        return finished ? finishedAt : 0;
    }

    /**
     * From enqueue until the Worker finished the run ({@link #finishedNanos()}), for a
     * run that succeeded, failed or was cancelled alike; empty while the run is not done.
     * A successful run's latency is at least its {@link RunTimings#total()}.
     */
    public Optional<Duration> latency() {
        return finished ? Optional.of(Duration.ofNanos(finishedAt - enqueuedAt)) : Optional.empty();
    }

    /** True once the Worker finished the run (its future is complete or being completed). */
    public boolean isDone() {
        return finished;
    }

    /** The run's outcome; see the class comment for the thread it completes on. */
    public CompletableFuture<RunResult> result() {
        return result;
    }

    /**
     * The config the chip prepares the run with: its config without
     * {@code captureFailuresTo}, which the Worker honours itself (FailureCapture, with its
     * inputs copied at admission) — the ChipWorker would capture the run a second time.
     * Called by its chip's driver.
     */
    CallConfig chipConfig() {
        CallConfig c = chipConfig;
        if (c == null) {
            c = config.captureFailuresTo().isEmpty() ? config : config.toBuilder().captureFailuresTo(null).build();
            chipConfig = c;
        }
        return c;
    }

    WorkerFuture<RunResult> future() {
        return result;
    }

    AcceptanceWord word() {
        return word;
    }

    void capturedWord(AcceptanceWord w) {
        this.word = w;
    }

    /**
     * Holds every device buffer of its args until it finishes, so none is freed (nor a
     * window's group closed) under the queued run.
     *
     * @throws IllegalStateException when one is closed; then it holds none
     */
    void holdBuffers() {
        holds = args.holdDeviceBuffers(this);
    }

    /** Ends the holds of {@link #holdBuffers} (a ticket that finishes, or is never queued). */
    void releaseBuffers() {
        List<DeviceBuffer.Hold> h = holds;
        holds = List.of();
        h.forEach(DeviceBuffer.Hold::close);
    }

    /** The run no longer holds its word nor its buffers: remember whether it was accepted. */
    void finish(boolean accepted) {
        this.finishedAt = System.nanoTime();
        this.acceptedAtFinish = accepted;
        this.finished = true;
        this.args = null;
        releaseBuffers();
    }

    @Override
    public String toString() {
        return "RunTicket[run_id=" + runId + " dispatch_id=" + dispatchId + " device=" + deviceId + "]";
    }
}
