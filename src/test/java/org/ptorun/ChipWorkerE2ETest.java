package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;
import org.ptorun.internal.ProcessEnvironment;

/**
 * The native-run lifecycle end to end on all eight libraries (sim and onboard, hbg and
 * trb, a2a3 and a5) unless a test says otherwise: golden results, every refusal, threads,
 * acceptance, depth-2 pipelining, memory accounting, a kernel fault. Nothing here is
 * timed: overlap is made certain by the execution claim, which a launched run holds until
 * it is finalized, not by how long it runs.
 */
class ChipWorkerE2ETest {

    private static final int CHAIN = 1;
    private static final int HEAVY = 2;
    private static final int FAULT = 3;
    private static final float SENTINEL = -12345.5f;

    private ChipWorker chip;
    private final ExecutorService threads = Executors.newFixedThreadPool(5);

    /** Every library: the lifecycle is the same contract on each. */
    static List<Variant> allVariants() {
        return SimE2E.allVariants();
    }

    /**
     * The libraries with a depth-2 pipeline that supports a concurrent prepare of any
     * successor (each slot with its own arena bank): the hbg ones. a2a3 trb stages only a
     * successor whose ring sizing fits the image its predecessor uses (its slots share
     * bank 0's image; TrbOverlapE2ETest), a5 trb has one slot. The tests using this
     * source assert the contract themselves, so a library that stopped providing it
     * fails, not skips.
     */
    static List<Variant> depthTwoConcurrentPrepareVariants() {
        return Variant.all().stream().filter(v -> v.runtime() == Variant.RuntimeKind.HBG).toList();
    }

    /** The sim libraries: PTORUN_SIM_FAIL_ENQUEUE_AFTER is the sim platform's test facility. */
    static List<Variant> simVariants() {
        return SimE2E.simVariants();
    }

    /** Every library with each chain length. */
    static Stream<Arguments> allVariantsAndChainLengths() {
        return allVariants().stream()
                .flatMap(v -> IntStream.of(1, 3, 64, 1000, 65_537).mapToObj(n -> Arguments.of(v, n)));
    }

    private void open(Variant variant) {
        chip = ChipWorker.open(HostRuntime.load(variant), 0);
    }

    /** A depth-2 library that stages a successor while its predecessor runs (see the source). */
    private void openDepthTwoConcurrent(Variant variant) {
        open(variant);
        assertThat(chip.pipelineDepth()).isEqualTo(2);
        assertThat(chip.supportsOverlap()).isTrue();
    }

    @AfterEach
    void close() {
        threads.shutdownNow();
        if (chip != null) {
            chip.close();
        }
    }

    // ---- the vector chain f = (a+b+1)*(a+b+2)+(a+b) -----------------------------------------

    /** a IN, b IN, f OUT, then s, p, q, r as extra OUT arguments; five tasks. */
    static ChipCallable vectorChain(int n) {
        long bytes = 4L * n;
        return ChipCallable.builder()
                .signature(IN, IN, OUT, OUT, OUT, OUT, OUT)
                .child(0, Kernel.vadd())
                .child(1, Kernel.vadds())
                .child(2, Kernel.vmul())
                .program(Program.builder()
                        .submit(0, view(0, IN, bytes), view(1, IN, bytes), view(3, OUT, bytes))          // s = a + b
                        .submit(1, view(3, IN, bytes), view(4, OUT, bytes), Param.scalarF32(1f))          // p = s + 1
                        .submit(1, view(3, IN, bytes), view(5, OUT, bytes), Param.scalarF32(2f))          // q = s + 2
                        .submit(2, view(4, IN, bytes), view(5, IN, bytes), view(6, OUT, bytes))           // r = p * q
                        .submit(0, view(6, IN, bytes), view(3, IN, bytes), view(2, OUT, bytes))           // f = r + s
                        .build())
                .build();
    }

    private static Param view(int arg, org.ptorun.callable.Direction d, long bytes) {
        return Param.tensor(arg, d, 0, bytes);
    }

    /** The same arithmetic in Java, f32 step by step. */
    static float[] reference(float[] a, float[] b) {
        float[] f = new float[a.length];
        for (int i = 0; i < a.length; i++) {
            float s = a[i] + b[i];
            float p = s + 1f;
            float q = s + 2f;
            float r = p * q;
            f[i] = r + s;
        }
        return f;
    }

    private static float[] random(int n, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = (float) (rnd.nextDouble() * 200 - 100);
        }
        return x;
    }

    private static float[] filled(int n) {
        float[] x = new float[n];
        Arrays.fill(x, SENTINEL);
        return x;
    }

    /** Arguments of the chain: f is returned through {@code out}, the intermediates are scratch. */
    static TaskArgs chainArgs(float[] a, float[] b, float[] out) {
        int n = a.length;
        return TaskArgs.of(Tensor.of(a), Tensor.of(b), Tensor.of(out),
                Tensor.of(new float[n]), Tensor.of(new float[n]), Tensor.of(new float[n]), Tensor.of(new float[n]));
    }

    private static void assertBitExact(float[] actual, float[] expected) {
        assertThat(actual).hasSize(expected.length);
        for (int i = 0; i < expected.length; i++) {
            if (Float.floatToRawIntBits(actual[i]) != Float.floatToRawIntBits(expected[i])) {
                throw new AssertionError("element " + i + ": " + actual[i] + " != reference " + expected[i]);
            }
        }
    }

    @ParameterizedTest
    @MethodSource("allVariantsAndChainLengths")
    void theVectorChainEqualsTheJavaReferenceBitForBit(Variant variant, int n) {
        open(variant);
        chip.registerCallable(CHAIN, vectorChain(n));
        float[] a = random(n, n);
        float[] b = random(n, 31L * n);
        float[] f = filled(n);
        NativeRun run = chip.prepare(CHAIN, chainArgs(a, b, f), CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), n, 1,
                null);
        chip.launch(run);
        chip.await(run);
        assertThat(chip.poll(run)).isTrue();
        chip.finalizeRun(run);
        assertBitExact(f, reference(a, b));
    }

    @ParameterizedTest
    @MethodSource("allVariants")
    void theChainRunsWithDirectBuffersAndThroughTheBlockingRun(Variant variant) {
        open(variant);
        int n = 4096;
        chip.registerCallable(CHAIN, vectorChain(n));
        float[] a = random(n, 1);
        float[] b = random(n, 2);
        ByteBuffer da = direct(a);
        ByteBuffer db = direct(b);
        ByteBuffer df = ByteBuffer.allocateDirect(4 * n).order(ByteOrder.LITTLE_ENDIAN);
        TaskArgs args = TaskArgs.of(Tensor.of(da, DType.F32), Tensor.of(db, DType.F32), Tensor.of(df, DType.F32));
        for (int i = 0; i < 4; i++) {
            args.tensor(Tensor.of(ByteBuffer.allocateDirect(4 * n), DType.F32));
        }
        chip.run(CHAIN, args, CallConfig.DEFAULT);
        float[] f = new float[n];
        df.asFloatBuffer().get(f);
        assertBitExact(f, reference(a, b));
    }

    private static ByteBuffer direct(float[] x) {
        ByteBuffer b = ByteBuffer.allocateDirect(4 * x.length).order(ByteOrder.LITTLE_ENDIAN);
        b.asFloatBuffer().put(x);
        return b;
    }

    // ---- lifecycle refusals ------------------------------------------------------------------

    @ParameterizedTest
    @MethodSource("allVariants")
    void prepareThenFinalizeWithoutLaunchLeavesTheOutputUntouchedAndThenAllowsRegistryChanges(Variant variant) {
        open(variant);
        int n = 256;
        ChipCallable chain = vectorChain(n);
        chip.registerCallable(CHAIN, chain);
        float[] f = filled(n);
        TaskArgs args = chainArgs(random(n, 5), random(n, 6), f);
        NativeRun run = chip.prepare(CHAIN, args, CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 1, 1, null);
        assertThatThrownBy(() -> chip.registerCallable(FAULT, chain))
                .as("registry changes wait for the outstanding run")
                .isInstanceOf(ChipBusyException.class);
        chip.finalizeRun(run);
        assertThat(f).containsOnly(SENTINEL);
        chip.unregisterCallable(CHAIN);
        chip.registerCallable(CHAIN, chain);
        chip.registerCallable(FAULT, chain);
    }

    @ParameterizedTest
    @MethodSource("allVariants")
    void twoPreparesUnderOneGenerationGetDifferentEpochsAndTheOldTokenIsRefused(Variant variant) {
        open(variant);
        chip.registerCallable(CHAIN, vectorChain(16));
        PipelineSlotLease lease = PipelineSlotLease.of(0, 1);
        NativeRun first = chip.prepare(CHAIN, chainArgs(random(16, 1), random(16, 2), filled(16)),
                CallConfig.DEFAULT, lease, 1, 1, null);
        chip.finalizeRun(first);
        float[] a = random(16, 3);
        float[] b = random(16, 4);
        float[] f = filled(16);
        NativeRun second = chip.prepare(CHAIN, chainArgs(a, b, f), CallConfig.DEFAULT, lease, 2, 2, null);
        assertThat(second.runEpoch()).isNotEqualTo(first.runEpoch());
        assertThatThrownBy(() -> chip.launch(first))
                .isInstanceOf(StaleRunException.class)
                .hasMessageContaining("stale or used in the wrong phase")
                .hasMessageContaining(first.identity());
        chip.launch(second);
        chip.finalizeRun(second);
        assertBitExact(f, reference(a, b));
    }

    @ParameterizedTest
    @MethodSource("allVariants")
    void pollBeforeLaunchAndADoubleFinalizeAreRefused(Variant variant) {
        open(variant);
        chip.registerCallable(CHAIN, vectorChain(8));
        NativeRun run = chip.prepare(CHAIN, chainArgs(random(8, 1), random(8, 2), filled(8)), CallConfig.DEFAULT,
                PipelineSlotLease.of(0, 1), 1, 1, null);
        assertThatThrownBy(() -> chip.poll(run))
                .isInstanceOf(StaleRunException.class).hasMessageContaining("stale or used in the wrong phase");
        assertThatThrownBy(() -> chip.await(run))
                .isInstanceOf(StaleRunException.class).hasMessageContaining("stale or used in the wrong phase");
        chip.launch(run);
        chip.finalizeRun(run);
        assertThatThrownBy(() -> chip.finalizeRun(run))
                .isInstanceOf(StaleRunException.class).hasMessageContaining("stale or already finalized");
    }

    @ParameterizedTest
    @MethodSource("allVariants")
    void aTokenFromAnotherChipWorkerIsRefused(Variant variant) {
        open(variant);
        try (ChipWorker other = ChipWorker.open(HostRuntime.load(variant), 1)) {
            chip.registerCallable(CHAIN, vectorChain(8));
            other.registerCallable(CHAIN, vectorChain(8));
            NativeRun mine = chip.prepare(CHAIN, chainArgs(random(8, 1), random(8, 2), filled(8)),
                    CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 1, 1, null);
            NativeRun theirs = other.prepare(CHAIN, chainArgs(random(8, 1), random(8, 2), filled(8)),
                    CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 1, 1, null);
            assertThatThrownBy(() -> other.launch(mine)).hasMessageContaining("stale or used in the wrong phase");
            assertThatThrownBy(() -> other.finalizeRun(mine)).hasMessageContaining("stale or already finalized");
            assertThatThrownBy(() -> chip.launch(theirs)).hasMessageContaining("stale or used in the wrong phase");
            chip.finalizeRun(mine);
            other.finalizeRun(theirs);
        }
    }

    @ParameterizedTest
    @MethodSource("allVariants")
    void aStaleLeaseGenerationAndALeaseOutsideTheContractAreRefused(Variant variant) {
        open(variant);
        chip.registerCallable(CHAIN, vectorChain(8));
        chip.finalizeRun(chip.prepare(CHAIN, chainArgs(random(8, 1), random(8, 2), filled(8)), CallConfig.DEFAULT,
                PipelineSlotLease.of(0, 2), 1, 1, null));
        assertThatThrownBy(() -> chip.prepare(CHAIN, chainArgs(random(8, 1), random(8, 2), filled(8)),
                CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 1, 1, null))
                .isInstanceOf(LeaseRejectedException.class).hasMessageContaining("lease generation is stale");
        for (PipelineSlotLease bad : new PipelineSlotLease[] {PipelineSlotLease.of(2, 1), PipelineSlotLease.of(0, 0),
                new PipelineSlotLease(0, 1, 3)}) {
            assertThatThrownBy(() -> chip.prepare(CHAIN, chainArgs(random(8, 1), random(8, 2), filled(8)),
                    CallConfig.DEFAULT, bad, 1, 1, null))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("lease is outside the runtime PipelineContract");
        }
        // the chip is still usable
        float[] a = random(8, 9);
        float[] b = random(8, 10);
        float[] f = filled(8);
        chip.run(CHAIN, chainArgs(a, b, f), CallConfig.DEFAULT, PipelineSlotLease.of(0, 3), 1, 1, null);
        assertBitExact(f, reference(a, b));
    }

    @ParameterizedTest
    @MethodSource("allVariants")
    void everyPhaseIsDrivenFromAThreadOtherThanThePreparingOne(Variant variant) throws Exception {
        open(variant);
        int n = 1000;
        chip.registerCallable(CHAIN, vectorChain(n));
        float[] a = random(n, 11);
        float[] b = random(n, 12);
        float[] f = filled(n);
        PipelineSlotLease lastSlot = PipelineSlotLease.of(chip.pipelineDepth() - 1, 1);
        NativeRun run = threads.submit(() -> chip.prepare(CHAIN, chainArgs(a, b, f), CallConfig.DEFAULT,
                lastSlot, 5, 6, null)).get(60, TimeUnit.SECONDS);
        threads.submit(() -> chip.launch(run)).get(60, TimeUnit.SECONDS);
        threads.submit(() -> chip.poll(run)).get(60, TimeUnit.SECONDS);
        threads.submit(() -> chip.await(run)).get(60, TimeUnit.SECONDS);
        assertThat(threads.submit(() -> chip.poll(run)).get(60, TimeUnit.SECONDS)).isTrue();
        threads.submit(() -> chip.finalizeRun(run)).get(60, TimeUnit.SECONDS);
        assertBitExact(f, reference(a, b));
    }

    // ---- acceptance and pipelining ----------------------------------------------------------------

    /** A long predecessor: {@code tasks} vadds of c = a + b over {@code n} floats. */
    static ChipCallable heavy(int n, int tasks) {
        long bytes = 4L * n;
        Program.Builder p = Program.builder();
        for (int i = 0; i < tasks; i++) {
            p.submit(0, view(0, IN, bytes), view(1, IN, bytes), view(2, OUT, bytes));
        }
        return ChipCallable.builder().signature(IN, IN, OUT).child(0, Kernel.vadd()).program(p.build()).build();
    }

    @ParameterizedTest
    @MethodSource("depthTwoConcurrentPrepareVariants")
    void depthTwoASuccessorPreparedWhileThePredecessorRunsLaunchesOnlyAfterItsFinalize(Variant variant) {
        openDepthTwoConcurrent(variant);
        int big = 1 << 21;
        int n = 2048;
        chip.registerCallable(HEAVY, heavy(big, 64));
        chip.registerCallable(CHAIN, vectorChain(n));
        float[] x = random(big, 21);
        float[] y = random(big, 22);
        float[] z = filled(big);
        float[] a = random(n, 23);
        float[] b = random(n, 24);
        float[] f = filled(n);
        try (AcceptanceWord first = AcceptanceWord.allocate(); AcceptanceWord second = AcceptanceWord.allocate(2)) {
            NativeRun predecessor = chip.prepare(HEAVY, TaskArgs.of(Tensor.of(x), Tensor.of(y), Tensor.of(z)),
                    CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 100, 1, first);
            assertThat(first.value()).as("0 after prepare").isZero();
            chip.launch(predecessor);
            assertThat(first.value()).as("set when launch returned").isEqualTo(1);

            NativeRun successor = chip.prepare(CHAIN, chainArgs(a, b, f), CallConfig.DEFAULT,
                    PipelineSlotLease.of(1, 1), 101, 2, second);
            assertThat(f).as("a prepared successor writes nothing").containsOnly(SENTINEL);
            assertThatThrownBy(() -> chip.launch(successor))
                    .as("the predecessor holds the chip until it is finalized")
                    .isInstanceOf(ChipBusyException.class)
                    .hasMessageContaining(successor.identity());
            assertThat(second.value()).as("a launch refused before the marker never writes the word").isZero();
            assertThat(f).containsOnly(SENTINEL);
            assertThatThrownBy(() -> chip.poll(successor)).hasMessageContaining("stale or used in the wrong phase");

            chip.finalizeRun(predecessor);
            float[] sum = new float[big];
            for (int i = 0; i < big; i++) {
                sum[i] = x[i] + y[i];
            }
            assertBitExact(z, sum);

            chip.launch(successor);
            assertThat(second.value()).isEqualTo(2);
            chip.finalizeRun(successor);
            assertBitExact(f, reference(a, b));
        }
        long bank0 = chip.arenaBankGmHeapBase(0);
        long bank1 = chip.arenaBankGmHeapBase(1);
        assertThat(bank0).isNotZero();
        assertThat(bank1).isNotZero().isNotEqualTo(bank0);
    }

    @ParameterizedTest
    @MethodSource("simVariants")
    void aRunThatFailsBeforeTheLaunchMarkerNeverWritesItsAcceptanceWord(Variant variant) {
        // the sim's test facility: the enqueue after one successful one fails before the marker, once
        ProcessEnvironment.set("PTORUN_SIM_FAIL_ENQUEUE_AFTER", "1");
        try {
            open(variant);
        } finally {
            ProcessEnvironment.unset("PTORUN_SIM_FAIL_ENQUEUE_AFTER");
        }
        int n = 256;
        chip.registerCallable(CHAIN, vectorChain(n));
        try (AcceptanceWord word = AcceptanceWord.allocate()) {
            float[] a = random(n, 5);
            float[] b = random(n, 6);
            float[] f = filled(n);
            chip.run(CHAIN, chainArgs(a, b, f), CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 1, 1, word);
            assertThat(word.value()).as("a run that crossed the marker").isEqualTo(1);
            assertBitExact(f, reference(a, b));

            word.reset();
            float[] untouched = filled(n);
            NativeRun failing = chip.prepare(CHAIN, chainArgs(a, b, untouched), CallConfig.DEFAULT,
                    PipelineSlotLease.of(0, 1), 2, 2, word);
            assertThatThrownBy(() -> chip.launch(failing))
                    .isInstanceOf(PtoRunException.class)
                    .hasMessageContaining("injected failure before the launch marker")
                    .hasMessageContaining(failing.identity());
            assertThat(word.value()).as("never written, now or later").isZero();
            assertThatThrownBy(() -> chip.finalizeRun(failing)).isInstanceOf(PtoRunException.class);
            assertThat(word.value()).isZero();
            assertThat(untouched).containsOnly(SENTINEL);

            float[] again = filled(n);
            chip.run(CHAIN, chainArgs(a, b, again), CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 3, 3, word);
            assertThat(word.value()).as("the chip is usable afterwards").isEqualTo(1);
            assertBitExact(again, reference(a, b));
        }
    }

    @ParameterizedTest
    @MethodSource("depthTwoConcurrentPrepareVariants")
    void banksZeroAndOneReportDifferentGmHeapBases(Variant variant) {
        openDepthTwoConcurrent(variant);
        chip.registerCallable(CHAIN, vectorChain(8));
        chip.run(CHAIN, chainArgs(random(8, 1), random(8, 2), filled(8)), CallConfig.DEFAULT,
                PipelineSlotLease.of(0, 1), 1, 1, null);
        chip.run(CHAIN, chainArgs(random(8, 1), random(8, 2), filled(8)), CallConfig.DEFAULT,
                PipelineSlotLease.of(1, 1), 2, 2, null);
        assertThat(chip.arenaBankGmHeapBase(0)).isNotZero();
        assertThat(chip.arenaBankGmHeapBase(1)).isNotZero().isNotEqualTo(chip.arenaBankGmHeapBase(0));
        assertThat(chip.runtimeBufferAddresses()).hasSize(2).doesNotHaveDuplicates();
    }

    @ParameterizedTest
    @MethodSource("depthTwoConcurrentPrepareVariants")
    void aDiagnosticConfigOnEitherSideForbidsTheOverlap(Variant variant, @TempDir Path traces) {
        openDepthTwoConcurrent(variant);
        chip.registerCallable(CHAIN, vectorChain(64));
        CallConfig traced = CallConfig.builder().enableTrace(true).outputPrefix(traces).build();
        for (boolean predecessorTraced : new boolean[] {true, false}) {
            NativeRun predecessor = chip.prepare(CHAIN, chainArgs(random(64, 1), random(64, 2), filled(64)),
                    predecessorTraced ? traced : CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 1, 1, null);
            chip.launch(predecessor);
            assertThatThrownBy(() -> chip.prepare(CHAIN, chainArgs(random(64, 1), random(64, 2), filled(64)),
                    predecessorTraced ? CallConfig.DEFAULT : traced, PipelineSlotLease.of(1, 1), 2, 2, null))
                    .isInstanceOf(ChipBusyException.class)
                    .hasMessageContaining("requires an active predecessor before staging a successor");
            chip.finalizeRun(predecessor);
        }
    }

    @ParameterizedTest
    @MethodSource("allVariants")
    void committedDeviceMemoryReturnsToItsBaselineAfterEachFinalize(Variant variant) {
        open(variant);
        int n = 10_000;
        chip.registerCallable(CHAIN, vectorChain(n));
        int depth = chip.pipelineDepth();
        for (int slot = 0; slot < depth; slot++) { // warm every slot: arenas stay committed with their slot
            chip.run(CHAIN, chainArgs(random(n, 1), random(n, 2), filled(n)), CallConfig.DEFAULT,
                    PipelineSlotLease.of(slot, 1), 0, 0, null);
        }
        long baseline = chip.committedDeviceMemory();
        for (int i = 0; i < 6; i++) {
            NativeRun run = chip.prepare(CHAIN, chainArgs(random(n, i), random(n, i + 1), filled(n)),
                    CallConfig.DEFAULT, PipelineSlotLease.of(i % depth, 2 + i), i, i, null);
            if (i % 3 != 0) {
                chip.launch(run);
            }
            chip.finalizeRun(run);
            assertThat(chip.committedDeviceMemory()).as("after finalize %d", i).isEqualTo(baseline);
        }
    }

    /**
     * a IN, b IN, c OUT over {@code n} floats; its one task (func_id 7) is a vadd whose
     * first input view holds 8 floats but must add n: the kernel refuses (a kernel fault).
     */
    static ChipCallable faultyVadd(int n) {
        return ChipCallable.builder()
                .signature(IN, IN, OUT)
                .child(7, Kernel.vadd())
                .program(Program.builder()
                        .submit(7, Param.tensor(0, IN, 0, 32), Param.tensor(1, IN, 0, 4L * n),
                                Param.tensor(2, OUT, 0, 4L * n))
                        .build())
                .build();
    }

    @ParameterizedTest
    @MethodSource("allVariants")
    void aKernelFaultNamesTaskAndFuncIdLeavesOutputsUntouchedAndTheChipRunsTheNextRun(Variant variant) {
        open(variant);
        int n = 64;
        chip.registerCallable(FAULT, faultyVadd(n));
        chip.registerCallable(CHAIN, vectorChain(n));
        float[] out = filled(n);
        try (AcceptanceWord word = AcceptanceWord.allocate()) {
            NativeRun run = chip.prepare(FAULT, TaskArgs.of(Tensor.of(random(n, 1)), Tensor.of(random(n, 2)),
                    Tensor.of(out)), CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 77, 1, word);
            try {
                chip.launch(run);
                chip.await(run);
            } catch (KernelFaultException early) {
                // the fault may end the run before the launch marker: launch reports it, finalize still runs
            }
            assertThatThrownBy(() -> chip.finalizeRun(run))
                    .isInstanceOf(KernelFaultException.class)
                    .hasMessageMatching("(?s).*task 0\\b.*func_id 7\\b.*")
                    .hasMessageContaining(run.identity());
        }
        assertThat(out).containsOnly(SENTINEL);
        float[] a = random(n, 3);
        float[] b = random(n, 4);
        float[] f = filled(n);
        NativeRun next = chip.prepare(CHAIN, chainArgs(a, b, f), CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 78, 2,
                null);
        chip.launch(next);
        chip.finalizeRun(next);
        assertBitExact(f, reference(a, b));
    }
}
