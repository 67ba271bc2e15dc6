package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.ptorun.SimE2E.assertBitExact;
import static org.ptorun.SimE2E.random;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.callable.Affine;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.CoreType;
import org.ptorun.callable.Direction;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;
import org.ptorun.callable.View;

/**
 * Golden tests of issue [9/10] on all eight libraries against plain-Java references written
 * in the kernels' documented order (docs/kernels.md), so results are bit-exact: a batched
 * GEMM over strided tiles with short last tiles and K split across tiles, tiled attention
 * for one head with odd sizes, a 10 000-iteration loop over a scope with per-iteration
 * locals in one iteration's memory, and column tiles of the same rows without an edge
 * between them (the same graph on hbg and trb).
 */
class TensorViewsE2ETest {

    private static final int ID = 9;

    static List<Variant> variants() {
        return SimE2E.allVariants();
    }

    /** Each arch and platform: the hbg and trb libraries of it are compared. */
    static List<Variant> hbgVariants() {
        return SimE2E.allVariants().stream().filter(v -> v.runtime() == Variant.RuntimeKind.HBG).toList();
    }

    private static ChipWorker open(Variant variant) {
        return ChipWorker.open(HostRuntime.load(variant), 0);
    }

    /** {@code min(total - tile*i, tile)}: the extent of tile {@code i} of {@code total} elements along loop depth {@code depth}. */
    private static Affine tail(long total, long tile, int depth) {
        return Affine.of(total).plus(-tile, depth).min(tile);
    }

    // ---- batched GEMM ----------------------------------------------------------------------------

    @ParameterizedTest
    @MethodSource("variants")
    void aBatchedGemmOverStridedTilesWithShortTailsAndSplitKEqualsTheJavaReference(Variant variant) {
        int batch = 2;
        int m = 11;
        int n = 13;
        int k = 10;
        int t = 4; // tiles: 3 over M (4, 4, 3), 4 over N (4, 4, 4, 1), 3 over K (4, 4, 2)
        int gemm = 1;
        View a = View.arg(0, DType.F32, batch, m, k);
        View b = View.arg(1, DType.F32, batch, k, n);
        View c = View.arg(2, DType.F32, batch, m, n);
        Program program = Program.builder().loop(batch, (p0, bi) -> p0.loop(ceil(m, t), (p1, i) -> p1
                .loop(ceil(n, t), (p2, j) -> p2.loop(ceil(k, t), (p3, kk) -> p3.submit(gemm,
                        Param.in(a.select(0, bi).slice(0, i.times(t), tail(m, t, 1)).slice(1, kk.times(t), tail(k, t, 3))),
                        Param.in(b.select(0, bi).slice(0, kk.times(t), tail(k, t, 3)).slice(1, j.times(t), tail(n, t, 2))),
                        Param.inout(c.select(0, bi).slice(0, i.times(t), tail(m, t, 1))
                                .slice(1, j.times(t), tail(n, t, 2)))))))).build();
        ChipCallable callable = ChipCallable.builder().signature(Direction.IN, Direction.IN, Direction.INOUT)
                .child(gemm, CoreType.AIC, Kernel.gemmTile()).program(program).build();
        float[] av = random(batch * m * k, 11);
        float[] bv = random(batch * k * n, 12);
        float[] cv = random(batch * m * n, 13);
        float[] expected = cv.clone();
        for (int bi = 0; bi < batch; bi++) {
            for (int i = 0; i < m; i++) {
                for (int j = 0; j < n; j++) {
                    float acc = expected[(bi * m + i) * n + j];
                    for (int kk = 0; kk < k; kk++) { // K split in tiles, in order: the same sums
                        acc = acc + av[(bi * m + i) * k + kk] * bv[(bi * k + kk) * n + j];
                    }
                    expected[(bi * m + i) * n + j] = acc;
                }
            }
        }
        try (ChipWorker chip = open(variant)) {
            chip.registerCallable(ID, callable);
            chip.run(ID, TaskArgs.of(Tensor.of(av), Tensor.of(bv), Tensor.of(cv)), CallConfig.DEFAULT);
        }
        assertBitExact(cv, expected);
    }

    private static int ceil(int total, int tile) {
        return (total + tile - 1) / tile;
    }

    // ---- attention ----------------------------------------------------------------------------------

    @ParameterizedTest
    @MethodSource("variants")
    void tiledAttentionForOneHeadWithOddSizesEqualsTheJavaReference(Variant variant) {
        int s = 7;
        int d = 5;
        int t = 4; // query rows in tiles of 4, 4 then 3
        float scale = (float) (1.0 / Math.sqrt(d));
        int fill = 1;
        int gemm = 2;
        int muls = 3;
        int softmax = 4;
        int rowSum = 5;
        View q = View.arg(0, DType.F32, s, d);
        View kt = View.arg(1, DType.F32, s, d).transpose(0, 1); // K^T without a copy
        View v = View.arg(2, DType.F32, s, d);
        View o = View.arg(3, DType.F32, s, d);
        View sums = View.arg(4, DType.F32, s, 1);
        View scores = View.local(0, DType.F32, t, s);
        View probs = View.local(1, DType.F32, t, s);
        Program program = Program.builder().loop(ceil(s, t), (p, i) -> p.scope(b -> {
            Affine rows = tail(s, t, 0);
            View sc = scores.slice(0, 0, rows);
            View pr = probs.slice(0, 0, rows);
            View out = o.slice(0, i.times(t), rows);
            b.allocTensor(0, DType.F32, t, s).allocTensor(1, DType.F32, t, s)
                    .submit(fill, Param.out(sc), Param.scalarF32(0f))
                    .submit(gemm, Param.in(q.slice(0, i.times(t), rows)), Param.in(kt), Param.inout(sc))
                    .submit(muls, Param.in(sc), Param.out(sc), Param.scalarF32(scale))
                    .submit(softmax, Param.in(sc), Param.out(pr))
                    .submit(rowSum, Param.in(pr), Param.out(sums.slice(0, i.times(t), rows)), Param.scalar(1))
                    .submit(fill, Param.out(out), Param.scalarF32(0f))
                    .submit(gemm, Param.in(pr), Param.in(v), Param.inout(out));
        })).build();
        ChipCallable callable = ChipCallable.builder()
                .signature(Direction.IN, Direction.IN, Direction.IN, Direction.OUT, Direction.OUT)
                .child(fill, CoreType.AIV, Kernel.vfill())
                .child(gemm, CoreType.AIC, Kernel.gemmTile())
                .child(muls, CoreType.AIV, Kernel.vmuls())
                .child(softmax, CoreType.AIV, Kernel.softmaxRows())
                .child(rowSum, CoreType.AIV, Kernel.reduceSum())
                .program(program).build();
        float[] qv = random(s * d, 21);
        float[] kv = random(s * d, 22);
        float[] vv = random(s * d, 23);
        float[] ov = new float[s * d];
        float[] sv = new float[s];
        // the reference, in the kernels' order
        float[] expectedO = new float[s * d];
        float[] expectedSums = new float[s];
        for (int r = 0; r < s; r++) {
            float[] row = new float[s];
            for (int c = 0; c < s; c++) {
                float acc = 0f;
                for (int x = 0; x < d; x++) {
                    acc = acc + qv[r * d + x] * kv[c * d + x];
                }
                row[c] = acc * scale;
            }
            float max = row[0];
            for (int c = 1; c < s; c++) {
                if (row[c] > max) {
                    max = row[c];
                }
            }
            float[] e = new float[s];
            float sum = 0f;
            for (int c = 0; c < s; c++) {
                e[c] = (float) Math.exp((double) (row[c] - max));
                sum = sum + e[c];
            }
            float[] prob = new float[s];
            float total = 0f;
            for (int c = 0; c < s; c++) {
                prob[c] = e[c] / sum;
                total = c == 0 ? prob[0] : total + prob[c];
            }
            expectedSums[r] = total;
            for (int x = 0; x < d; x++) {
                float acc = 0f;
                for (int c = 0; c < s; c++) {
                    acc = acc + prob[c] * vv[c * d + x];
                }
                expectedO[r * d + x] = acc;
            }
        }
        try (ChipWorker chip = open(variant)) {
            chip.registerCallable(ID, callable);
            chip.run(ID, TaskArgs.of(Tensor.of(qv), Tensor.of(kv), Tensor.of(vv), Tensor.of(ov), Tensor.of(sv)),
                    CallConfig.DEFAULT);
        }
        assertBitExact(ov, expectedO);
        assertBitExact(sv, expectedSums);
    }

    // ---- a long loop over a scope ----------------------------------------------------------------

    /**
     * LOOP iterations { SCOPE { ALLOC t[cols]; t = x[i] * 2; acc += t } } — or, {@code hoisted},
     * ALLOC t[cols]; LOOP iterations { t = x[i] * 2; acc += t }: the same tasks with one local.
     */
    private static ChipCallable accumulation(int iterations, int cols, boolean hoisted) {
        View x = View.arg(0, DType.F32, iterations, cols);
        View acc = View.arg(1, DType.F32, cols);
        View t = View.local(0, DType.F32, cols);
        Program.Builder b = Program.builder();
        if (hoisted) {
            b.allocTensor(0, DType.F32, cols).loop(iterations, (p, i) -> p
                    .submit(1, Param.in(x.select(0, i)), Param.out(t), Param.scalarF32(2f))
                    .submit(2, Param.in(t), Param.inout(acc)));
        } else {
            b.loop(iterations, (p, i) -> p.scope(s -> s
                    .allocTensor(0, DType.F32, cols)
                    .submit(1, Param.in(x.select(0, i)), Param.out(t), Param.scalarF32(2f))
                    .submit(2, Param.in(t), Param.inout(acc))));
        }
        return ChipCallable.builder().signature(Direction.IN, Direction.INOUT)
                .child(1, CoreType.AIV, Kernel.vmuls()).child(2, CoreType.AIV, Kernel.tileAdd())
                .program(b.build()).build();
    }

    /**
     * A local allocated in a scope that the loop repeats is allocated again in every
     * iteration, after the previous iteration's scope freed it: the run commits exactly the
     * device memory of the same tasks with one local allocated once (hbg sizes the local heap
     * by the program's peak; trb's scope ring is given 1 024 bytes, four iterations' locals,
     * and streams 20 000 tasks through it). Each is measured alone, less what its
     * registration holds ({@link #runMemoryWhilePrepared}).
     */
    @ParameterizedTest
    @MethodSource("variants")
    void tenThousandIterationsOverAScopeRunInTheMemoryOfOne(Variant variant) {
        int iterations = 10_000;
        int cols = 64;
        float[] x = random(iterations * cols, 31);
        float[] start = random(cols, 32);
        float[] expected = start.clone();
        for (int i = 0; i < iterations; i++) {
            for (int c = 0; c < cols; c++) {
                expected[c] = expected[c] + x[i * cols + c] * 2f;
            }
        }
        CallConfig tight = CallConfig.builder().ringHeap(1, 1024).build();
        try (ChipWorker chip = open(variant)) {
            float[] once = start.clone();
            float[] scoped = start.clone();
            long hoisted = runMemoryWhilePrepared(chip, ID, accumulation(iterations, cols, true), x, once, tight);
            long perIteration = runMemoryWhilePrepared(chip, ID + 1, accumulation(iterations, cols, false), x, scoped,
                    tight);
            assertThat(perIteration).as("device memory of the prepared run, per-iteration locals vs one local")
                    .isEqualTo(hoisted);
            assertBitExact(once, expected);
            assertBitExact(scoped, expected);
        }
    }

    /**
     * Registers the program alone and runs it once (its graph recorded, docs/recorded-graphs.md),
     * then prepares a second run: the chip's committed device memory while that run is
     * prepared, less what the registration holds (its upload and its recorded graph, freed
     * at unregister, whose sizes follow the program's length, not its locals).
     */
    private static long runMemoryWhilePrepared(ChipWorker chip, int id, ChipCallable program, float[] x, float[] acc,
            CallConfig config) {
        chip.registerCallable(id, program);
        chip.run(id, TaskArgs.of(Tensor.of(x), Tensor.of(acc.clone())), config);
        long prepared = committedWhilePrepared(chip, id, x, acc, config);
        long registered = chip.committedDeviceMemory();
        chip.unregisterCallable(id);
        return prepared - (registered - chip.committedDeviceMemory());
    }

    /** Prepares, reads the chip's committed device memory, launches and finalizes (results copied back). */
    private static long committedWhilePrepared(ChipWorker chip, int id, float[] x, float[] acc, CallConfig config) {
        NativeRun run = chip.prepare(id, TaskArgs.of(Tensor.of(x), Tensor.of(acc)), config, PipelineSlotLease.of(0,
                1 + id), id, id, null);
        long committed = chip.committedDeviceMemory();
        chip.launch(run);
        chip.finalizeRun(run);
        return committed;
    }

    // ---- other dtypes ------------------------------------------------------------------------------

    /**
     * i32 arithmetic on strided column tiles (wrapping like Java {@code int}) and an f16
     * transposing copy (element by element, bits unchanged): the dtypes the built-ins take
     * besides f32 (docs/kernels.md).
     */
    @ParameterizedTest
    @MethodSource("variants")
    void i32TilesAddLikeJavaIntsAndF16ViewsCopyTransposed(Variant variant) {
        int rows = 5;
        int cols = 7;
        View a = View.arg(0, DType.I32, rows, cols);
        View b = View.arg(1, DType.I32, rows, cols);
        View c = View.arg(2, DType.I32, rows, cols);
        View x = View.arg(3, DType.F16, rows, cols);
        View y = View.arg(4, DType.F16, cols, rows);
        Program program = Program.builder()
                .loop(ceil(cols, 3), (p, j) -> p.submit(1,
                        Param.in(a.slice(1, j.times(3), tail(cols, 3, 0))),
                        Param.in(b.slice(1, j.times(3), tail(cols, 3, 0))),
                        Param.out(c.slice(1, j.times(3), tail(cols, 3, 0)))))
                .submit(2, Param.in(x.transpose(0, 1)), Param.out(y))
                .build();
        ChipCallable callable = ChipCallable.builder()
                .signature(Direction.IN, Direction.IN, Direction.OUT, Direction.IN, Direction.OUT)
                .child(1, CoreType.AIV, Kernel.vadd()).child(2, CoreType.AIV, Kernel.vcopy())
                .program(program).build();
        java.util.SplittableRandom r = new java.util.SplittableRandom(51);
        int[] av = new int[rows * cols];
        int[] bv = new int[rows * cols];
        short[] xv = new short[rows * cols];
        for (int e = 0; e < av.length; e++) {
            av[e] = r.nextInt();
            bv[e] = e % 2 == 0 ? Integer.MAX_VALUE : r.nextInt();
            xv[e] = (short) r.nextInt(1 << 16);
        }
        int[] cv = new int[rows * cols];
        short[] yv = new short[rows * cols];
        try (ChipWorker chip = open(variant)) {
            chip.registerCallable(ID, callable);
            chip.run(ID, TaskArgs.of(Tensor.of(av), Tensor.of(bv), Tensor.of(cv), Tensor.of(xv), Tensor.of(yv)),
                    CallConfig.DEFAULT);
        }
        for (int e = 0; e < av.length; e++) {
            assertThat(cv[e]).as("c[%d]", e).isEqualTo(av[e] + bv[e]);
        }
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < cols; j++) {
                assertThat(yv[j * rows + i]).as("y[%d][%d]", j, i).isEqualTo(xv[i * cols + j]);
            }
        }
    }

    // ---- column tiles ----------------------------------------------------------------------------------

    @ParameterizedTest
    @MethodSource("hbgVariants")
    void columnTilesOfTheSameRowsHaveNoEdgeBetweenThemOnHbgAndTrb(Variant hbg, @TempDir Path dir)
            throws IOException {
        int rows = 11;
        int cols = 37;
        View x = View.arg(0, DType.F32, rows, cols);
        View y = View.arg(1, DType.F32, rows, cols);
        Program program = Program.builder()
                .loop(5, (p, j) -> p.submit(1, Param.in(x.slice(1, j.times(8), tail(cols, 8, 0))),
                        Param.out(y.slice(1, j.times(8), tail(cols, 8, 0)))))
                .submit(1, Param.in(y.slice(1, 8, 8)), Param.out(x.slice(1, 8, 8)))
                .build();
        ChipCallable callable = ChipCallable.builder().signature(Direction.INOUT, Direction.INOUT)
                .child(1, CoreType.AIV, Kernel.vcopy()).program(program).build();
        String expected = "digraph ptorun_run {\n"
                + "  t0 [label=\"0 f1\"];\n"
                + "  t1 [label=\"1 f1\"];\n"
                + "  t2 [label=\"2 f1\"];\n"
                + "  t3 [label=\"3 f1\"];\n"
                + "  t4 [label=\"4 f1\"];\n"
                + "  t5 [label=\"5 f1\"];\n"
                + "  t1 -> t5;\n"
                + "}\n";
        for (Variant.RuntimeKind runtime : Variant.RuntimeKind.values()) {
            Variant variant = new Variant(hbg.arch(), hbg.platform(), runtime);
            Path prefix = Files.createDirectories(dir.resolve(variant.libraryName()));
            CallConfig config = CallConfig.builder().enableDepGraph(true).outputPrefix(prefix).build();
            float[] xv = random(rows * cols, 41);
            float[] yv = new float[rows * cols];
            try (ChipWorker chip = open(variant)) {
                chip.registerCallable(ID, callable);
                NativeRun run = chip.prepare(ID, TaskArgs.of(Tensor.of(xv), Tensor.of(yv)), config,
                        PipelineSlotLease.of(0, 1), 5, 5, null);
                chip.launch(run);
                chip.finalizeRun(run);
                Path file = prefix.resolve("dep_graph_5_" + run.runEpoch() + ".dot");
                assertThat(Files.readString(file, StandardCharsets.US_ASCII)).as(variant.toString())
                        .isEqualTo(expected);
            }
        }
    }
}
