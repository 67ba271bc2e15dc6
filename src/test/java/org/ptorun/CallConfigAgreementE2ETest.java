package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.internal.Layouts;
import org.ptorun.internal.NativeApi;
import org.ptorun.internal.NativeConstants;
import org.ptorun.internal.OffHeapBlock;

/**
 * {@link CallConfig} refuses exactly what the library's {@code call_config_validate}
 * refuses, on all eight libraries: for every field's edge values — 0, min - 1, min,
 * max, max + 1, the extremes of its Java type, the power-of-two rule, both arches'
 * maxima — the Java verdict ({@code build()} then {@code validateFor(arch)}) equals the
 * library's. The library's is read from a raw {@code simpler_prepare_run} on the chip's
 * context with the config as bytes and an id no callable has: an accepted config gets
 * as far as {@code PTO_ERR_NOT_REGISTERED}, a refused one {@code PTO_ERR_INVALID_ARGUMENT}
 * naming {@code CallConfig}, and nothing is prepared either way. The same calls observe
 * the generated tables where a library shows them: the arch maxima of arch.h
 * ({@link Variant.Arch}) and {@code PTO_MAX_CALLABLES}.
 */
class CallConfigAgreementE2ETest {

    /** No callable is registered under it on the fresh chip. */
    private static final int UNREGISTERED = NativeConstants.PTO_MAX_CALLABLES - 1;

    static List<Variant> variants() {
        return Variant.all();
    }

    /** One config: its C bytes and the same values through the Java builder. */
    private record Case(String name, Consumer<ByteBuffer> c, Consumer<CallConfig.Builder> java) {
    }

    private static List<Case> cases() {
        List<Case> cases = new ArrayList<>();
        int[] threads = {0, -1, 1, NativeConstants.PTO_AICPU_THREADS_MIN - 1, NativeConstants.PTO_AICPU_THREADS_MIN,
                NativeConstants.PTO_AICPU_THREADS_MIN + 1, Integer.MIN_VALUE, Integer.MAX_VALUE};
        int[] blocks = {0, -1, NativeConstants.PTO_BLOCK_DIM_MIN - 1, NativeConstants.PTO_BLOCK_DIM_MIN,
                NativeConstants.PTO_BLOCK_DIM_MIN + 1, Integer.MIN_VALUE, Integer.MAX_VALUE};
        for (int t : withArchMaxima(threads, true)) {
            cases.add(new Case("aicpu_thread_num " + t, b -> b.putInt(Layouts.CallConfig.AICPU_THREAD_NUM, t),
                    j -> j.aicpuThreadNum(t)));
        }
        for (int d : withArchMaxima(blocks, false)) {
            cases.add(new Case("block_dim " + d, b -> b.putInt(Layouts.CallConfig.BLOCK_DIM, d), j -> j.blockDim(d)));
        }
        for (int ms : new int[] {0, -1, 1, Integer.MIN_VALUE, Integer.MAX_VALUE}) {
            cases.add(new Case("timeout_ms " + ms, b -> b.putInt(Layouts.CallConfig.TIMEOUT_MS, ms),
                    j -> j.timeoutMs(ms)));
        }
        long windowMin = NativeConstants.PTO_RING_TASK_WINDOW_MIN;
        long windowMax = NativeConstants.PTO_RING_TASK_WINDOW_MAX;
        long[] windows = {0, windowMin - 1, windowMin, windowMin + 1, windowMin + 2, 2 * windowMin, 12,
                Long.highestOneBit(windowMax), windowMax, windowMax + 1, 1L << 32, 1L << 62, -1, -windowMin,
                Long.MIN_VALUE, Long.MAX_VALUE};
        long heapMin = NativeConstants.PTO_RING_HEAP_MIN;
        long[] heaps = {0, 1, heapMin - 1, heapMin, heapMin + 1, 1L << 40, -1, Long.MIN_VALUE, Long.MAX_VALUE};
        long poolMin = NativeConstants.PTO_RING_DEP_POOL_MIN;
        long poolMax = NativeConstants.PTO_RING_DEP_POOL_MAX;
        long[] pools = {0, poolMin - 1, poolMin, poolMin + 1, poolMax, poolMax + 1, 1L << 32, -1, Long.MIN_VALUE,
                Long.MAX_VALUE};
        for (int r = 0; r < CallConfig.RING_COUNT; r++) {
            int ring = r;
            for (long w : windows) {
                cases.add(new Case("ring_task_window[" + r + "] " + Long.toUnsignedString(w),
                        b -> b.putLong(Layouts.CallConfig.RING_TASK_WINDOW + 8 * ring, w),
                        j -> j.ringTaskWindow(ring, w)));
            }
            for (long h : heaps) {
                cases.add(new Case("ring_heap[" + r + "] " + Long.toUnsignedString(h),
                        b -> b.putLong(Layouts.CallConfig.RING_HEAP + 8 * ring, h), j -> j.ringHeap(ring, h)));
            }
            for (long p : pools) {
                cases.add(new Case("ring_dep_pool[" + r + "] " + Long.toUnsignedString(p),
                        b -> b.putLong(Layouts.CallConfig.RING_DEP_POOL + 8 * ring, p), j -> j.ringDepPool(ring, p)));
            }
        }
        int[] diagnostics = {Layouts.CallConfig.ENABLE_TRACE, Layouts.CallConfig.ENABLE_DUMP_ARGS,
                Layouts.CallConfig.ENABLE_DEP_GRAPH};
        for (int i = 0; i < diagnostics.length; i++) {
            int at = diagnostics[i];
            int which = i;
            Consumer<CallConfig.Builder> on = j -> {
                switch (which) {
                    case 0 -> j.enableTrace(true);
                    case 1 -> j.enableDumpArgs(true);
                    default -> j.enableDepGraph(true);
                }
            };
            cases.add(new Case("diagnostic at " + at + " without an output prefix", b -> b.putInt(at, 1), on));
            cases.add(new Case("diagnostic at " + at + " with an output prefix", b -> {
                b.putInt(at, 1);
                b.put(Layouts.CallConfig.OUTPUT_PREFIX, "/tmp/ptorun-agreement".getBytes(StandardCharsets.UTF_8));
            }, on.andThen(j -> j.outputPrefix("/tmp/ptorun-agreement"))));
        }
        String longest = "p".repeat(CallConfig.OUTPUT_PREFIX_BYTES - 1);
        cases.add(new Case("the longest output prefix",
                b -> b.put(Layouts.CallConfig.OUTPUT_PREFIX, longest.getBytes(StandardCharsets.UTF_8)),
                j -> j.outputPrefix(longest)));
        return cases;
    }

    /** {@code values} and, for every arch, its maximum and one more (threads or blocks). */
    private static List<Integer> withArchMaxima(int[] values, boolean threads) {
        List<Integer> all = new ArrayList<>();
        for (int v : values) {
            all.add(v);
        }
        for (Variant.Arch a : Variant.Arch.values()) {
            int max = threads ? a.maxAicpuThreads() : a.maxBlockDim();
            all.add(max);
            all.add(max + 1);
        }
        return all;
    }

    @ParameterizedTest
    @MethodSource("variants")
    void javaRefusesExactlyWhatTheLibraryRefuses(Variant variant) {
        HostRuntime runtime = HostRuntime.load(variant);
        List<String> disagreements = new ArrayList<>();
        int compared = 0;
        try (ChipWorker chip = ChipWorker.open(runtime, 0);
                Raw raw = new Raw(runtime, chip)) {
            for (Case c : cases()) {
                boolean library = raw.libraryAccepts(c.c());
                boolean java = javaAccepts(c.java(), variant.arch());
                if (library != java) {
                    disagreements.add(c.name() + ": the library " + (library ? "accepts" : "refuses (" + raw.lastRefusal
                            + ")") + ", Java " + (java ? "accepts" : "refuses"));
                }
                compared++;
            }
        }
        assertThat(compared).isGreaterThan(150);
        assertThat(disagreements).as("%s: configs Java and the library judge differently", variant).isEmpty();
    }

    /** arch.h's figures, generated into Variant.Arch, are what the library enforces. */
    @ParameterizedTest
    @MethodSource("variants")
    void theGeneratedTablesAreTheLibrarysFigures(Variant variant) {
        HostRuntime runtime = HostRuntime.load(variant);
        Variant.Arch arch = variant.arch();
        try (ChipWorker chip = ChipWorker.open(runtime, 0);
                Raw raw = new Raw(runtime, chip)) {
            assertThat(raw.libraryAccepts(b -> b.putInt(Layouts.CallConfig.BLOCK_DIM, arch.maxBlockDim())))
                    .as("block_dim = the arch max").isTrue();
            assertThat(raw.libraryAccepts(b -> b.putInt(Layouts.CallConfig.BLOCK_DIM, arch.maxBlockDim() + 1)))
                    .as("block_dim = the arch max + 1").isFalse();
            assertThat(raw.lastRefusal).contains("block_dim");
            assertThat(raw.libraryAccepts(b -> b.putInt(Layouts.CallConfig.AICPU_THREAD_NUM, arch.maxAicpuThreads())))
                    .as("aicpu_thread_num = the arch max").isTrue();
            assertThat(raw.libraryAccepts(
                    b -> b.putInt(Layouts.CallConfig.AICPU_THREAD_NUM, arch.maxAicpuThreads() + 1)))
                    .as("aicpu_thread_num = the arch max + 1").isFalse();
            assertThat(raw.lastRefusal).contains("aicpu_thread_num").contains("(0 = default "
                    + arch.defaultAicpuThreads() + ")");
            assertThat(raw.prepare(NativeConstants.PTO_MAX_CALLABLES, b -> { }))
                    .as("callable id PTO_MAX_CALLABLES").isEqualTo(PtoError.INVALID_ARGUMENT.code());
            assertThat(raw.prepare(NativeConstants.PTO_MAX_CALLABLES - 1, b -> { }))
                    .as("callable id PTO_MAX_CALLABLES - 1").isEqualTo(PtoError.NOT_REGISTERED.code());
        }
    }

    private static boolean javaAccepts(Consumer<CallConfig.Builder> values, Variant.Arch arch) {
        CallConfig.Builder b = CallConfig.builder();
        try {
            values.accept(b);
            b.build().validateFor(arch);
            return true;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    /** Zeroed contract blocks for raw prepares on the chip's own context. */
    private static final class Raw implements AutoCloseable {
        private final NativeApi api;
        private final HostRuntime runtime;
        private final long ctx;
        private final OffHeapBlock storage;
        private final OffHeapBlock args = OffHeapBlock.allocate(Layouts.ChipStorageTaskArgs.SIZE, 64);
        private final OffHeapBlock cfg = OffHeapBlock.allocate(Layouts.CallConfig.SIZE, 64);
        private final OffHeapBlock desc = OffHeapBlock.allocate(Layouts.NativeRunDescriptor.SIZE, 64);
        String lastRefusal = "";

        Raw(HostRuntime runtime, ChipWorker chip) {
            this.runtime = runtime;
            this.api = runtime.api();
            this.ctx = chip.deviceContext();
            this.storage = OffHeapBlock.allocate(runtime.runStorageSize(), runtime.runStorageAlignment());
        }

        /** The library's verdict on the config {@code fill} writes over zeros. */
        boolean libraryAccepts(Consumer<ByteBuffer> fill) {
            int rc = prepare(UNREGISTERED, fill);
            if (rc == PtoError.NOT_REGISTERED.code()) {
                return true;
            }
            assertThat(rc).as("refused as an invalid argument (%s)", lastRefusal)
                    .isEqualTo(PtoError.INVALID_ARGUMENT.code());
            assertThat(lastRefusal).contains("CallConfig.");
            return false;
        }

        int prepare(int id, Consumer<ByteBuffer> fill) {
            ByteBuffer b = cfg.buffer();
            for (int i = 0; i < Layouts.CallConfig.SIZE; i++) {
                b.put(i, (byte) 0);
            }
            fill.accept(b);
            int rc = api.prepareRun(ctx, storage.address(), id, args.address(), cfg.address(), desc.address());
            lastRefusal = rc == 0 ? "" : runtime.lastError();
            assertThat(rc).as("nothing is prepared").isNotZero();
            assertThat(storage.buffer().getLong(0)).as("the storage stays empty").isZero();
            return rc;
        }

        @Override
        public void close() {
            storage.close();
            args.close();
            cfg.close();
            desc.close();
        }
    }
}
