package org.ptorun.bench;

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
 * P1 = chipWorkerCycle / cDrivenCycle, P2 = chipWorkerCycle / condvarRoundTrip.
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 2)
@Fork(1)
public class TrivialRunBench {

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
