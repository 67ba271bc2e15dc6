package org.ptorun.callable;

import java.util.Arrays;
import java.util.OptionalLong;
import org.ptorun.internal.CallableLayouts;

/**
 * An affine expression over the loop variables of a program: {@code base + Σ coef[d]·i[d]},
 * where {@code i[d]} is the variable of the enclosing LOOP at nesting depth {@code d}
 * (0 = outermost; it runs {@code 0..count-1}). The C {@code PtoAffine}. Immutable.
 *
 * <p>View offsets, view sizes and scalars of a program are affine expressions; a constant
 * is one whose coefficients are all 0:
 *
 * <pre>{@code
 * Affine row = Affine.loopVar(0).times(rowBytes);          // i0 * rowBytes
 * Affine tile = Affine.of(64).plus(tileBytes, 1);           // 64 + tileBytes * i1
 * Affine both = row.plus(tile);                             // 64 + rowBytes * i0 + tileBytes * i1
 * }</pre>
 *
 * Arithmetic that overflows a signed 64-bit value is an {@link IllegalArgumentException}.
 *
 * <p>{@link #min(long)} and {@link #max(long)} clamp the value, last: one loop then
 * covers a dimension that is not a multiple of its tile, the last tile being shorter —
 * {@code Affine.of(37).plus(-8, 1).min(8)} is {@code min(37 - 8*i1, 8)}. A clamped
 * expression takes no further arithmetic (clamp the finished expression).
 */
public final class Affine {

    /** Loop nesting depths a program may use: 0..3. */
    public static final int MAX_LOOP_DEPTH = CallableLayouts.PTO_PROGRAM_MAX_LOOP_DEPTH;

    private static final Affine ZERO = new Affine(0, new long[MAX_LOOP_DEPTH]);
    private static final int HAS_LO = CallableLayouts.PTO_AFFINE_HAS_LO;
    private static final int HAS_HI = CallableLayouts.PTO_AFFINE_HAS_HI;

    private final long base;
    private final long[] coef;
    /** HAS_LO | HAS_HI: which of lo and hi clamp the value (the C {@code PtoAffine.clamp}). */
    private final int clamp;
    private final long lo;
    private final long hi;

    private Affine(long base, long[] coef) {
        this(base, coef, 0, 0, 0);
    }

    private Affine(long base, long[] coef, int clamp, long lo, long hi) {
        this.base = base;
        this.coef = coef;
        this.clamp = clamp;
        this.lo = lo;
        this.hi = hi;
    }

    /**
     * This expression, at most {@code bound}: {@code min(this, bound)}.
     *
     * @throws IllegalArgumentException when {@code bound} is below a {@link #max(long)} already applied
     */
    public Affine min(long bound) {
        if ((clamp & HAS_LO) != 0 && bound < lo) {
            throw new IllegalArgumentException("min(" + bound + ") is below the max(" + lo + ") of " + this);
        }
        long h = (clamp & HAS_HI) != 0 ? Math.min(hi, bound) : bound;
        return folded(new Affine(base, coef, clamp | HAS_HI, lo, h));
    }

    /**
     * This expression, at least {@code bound}: {@code max(this, bound)}.
     *
     * @throws IllegalArgumentException when {@code bound} is above a {@link #min(long)} already applied
     */
    public Affine max(long bound) {
        if ((clamp & HAS_HI) != 0 && bound > hi) {
            throw new IllegalArgumentException("max(" + bound + ") is above the min(" + hi + ") of " + this);
        }
        long l = (clamp & HAS_LO) != 0 ? Math.max(lo, bound) : bound;
        return folded(new Affine(base, coef, clamp | HAS_LO, l, hi));
    }

    /** A clamped constant is just its value. */
    private static Affine folded(Affine a) {
        return a.deepestLoopUsed() < 0 ? of(a.evaluate()) : a;
    }

    /** The {@link #max(long)} bound, if any. */
    public OptionalLong lowerClamp() {
        return (clamp & HAS_LO) != 0 ? OptionalLong.of(lo) : OptionalLong.empty();
    }

    /** The {@link #min(long)} bound, if any. */
    public OptionalLong upperClamp() {
        return (clamp & HAS_HI) != 0 ? OptionalLong.of(hi) : OptionalLong.empty();
    }

    /** True when {@link #min(long)} or {@link #max(long)} applies. */
    public boolean isClamped() {
        return clamp != 0;
    }

    private long clamped(long v) {
        if ((clamp & HAS_LO) != 0 && v < lo) {
            v = lo;
        }
        if ((clamp & HAS_HI) != 0 && v > hi) {
            v = hi;
        }
        return v;
    }

    private void checkUnclamped(String operation) {
        if (clamp != 0) {
            throw new IllegalArgumentException(operation + " of the clamped expression " + this
                    + ": min/max apply last; clamp the finished expression");
        }
    }

    /** The constant {@code value}. */
    public static Affine of(long value) {
        return value == 0 ? ZERO : new Affine(value, new long[MAX_LOOP_DEPTH]);
    }

    /** The constant 0. */
    public static Affine zero() {
        return ZERO;
    }

    /**
     * The variable of the loop at nesting depth {@code depth} (0 = outermost).
     *
     * @throws IllegalArgumentException for a depth outside 0..3
     */
    public static Affine loopVar(int depth) {
        checkDepth(depth);
        long[] c = new long[MAX_LOOP_DEPTH];
        c[depth] = 1;
        return new Affine(0, c);
    }

    /** {@code this + value}. */
    public Affine plus(long value) {
        checkUnclamped("arithmetic");
        return new Affine(add(base, value), coef.clone());
    }

    /** {@code this + coefficient · i[depth]}. */
    public Affine plus(long coefficient, int depth) {
        checkUnclamped("arithmetic");
        checkDepth(depth);
        long[] c = coef.clone();
        c[depth] = add(c[depth], coefficient);
        return new Affine(base, c);
    }

    /** {@code this + other}. */
    public Affine plus(Affine other) {
        checkUnclamped("arithmetic");
        other.checkUnclamped("arithmetic");
        long[] c = new long[MAX_LOOP_DEPTH];
        for (int d = 0; d < MAX_LOOP_DEPTH; d++) {
            c[d] = add(coef[d], other.coef[d]);
        }
        return new Affine(add(base, other.base), c);
    }

    /** {@code this · factor}: the base and every coefficient scaled. */
    public Affine times(long factor) {
        checkUnclamped("arithmetic");
        long[] c = new long[MAX_LOOP_DEPTH];
        for (int d = 0; d < MAX_LOOP_DEPTH; d++) {
            c[d] = multiply(coef[d], factor);
        }
        return new Affine(multiply(base, factor), c);
    }

    public long base() {
        return base;
    }

    /** The coefficient of the loop variable at {@code depth}. */
    public long coef(int depth) {
        checkDepth(depth);
        return coef[depth];
    }

    /** True when every coefficient is 0. */
    public boolean isConstant() {
        return deepestLoopUsed() < 0;
    }

    /** The deepest loop depth with a non-zero coefficient, or -1 for a constant. */
    public int deepestLoopUsed() {
        for (int d = MAX_LOOP_DEPTH - 1; d >= 0; d--) {
            if (coef[d] != 0) {
                return d;
            }
        }
        return -1;
    }

    /**
     * The value for these loop variables ({@code vars[d]} = the variable of depth d;
     * missing ones count as 0).
     *
     * @throws ArithmeticException on overflow
     */
    public long evaluate(long... vars) {
        long v = base;
        for (int d = 0; d < MAX_LOOP_DEPTH && d < vars.length; d++) {
            v = Math.addExact(v, Math.multiplyExact(coef[d], vars[d]));
        }
        return clamped(v);
    }

    /**
     * The least and the greatest value over the box {@code 0 ≤ i[d] < counts[d]} (every
     * count ≥ 1; a linear expression takes its extremes at the corners), as
     * {@code {min, max}}.
     *
     * @throws ArithmeticException on overflow
     */
    long[] range(long[] counts) {
        long min = base;
        long max = base;
        for (int d = 0; d < MAX_LOOP_DEPTH; d++) {
            if (coef[d] == 0) {
                continue;
            }
            long last = d < counts.length ? Math.multiplyExact(coef[d], counts[d] - 1) : 0;
            if (last < 0) {
                min = Math.addExact(min, last);
            } else {
                max = Math.addExact(max, last);
            }
        }
        return new long[] {clamped(min), clamped(max)};
    }

    /**
     * The loop values, inside the box {@code 0 ≤ i[d] < counts[d]} (every count ≥ 1), where the
     * unclamped expression is greatest: each variable at its last value when its coefficient
     * is positive, at 0 otherwise (a linear expression takes its maximum at that corner).
     */
    long[] argMax(long[] counts) {
        long[] vars = new long[counts.length];
        for (int d = 0; d < counts.length && d < MAX_LOOP_DEPTH; d++) {
            vars[d] = coef[d] > 0 ? counts[d] - 1 : 0;
        }
        return vars;
    }

    private static long add(long a, long b) {
        try {
            return Math.addExact(a, b);
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("affine expression overflows a signed 64-bit value: " + a + " + " + b);
        }
    }

    private static long multiply(long a, long b) {
        try {
            return Math.multiplyExact(a, b);
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("affine expression overflows a signed 64-bit value: " + a + " * " + b);
        }
    }

    private static void checkDepth(int depth) {
        if (depth < 0 || depth >= MAX_LOOP_DEPTH) {
            throw new IllegalArgumentException("loop depth " + depth + " is outside 0.." + (MAX_LOOP_DEPTH - 1));
        }
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof Affine)) {
            return false;
        }
        Affine a = (Affine) o;
        return a.base == base && Arrays.equals(a.coef, coef) && a.clamp == clamp && a.lo == lo && a.hi == hi;
    }

    @Override
    public int hashCode() {
        return 31 * (31 * Long.hashCode(base) + Arrays.hashCode(coef)) + Long.hashCode(31 * lo + hi) + clamp;
    }

    /** E.g. {@code 64 + 256*i0 - 4*i1}, {@code min(37 - 8*i1, 8)}. */
    @Override
    public String toString() {
        String s = unclampedText();
        if ((clamp & HAS_LO) != 0) {
            s = "max(" + s + ", " + lo + ")";
        }
        if ((clamp & HAS_HI) != 0) {
            s = "min(" + s + ", " + hi + ")";
        }
        return s;
    }

    private String unclampedText() {
        StringBuilder s = new StringBuilder();
        if (base != 0 || isConstant()) {
            s.append(base);
        }
        for (int d = 0; d < MAX_LOOP_DEPTH; d++) {
            if (coef[d] == 0) {
                continue;
            }
            boolean negative = coef[d] < 0;
            s.append(s.length() == 0 ? (negative ? "-" : "") : (negative ? " - " : " + "));
            String magnitude = negative ? Long.toString(coef[d]).substring(1) : Long.toString(coef[d]);
            if (!magnitude.equals("1")) {
                s.append(magnitude).append('*');
            }
            s.append('i').append(d);
        }
        return s.toString();
    }
}
