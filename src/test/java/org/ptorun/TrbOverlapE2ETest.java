package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.ptorun.SimE2E.assertBitExact;
import static org.ptorun.SimE2E.filled;
import static org.ptorun.SimE2E.random;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.RunFiguresE2ETest.Gate;
import org.ptorun.RunFiguresE2ETest.Gated;
import org.ptorun.worker.RunResult;
import org.ptorun.worker.RunTimings;
import org.ptorun.worker.Worker;

/**
 * trb overlaps runs where it can (docs/device.md, The trb runtime): on a2a3, whose two
 * slots share bank 0's ring image, a run whose ring sizing is the one of the image its
 * executing predecessor uses is prepared during that execution; one with another sizing
 * is "not now" ({@link OverlapNotNowException}) and the chip works on. a5 trb has one
 * slot and never overlaps. The predecessor is held on the device by a gated kernel, so
 * "during its execution" is a fact of causality, not of timing; every result is compared
 * with a Java reference.
 */
class TrbOverlapE2ETest {

    private static final int GATED = RunFiguresE2ETest.GATED;
    private static final int CHAIN = 1;
    private static final int N = 64;
    /** A ring sizing other than the default's: it does not fit the default's image. */
    private static final CallConfig OTHER = CallConfig.builder().ringTaskWindow(0, 64).ringHeap(2, 4096).build();

    private ChipWorker chip;
    /** Opened and closed after the chip: a kernel may poll a gate until its chip closes. */
    private final List<Gate> gates = new ArrayList<>();

    static List<Variant> trb() {
        return SimE2E.allTrbVariants();
    }

    /** The trb libraries with a second pipeline slot: a2a3's. */
    static List<Variant> twoSlotTrb() {
        return trb().stream().filter(v -> v.arch() == Variant.Arch.A2A3).toList();
    }

    @AfterEach
    void close() {
        gates.forEach(Gate::open);
        if (chip != null) {
            chip.close();
        }
        gates.forEach(Gate::close);
    }

    private Gate gate() {
        Gate g = new Gate();
        gates.add(g);
        return g;
    }

    /** A gated run (z = x once its gate opens) prepared in {@code slot} and launched. */
    private record Held(NativeRun run, float[] x, float[] z) {
    }

    private Held launchGated(Gate gate, int slot, long seed) {
        float[] x = random(N, seed);
        float[] z = filled(N);
        NativeRun run = chip.prepare(GATED, TaskArgs.of(Tensor.of(x), Tensor.of(z)).scalar(gate.address()),
                CallConfig.DEFAULT, PipelineSlotLease.of(slot, 1), 100 + seed, 100 + seed, null);
        chip.launch(run);
        return new Held(run, x, z);
    }

    private void open(Variant variant) {
        chip = ChipWorker.open(HostRuntime.load(variant), 0);
        chip.registerCallable(GATED, RunFiguresE2ETest.gated());
        chip.registerCallable(CHAIN, ChipWorkerE2ETest.vectorChain(N));
    }

    @ParameterizedTest
    @MethodSource("trb")
    void overlapIsOfferedWhereThereIsASecondSlot(Variant variant) {
        open(variant);
        boolean twoSlots = variant.arch() == Variant.Arch.A2A3;
        assertThat(chip.pipelineDepth()).isEqualTo(twoSlots ? 2 : 1);
        assertThat(chip.supportsOverlap()).isEqualTo(twoSlots);
        assertThat(HostRuntime.load(variant).supportsOverlap()).isEqualTo(twoSlots);
    }

    @ParameterizedTest
    @MethodSource("twoSlotTrb")
    void aSuccessorOfTheSameRingSizingIsPreparedWhileItsPredecessorExecutesAndBothAreRight(Variant variant) {
        open(variant);
        for (int round = 0; round < 3; round++) {
            int slot = round % 2; // the predecessor in either slot
            Gate gate = gate();
            Held a = launchGated(gate, slot, round);
            float[] p = random(N, 10 + round);
            float[] q = random(N, 20 + round);
            float[] f = filled(N);
            NativeRun b = chip.prepare(CHAIN, ChipWorkerE2ETest.chainArgs(p, q, f), CallConfig.DEFAULT,
                    PipelineSlotLease.of(1 - slot, 1), 200 + round, 200 + round, null);
            assertThat(chip.poll(a.run())).as("the gated predecessor still executes").isFalse();
            gate.open();
            chip.finalizeRun(a.run());
            assertBitExact(a.z(), a.x());
            chip.launch(b);
            chip.finalizeRun(b);
            assertBitExact(f, ChipWorkerE2ETest.reference(p, q));
        }
        assertThat(chip.isHealthy()).isTrue();
    }

    @ParameterizedTest
    @MethodSource("twoSlotTrb")
    void aSuccessorOfAnotherRingSizingIsNotNowNamingTheRunAndTheSizesAndTheChipWorksOn(Variant variant) {
        open(variant);
        chip.run(CHAIN, ChipWorkerE2ETest.chainArgs(random(N, 1), random(N, 2), filled(N)), OTHER,
                PipelineSlotLease.of(1, 1), 0, 0, null); // slot 1's staging exists: a refusal could not hide a take
        Gate gate = gate();
        Held a = launchGated(gate, 0, 7); // the default sizing: bank 0's image is rebuilt for it
        long committed = chip.committedDeviceMemory();
        float[] p = random(N, 11);
        float[] q = random(N, 12);
        float[] f = filled(N);
        TaskArgs args = ChipWorkerE2ETest.chainArgs(p, q, f);
        for (long generation = 2; generation <= 3; generation++) { // refused alike, again and again
            long lease = generation;
            OverlapNotNowException e = catchThrowableOfType(
                    () -> chip.prepare(CHAIN, args, OTHER, PipelineSlotLease.of(1, lease), 300, 301, null),
                    OverlapNotNowException.class);
            assertThat(e).as("the successor of another ring sizing").isNotNull();
            NativeRun refused = e.run().orElseThrow();
            assertThat(refused.slot()).isEqualTo(1);
            assertThat(refused.generation()).isEqualTo(generation);
            assertThat(e.error()).contains(PtoError.OVERLAP_NOT_NOW);
            assertThat(e.getMessage()).isEqualTo("prepare of callable " + CHAIN + " failed: PTO_ERR_OVERLAP_NOT_NOW"
                    + " (-17): not now: run (run_id=107 slot=0 run_epoch=" + a.run().runEpoch() + ") executes and"
                    + " this run's ring sizing differs from the runtime image that run uses (bank 0, rewritten by a"
                    + " rebuild): ring 0 task window 64 (image 1024), ring 2 heap 4096 (image 1048576); prepare this"
                    + " run again once that run is finalized " + refused.identity());
        }
        assertThat(chip.committedDeviceMemory()).as("the refused prepares took nothing").isEqualTo(committed);
        assertThat(chip.phaseOf(1)).isEqualTo(SlotTable.Phase.EMPTY);
        assertThat(chip.isHealthy()).isTrue();
        assertThat(chip.poll(a.run())).as("the executing run is untouched").isFalse();
        gate.open();
        chip.finalizeRun(a.run());
        assertBitExact(a.z(), a.x());
        // alone now: the same run prepares (its image is built again), runs and is right
        NativeRun b = chip.prepare(CHAIN, args, OTHER, PipelineSlotLease.of(1, 4), 300, 301, null);
        chip.launch(b);
        chip.finalizeRun(b);
        assertBitExact(f, ChipWorkerE2ETest.reference(p, q));
        // the image moves back to the default sizing with the next run alone, and a fitting
        // successor is staged beside it again
        Gate again = gate();
        Held c = launchGated(again, 0, 8);
        float[] f2 = filled(N);
        NativeRun d = chip.prepare(CHAIN, ChipWorkerE2ETest.chainArgs(p, q, f2), CallConfig.DEFAULT,
                PipelineSlotLease.of(1, 5), 400, 401, null);
        assertThat(chip.poll(c.run())).isFalse();
        again.open();
        chip.finalizeRun(c.run());
        assertBitExact(c.z(), c.x());
        chip.launch(d);
        chip.finalizeRun(d);
        assertBitExact(f2, ChipWorkerE2ETest.reference(p, q));
    }

    @ParameterizedTest
    @MethodSource("twoSlotTrb")
    void aNotNowIsNoFailureItWritesNoCapture(Variant variant, @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        open(variant);
        Gate gate = gate();
        Held a = launchGated(gate, 0, 9);
        float[] f = filled(N);
        TaskArgs args = ChipWorkerE2ETest.chainArgs(random(N, 13), random(N, 14), f);
        CallConfig captured = OTHER.toBuilder().captureFailuresTo(dir).build();
        assertThat(catchThrowableOfType(
                () -> chip.prepare(CHAIN, args, captured, PipelineSlotLease.of(1, 2), 500, 501, null),
                OverlapNotNowException.class)).isNotNull();
        try (var files = java.nio.file.Files.list(dir)) {
            assertThat(files.toList()).as("\"not now\" is retried, not captured").isEmpty();
        }
        gate.open();
        chip.finalizeRun(a.run());
        NativeRun b = chip.prepare(CHAIN, args, captured, PipelineSlotLease.of(1, 3), 500, 501, null);
        chip.launch(b);
        chip.finalizeRun(b);
        try (var files = java.nio.file.Files.list(dir)) {
            assertThat(files.toList()).as("nor is the run that then succeeded").isEmpty();
        }
    }

    /**
     * A caller-driven Worker with every run gated, configs alternating in pairs: each run's
     * gate opens only once the Worker made every move it could while that run executes (so
     * it tried to stage the next one). Every result is right; on a2a3 a successor of the
     * same ring sizing was prepared before its predecessor ended on the device, one of
     * another sizing only after its predecessor was finalized — the Worker met "not now"
     * and its future never saw it; a5 (one slot) prepares every run after the previous one.
     */
    @ParameterizedTest
    @MethodSource("trb")
    void aWorkerStagesFittingSuccessorsAndPreparesTheOthersAfterTheFinalizeEveryResultRight(Variant variant)
            throws Exception {
        CallConfig[] configs = {CallConfig.DEFAULT, CallConfig.DEFAULT, OTHER, OTHER, CallConfig.DEFAULT, OTHER,
            CallConfig.DEFAULT, CallConfig.DEFAULT};
        List<Gate> gates = new ArrayList<>();
        List<Gated> runs = new ArrayList<>();
        Worker w = Worker.builder().variant(variant).background(false).build();
        try {
            w.register(GATED, RunFiguresE2ETest.gated());
            settle(w);
            for (int i = 0; i < configs.length; i++) {
                Gate g = new Gate();
                gates.add(g);
                runs.add(RunFiguresE2ETest.enqueueGated(w, g, configs[i], i));
            }
            for (int i = 0; i < configs.length; i++) {
                settle(w); // run i executes, held by its gate; run i+1 was staged or refused
                gates.get(i).open();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(25);
                while (!runs.get(i).ticket().isDone()) {
                    w.poll();
                    assertThat(System.nanoTime() - deadline).as("run %d finishes once its gate opened", i).isNegative();
                    Thread.yield();
                }
            }
            w.drain();
            List<RunTimings> timings = new ArrayList<>();
            for (Gated r : runs) {
                RunResult result = r.result(); // z = x, bit for bit
                timings.add(result.timings());
            }
            for (int i = 1; i < configs.length; i++) {
                RunTimings before = timings.get(i - 1);
                RunTimings t = timings.get(i);
                if (variant.arch() == Variant.Arch.A2A3 && configs[i] == configs[i - 1]) {
                    assertThat(t.prepareEnd()).as("run %d of the same sizing was prepared during run %d", i, i - 1)
                            .isLessThan(before.executionEnd());
                } else {
                    assertThat(t.prepareStart()).as("run %d was prepared after run %d was finalized", i, i - 1)
                            .isGreaterThanOrEqualTo(before.finalizeEnd());
                }
            }
        } finally {
            for (Gate g : gates) {
                g.open();
            }
            w.close();
            for (Gate g : gates) {
                g.close();
            }
        }
    }

    /** A background Worker, configs alternating in pairs and runs not held: every result right. */
    @ParameterizedTest
    @MethodSource("trb")
    void aBackgroundWorkerWithAlternatingRingSizingsGetsEveryResultRight(Variant variant) throws Exception {
        try (Worker w = Worker.builder().variant(variant).background(true).build()) {
            w.register(CHAIN, ChipWorkerE2ETest.vectorChain(N)).get(60, TimeUnit.SECONDS);
            List<WorkerE2ETest.Job> jobs = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                CallConfig c = (i / 2) % 2 == 0 ? CallConfig.DEFAULT : OTHER;
                float[] a = random(N, i);
                float[] b = random(N, i + 1_000_003);
                float[] f = filled(N);
                jobs.add(new WorkerE2ETest.Job(w.enqueue(CHAIN, ChipWorkerE2ETest.chainArgs(a, b, f), c), a, b, f));
            }
            for (WorkerE2ETest.Job j : jobs) {
                j.ticket().result().get(60, TimeUnit.SECONDS);
                j.assertGolden();
            }
        }
    }

    /** Caller-driven: every move possible without blocking, until none is left. */
    private static void settle(Worker w) {
        while (w.poll() > 0) {
            // each call advanced something: look again
        }
    }
}
