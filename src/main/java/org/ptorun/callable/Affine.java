package org.ptorun.callable;

import java.util.Arrays;
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
 */
public final class Affine {

    /** Loop nesting depths a program may use: 0..3. */
    public static final int MAX_LOOP_DEPTH = CallableLayouts.PTO_PROGRAM_MAX_LOOP_DEPTH;

    private static final Affine ZERO = new Affine(0, new long[MAX_LOOP_DEPTH]);

    private final long base;
    private final long[] coef;

    private Affine(long base, long[] coef) {
        this.base = base;
        this.coef = coef;
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
        return new Affine(add(base, value), coef.clone());
    }

    /** {@code this + coefficient · i[depth]}. */
    public Affine plus(long coefficient, int depth) {
        checkDepth(depth);
        long[] c = coef.clone();
        c[depth] = add(c[depth], coefficient);
        return new Affine(base, c);
    }

    /** {@code this + other}. */
    public Affine plus(Affine other) {
        long[] c = new long[MAX_LOOP_DEPTH];
        for (int d = 0; d < MAX_LOOP_DEPTH; d++) {
            c[d] = add(coef[d], other.coef[d]);
        }
        return new Affine(add(base, other.base), c);
    }

    /** {@code this · factor}: the base and every coefficient scaled. */
    public Affine times(long factor) {
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
        return v;
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
        return new long[] {min, max};
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
        return o instanceof Affine && ((Affine) o).base == base && Arrays.equals(((Affine) o).coef, coef);
    }

    @Override
    public int hashCode() {
        return 31 * Long.hashCode(base) + Arrays.hashCode(coef);
    }

    /** E.g. {@code 64 + 256*i0 - 4*i1}. */
    @Override
    public String toString() {
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
