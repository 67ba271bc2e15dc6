package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.ptorun.SimE2E.SENTINEL;
import static org.ptorun.SimE2E.assertBitExact;
import static org.ptorun.SimE2E.filled;
import static org.ptorun.SimE2E.random;
import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.INOUT;
import static org.ptorun.callable.Direction.OUT;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;

/**
 * Runs that do real work on every sim library (a2a3/a5 × hbg/trb): golden results equal
 * a Java reference computed in the same f32 order, a kernel fault, degenerate runs. One
 * chip per test; nothing is timed.
 */
class RuntimeGoldenE2ETest {

    private static final int ID = 3;

    static List<Variant> variants() {
        return SimE2E.allVariants();
    }

    /** Each variant with several tile counts. */
    static Stream<Arguments> variantsAndTileCounts() {
        List<Arguments> all = new ArrayList<>();
        for (Variant v : variants()) {
            for (int tiles : new int[] {1, 3, 6}) {
                all.add(Arguments.of(v, tiles));
            }
        }
        return all.stream();
    }

    private static ChipWorker open(Variant variant) {
        return ChipWorker.open(HostRuntime.load(variant), 0);
    }

    @ParameterizedTest
    @MethodSource("variants")
    void theVectorChainEqualsTheJavaReference(Variant variant) {
        try (ChipWorker chip = open(variant)) {
            for (int n : new int[] {1, 1000, 65_537}) {
                chip.registerCallable(ID, ChipWorkerE2ETest.vectorChain(n));
                float[] a = random(n, n);
                float[] b = random(n, 7L * n);
                float[] f = filled(n);
                chip.run(ID, chainArgs(a, b, f), CallConfig.DEFAULT);
                assertBitExact(f, ChipWorkerE2ETest.reference(a, b));
            }
        }
    }

    static TaskArgs chainArgs(float[] a, float[] b, float[] f) {
        int n = a.length;
        return TaskArgs.of(Tensor.of(a), Tensor.of(b), Tensor.of(f), Tensor.of(new float[n]), Tensor.of(new float[n]),
                Tensor.of(new float[n]), Tensor.of(new float[n]));
    }

    @ParameterizedTest
    @MethodSource("variantsAndTileCounts")
    void aTiledBatchedGemmEqualsTheJavaReference(Variant variant, int tiles) {
        int batch = 3;
        int m = 8;
        int k = 48;
        int n = 12;
        float[] a = random(batch * m * k, 11);
        float[] b = random(batch * k * n, 12);
        float[] c = filled(batch * m * n);
        try (ChipWorker chip = open(variant)) {
            chip.registerCallable(ID, Programs.tiledGemm(batch, m, k, n, tiles));
            TaskArgs args = TaskArgs.of(Tensor.of(Programs.packTiles(a, batch, m, k, tiles)), Tensor.of(b), Tensor.of(c));
            chip.run(ID, args, CallConfig.DEFAULT);
            assertBitExact(c, Programs.tiledGemmReference(a, b, batch, m, k, n, tiles));
            // and again on the same chip: the local tensor is the run's, nothing stays from the last run
            float[] again = filled(batch * m * n);
            chip.run(ID, TaskArgs.of(Tensor.of(Programs.packTiles(a, batch, m, k, tiles)), Tensor.of(b),
                    Tensor.of(again)), CallConfig.DEFAULT);
            assertBitExact(again, c);
        }
    }

    /**
     * exp is (float) exp((double) x) in C and in Java, but the two libms may differ by an
     * ulp, so the comparison is relative: |device − reference| ≤ 1e-6 · |reference|
     * (a few ulps of the e/s quotient), never bit for bit.
     */
    @ParameterizedTest
    @MethodSource("variants")
    void rowSoftmaxMatchesTheJavaReferenceWithinARelativeErrorOf1e6(Variant variant) {
        int rows = 24;
        int cols = 37;
        float[] a = random(rows * cols, 5);
        a[3] = 80f; // a large logit: the max subtraction keeps exp finite
        float[] c = filled(rows * cols);
        try (ChipWorker chip = open(variant)) {
            chip.registerCallable(ID, Programs.softmax(rows, cols, 4));
            chip.run(ID, TaskArgs.of(Tensor.of(a), Tensor.of(c)), CallConfig.DEFAULT);
        }
        float[] expected = Programs.softmaxReference(a, rows, cols);
        for (int i = 0; i < c.length; i++) {
            assertThat((double) c[i]).as("element %d", i)
                    .isCloseTo(expected[i], org.assertj.core.data.Offset.offset(1e-6 * Math.abs(expected[i])));
        }
        for (int r = 0; r < rows; r++) {
            double sum = 0;
            for (int i = 0; i < cols; i++) {
                sum += c[r * cols + i];
            }
            assertThat(sum).as("row %d sums to 1", r).isCloseTo(1.0, org.assertj.core.data.Offset.offset(1e-5));
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aProgramWithNestedLoopsLocalTensorsAndScopesEqualsTheJavaReference(Variant variant) {
        int rows = 6;
        int segments = 4;
        int seg = 32;
        float[] x = random(rows * segments * seg, 9);
        float[] y = filled(x.length);
        float[] z = filled(rows);
        try (ChipWorker chip = open(variant)) {
            chip.registerCallable(ID, Programs.nested(rows, segments, seg));
            chip.run(ID, TaskArgs.of(Tensor.of(x), Tensor.of(y), Tensor.of(z)), CallConfig.DEFAULT);
        }
        float[][] expected = Programs.nestedReference(x, rows, segments, seg);
        assertBitExact(y, expected[0]);
        assertBitExact(z, expected[1]);
    }

    // ---- a kernel fault ------------------------------------------------------------------------------

    /** Task 2 (func_id 9) multiplies n floats but its first input view holds 8: the kernel refuses. */
    private static ChipCallable faultyAtTask2(int n) {
        long bytes = 4L * n;
        return ChipCallable.builder()
                .signature(IN, IN, OUT, OUT)
                .child(0, Kernel.vadd())
                .child(9, Kernel.vmul())
                .program(Program.builder()
                        .submit(0, Param.tensor(0, IN, 0, bytes), Param.tensor(1, IN, 0, bytes), Param.tensor(2, OUT, 0, bytes))
                        .submit(0, Param.tensor(0, IN, 0, bytes), Param.tensor(0, IN, 0, bytes), Param.tensor(3, OUT, 0, bytes))
                        .submit(9, Param.tensor(0, IN, 0, 32), Param.tensor(1, IN, 0, bytes), Param.tensor(3, OUT, 0, bytes))
                        .submit(0, Param.tensor(3, IN, 0, bytes), Param.tensor(2, IN, 0, bytes), Param.tensor(2, OUT, 0, bytes))
                        .build())
                .build();
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aKernelFaultReadsTheSameWhicheverPhaseReportsIt(Variant variant) {
        int n = 256;
        List<String> messages = new ArrayList<>();
        try (ChipWorker chip = open(variant)) {
            chip.registerCallable(ID, faultyAtTask2(n));
            NativeRun run = chip.prepare(ID, TaskArgs.of(Tensor.of(random(n, 1)), Tensor.of(random(n, 2)),
                    Tensor.of(filled(n)), Tensor.of(filled(n))), CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 600, 1, null);
            try {
                chip.launch(run);
                chip.await(run);
            } catch (KernelFaultException early) {
                messages.add(early.getMessage());
            }
            KernelFaultException late = catchThrowableOfType(KernelFaultException.class, () -> chip.finalizeRun(run));
            assertThat(late).isNotNull();
            messages.add(late.getMessage());
            KernelFaultException blocking = catchThrowableOfType(KernelFaultException.class, () -> chip.run(ID,
                    TaskArgs.of(Tensor.of(random(n, 1)), Tensor.of(random(n, 2)), Tensor.of(filled(n)),
                            Tensor.of(filled(n))), CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 601, 2, null));
            assertThat(blocking).isNotNull();
            messages.add(blocking.getMessage());
        }
        java.util.Set<String> faults = new java.util.TreeSet<>();
        for (String m : messages) {
            assertThat(m.split("run_id=", -1)).as("the identity once: %s", m).hasSize(2);
            assertThat(m).doesNotContain("launch failed").doesNotContain("the run failed");
            int from = m.indexOf("PTO_ERR_KERNEL_FAULT (-10): ");
            int to = m.lastIndexOf(" (run_id=");
            assertThat(from).as(m).isPositive();
            // two runs: any core, and (trb) any number of tasks submitted before the fault stopped it
            faults.add(m.substring(from, to).replaceFirst("on core \\d+; .*", "on core N"));
        }
        assertThat(faults).as("one text whichever phase reports it").hasSize(1);
        assertThat(faults.iterator().next()).startsWith("PTO_ERR_KERNEL_FAULT (-10): kernel fault: task 2 (func_id 9,"
                + " kernel 'vmul') returned 2 (a view is too small) on core N");
        assertThat(messages).allMatch(m -> m.matches("(?s).* on core \\d+; \\d+ of \\d+ (submitted )?task\\(s\\) completed \\(run_id=.*"));
        assertThat(messages.get(messages.size() - 1)).startsWith("run of callable " + ID + " failed: ");
        assertThat(messages.get(messages.size() - 2)).startsWith("run failed (reported by ");
    }


    @ParameterizedTest
    @MethodSource("variants")
    void aKernelFaultNamesTaskAndFuncIdCopiesNothingBackAndTheChipRunsTheNextRun(Variant variant) {
        int n = 256;
        long bytes = 4L * n;
        ChipCallable faulty = faultyAtTask2(n);
        try (ChipWorker chip = open(variant)) {
            chip.registerCallable(ID, faulty);
            chip.registerCallable(ID + 1, ChipWorkerE2ETest.vectorChain(n));
            float[] c = filled(n);
            float[] d = filled(n);
            NativeRun run = chip.prepare(ID, TaskArgs.of(Tensor.of(random(n, 1)), Tensor.of(random(n, 2)),
                    Tensor.of(c), Tensor.of(d)), CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 500, 1, null);
            try {
                chip.launch(run);
                chip.await(run);
            } catch (KernelFaultException early) {
                // the fault may end the run before the launch marker: launch reports it, finalize still runs
            }
            assertThatThrownBy(() -> chip.finalizeRun(run))
                    .isInstanceOf(KernelFaultException.class)
                    .hasMessageMatching("(?s).*task 2\\b.*func_id 9\\b.*")
                    .hasMessageEndingWith(" " + run.identity())
                    .satisfies(e -> assertThat(e.getMessage().split(java.util.regex.Pattern.quote(run.identity()), -1))
                            .as("the library's identity and Java's are one text: named once, the library's lead dropped")
                            .hasSize(2))
                    .hasMessageNotContaining("simpler_finalize_run");
            assertThat(c).as("a failed run copies nothing back").containsOnly(SENTINEL);
            assertThat(d).containsOnly(SENTINEL);

            float[] a = random(n, 3);
            float[] b = random(n, 4);
            float[] f = filled(n);
            chip.run(ID + 1, chainArgs(a, b, f), CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 501, 2, null);
            assertBitExact(f, ChipWorkerE2ETest.reference(a, b));
        }
    }

    // ---- degenerate runs -----------------------------------------------------------------------------

    @ParameterizedTest
    @MethodSource("variants")
    void aProgramWithZeroTasksCompletesAtOnce(Variant variant) {
        ChipCallable empty = ChipCallable.builder().program(Program.builder().build()).build();
        ChipCallable skipped = ChipCallable.builder()
                .signature(IN, INOUT)
                .child(0, Kernel.vadds())
                .program(Program.builder()
                        .loop(0, (p, i) -> p.submit(0, Param.tensor(0, IN, 0, 64), Param.tensor(1, INOUT, 0, 64),
                                Param.scalarF32(1f)))
                        .scope(s -> s.loop(3, (p, i) -> p.loop(0, (q, j) -> q.submit(0, Param.tensor(0, IN, 0, 64),
                                Param.tensor(1, INOUT, 0, 64), Param.scalarF32(1f)))))
                        .build())
                .build();
        assertThat(skipped.program().orElseThrow().taskCount()).isZero();
        try (ChipWorker chip = open(variant)) {
            chip.registerCallable(ID, empty);
            chip.registerCallable(ID + 1, skipped);
            chip.run(ID, TaskArgs.of(), CallConfig.DEFAULT);
            NativeRun run = chip.prepare(ID, TaskArgs.of(), CallConfig.DEFAULT, PipelineSlotLease.of(0, 1), 1, 1, null);
            chip.launch(run);
            chip.await(run);
            assertThat(chip.poll(run)).isTrue();
            chip.finalizeRun(run);
            float[] untouched = random(16, 3);
            float[] inout = untouched.clone();
            chip.run(ID + 1, TaskArgs.of(Tensor.of(random(16, 4)), Tensor.of(inout)), CallConfig.DEFAULT);
            assertBitExact(inout, untouched);
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void zeroSizeTensorsAndZeroByteViewsAreHandled(Variant variant) {
        int n = 64;
        long bytes = 4L * n;
        ChipCallable callable = ChipCallable.builder()
                .signature(IN, IN, OUT, OUT)
                .child(0, Kernel.vadd())
                .child(1, Kernel.vadds())
                .child(2, Kernel.vcopy())
                .program(Program.builder()
                        .submit(0, Param.tensor(0, IN, 0, 0), Param.tensor(0, IN, 0, 0), Param.tensor(2, OUT, 0, 0))
                        .submit(1, Param.tensor(1, IN, 0, bytes), Param.tensor(2, OUT, 0, bytes), Param.scalarF32(1f))
                        .submit(2, Param.tensor(0, IN, 0, 0), Param.tensor(3, OUT, 0, 0))
                        .submit(0, Param.tensor(2, IN, 0, 0), Param.tensor(1, IN, bytes, 0), Param.tensor(3, OUT, 0, 0))
                        .build())
                .build();
        try (ChipWorker chip = open(variant)) {
            chip.registerCallable(ID, callable);
            float[] x = random(n, 8);
            float[] y = filled(n);
            float[] emptyOut = new float[0];
            chip.run(ID, TaskArgs.of(Tensor.of(new float[0]), Tensor.of(x), Tensor.of(y), Tensor.of(emptyOut)),
                    CallConfig.DEFAULT);
            float[] expected = new float[n];
            for (int i = 0; i < n; i++) {
                expected[i] = x[i] + 1f;
            }
            assertBitExact(y, expected);
            assertThat(emptyOut).isEmpty();
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void theSmallestLegalRingsWork(Variant variant) {
        CallConfig smallest = CallConfig.builder().ringTaskWindow(4).ringHeap(1024).ringDepPool(4).build();
        int n = 100;
        try (ChipWorker chip = open(variant)) {
            chip.registerCallable(ID, ChipWorkerE2ETest.vectorChain(n));
            chip.registerCallable(ID + 1, Programs.accumulate(12));
            for (int i = 0; i < 3; i++) {
                float[] a = random(n, i);
                float[] b = random(n, 10 + i);
                float[] f = filled(n);
                chip.run(ID, chainArgs(a, b, f), smallest);
                assertBitExact(f, ChipWorkerE2ETest.reference(a, b));
            }
            float[] x = random(12 * 16, 3);
            float[] acc0 = random(16, 4);
            float[] acc = acc0.clone();
            chip.run(ID + 1, TaskArgs.of(Tensor.of(x), Tensor.of(acc)), smallest);
            assertBitExact(acc, Programs.accumulateReference(x, acc0, 12));
        }
    }
}
