package org.ptorun;

import java.util.ArrayList;
import java.util.List;

/**
 * Who uses some device memory, and whether it is still open: the runs (a prepared
 * {@link NativeRun}, a Worker's queued ticket, any {@link DeviceBuffer.Hold}) that refer
 * to it until they are finalized. Freeing is refused while it is used (docs/reliability.md,
 * Lifetimes); a use begun after it closed is refused. One per owned {@link DeviceBuffer};
 * one per {@link CommRank}, shared by every window buffer of that rank, so closing its group
 * sees the runs of every slice. A sub-domain's windows have uses of their own whose
 * parent is the rank's: every use counts in both, so the domain's release and the group's
 * close each see it. Thread-safe: every method holds the monitor and calls out only to the
 * parent (locks are taken child before parent, never the other way).
 */
final class BufferUses {

    private final BufferUses parent;
    private final List<Object> holders = new ArrayList<>(2);
    /** Null while open; why it is closed otherwise ("is closed", "belongs to ... which is closed"). */
    private String closedBecause;

    BufferUses() {
        this(null);
    }

    /** Uses that also count in {@code parent} (null: none), and are closed when it is. */
    BufferUses(BufferUses parent) {
        this.parent = parent;
    }

    /**
     * One more use by {@code holder} (its {@code toString()} names it in a refusal).
     *
     * @throws IllegalStateException when closed, saying why, naming {@code what}
     */
    synchronized void retain(Object holder, Object what) {
        if (closedBecause != null) {
            throw new IllegalStateException(what + " " + closedBecause);
        }
        if (parent != null) {
            parent.retain(holder, what);
        }
        holders.add(holder);
    }

    /** Ends one use by {@code holder} (by identity); nothing when it holds none. */
    synchronized void release(Object holder) {
        for (int i = holders.size() - 1; i >= 0; i--) {
            if (holders.get(i) == holder) {
                holders.remove(i);
                if (parent != null) {
                    parent.release(holder);
                }
                return;
            }
        }
    }

    boolean isClosed() {
        return closedBecause() != null;
    }

    /** Why it (or its parent) is closed, or null. */
    synchronized String closedBecause() {
        if (closedBecause == null && parent != null) {
            return parent.closedBecause();
        }
        return closedBecause;
    }

    /**
     * Closes it with {@code because} unless something uses it.
     *
     * @return the holders when refused (it stays open), else an empty list (closed now or before)
     */
    synchronized List<Object> closeUnlessUsed(String because) {
        if (closedBecause != null) {
            return List.of();
        }
        if (!holders.isEmpty()) {
            return List.copyOf(holders);
        }
        closedBecause = because;
        return List.of();
    }

    /** Opens it again: the close it was part of did not happen after all. */
    synchronized void reopen() {
        closedBecause = null;
    }

    /** "2 run(s) not yet finalized: [a, b]" for a refusal. */
    static String describe(List<Object> holders) {
        return holders.size() + " run(s) not yet finalized: " + holders;
    }
}
