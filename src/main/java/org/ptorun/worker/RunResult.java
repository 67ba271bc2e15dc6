package org.ptorun.worker;

import org.ptorun.NativeRun;

/**
 * A run that finalized successfully: its results are in its output tensors.
 *
 * @param run the run's identity (slot, generation, run epoch, run id, dispatch id)
 * @param deviceId the chip it ran on
 * @param launchOrdinal this run's place among the launches on its chip: 1, 2, 3, ...
 * @param timings when each phase began and ended
 */
public record RunResult(NativeRun run, int deviceId, long launchOrdinal, RunTimings timings) {

    public long runId() {
        return run.runId();
    }

    public long dispatchId() {
        return run.dispatchId();
    }
}
