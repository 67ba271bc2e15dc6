package org.ptorun;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;
import org.ptorun.internal.Layouts;
import org.ptorun.internal.NativeConstants;

/**
 * How one run executes: the C {@code CallConfig} (1144 bytes, packed). Immutable; built
 * with {@link #builder()}. {@link Builder#build()} checks every rule that does not
 * depend on the chip; {@link #validateFor(Variant.Arch)} adds the arch maxima and is
 * applied by {@link ChipWorker#prepare ChipWorker.prepare}. Together they refuse exactly
 * what the library's {@code call_config_validate} refuses: the bounds are the public
 * header's ({@code PTO_AICPU_THREADS_MIN}, {@code PTO_RING_*_MIN/MAX}, …) and arch.h's.
 *
 * <p>Rules (abi.md): {@code aicpuThreadNum} 0 (arch default) or 2..arch max (a2a3 4,
 * a5 7); {@code blockDim} 0 (variant default) or 1..arch max blocks (a2a3 24, a5 36);
 * {@code timeoutMs} ≥ 0 (0 = {@value #DEFAULT_TIMEOUT_MS}); per ring, {@code ringTaskWindow}
 * 0 or a power of two in [4, 2^31), {@code ringHeap} 0 or ≥ 1024 bytes, {@code ringDepPool}
 * 0 or in [4, 2^31) — the ring values are C {@code uint64_t}s, a negative {@code long} the
 * same bits read unsigned; the output prefix below {@value #OUTPUT_PREFIX_BYTES} bytes of
 * UTF-8, without NUL, and required when a diagnostic (trace, argument dump, dependency
 * graph) is on.
 */
public final class CallConfig {

    /** Rings per array: trb uses all four, hbg ring 0 only. */
    public static final int RING_COUNT = NativeConstants.PTO_TRB_RING_COUNT;
    /** Output prefix capacity in bytes, its NUL included. */
    public static final int OUTPUT_PREFIX_BYTES = NativeConstants.PTO_OUTPUT_PREFIX_BYTES;
    /** What a timeout of 0 means. */
    public static final int DEFAULT_TIMEOUT_MS = NativeConstants.PTO_DEFAULT_TIMEOUT_MS;

    /** Every field at its default. */
    public static final CallConfig DEFAULT = builder().build();

    private static final int MAX_AICPU_THREADS = maxOver(Variant.Arch::maxAicpuThreads);
    private static final int MAX_BLOCK_DIM = maxOver(Variant.Arch::maxBlockDim);
    private static final byte[] ZEROS = new byte[OUTPUT_PREFIX_BYTES];

    private final int aicpuThreadNum;
    private final int blockDim;
    private final boolean enableTrace;
    private final boolean enableDumpArgs;
    private final boolean enableDepGraph;
    private final int timeoutMs;
    private final long[] ringTaskWindow;
    private final long[] ringHeap;
    private final long[] ringDepPool;
    private final String outputPrefix;
    private final byte[] outputPrefixUtf8;
    private final java.nio.file.Path captureFailuresTo;

    private CallConfig(Builder b) {
        this.aicpuThreadNum = b.aicpuThreadNum;
        this.blockDim = b.blockDim;
        this.enableTrace = b.enableTrace;
        this.enableDumpArgs = b.enableDumpArgs;
        this.enableDepGraph = b.enableDepGraph;
        this.timeoutMs = b.timeoutMs;
        this.ringTaskWindow = b.ringTaskWindow.clone();
        this.ringHeap = b.ringHeap.clone();
        this.ringDepPool = b.ringDepPool.clone();
        this.outputPrefix = b.outputPrefix;
        this.outputPrefixUtf8 = b.outputPrefix.getBytes(StandardCharsets.UTF_8);
        this.captureFailuresTo = b.captureFailuresTo;
        validate();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A builder starting from this config's values. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.aicpuThreadNum = aicpuThreadNum;
        b.blockDim = blockDim;
        b.enableTrace = enableTrace;
        b.enableDumpArgs = enableDumpArgs;
        b.enableDepGraph = enableDepGraph;
        b.timeoutMs = timeoutMs;
        b.ringTaskWindow = ringTaskWindow.clone();
        b.ringHeap = ringHeap.clone();
        b.ringDepPool = ringDepPool.clone();
        b.outputPrefix = outputPrefix;
        b.captureFailuresTo = captureFailuresTo;
        return b;
    }

    /** The rules of call_config_validate that hold on every arch, with the header's bounds. */
    private void validate() {
        if (aicpuThreadNum != 0 && (aicpuThreadNum < NativeConstants.PTO_AICPU_THREADS_MIN
                || aicpuThreadNum > MAX_AICPU_THREADS)) {
            throw new IllegalArgumentException("aicpu_thread_num " + aicpuThreadNum + " must be 0 (arch default) or "
                    + NativeConstants.PTO_AICPU_THREADS_MIN + ".." + MAX_AICPU_THREADS);
        }
        if (blockDim != 0 && (blockDim < NativeConstants.PTO_BLOCK_DIM_MIN || blockDim > MAX_BLOCK_DIM)) {
            throw new IllegalArgumentException("block_dim " + blockDim + " must be 0 (variant default) or "
                    + NativeConstants.PTO_BLOCK_DIM_MIN + ".." + MAX_BLOCK_DIM);
        }
        if (timeoutMs < 0) {
            throw new IllegalArgumentException("timeout_ms " + timeoutMs + " must be >= 0 (0 = "
                    + DEFAULT_TIMEOUT_MS + ")");
        }
        for (int r = 0; r < RING_COUNT; r++) {
            long w = ringTaskWindow[r];
            if (w != 0 && (outside(w, NativeConstants.PTO_RING_TASK_WINDOW_MIN,
                    NativeConstants.PTO_RING_TASK_WINDOW_MAX) || Long.bitCount(w) != 1)) {
                throw new IllegalArgumentException("ring_task_window[" + r + "] " + Long.toUnsignedString(w)
                        + " must be 0 (default) or a power of two in [" + NativeConstants.PTO_RING_TASK_WINDOW_MIN
                        + ", " + NativeConstants.PTO_RING_TASK_WINDOW_MAX + "]");
            }
            if (ringHeap[r] != 0 && Long.compareUnsigned(ringHeap[r], NativeConstants.PTO_RING_HEAP_MIN) < 0) {
                throw new IllegalArgumentException("ring_heap[" + r + "] " + ringHeap[r]
                        + " must be 0 (default) or >= " + NativeConstants.PTO_RING_HEAP_MIN + " bytes");
            }
            long d = ringDepPool[r];
            if (d != 0 && outside(d, NativeConstants.PTO_RING_DEP_POOL_MIN, NativeConstants.PTO_RING_DEP_POOL_MAX)) {
                throw new IllegalArgumentException("ring_dep_pool[" + r + "] " + Long.toUnsignedString(d)
                        + " must be 0 (default) or in [" + NativeConstants.PTO_RING_DEP_POOL_MIN + ", "
                        + NativeConstants.PTO_RING_DEP_POOL_MAX + "]");
            }
        }
        if (outputPrefixUtf8.length >= OUTPUT_PREFIX_BYTES) {
            throw new IllegalArgumentException("output_prefix is " + outputPrefixUtf8.length
                    + " bytes of UTF-8; it must be below " + OUTPUT_PREFIX_BYTES);
        }
        if (outputPrefix.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("output_prefix contains a NUL character");
        }
        if (hasDiagnostics() && outputPrefix.isEmpty()) {
            throw new IllegalArgumentException("output_prefix is required when a diagnostic"
                    + " (trace, dump_args, dep_graph) is on");
        }
    }

    /**
     * Checks the limits of one chip architecture.
     *
     * @throws IllegalArgumentException naming the field and its legal range
     */
    public CallConfig validateFor(Variant.Arch arch) {
        Objects.requireNonNull(arch, "arch");
        if (aicpuThreadNum > arch.maxAicpuThreads()) {
            throw new IllegalArgumentException("aicpu_thread_num " + aicpuThreadNum + " must be 0 (arch default) or "
                    + NativeConstants.PTO_AICPU_THREADS_MIN + ".." + arch.maxAicpuThreads() + " on "
                    + arch.name().toLowerCase(java.util.Locale.ROOT));
        }
        if (blockDim > arch.maxBlockDim()) {
            throw new IllegalArgumentException("block_dim " + blockDim + " must be 0 (variant default) or "
                    + NativeConstants.PTO_BLOCK_DIM_MIN + ".." + arch.maxBlockDim() + " on "
                    + arch.name().toLowerCase(java.util.Locale.ROOT));
        }
        return this;
    }

    /** True when a trace, argument dump or dependency graph is requested: such a run never overlaps another. */
    public boolean hasDiagnostics() {
        return enableTrace || enableDumpArgs || enableDepGraph;
    }

    public int aicpuThreadNum() {
        return aicpuThreadNum;
    }

    public int blockDim() {
        return blockDim;
    }

    public boolean enableTrace() {
        return enableTrace;
    }

    public boolean enableDumpArgs() {
        return enableDumpArgs;
    }

    public boolean enableDepGraph() {
        return enableDepGraph;
    }

    public int timeoutMs() {
        return timeoutMs;
    }

    public long ringTaskWindow(int ring) {
        return ringTaskWindow[ring];
    }

    public long ringHeap(int ring) {
        return ringHeap[ring];
    }

    public long ringDepPool(int ring) {
        return ringDepPool[ring];
    }

    /** The diagnostics output directory; "" when unset. */
    public String outputPrefix() {
        return outputPrefix;
    }

    /**
     * Where a {@code Worker} or a {@code ChipWorker} writes this run's capture if it fails
     * ({@link Builder#captureFailuresTo}); empty when unset. Not part of the C struct: the
     * library never sees it.
     */
    public java.util.Optional<java.nio.file.Path> captureFailuresTo() {
        return java.util.Optional.ofNullable(captureFailuresTo);
    }

    /**
     * Writes all 1144 bytes of the C struct at {@code offset} of a little-endian buffer
     * (absolute puts; the buffer's position is not used).
     */
    void writeTo(ByteBuffer buffer, int offset) {
        buffer.putInt(offset + Layouts.CallConfig.AICPU_THREAD_NUM, aicpuThreadNum);
        buffer.putInt(offset + Layouts.CallConfig.BLOCK_DIM, blockDim);
        buffer.putInt(offset + Layouts.CallConfig.ENABLE_TRACE, enableTrace ? 1 : 0);
        buffer.putInt(offset + Layouts.CallConfig.ENABLE_DUMP_ARGS, enableDumpArgs ? 1 : 0);
        buffer.putInt(offset + Layouts.CallConfig.ENABLE_DEP_GRAPH, enableDepGraph ? 1 : 0);
        buffer.putInt(offset + Layouts.CallConfig.TIMEOUT_MS, timeoutMs);
        for (int r = 0; r < RING_COUNT; r++) {
            buffer.putLong(offset + Layouts.CallConfig.RING_TASK_WINDOW + 8 * r, ringTaskWindow[r]);
            buffer.putLong(offset + Layouts.CallConfig.RING_HEAP + 8 * r, ringHeap[r]);
            buffer.putLong(offset + Layouts.CallConfig.RING_DEP_POOL + 8 * r, ringDepPool[r]);
        }
        int prefix = offset + Layouts.CallConfig.OUTPUT_PREFIX;
        buffer.put(prefix, outputPrefixUtf8, 0, outputPrefixUtf8.length);
        // the rest of the field, the terminating NUL included
        buffer.put(prefix + outputPrefixUtf8.length, ZEROS, 0, OUTPUT_PREFIX_BYTES - outputPrefixUtf8.length);
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof CallConfig)) {
            return false;
        }
        CallConfig c = (CallConfig) o;
        return aicpuThreadNum == c.aicpuThreadNum && blockDim == c.blockDim
                && enableTrace == c.enableTrace && enableDumpArgs == c.enableDumpArgs
                && enableDepGraph == c.enableDepGraph && timeoutMs == c.timeoutMs
                && Arrays.equals(ringTaskWindow, c.ringTaskWindow) && Arrays.equals(ringHeap, c.ringHeap)
                && Arrays.equals(ringDepPool, c.ringDepPool) && outputPrefix.equals(c.outputPrefix)
                && Objects.equals(captureFailuresTo, c.captureFailuresTo);
    }

    @Override
    public int hashCode() {
        int h = Objects.hash(aicpuThreadNum, blockDim, enableTrace, enableDumpArgs, enableDepGraph,
                timeoutMs, outputPrefix, captureFailuresTo);
        h = 31 * h + Arrays.hashCode(ringTaskWindow);
        h = 31 * h + Arrays.hashCode(ringHeap);
        return 31 * h + Arrays.hashCode(ringDepPool);
    }

    @Override
    public String toString() {
        return "CallConfig[aicpuThreadNum=" + aicpuThreadNum + ", blockDim=" + blockDim
                + ", trace=" + enableTrace + ", dumpArgs=" + enableDumpArgs + ", depGraph=" + enableDepGraph
                + ", timeoutMs=" + timeoutMs + ", ringTaskWindow=" + Arrays.toString(ringTaskWindow)
                + ", ringHeap=" + Arrays.toString(ringHeap) + ", ringDepPool=" + Arrays.toString(ringDepPool)
                + ", outputPrefix='" + outputPrefix + "'"
                + (captureFailuresTo == null ? "" : ", captureFailuresTo=" + captureFailuresTo) + "]";
    }

    /** {@code value}, a C uint64_t, is outside [min, max]. */
    private static boolean outside(long value, long min, long max) {
        return Long.compareUnsigned(value, min) < 0 || Long.compareUnsigned(value, max) > 0;
    }

    private static int maxOver(java.util.function.ToIntFunction<Variant.Arch> limit) {
        int max = 0;
        for (Variant.Arch a : Variant.Arch.values()) {
            max = Math.max(max, limit.applyAsInt(a));
        }
        return max;
    }

    /** Builds a {@link CallConfig}; every field starts at 0 / off / "". */
    public static final class Builder {
        private int aicpuThreadNum;
        private int blockDim;
        private boolean enableTrace;
        private boolean enableDumpArgs;
        private boolean enableDepGraph;
        private int timeoutMs;
        private long[] ringTaskWindow = new long[RING_COUNT];
        private long[] ringHeap = new long[RING_COUNT];
        private long[] ringDepPool = new long[RING_COUNT];
        private String outputPrefix = "";
        private java.nio.file.Path captureFailuresTo;

        private Builder() {
        }

        /** 0 = arch default; else 2..arch max (the first thread orchestrates on trb). */
        public Builder aicpuThreadNum(int threads) {
            this.aicpuThreadNum = threads;
            return this;
        }

        /** 0 = variant default; else 1..arch max blocks. */
        public Builder blockDim(int blocks) {
            this.blockDim = blocks;
            return this;
        }

        /**
         * Per-task timing: finalize of a successful run writes
         * {@code <output_prefix>/trace_<run_id>_<run_epoch>.json}, a Chrome/Perfetto trace (one track per
         * logical core, one slice per task, a host track with prepare/launch/wait/finalize/collect; at most
         * 65 536 tasks, docs/orchestration.md). Its path comes back in {@link RunReport#outputFiles()}.
         */
        public Builder enableTrace(boolean on) {
            this.enableTrace = on;
            return this;
        }

        /** Per-task argument dump under the output prefix. */
        public Builder enableDumpArgs(boolean on) {
            this.enableDumpArgs = on;
            return this;
        }

        /**
         * The run's task dependency graph: finalize of a successful run writes
         * {@code <output_prefix>/dep_graph_<run_id>_<run_epoch>.dot} (docs/orchestration.md); its path
         * comes back in {@link RunReport#outputFiles()}.
         */
        public Builder enableDepGraph(boolean on) {
            this.enableDepGraph = on;
            return this;
        }

        /** 0 = {@value CallConfig#DEFAULT_TIMEOUT_MS} ms. */
        public Builder timeoutMs(int millis) {
            this.timeoutMs = millis;
            return this;
        }

        /** Task window of one ring: 0 = default, else a power of two in [4, 2^31). */
        public Builder ringTaskWindow(int ring, long tasks) {
            ringTaskWindow[checkRing(ring)] = tasks;
            return this;
        }

        /** The same task window for every ring. */
        public Builder ringTaskWindow(long tasks) {
            Arrays.fill(ringTaskWindow, tasks);
            return this;
        }

        /** Heap bytes of one ring: 0 = default, else ≥ 1024. */
        public Builder ringHeap(int ring, long bytes) {
            ringHeap[checkRing(ring)] = bytes;
            return this;
        }

        /** The same heap for every ring. */
        public Builder ringHeap(long bytes) {
            Arrays.fill(ringHeap, bytes);
            return this;
        }

        /** Dependency pool entries of one ring: 0 = default, else in [4, 2^31). */
        public Builder ringDepPool(int ring, long entries) {
            ringDepPool[checkRing(ring)] = entries;
            return this;
        }

        /** The same dependency pool for every ring. */
        public Builder ringDepPool(long entries) {
            Arrays.fill(ringDepPool, entries);
            return this;
        }

        /** Directory diagnostics are written to; required when a diagnostic is on. */
        public Builder outputPrefix(String directory) {
            this.outputPrefix = Objects.requireNonNull(directory, "directory");
            return this;
        }

        /** Directory diagnostics are written to. */
        public Builder outputPrefix(java.nio.file.Path directory) {
            return outputPrefix(directory.toString());
        }

        /**
         * A {@code Worker} running this config captures the run and, if it fails, writes it to
         * {@code directory} as {@code run-<runId>-<dispatchId>.ptocap}, as
         * {@code Worker.Builder.captureFailures} does for every run (docs/replay.md; the run's inputs
         * are copied at enqueue). A {@code ChipWorker} does the same for a run it prepares (or runs)
         * with this config: its inputs are copied at {@code prepare} (or {@code run}), and the
         * capture is written if the run fails at prepare, launch, poll or finalize. A capture that
         * cannot be taken or written is logged, never thrown. Java only: not part of the C struct.
         * Null: off (the default).
         */
        public Builder captureFailuresTo(java.nio.file.Path directory) {
            this.captureFailuresTo = directory;
            return this;
        }

        /**
         * @throws IllegalArgumentException naming the first field that breaks a rule
         */
        public CallConfig build() {
            return new CallConfig(this);
        }

        private static int checkRing(int ring) {
            if (ring < 0 || ring >= RING_COUNT) {
                throw new IllegalArgumentException("ring " + ring + " is outside [0, " + RING_COUNT + ")");
            }
            return ring;
        }
    }
}
