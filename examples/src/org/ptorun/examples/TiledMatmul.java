package org.ptorun.examples;

import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.INOUT;

import org.ptorun.CallConfig;
import org.ptorun.ChipWorker;
import org.ptorun.DType;
import org.ptorun.HostRuntime;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;
import org.ptorun.Variant;
import org.ptorun.callable.Affine;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.CoreType;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;
import org.ptorun.callable.View;

/**
 * {@code C += A·B} for row-major matrices of any size, in tiles: strided views of the
 * inputs (no repacking), one loop per dimension whose last tile is shorter
 * ({@code Affine.min}), and K split across tiles that accumulate into the same C tile —
 * their dependencies order them, while C tiles of different rows and columns run in
 * parallel (docs/orchestration.md).
 *
 * <pre>java ... org.ptorun.examples.TiledMatmul [variant]</pre>
 */
public final class TiledMatmul {

    private static final int GEMM = 0;

    private TiledMatmul() {
    }

    /** The program: C[m x n] += A[m x k] · B[k x n] in tile x tile blocks. */
    public static ChipCallable callable(int m, int n, int k, int tile) {
        View a = View.arg(0, DType.F32, m, k);
        View b = View.arg(1, DType.F32, k, n);
        View c = View.arg(2, DType.F32, m, n);
        Program program = Program.builder()
                .loop(tiles(m, tile), (p, i) -> p.loop(tiles(n, tile), (q, j) -> q.loop(tiles(k, tile), (r, l) -> {
                    Affine rows = Affine.of(m).plus(-tile, 0).min(tile);   // min(m - tile*i, tile)
                    Affine cols = Affine.of(n).plus(-tile, 1).min(tile);
                    Affine depth = Affine.of(k).plus(-tile, 2).min(tile);
                    r.submit(GEMM,
                            Param.in(a.slice(0, i.times(tile), rows).slice(1, l.times(tile), depth)),
                            Param.in(b.slice(0, l.times(tile), depth).slice(1, j.times(tile), cols)),
                            Param.inout(c.slice(0, i.times(tile), rows).slice(1, j.times(tile), cols)));
                })))
                .build();
        return ChipCallable.builder().signature(IN, IN, INOUT)
                .child(GEMM, CoreType.AIC, Kernel.gemmTile())
                .program(program)
                .build();
    }

    private static int tiles(int total, int tile) {
        return (total + tile - 1) / tile;
    }

    /** Runs it once; {@code c} is updated in place. */
    public static void run(Variant variant, int m, int n, int k, int tile, float[] a, float[] b, float[] c) {
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(0, callable(m, n, k, tile));
            chip.run(0, TaskArgs.of(Tensor.of(a), Tensor.of(b), Tensor.of(c)), CallConfig.DEFAULT);
        }
    }

    public static void main(String[] argv) {
        Variant variant = argv.length > 0 ? Variant.parse(argv[0]) : Variant.DEFAULT;
        int m = 11;
        int n = 37;
        int k = 10;
        float[] a = new float[m * k];
        float[] b = new float[k * n];
        float[] c = new float[m * n];
        for (int x = 0; x < a.length; x++) {
            a[x] = x % 7 - 3;
        }
        for (int x = 0; x < b.length; x++) {
            b[x] = x % 5 - 2;
        }
        run(variant, m, n, k, 8, a, b, c);
        float corner = 0;
        for (int l = 0; l < k; l++) {
            corner += a[(m - 1) * k + l] * b[l * n + n - 1];
        }
        System.out.println(variant + ": C[" + (m - 1) + "][" + (n - 1) + "] = " + c[m * n - 1]);
        if (c[m * n - 1] != corner) {
            System.exit(1);
        }
    }
}
