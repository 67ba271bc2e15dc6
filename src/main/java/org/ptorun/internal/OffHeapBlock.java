package org.ptorun.internal;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;

/**
 * An aligned, zeroed, address-stable block of native memory with a little-endian
 * {@link ByteBuffer} view: the JVM's own ({@link #allocate}) or a piece of a chip's arena
 * ({@link #adopt}, {@link HostMemory}). Freed by {@link #close()} (idempotent, thread-safe).
 */
public final class OffHeapBlock implements AutoCloseable {

    private final AtomicLong raw;
    private final long address;
    private final long size;
    private final ByteBuffer buffer;
    private final LongConsumer free;

    private OffHeapBlock(long raw, long address, long size, LongConsumer free) {
        this.raw = new AtomicLong(raw);
        this.address = address;
        this.size = size;
        this.buffer = NativeMemory.view(address, size);
        this.free = free;
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
        return new OffHeapBlock(raw, aligned, size, NativeMemory::free);
    }

    /**
     * A block someone else allocated, zeroed and aligned: {@code close()} hands
     * {@code address} to {@code free} once.
     */
    public static OffHeapBlock adopt(long address, long size, LongConsumer free) {
        if (address == 0 || size <= 0 || size > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("block of " + size + " bytes at 0x" + Long.toHexString(address));
        }
        return new OffHeapBlock(address, address, size, free);
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
        long r = raw.getAndSet(0);
        if (r != 0) {
            free.accept(r);
        }
    }
}
