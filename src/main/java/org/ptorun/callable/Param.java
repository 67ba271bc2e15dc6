package org.ptorun.callable;

import java.util.Objects;
import org.ptorun.internal.CallableLayouts;

/**
 * One parameter of a SUBMIT: a view of a tensor — an argument tensor of the run or a
 * local tensor of the program ({@link Program.Builder#allocTensor}) — as a byte offset
 * and a byte size inside it, with the direction the task uses it in; or a scalar — an
 * immediate, an argument scalar by index, or the value of an {@link Affine} expression
 * over the enclosing loop variables. Immutable.
 *
 * <p>Offsets and sizes are {@link Affine} expressions, so a view can move with the
 * loops around its SUBMIT: {@code Param.tensor(0, IN, Affine.loopVar(0).times(tileBytes), Affine.of(tileBytes))}.
 */
public final class Param {

    /** What a parameter is: the C {@code PtoParamKind}. */
    public enum Kind {
        ARG_TENSOR(CallableLayouts.PTO_PARAM_ARG_TENSOR),
        LOCAL_TENSOR(CallableLayouts.PTO_PARAM_LOCAL_TENSOR),
        SCALAR_IMM(CallableLayouts.PTO_PARAM_SCALAR_IMM),
        SCALAR_ARG(CallableLayouts.PTO_PARAM_SCALAR_ARG),
        SCALAR_AFFINE(CallableLayouts.PTO_PARAM_SCALAR_AFFINE);

        private final int code;

        Kind(int code) {
            this.code = code;
        }

        public int code() {
            return code;
        }

        /** True for views of argument and local tensors. */
        public boolean isTensor() {
            return this == ARG_TENSOR || this == LOCAL_TENSOR;
        }
    }

    private final Kind kind;
    private final Direction direction;
    private final int index;
    private final long imm;
    private final Affine offset;
    private final Affine size;
    /** A strided view; null for a flat byte view and a scalar. */
    private final View view;

    private Param(Kind kind, Direction direction, int index, long imm, Affine offset, Affine size) {
        this(kind, direction, index, imm, offset, size, null);
    }

    private Param(Kind kind, Direction direction, int index, long imm, Affine offset, Affine size, View view) {
        this.kind = kind;
        this.direction = direction;
        this.index = index;
        this.imm = imm;
        this.offset = offset;
        this.size = size;
        this.view = view;
    }

    /** A strided view the task reads. */
    public static Param in(View view) {
        return strided(Direction.IN, view);
    }

    /** A strided view the task writes. */
    public static Param out(View view) {
        return strided(Direction.OUT, view);
    }

    /** A strided view the task reads and writes. */
    public static Param inout(View view) {
        return strided(Direction.INOUT, view);
    }

    /** A strided view used as {@code direction} (IN, OUT or INOUT). */
    public static Param of(Direction direction, View view) {
        return strided(direction, view);
    }

    private static Param strided(Direction direction, View view) {
        Objects.requireNonNull(direction, "direction");
        Objects.requireNonNull(view, "view");
        if (!direction.isTensor()) {
            throw new IllegalArgumentException("a tensor view is IN, OUT or INOUT, not SCALAR");
        }
        if (view.kind() == Kind.LOCAL_TENSOR && view.index() >= CallableLayouts.PTO_PROGRAM_MAX_LOCALS) {
            throw new IllegalArgumentException("local tensor id " + view.index() + " is outside 0.."
                    + (CallableLayouts.PTO_PROGRAM_MAX_LOCALS - 1));
        }
        return new Param(view.kind(), direction, view.index(), 0, view.origin(), Affine.zero(), view);
    }

    /** The strided view, or null for a flat byte view and a scalar. */
    public View view() {
        return view;
    }

    /**
     * A view of argument tensor {@code argIndex}: {@code sizeBytes} bytes from
     * {@code offsetBytes}, used as {@code direction} by the task.
     *
     * @throws IllegalArgumentException for a negative index, offset or size, or SCALAR
     */
    public static Param tensor(int argIndex, Direction direction, long offsetBytes, long sizeBytes) {
        return view(Kind.ARG_TENSOR, argIndex, direction, constant(offsetBytes, sizeBytes), Affine.of(sizeBytes));
    }

    /**
     * A view of argument tensor {@code argIndex} whose offset and size depend on the
     * enclosing loops. The program builder checks that both are never negative over the
     * loops' ranges; the library checks the view against the tensor's bytes at run time.
     *
     * @throws IllegalArgumentException for a negative index or SCALAR
     */
    public static Param tensor(int argIndex, Direction direction, Affine offsetBytes, Affine sizeBytes) {
        return view(Kind.ARG_TENSOR, argIndex, direction, offsetBytes, sizeBytes);
    }

    /**
     * A view of local tensor {@code localId}: {@code sizeBytes} bytes from {@code offsetBytes}.
     *
     * @throws IllegalArgumentException for a negative id, offset or size, or SCALAR
     */
    public static Param local(int localId, Direction direction, long offsetBytes, long sizeBytes) {
        return view(Kind.LOCAL_TENSOR, localId, direction, constant(offsetBytes, sizeBytes), Affine.of(sizeBytes));
    }

    /**
     * A view of local tensor {@code localId} whose offset and size may depend on the
     * enclosing loops; the program builder checks it stays inside the local's bytes.
     *
     * @throws IllegalArgumentException for a negative id or SCALAR
     */
    public static Param local(int localId, Direction direction, Affine offsetBytes, Affine sizeBytes) {
        return view(Kind.LOCAL_TENSOR, localId, direction, offsetBytes, sizeBytes);
    }

    /** A scalar immediate: its raw 64 bits. */
    public static Param scalar(long bits) {
        return new Param(Kind.SCALAR_IMM, Direction.SCALAR, 0, bits, Affine.zero(), Affine.zero());
    }

    /**
     * A scalar computed from the enclosing loop variables, passed to the kernel as a
     * signed 64-bit integer (e.g. {@code Param.scalar(Affine.loopVar(0))} is the loop
     * index).
     */
    public static Param scalar(Affine value) {
        Objects.requireNonNull(value, "value");
        return new Param(Kind.SCALAR_AFFINE, Direction.SCALAR, 0, 0, value, Affine.zero());
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
        return new Param(Kind.SCALAR_ARG, Direction.SCALAR, index, 0, Affine.zero(), Affine.zero());
    }

    private static Affine constant(long offsetBytes, long sizeBytes) {
        if (offsetBytes < 0 || sizeBytes < 0) {
            throw new IllegalArgumentException("view offset " + offsetBytes + " and size " + sizeBytes
                    + " must be >= 0");
        }
        return Affine.of(offsetBytes);
    }

    private static Param view(Kind kind, int index, Direction direction, Affine offset, Affine size) {
        Objects.requireNonNull(direction, "direction");
        Objects.requireNonNull(offset, "offset");
        Objects.requireNonNull(size, "size");
        if (!direction.isTensor()) {
            throw new IllegalArgumentException("a tensor view is IN, OUT or INOUT, not SCALAR");
        }
        if (index < 0) {
            throw new IllegalArgumentException((kind == Kind.ARG_TENSOR ? "tensor argument index " : "local tensor id ")
                    + index + " is negative");
        }
        if (kind == Kind.LOCAL_TENSOR && index >= CallableLayouts.PTO_PROGRAM_MAX_LOCALS) {
            throw new IllegalArgumentException("local tensor id " + index + " is outside 0.."
                    + (CallableLayouts.PTO_PROGRAM_MAX_LOCALS - 1));
        }
        if ((offset.isConstant() && offset.base() < 0) || (size.isConstant() && size.base() < 0)) {
            throw new IllegalArgumentException("view offset " + offset + " and size " + size + " must be >= 0");
        }
        if (offset.isClamped() || size.isClamped()) {
            throw new IllegalArgumentException("a byte view's offset and size take no min/max (" + offset + ", "
                    + size + "): use a strided View");
        }
        return new Param(kind, direction, index, 0, offset, size);
    }

    public Kind kind() {
        return kind;
    }

    public Direction direction() {
        return direction;
    }

    /** Argument tensor index, local tensor id or argument scalar index; 0 otherwise. */
    public int index() {
        return index;
    }

    /** The immediate's bits; 0 otherwise. */
    public long imm() {
        return imm;
    }

    /** A view's byte offset, or a SCALAR_AFFINE's value; 0 otherwise. */
    public Affine offset() {
        return offset;
    }

    /** A view's byte size; 0 otherwise. */
    public Affine size() {
        return size;
    }

    /** The constant part of {@link #offset()}. */
    public long offsetBytes() {
        return offset.base();
    }

    /** The constant part of {@link #size()}. */
    public long sizeBytes() {
        return size.base();
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof Param)) {
            return false;
        }
        Param p = (Param) o;
        return kind == p.kind && direction == p.direction && index == p.index && imm == p.imm
                && offset.equals(p.offset) && size.equals(p.size) && Objects.equals(view, p.view);
    }

    @Override
    public int hashCode() {
        return Objects.hash(kind, direction, index, imm, offset, size, view);
    }

    @Override
    public String toString() {
        if (view != null) {
            return direction + " " + view;
        }
        switch (kind) {
            case ARG_TENSOR:
                return direction + " arg" + index + "[" + offset + ", +" + size + ")";
            case LOCAL_TENSOR:
                return direction + " local" + index + "[" + offset + ", +" + size + ")";
            case SCALAR_ARG:
                return "scalar arg" + index;
            case SCALAR_AFFINE:
                return "scalar " + offset;
            default:
                return "scalar 0x" + Long.toHexString(imm);
        }
    }
}
