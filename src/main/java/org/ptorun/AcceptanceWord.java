package org.ptorun;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.ptorun.internal.LeakNet;
import org.ptorun.internal.OffHeapBlock;

/**
 * The launch-acceptance sink of a run: an off-heap int32 the caller owns and watches.
 * A run that captured it at prepare stores its accepted value into it, with release
 * ordering, exactly at the real kernel-launch marker; a run that fails before the marker
 * never writes it. Reads here are acquire reads, so whatever the library did before the
 * marker is visible to a thread that saw {@link #isAccepted()}.
 *
 * <p>A word is captured by at most one unfinalized run at a time; it can be
 * {@link #reset()} and reused once that run is finalized. {@link #close()} frees it
 * (refused while a run captured it).
 */
public final class AcceptanceWord implements AutoCloseable {

    private static final VarHandle INT32 = MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);

    private final OffHeapBlock block;
    /** The word's own memory. */
    private final ByteBuffer own;
    /**
     * Where the word is read: its own memory, or while a run of a chip in process isolation
     * holds it, the slot's word in that chip's arena (the one the library writes; see
     * {@link #capture}).
     */
    private volatile ByteBuffer view;
    /** That arena word while placed; null otherwise (under this). */
    private OffHeapBlock placed;
    private final int acceptedValue;
    private final LeakNet.Handle leakNet;
    private NativeRun capturedBy;
    private volatile boolean closed;

    private AcceptanceWord(int acceptedValue) {
        this.block = OffHeapBlock.allocate(8, 8);
        this.own = block.buffer();
        this.view = own;
        this.acceptedValue = acceptedValue;
        this.leakNet = LeakNet.register(this, "AcceptanceWord@" + Long.toHexString(block.address()), block::close);
    }

    /** A word, initially 0, that a run sets to 1 at its launch marker. */
    public static AcceptanceWord allocate() {
        return allocate(1);
    }

    /**
     * A word, initially 0, that a run sets to {@code acceptedValue} at its launch marker.
     *
     * @throws IllegalArgumentException for 0 (indistinguishable from "not accepted")
     */
    public static AcceptanceWord allocate(int acceptedValue) {
        if (acceptedValue == 0) {
            throw new IllegalArgumentException("the accepted value must be non-zero");
        }
        return new AcceptanceWord(acceptedValue);
    }

    /** True once a run crossed its launch marker (acquire read). */
    public boolean isAccepted() {
        return value() != 0;
    }

    /**
     * The word's current value (acquire read).
     *
     * @throws IllegalStateException after close
     */
    public int value() {
        checkOpen();
        for (;;) {
            ByteBuffer v = view;
            int value = (int) INT32.getAcquire(v, 0);
            // still the same memory after the read: the value is the run's, not the next run's reset
            if (view == v) {
                return value;
            }
        }
    }

    /** What a run stores at its launch marker. */
    public int acceptedValue() {
        return acceptedValue;
    }

    /**
     * Sets the word back to 0 for reuse.
     *
     * @throws IllegalStateException while an unfinalized run captured it, or after close
     */
    public synchronized void reset() {
        checkOpen();
        if (capturedBy != null) {
            throw new IllegalStateException("the acceptance word is captured by the unfinalized run "
                    + capturedBy.identity() + "; finalize it before reset");
        }
        INT32.setRelease(own, 0, 0);
    }

    /** True while an unfinalized run holds this word. */
    public synchronized boolean isCaptured() {
        return capturedBy != null;
    }

    /** The word's own memory (what the library writes unless the word is placed in an arena). */
    long address() {
        return block.address();
    }

    /** Marks the word as the sink of {@code run}, in its own memory. */
    void capture(NativeRun run) {
        capture(run, null);
    }

    /** The address the library writes (valid while captured). */
    synchronized long placedAddress() {
        return placed == null ? block.address() : placed.address();
    }

    /**
     * Marks the word as the sink of {@code run} (at prepare). With {@code arenaWord} (a
     * chip in process isolation, whose library cannot write the JVM's memory), the run
     * writes that word of the chip's arena instead, and this word reads it until the run
     * is released, then keeps its last value.
     */
    synchronized void capture(NativeRun run, OffHeapBlock arenaWord) {
        checkOpen();
        if (capturedBy != null) {
            throw new IllegalArgumentException("the acceptance word is already captured by the unfinalized run "
                    + capturedBy.identity());
        }
        capturedBy = run;
        if (arenaWord != null) {
            INT32.setRelease(arenaWord.buffer(), 0, (int) INT32.getAcquire(own, 0));
            placed = arenaWord;
            view = arenaWord.buffer();
        }
    }

    /** The run is finalized (or its prepare failed): the library no longer holds the word. */
    synchronized void release() {
        capturedBy = null;
        if (placed != null) {
            INT32.setRelease(own, 0, (int) INT32.getAcquire(placed.buffer(), 0));
            view = own;
            placed = null;
        }
    }

    /**
     * Frees the word; idempotent.
     *
     * @throws IllegalStateException while an unfinalized run captured it
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        if (capturedBy != null) {
            throw new IllegalStateException("the acceptance word is captured by the unfinalized run "
                    + capturedBy.identity() + "; finalize it before closing the word");
        }
        closed = true;
        leakNet.close();
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the acceptance word is closed");
        }
    }

    @Override
    public String toString() {
        return closed ? "AcceptanceWord[closed]"
                : "AcceptanceWord[value=" + value() + ", accepted=" + acceptedValue + "]";
    }
}
