package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;
import org.ptorun.testing.DriverStats;
import org.ptorun.testing.EmulatedFaults;
import org.ptorun.internal.NativeApi;
import org.ptorun.internal.OffHeapBlock;

/**
 * The scene of one variant's misuses: a ChipWorker (device 0) over the real library seen
 * through a gating proxy (a call can be parked just before it enters the library, so a
 * second call on the same run is made at a certain moment, without sleeps), a second
 * ChipWorker (device 1) whose tokens and buffers are the foreign ones, the vector chain
 * registered on both, and the baselines: committed device memory after every slot ran,
 * ptorun's native threads and (onboard) the emulated driver's committed memory before
 * anything was opened.
 */
final class MisuseFixture implements AutoCloseable {

    static final int CHAIN = 1;
    static final int N = 64;
    static final float SENTINEL = -12345.5f;
    static final EmulatedFaults DRIVER = EmulatedFaults.of(HostRuntime.load(Variant.parse("a2a3/onboard/hbg")));

    final Variant variant;
    final HostRuntime runtime;
    final GatedChip gated;
    final ChipWorker chip;
    final ChipWorker other;
    final long baselineCommitted;
    final LifecycleStressE2ETest.NativeThreads threadsBefore;
    final DriverStats driverBefore;
    private final Map<Integer, AtomicLong> generations = new ConcurrentHashMap<>();
    private final List<AutoCloseable> extras = new ArrayList<>();
    private int refusals;
    private Throwable refusal;

    private MisuseFixture(Variant variant) {
        this.variant = variant;
        this.runtime = variant == null ? null : HostRuntime.load(variant);
        if (variant == null) {
            gated = null;
            chip = null;
            other = null;
            baselineCommitted = 0;
            threadsBefore = null;
            driverBefore = null;
            return;
        }
        driverBefore = DRIVER.stats();
        threadsBefore = LifecycleStressE2ETest.NativeThreads.now();
        gated = GatedChip.open(runtime, 0);
        chip = gated.chip();
        other = ChipWorker.open(runtime, 1);
        chip.registerCallable(CHAIN, chain());
        other.registerCallable(CHAIN, chain());
        golden(); // warms every slot: arenas stay committed with their slot
        baselineCommitted = chip.committedDeviceMemory();
    }

    /** The fixture of one variant's chip misuses. */
    static MisuseFixture open(Variant variant) {
        return new MisuseFixture(variant);
    }

    /** A fixture without a chip, for the value types and builders. */
    static MisuseFixture detached() {
        return new MisuseFixture(null);
    }

    boolean onboard() {
        return variant.platform() == Variant.Platform.ONBOARD;
    }

    // ---- the refused call ---------------------------------------------------------------

    /** Makes the misuse; what it throws is what the case asserts. */
    void refused(ThrowingCallable call) {
        refusals++;
        try {
            call.call();
            refusal = new AssertionError("the misuse was not refused: the call returned normally");
        } catch (Throwable t) {
            refusal = t;
        }
    }

    /** A raw C call returning a status: non-zero becomes a {@link RawRefusal} with simpler_last_error(). */
    void refusedRaw(IntSupplier call) {
        refused(() -> {
            int rc = call.getAsInt();
            String error = runtime.lastError();
            if (rc != 0) {
                throw new RawRefusal(PtoError.nameOf(rc) + " (" + rc + "): " + error);
            }
        });
    }

    /** A raw C call returning a pointer: 0 becomes a {@link RawRefusal} with simpler_last_error(). */
    void refusedRawPointer(LongSupplier call) {
        refused(() -> {
            long p = call.getAsLong();
            String error = runtime.lastError();
            if (p == 0) {
                throw new RawRefusal("NULL: " + error);
            }
        });
    }

    /** A raw C call returning nothing: a non-empty simpler_last_error() is its refusal. */
    void refusedRawVoid(Runnable call) {
        refused(() -> {
            call.run();
            String error = runtime.lastError();
            if (!error.isEmpty()) {
                throw new RawRefusal("void: " + error);
            }
        });
    }

    int refusals() {
        return refusals;
    }

    Throwable refusal() {
        return refusal;
    }

    void reset() {
        refusals = 0;
        refusal = null;
    }

    /** A C-side refusal seen through the raw NativeApi. */
    static final class RawRefusal extends RuntimeException {
        RawRefusal(String message) {
            super(message);
        }
    }

    // ---- scene helpers --------------------------------------------------------------------

    /** A fresh lease of {@code slot}, newer than every lease used so far. */
    PipelineSlotLease lease(int slot) {
        return PipelineSlotLease.of(slot, generations.computeIfAbsent(slot, s -> new AtomicLong(1)).incrementAndGet());
    }

    /** The newest generation handed out for {@code slot} (a stale lease: anything below it). */
    long newestGeneration(int slot) {
        return generations.computeIfAbsent(slot, s -> new AtomicLong(1)).get();
    }

    int depth() {
        return chip.pipelineDepth();
    }

    NativeRun prepare(int slot) {
        return chip.prepare(CHAIN, args(), CallConfig.DEFAULT, lease(slot), 1, 1, null);
    }

    NativeRun prepareOther(int slot) {
        return other.prepare(CHAIN, args(), CallConfig.DEFAULT, lease(slot), 2, 2, null);
    }

    NativeRun launched(int slot) {
        NativeRun run = prepare(slot);
        chip.launch(run);
        return run;
    }

    NativeRun reaped(int slot) {
        NativeRun run = launched(slot);
        chip.await(run);
        return run;
    }

    /** Closes {@code c} at the end of the case (before the golden run). */
    <T extends AutoCloseable> T track(T c) {
        extras.add(c);
        return c;
    }

    void closeExtras() throws Exception {
        for (int i = extras.size() - 1; i >= 0; i--) {
            extras.get(i).close();
        }
        extras.clear();
    }

    /** A separate gated ChipWorker on {@code deviceId}, closed at the end of the case. */
    GatedChip fresh(int deviceId) {
        return track(GatedChip.open(runtime, deviceId));
    }

    // ---- the vector chain ------------------------------------------------------------------

    static ChipCallable chain() {
        return ChipWorkerE2ETest.vectorChain(N);
    }

    static TaskArgs args() {
        return ChipWorkerE2ETest.chainArgs(SimE2E.random(N, 1), SimE2E.random(N, 2), new float[N]);
    }

    /** The chain on every slot of the chip, bit-exact against the Java reference. */
    void golden() {
        for (int slot = 0; slot < chip.pipelineDepth(); slot++) {
            float[] a = SimE2E.random(N, 10 + slot);
            float[] b = SimE2E.random(N, 20 + slot);
            float[] f = SimE2E.filled(N);
            NativeRun run = chip.prepare(CHAIN, ChipWorkerE2ETest.chainArgs(a, b, f), CallConfig.DEFAULT, lease(slot),
                    900 + slot, 900 + slot, null);
            chip.launch(run);
            chip.finalizeRun(run);
            SimE2E.assertBitExact(f, ChipWorkerE2ETest.reference(a, b));
        }
    }

    /** A 2-float vfill: y OUT. */
    static ChipCallable fill() {
        return ChipCallable.builder().signature(OUT).child(0, Kernel.vfill())
                .program(Program.builder().submit(0, Param.tensor(0, OUT, 0, 8), Param.scalarF32(1f)).build())
                .build();
    }

    /** x IN, y OUT copying {@code bytes}. */
    static ChipCallable copy(long bytes) {
        return ChipCallable.builder().signature(IN, OUT).child(0, Kernel.vcopy())
                .program(Program.builder().submit(0, Param.tensor(0, IN, 0, bytes), Param.tensor(1, OUT, 0, bytes))
                        .build())
                .build();
    }

    boolean slotsEmpty() {
        for (int slot = 0; slot < chip.pipelineDepth(); slot++) {
            if (chip.phaseOf(slot) != SlotTable.Phase.EMPTY) {
                return false;
            }
        }
        return true;
    }

    /** Closes both chips without the baseline checks (after a failed case). */
    void discard() throws Exception {
        closeExtras();
        chip.close();
        other.close();
    }

    // ---- end of the group ------------------------------------------------------------------

    /** Closes both chips and checks device memory and native threads are back at their baselines. */
    @Override
    public void close() throws Exception {
        if (variant == null) {
            return;
        }
        closeExtras();
        assertThat(chip.committedDeviceMemory()).as("%s: committed device memory", variant).isEqualTo(baselineCommitted);
        chip.close();
        other.close();
        assertThat(LifecycleStressE2ETest.NativeThreads.now().minus(threadsBefore).total())
                .as("%s: ptorun native threads left after close", variant).isZero();
        if (onboard()) {
            assertThat(DRIVER.stats().memoryCommitted()).as("%s: emulated driver memory committed", variant)
                    .isEqualTo(driverBefore.memoryCommitted());
        }
    }

    // ---- the gating proxy ------------------------------------------------------------------

    /**
     * A ChipWorker over the real library through a proxy that can park the next call of
     * one function just before it enters the library, records the device context, and can
     * hand the library raw bytes at the next registration.
     */
    record GatedChip(ChipWorker chip, AtomicLong ctx, Map<String, Gate> gates, AtomicReference<byte[]> rawRegistration)
            implements AutoCloseable {

        static GatedChip open(HostRuntime runtime, int deviceId) {
            NativeApi real = runtime.api();
            AtomicLong ctx = new AtomicLong();
            Map<String, Gate> gates = new ConcurrentHashMap<>();
            AtomicReference<byte[]> raw = new AtomicReference<>();
            InvocationHandler handler = (proxy, method, a) -> {
                Gate gate = gates.remove(method.getName());
                if (gate != null) {
                    gate.park();
                }
                byte[] bytes = method.getName().equals("registerCallable") ? raw.getAndSet(null) : null;
                try {
                    if (bytes != null) {
                        try (OffHeapBlock block = OffHeapBlock.allocate(Math.max(bytes.length, 1), 64)) {
                            block.buffer().put(0, bytes);
                            return real.registerCallable((long) a[0], (int) a[1], block.address());
                        }
                    }
                    Object result = method.invoke(real, a);
                    if (method.getName().equals("createDeviceContext")) {
                        ctx.set((long) result);
                    }
                    return result;
                } catch (InvocationTargetException e) {
                    throw e.getCause();
                }
            };
            NativeApi api = (NativeApi) Proxy.newProxyInstance(NativeApi.class.getClassLoader(),
                    new Class<?>[] {NativeApi.class}, handler);
            String arch = SimE2E.lower(runtime.variant().arch());
            ChipWorker chip = new ChipWorker(api, runtime.variant(), runtime.contract(), runtime.runStorageSize(),
                    runtime.runStorageAlignment(), deviceId, ChipWorker.readImage("libptorun_aicpu_" + arch + ".so"),
                    ChipWorker.readImage("libptorun_aicore_" + arch + ".so"));
            return new GatedChip(chip, ctx, gates, raw);
        }

        /** Parks the next call of {@code fn} (a NativeApi method name) until the gate opens. */
        Gate gate(String fn) {
            Gate g = new Gate();
            gates.put(fn, g);
            return g;
        }

        long context() {
            return ctx.get();
        }

        @Override
        public void close() {
            chip.close();
        }
    }

    /** One parked call: entered when the caller reached it, released by {@link #open()}. */
    static final class Gate {
        private final CountDownLatch entered = new CountDownLatch(1);
        private final CountDownLatch release = new CountDownLatch(1);

        void awaitEntered() throws InterruptedException {
            if (!entered.await(60, TimeUnit.SECONDS)) {
                throw new AssertionError("the gated call was never entered");
            }
        }

        void open() {
            release.countDown();
        }

        private void park() throws InterruptedException {
            entered.countDown();
            if (!release.await(60, TimeUnit.SECONDS)) {
                throw new AssertionError("the gate was never opened");
            }
        }
    }
}
