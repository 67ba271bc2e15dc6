package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.ptorun.internal.NativeMemory;

/** TaskArgs and Tensor: the ChipStorageTaskArgs block by offset, the ordering and capacity rules, views. */
class TaskArgsTest {

    private static ByteBuffer block() {
        ByteBuffer b = ByteBuffer.allocate(33856).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < b.capacity(); i++) {
            b.put(i, (byte) 0xEE);
        }
        return b;
    }

    @Test
    void tensorsScalarsAndCountsLandAtTheirOffsets() {
        float[] a = new float[24];
        ByteBuffer direct = ByteBuffer.allocateDirect(256);
        TaskArgs args = new TaskArgs()
                .tensor(Tensor.of(a, 2, 3, 4))
                .tensor(Tensor.of(direct, DType.BF16, 8, 8).withStrides(16, 1).withStartOffset(3))
                .scalar(-2L)
                .scalarF32(1.5f);
        ByteBuffer b = block();
        List<Integer> placed = new ArrayList<>();
        args.writeTo(b, (i, t) -> {
            placed.add(i);
            return 0x1000L * (i + 1);
        });
        assertThat(placed).containsExactly(0, 1);

        // tensor 0 at 0
        assertThat(b.getLong(0)).isEqualTo(0x1000L);          // addr
        assertThat(b.getLong(8)).isEqualTo(96);               // size: 24 f32
        assertThat(b.getLong(16)).isZero();                    // owner_task_id
        assertThat(b.getLong(24)).isZero();                    // start_offset
        assertThat(b.getInt(32)).isZero();                     // version
        assertThat(b.getInt(36)).isEqualTo(3);                 // ndims
        assertThat(b.get(40)).isEqualTo((byte) 0);             // dtype F32
        assertThat(b.get(41)).isZero();                        // manual_dep
        assertThat(b.get(42)).isEqualTo((byte) 1);             // is_contiguous
        assertThat(b.get(43)).isZero();                        // child_memory
        assertThat(new int[] {b.getInt(44), b.getInt(48), b.getInt(52), b.getInt(56), b.getInt(60)})
                .containsExactly(2, 3, 4, 0, 0);
        assertThat(b.getLong(64)).isZero();                    // reserved64
        assertThat(new int[] {b.getInt(72), b.getInt(76), b.getInt(80), b.getInt(84), b.getInt(88)})
                .containsExactly(12, 4, 1, 0, 0);
        for (int at = 92; at < 128; at++) {
            assertThat(b.get(at)).as("reserved byte %d", at).isZero();
        }
        // tensor 1 at 128
        assertThat(b.getLong(128)).isEqualTo(0x2000L);
        assertThat(b.getLong(136)).isEqualTo(256);
        assertThat(b.getLong(152)).isEqualTo(3);
        assertThat(b.getInt(164)).isEqualTo(2);
        assertThat(b.get(168)).isEqualTo((byte) 2);            // BF16
        assertThat(b.get(170)).isZero();                       // strided: not contiguous
        assertThat(b.getInt(128 + 72)).isEqualTo(16);
        assertThat(b.getInt(128 + 76)).isEqualTo(1);
        // tensor 2 untouched
        assertThat(b.get(256)).isEqualTo((byte) 0xEE);
        // scalars at 32768
        assertThat(b.getLong(32768)).isEqualTo(-2L);
        assertThat(b.getLong(32776)).isEqualTo(Integer.toUnsignedLong(Float.floatToRawIntBits(1.5f)));
        assertThat(b.getInt(32780)).as("high 32 bits of an f32 scalar").isZero();
        assertThat(b.get(32784)).isEqualTo((byte) 0xEE);
        // counts
        assertThat(b.getInt(33792)).isEqualTo(2);
        assertThat(b.getInt(33796)).isEqualTo(2);
    }

    @Test
    void aTensorAfterAScalarIsRefused() {
        TaskArgs args = new TaskArgs().tensor(Tensor.of(new int[1])).scalar(1);
        assertThatThrownBy(() -> args.tensor(Tensor.of(new int[1])))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("tensor arguments precede scalar arguments");
        args.clear();
        args.tensor(Tensor.of(new int[1]));
        assertThat(args.tensorCount()).isEqualTo(1);
        assertThat(args.scalarCount()).isZero();
    }

    @Test
    void atMost256TensorsAnd128Scalars() {
        TaskArgs args = new TaskArgs();
        Tensor t = Tensor.of(new byte[1]);
        for (int i = 0; i < 256; i++) {
            args.tensor(t);
        }
        assertThatThrownBy(() -> args.tensor(t)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at most 256 tensor");
        for (int i = 0; i < 128; i++) {
            args.scalar(i);
        }
        assertThatThrownBy(() -> args.scalar(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at most 128 scalar");
        ByteBuffer b = block();
        args.writeTo(b, (i, x) -> i);
        assertThat(b.getLong(255 * 128)).isEqualTo(255);
        assertThat(b.getLong(32768 + 127 * 8)).isEqualTo(127);
        assertThat(b.getInt(33792)).isEqualTo(256);
        assertThat(b.getInt(33796)).isEqualTo(128);
    }

    @Test
    void scalarF32PutsTheIeeeBitsInTheLow32Bits() {
        TaskArgs args = new TaskArgs().scalarF32(-0.0f).scalarF32(Float.NaN).scalarF64(2.5);
        assertThat(args.scalarAt(0)).isEqualTo(0x8000_0000L);
        assertThat(args.scalarAt(1)).isEqualTo(0x7FC0_0000L);
        assertThat(args.scalarAt(2)).isEqualTo(Double.doubleToRawLongBits(2.5));
    }

    @Test
    void tensorsKnowTheirBytesShapeAndContiguity() {
        Tensor t = Tensor.of(new float[12], 3, 4);
        assertThat(t.byteSize()).isEqualTo(48);
        assertThat(t.strides()).containsExactly(4, 1);
        assertThat(t.isContiguous()).isTrue();
        assertThat(t.withStrides(4, 1).isContiguous()).isTrue();
        assertThat(t.withShape(2, 2).withStrides(4, 1).isContiguous()).isFalse();
        assertThat(Tensor.of(new long[3]).dtype()).isEqualTo(DType.I64);
        assertThat(Tensor.of(new short[3]).withDType(DType.F16).dtype()).isEqualTo(DType.F16);
        assertThat(Tensor.of(new byte[7]).shape()).containsExactly(7);
        assertThat(Tensor.of(new float[0]).byteSize()).isZero();
        assertThat(Tensor.of(new float[4], 0, 4).byteSize()).isEqualTo(16);
    }

    @Test
    void aViewMustFitItsData() {
        assertThatThrownBy(() -> Tensor.of(new float[11], 3, 4))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("needs 48 bytes but its data holds 44");
        assertThatThrownBy(() -> Tensor.of(new float[12], 3, 4).withStartOffset(1))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(Tensor.of(new float[16], 3, 4).withStartOffset(4).startOffset()).isEqualTo(4);
        assertThatThrownBy(() -> Tensor.of(new float[12], 3, 4).withStrides(5, 1))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Tensor.of(new float[12], 3, 4).withStrides(4, 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("> 0");
        assertThatThrownBy(() -> Tensor.of(new float[12], 3, 4).withStrides(1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("one entry per dimension");
        assertThatThrownBy(() -> Tensor.of(new float[64], 1, 1, 1, 1, 1, 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1..5 dimensions");
        assertThatThrownBy(() -> Tensor.of(new float[4], -1))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Tensor.of(new float[4]).withStartOffset(-1))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Tensor.of(ByteBuffer.allocate(16), DType.F32))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("direct");
    }

    @Test
    void aDirectBufferIsViewedFromItsPositionToItsLimit() {
        ByteBuffer direct = ByteBuffer.allocateDirect(64);
        direct.position(8).limit(40);
        Tensor t = Tensor.of(direct, DType.I32);
        assertThat(t.byteSize()).isEqualTo(32);
        assertThat(t.shape()).containsExactly(8);
        assertThat(t.hostAddress()).isEqualTo(NativeMemory.address(direct) + 8);
    }
}
