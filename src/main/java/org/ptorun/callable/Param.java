package org.ptorun.callable;

import java.util.Objects;
import org.ptorun.internal.CallableLayouts;

/**
 * One parameter of a SUBMIT: a view of an argument tensor (byte offset and size inside
 * it, with the direction the task uses it in), or a scalar (an immediate, or an
 * argument scalar by index). Immutable.
 *
 * <p>Offsets and sizes are plain values for now (the {@code base} of the program's
 * affine expressions); loop-dependent views come with LOOP.
 */
public final class Param {

    /** What a parameter is: the C {@code PtoParamKind}. */
    public enum Kind {
        ARG_TENSOR(CallableLayouts.PTO_PARAM_ARG_TENSOR),
        SCALAR_IMM(CallableLayouts.PTO_PARAM_SCALAR_IMM),
        SCALAR_ARG(CallableLayouts.PTO_PARAM_SCALAR_ARG);

        private final int code;

        Kind(int code) {
            this.code = code;
        }

        public int code() {
            return code;
        }

        public boolean isTensor() {
            return this == ARG_TENSOR;
        }
    }

    private final Kind kind;
    private final Direction direction;
    private final int index;
    private final long imm;
    private final long offsetBytes;
    private final long sizeBytes;

    private Param(Kind kind, Direction direction, int index, long imm, long offsetBytes, long sizeBytes) {
        this.kind = kind;
        this.direction = direction;
        this.index = index;
        this.imm = imm;
        this.offsetBytes = offsetBytes;
        this.sizeBytes = sizeBytes;
    }

    /**
     * A view of argument tensor {@code argIndex}: {@code sizeBytes} bytes from
     * {@code offsetBytes}, used as {@code direction} by the task.
     *
     * @throws IllegalArgumentException for a negative index, offset or size, or SCALAR
     */
    public static Param tensor(int argIndex, Direction direction, long offsetBytes, long sizeBytes) {
        Objects.requireNonNull(direction, "direction");
        if (!direction.isTensor()) {
            throw new IllegalArgumentException("a tensor view is IN, OUT or INOUT, not SCALAR");
        }
        if (argIndex < 0) {
            throw new IllegalArgumentException("tensor argument index " + argIndex + " is negative");
        }
        if (offsetBytes < 0 || sizeBytes < 0) {
            throw new IllegalArgumentException("view offset " + offsetBytes + " and size " + sizeBytes
                    + " must be >= 0");
        }
        return new Param(Kind.ARG_TENSOR, direction, argIndex, 0, offsetBytes, sizeBytes);
    }

    /** A scalar immediate: its raw 64 bits. */
    public static Param scalar(long bits) {
        return new Param(Kind.SCALAR_IMM, Direction.SCALAR, 0, bits, 0, 0);
    }

    /** An f32 scalar immediate: the IEEE bits in the low 32 bits. */
    public static Param scalarF32(float value) {
        return scalar(Integer.toUnsignedLong(Float.floatToRawIntBits(value)));
    }

    /** The run's scalar argument {@code index} (its position among the TaskArgs scalars). */
    public static Param scalarArg(int index) {
        if (index < 0) {
            throw new IllegalArgumentException("scalar argument index " + index + " is negative");
        }
        return new Param(Kind.SCALAR_ARG, Direction.SCALAR, index, 0, 0, 0);
    }

    public Kind kind() {
        return kind;
    }

    public Direction direction() {
        return direction;
    }

    /** Tensor argument index or scalar argument index; 0 for an immediate. */
    public int index() {
        return index;
    }

    /** The immediate's bits; 0 otherwise. */
    public long imm() {
        return imm;
    }

    public long offsetBytes() {
        return offsetBytes;
    }

    public long sizeBytes() {
        return sizeBytes;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof Param)) {
            return false;
        }
        Param p = (Param) o;
        return kind == p.kind && direction == p.direction && index == p.index && imm == p.imm
                && offsetBytes == p.offsetBytes && sizeBytes == p.sizeBytes;
    }

    @Override
    public int hashCode() {
        return Objects.hash(kind, direction, index, imm, offsetBytes, sizeBytes);
    }

    @Override
    public String toString() {
        switch (kind) {
            case ARG_TENSOR:
                return direction + " arg" + index + "[" + offsetBytes + ", +" + sizeBytes + ")";
            case SCALAR_ARG:
                return "scalar arg" + index;
            default:
                return "scalar 0x" + Long.toHexString(imm);
        }
    }
}
