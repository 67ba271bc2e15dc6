package org.ptorun.callable;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.ptorun.TaskArgs;

/**
 * The bytes each tensor argument of a {@link ChipCallable} must hold: for every view its
 * program takes of the tensor, over every iteration of the loops around it, the byte past
 * the view's last element (an empty strided view: its first element), the greatest of
 * them — exactly what the library's interpreter checks each view against as it submits it
 * (docs/orchestration.md). A program's graph is fixed: its trip counts are constants and
 * its views are affine in the loop variables, never in the run's scalars, so this is
 * computed once, when the callable is built ({@link ChipCallable#tensorExtents()}).
 *
 * <p>{@link #check} is the one check of a run's tensors against it: {@code ChipWorker.prepare}
 * and {@code run} make it before any native work, {@code Worker.enqueue} and
 * {@code enqueueCollective} before anything is admitted, so a tensor too small for the
 * program is refused at once on every runtime with the same {@link IllegalArgumentException}
 * — hbg would refuse it at prepare, trb only when its device orchestration reached the view.
 *
 * <p>What is exact: every flat byte view; every strided view of a SUBMIT whose loops run at
 * most 2<sup>20</sup> times together (each iteration is evaluated); beyond that, a strided
 * view with no min/max clamp and no extent that can be 0. For the rest (a clamped strided
 * view in a SUBMIT of more than 2<sup>20</sup> iterations) the extent is the greatest over
 * the corners of the loops' box, a lower bound: no tensor the program fits is ever refused,
 * and the library still checks each iteration at run time. An orchestration library's
 * views are unknown to Java: its callable's extents are all 0 ({@link #isKnown()} false).
 * Immutable.
 */
public final class TensorExtents {

    /** How far the views of one argument tensor reach: the farthest view and where it is. */
    record Reach(long bytes, String param, long[] loopValues, boolean exact) {

        static Reach of(long bytes, String param, long[] loopValues, boolean exact) {
            return new Reach(bytes, param, loopValues, exact);
        }

        /** The one reaching farther (the earlier one when equal); exact only if both are. */
        static Reach farther(Reach a, Reach b) {
            Reach far = b.bytes > a.bytes ? b : a;
            return far.exact == (a.exact && b.exact) ? far
                    : new Reach(far.bytes, far.param, far.loopValues, a.exact && b.exact);
        }

        /** E.g. "instruction 2 (SUBMIT func_id 0) parameter 1 ends at byte 64 at i0=3". */
        String describe() {
            return param + " ends at byte " + bytes + (loopValues.length == 0 ? "" : " at "
                    + ViewCheck.loopValues(loopValues));
        }
    }

    private final List<Direction> directions;
    private final long[] bytes;
    private final String[] reachedBy;
    private final boolean[] exact;
    private final boolean known;

    private TensorExtents(List<Direction> directions, long[] bytes, String[] reachedBy, boolean[] exact,
                          boolean known) {
        this.directions = directions;
        this.bytes = bytes;
        this.reachedBy = reachedBy;
        this.exact = exact;
        this.known = known;
    }

    /** A program's extents, per tensor of the signature ({@code directions}: the tensor directions). */
    static TensorExtents of(List<Direction> directions, Map<Integer, Reach> reach) {
        int n = directions.size();
        long[] bytes = new long[n];
        String[] by = new String[n];
        boolean[] exact = new boolean[n];
        for (int i = 0; i < n; i++) {
            Reach r = reach.get(i);
            bytes[i] = r == null ? 0 : r.bytes();
            by[i] = r == null ? null : r.describe();
            exact[i] = r == null || r.exact();
        }
        return new TensorExtents(directions, bytes, by, exact, true);
    }

    /** An orchestration library's: nothing known, nothing checked. */
    static TensorExtents unknown(List<Direction> directions) {
        int n = directions.size();
        boolean[] exact = new boolean[n];
        return new TensorExtents(directions, new long[n], new String[n], exact, false);
    }

    /** Tensor arguments of the callable's signature. */
    public int tensorCount() {
        return bytes.length;
    }

    /**
     * The fewest bytes tensor argument {@code tensorIndex} must hold ({@code Tensor.byteSize()}):
     * 0 when no view of the program names it, or for an orchestration library.
     *
     * @throws IndexOutOfBoundsException outside the signature's tensors
     */
    public long bytesNeeded(int tensorIndex) {
        Objects.checkIndex(tensorIndex, bytes.length);
        return bytes[tensorIndex];
    }

    /** False for an orchestration library, whose views Java cannot see (nothing is checked). */
    public boolean isKnown() {
        return known;
    }

    /**
     * True when {@link #bytesNeeded} is the program's exact need, false when it is a lower
     * bound (a clamped strided view in a SUBMIT of more than 2<sup>20</sup> iterations) or
     * unknown (an orchestration library).
     */
    public boolean isExact(int tensorIndex) {
        Objects.checkIndex(tensorIndex, bytes.length);
        return known && exact[tensorIndex];
    }

    /**
     * Refuses {@code args} when one of its tensors holds fewer bytes than the program needs of
     * it. Tensors beyond the signature's are not looked at (the library refuses arguments that
     * disagree with the signature in number). Allocates nothing unless it refuses.
     *
     * @param callableId the id the callable is registered under, for the message
     * @throws IllegalArgumentException {@code callable 3: tensor argument 1 (OUT) holds 32 bytes, but the
     *     callable's program needs 64: instruction 0 (SUBMIT func_id 0) parameter 1 ends at byte 64}
     */
    public void check(int callableId, TaskArgs args) {
        int n = Math.min(args.tensorCount(), bytes.length);
        for (int i = 0; i < n; i++) {
            long given = args.tensorAt(i).byteSize();
            if (given < bytes[i]) {
                throw new IllegalArgumentException("callable " + callableId + ": tensor argument " + i + " ("
                        + directions.get(i) + ") holds " + given + " bytes, but the callable's program needs "
                        + bytes[i] + ": " + reachedBy[i]);
            }
        }
    }

    @Override
    public String toString() {
        if (!known) {
            return "TensorExtents[unknown: an orchestration library]";
        }
        StringBuilder s = new StringBuilder("TensorExtents[");
        for (int i = 0; i < bytes.length; i++) {
            s.append(i == 0 ? "" : ", ").append(directions.get(i)).append(' ').append(bytes[i])
                    .append(exact[i] ? "" : "+");
        }
        return s.append(']').toString();
    }
}
