package org.ptorun.bench;

import java.io.IOException;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
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
import org.ptorun.HostRuntime;
import org.ptorun.TaskArgs;
import org.ptorun.Variant;
import org.ptorun.worker.Worker;

/**
 * P9: trivial runs one at a time through a background {@link Worker} on one chip
 * ({@code enqueue} → the run's future completed) vs the same runs through a bare
 * {@link ChipWorker} loop (prepare → launch → poll/await → finalize on the calling
 * thread), in one fork. P9 is a throughput — runs per second of a stream of runs — so
 * each operation times a <em>block</em> of {@value #BLOCK} consecutive runs of each, in
 * an order that alternates from one operation to the next (whichever goes second shares
 * the cores with the first one's threads winding down). Blocks, not single runs: timed
 * one run each, the Worker's dispatcher spent its 50 µs look for the next run (ChipLane)
 * in the bare loop's run, and its next run paid the park that follows it, which is
 * neither loop's throughput. Runs per second = 1 / mean time of a run; the means go to
 * {@code <ptorun.benchDir>/p9-<variant>.properties}, with the p50 of the blocks' per-run
 * times. P9 = Worker runs/s / ChipWorker runs/s. The Worker drives device 0, the bare
 * loop device 1.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 2)
@Fork(1)
public class WorkerThroughputBench {

    /** Consecutive runs per timed block. */
    static final int BLOCK = 64;

    @State(Scope.Benchmark)
    public static class Interleaved {

        private static final int CAPACITY = 1 << 18;

        @Param({"a2a3/sim/hbg", "a2a3/sim/trb"})
        public String variant;

        Worker worker;
        TrivialRun bare;
        final TaskArgs args = new TaskArgs();
        boolean measuring;
        boolean workerFirst;
        int samples;
        final long[] viaWorker = new long[CAPACITY];
        final long[] viaChipWorker = new long[CAPACITY];

        @Setup(Level.Trial)
        public void open() {
            HostRuntime runtime = HostRuntime.load(Variant.parse(variant));
            worker = Worker.builder().runtime(runtime).devices(0).background(true).build();
            worker.register(TrivialRun.CALLABLE_ID, TrivialRun.CALLABLE).join();
            bare = new TrivialRun(ChipWorker.open(runtime, 1));
        }

        @Setup(Level.Iteration)
        public void iteration(IterationParams iteration) {
            measuring = iteration.getType() == IterationType.MEASUREMENT;
        }

        @TearDown(Level.Trial)
        public void close() throws IOException {
            worker.close();
            bare.chip().close();
            Properties p = new Properties();
            p.setProperty("variant", variant);
            p.setProperty("samples", Integer.toString(samples));
            p.setProperty("worker.meanUs", BenchProperties.meanMicros(viaWorker, samples));
            p.setProperty("chipWorker.meanUs", BenchProperties.meanMicros(viaChipWorker, samples));
            p.setProperty("worker.p50Us", BenchProperties.micros(viaWorker, samples, 50));
            p.setProperty("chipWorker.p50Us", BenchProperties.micros(viaChipWorker, samples, 50));
            BenchProperties.write("p9-" + variant.replace('/', '_') + ".properties",
                    "WorkerThroughputBench.interleaved, microseconds per run", p);
        }

        /** {@value #BLOCK} runs through the Worker, one at a time; nanoseconds per run. */
        long workerBlock() {
            long t0 = System.nanoTime();
            try {
                for (int i = 0; i < BLOCK; i++) {
                    worker.enqueue(TrivialRun.CALLABLE_ID, args, CallConfig.DEFAULT).result().join();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
            return (System.nanoTime() - t0) / BLOCK;
        }

        /** {@value #BLOCK} runs through the bare ChipWorker loop; nanoseconds per run. */
        long bareBlock() {
            long t0 = System.nanoTime();
            for (int i = 0; i < BLOCK; i++) {
                bare.cycle();
            }
            return (System.nanoTime() - t0) / BLOCK;
        }
    }

    @Benchmark
    public void interleaved(Interleaved s) {
        long viaWorker;
        long viaChipWorker;
        s.workerFirst = !s.workerFirst;
        if (s.workerFirst) {
            viaWorker = s.workerBlock();
            viaChipWorker = s.bareBlock();
        } else {
            viaChipWorker = s.bareBlock();
            viaWorker = s.workerBlock();
        }
        if (s.measuring && s.samples < Interleaved.CAPACITY) {
            int i = s.samples++;
            s.viaWorker[i] = viaWorker;
            s.viaChipWorker[i] = viaChipWorker;
        }
    }
}
