package org.ptorun.bench;

import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;
import static org.ptorun.callable.Direction.SCALAR;

import java.io.IOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.runner.IterationType;
import org.ptorun.CallConfig;
import org.ptorun.ChipWorker;
import org.ptorun.DType;
import org.ptorun.DeviceBuffer;
import org.ptorun.HostRuntime;
import org.ptorun.NativeRun;
import org.ptorun.PipelineSlotLease;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;

/**
 * P3: runs per second on an hbg library, pipelined at depth 2 (the next run is prepared
 * on the other slot while the current one executes — hbg runs the orchestration on the
 * host, in prepare) vs depth 1 (prepare, launch, await, finalize, one after the other),
 * driven through a {@link ChipWorker} with two slots by the benchmark thread.
 *
 * <p>The orchestration is the test library's {@code tiled_vadd}: it computes
 * {@value #TASKS} tiles and submits one {@code vadd} task per tile (c = a + b over
 * {@value #FLOATS} floats), so the host's prepare is real work competing with the
 * execution for the machine's cores — unlike the paced (sleeping) callable of
 * WorkerE2ETest. The tensors are device buffers (child memory, never staged), so prepare
 * is the orchestration and its graph; the tile size gives the execution about the weight
 * of the prepare on a 2-core machine (the overlap can at best hide the shorter of the
 * two). One operation is one run; an invocation makes {@value #BATCH} runs. P3 = depth 2 /
 * depth 1. The depth-1 fork also writes its mean prepare and launch-to-complete times to
 * {@code <ptorun.benchDir>/p3-split.properties}, so the report says how much there was
 * to overlap.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 4, time = 2)
@Fork(1)
@State(Scope.Benchmark)
public class PipelinedOrchestrationBench {

    static final int TASKS = 2048;
    static final int FLOATS = TASKS * 2048;
    static final int BATCH = 16;
    private static final int CALLABLE_ID = 1;
    private static final int VADD = 0;

    @Param({"a2a3/sim/hbg"})
    public String variant;

    @Param({"1", "2"})
    public int depth;

    private ChipWorker chip;
    private final DeviceBuffer[] buffers = new DeviceBuffer[3];
    private TaskArgs args;
    private final PipelineSlotLease[] leases = {PipelineSlotLease.of(0, 1), PipelineSlotLease.of(1, 1)};
    private long runId;
    private boolean measuring;
    private long measuredRuns;
    private long prepareNanos;
    private long executionNanos;

    static ChipCallable tiledVadd() {
        return ChipCallable.builder()
                .signature(IN, IN, OUT, SCALAR)
                .child(VADD, Kernel.vadd())
                .orchestrationLibrary(BenchFiles.nativeTestFile("libptorun_test_orch.so"), "tiled_vadd")
                .build();
    }

    @Setup(Level.Trial)
    public void open() {
        chip = ChipWorker.open(HostRuntime.load(Variant.parse(variant)), 0);
        if (depth == 2 && !chip.supportsConcurrentPrepare()) {
            throw new IllegalStateException(variant + " cannot prepare a run while another executes");
        }
        chip.registerCallable(CALLABLE_ID, tiledVadd());
        float[] init = new float[FLOATS];
        for (int i = 0; i < FLOATS; i++) {
            init[i] = i & 1023;
        }
        Tensor[] tensors = new Tensor[3];
        for (int t = 0; t < 3; t++) {
            buffers[t] = chip.malloc(4L * FLOATS);
            chip.copyTo(buffers[t], init);
            tensors[t] = Tensor.of(buffers[t], DType.F32);
        }
        // One TaskArgs for every run: prepare writes it off-heap, and the runs share the
        // device buffers (a and b are read, every run writes the same c in launch order).
        args = TaskArgs.of(tensors).scalar(TASKS);
    }

    @Setup(Level.Iteration)
    public void iteration(IterationParams iteration) {
        measuring = iteration.getType() == IterationType.MEASUREMENT;
    }

    @TearDown(Level.Trial)
    public void close() throws IOException {
        for (DeviceBuffer b : buffers) {
            b.close();
        }
        chip.close();
        if (depth != 1 || measuredRuns == 0) {
            return;
        }
        Properties p = new Properties();
        p.setProperty("runs", Long.toString(measuredRuns));
        p.setProperty("prepareMs", String.format(Locale.ROOT, "%.3f", prepareNanos / 1e6 / measuredRuns));
        p.setProperty("executionMs", String.format(Locale.ROOT, "%.3f", executionNanos / 1e6 / measuredRuns));
        System.out.println("depth 1 " + variant + ": " + p);
        String dir = System.getProperty("ptorun.benchDir");
        if (dir != null) {
            try (Writer out = Files.newBufferedWriter(Path.of(dir, "p3-split.properties"))) {
                p.store(out, "PipelinedOrchestrationBench depth 1: mean prepare and launch-to-complete");
            }
        }
    }

    private NativeRun prepare(int slot) {
        long id = ++runId;
        return chip.prepare(CALLABLE_ID, args, CallConfig.DEFAULT, leases[slot], id, id, null);
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void runs() {
        if (depth == 1) {
            for (int r = 0; r < BATCH; r++) {
                long t0 = System.nanoTime();
                NativeRun run = prepare(0);
                long t1 = System.nanoTime();
                chip.launch(run);
                chip.await(run);
                long t2 = System.nanoTime();
                chip.finalizeRun(run);
                if (measuring) {
                    prepareNanos += t1 - t0;
                    executionNanos += t2 - t1;
                    measuredRuns++;
                }
            }
            return;
        }
        int slot = 0;
        NativeRun current = prepare(slot);
        chip.launch(current);
        for (int r = 1; r < BATCH; r++) {
            slot ^= 1;
            NativeRun next = prepare(slot); // while `current` executes
            chip.await(current);
            chip.finalizeRun(current);
            chip.launch(next);
            current = next;
        }
        chip.await(current);
        chip.finalizeRun(current);
    }
}
