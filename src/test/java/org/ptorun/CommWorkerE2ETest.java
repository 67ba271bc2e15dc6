package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.ptorun.SimE2E.assertBitExact;
import static org.ptorun.SimE2E.random;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.CoreType;
import org.ptorun.callable.Direction;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;
import org.ptorun.worker.CollectiveStep;
import org.ptorun.worker.CollectiveStepException;
import org.ptorun.worker.RunResult;
import org.ptorun.worker.Worker;

/**
 * A Worker runs one callable as a collective step on every chip of a group: the
 * data-parallel GEMM of issue [10/10] (four chips each compute a partial product over
 * their share of K into their window, allreduce_sum it, every rank checks the whole
 * product), and one rank's failure failing the step on every rank with that rank named.
 */
class CommWorkerE2ETest {

    private static final int STEP = 5;
    private static final int GEMM = 0;
    private static final int ALLREDUCE = 1;
    private static final int RANKS = 4;

    static List<Variant> variants() {
        return SimE2E.allVariants();
    }

    /** gemm_tile(A_r, B_r, C) then allreduce_sum(C); args: A_r, B_r, C (window), comm. */
    static ChipCallable partialGemmThenAllreduce(int m, int kr, int n) {
        Program program = Program.builder()
                .submit(GEMM, Param.tensor(0, Direction.IN, 0, 4L * m * kr), Param.tensor(1, Direction.IN, 0, 4L * kr * n),
                        Param.tensor(2, Direction.INOUT, 0, 4L * m * n), Param.scalar(m), Param.scalar(kr),
                        Param.scalar(n))
                .submit(ALLREDUCE, Param.tensor(2, Direction.INOUT, 0, 4L * m * n), Param.scalarArg(0))
                .build();
        return ChipCallable.builder().signature(Direction.IN, Direction.IN, Direction.INOUT, Direction.SCALAR)
                .child(GEMM, CoreType.AIC, Kernel.gemmTile())
                .child(ALLREDUCE, CoreType.AIV, Kernel.builtin("allreduce_sum")).program(program).build();
    }

    @ParameterizedTest
    @MethodSource("variants")
    void fourChipsComputePartialGemmsAllreduceThemAndEveryRankHoldsTheProduct(Variant variant, @TempDir Path dir)
            throws Exception {
        int m = 9;
        int n = 7;
        int kr = 5; // K = 20 split over four ranks
        float[][] a = new float[RANKS][];
        float[][] b = new float[RANKS][];
        for (int r = 0; r < RANKS; r++) {
            a[r] = random(m * kr, 40 + r);
            b[r] = random(kr * n, 50 + r);
        }
        // the partial products as gemm_tile computes them, summed in rank order as allreduce_sum does
        float[] expected = new float[m * n];
        for (int r = 0; r < RANKS; r++) {
            for (int i = 0; i < m; i++) {
                for (int j = 0; j < n; j++) {
                    float acc = 0f;
                    for (int k = 0; k < kr; k++) {
                        acc = acc + a[r][i * kr + k] * b[r][k * n + j];
                    }
                    expected[i * n + j] = r == 0 ? acc : expected[i * n + j] + acc;
                }
            }
        }
        try (Worker worker = Worker.builder().variant(variant).devices(0, 1, 2, 3).queueCapacity(16).background(true)
                .build()) {
            worker.register(STEP, partialGemmThenAllreduce(m, kr, n)).get(60, TimeUnit.SECONDS);
            CommGroup group = worker.openCommGroup(dir.resolve("rootinfo"), Duration.ofSeconds(20));
            try {
                group.allocWindows(4L * m * n);
                for (int round = 0; round < 3; round++) {
                    for (CommRank rank : group.ranks()) {
                        rank.chip().copyTo(rank.window(), new float[m * n]); // C = 0 before the partial product
                    }
                    CollectiveStep step = worker.enqueueCollective(group, STEP, rank -> new TaskArgs()
                            .tensor(Tensor.of(a[rank.rank()])).tensor(Tensor.of(b[rank.rank()]))
                            .tensor(Tensor.of(rank.window(), DType.F32)).scalar(rank.deviceContext()),
                            CallConfig.DEFAULT);
                    List<Integer> devices = new ArrayList<>();
                    for (int r = 0; r < RANKS; r++) {
                        RunResult result = step.result(r).get(60, TimeUnit.SECONDS);
                        devices.add(result.deviceId());
                        float[] c = new float[m * n];
                        group.rank(r).chip().copyFrom(group.rank(r).window(), c);
                        assertBitExact(c, expected);
                    }
                    assertThat(devices).as("rank r ran on the chip of rank r").containsExactly(0, 1, 2, 3);
                }
            } finally {
                group.close();
            }
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void oneRankRefusingItsArgumentsFailsTheStepOnEveryRankNamingIt(Variant variant, @TempDir Path dir)
            throws Exception {
        int count = 64;
        ChipCallable allreduce = CommCollectivesE2ETest.single("allreduce_sum", List.of(Direction.INOUT), 1,
                new long[] {4L * count});
        try (Worker worker = Worker.builder().variant(variant).devices(0, 1, 2).queueCapacity(16).background(true)
                .build()) {
            worker.register(STEP, allreduce).get(60, TimeUnit.SECONDS);
            CommGroup group = worker.openCommGroup(dir.resolve("rootinfo"), Duration.ofSeconds(20));
            try {
                group.allocWindows(4L * count);
                int bad = 1;
                List<DeviceBuffer> outside = new ArrayList<>();
                CollectiveStep step = worker.enqueueCollective(group, STEP, rank -> {
                    DeviceBuffer x = rank.window();
                    if (rank.rank() == bad) { // not in its window: the kernel refuses and breaks the domain
                        x = rank.chip().malloc(4L * count);
                        outside.add(x);
                    }
                    return new TaskArgs().tensor(Tensor.of(x, DType.F32)).scalar(rank.deviceContext());
                }, CallConfig.DEFAULT);
                for (int r = 0; r < 3; r++) {
                    Throwable t = catchThrowable(step.result(r)::join);
                    assertThat(t).isInstanceOf(CompletionException.class);
                    assertThat(t.getCause()).isInstanceOf(CollectiveStepException.class);
                    CollectiveStepException e = (CollectiveStepException) t.getCause();
                    assertThat(e.failedRanks()).contains(bad);
                    assertThat(e.failures().get(bad)).isInstanceOf(KernelFaultException.class);
                    assertThat(e.getMessage()).contains("rank(s) [").contains(String.valueOf(bad));
                    // the others' kernels name the rank that broke the domain
                    e.failures().forEach((rank, f) -> {
                        if (rank != bad) {
                            assertThat(f.getMessage()).as("rank %d", rank).contains("rank " + bad);
                        }
                    });
                }
                outside.forEach(DeviceBuffer::close);
                // the group is broken, the chips are not: a plain run still works on every chip
                for (CommRank rank : group.ranks()) {
                    assertThat(rank.chip().isHealthy()).isTrue();
                }
            } finally {
                group.close();
            }
        }
    }
}
