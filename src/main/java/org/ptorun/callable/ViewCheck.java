package org.ptorun.callable;

/**
 * What {@link Program.Builder#submit} proves about a strided {@link View} before the
 * library sees it: loop variables only of enclosing loops, and for every iteration of the
 * enclosing loops (in execution order, up to {@link #MAX_ITERATIONS}) the origin not
 * negative, each dimension's offset and extent inside its bound, and a local's view inside
 * its bytes. The first bad iteration is named with its loop values; the library's
 * interpreter applies the same rule (format/program_view.c).
 */
final class ViewCheck {

    /** Iterations of one SUBMIT the builder enumerates; beyond, the library checks each run. */
    static final long MAX_ITERATIONS = 1L << 20;

    private ViewCheck() {
    }

    /**
     * @param loops the loops open at the SUBMIT
     * @param counts their trip counts, outermost first
     * @param localBytes the local's ALLOC_TENSOR bytes, or -1 for an argument tensor
     * @param param names the parameter in a {@link TensorExtents.Reach} ("instruction 3 (SUBMIT func_id 1) parameter 0")
     * @return for an argument tensor's view that runs, the bytes of the tensor it needs (the interpreter's
     *     rule, {@link #bytesReached}) over every iteration: exact up to {@link #MAX_ITERATIONS}, and beyond
     *     for an unclamped view never empty (linear, greatest at a corner of the loops' box); otherwise the
     *     greatest over the box's corners, a lower bound. Null for a local's view or a SUBMIT that never runs.
     */
    static TensorExtents.Reach check(String where, View v, int loops, long[] counts, long localBytes, String param) {
        checkLoopVars(where, v, "the view origin", v.origin(), loops);
        for (int k = 0; k < v.dims().size(); k++) {
            View.Dim d = v.dims().get(k);
            checkLoopVars(where, v, "dim " + k + "'s offset", d.offset(), loops);
            checkLoopVars(where, v, "dim " + k + "'s extent", d.extent(), loops);
        }
        long iterations = 1;
        for (long c : counts) {
            if (c == 0) {
                return null; // never runs
            }
            iterations = iterations > MAX_ITERATIONS / c ? MAX_ITERATIONS + 1 : iterations * c;
        }
        boolean arg = localBytes < 0;
        if (iterations > MAX_ITERATIONS) {
            checkRanges(where, v, counts);
            return arg ? reachAtCorners(v, counts, param) : null;
        }
        long[] vars = new long[counts.length];
        long most = -1;
        long[] mostAt = vars;
        for (long n = 0; n < iterations; n++) {
            String problem;
            try {
                problem = problemAt(v, vars, localBytes);
            } catch (ArithmeticException e) {
                problem = "an offset or extent overflows a signed 64-bit value";
            }
            if (problem != null) {
                throw new IllegalArgumentException(where + " (" + v + "): " + problem + " at " + loopValues(vars));
            }
            if (arg) {
                long reached = bytesReached(v, vars);
                if (reached > most) {
                    most = reached;
                    mostAt = vars.clone();
                }
            }
            for (int k = counts.length - 1; k >= 0; k--) { // the next iteration: innermost loop first
                if (++vars[k] < counts[k]) {
                    break;
                }
                vars[k] = 0;
            }
        }
        return arg ? TensorExtents.Reach.of(most, param, mostAt, true) : null;
    }

    /**
     * Beyond {@link #MAX_ITERATIONS}: the greatest reach over the corners of the loops' box. Exact
     * when nothing of the view is clamped and no extent can be 0 (the reach is then linear in the
     * loop values); otherwise a lower bound — the check never refuses a tensor the view fits, and
     * the library checks each iteration at run time.
     */
    private static TensorExtents.Reach reachAtCorners(View v, long[] counts, String param) {
        boolean exact = !v.origin().isClamped();
        for (View.Dim d : v.dims()) {
            exact &= !d.offset().isClamped() && !d.extent().isClamped()
                    && (d.selected() || d.extent().range(counts)[0] >= 1);
        }
        long most = -1;
        long[] mostAt = new long[counts.length];
        for (int corner = 0; corner < 1 << counts.length; corner++) {
            long[] vars = new long[counts.length];
            for (int k = 0; k < counts.length; k++) {
                vars[k] = (corner >> k & 1) != 0 ? counts[k] - 1 : 0;
            }
            long reached = bytesReached(v, vars);
            if (reached > most) {
                most = reached;
                mostAt = vars;
            }
        }
        return TensorExtents.Reach.of(most, param, mostAt, exact);
    }

    /**
     * The bytes of its tensor a view needs at these loop values, by the interpreter's rule
     * (format/program_view.c, {@code pto_view_param_resolve}): past its last element, or — an
     * empty view — up to its first element. {@link Long#MAX_VALUE} when that overflows.
     */
    static long bytesReached(View v, long[] vars) {
        try {
            long first = v.origin().evaluate(vars);
            long last = first;
            boolean empty = false;
            for (View.Dim d : v.dims()) {
                long off = d.offset().evaluate(vars);
                long ext = d.selected() ? 1 : d.extent().evaluate(vars);
                first = Math.addExact(first, Math.multiplyExact(off, d.stride()));
                if (ext == 0) {
                    empty = true;
                } else {
                    last = Math.addExact(last, Math.multiplyExact(Math.addExact(off, ext - 1), d.stride()));
                }
            }
            long size = v.dtype().byteSize();
            return empty ? Math.multiplyExact(first, size) : Math.multiplyExact(Math.addExact(last, 1), size);
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE;
        }
    }

    /**
     * Beyond {@link #MAX_ITERATIONS}: what the values' ranges over all iterations prove
     * exactly, as registration does — a negative origin, offset or extent, a selected index
     * past its bound, an unclamped offset + extent past its bound. The rest is the library's
     * check at run time.
     */
    private static void checkRanges(String where, View v, long[] counts) {
        try {
            if (v.origin().range(counts)[0] < 0) {
                throw new IllegalArgumentException(where + " (" + v + "): the view origin can be negative");
            }
            for (int k = 0; k < v.dims().size(); k++) {
                View.Dim d = v.dims().get(k);
                long[] off = d.offset().range(counts);
                long[] ext = d.selected() ? new long[] {1, 1} : d.extent().range(counts);
                if (off[0] < 0 || ext[0] < 0) {
                    throw new IllegalArgumentException(where + " (" + v + "): dim " + k + "'s offset or extent can be"
                            + " negative");
                }
                long end = d.selected() ? Math.addExact(off[1], 1)
                        : !d.offset().isClamped() && !d.extent().isClamped() ? d.offset().plus(d.extent()).range(counts)[1]
                        : Long.MIN_VALUE;
                if (end > d.bound()) {
                    throw new IllegalArgumentException(where + " (" + v + "): dim " + k + " reaches element " + end
                            + " of its " + d.bound() + " in some iteration");
                }
            }
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(where + " (" + v + "): an offset or extent overflows a signed 64-bit"
                    + " value over its loops' ranges");
        }
    }

    private static String problemAt(View v, long[] vars, long localBytes) {
        long origin = v.origin().evaluate(vars);
        if (origin < 0) {
            return "the view origin is element " + origin;
        }
        long last = origin;
        boolean empty = false;
        for (int k = 0; k < v.dims().size(); k++) {
            View.Dim d = v.dims().get(k);
            long off = d.offset().evaluate(vars);
            long ext = d.selected() ? 1 : d.extent().evaluate(vars);
            if (off < 0 || ext < 0 || Math.addExact(off, ext) > d.bound()) {
                return "dim " + k + " takes elements [" + off + ", " + off + " + " + ext + ") of its " + d.bound();
            }
            if (ext == 0) {
                empty = true;
            } else {
                last = Math.addExact(last, Math.multiplyExact(off + ext - 1, d.stride()));
            }
        }
        if (localBytes >= 0 && !empty) {
            long end = Math.multiplyExact(Math.addExact(last, 1), v.dtype().byteSize());
            if (end > localBytes) {
                return "its last element ends at byte " + end + " of local tensor " + v.index() + ", which has "
                        + localBytes + " bytes";
            }
        }
        return null;
    }

    private static void checkLoopVars(String where, View v, String what, Affine a, int loops) {
        if (a.deepestLoopUsed() >= loops) {
            throw new IllegalArgumentException(where + " (" + v + "): " + what + " " + a + " uses loop variable i"
                    + a.deepestLoopUsed() + " but only " + loops + " loop(s) enclose it");
        }
    }

    static String loopValues(long[] vars) {
        if (vars.length == 0) {
            return "no loop";
        }
        StringBuilder s = new StringBuilder();
        for (int d = 0; d < vars.length; d++) {
            s.append(d == 0 ? "" : ", ").append('i').append(d).append('=').append(vars[d]);
        }
        return s.toString();
    }
}
