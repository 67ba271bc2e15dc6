package org.ptorun.hosts;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
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
import org.ptorun.callable.Direction;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;
import org.ptorun.callable.View;
import org.ptorun.worker.CollectiveStep;
import org.ptorun.worker.RunResult;
import org.ptorun.worker.Worker;

/**
 * Scenario {@code gemm} of {@link HostRanksMain}: one data-parallel training-like step across
 * hosts through a {@link Worker}'s collective steps. Rank r holds a shard of {@value #ROWS}
 * rows of X ({@value #ROWS} × {@value #K}) and D ({@value #ROWS} × {@value #N}); one callable
 * zeroes its window, computes {@code G_r = X_r^T · D_r} ({@value #K} × {@value #N}) into it
 * with {@code gemm_tile} over a transposed view of X_r (no copy), and allreduce_sums it. Every
 * rank then holds {@code Σ_r G_r}, compared bit for bit with a Java reference: each G_r in the
 * kernel's order ({@code acc = 0; for b: acc = acc + X[b][i]·D[b][j]}), summed in the
 * cross-host order ({@link HostRanksMain#referenceSum}). {@value #STEPS} steps, new data each.
 *
 * <p>The Worker opens the host's chips and joins them to the group through the root-info
 * string ({@link Worker#joinCommGroup(String, int, int, java.time.Duration)}); the step's
 * results are named by group rank.
 */
final class GemmStepScenario {

    static final int ROWS = 37;
    static final int K = 33;
    static final int N = 29;
    static final int STEPS = 3;
    private static final int STEP = 7;
    private static final int FILL = 0;
    private static final int GEMM = 1;
    private static final int ALLREDUCE = 2;
    private static final long WAIT_SECONDS = 60;

    private GemmStepScenario() {
    }

    /** fill(G, 0); G += X^T·D (strided); allreduce_sum(G). Args: X_r, D_r, G (the window), comm. */
    static ChipCallable gradientStep(int rows, int k, int n) {
        long gBytes = 4L * k * n;
        View xt = View.arg(0, DType.F32, rows, k).transpose(0, 1); // X_r^T without a copy
        View d = View.arg(1, DType.F32, rows, n);
        View g = View.arg(2, DType.F32, k, n);
        Program program = Program.builder()
                .submit(FILL, Param.tensor(2, Direction.OUT, 0, gBytes), Param.scalarF32(0f))
                .submit(GEMM, Param.in(xt), Param.in(d), Param.inout(g))
                .submit(ALLREDUCE, Param.tensor(2, Direction.INOUT, 0, gBytes), Param.scalarArg(0))
                .build();
        return ChipCallable.builder()
                .signature(Direction.IN, Direction.IN, Direction.INOUT, Direction.SCALAR)
                .child(FILL, CoreType.AIV, Kernel.vfill())
                .child(GEMM, CoreType.AIC, Kernel.gemmTile())
                .child(ALLREDUCE, CoreType.AIV, Kernel.builtin("allreduce_sum"))
                .program(program).build();
    }

    /** G = X^T·D as gemm_tile computes it into a zeroed C: per element, products summed over the rows in order. */
    static float[] partialProduct(float[] x, float[] d, int rows, int k, int n) {
        float[] g = new float[k * n];
        for (int i = 0; i < k; i++) {
            for (int j = 0; j < n; j++) {
                float acc = 0f;
                for (int b = 0; b < rows; b++) {
                    acc = acc + x[b * k + i] * d[b * n + j];
                }
                g[i * n + j] = acc;
            }
        }
        return g;
    }

    /** Rank {@code rank}'s shard of step {@code step} ({@code which}: 0 for X, 1 for D): the same in every process. */
    static float[] shard(int rank, int step, int which, int count) {
        SplittableRandom rnd = new SplittableRandom(7_919L * (step + 1) + 104_729L * which + rank);
        float[] v = new float[count];
        for (int i = 0; i < count; i++) {
            v[i] = (float) (rnd.nextDouble() * 4 - 2);
        }
        return v;
    }

    /** Runs the scenario on ranks {@code first .. first + local - 1}; the number of failed checks. */
    static int run(Variant variant, String rootInfo, int first, int local, int size, int[] hostOf) {
        try {
            return runChecked(variant, rootInfo, first, local, size, hostOf);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException("scenario gemm: " + e, e);
        }
    }

    private static int runChecked(Variant variant, String rootInfo, int first, int local, int size, int[] hostOf)
            throws Exception {
        int[] devices = new int[local];
        for (int i = 0; i < local; i++) {
            devices[i] = first + i;
        }
        int failed = 0;
        try (Worker worker = Worker.builder().variant(variant).devices(devices).queueCapacity(16).background(true)
                .build()) {
            worker.register(STEP, gradientStep(ROWS, K, N)).get(WAIT_SECONDS, TimeUnit.SECONDS);
            long t0 = System.nanoTime();
            CommGroup group = worker.joinCommGroup(rootInfo, first, size, HostRanksMain.TIMEOUT);
            try {
                System.out.printf("joined ranks %d..%d of %s on %s through a Worker (%d ms)%n", first,
                        first + local - 1, group, variant, (System.nanoTime() - t0) / 1_000_000);
                group.allocWindows(4L * K * N);
                for (int s = 0; s < STEPS; s++) {
                    failed += step(worker, group, hostOf, s);
                }
                group.barrier(); // nobody leaves while a peer still reads its window
            } finally {
                group.close();
            }
        }
        return failed;
    }

    private static int step(Worker worker, CommGroup group, int[] hostOf, int s) throws Exception {
        int size = hostOf.length;
        float[][] x = new float[size][];
        float[][] d = new float[size][];
        float[][] partial = new float[size][];
        for (int r = 0; r < size; r++) {
            x[r] = shard(r, s, 0, ROWS * K);
            d[r] = shard(r, s, 1, ROWS * N);
            partial[r] = partialProduct(x[r], d[r], ROWS, K, N);
        }
        float[] expected = HostRanksMain.referenceSum(partial, hostOf);
        long t0 = System.nanoTime();
        CollectiveStep step = worker.enqueueCollective(group, STEP, rank -> new TaskArgs()
                .tensor(Tensor.of(x[rank.rank()])).tensor(Tensor.of(d[rank.rank()]))
                .tensor(Tensor.of(rank.window(), DType.F32)).scalar(rank.deviceContext()), CallConfig.DEFAULT);
        int failed = 0;
        List<CommRank> ranks = group.ranks();
        assertRanks(step.ranks(), ranks);
        List<RunResult> results = new ArrayList<>();
        for (CommRank rank : ranks) { // the step names the group's ranks, this host's only
            results.add(step.result(rank.rank()).get(WAIT_SECONDS, TimeUnit.SECONDS));
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        for (int i = 0; i < ranks.size(); i++) {
            CommRank rank = ranks.get(i);
            float[] g = new float[K * N];
            rank.chip().copyFrom(rank.window(), g);
            String mismatch = HostRanksMain.firstMismatch(g, expected);
            String ranOn = results.get(i).deviceId() == rank.chip().deviceId() ? ""
                    : " but ran on device " + results.get(i).deviceId() + ", not its chip's "
                    + rank.chip().deviceId();
            if (mismatch == null && ranOn.isEmpty()) {
                System.out.printf("PASS gemm step %d (G = X^T·D, %dx%d over %d rows per rank, allreduce_sum): rank %d"
                        + " bit-exact (%d ms)%n", s, K, N, ROWS, rank.rank(), ms);
            } else {
                System.out.printf("FAIL gemm step %d: rank %d %s%s%n", s, rank.rank(),
                        mismatch == null ? "matches" : mismatch, ranOn);
                failed++;
            }
        }
        return failed;
    }

    private static void assertRanks(List<Integer> stepRanks, List<CommRank> local) {
        List<Integer> want = local.stream().map(CommRank::rank).toList();
        if (!stepRanks.equals(want)) {
            throw new IllegalStateException("the step's ranks " + stepRanks + " are not this host's " + want);
        }
    }
}
