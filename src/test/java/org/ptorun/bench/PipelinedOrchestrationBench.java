package org.ptorun.bench;

import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;
import static org.ptorun.callable.Direction.SCALAR;

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
import org.ptorun.CallConfig;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.worker.DrainReport;
import org.ptorun.worker.Worker;

/**
 * P3: runs per second through a background {@link Worker} on an hbg library, depth 2
 * (the next run's prepare — hbg runs the orchestration on the host there — overlaps the
 * current run's execution) vs depth 1. The orchestration is the test library's
 * {@code tiled_vadd}: it computes {@value #TASKS} tiles and submits one {@code vadd}
 * task per tile (c = a + b over {@value #FLOATS} floats), so the host's prepare is real
 * work competing with the execution for the machine's cores — unlike the paced
 * (sleeping) callable of WorkerE2ETest. One operation is one run; an invocation enqueues
 * {@value #BATCH} runs from the benchmark thread and drains them. P3 = depth 2 / depth 1.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 4, time = 2)
@Fork(1)
@State(Scope.Benchmark)
public class PipelinedOrchestrationBench {

    static final int TASKS = 2048;
    static final int FLOATS = TASKS * 256;
    static final int BATCH = 16;
    private static final int CALLABLE_ID = 1;
    private static final int VADD = 0;

    @Param({"a2a3/sim/hbg"})
    public String variant;

    @Param({"1", "2"})
    public int depth;

    private Worker worker;
    private final TaskArgs[] args = new TaskArgs[BATCH];

    static ChipCallable tiledVadd() {
        return ChipCallable.builder()
                .signature(IN, IN, OUT, SCALAR)
                .child(VADD, Kernel.vadd())
                .orchestrationLibrary(BenchFiles.nativeTestFile("libptorun_test_orch.so"), "tiled_vadd")
                .build();
    }

    @Setup(Level.Trial)
    public void open() throws Exception {
        worker = Worker.builder().variant(Variant.parse(variant)).devices(0).background(true).pipelineDepth(depth)
                .queueCapacity(BATCH).build();
        if (worker.pipelineDepth() != depth) {
            throw new IllegalStateException(variant + " gives depth " + worker.pipelineDepth() + ", not " + depth);
        }
        worker.register(CALLABLE_ID, tiledVadd()).get(60, TimeUnit.SECONDS);
        float[] a = new float[FLOATS];
        float[] b = new float[FLOATS];
        for (int i = 0; i < FLOATS; i++) {
            a[i] = i;
            b[i] = 0.5f * i;
        }
        for (int r = 0; r < BATCH; r++) {
            args[r] = TaskArgs.of(Tensor.of(a), Tensor.of(b), Tensor.of(new float[FLOATS])).scalar(TASKS);
        }
    }

    @TearDown(Level.Trial)
    public void close() {
        worker.close();
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void runs() throws InterruptedException {
        for (TaskArgs a : args) {
            worker.enqueue(CALLABLE_ID, a, CallConfig.DEFAULT);
        }
        DrainReport report = worker.drain();
        if (!report.allSucceeded()) {
            throw new IllegalStateException("runs failed: " + report.failures());
        }
    }
}
