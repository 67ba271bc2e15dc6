package org.ptorun.worker;

import java.nio.file.Path;
import org.ptorun.CallConfig;
import org.ptorun.TaskArgs;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;
import org.ptorun.capture.RunCapture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link Worker.Builder#captureFailures} (or a run's {@code CallConfig.captureFailuresTo}, which
 * wins): every such run's inputs copied at admission, a failed
 * run's capture written as {@code <dir>/run-<runId>-<dispatchId>.ptocap} before its future
 * fails. Neither step ever fails a run: a capture that cannot be taken (too large, a device
 * buffer tensor) or written is logged and skipped.
 */
final class FailureCapture {

    private static final Logger LOG = LoggerFactory.getLogger(FailureCapture.class);

    private final Variant variant;
    private final Path dir;
    private final long maxBytes;

    /** @param dir the Worker's capture directory; null: only runs whose config names one */
    FailureCapture(Variant variant, Path dir, long maxBytes) {
        this.variant = variant;
        this.dir = dir;
        this.maxBytes = maxBytes;
    }

    /**
     * The run's capture before it runs when failures are captured (the Worker's option or its
     * config's {@code captureFailuresTo}); null when not, or (logged) when it cannot be taken.
     */
    RunCapture take(int callableId, ChipCallable callable, TaskArgs args, CallConfig config) {
        if (callable == null || (dir == null && config.captureFailuresTo().isEmpty())) {
            return null;
        }
        try {
            return RunCapture.of(variant, callableId, callable, args, config, maxBytes);
        } catch (RuntimeException e) {
            LOG.warn("run of callable {} is not captured: {}", callableId, e.getMessage());
            return null;
        }
    }

    /** Writes the failed run's capture, if it has one. */
    void failed(RunTicket t, Throwable failure) {
        RunCapture c = t.capture;
        t.capture = null;
        if (c == null) {
            return;
        }
        try {
            long epoch = t.run != null ? t.run.runEpoch() : 0;
            RunCapture done = c.withIdentity(new RunCapture.RunIdentity(t.runId(), t.dispatchId(), epoch))
                    .withFailure(failure);
            Path file = done.write(t.config.captureFailuresTo().orElse(dir).resolve(done.fileName()));
            LOG.info("run_id={} dispatch_id={} failed; captured to {}", t.runId(), t.dispatchId(), file);
        } catch (RuntimeException e) {
            LOG.warn("the failed run_id={} dispatch_id={} could not be captured: {}", t.runId(), t.dispatchId(),
                    e.getMessage());
        }
    }
}
