package org.ptorun.worker;

import java.nio.file.Path;
import java.util.List;
import org.ptorun.NativeRun;

/**
 * A run that finalized successfully: its results are in its output tensors.
 *
 * @param run the run's identity (slot, generation, run epoch, run id, dispatch id)
 * @param deviceId the chip it ran on
 * @param launchOrdinal this run's place among the launches on its chip: 1, 2, 3, ...
 * @param timings when each phase began and ended
 * @param peakDeviceMemory bytes of device memory the run's own data took at its peak
 *        ({@link org.ptorun.RunReport#peakDeviceMemory()}): not the chip's committed memory,
 *        which keeps the arenas at their high-water after the run
 * @param outputFiles the diagnostic files the run wrote ({@code CallConfig.enableDepGraph},
 *        {@code enableTrace}), named by run id and run epoch; empty without a diagnostic
 */
public record RunResult(NativeRun run, int deviceId, long launchOrdinal, RunTimings timings, long peakDeviceMemory,
                        List<Path> outputFiles) {

    public RunResult {
        outputFiles = List.copyOf(outputFiles);
    }

    public long runId() {
        return run.runId();
    }

    public long dispatchId() {
        return run.dispatchId();
    }
}
