package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.ptorun.SimE2E.assertBitExact;
import static org.ptorun.SimE2E.filled;
import static org.ptorun.SimE2E.random;
import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;
import static org.ptorun.callable.Direction.SCALAR;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.CoreType;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;
import org.ptorun.internal.OffHeapBlock;
import org.ptorun.worker.RunResult;
import org.ptorun.worker.RunTicket;
import org.ptorun.worker.RunTimings;
import org.ptorun.worker.Worker;

/**
 * The figures a run reports, on all eight libraries: when the device finished it
 * ({@code RunTimings.executionEnd}, {@link RunReport#executionEnd()}), the device memory
 * its own data took at its peak, and the diagnostic files it wrote. Timing claims are
 * ordering facts made by causality: a run's only task waits on a gate the test opens,
 * so the device cannot finish before the test's clock read that precedes the opening.
 */
class RunFiguresE2ETest {

    static final int GATED = 6;
    private static final int LOCALS = 7;
    private static final int N = 64;
    private static final long BYTES = 4L * N;
    private static final VarHandle INT = MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);

    static List<Variant> variants() {
        return SimE2E.allVariants();
    }

    /** z = x, once the int32 whose address is the run's scalar is non-zero (gated_copy of the test kernels). */
    static ChipCallable gated() {
        return ChipCallable.builder()
                .signature(IN, OUT, SCALAR)
                .child(1, CoreType.AIV, Kernel.fromLibrary(SimE2E.kernelLibrary(), "gated_copy"))
                .program(Program.builder()
                        .submit(1, Param.tensor(0, IN, 0, BYTES), Param.tensor(1, OUT, 0, BYTES), Param.scalarArg(0))
                        .build())
                .build();
    }

    /**
     * A shut gate: an off-heap int32 the gated kernel polls. Close it only after the chip
     * that may poll it is closed; {@link #open()} it before closing that chip, so a failed
     * test leaves no kernel waiting.
     */
    static final class Gate implements AutoCloseable {
        private final OffHeapBlock word = OffHeapBlock.allocate(64, 64);

        long address() {
            return word.address();
        }

        /** Opens the gate and returns the time just before it did: the device finishes after it. */
        long open() {
            long before = System.nanoTime();
            INT.setRelease(word.buffer(), 0, 1);
            return before;
        }

        @Override
        public void close() {
            word.close();
        }
    }

    record Gated(RunTicket ticket, float[] x, float[] z) {
        RunResult result() throws Exception {
            RunResult r = ticket.result().get(60, TimeUnit.SECONDS);
            assertBitExact(z, x);
            return r;
        }
    }

    static Gated enqueueGated(Worker w, Gate gate, CallConfig config, long seed) throws InterruptedException {
        float[] x = random(N, seed);
        float[] z = filled(N);
        TaskArgs args = TaskArgs.of(Tensor.of(x), Tensor.of(z)).scalar(gate.address());
        return new Gated(w.enqueue(GATED, args, config), x, z);
    }

    /** prepareStart <= prepareEnd <= launchStart <= launchEnd, the Worker's own stamps. */
    private static void assertPhasesInOrder(RunTimings t) {
        assertThat(t.prepareStart()).isLessThanOrEqualTo(t.prepareEnd());
        assertThat(t.prepareEnd()).isLessThanOrEqualTo(t.launchStart());
        assertThat(t.launchStart()).isLessThanOrEqualTo(t.launchEnd());
        assertThat(t.finalizeStart()).isLessThanOrEqualTo(t.finalizeEnd());
    }

    /**
     * Two runs of one Worker. The first ends while the Worker is only polling (it opens
     * its gate after the launch returned, and the caller-driven poll() never finalizes a
     * run it has not seen end): its executionEnd lies after the gate opened and no later
     * than the finalize's start. The second is finalized while it still executes: a
     * drain() is inside finalize, waiting, when the test opens its gate; its executionEnd
     * lies after that finalize began and the gate opened, before the finalize returned,
     * and before the copy-back — the trace's collect span, the library's own stamp of
     * when finalize turned from waiting to copying, starts no earlier — and after every
     * task of the run ended on the device.
     */
    @ParameterizedTest
    @MethodSource("variants")
    void executionEndIsWhenTheDeviceFinishedWhetherTheWorkerSawItOrFinalizeWaitedForIt(Variant variant,
            @TempDir Path dir) throws Exception {
        CallConfig traced = CallConfig.builder().enableTrace(true).enableDepGraph(true).outputPrefix(dir).build();
        try (Gate seen = new Gate(); Gate waited = new Gate()) {
            Worker w = Worker.builder().variant(variant).build();
            try {
                executionEndIsWhenTheDeviceFinished(w, seen, waited, traced, dir);
            } finally {
                seen.open();
                waited.open();
                w.close();
            }
        }
    }

    private static void executionEndIsWhenTheDeviceFinished(Worker w, Gate seen, Gate waited, CallConfig traced,
                                                            Path dir) throws Exception {
        w.register(GATED, gated()).get(60, TimeUnit.SECONDS);

        Gated first = enqueueGated(w, seen, CallConfig.DEFAULT, 1);
        w.poll(); // prepares and launches; the gate holds the run on the device
        assertThat(first.ticket().isAccepted()).isTrue();
        long opened = seen.open();
        while (!first.ticket().isDone()) {
            w.poll(); // finalizes only once it has seen the run end
            Thread.yield();
        }
        RunTimings t = first.result().timings();
        assertPhasesInOrder(t);
        assertThat(t.launchEnd()).as("the gate opened after launch returned").isLessThanOrEqualTo(opened);
        assertThat(t.executionEnd()).as("the device finished after its gate opened").isGreaterThan(opened);
        assertThat(t.executionEnd()).as("and before the finalize that followed seeing it end")
                .isLessThanOrEqualTo(t.finalizeStart());
        assertThat(first.result().outputFiles()).isEmpty();

        Gated second = enqueueGated(w, waited, traced, 2);
        TestThreads.Started drainer = TestThreads.start("drainer", w::drain);
        TestThreads.awaitInside(drainer.thread(), ChipWorker.class.getName(), "finalizeBegun");
        long openedDuringFinalize = waited.open();
        drainer.join();
        RunResult r = second.result();
        RunTimings u = r.timings();
        assertPhasesInOrder(u);
        assertThat(u.launchEnd()).isLessThanOrEqualTo(u.finalizeStart());
        assertThat(u.finalizeStart()).as("finalize began before the gate opened")
                .isLessThanOrEqualTo(openedDuringFinalize);
        assertThat(u.executionEnd()).as("the device finished after the gate opened, inside the finalize")
                .isGreaterThan(openedDuringFinalize).isLessThan(u.finalizeEnd());

        Path graph = dir.resolve("dep_graph_" + r.runId() + "_" + r.run().runEpoch() + ".dot");
        Path trace = dir.resolve("trace_" + r.runId() + "_" + r.run().runEpoch() + ".json");
        assertThat(r.outputFiles()).as("the files the run wrote, in order").containsExactly(graph, trace);
        assertThat(graph).isRegularFile();
        assertThat(trace).isRegularFile();
        JsonNode json = new ObjectMapper().enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
                .readTree(trace.toFile());
        long base = json.get("metadata").get("clock_base_ns").asLong();
        long collectStart = -1;
        long lastTaskEnd = -1;
        for (JsonNode e : json.get("traceEvents")) {
            if (!e.get("ph").asText().equals("X")) {
                continue;
            }
            long start = base + nanos(e.get("ts"));
            if (e.get("tid").asInt() == 0 && e.get("name").asText().equals("collect")) {
                collectStart = start;
            } else if (e.get("tid").asInt() != 0) {
                lastTaskEnd = Math.max(lastTaskEnd, start + nanos(e.get("dur")));
            }
        }
        assertThat(lastTaskEnd).as("the gated task ended after its gate opened").isGreaterThan(openedDuringFinalize);
        assertThat(u.executionEnd()).as("the device's end follows its last task's")
                .isGreaterThanOrEqualTo(lastTaskEnd);
        assertThat(collectStart).as("the trace's collect span").isPositive();
        assertThat(u.executionEnd()).as("the device's end precedes the copy-back")
                .isLessThanOrEqualTo(collectStart);
        assertThat(collectStart).isLessThan(u.finalizeEnd());
    }

    /** A trace timestamp (microseconds with exactly three decimals) in nanoseconds. */
    private static long nanos(JsonNode microseconds) {
        return microseconds.decimalValue().movePointRight(3).longValueExact();
    }

    /**
     * A ChipWorker gets the same figure from finalizeRun: the device's end lies after the
     * gate opened (which was after launch returned) and before finalize returned; a run
     * finalized without a launch never executed.
     */
    @ParameterizedTest
    @MethodSource("variants")
    void finalizeRunReportsWhenTheDeviceFinished(Variant variant) {
        float[] x = random(N, 3);
        float[] z = filled(N);
        try (Gate gate = new Gate(); ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(GATED, gated());
            NativeRun run = chip.prepare(GATED, TaskArgs.of(Tensor.of(x), Tensor.of(z)).scalar(gate.address()),
                    CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 11, 12, null);
            long launched;
            long opened;
            try {
                chip.launch(run);
                launched = System.nanoTime();
            } finally {
                opened = gate.open(); // whatever happened: the chip's close must not wait on the gate
            }
            RunReport report = chip.finalizeRun(run);
            long finalized = System.nanoTime();
            assertBitExact(z, x);
            assertThat(report.run()).isEqualTo(run);
            assertThat(report.executed()).isTrue();
            assertThat(launched).isLessThanOrEqualTo(opened);
            assertThat(report.executionEnd()).isGreaterThan(opened).isLessThan(finalized);
            assertThat(report.outputFiles()).isEmpty();
            assertThat(report.peakDeviceMemory()).as("at least its two staged tensors").isGreaterThanOrEqualTo(2 * BYTES);

            NativeRun never = chip.prepare(GATED, TaskArgs.of(Tensor.of(x), Tensor.of(z)).scalar(gate.address()),
                    CallConfig.DEFAULT, PipelineSlotLease.of(0, 2), 13, 14, null);
            RunReport abandoned = chip.finalizeRun(never);
            assertThat(abandoned.executed()).as("finalized without a launch").isFalse();
            assertThat(abandoned.executionEnd()).isZero();
        }
    }

    /**
     * y = x through a local of {@code localBytes} of which the tasks touch the first
     * {@code BYTES}: the run's memory grows with the local, its arguments stay the same.
     */
    static ChipCallable throughLocal(long localBytes) {
        return ChipCallable.builder()
                .signature(IN, OUT)
                .child(0, Kernel.vcopy())
                .program(Program.builder()
                        .allocTensor(0, localBytes)
                        .submit(0, Param.tensor(0, IN, 0, BYTES), Param.local(0, OUT, 0, BYTES))
                        .submit(0, Param.local(0, IN, 0, BYTES), Param.tensor(1, OUT, 0, BYTES))
                        .build())
                .build();
    }

    /**
     * The peak device memory a run reports counts its locals: a run whose local is L bytes
     * reports at least L plus its two staged tensors, and a run with a larger local reports
     * at least the difference more — through a Worker's RunResult and a ChipWorker's
     * blocking run alike.
     */
    @ParameterizedTest
    @MethodSource("variants")
    void peakDeviceMemoryCountsTheRunsLocals(Variant variant) throws Exception {
        long small = 64 << 10;
        long large = 256 << 10;
        float[] x = random(N, 4);
        long[] viaWorker = new long[2];
        try (Worker w = Worker.builder().variant(variant).build()) {
            long[] sizes = {small, large};
            for (int i = 0; i < 2; i++) {
                w.register(LOCALS + i, throughLocal(sizes[i])).get(60, TimeUnit.SECONDS);
                float[] y = filled(N);
                RunTicket t = w.enqueue(LOCALS + i, TaskArgs.of(Tensor.of(x), Tensor.of(y)), CallConfig.DEFAULT);
                w.drain();
                viaWorker[i] = t.result().get(60, TimeUnit.SECONDS).peakDeviceMemory();
                assertBitExact(y, x);
            }
        }
        assertThat(viaWorker[0]).as("the local and the two staged tensors").isGreaterThanOrEqualTo(small + 2 * BYTES);
        assertThat(viaWorker[1] - viaWorker[0]).as("a larger local, the same arguments")
                .isGreaterThanOrEqualTo(large - small);

        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(LOCALS, throughLocal(small));
            chip.registerCallable(LOCALS + 1, throughLocal(large));
            float[] y = filled(N);
            RunReport a = chip.run(LOCALS, TaskArgs.of(Tensor.of(x), Tensor.of(y)), CallConfig.DEFAULT);
            RunReport b = chip.run(LOCALS + 1, TaskArgs.of(Tensor.of(x), Tensor.of(y)), CallConfig.DEFAULT);
            assertBitExact(y, x);
            assertThat(a.peakDeviceMemory()).as("the ChipWorker's report: the same figure")
                    .isEqualTo(viaWorker[0]);
            assertThat(b.peakDeviceMemory()).isEqualTo(viaWorker[1]);
            assertThat(a.executed()).isTrue();
        }
    }

    /**
     * Two consecutive blocking runs with the dependency graph on write two files, each
     * named by its own run epoch, and each run returns the path of its own.
     */
    @ParameterizedTest
    @MethodSource("variants")
    void consecutiveBlockingRunsWriteDistinctGraphsAndReturnTheirPaths(Variant variant, @TempDir Path dir)
            throws IOException {
        CallConfig config = CallConfig.builder().enableDepGraph(true).outputPrefix(dir).build();
        int n = 16;
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(LOCALS, ChipWorkerE2ETest.vectorChain(n));
            RunReport one = chip.run(LOCALS, ChipWorkerE2ETest.chainArgs(random(n, 1), random(n, 2), filled(n)),
                    config);
            RunReport two = chip.run(LOCALS, ChipWorkerE2ETest.chainArgs(random(n, 3), random(n, 4), filled(n)),
                    config);
            assertThat(one.run().runEpoch()).isPositive();
            assertThat(two.run().runEpoch()).isGreaterThan(one.run().runEpoch());
            Path first = dir.resolve("dep_graph_0_" + one.run().runEpoch() + ".dot");
            Path second = dir.resolve("dep_graph_0_" + two.run().runEpoch() + ".dot");
            assertThat(one.outputFiles()).containsExactly(first);
            assertThat(two.outputFiles()).containsExactly(second);
            assertThat(first).isRegularFile();
            assertThat(second).isRegularFile();
            assertThat(Files.readString(first)).as("the same graph, twice").isEqualTo(Files.readString(second))
                    .startsWith("digraph ptorun_run {\n");
            try (var listing = Files.list(dir)) {
                assertThat(listing.toList()).as("nothing overwritten, nothing else").containsExactlyInAnyOrder(first,
                        second);
            }
        }
    }
}
