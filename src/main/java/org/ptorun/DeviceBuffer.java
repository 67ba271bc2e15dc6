package org.ptorun;

import java.util.List;
import java.util.Objects;
import org.ptorun.internal.LeakNet;

/**
 * Device memory allocated by {@link ChipWorker#malloc}. Pass it to a run as child
 * memory ({@link Tensor#of(DeviceBuffer, DType, int...)}) or move bytes with
 * {@link ChipWorker#copyTo} / {@link ChipWorker#copyFrom}. {@link #close()} frees it;
 * idempotent and thread-safe, refused while a run that refers to the buffer is not yet
 * finalized (a prepared or executing {@link NativeRun}, a Worker's queued run, any
 * {@link #hold}), naming those runs; a copy in flight is waited for (the library frees
 * nothing under a copy), and a copy that begins after close is refused. Closing the
 * ChipWorker releases every buffer of the device; a later close here is a no-op.
 *
 * <p>A communication window (or a slice of one) is a buffer too; its group, not the
 * buffer, releases the memory: closing the group closes every window buffer of it, and is
 * refused while a run uses one of them.
 */
public final class DeviceBuffer implements AutoCloseable {

    private final ChipWorker owner;
    private final DeviceMemory memory;
    private final long address;
    private final long size;
    /** This buffer's own, or for a window the rank's (shared by every window buffer of it). */
    private final BufferUses uses;
    /** Null for a communication window: its group, not the buffer, releases the memory. */
    private final LeakNet.Handle leakNet;
    /** A window buffer closed here (only this object's use ends). */
    private volatile boolean closedHere;

    DeviceBuffer(ChipWorker owner, DeviceMemory memory, long address, long size) {
        this.owner = owner;
        this.memory = memory;
        this.address = address;
        this.size = size;
        this.uses = new BufferUses();
        this.leakNet = LeakNet.register(this, "DeviceBuffer 0x" + Long.toHexString(address) + " (" + size
                + " bytes) of " + memory.describe(), () -> memory.free(address));
    }

    private DeviceBuffer(ChipWorker owner, BufferUses rankUses, long address, long size) {
        this.owner = owner;
        this.memory = owner.memory();
        this.address = address;
        this.size = size;
        this.uses = rankUses;
        this.leakNet = null;
    }

    /**
     * A communication window (or a peer's, as this chip addresses it) seen as a buffer of
     * {@code owner}, whose uses are its rank's (or its domain's) {@code rankUses}: copies and runs use it like
     * device memory; closing it only ends its use here ({@link CommGroup} releases the window).
     */
    static DeviceBuffer window(ChipWorker owner, BufferUses rankUses, long address, long size) {
        return new DeviceBuffer(owner, rankUses, address, size);
    }

    /** The device address of the first byte. */
    public long address() {
        return address;
    }

    /** Bytes allocated. */
    public long size() {
        return size;
    }

    /** The ChipWorker whose device holds the buffer. */
    public ChipWorker owner() {
        return owner;
    }

    /** True once closed here, freed, or (a window) once its group closed. */
    public boolean isClosed() {
        return closedHere || uses.isClosed();
    }

    /**
     * Keeps the buffer from being freed (and a window's group from closing) until the
     * returned hold is closed: for a run of yours that will refer to the buffer later, as
     * the Worker's queue does for every queued run. {@link #close()} is refused meanwhile,
     * naming {@code holder} (its {@code toString()}).
     *
     * @throws IllegalStateException when the buffer is closed
     */
    public Hold hold(Object holder) {
        retain(Objects.requireNonNull(holder, "holder"));
        return new Hold(holder);
    }

    /** A {@link #hold}: closing it (idempotent, thread-safe) ends the use. */
    public final class Hold implements AutoCloseable {
        private final Object holder;
        private boolean released;

        private Hold(Object holder) {
            this.holder = holder;
        }

        @Override
        public void close() {
            synchronized (this) {
                if (released) {
                    return;
                }
                released = true;
            }
            uses.release(holder);
        }
    }

    /**
     * Frees the device memory; idempotent. A window buffer only ends its use here.
     *
     * @throws IllegalStateException while a run that refers to the buffer is not finalized
     *         (the message names them)
     */
    @Override
    public void close() {
        if (leakNet == null) {
            closedHere = true;
            return;
        }
        List<Object> held = uses.closeUnlessUsed("is closed");
        if (!held.isEmpty()) {
            throw new IllegalStateException(this + " is used by " + BufferUses.describe(held)
                    + "; finalize them before freeing it");
        }
        leakNet.close();
    }

    DeviceMemory memory() {
        return memory;
    }

    /** Who uses the buffer (a window's: its rank's, or its domain's). */
    BufferUses uses() {
        return uses;
    }

    /** A run takes the buffer as child memory (at prepare), until {@link #releaseFromRun}. */
    void retainForRun(NativeRun run) {
        retain(run);
    }

    /** The run that used the buffer is finalized. */
    void releaseFromRun(NativeRun run) {
        uses.release(run);
    }

    private void retain(Object holder) {
        if (closedHere) {
            throw new IllegalStateException(this + " is closed");
        }
        uses.retain(holder, this);
    }

    /**
     * Refuses a closed buffer: {@code context} then the buffer and why it is closed (a
     * window: its group closed).
     *
     * @throws IllegalStateException when closed
     */
    void requireOpen(String context) {
        String because = closedHere ? "is closed" : uses.closedBecause();
        if (because != null) {
            throw new IllegalStateException(context + this + " " + because);
        }
    }

    @Override
    public String toString() {
        return "DeviceBuffer[0x" + Long.toHexString(address) + ", " + size + " bytes]";
    }
}
