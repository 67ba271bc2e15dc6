package org.ptorun;

import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.INOUT;
import static org.ptorun.callable.Direction.OUT;

import org.ptorun.callable.Affine;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;

/**
 * The callables of the end-to-end tests and their Java references, computed in the same
 * f32 order as the kernels (docs/kernels.md), so results compare bit for bit.
 */
final class Programs {

    private Programs() {
    }

    // ---- tiled batched GEMM: gemm_tile on AIC, tile_add on AIV ------------------------------------

    static final int GEMM_FILL = 0;
    static final int GEMM_TILE = 1;
    static final int GEMM_ADD = 2;

    /**
     * {@code C[b] = A[b] · B[b]} for {@code batch} matrices, with K split into
     * {@code tiles} tiles: per (b, t) a zeroed partial product {@code P_t = A[b][:, t] ·
     * B[b][t, :]} (gemm_tile, AIC) into its own slice of a local tensor, so the tiles of a
     * batch run in parallel, then {@code C[b] += P_t} (tile_add, AIV) in tile order.
     *
     * <p>Arguments: A (IN) packed tile by tile, {@code [batch][tiles][m][k/tiles]} (each
     * tile a row-major block, as gemm_tile reads it); B (IN) {@code [batch][k][n]}
     * row-major (a K-tile of B is a run of rows: contiguous); C (OUT) {@code [batch][m][n]}.
     */
    static ChipCallable tiledGemm(int batch, int m, int k, int n, int tiles) {
        int kt = k / tiles;
        long aTile = 4L * m * kt;
        long bTile = 4L * kt * n;
        long bBatch = 4L * k * n;
        long cBytes = 4L * m * n;
        Program program = Program.builder()
                .allocTensor(0, tiles * cBytes)
                .loop(batch, (p, b) -> p
                        .submit(GEMM_FILL, Param.tensor(2, OUT, b.times(cBytes), Affine.of(cBytes)), Param.scalarF32(0f))
                        .loop(tiles, (q, t) -> q
                                .submit(GEMM_FILL, Param.local(0, OUT, t.times(cBytes), Affine.of(cBytes)),
                                        Param.scalarF32(0f))
                                .submit(GEMM_TILE,
                                        Param.tensor(0, IN, b.times(tiles * aTile).plus(t.times(aTile)), Affine.of(aTile)),
                                        Param.tensor(1, IN, b.times(bBatch).plus(t.times(bTile)), Affine.of(bTile)),
                                        Param.local(0, INOUT, t.times(cBytes), Affine.of(cBytes)),
                                        Param.scalar(m), Param.scalar(kt), Param.scalar(n))
                                .submit(GEMM_ADD, Param.local(0, IN, t.times(cBytes), Affine.of(cBytes)),
                                        Param.tensor(2, INOUT, b.times(cBytes), Affine.of(cBytes)))))
                .build();
        return ChipCallable.builder()
                .signature(IN, IN, OUT)
                .child(GEMM_FILL, Kernel.vfill())
                .child(GEMM_TILE, Kernel.gemmTile())
                .child(GEMM_ADD, Kernel.tileAdd())
                .program(program)
                .build();
    }

    /** A in the packed tile layout of {@link #tiledGemm} from row-major {@code [batch][m][k]}. */
    static float[] packTiles(float[] a, int batch, int m, int k, int tiles) {
        int kt = k / tiles;
        float[] packed = new float[a.length];
        int at = 0;
        for (int b = 0; b < batch; b++) {
            for (int t = 0; t < tiles; t++) {
                for (int i = 0; i < m; i++) {
                    for (int p = 0; p < kt; p++) {
                        packed[at++] = a[(b * m + i) * k + t * kt + p];
                    }
                }
            }
        }
        return packed;
    }

    /** The same arithmetic as gemm_tile + tile_add: per tile acc = acc + a·b over ascending k, then C += P. */
    static float[] tiledGemmReference(float[] a, float[] bm, int batch, int m, int k, int n, int tiles) {
        int kt = k / tiles;
        float[] c = new float[batch * m * n];
        for (int b = 0; b < batch; b++) {
            for (int t = 0; t < tiles; t++) {
                for (int i = 0; i < m; i++) {
                    for (int j = 0; j < n; j++) {
                        float acc = 0f;
                        for (int p = t * kt; p < (t + 1) * kt; p++) {
                            acc = acc + a[(b * m + i) * k + p] * bm[(b * k + p) * n + j];
                        }
                        int at = (b * m + i) * n + j;
                        c[at] = c[at] + acc;
                    }
                }
            }
        }
        return c;
    }

    // ---- row softmax ----------------------------------------------------------------------------------

    /** softmax_rows over {@code rows} rows of {@code cols}, {@code rowsPerTask} rows per task. */
    static ChipCallable softmax(int rows, int cols, int rowsPerTask) {
        long taskBytes = 4L * rowsPerTask * cols;
        return ChipCallable.builder()
                .signature(IN, OUT)
                .child(0, Kernel.softmaxRows())
                .program(Program.builder()
                        .loop(rows / rowsPerTask, (p, r) -> p.submit(0,
                                Param.tensor(0, IN, r.times(taskBytes), Affine.of(taskBytes)),
                                Param.tensor(1, OUT, r.times(taskBytes), Affine.of(taskBytes)),
                                Param.scalar(cols)))
                        .build())
                .build();
    }

    /** Per row: m = the first maximum, e = (float) exp((double) (a - m)), s = Σ e left to right, c = e / s. */
    static float[] softmaxReference(float[] a, int rows, int cols) {
        float[] c = new float[a.length];
        for (int r = 0; r < rows; r++) {
            int base = r * cols;
            float max = a[base];
            for (int i = 1; i < cols; i++) {
                if (a[base + i] > max) {
                    max = a[base + i];
                }
            }
            float sum = 0f;
            for (int i = 0; i < cols; i++) {
                float e = (float) Math.exp((double) (a[base + i] - max));
                c[base + i] = e;
                sum = i == 0 ? e : sum + e;
            }
            for (int i = 0; i < cols; i++) {
                c[base + i] = c[base + i] / sum;
            }
        }
        return c;
    }

    // ---- nested loops, local tensors and scopes -----------------------------------------------------------

    static final int NEST_FILL = 0;
    static final int NEST_ADD = 1;
    static final int NEST_SCALE = 2;
    static final int NEST_SUM = 3;

    /**
     * x (IN, rows × S·seg floats), y (OUT, same), z (OUT, rows floats):
     *
     * <pre>
     * ALLOC 0 (all rows)                                  run-scoped local
     * SCOPE
     *   ALLOC 1 (one row)                                 local of the scope
     *   LOOP i < rows
     *     vfill(local1, SCALAR bits(1.0f) + i)            an affine scalar: 1.0 + i ulp
     *     LOOP j < S
     *       vadd(x[i, j], local1[j], local0[i, j])        segment j of row i
     * SCOPE_END
     * LOOP i < rows
     *   SCOPE
     *     LOOP j < S
     *       vmuls(local0[i, j], y[i, j], 2.0f)
     *   SCOPE_END
     * LOOP i < rows
     *   reduce_sum(y[i], z[i])
     * </pre>
     */
    static ChipCallable nested(int rows, int segments, int segFloats) {
        long seg = 4L * segFloats;
        long row = seg * segments;
        int one = Float.floatToRawIntBits(1.0f);
        Program program = Program.builder()
                .allocTensor(0, rows * row)
                .scope(s -> s
                        .allocTensor(1, row)
                        .loop(rows, (p, i) -> p
                                .submit(NEST_FILL, Param.local(1, OUT, 0, row), Param.scalar(i.plus(one)))
                                .loop(segments, (q, j) -> q.submit(NEST_ADD,
                                        Param.tensor(0, IN, i.times(row).plus(j.times(seg)), Affine.of(seg)),
                                        Param.local(1, IN, j.times(seg), Affine.of(seg)),
                                        Param.local(0, OUT, i.times(row).plus(j.times(seg)), Affine.of(seg))))))
                .loop(rows, (p, i) -> p.scope(s -> s
                        .loop(segments, (q, j) -> q.submit(NEST_SCALE,
                                Param.local(0, IN, i.times(row).plus(j.times(seg)), Affine.of(seg)),
                                Param.tensor(1, OUT, i.times(row).plus(j.times(seg)), Affine.of(seg)),
                                Param.scalarF32(2.0f)))))
                .loop(rows, (p, i) -> p.submit(NEST_SUM,
                        Param.tensor(1, IN, i.times(row), Affine.of(row)),
                        Param.tensor(2, OUT, i.times(4), Affine.of(4))))
                .build();
        return ChipCallable.builder()
                .signature(IN, OUT, OUT)
                .child(NEST_FILL, Kernel.vfill())
                .child(NEST_ADD, Kernel.vadd())
                .child(NEST_SCALE, Kernel.vmuls())
                .child(NEST_SUM, Kernel.reduceSum())
                .program(program)
                .build();
    }

    /** {y, z} of {@link #nested}. */
    static float[][] nestedReference(float[] x, int rows, int segments, int segFloats) {
        int rowFloats = segments * segFloats;
        float[] y = new float[x.length];
        float[] z = new float[rows];
        for (int i = 0; i < rows; i++) {
            float v = Float.intBitsToFloat(Float.floatToRawIntBits(1.0f) + i);
            for (int e = 0; e < rowFloats; e++) {
                float t = x[i * rowFloats + e] + v;
                y[i * rowFloats + e] = t * 2.0f;
            }
            float sum = y[i * rowFloats];
            for (int e = 1; e < rowFloats; e++) {
                sum = sum + y[i * rowFloats + e];
            }
            z[i] = sum;
        }
        return new float[][] {y, z};
    }

    // ---- a long program: back-pressure ----------------------------------------------------------------

    /**
     * {@code 2 · iterations} tasks over x (IN, iterations × 16 floats) and acc (INOUT, 16
     * floats): per iteration, {@code tmp = x_i + 1} into a 64-byte local, then
     * {@code acc = tmp + acc}. Every iteration depends on the one before (acc, and tmp's
     * reuse), so a small task window must block the orchestrator, never fail.
     */
    static ChipCallable accumulate(int iterations) {
        long chunk = 64;
        return ChipCallable.builder()
                .signature(IN, INOUT)
                .child(0, Kernel.vadds())
                .child(1, Kernel.vadd())
                .program(Program.builder()
                        .allocTensor(0, chunk)
                        .loop(iterations, (p, i) -> p
                                .submit(0, Param.tensor(0, IN, i.times(chunk), Affine.of(chunk)),
                                        Param.local(0, OUT, 0, chunk), Param.scalarF32(1f))
                                .submit(1, Param.local(0, IN, 0, chunk), Param.tensor(1, IN, 0, chunk),
                                        Param.tensor(1, OUT, 0, chunk)))
                        .build())
                .build();
    }

    static float[] accumulateReference(float[] x, float[] acc0, int iterations) {
        float[] acc = acc0.clone();
        for (int it = 0; it < iterations; it++) {
            for (int e = 0; e < 16; e++) {
                float tmp = x[it * 16 + e] + 1f;
                acc[e] = tmp + acc[e];
            }
        }
        return acc;
    }
}
