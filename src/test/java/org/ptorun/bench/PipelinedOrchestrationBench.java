package org.ptorun.bench;

import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.INOUT;

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
import org.ptorun.callable.CoreType;
import org.ptorun.callable.Program;
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
 * <p>The orchestration is the test library's {@code repeat_vadd}: it submits
 * {@value #TASKS} tasks z = z + x over {@value #FLOATS} floats, each depending on the one
 * before, so the host's prepare is real work (every submit's views checked, its
 * dependency inferred and its edge added) and the execution is a chain that one device
 * thread runs while the other core is free for the next prepare. The task count and the
 * tile were chosen so that the two halves balance on this machine (probe of 2026-12-03,
 * load 1.2, depth 1: 8 192 tasks of 512 floats 0.60 / 0.74 ms, 16 384 of 512 1.20 / 1.45 ms,
 * against 2 048 independent vadd tiles over 4 Mi floats 0.42 / 2.65 ms, whose
 * execution is bandwidth-bound and leaves nothing to hide): the overlap can at best hide
 * the shorter of the two. x and z are device buffers (child memory, never staged); the
 * count is a one-element int array the orchestration reads. One operation is one run;
 * an invocation makes {@value #BATCH} runs. P3 = depth 2 / depth 1. The depth-1 fork
 * writes its mean prepare and launch-to-complete times to
 * {@code <ptorun.benchDir>/p3-split-<variant>.properties}, so the report states both halves.
 *
 * <p><b>On trb</b> (a2a3, which prepares a run while another executes) the orchestration
 * runs on the device at launch, so a chain would leave the host nothing to hide. The host
 * half of a trb run is its prepare — staging the arguments — so its workload is one whose
 * staging costs about as much as its execution, and whose execution, like hbg's chain,
 * leaves the other core free: x, {@value #TRB_FLOATS} floats staged from a Java array at
 * every prepare (memory-bound), and a chain of {@value #TRB_PASSES} gemm_tile tasks
 * C += A·B over {@value #TRB_N} x {@value #TRB_N} matrices, A and B the start of x, C a
 * device buffer (compute-bound, one device thread). Each slot has its own C, so the runs
 * share nothing but x's array. (A memory-bound execution, tiles of tile_add over x, got
 * 0.8–1.6 × from run to run in a probe: staging and execution then compete for the
 * memory bandwidth the overlap needs.) The suite measures trb's P3 with
 * {@link InterleavedPipelineBench} (both depths in alternating rounds of one JVM: this
 * machine's speed drifts more between two forks minutes apart than the ratio is), so
 * {@link #variant} lists hbg only; {@code -p variant=a2a3/sim/trb} still runs trb here.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 4, time = 2)
@Fork(1)
@State(Scope.Benchmark)
public class PipelinedOrchestrationBench {

    static final int TASKS = 16384;
    static final int FLOATS = 512;
    static final int BATCH = 16;
    private static final int CALLABLE_ID = 1;
    private static final int VADD = 0;

    static final int TRB_FLOATS = 3 << 20;
    static final int TRB_N = 160;
    static final int TRB_PASSES = 2;

    @Param({"a2a3/sim/hbg"})
    public String variant;

    @Param({"1", "2"})
    public int depth;

    private ChipWorker chip;
    private final DeviceBuffer[] buffers = new DeviceBuffer[2];
    private Pipeline pipeline;
    private boolean measuring;

    static ChipCallable repeatVadd() {
        return ChipCallable.builder()
                .signature(IN, IN, INOUT)
                .child(VADD, Kernel.vadd())
                .orchestrationLibrary(BenchFiles.nativeTestFile("libptorun_test_orch.so"), "repeat_vadd")
                .build();
    }

    /** trb's workload: x (IN, staged), C (INOUT, a device buffer); {@value #TRB_PASSES} chained C += A·B, A and B in x. */
    static ChipCallable stagedGemmChain() {
        long matrix = 4L * TRB_N * TRB_N;
        return ChipCallable.builder()
                .signature(IN, INOUT)
                .child(VADD, CoreType.AIC, Kernel.gemmTile())
                .program(Program.builder()
                        .loop(TRB_PASSES, (p, pass) -> p.submit(VADD,
                                org.ptorun.callable.Param.tensor(0, IN, 0, matrix),
                                org.ptorun.callable.Param.tensor(0, IN, matrix, matrix),
                                org.ptorun.callable.Param.tensor(1, INOUT, 0, matrix),
                                org.ptorun.callable.Param.scalar(TRB_N), org.ptorun.callable.Param.scalar(TRB_N),
                                org.ptorun.callable.Param.scalar(TRB_N)))
                        .build())
                .build();
    }

    @Setup(Level.Trial)
    public void open() {
        Variant v = Variant.parse(variant);
        chip = open(v, depth);
        TaskArgs[] args = v.runtime() == Variant.RuntimeKind.TRB ? registerTrb(chip, buffers) : registerHbg(chip, buffers);
        pipeline = new Pipeline(chip, args);
    }

    /** {@code variant}'s chip, refused when {@code depth} is 2 and it cannot prepare a run while another executes. */
    static ChipWorker open(Variant variant, int depth) {
        ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0);
        if (depth == 2 && !chip.supportsOverlap()) {
            chip.close();
            throw new IllegalStateException(variant + " cannot prepare a run while another executes");
        }
        return chip;
    }

    /**
     * Registers trb's workload ({@link #stagedGemmChain()}) and returns each slot's
     * arguments: the same x array, and a C of its own, allocated into {@code buffers}.
     */
    static TaskArgs[] registerTrb(ChipWorker chip, DeviceBuffer[] buffers) {
        chip.registerCallable(CALLABLE_ID, stagedGemmChain());
        float[] x = new float[TRB_FLOATS];
        for (int i = 0; i < TRB_FLOATS; i++) {
            x[i] = 1f / (1 + (i & 15));
        }
        TaskArgs[] args = new TaskArgs[2];
        for (int t = 0; t < 2; t++) {
            buffers[t] = chip.malloc(4L * TRB_N * TRB_N);
            args[t] = TaskArgs.of(Tensor.of(x), Tensor.of(buffers[t], DType.F32));
        }
        return args;
    }

    private static TaskArgs[] registerHbg(ChipWorker chip, DeviceBuffer[] buffers) {
        chip.registerCallable(CALLABLE_ID, repeatVadd());
        float[] init = new float[FLOATS];
        for (int i = 0; i < FLOATS; i++) {
            init[i] = 1f / (1 + (i & 15));
        }
        Tensor[] tensors = new Tensor[3];
        tensors[0] = Tensor.of(new int[] {TASKS});
        for (int t = 0; t < 2; t++) {
            buffers[t] = chip.malloc(4L * FLOATS);
            chip.copyTo(buffers[t], init);
            tensors[t + 1] = Tensor.of(buffers[t], DType.F32);
        }
        // One TaskArgs for every run: prepare writes it off-heap, and the runs share the
        // device buffers (x is read, every run adds to the same z in launch order).
        TaskArgs args = TaskArgs.of(tensors);
        return new TaskArgs[] {args, args};
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
        if (depth != 1 || pipeline.timedRuns == 0) {
            return;
        }
        Properties p = new Properties();
        p.setProperty("runs", Long.toString(pipeline.timedRuns));
        p.setProperty("prepareMs", String.format(Locale.ROOT, "%.3f", pipeline.prepareMs()));
        p.setProperty("executionMs", String.format(Locale.ROOT, "%.3f", pipeline.executionMs()));
        System.out.println("depth 1 " + variant + ": " + p);
        String dir = System.getProperty("ptorun.benchDir");
        if (dir != null) {
            try (Writer out = Files.newBufferedWriter(Path.of(dir, splitFile(variant)))) {
                p.store(out, "PipelinedOrchestrationBench depth 1: mean prepare and launch-to-complete");
            }
        }
    }

    /** Where the depth-1 fork of {@code variant} writes its halves. */
    static String splitFile(String variant) {
        return "p3-split-" + variant.replace('/', '_') + ".properties";
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void runs() {
        if (depth == 1) {
            pipeline.depth1(BATCH, measuring);
        } else {
            pipeline.depth2(BATCH);
        }
    }

    /**
     * Runs of the registered callable on a chip's two slots, one way or the other; shared
     * with {@link InterleavedPipelineBench}, so that both measure the same loops.
     */
    static final class Pipeline {

        private final ChipWorker chip;
        private final TaskArgs[] args;
        private final PipelineSlotLease[] leases = {PipelineSlotLease.of(0, 1), PipelineSlotLease.of(1, 1)};
        private long runId;
        /** The depth-1 runs timed, and their halves' sums. */
        long timedRuns;
        long prepareNanos;
        long executionNanos;

        Pipeline(ChipWorker chip, TaskArgs[] args) {
            this.chip = chip;
            this.args = args;
        }

        private NativeRun prepare(int slot) {
            long id = ++runId;
            return chip.prepare(CALLABLE_ID, args[slot], CallConfig.DEFAULT, leases[slot], id, id, null);
        }

        /** {@code runs} runs one after the other on slot 0; {@code timed}: their halves added to the sums. */
        void depth1(int runs, boolean timed) {
            for (int r = 0; r < runs; r++) {
                long t0 = System.nanoTime();
                NativeRun run = prepare(0);
                long t1 = System.nanoTime();
                chip.launch(run);
                chip.await(run);
                long t2 = System.nanoTime();
                chip.finalizeRun(run);
                if (timed) {
                    prepareNanos += t1 - t0;
                    executionNanos += t2 - t1;
                    timedRuns++;
                }
            }
        }

        /** {@code runs} runs, each prepared on the other slot while the one before executes. */
        void depth2(int runs) {
            int slot = 0;
            NativeRun current = prepare(slot);
            chip.launch(current);
            for (int r = 1; r < runs; r++) {
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

        /** The mean prepare of the timed depth-1 runs, in ms. */
        double prepareMs() {
            return prepareNanos / 1e6 / timedRuns;
        }

        /** The mean launch to complete of the timed depth-1 runs, in ms. */
        double executionMs() {
            return executionNanos / 1e6 / timedRuns;
        }
    }
}
