package org.ptorun;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;
import org.ptorun.internal.Layouts;
import org.ptorun.internal.NativeMemory;

/**
 * One tensor argument of a run: where its bytes are, its element type, shape, strides
 * (elements, default row-major contiguous) and start offset (elements). Immutable.
 *
 * <p>Three kinds of data:
 * <ul>
 *   <li>a <b>direct {@link ByteBuffer}</b>: zero copy, the library reads and writes the
 *       buffer's bytes from its position to its limit. It must stay untouched by the
 *       caller from prepare until finalize.</li>
 *   <li>a <b>primitive array</b> ({@code float[]}, {@code int[]}, {@code long[]},
 *       {@code short[]}, {@code byte[]}): copied at prepare into pinned off-heap staging
 *       that lives until finalize; after a successful finalize the staging is copied
 *       back into the array when the callable's signature says OUT or INOUT.</li>
 *   <li>a <b>{@link DeviceBuffer}</b> of the same ChipWorker: passed to the run as child
 *       memory, never staged or copied back.</li>
 * </ul>
 */
public final class Tensor {

    /** At most five dimensions. */
    public static final int MAX_DIMS = Layouts.ChipTensor.MAX_DIMS;

    enum Source { DIRECT, ARRAY, DEVICE }

    private final Source source;
    private final Object data;
    private final long hostAddress;
    private final long byteSize;
    private final DType dtype;
    private final int[] shape;
    private final int[] strides;
    private final long startOffset;
    private final boolean contiguous;

    private Tensor(Source source, Object data, long hostAddress, long byteSize, DType dtype,
                   int[] shape, int[] strides, long startOffset) {
        this.source = source;
        this.data = data;
        this.hostAddress = hostAddress;
        this.byteSize = byteSize;
        this.dtype = Objects.requireNonNull(dtype, "dtype");
        this.shape = checkShape(shape);
        int[] dense = contiguousStrides(this.shape);
        this.strides = strides == null ? dense : checkStrides(strides, this.shape.length);
        this.contiguous = Arrays.equals(this.strides, dense);
        if (startOffset < 0) {
            throw new IllegalArgumentException("start_offset " + startOffset + " must be >= 0");
        }
        this.startOffset = startOffset;
        checkFits();
    }

    // ---- host arrays (staged) ------------------------------------------------

    /** A 1-D f32 tensor over a whole array (staged; copied back for OUT/INOUT). */
    public static Tensor of(float[] data) {
        return ofArray(data, DType.F32, data.length);
    }

    /** An f32 tensor over an array with the given shape. */
    public static Tensor of(float[] data, int... shape) {
        return ofArray(data, DType.F32, shape);
    }

    /** A 1-D i32 tensor over a whole array. */
    public static Tensor of(int[] data) {
        return ofArray(data, DType.I32, data.length);
    }

    public static Tensor of(int[] data, int... shape) {
        return ofArray(data, DType.I32, shape);
    }

    /** A 1-D i64 tensor over a whole array. */
    public static Tensor of(long[] data) {
        return ofArray(data, DType.I64, data.length);
    }

    public static Tensor of(long[] data, int... shape) {
        return ofArray(data, DType.I64, shape);
    }

    /** A 1-D i16 tensor over a whole array (use {@link #withDType} for f16 / bf16). */
    public static Tensor of(short[] data) {
        return ofArray(data, DType.I16, data.length);
    }

    public static Tensor of(short[] data, int... shape) {
        return ofArray(data, DType.I16, shape);
    }

    /** A 1-D u8 tensor over a whole array (use {@link #withDType} for i8 or raw bytes of any type). */
    public static Tensor of(byte[] data) {
        return ofArray(data, DType.U8, data.length);
    }

    public static Tensor of(byte[] data, int... shape) {
        return ofArray(data, DType.U8, shape);
    }

    private static Tensor ofArray(Object array, DType dtype, int... shape) {
        Objects.requireNonNull(array, "data");
        return new Tensor(Source.ARRAY, array, 0, NativeMemory.arrayBytes(array), dtype, shape, null, 0);
    }

    // ---- direct buffers (zero copy) -------------------------------------------

    /** A 1-D tensor over a direct buffer's remaining bytes. */
    public static Tensor of(ByteBuffer direct, DType dtype) {
        Objects.requireNonNull(dtype, "dtype");
        return of(direct, dtype, elements(direct.remaining(), dtype));
    }

    /**
     * A tensor over a direct buffer's bytes from its position to its limit (zero copy).
     *
     * @throws IllegalArgumentException if the buffer is not direct or too small for the shape
     */
    public static Tensor of(ByteBuffer direct, DType dtype, int... shape) {
        Objects.requireNonNull(direct, "direct");
        if (!direct.isDirect()) {
            throw new IllegalArgumentException("a ByteBuffer tensor must be direct (zero copy);"
                    + " pass an array to have it staged");
        }
        long address = NativeMemory.address(direct) + direct.position();
        return new Tensor(Source.DIRECT, direct, address, direct.remaining(), dtype, shape, null, 0);
    }

    // ---- device buffers (child memory) ----------------------------------------

    /** A 1-D tensor over a whole device buffer. */
    public static Tensor of(DeviceBuffer buffer, DType dtype) {
        Objects.requireNonNull(dtype, "dtype");
        return of(buffer, dtype, elements(buffer.size(), dtype));
    }

    /** A tensor over a device buffer of the ChipWorker that runs it: passed through, never staged. */
    public static Tensor of(DeviceBuffer buffer, DType dtype, int... shape) {
        Objects.requireNonNull(buffer, "buffer");
        return new Tensor(Source.DEVICE, buffer, 0, buffer.size(), dtype, shape, null, 0);
    }

    // ---- withers ----------------------------------------------------------------

    /** The same data with another shape (strides back to contiguous). */
    public Tensor withShape(int... newShape) {
        return new Tensor(source, data, hostAddress, byteSize, dtype, newShape, null, startOffset);
    }

    /** The same data and shape with explicit strides (elements, each > 0). */
    public Tensor withStrides(int... newStrides) {
        return new Tensor(source, data, hostAddress, byteSize, dtype, shape, newStrides, startOffset);
    }

    /** The same view starting {@code elements} elements into the data. */
    public Tensor withStartOffset(long elements) {
        return new Tensor(source, data, hostAddress, byteSize, dtype, shape, strides, elements);
    }

    /** The same bytes read as another element type (shape and strides unchanged). */
    public Tensor withDType(DType newType) {
        return new Tensor(source, data, hostAddress, byteSize, newType, shape, strides, startOffset);
    }

    // ---- accessors -------------------------------------------------------------

    public DType dtype() {
        return dtype;
    }

    public int[] shape() {
        return shape.clone();
    }

    public int ndims() {
        return shape.length;
    }

    public int[] strides() {
        return strides.clone();
    }

    public long startOffset() {
        return startOffset;
    }

    /** Bytes of the underlying data (the {@code ChipTensor.size} the library sees). */
    public long byteSize() {
        return byteSize;
    }

    public boolean isContiguous() {
        return contiguous;
    }

    /** The device buffer, when this tensor is child memory. */
    public Optional<DeviceBuffer> deviceBuffer() {
        return source == Source.DEVICE ? Optional.of((DeviceBuffer) data) : Optional.empty();
    }

    /**
     * A copy of this tensor's host data, {@link #byteSize()} bytes in native (little-endian)
     * order: the whole array, or the direct buffer's bytes from the position it had when the
     * tensor was made. What a run capture records ({@code org.ptorun.capture.RunCapture}).
     *
     * @throws UnsupportedOperationException for a {@link DeviceBuffer} tensor, whose bytes
     *         live on the device (read them with {@code ChipWorker.copyFrom})
     * @throws IllegalArgumentException past 2^31-1 bytes
     */
    public byte[] copyHostBytes() {
        if (source == Source.DEVICE) {
            throw new UnsupportedOperationException("a device-buffer tensor's bytes live on the device;"
                    + " copy them with ChipWorker.copyFrom");
        }
        if (byteSize > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("a tensor of " + byteSize + " bytes does not fit a Java array");
        }
        byte[] out = new byte[(int) byteSize];
        if (source == Source.DIRECT) {
            NativeMemory.view(hostAddress, byteSize).get(out);
            return out;
        }
        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(out).order(java.nio.ByteOrder.nativeOrder());
        if (data instanceof float[] a) {
            b.asFloatBuffer().put(a);
        } else if (data instanceof int[] a) {
            b.asIntBuffer().put(a);
        } else if (data instanceof long[] a) {
            b.asLongBuffer().put(a);
        } else if (data instanceof short[] a) {
            b.asShortBuffer().put(a);
        } else if (data instanceof double[] a) {
            b.asDoubleBuffer().put(a);
        } else {
            b.put((byte[]) data);
        }
        return out;
    }

    Source source() {
        return source;
    }

    /** The ByteBuffer, array or DeviceBuffer behind this tensor. */
    Object data() {
        return data;
    }

    /** DIRECT: the address of the buffer's position. */
    long hostAddress() {
        return hostAddress;
    }

    /**
     * Writes the 128-byte {@code ChipTensor} at {@code offset}, every reserved byte zero.
     *
     * @param addr the host address (staged or direct) or the device address
     */
    void writeTo(ByteBuffer b, int offset, long addr) {
        b.putLong(offset + Layouts.ChipTensor.ADDR, addr);
        b.putLong(offset + Layouts.ChipTensor.SIZE_FIELD, byteSize);
        b.putLong(offset + Layouts.ChipTensor.OWNER_TASK_ID, 0);
        b.putLong(offset + Layouts.ChipTensor.START_OFFSET, startOffset);
        b.putInt(offset + Layouts.ChipTensor.VERSION, 0);
        b.putInt(offset + Layouts.ChipTensor.NDIMS, shape.length);
        b.put(offset + Layouts.ChipTensor.DTYPE, (byte) dtype.code());
        b.put(offset + Layouts.ChipTensor.MANUAL_DEP, (byte) 0);
        b.put(offset + Layouts.ChipTensor.IS_CONTIGUOUS, (byte) (contiguous ? 1 : 0));
        b.put(offset + Layouts.ChipTensor.CHILD_MEMORY, (byte) (source == Source.DEVICE ? 1 : 0));
        for (int d = 0; d < MAX_DIMS; d++) {
            b.putInt(offset + Layouts.ChipTensor.SHAPES + 4 * d, d < shape.length ? shape[d] : 0);
            b.putInt(offset + Layouts.ChipTensor.STRIDES + 4 * d, d < strides.length ? strides[d] : 0);
        }
        b.putLong(offset + RESERVED64, 0);
        for (int at = RESERVED_TAIL; at < Layouts.ChipTensor.SIZE; at += 4) {
            b.putInt(offset + at, 0);
        }
    }

    /** {@code ChipTensor.reserved64} and the reserved tail (abi.md). */
    private static final int RESERVED64 = 64;
    private static final int RESERVED_TAIL = 92;

    // ---- checks ----------------------------------------------------------------

    private static int elements(long bytes, DType dtype) {
        long n = bytes / dtype.byteSize();
        if (n > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(bytes + " bytes hold more than 2^31-1 " + dtype
                    + " elements; give an explicit multi-dimensional shape");
        }
        return (int) n;
    }

    private static int[] checkShape(int[] shape) {
        Objects.requireNonNull(shape, "shape");
        if (shape.length < 1 || shape.length > MAX_DIMS) {
            throw new IllegalArgumentException("a tensor has 1.." + MAX_DIMS + " dimensions, not " + shape.length);
        }
        for (int s : shape) {
            if (s < 0) {
                throw new IllegalArgumentException("shape " + Arrays.toString(shape) + " has a negative dimension");
            }
        }
        return shape.clone();
    }

    private static int[] checkStrides(int[] strides, int ndims) {
        if (strides.length != ndims) {
            throw new IllegalArgumentException("strides " + Arrays.toString(strides) + " must have one entry per"
                    + " dimension (" + ndims + ")");
        }
        for (int s : strides) {
            if (s <= 0) {
                throw new IllegalArgumentException("strides " + Arrays.toString(strides) + " must each be > 0");
            }
        }
        return strides.clone();
    }

    /** Row-major strides; a zero dimension counts as one so every stride stays > 0. */
    private static int[] contiguousStrides(int[] shape) {
        int[] strides = new int[shape.length];
        long stride = 1;
        for (int d = shape.length - 1; d >= 0; d--) {
            if (stride > 0xFFFF_FFFFL) {
                throw new IllegalArgumentException("shape " + Arrays.toString(shape) + " is too large for u32 strides");
            }
            strides[d] = (int) stride;
            stride *= Math.max(1, shape[d]);
        }
        return strides;
    }

    /** The view must lie inside the data: the last element it reaches is inside. */
    private void checkFits() {
        long needed = 0;
        boolean empty = false;
        for (int s : shape) {
            empty |= s == 0;
        }
        if (!empty) {
            try {
                long last = startOffset;
                for (int d = 0; d < shape.length; d++) {
                    last = Math.addExact(last,
                            Math.multiplyExact((long) shape[d] - 1, Integer.toUnsignedLong(strides[d])));
                }
                needed = Math.multiplyExact(Math.addExact(last, 1), (long) dtype.byteSize());
            } catch (ArithmeticException overflow) {
                throw new IllegalArgumentException("tensor " + dtype + Arrays.toString(shape) + " strides "
                        + Arrays.toString(strides) + " start_offset " + startOffset + " reaches past 2^63 bytes;"
                        + " its data holds " + byteSize, overflow);
            }
        }
        if (needed > byteSize) {
            throw new IllegalArgumentException("tensor " + dtype + Arrays.toString(shape) + " strides "
                    + Arrays.toString(strides) + " start_offset " + startOffset + " needs " + needed
                    + " bytes but its data holds " + byteSize);
        }
    }

    @Override
    public String toString() {
        return "Tensor[" + source + " " + dtype + Arrays.toString(shape)
                + (contiguous ? "" : " strides " + Arrays.toString(strides))
                + (startOffset == 0 ? "" : " start_offset " + startOffset) + ", " + byteSize + " bytes]";
    }
}
