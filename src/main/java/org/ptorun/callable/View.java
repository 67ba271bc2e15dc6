package org.ptorun.callable;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import org.ptorun.DType;
import org.ptorun.internal.CallableLayouts;

/**
 * A strided view of a program's tensor — an argument tensor of the run or a local of the
 * program — as a task sees it: a dtype, up to five dimensions, each with an element
 * stride, and offsets and extents that may move with the enclosing loops. Immutable; every
 * operation returns a new view.
 *
 * <pre>{@code
 * View a = View.arg(0, DType.F32, 11, 37);                 // the 11 x 37 row-major argument 0
 * View y = View.arg(1, DType.F32, 11, 37);
 * program.loop(2, (b, i) -> {                              // 8-row tiles, the last one 3 rows
 *     Affine rows = Affine.of(11).plus(-8, 0).min(8);       // min(11 - 8*i0, 8)
 *     b.submit(COPY, Param.in(a.slice(0, i.times(8), rows)), Param.out(y.slice(0, i.times(8), rows)));
 * });
 * View t = a.transpose(0, 1);                              // its 37 x 11 transpose, no copy
 * }</pre>
 *
 * <p>The tensor is declared with a shape (and row-major strides, unless given): each
 * dimension keeps that shape as its <em>bound</em>, so a slice can never overhang into the
 * next row — {@link Program.Builder#submit} proves it for every iteration it can enumerate
 * (up to 2<sup>20</sup> per SUBMIT), registration for up to 2<sup>16</sup>, and the library
 * checks every view again as it submits it, naming the instruction, the parameter and the
 * loop values. A view also never leaves its tensor's bytes (checked against the local's
 * ALLOC_TENSOR bytes here, against the argument's bytes at run time).
 *
 * <p>Dimension indices of the operations count the view's dimensions as the task sees
 * them ({@link #rank()}), outermost first; {@link #select} removes one.
 */
public final class View {

    /** One dimension as encoded (the C {@code PtoViewDim}). */
    record Dim(long stride, long bound, Affine offset, Affine extent, boolean selected) {
    }

    private final Param.Kind kind;
    private final int index;
    private final DType dtype;
    /** Element offset of the logical tensor's origin (the C {@code PtoProgramParam.offset}). */
    private final Affine origin;
    /** Every encoded dim, selected ones included, in order. */
    private final List<Dim> dims;

    private View(Param.Kind kind, int index, DType dtype, Affine origin, List<Dim> dims) {
        this.kind = kind;
        this.index = index;
        this.dtype = dtype;
        this.origin = origin;
        this.dims = List.copyOf(dims);
    }

    /** All of argument tensor {@code argIndex}, declared as a row-major tensor of {@code shape}. */
    public static View arg(int argIndex, DType dtype, long... shape) {
        return of(Param.Kind.ARG_TENSOR, argIndex, dtype, shape, rowMajor(shape));
    }

    /** All of argument tensor {@code argIndex}, declared with {@code shape} and element {@code strides}. */
    public static View arg(int argIndex, DType dtype, long[] shape, long[] strides) {
        return of(Param.Kind.ARG_TENSOR, argIndex, dtype, shape, strides);
    }

    /**
     * All of local tensor {@code localId}, a row-major tensor of {@code shape} (allocate it with
     * {@link Program.Builder#allocTensor(int, DType, long...)}).
     */
    public static View local(int localId, DType dtype, long... shape) {
        return of(Param.Kind.LOCAL_TENSOR, localId, dtype, shape, rowMajor(shape));
    }

    private static View of(Param.Kind kind, int index, DType dtype, long[] shape, long[] strides) {
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(shape, "shape");
        Objects.requireNonNull(strides, "strides");
        if (index < 0) {
            throw new IllegalArgumentException("tensor index " + index + " is negative");
        }
        if (shape.length == 0 || shape.length > CallableLayouts.PTO_VIEW_MAX_DIMS || strides.length != shape.length) {
            throw new IllegalArgumentException("a tensor has 1.." + CallableLayouts.PTO_VIEW_MAX_DIMS
                    + " dims with one stride each, not shape " + Arrays.toString(shape) + " and strides "
                    + Arrays.toString(strides));
        }
        List<Dim> dims = new ArrayList<>();
        for (int d = 0; d < shape.length; d++) {
            if (shape[d] < 0 || strides[d] < 0) {
                throw new IllegalArgumentException("shape " + Arrays.toString(shape) + " and strides "
                        + Arrays.toString(strides) + " must be >= 0");
            }
            dims.add(new Dim(strides[d], shape[d], Affine.zero(), Affine.of(shape[d]), false));
        }
        return new View(kind, index, dtype, Affine.zero(), dims);
    }

    static long[] rowMajor(long[] shape) {
        long[] strides = new long[shape.length];
        long s = 1;
        for (int d = shape.length - 1; d >= 0; d--) {
            strides[d] = s;
            s = Math.multiplyExact(s, Math.max(shape[d], 1));
        }
        return strides;
    }

    // ---- operations ---------------------------------------------------------------------

    /**
     * Elements {@code start .. start + length - 1} of dimension {@code dim}, counted from this
     * view's own start along it (either may move with the loops; a clamped {@code length}
     * gives a short last tile).
     */
    public View slice(int dim, Affine start, Affine length) {
        Objects.requireNonNull(start, "start");
        Objects.requireNonNull(length, "length");
        int at = encoded(dim);
        Dim d = dims.get(at);
        List<Dim> next = new ArrayList<>(dims);
        next.set(at, new Dim(d.stride(), d.bound(), d.offset().plus(start), length, false));
        return new View(kind, index, dtype, origin, next);
    }

    /** {@link #slice(int, Affine, Affine)} from a constant start. */
    public View slice(int dim, long start, Affine length) {
        return slice(dim, Affine.of(start), length);
    }

    /** {@link #slice(int, Affine, Affine)} with constants. */
    public View slice(int dim, long start, long length) {
        return slice(dim, Affine.of(start), Affine.of(length));
    }

    /** Element {@code at} of dimension {@code dim}, which the task no longer sees (rank − 1). */
    public View select(int dim, Affine at) {
        Objects.requireNonNull(at, "at");
        int e = encoded(dim);
        Dim d = dims.get(e);
        List<Dim> next = new ArrayList<>(dims);
        next.set(e, new Dim(d.stride(), d.bound(), d.offset().plus(at), Affine.zero(), true));
        return new View(kind, index, dtype, origin, next);
    }

    /** {@link #select(int, Affine)} with a constant. */
    public View select(int dim, long at) {
        return select(dim, Affine.of(at));
    }

    /** Dimensions {@code a} and {@code b} swapped (a 2-D view's transpose is {@code transpose(0, 1)}). */
    public View transpose(int a, int b) {
        int ea = encoded(a);
        int eb = encoded(b);
        List<Dim> next = new ArrayList<>(dims);
        next.set(ea, dims.get(eb));
        next.set(eb, dims.get(ea));
        return new View(kind, index, dtype, origin, next);
    }

    /**
     * The same elements in another shape: only for a view whose dimensions are dense and
     * row-major (the innermost stride 1, each other the product of the extents inside it)
     * with constant extents, and the same element count. The new dimensions' bounds are the
     * new shape; a selected dimension stays as it is.
     */
    public View reshape(long... shape) {
        Objects.requireNonNull(shape, "shape");
        long count = 1;
        for (long s : shape) {
            if (s < 0) {
                throw new IllegalArgumentException("reshape to " + Arrays.toString(shape) + ": extents are >= 0");
            }
            count = Math.multiplyExact(count, s);
        }
        long expected = 1;
        long stride = 1;
        Affine start = origin;
        for (int k = dims.size() - 1; k >= 0; k--) {
            Dim d = dims.get(k);
            if (d.selected()) {
                continue;
            }
            if (!d.extent().isConstant() || d.stride() != stride) {
                throw new IllegalArgumentException("reshape needs a dense row-major view with constant extents; "
                        + this + " is not");
            }
            stride = Math.multiplyExact(stride, Math.max(d.extent().base(), 1));
            expected = Math.multiplyExact(expected, d.extent().base());
            start = start.plus(d.offset().times(d.stride()));
        }
        if (expected != count) {
            throw new IllegalArgumentException("reshape of " + expected + " elements to " + Arrays.toString(shape)
                    + " (" + count + " elements)");
        }
        List<Dim> next = new ArrayList<>();
        for (Dim d : dims) {
            if (d.selected()) {
                next.add(d);
            }
        }
        long[] strides = rowMajor(shape);
        for (int k = 0; k < shape.length; k++) {
            next.add(new Dim(strides[k], shape[k], Affine.zero(), Affine.of(shape[k]), false));
        }
        if (next.size() > CallableLayouts.PTO_VIEW_MAX_DIMS) {
            throw new IllegalArgumentException("reshape to " + Arrays.toString(shape) + " with " + (next.size()
                    - shape.length) + " selected dims exceeds " + CallableLayouts.PTO_VIEW_MAX_DIMS + " dims");
        }
        return new View(kind, index, dtype, start, next);
    }

    // ---- what it is -----------------------------------------------------------------------

    public DType dtype() {
        return dtype;
    }

    /** Argument tensor index or local id. */
    public int index() {
        return index;
    }

    Param.Kind kind() {
        return kind;
    }

    Affine origin() {
        return origin;
    }

    List<Dim> dims() {
        return dims;
    }

    /** Dimensions the task sees. */
    public int rank() {
        int n = 0;
        for (Dim d : dims) {
            n += d.selected() ? 0 : 1;
        }
        return n;
    }

    /** The extent of dimension {@code dim} (may depend on the loops). */
    public Affine extent(int dim) {
        return dims.get(encoded(dim)).extent();
    }

    /** The element stride of dimension {@code dim}. */
    public long stride(int dim) {
        return dims.get(encoded(dim)).stride();
    }

    private int encoded(int dim) {
        int seen = 0;
        for (int k = 0; k < dims.size(); k++) {
            if (dims.get(k).selected()) {
                continue;
            }
            if (seen++ == dim) {
                return k;
            }
        }
        throw new IllegalArgumentException("dim " + dim + " is outside 0.." + (rank() - 1) + " of " + this);
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof View)) {
            return false;
        }
        View v = (View) o;
        return kind == v.kind && index == v.index && dtype == v.dtype && origin.equals(v.origin)
                && dims.equals(v.dims);
    }

    @Override
    public int hashCode() {
        return Objects.hash(kind, index, dtype, origin, dims);
    }

    /** E.g. {@code arg0 f32[8i0 +: min(11 - 8*i0, 8) of 11, 0 +: 37 of 37]}. */
    @Override
    public String toString() {
        StringBuilder s = new StringBuilder(kind == Param.Kind.ARG_TENSOR ? "arg" : "local").append(index).append(' ')
                .append(dtype.name().toLowerCase(java.util.Locale.ROOT)).append('[');
        for (int k = 0; k < dims.size(); k++) {
            Dim d = dims.get(k);
            s.append(k == 0 ? "" : ", ").append(d.offset());
            if (!d.selected()) {
                s.append(" +: ").append(d.extent());
            }
            s.append(" of ").append(d.bound());
            if (d.stride() != 1) {
                s.append(" step ").append(d.stride());
            }
        }
        s.append(']');
        return origin.equals(Affine.zero()) ? s.toString() : s + " from element " + origin;
    }
}
