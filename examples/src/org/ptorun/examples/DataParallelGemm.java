package org.ptorun.examples;

import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.INOUT;
import static org.ptorun.callable.Direction.SCALAR;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.ptorun.CallConfig;
import org.ptorun.CommGroup;
import org.ptorun.CommRank;
import org.ptorun.DType;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.CoreType;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;
import org.ptorun.worker.CollectiveStep;
import org.ptorun.worker.Worker;

/**
 * {@code C = A·B} on several chips at once (docs/communication.md): K is split across the
 * chips, each computes its partial product {@code A[:, K_r]·B[K_r, :]} into its window of a
 * communication group, and one {@code allreduce_sum} leaves the whole product in every
 * chip's window. The Worker runs the callable as one collective step on every chip.
 *
 * <pre>java ... org.ptorun.examples.DataParallelGemm [variant]</pre>
 */
public final class DataParallelGemm {

    private static final int STEP = 0;
    private static final int GEMM = 0;
    private static final int ALLREDUCE = 1;

    private DataParallelGemm() {
    }

    /** gemm_tile into the window (args: A_r, B_r, C in the window, the comm scalar), then allreduce_sum of C. */
    public static ChipCallable callable(int m, int kPerChip, int n) {
        long cBytes = 4L * m * n;
        Program program = Program.builder()
                .submit(GEMM, Param.tensor(0, IN, 0, 4L * m * kPerChip), Param.tensor(1, IN, 0, 4L * kPerChip * n),
                        Param.tensor(2, INOUT, 0, cBytes), Param.scalar(m), Param.scalar(kPerChip), Param.scalar(n))
                .submit(ALLREDUCE, Param.tensor(2, INOUT, 0, cBytes), Param.scalarArg(0))
                .build();
        return ChipCallable.builder().signature(IN, IN, INOUT, SCALAR)
                .child(GEMM, CoreType.AIC, Kernel.gemmTile())
                .child(ALLREDUCE, CoreType.AIV, Kernel.builtin("allreduce_sum"))
                .program(program)
                .build();
    }

    /**
     * Computes {@code C = A·B} ({@code a[r]}, {@code b[r]}: chip r's share of K) on
     * {@code chips} chips; returns C as every chip's window holds it (rank order).
     */
    public static float[][] run(Variant variant, int chips, int m, int kPerChip, int n, float[][] a, float[][] b)
            throws Exception {
        int[] devices = new int[chips];
        for (int d = 0; d < chips; d++) {
            devices[d] = d;
        }
        Path dir = Files.createTempDirectory("ptorun-dp-gemm");
        try (Worker worker = Worker.builder().variant(variant).devices(devices).background(true).build()) {
            worker.register(STEP, callable(m, kPerChip, n)).get(60, TimeUnit.SECONDS);
            try (CommGroup group = worker.openCommGroup(dir.resolve("rootinfo"), Duration.ofSeconds(30))) {
                group.allocWindows(4L * m * n); // fresh windows are zero: C starts at 0
                CollectiveStep step = worker.enqueueCollective(group, STEP, (CommRank rank) -> new TaskArgs()
                        .tensor(Tensor.of(a[rank.rank()])).tensor(Tensor.of(b[rank.rank()]))
                        .tensor(Tensor.of(rank.window(), DType.F32)).scalar(rank.deviceContext()), CallConfig.DEFAULT);
                float[][] c = new float[chips][m * n];
                for (int r = 0; r < chips; r++) {
                    step.result(r).get(60, TimeUnit.SECONDS);
                    group.rank(r).chip().copyFrom(group.rank(r).window(), c[r]);
                }
                return c;
            }
        } finally {
            Files.deleteIfExists(dir.resolve("rootinfo"));
            Files.delete(dir);
        }
    }

    public static void main(String[] argv) throws Exception {
        Variant variant = argv.length > 0 ? Variant.parse(argv[0]) : Variant.DEFAULT;
        int chips = 4;
        int m = 6;
        int n = 5;
        int kPerChip = 3;
        float[][] a = new float[chips][m * kPerChip];
        float[][] b = new float[chips][kPerChip * n];
        for (int r = 0; r < chips; r++) {
            for (int x = 0; x < a[r].length; x++) {
                a[r][x] = (x + r) % 5 - 2;
            }
            for (int x = 0; x < b[r].length; x++) {
                b[r][x] = (x * 3 + r) % 7 - 3;
            }
        }
        float[][] c = run(variant, chips, m, kPerChip, n, a, b);
        float corner = 0;
        for (int r = 0; r < chips; r++) {
            for (int l = 0; l < kPerChip; l++) {
                corner += a[r][(m - 1) * kPerChip + l] * b[r][l * n + n - 1];
            }
        }
        boolean same = true;
        for (float[] rank : c) {
            same &= rank[m * n - 1] == corner;
        }
        System.out.println(variant + " on " + chips + " chips: C[" + (m - 1) + "][" + (n - 1) + "] = " + c[0][m * n - 1]
                + " on every chip: " + same);
        if (!same) {
            System.exit(1);
        }
    }
}
