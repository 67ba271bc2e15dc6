package org.ptorun;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.ptorun.callable.ChipCallable;
import org.ptorun.capture.RunCapture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link CallConfig.Builder#captureFailuresTo} for a {@link ChipWorker}'s runs: the inputs
 * of a run whose config names a directory are copied when it is prepared (or when a
 * blocking {@code run} begins), before the library sees them and while the caller's arrays
 * still hold them; the capture is held by the run's slot until the run finishes, and
 * written to the directory if the run fails — at prepare, launch, poll or finalize, at the
 * first failure only — as {@code run-<runId>-<dispatchId>.ptocap} (with {@code -<runEpoch>}
 * before the suffix when a file of that name exists: a ChipWorker's caller picks the ids,
 * and a blocking {@code run} has 0 and 0). The same {@link RunCapture} and file as a
 * Worker's. Neither step ever changes a run's outcome or exception: a capture that cannot
 * be taken (too large, a {@code DeviceBuffer} tensor, no callable registered under the id)
 * or written is logged (WARN) and skipped.
 */
final class ChipFailureCapture {

    private static final Logger LOG = LoggerFactory.getLogger(ChipFailureCapture.class);

    /** A prepared run's capture, until the run finishes. */
    private record Held(long runEpoch, RunCapture capture) {
    }

    private final Variant variant;
    private final CallableRegistry callables;
    /** By slot: the capture of the run the slot holds, if its config asked for one. */
    private final AtomicReferenceArray<Held> held;

    ChipFailureCapture(Variant variant, CallableRegistry callables, int slots) {
        this.variant = variant;
        this.callables = callables;
        this.held = new AtomicReferenceArray<>(slots);
    }

    /**
     * The run's inputs now when its config names a capture directory; null when it does
     * not, or (logged) when the capture cannot be taken. Never throws.
     */
    RunCapture take(int callableId, TaskArgs args, CallConfig config) {
        if (config == null || args == null || config.captureFailuresTo().isEmpty()) {
            return null; // one check per run while capture is off
        }
        try {
            ChipCallable callable = callables.callableOf(callableId);
            if (callable == null) {
                LOG.warn("run of callable {} on {} is not captured: no callable is registered under that id",
                        callableId, variant);
                return null;
            }
            return RunCapture.of(variant, callableId, callable, args, config);
        } catch (RuntimeException e) {
            LOG.warn("run of callable {} on {} is not captured: {}", callableId, variant, e.getMessage());
            return null;
        }
    }

    /** A prepared run's capture is held until it finishes (nothing when null). */
    void hold(NativeRun run, RunCapture capture) {
        if (capture != null) {
            held.set(run.slot(), new Held(run.runEpoch(), capture));
        }
    }

    /** Takes the capture {@code run} holds, if any (from then on no other call finds it). */
    RunCapture release(NativeRun run) {
        Held h = held.get(run.slot());
        if (h == null || h.runEpoch() != run.runEpoch() || !held.compareAndSet(run.slot(), h, null)) {
            return null;
        }
        return h.capture();
    }

    /** {@code run} failed with {@code failure}: writes the capture it holds, if any. */
    void failed(NativeRun run, Throwable failure) {
        RunCapture c = release(run);
        if (c != null) {
            write(c, run.runId(), run.dispatchId(), run.runEpoch(), failure);
        }
    }

    /**
     * Writes the failed run's capture (nothing when null) to its config's directory. The
     * identity is the failure's run when it names one, else the one given (epoch 0: the run
     * never got one). Never throws.
     */
    void write(RunCapture capture, long runId, long dispatchId, long runEpoch, Throwable failure) {
        if (capture == null) {
            return;
        }
        try {
            RunCapture done = capture.withIdentity(new RunCapture.RunIdentity(runId, dispatchId, runEpoch))
                    .withFailure(failure);
            Path dir = capture.config().captureFailuresTo().orElseThrow();
            Path file = dir.resolve(done.fileName());
            if (Files.exists(file)) { // another run with these ids failed before: keep both
                RunCapture.RunIdentity id = done.identity().orElseThrow();
                file = dir.resolve("run-" + Long.toUnsignedString(id.runId()) + "-"
                        + Long.toUnsignedString(id.dispatchId()) + "-" + Long.toUnsignedString(id.runEpoch())
                        + RunCapture.SUFFIX);
            }
            done.write(file);
            LOG.info("run_id={} dispatch_id={} on {} failed; captured to {}", Long.toUnsignedString(runId),
                    Long.toUnsignedString(dispatchId), variant, file);
        } catch (RuntimeException e) {
            LOG.warn("the failed run_id={} dispatch_id={} on {} could not be captured: {}",
                    Long.toUnsignedString(runId), Long.toUnsignedString(dispatchId), variant, e.getMessage());
        }
    }

    /** The chip closed: the captures of runs it finalized are dropped. */
    void clear() {
        for (int i = 0; i < held.length(); i++) {
            held.set(i, null);
        }
    }
}
