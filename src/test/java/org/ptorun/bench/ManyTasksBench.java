package org.ptorun.bench;

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
import org.ptorun.ChipWorker;
import org.ptorun.HostRuntime;
import org.ptorun.TaskArgs;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Program;

/**
 * P4: one run of {@value #TASKS} independent {@code noop} tasks (a program looping one
 * SUBMIT), full blocking cycle through {@link ChipWorker#run}; one operation is one task,
 * so the score is tasks per second (hbg: graph built on the host in prepare; trb:
 * orchestrated on the device while it executes).
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 3)
@Fork(1)
@State(Scope.Benchmark)
public class ManyTasksBench {

    static final int TASKS = 100_000;
    private static final int CALLABLE_ID = 2;
    private static final int NOOP = 0;

    @Param({"a2a3/sim/hbg", "a2a3/sim/trb"})
    public String variant;

    private ChipWorker chip;
    private final TaskArgs args = new TaskArgs();

    @Setup(Level.Trial)
    public void open() {
        chip = ChipWorker.open(HostRuntime.load(Variant.parse(variant)), 0);
        chip.registerCallable(CALLABLE_ID, ChipCallable.builder()
                .child(NOOP, Kernel.noop())
                .program(Program.builder().loop(TASKS, (p, i) -> p.submit(NOOP)).build())
                .build());
    }

    @TearDown(Level.Trial)
    public void close() {
        chip.close();
    }

    @Benchmark
    @OperationsPerInvocation(TASKS)
    public void noopTasks() {
        chip.run(CALLABLE_ID, args, CallConfig.DEFAULT);
    }
}
