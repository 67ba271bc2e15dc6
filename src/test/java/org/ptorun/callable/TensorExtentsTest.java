package org.ptorun.callable;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.INOUT;
import static org.ptorun.callable.Direction.OUT;
import static org.ptorun.callable.Direction.SCALAR;

import org.junit.jupiter.api.Test;
import org.ptorun.DType;
import org.ptorun.TaskArgs;
import org.ptorun.Tensor;

/**
 * What a callable's program needs of each tensor argument ({@link ChipCallable#tensorExtents()}),
 * computed once when it is built by the interpreter's rule (format/program_view.c): the byte
 * past the farthest element any view reaches in any iteration that runs, and the one check of
 * a run's tensors against it.
 */
class TensorExtentsTest {

    private static ChipCallable callable(Program program, Direction... signature) {
        ChipCallable.Builder b = ChipCallable.builder().signature(signature)
                .child(0, CoreType.AIV, Kernel.fromLibrary(new byte[] {1}, "any_params")); // parameters unknown: any
        return b.program(program).build();
    }

    private static TaskArgs bytes(long... sizes) {
        TaskArgs args = new TaskArgs();
        for (long s : sizes) {
            args.tensor(Tensor.of(new byte[(int) s]));
        }
        return args;
    }

    @Test
    void aFlatViewInALoopNeedsItsLastTilesEnd() {
        ChipCallable c = callable(Program.builder().loop(4, (p, i) -> p.submit(0,
                Param.tensor(0, IN, i.times(16), Affine.of(16)),
                Param.tensor(2, OUT, i.times(16).plus(8), Affine.of(16)))).build(), IN, IN, OUT);
        TensorExtents e = c.tensorExtents();
        assertThat(e.tensorCount()).isEqualTo(3);
        assertThat(e.bytesNeeded(0)).isEqualTo(64);
        assertThat(e.bytesNeeded(1)).as("no view names it").isZero();
        assertThat(e.bytesNeeded(2)).isEqualTo(72);
        assertThat(e.isKnown()).isTrue();
        assertThat(e.isExact(0)).isTrue();
        e.check(5, bytes(64, 0, 72));
        e.check(5, bytes(100, 3, 1000));
        assertThatThrownBy(() -> e.check(5, bytes(64, 0, 71)))
                .isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessage("callable 5: tensor argument 2 (OUT) holds 71 bytes, but the callable's program needs 72:"
                        + " instruction 1 (SUBMIT func_id 0) parameter 1 ends at byte 72 at i0=3");
    }

    @Test
    void theFarthestViewOfSeveralWinsAndAViewWithoutLoopsNamesNone() {
        ChipCallable c = callable(Program.builder()
                .submit(0, Param.tensor(0, IN, 0, 32))
                .submit(0, Param.tensor(0, IN, 40, 8), Param.tensor(1, INOUT, 0, 4))
                .submit(0, Param.tensor(0, IN, 0, 48))
                .build(), IN, INOUT, SCALAR);
        TensorExtents e = c.tensorExtents();
        assertThat(e.tensorCount()).isEqualTo(2);
        assertThat(e.bytesNeeded(0)).isEqualTo(48);
        assertThatThrownBy(() -> e.check(0, bytes(47, 4)))
                .hasMessage("callable 0: tensor argument 0 (IN) holds 47 bytes, but the callable's program needs 48:"
                        + " instruction 1 (SUBMIT func_id 0) parameter 0 ends at byte 48");
        assertThatThrownBy(() -> e.check(0, bytes(48, 3)))
                .hasMessage("callable 0: tensor argument 1 (INOUT) holds 3 bytes, but the callable's program needs 4:"
                        + " instruction 1 (SUBMIT func_id 0) parameter 1 ends at byte 4");
    }

    @Test
    void aLoopOfCountZeroNeverRunsAndNeedsNothing() {
        ChipCallable c = callable(Program.builder()
                .loop(3, (p, i) -> p.loop(0, (q, j) -> q.submit(0, Param.tensor(0, OUT, 0, 1 << 20))))
                .submit(0, Param.tensor(0, OUT, 0, 8))
                .build(), OUT);
        assertThat(c.tensorExtents().bytesNeeded(0)).isEqualTo(8);
    }

    @Test
    void aStridedViewNeedsThePastItsLastElementForTheWorstIteration() {
        View x = View.arg(0, DType.F32, 11, 37);
        // column tiles of 8, the last 5 wide: the last element is (10, 36) in the last tile
        ChipCallable c = callable(Program.builder().loop(5, (p, j) -> p.submit(0,
                Param.in(x.slice(1, j.times(8), Affine.of(37).plus(-8, 0).min(8))))).build(), IN);
        assertThat(c.tensorExtents().bytesNeeded(0)).isEqualTo(4L * 11 * 37);
        assertThat(c.tensorExtents().isExact(0)).isTrue();
        // a column tile inside the rows: (10, 7) is the last element, not the row's end
        ChipCallable tile = callable(Program.builder().submit(0, Param.in(x.slice(1, 0, 8))).build(), IN);
        assertThat(tile.tensorExtents().bytesNeeded(0)).isEqualTo(4L * (10 * 37 + 7 + 1));
        // a transposed i32 view with an origin: the same elements, their own dtype size
        View t = View.arg(0, DType.I64, 4, 6).transpose(0, 1).slice(0, 2, 3);
        ChipCallable transposed = callable(Program.builder().submit(0, Param.in(t)).build(), IN);
        assertThat(transposed.tensorExtents().bytesNeeded(0)).isEqualTo(8L * (3 * 6 + 4 + 1));
    }

    @Test
    void anEmptyStridedViewNeedsItsFirstElementOnly() {
        // rows [4, 4 + 0) of a 4 x 8 tensor: no element, the origin is element 32 (the library
        // refuses an origin past the tensor's bytes)
        View x = View.arg(0, DType.F32, 4, 8);
        ChipCallable c = callable(Program.builder().submit(0, Param.out(x.slice(0, 4, 0))).build(), OUT);
        assertThat(c.tensorExtents().bytesNeeded(0)).isEqualTo(4L * 32);
    }

    @Test
    void beyondTheEnumeratedIterationsLinearViewsAreExactAndClampedOnesALowerBound() {
        long rows = (1L << 21) + 3;
        // flat views are linear: exact at any count
        ChipCallable flat = callable(Program.builder().loop(rows, (p, i) -> p.submit(0,
                Param.tensor(0, IN, i.times(16), Affine.of(16)))).build(), IN);
        assertThat(flat.tensorExtents().bytesNeeded(0)).isEqualTo(16 * rows);
        assertThat(flat.tensorExtents().isExact(0)).isTrue();
        // an unclamped strided row view, never empty: exact
        View x = View.arg(0, DType.F32, rows, 4);
        ChipCallable linear = callable(Program.builder().loop(rows, (p, i) -> p.submit(0,
                Param.in(x.select(0, i)))).build(), IN);
        assertThat(linear.tensorExtents().bytesNeeded(0)).isEqualTo(16 * rows);
        assertThat(linear.tensorExtents().isExact(0)).isTrue();
        // a clamped extent: the corners of the loops' box, a lower bound (never refuses a fitting tensor)
        View y = View.arg(0, DType.F32, 4, rows);
        ChipCallable clamped = callable(Program.builder().loop(rows, (p, i) -> p.submit(0,
                Param.in(y.slice(1, i, Affine.of(rows).plus(-1, 0).min(1))))).build(), IN);
        assertThat(clamped.tensorExtents().bytesNeeded(0)).isEqualTo(4 * 4 * rows);
        assertThat(clamped.tensorExtents().isExact(0)).isFalse();
    }

    @Test
    void anOrchestrationLibraryIsUnknownAndChecksNothing() {
        ChipCallable c = ChipCallable.builder().signature(IN, OUT).child(0, CoreType.AIV, Kernel.noop())
                .orchestrationLibrary(new byte[] {1, 2, 3}, "entry").build();
        TensorExtents e = c.tensorExtents();
        assertThat(e.isKnown()).isFalse();
        assertThat(e.isExact(0)).isFalse();
        assertThat(e.bytesNeeded(1)).isZero();
        e.check(1, bytes(0, 0));
    }

    @Test
    void tensorsBeyondTheSignatureOrMissingAreNotLookedAt() {
        ChipCallable c = callable(Program.builder().submit(0, Param.tensor(1, OUT, 0, 64)).build(), IN, OUT);
        TensorExtents e = c.tensorExtents();
        e.check(1, bytes(0));             // tensor 1 missing: the library refuses the count
        e.check(1, bytes(0, 64, 0, 0));   // extra tensors: likewise
        assertThatThrownBy(() -> e.bytesNeeded(2)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThat(e.toString()).isEqualTo("TensorExtents[IN 0, OUT 64]");
    }
}
