package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.ptorun.SimE2E.SENTINEL;
import static org.ptorun.SimE2E.assertBitExact;
import static org.ptorun.SimE2E.filled;
import static org.ptorun.SimE2E.random;
import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.INOUT;
import static org.ptorun.callable.Direction.OUT;
import static org.ptorun.callable.Direction.SCALAR;

import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.callable.Affine;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.CoreType;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;

/**
 * A user kernel library and a user orchestration library, compiled by the test build from
 * src/test/c (libptorun_test_kernels.so: saxpy, always_fail; libptorun_test_orch.so:
 * repeat_vadd, failing_orchestration, stash_handle, use_stashed_handle), on all eight
 * libraries: golden results, load counters that advance once per library load (not per
 * run, not per callable), failures inside user code, and an orchestration handle kept
 * past its run being refused.
 */
class UserLibrariesE2ETest {

    static List<Variant> variants() {
        return SimE2E.allVariants();
    }

    // ---- the kernel library -----------------------------------------------------------------------

    /**
     * y = a·x + y in {@code tiles} saxpy tasks of the kernel library, a = scalar argument 0;
     * even tiles run func_id 5, odd ones func_id 6: two children with the same image.
     */
    private static ChipCallable saxpy(Kernel saxpy, int n, int tiles) {
        long tile = 4L * n / tiles;
        return ChipCallable.builder()
                .signature(IN, INOUT, SCALAR)
                .child(5, CoreType.AIV, saxpy)
                .child(6, CoreType.AIV, saxpy)
                .program(Program.builder()
                        .loop(tiles / 2, (p, t) -> p
                                .submit(5, Param.tensor(0, IN, t.times(2 * tile), Affine.of(tile)),
                                        Param.tensor(1, INOUT, t.times(2 * tile), Affine.of(tile)), Param.scalarArg(0))
                                .submit(6, Param.tensor(0, IN, t.times(2 * tile).plus(tile), Affine.of(tile)),
                                        Param.tensor(1, INOUT, t.times(2 * tile).plus(tile), Affine.of(tile)),
                                        Param.scalarArg(0)))
                        .build())
                .build();
    }

    private static float[] saxpyReference(float a, float[] x, float[] y) {
        float[] r = new float[y.length];
        for (int i = 0; i < y.length; i++) {
            r[i] = a * x[i] + y[i];
        }
        return r;
    }

    /**
     * Both counters. A kernel library is loaded by the platform (sim: memory file + dlopen,
     * once per content, refcounted); docs/device.md counts only orchestration-library loads
     * (host: hbg, AICPU: trb), so a kernel-library load may count 0 or 1 — never more, and
     * never again per run or per callable.
     */
    private static long loads(ChipWorker chip) {
        return chip.hostDlopenCount() + chip.aicpuDlopenCount();
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aUserKernelLibraryComputesSaxpyAndIsLoadedOncePerImage(Variant variant) {
        int n = 4096;
        Kernel kernel = Kernel.fromLibrary(SimE2E.kernelLibrary(), "saxpy");
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            long before = loads(chip);
            chip.registerCallable(1, saxpy(kernel, n, 4));
            long afterFirst = loads(chip);
            assertThat(afterFirst - before).as("registration loads the library at most once").isBetween(0L, 1L);
            for (int run = 0; run < 3; run++) {
                float a = 0.5f + run;
                float[] x = random(n, run);
                float[] y0 = random(n, 100 + run);
                float[] y = y0.clone();
                chip.run(1, TaskArgs.of(Tensor.of(x), Tensor.of(y)).scalarF32(a), CallConfig.DEFAULT);
                assertBitExact(y, saxpyReference(a, x, y0));
            }
            // another callable, another tiling, the same image: no second load
            chip.registerCallable(2, saxpy(Kernel.fromLibrary(SimE2E.kernelLibrary(), "saxpy"), n, 16));
            float[] x = random(n, 7);
            float[] y0 = random(n, 8);
            float[] y = y0.clone();
            chip.run(2, TaskArgs.of(Tensor.of(x), Tensor.of(y)).scalarF32(-2f), CallConfig.DEFAULT);
            assertBitExact(y, saxpyReference(-2f, x, y0));
            assertThat(loads(chip)).as("loads count libraries, not runs or callables").isEqualTo(afterFirst);
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aFailingUserKernelFailsTheRunNamingTaskAndFuncIdAndTheChipGoesOn(Variant variant) {
        int n = 64;
        long bytes = 4L * n;
        ChipCallable failing = ChipCallable.builder()
                .signature(IN, OUT)
                .child(0, Kernel.vcopy())
                .child(12, CoreType.AIV, Kernel.fromLibrary(SimE2E.kernelLibrary(), "always_fail"))
                .program(Program.builder()
                        .submit(0, Param.tensor(0, IN, 0, bytes), Param.tensor(1, OUT, 0, bytes))
                        .submit(12, Param.tensor(1, INOUT, 0, bytes))
                        .build())
                .build();
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(1, failing);
            chip.registerCallable(2, saxpy(Kernel.fromLibrary(SimE2E.kernelLibrary(), "saxpy"), n, 2));
            float[] out = filled(n);
            assertThatThrownBy(() -> chip.run(1, TaskArgs.of(Tensor.of(random(n, 1)), Tensor.of(out)),
                    CallConfig.DEFAULT))
                    .isInstanceOf(KernelFaultException.class)
                    .hasMessageMatching("(?s).*task 1\\b.*func_id 12\\b.*");
            assertThat(out).as("nothing copied back").containsOnly(SENTINEL);
            float[] x = random(n, 2);
            float[] y0 = random(n, 3);
            float[] y = y0.clone();
            chip.run(2, TaskArgs.of(Tensor.of(x), Tensor.of(y)).scalarF32(3f), CallConfig.DEFAULT);
            assertBitExact(y, saxpyReference(3f, x, y0));
        }
    }

    // ---- the orchestration library --------------------------------------------------------------------

    /** control (I32, IN), x (IN), z (INOUT); func_id 0 is vadd, as libptorun_test_orch.so expects. */
    private static ChipCallable orchestrated(String entry) {
        return ChipCallable.builder()
                .signature(IN, IN, INOUT)
                .child(0, Kernel.vadd())
                .orchestrationLibrary(SimE2E.orchestrationLibrary(), entry)
                .build();
    }

    /** z + x + x + … ({@code count} additions, left to right), as repeat_vadd's tasks compute it. */
    private static float[] repeatReference(float[] x, float[] z0, int count) {
        float[] z = z0.clone();
        for (int c = 0; c < count; c++) {
            for (int i = 0; i < z.length; i++) {
                z[i] = z[i] + x[i];
            }
        }
        return z;
    }

    /** The counter of the side that loads orchestration libraries: the host for hbg, the AICPU for trb. */
    private static long orchestrationLoads(Variant variant, ChipWorker chip) {
        return SimE2E.isTrb(variant) ? chip.aicpuDlopenCount() : chip.hostDlopenCount();
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aUserOrchestrationReadsItsControlTensorToDecideHowManyTasksToSubmit(Variant variant) {
        int n = 1000;
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            long before = orchestrationLoads(variant, chip);
            chip.registerCallable(1, orchestrated("repeat_vadd"));
            for (int count : new int[] {3, 0, 1, 17}) {
                float[] x = random(n, count);
                float[] z0 = random(n, 50 + count);
                float[] z = z0.clone();
                chip.run(1, TaskArgs.of(Tensor.of(new int[] {count}), Tensor.of(x), Tensor.of(z)), CallConfig.DEFAULT);
                assertBitExact(z, repeatReference(x, z0, count));
            }
            long afterRuns = orchestrationLoads(variant, chip);
            assertThat(afterRuns).as("one load for the library, none per run").isEqualTo(before + 1);

            chip.registerCallable(2, orchestrated("repeat_vadd"));
            float[] x = random(n, 5);
            float[] z0 = random(n, 6);
            float[] z = z0.clone();
            chip.run(2, TaskArgs.of(Tensor.of(new int[] {2}), Tensor.of(x), Tensor.of(z)), CallConfig.DEFAULT);
            assertBitExact(z, repeatReference(x, z0, 2));
            assertThat(orchestrationLoads(variant, chip)).as("a second callable with the same image loads nothing")
                    .isEqualTo(afterRuns);
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aUserOrchestrationReturningNonZeroFailsTheRunWithItsCodeAndTheChipGoesOn(Variant variant) {
        int n = 64;
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(1, orchestrated("failing_orchestration"));
            chip.registerCallable(2, orchestrated("repeat_vadd"));
            float[] z = filled(n);
            assertThatThrownBy(() -> chip.run(1, TaskArgs.of(Tensor.of(new int[] {1}), Tensor.of(random(n, 1)),
                    Tensor.of(z)), CallConfig.DEFAULT))
                    .isInstanceOf(PtoRunException.class)
                    .satisfies(e -> {
                        PtoRunException p = (PtoRunException) e;
                        assertThat(p.code()).isEqualTo(PtoError.ORCHESTRATION.code());
                        assertThat(p.nativeMessage()).as("names the orchestration's code").containsPattern("\\b3\\b");
                    });
            assertThat(z).as("nothing copied back").containsOnly(SENTINEL);
            float[] x = random(n, 2);
            float[] z0 = random(n, 3);
            float[] again = z0.clone();
            chip.run(2, TaskArgs.of(Tensor.of(new int[] {4}), Tensor.of(x), Tensor.of(again)), CallConfig.DEFAULT);
            assertBitExact(again, repeatReference(x, z0, 4));
        }
    }

    /** control (I32, IN), x (IN), z (INOUT), codes (I32, OUT): use_stashed_handle's signature. */
    private static ChipCallable orchestratedWithCodes(String entry) {
        return ChipCallable.builder()
                .signature(IN, IN, INOUT, OUT)
                .child(0, Kernel.vadd())
                .orchestrationLibrary(SimE2E.orchestrationLibrary(), entry)
                .build();
    }

    /**
     * A library keeps its handle in a static during a run made on a thread that has ended since,
     * and presents it to every orchestration entry in a later run: each is refused with
     * INVALID_ARGUMENT, and the later run's z is exactly its own single addition.
     */
    @ParameterizedTest
    @MethodSource("variants")
    void anOrchestrationHandleKeptPastItsRunIsRefusedAndTheLaterRunIsUntouched(Variant variant) throws Exception {
        int n = 256;
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(1, orchestrated("stash_handle"));
            chip.registerCallable(2, orchestratedWithCodes("use_stashed_handle"));
            float[] x1 = random(n, 1);
            float[] z1 = random(n, 2);
            float[] z1Want = repeatReference(x1, z1, 2);
            Thread keeper = new Thread(() -> chip.run(1,
                    TaskArgs.of(Tensor.of(new int[] {2}), Tensor.of(x1), Tensor.of(z1)), CallConfig.DEFAULT));
            keeper.start();
            keeper.join();
            assertBitExact(z1, z1Want);

            for (int round = 0; round < 2; round++) {
                float[] x = random(n, 10 + round);
                float[] z0 = random(n, 20 + round);
                float[] z = z0.clone();
                int[] codes = {77, 77, 77, 77, 77};
                chip.run(2, TaskArgs.of(Tensor.of(new int[] {0}), Tensor.of(x), Tensor.of(z), Tensor.of(codes)),
                        CallConfig.DEFAULT);
                int refused = PtoError.INVALID_ARGUMENT.code();
                assertThat(codes).as("submit, write_tensor, read_tensor, alloc_tensor != 0, scope_begin")
                        .containsExactly(refused, refused, refused, 0, refused);
                assertBitExact(z, repeatReference(x, z0, 1));
            }
        }
    }
}
