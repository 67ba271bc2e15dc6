package org.ptorun;

import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * What the library reports of a run it finalized, as {@link ChipWorker#finalizeRun} and
 * {@link ChipWorker#run ChipWorker.run} return it (the library writes it into the run's
 * storage, {@code NativeRunReport}, before its finalize returns; docs/abi.md).
 *
 * @param run the run's identity; a blocking run's too, whose run epoch names its files
 * @param executionEnd when the run ended on the device, in {@link System#nanoTime()} units:
 *        the library's {@code CLOCK_MONOTONIC}, the clock HotSpot's {@code nanoTime} reads
 *        on Linux. The sim stamps it as the launch's last AICPU participation returns,
 *        onboard as the run's streams synchronize — never when the caller noticed, and
 *        before the results are copied back. A run so short that it ended while
 *        {@code launch} was returning may have ended before {@code launch} returned.
 *        0 when the run never executed (finalized without a launch).
 * @param peakDeviceMemory bytes of device memory the run's own data took at its peak: its
 *        staged tensors, its locals at their high-water, its graph or staging header and
 *        its diagnostic buffers (docs/java.md). Not the chip's committed memory, which hbg
 *        keeps at every arena bank's high-water after the run, and not the caller's own
 *        {@link DeviceBuffer}s
 * @param outputFiles the diagnostic files the run wrote ({@link CallConfig#enableDepGraph()}
 *        then {@link CallConfig#enableTrace()}), each named by run id and run epoch; empty
 *        without a diagnostic
 * @param graphSource how prepare got the run's task graph: built by the orchestration,
 *        built and recorded, or a recording replayed (hbg programs; docs/recorded-graphs.md)
 * @param orchestrationNanos CPU time of the thread that ran the run's orchestration (the
 *        program's interpretation or the orchestration library, building the task graph):
 *        on hbg the host's, in prepare, 0 when prepare replayed a recorded graph; on trb the
 *        device orchestrator's, known after a successful run (0 otherwise)
 */
public record RunReport(NativeRun run, long executionEnd, long peakDeviceMemory, List<Path> outputFiles,
        GraphSource graphSource, long orchestrationNanos) {

    public RunReport {
        Objects.requireNonNull(run, "run");
        outputFiles = List.copyOf(outputFiles);
        Objects.requireNonNull(graphSource, "graphSource");
    }

    /** A report of a run whose graph was built (no recording involved), its orchestration time unknown. */
    public RunReport(NativeRun run, long executionEnd, long peakDeviceMemory, List<Path> outputFiles) {
        this(run, executionEnd, peakDeviceMemory, outputFiles, GraphSource.BUILT, 0);
    }

    /** True when the device executed the run ({@link #executionEnd()} is a time). */
    public boolean executed() {
        return executionEnd != 0;
    }
}
