package org.ptorun.bench;

import java.util.List;
import org.ptorun.callable.Affine;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.CoreType;
import org.ptorun.callable.Direction;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;

/**
 * The decode-shaped workload of P14 and of the sub-graph end-to-end tests as {@link Program}s
 * (libptorun_test_orch.so's decode_inline / decode_subgraph are the same tasks in the same
 * order): h [rows x {@value #D}] INOUT, w [layers x D x D] IN, tile-major; per layer, over its
 * own y, for each of the {@value #TILES} column tiles vfill, gemm_tile and softmax_rows, then
 * a tile_add of each y tile into h.
 */
public final class DecodePrograms {

    public static final int D = 128;
    public static final int TILES = D / 16;

    private DecodePrograms() {
    }

    public static final int GEMM = 2;
    public static final int SOFTMAX = 3;
    public static final int TILE_ADD = 4;
    public static final int VFILL = 5;


    /** The children every decode callable binds (as libptorun_test_orch.so's decode_* expect). */
    public static ChipCallable.Builder children() {
        return ChipCallable.builder()
                .signature(Direction.INOUT, Direction.IN)
                .child(GEMM, CoreType.AIC, Kernel.gemmTile())
                .child(SOFTMAX, Kernel.softmaxRows())
                .child(TILE_ADD, Kernel.tileAdd())
                .child(VFILL, Kernel.vfill());
    }

    /**
     * One decode layer on {@code b}: argument 0 is h [{@code rows} x D], argument 1 holds the
     * layer's weights at {@code weights} (tile-major, as decode_layer in test_orch.c), local 0
     * its own y. The same tasks in the same order as the library's decode_layer.
     */
    public static void layer(Program.Builder b, int rows, Affine weights) {
        long tile = 4L * rows * 16;
        long wtile = 4L * D * 16;
        long hBytes = 4L * rows * D;
        b.allocTensor(0, hBytes);
        b.loop(TILES, (p, t) -> p
                .submit(VFILL, Param.local(0, Direction.OUT, t.times(tile), Affine.of(tile)), Param.scalar(0))
                .submit(GEMM, Param.tensor(0, Direction.IN, 0, hBytes),
                        Param.tensor(1, Direction.IN, weights.plus(t.times(wtile)), Affine.of(wtile)),
                        Param.local(0, Direction.INOUT, t.times(tile), Affine.of(tile)), Param.scalar(rows),
                        Param.scalar(D), Param.scalar(16))
                .submit(SOFTMAX, Param.local(0, Direction.IN, t.times(tile), Affine.of(tile)),
                        Param.local(0, Direction.OUT, t.times(tile), Affine.of(tile)), Param.scalar(16)));
        b.loop(TILES, (p, t) -> p.submit(TILE_ADD, Param.local(0, Direction.IN, t.times(tile), Affine.of(tile)),
                Param.tensor(0, Direction.INOUT, t.times(tile), Affine.of(tile))));
    }

    /**
     * A {@code layers}-layer decode over h [{@code rows} x D] and w [layers x D x D]: each
     * layer in a scope of its own, its tasks submitted one by one, or ({@code recorded}) the
     * layer as sub-graph 0 (boundary: h INOUT, the layer's weights IN) invoked per layer.
     */
    public static Program program(int layers, int rows, boolean recorded) {
        long layerBytes = 4L * D * D;
        Program.Builder p = Program.builder();
        if (!recorded) {
            return p.loop(layers, (q, l) -> q.scope(s -> layer(s, rows, l.times(layerBytes)))).build();
        }
        Program.Subgraph sg = p.subgraph(0, List.of(Direction.INOUT, Direction.IN), body -> layer(body, rows,
                Affine.of(0)));
        return p.loop(layers, (q, l) -> q.scope(s -> s.invoke(sg, Param.tensor(0, Direction.INOUT, 0, 4L * rows * D),
                Param.tensor(1, Direction.IN, l.times(layerBytes), Affine.of(layerBytes))))).build();
    }
}
