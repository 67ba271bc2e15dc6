package org.ptorun;

import org.ptorun.internal.LeakNet;

/**
 * Device memory allocated by {@link ChipWorker#malloc}. Pass it to a run as child
 * memory ({@link Tensor#of(DeviceBuffer, DType, int...)}) or move bytes with
 * {@link ChipWorker#copyTo} / {@link ChipWorker#copyFrom}. {@link #close()} frees it;
 * idempotent and thread-safe, refused while an unfinalized run uses the buffer. Closing
 * the ChipWorker releases every buffer of the device; a later close here is a no-op.
 */
public final class DeviceBuffer implements AutoCloseable {

    private final ChipWorker owner;
    private final DeviceMemory memory;
    private final long address;
    private final long size;
    /** Null for a communication window: its group, not the buffer, releases the memory. */
    private final LeakNet.Handle leakNet;
    private int runUses;
    private boolean closed;

    DeviceBuffer(ChipWorker owner, DeviceMemory memory, long address, long size) {
        this(owner, memory, address, size, true);
    }

    private DeviceBuffer(ChipWorker owner, DeviceMemory memory, long address, long size, boolean owned) {
        this.owner = owner;
        this.memory = memory;
        this.address = address;
        this.size = size;
        this.leakNet = owned ? LeakNet.register(this, "DeviceBuffer 0x" + Long.toHexString(address) + " (" + size
                + " bytes) of " + memory.describe(), () -> memory.free(address)) : null;
    }

    /**
     * A communication window (or a peer's, as this chip addresses it) seen as a buffer of
     * {@code owner}: copies and runs use it like device memory; closing it only ends its
     * use here ({@link CommGroup} releases the window).
     */
    static DeviceBuffer window(ChipWorker owner, long address, long size) {
        return new DeviceBuffer(owner, owner.memory(), address, size, false);
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

    public synchronized boolean isClosed() {
        return closed;
    }

    /**
     * Frees the device memory; idempotent.
     *
     * @throws IllegalStateException while a prepared, unfinalized run uses the buffer
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            if (runUses > 0) {
                throw new IllegalStateException(this + " is used by " + runUses
                        + " unfinalized run(s); finalize them before freeing it");
            }
            closed = true;
        }
        if (leakNet != null) {
            leakNet.close();
        }
    }

    DeviceMemory memory() {
        return memory;
    }

    /** A run takes the buffer as child memory (at prepare). */
    synchronized void retainForRun() {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
        runUses++;
    }

    /** The run that used the buffer is finalized. */
    synchronized void releaseFromRun() {
        runUses--;
    }

    @Override
    public String toString() {
        return "DeviceBuffer[0x" + Long.toHexString(address) + ", " + size + " bytes]";
    }
}
