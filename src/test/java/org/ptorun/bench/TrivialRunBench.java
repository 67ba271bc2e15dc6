package org.ptorun.bench;

import java.io.IOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
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
import org.ptorun.ChipWorker;
import org.ptorun.HostRuntime;
import org.ptorun.Variant;

/**
 * P1 and P2: one trivial run (one {@code noop} task), full cycle prepare → launch → poll
 * (→ await) → finalize, sampled one cycle per operation (JMH reports p50):
 * <ul>
 *   <li>{@code chipWorkerCycle} — through {@link ChipWorker};</li>
 *   <li>{@code cDrivenCycle} — the same calls made from C on the same library file
 *       (its own device context), one JNA call per cycle;</li>
 *   <li>{@code condvarRoundTrip} — the floor: wake a parked native thread, which wakes
 *       the caller back (pthread condition variables), one JNA call per round trip.</li>
 * </ul>
 * Each runs in a fork of its own, one after the other, so a change of the machine's load
 * between forks moves the ratios. {@code interleaved} therefore makes the three in turn,
 * one of each per operation, in one fork, and times each itself ({@code System.nanoTime},
 * ~25 ns, against cycles of microseconds; see the method for the order): its p50s, written to
 * {@code <ptorun.benchDir>/trivial-<variant>.properties}, are the ones the suite reports —
 * P1 = ChipWorker / C, P2 = ChipWorker / floor.
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 2)
@Fork(1)
public class TrivialRunBench {

    /** How long {@code interleaved} lets every thread park before it measures the floor. */
    static final long SETTLE_NANOS = 200_000;

    @State(Scope.Benchmark)
    public static class Chip {

        @Param({"a2a3/sim/hbg", "a2a3/sim/trb"})
        public String variant;

        TrivialRun run;
        long cDriver;

        @Setup(Level.Trial)
        public void open() {
            HostRuntime runtime = HostRuntime.load(Variant.parse(variant));
            run = new TrivialRun(ChipWorker.open(runtime, 0));
            cDriver = TrivialRun.openCDriver(runtime);
        }

        @TearDown(Level.Trial)
        public void close() {
            NativeBench.pto_bench_cycle_close(cDriver);
            run.chip().close();
        }
    }

    @State(Scope.Benchmark)
    public static class Floor {

        long pingPong;

        @Setup(Level.Trial)
        public void open() {
            pingPong = NativeBench.pto_bench_pingpong_open();
            if (pingPong == 0) {
                throw new IllegalStateException(NativeBench.lastError());
            }
        }

        @TearDown(Level.Trial)
        public void close() {
            NativeBench.pto_bench_pingpong_close(pingPong);
        }
    }

    /** The three measurements of {@code interleaved}, measurement iterations only. */
    @State(Scope.Benchmark)
    public static class Interleaved {

        private static final int CAPACITY = 1 << 18;

        @Param({"a2a3/sim/hbg", "a2a3/sim/trb"})
        public String variant;

        TrivialRun run;
        long cDriver;
        long pingPong;
        boolean measuring;
        boolean cFirst;
        int samples;
        final long[] chipWorker = new long[CAPACITY];
        final long[] c = new long[CAPACITY];
        final long[] floor = new long[CAPACITY];

        @Setup(Level.Trial)
        public void open() {
            HostRuntime runtime = HostRuntime.load(Variant.parse(variant));
            run = new TrivialRun(ChipWorker.open(runtime, 0));
            cDriver = TrivialRun.openCDriver(runtime);
            pingPong = NativeBench.pto_bench_pingpong_open();
            if (pingPong == 0) {
                throw new IllegalStateException(NativeBench.lastError());
            }
        }

        @Setup(Level.Iteration)
        public void iteration(IterationParams iteration) {
            measuring = iteration.getType() == IterationType.MEASUREMENT;
        }

        @TearDown(Level.Trial)
        public void close() throws IOException {
            NativeBench.pto_bench_pingpong_close(pingPong);
            NativeBench.pto_bench_cycle_close(cDriver);
            run.chip().close();
            report();
        }

        private void report() throws IOException {
            Properties p = new Properties();
            p.setProperty("variant", variant);
            p.setProperty("samples", Integer.toString(samples));
            for (double q : new double[] {50, 90}) {
                String suffix = "p" + (int) q;
                p.setProperty("chipWorker." + suffix, micros(chipWorker, q));
                p.setProperty("c." + suffix, micros(c, q));
                p.setProperty("floor." + suffix, micros(floor, q));
            }
            System.out.println("interleaved " + variant + ": " + p);
            String dir = System.getProperty("ptorun.benchDir");
            if (dir != null) {
                Path file = Path.of(dir, "trivial-" + variant.replace('/', '_') + ".properties");
                try (Writer out = Files.newBufferedWriter(file)) {
                    p.store(out, "TrivialRunBench.interleaved, microseconds");
                }
            }
        }

        private String micros(long[] nanos, double percentile) {
            long[] sorted = Arrays.copyOf(nanos, samples);
            Arrays.sort(sorted);
            int index = (int) Math.min(samples - 1, Math.floor(percentile / 100 * samples));
            return String.format(Locale.ROOT, "%.3f", sorted[index] / 1e3);
        }
    }

    /**
     * One ChipWorker cycle and one C-driven cycle, each timed, in an order that alternates
     * from one operation to the next: whichever comes second shares the machine with the
     * first one's threads winding down (the run path's bounded spins before parking), so
     * each takes either position half of the time. Then, after a pause long enough for
     * every thread of both runs to park ({@value #SETTLE_NANOS} ns, several times the
     * spins' bound), one floor round trip: the machine's wake cost with nothing of ours
     * spinning, under whatever load the machine has at that moment.
     */
    @Benchmark
    @BenchmarkMode(Mode.AverageTime)
    public void interleaved(Interleaved s) {
        long t0 = System.nanoTime();
        long chipWorker;
        long c;
        s.cFirst = !s.cFirst;
        if (s.cFirst) {
            TrivialRun.cDriverCycle(s.cDriver);
            long t1 = System.nanoTime();
            s.run.cycle();
            long t2 = System.nanoTime();
            c = t1 - t0;
            chipWorker = t2 - t1;
        } else {
            s.run.cycle();
            long t1 = System.nanoTime();
            TrivialRun.cDriverCycle(s.cDriver);
            long t2 = System.nanoTime();
            chipWorker = t1 - t0;
            c = t2 - t1;
        }
        LockSupport.parkNanos(SETTLE_NANOS);
        long t3 = System.nanoTime();
        NativeBench.pto_bench_pingpong_round(s.pingPong);
        long floor = System.nanoTime() - t3;
        if (s.measuring && s.samples < Interleaved.CAPACITY) {
            int i = s.samples++;
            s.chipWorker[i] = chipWorker;
            s.c[i] = c;
            s.floor[i] = floor;
        }
    }

    @Benchmark
    public void chipWorkerCycle(Chip chip) {
        chip.run.cycle();
    }

    @Benchmark
    public void cDrivenCycle(Chip chip) {
        TrivialRun.cDriverCycle(chip.cDriver);
    }

    @Benchmark
    public void condvarRoundTrip(Floor floor) {
        NativeBench.pto_bench_pingpong_round(floor.pingPong);
    }
}
