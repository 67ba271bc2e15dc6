package org.ptorun.internal;

/**
 * Where the host memory a chip's library reads and writes comes from: a run's storage,
 * args, config and descriptor, the staging of host tensors, callable blobs, device
 * images. In process the JVM's own; for a chip in a process of its own (docs/isolation.md)
 * its arena, which both processes map at the same address.
 */
public interface HostMemory {

    /** The JVM's own native memory: every address is the library's too. */
    HostMemory JVM = new HostMemory() {
        @Override
        public OffHeapBlock allocate(long size, long alignment) {
            return OffHeapBlock.allocate(size, alignment);
        }

        @Override
        public boolean holds(long address, long size) {
            return true;
        }
    };

    /**
     * {@code size} zeroed bytes aligned to {@code alignment} (a power of two).
     *
     * @throws OutOfMemoryError when the memory is exhausted
     */
    OffHeapBlock allocate(long size, long alignment);

    /** Whether the library can use {@code [address, address + size)} as it is. */
    boolean holds(long address, long size);
}
