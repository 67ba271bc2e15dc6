package org.ptorun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.ptorun.SimE2E.assertBitExact;
import static org.ptorun.SimE2E.filled;
import static org.ptorun.SimE2E.random;
import static org.ptorun.callable.Direction.IN;
import static org.ptorun.callable.Direction.OUT;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.ptorun.callable.Affine;
import org.ptorun.callable.ChipCallable;
import org.ptorun.callable.Kernel;
import org.ptorun.callable.Param;
import org.ptorun.callable.Program;
import org.ptorun.callable.View;
import org.ptorun.internal.NativeApi;
import org.ptorun.worker.DrainReport;
import org.ptorun.worker.RunTicket;
import org.ptorun.worker.Worker;

/**
 * Issue [13/17], item 5: a tensor too small for the callable's program is refused at the
 * same moment, with the same exception and message, on every library — hbg used to refuse
 * it in prepare (its host interprets the program there), trb only after launch, when its
 * device orchestration reached the view. Java now checks each run's tensors against the
 * extents computed once from the program ({@code ChipCallable.tensorExtents()}) before any
 * native work: in {@code ChipWorker.prepare} and {@code run}, and in {@code Worker.enqueue},
 * which then admits nothing. The library's own check stays as the backstop, and agrees with
 * Java's extents to the byte.
 */
class TensorSizesE2ETest {

    private static final int FLAT = 3;
    private static final int STRIDED = 4;
    private static final int N = 16;           // the flat callable: 4 tiles of 4 floats
    private static final int ROWS = 11;
    private static final int COLS = 37;        // the strided callable: column tiles of 8, the last 5 wide

    static List<Variant> variants() {
        return SimE2E.allVariants();
    }

    /** y[i] = x[i] + 1 over 16 floats in 4 tiles of 16 bytes: both tensors need 64 bytes. */
    static ChipCallable flat() {
        return flat(16);
    }

    /** {@link #flat()} with tiles of {@code tileBytes}. */
    static ChipCallable flat(long tileBytes) {
        return ChipCallable.builder().signature(IN, OUT).child(0, Kernel.vadds())
                .program(Program.builder().loop(4, (p, i) -> p.submit(0,
                        Param.tensor(0, IN, i.times(tileBytes), Affine.of(tileBytes)),
                        Param.tensor(1, OUT, i.times(tileBytes), Affine.of(tileBytes)),
                        Param.scalarF32(1f))).build())
                .build();
    }

    /**
     * A copy of an 11 x 37 f32 matrix in column tiles of 8 (the last one 5 wide, a clamped
     * extent): the farthest element is the last tile's (10, 36), so both need 1628 bytes.
     */
    static ChipCallable strided() {
        return strided(COLS);
    }

    /** {@link #strided()} over the first {@code cols} columns of an 11 x 37 matrix. */
    static ChipCallable strided(int cols) {
        View x = View.arg(0, DType.F32, ROWS, COLS);
        View y = View.arg(1, DType.F32, ROWS, COLS);
        return ChipCallable.builder().signature(IN, OUT).child(0, Kernel.vcopy())
                .program(Program.builder().loop((cols + 7) / 8, (p, j) -> {
                    Affine width = Affine.of(cols).plus(-8, 0).min(8);
                    p.submit(0, Param.in(x.slice(1, j.times(8), width)), Param.out(y.slice(1, j.times(8), width)));
                }).build())
                .build();
    }

    private static final String FLAT_OUT_TOO_SMALL = "callable 3: tensor argument 1 (OUT) holds 48 bytes, but the"
            + " callable's program needs 64: instruction 1 (SUBMIT func_id 0) parameter 1 ends at byte 64 at i0=3";
    private static final String FLAT_IN_TOO_SMALL = "callable 3: tensor argument 0 (IN) holds 60 bytes, but the"
            + " callable's program needs 64: instruction 1 (SUBMIT func_id 0) parameter 0 ends at byte 64 at i0=3";
    private static final String STRIDED_OUT_TOO_SMALL = "callable 4: tensor argument 1 (OUT) holds 1624 bytes, but"
            + " the callable's program needs 1628: instruction 1 (SUBMIT func_id 0) parameter 1 ends at byte 1628"
            + " at i0=4";
    private static final String STRIDED_IN_TOO_SMALL = "callable 4: tensor argument 0 (IN) holds 4 bytes, but"
            + " the callable's program needs 1628: instruction 1 (SUBMIT func_id 0) parameter 0 ends at byte 1628"
            + " at i0=4";

    /** One too-small case: its callable id, fresh args (out: the output array, for "untouched"), the message. */
    private record Case(int id, Supplier<TaskArgs> args, float[] out, String message) {
    }

    private static List<Case> tooSmall() {
        List<Case> cases = new ArrayList<>();
        float[] out48 = filled(12);
        cases.add(new Case(FLAT, () -> TaskArgs.of(Tensor.of(random(N, 1)), Tensor.of(out48)), out48,
                FLAT_OUT_TOO_SMALL));
        float[] out64 = filled(N);
        cases.add(new Case(FLAT, () -> TaskArgs.of(Tensor.of(random(15, 2)), Tensor.of(out64)), out64,
                FLAT_IN_TOO_SMALL));
        float[] outStrided = filled(ROWS * COLS - 1);
        cases.add(new Case(STRIDED, () -> TaskArgs.of(Tensor.of(random(ROWS * COLS, 3)), Tensor.of(outStrided)),
                outStrided, STRIDED_OUT_TOO_SMALL));
        float[] outFull = filled(ROWS * COLS);
        cases.add(new Case(STRIDED, () -> TaskArgs.of(Tensor.of(new float[1]), Tensor.of(outFull)), outFull,
                STRIDED_IN_TOO_SMALL));
        return cases;
    }

    /** A ChipWorker whose library calls are counted by name. */
    private record CountedChip(ChipWorker chip, Map<String, AtomicInteger> calls) implements AutoCloseable {
        int count(String method) {
            AtomicInteger n = calls.get(method);
            return n == null ? 0 : n.get();
        }

        int runCalls() {
            return count("prepareRun") + count("run") + count("launchRun") + count("finalizeRun");
        }

        @Override
        public void close() {
            chip.close();
        }
    }

    private static CountedChip openCounted(Variant variant) {
        HostRuntime runtime = HostRuntime.load(variant);
        NativeApi real = runtime.api();
        Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
        InvocationHandler handler = (proxy, method, args) -> {
            calls.computeIfAbsent(method.getName(), k -> new AtomicInteger()).incrementAndGet();
            try {
                return method.invoke(real, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        };
        NativeApi api = (NativeApi) Proxy.newProxyInstance(NativeApi.class.getClassLoader(),
                new Class<?>[] {NativeApi.class}, handler);
        String arch = SimE2E.lower(variant.arch());
        ChipWorker chip = new ChipWorker(api, variant, runtime.contract(), runtime.runStorageSize(),
                runtime.runStorageAlignment(), 0, ChipWorker.readImage("libptorun_aicpu_" + arch + ".so"),
                ChipWorker.readImage("libptorun_aicore_" + arch + ".so"));
        return new CountedChip(chip, calls);
    }

    // ---- refused alike, before any native work ---------------------------------------------------------

    @ParameterizedTest
    @MethodSource("variants")
    void aTensorTooSmallIsRefusedByPrepareRunAndEnqueueAlikeBeforeAnyNativeWork(Variant variant) throws Exception {
        try (CountedChip counted = openCounted(variant)) {
            ChipWorker chip = counted.chip();
            chip.registerCallable(FLAT, flat());
            chip.registerCallable(STRIDED, strided());
            long committed = chip.committedDeviceMemory();
            long generation = 1;
            for (Case c : tooSmall()) {
                long lease = generation++;
                List<Throwable> refusals = List.of(
                        catchThrowable(() -> chip.prepare(c.id(), c.args().get(), CallConfig.DEFAULT,
                                PipelineSlotLease.of(0, lease), 7, 7, null)),
                        catchThrowable(() -> chip.run(c.id(), c.args().get(), CallConfig.DEFAULT)),
                        catchThrowable(() -> chip.run(c.id(), c.args().get(), CallConfig.DEFAULT,
                                PipelineSlotLease.of(1 % chip.pipelineDepth(), lease), 8, 8, null)));
                for (Throwable t : refusals) {
                    assertThat(t).isExactlyInstanceOf(IllegalArgumentException.class).hasMessage(c.message());
                }
                assertThat(c.out()).as("the output is untouched").containsOnly(SimE2E.SENTINEL);
            }
            assertThat(counted.runCalls()).as("no prepare, run, launch or finalize reached the library").isZero();
            for (int slot = 0; slot < chip.pipelineDepth(); slot++) {
                assertThat(chip.phaseOf(slot)).isEqualTo(SlotTable.Phase.EMPTY);
            }
            assertThat(chip.committedDeviceMemory()).isEqualTo(committed);
            assertThat(chip.isHealthy()).isTrue();

            // a device buffer too small is refused with the same words as an array of its size
            try (DeviceBuffer small = chip.malloc(48)) {
                assertThatThrownBy(() -> chip.run(FLAT, TaskArgs.of(Tensor.of(random(N, 1)),
                        Tensor.of(small, DType.F32)), CallConfig.DEFAULT))
                        .isExactlyInstanceOf(IllegalArgumentException.class).hasMessage(FLAT_OUT_TOO_SMALL);
            }
            assertThat(counted.runCalls()).isZero();

            // the chip is usable: a correct run right after succeeds
            float[] x = random(N, 9);
            float[] y = filled(N);
            chip.run(FLAT, TaskArgs.of(Tensor.of(x), Tensor.of(y)), CallConfig.DEFAULT);
            assertBitExact(y, plusOne(x, N));
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void aWorkerRefusesATensorTooSmallAtEnqueueWithTheSameMessageAndAdmitsNothing(Variant variant)
            throws Exception {
        try (Worker worker = Worker.builder().variant(variant).build()) {
            worker.register(FLAT, flat()).get(60, TimeUnit.SECONDS);
            worker.register(STRIDED, strided()).get(60, TimeUnit.SECONDS);
            for (Case c : tooSmall()) {
                List<Throwable> refusals = List.of(
                        catchThrowable(() -> worker.enqueue(c.id(), c.args().get(), CallConfig.DEFAULT)),
                        catchThrowable(() -> worker.enqueue(c.id(), c.args().get(), CallConfig.DEFAULT, 1,
                                TimeUnit.SECONDS)),
                        catchThrowable(() -> worker.tryEnqueue(c.id(), c.args().get(), CallConfig.DEFAULT)));
                for (Throwable t : refusals) {
                    assertThat(t).isExactlyInstanceOf(IllegalArgumentException.class).hasMessage(c.message());
                }
                assertThat(c.out()).containsOnly(SimE2E.SENTINEL);
            }
            assertThat(worker.health().get(0).outstanding()).as("nothing admitted").isZero();
            DrainReport nothing = worker.drain();
            assertThat(nothing.succeeded() + nothing.failed()).isZero();

            // the first run admitted takes the first dispatch id: no refused enqueue consumed one
            float[] x = random(N, 9);
            float[] y = filled(N);
            RunTicket t = worker.enqueue(FLAT, TaskArgs.of(Tensor.of(x), Tensor.of(y)), CallConfig.DEFAULT);
            assertThat(t.dispatchId()).isEqualTo(1);
            assertThat(worker.drain().allSucceeded()).isTrue();
            assertBitExact(y, plusOne(x, N));
        }
    }

    @ParameterizedTest
    @MethodSource("variants")
    void exactlySizedAndLargerTensorsRunAndGiveTheRightBytes(Variant variant) throws Exception {
        float[] x = random(ROWS * COLS, 4);
        try (ChipWorker chip = ChipWorker.open(HostRuntime.load(variant), 0)) {
            chip.registerCallable(FLAT, flat());
            chip.registerCallable(STRIDED, strided());
            // exactly the 64 bytes the program needs
            float[] y = filled(N);
            chip.run(FLAT, TaskArgs.of(Tensor.of(Arrays.copyOf(x, N)), Tensor.of(y)), CallConfig.DEFAULT);
            assertBitExact(y, plusOne(x, N));
            // larger: the program reads and writes its first 64 bytes
            float[] big = filled(N + 5);
            chip.run(FLAT, TaskArgs.of(Tensor.of(Arrays.copyOf(x, N + 3)), Tensor.of(big)), CallConfig.DEFAULT);
            assertBitExact(Arrays.copyOf(big, N), plusOne(x, N));
            // a device buffer of exactly 64 bytes
            try (DeviceBuffer out = chip.malloc(4L * N)) {
                chip.run(FLAT, TaskArgs.of(Tensor.of(Arrays.copyOf(x, N)), Tensor.of(out, DType.F32)),
                        CallConfig.DEFAULT);
                float[] back = new float[N];
                chip.copyFrom(out, back);
                assertBitExact(back, plusOne(x, N));
            }
            // the strided copy: exactly 11 x 37 floats, then larger ones
            float[] z = filled(ROWS * COLS);
            chip.run(STRIDED, TaskArgs.of(Tensor.of(x), Tensor.of(z)), CallConfig.DEFAULT);
            assertBitExact(z, x);
            float[] zBig = filled(ROWS * COLS + 7);
            chip.run(STRIDED, TaskArgs.of(Tensor.of(Arrays.copyOf(x, ROWS * COLS + 1)), Tensor.of(zBig)),
                    CallConfig.DEFAULT);
            assertBitExact(Arrays.copyOf(zBig, ROWS * COLS), x);
        }
        try (Worker worker = Worker.builder().variant(variant).build()) {
            worker.register(FLAT, flat()).get(60, TimeUnit.SECONDS);
            float[] y = filled(N);
            float[] big = filled(2 * N);
            worker.enqueue(FLAT, TaskArgs.of(Tensor.of(Arrays.copyOf(x, N)), Tensor.of(y)), CallConfig.DEFAULT);
            worker.enqueue(FLAT, TaskArgs.of(Tensor.of(Arrays.copyOf(x, 2 * N)), Tensor.of(big)), CallConfig.DEFAULT);
            assertThat(worker.drain().allSucceeded()).isTrue();
            assertBitExact(y, plusOne(x, N));
            assertBitExact(Arrays.copyOf(big, N), plusOne(x, N));
        }
    }

    // ---- the library's check is the backstop, and agrees to the byte ----------------------------------------

    /**
     * With Java's check out of the way (Java holds a callable whose program needs less; the
     * library is handed the real one), the library refuses a tensor one byte short of Java's
     * extent — and accepts one of exactly Java's extent (above): the two agree to the byte.
     * The refusal is the library's own ({@code BadCallableException}), at prepare on hbg and
     * from the device orchestration on trb.
     */
    @ParameterizedTest
    @MethodSource("variants")
    void theLibraryStillRefusesWhatJavaDoesNotSeeAndAgreesWithJavasExtentsToTheByte(Variant variant) {
        assertThat(flat().tensorExtents().bytesNeeded(1)).isEqualTo(64);
        assertThat(strided().tensorExtents().bytesNeeded(1)).isEqualTo(4L * ROWS * COLS);
        try (SimE2E.RawChip raw = SimE2E.openRaw(variant)) {
            ChipWorker chip = raw.chip();
            raw.nextRegistration().set(flat().bytes());
            chip.registerCallable(FLAT, flat(4));             // Java's view: 16 bytes of each tensor
            raw.nextRegistration().set(strided().bytes());
            chip.registerCallable(STRIDED, strided(8));       // Java's view: the first 8 columns
            assertThatThrownBy(() -> chip.run(FLAT, TaskArgs.of(Tensor.of(random(N, 1)), Tensor.of(new byte[63])),
                    CallConfig.DEFAULT))
                    .isExactlyInstanceOf(BadCallableException.class)
                    .hasMessageContaining("param 1: view [48, 48 + 16) lies outside argument tensor 1 of 63 bytes");
            assertThatThrownBy(() -> chip.run(STRIDED, TaskArgs.of(Tensor.of(random(ROWS * COLS, 1)),
                    Tensor.of(new byte[4 * ROWS * COLS - 1])), CallConfig.DEFAULT))
                    .isExactlyInstanceOf(BadCallableException.class)
                    .hasMessageContaining("its last element ends at byte 1628 of a 1627-byte tensor at i0=4");
            float[] x = random(N, 2);
            float[] y = filled(N);
            chip.run(FLAT, TaskArgs.of(Tensor.of(x), Tensor.of(y)), CallConfig.DEFAULT);
            assertBitExact(y, plusOne(x, N));
        }
    }

    private static float[] plusOne(float[] x, int n) {
        float[] r = new float[n];
        for (int i = 0; i < n; i++) {
            r[i] = x[i] + 1f;
        }
        return r;
    }
}
