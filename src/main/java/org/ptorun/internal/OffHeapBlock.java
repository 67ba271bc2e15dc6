package org.ptorun.internal;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An aligned, zeroed, address-stable block of native memory with a little-endian
 * {@link ByteBuffer} view. Freed by {@link #close()} (idempotent, thread-safe).
 */
public final class OffHeapBlock implements AutoCloseable {

    private final AtomicLong raw;
    private final long address;
    private final long size;
    private final ByteBuffer buffer;

    private OffHeapBlock(long raw, long address, long size) {
        this.raw = new AtomicLong(raw);
        this.address = address;
        this.size = size;
        this.buffer = NativeMemory.view(address, size);
    }

    /**
     * Allocates {@code size} zeroed bytes aligned to {@code alignment} (a power of two).
     *
     * @throws OutOfMemoryError when native memory is exhausted
     */
    public static OffHeapBlock allocate(long size, long alignment) {
        if (size <= 0 || size > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("off-heap block size " + size + " is outside [1, 2^31)");
        }
        if (alignment <= 0 || Long.bitCount(alignment) != 1) {
            throw new IllegalArgumentException("alignment " + alignment + " is not a power of two");
        }
        long raw = NativeMemory.calloc(size + alignment - 1);
        if (raw == 0) {
            throw new OutOfMemoryError("native allocation of " + size + " bytes failed");
        }
        long aligned = (raw + alignment - 1) & -alignment;
        return new OffHeapBlock(raw, aligned, size);
    }

    public long address() {
        return address;
    }

    public long size() {
        return size;
    }

    /** A little-endian view over the whole block (shared; use absolute gets and puts). */
    public ByteBuffer buffer() {
        return buffer;
    }

    public boolean isClosed() {
        return raw.get() == 0;
    }

    @Override
    public void close() {
        NativeMemory.free(raw.getAndSet(0));
    }
}
