package org.ptorun;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import org.ptorun.callable.Direction;
import org.ptorun.internal.HostMemory;
import org.ptorun.internal.Layouts;
import org.ptorun.internal.NativeMemory;
import org.ptorun.internal.OffHeapBlock;

/**
 * One pipeline slot's binding of a run to native memory: the slot's run storage, args
 * block, CallConfig block and descriptor (allocated at open, address-stable), the
 * staging of Java-array tensors into native memory (grown, reused) and their copy back,
 * and the device buffers the run pins. Touched only by the thread whose call holds the
 * slot in the {@link SlotTable}; the table's monitor orders those accesses.
 */
final class RunBinding implements TaskArgs.TensorPlacement {

    private static final int STAGING_ALIGN = 64;

    final int slot;
    final int bank;
    /** Where every block the library touches comes from (a chip host's arena in process isolation). */
    private final HostMemory memory;
    /**
     * In process isolation, the word the library writes at the launch marker in the arena
     * (the caller's {@link AcceptanceWord} reads it while the run holds it); null in process.
     */
    private final OffHeapBlock placedWord;
    private final OffHeapBlock storage;
    private final OffHeapBlock args;
    private final OffHeapBlock config;
    private final OffHeapBlock descriptor;
    // the blocks' addresses and views, copied here: a cycle reads this object, not four more
    private final long storageAddress;
    private final long argsAddress;
    private final long configAddress;
    private final long descriptorAddress;
    private final ByteBuffer argsView;
    private final ByteBuffer descriptorView;
    private final ByteBuffer storageView;

    // the bound run's resources
    private AcceptanceWord acceptance;
    /** The run whose device buffers this binding holds (their holder), until release. */
    private NativeRun boundRun;
    private Direction[] directions;
    private final Tensor[] tensors = new Tensor[TaskArgs.MAX_TENSORS];
    private final long[] addresses = new long[TaskArgs.MAX_TENSORS];
    private int tensorCount;
    private OffHeapBlock staging;
    private long stagingUsed;
    private CallConfig writtenConfig;
    /** System.nanoTime() when launch returned: the Completion event's origin. */
    long launchedAt;

    RunBinding(int slot, int bank, long storageSize, long storageAlignment, HostMemory memory) {
        this.slot = slot;
        this.bank = bank;
        this.memory = memory;
        OffHeapBlock s = null;
        OffHeapBlock a = null;
        OffHeapBlock c = null;
        OffHeapBlock w = null;
        boolean done = false;
        try {
            s = memory.allocate(storageSize, storageAlignment);
            a = memory.allocate(Layouts.ChipStorageTaskArgs.SIZE, Layouts.ChipStorageTaskArgs.ALIGN);
            c = memory.allocate(Layouts.CallConfig.SIZE, 8);
            w = memory == HostMemory.JVM ? null : memory.allocate(8, 8);
            this.descriptor = memory.allocate(Layouts.NativeRunDescriptor.SIZE, Layouts.NativeRunDescriptor.ALIGN);
            done = true;
        } finally {
            if (!done) {
                for (OffHeapBlock b : new OffHeapBlock[] {s, a, c, w}) {
                    if (b != null) {
                        b.close();
                    }
                }
            }
        }
        this.storage = s;
        this.placedWord = w;
        this.args = a;
        this.config = c;
        this.storageAddress = s.address();
        this.argsAddress = a.address();
        this.configAddress = c.address();
        this.descriptorAddress = descriptor.address();
        this.argsView = a.buffer();
        this.descriptorView = descriptor.buffer();
        this.storageView = s.buffer();
    }

    long storage() {
        return storageAddress;
    }

    long args() {
        return argsAddress;
    }

    long config() {
        return configAddress;
    }

    long descriptor() {
        return descriptorAddress;
    }

    /**
     * What can be refused before admission: device buffers of another chip or closed,
     * read-only outputs.
     */
    static void checkArgs(TaskArgs args, Direction[] directions, DeviceMemory memory) {
        for (int i = 0; i < args.tensorCount(); i++) {
            Tensor t = args.tensorAt(i);
            if (t.source() == Tensor.Source.DEVICE) {
                DeviceBuffer buffer = (DeviceBuffer) t.data();
                if (buffer.memory() != memory) {
                    throw new IllegalArgumentException("tensor argument " + i + ": " + buffer
                            + " belongs to another ChipWorker (" + buffer.memory().describe() + ")");
                }
                buffer.requireOpen("tensor argument " + i + ": ");
            } else if (t.source() == Tensor.Source.DIRECT && ((ByteBuffer) t.data()).isReadOnly()
                    && directionOf(directions, i).writes()) {
                throw new IllegalArgumentException("tensor argument " + i + " is "
                        + directionOf(directions, i) + " but its ByteBuffer is read-only");
            }
        }
    }

    private static Direction directionOf(Direction[] directions, int index) {
        // unknown callable (the library will refuse it) or extra tensors: stage and copy back
        return directions != null && index < directions.length ? directions[index] : Direction.INOUT;
    }

    /** Writes the run's args, config and descriptor blocks; stages host arrays; pins what the run uses. */
    void bind(NativeRun run, TaskArgs taskArgs, CallConfig callConfig, AcceptanceWord word, Direction[] signature) {
        if (word != null) {
            word.capture(run, placedWord);
            this.acceptance = word;
        }
        this.directions = signature;
        this.boundRun = run;
        long bytes = 0;
        boolean anyStaged = false;
        for (int i = 0; i < taskArgs.tensorCount(); i++) {
            Tensor t = taskArgs.tensorAt(i);
            if (staged(t)) {
                anyStaged = true;
                bytes += alignUp(t.byteSize());
            }
        }
        if (anyStaged) {
            ensureStaging(Math.max(bytes, STAGING_ALIGN));
        }
        stagingUsed = 0;
        taskArgs.writeTo(argsView, this);
        if (writtenConfig != callConfig) {
            callConfig.writeTo(config.buffer(), 0);
            writtenConfig = callConfig;
        }
        ByteBuffer d = descriptorView;
        d.putInt(Layouts.NativeRunDescriptor.PIPELINE_SLOT, slot);
        d.putInt(Layouts.NativeRunDescriptor.ARENA_BANK, bank);
        d.putLong(Layouts.NativeRunDescriptor.RUN_ID, run.runId());
        d.putLong(Layouts.NativeRunDescriptor.GENERATION, run.generation());
        d.putLong(Layouts.NativeRunDescriptor.DISPATCH_ID, run.dispatchId());
        d.putLong(Layouts.NativeRunDescriptor.RUN_EPOCH, run.runEpoch());
        d.putLong(Layouts.NativeRunDescriptor.ACCEPTED_STATE, word == null ? 0 : word.placedAddress());
        d.putInt(Layouts.NativeRunDescriptor.ACCEPTED_VALUE, word == null ? 0 : word.acceptedValue());
        d.putInt(Layouts.NativeRunDescriptor.ACCEPTED_VALUE + 4, 0);
    }

    private void ensureStaging(long bytes) {
        if (staging != null && staging.size() >= bytes) {
            return;
        }
        long size = Math.max(bytes, staging == null ? 0 : Math.min(2 * staging.size(), Integer.MAX_VALUE));
        if (staging != null) {
            staging.close();
            staging = null;
        }
        staging = memory.allocate(size, STAGING_ALIGN);
    }

    /**
     * Whether a host tensor is copied into the slot's staging: an array always, a direct
     * buffer when the library cannot use its memory as it is (outside a chip host's arena).
     */
    private boolean staged(Tensor t) {
        return t.source() == Tensor.Source.ARRAY
                || t.source() == Tensor.Source.DIRECT && !memory.holds(t.hostAddress(), t.byteSize());
    }

    private static long alignUp(long n) {
        return (n + STAGING_ALIGN - 1) & -STAGING_ALIGN;
    }

    /** Places tensor {@code i}: direct buffers in place, arrays into staging, device buffers as child memory. */
    @Override
    public long addressOf(int i, Tensor t) {
        long address;
        switch (t.source()) {
            case DIRECT:
                if (!staged(t)) {
                    address = t.hostAddress();
                    break;
                }
                address = stage(t);
                if (directionOf(directions, i).reads()) {
                    NativeMemory.view(address, t.byteSize()).put(NativeMemory.view(t.hostAddress(), t.byteSize()));
                }
                break;
            case ARRAY:
                address = stage(t);
                if (directionOf(directions, i).reads()) {
                    NativeMemory.copyIn(address, t.data());
                }
                break;
            default:
                DeviceBuffer buffer = (DeviceBuffer) t.data();
                buffer.retainForRun(boundRun);
                address = buffer.address();
                break;
        }
        tensors[i] = t;
        addresses[i] = address;
        tensorCount = i + 1;
        return address;
    }

    private long stage(Tensor t) {
        long address = staging.address() + stagingUsed;
        stagingUsed += alignUp(t.byteSize());
        return address;
    }

    /** The bound run's timeout (its CallConfig's; 0 means the default). */
    int timeoutMs() {
        CallConfig c = writtenConfig;
        return c == null || c.timeoutMs() == 0 ? CallConfig.DEFAULT_TIMEOUT_MS : c.timeoutMs();
    }

    /**
     * The report the library wrote into the storage as its finalize of {@code run} returned
     * (NativeRunReport, by offset). Read before the slot is emptied: the next prepare in
     * this storage empties the report.
     */
    RunReport report(NativeRun run) {
        ByteBuffer r = storageView;
        int at = Layouts.PTO_NATIVE_RUN_REPORT_OFFSET;
        long executionEnd = r.getLong(at + Layouts.NativeRunReport.EXECUTION_END_NS);
        long peak = r.getLong(at + Layouts.NativeRunReport.PEAK_DEVICE_MEMORY);
        int count = Math.min(r.getInt(at + Layouts.NativeRunReport.OUTPUT_FILE_COUNT),
                Layouts.NativeRunReport.MAX_FILES);
        List<Path> files = List.of();
        if (count > 0) {
            Path[] paths = new Path[count];
            for (int i = 0; i < count; i++) {
                paths[i] = Path.of(NativeMemory.cString(storageAddress + at + Layouts.NativeRunReport.OUTPUT_FILES
                        + (long) i * Layouts.NativeRunReport.PATH_BYTES));
            }
            files = List.of(paths);
        }
        return new RunReport(run, executionEnd, peak, files,
                GraphSource.of(r.getInt(at + Layouts.NativeRunReport.GRAPH_SOURCE)),
                r.getLong(at + Layouts.NativeRunReport.ORCHESTRATION_NS));
    }

    /** After a successful launched run: staged arrays the signature writes get their bytes back. */
    void copyBack() {
        for (int i = 0; i < tensorCount; i++) {
            Tensor t = tensors[i];
            if (!directionOf(directions, i).writes()) {
                continue;
            }
            if (t.source() == Tensor.Source.ARRAY) {
                NativeMemory.copyOut(addresses[i], t.data());
            } else if (t.source() == Tensor.Source.DIRECT && addresses[i] != t.hostAddress()) {
                NativeMemory.view(t.hostAddress(), t.byteSize()).put(NativeMemory.view(addresses[i], t.byteSize()));
            }
        }
    }

    /** The run is over (or never happened): drop its references, release the word and device buffers. */
    void release() {
        if (acceptance != null) {
            acceptance.release();
            acceptance = null;
        }
        for (int i = 0; i < tensorCount; i++) {
            Tensor t = tensors[i];
            if (t.source() == Tensor.Source.DEVICE) {
                ((DeviceBuffer) t.data()).releaseFromRun(boundRun);
            }
            tensors[i] = null;
        }
        tensorCount = 0;
        directions = null;
        boundRun = null;
    }

    /** Frees the slot's blocks (close: never under a call in flight). */
    void free() {
        storage.close();
        if (placedWord != null) {
            placedWord.close();
        }
        args.close();
        config.close();
        descriptor.close();
        if (staging != null) {
            staging.close();
        }
    }
}
