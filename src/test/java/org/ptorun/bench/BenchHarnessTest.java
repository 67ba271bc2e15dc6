package org.ptorun.bench;

import static org.assertj.core.api.Assertions.assertThat;

import static org.assertj.core.api.Assertions.within;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;
import org.ptorun.CallConfig;
import org.ptorun.ChipWorker;
import org.ptorun.HostRuntime;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;

/**
 * The benchmark suite's harness does what its figures claim (the suite itself runs only
 * with -Pbench): the C driver makes whole trivial runs through the exported contract and
 * leaves committed device memory where it was, the floor's echo thread answers every
 * round trip, the native memcpy copies, P3's orchestration adds x to z once per task, and
 * the suite reads back the figures of P3's interleaved child.
 */
class BenchHarnessTest {

    static List<String> simVariants() {
        return List.of("a2a3/sim/hbg", "a2a3/sim/trb", "a5/sim/hbg", "a5/sim/trb");
    }

    @ParameterizedTest
    @MethodSource("simVariants")
    void theCDriverRunsTrivialRunsThroughTheExportedContractOnTheLibraryJavaLoaded(String variant) {
        HostRuntime runtime = HostRuntime.load(Variant.parse(variant));
        long cycle = TrivialRun.openCDriver(runtime);
        try {
            TrivialRun.cDriverCycle(cycle);
            long baseline = NativeBench.pto_bench_cycle_committed_device_memory(cycle);
            assertThat(baseline).as("the first run committed the arenas").isPositive();
            for (int i = 0; i < 500; i++) {
                assertThat(NativeBench.pto_bench_cycle_run(cycle)).as(NativeBench.lastError()).isZero();
                assertThat(NativeBench.pto_bench_cycle_committed_device_memory(cycle)).isEqualTo(baseline);
            }
        } finally {
            NativeBench.pto_bench_cycle_close(cycle);
        }
        // the Java side of P1 on the same library, alongside
        try (ChipWorker chip = ChipWorker.open(runtime, 0)) {
            TrivialRun run = new TrivialRun(chip);
            for (int i = 0; i < 100; i++) {
                run.cycle();
            }
        }
    }

    @Test
    void theCDriverNamesWhatIsWrongWithALibraryThatIsNotThere() {
        byte[] image = {1};
        long cycle = NativeBench.pto_bench_cycle_open("/nonexistent/libptorun_x.so", image, 1, image, 1,
                TrivialRun.CALLABLE.bytes(), 0);
        assertThat(cycle).isZero();
        assertThat(NativeBench.lastError()).contains("dlopen /nonexistent/libptorun_x.so");
    }

    @Test
    void theFloorsEchoThreadAnswersEveryRoundTrip() {
        long pingPong = NativeBench.pto_bench_pingpong_open();
        assertThat(pingPong).isNotZero();
        for (int i = 0; i < 10_000; i++) {
            NativeBench.pto_bench_pingpong_round(pingPong); // returns only once the echo thread answered
        }
        NativeBench.pto_bench_pingpong_close(pingPong);
    }

    @Test
    void theNativeMemcpyCopiesEveryByte() {
        int n = 1 << 20;
        ByteBuffer src = ByteBuffer.allocateDirect(n);
        ByteBuffer dst = ByteBuffer.allocateDirect(n);
        for (int i = 0; i < n; i++) {
            src.put(i, (byte) (i * 31 + 7));
        }
        NativeBench.pto_bench_memcpy(VaddBandwidthBench.Copy.address(dst), VaddBandwidthBench.Copy.address(src), n);
        assertThat(dst).isEqualTo(src);
    }

    @ParameterizedTest
    @MethodSource("simVariants")
    void repeatVaddAddsXToZOncePerTaskInOrder(String variant) {
        int floats = 1000;
        int tasks = 37;
        float[] x = new float[floats];
        float[] z = new float[floats];
        float[] expected = new float[floats];
        for (int i = 0; i < floats; i++) {
            x[i] = i * 0.25f;
            z[i] = 3 - i;
            expected[i] = z[i];
            for (int t = 0; t < tasks; t++) {
                expected[i] += x[i]; // left to right, as the chain adds
            }
        }
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(Variant.parse(variant)), 0)) {
            chip.registerCallable(1, PipelinedOrchestrationBench.repeatVadd());
            chip.run(1, TaskArgs.of(Tensor.of(new int[] {tasks}), Tensor.of(x), Tensor.of(z)), CallConfig.DEFAULT);
        }
        for (int i = 0; i < floats; i++) {
            assertThat(z[i]).as("z[%d]", i).isEqualTo(expected[i]);
        }
    }

    @Test
    void theSuiteReadsTheInterleavedP3ChildsLineAmongItsOtherOutput() {
        // as the child prints it (2026-12-07), between its per-round lines
        List<String> lines = List.of(
                "round 29 (depth 2 first): depth 1   512.3 runs/s, depth 2   801.0 runs/s, ratio 1.564",
                "P3 interleaved variant=a2a3/sim/trb rounds=30 runs=16 ratio=1.5400 ratioP25=1.4812"
                        + " ratioP75=1.7034 depth1=498.27 depth2=803.51 prepareMs=0.9812 executionMs=1.0107",
                "");
        InterleavedPipelineBench.Result r = InterleavedPipelineBench.Result.parse(lines).orElseThrow();
        assertThat(r).isEqualTo(new InterleavedPipelineBench.Result("a2a3/sim/trb", 30, 16, 1.54, 1.4812, 1.7034,
                498.27, 803.51, 0.9812, 1.0107));
        assertThat(InterleavedPipelineBench.Result.parse(List.of(r.line()))).contains(r);
        assertThat(InterleavedPipelineBench.Result.parse(List.of("round 0 ...", "done"))).isEmpty();

        BenchSuite.Row row = BenchSuite.p3InterleavedRow("a2a3/sim/trb", Optional.of(r));
        assertThat(row.what()).contains("interleaved rounds", "30 rounds of 16 runs", "median of the per-round ratios");
        assertThat(row.measured()).contains("803.5 runs/s / 498.3 runs/s", "prepare 0.981 ms",
                "launch to complete 1.011 ms");
        // the figure is the median of the rounds' ratios, not the ratio of the medians (803.51 / 498.27 = 1.61)
        assertThat(row.figure()).isEqualTo("1.54 x");
        assertThat(row.met()).isEqualTo("met");
        assertThat(BenchSuite.p3InterleavedRow("a2a3/sim/trb", Optional.empty()).met()).isEqualTo("not measured");
    }

    @Test
    void theInterleavedMedianOfAnEvenCountIsTheMeanOfTheMiddleTwo() {
        double[] samples = {4, 1, 3, 2};
        assertThat(InterleavedPipelineBench.percentile(samples, 50)).isCloseTo(2.5, within(1e-12));
        assertThat(InterleavedPipelineBench.percentile(samples, 0)).isEqualTo(1);
        assertThat(InterleavedPipelineBench.percentile(samples, 100)).isEqualTo(4);
    }

    @Test
    void theInterleavedChildMakesBothDepthsRunsOnTrb() {
        // a short measurement, for its completeness only: no figure is checked against a bound
        InterleavedPipelineBench.Result r =
                InterleavedPipelineBench.measure(Variant.parse("a2a3/sim/trb"), 1, 2, 3, false);
        assertThat(r.rounds()).isEqualTo(2);
        assertThat(r.runs()).isEqualTo(3);
        assertThat(List.of(r.ratio(), r.depth1RunsPerSecond(), r.depth2RunsPerSecond(), r.prepareMs(),
                r.executionMs())).allSatisfy(x -> assertThat(x).isPositive().isFinite());
    }

    @Test
    void theSuiteReadsP15sChildLinesIntoItsRows() {
        // as the child prints them (2026-12-07); no bound is checked against a measurement here
        List<String> lines = List.of("P15 handoffs: 2000 counted runs, proxied calls: finalizeRun=2000",
                "P15 trivial variant=a2a3/sim/hbg inUs=17.9335 processUs=150.4355 ratio=8.1992 ratioP25=5.0153"
                        + " ratioP75=8.5470 rounds=30.0000 runs=200.0000",
                "P15 worker variant=a2a3/sim/hbg block=64.0000 inRunsPerS=48853.1715 processRunsPerS=6591.4558"
                        + " ratio=0.1337 ratioP25=0.1225 ratioP75=0.1771 rounds=30.0000",
                "P15 handoffs variant=a2a3/sim/hbg calls.finalizeRun=1.0000 calls.launchRun=1.0000"
                        + " calls.pollRun=1.0000 calls.prepareRun=1.0000 callsPerRun=4.0000 childSleepsPerRun=1.9985"
                        + " countedCycleUs=216.3091 parentSleepsPerRun=0.0640 pingInNs=254.2192"
                        + " pingProcessNs=30906.8605");
        assertThat(ProcessIsolationBench.parse(lines, "trivial")).containsEntry("ratio", 8.1992)
                .containsEntry("processUs", 150.4355).doesNotContainKey("variant");
        List<BenchSuite.Row> rows = BenchSuite.p15Rows("a2a3/sim/hbg", lines);
        assertThat(rows).extracting(BenchSuite.Row::id).containsOnly("P15");
        assertThat(rows).extracting(BenchSuite.Row::figure)
                .containsExactly("8.20 x", "-", "0.13 x", "4.00 calls, 30907 ns");
        assertThat(rows).extracting(BenchSuite.Row::met).containsExactly("NOT met", "not measured", "NOT met", "-");
        assertThat(rows.get(0).measured()).contains("process 150.4 us / in process 17.9 us", "p25 5.02");
        assertThat(rows.get(3).measured()).contains("finalizeRun 1.00, launchRun 1.00, pollRun 1.00, prepareRun 1.00");
        // onboard: the trivial cycle only
        assertThat(BenchSuite.p15Rows("a2a3/onboard/hbg", List.of())).hasSize(1)
                .allSatisfy(r -> assertThat(r.met()).isEqualTo("not measured"));
    }

    @Test
    void theSuiteReadsP16sProbeAndChildLinesIntoItsRow() {
        // as the probe and the bench children print them (2026-12-07), among their other lines
        List<String> tcp = List.of("sent bytes=268435456 ns=200000000", "sent bytes=268435456 ns=250000000",
                "sent bytes=268435456 ns=400000000", "both-ways sent bytes=268435456 ns=500000000",
                "both-ways sent bytes=268435456 ns=1000000000");
        List<String> children = List.of("joined ranks 0..1 of CommGroup[4 ranks, ...] on a2a3/sim/hbg (56 ms)",
                "bench warm-up 0: 0.653781 s",
                "bench run=0 ranks=0..1 size=4 bytes=67108864 seconds=0.100000",
                "bench run=1 ranks=0..1 size=4 bytes=67108864 seconds=0.200000",
                "bench run=2 ranks=0..1 size=4 bytes=67108864 seconds=0.100000",
                "bench run=3 ranks=0..1 size=4 bytes=67108864 seconds=0.100000",
                "bench run=4 ranks=0..1 size=4 bytes=67108864 seconds=0.100000",
                "PASS bench: rank 0 holds 16384.0 after 7 allreduces",
                "local run=0 ranks=0..1 size=2 bytes=67108864 seconds=0.010000",
                "bench run=0 ranks=2..3 size=4 bytes=67108864 seconds=0.120000",
                "bench run=1 ranks=2..3 size=4 bytes=67108864 seconds=0.110000",
                "bench run=2 ranks=2..3 size=4 bytes=67108864 seconds=0.130000",
                "bench run=3 ranks=2..3 size=4 bytes=67108864 seconds=0.090000",
                "bench run=4 ranks=2..3 size=4 bytes=67108864 seconds=0.080000");
        var f = org.ptorun.hosts.AllreduceBenchScenario.figures(tcp, children).orElseThrow();
        // per run the slowest process: 0.12, 0.2, 0.13, 0.1, 0.1; median 0.12 s
        assertThat(f.runSeconds()).containsExactly(0.12, 0.2, 0.13, 0.1, 0.1);
        assertThat(f.medianSeconds()).isEqualTo(0.12);
        assertThat(f.busBytesPerSecond()).isCloseTo(1.5 * 67108864 / 0.12, within(1e-3));
        assertThat(f.rawTcpBytesPerSecond()).isCloseTo(268435456 / 0.25, within(1e-3)); // 1024 MiB/s
        assertThat(f.localMedianSeconds()).as("one local run of five: no figure").isEmpty();
        assertThat(f.bothWaysBytesPerSecond()).hasSize(2);
        BenchSuite.Row row = BenchSuite.p16Row("a2a3/sim/hbg", 2, 2, tcp, children);
        assertThat(row.id()).isEqualTo("P16");
        assertThat(row.figure()).isEqualTo("0.78 x"); // 800 MiB/s / 1024 MiB/s
        assertThat(row.met()).isEqualTo("met");
        assertThat(row.measured()).contains("bus 800 MiB/s (0.120 s per allreduce", "raw TCP 1024 MiB/s",
                "both ways at once: 512 and 256 MiB/s");
        assertThat(row.what()).contains("2 hosts x 2 ranks", "64 MiB");
        // a missing run, or no transfer: no figure
        assertThat(BenchSuite.p16Row("a2a3/sim/hbg", 2, 2, tcp, children.subList(0, 6)).met())
                .isEqualTo("not measured");
        assertThat(BenchSuite.p16Row("a2a3/sim/hbg", 2, 1, List.of(), children).met()).isEqualTo("not measured");
        // 2 hosts x 1 rank is a comparison, not the bound's layout
        assertThat(BenchSuite.p16Row("a2a3/sim/hbg", 2, 1, tcp, children).met()).isEqualTo("comparison");
    }
}
