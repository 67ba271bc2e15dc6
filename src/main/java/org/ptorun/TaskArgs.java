package org.ptorun;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.ptorun.internal.Layouts;

/**
 * The arguments of one run: tensors first, then scalars (the order of the callable's
 * signature), at most 256 tensors and 128 scalars. A reusable builder: {@link #clear()}
 * and fill it again for the next run. Not thread-safe; a prepare writes the arguments
 * off-heap, so the builder may be changed as soon as prepare returned (the tensors' data
 * itself must stay untouched until finalize).
 */
public final class TaskArgs {

    /** Capacity of the tensor arguments. */
    public static final int MAX_TENSORS = Layouts.ChipStorageTaskArgs.MAX_TENSORS;
    /** Capacity of the scalar arguments. */
    public static final int MAX_SCALARS = Layouts.ChipStorageTaskArgs.MAX_SCALARS;

    /** Where a tensor's {@code addr} points: its host or device address, decided at prepare. */
    @FunctionalInterface
    interface TensorPlacement {
        long addressOf(int index, Tensor tensor);
    }

    private final Tensor[] tensors = new Tensor[MAX_TENSORS];
    private final long[] scalars = new long[MAX_SCALARS];
    private int tensorCount;
    private int scalarCount;

    public TaskArgs() {
    }

    /** Arguments holding these tensors. */
    public static TaskArgs of(Tensor... tensors) {
        TaskArgs args = new TaskArgs();
        for (Tensor t : tensors) {
            args.tensor(t);
        }
        return args;
    }

    /**
     * Appends a tensor argument.
     *
     * @throws IllegalArgumentException after a scalar, or past 256 tensors
     */
    public TaskArgs tensor(Tensor tensor) {
        Objects.requireNonNull(tensor, "tensor");
        if (scalarCount > 0) {
            throw new IllegalArgumentException("tensor arguments precede scalar arguments: a tensor cannot follow "
                    + scalarCount + " scalar(s)");
        }
        if (tensorCount == MAX_TENSORS) {
            throw new IllegalArgumentException("at most " + MAX_TENSORS + " tensor arguments");
        }
        tensors[tensorCount++] = tensor;
        return this;
    }

    /**
     * Appends a scalar argument: its raw 64 bits.
     *
     * @throws IllegalArgumentException past 128 scalars
     */
    public TaskArgs scalar(long bits) {
        if (scalarCount == MAX_SCALARS) {
            throw new IllegalArgumentException("at most " + MAX_SCALARS + " scalar arguments");
        }
        scalars[scalarCount++] = bits;
        return this;
    }

    /** Appends an f32 scalar: its IEEE bits in the low 32 bits, the high 32 bits zero. */
    public TaskArgs scalarF32(float value) {
        return scalar(Integer.toUnsignedLong(Float.floatToRawIntBits(value)));
    }

    /** Appends an f64 scalar: its IEEE bits. */
    public TaskArgs scalarF64(double value) {
        return scalar(Double.doubleToRawLongBits(value));
    }

    /** Removes every argument (and the references to their data). */
    public TaskArgs clear() {
        java.util.Arrays.fill(tensors, 0, tensorCount, null);
        tensorCount = 0;
        scalarCount = 0;
        return this;
    }

    public int tensorCount() {
        return tensorCount;
    }

    public int scalarCount() {
        return scalarCount;
    }

    /** The tensor argument at {@code index}. */
    public Tensor tensorAt(int index) {
        Objects.checkIndex(index, tensorCount);
        return tensors[index];
    }

    /** The bits of the scalar argument at {@code index}. */
    public long scalarAt(int index) {
        Objects.checkIndex(index, scalarCount);
        return scalars[index];
    }

    /**
     * {@link DeviceBuffer#hold Holds} every device buffer these args name, for {@code holder}:
     * none of them can be freed (nor a window's group closed) until the returned holds are
     * closed. For code that queues a run to prepare later, as the Worker does.
     *
     * @return one hold per device-buffer tensor, in order (empty when there is none)
     * @throws IllegalStateException when one is closed; then none is held
     */
    public List<DeviceBuffer.Hold> holdDeviceBuffers(Object holder) {
        List<DeviceBuffer.Hold> holds = new ArrayList<>(0);
        try {
            for (int i = 0; i < tensorCount; i++) {
                if (tensors[i].source() == Tensor.Source.DEVICE) {
                    holds.add(((DeviceBuffer) tensors[i].data()).hold(holder));
                }
            }
        } catch (RuntimeException e) {
            holds.forEach(DeviceBuffer.Hold::close);
            throw e;
        }
        return holds;
    }

    /**
     * Writes the {@code ChipStorageTaskArgs} block: each used tensor's 128 bytes, each
     * used scalar, the two counts. Entries past the counts are left as they were (the
     * library reads only up to the counts).
     */
    void writeTo(ByteBuffer block, TensorPlacement placement) {
        for (int i = 0; i < tensorCount; i++) {
            Tensor t = tensors[i];
            t.writeTo(block, Layouts.ChipStorageTaskArgs.TENSORS + i * Layouts.ChipTensor.SIZE,
                    placement.addressOf(i, t));
        }
        for (int i = 0; i < scalarCount; i++) {
            block.putLong(Layouts.ChipStorageTaskArgs.SCALARS + 8 * i, scalars[i]);
        }
        block.putInt(Layouts.ChipStorageTaskArgs.TENSOR_COUNT, tensorCount);
        block.putInt(Layouts.ChipStorageTaskArgs.SCALAR_COUNT, scalarCount);
    }

    @Override
    public String toString() {
        return "TaskArgs[" + tensorCount + " tensors, " + scalarCount + " scalars]";
    }
}
