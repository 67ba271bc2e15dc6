package org.ptorun.callable;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;
import org.ptorun.DType;
import org.ptorun.internal.CallableLayouts;

/** Strided views, clamped affine expressions, and what the program builder proves about them. */
class ViewTest {

    private static final int COPY = 1;

    @Test
    void aClampedExpressionEvaluatesPrintsAndFoldsLikeMinAndMax() {
        Affine tail = Affine.of(37).plus(-8, 1).min(8);
        assertThat(tail.evaluate(0, 0)).isEqualTo(8);
        assertThat(tail.evaluate(0, 4)).isEqualTo(5);
        assertThat(tail.toString()).isEqualTo("min(37 - 8*i1, 8)");
        assertThat(tail.upperClamp()).hasValue(8);
        assertThat(tail.lowerClamp()).isEmpty();
        Affine both = Affine.loopVar(0).plus(-3).max(0).min(5);
        assertThat(both.evaluate(1)).isZero();
        assertThat(both.evaluate(4)).isEqualTo(1);
        assertThat(both.evaluate(100)).isEqualTo(5);
        assertThat(both).isEqualTo(Affine.loopVar(0).plus(-3).min(5).max(0)); // lo <= hi: order does not matter
        assertThat(Affine.of(12).min(8)).isEqualTo(Affine.of(8)); // a constant folds
        assertThat(Affine.loopVar(0).min(8).min(6).upperClamp()).hasValue(6);
        assertThat(tail.range(new long[] {1, 5})).containsExactly(5, 8);
        assertThatThrownBy(() -> tail.plus(1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("min/max apply last");
        assertThatThrownBy(() -> Affine.loopVar(0).plus(tail)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Affine.loopVar(0).max(5).min(4)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("min(4) is below the max(5)");
        assertThatThrownBy(() -> Param.tensor(0, Direction.IN, Affine.zero(), tail))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("use a strided View");
    }

    @Test
    void sliceSelectTransposeAndReshapeKeepEachDimensionsBoundAndStride() {
        View a = View.arg(0, DType.F32, 2, 11, 37);
        assertThat(a.rank()).isEqualTo(3);
        assertThat(a.stride(0)).isEqualTo(11 * 37);
        View tile = a.select(0, 1).slice(0, 8, 3).slice(1, 32, 5);
        assertThat(tile.rank()).isEqualTo(2);
        assertThat(tile.dims().get(0)).isEqualTo(new View.Dim(407, 2, Affine.of(1), Affine.zero(), true));
        assertThat(tile.dims().get(1)).isEqualTo(new View.Dim(37, 11, Affine.of(8), Affine.of(3), false));
        View t = tile.transpose(0, 1);
        assertThat(t.stride(0)).isEqualTo(1);
        assertThat(t.stride(1)).isEqualTo(37);
        assertThat(t.extent(0)).isEqualTo(Affine.of(5));
        View flat = View.local(3, DType.I32, 4, 6).slice(0, 1, 2).reshape(3, 4);
        assertThat(flat.origin()).isEqualTo(Affine.of(6));
        assertThat(flat.dims()).containsExactly(new View.Dim(4, 3, Affine.zero(), Affine.of(3), false),
                new View.Dim(1, 4, Affine.zero(), Affine.of(4), false));
        assertThatThrownBy(() -> tile.reshape(15)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("dense row-major");
        assertThatThrownBy(() -> a.reshape(5)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("814 elements");
        assertThatThrownBy(() -> tile.slice(2, 0, 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("dim 2 is outside 0..1");
        assertThatThrownBy(() -> View.arg(0, DType.F32, 1, 2, 3, 4, 5, 6)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void theBuilderProvesTiledLoopsWithShortLastTilesAndNamesTheFirstBadIteration() {
        View x = View.arg(0, DType.F32, 11, 37);
        Program ok = Program.builder().loop(2, (p, i) -> p.loop(5, (q, j) -> q.submit(COPY,
                Param.in(x.slice(0, i.times(8), Affine.of(11).plus(-8, 0).min(8))
                        .slice(1, j.times(8), Affine.of(37).plus(-8, 1).min(8))),
                Param.out(View.arg(1, DType.F32, 11, 37).slice(0, i.times(8), Affine.of(11).plus(-8, 0).min(8))
                        .slice(1, j.times(8), Affine.of(37).plus(-8, 1).min(8)))))).build();
        assertThat(ok.taskCount()).isEqualTo(10);
        assertThatThrownBy(() -> Program.builder().loop(2, (p, i) -> p.loop(5, (q, j) -> q.submit(COPY,
                Param.in(x.slice(0, i.times(8), Affine.of(11).plus(-8, 0).min(8)).slice(1, j.times(8), Affine.of(8)))))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("instruction 2 (SUBMIT) parameter 0")
                .hasMessageContaining("dim 1 takes elements [32, 32 + 8) of its 37 at i0=0, i1=4");
        assertThatThrownBy(() -> Program.builder().allocTensor(0, DType.F32, 4, 4).loop(2, (p, i) ->
                p.submit(COPY, Param.out(View.local(0, DType.F32, 4, 5).slice(0, i.times(2), Affine.of(2))))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("its last element ends at byte 80 of local tensor 0, which has 64 bytes at i0=1");
        assertThatThrownBy(() -> Program.builder().loop(1L << 21, (p, i) -> p.submit(COPY,
                Param.in(x.slice(1, 32, 8))))) // beyond the iterations it enumerates: ranges prove it
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("dim 1 reaches element 40 of its 37 in some iteration");
        assertThatThrownBy(() -> Program.builder().loop(2, (p, i) -> p.submit(COPY,
                Param.in(x.slice(0, Affine.loopVar(1), Affine.of(1))))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("uses loop variable i1 but only 1 loop(s) enclose it");
    }

    @Test
    void aStridedParamIsEncodedWithItsDtypeDimsAndClamps() {
        Program p = Program.builder().loop(3, (b, i) -> b.submit(COPY,
                Param.inout(View.arg(2, DType.I32, 5, 7).select(0, i).slice(0, 1, Affine.of(9).plus(-3, 0).min(6)))))
                .build();
        ByteBuffer bytes = ByteBuffer.wrap(p.bytes()).order(ByteOrder.LITTLE_ENDIAN);
        int param = CallableLayouts.PtoProgramHeader.SIZE + CallableLayouts.PtoLoopInsn.SIZE
                + CallableLayouts.PtoSubmitInsn.SIZE;
        assertThat(bytes.get(param + CallableLayouts.PtoProgramParam.KIND)).isEqualTo((byte) 0);
        assertThat(bytes.get(param + CallableLayouts.PtoProgramParam.DIRECTION)).isEqualTo((byte) 3);
        assertThat(bytes.get(param + CallableLayouts.PtoProgramParam.DTYPE)).isEqualTo((byte) DType.I32.code());
        assertThat(bytes.get(param + CallableLayouts.PtoProgramParam.NDIMS)).isEqualTo((byte) 2);
        assertThat(bytes.getInt(param + CallableLayouts.PtoProgramParam.INDEX)).isEqualTo(2);
        int d0 = param + CallableLayouts.PtoProgramParam.DIMS;
        int d1 = d0 + CallableLayouts.PtoViewDim.SIZE;
        assertThat(bytes.getLong(d0 + CallableLayouts.PtoViewDim.STRIDE)).isEqualTo(7);
        assertThat(bytes.getLong(d0 + CallableLayouts.PtoViewDim.BOUND)).isEqualTo(5);
        assertThat(bytes.getLong(d0 + CallableLayouts.PtoViewDim.OFFSET + CallableLayouts.PtoAffine.COEF)).isEqualTo(1);
        assertThat(bytes.getInt(d0 + CallableLayouts.PtoViewDim.FLAGS)).isEqualTo(CallableLayouts.PTO_VIEW_DIM_SELECTED);
        assertThat(bytes.getLong(d1 + CallableLayouts.PtoViewDim.STRIDE)).isEqualTo(1);
        assertThat(bytes.getLong(d1 + CallableLayouts.PtoViewDim.OFFSET + CallableLayouts.PtoAffine.BASE)).isEqualTo(1);
        int extent = d1 + CallableLayouts.PtoViewDim.EXTENT;
        assertThat(bytes.getLong(extent + CallableLayouts.PtoAffine.BASE)).isEqualTo(9);
        assertThat(bytes.getLong(extent + CallableLayouts.PtoAffine.COEF)).isEqualTo(-3);
        assertThat(bytes.getInt(extent + CallableLayouts.PtoAffine.CLAMP)).isEqualTo(CallableLayouts.PTO_AFFINE_HAS_HI);
        assertThat(bytes.getLong(extent + CallableLayouts.PtoAffine.HI)).isEqualTo(6);
        assertThat(bytes.getInt(d1 + CallableLayouts.PtoViewDim.SIZE + CallableLayouts.PtoViewDim.FLAGS)).isZero();
    }
}
